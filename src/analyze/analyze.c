/* analyze.c - cross-rank analysis: read, match, map clocks, aggregate (see analyze.h and
 * docs/report.md for the definition of every number, and its "Memory" section for the streaming
 * design).
 *
 * Pass 1 reads each file on its own: CLOCK pairs, KernelCh clock gaps, hosts, communicators (so
 * that communicator indices are in file order). With several hosts, pass 2 merges all files and
 * collects, per collective instance, the earliest completion end per host (the host offsets).
 * The last pass merges all files again and computes everything else. A merged pass always
 * advances the file whose latest event time (mapped to realtime) is the smallest; an operation is
 * held from its START until its completion settled (NCS_AN_SETTLE_NS of its file's time after its
 * last COMPLETE or EXPIRED, or the end of its segment), then joins its instance, which is
 * finished as soon as every rank of the communicator is in, or closed incomplete when it was not
 * joined for NCS_AN_HORIZON_NS of merged time (or its communicator has NCS_AN_OPEN_MAX open). */
#include "analyze/analyze.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/reader.h"
#include "util/dtype.h"
#include "util/hmap.h"
#include "util/mem.h"
#include "util/num.h"
#include "util/pool.h"

const char *const ncs_src_names[NCS_SRC_N] = {"kernel_gpu", "proxy_host", "enqueue_host"};

/* one Coll or P2p of one rank */
typedef struct {
  uint32_t comm, proc;
  int32_t rank, peer;
  const char *func, *dtype; /* interned */
  uint64_t seq, order;
  uint64_t count;
  int64_t root;
  uint64_t bytes;
  uint64_t api_ts, coll_ts, stop_ts;
  uint64_t end_ns, first_child, gpu_start, gpu_stop;
  uint32_t cflags;
  uint8_t p2p, complete, is_send, unsampled;
  uint32_t seg;      /* segment of the file, and the START's event id there (ncs_an_op) */
  uint64_t id;
  size_t inst, pair; /* ncs_an_op: its instance; the paired send/recv index + 1 (0 none) */
} op_t;

/* Quantiles of one series: exact samples up to NCS_AN_EXACT_MAX, then a log-scale histogram
 * (bins of ratio QS_GAMMA, the value of a bin its midpoint in relative terms: relative error at
 * most NCS_AN_SKETCH_ERR) plus exact min and max. Values below QS_TINY count as 0. */
#define QS_GAMMA ((1.0 + NCS_AN_SKETCH_ERR) / (1.0 - NCS_AN_SKETCH_ERR))
#define QS_TINY 1e-9
typedef struct {
  double *v;
  size_t n, cap;
  uint64_t *bin; /* sketch: counts of bins lo .. lo + nbin - 1 */
  int32_t lo;
  uint32_t nbin;
  uint64_t zeros, total;
  double min, max;
} qs_t;

typedef struct { /* what orders a bucket, a rank, a cell, a mismatch as the sorted analysis did */
  uint32_t comm;
  const char *func;
  uint64_t seq;
  int32_t rank;
  int set;
} ikey_t;

typedef struct { /* a bucket's private part (parallel to a->buckets) */
  qs_t lat, bw, abw, skew, tbw;
  int p2p_first;        /* p2p: the first op in (comm, sender, receiver, order, send first) */
  uint32_t pcomm;
  int32_t psrc, pdst;
  uint64_t porder;
  int psend;
  ikey_t first;         /* collective: the first instance (comm, func, seq) */
} bx_t;

typedef struct { /* an open collective instance */
  uint32_t comm;
  const char *func;
  uint64_t seq;
  op_t *ops;
  uint32_t n, cap;
  uint64_t *seen; /* bitmap of ranks [0, nranks) */
  uint32_t distinct, nseen_words;
  int64_t joined; /* merged time of the last record */
  int used;
} inst_t;

typedef struct { /* a send or receive waiting for its partner */
  uint32_t comm;
  int32_t src, dst;
  uint64_t order, bytes;
  int is_send, used;
  int64_t joined;
  size_t ret; /* retained p2p index */
} pwait_t;

#define TPUT_KEEP 16 /* finished instances kept per (comm, func) for throughput */
typedef struct { /* one finished instance's kernel times, by rank */
  int used;
  uint64_t seq, bytes;
  struct tk_s {
    int32_t rank;
    int gpu;
    uint64_t start, stop;
  } *tk;
  size_t ntk, captk;
} tinst_t;
typedef struct { /* per (comm, func): the TPUT_KEEP finished instances of the highest seq */
  uint32_t comm;
  const char *func;
  tinst_t keep[TPUT_KEEP];
} stream_t;

typedef struct {
  ncs_pool_t strs; /* interned strings */
  int retain, hostpass;
  /* pass 1 clock samples per process */
  int64_t **gaps;
  size_t *ngaps;
  /* aggregates' private parts */
  bx_t *bx;
  ikey_t *rkey;          /* per a->ranks: its first instance */
  ikey_t *ckey;          /* per a->cells: its first instance */
  ikey_t mkey[16];       /* per a->mism */
  hmap_t bm, rm, cm;     /* bucket, rank, cell maps */
  /* open instances, streams, waiting p2p: verified hash maps (key -> index) */
  inst_t *inst;
  size_t ninst, capinst, nopen;
  uint32_t *inst_free;
  size_t ninst_free, capinst_free;
  hmap_t im, sm, pm;
  stream_t *streams;
  size_t nstreams;
  uint32_t *comm_open; /* per communicator: open instances */
  size_t ncomm_open;
  pwait_t *pw;
  size_t npw, cappw, npw_used;
  uint32_t *pw_free;
  size_t npw_free, cappw_free;
  uint64_t held, pending; /* rank operations held now; of which pending in their files */
  int64_t now, last_sweep;
  /* host offsets (pass 2 with several hosts): reservoirs of d and of the spread per host */
  int64_t *hd, *hsp; /* [host * NCS_AN_HOST_SAMPLES + k] */
  uint64_t *hn;
  uint64_t rng;
  /* scratch */
  int64_t *durs, *arr, *tiv, *lo, *hi;
  size_t capd, captiv;
  /* retained (opts.retain) */
  op_t *rops, *rp2p;
  size_t nrops, caprops, nrp2p, caprp2p;
  ncs_an_instance_t *insts;
  size_t ninsts, capinsts;
  op_t *ops; /* final: collectives by instance, then p2p (ncs_an_op) */
  size_t n;
} priv_t;

/* interned strings: pointer equality is string equality ("" for NULL) */
static const char *intern(priv_t *P, const char *s) { return ncs_pool_str(&P->strs, s ? s : ""); }

static int is_func(const char *f, const char *name) { return f && !strcmp(f, name); }

/* ------------------------------------------------------------------ quantile store */
static int32_t qs_index(double x) { return (int32_t)ceil(log(x) / log(QS_GAMMA)); }
/* the bin (g^(i-1), g^i]'s value: 2 g^i / (g + 1), within NCS_AN_SKETCH_ERR of all of it */
static double qs_value(int32_t i) { return 2.0 * pow(QS_GAMMA, i) / (QS_GAMMA + 1.0); }

static void qs_sketch(qs_t *q, double x) {
  if (!(x >= QS_TINY)) {
    q->zeros++;
    return;
  }
  int32_t i = qs_index(x);
  if (!q->nbin) {
    q->bin = ncs_xrealloc(NULL, sizeof *q->bin), q->bin[0] = 0, q->lo = i, q->nbin = 1;
  } else if (i < q->lo || i >= q->lo + (int32_t)q->nbin) {
    int32_t lo = i < q->lo ? i : q->lo, hi = i >= q->lo + (int32_t)q->nbin ? i + 1 : q->lo + (int32_t)q->nbin;
    uint64_t *b = calloc((size_t)(hi - lo), sizeof *b);
    if (!b) abort();
    memcpy(b + (q->lo - lo), q->bin, q->nbin * sizeof *b);
    free(q->bin);
    q->bin = b, q->lo = lo, q->nbin = (uint32_t)(hi - lo);
  }
  q->bin[i - q->lo]++;
}

static void qs_add(qs_t *q, double x) {
  if (!q->total || x < q->min) q->min = x;
  if (!q->total || x > q->max) q->max = x;
  q->total++;
  if (q->nbin || q->zeros) { /* sketching already */
    qs_sketch(q, x);
    return;
  }
  if (q->n < NCS_AN_EXACT_MAX) {
    ncs_xgrow(&q->v, &q->cap, q->n + 1, sizeof *q->v);
    q->v[q->n++] = x;
    return;
  }
  for (size_t k = 0; k < q->n; k++) qs_sketch(q, q->v[k]); /* switch to the sketch */
  free(q->v), q->v = NULL, q->n = q->cap = 0;
  qs_sketch(q, x);
}

static int qs_sketched(const qs_t *q) { return q->nbin || q->zeros; }

/* nearest-rank quantile; call qs_sort first */
static double qs_q(const qs_t *q, double p) {
  if (!q->total) return 0;
  size_t k = ncs_nrank((size_t)q->total, p);
  if (!qs_sketched(q)) return q->v[k - 1];
  double x = q->max;
  if (k <= q->zeros) {
    x = 0;
  } else {
    uint64_t c = q->zeros;
    for (uint32_t b = 0; b < q->nbin; b++)
      if ((c += q->bin[b]) >= k) {
        x = qs_value(q->lo + (int32_t)b);
        break;
      }
  }
  return x < q->min ? q->min : x > q->max ? q->max : x;
}
static void qs_sort(qs_t *q) { ncs_sort(q->v, q->n, sizeof *q->v, ncs_cmp_dbl); }
static void qs_free(qs_t *q) { free(q->v), free(q->bin); }

/* ------------------------------------------------------------------ keys */
/* the order of the sorted analysis: (comm, func, seq, rank) */
static int ikey_cmp(const ikey_t *x, const ikey_t *y) {
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->func != y->func) {
    int c = strcmp(x->func, y->func);
    if (c) return c;
  }
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}
/* keep the smaller key in *k */
static int ikey_min(ikey_t *k, ikey_t x) {
  x.set = 1;
  if (k->set && ikey_cmp(k, &x) <= 0) return 0;
  *k = x;
  return 1;
}

/* a verified hash map: h is the hash of a composite key, the map holds h + j -> index for the
 * first free j < VPROBE; match says whether an index is the key sought. Lookups probe the VPROBE
 * keys whatever is absent, so deletions need no tombstones. */
#define VPROBE 8
typedef int (*vmatch_f)(const priv_t *P, uint64_t idx, const void *key);
static int vfind(const priv_t *P, const hmap_t *m, uint64_t h, vmatch_f match, const void *key,
                 uint64_t *idx, uint64_t *at) {
  for (uint64_t j = 0; j < VPROBE; j++) {
    uint64_t v;
    if (hm_get(m, h + j, &v) && match(P, v, key)) {
      if (idx) *idx = v;
      if (at) *at = h + j;
      return 1;
    }
  }
  return 0;
}
static int vput(hmap_t *m, uint64_t h, uint64_t idx, uint64_t *at) {
  for (uint64_t j = 0; j < VPROBE; j++)
    if (!hm_get(m, h + j, NULL)) {
      if (hm_put(m, h + j, idx) != 0) abort();
      *at = h + j;
      return 0;
    }
  return -1; /* VPROBE colliding keys: not expected with 64-bit hashes */
}

/* ------------------------------------------------------------------ clocks of one file (pass 1) */
typedef struct {
  int64_t *v;
  size_t n, cap;
} i64vec_t;
static void push_i64(i64vec_t *v, int64_t x) {
  ncs_xgrow(&v->v, &v->cap, v->n + 1, sizeof *v->v);
  v->v[v->n++] = x;
}

static uint32_t find_comm(ncs_analysis_t *a, const ncs_comm_info_t *c) {
  int64_t k = ncs_an_comm_index(a, c->comm_id, c->nranks);
  if (k >= 0) return (uint32_t)k;
  a->comms = ncs_xrealloc(a->comms, (a->ncomms + 1) * sizeof *a->comms);
  ncs_an_comm_t *n = &a->comms[a->ncomms];
  memset(n, 0, sizeof *n);
  n->comm_id = c->comm_id, n->nranks = c->nranks, n->nnodes = c->nnodes;
  return a->ncomms++;
}

/* Pass 1 over one file: host, pid, communicators, CLOCK pairs (the first NCS_AN_GAP_MAX for the
 * median; the spread over all), KernelCh gaps (the first NCS_AN_GAP_MAX), damage. */
static void read_clocks(ncs_analysis_t *a, const char *path, uint32_t pi) {
  ncs_an_proc_t *pr = &a->procs[pi];
  snprintf(pr->file, sizeof pr->file, "%s", path);
  char err[256];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  if (!r) {
    pr->damaged = 1;
    a->damaged_files++;
    return;
  }
  i64vec_t clk = {0}, gaps = {0};
  int64_t cmin = 0, cmax = 0;
  uint64_t nclk = 0;
  ncs_item_t it;
  int rc;
  while ((rc = ncs_reader_next(r, &it)) == 1) {
    if (it.what == NCS_ITEM_SEGMENT) {
      const ncs_segment_info_t *si = ncs_reader_segment(r);
      snprintf(pr->host, sizeof pr->host, "%s", si->host);
      pr->pid = si->pid;
    } else if (it.what == NCS_ITEM_CLOCK) {
      int64_t d = (int64_t)(it.clock_realtime_ns - it.clock_mono_ns);
      if (!nclk || d < cmin) cmin = d;
      if (!nclk || d > cmax) cmax = d;
      nclk++;
      if (clk.n < NCS_AN_GAP_MAX) push_i64(&clk, d);
    } else if (it.what == NCS_ITEM_COMM) {
      if (it.comm.index < 4096) find_comm(a, &it.comm);
    } else if (it.what == NCS_ITEM_EVENT && it.ev.kind == NCS_REC_START &&
               it.ev.type == NCS_T_KERNEL_CH) {
      if (gaps.n < NCS_AN_GAP_MAX && it.ev.f[NCS_F(KernelCh, pTimer)])
        push_i64(&gaps, (int64_t)(it.ev.f[NCS_F(KernelCh, pTimer)] - it.ev.ts));
    }
  }
  if (rc < 0) {
    pr->damaged = 1;
    a->damaged_files++;
  }
  ncs_reader_close(r);
  if (clk.n) {
    ncs_sort(clk.v, clk.n, sizeof *clk.v, ncs_cmp_i64);
    pr->clk_off = ncs_qi64(clk.v, clk.n, 0.5), pr->clk_spread = cmax - cmin;
    pr->clk_pairs = nclk > UINT32_MAX ? UINT32_MAX : (uint32_t)nclk;
  }
  if (gaps.n) {
    ncs_sort(gaps.v, gaps.n, sizeof *gaps.v, ncs_cmp_i64);
    int64_t med = ncs_qi64(gaps.v, gaps.n, 0.5);
    int64_t d = med - pr->clk_off;
    if (clk.n && d < 1000000000 && d > -1000000000) /* within 1 s of realtime: realtime domain */
      pr->gpu_domain = NCS_GPU_REALTIME, pr->gpu_off = pr->clk_off;
    else { /* the least-delayed start: the largest gap, but not one more than NCS_AN_GPU_TOL_NS
            * above the median, since a pTimer later than the host saw the channel start belongs
            * to another operation (docs/report.md, "GPU times that cannot be right") */
      size_t top = gaps.n;
      while (top > 1 && gaps.v[top - 1] > med + NCS_AN_GPU_TOL_NS) top--;
      pr->gpu_domain = NCS_GPU_OWN, pr->gpu_off = gaps.v[top - 1];
    }
    pr->gap_p50 = med - pr->gpu_off, pr->gap_p99 = ncs_qi64(gaps.v, gaps.n, 0.99) - pr->gpu_off;
    pr->gap_min = gaps.v[0] - pr->gpu_off, pr->gap_max = gaps.v[gaps.n - 1] - pr->gpu_off;
    pr->gap_n = gaps.n;
  }
  free(clk.v), free(gaps.v);
}

/* ------------------------------------------------------------------ per operation */
static int64_t job_time(const ncs_analysis_t *a, const op_t *o, uint64_t mono) {
  return (int64_t)mono + ncs_an_job_offset(a, o->proc);
}
static int64_t arrival(const ncs_analysis_t *a, const op_t *o) {
  return job_time(a, o, o->api_ts ? o->api_ts : o->coll_ts);
}
static int has_gpu(const op_t *o) {
  return (o->cflags & NCS_CF_KERNEL) && o->gpu_stop > o->gpu_start && o->gpu_start;
}
/* GPU kernel start in job time, or 0 */
static int64_t kstart(const ncs_analysis_t *a, const op_t *o) {
  if (!has_gpu(o)) return 0;
  const ncs_an_proc_t *p = &a->procs[o->proc];
  if (p->gpu_domain == NCS_GPU_NONE) return 0;
  return job_time(a, o, (uint64_t)((int64_t)o->gpu_start - p->gpu_off));
}
static int64_t duration(const op_t *o, int *src) {
  if (has_gpu(o)) {
    *src = NCS_SRC_KERNEL_GPU;
    return (int64_t)(o->gpu_stop - o->gpu_start);
  }
  if (o->complete && o->end_ns > o->first_child && o->first_child &&
      !(o->cflags & NCS_CF_NO_CHILDREN)) {
    *src = NCS_SRC_PROXY_HOST;
    return (int64_t)(o->end_ns - o->first_child);
  }
  *src = NCS_SRC_ENQUEUE_HOST;
  uint64_t from = o->api_ts ? o->api_ts : o->coll_ts;
  return o->stop_ts > from ? (int64_t)(o->stop_ts - from) : 0;
}
static uint64_t op_bytes(const op_t *o, int n) {
  uint64_t b = o->count * ncs_dtype_size(o->dtype);
  if (!o->p2p && (is_func(o->func, "AllGather") || is_func(o->func, "ReduceScatter")))
    b *= (uint64_t)(n > 0 ? n : 1);
  return b;
}
static int log2b(uint64_t b) {
  if (!b) return -1;
  int k = 0;
  while (b >>= 1) k++;
  return k;
}
static ikey_t op_key(const op_t *o) {
  return (ikey_t){.comm = o->comm, .func = o->func, .seq = o->seq, .rank = o->rank, .set = 1};
}

/* ------------------------------------------------------------------ aggregates */
static ncs_an_bucket_t *bucket(ncs_analysis_t *a, priv_t *P, uint32_t comm, const char *func,
                               int lg, int p2p) {
  uint64_t key = ((uint64_t)comm << 40) ^ ((uint64_t)(uintptr_t)func << 8) ^ (uint64_t)(lg + 1);
  key = hm_mix(key);
  uint64_t idx;
  for (;; key++) { /* verify the fields: the key is a hash (buckets are never deleted) */
    if (!hm_get(&P->bm, key, &idx)) break;
    ncs_an_bucket_t *b = &a->buckets[idx];
    if (b->comm == comm && b->func == func && b->log2 == lg && b->p2p == p2p) return b;
  }
  a->buckets = ncs_xrealloc(a->buckets, (a->nbuckets + 1) * sizeof *a->buckets);
  P->bx = ncs_xrealloc(P->bx, (a->nbuckets + 1) * sizeof *P->bx);
  ncs_an_bucket_t *b = &a->buckets[a->nbuckets];
  memset(b, 0, sizeof *b), memset(&P->bx[a->nbuckets], 0, sizeof *P->bx);
  b->comm = comm, b->func = func, b->log2 = lg, b->p2p = p2p;
  hm_put(&P->bm, key, a->nbuckets++);
  return b;
}
static bx_t *bx_of(const ncs_analysis_t *a, priv_t *P, const ncs_an_bucket_t *b) {
  return &P->bx[b - a->buckets];
}
static void bucket_add(ncs_analysis_t *a, priv_t *P, ncs_an_bucket_t *b, uint64_t bytes,
                       double lat, double bw, double abw, double skew, int src) {
  bx_t *x = bx_of(a, P, b);
  qs_add(&x->lat, lat), qs_add(&x->bw, bw), qs_add(&x->abw, abw), qs_add(&x->skew, skew);
  b->n++;
  b->count++, b->bytes += bytes, b->src[src]++;
}

static ncs_an_rank_t *rank_of(ncs_analysis_t *a, priv_t *P, const op_t *o) {
  uint64_t key = ((uint64_t)o->comm << 32) | (uint32_t)o->rank, idx;
  if (!hm_get(&P->rm, key, &idx)) {
    a->ranks = ncs_xrealloc(a->ranks, (a->nranks + 1) * sizeof *a->ranks);
    P->rkey = ncs_xrealloc(P->rkey, (a->nranks + 1) * sizeof *P->rkey);
    ncs_an_rank_t *r = &a->ranks[a->nranks];
    memset(r, 0, sizeof *r), memset(&P->rkey[a->nranks], 0, sizeof *P->rkey);
    r->comm = o->comm, r->rank = o->rank;
    idx = a->nranks++;
    hm_put(&P->rm, key, idx);
  }
  /* the proc of its record in the first instance (comm, func, seq), as the sorted order had */
  if (ikey_min(&P->rkey[idx], op_key(o))) a->ranks[idx].proc = o->proc;
  return &a->ranks[idx];
}

/* the evidence kept: the NCS_AN_EVIDENCE largest lateness, ties to the first instance in
 * (func, seq) order, whatever order the instances finish in */
static int ev_before(const ncs_an_evidence_t *x, const ncs_an_evidence_t *y) {
  if (x->late != y->late) return x->late > y->late;
  int c = strcmp(x->func, y->func);
  return c ? c < 0 : x->seq < y->seq;
}
static void add_evidence(ncs_an_rank_t *r, const op_t *o, int64_t late) {
  ncs_an_evidence_t e = {o->func, o->seq, late};
  uint32_t k = r->nev < NCS_AN_EVIDENCE ? r->nev++ : NCS_AN_EVIDENCE - 1;
  if (k == NCS_AN_EVIDENCE - 1 && r->ev[k].func && !ev_before(&e, &r->ev[k])) return;
  r->ev[k] = e;
  for (; k > 0 && ev_before(&r->ev[k], &r->ev[k - 1]); k--) {
    ncs_an_evidence_t t = r->ev[k];
    r->ev[k] = r->ev[k - 1], r->ev[k - 1] = t;
  }
}

/* the examples kept: the 16 first in (comm, func, seq) order */
static void add_mismatch(ncs_analysis_t *a, priv_t *P, const op_t *x, const op_t *y, int32_t nodd,
                         const char *what) {
  a->mismatched++;
  const uint32_t max = sizeof a->mism / sizeof a->mism[0];
  ikey_t k = op_key(x);
  k.rank = 0;
  uint32_t at = a->nmism;
  if (a->nmism == max) { /* replace the largest when this one comes before it */
    at = 0;
    for (uint32_t i = 1; i < max; i++)
      if (ikey_cmp(&P->mkey[i], &P->mkey[at]) > 0) at = i;
    if (ikey_cmp(&k, &P->mkey[at]) >= 0) return;
  } else {
    a->nmism++;
  }
  ncs_an_mismatch_t *m = &a->mism[at];
  P->mkey[at] = k;
  m->comm = x->comm, m->func = x->func, m->seq = x->seq, m->rank_a = x->rank, m->rank_b = y->rank;
  m->nodd = nodd;
  snprintf(m->what, sizeof m->what, "%s", what);
}

/* Same count, datatype (interned: pointer equality) and, for rooted functions, root. */
static int same_args(const op_t *x, const op_t *y) {
  if (x->count != y->count || x->dtype != y->dtype) return 0;
  return !((is_func(x->func, "Broadcast") || is_func(x->func, "Reduce")) && x->root != y->root);
}

/* Mismatch of one instance ops[0..n) (sorted by rank): the reference is what most ranks passed
 * (Boyer-Moore majority vote, verified), else the lowest rank's; rank_a is the first rank that
 * differs from it, rank_b the first rank that agrees, nodd how many differ. */
static void check_mismatch(ncs_analysis_t *a, priv_t *P, const op_t *ops, size_t n) {
  size_t cand = 0, votes = 0, support = 0;
  for (size_t k = 0; k < n; k++) {
    if (!votes) cand = k, votes = 1;
    else if (same_args(&ops[k], &ops[cand])) votes++;
    else votes--;
  }
  for (size_t k = 0; k < n; k++) support += same_args(&ops[k], &ops[cand]);
  const op_t *ref = 2 * support > n ? &ops[cand] : &ops[0];
  const op_t *odd = NULL;
  int32_t nodd = 0;
  for (size_t k = 0; k < n; k++)
    if (!same_args(&ops[k], ref)) {
      if (!odd) odd = &ops[k];
      nodd++;
    }
  if (!odd) return;
  for (size_t k = 0; k < n; k++) /* the first rank that agrees with the reference */
    if (same_args(&ops[k], ref)) {
      ref = &ops[k];
      break;
    }
  char what[96];
  if (odd->count != ref->count || odd->dtype != ref->dtype)
    snprintf(what, sizeof what, "count/datatype %llu %s vs %llu %s",
             (unsigned long long)odd->count, odd->dtype, (unsigned long long)ref->count, ref->dtype);
  else
    snprintf(what, sizeof what, "root %lld vs %lld", (long long)odd->root, (long long)ref->root);
  add_mismatch(a, P, odd, ref, nodd, what);
}

/* Per (rank, collective bucket) arrival sums (ncs_an_cell_t, the heatmap of report --html), with
 * the instance's first and last arrival; at most NCS_AN_CELL_MAX cells. */
static void add_cell(ncs_analysis_t *a, priv_t *P, uint32_t bi, uint32_t ri, const op_t *o,
                     int64_t late, int64_t waited, int last) {
  uint64_t key = ((uint64_t)bi << 32) | ri, ci;
  if (!hm_get(&P->cm, key, &ci)) {
    if (a->ncells >= NCS_AN_CELL_MAX) {
      a->cells_dropped++;
      return;
    }
    a->cells = ncs_xrealloc(a->cells, (a->ncells + 1) * sizeof *a->cells);
    P->ckey = ncs_xrealloc(P->ckey, (a->ncells + 1) * sizeof *P->ckey);
    ci = a->ncells++;
    a->cells[ci] = (ncs_an_cell_t){.bucket = bi, .rank = ri};
    memset(&P->ckey[ci], 0, sizeof *P->ckey);
    if (hm_put(&P->cm, key, ci) != 0) abort();
  }
  ikey_min(&P->ckey[ci], op_key(o));
  ncs_an_cell_t *c = &a->cells[ci];
  c->n++, c->late += late, c->waited += waited;
  if (last) c->last++;
}

/* ------------------------------------------------------------------ throughput */
/* Throughput: instance k and k+1 are the same collective, consecutive seqNumbers and the same
 * size. For each rank with GPU times in both, the interval between its two kernel starts (one GPU
 * clock, no mapping) counts when the second kernel started within TPUT_GAP_NS of the first one's
 * end, i.e. they ran back to back. The instance's interval is the median over its ranks. This is
 * what a benchmark loop measures per iteration (launch gaps included), unlike the kernel
 * duration. The analysis keeps, per (comm, func), the ranks' kernel times of the finished
 * instance with the highest seq; an instance is paired with it when one follows the other. */
#define TPUT_GAP_NS 200000
static void tput_pair(ncs_analysis_t *a, priv_t *P, const stream_t *st, const tinst_t *x,
                      const op_t *yo, size_t yn, int y_first) {
  /* x is the kept instance; yo[0..yn) the new one (sorted by rank); y_first: y precedes x */
  ncs_xgrow(&P->tiv, &P->captiv, yn + x->ntk, sizeof *P->tiv);
  size_t n = 0, q = 0;
  for (size_t p = 0; p < x->ntk; p++) { /* the earlier one drives, as the sorted pass did */
    const struct tk_s *t = &x->tk[p];
    while (q < yn && yo[q].rank < t->rank) q++;
    if (q >= yn) break;
    const op_t *o = &yo[q];
    if (o->rank != t->rank || !t->gpu || !has_gpu(o)) continue;
    uint64_t s0 = y_first ? o->gpu_start : t->start, e0 = y_first ? o->gpu_stop : t->stop;
    uint64_t s1 = y_first ? t->start : o->gpu_start;
    if (s1 <= s0 || s1 > e0 + TPUT_GAP_NS) continue;
    P->tiv[n++] = (int64_t)(s1 - s0);
  }
  if (!n) return;
  ncs_sort(P->tiv, n, sizeof *P->tiv, ncs_cmp_i64);
  double t = (double)ncs_qi64(P->tiv, n, 0.5);
  int nr = a->comms[st->comm].nranks;
  const char *func = st->func;
  uint64_t bytes = x->bytes; /* the same as the other's */
  ncs_an_bucket_t *b = bucket(a, P, st->comm, func, log2b(bytes), 0);
  qs_add(&bx_of(a, P, b)->tbw, (double)bytes / t * ncs_bus_factor(func, nr));
  b->tput_n++;
}

static stream_t *stream_of(priv_t *P, uint32_t comm, const char *func) {
  uint64_t key = hm_mix2(comm, (uint64_t)(uintptr_t)func), idx;
  if (hm_get(&P->sm, key, &idx)) return &P->streams[idx];
  P->streams = ncs_xrealloc(P->streams, (P->nstreams + 1) * sizeof *P->streams);
  stream_t *s = &P->streams[P->nstreams];
  memset(s, 0, sizeof *s);
  s->comm = comm, s->func = func;
  hm_put(&P->sm, key, P->nstreams++);
  return s;
}

static void throughput(ncs_analysis_t *a, priv_t *P, const op_t *ops, size_t n, uint64_t bytes) {
  const op_t *I = &ops[0];
  stream_t *s = stream_of(P, I->comm, I->func);
  tinst_t *slot = NULL;
  for (int k = 0; k < TPUT_KEEP; k++) {
    tinst_t *x = &s->keep[k];
    if (!x->used) {
      if (!slot || slot->used) slot = x;
      continue;
    }
    if (x->bytes == bytes && x->seq + 1 == I->seq) tput_pair(a, P, s, x, ops, n, 0);
    if (x->bytes == bytes && I->seq + 1 == x->seq) tput_pair(a, P, s, x, ops, n, 1);
    if (!slot || (slot->used && x->seq < slot->seq)) slot = x; /* free, else the lowest seq */
  }
  if (slot->used && slot->seq > I->seq) return; /* older than all kept */
  slot->used = 1, slot->seq = I->seq, slot->bytes = bytes, slot->ntk = 0;
  ncs_xgrow(&slot->tk, &slot->captk, n, sizeof *slot->tk);
  for (size_t k = 0; k < n; k++)
    slot->tk[slot->ntk++] = (struct tk_s){ops[k].rank, has_gpu(&ops[k]), ops[k].gpu_start, ops[k].gpu_stop};
}

/* ------------------------------------------------------------------ one instance */
static void retain_instance(priv_t *P, const op_t *ops, size_t n, ncs_an_instance_t *x) {
  ncs_xgrow(&P->rops, &P->caprops, P->nrops + n, sizeof *P->rops);
  x->first_op = P->nrops;
  for (size_t k = 0; k < n; k++) {
    P->rops[P->nrops] = ops[k];
    P->rops[P->nrops++].inst = P->ninsts;
  }
  ncs_xgrow(&P->insts, &P->capinsts, P->ninsts + 1, sizeof *P->insts);
  P->insts[P->ninsts++] = *x;
}

/* the metrics of one collective instance: ops[0..n) sorted by rank */
/* GPU times that cannot be right. In an AllReduce, AllGather or ReduceScatter every rank's
 * output depends on every rank's input, which a rank sends only once its kernel runs: no rank's
 * kernel can end before every other rank's kernel started. When one does (by more than
 * NCS_AN_GPU_TOL_NS), either NCCL gave some rank's KernelCh the timestamps of another operation
 * (its per-channel ring of 64 work slots overrun, or its host and GPU work counters out of step;
 * research 3.5), or a rank's GPU clock is mapped wrong. The instance is counted and shown, and
 * kept in the aggregates: a wrong clock mapping would otherwise empty the report. The rank named
 * is the one whose launch delay (kernel start - call) is furthest from the median rank's.
 * Returns 1 and notes the instance then. */
static int gpu_suspect(ncs_analysis_t *a, priv_t *P, const op_t *ops, size_t n) {
  const char *f = ops[0].func;
  if (n < 2 || !(is_func(f, "AllReduce") || is_func(f, "AllGather") || is_func(f, "ReduceScatter")))
    return 0;
  int64_t m1 = INT64_MIN, m2 = INT64_MIN; /* the two latest kernel starts */
  for (size_t k = 0; k < n; k++) {
    int64_t ks = kstart(a, &ops[k]);
    if (!ks) return 0; /* a rank without GPU times: nothing to compare */
    if (ks > m1) m2 = m1, m1 = ks;
    else if (ks > m2) m2 = ks;
  }
  int64_t worst = INT64_MIN;
  for (size_t k = 0; k < n; k++) {
    int64_t ks = kstart(a, &ops[k]), others = ks == m1 ? m2 : m1;
    int64_t gap = others - (ks + (int64_t)(ops[k].gpu_stop - ops[k].gpu_start));
    if (gap > worst) worst = gap;
  }
  if (worst <= NCS_AN_GPU_TOL_NS) return 0;
  a->gpu_suspect++;
  if (a->ngsus >= sizeof a->gsus / sizeof a->gsus[0]) return 1;
  int64_t *l = P->arr; /* free here: analyse_instance fills it later */
  for (size_t k = 0; k < n; k++) l[k] = kstart(a, &ops[k]) - arrival(a, &ops[k]);
  int64_t *sorted = P->arr + n;
  memcpy(sorted, l, n * sizeof *l);
  ncs_sort(sorted, n, sizeof *sorted, ncs_cmp_i64);
  int64_t med = ncs_qi64(sorted, n, 0.5), far = -1;
  size_t wk = 0;
  for (size_t k = 0; k < n; k++) {
    int64_t d = l[k] > med ? l[k] - med : med - l[k];
    if (d > far) far = d, wk = k;
  }
  uint32_t i = a->ngsus++;
  a->gsus[i].comm = ops[0].comm, a->gsus[i].func = f, a->gsus[i].seq = ops[0].seq;
  a->gsus[i].rank = ops[wk].rank, a->gsus[i].gap = worst, a->gsus[i].launch = l[wk];
  return 1;
}

static void analyse_instance(ncs_analysis_t *a, priv_t *P, const op_t *ops, size_t n) {
  const op_t *I = &ops[0];
  ncs_an_comm_t *cm = &a->comms[I->comm];
  a->instances++, a->coll_ops += n;
  if ((int32_t)n < cm->nranks) a->incomplete++;
  for (size_t k = 1; k < n; k++)
    if (ops[k].rank == ops[k - 1].rank) a->unmatched_seq++;
  check_mismatch(a, P, ops, n);
  if (2 * n > P->capd) { /* arr: 2n for gpu_suspect */
    P->capd = 2 * n;
    P->durs = ncs_xrealloc(P->durs, P->capd * sizeof *P->durs);
    P->arr = ncs_xrealloc(P->arr, P->capd * sizeof *P->arr);
  }
  int64_t *durs = P->durs, *arr = P->arr;
  int suspect = gpu_suspect(a, P, ops, n);
  /* arrivals */
  int64_t first = INT64_MAX, last = INT64_MIN, kmax = 0, dmax = -1, dmin = INT64_MAX;
  size_t lastk = 0, firstk = 0;
  int src = NCS_SRC_ENQUEUE_HOST;
  for (size_t k = 0; k < n; k++) {
    int64_t t = arrival(a, &ops[k]);
    if (t < first) first = t, firstk = k;
    if (t > last) last = t, lastk = k;
    int s;
    int64_t d = duration(&ops[k], &s);
    durs[k] = d;
    if (d > dmax) dmax = d, src = s;
    if (d > 0 && d < dmin) dmin = d;
    int64_t ks = kstart(a, &ops[k]);
    if (ks > kmax) kmax = ks;
  }
  memcpy(arr, durs, n * sizeof *durs);
  ncs_sort(arr, n, sizeof *arr, ncs_cmp_i64);
  int64_t dmed = ncs_qi64(arr, n, 0.5);
  int64_t skew = last - first;
  int64_t inst_caused = 0, inst_excess = 0;
  int32_t inst_slowest = -1;
  uint64_t bytes = op_bytes(I, cm->nranks);
  ncs_an_bucket_t *b = bucket(a, P, I->comm, I->func, log2b(bytes), 0);
  uint32_t bi = (uint32_t)(b - a->buckets);
  ikey_min(&P->bx[bi].first, op_key(I));
  for (size_t k = 0; k < n; k++) {
    const op_t *o = &ops[k];
    ncs_an_rank_t *r = rank_of(a, P, o);
    int64_t t = arrival(a, o);
    r->instances++;
    r->wait_suffered += last - t;
    int64_t d = durs[k];
    int64_t ks = kstart(a, o), w = 0;
    if (ks && kmax) w = kmax - ks;
    else w = last - t;
    if (w > d) w = d;
    if (w < 0) w = 0;
    r->kwait += w, r->transfer += d - w;
    if (ks) {
      r->launch_sum += ks - job_time(a, o, o->api_ts ? o->api_ts : o->coll_ts);
      r->launch_n++;
    }
    int is_last = n > 1 && k == lastk && skew > 0;
    if (is_last) {
      r->last++;
      int64_t caused = 0;
      for (size_t q = 0; q < n; q++) caused += last - arrival(a, &ops[q]);
      r->wait_caused += caused;
      inst_caused = caused;
      add_evidence(r, o, skew);
    }
    if (n > 2 && d == dmax && d > dmed + dmed / 20) {
      r->slowest++, r->excess += d - dmed;
      if (inst_slowest < 0) inst_slowest = o->rank, inst_excess = d - dmed;
    }
    add_cell(a, P, bi, (uint32_t)(r - a->ranks), o, t - first, last - t, is_last);
  }
  /* Latency is what the slowest rank took, waiting for late peers included. Bandwidth is
   * over the transfer time: the shortest rank duration, since the rank whose kernel started
   * last waits for no one (its whole duration is the data exchange). Waiting shows up as skew
   * and wait, not as lower bandwidth; back-to-back this is what nccl-tests' busbw measures. */
  double lat = (double)dmax, xfer = dmin < INT64_MAX ? (double)dmin : lat;
  double abw = xfer > 0 ? (double)bytes / xfer : 0; /* bytes/ns = GB/s */
  /* an unsampled group (NCCLSCOPE_UNSAMPLED_EVENTS) left some rank without GPU times: its duration is only the enqueue,
   * so the instance counts for arrivals and skew but not for latency and bandwidth */
  int unsampled = 0;
  for (size_t k = 0; k < n; k++) unsampled |= ops[k].unsampled && !has_gpu(&ops[k]);
  if (unsampled)
    a->unsampled++;
  else
    bucket_add(a, P, b, bytes, lat, abw * ncs_bus_factor(I->func, cm->nranks), abw, (double)skew, src);
  throughput(a, P, ops, n, bytes);
  if (P->retain) {
    ncs_an_instance_t x = {
        .comm = I->comm, .func = I->func, .seq = I->seq, .bytes = bytes, .log2 = log2b(bytes),
        .nops = (uint32_t)n, .latency = dmax, .timing = src,
        .median_duration = dmed, .algbw = abw, .busbw = abw * ncs_bus_factor(I->func, cm->nranks),
        .first_arrival = first, .last_arrival = last, .skew = skew,
        .first_rank = ops[firstk].rank, .last_rank = ops[lastk].rank,
        .last_counted = n > 1 && skew > 0, .wait_caused = inst_caused,
        .slowest_rank = inst_slowest, .slowest_excess = inst_excess, .unsampled = unsampled,
        .gpu_suspect = suspect};
    retain_instance(P, ops, n, &x);
  }
}

/* Host offsets: per instance with ranks on several hosts, the earliest completion end (realtime)
 * seen on each host minus that of the reference host (host 0). A collective ends at nearly the
 * same moment on every rank, and a rank can only see that end late (its proxy polls), never
 * early: the earliest end of a host is its best estimate. The offset is the median of those
 * differences; the error is their median absolute deviation plus the median spread of the end
 * times within one host (host 0 or h, whichever is larger): a rank that always sees the end late
 * shifts the differences alike, and that spread is what shows it. Each host keeps at most
 * NCS_AN_HOST_SAMPLES (d, spread) pairs: every one up to there, then a uniform reservoir sample
 * (docs/report.md, "Memory"). */
static void host_sample(priv_t *P, uint32_t h, int64_t d, int64_t sp) {
  uint64_t k = P->hn[h]++;
  if (k >= NCS_AN_HOST_SAMPLES) {
    P->rng = P->rng * 6364136223846793005ull + 1442695040888963407ull;
    k = (P->rng >> 11) % (k + 1);
    if (k >= NCS_AN_HOST_SAMPLES) return;
  }
  P->hd[h * NCS_AN_HOST_SAMPLES + k] = d, P->hsp[h * NCS_AN_HOST_SAMPLES + k] = sp;
}

static void host_instance(ncs_analysis_t *a, priv_t *P, const op_t *ops, size_t n) {
  int64_t *lo = P->lo, *hi = P->hi;
  for (uint32_t h = 0; h < a->nhosts; h++) lo[h] = INT64_MAX, hi[h] = INT64_MIN;
  for (size_t k = 0; k < n; k++) {
    const op_t *o = &ops[k];
    /* a forced completion (expiry) or one without children has no real end time */
    if (!o->complete || !o->end_ns || (o->cflags & (NCS_CF_FORCED | NCS_CF_NO_CHILDREN))) continue;
    uint32_t h = a->procs[o->proc].host_index;
    int64_t rt = (int64_t)o->end_ns + a->procs[o->proc].clk_off;
    if (rt < lo[h]) lo[h] = rt;
    if (rt > hi[h]) hi[h] = rt;
  }
  if (lo[0] != INT64_MAX)
    for (uint32_t h = 1; h < a->nhosts; h++)
      if (lo[h] != INT64_MAX) {
        int64_t s0 = hi[0] - lo[0], sh = hi[h] - lo[h];
        host_sample(P, h, lo[h] - lo[0], s0 > sh ? s0 : sh);
      }
}

static void host_offsets(ncs_analysis_t *a, priv_t *P) {
  for (uint32_t h = 1; h < a->nhosts; h++) {
    size_t n = P->hn[h] < NCS_AN_HOST_SAMPLES ? (size_t)P->hn[h] : NCS_AN_HOST_SAMPLES;
    if (!n) continue;
    int64_t *d = &P->hd[h * NCS_AN_HOST_SAMPLES], *sp = &P->hsp[h * NCS_AN_HOST_SAMPLES];
    ncs_sort(d, n, sizeof *d, ncs_cmp_i64);
    int64_t med = ncs_qi64(d, n, 0.5);
    /* the deviations go to a new array: rewriting d in place and taking its median again was
     * compiled (gcc 12 -O3) into a reuse of the first median */
    int64_t *dev = ncs_xrealloc(NULL, n * sizeof *dev);
    for (size_t k = 0; k < n; k++) {
      int64_t x = d[k] - med;
      dev[k] = x < 0 ? -x : x;
    }
    ncs_sort(dev, n, sizeof *dev, ncs_cmp_i64);
    ncs_sort(sp, n, sizeof *sp, ncs_cmp_i64);
    a->hosts[h].offset = med;
    a->hosts[h].error = ncs_qi64(dev, n, 0.5) + ncs_qi64(sp, n, 0.5);
    a->hosts[h].samples = P->hn[h];
    free(dev);
  }
}

/* t lies more than NCS_AN_HORIZON_NS (or lim) before now; no overflow on the first times */
static int older(int64_t now, int64_t t, int64_t lim) {
  return now > t && (uint64_t)now - (uint64_t)t > (uint64_t)lim;
}

/* ------------------------------------------------------------------ open instances */
static int cmp_rank(const void *x, const void *y) {
  const op_t *a = x, *b = y;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  if (a->seg != b->seg) return a->seg < b->seg ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static uint64_t inst_hash(uint32_t comm, const char *func, uint64_t seq) {
  return hm_mix(hm_mix(seq) ^ ((uint64_t)comm << 32) ^ (uint64_t)(uintptr_t)func);
}
typedef struct {
  uint32_t comm;
  const char *func;
  uint64_t seq;
} ikeyx_t;
static int inst_match(const priv_t *P, uint64_t idx, const void *key) {
  const ikeyx_t *k = key;
  const inst_t *x = &P->inst[idx];
  return x->comm == k->comm && x->func == k->func && x->seq == k->seq;
}

static void close_instance(ncs_analysis_t *a, priv_t *P, size_t i, int evicted) {
  inst_t *x = &P->inst[i];
  ikeyx_t k = {x->comm, x->func, x->seq};
  uint64_t at;
  if (vfind(P, &P->im, inst_hash(x->comm, x->func, x->seq), inst_match, &k, NULL, &at))
    hm_del(&P->im, at);
  ncs_sort(x->ops, x->n, sizeof *x->ops, cmp_rank);
  if (evicted && (int32_t)x->n < a->comms[x->comm].nranks) a->evicted++;
  if (P->hostpass)
    host_instance(a, P, x->ops, x->n);
  else
    analyse_instance(a, P, x->ops, x->n);
  P->held -= x->n;
  P->comm_open[x->comm]--;
  P->nopen--;
  x->used = 0, x->n = 0;
  ncs_xgrow(&P->inst_free, &P->capinst_free, P->ninst_free + 1, sizeof *P->inst_free);
  P->inst_free[P->ninst_free++] = (uint32_t)i;
}

/* the open instance of the comm with the oldest last record */
static void evict_oldest(ncs_analysis_t *a, priv_t *P, uint32_t comm) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < P->ninst; i++)
    if (P->inst[i].used && P->inst[i].comm == comm &&
        (best == SIZE_MAX || P->inst[i].joined < P->inst[best].joined))
      best = i;
  if (best != SIZE_MAX) close_instance(a, P, best, 1);
}

static void peak(ncs_analysis_t *a, const priv_t *P) {
  if (P->nopen > a->peak_open_instances) a->peak_open_instances = P->nopen;
  if (P->held > a->peak_held_ops) a->peak_held_ops = P->held;
}

static void add_coll(ncs_analysis_t *a, priv_t *P, const op_t *o) {
  ikeyx_t k = {o->comm, o->func, o->seq};
  uint64_t h = inst_hash(o->comm, o->func, o->seq), idx, at;
  int32_t nr = a->comms[o->comm].nranks;
  if (!vfind(P, &P->im, h, inst_match, &k, &idx, NULL)) {
    if (P->ninst_free) {
      idx = P->inst_free[--P->ninst_free];
    } else {
      ncs_xgrow(&P->inst, &P->capinst, P->ninst + 1, sizeof *P->inst);
      idx = P->ninst++;
      memset(&P->inst[idx], 0, sizeof *P->inst);
    }
    inst_t *x = &P->inst[idx];
    x->comm = o->comm, x->func = o->func, x->seq = o->seq, x->used = 1, x->n = 0, x->distinct = 0;
    uint32_t words = nr > 0 ? (uint32_t)((nr + 63) / 64) : 0;
    if (words > x->nseen_words) {
      x->seen = ncs_xrealloc(x->seen, words * sizeof *x->seen);
      x->nseen_words = words;
    }
    if (words) memset(x->seen, 0, words * sizeof *x->seen);
    (void)vput(&P->im, h, idx, &at); /* on failure: an instance of its own, closed by the sweep */
    if (o->comm >= P->ncomm_open) {
      size_t c = P->ncomm_open;
      ncs_xgrow(&P->comm_open, &P->ncomm_open, o->comm + 1, sizeof *P->comm_open);
      memset(P->comm_open + c, 0, (P->ncomm_open - c) * sizeof *P->comm_open);
    }
    P->nopen++, P->comm_open[o->comm]++;
  }
  inst_t *x = &P->inst[idx];
  size_t cap = x->cap;
  ncs_xgrow(&x->ops, &cap, x->n + 1, sizeof *x->ops);
  x->cap = (uint32_t)cap;
  x->ops[x->n++] = *o;
  x->joined = P->now;
  P->held++;
  peak(a, P);
  if (o->rank >= 0 && o->rank < nr && !(x->seen[o->rank / 64] >> (o->rank % 64) & 1)) {
    x->seen[o->rank / 64] |= 1ull << (o->rank % 64);
    x->distinct++;
  }
  if ((int32_t)x->distinct >= nr)
    close_instance(a, P, (size_t)idx, 0);
  else if (P->comm_open[o->comm] > NCS_AN_OPEN_MAX)
    evict_oldest(a, P, o->comm);
}

/* ------------------------------------------------------------------ point-to-point */
static uint64_t p2p_hash(uint32_t comm, int32_t s, int32_t d, uint64_t order) {
  return hm_mix(hm_mix(order) ^ ((uint64_t)comm << 40) ^ ((uint64_t)(uint32_t)s << 20) ^ (uint32_t)d);
}
typedef struct {
  uint32_t comm;
  int32_t s, d;
  uint64_t order;
  int want_send;
} pkey_t;
static int p2p_match(const priv_t *P, uint64_t idx, const void *key) {
  const pkey_t *k = key;
  const pwait_t *w = &P->pw[idx];
  return w->used && w->comm == k->comm && w->src == k->s && w->dst == k->d && w->order == k->order &&
         w->is_send == k->want_send;
}

/* (comm, sender, receiver, order, send first): does k come before the bucket's first op? */
static int p2p_before(const pkey_t *k, int is_send, const bx_t *x) {
  if (k->comm != x->pcomm) return k->comm < x->pcomm;
  if (k->s != x->psrc) return k->s < x->psrc;
  if (k->d != x->pdst) return k->d < x->pdst;
  if (k->order != x->porder) return k->order < x->porder;
  return is_send && !x->psend;
}

static void p2p_drop(priv_t *P, size_t i, uint64_t at) {
  hm_del(&P->pm, at);
  P->pw[i].used = 0, P->npw_used--, P->held--;
  ncs_xgrow(&P->pw_free, &P->cappw_free, P->npw_free + 1, sizeof *P->pw_free);
  P->pw_free[P->npw_free++] = (uint32_t)i;
}

/* one Send/Recv of one rank: its bucket sample, then paired with the k-th of the other side */
static void add_p2p(ncs_analysis_t *a, priv_t *P, const op_t *o) {
  if (o->is_send)
    a->sends++;
  else
    a->recvs++;
  int s;
  int64_t d = duration(o, &s);
  uint64_t bytes = op_bytes(o, 1);
  double abw = d > 0 ? (double)bytes / (double)d : 0;
  ncs_an_bucket_t *b = bucket(a, P, o->comm, o->func, log2b(bytes), 1);
  bucket_add(a, P, b, bytes, (double)d, abw, abw, 0, s);
  pkey_t k = {o->comm, o->is_send ? o->rank : o->peer, o->is_send ? o->peer : o->rank, o->order,
              !o->is_send};
  bx_t *x = bx_of(a, P, b);
  if (!x->p2p_first || p2p_before(&k, o->is_send, x))
    x->p2p_first = 1, x->pcomm = k.comm, x->psrc = k.s, x->pdst = k.d, x->porder = k.order,
    x->psend = o->is_send;
  size_t ret = SIZE_MAX;
  if (P->retain) {
    ncs_xgrow(&P->rp2p, &P->caprp2p, P->nrp2p + 1, sizeof *P->rp2p);
    ret = P->nrp2p;
    P->rp2p[P->nrp2p++] = *o;
  }
  uint64_t h = p2p_hash(k.comm, k.s, k.d, k.order), idx, at;
  if (vfind(P, &P->pm, h, p2p_match, &k, &idx, &at)) {
    const pwait_t *w = &P->pw[idx];
    a->p2p_pairs++;
    if (w->bytes != bytes) a->p2p_bytes_mismatch++;
    if (P->retain) P->rp2p[ret].pair = w->ret + 1, P->rp2p[w->ret].pair = ret + 1;
    p2p_drop(P, (size_t)idx, at);
    return;
  }
  if (P->npw_free) {
    idx = P->pw_free[--P->npw_free];
  } else {
    ncs_xgrow(&P->pw, &P->cappw, P->npw + 1, sizeof *P->pw);
    idx = P->npw++;
  }
  if (vput(&P->pm, h, idx, &at) != 0) { /* VPROBE collisions: stays unpaired */
    ncs_xgrow(&P->pw_free, &P->cappw_free, P->npw_free + 1, sizeof *P->pw_free);
    P->pw_free[P->npw_free++] = (uint32_t)idx;
    return;
  }
  P->pw[idx] = (pwait_t){.comm = k.comm, .src = k.s, .dst = k.d, .order = k.order, .bytes = bytes,
                         .is_send = o->is_send, .used = 1, .joined = P->now, .ret = ret};
  P->npw_used++, P->held++;
  peak(a, P);
}

/* Close what the horizon passed: instances not joined and sends/recvs waiting for
 * NCS_AN_HORIZON_NS of merged time. */
static void sweep(ncs_analysis_t *a, priv_t *P) {
  P->last_sweep = P->now;
  for (size_t i = 0; i < P->ninst; i++)
    if (P->inst[i].used && older(P->now, P->inst[i].joined, NCS_AN_HORIZON_NS))
      close_instance(a, P, i, 1);
  for (size_t i = 0; i < P->npw; i++) {
    pwait_t *w = &P->pw[i];
    if (!w->used || !older(P->now, w->joined, NCS_AN_HORIZON_NS)) continue;
    pkey_t k = {w->comm, w->src, w->dst, w->order, w->is_send};
    uint64_t at;
    if (vfind(P, &P->pm, p2p_hash(w->comm, w->src, w->dst, w->order), p2p_match, &k, NULL, &at)) {
      a->p2p_evicted++;
      p2p_drop(P, i, at);
    }
  }
}

/* ------------------------------------------------------------------ merged reading */
struct api_s {
  uint64_t id, ts, count;
  int64_t root;
  const char *dtype;
};

typedef struct { /* one file in a merged pass */
  ncs_reader_t *r;
  uint32_t proc, seg;
  int64_t off, key; /* realtime - monotonic; the latest event time seen, mapped */
  uint64_t tmax;    /* the latest event time seen (monotonic) */
  hmap_t api;       /* CollApi/P2pApi id -> sequence number in the FIFO apis */
  struct api_s *apis;
  size_t capapis, head, tail; /* FIFO: head .. tail - 1, index % capapis */
  hmap_t ops;                 /* Coll/P2p id -> index into held + 1 */
  op_t *held;
  uint64_t *settle; /* per held: 0 not completed, else the file time it is final at */
  size_t nheld, capheld;
  uint32_t *free_;
  size_t nfree, capfree;
  uint32_t *fifo; /* completed held ops in settle order (ring) */
  size_t capfifo, fhead, ftail;
  hmap_t order; /* sends/recvs per (comm, peer, kind, rank) so far */
  uint32_t comm_map[4096]; /* comm index -> analysis comm + 1 */
  int32_t comm_rank[4096];
} src_t;

/* an operation leaves its file: to its instance or its pair */
static void release(ncs_analysis_t *a, priv_t *P, src_t *S, uint32_t hi) {
  op_t o = S->held[hi];
  hm_del(&S->ops, o.id);
  S->settle[hi] = 0;
  ncs_xgrow(&S->free_, &S->capfree, S->nfree + 1, sizeof *S->free_);
  S->free_[S->nfree++] = hi;
  P->held--, P->pending--;
  if (o.p2p)
    add_p2p(a, P, &o);
  else
    add_coll(a, P, &o);
}

/* every held op of the file (the end of a segment or of the file), in START (id) order, so that
 * instances finish about in seq order (throughput pairs them with their neighbours) */
static void release_all(ncs_analysis_t *a, priv_t *P, src_t *S) {
  size_t n = 0;
  uint64_t *idx = ncs_xrealloc(NULL, (S->ops.n + 1) * 2 * sizeof *idx); /* (id, held index) */
  for (size_t i = 0; i < S->ops.cap; i++)
    if (S->ops.used[i]) idx[2 * n] = S->ops.keys[i], idx[2 * n + 1] = S->ops.vals[i] - 1, n++;
  ncs_sort(idx, n, 2 * sizeof *idx, ncs_cmp_u64);
  for (size_t i = 0; i < n; i++) release(a, P, S, (uint32_t)idx[2 * i + 1]);
  free(idx);
  S->fhead = S->ftail = 0;
}

static void api_push(src_t *S, const struct api_s *x) {
  if (S->tail - S->head == S->capapis) { /* full: double, keeping the order */
    size_t c = S->capapis ? 2 * S->capapis : 64;
    struct api_s *n = ncs_xrealloc(NULL, c * sizeof *n);
    for (size_t i = S->head; i < S->tail; i++) n[i - S->head] = S->apis[i % S->capapis];
    free(S->apis);
    S->apis = n, S->tail -= S->head, S->head = 0, S->capapis = c;
  }
  S->apis[S->tail % S->capapis] = *x;
  hm_put(&S->api, x->id, S->tail++);
  /* drop the ones older than the horizon: a Coll finds its parent soon after it */
  while (S->head < S->tail &&
         S->apis[S->head % S->capapis].ts + (uint64_t)NCS_AN_HORIZON_NS < S->tmax) {
    uint64_t q;
    const struct api_s *h = &S->apis[S->head % S->capapis];
    if (hm_get(&S->api, h->id, &q) && q == S->head) hm_del(&S->api, h->id);
    S->head++;
  }
}

static void fifo_push(src_t *S, uint32_t hi) {
  if (S->ftail - S->fhead == S->capfifo) {
    size_t c = S->capfifo ? 2 * S->capfifo : 64;
    uint32_t *n = ncs_xrealloc(NULL, c * sizeof *n);
    for (size_t i = S->fhead; i < S->ftail; i++) n[i - S->fhead] = S->fifo[i % S->capfifo];
    free(S->fifo);
    S->fifo = n, S->ftail -= S->fhead, S->fhead = 0, S->capfifo = c;
  }
  S->fifo[S->ftail++ % S->capfifo] = hi;
}

static void start_op(ncs_analysis_t *a, priv_t *P, src_t *S, const ncs_event_t *e) {
  uint32_t hi;
  if (S->nfree) {
    hi = S->free_[--S->nfree];
  } else {
    ncs_xgrow(&S->held, &S->capheld, S->nheld + 1, sizeof *S->held);
    S->settle = ncs_xrealloc(S->settle, S->capheld * sizeof *S->settle);
    hi = (uint32_t)S->nheld++;
  }
  op_t *o = &S->held[hi];
  memset(o, 0, sizeof *o);
  S->settle[hi] = 0;
  o->comm = S->comm_map[e->ctx] - 1, o->proc = S->proc, o->rank = S->comm_rank[e->ctx];
  o->coll_ts = e->ts;
  o->unsampled = (e->flags & NCS_SF_UNSAMPLED) != 0;
  o->seg = S->seg, o->id = e->id;
  if (e->type == NCS_T_COLL) {
    o->seq = e->f[NCS_F(Coll, seqNumber)], o->func = intern(P, e->fstr[NCS_F(Coll, func)]);
    o->count = e->f[NCS_F(Coll, count)], o->root = (int64_t)e->f[NCS_F(Coll, root)];
    o->dtype = intern(P, e->fstr[NCS_F(Coll, datatype)]);
  } else {
    o->p2p = 1, o->func = intern(P, e->fstr[NCS_F(P2p, func)]);
    o->dtype = intern(P, e->fstr[NCS_F(P2p, datatype)]);
    o->count = e->f[NCS_F(P2p, count)], o->peer = (int32_t)(int64_t)e->f[NCS_F(P2p, peer)];
  }
  if (o->p2p) {
    o->is_send = is_func(o->func, "Send");
    uint64_t key = hm_mix(((uint64_t)o->comm << 40) ^ ((uint64_t)(uint32_t)o->peer << 1) ^
                          o->is_send ^ ((uint64_t)(uint32_t)o->rank << 20));
    int created;
    uint64_t *cnt = hm_ref(&S->order, key, 0, &created);
    o->order = cnt ? (*cnt)++ : 0;
  }
  uint64_t q;
  if (e->parent_kind == NCS_REF_LOCAL && hm_get(&S->api, e->parent, &q)) {
    const struct api_s *x = &S->apis[q % S->capapis];
    o->api_ts = x->ts, o->count = x->count, o->dtype = x->dtype;
    if (!o->p2p) o->root = x->root;
  }
  uint64_t old;
  if (hm_get(&S->ops, e->id, &old)) release(a, P, S, (uint32_t)(old - 1)); /* id reused */
  hm_put(&S->ops, e->id, hi + 1);
  P->held++, P->pending++;
  peak(a, P);
}

static void handle_event(ncs_analysis_t *a, priv_t *P, src_t *S, const ncs_event_t *e) {
  int parent = e->type == NCS_T_COLL || e->type == NCS_T_P2P;
  uint64_t oi;
  if (e->kind == NCS_REC_START) {
    if (e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API) {
      if (P->hostpass) return;
      int c = e->type == NCS_T_COLL_API;
      struct api_s x = {.id = e->id, .ts = e->ts,
                        .count = e->f[c ? NCS_F(CollApi, count) : NCS_F(P2pApi, count)],
                        .dtype = intern(P, e->fstr[c ? NCS_F(CollApi, datatype) : NCS_F(P2pApi, datatype)]),
                        .root = c ? (int64_t)e->f[NCS_F(CollApi, root)] : 0};
      api_push(S, &x);
    } else if (parent && e->ctx_kind == NCS_CTX_LOCAL && e->ctx < 4096 && S->comm_map[e->ctx] &&
               !(P->hostpass && e->type == NCS_T_P2P)) {
      start_op(a, P, S, e);
    }
  } else if (parent && e->kind == NCS_REC_STOP) {
    if (hm_get(&S->ops, e->id, &oi)) S->held[oi - 1].stop_ts = e->ts;
  } else if (parent && (e->kind == NCS_REC_COMPLETE || e->kind == NCS_REC_EXPIRED)) {
    if (!hm_get(&S->ops, e->id, &oi)) return;
    uint32_t hi = (uint32_t)(oi - 1);
    if (e->kind == NCS_REC_COMPLETE) {
      op_t *o = &S->held[hi];
      o->complete = 1, o->cflags = e->cflags, o->end_ns = e->end_ns;
      o->first_child = e->first_child_ns, o->gpu_start = e->gpu_start, o->gpu_stop = e->gpu_stop;
    }
    if (!S->settle[hi]) { /* a revision within the settle time replaces it in place */
      S->settle[hi] = S->tmax + NCS_AN_SETTLE_NS + 1;
      fifo_push(S, hi);
    }
  }
}

static void handle_item(ncs_analysis_t *a, priv_t *P, src_t *S, const ncs_item_t *it) {
  switch (it->what) {
  case NCS_ITEM_SEGMENT:
    release_all(a, P, S);
    hm_clear(&S->api), S->head = S->tail = 0;
    S->seg = ncs_reader_segment(S->r) ? ncs_reader_segment(S->r)->index : 0;
    memset(S->comm_map, 0, sizeof S->comm_map);
    break;
  case NCS_ITEM_COMM:
    if (it->comm.index < 4096) {
      S->comm_map[it->comm.index] = find_comm(a, &it->comm) + 1;
      S->comm_rank[it->comm.index] = it->comm.rank;
    }
    break;
  case NCS_ITEM_EVENT:
    if (it->ev.ts > S->tmax && it->ev.kind != NCS_REC_COMPLETE && it->ev.kind != NCS_REC_EXPIRED) {
      S->tmax = it->ev.ts;
      S->key = (int64_t)S->tmax + S->off;
    }
    handle_event(a, P, S, &it->ev);
    while (S->fhead < S->ftail) { /* settled completions */
      uint32_t hi = S->fifo[S->fhead % S->capfifo];
      if (S->settle[hi] > S->tmax) break;
      S->fhead++;
      release(a, P, S, hi);
    }
    break;
  default: break;
  }
}

static void src_free(src_t *S) {
  if (S->r) ncs_reader_close(S->r);
  hm_free(&S->api), hm_free(&S->ops), hm_free(&S->order);
  free(S->apis), free(S->held), free(S->settle), free(S->free_), free(S->fifo);
}

/* min-heap of files by key */
static void heap_down(src_t **h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && h[l]->key < h[m]->key) m = l;
    if (l + 1 < n && h[l + 1]->key < h[m]->key) m = l + 1;
    if (m == i) return;
    src_t *t = h[i];
    h[i] = h[m], h[m] = t, i = m;
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* one merged pass over all files: host samples (hostpass) or the analysis */
static void merged_pass(ncs_analysis_t *a, priv_t *P, char **paths) {
  src_t *S = calloc(a->nprocs, sizeof *S);
  src_t **h = calloc(a->nprocs, sizeof *h);
  if (!S || !h) abort();
  size_t nh = 0;
  P->now = INT64_MIN, P->last_sweep = INT64_MIN;
  for (uint32_t i = 0; i < a->nprocs; i++) {
    char err[256];
    S[i].proc = i, S[i].off = a->procs[i].clk_off, S[i].key = INT64_MIN;
    if ((S[i].r = ncs_reader_open(paths[i], err, sizeof err))) h[nh++] = &S[i];
  }
  ncs_item_t it;
  while (nh) {
    src_t *s = h[0];
    if (ncs_reader_next(s->r, &it) != 1) {
      release_all(a, P, s);
      ncs_reader_close(s->r), s->r = NULL;
      h[0] = h[--nh];
    } else {
      handle_item(a, P, s, &it);
    }
    heap_down(h, nh, 0);
    if (nh && h[0]->key > P->now) {
      P->now = h[0]->key;
      if (P->last_sweep == INT64_MIN) P->last_sweep = P->now;
      if (older(P->now, P->last_sweep, NCS_AN_HORIZON_NS / 8)) sweep(a, P);
    }
  }
  for (size_t i = 0; i < P->ninst; i++) /* the end: what is still open is incomplete */
    if (P->inst[i].used) close_instance(a, P, i, 0);
  for (uint32_t i = 0; i < a->nprocs; i++) src_free(&S[i]);
  free(S), free(h);
  P->held -= P->npw_used; /* unpaired: counted as such */
}

/* ------------------------------------------------------------------ the end */
static const ncs_analysis_t *g_sort_a; /* qsort context: the analysis being finished */
static const priv_t *g_sort_p;

static int cmp_bucket_idx(const void *x, const void *y) {
  uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
  const bx_t *a = &g_sort_p->bx[i], *b = &g_sort_p->bx[j];
  int pa = g_sort_a->buckets[i].p2p, pb = g_sort_a->buckets[j].p2p;
  if (pa != pb) return pa - pb; /* collectives first */
  if (!pa) {
    int c = ikey_cmp(&a->first, &b->first);
    return c ? c : (i > j) - (i < j);
  }
  if (a->pcomm != b->pcomm) return a->pcomm < b->pcomm ? -1 : 1;
  if (a->psrc != b->psrc) return a->psrc < b->psrc ? -1 : 1;
  if (a->pdst != b->pdst) return a->pdst < b->pdst ? -1 : 1;
  if (a->porder != b->porder) return a->porder < b->porder ? -1 : 1;
  if (a->psend != b->psend) return b->psend - a->psend;
  return (i > j) - (i < j);
}
static int cmp_rank_idx(const void *x, const void *y) {
  uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
  int c = ikey_cmp(&g_sort_p->rkey[i], &g_sort_p->rkey[j]);
  return c ? c : (i > j) - (i < j);
}
static int cmp_cell_idx(const void *x, const void *y) {
  uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
  int c = ikey_cmp(&g_sort_p->ckey[i], &g_sort_p->ckey[j]);
  return c ? c : (i > j) - (i < j);
}
static int cmp_mism_idx(const void *x, const void *y) {
  uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
  return ikey_cmp(&g_sort_p->mkey[i], &g_sort_p->mkey[j]);
}

/* the order of n elements of size sz at *base (and of their private keys) by cmp over indices;
 * returns new index of each old one (caller frees) */
static uint32_t *reorder(void *base, void *pbase, size_t n, size_t sz, size_t psz,
                         int (*cmp)(const void *, const void *)) {
  uint32_t *perm = ncs_xrealloc(NULL, (n + 1) * sizeof *perm), *inv = ncs_xrealloc(NULL, (n + 1) * sizeof *inv);
  for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
  ncs_sort(perm, n, sizeof *perm, cmp);
  char *t = ncs_xrealloc(NULL, n * sz + 1), *pt = ncs_xrealloc(NULL, n * psz + 1);
  for (size_t i = 0; i < n; i++) {
    memcpy(t + i * sz, (char *)base + perm[i] * sz, sz);
    if (pbase) memcpy(pt + i * psz, (char *)pbase + perm[i] * psz, psz);
    inv[perm[i]] = (uint32_t)i;
  }
  if (n) memcpy(base, t, n * sz);
  if (pbase && n) memcpy(pbase, pt, n * psz);
  free(t), free(pt), free(perm);
  return inv;
}

static int cmp_coll_inst(const void *x, const void *y) {
  const ncs_an_instance_t *a = x, *b = y;
  ikey_t ka = {a->comm, a->func, a->seq, 0, 1}, kb = {b->comm, b->func, b->seq, 0, 1};
  int c = ikey_cmp(&ka, &kb);
  return c ? c : (a->first_op > b->first_op) - (a->first_op < b->first_op);
}
/* sends by (comm, rank, peer, order); recvs by (comm, peer, rank, order): the same key order */
static int cmp_p2p(const void *x, const void *y) {
  const op_t *a = x, *b = y;
  int32_t as = a->is_send ? a->rank : a->peer, ad = a->is_send ? a->peer : a->rank;
  int32_t bs = b->is_send ? b->rank : b->peer, bd = b->is_send ? b->peer : b->rank;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (as != bs) return as < bs ? -1 : 1;
  if (ad != bd) return ad < bd ? -1 : 1;
  if (a->order != b->order) return a->order < b->order ? -1 : 1;
  if (a->is_send != b->is_send) return (int)b->is_send - (int)a->is_send; /* send first */
  return (a->inst > b->inst) - (a->inst < b->inst); /* inst: the retained index here */
}

/* retained records in the documented order (analyze.h): instances by (comm, func, seq), their
 * operations by rank; then sends and receives by (comm, sender, receiver, order) */
static void layout_retained(priv_t *P) {
  ncs_sort(P->insts, P->ninsts, sizeof *P->insts, cmp_coll_inst);
  P->n = P->nrops + P->nrp2p;
  P->ops = ncs_xrealloc(NULL, (P->n + 1) * sizeof *P->ops);
  size_t k = 0;
  for (size_t i = 0; i < P->ninsts; i++) {
    ncs_an_instance_t *x = &P->insts[i];
    for (uint32_t j = 0; j < x->nops; j++) {
      P->ops[k + j] = P->rops[x->first_op + j];
      P->ops[k + j].inst = i;
    }
    x->first_op = k, k += x->nops;
  }
  op_t *p2 = P->ops + k;
  for (size_t i = 0; i < P->nrp2p; i++) p2[i] = P->rp2p[i], p2[i].inst = i;
  ncs_sort(p2, P->nrp2p, sizeof *p2, cmp_p2p);
  size_t *at = ncs_xrealloc(NULL, (P->nrp2p + 1) * sizeof *at);
  for (size_t i = 0; i < P->nrp2p; i++) at[p2[i].inst] = k + i;
  for (size_t i = 0; i < P->nrp2p; i++) {
    p2[i].pair = p2[i].pair ? at[p2[i].pair - 1] + 1 : 0;
    p2[i].inst = 0;
  }
  free(at), free(P->rops), free(P->rp2p);
  P->rops = P->rp2p = NULL;
}

static void finish(ncs_analysis_t *a, priv_t *P) {
  g_sort_a = a, g_sort_p = P;
  /* buckets, ranks, cells and mismatch examples in the order of the sorted analysis */
  uint32_t *bnew = reorder(a->buckets, P->bx, a->nbuckets, sizeof *a->buckets, sizeof *P->bx, cmp_bucket_idx);
  uint32_t *rnew = reorder(a->ranks, P->rkey, a->nranks, sizeof *a->ranks, sizeof *P->rkey, cmp_rank_idx);
  for (uint32_t k = 0; k < a->ncells; k++)
    a->cells[k].bucket = bnew[a->cells[k].bucket], a->cells[k].rank = rnew[a->cells[k].rank];
  free(reorder(a->cells, P->ckey, a->ncells, sizeof *a->cells, sizeof *P->ckey, cmp_cell_idx));
  free(reorder(a->mism, P->mkey, a->nmism, sizeof *a->mism, sizeof *P->mkey, cmp_mism_idx));
  free(bnew), free(rnew);
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    ncs_an_bucket_t *b = &a->buckets[k];
    bx_t *x = &P->bx[k];
    qs_sort(&x->lat), qs_sort(&x->bw), qs_sort(&x->abw), qs_sort(&x->skew), qs_sort(&x->tbw);
    b->lat_p50 = qs_q(&x->lat, .5), b->lat_p95 = qs_q(&x->lat, .95), b->lat_p99 = qs_q(&x->lat, .99);
    b->lat_min = x->lat.total ? x->lat.min : 0, b->lat_max = x->lat.total ? x->lat.max : 0;
    b->lat_p25 = qs_q(&x->lat, .25), b->lat_p75 = qs_q(&x->lat, .75);
    /* bandwidth percentiles are of the slow side: p95 = the value 95% of instances beat */
    b->busbw_p50 = qs_q(&x->bw, .5), b->busbw_p95 = qs_q(&x->bw, .05);
    b->busbw_p99 = qs_q(&x->bw, .01), b->algbw_p50 = qs_q(&x->abw, .5);
    b->skew_p50 = qs_q(&x->skew, .5), b->skew_max = x->skew.total ? x->skew.max : 0;
    b->tput_busbw_p50 = qs_q(&x->tbw, .5);
    b->sketch = qs_sketched(&x->lat) || qs_sketched(&x->tbw);
  }
  /* ranks seen per communicator */
  for (uint32_t k = 0; k < a->nranks; k++) a->comms[a->ranks[k].comm].ranks_seen++;
  if (P->retain) layout_retained(P);
}

ncs_analysis_t *ncs_analyze_path_opts(const char *path, const ncs_analyze_opts_t *opts, char *err,
                                      size_t errlen) {
  char **paths = NULL;
  size_t n = 0;
  if (ncs_list_traces(path, &paths, &n, err, errlen) != 0) return NULL;
  if (!n) {
    snprintf(err, errlen, "no trace files (*.nstrace) in '%s'", path);
    ncs_free_paths(paths, n);
    return NULL;
  }
  ncs_analysis_t *a = calloc(1, sizeof *a);
  priv_t *P = calloc(1, sizeof *P);
  if (!a || !P) abort();
  a->priv = P;
  P->retain = opts && opts->retain;
  snprintf(a->path, sizeof a->path, "%s", path);
  a->procs = calloc(n, sizeof *a->procs);
  if (!a->procs) abort();
  a->nprocs = (uint32_t)n;
  double t0 = now_s();
  for (size_t i = 0; i < n; i++) read_clocks(a, paths[i], (uint32_t)i);
  for (uint32_t i = 0; i < a->nprocs; i++) {
    uint32_t h = 0;
    while (h < a->nhosts && strcmp(a->hosts[h].host, a->procs[i].host)) h++;
    if (h == a->nhosts) {
      a->hosts = ncs_xrealloc(a->hosts, (a->nhosts + 1) * sizeof *a->hosts);
      memset(&a->hosts[h], 0, sizeof *a->hosts);
      snprintf(a->hosts[h].host, sizeof a->hosts[h].host, "%s", a->procs[i].host);
      a->nhosts++;
    }
    a->procs[i].host_index = h;
  }
  a->pass_s[a->passes++] = now_s() - t0;
  if (a->nhosts > 1) { /* host offsets from the instances' completion ends */
    t0 = now_s();
    P->hostpass = 1, P->rng = 0x9e3779b97f4a7c15ull;
    P->hd = calloc((size_t)a->nhosts * NCS_AN_HOST_SAMPLES, sizeof *P->hd);
    P->hsp = calloc((size_t)a->nhosts * NCS_AN_HOST_SAMPLES, sizeof *P->hsp);
    P->hn = calloc(a->nhosts, sizeof *P->hn);
    P->lo = calloc(a->nhosts, sizeof *P->lo), P->hi = calloc(a->nhosts, sizeof *P->hi);
    if (!P->hd || !P->hsp || !P->hn || !P->lo || !P->hi) abort();
    merged_pass(a, P, paths);
    host_offsets(a, P);
    free(P->hd), free(P->hsp), free(P->hn), free(P->lo), free(P->hi);
    P->hd = P->hsp = NULL, P->hn = NULL, P->lo = P->hi = NULL;
    P->hostpass = 0, a->evicted = a->peak_open_instances = a->peak_held_ops = 0;
    a->pass_s[a->passes++] = now_s() - t0;
  }
  a->error = 0;
  for (uint32_t i = 0; i < a->nprocs; i++)
    if (a->procs[i].clk_spread > a->error) a->error = a->procs[i].clk_spread;
  int64_t herr = 0;
  for (uint32_t h = 1; h < a->nhosts; h++)
    if (a->hosts[h].error > herr) herr = a->hosts[h].error;
  a->error += herr;
  t0 = now_s();
  merged_pass(a, P, paths);
  finish(a, P);
  a->pass_s[a->passes++] = now_s() - t0;
  ncs_free_paths(paths, n);
  return a;
}

ncs_analysis_t *ncs_analyze_path(const char *path, char *err, size_t errlen) {
  return ncs_analyze_path_opts(path, NULL, err, errlen);
}

void ncs_analysis_free(ncs_analysis_t *a) {
  if (!a) return;
  priv_t *P = a->priv;
  if (P) {
    for (uint32_t k = 0; k < a->nbuckets; k++) {
      bx_t *x = &P->bx[k];
      qs_free(&x->lat), qs_free(&x->bw), qs_free(&x->abw), qs_free(&x->skew), qs_free(&x->tbw);
    }
    free(P->bx), free(P->rkey), free(P->ckey);
    hm_free(&P->bm), hm_free(&P->rm), hm_free(&P->cm);
    hm_free(&P->im), hm_free(&P->sm), hm_free(&P->pm);
    for (size_t i = 0; i < P->ninst; i++) free(P->inst[i].ops), free(P->inst[i].seen);
    free(P->inst), free(P->inst_free);
    for (size_t i = 0; i < P->nstreams; i++)
      for (int k = 0; k < TPUT_KEEP; k++) free(P->streams[i].keep[k].tk);
    free(P->streams), free(P->comm_open), free(P->pw), free(P->pw_free);
    free(P->durs), free(P->arr), free(P->tiv);
    free(P->rops), free(P->rp2p), free(P->insts), free(P->ops);
    ncs_pool_free(&P->strs);
    free(P);
  }
  free(a->buckets), free(a->ranks), free(a->comms), free(a->hosts), free(a->procs);
  free(a->cells);
  free(a);
}

/* ------------------------------------------------------------------ accessors (analyze.h) */
int64_t ncs_an_job_offset(const ncs_analysis_t *a, uint32_t proc) {
  if (a->nhosts <= 1 || proc >= a->nprocs) return 0;
  const ncs_an_proc_t *p = &a->procs[proc];
  return p->clk_off - a->hosts[p->host_index].offset;
}

size_t ncs_an_instance_count(const ncs_analysis_t *a) {
  const priv_t *P = a->priv;
  return P && P->ops ? P->ninsts : 0;
}

const ncs_an_instance_t *ncs_an_instance(const ncs_analysis_t *a, size_t i) {
  const priv_t *P = a->priv;
  return P && P->ops && i < P->ninsts ? &P->insts[i] : NULL;
}

size_t ncs_an_op_count(const ncs_analysis_t *a) {
  const priv_t *P = a->priv;
  return P ? P->n : 0;
}

int ncs_an_op(const ncs_analysis_t *a, size_t i, ncs_an_op_t *out) {
  const priv_t *P = a->priv;
  if (!P || i >= P->n) return -1;
  const op_t *o = &P->ops[i];
  memset(out, 0, sizeof *out);
  out->proc = o->proc, out->seg = o->seg, out->id = o->id, out->comm = o->comm;
  out->rank = o->rank, out->peer = o->peer, out->func = o->func, out->dtype = o->dtype;
  out->seq = o->seq, out->count = o->count, out->order = o->order, out->root = o->root;
  out->bytes = op_bytes(o, o->p2p ? 1 : a->comms[o->comm].nranks);
  out->p2p = o->p2p, out->is_send = o->is_send;
  out->arrival = arrival(a, o);
  out->duration = duration(o, &out->timing);
  out->kernel_start = kstart(a, o);
  out->instance = o->p2p ? SIZE_MAX : o->inst;
  out->pair = o->p2p && o->pair ? o->pair - 1 : SIZE_MAX;
  return 0;
}

int64_t ncs_an_comm_index(const ncs_analysis_t *a, uint64_t comm_id, int32_t nranks) {
  for (uint32_t i = 0; i < a->ncomms; i++)
    if (a->comms[i].comm_id == comm_id && a->comms[i].nranks == nranks) return i;
  return -1;
}
