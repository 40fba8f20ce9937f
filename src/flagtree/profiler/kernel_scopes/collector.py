"""Per-launch bookkeeping of instrumented kernels: which slice, kernel and sessions a launch has,
and reading the slices back (a drain) into session results. Imported once the backend starts:
numpy is needed for the decoding, not for importing flagtree.profiler."""
import dataclasses
import threading
import time

import numpy as np

from ..common import timer_tags
from ..native_core import native
from . import layout as L

TRACE_BLOCKS = 16  # blocks per launch whose intervals a trace session writes (README, Instrumentation)

@dataclasses.dataclass
class Launch:
    piece: object  # pool.Slice
    function: int  # CUfunction handle (Triton's launch metadata "function")
    name: str
    correlation: int  # the launch's correlation id (CUPTI's, or the device timer's), 0 if unknown
    sessions: tuple  # the sessions (session.Session) that were collecting when it launched
    stream: int = 0  # Triton's launch metadata "stream"


@dataclasses.dataclass
class Totals:
    launches: int = 0
    drains: int = 0
    dropped_records: int = 0
    unmatched_records: int = 0
    bad_blocks: int = 0
    unknown_kernels: int = 0
    uncorrelated: int = 0
    unclaimed_buffers: int = 0
    trace_blocks_left_out: int = 0

    def as_stats(self):
        # vars(), not dataclasses.asdict: asdict deep-copies each field, and every session asks twice
        return {f"instrumentation_{k}": v for k, v in vars(self).items()}


def read_launch(view, info, num_blocks):
    """(meta [B, H+W], segments [B, S, K], segment words) of one launch's slice, copying to the
    host only the header words and the part of each segment that holds records."""
    stride_words = info.layout.stride // 4
    words = view.view(dtype=_torch().int32).reshape(num_blocks, stride_words)
    offset = info.layout.data_offset_words
    meta = words[:, :offset].cpu().numpy().view(np.uint32)
    good = meta[:, 0] == L.PREAMBLE
    buffer_bytes = int(meta[good, 3].max()) if good.any() else 0
    seg = info.layout.segment_words(buffer_bytes)
    counts = meta[good][:, info.layout.header_words + info.layout.counter_slots()]
    keep = min(seg, int(counts.max()) if counts.size else 0) & ~1
    data = words[:, offset:offset + seg * info.layout.num_segments].reshape(num_blocks, info.layout.num_segments, seg)
    segments = data[:, :, :keep].cpu().numpy().view(np.uint32)
    return meta, segments, seg


def _torch():
    import torch  # deferred: torch is heavy and optional

    return torch


class Collector:
    def __init__(self, pool, registry, deliver, synchronize):
        self.pool = pool
        self.registry = registry  # function handle -> KernelInfo
        self.deliver = deliver  # deliver(launch, info, LaunchSummary, trace_records() -> LaunchRecords)
        self.synchronize = synchronize
        self.launches = []
        self.totals = Totals()
        self.sessions = tuple  # () -> the sessions collecting now
        self.unread = None  # unread(launch): a launch whose kernel is unknown (never delivered)
        self._pending = threading.local()
        self._lock = threading.RLock()

    # Triton's profile allocator: called by the launcher right before the launch.
    def __call__(self, size, alignment, stream):
        if alignment in timer_tags.any_version():
            # A kernel stamped by the device timer (kept by a library or inductor from an earlier
            # session): its stamps write far past `size` bytes, so no piece of the pool; a null
            # pointer, which they skip.
            return 0
        piece = self.pool.take(size, alignment)
        if piece is None:  # pool full: read everything back (one sync), then start over
            self.drain()
            piece = self.pool.take(size, alignment)
        previous = getattr(self._pending, "piece", None)
        if previous is not None:  # the launch that took it failed before its exit hook
            self.totals.unclaimed_buffers += 1
        self._pending.piece = piece
        self._pending.launch_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, the profile's clock
        return piece

    def on_launch_exit(self, metadata, correlate):
        """Triton's launch-exit hook, on the launching thread: pairs the slice with its kernel;
        `correlate(launch_ns)` names the launch (called only for instrumented kernels)."""
        piece = getattr(self._pending, "piece", None)
        if piece is None:
            return  # not an instrumented kernel
        self._pending.piece = None
        data = getattr(metadata, "data", None) or {}
        correlation = correlate(self._pending.launch_ns)
        with self._lock:
            if not correlation:
                self.totals.uncorrelated += 1
            self.launches.append(Launch(piece, data.get("function"), data.get("name", "?"), correlation,
                                        self.sessions(), int(data.get("stream") or 0)))
            self.totals.launches += 1

    def drain(self):
        """Reads back every launch so far and delivers its scopes; the pool is reused after."""
        with self._lock:
            if not self.launches:
                self.pool.reset()
                return
            self.synchronize()
            launches, self.launches = self.launches, []
            self.totals.drains += 1
            for info, source, group in self._by_kernel(launches):
                self._read(info, source, group)
            self.pool.reset()

    def _by_kernel(self, launches):
        """[(kernel info, buffer, [launch, ...])] in launch order: one device reduction per group."""
        groups = {}
        for launch in launches:
            info = self.registry.get(launch.function)
            if info is None:
                self.totals.unknown_kernels += 1
                if self.unread is not None:
                    self.unread(launch)
                continue
            source = self.pool.source(launch.piece)
            groups.setdefault((id(info), id(source)), (info, source, []))[2].append(launch)
        return list(groups.values())

    def _read(self, info, source, launches):
        from .device_reduce import summarize_launches  # deferred: torch, needed at the first drain

        stride = info.layout.stride
        words = source[:source.numel() // 4 * 4].view(dtype=_torch().int32)
        slices = [(launch.piece.offset // 4, launch.piece.size // stride) for launch in launches]
        summaries = summarize_launches(words, slices, info.layout)
        for launch, summary in zip(launches, summaries):
            self.totals.dropped_records += summary.dropped_records
            self.totals.unmatched_records += summary.unmatched_records
            self.totals.bad_blocks += summary.bad_blocks
            self.deliver(launch, info, summary, lambda launch=launch: self._trace_records(launch, info))

    def _trace_records(self, launch, info):
        """LaunchRecords of the launch's first TRACE_BLOCKS blocks, decoded on the host: what a
        trace session shows of each launch (the rest is counted as left out)."""
        blocks = min(TRACE_BLOCKS, launch.piece.size // info.layout.stride)
        view = self.pool.view(launch.piece)[:blocks * info.layout.stride]
        meta, segments, seg = read_launch(view, info, blocks)
        return L.parse_launch(meta, segments, seg, info.layout)


def scope_children(info, summary):
    """session_attach children: one (path, metrics) per scope of one launch (summary: a
    LaunchSummary.as_summary() or layout.summarize() dict)."""
    children = []
    for scope_id, values in sorted(summary.items()):
        path = [("device_scope", name) for name in info.scope_path(scope_id)]
        children.append((path, [("cycles", values["cycles"]), ("normalized_cycles", values["normalized_cycles"]),
                                ("count", float(values["count"]))]))
    return children


def trace_events(info, records, launch_label, clock_ghz, max_blocks=None):
    """Chrome-trace complete events, one per scope interval of the first max_blocks blocks (all the
    blocks of `records` by default: the drain decodes only TRACE_BLOCKS of each launch):
    a process per block of the launch ("<launch> block B"), a thread per warp ("warp W", as Proton
    names its tracks, so tools that read Proton's traces read ours); time in microseconds of the GPU's global timer
    (each block's start stamp plus its cycles converted with the SM clock). Returns (events, left out).

    The global timer reads ~1.8e18 ns, where a double is exact only to 256 ns (and to 0.25 us once
    in microseconds): each event keeps its block's integer start (``base_ns``) and a small float
    offset, and the writer makes ``ts`` relative to the trace's first block (writers/device_scopes.py)."""
    blocks = np.unique(records.block)
    kept = np.isin(records.block, blocks[:max_blocks])
    left_out = max(0, len(blocks) - max_blocks) if max_blocks is not None else 0
    block, unit, scope = records.block[kept], records.unit[kept], records.scope[kept]
    start, sm = records.start[kept].astype(np.int64), records.sm[kept]
    durations = records.durations(info.layout.clock_bits)[kept].astype(np.int64)
    first_cycle = {}
    for b, c in zip(block.tolist(), start.tolist()):
        if c < first_cycle.get(b, c + 1):
            first_cycle[b] = c
    events = []
    for b, u, s, c, d, m in zip(block.tolist(), unit.tolist(), scope.tolist(), start.tolist(), durations.tolist(),
                                sm.tolist()):
        # Proton's fields: name = scope, cat = kernel, a process per block, a track per warp.
        events.append({"name": info.scope_names.get(s, str(s)), "ph": "X", "cat": info.name,
                       "pid": f"{launch_label} block {b}", "tid": f"warp {u}", "base_ns": int(records.block_start_ns.get(b, 0)),
                       "offset_ns": (c - first_cycle[b]) / clock_ghz, "dur": d / clock_ghz / 1000.0,
                       "args": {"cycles": d, "sm": m, "block": b, "warp": u}})
    return events, left_out
