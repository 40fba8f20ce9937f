"""Runtime environment variables (all FLAGTREE_PROFILER_*), read in one place.

The README's table of variables mirrors ENVIRONMENT below; a test keeps the two in step.
"""
import os
import shutil

ENVIRONMENT = {
    "FLAGTREE_PROFILER_DISABLE": "1 turns every profiler call into a cheap no-op (start returns -1).",
    "FLAGTREE_PROFILER_CUPTI_PATH": "Path of the libcupti to load; searched first.",
    "FLAGTREE_PROFILER_CUPTI_IDLE_S": "Seconds CUPTI stays attached after the last session ends, so that the next session skips subscribing and enabling activity (default 10; 0 releases at every finalize). flagtree.profiler.release() and interpreter exit release at once. The same idle time suspends CUPTI (flush, unsubscribe, cuptiFinalize) while sessions hold it and none is active (deactivated, a schedule between windows); it attaches again when one becomes active (0: suspended at once). A schedule whose quiet stretch is known to be long suspends it when the stretch begins (docs/reference/backends.md). Read at each session's start.",
    "FLAGTREE_PROFILER_CUPTI_LET_GO": "How many times a process may let CUPTI go between windows and attach it again (suspends while no session is active, detaches at a trigger window's close; with FLAGTREE_PROFILER_CUPTI_IDLE_S=0 a close lets go as that asks, uncounted), default 200; -1: no limit, 0: never. Each time, the CUDA driver keeps about 0.6 MB of device memory (H100, CUDA 13); past the number CUPTI stays attached between windows, with a warning: device memory stays flat and launches between windows pay CUPTI's attached cost.",
    "FLAGTREE_PROFILER_BUFFER_SIZE": "Bytes per vendor activity buffer, 4096..1073741824 (default 8388608 = 8 MiB).",
    "FLAGTREE_PROFILER_BACKEND": "Backend used when start() names none (else auto-selected).",
    "FLAGTREE_PROFILER_ROCTRACER_PATH": "Path of libroctracer64.so (the file or its folder); searched first.",
    "FLAGTREE_PROFILER_MUPTI_PATH": "Path of libmupti.so (the file or its folder) for backend mthreads; searched first.",
    "FLAGTREE_PROFILER_MSPTI_PATH": "Path of libmspti.so (the file or its folder) for backend cann; searched first.",
    "FLAGTREE_PROFILER_HOOK_INCLUDE": "With hook=\"triton\": regex; only matching kernel names get launch_metadata evaluated.",
    "FLAGTREE_PROFILER_HOOK_EXCLUDE": "With hook=\"triton\": regex; matching kernel names never get launch_metadata evaluated.",
    "FLAGTREE_PROFILER_BUFFER_LIMIT": "Most bytes of vendor activity buffers held at once, at most 2**48 (default 0 = no limit); past it buffer requests are declined and the records the vendor library drops are counted in dropped_records.",
    "FLAGTREE_PROFILER_NVTX": "0 stops torch.cuda.nvtx ranges from becoming scopes (default 1: range_push/range_pop/range enter and leave scopes).",
    "FLAGTREE_PROFILER_PCSAMPLING_INTERVAL": "PC sampling (backend cupti/cupti_pcsampling): log2 of the GPU cycles between samples, 5..31 (default 10); a mode's interval= wins.",
    "FLAGTREE_PROFILER_PCSAMPLING_COLLECTION": "PC sampling: continuous (default; samples per kernel function, shared among its launches) or serialized (exact launch per sample; kernels run one at a time); a mode's collection= wins.",
    "FLAGTREE_PROFILER_INSTRUMENT_TRITON": "1 instruments Triton-language kernels under backend=\"instrumentation\" (mode triton=on does the same; Gluon kernels always are).",
    "FLAGTREE_PROFILER_PERIODIC_S": "Seconds between automatic parts, 0.1..604800 (a week): each open session writes <name>.part<k>.<ext> with what it collected since the previous part, then frees it.",
    "FLAGTREE_PROFILER_RANKS": "Ranks that profile, e.g. 0,3-5 (default: all); the others behave as if FLAGTREE_PROFILER_DISABLE=1. A process without a rank is rank 0.",
    "FLAGTREE_PROFILER_GATHER": "1 sends every rank's profile files to the lowest profiled rank (rank 0) at finalize, through the initialised torch.distributed process group; a merged timeline is written there too.",
    "FLAGTREE_PROFILER_GATHER_TIMEOUT_S": "Seconds (> 0, default 300) the gather waits for a rank before naming it as missing and going on.",
    "FLAGTREE_PROFILER_BACKWARD_SCOPES": "Where backward kernels go: caller (default: under the scopes of the thread that called backward) or forward (under the forward scope each op ran in, as layer3/<backward>/kernel).",
    "FLAGTREE_PROFILER_COUNTER_RANGES": "With mode=\"metrics...\": kernel launches a counter data image holds before it is decoded (default 64, at least 1; the image takes from a few KB to ~0.7 MB per launch depending on the metrics).",
    "FLAGTREE_PROFILER_TRIGGER": "Arms flagtree-profiler (when --trigger is not given) and arm() (when trigger= is not given): signal[:USR1|USR2|HUP], file:PATH or steps:A-B[,C-D...]; each trigger opens a window, one part each.",
    "FLAGTREE_PROFILER_WINDOW": "How long a signal or file trigger's window stays open: steps=N (counted by step()) or seconds=T (default seconds=10); --window and arm(window=) win.",
    "FLAGTREE_PROFILER_IXKN_CLI": "Path of ixkn-cli for flagtree-profiler --ixkn and tianshu's ixkn_import_path= of .ixkn-rep files (then IXKN_CLI, then the PATH); --ixkn-cli wins.",
    "FLAGTREE_PROFILER_DEVICE_TIMER_ARM": "1 (or a device_timer mode, e.g. slots=8192:events=on) arms the device_timer route at import flagtree.profiler, as arm_device_timer() does: installed with no session open, idle until one is active, so that CUDA graphs captured before the first session are timed in later ones. It starts the ring on the current CUDA device (device 0 at import: a process that picks its GPU later calls arm_device_timer() after that instead), which initializes CUDA in the process. Where the route cannot run (no GPU, a Triton without its hooks, TRITON_INTERPRET=1) it warns and the import goes on.",
    "FLAGTREE_PROFILER_FSYNC": "1 fsyncs every output file before its rename (default 0: the rename alone keeps each file whole against Ctrl-C, SIGKILL, a crash or a full disk; the fsync adds safety against a power loss, at 0.2 ms to several ms a file).",
}

DEFAULT_BUFFER_SIZE = 8 << 20
MAX_BUFFER_SIZE = 1 << 30  # one vendor buffer; CUPTI asks for a new one each time one fills
MAX_BUFFER_LIMIT = 1 << 48
# Parts: a part is a whole write of the session's data, so more than ten a second only writes
# files (docs/performance.md); past a week, the timer is not what the user meant.
MIN_PERIODIC_S = 0.1
MAX_PERIODIC_S = 7 * 24 * 3600.0


def raw(name):
    """The value of variable `name` as set ("" when unset); `name` must be in ENVIRONMENT, so
    that every variable the package reads is in the table (and the README's)."""
    if name not in ENVIRONMENT:
        raise KeyError(f"{name} is not a documented FLAGTREE_PROFILER_* variable (add it to ENVIRONMENT)")
    return os.environ.get(name, "")


def text(name):
    return raw(name).strip()


def flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def fsync_outputs():
    """FLAGTREE_PROFILER_FSYNC: whether each output file is fsynced before its rename."""
    return flag("FLAGTREE_PROFILER_FSYNC")


def disable_flag():
    """FLAGTREE_PROFILER_DISABLE; distributed/ranks.py's profiling_off() adds the rank subset."""
    return flag("FLAGTREE_PROFILER_DISABLE")


def rank_subset():
    """FLAGTREE_PROFILER_RANKS as set ("" when every rank profiles); ranks.py parses it."""
    return text("FLAGTREE_PROFILER_RANKS")


def gather_enabled():
    return flag("FLAGTREE_PROFILER_GATHER")


def gather_timeout():
    return _number("FLAGTREE_PROFILER_GATHER_TIMEOUT_S", float, "seconds", 300.0,
                   lambda v: 0 < v < float("inf"), "be a positive number of seconds")


def _number(name, parse, unit, default, valid, requirement):
    """The value of numeric variable `name` (parse(text)), `default` when unset; a ValueError
    naming the variable when it does not parse or fails `valid` (`requirement` says why)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of {unit}, got {raw!r}") from None
    if not valid(value):
        raise ValueError(f"{name} must {requirement}, got {raw!r}")
    return value


def buffer_size():
    return _number("FLAGTREE_PROFILER_BUFFER_SIZE", lambda raw: int(raw, 0), "bytes", DEFAULT_BUFFER_SIZE,
                   lambda v: 4096 <= v <= MAX_BUFFER_SIZE, f"be between 4096 and {MAX_BUFFER_SIZE} bytes (1 GiB)")


def backend():
    """FLAGTREE_PROFILER_BACKEND: the backend start() uses when it names none ("" when unset)."""
    return text("FLAGTREE_PROFILER_BACKEND")


def cupti_path():
    return text("FLAGTREE_PROFILER_CUPTI_PATH") or None


DEFAULT_CUPTI_IDLE_S = 10.0  # while attached, CUPTI still records (and we discard) every kernel


def cupti_idle_seconds():
    """FLAGTREE_PROFILER_CUPTI_IDLE_S: how long CUPTI stays attached after the last session, or
    quiet while sessions hold it and none is active."""
    return _number("FLAGTREE_PROFILER_CUPTI_IDLE_S", float, "seconds", DEFAULT_CUPTI_IDLE_S,
                   lambda v: 0 <= v <= MAX_PERIODIC_S, f"be between 0 and {MAX_PERIODIC_S:.0f} seconds (a week)")


DEFAULT_CUPTI_LET_GO = 200  # about 120 MB of device memory left with the driver (docs/reference/backends.md)


def cupti_let_go():
    """FLAGTREE_PROFILER_CUPTI_LET_GO: CUPTI let-go's between windows a process may make (-1: no limit)."""
    return _number("FLAGTREE_PROFILER_CUPTI_LET_GO", lambda raw: int(raw, 0), "let-go's", DEFAULT_CUPTI_LET_GO,
                   lambda v: v >= -1, "be -1 (no limit), 0 (never) or a count")


def roctracer_path():
    return text("FLAGTREE_PROFILER_ROCTRACER_PATH")


def instrument_triton():
    """FLAGTREE_PROFILER_INSTRUMENT_TRITON: True, False, or None when unset."""
    raw = text("FLAGTREE_PROFILER_INSTRUMENT_TRITON").lower()
    if not raw:
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"FLAGTREE_PROFILER_INSTRUMENT_TRITON={raw!r}: use 1 or 0")


def nvtx_enabled():
    return os.environ.get("FLAGTREE_PROFILER_NVTX", "1").strip().lower() not in ("0", "false", "no", "off")


def periodic_seconds():
    """The FLAGTREE_PROFILER_PERIODIC_S interval, or None when unset."""
    return _number("FLAGTREE_PROFILER_PERIODIC_S", float, "seconds", None,
                   lambda v: MIN_PERIODIC_S <= v <= MAX_PERIODIC_S,
                   f"be between {MIN_PERIODIC_S} and {MAX_PERIODIC_S:.0f} seconds (a week)")


def buffer_limit():
    """FLAGTREE_PROFILER_BUFFER_LIMIT in bytes; 0 (the default) means no limit."""
    return _number("FLAGTREE_PROFILER_BUFFER_LIMIT", lambda raw: int(raw, 0), "bytes", 0,
                   lambda v: 0 <= v <= MAX_BUFFER_LIMIT, f"be between 0 and {MAX_BUFFER_LIMIT} bytes")


DEFAULT_PCSAMPLING_INTERVAL = 10  # Proton's: a 2 us kernel on a few SMs gets samples (README)


def pcsampling_interval():
    return _number("FLAGTREE_PROFILER_PCSAMPLING_INTERVAL", int, "log2 cycles", DEFAULT_PCSAMPLING_INTERVAL,
                   lambda v: 5 <= v <= 31, "be between 5 and 31 (log2 of the cycles between samples)")


def pcsampling_collection():
    raw = os.environ.get("FLAGTREE_PROFILER_PCSAMPLING_COLLECTION", "").strip().lower() or "continuous"
    if raw not in ("continuous", "serialized"):
        raise ValueError(f"FLAGTREE_PROFILER_PCSAMPLING_COLLECTION must be continuous or serialized, got {raw!r}")
    return raw


def counter_ranges():
    """FLAGTREE_PROFILER_COUNTER_RANGES: launches per counter data image (default 64)."""
    return _number("FLAGTREE_PROFILER_COUNTER_RANGES", lambda raw: int(raw, 0), "launches", 64,
                   lambda v: v >= 1, "be at least 1")


def ixkn_cli():
    """ixkn-cli's path: FLAGTREE_PROFILER_IXKN_CLI, IXKN_CLI, else the PATH; None when none."""
    for variable in ("FLAGTREE_PROFILER_IXKN_CLI", "IXKN_CLI"):
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    return shutil.which("ixkn-cli")


def backward_scopes():
    """FLAGTREE_PROFILER_BACKWARD_SCOPES: caller (default) or forward."""
    raw = text("FLAGTREE_PROFILER_BACKWARD_SCOPES").lower() or "caller"
    if raw not in ("caller", "forward"):
        raise ValueError(f"FLAGTREE_PROFILER_BACKWARD_SCOPES must be caller or forward, got {raw!r}")
    return raw


def trigger():
    """FLAGTREE_PROFILER_TRIGGER as set ("" when unset); trigger_text.py parses it."""
    return text("FLAGTREE_PROFILER_TRIGGER")


def window():
    """FLAGTREE_PROFILER_WINDOW as set, or None when unset; trigger_text.py parses it."""
    return text("FLAGTREE_PROFILER_WINDOW") or None


def device_timer_arm():
    """FLAGTREE_PROFILER_DEVICE_TIMER_ARM: (False, None) unset or off; (True, None) for a switch
    word that turns it on (the default mode); (True, text) for a mode."""
    raw = text("FLAGTREE_PROFILER_DEVICE_TIMER_ARM")
    if raw.lower() in ("", "0", "false", "no", "off"):
        return False, None
    return True, (None if raw.lower() in ("1", "true", "yes", "on") else raw)
