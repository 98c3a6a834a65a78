/* gpu.c - CUPTI in the job model (docs/gpu-truth.md, "Analysis").
 *
 * Pass 1 reads each file alone; when the file holds CUPTI's kernel records (a GPU_STATE that is
 * active, or GPU records) its items also go through trace/gpujoin, which joins the kernels to the
 * operations. When the file is read the model keeps, per file:
 *   - per operation (segment, Coll/P2p id): the start of its first and the end of its last eager
 *     kernel, for op_finish (merge.c), which prefers them to KernelCh's times;
 *   - every replay of a captured operation, with the capture's metadata;
 *   - per GPU (CUPTI device): its NCCL and its other kernels as unions of intervals (monotonic
 *     time of the file), from which
 *     overlap and exposed communication are computed for any window;
 *   - launches whose kernels never came, with their operations (diagnose);
 *   - with opts.retain, every kernel (the timeline).
 * Kernel times are CUPTI's, mapped to the file's monotonic clock by the GPU_STATE clock pairs;
 * gpu_job_times moves them to job time once the clocks are known. Memory: the replays, pending
 * launches and interval unions stay for the job (a union grows only where kernels leave gaps);
 * the join itself is freed with its file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "trace/gpujoin.h"
#include "util/mem.h"

const char *const ncs_gs_names[NCS_GS_N] = {"none", "cupti", "kernelch"};

/* ------------------------------------------------------------------ intervals */
static int iv_cmp(const void *a, const void *b) {
  const ncs_iv_t *x = a, *y = b;
  if (x->from != y->from) return x->from < y->from ? -1 : 1;
  return (x->to > y->to) - (x->to < y->to);
}

size_t ncs_iv_union(ncs_iv_t *v, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++)
    if (v[i].to > v[i].from) v[w++] = v[i];
  if (!w) return 0;
  qsort(v, w, sizeof *v, iv_cmp);
  size_t o = 0;
  for (size_t i = 1; i < w; i++) {
    if (v[i].from <= v[o].to) {
      if (v[i].to > v[o].to) v[o].to = v[i].to;
    } else {
      v[++o] = v[i];
    }
  }
  return o + 1;
}

static int64_t clip(int64_t a, int64_t b, int64_t from, int64_t to) {
  if (a < from) a = from;
  if (b > to) b = to;
  return b > a ? b - a : 0;
}

int64_t ncs_iv_len(const ncs_iv_t *u, size_t n, int64_t from, int64_t to) {
  int64_t s = 0;
  for (size_t i = 0; i < n; i++) s += clip(u[i].from, u[i].to, from, to);
  return s;
}

int64_t ncs_iv_overlap(const ncs_iv_t *a, size_t na, const ncs_iv_t *b, size_t nb, int64_t from,
                       int64_t to) {
  int64_t s = 0;
  size_t i = 0, k = 0;
  while (i < na && k < nb) { /* both sorted and disjoint: one merge walk */
    int64_t lo = a[i].from > b[k].from ? a[i].from : b[k].from;
    int64_t hi = a[i].to < b[k].to ? a[i].to : b[k].to;
    if (hi > lo) s += clip(lo, hi, from, to);
    if (a[i].to < b[k].to)
      i++;
    else
      k++;
  }
  return s;
}

void ncs_job_gpu_overlap(const ncs_job_gpu_dev_t *d, int64_t from, int64_t to,
                         ncs_gpu_overlap_t *out) {
  from = (int64_t)((uint64_t)from - (uint64_t)d->off), to = (int64_t)((uint64_t)to - (uint64_t)d->off);
  out->comm_ns = ncs_iv_len(d->nccl, d->nnccl, from, to);
  out->compute_ns = ncs_iv_len(d->compute, d->ncompute, from, to);
  out->overlap_ns = ncs_iv_overlap(d->nccl, d->nnccl, d->compute, d->ncompute, from, to);
  out->exposed_ns = out->comm_ns - out->overlap_ns;
}

/* ------------------------------------------------------------------ pass 1 */
typedef struct {
  ncs_gj_t *gj;                 /* NULL until the file shows CUPTI at work */
  ncs_job_gpu_t g;              /* strings not yet pooled: copied at the end */
  char reason[256], holder[128], library[256];
  uint64_t seg_c[NCS_GK_MAX + 1]; /* the current segment's latest counters */
  uint64_t tot[NCS_GK_MAX + 1];   /* earlier segments' */
  uint64_t *flush;              /* per segment: the last successful flush (monotonic) */
  size_t nflush, capflush;
  uint32_t seg;
} gscan_t;

void gpu_scan_begin(void **state) { *state = ncs_xcalloc(1, sizeof(gscan_t)); }

static void seg_done(gscan_t *s) {
  for (int k = 0; k <= NCS_GK_MAX; k++) s->tot[k] += s->seg_c[k], s->seg_c[k] = 0;
}

int gpu_scan_item(void *state, const ncs_reader_t *r, const ncs_item_t *it) {
  gscan_t *s = state;
  if (it->what == NCS_ITEM_SEGMENT) {
    seg_done(s);
    s->seg = ncs_reader_segment(r) ? ncs_reader_segment(r)->index : 0;
  }
  if (it->what == NCS_ITEM_GPU_STATE) {
    const ncs_gpu_state_t *st = &it->gpu_state;
    s->g.have_state = 1, s->g.state = st->state;
    if (st->state < NCS_GPU_NSTATES) s->g.states_seen |= 1u << st->state;
    if (st->flags & NCS_GSF_SUMMARY) s->g.summary_mode = 1;
    if (st->reason && *st->reason) snprintf(s->reason, sizeof s->reason, "%s", st->reason);
    if (st->holder && *st->holder) snprintf(s->holder, sizeof s->holder, "%s", st->holder);
    if (st->library && *st->library) snprintf(s->library, sizeof s->library, "%s", st->library);
    for (uint32_t k = 0; k < st->ncounters && k < NCS_GPU_MAX_COUNTERS; k++)
      if (st->keys[k] <= NCS_GK_MAX && st->values[k] >= s->seg_c[st->keys[k]])
        s->seg_c[st->keys[k]] = st->values[k]; /* totals so far: the latest is the largest */
    NCS_XGROW(s->flush, s->capflush, s->seg + 1);
    while (s->nflush <= s->seg) s->flush[s->nflush++] = 0;
    if (s->seg_c[NCS_GK_FLUSH_NS] > s->flush[s->seg]) s->flush[s->seg] = s->seg_c[NCS_GK_FLUSH_NS];
  }
  int start = (it->what == NCS_ITEM_GPU_STATE && it->gpu_state.state == NCS_GPU_ACTIVE) ||
              it->what == NCS_ITEM_GPU;
  if (!s->gj && start) {
    if (!(s->gj = ncs_gj_new())) return -1;
    ncs_item_t seg = {.what = NCS_ITEM_SEGMENT}; /* the join keys by segment: tell it which */
    if (ncs_reader_segment(r) && ncs_gj_item(s->gj, r, &seg) != 0) return -1;
  }
  return s->gj ? ncs_gj_item(s->gj, r, it) : 0;
}

/* ---- after the file: what the model keeps */
static uint64_t op_key(uint32_t seg, uint64_t id) { return ((uint64_t)seg << 44) ^ id; }

static int is_nccl_name(const char *n) {
  return !strncmp(n, "ncclDevKernel", 13) || !strncmp(n, "ncclKernel", 10);
}

static gop_t *gop_ref(ncs_job_t *j, uint32_t proc, uint32_t seg, uint64_t id) {
  jpriv_t *P = jp(j);
  int created;
  uint64_t *v = hm_ref(&P->gop_map[proc], op_key(seg, id), 0, &created);
  if (!v) ncs_oom();
  if (created) {
    NCS_XGROW(P->gops, P->capgops, P->ngops + 1);
    memset(&P->gops[P->ngops], 0, sizeof *P->gops);
    *v = ++P->ngops;
  }
  return &P->gops[*v - 1];
}

const gop_t *gpu_op(const ncs_job_t *j, uint32_t proc, uint32_t seg, uint64_t id) {
  const jpriv_t *P = jp(j);
  uint64_t v;
  if (!P->gop_map || !hm_get(&P->gop_map[proc], op_key(seg, id), &v)) return NULL;
  return &P->gops[v - 1];
}

int ncs_job_cupti_op(const ncs_job_t *j, uint32_t proc, uint32_t seg, uint64_t id, int64_t *start,
                     int64_t *end) {
  const gop_t *g = proc < j->nprocs ? gpu_op(j, proc, seg, id) : NULL;
  if (!g || !g->start || g->end <= g->start) return 0;
  *start = ncs_job_time(j, proc, g->start), *end = ncs_job_time(j, proc, g->end);
  return 1;
}

/* as ncs_op_t.bytes: the one table of nccl-tests' conventions (trace/format.h) */
static uint64_t op_bytes(const ncs_job_t *j, const char *func, const char *dtype, uint64_t count,
                         uint32_t comm) {
  int n = comm != UINT32_MAX ? j->comms[comm].nranks : 1;
  return ncs_op_bytes(func, dtype, count, n > 0 ? n : 1, 0);
}

/* a device of the file: its index in j->gdevs */
typedef struct {
  ncs_iv_t *v;
  size_t n, cap;
} ivs_t;

#define IV_MAX (1ull << 62) /* times of a hostile file beyond it are left out: no overflow */
static void iv_push(ivs_t *s, uint64_t a, uint64_t b) {
  if (!a || b <= a || b > IV_MAX) return;
  NCS_XGROW(s->v, s->cap, s->n + 1);
  s->v[s->n++] = (ncs_iv_t){(int64_t)a, (int64_t)b};
}

static void addf(char *b, size_t cap, size_t *n, const char *fmt, unsigned long long v) {
  if (*n >= cap) return;
  *n += (size_t)snprintf(b + *n, cap - *n, "%s", *n ? "; " : "");
  if (*n < cap) *n += (size_t)snprintf(b + *n, cap - *n, fmt, v);
}

/* why CUPTI's picture of this file is incomplete, or "" */
static const char *lost_reason(ncs_job_t *j, uint32_t proc, const ncs_job_gpu_t *g) {
  char b[512] = "";
  size_t n = 0;
  if (g->cupti_dropped) addf(b, sizeof b, &n, "CUPTI dropped %llu records", g->cupti_dropped);
  if (g->no_buffer) addf(b, sizeof b, &n, "%llu buffer requests refused (pool empty)", g->no_buffer);
  if (g->bad_buffer) addf(b, sizeof b, &n, "%llu buffers undecodable", g->bad_buffer);
  if (g->host_drops) addf(b, sizeof b, &n, "%llu launch records lost", g->host_drops);
  if (g->untracked) addf(b, sizeof b, &n, "%llu launches not tracked", g->untracked);
  if (g->write_lost) addf(b, sizeof b, &n, "%llu GPU records not written", g->write_lost);
  if (g->map_full + g->node_set_full)
    addf(b, sizeof b, &n, "graph bookkeeping full %llu times", g->map_full + g->node_set_full);
  if ((g->states_seen & (1u << NCS_GPU_FAILED)) && (g->states_seen & (1u << NCS_GPU_ACTIVE)))
    addf(b, sizeof b, &n, "CUPTI failed while running%.0llu", 0);
  if (g->summary_mode) addf(b, sizeof b, &n, "compute kernels only summarized per stream%.0llu", 0);
  /* damaged bytes or a cut tail while CUPTI was active lose GPU records too */
  for (uint32_t i = 0; i < j->nlosses && g->kernels; i++) {
    const ncs_job_loss_t *l = &j->losses[i];
    if (l->proc != proc || (l->kind != NCS_JL_GAP && l->kind != NCS_JL_TAIL)) continue;
    addf(b, sizeof b, &n, l->kind == NCS_JL_GAP ? "the file has damaged bytes%.0llu"
                                                : "the file is cut short%.0llu", 0);
    break;
  }
  return ncs_pool_str(&j->strs, b);
}

void gpu_scan_end(void *state, ncs_job_t *j, uint32_t proc) {
  gscan_t *s = state;
  jpriv_t *P = jp(j);
  seg_done(s);
  ncs_job_gpu_t *g = &j->gpu[proc];
  *g = s->g;
  g->reason = ncs_pool_str(&j->strs, s->reason), g->holder = ncs_pool_str(&j->strs, s->holder);
  g->library = ncs_pool_str(&j->strs, s->library);
  const uint64_t *c = s->tot;
  g->cupti_dropped = c[NCS_GK_CUPTI_DROPPED], g->no_buffer = c[NCS_GK_NO_BUFFER];
  g->bad_buffer = c[NCS_GK_BAD_BUFFER], g->untracked = c[NCS_GK_UNTRACKED];
  g->host_drops = c[NCS_GK_HOST_DROPS], g->write_lost = c[NCS_GK_WRITE_LOST];
  g->map_full = c[NCS_GK_MAP_FULL], g->node_set_full = c[NCS_GK_NODE_SET_FULL];
  g->names_full = c[NCS_GK_NAMES_FULL], g->flush_errors = c[NCS_GK_FLUSH_ERRORS];
  g->summarized = c[NCS_GK_SUMMARIZED];
  for (size_t i = 0; i < s->nflush; i++)
    if (s->flush[i] > g->flush_ns) g->flush_ns = s->flush[i];
  ncs_gj_t *gj = s->gj;
  if (gj) {
    ncs_gj_finish(gj);
    const ncs_gj_summary_t *sum = ncs_gj_summary(gj);
    g->kernels = sum->kernels, g->nccl_eager = sum->nccl_eager, g->nccl_replays = sum->nccl_replays;
    g->compute = sum->compute, g->bad_time = sum->bad_time;
    g->unjoined_launch = sum->unjoined_launch;
    /* operations: captured ones, and their eager kernels' span */
    for (size_t i = 0; i < ncs_gj_nexecs(gj); i++) { /* every Coll/P2p of a captured operation */
      uint32_t seg, oi;
      uint64_t id;
      ncs_gj_exec(gj, i, &seg, &id, &oi);
      const ncs_gj_op_t *o = ncs_gj_op(gj, oi);
      if (o && o->captured) gop_ref(j, proc, seg, id)->captured = 1;
    }
    /* devices of this file */
    uint32_t dev0 = j->ngdevs;
    ivs_t *nccl = NULL, *comp = NULL;
    size_t ndev = 0;
    for (size_t i = 0; i < ncs_gj_nkernels(gj); i++) {
      const ncs_gj_kernel_t *k = ncs_gj_kernel(gj, i);
      int graph = (k->k.flags & NCS_GKF_GRAPH) != 0;
      int isnccl = k->k.launch != 0 || is_nccl_name(k->name);
      uint32_t d = dev0;
      while (d < j->ngdevs && j->gdevs[d].device != (int32_t)k->k.device) d++;
      if (d == j->ngdevs) {
        NCS_XGROW(j->gdevs, P->cap_gdevs, j->ngdevs + 1);
        j->gdevs[j->ngdevs++] = (ncs_job_gpu_dev_t){.proc = proc, .device = (int32_t)k->k.device,
                                                    .rank = -1, .comm = UINT32_MAX};
        nccl = ncs_xrealloc(nccl, (ndev + 1) * sizeof *nccl);
        comp = ncs_xrealloc(comp, (ndev + 1) * sizeof *comp);
        nccl[ndev] = comp[ndev] = (ivs_t){0};
        ndev++;
      }
      ncs_job_gpu_dev_t *D = &j->gdevs[d];
      const ncs_job_member_t *m =
          k->comm >= 0 ? ncs_job_member(j, proc, k->segment, (uint64_t)k->comm) : NULL;
      if (isnccl) {
        D->nccl_kernels++;
        iv_push(&nccl[d - dev0], k->start_mono, k->end_mono);
        if (m && (D->rank < 0 || m->rank < D->rank)) D->rank = m->rank, D->comm = m->comm;
      } else {
        D->compute_kernels++;
        iv_push(&comp[d - dev0], k->start_mono, k->end_mono);
      }
      if (k->start_mono && k->end_mono >= k->start_mono) {
        if (!D->from || (int64_t)k->start_mono < D->from) D->from = (int64_t)k->start_mono;
        if ((int64_t)k->end_mono > D->to) D->to = (int64_t)k->end_mono;
        if (!g->active_from || (int64_t)k->start_mono < g->active_from)
          g->active_from = (int64_t)k->start_mono;
        if ((int64_t)k->end_mono > g->active_to) g->active_to = (int64_t)k->end_mono;
      }
      const ncs_gj_op_t *o0 = k->nops ? ncs_gj_op(gj, k->ops[0]) : NULL;
      if (P->retain) {
        NCS_XGROW(j->kernels, P->cap_kernels, j->nkernels + 1);
        j->kernels[j->nkernels++] = (ncs_job_kernel_t){
            .proc = proc, .seg = k->segment, .device = (int32_t)k->k.device, .stream = k->k.stream,
            .name = ncs_pool_str(&j->strs, k->name), .start = (int64_t)k->start_mono,
            .end = (int64_t)k->end_mono, .nccl = (uint8_t)isnccl, .graph = k->k.graph != 0,
            .replay = k->k.replay, .graph_id = k->k.graph, .rank = m ? m->rank : -1,
            .comm = m ? m->comm : UINT32_MAX, .func = ncs_pool_str(&j->strs, o0 ? o0->func : ""),
            .seq = o0 ? o0->seq : -1, .nops = k->nops, .op_seg = o0 ? o0->segment : 0,
            .op_id = o0 ? o0->exec : 0};
      }
      for (uint32_t q = 0; q < k->nops; q++) {
        const ncs_gj_op_t *o = ncs_gj_op(gj, k->ops[q]);
        if (!o) continue;
        if (graph) {
          if (o->exec) gop_ref(j, proc, o->segment, o->exec)->replays++;
          const ncs_job_member_t *om =
              o->comm >= 0 ? ncs_job_member(j, proc, o->segment, (uint64_t)o->comm) : NULL;
          uint32_t comm = om ? om->comm : UINT32_MAX;
          NCS_XGROW(j->replays, P->cap_replays, j->nreplays + 1);
          j->replays[j->nreplays++] = (ncs_job_replay_t){
              .proc = proc, .seg = o->segment, .comm = comm, .rank = om ? om->rank : -1,
              .func = ncs_pool_str(&j->strs, o->func), .dtype = ncs_pool_str(&j->strs, o->dtype),
              .count = o->count, .bytes = op_bytes(j, o->func, o->dtype, o->count, comm),
              .seq = o->seq, .op_id = o->exec, .replay = k->k.replay, .graph = k->k.graph,
              .stream = k->k.stream, .device = (int32_t)k->k.device,
              .name = ncs_pool_str(&j->strs, k->name), .start = (int64_t)k->start_mono,
              .end = (int64_t)k->end_mono};
        } else if (o->exec) {
          gop_t *x = gop_ref(j, proc, o->segment, o->exec);
          x->kernels++;
          if (k->start_mono && (!x->start || k->start_mono < x->start)) x->start = k->start_mono;
          if (k->end_mono > x->end) x->end = k->end_mono;
        }
      }
    }
    for (size_t d = 0; d < ndev; d++) {
      ncs_job_gpu_dev_t *D = &j->gdevs[dev0 + d];
      D->nnccl = ncs_iv_union(nccl[d].v, nccl[d].n), D->nccl = nccl[d].v;
      D->ncompute = ncs_iv_union(comp[d].v, comp[d].n), D->compute = comp[d].v;
    }
    free(nccl), free(comp);
    /* launches whose kernels never came, with the operations of their group */
    hmap_t plan = {0};
    if (ncs_gj_npending(gj))
      for (size_t q = ncs_gj_nops(gj); q-- > 0;) { /* the first op of each (seg, group, comm) */
        const ncs_gj_op_t *o = ncs_gj_op(gj, q);
        if (!o->group) continue;
        uint64_t key = hm_mix2(op_key(o->segment, o->group), (uint64_t)(uint32_t)o->comm);
        int created;
        uint64_t *v = hm_ref(&plan, key, 0, &created);
        if (!v) ncs_oom();
        *v = ((*v >> 32) + 1) << 32 | q; /* count, first op */
      }
    for (size_t i = 0; i < ncs_gj_npending(gj); i++) {
      uint32_t seg;
      const ncs_gpu_rec_t *p = ncs_gj_pending(gj, i, &seg);
      int32_t lc = p->comm ? (int32_t)p->comm - 1 : -1;
      const ncs_job_member_t *m = lc >= 0 ? ncs_job_member(j, proc, seg, (uint64_t)lc) : NULL;
      uint64_t v;
      const ncs_gj_op_t *o = NULL;
      uint32_t nops = 0;
      if (p->group && hm_get(&plan, hm_mix2(op_key(seg, p->group), (uint64_t)(uint32_t)lc), &v))
        o = ncs_gj_op(gj, (size_t)(v & 0xffffffffu)), nops = (uint32_t)(v >> 32);
      uint64_t fl = seg < s->nflush ? s->flush[seg] : 0;
      NCS_XGROW(j->pending, P->cap_pending, j->npending + 1);
      j->pending[j->npending++] = (ncs_job_pending_t){
          .proc = proc, .seg = seg, .ts = (int64_t)p->ts, .corr = p->corr, .launch = p->launch,
          .stream = p->stream, .graph = (p->flags & NCS_GLF_GRAPH) ? p->graph : 0,
          .comm = m ? m->comm : UINT32_MAX, .rank = m ? m->rank : -1,
          .func = ncs_pool_str(&j->strs, o ? o->func : ""), .seq = o ? o->seq : -1,
          .op_id = o ? o->exec : 0, .nops = nops, .before_flush = p->ts && fl && p->ts < fl};
      g->pending++;
    }
    hm_free(&plan);
    ncs_gj_free(gj);
  }
  g->lost = lost_reason(j, proc, g);
  free(s->flush);
  free(s);
}

static int rp_cmp(const void *a, const void *b) {
  const ncs_job_replay_t *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  int c = strcmp(x->func, y->func);
  if (c) return c;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->replay != y->replay) return x->replay < y->replay ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return (x->start > y->start) - (x->start < y->start);
}

void gpu_job_times(ncs_job_t *j) {
#define JT(p, t) ((t) ? ncs_job_time(j, (p), (uint64_t)(t)) : 0)
  for (uint32_t i = 0; j->gpu && i < j->nprocs; i++)
    j->gpu[i].active_from = JT(i, j->gpu[i].active_from), j->gpu[i].active_to = JT(i, j->gpu[i].active_to);
  for (uint32_t d = 0; d < j->ngdevs; d++) {
    ncs_job_gpu_dev_t *D = &j->gdevs[d];
    D->off = j->procs[D->proc].job_off;
    D->from = JT(D->proc, D->from), D->to = JT(D->proc, D->to);
  }
  for (size_t i = 0; i < j->nreplays; i++) {
    ncs_job_replay_t *r = &j->replays[i];
    r->start = JT(r->proc, r->start), r->end = JT(r->proc, r->end);
  }
  for (size_t i = 0; i < j->nkernels; i++) {
    ncs_job_kernel_t *k = &j->kernels[i];
    k->start = JT(k->proc, k->start), k->end = JT(k->proc, k->end);
  }
  for (size_t i = 0; i < j->npending; i++) j->pending[i].ts = JT(j->pending[i].proc, j->pending[i].ts);
#undef JT
  if (j->nreplays) qsort(j->replays, j->nreplays, sizeof *j->replays, rp_cmp);
}

void gpu_free(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  for (uint32_t i = 0; P->gop_map && i < j->nprocs; i++) hm_free(&P->gop_map[i]);
  free(P->gop_map), free(P->gops);
  for (uint32_t d = 0; d < j->ngdevs; d++) free(j->gdevs[d].nccl), free(j->gdevs[d].compute);
  free(j->gdevs), free(j->replays), free(j->kernels), free(j->pending), free(j->gpu);
}
