"""Allows ``python -m flagtree.profiler.cli``, the same command as ``flagtree-profiler``."""
import sys

from .command import main

if __name__ == "__main__":
    sys.exit(main())
