"""The mthreads backend (Moore Threads GPUs): MUPTI, loaded with dlopen at run time and driven
by the same native CUPTI-dialect tracer as the nvidia backend (a MUPTI symbol table, not a copy).

Driver/runtime API callbacks on the launch, copy and set calls capture the launching thread's
context; MUPTI's activity records give each kernel's device time, grid, block, registers and
shared memory; memcpy and memset records their bytes. Auto-selected for Triton target "musa".

Which libmupti.so is loaded, in this order (the first that loads wins; never dlclosed):
  1. FLAGTREE_PROFILER_MUPTI_PATH (the library file, or a folder holding it)
  2. a copy already loaded in this process (MUPTI allows one subscriber)
  3. $MUSA_HOME/lib, then $MUSA_HOME/lib64
  4. /usr/local/musa/lib
  5. the system loader path: libmupti.so, then libmupti.so.1 (installs without the dev link)

Mode (the public FlagTree Profiler's grammar, backends/vendor/mode_options.py):
  ``vendor_metrics=launch_stats,occupancy,resource_usage,peak_memory_bandwidth``
  - occupancy: theoretical occupancy per kernel (muOccupancyMaxActiveBlocksPerMultiprocessor with
    the launch's block size and dynamic shared memory, over the SM's most warps) and
    active_blocks_per_sm;
  - resource_usage: registers_per_thread, static/dynamic shared memory and local memory per
    thread (muFuncGetAttribute and the launch);
  - launch_stats: grid_size (blocks) and block_size (threads);
  - peak_memory_bandwidth: each device's peak (memory clock x bus width, DDR) in the metadata.
  The first three are mean metrics on each kernel node, measured at driver launches
  (muLaunchKernel); device_info (memory clock, bus width, SMs) is always written, so the viewer's
  ``util`` works.

MUSA 4.3's reported hazards: records with zero timestamps are discarded and counted
(``mupti_records.zero_timestamp_records``); every flush is forced, and a forced flush is never
made twice with no launch between (a second forced flush at stop can wait forever), so stopping
flushes once; buffers MUPTI hands back after that flush are not read (teardown can corrupt a
buffer it retains; ``mupti_records.buffers_after_teardown``); the library is never dlclosed nor
finalized; a second MUPTI subscriber (torch_musa's profiler, another tool) is a clear error at
start, and the program goes on. No public mupti header exists, so records are read defensively:
a record of a kind not known here is skipped (``unknown_kind_records``), one whose layout does not
fit in the buffer is discarded (``truncated_records``); a launch callback without a context
falls back to the thread's current context (for the device wait at flush).

Not run on Moore Threads hardware: tested through a stand-in library built by the tests
(tests/standins/mupti_standin.c) from MUPTI's documented interface and the behaviour reported
by hardware-tested prior art (docs/reference/vendors.md lists what is unverified).
"""
import os

from ..base import device_info_of
from .dialect import DialectBackend
from ...native_core import native
from ...common.devices import Device

LIBRARY = "libmupti.so"
ENV_PATH = "FLAGTREE_PROFILER_MUPTI_PATH"
METRICS = ("launch_stats", "occupancy", "resource_usage", "peak_memory_bandwidth")
# vendor metric -> native metric group (see csrc/backends/mthreads/launch_metrics.h)
GROUPS = {"occupancy": 1, "resource_usage": 2, "launch_stats": 4}


class MthreadsBackend(DialectBackend):
    name = "mthreads"
    library = LIBRARY
    env_path = ENV_PATH
    loader_names = ("libmupti.so.1",)
    prefix = "mupti"
    metrics = METRICS
    options = {}

    def __init__(self):
        super().__init__()
        self._driver = None  # where the MUSA driver's calls were found
        self._driver_error = None

    def install_dirs(self):
        home = os.environ.get("MUSA_HOME", "").strip()
        return [("$MUSA_HOME/lib", os.path.join(home, "lib") if home else None),
                ("$MUSA_HOME/lib64", os.path.join(home, "lib64") if home else None),
                ("/usr/local/musa/lib", "/usr/local/musa/lib")]

    def after_acquire(self):
        try:
            self._driver = native.mthreads.musa_load_driver()
            self._driver_error = None
        except RuntimeError as error:  # tracing works without it; devices and metrics do not
            self._driver, self._driver_error = None, str(error)

    class SessionState:
        def __init__(self):
            self.chosen = ()  # the vendor metrics this session asked for

    def attach_session(self, session):
        chosen = self.session_mode(session).vendor_metrics
        groups = sum(GROUPS.get(m, 0) for m in chosen)
        if groups and self._driver is None:
            raise RuntimeError(f"flagtree.profiler: vendor_metrics={','.join(chosen)} needs the MUSA driver's "
                               f"occupancy and function-attribute calls: {self._driver_error}")
        session.state.chosen = chosen
        if not groups:
            return
        native.session.session_enable_extras(session.slot)
        native.session.session_set_mean_metrics(session.slot, native.mthreads.mupti_metric_names(groups))
        native.mthreads.mupti_metrics_session(session.slot, groups)

    def session_outputs(self, session):
        chosen = session.state.chosen
        if not chosen:
            return {}
        out = {"vendor_metrics": list(chosen)}
        if "peak_memory_bandwidth" in chosen:
            out["peak_memory_bandwidth (GB/s)"] = self.peak_bandwidths()
        return out

    def detach_session(self, session):
        if session.state.chosen:
            session.state.chosen = ()
            native.mthreads.mupti_metrics_session(session.slot, 0)

    def _devices(self):
        if self._driver is None:
            return []
        return list(native.mthreads.musa_devices())

    def device_info(self):
        devices = self._devices()
        return device_info_of("MUSA", devices) if devices else {}

    def peak_bandwidths(self):
        """{device index: GB/s}, computed where the viewer computes it (common/devices.py), so util agrees."""
        out = {}
        for d in self._devices():
            bandwidth = Device("MUSA", str(d["index"]), d).bandwidth
            out[str(d["index"])] = round(bandwidth / 1e9, 3) if bandwidth else None
        return out

    def describe(self):
        info = super().describe()
        info["musa_driver"] = self._driver
        if self._driver_error:
            info["musa_driver_error"] = self._driver_error
        info["devices"] = [{"index": d["index"], "name": d["name"], "arch": d["arch"]} for d in self._devices()]
        info["occupancy_launches_measured"] = int(native.mthreads.mupti_metrics_measured())
        return info
