"""The nvidia backend: CUPTI's activity stream, loaded with dlopen at run time.

Which libcupti is loaded, in this order (the first that loads wins):
  1. FLAGTREE_PROFILER_CUPTI_PATH
  2. Triton's bundled copy (triton/backends/nvidia/lib/cupti/libcupti.so), the file Proton loads,
     when its CUDA major is supported and not newer than the driver's
  3. a copy already loaded in this process (two copies cannot share CUPTI's one subscriber slot)
  4. the nvidia-cuda-cupti wheel (nvidia/cu13/lib, nvidia/cuda_cupti/lib)
  5. CUDA_HOME (extras/CUPTI/lib64, lib64, targets/*/lib)
  6. the system loader path (libcupti.so.13, libcupti.so.12, libcupti.so)
Within 4-6, copies whose major version matches the CUDA driver's come first.
Why Triton's copy before the one torch maps at import (the libcupti 13 wheel): CUPTI's subscriber
slot passes between two copies in one direction only. After our release() of a libcupti 13,
Proton's libcupti 12 cannot subscribe (error 39) for the rest of the process; after our release()
of Triton's copy, Proton (the same file) and torch.profiler (libcupti 13) both can. What Triton's
older copy costs is in docs/reference/command-line.md (Hand-over).
"""
import glob
import os
import sys
import threading
from dataclasses import dataclass

from .. import _env
from . import counters, cupti_attach
from .base import Backend, BackendUnavailable, device_info_of
from .libraries import could_load, loaded_library

SUPPORTED_CUDA_MAJORS = (12, 13)


def _native():
    from .. import _native as native

    return native


def _major_of(path):
    """12 for ".../libcupti.so.12.8.90", None without a version. String work, not a regex: the
    regex's first compile was 0.5 ms of the first session."""
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


def triton_cupti(driver_major=None):
    """Triton's bundled libcupti (the path Proton dlopens: <dir>/libcupti.so), or None when Triton
    bundles none, or one of an unsupported major or newer than the driver."""
    for entry in sys.path:
        folder = os.path.join(entry, "triton", "backends", "nvidia", "lib", "cupti")
        versioned = glob.glob(os.path.join(folder, "libcupti.so.*"))
        if not versioned and not os.path.isfile(os.path.join(folder, "libcupti.so")):
            continue
        majors = {_major_of(p) for p in versioned} - {None}
        major = min(majors) if majors else None
        if major is not None and (major not in SUPPORTED_CUDA_MAJORS or (driver_major and major > driver_major)):
            return None
        plain = os.path.join(folder, "libcupti.so")
        return plain if os.path.isfile(plain) else sorted(versioned)[0]
    return None


def iter_cupti_candidates(driver_major=None):
    """The libcupti paths to try, in the documented order, found as they are asked for: the first
    session stops at the first that loads instead of globbing every sys.path entry (~5 ms)."""
    seen = set()

    def fresh(paths):
        for path in paths:
            if path and path not in seen:
                seen.add(path)
                yield path

    yield from fresh((_env.cupti_path(),))
    yield from fresh((triton_cupti(driver_major), loaded_library("libcupti.so")))
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


def cupti_candidates(driver_major=None):
    """The libcupti paths to try, in the documented order."""
    return list(iter_cupti_candidates(driver_major))


class _DeviceFacts:
    """The CUDA devices' fixed facts, queried once per process: every session writes them
    (device_info, describe). The driver answers the two clock attributes in 0.35-0.7 ms each,
    every time (H200, driver 580), so the first session starts the query at start() and
    finalize() takes its answer (issue 18: the first session's cost). The query runs on a native
    thread (csrc/backends/nvidia/device_facts.h): a Python one cost ~0.4 ms more at start()."""

    def __init__(self):
        self._lock = threading.Lock()
        self._devices = None
        self._pending = False  # a native query runs or waits to be taken

    def prefetch(self):
        with self._lock:
            if self._devices is not None or self._pending:
                return
            _native().cuda_devices_prefetch()
            self._pending = True

    def get(self):
        with self._lock:
            if self._devices is None:
                # The prefetched answer, or a query now; a failure (RuntimeError: no driver) is
                # raised to this caller and not kept, so the next call asks the driver again.
                self._pending = False
                self._devices = _native().cuda_devices_take()
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


@dataclass
class CounterState:
    """Per session: whether its hardware counters are collecting (mode "metrics...")."""
    counting: bool = False


class NvidiaBackend(Backend):
    name = "nvidia"
    SessionState = CounterState

    def __init__(self):
        self._library = None

    def check_mode(self, mode):
        """None, or a CounterMode for "metrics" or "metrics=<a>,<b>,..." (hardware counters, see
        backends/counters.py)."""
        if mode is None:
            return None
        metrics = counters.parse_mode(mode) if isinstance(mode, str) else None
        if metrics is None:
            raise ValueError(f"backend 'nvidia' does not support mode {mode!r}; supported modes: "
                             f"{counters.MODE_FORMS}")
        return counters.CounterMode(metrics)

    def attach_session(self, session):
        if not isinstance(session.options, counters.CounterMode):
            return
        counters.start_session(self._library, session, session.options.metrics)
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
        """The libcupti for hardware counters: the one traced with, else the first candidate
        that has the Range Profiler API."""
        if self._library:
            return self._library
        version = _native().cuda_driver_version()
        failures = []
        for path in cupti_candidates(version // 1000 if version else None):
            try:
                _native().counters_load(path)
                return path
            except _native().LibraryNotFound as error:
                failures.append(str(error))
        raise RuntimeError("flagtree.profiler: no libcupti with the Range Profiler API (CUPTI 12.6+) found; "
                           "set FLAGTREE_PROFILER_CUPTI_PATH. Tried:\n  " + "\n  ".join(failures))

    def unavailable_reason(self):
        if not _native().cuda_driver_version():
            return "no CUDA driver (libcuda.so.1) on this machine"
        tried = cupti_candidates()
        if not any(could_load(p) for p in tried):
            return "no libcupti found; looked at: " + ", ".join(tried)
        return None

    def _driver_major(self):
        version = _native().cuda_driver_version()
        if not version:
            raise BackendUnavailable(
                f"the {self.name} backend needs the CUDA driver (libcuda.so.1) and a GPU, and this machine has "
                "neither; to profile on the CPU run Triton in interpreter mode (TRITON_INTERPRET=1), "
                "which selects the interpreter backend")
        return version // 1000

    def acquire(self, options):
        native = _native()
        driver_major = self._driver_major()
        buffer_bytes = _env.buffer_size()
        native.cupti_set_buffer_limit(_env.buffer_limit())
        failures = []
        cupti_attach.before_acquire()
        for path in iter_cupti_candidates(driver_major):
            try:
                native.cupti_acquire(path, buffer_bytes)
            except native.LibraryNotFound as error:  # cannot load, or too old: try the next
                failures.append(str(error))
                continue
            except RuntimeError as error:  # keeps the type (SubscriberTaken: another tool)
                raise type(error)(f"flagtree.profiler: {error}") from None
            self._library = native.cupti_library()
            self._check_version(native.cupti_version())
            _device_facts.prefetch()  # answered while the session runs; written at finalize
            return
        raise BackendUnavailable(
            "no usable libcupti found for the nvidia backend; set FLAGTREE_PROFILER_CUPTI_PATH or install "
            "the nvidia-cuda-cupti wheel. Tried:\n  " + "\n  ".join(failures))

    def _check_version(self, api_version):
        # CUPTI API versions: 12.x reports 18..2x, 13.x reports 13xxxx; map the library file instead.
        major = _major_of(self._library or "")
        if major is not None and major not in SUPPORTED_CUDA_MAJORS:
            import warnings

            warnings.warn(f"flagtree.profiler: {self._library} is CUPTI {major}, outside the supported "
                          f"CUDA majors {SUPPORTED_CUDA_MAJORS}; kernel records may be misread", stacklevel=3)

    def flush(self):
        _native().cupti_flush()

    def release(self):
        _native().cupti_release()
        cupti_attach.after_release()

    def dropped_records(self):
        return int(_native().cupti_dropped())

    def device_info(self):
        try:
            devices = cuda_devices()
        except RuntimeError:
            return {}
        return device_info_of("CUDA", devices)

    def describe(self):
        native = _native()
        devices = []
        try:
            devices = [{"index": d["index"], "name": d["name"], "arch": d["arch"]} for d in cuda_devices()]
        except RuntimeError:
            pass
        return {"backend": self.name, "cupti_library": self._library, "cupti_version": native.cupti_version(),
                "cuda_driver_version": native.cuda_driver_version(), "devices": devices}
