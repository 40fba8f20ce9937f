"""Reading the per-block profile buffers that instrumented kernels write.

The layout (our reading of Triton's proton GPU lowering, checked against kernels compiled by
Triton 3.9 on the CPU and against buffers an H200 wrote with Triton 3.6: 10-word header there):

Each block (CTA) owns ``stride`` bytes (the kernel's ``profile_scratch_size``) of the buffer, in
linear block order. Words are little-endian uint32:

* header: word 0 = 0xdeadbeef, 1 = linear block id, 2 = SM id, 3 = record-buffer bytes;
  Triton >= 3.6-ish also writes globaltimer stamps (ns) at words 4-5 (block start), 6-7 (before
  the final copy) and 8-9 (after it): a 10-word header; older ones stop at 4 words.
  ``header_words`` is found from the kernel's PTX (it reads %globaltimer iff the header has stamps).
* one word per warp: how many words that warp's recorder has written (it keeps counting past the
  end of its segment: the circular buffer then holds the newest records, the older ones are lost);
* the record buffer, split evenly in one segment per recording unit (warp, warp group or CTA).
  A record is 2 words: word 0 = bit 31 set for a scope end, bits 23-30 scope id, bits 0-10 the
  upper bits of the clock; word 1 = the clock's lower 32 bits (SM cycles, %clock64).
"""
import dataclasses

import numpy as np

PREAMBLE = 0xDEADBEEF
SHORT_HEADER_WORDS = 4
LONG_HEADER_WORDS = 10
CLOCK_BITS_LONG = 43  # 11 upper bits kept in the tag word + 32 lower bits
CLOCK_BITS_SHORT = 32
UNITS_PER_GROUP = {"cta": None, "warp": 1, "warp_2": 2, "warp_4": 4, "warp_8": 8, "warp_group": 4,
                   "warp_group_2": 8, "warp_group_4": 16, "warp_group_8": 32}


@dataclasses.dataclass(frozen=True)
class BlockLayout:
    """How one instrumented kernel lays out each block's region."""
    stride: int  # bytes per block (profile_scratch_size)
    num_warps: int
    header_words: int = LONG_HEADER_WORDS
    granularity: str = "warp"
    clock_bits: int = CLOCK_BITS_LONG

    @property
    def num_segments(self):
        per = UNITS_PER_GROUP[self.granularity]
        return 1 if per is None else max(1, self.num_warps // per)

    @property
    def data_offset_words(self):
        return self.header_words + self.num_warps

    def segment_words(self, buffer_bytes):
        return (buffer_bytes // 4) // self.num_segments

    def counter_slots(self):
        """Which per-warp counter word belongs to each segment: the group's first warp."""
        per = UNITS_PER_GROUP[self.granularity] or self.num_warps
        return np.arange(self.num_segments) * per


def header_words_from_ptx(ptx):
    return LONG_HEADER_WORDS if "%globaltimer" in ptx else SHORT_HEADER_WORDS


@dataclasses.dataclass
class LaunchRecords:
    """Closed scope intervals of one launch, one entry per interval, plus what could not be used."""
    block: np.ndarray  # linear block id
    unit: np.ndarray  # segment (warp / group) in the block
    scope: np.ndarray  # scope id
    start: np.ndarray  # cycles
    end: np.ndarray
    sm: np.ndarray  # SM id of the block, per interval
    block_start_ns: dict  # linear block id -> globaltimer at block start (long header only)
    num_blocks: int
    dropped_records: int  # overwritten by a full circular buffer
    unmatched_records: int  # a start without its end or an end without its start
    bad_blocks: int  # regions without the preamble (the block did not run or wrote elsewhere)

    def durations(self, clock_bits):
        return (self.end - self.start) % (np.uint64(1) << np.uint64(clock_bits))


def split_blocks(raw, layout, num_blocks):
    """(header+counters [B, H+W], segments [B, S, segment words]) views of a full raw buffer."""
    words = np.frombuffer(raw, dtype="<u4", count=num_blocks * layout.stride // 4)
    words = words.reshape(num_blocks, layout.stride // 4)
    meta = words[:, :layout.data_offset_words]
    buffer_bytes = int(meta[:, 3].max()) if num_blocks else 0
    seg = layout.segment_words(buffer_bytes)
    data = words[:, layout.data_offset_words:layout.data_offset_words + seg * layout.num_segments]
    return meta, data.reshape(num_blocks, layout.num_segments, seg), seg


def parse_launch(meta, segments, segment_words, layout):
    """LaunchRecords from per-block metadata words [B, H+W] and segment words [B, S, K<=seg]."""
    meta = np.asarray(meta, dtype=np.uint32)
    good = meta[:, 0] == PREAMBLE
    bad_blocks = int((~good).sum())
    block_ids = meta[:, 1].astype(np.int64)
    counts = meta[:, layout.header_words + layout.counter_slots()].astype(np.int64)  # [B, S]
    counts[~good] = 0
    kept_words = np.minimum(counts, segment_words) & ~1
    dropped = int(((counts - kept_words) // 2).clip(min=0).sum())
    num_blocks, num_segments = counts.shape
    entries_kept = segments.shape[2] // 2
    pairs = np.asarray(segments, dtype=np.uint32)[:, :, :entries_kept * 2].reshape(
        num_blocks, num_segments, entries_kept, 2)
    n_valid = kept_words // 2  # [B, S]
    slot = np.arange(entries_kept)[None, None, :]
    valid = slot < n_valid[:, :, None]
    # A wrapped circular segment's oldest record sits where the next write would go.
    wrapped = counts > segment_words
    first = np.where(wrapped, (counts % segment_words) // 2, 0)[:, :, None]
    logical = (slot - first) % np.maximum(n_valid, 1)[:, :, None]
    b_idx, s_idx, _ = np.nonzero(valid)
    # Boolean masks take elements in the same (C) order as nonzero, and faster than fancy indexing.
    tag = pairs[..., 0][valid].astype(np.uint64)
    low = pairs[..., 1][valid].astype(np.uint64)
    is_end = (tag >> np.uint64(31)) & np.uint64(1)
    scope = ((tag >> np.uint64(23)) & np.uint64(0xFF)).astype(np.int64)
    cycle = ((tag & np.uint64(0x7FF)) << np.uint64(32)) | low
    # One sort key (block, segment, scope, write order) instead of a four-key lexsort.
    key = ((b_idx.astype(np.int64) * num_segments + s_idx) * 256 + scope) * max(entries_kept, 1)
    key += np.broadcast_to(logical, valid.shape)[valid]
    order = np.argsort(key, kind="stable")
    b_idx, s_idx, scope, is_end, cycle = b_idx[order], s_idx[order], scope[order], is_end[order], cycle[order]
    same_group = (b_idx[:-1] == b_idx[1:]) & (s_idx[:-1] == s_idx[1:]) & (scope[:-1] == scope[1:])
    opens = np.nonzero(same_group & (is_end[:-1] == 0) & (is_end[1:] == 1))[0]
    closes = opens + 1
    unmatched = len(b_idx) - 2 * len(opens)
    block_start_ns = {}
    if layout.header_words >= LONG_HEADER_WORDS:
        stamps = meta[good][:, 4].astype(np.uint64) | (meta[good][:, 5].astype(np.uint64) << np.uint64(32))
        block_start_ns = dict(zip(block_ids[good].tolist(), stamps.tolist()))
    return LaunchRecords(block=block_ids[b_idx[opens]], unit=s_idx[opens], scope=scope[opens],
                         start=cycle[opens], end=cycle[closes], sm=meta[b_idx[opens], 2].astype(np.int64),
                         block_start_ns=block_start_ns, num_blocks=num_blocks, dropped_records=dropped,
                         unmatched_records=int(unmatched), bad_blocks=bad_blocks)


def parse_raw(raw, layout, num_blocks):
    meta, segments, seg = split_blocks(raw, layout, num_blocks)
    return parse_launch(meta, segments, seg, layout)


def summarize(records, layout):
    """{scope id: {"cycles", "count", "units", "normalized_cycles"}} for one launch."""
    if len(records.scope) == 0:
        return {}
    scope = records.scope.astype(np.int64)
    durations = records.durations(layout.clock_bits).astype(np.float64)
    cycles = np.bincount(scope, weights=durations)
    counts = np.bincount(scope)
    # Distinct (block, unit) per scope, all scopes in one pass: the scope id in the high bits.
    unit_key = records.block.astype(np.int64) * 4096 + records.unit
    distinct = np.unique((scope << 40) | unit_key)
    units = np.bincount(distinct >> 40, minlength=len(counts))
    summary = {}
    for scope_id in np.nonzero(counts)[0].tolist():
        n_units = int(units[scope_id])
        summary[scope_id] = {"cycles": float(cycles[scope_id]), "count": int(counts[scope_id]), "units": n_units,
                             "normalized_cycles": float(cycles[scope_id]) / n_units if n_units else 0.0}
    return summary


def encode_record(scope_id, is_end, cycle):
    """The two words of one record (for building test buffers and checking the decoder)."""
    tag = (int(is_end) << 31) | ((scope_id & 0xFF) << 23) | ((cycle >> 32) & 0x7FF)
    return tag, cycle & 0xFFFFFFFF
