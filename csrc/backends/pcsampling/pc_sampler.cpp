#include "backends/pcsampling/pc_sampler.h"

#include <cupti_callbacks.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "backends/nvidia/cuda_driver.h"
#include "core/clock.h"
#include "core/strings.h"

namespace ftp {
namespace {

// Adds the time from its construction to its destruction to `total` (PcSamplingStats' phases).
class PhaseTimer {
 public:
  explicit PhaseTimer(uint64_t& total) : total_(total), start_(monotonicNs()) {}
  ~PhaseTimer() { total_ += monotonicNs() - start_; }

 private:
  uint64_t& total_;
  uint64_t start_;
};

std::string baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

CUpti_PCSamplingConfigurationInfo attribute(CUpti_PCSamplingConfigurationAttributeType type) {
  CUpti_PCSamplingConfigurationInfo info{};
  info.attributeType = type;
  return info;
}

}  // namespace

PcSampler& PcSampler::instance() { return leaked<PcSampler>(); }

void PcSampler::check(const char* what, CUptiResult result) const {
  if (result != CUPTI_SUCCESS)
    throw std::runtime_error(std::string("PC sampling: ") + what + " failed: " + api_.describe(result));
}

void PcSampler::start(int slot, void* handle, const std::string& libraryName, const PcSamplingOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot_ >= 0)
    throw std::runtime_error("PC sampling is already on for another session; finalize it first (CUPTI samples "
                             "one configuration per context)");
  if (!api_.loaded()) api_.load(handle, libraryName);
  options_ = options;
  stats_ = PcSamplingStats{};
  samples_ = PcSamples{};
  launches_.clear();
  active_ = nullptr;
  activeLaunch_ = 0;
  stopped_ = false;
  stopError_.clear();
  stats_.range = options.sessionRange ? "session" : "launch";
  stats_.attribution = !options.sessionRange || options.serialized
                           ? "per launch (exact)"
                           : "per function, split equally among its launches in the session";
  slot_ = slot;
}

void PcSampler::noteError(const std::exception& e) {
  if (stats_.errors++ == 0) stats_.firstError = e.what();
}

PcSampler::ContextState* PcSampler::stateFor(CUcontext context) {
  for (ContextState* s : contexts_)
    if (s->context == context) return s->failed ? nullptr : s;
  auto* state = new ContextState();
  state->context = context;
  contexts_.push_back(state);
  try {
    enableOn(*state);
  } catch (const std::exception& e) {
    // A context that cannot sample (e.g. a device without PC sampling): its kernels still get
    // activity records; counted in the metadata (pcsampling_failed_contexts).
    state->failed = true;
    stats_.failedContexts++;
    noteError(e);
    return nullptr;
  }
  stats_.contexts++;
  return state;
}

// Enable, then every attribute in one configuration call (Proton's order). Start is per launch.
void PcSampler::enableOn(ContextState& state) {
  PhaseTimer timer(stats_.enableNs);
  CUpti_PCSamplingEnableParams enable{CUpti_PCSamplingEnableParamsSize, nullptr, state.context};
  check("cuptiPCSamplingEnable", api_.enable(&enable));
  readStallReasons(state);
  configure(state);
}

void PcSampler::readStallReasons(ContextState& state) {
  size_t count = 0;
  CUpti_PCSamplingGetNumStallReasonsParams num{CUpti_PCSamplingGetNumStallReasonsParamsSize, nullptr,
                                               state.context, &count};
  check("cuptiPCSamplingGetNumStallReasons", api_.getNumStallReasons(&num));
  std::vector<std::vector<char>> names(count, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, 0));
  std::vector<char*> namePointers;
  for (auto& n : names) namePointers.push_back(n.data());
  std::vector<uint32_t> indices(count);
  CUpti_PCSamplingGetStallReasonsParams get{CUpti_PCSamplingGetStallReasonsParamsSize, nullptr, state.context,
                                            count, indices.data(), namePointers.data()};
  check("cuptiPCSamplingGetStallReasons", api_.getStallReasons(&get));
  stats_.stallReasons.clear();
  for (size_t i = 0; i < count; ++i) {
    std::string name(names[i].data());
    if (!isCollectedReason(name)) continue;
    state.reasonIndices.push_back(indices[i]);
    samples_.setReason(indices[i], intern(stallMetricName(name)), !isIssuedReason(name));
    stats_.stallReasons.push_back(stallMetricName(name));
  }
}

void PcSampler::configure(ContextState& state) {
  const size_t reasons = state.reasonIndices.size();
  state.pcs.assign(options_.bufferPcs, CUpti_PCSamplingPCData{});
  state.stalls.assign(options_.bufferPcs * reasons, CUpti_PCSamplingStallReason{});
  for (size_t i = 0; i < state.pcs.size(); ++i) {
    state.pcs[i].size = sizeof(CUpti_PCSamplingPCData);
    state.pcs[i].stallReason = state.stalls.data() + i * reasons;
  }
  state.data = CUpti_PCSamplingData{};
  state.data.size = sizeof(CUpti_PCSamplingData);
  state.data.collectNumPcs = state.pcs.size();
  state.data.pPcData = state.pcs.data();

  std::vector<CUpti_PCSamplingConfigurationInfo> infos;
  auto info = attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON);
  info.attributeData.stallReasonData.stallReasonCount = reasons;
  info.attributeData.stallReasonData.pStallReasonIndex = state.reasonIndices.data();
  infos.push_back(info);
  if (options_.period) {
    info = attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD);
    info.attributeData.samplingPeriodData.samplingPeriod = options_.period;
    infos.push_back(info);
  }
  info = attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE);
  info.attributeData.scratchBufferSizeData.scratchBufferSize = options_.scratchBytes;
  infos.push_back(info);
  info = attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE);
  info.attributeData.hardwareBufferSizeData.hardwareBufferSize = options_.hardwareBytes;
  infos.push_back(info);
  info = attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE);
  info.attributeData.collectionModeData.collectionMode = options_.serialized
                                                             ? CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED
                                                             : CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  infos.push_back(info);
  info = attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL);
  info.attributeData.enableStartStopControlData.enableStartStopControl = 1;
  infos.push_back(info);
  // No OUTPUT_DATA_FORMAT: PARSED is the default, and the configuration known to yield samples
  // (Proton's) leaves it out.
  info = attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER);
  info.attributeData.samplingDataBufferData.samplingDataBuffer = &state.data;
  infos.push_back(info);
  CUpti_PCSamplingConfigurationInfoParams params{CUpti_PCSamplingConfigurationInfoParamsSize, nullptr,
                                                 state.context, infos.size(), infos.data()};
  check("cuptiPCSamplingSetConfigurationAttribute", api_.setConfig(&params));
}

// `launch`: the launch being drained (0: none); records CUPTI leaves without a correlation id
// (continuous mode) belong to it, as the launch was sampled alone.
void PcSampler::takeBuffer(ContextState& state, uint32_t launch) {
  CUpti_PCSamplingData& d = state.data;
  stats_.totalSamples += d.totalSamples;
  stats_.droppedSamples += d.droppedSamples;
  stats_.nonUserSamples += d.nonUsrKernelsTotalSamples;
  stats_.hardwareBufferFull |= d.hardwareBufferFull != 0;
  for (size_t i = 0; i < d.totalNumPcs && i < state.pcs.size(); ++i) {
    const CUpti_PCSamplingPCData& pc = state.pcs[i];
    PcKey key{pc.correlationId ? pc.correlationId : launch, pc.cubinCrc, intern(pc.functionName ? pc.functionName : "<unknown function>"),
              pc.pcOffset};
    for (size_t r = 0; r < pc.stallReasonCount; ++r)
      samples_.add(key, pc.stallReason[r].pcSamplingStallReasonIndex, pc.stallReason[r].samples);
  }
  d.totalNumPcs = 0;
  d.totalSamples = d.droppedSamples = d.nonUsrKernelsTotalSamples = 0;
}

void PcSampler::drain(ContextState& state, uint32_t launch) {
  // GetData hands over at most collectNumPcs records per call: call until none remain.
  for (int round = 0; round < 100000; ++round) {
    CUpti_PCSamplingGetDataParams params{CUpti_PCSamplingGetDataParamsSize, nullptr, state.context, &state.data};
    CUptiResult rc = api_.getData(&params);
    stats_.getDataCalls++;
    if (rc == CUPTI_ERROR_OUT_OF_MEMORY) stats_.hardwareBufferFull = true;  // counted, data of this call lost
    else check("cuptiPCSamplingGetData", rc);
    const bool more = state.data.remainingNumPcs > 0;
    takeBuffer(state, launch);
    if (!more) return;
  }
}

void PcSampler::drainAll() {
  for (ContextState* s : contexts_)
    if (!s->failed) drain(*s);
}

// Stops the launch being sampled now (if any) and takes its samples.
void PcSampler::stopActive() {
  ContextState* state = active_;
  const uint32_t launch = activeLaunch_;
  active_ = nullptr;
  activeLaunch_ = 0;
  if (state) stopRange(*state, launch);
}

// One Start, shared by both ranges (range=launch: around one launch; range=session: until finalize).
void PcSampler::startRange(ContextState& state, bool sync) {
  PhaseTimer timer(stats_.startNs);
  // Waits for the work queued before the range so that a launch is sampled alone (Proton syncs
  // before every Start; once per range here in range=session). Without a driver (host-side
  // tests) there is no device work to wait for; a context just created has none either.
  if (sync) CudaDriver::instance().synchronizeCurrent();
  CUpti_PCSamplingStartParams start{CUpti_PCSamplingStartParamsSize, nullptr, state.context};
  check("cuptiPCSamplingStart", api_.start(&start));
  state.rangeOpen = true;
}

// Stop, then take what Stop flushed and what GetData still holds. `launch`: the launch the range
// covered (range=launch), 0 for a session range (records keep CUPTI's correlation id, if any).
void PcSampler::stopRange(ContextState& state, uint32_t launch) {
  PhaseTimer timer(stats_.stopNs);
  state.rangeOpen = false;
  CUpti_PCSamplingStopParams stop{CUpti_PCSamplingStopParamsSize, nullptr, state.context};
  check("cuptiPCSamplingStop", api_.stop(&stop));
  // Stop may flush the range into the configured buffer (cupti_pcsampling.h: data is flushed "after every
  // range end"; Proton reads that buffer before its first GetData). Take it before GetData overwrites it.
  takeBuffer(state, launch);
  drain(state, launch);
}

// range=session: end every open range (finalize, module unload); the next launch opens a new one.
void PcSampler::closeSessionRanges() {
  for (ContextState* s : contexts_)
    if (!s->failed && s->rangeOpen) stopRange(*s, 0);
}

void PcSampler::stopContext(ContextState& state) {
  if (active_ == &state) stopActive();
  if (state.failed) return;
  if (state.rangeOpen) stopRange(state, 0);
  PhaseTimer timer(stats_.stopNs);
  drain(state);
  // Disable copies what CUPTI still holds into the configured buffer (cupti_pcsampling.h).
  CUpti_PCSamplingDisableParams disable{CUpti_PCSamplingDisableParamsSize, nullptr, state.context};
  check("cuptiPCSamplingDisable", api_.disable(&disable));
  takeBuffer(state, 0);
}

void PcSampler::addCubin(const void* cubin, size_t size) {
  if (!cubin || !size || !api_.loaded()) return;
  CUpti_GetCubinCrcParams params{CUpti_GetCubinCrcParamsSize, size, cubin, 0};
  if (api_.cubinCrc(&params) != CUPTI_SUCCESS) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto& stored = cubins_[params.cubinCrc];
  if (stored.empty()) stored.assign(static_cast<const char*>(cubin), size);
}

uint32_t PcSampler::lineOf(uint64_t crc, uint32_t function, uint64_t pc) {
  auto key = std::make_tuple(crc, function, pc);
  auto found = lines_.find(key);
  if (found != lines_.end()) return found->second;
  const std::string functionName = nameOf(function);
  std::string name;
  auto cubin = cubins_.find(crc);
  if (cubin == cubins_.end()) {
    name = "<unknown cubin>@" + functionName;
  } else {
    CUpti_GetSassToSourceCorrelationParams p{};
    p.size = CUpti_GetSassToSourceCorrelationParamsSize;
    p.cubin = cubin->second.data();
    p.cubinSize = cubin->second.size();
    p.functionName = functionName.c_str();
    p.pcOffset = pc;
    if (api_.sassToSource(&p) == CUPTI_SUCCESS && p.fileName && p.lineNumber) {
      name = baseName(p.fileName) + ":" + std::to_string(p.lineNumber) + "@" + functionName;
    } else {
      name = "<no line info>@" + functionName;
      stats_.linesWithoutSource++;
    }
    std::free(p.fileName);  // the caller frees both strings (cupti_pcsampling.h)
    std::free(p.dirName);
  }
  return lines_[key] = intern(name);
}

void PcSampler::stopLocked() {
  if (stopped_) return;
  stopped_ = true;
  for (ContextState* s : contexts_) {
    try {
      stopContext(*s);
    } catch (const std::exception& e) {
      if (stopError_.empty()) stopError_ = e.what();
    }
    delete s;
  }
  contexts_.clear();
}

std::vector<uint64_t> PcSampler::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uint64_t> missing;
  if (slot_ < 0) return missing;
  stopLocked();
  for (uint64_t crc : samples_.cubins())
    if (!cubins_.count(crc)) missing.push_back(crc);
  return missing;
}

PcSamplingStats PcSampler::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot_ < 0) return stats_;
  stopLocked();
  std::string firstError;
  std::swap(firstError, stopError_);
  std::map<uint64_t, bool> missing;
  auto lineOfKey = [&](uint64_t crc, uint32_t function, uint64_t pc) {
    if (!cubins_.count(crc)) missing[crc] = true;
    return lineOf(crc, function, pc);
  };
  auto launchesOf = [&](uint32_t function) -> const std::vector<uint32_t>* {
    auto it = launches_.find(function);
    return it == launches_.end() ? nullptr : &it->second;
  };
  const uint64_t linesStart = monotonicNs();
  auto extras = samples_.build(lineOfKey, launchesOf, stats_.unattributedSamples);
  stats_.linesNs += monotonicNs() - linesStart;
  stats_.unknownCubins = missing.size();
  stats_.unknownReasonSamples = samples_.unknownReasonSamples();
  for (auto& [correlation, extra] : extras) Profiler::instance().attachExtra(slot_, correlation, std::move(extra));
  samples_.clear();
  launches_.clear();
  slot_ = -1;
  if (!firstError.empty()) throw std::runtime_error(firstError);
  return stats_;
}

void PcSampler::launchEnter(uint32_t correlation, void* context) {
  if (slot_ < 0 || !context) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot_ < 0 || stopped_) return;
  if (active_) {  // another thread's launch is being sampled: CUPTI has one range per context
    stats_.unsampledLaunches++;
    return;
  }
  ContextState* state = stateFor(static_cast<CUcontext>(context));
  if (!state) return;
  try {
    if (options_.sessionRange) {  // one range for the session: open it at the context's first launch
      if (!state->rangeOpen) startRange(*state);
      stats_.sampledLaunches++;
      return;
    }
    startRange(*state);
    active_ = state;
    activeLaunch_ = correlation;
    stats_.sampledLaunches++;
  } catch (const std::exception& e) {
    noteError(e);  // never throw into the vendor's callback
  }
}

void PcSampler::launchExit(uint32_t correlation, const char* function) {
  if (slot_ < 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot_ < 0 || stopped_) return;
  if (function) launches_[intern(function)].push_back(correlation);
  if (!active_ || activeLaunch_ != correlation) return;
  try {
    stopActive();
  } catch (const std::exception& e) {
    noteError(e);
  }
}

void PcSampler::onLaunchEnter(uint32_t correlation, uint32_t, const void* cbData) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(cbData);
  if (cb) launchEnter(correlation, cb->context);
}

void PcSampler::onLaunchExit(uint32_t correlation, uint32_t, const void* cbData) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(cbData);
  launchExit(correlation, cb && cb->symbolName ? cb->symbolName : "<unknown function>");
}

}  // namespace ftp
