/* A stand-in for libms_tools_ext.so, CANN's mstx library (mstxDomainCreateA, mstxDomainRangeStartA,
 * mstxDomainRangeEnd, mstxRangeStartA, mstxRangeEnd), built by the tests (tests/standins/build.py).
 * Its ranges reach the stand-in libmspti.so (standin_mspti_marker, resolved in the process: load
 * that library first, with RTLD_GLOBAL), which records them as MARKER records. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))
enum { FLAG_START = 2, FLAG_END = 4 };

void standin_mspti_marker(const char* domain, const char* message, uint32_t flag, uint64_t id, int delta);

typedef struct { const char* name; } mstx_domain;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_next_range = 1;

EXPORT void* mstxDomainCreateA(const char* name) {
  mstx_domain* d = malloc(sizeof *d);
  d->name = name;  /* the marker keeps its own copy */
  return d;
}
EXPORT void mstxDomainDestroy(void* domain) { free(domain); }
EXPORT uint64_t mstxDomainRangeStartA(void* domain, const char* message, void* stream) {
  pthread_mutex_lock(&g_lock);
  uint64_t id = g_next_range++;
  pthread_mutex_unlock(&g_lock);
  standin_mspti_marker(((mstx_domain*)domain)->name, message, FLAG_START, id, 1);
  return id;
}
EXPORT void mstxDomainRangeEnd(void* domain, uint64_t id) {
  standin_mspti_marker(((mstx_domain*)domain)->name, NULL, FLAG_END, id, -1);
}
EXPORT uint64_t mstxRangeStartA(const char* message, void* stream) {
  static mstx_domain global = {"default"};
  return mstxDomainRangeStartA(&global, message, stream);
}
EXPORT void mstxRangeEnd(uint64_t id) {
  static mstx_domain global = {"default"};
  mstxDomainRangeEnd(&global, id);
}
