/* instance.c - the numbers of one collective instance (docs/report.md, "Per rank and
 * instance"): its latency and bandwidth, who arrived last and who was slowest, mismatched
 * arguments, GPU times that cannot be right; added to the aggregates as it finishes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "util/mem.h"
#include "util/num.h"

/* the evidence kept: the NCS_AN_EVIDENCE largest lateness, ties to the first instance in
 * (func, seq) order, whatever order the instances finish in */
static int ev_before(const ncs_an_evidence_t *x, const ncs_an_evidence_t *y) {
  if (x->late != y->late) return x->late > y->late;
  int c = strcmp(x->func, y->func);
  return c ? c < 0 : x->seq < y->seq;
}
static void add_evidence(ncs_an_rank_t *r, const ncs_op_t *o, int64_t late) {
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
static void add_mismatch(ncs_analysis_t *a, const ncs_op_t *x, const ncs_op_t *y, int32_t nodd,
                         const char *what) {
  priv_t *P = an_priv(a);
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

/* Same count, datatype (interned: pointer equality) and, for rooted functions, root. When one of
 * the two lost its CollApi record, its count and datatype are NCCL's (bytes and ncclInt8 for
 * AllGather and Broadcast): only the byte counts can be compared then. */
static int same_args(const ncs_op_t *x, const ncs_op_t *y) {
  if (x->api != y->api ? x->bytes != y->bytes : x->count != y->count || x->dtype != y->dtype) return 0;
  return !((ncs_is_func(x->func, "Broadcast") || ncs_is_func(x->func, "Reduce")) && x->root != y->root);
}

/* Mismatch of one instance ops[0..n) (sorted by rank): the reference is what most ranks passed
 * (Boyer-Moore majority vote, verified), else the lowest rank's; rank_a is the first rank that
 * differs from it, rank_b the first rank that agrees, nodd how many differ. */
static void check_mismatch(ncs_analysis_t *a, const ncs_op_t *ops, size_t n) {
  size_t cand = 0, votes = 0, support = 0;
  for (size_t k = 0; k < n; k++) {
    if (!votes) cand = k, votes = 1;
    else if (same_args(&ops[k], &ops[cand])) votes++;
    else votes--;
  }
  for (size_t k = 0; k < n; k++) support += same_args(&ops[k], &ops[cand]);
  const ncs_op_t *ref = 2 * support > n ? &ops[cand] : &ops[0];
  const ncs_op_t *odd = NULL;
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
static int gpu_suspect(ncs_analysis_t *a, const ncs_op_t *ops, size_t n) {
  priv_t *P = an_priv(a);
  const char *f = ops[0].func;
  if (n < 2 || !ncs_all_depend(f))
    return 0;
  int64_t m1 = INT64_MIN, m2 = INT64_MIN; /* the two latest kernel starts */
  for (size_t k = 0; k < n; k++) {
    int64_t ks = ops[k].kstart;
    if (!ks) return 0; /* a rank without GPU times: nothing to compare */
    if (ks > m1) m2 = m1, m1 = ks;
    else if (ks > m2) m2 = ks;
  }
  int64_t worst = INT64_MIN;
  for (size_t k = 0; k < n; k++) {
    int64_t ks = ops[k].kstart, others = ks == m1 ? m2 : m1;
    int64_t gap = others - (ks + (int64_t)(ops[k].gpu_stop - ops[k].gpu_start));
    if (gap > worst) worst = gap;
  }
  if (worst <= NCS_AN_GPU_TOL_NS) return 0;
  a->gpu_suspect++;
  if (a->ngsus >= sizeof a->gsus / sizeof a->gsus[0]) return 1;
  int64_t *l = P->arr, *sorted = P->arr + n; /* free here: the caller fills arr later */
  for (size_t k = 0; k < n; k++) l[k] = ops[k].kstart - ops[k].arrival;
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

/* the durations of an instance's ranks: largest (its latency, and where it came from), smallest
 * positive (the transfer time), median; the latest kernel start; per rank its transfer time (its
 * duration less its wait for the last rank's kernel, P->durs), largest and median */
typedef struct {
  int64_t dmax, dmin, dmed, kmax, tmax, tmed;
  uint32_t ntmax; /* ranks whose transfer time is tmax: the slowest is one rank, or none (a tie) */
  int64_t late_by; /* how much later the last rank arrived than the median arrival */
  size_t late;      /* that rank's index */
  int src;
  int slow_counted; /* complete with 3+ ranks: the slowest is counted */
} durs_t;

/* a rank's kernel cannot exchange data before the last rank's kernel started: that wait, within
 * its duration (without GPU times, its wait for the last arrival) */
static int64_t kernel_wait(const ncs_inst_t *in, const ncs_op_t *o, int64_t kmax) {
  int64_t w = o->kstart && kmax ? kmax - o->kstart : in->last_arrival - o->arrival;
  return w > o->duration ? o->duration : w < 0 ? 0 : w;
}

static durs_t durations(priv_t *P, const ncs_inst_t *in, const ncs_op_t *ops, size_t n) {
  durs_t d = {.dmax = -1, .dmin = INT64_MAX, .tmax = -1, .src = NCS_SRC_ENQUEUE_HOST};
  for (size_t k = 0; k < n; k++) {
    int64_t x = ops[k].duration;
    P->arr[k] = x;
    if (x > d.dmax) d.dmax = x, d.src = ops[k].timing;
    if (x > 0 && x < d.dmin) d.dmin = x;
    if (ops[k].kstart > d.kmax) d.kmax = ops[k].kstart;
  }
  ncs_sort(P->arr, n, sizeof *P->arr, ncs_cmp_i64);
  d.dmed = ncs_qi64(P->arr, n, 0.5);
  for (size_t k = 0; k < n; k++) {
    P->durs[k] = P->arr[k] = ops[k].duration - kernel_wait(in, &ops[k], d.kmax);
    if (P->durs[k] > d.tmax) d.tmax = P->durs[k], d.ntmax = 0;
    d.ntmax += P->durs[k] == d.tmax;
  }
  ncs_sort(P->arr, n, sizeof *P->arr, ncs_cmp_i64);
  d.tmed = ncs_qi64(P->arr, n, 0.5);
  d.late = 0;
  for (size_t k = 0; k < n; k++) {
    P->arr[k] = ops[k].arrival;
    if (ops[k].arrival > ops[d.late].arrival) d.late = k;
  }
  ncs_sort(P->arr, n, sizeof *P->arr, ncs_cmp_i64);
  d.late_by = n > 1 ? ops[d.late].arrival - ncs_qi64(P->arr, n, 0.5) : 0;
  return d;
}

/* the quarter of the job's time a moment falls in (0..3) */
static int quarter(const ncs_analysis_t *a, int64_t t) {
  int64_t span = a->job->t_last - a->job->t_first;
  if (span <= 0 || t <= a->job->t_first) return 0;
  if (t >= a->job->t_last) return 3;
  return (int)((double)(t - a->job->t_first) * 4 / (double)span);
}

/* one rank's share: arrival, in-kernel wait, launch delay, last arrival, slowest (by its transfer
 * time: a rank that waited for late peers took long, but is not slow) */
static void rank_share(ncs_analysis_t *a, const ncs_inst_t *in, const ncs_op_t *ops, size_t k,
                       size_t lastk, const durs_t *d, uint32_t bi, ncs_an_instance_t *x) {
  const ncs_op_t *o = &ops[k];
  ncs_an_rank_t *r = an_rank(a, o);
  int64_t t = o->arrival, last = in->last_arrival, xfer = an_priv(a)->durs[k];
  r->instances++, r->gsrc[o->gsrc]++;
  r->kwait += o->duration - xfer, r->transfer += xfer;
  if (o->kstart) { /* until its previous kernel ended it queued, then it launched */
    int64_t from = t;
    if (o->prev_end > from && o->kstart > from) {
      int64_t q = (o->prev_end < o->kstart ? o->prev_end : o->kstart) - from;
      r->queue_sum += q, from += q;
    }
    r->launch_sum += o->kstart - from, r->launch_n++;
  }
  r->last_trials += x->last_counted, r->slow_trials += d->slow_counted;
  int q = quarter(a, in->last_arrival); /* when the instance could run */
  r->q_last_trials[q] += (uint32_t)x->last_counted, r->q_slow_trials[q] += (uint32_t)d->slow_counted;
  int is_last = k == lastk && x->last_counted;
  if (is_last) {
    r->last++, r->q_last[q]++;
    r->wait_caused += x->wait_caused;
    add_evidence(r, o, x->skew);
  }
  if (x->wait_gpu) r->wait_suffered_gpu += d->kmax - o->kstart;
  if (x->caused_rank == o->rank) {
    if (x->wait_gpu)
      r->wait_caused_gpu += x->caused_gpu, r->caused_gpu_n++;
    else
      r->wait_caused_host += x->wait_caused, r->caused_host_n++;
  }
  /* A rank that arrived last, by more than the clock error after the median arrival: the
   * others' data waits for it, and for its data, so from then on they run late in the order of
   * the data's path (its ring successor first: its kernels start late and end late), and it
   * sends last. A slowest rank whose excess that lateness could explain is noted by the late
   * rank; an_slow_late takes it back when that rank turns out a straggler (docs/report.md,
   * "Findings"). */
  int confounded = d->late_by > a->job->error && xfer - d->tmed <= d->late_by;
  if (d->slow_counted && xfer == d->tmax && d->ntmax == 1 && xfer > d->tmed + d->tmed / 20) {
    r->slowest++, r->q_slow[q]++, r->excess += xfer - d->tmed;
    for (int e = 0; confounded && e < 4; e++) /* by whose lateness (a 5th late rank: not noted) */
      if (!r->slow_late[e].n || r->slow_late[e].rank == ops[d->late].rank) {
        r->slow_late[e].rank = ops[d->late].rank, r->slow_late[e].n++, r->slow_late[e].q[q]++;
        r->slow_late[e].excess += xfer - d->tmed;
        break;
      }
    if (x->slowest_rank < 0) x->slowest_rank = o->rank, x->slowest_excess = xfer - d->tmed;
  }
  an_cell(a, bi, (uint32_t)(r - a->ranks), o, t - in->first_arrival, last - t, is_last);
}

static void retain_numbers(ncs_analysis_t *a, const ncs_inst_t *in, const ncs_an_instance_t *x) {
  priv_t *P = an_priv(a);
  NCS_XGROW(P->insts, P->capinsts, in->id + 1);
  P->insts[in->id] = *x;
  if (in->id >= P->ninsts) P->ninsts = in->id + 1;
}

/* How long a rank newly waited for an instance's last arrival. NCCL calls return at once, so a
 * rank enqueues ahead and its waits for successive instances overlap: summed, they could exceed
 * the job's wall time. A rank's waiting is the union of its [arrival, last arrival] intervals;
 * taken in the rank's call order (the last arrivals come in that order too), a mark (the union's
 * end) makes it exact, and an instance adds the part of the interval that is new. The model
 * hands instances out as they finish, which is not always call order: an operation whose
 * previous one (ncs_op_t.prev_id) is not counted yet waits here (parked) for its turn. The live
 * metrics count the same way (src/metrics/agg.c). */
typedef struct park_s {
  uint32_t ri, proc, seg; /* its rank's index; its file and segment */
  uint64_t id, prev;      /* its own id (the next one's prev_id), its prev_id */
  int64_t arr, last;
  uint32_t by;            /* index + 1 of the rank whose waiting caused grows by as much, 0 none */
  uint64_t inst;          /* its instance's id (retained numbers), UINT64_MAX none */
  uint8_t skip;           /* left out by the filter: nothing to count */
  size_t opi;             /* its retained operation's index (ncs_an_op_wait), SIZE_MAX none */
  uint8_t gpu;            /* its instance's waits are measured GPU-side: by's host part is not */
  uint8_t live;           /* parked (else a free entry) */
} park_t;

static uint64_t park_key(uint32_t ri, uint64_t id) {
  return (uint64_t)ri << 44 | (id & ((1ull << 44) - 1));
}

/* counts one wait, then the parked ones it let through; returns the first one's fresh waiting */
static int64_t wait_count(ncs_analysis_t *a, park_t w) {
  priv_t *P = an_priv(a);
  int64_t first = -1;
  for (;;) {
    ncs_an_rank_t *r = &a->ranks[w.ri];
    int64_t fresh = 0;
    if (!w.skip) {
      int64_t from = w.arr > r->wait_mark ? w.arr : r->wait_mark;
      fresh = w.last > from ? w.last - from : 0;
      if (w.last > r->wait_mark) r->wait_mark = w.last;
      r->wait_suffered += fresh;
    }
    if (w.opi != SIZE_MAX && !w.skip) { /* retained: each operation's part (ncs_an_op_wait) */
      if (w.opi >= P->nopwait) {
        NCS_XGROW(P->opwait, P->capopwait, w.opi + 1);
        for (size_t i = P->nopwait; i <= w.opi; i++) P->opwait[i] = -1;
        P->nopwait = w.opi + 1;
      }
      P->opwait[w.opi] = fresh;
    }
    if (first < 0) {
      first = fresh; /* the caller adds it to its instance */
    } else if (fresh) { /* a parked one: its instance was added up without it */
      if (w.by) a->ranks[w.by - 1].wait_caused += fresh;
      if (w.by && !w.gpu) a->ranks[w.by - 1].wait_caused_host += fresh;
      if (w.inst < P->ninsts) P->insts[w.inst].wait_caused += fresh;
    }
    r->done_proc = w.proc, r->done_seg = w.seg, r->done_id = w.id;
    uint64_t key = park_key(w.ri, w.id), pi;
    if (!hm_get(&P->pm, key, &pi)) return first;
    park_t *n = &P->parks[pi];
    if (n->proc != w.proc || n->seg != w.seg) return first; /* another segment's: ids may repeat */
    w = *n;
    n->live = 0;
    hm_del(&P->pm, key);
    NCS_XGROW(P->pfree, P->cappfree, P->npfree + 1);
    P->pfree[P->npfree++] = (size_t)pi;
  }
}

/* op's wait in its instance (last arrival `last`; by, inst, skip: park_t's): counted now when its
 * previous operation was (the fresh waiting returned), else parked until it is (0 now) */
static int64_t fresh_wait(ncs_analysis_t *a, const ncs_op_t *o, int64_t last, uint32_t by,
                          uint64_t inst, int skip, size_t opi, int gpu) {
  priv_t *P = an_priv(a);
  ncs_an_rank_t *r = an_rank(a, o);
  park_t w = {.ri = (uint32_t)(r - a->ranks), .proc = o->proc, .seg = o->seg, .id = o->id,
              .prev = o->prev_id, .arr = o->arrival, .last = last, .by = by, .inst = inst,
              .skip = (uint8_t)skip, .opi = opi, .gpu = (uint8_t)gpu, .live = 1};
  if (!o->prev_id || (r->done_id == o->prev_id && r->done_proc == o->proc && r->done_seg == o->seg))
    return wait_count(a, w);
  uint64_t key = park_key(w.ri, o->prev_id), pi;
  if (hm_get(&P->pm, key, &pi)) /* the same previous one twice (a duplicate record): now */
    return wait_count(a, w);
  if (P->npfree) {
    pi = P->pfree[--P->npfree];
  } else {
    NCS_XGROW(P->parks, P->capparks, P->nparks + 1);
    pi = P->nparks++;
  }
  P->parks[pi] = w;
  if (hm_put(&P->pm, key, pi) != 0) ncs_oom();
  return 0;
}

/* the filter left an instance out: its operations take their turn, counting nothing */
void an_left(ncs_analysis_t *a, const ncs_op_t *ops, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (!ops[k].p2p) fresh_wait(a, &ops[k], 0, 0, UINT64_MAX, 1, SIZE_MAX, 0);
}

static int park_cmp(const void *x, const void *y) {
  const park_t *a = x, *b = y;
  if (a->ri != b->ri) return a->ri < b->ri ? -1 : 1;
  return (a->arr > b->arr) - (a->arr < b->arr);
}

/* At the end: operations whose previous one never came (its instance was never handed out)
 * count in their arrival order. */
void an_waits_finish(ncs_analysis_t *a) {
  priv_t *P = an_priv(a);
  size_t n = 0;
  for (size_t i = 0; i < P->nparks; i++)
    if (P->parks[i].live) P->parks[n++] = P->parks[i];
  ncs_sort(P->parks, n, sizeof *P->parks, park_cmp);
  hm_clear(&P->pm);
  for (size_t i = 0; i < n; i++) {
    park_t w = P->parks[i];
    int64_t fresh = wait_count(a, w);
    if (fresh && w.by) a->ranks[w.by - 1].wait_caused += fresh;
    if (fresh && w.by && !w.gpu) a->ranks[w.by - 1].wait_caused_host += fresh;
    if (fresh && w.inst < P->ninsts) P->insts[w.inst].wait_caused += fresh;
  }
  free(P->parks), free(P->pfree);
  P->parks = NULL, P->pfree = NULL, P->nparks = P->capparks = P->npfree = P->cappfree = 0;
  hm_free(&P->pm);
}

/* Where waiting is measured (docs/report.md): NCCL calls return at once, so host arrivals say
 * when a rank asked, not when its GPU was ready. When every member of a complete instance has
 * GPU times the checks trust (CUPTI's, or KernelCh's ok or repaired) and they are not doubtful
 * (gpu_suspect), each member waited from its kernel start to the last member's kernel start, and
 * that waiting is counted for the rank whose kernel started last, when the spread of kernel
 * starts is beyond the clock error bound. Otherwise waiting stays host-side (arrivals). */
static int gpu_trusted(const ncs_op_t *o) {
  return o->kstart && (o->gsrc == NCS_GS_CUPTI || o->gk == NCS_GK_OK || o->gk == NCS_GK_REPAIRED);
}
static void gpu_waits(ncs_analysis_t *a, const ncs_op_t *ops, size_t n, int complete, const durs_t *d,
                      ncs_an_instance_t *x) {
  int ok = complete && n > 1 && !x->gpu_suspect;
  for (size_t k = 0; ok && k < n; k++) ok = gpu_trusted(&ops[k]);
  if (complete && n > 1) {
    if (ok)
      a->wait_gpu_n++;
    else
      a->wait_host_n++;
  }
  if (!ok) return;
  x->wait_gpu = 1;
  int64_t kmin = INT64_MAX;
  size_t kl = 0;
  for (size_t k = 0; k < n; k++) {
    if (ops[k].kstart < kmin) kmin = ops[k].kstart;
    if (ops[k].kstart > ops[kl].kstart) kl = k;
  }
  if (d->kmax - kmin <= a->job->error) return; /* who started last cannot be told */
  x->caused_rank = ops[kl].rank;
  for (size_t k = 0; k < n; k++) x->caused_gpu += d->kmax - ops[k].kstart;
}

/* the first instance (by its first arrival) that some rank of its communicator did not record,
 * and which ranks (a hung job: docs/report.md, "Findings") */
static void note_incomplete(ncs_analysis_t *a, const ncs_inst_t *in, const ncs_op_t *ops, size_t n,
                            int32_t nr) {
  ncs_an_incomplete_t *f = &a->first_incomplete;
  if (f->set && (in->first_arrival > f->at || (in->first_arrival == f->at && in->seq >= f->seq))) return;
  *f = (ncs_an_incomplete_t){.set = 1, .comm = in->comm, .func = in->func, .seq = in->seq,
                             .at = in->first_arrival, .nranks = nr};
  size_t k = 0;
  for (int32_t r = 0; r < nr; r++) {
    while (k < n && ops[k].rank < r) k++;
    if (k < n && ops[k].rank == r) continue;
    if (f->nmissing < (int32_t)(sizeof f->missing / sizeof f->missing[0])) f->missing[f->nmissing] = r;
    f->nmissing++;
  }
}

/* A stall candidate (analyze.h, ncs_an_stall_t): every complete instance's mean wait of the
 * others goes into its bucket's distribution; those of at least NCS_STALL_FLOOR_NS are kept, the
 * NCS_STALL_KEEP largest per bucket, and judged against the distribution at the end. */
static int stall_before(const ncs_an_stall_t *x, const ncs_an_stall_t *y) {
  if (x->wait != y->wait) return x->wait > y->wait;
  if (x->comm != y->comm) return x->comm < y->comm;
  return x->seq < y->seq;
}
static void stall_candidate(ncs_analysis_t *a, uint32_t bi, const ncs_inst_t *in, const ncs_op_t *ops,
                            size_t n, size_t lastk, const durs_t *d, const ncs_an_instance_t *x) {
  bx_t *bx = &an_priv(a)->bx[bi];
  ncs_an_stall_t c = {.comm = in->comm, .func = in->func, .seq = in->seq, .bytes = x->bytes,
                      .gpu = x->wait_gpu, .others = (int32_t)n - 1};
  size_t late = lastk;
  if (x->wait_gpu && x->caused_rank >= 0) {
    c.from = INT64_MAX;
    for (size_t k = 0; k < n; k++) {
      int64_t w = d->kmax - ops[k].kstart;
      if (ops[k].rank == x->caused_rank) late = k;
      if (ops[k].kstart < c.from) c.from = ops[k].kstart;
      if (w > c.longest) c.longest = w;
    }
    c.caused = x->caused_gpu;
  } else if (!x->wait_gpu && x->last_counted) {
    for (size_t k = 0; k < n; k++)
      if (k != lastk && an_priv(a)->fresh[k] > c.longest) c.longest = an_priv(a)->fresh[k];
    c.caused = x->wait_caused, c.from = in->first_arrival;
  }
  c.wait = c.caused / c.others;
  qs_add(&bx->wq, (double)c.wait);
  if (c.wait < NCS_STALL_FLOOR_NS) return;
  c.rank = ops[late].rank, c.proc = ops[late].proc;
  const ncs_job_proc_t *p = &a->job->procs[c.proc];
  c.from_real = c.from - p->job_off + p->clk_off;
  uint32_t k = bx->ncand < NCS_STALL_KEEP ? bx->ncand++ : NCS_STALL_KEEP - 1;
  if (k == NCS_STALL_KEEP - 1 && bx->ncand == NCS_STALL_KEEP && bx->cand[k].func && !stall_before(&c, &bx->cand[k]))
    return;
  bx->cand[k] = c;
  for (; k > 0 && stall_before(&bx->cand[k], &bx->cand[k - 1]); k--) {
    ncs_an_stall_t t = bx->cand[k];
    bx->cand[k] = bx->cand[k - 1], bx->cand[k - 1] = t;
  }
}

static int cmp_stall(const void *x, const void *y) {
  const ncs_an_stall_t *a = x, *b = y;
  if (stall_before(a, b)) return -1;
  return stall_before(b, a);
}

/* At the end (buckets in their final order, their wait distributions sorted): the candidates
 * that are stalls, largest first; each counted for its rank. */
void an_stalls_finish(ncs_analysis_t *a) {
  priv_t *P = an_priv(a);
  double wall = (double)(a->job->t_last - a->job->t_first);
  size_t cap = 0;
  for (uint32_t bi = 0; bi < a->nbuckets; bi++) {
    bx_t *bx = &P->bx[bi];
    if (!bx->ncand) continue;
    uint64_t nw = bx->wq.total;
    double med = qs_q(&bx->wq, .5), sigma = (qs_q(&bx->wq, .75) - qs_q(&bx->wq, .25)) / 1.349;
    uint32_t found = 0;
    for (uint32_t k = 0; k < bx->ncand; k++) {
      ncs_an_stall_t c = bx->cand[k];
      double w = (double)c.wait;
      int unusual = w > NCS_STALL_RATIO * med;
      int outlier = nw >= NCS_STALL_MIN_N && unusual && w > med + NCS_STALL_SIGMAS * sigma;
      int share = wall > 0 && w >= NCS_STALL_SHARE * wall && (nw < NCS_STALL_MIN_N || unusual);
      if (!outlier && !share) continue;
      c.bucket = bi, c.med = med, c.sigma = sigma, c.bucket_n = nw, c.by_share = !outlier;
      found++;
      NCS_XGROW(a->stalls, cap, a->nstalls + 1);
      a->stalls[a->nstalls++] = c;
    }
    if (found == NCS_STALL_KEEP) a->stalls_capped = 1;
  }
  if (a->nstalls > 1) ncs_sort(a->stalls, a->nstalls, sizeof *a->stalls, cmp_stall);
  for (uint32_t s = 0; s < a->nstalls; s++) { /* largest first: a knock-on's root comes before it */
    ncs_an_stall_t *x = &a->stalls[s];
    x->knock_on = -1;
    for (uint32_t k = 0; k < s && x->knock_on < 0; k++) {
      ncs_an_stall_t *y = &a->stalls[k];
      if (y->knock_on < 0 && x->from < y->from + y->longest && y->from < x->from + x->longest)
        x->knock_on = (int32_t)k, y->knock_ons++;
    }
  }
  for (uint32_t s = 0; s < a->nstalls; s++)
    for (uint32_t k = 0; k < a->nranks && a->stalls[s].knock_on < 0; k++)
      if (a->ranks[k].comm == a->stalls[s].comm && a->ranks[k].rank == a->stalls[s].rank) {
        a->ranks[k].stalls++, a->ranks[k].stall_caused += a->stalls[s].caused;
        break;
      }
}

void an_instance(ncs_analysis_t *a, const ncs_inst_t *in, const ncs_op_t *ops) {
  priv_t *P = an_priv(a);
  size_t n = in->nops;
  const ncs_op_t *I = &ops[0];
  int32_t nr = a->job->comms[I->comm].nranks;
  a->instances++, a->coll_ops += n;
  for (size_t k = 0; k < n; k++)
    a->cov.timing[ops[k].timing]++, a->cov.gsrc[ops[k].gsrc]++, a->cov.captured += ops[k].captured,
    a->cov.gk[ops[k].gk]++,
    a->cov.gk_enqueue += ops[k].gk == NCS_GK_UNKNOWN && ops[k].timing == NCS_SRC_ENQUEUE_HOST;
  if ((int32_t)n < nr) a->incomplete++;
  a->unmatched_seq += (uint64_t)in->again;
  check_mismatch(a, ops, n);
  if (2 * n > P->capd) { /* arr: 2n for gpu_suspect */
    P->capd = 2 * n;
    P->arr = ncs_xrealloc(P->arr, P->capd * sizeof *P->arr);
    P->durs = ncs_xrealloc(P->durs, P->capd * sizeof *P->durs);
    P->fresh = ncs_xrealloc(P->fresh, P->capd * sizeof *P->fresh);
  }
  ncs_an_instance_t x = {.bytes = I->bytes, .log2 = log2b(I->bytes), .slowest_rank = -1, .caused_rank = -1,
                         .skew = in->last_arrival - in->first_arrival};
  x.gpu_suspect = gpu_suspect(a, ops, n);
  durs_t d = durations(P, in, ops, n);
  x.latency = d.dmax, x.timing = d.src, x.median_duration = d.dmed;
  size_t lastk = 0;
  for (size_t k = 1; k < n; k++)
    if (ops[k].arrival > ops[lastk].arrival) lastk = k;
  /* who arrived last counts only when every rank is in and the order is measurable: in an
   * incomplete instance the missing rank may be the late one */
  int complete = (int32_t)in->distinct == nr && n == in->distinct;
  x.last_counted = complete && n > 1 && x.skew > a->job->error;
  d.slow_counted = complete && n > 2;
  /* who the waiting was for: the last rank, when its arrival counts (as its index + 1) */
  uint32_t by = x.last_counted ? (uint32_t)(an_rank(a, &ops[lastk]) - a->ranks) + 1 : 0;
  /* retained: the model keeps the instance's operations last in its array (ncs_job_op) */
  size_t opi = P->retain && ncs_job_op_count(a->job) >= n ? ncs_job_op_count(a->job) - n : SIZE_MAX;
  gpu_waits(a, ops, n, complete, &d, &x);
  for (size_t k = 0; k < n; k++)
    P->fresh[k] = fresh_wait(a, &ops[k], in->last_arrival, by, P->retain ? in->id : UINT64_MAX, 0,
                             opi == SIZE_MAX ? SIZE_MAX : opi + k, x.wait_gpu);
  for (size_t k = 0; x.last_counted && k < n; k++) x.wait_caused += P->fresh[k];
  if (!x.wait_gpu && x.last_counted) x.caused_rank = ops[lastk].rank;
  if (!complete) note_incomplete(a, in, ops, n, nr);
  ncs_an_bucket_t *b = an_bucket(a, I->comm, I->func, log2b(I->bytes), 0);
  uint32_t bi = (uint32_t)(b - a->buckets);
  ikey_min(&P->bx[bi].first, op_key(I));
  if (complete && n > 1) stall_candidate(a, bi, in, ops, n, lastk, &d, &x);
  for (size_t k = 0; k < n; k++) rank_share(a, in, ops, k, lastk, &d, bi, &x);
  x.bd = in->bd;
  an_bd_instance(a, b, in);
  for (size_t k = 0; k < n; k++) an_bd_op(a, &ops[k]);
  /* Latency is what the slowest rank took, waiting for late peers included. Bandwidth is over
   * the transfer time: the shortest rank duration, since the rank whose kernel started last
   * waits for no one (its whole duration is the data exchange). Waiting shows up as skew and
   * wait, not as lower bandwidth; back-to-back this is what nccl-tests' busbw measures. */
  double lat = (double)d.dmax, xfer = d.dmin < INT64_MAX ? (double)d.dmin : lat;
  x.algbw = xfer > 0 ? (double)I->bytes / xfer : 0; /* bytes/ns = GB/s */
  x.busbw = x.algbw * ncs_bus_factor(I->func, nr);
  /* an unsampled group (NCCLSCOPE_UNSAMPLED_EVENTS) left some rank without GPU times: its
   * duration is only the enqueue, so the instance counts for arrivals and skew but not for
   * latency and bandwidth */
  for (size_t k = 0; k < n; k++) x.unsampled |= ops[k].unsampled && ops[k].timing != NCS_SRC_KERNEL_GPU;
  /* a rank whose KernelCh times cannot be right (and no CUPTI) has no duration: the instance's
   * latency would be the others' alone */
  for (size_t k = 0; k < n; k++) x.no_gpu |= ops[k].gk == NCS_GK_UNKNOWN && ops[k].timing != NCS_SRC_KERNEL_GPU;
  b->suspect += (uint64_t)x.gpu_suspect;
  if (x.unsampled)
    a->unsampled++, b->unsampled++;
  else if (x.no_gpu)
    a->no_gpu++, b->no_gpu++;
  else
    an_bucket_add(a, b, I->bytes, lat, x.busbw, x.algbw, (double)x.skew, d.src);
  an_throughput(a, ops, n, I->bytes);
  if (P->retain) retain_numbers(a, in, &x);
}
