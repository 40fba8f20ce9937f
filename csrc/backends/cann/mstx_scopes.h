// Scopes mirrored as mstx ranges (cann mode option mstx_enabled=true): each scope entered on
// any thread opens a range in the "flagtree_profiler" mstx domain, and leaving it closes that
// range, so that msprof and MindStudio timelines (and MSPTI's MARKER records) show our scopes.
// Scopes already open when mirroring starts are not mirrored (their exits are recognised by
// depth and ignored).
#pragma once
#include "core/singleton.h"
#include <atomic>
#include <cstdint>
#include <string>

#include "backends/cann/mspti_types.h"
#include "session/profiler.h"

namespace ftp {

class MstxScopes : public ScopeListener {
 public:
  static MstxScopes& instance();
  // Resolves the mstx calls (in `msptiHandle`'s dependencies first, then libms_tools_ext.so,
  // then the process) and creates the domain once; throws std::runtime_error naming what is
  // missing. Counted: several sessions may ask for mirroring.
  void acquire(void* msptiHandle);
  void release();
  uint64_t rangesStarted() const { return started_.load(); }
  uint64_t rangesEnded() const { return ended_.load(); }

  void onScopeEnter(uint32_t name, size_t depth) override;
  void onScopeExit(size_t depth) override;

 private:
  using DomainCreate = mstxDomainHandle_t (*)(const char*);
  using RangeStart = uint64_t (*)(mstxDomainHandle_t, const char*, void*);
  using RangeEnd = void (*)(mstxDomainHandle_t, uint64_t);
  friend MstxScopes& leaked<MstxScopes>();
  MstxScopes() = default;
  bool resolve(void* lib);

  int users_ = 0;  // under the Python lock (start/finalize)
  DomainCreate domainCreate_ = nullptr;
  RangeStart rangeStart_ = nullptr;
  RangeEnd rangeEnd_ = nullptr;
  mstxDomainHandle_t domain_ = nullptr;
  std::atomic<uint64_t> started_{0}, ended_{0};
};

}  // namespace ftp
