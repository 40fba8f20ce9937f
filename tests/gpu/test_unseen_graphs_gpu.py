"""CUDA graphs captured before the device timer's ring started, replayed in a device_timer session
(backends/device_timer/unseen_graphs.py), each in a process of its own (the ring, once started,
outlives its sessions and would see a later capture): a graph kept by torch (keep_graph=True) has
its Triton kernels counted by name, replays x kernel nodes; a torch.compile(mode="reduce-overhead")
model's graphs (torch drops their cudaGraph_t) are counted as replays, each timed as a whole."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
# the build this run imports (site-packages after pip install, src/ in the developer loop)
from support.package_path import PACKAGE_ROOT  # noqa: E402
from support.compiled_step import PRELUDE  # noqa: E402
from support.profiles import metrics_by_path  # noqa: E402
REPLAY = "<cuda graph replay>"

# add_kernel twice in a graph torch keeps, captured before any session; 100 replays in one.
KEPT_SCRIPT = '''
import sys, torch
import flagtree.profiler as p
from triton_kernels import add_kernel

def launch(x, y, out):
    add_kernel[(x.numel() // 1024,)](x, y, out, x.numel(), BLOCK=1024)

x = torch.rand(1 << 16, device="cuda"); y = torch.rand_like(x); mid, out = torch.empty_like(x), torch.empty_like(x)
launch(x, y, mid)  # compiled before the session: no stamps
graph = torch.cuda.CUDAGraph(keep_graph=True)
with torch.cuda.graph(graph):
    launch(x, y, mid)
    launch(mid, y, out)
graph.instantiate()
torch.cuda.synchronize()
sid = p.start(sys.argv[1], backend="device_timer", mode="events=on")
with p.scope("replays"):
    for _ in range(100):
        graph.replay()
torch.cuda.synchronize()
p.finalize(sid)
assert torch.allclose(out, x + 2 * y)
'''

# reduce-overhead warmed up and captured before any session; then, in the session, the same step
# compiled in the default mode (its Triton launches per step) and 100 replays of the graphs.
COMPILED_SCRIPT = PRELUDE + '''graphed = torch.compile(make(), mode="reduce-overhead")
for _ in range(3):
    torch.compiler.cudagraph_mark_step_begin()
    graphed(x, y)
torch.cuda.synchronize()
sid = p.start(sys.argv[1], backend="device_timer", mode="events=on")
default = torch.compile(make())
for _ in range(3):
    default(x, y)
with p.scope("default"):
    for _ in range(10):
        default(x, y)
with p.scope("replays"):
    for _ in range(100):
        torch.compiler.cudagraph_mark_step_begin()
        graphed(x, y)
torch.cuda.synchronize()
p.finalize(sid)
'''


def _run(tmp_path, script):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((PACKAGE_ROOT, EXAMPLES)),
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"), TRITON_CACHE_DIR=str(tmp_path / "triton"),
               TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_COMPILE_THREADS="1")
    name = str(tmp_path / "run")
    done = subprocess.run([sys.executable, "-c", script, name], env=env, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-4000:]
    return name, done.stderr


def test_a_kept_graph_captured_before_the_session_has_its_triton_kernels_counted_by_name(tmp_path):
    name, stderr = _run(tmp_path, KEPT_SCRIPT)
    meta = json.load(open(name + ".meta.json"))
    counted = meta["device_timer_not_timed_kernels"]["add_kernel"]
    assert counted["launches"] == 200 and "captured before the device timer's ring" in counted["reason"]
    assert meta["device_timer_graph_replays_unseen"] == 100 and meta["device_timer_graph_replays_unlisted"] == 0
    assert "got no device time" in stderr and "add_kernel (200)" in stderr
    replays = metrics_by_path(name + ".hatchet")[("replays", REPLAY)]
    assert replays["count"] == 100 and replays["time (ns)"] > 0  # each replay timed as a whole
    assert meta["device_timer_event_timed_kernels"][REPLAY]["launches"] == 100


def test_reduce_overhead_graphs_captured_before_the_session_are_counted_and_timed_per_replay(tmp_path):
    name, stderr = _run(tmp_path, COMPILED_SCRIPT)
    meta, flat = json.load(open(name + ".meta.json")), metrics_by_path(name + ".hatchet")
    per_step = {k[-1]: m["count"] / 10 for k, m in flat.items() if k[:1] == ("default",) and len(k) == 2}
    assert per_step and all(k.startswith("triton_") for k in per_step), per_step
    unseen = meta["device_timer_graph_replays_unseen"]
    # inductor's graphs keep no cudaGraph_t: their kernels cannot be listed, their replays are counted
    assert unseen >= 100 and unseen % 100 == 0 and meta["device_timer_graph_replays_unlisted"] == unseen
    assert "keep_graph=False" in meta["device_timer_graph_unlisted_reason"]
    assert "not counted by kernel" in stderr
    assert flat[("replays", REPLAY)]["count"] == unseen and flat[("replays", REPLAY)]["time (ns)"] > 0
    assert not [k for k in flat if k[:1] == ("replays",) and k[-1].startswith("triton_")]  # none seen one by one
