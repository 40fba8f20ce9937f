// The roctracer (AMD) C interface, declared here from its public documentation (roctracer.h,
// roctracer_ext.h, ext/prof_protocol.h, roctracer_hip.h; interface version 4.1) so that the
// build needs no ROCm headers, and resolved with dlsym from libroctracer64.so at run time.
// Only the pieces this backend uses are declared.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ftp {
namespace roc {

// roctracer_status_t: 0 is success, negative values are errors.
using Status = int32_t;
constexpr Status kSuccess = 0;
constexpr Status kErrorDefaultPoolAlreadyDefined = -5;

// activity_domain_t (ext/prof_protocol.h).
constexpr uint32_t kDomainHipOps = 2;  // ACTIVITY_DOMAIN_HIP_OPS: asynchronous kernels and copies
constexpr uint32_t kDomainHipApi = 3;  // ACTIVITY_DOMAIN_HIP_API: HIP runtime API callbacks

// activity_api_phase_t.
constexpr uint32_t kPhaseEnter = 0;
constexpr uint32_t kPhaseExit = 1;

// hip_op_id_t (roctracer_hip.h): the `op` of a HIP_OPS record.
constexpr uint32_t kHipOpDispatch = 0;
constexpr uint32_t kHipOpCopy = 1;
constexpr uint32_t kHipOpBarrier = 2;

// activity_record_t (ext/prof_protocol.h), the LP64 layout:
//   0 domain u32, 4 kind u32, 8 op u32, 16 correlation_id u64, 24 begin_ns u64, 32 end_ns u64,
//   40 device_id int, 48 queue_id u64, 56 bytes size_t | kernel_name const char*  (64 bytes).
struct Record {
  uint32_t domain;
  uint32_t kind;
  uint32_t op;
  uint64_t correlation_id;
  uint64_t begin_ns;
  uint64_t end_ns;
  int32_t device_id;
  uint64_t queue_id;
  union {
    size_t bytes;
    const char* kernel_name;
  };
};
static_assert(sizeof(Record) == 64, "activity_record_t is 64 bytes on LP64");
static_assert(offsetof(Record, correlation_id) == 16 && offsetof(Record, device_id) == 40 &&
                  offsetof(Record, queue_id) == 48,
              "activity_record_t field offsets");

// The leading fields of hip_api_data_t, the `data` of a HIP_API callback (the per-API
// argument union follows and is not read).
struct HipApiData {
  uint64_t correlation_id;
  uint32_t phase;
};

using ApiCallback = void (*)(uint32_t domain, uint32_t cid, const void* data, void* arg);
using BufferCallback = void (*)(const char* begin, const char* end, void* arg);
using Allocator = void (*)(char** ptr, size_t size, void* arg);

// roctracer_properties_t.
struct Properties {
  uint32_t mode;
  size_t buffer_size;
  Allocator alloc_fun;
  void* alloc_arg;
  BufferCallback buffer_callback_fun;
  void* buffer_callback_arg;
};

}  // namespace roc

struct RoctracerApi {
  using VersionFn = uint32_t (*)();
  using ErrorStringFn = const char* (*)();
  using OpStringFn = const char* (*)(uint32_t domain, uint32_t op, uint32_t kind);
  using EnableOpCallbackFn = roc::Status (*)(uint32_t domain, uint32_t op, roc::ApiCallback, void*);
  using EnableDomainCallbackFn = roc::Status (*)(uint32_t domain, roc::ApiCallback, void*);
  using DisableOpCallbackFn = roc::Status (*)(uint32_t domain, uint32_t op);
  using DomainFn = roc::Status (*)(uint32_t domain);
  using NextRecordFn = roc::Status (*)(const roc::Record*, const roc::Record**);
  using OpenPoolFn = roc::Status (*)(const roc::Properties*);
  using VoidStatusFn = roc::Status (*)();
  using StartStopFn = void (*)();
  using TimestampFn = roc::Status (*)(uint64_t*);

  VersionFn versionMajor = nullptr;  // optional (interface 4.1)
  VersionFn versionMinor = nullptr;  // optional
  ErrorStringFn errorString = nullptr;
  OpStringFn opString = nullptr;
  EnableOpCallbackFn enableOpCallback = nullptr;
  EnableDomainCallbackFn enableDomainCallback = nullptr;
  DisableOpCallbackFn disableOpCallback = nullptr;
  DomainFn disableDomainCallback = nullptr;
  NextRecordFn nextRecord = nullptr;
  OpenPoolFn openPool = nullptr;
  VoidStatusFn closePool = nullptr;
  DomainFn enableDomainActivity = nullptr;
  DomainFn disableDomainActivity = nullptr;
  VoidStatusFn flushActivity = nullptr;
  TimestampFn getTimestamp = nullptr;  // optional: without it the record clock is taken as monotonic
  StartStopFn start = nullptr;         // optional (roctracer_ext.h)
  StartStopFn stop = nullptr;          // optional

  std::string path;  // the library actually loaded
  void* handle = nullptr;

  // dlopens `path` and resolves the roctracer_* functions. Throws LibraryNotFound naming the
  // library and the missing function (core/library.h).
  void load(const std::string& path);
  // "roctracer_open_pool failed in <lib>: <roctracer_error_string> (status -5)".
  std::string failure(const char* call, roc::Status status) const;
};

}  // namespace ftp
