/* breakdown.c - the report's side of "where the time goes" (docs/report.md, "Breakdown"): the
 * model labels each collective instance (src/model/breakdown.c); here the instances' breakdowns
 * add up per bucket, which gets a label of its own, and every operation's links and NetPlugin
 * QPs add up per rank over the job. */
#include <stdlib.h>
#include <string.h>

#include "analyze/findings.h"
#include "analyze/internal.h"
#include "util/mem.h"
#include "util/num.h"

#define NCS_BD_ALPHA 0.01 /* as NCS_FIND_ALPHA (findings.h) */

void an_bd_instance(ncs_analysis_t *a, ncs_an_bucket_t *b, const ncs_inst_t *in) {
  const ncs_bd_t *d = &in->bd;
  b->bd_labels[d->label]++;
  a->bd_labels[d->label]++;
  if (d->label == NCS_BN_CANNOT) b->bd_why[d->why]++;
  if (d->links) {
    b->bd_n++, a->bd_instances++;
    b->bd_launch += d->launch, b->bd_span += d->span, b->bd_bytes += d->bytes;
    b->bd_queue += d->queue, b->bd_q_unknown += d->q_unknown;
    for (int p = 0; p < NCS_PH_N; p++) b->bd_ph[p] += d->ph[p];
  }
  if (d->wait_rank >= 0) {
    int created;
    uint64_t key = ((uint64_t)d->label << 32) | (uint32_t)d->wait_rank;
    uint64_t *c = hm_ref(&an_priv(a)->bx[b - a->buckets].wr, key, 0, &created);
    if (!c) ncs_oom();
    ++*c;
  }
}

static ncs_an_link_t *link_of(ncs_analysis_t *a, const ncs_op_t *o, const ncs_link_t *L) {
  priv_t *P = an_priv(a);
  uint64_t key = hm_mix(hm_mix(((uint64_t)o->comm << 32) | (uint32_t)o->rank) ^
                        ((uint64_t)(uint32_t)L->peer << 20) ^ ((uint64_t)L->channel << 1) ^ L->is_send);
  uint64_t idx;
  for (;; key++) { /* verified: the key is a hash */
    if (!hm_get(&P->lm, key, &idx)) break;
    ncs_an_link_t *x = &a->links[idx];
    if (x->comm == o->comm && x->rank == o->rank && x->peer == L->peer &&
        x->channel == L->channel && x->is_send == L->is_send)
      return x;
  }
  NCS_XGROW(a->links, P->caplinks, a->nlinks + 1);
  ncs_an_link_t *x = &a->links[a->nlinks];
  *x = (ncs_an_link_t){.comm = o->comm, .rank = o->rank, .peer = L->peer, .channel = L->channel,
                       .is_send = L->is_send};
  if (hm_put(&P->lm, key, a->nlinks++) != 0) ncs_oom();
  return x;
}

static ncs_an_netq_t *netq_of(ncs_analysis_t *a, const ncs_op_t *o, const ncs_netq_t *q) {
  priv_t *P = an_priv(a);
  uint64_t key = hm_mix(hm_mix(((uint64_t)o->comm << 32) | (uint32_t)o->rank) ^
                        hm_mix((uint64_t)q->qp) ^ ((uint64_t)(uint32_t)q->device << 2) ^ q->kind);
  uint64_t idx;
  for (;; key++) {
    if (!hm_get(&P->qm, key, &idx)) break;
    ncs_an_netq_t *x = &a->netqs[idx];
    if (x->comm == o->comm && x->rank == o->rank && x->kind == q->kind &&
        x->device == q->device && x->qp == q->qp)
      return x;
  }
  NCS_XGROW(a->netqs, P->capnetqs, a->nnetqs + 1);
  ncs_an_netq_t *x = &a->netqs[a->nnetqs];
  *x = (ncs_an_netq_t){.comm = o->comm, .rank = o->rank, .kind = q->kind, .device = q->device,
                       .qp = q->qp};
  if (hm_put(&P->qm, key, a->nnetqs++) != 0) ncs_oom();
  return x;
}

void an_bd_op(ncs_analysis_t *a, const ncs_op_t *o) {
  for (uint32_t l = 0; l < o->nlinks; l++) {
    const ncs_link_t *L = &o->links[l];
    ncs_an_link_t *x = link_of(a, o, L);
    x->ops++, x->steps += L->steps, x->bytes += L->bytes;
    if (L->t0 && L->t1 > L->t0) x->active += L->t1 - L->t0;
    for (int p = 0; p < NCS_PH_N; p++) x->ph[p] += L->ph[p];
  }
  for (uint32_t k = 0; k < o->nnetq; k++) {
    ncs_an_netq_t *x = netq_of(a, o, &o->netq[k]);
    x->events += o->netq[k].events, x->bytes += o->netq[k].bytes, x->ns += o->netq[k].ns;
  }
}

static int cmp_link(const void *x, const void *y) {
  const ncs_an_link_t *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->peer != b->peer) return a->peer < b->peer ? -1 : 1;
  if (a->channel != b->channel) return a->channel < b->channel ? -1 : 1;
  return (int)b->is_send - (int)a->is_send;
}
static int cmp_netq(const void *x, const void *y) {
  const ncs_an_netq_t *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  return (a->qp > b->qp) - (a->qp < b->qp);
}

/* each bucket's label: the one most of its labelled instances have, when at least 2/3 of them
 * do; cannot_tell with the most common reason when none is labelled */
void an_bd_finish(ncs_analysis_t *a) {
  priv_t *P = an_priv(a);
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    ncs_an_bucket_t *b = &a->buckets[k];
    b->bd_wait_rank = -1, b->bd_reason = NCS_BW_NONE;
    if (b->p2p) {
      b->bd_label = -1;
      continue;
    }
    uint64_t labelled = 0;
    int top = NCS_BN_LAUNCH;
    for (int l = NCS_BN_LAUNCH; l < NCS_BN_N; l++) {
      labelled += b->bd_labels[l];
      if (b->bd_labels[l] > b->bd_labels[top]) top = l;
    }
    if (!labelled) {
      b->bd_label = NCS_BN_CANNOT;
      for (int w = 1; w < NCS_BW_N; w++)
        if (b->bd_why[w] > b->bd_why[b->bd_reason]) b->bd_reason = w;
      continue;
    }
    b->bd_label = 3 * b->bd_labels[top] >= 2 * labelled ? top : NCS_BN_MIXED;
    if (b->bd_label == NCS_BN_MIXED) continue;
    /* the rank named: the one most of its instances of that label name, when it holds 2/3 of
     * them and chance (1/nranks per instance) explains that at most at NCS_FIND_ALPHA */
    const hmap_t *m = &P->bx[k].wr;
    uint64_t best = 0, n = b->bd_labels[b->bd_label];
    int32_t who = -1;
    for (size_t i = 0; i < m->cap; i++)
      if (m->used[i] && (m->keys[i] >> 32) == (uint64_t)b->bd_label &&
          (m->vals[i] > best || (m->vals[i] == best && (int32_t)(uint32_t)m->keys[i] < who)))
        best = m->vals[i], who = (int32_t)(uint32_t)m->keys[i];
    int32_t nr = a->job->comms[b->comm].nranks;
    if (who >= 0 && nr > 1 && 3 * best >= 2 * n && ncs_binom_sf(best, n, 1.0 / nr) <= NCS_BD_ALPHA)
      b->bd_wait_rank = who;
  }
  ncs_sort(a->links, a->nlinks, sizeof *a->links, cmp_link);
  ncs_sort(a->netqs, a->nnetqs, sizeof *a->netqs, cmp_netq);
  hm_free(&P->lm), hm_free(&P->qm);
}

/* the queue's share of the time from the arrivals to the last proxy step (docs/report.md) */
double ncs_bd_queue_share(const ncs_an_bucket_t *b) {
  int64_t t = b->bd_queue + b->bd_launch + b->bd_span;
  return t > 0 ? (double)b->bd_queue / (double)t : 0;
}

void an_bd_free(ncs_analysis_t *a) {
  priv_t *P = an_priv(a);
  for (uint32_t k = 0; P->bx && k < a->nbuckets; k++) hm_free(&P->bx[k].wr);
  hm_free(&P->lm), hm_free(&P->qm);
  free(a->links), free(a->netqs);
}
