/* gpujoin.c - kernels to NCCL operations, read side (gpujoin.h, docs/gpu-truth.md "The join").
 *
 * Everything is keyed by (segment, id): event ids, communicator indexes and graph ids are per
 * segment. The file is read once; ncs_gj_finish then walks kernel -> KernelLaunch -> (GroupApi,
 * communicator) -> the group's API operations on that communicator.
 */
#include "trace/gpujoin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growable array and a u64 -> u32 hash index */
typedef struct {
  void *v;
  size_t n, cap, sz;
} vec_t;

static void *vec_push(vec_t *a) {
  if (a->n == a->cap) {
    size_t c = a->cap ? 2 * a->cap : 64;
    void *p = realloc(a->v, c * a->sz);
    if (!p) return NULL;
    a->v = p, a->cap = c;
  }
  void *e = (char *)a->v + a->n++ * a->sz;
  memset(e, 0, a->sz);
  return e;
}
#define AT(a, T, i) (&((T *)(a).v)[i])

typedef struct {
  uint64_t *k;
  uint32_t *v;
  size_t cap, n;
} idx_t;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
  return x;
}

static int idx_put(idx_t *m, uint64_t k, uint32_t v);
static int idx_grow(idx_t *m) {
  idx_t n = {calloc(m->cap ? 2 * m->cap : 1024, 8), calloc(m->cap ? 2 * m->cap : 1024, 4),
             m->cap ? 2 * m->cap : 1024, 0};
  if (!n.k || !n.v) {
    free(n.k), free(n.v);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->k[i]) idx_put(&n, m->k[i], m->v[i]);
  free(m->k), free(m->v);
  *m = n;
  return 0;
}

/* keys are never 0 (callers add 1 to anything that could be) */
static int idx_put(idx_t *m, uint64_t k, uint32_t v) {
  if ((m->n + 1) * 2 > m->cap && idx_grow(m) != 0) return -1;
  size_t i = mix(k) & (m->cap - 1);
  while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->k[i]) m->n++;
  m->k[i] = k, m->v[i] = v;
  return 0;
}

static int idx_get(const idx_t *m, uint64_t k, uint32_t *v) {
  if (!m->cap) return 0;
  for (size_t i = mix(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (m->k[i] == k) {
      *v = m->v[i];
      return 1;
    }
    if (!m->k[i]) return 0;
  }
}

/* an id of a segment as one key; ids are below 2^44, segments below 2^19 */
static uint64_t key(uint32_t seg, uint64_t id) { return ((uint64_t)seg << 44 ^ id) + 1; }

/* ---- what is kept while reading */
typedef struct {
  uint32_t seg;
  uint64_t id;
  int32_t comm;
  uint64_t group;
} launch_t;

typedef struct {
  uint32_t seg;
  uint64_t mono, cupti, width;
} pair_t;

typedef struct {
  uint32_t seg;
  uint64_t id, parent; /* Coll/P2p: parent API id (local ref), 0 */
  int64_t seq;
  uint8_t type;
  int32_t comm;
  const char *func, *dtype;
  uint64_t count;
  uint32_t cflags; /* COMPLETE flags, last seen */
  int completed;
  uint32_t op;     /* its operation (fold_execs) */
} exec_t;

struct ncs_gj {
  uint32_t seg; /* current segment */
  vec_t kernels, ops, launches, pairs, pending, pending_seg, execs, opsidx;
  idx_t launch_by_id, op_by_api, exec_by_id, comm_ids;
  idx_t captured, nccl_execs; /* (segment, corr) of captured launches; exec graphs with NCCL nodes */
  vec_t comm_vals; /* uint64_t commHash per (segment, comm) registered in comm_ids */
  vec_t strs;      /* owned copies of strings (char *) */
  ncs_gj_summary_t sum;
};

ncs_gj_t *ncs_gj_new(void) {
  ncs_gj_t *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->kernels.sz = sizeof(ncs_gj_kernel_t), j->ops.sz = sizeof(ncs_gj_op_t);
  j->launches.sz = sizeof(launch_t), j->pairs.sz = sizeof(pair_t);
  j->pending.sz = sizeof(ncs_gpu_rec_t), j->pending_seg.sz = sizeof(uint32_t);
  j->execs.sz = sizeof(exec_t), j->opsidx.sz = sizeof(uint32_t), j->comm_vals.sz = sizeof(uint64_t);
  j->strs.sz = sizeof(char *);
  return j;
}

void ncs_gj_free(ncs_gj_t *j) {
  if (!j) return;
  for (size_t i = 0; i < j->strs.n; i++) free(*AT(j->strs, char *, i));
  vec_t *v[] = {&j->kernels, &j->ops, &j->launches, &j->pairs, &j->pending, &j->pending_seg,
                &j->execs, &j->opsidx, &j->comm_vals, &j->strs};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) free(v[i]->v);
  idx_t *m[] = {&j->launch_by_id, &j->op_by_api, &j->exec_by_id, &j->comm_ids, &j->captured,
                &j->nccl_execs};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) free(m[i]->k), free(m[i]->v);
  free(j);
}

/* strings of the reader die with their segment: keep a copy */
static const char *keep(ncs_gj_t *j, const char *s) {
  if (!s) return "?";
  char **slot = vec_push(&j->strs);
  if (!slot) return "?";
  *slot = strdup(s);
  return *slot ? *slot : "?";
}

static int32_t local_comm(const ncs_event_t *e) {
  return e->ctx_kind == NCS_CTX_LOCAL ? (int32_t)e->ctx : -1;
}

static int on_start(ncs_gj_t *j, const ncs_event_t *e) {
  uint32_t seg = j->seg;
  if (e->type == NCS_T_KERNEL_LAUNCH) {
    launch_t *l = vec_push(&j->launches);
    if (!l) return -1;
    l->seg = seg, l->id = e->id, l->comm = local_comm(e);
    l->group = e->parent_kind == NCS_REF_LOCAL ? e->parent : 0;
    return idx_put(&j->launch_by_id, key(seg, e->id), (uint32_t)(j->launches.n - 1));
  }
  if (e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API) {
    ncs_gj_op_t *o = vec_push(&j->ops);
    if (!o) return -1;
    int coll = e->type == NCS_T_COLL_API;
    o->segment = seg, o->api = e->id, o->api_type = e->type, o->comm = local_comm(e), o->seq = -1;
    o->group = e->parent_kind == NCS_REF_LOCAL ? e->parent : 0;
    o->func = keep(j, e->fstr[coll ? NCS_F(CollApi, func) : NCS_F(P2pApi, func)]);
    o->dtype = keep(j, e->fstr[coll ? NCS_F(CollApi, datatype) : NCS_F(P2pApi, datatype)]);
    o->count = e->f[coll ? NCS_F(CollApi, count) : NCS_F(P2pApi, count)];
    o->captured = (int)e->f[coll ? NCS_F(CollApi, graphCaptured) : NCS_F(P2pApi, graphCaptured)];
    return idx_put(&j->op_by_api, key(seg, e->id), (uint32_t)(j->ops.n - 1));
  }
  if (e->type == NCS_T_COLL || e->type == NCS_T_P2P) {
    exec_t *x = vec_push(&j->execs);
    if (!x) return -1;
    int coll = e->type == NCS_T_COLL;
    x->seg = seg, x->id = e->id, x->type = e->type, x->comm = local_comm(e);
    x->parent = e->parent_kind == NCS_REF_LOCAL ? e->parent : 0;
    x->seq = coll ? (int64_t)e->f[NCS_F(Coll, seqNumber)] : -1;
    x->func = keep(j, e->fstr[coll ? NCS_F(Coll, func) : NCS_F(P2p, func)]);
    x->dtype = keep(j, e->fstr[coll ? NCS_F(Coll, datatype) : NCS_F(P2p, datatype)]);
    x->count = e->f[coll ? NCS_F(Coll, count) : NCS_F(P2p, count)];
    return idx_put(&j->exec_by_id, key(seg, e->id), (uint32_t)(j->execs.n - 1));
  }
  return 0;
}

static void on_complete(ncs_gj_t *j, const ncs_event_t *e) {
  uint32_t i;
  if (!idx_get(&j->exec_by_id, key(j->seg, e->id), &i)) return;
  exec_t *x = AT(j->execs, exec_t, i);
  x->cflags = e->cflags, x->completed = 1; /* a revision replaces an earlier one */
}

/* Launches that may not have completed: LAUNCH and PENDING records (eager, or a graph launch
 * restated), GLAUNCH records of graphs holding NCCL nodes. finish() keeps those whose kernels did
 * not come. */
static int on_gpu(ncs_gj_t *j, const ncs_gpu_rec_t *g) {
  if (g->kind == NCS_GR_LAUNCH) j->sum.launches++;
  if (g->kind == NCS_GR_GNODE) /* captured, not launched */
    return idx_put(&j->captured, key(j->seg, g->corr), 1);
  if (g->kind == NCS_GR_GCLONE) return idx_put(&j->nccl_execs, key(j->seg, g->node >> 32), 1);
  if (g->kind == NCS_GR_LAUNCH || g->kind == NCS_GR_PENDING || g->kind == NCS_GR_GLAUNCH) {
    ncs_gpu_rec_t *p = vec_push(&j->pending);
    uint32_t *s = vec_push(&j->pending_seg);
    if (!p || !s) return -1;
    *p = *g, *s = j->seg;
    p->name = NULL;
    return 0;
  }
  if (g->kind != NCS_GR_KERNEL) return 0;
  ncs_gj_kernel_t *k = vec_push(&j->kernels);
  if (!k) return -1;
  k->segment = j->seg, k->k = *g, k->comm = -1;
  if (g->name) snprintf(k->name, sizeof k->name, "%s", g->name);
  k->k.name = NULL;
  j->sum.kernels++;
  if (g->flags & NCS_GKF_BAD_TIME) j->sum.bad_time++;
  return 0;
}

int ncs_gj_item(ncs_gj_t *j, const ncs_reader_t *r, const ncs_item_t *it) {
  switch (it->what) {
  case NCS_ITEM_SEGMENT: j->seg = ncs_reader_segment(r)->index; return 0;
  case NCS_ITEM_COMM: {
    uint64_t *v = vec_push(&j->comm_vals);
    if (!v) return -1;
    *v = it->comm.comm_id;
    return idx_put(&j->comm_ids, key(j->seg, it->comm.index), (uint32_t)(j->comm_vals.n - 1));
  }
  case NCS_ITEM_EVENT:
    if (it->ev.kind == NCS_REC_START) return on_start(j, &it->ev);
    if (it->ev.kind == NCS_REC_COMPLETE) on_complete(j, &it->ev);
    return 0;
  case NCS_ITEM_GPU_STATE: {
    const ncs_gpu_state_t *s = &it->gpu_state;
    j->sum.have_state = 1, j->sum.last_state = s->state;
    if (s->state < NCS_GPU_NSTATES) j->sum.states[s->state]++;
    if (!s->clock_mono_ns || !s->clock_cupti_ns) return 0;
    pair_t *p = vec_push(&j->pairs);
    if (!p) return -1;
    p->seg = j->seg, p->mono = s->clock_mono_ns, p->cupti = s->clock_cupti_ns, p->width = s->clock_width_ns;
    return 0;
  }
  case NCS_ITEM_GPU: return on_gpu(j, &it->gpu);
  default: return 0;
  }
}

/* ---- time */

uint64_t ncs_gj_to_mono(const ncs_gj_t *j, uint32_t segment, uint64_t cupti, uint64_t *err) {
  const pair_t *best = NULL, *next = NULL;
  for (size_t i = 0; i < j->pairs.n; i++) { /* pairs come in time order within a segment */
    const pair_t *p = AT(j->pairs, pair_t, i);
    if (p->seg != segment) continue;
    if (p->cupti <= cupti || !best) {
      if (best && best->cupti > cupti) next = best; /* the first pair, after cupti */
      best = p;
    } else if (!next) {
      next = p;
    }
  }
  if (!best || !cupti) return 0;
  /* modulo 2^64: the same numbers as signed offsets for any real clock pair, and no signed
   * overflow for the hostile ones a damaged or crafted file may hold */
  uint64_t off = best->cupti - best->mono;
  if (err) {
    uint64_t step = 0;
    if (next && next != best) {
      uint64_t d = (next->cupti - next->mono) - off;
      step = d > UINT64_MAX / 2 ? 0 - d : d; /* |d| of the offset's change */
    }
    *err = best->width / 2 + step;
  }
  return cupti - off;
}

/* ---- the join */

static void attach(ncs_gj_t *j, ncs_gj_kernel_t *k, ncs_gj_op_t *o, uint32_t oi) {
  uint32_t *slot = vec_push(&j->opsidx);
  if (!slot) return;
  *slot = oi;
  k->nops++;
  o->kernels++;
  o->source = NCS_GJ_CUPTI;
  if (k->start_mono && (!o->gpu_start || k->start_mono < o->gpu_start)) o->gpu_start = k->start_mono;
  if (k->end_mono > o->gpu_end) o->gpu_end = k->end_mono;
}

/* Graph kernels the writer could not give a replay index (NCS_GKF_REPLAY_ORDER): the rank of
 * their correlation id among the distinct ids of their exec graph's kernels in the segment. */
typedef struct {
  uint32_t seg, rank;
  uint64_t graph, corr;
} gc_t;

static int gc_cmp(const void *a, const void *b) {
  const gc_t *x = a, *y = b;
  if (x->seg != y->seg) return x->seg < y->seg ? -1 : 1;
  if (x->graph != y->graph) return x->graph < y->graph ? -1 : 1;
  return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static void replay_by_order(ncs_gj_t *j) {
  size_t n = 0;
  gc_t *v = malloc((j->kernels.n + 1) * sizeof *v);
  if (!v) return;
  for (size_t i = 0; i < j->kernels.n; i++) {
    const ncs_gj_kernel_t *k = AT(j->kernels, ncs_gj_kernel_t, i);
    if (k->k.graph && (k->k.flags & NCS_GKF_REPLAY_ORDER))
      v[n++] = (gc_t){k->segment, 0, k->k.graph, k->k.corr};
  }
  qsort(v, n, sizeof *v, gc_cmp);
  for (size_t x = 0; x < n; x++) { /* 1, 2, ... per graph, one step per distinct id */
    int same_graph = x && v[x].seg == v[x - 1].seg && v[x].graph == v[x - 1].graph;
    v[x].rank = !same_graph ? 1 : v[x - 1].rank + (v[x].corr != v[x - 1].corr);
  }
  for (size_t i = 0; i < j->kernels.n && n; i++) {
    ncs_gj_kernel_t *k = AT(j->kernels, ncs_gj_kernel_t, i);
    if (!k->k.graph || !(k->k.flags & NCS_GKF_REPLAY_ORDER)) continue;
    gc_t want = {k->segment, 0, k->k.graph, k->k.corr};
    const gc_t *e = bsearch(&want, v, n, sizeof *v, gc_cmp);
    if (e) k->k.replay = e->rank;
  }
  free(v);
}

/* (segment, GroupApi, communicator): the key of one group's work on one communicator */
static uint64_t plan_key(uint32_t seg, uint64_t group, int32_t comm) {
  return key(seg, group) * 0x9E3779B97F4A7C15ull + (uint64_t)(uint32_t)comm + 1;
}

/* Coll/P2p executions onto their API operation: seq, and whether KernelCh completed them. */
static void fold_execs(ncs_gj_t *j) {
  for (size_t i = 0; i < j->execs.n; i++) {
    exec_t *x = AT(j->execs, exec_t, i);
    uint32_t oi;
    if (!x->parent || !idx_get(&j->op_by_api, key(x->seg, x->parent), &oi)) {
      ncs_gj_op_t *o = vec_push(&j->ops); /* no API event (ABI v4, or api not recorded) */
      if (!o) continue;
      o->segment = x->seg, o->func = x->func, o->dtype = x->dtype, o->count = x->count;
      o->comm = x->comm, o->seq = -1;
      oi = (uint32_t)(j->ops.n - 1);
    }
    ncs_gj_op_t *o = AT(j->ops, ncs_gj_op_t, oi);
    x->op = oi;
    if (o->seq < 0) o->seq = x->seq;
    if (!o->exec) o->exec = x->id;
    o->nexec++;
    if (x->completed && (x->cflags & NCS_CF_KERNEL)) o->source = NCS_GJ_KERNELCH;
  }
}

void ncs_gj_finish(ncs_gj_t *j) {
  fold_execs(j);
  /* the operations of each (group, communicator), as linked lists, and its launches */
  idx_t heads = {0}, nlaunch = {0}, corrs = {0};
  uint32_t *next = calloc(j->ops.n + 1, sizeof *next);
  for (size_t o = 0; next && o < j->ops.n; o++) {
    const ncs_gj_op_t *op = AT(j->ops, ncs_gj_op_t, o);
    if (!op->api || !op->group) continue;
    uint64_t pk = plan_key(op->segment, op->group, op->comm);
    uint32_t h = 0;
    idx_get(&heads, pk, &h);
    next[o] = h;
    idx_put(&heads, pk, (uint32_t)o + 1);
  }
  for (size_t i = 0; i < j->launches.n; i++) {
    const launch_t *l = AT(j->launches, launch_t, i);
    uint32_t n = 0;
    uint64_t pk = plan_key(l->seg, l->group, l->comm);
    idx_get(&nlaunch, pk, &n);
    idx_put(&nlaunch, pk, n + 1);
  }
  for (size_t i = 0; i < j->kernels.n; i++) {
    ncs_gj_kernel_t *k = AT(j->kernels, ncs_gj_kernel_t, i);
    idx_put(&corrs, key(k->segment, k->k.corr), 1);
    int bad = (k->k.flags & NCS_GKF_BAD_TIME) != 0;
    k->start_mono = bad ? 0 : ncs_gj_to_mono(j, k->segment, k->k.start, NULL);
    k->end_mono = bad ? 0 : ncs_gj_to_mono(j, k->segment, k->k.end, NULL);
    if (!k->k.launch) {
      j->sum.compute++;
      continue;
    }
    uint32_t li, ci, nl = 1;
    if (!idx_get(&j->launch_by_id, key(k->segment, k->k.launch), &li)) {
      j->sum.unjoined_launch++;
      continue;
    }
    if (k->k.flags & NCS_GKF_GRAPH)
      j->sum.nccl_replays++;
    else
      j->sum.nccl_eager++;
    const launch_t *l = AT(j->launches, launch_t, li);
    k->comm = l->comm, k->group = l->group;
    if (l->comm >= 0 && idx_get(&j->comm_ids, key(k->segment, (uint64_t)l->comm), &ci))
      k->comm_id = *AT(j->comm_vals, uint64_t, ci);
    uint64_t pk = plan_key(l->seg, l->group, l->comm);
    idx_get(&nlaunch, pk, &nl);
    size_t first = j->opsidx.n;
    uint32_t h = 0;
    if (l->group && next) idx_get(&heads, pk, &h);
    for (; h; h = next[h - 1]) {
      ncs_gj_op_t *op = AT(j->ops, ncs_gj_op_t, h - 1);
      op->launches = nl;
      attach(j, k, op, h - 1);
    }
    k->ops = (const uint32_t *)(uintptr_t)first; /* an offset until opsidx stops growing */
  }
  for (size_t i = 0; i < j->kernels.n; i++) {
    ncs_gj_kernel_t *k = AT(j->kernels, ncs_gj_kernel_t, i);
    k->ops = k->nops ? AT(j->opsidx, uint32_t, (size_t)(uintptr_t)k->ops) : NULL;
  }
  replay_by_order(j);
  /* launches without kernels: not captured, an NCCL graph's if a graph launch, once per corr */
  size_t w = 0;
  idx_t seen = {0};
  for (size_t i = 0; i < j->pending.n; i++) {
    uint32_t v, seg = *AT(j->pending_seg, uint32_t, i);
    const ncs_gpu_rec_t *p = AT(j->pending, ncs_gpu_rec_t, i);
    uint64_t ck = key(seg, p->corr);
    int graph = p->kind == NCS_GR_GLAUNCH || (p->flags & NCS_GLF_GRAPH);
    if (idx_get(&corrs, ck, &v) || idx_get(&seen, ck, &v) || idx_get(&j->captured, ck, &v) ||
        (graph && !idx_get(&j->nccl_execs, key(seg, p->graph), &v)))
      continue;
    idx_put(&seen, ck, 1);
    ncs_gpu_rec_t keep = *p;
    keep.kind = NCS_GR_PENDING;
    if (graph) keep.flags |= NCS_GLF_GRAPH;
    *AT(j->pending, ncs_gpu_rec_t, w) = keep;
    *AT(j->pending_seg, uint32_t, w++) = seg;
  }
  j->pending.n = j->pending_seg.n = w;
  j->sum.pending_end = w;
  free(seen.k), free(seen.v);
  free(next);
  free(heads.k), free(heads.v), free(nlaunch.k), free(nlaunch.v), free(corrs.k), free(corrs.v);
}

size_t ncs_gj_nkernels(const ncs_gj_t *j) { return j->kernels.n; }
const ncs_gj_kernel_t *ncs_gj_kernel(const ncs_gj_t *j, size_t i) {
  return i < j->kernels.n ? AT(j->kernels, ncs_gj_kernel_t, i) : NULL;
}
size_t ncs_gj_nops(const ncs_gj_t *j) { return j->ops.n; }
const ncs_gj_op_t *ncs_gj_op(const ncs_gj_t *j, size_t i) {
  return i < j->ops.n ? AT(j->ops, ncs_gj_op_t, i) : NULL;
}
size_t ncs_gj_npending(const ncs_gj_t *j) { return j->pending.n; }
const ncs_gpu_rec_t *ncs_gj_pending(const ncs_gj_t *j, size_t i, uint32_t *segment) {
  if (i >= j->pending.n) return NULL;
  if (segment) *segment = *AT(j->pending_seg, uint32_t, i);
  return AT(j->pending, ncs_gpu_rec_t, i);
}
const ncs_gj_summary_t *ncs_gj_summary(const ncs_gj_t *j) { return &j->sum; }

size_t ncs_gj_nexecs(const ncs_gj_t *j) { return j->execs.n; }
int ncs_gj_exec(const ncs_gj_t *j, size_t i, uint32_t *segment, uint64_t *id, uint32_t *op) {
  if (i >= j->execs.n) return -1;
  const exec_t *x = AT(j->execs, exec_t, i);
  *segment = x->seg, *id = x->id, *op = x->op;
  return 0;
}
