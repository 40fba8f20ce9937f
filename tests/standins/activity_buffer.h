/* The activity buffer of the CUPTI-dialect stand-ins (MSPTI, MUPTI): records are appended under
   the library's lock into a buffer the profiler gave (its buffer-request callback); a buffer with
   no room for the next record, or full after one, is taken out under the lock and handed back by
   the caller after unlocking, so that no other thread writes into it meanwhile. Header-only: each
   stand-in is one compiled file (tests/standins/build.py). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void (*standin_request_fn)(uint8_t** buffer, size_t* size, size_t* max_records);

typedef struct {
  uint8_t* buf;
  size_t size, used;
  uint64_t pending;   /* records in the current buffer */
  uint64_t delivered; /* buffers taken out to be handed back */
} activity_buffer;

typedef struct {
  uint8_t* buf; /* NULL: nothing to hand back */
  size_t size, used;
} taken_buffer;

/* Takes the current buffer out (lock held). */
static taken_buffer activity_buffer_take(activity_buffer* b) {
  taken_buffer t = {b->buf, b->size, b->used};
  b->buf = NULL;
  b->used = 0;
  b->pending = 0;
  if (t.buf) b->delivered += 1;
  return t;
}

/* Appends `record` (lock held), advancing by `size` rounded up to `align`. A buffer without room
   for it goes to *full first; one with less than `room` bytes left after it goes to *full after
   (only one buffer a call: one still full is taken at the next). Returns 0 when the profiler gave
   no buffer big enough: the record is lost. */
static int activity_buffer_append(activity_buffer* b, standin_request_fn request, const void* record, size_t size,
                                  size_t align, size_t room, taken_buffer* full) {
  full->buf = NULL;
  if (b->buf && b->used + size > b->size) *full = activity_buffer_take(b);
  if (!b->buf) {
    size_t max_records = 0;
    request(&b->buf, &b->size, &max_records);
    b->used = 0;
    if (!b->buf || b->size < size) {
      b->buf = NULL;
      return 0;
    }
  }
  memcpy(b->buf + b->used, record, size);
  b->used += (size + align - 1) & ~(align - 1);
  ++b->pending;
  if (!full->buf && b->used + room > b->size) *full = activity_buffer_take(b);
  return 1;
}
