/* empty_plugin.c - a profiler plugin that does nothing, for the event-cost benchmark.
 *
 * It exports ncclProfiler_v6 .. v1, asks for every event its version knows (so NCCL, or
 * nccl-sim, makes every call it can), hands out one constant non-NULL handle (so stops and
 * states are called too) and returns at once from everything else. Any cost measured with it is
 * the cost of the call itself.
 */
#include "abi/ncs_abi.h"

#define EXPORT __attribute__((visibility("default")))

static int token; /* the context and the one event handle */

/* The mask int is shared by all communicators and read concurrently by NCCL: store atomically. */
static void set_mask(int *mask, int bits) { __atomic_store_n(mask, bits, __ATOMIC_RELAXED); }

static ncs_result_t init_v6(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL);
  return NCS_SUCCESS;
}

static ncs_result_t init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V5);
  return NCS_SUCCESS;
}

static ncs_result_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                            int nranks, int rank, ncs_logger_t log) {
  (void)name, (void)hash, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V3);
  return NCS_SUCCESS;
}

static ncs_result_t init_v3(void **ctx, int *mask) {
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V3);
  return NCS_SUCCESS;
}

static ncs_result_t init_v1(void **ctx, int *mask) { /* v1, v2: no KernelCh, no NetPlugin */
  *ctx = &token;
  set_mask(mask, NCS_EV_ALL_V1);
  return NCS_SUCCESS;
}

#define START_FN(V)                                                                               \
  static ncs_result_t start_v##V(void *ctx, void **eh, ncs_descr_v##V##_t *d) {                   \
    (void)ctx, (void)d;                                                                           \
    *eh = &token;                                                                                 \
    return NCS_SUCCESS;                                                                           \
  }
START_FN(6)
START_FN(4)
START_FN(3)
START_FN(2)
START_FN(1)

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
EXPORT ncs_profiler_v2_t ncclProfiler_v2 = {"ncclscope-empty", init_v1, start_v2, stop_any,
                                            record_v2, finalize_any};
EXPORT ncs_profiler_v1_t ncclProfiler_v1 = {"ncclscope-empty", init_v1, start_v1, stop_any,
                                            record_v1, finalize_any};
