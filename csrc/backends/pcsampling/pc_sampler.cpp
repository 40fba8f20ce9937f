// PcSampler: a session's start, stop and finish, the launch path, module and context events, and
// the samples' source lines. The per-context CUPTI calls (enable, configure, ranges, fetching)
// are in pc_contexts.cpp.
#include "backends/pcsampling/pc_sampler.h"

#include <cupti_callbacks.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "core/clock.h"
#include "core/strings.h"

namespace ftp {
namespace {

std::string baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
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

void PcSampler::onModuleUnloading(const void* cubin, size_t size) {
  // Continuous mode needs a fetch between a module's unload and a reload (cupti_pcsampling.h).
  addCubin(cubin, size);
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot_ < 0) return;
  try {
    closeSessionRanges();  // range=session: samples of the unloading module must be read now
    drainAll();
  } catch (const std::exception& e) {
    noteError(e);
  }
}

// A context created while a session samples (the program's first CUDA call, e.g. torch's first
// op, creates it inside that launch call, whose launch callback saw no context yet): enabled here,
// and with range=session its range opened, so that the kernel of that very call is sampled.
void PcSampler::onContextCreated(void* context) {
  if (slot_ < 0 || !context) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot_ < 0 || stopped_) return;
  ContextState* state = stateFor(static_cast<CUcontext>(context));
  if (!state || !options_.sessionRange || state->rangeOpen) return;
  try {
    startRange(*state, /*sync=*/false);
  } catch (const std::exception& e) {
    noteError(e);  // never throw into the vendor's callback
  }
}

void PcSampler::onContextDestroying(void* context) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < contexts_.size(); ++i) {
    if (contexts_[i]->context != context) continue;
    try {
      stopContext(*contexts_[i]);
    } catch (const std::exception&) {
    }
    delete contexts_[i];
    contexts_.erase(contexts_.begin() + long(i));
    return;
  }
}

}  // namespace ftp
