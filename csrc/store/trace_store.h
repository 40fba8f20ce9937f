// The store of a data="trace" (or "perfetto") session: one compact event per record and per
// closed scope, written as Chrome trace-event JSON (or a Perfetto protobuf trace). Its context
// tree only names each event's context.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "store/store.h"
#include "data/trace.h"

namespace ftp {

class TraceStore final : public DataStore {
 public:
  enum class Format : uint8_t { ChromeJson, PerfettoProto };  // `.chrome_trace` or `.pftrace`
  explicit TraceStore(Format format) : format_(format) {}

  void addRecord(uint32_t context, uint32_t state, const DeviceRecord& record, const LaunchMetadata* meta,
                 uint64_t launchNs, uint32_t tid) override;
  void addScopeMetrics(uint32_t, const ScopeMetrics&) override {}  // no place for them in a trace
  void closeScope(const ScopeEvent& scope, uint32_t node) override;
  void attachExtra(uint32_t correlation, LaunchExtra&& extra) override;
  uint64_t settleExtras() override;
  uint64_t write(const OutputRequest& request) override;
  std::unique_ptr<DataStore> takePart() override;
  void release() override;
  uint32_t recordNode(uint32_t context, uint32_t state, RecordKind kind, uint32_t name) override;
  void holdRow(uint32_t node, const Metrics& metrics) override;

 private:
  // Extras per correlation, written with its event: metrics as written (means divided out).
  std::unordered_map<uint32_t, Metrics> extrasToWrite() const;
  void clearEvents();
  void shiftDeviceEvents(int64_t toNs);

  int64_t shiftedNs_ = 0;  // what the device events' times hold added (under mutex())

  const Format format_;
  // Under mutex():
  ChunkedVector<DeviceEvent> device_;
  ChunkedVector<ScopeEvent> scopes_;
  // The trace shows one event per launch: of an extra only the metrics apply, summed, with
  // the number of attachments (for mean metrics). Those of this part's events, or waiting for
  // their record.
  std::unordered_map<uint32_t, std::pair<Metrics, uint32_t>> extras_;
};

}  // namespace ftp
