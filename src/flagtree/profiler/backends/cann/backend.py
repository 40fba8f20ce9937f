"""The cann backend (Huawei Ascend NPUs), in process through MSPTI: loaded with dlopen at run time
and driven by the same native CUPTI-dialect tracer as the nvidia and mthreads backends (an MSPTI
symbol table and MSPTI's quirks, csrc/backends/cann/mspti_dialect.h). Auto-selected for Triton
target "npu" (triton-ascend, torch_npu).

Where launches come from. triton-ascend's launcher calls rtKernelLaunch, which MSPTI does not
interpose, so Triton launches are seen through Triton's launch hook: the enter hook records the
launch with its context. Launched inside the hooks (TRITON_ENABLE_TASKQUEUE off), it pushes an
id of ours as MSPTI's external correlation id, the exit hook pops it, and MSPTI's
EXTERNAL_CORRELATION records map those ids to its correlation ids, which its KERNEL records carry
(MSPTI's callbacks never fill their correlationId). On triton-ascend's task queue (its default)
the launch happens later on the queue's thread: nothing is pushed, and the kernel joins its
launch by name in queue order (task_queue.py). MSPTI's runtime
callbacks (aclrtLaunchKernel*, aclrtMemcpyAsync) add the launches of other libraries (torch_npu
ops), but MSPTI gives callbacks, and MEMCPY/MEMSET records, only to a process started with
libmspti.so in LD_PRELOAD: ``flagtree-profiler -b cann ...`` starts the target so; an API session
in a process started without it says once what it cannot see. Records that no mapping joins are
joined by launch order when that is unambiguous, else left unattributed, counted either way
(``mspti_join`` in the metadata, per rule and record kind). MSPTI reports device records
continuously; a flush waits for the device and one report period, staying subscribed.

Record times are CLOCK_REALTIME ns (there is no msptiGetTimestamp), converted to the profile's
clock with an offset measured at start. MSPTI reports no dropped-record count: records it could
not store are not counted by it (``mspti_records.drop_count``).

Which libmspti.so is loaded, in this order (the first that loads wins; never dlclosed):
  1. FLAGTREE_PROFILER_MSPTI_PATH (the library file, or a folder holding it)
  2. a copy already loaded in this process (e.g. through LD_PRELOAD, as Ascend's samples do)
  3. lib64, then tools/mspti/lib64, under ${ASCEND_HOME_PATH}, ${ASCEND_TOOLKIT_HOME},
     /usr/local/Ascend/cann (MSPTI's default install), ${HOME}/Ascend/cann and
     /usr/local/Ascend/ascend-toolkit/latest, in that order (preload.py)
  4. the system loader path

Mode (the public FlagTree Profiler's vendor grammar, backends/mode.py), e.g.
``"runtime_base:device_id=0:mstx_enabled=true"``:
  - mstx_enabled=true: every scope is also an mstx range in the "flagtree_profiler" domain, so
    msprof and MindStudio timelines show our scopes;
  - vendor_metrics=aicore,bandwidth: refused in a session that traces with MSPTI: Ascend
    documents that aclprof/msprof beside MSPTI in one process loses data. They need a run of
    their own (backends/cann/metrics.py is that run's import);
  - device_id=<n>: the device the vendor metrics are collected on.

MSPTI must not run beside another profiler: msprof (as this process's launcher or through
PROFILING_MODE), torch_npu's profiler, or another MSPTI subscriber is a clear error at start,
and the program goes on.

Not run on Ascend hardware: tested through a stand-in library built by the tests
(tests/standins/mspti_standin.c) that behaves as Ascend's open-source MSPTI implementation does
(docs/reference/vendors.md lists what could not be settled from its sources).
"""
import os
import sys
import warnings

from ..base import LaunchHooks
from ..dialect import DialectBackend
from ..mode import Option, vendor_grammar
from .preload import install_dirs, keep_from_children, restart
from .task_queue import describe as describe_join, launch_hooks, task_queue_on
from ...native_core import native

LIBRARY = "libmspti.so"
ENV_PATH = "FLAGTREE_PROFILER_MSPTI_PATH"
METRICS = ("aicore", "bandwidth")


MODE_GRAMMAR = vendor_grammar(METRICS, (Option("device_id", "int", low=0),
                                        Option("mstx_enabled", "switch", spelled=("true", "false"))))


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


def restart_with_preload(backend):
    """For ``flagtree-profiler`` (preload.py): starts this command again with the libmspti.so the
    backend would load first in LD_PRELOAD, so that MSPTI gives its runtime callbacks and MEMCPY/MEMSET
    records. Does nothing when it is there already (so after the restart)."""
    if "libmspti.so" in os.environ.get("LD_PRELOAD", ""):
        return
    path = next((p for _, p in backend.library_candidates()
                 if p and os.path.isfile(p) and "libmspti.so" in os.path.basename(p)), None)
    restart(path, lambda line: print(line, file=sys.stderr))


def preload_message(refusal):
    """What a process started without libmspti.so in LD_PRELOAD can and cannot see."""
    return ("flagtree.profiler: backend 'cann': MSPTI refused its runtime callbacks (" + refusal + "). Triton "
            "launches are still joined to their kernels (through Triton's launch hook), but launches by other "
            "libraries (aclrtLaunchKernel*, e.g. torch_npu's operators) are not attributed to scopes (their kernels "
            "stay under ROOT), and MSPTI gives no MEMCPY or MEMSET records. To see them, start the program with "
            "libmspti.so in LD_PRELOAD: run it under `flagtree-profiler -b cann ...`, or set "
            "LD_PRELOAD=<path to libmspti.so> yourself.")


class CannBackend(DialectBackend):
    name = "cann"
    library = LIBRARY
    env_path = ENV_PATH
    prefix = "mspti"
    mode_grammar = MODE_GRAMMAR
    # MSPTI does not see rtKernelLaunch: Triton's launch hooks join launches to kernels. Last in
    # the enter chain (after hook="triton" has set the launch's metadata), first in the exit chain
    # (the id is popped right after the launch); they go in once the tracer runs and come out
    # before it stops. Without Triton, MSPTI's callbacks only.
    launch_hooks = LaunchHooks(enter="_launch_enter", exit="_launch_exit", enter_order="last", exit_order="first",
                               prepare="_choose_launch_join", required=False)

    class SessionState:
        def __init__(self):
            self.mstx = False  # this session mirrors scopes as mstx ranges

    def __init__(self):
        super().__init__()
        self._told_preload = False
        self._queued = False

    def before_command(self):
        restart_with_preload(self)

    def install_dirs(self):
        return install_dirs()

    def options_from(self, parsed):
        options = super().options_from(parsed)
        if options is not None and options.vendor_metrics:
            raise ValueError(f"backend 'cann': vendor_metrics={','.join(options.vendor_metrics)} collects with "
                             f"aclprof, which must not run in the same process as MSPTI (Ascend documents that "
                             f"data is lost); collect the vendor metrics in a run of their own, with msprof or "
                             f"aclprof alone, and leave vendor_metrics out of this session's mode")
        return options

    # --- launches: Triton's launch hooks (declared in launch_hooks) ---
    def after_acquire(self):
        keep_from_children()  # MSPTI has read LD_PRELOAD by now
        refusal = native.cann.mspti_callback_refusal()
        if refusal and not self._told_preload:
            self._told_preload = True
            warnings.warn(preload_message(refusal), stacklevel=3)

    def _choose_launch_join(self):
        """The launch hooks for this process: queue order by name when the task queue runs the
        launches, else the external correlation id pushed around each launch."""
        self._queued = task_queue_on()
        self._launch_enter, self._launch_exit = launch_hooks(native.cann, self._queued)

    def check_no_other_profiler(self):
        if getattr(native.cann, "mspti_running")():
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
                native.cann.mstx_acquire()
            except RuntimeError as error:
                raise RuntimeError(f"flagtree.profiler: {error}") from None
            session.state.mstx = True

    def session_outputs(self, session):
        out = {}
        if session.state.mstx:
            out["mstx"] = dict(native.cann.mstx_stats())
        return out

    def _stop_mstx(self, session):
        if session.state.mstx:
            session.state.mstx = False
            native.cann.mstx_release()

    def detach_session(self, session):
        self._stop_mstx(session)

    def device_info(self):
        devices = list(native.cann.npu_devices()) if self._library else []
        return {"NPU": {str(d["index"]): {"arch": d["arch"]} for d in devices}} if devices else {}

    def describe(self):
        info = super().describe()
        info[f"{self.prefix}_records"]["drop_count"] = "not reported by MSPTI"
        info["mspti_join"] = dict(native.cann.mspti_join_stats())
        if not self.launch_hooks_missing:
            info["triton_launch_join"] = describe_join(self._queued)
        info["copy_times"] = "host: MSPTI stamps MEMCPY and MEMSET records around the host call"
        refusal = native.cann.mspti_callback_refusal()
        info["mspti_callbacks"] = "enabled" if not refusal else f"refused: {refusal}"
        info["launch_source"] = ("Triton's launch hook" + ("" if refusal else " and MSPTI's runtime callbacks")
                                 if not self.launch_hooks_missing
                                 else f"MSPTI's runtime callbacks ({self.launch_hooks_missing})")
        info["devices"] = [{"index": d["index"], "arch": d["arch"]} for d in native.cann.npu_devices()] \
            if self._library else []
        return info
