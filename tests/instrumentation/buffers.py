"""Profile buffers built the way an instrumented kernel writes them (layout.py describes it)."""
import numpy as np

from flagtree.profiler.kernel_scopes import layout as L


def block_words(layout, buffer_bytes, block_id, sm, warp_records, start_ns=0):
    """One block's region: warp_records[u] = [(scope, is_end, cycle), ...] in the order written by
    recording unit u (a warp, or a group's first warp: layout.counter_slots); a unit writing more
    than its segment holds wraps around as the circular strategy does."""
    words = np.zeros(layout.stride // 4, dtype=np.uint32)
    words[0], words[1], words[2], words[3] = L.PREAMBLE, block_id, sm, buffer_bytes
    if layout.header_words >= L.LONG_HEADER_WORDS:
        words[4], words[5] = start_ns & 0xFFFFFFFF, start_ns >> 32
    seg = layout.segment_words(buffer_bytes)
    for unit, (records, slot) in enumerate(zip(warp_records, layout.counter_slots())):
        base = layout.data_offset_words + unit * seg
        for i, (scope, is_end, cycle) in enumerate(records):
            position = (2 * i) % seg
            words[base + position:base + position + 2] = L.encode_record(scope, is_end, cycle)
        words[layout.header_words + slot] = 2 * len(records)
    return words


def launch_bytes(layout, buffer_bytes, blocks):
    """blocks: list of (block_id, sm, warp_records[, start_ns])."""
    return np.concatenate([block_words(layout, buffer_bytes, *b) for b in blocks]).tobytes()


def two_scopes(first_cycle, load_cycles, store_cycles):
    """A warp's records for `load` (scope 0) then `store` (scope 1)."""
    t = first_cycle
    return [(0, 0, t), (0, 1, t + load_cycles), (1, 0, t + load_cycles + 5),
            (1, 1, t + load_cycles + 5 + store_cycles)]


def h200_launch():
    """(layout, blocks, scope names, raw bytes) of the 8-block add an H200 wrote (Triton 3.6, saved by
    tests/gpu/test_instrumentation_gpu.py): scopes "load" and "store", 4 warps, 1 KiB buffers."""
    import json
    import os

    here = os.path.join(os.path.dirname(__file__), "fixtures")
    with open(os.path.join(here, "add_8blocks.json")) as f:
        meta = json.load(f)
    with open(os.path.join(here, "add_8blocks.raw"), "rb") as f:
        raw = f.read()
    names = {int(k): v for k, v in meta["scope_names"].items()}
    return L.BlockLayout(**meta["layout"]), meta["blocks"], names, raw
