"""backend="tianshu" in process: launches through Triton's launch hooks and the interpreter,
host times labelled as such, mode names of the prior art, ixkn_import_path."""
import json

import pytest

import flagtree.profiler as profiler
from flagtree.profiler.backends import get_backend
from support.kernels import launch_add, launch_copy, tensors
from support.profiles import metrics_by_path
from flagtree.profiler.triton_glue.launch_hooks import launch_hook_owner


class _LaunchMetadata:
    """What Triton hands its launch hooks (the lazy dict's .data)."""

    def __init__(self, name, stream):
        self.data = {"name": name, "stream": stream, "function": None}


def _hooked_launch(name, stream=0x7F00):
    owner = launch_hook_owner()
    meta = _LaunchMetadata(name, stream)
    for hook in (owner.launch_enter_hook, owner.launch_exit_hook):
        if hook is not None:  # as Triton's launcher: None where nothing is installed (3.1-3.5)
            hook(meta)


def test_launch_hooks_and_interpreter_launches_are_host_timed(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")
    with profiler.scope("step"):
        launch_add(x, y, out)
        _hooked_launch("corex_kernel", stream=0xABC)
        _hooked_launch("corex_kernel", stream=0xDEF)
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "t.hatchet")
    assert tree[("step", "add_kernel")]["count"] == 1
    corex = tree[("step", "corex_kernel")]
    assert corex["count"] == 2 and corex["device_type"] == 5 and corex["host_timed_launches"] == 2
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "host" and meta["host_timed_launches"] == 3 and "HOST" in meta["note"]


def test_hooks_are_removed_with_the_last_session(tmp_path):
    owner = launch_hook_owner()
    before = (owner.launch_enter_hook, owner.launch_exit_hook)
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")
    profiler.finalize(sid)
    after = (owner.launch_enter_hook, owner.launch_exit_hook)
    assert [type(h) for h in after] == [type(h) for h in before]
    sid = profiler.start(str(tmp_path / "u"), backend="interpreter")
    _hooked_launch("nobody_records_me")
    profiler.finalize(sid)
    assert "nobody_records_me" not in json.dumps(json.load(open(tmp_path / "u.hatchet")))


@pytest.mark.parametrize("first", ["interpreter", "tianshu"])
def test_an_interpreter_and_a_tianshu_session_open_at_once_count_each_launch_once(tmp_path, first):
    x, y, out = tensors()
    second = "tianshu" if first == "interpreter" else "interpreter"
    a = profiler.start(str(tmp_path / "a"), backend=first)
    launch_add(x, y, out)
    b = profiler.start(str(tmp_path / "b"), backend=second)
    launch_add(x, y, out)
    launch_copy(x, out)
    profiler.finalize(a)
    launch_add(x, y, out)
    profiler.finalize(b)
    assert {p: m["count"] for p, m in metrics_by_path(tmp_path / "a.hatchet").items()} == {
        ("add_kernel",): 2, ("copy_kernel",): 1}
    assert {p: m["count"] for p, m in metrics_by_path(tmp_path / "b.hatchet").items()} == {
        ("add_kernel",): 2, ("copy_kernel",): 1}


def test_trace_events_carry_the_host_time_label(tmp_path):
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu", data="trace")
    _hooked_launch("corex_kernel")
    profiler.finalize(sid)
    events = json.load(open(tmp_path / "t.chrome_trace"))["traceEvents"]
    kernel = next(e for e in events if e.get("name") == "corex_kernel")
    assert kernel["args"]["host_timed_launches"] == 1


@pytest.mark.parametrize("mode, message", [
    ("vendor_metrics=aicore", "unknown vendor metric 'aicore'"),
    ("bogus=1", "unknown option 'bogus'"),
    ("kernel_scopes=on", "kernel_scopes"),
])
def test_mode_errors_are_clear(tmp_path, mode, message):
    with pytest.raises(Exception, match=message):
        profiler.start(str(tmp_path / "t"), backend="tianshu", mode=mode)
    assert profiler.session.open_sessions() == []


def test_prior_art_mode_names_are_accepted():
    mode = get_backend("tianshu").check_mode("runtime_base:vendor_metrics=launch_stats,occupancy,instruction,memory:"
                                             "ixkn_import_path=x.csv:device_id=1").canonical()
    assert "vendor_metrics=launch_stats,occupancy,instruction,memory" in mode and "ixkn_import_path=x.csv" in mode


@pytest.mark.parametrize("report", ["ixkn.csv", "saved.ixkn-rep"])
def test_ixkn_import_path_attaches_in_process(tmp_path, monkeypatch, report):
    import os

    standin = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "standins",
                           "ixkn_cli_standin.py")
    monkeypatch.setenv("FLAGTREE_PROFILER_IXKN_CLI", standin)  # reads .ixkn-rep reports (-i <report> --csv)
    csv = tmp_path / report
    lines = ['"Kernel ID","Process ID","Process Name","Kernel Name","Context","Stream","Section","Metrics","Value"']
    for k, name in enumerate(["copy_kernel", "add_kernel", "add_kernel", "ghost_kernel"], start=1):
        lines.append(f'"{k}","{os.getpid()}","python","{name}","1","7","Occupancy","Achieved Occupancy","{k}0 %"')
        lines.append(f'"{k}","{os.getpid()}","python","{name}","1","7","GPU Speed Of Light","Duration","{k} usecond"')
    csv.write_text("some output first\n" + "\n".join(lines) + "\n")
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu", mode=f"ixkn_import_path={csv}")
    launch_add(x, y, out)
    launch_copy(x, out)
    launch_add(x, y, out)
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "t.hatchet")
    add, copy = tree[("add_kernel",)], tree[("copy_kernel",)]
    assert add["tianshu.gpu_speed_of_light.duration (usecond)"] == pytest.approx(2 + 3)
    assert add["tianshu.occupancy.achieved_occupancy (%)"] == pytest.approx(25)  # mean of 20 % and 30 %
    assert copy["tianshu.gpu_speed_of_light.duration (usecond)"] == pytest.approx(1)
    assert tree[("<unmatched vendor rows>", "ixkn", "ghost_kernel")]["count"] == 1
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["vendor_rows"] == 4 and meta["vendor_rows_unmatched"] == 1 and meta["vendor_rows_by_rule"] == {
        "name_order": 3}
