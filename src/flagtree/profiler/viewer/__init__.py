"""Text viewer for FlagTree Profiler tree profiles (``*.hatchet`` JSON files).

The viewer is self-contained: it imports nothing else from ``flagtree.profiler``
so it runs on machines without the native profiling module. Entry point:
:func:`flagtree.profiler.viewer.cli.main`.
"""

from .errors import ViewerError

__all__ = ["ViewerError", "main"]


def main(argv=None) -> int:
    """Run the viewer command line; see :mod:`flagtree.profiler.viewer.cli`."""
    from .cli import main as _main

    return _main(argv)
