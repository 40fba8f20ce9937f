"""The device_timer stamps: PTX text in, PTX text out (shapes handled and refused), and a real
Triton compile through the compiler hook (metadata, cache separation, restored knobs, ptxas)."""
import json
import os
import subprocess
import sys

import pytest

from flagtree.profiler.backends.device_timer import RingOptions, parse_mode
from flagtree.profiler.backends.device_timer.ptx_stamps import NotStampable, kernel_entry, stamp_ptx

PTX = """
.version 8.4
.target sm_90a
.address_size 64
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .u32 k_param_1,
	.param .u64 .ptr .global .align 1 k_param_2,
	.param .u64 .ptr .global .align 1 k_param_3
)
.reqntid 128
{
	.reg .b32 	%r<3>;
	mov.u32 	%r1, %tid.x;
	// begin inline asm
	{ .reg .pred %x; }
	// end inline asm
	ret;

}
"""


def test_the_last_parameter_is_the_slot_pointer():
    name, param, start, end = kernel_entry(PTX)
    assert (name, param) == ("k", "k_param_3")
    assert PTX[start] == "{" and PTX[end] == "}" and "ret;" in PTX[start:end]


def test_one_entry_stamp_and_an_exit_stamp_before_every_ret():
    two_rets = PTX.replace("\tret;\n", "\t@%p1 bra $L1;\n\tret;\n$L1:\n\tret;\n")
    out = stamp_ptx(two_rets, 77, 1 << 20, 8)
    assert out.count("entry stamp") == 1 and out.count("exit stamp") == 2
    assert "$ftp_exit_done1:" in out and "$ftp_exit_done2:" in out  # labels unique in the kernel
    assert "[k_param_3]" in out and "mov.u32 %ftp_r7, 77;" in out and "mul.wide.u32 %ftp_d2, %ftp_r1, 1048576;" in out
    body = out[out.index("{", out.index(".reqntid")):]
    assert body.index("entry stamp") < body.index("mov.u32 \t%r1, %tid.x")  # before the kernel's own code
    assert out.index("exit stamp") < out.index("ret;")


@pytest.mark.parametrize("ptx, why", [
    (PTX.replace("\tret;", "\t@%p0 ret;"), "predicated ret"),
    (PTX + PTX[PTX.index(".visible"):], "expected one .entry"),
    (PTX.replace("\tret;", "\texit;"), "no ret"),
])
def test_shapes_the_stamps_do_not_handle_are_refused(ptx, why):
    with pytest.raises(NotStampable, match=why):
        stamp_ptx(ptx, 1, 1 << 20, 8)


def test_mode_names_the_ring_size():
    assert parse_mode(None) == RingOptions()
    assert parse_mode("slots=4096:batch=512").canonical() == "slots=4096:batch=512"
    assert parse_mode("slots=64").batch_slots() == 16
    for bad in ("slots=1", "slots=8:batch=9", "lanes=4", "slots"):
        with pytest.raises(ValueError, match="device_timer"):
            parse_mode(bad)


def test_a_real_compile_carries_the_stamps_and_a_separate_cache_entry(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)  # a real compile, not a cache hit
    script = os.path.join(os.path.dirname(__file__), "compile_stamped.py")
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["plain_scratch"][0] == 0 and not out["plain_has_stamps"]
    assert out["stamped_scratch"] == [16, out["align_tag"]]
    assert out["entry_stamps"] == 1 and out["exit_stamps"] == out["rets"] >= 1
    assert out["assembles"], out["ptxas_errors"]
    assert not out["same_hash"]  # stamped and plain binaries never share a cache entry
    assert out["mode_restored"] and out["hook_restored"] and out["stamped_count"] == 1
