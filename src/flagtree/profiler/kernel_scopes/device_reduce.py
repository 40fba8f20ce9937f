"""Per-scope totals of many launches, computed where the profile buffers are (the GPU).

Tree mode needs, per launch and kernel-side scope, only the summed cycles, the number of closed
intervals and the number of warps (units) that recorded it. Copying every block's records to the
host and decoding them there is slow for big grids (docs/performance.md); here one drain runs the
decoder of layout.parse_launch/summarize as tensor operations on the pool itself, for all the
launches of one kernel at once, and copies a few numbers per launch back. The rules are the same as
layout.py's (tests compare the two on random buffers):

* a block without the preamble is bad: its records are ignored;
* a warp's counter past its segment means the circular buffer wrapped: the kept records are the
  newest, oldest first from where the next write would go; the others are dropped;
* within a warp, a scope's records are paired in write order: a start directly followed (among that
  scope's records) by an end is one interval; anything else is unmatched.

Works on any torch device (the CPU tests run it on host tensors). Rows are taken in chunks so the
temporaries stay near CHUNK_ELEMENTS records whatever the pool size.
"""
import dataclasses

import torch

from . import layout as L

_NO_START = (1 << 63) - 1
SCOPE_IDS = 256  # 8 bits of scope id in a record's tag word
CHUNK_ELEMENTS = 1 << 23  # record slots decoded per step (~0.5 GB of int64 temporaries at most)


@dataclasses.dataclass
class LaunchSummary:
    """What tree mode keeps of one launch: {scope id: (cycles, count, units)} and the counters."""
    scopes: dict
    dropped_records: int = 0
    unmatched_records: int = 0
    bad_blocks: int = 0
    good_blocks: int = 0
    stamped_blocks: int = 0  # good blocks whose header has its globaltimer stamps
    start_ns: int = 0  # earliest block start stamp (globaltimer), over the stamped blocks
    end_ns: int = 0  # latest stamp after a block's final copy

    def device_time(self):
        """(start, end) on the global timer when every block ran and stamped its header, else
        None (a short header, a block without the preamble, a launch that did not run)."""
        if self.bad_blocks or not self.good_blocks or self.stamped_blocks != self.good_blocks:
            return None
        return self.start_ns, self.end_ns

    def as_summary(self):
        """layout.summarize's shape: {scope id: {"cycles", "count", "units", "normalized_cycles"}}."""
        return {scope: {"cycles": cycles, "count": count, "units": units,
                        "normalized_cycles": cycles / units if units else 0.0}
                for scope, (cycles, count, units) in sorted(self.scopes.items())}


def summarize_launches(words, slices, layout):
    """words: a 1-D int32 tensor holding the launches' regions; slices: [(first word, num_blocks)],
    one per launch of the kernel `layout` describes. Returns one LaunchSummary per slice."""
    if not slices:
        return []
    device = words.device
    rows = _rows(slices, layout.stride // 4, device)
    offset = layout.data_offset_words
    meta = _u32(words[rows.base[:, None] + torch.arange(offset, device=device)])  # [N, H+W]
    good = meta[:, 0] == L.PREAMBLE
    buffer_bytes = int(torch.where(good, meta[:, 3], 0).max())
    segment = layout.segment_words(buffer_bytes)
    slots = torch.as_tensor(layout.counter_slots(), device=device) + layout.header_words
    counts = torch.where(good[:, None], meta[:, slots], 0)  # [N, S] words each unit wrote
    kept = torch.minimum(counts, torch.tensor(segment, device=device)) & ~1
    totals = _Totals(len(slices), device)
    totals.add("dropped", rows.launch, ((counts - kept) // 2).clamp(min=0).sum(dim=1))
    totals.add("bad", rows.launch, (~good).long())
    totals.add("good", rows.launch, good.long())
    if layout.header_words >= L.LONG_HEADER_WORDS:
        # words 4-5: the block's start; 8-9: after its final copy (layout.py)
        start = meta[:, 4] | (meta[:, 5] << 32)
        end = meta[:, 8] | (meta[:, 9] << 32)
        stamped = good & (start > 0) & (end >= start)
        totals.add("stamped", rows.launch, stamped.long())
        totals.reduce("start", rows.launch, torch.where(stamped, start, _NO_START), "amin")
        totals.reduce("end", rows.launch, torch.where(stamped, end, 0), "amax")
    entries = int(kept.max()) // 2 if kept.numel() else 0
    if entries:
        step = max(1, CHUNK_ELEMENTS // (layout.num_segments * entries))
        for first in range(0, len(rows.base), step):
            part = slice(first, first + step)
            _pair_records(words, rows.base[part], rows.launch[part], counts[part], kept[part], segment, entries,
                          layout, totals)
    return totals.summaries(len(slices))


@dataclasses.dataclass
class _Rows:
    base: torch.Tensor  # first word of each block's region, all launches in order
    launch: torch.Tensor  # index of the slice each block belongs to


def _rows(slices, stride_words, device):
    firsts = torch.tensor([first for first, _ in slices], dtype=torch.int64, device=device)
    sizes = torch.tensor([blocks for _, blocks in slices], dtype=torch.int64, device=device)
    launch = torch.repeat_interleave(torch.arange(len(slices), device=device), sizes)
    starts = torch.cumsum(sizes, 0) - sizes
    within = torch.arange(len(launch), device=device) - starts[launch]
    return _Rows(firsts[launch] + within * stride_words, launch)


def _u32(values):
    return values.to(torch.int64) & 0xFFFFFFFF


class _Totals:
    """Per-launch counters and per-(launch, scope) sums, kept on the device until the end."""

    def __init__(self, launches, device):
        self.device = device
        self.per_launch = {k: torch.zeros(launches, dtype=torch.int64, device=device)
                           for k in ("dropped", "bad", "good", "records", "intervals", "stamped", "end")}
        self.per_launch["start"] = torch.full((launches,), _NO_START, dtype=torch.int64, device=device)
        self.per_scope = {k: torch.zeros(launches * SCOPE_IDS, dtype=torch.int64, device=device)
                          for k in ("cycles", "count", "units")}

    def add(self, key, index, values):
        self.per_launch[key].index_add_(0, index, values)

    def reduce(self, key, index, values, how):
        self.per_launch[key].scatter_reduce_(0, index, values, how)

    def add_scope(self, key, index, values):
        self.per_scope[key].index_add_(0, index, values)

    def summaries(self, launches):
        # One copy to the host for everything (a single sync).
        names = list(self.per_launch) + list(self.per_scope)
        flat = torch.cat([self.per_launch[k] for k in self.per_launch] + [self.per_scope[k] for k in self.per_scope])
        host = flat.cpu().tolist()
        tables, at = {}, 0
        for name in names:
            size = launches if name in self.per_launch else launches * SCOPE_IDS
            tables[name], at = host[at:at + size], at + size
        result = []
        for i in range(launches):
            scopes = {}
            for scope in range(SCOPE_IDS):
                j = i * SCOPE_IDS + scope
                if tables["count"][j]:
                    scopes[scope] = (float(tables["cycles"][j]), tables["count"][j], tables["units"][j])
            result.append(LaunchSummary(scopes, dropped_records=tables["dropped"][i],
                                        unmatched_records=tables["records"][i] - 2 * tables["intervals"][i],
                                        bad_blocks=tables["bad"][i], good_blocks=tables["good"][i],
                                        stamped_blocks=tables["stamped"][i], start_ns=tables["start"][i],
                                        end_ns=tables["end"][i]))
        return result


def _pair_records(words, base, launch, counts, kept, segment, entries, layout, totals):
    """Decodes the records of one chunk of blocks and adds its intervals to `totals`."""
    device = words.device
    units = layout.num_segments
    unit_first = layout.data_offset_words + segment * torch.arange(units, device=device)
    position = base[:, None, None] + unit_first[None, :, None] + torch.arange(2 * entries, device=device)
    pairs = words[position].view(len(base), units, entries, 2)  # a record = (tag, clock low)
    valid_count = kept // 2  # [n, S] records kept per unit
    slot = torch.arange(entries, device=device)
    valid = slot < valid_count[:, :, None]
    # A wrapped circular segment's oldest record sits where the next write would go.
    oldest = torch.where(counts > segment, (counts % max(segment, 1)) // 2, 0)
    order_in_unit = (slot - oldest[:, :, None]) % valid_count.clamp(min=1)[:, :, None]
    row, unit, entry = valid.nonzero(as_tuple=True)
    tag = _u32(pairs[row, unit, entry, 0])
    low = _u32(pairs[row, unit, entry, 1])
    is_end = (tag >> 31) & 1
    scope = (tag >> 23) & 0xFF
    cycle = ((tag & 0x7FF) << 32) | low
    totals.add("records", launch[row], torch.ones_like(row))
    # Group by (block, unit, scope), write order inside: the keys are unique, one sort does it.
    group = (row * units + unit) * SCOPE_IDS + scope
    order = torch.argsort(group * entries + order_in_unit[row, unit, entry])
    group, is_end, cycle, row = group[order], is_end[order], cycle[order], row[order]
    opens = torch.nonzero((group[:-1] == group[1:]) & (is_end[:-1] == 0) & (is_end[1:] == 1)).flatten()
    if len(opens) == 0:
        return
    duration = (cycle[opens + 1] - cycle[opens]) & ((1 << layout.clock_bits) - 1)
    open_group = group[opens]
    first_of_group = torch.ones_like(open_group, dtype=torch.bool)
    first_of_group[1:] = open_group[1:] != open_group[:-1]
    index = launch[row[opens]] * SCOPE_IDS + (open_group % SCOPE_IDS)
    totals.add("intervals", launch[row[opens]], torch.ones_like(opens))
    totals.add_scope("cycles", index, duration)
    totals.add_scope("count", index, torch.ones_like(duration))
    totals.add_scope("units", index, first_of_group.long())
