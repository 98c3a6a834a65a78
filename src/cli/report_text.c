/* report_text.c - `ncclscope report` on the terminal and as CSV (docs/report.md, "The terminal
 * report" and "CSV").
 *
 * Every table of the report is built once, as an ncs_tab (src/util/text.h), by one function
 * below; the terminal prints it fitted to its width (the first --top rows of the long ones, then
 * "N more rows"), --csv writes its raw values, and --sort KEY orders every table that has a column
 * KEY. The prose between the tables (header, coverage, findings, notes) is wrapped at word
 * boundaries to the same width. */
#include "cli/report_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "trace/gpu.h"
#include "util/fmt.h"
#include "util/mem.h"
#include "util/text.h"

/* the tables, in order; "sizes" and "breakdown" are not bounded by --top on the terminal */
const char *const ncs_report_tables[] = {"communicators", "sizes",   "breakdown", "links",
                                         "ranks",         "overlap", "replays",   "phases",
                                         "tags",          "ranges",  NULL};

int ncs_report_table_known(const char *name) {
  for (int k = 0; ncs_report_tables[k]; k++)
    if (!strcmp(ncs_report_tables[k], name)) return 1;
  return 0;
}

static const ncs_rview_t *V; /* the view of the report being printed */
static int W(void) { return V->wide ? 0 : V->width; }
static const char *on(const char *code) { return V->color ? code : ""; }
#define BOLD on("\033[1m")
#define YELLOW on("\033[33m")
#define RED on("\033[1;31m")
#define RESET on("\033[0m")

static void wrap(FILE *o, const char *first, const char *rest, const char *text) {
  ncs_wrap(o, first, rest, text, W());
}

/* a cell of a duration: text "15.03 ms", raw ns */
static void put_ns(ncs_tab_t *t, double ns) {
  char b[32];
  ncs_fmt_ns(b, sizeof b, ns);
  ncs_tab_num(t, b, ns);
}
static void put_u64(ncs_tab_t *t, uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRIu64, v);
  ncs_tab_put(t, b, NULL);
}
static void put_i64(ncs_tab_t *t, int64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRId64, v);
  ncs_tab_put(t, b, NULL);
}
static void put_pct(ncs_tab_t *t, double pct) {
  char b[32], r[32];
  snprintf(b, sizeof b, "%.0f%%", pct);
  snprintf(r, sizeof r, "%.2f", pct);
  ncs_tab_put(t, b, r);
}
static void put_gbs(ncs_tab_t *t, double v, const char *fmt) {
  char b[32], r[32];
  snprintf(b, sizeof b, fmt, v);
  snprintf(r, sizeof r, "%.4f", v);
  ncs_tab_put(t, b, r);
}
static void put_comm(ncs_tab_t *t, uint32_t comm) {
  char b[16];
  if (comm == UINT32_MAX) {
    ncs_tab_put(t, "-", "");
    return;
  }
  ncs_fmt_comm_label(b, sizeof b, comm);
  ncs_tab_put(t, b, NULL);
}

/* ------------------------------------------------------------------ the tables */

static ncs_tab_t *tab_comms(const ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  ncs_tab_t *t = ncs_tab_new("communicators");
  ncs_tab_col(t, "comm", "comm", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "commId", "comm_id", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "ranks", "nranks", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "nodes", "nnodes", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "recorded", "ranks_seen", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "name", "name", NCS_COL_TEXT, 0);
  for (uint32_t c = 0; c < j->ncomms; c++) {
    char id[24];
    ncs_tab_row(t);
    put_comm(t, c);
    ncs_fmt_comm_id(id, sizeof id, j->comms[c].comm_id);
    ncs_tab_put(t, id, NULL);
    put_i64(t, j->comms[c].nranks), put_i64(t, j->comms[c].nnodes), put_i64(t, j->comms[c].ranks_seen);
    ncs_tab_put(t, *j->comms[c].name ? j->comms[c].name : "-", j->comms[c].name);
  }
  return t;
}

static int cmp_bucket(const void *x, const void *y) {
  const ncs_an_bucket_t *a = *(const ncs_an_bucket_t *const *)x, *b = *(const ncs_an_bucket_t *const *)y;
  if (a->p2p != b->p2p) return a->p2p - b->p2p; /* collectives first */
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (!a->p2p) {
    int c = strcmp(a->func, b->func);
    if (c) return c;
  }
  if (a->log2 != b->log2) return a->log2 < b->log2 ? -1 : 1;
  return strcmp(b->func, a->func); /* Send before Recv */
}

/* the timing sources as the 80-column table names them */
static const char *short_timing(const char *src) {
  return !strcmp(src, "kernel_gpu") ? "gpu kernels" : !strcmp(src, "proxy_host") ? "proxy" : "enqueue";
}

/* the buckets the size table shows, sorted by communicator, function and size */
static const ncs_an_bucket_t **sorted_buckets(const ncs_analysis_t *a, uint32_t *n) {
  const ncs_an_bucket_t **v = ncs_xcalloc(a->nbuckets + 1, sizeof *v);
  *n = 0;
  for (uint32_t k = 0; k < a->nbuckets; k++) /* every bucket, with GPU times or not */
    if (a->buckets[k].count || a->buckets[k].no_gpu || a->buckets[k].unsampled) v[(*n)++] = &a->buckets[k];
  qsort(v, *n, sizeof *v, cmp_bucket);
  return v;
}

/* a bucket's cells after its communicator, function and size */
static void bucket_cells(ncs_tab_t *t, const ncs_an_bucket_t *b) {
  /* instances left out: their GPU times cannot be right, or were not sampled (docs/report.md);
   * in CSV the count alone, and the others in their own column */
  char raw[24];
  snprintf(raw, sizeof raw, "%" PRIu64, b->count);
  if (b->no_gpu + b->unsampled)
    ncs_tab_putf(t, raw, "%" PRIu64 " +%" PRIu64 " no GPU time", b->count, b->no_gpu + b->unsampled);
  else
    put_u64(t, b->count);
  put_u64(t, b->no_gpu + b->unsampled);
  if (!b->count) { /* no instance with a GPU time: no latency, interval or bandwidth (not 0) */
    for (int q = 0; q < 9; q++) ncs_tab_put(t, "-", "");
  } else {
    put_ns(t, b->lat_p50), put_ns(t, b->lat_p95), put_ns(t, b->lat_p99);
    if (b->lat_ci) { /* the median's 95% interval (--wide) */
      put_ns(t, b->lat_p50_lo), put_ns(t, b->lat_p50_hi);
    } else {
      ncs_tab_put(t, "-", ""), ncs_tab_put(t, "-", "");
    }
    put_gbs(t, b->algbw_p50, "%.2f");
    put_gbs(t, b->busbw_p50, "%.2f"), put_gbs(t, b->busbw_p95, "%.2f"), put_gbs(t, b->busbw_p99, "%.2f");
  }
  if (b->tput_n)
    put_gbs(t, b->tput_busbw_p50, "%.2f");
  else
    ncs_tab_put(t, "-", "");
  if (b->p2p || !b->count) { /* skew: of the instances with times, like latency */
    ncs_tab_put(t, "-", ""), ncs_tab_put(t, "-", "");
  } else {
    put_ns(t, b->skew_p50), put_ns(t, b->skew_max);
  }
  const char *src = ncs_bucket_timing(b);
  if (b->count)
    ncs_tab_put(t, V->wide ? src : short_timing(src), src);
  else
    ncs_tab_put(t, "-", "");
}

/* "c0 0x04f3c7918c4cba01 "sim-comm-0"", for the headings of the grouped tables */
static void comm_title(const ncs_analysis_t *a, uint32_t c, char *out, size_t len) {
  ncs_fmt_comm(out, len, c, a->job->comms[c].comm_id, a->job->comms[c].name);
}

/* The size table: a heading per communicator, the timing column only when the rows' sources
 * differ (or --wide). A Send row and the Recv row of the same size with the same numbers: one
 * "Send/Recv" row (on the terminal). */
static ncs_tab_t *tab_sizes(const ncs_analysis_t *a, int *merged, int *any_tput, const char **src0,
                           int *timing_out) {
  uint32_t n;
  const ncs_an_bucket_t **v = sorted_buckets(a, &n);
  int timing = 0;
  *src0 = NULL, *merged = 0, *any_tput = 0;
  for (uint32_t k = 0; k < n; k++) {
    *any_tput |= v[k]->tput_n > 0;
    if (!v[k]->count) continue; /* no timing of its own */
    if (!*src0) *src0 = ncs_bucket_timing(v[k]);
    timing |= strcmp(*src0, ncs_bucket_timing(v[k])) != 0;
  }
  ncs_tab_t *t = ncs_tab_new("sizes");
  ncs_tab_col(t, "comm", "comm", NCS_COL_GROUP | NCS_COL_ASC, 0);
  ncs_tab_col(t, "func", "func", NCS_COL_KEY | NCS_COL_ASC, 13);
  ncs_tab_col(t, "size>=", "bytes_lo", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "count", "count", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "no GPU\ntime", "no_gpu_time", NCS_COL_RIGHT | NCS_COL_CSV, 0); /* count's "+N" */
  ncs_tab_col(t, "lat p50", "lat_p50_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "lat p95", "lat_p95_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "lat p99", "lat_p99_ns", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "p50 from\n95%", "lat_p50_ci_lo_ns", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "p50 to\n95%", "lat_p50_ci_hi_ns", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "algbw p50\nGB/s", "algbw_p50_gbs", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "busbw p50\nGB/s", "busbw_p50_gbs", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "busbw p95\nGB/s", "busbw_p95_gbs", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "busbw p99\nGB/s", "busbw_p99_gbs", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "tput p50\nGB/s", "tput_busbw_p50_gbs", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "skew p50", "skew_p50_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "skew max", "skew_max_ns", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "timing", "timing", timing ? NCS_COL_LEFT : NCS_COL_WIDE, 0);
  char title[200], sz[24], lo[24];
  for (uint32_t k = 0; k < n; k++) {
    const ncs_an_bucket_t *b = v[k];
    const char *func = b->func;
    /* Send and Recv of one size with the same numbers: one row */
    int pair = b->p2p && k + 1 < n && v[k + 1]->p2p && v[k + 1]->comm == b->comm && v[k + 1]->log2 == b->log2 &&
               strcmp(v[k + 1]->func, b->func) && b->count == v[k + 1]->count &&
               b->lat_p50 == v[k + 1]->lat_p50 && b->lat_p95 == v[k + 1]->lat_p95 &&
               b->busbw_p50 == v[k + 1]->busbw_p50 && b->tput_busbw_p50 == v[k + 1]->tput_busbw_p50;
    if (pair && !V->sort) func = "Send/Recv", *merged = 1;
    ncs_tab_row(t);
    comm_title(a, b->comm, title, sizeof title);
    if (b->p2p) strncat(title, ", sends and receives", sizeof title - strlen(title) - 1);
    char lab[16];
    ncs_fmt_comm_label(lab, sizeof lab, b->comm);
    ncs_tab_put(t, title, lab);
    ncs_tab_put(t, func, NULL);
    ncs_fmt_bytes(sz, sizeof sz, b->log2);
    snprintf(lo, sizeof lo, "%llu", b->log2 < 0 ? 0ull : 1ull << b->log2);
    ncs_tab_put(t, sz, lo);
    bucket_cells(t, b);
    if (pair && !V->sort) k++;
  }
  free(v);
  *timing_out = timing;
  return t;
}

/* the bottleneck on the terminal: the label and the rank it names (its share is in the columns);
 * --wide and CSV: the whole text */
static void short_label(const ncs_an_bucket_t *b, char *out, size_t len) {
  if (b->bd_label < 0) snprintf(out, len, "-");
  else if (b->bd_label == NCS_BN_CANNOT) snprintf(out, len, "cannot tell: %s", ncs_bw_text[b->bd_reason]);
  else if (b->bd_wait_rank >= 0 && b->bd_label == NCS_BN_PEER)
    snprintf(out, len, "peer_wait, rank %d", b->bd_wait_rank);
  else if (b->bd_wait_rank >= 0) snprintf(out, len, "%s of rank %d", ncs_bn_names[b->bd_label], b->bd_wait_rank);
  else snprintf(out, len, "%s", ncs_bn_names[b->bd_label]);
}

static ncs_tab_t *tab_breakdown(const ncs_analysis_t *a) {
  uint32_t n;
  const ncs_an_bucket_t **v = sorted_buckets(a, &n);
  ncs_tab_t *t = ncs_tab_new("breakdown");
  ncs_tab_col(t, "comm", "comm", NCS_COL_GROUP | NCS_COL_ASC, 0);
  ncs_tab_col(t, "func", "func", NCS_COL_KEY | NCS_COL_ASC, 13);
  ncs_tab_col(t, "size>=", "bytes_lo", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "proxy", "instances", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "queue", "queue_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "launch", "launch_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "gpu", "gpu_wait_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "peer", "peer_wait_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "net", "network_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "flush", "flush_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "bottleneck", "bottleneck", NCS_COL_TEXT, 0);
  char title[200], sz[24], lo[24], lab[320], full[320];
  for (uint32_t k = 0; k < n; k++) {
    const ncs_an_bucket_t *b = v[k];
    if (b->p2p) continue;
    ncs_tab_row(t);
    char cl[16];
    comm_title(a, b->comm, title, sizeof title);
    ncs_fmt_comm_label(cl, sizeof cl, b->comm);
    ncs_tab_put(t, title, cl);
    ncs_tab_put(t, b->func, NULL);
    ncs_fmt_bytes(sz, sizeof sz, b->log2);
    snprintf(lo, sizeof lo, "%llu", b->log2 < 0 ? 0ull : 1ull << b->log2);
    ncs_tab_put(t, sz, lo);
    put_u64(t, b->bd_n);
    if (b->bd_n) {
      put_pct(t, 100 * ncs_bd_queue_share(b)), put_pct(t, 100 * ncs_bd_launch_share(b));
      put_pct(t, 100 * ncs_bd_share(b, NCS_PH_GPU)), put_pct(t, 100 * ncs_bd_share(b, NCS_PH_PEER));
      put_pct(t, 100 * ncs_bd_share(b, NCS_PH_NET)), put_pct(t, 100 * ncs_bd_share(b, NCS_PH_FLUSH));
    } else {
      for (int q = 0; q < 6; q++) ncs_tab_put(t, "-", "");
    }
    ncs_bd_label_text(b, full, sizeof full);
    short_label(b, lab, sizeof lab);
    ncs_tab_put(t, V->wide ? full : lab, full);
  }
  free(v);
  return t;
}

static ncs_tab_t *tab_links(const ncs_analysis_t *a) {
  ncs_tab_t *t = ncs_tab_new("links");
  ncs_tab_col(t, "comm", "comm", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "rank", "rank", NCS_COL_RIGHT | NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "peer", "peer", NCS_COL_RIGHT | NCS_COL_ASC, 0);
  ncs_tab_col(t, "ch", "channel", NCS_COL_RIGHT | NCS_COL_ASC, 0);
  ncs_tab_col(t, "dir", "dir", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "bytes", "bytes", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "GB/s", "gbs", NCS_COL_RIGHT | NCS_COL_ASC, 0);
  ncs_tab_col(t, "gpu", "gpu_wait_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "peer", "peer_wait_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "net", "network_pct", NCS_COL_RIGHT, 0);
  /* the links of least bandwidth first: where a slow link shows */
  const ncs_an_link_t **by = ncs_xcalloc(a->nlinks + 1, sizeof *by);
  uint32_t n = 0;
  for (uint32_t k = 0; k < a->nlinks; k++)
    if (a->links[k].active > 0 && a->links[k].bytes) by[n++] = &a->links[k];
  for (uint32_t i = 1; i < n; i++) /* insertion sort by GB/s, ascending (stable) */
    for (uint32_t k = i; k > 0; k--) {
      const ncs_an_link_t *x = by[k], *y = by[k - 1];
      if ((double)x->bytes / (double)x->active >= (double)y->bytes / (double)y->active) break;
      by[k] = y, by[k - 1] = x;
    }
  for (uint32_t k = 0; k < n; k++) {
    const ncs_an_link_t *L = by[k];
    int64_t s = 0;
    for (int p = 0; p < NCS_PH_N; p++) s += L->ph[p];
    ncs_tab_row(t);
    put_comm(t, L->comm);
    put_i64(t, L->rank), put_i64(t, L->peer), put_u64(t, L->channel);
    ncs_tab_put(t, L->is_send ? "send" : "recv", NULL);
    put_u64(t, L->bytes);
    put_gbs(t, (double)L->bytes / (double)L->active, "%.3f");
    put_pct(t, ncs_pct((uint64_t)L->ph[NCS_PH_GPU], (uint64_t)s));
    put_pct(t, ncs_pct((uint64_t)L->ph[NCS_PH_PEER], (uint64_t)s));
    put_pct(t, ncs_pct((uint64_t)L->ph[NCS_PH_NET], (uint64_t)s));
  }
  free(by);
  return t;
}

static ncs_tab_t *tab_ranks(const ncs_analysis_t *a, const ncs_findings_t *f) {
  ncs_tab_t *t = ncs_tab_new("ranks");
  ncs_tab_col(t, "comm", "comm", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "rank", "rank", NCS_COL_RIGHT | NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "pid", "pid", NCS_COL_RIGHT | NCS_COL_ASC, 0);
  ncs_tab_col(t, "instances", "instances", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "last%", "last_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "wait caused", "wait_caused_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "waited", "waited_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "slowest%", "slowest_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "queue avg", "queue_avg_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "launch avg", "launch_avg_ns", NCS_COL_RIGHT, 0);
  for (uint32_t k = 0; k < a->nranks; k++) {
    const ncs_an_rank_t *r = f->by_wait[k];
    ncs_tab_row(t);
    put_comm(t, r->comm);
    put_i64(t, r->rank), put_u64(t, a->job->procs[r->proc].pid), put_u64(t, r->instances);
    put_pct(t, ncs_pct(r->last, r->instances));
    put_ns(t, (double)r->wait_caused), put_ns(t, (double)r->wait_suffered);
    put_pct(t, ncs_pct(r->slowest, r->instances));
    if (r->launch_n)
      put_ns(t, (double)r->queue_sum / (double)r->launch_n),
          put_ns(t, (double)r->launch_sum / (double)r->launch_n);
    else
      ncs_tab_put(t, "-", ""), ncs_tab_put(t, "-", "");
  }
  return t;
}

static const char *dev_file(const ncs_analysis_t *a, uint32_t d) {
  const char *p = a->job->procs[a->job->gdevs[d].proc].path, *b = strrchr(p, '/');
  return b ? b + 1 : p;
}

static ncs_tab_t *tab_overlap(const ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  ncs_tab_t *t = ncs_tab_new("overlap");
  ncs_tab_col(t, "comm", "comm", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "rank", "rank", NCS_COL_RIGHT | NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "dev", "device", NCS_COL_RIGHT | NCS_COL_ASC, 0);
  ncs_tab_col(t, "nccl k", "nccl_kernels", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "other k", "other_kernels", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "comm", "comm_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "compute", "compute_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "overlap", "overlap_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "exposed", "exposed_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "exp%", "exposed_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "file", "file", NCS_COL_WIDE, 0);
  ncs_tab_col(t, "", "cannot_tell", NCS_COL_TEXT, 0);
  for (uint32_t k = 0; k < a->gpu.ndevs; k++) {
    const ncs_an_gdev_t *x = &a->gpu.devs[k];
    const ncs_job_gpu_dev_t *D = &j->gdevs[x->dev];
    ncs_tab_row(t);
    put_comm(t, D->comm);
    if (D->rank >= 0) put_i64(t, D->rank);
    else ncs_tab_put(t, "-", "");
    put_i64(t, D->device), put_u64(t, D->nccl_kernels), put_u64(t, D->compute_kernels);
    if (x->known) {
      put_ns(t, (double)x->ov.comm_ns), put_ns(t, (double)x->ov.compute_ns);
      put_ns(t, (double)x->ov.overlap_ns), put_ns(t, (double)x->ov.exposed_ns);
      char p[16], r[32];
      double e = ncs_pct((uint64_t)x->ov.exposed_ns, (uint64_t)x->ov.comm_ns);
      snprintf(p, sizeof p, "%.1f%%", e), snprintf(r, sizeof r, "%.2f", e);
      ncs_tab_put(t, p, r);
    } else {
      for (int q = 0; q < 5; q++) ncs_tab_put(t, "-", "");
    }
    ncs_tab_put(t, dev_file(a, x->dev), NULL);
    char why[512] = "";
    if (!x->known) snprintf(why, sizeof why, "cannot tell: %s (%s)", x->why, dev_file(a, x->dev));
    ncs_tab_put(t, why, x->known ? "" : x->why);
  }
  return t;
}

static ncs_tab_t *tab_replays(const ncs_analysis_t *a) {
  ncs_tab_t *t = ncs_tab_new("replays");
  ncs_tab_col(t, "comm", "comm", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "func", "func", NCS_COL_KEY | NCS_COL_ASC, 13);
  ncs_tab_col(t, "bytes", "bytes", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "instances", "instances", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "incomplete", "incomplete", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "kernels", "kernels", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "lat p50", "lat_p50_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "lat max", "lat_max_ns", NCS_COL_RIGHT, 0);
  for (uint32_t k = 0; k < a->gpu.nreplays; k++) {
    const ncs_an_replay_t *r = &a->gpu.replays[k];
    ncs_tab_row(t);
    put_comm(t, r->comm);
    ncs_tab_put(t, r->func, NULL);
    put_u64(t, r->bytes), put_u64(t, r->instances), put_u64(t, r->incomplete), put_u64(t, r->kernels);
    if (r->lat_p50 >= 0) put_ns(t, (double)r->lat_p50);
    else ncs_tab_put(t, "-", "");
    if (r->lat_max >= 0) put_ns(t, (double)r->lat_max);
    else ncs_tab_put(t, "-", "");
  }
  return t;
}

static ncs_tab_t *tab_phases(const ncs_v7_t *v) {
  ncs_tab_t *t = ncs_tab_new("phases");
  ncs_tab_col(t, "comm", "comm", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "rank", "rank", NCS_COL_RIGHT | NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "ops", "operations", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "initial sync", "initial_sync_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "compute", "compute_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "final sync", "final_sync_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "initial%", "initial_pct", NCS_COL_RIGHT, 0);
  for (uint32_t k = 0; k < v->nranks; k++) {
    const ncs_v7_rank_t *r = &v->ranks[k];
    if (!r->sum.ops) continue;
    uint64_t tot = 0;
    ncs_tab_row(t);
    put_comm(t, r->comm);
    put_i64(t, r->rank), put_u64(t, r->sum.ops);
    for (int p = 0; p < NCS_GPU_PHASES; p++)
      put_ns(t, (double)r->sum.ns[p] / (double)r->sum.ops), tot += r->sum.ns[p];
    put_pct(t, ncs_pct(r->sum.ns[0], tot));
  }
  return t;
}

static ncs_tab_t *tab_tags(const ncs_v7_t *v) {
  ncs_tab_t *t = ncs_tab_new("tags");
  ncs_tab_col(t, "tag", "tag", NCS_COL_RIGHT | NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "ops", "operations", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "span", "span_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "busy", "busy_ns", NCS_COL_RIGHT, 0);
  for (size_t k = 0; k < v->tags.n; k++) {
    const ncs_tag_t *g = &v->tags.v[k];
    ncs_tab_row(t);
    put_u64(t, g->tag), put_u64(t, g->ops);
    put_ns(t, (double)(g->last_end - g->first_start)), put_ns(t, (double)g->busy);
  }
  return t;
}

static ncs_tab_t *tab_ranges(const ncs_ranges_t *r, int *unk, int *bound) {
  ncs_tab_t *t = ncs_tab_new("ranges");
  ncs_tab_col(t, "name", "name", NCS_COL_KEY | NCS_COL_ASC, 14);
  ncs_tab_col(t, "ranks", "ranks", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "count", "count", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "wall", "wall_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "mean", "mean_ns", NCS_COL_RIGHT | NCS_COL_WIDE, 0);
  ncs_tab_col(t, "ops", "operations", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "bytes", "bytes", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "comm", "comm_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "GB/s", "busbw_gbs", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "exposed", "exposed_ns", NCS_COL_RIGHT, 0);
  *unk = *bound = 0;
  for (size_t k = 0; k < r->nnames; k++) {
    const ncs_range_agg_t *g = &r->by_name[k];
    char b[24], c[40], tb[24];
    ncs_tab_row(t);
    ncs_tab_put(t, *g->name ? g->name : "(no name)", g->name);
    put_u64(t, g->ranks), put_u64(t, g->ranges);
    if (g->measured) {
      put_ns(t, (double)g->wall_ns), put_ns(t, (double)g->wall_ns / (double)g->measured);
    } else {
      ncs_tab_put(t, "-", ""), ncs_tab_put(t, "-", "");
    }
    put_u64(t, g->colls + g->p2ps);
    ncs_fmt_size(b, sizeof b, g->bytes);
    ncs_tab_num(t, b, (double)g->bytes);
    if (g->comm_ns || !g->ops_without_gpu) {
      ncs_fmt_ns(tb, sizeof tb, (double)g->comm_ns);
      snprintf(c, sizeof c, "%s%s", g->comm_partial ? ">=" : "", tb);
      ncs_tab_num(t, c, (double)g->comm_ns);
    } else {
      ncs_tab_put(t, "-", "");
    }
    if (g->comm_ns) put_gbs(t, g->bus_gbps, "%.2f");
    else ncs_tab_put(t, "-", "");
    if (g->measured && g->exposed_known == g->measured) {
      put_ns(t, (double)g->exposed_ns);
    } else {
      ncs_tab_put(t, "unknown", "");
      *unk = 1;
    }
    *bound |= g->comm_partial != 0;
  }
  return t;
}

/* ------------------------------------------------------------------ printing */

static void print_tab(FILE *o, ncs_tab_t *t, int bounded) {
  if (V->sort) ncs_tab_sort(t, V->sort);
  char more[96];
  snprintf(more, sizeof more, "--top N to see more, --csv --table %s for all", ncs_tab_name(t));
  ncs_tab_view_t tv = {.indent = 2, .width = W(), .wide = V->wide, .top = bounded ? V->top : 0,
                       .more = more, .bold = NULL, .reset = NULL};
  ncs_tab_print(o, t, &tv);
  ncs_tab_free(t);
}

/* what the analysis rests on, then the warnings (the same list as --json and --html) */
static void print_coverage(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f) {
  uint64_t ops = a->cov.timing[0] + a->cov.timing[1] + a->cov.timing[2];
  char line[1024], first[48];
  snprintf(line, sizeof line, "%u of %u files read%s; %" PRIu64 " rank operations, completion from GPU kernels "
             "%.0f%%, proxy ops %.0f%%, none (enqueue only) %.0f%%; %.1f%% of the operation calls lost",
          a->cov.files - a->cov.unreadable, a->cov.files, a->cov.damaged ? " (some damaged)" : "", ops,
          ncs_pct(a->cov.timing[0], ops), ncs_pct(a->cov.timing[1], ops), ncs_pct(a->cov.timing[2], ops),
          ncs_pct(a->cov.op_lost, a->cov.op_calls));
  snprintf(first, sizeof first, "%sCoverage:%s ", BOLD, RESET);
  wrap(o, first, "  ", line);
  snprintf(first, sizeof first, "  %s!%s ", YELLOW, RESET);
  for (uint32_t k = 0; k < f->nwarn; k++) wrap(o, first, "    ", f->warn[k].text);
  fputc('\n', o);
}

/* the GPU section: sources, CUPTI per file, overlap per GPU, graph replays */
static void print_gpu(FILE *o, const ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  uint64_t ops = a->cov.gsrc[0] + a->cov.gsrc[1] + a->cov.gsrc[2];
  char line[2048];
  int n = snprintf(line, sizeof line, "GPU times by source: CUPTI %" PRIu64 ", KernelCh %" PRIu64 ", none %" PRIu64
                   " of %" PRIu64 " rank operations",
                   a->cov.gsrc[NCS_GS_CUPTI], a->cov.gsrc[NCS_GS_KERNELCH], a->cov.gsrc[NCS_GS_NONE], ops);
  if (a->cov.captured && n > 0 && (size_t)n < sizeof line)
    snprintf(line + n, sizeof line - (size_t)n,
             " (%" PRIu64 " captured into CUDA graphs: their GPU work is their replays)", a->cov.captured);
  wrap(o, "", "  ", line);
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_gpu_t *g = &j->gpu[i];
    if (j->procs[i].excluded || !g->have_state || (!g->kernels && g->state == NCS_GPU_OFF)) continue;
    size_t k = (size_t)snprintf(line, sizeof line, "%s: CUPTI %s", j->procs[i].path, ncs_gpu_state_name(g->state));
#define ADD(...) if (k < sizeof line) k += (size_t)snprintf(line + k, sizeof line - k, __VA_ARGS__)
    if (*g->holder) ADD(" (held by %s)", g->holder);
    if (*g->reason && g->state != NCS_GPU_ACTIVE) ADD(" (%s)", g->reason);
    if (g->kernels)
      ADD(", %" PRIu64 " kernels: %" PRIu64 " NCCL eager, %" PRIu64 " NCCL replayed, %" PRIu64
          " other; %" PRIu64 " launches never completed",
          g->kernels, g->nccl_eager, g->nccl_replays, g->compute, g->pending);
    if (*g->lost) ADD("; incomplete: %s", g->lost);
#undef ADD
    wrap(o, "  ", "    ", line);
  }
  if (!a->gpu.ndevs) {
    wrap(o, "  ", "  ", "no CUPTI kernel records: no compute/communication overlap (record with --cupti on)");
    fputc('\n', o);
    return;
  }
  fputc('\n', o);
  wrap(o, "", "  ", "Compute/communication overlap per GPU (CUPTI; exposed = NCCL kernels running with no "
                    "other kernel)");
  print_tab(o, tab_overlap(a), 1);
  if (a->gpu.nreplays) {
    fputc('\n', o);
    wrap(o, "", "  ", "CUDA graph replays of NCCL operations (CUPTI; metadata from the capture; latency = "
                      "slowest rank's kernel)");
    print_tab(o, tab_replays(a), 1);
  }
  fputc('\n', o);
}

static void print_sizes(FILE *o, const ncs_analysis_t *a) {
  int merged, any_tput, timing;
  const char *src0;
  ncs_tab_t *t = tab_sizes(a, &merged, &any_tput, &src0, &timing);
  fprintf(o, "\n%sCollectives by communicator, function and size%s (latency: the slowest rank's)\n", BOLD,
          RESET);
  print_tab(o, t, 0);
  if (merged)
    wrap(o, "  Send/Recv: ", "             ", "one row where the sends and the receives of a size show the same numbers.");
  if (any_tput)
    wrap(o, "  tput: ", "        ",
         "busbw over the interval between the kernel starts of consecutive instances on "
         "each rank (what a benchmark loop measures); busbw is over one kernel's transfer "
         "time. When the kernels of consecutive operations overlap or queue back to back "
         "(several streams, nccl-sim), that interval is shorter than a kernel and tput is "
         "far above busbw; below it, launch gaps dominate (docs/report.md).");
  char note[256];
  snprintf(note, sizeof note, "GB/s = 1e9 bytes/s.%s%s%s", timing || V->wide ? "" : " Durations of every row from ",
           timing || V->wide ? "" : short_timing(src0 ? src0 : "kernel_gpu"),
           timing || V->wide ? "" : " (timing, docs/report.md).");
  if (!V->wide) snprintf(note + strlen(note), sizeof note - strlen(note), " --wide: more columns.");
  wrap(o, "  ", "  ", note);
}

/* the reason when no bucket has proxy steps and all say "cannot tell" for the same reason (then one
 * line says it instead of a table of rows of dashes); -1 otherwise */
static int breakdown_one_reason(const ncs_analysis_t *a) {
  int reason = -1;
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    const ncs_an_bucket_t *b = &a->buckets[k];
    if (b->p2p || (!b->count && !b->no_gpu)) continue;
    if (b->bd_n || b->bd_label != NCS_BN_CANNOT || (reason >= 0 && b->bd_reason != reason)) return -1;
    reason = b->bd_reason;
  }
  return reason;
}

static void print_breakdown(FILE *o, const ncs_analysis_t *a) {
  fputc('\n', o);
  int one = breakdown_one_reason(a);
  if (one >= 0) { /* the table would repeat it on every row */
    char line[512];
    snprintf(line, sizeof line, "Where the time goes: cannot tell for any collective: %s (--csv --table "
             "breakdown: the rows)", ncs_bw_text[one]);
    wrap(o, "", "  ", line);
  } else {
    wrap(o, "", "  ", "Where the time goes (proxy steps; % of the proxy time; launch: % of launch + proxy; "
                       "queue, behind earlier work of the communicator: % of queue + launch + proxy)");
    print_tab(o, tab_breakdown(a), 0);
  }
  if (!V->wide && one < 0)
    wrap(o, "  ", "  ", "bottleneck: the label of 2/3 of the instances, else mixed; with the rank the others "
                        "waited for, when one rank stands out (--wide: with its share)");
  if (!a->nlinks) return;
  uint32_t n = 0;
  for (uint32_t k = 0; k < a->nlinks; k++) n += a->links[k].active > 0 && a->links[k].bytes;
  fprintf(o, "\n  Links by network bandwidth, slowest first (%u)\n", n);
  print_tab(o, tab_links(a), 1);
  if (a->nnetqs)
    fprintf(o, "  NetPlugin: %u QPs/sockets with events (--json \"breakdown.net\", SQLite net_qps)\n",
            a->nnetqs);
}

/* ABI v7: said only when NCCL called some communicator through v7 */
static void print_v7(FILE *o, const ncs_v7_t *v) {
  if (!v->v7_comm_ranks) return;
  fprintf(o, "\nNCCL 2.31 (profiler ABI v7): %u communicator ranks in %u of the processes\n",
          v->v7_comm_ranks, v->procs);
  if (v->all.ops) {
    wrap(o, "  ", "    ", "GPU time by kernel phase (mean per operation and channel; "
                          "initial sync = waiting for peers, a GPU-side skew):");
    print_tab(o, tab_phases(v), 1);
  }
  if (v->all.ops_without) {
    char line[256];
    snprintf(line, sizeof line, "GPU phases: cannot tell for %" PRIu64 " operations with kernel "
             "channels but no KernelPhase (not recorded: NCCLSCOPE_EVENTS without kernelphase?)",
             v->all.ops_without);
    wrap(o, "  ", "    ", line);
  }
  if (v->tags.n) {
    fprintf(o, "  User tags (steps): %zu tags, %" PRIu64 " untagged operations\n", v->tags.n, v->tags.untagged);
    print_tab(o, tab_tags(v), 1);
  } else {
    fprintf(o, "  User tags: none (%" PRIu64 " operations untagged)\n", v->tags.untagged);
  }
  if (v->sym_colls) {
    char line[2048];
    size_t n = (size_t)snprintf(line, sizeof line, "Symmetric kernels: %" PRIu64 " of %" PRIu64
                                " collectives:", v->sym_colls, v->colls);
    for (uint32_t k = 0; k < v->nvariants && n < sizeof line; k++)
      n += (size_t)snprintf(line + n, sizeof line - n, "%s %s %" PRIu64, k ? "," : "",
                            v->variants[k].variant, v->variants[k].ops);
    wrap(o, "  ", "    ", line);
  }
}

/* user ranges: the names by time (top N), what was lost, the metrics */
static void print_ranges(FILE *o, const ncs_ranges_t *r) {
  if (!r->ranges && !r->marks && !r->lost && !r->begin_lost && !r->end_lost && !r->open) return;
  char line[1024];
  fputc('\n', o);
  snprintf(line, sizeof line, "User ranges: %" PRIu64 " ranges, %" PRIu64 " marks in %u file%s; names by wall "
           "time (sums over ranks)", r->ranges, r->marks, r->files, r->files == 1 ? "" : "s");
  wrap(o, "", "  ", line);
  if (r->lost || r->begin_lost || r->end_lost) {
    snprintf(line, sizeof line, "lost: %" PRIu64 " range records dropped or not written, %" PRIu64 " ranges whose "
             "end was lost (no numbers), %" PRIu64 " pops whose push was lost (not shown)",
             r->lost, r->end_lost, r->begin_lost);
    wrap(o, "  ! ", "    ", line);
  }
  if (r->open) {
    snprintf(line, sizeof line, "%" PRIu64 " ranges never ended in the trace (no numbers)", r->open);
    wrap(o, "  ! ", "    ", line);
  }
  if (r->partial) {
    snprintf(line, sizeof line, "%" PRIu64 " ranges began before the trace's window (lower bounds, not summed)",
             r->partial);
    wrap(o, "  ! ", "    ", line);
  }
  int unk, bound;
  print_tab(o, tab_ranges(r, &unk, &bound), 1);
  snprintf(line, sizeof line, "wall, ops, bytes, comm: summed over the ranges with known ends; comm = union of "
           "their NCCL kernels' GPU intervals (KernelCh)%s", bound ? "; >= some operations had no GPU time" : "");
  wrap(o, "  ", "  ", line);
  if (unk) wrap(o, "  ", "  ", "exposed unknown: no CUPTI kernel records for compute (NCCLSCOPE_CUPTI=on gives them)");
  for (size_t k = 0; k < r->nnames && k < V->top; k++) {
    const ncs_range_agg_t *g = &r->by_name[k];
    if (!g->nmetrics) continue;
    size_t n = (size_t)snprintf(line, sizeof line, "metrics %s (%" PRIu64 " ranges):", g->name, g->with_values);
    for (uint32_t q = 0; q < g->nmetrics && n < sizeof line; q++) {
      if (isnan(g->value[q]))
        n += (size_t)snprintf(line + n, sizeof line - n, " %s=cannot combine", g->metric[q]);
      else
        n += (size_t)snprintf(line + n, sizeof line - n, " %s=%.6g", g->metric[q], g->value[q]);
    }
    if (!isnan(g->dram_gbps) && n < sizeof line) snprintf(line + n, sizeof line - n, " dram=%.2f GB/s", g->dram_gbps);
    wrap(o, "  ", "    ", line);
  }
}

void ncs_report_text(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_v7_t *v,
                     const ncs_ranges_t *rg, const ncs_rview_t *rv) {
  V = rv;
  char t1[32], t2[32], err[32], line[2048];
  ncs_fmt_ns(err, sizeof err, (double)a->job->error);
  fprintf(o, "%sncclscope report:%s %s\n", BOLD, RESET, a->path);
  snprintf(line, sizeof line, "%u processes on %u host%s, %u communicators, %" PRIu64 " collective instances (%" PRIu64
             " rank operations), %" PRIu64 " sends, %" PRIu64 " receives; clock error bound +-%s",
          a->cov.files, a->job->nhosts, a->job->nhosts == 1 ? "" : "s", a->job->ncomms, a->instances, a->coll_ops,
          a->sends, a->recvs, err);
  wrap(o, "", "", line);
  if (ncs_job_filter_active(&a->job->filter)) {
    char ft[512], first[32];
    ncs_job_filter_text(&a->job->filter, ft, sizeof ft);
    snprintf(line, sizeof line, "%s: %" PRIu64 " collective instances and %" PRIu64
             " sends/receives left out; every number below is of the rest", ft,
             a->job->run.filtered_inst, a->job->run.filtered_p2p);
    snprintf(first, sizeof first, "%sFilter:%s ", YELLOW, RESET);
    wrap(o, first, "  ", line);
  }
  fputc('\n', o);
  print_coverage(o, a, f);
  print_gpu(o, a);
  fprintf(o, "%sFindings%s\n", BOLD, RESET);
  for (uint32_t k = 0; k < f->nheadline; k++) {
    char fl[1024], first[32];
    ncs_finding_text(a, &f->items[k], fl, sizeof fl);
    snprintf(first, sizeof first, "  %s-%s ", RED, RESET);
    wrap(o, first, "    ", fl);
  }
  if (!f->nheadline) wrap(o, "  - ", "    ", f->none);
  if (f->n > f->nheadline)
    fprintf(o, "%sMinor findings%s (significant, but each cost the others under %.0f%% of the job's time)\n",
            BOLD, RESET, 100 * NCS_FIND_MATERIAL);
  for (uint32_t k = f->nheadline; k < f->n; k++) {
    char fl[1024];
    ncs_finding_text(a, &f->items[k], fl, sizeof fl);
    wrap(o, "  - ", "    ", fl);
  }
  fprintf(o, "\n%sCommunicators%s (c0, c1, ...: their labels in every output)\n", BOLD, RESET);
  print_tab(o, tab_comms(a), 1);
  print_sizes(o, a);
  print_breakdown(o, a);
  fprintf(o, "\n%sRanks by waiting caused%s\n", BOLD, RESET);
  print_tab(o, tab_ranks(a, f), 1);
  char first[32];
  snprintf(first, sizeof first, "\n%sClocks:%s ", BOLD, RESET);
  if (a->job->nhosts <= 1) {
    snprintf(line, sizeof line, "one host; all ranks share CLOCK_MONOTONIC, bound = CLOCK pair spread %s", err);
    wrap(o, first, "  ", line);
  } else {
    fputs(first, o);
    fprintf(o, "%u hosts, offsets from collective end times relative to %s:\n", a->job->nhosts,
            a->job->hosts[0].host);
    for (uint32_t h = 1; h < a->job->nhosts; h++) {
      ncs_fmt_ns(t1, sizeof t1, (double)a->job->hosts[h].offset), ncs_fmt_ns(t2, sizeof t2, (double)a->job->hosts[h].error);
      fprintf(o, "  %s: %s +-%s (%" PRIu64 " instances)\n", a->job->hosts[h].host, t1, t2, a->job->hosts[h].samples);
    }
  }
  int64_t g50 = 0;
  uint64_t gn = 0;
  for (uint32_t i = 0; i < a->job->nprocs; i++) {
    if (a->job->procs[i].gap_n) gn += a->job->procs[i].gap_n;
    if (llabs(a->job->procs[i].gap_p50) > llabs(g50)) g50 = a->job->procs[i].gap_p50;
  }
  if (gn) {
    ncs_fmt_ns(t1, sizeof t1, (double)-g50);
    snprintf(line, sizeof line, "the host saw a KernelCh start after it happened, by (median of the "
             "worst process, %" PRIu64 " samples) %s: NCCL's proxy thread polls", gn, t1);
    wrap(o, "  ", "    ", line);
  }
  /* each GPU clock's map to host time, with its bound (docs/report.md, "Clocks") */
  for (uint32_t i = 0, shown = 0; i < a->job->nprocs; i++) {
    const ncs_job_proc_t *p = &a->job->procs[i];
    if (p->excluded || !p->ngwin) continue;
    if (shown++ == 8) {
      fprintf(o, "  ... GPU clocks of more processes: --json files[].gpu_clock\n");
      break;
    }
    char d[32], e[32], b[96];
    ncs_fmt_ns(d, sizeof d, (double)(p->gpu_off - p->clk_off));
    if (p->gpu_err >= 0)
      ncs_fmt_ns(e, sizeof e, (double)p->gpu_err), snprintf(b, sizeof b, "within +%s", e);
    else if (p->gpu_err_known >= 0)
      ncs_fmt_ns(e, sizeof e, (double)p->gpu_err_known),
          snprintf(b, sizeof b, "within +%s where a launch bounds it, unbounded elsewhere", e);
    else
      snprintf(b, sizeof b, "bound unknown (no kernel launch recorded)");
    snprintf(line, sizeof line, "GPU clock of pid %" PRIu64 ": pTimer = CLOCK_REALTIME %s%s, %s "
             "(%u window%s, drift %.0f ns/s)", p->pid, p->gpu_off >= p->clk_off ? "+" : "", d, b,
             p->ngwin, p->ngwin == 1 ? "" : "s", p->gpu_drift_ppb);
    wrap(o, "  ", "    ", line);
  }
  print_v7(o, v);
  print_ranges(o, rg);
}

/* ------------------------------------------------------------------ CSV and --sort keys */

/* every table of the report, built (NULL for one the job does not have) */
static void build_all(ncs_tab_t **t, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_v7_t *v,
                      const ncs_ranges_t *rg) {
  int x, y, z;
  const char *s;
  t[0] = tab_comms(a);
  t[1] = tab_sizes(a, &x, &y, &s, &z);
  t[2] = tab_breakdown(a);
  t[3] = tab_links(a);
  t[4] = f ? tab_ranks(a, f) : NULL;
  t[5] = tab_overlap(a);
  t[6] = tab_replays(a);
  t[7] = v ? tab_phases(v) : NULL;
  t[8] = v ? tab_tags(v) : NULL;
  t[9] = rg ? tab_ranges(rg, &x, &y) : NULL;
}

void ncs_report_csv(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_v7_t *v,
                    const ncs_ranges_t *rg, const ncs_rview_t *rv) {
  V = rv;
  ncs_tab_t *t[10];
  build_all(t, a, f, v, rg);
  int first = 1;
  for (int k = 0; k < 10; k++) {
    if (!t[k]) continue;
    if (!rv->table || !strcmp(rv->table, ncs_tab_name(t[k]))) {
      if (rv->sort) ncs_tab_sort(t[k], rv->sort);
      if (!rv->table) fprintf(o, "%s# %s\n", first ? "" : "\n", ncs_tab_name(t[k]));
      ncs_tab_csv(o, t[k], rv->top_given ? rv->top : 0);
      first = 0;
    }
    ncs_tab_free(t[k]);
  }
}

int ncs_report_sort_known(const char *key, char *out, size_t len) {
  /* the columns do not depend on the job: build the tables of an empty one */
  static const ncs_rview_t rv0 = {.top = 5};
  const ncs_rview_t *saved = V;
  ncs_job_t j = {0};
  ncs_analysis_t a = {0};
  ncs_v7_t v = {0};
  ncs_ranges_t rg = {0};
  ncs_findings_t f = {0};
  a.job = &j;
  V = &rv0;
  ncs_tab_t *t[10];
  build_all(t, &a, &f, &v, &rg);
  int found = 0;
  size_t n = 0;
  if (len) out[0] = 0;
  for (int k = 0; k < 10; k++) {
    if (!t[k]) continue;
    found |= ncs_tab_has_key(t[k], key);
    if (n < len) {
      char keys[1024];
      ncs_tab_keys(t[k], keys, sizeof keys);
      n += (size_t)snprintf(out + n, len - n, "%s%s: %s", n ? "; " : "", ncs_tab_name(t[k]), keys);
    }
    ncs_tab_free(t[k]);
  }
  V = saved;
  return found;
}
