"""Hand-over between CUPTI clients in one process, on the GPU: each order runs in a fresh
subprocess through handover.run_order (a step passes only if its tool recorded the kernels it ran)."""
import os

import pytest

import handover


def _needs_proton():
    try:
        import triton.profiler  # noqa: F401
    except ImportError as error:
        pytest.skip(f"Triton's Proton is not importable: {error}")


def _check(steps, cupti_path=None):
    worked, text = handover.run_order(steps, cupti_path)
    assert worked, text


def test_ours_release_then_proton_with_no_variable_set():
    """The default libcupti is Triton's bundled copy (the file Proton loads): Proton follows our
    release() in the same process with FLAGTREE_PROFILER_CUPTI_PATH unset."""
    _needs_proton()
    if not handover.triton_cupti():
        pytest.skip("Triton bundles no libcupti here")
    worked, text = handover.run_order(handover.ORDERS["ours>release>proton"])
    assert worked, text
    assert "libcupti " + os.path.dirname(handover.triton_cupti()) in text, text


def test_ours_release_then_proton_on_one_libcupti():
    _needs_proton()
    bundled = handover.triton_cupti()
    if not bundled:
        pytest.skip("Triton bundles no libcupti here")
    _check(handover.ORDERS["ours>release>proton"], bundled)


def test_two_libcupti_copies_cannot_hand_over_even_after_release():
    """Why Triton's copy is the default: ours on the libcupti 13 wheel (FLAGTREE_PROFILER_CUPTI_PATH),
    Proton on Triton's bundled libcupti 12: after our release() (unsubscribe + cuptiFinalize)
    Proton's cuptiSubscribe still fails with error 39 (seen on the H200,
    bench/results/handover-20261201-h200.log). If a CUPTI release ever lifts this, this test fails
    and the default can be reconsidered (docs/reference/backends.md, Hand-over)."""
    _needs_proton()
    if not handover.triton_cupti() or not handover.wheel_cupti():
        pytest.skip("Triton bundles no libcupti, or no libcupti wheel, here")
    worked, text = handover.run_order(handover.ORDERS["ours>release>proton"], handover.wheel_cupti())
    assert not worked and text.startswith("STEP 2 proton") and "error 39" in text, text


def test_proton_then_ours():
    _needs_proton()
    _check(handover.ORDERS["proton>ours"])


def test_ours_release_then_torch_profiler_then_ours():
    _check(handover.ORDERS["ours>release>torch>ours"])


def test_proton_after_our_finalize_starts_with_the_defaults():
    """Without release() (well inside the idle time, CUPTI still attached) and with no variable
    set, Proton's start releases ours first (backends/nvidia/cupti_attach.py) and records."""
    _needs_proton()
    if not handover.triton_cupti():
        pytest.skip("Triton bundles no libcupti here")
    _check(handover.ORDERS["ours>proton(no release)"])


def test_ours_again_after_proton_took_over_from_a_finalized_session():
    _needs_proton()
    _check(["ours", "proton", "ours"])
