"""The device_timer stamps: PTX text in, PTX text out (shapes handled and refused), and a real
Triton compile through the compiler hook (metadata, cache separation, restored knobs, ptxas)."""
import json
import os
import subprocess
import sys

import pytest

from flagtree.profiler.backends.device_timer import RingOptions, parse_mode
from flagtree.profiler.backends.device_timer.ptx_stamps import NotStampable, kernel_entry, stamp_ptx
from support.stamped_kernel import PTX
from support.triton_needs import needs_compiler_hooks

def test_the_last_parameter_is_the_slot_pointer():
    name, param, start, end = kernel_entry(PTX)
    assert (name, param) == ("k", "k_param_3")
    assert PTX[start] == "{" and PTX[end] == "}" and "ret;" in PTX[start:end]


def test_one_entry_stamp_and_an_exit_stamp_before_every_ret():
    two_rets = PTX.replace("\tret;\n", "\t@%p1 bra $L1;\n\tret;\n$L1:\n\tret;\n")
    out = stamp_ptx(two_rets, 77, 1 << 20, 8, 64)
    assert out.count("entry stamp") == 1 and out.count("exit stamp") == 2
    assert "$ftp_exit_done1:" in out and "$ftp_exit_done2:" in out  # labels unique in the kernel
    assert "[k_param_3]" in out and "mov.u32 %ftp_r7, 77;" in out and "mul.wide.u32 %ftp_d2, %ftp_r1, 1048576;" in out
    body = out[out.index("{", out.index(".reqntid")):]
    assert body.index("entry stamp") < body.index("mov.u32 \t%r1, %tid.x")  # before the kernel's own code
    assert out.index("exit stamp") < out.index("ret;")


def _executed(block, taken):
    """The instructions of a stamp block a thread runs: the branches to the labels, or under the
    predicates, in `taken` taken (a label outside the block ends it), every other branch not."""
    lines = [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith(("{", "}", ".reg"))]
    labels = {line[:-1]: i for i, line in enumerate(lines) if line.endswith(":")}
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        target = line.split()[-1].rstrip(";") if " bra" in f" {line}" else None
        if line.endswith(":"):
            i += 1
            continue
        out.append(line)
        if target is not None and (target in taken or line.split()[0] in taken):
            if target not in labels:
                break
            i = labels[target]
        else:
            i += 1
    return out


def _stamp_blocks(out):
    entry = out[out.index("entry stamp"):out.index("$ftp_entry_done:")]
    exit_ = out[out.index("exit stamp"):out.index("$ftp_exit_done1:")]
    return entry, exit_


def test_the_ordinary_path_pays_one_and_and_one_branch_for_the_graph_tag():
    entry, exit_ = _stamp_blocks(stamp_ptx(PTX, 77, 1 << 20, 8, 64))
    plain_entry = _executed(entry, {"$ftp_entry_slot"})
    plain_exit = _executed(exit_, {"$ftp_exit_slot1"})
    for path in (plain_entry, plain_exit):
        assert [line.split()[0] for line in path if "ftp_d0, 8" in line or "ftp_e0, 8" in line] == ["and.b64"]
        assert not any(op in line for line in path for op in ("atom.", "div.", "st.global.v2"))
        assert sum(line.startswith("red.global.max.u64") for line in path) == 1
    # ticket-free: the slot path tests the lane, the mark and the tag (at entry thread 0 too),
    # then reads the timer and stamps
    assert sum("bra" in line for line in plain_entry) == 4 and sum("bra" in line for line in plain_exit) == 3


def test_a_pointer_without_the_ring_mark_is_never_written_through():
    """Another tool's profile allocator may answer our tag with its own (even) memory: both
    stamps test bit 0 before anything else, and the slot path clears it before using the slot."""
    entry, exit_ = _stamp_blocks(stamp_ptx(PTX, 77, 1 << 20, 8, 64))
    for block, ptr, slot_label in ((entry, "%ftp_d0", "$ftp_entry_slot"), (exit_, "%ftp_e0", "$ftp_exit_slot1")):
        lines = [line.strip() for line in block.splitlines()]
        loaded = lines.index(next(line for line in lines if line.startswith(f"ld.param.u64 {ptr},")))
        test, compare, branch = lines[loaded + 1:loaded + 4]
        mark = test.split()[1].rstrip(",")
        assert test == f"and.b64 {mark}, {ptr}, 1;"
        assert compare.startswith("setp.eq.u64") and compare.endswith(f"{mark}, 0;") and " bra " in f" {branch}"
        assert not any(op in line for line in lines[:loaded + 4] for op in ("st.", "red.", "atom."))
        after_slot = lines[lines.index(slot_label + ":") + 1:]
        cleared = after_slot.index(f"and.b64 {ptr}, {ptr}, -2;")
        assert not any(op in line for line in after_slot[:cleared] for op in ("st.", "red.", "atom."))


def test_the_tagged_path_takes_a_ticket_at_entry_and_reads_it_only_at_exit():
    """No warp of a graph replay waits for an atomic's answer: the entry ticket's register is
    read first in the exit stamp, and the exit counts itself with a reduction (no answer)."""
    out = stamp_ptx(PTX, 77, 1 << 20, 8, 64)
    entry, exit_ = _stamp_blocks(out)
    graph_entry = _executed(entry, {"bra.uni"})  # lane 0 of warp 0: thread 0 reads the timer too
    assert "and.b64 %ftp_d0, %ftp_d0, -16;" in graph_entry  # the tag and the mark cleared
    assert "shr.u32 %ftp_r3, %ftp_r3, 5;" in graph_entry  # the thread's warp in its block
    assert "and.b64 %ftp_d4, %ftp_d4, 1023;" in graph_entry  # its linear index in the grid's warps, modulo the pairs
    tickets = [line for line in graph_entry if line.startswith("atom.")]
    assert tickets == ["atom.global.add.u64 %ftp_g1, [%ftp_d6], 1;"]
    assert graph_entry.index("@%ftp_p2 mov.u64 %ftp_g0, %globaltimer;") < graph_entry.index(tickets[0])
    assert not any(op in line for line in graph_entry for op in ("red.", "st.", "div."))
    assert sum("%ftp_g1" in line for line in entry.splitlines()) == 1  # never read in the entry stamp
    assert ".reg .b64 %ftp_g<2>;" in out.split("entry stamp")[0]  # at the kernel's scope
    assert "atom." not in exit_
    graph_exit = _executed(exit_, {"bra.uni"})  # thread 0 of block 0
    timer = graph_exit.index("mov.u64 %ftp_e2, %globaltimer;")  # once the row is known, right before its stamp
    assert graph_exit.index("cvt.u32.u64 %ftp_s1, %ftp_g1;") < timer and graph_exit[timer + 1].startswith("red.global.max")
    assert "div.u32 %ftp_s1, %ftp_s1, %ftp_s2;" in graph_exit and "div.u64 %ftp_e7, %ftp_g1, %ftp_e4;" in exit_
    assert "mov.u32 %ftp_s4, 4;" in graph_exit  # .reqntid 128: four warps a block, a constant
    assert "shr.u64 %ftp_e4, %ftp_e4, 10;" in graph_exit  # the pair's warps: (warps - 1 - pair) / 1024 + 1
    assert "and.b64 %ftp_e9, %ftp_e5, 7;" in graph_exit  # the row of the block's lane, modulo 8 lanes
    stamps = ["red.global.max.u64 [%ftp_e1+8], %ftp_e2;", "red.global.max.u64 [%ftp_e1], %ftp_g0;"]
    counted = graph_exit.index("red.global.add.u64 [%ftp_e6+8], 1;")
    assert all(graph_exit.index(stamp) < counted for stamp in stamps)  # counted once stamped
    zeroes = [line for line in graph_exit if line.startswith("st.global.v2.u64")]
    assert zeroes == ["st.global.v2.u64 [%ftp_e1], {%ftp_e3, %ftp_e3};", "st.global.v2.u64 [%ftp_e8], {%ftp_e3, %ftp_e3};"]
    other_warp = _executed(exit_, {"bra.uni", "@%ftp_q1"})  # not thread 0, not a block's warp 0
    assert stamps[0] in other_warp and stamps[1] not in other_warp and "red.global.add.u64 [%ftp_e6+8], 1;" in other_warp
    assert not any("st.global" in line for line in other_warp)


def test_the_ptx_stamps_and_the_native_ring_agree_on_the_layout():
    from flagtree.profiler import _native
    from flagtree.profiler.backends.device_timer import ptx_text

    layout = _native.device_timer.device_timer_layout()
    assert ptx_text.TICKET_COUNTERS * ptx_text.TICKET_BYTES == layout["graph_header_bytes"]
    assert (ptx_text.SLOT_MARK, ptx_text.GRAPH_TAG) == (layout["slot_mark"], layout["graph_tag"])
    assert (1 + layout["lanes"]) * ptx_text.SLOT_BYTES == layout["graph_record_bytes"]


@needs_compiler_hooks
def test_two_rets_get_two_exit_stamps_that_assemble(tmp_path):
    from triton.backends.nvidia.compiler import get_ptxas

    two_rets = PTX.replace("\tret;\n", "\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L1;\n\tret;\n$L1:\n\tret;\n")
    two_rets = two_rets.replace(".reg .b32 \t%r<3>;", ".reg .b32 \t%r<3>;\n\t.reg .pred \t%p<2>;")
    path = tmp_path / "k.ptx"
    path.write_text(stamp_ptx(two_rets, 77, 1 << 20, 8, 64))
    done = subprocess.run([get_ptxas(90).path, "-arch=sm_90a", str(path), "-o", str(path) + ".o"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("ptx, why", [
    (PTX.replace("\tret;", "\t@%p0 ret;"), "predicated ret"),
    (PTX + PTX[PTX.index(".visible"):], "expected one .entry"),
    (PTX.replace("\tret;", "\texit;"), "no ret"),
])
def test_shapes_the_stamps_do_not_handle_are_refused(ptx, why):
    with pytest.raises(NotStampable, match=why):
        stamp_ptx(ptx, 1, 1 << 20, 8, 64)


def test_mode_names_the_ring_size():
    assert parse_mode(None) == RingOptions()
    assert parse_mode("slots=4096:batch=512").canonical() == "slots=4096:batch=512:graph_replays=256:scopes=on"
    assert parse_mode("slots=64").batch_slots() == 4
    assert parse_mode("graph_replays=16").graph_replays == 16
    assert parse_mode("scopes=off").scopes is False and parse_mode(None).scopes is True
    assert parse_mode("scopes=no").scopes is False  # the grammar's one set of switch words
    assert parse_mode("slots=8,batch=2") == parse_mode("slots=8:batch=2")
    for bad in ("slots=1", "slots=8:batch=9", "lanes=4", "slots", "graph_replays=12", "graph_replays=1",
                "scopes=maybe", "batch=-1"):
        with pytest.raises(ValueError, match="device_timer"):
            parse_mode(bad)


@needs_compiler_hooks
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
    assert out["graph_tickets"] == 1 and out["graph_exits"] == out["exit_stamps"]  # the tagged path assembles too
    assert out["assembles"], out["ptxas_errors"]
    assert not out["same_hash"]  # stamped and plain binaries never share a cache entry
    assert out["mode_restored"] and out["hook_restored"] and out["stamped_count"] == 1


@needs_compiler_hooks
def test_a_kernel_compiled_without_stamps_is_built_again_stamped_from_its_kept_ptx(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    script = os.path.join(os.path.dirname(__file__), "restamp_sm90.py")
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["plain_scratch"] == 0 and out["scratch"] == [16, out["align_tag"]]
    assert out["entry_stamps"] == 1 and out["name"] == "add_kernel"
    assert out["elf"] and not out["same_as_plain"]  # ptxas built a binary, not the plain one
