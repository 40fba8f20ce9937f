// The CUPTI (NVIDIA) instance of the shared CUPTI-dialect tracer (dialect_tracer.h): API
// callbacks on the launch, copy and set calls, activity buffers turned into DeviceRecords,
// flushing and dropped-record accounting, plus the resource callbacks (modules, contexts,
// graph nodes) that PC sampling, counters and CUDA graphs need. One per process: CUPTI allows
// one subscriber.
#pragma once
#include "backends/dialect/dialect_tracer.h"
#include "backends/nvidia/cupti_dialect.h"

namespace ftp {

using CuptiTracer = DialectTracer<CuptiDialect>;
extern template class DialectTracer<CuptiDialect>;

}  // namespace ftp
