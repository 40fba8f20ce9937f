"""The cann backend (Huawei Ascend NPUs), in process through MSPTI: loaded with dlopen at run time
and driven by the same native CUPTI-dialect tracer as the nvidia and mthreads backends (an MSPTI
symbol table and MSPTI's quirks, csrc/backends/cann/mspti_dialect.h). Auto-selected for Triton
target "npu" (triton-ascend, torch_npu).

Where launches come from. triton-ascend's launcher calls rtKernelLaunch, which MSPTI does not
interpose, so Triton launches are seen through Triton's launch hook: the enter hook records the
launch with its context and pushes an id of ours as MSPTI's external correlation id, the exit
hook pops it. MSPTI's EXTERNAL_CORRELATION records map those ids to its correlation ids, which
its KERNEL records carry (MSPTI's callbacks never fill their correlationId). MSPTI's runtime
callbacks (aclrtLaunchKernel*, aclrtMemcpyAsync) add the launches of other libraries (torch_npu
ops), but MSPTI gives callbacks, and MEMCPY/MEMSET records, only to a process started with
libmspti.so in LD_PRELOAD: ``flagtree-profiler -b cann ...`` starts the target so; an API session
in a process started without it says once what it cannot see. Records that no mapping joins are
joined by launch order when that is unambiguous, else left unattributed, counted either way
(``mspti_join`` in the metadata). MSPTI delivers device records when the tracer stops (its
unsubscribe drains the device): a periodic part written before that has no kernels.

Record times are CLOCK_REALTIME ns (there is no msptiGetTimestamp), converted to the profile's
clock with an offset measured at start. MSPTI reports no dropped-record count: records it could
not store are not counted by it (``mspti_records.drop_count``).

Which libmspti.so is loaded, in this order (the first that loads wins; never dlclosed):
  1. FLAGTREE_PROFILER_MSPTI_PATH (the library file, or a folder holding it)
  2. a copy already loaded in this process (e.g. through LD_PRELOAD, as Ascend's samples do)
  3. ${ASCEND_TOOLKIT_HOME}/lib64, then ${ASCEND_TOOLKIT_HOME}/tools/mspti/lib64 (CANN 8.0.RC3)
  4. /usr/local/Ascend/ascend-toolkit/latest/lib64, then its tools/mspti/lib64
  5. the system loader path

Mode (the public FlagTree Profiler's grammar, backends/vendor/mode_options.py), e.g.
``"runtime_base:device_id=0:mstx_enabled=true"``:
  - mstx_enabled=true: every scope is also an mstx range in the "flagtree_profiler" domain, so
    msprof and MindStudio timelines show our scopes;
  - vendor_metrics=aicore,bandwidth: refused in a session that traces with MSPTI: Ascend
    documents that aclprof/msprof beside MSPTI in one process loses data. They need a run of
    their own (backends/vendor/cann_metrics.py is that run's import);
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


def restart_with_preload():
    """For ``flagtree-profiler -b cann``: starts this command again (os.execve) with the libmspti.so
    the backend would load first in LD_PRELOAD, so that MSPTI gives its runtime callbacks and
    MEMCPY/MEMSET records. Returns (does nothing) when it is there already (so after the restart),
    or when no file named libmspti.so* is found (the session then says what it lacks)."""
    if "libmspti.so" in os.environ.get("LD_PRELOAD", ""):
        return
    from .. import get_backend  # deferred: the registry imports this module

    path = next((p for _, p in get_backend("cann").candidates()
                 if p and os.path.isfile(p) and "libmspti.so" in os.path.basename(p)), None)
    if path is None:
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = ":".join(filter(None, [os.path.abspath(path), env.get("LD_PRELOAD", "")]))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


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
    metrics = METRICS
    options = OPTIONS

    class SessionState:
        def __init__(self):
            self.mstx = False  # this session mirrors scopes as mstx ranges

    def __init__(self):
        super().__init__()
        self._undo_hooks = []
        self._told_preload = False
        self._users = 0
        self._hook_error = None

    def install_dirs(self):
        home = os.environ.get("ASCEND_TOOLKIT_HOME", "").strip()
        default = "/usr/local/Ascend/ascend-toolkit/latest"
        return [("${ASCEND_TOOLKIT_HOME}/lib64", os.path.join(home, "lib64") if home else None),
                ("${ASCEND_TOOLKIT_HOME}/tools/mspti/lib64", os.path.join(home, "tools", "mspti", "lib64") if home
                 else None),
                (f"{default}/lib64", f"{default}/lib64"),
                (f"{default}/tools/mspti/lib64", f"{default}/tools/mspti/lib64")]

    def check_mode(self, mode):
        parsed = super().check_mode(mode)
        if parsed is not None and parsed.vendor_metrics:
            raise ValueError(f"backend 'cann': vendor_metrics={','.join(parsed.vendor_metrics)} collects with "
                             f"aclprof, which must not run in the same process as MSPTI (Ascend documents that "
                             f"data is lost); collect the vendor metrics in a run of their own, with msprof or "
                             f"aclprof alone, and leave vendor_metrics out of this session's mode")
        return parsed

    # --- launches: Triton's launch hook (MSPTI does not see rtKernelLaunch) ---
    def after_acquire(self):
        if not self._undo_hooks:
            self._install_launch_hooks()
        refusal = native.cann.mspti_callback_refusal()
        if refusal and not self._told_preload:
            self._told_preload = True
            warnings.warn(preload_message(refusal), stacklevel=3)

    def _install_launch_hooks(self):
        from ...triton_glue.launch_hooks import attach, launch_hook_owner  # deferred: loads Triton's hook owner

        try:
            owner = launch_hook_owner()
        except (ImportError, RuntimeError) as error:  # no Triton: MSPTI's callbacks only
            self._hook_error = str(error)
            return

        def enter(metadata):
            native.cann.mspti_launch_enter()

        def exit(metadata):
            native.cann.mspti_launch_exit()

        # Last in the enter chain (after hook="triton" has set the launch's metadata), first in the
        # exit chain (the id is popped right after the launch).
        self._undo_hooks.append(attach(owner, "launch_enter_hook", enter, order="last"))
        self._undo_hooks.append(attach(owner, "launch_exit_hook", exit, order="first"))

    def acquire(self, options):
        super().acquire(options)
        self._users += 1

    def release(self):
        self._users = max(0, self._users - 1)
        if self._users == 0:  # the hooks go with the last user, before the tracer stops
            while self._undo_hooks:
                self._undo_hooks.pop()()
        super().release()

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
        refusal = native.cann.mspti_callback_refusal()
        info["mspti_callbacks"] = "enabled" if not refusal else f"refused: {refusal}"
        info["launch_source"] = ("Triton's launch hook" + ("" if refusal else " and MSPTI's runtime callbacks")
                                 if self._hook_error is None else f"MSPTI's runtime callbacks ({self._hook_error})")
        info["devices"] = [{"index": d["index"], "arch": d["arch"]} for d in native.cann.npu_devices()] \
            if self._library else []
        return info
