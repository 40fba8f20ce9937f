"""The Python side's JSON (the trace merger's reads, the Chrome-trace writer's writes) with orjson
or as without it: the one place tests switch it, so each reader and writer is tested both ways."""
from flagtree.profiler.distributed import merge_traces
from flagtree.profiler.writers import chrome_trace


def orjson_installed():
    return chrome_trace._orjson is not None and merge_traces._orjson is not None


def without_orjson(monkeypatch):
    """Until the test ends, the merger reads and the writer writes with Python's json."""
    monkeypatch.setattr(merge_traces, "_orjson", None)
    monkeypatch.setattr(chrome_trace, "_orjson", None)
