"""The cann backend on the launch paths the vendors' code takes, through the stand-in libmspti.so
and a stand-in of triton-ascend's generated launcher (tests/standins/ascend_launcher.py): Triton
launches on torch_npu's task queue, copies whose mapping MSPTI reports before the ENTER callback
with host times, memsets with a correlation id. Real native core, Python API and writers."""
import json
import os
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from standins.ascend_launcher import AscendLauncher
from flagtree.profiler.triton_glue.launch_hooks import launch_hook_owner
from triton_launch import triton_launch
from vendor_outputs import find, load_meta, load_tree

HTOD = 2
STATE_EXTERNAL_IDS = 9


@pytest.fixture(autouse=True)
def mspti_env(mspti_lib, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_MSPTI_PATH", mspti_lib.path)
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv("TRITON_ENABLE_TASKQUEUE", raising=False)  # triton-ascend's default: on
    yield
    profiler.finalize()
    assert mspti_lib.standin_state(STATE_EXTERNAL_IDS) == 0


@pytest.fixture
def launcher(mspti_lib):
    launcher = AscendLauncher(mspti_lib)
    yield launcher
    launcher.close()


def start(base, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the once-only LD_PRELOAD notice (tested in test_cann.py)
        return profiler.start(name=str(base), backend="cann", **kwargs)


def join_since(before):
    after = dict(_native.cann.mspti_join_stats())
    kinds = {kind: {rule: n - before["records_by_kind"][kind][rule] for rule, n in rules.items()}
             for kind, rules in after["records_by_kind"].items()}
    return after, kinds


def test_queued_triton_launches_join_their_own_kernels(mspti_lib, launcher, tmp_path):
    # The queue thread runs each launch while the next one is between its hooks, and a torch_npu
    # operator beside them: a window pushed by the hooks would hand its id to those.
    assert launcher.queued
    base = tmp_path / "queued"
    before = dict(_native.cann.mspti_join_stats())
    start(base)
    for name, ns in (("a", 100), ("b", 200), ("c", 300), ("a", 400)):
        with profiler.scope(f"scope_{name}"):
            launcher.launch(f"kernel_{name}", ns=ns)
        if name == "b":
            launcher.operator("aclnnAdd_kernel", ns=50)
    launcher.synchronize()
    profiler.finalize()
    root = load_tree(base)[0]
    a = find(root, "scope_a", "kernel_a")["metrics"]
    assert (a["count"], a["time (ns)"]) == (2, 500)
    assert find(root, "scope_b", "kernel_b")["metrics"]["time (ns)"] == 200
    assert find(root, "scope_c", "kernel_c")["metrics"]["time (ns)"] == 300
    assert find(root, "aclnnAdd_kernel")["metrics"]["time (ns)"] == 50  # no launch of ours: ROOT
    after, kinds = join_since(before)
    assert after["queued_launches"] - before["queued_launches"] == 4
    assert kinds["kernel"] == {"external_id": 0, "launch_order": 0, "queue_order": 4, "host_span": 0,
                               "unjoined": 1}
    meta = load_meta(base)
    assert meta["triton_launch_join"].startswith("queue order by kernel name")
    assert meta["mspti_join"]["records_by_kind"]["kernel"]["queue_order"] >= 4


def test_queued_launches_of_long_names_match_the_runtimes_cut_name(mspti_lib, launcher, tmp_path):
    # triton-ascend hands the runtime the last 49 characters of a longer name.
    long_name = "fused_" + "x" * 60 + "_kernel"
    base = tmp_path / "long"
    start(base)
    with profiler.scope("s"):
        hooks = launch_hook_owner()  # where this Triton keeps the hooks the session installed

        meta = type("M", (), {"data": {"name": long_name, "stream": 3}})()
        hooks.launch_enter_hook(meta)
        mspti_lib.standin_rt_launch(long_name[-49:].encode(), 3, 70)
        hooks.launch_exit_hook(meta)
    profiler.finalize()
    assert find(load_tree(base)[0], "s", long_name[-49:])["metrics"]["time (ns)"] == 70


def test_a_queued_kernel_never_starts_before_its_launch(mspti_lib, launcher, tmp_path):
    # A kernel of the same name that no hook saw (run before the launch) is not given to it.
    base = tmp_path / "early"
    before = dict(_native.cann.mspti_join_stats())
    start(base)
    mspti_lib.standin_rt_launch(b"kernel_a", 3, 10)
    with profiler.scope("s"):
        launcher.launch("kernel_a", ns=20)
    launcher.synchronize()
    profiler.finalize()
    root = load_tree(base)[0]
    assert find(root, "s", "kernel_a")["metrics"]["time (ns)"] == 20
    assert find(root, "kernel_a")["metrics"]["time (ns)"] == 10
    _, kinds = join_since(before)
    assert (kinds["kernel"]["queue_order"], kinds["kernel"]["unjoined"]) == (1, 1)


def test_without_the_task_queue_each_launch_has_its_window(mspti_lib, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_ENABLE_TASKQUEUE", "0")
    launcher = AscendLauncher(mspti_lib)
    base = tmp_path / "inline"
    before = dict(_native.cann.mspti_join_stats())
    start(base)
    with profiler.scope("s"):
        launcher.launch("kernel_a", ns=30)
    profiler.finalize()
    launcher.close()
    assert find(load_tree(base)[0], "s", "kernel_a")["metrics"]["time (ns)"] == 30
    _, kinds = join_since(before)
    assert kinds["kernel"]["external_id"] == 1
    assert load_meta(base)["triton_launch_join"].startswith("external correlation id")


def test_copies_join_by_host_span_and_leave_the_launch_order_fallback_alone(mspti_lib, monkeypatch, tmp_path):
    # MSPTI reports a copy's mapping before its ENTER callback and stamps MEMCPY/MEMSET records with
    # host times around the call; memsets carry a correlation id no launch of ours has.
    monkeypatch.setenv("LD_PRELOAD", "libmspti.so")  # the stand-in gives callbacks and copy kinds
    monkeypatch.setenv("TRITON_ENABLE_TASKQUEUE", "0")
    mspti_lib.standin_external_records(0)  # kernels must join by launch order
    base = tmp_path / "copies"
    before = dict(_native.cann.mspti_join_stats())
    try:
        start(base)
        with profiler.scope("upload"):
            mspti_lib.standin_memcpy(HTOD, 4096, 3, 200_000)
        with profiler.scope("compute"):
            triton_launch(mspti_lib, "add_kernel", ns=300)
        mspti_lib.standin_memset(1024, 3, 100_000)
        profiler.finalize()
    finally:
        mspti_lib.standin_external_records(1)
    root = load_tree(base)[0]
    copy = find(root, "upload", "memcpy HtoD")["metrics"]
    assert copy["bytes"] == 4096 and copy["time (ns)"] >= 200_000  # the host call's span
    assert find(root, "compute", "add_kernel")["metrics"]["time (ns)"] == 300
    assert find(root, "memset")["metrics"]["bytes"] == 1024
    _, kinds = join_since(before)
    assert kinds["kernel"]["launch_order"] == 1 and kinds["kernel"]["unjoined"] == 0
    assert (kinds["memcpy"]["host_span"], kinds["memcpy"]["unjoined"]) == (1, 0)
    assert (kinds["memset"]["host_span"], kinds["memset"]["unjoined"]) == (0, 1)
    assert load_meta(base)["copy_times"].startswith("host")


def test_queued_kernels_of_one_name_on_several_streams_are_not_guessed(mspti_lib, launcher, tmp_path):
    # Streams do not keep each other's order: which launch a record belongs to is not known.
    base = tmp_path / "streams"
    before = dict(_native.cann.mspti_join_stats())
    start(base)
    with profiler.scope("s"):
        launcher.launch("kernel_a", stream=3, ns=10)
        launcher.launch("kernel_a", stream=4, ns=20)
        launcher.launch("kernel_b", stream=4, ns=30)
    launcher.synchronize()
    with pytest.warns(UserWarning, match="2 kernel records were lost"):  # the two launches' records
        profiler.finalize()
    root = load_tree(base)[0]
    assert find(root, "s", "kernel_b")["metrics"]["time (ns)"] == 30
    assert find(root, "kernel_a")["metrics"]["count"] == 2
    _, kinds = join_since(before)
    assert (kinds["kernel"]["queue_order"], kinds["kernel"]["unjoined"]) == (1, 2)


def test_copies_whose_spans_hold_several_copy_calls_are_not_guessed(mspti_lib, monkeypatch, tmp_path):
    # A long copy on one thread holds another thread's whole copy call in its host span: which
    # window is whose cannot be told from the spans, so neither record is joined.
    import threading
    import time

    monkeypatch.setenv("LD_PRELOAD", "libmspti.so")
    base = tmp_path / "overlap"
    before = dict(_native.cann.mspti_join_stats())
    start(base)

    def long_copy():
        with profiler.scope("long"):
            mspti_lib.standin_memcpy(HTOD, 1, 3, 300_000_000)  # 150 ms before its callbacks, 150 after

    thread = threading.Thread(target=long_copy)
    thread.start()
    time.sleep(0.05)
    with profiler.scope("short"):
        mspti_lib.standin_memcpy(HTOD, 2, 4, 20_000_000)
    thread.join()
    with pytest.warns(UserWarning, match="2 kernel records were lost"):  # the two copy calls' records
        profiler.finalize()
    _, kinds = join_since(before)
    assert (kinds["memcpy"]["host_span"], kinds["memcpy"]["unjoined"]) == (0, 2)
    assert find(load_tree(base)[0], "memcpy HtoD")["metrics"]["count"] == 2  # both under ROOT


def test_a_launch_mapped_before_its_callback_keeps_its_own_window(mspti_lib, monkeypatch, tmp_path):
    # MSPTI maps an aclrtLaunchKernel's correlation id before its ENTER callback too, to whatever
    # window is open then (here another thread's Triton launch); the mapping made inside its own
    # window comes later and is the one kept.
    import threading
    import time

    hooks = launch_hook_owner()  # where this Triton keeps the hooks the session installs

    monkeypatch.setenv("LD_PRELOAD", "libmspti.so")
    monkeypatch.setenv("TRITON_ENABLE_TASKQUEUE", "0")
    base = tmp_path / "premap"
    before = dict(_native.cann.mspti_join_stats())
    start(base)
    opened = threading.Event()

    def operator():
        opened.wait()
        with profiler.scope("op"):
            mspti_lib.standin_launch(b"aclnn_kernel", 10, 3, 40)  # waits for the Triton window to close

    thread = threading.Thread(target=operator)
    thread.start()
    with profiler.scope("triton"):
        meta = type("M", (), {"data": {"name": "add_kernel", "stream": 3}})()
        hooks.launch_enter_hook(meta)
        opened.set()
        time.sleep(0.05)
        mspti_lib.standin_rt_launch(b"add_kernel", 3, 30)
        hooks.launch_exit_hook(meta)
    thread.join()
    profiler.finalize()
    root = load_tree(base)[0]
    assert find(root, "triton", "add_kernel")["metrics"]["time (ns)"] == 30
    assert find(root, "op", "aclnn_kernel")["metrics"]["time (ns)"] == 40
    after, kinds = join_since(before)
    assert kinds["kernel"]["external_id"] == 2 and after["mapping_records"] - before["mapping_records"] == 3


def test_a_walk_ended_by_an_unknown_kind_does_not_spoil_the_next_buffer(mspti_lib, monkeypatch, tmp_path):
    # msptiActivityGetNextRecord keeps its position per thread and resets it only at a buffer's
    # end: after a walk that stopped on a kind MSPTI does not know, it must be put back.
    import time

    monkeypatch.setenv("TRITON_ENABLE_TASKQUEUE", "0")
    base = tmp_path / "cursor"
    start(base)
    with profiler.scope("first"):
        triton_launch(mspti_lib, "add_kernel", ns=10)
    time.sleep(0.06)  # reported into the buffer
    mspti_lib.standin_api_record(99)  # a kind no MSPTI knows: the walk of this buffer ends there
    (part,) = profiler.flush_part()
    with profiler.scope("second"):
        triton_launch(mspti_lib, "softmax_kernel", ns=20)
    profiler.finalize()
    with open(part) as f:
        assert find(json.load(f)[0], "first", "add_kernel")["metrics"]["time (ns)"] == 10
    (last,) = [p for p in tmp_path.glob("*.hatchet") if str(p) != part]
    with open(last) as f:
        assert find(json.load(f)[0], "second", "softmax_kernel")["metrics"]["time (ns)"] == 20
