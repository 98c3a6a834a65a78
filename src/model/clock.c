/* clock.c - the job's clocks, aligned once (model.h; docs/report.md, "Clocks").
 *
 * Per file (pass 1): realtime - monotonic is the median over its first NCS_JOB_CLOCK_SAMPLES
 * CLOCK pairs, its spread max - min over all of them. The GPU pTimer of its KernelCh records
 * (%globaltimer: about CLOCK_REALTIME on NCCL 2.28, but 0.05 to 2.5 ms off it, differently per
 * GPU, measured on H200s) is mapped to host monotonic time from evidence alone, per window of
 * host time (ncs_job_gwin_t): the host reads every GPU timestamp after it was written, so the
 * offset pTimer - host is at least the largest pTimer - (host time the plugin saw it), stale
 * timestamps included; a kernel starts after its launch, so it is at most the smallest
 * (latest channel start of an operation - its KernelLaunch) that is not below the first bound
 * (an operation whose every channel carried earlier work's time gives one below it: left out,
 * counted). The mapping uses the lower bound; err says how far above it the truth may lie.
 *
 * Per host (with several): host h's offset against host 0 is the median over instances of the
 * difference between the earliest completion end seen on h and on host 0 (a rank sees the end of
 * a collective late, never early); its error is the median absolute deviation of those
 * differences plus the median spread of the ends within one host. Job time is monotonic +
 * job_off, job_off = clock offset - host offset (0 on one host: CLOCK_MONOTONIC is shared). */
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"
#include "util/num.h"

/* GPU clock windows (docs/report.md, "Clocks"): one per NCS_GW_NS of host time, merged in pairs
 * (the window doubling) when a file has more than NCS_GW_MAX of them. */
#define NCS_GW_NS 250000000ll /* GPU clocks drifted up to ~30 ppm on H200s: 7 us in a window */
#define NCS_GW_MAX 1024
#define NCS_GW_TOP 64  /* the largest pTimer - seen kept */
#define NCS_GW_CAND 64 /* the smallest launch bounds kept */
typedef struct {
  int64_t from;              /* host monotonic time it begins at (it ends where the next begins) */
  int step;                  /* it begins at a step of the GPU clock (a KernelCh ended before it
                              * started: %globaltimer was set back) */
  int64_t top[NCS_GW_TOP];   /* the largest (pTimer - host time seen), descending */
  uint32_t ntop;
  uint64_t n;
  double tsum;               /* the readings' host times, summed: where its offset holds best */
  int64_t cand[NCS_GW_CAND]; /* the smallest (latest channel start - launch), ascending */
  uint32_t ncand;
  uint64_t nlaunch;
} gw_acc_t;

typedef struct {
  int64_t *clk, *gaps;
  size_t nclk, capclk, ngaps, capgaps;
  int64_t cmin, cmax;
  uint64_t npairs;
  hmap_t launch;   /* (seg, thread, ctx) -> the last KernelLaunch start */
  hmap_t launched; /* (seg, Coll/P2p id) -> the KernelLaunch start before it */
  hmap_t latest;   /* (seg, Coll/P2p id) -> its latest KernelCh start pTimer so far */
  int64_t *gts;    /* host times of the gap samples (gaps[k] was seen at gts[k]) */
  gw_acc_t *w;     /* windows by time */
  size_t nw, capw;
  int64_t wns;     /* the longest a window runs before the next begins */
  hmap_t kch;      /* KernelCh id (per segment) -> its start pTimer, until its stop state */
  uint64_t steps;
  uint64_t first;  /* host time of the first KernelCh record (the clock settles after it) */
} clkscan_t;

void clock_scan_begin(void **state) {
  clkscan_t *c = ncs_xcalloc(1, sizeof *c);
  c->wns = NCS_GW_NS;
  *state = c;
}

static uint64_t seg_id(uint32_t seg, uint64_t id) { return hm_mix2(seg, id); }

static void top_add(gw_acc_t *a, int64_t g) {
  a->n++;
  uint32_t k = a->ntop < NCS_GW_TOP ? a->ntop++ : NCS_GW_TOP - 1;
  if (k == NCS_GW_TOP - 1 && a->ntop == NCS_GW_TOP && g <= a->top[k]) return;
  a->top[k] = g;
  for (; k > 0 && a->top[k] > a->top[k - 1]; k--) {
    int64_t t = a->top[k];
    a->top[k] = a->top[k - 1], a->top[k - 1] = t;
  }
}

static void cand_add(gw_acc_t *a, int64_t u) {
  a->nlaunch++;
  uint32_t k = a->ncand < NCS_GW_CAND ? a->ncand++ : NCS_GW_CAND - 1;
  if (k == NCS_GW_CAND - 1 && a->ncand == NCS_GW_CAND && u >= a->cand[k]) return;
  a->cand[k] = u;
  for (; k > 0 && a->cand[k] < a->cand[k - 1]; k--) {
    int64_t t = a->cand[k];
    a->cand[k] = a->cand[k - 1], a->cand[k - 1] = t;
  }
}

static gw_acc_t *gw_push(clkscan_t *c, int64_t from, int step) {
  NCS_XGROW(c->w, c->capw, c->nw + 1);
  gw_acc_t *a = &c->w[c->nw++];
  memset(a, 0, sizeof *a);
  a->from = from, a->step = step;
  return a;
}

static void gw_merge(gw_acc_t *x, const gw_acc_t *y) {
  x->tsum += y->tsum;
  for (uint32_t q = 0; q < y->ntop; q++) top_add(x, y->top[q]);
  x->n += y->n - y->ntop;
  for (uint32_t q = 0; q < y->ncand; q++) cand_add(x, y->cand[q]);
  x->nlaunch += y->nlaunch - y->ncand;
}

/* too many windows: the window length doubles and neighbours join, never across a step */
static void gw_thin(clkscan_t *c) {
  c->wns *= 2;
  size_t o = 0;
  for (size_t i = 0; i < c->nw; i++) {
    if (o && !c->w[i].step && c->w[i].from - c->w[o - 1].from < c->wns)
      gw_merge(&c->w[o - 1], &c->w[i]);
    else
      c->w[o++] = c->w[i];
  }
  c->nw = o;
}

/* the window of host time t, made when needed: a new one after wns, or at a step */
static gw_acc_t *gw_at(clkscan_t *c, int64_t t) {
  if (!c->nw) return gw_push(c, t, 0);
  gw_acc_t *last = &c->w[c->nw - 1];
  if (t >= last->from) {
    if (t - last->from < c->wns) return last;
    if (c->nw >= NCS_GW_MAX) {
      gw_thin(c);
      return gw_at(c, t);
    }
    return gw_push(c, t, 0);
  }
  size_t lo = 0, hi = c->nw; /* records a little out of order: the window they fall in */
  while (hi - lo > 1) {
    size_t m = (lo + hi) / 2;
    if (c->w[m].from <= t) lo = m;
    else hi = m;
  }
  return &c->w[lo];
}

/* a step of the GPU clock seen at host time t: later readings go to a window of their own */
static void gw_step(clkscan_t *c, int64_t t) {
  c->steps++;
  if (c->nw && t <= c->w[c->nw - 1].from) return;
  if (c->nw >= NCS_GW_MAX) gw_thin(c);
  gw_push(c, t, 1);
}

/* A GPU timestamp p that the host read at time ts happened before ts: host = p - off <= ts, so
 * the offset is at least p - ts (stale timestamps of earlier work too: they happened even
 * earlier). */
static int settling(const clkscan_t *c, uint64_t ts) {
  return c->first && ts >= c->first && ts - c->first < (uint64_t)NCS_JOB_GPU_SETTLE_NS;
}

static void seen_bound(clkscan_t *c, uint64_t p, uint64_t ts) {
  if (!p || !ts || p > (1ull << 62) || ts > (1ull << 62) || settling(c, ts)) return;
  gw_acc_t *a = gw_at(c, (int64_t)ts);
  if (a) top_add(a, (int64_t)(p - ts)), a->tsum += (double)ts;
}

/* KernelLaunch -> the Coll/P2p it carries (same thread, same communicator: the eager path) -> its
 * KernelCh starts. A kernel starts after its launch: the latest channel start of the operation
 * minus the launch time bounds the offset from above, unless every channel's timestamp belongs
 * to earlier work (then the bound is below the seen bound and is left out at the end). */
static void launch_bound(clkscan_t *c, const ncs_event_t *e, uint32_t seg) {
  uint64_t v;
  uint64_t key = hm_mix2(((uint64_t)seg << 32) ^ e->thread, e->ctx);
  if (e->kind == NCS_REC_START && e->type == NCS_T_KERNEL_LAUNCH) {
    if (hm_put(&c->launch, key, e->ts) != 0) ncs_oom();
  } else if (e->kind == NCS_REC_START && (e->type == NCS_T_COLL || e->type == NCS_T_P2P) &&
             e->ctx_kind == NCS_CTX_LOCAL) {
    if (hm_get(&c->launch, key, &v) && hm_put(&c->launched, seg_id(seg, e->id), v) != 0) ncs_oom();
  } else if (e->kind == NCS_REC_START && e->type == NCS_T_KERNEL_CH && e->parent_kind == NCS_REF_LOCAL &&
             e->f[NCS_F(KernelCh, pTimer)] && hm_get(&c->launched, seg_id(seg, e->parent), &v)) {
    int created;
    uint64_t *m = hm_ref(&c->latest, seg_id(seg, e->parent), 0, &created);
    if (!m) ncs_oom();
    if (e->f[NCS_F(KernelCh, pTimer)] > *m) *m = e->f[NCS_F(KernelCh, pTimer)];
  } else if ((e->kind == NCS_REC_COMPLETE || e->kind == NCS_REC_EXPIRED) &&
             (e->type == NCS_T_COLL || e->type == NCS_T_P2P)) {
    uint64_t k = seg_id(seg, e->id), p;
    if (hm_get(&c->launched, k, &v) && hm_get(&c->latest, k, &p) && p <= (1ull << 62) && v &&
        !settling(c, v)) {
      gw_acc_t *a = gw_at(c, (int64_t)v);
      if (a) cand_add(a, (int64_t)(p - v));
    }
    if (e->kind == NCS_REC_COMPLETE && !(e->cflags & NCS_CF_REVISED)) return; /* revisions may come */
    hm_del(&c->launched, k), hm_del(&c->latest, k);
  }
}

void clock_scan_item(void *state, const ncs_item_t *it, uint32_t seg) {
  clkscan_t *c = state;
  if (it->what == NCS_ITEM_CLOCK) {
    int64_t d = (int64_t)(it->clock_realtime_ns - it->clock_mono_ns);
    if (!c->npairs || d < c->cmin) c->cmin = d;
    if (!c->npairs || d > c->cmax) c->cmax = d;
    c->npairs++;
    if (c->nclk < NCS_JOB_CLOCK_SAMPLES) {
      NCS_XGROW(c->clk, c->capclk, c->nclk + 1);
      c->clk[c->nclk++] = d;
    }
    return;
  }
  if (it->what != NCS_ITEM_EVENT) return;
  const ncs_event_t *e = &it->ev;
  launch_bound(c, e, seg);
  if (e->type != NCS_T_KERNEL_CH) return;
  if (!c->first && e->ts && (e->kind == NCS_REC_START || e->kind == NCS_REC_STATE)) c->first = e->ts;
  if (e->kind == NCS_REC_START && e->f[NCS_F(KernelCh, pTimer)]) {
    if (hm_put(&c->kch, hm_mix2(seg, e->id), e->f[NCS_F(KernelCh, pTimer)]) != 0) ncs_oom();
    seen_bound(c, e->f[NCS_F(KernelCh, pTimer)], e->ts);
    if (c->ngaps < NCS_JOB_CLOCK_SAMPLES) {
      NCS_XGROW(c->gaps, c->capgaps, c->ngaps + 1);
      c->gts = ncs_xrealloc(c->gts, c->capgaps * sizeof *c->gts);
      c->gts[c->ngaps] = (int64_t)e->ts;
      c->gaps[c->ngaps++] = (int64_t)(e->f[NCS_F(KernelCh, pTimer)] - e->ts);
    }
  } else if (e->kind == NCS_REC_STATE && e->state == NCS_STATE_KERNEL_CH_STOP) {
    uint64_t ps;
    /* a channel that ended long before it started: %globaltimer was set back in between (seen on
     * an H200 5 ms into a process: 1.4 and 1.8 ms back). What follows is another clock. */
    if (e->arg0 && hm_get(&c->kch, hm_mix2(seg, e->id), &ps) && e->arg0 + NCS_JOB_GPU_STEP_NS < ps)
      gw_step(c, (int64_t)e->ts);
    seen_bound(c, e->arg0, e->ts);
  } else if (e->kind == NCS_REC_STOP || e->kind == NCS_REC_EXPIRED) {
    hm_del(&c->kch, hm_mix2(seg, e->id));
  }
}

/* A window's offset: the bounds from both sides must hold, but either side can carry timestamps
 * that are not of the work they claim (a KernelCh with times in the future of when the host read
 * it: --fault ktime in nccl-sim; launch bounds below the offset: every channel stale). The offset
 * is the largest pTimer - seen value O that the fewest samples contradict (seen bounds above O plus
 * launch bounds below it). Without launch bounds: the largest value the next one backs (within
 * NCS_JOB_GPU_TOL_NS: a value far above all others is not a timestamp of this GPU's clock). */
static int64_t win_lower(const gw_acc_t *a) {
  if (!a->ncand) {
    for (uint32_t k = 0; k + 1 < a->ntop; k++)
      if (a->top[k] - a->top[k + 1] <= NCS_JOB_GPU_TOL_NS) return a->top[k];
    return a->top[a->ntop - 1];
  }
  uint32_t best = 0, bestv = UINT32_MAX, above = 0;
  for (uint32_t i = 0; i < a->ntop; i++) {
    if (i && a->top[i] < a->top[i - 1]) above = i; /* the values strictly above top[i] */
    uint32_t below = 0;
    while (below < a->ncand && a->cand[below] < a->top[i]) below++;
    if (above + below < bestv) bestv = above + below, best = i;
  }
  return a->top[best];
}

/* how the file's pTimer maps to its monotonic time: per window, off is the seen bound (the least
 * offset the evidence allows: the host reads a GPU timestamp some time after it was written, and
 * NCCL's proxy thread polls, so the least-delayed reading is within a few us of the truth), err
 * the distance to the launch bound (the smallest one that is not below the seen bound). */
static void gpu_map(clkscan_t *c, ncs_job_proc_t *p, jpriv_t *P, uint32_t proc) {
  size_t n = 0;
  for (size_t i = 0; i < c->nw; i++) n += c->w[i].ntop > 0;
  if (!n) return;
  ncs_job_gwin_t *g = ncs_xcalloc(n, sizeof *g);
  size_t k = 0;
  int64_t err = -1;
  int unknown = 0;
  for (size_t i = 0; i < c->nw; i++) {
    const gw_acc_t *a = &c->w[i];
    if (!a->ntop) continue;
    ncs_job_gwin_t *x = &g[k++];
    x->from = a->from, x->off = win_lower(a), x->n = a->n, x->step = a->step;
    x->mid = a->n ? (int64_t)(a->tsum / (double)a->n) : a->from;
    x->err = -1, x->launches = a->nlaunch;
    for (uint32_t q = 0; q < a->ncand; q++) {
      if (a->cand[q] < x->off) {
        x->stale_bounds++; /* every channel of that operation carried earlier work's time */
        continue;
      }
      x->err = a->cand[q] - x->off;
      break;
    }
    if (x->err < 0) unknown = 1;
    else if (x->err > err) err = x->err;
    p->gpu_stale_bounds += x->stale_bounds;
  }
  for (size_t i = 0; i < n; i++) /* a window runs to the next one's beginning */
    g[i].len = i + 1 < n ? g[i + 1].from - g[i].from : c->wns;
  P->gwin[proc] = g, p->ngwin = (uint32_t)n, p->gwin = g;
  p->gpu_steps = c->steps;
  p->gpu_off = g[0].off;
  p->gpu_err = unknown ? -1 : err;
  p->gpu_err_known = err; /* the largest bound of the windows that have one */
  if (n > 1 && g[n - 1].from > g[0].from)
    p->gpu_drift_ppb = (double)(g[n - 1].off - g[0].off) / (double)(g[n - 1].from - g[0].from) * 1e9;
  /* pTimer of 2.28 is %globaltimer, which reads about CLOCK_REALTIME; own: another time base */
  int64_t d = p->gpu_off - p->clk_off;
  p->gpu_domain = c->nclk && d < 1000000000 && d > -1000000000 ? NCS_GPU_REALTIME : NCS_GPU_OWN;
  /* the host's delay in seeing a channel start, as mapped */
  for (size_t i = 0; i < c->ngaps; i++) c->gaps[i] -= ncs_gwin_off(g, n, c->gts[i]) - p->gpu_off;
  ncs_sort(c->gaps, c->ngaps, sizeof *c->gaps, ncs_cmp_i64);
  if (c->ngaps) {
    p->gap_p50 = ncs_qi64(c->gaps, c->ngaps, 0.5) - p->gpu_off;
    p->gap_p99 = ncs_qi64(c->gaps, c->ngaps, 0.99) - p->gpu_off;
    p->gap_min = c->gaps[0] - p->gpu_off, p->gap_max = c->gaps[c->ngaps - 1] - p->gpu_off;
    p->gap_n = c->ngaps;
  }
}

void clock_scan_end(void *state, ncs_job_t *j, uint32_t proc) {
  clkscan_t *c = state;
  ncs_job_proc_t *p = &j->procs[proc];
  if (c->nclk) {
    ncs_sort(c->clk, c->nclk, sizeof *c->clk, ncs_cmp_i64);
    p->clk_off = ncs_qi64(c->clk, c->nclk, 0.5), p->clk_spread = c->cmax - c->cmin;
    p->clk_pairs = c->npairs > UINT32_MAX ? UINT32_MAX : (uint32_t)c->npairs;
  }
  p->gpu_first_ns = c->first;
  gpu_map(c, p, jp(j), proc);
  hm_free(&c->launch), hm_free(&c->launched), hm_free(&c->latest), hm_free(&c->kch);
  free(c->clk), free(c->gaps), free(c->gts), free(c->w), free(c);
}

/* the offset at host time t: that of the window holding t, joined by a straight line to the
 * neighbour on t's side of its readings' mean time, never across a step of the GPU clock */
int64_t ncs_gwin_off(const ncs_job_gwin_t *g, size_t n, int64_t t) {
  if (!n) return 0;
  size_t lo = 0, hi = n; /* the last window that begins at or before t */
  while (hi - lo > 1) {
    size_t m = (lo + hi) / 2;
    if (g[m].from <= t) lo = m;
    else hi = m;
  }
  int64_t m0 = g[lo].mid;
  size_t k = t >= m0 ? lo + 1 : lo - 1; /* the neighbour (lo - 1 wraps when lo is 0: none) */
  if (t >= m0 ? (k >= n || g[k].step) : (lo == 0 || g[lo].step)) return g[lo].off;
  int64_t m1 = g[k].mid;
  if (m1 == m0) return g[lo].off;
  return g[lo].off + (int64_t)((double)(g[k].off - g[lo].off) * (double)(t - m0) / (double)(m1 - m0));
}

/* t: the host monotonic time the timestamp was read at (0 unknown: estimated from the first
 * window's offset, which a clock step can put in the wrong window) */
int64_t ncs_job_gpu_time_seen(const ncs_job_t *j, uint32_t proc, uint64_t ptimer, uint64_t seen) {
  const ncs_job_proc_t *p = &j->procs[proc];
  if (!ptimer || p->gpu_domain == NCS_GPU_NONE || !p->ngwin) return 0;
  int64_t t = seen ? (int64_t)seen : (int64_t)(ptimer - (uint64_t)p->gpu_off);
  return ncs_job_time(j, proc, ptimer - (uint64_t)ncs_gwin_off(p->gwin, p->ngwin, t));
}

int64_t ncs_job_gpu_time(const ncs_job_t *j, uint32_t proc, uint64_t ptimer) {
  const ncs_job_proc_t *p = &j->procs[proc];
  if (!ptimer || p->gpu_domain == NCS_GPU_NONE || !p->ngwin) return 0;
  /* where in host time it lies, near enough to pick the windows (offsets differ by us) */
  int64_t t = (int64_t)(ptimer - (uint64_t)p->gpu_off);
  return ncs_job_time(j, proc, ptimer - (uint64_t)ncs_gwin_off(p->gwin, p->ngwin, t));
}

/* ------------------------------------------------------------------ hosts */
void clock_hosts(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  for (uint32_t i = 0; i < j->nprocs; i++) {
    uint32_t h = 0;
    if (!j->procs[i].nsegs) continue; /* unread: no host of the job (host_index 0) */
    while (h < j->nhosts && j->hosts[h].host != j->procs[i].host) h++; /* pooled */
    if (h == j->nhosts) {
      NCS_XGROW(j->hosts, P->cap_hosts, j->nhosts + 1);
      j->hosts[j->nhosts++] = (ncs_job_host_t){.host = j->procs[i].host};
    }
    j->procs[i].host_index = h;
    j->procs[i].job_off = j->procs[i].clk_off; /* realtime, for the host pass */
  }
  if (!j->nhosts) { /* nothing could be read: one unknown host */
    NCS_XGROW(j->hosts, P->cap_hosts, 1);
    j->hosts[j->nhosts++] = (ncs_job_host_t){.host = "?"};
  }
  if (j->nhosts > 1) {
    size_t n = (size_t)j->nhosts * NCS_JOB_HOST_SAMPLES;
    P->hd = ncs_xcalloc(n, sizeof *P->hd), P->hsp = ncs_xcalloc(n, sizeof *P->hsp);
    P->hn = ncs_xcalloc(j->nhosts, sizeof *P->hn), P->rng = 0x9e3779b97f4a7c15ull;
    P->lo = ncs_xcalloc(j->nhosts, sizeof *P->lo), P->hi = ncs_xcalloc(j->nhosts, sizeof *P->hi);
  }
}

/* every sample up to NCS_JOB_HOST_SAMPLES, then a uniform reservoir (a fixed seed: the same
 * report every time) */
static void host_sample(jpriv_t *P, uint32_t h, int64_t d, int64_t sp) {
  uint64_t k = P->hn[h]++;
  if (k >= NCS_JOB_HOST_SAMPLES) {
    P->rng = P->rng * 6364136223846793005ull + 1442695040888963407ull;
    k = (P->rng >> 11) % (k + 1);
    if (k >= NCS_JOB_HOST_SAMPLES) return;
  }
  P->hd[h * NCS_JOB_HOST_SAMPLES + k] = d, P->hsp[h * NCS_JOB_HOST_SAMPLES + k] = sp;
}

/* one instance of the host pass: ops' end times are realtime here (job_off = clk_off) */
void clock_host_instance(ncs_job_t *j, const ncs_op_t *ops, size_t n) {
  jpriv_t *P = jp(j);
  int64_t *lo = P->lo, *hi = P->hi;
  for (uint32_t h = 0; h < j->nhosts; h++) lo[h] = INT64_MAX, hi[h] = INT64_MIN;
  for (size_t k = 0; k < n; k++) {
    const ncs_op_t *o = &ops[k];
    /* a forced completion (expiry) or one without children has no real end time */
    if (!o->complete || !o->end || (o->cflags & (NCS_CF_FORCED | NCS_CF_NO_CHILDREN))) continue;
    uint32_t h = j->procs[o->proc].host_index;
    if (o->end < lo[h]) lo[h] = o->end;
    if (o->end > hi[h]) hi[h] = o->end;
  }
  if (lo[0] == INT64_MAX) return;
  for (uint32_t h = 1; h < j->nhosts; h++)
    if (lo[h] != INT64_MAX) {
      int64_t s0 = hi[0] - lo[0], sh = hi[h] - lo[h];
      host_sample(P, h, lo[h] - lo[0], s0 > sh ? s0 : sh);
    }
}

void clock_host_offsets(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  for (uint32_t h = 1; h < j->nhosts; h++) {
    size_t n = P->hn[h] < NCS_JOB_HOST_SAMPLES ? (size_t)P->hn[h] : NCS_JOB_HOST_SAMPLES;
    if (!n) continue;
    int64_t *d = &P->hd[h * NCS_JOB_HOST_SAMPLES], *sp = &P->hsp[h * NCS_JOB_HOST_SAMPLES];
    ncs_sort(d, n, sizeof *d, ncs_cmp_i64);
    int64_t med = ncs_qi64(d, n, 0.5);
    /* the deviations go to a new array: rewriting d in place and taking its median again was
     * compiled (gcc 12 -O3) into a reuse of the first median */
    int64_t *dev = ncs_xrealloc(NULL, n * sizeof *dev);
    for (size_t k = 0; k < n; k++) dev[k] = d[k] > med ? d[k] - med : med - d[k];
    ncs_sort(dev, n, sizeof *dev, ncs_cmp_i64);
    ncs_sort(sp, n, sizeof *sp, ncs_cmp_i64);
    j->hosts[h].offset = med;
    j->hosts[h].error = ncs_qi64(dev, n, 0.5) + ncs_qi64(sp, n, 0.5);
    j->hosts[h].samples = P->hn[h];
    free(dev);
  }
  free(P->hd), free(P->hsp), free(P->hn), free(P->lo), free(P->hi);
  P->hd = P->hsp = P->lo = P->hi = NULL, P->hn = NULL;
}

void clock_job_offsets(ncs_job_t *j) {
  int64_t spread = 0, herr = 0;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    ncs_job_proc_t *p = &j->procs[i];
    p->job_off = j->nhosts > 1 ? p->clk_off - j->hosts[p->host_index].offset : 0;
    if (p->clk_spread > spread) spread = p->clk_spread;
  }
  for (uint32_t h = 1; h < j->nhosts; h++)
    if (j->hosts[h].error > herr) herr = j->hosts[h].error;
  j->error = spread + herr;
}
