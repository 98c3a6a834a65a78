/* throughput.c - the throughput busbw of a size bucket (docs/report.md). */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "util/mem.h"
#include "util/num.h"

static int has_gpu(const ncs_op_t *o) { return o->timing == NCS_SRC_KERNEL_GPU; }

/* Throughput: instance k and k+1 are the same collective, consecutive seqNumbers and the same
 * size. For each rank with GPU times in both, the interval between its two kernel starts (one GPU
 * clock, no mapping) counts when the second kernel started within TPUT_GAP_NS of the first one's
 * end, i.e. they ran back to back. The instance's interval is the median over its ranks. This is
 * what a benchmark loop measures per iteration (launch gaps included), unlike the kernel
 * duration. The analysis keeps, per (comm, func), the ranks' kernel times of the finished
 * instance with the highest seq; an instance is paired with it when one follows the other. */
#define TPUT_GAP_NS 200000
static void tput_pair(ncs_analysis_t *a, const stream_t *st, const tinst_t *x, const ncs_op_t *yo,
                      size_t yn, int y_first) {
  priv_t *P = an_priv(a);
  /* x is the kept instance; yo[0..yn) the new one (sorted by rank); y_first: y precedes x */
  NCS_XGROW(P->tiv, P->captiv, yn + x->ntk);
  size_t n = 0, q = 0;
  for (size_t p = 0; p < x->ntk; p++) { /* the earlier one drives, as the sorted pass did */
    const struct tk_s *t = &x->tk[p];
    while (q < yn && yo[q].rank < t->rank) q++;
    if (q >= yn) break;
    const ncs_op_t *o = &yo[q];
    if (o->rank != t->rank || !t->gpu || !has_gpu(o)) continue;
    uint64_t s0 = y_first ? o->gpu_start : t->start, e0 = y_first ? o->gpu_stop : t->stop;
    uint64_t s1 = y_first ? t->start : o->gpu_start;
    if (s1 <= s0 || s1 > e0 + TPUT_GAP_NS) continue;
    P->tiv[n++] = (int64_t)(s1 - s0);
  }
  if (!n) return;
  ncs_sort(P->tiv, n, sizeof *P->tiv, ncs_cmp_i64);
  double t = (double)ncs_qi64(P->tiv, n, 0.5);
  int nr = a->job->comms[st->comm].nranks;
  const char *func = st->func;
  uint64_t bytes = x->bytes; /* the same as the other's */
  ncs_an_bucket_t *b = an_bucket(a, st->comm, func, log2b(bytes), 0);
  qs_add(&P->bx[b - a->buckets].tbw, (double)bytes / t * ncs_bus_factor(func, nr));
  b->tput_n++;
}

static stream_t *stream_of(priv_t *P, uint32_t comm, const char *func) {
  uint64_t key = hm_mix2(comm, (uint64_t)(uintptr_t)func), idx;
  if (hm_get(&P->sm, key, &idx)) return &P->streams[idx];
  NCS_XGROW(P->streams, P->capstreams, P->nstreams + 1);
  stream_t *s = &P->streams[P->nstreams];
  memset(s, 0, sizeof *s);
  s->comm = comm, s->func = func;
  if (hm_put(&P->sm, key, P->nstreams++) != 0) ncs_oom();
  return s;
}

void an_throughput(ncs_analysis_t *a, const ncs_op_t *ops, size_t n, uint64_t bytes) {
  priv_t *P = an_priv(a);
  const ncs_op_t *I = &ops[0];
  stream_t *s = stream_of(P, I->comm, I->func);
  tinst_t *slot = NULL;
  for (int k = 0; k < TPUT_KEEP; k++) {
    tinst_t *x = &s->keep[k];
    if (!x->used) {
      if (!slot || slot->used) slot = x;
      continue;
    }
    if (x->bytes == bytes && x->seq + 1 == I->seq) tput_pair(a, s, x, ops, n, 0);
    if (x->bytes == bytes && I->seq + 1 == x->seq) tput_pair(a, s, x, ops, n, 1);
    if (!slot || (slot->used && x->seq < slot->seq)) slot = x; /* free, else the lowest seq */
  }
  if (slot->used && slot->seq > I->seq) return; /* older than all kept */
  slot->used = 1, slot->seq = I->seq, slot->bytes = bytes, slot->ntk = 0;
  NCS_XGROW(slot->tk, slot->captk, n);
  for (size_t k = 0; k < n; k++)
    slot->tk[slot->ntk++] = (struct tk_s){ops[k].rank, has_gpu(&ops[k]), ops[k].gpu_start, ops[k].gpu_stop};
}

void an_throughput_free(priv_t *P) {
  for (size_t i = 0; i < P->nstreams; i++)
    for (int k = 0; k < TPUT_KEEP; k++) free(P->streams[i].keep[k].tk);
  free(P->streams);
  hm_free(&P->sm);
}
