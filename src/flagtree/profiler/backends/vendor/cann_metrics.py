"""cann's vendor metrics (mode ``vendor_metrics=aicore,bandwidth``): Ascend's own collection
(aclprof, from libmsprofiler.so or libacl_prof.so, dlopen'd) around the session, then
``msprof --export=on --type=text --summary-format=csv --output=<PROF dir>`` and an import of the
exported op_summary / task_time / bandwidth CSVs into the kernel nodes (vendor_import: rules
correlation_id, task_id, name_device_stream_time, name_time, time_only, in that order; unmatched
rows kept under ``<unmatched vendor rows>``) and ``<name>.vendor.json``. Stand-in tested only
(no Ascend hardware run).

    metrics = CannVendorMetrics(vendor_mode, session)   # session: .name, .slot, .data
    metrics.start()            # aclprofInit / CreateConfig / Start
    counts = metrics.finish()  # aclprofStop / DestroyConfig / Finalize, export, import; metadata counts

The backend may give ``session.vendor_task_ids`` ({(device, stream, task id): correlation}) when it
knows task ids; rows of one file matched by correlation id that carry a task id teach it too.
"""
import ctypes
import os
import shutil
import subprocess

from ..base import BackendUnavailable
from ...native_core import native
from ...vendor_import import MSPROF_RULES, attach_in_session, match_rows, metadata_counts, msprof_csv, session_launches, vendor_document
from ...paths import side_file
from ...writers.atomic import write_json

DEFAULT_TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"
LIBRARIES = ("libmsprofiler.so", "libacl_prof.so")
# aclprofCreateConfig's dataTypeConfig flags and aicoreMetrics values (acl_prof.h).
ACL_PROF_ACL_API, ACL_PROF_TASK_TIME, ACL_PROF_AICORE_METRICS = 0x1, 0x2, 0x4
ACL_AICORE_PIPE_UTILIZATION, ACL_AICORE_MEMORY_BANDWIDTH = 1, 2
EXPORT_TIMEOUT_S = 600


def toolkit_home():
    return os.environ.get("ASCEND_TOOLKIT_HOME", "").strip() or DEFAULT_TOOLKIT


def find_library():
    home = toolkit_home()
    for folder in ("lib64", "lib"):
        for name in LIBRARIES:
            path = os.path.join(home, folder, name)
            if os.path.isfile(path):
                return path
    raise BackendUnavailable(f"backend 'cann': vendor_metrics needs aclprof ({' or '.join(LIBRARIES)}) under "
                             f"{home}/lib64 (set ASCEND_TOOLKIT_HOME)")


def find_msprof():
    path = os.path.join(toolkit_home(), "bin", "msprof")
    return path if os.path.isfile(path) else shutil.which("msprof")


def _load(path):
    lib = ctypes.CDLL(path)  # stays loaded for the process (never dlclose'd)
    lib.aclprofInit.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
    lib.aclprofCreateConfig.argtypes = (ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32, ctypes.c_int,
                                        ctypes.c_void_p, ctypes.c_uint64)
    lib.aclprofCreateConfig.restype = ctypes.c_void_p
    for name in ("aclprofStart", "aclprofStop", "aclprofDestroyConfig"):
        getattr(lib, name).argtypes = (ctypes.c_void_p,)
    for name in ("aclprofInit", "aclprofStart", "aclprofStop", "aclprofDestroyConfig", "aclprofFinalize"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


class CannVendorMetrics:
    def __init__(self, vendor_mode, session):
        self.mode = vendor_mode
        self.session = session
        self.output_dir = os.path.abspath(side_file(session.name, "aclprof"))
        self.library = None
        self._lib = None
        self._config = None
        self.degrade_reasons = []

    # -- collection ------------------------------------------------------------------------------
    def start(self):
        native.session.session_enable_extras(self.session.slot)
        native.session.launch_log_enable(self.session.slot, True)
        self.library = find_library()
        self._lib = _load(self.library)
        os.makedirs(self.output_dir, exist_ok=True)
        encoded = self.output_dir.encode()
        self._check("aclprofInit", self._lib.aclprofInit(encoded, len(encoded)))
        devices = (ctypes.c_uint32 * 1)(int(self.mode.options.get("device_id", 0)))
        metrics = (ACL_AICORE_MEMORY_BANDWIDTH if "bandwidth" in self.mode.vendor_metrics
                   else ACL_AICORE_PIPE_UTILIZATION)
        flags = ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS
        self._config = self._lib.aclprofCreateConfig(devices, 1, metrics, None, flags)
        if not self._config:
            self._lib.aclprofFinalize()
            raise RuntimeError("backend 'cann': aclprofCreateConfig returned no configuration")
        self._check("aclprofStart", self._lib.aclprofStart(self._config))

    def _check(self, call, code):
        if code != 0:
            raise RuntimeError(f"backend 'cann': {call} failed with aclError {code}")

    def _stop(self):
        if self._config is None:
            return
        config, self._config = self._config, None
        for call, code in (("aclprofStop", self._lib.aclprofStop(config)),
                           ("aclprofDestroyConfig", self._lib.aclprofDestroyConfig(config)),
                           ("aclprofFinalize", self._lib.aclprofFinalize())):
            if code != 0:
                self.degrade_reasons.append(f"{call} returned aclError {code}")

    # -- export and import -----------------------------------------------------------------------
    def _export(self):
        """Runs msprof's export on each PROF_* folder aclprof wrote; returns the folders."""
        msprof = find_msprof()
        folders = sorted(os.path.join(self.output_dir, d) for d in os.listdir(self.output_dir)
                         if d.startswith("PROF") and os.path.isdir(os.path.join(self.output_dir, d)))
        if not folders:
            self.degrade_reasons.append(f"aclprof wrote no PROF_* folder under {self.output_dir}")
        if msprof is None:
            self.degrade_reasons.append("msprof not found (ASCEND_TOOLKIT_HOME/bin or the PATH): nothing exported")
            return folders
        for folder in folders:
            command = [msprof, "--export=on", "--type=text", "--summary-format=csv", f"--output={folder}"]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as error:
                self.degrade_reasons.append(f"{' '.join(command)} failed: {error}")
                continue
            if done.returncode != 0:
                self.degrade_reasons.append(f"msprof export of {folder} exited {done.returncode}: "
                                            f"{done.stderr.strip()[:300]}")
        return folders

    def finish(self):
        if self._lib is None:
            return {}
        self._stop()
        files = [p for folder in self._export() for p in msprof_csv.find_csvs(folder)]
        offset = (self.session.start_realtime_ns or 0) - (self.session.start_monotonic_ns or 0)
        rows = [row for path in files for row in msprof_csv.read_file(path, offset)]
        launches = session_launches(self.session.slot)
        native.session.launch_log_enable(self.session.slot, False)  # read once: free it
        result = match_rows(rows, launches, MSPROF_RULES, task_ids=self._task_ids(launches))
        attach_in_session(self.session.slot, self.session.data, result)
        if result.time_only:
            self.degrade_reasons.append(f"{result.time_only} rows matched by time alone (20 ms window): under load "
                                        f"these can be misattributed")
        document = vendor_document(backend="cann", importer="msprof", requested=self.mode.vendor_metrics,
                                   enabled=self.mode.vendor_metrics, raw_inputs=files, result=result,
                                   launches=launches, degrade_reasons=self.degrade_reasons,
                                   extra={"library": self.library, "aclprof_output": self.output_dir})
        path = side_file(self.session.name, "vendor")
        write_json(path, document, indent=1)
        return metadata_counts(document, path)

    def _task_ids(self, launches):
        known = getattr(self.session, "vendor_task_ids", None) or {}
        by_correlation = {launch.correlation: launch for launch in launches}
        return {key: by_correlation[c] for key, c in known.items() if c in by_correlation}
