"""Multi-process runs: which rank a process is (ranks.py), gathering rank files to one folder
(gather.py) and merging per-rank Chrome traces into one timeline (merge_traces.py)."""
