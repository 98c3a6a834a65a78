/* scenarios.c - the named workloads of nccl-sim (--scenario).
 *
 * A process holds a block of ranks. User threads drive them: by default one thread per rank
 * (ranks as threads); with fewer threads a thread drives several ranks and puts their calls in
 * one group, as single-threaded multi-GPU programs must. Every rank of a communicator picks the
 * same operations in the same order (their random choices are seeded by communicator and
 * iteration), so seqNumbers line up across ranks as in a real job.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

/* ------------------------------------------------------------------ world */
typedef struct uthread uthread_t;

typedef struct {
  void (*setup)(uthread_t *ut);       /* default: communicators 0..C-1 for each rank */
  void (*iter)(uthread_t *ut, int it);
  void (*finish)(uthread_t *ut);      /* after the iterations */
  void (*teardown)(uthread_t *ut);    /* default: destroy the communicators */
  void (*after_setup_once)(void);     /* one thread, while the others wait */
  void (*before_teardown_once)(void);
} workload_t;

struct uthread {
  int index;
  int lr[SIM_MAX_RANKS]; /* local ranks this thread drives */
  int n;
  uint64_t rng;
  pthread_t th;
  const workload_t *wl;
  sim_graph_t *graph;
  int launched; /* graph replays launched so far */
  uint64_t vt;  /* model time: the thread's clock */
  int nbar;     /* barriers passed */
};

static struct {
  int first, nlocal;   /* global ranks [first, first + nlocal) live in this process */
  sim_comm_t *comm[SIM_MAX_RANKS][SIM_MAX_COMMS];
  sim_cbq_t *cbq[SIM_MAX_RANKS];
  pthread_barrier_t bar;
  _Atomic uint64_t bar_vt[4]; /* model time: the latest thread at each of the 4 barriers */
  int64_t nops[SIM_MAX_RANKS]; /* counted collectives so far (--fault SEQ) */
  char gone[SIM_MAX_RANKS];    /* --fault skip: the rank issues no more operations */
  void *stale[64];     /* handles kept from an earlier plugin load (stale scenario) */
  int nstale;
  pthread_mutex_t mu;
} W = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t comm_id_of(int c) { return sim_mix(sim_opt.seed, 0xC0FFEE00u + (unsigned)c); }

static void default_setup(uthread_t *ut) {
  for (int i = 0; i < ut->n; i++) {
    int lr = ut->lr[i], g = W.first + lr;
    for (int c = 0; c < sim_opt.comms; c++) {
      char name[32];
      snprintf(name, sizeof name, "sim-comm-%d", c);
      /* communicator 1 has no name: NCCL passes NULL when the config has none */
      W.comm[lr][c] =
          sim_comm_create(comm_id_of(c), g, sim_opt.ranks, 0, 1, c == 1 ? NULL : name, NULL);
    }
  }
}

/* After a hang (--fault) the communicators are aborted: open events stay open (ncclCommAbort). */
static void default_teardown(uthread_t *ut) {
  int abort = sim_fault_aborting();
  if (sim_opt.hold_ms && !abort) { /* --hold: everything done, the communicators still alive */
    for (int i = 0; i < ut->n; i++)
      for (int c = 0; c < SIM_MAX_COMMS; c++)
        if (W.comm[ut->lr[i]][c]) sim_comm_drain(W.comm[ut->lr[i]][c]);
    sim_sleep_us(sim_opt.hold_ms * 1000u);
    sim_vt_add((uint64_t)sim_opt.hold_ms * 1000000u);
  }
  for (int i = 0; i < ut->n; i++)
    for (int c = 0; c < SIM_MAX_COMMS; c++)
      if (W.comm[ut->lr[i]][c]) {
        sim_comm_destroy(W.comm[ut->lr[i]][c], abort);
        W.comm[ut->lr[i]][c] = NULL;
      }
}

static int all_gone(const uthread_t *ut) {
  for (int i = 0; i < ut->n; i++)
    if (!W.gone[ut->lr[i]]) return 0;
  return ut->n > 0;
}

/* --user-tags: the userProfilerTag the thread's calls of this iteration carry (ABI v7; older
 * versions drop it): 1 + iteration / N, a step number as a framework might set it. */
static _Thread_local uint64_t t_tag;
typedef struct {
  uthread_t *ut;
  int it;
} iter_arg_t;

static void run_iter(void *arg) {
  iter_arg_t *a = arg;
  a->ut->wl->iter(a->ut, a->it);
}

/* pthread_barrier_wait; in model time every thread goes on at the latest one's time */
static void barrier(uthread_t *ut) {
  _Atomic uint64_t *m = &W.bar_vt[ut->nbar++ % 4]; /* its own: a thread may reach the next first */
  sim_vt_max(m, ut->vt);
  pthread_barrier_wait(&W.bar);
  sim_vt_wait(atomic_load(m)); /* model time only: live, no clock is bound */
}

static void *uthread_main(void *arg) {
  uthread_t *ut = arg;
  const workload_t *wl = ut->wl;
  int device = W.first + (ut->n ? ut->lr[0] : 0); /* a rank's GPU is its global rank */
  sim_vt_thread_begin(&ut->vt);
  sim_gpu_set_device(device);
  (wl->setup ? wl->setup : default_setup)(ut); /* inits run concurrently, as in NCCL */
  barrier(ut);
  if (ut->index == 0 && wl->after_setup_once) wl->after_setup_once();
  barrier(ut);
  sim_range_outer(1);
  /* --fault: a thread whose op hung stops; one whose ranks all skipped idles, then stops */
  for (int it = 0; it < sim_opt.iters && !sim_fault_halted(); it++) {
    t_tag = sim_opt.user_tags ? 1 + (uint64_t)it / (uint64_t)sim_opt.user_tags : 0;
    iter_arg_t a = {ut, it};
    sim_range_iteration(run_iter, &a, device); /* --ranges: inside ranges */
    if (all_gone(ut) && !sim_fault_halted()) sim_fault_idle();
  }
  if (wl->finish) wl->finish(ut);
  sim_range_outer(0);
  barrier(ut);
  if (ut->index == 0 && wl->before_teardown_once) wl->before_teardown_once();
  barrier(ut);
  /* model time: from here on only communicator destroys, each after its ops: the writer's clock
     no longer waits for this thread (and the last one's time is the latest of the process) */
  sim_vt_thread_done();
  (wl->teardown ? wl->teardown : default_teardown)(ut);
  sim_vt_thread_end();
  return NULL;
}

static void set_local_ranks(int proc) {
  int per = (sim_opt.ranks + sim_opt.procs - 1) / sim_opt.procs;
  W.first = proc * per;
  W.nlocal = sim_opt.ranks - W.first < per ? sim_opt.ranks - W.first : per;
}

static int run_threads(const workload_t *wl) {
  int T = sim_opt.threads < W.nlocal ? sim_opt.threads : W.nlocal;
  if (T < 1) T = 1;
  uthread_t *ut = sim_xcalloc((size_t)T, sizeof *ut);
  pthread_barrier_init(&W.bar, NULL, (unsigned)T);
  for (int i = 0; i < 4; i++) atomic_store(&W.bar_vt[i], 0);
  for (int lr = 0; lr < W.nlocal; lr++) {
    uthread_t *u = &ut[lr % T];
    u->lr[u->n++] = lr;
  }
  for (int i = 0; i < T; i++) {
    ut[i].index = i;
    ut[i].wl = wl;
    ut[i].rng = sim_mix(sim_opt.seed, 0xABCD0000u + (unsigned)(W.first + i)) | 1;
    if (pthread_create(&ut[i].th, NULL, uthread_main, &ut[i]) != 0) {
      sim_fail("cannot start user thread %d", i);
      T = i;
      break;
    }
  }
  for (int i = 0; i < T; i++) pthread_join(ut[i].th, NULL);
  pthread_barrier_destroy(&W.bar);
  free(ut);
  return atomic_load(&sim_cnt->failed) ? 1 : 0;
}

static int load(void) {
  char err[768];
  if (sim_plugin_load(sim_opt.plugin, sim_opt.abi, err, sizeof err) != 0) {
    sim_fail("cannot load profiler plugin '%s': %s", sim_opt.plugin, err);
    return -1;
  }
  sim_log("loaded %s through ncclProfiler_v%d", sim_plugin_name(), sim_plugin_abi());
  return 0;
}

/* One plugin load around one run of a workload. */
static int run_loaded(int proc, const workload_t *wl) {
  set_local_ranks(proc);
  if (load() || sim_range_load(sim_plugin_lib())) return 1;
  int rc = run_threads(wl);
  sim_plugin_unload();
  return rc;
}

/* ------------------------------------------------------------------ building calls */
/* The same choices on every rank of a communicator: seeded by communicator and iteration. */
static uint64_t op_rng(int c, int it) { return sim_mix(comm_id_of(c), (uint64_t)it) | 1; }

static sim_call_t mkcall(sim_comm_t *comm, int func, int root, uint64_t orng, int kind) {
  sim_call_t k;
  memset(&k, 0, sizeof k);
  k.comm = comm;
  k.func = func;
  k.root = root;
  k.kind = kind;
  k.dtype = (int)(sim_rand(&orng) % SIM_NDTYPES);
  k.algo = kind == K_NOSTOP ? A_COLLNET_DIRECT : (sim_rand(&orng) % 4 == 0 ? A_TREE : A_RING);
  k.proto = (int)(sim_rand(&orng) % SIM_NPROTOS);
  k.nchannels = 1 + (int)(sim_rand(&orng) % (uint64_t)sim_opt.channels);
  k.count = sim_opt.count;
  k.opidx = -1;
  k.tag = t_tag;
  return k;
}

/* Same size, another name: what a rank that passes the wrong type would send. */
static int other_dtype(int d) {
  static const int partner[SIM_NDTYPES] = {D_UINT8,   D_INT8,    D_FLOAT32, D_FLOAT32, D_FLOAT64,
                                           D_FLOAT64, D_BFLOAT16, D_INT32,  D_INT64,   D_FLOAT16};
  return partner[d];
}

/* A counted collective (--fault SEQ: the rank's kernel collectives on its first communicator):
 * applies a fault at this op. Returns 1 when the rank does not call it. */
static int fault_point(int lr, sim_call_t *k) {
  int g = W.first + lr;
  int64_t op = W.nops[lr]++;
  k->opidx = op;
  if (!sim_fault_active()) return 0;
  int kind = sim_fault_at(g, op);
  if (!kind) return 0;
  sim_comm_t *c = k->comm;
  uint64_t seqno = atomic_load(&c->seq[k->func]);
  switch (kind) {
  case SIM_FAULT_SKIP: /* stuck in application code: never calls it, nor anything after */
    W.gone[lr] = 1;
    sim_fault_note(g, SIM_RS_SKIPPED, c->comm_id, k->func, op, seqno);
    sim_log("fault skip: rank %d skips %s seqNumber %llu", g, sim_func_str[k->func],
            (unsigned long long)seqno);
    return 1;
  case SIM_FAULT_KILL: /* the process dies before the rank enters the op */
    sim_fault_note(g, SIM_RS_KILLED, c->comm_id, k->func, op, seqno);
    fflush(stdout);
    fflush(stderr);
    kill(getpid(), SIGKILL);
    for (;;) pause();
  case SIM_FAULT_STALL: k->fault = SIM_FAULT_STALL; return 0;
  case SIM_FAULT_KTIME: /* NCCL hands this op's KernelCh another operation's GPU timestamps */
    k->fault = SIM_FAULT_KTIME;
    fprintf(stderr,
            "nccl-sim: fault ktime:%d:%lld: rank %d's KernelCh times of %s seqNumber %llu are %llu ms "
            "late; the job goes on\n",
            g, (long long)op, g, sim_func_str[k->func], (unsigned long long)seqno,
            (unsigned long long)(SIM_KTIME_SHIFT_NS / 1000000));
    return 0;
  case SIM_FAULT_MISMATCH:
  case SIM_FAULT_MISMATCH_DTYPE: {
    size_t count = k->count;
    int dt = k->dtype;
    if (kind == SIM_FAULT_MISMATCH)
      k->count *= 2;
    else
      k->dtype = other_dtype(k->dtype);
    fprintf(stderr,
            "nccl-sim: fault %s:%d:%lld: rank %d calls %s seqNumber %llu with count %zu %s "
            "(the other ranks: %zu %s); the job goes on\n",
            sim_fault_name(kind), g, (long long)op, g, sim_func_str[k->func],
            (unsigned long long)seqno, k->count, sim_dtype_str[k->dtype], count, sim_dtype_str[dt]);
    return 0;
  }
  default: return 0;
  }
}

static void coll_op(uthread_t *ut, int it, int c, int func, int kind) {
  sim_call_t *calls = sim_xcalloc((size_t)ut->n, sizeof *calls);
  int n = 0;
  for (int i = 0; i < ut->n; i++) {
    sim_comm_t *comm = W.comm[ut->lr[i]][c];
    if (!comm || W.gone[ut->lr[i]]) continue;
    calls[n] = mkcall(comm, func, it % comm->nranks, op_rng(c, it), kind);
    if (c == 0 && kind == K_NORMAL && fault_point(ut->lr[i], &calls[n])) continue;
    n++;
  }
  sim_group(calls, n, n > 1 ? 2 : 1, ut->graph, &ut->rng);
  free(calls);
}

/* ncclGroupStart; ncclSend(next); ncclRecv(prev); ncclGroupEnd */
static void sendrecv_op(uthread_t *ut, int it, int c, int kind) {
  sim_call_t *calls = sim_xcalloc(2 * (size_t)ut->n, sizeof *calls);
  int n = 0;
  for (int i = 0; i < ut->n; i++) {
    sim_comm_t *comm = W.comm[ut->lr[i]][c];
    if (!comm || W.gone[ut->lr[i]]) continue;
    int next = (comm->rank + 1) % comm->nranks,
        prev = (comm->rank + comm->nranks - 1) % comm->nranks;
    calls[n++] = mkcall(comm, F_SEND, next, op_rng(c, it), kind);
    calls[n++] = mkcall(comm, F_RECV, prev, op_rng(c, it), kind);
  }
  sim_group(calls, n, 2, NULL, &ut->rng);
  free(calls);
}

/* ncclAlltoAll becomes one Send and one Recv per peer under one group, no CollApi (R§3.3). */
static void alltoall_op(uthread_t *ut, int it, int c) {
  int cap = 2 * sim_opt.ranks * ut->n;
  sim_call_t *calls = sim_xcalloc((size_t)cap, sizeof *calls);
  int n = 0;
  for (int i = 0; i < ut->n; i++) {
    sim_comm_t *comm = W.comm[ut->lr[i]][c];
    if (!comm || W.gone[ut->lr[i]]) continue;
    for (int p = 0; p < comm->nranks; p++) {
      if (p == comm->rank && comm->nranks > 1) continue;
      sim_call_t s = mkcall(comm, F_SEND, p, op_rng(c, it), K_NORMAL);
      s.count = sim_opt.count / (size_t)comm->nranks + 1;
      calls[n++] = s;
      s.func = F_RECV;
      calls[n++] = s;
    }
  }
  sim_group(calls, n, 2, NULL, &ut->rng);
  free(calls);
}

/* ncclGroupStart; an AllReduce on every communicator (and an AllGather on odd ones);
 * ncclGroupEnd. One GroupApi, owned by the first communicator, parents CollApis of the others,
 * which carry their own contexts (R§3.3 item 5). */
static void grouped_op(uthread_t *ut, int it) {
  sim_call_t *calls = sim_xcalloc(2 * SIM_MAX_COMMS * (size_t)ut->n, sizeof *calls);
  int n = 0;
  for (int c = 0; c < SIM_MAX_COMMS; c++)
    for (int i = 0; i < ut->n; i++) {
      sim_comm_t *comm = W.comm[ut->lr[i]][c];
      if (!comm || W.gone[ut->lr[i]]) continue;
      calls[n] = mkcall(comm, F_ALLREDUCE, 0, op_rng(c, it), K_NORMAL);
      if (c == 0 && fault_point(ut->lr[i], &calls[n])) continue; /* skip: gone from now on */
      n++;
      if (c & 1) calls[n++] = mkcall(comm, F_ALLGATHER, 0, op_rng(c, it) + 1, K_NORMAL);
    }
  sim_group(calls, n, 2, NULL, &ut->rng);
  free(calls);
}

/* ------------------------------------------------------------------ simple workloads */
static void it_allreduce(uthread_t *ut, int it) {
  coll_op(ut, it, it % sim_opt.comms, F_ALLREDUCE, K_NORMAL);
}
static void it_allgather(uthread_t *ut, int it) {
  coll_op(ut, it, it % sim_opt.comms, F_ALLGATHER, K_NORMAL);
}
static void it_reducescatter(uthread_t *ut, int it) {
  coll_op(ut, it, it % sim_opt.comms, F_REDUCESCATTER, K_NORMAL);
}
static void it_broadcast(uthread_t *ut, int it) {
  coll_op(ut, it, it % sim_opt.comms, F_BROADCAST, K_NORMAL);
}
static void it_reduce(uthread_t *ut, int it) {
  coll_op(ut, it, it % sim_opt.comms, F_REDUCE, K_NORMAL);
}
static void it_sendrecv(uthread_t *ut, int it) {
  sendrecv_op(ut, it, it % sim_opt.comms, K_NORMAL);
}
static void it_alltoall(uthread_t *ut, int it) { alltoall_op(ut, it, it % sim_opt.comms); }
static void it_grouped(uthread_t *ut, int it) { grouped_op(ut, it); }
static void it_ce(uthread_t *ut, int it) { coll_op(ut, it, it % sim_opt.comms, F_ALLGATHER, K_CE); }

static void it_mixed(uthread_t *ut, int it) {
  /* every kind once per 9 iterations, the same on every rank; the seed shifts the order */
  int c = it % sim_opt.comms;
  switch (((uint64_t)it * 4 + sim_opt.seed) % 9) {
  case 0: coll_op(ut, it, c, F_ALLREDUCE, K_NORMAL); break;
  case 1: coll_op(ut, it, c, F_ALLGATHER, K_NORMAL); break;
  case 2: coll_op(ut, it, c, F_REDUCESCATTER, K_NORMAL); break;
  case 3: coll_op(ut, it, c, F_BROADCAST, K_NORMAL); break;
  case 4: coll_op(ut, it, c, F_REDUCE, K_NORMAL); break;
  case 5: sendrecv_op(ut, it, c, K_NORMAL); break;
  case 6: alltoall_op(ut, it, c); break;
  case 7: grouped_op(ut, it); break;
  default: coll_op(ut, it, c, F_ALLGATHER, K_CE); break;
  }
}

/* CollNet/SHM: ProxyOps that are started and never stopped (R§3.4). */
static void it_neverstop(uthread_t *ut, int it) {
  int c = it % sim_opt.comms;
  switch (it % 4) {
  case 0: coll_op(ut, it, c, F_ALLREDUCE, K_NOSTOP); break;
  case 1: sendrecv_op(ut, it, c, K_NOSTOP); break;
  default: coll_op(ut, it, c, F_ALLREDUCE, K_NORMAL); break;
  }
}

#define SIMPLE_WL(fn) static const workload_t wl_##fn = {.iter = it_##fn}
SIMPLE_WL(allreduce);
SIMPLE_WL(allgather);
SIMPLE_WL(reducescatter);
SIMPLE_WL(broadcast);
SIMPLE_WL(reduce);
SIMPLE_WL(sendrecv);
SIMPLE_WL(alltoall);
SIMPLE_WL(grouped);
SIMPLE_WL(ce);
SIMPLE_WL(mixed);
SIMPLE_WL(neverstop);

/* Symmetric-memory kernels (NCCL 2.31, ABI v7): AllReduce, AllGather and ReduceScatter from
 * registered windows, and a regular AllReduce every 4th iteration. */
static void it_symmetric(uthread_t *ut, int it) {
  static const int funcs[3] = {F_ALLREDUCE, F_ALLGATHER, F_REDUCESCATTER};
  int c = it % sim_opt.comms;
  if (it % 4 == 3)
    coll_op(ut, it, c, F_ALLREDUCE, K_NORMAL);
  else
    coll_op(ut, it, c, funcs[it % 4], K_SYM);
}
SIMPLE_WL(symmetric);

#define SIMPLE_RUN(fn)                                                                            \
  static int run_##fn(int proc) { return run_loaded(proc, &wl_##fn); }
SIMPLE_RUN(allreduce)
SIMPLE_RUN(allgather)
SIMPLE_RUN(reducescatter)
SIMPLE_RUN(broadcast)
SIMPLE_RUN(reduce)
SIMPLE_RUN(sendrecv)
SIMPLE_RUN(alltoall)
SIMPLE_RUN(grouped)
SIMPLE_RUN(ce)
SIMPLE_RUN(mixed)
SIMPLE_RUN(neverstop)
SIMPLE_RUN(symmetric)

/* ------------------------------------------------------------------ split */
/* Communicator 0 is split by rank parity into communicator 1, which shares 0's proxy thread.
 * Then 0 is destroyed: the shared proxy keeps emitting ProxyCtrl with 0's (finalized)
 * context while 1 runs on (R§1.4). */
static int split_at(void) { return sim_opt.iters / 3; }
static int unsplit_at(void) { return 2 * sim_opt.iters / 3; }

static void split_rank(int lr) {
  sim_comm_t *a = W.comm[lr][0];
  int g = W.first + lr, color = g % 2;
  int n = (sim_opt.ranks - color + 1) / 2;
  W.comm[lr][1] = sim_comm_create(sim_mix(a->comm_id, 100u + (unsigned)color), g / 2, n, color, 2,
                                  color ? "split-odd" : "split-even", a);
}

static void it_split(uthread_t *ut, int it) {
  if (it == split_at())
    for (int i = 0; i < ut->n; i++) split_rank(ut->lr[i]);
  if (it == unsplit_at())
    for (int i = 0; i < ut->n; i++) {
      sim_comm_destroy(W.comm[ut->lr[i]][0], 0);
      W.comm[ut->lr[i]][0] = NULL;
    }
  int c = W.comm[ut->lr[0]][0] && (it < split_at() || it % 2 == 0) ? 0 : 1;
  if (it % 3 == 2)
    sendrecv_op(ut, it, c, K_NORMAL);
  else
    coll_op(ut, it, c, F_ALLREDUCE, K_NORMAL);
}

static void split_setup(uthread_t *ut) {
  for (int i = 0; i < ut->n; i++)
    W.comm[ut->lr[i]][0] =
        sim_comm_create(comm_id_of(0), W.first + ut->lr[i], sim_opt.ranks, 0, 1, "parent", NULL);
}

static const workload_t wl_split = {.setup = split_setup, .iter = it_split};

static int run_split(int proc) {
  if (sim_opt.iters < 3) sim_opt.iters = 3;
  return run_loaded(proc, &wl_split);
}

/* ------------------------------------------------------------------ pxn */
static sim_comm_t *pxn_host(int channel) { return W.comm[channel % W.nlocal][0]; }
static void pxn_listen(void) { sim_pxn_start_listener(pxn_host); }
static void it_pxn(uthread_t *ut, int it) {
  if (it % 2)
    sendrecv_op(ut, it, 0, K_NORMAL);
  else
    coll_op(ut, it, 0, F_ALLREDUCE, K_NORMAL);
}
static const workload_t wl_pxn = {.iter = it_pxn, .after_setup_once = pxn_listen,
                                  .before_teardown_once = sim_pxn_finish};
static int run_pxn(int proc) { return run_loaded(proc, &wl_pxn); }

/* ------------------------------------------------------------------ abort */
/* After normal work, one AllReduce whose proxy ops and KernelCh get stuck; then the
 * communicators are aborted and finalized with those events still open. The normal work finishes
 * first: its ops wait for the peers' (coupling), which an early abort of a peer would drop. */
static void abort_finish(uthread_t *ut) {
  for (int i = 0; i < ut->n; i++)
    for (int c = 0; c < SIM_MAX_COMMS; c++)
      if (W.comm[ut->lr[i]][c]) sim_comm_drain(W.comm[ut->lr[i]][c]);
  coll_op(ut, sim_opt.iters, 0, F_ALLREDUCE, K_HANG);
}
static void abort_teardown(uthread_t *ut) {
  for (int i = 0; i < ut->n; i++)
    for (int c = 0; c < SIM_MAX_COMMS; c++)
      if (W.comm[ut->lr[i]][c]) {
        sim_comm_destroy(W.comm[ut->lr[i]][c], 1);
        W.comm[ut->lr[i]][c] = NULL;
      }
}
static const workload_t wl_abort = {.iter = it_allreduce, .finish = abort_finish,
                                    .teardown = abort_teardown};
static int run_abort(int proc) { return run_loaded(proc, &wl_abort); }

/* ------------------------------------------------------------------ graph */
/* Capture AllReduce + AllGather once (API events with graphCaptured), then replay the graph:
 * each replay runs the plan task on the rank's CUDA callback thread and re-emits Group, Coll,
 * ProxyOp, ProxyStep, KernelCh with the capture-time CollApi handle as the Coll's parent
 * (R§7). Eager operations in between queue behind pending replays in stream order. The capture
 * is the group of iteration --capture-at (0): the iterations before it are eager only; one
 * replay per iteration from there on, the rest after the last iteration. */
static void graph_setup(uthread_t *ut) {
  default_setup(ut);
  for (int i = 0; i < ut->n; i++) {
    int lr = ut->lr[i];
    W.cbq[lr] = sim_cbq_create();
    for (int c = 0; c < sim_opt.comms; c++) W.comm[lr][c]->cbq = W.cbq[lr];
  }
}

static void graph_capture(uthread_t *ut) {
  sim_call_t *calls = sim_xcalloc(2 * (size_t)ut->n, sizeof *calls);
  int n = 0;
  for (int i = 0; i < ut->n; i++) {
    sim_comm_t *comm = W.comm[ut->lr[i]][0];
    calls[n++] = mkcall(comm, F_ALLREDUCE, 0, op_rng(0, -1), K_NORMAL);
    calls[n++] = mkcall(comm, F_ALLGATHER, 0, op_rng(0, -2), K_NORMAL);
  }
  ut->graph = sim_graph_new();
  sim_group(calls, n, 2, ut->graph, &ut->rng);
  free(calls);
}

/* --late-comm: communicator index sim_opt.comms, created two iterations after the capture, once
 * replays have put NCCL's KernelCh counters out of step (a plugin must not let this init undo
 * what the capture decided, e.g. turn KernelCh back on) */
static void graph_late_comm(uthread_t *ut) {
  int c = sim_opt.comms;
  for (int i = 0; i < ut->n; i++) {
    int lr = ut->lr[i];
    W.comm[lr][c] = sim_comm_create(comm_id_of(c), W.first + lr, sim_opt.ranks, 0, 1, "sim-late", NULL);
    W.comm[lr][c]->cbq = W.cbq[lr];
  }
}

static void it_graph(uthread_t *ut, int it) {
  if (it == sim_opt.capture_at) graph_capture(ut);
  sim_graph_t *g = ut->graph;
  if (g && ut->launched < sim_opt.replays) sim_graph_launch(g), ut->launched++;
  if (sim_opt.late_comm && it == sim_opt.capture_at + 2) graph_late_comm(ut); /* after 3 replays */
  ut->graph = NULL; /* eager work is not captured */
  coll_op(ut, it, it % sim_opt.comms, F_ALLREDUCE, K_NORMAL);
  if (sim_opt.late_comm && it >= sim_opt.capture_at + 2)
    coll_op(ut, it, sim_opt.comms, F_ALLREDUCE, K_NORMAL);
  ut->graph = g;
}

static void graph_finish(uthread_t *ut) {
  if (!ut->graph) graph_capture(ut); /* --iters 0, or not beyond --capture-at */
  for (; ut->launched < sim_opt.replays; ut->launched++) sim_graph_launch(ut->graph);
  sim_graph_destroy(ut->graph);
  ut->graph = NULL;
}

static void graph_teardown(uthread_t *ut) {
  for (int i = 0; i < ut->n; i++) {
    int lr = ut->lr[i];
    sim_cbq_drain(W.cbq[lr]);
    sim_cbq_destroy(W.cbq[lr]);
    W.cbq[lr] = NULL;
  }
  default_teardown(ut);
}

static const workload_t wl_graph = {.setup = graph_setup, .iter = it_graph, .finish = graph_finish,
                                    .teardown = graph_teardown};
static int run_graph(int proc) { return run_loaded(proc, &wl_graph); }

/* ------------------------------------------------------------------ reload */
/* init, events, finalize, dlclose, dlopen, init again ...: the plugin must survive a full
 * unload while NCCL keeps running (R§1.4). */
static int run_reload(int proc) {
  for (int cy = 0; cy < sim_opt.cycles; cy++) {
    int rc = run_loaded(proc, cy % 2 ? &wl_mixed : &wl_allreduce);
    if (rc) return rc;
    sim_log("reload: cycle %d done", cy);
  }
  return 0;
}

/* ------------------------------------------------------------------ stale */
/* Handles NCCL should never pass but a plugin must survive (R§3.10): NULL, pointers that never
 * were handles, handles stopped already, NULL state args, a NULL context, and (after a reload)
 * handles of the previous load. */
static void keep_stale(void *h) {
  pthread_mutex_lock(&W.mu);
  if (h && W.nstale < (int)(sizeof W.stale / sizeof W.stale[0])) W.stale[W.nstale++] = h;
  pthread_mutex_unlock(&W.mu);
}

static void *ctrl_start(void *ctx) {
  void *h = NULL;
  ncs_descr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = NCS_EV_PROXY_CTRL;
  sim_ev_start(ctx, &h, &d);
  return h;
}

static void null_args_state(void *h, int state) {
  if (!h || !sim_abi_has_state(sim_plugin_abi(), state)) return;
  sim_ev_state(SIM_T_PROXY_CTRL, h, state, NULL);
  atomic_fetch_add(&sim_cnt->null_args, 1);
}

static void abuse(sim_comm_t *c) {
  ncs_args_v7_t a = {.proxyCtrl.appendedProxyOps = 3};
  void *h = ctrl_start(c->ctx);
  sim_ev_state(SIM_T_PROXY_CTRL, h, NCS_ST_PROXY_CTRL_APPEND, &a);
  void *kept = h;
  sim_ev_stop(SIM_T_PROXY_CTRL, &h);
  if (kept) { /* stopped once already */
    sim_ev_bad_stop(SIM_BAD_DOUBLE, SIM_T_PROXY_CTRL, kept);
    sim_ev_bad_state(SIM_BAD_DOUBLE, SIM_T_PROXY_CTRL, kept, NCS_ST_PROXY_CTRL_APPEND_END, &a);
    keep_stale(kept);
  }
  sim_ev_bad_stop(SIM_BAD_NULL, SIM_T_PROXY_CTRL, NULL);
  sim_ev_bad_state(SIM_BAD_NULL, SIM_T_PROXY_CTRL, NULL, NCS_ST_PROXY_CTRL_SLEEP, &a);
  sim_ev_bad_state(SIM_BAD_NULL, SIM_T_PROXY_CTRL, NULL, NCS_ST_PROXY_CTRL_WAKEUP, NULL);
  int local;
  uint64_t *heap = sim_xcalloc(8, sizeof *heap);
  memset(heap, 0xFF, 8 * sizeof *heap);
  void *garbage[] = {(void *)1, (void *)(uintptr_t)0xdeadbeef, (void *)&local, heap,
                     (void *)(uintptr_t)~0ull, (void *)(uintptr_t)0x8000000000000000ull,
                     (void *)c, c->ctx};
  for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
    if (!garbage[i]) continue; /* a NULL context: that case is counted as NULL above */
    sim_ev_bad_stop(SIM_BAD_GARBAGE, SIM_T_PROXY_CTRL, garbage[i]);
    sim_ev_bad_state(SIM_BAD_GARBAGE, SIM_T_PROXY_CTRL, garbage[i], NCS_ST_PROXY_CTRL_IDLE, &a);
  }
  free(heap);
  h = ctrl_start(c->ctx); /* NULL state args on a live handle */
  null_args_state(h, NCS_ST_PROXY_CTRL_APPEND);
  null_args_state(h, NCS_ST_PROXY_CTRL_APPEND_END);
  sim_ev_stop(SIM_T_PROXY_CTRL, &h);
  h = ctrl_start(NULL); /* a NULL context: what NCCL passes when init left it NULL */
  sim_ev_stop(SIM_T_PROXY_CTRL, &h);
}

static void stale_finish(uthread_t *ut) {
  for (int i = 0; i < ut->n; i++) abuse(W.comm[ut->lr[i]][0]);
}

static const workload_t wl_stale = {.iter = it_allreduce, .finish = stale_finish};

/* Two loads: the second hands the plugin handles its previous incarnation returned. */
static int run_stale(int proc) {
  int rc = run_loaded(proc, &wl_stale);
  if (rc) return rc;
  set_local_ranks(proc);
  if (load()) return 1;
  sim_comm_t *c = sim_comm_create(comm_id_of(7), W.first, sim_opt.ranks, 0, 1, "stale", NULL);
  ncs_args_v7_t a = {.proxyCtrl.appendedProxyOps = 1};
  for (int i = 0; i < W.nstale; i++) {
    sim_ev_bad_stop(SIM_BAD_STALE, SIM_T_PROXY_CTRL, W.stale[i]);
    sim_ev_bad_state(SIM_BAD_STALE, SIM_T_PROXY_CTRL, W.stale[i], NCS_ST_PROXY_CTRL_IDLE, &a);
  }
  W.nstale = 0;
  sim_comm_destroy(c, 0);
  sim_plugin_unload();
  return atomic_load(&sim_cnt->failed) ? 1 : 0;
}

/* ------------------------------------------------------------------ table */
static const sim_scenario_t scenarios[] = {
    {"allreduce", "AllReduce on every rank, ring over the network", run_allreduce, 1, 1},
    {"allgather", "AllGather (the Coll counts bytes as ncclInt8)", run_allgather, 1, 1},
    {"reducescatter", "ReduceScatter", run_reducescatter, 1, 1},
    {"broadcast", "Broadcast from a rotating root (bytes, ncclInt8)", run_broadcast, 1, 1},
    {"reduce", "Reduce to a rotating root", run_reduce, 1, 1},
    {"sendrecv", "grouped Send to next + Recv from previous", run_sendrecv, 1, 1},
    {"alltoall", "per-peer Send/Recv under one GroupApi, no CollApi", run_alltoall, 1, 1},
    {"mixed", "a random mix of all operations, CE included, over 2 communicators", run_mixed, 1, 2},
    {"grouped",
     "ncclGroupStart/End across communicators: one GroupApi, CollApis of several contexts",
     run_grouped, 1, 2},
    {"ce", "copy-engine AllGather: CollApi -> CeColl -> CeSync/CeBatch (v6)", run_ce, 1, 1},
    {"symmetric",
     "symmetric-memory AllReduce/AllGather/ReduceScatter kernels: Coll with isSymColl and KernelCh "
     "(v7), API events only before",
     run_symmetric, 1, 1},
    {"split", "comm split sharing the parent's proxy; parent finalized while the proxy runs on",
     run_split, 1, 1},
    {"pxn", "2 processes: sends progressed by the other process's proxy with our pointers and pid",
     run_pxn, 2, 1},
    {"neverstop", "CollNet/SHM ProxyOps that are started and never stopped", run_neverstop, 1, 1},
    {"stale", "NULL, garbage, double-stopped and previous-load handles, NULL args and context",
     run_stale, 1, 1},
    {"graph", "graph capture, then replays on a callback thread with capture-time parents",
     run_graph, 1, 1},
    {"replay", "play back a capture recorded with NCCLSCOPE_CAPTURE=1 (--replay PATH)",
     sim_replay_run, 1, 1},
    {"abort", "an operation left with ProxyOps/KernelCh open, then abort and finalize", run_abort,
     1, 1},
    {"reload", "init, events, finalize, dlclose, dlopen ... --cycles times", run_reload, 1, 1},
    {"flood", "benchmark: plugin calls in a tight loop (--events/--duration, --rate, --threads)",
     sim_flood_run, 1, 1},
};

const sim_scenario_t *sim_scenario_find(const char *name) {
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
    if (strcmp(scenarios[i].name, name) == 0) return &scenarios[i];
  return NULL;
}

void sim_scenario_list(void) {
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
    printf("%-14s %s\n", scenarios[i].name, scenarios[i].help);
}
