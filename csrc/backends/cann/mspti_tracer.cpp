// The MSPTI instance of the shared CUPTI-dialect tracer (see mspti_dialect.h).
#include <cstddef>

#include "backends/cann/acl_runtime.h"
#include "backends/cann/mspti_dialect.h"
#include "backends/dialect/dialect_tracer_impl.h"

namespace ftp {

// The documented packed layouts: fields after the 4-byte kind start at offset 4.
static_assert(offsetof(msptiActivityKernel, start) == 4 && offsetof(msptiActivityKernel, correlationId) == 28 &&
                  offsetof(msptiActivityKernel, name) == 44 && sizeof(msptiActivityKernel) == 56,
              "msptiActivityKernel layout");
static_assert(offsetof(msptiActivityMemcpy, bytes) == 8 && offsetof(msptiActivityMemcpy, correlationId) == 40,
              "msptiActivityMemcpy layout");
static_assert(offsetof(msptiActivityMarker, timestamp) == 12 && offsetof(msptiActivityMarker, domain) == 44,
              "msptiActivityMarker layout");

template class DialectTracer<MsptiDialect>;

void MsptiDialect::synchronize(const std::vector<Context>&) { AclRuntime::instance().synchronize(); }

}  // namespace ftp
