// The few MUPTI (Moore Threads) and MUSA driver types and constants the mthreads backend uses,
// declared here from the documented interface (mupti.h, mupti_activity.h, mupti_callbacks.h and
// musa.h are not available to this build), named as the vendor names them.
//
// MUPTI mirrors CUPTI call for call, and its record and callback-data layouts mirror CUPTI's
// records of the same name and version (MUpti_ActivityKernel6 is CUpti_ActivityKernel6's
// layout, and so on); the numeric values below are CUPTI's and the CUDA driver's. That
// correspondence is documented behaviour, not yet checked on Moore Threads hardware.
#pragma once
#include <cstddef>
#include <cstdint>

typedef int MUptiResult;
enum : MUptiResult {
  MUPTI_SUCCESS = 0,
  MUPTI_ERROR_INVALID_PARAMETER = 1,
  MUPTI_ERROR_MAX_LIMIT_REACHED = 12,
  MUPTI_ERROR_NOT_INITIALIZED = 15,
  MUPTI_ERROR_NOT_SUPPORTED = 27,
  MUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
  MUPTI_ERROR_UNKNOWN = 999,
};

typedef uint32_t MUpti_ActivityKind;
enum : MUpti_ActivityKind {
  MUPTI_ACTIVITY_KIND_MEMCPY = 1,
  MUPTI_ACTIVITY_KIND_MEMSET = 2,
  MUPTI_ACTIVITY_KIND_KERNEL = 3,
  MUPTI_ACTIVITY_KIND_DRIVER = 4,
  MUPTI_ACTIVITY_KIND_RUNTIME = 5,
  MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,
};

typedef uint32_t MUpti_CallbackDomain;
enum : MUpti_CallbackDomain {
  MUPTI_CB_DOMAIN_DRIVER_API = 1,
  MUPTI_CB_DOMAIN_RUNTIME_API = 2,
  MUPTI_CB_DOMAIN_RESOURCE = 3,
  MUPTI_CB_DOMAIN_SYNCHRONIZE = 4,
  MUPTI_CB_DOMAIN_MTTX = 5,
};

typedef uint32_t MUpti_CallbackId;
typedef uint32_t MUpti_ApiCallbackSite;
enum : MUpti_ApiCallbackSite { MUPTI_API_ENTER = 0, MUPTI_API_EXIT = 1 };

enum : uint32_t { MUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 };

enum : uint8_t {
  MUPTI_ACTIVITY_MEMCPY_KIND_HTOD = 1,
  MUPTI_ACTIVITY_MEMCPY_KIND_DTOH = 2,
  MUPTI_ACTIVITY_MEMCPY_KIND_DTOD = 8,
  MUPTI_ACTIVITY_MEMCPY_KIND_HTOH = 9,
  MUPTI_ACTIVITY_MEMCPY_KIND_PTOP = 10,
};

typedef struct MUctx_st* MUcontext;
typedef struct MUfunc_st* MUfunction;
typedef struct MUstream_st* MUstream;
typedef int MUdevice;
typedef int MUresult;  // MUSA_SUCCESS = 0
typedef struct MUpti_Subscriber_st* MUpti_SubscriberHandle;

typedef void (*MUpti_CallbackFunc)(void* userdata, MUpti_CallbackDomain domain, MUpti_CallbackId cbid,
                                   const void* cbdata);
typedef void (*MUpti_BuffersCallbackRequestFunc)(uint8_t** buffer, size_t* size, size_t* maxNumRecords);
typedef void (*MUpti_BuffersCallbackCompleteFunc)(MUcontext context, uint32_t streamId, uint8_t* buffer,
                                                  size_t size, size_t validSize);

// Data of an API (driver/runtime domain) callback.
typedef struct {
  MUpti_ApiCallbackSite callbackSite;
  const char* functionName;
  const void* functionParams;
  void* functionReturnValue;
  const char* symbolName;
  MUcontext context;
  uint32_t contextUid;
  uint64_t* correlationData;
  uint32_t correlationId;
} MUpti_CallbackData;

// Activity records: 8-byte aligned and packed, as MUPTI lays them out.
#define FTP_MUPTI_RECORD __attribute__((__packed__)) __attribute__((aligned(8)))

typedef struct FTP_MUPTI_RECORD {
  MUpti_ActivityKind kind;
} MUpti_Activity;

typedef struct FTP_MUPTI_RECORD {
  MUpti_ActivityKind kind;
  uint8_t cacheConfig;
  uint8_t sharedMemoryConfig;
  uint16_t registersPerThread;
  uint32_t partitionedGlobalCacheRequested;
  uint32_t partitionedGlobalCacheExecuted;
  uint64_t start;
  uint64_t end;
  uint64_t completed;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  int32_t gridX, gridY, gridZ;
  int32_t blockX, blockY, blockZ;
  int32_t staticSharedMemory;
  int32_t dynamicSharedMemory;
  uint32_t localMemoryPerThread;
  uint32_t localMemoryTotal;
  uint32_t correlationId;
  int64_t gridId;
  const char* name;
  void* reserved0;
  uint64_t queued;
  uint64_t submitted;
  uint8_t launchType;
  uint8_t isSharedMemoryCarveoutRequested;
  uint8_t sharedMemoryCarveoutRequested;
  uint8_t padding;
  uint32_t sharedMemoryExecuted;
  uint64_t graphNodeId;
  uint32_t shmemLimitConfig;
  uint32_t graphId;
  void* pAccessPolicyWindow;
} MUpti_ActivityKernel6;

typedef struct FTP_MUPTI_RECORD {
  MUpti_ActivityKind kind;
  uint8_t copyKind;
  uint8_t srcKind;
  uint8_t dstKind;
  uint8_t flags;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  uint32_t correlationId;
  uint32_t runtimeCorrelationId;
  uint32_t pad;
  void* reserved0;
  uint64_t graphNodeId;
  uint32_t graphId;
  uint32_t padding;
} MUpti_ActivityMemcpy4;

typedef struct FTP_MUPTI_RECORD {
  MUpti_ActivityKind kind;
  uint32_t value;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  uint32_t correlationId;
  uint16_t flags;
  uint16_t memoryKind;
  uint32_t pad;
  void* reserved0;
  uint64_t graphNodeId;
  uint32_t graphId;
  uint32_t padding;
} MUpti_ActivityMemset3;

// The parameters muLaunchKernel (and muLaunchKernel_ptsz) hand to their callback.
typedef struct {
  MUfunction f;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  MUstream hStream;
  void** kernelParams;
  void** extra;
} muLaunchKernel_params;

// muFuncGetAttribute and muDeviceGetAttribute attributes used (CUDA's numbering).
enum : int {
  MU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  MU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  MU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  MU_FUNC_ATTRIBUTE_NUM_REGS = 4,
};
enum : int {
  MU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  MU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  MU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  MU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
  MU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
  MU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};
