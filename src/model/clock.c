/* clock.c - the job's clocks, aligned once (model.h; docs/report.md, "Clocks").
 *
 * Per file (pass 1): realtime - monotonic is the median over its first NCS_JOB_CLOCK_SAMPLES
 * CLOCK pairs, its spread max - min over all of them. The GPU pTimer of its KernelCh records is
 * mapped to host monotonic time: when the median (pTimer - host time) at KernelCh START lies
 * within 1 s of realtime - monotonic, pTimer is CLOCK_REALTIME (NCCL 2.28) and maps with the
 * clock offset; otherwise (its own domain) the offset is the largest (pTimer - host time), since
 * the host sees a channel start after it happened, leaving out values more than
 * NCS_JOB_GPU_TOL_NS above the median (timestamps of another operation). A kernel cannot start
 * before the KernelLaunch that carried its operation, which bounds the offset from the other
 * side: gpu_err says how far the true offset can be from the estimate.
 *
 * Per host (with several): host h's offset against host 0 is the median over instances of the
 * difference between the earliest completion end seen on h and on host 0 (a rank sees the end of
 * a collective late, never early); its error is the median absolute deviation of those
 * differences plus the median spread of the ends within one host, plus how late a rank of either
 * host may see a GPU event (the largest gpu_err of their processes: a host whose ranks all see
 * the ends a poll later than the other's moves every difference alike, which neither the
 * deviation nor the spread within a host can show). Job time is monotonic +
 * job_off, job_off = clock offset - host offset (0 on one host: CLOCK_MONOTONIC is shared). */
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"
#include "util/num.h"

typedef struct {
  int64_t *clk, *gaps;
  size_t nclk, capclk, ngaps, capgaps;
  int64_t cmin, cmax;
  uint64_t npairs;
  hmap_t launch;   /* (seg, thread, ctx) -> the last KernelLaunch start */
  hmap_t launched; /* (seg, Coll/P2p id) -> the KernelLaunch start before it */
  int64_t upper;   /* min (pTimer - launch): the offset is at most this; INT64_MAX none */
} clkscan_t;

void clock_scan_begin(void **state) {
  clkscan_t *c = ncs_xcalloc(1, sizeof *c);
  c->upper = INT64_MAX;
  *state = c;
}

static uint64_t seg_id(uint32_t seg, uint64_t id) { return hm_mix2(seg, id); }

/* KernelLaunch -> the Coll/P2p it carries (same thread, same communicator: the eager path) ->
 * its KernelCh: launch time - pTimer start is a lower bound of host - pTimer. Only while GPU
 * samples are collected, so the maps stay small. */
static void launch_bound(clkscan_t *c, const ncs_event_t *e, uint32_t seg) {
  uint64_t v;
  if (c->ngaps >= NCS_JOB_CLOCK_SAMPLES) return;
  uint64_t key = hm_mix2(((uint64_t)seg << 32) ^ e->thread, e->ctx);
  if (e->type == NCS_T_KERNEL_LAUNCH) {
    if (hm_put(&c->launch, key, e->ts) != 0) ncs_oom();
  } else if ((e->type == NCS_T_COLL || e->type == NCS_T_P2P) && e->ctx_kind == NCS_CTX_LOCAL) {
    if (hm_get(&c->launch, key, &v) && hm_put(&c->launched, seg_id(seg, e->id), v) != 0) ncs_oom();
  } else if (e->type == NCS_T_KERNEL_CH && e->parent_kind == NCS_REF_LOCAL &&
             hm_get(&c->launched, seg_id(seg, e->parent), &v)) {
    int64_t up = (int64_t)(e->f[NCS_F(KernelCh, pTimer)] - v);
    if (e->f[NCS_F(KernelCh, pTimer)] && up < c->upper) c->upper = up;
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
  if (it->what != NCS_ITEM_EVENT || it->ev.kind != NCS_REC_START) return;
  const ncs_event_t *e = &it->ev;
  launch_bound(c, e, seg);
  if (e->type == NCS_T_KERNEL_CH && c->ngaps < NCS_JOB_CLOCK_SAMPLES &&
      e->f[NCS_F(KernelCh, pTimer)]) {
    NCS_XGROW(c->gaps, c->capgaps, c->ngaps + 1);
    c->gaps[c->ngaps++] = (int64_t)(e->f[NCS_F(KernelCh, pTimer)] - e->ts);
  }
}

/* how the file's pTimer maps to its monotonic time */
static void gpu_map(clkscan_t *c, ncs_job_proc_t *p) {
  ncs_sort(c->gaps, c->ngaps, sizeof *c->gaps, ncs_cmp_i64);
  int64_t med = ncs_qi64(c->gaps, c->ngaps, 0.5), d = med - p->clk_off;
  if (c->nclk && d < 1000000000 && d > -1000000000) { /* within 1 s of realtime */
    p->gpu_domain = NCS_GPU_REALTIME, p->gpu_off = p->clk_off;
  } else { /* the least-delayed start, not one more than the tolerance above the median */
    size_t top = c->ngaps;
    while (top > 1 && c->gaps[top - 1] > med + NCS_JOB_GPU_TOL_NS) top--;
    p->gpu_domain = NCS_GPU_OWN, p->gpu_off = c->gaps[top - 1];
  }
  p->gap_p50 = med - p->gpu_off, p->gap_p99 = ncs_qi64(c->gaps, c->ngaps, 0.99) - p->gpu_off;
  p->gap_min = c->gaps[0] - p->gpu_off, p->gap_max = c->gaps[c->ngaps - 1] - p->gpu_off;
  p->gap_n = c->ngaps;
  if (c->upper != INT64_MAX) { /* the true offset lies in [max(pTimer - host), upper] */
    p->gpu_err = c->upper >= p->gpu_off ? c->upper - p->gpu_off : -1;
    p->gpu_conflict = c->upper < p->gpu_off;
  }
}

void clock_scan_end(void *state, ncs_job_proc_t *p) {
  clkscan_t *c = state;
  if (c->nclk) {
    ncs_sort(c->clk, c->nclk, sizeof *c->clk, ncs_cmp_i64);
    p->clk_off = ncs_qi64(c->clk, c->nclk, 0.5), p->clk_spread = c->cmax - c->cmin;
    p->clk_pairs = c->npairs > UINT32_MAX ? UINT32_MAX : (uint32_t)c->npairs;
  }
  if (c->ngaps) gpu_map(c, p);
  hm_free(&c->launch), hm_free(&c->launched);
  free(c->clk), free(c->gaps), free(c);
}

int64_t ncs_job_gpu_time(const ncs_job_t *j, uint32_t proc, uint64_t ptimer) {
  const ncs_job_proc_t *p = &j->procs[proc];
  if (!ptimer || p->gpu_domain == NCS_GPU_NONE) return 0;
  return ncs_job_time(j, proc, ptimer - (uint64_t)p->gpu_off);
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

/* how late a rank of host h may see a GPU event: the largest gpu_err of its processes (0 when
 * none has GPU times with a launch to bound them) */
static int64_t host_lateness(const ncs_job_t *j, uint32_t h) {
  int64_t e = 0;
  for (uint32_t i = 0; i < j->nprocs; i++)
    if (j->procs[i].nsegs && j->procs[i].host_index == h && j->procs[i].gpu_err > e)
      e = j->procs[i].gpu_err;
  return e;
}

void clock_host_offsets(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  int64_t late0 = host_lateness(j, 0);
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
    int64_t late = host_lateness(j, h);
    j->hosts[h].error = ncs_qi64(dev, n, 0.5) + ncs_qi64(sp, n, 0.5) + (late > late0 ? late : late0);
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
