/* fake_cupti.c - a fake libcupti for the tests: the subset of CUPTI's C API the plugin calls,
 * plus a control API through which nccl-sim plays the CUDA driver (docs/testing.md "Fake CUPTI").
 *
 * Built as libcupti.so.13 (SONAME libcupti.so.13) in the build tree's fakecupti/ directory.
 * nccl-sim --cupti PATH loads it before the plugin, so the plugin finds it already loaded, the way
 * it finds PyTorch's copy in a real process.
 *
 * CUPTI side: one subscriber at a time (a second gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
 * and the holder's name, "CUPTI for <name>"), callbacks per (domain, cbid), activity buffers
 * requested through the registered callback and handed back when full or flushed, records laid
 * out like CUpti_ActivityKernel10 (216 bytes, the fields the plugin reads at their real offsets),
 * timestamps in CLOCK_REALTIME ns like CUPTI's on Linux.
 *
 * Driver side (fakecupti_*): a kernel launch fires the driver callback around it and, when its
 * stream is capturing, GRAPHNODE_CREATED inside it; instantiation fires GRAPHNODE_CLONED for every
 * node and GRAPHEXEC_CREATED; a graph launch fires the cuGraphLaunch callback. Kernels are reported
 * with the times nccl-sim gives (CLOCK_MONOTONIC ns, converted here).
 *
 * FAKECUPTI (comma-separated) injects what real CUPTI can do to the plugin:
 *   holder=NAME        another client subscribed first (the plugin must step aside)
 *   subscribe_error=N  cuptiSubscribe fails with N;  enable_error=N  cuptiActivityEnable fails with N
 *   flush_error_after=N  cuptiActivityFlushAll fails from its (N+1)-th call on (errors mid-run)
 *   flush_error_after_kernels=N  ... fails once N kernel records were handed back (by a flush or
 *                      a full buffer): what came before is delivered, whatever the flushes' pace
 *   bad_every=N        every N-th kernel record is bad: zero start, then end < start, by turns
 *   other_every=N      after every N-th kernel record, a record of another activity kind
 *   corrupt_after=N    the buffer after the N-th record is cut by an undecodable record (once)
 *   drop_every=N       every N-th kernel record is dropped and counted as CUPTI drops it
 *   buffer_records=N   hand a buffer back after N records (default: when full)
 *   skew_ns=N          CUPTI's clock reads N ns off CLOCK_REALTIME
 *   no_clone           no GRAPHNODE_CLONED callbacks;  no_graph_launch  no cuGraphLaunch callback
 * and for the range profiler (below):
 *   privileges         cuptiRangeProfilerEnable fails with CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
 *   counters_busy      ... with CUPTI_ERROR_HARDWARE_BUSY
 *   no_nvlink          the chip has no NVLink metrics (unknown names)
 *   nvlink_passes=N    its NVLink metrics need N passes
 *   eval_delay_us=N    each cuptiProfilerHostEvaluateToGpuValues takes N us (a slow writer)
 *
 * The range profiler (cupti_range_profiler.h and the host API): a user range counts what nccl-sim
 * launched while it was open (fakecupti_launch, on any thread: the context's work), per pass: a
 * launch of correlation id c adds one launch and c. Metric values are made from those counts
 * (rp_value below), so a test knows each range's values from what nccl-sim launched inside it
 * (its --range-truth). A metric's pass is its index in the list modulo the passes the list
 * needs, which is the most any of its metrics needs (sm__throughput.* 8, like GH100's).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/cupti_decl.h"

#define EXPORT __attribute__((visibility("default")))
#define REC_BYTES 216   /* sizeof(CUpti_ActivityKernel10) */
#define OTHER_BYTES 64  /* a record of another kind */
#define OTHER_KIND 5    /* CUPTI_ACTIVITY_KIND_RUNTIME */
#define BAD_KIND 0x7777 /* no such kind: cuptiActivityGetNextRecord fails on it */
#define MAX_GRAPHS 4096
#define MAX_NODES 64

typedef struct {
  int used;
  uint32_t nnodes;
  int kernel[MAX_NODES]; /* node types: 1 kernel */
} graph_t;

static struct {
  pthread_mutex_t mu;
  int subscribed;
  char holder[64];
  ncs_cupti_callback_fn cb;
  void *ud;
  uint8_t enabled[4][1024]; /* [domain][cbid] */
  int activity;
  ncs_cupti_buf_request_fn req;
  ncs_cupti_buf_complete_fn done;
  uint8_t *buf;
  size_t cap, used;
  uint32_t nrec;
  uint64_t dropped_pending; /* reported with the next completed buffer */
  uint32_t next_corr, next_graph;
  graph_t graphs[MAX_GRAPHS];
  int64_t rt_minus_mono;
  uint64_t kernels, flushes;
  uint64_t buf_kernels, delivered; /* kernel records in the buffer, and handed back */
  int corrupted;
  /* FAKECUPTI */
  int sub_err, enable_err, no_clone, no_glaunch;
  long flush_ok, flush_ok_kernels, bad_every, other_every, corrupt_after, drop_every, buffer_records;
  int64_t skew;
  int privileges, counters_busy, no_nvlink, nvlink_passes;
  long eval_delay_us;
} F = {.mu = PTHREAD_MUTEX_INITIALIZER, .next_corr = 1, .next_graph = 1};

static uint64_t clk(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static long opt(const char *s, const char *key, long def) {
  size_t n = strlen(key);
  for (const char *p = s; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (!strncmp(p, key, n) && (p[n] == '=' || p[n] == ',' || !p[n])) return p[n] == '=' ? strtol(p + n + 1, NULL, 0) : 1;
  return def;
}

__attribute__((constructor)) static void fake_init(void) {
  const char *s = getenv("FAKECUPTI");
  if (!s) s = "";
  const char *h = strstr(s, "holder=");
  if (h) {
    size_t n = strcspn(h + 7, ",");
    snprintf(F.holder, sizeof F.holder, "%.*s", (int)n, h + 7);
  }
  F.sub_err = (int)opt(s, "subscribe_error", 0), F.enable_err = (int)opt(s, "enable_error", 0);
  F.flush_ok = opt(s, "flush_error_after", -1), F.bad_every = opt(s, "bad_every", 0);
  F.flush_ok_kernels = opt(s, "flush_error_after_kernels", -1);
  F.other_every = opt(s, "other_every", 0), F.corrupt_after = opt(s, "corrupt_after", 0);
  F.drop_every = opt(s, "drop_every", 0), F.buffer_records = opt(s, "buffer_records", 0);
  F.skew = opt(s, "skew_ns", 0), F.no_clone = (int)opt(s, "no_clone", 0);
  F.no_glaunch = (int)opt(s, "no_graph_launch", 0);
  F.privileges = (int)opt(s, "privileges", 0), F.counters_busy = (int)opt(s, "counters_busy", 0);
  F.no_nvlink = (int)opt(s, "no_nvlink", 0), F.nvlink_passes = (int)opt(s, "nvlink_passes", 1);
  F.eval_delay_us = opt(s, "eval_delay_us", 0);
  F.rt_minus_mono = (int64_t)(clk(CLOCK_REALTIME) - clk(CLOCK_MONOTONIC));
}

static uint64_t cupti_time(uint64_t mono) { return (uint64_t)((int64_t)mono + F.rt_minus_mono + F.skew); }

/* ------------------------------------------------------------------ CUPTI API */

EXPORT ncs_cupti_result_t cuptiGetVersion(uint32_t *v) {
  *v = 130001;
  return 0;
}

EXPORT ncs_cupti_result_t cuptiGetResultString(ncs_cupti_result_t r, const char **s) {
  switch (r) {
  case 0: *s = "CUPTI_SUCCESS"; break;
  case NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
  case NCS_CUPTI_ERROR_NOT_INITIALIZED: *s = "CUPTI_ERROR_NOT_INITIALIZED"; break;
  default: *s = "CUPTI_ERROR_UNKNOWN (fake)"; break;
  }
  return 0;
}

static ncs_cupti_result_t subscribe(ncs_cupti_subscriber_t *sub, ncs_cupti_callback_fn cb, void *ud,
                                    const char *name, char *old, size_t oldn) {
  pthread_mutex_lock(&F.mu);
  ncs_cupti_result_t r = 0;
  if (F.sub_err)
    r = F.sub_err;
  else if (F.subscribed || F.holder[0]) {
    r = NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if (old && oldn) snprintf(old, oldn, "%s", F.holder);
  } else {
    F.subscribed = 1, F.cb = cb, F.ud = ud;
    snprintf(F.holder, sizeof F.holder, "CUPTI for %s", name ? name : "<not provided>");
    *sub = (ncs_cupti_subscriber_t)&F;
  }
  pthread_mutex_unlock(&F.mu);
  return r;
}

EXPORT ncs_cupti_result_t cuptiSubscribe(ncs_cupti_subscriber_t *sub, ncs_cupti_callback_fn cb, void *ud) {
  return subscribe(sub, cb, ud, NULL, NULL, 0);
}

EXPORT ncs_cupti_result_t cuptiSubscribe_v2(ncs_cupti_subscriber_t *sub, ncs_cupti_callback_fn cb, void *ud,
                                            ncs_cupti_subscriber_params_t *p) {
  if (p && p->structSize < sizeof *p) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  return subscribe(sub, cb, ud, p ? p->subscriberName : NULL, p ? p->oldSubscriberName : NULL,
                   p ? p->oldSubscriberSize : 0);
}

EXPORT ncs_cupti_result_t cuptiUnsubscribe(ncs_cupti_subscriber_t sub) {
  pthread_mutex_lock(&F.mu);
  ncs_cupti_result_t r = sub == (ncs_cupti_subscriber_t)&F && F.subscribed ? 0 : NCS_CUPTI_ERROR_INVALID_PARAMETER;
  if (!r) {
    F.subscribed = 0, F.cb = NULL, F.holder[0] = 0;
    memset(F.enabled, 0, sizeof F.enabled);
  }
  pthread_mutex_unlock(&F.mu);
  return r;
}

EXPORT ncs_cupti_result_t cuptiEnableCallback(uint32_t en, ncs_cupti_subscriber_t sub, int domain, uint32_t cbid) {
  if (sub != (ncs_cupti_subscriber_t)&F || domain < 0 || domain > 3 || cbid >= 1024)
    return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&F.mu);
  F.enabled[domain][cbid] = en != 0;
  pthread_mutex_unlock(&F.mu);
  return 0;
}

EXPORT ncs_cupti_result_t cuptiActivityRegisterCallbacks(ncs_cupti_buf_request_fn req, ncs_cupti_buf_complete_fn done) {
  if (!req || !done) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&F.mu);
  F.req = req, F.done = done;
  pthread_mutex_unlock(&F.mu);
  return 0;
}

static ncs_cupti_result_t set_activity(int kind, int on) {
  if (on && F.enable_err) return F.enable_err;
  pthread_mutex_lock(&F.mu);
  if (kind == NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) F.activity = on;
  pthread_mutex_unlock(&F.mu);
  return 0;
}
EXPORT ncs_cupti_result_t cuptiActivityEnable(int kind) { return set_activity(kind, 1); }
EXPORT ncs_cupti_result_t cuptiActivityDisable(int kind) { return set_activity(kind, 0); }

static size_t rec_size(const uint8_t *p) {
  uint32_t kind;
  memcpy(&kind, p, sizeof kind);
  return kind == NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? REC_BYTES : kind == OTHER_KIND ? OTHER_BYTES : 0;
}

/* *rec NULL: start at the buffer's first record, else the one after *rec. */
EXPORT ncs_cupti_result_t cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, void **rec) {
  size_t off = 0;
  if (*rec) {
    off = (size_t)((uint8_t *)*rec - buf);
    size_t n = off + 4 <= valid ? rec_size((uint8_t *)*rec) : 0;
    if (!n) return 21; /* CUPTI_ERROR_INVALID_KIND */
    off += n;
  }
  if (off >= valid) return NCS_CUPTI_ERROR_MAX_LIMIT_REACHED;
  if (off + 4 > valid || !rec_size(buf + off) || off + rec_size(buf + off) > valid) return 21;
  *rec = buf + off;
  return 0;
}

EXPORT ncs_cupti_result_t cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *n) {
  (void)ctx, (void)stream;
  pthread_mutex_lock(&F.mu);
  *n = (size_t)F.dropped_pending;
  F.dropped_pending = 0;
  pthread_mutex_unlock(&F.mu);
  return 0;
}

/* Hand the current buffer back (the caller holds F.mu; it is released around the callback). */
static void complete_locked(void) {
  if (!F.buf) return;
  uint8_t *b = F.buf;
  size_t cap = F.cap, used = F.used;
  F.buf = NULL, F.cap = F.used = 0, F.nrec = 0;
  F.delivered += F.buf_kernels, F.buf_kernels = 0;
  ncs_cupti_buf_complete_fn done = F.done;
  pthread_mutex_unlock(&F.mu);
  if (done) done(NULL, 0, b, cap, used);
  pthread_mutex_lock(&F.mu);
}

EXPORT ncs_cupti_result_t cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&F.mu);
  F.flushes++;
  ncs_cupti_result_t r = (F.flush_ok >= 0 && (long)F.flushes > F.flush_ok) ||
                                 (F.flush_ok_kernels >= 0 && F.delivered >= (uint64_t)F.flush_ok_kernels)
                             ? 999
                             : 0;
  if (!r) complete_locked();
  pthread_mutex_unlock(&F.mu);
  return r;
}

EXPORT ncs_cupti_result_t cuptiActivityFlushPeriod(uint32_t ms) {
  (void)ms;
  return 0;
}

EXPORT ncs_cupti_result_t cuptiGetTimestamp(uint64_t *t) {
  *t = cupti_time(clk(CLOCK_MONOTONIC));
  return 0;
}

/* handles: node = (1 << 62) | (graph << 32) | index, graph and exec = (1 << 61) | id */
#define NODE_H(g, i) ((void *)(uintptr_t)(1ull << 62 | (uint64_t)(g) << 32 | (i)))
#define GRAPH_H(g) ((void *)(uintptr_t)(1ull << 61 | (g)))
EXPORT ncs_cupti_result_t cuptiGetGraphNodeId(void *node, uint64_t *id) {
  uint64_t v = (uint64_t)(uintptr_t)node;
  if (!(v >> 62)) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  *id = v & ~(1ull << 62);
  return 0;
}
EXPORT ncs_cupti_result_t cuptiGetGraphId(void *graph, uint32_t *id) {
  uint64_t v = (uint64_t)(uintptr_t)graph;
  if (!(v >> 61)) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  *id = (uint32_t)v;
  return 0;
}
EXPORT ncs_cupti_result_t cuptiGetGraphExecId(void *exec, uint32_t *id) { return cuptiGetGraphId(exec, id); }

/* ------------------------------------------------------------------ the driver (nccl-sim) */

static void fire(int domain, uint32_t cbid, const void *data) {
  pthread_mutex_lock(&F.mu);
  ncs_cupti_callback_fn cb = F.subscribed && F.enabled[domain][cbid] ? F.cb : NULL;
  void *ud = F.ud;
  pthread_mutex_unlock(&F.mu);
  if (cb) cb(ud, domain, cbid, data);
}

static void fire_graph(uint32_t cbid, void *graph, void *orig_graph, void *node, void *orig_node, void *exec) {
  ncs_cupti_graphdata_t gd = {graph, orig_graph, node, orig_node, NCS_CU_GRAPH_NODE_TYPE_KERNEL, NULL, exec};
  ncs_cupti_resdata_t rd = {NULL, NULL, &gd};
  fire(NCS_CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}

/* A new graph to capture into: its id. */
EXPORT uint32_t fakecupti_graph_new(void) {
  pthread_mutex_lock(&F.mu);
  uint32_t g = F.next_graph < MAX_GRAPHS ? F.next_graph++ : 0;
  if (g) memset(&F.graphs[g], 0, sizeof F.graphs[g]), F.graphs[g].used = 1;
  pthread_mutex_unlock(&F.mu);
  return g;
}

static void rp_launch(uint32_t corr);

/* cuLaunchKernelEx on a stream, capturing into `graph` (0: not capturing). Returns the
 * correlation id; *node the captured node's id (0 when not captured). */
EXPORT uint32_t fakecupti_launch(int graph, uint64_t *node) {
  pthread_mutex_lock(&F.mu);
  uint32_t corr = F.next_corr++;
  if (graph <= 0) rp_launch(corr);
  pthread_mutex_unlock(&F.mu);
  ncs_cupti_cbdata_t cb = {.callbackSite = NCS_CUPTI_API_ENTER, .functionName = "cuLaunchKernelEx",
                           .correlationId = corr};
  fire(NCS_CUPTI_CB_DOMAIN_DRIVER_API, NCS_CUPTI_DRIVER_CBID_cuLaunchKernelEx, &cb);
  if (node) *node = 0;
  if (graph > 0 && graph < MAX_GRAPHS) {
    pthread_mutex_lock(&F.mu);
    graph_t *g = &F.graphs[graph];
    uint32_t i = g->nnodes < MAX_NODES ? g->nnodes++ : MAX_NODES;
    if (i < MAX_NODES) g->kernel[i] = 1;
    pthread_mutex_unlock(&F.mu);
    if (i < MAX_NODES) {
      fire_graph(NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, GRAPH_H(graph), NULL, NODE_H(graph, i), NULL, NULL);
      if (node) *node = (uint64_t)graph << 32 | i;
    }
  }
  cb.callbackSite = NCS_CUPTI_API_EXIT;
  fire(NCS_CUPTI_CB_DOMAIN_DRIVER_API, NCS_CUPTI_DRIVER_CBID_cuLaunchKernelEx, &cb);
  return corr;
}

/* cudaGraphInstantiate: a clone graph whose id is the exec graph's id. */
EXPORT uint32_t fakecupti_instantiate(uint32_t graph) {
  uint32_t exec = fakecupti_graph_new();
  if (!exec || !graph || graph >= MAX_GRAPHS) return exec;
  pthread_mutex_lock(&F.mu);
  F.graphs[exec] = F.graphs[graph];
  uint32_t n = F.graphs[graph].nnodes;
  pthread_mutex_unlock(&F.mu);
  for (uint32_t i = 0; i < n && !F.no_clone; i++)
    fire_graph(NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, GRAPH_H(exec), GRAPH_H(graph), NODE_H(exec, i),
               NODE_H(graph, i), NULL);
  fire_graph(NCS_CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, GRAPH_H(graph), NULL, NULL, NULL, GRAPH_H(exec));
  return exec;
}

/* cuGraphLaunch: the correlation id every kernel of this launch carries. */
EXPORT uint32_t fakecupti_graph_launch(uint32_t exec, void *stream) {
  pthread_mutex_lock(&F.mu);
  uint32_t corr = F.next_corr++;
  pthread_mutex_unlock(&F.mu);
  ncs_cu_graph_launch_params_t p = {GRAPH_H(exec), stream};
  ncs_cupti_cbdata_t cb = {.callbackSite = NCS_CUPTI_API_ENTER, .functionName = "cuGraphLaunch",
                           .functionParams = &p, .correlationId = corr};
  if (!F.no_glaunch) fire(NCS_CUPTI_CB_DOMAIN_DRIVER_API, NCS_CUPTI_DRIVER_CBID_cuGraphLaunch, &cb);
  cb.callbackSite = NCS_CUPTI_API_EXIT;
  if (!F.no_glaunch) fire(NCS_CUPTI_CB_DOMAIN_DRIVER_API, NCS_CUPTI_DRIVER_CBID_cuGraphLaunch, &cb);
  return corr;
}

/* Room for n bytes in the current buffer, asking for one when needed (F.mu held). */
static uint8_t *room_locked(size_t n) {
  if (F.buf && (F.used + n > F.cap || (F.buffer_records > 0 && F.nrec >= (uint32_t)F.buffer_records)))
    complete_locked();
  if (!F.buf) {
    ncs_cupti_buf_request_fn req = F.req;
    uint8_t *b = NULL;
    size_t cap = 0, maxr = 0;
    pthread_mutex_unlock(&F.mu);
    if (req) req(&b, &cap, &maxr);
    pthread_mutex_lock(&F.mu);
    if (!b || cap < REC_BYTES || ((uintptr_t)b & 7)) return NULL;
    if (F.buf) complete_locked(); /* another thread got one meanwhile */
    F.buf = b, F.cap = cap, F.used = 0, F.nrec = 0;
  }
  uint8_t *p = F.buf + F.used;
  F.used += n;
  F.nrec++;
  return p;
}

/* A kernel ran from start to end (CLOCK_MONOTONIC ns). Returns 1 when a record was queued. */
EXPORT int fakecupti_kernel(uint32_t corr, uint32_t device, uint32_t stream, const char *name,
                            uint64_t start, uint64_t end, uint32_t graph, uint64_t node) {
  pthread_mutex_lock(&F.mu);
  int ok = 0;
  if (!F.activity) goto out;
  uint64_t k = ++F.kernels;
  if (F.drop_every && k % (uint64_t)F.drop_every == 0) {
    F.dropped_pending++;
    goto out;
  }
  uint8_t *p = room_locked(REC_BYTES);
  if (!p) { /* no buffer: CUPTI drops the record and counts it */
    F.dropped_pending++;
    goto out;
  }
  memset(p, 0, REC_BYTES);
  ncs_cupti_kernel_t r;
  memset(&r, 0, sizeof r);
  r.kind = NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.start = cupti_time(start), r.end = cupti_time(end), r.completed = r.end;
  r.deviceId = device, r.streamId = stream, r.correlationId = corr, r.name = name;
  r.graphId = graph, r.graphNodeId = graph ? node : 0;
  if (F.bad_every && k % (uint64_t)F.bad_every == 0) {
    if ((k / (uint64_t)F.bad_every) & 1)
      r.start = 0;
    else
      r.end = r.start - 1000;
  }
  memcpy(p, &r, sizeof r);
  F.buf_kernels++;
  ok = 1;
  if (F.other_every && k % (uint64_t)F.other_every == 0) {
    uint8_t *o = room_locked(OTHER_BYTES);
    if (o) {
      memset(o, 0, OTHER_BYTES);
      uint32_t kind = OTHER_KIND;
      memcpy(o, &kind, sizeof kind);
    }
  }
  if (F.corrupt_after && !F.corrupted && k >= (uint64_t)F.corrupt_after) {
    uint8_t *o = room_locked(OTHER_BYTES); /* the rest of this buffer cannot be decoded */
    if (o) {
      uint32_t kind = BAD_KIND;
      memset(o, 0, OTHER_BYTES);
      memcpy(o, &kind, sizeof kind);
      F.corrupted = 1;
      complete_locked(); /* nothing after it in this buffer: every kernel is still accounted for */
    }
  }
out:
  pthread_mutex_unlock(&F.mu);
  return ok;
}

/* Another CUPTI client (PyTorch's profiler, say) tries to subscribe: CUPTI's answer, and the
 * holder it names. A successful one unsubscribes at once. */
EXPORT int fakecupti_subscribe_other(const char *name, char *holder, size_t n) {
  ncs_cupti_subscriber_t s;
  ncs_cupti_subscriber_params_t p = {sizeof p, name, holder, n};
  ncs_cupti_result_t r = cuptiSubscribe_v2(&s, NULL, NULL, &p);
  if (!r) cuptiUnsubscribe(s);
  return r;
}

/* ------------------------------------------------------------------ the range profiler */

#define RP_NAME 48
#define RP_PASSES 8
#define RP_MAGIC 0x46524e47u /* "GNRF" */
#define RP_METRICS 32

typedef struct {
  char name[RP_NAME];
  uint64_t launches[RP_PASSES], corrsum[RP_PASSES];
} rp_range_t;

typedef struct { /* a counter data image: this header, then `max` ranges */
  uint32_t magic, max, n, pad;
} rp_image_t;

typedef struct { /* a config image, and the host object's list */
  uint32_t magic, n;
  int passes;
  char names[RP_METRICS][64];
} rp_config_t;

static struct {
  int enabled;
  rp_image_t *image; /* of SetConfig */
  size_t max_per_pass;
  int passes, pass, started, open, slot;
  size_t pushed;     /* ranges pushed in the pass */
  uint64_t dropped;  /* reported by the next decode */
} RP = {.slot = -1};

static const struct {
  const char *name;
  int passes, type; /* CUpti_MetricType */
} rp_known[] = {{"gpu__time_duration.sum", 1, 0},  {"dram__bytes_read.sum", 1, 0},
                {"dram__bytes_write.sum", 1, 0},   {"nvlrx__bytes.sum", 1, 0},
                {"nvltx__bytes.sum", 1, 0},        {"sm__cycles_active.avg", 1, 0},
                {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 1, 1},
                {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 8, 2}};

static int rp_metric(const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < sizeof rp_known / sizeof rp_known[0]; i++)
    if (!strcmp(rp_known[i].name, name)) return F.no_nvlink && strstr(name, "nvl") == name ? -1 : (int)i;
  return -1;
}

static int rp_passes(int m) { return strstr(rp_known[m].name, "nvl") == rp_known[m].name ? F.nvlink_passes : rp_known[m].passes; }

/* A metric's value for a range: made from what was launched inside it in the metric's pass. */
static double rp_value(const char *name, uint64_t n, uint64_t sum) {
  if (!strcmp(name, "gpu__time_duration.sum")) return (double)n * 10000.0;
  if (!strcmp(name, "dram__bytes_read.sum")) return (double)n * 1048576.0 + (double)sum;
  if (!strcmp(name, "dram__bytes_write.sum")) return (double)n * 524288.0 + (double)sum;
  if (!strcmp(name, "nvlrx__bytes.sum")) return (double)n * 4096.0;
  if (!strcmp(name, "nvltx__bytes.sum")) return (double)n * 2048.0;
  if (!strcmp(name, "sm__cycles_active.avg")) return (double)n * 1000.0;
  return 100.0 * (double)n / (double)(n + 1); /* the ratios */
}

static void rp_launch(uint32_t corr) { /* F.mu held */
  if (!RP.open || RP.slot < 0 || !RP.image) return;
  rp_range_t *r = (rp_range_t *)(RP.image + 1) + RP.slot;
  r->launches[RP.pass]++;
  r->corrsum[RP.pass] += corr;
}

/* the calls that change the profiler's state hold F.mu (launches come from other threads) */
static ncs_cupti_result_t rp_done(ncs_cupti_result_t r) {
  pthread_mutex_unlock(&F.mu);
  return r;
}

EXPORT ncs_cupti_result_t cuptiProfilerInitialize(ncs_cupti_prof_init_t *p) { return p && p->structSize ? 0 : 1; }

EXPORT ncs_cupti_result_t cuptiDeviceGetChipName(ncs_cupti_chip_name_t *p) {
  if (!p || p->structSize != NCS_PSIZE(ncs_cupti_chip_name_t, pChipName)) return 1;
  p->pChipName = "FAKE100";
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerGetCounterAvailability(ncs_cupti_avail_t *p) {
  if (!p || !p->ctx || p->structSize != NCS_PSIZE(ncs_cupti_avail_t, pCounterAvailabilityImage)) return 1;
  if (!p->pCounterAvailabilityImage) {
    p->counterAvailabilityImageSize = 64;
    return 0;
  }
  if (p->counterAvailabilityImageSize < 64) return 1;
  memset(p->pCounterAvailabilityImage, 0xA5, 64);
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerHostInitialize(ncs_cupti_host_init_t *p) {
  if (!p || p->structSize != NCS_PSIZE(ncs_cupti_host_init_t, pHostObject) || !p->pChipName ||
      strcmp(p->pChipName, "FAKE100") || !p->pCounterAvailabilityImage || p->profilerType != 0)
    return 1;
  rp_config_t *h = calloc(1, sizeof *h);
  if (!h) return 1;
  h->magic = RP_MAGIC, h->passes = 1;
  p->pHostObject = h;
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerHostDeinitialize(ncs_cupti_host_deinit_t *p) {
  if (!p || !p->pHostObject) return 1;
  free(p->pHostObject);
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerHostConfigAddMetrics(ncs_cupti_host_add_t *p) {
  rp_config_t *h = p ? p->pHostObject : NULL;
  if (!h || h->magic != RP_MAGIC) return 1;
  for (size_t i = 0; i < p->numMetrics; i++) {
    int m = rp_metric(p->ppMetricNames[i]);
    if (m < 0 || h->n >= RP_METRICS) return 17; /* CUPTI_ERROR_INVALID_METRIC_NAME */
    snprintf(h->names[h->n++], sizeof h->names[0], "%s", rp_known[m].name);
    if (rp_passes(m) > h->passes) h->passes = rp_passes(m);
  }
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerHostGetConfigImageSize(ncs_cupti_host_config_size_t *p) {
  if (!p || !p->pHostObject) return 1;
  p->configImageSize = sizeof(rp_config_t);
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerHostGetConfigImage(ncs_cupti_host_config_t *p) {
  if (!p || !p->pHostObject || !p->pConfigImage || p->configImageSize < sizeof(rp_config_t)) return 1;
  memcpy(p->pConfigImage, p->pHostObject, sizeof(rp_config_t));
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerHostGetNumOfPasses(ncs_cupti_host_passes_t *p) {
  const rp_config_t *c = p ? (const rp_config_t *)p->pConfigImage : NULL;
  if (!c || p->configImageSize < sizeof *c || c->magic != RP_MAGIC) return 1;
  p->numOfPasses = (size_t)c->passes;
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerHostGetMetricProperties(ncs_cupti_host_props_t *p) {
  int m = p ? rp_metric(p->pMetricName) : -1;
  if (m < 0) return 17;
  p->metricType = rp_known[m].type;
  p->pDescription = p->pHwUnit = p->pDimUnit = "";
  return 0;
}

EXPORT ncs_cupti_result_t cuptiProfilerHostEvaluateToGpuValues(ncs_cupti_host_eval_t *p) {
  const rp_config_t *h = p ? p->pHostObject : NULL;
  const rp_image_t *im = p ? (const rp_image_t *)p->pCounterDataImage : NULL;
  if (!h || h->magic != RP_MAGIC || !im || im->magic != RP_MAGIC || p->rangeIndex >= im->n) return 1;
  if (F.eval_delay_us) usleep((useconds_t)F.eval_delay_us);
  const rp_range_t *r = (const rp_range_t *)(im + 1) + p->rangeIndex;
  for (size_t i = 0; i < p->numMetrics; i++) {
    int pass = (int)(i % (size_t)h->passes);
    p->pMetricValues[i] = rp_value(p->ppMetricNames[i], r->launches[pass], r->corrsum[pass]);
  }
  return 0;
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerEnable(ncs_cupti_rp_enable_t *p) {
  if (!p || !p->ctx || p->structSize != NCS_PSIZE(ncs_cupti_rp_enable_t, pRangeProfilerObject)) return 1;
  if (F.privileges) return NCS_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  if (F.counters_busy) return NCS_CUPTI_ERROR_HARDWARE_BUSY;
  pthread_mutex_lock(&F.mu);
  if (RP.enabled) return rp_done(7); /* CUPTI_ERROR_INVALID_OPERATION */
  RP.enabled = 1;
  p->pRangeProfilerObject = &RP;
  return rp_done(0);
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerDisable(ncs_cupti_rp_obj_t *p) {
  pthread_mutex_lock(&F.mu);
  if (!p || p->pRangeProfilerObject != &RP || !RP.enabled) return rp_done(1);
  RP.enabled = 0, RP.image = NULL, RP.started = RP.open = 0;
  return rp_done(0);
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerGetCounterDataSize(ncs_cupti_rp_size_t *p) {
  if (!p || p->pRangeProfilerObject != &RP || !p->maxNumOfRanges || p->maxNumRangeTreeNodes < p->maxNumOfRanges)
    return 1;
  p->counterDataSize = sizeof(rp_image_t) + p->maxNumOfRanges * sizeof(rp_range_t);
  return 0;
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerCounterDataImageInitialize(ncs_cupti_rp_image_init_t *p) {
  if (!p || p->pRangeProfilerObject != &RP || !p->pCounterData || p->counterDataSize < sizeof(rp_image_t))
    return 1;
  memset(p->pCounterData, 0, p->counterDataSize);
  rp_image_t *im = (rp_image_t *)p->pCounterData;
  im->magic = RP_MAGIC;
  im->max = (uint32_t)((p->counterDataSize - sizeof *im) / sizeof(rp_range_t));
  return 0;
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerSetConfig(ncs_cupti_rp_config_t *p) {
  const rp_config_t *c = p ? (const rp_config_t *)p->pConfig : NULL;
  rp_image_t *im = p ? (rp_image_t *)p->pCounterDataImage : NULL;
  pthread_mutex_lock(&F.mu);
  if (!p || p->structSize != NCS_PSIZE(ncs_cupti_rp_config_t, targetNestingLevel) ||
      p->pRangeProfilerObject != &RP || !RP.enabled || RP.started || !c || c->magic != RP_MAGIC || !im ||
      im->magic != RP_MAGIC || p->range != NCS_CUPTI_USER_RANGE || p->replayMode != NCS_CUPTI_USER_REPLAY ||
      !p->maxRangesPerPass || p->numNestingLevels != 1)
    return rp_done(1);
  RP.image = im, RP.max_per_pass = p->maxRangesPerPass, RP.passes = c->passes, RP.pass = 0;
  return rp_done(0);
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerStart(ncs_cupti_rp_obj_t *p) {
  pthread_mutex_lock(&F.mu);
  if (!p || p->pRangeProfilerObject != &RP || !RP.image || RP.started) return rp_done(7);
  RP.started = 1, RP.pushed = 0;
  return rp_done(0);
}

/* A range of the same name in the buffer is the same range in another pass (replay). Beyond the
 * buffer's ranges, or the pass's, it is dropped, and counted at the next decode. */
EXPORT ncs_cupti_result_t cuptiRangeProfilerPushRange(ncs_cupti_rp_push_t *p) {
  pthread_mutex_lock(&F.mu);
  if (!p || p->pRangeProfilerObject != &RP || !RP.started || RP.open || !p->pRangeName) return rp_done(7);
  rp_range_t *rs = (rp_range_t *)(RP.image + 1);
  RP.slot = -1;
  for (uint32_t i = 0; i < RP.image->n; i++)
    if (!strcmp(rs[i].name, p->pRangeName)) RP.slot = (int)i;
  if (RP.slot < 0 && RP.image->n < RP.image->max && RP.pushed < RP.max_per_pass) {
    RP.slot = (int)RP.image->n++;
    snprintf(rs[RP.slot].name, RP_NAME, "%s", p->pRangeName);
  }
  if (RP.slot < 0) RP.dropped++;
  RP.pushed++, RP.open = 1;
  return rp_done(0);
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerPopRange(ncs_cupti_rp_obj_t *p) {
  pthread_mutex_lock(&F.mu);
  if (!p || p->pRangeProfilerObject != &RP || !RP.open) return rp_done(7);
  RP.open = 0, RP.slot = -1;
  return rp_done(0);
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerStop(ncs_cupti_rp_stop_t *p) {
  pthread_mutex_lock(&F.mu);
  if (!p || p->pRangeProfilerObject != &RP || !RP.started || RP.open) return rp_done(7);
  RP.started = 0, RP.pass = (RP.pass + 1) % RP.passes;
  p->isAllPassSubmitted = RP.pass == 0, p->passIndex = (size_t)RP.pass, p->targetNestingLevel = 1;
  return rp_done(0);
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerDecodeData(ncs_cupti_rp_decode_t *p) {
  pthread_mutex_lock(&F.mu);
  if (!p || p->pRangeProfilerObject != &RP || RP.started || RP.pass) return rp_done(7);
  p->numOfRangeDropped = (size_t)RP.dropped, RP.dropped = 0;
  return rp_done(0);
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerGetCounterDataInfo(ncs_cupti_rp_info_t *p) {
  const rp_image_t *im = p ? (const rp_image_t *)p->pCounterDataImage : NULL;
  if (!im || im->magic != RP_MAGIC) return 1;
  p->numTotalRanges = im->n;
  return 0;
}

EXPORT ncs_cupti_result_t cuptiRangeProfilerCounterDataGetRangeInfo(ncs_cupti_rp_range_t *p) {
  const rp_image_t *im = p ? (const rp_image_t *)p->pCounterDataImage : NULL;
  if (!im || im->magic != RP_MAGIC || p->rangeIndex >= im->n) return 1;
  p->rangeName = ((const rp_range_t *)(im + 1))[p->rangeIndex].name;
  return 0;
}
