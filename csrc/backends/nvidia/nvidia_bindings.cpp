// Python entry points of the nvidia backend: CUPTI activity tracing and the CUDA driver.
#include <nanobind/stl/string.h>

#include <vector>

#include "backends/nvidia/cuda_driver.h"
#include "backends/nvidia/cupti_tracer.h"
#include "backends/nvidia/device_facts.h"
#include "backends/nvidia/idle_release.h"
#include "bindings/bindings.h"

namespace ftp {

namespace {

const CuptiApi& loadCupti(const std::string& path) {
  static CuptiApi api;  // the library stays mapped for the process
  if (api.handle && (api.path == path || CuptiTracer::instance().running())) return api;
  CuptiApi loaded;
  loaded.load(path, "cupti");  // LibraryNotFound: Python tries the next candidate
  api = loaded;
  CudaDriver::instance().available();  // optional: only used for syncing at flush
  return api;
}

void cuptiAcquire(const std::string& path, size_t bufferBytes) {
  CuptiTracer::instance().acquire(loadCupti(path), bufferBytes, DeviceType::CUDA);
}

nb::list factsList(const std::vector<CudaDeviceInfo>& devices) {
  nb::list out;
  for (const CudaDeviceInfo& d : devices) out.append(gpuFacts(d));
  return out;
}

// The driver is slow to answer (the clock attributes): other Python threads run meanwhile.
nb::list cudaDevices() {
  std::vector<CudaDeviceInfo> devices;
  {
    nb::gil_scoped_release released;
    CudaDriver& driver = CudaDriver::instance();
    driver.load();  // throws Unsupported without a driver, after the GIL is back
    devices = driver.devices();
  }
  return factsList(devices);
}

nb::list takeCudaDevicesList() {
  std::vector<CudaDeviceInfo> devices;
  {
    nb::gil_scoped_release released;
    devices = takeCudaDevices();
  }
  return factsList(devices);
}

}  // namespace

void registerNvidiaBindings(nb::module_& m) {
  m.def("cupti_acquire", &cuptiAcquire, nb::call_guard<nb::gil_scoped_release>());
  m.def("cupti_release", []() { CuptiTracer::instance().release(); }, nb::call_guard<nb::gil_scoped_release>());
  // Ends the tracer's subscription kept between sessions (flagtree.profiler.release()).
  m.def("cupti_detach", []() { return CuptiTracer::instance().detach(); }, nb::call_guard<nb::gil_scoped_release>());
  // The idle clock of that subscription (backends/cupti_attach.py): detach after `seconds`.
  m.def("cupti_idle_release_arm", &armIdleRelease, nb::call_guard<nb::gil_scoped_release>());
  m.def("cupti_idle_release_cancel", &cancelIdleRelease, nb::call_guard<nb::gil_scoped_release>());
  // A suspended tracer attached again, quiet, on the idle clock's thread (a window is near).
  m.def("cupti_attach_ahead", &requestAttachAhead, nb::call_guard<nb::gil_scoped_release>());
  // No session, one near (a trigger's window): the library attached parked on the idle clock's
  // thread, let go after `idle_s` should no session come.
  m.def("cupti_park_ahead", [](const std::string& path, size_t bufferBytes, double idleSeconds) {
    requestParkAhead(loadCupti(path), bufferBytes, idleSeconds);
  }, nb::call_guard<nb::gil_scoped_release>());
  // The idle time after which a quiet tracer is suspended (< 0: never).
  m.def("cupti_suspend_after", [](double seconds) { CuptiTracer::instance().setSuspendAfter(seconds); });
  m.def("cupti_attach_stats", []() {
    CuptiTracer& t = CuptiTracer::instance();
    nb::dict d;
    d["running"] = t.running();
    d["parked"] = t.parked();
    d["subscriptions"] = t.subscriptions();
    d["idle_discarded"] = t.idleDiscarded();
    // Quiet while no session is active (dialect_tracer_quiet.h): the last switches' ns.
    d["quiet"] = t.quiet();
    d["quiet_switches"] = t.quietSwitches();
    d["last_quiet_ns"] = t.lastQuietNs();
    d["last_wake_ns"] = t.lastWakeNs();
    d["wake_refusals"] = t.wakeRefusals();
    // Suspended after the idle time quiet (let go with sessions holding it): how often, the last
    // suspend's and re-attach's ns, wakes that found the library taken.
    d["suspended"] = t.suspended();
    d["suspensions"] = t.suspensions();
    d["last_suspend_ns"] = t.lastSuspendNs();
    d["last_resume_ns"] = t.lastResumeNs();
    d["resume_failures"] = t.resumeFailures();
    d["attaches_ahead"] = t.attachesAhead();
    d["parks_ahead"] = t.parksAhead();
    d["last_park_ahead_ns"] = t.lastParkAheadNs();
    nb::dict phases;
    for (size_t i = 0; i < t.startPhasesNs().size(); ++i) phases[CuptiTracer::kStartPhases[i]] = t.startPhasesNs()[i];
    d["start_phases_ns"] = phases;
    return d;
  });
  m.def("cupti_flush", []() { CuptiTracer::instance().flush(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("cupti_dropped", []() { return CuptiTracer::instance().droppedRecords(); });
  m.def("cupti_set_buffer_limit", [](size_t bytes) { CuptiTracer::instance().setBufferLimit(bytes); });
  m.def("cupti_declined_buffers", []() { return CuptiTracer::instance().declinedBuffers(); });
  m.def("cupti_version", []() { return CuptiTracer::instance().libraryVersion(); });
  m.def("cupti_library", []() { return CuptiTracer::instance().libraryPath(); });
  m.def("cuda_devices", &cudaDevices);
  // The same facts through a query on a native thread (backends/nvidia.py _DeviceFacts).
  m.def("cuda_devices_prefetch", &prefetchCudaDevices);
  m.def("cuda_devices_take", &takeCudaDevicesList);
  m.def("cuda_driver_version", []() {
    CudaDriver& driver = CudaDriver::instance();
    return driver.available() ? driver.driverVersion() : 0;
  });
}

#ifdef FLAGTREE_PROFILER_TESTING
void registerNvidiaTesting(nb::module_& testing) {
  testing.def("cupti_idle_releases_fired", &idleReleasesFired);
  // bench/overhead.py's CUPTI floor: the tracer with no session behind it (what CUPTI alone
  // costs), a measurement harness rather than part of the profiler.
  testing.def("cupti_floor_start", [](const std::string& path, size_t bufferBytes, bool emptyCallbacks) {
    CuptiTracer::instance().startFloor(loadCupti(path), bufferBytes, emptyCallbacks);
  }, nb::call_guard<nb::gil_scoped_release>());
}
#endif

}  // namespace ftp
