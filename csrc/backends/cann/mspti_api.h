// The function table of libmspti (Huawei Ascend), resolved with dlsym at run time under the
// prefix "mspti". The calls mirror CUPTI's, except that the buffer-complete callback carries no
// context or stream and there is no callback-name look-up (launch ids are fixed numbers).
#pragma once
#include <string>

#include "backends/cann/mspti_types.h"

namespace ftp {

struct MsptiApi {
  using Subscribe = msptiResult (*)(msptiSubscriberHandle*, msptiCallbackFunc, void*);
  using Unsubscribe = msptiResult (*)(msptiSubscriberHandle);
  using EnableCallback = msptiResult (*)(uint32_t, msptiSubscriberHandle, msptiCallbackDomain, msptiCallbackId);
  using RegisterCallbacks = msptiResult (*)(msptiBuffersCallbackRequestFunc, msptiBuffersCallbackCompleteFunc);
  using ActivityKindFn = msptiResult (*)(msptiActivityKind);
  using GetNextRecord = msptiResult (*)(uint8_t*, size_t, msptiActivity**);
  using GetNumDropped = msptiResult (*)(void*, uint32_t, size_t*);
  using FlushAll = msptiResult (*)(uint32_t);
  using GetTimestamp = msptiResult (*)(uint64_t*);
  using GetVersion = msptiResult (*)(uint32_t*);
  using Finalize = msptiResult (*)();

  Subscribe subscribe = nullptr;
  Unsubscribe unsubscribe = nullptr;
  EnableCallback enableCallback = nullptr;
  RegisterCallbacks registerCallbacks = nullptr;
  ActivityKindFn enable = nullptr;
  ActivityKindFn disable = nullptr;
  GetNextRecord getNextRecord = nullptr;
  FlushAll flushAll = nullptr;
  GetNumDropped getNumDropped = nullptr;  // optional (older CANN)
  GetTimestamp getTimestamp = nullptr;    // optional: without it MSPTI's clock is taken as the host's
  GetVersion getVersion = nullptr;        // not part of MSPTI's interface: always null
  Finalize finalize = nullptr;            // likewise

  std::string path;  // the library actually loaded
  void* handle = nullptr;

  // dlopens `path` (never closed) and resolves the calls. Throws LibraryNotFound naming the
  // library and the missing call.
  void load(const std::string& path);
  std::string describe(msptiResult result) const;
};

}  // namespace ftp
