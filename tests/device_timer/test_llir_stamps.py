"""The NVVM LLVM IR stamps (CoreX's llir stage): text in, text out, shapes handled and refused,
the stamper chosen per target, and a real Triton kernel's LLVM IR, stamped, compiled by LLVM to
PTX that ptxas assembles."""
import json
import os
import subprocess
import sys

import pytest

from flagtree.profiler.backends.device_timer import stampers
from flagtree.profiler.backends.device_timer.llir_stamps import (ENTRY_HELPER, EXIT_HELPER, NotStampable,
                                                                 kernel_entry, stamp_llir)
from standins.corex_triton import LLIR


def test_the_kernel_and_its_last_parameter_are_found():
    name, slot_type, slot, _, _ = kernel_entry(LLIR)
    assert (name, slot_type, slot) == ("add_kernel", "ptr addrspace(1)", "%4")


def test_an_entry_call_first_and_an_exit_call_before_every_ret():
    out = stamp_llir(LLIR, 0xDEADBEEF, 1 << 20, 8, warp_size=64)
    body = out[out.index("define iluvatar_kernel"):out.index("\n}\n")]
    lines = body.split("\n")
    assert lines[1] == f"  call void @{ENTRY_HELPER}(ptr addrspace(1) %4)"  # before the kernel's own code
    assert body.count(f"call void @{EXIT_HELPER}(ptr addrspace(1) %4)\n  ret void") == 2
    # the slot parameter no longer promises the kernel never touches it
    assert "ptr addrspace(1) %3, ptr addrspace(1) %4)" in body and "readnone captures(none) %4" not in out
    assert out.count(f"define internal void @{ENTRY_HELPER}(") == 1 and out.count(f"define internal void @{EXIT_HELPER}(") == 1
    assert "i32 -559038737, i32 0" in out  # 0xDEADBEEF as an i32 literal
    assert "and i32 %tid, 63" in out and "mul i64 %plane64, 1048576" in out and "and i32 %bx, 7" in out
    assert out.count('asm sideeffect "mov.u64 $0, %globaltimer;"') == 2
    # intrinsics the kernel already declares are not declared again (a second one would not parse)
    declared = [line for line in out.splitlines() if line.startswith("declare ")]
    assert sum("sreg.ctaid.x(" in line for line in declared) == 1
    assert sum("sreg.tid.x(" in line for line in declared) == 1 and sum("sreg.ntid.x(" in line for line in declared) == 1
    assert out.endswith(LLIR[LLIR.index("declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x"):])


def test_the_helpers_write_only_through_a_pointer_with_the_ring_mark():
    """As the PTX stamps: bit 0 is tested before the stamp, and cleared (the slot is the
    pointer less one) before anything is written."""
    out = stamp_llir(LLIR, 7, 1 << 20, 8, warp_size=64)
    for helper in (ENTRY_HELPER, EXIT_HELPER):
        body = out[out.index(f"define internal void @{helper}("):]
        body = body[:body.index("\n}\n")]
        head, stamp = body.split("\nstamp:\n")
        assert "%bits = ptrtoint ptr addrspace(1) %slot to i64" in head and "%mark = and i64 %bits, 1" in head
        assert "%some = icmp ne i64 %mark, 0" in head and "%go = and i1 %leader, %some" in head
        assert "null" not in body and "atomicrmw" not in head
        first, rest = stamp.split("\n", 1)
        assert first == "  %base = getelementptr i8, ptr addrspace(1) %slot, i64 -1"
        assert "%slot" not in rest  # every write goes through %base


def test_a_labelled_entry_block_keeps_its_label_first():
    labelled = LLIR.replace("#0 {\n", "#0 {\nentry:\n", 1)
    out = stamp_llir(labelled, 1, 1 << 20, 8)
    assert f"#0 {{\nentry:\n  call void @{ENTRY_HELPER}(" in out


@pytest.mark.parametrize("llir, why", [
    (LLIR.replace("ret void", "unreachable"), "no 'ret void'"),
    (LLIR + LLIR[LLIR.index("define"):LLIR.index("declare")], "expected one kernel"),
    (LLIR.replace("ptr addrspace(1) nofree readnone captures(none) %4", "i32 %4"), "not a named pointer"),
    (stamp_llir(LLIR, 1, 1 << 20, 8), "already stamped"),
])
def test_shapes_the_stamps_do_not_handle_are_refused(llir, why):
    with pytest.raises(NotStampable, match=why):
        stamp_llir(llir, 1, 1 << 20, 8)


def test_each_target_kind_gets_its_stamper_or_a_reason():
    from triton.backends.compiler import GPUTarget

    assert stampers.stamper_for(GPUTarget("cuda", 90, 32), ["ttir", "ttgir", "llir", "ptx", "cubin"])[0] is stampers.PTX
    corex, _ = stampers.stamper_for(GPUTarget("corex", 71, 64), ["ttir", "ttgir", "llir", "asm", "cubin"])
    assert corex.stage == "llir" and corex.warp_size == 64
    # an older CoreX driver reports its target as "cuda" with CoreX's warp size
    assert stampers.stamper_for(GPUTarget("cuda", 71, 64), ["ttir", "ttgir", "llir", "asm", "cubin"])[0] == corex
    none, why = stampers.stamper_for(GPUTarget("hip", "gfx942", 64), ["ttir", "ttgir", "llir", "amdgcn", "hsaco"])
    assert none is None and "no stamper for target 'hip'" in why


def test_a_real_kernel_s_stamped_llvm_ir_compiles_to_ptx_that_assembles(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    script = os.path.join(os.path.dirname(__file__), "llir_to_ptx.py")
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["assembles"], out["ptxas_errors"]
    assert out["timer_reads"] == 2 and out["atomic_max"] == 2 and out["meta_store"]  # entry, exit, block 0's record
