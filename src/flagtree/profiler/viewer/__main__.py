"""Allows ``python -m flagtree.profiler.viewer``."""

from .cli import console_main

if __name__ == "__main__":
    console_main()
