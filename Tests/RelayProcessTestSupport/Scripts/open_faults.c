/*
 * An LD_PRELOAD library for LibfiuFaultTests: a libfiu failure point, campaign-relay/data-dir/open,
 * that fails open(2) with EIO for the paths under one directory alone.
 *
 * libfiu's posix/io/oc/open point fails every open of the process, and libdispatch traps
 * (SIGILL in _dispatch_workq_monitor_pools) when its own reads of /proc/self/task/N/stat fail.
 * This point fails only the opens of the relay's data directory, so the relay meets an open
 * that fails where it opens its own files (segments, cursors, locks, the aggregates database)
 * and nothing else does.
 *
 * It is a point of libfiu's, asked with fiu_fail() (found at run time in the libfiu that
 * libfiu's own preloads load), so it is enabled, drawn (FIU_PRNG_SEED seeds it) and disabled
 * (fiu-ctrl) like every other point. Loaded without libfiu, it never fails anything.
 *
 * Environment:
 *   CAMPAIGN_RELAY_OPEN_FAULT_PREFIX   the directory (a path prefix) whose opens the point fails
 *
 * Built at test time by Libfiu.openFaultLibrary() with the toolchain's clang:
 *   clang -shared -fPIC -O2 -o open_faults.so open_faults.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The point's name, as FIU_ENABLE and fiu-ctrl name it. */
static const char point[] = "campaign-relay/data-dir/open";

typedef int (*open_function)(const char *, int, ...);
typedef int (*openat_function)(int, const char *, int, ...);
typedef int (*fail_function)(const char *);

static open_function real_open, real_open64;
static openat_function real_openat, real_openat64;
static fail_function fiu_fail_function;
static const char *prefix;
static size_t prefix_length;
static pthread_once_t initialized = PTHREAD_ONCE_INIT;

/* Finds the real functions and reads the environment, once, at the first open (which may come
 * before this library's constructor would run: another library's constructor can open a file). */
static void initialize(void) {
    real_open = (open_function)dlsym(RTLD_NEXT, "open");
    real_open64 = (open_function)dlsym(RTLD_NEXT, "open64");
    real_openat = (openat_function)dlsym(RTLD_NEXT, "openat");
    real_openat64 = (openat_function)dlsym(RTLD_NEXT, "openat64");
    fiu_fail_function = (fail_function)dlsym(RTLD_DEFAULT, "fiu_fail");
    prefix = getenv("CAMPAIGN_RELAY_OPEN_FAULT_PREFIX");
    prefix_length = prefix ? strlen(prefix) : 0;
}

/* Whether this open of `path` fails: only paths under the prefix, when the point says so. */
static int fails(const char *path) {
    pthread_once(&initialized, initialize);
    if (prefix_length == 0 || fiu_fail_function == NULL || path == NULL) return 0;
    if (strncmp(path, prefix, prefix_length) != 0 || fiu_fail_function(point) == 0) return 0;
    errno = EIO;
    return 1;
}

static mode_t mode_argument(int flags, va_list arguments) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(arguments, int) : 0;
}

int open(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    if (fails(path)) return -1;
    return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    if (fails(path)) return -1;
    return real_open64(path, flags, mode);
}

int openat(int directory, const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    if (fails(path)) return -1;
    return real_openat(directory, path, flags, mode);
}

int openat64(int directory, const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    if (fails(path)) return -1;
    return real_openat64(directory, path, flags, mode);
}
