// The function table of CUPTI's callback and activity API (libcupti), resolved with dlsym at run
// time. MUPTI and MSPTI mirror its calls under another prefix and have tables of the same shape
// (mthreads/mupti_api.h, cann/mspti_api.h), typed with their own declarations.
#pragma once
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <string>

#include "core/errors.h"  // load: LibraryNotFound; the tracer: SubscriberTaken

namespace ftp {

struct CuptiApi {
  using GetVersion = CUptiResult (*)(uint32_t*);
  using GetResultString = CUptiResult (*)(CUptiResult, const char**);
  using Subscribe = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  using Unsubscribe = CUptiResult (*)(CUpti_SubscriberHandle);
  using EnableCallback = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                         CUpti_CallbackId);
  using GetCallbackName = CUptiResult (*)(CUpti_CallbackDomain, uint32_t, const char**);
  using RegisterCallbacks = CUptiResult (*)(CUpti_BuffersCallbackRequestFunc,
                                            CUpti_BuffersCallbackCompleteFunc);
  using ActivityKindFn = CUptiResult (*)(CUpti_ActivityKind);
  using GetNextRecord = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);
  using GetNumDropped = CUptiResult (*)(CUcontext, uint32_t, size_t*);
  using FlushAll = CUptiResult (*)(uint32_t);
  using GetTimestamp = CUptiResult (*)(uint64_t*);
  using Finalize = CUptiResult (*)();
  using GetGraphNodeId = CUptiResult (*)(CUgraphNode, uint64_t*);

  GetVersion getVersion = nullptr;
  GetResultString getResultString = nullptr;
  Subscribe subscribe = nullptr;
  Unsubscribe unsubscribe = nullptr;
  EnableCallback enableCallback = nullptr;
  GetCallbackName getCallbackName = nullptr;  // optional: absent before CUDA 11.?
  RegisterCallbacks registerCallbacks = nullptr;
  ActivityKindFn enable = nullptr;
  ActivityKindFn disable = nullptr;
  GetNextRecord getNextRecord = nullptr;
  GetNumDropped getNumDropped = nullptr;
  FlushAll flushAll = nullptr;
  GetTimestamp getTimestamp = nullptr;
  Finalize finalize = nullptr;
  GetGraphNodeId getGraphNodeId = nullptr;  // optional: without it graph kernels stay under their launch

  std::string path;  // the library actually loaded
  void* handle = nullptr;

  // dlopens `path` and resolves `<prefix>Subscribe` etc. (prefix "cupti"). Throws
  // LibraryNotFound naming the library and the missing function (core/library.h).
  void load(const std::string& path, const std::string& prefix);
  std::string describe(CUptiResult result) const;
};

}  // namespace ftp
