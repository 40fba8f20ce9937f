// Triton launches that triton-ascend puts on torch_npu's task queue (its default,
// TRITON_ENABLE_TASKQUEUE): the launch hook runs on the Python thread, the runtime's launch later
// on the queue's thread. They get no external-id window (external_join.h); their kernel records
// join them by kernel name, in the order the hook saw them, which is the queue's order (one queue
// per device, first in, first out). Kernels of one name launched on several streams may run in
// another order than the hooks saw (streams do not keep each other's order): their records are
// left unattributed (counted), never given to a launch by a guess. Names are compared on their last kRuntimeNameMax characters:
// triton-ascend hands the CANN runtime at most that much of a kernel's name. Guarded by
// ExternalJoin's mutex.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/strings.h"
#include "data/records.h"

namespace ftp {

class QueuedLaunches {
 public:
  static constexpr size_t kRuntimeNameMax = 49;
  static constexpr size_t kMaxLaunches = 1u << 20;

  static std::string key(std::string_view name) {
    return std::string(name.size() > kRuntimeNameMax ? name.substr(name.size() - kRuntimeNameMax) : name);
  }
  bool add(uint32_t id, std::string_view name, uint64_t stream, uint64_t enterNs) {
    if (size_ >= kMaxLaunches) return false;
    Launches& launches = byName_[key(name)];
    if (launches.queue.empty() && !launches.severalStreams) launches.stream = stream;
    launches.severalStreams = launches.severalStreams || launches.stream != stream;
    launches.queue.push_back({id, enterNs});
    ++size_;
    return true;
  }
  // Moves every kernel record of `records` whose name has queued launches to `done`: joined to
  // the oldest such launch it does not start before (its correlation becomes the launch's id,
  // `count(r, true)`), or left unattributed (correlation 0, `count(r, false)`; also when the name
  // was launched on several streams, the launch is still used up). Launches whose
  // records have not come stay for a later drain.
  template <typename Count>
  void join(std::vector<DeviceRecord>& records, std::vector<DeviceRecord>& done, Count&& count) {
    if (byName_.empty()) return;
    std::stable_sort(records.begin(), records.end(),
                     [](const DeviceRecord& a, const DeviceRecord& b) { return a.startNs < b.startNs; });
    std::vector<DeviceRecord> rest;
    for (DeviceRecord& r : records) {
      auto it = r.kind == RecordKind::Kernel ? byName_.find(key(nameOf(r.mangled ? r.mangled : r.name)))
                                             : byName_.end();
      if (it == byName_.end()) {
        rest.push_back(r);
        continue;
      }
      std::deque<Launch>& launches = it->second.queue;
      const bool fits = !launches.empty() && r.startNs >= launches.front().enterNs;
      const bool joined = fits && !it->second.severalStreams;
      r.correlation = joined ? launches.front().id : 0;  // a kernel cannot start before its launch
      if (fits) launches.pop_front(), --size_;
      count(r, joined);
      done.push_back(r);
    }
    records.swap(rest);
  }
  void clear() {
    byName_.clear();
    size_ = 0;
  }

 private:
  struct Launch {
    uint32_t id;
    uint64_t enterNs;
  };
  struct Launches {
    std::deque<Launch> queue;
    uint64_t stream = 0;  // the stream of the name's launches, while there is one
    bool severalStreams = false;
  };
  std::unordered_map<std::string, Launches> byName_;
  size_t size_ = 0;
};

}  // namespace ftp
