/* nccl.c - the part of NCCL that sits between the user's calls and the proxy threads.
 *
 * A group of calls goes through the same profiler call sites as in NCCL (R§3.2, R§3.3):
 *   user thread:  GroupApi start, GroupStartApiStop, {CollApi|P2pApi start/stop}...,
 *                 GroupEndApiStart, then per communicator plan: KernelLaunch start/stop and the
 *                 "host stream plan task"; finally GroupApi stop.
 *   plan task:    Group start, Coll/P2p starts, proxy ops posted, Coll/P2p stops, Group stop.
 *                 It runs inline, or on a CUDA host-callback thread for graph replays and for
 *                 eager plans queued behind pending graph work (R§3.3 item 4, R§7).
 * The activation mask is copied at every operation's append, like NCCL's thread-local API state
 * (sim_group).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

/* Strings as NCCL's *ToString functions return them: static literals (R§2.9). */
const char *const sim_func_str[SIM_NFUNCS] = {"Broadcast", "Reduce",   "AllGather", "ReduceScatter",
                                              "AllReduce", "SendRecv", "Send",      "Recv"};
/* NCCL has no case for ncclUint8 and prints "Unknown" (R§2.9). */
const char *const sim_dtype_str[SIM_NDTYPES] = {
    "ncclInt8",  "Unknown",     "ncclInt32",   "ncclUint32",  "ncclInt64",
    "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16"};
const char *const sim_algo_str[SIM_NALGOS] = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
const char *const sim_proto_str[SIM_NPROTOS] = {"LL", "LL128", "SIMPLE"};
static const int dtype_size[SIM_NDTYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

/* ------------------------------------------------------------------ plans */
typedef struct {
  int func, dtype, algo, proto, nch, kind, root, is_p2p;
  uint64_t tag;     /* userTag (ABI v7), kept for graph replays like NCCL's task */
  size_t count;     /* the task's count: bytes for AllGather/Broadcast (R§2.9) */
  int tdtype;       /* the task's datatype: ncclInt8 for AllGather/Broadcast */
  size_t ucount;    /* the user's count (CE descriptor) */
  size_t bytes;     /* bytes each rank moves */
  int mask;         /* activation mask copied at enqueue */
  void *api_h;      /* CollApi/P2pApi handle; kept for graph replays (R§7) */
  void *group_api_h;
  void *ev_h;       /* Coll/P2p handle of the current execution */
  int fault;        /* SIM_FAULT_STALL: its sends freeze (fault.c) */
  int64_t opidx;    /* the rank's counted-collective index (--fault SEQ), or -1 */
  uint64_t seqno;   /* seqNumber of the current execution */
  const void *sendbuff;
  void *recvbuff;
  /* KernelCh work counters per channel: the host's expectation (op->workCounter, kept across
     replays like the plan's stored proxy op) and the GPU's value of the current execution */
  uint64_t kbase[SIM_MAX_CHANNELS], kdev[SIM_MAX_CHANNELS];
} sim_task_t;

typedef struct sim_plan {
  struct sim_plan *next; /* graph list */
  struct sim_plan *anext; /* every plan of a graph, in capture order */
  sim_comm_t *comm;
  sim_task_t *tasks;
  int ntasks;
  int persistent;        /* captured in a graph */
  int has_proxy;
  int mask;
  uint64_t gpu_launch;
  uint64_t rng;
  uint64_t dev0[SIM_DEV0_N]; /* eager: the GPU's work counters before this plan, its stream index */
  uint32_t corr;  /* --cupti: the kernel launch's correlation id (0 without) */
  uint64_t gnode; /* --cupti: the graph node it became when captured */
  uint64_t launch_mono;
} sim_plan_t;

#define SIM_GRAPH_COMPUTE 8
struct sim_graph {
  sim_plan_t *plans;     /* replayed at every launch */
  sim_plan_t *once;      /* plans without proxy ops: ran once at capture (R§7) */
  sim_plan_t *all, *all_last; /* both kinds in capture order: the GPU runs them all */
  /* --cupti (gpu.c): the capture graph, its instantiation, captured compute kernels */
  uint32_t fgraph, exec, replays;
  int device, ncompute;
  uint64_t compute[SIM_GRAPH_COMPUTE];
};

/* What a kernel of the plan is, for --cupti (gpu.c): its identity and, for --gpu-truth, the
 * plan's operations as "func:count:seq" (seq -1 for point-to-point). */
static void gpu_inst(sim_inst_t *in, const sim_plan_t *p, uint32_t corr, uint32_t exec, uint32_t replay) {
  if (!sim_gpu_on() || !corr) return;
  const sim_comm_t *c = p->comm;
  in->corr = corr;
  in->kdevice = (uint32_t)sim_global_rank(c, c->rank);
  in->kstream = sim_gpu_stream(c->stream);
  in->kgraph = exec, in->kreplay = replay;
  in->knode = exec ? (uint64_t)exec << 32 | (p->gnode & 0xFFFFFFFFull) : 0;
  in->kstart = exec ? sim_now_ns() + 600 : p->launch_mono + 600;
  in->kcomm = c->comm_id, in->krank = c->rank, in->kfunc = p->tasks[0].func;
  size_t n = 0;
  for (int i = 0; i < p->ntasks && n + 48 < sizeof in->kops; i++) {
    const sim_task_t *t = &p->tasks[i];
    if (t->kind == K_CE) continue;
    n += (size_t)snprintf(in->kops + n, sizeof in->kops - n, "%s%s:%zu:%lld", n ? "," : "",
                          sim_func_str[t->func], t->ucount, t->is_p2p ? -1LL : (long long)t->seqno);
  }
}

/* ------------------------------------------------------------------ CUDA host-callback queue */
typedef struct cbq_item {
  struct cbq_item *next;
  sim_plan_t *plan;
  uint64_t dev0[SIM_DEV0_N]; /* the GPU's work counters before this execution, its stream index */
  uint32_t corr, exec, replay;     /* --cupti: the graph launch it belongs to */
} cbq_item_t;

struct sim_cbq {
  pthread_mutex_t mu;
  pthread_cond_t cv, idle;
  cbq_item_t *head, *tail;
  int pending, stop;
  pthread_t th;
};

static void host_plan_task(sim_plan_t *p, int replay, const uint64_t *dev0, const cbq_item_t *gl);
static void plan_free(sim_plan_t *p);

static void *cbq_main(void *arg) {
  sim_cbq_t *q = arg;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (!q->head && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
    if (!q->head) break;
    cbq_item_t *it = q->head;
    q->head = it->next;
    if (!q->head) q->tail = NULL;
    pthread_mutex_unlock(&q->mu);
    /* a persistent plan is a graph replay; an eager one ran behind it in stream order */
    host_plan_task(it->plan, it->plan->persistent, it->dev0, it);
    if (!it->plan->persistent) plan_free(it->plan);
    free(it);
    pthread_mutex_lock(&q->mu);
    if (--q->pending == 0) pthread_cond_broadcast(&q->idle);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

sim_cbq_t *sim_cbq_create(void) {
  sim_cbq_t *q = sim_xcalloc(1, sizeof *q);
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  pthread_cond_init(&q->idle, NULL);
  if (pthread_create(&q->th, NULL, cbq_main, q) != 0) sim_fail("cannot start a callback thread");
  return q;
}

static void cbq_push(sim_cbq_t *q, sim_plan_t *p, const uint64_t *dev0, uint32_t corr, uint32_t exec,
                     uint32_t replay) {
  cbq_item_t *it = sim_xcalloc(1, sizeof *it);
  it->plan = p;
  it->corr = corr, it->exec = exec, it->replay = replay;
  memcpy(it->dev0, dev0, sizeof it->dev0);
  pthread_mutex_lock(&q->mu);
  if (q->tail)
    q->tail->next = it;
  else
    q->head = it;
  q->tail = it;
  q->pending++;
  pthread_cond_signal(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

static int cbq_busy(sim_cbq_t *q) {
  pthread_mutex_lock(&q->mu);
  int b = q->pending > 0;
  pthread_mutex_unlock(&q->mu);
  return b;
}

void sim_cbq_drain(sim_cbq_t *q) {
  pthread_mutex_lock(&q->mu);
  while (q->pending > 0) pthread_cond_wait(&q->idle, &q->mu);
  pthread_mutex_unlock(&q->mu);
}

void sim_cbq_destroy(sim_cbq_t *q) {
  if (!q) return;
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_signal(&q->cv);
  pthread_mutex_unlock(&q->mu);
  pthread_join(q->th, NULL);
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->cv);
  pthread_cond_destroy(&q->idle);
  free(q);
}

/* ------------------------------------------------------------------ communicators */
int sim_global_rank(const sim_comm_t *c, int k) { return c->gbase + c->gstride * k; }

int sim_node_of(int grank) {
  int nodes = sim_opt.nodes > 0 ? sim_opt.nodes : sim_opt.ranks;
  int per = (sim_opt.ranks + nodes - 1) / nodes;
  return grank / (per > 0 ? per : 1);
}

static int comm_nnodes(const sim_comm_t *c) {
  int n = 0, last = -1;
  for (int k = 0; k < c->nranks; k++) {
    int node = sim_node_of(sim_global_rank(c, k)); /* ascending: count changes */
    if (node != last) n++, last = node;
  }
  return n;
}

sim_comm_t *sim_comm_create(uint64_t comm_id, int rank, int nranks, int gbase, int gstride,
                            const char *name, sim_comm_t *share_proxy_with) {
  static _Atomic int next_index;
  sim_comm_t *c = sim_xcalloc(1, sizeof *c);
  c->rank = rank, c->nranks = nranks, c->gbase = gbase, c->gstride = gstride;
  c->comm_id = comm_id;
  if (name) snprintf(c->name, sizeof c->name, "%s", name);
  c->nnodes = comm_nnodes(c);
  c->couple_key = sim_cpl_key(comm_id, sim_global_rank(c, rank));
  int index = atomic_fetch_add(&next_index, 1);
  c->stream = (void *)(uintptr_t)(0x5a000000u + 0x100u * (unsigned)index);
  /* NCCL initialises the plugin context before it creates the proxy thread (R§1.4). */
  sim_comm_init(&c->ctx, comm_id, name, c->nnodes, nranks, rank);
  if (share_proxy_with) { /* split with shared resources: ProxyCtrl keeps the creator's context */
    c->proxy = share_proxy_with->proxy;
    sim_proxy_ref(c->proxy);
    if ((c->prof = share_proxy_with->prof)) sim_proxy_ref(c->prof);
  } else {
    c->proxy = sim_proxy_create(c->ctx, index, 0);
    /* NCCL 2.31 polls KernelCh on a profiler thread of its own, shared like the proxy */
    if (sim_plugin_abi() >= 7) c->prof = sim_proxy_create(c->ctx, index, 1);
  }
  return c;
}

/* Waits until the proxy finished every op of this comm, as ncclCommDestroy does. The GPU work
 * of the comm has all run by now: a KernelCh still waiting for its ring slot waits forever (the
 * proxy counts it as stuck and drops it, where NCCL would hang). */
void sim_comm_drain(sim_comm_t *c) {
  atomic_store_explicit(&c->kch_final, 1, memory_order_release);
  uint64_t t0 = sim_now_ns();
  while (atomic_load(&c->inflight) > 0) {
    if (sim_now_ns() - t0 > SIM_GUARD_S * 1000000000ull) {
      sim_fail("comm %s rank %d: %d proxy ops still running after %d s", c->name, c->rank,
               atomic_load(&c->inflight), SIM_GUARD_S);
      return;
    }
    sim_sleep_us(200);
  }
  sim_vt_wait(atomic_load(&c->done_vt)); /* model time: the destroy waited for them */
}

void sim_comm_destroy(sim_comm_t *c, int abort) {
  if (!abort) sim_comm_drain(c);
  sim_proxy_unref(c->proxy, abort);
  if (c->prof) sim_proxy_unref(c->prof, abort);
  sim_comm_finalize(c->ctx);
  for (int ch = 0; ch < SIM_MAX_CHANNELS; ch++)
    free((void *)atomic_load(&c->kch_ring[ch])), free((void *)atomic_load(&c->kch_ts[ch]));
  free(c);
}

/* ------------------------------------------------------------------ descriptors */
/* A symmetric kernel's name, as NCCL 2.31's ncclSymkKernelIdToString gives it (an LL kernel for
 * small messages), or NULL for a function without symmetric kernels. */
static const char *sym_variant(const sim_task_t *t) {
  int small = t->bytes <= 65536;
  switch (t->func) {
  case F_ALLREDUCE: return small ? "AllReduce_AGxLL_R" : "AllReduce_RSxLD_AGxST";
  case F_ALLGATHER: return small ? "AllGather_LL" : "AllGather_ST";
  case F_REDUCESCATTER: return small ? "ReduceScatter_LL" : "ReduceScatter_LD";
  default: return NULL;
  }
}

static void coll_descr(ncs_descr_v7_t *d, const sim_plan_t *p, const sim_task_t *t, void *group_h,
                       uint64_t seq) {
  memset(d, 0, sizeof *d);
  d->type = NCS_EV_COLL;
  d->parentObj = t->api_h;
  d->rank = p->comm->rank;
  d->coll.seqNumber = seq;
  d->coll.func = sim_func_str[t->func];
  d->coll.sendBuff = t->sendbuff;
  d->coll.recvBuff = t->recvbuff;
  d->coll.count = t->count;
  d->coll.root = t->root;
  d->coll.datatype = sim_dtype_str[t->tdtype];
  d->coll.nChannels = (uint8_t)t->nch;
  d->coll.nWarps = (uint8_t)(t->proto == P_SIMPLE ? 16 : 8);
  d->coll.algo = sim_algo_str[t->algo];
  d->coll.proto = sim_proto_str[t->proto];
  d->coll.parentGroup = group_h;
  d->coll.userTag = t->tag;
  if (t->kind == K_SYM) { /* 2.31: the variant, algo its part after the first '_', no protocol */
    const char *v = sym_variant(t), *u = strchr(v, '_');
    d->coll.isSymColl = 1;
    d->coll.kernelVariant = v;
    d->coll.algo = u ? u + 1 : v;
    d->coll.proto = "";
  }
}

static void p2p_descr(ncs_descr_v7_t *d, const sim_plan_t *p, const sim_task_t *t, void *group_h) {
  memset(d, 0, sizeof *d);
  d->type = NCS_EV_P2P;
  d->parentObj = t->api_h;
  d->rank = p->comm->rank;
  d->p2p.func = sim_func_str[t->func];
  d->p2p.buff = t->recvbuff;
  d->p2p.datatype = sim_dtype_str[t->tdtype];
  d->p2p.count = t->count;
  d->p2p.peer = t->root;
  d->p2p.nChannels = (uint8_t)t->nch;
  d->p2p.parentGroup = group_h;
  d->p2p.userTag = t->tag;
}

/* ------------------------------------------------------------------ proxy ops of a plan */
static int crosses_node(const sim_comm_t *c, int peer) {
  return sim_node_of(sim_global_rank(c, peer)) != sim_node_of(sim_global_rank(c, c->rank));
}

/* --gpu-gbps: the kernel's duration, (bus bytes) / G. Bus bytes are nccl-tests' algbw bytes times
 * the bus factor: AllReduce 2(n-1)/n x size; AllGather/ReduceScatter (n-1)/n x size x n;
 * Broadcast, Reduce, Send, Recv 1 x size (size = user count x type size). */
static uint64_t kernel_ns(const sim_task_t *t, int n) {
  double b = (double)t->bytes;
  if (t->func == F_ALLREDUCE) b = b * 2.0 * (n - 1) / n;
  else if (t->func == F_ALLGATHER || t->func == F_REDUCESCATTER) b = b * (n - 1);
  uint64_t ns = (uint64_t)(b / sim_opt.gpu_gbps + 0.5);
  return ns ? ns : 1;
}

static sim_pop_t *new_op(const sim_plan_t *p, const sim_task_t *t, int kind, int ch, int peer,
                         sim_inst_t *inst, int ti) {
  sim_pop_t *o = sim_xcalloc(1, sizeof *o);
  o->kind = kind;
  o->ctx = p->comm->ctx;
  o->parent = t->ev_h; /* sub->taskEventHandle */
  o->pid = getpid();
  o->rank = p->comm->rank;
  o->channel = ch;
  o->peer = peer;
  o->nsteps = sim_opt.steps;
  o->mask = t->mask;
  o->net_kind = sim_opt.net_kind == SIM_NET_MIX ? (ch & 1) : sim_opt.net_kind;
  o->bytes = t->bytes / (size_t)t->nch + 1;
  size_t chunk = (o->bytes + (size_t)o->nsteps - 1) / (size_t)o->nsteps;
  o->chunk = chunk > (size_t)INT_MAX ? INT_MAX : (int)chunk; /* chunkSize is an int in the ABI */
  o->hang = t->kind == K_HANG;
  o->inst = inst;
  o->comm = p->comm;
  /* coupling lane of this (task, channel); the peer uses the same one for its half */
  o->lane = sim_cpl_lanes() > 0 ? ((ti & 1) * (sim_cpl_lanes() / 2) + ch) % sim_cpl_lanes() : 0;
  if (inst && inst->cpl && !t->is_p2p && t->kind == K_NORMAL &&
      (kind == POP_SEND || kind == POP_RECV))
    o->cpl = inst->cpl;
  if (kind == POP_SEND && t->fault == SIM_FAULT_STALL) /* freeze with earlier steps done */
    o->stall_at = 1 + (o->nsteps > 1 ? 1 : 0);
  if (kind == POP_KERNEL && sim_opt.gpu_gbps > 0) o->kern_ns = kernel_ns(t, p->comm->nranks);
  if (kind == POP_KERNEL && t->fault == SIM_FAULT_KTIME) o->kshift = SIM_KTIME_SHIFT_NS;
  if (kind == POP_KERNEL) o->kbase = t->kbase[ch], o->kdev = t->kdev[ch];
  o->sym = t->kind == K_SYM;
  /* model time: posted now, seen by its thread a poll later; its own random choices */
  o->vt = sim_vt_now() + SIM_VT_POLL_NS;
  o->vrng = sim_mix(p->rng, ((uint64_t)ti << 16) | ((uint64_t)ch << 4) | (uint64_t)kind);
  sim_vt_floor_add(&o->floor, o->vt); /* before the poster's clock moves past it */
  sim_link_enqueue(o, sim_global_rank(p->comm, p->comm->rank));
  return o;
}

/* Appends one op; net sends go to the other process's proxy under PXN (R§3.7). */
static void add_op(sim_pop_t **list, sim_pop_t *o) {
  if (o->kind == POP_SEND && sim_pxn_active() && !o->hang) {
    sim_pxn_forward(o);
    sim_vt_floor_del(&o->floor);
    free(o);
    return;
  }
  atomic_fetch_add(&o->inst->refs, 1);
  atomic_fetch_add(&o->inst->ops_left, 1);
  if (o->kind != POP_KERNEL) atomic_fetch_add(&o->inst->net_left, 1);
  if (o->hang) o->inst->hang++;
  atomic_fetch_add(&o->comm->inflight, 1);
  o->next = *list;
  *list = o;
}

static void task_ops(sim_pop_t **list, const sim_plan_t *p, const sim_task_t *t, sim_inst_t *in,
                     int ti) {
  const sim_comm_t *c = p->comm;
  int nostop = t->kind == K_NOSTOP;
  /* A send/recv to itself is a local copy: NCCL 2.28.9 gives it no KernelCh and no proxy op
   * (seen on 2xH200: the self Send/Recv of an AlltoAll have no children). */
  if (t->is_p2p && t->root == c->rank && !nostop) return;
  for (int ch = 0; ch < t->nch; ch++) {
    if (t->kind == K_SYM) { /* in GPU memory only: no proxy ops; KernelCh from its own counters */
    } else if (t->is_p2p) {
      if (nostop || crosses_node(c, t->root)) {
        int kind = nostop ? POP_NOSTOP : (t->func == F_SEND ? POP_SEND : POP_RECV);
        add_op(list, new_op(p, t, kind, ch, t->root, in, ti));
      }
    } else if (c->nranks > 1) {
      int next = (c->rank + 1) % c->nranks, prev = (c->rank + c->nranks - 1) % c->nranks;
      if (nostop) /* CollNet/SHM: the proxy starts a ProxyOp that nobody stops (R§3.4) */
        add_op(list, new_op(p, t, POP_NOSTOP, ch, next, in, ti));
      else {
        if (crosses_node(c, next)) add_op(list, new_op(p, t, POP_SEND, ch, next, in, ti));
        if (crosses_node(c, prev)) add_op(list, new_op(p, t, POP_RECV, ch, prev, in, ti));
      }
    }
    /* KernelCh needs a profiler proxy op per channel, on the local proxy (R§3.5) */
    if (t->mask & NCS_EV_KERNEL_CH) add_op(list, new_op(p, t, POP_KERNEL, ch, -1, in, ti));
  }
}

/* A ring collective goes over the network when a neighbour sits on another node. */
static int ring_crosses(const sim_comm_t *c) {
  if (c->nranks < 2) return 0;
  return crosses_node(c, (c->rank + 1) % c->nranks) ||
         crosses_node(c, (c->rank + c->nranks - 1) % c->nranks);
}

/* Plans with proxy ops get a host-callback node in a graph; others run their plan task once at
 * capture (R§7). KernelCh always adds profiler proxy ops. */
static int plan_has_proxy(const sim_plan_t *p) {
  for (int i = 0; i < p->ntasks; i++) {
    const sim_task_t *t = &p->tasks[i];
    if (t->kind == K_CE) continue;
    if (t->is_p2p && t->root == p->comm->rank && t->kind != K_NOSTOP) continue; /* self copy */
    if ((t->mask & NCS_EV_KERNEL_CH) || t->kind == K_NOSTOP) return 1;
    if (t->kind == K_SYM) continue;
    if (t->is_p2p ? crosses_node(p->comm, t->root) : ring_crosses(p->comm)) return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------ KernelCh work counters
 * NCCL 2.28.9 .. 2.30.7 (docs/nccl-sim.md "KernelCh work counters"). Every work item (a task on a
 * channel) has a value of the channel's work counter twice:
 *  - host: comm->profiler.workCounter[ch], advanced when the plan is built (proxy.cc
 *    ncclProxySaveOp, pattern ncclPatternProfiler): an item without KernelCh always
 *    (incWorkCounter), an item with KernelCh only when not captured (SaveProxyProfiler with
 *    justInquire and !comm->planner.persistent). A captured item with KernelCh gets its value at
 *    upload, at each replay, only while comm->planner.persistent is set, which groupCleanup
 *    clears after every group: in practice never, so its op->workCounter stays 0.
 *  - GPU: the channel's counter advances for every item the kernel runs, with KernelCh or not,
 *    at every replay of a graph (device/common.h profiler()); items with KernelCh write the value
 *    into slot value % 64 of workStarted/workCompleted.
 * The profiler proxy op of an item starts KernelCh once its slot holds a counter >= the host's
 * value (transport/profiler.cc profilerProxyProgress), with the timestamps of whichever item
 * wrote it. A slot that never gets there leaves the op pending: ncclCommDestroy waits forever. */
static int kch_item(const sim_plan_t *p, const sim_task_t *t) {
  if (t->kind == K_CE || t->kind == K_SYM) return 0; /* a symmetric kernel has counters of its own */
  return !(t->is_p2p && t->root == p->comm->rank && t->kind != K_NOSTOP); /* self copy */
}

/* At plan time: the host's values (captured: whether the plan is captured). */
static void kch_plan_host(sim_plan_t *p, int captured) {
  sim_comm_t *c = p->comm;
  for (int i = 0; i < p->ntasks; i++) {
    sim_task_t *t = &p->tasks[i];
    if (!kch_item(p, t)) continue;
    int kch = (t->mask & NCS_EV_KERNEL_CH) != 0;
    for (int ch = 0; ch < t->nch; ch++)
      t->kbase[ch] = captured && kch ? 0 : atomic_fetch_add(&c->kch_host[ch], 1) + 1;
  }
}

/* At issue (a kernel launch, or a graph launch for each of its plans): the GPU runs the comm's
 * work in stream order, so the items get their counter values now. dev0: the values before. */
/* A self send/recv pair is one GPU work item (on its send's channels) that NCCL's host side never
 * counts: it has no proxy op (--kch-self; docs/nccl-sim.md "KernelCh work counters"). */
static int kch_self_item(const sim_plan_t *p, const sim_task_t *t) {
  return sim_opt.kch_self && t->is_p2p && t->func == F_SEND && t->root == p->comm->rank &&
         t->kind == K_NORMAL;
}

/* Does the plan have a KernelCh proxy op (task_ops)? Then it takes a place on the comm's stream. */
static int kch_pops(const sim_plan_t *p) {
  for (int i = 0; i < p->ntasks; i++) {
    const sim_task_t *t = &p->tasks[i];
    if (t->kind == K_CE || !(t->mask & NCS_EV_KERNEL_CH)) continue;
    if (t->is_p2p && t->root == p->comm->rank && t->kind != K_NOSTOP) continue; /* self copy */
    return 1;
  }
  return 0;
}

static void kch_issue(const sim_plan_t *p, uint64_t *dev0) {
  uint64_t n[SIM_MAX_CHANNELS] = {0};
  for (int i = 0; i < p->ntasks; i++)
    if (kch_item(p, &p->tasks[i]) || kch_self_item(p, &p->tasks[i]))
      for (int ch = 0; ch < p->tasks[i].nch; ch++) n[ch]++;
  for (int ch = 0; ch < SIM_MAX_CHANNELS; ch++)
    dev0[ch] = n[ch] ? atomic_fetch_add(&p->comm->kch_dev[ch], n[ch]) : 0;
  dev0[SIM_DEV0_ST] = kch_pops(p) ? atomic_fetch_add(&p->comm->st_issued, 1) + 1 : 0;
}

static _Atomic uint64_t *kch_ring(sim_comm_t *c, int ch, int create) {
  _Atomic uint64_t *r = atomic_load_explicit(&c->kch_ring[ch], memory_order_acquire);
  if (r || !create) return r;
  _Atomic uint64_t *n = sim_xcalloc(SIM_KCH_SLOTS, sizeof *n);
  if (atomic_compare_exchange_strong(&c->kch_ring[ch], &r, n)) return n;
  free((void *)n);
  return r;
}

static _Atomic uint64_t *kch_tsa(sim_comm_t *c, int ch) {
  _Atomic uint64_t *r = atomic_load_explicit(&c->kch_ts[ch], memory_order_acquire);
  if (r) return r;
  _Atomic uint64_t *n = sim_xcalloc(4 * SIM_KCH_SLOTS, sizeof *n);
  if (atomic_compare_exchange_strong(&c->kch_ts[ch], &r, n)) return n;
  free((void *)n);
  return r;
}

void sim_kts_put(sim_comm_t *c, int ch, uint64_t v, uint64_t start, uint64_t stop, uint64_t shift) {
  _Atomic uint64_t *r = kch_tsa(c, ch) + 4 * (v % SIM_KCH_SLOTS);
  if (atomic_load(&r[0]) != v)
    atomic_store(&r[1], 0), atomic_store(&r[2], 0), atomic_store(&r[3], shift), atomic_store(&r[0], v);
  if (start) atomic_store(&r[1], start);
  if (stop) atomic_store(&r[2], stop);
}

void sim_kts_get(sim_comm_t *c, int ch, uint64_t v, uint64_t *start, uint64_t *stop, uint64_t *shift) {
  _Atomic uint64_t *r = kch_tsa(c, ch) + 4 * (v % SIM_KCH_SLOTS);
  *start = *stop = *shift = 0;
  if (atomic_load(&r[0]) != v) return;
  *start = atomic_load(&r[1]), *stop = atomic_load(&r[2]), *shift = atomic_load(&r[3]);
  if (atomic_load(&r[0]) != v) *start = *stop = *shift = 0; /* overwritten meanwhile */
}

/* the work item whose times slot v % 64 holds (0: none yet) */
uint64_t sim_kts_item(sim_comm_t *c, int ch, uint64_t v) {
  return atomic_load(&kch_tsa(c, ch)[4 * (v % SIM_KCH_SLOTS)]);
}

uint64_t sim_kch_slot(sim_comm_t *c, int ch, uint64_t v) {
  _Atomic uint64_t *r = kch_ring(c, ch, 0);
  return r ? atomic_load_explicit(&r[v % SIM_KCH_SLOTS], memory_order_acquire) : 0;
}

/* When the plan's work runs (its host task, before the proxy ops exist): a replay's upload
 * first (uploadProxyOps: a host value only while this comm plans a capture), then the GPU, whose
 * items with KernelCh write their slots (the fake GPU does START and STOP at once). */
static void kch_execute(sim_plan_t *p, const uint64_t *dev0, int replay) {
  sim_comm_t *c = p->comm;
  uint64_t next[SIM_MAX_CHANNELS];
  memcpy(next, dev0, sizeof next);
  int capturing = replay && atomic_load(&c->kch_capturing);
  for (int i = 0; i < p->ntasks; i++) {
    sim_task_t *t = &p->tasks[i];
    int self = kch_self_item(p, t);
    if (!kch_item(p, t) && !self) continue;
    int kch = (t->mask & NCS_EV_KERNEL_CH) != 0;
    for (int ch = 0; ch < t->nch; ch++) {
      if (capturing && kch && !self) t->kbase[ch] = atomic_fetch_add(&c->kch_host[ch], 1) + 1;
      uint64_t d = t->kdev[ch] = ++next[ch];
      if (!kch) continue;
      _Atomic uint64_t *slot = &kch_ring(c, ch, 1)[d % SIM_KCH_SLOTS];
      uint64_t old = atomic_load(slot);
      while (old < d && !atomic_compare_exchange_weak(slot, &old, d)) {
      }
    }
  }
}

/* ------------------------------------------------------------------ the plan task */
/* Its place on the comm's stream (proxy.c orders the kernels), and the slots of its self copies,
 * which it stamps when its kernel begins; with no KernelCh to order, it stamps them now. */
static void stream_setup(sim_inst_t *in, const sim_plan_t *p, const uint64_t *dev0, const sim_pop_t *ops) {
  int nk = 0;
  for (const sim_pop_t *o = ops; o; o = o->next) nk += o->kind == POP_KERNEL;
  for (int i = 0; dev0 && i < p->ntasks; i++) {
    const sim_task_t *t = &p->tasks[i];
    if (!kch_self_item(p, t) || !(t->mask & NCS_EV_KERNEL_CH)) continue;
    for (int ch = 0; ch < t->nch && in->nself < SIM_SELF_MAX; ch++)
      in->self_ch[in->nself] = (uint8_t)ch, in->self_d[in->nself++] = t->kdev[ch];
  }
  if (dev0 && dev0[SIM_DEV0_ST] && nk) {
    in->st_comm = p->comm, in->st_idx = dev0[SIM_DEV0_ST];
    atomic_store(&in->st_left, nk);
    return;
  }
  if (dev0 && dev0[SIM_DEV0_ST]) /* kch_pops and task_ops disagree: the stream would stop */
    sim_fail("comm %s: a plan took a place on the stream but has no KernelCh op", p->comm->name);
  for (int k = 0; k < in->nself; k++)
    sim_kts_put(p->comm, in->self_ch[k], in->self_d[k], in->gpu_launch + 700, in->gpu_launch + 1000, 0);
  /* no stream to wait for: begun at launch (model time: the model's, not when this thread ran) */
  if (in->cpl) sim_cpl_begun(in->cpl, sim_opt.model ? sim_host_at(in->gpu_launch + 700) : sim_now_ns());
}

/* A KernelCh waiting for its ring slot is never waited for: the kernel itself is done. */
static void wait_inst(sim_inst_t *in, int hang) {
  uint64_t t0 = sim_now_ns();
  for (;;) {
    int left = (hang ? in->hang - atomic_load(&in->frozen) : atomic_load(&in->ops_left)) -
               atomic_load(&in->kch_wait);
    if (left <= 0) return;
    if (sim_now_ns() - t0 > SIM_GUARD_S * 1000000000ull) {
      sim_fail("a plan's proxy ops did not %s within %d s (ops left %d, KernelCh waiting %d; stream %llu of "
               "comm %s: %llu done, %llu issued)",
               hang ? "get stuck" : "finish", SIM_GUARD_S, atomic_load(&in->ops_left), atomic_load(&in->kch_wait),
               (unsigned long long)in->st_idx, in->st_comm ? in->st_comm->name : "-",
               in->st_comm ? (unsigned long long)atomic_load(&in->st_comm->st_done) : 0ull,
               in->st_comm ? (unsigned long long)atomic_load(&in->st_comm->st_issued) : 0ull);
      return;
    }
    sim_sleep_us(50);
  }
}

static void start_tasks(sim_plan_t *p, void *group_h, int replay) {
  sim_comm_t *c = p->comm;
  for (int i = 0; i < p->ntasks; i++) {
    sim_task_t *t = &p->tasks[i];
    t->ev_h = NULL;
    if (t->kind == K_CE) continue;
    ncs_descr_v7_t d;
    if (t->is_p2p) {
      if (!sim_active(t->mask, SIM_T_P2P)) continue;
      p2p_descr(&d, p, t, group_h);
    } else {
      uint64_t seq = atomic_load(&c->seq[t->func]);
      t->seqno = seq;
      if (sim_active(t->mask, SIM_T_COLL)) coll_descr(&d, p, t, group_h, seq);
      /* graph-captured plans advance seqNumber only with KernelCh on (R§3.6) */
      if (!p->persistent || ((group_h || t->api_h) && (t->mask & NCS_EV_KERNEL_CH)))
        atomic_fetch_add(&c->seq[t->func], 1);
      if (!sim_active(t->mask, SIM_T_COLL)) continue;
    }
    sim_ev_start(c->ctx, &t->ev_h, &d);
    if (replay && sim_abi_has_type(sim_plugin_abi(), sim_type_index(d.type)))
      atomic_fetch_add(&sim_cnt->graph_colls, 1);
  }
}

/* Coupled plans a user thread waits for at the end of its group (--fault: the application
 * synchronises its stream after every call, so a hung rank stops at the op that hangs). */
static _Thread_local struct {
  sim_inst_t **v;
  int n, cap;
} t_pend;
static _Thread_local int t_one_rank; /* the current group's calls are all of one rank */

/* The first eager kernel collective of the plan, if it is coupled (fault.c). */
static const sim_task_t *coupled_task(const sim_plan_t *p) {
  if (!sim_opt.couple || p->persistent || p->comm->nranks < 2 || sim_pxn_active()) return NULL;
  for (int i = 0; i < p->ntasks; i++)
    if (!p->tasks[i].is_p2p && p->tasks[i].kind == K_NORMAL) return &p->tasks[i];
  return NULL;
}

/* Enters the plan's collective instance: after the Coll starts, before its proxy ops exist. */
static void couple_enter(sim_plan_t *p, sim_inst_t *in, const sim_task_t *t) {
  sim_comm_t *c = p->comm;
  int64_t idx = atomic_fetch_add(&c->couple_seq, 1);
  in->cpl = sim_cpl_enter(c->couple_key, c->nranks, idx);
  in->grank = sim_global_rank(c, c->rank);
  in->func = t->func, in->opidx = t->opidx, in->seqno = t->seqno, in->comm_id = c->comm_id;
  for (int i = 0; i < p->ntasks; i++)
    if (p->tasks[i].fault == SIM_FAULT_STALL)
      sim_fault_note(in->grank, SIM_RS_STALLED, c->comm_id, p->tasks[i].func, p->tasks[i].opidx,
                     p->tasks[i].seqno);
}

/* After the ops exist: a rank with no coupled sends has its data out at once, unless stalled. */
static void couple_count_sends(const sim_plan_t *p, sim_inst_t *in, const sim_pop_t *ops) {
  int sends = 0, stall = 0;
  for (const sim_pop_t *o = ops; o; o = o->next) sends += o->cpl && o->kind == POP_SEND;
  for (int i = 0; i < p->ntasks; i++) stall |= p->tasks[i].fault == SIM_FAULT_STALL;
  atomic_store(&in->sends_left, sends);
  if (!sends && !stall) sim_cpl_out(in->cpl, sim_vt_now());
}

/* KernelCh ops go to NCCL 2.31's profiler thread when the comm has one, the rest to its proxy. */
static void post_ops(sim_comm_t *c, sim_pop_t *ops) {
  sim_pop_t *net = NULL, *kern = NULL;
  while (ops) {
    sim_pop_t *o = ops;
    ops = o->next;
    sim_pop_t **to = o->kind == POP_KERNEL && c->prof ? &kern : &net;
    o->next = *to;
    *to = o;
  }
  if (net) sim_proxy_post(c->proxy, net);
  if (kern) sim_proxy_post(c->prof, kern);
}

/* dev0: the GPU's work counters before this execution; NULL when no GPU work runs (a plan
 * without proxy ops whose task runs once at capture). gl: the graph launch of a replay, or the
 * queue item of an eager plan that waited behind graph work. */
static void host_plan_task(sim_plan_t *p, int replay, const uint64_t *dev0, const cbq_item_t *gl) {
  sim_comm_t *c = p->comm;
  void *group_h = NULL;
  if (dev0) kch_execute(p, dev0, replay);
  if (sim_active(p->mask, SIM_T_GROUP)) {
    ncs_descr_v7_t d = {.type = NCS_EV_GROUP};
    sim_ev_start(c->ctx, &group_h, &d);
  }
  start_tasks(p, group_h, replay);
  sim_inst_t *in = sim_xcalloc(1, sizeof *in);
  atomic_store(&in->refs, 1);
  /* a replayed kernel starts when the graph runs, not when it was captured */
  in->gpu_launch = replay ? sim_gpu_ns() : p->gpu_launch;
  if (dev0) /* GPU work runs: a kernel (not at capture time) */
    gpu_inst(in, p, replay && gl ? gl->corr : p->corr, replay && gl ? gl->exec : 0,
             replay && gl ? gl->replay : 0);
  const sim_task_t *ct = coupled_task(p);
  if (ct) couple_enter(p, in, ct);
  sim_pop_t *ops = NULL;
  for (int i = 0; i < p->ntasks; i++)
    if (p->tasks[i].kind != K_CE) task_ops(&ops, p, &p->tasks[i], in, i);
  stream_setup(in, p, dev0, ops);
  if (in->cpl) couple_count_sends(p, in, ops);
  post_ops(c, ops);
  if (in->cpl && sim_fault_active()) { /* waited for at the end of the group */
    if (t_pend.n == t_pend.cap) {
      t_pend.cap = t_pend.cap ? 2 * t_pend.cap : 16;
      t_pend.v = realloc(t_pend.v, (size_t)t_pend.cap * sizeof *t_pend.v);
      if (!t_pend.v) abort();
    }
    atomic_fetch_add(&in->refs, 1);
    t_pend.v[t_pend.n++] = in;
  }
  /* Children run on the proxy thread. Sometimes let them all finish before the Coll/P2p stop,
   * which is what NCCL's races produce (R§3.3 item 3). A hanging plan waits until its ops are
   * stuck so that the abort leaves them open. A coupled plan can finish only once every rank has
   * entered it: a thread that drives one rank waits for its peers; one that drives several (or a
   * callback thread) only if every rank entered already, at most 5 ms, since it may drive a peer
   * that has not. Never under --fault, where the op may hang. */
  if (in->hang)
    wait_inst(in, 1);
  else if ((int)(sim_rand(&p->rng) % 100) < sim_opt.race_pct) {
    if (!in->cpl || (t_one_rank && !sim_fault_active())) {
      wait_inst(in, 0);
      sim_vt_wait(atomic_load(&in->done_vt)); /* model time: the thread waited for them */
    } else if (sim_opt.model) {
      /* model time: whether every rank entered depends on real time; the stop does not wait */
    } else if (!sim_fault_active() && sim_cpl_entered_all(in->cpl))
      for (uint64_t t0 = sim_now_ns();
           atomic_load(&in->ops_left) > 0 && sim_now_ns() - t0 < 5000000;)
        sim_sleep_us(20);
  }
  for (int i = 0; i < p->ntasks; i++) {
    sim_task_t *t = &p->tasks[i];
    sim_ev_stop(t->is_p2p ? SIM_T_P2P : SIM_T_COLL, &t->ev_h);
  }
  sim_ev_stop(SIM_T_GROUP, &group_h);
  sim_inst_put(in);
}

static void plan_free(sim_plan_t *p) {
  free(p->tasks);
  free(p);
}

/* ------------------------------------------------------------------ CE collectives (v6) */
static void ce_launch(sim_comm_t *c, sim_task_t *t) {
  int mask = sim_mask(); /* CE tasks read the global mask directly (R§3.1) */
  void *cc = NULL;
  if (sim_active(mask, SIM_T_CE_COLL)) {
    ncs_descr_v7_t d;
    memset(&d, 0, sizeof d);
    d.type = NCS_EV_CE_COLL;
    d.parentObj = t->api_h;
    d.rank = c->rank;
    d.ceColl.seqNumber = c->ce_seq;
    d.ceColl.func = sim_func_str[t->func];
    d.ceColl.sendBuff = t->sendbuff;
    d.ceColl.recvBuff = t->recvbuff;
    d.ceColl.count = t->ucount;
    d.ceColl.root = t->root;
    d.ceColl.datatype = sim_dtype_str[t->dtype];
    d.ceColl.syncStrategy = "UC";
    d.ceColl.ceSeqNum = c->ce_seq;
    d.ceColl.stream = c->stream;
    d.ceColl.userTag = t->tag;
    sim_ev_start(c->ctx, &cc, &d);
  }
  c->ce_seq++;
  for (int phase = 0; phase < 4 && cc; phase++) {
    int sync = phase == 0 || phase == 3; /* sync, two batches, sync */
    unsigned ty = sync ? SIM_T_CE_SYNC : SIM_T_CE_BATCH;
    if (!sim_active(mask, ty)) continue;
    ncs_descr_v7_t d;
    memset(&d, 0, sizeof d);
    d.type = sync ? NCS_EV_CE_SYNC : NCS_EV_CE_BATCH;
    d.parentObj = cc;
    d.rank = c->rank;
    if (sync) {
      d.ceCollSync.isComplete = phase == 3;
      d.ceCollSync.nRanks = c->nranks;
    } else {
      d.ceCollBatch.numOps = c->nranks > 1 ? c->nranks - 1 : 1;
      d.ceCollBatch.totalBytes = t->bytes;
    }
    void *h = NULL;
    sim_ev_start(c->ctx, &h, &d);
    sim_ev_stop(ty, &h);
  }
  sim_ev_stop(SIM_T_CE_COLL, &cc);
}

/* ------------------------------------------------------------------ launch */
static void launch_plan(sim_plan_t *p, sim_graph_t *capture) {
  sim_comm_t *c = p->comm;
  int kernel_tasks = 0; /* the plan keeps its kernel's tasks only */
  for (int i = 0; i < p->ntasks; i++) {
    sim_task_t *t = &p->tasks[i];
    if (t->kind == K_CE) {
      ce_launch(c, t);
      continue;
    }
    /* NCCL before 2.31 reports a symmetric kernel by its API events only: no KernelLaunch, Coll
     * nor KernelCh (R§3.9) */
    if (t->kind == K_SYM && sim_plugin_abi() < 7) continue;
    p->tasks[kernel_tasks++] = *t;
  }
  p->ntasks = kernel_tasks;
  if (!kernel_tasks) {
    plan_free(p);
    return;
  }
  void *launch_h = NULL;
  if (p->mask & NCS_EV_KERNEL_LAUNCH) { /* KernelLaunch has no ancestors rule: own bit only */
    ncs_descr_v7_t d;
    memset(&d, 0, sizeof d);
    d.type = NCS_EV_KERNEL_LAUNCH;
    d.parentObj = p->tasks[0].group_api_h;
    d.kernelLaunch.stream = c->stream;
    sim_ev_start(c->ctx, &launch_h, &d);
  }
  p->gpu_launch = sim_gpu_ns(); /* cuLaunchKernelEx, or a recorded node under capture */
  p->launch_mono = sim_now_ns();
  if (capture && sim_gpu_on() && !capture->fgraph) {
    capture->fgraph = sim_gpu_graph_new();
    capture->device = sim_global_rank(c, c->rank);
  }
  /* --cupti: the driver's launch, inside the KernelLaunch event (R§3.2) */
  p->corr = sim_gpu_launch(capture ? capture->fgraph : 0, &p->gnode);
  sim_ev_stop(SIM_T_KERNEL_LAUNCH, &launch_h);
  p->has_proxy = plan_has_proxy(p);
  kch_plan_host(p, capture != NULL);
  if (capture) {
    p->persistent = 1;
    if (capture->all_last)
      capture->all_last->anext = p;
    else
      capture->all = p;
    capture->all_last = p;
    if (p->has_proxy) { /* replayed from a host-callback node at every launch */
      p->next = capture->plans;
      capture->plans = p;
    } else { /* no callback node: the plan task runs once, now (R§7) */
      host_plan_task(p, 0, NULL, NULL);
      p->next = capture->once;
      capture->once = p;
    }
    return;
  }
  kch_issue(p, p->dev0);
  if (c->cbq && p->has_proxy && cbq_busy(c->cbq)) { /* stream order behind graph host work */
    cbq_push(c->cbq, p, p->dev0, 0, 0, 0);
    return;
  }
  host_plan_task(p, 0, p->dev0, NULL);
  plan_free(p);
}

/* ------------------------------------------------------------------ groups */
static void fill_task(sim_task_t *t, const sim_call_t *k, int mask, void *gapi) {
  memset(t, 0, sizeof *t);
  t->func = k->func, t->dtype = k->dtype, t->algo = k->algo, t->proto = k->proto;
  t->nch =
      k->nchannels < 1 ? 1 : (k->nchannels > SIM_MAX_CHANNELS ? SIM_MAX_CHANNELS : k->nchannels);
  t->kind = k->kind, t->root = k->root, t->mask = mask, t->group_api_h = gapi;
  t->fault = k->fault, t->opidx = k->opidx, t->tag = k->tag;
  t->is_p2p = k->func == F_SEND || k->func == F_RECV;
  t->ucount = k->count;
  t->bytes = k->count * (size_t)dtype_size[k->dtype];
  t->count = k->count, t->tdtype = k->dtype;
  if (k->func == F_ALLGATHER || k->func == F_BROADCAST) /* the task counts bytes (R§2.9) */
    t->count = t->bytes, t->tdtype = D_INT8;
  uintptr_t base = 0x7f0000000000u + ((uintptr_t)k->comm->rank << 32);
  t->sendbuff = (const void *)(base + 0x1000);
  t->recvbuff = (void *)(base + 0x80001000u);
}

/* CollApi / P2pApi: started and stopped inside the API call (R§3.2) */
static void api_event(sim_task_t *t, const sim_call_t *k, void *gapi, int captured) {
  unsigned ty = t->is_p2p ? SIM_T_P2P_API : SIM_T_COLL_API;
  if (!sim_active(t->mask, ty)) return;
  ncs_descr_v7_t d;
  memset(&d, 0, sizeof d);
  d.parentObj = gapi;
  if (t->is_p2p) {
    d.type = NCS_EV_P2P_API;
    d.p2pApi.func = sim_func_str[k->func];
    d.p2pApi.count = k->count;
    d.p2pApi.datatype = sim_dtype_str[k->dtype];
    d.p2pApi.stream = k->comm->stream;
    d.p2pApi.graphCaptured = captured;
    d.p2pApi.userTag = k->tag;
  } else {
    d.type = NCS_EV_COLL_API;
    d.collApi.func = sim_func_str[k->func];
    d.collApi.count = k->count;
    d.collApi.datatype = sim_dtype_str[k->dtype];
    d.collApi.root = k->root;
    d.collApi.stream = k->comm->stream;
    d.collApi.graphCaptured = captured;
    d.collApi.userTag = k->tag;
  }
  sim_ev_start(k->comm->ctx, &t->api_h, &d);
  void *h = t->api_h; /* the task keeps the value: Coll's parent, even at graph replays */
  sim_ev_stop(ty, &h);
}

/* One plan per communicator, in the order the communicators first appear. */
static void launch_plans(const sim_call_t *calls, sim_task_t *tasks, int n, sim_graph_t *capture,
                         uint64_t *rng) {
  char *done = sim_xcalloc((size_t)n, 1);
  for (int i = 0; i < n; i++) {
    if (done[i]) continue;
    sim_plan_t *p = sim_xcalloc(1, sizeof *p);
    p->comm = calls[i].comm;
    p->tasks = sim_xcalloc((size_t)n, sizeof *p->tasks);
    p->rng = sim_rand(rng) | 1;
    for (int j = i; j < n; j++)
      if (!done[j] && calls[j].comm == p->comm) {
        p->tasks[p->ntasks++] = tasks[j];
        done[j] = 1;
      }
    p->mask = p->tasks[0].mask;
    launch_plan(p, capture);
  }
  free(done);
}

/* --fault: like cudaStreamSynchronize after the group. An op in which no rank made progress for
 * --hang-s hangs: the thread notes it and stops issuing operations (fault.c). Progress rather
 * than a deadline, so that a loaded machine does not pass for a hang. */
static void sync_pending(void) {
  uint64_t limit = (uint64_t)(sim_opt.hang_s * 1e9);
  for (int i = 0; i < t_pend.n; i++) {
    sim_inst_t *in = t_pend.v[i];
    uint64_t t0 = sim_now_ns(), seen = ~0ull;
    for (;;) {
      int left = atomic_load(&in->ops_left) - atomic_load(&in->kch_wait);
      if (left <= 0 && (!in->cpl || sim_cpl_ready(in->cpl))) {
        sim_vt_wait(atomic_load(&in->done_vt)); /* model time: the stream sync waited for it */
        if (in->cpl) sim_vt_wait(sim_cpl_ready_vt(in->cpl));
        break;
      }
      uint64_t now = sim_now_ns();
      uint64_t tick = (uint64_t)left + (in->cpl ? sim_cpl_ticks(in->cpl) << 20 : 0);
      if (tick != seen) seen = tick, t0 = now;
      if (now - t0 > limit || sim_fault_halted()) { /* after one hung op, the rest at once */
        sim_fault_hung(in);
        break;
      }
      sim_sleep_us(200);
    }
    sim_inst_put(in);
  }
  t_pend.n = 0;
  if (!t_pend.cap) return;
  free(t_pend.v); /* a thread-local buffer must not outlive its thread */
  t_pend.v = NULL, t_pend.cap = 0;
}

/* Model time: the application's work before a group, SIM_VT_GAP_NS and up to SIM_VT_JITTER_NS
 * more, drawn from the seed, the rank and the thread's group count: ranks do not arrive in
 * lockstep, and no rank is late more often than another by construction. */
static void model_gap(int grank) {
  static _Thread_local uint64_t t_ngroups;
  if (!sim_opt.model) return;
  uint64_t r = sim_mix(sim_mix(sim_opt.seed, 0x6A9u + (uint64_t)grank), t_ngroups++);
  sim_vt_add(SIM_VT_GAP_NS + r % SIM_VT_JITTER_NS);
}

void sim_group(const sim_call_t *calls, int n, int depth, sim_graph_t *capture, uint64_t *rng) {
  if (n <= 0) return;
  model_gap(sim_global_rank(calls[0].comm, calls[0].comm->rank));
  sim_delay_point(sim_global_rank(calls[0].comm, calls[0].comm->rank), SIM_AT_ENQUEUE);
  int mask = sim_mask(); /* one sample per group, like ncclProfilerApiState */
  void *gapi = NULL;
  void *ctx0 = calls[0].comm->ctx; /* the first communicator's context owns the GroupApi */
  if (sim_active(mask, SIM_T_GROUP_API)) {
    ncs_descr_v7_t d;
    memset(&d, 0, sizeof d);
    d.type = NCS_EV_GROUP_API;
    d.groupApi.graphCaptured = capture != NULL;
    d.groupApi.groupDepth = depth;
    sim_ev_start(ctx0, &gapi, &d);
    sim_ev_state(SIM_T_GROUP_API, gapi, NCS_ST_GROUP_START_API_STOP, NULL);
  }
  sim_task_t *tasks = sim_xcalloc((size_t)n, sizeof *tasks);
  for (int i = 0; i < n; i++) {
    /* NCCL reloads its thread-local copy of the global mask at every append, just before the
     * GroupApi start (which only the first append of a group calls), and the task, its API
     * event and every later event of it follow that copy (enqueue.cc collTaskAppend and
     * p2pTaskAppend, profiler.cc ncclProfilerStartGroupApiEvent in 2.28.9). So a mask change in the
     * GroupApi start reaches the group's later operations, not its first one. */
    fill_task(&tasks[i], &calls[i], i == 0 ? mask : sim_mask(), gapi);
    api_event(&tasks[i], &calls[i], gapi, capture != NULL);
  }
  atomic_fetch_add(&sim_cnt->ops, (uint64_t)n);
  uint64_t rbytes = 0; /* nccl-tests' size, as the job model counts it (--range-truth) */
  for (int i = 0; i < n; i++)
    rbytes += (uint64_t)calls[i].count * (uint64_t)dtype_size[calls[i].dtype] *
              (calls[i].func == F_ALLGATHER || calls[i].func == F_REDUCESCATTER ? (uint64_t)calls[i].comm->nranks : 1);
  sim_range_note_ops(n, rbytes);
  sim_ev_state(SIM_T_GROUP_API, gapi, NCS_ST_GROUP_END_API_START, NULL);
  t_one_rank = 1;
  for (int i = 1; i < n; i++)
    if (sim_global_rank(calls[i].comm, calls[i].comm->rank) !=
        sim_global_rank(calls[0].comm, calls[0].comm->rank))
      t_one_rank = 0;
  /* comm->planner.persistent while a capturing group is planned (groupCleanup clears it) */
  for (int i = 0; capture && i < n; i++) atomic_store(&calls[i].comm->kch_capturing, 1);
  launch_plans(calls, tasks, n, capture, rng);
  for (int i = 0; capture && i < n; i++) atomic_store(&calls[i].comm->kch_capturing, 0);
  t_one_rank = 0;
  free(tasks);
  sim_ev_stop(SIM_T_GROUP_API, &gapi);
  if (sim_opt.compute > 0 && sim_gpu_on()) { /* the application's own kernels after ncclGroupEnd */
    int dev = sim_global_rank(calls[0].comm, calls[0].comm->rank);
    if (capture && capture->fgraph && !capture->ncompute) {
      capture->ncompute = sim_opt.compute < SIM_GRAPH_COMPUTE ? sim_opt.compute : SIM_GRAPH_COMPUTE;
      sim_gpu_compute(dev, capture->fgraph, capture->compute, capture->ncompute);
    } else if (!capture) {
      sim_gpu_compute(dev, 0, NULL, sim_opt.compute);
    }
  }
  if (sim_opt.toggle_kch > 0) { /* --toggle-kch: a naive sampling plugin, at GroupApi stop */
    static _Thread_local uint64_t t_groups;
    sim_mask_kernel_ch(++t_groups % (uint64_t)sim_opt.toggle_kch == 0);
  }
  sync_pending();
}

/* ------------------------------------------------------------------ graphs */
sim_graph_t *sim_graph_new(void) { return sim_xcalloc(1, sizeof(sim_graph_t)); }

/* The GPU runs every captured kernel at every replay, those of plans without proxy ops too
 * (their work counters advance); plans with proxy ops also run their host task. */
void sim_graph_launch(sim_graph_t *g) {
  /* --cupti: instantiated before the first launch; every kernel of a launch carries its
   * correlation id and the exec graph's node ids */
  uint32_t corr = 0, replay = 0;
  if (g->fgraph) {
    if (!g->exec) g->exec = sim_gpu_instantiate(g->fgraph);
    corr = sim_gpu_graph_launch(g->exec, g->all ? g->all->comm->stream : NULL);
    replay = ++g->replays;
  }
  for (sim_plan_t *p = g->all; p; p = p->anext) {
    uint64_t dev0[SIM_DEV0_N];
    kch_issue(p, dev0);
    if (!p->has_proxy) { /* no host work at replay: the kernel just runs */
      if (corr) {
        sim_inst_t in;
        memset(&in, 0, sizeof in);
        gpu_inst(&in, p, corr, g->exec, replay);
        sim_sleep_us(5);
        sim_gpu_kernel_end(&in, 1);
      }
      continue;
    }
    if (!p->comm->cbq) {
      sim_fail("graph replay on a communicator without a callback thread");
      return;
    }
    cbq_push(p->comm->cbq, p, dev0, corr, g->exec, replay);
  }
  if (corr) sim_gpu_compute_replay(g->device, g->exec, corr, replay, g->compute, g->ncompute);
}

void sim_graph_destroy(sim_graph_t *g) {
  for (sim_plan_t *p = g->plans; p; p = p->next) sim_cbq_drain(p->comm->cbq);
  sim_plan_t *lists[2] = {g->plans, g->once};
  for (int i = 0; i < 2; i++)
    while (lists[i]) {
      sim_plan_t *p = lists[i];
      lists[i] = p->next;
      plan_free(p);
    }
  free(g);
}
