/* expo.c - rendering a metrics snapshot: the Prometheus text format (HTTP and textfiles) and
 * OTLP/HTTP JSON (metrics thread only).
 *
 * One walk over the snapshot (emit_all) produces every metric family through a small sink, so
 * both formats always carry the same families, labels and values. docs/metrics.md is the list
 * of families; the tests check it against what this file emits.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

/* ------------------------------------------------------------------ buffers */

void ncs_mx_buf_reset(ncs_mx_buf_t *b) { b->len = 0, b->oom = 0; }

void ncs_mx_buf_free(ncs_mx_buf_t *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

static int buf_room(ncs_mx_buf_t *b, size_t n) {
  if (b->oom) return 0;
  if (b->len + n + 1 <= b->cap) return 1;
  size_t c = b->cap ? b->cap : 65536;
  while (c < b->len + n + 1) c *= 2;
  char *p = realloc(b->p, c);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p, b->cap = c;
  return 1;
}

void ncs_mx_buf_add(ncs_mx_buf_t *b, const char *s, size_t n) {
  if (!buf_room(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void ncs_mx_buf_printf(ncs_mx_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !buf_room(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* a string literal */
#define PUT(b, lit) ncs_mx_buf_add((b), (lit), sizeof(lit) - 1)

/* ------------------------------------------------------------------ ln and exp
 * The geometric mean of Inspector's bandwidth gauge needs them and the plugin links only libc.
 * ln: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)); exp: x = k ln2 + r,
 * |r| <= ln2/2, e^r by its series. Both within a few ulps over the range that bandwidths span. */

#define LN2 0.69314718055994530942

double ncs_mx_ln(double x) {
  if (!(x > 0)) return 0;
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  int e = (int)((u >> 52) & 0x7FF) - 1023;
  u = (u & ((1ull << 52) - 1)) | (1023ull << 52);
  double m;
  memcpy(&m, &u, sizeof m);
  if (m > 1.4142135623730951) m /= 2, e++;
  double z = (m - 1) / (m + 1), z2 = z * z, t = z, s = 0;
  for (int k = 1; k < 40; k += 2, t *= z2) s += t / k;
  return 2 * s + e * LN2;
}

double ncs_mx_exp(double x) {
  if (x > 700) x = 700;
  if (x < -700) return 0;
  int k = (int)(x / LN2 + (x >= 0 ? 0.5 : -0.5));
  double r = x - k * LN2, t = 1, s = 1;
  for (int i = 1; i < 25; i++) t *= r / i, s += t;
  uint64_t u = (uint64_t)(k + 1023) << 52;
  double p;
  memcpy(&p, &u, sizeof p);
  return s * p;
}

/* ------------------------------------------------------------------ families */

enum { K_COUNTER, K_GAUGE, K_HIST };
typedef struct {
  const char *name;
  int kind;
  const char *unit, *help;
} fam_t;

typedef struct {
  const char *k;
  const char *v;
} lbl_t;

#define MAXL 16

/* One output format: Prometheus text or OTLP JSON. */
typedef struct {
  ncs_mx_buf_t *b;
  int otlp;
  const fam_t *fam;
  int nfam, npt;         /* OTLP: metrics written, points of the current one */
  uint64_t t_ns, t0_ns;  /* OTLP: the snapshot's time and the counters' start */
} sink_t;

/* Label values are printable ASCII: anything else (NCCL's communicator names are the
 * application's) becomes '?', so neither format can be broken or made invalid UTF-8. */
static void put_escaped(ncs_mx_buf_t *b, const char *v) {
  char tmp[512];
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)v; *p && n + 7 < sizeof tmp; p++) {
    unsigned char c = *p < 0x20 || *p >= 0x7F ? '?' : *p;
    if (c == '"' || c == '\\') tmp[n++] = '\\';
    tmp[n++] = (char)c;
  }
  /* (the two formats escape printable ASCII alike: only '"' and '\\') */
  ncs_mx_buf_add(b, tmp, n);
}

static void fam_begin(sink_t *S, const fam_t *f) {
  S->fam = f, S->npt = 0;
  if (S->otlp) return; /* written with the first point: OTLP has no empty metrics */
  static const char *const kinds[] = {"counter", "gauge", "histogram"};
  ncs_mx_buf_printf(S->b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, kinds[f->kind]);
}

static void fam_end(sink_t *S) {
  if (S->otlp && S->npt) PUT(S->b, "]}}");
}

static void otlp_point_begin(sink_t *S, const lbl_t *l, int n) {
  const fam_t *f = S->fam;
  if (!S->npt++) {
    ncs_mx_buf_printf(S->b, "%s{\"name\":\"%s\",\"description\":\"", S->nfam++ ? "," : "", f->name);
    put_escaped(S->b, f->help);
    ncs_mx_buf_printf(S->b, "\",\"unit\":\"%s\",", f->unit);
    if (f->kind == K_COUNTER)
      ncs_mx_buf_printf(S->b, "\"sum\":{\"aggregationTemporality\":2,\"isMonotonic\":true,\"dataPoints\":[");
    else if (f->kind == K_GAUGE)
      ncs_mx_buf_printf(S->b, "\"gauge\":{\"dataPoints\":[");
    else
      ncs_mx_buf_printf(S->b, "\"histogram\":{\"aggregationTemporality\":2,\"dataPoints\":[");
  } else {
    PUT(S->b, ",");
  }
  PUT(S->b, "{\"attributes\":[");
  for (int i = 0; i < n; i++) {
    ncs_mx_buf_printf(S->b, "%s{\"key\":\"%s\",\"value\":{\"stringValue\":\"", i ? "," : "", l[i].k);
    put_escaped(S->b, l[i].v);
    PUT(S->b, "\"}}");
  }
  ncs_mx_buf_printf(S->b, "],\"timeUnixNano\":\"%llu\"", (unsigned long long)S->t_ns);
  if (f->kind != K_GAUGE)
    ncs_mx_buf_printf(S->b, ",\"startTimeUnixNano\":\"%llu\"", (unsigned long long)S->t0_ns);
}

static void prom_labels(sink_t *S, const char *suffix, const lbl_t *l, int n, const char *le) {
  ncs_mx_buf_printf(S->b, "%s%s", S->fam->name, suffix);
  if (!n && !le) return;
  PUT(S->b, "{");
  for (int i = 0; i < n; i++) {
    ncs_mx_buf_printf(S->b, "%s%s=\"", i ? "," : "", l[i].k);
    put_escaped(S->b, l[i].v);
    PUT(S->b, "\"");
  }
  if (le) ncs_mx_buf_printf(S->b, "%sle=\"%s\"", n ? "," : "", le);
  PUT(S->b, "}");
}

/* an integer sample (counts, bytes, nanoseconds kept exact) */
static void pt_u(sink_t *S, const lbl_t *l, int n, uint64_t v) {
  if (S->otlp) {
    otlp_point_begin(S, l, n);
    ncs_mx_buf_printf(S->b, ",\"asInt\":\"%llu\"}", (unsigned long long)v);
    return;
  }
  prom_labels(S, "", l, n, NULL);
  ncs_mx_buf_printf(S->b, " %llu\n", (unsigned long long)v);
}

static void pt_d(sink_t *S, const lbl_t *l, int n, double v) {
  if (S->otlp) {
    otlp_point_begin(S, l, n);
    ncs_mx_buf_printf(S->b, ",\"asDouble\":%.17g}", v);
    return;
  }
  prom_labels(S, "", l, n, NULL);
  ncs_mx_buf_printf(S->b, " %.17g\n", v);
}

/* nanoseconds as seconds, exactly: 9 decimals */
static void fmt_secs(char *out, size_t n, uint64_t ns) {
  snprintf(out, n, "%llu.%09llu", (unsigned long long)(ns / 1000000000ull),
           (unsigned long long)(ns % 1000000000ull));
}

static void pt_secs(sink_t *S, const lbl_t *l, int n, uint64_t ns) {
  char v[40];
  fmt_secs(v, sizeof v, ns);
  if (S->otlp) {
    otlp_point_begin(S, l, n);
    ncs_mx_buf_printf(S->b, ",\"asDouble\":%s}", v);
    return;
  }
  prom_labels(S, "", l, n, NULL);
  ncs_mx_buf_printf(S->b, " %s\n", v);
}

static const char *const le_str[NCS_MX_BOUNDS] = {
    "5e-06", "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
    "0.005", "0.01",  "0.025",   "0.05",  "0.1",    "0.25",    "0.5",    "1",     "2.5",
    "5",     "10"};

static void pt_hist(sink_t *S, const lbl_t *l, int n, const ncs_mx_val_t *v) {
  char sum[40];
  fmt_secs(sum, sizeof sum, v->time_ns);
  if (S->otlp) {
    otlp_point_begin(S, l, n);
    ncs_mx_buf_printf(S->b, ",\"count\":\"%llu\",\"sum\":%s,\"bucketCounts\":[",
                      (unsigned long long)v->timed, sum);
    for (int k = 0; k <= NCS_MX_BOUNDS; k++)
      ncs_mx_buf_printf(S->b, "%s\"%llu\"", k ? "," : "", (unsigned long long)v->hist[k]);
    PUT(S->b, "],\"explicitBounds\":[");
    for (int k = 0; k < NCS_MX_BOUNDS; k++) ncs_mx_buf_printf(S->b, "%s%s", k ? "," : "", le_str[k]);
    PUT(S->b, "]}");
    return;
  }
  uint64_t cum = 0;
  for (int k = 0; k <= NCS_MX_BOUNDS; k++) {
    cum += v->hist[k];
    prom_labels(S, "_bucket", l, n, k < NCS_MX_BOUNDS ? le_str[k] : "+Inf");
    ncs_mx_buf_printf(S->b, " %llu\n", (unsigned long long)cum);
  }
  prom_labels(S, "_sum", l, n, NULL);
  ncs_mx_buf_printf(S->b, " %s\n", sum);
  prom_labels(S, "_count", l, n, NULL);
  ncs_mx_buf_printf(S->b, " %llu\n", (unsigned long long)v->timed);
}

/* ------------------------------------------------------------------ labels */

typedef struct {
  const ncs_mx_snap_t *s;
  const ncs_mx_ident_t *id;
  lbl_t l[MAXL];
  char v[MAXL][80];
  int n;
} lset_t;

static void lb(lset_t *L, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void lb(lset_t *L, const char *k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->v[L->n], sizeof L->v[L->n], fmt, ap);
  va_end(ap);
  L->l[L->n].k = k, L->l[L->n].v = L->v[L->n];
  L->n++;
}

static void proc_labels(lset_t *L) {
  L->n = 0;
  lb(L, "node", "%s", L->id->node);
  lb(L, "pid", "%s", L->id->pid);
  lb(L, "slurm_job_id", "%s", L->id->job);
}

/* one rank of one communicator; slot 0 holds what the caps sent to "other" */
static void comm_labels(lset_t *L, uint32_t slot) {
  const ncs_mx_comm_t *c = &L->s->comms[slot];
  proc_labels(L);
  if (slot == NCS_MX_OTHER) {
    static const char *const k[] = {"gpu", "comm_name", "comm_id", "n_nodes", "nranks", "rank"};
    for (int i = 0; i < 6; i++) lb(L, k[i], "other");
    return;
  }
  if (c->device >= 0)
    lb(L, "gpu", "GPU%d", c->device);
  else
    lb(L, "gpu", "unknown");
  lb(L, "comm_name", "%s", c->name[0] ? c->name : "unknown"); /* as Inspector names it */
  lb(L, "comm_id", "0x%016llx", (unsigned long long)c->comm_id);
  lb(L, "n_nodes", "%d", c->nnodes);
  lb(L, "nranks", "%d", c->nranks);
  lb(L, "rank", "%d", c->rank);
}

/* Inspector's style of size label, over a power-of-two range: "1-2KB", "512-1024KB", "0B" */
static void size_label(char *out, size_t n, int lg) {
  static const char *const unit[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  if (lg == NCS_MX_LG_OTHER)
    snprintf(out, n, "other");
  else if (lg < 0)
    snprintf(out, n, "0B");
  else
    snprintf(out, n, "%llu-%llu%s", 1ull << (lg % 10), 2ull << (lg % 10), unit[lg / 10]);
}

static void series_labels(lset_t *L, const ncs_mx_series_t *x, int with_timing) {
  static const char *const timing[] = {"kernel_gpu", "proxy_host", "enqueue_host"};
  comm_labels(L, x->comm);
  lb(L, x->p2p ? "p2p_operation" : "collective", "%s", L->s->names[x->func]);
  size_label(L->v[L->n], sizeof L->v[0], x->lg);
  L->l[L->n].k = "message_size", L->l[L->n].v = L->v[L->n];
  L->n++;
  if (!x->p2p) lb(L, "algo_proto", "%s_%s", L->s->names[x->algo], L->s->names[x->proto]);
  if (with_timing) lb(L, "timing", "%s", timing[x->timing]);
}

/* ------------------------------------------------------------------ the families */

static const fam_t F_BW = {"nccl_bus_bandwidth_gbs", K_GAUGE, "GB/s",
                           "Inspector's: geometric mean bus bandwidth of the collectives with GPU times in the last interval"};
static const fam_t F_EXEC = {"nccl_collective_exec_time_microseconds", K_GAUGE, "us",
                             "Inspector's: mean GPU execution time of the collectives in the last interval"};
static const fam_t F_P2P_BW = {"nccl_p2p_bus_bandwidth_gbs", K_GAUGE, "GB/s",
                               "Inspector's: geometric mean bandwidth of the sends/receives with GPU times in the last interval"};
static const fam_t F_P2P_EXEC = {"nccl_p2p_exec_time_microseconds", K_GAUGE, "us",
                                 "Inspector's: mean GPU execution time of the sends/receives in the last interval"};

static void inspector_gauges(sink_t *S, lset_t *L, int p2p) {
  const ncs_mx_snap_t *s = L->s;
  for (int which = 0; which < 2; which++) {
    fam_begin(S, which ? (p2p ? &F_P2P_EXEC : &F_EXEC) : (p2p ? &F_P2P_BW : &F_BW));
    for (uint32_t i = 0; i < s->nseries; i++) {
      const ncs_mx_series_t *x = &s->series[i];
      if (x->p2p != p2p || x->timing != NCS_MX_KERNEL_GPU || !x->v.g_n) continue;
      if (!which && !x->v.g_nbw) continue;
      series_labels(L, x, 0);
      pt_d(S, L->l, L->n, which ? x->v.g_us : x->v.g_bw);
    }
    fam_end(S);
  }
}

static void series_families(sink_t *S, lset_t *L, int p2p) {
  static const fam_t fc[] = {
      {"ncclscope_collectives_total", K_COUNTER, "1", "Collectives settled, by timing source of their execution time"},
      {"ncclscope_collective_bytes_total", K_COUNTER, "By", "Bytes of the settled collectives (nccl-tests' algbw size)"},
      {"ncclscope_collective_bus_bytes_total", K_COUNTER, "By", "Bytes x bus factor of the collectives with an execution time: over their time it is the bus bandwidth"},
      {"ncclscope_collective_exec_time_seconds", K_HIST, "s", "Execution time of the collectives (kernel_gpu: GPU time; proxy_host: host time of their children)"}};
  static const fam_t fp[] = {
      {"ncclscope_p2p_total", K_COUNTER, "1", "Sends and receives settled, by timing source of their execution time"},
      {"ncclscope_p2p_bytes_total", K_COUNTER, "By", "Bytes of the settled sends and receives"},
      {NULL, 0, NULL, NULL},
      {"ncclscope_p2p_exec_time_seconds", K_HIST, "s", "Execution time of the sends and receives"}};
  const fam_t *f = p2p ? fp : fc;
  const ncs_mx_snap_t *s = L->s;
  for (int w = 0; w < 4; w++) {
    if (!f[w].name) continue;
    fam_begin(S, &f[w]);
    for (uint32_t i = 0; i < s->nseries; i++) {
      const ncs_mx_series_t *x = &s->series[i];
      if (x->p2p != p2p || (w >= 2 && !x->v.timed)) continue;
      series_labels(L, x, 1);
      if (w == 0) pt_u(S, L->l, L->n, x->v.count);
      if (w == 1) pt_u(S, L->l, L->n, x->v.bytes);
      if (w == 2) pt_d(S, L->l, L->n, x->v.bus_bytes);
      if (w == 3) pt_hist(S, L->l, L->n, &x->v);
    }
    fam_end(S);
  }
}

/* late arrivals among the ranks of one communicator in this process */
static void arrival_families(sink_t *S, lset_t *L) {
  static const fam_t f[] = {
      {"ncclscope_local_ranks", K_GAUGE, "1", "Ranks of this communicator in this process: the arrival metrics compare these (all of them when it equals nranks)"},
      {"ncclscope_arrival_instances_total", K_COUNTER, "1", "Collectives every local rank of the communicator arrived at"},
      {"ncclscope_late_arrivals_total", K_COUNTER, "1", "Collectives at which this rank arrived last of the local ranks"},
      {"ncclscope_arrival_wait_seconds_total", K_COUNTER, "s", "Time this rank waited for the last local rank to arrive"},
      {"ncclscope_arrival_wait_caused_seconds_total", K_COUNTER, "s", "When this rank arrived last: the time the other local ranks waited for it"}};
  const ncs_mx_snap_t *s = L->s;
  for (int w = 0; w < 5; w++) {
    fam_begin(S, &f[w]);
    for (uint32_t i = 1; i < s->ncomms; i++) {
      const ncs_mx_comm_t *c = &s->comms[i];
      comm_labels(L, i);
      if (w == 0) pt_u(S, L->l, L->n, c->local_n);
      if (w == 1) pt_u(S, L->l, L->n, c->instances);
      if (w == 2) pt_u(S, L->l, L->n, c->late);
      if (w == 3) pt_secs(S, L->l, L->n, c->wait_ns);
      if (w == 4) pt_secs(S, L->l, L->n, c->caused_ns);
    }
    fam_end(S);
  }
}

static void one(sink_t *S, lset_t *L, const fam_t *f, uint64_t v) {
  fam_begin(S, f);
  proc_labels(L);
  pt_u(S, L->l, L->n, v);
  fam_end(S);
}

static void one_d(sink_t *S, lset_t *L, const fam_t *f, double v) {
  fam_begin(S, f);
  proc_labels(L);
  pt_d(S, L->l, L->n, v);
  fam_end(S);
}

/* per event type (and one more label) */
static void by_type(sink_t *S, lset_t *L, const char *k2, const char *v2, const uint64_t *v,
                    int skip_zero) {
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    if (skip_zero && !v[t]) continue;
    proc_labels(L);
    lb(L, "type", "%s", ncs_type_name(t));
    if (k2) lb(L, k2, "%s", v2);
    pt_u(S, L->l, L->n, v[t]);
  }
}

static void process_families(sink_t *S, lset_t *L, const ncs_mx_serve_stats_t *st) {
  const ncs_mx_proc_t *p = &L->s->p;
  static const char *const modes[] = {"trace", "flight", "capture"};
  static const fam_t info = {"ncclscope_info", K_GAUGE, "1", "1, with the plugin's version, mode and recorded events"};
  fam_begin(S, &info);
  proc_labels(L);
  lb(L, "version", "%s", NCS_VERSION);
  lb(L, "mode", "%s", p->mode >= 0 && p->mode <= 2 ? modes[p->mode] : "?");
  lb(L, "events", "0x%x", p->events);
  pt_u(S, L->l, L->n, 1);
  fam_end(S);

  static const fam_t rec = {"ncclscope_records_total", K_COUNTER, "1", "Records the writer received, by event type and kind (start, stop, state)"};
  fam_begin(S, &rec);
  by_type(S, L, "kind", "start", p->starts, 1);
  by_type(S, L, "kind", "stop", p->stops, 1);
  by_type(S, L, "kind", "state", p->states, 1);
  fam_end(S);

  static const fam_t lost = {"ncclscope_records_lost_total", K_COUNTER, "1", "Records lost, by reason (pool-full, no-slot: never seen by the metrics either; write-error: only the trace lost them) and event type"};
  fam_begin(S, &lost);
  for (unsigned r = 1; r <= NCS_LOSS_MAX; r++) by_type(S, L, "reason", ncs_loss_reason_name(r), p->lost[r - 1], 0);
  fam_end(S);

  static const fam_t exp = {"ncclscope_events_expired_total", K_COUNTER, "1", "Events closed without a stop after NCCLSCOPE_EXPIRE_MS or at the end"};
  fam_begin(S, &exp);
  by_type(S, L, NULL, NULL, p->expired, 1);
  fam_end(S);

  static const fam_t bad = {"ncclscope_invalid_handles_total", K_COUNTER, "1", "Stop/state calls with a handle that is not a live one of this load, ignored"};
  fam_begin(S, &bad);
  const char *hk[] = {"bad", "stale", "null"};
  uint64_t hv[] = {p->bad_handles, p->stale_handles, p->null_handles};
  for (int i = 0; i < 3; i++) {
    proc_labels(L);
    lb(L, "kind", "%s", hk[i]);
    pt_u(S, L->l, L->n, hv[i]);
  }
  fam_end(S);

  static const fam_t dumps = {"ncclscope_flight_dumps_total", K_COUNTER, "1", "Flight recorder dumps written, by what asked for them"};
  static const char *const why[] = {"", "signal", "watchdog", "request", "exit"};
  fam_begin(S, &dumps);
  for (int r = 1; r <= 4; r++) {
    proc_labels(L);
    lb(L, "reason", "%s", why[r]);
    pt_u(S, L->l, L->n, p->dumps[r]);
  }
  fam_end(S);

  const fam_t fx[] = {
      {"ncclscope_groups_total", K_COUNTER, "1", "Groups started (NCCLSCOPE_SAMPLE counts these)"},
      {"ncclscope_groups_unsampled_total", K_COUNTER, "1", "Groups without GPU times (NCCLSCOPE_SAMPLE)"},
      {"ncclscope_completion_revisions_total", K_COUNTER, "1", "Completions revised by a child that came late"},
      {"ncclscope_open_operations", K_GAUGE, "1", "Collectives and sends/receives started and not complete"},
      {"ncclscope_buffer_bytes", K_GAUGE, "By", "The record buffer (NCCLSCOPE_BUFFER_SIZE)"},
      {"ncclscope_buffer_used_bytes", K_GAUGE, "By", "The part of the record buffer in use"},
      {"ncclscope_buffer_peak_bytes", K_GAUGE, "By", "The most of the record buffer ever in use"},
      {"ncclscope_tracked_events", K_GAUGE, "1", "Open events the writer follows for completions (NCCLSCOPE_TRACK_MAX)"},
      {"ncclscope_trace_bytes_total", K_COUNTER, "By", "Bytes written to the trace or flight file"},
      {"ncclscope_trace_write_errors_total", K_COUNTER, "1", "Chunks that could not be written"},
      {"ncclscope_watchdog_seconds", K_GAUGE, "s", "NCCLSCOPE_WATCHDOG_S: no record for this long with operations open is a stall (0: off)"},
      {"ncclscope_metrics_series", K_GAUGE, "1", "Series of the per-operation metrics (NCCLSCOPE_METRICS_MAX_SERIES)"},
      {"ncclscope_metrics_incomplete_instances_total", K_COUNTER, "1", "Collectives given up on in the arrival metrics: not every local rank came within 10 s"},
  };
  uint64_t vx[] = {p->groups, p->groups_unsampled, p->revisions, p->open_ops, p->pool_bytes,
                   p->pool_used, p->pool_peak, p->tracked, p->trace_bytes, p->write_errors,
                   p->watchdog_s, L->s->nseries, p->incomplete};
  for (size_t i = 0; i < sizeof vx / sizeof vx[0]; i++) one(S, L, &fx[i], vx[i]);

  /* the watchdog's view, in every mode: how long since the last record, the oldest open
   * operation, and whether that makes a stall (docs/metrics.md, "Hangs") */
  uint64_t age = p->last_event_ns && p->mono_ns > p->last_event_ns ? p->mono_ns - p->last_event_ns : 0;
  uint64_t oldest = p->oldest_open_ns && p->mono_ns > p->oldest_open_ns ? p->mono_ns - p->oldest_open_ns : 0;
  uint64_t since = p->last_event_ns > p->oldest_open_ns ? p->last_event_ns : p->oldest_open_ns;
  int stalled = p->watchdog_s && p->open_ops && p->mono_ns > since &&
                p->mono_ns - since > (uint64_t)p->watchdog_s * 1000000000ull;
  static const fam_t fa = {"ncclscope_last_record_age_seconds", K_GAUGE, "s", "Time since the latest record (0: none yet)"};
  static const fam_t fo = {"ncclscope_oldest_open_operation_seconds", K_GAUGE, "s", "Age of the oldest open collective or send/receive (0: none)"};
  static const fam_t fs = {"ncclscope_stalled", K_GAUGE, "1", "1 when operations are open and nothing happened for NCCLSCOPE_WATCHDOG_S"};
  one_d(S, L, &fa, (double)age / 1e9);
  one_d(S, L, &fo, (double)oldest / 1e9);
  one(S, L, &fs, (uint64_t)stalled);

  static const fam_t over = {"ncclscope_metrics_overflow_total", K_COUNTER, "1", "Operations counted under \"other\" labels: over NCCLSCOPE_METRICS_MAX_COMMS (comm), NCCLSCOPE_METRICS_MAX_SERIES (series) or 64 names (name)"};
  fam_begin(S, &over);
  const char *ok[] = {"comm", "series", "name"};
  uint64_t ov[] = {p->over_comm, p->over_series, p->over_name};
  for (int i = 0; i < 3; i++) {
    proc_labels(L);
    lb(L, "what", "%s", ok[i]);
    pt_u(S, L->l, L->n, ov[i]);
  }
  fam_end(S);

  static const fam_t req = {"ncclscope_metrics_http_requests_total", K_COUNTER, "1", "HTTP requests answered, by status (aborted: the client read too slowly)"};
  fam_begin(S, &req);
  const char *codes[] = {"200", "404", "405", "503", "aborted"};
  for (int i = 0; i < 5; i++) {
    proc_labels(L);
    lb(L, "code", "%s", codes[i]);
    pt_u(S, L->l, L->n, st->http_requests[i]);
  }
  fam_end(S);
  static const fam_t conns = {"ncclscope_metrics_http_connections_total", K_COUNTER, "1", "HTTP connections accepted"};
  one(S, L, &conns, st->http_connections);
  static const fam_t skip = {"ncclscope_metrics_http_refresh_skipped_total", K_COUNTER, "1", "Snapshots not served because slow clients still held the older ones"};
  one(S, L, &skip, st->http_skipped);
  static const fam_t otlp = {"ncclscope_metrics_otlp_exports_total", K_COUNTER, "1", "OTLP pushes, by result"};
  fam_begin(S, &otlp);
  proc_labels(L), lb(L, "result", "ok"), pt_u(S, L->l, L->n, st->otlp_ok);
  proc_labels(L), lb(L, "result", "failed"), pt_u(S, L->l, L->n, st->otlp_failed);
  fam_end(S);
  static const fam_t tf = {"ncclscope_metrics_textfile_writes_total", K_COUNTER, "1", "Textfile rewrites, by result"};
  fam_begin(S, &tf);
  proc_labels(L), lb(L, "result", "ok"), pt_u(S, L->l, L->n, st->textfile_ok);
  proc_labels(L), lb(L, "result", "failed"), pt_u(S, L->l, L->n, st->textfile_failed);
  fam_end(S);

  static const fam_t win = {"ncclscope_metrics_interval_seconds", K_GAUGE, "s", "Length of the window Inspector's gauges (nccl_*) average over (0: none closed yet)"};
  one_d(S, L, &win, (double)p->window_ns / 1e9);
  static const fam_t ts = {"ncclscope_metrics_snapshot_timestamp_seconds", K_GAUGE, "s", "When these values were taken (Unix time)"};
  one_d(S, L, &ts, (double)p->real_ns / 1e9);
  static const fam_t t0 = {"ncclscope_metrics_start_timestamp_seconds", K_GAUGE, "s", "When the counters started from 0 (Unix time): the plugin's first communicator of this segment"};
  one_d(S, L, &t0, (double)p->start_real_ns / 1e9);
}

static void emit_all(sink_t *S, const ncs_mx_snap_t *s, const ncs_mx_ident_t *id,
                     const ncs_mx_serve_stats_t *st) {
  lset_t L;
  L.s = s, L.id = id, L.n = 0;
  inspector_gauges(S, &L, 0);
  inspector_gauges(S, &L, 1);
  series_families(S, &L, 0);
  series_families(S, &L, 1);
  arrival_families(S, &L);
  process_families(S, &L, st);
}

void ncs_mx_render_prom(ncs_mx_buf_t *out, const ncs_mx_snap_t *s, const ncs_mx_ident_t *id,
                        const ncs_mx_serve_stats_t *st) {
  sink_t S = {.b = out};
  ncs_mx_buf_reset(out);
  emit_all(&S, s, id, st);
}

/* OTLP/HTTP JSON (ExportMetricsServiceRequest): one resource (service.name, host.name,
 * process.pid, OTEL_RESOURCE_ATTRIBUTES), one scope, cumulative sums and histograms. */
void ncs_mx_render_otlp(ncs_mx_buf_t *out, const ncs_mx_snap_t *s, const ncs_mx_ident_t *id,
                        const ncs_mx_serve_stats_t *st) {
  sink_t S = {.b = out, .otlp = 1, .t_ns = s->p.real_ns, .t0_ns = s->p.start_real_ns};
  ncs_mx_buf_reset(out);
  PUT(out, "{\"resourceMetrics\":[{\"resource\":{\"attributes\":[");
  lbl_t r[40];
  char kv[40][2][128];
  int n = 0;
  r[n].k = "service.name", r[n++].v = id->service;
  r[n].k = "host.name", r[n++].v = id->node;
  r[n].k = "process.pid", r[n++].v = id->pid;
  /* OTEL_RESOURCE_ATTRIBUTES: key=value,... with %XX escapes (W3C Baggage's octets) */
  const char *p = id->resource;
  while (*p && n < 40) {
    size_t len = strcspn(p, ",");
    const char *eq = memchr(p, '=', len);
    if (eq && eq > p) {
      int k = n;
      char *dst[2] = {kv[k][0], kv[k][1]};
      const char *src[2] = {p, eq + 1};
      size_t sl[2] = {(size_t)(eq - p), len - (size_t)(eq - p) - 1};
      for (int j = 0; j < 2; j++) {
        size_t o = 0;
        for (size_t i = 0; i < sl[j] && o + 1 < sizeof kv[k][j]; i++) {
          unsigned x;
          if (src[j][i] == '%' && i + 2 < sl[j] && sscanf(src[j] + i + 1, "%2x", &x) == 1)
            dst[j][o++] = (char)x, i += 2;
          else
            dst[j][o++] = src[j][i];
        }
        dst[j][o] = 0;
      }
      r[n].k = kv[k][0], r[n++].v = kv[k][1];
    }
    p += len + (p[len] == ',');
  }
  for (int i = 0; i < n; i++) {
    if (i) PUT(out, ",");
    PUT(out, "{\"key\":\"");
    put_escaped(out, r[i].k);
    PUT(out, "\",\"value\":{\"stringValue\":\"");
    put_escaped(out, r[i].v);
    PUT(out, "\"}}");
  }
  ncs_mx_buf_printf(out, "]},\"scopeMetrics\":[{\"scope\":{\"name\":\"ncclscope\",\"version\":\"%s\"},\"metrics\":[",
                    NCS_VERSION);
  emit_all(&S, s, id, st);
  PUT(out, "]}]}]}");
}
