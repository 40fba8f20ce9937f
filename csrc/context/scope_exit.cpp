// Scope metrics given at exit (exit_scope(name, metrics), as Proton's API allows): they add to
// the node of the scope being left, exactly as metrics given at entry do.
#include "session/profiler.h"

namespace ftp {

void Profiler::addScopeMetrics(const std::vector<std::pair<uint32_t, double>>& metrics) {
  ThreadState& ts = threadState();
  if (metrics.empty() || ts.scopes.empty()) return;
  for (uint32_t mask = activeMask(); mask; mask &= mask - 1) {
    Session* s = session(__builtin_ctz(mask));
    if (!s || s->context != ContextKind::Shadow) continue;
    uint32_t node = resolveShadow(ts, *s);
    std::lock_guard<std::mutex> lock(s->tree.mutex());
    for (const auto& m : metrics) s->tree.node(node).metrics.add(m.first, m.second);
  }
}

}  // namespace ftp
