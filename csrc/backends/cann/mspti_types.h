// The few MSPTI (Huawei Ascend) and mstx types and constants the cann backend uses, declared
// here from the documented headers (mspti_activity.h, mspti_callback.h, mspti_cbid.h,
// mspti_result.h, ms_tools_ext.h are not available to this build), named as the vendor names
// them. Records are packed and 8-byte aligned, as mspti_activity.h declares them.
#pragma once
#include <cstddef>
#include <cstdint>

typedef int msptiResult;
enum : msptiResult {
  MSPTI_SUCCESS = 0,
  MSPTI_ERROR_INVALID_PARAMETER = 1,
  MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 2,
  MSPTI_ERROR_MAX_LIMIT_REACHED = 3,
  MSPTI_ERROR_DEVICE_OFFLINE = 4,
  MSPTI_ERROR_QUEUE_EMPTY = 5,
  MSPTI_ERROR_INNER = 999,
};

typedef uint32_t msptiActivityKind;
enum : msptiActivityKind {
  MSPTI_ACTIVITY_KIND_MARKER = 1,
  MSPTI_ACTIVITY_KIND_KERNEL = 2,
  MSPTI_ACTIVITY_KIND_API = 3,
  MSPTI_ACTIVITY_KIND_HCCL = 4,
  MSPTI_ACTIVITY_KIND_MEMORY = 5,
  MSPTI_ACTIVITY_KIND_MEMSET = 6,
  MSPTI_ACTIVITY_KIND_MEMCPY = 7,
  MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION = 8,
  MSPTI_ACTIVITY_KIND_COMMUNICATION = 9,
};

typedef uint32_t msptiCallbackDomain;
enum : msptiCallbackDomain { MSPTI_CB_DOMAIN_INVALID = 0, MSPTI_CB_DOMAIN_RUNTIME = 1, MSPTI_CB_DOMAIN_HCCL = 2 };

typedef uint32_t msptiCallbackId;
enum : msptiCallbackId {
  MSPTI_CBID_RUNTIME_LAUNCH = 10,
  MSPTI_CBID_RUNTIME_CPU_LAUNCH = 11,
  MSPTI_CBID_RUNTIME_AICPU_LAUNCH = 12,
  MSPTI_CBID_RUNTIME_AIV_LAUNCH = 13,
  MSPTI_CBID_RUNTIME_FFTS_LAUNCH = 14,
  MSPTI_CBID_RUNTIME_MEMCPY_ASYNC = 24,
};

typedef uint32_t msptiApiCallbackSite;
enum : msptiApiCallbackSite { MSPTI_API_ENTER = 0, MSPTI_API_EXIT = 1 };

enum : uint32_t {
  MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS = 1,
  MSPTI_ACTIVITY_FLAG_MARKER_START = 2,
  MSPTI_ACTIVITY_FLAG_MARKER_END = 4,
};

enum : uint32_t {
  MSPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN = 0,
  MSPTI_ACTIVITY_MEMCPY_KIND_HTOH = 1,
  MSPTI_ACTIVITY_MEMCPY_KIND_HTOD = 2,
  MSPTI_ACTIVITY_MEMCPY_KIND_DTOH = 3,
  MSPTI_ACTIVITY_MEMCPY_KIND_DTOD = 4,
  MSPTI_ACTIVITY_MEMCPY_KIND_DEFAULT = 5,
};

constexpr uint32_t kMsptiInvalidId = 0xFFFFFFFFu;  // device/stream id "unknown"

typedef struct msptiSubscriber_st* msptiSubscriberHandle;

typedef struct {
  msptiApiCallbackSite callbackSite;
  const char* functionName;
  const void* functionParams;
  const void* functionReturnValue;
  const char* symbolName;
  uint64_t correlationId;
  uint64_t reserved1;
  uint64_t reserved2;
  uint64_t* correlationData;
} msptiCallbackData;

typedef void (*msptiCallbackFunc)(void* userdata, msptiCallbackDomain domain, msptiCallbackId cbid,
                                  const msptiCallbackData* cbdata);
typedef void (*msptiBuffersCallbackRequestFunc)(uint8_t** buffer, size_t* size, size_t* maxNumRecords);
typedef void (*msptiBuffersCallbackCompleteFunc)(uint8_t* buffer, size_t size, size_t validSize);

#define FTP_MSPTI_RECORD __attribute__((__packed__)) __attribute__((aligned(8)))

typedef struct FTP_MSPTI_RECORD {
  msptiActivityKind kind;
} msptiActivity;

typedef struct FTP_MSPTI_RECORD {
  msptiActivityKind kind;
  uint64_t start;  // ns; start == end == 0: not known
  uint64_t end;
  struct {
    uint32_t deviceId;
    uint32_t streamId;
  } ds;
  uint64_t correlationId;
  const char* type;
  const char* name;
} msptiActivityKernel;

typedef struct FTP_MSPTI_RECORD {
  msptiActivityKind kind;
  uint32_t copyKind;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t streamId;
  uint64_t correlationId;
  uint8_t isAsync;
} msptiActivityMemcpy;

typedef struct FTP_MSPTI_RECORD {
  msptiActivityKind kind;
  uint32_t value;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t streamId;
  uint64_t correlationId;
  uint8_t isAsync;
} msptiActivityMemset;

typedef struct FTP_MSPTI_RECORD {
  msptiActivityKind kind;
  uint32_t flag;
  uint32_t sourceKind;  // 0 host, 1 device
  uint64_t timestamp;
  uint64_t id;
  union {
    struct {
      uint32_t processId;
      uint32_t threadId;
    } pt;
    struct {
      uint32_t deviceId;
      uint32_t streamId;
    } ds;
  } objectId;
  const char* name;
  const char* domain;
} msptiActivityMarker;

// mstx (ms_tools_ext.h): range ids are uint64, 0 invalid.
typedef struct mstxDomainRegistration_st* mstxDomainHandle_t;
