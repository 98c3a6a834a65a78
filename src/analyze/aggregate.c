/* aggregate.c - the report's aggregates: size buckets, ranks, (rank, bucket) cells, and the
 * send/receive side (analyze.h; docs/report.md defines every number). Buckets, ranks and cells
 * are created in the order instances finish and reordered at the end (analyze.c) as if instances
 * had been processed in (comm, func, seq) order: each remembers its first instance (ikey_t). */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "util/mem.h"

/* the order of the sorted analysis: (comm, func, seq, rank) */
int ikey_cmp(const ikey_t *x, const ikey_t *y) {
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->func != y->func) {
    int c = strcmp(x->func, y->func);
    if (c) return c;
  }
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}
/* keep the smaller key in *k */
int ikey_min(ikey_t *k, ikey_t x) {
  x.set = 1;
  if (k->set && ikey_cmp(k, &x) <= 0) return 0;
  *k = x;
  return 1;
}

ikey_t op_key(const ncs_op_t *o) {
  return (ikey_t){.comm = o->comm, .func = o->func, .seq = o->seq, .rank = o->rank, .set = 1};
}

int log2b(uint64_t b) {
  if (!b) return -1;
  int k = 0;
  while (b >>= 1) k++;
  return k;
}

ncs_an_bucket_t *an_bucket(ncs_analysis_t *a, uint32_t comm, const char *func, int lg, int p2p) {
  priv_t *P = an_priv(a);
  uint64_t key = hm_mix(((uint64_t)comm << 40) ^ ((uint64_t)(uintptr_t)func << 8) ^ (uint64_t)(lg + 1));
  uint64_t idx;
  for (;; key++) { /* verify the fields: the key is a hash (buckets are never deleted) */
    if (!hm_get(&P->bm, key, &idx)) break;
    ncs_an_bucket_t *b = &a->buckets[idx];
    if (b->comm == comm && b->func == func && b->log2 == lg && b->p2p == p2p) return b;
  }
  size_t cap = P->capbuckets;
  NCS_XGROW(a->buckets, P->capbuckets, a->nbuckets + 1);
  if (cap != P->capbuckets) P->bx = ncs_xrealloc(P->bx, P->capbuckets * sizeof *P->bx);
  ncs_an_bucket_t *b = &a->buckets[a->nbuckets];
  memset(&P->bx[a->nbuckets], 0, sizeof *P->bx);
  b->comm = comm, b->func = func, b->log2 = lg, b->p2p = p2p;
  if (hm_put(&P->bm, key, a->nbuckets++) != 0) ncs_oom();
  return b;
}

void an_bucket_add(ncs_analysis_t *a, ncs_an_bucket_t *b, uint64_t bytes, double lat, double bw,
                   double abw, double skew, int src) {
  bx_t *x = &an_priv(a)->bx[b - a->buckets];
  qs_add(&x->lat, lat), qs_add(&x->bw, bw), qs_add(&x->abw, abw), qs_add(&x->skew, skew);
  b->n++;
  b->count++, b->bytes += bytes, b->src[src]++;
}

ncs_an_rank_t *an_rank(ncs_analysis_t *a, const ncs_op_t *o) {
  priv_t *P = an_priv(a);
  uint64_t key = ((uint64_t)o->comm << 32) | (uint32_t)o->rank, idx;
  if (!hm_get(&P->rm, key, &idx)) {
    size_t cap = P->capranks;
    NCS_XGROW(a->ranks, P->capranks, a->nranks + 1);
    if (cap != P->capranks) P->rkey = ncs_xrealloc(P->rkey, P->capranks * sizeof *P->rkey);
    memset(&P->rkey[a->nranks], 0, sizeof *P->rkey);
    ncs_an_rank_t *r = &a->ranks[a->nranks];
    r->comm = o->comm, r->rank = o->rank;
    idx = a->nranks++;
    if (hm_put(&P->rm, key, idx) != 0) ncs_oom();
  }
  /* the proc of its record in the first instance (comm, func, seq), as the sorted order had */
  if (ikey_min(&P->rkey[idx], op_key(o))) a->ranks[idx].proc = o->proc;
  return &a->ranks[idx];
}

/* Per (rank, collective bucket) arrival sums (ncs_an_cell_t, the heatmap of report --html); at
 * most NCS_AN_CELL_MAX cells. */
void an_cell(ncs_analysis_t *a, uint32_t bi, uint32_t ri, const ncs_op_t *o, int64_t late,
             int64_t waited, int last) {
  priv_t *P = an_priv(a);
  uint64_t key = ((uint64_t)bi << 32) | ri, ci;
  if (!hm_get(&P->cm, key, &ci)) {
    if (a->ncells >= NCS_AN_CELL_MAX) {
      a->cells_dropped++;
      return;
    }
    size_t cap = P->capcells;
    NCS_XGROW(a->cells, P->capcells, a->ncells + 1);
    if (cap != P->capcells) P->ckey = ncs_xrealloc(P->ckey, P->capcells * sizeof *P->ckey);
    ci = a->ncells++;
    a->cells[ci] = (ncs_an_cell_t){.bucket = bi, .rank = ri};
    memset(&P->ckey[ci], 0, sizeof *P->ckey);
    if (hm_put(&P->cm, key, ci) != 0) ncs_oom();
  }
  ikey_min(&P->ckey[ci], op_key(o));
  ncs_an_cell_t *c = &a->cells[ci];
  c->n++, c->late += late, c->waited += waited;
  if (last) c->last++;
}

/* ------------------------------------------------------------------ point-to-point */
/* (comm, sender, receiver, order, send first): does op come before the bucket's first op? */
static int p2p_before(const ncs_op_t *o, const bx_t *x) {
  int32_t s = o->is_send ? o->rank : o->peer, d = o->is_send ? o->peer : o->rank;
  if (o->comm != x->pcomm) return o->comm < x->pcomm;
  if (s != x->psrc) return s < x->psrc;
  if (d != x->pdst) return d < x->pdst;
  if (o->order != x->porder) return o->order < x->porder;
  return o->is_send && !x->psend;
}

/* one Send or Recv: its bucket sample (duration and bandwidth of this rank alone) */
static void p2p_one(ncs_analysis_t *a, const ncs_op_t *o) {
  a->cov.timing[o->timing]++;
  a->cov.gsrc[o->gsrc]++, a->cov.captured += o->captured, a->cov.gk[o->gk]++;
  a->cov.gk_enqueue += o->gk == NCS_GK_UNKNOWN && o->timing == NCS_SRC_ENQUEUE_HOST;
  if (o->is_send)
    a->sends++;
  else
    a->recvs++;
  double abw = o->duration > 0 ? (double)o->bytes / (double)o->duration : 0;
  ncs_an_bucket_t *b = an_bucket(a, o->comm, o->func, log2b(o->bytes), 1);
  if (o->gk == NCS_GK_UNKNOWN && o->timing != NCS_SRC_KERNEL_GPU) /* its GPU time is unknown */
    a->no_gpu++, b->no_gpu++;
  else
    an_bucket_add(a, b, o->bytes, (double)o->duration, abw, abw, 0, o->timing);
  bx_t *x = &an_priv(a)->bx[b - a->buckets];
  if (!x->p2p_first || p2p_before(o, x))
    x->p2p_first = 1, x->pcomm = o->comm, x->psrc = o->is_send ? o->rank : o->peer,
    x->pdst = o->is_send ? o->peer : o->rank, x->porder = o->order, x->psend = o->is_send;
}

void an_p2p(ncs_analysis_t *a, const ncs_op_t *op, const ncs_op_t *partner) {
  p2p_one(a, op);
  an_bd_op(a, op);
  if (partner) an_bd_op(a, partner);
  if (!partner) {
    if (op->is_send)
      a->p2p_unmatched_send++;
    else
      a->p2p_unmatched_recv++;
    return;
  }
  p2p_one(a, partner);
  a->p2p_pairs++;
  if (op->bytes != partner->bytes) a->p2p_bytes_mismatch++;
}
