"""backend="tianshu" on the Triton 3.1 FlagTree ships its iluvatar backend on: the launch hooks
are CompiledKernel class attributes the launcher calls (tests/standins/triton31.py)."""
import json

import flagtree.profiler as profiler
from flagtree.profiler.backends import get_backend
from standins import triton31
from support.profiles import metrics_by_path


def test_launches_on_triton_3_1_are_recorded_through_class_level_hooks(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # compiled kernels, as on CoreX
    triton = triton31.install(monkeypatch)
    ran = []
    kernel = triton.compiler.CompiledKernel("corex_add_kernel", lambda *args: ran.append(args))
    assert get_backend("tianshu").unavailable_reason() is None
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")  # time_source=auto
    assert triton.compiler.CompiledKernel.launch_enter_hook is not None
    # 3.1 sets a kernel's launcher as an instance attribute: the device timer's first-launch door
    # (a class-level run property, launch_sight.py) must stay shut where the route is refused.
    assert "run" not in triton.compiler.CompiledKernel.__dict__
    with profiler.scope("step"):
        kernel[(4, 1, 1)](1, 2)
        kernel[(4, 1, 1)](3, 4, stream=0x32)
    profiler.finalize(sid)
    assert ran == [(1, 2), (3, 4)]
    assert triton.compiler.CompiledKernel.__dict__["launch_enter_hook"] is None  # put back as found
    launches = metrics_by_path(tmp_path / "t.hatchet")[("step", "corex_add_kernel")]
    assert launches["count"] == 2 and launches["host_timed_launches"] == 2
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "host" and "needs Triton 3.6" in meta["time_source_reason"]


def test_triton_older_than_3_1_is_refused_with_the_reason(monkeypatch):
    triton = triton31.install(monkeypatch)
    triton.__version__ = "3.0.0"
    reason = get_backend("tianshu").unavailable_reason()
    assert "3.0.0" in reason and ">= 3.1" in reason
