// Stand-in for Ascend's aclprof (libmsprofiler.so / libacl_prof.so), from the documented
// interface: aclprofInit makes a PROF_* folder under the result path, and every call is
// written to <PROF folder>/standin_calls.txt so that tests can check what was configured.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef int aclError;
typedef struct {
  uint32_t devices[8];
  uint32_t count;
  int aicoreMetrics;
  uint64_t flags;
} aclprofConfig;

static char profDir[4096];
static int initialized, started;

static void note(const char* text) {
  char path[4200];
  snprintf(path, sizeof path, "%s/standin_calls.txt", profDir);
  FILE* f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s\n", text);
  fclose(f);
}

aclError aclprofInit(const char* resultPath, size_t length) {
  if (!resultPath || length == 0 || initialized) return 100000;
  snprintf(profDir, sizeof profDir, "%.*s/PROF_000001_standin", (int)length, resultPath);
  if (mkdir(profDir, 0755) != 0 && errno != EEXIST) return 100001;
  initialized = 1;
  note("aclprofInit");
  return 0;
}

aclprofConfig* aclprofCreateConfig(uint32_t* devices, uint32_t count, int aicoreMetrics, const void* events,
                                   uint64_t flags) {
  (void)events;
  if (!initialized || count == 0 || count > 8) return NULL;
  aclprofConfig* c = calloc(1, sizeof *c);
  memcpy(c->devices, devices, count * sizeof *devices);
  c->count = count;
  c->aicoreMetrics = aicoreMetrics;
  c->flags = flags;
  char line[128];
  snprintf(line, sizeof line, "aclprofCreateConfig devices=%u first=%u aicore_metrics=%d flags=0x%llx", count,
           devices[0], aicoreMetrics, (unsigned long long)flags);
  note(line);
  return c;
}

aclError aclprofStart(const aclprofConfig* c) {
  if (!initialized || !c || started) return 100002;
  started = 1;
  note("aclprofStart");
  return 0;
}

aclError aclprofStop(const aclprofConfig* c) {
  if (!c || !started) return 100003;
  started = 0;
  note("aclprofStop");
  return 0;
}

aclError aclprofDestroyConfig(const aclprofConfig* c) {
  if (!c) return 100004;
  free((void*)c);
  note("aclprofDestroyConfig");
  return 0;
}

aclError aclprofFinalize(void) {
  if (!initialized || started) return 100005;
  initialized = 0;
  note("aclprofFinalize");
  return 0;
}
