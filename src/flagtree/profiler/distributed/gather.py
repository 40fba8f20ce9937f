"""Gathering every rank's profile files to one rank at finalize (FLAGTREE_PROFILER_GATHER=1),
through the process group the program already initialised with torch.distributed: no shared
file system and no network protocol of our own, only the group's point-to-point send/recv.

Each profiled rank (FLAGTREE_PROFILER_RANKS) takes part; the lowest of them (rank 0 unless the
subset leaves it out) collects. Per sending rank, in order:
  1. clock: 8 ping-pongs with the collector; the tightest gives this rank's offset to the
     collector's wall clock and its error (half the round trip), written into its metadata;
  2. sizes, then one byte tensor holding a JSON header and the files.
Every wait has the deadline FLAGTREE_PROFILER_GATHER_TIMEOUT_S; a rank that misses it is named
in a warning and left out, and the collector goes on with the others. Every rank must finalize
in the same order (each finalize call is one gather round, with tags of its own).
"""
import datetime
import json
import os
import re
import sys
import time
import warnings

from .. import _env
from . import ranks
from ..paths import EXTENSIONS, is_metadata, parse_output_name, side_file
from ..run_group import members
from ..common.safe_text import safe
from ..writers.atomic import strict_json, write_bytes

PINGS = 8
_TAG_BASE = 0x4654  # "FT"
_rounds = [0]


class _Late(Exception):
    """A peer did not answer before the deadline (or its connection failed)."""


def after_finalize(sessions):
    """Session hook: gathers the files these sessions just wrote, when gathering is on."""
    if not sessions or not _env.gather_enabled():
        return None
    paths = []
    for s in sessions:  # a run of several data kinds: each kind's files, the one metadata
        paths += [path for member in members(s) for path in member.data_files()] + [s.metadata_path]
    try:
        return gather_files([p for p in paths if os.path.isfile(p)], _env.gather_timeout())
    except Exception as error:  # the files are written; a failed gather must not fail the program
        warnings.warn(f"flagtree.profiler: gathering the profiles failed: {safe(str(error))}; each "
                      f"rank's files stay where it wrote them", stacklevel=3)
        return None


def _process_group():
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def gather_files(paths, timeout_s):
    """Sends `paths` to the collecting rank, or (there) receives every rank's files into the
    folder of its own. Returns a summary dict on the collector, None elsewhere."""
    dist = _process_group()
    if dist is None:
        warnings.warn("flagtree.profiler: FLAGTREE_PROFILER_GATHER=1 but no torch.distributed process "
                      "group is initialised; each rank's profile stays where it was written", stacklevel=3)
        return None
    rank, world = dist.get_rank(), dist.get_world_size()
    members = ranks.profiled_ranks(world)
    if rank not in members:
        return None
    _rounds[0] += 1
    peer = _Peer(dist, _TAG_BASE + 8 * _rounds[0], time.monotonic() + timeout_s)
    if rank == members[0]:
        return _collect(peer, paths, members, timeout_s)
    _send(peer, paths, members[0], rank, timeout_s)
    return None


class _Peer:
    """Point-to-point tensors over the default group, every wait bounded by one deadline."""

    def __init__(self, dist, tag, deadline):
        import torch  # deferred: torch is heavy and optional

        self.torch, self.dist, self.tag, self.deadline = torch, dist, tag, deadline
        backend = str(dist.get_backend())
        # gloo (alone or as "cpu:gloo,cuda:nccl") carries CPU tensors; NCCL alone needs CUDA ones
        self.device = "cpu" if "gloo" in backend or "mpi" in backend else f"cuda:{torch.cuda.current_device()}"
        self.backend = backend

    def _run(self, post):
        """Posts one operation and waits for it: a peer that is gone (its connection closed) or
        silent past the deadline raises _Late. At least a moment even past the deadline, so a
        message that already arrived is still taken."""
        try:
            work = post()
            done = work.wait(timeout=datetime.timedelta(seconds=max(self.deadline - time.monotonic(), 0.001)))
        except RuntimeError as error:
            raise _Late(str(error).strip().splitlines()[-1][:200]) from None
        if done is False:
            raise _Late("timed out")

    def send(self, tensor, peer, step):
        tensor = tensor.to(self.device)
        self._run(lambda: self.dist.isend(tensor, peer, tag=self.tag + step))

    def recv(self, shape_or_size, dtype, peer, step):
        tensor = self.torch.empty(shape_or_size, dtype=dtype, device=self.device)
        self._run(lambda: self.dist.irecv(tensor, peer, tag=self.tag + step))
        return tensor.cpu()

    def send_times(self, values, peer, step):
        self.send(self.torch.tensor(values, dtype=self.torch.int64), peer, step)

    def recv_times(self, count, peer, step):
        return self.recv(count, self.torch.int64, peer, step).tolist()


def _realtime():
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


# --- the sending side ---

def _measure_offset(peer, root):
    """NTP-style: offset = root's clock - ours, from the ping-pong with the smallest round trip."""
    best = None
    for _ in range(PINGS):
        t1 = _realtime()
        peer.send_times([t1], root, 0)
        (t2,) = peer.recv_times(1, root, 1)
        t3 = _realtime()
        if best is None or t3 - t1 < best[2] - best[0]:
            best = (t1, t2, t3)
    t1, t2, t3 = best
    return t2 - (t1 + t3) // 2, (t3 - t1 + 1) // 2


def _send(peer, paths, root, rank, timeout_s):
    try:
        offset, error = _measure_offset(peer, root)
        clock = _clock_fields(offset, error, root, peer.backend)
        payload = pack_files(rank, paths, clock)
        peer.send_times([len(payload)], root, 2)
        peer.send(peer.torch.frombuffer(bytearray(payload), dtype=peer.torch.uint8), root, 3)
    except _Late as late:
        folder = os.path.dirname(os.path.abspath(paths[0])) if paths else "."
        warnings.warn(f"flagtree.profiler: rank {rank} could not send its profile to rank {root} within "
                      f"{timeout_s:g} s ({safe(str(late))}); it stays in {safe(folder)}", stacklevel=4)


def _clock_fields(offset, error, root, backend):
    return {"clock_offset_ns": offset, "clock_offset_error_ns": error, "clock_reference_rank": root,
            "clock_sync": f"best of {PINGS} ping-pongs with rank {root} over torch.distributed ({backend})"}


def pack_files(rank, paths, meta_update):
    """One byte string: a JSON header line {rank, files: [[name, size]...]}, then the files.
    Metadata files get `meta_update` first (also rewritten here, so both copies agree)."""
    blobs = []
    for path in paths:
        with open(path, "rb") as handle:
            data = handle.read()
        if is_metadata(path) and meta_update:
            data = _updated_meta(path, data, meta_update)
        blobs.append((os.path.basename(path), data))
    header = json.dumps({"rank": rank, "files": [[name, len(data)] for name, data in blobs]}).encode()
    return b"".join([header, b"\n"] + [data for _, data in blobs])


def _updated_meta(path, data, update):
    meta = json.loads(data)
    meta.update(update)
    data = strict_json(meta, indent=1, sort_keys=True).encode()
    write_bytes(path, data)
    return data


def unpack_files(payload):
    """(rank, [(file name, bytes)]) of a pack_files payload; a name that could leave the
    gather folder is refused (ValueError)."""
    newline = payload.index(b"\n")
    header = json.loads(payload[:newline])
    files, at = [], newline + 1
    for name, size in header["files"]:
        if not _safe_name(name):
            raise ValueError(f"refusing gathered file name {name!r}")
        files.append((name, payload[at:at + size]))
        at += size
    return header["rank"], files


_SAFE = re.compile(r"^[^/\\\x00-\x1f]+$")


def _safe_name(name):
    return isinstance(name, str) and name not in (".", "..") and bool(_SAFE.match(name))


# --- the collecting side ---

def _collect(peer, paths, members, timeout_s):
    folder = os.path.dirname(os.path.abspath(paths[0])) if paths else os.getcwd()
    arrived, missing, written = [members[0]], {}, []
    for rank in members[1:]:
        try:
            files = unpack_files(_receive_from(peer, rank, timeout_s))[1]
        except _Late as late:
            missing[rank] = str(late)
            continue
        except (ValueError, KeyError, TypeError) as error:  # arrived, but not a payload of ours
            warnings.warn(f"flagtree.profiler: rank {rank}'s gathered profile is unreadable "
                          f"({safe(str(error))}); it stays where rank {rank} wrote it", stacklevel=4)
            continue
        written += _store(folder, files)
        arrived.append(rank)
    summary = {"root": members[0], "ranks": arrived, "missing": sorted(missing), "timeout_s": timeout_s,
               "folder": folder}
    update = dict(_clock_fields(0, 0, members[0], peer.backend), gather=summary)
    for path in paths:
        if is_metadata(path):
            with open(path, "rb") as handle:
                _updated_meta(path, handle.read(), update)
    if missing:
        _warn_missing(members[0], missing, timeout_s)
    summary["merged_traces"] = _merge_gathered_traces(paths + written)
    return summary


def _receive_from(peer, rank, timeout_s):
    """One rank's exchange. Its first ping is its arrival, awaited until the gather's deadline;
    once it has arrived, the rest gets a fresh timeout (its next ping follows our answer at once,
    but a deadline already spent on slower ranks must not cut it off)."""
    peer.recv_times(1, rank, 0)
    saved, peer.deadline = peer.deadline, max(peer.deadline, time.monotonic() + timeout_s)
    try:
        for ping in range(PINGS):
            if ping:
                peer.recv_times(1, rank, 0)
            peer.send_times([_realtime()], rank, 1)
        (size,) = peer.recv_times(1, rank, 2)
        return peer.recv(size, peer.torch.uint8, rank, 3).numpy().tobytes()
    finally:
        peer.deadline = saved


def _store(folder, files):
    written = []
    for name, data in files:
        path = os.path.join(folder, name)
        if not _same_content(path, data):  # on a shared folder the file is already there
            write_bytes(path, data)
        written.append(path)
    return written


def _same_content(path, data):
    try:
        if os.path.getsize(path) != len(data):
            return False
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False


def _warn_missing(root, missing, timeout_s):
    names = ", ".join(str(r) for r in sorted(missing))
    plural = "s" if len(missing) > 1 else ""
    warnings.warn(f"flagtree.profiler: gather to rank {root} timed out after {timeout_s:g} s: rank{plural} "
                  f"{names} never arrived (not finalized, or gone); their profiles stay where they were "
                  f"written. FLAGTREE_PROFILER_GATHER_TIMEOUT_S sets the wait.", stacklevel=4)


def _merge_gathered_traces(paths):
    """<name>.merged.chrome_trace beside the gathered <name>.rank<r>.chrome_trace files."""
    groups = {}
    for path in paths:
        name = parse_output_name(path)
        if name and name.rank is not None and name.extension == EXTENSIONS["trace"]:
            groups.setdefault(name.base, []).append(path)
    from .merge_traces import merge_traces  # deferred: argparse and the merger load only when traces are gathered

    merged = []
    for base, traces in sorted(groups.items()):
        try:
            merge_traces(sorted(set(traces)), side_file(base, "merged_trace"))
            merged.append(side_file(base, "merged_trace"))
        except Exception as error:  # the gathered files are there; the merge can be redone
            warnings.warn(f"flagtree.profiler: merging the gathered traces of {safe(base)} failed: "
                          f"{safe(str(error))}")
    return merged
