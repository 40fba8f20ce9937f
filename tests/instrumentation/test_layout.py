"""The profile-buffer reader on buffers laid out as instrumented kernels write them."""
import numpy as np
import pytest

from buffers import h200_launch, launch_bytes, two_scopes
from flagtree.profiler.kernel_scopes import layout as L

LAYOUT = L.BlockLayout(stride=8320, num_warps=4)


def test_record_encoding_round_trips():
    for scope, is_end, cycle in [(0, 0, 0), (5, 1, 123456789012), (255, 1, (1 << 43) - 1)]:
        tag, low = L.encode_record(scope, is_end, cycle)
        assert tag >> 31 == is_end and (tag >> 23) & 0xFF == scope
        assert ((tag & 0x7FF) << 32 | low) == cycle


def test_two_scopes_every_warp_every_block():
    blocks = [(b, 3 * b, [two_scopes(1000 * w, 100 + b, 40) for w in range(4)], 5_000_000 + b) for b in range(3)]
    records = L.parse_raw(launch_bytes(LAYOUT, 8192, blocks), LAYOUT, 3)
    summary = L.summarize(records, LAYOUT)
    assert summary[0]["count"] == 12 and summary[1]["count"] == 12  # warps x blocks
    assert summary[0]["cycles"] == 4 * (100 + 101 + 102)
    assert summary[1]["cycles"] == 12 * 40
    assert summary[1]["normalized_cycles"] == 40
    assert records.dropped_records == records.unmatched_records == records.bad_blocks == 0
    assert records.block_start_ns == {0: 5_000_000, 1: 5_000_001, 2: 5_000_002}
    assert set(records.sm.tolist()) == {0, 3, 6}


def test_full_circular_buffer_keeps_newest_records_and_counts_the_rest():
    layout = L.BlockLayout(stride=256, num_warps=4)  # 64-byte buffer: 16 bytes = 2 records per warp
    loop = []
    for i in range(5):  # one scope entered 5 times: 10 records, only the last 2 survive
        loop += [(0, 0, 100 * i), (0, 1, 100 * i + 7 + i)]
    records = L.parse_raw(launch_bytes(layout, 64, [(0, 0, [loop] * 4)]), layout, 1)
    assert records.dropped_records == 4 * 8
    summary = L.summarize(records, layout)
    assert summary[0]["count"] == 4 and summary[0]["cycles"] == 4 * 11  # the newest interval only


def test_wrapped_segment_reorders_oldest_first():
    layout = L.BlockLayout(stride=256, num_warps=4)  # 2 records per warp
    # 3 records: the third overwrites the first; the survivors are (end@7, start@20) -> unmatched.
    warp = [(0, 0, 0), (0, 1, 7), (0, 0, 20)]
    records = L.parse_raw(launch_bytes(layout, 64, [(0, 0, [warp] * 4)]), layout, 1)
    assert records.dropped_records == 4 and records.unmatched_records == 8 and len(records.block) == 0


def test_unclosed_scope_and_bad_block_are_counted_not_fatal():
    good = [(0, 0, 10), (0, 1, 30), (1, 0, 40)]  # "store" never closed
    raw = bytearray(launch_bytes(LAYOUT, 8192, [(0, 0, [good] * 4), (1, 0, [good] * 4)]))
    raw[LAYOUT.stride:LAYOUT.stride + 4] = b"\0\0\0\0"  # second block: no preamble
    records = L.parse_raw(bytes(raw), LAYOUT, 2)
    assert records.bad_blocks == 1 and records.unmatched_records == 4
    assert L.summarize(records, LAYOUT)[0] == {"cycles": 80.0, "count": 4, "units": 4, "normalized_cycles": 20.0}


def test_short_header_layout_of_older_triton():
    layout = L.BlockLayout(stride=8320, num_warps=4, header_words=L.SHORT_HEADER_WORDS)
    records = L.parse_raw(launch_bytes(layout, 8192, [(0, 1, [two_scopes(0, 50, 9)] * 4)]), layout, 1)
    assert L.summarize(records, layout)[0]["cycles"] == 200 and records.block_start_ns == {}


def test_32_bit_clock_wraps():
    layout = L.BlockLayout(stride=8320, num_warps=4, clock_bits=L.CLOCK_BITS_SHORT)
    warp = [(0, 0, 0xFFFFFFF0), (0, 1, 0x10)]  # 0x20 cycles across the wrap
    records = L.parse_raw(launch_bytes(layout, 8192, [(0, 0, [warp] * 4)]), layout, 1)
    assert L.summarize(records, layout)[0]["cycles"] == 4 * 0x20


def test_header_words_follow_the_ptx():
    assert L.header_words_from_ptx("mov.u64 %rd12, %globaltimer;") == L.LONG_HEADER_WORDS
    assert L.header_words_from_ptx("mov.u32 %r1, %clock;") == L.SHORT_HEADER_WORDS


def test_large_launch_is_vectorised():
    blocks = [(b, b % 132, [two_scopes(0, 100, 50)] * 4, 0) for b in range(4096)]
    records = L.parse_raw(launch_bytes(LAYOUT, 8192, blocks), LAYOUT, 4096)
    summary = L.summarize(records, LAYOUT)
    assert summary[0]["count"] == summary[1]["count"] == 4096 * 4
    assert summary[0]["cycles"] == pytest.approx(4096 * 4 * 100)


# Block 0's first 24 words as an H200 wrote them (Triton 3.6, probe case
# add_warp: 4 warps, 8 KiB buffer). Warp 0's four records follow the 10-word header and the four
# per-warp counters; the other warps' segments were not in the log, so their counters are zeroed.
H200_ADD_BLOCK0 = [0xdeadbeef, 0x0, 0x80, 0x2000, 0x3c81e860, 0x18ecb98f, 0x3c81eb40, 0x18ecb98f, 0x3c81ebe0,
                   0x18ecb98f, 0x8, 0x8, 0x8, 0x8, 0x9, 0x16fbd7cd, 0x80000009, 0x16fbd8b5, 0x800009, 0x16fbda82,
                   0x80800009, 0x16fbdc8e, 0x0, 0x0]


def test_words_written_by_an_h200():
    words = np.zeros(8320 // 4, dtype=np.uint32)
    words[:24] = H200_ADD_BLOCK0
    words[11:14] = 0  # warps 1-3: segments not captured
    records = L.parse_raw(words.tobytes(), LAYOUT, 1)
    assert records.bad_blocks == 0 and records.unmatched_records == 0 and records.dropped_records == 0
    assert records.sm.tolist() == [0x80, 0x80]
    assert records.block_start_ns == {0: 0x18ecb98f3c81e860}
    summary = L.summarize(records, LAYOUT)
    assert summary[0]["cycles"] == 0x16fbd8b5 - 0x16fbd7cd  # "load", clock above 2**32 (upper bits 9)
    assert summary[1]["cycles"] == 0x16fbdc8e - 0x16fbda82  # "store"
    assert records.start.min() == (9 << 32) | 0x16fbd7cd


def test_a_whole_launch_written_by_an_h200():
    layout, blocks, names, raw = h200_launch()
    records = L.parse_raw(raw, layout, blocks)
    assert records.bad_blocks == 0 and records.unmatched_records == 0 and records.dropped_records == 0
    assert len(records.block_start_ns) == 8
    summary = L.summarize(records, layout)
    by_name = {names[scope]: s for scope, s in summary.items()}
    assert set(by_name) == {"load", "store"}
    for s in by_name.values():
        assert s["count"] == 8 * 4  # blocks x warps, one entry each
        assert s["cycles"] > 0 and s["normalized_cycles"] == pytest.approx(s["cycles"] / 32)
