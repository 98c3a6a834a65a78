/* analyze.c - the report's analysis: the job model's streaming pass into the aggregates, then
 * the aggregates in the order of a sorted analysis (analyze.h; docs/report.md defines every
 * number, its "Memory" section the bounds). */
#include "analyze/analyze.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/findings.h"
#include "analyze/internal.h"
#include "util/mem.h"
#include "util/num.h"

static void on_instance(void *arg, const ncs_inst_t *in, const ncs_op_t *ops) { an_instance(arg, in, ops); }
static void on_p2p(void *arg, const ncs_op_t *op, const ncs_op_t *partner) { an_p2p(arg, op, partner); }
static void on_left(void *arg, const ncs_op_t *ops, size_t n) { an_left(arg, ops, n); }

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

/* Times slowest that a significant straggler's lateness explains are taken back (instance.c's
 * slow_late): a straggler's successors run late waiting for its data, and it sends last; neither
 * is slowness. Before the findings are built, so every output tests the same counts. */
static void slow_late(ncs_analysis_t *a) {
  uint32_t tests = 0;
  for (uint32_t k = 0; k < a->nranks; k++) tests += a->ranks[k].last_trials > 0;
  for (uint32_t k = 0; k < a->nranks; k++) {
    ncs_an_rank_t *r = &a->ranks[k];
    for (int e = 0; e < 4 && r->slow_late[e].n; e++) {
      const ncs_an_rank_t *l = NULL;
      for (uint32_t z = 0; z < a->nranks && !l; z++)
        if (a->ranks[z].comm == r->comm && a->ranks[z].rank == r->slow_late[e].rank) l = &a->ranks[z];
      if (!l || !ncs_find_test(a, l, 0, tests).significant) continue;
      uint32_t n = r->slow_late[e].n <= r->slowest ? r->slow_late[e].n : (uint32_t)r->slowest;
      r->slowest -= n, r->late_explained += n, r->excess -= r->slow_late[e].excess;
      for (int q = 0; q < 4; q++) r->q_slow[q] -= r->slow_late[e].q[q] <= r->q_slow[q] ? r->slow_late[e].q[q] : r->q_slow[q];
    }
  }
}

static void finish(ncs_analysis_t *a) {
  priv_t *P = an_priv(a);
  g_sort_a = a, g_sort_p = P;
  /* buckets, ranks, cells and mismatch examples in the order of the sorted analysis */
  uint32_t *bnew = reorder(a->buckets, P->bx, a->nbuckets, sizeof *a->buckets, sizeof *P->bx, cmp_bucket_idx);
  uint32_t *rnew = reorder(a->ranks, P->rkey, a->nranks, sizeof *a->ranks, sizeof *P->rkey, cmp_rank_idx);
  for (uint32_t k = 0; k < a->ncells; k++)
    a->cells[k].bucket = bnew[a->cells[k].bucket], a->cells[k].rank = rnew[a->cells[k].rank];
  free(reorder(a->cells, P->ckey, a->ncells, sizeof *a->cells, sizeof *P->ckey, cmp_cell_idx));
  free(reorder(a->mism, P->mkey, a->nmism, sizeof *a->mism, sizeof *P->mkey, cmp_mism_idx));
  free(bnew), free(rnew);
  an_bd_finish(a);
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    ncs_an_bucket_t *b = &a->buckets[k];
    bx_t *x = &P->bx[k];
    qs_sort(&x->lat), qs_sort(&x->bw), qs_sort(&x->abw), qs_sort(&x->skew), qs_sort(&x->tbw);
    qs_sort(&x->wq);
    b->lat_p50 = qs_q(&x->lat, .5), b->lat_p95 = qs_q(&x->lat, .95), b->lat_p99 = qs_q(&x->lat, .99);
    b->lat_min = x->lat.total ? x->lat.min : 0, b->lat_max = x->lat.total ? x->lat.max : 0;
    b->lat_p25 = qs_q(&x->lat, .25), b->lat_p75 = qs_q(&x->lat, .75);
    b->lat_ci = qs_median_ci(&x->lat, &b->lat_p50_lo, &b->lat_p50_hi);
    /* bandwidth percentiles are of the slow side: p95 = the value 95% of instances beat */
    b->busbw_p50 = qs_q(&x->bw, .5), b->busbw_p95 = qs_q(&x->bw, .05);
    b->busbw_p99 = qs_q(&x->bw, .01), b->algbw_p50 = qs_q(&x->abw, .5);
    b->skew_p50 = qs_q(&x->skew, .5), b->skew_max = x->skew.total ? x->skew.max : 0;
    b->tput_busbw_p50 = qs_q(&x->tbw, .5);
    b->sketch = qs_sketched(&x->lat) || qs_sketched(&x->tbw);
  }
  slow_late(a);
  an_stalls_finish(a);
}

/* the job model's coverage, summed over the files */
static void coverage(ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  static const unsigned op_types[] = {NCS_T_COLL, NCS_T_P2P, NCS_T_COLL_API, NCS_T_P2P_API};
  a->cov.files = j->nprocs - j->duplicates - j->other_job;
  a->cov.unreadable = j->unreadable, a->cov.damaged = j->damaged;
  a->cov.duplicates = j->duplicates, a->cov.other_job = j->other_job;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_cov_t *c = &j->procs[i].cov;
    for (unsigned k = 0; k <= NCS_JL_UNKNOWN; k++) a->cov.lost[k] += c->lost[k];
    /* each lost record once; the share is of the records that happened (the writer's, which
     * include those it could not write, plus those dropped before it) */
    for (size_t t = 0; t < sizeof op_types / sizeof op_types[0]; t++) {
      unsigned y = op_types[t];
      a->cov.op_calls += c->recorded[y] + c->lost_by_type[y];
      a->cov.op_lost += c->lost_by_type[y] + c->write_lost_by_type[y];
      a->cov.op_starts += c->starts[y];
    }
    a->cov.damaged_ops += c->damaged_ops;
    a->cov.comms_untracked += c->comms_untracked, a->cov.no_comm_ops += c->no_comm_ops;
    a->cov.evicted += c->evicted, a->cov.evicted_ops += c->evicted_ops;
    if (c->max_comms > a->cov.max_comms) a->cov.max_comms = c->max_comms;
    if (c->track_max && (!a->cov.track_max || c->track_max < a->cov.track_max)) a->cov.track_max = c->track_max;
    a->cov.write_errors += c->write_errors, a->cov.gaps += c->gaps, a->cov.gap_bytes += c->gap_bytes;
    a->cov.p2p_lost += c->lost_by_type[NCS_T_P2P];
    a->cov.groups += c->groups, a->cov.groups_unsampled += c->groups_unsampled;
    a->cov.no_footer += c->nolog_segs;
  }
  for (uint32_t i = 0; i < j->nlosses; i++) a->cov.windows[j->losses[i].kind]++;
}

ncs_analysis_t *ncs_analyze_path_opts(const char *path, const ncs_analyze_opts_t *opts, char *err,
                                      size_t errlen) {
  ncs_job_opts_t jo = {.retain = opts && opts->retain, .job = opts ? opts->job : 0,
                       .why = opts ? opts->why : NULL, .filter = opts ? opts->filter : NULL};
  ncs_job_t *j = ncs_job_open(path, &jo, err, errlen);
  if (!j) return NULL;
  ncs_analysis_t *a = ncs_xcalloc(1, sizeof *a);
  priv_t *P = ncs_xcalloc(1, sizeof *P);
  a->priv = P, a->job = j;
  P->retain = jo.retain;
  snprintf(a->path, sizeof a->path, "%s", path);
  a->damaged_files = j->unreadable + j->damaged;
  static const ncs_job_sink_t sink = {on_instance, on_p2p, on_left};
  ncs_job_stream(j, &sink, a);
  an_waits_finish(a); /* before finish() sorts the ranks the parked waits name */
  finish(a);
  coverage(a);
  an_gpu(a);
  return a;
}

ncs_analysis_t *ncs_analyze_path(const char *path, char *err, size_t errlen) {
  return ncs_analyze_path_opts(path, NULL, err, errlen);
}

void ncs_analysis_free(ncs_analysis_t *a) {
  if (!a) return;
  priv_t *P = a->priv;
  if (P) {
    an_bd_free(a);
    for (uint32_t k = 0; k < a->nbuckets; k++) {
      bx_t *x = &P->bx[k];
      qs_free(&x->lat), qs_free(&x->bw), qs_free(&x->abw), qs_free(&x->skew), qs_free(&x->tbw);
      qs_free(&x->wq);
    }
    free(P->bx), free(P->rkey), free(P->ckey);
    hm_free(&P->bm), hm_free(&P->rm), hm_free(&P->cm);
    an_throughput_free(P);
    free(P->durs), free(P->arr), free(P->tiv), free(P->fresh), free(P->insts), free(P->opwait);
    free(P);
  }
  free(a->buckets), free(a->ranks), free(a->cells), free(a->stalls);
  free(a->gpu.devs), free(a->gpu.replays);
  ncs_job_free(a->job);
  free(a);
}

int64_t ncs_an_op_wait(const ncs_analysis_t *a, size_t op) {
  const priv_t *P = a->priv;
  return op < P->nopwait ? P->opwait[op] : -1;
}

const ncs_an_instance_t *ncs_an_instance(const ncs_analysis_t *a, size_t i) {
  const priv_t *P = a->priv;
  const ncs_inst_t *in = ncs_job_inst(a->job, i);
  return in && in->id < P->ninsts ? &P->insts[in->id] : NULL;
}
