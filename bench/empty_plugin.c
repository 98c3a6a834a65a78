/* empty_plugin.c - a profiler plugin that does nothing, the baseline of the benchmarks.
 *
 * It exports ncclProfiler_v6 .. v1, asks NCCL for a set of events, hands out one constant
 * non-NULL handle (so stops and states are called too) and returns at once from everything
 * else. Any cost measured with it is the cost of the calls themselves plus the work NCCL does
 * for the events it was asked for (KernelCh, for instance, adds a profiler proxy operation per
 * work item): the floor under any plugin that enables the same events.
 *
 * Environment (read once, at the first init):
 *   NCS_EMPTY_EVENTS=LIST      the events to ask for, in NCCLSCOPE_EVENTS' syntax (names such as
 *                              "api,group,coll,p2p,kernel", "default", "all,-proxystep", or a
 *                              number); default "all". Masked to what the ABI version knows.
 *   NCS_EMPTY_KERNEL_SAMPLE=N  KernelCh for one group in N, switched at each GroupApi start (Group
 *                              for ABI v1-v4) exactly as ncclscope's NCCLSCOPE_KERNEL_SAMPLE does;
 *                              default 1 (every group)
 *   NCS_EMPTY_ANNOUNCE=1       print "ncclscope-empty: abi=vN mask=0x... sample=N" on stderr at
 *                              the first init (bench/overhead.sh checks that it was loaded)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/ncs_abi.h"
#include "trace/format.h"

#define EXPORT __attribute__((visibility("default")))

static int token; /* the context and the one event handle */

/* Several threads may create communicators at once: the configuration is read once
 * (pthread_once), and what sample() reads on NCCL's threads is stored atomically. */
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static uint32_t cfg_events;   /* NCS_EMPTY_EVENTS */
static uint32_t cfg_sample;   /* NCS_EMPTY_KERNEL_SAMPLE */
static int *mask_ptr;         /* NCCL's activation mask int, for KernelCh sampling */
static uint32_t mask_set;     /* what init stored there */
static int announced;
static _Thread_local uint32_t tls_groups;
static int sample_stopped; /* the first send/recv was seen: KernelCh stays on (atomic) */

static void config(void) {
  uint32_t m = NCS_EV_ALL;
  const char *ev = getenv("NCS_EMPTY_EVENTS"), *bad;
  size_t badlen;
  if (ev && *ev && ncs_parse_event_list(ev, &m, &bad, &badlen) != 0) {
    fprintf(stderr, "ncclscope-empty: bad NCS_EMPTY_EVENTS '%s'; asking for every event\n", ev);
    m = NCS_EV_ALL;
  }
  const char *s = getenv("NCS_EMPTY_KERNEL_SAMPLE");
  long n = s && *s ? strtol(s, NULL, 10) : 1;
  cfg_events = m;
  cfg_sample = n > 1 ? (uint32_t)n : 1;
}

/* The mask int is shared by all communicators and read concurrently by NCCL: store atomically. */
static void set_mask(int *mask, uint32_t all_of_version, int abi) {
  pthread_once(&cfg_once, config);
  uint32_t bits = cfg_events & all_of_version;
  if (!__atomic_exchange_n(&announced, 1, __ATOMIC_RELAXED)) {
    const char *a = getenv("NCS_EMPTY_ANNOUNCE");
    if (a && *a && strcmp(a, "0"))
      fprintf(stderr, "ncclscope-empty: abi=v%d mask=0x%x sample=%u\n", abi, bits, cfg_sample);
  }
  if (!mask) return;
  __atomic_store_n(&mask_set, bits, __ATOMIC_RELAXED);
  __atomic_store_n(&mask_ptr, mask, __ATOMIC_RELEASE);
  __atomic_store_n(mask, (int)bits, __ATOMIC_RELAXED);
}

/* KernelCh sampling as ncclscope does it (src/plugin/plugin.c): NCCL copies the mask at each API
 * call, so the KernelCh bit is turned on for one group in N at that group's first event, and
 * stays on from the first send/recv on (ncs_sampling_stops_at), so that this floor asks NCCL for
 * what ncclscope asks for. */
static void sample(uint64_t type, uint64_t at) {
  int stop = ncs_sampling_stops_at(type);
  if (type != at && !stop) return;
  int *mp = __atomic_load_n(&mask_ptr, __ATOMIC_ACQUIRE); /* after init: the config is read */
  if (!mp || cfg_sample <= 1 || !(__atomic_load_n(&mask_set, __ATOMIC_RELAXED) & NCS_EV_KERNEL_CH) ||
      __atomic_load_n(&sample_stopped, __ATOMIC_RELAXED))
    return;
  if (stop) {
    __atomic_store_n(&sample_stopped, 1, __ATOMIC_RELAXED);
    ncs_mask_kernel_ch(mp, 1);
    return;
  }
  int on = ncs_kernel_sampled(tls_groups++, cfg_sample);
  ncs_mask_kernel_ch(mp, on);
  if (!on && __atomic_load_n(&sample_stopped, __ATOMIC_RELAXED)) ncs_mask_kernel_ch(mp, 1);
}

static ncs_result_t init_v6(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL, 6);
  return NCS_SUCCESS;
}

static ncs_result_t init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V5, 5);
  return NCS_SUCCESS;
}

static ncs_result_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                            int nranks, int rank, ncs_logger_t log) {
  (void)name, (void)hash, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V3, 4);
  return NCS_SUCCESS;
}

static ncs_result_t init_v3(void **ctx, int *mask) {
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V3, 3);
  return NCS_SUCCESS;
}

static ncs_result_t init_v2(void **ctx, int *mask) { /* v1, v2: no KernelCh, no NetPlugin */
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V1, 2);
  return NCS_SUCCESS;
}

static ncs_result_t init_v1(void **ctx, int *mask) {
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V1, 1);
  return NCS_SUCCESS;
}

/* where a group starts: GroupApi for v5+, the Group (the kernel plan) for v4 and older */
#define START_FN(V, AT)                                                                           \
  static ncs_result_t start_v##V(void *ctx, void **eh, ncs_descr_v##V##_t *d) {                   \
    (void)ctx;                                                                                    \
    if (d) sample(d->type, AT);                                                                   \
    *eh = &token;                                                                                 \
    return NCS_SUCCESS;                                                                           \
  }
START_FN(6, NCS_EV_GROUP_API)
START_FN(4, NCS_EV_GROUP)
START_FN(3, NCS_EV_GROUP)
START_FN(2, NCS_EV_GROUP)
START_FN(1, NCS_EV_GROUP)

#define RECORD_FN(V)                                                                              \
  static ncs_result_t record_v##V(void *eh, ncs_state_t s, ncs_args_v##V##_t *a) {                \
    (void)eh, (void)s, (void)a;                                                                   \
    return NCS_SUCCESS;                                                                           \
  }
RECORD_FN(6)
RECORD_FN(4)
RECORD_FN(1)
RECORD_FN(2)
RECORD_FN(3)

static ncs_result_t stop_any(void *eh) {
  (void)eh;
  return NCS_SUCCESS;
}

static ncs_result_t finalize_any(void *ctx) {
  (void)ctx;
  return NCS_SUCCESS;
}

EXPORT ncs_profiler_v6_t ncclProfiler_v6 = {"ncclscope-empty", init_v6, start_v6, stop_any,
                                            record_v6, finalize_any};
EXPORT ncs_profiler_v5_t ncclProfiler_v5 = {"ncclscope-empty", init_v5, start_v6, stop_any,
                                            record_v6, finalize_any};
EXPORT ncs_profiler_v4_t ncclProfiler_v4 = {"ncclscope-empty", init_v4, start_v4, stop_any,
                                            record_v4, finalize_any};
EXPORT ncs_profiler_v3_t ncclProfiler_v3 = {"ncclscope-empty", init_v3, start_v3, stop_any,
                                            record_v3, finalize_any};
EXPORT ncs_profiler_v2_t ncclProfiler_v2 = {"ncclscope-empty", init_v2, start_v2, stop_any,
                                            record_v2, finalize_any};
EXPORT ncs_profiler_v1_t ncclProfiler_v1 = {"ncclscope-empty", init_v1, start_v1, stop_any,
                                            record_v1, finalize_any};
