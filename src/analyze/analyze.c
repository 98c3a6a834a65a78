/* analyze.c - cross-rank analysis: read, match, map clocks, aggregate (see analyze.h and
 * docs/report.md for the definition of every number). */
#include "analyze/analyze.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/hmap.h"
#include "trace/reader.h"

const char *const ncs_src_names[NCS_SRC_N] = {"kernel_gpu", "proxy_host", "enqueue_host"};

/* one Coll or P2p of one rank */
typedef struct {
  uint32_t comm, proc;
  int32_t rank, peer;
  const char *func, *dtype;
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

typedef struct {
  op_t *ops;
  size_t n, cap;
  char **strs; /* interned strings */
  size_t nstrs, capstrs;
  int64_t **gaps; /* per process: pTimer - ts samples */
  size_t *ngaps;
  ncs_an_instance_t *insts; /* per collective instance, in op order (ncs_an_instance) */
  size_t ninsts, capinsts;
} priv_t;


/* qsort, but an empty array may be NULL (qsort's pointer must not be, even for 0 elements) */
static void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, size, cmp);
}

void *ncs_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "ncclscope: out of memory\n");
    abort();
  }
  return q;
}

static const char *intern(priv_t *P, const char *s) {
  if (!s) s = "";
  for (size_t i = 0; i < P->nstrs; i++)
    if (!strcmp(P->strs[i], s)) return P->strs[i];
  if (P->nstrs == P->capstrs) {
    P->capstrs = P->capstrs ? 2 * P->capstrs : 32;
    P->strs = ncs_xrealloc(P->strs, P->capstrs * sizeof *P->strs);
  }
  P->strs[P->nstrs] = strdup(s);
  if (!P->strs[P->nstrs]) abort();
  return P->strs[P->nstrs++];
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* exact quantile of a sorted array: the value at rank ceil(q*n) (nearest rank) */
static int64_t qi64(const int64_t *v, size_t n, double q) {
  if (!n) return 0;
  size_t k = (size_t)(q * (double)n);
  if ((double)k < q * (double)n) k++; /* ceil */
  if (k > n) k = n;
  return v[k ? k - 1 : 0];
}
static double qdbl(const double *v, size_t n, double q) {
  if (!n) return 0;
  size_t k = (size_t)(q * (double)n);
  if ((double)k < q * (double)n) k++; /* ceil */
  if (k > n) k = n;
  return v[k ? k - 1 : 0];
}

static uint32_t type_size(const char *dt) {
  if (!dt) return 1;
  if (strstr(dt, "64")) return 8;
  if (strstr(dt, "32")) return 4;
  if (strstr(dt, "16")) return 2;
  return 1; /* Int8, Uint8 ("Unknown" in NCCL), Float8 */
}

static int is_func(const char *f, const char *name) { return f && !strcmp(f, name); }

/* nccl-tests: algbw bytes and bus factor */
static double bus_factor(const char *f, int n) {
  if (n <= 1) return 1.0;
  if (is_func(f, "AllReduce")) return 2.0 * (n - 1) / n;
  if (is_func(f, "AllGather") || is_func(f, "ReduceScatter")) return (double)(n - 1) / n;
  return 1.0;
}

/* ------------------------------------------------------------------ reading */
typedef struct { /* per segment */
  hmap_t api;  /* CollApi/P2pApi id -> index into apis */
  hmap_t ops;  /* Coll/P2p id -> op index + 1 */
  struct api_s {
    uint64_t ts, count;
    int64_t root;
    const char *dtype;
  } *apis;
  size_t napis, capapis;
  uint32_t comm_map[4096]; /* comm index -> analysis comm + 1 */
  int32_t comm_rank[4096];
} seg_state_t;

static uint32_t find_comm(ncs_analysis_t *a, const ncs_comm_info_t *c) {
  int64_t k = ncs_an_comm_index(a, c->comm_id, c->nranks);
  if (k >= 0) return (uint32_t)k;
  a->comms = ncs_xrealloc(a->comms, (a->ncomms + 1) * sizeof *a->comms);
  ncs_an_comm_t *n = &a->comms[a->ncomms];
  memset(n, 0, sizeof *n);
  n->comm_id = c->comm_id, n->nranks = c->nranks, n->nnodes = c->nnodes;
  return a->ncomms++;
}

static op_t *new_op(priv_t *P) {
  if (P->n == P->cap) {
    P->cap = P->cap ? 2 * P->cap : 1024;
    P->ops = ncs_xrealloc(P->ops, P->cap * sizeof *P->ops);
  }
  op_t *o = &P->ops[P->n++];
  memset(o, 0, sizeof *o);
  return o;
}

typedef struct {
  int64_t *v;
  size_t n, cap;
} i64vec_t;
static void push_i64(i64vec_t *v, int64_t x) {
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 64;
    v->v = ncs_xrealloc(v->v, v->cap * sizeof *v->v);
  }
  v->v[v->n++] = x;
}

static void read_file(ncs_analysis_t *a, priv_t *P, const char *path, uint32_t pi) {
  ncs_an_proc_t *pr = &a->procs[pi];
  snprintf(pr->file, sizeof pr->file, "%s", path);
  char err[256];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  if (!r) {
    pr->damaged = 1;
    a->damaged_files++;
    return;
  }
  seg_state_t *S = calloc(1, sizeof *S);
  if (!S) abort();
  i64vec_t clk = {0}, gaps = {0};
  /* order of sends/recvs per (comm, peer, kind) for pairing: key -> next order */
  hmap_t order = {0};
  ncs_item_t it;
  int rc;
  while ((rc = ncs_reader_next(r, &it)) == 1) {
    switch (it.what) {
    case NCS_ITEM_SEGMENT: {
      const ncs_segment_info_t *si = ncs_reader_segment(r);
      snprintf(pr->host, sizeof pr->host, "%s", si->host);
      pr->pid = si->pid;
      hm_clear(&S->api), hm_clear(&S->ops);
      S->napis = 0;
      memset(S->comm_map, 0, sizeof S->comm_map);
      break;
    }
    case NCS_ITEM_CLOCK:
      push_i64(&clk, (int64_t)(it.clock_realtime_ns - it.clock_mono_ns));
      break;
    case NCS_ITEM_COMM:
      if (it.comm.index < 4096) {
        S->comm_map[it.comm.index] = find_comm(a, &it.comm) + 1;
        S->comm_rank[it.comm.index] = it.comm.rank;
      }
      break;
    case NCS_ITEM_EVENT: {
      const ncs_event_t *e = &it.ev;
      if (e->kind == NCS_REC_START) {
        if (e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API) {
          if (S->napis == S->capapis) {
            S->capapis = S->capapis ? 2 * S->capapis : 256;
            S->apis = ncs_xrealloc(S->apis, S->capapis * sizeof *S->apis);
          }
          struct api_s *x = &S->apis[S->napis];
          x->ts = e->ts, x->count = e->f[1], x->dtype = intern(P, e->fstr[2]);
          x->root = e->type == NCS_T_COLL_API ? (int64_t)e->f[3] : 0;
          hm_put(&S->api, e->id, S->napis++);
        } else if (e->type == NCS_T_KERNEL_CH) {
          if (gaps.n < NCS_AN_GAP_MAX && e->f[1]) push_i64(&gaps, (int64_t)(e->f[1] - e->ts));
        } else if ((e->type == NCS_T_COLL || e->type == NCS_T_P2P) && e->ctx_kind == NCS_CTX_LOCAL &&
                   e->ctx < 4096 && S->comm_map[e->ctx]) {
          op_t *o = new_op(P);
          o->comm = S->comm_map[e->ctx] - 1, o->proc = pi, o->rank = S->comm_rank[e->ctx];
          o->coll_ts = e->ts;
          o->unsampled = (e->flags & NCS_SF_UNSAMPLED) != 0;
          o->seg = ncs_reader_segment(r) ? ncs_reader_segment(r)->index : 0, o->id = e->id;
          if (e->type == NCS_T_COLL) {
            o->seq = e->f[0], o->func = intern(P, e->fstr[1]), o->count = e->f[4];
            o->root = (int64_t)e->f[5], o->dtype = intern(P, e->fstr[6]);
          } else {
            o->p2p = 1, o->func = intern(P, e->fstr[0]), o->dtype = intern(P, e->fstr[2]);
            o->count = e->f[3], o->peer = (int32_t)(int64_t)e->f[4];
            o->is_send = is_func(o->func, "Send");
            uint64_t key = hm_mix(((uint64_t)o->comm << 40) ^ ((uint64_t)(uint32_t)o->peer << 1) ^
                                  o->is_send ^ ((uint64_t)(uint32_t)o->rank << 20));
            int created;
            uint64_t *cnt = hm_ref(&order, key, 0, &created);
            o->order = cnt ? (*cnt)++ : 0;
          }
          uint64_t ai;
          if (e->parent_kind == NCS_REF_LOCAL && hm_get(&S->api, e->parent, &ai)) {
            const struct api_s *x = &S->apis[ai];
            o->api_ts = x->ts, o->count = x->count, o->dtype = x->dtype;
            if (!o->p2p) o->root = x->root;
          }
          hm_put(&S->ops, e->id, P->n);
        }
      } else if (e->kind == NCS_REC_STOP && (e->type == NCS_T_COLL || e->type == NCS_T_P2P)) {
        uint64_t oi;
        if (hm_get(&S->ops, e->id, &oi)) P->ops[oi - 1].stop_ts = e->ts;
      } else if (e->kind == NCS_REC_COMPLETE) {
        uint64_t oi;
        if (hm_get(&S->ops, e->id, &oi)) {
          op_t *o = &P->ops[oi - 1];
          o->complete = 1, o->cflags = e->cflags, o->end_ns = e->end_ns;
          o->first_child = e->first_child_ns, o->gpu_start = e->gpu_start, o->gpu_stop = e->gpu_stop;
        }
      }
      break;
    }
    default: break;
    }
  }
  if (rc < 0) {
    pr->damaged = 1;
    a->damaged_files++;
  }
  ncs_reader_close(r);
  /* clocks of this process */
  if (clk.n) {
    sort_n(clk.v, clk.n, sizeof *clk.v, cmp_i64);
    pr->clk_off = qi64(clk.v, clk.n, 0.5), pr->clk_spread = clk.v[clk.n - 1] - clk.v[0];
    pr->clk_pairs = (uint32_t)clk.n;
  }
  if (gaps.n) {
    sort_n(gaps.v, gaps.n, sizeof *gaps.v, cmp_i64);
    int64_t med = qi64(gaps.v, gaps.n, 0.5);
    int64_t d = med - pr->clk_off;
    if (clk.n && d < 1000000000 && d > -1000000000) /* within 1 s of realtime: realtime domain */
      pr->gpu_domain = NCS_GPU_REALTIME, pr->gpu_off = pr->clk_off;
    else
      pr->gpu_domain = NCS_GPU_OWN, pr->gpu_off = gaps.v[gaps.n - 1]; /* least-delayed start */
    pr->gap_p50 = med - pr->gpu_off, pr->gap_p99 = qi64(gaps.v, gaps.n, 0.99) - pr->gpu_off;
    pr->gap_min = gaps.v[0] - pr->gpu_off, pr->gap_max = gaps.v[gaps.n - 1] - pr->gpu_off;
    pr->gap_n = gaps.n;
  }
  free(clk.v), free(gaps.v), free(S->apis);
  hm_free(&S->api), hm_free(&S->ops), hm_free(&order);
  free(S);
}

/* ------------------------------------------------------------------ analysis */
static int cmp_coll(const void *x, const void *y) {
  const op_t *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->func != b->func) return strcmp(a->func, b->func);
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
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
  return (int)b->is_send - (int)a->is_send; /* send first */
}

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
  uint64_t b = o->count * type_size(o->dtype);
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

static ncs_an_bucket_t *bucket(ncs_analysis_t *a, hmap_t *m, uint32_t comm, const char *func,
                               int lg, int p2p) {
  uint64_t key = ((uint64_t)comm << 40) ^ ((uint64_t)(uintptr_t)func << 8) ^ (uint64_t)(lg + 1);
  key = hm_mix(key);
  uint64_t idx;
  for (;; key++) { /* verify the fields: the key is a hash */
    if (!hm_get(m, key, &idx)) break;
    ncs_an_bucket_t *b = &a->buckets[idx];
    if (b->comm == comm && b->func == func && b->log2 == lg && b->p2p == p2p) return b;
  }
  a->buckets = ncs_xrealloc(a->buckets, (a->nbuckets + 1) * sizeof *a->buckets);
  ncs_an_bucket_t *b = &a->buckets[a->nbuckets];
  memset(b, 0, sizeof *b);
  b->comm = comm, b->func = func, b->log2 = lg, b->p2p = p2p;
  hm_put(m, key, a->nbuckets++);
  return b;
}
static void bucket_add(ncs_an_bucket_t *b, uint64_t bytes, double lat, double bw, double abw,
                       double skew, int src) {
  if (b->n == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 16;
    b->lat = ncs_xrealloc(b->lat, b->cap * sizeof(double));
    b->bw = ncs_xrealloc(b->bw, b->cap * sizeof(double));
    b->abw = ncs_xrealloc(b->abw, b->cap * sizeof(double));
    b->skew = ncs_xrealloc(b->skew, b->cap * sizeof(double));
  }
  b->lat[b->n] = lat, b->bw[b->n] = bw, b->abw[b->n] = abw, b->skew[b->n] = skew;
  b->n++;
  b->count++, b->bytes += bytes, b->src[src]++;
}

/* Throughput: instance k and k+1 are the same collective, consecutive seqNumbers and the same
 * size. For each rank with GPU times in both, the interval between its two kernel starts (one GPU
 * clock, no mapping) counts when the second kernel started within TPUT_GAP_NS of the first one's
 * end, i.e. they ran back to back. The instance's interval is the median over its ranks. This is
 * what a benchmark loop measures per iteration (launch gaps included), unlike the kernel
 * duration. */
#define TPUT_GAP_NS 200000
static void throughput(ncs_analysis_t *a, priv_t *P, hmap_t *bm) {
  int64_t *iv = NULL;
  size_t cap = 0;
  for (size_t k = 0; k + 1 < P->ninsts; k++) {
    const ncs_an_instance_t *x = &P->insts[k], *y = &P->insts[k + 1];
    if (x->comm != y->comm || x->func != y->func || y->seq != x->seq + 1 || x->bytes != y->bytes)
      continue;
    if (x->nops > cap) cap = x->nops * 2, iv = ncs_xrealloc(iv, cap * sizeof *iv);
    size_t n = 0, q = y->first_op, qe = y->first_op + y->nops;
    for (size_t p = x->first_op; p < x->first_op + x->nops; p++) {
      const op_t *o = &P->ops[p];
      while (q < qe && P->ops[q].rank < o->rank) q++;
      if (q >= qe) break;
      const op_t *nx = &P->ops[q];
      if (nx->rank != o->rank || !has_gpu(o) || !has_gpu(nx)) continue;
      if (nx->gpu_start <= o->gpu_start || nx->gpu_start > o->gpu_stop + TPUT_GAP_NS) continue;
      iv[n++] = (int64_t)(nx->gpu_start - o->gpu_start);
    }
    if (!n) continue;
    sort_n(iv, n, sizeof *iv, cmp_i64);
    double t = (double)qi64(iv, n, 0.5);
    const op_t *I = &P->ops[x->first_op];
    ncs_an_bucket_t *b = bucket(a, bm, x->comm, x->func, log2b(x->bytes), 0);
    if (b->tput_n == b->tcap) {
      b->tcap = b->tcap ? 2 * b->tcap : 16;
      b->tbw = ncs_xrealloc(b->tbw, b->tcap * sizeof(double));
    }
    b->tbw[b->tput_n++] = (double)op_bytes(I, a->comms[x->comm].nranks) / t *
                          bus_factor(x->func, a->comms[x->comm].nranks);
  }
  free(iv);
}

static ncs_an_rank_t *rank_of(ncs_analysis_t *a, hmap_t *m, const op_t *o) {
  uint64_t key = ((uint64_t)o->comm << 32) | (uint32_t)o->rank, idx;
  if (hm_get(m, key, &idx)) return &a->ranks[idx];
  a->ranks = ncs_xrealloc(a->ranks, (a->nranks + 1) * sizeof *a->ranks);
  ncs_an_rank_t *r = &a->ranks[a->nranks];
  memset(r, 0, sizeof *r);
  r->comm = o->comm, r->rank = o->rank, r->proc = o->proc;
  hm_put(m, key, a->nranks++);
  return r;
}

static void add_evidence(ncs_an_rank_t *r, const op_t *o, int64_t late) {
  uint32_t k = r->nev < NCS_AN_EVIDENCE ? r->nev++ : NCS_AN_EVIDENCE - 1;
  if (k == NCS_AN_EVIDENCE - 1 && r->nev == NCS_AN_EVIDENCE && r->ev[k].late >= late &&
      r->ev[k].func)
    return;
  r->ev[k] = (ncs_an_evidence_t){o->func, o->seq, late};
  for (; k > 0 && r->ev[k].late > r->ev[k - 1].late; k--) {
    ncs_an_evidence_t t = r->ev[k];
    r->ev[k] = r->ev[k - 1], r->ev[k - 1] = t;
  }
}

static void add_mismatch(ncs_analysis_t *a, const op_t *x, const op_t *y, int32_t nodd,
                         const char *what) {
  a->mismatched++;
  if (a->nmism >= sizeof a->mism / sizeof a->mism[0]) return;
  ncs_an_mismatch_t *m = &a->mism[a->nmism++];
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
static void check_mismatch(ncs_analysis_t *a, const op_t *ops, size_t n) {
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
  add_mismatch(a, odd, ref, nodd, what);
}

/* Host offsets: per instance with ranks on several hosts, the earliest completion end (realtime)
 * seen on each host minus that of the reference host (host 0). A collective ends at nearly the
 * same moment on every rank, and a rank can only see that end late (its proxy polls), never
 * early: the earliest end of a host is its best estimate. The offset is the median of those
 * differences; the error is their median absolute deviation plus the median spread of the end
 * times within one host (host 0 or h, whichever is larger): a rank that always sees the end late
 * shifts the differences alike, and that spread is what shows it. */
static void host_offsets(ncs_analysis_t *a, priv_t *P, size_t ncoll) {
  if (a->nhosts <= 1) return;
  i64vec_t *d = calloc(a->nhosts, sizeof *d), *sp = calloc(a->nhosts, sizeof *sp);
  int64_t *lo = calloc(a->nhosts, sizeof *lo), *hi = calloc(a->nhosts, sizeof *hi);
  if (!d || !sp || !lo || !hi) abort();
  for (size_t i = 0; i < ncoll;) {
    size_t j = i;
    while (j < ncoll && P->ops[j].comm == P->ops[i].comm && P->ops[j].func == P->ops[i].func &&
           P->ops[j].seq == P->ops[i].seq)
      j++;
    for (uint32_t h = 0; h < a->nhosts; h++) lo[h] = INT64_MAX, hi[h] = INT64_MIN;
    for (size_t k = i; k < j; k++) {
      const op_t *o = &P->ops[k];
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
          push_i64(&d[h], lo[h] - lo[0]);
          int64_t s0 = hi[0] - lo[0], sh = hi[h] - lo[h];
          push_i64(&sp[h], s0 > sh ? s0 : sh);
        }
    i = j;
  }
  for (uint32_t h = 1; h < a->nhosts; h++) {
    if (!d[h].n) continue;
    sort_n(d[h].v, d[h].n, sizeof(int64_t), cmp_i64);
    int64_t med = qi64(d[h].v, d[h].n, 0.5);
    /* the deviations go to a new array: rewriting d in place and taking its median again was
     * compiled (gcc 12 -O3) into a reuse of the first median */
    int64_t *dev = ncs_xrealloc(NULL, d[h].n * sizeof *dev);
    for (size_t k = 0; k < d[h].n; k++) {
      int64_t x = d[h].v[k] - med;
      dev[k] = x < 0 ? -x : x;
    }
    sort_n(dev, d[h].n, sizeof *dev, cmp_i64);
    sort_n(sp[h].v, sp[h].n, sizeof(int64_t), cmp_i64);
    a->hosts[h].offset = med;
    a->hosts[h].error = qi64(dev, d[h].n, 0.5) + qi64(sp[h].v, sp[h].n, 0.5);
    free(dev);
    a->hosts[h].samples = d[h].n;
    free(d[h].v), free(sp[h].v);
  }
  free(d), free(sp), free(lo), free(hi);
}

/* Per (rank, collective bucket) arrival sums (ncs_an_cell_t, the heatmap of report --html): one
 * more pass over the instances of the sorted collectives, with analyse()'s rules for the first
 * and the last arrival. The buckets and ranks exist already; at most NCS_AN_CELL_MAX cells. */
static void fill_cells(ncs_analysis_t *a, priv_t *P, size_t ncoll, hmap_t *bm, hmap_t *rm) {
  hmap_t cm = {0};
  size_t cap = 0;
  for (size_t i = 0; i < ncoll;) {
    size_t j = i;
    while (j < ncoll && P->ops[j].comm == P->ops[i].comm && P->ops[j].func == P->ops[i].func &&
           P->ops[j].seq == P->ops[i].seq)
      j++;
    const op_t *I = &P->ops[i];
    int64_t first = INT64_MAX, last = INT64_MIN;
    size_t lastk = i;
    for (size_t k = i; k < j; k++) {
      int64_t t = arrival(a, &P->ops[k]);
      if (t < first) first = t;
      if (t > last) last = t, lastk = k;
    }
    uint64_t bytes = op_bytes(I, a->comms[I->comm].nranks);
    uint32_t bi = (uint32_t)(bucket(a, bm, I->comm, I->func, log2b(bytes), 0) - a->buckets);
    for (size_t k = i; k < j; k++) {
      const op_t *o = &P->ops[k];
      uint32_t ri = (uint32_t)(rank_of(a, rm, o) - a->ranks);
      uint64_t key = ((uint64_t)bi << 32) | ri, ci;
      if (!hm_get(&cm, key, &ci)) {
        if (a->ncells >= NCS_AN_CELL_MAX) {
          a->cells_dropped++;
          continue;
        }
        if (a->ncells == cap) {
          cap = cap ? 2 * cap : 256;
          a->cells = ncs_xrealloc(a->cells, cap * sizeof *a->cells);
        }
        ci = a->ncells++;
        a->cells[ci] = (ncs_an_cell_t){.bucket = bi, .rank = ri};
        if (hm_put(&cm, key, ci) != 0) abort();
      }
      ncs_an_cell_t *c = &a->cells[ci];
      int64_t t = arrival(a, o);
      c->n++, c->late += t - first, c->waited += last - t;
      if (j - i > 1 && k == lastk && last > first) c->last++;
    }
    i = j;
  }
  hm_free(&cm);
}

static void analyse(ncs_analysis_t *a, priv_t *P) {
  /* colls first, p2p after */
  size_t ncoll = 0;
  for (size_t i = 0; i < P->n; i++)
    if (!P->ops[i].p2p) {
      op_t t = P->ops[ncoll];
      P->ops[ncoll++] = P->ops[i], P->ops[i] = t;
    }
  sort_n(P->ops, ncoll, sizeof *P->ops, cmp_coll);
  sort_n(P->ops + ncoll, P->n - ncoll, sizeof *P->ops, cmp_p2p);
  a->coll_ops = ncoll;
  host_offsets(a, P, ncoll);
  a->error = 0;
  for (uint32_t i = 0; i < a->nprocs; i++)
    if (a->procs[i].clk_spread > a->error) a->error = a->procs[i].clk_spread;
  int64_t herr = 0;
  for (uint32_t h = 1; h < a->nhosts; h++)
    if (a->hosts[h].error > herr) herr = a->hosts[h].error;
  a->error += herr;

  hmap_t bm = {0}, rm = {0};
  size_t maxr = 0;
  for (uint32_t c = 0; c < a->ncomms; c++)
    if ((size_t)a->comms[c].nranks > maxr) maxr = (size_t)a->comms[c].nranks;
  int64_t *durs = NULL, *arr = NULL;
  size_t capd = 0;
  for (size_t i = 0; i < ncoll;) {
    size_t j = i;
    while (j < ncoll && P->ops[j].comm == P->ops[i].comm && P->ops[j].func == P->ops[i].func &&
           P->ops[j].seq == P->ops[i].seq)
      j++;
    op_t *I = &P->ops[i];
    size_t n = j - i;
    ncs_an_comm_t *cm = &a->comms[I->comm];
    a->instances++;
    if ((int32_t)n < cm->nranks) a->incomplete++;
    for (size_t k = i + 1; k < j; k++)
      if (P->ops[k].rank == P->ops[k - 1].rank) a->unmatched_seq++;
    check_mismatch(a, &P->ops[i], n);
    if (n > capd) {
      capd = n * 2;
      durs = ncs_xrealloc(durs, capd * sizeof *durs), arr = ncs_xrealloc(arr, capd * sizeof *arr);
    }
    /* arrivals */
    int64_t first = INT64_MAX, last = INT64_MIN, kmax = 0, dmax = -1, dmin = INT64_MAX;
    size_t lastk = i, firstk = i;
    int src = NCS_SRC_ENQUEUE_HOST;
    for (size_t k = i; k < j; k++) {
      int64_t t = arrival(a, &P->ops[k]);
      if (t < first) first = t, firstk = k;
      if (t > last) last = t, lastk = k;
      int s;
      int64_t d = duration(&P->ops[k], &s);
      durs[k - i] = d;
      if (d > dmax) dmax = d, src = s;
      if (d > 0 && d < dmin) dmin = d;
      int64_t ks = kstart(a, &P->ops[k]);
      if (ks > kmax) kmax = ks;
    }
    memcpy(arr, durs, n * sizeof *durs);
    sort_n(arr, n, sizeof *arr, cmp_i64);
    int64_t dmed = qi64(arr, n, 0.5);
    int64_t skew = last - first;
    int64_t inst_caused = 0, inst_excess = 0;
    int32_t inst_slowest = -1;
    for (size_t k = i; k < j; k++) {
      op_t *o = &P->ops[k];
      o->inst = P->ninsts;
      ncs_an_rank_t *r = rank_of(a, &rm, o);
      int64_t t = arrival(a, o);
      r->instances++;
      r->wait_suffered += last - t;
      int64_t d = durs[k - i];
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
      if (n > 1 && k == lastk && skew > 0) {
        r->last++;
        r->wait_caused += 0; /* summed below */
        int64_t caused = 0;
        for (size_t q = i; q < j; q++) caused += last - arrival(a, &P->ops[q]);
        r->wait_caused += caused;
        inst_caused = caused;
        add_evidence(r, o, skew);
      }
      if (n > 2 && d == dmax && d > dmed + dmed / 20) {
        r->slowest++, r->excess += d - dmed;
        if (inst_slowest < 0) inst_slowest = o->rank, inst_excess = d - dmed;
      }
    }
    uint64_t bytes = op_bytes(I, cm->nranks);
    /* Latency is what the slowest rank took, waiting for late peers included. Bandwidth is
     * over the transfer time: the shortest rank duration, since the rank whose kernel started
     * last waits for no one (its whole duration is the data exchange). Waiting shows up as skew
     * and wait, not as lower bandwidth; back-to-back this is what nccl-tests' busbw measures. */
    double lat = (double)dmax, xfer = dmin < INT64_MAX ? (double)dmin : lat;
    double abw = xfer > 0 ? (double)bytes / xfer : 0; /* bytes/ns = GB/s */
    /* KernelCh sampling left some rank without GPU times: its duration is only the enqueue,
     * so the instance counts for arrivals and skew but not for latency and bandwidth */
    int unsampled = 0;
    for (size_t k = i; k < j; k++) unsampled |= P->ops[k].unsampled && !has_gpu(&P->ops[k]);
    ncs_an_bucket_t *b = bucket(a, &bm, I->comm, I->func, log2b(bytes), 0);
    if (unsampled)
      a->unsampled++;
    else
      bucket_add(b, bytes, lat, abw * bus_factor(I->func, cm->nranks), abw, (double)skew, src);
    if (P->ninsts == P->capinsts) {
      P->capinsts = P->capinsts ? 2 * P->capinsts : 256;
      P->insts = ncs_xrealloc(P->insts, P->capinsts * sizeof *P->insts);
    }
    P->insts[P->ninsts++] = (ncs_an_instance_t){
        .comm = I->comm, .func = I->func, .seq = I->seq, .bytes = bytes, .log2 = log2b(bytes),
        .first_op = i, .nops = (uint32_t)n, .latency = dmax, .timing = src,
        .median_duration = dmed, .algbw = abw, .busbw = abw * bus_factor(I->func, cm->nranks),
        .first_arrival = first, .last_arrival = last, .skew = skew,
        .first_rank = P->ops[firstk].rank, .last_rank = P->ops[lastk].rank,
        .last_counted = n > 1 && skew > 0, .wait_caused = inst_caused,
        .slowest_rank = inst_slowest, .slowest_excess = inst_excess, .unsampled = unsampled};
    i = j;
  }
  free(durs), free(arr);
  (void)maxr;
  /* point-to-point: pair sends with receives, per-op samples in Send/Recv buckets */
  op_t *p2 = P->ops + ncoll;
  size_t np = P->n - ncoll;
  for (size_t i = 0; i < np; i++) {
    op_t *o = &p2[i];
    if (o->is_send)
      a->sends++;
    else
      a->recvs++;
    int s;
    int64_t d = duration(o, &s);
    uint64_t bytes = op_bytes(o, 1);
    double abw = d > 0 ? (double)bytes / (double)d : 0;
    bucket_add(bucket(a, &bm, o->comm, o->func, log2b(bytes), 1), bytes, (double)d, abw, abw, 0, s);
    if (!o->is_send) continue;
    if (i + 1 < np && !p2[i + 1].is_send && p2[i + 1].comm == o->comm &&
        p2[i + 1].peer == o->rank && p2[i + 1].rank == o->peer && p2[i + 1].order == o->order) {
      a->p2p_pairs++;
      if (op_bytes(&p2[i + 1], 1) != bytes) a->p2p_bytes_mismatch++;
      o->pair = ncoll + i + 2, p2[i + 1].pair = ncoll + i + 1;
    }
  }
  a->p2p_unmatched_send = a->sends - a->p2p_pairs, a->p2p_unmatched_recv = a->recvs - a->p2p_pairs;
  throughput(a, P, &bm);
  /* finish buckets */
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    ncs_an_bucket_t *b = &a->buckets[k];
    sort_n(b->lat, b->n, sizeof(double), cmp_dbl), sort_n(b->bw, b->n, sizeof(double), cmp_dbl);
    sort_n(b->abw, b->n, sizeof(double), cmp_dbl), sort_n(b->skew, b->n, sizeof(double), cmp_dbl);
    b->lat_p50 = qdbl(b->lat, b->n, .5), b->lat_p95 = qdbl(b->lat, b->n, .95);
    b->lat_p99 = qdbl(b->lat, b->n, .99);
    /* bandwidth percentiles are of the slow side: p95 = the value 95% of instances beat */
    b->busbw_p50 = qdbl(b->bw, b->n, .5), b->busbw_p95 = qdbl(b->bw, b->n, .05);
    b->busbw_p99 = qdbl(b->bw, b->n, .01), b->algbw_p50 = qdbl(b->abw, b->n, .5);
    b->skew_p50 = qdbl(b->skew, b->n, .5), b->skew_max = b->n ? b->skew[b->n - 1] : 0;
    sort_n(b->tbw, b->tput_n, sizeof(double), cmp_dbl);
    b->tput_busbw_p50 = qdbl(b->tbw, b->tput_n, .5);
  }
  /* ranks seen per communicator */
  for (uint32_t k = 0; k < a->nranks; k++) a->comms[a->ranks[k].comm].ranks_seen++;
  fill_cells(a, P, ncoll, &bm, &rm);
  hm_free(&bm), hm_free(&rm);
}

ncs_analysis_t *ncs_analyze_path(const char *path, char *err, size_t errlen) {
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
  snprintf(a->path, sizeof a->path, "%s", path);
  a->procs = calloc(n, sizeof *a->procs);
  if (!a->procs) abort();
  a->nprocs = (uint32_t)n;
  for (size_t i = 0; i < n; i++) read_file(a, P, paths[i], (uint32_t)i);
  ncs_free_paths(paths, n);
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
  analyse(a, P);
  return a;
}

void ncs_analysis_free(ncs_analysis_t *a) {
  if (!a) return;
  priv_t *P = a->priv;
  if (P) {
    free(P->ops), free(P->insts);
    for (size_t i = 0; i < P->nstrs; i++) free(P->strs[i]);
    free(P->strs);
    free(P);
  }
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    free(a->buckets[k].lat), free(a->buckets[k].bw), free(a->buckets[k].abw);
    free(a->buckets[k].skew), free(a->buckets[k].tbw);
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
  return P ? P->ninsts : 0;
}

const ncs_an_instance_t *ncs_an_instance(const ncs_analysis_t *a, size_t i) {
  const priv_t *P = a->priv;
  return P && i < P->ninsts ? &P->insts[i] : NULL;
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
