"""Text viewer for FlagTree Profiler tree profiles (``*.hatchet`` JSON files).

The viewer never needs the native profiling module: besides itself it imports only the
package's pure-Python helpers (``paths``, ``ranks``, ``merge_traces``, ``writers.atomic``), so
it runs on machines without a GPU or a built ``_native``. Entry point:
:func:`flagtree.profiler.viewer.cli.main`.
"""

from .errors import ViewerError

__all__ = ["ViewerError", "main", "parse", "read", "get_raw_metrics", "derive_metrics", "format_frames",
           "filter_frames"]
# Proton's viewer functions (proton_api.py), loaded on first use: they bring the analysis API and
# hatchet, which the command line never needs.
_PROTON_API = frozenset(__all__[2:])


def main(argv=None) -> int:
    """Run the viewer command line; see :mod:`flagtree.profiler.viewer.cli`."""
    # The command line's imports (argparse, every view) are paid only when it runs, not by
    # `import flagtree.profiler.viewer` (e.g. for ViewerError).
    from .cli import main as _main  # deferred: argparse and every view, paid only when it runs

    return _main(argv)


def __getattr__(name):
    if name in _PROTON_API:
        from . import proton_api  # deferred: the analysis API and hatchet, paid only by their callers

        return getattr(proton_api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
