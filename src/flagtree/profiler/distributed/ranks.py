"""Which rank of a distributed run this process is, what its files are called, and whether it
profiles at all.

Rank and world size come from the launcher's environment (torchrun, Open MPI, MPICH/PMI, srun,
in that order: torchrun inside srun sets both, and RANK is the one that means the training rank),
else from an initialised ``torch.distributed``. A run is *distributed* when a rank was found and
the world size is not known to be 1; only then do output names get ``.rank<r>`` (a single
process, or ``torchrun --nproc_per_node=1``, keeps its plain name).

``FLAGTREE_PROFILER_RANKS=0,3-5`` profiles a subset: the other ranks see the profiler as disabled
(``start`` returns -1 before touching any backend). A process with no rank counts as rank 0.
"""
import math
import os
import sys
from collections import namedtuple

from .. import _env
from ..paths import ranked_name

RankInfo = namedtuple("RankInfo", "rank world_size local_rank source")

# (rank variable, world size variable, local rank variable, launcher)
LAUNCHER_VARIABLES = (
    ("RANK", "WORLD_SIZE", "LOCAL_RANK", "torchrun"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "mpirun (Open MPI)"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI (MPICH)"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "srun"),
)
_ALL_VARIABLES = tuple(name for group in LAUNCHER_VARIABLES for name in group[:3])
_RANK_VARIABLES = tuple(group[0] for group in LAUNCHER_VARIABLES)  # no rank without one of these
SUBSET_VARIABLE = "FLAGTREE_PROFILER_RANKS"
_cache = {}  # the environment's rank values -> RankInfo or None, so repeated calls stay cheap


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _from_environment():
    for rank_var, size_var, local_var, launcher in LAUNCHER_VARIABLES:
        rank = _int_or_none(os.environ.get(rank_var))
        if rank is not None and rank >= 0:
            return RankInfo(rank, _int_or_none(os.environ.get(size_var)),
                            _int_or_none(os.environ.get(local_var)), launcher)
    return None


def _from_torch_distributed():
    dist = sys.modules.get("torch.distributed")  # never imported here: torch costs seconds
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        return RankInfo(dist.get_rank(), dist.get_world_size(),
                        _int_or_none(os.environ.get("LOCAL_RANK")), "torch.distributed")
    except Exception:  # a group being torn down: no rank rather than a failed profile
        return None


def current():
    """This process's RankInfo, or None when no launcher or process group names a rank."""
    environ = os.environ
    if not any(name in environ for name in _RANK_VARIABLES):  # no launcher: the common case, cheaply
        return _from_torch_distributed()  # never cached: a group may be initialised later
    key = tuple(environ.get(name) for name in _ALL_VARIABLES)
    info = _cache.get(key, _cache)
    if info is _cache:
        info = _cache[key] = _from_environment()  # None too: no rank variable holds a rank
    return info if info is not None else _from_torch_distributed()


def is_distributed(info):
    return info is not None and info.world_size != 1


def output_base(base):
    """The output path without extension for this process: ``<base>.rank<r>`` under a
    distributed launch, ``base`` otherwise. Also where a bad FLAGTREE_PROFILER_RANKS is reported."""
    subset()
    info = current()
    return ranked_name(base, info.rank if is_distributed(info) else None)


def parse_subset(text):
    """'0,3-5' -> ((0, 0), (3, 5)); ValueError naming the variable on anything else."""
    ranges = []
    for item in text.split(","):
        item = item.strip()
        low, dash, high = item.partition("-")
        first, last = _int_or_none(low), _int_or_none(high) if dash else _int_or_none(low)
        if not item or first is None or last is None or first < 0 or last < first:
            raise ValueError(f"{SUBSET_VARIABLE} must list ranks and ranges such as 0,3-5, got {text!r}")
        ranges.append((first, last))
    return tuple(ranges)


def subset():
    """The FLAGTREE_PROFILER_RANKS ranges, or None when every rank profiles."""
    raw = _env.rank_subset()
    return parse_subset(raw) if raw else None


def in_subset(rank, ranges):
    return ranges is None or any(first <= rank <= last for first, last in ranges)


def profiling_off():
    """FLAGTREE_PROFILER_DISABLE, or a rank that FLAGTREE_PROFILER_RANKS leaves out: either way
    this process pays what a disabled profiler pays (start() returns -1, scopes do nothing)."""
    return _env.disable_flag() or excluded()


def excluded():
    """True when FLAGTREE_PROFILER_RANKS leaves this rank out. Never raises (it runs at import
    time through scope.py); a malformed value is reported by start() instead."""
    if not _env.rank_subset():
        return False
    try:
        ranges = subset()
    except ValueError:
        return False
    info = current()
    return not in_subset(info.rank if info is not None else 0, ranges)


def profiled_ranks(world_size):
    """The ranks of a world of `world_size` that profile (and so take part in a gather)."""
    ranges = subset()
    return [r for r in range(world_size) if in_subset(r, ranges)]


LOSS_KEYS = ("dropped_records", "lost_launches")  # what a rank's metadata says it lost


def losses(entries):
    """({rank: {loss key: count}}, {loss key: sum over ranks}) from (rank, metadata file,
    metadata) entries. Parts of one rank share one metadata file, counted once; a count that is
    not a finite number counts as 0 (the metadata may come from anywhere)."""
    per_rank, seen = {}, set()
    for rank, meta_file, meta in entries:
        counts = per_rank.setdefault(rank, dict.fromkeys(LOSS_KEYS, 0))
        if meta_file in seen:
            continue
        seen.add(meta_file)
        for key in LOSS_KEYS:
            value = meta.get(key)
            if type(value) is int or (type(value) is float and math.isfinite(value)):
                counts[key] += int(value)
    total = {key: sum(c[key] for c in per_rank.values()) for key in LOSS_KEYS}
    return per_rank, total
