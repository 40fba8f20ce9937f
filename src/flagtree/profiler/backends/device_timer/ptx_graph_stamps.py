"""The stamps' path for a launch replayed from a CUDA graph (PTX text; ptx_stamps.py calls it
when the scratch pointer carries the graph tag). The pointer is then a descriptor (graph_area.h):
{TICKET_COUNTERS pairs of ticket counters, R replay records laid out as a small ring of R slots}.

Every replay reuses the descriptor, so each warp takes a ticket as it starts, on counter (its
linear index among the grid's warps) % TICKET_COUNTERS, and ticket / (the grid's warps on that
counter) is its replay r. The ticket is answered while the warp runs and read at its exit, and
the exit's stamps and its exit count want no answer: no warp waits for a round trip to memory.
Spread over a thousand counters, a many-block kernel's atomics do not queue on a few addresses
(graph_tickets.h). At exit a warp stamps its end, and thread 0 the block's start (read at entry),
into the row of lane (block's linear index % lanes) of record r % R; block (0,0,0) also stores the
kernel's id and geometry, and block l < lanes zeroes its lane's row of record r + 1 (block 0 also
that record's first row): the host never writes a descriptor, and a wrap leaves no stale start.
"""
from .ptx_text import CARRIED, SLOT_BYTES, TICKET_BYTES, TICKET_COUNTERS, log2, meta_store


def _block_index(out, u, w):
    """`out` (u64) = the block's linear index in the grid, x fastest; `u` two u32 and `w` one u64
    scratch registers."""
    a, b = u
    return (f"\tmov.u32 {a}, %nctaid.y;\n\tmov.u32 {b}, %ctaid.z;\n\tmul.wide.u32 {out}, {a}, {b};\n"
            f"\tmov.u32 {b}, %ctaid.y;\n\tcvt.u64.u32 {w}, {b};\n\tadd.u64 {out}, {out}, {w};\n"
            f"\tmov.u32 {a}, %nctaid.x;\n\tcvt.u64.u32 {w}, {a};\n\tmul.lo.u64 {out}, {out}, {w};\n"
            f"\tmov.u32 {b}, %ctaid.x;\n\tcvt.u64.u32 {w}, {b};\n\tadd.u64 {out}, {out}, {w};\n")


def _warps(per_block, index, t, threads):
    """`per_block` (u32) = warps per block, `index` (u32) = this thread's warp in its block; `t` a
    u32 scratch register. `threads`: the block's size where the kernel fixes a 1-D one
    (``.reqntid``, as Triton's kernels do), else None (read from %ntid, %tid)."""
    if threads:
        return (f"\tmov.u32 {per_block}, {(threads + 31) // 32};\n"
                f"\tmov.u32 {index}, %tid.x;\n\tshr.u32 {index}, {index}, 5;\n")
    return (f"\tmov.u32 {per_block}, %ntid.x;\n\tmov.u32 {t}, %ntid.y;\n\tmul.lo.u32 {per_block}, {per_block}, {t};\n"
            f"\tmov.u32 {t}, %ntid.z;\n\tmul.lo.u32 {per_block}, {per_block}, {t};\n"
            f"\tadd.u32 {per_block}, {per_block}, 31;\n\tshr.u32 {per_block}, {per_block}, 5;\n"
            f"\tmov.u32 {index}, %tid.z;\n\tmov.u32 {t}, %ntid.y;\n\tmul.lo.u32 {index}, {index}, {t};\n"
            f"\tmov.u32 {t}, %tid.y;\n\tadd.u32 {index}, {index}, {t};\n"
            f"\tmov.u32 {t}, %ntid.x;\n\tmul.lo.u32 {index}, {index}, {t};\n"
            f"\tmov.u32 {t}, %tid.x;\n\tadd.u32 {index}, {index}, {t};\n\tshr.u32 {index}, {index}, 5;\n")


def _replay(out, ticket, per_replay, index):
    """`out` (u64) = `ticket` / `per_replay`, the warp's replay. Instructions are what a warp's exit
    costs the kernel, so the common cases divide cheaply: a pair holding one warp of the grid (a
    grid of at most TICKET_COUNTERS warps) does not divide, and while both fit 32 bits the
    division is a 32-bit one."""
    by_one, wide, known = f"$ftp_by_one{index}", f"$ftp_wide{index}", f"$ftp_replay{index}"
    return (f"\tsetp.eq.u64 %ftp_q1, {per_replay}, 1;\n\t@%ftp_q1 bra {by_one};\n"
            f"\tor.b64 {out}, {ticket}, {per_replay};\n\tshr.u64 {out}, {out}, 32;\n"
            f"\tsetp.ne.u64 %ftp_q1, {out}, 0;\n\t@%ftp_q1 bra {wide};\n"
            f"\tcvt.u32.u64 %ftp_s1, {ticket};\n\tcvt.u32.u64 %ftp_s2, {per_replay};\n"
            f"\tdiv.u32 %ftp_s1, %ftp_s1, %ftp_s2;\n\tcvt.u64.u32 {out}, %ftp_s1;\n\tbra.uni {known};\n"
            f"{by_one}:\n\tmov.u64 {out}, {ticket};\n\tbra.uni {known};\n"
            f"{wide}:\n\tdiv.u64 {out}, {ticket}, {per_replay};\n"
            f"{known}:\n")


def _counter(out, block, per_block, index, w):
    """`out` (u64) = the warp's ticket counter: (block x warps per block + warp) % counters."""
    return (f"\tcvt.u64.u32 {w}, {per_block};\n\tmul.lo.u64 {out}, {block}, {w};\n"
            f"\tcvt.u64.u32 {w}, {index};\n\tadd.u64 {out}, {out}, {w};\n"
            f"\tand.b64 {out}, {out}, {TICKET_COUNTERS - 1};\n")


def _record(out, replay, descriptor, records):
    """`out` (not `descriptor`) = the first row (plane 0) of the record of replay `replay` (modulo
    `records`). The records are laid out as a small ring after the header's counters: plane p of
    record q at (p x records + q) rows, so a replay's lane rows lie `records` rows apart, not side
    by side, and its warps' stamps spread over the L2 as the ring's planes do."""
    return (f"\tand.b64 {out}, {replay}, {records - 1};\n"
            f"\tshl.b64 {out}, {out}, {log2(SLOT_BYTES)};\n"
            f"\tadd.u64 {out}, {out}, {descriptor};\n"
            f"\tadd.u64 {out}, {out}, {TICKET_COUNTERS * TICKET_BYTES};\n")


def _lane_row(out, lane, base, records):
    """`out` = the address of lane `lane`'s row of the record whose first row is at `base`."""
    return (f"\tadd.u64 {out}, {lane}, 1;\n\tshl.b64 {out}, {out}, {log2(records * SLOT_BYTES)};\n"
            f"\tadd.u64 {out}, {out}, {base};\n")


def _counter_address(out, counter, descriptor):
    return (f"\tshl.b64 {out}, {counter}, {log2(TICKET_BYTES)};\n"
            f"\tadd.u64 {out}, {out}, {descriptor};\n")


def graph_entry(is_thread0, done, threads=None):
    """Lane 0 of a warp, %ftp_d0 the tagged pointer, `is_thread0` a predicate: thread 0 reads the
    timer into g0 and every warp takes its ticket into g1 (read at its exit). Scratch: the entry
    stamp's %ftp_r1-r6 and %ftp_d0, d3-d6."""
    return (f"\t@{is_thread0} mov.u64 {CARRIED}0, %globaltimer;\n"
            f"\t@{is_thread0} not.b64 {CARRIED}0, {CARRIED}0;\n"
            "\tand.b64 %ftp_d0, %ftp_d0, -16;\n"
            + _block_index("%ftp_d5", ("%ftp_r4", "%ftp_r5"), "%ftp_d3")
            + _warps("%ftp_r1", "%ftp_r3", "%ftp_r6", threads)
            + _counter("%ftp_d4", "%ftp_d5", "%ftp_r1", "%ftp_r3", "%ftp_d3")
            + _counter_address("%ftp_d6", "%ftp_d4", "%ftp_d0") +
            f"\tatom.global.add.u64 {CARRIED}1, [%ftp_d6], 1;\n"
            f"\tbra.uni {done};\n")


def graph_exit(kernel_id, records, lanes, done, index, threads=None):
    """Lane 0 of a warp, %ftp_e0 the tagged pointer; `index` makes the labels unique in the
    kernel. The timer is read once the record's row is known, right before the end stamp (as on
    the slot path): the arithmetic before it is part of the warp's time, not left out of the
    kernel's. Scratch: the exit stamp's %ftp_s, %ftp_m, %ftp_e and %ftp_q."""
    counted = f"$ftp_exit_counted{index}"
    # The block, warp and counter are worked out again rather than carried from the entry: a
    # register live through the kernel is one fewer for the kernel's own code.
    return ("\tand.b64 %ftp_e0, %ftp_e0, -16;\n"
            + _block_index("%ftp_e5", ("%ftp_s1", "%ftp_s2"), "%ftp_e3")
            + _warps("%ftp_s4", "%ftp_s6", "%ftp_s5", threads)
            + _counter("%ftp_e6", "%ftp_e5", "%ftp_s4", "%ftp_s6", "%ftp_e3") +
            # the counter's warps in the grid: (blocks x warps per block - 1 - counter) / counters + 1
            "\tmov.u32 %ftp_s1, %nctaid.x;\n\tmov.u32 %ftp_s2, %nctaid.y;\n\tmul.wide.u32 %ftp_e4, %ftp_s1, %ftp_s2;\n"
            "\tmov.u32 %ftp_s1, %nctaid.z;\n\tcvt.u64.u32 %ftp_e3, %ftp_s1;\n\tmul.lo.u64 %ftp_e4, %ftp_e4, %ftp_e3;\n"
            "\tcvt.u64.u32 %ftp_e3, %ftp_s4;\n\tmul.lo.u64 %ftp_e4, %ftp_e4, %ftp_e3;\n"
            "\tsub.u64 %ftp_e4, %ftp_e4, %ftp_e6;\n\tsub.u64 %ftp_e4, %ftp_e4, 1;\n"
            f"\tshr.u64 %ftp_e4, %ftp_e4, {log2(TICKET_COUNTERS)};\n\tadd.u64 %ftp_e4, %ftp_e4, 1;\n"
            + _replay("%ftp_e7", f"{CARRIED}1", "%ftp_e4", index) +
            "\tadd.u64 %ftp_e8, %ftp_e7, 1;\n"
            f"\tand.b64 %ftp_e9, %ftp_e5, {lanes - 1};\n"
            + _record("%ftp_e7", "%ftp_e7", "%ftp_e0", records)
            + _lane_row("%ftp_e1", "%ftp_e9", "%ftp_e7", records) +
            "\tmov.u64 %ftp_e2, %globaltimer;\n"
            "\tred.global.max.u64 [%ftp_e1+8], %ftp_e2;\n"
            "\tmov.u32 %ftp_s1, %tid.x;\n\tsetp.ne.u32 %ftp_q1, %ftp_s1, 0;\n"
            f"\t@%ftp_q1 bra {counted};\n"
            f"\tred.global.max.u64 [%ftp_e1], {CARRIED}0;\n"
            + meta_store("%ftp_e7", kernel_id, r="%ftp_m", p="%ftp_q1") +
            f"{counted}:\n"
            + _counter_address("%ftp_e6", "%ftp_e6", "%ftp_e0") +
            "\tred.global.add.u64 [%ftp_e6+8], 1;\n"
            # warp 0 of block l < lanes zeroes lane l's row of the next record (block 0 its first row too)
            "\tsetp.ne.u32 %ftp_q1, %ftp_s6, 0;\n"
            f"\t@%ftp_q1 bra {done};\n"
            f"\tshr.u64 %ftp_e3, %ftp_e5, {log2(lanes)};\n\tsetp.ne.u64 %ftp_q1, %ftp_e3, 0;\n"
            f"\t@%ftp_q1 bra {done};\n"
            + _record("%ftp_e8", "%ftp_e8", "%ftp_e0", records)
            + _lane_row("%ftp_e1", "%ftp_e9", "%ftp_e8", records) +
            "\tmov.u64 %ftp_e3, 0;\n"
            "\tst.global.v2.u64 [%ftp_e1], {%ftp_e3, %ftp_e3};\n"
            "\tsetp.ne.u64 %ftp_q1, %ftp_e5, 0;\n"
            f"\t@%ftp_q1 bra {done};\n"
            "\tst.global.v2.u64 [%ftp_e8], {%ftp_e3, %ftp_e3};\n"
            f"\tbra.uni {done};\n")
