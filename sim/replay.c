/* replay.c - play a capture back against any plugin (--replay PATH).
 *
 * A capture is a trace recorded with NCCLSCOPE_CAPTURE=1 (docs/config.md): every call NCCL made,
 * with its descriptor, state arguments, thread and time, plus the stop/state calls on invalid
 * handles (BADCALL records). Each trace file is replayed in its own process. Within a segment
 * (one plugin load) every recorded thread gets a thread that makes its calls in order, paced by
 * the recorded times (--speed), and waits where the calls depend on another thread: a child's
 * START on its parent's handle, an event on its communicator's init, a finalize on the events
 * before it. And every call waits until the other threads made their calls recorded before it,
 * so the calls reach the plugin in the recorded order across threads (ties run together): the
 * plugin's writer decides completions by how long children stay quiet (20 ms), so a thread left
 * behind (a proxy or profiler thread on a busy machine) would make it complete, then revise,
 * operations the capture completed once. Handles are mapped from the recorded ids to what the
 * plugin under test returns.
 * As NCCL does, only the events the plugin's activation mask asks for (with their ancestors,
 * sim_active) are started; the others get a NULL handle and their stop/state calls are skipped.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "trace/reader.h"

#define WAIT_NS (SIM_GUARD_S * 1000000000ull) /* give up waiting for another thread (sim.h) */

enum { OP_INIT = 1, OP_FINI, OP_START, OP_STOP, OP_STATE, OP_BAD };

typedef struct {
  uint8_t op, type, ctx_kind, parent_kind, fref[NCS_MAX_FIELDS];
  uint32_t thread, comm, state, flags;
  int32_t rank;
  uint64_t ts, id, ctx, parent, arg0, arg1;
  uint64_t f[NCS_MAX_FIELDS]; /* STR fields hold a pointer to an interned string */
} call_t;

typedef struct {
  call_t *v;
  size_t n, cap;
} calls_t;

typedef struct {
  uint64_t comm_id;
  char *name;
  int nranks, nnodes, rank, seen;
} comm_t;

typedef struct {
  calls_t ctl;      /* init and finalize, in time order */
  calls_t *thr;     /* per recorded thread */
  uint32_t nthr;
  comm_t *comms;
  uint32_t ncomms;
  uint64_t t0;      /* earliest call */
  uint64_t nstarts;
} seg_t;

/* ------------------------------------------------------------------ loading */

static char *intern(const char *s) {
  /* strings must outlive the plugin's use of them (ncclscope reads them on its writer thread),
   * so they are copied once and never freed; a capture has a few dozen distinct ones */
  static char **tab;
  static size_t n, cap;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(tab[i], s)) return tab[i];
  if (n == cap) {
    cap = cap ? cap * 2 : 64;
    tab = realloc(tab, cap * sizeof *tab);
    if (!tab) abort();
  }
  tab[n] = strdup(s);
  if (!tab[n]) abort();
  return tab[n++];
}

static call_t *push(calls_t *c) {
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 256;
    c->v = realloc(c->v, c->cap * sizeof *c->v);
    if (!c->v) abort();
  }
  memset(&c->v[c->n], 0, sizeof c->v[0]);
  return &c->v[c->n++];
}

static calls_t *thread_calls(seg_t *s, uint32_t t) {
  if (t >= s->nthr) {
    uint32_t n = t + 1;
    s->thr = realloc(s->thr, n * sizeof *s->thr);
    if (!s->thr) abort();
    memset(s->thr + s->nthr, 0, (n - s->nthr) * sizeof *s->thr);
    s->nthr = n;
  }
  return &s->thr[t];
}

static comm_t *comm_at(seg_t *s, uint32_t i) {
  if (i >= s->ncomms) {
    uint32_t n = i + 1;
    s->comms = realloc(s->comms, n * sizeof *s->comms);
    if (!s->comms) abort();
    memset(s->comms + s->ncomms, 0, (n - s->ncomms) * sizeof *s->comms);
    s->ncomms = n;
  }
  return &s->comms[i];
}

static void add_event(seg_t *s, const ncs_event_t *e) {
  static const uint8_t op_of[] = {[NCS_REC_START] = OP_START, [NCS_REC_STOP] = OP_STOP,
                                  [NCS_REC_STATE] = OP_STATE, [NCS_REC_BADCALL] = OP_BAD};
  if (e->kind >= sizeof op_of || !op_of[e->kind]) return; /* COMPLETE/EXPIRED are derived */
  call_t *c = push(thread_calls(s, e->thread));
  c->op = op_of[e->kind];
  c->type = e->type, c->thread = e->thread, c->ts = e->ts, c->id = e->id;
  c->ctx_kind = e->ctx_kind, c->ctx = e->ctx, c->parent_kind = e->parent_kind;
  c->parent = e->parent, c->rank = e->rank, c->flags = e->flags;
  c->state = e->state, c->arg0 = e->arg0, c->arg1 = e->arg1;
  if (c->op == OP_START) {
    s->nstarts++;
    const ncs_schema_t *sc = &ncs_schema[e->type];
    for (unsigned i = 0; i < sc->nfields; i++) {
      c->fref[i] = e->fref_kind[i];
      c->f[i] = sc->fields[i].kind == NCS_FK_STR
                    ? (e->fstr[i] ? (uint64_t)(uintptr_t)intern(e->fstr[i]) : 0)
                    : e->f[i];
    }
  }
  if (!s->t0 || e->ts < s->t0) s->t0 = e->ts;
}

static int by_ts(const void *a, const void *b) {
  const call_t *x = a, *y = b;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Read every segment of one trace file. Returns the number of segments, or -1. */
static int load_file(const char *path, seg_t **out) {
  char err[512];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  if (!r) {
    sim_fail("replay: %s", err);
    return -1;
  }
  seg_t *segs = NULL;
  int nseg = 0;
  ncs_item_t it;
  int rc;
  while ((rc = ncs_reader_next(r, &it)) == 1) {
    if (it.what == NCS_ITEM_SEGMENT) {
      segs = realloc(segs, (size_t)(nseg + 1) * sizeof *segs);
      if (!segs) abort();
      memset(&segs[nseg++], 0, sizeof *segs);
      continue;
    }
    if (!nseg) continue;
    seg_t *s = &segs[nseg - 1];
    if (it.what == NCS_ITEM_COMM) {
      comm_t *c = comm_at(s, it.comm.index);
      c->comm_id = it.comm.comm_id, c->name = intern(it.comm.name);
      c->nranks = it.comm.nranks, c->nnodes = it.comm.nnodes, c->rank = it.comm.rank, c->seen = 1;
      call_t *k = push(&s->ctl);
      k->op = OP_INIT, k->comm = it.comm.index, k->ts = it.comm.init_ns;
    } else if (it.what == NCS_ITEM_COMM_END) {
      call_t *k = push(&s->ctl);
      k->op = OP_FINI, k->comm = it.comm.index, k->ts = it.ts;
    } else if (it.what == NCS_ITEM_EVENT) {
      add_event(s, &it.ev);
    }
  }
  if (rc < 0) /* a capture cut short by a crash still replays up to the damage */
    fprintf(stderr, "nccl-sim: replay: %s: %s (replaying what came before)\n", path,
            ncs_reader_error(r));
  ncs_reader_close(r);
  for (int i = 0; i < nseg; i++) {
    qsort(segs[i].ctl.v, segs[i].ctl.n, sizeof(call_t), by_ts);
    if (segs[i].ctl.n && (!segs[i].t0 || segs[i].ctl.v[0].ts < segs[i].t0)) segs[i].t0 = segs[i].ctl.v[0].ts;
  }
  *out = segs;
  return nseg;
}

/* ------------------------------------------------------------------ handle map */

typedef struct {
  _Atomic uint64_t key; /* recorded id; 0 = empty */
  _Atomic int ready;
  void *h;
} hslot_t;

static hslot_t *g_map;
static uint64_t g_map_mask;

static void map_init(uint64_t n) {
  uint64_t cap = 64;
  while (cap < 2 * n + 2) cap <<= 1;
  g_map = sim_xcalloc(cap, sizeof *g_map);
  g_map_mask = cap - 1;
}

static void map_put(uint64_t id, void *h) {
  for (uint64_t i = sim_mix(id, 7) & g_map_mask;; i = (i + 1) & g_map_mask) {
    uint64_t k = 0;
    if (atomic_compare_exchange_strong(&g_map[i].key, &k, id) || k == id) {
      g_map[i].h = h;
      atomic_store_explicit(&g_map[i].ready, 1, memory_order_release);
      return;
    }
  }
}

/* The handle the plugin returned for recorded id, waiting for the thread that starts it. */
static void *map_get(uint64_t id) {
  uint64_t deadline = sim_now_ns() + WAIT_NS;
  for (;;) {
    for (uint64_t i = sim_mix(id, 7) & g_map_mask;; i = (i + 1) & g_map_mask) {
      uint64_t k = atomic_load(&g_map[i].key);
      if (k == id) {
        if (atomic_load_explicit(&g_map[i].ready, memory_order_acquire)) return g_map[i].h;
        break;
      }
      if (!k) break;
    }
    if (sim_now_ns() > deadline) {
      /* its START is not in the capture (dropped, or started before the capture began) */
      return NULL;
    }
    sched_yield();
  }
}

/* ------------------------------------------------------------------ replaying */

typedef struct {
  seg_t *s;
  calls_t *calls;
  _Atomic uint64_t next_ts; /* time of the next call not yet made; UINT64_MAX when done */
  pthread_t th;
} worker_t;

static void **g_ctx;
static _Atomic int *g_ctx_ready;
static uint64_t g_wall0;
static const calls_t *g_ctl;   /* the segment's inits and finalizes, in time order */
static _Atomic size_t g_ctl_next; /* the next one the control thread will make */

/* A call waits for every init recorded before it (a plugin ignores calls before its first
 * init). It never waits for a finalize: finalizes wait for the calls before them. */
static void wait_inits(uint64_t ts) {
  uint64_t deadline = sim_now_ns() + WAIT_NS;
  for (;;) {
    size_t i = atomic_load_explicit(&g_ctl_next, memory_order_acquire);
    if (i >= g_ctl->n || g_ctl->v[i].ts > ts || g_ctl->v[i].op == OP_FINI) return;
    if (sim_now_ns() > deadline) return;
    sched_yield();
  }
}

static void pace(const seg_t *s, uint64_t ts) {
  if (sim_opt.replay_speed <= 0) return;
  uint64_t due = g_wall0 + (uint64_t)((double)(ts - s->t0) / sim_opt.replay_speed);
  uint64_t now = sim_now_ns();
  if (due > now + 2000000) sim_sleep_us((unsigned)((due - now - 1000000) / 1000));
  while (sim_now_ns() < due) sched_yield();
}

static void *ctx_of(const call_t *c) {
  switch (c->ctx_kind) {
  case NCS_CTX_LOCAL: {
    uint64_t deadline = sim_now_ns() + WAIT_NS;
    while (c->ctx < (uint64_t)sim_opt.replay_ncomms &&
           !atomic_load_explicit(&g_ctx_ready[c->ctx], memory_order_acquire) &&
           sim_now_ns() < deadline)
      sched_yield();
    return c->ctx < (uint64_t)sim_opt.replay_ncomms ? g_ctx[c->ctx] : NULL;
  }
  case NCS_CTX_FOREIGN: /* another process's context: an opaque value shaped like one */
    return (void *)(uintptr_t)((0xC7ull << 56) | ((c->ctx >> 16) & 0xFFFFFF) << 32 | (c->ctx & 0xFFFF));
  case NCS_CTX_INVALID: return (void *)(uintptr_t)c->ctx;
  default: return NULL;
  }
}

static void *ref_of(uint8_t kind, uint64_t v) {
  if (kind == NCS_REF_LOCAL) return map_get(v);
  return kind == NCS_REF_NONE ? NULL : (void *)(uintptr_t)v;
}

/* The v7 descriptor NCCL would have passed, from the recorded fields (src/trace/format.c); a
 * plugin called through an older version gets it through nccl-sim's adapter. */
static void build_descr(const call_t *c, ncs_descr_v7_t *d, ncs_net_sock_v1_t *sock,
                        ncs_net_ib_v1_t *ib) {
  const uint64_t *f = c->f;
  memset(d, 0, sizeof *d);
  d->type = 1ull << c->type;
  d->parentObj = ref_of(c->parent_kind, c->parent);
  d->rank = c->rank;
#define V(T, n) f[NCS_F(T, n)]
#define S(T, n) ((const char *)(uintptr_t)V(T, n))
#define P(T, n) ((void *)(uintptr_t)V(T, n))
  switch (c->type) {
  case SIM_T_COLL:
    d->coll.seqNumber = V(Coll, seqNumber), d->coll.func = S(Coll, func);
    d->coll.sendBuff = P(Coll, sendBuff), d->coll.recvBuff = P(Coll, recvBuff);
    d->coll.count = V(Coll, count), d->coll.root = (int)V(Coll, root);
    d->coll.datatype = S(Coll, datatype), d->coll.nChannels = (uint8_t)V(Coll, nChannels);
    d->coll.nWarps = (uint8_t)V(Coll, nWarps), d->coll.algo = S(Coll, algo);
    d->coll.proto = S(Coll, proto);
    d->coll.parentGroup = ref_of(c->fref[NCS_F(Coll, parentGroup)], V(Coll, parentGroup));
    d->coll.kernelVariant = S(Coll, kernelVariant), d->coll.isSymColl = V(Coll, isSymColl) != 0;
    d->coll.userTag = V(Coll, userTag);
    break;
  case SIM_T_P2P:
    d->p2p.func = S(P2p, func), d->p2p.buff = P(P2p, buff), d->p2p.datatype = S(P2p, datatype);
    d->p2p.count = V(P2p, count), d->p2p.peer = (int)V(P2p, peer);
    d->p2p.nChannels = (uint8_t)V(P2p, nChannels);
    d->p2p.parentGroup = ref_of(c->fref[NCS_F(P2p, parentGroup)], V(P2p, parentGroup));
    d->p2p.userTag = V(P2p, userTag);
    break;
  case SIM_T_PROXY_OP: {
    pid_t me = getpid(), pid = (pid_t)V(ProxyOp, pid);
    /* our own ops carry our pid; a PXN op keeps a pid that is not ours */
    d->proxyOp.pid = (c->flags & NCS_SF_PXN) ? (pid == me ? me + 1 : pid) : me;
    d->proxyOp.channelId = (uint8_t)V(ProxyOp, channelId), d->proxyOp.peer = (int)V(ProxyOp, peer);
    d->proxyOp.nSteps = (int)V(ProxyOp, nSteps), d->proxyOp.chunkSize = (int)V(ProxyOp, chunkSize);
    d->proxyOp.isSend = (int)V(ProxyOp, isSend);
    break;
  }
  case SIM_T_PROXY_STEP: d->proxyStep.step = (int)V(ProxyStep, step); break;
  case SIM_T_KERNEL_CH:
    d->kernelCh.channelId = (uint8_t)V(KernelCh, channelId), d->kernelCh.pTimer = V(KernelCh, pTimer);
    break;
  case SIM_T_NET_PLUGIN: {
    uint32_t ntype = (uint32_t)V(NetPlugin, id) & NCS_NET_TYPE_MASK;
    d->netPlugin.id = (int64_t)V(NetPlugin, id);
    if (V(NetPlugin, decoded) && ntype == NCS_NET_TYPE_SOCK) { /* the descriptor was copied at capture */
      memset(sock, 0, sizeof *sock);
      sock->sock.fd = (int)V(NetPlugin, fd), sock->sock.op = (int)V(NetPlugin, op);
      sock->sock.length = V(NetPlugin, length);
      d->netPlugin.data = sock;
    } else if (V(NetPlugin, decoded) && ntype == NCS_NET_TYPE_IB) {
      memset(ib, 0, sizeof *ib);
      ib->qp.length = V(NetPlugin, length), ib->qp.device = (int)V(NetPlugin, device);
      ib->qp.wr_id = V(NetPlugin, wr_id), ib->qp.opcode = (int)V(NetPlugin, opcode);
      ib->qp.qpNum = (int)V(NetPlugin, qpNum);
      d->netPlugin.data = ib;
    }
    break;
  }
  case SIM_T_GROUP_API:
    d->groupApi.graphCaptured = V(GroupApi, graphCaptured) != 0;
    d->groupApi.groupDepth = (int)V(GroupApi, groupDepth);
    break;
  case SIM_T_COLL_API:
    d->collApi.func = S(CollApi, func), d->collApi.count = V(CollApi, count);
    d->collApi.datatype = S(CollApi, datatype), d->collApi.root = (int)V(CollApi, root);
    d->collApi.stream = P(CollApi, stream), d->collApi.graphCaptured = V(CollApi, graphCaptured) != 0;
    d->collApi.userTag = V(CollApi, userTag);
    break;
  case SIM_T_P2P_API:
    d->p2pApi.func = S(P2pApi, func), d->p2pApi.count = V(P2pApi, count);
    d->p2pApi.datatype = S(P2pApi, datatype), d->p2pApi.stream = P(P2pApi, stream);
    d->p2pApi.graphCaptured = V(P2pApi, graphCaptured) != 0;
    d->p2pApi.userTag = V(P2pApi, userTag);
    break;
  case SIM_T_KERNEL_LAUNCH: d->kernelLaunch.stream = P(KernelLaunch, stream); break;
  case SIM_T_CE_COLL:
    d->ceColl.seqNumber = V(CeColl, seqNumber), d->ceColl.func = S(CeColl, func);
    d->ceColl.sendBuff = P(CeColl, sendBuff), d->ceColl.recvBuff = P(CeColl, recvBuff);
    d->ceColl.count = V(CeColl, count), d->ceColl.root = (int)V(CeColl, root);
    d->ceColl.datatype = S(CeColl, datatype), d->ceColl.syncStrategy = S(CeColl, syncStrategy);
    d->ceColl.intraBatchSync = V(CeColl, intraBatchSync) != 0;
    d->ceColl.batchSize = (uint32_t)V(CeColl, batchSize);
    d->ceColl.numBatches = (uint32_t)V(CeColl, numBatches);
    d->ceColl.ceSeqNum = (uint32_t)V(CeColl, ceSeqNum), d->ceColl.stream = P(CeColl, stream);
    d->ceColl.userTag = V(CeColl, userTag);
    break;
  case SIM_T_CE_SYNC:
    d->ceCollSync.isComplete = V(CeSync, isComplete) != 0, d->ceCollSync.nRanks = (int)V(CeSync, nRanks);
    break;
  case SIM_T_CE_BATCH:
    d->ceCollBatch.numOps = (int)V(CeBatch, numOps), d->ceCollBatch.totalBytes = V(CeBatch, totalBytes);
    d->ceCollBatch.useIntraSync = V(CeBatch, useIntraSync) != 0;
    break;
  case SIM_T_KERNEL_PHASE:
    d->kernelPhase.channelId = (uint8_t)V(KernelPhase, channelId);
    d->kernelPhase.phaseId = (uint8_t)V(KernelPhase, phaseId);
    d->kernelPhase.phaseName = S(KernelPhase, phaseName), d->kernelPhase.pTimer = V(KernelPhase, pTimer);
    break;
  default: break;
  }
#undef S
#undef P
#undef V
}

static void make_call(const call_t *c) {
  ncs_args_v7_t a;
  memset(&a, 0, sizeof a);
  memcpy(&a, &c->arg0, sizeof c->arg0);
  switch (c->op) {
  case OP_START: {
    ncs_descr_v7_t d;
    ncs_net_sock_v1_t sock;
    ncs_net_ib_v1_t ib;
    void *ctx = ctx_of(c), *h = NULL;
    if (sim_active(sim_mask(), c->type)) { /* NCCL starts only what the mask asks for */
      build_descr(c, &d, &sock, &ib);
      sim_ev_start(ctx, &h, &d);
    }
    map_put(c->id, h);
    break;
  }
  case OP_STOP: {
    void *h = map_get(c->id);
    sim_ev_stop(c->type, &h);
    break;
  }
  case OP_STATE: sim_ev_state(c->type, map_get(c->id), (int)c->state, &a); break;
  case OP_BAD: {
    int kind = c->id ? SIM_BAD_GARBAGE : SIM_BAD_NULL;
    if (c->flags == NCS_BC_STOP)
      sim_ev_bad_stop(kind, c->type, (void *)(uintptr_t)c->id);
    else
      sim_ev_bad_state(kind, c->type, (void *)(uintptr_t)c->id, (int)c->state, &a);
    break;
  }
  }
}

static worker_t *g_ws;
static uint32_t g_nws;

/* Wait while another thread's next call was recorded before this one. The thread with the
 * earliest next call never waits here, and what it waits for otherwise (a parent, an init) was
 * recorded earlier, so the replay always moves on. Most threads wait here at any time: after a
 * few yields they sleep, or a loaded machine (TSan) would give the one thread that can move on a
 * small share of the cores, and stall it past the writer's quiet time. */
static void in_order(const worker_t *w, uint64_t ts) {
  uint64_t deadline = sim_now_ns() + WAIT_NS;
  unsigned spins = 0;
  for (uint32_t i = 0; i < g_nws; i++) {
    if (&g_ws[i] == w) continue;
    for (uint64_t n; (n = atomic_load(&g_ws[i].next_ts)) != UINT64_MAX && n < ts;) {
      if (sim_now_ns() > deadline) return;
      if (++spins < 64)
        sched_yield();
      else
        sim_sleep_us(20);
    }
  }
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  for (size_t i = 0; i < w->calls->n; i++) {
    const call_t *c = &w->calls->v[i];
    atomic_store(&w->next_ts, c->ts);
    pace(w->s, c->ts);
    in_order(w, c->ts);
    wait_inits(c->ts);
    make_call(c);
  }
  atomic_store(&w->next_ts, UINT64_MAX);
  return NULL;
}

/* A finalize waits until every thread has made its calls recorded before it: a plugin may
 * complete its file at the last finalize. */
static void wait_before(worker_t *ws, uint32_t n, uint64_t ts) {
  uint64_t deadline = sim_now_ns() + WAIT_NS;
  for (uint32_t i = 0; i < n; i++)
    while (atomic_load(&ws[i].next_ts) <= ts && sim_now_ns() < deadline) sched_yield();
}

static void replay_segment(seg_t *s) {
  sim_opt.replay_ncomms = (int)s->ncomms;
  g_ctx = sim_xcalloc(s->ncomms + 1, sizeof *g_ctx);
  g_ctx_ready = sim_xcalloc(s->ncomms + 1, sizeof *g_ctx_ready);
  map_init(s->nstarts);
  worker_t *ws = sim_xcalloc(s->nthr + 1, sizeof *ws);
  g_wall0 = sim_now_ns();
  g_ctl = &s->ctl;
  atomic_store(&g_ctl_next, 0);
  for (uint32_t i = 0; i < s->nthr; i++) {
    ws[i].s = s, ws[i].calls = &s->thr[i];
    atomic_store(&ws[i].next_ts, s->thr[i].n ? s->thr[i].v[0].ts : UINT64_MAX);
  }
  g_ws = ws, g_nws = s->nthr;
  for (uint32_t i = 0; i < s->nthr; i++)
    if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i]) != 0) abort();
  int *done = sim_xcalloc(s->ncomms + 1, sizeof *done);
  for (size_t i = 0; i < s->ctl.n; i++) {
    const call_t *k = &s->ctl.v[i];
    comm_t *cm = &s->comms[k->comm];
    if (k->op == OP_INIT) {
      pace(s, k->ts);
      sim_comm_init(&g_ctx[k->comm], cm->comm_id, cm->name[0] ? cm->name : NULL, cm->nnodes,
                    cm->nranks, cm->rank);
      atomic_store_explicit(&g_ctx_ready[k->comm], 1, memory_order_release);
    } else {
      wait_before(ws, s->nthr, k->ts);
      sim_comm_finalize(g_ctx[k->comm]);
      done[k->comm] = 1;
    }
    atomic_store_explicit(&g_ctl_next, i + 1, memory_order_release);
  }
  for (uint32_t i = 0; i < s->nthr; i++) pthread_join(ws[i].th, NULL);
  g_ws = NULL, g_nws = 0;
  /* a capture cut short never finalized: finalize what is left, as NCCL would at teardown */
  for (uint32_t i = 0; i < s->ncomms; i++)
    if (s->comms[i].seen && !done[i] && atomic_load(&g_ctx_ready[i])) sim_comm_finalize(g_ctx[i]);
  free(done);
  free(ws);
  free(g_map);
  free(g_ctx);
  free((void *)g_ctx_ready);
}

int sim_replay_run(int proc) {
  if (proc >= sim_opt.replay_nfiles) return 0;
  seg_t *segs = NULL;
  int nseg = load_file(sim_opt.replay_files[proc], &segs);
  if (nseg < 0) return 1;
  for (int i = 0; i < nseg; i++) {
    char err[768];
    /* a new segment is a new load of the plugin (NCCL dlclose'd it and loaded it again) */
    if (sim_plugin_load(sim_opt.plugin, sim_opt.abi, err, sizeof err) != 0) {
      sim_fail("cannot load profiler plugin '%s': %s", sim_opt.plugin, err);
      return 1;
    }
    replay_segment(&segs[i]);
    sim_plugin_unload();
  }
  sim_log("replayed %s: %d segment(s)", sim_opt.replay_files[proc], nseg);
  for (int i = 0; i < nseg; i++) {
    for (uint32_t t = 0; t < segs[i].nthr; t++) free(segs[i].thr[t].v);
    free(segs[i].thr);
    free(segs[i].ctl.v);
    free(segs[i].comms);
  }
  free(segs);
  return atomic_load(&sim_cnt->failed) ? 1 : 0;
}
