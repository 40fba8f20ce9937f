/* Stand-in for the part of libcupti the counters backend calls: the Profiler Host API
 * (cupti_profiler_host.h), the Range Profiler API (cupti_range_profiler.h), cuptiProfilerInitialize,
 * cuptiProfilerGetCounterAvailability and cuptiDeviceGetChipName, with their documented semantics:
 *   - the host object knows a chip's metrics (base name + rollup/submetric suffix); unknown names
 *     fail in GetMetricProperties and ConfigAddMetrics with CUPTI_ERROR_INVALID_METRIC_NAME;
 *   - passes = metrics (distinct base counters) / metrics per pass, rounded up;
 *   - with the range profiler enabled on a context, configured (auto range, kernel replay) and
 *     started, each kernel launch on that context is one range, in launch order; at most
 *     maxRangesPerPass ranges per Start..Stop, the rest are dropped and reported by DecodeData;
 *   - DecodeData (after Stop) writes the ranges into the caller's counter data image, which holds
 *     at most maxNumOfRanges ranges; GetCounterDataInfo / GetRangeInfo / EvaluateToGpuValues read it.
 * The "hardware" is the test: standin_set_value(metric, v) sets what the next launches measure,
 * standin_launch(ctx, kernel) is a kernel running on the GPU. Built without the Range Profiler
 * symbols (-DSTANDIN_NO_RANGE_PROFILER) it stands for a CUPTI older than 12.6. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUptiResult;
enum { OK = 0, INVALID_PARAMETER = 1, INVALID_OPERATION = 7, NOT_INITIALIZED = 15, INVALID_METRIC_NAME = 17 };

#define NAME_LEN 128
#define MAX_METRICS 32
#define MAX_VALUES 64
#define MAX_OBJECTS 8

/* ---- params structs: the field order of the CUDA 13.0 headers ---- */
typedef struct { size_t structSize; void* pPriv; } Initialize_Params;
typedef struct { size_t structSize; void* pPriv; size_t deviceIndex; const char* pChipName; } ChipName_Params;
typedef struct { size_t structSize; void* pPriv; void* ctx; size_t size; uint8_t* pImage; } Availability_Params;
typedef struct HostObject HostObject;
typedef struct { size_t structSize; void* pPriv; int profilerType; const char* pChipName;
                 const uint8_t* pCounterAvailabilityImage; HostObject* pHostObject; } HostInit_Params;
typedef struct { size_t structSize; void* pPriv; HostObject* pHostObject; } HostDeinit_Params;
typedef struct { size_t structSize; void* pPriv; size_t numChips; const char* const* ppChipNames; } Chips_Params;
typedef struct { size_t structSize; void* pPriv; HostObject* pHostObject; int metricType;
                 const char** ppMetricNames; size_t numMetrics; } BaseMetrics_Params;
typedef struct { size_t structSize; void* pPriv; HostObject* pHostObject; int metricType; const char* pMetricName;
                 size_t numOfSubmetrics; const char** ppSubMetrics; } SubMetrics_Params;
typedef struct { size_t structSize; void* pPriv; HostObject* pHostObject; const char* pMetricName;
                 const char* pDescription; const char* pHwUnit; const char* pDimUnit; int metricType; } Props_Params;
typedef struct { size_t structSize; void* pPriv; HostObject* pHostObject; const char** ppMetricNames;
                 size_t numMetrics; } AddMetrics_Params;
typedef struct { size_t structSize; void* pPriv; HostObject* pHostObject; size_t configImageSize; } ConfigSize_Params;
typedef struct { size_t structSize; void* pPriv; HostObject* pHostObject; size_t configImageSize;
                 uint8_t* pConfigImage; } ConfigImage_Params;
typedef struct { size_t structSize; void* pPriv; size_t configImageSize; uint8_t* pConfigImage;
                 size_t numOfPasses; } Passes_Params;
typedef struct { size_t structSize; void* pPriv; HostObject* pHostObject; const uint8_t* pCounterDataImage;
                 size_t counterDataImageSize; size_t rangeIndex; const char** ppMetricNames; size_t numMetrics;
                 double* pMetricValues; } Evaluate_Params;
typedef struct RangeObject RangeObject;
typedef struct { size_t structSize; void* pPriv; void* ctx; RangeObject* pRangeProfilerObject; } Enable_Params;
typedef struct { size_t structSize; void* pPriv; RangeObject* pRangeProfilerObject; } Object_Params;
typedef struct { size_t structSize; void* pPriv; RangeObject* pRangeProfilerObject; size_t passIndex;
                 size_t targetNestingLevel; uint8_t isAllPassSubmitted; } Stop_Params;
typedef struct { size_t structSize; void* pPriv; RangeObject* pRangeProfilerObject; size_t configSize;
                 const uint8_t* pConfig; size_t counterDataImageSize; uint8_t* pCounterDataImage; int range;
                 int replayMode; size_t maxRangesPerPass; uint16_t numNestingLevels; uint16_t minNestingLevel;
                 size_t passIndex; uint16_t targetNestingLevel; } SetConfig_Params;
typedef struct { size_t structSize; void* pPriv; RangeObject* pRangeProfilerObject; size_t numOfRangeDropped; } Decode_Params;
typedef struct { size_t structSize; void* pPriv; RangeObject* pRangeProfilerObject; const char** pMetricNames;
                 size_t numMetrics; size_t maxNumOfRanges; uint32_t maxNumRangeTreeNodes;
                 size_t counterDataSize; } DataSize_Params;
typedef struct { size_t structSize; void* pPriv; RangeObject* pRangeProfilerObject; size_t counterDataSize;
                 uint8_t* pCounterData; } DataInit_Params;
typedef struct { size_t structSize; void* pPriv; const uint8_t* pCounterDataImage; size_t counterDataImageSize;
                 size_t numTotalRanges; } DataInfo_Params;
typedef struct { size_t structSize; void* pPriv; const uint8_t* pCounterDataImage; size_t counterDataImageSize;
                 size_t rangeIndex; const char* rangeDelimiter; const char* rangeName; } RangeInfo_Params;

/* ---- the chip's metrics ---- */
enum { COUNTER = 0, RATIO = 1, THROUGHPUT = 2 };
static const char* kCounters[] = {"dram__bytes_read", "dram__bytes_write", "gpu__time_duration",
                                  "sm__warps_active", "sm__inst_executed", "lts__t_bytes"};
static const char* kRatios[] = {"sm__average_warp_latency"};
static const char* kThroughputs[] = {"sm__throughput", "dram__throughput"};
static const char* kSuffixes[] = {".sum", ".avg", ".max", ".min", ".sum.per_second",
                                  ".avg.pct_of_peak_sustained_active", ".avg.pct_of_peak_sustained_elapsed"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int g_initialized = 0;
static int g_metrics_per_pass = 4;
static int g_numeric_range_names = 0;
static char g_chip[32] = "GH100";
static char g_value_names[MAX_VALUES][NAME_LEN];
static double g_values[MAX_VALUES];
static int g_num_values = 0;
static int g_decodes = 0, g_enables = 0, g_disables = 0, g_starts = 0;

static int base_type(const char* name, size_t len) {
  for (size_t i = 0; i < COUNT(kCounters); ++i)
    if (strlen(kCounters[i]) == len && !strncmp(kCounters[i], name, len)) return COUNTER;
  for (size_t i = 0; i < COUNT(kRatios); ++i)
    if (strlen(kRatios[i]) == len && !strncmp(kRatios[i], name, len)) return RATIO;
  for (size_t i = 0; i < COUNT(kThroughputs); ++i)
    if (strlen(kThroughputs[i]) == len && !strncmp(kThroughputs[i], name, len)) return THROUGHPUT;
  return -1;
}

/* The metric type of a full name (base + optional known suffix), -1 when unknown. */
static int metric_type(const char* name) {
  if (!name) return -1;
  const char* dot = strchr(name, '.');
  size_t len = dot ? (size_t)(dot - name) : strlen(name);
  int type = base_type(name, len);
  if (type < 0 || !dot) return type;
  for (size_t i = 0; i < COUNT(kSuffixes); ++i)
    if (!strcmp(dot, kSuffixes[i])) return type;
  return -1;
}

struct HostObject {
  char chip[32];
  char metrics[MAX_METRICS][NAME_LEN];
  int num;
};

/* Config image and counter data image layouts (private to this library, as in CUPTI). */
typedef struct { uint32_t magic; uint32_t num; char metrics[MAX_METRICS][NAME_LEN]; } ConfigImage;
typedef struct { uint32_t magic; uint32_t maxRanges; uint32_t numRanges; uint32_t num;
                 char metrics[MAX_METRICS][NAME_LEN]; } DataHeader;
typedef struct { char name[NAME_LEN]; double values[MAX_METRICS]; } DataRange;
#define CONFIG_MAGIC 0xC0F1u
#define DATA_MAGIC 0xDA7Au

typedef struct { char name[NAME_LEN]; double values[MAX_METRICS]; } Pending;

struct RangeObject {
  void* ctx;
  int inUse, configured, started;
  const char* metrics[MAX_METRICS];  /* from GetCounterDataSize */
  char metricStore[MAX_METRICS][NAME_LEN];
  int num;
  ConfigImage config;
  uint8_t* image;
  size_t imageSize;
  size_t maxRangesPerPass;
  Pending* pending;
  size_t numPending, dropped;
  unsigned launches;
};
static struct RangeObject g_objects[MAX_OBJECTS];

/* ---- control (tests) ---- */
void standin_set_value(const char* metric, double value) {
  for (int i = 0; i < g_num_values; ++i)
    if (!strcmp(g_value_names[i], metric)) { g_values[i] = value; return; }
  if (g_num_values < MAX_VALUES) {
    snprintf(g_value_names[g_num_values], NAME_LEN, "%s", metric);
    g_values[g_num_values++] = value;
  }
}
void standin_clear_values(void) { g_num_values = 0; }
void standin_set_metrics_per_pass(int n) { g_metrics_per_pass = n > 0 ? n : 1; }
void standin_set_numeric_range_names(int on) { g_numeric_range_names = on; }
void standin_set_chip(const char* chip) { snprintf(g_chip, sizeof g_chip, "%s", chip); }
int standin_decodes(void) { return g_decodes; }
int standin_enables(void) { return g_enables; }
int standin_disables(void) { return g_disables; }
int standin_starts(void) { return g_starts; }
int standin_enabled_objects(void) {
  int n = 0;
  for (int i = 0; i < MAX_OBJECTS; ++i) n += g_objects[i].inUse;
  return n;
}
void standin_reset(void) {
  for (int i = 0; i < MAX_OBJECTS; ++i) { free(g_objects[i].pending); memset(&g_objects[i], 0, sizeof g_objects[i]); }
  g_decodes = g_enables = g_disables = g_starts = 0;
  g_num_values = 0;
  g_metrics_per_pass = 4;
  g_numeric_range_names = 0;
  snprintf(g_chip, sizeof g_chip, "GH100");
}

static double current_value(const char* metric) {
  for (int i = 0; i < g_num_values; ++i)
    if (!strcmp(g_value_names[i], metric)) return g_values[i];
  return 0.0;
}

/* A kernel runs on `ctx`: one range if the range profiler is started there. Returns 1 if recorded
 * (or dropped for lack of room in the pass), 0 when nothing profiles that context. */
int standin_launch(void* ctx, const char* kernel) {
  for (int i = 0; i < MAX_OBJECTS; ++i) {
    RangeObject* o = &g_objects[i];
    if (!o->inUse || o->ctx != ctx || !o->started) continue;
    unsigned index = o->launches++;
    if (o->numPending >= o->maxRangesPerPass) { o->dropped++; return 1; }
    Pending* p = &o->pending[o->numPending++];
    if (g_numeric_range_names) snprintf(p->name, NAME_LEN, "%u", index);
    else snprintf(p->name, NAME_LEN, "%s", kernel);
    for (uint32_t m = 0; m < o->config.num; ++m) p->values[m] = current_value(o->config.metrics[m]);
    return 1;
  }
  return 0;
}

/* ---- CUPTI ---- */
CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  switch (result) {
    case OK: *str = "CUPTI_SUCCESS"; break;
    case INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case INVALID_OPERATION: *str = "CUPTI_ERROR_INVALID_OPERATION"; break;
    case NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case INVALID_METRIC_NAME: *str = "CUPTI_ERROR_INVALID_METRIC_NAME"; break;
    default: *str = "CUPTI_ERROR_UNKNOWN";
  }
  return OK;
}

CUptiResult cuptiProfilerInitialize(Initialize_Params* p) { (void)p; g_initialized = 1; return OK; }
CUptiResult cuptiProfilerDeInitialize(Initialize_Params* p) { (void)p; g_initialized = 0; return OK; }

CUptiResult cuptiDeviceGetChipName(ChipName_Params* p) {
  if (!g_initialized) return NOT_INITIALIZED;
  p->pChipName = g_chip;
  return OK;
}

CUptiResult cuptiProfilerGetCounterAvailability(Availability_Params* p) {
  if (!g_initialized) return NOT_INITIALIZED;
  if (!p->pImage) { p->size = 64; return OK; }
  if (p->size < 64) return INVALID_PARAMETER;
  memset(p->pImage, 0xA5, 64);
  return OK;
}

CUptiResult cuptiProfilerHostInitialize(HostInit_Params* p) {
  if (!p->pChipName || strcmp(p->pChipName, g_chip) != 0) return INVALID_PARAMETER;
  HostObject* h = calloc(1, sizeof *h);
  snprintf(h->chip, sizeof h->chip, "%s", p->pChipName);
  p->pHostObject = h;
  return OK;
}

CUptiResult cuptiProfilerHostDeinitialize(HostDeinit_Params* p) { free(p->pHostObject); return OK; }

CUptiResult cuptiProfilerHostGetSupportedChips(Chips_Params* p) {
  static const char* chips[] = {"GA100", "GH100"};
  p->numChips = 2;
  p->ppChipNames = chips;
  return OK;
}

CUptiResult cuptiProfilerHostGetBaseMetrics(BaseMetrics_Params* p) {
  if (!p->pHostObject) return INVALID_PARAMETER;
  if (p->metricType == COUNTER) { p->ppMetricNames = kCounters; p->numMetrics = COUNT(kCounters); }
  else if (p->metricType == RATIO) { p->ppMetricNames = kRatios; p->numMetrics = COUNT(kRatios); }
  else if (p->metricType == THROUGHPUT) { p->ppMetricNames = kThroughputs; p->numMetrics = COUNT(kThroughputs); }
  else return INVALID_PARAMETER;
  return OK;
}

CUptiResult cuptiProfilerHostGetSubMetrics(SubMetrics_Params* p) {
  if (metric_type(p->pMetricName) < 0) return INVALID_METRIC_NAME;
  p->ppSubMetrics = kSuffixes;
  p->numOfSubmetrics = COUNT(kSuffixes);
  return OK;
}

CUptiResult cuptiProfilerHostGetMetricProperties(Props_Params* p) {
  int type = metric_type(p->pMetricName);
  if (type < 0) return INVALID_METRIC_NAME;
  p->metricType = type;
  p->pDescription = "stand-in metric";
  p->pHwUnit = "dram";
  p->pDimUnit = type == COUNTER ? "bytes" : "percent";
  return OK;
}

CUptiResult cuptiProfilerHostConfigAddMetrics(AddMetrics_Params* p) {
  HostObject* h = p->pHostObject;
  for (size_t i = 0; i < p->numMetrics; ++i)
    if (metric_type(p->ppMetricNames[i]) < 0) return INVALID_METRIC_NAME;
  for (size_t i = 0; i < p->numMetrics && h->num < MAX_METRICS; ++i)
    snprintf(h->metrics[h->num++], NAME_LEN, "%s", p->ppMetricNames[i]);
  return OK;
}

CUptiResult cuptiProfilerHostGetConfigImageSize(ConfigSize_Params* p) {
  p->configImageSize = sizeof(ConfigImage);
  return OK;
}

CUptiResult cuptiProfilerHostGetConfigImage(ConfigImage_Params* p) {
  HostObject* h = p->pHostObject;
  if (p->configImageSize < sizeof(ConfigImage) || h->num == 0) return INVALID_PARAMETER;
  ConfigImage* c = (ConfigImage*)p->pConfigImage;
  memset(c, 0, sizeof *c);
  c->magic = CONFIG_MAGIC;
  c->num = (uint32_t)h->num;
  memcpy(c->metrics, h->metrics, sizeof c->metrics);
  return OK;
}

CUptiResult cuptiProfilerHostGetNumOfPasses(Passes_Params* p) {
  const ConfigImage* c = (const ConfigImage*)p->pConfigImage;
  if (p->configImageSize < sizeof(ConfigImage) || c->magic != CONFIG_MAGIC) return INVALID_PARAMETER;
  p->numOfPasses = (c->num + (uint32_t)g_metrics_per_pass - 1) / (uint32_t)g_metrics_per_pass;
  return OK;
}

static const DataHeader* data_header(const uint8_t* image, size_t size) {
  const DataHeader* h = (const DataHeader*)image;
  if (!image || size < sizeof *h || h->magic != DATA_MAGIC) return NULL;
  return h;
}

CUptiResult cuptiProfilerHostEvaluateToGpuValues(Evaluate_Params* p) {
  const DataHeader* h = data_header(p->pCounterDataImage, p->counterDataImageSize);
  if (!h || !p->pHostObject || p->rangeIndex >= h->numRanges) return INVALID_PARAMETER;
  const DataRange* r = (const DataRange*)(p->pCounterDataImage + sizeof *h) + p->rangeIndex;
  for (size_t i = 0; i < p->numMetrics; ++i) {
    uint32_t m = 0;
    while (m < h->num && strcmp(h->metrics[m], p->ppMetricNames[i]) != 0) ++m;
    if (m == h->num) return INVALID_METRIC_NAME;
    p->pMetricValues[i] = r->values[m];
  }
  return OK;
}

#ifndef STANDIN_NO_RANGE_PROFILER
CUptiResult cuptiRangeProfilerEnable(Enable_Params* p) {
  if (!g_initialized) return NOT_INITIALIZED;
  for (int i = 0; i < MAX_OBJECTS; ++i)
    if (g_objects[i].inUse && g_objects[i].ctx == p->ctx) return INVALID_OPERATION;  /* already enabled */
  for (int i = 0; i < MAX_OBJECTS; ++i) {
    if (g_objects[i].inUse) continue;
    memset(&g_objects[i], 0, sizeof g_objects[i]);
    g_objects[i].inUse = 1;
    g_objects[i].ctx = p->ctx;
    p->pRangeProfilerObject = &g_objects[i];
    ++g_enables;
    return OK;
  }
  return INVALID_OPERATION;
}

CUptiResult cuptiRangeProfilerDisable(Object_Params* p) {
  RangeObject* o = p->pRangeProfilerObject;
  if (!o || !o->inUse) return INVALID_PARAMETER;
  free(o->pending);
  memset(o, 0, sizeof *o);
  ++g_disables;
  return OK;
}

CUptiResult cuptiRangeProfilerGetCounterDataSize(DataSize_Params* p) {
  if (!p->pRangeProfilerObject || p->numMetrics == 0 || p->numMetrics > MAX_METRICS) return INVALID_PARAMETER;
  if (p->maxNumRangeTreeNodes < p->maxNumOfRanges) return INVALID_PARAMETER;
  RangeObject* o = p->pRangeProfilerObject;
  o->num = (int)p->numMetrics;
  for (size_t i = 0; i < p->numMetrics; ++i) {
    if (metric_type(p->pMetricNames[i]) < 0) return INVALID_METRIC_NAME;
    snprintf(o->metricStore[i], NAME_LEN, "%s", p->pMetricNames[i]);
  }
  p->counterDataSize = sizeof(DataHeader) + p->maxNumOfRanges * sizeof(DataRange);
  return OK;
}

CUptiResult cuptiRangeProfilerCounterDataImageInitialize(DataInit_Params* p) {
  RangeObject* o = p->pRangeProfilerObject;
  if (!o || !o->num || p->counterDataSize < sizeof(DataHeader)) return INVALID_PARAMETER;
  DataHeader* h = (DataHeader*)p->pCounterData;
  memset(p->pCounterData, 0, p->counterDataSize);
  h->magic = DATA_MAGIC;
  h->maxRanges = (uint32_t)((p->counterDataSize - sizeof *h) / sizeof(DataRange));
  h->num = (uint32_t)o->num;
  memcpy(h->metrics, o->metricStore, sizeof h->metrics);
  return OK;
}

CUptiResult cuptiRangeProfilerSetConfig(SetConfig_Params* p) {
  RangeObject* o = p->pRangeProfilerObject;
  if (!o || !o->inUse || o->started) return INVALID_OPERATION;
  const ConfigImage* c = (const ConfigImage*)p->pConfig;
  if (!c || p->configSize < sizeof *c || c->magic != CONFIG_MAGIC) return INVALID_PARAMETER;
  if (!data_header(p->pCounterDataImage, p->counterDataImageSize)) return INVALID_PARAMETER;
  if (p->range != 1 || p->replayMode != 2 || p->maxRangesPerPass == 0) return INVALID_PARAMETER;  /* auto, kernel */
  o->config = *c;
  o->image = p->pCounterDataImage;
  o->imageSize = p->counterDataImageSize;
  if (o->maxRangesPerPass != p->maxRangesPerPass) {
    free(o->pending);
    o->pending = calloc(p->maxRangesPerPass, sizeof(Pending));
  }
  o->maxRangesPerPass = p->maxRangesPerPass;
  o->configured = 1;
  return OK;
}

CUptiResult cuptiRangeProfilerStart(Object_Params* p) {
  RangeObject* o = p->pRangeProfilerObject;
  if (!o || !o->configured || o->started) return INVALID_OPERATION;
  o->started = 1;
  ++g_starts;
  return OK;
}

CUptiResult cuptiRangeProfilerStop(Stop_Params* p) {
  RangeObject* o = p->pRangeProfilerObject;
  if (!o || !o->started) return INVALID_OPERATION;
  o->started = 0;
  p->isAllPassSubmitted = 1;  /* kernel replay: every pass ran inside each launch */
  return OK;
}

CUptiResult cuptiRangeProfilerDecodeData(Decode_Params* p) {
  RangeObject* o = p->pRangeProfilerObject;
  if (!o || o->started || !o->image) return INVALID_OPERATION;
  DataHeader* h = (DataHeader*)o->image;
  DataRange* ranges = (DataRange*)(o->image + sizeof *h);
  size_t dropped = o->dropped;
  for (size_t i = 0; i < o->numPending; ++i) {
    if (h->numRanges >= h->maxRanges) { ++dropped; continue; }
    DataRange* r = &ranges[h->numRanges++];
    memcpy(r->name, o->pending[i].name, NAME_LEN);
    /* values in the image's metric order (names given to GetCounterDataSize) */
    for (uint32_t m = 0; m < h->num; ++m) {
      r->values[m] = 0;
      for (uint32_t c = 0; c < o->config.num; ++c)
        if (!strcmp(o->config.metrics[c], h->metrics[m])) r->values[m] = o->pending[i].values[c];
    }
  }
  o->numPending = 0;
  o->dropped = 0;
  p->numOfRangeDropped = dropped;
  ++g_decodes;
  return OK;
}

CUptiResult cuptiRangeProfilerGetCounterDataInfo(DataInfo_Params* p) {
  const DataHeader* h = data_header(p->pCounterDataImage, p->counterDataImageSize);
  if (!h) return INVALID_PARAMETER;
  p->numTotalRanges = h->numRanges;
  return OK;
}

CUptiResult cuptiRangeProfilerCounterDataGetRangeInfo(RangeInfo_Params* p) {
  const DataHeader* h = data_header(p->pCounterDataImage, p->counterDataImageSize);
  if (!h || p->rangeIndex >= h->numRanges) return INVALID_PARAMETER;
  p->rangeName = ((const DataRange*)(p->pCounterDataImage + sizeof *h))[p->rangeIndex].name;
  return OK;
}
#endif
