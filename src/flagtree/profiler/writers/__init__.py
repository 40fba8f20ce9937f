"""The writer layer: one writer per output file, every one atomic (temporary file beside the
target, fsync, rename) and strict JSON (NaN and infinities as null).

- profile.py: the tree (`.hatchet`) and trace (`.chrome_trace`) outputs and their parts, written
  by the native writers in csrc/dump/ straight from the session's store;
- metadata.py: `<name>.meta.json`;
- device_scopes.py: the instrumentation backend's `<name>.device_scopes.json`;
- chrome_trace.py: every Chrome trace Python writes (merged ranks, device scopes, a trace given
  vendor metrics), streamed;
- atomic.py: the one helper Python-side files go through.
"""
