"""``python -m flagtree.profiler.merge_traces``, the documented command; the code is in
distributed/merge_traces.py."""
import sys

from .distributed.merge_traces import main

if __name__ == "__main__":
    sys.exit(main())
