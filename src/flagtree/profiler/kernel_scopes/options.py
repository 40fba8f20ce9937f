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

from .. import _env

# What Triton's proton lowering compiles (others exist in its enums but fail in the pass).
GRANULARITIES = ("warp",)
BUFFER_TYPES = ("shared", "global")
BUFFER_STRATEGIES = ("circular",)

_SWITCH = {"on": True, "1": True, "true": True, "yes": True, "off": False, "0": False, "false": False,
           "no": False}

FORMS = ("granularity=" + "|".join(GRANULARITIES), "buffer_type=" + "|".join(BUFFER_TYPES),
         "buffer_strategy=" + "|".join(BUFFER_STRATEGIES), "buffer_size=<bytes>", "clock=64|32",
         "triton=on|off", "pool_mb=<MiB>")


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
        return (f"{COMPILER_MODE_PREFIX}granularity={self.granularity}:buffer_type={self.buffer_type}"
                f":buffer_strategy={self.buffer_strategy}:buffer_size={self.buffer_size}"
                f":clock={self.clock}:triton={'on' if self.triton else 'off'}")

    def canonical(self):
        return (self.compiler_mode().split(":", 1)[1] + f":pool_mb={self.pool_mb}")


COMPILER_MODE_PREFIX = "flagtree-instrumentation:"
# Joins our compiler mode to another route's in one instrumentation_mode string (the device
# timer's stamps beside the scopes): no comma, no colon.
MODE_JOINER = "+"


def options_from_compiler_mode(mode):
    """The options a kernel was compiled with, from its metadata's instrumentation_mode (ours
    alone, or ours joined to the device timer's), or None when the scopes were not compiled in."""
    ours = (mode or "").split(MODE_JOINER, 1)[0]
    if not ours.startswith(COMPILER_MODE_PREFIX):
        return None
    return parse_mode(ours[len(COMPILER_MODE_PREFIX):])


def _fail(message):
    raise ValueError(f"instrumentation mode: {message}; supported forms (joined with ':'): "
                     + ", ".join(FORMS))


def _choice(key, value, allowed):
    if value not in allowed:
        _fail(f"{key}={value!r} is not one of {', '.join(allowed)}")
    return value


def _integer(key, value, low, high):
    try:
        number = int(value, 0)
    except ValueError:
        _fail(f"{key}={value!r} is not an integer")
    if not low <= number <= high:
        _fail(f"{key}={number} is outside [{low}, {high}]")
    return number


def parse_mode(mode):
    """InstrumentationOptions from a mode string; ValueError naming the bad part and the forms."""
    values = {}
    env_triton = _env.instrument_triton()
    if env_triton is not None:
        values["triton"] = env_triton
    for part in (mode or "").split(":"):
        part = part.strip()
        if not part or part == "instrumentation":
            continue
        if "=" not in part:
            _fail(f"{part!r} is not key=value")
        key, value = (s.strip().lower() for s in part.split("=", 1))
        if key == "granularity":
            values[key] = _choice(key, value, GRANULARITIES)
        elif key == "buffer_type":
            values[key] = _choice(key, value, BUFFER_TYPES)
        elif key == "buffer_strategy":
            values[key] = _choice(key, value, BUFFER_STRATEGIES)
        elif key == "buffer_size":
            values[key] = _integer(key, value, 0, 1 << 30)
        elif key == "clock":
            values[key] = int(_choice(key, value, ("64", "32")))
        elif key == "triton":
            values[key] = _SWITCH.get(_choice(key, value, tuple(_SWITCH)))
        elif key == "pool_mb":
            values[key] = _integer(key, value, 1, 1 << 16)
        else:
            _fail(f"unknown option {key!r}")
    return InstrumentationOptions(**values)
