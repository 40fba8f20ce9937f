#include "backends/cann/mstx_scopes.h"

#include <stdexcept>
#include <utility>
#include <vector>

#include "backends/cann/mspti_dialect.h"
#include "core/errors.h"
#include "core/library.h"
#include "core/strings.h"
#include "core/singleton.h"

namespace ftp {
namespace {

// The ranges this thread opened: (scope depth when opened, range id).
thread_local std::vector<std::pair<size_t, uint64_t>> openRanges;

}  // namespace

MstxScopes& MstxScopes::instance() {
  return leaked<MstxScopes>();
}

bool MstxScopes::resolve(void* lib) {
  if (!lib) return false;
  try {
    resolveSymbols(lib, "mstx", "mstxDomain",
                   {
                       {domainCreate_, "CreateA", Need::Required},
                       {rangeStart_, "RangeStartA", Need::Required},
                       {rangeEnd_, "RangeEnd", Need::Required},
                   });
    return true;
  } catch (const LibraryNotFound&) {
    return false;
  }
}

void MstxScopes::acquire(void* msptiHandle) {
  if (!domain_) {
    // Beside libmspti, in a libms_tools_ext already loaded, anywhere in the process, and last in
    // a fresh load of libms_tools_ext.
    if (!resolve(msptiHandle) && !resolve(loadedLibrary("libms_tools_ext.so")) && !resolve(processScope()) &&
        !resolve(tryOpenLibrary("libms_tools_ext.so")))
      throw std::runtime_error(
          "mstx_enabled=true needs mstx (mstxDomainCreateA, mstxDomainRangeStartA, mstxDomainRangeEnd), found "
          "neither beside libmspti nor in libms_tools_ext.so; set mstx_enabled=false or install CANN's tools");
    domain_ = domainCreate_(kMstxDomain);
    if (!domain_) throw std::runtime_error("mstxDomainCreateA(\"flagtree_profiler\") failed");
  }
  if (users_++ == 0) Profiler::instance().setScopeListener(this);
}

void MstxScopes::release() {
  if (users_ > 0 && --users_ == 0) Profiler::instance().setScopeListener(nullptr);
}

void MstxScopes::onScopeEnter(uint32_t name, size_t depth) {
  const uint64_t id = rangeStart_(domain_, nameOf(name).c_str(), nullptr);  // a host range: no stream
  if (id == 0) return;  // id 0 is invalid: mstx refused the range
  openRanges.emplace_back(depth, id);
  started_.fetch_add(1, std::memory_order_relaxed);
}

void MstxScopes::onScopeExit(size_t depth) {
  if (openRanges.empty() || openRanges.back().first != depth) return;
  rangeEnd_(domain_, openRanges.back().second);
  openRanges.pop_back();
  ended_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ftp
