"""The nvidia backend: CUPTI's activity stream, loaded with dlopen at run time.

Which libcupti is loaded, in this order (the first that loads wins):
  1. FLAGTREE_PROFILER_CUPTI_PATH, then the copy the tracer subscribed with before in this process
  2. Triton's bundled copy (triton/backends/nvidia/lib/cupti/libcupti.so, or the folder
     TRITON_CUPTI_LIB_PATH names), the file Proton loads, when its CUDA major is supported and
     not newer than the driver's
  3. a copy already loaded in this process (two copies cannot share CUPTI's one subscriber slot)
  4. the nvidia-cuda-cupti wheel (nvidia/cu13/lib, nvidia/cuda_cupti/lib)
  5. CUDA_HOME (extras/CUPTI/lib64, lib64, targets/*/lib)
  6. the system loader path (libcupti.so.13, libcupti.so.12, libcupti.so)
Within 4-6, copies whose major version matches the CUDA driver's come first.
Why Triton's copy before the one torch maps at import (the libcupti 13 wheel): CUPTI's subscriber
slot passes between two copies in one direction only. After our release() of a libcupti 13,
Proton's libcupti 12 cannot subscribe (error 39) for the rest of the process; after our release()
of Triton's copy, Proton (the same file) and torch.profiler (libcupti 13) both can. Hardware
counters skip 2 (and a loaded copy of another major): Triton's CUPTI 12 gave no metrics under the
CUDA 13 driver. What each copy costs: docs/reference/backends.md (Hand-over).
"""
import glob
import os
import sys
import threading
from dataclasses import dataclass

import warnings

from ... import _env
from . import counters, cupti_attach
from ..base import Backend, BackendUnavailable, device_info_of
from ..libraries import acquire_first, could_load, loaded_library
from ...native_core import native

SUPPORTED_CUDA_MAJORS = (12, 13)


def _major_of(path):
    """12 for ".../libcupti.so.12.8.90", None without a version. String work, not a regex: the
    regex's first compile would be paid by the first session (docs/performance.md)."""
    _, found, version = os.path.basename(path).partition("libcupti.so.")
    digits = version[:len(version) - len(version.lstrip("0123456789"))]
    return int(digits) if found and digits else None


def _installed_candidates():
    for entry in sys.path:
        yield from sorted(glob.glob(os.path.join(entry, "nvidia", "cu[0-9]*", "lib", "libcupti.so*")), reverse=True)
        yield from glob.glob(os.path.join(entry, "nvidia", "cuda_cupti", "lib", "libcupti.so*"))
    for entry in sys.path:
        yield from glob.glob(os.path.join(entry, "triton", "backends", "nvidia", "lib", "cupti", "libcupti.so*"))
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda_home:
        for sub in ("extras/CUPTI/lib64", "lib64", "targets/*/lib"):
            yield from glob.glob(os.path.join(cuda_home, sub, "libcupti.so*"))
    yield from ("libcupti.so.13", "libcupti.so.12", "libcupti.so")


def _path_major(path):
    """The CUDA major of a libcupti path: from its name, else from the versioned names beside it
    (Triton's folder holds libcupti.so, the name Proton loads, beside libcupti.so.12)."""
    major = _major_of(path)
    if major is not None or os.sep not in path:
        return major
    majors = {_major_of(p) for p in glob.glob(os.path.join(os.path.dirname(path), "libcupti.so.*"))} - {None}
    return min(majors) if majors else None


def triton_cupti(driver_major=None):
    """Triton's bundled libcupti (the path Proton dlopens: <dir>/libcupti.so, <dir> being
    TRITON_CUPTI_LIB_PATH when set, as Proton reads it), or None when Triton bundles none, or one
    of an unsupported major or newer than the driver."""
    chosen = os.environ.get("TRITON_CUPTI_LIB_PATH")
    folders = [chosen] if chosen else [os.path.join(e, "triton", "backends", "nvidia", "lib", "cupti") for e in sys.path]
    for folder in folders:
        versioned = glob.glob(os.path.join(folder, "libcupti.so.*"))
        if not versioned and not os.path.isfile(os.path.join(folder, "libcupti.so")):
            continue
        plain = os.path.join(folder, "libcupti.so")
        path = plain if os.path.isfile(plain) else sorted(versioned)[0]
        major = _path_major(path)
        if major is not None and (major not in SUPPORTED_CUDA_MAJORS or (driver_major and major > driver_major)):
            return None
        return path
    return None


def iter_cupti_candidates(driver_major=None, proton_first=True, used=None):
    """The libcupti paths to try, in the documented order, found as they are asked for: the first
    session stops at the first that loads instead of globbing every sys.path entry.
    proton_first=False (hardware counters, which need the driver's major): no Triton copy first,
    and a loaded copy of another major than the driver's is not preferred either. `used`: the
    copy this process subscribed with before, tried right after the explicit path."""
    seen = set()

    def fresh(paths):
        for path in paths:
            if path and path not in seen:
                seen.add(path)
                yield path

    yield from fresh((_env.cupti_path(), used))
    loaded = loaded_library("libcupti.so")
    if proton_first:
        yield from fresh((triton_cupti(driver_major), loaded))
    elif not (driver_major and loaded and _path_major(loaded) not in (None, driver_major)):
        yield from fresh((loaded,))
    if not driver_major:
        yield from fresh(_installed_candidates())
        return
    # Matching majors first, the documented order kept within each group; one walk of the
    # install places, the others held back until the matching ones are tried.
    others = []
    for path in _installed_candidates():
        if _major_of(path) == driver_major:
            yield from fresh((path,))
        else:
            others.append(path)
    yield from fresh(others)


def cupti_candidates(driver_major=None, proton_first=True):
    """The libcupti paths to try, in the documented order."""
    return list(iter_cupti_candidates(driver_major, proton_first))


def _api_major(api_version):
    """The CUDA major of a CUPTI API version: 13.x reports 13xxxx, 12.x 18..2x; None for 0."""
    return api_version // 10000 if api_version >= 100000 else 12 if api_version >= 18 else None


class _DeviceFacts:
    """The CUDA devices' fixed facts, queried once per process: every session writes them
    (device_info, describe). The driver is slow to answer the two clock attributes, every time
    (docs/performance.md), so the first session starts the query at start() and finalize()
    takes its answer, off the first session's path. The query runs on a native thread
    (csrc/backends/nvidia/device_facts.h): starting a Python one would cost start() more."""

    def __init__(self):
        self._lock = threading.Lock()
        self._devices = None
        self._pending = False  # a native query runs or waits to be taken

    def prefetch(self):
        with self._lock:
            if self._devices is not None or self._pending:
                return
            native.nvidia.cuda_devices_prefetch()
            self._pending = True

    def get(self):
        with self._lock:
            if self._devices is None:
                # The prefetched answer, or a query now; a failure (RuntimeError: no driver) is
                # raised to this caller and not kept, so the next call asks the driver again.
                self._pending = False
                self._devices = native.nvidia.cuda_devices_take()
            return self._devices


_device_facts = _DeviceFacts()


def _forget_device_facts_in_child():
    # A child forked while the query ran (a DataLoader worker) has neither the thread nor,
    # perhaps, a free lock: it starts over (so does the native side, through pthread_atfork).
    global _device_facts
    _device_facts = _DeviceFacts()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_device_facts_in_child)


def cuda_devices():
    """The CUDA devices' facts of this process (the _DeviceFacts answer, cached): what every
    CUDA-side backend reads them through. RuntimeError without a driver."""
    return _device_facts.get()


def cuda_driver_version():
    """The CUDA driver's version (0 without a driver): what the other CUDA-side backends report
    it through, leaving _native.nvidia to this backend."""
    return native.nvidia.cuda_driver_version()


@dataclass
class CounterState:
    """Per session: whether its hardware counters are collecting (mode "metrics...")."""
    counting: bool = False


class NvidiaBackend(Backend):
    name = "nvidia"
    SessionState = CounterState
    library = "libcupti.so"
    env_path = "FLAGTREE_PROFILER_CUPTI_PATH"

    def __init__(self):
        self._library = None

    mode_grammar = counters.MODE_GRAMMAR
    # flush() is one native call (cuptiActivityFlushAll after the device wait) that holds no
    # Python state: a schedule's window close leaves it to the writer thread.
    flush_off_thread = True

    def options_from(self, parsed):
        """None, or a CounterMode for "metrics" or "metrics=<a>,<b>,..." (hardware counters, see
        backends/nvidia/counters.py)."""
        if parsed.text is None:
            return None
        metrics = counters.metrics_of(parsed)
        if metrics is None:
            raise self.mode_error(parsed.text, "it names no metrics")
        return counters.CounterMode(metrics)

    def attach_session(self, session):
        if not isinstance(session.options, counters.CounterMode):
            return
        try:
            devices = cuda_devices()  # cached: the driver is slow to answer, every time
        except RuntimeError:
            devices = []
        counters.start_session(self._library, session, session.options.metrics, devices)
        session.state.counting = True

    def session_outputs(self, session):
        if not session.state.counting:
            return {}
        return counters.session_outputs(session, session.options.metrics)

    def detach_session(self, session):
        if session.state.counting:
            session.state.counting = False
            counters.stop_session(session)

    def counters_library(self):
        """The libcupti for hardware counters: the one traced with if it is of the driver's major
        (Triton's CUPTI 12 build gave no metrics under a CUDA 13 driver on the H200), else the
        first candidate of the counters' order that has the Range Profiler API."""
        version = native.nvidia.cuda_driver_version()
        driver_major = version // 1000 if version else None
        if self._library and _path_major(self._library) in (None, driver_major):
            return self._library
        found = []

        def load(path):
            native.counters.counters_load(path)
            found.append(path)

        candidates = [("candidate", path) for path in cupti_candidates(driver_major, proton_first=False)]
        tried = acquire_first(candidates, load, native.LibraryNotFound)
        if tried is None:
            return found[0]
        raise RuntimeError("flagtree.profiler: no libcupti with the Range Profiler API (CUPTI 12.6+) found; "
                           f"set {self.env_path}. Tried:\n  " + "\n  ".join(tried))

    def unavailable_reason(self):
        if not native.nvidia.cuda_driver_version():
            return "no CUDA driver (libcuda.so.1) on this machine"
        tried = cupti_candidates()
        if not any(could_load(p) for p in tried):
            return "no libcupti found; looked at: " + ", ".join(tried)
        return None

    def _driver_major(self):
        version = native.nvidia.cuda_driver_version()
        if not version:
            raise BackendUnavailable(
                f"the {self.name} backend needs the CUDA driver (libcuda.so.1) and a GPU, and this machine has "
                "neither; to profile on the CPU run Triton in interpreter mode (TRITON_INTERPRET=1), "
                "which selects the interpreter backend")
        return version // 1000

    def acquire(self, options):
        driver_major = self._driver_major()
        buffer_bytes = _env.buffer_size()
        native.nvidia.cupti_set_buffer_limit(_env.buffer_limit())
        cupti_attach.before_acquire()
        # Hardware counters need the libcupti of the driver's major; plain tracing takes Triton's
        # copy first, so that Proton and torch.profiler can follow in this process.
        # The copy this process used before comes first: once a libcupti 13 has subscribed, a 12
        # cannot (error 39), while 12 -> 13 works (the tracer, parked on another copy, attaches
        # afresh: dialect_tracer_impl.h).
        counting = isinstance(options, counters.CounterMode)
        used = native.nvidia.cupti_library() or None  # the tracer's, whichever backend took it
        if used and counting and _path_major(used) not in (None, driver_major):
            used = None
        # A libcupti that cannot load, or is too old, raises LibraryNotFound: the next is tried.
        candidates = (("candidate", path) for path in iter_cupti_candidates(driver_major, proton_first=not counting,
                                                                          used=used))
        self.load_library(lambda path: native.nvidia.cupti_acquire(path, buffer_bytes), native.LibraryNotFound,
                          candidates, hint=f"set {self.env_path} or install the nvidia-cuda-cupti wheel")
        self._library = native.nvidia.cupti_library()
        self._check_version(native.nvidia.cupti_version())
        if counting:
            self._check_counters_major(driver_major)
        _device_facts.prefetch()  # answered while the session runs; written at finalize

    def _check_counters_major(self, driver_major):
        major = _api_major(native.nvidia.cupti_version())
        if major in (None, driver_major):
            return
        held = self._library
        self.release()
        raise BackendUnavailable(
            f"hardware counters need the libcupti of the CUDA driver's major ({driver_major}), and the open "
            f"session traces with {held} (CUPTI {major}): finalize it first, or set FLAGTREE_PROFILER_CUPTI_PATH "
            f"to a CUDA {driver_major} libcupti for every session")

    def _check_version(self, api_version):
        # CUPTI API versions: 12.x reports 18..2x, 13.x reports 13xxxx; map the library file instead.
        major = _major_of(self._library or "")
        if major is not None and major not in SUPPORTED_CUDA_MAJORS:
            warnings.warn(f"flagtree.profiler: {self._library} is CUPTI {major}, outside the supported "
                          f"CUDA majors {SUPPORTED_CUDA_MAJORS}; kernel records may be misread", stacklevel=3)

    def flush(self):
        native.nvidia.cupti_flush()

    def release(self):
        native.nvidia.cupti_release()
        cupti_attach.after_release()

    def activity_changed(self):
        cupti_attach.check_let_go()

    def quiet_ahead(self, seconds):
        return cupti_attach.suspend_if_quiet_for(seconds)

    def wake_ahead(self):
        cupti_attach.attach_ahead()

    def window_lead(self):
        return cupti_attach.park_lead()

    def prepare_window(self):
        cupti_attach.park_ahead()

    def dropped_records(self):
        return int(native.nvidia.cupti_dropped())

    def device_info(self):
        try:
            devices = cuda_devices()
        except RuntimeError:
            return {}
        return device_info_of("CUDA", devices)

    def describe(self):
        devices = []
        try:
            devices = [{"index": d["index"], "name": d["name"], "arch": d["arch"]} for d in cuda_devices()]
        except RuntimeError:
            pass
        return {"backend": self.name, "cupti_library": self._library, "cupti_version": native.nvidia.cupti_version(),
                "cuda_driver_version": native.nvidia.cuda_driver_version(), "devices": devices}
