// The MUPTI instance of the shared CUPTI-dialect tracer (see mupti_dialect.h).
#include <cstddef>
#include <cstring>

// CUPTI's record layouts, only to check MUPTI's against (below).
#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include "backends/dialect/dialect_tracer_impl.h"
#include "backends/mthreads/mupti_dialect.h"
#include "backends/mthreads/musa_driver.h"

namespace ftp {
namespace {

const char* const kTracedPrefixes[] = {"muLaunch",   "muGraphLaunch",   "muMemcpy",   "muMemset",
                                       "musaLaunch", "musaGraphLaunch", "musaMemcpy", "musaMemset"};

// MUPTI's records are documented as CUPTI's records of the same name and version: the
// declarations in mupti_types.h must agree with CUPTI's field for field.
#define FTP_SAME_OFFSET(mupti, cupti, field) \
  static_assert(offsetof(mupti, field) == offsetof(cupti, field), #mupti "." #field " is off")
FTP_SAME_OFFSET(MUpti_ActivityKernel6, CUpti_ActivityKernel6, start);
FTP_SAME_OFFSET(MUpti_ActivityKernel6, CUpti_ActivityKernel6, deviceId);
FTP_SAME_OFFSET(MUpti_ActivityKernel6, CUpti_ActivityKernel6, gridX);
FTP_SAME_OFFSET(MUpti_ActivityKernel6, CUpti_ActivityKernel6, localMemoryPerThread);
FTP_SAME_OFFSET(MUpti_ActivityKernel6, CUpti_ActivityKernel6, correlationId);
FTP_SAME_OFFSET(MUpti_ActivityKernel6, CUpti_ActivityKernel6, name);
FTP_SAME_OFFSET(MUpti_ActivityKernel6, CUpti_ActivityKernel6, graphNodeId);
FTP_SAME_OFFSET(MUpti_ActivityKernel6, CUpti_ActivityKernel6, graphId);
static_assert(sizeof(MUpti_ActivityKernel6) == sizeof(CUpti_ActivityKernel6), "Kernel6 size");
FTP_SAME_OFFSET(MUpti_ActivityMemcpy4, CUpti_ActivityMemcpy4, bytes);
FTP_SAME_OFFSET(MUpti_ActivityMemcpy4, CUpti_ActivityMemcpy4, correlationId);
FTP_SAME_OFFSET(MUpti_ActivityMemcpy4, CUpti_ActivityMemcpy4, graphNodeId);
FTP_SAME_OFFSET(MUpti_ActivityMemset3, CUpti_ActivityMemset3, bytes);
FTP_SAME_OFFSET(MUpti_ActivityMemset3, CUpti_ActivityMemset3, correlationId);
FTP_SAME_OFFSET(MUpti_ActivityMemset3, CUpti_ActivityMemset3, graphNodeId);
FTP_SAME_OFFSET(MUpti_CallbackData, CUpti_CallbackData, context);
FTP_SAME_OFFSET(MUpti_CallbackData, CUpti_CallbackData, correlationId);
#undef FTP_SAME_OFFSET

}  // namespace

template class DialectTracer<MuptiDialect>;

CallbackTimes& MuptiDialect::callbackTimes() {
  static CallbackTimes* times = new CallbackTimes;  // leaked: read from the library's threads until exit
  return *times;
}

void MuptiDialect::selectCallbacks(const Api& api, std::vector<TracedCallback<Domain, CallbackId>>& out) {
  for (Domain domain : {MUPTI_CB_DOMAIN_DRIVER_API, MUPTI_CB_DOMAIN_RUNTIME_API}) {
    for (uint32_t cbid = 1; cbid < kMaxCallbackId; ++cbid) {
      const char* name = nullptr;
      if (api.getCallbackName(domain, cbid, &name) != MUPTI_SUCCESS || !name) continue;
      if (!tracedCallName(name, kTracedPrefixes, std::size(kTracedPrefixes))) continue;
      out.push_back({domain, cbid, std::strstr(name, "GraphLaunch") != nullptr});
    }
  }
}

void MuptiDialect::synchronize(const std::vector<Context>& contexts) {
  for (MUcontext c : contexts) MusaDriver::instance().synchronize(c);
}

}  // namespace ftp
