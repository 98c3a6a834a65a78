/* gpu.h - GPU truth in the plugin: CUPTI kernel activity joined to NCCL's KernelLaunch events
 * (docs/gpu-truth.md).
 *
 * Two halves:
 *   cupti.c   loads libcupti at run time, subscribes, and holds CUPTI's callbacks. They run on
 *             the application's threads (kernel and graph launches, graph bookkeeping) and on
 *             CUPTI's (activity buffers). What they learn goes into the calling thread's buffer
 *             block as raw records (NCS_RAW_GPU), like an event, or onto a list of completed
 *             activity buffers; nothing is decoded or written there.
 *   writer.c  (gpu_writer.c) runs on the plugin's writer thread: it decodes the buffers, joins
 *             kernels to KernelLaunch events by correlation id or graph node, and writes the
 *             GPU_STATE and GPU chunks (trace/gpu.h).
 * NCCL's event path is touched only for KernelLaunch, and only while CUPTI is active: its START
 * takes the slow path, which notes the launch in a thread-local, and its handle carries a tag of
 * its own so that its STOP takes the slow path too, which clears it.
 */
#ifndef NCS_GPU_H
#define NCS_GPU_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/ncs.h"
#include "gpu/cupti_decl.h"
#include "trace/encode.h"
#include "trace/range.h"

/* raw records in the per-thread blocks: kind NCS_RAW_GPU, the type byte says which */
#define NCS_RAW_GPU 0x40
enum {
  NCS_RG_LAUNCH = 1,  /* w2 corr, w3 launch id, w4 ctx, w5 parent, w6 stream, w7 flags */
  NCS_RG_GNODE = 2,   /* w2 launch id, w3 corr, w4 node id, w5 graph id */
  NCS_RG_GEXEC = 3,   /* w2 exec id, w3 graph id */
  NCS_RG_GCLONE = 4,  /* w2 exec node id, w3 captured node id */
  NCS_RG_GLAUNCH = 5, /* w2 corr, w3 exec id, w4 stream */
};

/* A KernelLaunch handle while CUPTI is active: this tag instead of NCS_EH_TAG, so that its STOP
 * misses the fast path (core/ncs.h, hot_handle) and the slow path clears the thread's launch. */
#define NCS_EH_TAG_LAUNCH 0xEDull

/* The launching thread's open KernelLaunch (initial-exec TLS). */
typedef struct {
  uint64_t launch;      /* its event id, 0 when none is open */
  uint64_t ctx, parent, stream;
  uint32_t corr;        /* the kernel launch seen inside it (0 none yet) */
  uint32_t n;           /* kernel launches seen inside it */
} ncs_gpu_tls_t;
extern NCS_HIDDEN __attribute__((tls_model("initial-exec"))) _Thread_local ncs_gpu_tls_t ncs_gpu_t;

/* 1 while CUPTI is active: KernelLaunch takes the slow path (read on that path only) */
extern NCS_HIDDEN _Atomic int ncs_gpu_on;

/* ---- cupti.c: lifecycle (under ncs_g.lock) and the event path */
NCS_HIDDEN void ncs_gpu_setup(void);   /* at init: load and subscribe when NCCLSCOPE_CUPTI asks */
NCS_HIDDEN void ncs_gpu_release(void); /* after the writer stopped: unsubscribe */
NCS_HIDDEN void ncs_gpu_after_fork(void);
/* KernelLaunch START (slow path): note the launch and retag its handle */
NCS_HIDDEN void ncs_gpu_launch_begin(void **eh, void *ctx, void *parent, void *stream);
static inline void ncs_gpu_launch_end(void) { ncs_gpu_t.launch = 0; }

/* ---- what the writer half reads from cupti.c (writer thread unless said) */
typedef struct {
  uint32_t state;        /* NCS_GPU_* */
  uint64_t since_ns;
  char reason[320], library[512], holder[128];
  uint32_t version;
  int summary;           /* NCCLSCOPE_CUPTI_KERNELS=nccl */
} ncs_gpu_status_t;
NCS_HIDDEN void ncs_gpu_status(ncs_gpu_status_t *s);
/* completed activity buffers, oldest first: index list ended by -1 */
NCS_HIDDEN int ncs_gpu_take(int *idx, int max);
NCS_HIDDEN const uint8_t *ncs_gpu_buffer(int i, size_t *valid);
NCS_HIDDEN void ncs_gpu_give_back(int i);
NCS_HIDDEN ncs_cupti_result_t ncs_gpu_next_record(const uint8_t *buf, size_t valid, void **rec);
/* CUPTI calls the writer makes; each returns -1 when CUPTI is not (or no longer) usable */
NCS_HIDDEN int ncs_gpu_clock(uint64_t *mono, uint64_t *cupti, uint64_t *width);
NCS_HIDDEN int ncs_gpu_flush(int forced);
NCS_HIDDEN void ncs_gpu_stop_collecting(void); /* final: no more records after this */
NCS_HIDDEN void ncs_gpu_fail(const char *why); /* a persistent error while running */
/* counters kept by the callbacks (app and CUPTI threads) */
typedef struct {
  uint64_t no_buffer, cupti_dropped, host_drops, launches, node_set_full;
} ncs_gpu_cb_counts_t;
NCS_HIDDEN void ncs_gpu_cb_counts(ncs_gpu_cb_counts_t *c);

/* ---- gpu_writer.c: the writer thread's half */
NCS_HIDDEN void ncs_gpu_segment_begin(void);
NCS_HIDDEN void ncs_gpu_segment_free(void); /* after the writer stopped: its tables */
NCS_HIDDEN void ncs_gpu_collect(void); /* before the writer drains the blocks: take the buffers */
NCS_HIDDEN void ncs_gpu_final_flush(void); /* last: stop CUPTI collecting, flush it, take the buffers */
NCS_HIDDEN void ncs_gpu_raw(const uint64_t *w, uint64_t hdr, uint32_t thread, uint64_t ts_ns);
NCS_HIDDEN void ncs_gpu_cycle(int flush_due); /* after the drain: decode, join, write */
NCS_HIDDEN void ncs_gpu_segment_end(void);    /* before the FOOTER */
/* flight keyframes: a GPU chunk payload restating the pending launches; 0 when none */
NCS_HIDDEN size_t ncs_gpu_keyframe(ncs_buf_t *b, size_t limit);

/* ---- cupti.c: the libcupti loaded (NULL before, or when none could be) */
NCS_HIDDEN void *ncs_gpu_lib(void);
NCS_HIDDEN const char *ncs_gpu_result_str(int r); /* CUPTI's name of a result */

/* ---- metrics.c: hardware metrics per range through CUPTI's range profiler (docs/ranges.md).
 * The ranges of one thread (the first to push a range at the metrics level with a CUDA context
 * current) at one nesting level (NCCLSCOPE_RANGE_METRICS_LEVEL) go to CUPTI as user ranges; their
 * counter buffers are decoded on that thread when full (or a second old) and evaluated on the
 * writer thread. */
/* the level whose ranges go to CUPTI while metrics are (or may become) active; 0 none */
extern NCS_HIDDEN _Atomic uint32_t ncs_hwm_level;
NCS_HIDDEN void ncs_hwm_setup(void);   /* at a segment's first init, after ncs_gpu_setup (ncs_g.lock) */
NCS_HIDDEN uint64_t ncs_hwm_push(uint64_t id, const char *name, size_t n); /* its metrics id, or 0 */
NCS_HIDDEN void ncs_hwm_pop(void);
NCS_HIDDEN void ncs_hwm_segment_end(void); /* before the writer's last cycle: close the session */
NCS_HIDDEN void ncs_hwm_release(void);     /* after the writer stopped: the profiler object */
NCS_HIDDEN void ncs_hwm_collect(void);     /* writer thread: decoded buffers -> values */
NCS_HIDDEN void ncs_hwm_after_fork(void);
NCS_HIDDEN void ncs_hwm_free(void); /* at unload: what it allocated (no CUPTI call) */
typedef struct {
  uint32_t state; /* NCS_HWM_* */
  uint64_t since_ns;
  char reason[400], chip[64];
  uint32_t replay, passes, level, thread, buffer_ranges, nmetrics;
  const char *metric[NCS_RANGE_MAX_METRICS]; /* stable for the load */
  uint8_t metric_type[NCS_RANGE_MAX_METRICS];
  uint64_t forwarded, with_values, cupti_dropped, no_buffer, session_lost, buffers, not_forwarded,
      other_threads;
} ncs_hwm_status_t;
NCS_HIDDEN void ncs_hwm_status(ncs_hwm_status_t *s);

/* ---- range/range.c, range/range_writer.c (user ranges, above GPU truth): what cupti.c and
 * metrics.c call there, declared here so that gpu/ does not include range/ */
/* The calling thread's ranges (initial-exec TLS: kept to 8 bytes, as the static TLS space a
 * dlopen'ed library may use is small). */
typedef struct {
  uint32_t depth; /* push/pop ranges open (levels), counted whether or not their records got in */
  uint8_t mx;     /* metrics: 0 not decided, 1 the metrics thread, 2 another thread */
  uint8_t mx_open; /* a range of this thread is open in CUPTI's range profiler */
  uint16_t pad_;
} ncs_range_tls_t;
extern NCS_HIDDEN __attribute__((tls_model("initial-exec"))) _Thread_local ncs_range_tls_t ncs_range_t;

/* a kernel or graph launch on this thread (CUPTI's launch callback, gpu/cupti.c) */
NCS_HIDDEN void ncs_range_launch(uint32_t corr, int graph);
/* metrics (gpu/metrics.c) hand over values: metrics id, values in the metric list's order */
NCS_HIDDEN void ncs_range_metric_values(uint64_t mid, int replay, const double *v, uint32_t n);

/* ---- writer.c: what gpu_writer.c writes through */
NCS_HIDDEN int ncs_writer_chunk(uint16_t type, const ncs_buf_t *b); /* strings first; -1 lost */
NCS_HIDDEN uint32_t ncs_writer_string(const char *s);                /* a new string id, 0 when full */

#endif
