"""The drain's tensor reduction (device_reduce.py) against the host decoder (layout.py), launch by
launch, on random buffers with every irregularity the layout allows; on host tensors here, on the
pool's GPU memory in a real session (tests/gpu/test_instrumentation_gpu.py)."""
import random

import numpy as np
import pytest
import torch

from buffers import block_words, h200_launch, two_scopes
from flagtree.profiler.kernel_scopes import device_reduce as D
from flagtree.profiler.kernel_scopes import layout as L

BUFFER_BYTES = 1024


def random_warp(rng, scopes, max_records, clock_bits):
    """A warp's records in write order: nested and repeated scopes, sometimes a start left open,
    sometimes a stray end, sometimes more records than the segment holds (wraps)."""
    records, t = [], rng.randrange(1 << (clock_bits - 1))
    for _ in range(rng.randrange(max_records // 2 + 1)):
        scope = rng.randrange(scopes)
        kind = rng.random()
        t += rng.randrange(1, 5000)
        if kind < 0.08:
            records.append((scope, 1, t % (1 << clock_bits)))  # an end without its start
        elif kind < 0.16:
            records.append((scope, 0, t % (1 << clock_bits)))  # a start never closed
        else:
            records.append((scope, 0, t % (1 << clock_bits)))
            if rng.random() < 0.3:  # nested inner scope
                inner = rng.randrange(scopes)
                t += rng.randrange(1, 300)
                records.append((inner, 0, t % (1 << clock_bits)))
                t += rng.randrange(1, 300)
                records.append((inner, 1, t % (1 << clock_bits)))
            t += rng.randrange(1, 5000)
            records.append((scope, 1, t % (1 << clock_bits)))
    return records


def random_launch(rng, layout, blocks):
    seg_records = layout.segment_words(BUFFER_BYTES) // 2
    words = []
    for b in range(blocks):
        units = [random_warp(rng, rng.choice([1, 3, 8, 256]), rng.choice([4, seg_records, 3 * seg_records]),
                             layout.clock_bits) for _ in range(layout.num_segments)]
        region = block_words(layout, BUFFER_BYTES, b, rng.randrange(132), units, rng.randrange(1 << 60))
        if rng.random() < 0.1:
            region[0] = 0  # the block never ran: no preamble
        words.append(region)
    return np.concatenate(words)


def host_summary(raw, layout, blocks):
    records = L.parse_raw(raw, layout, blocks)
    meta = np.frombuffer(raw, dtype="<u4").reshape(blocks, -1)
    good = int((meta[:, 0] == L.PREAMBLE).sum())
    return (L.summarize(records, layout), records.dropped_records, records.unmatched_records, records.bad_blocks,
            good)


def pool_of(launch_words, gaps):
    """The launches one after the other in one int32 buffer, `gaps` words apart (alignment)."""
    pieces, slices, at = [], [], 0
    for words, gap in zip(launch_words, gaps):
        pieces.append(np.zeros(gap, dtype=np.uint32))
        at += gap
        pieces.append(words)
        slices.append(at)
        at += len(words)
    pool = np.concatenate(pieces + [np.zeros(7, dtype=np.uint32)])
    return torch.from_numpy(pool.view(np.int32).copy()), slices


@pytest.mark.parametrize("layout", [
    L.BlockLayout(stride=4 * (10 + 4) + BUFFER_BYTES, num_warps=4),
    L.BlockLayout(stride=4 * (4 + 8) + BUFFER_BYTES, num_warps=8, header_words=L.SHORT_HEADER_WORDS,
                  clock_bits=L.CLOCK_BITS_SHORT),
    L.BlockLayout(stride=4 * (10 + 8) + BUFFER_BYTES, num_warps=8, granularity="warp_group"),
    L.BlockLayout(stride=4 * (10 + 4) + BUFFER_BYTES, num_warps=4, granularity="cta"),
], ids=["warp", "short-header-32bit", "warp-group", "cta"])
def test_each_launch_matches_the_host_decoder(layout, monkeypatch):
    rng = random.Random(18)
    monkeypatch.setattr(D, "CHUNK_ELEMENTS", 64)  # many chunks: rows of one launch split across them
    launches = [random_launch(rng, layout, blocks) for blocks in (1, 5, 13, 2)]
    words, firsts = pool_of(launches, gaps=[3, 32, 0, 11])
    blocks = [len(w) * 4 // layout.stride for w in launches]
    summaries = D.summarize_launches(words, list(zip(firsts, blocks)), layout)
    assert len(summaries) == len(launches)
    for summary, raw, n in zip(summaries, launches, blocks):
        scopes, dropped, unmatched, bad, good = host_summary(raw.tobytes(), layout, n)
        assert summary.as_summary() == scopes
        assert (summary.dropped_records, summary.unmatched_records, summary.bad_blocks, summary.good_blocks) == (
            dropped, unmatched, bad, good)
    assert any(s.dropped_records for s in summaries) and any(s.unmatched_records for s in summaries)
    assert any(s.bad_blocks for s in summaries)


def test_clean_launches_count_every_warp_once():
    layout = L.BlockLayout(stride=4 * (10 + 4) + BUFFER_BYTES, num_warps=4)
    launch = np.concatenate([block_words(layout, BUFFER_BYTES, b, 0, [two_scopes(50 * w, 100 + b, 40)
                                                                      for w in range(4)]) for b in range(6)])
    words, firsts = pool_of([launch, launch], gaps=[0, 4])
    first, second = D.summarize_launches(words, [(firsts[0], 6), (firsts[1], 6)], layout)
    assert first == second
    assert first.scopes[0] == (float(4 * sum(100 + b for b in range(6))), 24, 24)
    assert first.scopes[1] == (float(24 * 40), 24, 24)
    assert first.as_summary()[1]["normalized_cycles"] == 40.0
    assert (first.dropped_records, first.unmatched_records, first.bad_blocks) == (0, 0, 0)


def test_a_whole_launch_written_by_an_h200():
    layout, blocks, _, raw = h200_launch()
    words = torch.from_numpy(np.frombuffer(raw, dtype=np.int32).copy())
    (summary,) = D.summarize_launches(words, [(0, blocks)], layout)
    scopes, dropped, unmatched, bad, good = host_summary(raw, layout, blocks)
    assert summary.as_summary() == scopes and len(scopes) == 2
    assert (summary.dropped_records, summary.unmatched_records, summary.bad_blocks, summary.good_blocks) == (0, 0, 0, 8)


def test_empty_buffers_give_empty_summaries():
    layout = L.BlockLayout(stride=4 * (10 + 4) + BUFFER_BYTES, num_warps=4)
    words = torch.zeros(3 * layout.stride // 4, dtype=torch.int32)
    (summary,) = D.summarize_launches(words, [(0, 3)], layout)
    assert summary.scopes == {} and summary.bad_blocks == 3 and summary.good_blocks == 0
    assert D.summarize_launches(words, [], layout) == []
