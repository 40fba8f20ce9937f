"""Hardware counters (nvidia backend, mode "metrics=..."), without a GPU: the real native collector
(csrc/backends/counters), the real Python backend code and writers, against
tests/standins/cupti_counters_standin.c, a libcupti stand-in implementing the documented Profiler
Host and Range Profiler semantics. A "kernel launch" here is what the CUPTI callbacks and the GPU
do for one: the profiler's launch path (_native.testing.launch), the counters' launch-enter callback, a range
on the stand-in's "GPU" (standin_launch), the launch-exit callback, and later the activity record
(_native.testing.record)."""
import ctypes
import subprocess
import sys

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native, session as sessions
from flagtree.profiler.backends.nvidia import counters
from flagtree.profiler.backends.nvidia.backend import NvidiaBackend
from support.profiles import find, load_json, load_tree
from standins import build_standin, load_standin
from gpu.trace_checks import assert_kernels_follow_launches

CTX = 0x1000
CTX2 = 0x2000
BYTES_READ, BYTES_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
WARPS = "sm__warps_active.avg.pct_of_peak_sustained_active"
DURATION = "gpu__time_duration.sum"


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    path = build_standin("cupti_counters_standin.c", tmp_path_factory.mktemp("counters"), "libcupti.so.13")
    lib = load_standin(path)
    lib.standin_set_value.argtypes = [ctypes.c_char_p, ctypes.c_double]
    lib.standin_launch.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.standin_set_chip.argtypes = [ctypes.c_char_p]
    lib.path = path
    return lib


@pytest.fixture(autouse=True)
def clean(standin, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_PATH", standin.path)
    standin.standin_reset()
    yield
    profiler.finalize()


class CountersOverHostBackend:
    """The session's own (host-timed) backend for records, plus the nvidia backend's counters
    methods, exactly as session.py calls them at start and finalize."""

    def __init__(self, inner, nvidia):
        self.inner, self.nvidia = inner, nvidia

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def session_outputs(self, session):
        return self.nvidia.session_outputs(session)

    def detach_session(self, session):
        self.nvidia.detach_session(session)


def counters_session(standin, tmp_path, mode, name="c", data="tree"):
    nvidia = NvidiaBackend()
    nvidia._library = standin.path
    sid = profiler.start(str(tmp_path / name), data=data)
    session = sessions._sessions[sid]
    session.options = nvidia.check_mode(mode)
    session.state = nvidia.SessionState()
    session.backend = CountersOverHostBackend(session.backend, nvidia)
    nvidia.attach_session(session)
    return session


class Gpu:
    """Kernel launches as CUPTI and the GPU would produce them."""

    def __init__(self, standin):
        self.standin = standin
        self.correlation = 9000

    def launch(self, kernel, values, context=CTX, slots=None, session=None, ranged=True, seen=True):
        self.correlation += 1
        corr = self.correlation
        for metric, value in values.items():
            self.standin.standin_set_value(metric.encode(), value)
        _native.testing.launch(corr, False)
        mask = slots if slots is not None else (1 << session.slot)
        if seen:
            _native.testing.counters_on_launch_enter(context, corr, kernel, mask)
        if ranged:
            self.standin.standin_launch(context, kernel.encode())
        if seen:
            _native.testing.counters_on_launch_exit(context, corr)
        start = _native.core.monotonic_ns() + 1000  # on the profile's clock, just after the launch call
        _native.testing.record(corr, kernel, start, start + 100, 0)
        return corr


def test_check_mode_forms_and_errors():
    nvidia = NvidiaBackend()
    assert nvidia.check_mode(None) is None
    assert nvidia.check_mode("metrics").canonical() == "metrics=" + ",".join(counters.DEFAULT_METRICS)
    assert nvidia.check_mode(f"metrics= {WARPS} ,{WARPS}").canonical() == f"metrics={WARPS}"
    # both DRAM byte counts: the duration is added for the derived bandwidth
    assert (nvidia.check_mode(f"metrics={BYTES_READ},{BYTES_WRITE}").canonical()
            == f"metrics={BYTES_READ},{BYTES_WRITE},{DURATION}")
    with pytest.raises(ValueError, match="empty metric name"):
        nvidia.check_mode("metrics=a,,b")
    with pytest.raises(ValueError, match=r"unknown word 'pcsampling'; supported forms: metrics\[="):
        nvidia.check_mode("pcsampling")


def test_metrics_summed_or_averaged_on_kernel_nodes_with_derived(standin, tmp_path):
    session = counters_session(standin, tmp_path, f"metrics={BYTES_READ},{BYTES_WRITE},{WARPS}")
    gpu = Gpu(standin)
    with profiler.scope("copy"):
        gpu.launch("copy_kernel", {BYTES_READ: 1000, BYTES_WRITE: 500, DURATION: 100, WARPS: 40}, session=session)
        gpu.launch("copy_kernel", {BYTES_READ: 3000, BYTES_WRITE: 1500, DURATION: 300, WARPS: 60}, session=session)
    with profiler.scope("other"):
        gpu.launch("add_kernel", {BYTES_READ: 7, BYTES_WRITE: 0, DURATION: 1, WARPS: 10}, session=session)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "c.hatchet")
    copy = find(root, "copy", "copy_kernel")["metrics"]
    assert copy["count"] == 2
    assert copy[BYTES_READ] == 4000 and copy[BYTES_WRITE] == 2000 and copy[DURATION] == 400  # .sum: summed
    assert copy[WARPS] == pytest.approx(50.0)                      # a percentage: averaged
    assert copy["achieved_occupancy (%)"] == pytest.approx(50.0)
    assert copy["dram_bandwidth (GB/s)"] == pytest.approx(15.0)    # (1500/100 + 4500/300) / 2
    assert "dram_bandwidth_util (%)" not in copy                   # no device peak known here
    add = find(root, "other", "add_kernel")["metrics"]
    assert add[BYTES_READ] == 7 and add[WARPS] == pytest.approx(10.0)
    meta = load_json(tmp_path / "c.meta.json")
    assert meta["counter_ranges"] == 3 and meta["counter_ranges_dropped"] == 0 and meta["counter_passes"] == 1
    assert meta["counter_metrics"] == [BYTES_READ, BYTES_WRITE, WARPS, DURATION]
    assert "unmatched_extras" not in meta
    assert standin.standin_enabled_objects() == 0  # range profiler disabled when the session closed


def test_full_image_is_decoded_during_the_run_and_nothing_is_lost(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_COUNTER_RANGES", "2")
    session = counters_session(standin, tmp_path, f"metrics={BYTES_READ}")
    gpu = Gpu(standin)
    for i in range(5):
        gpu.launch("k", {BYTES_READ: 10 * (i + 1)}, session=session)
    assert standin.standin_decodes() == 2  # after launches 2 and 4, in the launch-exit callback
    profiler.finalize()
    root, _ = load_tree(tmp_path / "c.hatchet")
    assert find(root, "k")["metrics"][BYTES_READ] == 150
    meta = load_json(tmp_path / "c.meta.json")
    assert meta["counter_ranges"] == 5 and meta["counter_launches_without_range"] == 0


def test_launches_and_ranges_that_do_not_pair_are_counted(standin, tmp_path):
    session = counters_session(standin, tmp_path, f"metrics={BYTES_READ}")
    gpu = Gpu(standin)
    gpu.launch("a", {BYTES_READ: 1}, session=session)
    gpu.launch("b", {BYTES_READ: 2}, session=session, ranged=False)  # the GPU gave no range
    stats = NvidiaBackend.session_outputs(session.backend.nvidia, session)
    assert stats["counter_ranges"] == 1 and stats["counter_launches_without_range"] == 1
    gpu.launch("c", {BYTES_READ: 3}, session=session, seen=False)    # a range for an unseen launch
    stats = NvidiaBackend.session_outputs(session.backend.nvidia, session)
    assert stats["counter_ranges_without_launch"] == 1
    profiler.finalize()
    root, _ = load_tree(tmp_path / "c.hatchet")
    assert find(root, "a")["metrics"][BYTES_READ] == 1
    assert BYTES_READ not in find(root, "b")["metrics"] and BYTES_READ not in find(root, "c")["metrics"]


def test_range_names_that_do_not_match_the_kernel_are_counted(standin, tmp_path):
    session = counters_session(standin, tmp_path, f"metrics={BYTES_READ}")
    _native.testing.launch(8001, False)
    _native.testing.counters_on_launch_enter(CTX, 8001, "expected_kernel", 1 << session.slot)
    standin.standin_launch(CTX, b"some_other_kernel")
    _native.testing.counters_on_launch_exit(CTX, 8001)
    _native.testing.record(8001, "expected_kernel", 0, 10, 0)
    stats = NvidiaBackend.session_outputs(session.backend.nvidia, session)
    assert stats["counter_range_name_mismatches"] == 1
    standin.standin_set_numeric_range_names(1)  # CUPTI versions that number auto ranges: no check
    Gpu(standin).launch("z", {BYTES_READ: 1}, session=session)
    assert NvidiaBackend.session_outputs(session.backend.nvidia, session)["counter_range_name_mismatches"] == 1


def test_contexts_are_matched_separately(standin, tmp_path):
    session = counters_session(standin, tmp_path, f"metrics={BYTES_READ}")
    gpu = Gpu(standin)
    gpu.launch("on_first", {BYTES_READ: 1}, context=CTX, session=session)
    gpu.launch("on_second", {BYTES_READ: 20}, context=CTX2, session=session)
    gpu.launch("on_first", {BYTES_READ: 3}, context=CTX, session=session)
    assert standin.standin_enables() == 2  # the second context enabled at its first launch
    profiler.finalize()
    root, _ = load_tree(tmp_path / "c.hatchet")
    assert find(root, "on_first")["metrics"][BYTES_READ] == 4
    assert find(root, "on_second")["metrics"][BYTES_READ] == 20
    assert standin.standin_enabled_objects() == 0


def test_inactive_session_launches_get_no_counters(standin, tmp_path):
    session = counters_session(standin, tmp_path, f"metrics={BYTES_READ}")
    gpu = Gpu(standin)
    gpu.launch("k", {BYTES_READ: 5}, session=session)
    gpu.launch("k", {BYTES_READ: 100}, slots=0)  # no session recording: not queued
    stats = NvidiaBackend.session_outputs(session.backend.nvidia, session)
    assert stats["counter_ranges"] == 1
    # the stand-in GPU still made a range for it: reported, not silently attached elsewhere
    assert stats["counter_ranges_without_launch"] == 1


def test_trace_mode_puts_metrics_in_kernel_event_args(standin, tmp_path):
    session = counters_session(standin, tmp_path, f"metrics={BYTES_READ},{WARPS}", name="t", data="trace")
    Gpu(standin).launch("k", {BYTES_READ: 64, WARPS: 25}, session=session)
    profiler.finalize()  # the stand-in stamps CLOCK_REALTIME as CUPTI does: no clock warning
    events = load_json(tmp_path / "t.chrome_trace")
    events = events["traceEvents"] if isinstance(events, dict) else events
    kernel = next(e for e in events if e.get("name") == "k" and e.get("ph") == "X")
    assert kernel["args"][BYTES_READ] == 64 and kernel["args"][WARPS] == 25
    assert assert_kernels_follow_launches(events) == 1


def test_dram_bandwidth_util_against_the_device_peak(standin, tmp_path):
    sid = profiler.start(str(tmp_path / "u"))
    slot = sessions._sessions[sid].slot
    peak = counters.dram_peaks_gbps([{"index": 0, "memory_clock_rate": 2_000_000, "bus_width": 4096}])
    assert peak == [2048.0]  # 2 GHz x 4096 bits x 2 / 8
    _native.counters.counters_load(standin.path)
    _native.counters.counters_add_session(standin.path, slot, [BYTES_READ, BYTES_WRITE, DURATION], 16, peak, CTX, 0)
    _native.session.session_enable_extras(slot)
    _native.session.session_set_mean_metrics(slot, _native.counters.counters_mean_metrics())
    Gpu(standin).launch("k", {BYTES_READ: 512_000, BYTES_WRITE: 512_000, DURATION: 1000}, slots=1 << slot)
    _native.counters.counters_flush()
    _native.counters.counters_remove_session(slot)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "u.hatchet")
    k = find(root, "k")["metrics"]
    assert k["dram_bandwidth (GB/s)"] == pytest.approx(1024.0)
    assert k["dram_bandwidth_util (%)"] == pytest.approx(50.0)


def test_unknown_metric_is_a_clear_error_that_says_how_to_list(standin, tmp_path):
    with pytest.raises(ValueError) as error:
        counters_session(standin, tmp_path, f"metrics={BYTES_READ},dram__bytez_read.sum")
    message = str(error.value)
    assert "dram__bytez_read.sum" in message and "GH100" in message
    assert "flagtree.profiler.list_metrics()" in message and "flagtree-profiler --list-metrics" in message
    assert standin.standin_enabled_objects() == 0


def test_second_session_with_other_metrics_is_refused(standin, tmp_path):
    counters_session(standin, tmp_path, f"metrics={BYTES_READ}", name="a")
    with pytest.raises(ValueError, match="same metrics"):
        counters_session(standin, tmp_path, f"metrics={WARPS}", name="b")


def test_passes_reported_for_a_multi_pass_set(standin, tmp_path):
    standin.standin_set_metrics_per_pass(1)
    session = counters_session(standin, tmp_path, f"metrics={BYTES_READ},{WARPS}")
    Gpu(standin).launch("k", {BYTES_READ: 1, WARPS: 1}, session=session)
    assert NvidiaBackend.session_outputs(session.backend.nvidia, session)["counter_passes"] == 2


def test_cupti_without_range_profiler_is_a_clear_error(tmp_path):
    old = build_standin("cupti_counters_standin.c", tmp_path, "libcupti.so.12", ["-DSTANDIN_NO_RANGE_PROFILER"])
    with pytest.raises(RuntimeError, match=r"lacks cuptiRangeProfilerEnable.*CUPTI 12\.6 or newer"):
        _native.counters.counters_load(old)


def test_list_metrics_helper_and_cli(standin):
    metrics = profiler.list_metrics()
    names = {m["name"]: m for m in metrics}
    assert names["dram__bytes_read"]["type"] == "counter" and names["sm__throughput"]["type"] == "throughput"
    full = profiler.list_metrics(chip="GH100", submetrics=True)
    subs = next(m for m in full if m["name"] == "dram__bytes_read")["submetrics"]
    assert BYTES_READ in subs and "dram__bytes_read.avg.pct_of_peak_sustained_elapsed" in subs
    with pytest.raises(RuntimeError, match="cannot list hardware metrics"):
        profiler.list_metrics(chip="NOSUCHCHIP")
    out = subprocess.run([sys.executable, "-m", "flagtree.profiler.cli", "--list-metrics", "--submetrics"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert any(line.split("\t")[0] == BYTES_READ for line in out.stdout.splitlines())


def test_additive_rule():
    assert _native.testing.counters_is_additive("dram__bytes_read.sum", "counter")
    assert _native.testing.counters_is_additive("inst_executed", "counter")
    for name in ("dram__bytes_read.sum.per_second", "sm__warps_active.avg.pct_of_peak_sustained_active",
                 "sm__cycles_elapsed.max", "dram__bytes_read.avg"):
        assert not _native.testing.counters_is_additive(name, "counter")
    assert not _native.testing.counters_is_additive("sm__throughput", "throughput")


def test_only_kernel_launch_apis_are_queued():
    for name in ("cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cudaLaunchKernel_v7000",
                 "cudaLaunchKernelExC_v11060", "cuLaunchGrid"):
        assert _native.testing.counters_is_kernel_launch_api(name), name
    # copies and sets run no kernel; a graph launch runs several; a host function none
    for name in ("cuMemcpyAsync", "cudaMemcpyAsync_v3020", "cuMemsetD32Async", "cuGraphLaunch",
                 "cudaGraphLaunch_v10000", "cuLaunchHostFunc", "cudaLaunchHostFunc_v10000", ""):
        assert not _native.testing.counters_is_kernel_launch_api(name), name
