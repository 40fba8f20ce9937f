"""Backend "cupti" (alias "cupti_pcsampling"): the nvidia backend's kernel activity, plus
instruction sampling with CUPTI's PC-sampling API in mode "pcsampling".

Mode string: ``pcsampling[:key=value,...]`` with keys
  interval=<5..31>   log2 of the GPU cycles between samples (FLAGTREE_PROFILER_PCSAMPLING_INTERVAL)
  collection=continuous|serialized   CUPTI's collection-mode attribute (FLAGTREE_PROFILER_PCSAMPLING_COLLECTION)
  range=session|launch   session (default): one range per context from its first launch to finalize
      (or a module unload), no per-launch cost; continuous-mode samples are per function, split
      equally among its launches.
      launch: every launch is sampled alone, cuCtxSynchronize + Start at the launch call, Stop +
      GetData when it returns (Proton's order): exact per-launch samples, far slower when
      launch-bound. Both overheads: docs/reference/pc-sampling.md.
"cupti_pcsampling" samples with mode None; "cupti" with mode None records kernels only.
"""
import time
from dataclasses import dataclass

from ... import _env
from .backend import NvidiaBackend
from ..mode import ModeGrammar, Option
from ...native_core import native
from ...triton_glue.kernels import compiled_kernels

# interval and collection default to their environment variables (options_from fills them in)
MODE_GRAMMAR = ModeGrammar((Option("interval", "int", low=5, high=31),
                            Option("collection", "choice", choices=("continuous", "serialized")),
                            Option("range", "choice", default="session", choices=("session", "launch"))),
                           head="pcsampling", separator=",")
SCRATCH_BYTES = 16 << 20  # CUPTI's decoded-record buffer (Proton's size, seen to work on the H200)
# The device buffer samples land in (CUPTI's default is 512 MiB, Proton's 128 MiB). Its size is
# paid at every Start, and a smaller one dropped no sample (docs/reference/pc-sampling.md).
HARDWARE_BYTES = 32 << 20
BUFFER_PCS = 20000  # PC records per GetData call


@dataclass(frozen=True)
class PcSamplingMode:
    """The options of a ``pcsampling[:...]`` mode."""
    interval: int
    collection: str
    range: str

    def canonical(self):
        return MODE_GRAMMAR.canonical({"interval": self.interval, "collection": self.collection, "range": self.range})


@dataclass
class SamplingState:
    """Per session: whether PC sampling is running for it (until its outputs are taken)."""
    sampling: bool = False


def pcsampling_mode(parsed):
    """A PcSamplingMode from MODE_GRAMMAR's ParsedMode: options the mode left out take their
    environment variable's value (_env checks it)."""
    values = dict(parsed.values)
    environment = {"interval": _env.pcsampling_interval, "collection": _env.pcsampling_collection}
    for name, read in environment.items():
        if name not in parsed.given:
            values[name] = read()
    return PcSamplingMode(**values)


def parse_pcsampling_mode(mode):
    """(normalised mode string, options dict) for a ``pcsampling[:...]`` mode; ValueError otherwise."""
    options = pcsampling_mode(MODE_GRAMMAR.parse(mode, "cupti"))
    return options.canonical(), {"interval": options.interval, "collection": options.collection,
                                 "range": options.range}


def loaded_triton_cubins():
    """Cubins of Triton kernels compiled in this process (modules loaded before the session
    started never reach the module-load callback, and the line lookup needs their cubin)."""
    cubins = []
    for obj in compiled_kernels():
        asm = getattr(obj, "asm", None)
        if isinstance(asm, dict) and isinstance(asm.get("cubin"), bytes):
            cubins.append(asm["cubin"])
    return cubins


class CuptiBackend(NvidiaBackend):
    name = "cupti"
    mode_grammar = MODE_GRAMMAR
    SessionState = SamplingState
    flush_off_thread = False  # PC sampling beside the tracer: its parts stay closed on the caller's thread
    #: the PC-sampling library: "" is the libcupti the tracer loaded (tests point it at a stand-in)
    pcsampling_library = ""

    def __init__(self):
        super().__init__()
        # CRCs of sampled cubins already searched for among Triton's kernels: a cubin not found
        # there (cuBLAS's, torch's) is not searched again at every finalize.
        self._searched_crcs = set()

    def options_from(self, parsed):
        return None if parsed.text is None else pcsampling_mode(parsed)

    def attach_session(self, session):
        options = session.options
        if options is None:
            return
        native.session.session_enable_extras(session.slot)
        try:
            native.pcsampling.pcsampling_start(session.slot, self.pcsampling_library, options.interval,
                                    options.collection == "serialized", SCRATCH_BYTES, HARDWARE_BYTES,
                                    BUFFER_PCS, options.range == "session")
        except RuntimeError as error:
            raise RuntimeError(f"flagtree.profiler: {error}") from None
        session.state.sampling = True

    def session_outputs(self, session):
        if not session.state.sampling:
            return {}
        missing = set(native.pcsampling.pcsampling_stop())
        started = time.perf_counter()
        if not missing <= self._searched_crcs:
            # Some samples are in modules loaded before the session (the module-load callback never
            # saw them): their line look-up needs the cubin, which Triton keeps in its kernels.
            for cubin in loaded_triton_cubins():
                native.pcsampling.pcsampling_add_cubin(cubin)
            self._searched_crcs |= missing
        scan_s = time.perf_counter() - started
        session.state.sampling = False
        stats = dict(native.pcsampling.pcsampling_finish())
        stats["pcsampling_cubin_scan_s"] = scan_s
        return stats

    def detach_session(self, session):
        # A session closed without outputs (an error at start) still stops sampling.
        if session.state.sampling:
            session.state.sampling = False
            native.pcsampling.pcsampling_finish()

    def describe(self):
        info = super().describe()
        info["backend"] = self.name
        return info


class CuptiPcSamplingBackend(CuptiBackend):
    """The spec's spelling: PC sampling on with no mode given."""
    name = "cupti_pcsampling"
    default_mode = "pcsampling"
