/* A stand-in for the PC-sampling part of libcupti (cupti_pcsampling.h), for CPU tests.

   It implements the documented entry points with the documented structs; the test queues PC
   records with standin_pcs_queue() (what the hardware would have sampled) and reads what the
   profiler configured with standin_pcs_config(). Behaviour copied from the header's contract:
   - records are only handed out between Enable and Disable, collectNumPcs at a time, with
     remainingNumPcs telling how many are left;
   - only the configured stall reasons are reported (others are dropped, as CUPTI does);
   - correlationId is 0 in continuous mode, the launch's id in kernel-serialized mode;
   - Disable copies what is left into the configured sampling data buffer.
   A "cubin" here is text: "FAKECUBIN\n" then lines "<function> <pc_begin> <pc_end> <file> <line>";
   its CRC is FNV-1a of the bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_pcsampling.h>

#define MAX_QUEUED 4096
#define NUM_REASONS 6

static const char* kReasons[NUM_REASONS] = {
    "smsp__pcsamp_warps_issue_stalled_selected", "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued", "smsp__pcsamp_warps_issue_stalled_barrier",
    "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle", "smsp__pcsamp_sample_count"};
static const uint32_t kReasonIndex[NUM_REASONS] = {3, 7, 8, 11, 20, 0};

typedef struct {
  uint32_t correlation;
  uint64_t crc;
  char function[64];
  uint64_t pc;
  uint32_t reason;
  uint32_t samples;
} Queued;

static Queued queued[MAX_QUEUED];
static int numQueued, enabled, started, period, mode = 1, startStop, collected[32], numCollected;
static CUpti_PCSamplingData* userBuffer;
static uint64_t droppedTotal;

CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_STANDIN";
  return CUPTI_SUCCESS;
}

/* Test controls. */
void standin_pcs_queue(uint32_t correlation, uint64_t crc, const char* function, uint64_t pc, uint32_t reason,
                       uint32_t samples) {
  if (numQueued == MAX_QUEUED) return;
  Queued* q = &queued[numQueued++];
  q->correlation = correlation;
  q->crc = crc;
  snprintf(q->function, sizeof(q->function), "%s", function);
  q->pc = pc;
  q->reason = reason;
  q->samples = samples;
}
void standin_pcs_set_dropped(uint64_t dropped) { droppedTotal = dropped; }
/* enabled, started, period, mode, startStop, number of collected reasons */
void standin_pcs_config(int out[6]) {
  out[0] = enabled, out[1] = started, out[2] = period, out[3] = mode, out[4] = startStop, out[5] = numCollected;
}

static int reasonCollected(uint32_t index) {
  for (int i = 0; i < numCollected; ++i)
    if ((uint32_t)collected[i] == index) return 1;
  return 0;
}

CUptiResult cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams* p) {
  if (!p || p->size != CUpti_PCSamplingEnableParamsSize || !p->ctx) return CUPTI_ERROR_INVALID_PARAMETER;
  enabled = 1;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams* p) {
  if (!enabled) return CUPTI_ERROR_INVALID_OPERATION;
  *p->numStallReasons = NUM_REASONS;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams* p) {
  if (p->numStallReasons != NUM_REASONS) return CUPTI_ERROR_INVALID_PARAMETER;
  for (int i = 0; i < NUM_REASONS; ++i) {
    p->stallReasonIndex[i] = kReasonIndex[i];
    snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s", kReasons[i]);
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams* p) {
  if (!enabled) return CUPTI_ERROR_INVALID_OPERATION;
  for (size_t i = 0; i < p->numAttributes; ++i) {
    CUpti_PCSamplingConfigurationInfo* info = &p->pPCSamplingConfigurationInfo[i];
    switch (info->attributeType) {
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
        if (info->attributeData.samplingPeriodData.samplingPeriod < 5 ||
            info->attributeData.samplingPeriodData.samplingPeriod > 31)
          return CUPTI_ERROR_INVALID_PARAMETER;
        period = (int)info->attributeData.samplingPeriodData.samplingPeriod;
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON:
        numCollected = (int)info->attributeData.stallReasonData.stallReasonCount;
        for (int r = 0; r < numCollected && r < 32; ++r)
          collected[r] = (int)info->attributeData.stallReasonData.pStallReasonIndex[r];
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
        mode = info->attributeData.collectionModeData.collectionMode;
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
        startStop = (int)info->attributeData.enableStartStopControlData.enableStartStopControl;
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
        userBuffer = (CUpti_PCSamplingData*)info->attributeData.samplingDataBufferData.samplingDataBuffer;
        break;
      default:
        break;
    }
    info->attributeStatus = CUPTI_SUCCESS;
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingStart(CUpti_PCSamplingStartParams* p) {
  if (!enabled || !startStop) return CUPTI_ERROR_INVALID_OPERATION;
  started = 1;
  return CUPTI_SUCCESS;
}

static void fill(CUpti_PCSamplingData* d);
static int fillAtStop;
/* 1: Stop flushes the range into the configured buffer, as Disable does (what Proton's read order implies). */
void standin_pcs_fill_at_stop(int on) { fillAtStop = on; }

CUptiResult cuptiPCSamplingStop(CUpti_PCSamplingStopParams* p) {
  if (!started) return CUPTI_ERROR_INVALID_OPERATION;
  started = 0;
  if (fillAtStop && userBuffer) fill(userBuffer);
  return CUPTI_SUCCESS;
}

/* Hands out queued records as PC records: one record per queued entry (one stall reason each). */
static void fill(CUpti_PCSamplingData* d) {
  size_t n = 0;
  uint64_t total = 0;
  int i = 0;
  for (; i < numQueued && n < d->collectNumPcs; ++i) {
    Queued* q = &queued[i];
    total += q->samples;
    if (!reasonCollected(q->reason)) continue;
    CUpti_PCSamplingPCData* pc = &d->pPcData[n++];
    pc->cubinCrc = q->crc;
    pc->pcOffset = q->pc;
    pc->functionIndex = 0;
    pc->functionName = q->function; /* CUPTI shares these strings too */
    pc->correlationId = mode == CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED ? q->correlation : 0;
    pc->stallReasonCount = 1;
    pc->stallReason[0].pcSamplingStallReasonIndex = q->reason;
    pc->stallReason[0].samples = q->samples;
  }
  memmove(queued, queued + i, (size_t)(numQueued - i) * sizeof(Queued));
  numQueued -= i;
  d->totalNumPcs = n;
  d->remainingNumPcs = (size_t)numQueued;
  d->totalSamples = total;
  d->droppedSamples = droppedTotal;
  droppedTotal = 0;
  d->hardwareBufferFull = 0;
}

static int holdOpenRange;
/* 1: GetData hands out nothing while a range is open (started, or enabled without start/stop
   control): samples arrive at the range end (Stop or Disable), as the H200 does. */
void standin_pcs_hold_open_range(int on) { holdOpenRange = on; }

CUptiResult cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams* p) {
  if (!enabled) return CUPTI_ERROR_INVALID_OPERATION;
  CUpti_PCSamplingData* d = (CUpti_PCSamplingData*)p->pcSamplingData;
  if (holdOpenRange && (started || !startStop)) {
    d->totalNumPcs = d->remainingNumPcs = 0;
    d->totalSamples = d->droppedSamples = 0;
    return CUPTI_SUCCESS;
  }
  fill(d);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams* p) {
  if (!enabled) return CUPTI_ERROR_INVALID_OPERATION;
  if (userBuffer) fill(userBuffer);
  enabled = 0;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetCubinCrc(CUpti_GetCubinCrcParams* p) {
  if (!p->cubin || !p->cubinSize) return CUPTI_ERROR_INVALID_PARAMETER;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < p->cubinSize; ++i) h = (h ^ ((const unsigned char*)p->cubin)[i]) * 1099511628211ull;
  p->cubinCrc = h;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetSassToSourceCorrelation(CUpti_GetSassToSourceCorrelationParams* p) {
  if (!p->cubin || !p->functionName || !p->cubinSize || p->size != CUpti_GetSassToSourceCorrelationParamsSize)
    return CUPTI_ERROR_INVALID_PARAMETER;
  char* text = strndup((const char*)p->cubin, p->cubinSize);
  if (strncmp(text, "FAKECUBIN\n", 10) != 0) {
    free(text);
    return CUPTI_ERROR_INVALID_MODULE;
  }
  CUptiResult rc = CUPTI_ERROR_UNKNOWN; /* what CUPTI returns for a function not in the module */
  char* save = NULL;
  for (char* line = strtok_r(text + 10, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char function[64], file[256];
    unsigned long long begin, end;
    unsigned number;
    if (sscanf(line, "%63s %llu %llu %255s %u", function, &begin, &end, file, &number) != 5) continue;
    if (strcmp(function, p->functionName) || p->pcOffset < begin || p->pcOffset >= end) continue;
    char* slash = strrchr(file, '/');
    p->lineNumber = number;
    p->fileName = strdup(slash ? slash + 1 : file);
    p->dirName = slash ? strndup(file, (size_t)(slash - file)) : strdup("");
    rc = CUPTI_SUCCESS;
    break;
  }
  free(text);
  return rc;
}
