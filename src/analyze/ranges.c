/* ranges.c - user ranges summed per name, and per name and rank (ranges.h). */
#include "analyze/ranges.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/hmap.h"
#include "util/mem.h"
#include "util/num.h"

static int measured(const ncs_job_range_t *x) {
  return x->state == NCS_JR_ENDED && !(x->st.flags & (NCS_RS_NO_END | NCS_RS_PARTIAL));
}

static void add(ncs_range_agg_t *a, const ncs_job_range_t *x) {
  a->ranges++;
  if (x->state != NCS_JR_ENDED || (x->st.flags & NCS_RS_NO_END)) {
    a->no_end++;
    return;
  }
  if (x->st.flags & NCS_RS_PARTIAL) {
    a->partial++;
    return;
  }
  const ncs_rs_stat_t *s = &x->st;
  a->measured++;
  a->wall_ns += s->wall_ns;
  if (s->wall_ns > a->wall_max_ns) a->wall_max_ns = s->wall_ns;
  a->colls += s->colls, a->p2ps += s->p2ps, a->ops_without_gpu += s->ops_without_gpu;
  a->bytes += s->bytes, a->bus_bytes += s->bus_bytes, a->comm_ns += s->comm_ns;
  a->comm_partial += (s->flags & NCS_RS_COMM_PARTIAL) != 0;
  if (!(s->flags & NCS_RS_NO_KERNELS)) a->exposed_known++, a->compute_ns += s->compute_ns, a->exposed_ns += s->exposed_ns;
}

/* hardware metrics of the measured ranges in idx[0..n) (one metric list, else none) */
static void metrics(const ncs_job_t *j, ncs_range_agg_t *a, const size_t *idx, size_t n) {
  const ncs_job_rproc_t *list = NULL;
  size_t with = 0;
  for (size_t i = 0; i < n; i++) {
    const ncs_job_range_t *x = &j->ranges[idx[i]];
    if (!measured(x) || !x->nvalues) continue;
    const ncs_job_rproc_t *rp = &j->rprocs[x->proc];
    if (x->nvalues != rp->nmetrics) return;
    if (list && (list->nmetrics != rp->nmetrics ||
                 memcmp(list->metric, rp->metric, rp->nmetrics * sizeof *rp->metric)))
      return; /* files with different lists: not combined */
    list = rp, with++;
  }
  a->dram_gbps = NAN;
  if (!with) return;
  uint32_t nm = list->nmetrics;
  double *v = ncs_xcalloc(with * nm, sizeof *v);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const ncs_job_range_t *x = &j->ranges[idx[i]];
    if (measured(x) && x->nvalues) memcpy(v + k++ * nm, j->range_values + x->values, nm * sizeof *v);
  }
  ncs_rs_aggregate(list->metric, list->metric_type, nm, v, with, a->value, a->how);
  memcpy(a->metric, list->metric, nm * sizeof *a->metric);
  a->nmetrics = nm, a->with_values = with;
  a->dram_gbps = ncs_rs_dram_gbps(list->metric, nm, a->value);
  free(v);
}

static uint64_t wall_of(const ncs_range_agg_t *a) { return a->wall_ns; }

static int cmp_agg(const void *x, const void *y) {
  const ncs_range_agg_t *a = x, *b = y;
  if (wall_of(a) != wall_of(b)) return wall_of(a) > wall_of(b) ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* the indexes of ranges, grouped: by name (rank -1) or by (name, rank) */
static ncs_range_agg_t *group(const ncs_job_t *j, int by_rank, size_t *nout) {
  hmap_t m = {0};
  size_t n = 0, cap = 0;
  ncs_range_agg_t *out = NULL;
  size_t **idx = NULL, *nidx = NULL, *capidx = NULL;
  for (size_t i = 0; i < j->nranges; i++) {
    const ncs_job_range_t *x = &j->ranges[i];
    int32_t rank = by_rank ? x->rank : -1;
    uint64_t key = hm_mix2((uint64_t)(uintptr_t)x->name, (uint64_t)(uint32_t)rank), at;
    if (!hm_get(&m, key, &at)) {
      size_t c = cap;
      NCS_XGROW(out, cap, n + 1);
      if (cap != c) {
        idx = ncs_xrealloc(idx, cap * sizeof *idx);
        nidx = ncs_xrealloc(nidx, cap * sizeof *nidx);
        capidx = ncs_xrealloc(capidx, cap * sizeof *capidx);
      }
      out[n] = (ncs_range_agg_t){.name = x->name, .rank = rank, .dram_gbps = NAN};
      idx[n] = NULL, nidx[n] = capidx[n] = 0;
      if (hm_put(&m, key, n + 1) != 0) ncs_oom();
      at = ++n;
    }
    ncs_range_agg_t *a = &out[at - 1];
    add(a, x);
    NCS_XGROW(idx[at - 1], capidx[at - 1], nidx[at - 1] + 1);
    idx[at - 1][nidx[at - 1]++] = i;
  }
  for (size_t g = 0; g < n; g++) {
    ncs_range_agg_t *a = &out[g];
    a->bus_gbps = a->comm_ns ? a->bus_bytes / (double)a->comm_ns : 0;
    metrics(j, a, idx[g], nidx[g]);
    hmap_t rk = {0};
    for (size_t i = 0; i < nidx[g]; i++) {
      int c;
      if (!hm_ref(&rk, (uint64_t)(uint32_t)j->ranges[idx[g][i]].rank, 0, &c)) ncs_oom();
      if (c) a->ranks++;
    }
    hm_free(&rk);
    free(idx[g]);
  }
  free(idx), free(nidx), free(capidx);
  hm_free(&m);
  *nout = n;
  return out;
}

static int cmp_rank(const void *x, const void *y) {
  const ncs_range_agg_t *a = x, *b = y;
  int c = strcmp(a->name, b->name);
  if (c) return c;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

int ncs_ranges_build(const ncs_job_t *j, ncs_ranges_t *r) {
  memset(r, 0, sizeof *r);
  for (uint32_t p = 0; j->rprocs && p < j->nprocs; p++) {
    const ncs_job_rproc_t *rp = &j->rprocs[p];
    if (!rp->seen && !rp->ranges) continue;
    r->files++;
    r->marks += rp->marks;
    r->lost += rp->lost, r->begin_lost += rp->counters[NCS_RK_BEGIN_LOST];
    r->dropped += rp->counters[NCS_RK_DROPPED], r->no_slot += rp->counters[NCS_RK_NO_SLOT];
    r->untracked += rp->counters[NCS_RK_UNTRACKED], r->write_lost += rp->counters[NCS_RK_WRITE_LOST];
    if (rp->ranges && !rp->have_kernels) r->files_no_kernels++;
  }
  for (size_t i = 0; i < j->nranges; i++) {
    const ncs_job_range_t *x = &j->ranges[i];
    r->ranges++;
    r->end_lost += x->state == NCS_JR_END_LOST;
    r->open += x->state == NCS_JR_OPEN;
    r->partial += x->state == NCS_JR_ENDED && (x->st.flags & NCS_RS_PARTIAL);
  }
  r->by_name = group(j, 0, &r->nnames);
  r->by_rank = group(j, 1, &r->nrank);
  /* by_rank follows by_name's order: name rank within by_name, then rank */
  ncs_sort(r->by_name, r->nnames, sizeof *r->by_name, cmp_agg);
  ncs_sort(r->by_rank, r->nrank, sizeof *r->by_rank, cmp_rank);
  /* stable regroup in by_name's order */
  ncs_range_agg_t *t = ncs_xcalloc(r->nrank ? r->nrank : 1, sizeof *t);
  size_t k = 0;
  for (size_t i = 0; i < r->nnames; i++)
    for (size_t q = 0; q < r->nrank; q++)
      if (r->by_rank[q].name == r->by_name[i].name) t[k++] = r->by_rank[q];
  free(r->by_rank);
  r->by_rank = t;
  return 0;
}

void ncs_ranges_free(ncs_ranges_t *r) {
  free(r->by_name), free(r->by_rank);
  memset(r, 0, sizeof *r);
}
