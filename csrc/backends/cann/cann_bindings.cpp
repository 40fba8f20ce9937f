// Python bindings of the cann backend (Huawei Ascend): the MSPTI tracer (the shared dialect
// calls, "mspti_..."), scopes as mstx ranges, and the ACL runtime's device facts.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "backends/cann/acl_runtime.h"
#include "backends/cann/mspti_dialect.h"
#include "backends/cann/mstx_scopes.h"
#include "backends/dialect/dialect_bindings.h"
#include "bindings/bindings.h"

namespace ftp {
namespace {

void defineAscend(nb::module_& m) {
  m.def("mstx_acquire", []() { MstxScopes::instance().acquire(MsptiTracer::instance().handle()); });
  m.def("mstx_release", []() { MstxScopes::instance().release(); });
  m.def("mstx_stats", []() {
    nb::dict d;
    d["ranges_started"] = MstxScopes::instance().rangesStarted();
    d["ranges_ended"] = MstxScopes::instance().rangesEnded();
    return d;
  });
  m.def("npu_devices", []() {
    nb::list out;
    if (!AclRuntime::instance().find(MsptiTracer::instance().handle())) return out;
    for (const NpuDeviceInfo& d : AclRuntime::instance().devices()) {
      nb::dict info;
      info["index"] = d.index;
      info["arch"] = d.socName;
      out.append(info);
    }
    return out;
  });
}

}  // namespace

void registerCannBindings(nb::module_& m) {
  defineDialectTracer<MsptiDialect>(m, "mspti", DeviceType::NPU);
  defineAscend(m);
}

}  // namespace ftp
