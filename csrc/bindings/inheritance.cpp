// Python bindings of context inheritance (threads, autograd) and of checked scope exits.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "bindings/bindings.h"
#include "context/inheritance.h"
#include "core/strings.h"
#include "session/profiler.h"

namespace ftp {
namespace {

// What Python holds between threading.Thread.start and the new thread's first line, and what
// backward-by-forward-layer tags autograd nodes with.
struct SnapshotHandle {
  ContextSnapshot context;
};

std::vector<std::string> names(const std::vector<uint32_t>& ids) {
  std::vector<std::string> out;
  for (uint32_t id : ids) out.push_back(nameOf(id));
  return out;
}

}  // namespace

uint32_t exitScopeChecked(bool cpuTimed, const MetricsIn& sums, const PropertiesIn& properties) {
  ThreadState& ts = threadState();
  if (ts.scopes.empty()) return kNoScope;
  const uint32_t left = ts.scopes.back().name;
  Profiler& profiler = Profiler::instance();
  if (!sums.empty() || !properties.empty()) profiler.addScopeMetrics(scopeMetrics(sums, properties));
  profiler.exitScope(cpuTimed);
  return left;
}

void registerInheritanceBindings(nb::module_& m) {
  nb::class_<SnapshotHandle>(m, "ContextSnapshot")
      .def_prop_ro("scopes", [](const SnapshotHandle& h) { return names(h.context->scopes); })
      .def_prop_ro("state", [](const SnapshotHandle& h) { return h.context->state ? nameOf(h.context->state) : ""; })
      .def_prop_ro("frames", [](const SnapshotHandle& h) { return names(h.context->frames); })
      .def("extended", [](const SnapshotHandle& h, const std::string& scope) {
        auto c = std::make_shared<InheritedContext>(*h.context);
        c->scopes.push_back(intern(scope));
        return SnapshotHandle{std::move(c)};
      }, "A copy with one more scope innermost.");
  m.def("context_snapshot", [](bool withFrames) { return SnapshotHandle{snapshotContext(withFrames)}; },
        nb::arg("with_frames") = true);
  m.def("context_adopt", [](const SnapshotHandle& h) { adoptParentContext(h.context); });
  m.def("context_inherited", []() {
    const InheritedContext* c = inheritedContext(threadState());
    return c ? names(c->scopes) : std::vector<std::string>();
  });
  m.def("drive_begin", &beginDriving);
  m.def("drive_end", &endDriving);
  m.def("rooted_scopes_push", [](const SnapshotHandle* h) {
          Profiler::instance().pushRootedScopes(h ? h->context->scopes : std::vector<uint32_t>());
        },
        nb::arg("snapshot").none(), "None pushes nothing but still pairs with one pop.");
  m.def("rooted_scopes_pop", []() { Profiler::instance().popRootedScopes(); });
  m.def("scope_exit_checked", &exitScopeChecked, nb::arg("cpu_timed") = false, nb::arg("metrics") = MetricsIn(),
        nb::arg("properties") = PropertiesIn());
  m.def("scope_name_of", [](uint32_t id) { return nameOf(id); });
  m.attr("NO_SCOPE") = kNoScope;
}

}  // namespace ftp
