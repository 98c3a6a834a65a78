/* ncclscope.h - user ranges for ncclscope, the NCCL profiler (docs/ranges.md).
 *
 * Mark phases of a program (a training step, forward, backward, the optimizer) so that ncclscope
 * records them beside NCCL's operations: per range and rank, the time, the NCCL operations
 * inside, and with `ncclscope record --range-metrics` hardware counters. NVTX ranges
 * (torch.cuda.nvtx.range, nvtxRangePushA, ...) are recorded too under `ncclscope record`; this
 * header is for programs that do not use NVTX.
 *
 * Use it without linking anything: the ncclscope_* functions below look the plugin up at their
 * first call (the file NCCL_PROFILER_PLUGIN names, as `ncclscope record` sets it) and do nothing
 * when the program does not run under ncclscope. With glibc older than 2.34 link with -ldl.
 *
 *     ncclscope_range_push("step");
 *     ...                               // NCCL calls, kernels
 *     ncclscope_range_pop();
 *     ncclscope_mark("checkpoint saved");
 *
 * Push and pop nest per thread (a pop ends the thread's innermost range). Names are copied: a
 * temporary string is fine. Each call costs about as much as an NCCL event does (docs/ranges.md).
 *
 * From Python, with ctypes and no build step:
 *
 *     import ctypes, os
 *     lib = ctypes.CDLL(os.environ["NCCL_PROFILER_PLUGIN"])  # under `ncclscope record`
 *     lib.ncclscopeRangePush(b"step"); ...; lib.ncclscopeRangePop()
 *
 * The functions the plugin exports (declared below) may also be called directly by a program
 * that links libnccl-profiler-ncclscope.so.
 */
#ifndef NCCLSCOPE_H
#define NCCLSCOPE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Begin a range on the calling thread: its 0-based nesting level, or -1 when not recorded. */
int ncclscopeRangePush(const char *name);
/* End the calling thread's innermost range: its level, or -1 when none was open. */
int ncclscopeRangePop(void);
/* An instantaneous marker on the calling thread. */
void ncclscopeMark(const char *name);

#ifndef NCCLSCOPE_NO_LOOKUP
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int (*push)(const char *name);
  int (*pop)(void);
  void (*mark)(const char *name);
} ncclscope_api_t;

/* The plugin's functions, looked up once (per file that includes this header); all NULL when
 * NCCL_PROFILER_PLUGIN does not name ncclscope's plugin. The handle is never closed: the plugin
 * must stay loaded while its functions may be called. */
static inline const ncclscope_api_t *ncclscope_api(void) {
  static ncclscope_api_t api;
  static int state; /* 0 not looked up, 1 looking, 2 done */
  int expect = 0;
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2) return &api;
  if (!__atomic_compare_exchange_n(&state, &expect, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2) sched_yield();
    return &api;
  }
  const char *p = getenv("NCCL_PROFILER_PLUGIN");
  char path[4096];
  path[0] = 0;
  if (p && strstr(p, "ncclscope")) /* never load another tool's plugin early */
    snprintf(path, sizeof path, strchr(p, '/') || strstr(p, ".so") ? "%s" : "libnccl-profiler-%s.so", p);
  void *h = path[0] ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (h) {
    void *f[3] = {dlsym(h, "ncclscopeRangePush"), dlsym(h, "ncclscopeRangePop"), dlsym(h, "ncclscopeMark")};
    if (f[0] && f[1] && f[2]) {
      memcpy(&api.push, &f[0], sizeof f[0]);
      memcpy(&api.pop, &f[1], sizeof f[1]);
      memcpy(&api.mark, &f[2], sizeof f[2]);
    }
  }
  __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
  return &api;
}

static inline int ncclscope_range_push(const char *name) {
  const ncclscope_api_t *a = ncclscope_api();
  return a->push ? a->push(name) : -1;
}

static inline int ncclscope_range_pop(void) {
  const ncclscope_api_t *a = ncclscope_api();
  return a->pop ? a->pop() : -1;
}

static inline void ncclscope_mark(const char *name) {
  const ncclscope_api_t *a = ncclscope_api();
  if (a->mark) a->mark(name);
}
#endif /* NCCLSCOPE_NO_LOOKUP */

#ifdef __cplusplus
}
#endif

#endif
