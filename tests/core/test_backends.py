"""The backend registry: what exists, what runs here, automatic selection, and where the
nvidia backend looks for libcupti."""
import os
import sys
import types

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import backends
from flagtree.profiler.backends.nvidia import backend as nvidia


def _active_slot(driver):
    """Where Triton's driver config keeps the active driver: ``_active`` behind the ``active``
    property from Triton 3.5 (checked on 3.5 to 3.9), ``active`` itself on 3.1 and 3.3."""
    return "_active" if "_active" in vars(driver) else "active"


class FakeTarget:
    def __init__(self, backend, warp_size=32):
        self.backend, self.warp_size = backend, warp_size


class FakeDriver:
    def __init__(self, target):
        self.target = target

    def get_current_target(self):
        return self.target


@pytest.fixture
def triton_target(monkeypatch):
    """Pretend Triton's active driver targets a given backend (interpreter mode off)."""
    from triton.runtime import driver

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("FLAGTREE_PROFILER_BACKEND", raising=False)
    from flagtree.profiler.backends.tianshu import corex

    monkeypatch.setattr(corex, "corex_detected", lambda: False)  # this machine's own tells, if any

    def set_target(name, warp_size=32):
        monkeypatch.setattr(driver, _active_slot(driver), FakeDriver(FakeTarget(name, warp_size)))

    yield set_target


def test_available_backends_covers_every_named_backend(monkeypatch):
    from flagtree.profiler.backends import libraries

    # Other tests may have loaded a stand-in libroctracer64.so into this process.
    monkeypatch.setattr(libraries, "loaded_library", lambda prefix: None)
    monkeypatch.delenv("FLAGTREE_PROFILER_ROCTRACER_PATH", raising=False)
    monkeypatch.delenv("ROCM_PATH", raising=False)
    report = profiler.available_backends()
    assert tuple(report) == profiler.KNOWN_BACKENDS
    assert report["interpreter"] is None  # the test run is in interpreter mode
    assert "libcuda" in report["nvidia"]
    assert "libroctracer64.so not found" in report["roctracer"]


@pytest.mark.parametrize("target, expected", [
    ("cuda", "nvidia"), ("hip", "roctracer"), ("npu", "cann"), ("musa", "mthreads"), ("corex", "tianshu")])
def test_selection_follows_the_triton_target(triton_target, target, expected):
    triton_target(target)
    assert backends.select_backend() == expected


def test_iluvatar_reporting_cuda_selects_tianshu(triton_target, monkeypatch):
    triton_target("cuda", warp_size=64)
    monkeypatch.undo()  # restore the real CoreX detection, keep nothing else patched
    from triton.runtime import driver

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(driver, _active_slot(driver), FakeDriver(FakeTarget("cuda", warp_size=64)))
    assert backends.select_backend() == "tianshu"
    monkeypatch.setattr(driver, _active_slot(driver), FakeDriver(FakeTarget("cuda", warp_size=32)))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(corex=True))
    assert backends.select_backend() == "tianshu"


def test_explicit_choices_win(monkeypatch):
    assert backends.select_backend() == "interpreter"
    monkeypatch.setenv("FLAGTREE_PROFILER_BACKEND", "roctracer")
    assert backends.select_backend() == "roctracer"


def test_an_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown backend 'cuda'; known backends: nvidia, cupti"):
        backends.get_backend("cuda")


def test_a_hip_target_with_a_wavefront_of_64_is_not_taken_for_corex(triton_target):
    triton_target("hip", warp_size=64)
    assert backends.select_backend() == "roctracer"


def _fake_lib(directory, name):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    open(path, "w").close()
    return path


def test_cupti_search_order(tmp_path, monkeypatch):
    site = tmp_path / "site"
    wheel13 = _fake_lib(site / "nvidia" / "cu13" / "lib", "libcupti.so.13")
    wheel12 = _fake_lib(site / "nvidia" / "cuda_cupti" / "lib", "libcupti.so.12")
    bundled = _fake_lib(site / "triton" / "backends" / "nvidia" / "lib" / "cupti", "libcupti.so.12")
    toolkit = _fake_lib(tmp_path / "cuda" / "extras" / "CUPTI" / "lib64", "libcupti.so.13")
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_PATH", "/explicit/libcupti.so")
    monkeypatch.setattr(nvidia, "loaded_library", lambda prefix: None)
    order = nvidia.cupti_candidates()
    # Triton's copy (the file Proton loads) first: Proton and torch.profiler can follow it
    assert order[:5] == ["/explicit/libcupti.so", bundled, wheel13, wheel12, toolkit]
    assert order[5:] == ["libcupti.so.13", "libcupti.so.12", "libcupti.so"]
    # With a CUDA 12 driver, CUDA 12 copies come first, the documented order kept among them.
    order12 = nvidia.cupti_candidates(driver_major=12)
    assert order12[:4] == ["/explicit/libcupti.so", bundled, wheel12, "libcupti.so.12"]
    # A copy already in the process comes right after Triton's.
    monkeypatch.setattr(nvidia, "loaded_library", lambda prefix: "/proc/loaded/libcupti.so.13")
    assert nvidia.cupti_candidates()[:3] == ["/explicit/libcupti.so", bundled, "/proc/loaded/libcupti.so.13"]
    # Proton's own name for it, where Triton ships one: libcupti.so
    plain = _fake_lib(os.path.dirname(bundled), "libcupti.so")
    assert nvidia.cupti_candidates()[1] == plain


def test_counters_and_a_used_copy_change_the_order(tmp_path, monkeypatch):
    """Hardware counters take the driver's major (Triton's CUPTI 12 gave no metrics under a CUDA 13
    driver); a copy the process already subscribed with comes right after the explicit path."""
    site = tmp_path / "site"
    wheel13 = _fake_lib(site / "nvidia" / "cu13" / "lib", "libcupti.so.13")
    folder = site / "triton" / "backends" / "nvidia" / "lib" / "cupti"
    _fake_lib(folder, "libcupti.so.12")
    bundled = _fake_lib(folder, "libcupti.so")  # Proton's name, major from the file beside it
    monkeypatch.setattr(sys, "path", [str(site)])
    for name in ("FLAGTREE_PROFILER_CUPTI_PATH", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(nvidia, "loaded_library", lambda prefix: bundled)  # Proton ran first
    assert nvidia.cupti_candidates(13)[0] == bundled
    counting = nvidia.cupti_candidates(13, proton_first=False)
    assert counting[0] == wheel13 and counting.index(wheel13) < counting.index(bundled)
    used = list(nvidia.iter_cupti_candidates(13, used=wheel13))
    assert used[:2] == [wheel13, bundled]
    assert nvidia._api_major(130001) == 13 and nvidia._api_major(26) == 12 and nvidia._api_major(0) is None


def test_tritons_cupti_is_passed_over_when_newer_than_the_driver(tmp_path, monkeypatch):
    site = tmp_path / "site"
    bundled = _fake_lib(site / "triton" / "backends" / "nvidia" / "lib" / "cupti", "libcupti.so.13")
    wheel12 = _fake_lib(site / "nvidia" / "cuda_cupti" / "lib", "libcupti.so.12")
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.delenv("FLAGTREE_PROFILER_CUPTI_PATH", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(nvidia, "loaded_library", lambda prefix: None)
    assert nvidia.triton_cupti(driver_major=12) is None
    assert nvidia.cupti_candidates(driver_major=12)[:2] == [wheel12, "libcupti.so.12"]
    assert nvidia.cupti_candidates(driver_major=13)[0] == bundled


def test_loaded_library_finds_a_mapped_copy_by_file_name(tmp_path):
    """The loader's list (dl_iterate_phdr) agrees with /proc/self/maps, and a library loaded from
    an odd folder is found at that path."""
    import ctypes
    import subprocess
    import sys

    from flagtree.profiler.backends.libraries import loaded_library

    if not sys.platform.startswith("linux"):
        pytest.skip("Linux loader")
    with open("/proc/self/maps") as maps:
        mapped = {line.split()[-1] for line in maps if len(line.split()) >= 6}
    libc = loaded_library("libc.so")
    assert libc and os.path.basename(libc).startswith("libc.so") and os.path.isabs(libc)
    assert os.path.realpath(libc) in {os.path.realpath(p) for p in mapped}
    assert loaded_library("libc") is not None  # a prefix of the file name, not a substring of the path
    assert loaded_library("lib/libc.so") is None
    assert loaded_library("libflagtree_not_loaded.so") is None
    copy = tmp_path / "odd folder" / "libflagtree_probe_copy.so.7"
    copy.parent.mkdir()
    (tmp_path / "probe.c").write_text("int flagtree_probe_copy(void) { return 7; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(copy), str(tmp_path / "probe.c")], check=True)
    assert loaded_library("libflagtree_probe_copy.so") is None
    ctypes.CDLL(str(copy))
    assert loaded_library("libflagtree_probe_copy.so") == str(copy)


def test_a_session_imports_only_its_own_backend():
    """The first start of a process imports the backend it names, not all ten (nor NVIDIA's
    modules: the package imports none of them)."""
    import subprocess

    from support.package_path import PACKAGE_ROOT

    code = ("import sys, flagtree.profiler.backends as b; b.get_backend('interpreter'); "
            "print(sorted(m for m in sys.modules if m.startswith('flagtree.profiler.backends.')))")
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "flagtree.profiler.backends.interpreter" in loaded
    for other in ("cann", "mthreads", "tianshu", "roctracer", "instrumentation", "nvidia", "device_timer"):
        assert f"flagtree.profiler.backends.{other}" not in loaded, loaded


def test_cupti_major_of_a_library_path():
    from flagtree.profiler.backends.nvidia.backend import _major_of

    assert _major_of("/w/nvidia/cu13/lib/libcupti.so.13") == 13
    assert _major_of("/usr/local/cuda/lib64/libcupti.so.12.8.90") == 12
    assert _major_of("libcupti.so.2025.1.0") == 2025
    for unversioned in ("libcupti.so", "/x/libcupti.so.", "/x/libcupti.so.x1", "/x/libcupti.so.12/libother.so"):
        assert _major_of(unversioned) is None, unversioned
