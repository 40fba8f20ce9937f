"""Whether the device_timer sees the replays of torch.compile(mode="reduce-overhead")'s CUDA
graphs captured before its session: runs bench/third_party_workloads.py's compile_ro step before
and in a session and prints what the replay wrapper saw, the graphs' classes and the metadata's
graph facts."""
import collections
import gc
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import torch  # noqa: E402

import flagtree.profiler as profiler  # noqa: E402
from third_party_workloads import BUILDERS  # noqa: E402

step = BUILDERS["compile_ro"]()
for _ in range(3):
    step()
torch.cuda.synchronize()
classes = collections.Counter(type(getattr(o, "graph", None)).__qualname__ for o in gc.get_objects()
                              if type(o).__name__ == "CUDAGraphNode")
print("cudagraph tree nodes' graph classes", dict(classes))
calls = collections.Counter()
name = os.path.join(tempfile.mkdtemp(), "p")
sid = profiler.start(name, backend="device_timer")
wrapped = torch.cuda.CUDAGraph.__dict__.get("replay")
print("replay in the session:", getattr(wrapped, "__qualname__", wrapped), "ours:", hasattr(wrapped, "__flagtree_wraps__"))
original = torch.cuda.CUDAGraph.replay


def counting(self, *args, **kwargs):
    calls[type(self).__qualname__] += 1
    return original(self, *args, **kwargs)


torch.cuda.CUDAGraph.replay = counting
for _ in range(5):
    step()
torch.cuda.synchronize()
torch.cuda.CUDAGraph.replay = original
profiler.finalize(sid)
meta = json.load(open(name + ".meta.json"))
print("replay() calls in 5 steps", dict(calls))
print({k: v for k, v in meta.items() if k.startswith("device_timer_") and ("graph" in k or "launch" in k)})
