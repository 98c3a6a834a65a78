/* ranges.c - user ranges in the job model (model.h ncs_job_range_t; docs/ranges.md, "What the
 * read side shows").
 *
 * The streaming pass hands every RANGES and RANGE_STATE record, and CUPTI's kernel records, to
 * ranges_item, and every operation as it leaves its file to ranges_op; ranges_finish computes each
 * range's numbers with trace/rangestat.h, per file, from:
 *   - the ranges (BEGIN/END; a BEGIN restated at a segment's or a flight slot's start with the id
 *     and begin time of a range already read is the same range);
 *   - the operations of the file, by the thread of the user's call, in the file's monotonic time
 *     (kept only for files that recorded a range: 40 bytes per operation);
 *   - CUPTI's kernel records that a LAUNCH record ties to a range, NCCL's own kernels left out
 *     (their time is the communication's), mapped to monotonic time with GPU_STATE's clock pair.
 * A range whose pop was lost, or that never ended, gets no numbers (NCS_RS_NO_END); one restated
 * as the first record of a flight file's window began before it: its numbers are lower bounds.
 */
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"
#include "util/num.h"

const char *const ncs_jr_names[3] = {"ended", "end_lost", "open"};

typedef struct {
  uint64_t corr;
  uint64_t start, end; /* monotonic */
} rkern_t;

typedef struct {
  ncs_rs_op_t *ops;
  size_t nops, capops;
  rkern_t *k;
  size_t nk, capk;
  int64_t cupti_off; /* CUPTI time - monotonic, from the last GPU_STATE clock pair; 0 none */
  int have_pair;
  uint32_t seg;      /* segment of cur[] */
  uint64_t cur[NCS_RK_MAX + 1]; /* the current segment's last RANGE_STATE counters */
  int cur_seen;
  uint64_t covered_from; /* flight file: its first record's time */
} rfile_t;

typedef struct {
  rfile_t *f;       /* per file */
  hmap_t byid;      /* (proc, id) -> range index + 1 (the latest range of that id) */
  hmap_t launch;    /* (proc, corr) -> range index + 1 */
  hmap_t mvals;     /* (proc, mid) -> index into range_values + 1 (the count in nv) */
  uint64_t *mid;    /* per range: its metrics id, 0 none */
  uint32_t *nv;     /* per range_values run start: how many */
  uint8_t *vreplay;
  size_t capranges, capvals, capnv;
  hmap_t thread_rank; /* (proc, thread) -> lowest rank + 1 */
} rng_t;

static rng_t *rng(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  if (!P->ranges) {
    rng_t *R = ncs_xcalloc(1, sizeof *R);
    R->f = ncs_xcalloc(j->nprocs ? j->nprocs : 1, sizeof *R->f);
    j->rprocs = ncs_xcalloc(j->nprocs ? j->nprocs : 1, sizeof *j->rprocs);
    P->ranges = R;
  }
  return P->ranges;
}

static uint64_t key2(uint32_t proc, uint64_t x) { return hm_mix2(proc, x); }

static const char *pstr(ncs_job_t *j, const char *s) { return ncs_pool_str(&j->strs, s ? s : ""); }

static void put(hmap_t *m, uint64_t k, uint64_t v) {
  if (hm_put(m, k, v) != 0) ncs_oom();
}

static void on_begin(ncs_job_t *j, rng_t *R, uint32_t proc, uint32_t seg, const ncs_range_rec_t *g,
                     int flight) {
  uint64_t k = key2(proc, g->id), at;
  /* the same range again: a restatement, read after its BEGIN or (a flight slot's keyframe restates
   * ranges its own records begin later) before it; the original's flags win */
  if (hm_get(&R->byid, k, &at)) {
    ncs_job_range_t *x = &j->ranges[at - 1];
    if (x->begin == ncs_job_time(j, proc, g->ts) && x->thread == g->thread) {
      if (!(g->flags & NCS_RF_RESTATED)) x->flags = (x->flags | g->flags) & ~(uint32_t)NCS_RF_RESTATED;
      return;
    }
  }
  size_t cap = R->capranges;
  NCS_XGROW(j->ranges, R->capranges, j->nranges + 1);
  if (R->capranges != cap) R->mid = ncs_xrealloc(R->mid, R->capranges * sizeof *R->mid);
  size_t i = j->nranges++;
  ncs_job_range_t *x = &j->ranges[i];
  *x = (ncs_job_range_t){.proc = proc, .seg = seg, .id = g->id, .parent = SIZE_MAX,
                         .thread = g->thread, .depth = g->depth, .flags = g->flags,
                         .state = NCS_JR_OPEN, .name = pstr(j, g->name), .domain = pstr(j, g->domain),
                         .rank = -1, .begin = ncs_job_time(j, proc, g->ts)};
  /* the first record of a flight window restating a range: it began before the window */
  if (flight && (g->flags & NCS_RF_RESTATED)) x->before = 1;
  if (g->parent && hm_get(&R->byid, key2(proc, g->parent), &at)) x->parent = at - 1;
  R->mid[i] = g->mid;
  put(&R->byid, k, i + 1);
  j->rprocs[proc].ranges++;
}

static void on_end(ncs_job_t *j, rng_t *R, uint32_t proc, const ncs_range_rec_t *g) {
  uint64_t at;
  if (!hm_get(&R->byid, key2(proc, g->id), &at)) return;
  ncs_job_range_t *x = &j->ranges[at - 1];
  if (x->state != NCS_JR_OPEN) return; /* a restated END repeats the first */
  if (g->flags & NCS_RF_END_LOST) {
    x->state = NCS_JR_END_LOST; /* its time is when the loss was noticed: not an end */
  } else {
    x->state = NCS_JR_ENDED;
    x->end = ncs_job_time(j, proc, g->ts);
  }
}

static void on_metrics(ncs_job_t *j, rng_t *R, uint32_t proc, const ncs_range_rec_t *g) {
  if (!g->mid || !g->nvalues) return;
  uint32_t n = g->nvalues > NCS_RANGE_MAX_METRICS ? NCS_RANGE_MAX_METRICS : g->nvalues;
  size_t v = j->nrange_values;
  NCS_XGROW(j->range_values, R->capvals, v + n);
  memcpy(j->range_values + v, g->values, n * sizeof *g->values);
  j->nrange_values += n;
  size_t cap = R->capnv;
  NCS_XGROW(R->nv, R->capnv, v + n);
  if (R->capnv != cap) R->vreplay = ncs_xrealloc(R->vreplay, R->capnv);
  R->nv[v] = n, R->vreplay[v] = (g->flags & NCS_RF_REPLAY) != 0;
  put(&R->mvals, key2(proc, g->mid), v + 1);
}

static void on_state(ncs_job_t *j, rng_t *R, uint32_t proc, uint32_t seg, const ncs_range_state_t *s) {
  rfile_t *F = &R->f[proc];
  ncs_job_rproc_t *rp = &j->rprocs[proc];
  if (F->cur_seen && F->seg != seg) /* a new segment: the last one's counters are its totals */
    for (int k = 0; k <= NCS_RK_MAX; k++) rp->counters[k] += F->cur[k];
  memset(F->cur, 0, sizeof F->cur);
  for (uint32_t i = 0; i < s->ncounters; i++)
    if (s->keys[i] <= NCS_RK_MAX) F->cur[s->keys[i]] = s->values[i];
  F->seg = seg, F->cur_seen = 1;
  rp->seen = 1, rp->nvtx = s->nvtx, rp->mx_state = s->mx_state, rp->reason = pstr(j, s->reason);
  if (s->nmetrics) {
    rp->nmetrics = s->nmetrics > NCS_RANGE_MAX_METRICS ? NCS_RANGE_MAX_METRICS : s->nmetrics;
    for (uint32_t m = 0; m < rp->nmetrics; m++)
      rp->metric[m] = pstr(j, s->metric[m]), rp->metric_type[m] = s->metric_type[m];
  }
}

static void on_gpu(ncs_job_t *j, rng_t *R, uint32_t proc, const ncs_item_t *it) {
  rfile_t *F = &R->f[proc];
  if (it->what == NCS_ITEM_GPU_STATE) {
    const ncs_gpu_state_t *g = &it->gpu_state;
    if (g->state == NCS_GPU_ACTIVE) j->rprocs[proc].have_kernels = 1;
    if (g->clock_mono_ns && g->clock_cupti_ns)
      F->cupti_off = (int64_t)(g->clock_cupti_ns - g->clock_mono_ns), F->have_pair = 1;
    return;
  }
  const ncs_gpu_rec_t *g = &it->gpu;
  /* a compute kernel: CUPTI's record of a kernel no NCCL KernelLaunch carried */
  if (g->kind != NCS_GR_KERNEL || g->launch || !(j->rprocs[proc].seen || j->rprocs[proc].ranges)) return;
  if (g->name && !strncmp(g->name, "nccl", 4)) return;
  NCS_XGROW(F->k, F->capk, F->nk + 1);
  rkern_t *k = &F->k[F->nk++];
  k->corr = g->corr, k->start = k->end = 0;
  if (F->have_pair && g->start && g->end >= g->start)
    k->start = g->start - (uint64_t)F->cupti_off, k->end = g->end - (uint64_t)F->cupti_off;
}

void ranges_item(ncs_job_t *j, uint32_t proc, uint32_t seg, const ncs_item_t *it, int flight) {
  rng_t *R = rng(j);
  rfile_t *F = &R->f[proc];
  if (flight && !F->covered_from) F->covered_from = j->procs[proc].first_ns;
  switch (it->what) {
  case NCS_ITEM_RANGE_STATE: on_state(j, R, proc, seg, &it->range_state); break;
  case NCS_ITEM_GPU:
  case NCS_ITEM_GPU_STATE: on_gpu(j, R, proc, it); break;
  case NCS_ITEM_RANGE:
    switch (it->range.kind) {
    case NCS_RR_BEGIN: on_begin(j, R, proc, seg, &it->range, flight); break;
    case NCS_RR_END: on_end(j, R, proc, &it->range); break;
    case NCS_RR_MARK: j->rprocs[proc].marks++; break;
    case NCS_RR_METRICS: on_metrics(j, R, proc, &it->range); break;
    case NCS_RR_LAUNCH: {
      uint64_t at;
      if (hm_get(&R->byid, key2(proc, it->range.id), &at)) put(&R->launch, key2(proc, it->range.corr), at);
      break;
    }
    default: break;
    }
    break;
  default: break;
  }
}

void ranges_op(ncs_job_t *j, const ncs_op_t *o) {
  if (!j->rprocs || !j->rprocs[o->proc].ranges) return; /* no range in its file (yet) */
  rng_t *R = rng(j);
  rfile_t *F = &R->f[o->proc];
  int64_t off = j->procs[o->proc].job_off;
  NCS_XGROW(F->ops, F->capops, F->nops + 1);
  ncs_rs_op_t *x = &F->ops[F->nops++];
  int32_t n = o->p2p ? 1 : j->comms[o->comm].nranks;
  *x = (ncs_rs_op_t){.thread = o->thread, .api_ns = (uint64_t)(o->arrival - off), .p2p = o->p2p,
                     .bytes = o->bytes};
  x->bus_bytes = (double)o->bytes * (o->p2p ? 1.0 : ncs_bus_factor(o->func, n));
  if (o->kstart && o->kstop >= o->kstart)
    x->gpu_start = (uint64_t)(o->kstart - off), x->gpu_end = (uint64_t)(o->kstop - off);
  uint64_t k = key2(o->proc, o->thread), r;
  if (!hm_get(&R->thread_rank, k, &r) || (int64_t)r - 1 > o->rank) put(&R->thread_rank, k, (uint64_t)o->rank + 1);
}

/* the lowest rank file proc recorded, -1 none */
static int32_t file_rank(const ncs_job_t *j, uint32_t proc) {
  int32_t best = -1;
  for (uint32_t m = 0; m < j->nmembers; m++)
    if (j->members[m].proc == proc && (best < 0 || j->members[m].rank < best)) best = j->members[m].rank;
  return best;
}

static int cmp_range(const void *a, const void *b) {
  const ncs_job_range_t *x = a, *y = b;
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* the numbers of file proc's ranges [a, b) of j->ranges */
static void file_stats(ncs_job_t *j, rng_t *R, uint32_t proc, size_t a, size_t b) {
  rfile_t *F = &R->f[proc];
  size_t n = b - a;
  int64_t off = j->procs[proc].job_off;
  ncs_rs_range_t *rr = ncs_xcalloc(n ? n : 1, sizeof *rr);
  for (size_t i = 0; i < n; i++) {
    const ncs_job_range_t *x = &j->ranges[a + i];
    rr[i] = (ncs_rs_range_t){.id = a + i + 1, .parent = x->parent == SIZE_MAX ? 0 : x->parent + 1,
                             .thread = x->thread, .startend = (x->flags & NCS_RF_STARTEND) != 0,
                             .begin_ns = (uint64_t)(x->begin - off),
                             .end_ns = x->end ? (uint64_t)(x->end - off) : 0};
  }
  ncs_rs_kernel_t *k = ncs_xcalloc(F->nk ? F->nk : 1, sizeof *k);
  size_t nk = 0;
  for (size_t i = 0; i < F->nk; i++) {
    uint64_t at;
    if (!hm_get(&R->launch, key2(proc, F->k[i].corr), &at)) continue; /* launched outside every range */
    k[nk++] = (ncs_rs_kernel_t){.range = at, .start = F->k[i].start, .end = F->k[i].end};
  }
  ncs_rs_stat_t *st = ncs_xcalloc(n ? n : 1, sizeof *st);
  if (ncs_rs_compute(rr, n, F->ops, F->nops, k, nk, j->rprocs[proc].have_kernels, F->covered_from, st) != 0)
    ncs_oom();
  int32_t frank = file_rank(j, proc);
  for (size_t i = 0; i < n; i++) {
    ncs_job_range_t *x = &j->ranges[a + i];
    x->st = st[i];
    if (x->before) x->st.flags |= NCS_RS_PARTIAL;
    uint64_t r;
    x->rank = hm_get(&R->thread_rank, key2(proc, x->thread), &r) ? (int32_t)(r - 1) : frank;
  }
  free(rr), free(k), free(st);
}

void ranges_finish(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  if (!P->ranges) return;
  rng_t *R = P->ranges;
  for (uint32_t p = 0; p < j->nprocs; p++) {
    ncs_job_rproc_t *rp = &j->rprocs[p];
    if (R->f[p].cur_seen)
      for (int k = 0; k <= NCS_RK_MAX; k++) rp->counters[k] += R->f[p].cur[k];
    rp->lost = rp->counters[NCS_RK_DROPPED] + rp->counters[NCS_RK_NO_SLOT] +
               rp->counters[NCS_RK_UNTRACKED] + rp->counters[NCS_RK_WRITE_LOST];
  }
  /* metric values, while indexes are those of reading */
  for (size_t i = 0; i < j->nranges; i++) {
    uint64_t v;
    ncs_job_range_t *x = &j->ranges[i];
    if (R->mid[i] && hm_get(&R->mvals, key2(x->proc, R->mid[i]), &v))
      x->values = v - 1, x->nvalues = R->nv[v - 1], x->replay = R->vreplay[v - 1];
  }
  /* by file, then begin time: parents and the maps are renumbered */
  size_t n = j->nranges;
  typedef struct {
    ncs_job_range_t r; /* first: cmp_range compares it */
    size_t at;
  } pr_t;
  pr_t *v = ncs_xcalloc(n ? n : 1, sizeof *v);
  for (size_t i = 0; i < n; i++) v[i].r = j->ranges[i], v[i].at = i;
  ncs_sort(v, n, sizeof *v, cmp_range); /* r is the first member */
  size_t *newi = ncs_xcalloc(n ? n : 1, sizeof *newi);
  for (size_t i = 0; i < n; i++) newi[v[i].at] = i;
  for (size_t i = 0; i < n; i++) {
    j->ranges[i] = v[i].r;
    if (j->ranges[i].parent != SIZE_MAX) j->ranges[i].parent = newi[j->ranges[i].parent];
  }
  for (size_t s = 0; s < R->launch.cap; s++)
    if (R->launch.used[s]) R->launch.vals[s] = newi[R->launch.vals[s] - 1] + 1;
  for (size_t s = 0; s < R->byid.cap; s++)
    if (R->byid.used[s]) R->byid.vals[s] = newi[R->byid.vals[s] - 1] + 1;
  free(v), free(newi);
  for (size_t a = 0; a < n;) {
    size_t b = a;
    while (b < n && j->ranges[b].proc == j->ranges[a].proc) b++;
    file_stats(j, R, j->ranges[a].proc, a, b);
    a = b;
  }
}

void ranges_free(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  rng_t *R = P->ranges;
  if (R) {
    for (uint32_t p = 0; p < j->nprocs; p++) free(R->f[p].ops), free(R->f[p].k);
    free(R->f), free(R->mid), free(R->nv), free(R->vreplay);
    hm_free(&R->byid), hm_free(&R->launch), hm_free(&R->mvals), hm_free(&R->thread_rank);
    free(R);
    P->ranges = NULL;
  }
  free(j->ranges), free(j->rprocs), free(j->range_values);
  j->ranges = NULL, j->rprocs = NULL, j->range_values = NULL;
  j->nranges = j->nrange_values = 0;
}
