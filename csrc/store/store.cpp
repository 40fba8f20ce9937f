#include "store/store.h"

#include <mutex>

#include "store/trace_store.h"
#include "store/tree_store.h"

namespace ftp {

void DataStore::setMeanMetrics(const std::vector<uint32_t>& names) {
  std::lock_guard<std::mutex> lock(mutex());
  meanMetrics_.insert(names.begin(), names.end());
}

uint64_t DataStore::extrasAfterPart() {
  std::lock_guard<std::mutex> lock(mutex());
  return extrasAfterPart_;
}

// The one place that looks at the kind of data: everything after goes through DataStore.
std::unique_ptr<DataStore> makeStore(DataKind kind) {
  if (kind == DataKind::Trace) return std::make_unique<TraceStore>(TraceStore::Format::ChromeJson);
  if (kind == DataKind::Perfetto) return std::make_unique<TraceStore>(TraceStore::Format::PerfettoProto);
  return std::make_unique<TreeStore>();
}

}  // namespace ftp
