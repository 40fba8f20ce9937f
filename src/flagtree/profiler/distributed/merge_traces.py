"""One timeline from many ranks: merges Chrome trace files (``<name>.rank<r>.chrome_trace``, their
parts, or a folder of them) into one trace that Perfetto and chrome://tracing open.

    python -m flagtree.profiler.merge_traces -o merged.json run.rank*.chrome_trace
    flagtree-profiler-viewer --merge-traces merged.json run.rank*.chrome_trace

- One process per rank (pid rank+1, since tools treat pid 0 as "no process"), named
  ``rank <r> · <host> · pid <pid>``; its host threads keep their ids, each device stream becomes
  a thread of it (``Device 0 · stream 7``).
- Flow ids are namespaced per input file (file index * 2**32 + id), so they cannot collide.
- Clocks: ranks of one host share CLOCK_MONOTONIC, so each trace's t=0 (its session start,
  ``trace_origin_monotonic_ns``) lines them up exactly. Across hosts each rank's wall clock
  (its clock base) is corrected by the offset a gather measured (``clock_offset_ns``), and the
  error bound is stated; without offsets the merge says the clocks are unsynchronised.
- Losses (dropped records, lost launches) per rank and summed: in ``otherData.losses`` and as a
  label of each rank's process.
Metadata comes from the trace's ``otherData`` and, where present, the ``.meta.json`` beside it.
Only one input file is held in memory at a time; the output is written atomically.
"""
import argparse
import json
import math
import os
import sys

from ..run_id import mismatch
from ..paths import EXTENSIONS, SIDE_FILES, metadata_candidates, output_stem, parse_output_name
from .ranks import LOSS_KEYS, losses
from ..stop_signals import Stopped, ignore_stop_signals, stop_signals_unwind, stopped_status
from ..common.safe_text import safe
from ..writers.chrome_trace import chrome_trace

try:  # optional speed-up
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

DEVICE_TID_BASE = 1 << 30  # above any Linux thread id (pid_max <= 2**22)
FLOW_NAMESPACE = 1 << 32


class TraceMergeError(ValueError):
    pass


def expand_inputs(paths):
    """Files as given; a folder stands for its *.chrome_trace files (not earlier merges)."""
    out = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(os.path.join(path, n) for n in os.listdir(path)
                           if n.endswith(EXTENSIONS["trace"]) and not n.endswith(SIDE_FILES["merged_trace"]))
            if not found:
                raise TraceMergeError(f"folder '{path}' holds no .chrome_trace files")
            out += found
        else:
            out.append(path)
    if not out:
        raise TraceMergeError("no trace files to merge")
    return out


def _load_json(path, data):
    try:
        return _orjson.loads(data) if _orjson is not None else json.loads(data)
    except ValueError as error:
        raise TraceMergeError(f"'{path}' is not valid JSON ({error})") from None
    except RecursionError:
        raise TraceMergeError(f"'{path}' nests its JSON too deeply to be a Chrome trace") from None


# A time beyond this (in us: 1e300, or ns ints beyond int64) is no time any clock gives; shifting
# it would overflow a float (an integer of 400 digits has no float at all).
_TIME_LIMIT = 1e300
_NS_LIMIT = 1 << 63


def _finite(value):
    return type(value) in (int, float) and abs(value) <= _TIME_LIMIT and not math.isnan(value)


def _ns(value):
    """Is `value` a clock fact: an integer of ns within int64 (what our writers store)?"""
    return type(value) is int and -_NS_LIMIT <= value < _NS_LIMIT


def _id_like(value):
    """pid, tid and flow ids are numbers or strings in Chrome traces (and keys of our maps)."""
    return value is None or type(value) in (int, str) or (type(value) is float and math.isfinite(value))


def bad_event(event):
    """Why a trace event cannot be merged, or None: what the merge reads of it (its track, time
    and flow id) must have the types Chrome's trace format gives them."""
    if not isinstance(event, dict):
        return f"not an object but {type(event).__name__}"
    for key in ("pid", "tid", "id"):
        if not _id_like(event.get(key)):
            return f"'{key}' is {_shown(event[key])}, not a number or a string"
    for key in ("ts", "dur"):
        if key in event and not _finite(event[key]):
            return f"'{key}' is {_shown(event[key])}, not a finite number"
    if not isinstance(event.get("ph", ""), str):
        return f"'ph' is {_shown(event['ph'])}, not a string"
    return None


def _shown(value):
    if isinstance(value, (dict, list)):  # its type says enough, at any depth
        empty, full = ("{}", "{...}") if isinstance(value, dict) else ("[]", "[...]")
        return full if value else empty
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise TraceMergeError(f"cannot read trace '{path}': {error.strerror or error}") from None


def _head_metadata(path):
    """otherData from the head of a file our writer made, without parsing the events."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 20).decode("utf-8", "replace")
        at = head.index('"otherData":') + len('"otherData":')
        while head[at:at + 1].isspace():
            at += 1
        value, _ = json.JSONDecoder().raw_decode(head, at)
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError, RecursionError):
        return None  # not at the head: read with the events


def _sibling_metadata(path):
    """The trace session's metadata: <name>.chrome_trace.meta.json where a tree session of the
    same name took <name>.meta.json (paths.output_paths), else <name>.meta.json."""
    for meta_path in metadata_candidates(output_stem(path), "trace"):
        try:
            with open(meta_path) as handle:
                meta = json.load(handle)
        except FileNotFoundError:
            continue
        except (OSError, ValueError, RecursionError):
            return {}, None
        if mismatch(path, meta, meta_path):  # another run's, written under the same name
            continue
        return meta if isinstance(meta, dict) else {}, meta_path
    return {}, None


class Input:
    """One trace file and what its metadata says about its rank and clock."""

    def __init__(self, index, path):
        self.index, self.path = index, path
        head = _head_metadata(path)
        if head is None:  # not a file of ours, or otherData after the events: parse it once here
            document = _load_json(path, _read(path))
            head = document.get("otherData") if isinstance(document, dict) else None
            head = head if isinstance(head, dict) else {}
        sibling, self.meta_path = _sibling_metadata(path)
        self.meta = _clean_clock({**(head or {}), **sibling})
        named = parse_output_name(path)
        named = named.rank if named and named.extension == EXTENSIONS["trace"] else None
        rank = self.meta.get("rank")
        self.rank = named if named is not None else rank if type(rank) is int and rank >= 0 else 0
        self.host = str(self.meta.get("host") or "unknown host")
        self.pid = self.meta.get("pid") if type(self.meta.get("pid")) is int else None
        self.shift_us = 0.0
        self.skipped = 0  # events that could not be merged (bad_event)
        self.first_skipped = None  # (index in traceEvents, why)

    def wall_origin_ns(self):
        """This trace's t=0 on the reference rank's wall clock, or None."""
        base, origin = self.meta.get("clock_base"), self.meta.get("trace_origin_monotonic_ns")
        if base is None or origin is None:
            return None
        return base["realtime_ns"] + (origin - base["monotonic_ns"]) + (self.meta.get("clock_offset_ns") or 0)


def _clean_clock(meta):
    """The metadata with clock facts of the wrong type left out: the trace may come from anywhere,
    and a clock fact that is not an integer is no clock fact (the trace keeps its own times)."""
    for key in ("trace_origin_monotonic_ns", "clock_offset_ns", "clock_offset_error_ns"):
        if key in meta and not _ns(meta[key]):
            del meta[key]
    base = meta.get("clock_base")
    if base is not None and not (isinstance(base, dict) and _ns(base.get("realtime_ns"))
                                 and _ns(base.get("monotonic_ns"))):
        del meta["clock_base"]
    elif base is not None and not _ns(base.get("error_ns")):
        meta["clock_base"] = {**base, "error_ns": 0}
    return meta


def _align(inputs):
    """Sets each input's shift so all share one t=0; returns the clock facts for otherData."""
    origins = [i.meta.get("trace_origin_monotonic_ns") for i in inputs]
    walls = [i.wall_origin_ns() for i in inputs]
    if len({i.host for i in inputs}) == 1 and all(type(o) is int for o in origins):
        starts, method, error = origins, "one host: CLOCK_MONOTONIC shared by every rank", 0
        base_wall = walls[0] - (origins[0] - min(origins)) if walls[0] is not None else None
    elif all(w is not None for w in walls):
        synced = all("clock_offset_ns" in i.meta for i in inputs)
        starts = walls
        method = ("several hosts: wall clocks corrected by offsets measured at the gather" if synced else
                  "several hosts: wall clocks, NOT synchronised (no gather measured offsets)")
        error = max(int(i.meta.get("clock_offset_error_ns") or 0) + int(i.meta["clock_base"].get("error_ns") or 0)
                    for i in inputs)
        base_wall = min(walls)
    else:
        for i in inputs:
            i.shift_us = 0.0
        return {"method": "none: some traces carry no clock metadata; times are as recorded"}, None
    reference = min(starts)
    for i, start in zip(inputs, starts):
        i.shift_us = (start - reference) / 1000.0
    facts = {"method": method, "error_ns": error}
    return facts, base_wall


class _RankTracks:
    """A rank's process in the merged trace and the thread ids its tracks got."""

    def __init__(self, rank, first):
        self.rank, self.pid = rank, rank + 1
        self.host, self.os_pid = first.host, first.pid
        self.tids = {}  # (original pid, original tid) -> merged tid
        self.next_device_tid = DEVICE_TID_BASE


def _process_events(tracks, lost_counts):
    label = f"rank {tracks.rank} · {tracks.host}" + (f" · pid {tracks.os_pid}" if tracks.os_pid else "")
    events = [{"ph": "M", "name": "process_name", "pid": tracks.pid, "args": {"name": label}},
              {"ph": "M", "name": "process_sort_index", "pid": tracks.pid, "args": {"sort_index": tracks.rank}}]
    lost = ", ".join(f"{k.replace('_', ' ')}: {lost_counts[k]}" for k in LOSS_KEYS)
    events.append({"ph": "M", "name": "process_labels", "pid": tracks.pid, "args": {"labels": lost}})
    return events


def host_side_pid(item, first_named):
    """The pid of the input's host process: from its metadata, else the first process it names."""
    return item.pid if item.pid is not None else first_named


def _names(events):
    """Process and thread names the input gave its own pids/tids, and the first named pid."""
    processes, threads = {}, {}
    for e in events:
        if bad_event(e) is None and e.get("ph") == "M" and isinstance(e.get("args"), dict):
            if e.get("name") == "process_name":
                processes[e.get("pid")] = str(e["args"].get("name"))
            elif e.get("name") == "thread_name":
                threads[(e.get("pid"), e.get("tid"))] = str(e["args"].get("name"))
    return processes, threads, next(iter(processes), None)


def _track(tracks, item, pid, tid, names, writer):
    key = (pid, tid)
    found = tracks.tids.get(key)
    if found is not None:
        return found
    processes, threads, host_pid = names
    if pid == host_side_pid(item, host_pid) and type(tid) is int and tid < DEVICE_TID_BASE:
        found, name = tid, threads.get(key, f"thread {tid}")
    else:
        found = tracks.next_device_tid
        tracks.next_device_tid += 1
        name = f"{processes.get(pid, f'process {pid}')} · {threads.get(key, f'thread {tid}')}"
    tracks.tids[key] = found
    writer.event({"ph": "M", "name": "thread_name", "pid": tracks.pid, "tid": found, "args": {"name": name}})
    writer.event({"ph": "M", "name": "thread_sort_index", "pid": tracks.pid, "tid": found,
                  "args": {"sort_index": found}})
    return found


def _flow_id(index, value):
    if type(value) is int and 0 <= value < FLOW_NAMESPACE:
        return index * FLOW_NAMESPACE + value
    return f"{index}:{value}"


def _copy_events(item, tracks, writer):
    document = _load_json(item.path, _read(item.path))
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        raise TraceMergeError(f"'{item.path}' is not a Chrome trace (no traceEvents list)")
    names = _names(events)
    for n, e in enumerate(events):
        why = bad_event(e)
        if why is not None:
            item.skipped += 1
            item.first_skipped = item.first_skipped or (n, why)
            continue
        if e.get("ph") == "M":
            continue  # names are re-made per rank
        e = dict(e)
        e["tid"] = _track(tracks, item, e.get("pid"), e.get("tid"), names, writer)
        e["pid"] = tracks.pid
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = round(e["ts"] + item.shift_us, 3)
        if e.get("ph") in ("s", "t", "f") and "id" in e:
            e["id"] = _flow_id(item.index, e["id"])
        try:
            writer.event(e)
        except (TypeError, ValueError, RecursionError) as error:  # args no JSON writer takes
            item.skipped += 1
            item.first_skipped = item.first_skipped or (n, f"its arguments cannot be written as JSON ({error})")


def merge_traces(paths, out_path):
    """Merges the traces (files or folders) into `out_path`; returns the merged otherData."""
    inputs = [Input(n, p) for n, p in enumerate(expand_inputs(paths))]
    clock, base_wall = _align(inputs)
    # parts of one rank share one metadata file
    per_rank, total = losses((i.rank, i.meta_path or i.path, i.meta) for i in inputs)
    try:
        return _write_merged(inputs, out_path, clock, base_wall, per_rank, total)
    except OSError as error:  # a full disk, a folder that is not there: say which file
        raise TraceMergeError(f"cannot write the merged trace '{out_path}': {error.strerror or error}") from None


def _write_merged(inputs, out_path, clock, base_wall, per_rank, total):
    ranks = {}
    with chrome_trace(out_path) as writer:
        for item in sorted(inputs, key=lambda i: (i.rank, i.index)):
            tracks = ranks.get(item.rank)
            if tracks is None:
                tracks = ranks[item.rank] = _RankTracks(item.rank, item)
                for e in _process_events(tracks, per_rank[item.rank]):
                    writer.event(e)
            _copy_events(item, tracks, writer)
        other = {"merged_from": [{"file": os.path.basename(i.path), "rank": i.rank, "host": i.host,
                                  "shift_us": i.shift_us, "skipped_events": i.skipped} for i in inputs],
                 "ranks": sorted(ranks), "clock": clock,
                 "losses": {"per_rank": {str(r): c for r, c in sorted(per_rank.items())}, "total": total}}
        skipped = [f"'{i.path}' event {i.first_skipped[0]}: {i.first_skipped[1]}" for i in inputs if i.skipped]
        other["skipped_events"] = {"total": sum(i.skipped for i in inputs), "first": skipped}
        writer.tail["otherData"] = other
        if base_wall is not None:
            writer.tail["baseTimeNanoseconds"] = base_wall  # wall time of ts=0, as Kineto writes it
    return other


def summary_line(other, out_path):
    total = other["losses"]["total"]
    lost = "no records lost" if not any(total.values()) else \
        "losses: " + "; ".join(f"rank {r}: {c['lost_launches']} lost launches, {c['dropped_records']} dropped "
                               f"records" for r, c in other["losses"]["per_rank"].items() if any(c.values()))
    skipped = other["skipped_events"]
    bad = "" if not skipped["total"] else \
        f"; SKIPPED {skipped['total']} bad events (first: " + "; ".join(skipped["first"]) + ")"
    text = f"merged {len(other['merged_from'])} traces of {len(other['ranks'])} ranks into {out_path}; " \
           f"clock: {other['clock']['method']}; {lost}{bad}\n"
    return safe(text[:-1]) + "\n"  # a terminal gets no control codes


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m flagtree.profiler.merge_traces",
                                     description="Merge per-rank Chrome traces into one timeline.")
    parser.add_argument("-o", "--output", required=True, help="merged trace to write")
    parser.add_argument("traces", nargs="+", help="trace files, or folders of them")
    args = parser.parse_args(argv)
    try:
        with stop_signals_unwind():
            other = merge_traces(args.traces, args.output)
    except (KeyboardInterrupt, Stopped) as stop:
        ignore_stop_signals()
        status, what = stopped_status(stop)
        sys.stderr.write(f"merge_traces: stopped by {what}: {safe(args.output)} was not written\n")
        return status
    except (TraceMergeError, OSError) as error:
        sys.stderr.write(f"merge_traces: error: {safe(str(error))}\n")
        return 2
    sys.stdout.write(summary_line(other, args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
