// The function table of libmupti (Moore Threads), resolved with dlsym at run time under the
// prefix "mupti": the same calls as CUPTI's table (cupti_api.h) with MUPTI's types, plus
// MUPTI's launch-attribute switch.
#pragma once
#include <string>

#include "backends/mthreads/mupti_types.h"

namespace ftp {

struct MuptiApi {
  using GetVersion = MUptiResult (*)(uint32_t*);
  using GetResultString = MUptiResult (*)(MUptiResult, const char**);
  using Subscribe = MUptiResult (*)(MUpti_SubscriberHandle*, MUpti_CallbackFunc, void*);
  using Unsubscribe = MUptiResult (*)(MUpti_SubscriberHandle);
  using EnableCallback = MUptiResult (*)(uint32_t, MUpti_SubscriberHandle, MUpti_CallbackDomain, MUpti_CallbackId);
  using GetCallbackName = MUptiResult (*)(MUpti_CallbackDomain, uint32_t, const char**);
  using RegisterCallbacks = MUptiResult (*)(MUpti_BuffersCallbackRequestFunc, MUpti_BuffersCallbackCompleteFunc);
  using ActivityKindFn = MUptiResult (*)(MUpti_ActivityKind);
  using GetNextRecord = MUptiResult (*)(uint8_t*, size_t, MUpti_Activity**);
  using GetNumDropped = MUptiResult (*)(MUcontext, uint32_t, size_t*);
  using FlushAll = MUptiResult (*)(uint32_t);
  using GetTimestamp = MUptiResult (*)(uint64_t*);
  using Finalize = MUptiResult (*)();
  using EnableLaunchAttributes = MUptiResult (*)(uint8_t);

  GetVersion getVersion = nullptr;  // optional
  GetResultString getResultString = nullptr;
  Subscribe subscribe = nullptr;
  Unsubscribe unsubscribe = nullptr;
  EnableCallback enableCallback = nullptr;
  GetCallbackName getCallbackName = nullptr;
  RegisterCallbacks registerCallbacks = nullptr;
  ActivityKindFn enable = nullptr;
  ActivityKindFn disable = nullptr;
  GetNextRecord getNextRecord = nullptr;
  GetNumDropped getNumDropped = nullptr;
  FlushAll flushAll = nullptr;
  GetTimestamp getTimestamp = nullptr;
  Finalize finalize = nullptr;                              // optional; never called (see mupti_dialect.h)
  EnableLaunchAttributes enableLaunchAttributes = nullptr;  // optional: launch geometry in kernel records

  std::string path;  // the library actually loaded
  void* handle = nullptr;

  // dlopens `path` (never closed: MUSA 4.3's libmupti can double-free when unloaded) and
  // resolves the calls. Throws LibraryNotFound naming the library and the missing call.
  void load(const std::string& path);
  std::string describe(MUptiResult result) const;
};

}  // namespace ftp
