"""Kernel-side scopes under Triton's interpreter (TRITON_INTERPRET=1, how CPU tests run): no-ops,
whether or not an instrumentation session would want records."""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import flagtree.profiler.language as pl


@triton.jit
def scaled_copy(x, out, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    with pl.scope("load"):
        v = tl.load(x + offsets)
    pl.enter_scope("store")
    tl.store(out + offsets, v * 2)
    pl.exit_scope("store")


@pytest.mark.parametrize("enabled", [False, True])
def test_scopes_are_harmless_in_the_interpreter(enabled):
    x = torch.arange(256, dtype=torch.float32)
    out = torch.empty_like(x)
    pl._set_enabled(enabled, enabled)
    try:
        scaled_copy[(2,)](x, out, BLOCK=128)
    finally:
        pl._set_enabled(False, False)
    np.testing.assert_array_equal(out.numpy(), (x * 2).numpy())


def test_scope_outside_a_kernel_is_a_no_op():
    with pl.scope("host"):
        pass
    assert pl.enter_scope("x") is None and pl.exit_scope("x") is None
