// The roctracer tracer: see roctracer_tracer.h. Facts about roctracer come from its public
// headers (interface 4.1); the record layout is declared in roctracer_api.h.
#include "backends/roctracer/roctracer_tracer.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "core/clock.h"
#include "core/errors.h"
#include "core/library.h"
#include "core/singleton.h"
#include "core/strings.h"
#include "session/profiler.h"

namespace ftp {
namespace {

// HIP API calls whose correlation ids reach kernels, copies and sets. Matched by name, so
// that the list holds across ROCm versions, whose numeric HIP API ids differ.
const char* const kTracedPrefixes[] = {"hipLaunch",     "hipModuleLaunch",    "hipExtLaunch",
                                       "hipExtModuleLaunch", "hipHccModuleLaunch", "hipGraphLaunch",
                                       "hipMemcpy",     "hipMemset",          "hipDrvMemcpy"};

uint8_t classify(const char* name) {
  if (!name || !*name || std::strcmp(name, "unknown") == 0) return 0;
  if (std::strstr(name, "HostFunc")) return 0;  // host callbacks run no device work
  for (const char* prefix : kTracedPrefixes) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) != 0) continue;
    // Graph launches and multi-device launches produce several records under one id.
    return (std::strstr(name, "GraphLaunch") || std::strstr(name, "MultiDevice")) ? 2 : 1;
  }
  return 0;
}

// The HIP runtime, only when the process already holds it: used at flush to wait for the
// devices, so that every launched kernel has finished and reached the pool.
struct HipRuntime {
  using IntPtrFn = int (*)(int*);
  using IntFn = int (*)(int);
  using VoidFn = int (*)();
  IntPtrFn getDeviceCount = nullptr, getDevice = nullptr;
  IntFn setDevice = nullptr;
  VoidFn deviceSynchronize = nullptr;

  bool find() {
    if (deviceSynchronize) return true;
    for (const char* name : {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"}) {
      void* lib = loadedLibrary(name);
      if (!lib) continue;
      HipRuntime found;
      resolveSymbols(lib, name, "hip",
                     {{found.getDeviceCount, "GetDeviceCount", Need::Optional},
                      {found.getDevice, "GetDevice", Need::Optional},
                      {found.setDevice, "SetDevice", Need::Optional},
                      {found.deviceSynchronize, "DeviceSynchronize", Need::Optional}});
      if (found.getDeviceCount && found.getDevice && found.setDevice && found.deviceSynchronize) {
        *this = found;
        return true;
      }
    }
    return false;
  }

  void synchronizeAll() {
    if (!find()) return;
    int count = 0, current = 0;
    if (getDeviceCount(&count) != 0 || getDevice(&current) != 0) return;
    for (int d = 0; d < count; ++d)
      if (setDevice(d) == 0) deviceSynchronize();
    setDevice(current);
  }
};

HipRuntime& hipRuntime() {
  static HipRuntime hip;
  return hip;
}

}  // namespace

RoctracerTracer& RoctracerTracer::instance() { return leaked<RoctracerTracer>(); }

void RoctracerTracer::acquire(const RoctracerApi& api, size_t bufferBytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0) {
    ++users_;
    return;
  }
  api_ = api;
  bufferBytes_ = bufferBytes;
  start();
  users_ = 1;
}

void RoctracerTracer::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ == 0) return;
  if (--users_ == 0) stop();
}

void RoctracerTracer::start() {
  // roctracer's record clock (begin_ns/end_ns) mapped onto host monotonic time: the offset is
  // read between two host readings, whose midpoint it is compared to.
  clockOffset_ = 0;
  if (api_.getTimestamp) {
    uint64_t before = monotonicNs(), vendor = 0;
    roc::Status rc = api_.getTimestamp(&vendor);
    uint64_t after = monotonicNs();
    if (rc != roc::kSuccess) throw std::runtime_error(api_.failure("roctracer_get_timestamp", rc));
    clockOffset_ = int64_t(vendor) - int64_t(before + (after - before) / 2);
  }
  selectApis();
  roc::Properties props{};
  props.buffer_size = bufferBytes_;
  props.buffer_callback_fun = &RoctracerTracer::onBuffer;
  props.buffer_callback_arg = this;
  roc::Status rc = api_.openPool(&props);
  if (rc != roc::kSuccess) {
    disableApis();
    if (rc == roc::kErrorDefaultPoolAlreadyDefined)
      throw SubscriberTaken(
          "another roctracer client already holds the default activity pool (rocprof, "
          "torch.profiler/Kineto, Triton's proton, or a tool that did not close its pool); stop it "
          "before starting this session. " + api_.failure("roctracer_open_pool", rc));
    throw std::runtime_error(api_.failure("roctracer_open_pool", rc));
  }
  poolOpen_ = true;
  rc = api_.enableDomainActivity(roc::kDomainHipOps);
  if (rc != roc::kSuccess) {
    disableApis();
    api_.closePool();
    poolOpen_ = false;
    throw std::runtime_error(api_.failure("roctracer_enable_domain_activity(ACTIVITY_DOMAIN_HIP_OPS)", rc));
  }
  if (api_.start) api_.start();
}

void RoctracerTracer::selectApis() {
  tracedApis_ = 0;
  domainCallback_ = false;
  for (uint32_t cid = 0; cid < kMaxHipApiId; ++cid) {
    uint8_t t = classify(api_.opString(roc::kDomainHipApi, cid, 0));
    traced_[cid].store(t, std::memory_order_relaxed);
    tracedApis_ += t != 0;
  }
  if (tracedApis_ == 0)
    throw std::runtime_error("roctracer_op_string in " + api_.path +
                             " names no HIP launch, copy or set call (hipLaunchKernel, hipMemcpy, ...) "
                             "among HIP API ids below " + std::to_string(kMaxHipApiId) +
                             ", so their callbacks cannot be enabled");
  // Only the traced calls get callbacks; a library that refuses per-call callbacks gets the
  // whole domain, filtered in onApi by the same table.
  uint32_t enabled = 0;
  roc::Status firstError = roc::kSuccess;
  for (uint32_t cid = 0; cid < kMaxHipApiId; ++cid) {
    if (!traced_[cid].load(std::memory_order_relaxed)) continue;
    roc::Status rc = api_.enableOpCallback(roc::kDomainHipApi, cid, &RoctracerTracer::onApi, this);
    if (rc == roc::kSuccess)
      ++enabled;
    else if (firstError == roc::kSuccess)
      firstError = rc;
  }
  if (enabled == tracedApis_) return;
  for (uint32_t cid = 0; cid < kMaxHipApiId; ++cid)
    if (traced_[cid].load(std::memory_order_relaxed)) api_.disableOpCallback(roc::kDomainHipApi, cid);
  roc::Status rc = api_.enableDomainCallback(roc::kDomainHipApi, &RoctracerTracer::onApi, this);
  if (rc != roc::kSuccess)
    throw std::runtime_error(api_.failure("roctracer_enable_domain_callback(ACTIVITY_DOMAIN_HIP_API)", rc) +
                             "; roctracer_enable_op_callback also failed (status " +
                             std::to_string(firstError) + ")");
  domainCallback_ = true;
}

void RoctracerTracer::disableApis() {
  if (domainCallback_) {
    api_.disableDomainCallback(roc::kDomainHipApi);
    return;
  }
  for (uint32_t cid = 0; cid < kMaxHipApiId; ++cid)
    if (traced_[cid].load(std::memory_order_relaxed)) api_.disableOpCallback(roc::kDomainHipApi, cid);
}

void RoctracerTracer::stop() {
  // Every step runs even when one fails; the first failure is reported at the end.
  std::string error;
  try {
    flushLocked();
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (api_.stop) api_.stop();
  roc::Status rc = api_.disableDomainActivity(roc::kDomainHipOps);
  if (rc != roc::kSuccess && error.empty())
    error = api_.failure("roctracer_disable_domain_activity(ACTIVITY_DOMAIN_HIP_OPS)", rc);
  disableApis();
  // Closing the pool flushes what is left (delivered through onBuffer) and frees the default
  // pool, so that another tool or a later session can open one.
  rc = api_.closePool();
  poolOpen_ = false;
  if (rc != roc::kSuccess && error.empty()) error = api_.failure("roctracer_close_pool", rc);
  if (!error.empty()) throw std::runtime_error(error);
}

void RoctracerTracer::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0) flushLocked();
}

void RoctracerTracer::flushLocked() {
  hipRuntime().synchronizeAll();
  roc::Status rc = api_.flushActivity();
  if (rc != roc::kSuccess) throw std::runtime_error(api_.failure("roctracer_flush_activity", rc));
}

void RoctracerTracer::onApi(uint32_t domain, uint32_t cid, const void* data, void* arg) {
  // The launch path: one table lookup, then the core. Every traced call counts, nested or not:
  // roctracer stamps an operation with the innermost HIP call's correlation id.
  if (domain != roc::kDomainHipApi || !data || cid >= kMaxHipApiId) return;
  auto* self = static_cast<RoctracerTracer*>(arg);
  uint8_t t = self->traced_[cid].load(std::memory_order_relaxed);
  const auto* d = static_cast<const roc::HipApiData*>(data);
  if (!t || d->phase != roc::kPhaseEnter) return;
  Profiler::instance().onLaunch(static_cast<uint32_t>(d->correlation_id), t == 2);
}

void RoctracerTracer::onBuffer(const char* begin, const char* end, void* arg) {
  auto* self = arg ? static_cast<RoctracerTracer*>(arg) : &instance();
  if (begin && end && begin < end) self->handleBuffer(begin, end);
}

void RoctracerTracer::handleBuffer(const char* begin, const char* end) {
  Profiler& profiler = Profiler::instance();
  const auto* record = reinterpret_cast<const roc::Record*>(begin);
  const auto* last = reinterpret_cast<const roc::Record*>(end);
  while (record < last) {
    DeviceRecord out;
    if (convert(*record, out))
      profiler.onRecord(out);
    else
      skipped_.fetch_add(1, std::memory_order_relaxed);
    const roc::Record* next = nullptr;
    if (api_.nextRecord(record, &next) != roc::kSuccess || !next || next <= record) break;
    record = next;
  }
}

bool RoctracerTracer::convert(const roc::Record& r, DeviceRecord& out) {
  if (r.domain != roc::kDomainHipOps) return false;
  out.deviceType = DeviceType::HIP;
  out.correlation = static_cast<uint32_t>(r.correlation_id);
  out.deviceId = r.device_id < 0 ? 0 : static_cast<uint32_t>(r.device_id);
  out.streamId = static_cast<uint32_t>(r.queue_id);
  out.startNs = r.begin_ns - clockOffset_;
  out.endNs = (r.end_ns < r.begin_ns ? r.begin_ns : r.end_ns) - clockOffset_;
  switch (r.op) {
    case roc::kHipOpDispatch:
      out.kind = RecordKind::Kernel;
      kernelNames_.assign(r.kernel_name, out);
      kernels_.fetch_add(1, std::memory_order_relaxed);
      return true;
    case roc::kHipOpCopy: {
      auto [name, isSet] = copyName(r.op, r.kind);
      out.kind = isSet ? RecordKind::Memset : RecordKind::Memcpy;
      out.name = name;
      out.bytes = r.bytes;
      (isSet ? sets_ : copies_).fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    default:  // barriers and markers: no device work of their own
      return false;
  }
}

std::pair<uint32_t, bool> RoctracerTracer::copyName(uint32_t op, uint32_t kind) {
  // The copy's `kind` is named by roctracer_op_string (e.g. CopyHostToDevice, FillBuffer);
  // names are mapped onto the ones the CUDA backends use, so that profiles compare.
  uint64_t key = uint64_t(op) << 32 | kind;
  std::lock_guard<std::mutex> lock(copyNamesMutex_);
  auto it = copyNames_.find(key);
  if (it != copyNames_.end()) return it->second;
  const char* text = api_.opString(roc::kDomainHipOps, op, kind);
  std::string s = text ? text : "";
  std::pair<uint32_t, bool> result;
  if (s.find("Fill") != std::string::npos || s.find("emset") != std::string::npos)
    result = {intern("memset"), true};
  else if (s.find("HostToDevice") != std::string::npos)
    result = {intern("memcpy HtoD"), false};
  else if (s.find("DeviceToHost") != std::string::npos)
    result = {intern("memcpy DtoH"), false};
  else if (s.find("DeviceToDevice") != std::string::npos)
    result = {intern("memcpy DtoD"), false};
  else if (s.find("HostToHost") != std::string::npos)
    result = {intern("memcpy HtoH"), false};
  else
    result = {intern(s.empty() ? std::string("memcpy") : "memcpy " + s), false};
  copyNames_.emplace(key, result);
  return result;
}

RoctracerTracer::Stats RoctracerTracer::stats() const {
  Stats s;
  s.kernels = kernels_.load();
  s.copies = copies_.load();
  s.sets = sets_.load();
  s.skipped = skipped_.load();
  s.tracedApis = tracedApis_;
  s.domainCallback = domainCallback_.load();
  return s;
}

std::string RoctracerTracer::libraryVersion() const {
  if (!api_.versionMajor || !api_.versionMinor) return "";
  return std::to_string(api_.versionMajor()) + "." + std::to_string(api_.versionMinor());
}

}  // namespace ftp
