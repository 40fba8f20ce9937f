"""The package's version, the one pyproject.toml reads (tool.scikit-build.metadata.version)."""
__version__ = "0.1.0"
