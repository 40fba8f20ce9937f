"""Backend "cupti_pcsampling" on the CPU: the real native PC sampler (configuration, GetData
paging, aggregation, SASS->source lines, attachment to kernel nodes) and the real Python backend,
against tests/standins/cupti_pcsampling_standin.c playing libcupti's PC-sampling API. The
activity side (kernel records) is driven by hand, as the nvidia backend's CUPTI callbacks would."""
import ctypes
import json

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native, session as sessions
from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.nvidia.cupti import CuptiBackend, parse_pcsampling_mode
from flagtree.profiler.backends.nvidia.backend import NvidiaBackend
from flagtree.profiler.viewer.cli import main as viewer_main
from support.profiles import find, load_tree, walk
from tests.standins.build import build_standin, cuda_header_flags, load_standin

REASON = {"selected": 3, "long_scoreboard": 7, "long_scoreboard_not_issued": 8, "barrier": 11}
CUBIN = (b"FAKECUBIN\n"
         b"slow_kernel 0 256 /src/kernels/slow.py 12\n"
         b"slow_kernel 256 512 /src/kernels/slow.py 15\n"
         b"add_kernel 0 128 /src/kernels/add.py 4\n")


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    path = build_standin("cupti_pcsampling_standin.c", tmp_path_factory.mktemp("pcs"), "libcupti_pcs_standin.so",
                         extra_flags=cuda_header_flags("PC-sampling"))
    return path, load_standin(path)


@pytest.fixture
def backend(standin, monkeypatch):
    """The cupti backends with the activity tracer left out (no GPU) and the stand-in as libcupti."""
    for name in ("acquire", "flush", "release"):
        monkeypatch.setattr(NvidiaBackend, name, lambda self, *a: None)
    monkeypatch.setattr(NvidiaBackend, "unavailable_reason", lambda self: None)
    monkeypatch.setattr(NvidiaBackend, "describe", lambda self: {"backend": self.name})
    monkeypatch.setattr(CuptiBackend, "pcsampling_library", standin[0])
    yield standin[1]
    profiler.finalize()


def crc_of(cubin):
    h = 1469598103934665603
    for b in cubin:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def config(lib):
    out = (ctypes.c_int * 6)()
    lib.standin_pcs_config(out)
    return dict(zip(("enabled", "started", "period", "mode", "start_stop", "reasons"), out))


def queue(lib, corr, function, pc, reason, samples, cubin=CUBIN):
    lib.standin_pcs_queue(ctypes.c_uint32(corr), ctypes.c_uint64(crc_of(cubin)), function.encode(),
                          ctypes.c_uint64(pc), ctypes.c_uint32(REASON[reason]), ctypes.c_uint32(samples))


CONTEXT = 0x5EED


def sampled_launch(lib, corr, function, samples=(), checks=None):
    """One launch as the tracer passes it on: ENTER (Start), what the GPU samples while it runs
    (queued in the stand-in), EXIT (Stop + GetData). `checks` runs between ENTER and EXIT."""
    _native.testing.launch(corr, False)
    _native.testing.pcsampling_launch_enter(corr, CONTEXT)
    if checks:
        checks()
    for args in samples:
        queue(lib, *args)
    _native.testing.pcsampling_launch_exit(corr, function)


def total(kernel, metric):
    """A kernel's figure: the sum over its line nodes (tree metrics are exclusive)."""
    assert metric not in kernel["metrics"]
    return sum(c["metrics"].get(metric, 0) for c in kernel["children"])


def metadata(path):
    with open(str(path) + ".meta.json") as f:
        return json.load(f)


def test_serialized_samples_become_line_nodes_under_each_launch(backend, tmp_path):
    lib = backend
    profiler.start(str(tmp_path / "p"), backend="cupti_pcsampling", mode="pcsampling:collection=serialized,interval=9,range=launch")
    assert config(lib)["enabled"] == 0  # contexts are enabled at their first launch (Proton's order)
    _native.pcsampling.pcsampling_add_cubin(CUBIN)  # as the module-load callback hands it over
    started = []
    with profiler.scope("attention"):
        sampled_launch(lib, 9001, "slow_kernel", [
            (9001, "slow_kernel", 16, "long_scoreboard", 30), (9001, "slow_kernel", 300, "selected", 5),
            (9001, "slow_kernel", 300, "long_scoreboard_not_issued", 99)],  # not collected: a subset reason
            checks=lambda: started.append(config(lib)))
    assert started[0] == {"enabled": 1, "started": 1, "period": 9, "mode": 2, "start_stop": 1, "reasons": 4}
    assert config(lib)["started"] == 0  # stopped when the launch call returned
    with profiler.scope("mlp"):
        sampled_launch(lib, 9002, "slow_kernel", [(9002, "slow_kernel", 32, "barrier", 4)])
    _native.testing.record(9001, "slow_kernel", 0, 1000, 0)
    _native.testing.record(9002, "slow_kernel", 1000, 1500, 0)
    profiler.finalize()
    assert config(lib)["enabled"] == 0
    root, _ = load_tree(tmp_path / "p.hatchet")
    first = find(root, "attention", "slow_kernel")
    assert total(first, "num_samples") == 35 and total(first, "num_stalled_samples") == 30
    assert total(first, "stalled_long_scoreboard") == 30 and total(first, "stalled_selected") == 5
    line12 = find(first, "slow.py:12@slow_kernel")
    line15 = find(first, "slow.py:15@slow_kernel")
    assert line12["frame"]["kind"] == "line" and line12["metrics"]["num_samples"] == 30
    assert line15["metrics"]["num_samples"] == 5 and line15["metrics"].get("num_stalled_samples", 0) == 0
    second = find(root, "mlp", "slow_kernel")
    assert total(second, "stalled_barrier") == 4 and find(second, "slow.py:12@slow_kernel")
    assert "stalled_long_scoreboard_not_issued" not in json.dumps(root)
    meta = metadata(tmp_path / "p")
    assert meta["pcsampling_lines_without_source"] == 0
    assert meta["pcsampling_sampled_launches"] == 2 and meta["pcsampling_errors"] == 0
    assert "stalled_barrier" in meta["pcsampling_stall_reasons"]


def test_continuous_samples_go_to_the_launch_they_were_taken_in(backend, tmp_path):
    lib = backend
    profiler.start(str(tmp_path / "c"), backend="cupti", mode="pcsampling:range=launch")
    _native.pcsampling.pcsampling_add_cubin(CUBIN)
    modes = []
    for corr, scope, samples in ((9101, "a", 10), (9102, "b", 4)):
        with profiler.scope(scope):  # continuous: the correlation id reads as 0, the launch is known
            sampled_launch(lib, corr, "slow_kernel", [(777, "slow_kernel", 16, "long_scoreboard", samples)],
                           checks=lambda: modes.append((config(lib)["mode"], config(lib)["period"])))
        _native.testing.record(corr, "slow_kernel", 0, 100, 0)
    assert modes == [(1, 10), (1, 10)]  # the default interval, 2^10 cycles (Proton's)
    queue(lib, 0, "add_kernel", 8, "selected", 6)  # after every launch, of a function never launched
    profiler.finalize()
    root, _ = load_tree(tmp_path / "c.hatchet")
    assert total(find(root, "a", "slow_kernel"), "num_samples") == 10
    assert find(root, "b", "slow_kernel", "slow.py:12@slow_kernel")["metrics"]["stalled_long_scoreboard"] == 4
    stats = metadata(tmp_path / "c")
    assert stats["pcsampling_unattributed_samples"] == 6


@pytest.mark.parametrize("fill_at_stop", [0, 1])
def test_session_range_samples_once_and_splits_a_functions_samples_among_its_launches(backend, tmp_path,
                                                                                      fill_at_stop):
    """range=session: one Start at the first launch, no Stop per launch; at finalize Stop + the buffer +
    GetData; continuous samples carry no launch, so a function's samples are split equally among its launches."""
    lib = backend
    lib.standin_pcs_fill_at_stop(fill_at_stop)
    try:
        profiler.start(str(tmp_path / "r"), backend="cupti", mode="pcsampling:range=session")
        _native.pcsampling.pcsampling_add_cubin(CUBIN)
        started = []
        for corr, scope, function in ((9401, "a", "slow_kernel"), (9402, "b", "slow_kernel"), (9403, "c", "add_kernel")):
            with profiler.scope(scope):
                sampled_launch(lib, corr, function, checks=lambda: started.append(config(lib)["started"]))
            _native.testing.record(corr, function, 0, 100, 0)
            assert config(lib)["started"] == 1  # the range stays open across launches
        queue(lib, 0, "slow_kernel", 16, "long_scoreboard", 20)
        queue(lib, 0, "add_kernel", 8, "selected", 6)
        profiler.finalize()
    finally:
        lib.standin_pcs_fill_at_stop(0)
    assert started == [1, 1, 1] and config(lib)["started"] == 0 and config(lib)["enabled"] == 0
    root, _ = load_tree(tmp_path / "r.hatchet")
    assert total(find(root, "a", "slow_kernel"), "stalled_long_scoreboard") == 10
    assert total(find(root, "b", "slow_kernel"), "num_samples") == 10
    assert total(find(root, "c", "add_kernel"), "num_samples") == 6
    stats = metadata(tmp_path / "r")
    assert stats["pcsampling_range"] == "session" and stats["pcsampling_sampled_launches"] == 3
    assert stats["pcsampling_attribution"].startswith("per function, split equally")
    assert stats["pcsampling_total_samples"] == 26 and stats["pcsampling_unattributed_samples"] == 0


def test_the_launch_that_creates_its_context_is_sampled(backend, tmp_path):
    """A program's first CUDA call (torch's first op) creates the context inside the launch call:
    its launch callback sees no context yet, so sampling is enabled and its range opened when the
    context is created, and that first kernel's samples are kept."""
    lib = backend
    profiler.start(str(tmp_path / "first"), backend="cupti", mode="pcsampling")
    _native.pcsampling.pcsampling_add_cubin(CUBIN)
    with profiler.scope("first"):
        _native.testing.launch(9501, False)
        _native.testing.pcsampling_launch_enter(9501, 0)  # no context current at ENTER
        _native.testing.pcsampling_context_created(CONTEXT)  # created inside the call
        assert config(lib)["enabled"] == 1 and config(lib)["started"] == 1
        queue(lib, 0, "fill_kernel", 16, "selected", 5)
        _native.testing.pcsampling_launch_exit(9501, "fill_kernel")
        _native.testing.record(9501, "fill_kernel", 0, 100, 0)
        sampled_launch(lib, 9502, "fill_kernel")  # the next launch finds the range open
        _native.testing.record(9502, "fill_kernel", 0, 100, 0)
        assert config(lib)["started"] == 1
    profiler.finalize()
    root, _ = load_tree(tmp_path / "first.hatchet")
    assert total(find(root, "first", "fill_kernel"), "num_samples") == 5
    stats = metadata(tmp_path / "first")
    assert stats["pcsampling_contexts"] == 1 and stats["pcsampling_unattributed_samples"] == 0


def test_samples_that_stop_flushes_into_the_configured_buffer_are_kept(backend, tmp_path):
    """If Stop writes the range into the configured buffer (Proton reads it before GetData), the GetData
    that follows overwrites it: the sampler must take the buffer first (else the H200 gives 0 samples)."""
    lib = backend
    lib.standin_pcs_fill_at_stop(1)
    try:
        profiler.start(str(tmp_path / "s"), backend="cupti", mode="pcsampling:range=launch")
        _native.pcsampling.pcsampling_add_cubin(CUBIN)
        sampled_launch(lib, 9301, "slow_kernel", [(0, "slow_kernel", 16, "long_scoreboard", 21),
                                                  (0, "slow_kernel", 300, "selected", 2)])
        _native.testing.record(9301, "slow_kernel", 0, 100, 0)
        profiler.finalize()
    finally:
        lib.standin_pcs_fill_at_stop(0)
    root, _ = load_tree(tmp_path / "s.hatchet")
    kernel = find(root, "slow_kernel")
    assert total(kernel, "num_samples") == 23 and total(kernel, "stalled_long_scoreboard") == 21
    assert metadata(tmp_path / "s")["pcsampling_total_samples"] == 23
    assert metadata(tmp_path / "s")["pcsampling_range"] == "launch"


def test_a_launch_during_another_threads_sampled_launch_is_counted_not_sampled(backend, tmp_path):
    lib = backend
    profiler.start(str(tmp_path / "t"), backend="cupti_pcsampling", mode="pcsampling:collection=serialized,range=launch")
    _native.pcsampling.pcsampling_add_cubin(CUBIN)
    _native.testing.launch(9401, False)
    _native.testing.pcsampling_launch_enter(9401, CONTEXT)
    sampled_launch(lib, 9402, "add_kernel")  # CUPTI has one sampling range per context
    assert config(lib)["started"] == 1  # the other launch's exit did not stop the first one
    queue(lib, 9401, "slow_kernel", 16, "barrier", 3)
    _native.testing.pcsampling_launch_exit(9401, "slow_kernel")
    assert config(lib)["started"] == 0
    for corr, name in ((9401, "slow_kernel"), (9402, "add_kernel")):
        _native.testing.record(corr, name, 0, 100, 0)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "t.hatchet")
    assert total(find(root, "slow_kernel"), "num_samples") == 3
    meta = metadata(tmp_path / "t")
    assert meta["pcsampling_sampled_launches"] == 1 and meta["pcsampling_unsampled_launches"] == 1


def test_getdata_pages_through_more_records_than_one_buffer(backend, tmp_path, monkeypatch):
    import flagtree.profiler.backends.nvidia.cupti as cupti_module
    monkeypatch.setattr(cupti_module, "BUFFER_PCS", 7)
    lib = backend
    profiler.start(str(tmp_path / "g"), backend="cupti_pcsampling", mode="pcsampling:collection=serialized")
    # 32 PCs, unknown cubin: no line, still counted
    sampled_launch(lib, 9201, "slow_kernel",
                   [(9201, "slow_kernel", pc, "barrier", 1, b"FAKECUBIN\nother") for pc in range(0, 512, 16)])
    _native.testing.record(9201, "slow_kernel", 0, 100, 0)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "g.hatchet")
    kernel = find(root, "slow_kernel")
    assert total(kernel, "num_samples") == 32
    assert find(kernel, "<unknown cubin>@slow_kernel")["metrics"]["num_samples"] == 32
    stats = metadata(tmp_path / "g")
    assert stats["pcsampling_get_data_calls"] >= 5 and stats["pcsampling_unknown_cubins"] == 1


def test_a_second_sampling_session_is_refused_and_the_first_keeps_going(backend, tmp_path):
    profiler.start(str(tmp_path / "one"), backend="cupti_pcsampling")
    with pytest.raises(RuntimeError, match="already on for another session"):
        profiler.start(str(tmp_path / "two"), backend="cupti", mode="pcsampling")
    plain = profiler.start(str(tmp_path / "plain"), backend="cupti")  # kernels only: allowed beside it
    assert plain >= 0 and _native.testing.pcsampling_running()
    profiler.finalize()
    assert not _native.testing.pcsampling_running()


@pytest.mark.parametrize("mode, message", [
    ("pcsampling:interval=3", "between 5 and 31"),
    ("pcsampling:collection=fast", "continuous or serialized"),
    ("pcsampling:range=kernel", "range must be session or launch"),
    ("pcsampling:speed=2", "bad PC-sampling option"),
    ("pcsampling:drain_every=4", "bad PC-sampling option"),  # gone: every launch is drained when it returns
    ("metrics", "not supported by the cupti backend"),
])
def test_bad_modes_say_what_is_supported(mode, message):
    with pytest.raises(ValueError, match=message):
        get_backend("cupti").check_mode(mode)


def test_mode_defaults_and_environment(monkeypatch):
    assert get_backend("cupti").check_mode(None) is None
    monkeypatch.setenv("FLAGTREE_PROFILER_PCSAMPLING_INTERVAL", "16")
    assert get_backend("cupti_pcsampling").check_mode(None).canonical() == \
        "pcsampling:interval=16,collection=continuous,range=session"
    assert parse_pcsampling_mode("pcsampling:interval=20")[1]["interval"] == 20
    monkeypatch.setenv("FLAGTREE_PROFILER_PCSAMPLING_COLLECTION", "sometimes")
    with pytest.raises(ValueError, match="FLAGTREE_PROFILER_PCSAMPLING_COLLECTION"):
        parse_pcsampling_mode("pcsampling")


def test_viewer_picks_lines_out_of_a_pcsampling_profile(backend, tmp_path, capsys):
    lib = backend
    profiler.start(str(tmp_path / "v"), backend="cupti_pcsampling", mode="pcsampling:collection=serialized")
    _native.pcsampling.pcsampling_add_cubin(CUBIN)
    with profiler.scope("attention"):
        sampled_launch(lib, 9301, "slow_kernel", [(9301, "slow_kernel", 16, "long_scoreboard", 90),
                                                  (9301, "slow_kernel", 300, "barrier", 2)])
    with profiler.scope("norm"):
        sampled_launch(lib, 9302, "add_kernel", [(9302, "add_kernel", 8, "selected", 8)])
    _native.testing.record(9301, "slow_kernel", 0, 100, 0)
    _native.testing.record(9302, "add_kernel", 0, 100, 0)
    profiler.finalize()
    path = str(tmp_path / "v.hatchet")
    assert viewer_main(["-m", "num_samples", "-i", r"slow\.py", path]) == 0
    out = capsys.readouterr().out
    assert "slow.py:12@slow_kernel" in out and "add.py" not in out and "norm" not in out
    assert viewer_main(["-m", "num_samples", "-t", "0.05", path]) == 0
    out = capsys.readouterr().out
    assert "slow.py:12@slow_kernel" in out and "slow.py:15@slow_kernel" not in out and "add.py:4" in out
    assert viewer_main(["-m", "num_samples", "-d", "2", path]) == 0
    out = capsys.readouterr().out
    assert "slow_kernel" in out and "@slow_kernel" not in out


def test_kernels_loaded_before_the_session_are_searched_only_when_their_samples_lack_a_cubin(
        backend, tmp_path, monkeypatch):
    """A sampled cubin the module-load callback never saw (compiled before the session) is looked
    for among Triton's kernels once; a cubin found nowhere (cuBLAS's) is not searched again."""
    from flagtree.profiler.backends.nvidia import cupti

    early = CUBIN + b"early_kernel 0 64 /src/kernels/early.py 1\n"  # another CRC, same lines
    foreign = b"FAKECUBIN\nother 0 64 /x.cu 1\n"
    scans = []
    monkeypatch.setattr(cupti, "loaded_triton_cubins", lambda: scans.append(1) or [early])

    def session(name, samples):
        profiler.start(str(tmp_path / name), backend="cupti_pcsampling", mode="pcsampling:range=launch")
        sampled_launch(backend, 7001, "slow_kernel", samples)
        _native.testing.record(7001, "slow_kernel", 0, 100, 0)
        profiler.finalize()
        return load_tree(tmp_path / (name + ".hatchet"))[0], metadata(tmp_path / name)

    root, meta = session("known", [(7001, "slow_kernel", 16, "barrier", 3, early)])
    assert len(scans) == 1 and meta["pcsampling_unknown_cubins"] == 0
    lines = [n for _, n in walk(root) if n["frame"]["name"] == "slow.py:12@slow_kernel"]
    assert [n["metrics"]["num_samples"] for n in lines] == [3]
    assert meta["pcsampling_cubin_scan_s"] >= 0
    session("again", [(7001, "slow_kernel", 16, "barrier", 3, early)])
    assert len(scans) == 1  # its cubin is known now
    _, meta = session("foreign", [(7001, "other", 0, "barrier", 2, foreign)])
    assert len(scans) == 2 and meta["pcsampling_unknown_cubins"] == 1
    _, meta = session("foreign2", [(7001, "other", 0, "barrier", 2, foreign)])
    assert len(scans) == 2 and meta["pcsampling_unknown_cubins"] == 1  # searched once, not at every finalize


def test_a_session_range_takes_its_samples_at_stop_not_from_getdata(backend, tmp_path):
    """On the H200 GetData hands out nothing while a range is open (a range kept open
    between sessions gave 0 samples); the stand-in's hold mirrors it, so the samples of a session
    range must come from its Stop at finalize."""
    lib = backend
    lib.standin_pcs_hold_open_range(1)
    lib.standin_pcs_fill_at_stop(1)
    try:
        profiler.start(str(tmp_path / "h"), backend="cupti", mode="pcsampling")
        _native.pcsampling.pcsampling_add_cubin(CUBIN)
        sampled_launch(lib, 9601, "slow_kernel", [(0, "slow_kernel", 300, "selected", 4)])
        _native.testing.record(9601, "slow_kernel", 0, 100, 0)
        profiler.finalize()
    finally:
        lib.standin_pcs_hold_open_range(0)
        lib.standin_pcs_fill_at_stop(0)
    assert metadata(tmp_path / "h")["pcsampling_total_samples"] == 4
    assert metadata(tmp_path / "h")["pcsampling_start_s"] >= 0 and metadata(tmp_path / "h")["pcsampling_stop_s"] >= 0
