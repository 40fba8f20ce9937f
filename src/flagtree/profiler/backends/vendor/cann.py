"""The cann backend (Huawei Ascend NPUs), in process through MSPTI: loaded with dlopen at run time
and driven by the same native CUPTI-dialect tracer as the nvidia and mthreads backends (an MSPTI
symbol table; MSPTI's buffer-complete callback has no context or stream, which the shared tracer
handles). Runtime launch callbacks (LAUNCH, CPU/AICPU/AIV/FFTS launches, async memcpy) capture the
launching thread's context; MSPTI's KERNEL, MEMCPY and MEMSET records give device times joined to
it by correlation id; MARKER records (mstx ranges) are counted. Auto-selected for Triton target
"npu" (triton-ascend, torch_npu).

Which libmspti.so is loaded, in this order (the first that loads wins; never dlclosed):
  1. FLAGTREE_PROFILER_MSPTI_PATH (the library file, or a folder holding it)
  2. a copy already loaded in this process (e.g. through LD_PRELOAD, as Ascend's samples do)
  3. ${ASCEND_TOOLKIT_HOME}/lib64
  4. /usr/local/Ascend/ascend-toolkit/latest/lib64
  5. the system loader path

Mode (the public FlagTree Profiler's grammar, backends/vendor/mode_options.py), e.g.
``"runtime_base:device_id=0:vendor_metrics=aicore,bandwidth:mstx_enabled=true"``:
  - mstx_enabled=true: every scope is also an mstx range in the "flagtree_profiler" domain, so
    msprof and MindStudio timelines show our scopes;
  - vendor_metrics=aicore,bandwidth: collected with aclprof and imported from msprof's CSV export
    (backends/vendor/cann_metrics.py), written as <name>.vendor.json and onto the kernel nodes;
  - device_id=<n>: the device the vendor metrics are collected on.

MSPTI must not run beside another profiler: msprof (as this process's launcher or through
PROFILING_MODE), torch_npu's profiler, or another MSPTI subscriber is a clear error at start,
and the program goes on.

Not yet run on Ascend hardware: tested only through a stand-in library built by the tests
(tests/standins/mspti_standin.c) from MSPTI's documented headers.
"""
import os
import sys

from .dialect import DialectBackend
from .mode_options import parse_bool
from ...native_core import native

LIBRARY = "libmspti.so"
ENV_PATH = "FLAGTREE_PROFILER_MSPTI_PATH"
METRICS = ("aicore", "bandwidth")


def _device_id(text):
    value = int(text, 0)
    if value < 0:
        raise ValueError(f"device_id must be >= 0, got {text!r}")
    return value


OPTIONS = {"device_id": _device_id, "mstx_enabled": lambda text: parse_bool(text, "mstx_enabled")}


def _vendor_metrics_class():
    """The aclprof + msprof import path (imported only when a mode asks for vendor metrics)."""
    try:
        from .cann_metrics import CannVendorMetrics  # deferred: only vendor_metrics= needs it
    except ImportError as error:
        raise RuntimeError(f"flagtree.profiler: vendor_metrics needs backends/vendor/cann_metrics.py, which "
                           f"cannot be imported in this build: {error}") from None
    return CannVendorMetrics


def _ancestor_names(limit=64):
    """Command names (/proc/<pid>/comm) of this process's ancestors, nearest first."""
    names, pid = [], os.getppid()
    for _ in range(limit):
        if pid <= 1:
            break
        try:
            with open(f"/proc/{pid}/comm") as f:
                names.append(f.read().strip())
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return names


def other_profilers():
    """Sentences naming each profiler found running that MSPTI must not run beside."""
    found = []
    if any(name.startswith("msprof") for name in _ancestor_names()):
        found.append("this process runs under msprof")
    if os.environ.get("PROFILING_MODE", "").strip().lower() == "true":
        found.append("Ascend profiling is switched on for this process (PROFILING_MODE=true, msprof's "
                     "environment switch)")
    torch = sys.modules.get("torch")
    if "torch_npu" in sys.modules and torch is not None:
        try:
            running = bool(torch.autograd.profiler._is_profiler_enabled)
        except Exception:
            running = False
        if running:
            found.append("torch_npu's profiler (torch.profiler) is running")
    return found


class CannBackend(DialectBackend):
    name = "cann"
    library = LIBRARY
    env_path = ENV_PATH
    prefix = "mspti"
    metrics = METRICS
    options = OPTIONS

    class SessionState:
        def __init__(self):
            self.mstx = False  # this session mirrors scopes as mstx ranges
            self.vendor = None  # its CannVendorMetrics, when the mode asks for vendor metrics

    def install_dirs(self):
        home = os.environ.get("ASCEND_TOOLKIT_HOME", "").strip()
        return [("${ASCEND_TOOLKIT_HOME}/lib64", os.path.join(home, "lib64") if home else None),
                ("/usr/local/Ascend/ascend-toolkit/latest/lib64", "/usr/local/Ascend/ascend-toolkit/latest/lib64")]

    def check_no_other_profiler(self):
        if getattr(native, "mspti_running")():
            return  # our own tracer already runs (a second session): nothing new subscribes
        found = other_profilers()
        if found:
            raise RuntimeError("flagtree.profiler: MSPTI must not run beside another profiler (Ascend documents "
                               "that data is lost), and " + "; ".join(found) + ". Stop it, or profile with it "
                               "alone; this session was not started.")

    def attach_session(self, session):
        mode = self.session_mode(session)
        if mode.options.get("mstx_enabled"):
            try:
                native.mstx_acquire()
            except RuntimeError as error:
                raise RuntimeError(f"flagtree.profiler: {error}") from None
            session.state.mstx = True
        if mode.vendor_metrics:
            collector = _vendor_metrics_class()(mode, session)
            session.state.vendor = collector
            try:
                collector.start()
            except BaseException:
                session.state.vendor = None
                self._stop_mstx(session)
                raise

    def session_outputs(self, session):
        out = {}
        if session.state.mstx:
            out["mstx"] = dict(native.mstx_stats())
        collector, session.state.vendor = session.state.vendor, None
        if collector is not None:
            out["vendor_metrics"] = collector.finish() or {}
        return out

    def _stop_mstx(self, session):
        if session.state.mstx:
            session.state.mstx = False
            native.mstx_release()

    def detach_session(self, session):
        session.state.vendor = None  # closed without outputs: nothing to import
        self._stop_mstx(session)

    def device_info(self):
        devices = list(native.npu_devices()) if self._library else []
        return {"NPU": {str(d["index"]): {"arch": d["arch"]} for d in devices}} if devices else {}

    def describe(self):
        info = super().describe()
        info["devices"] = [{"index": d["index"], "arch": d["arch"]} for d in native.npu_devices()] \
            if self._library else []
        return info
