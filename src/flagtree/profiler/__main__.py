"""Allows ``python -m flagtree.profiler``, the same command as ``flagtree-profiler``."""
import sys

from .cli.command import main

if __name__ == "__main__":
    sys.exit(main())
