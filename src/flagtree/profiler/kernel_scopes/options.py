"""The instrumentation backend's options: start(backend="instrumentation", mode="key=value:...").

An empty mode (None or "") means every default. Keys:

* granularity: warp (the only one Triton's proton lowering accepts, checked on 3.9: "granularity must
  be warp for now") -- one recorder per warp.
* buffer_type: shared (default) | global -- where a block keeps its records while it runs.
* buffer_strategy: circular (a full buffer overwrites its oldest records, counted as dropped; the
  only strategy the NVIDIA lowering accepts, checked on 3.9).
* buffer_size: bytes of record buffer per block, split among its warps (default 1024: 32 records
  per warp with 4 warps; 0 lets Triton choose, 8 KiB in shared memory). Small keeps the profile
  buffers of big grids small (16384 blocks x ~1.1 KiB per launch), so the pool holds many launches.
* clock: 64 (default) | 32 -- width of the clock read (32 is cheaper, wraps after ~2 s at 2 GHz).
* triton: off (default) | on -- also instrument Triton-language kernels (Gluon kernels always are).
* pool_mb: device memory for profile buffers, in MiB (default 1024). Launches take slices of it;
  the host reads it back only when it is full, at flush() and at stop, never per launch.
"""
import dataclasses
import functools

from .. import _env
from ..backends.mode import ModeGrammar, Option

# What Triton's proton lowering compiles (others exist in its enums but fail in the pass).
GRANULARITIES = ("warp",)
BUFFER_TYPES = ("shared", "global")
BUFFER_STRATEGIES = ("circular",)

# The options that change the binary, in the order the compiler mode spells them.
COMPILED_OPTIONS = (Option("granularity", "choice", default="warp", choices=GRANULARITIES),
                    Option("buffer_type", "choice", default="shared", choices=BUFFER_TYPES),
                    Option("buffer_strategy", "choice", default="circular", choices=BUFFER_STRATEGIES),
                    Option("buffer_size", "int", default=1024, low=0, high=1 << 30, form="buffer_size=<bytes>"),
                    Option("clock", "int", default=64, choices=(64, 32)),
                    Option("triton", "switch", default=False))
COMPILED_GRAMMAR = ModeGrammar(COMPILED_OPTIONS)
# "triton" left out of a mode takes FLAGTREE_PROFILER_INSTRUMENT_TRITON (options_from fills it in)
MODE_GRAMMAR = ModeGrammar(COMPILED_OPTIONS + (Option("pool_mb", "int", default=1024, low=1, high=1 << 16,
                                                      form="pool_mb=<MiB>"),),
                           words=("instrumentation",), lower=True)


@dataclasses.dataclass(frozen=True)
class InstrumentationOptions:
    granularity: str = "warp"
    buffer_type: str = "shared"
    buffer_strategy: str = "circular"
    buffer_size: int = 1024
    clock: int = 64
    triton: bool = False
    pool_mb: int = 1024

    def compiler_mode(self):
        """The string put in triton.knobs.compilation.instrumentation_mode: part of every kernel's
        cache key, so instrumented and plain binaries (and different options) never share an entry.
        Only options that change the binary are in it; no commas (Triton splits modes on them)."""
        return _compiler_mode(self)

    def canonical(self):
        return _canonical(self)


@functools.lru_cache(maxsize=16)
def _canonical(options):
    """InstrumentationOptions.canonical, spelled once per options: every device_timer session's
    metadata asks for it."""
    return MODE_GRAMMAR.canonical(dataclasses.asdict(options))


# Short: the mode is in every launch's cache key, which Triton spells and hashes at each launch.
COMPILER_MODE_PREFIX = "ftis:"
OLD_COMPILER_MODE_PREFIX = "flagtree-instrumentation:"  # kernels compiled by earlier versions (disk caches)


@functools.lru_cache(maxsize=16)
def _compiler_mode(options):
    """InstrumentationOptions.compiler_mode, spelled once per options (they are frozen): the
    options that differ from their defaults."""
    return COMPILER_MODE_PREFIX + COMPILED_GRAMMAR.canonical(dataclasses.asdict(options), defaults=False)


# Joins our compiler mode to another route's in one instrumentation_mode string (the device
# timer's stamps beside the scopes): no comma, no colon.
MODE_JOINER = "+"


def options_from_compiler_mode(mode):
    """The options a kernel was compiled with, from its metadata's instrumentation_mode (ours
    alone, or ours joined to the device timer's), or None when the scopes were not compiled in."""
    ours = (mode or "").split(MODE_JOINER, 1)[0]
    for prefix in (COMPILER_MODE_PREFIX, OLD_COMPILER_MODE_PREFIX):
        if ours.startswith(prefix):
            return InstrumentationOptions(**COMPILED_GRAMMAR.parse(ours[len(prefix):], "instrumentation").values)
    return None


def options_from(parsed):
    """InstrumentationOptions from MODE_GRAMMAR's ParsedMode."""
    values = dict(parsed.values)
    env_triton = _env.instrument_triton()
    if "triton" not in parsed.given and env_triton is not None:
        values["triton"] = env_triton
    return InstrumentationOptions(**values)


def parse_mode(mode):
    """InstrumentationOptions from a mode string; ValueError naming the bad part and the forms."""
    return options_from(MODE_GRAMMAR.parse(mode, "instrumentation"))
