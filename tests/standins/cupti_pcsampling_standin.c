/* A stand-in for the PC-sampling part of libcupti (cupti_pcsampling.h), for CPU tests.

   It implements the documented entry points with the documented structs; the test queues PC
   records with standin_pcs_queue() (what the hardware would have sampled) and reads what the
   profiler configured with standin_pcs_config(). Behaviour copied from the header's contract:
   - records are only handed out between Enable and Disable, collectNumPcs at a time, with
     remainingNumPcs telling how many are left;
   - only the configured stall reasons are reported (others are dropped, as CUPTI does);
   - correlationId is 0 in continuous mode, the launch's id in kernel-serialized mode;
   - Disable copies what is left into the configured sampling data buffer;
   - without start/stop control, sampling runs from Enable and GetData hands out what CUPTI's
     decoder has finished (standin_pcs_decode_delay_ms models its lag), as the H200 showed.
   A "cubin" here is text: "FAKECUBIN\n" then lines "<function> <pc_begin> <pc_end> <file> <line>";
   its CRC is FNV-1a of the bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
  uint64_t visibleAtNs; /* when the decoder hands it out */
} Queued;

static Queued queued[MAX_QUEUED];
static int numQueued, enabled, started, period, mode = 1, startStop, collected[32], numCollected;
static CUpti_PCSamplingData* userBuffer;
static uint64_t droppedTotal;
static int enables, starts, disables;
static uint64_t decodeDelayNs;

static uint64_t nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

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
  q->visibleAtNs = nowNs() + decodeDelayNs;
}
/* Records queued from now on are handed out `ms` after they were queued (CUPTI's decoder lag). */
void standin_pcs_decode_delay_ms(uint32_t ms) { decodeDelayNs = (uint64_t)ms * 1000000ull; }
/* Calls so far: Enable, Start, Disable. */
void standin_pcs_counts(int out[3]) { out[0] = enables, out[1] = starts, out[2] = disables; }
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
  enables++;
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
  starts++;
  return CUPTI_SUCCESS;
}

static void fill(CUpti_PCSamplingData* d);
static int fillAtStop, flushAll; /* flushAll: Stop/Disable hand out everything, decoded or not */
/* 1: Stop flushes the range into the configured buffer, as Disable does (what Proton's read order implies). */
void standin_pcs_fill_at_stop(int on) { fillAtStop = on; }

CUptiResult cuptiPCSamplingStop(CUpti_PCSamplingStopParams* p) {
  if (!started) return CUPTI_ERROR_INVALID_OPERATION;
  started = 0;
  flushAll = 1;
  if (fillAtStop && userBuffer) fill(userBuffer);
  flushAll = 0;
  return CUPTI_SUCCESS;
}

/* Hands out queued records as PC records: one record per queued entry (one stall reason each). */
static void fill(CUpti_PCSamplingData* d) {
  size_t n = 0;
  uint64_t total = 0;
  int i = 0;
  const uint64_t now = nowNs();
  for (; i < numQueued && n < d->collectNumPcs; ++i) {
    Queued* q = &queued[i];
    if (q->visibleAtNs > now && !flushAll) break; /* not decoded yet: the rest come later */
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
  size_t decoded = 0; /* what the next call could hand out: decoded records only */
  while (decoded < (size_t)numQueued && (flushAll || queued[decoded].visibleAtNs <= now)) decoded++;
  d->remainingNumPcs = decoded;
  d->totalSamples = total;
  d->droppedSamples = droppedTotal;
  droppedTotal = 0;
  d->hardwareBufferFull = 0;
}

static int holdOpenRange;
/* 1: GetData hands out nothing while a Start-ed range is open: samples arrive at the range end
   (Stop or Disable), as the H200 showed (issue 18). Without start/stop control GetData does hand
   out what was decoded (H200, bench/results/pcsampling-20261201-kept.log). */
void standin_pcs_hold_open_range(int on) { holdOpenRange = on; }

CUptiResult cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams* p) {
  if (!enabled) return CUPTI_ERROR_INVALID_OPERATION;
  CUpti_PCSamplingData* d = (CUpti_PCSamplingData*)p->pcSamplingData;
  if (holdOpenRange && started) {
    d->totalNumPcs = d->remainingNumPcs = 0;
    d->totalSamples = d->droppedSamples = 0;
    return CUPTI_SUCCESS;
  }
  fill(d);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams* p) {
  if (!enabled) return CUPTI_ERROR_INVALID_OPERATION;
  flushAll = 1;
  if (userBuffer) fill(userBuffer);
  flushAll = 0;
  enabled = 0;
  disables++;
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

/* What the profiler's end marker kernel would leave in the hardware buffer (PC sampling kept
   enabled, backends/pcsampling/pc_marker.h): a few samples of its function, queued behind
   everything sampled before it. The _silent variant launches but is never sampled. */
_Bool standin_pcs_end_marker(void) {
  standin_pcs_queue(0, 0x6d61726bull, "flagtree_pcsampling_end_marker", 0, 3, 5);
  return 1;
}
_Bool standin_pcs_end_marker_silent(void) { return 1; }
