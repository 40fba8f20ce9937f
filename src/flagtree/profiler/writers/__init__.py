"""Writers: the tree as Hatchet JSON, and the metadata file beside each output."""
