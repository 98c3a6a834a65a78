/* empty_plugin.c - a profiler plugin that does nothing, the baseline of the benchmarks.
 *
 * It exports ncclProfiler_v7 .. v1, asks NCCL for a set of events, hands out one constant
 * non-NULL handle for the events it asked for (so their stops and states are called too) and a
 * NULL handle for the others (ancestors NCCL starts anyway, as ncclscope does for events it does
 * not record), and returns at once from everything else. Any cost measured with it is the cost of the calls themselves plus the work NCCL does
 * for the events it was asked for (KernelCh, for instance, adds a profiler proxy operation per
 * work item): the floor under any plugin that enables the same events.
 *
 * Environment (read once, at the first init):
 *   NCS_EMPTY_EVENTS=LIST      the events to ask for, in NCCLSCOPE_EVENTS' syntax (names such as
 *                              "api,group,coll,p2p,kernel", "default", "all,-proxystep", or a
 *                              number); default "all". Masked to what the ABI version knows.
 *   NCS_EMPTY_SAMPLE=N         sample groups exactly as ncclscope's NCCLSCOPE_SAMPLE does: ABI
 *                              v5+ asks for the full mask for one group in N and for the hook mask
 *                              (GroupApi, P2pApi, NCS_EMPTY_UNSAMPLED_EVENTS) for the others,
 *                              switched at each GroupApi stop, ending at the first send/recv
 *                              or CUDA graph capture; ABI v1-v4 do not sample. Default 1 (every
 *                              group). NCS_EMPTY_KERNEL_SAMPLE is its earlier name.
 *   NCS_EMPTY_UNSAMPLED_EVENTS=LIST  as NCCLSCOPE_UNSAMPLED_EVENTS (default: every event but kernel
 *                              and kernelphase)
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

static int token;      /* the context and the event handle */
static int gapi_token; /* the handle of GroupApi events: its stop switches the sampled mask */

/* Several threads may create communicators at once: the configuration is read once
 * (pthread_once), and what sample() reads on NCCL's threads is stored atomically. */
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static uint32_t cfg_events;   /* NCS_EMPTY_EVENTS (read atomically on NCCL's threads) */
static uint32_t cfg_sample;   /* NCS_EMPTY_KERNEL_SAMPLE */
static int *mask_ptr;         /* NCCL's activation mask int, for KernelCh sampling */
static uint32_t mask_set;     /* what init stored there */
static int announced;
static _Thread_local uint32_t tls_groups;
static int sample_stopped; /* sampling ended (first send/recv or graph capture): full mask (atomic) */
static uint32_t cfg_unsampled;          /* NCS_EMPTY_UNSAMPLED_EVENTS */
static uint32_t mask_hook, group_sampling; /* v5+ group sampling (atomic) */
static int hold_hook; /* sampling ended at an unsampled CUDA graph capture (atomic) */

static void config(void) {
  uint32_t m = NCS_EV_ALL;
  const char *ev = getenv("NCS_EMPTY_EVENTS"), *bad;
  size_t badlen;
  if (ev && *ev && ncs_parse_event_list(ev, &m, &bad, &badlen) != 0) {
    fprintf(stderr, "ncclscope-empty: bad NCS_EMPTY_EVENTS '%s'; asking for every event\n", ev);
    m = NCS_EV_ALL;
  }
  const char *s = getenv("NCS_EMPTY_SAMPLE");
  if (!s || !*s) s = getenv("NCS_EMPTY_KERNEL_SAMPLE");
  long n = s && *s ? strtol(s, NULL, 10) : 1;
  const char *u = getenv("NCS_EMPTY_UNSAMPLED_EVENTS");
  /* as ncclscope: every event but the GPU times (KernelCh, KernelPhase) */
  const uint32_t gpu = NCS_EV_KERNEL_CH | NCS_EV_KERNEL_PHASE;
  cfg_unsampled = NCS_EV_ALL & ~gpu;
  if (u && *u && ncs_parse_event_list(u, &cfg_unsampled, &bad, &badlen) != 0) {
    fprintf(stderr, "ncclscope-empty: bad NCS_EMPTY_UNSAMPLED_EVENTS '%s'; every event but kernel\n", u);
    cfg_unsampled = NCS_EV_ALL & ~gpu;
  }
  if (m & NCS_EV_KERNEL_PHASE) m |= NCS_EV_KERNEL_CH; /* as ncclscope (and NCCL 2.31) */
  __atomic_store_n(&cfg_events, m, __ATOMIC_RELAXED);
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
  /* v5+ group sampling: the same masks and condition as ncclscope's do_init */
  uint32_t hook = (NCS_EV_GROUP_API | NCS_EV_P2P_API | (cfg_unsampled & bits)) & all_of_version &
                  ~(uint32_t)(NCS_EV_KERNEL_CH | NCS_EV_KERNEL_PHASE);
  __atomic_store_n(&mask_hook, hook, __ATOMIC_RELAXED);
  __atomic_store_n(&group_sampling, abi >= 5 && cfg_sample > 1 && hook != bits &&
                                        (bits & ~(uint32_t)NCS_EV_PROXY_CTRL) != 0, __ATOMIC_RELAXED);
  __atomic_store_n(&mask_set, bits, __ATOMIC_RELAXED);
  __atomic_store_n(&mask_ptr, mask, __ATOMIC_RELEASE);
  /* after an unsampled CUDA graph capture KernelCh never comes back, new communicators included */
  int held = __atomic_load_n(&group_sampling, __ATOMIC_RELAXED) && __atomic_load_n(&hold_hook, __ATOMIC_RELAXED);
  __atomic_store_n(mask, (int)(held ? hook : bits), __ATOMIC_RELAXED);
}

/* Sampling as ncclscope does it (src/plugin/plugin.c, "Group sampling"): it ends for good at the
 * first send/recv (ncs_sampling_stops_at); ABI v4 and older do not sample. */
static void sample(uint64_t type) {
  if (ncs_sampling_stops_at(type) && __atomic_load_n(&group_sampling, __ATOMIC_RELAXED))
    __atomic_store_n(&sample_stopped, 1, __ATOMIC_RELAXED);
}

/* v5+ at a GroupApi stop: the mask of this thread's next group, as ncclscope's group_sample_stop */
static void group_stop(void) {
  int *mp = __atomic_load_n(&mask_ptr, __ATOMIC_ACQUIRE);
  if (!mp || !__atomic_load_n(&group_sampling, __ATOMIC_RELAXED)) return;
  uint32_t full = __atomic_load_n(&mask_set, __ATOMIC_RELAXED);
  uint32_t hook = __atomic_load_n(&mask_hook, __ATOMIC_RELAXED);
  int all = __atomic_load_n(&sample_stopped, __ATOMIC_RELAXED);
  uint32_t want = __atomic_load_n(&hold_hook, __ATOMIC_RELAXED)                ? hook
                  : all || ncs_kernel_sampled(++tls_groups, cfg_sample) ? full
                                                                         : hook;
  ncs_sample_mask(mp, want, full, hook);
}

/* v5+ at a captured GroupApi start: sampling ends, as ncclscope's sample_graph does */
static void group_captured(void) {
  int *mp = __atomic_load_n(&mask_ptr, __ATOMIC_ACQUIRE);
  if (!mp || !__atomic_load_n(&group_sampling, __ATOMIC_RELAXED) ||
      __atomic_exchange_n(&sample_stopped, 1, __ATOMIC_RELAXED))
    return;
  if ((uint32_t)__atomic_load_n(mp, __ATOMIC_RELAXED) == __atomic_load_n(&mask_hook, __ATOMIC_RELAXED))
    __atomic_store_n(&hold_hook, 1, __ATOMIC_RELAXED);
}

static ncs_result_t init_v7(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL, 7);
  return NCS_SUCCESS;
}

static ncs_result_t init_v6(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V6, 6);
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

/* the handle of an event of type bit `type`: the token when it was asked for, else NULL */
static inline void *handle_of(uint64_t type) {
  return (uint32_t)type & __atomic_load_n(&cfg_events, __ATOMIC_RELAXED) ? (void *)&token : NULL;
}

/* v4 and older: nothing to do (no sampling there) */
#define START_FN(V)                                                                               \
  static ncs_result_t start_v##V(void *ctx, void **eh, ncs_descr_v##V##_t *d) {                   \
    (void)ctx;                                                                                    \
    *eh = d ? handle_of(d->type) : NULL;                                                          \
    return NCS_SUCCESS;                                                                           \
  }
/* v5+: GroupApi starts and stops drive group sampling (v7's descriptor has v6's offsets) */
static ncs_result_t start_v5plus(void **eh, uint64_t type, int captured) {
  if (type == NCS_EV_GROUP_API && captured) group_captured();
  if (type) sample(type);
  /* GroupApi's stop switches the sampled mask: its handle is non-NULL while sampling is set up,
   * as ncclscope's hook handle is */
  if (type == NCS_EV_GROUP_API && __atomic_load_n(&group_sampling, __ATOMIC_RELAXED))
    *eh = &gapi_token;
  else
    *eh = type ? handle_of(type) : NULL;
  return NCS_SUCCESS;
}
#define START_V5PLUS(V)                                                                           \
  static ncs_result_t start_v##V(void *ctx, void **eh, ncs_descr_v##V##_t *d) {                   \
    (void)ctx;                                                                                    \
    uint64_t t = d ? d->type : 0;                                                                 \
    return start_v5plus(eh, t, t == NCS_EV_GROUP_API && d->groupApi.graphCaptured);               \
  }
START_V5PLUS(7)
START_V5PLUS(6)
START_FN(4)
START_FN(3)
START_FN(2)
START_FN(1)

#define RECORD_FN(V)                                                                              \
  static ncs_result_t record_v##V(void *eh, ncs_state_t s, ncs_args_v##V##_t *a) {                \
    (void)eh, (void)s, (void)a;                                                                   \
    return NCS_SUCCESS;                                                                           \
  }
RECORD_FN(7)
RECORD_FN(6)
RECORD_FN(4)
RECORD_FN(1)
RECORD_FN(2)
RECORD_FN(3)

static ncs_result_t stop_any(void *eh) {
  if (eh == &gapi_token) group_stop();
  return NCS_SUCCESS;
}

static ncs_result_t finalize_any(void *ctx) {
  (void)ctx;
  return NCS_SUCCESS;
}

EXPORT ncs_profiler_v7_t ncclProfiler_v7 = {"ncclscope-empty", init_v7, start_v7, stop_any,
                                            record_v7, finalize_any};
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
