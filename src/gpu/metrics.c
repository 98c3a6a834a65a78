/* metrics.c - hardware metrics per user range, through CUPTI's range profiler (docs/ranges.md).
 *
 * What is measured: the ranges of one thread, the metrics thread (the first to push a range at
 * the metrics level, NCCLSCOPE_RANGE_METRICS_LEVEL, with a CUDA context current), at that level only.
 * CUPTI's user ranges belong to a context, not a thread, and each nesting level costs a pass of
 * its own: one thread and one level are what one pass can measure without mixing ranges up.
 * The metric list (NCCLSCOPE_RANGE_METRICS) must fit one pass; a list that needs more is refused with
 * the reason, unless NCCLSCOPE_RANGE_REPLAY=user asks for replay: then each pass measures one
 * occurrence of a range, and the values combine as many successive ranges of the same name as
 * there are passes (not for production: the passes are different iterations).
 *
 * Policy: metrics need CUPTI, and are used only while the plugin holds CUPTI (cupti.c's
 * subscription): when another tool holds it, that tool may count too, and ncclscope steps aside.
 *
 * The 2000-range limit others hit is the counter buffer's size: here a buffer holds
 * NCCLSCOPE_RANGE_METRICS_RANGES ranges, and when it is full (or a second old) the session stops, the
 * buffer is decoded and handed to the writer thread, and the next range starts a fresh one. With
 * no free buffer ranges go unmeasured until one is free, and are counted (no_buffer); so are
 * CUPTI's own drops (numOfRangeDropped). Each range is named to CUPTI by its id, so a value is
 * never attributed to the wrong range.
 *
 * Threads: push, pop and the rollovers run on the metrics thread under M.mu (so does the close at
 * the end of a segment, on whichever thread ends it); evaluating a decoded buffer (host API, pure
 * CPU) runs on the writer thread, which owns the buffer until it frees it.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

#define NBUF 4                   /* counter buffers */
#define SESSION_NS 1000000000ull /* a buffer older than this is decoded at the next pop */
#define DEFAULT_CORE "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum"
#define DEFAULT_NVLINK "nvlrx__bytes.sum,nvltx__bytes.sum"

enum { BUF_FREE = 0, BUF_SESSION = 1, BUF_DECODED = 2 };

_Atomic uint32_t ncs_hwm_level;

static struct {
  pthread_mutex_t mu;
  ncs_cupti_prof_api_t api;
  int bound, initialized, priv_warned, configured, parsed;
  void *cuda;
  int (*ctx_current)(void **ctx);
  int (*ctx_device)(int *dev);
  ncs_hwm_status_t st;
  char list[1024];                          /* the metric names, NUL-separated */
  const char *names[NCS_RANGE_MAX_METRICS]; /* into list */
  uint32_t nnames, ncore;                   /* ncore: "default" without its NVLink metrics */
  int is_default;
  void *host;
  uint8_t *avail, *config;
  size_t config_size;
  /* the metrics thread's profiler object and counter buffers */
  void *obj;
  struct {
    uint8_t *p;
    _Atomic int st;
    uint64_t discard; /* a metrics id whose values are partial (the segment ended inside it) */
  } buf[NBUF];
  size_t buf_size;
  int cur;          /* the session's buffer, -1 none */
  int started;      /* Start called, Stop not yet */
  int open;         /* a range is open in CUPTI */
  uint64_t open_mid;
  uint32_t in_pass; /* ranges pushed since Start */
  uint64_t started_ns;
  /* user replay: successive ranges of one name, one per pass */
  uint64_t group;
  uint32_t group_n;
  char group_name[NCS_RANGE_NAME_MAX + 1];
} M = {.mu = PTHREAD_MUTEX_INITIALIZER, .cur = -1};

/* ------------------------------------------------------------------ state */

static int replaying(void) { return M.st.replay == NCS_REPLAY_USER; }

/* Under M.mu. States other than active are said once in NCCL's log (warning level). */
static void set_state(uint32_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_state(uint32_t st, const char *fmt, ...) {
  char why[sizeof M.st.reason];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  int changed = st != M.st.state || strcmp(why, M.st.reason);
  M.st.state = st;
  M.st.since_ns = ncs_mono_ns();
  snprintf(M.st.reason, sizeof M.st.reason, "%s", why);
  int live = st == NCS_HWM_ACTIVE || st == NCS_HWM_WAITING;
  atomic_store(&ncs_hwm_level, live ? M.st.level : 0);
  if (!changed || st == NCS_HWM_ACTIVE || st == NCS_HWM_OFF) return;
  if (st == NCS_HWM_NO_PRIVILEGES && M.priv_warned++) return;
  ncs_log(st == NCS_HWM_WAITING ? NCS_LOG_INFO : NCS_LOG_WARN, "metrics: %s (%s)%s", ncs_hwm_state_name(st),
          why, live ? "" : "; ranges and everything else are still recorded");
}

/* The state a failed CUPTI call leaves: no privileges, counters busy, not supported, failed. */
static void failed(const char *call, ncs_cupti_result_t r) {
  const char *rs = ncs_gpu_result_str(r);
  if (r == NCS_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    set_state(NCS_HWM_NO_PRIVILEGES, "%s: %s: this user may not read the GPU's performance counters; "
              "run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0 (NVIDIA's "
              "ERR_NVGPUCTRPERM page)", call, rs);
  else if (r == NCS_CUPTI_ERROR_HARDWARE_BUSY)
    set_state(NCS_HWM_BUSY, "%s: %s: another tool (DCGM profiling, Nsight Compute or Systems) is "
              "using the performance counters", call, rs);
  else if (r == NCS_CUPTI_ERROR_NOT_SUPPORTED)
    set_state(NCS_HWM_UNAVAILABLE, "%s: %s: not on this GPU or configuration (vGPU, MIG, "
              "confidential computing)", call, rs);
  else
    set_state(NCS_HWM_FAILED, "%s failed: %s (%d)", call, rs, r);
}

/* ------------------------------------------------------------------ set-up */

static int bind(void) {
  static const struct {
    size_t off;
    const char *name;
  } syms[] = {
#define E(f) {offsetof(ncs_cupti_prof_api_t, f), "cupti" #f}
      E(ProfilerInitialize), E(DeviceGetChipName), E(ProfilerGetCounterAvailability),
      E(ProfilerHostInitialize), E(ProfilerHostDeinitialize), E(ProfilerHostConfigAddMetrics),
      E(ProfilerHostGetConfigImageSize), E(ProfilerHostGetConfigImage), E(ProfilerHostGetNumOfPasses),
      E(ProfilerHostGetMetricProperties), E(ProfilerHostEvaluateToGpuValues), E(RangeProfilerEnable),
      E(RangeProfilerDisable), E(RangeProfilerGetCounterDataSize),
      E(RangeProfilerCounterDataImageInitialize), E(RangeProfilerSetConfig), E(RangeProfilerStart),
      E(RangeProfilerStop), E(RangeProfilerPushRange), E(RangeProfilerPopRange),
      E(RangeProfilerDecodeData), E(RangeProfilerGetCounterDataInfo),
      E(RangeProfilerCounterDataGetRangeInfo),
#undef E
  };
  void *lib = ncs_gpu_lib();
  for (size_t i = 0; lib && i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(lib, syms[i].name);
    if (!p) {
      set_state(NCS_HWM_UNAVAILABLE, "the libcupti in use has no %s: the range profiler needs CUPTI "
                "12.6 or later", syms[i].name);
      return -1;
    }
    memcpy((char *)&M.api + syms[i].off, &p, sizeof p);
  }
  /* the CUDA driver the process loaded (the runtime loads it privately): the current context */
  M.cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  *(void **)&M.ctx_current = M.cuda ? dlsym(M.cuda, "cuCtxGetCurrent") : NULL;
  *(void **)&M.ctx_device = M.cuda ? dlsym(M.cuda, "cuCtxGetDevice") : NULL;
  if (!M.ctx_current || !M.ctx_device) {
    set_state(NCS_HWM_UNAVAILABLE, "no CUDA driver (libcuda.so.1) in this process");
    return -1;
  }
  M.bound = 1;
  return 0;
}

/* NCCLSCOPE_RANGE_METRICS: names separated by commas; "default" stands for the one-pass default set. */
static int parse(const char *s) {
  size_t len = 0;
  uint32_t n = 0;
  M.is_default = 0;
  for (const char *p = s; *p; p += *p == ',') {
    size_t k = strcspn(p, ",");
    const char *tok = p;
    p += k;
    if (k == 7 && !strncmp(tok, "default", 7)) tok = DEFAULT_CORE "," DEFAULT_NVLINK, k = strlen(tok), M.is_default = 1;
    if (!k) continue;
    if (len + k + 1 > sizeof M.list) break; /* the configuration keeps 1023 bytes: cannot happen */
    memcpy(M.list + len, tok, k);
    len += k;
    M.list[len++] = ',';
  }
  for (char *p = M.list; len && p < M.list + len; n++) {
    char *e = memchr(p, ',', (size_t)(M.list + len - p));
    *e = 0;
    if (n < NCS_RANGE_MAX_METRICS) M.names[n] = p;
    p = e + 1;
  }
  if (!n || n > NCS_RANGE_MAX_METRICS) {
    set_state(NCS_HWM_REFUSED, n ? "%u metrics: at most %d are kept per range" : "no metric named",
              n, NCS_RANGE_MAX_METRICS);
    return -1;
  }
  M.nnames = n;
  return 0;
}

/* "default" leaves its NVLink metrics out when they do not fit one pass (or the chip has none). */
static int drop_nvlink(void) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < M.nnames; i++)
    if (!M.is_default || !strstr(DEFAULT_NVLINK, M.names[i])) M.names[k++] = M.names[i];
  int dropped = k < M.nnames;
  M.nnames = k;
  return dropped;
}

static void host_free(void) {
  if (M.host) {
    ncs_cupti_host_deinit_t d = {NCS_PSIZE(ncs_cupti_host_deinit_t, pHostObject), NULL, M.host};
    M.api.ProfilerHostDeinitialize(&d);
  }
  M.host = NULL;
  free(M.config);
  M.config = NULL, M.config_size = 0;
}

/* A host object and config image for names[0..n): CUPTI's result; *passes the passes it needs. */
static ncs_cupti_result_t host_config(const char **names, uint32_t n, size_t *passes, const char **call) {
  host_free();
  ncs_cupti_host_init_t hi = {NCS_PSIZE(ncs_cupti_host_init_t, pHostObject), NULL,
                              NCS_CUPTI_PROFILER_TYPE_RANGE, M.st.chip, M.avail, NULL};
  ncs_cupti_result_t r = M.api.ProfilerHostInitialize(&hi);
  *call = "cuptiProfilerHostInitialize";
  if (r) return r;
  M.host = hi.pHostObject;
  ncs_cupti_host_add_t am = {NCS_PSIZE(ncs_cupti_host_add_t, numMetrics), NULL, M.host, names, n};
  *call = "cuptiProfilerHostConfigAddMetrics";
  if ((r = M.api.ProfilerHostConfigAddMetrics(&am))) return r;
  ncs_cupti_host_config_size_t cs = {NCS_PSIZE(ncs_cupti_host_config_size_t, configImageSize), NULL, M.host, 0};
  *call = "cuptiProfilerHostGetConfigImageSize";
  if ((r = M.api.ProfilerHostGetConfigImageSize(&cs))) return r;
  M.config = calloc(1, cs.configImageSize ? cs.configImageSize : 1);
  if (!M.config) return *call = "malloc", NCS_CUPTI_ERROR_INVALID_PARAMETER;
  M.config_size = cs.configImageSize;
  ncs_cupti_host_config_t gc = {NCS_PSIZE(ncs_cupti_host_config_t, pConfigImage), NULL, M.host,
                                M.config_size, M.config};
  *call = "cuptiProfilerHostGetConfigImage";
  if ((r = M.api.ProfilerHostGetConfigImage(&gc))) return r;
  ncs_cupti_host_passes_t np = {NCS_PSIZE(ncs_cupti_host_passes_t, numOfPasses), NULL, M.config_size,
                                M.config, 0};
  *call = "cuptiProfilerHostGetNumOfPasses";
  if ((r = M.api.ProfilerHostGetNumOfPasses(&np))) return r;
  *passes = np.numOfPasses;
  return 0;
}

/* Why the list cannot be collected: the first metric CUPTI does not know, or the first that
 * takes the list beyond one pass. */
static void refuse(ncs_cupti_result_t r, const char *call, size_t passes) {
  size_t p = 0;
  const char *c;
  for (uint32_t k = 1; k <= M.nnames; k++) {
    ncs_cupti_result_t rk = host_config(M.names + k - 1, 1, &p, &c);
    if (rk) {
      set_state(NCS_HWM_REFUSED, "metric '%s' is not known on %s (%s: %s)", M.names[k - 1], M.st.chip, c,
                ncs_gpu_result_str(rk));
      return;
    }
    if (passes > 1 && host_config(M.names, k, &p, &c) == 0 && p > 1) {
      set_state(NCS_HWM_REFUSED, "the metric list needs %zu passes on %s (%s is the first that does "
                "not fit one pass); ncclscope measures ranges in one pass: choose metrics that fit "
                "one, or ask for replay (NCCLSCOPE_RANGE_REPLAY=user, record --range-replay user; "
                "not for production)", passes, M.st.chip, M.names[k - 1]);
      return;
    }
  }
  if (r) failed(call, r);
  else set_state(NCS_HWM_REFUSED, "the metric list needs %zu passes on %s", passes, M.st.chip);
}

static void metric_types(void) {
  for (uint32_t i = 0; i < M.nnames; i++) {
    ncs_cupti_host_props_t mp = {NCS_PSIZE(ncs_cupti_host_props_t, metricType), NULL, M.host, M.names[i],
                                 NULL, NULL, NULL, 0};
    M.st.metric[i] = M.names[i];
    M.st.metric_type[i] = M.api.ProfilerHostGetMetricProperties(&mp) == 0 && mp.metricType >= 0 &&
                                  mp.metricType <= NCS_CUPTI_METRIC_THROUGHPUT
                              ? (uint8_t)mp.metricType : NCS_MT_UNKNOWN;
  }
  M.st.nmetrics = M.nnames;
}

/* The chip, its counters, the config image and the passes it needs, from a context current on
 * this thread. Once per load. */
static void configure(void *ctx) {
  int dev = -1;
  ncs_cupti_chip_name_t cn = {NCS_PSIZE(ncs_cupti_chip_name_t, pChipName), NULL, 0, NULL};
  if (M.ctx_device(&dev) != 0 || dev < 0) return set_state(NCS_HWM_FAILED, "cuCtxGetDevice failed");
  cn.deviceIndex = (size_t)dev;
  ncs_cupti_result_t r = M.api.DeviceGetChipName(&cn);
  if (r) return failed("cuptiDeviceGetChipName", r);
  snprintf(M.st.chip, sizeof M.st.chip, "%s", cn.pChipName ? cn.pChipName : "?");
  ncs_cupti_avail_t ga = {NCS_PSIZE(ncs_cupti_avail_t, pCounterAvailabilityImage), NULL, ctx, 0, NULL};
  if ((r = M.api.ProfilerGetCounterAvailability(&ga))) return failed("cuptiProfilerGetCounterAvailability", r);
  free(M.avail);
  M.avail = calloc(1, ga.counterAvailabilityImageSize ? ga.counterAvailabilityImageSize : 1);
  if (!M.avail) return set_state(NCS_HWM_FAILED, "out of memory");
  ga.pCounterAvailabilityImage = M.avail;
  if ((r = M.api.ProfilerGetCounterAvailability(&ga))) return failed("cuptiProfilerGetCounterAvailability", r);
  size_t passes = 0;
  const char *call;
  r = host_config(M.names, M.nnames, &passes, &call);
  const char *note = "";
  if ((r || passes > 1) && drop_nvlink()) { /* "default": NVLink only where one pass holds it */
    r = host_config(M.names, M.nnames, &passes, &call);
    note = "; the default set's NVLink metrics did not fit one pass here and were left out";
  }
  M.st.passes = (uint32_t)passes;
  if (r == NCS_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) return failed(call, r);
  if (r || (passes > 1 && !replaying())) return refuse(r, call, passes);
  metric_types();
  M.configured = 1;
  set_state(NCS_HWM_ACTIVE, "%u metrics, %zu pass%s on %s%s", M.nnames, passes, passes == 1 ? "" : "es",
            M.st.chip, note);
  ncs_log(NCS_LOG_WARN, "metrics: measuring %u metrics per range at level %u of one thread through "
          "CUPTI's range profiler (%zu pass%s%s)%s", M.nnames, M.st.level, passes, passes == 1 ? "" : "es",
          replaying() ? ", replayed over successive ranges: not for production" : "", note);
}

static int terminal(uint32_t st) {
  return st == NCS_HWM_REFUSED || st == NCS_HWM_NO_PRIVILEGES || st == NCS_HWM_UNAVAILABLE;
}

static void setup_locked(void) {
  if (!ncs_g.cfg.range_metrics[0]) return set_state(NCS_HWM_OFF, "not asked for (NCCLSCOPE_RANGE_METRICS)");
  if (terminal(M.st.state)) return set_state(M.st.state, "%s", M.st.reason); /* said once */
  if (!M.parsed) {
    M.parsed = 1;
    if (parse(ncs_g.cfg.range_metrics) != 0) return;
  }
  ncs_gpu_status_t gs;
  ncs_gpu_status(&gs);
  if (gs.state == NCS_GPU_BUSY)
    return set_state(NCS_HWM_BUSY, "another CUPTI client holds CUPTI ('%s'), and metrics need it", gs.holder);
  if (gs.state != NCS_GPU_ACTIVE)
    return set_state(gs.state == NCS_GPU_UNAVAILABLE ? NCS_HWM_UNAVAILABLE : NCS_HWM_FAILED,
                     "CUPTI is %s: %s", ncs_gpu_state_name(gs.state), gs.reason);
  if (!M.bound && bind() != 0) return;
  if (!M.initialized) {
    ncs_cupti_prof_init_t pi = {NCS_PSIZE(ncs_cupti_prof_init_t, pPriv), NULL};
    ncs_cupti_result_t r = M.api.ProfilerInitialize(&pi);
    if (r) return failed("cuptiProfilerInitialize", r);
    M.initialized = 1;
  }
  if (M.configured) return set_state(NCS_HWM_ACTIVE, "%s", M.st.reason);
  void *ctx = NULL;
  if (M.ctx_current(&ctx) == 0 && ctx) return configure(ctx);
  set_state(NCS_HWM_WAITING, "no CUDA context current at NCCL's init: set up at the first range "
            "pushed at level %u on a thread with one", M.st.level);
}

/* At a segment's first init (ncs_g.lock held), after CUPTI's subscription: metrics follow it. */
void ncs_hwm_setup(void) {
  pthread_mutex_lock(&M.mu);
  M.st.level = ncs_g.cfg.range_metrics_level, M.st.replay = (uint32_t)ncs_g.cfg.range_replay;
  M.st.buffer_ranges = replaying() ? 1 : ncs_g.cfg.range_metrics_ranges;
  setup_locked();
  pthread_mutex_unlock(&M.mu);
}

/* ------------------------------------------------------------------ the metrics thread */

/* The profiler object on the metrics thread's context, and its counter buffers. */
static int enable(void *ctx) {
  ncs_cupti_rp_enable_t en = {NCS_PSIZE(ncs_cupti_rp_enable_t, pRangeProfilerObject), NULL, ctx, NULL};
  ncs_cupti_result_t r = M.api.RangeProfilerEnable(&en);
  if (r) return failed("cuptiRangeProfilerEnable", r), -1;
  M.obj = en.pRangeProfilerObject;
  ncs_cupti_rp_size_t ds = {NCS_PSIZE(ncs_cupti_rp_size_t, counterDataSize), NULL, M.obj, M.names,
                            M.nnames, M.st.buffer_ranges, M.st.buffer_ranges, 0};
  if ((r = M.api.RangeProfilerGetCounterDataSize(&ds))) return failed("cuptiRangeProfilerGetCounterDataSize", r), -1;
  M.buf_size = ds.counterDataSize;
  for (int i = 0; i < NBUF; i++) {
    M.buf[i].p = calloc(1, M.buf_size ? M.buf_size : 1);
    atomic_store(&M.buf[i].st, BUF_FREE);
    if (!M.buf[i].p) return set_state(NCS_HWM_FAILED, "no memory for %d counter buffers of %zu bytes", NBUF,
                                      M.buf_size), -1;
  }
  return 0;
}

/* A failed call while measuring: everything of the open session is lost, and counted. */
static void lost_session(const char *call, ncs_cupti_result_t r) {
  M.st.session_lost += M.in_pass; /* in replay, the group's ranges */
  if (M.cur >= 0) atomic_store(&M.buf[M.cur].st, BUF_FREE);
  M.cur = -1, M.started = 0, M.open = 0, M.in_pass = 0, M.group = 0, M.group_n = 0;
  failed(call, r);
}

/* SetConfig on a free buffer; 0, or -1 when none is free (or CUPTI refused). */
static int session_begin(void) {
  int i = 0;
  while (i < NBUF && atomic_load_explicit(&M.buf[i].st, memory_order_acquire) != BUF_FREE) i++;
  if (i == NBUF) return -1;
  M.buf[i].discard = 0;
  ncs_cupti_rp_image_init_t ci = {NCS_PSIZE(ncs_cupti_rp_image_init_t, pCounterData), NULL, M.obj, M.buf_size,
                                  M.buf[i].p};
  ncs_cupti_result_t r = M.api.RangeProfilerCounterDataImageInitialize(&ci);
  if (r) return lost_session("cuptiRangeProfilerCounterDataImageInitialize", r), -1;
  ncs_cupti_rp_config_t sc = {NCS_PSIZE(ncs_cupti_rp_config_t, targetNestingLevel), NULL, M.obj, M.config_size,
                              M.config, M.buf_size, M.buf[i].p, NCS_CUPTI_USER_RANGE, NCS_CUPTI_USER_REPLAY,
                              M.st.buffer_ranges, 1, 1, 0, 1};
  if ((r = M.api.RangeProfilerSetConfig(&sc))) return lost_session("cuptiRangeProfilerSetConfig", r), -1;
  atomic_store(&M.buf[i].st, BUF_SESSION);
  M.cur = i, M.in_pass = 0;
  return 0;
}

static int pass_start(void) {
  ncs_cupti_rp_obj_t st = {NCS_PSIZE(ncs_cupti_rp_obj_t, pRangeProfilerObject), NULL, M.obj};
  ncs_cupti_result_t r = M.api.RangeProfilerStart(&st);
  if (r) return lost_session("cuptiRangeProfilerStart", r), -1;
  M.started = 1, M.started_ns = ncs_mono_ns();
  return 0;
}

/* Stop the pass; when all passes are in, decode the buffer and hand it to the writer. */
static void pass_stop(void) {
  ncs_cupti_rp_stop_t sp = {NCS_PSIZE(ncs_cupti_rp_stop_t, isAllPassSubmitted), NULL, M.obj, 0, 0, 0};
  ncs_cupti_result_t r = M.api.RangeProfilerStop(&sp);
  if (r) return lost_session("cuptiRangeProfilerStop", r);
  M.started = 0;
  if (!sp.isAllPassSubmitted) return; /* replay: the next range of the group is the next pass */
  ncs_cupti_rp_decode_t dd = {NCS_PSIZE(ncs_cupti_rp_decode_t, numOfRangeDropped), NULL, M.obj, 0};
  if ((r = M.api.RangeProfilerDecodeData(&dd))) return lost_session("cuptiRangeProfilerDecodeData", r);
  M.st.cupti_dropped += dd.numOfRangeDropped;
  M.st.buffers++;
  atomic_store_explicit(&M.buf[M.cur].st, BUF_DECODED, memory_order_release);
  M.cur = -1, M.in_pass = 0, M.group = 0, M.group_n = 0;
}

static void cupti_push(uint64_t mid, char tag) {
  char nm[24];
  snprintf(nm, sizeof nm, "%c%" PRIu64, tag, mid);
  ncs_cupti_rp_push_t pr = {NCS_PSIZE(ncs_cupti_rp_push_t, pRangeName), NULL, M.obj, nm};
  ncs_cupti_result_t r = M.api.RangeProfilerPushRange(&pr);
  if (r) return lost_session("cuptiRangeProfilerPushRange", r);
  M.open = 1, M.open_mid = mid, M.in_pass++;
  M.st.forwarded++;
}

/* One pass measures many ranges ("r<id>"), until its buffer is full or a second old. */
static uint64_t push_one_pass(uint64_t id) {
  if (M.cur < 0 && session_begin() != 0) return M.st.no_buffer++, 0;
  if (!M.started && pass_start() != 0) return 0;
  cupti_push(id, 'r');
  return M.open ? id : 0;
}

/* Replay: each pass measures one range; the group's passes are successive ranges of one name
 * ("g<first id>"). A range of another name ends the group unfinished (its ranges are counted lost). */
static uint64_t push_replay(uint64_t id, const char *name, size_t n) {
  if (n > NCS_RANGE_NAME_MAX) n = NCS_RANGE_NAME_MAX;
  if (M.group && (strlen(M.group_name) != n || memcmp(M.group_name, name, n))) {
    M.st.session_lost += M.group_n;
    atomic_store(&M.buf[M.cur].st, BUF_FREE);
    M.cur = -1, M.group = 0, M.group_n = 0;
  }
  if (!M.group) {
    if (session_begin() != 0) return M.st.no_buffer++, 0;
    M.group = id, M.group_n = 0;
    memcpy(M.group_name, name, n);
    M.group_name[n] = 0;
  }
  if (pass_start() != 0) return 0;
  cupti_push(M.group, 'g');
  if (!M.open) return 0;
  M.group_n++;
  return M.group;
}

/* The calling thread is the metrics thread, or becomes it: 1; 0 when it is not. */
static int claim(ncs_range_tls_t *L, void **ctx) {
  if (M.st.thread) {
    L->mx = 2; /* another thread was first */
    return 0;
  }
  if (M.ctx_current(ctx) != 0 || !*ctx) return 0; /* no context yet: not decided */
  if (M.st.state == NCS_HWM_WAITING) configure(*ctx);
  if (M.st.state != NCS_HWM_ACTIVE) return 0;
  if (!M.obj && enable(*ctx) != 0) return 0;
  M.st.thread = ncs_t.slot ? ncs_t.slot->thread_index + 1 : 0;
  L->mx = 1;
  return 1;
}

/* A push at the metrics level, on any thread: its metrics id (0: not measured). */
uint64_t ncs_hwm_push(uint64_t id, const char *name, size_t n) {
  ncs_range_tls_t *L = &ncs_range_t;
  uint64_t mid = 0;
  void *ctx = NULL;
  pthread_mutex_lock(&M.mu);
  if (L->mx == 2)
    M.st.other_threads++;
  else if (M.st.state != NCS_HWM_ACTIVE && M.st.state != NCS_HWM_WAITING)
    M.st.not_forwarded++; /* stopped meanwhile */
  else if (L->mx == 0 && !claim(L, &ctx))
    *(L->mx == 2 ? &M.st.other_threads : &M.st.not_forwarded) += 1;
  else if (!M.obj && (M.ctx_current(&ctx) != 0 || !ctx || enable(ctx) != 0))
    M.st.not_forwarded++; /* a new segment: the object was released, and could not come back */
  else
    mid = replaying() ? push_replay(id, name, n) : push_one_pass(id);
  L->mx_open = mid != 0;
  pthread_mutex_unlock(&M.mu);
  return mid;
}

/* The pop of a range ncs_hwm_push measured. */
void ncs_hwm_pop(void) {
  ncs_range_t.mx_open = 0;
  pthread_mutex_lock(&M.mu);
  if (M.open) { /* else the segment ended meanwhile and closed it */
    ncs_cupti_rp_obj_t pp = {NCS_PSIZE(ncs_cupti_rp_obj_t, pRangeProfilerObject), NULL, M.obj};
    ncs_cupti_result_t r = M.api.RangeProfilerPopRange(&pp);
    M.open = 0;
    if (r)
      lost_session("cuptiRangeProfilerPopRange", r);
    else if (replaying() || M.in_pass >= M.st.buffer_ranges || ncs_mono_ns() - M.started_ns >= SESSION_NS)
      pass_stop();
  }
  pthread_mutex_unlock(&M.mu);
}

/* ------------------------------------------------------------------ the end of a segment */

/* Before the writer's last cycle: nothing more is measured in this segment. A range still open
 * is closed in CUPTI so that the others of its buffer can be decoded; its own values would be
 * partial, so they are dropped (and it counts as lost). A replay group not complete is lost. */
void ncs_hwm_segment_end(void) {
  pthread_mutex_lock(&M.mu);
  atomic_store(&ncs_hwm_level, 0);
  uint64_t discard = 0;
  if (M.open) {
    ncs_cupti_rp_obj_t pp = {NCS_PSIZE(ncs_cupti_rp_obj_t, pRangeProfilerObject), NULL, M.obj};
    M.api.RangeProfilerPopRange(&pp);
    M.open = 0, discard = M.open_mid;
    M.st.session_lost++;
    if (!replaying()) M.in_pass--;
  }
  if (M.cur >= 0 && replaying()) {
    if (M.started) {
      ncs_cupti_rp_stop_t sp = {NCS_PSIZE(ncs_cupti_rp_stop_t, isAllPassSubmitted), NULL, M.obj, 0, 0, 0};
      M.api.RangeProfilerStop(&sp);
    }
    M.st.session_lost += M.group_n - (discard != 0);
    atomic_store(&M.buf[M.cur].st, BUF_FREE);
    M.cur = -1, M.started = 0, M.group = 0, M.group_n = 0, M.in_pass = 0;
  } else if (M.cur >= 0) {
    M.buf[M.cur].discard = discard;
    if (M.started) pass_stop();
  }
  pthread_mutex_unlock(&M.mu);
}

/* After the writer stopped (it evaluated every decoded buffer): the profiler object goes; the
 * next segment enables it again at its first measured range. */
void ncs_hwm_release(void) {
  pthread_mutex_lock(&M.mu);
  if (M.obj) {
    ncs_cupti_rp_obj_t d = {NCS_PSIZE(ncs_cupti_rp_obj_t, pRangeProfilerObject), NULL, M.obj};
    M.api.RangeProfilerDisable(&d);
  }
  M.obj = NULL;
  for (int i = 0; i < NBUF; i++) {
    if (atomic_load(&M.buf[i].st) == BUF_DECODED) M.st.session_lost++; /* cannot happen: evaluated */
    free(M.buf[i].p);
    M.buf[i].p = NULL;
    atomic_store(&M.buf[i].st, BUF_FREE);
  }
  M.cur = -1, M.started = 0, M.open = 0, M.in_pass = 0, M.group = 0, M.group_n = 0;
  pthread_mutex_unlock(&M.mu);
}

void ncs_hwm_free(void) {
  pthread_mutex_lock(&M.mu);
  free(M.avail), free(M.config);
  M.avail = M.config = NULL, M.config_size = 0, M.configured = 0;
  pthread_mutex_unlock(&M.mu);
}

void ncs_hwm_after_fork(void) {
  /* CUPTI does not follow a fork: the child measures nothing */
  pthread_mutex_init(&M.mu, NULL);
  M.obj = NULL;
  for (int i = 0; i < NBUF; i++) atomic_store(&M.buf[i].st, BUF_FREE);
  M.cur = -1, M.started = 0, M.open = 0;
  ncs_range_t.mx = 0, ncs_range_t.mx_open = 0;
  M.st.thread = 0;
  if (M.st.state != NCS_HWM_OFF && !terminal(M.st.state)) set_state(NCS_HWM_FAILED, "forked child: no metrics");
}

/* ------------------------------------------------------------------ the writer thread */

/* A range name in a buffer: "r<id>" (one range) or "g<id>" (a replay group); 0 when not ours. */
static uint64_t mid_of(const char *name) {
  if (!name || (name[0] != 'r' && name[0] != 'g')) return 0;
  char *e;
  unsigned long long v = strtoull(name + 1, &e, 10);
  return *e || e == name + 1 ? 0 : (uint64_t)v;
}

static void evaluate(int b) {
  const uint8_t *img = M.buf[b].p;
  ncs_cupti_rp_info_t gi = {NCS_PSIZE(ncs_cupti_rp_info_t, numTotalRanges), NULL, img, M.buf_size, 0};
  uint64_t got = 0, bad = 0;
  if (M.api.RangeProfilerGetCounterDataInfo(&gi) != 0) gi.numTotalRanges = 0, bad++;
  for (size_t i = 0; i < gi.numTotalRanges; i++) {
    ncs_cupti_rp_range_t ri = {NCS_PSIZE(ncs_cupti_rp_range_t, rangeName), NULL, img, M.buf_size, i, "/", NULL};
    double v[NCS_RANGE_MAX_METRICS];
    ncs_cupti_host_eval_t ev = {NCS_PSIZE(ncs_cupti_host_eval_t, pMetricValues), NULL, M.host, img, M.buf_size,
                                i, M.names, M.nnames, v};
    uint64_t mid = M.api.RangeProfilerCounterDataGetRangeInfo(&ri) == 0 ? mid_of(ri.rangeName) : 0;
    if (!mid || mid == M.buf[b].discard) continue;
    if (M.api.ProfilerHostEvaluateToGpuValues(&ev) != 0) {
      bad++;
      continue;
    }
    ncs_range_metric_values(mid, replaying(), v, M.nnames);
    got++;
  }
  pthread_mutex_lock(&M.mu);
  M.st.with_values += got;
  M.st.session_lost += bad;
  pthread_mutex_unlock(&M.mu);
}

/* Every writer cycle: the buffers the metrics thread decoded. The host object and the names are
 * not changed once the state is active, so they are read without the lock. */
void ncs_hwm_collect(void) {
  for (int b = 0; b < NBUF; b++) {
    if (atomic_load_explicit(&M.buf[b].st, memory_order_acquire) != BUF_DECODED) continue;
    evaluate(b);
    atomic_store_explicit(&M.buf[b].st, BUF_FREE, memory_order_release);
  }
}

void ncs_hwm_status(ncs_hwm_status_t *s) {
  pthread_mutex_lock(&M.mu);
  *s = M.st;
  pthread_mutex_unlock(&M.mu);
}
