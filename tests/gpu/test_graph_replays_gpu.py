"""CUDA-graph replays on a GPU, on the nvidia and device_timer backends: a torch.compile
(mode="reduce-overhead") model's replays counted exactly (100 x the Triton launches of one step of
the same model compiled in the default mode), each under the replay's scope -> <captured_at> ->
the capture's scope; a hand-captured torch.cuda.CUDAGraph replayed 100 times under a scope, its
kernels on the stream it was launched on in the timeline."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import flagtree.profiler as profiler  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
# the build this run imports (site-packages after pip install, src/ in the developer loop)
from support.package_path import PACKAGE_ROOT  # noqa: E402
from support.compiled_step import PRELUDE, REPLAYS  # noqa: E402
from support.profiles import metrics_by_path  # noqa: E402
sys.path.insert(0, EXAMPLES)
from triton_kernels import add_kernel  # noqa: E402

BACKENDS = ("nvidia", "device_timer")
CAPTURED = "<captured_at>"

# One process per backend: inductor compiles afresh (no cache of another run), in-process, with the
# session open, so the device timer stamps its kernels. Default mode first (launches per step),
# then reduce-overhead: three calls to warm up, capture and replay once, then 100 replays.
COMPILED_SCRIPT = PRELUDE + '''sid = p.start(sys.argv[2], backend=sys.argv[1])
default = torch.compile(make())
with p.scope("default_setup"):
    for _ in range(3):
        default(x, y)
with p.scope("default"):
    for _ in range(10):
        default(x, y)
graphed = torch.compile(make(), mode="reduce-overhead")
with p.scope("setup"):
    for _ in range(3):
        torch.compiler.cudagraph_mark_step_begin()
        out = graphed(x, y)
torch.cuda.synchronize()
''' + REPLAYS


def _triton_counts(flat, prefix):
    """{kernel name: count} of the Triton kernels (inductor's `triton_` names) at `prefix` + name."""
    return {k[-1]: m["count"] for k, m in flat.items()
            if len(k) == len(prefix) + 1 and k[:len(prefix)] == prefix and k[-1].startswith("triton_")}


@pytest.mark.parametrize("backend", BACKENDS)
def test_reduce_overhead_replays_are_counted_exactly_under_both_contexts(tmp_path, backend):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((PACKAGE_ROOT, EXAMPLES)), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               TRITON_CACHE_DIR=str(tmp_path / "triton"), TORCHINDUCTOR_FX_GRAPH_CACHE="0",
               TORCHINDUCTOR_COMPILE_THREADS="1")
    name = str(tmp_path / "run")
    done = subprocess.run([sys.executable, "-c", COMPILED_SCRIPT, backend, name], env=env,
                          capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-4000:]
    flat = metrics_by_path(name + ".hatchet")
    per_step = {k: c / 10 for k, c in _triton_counts(flat, ("default",)).items()}
    assert per_step and all(c == int(c) and c >= 1 for c in per_step.values()), per_step
    replayed = {}
    for key, metrics in flat.items():  # every Triton kernel replayed in the loop, whatever its capture path
        if key[0] == "replays" and CAPTURED in key and key[-1].startswith("triton_"):
            assert key[:3] == ("replays", CAPTURED, "setup"), key  # replay scope, then the capture's
            replayed[key[-1]] = replayed.get(key[-1], 0) + metrics["count"]
    assert replayed == {k: 100 * int(c) for k, c in per_step.items()}
    assert not _triton_counts(flat, ("replays",))  # no Triton kernel ran outside the graph there
    if backend == "device_timer":
        meta = json.load(open(name + ".meta.json"))
        assert meta["device_timer_graph_replays_unmatched"] == 0 and meta["device_timer_graph_replays_lost"] == 0
        assert meta["device_timer_graph_replays_matched"] >= sum(replayed.values())  # the setup's replay too


def _tensors(n):
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    return x, y, torch.empty_like(x)


def _launch(x, y, out):
    add_kernel[(x.numel() // 1024,)](x, y, out, x.numel(), BLOCK=1024)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hand_captured_graph_replays_on_the_stream_it_is_launched_on(tmp_path, backend):
    x, y, out = _tensors(1 << 16)
    mid = torch.empty_like(x)
    sid = profiler.start(str(tmp_path / "g"), backend=backend, data="trace")
    replay_stream = torch.cuda.Stream()
    with torch.cuda.stream(replay_stream):
        _launch(x, y, mid)  # eager, on the stream the replays will go to (and compiled here)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with profiler.scope("capture"), torch.cuda.graph(graph):  # captured on a side stream of torch's
        _launch(x, y, mid)
        _launch(mid, y, out)
    with profiler.scope("replays"), torch.cuda.stream(replay_stream):
        for _ in range(100):
            graph.replay()
    torch.cuda.synchronize()
    profiler.finalize(sid)
    assert torch.allclose(out, x + 2 * y)
    events = json.load(open(tmp_path / "g.chrome_trace"))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel" and e["name"] == "add_kernel"]
    replays = [e for e in kernels if e["args"]["context"] == "replays/<captured_at>/capture"]
    eager = [e for e in kernels if e not in replays]
    assert len(replays) == 200 and len(eager) == 1
    assert {e["tid"] for e in replays} == {eager[0]["tid"]}  # the replay stream's row
    assert len({e["args"]["correlation"] for e in replays}) == 100  # one graph launch per replay
