// PcSampler's per-context CUPTI calls: enabling and configuring a context at its first launch,
// its sampling ranges (Start/Stop), and fetching what they sampled (GetData) into the session's
// samples (see pc_sampler.h for when each runs).
#include <cupti_callbacks.h>

#include <stdexcept>

#include "backends/nvidia/cuda_driver.h"
#include "backends/pcsampling/pc_sampler.h"
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

CUpti_PCSamplingConfigurationInfo attribute(CUpti_PCSamplingConfigurationAttributeType type) {
  CUpti_PCSamplingConfigurationInfo info{};
  info.attributeType = type;
  return info;
}

}  // namespace

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

}  // namespace ftp
