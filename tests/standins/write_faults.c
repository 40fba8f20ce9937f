/* An LD_PRELOAD shim that makes file system calls fail for paths under one folder, as a full or
 * failing disk would, with no root needed (tests/core/test_write_faults.py). Read from the
 * environment at every call, so a process can turn a fault on after its setup and off again:
 *   FTP_FAULT_DIR    the folder (absolute, resolved); only paths under it are touched
 *   FTP_FAULT_NAME   optional: only paths whose last component contains this text
 *   FTP_FAULT_OP     write (write, pwrite), fsync (fsync, fdatasync), close, rename (rename,
 *                    renameat, renameat2, and syscall(SYS_renameat2), which the native writer
 *                    calls), unlink, or readonly (creating or opening for writing, unlink, and
 *                    every rename)
 *   FTP_FAULT_ERRNO  the errno the call fails with
 *   FTP_FAULT_AFTER  write: bytes let through first (the one that crosses it is cut short, as a
 *                    disk filling up does); other calls: matching calls let through first
 * A file descriptor's path is read from /proc/self/fd. A failing close() closes the file first,
 * as Linux does. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static unsigned long long g_bytes, g_calls;

static void* next_symbol(const char* name) { return dlsym(RTLD_NEXT, name); }

/* Whether `op` is the fault asked for; sets *error to its errno. */
static int fault_on(const char* op, int* error) {
  const char* want = getenv("FTP_FAULT_OP");
  const char* code = getenv("FTP_FAULT_ERRNO");
  if (!want || !code || strcmp(want, op) != 0) return 0;
  *error = atoi(code);
  return 1;
}

static int under_folder(const char* path) {
  const char* dir = getenv("FTP_FAULT_DIR");
  const char* name = getenv("FTP_FAULT_NAME");
  if (!path || !dir || !*dir) return 0;
  size_t n = strlen(dir);
  if (strncmp(path, dir, n) != 0 || path[n] != '/') return 0;
  if (name && *name) {
    const char* last = strrchr(path, '/');
    return strstr(last + 1, name) != NULL;
  }
  return 1;
}

static int fd_under_folder(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return under_folder(path);
}

/* The Kth matching call and later fail (K = FTP_FAULT_AFTER + 1). */
static int call_fails(void) {
  const char* after = getenv("FTP_FAULT_AFTER");
  unsigned long long k = __atomic_fetch_add(&g_calls, 1, __ATOMIC_SEQ_CST);
  return k >= (after ? strtoull(after, NULL, 10) : 0);
}

/* How many of `n` bytes may go through (0: fail the call). */
static size_t bytes_allowed(size_t n) {
  const char* after = getenv("FTP_FAULT_AFTER");
  unsigned long long budget = after ? strtoull(after, NULL, 10) : 0;
  unsigned long long before = __atomic_fetch_add(&g_bytes, n, __ATOMIC_SEQ_CST);
  if (before >= budget) return 0;
  return before + n > budget ? (size_t)(budget - before) : n;
}

static int failing(int error) {
  errno = error;
  return -1;
}

EXPORT ssize_t write(int fd, const void* data, size_t n) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = next_symbol("write");
  int error;
  if (n && fault_on("write", &error) && fd_under_folder(fd)) {
    size_t allowed = bytes_allowed(n);
    if (!allowed) return failing(error);
    return real(fd, data, allowed);
  }
  return real(fd, data, n);
}

EXPORT ssize_t pwrite(int fd, const void* data, size_t n, off_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off_t);
  if (!real) real = next_symbol("pwrite");
  int error;
  if (n && fault_on("write", &error) && fd_under_folder(fd)) {
    size_t allowed = bytes_allowed(n);
    if (!allowed) return failing(error);
    return real(fd, data, allowed, offset);
  }
  return real(fd, data, n, offset);
}

EXPORT ssize_t pwrite64(int fd, const void* data, size_t n, off_t offset) { return pwrite(fd, data, n, offset); }

static int sync_fails(int fd) {
  int error;
  if (fault_on("fsync", &error) && fd_under_folder(fd) && call_fails()) return error;
  return 0;
}

EXPORT int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = next_symbol("fsync");
  int error = sync_fails(fd);
  return error ? failing(error) : real(fd);
}

EXPORT int fdatasync(int fd) {
  static int (*real)(int);
  if (!real) real = next_symbol("fdatasync");
  int error = sync_fails(fd);
  return error ? failing(error) : real(fd);
}

EXPORT int close(int fd) {
  static int (*real)(int);
  if (!real) real = next_symbol("close");
  int error;
  int fails = fault_on("close", &error) && fd_under_folder(fd) && call_fails();
  int done = real(fd);
  return fails ? failing(error) : done;
}

/* A rename (or exchange) onto or from a path under the folder fails, by `op`. */
static int rename_fails(const char* from, const char* to) {
  int error;
  if ((fault_on("rename", &error) || fault_on("readonly", &error)) && (under_folder(to) || under_folder(from)) &&
      call_fails())
    return error;
  return 0;
}

EXPORT int rename(const char* from, const char* to) {
  static int (*real)(const char*, const char*);
  if (!real) real = next_symbol("rename");
  int error = rename_fails(from, to);
  return error ? failing(error) : real(from, to);
}

EXPORT int renameat(int fromdir, const char* from, int todir, const char* to) {
  static int (*real)(int, const char*, int, const char*);
  if (!real) real = next_symbol("renameat");
  int error = rename_fails(from, to);
  return error ? failing(error) : real(fromdir, from, todir, to);
}

EXPORT int renameat2(int fromdir, const char* from, int todir, const char* to, unsigned flags) {
  static int (*real)(int, const char*, int, const char*, unsigned);
  if (!real) real = next_symbol("renameat2");
  int error = rename_fails(from, to);
  return error ? failing(error) : real(fromdir, from, todir, to, flags);
}

/* syscall() is variadic: six register-sized arguments are passed on, as many as any call takes. */
EXPORT long syscall(long number, ...) {
  static long (*real)(long, ...);
  if (!real) real = next_symbol("syscall");
  va_list args;
  va_start(args, number);
  long a[6];
  for (int i = 0; i < 6; ++i) a[i] = va_arg(args, long);
  va_end(args);
#ifdef SYS_renameat2
  if (number == SYS_renameat2) {
    int error = rename_fails((const char*)a[1], (const char*)a[3]);
    if (error) return failing(error);
  }
#endif
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static int readonly_fails(const char* path) {
  int error;
  return fault_on("readonly", &error) && under_folder(path) ? error : 0;
}

static int opens_for_writing(int flags) { return (flags & (O_CREAT | O_WRONLY | O_RDWR)) != 0; }

static int takes_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

/* open, open64, openat, openat64: the mode is read only where the call passes one. */
#define OPEN_SHIM(name, ...)                                                     \
  EXPORT int name(__VA_ARGS__, int flags, ...) {                                 \
    static int (*real)(ARGS_TYPES, int, ...);                                    \
    if (!real) real = next_symbol(#name);                                        \
    mode_t mode = 0;                                                             \
    if (takes_mode(flags)) {                                                     \
      va_list args;                                                              \
      va_start(args, flags);                                                     \
      mode = va_arg(args, mode_t);                                               \
      va_end(args);                                                              \
    }                                                                            \
    int error = opens_for_writing(flags) ? readonly_fails(path) : 0;             \
    return error ? failing(error) : real(ARGS_NAMES, flags, mode);               \
  }

#define ARGS_TYPES const char*
#define ARGS_NAMES path
OPEN_SHIM(open, const char* path)
OPEN_SHIM(open64, const char* path)
#undef ARGS_TYPES
#undef ARGS_NAMES
#define ARGS_TYPES int, const char*
#define ARGS_NAMES dir, path
OPEN_SHIM(openat, int dir, const char* path)
OPEN_SHIM(openat64, int dir, const char* path)

EXPORT int unlink(const char* path) {
  static int (*real)(const char*);
  if (!real) real = next_symbol("unlink");
  int error = readonly_fails(path), code;
  if (!error && fault_on("unlink", &code) && under_folder(path) && call_fails()) error = code;
  return error ? failing(error) : real(path);
}
