"""The device_timer route armed at import (FLAGTREE_PROFILER_DEVICE_TIMER_ARM=1) on a GPU: a
torch.compile(mode="reduce-overhead") model warmed up and captured with no session open has its
replays timed in a session opened afterwards (each Triton kernel 100 x its launches per step,
under the replay's scope -> <captured_at:unknown>), none counted as replays of an unseen graph.
Unarmed, a graph of kernels never stamped is only counted (the case arming exists for); one whose
kernels were stamped in an earlier session (the ring and the allocator kept) has them timed."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from support.package_path import PACKAGE_ROOT  # noqa: E402
from support.compiled_step import PRELUDE, REPLAYS  # noqa: E402
from support.profiles import metrics_by_path  # noqa: E402

UNKNOWN = "<captured_at:unknown>"

# Default mode in its own session: launches per step.
DEFAULT = '''default = torch.compile(make())
sid = p.start(sys.argv[1] + ".default", backend="device_timer")
for _ in range(3):
    default(x, y)
with p.scope("default"):
    for _ in range(10):
        default(x, y)
p.finalize(sid)
'''
# Reduce-overhead warmed up and captured with no session open, then 100 replays in a session
# opened after the capture.
GRAPHED = '''graphed = torch.compile(make(), mode="reduce-overhead")
for _ in range(3):
    torch.compiler.cudagraph_mark_step_begin()
    out = graphed(x, y)
torch.cuda.synchronize()
sid = p.start(sys.argv[1], backend="device_timer")
''' + REPLAYS
SCRIPT = PRELUDE + DEFAULT + GRAPHED
# The graph captured first: no kernel of this process stamped before its capture.
GRAPH_FIRST = PRELUDE + GRAPHED + DEFAULT


def _timed_replays(flat):
    """{kernel: replays timed} under the replays' scope, from the graph's capture context."""
    timed = {}
    for key, metrics in flat.items():
        if key[:2] == ("replays", UNKNOWN) and key[-1].startswith("triton_"):
            timed[key[-1]] = timed.get(key[-1], 0) + metrics["count"]
            assert metrics["time (ns)"] > 0, key
    return timed


def _run(tmp_path, arm, script=SCRIPT):
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               TRITON_CACHE_DIR=str(tmp_path / "triton"), TORCHINDUCTOR_FX_GRAPH_CACHE="0",
               TORCHINDUCTOR_COMPILE_THREADS="1", FLAGTREE_PROFILER_DEVICE_TIMER_ARM=arm)
    name = str(tmp_path / "run")
    done = subprocess.run([sys.executable, "-c", script, name], env=env, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-4000:]
    per_step = {k[-1]: m["count"] / 10 for k, m in metrics_by_path(name + ".default.hatchet").items()
                if k[:1] == ("default",) and len(k) == 2 and k[-1].startswith("triton_")}
    assert per_step and all(c == int(c) and c >= 1 for c in per_step.values()), per_step
    return metrics_by_path(name + ".hatchet"), json.load(open(name + ".meta.json")), per_step, done.stderr


def test_a_graph_captured_before_the_first_session_is_timed_when_armed(tmp_path):
    flat, meta, per_step, stderr = _run(tmp_path, "1")
    assert "not armed" not in stderr
    timed = _timed_replays(flat)
    assert timed == {k: 100 * int(c) for k, c in per_step.items()}
    assert meta["device_timer_armed"] is True and meta["device_timer_armed_by"] == "FLAGTREE_PROFILER_DEVICE_TIMER_ARM"
    assert meta["device_timer_graph_replays_unseen"] == 0 and meta["device_timer_graph_replays_lost"] == 0
    assert meta["device_timer_graph_replays_matched"] == sum(timed.values())


def test_unarmed_a_graph_of_kernels_never_stamped_is_only_counted(tmp_path):
    flat, meta, per_step, _ = _run(tmp_path, "0", GRAPH_FIRST)
    assert meta["device_timer_armed"] is False
    assert not any(UNKNOWN in key or "<captured_at>" in key for key in flat)
    assert meta["device_timer_graph_replays_unseen"] == 100


def test_unarmed_a_graph_of_kernels_stamped_in_an_earlier_session_has_them_timed(tmp_path):
    flat, meta, per_step, _ = _run(tmp_path, "0")
    timed = _timed_replays(flat)
    assert meta["device_timer_armed"] is False and timed
    assert all(count == 100 * per_step[name] for name, count in timed.items()), (timed, per_step)
    assert meta["device_timer_graph_replays_lost"] == 0
