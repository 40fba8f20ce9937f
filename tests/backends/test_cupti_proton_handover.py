"""Proton after our session in one process, on the CPU against the libcupti stand-in: once our
session is finalized (CUPTI kept attached, parked), a Proton start releases it first (unsubscribe
and cuptiFinalize), whether Proton was imported before or after; and the libcupti we choose is
the one Proton loads (TRITON_CUPTI_LIB_PATH when set)."""
import os
import sys

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends.nvidia import backend as nvidia_backend
from backends.test_cupti_attach import count, nvidia_on_standin, standin  # noqa: F401 (fixtures)

triton_profiler = pytest.importorskip("triton.profiler")
proton_profile = sys.modules["triton.profiler.profile"]


def one_session(standin, base):
    profiler.start(name=str(base), backend="nvidia")
    standin.standin_launch()
    profiler.finalize()


def test_a_proton_start_after_finalize_finds_cupti_released(standin, tmp_path, monkeypatch):
    seen = []

    def proton_start(*args, **kwargs):  # what Proton's cuptiSubscribe would meet
        seen.append((standin.standin_subscribed(), _native.nvidia.cupti_attach_stats()["parked"]))
        return 7

    monkeypatch.setattr(proton_profile, "start", proton_start)
    monkeypatch.setattr(triton_profiler, "start", proton_start)
    one_session(standin, tmp_path / "ours")
    assert standin.standin_subscribed() and _native.nvidia.cupti_attach_stats()["parked"]
    finalized = count(standin, "finalize")
    assert triton_profiler.start("proton") == 7 and proton_profile.start("proton") == 7
    assert seen == [(0, False), (0, False)]
    assert count(standin, "finalize") == finalized + 1  # released once, fully
    one_session(standin, tmp_path / "again")  # and ours subscribes afresh afterwards
    assert standin.standin_subscribed()


def test_proton_imported_after_our_finalize_is_wrapped_at_its_import(standin, tmp_path, monkeypatch):
    for name in [n for n in sys.modules if n == "triton.profiler" or n.startswith("triton.profiler.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    one_session(standin, tmp_path / "parks")  # parks with Proton not imported: a finder waits
    import triton.profiler as fresh  # noqa: E402 (imported here: after the park is the point)

    assert getattr(fresh.start, "_flagtree_releases_first", False)
    assert getattr(sys.modules["triton.profiler.profile"].start, "_flagtree_releases_first", False)


def test_the_libcupti_proton_loads_comes_first(tmp_path, monkeypatch):
    folder = tmp_path / "cupti"
    folder.mkdir()
    (folder / "libcupti.so").write_bytes(b"")
    (folder / "libcupti.so.13").write_bytes(b"")
    monkeypatch.setenv("TRITON_CUPTI_LIB_PATH", str(folder))
    monkeypatch.delenv("FLAGTREE_PROFILER_CUPTI_PATH", raising=False)
    chosen = os.path.join(str(folder), "libcupti.so")
    assert nvidia_backend.triton_cupti(13) == chosen
    assert next(nvidia_backend.iter_cupti_candidates(13, proton_first=True)) == chosen
