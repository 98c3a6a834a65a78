/* flood.c - the event-cost benchmark: plugin calls in a tight loop.
 *
 * Each producer thread acts like a busy proxy thread of its own communicator: mostly ProxySteps
 * (start, SendGPUWait, SendPeerWait, SendWait, stop) under a ProxyOp, with a Coll and a KernelCh
 * around every 64 ProxyOps. Every plugin call (start, state or stop) counts as one event. The
 * calls go through the same function pointers NCCL's core uses (the v6 plugin's own, or the
 * version adapter); with --plugin none they go to no-op functions through the same pointers, so
 * the difference is the plugin's cost.
 *
 * With --cold KB a round is instead one AllReduce as NCCL 2.28 reports it with ncclscope's default
 * events (GroupApi start, its two states, CollApi, Group, Coll, KernelLaunch), and KB of a private
 * buffer is written between rounds, outside the timed calls: what the plugin pays when NCCL's
 * own work between two operations has evicted its cache lines (docs/benchmarks.md).
 *
 * Reported: seconds = wall time of the loop (first start to last end); events_per_sec =
 * events / seconds; ns_per_event = time the threads spent inside the call loop divided by the
 * events (with --rate the busy-wait between batches is excluded); cpu_seconds = process CPU time
 * during the loop, which includes the plugin's own threads (its writer).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

#define COLL_EVERY 64
#define STEPS_PER_OP 8

typedef struct {
  int index;
  pthread_t th;
  void *ctx;
  uint64_t target;      /* calls to make; 0 = until the deadline */
  uint64_t calls, busy_ns, t0, t1;
  uint64_t start[NCS_NTYPES], stop[NCS_NTYPES], state[NCS_NTYPES];
  char pad[64];
} producer_t;

static sim_calls_t F;   /* copied once: the loop calls through these pointers */
static int fwd_type[NCS_NTYPES], fwd_state[NCS_NSTATES];
static pthread_barrier_t g_bar;
static uint64_t g_deadline, g_t_start;
static double g_rate_pt; /* calls per second per thread; 0 = unpaced */

static inline void f_start(producer_t *p, unsigned t, void **h, ncs_descr_v7_t *d) {
  *h = NULL;
  F.start(p->ctx, h, d);
  p->start[t] += (uint64_t)fwd_type[t];
  p->calls += (uint64_t)fwd_type[t];
}

static inline void f_stop(producer_t *p, unsigned t, void **h) {
  if (!*h) return;
  F.stop(*h);
  *h = NULL;
  p->stop[t]++;
  p->calls++;
}

static inline void f_state(producer_t *p, unsigned t, void *h, int s, ncs_args_v7_t *a) {
  if (!h) return;
  F.record(h, s, a);
  p->state[t] += (uint64_t)fwd_state[s];
  p->calls += (uint64_t)fwd_state[s];
}

typedef struct {
  ncs_descr_v7_t coll, kch, op, step, gapi, capi, grp, launch;
  unsigned char *sweep; /* --cold */
  size_t sweep_len;
  void *coll_h, *kch_h;
  uint64_t seq;
} flood_state_t;

static void flood_descrs(flood_state_t *s, int index) {
  memset(s, 0, sizeof *s);
  s->coll.type = NCS_EV_COLL;
  s->coll.coll.func = "AllReduce";
  s->coll.coll.datatype = "ncclFloat32";
  s->coll.coll.algo = "RING";
  s->coll.coll.proto = "SIMPLE";
  s->coll.coll.count = 1 << 20;
  s->coll.coll.nChannels = 1;
  s->coll.coll.nWarps = 16;
  s->kch.type = NCS_EV_KERNEL_CH;
  s->op.type = NCS_EV_PROXY_OP;
  s->op.proxyOp.pid = getpid();
  s->op.proxyOp.channelId = (uint8_t)(index % SIM_MAX_CHANNELS);
  s->op.proxyOp.peer = 1;
  s->op.proxyOp.nSteps = STEPS_PER_OP;
  s->op.proxyOp.chunkSize = 131072;
  s->op.proxyOp.isSend = 1;
  s->step.type = NCS_EV_PROXY_STEP;
  s->gapi.type = NCS_EV_GROUP_API;
  s->capi.type = NCS_EV_COLL_API;
  s->capi.collApi.func = "AllReduce";
  s->capi.collApi.datatype = "ncclFloat32";
  s->capi.collApi.count = 2;
  s->grp.type = NCS_EV_GROUP;
  s->launch.type = NCS_EV_KERNEL_LAUNCH;
  if (sim_opt.flood_cold_kb > 0) {
    s->sweep_len = (size_t)(sim_opt.flood_cold_kb * 1024);
    s->sweep = sim_xcalloc(1, s->sweep_len);
  }
}

/* --cold: one AllReduce with the default events, the calls NCCL 2.28 makes for it (13) */
static void flood_api_round(producer_t *p, flood_state_t *s) {
  void *g, *c, *grp, *coll, *l;
  ncs_args_v7_t a;
  memset(&a, 0, sizeof a);
  f_start(p, SIM_T_GROUP_API, &g, &s->gapi);
  f_state(p, SIM_T_GROUP_API, g, NCS_ST_GROUP_START_API_STOP, &a);
  s->capi.parentObj = g;
  f_start(p, SIM_T_COLL_API, &c, &s->capi);
  f_stop(p, SIM_T_COLL_API, &c);
  f_state(p, SIM_T_GROUP_API, g, NCS_ST_GROUP_END_API_START, &a);
  f_start(p, SIM_T_GROUP, &grp, &s->grp);
  s->coll.coll.seqNumber = s->seq++;
  s->coll.parentObj = c;
  f_start(p, SIM_T_COLL, &coll, &s->coll);
  s->launch.parentObj = g;
  f_start(p, SIM_T_KERNEL_LAUNCH, &l, &s->launch);
  uint32_t corr = sim_gpu_launch(0, NULL); /* --cupti: cuLaunchKernelEx, inside the event */
  f_stop(p, SIM_T_KERNEL_LAUNCH, &l);
  if (corr) sim_gpu_flood_kernel(corr);
  f_stop(p, SIM_T_COLL, &coll);
  f_stop(p, SIM_T_GROUP, &grp);
  f_stop(p, SIM_T_GROUP_API, &g);
}

/* --cold: NCCL's work between two operations, outside the timed calls */
static void flood_sweep(flood_state_t *s, uint64_t r) {
  for (size_t i = 0; i < s->sweep_len; i += 64) s->sweep[i] = (unsigned char)(r + i);
}

/* One ProxyOp with its steps, opening or closing a Coll/KernelCh pair every COLL_EVERY rounds. */
static void flood_round(producer_t *p, flood_state_t *s, uint64_t r) {
  if (r % COLL_EVERY == 0) {
    s->coll.coll.seqNumber = s->seq++;
    f_start(p, SIM_T_COLL, &s->coll_h, &s->coll);
    s->kch.parentObj = s->coll_h;
    s->kch.kernelCh.pTimer = sim_gpu_ns();
    f_start(p, SIM_T_KERNEL_CH, &s->kch_h, &s->kch);
  }
  void *op_h, *st_h;
  ncs_args_v7_t a;
  memset(&a, 0, sizeof a);
  s->op.parentObj = s->coll_h;
  f_start(p, SIM_T_PROXY_OP, &op_h, &s->op);
  f_state(p, SIM_T_PROXY_OP, op_h, NCS_ST_PROXY_OP_IN_PROGRESS_V4, &a);
  s->step.parentObj = op_h;
  for (int i = 0; i < STEPS_PER_OP; i++) {
    s->step.proxyStep.step = i;
    f_start(p, SIM_T_PROXY_STEP, &st_h, &s->step);
    f_state(p, SIM_T_PROXY_STEP, st_h, NCS_ST_PROXY_STEP_SEND_GPU_WAIT, &a);
    f_state(p, SIM_T_PROXY_STEP, st_h, NCS_ST_PROXY_STEP_SEND_PEER_WAIT_V4, &a);
    a.proxyStep.transSize = 131072;
    f_state(p, SIM_T_PROXY_STEP, st_h, NCS_ST_PROXY_STEP_SEND_WAIT, &a);
    f_stop(p, SIM_T_PROXY_STEP, &st_h);
  }
  f_stop(p, SIM_T_PROXY_OP, &op_h);
  if (r % COLL_EVERY == COLL_EVERY - 1) {
    a.kernelCh.pTimer = sim_gpu_ns();
    f_state(p, SIM_T_KERNEL_CH, s->kch_h, NCS_ST_KERNEL_CH_STOP, &a);
    f_stop(p, SIM_T_KERNEL_CH, &s->kch_h);
    f_stop(p, SIM_T_COLL, &s->coll_h);
  }
}

static int flood_done(const producer_t *p, uint64_t now) {
  if (p->target) return p->calls >= p->target;
  return now >= g_deadline;
}

static void *producer_main(void *arg) {
  producer_t *p = arg;
  flood_state_t s;
  flood_descrs(&s, p->index);
  pthread_barrier_wait(&g_bar);
  p->t0 = sim_now_ns();
  uint64_t r = 0, busy = 0, now = p->t0;
  int timed = p->target == 0, paced = g_rate_pt > 0;
  int cold = s.sweep != NULL;
  while (!flood_done(p, now)) {
    if (cold) { /* time the calls only */
      flood_sweep(&s, r);
      uint64_t b0 = sim_now_ns();
      flood_api_round(p, &s);
      r++;
      now = sim_now_ns();
      busy += now - b0;
      continue;
    }
    uint64_t b0 = paced ? sim_now_ns() : 0;
    flood_round(p, &s, r++);
    if (timed || paced) now = sim_now_ns();
    if (!paced) continue;
    busy += now - b0;
    uint64_t due = p->t0 + (uint64_t)((double)p->calls * 1e9 / g_rate_pt);
    /* spin (no sleep jitter, caches stay warm), or with --pace yield wait like an idle NCCL
     * proxy thread, so other runnable threads (the plugin's writer) get the core when there
     * are more threads than cores */
    while (now < due && !flood_done(p, now)) {
      if (sim_opt.flood_yield) sched_yield();
      now = sim_now_ns();
    }
  }
  ncs_args_v7_t a = {.kernelCh.pTimer = sim_gpu_ns()};
  f_state(p, SIM_T_KERNEL_CH, s.kch_h, NCS_ST_KERNEL_CH_STOP, &a); /* close an open Coll */
  f_stop(p, SIM_T_KERNEL_CH, &s.kch_h);
  f_stop(p, SIM_T_COLL, &s.coll_h);
  p->t1 = sim_now_ns();
  p->busy_ns = paced || cold ? busy : p->t1 - p->t0;
  free(s.sweep);
  atomic_fetch_add(&sim_cnt->ops, r);
  return NULL;
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void flood_report(producer_t *ps, int T, double cpu, double fin_s) {
  uint64_t events = 0, busy = 0, t0 = ~0ull, t1 = 0;
  for (int i = 0; i < T; i++) {
    producer_t *p = &ps[i];
    events += p->calls, busy += p->busy_ns;
    if (p->t0 < t0) t0 = p->t0;
    if (p->t1 > t1) t1 = p->t1;
    for (int t = 0; t < NCS_NTYPES; t++) {
      atomic_fetch_add(&sim_cnt->start[t], p->start[t]);
      atomic_fetch_add(&sim_cnt->stop[t], p->stop[t]);
      atomic_fetch_add(&sim_cnt->state[t], p->state[t]);
    }
  }
  double secs = (double)(t1 - t0) * 1e-9;
  printf("flood: threads=%d events=%llu seconds=%.6f ns_per_event=%.2f events_per_sec=%.0f "
         "rate=%.0f cpu_seconds=%.6f finalize_seconds=%.6f plugin=%s abi=%d\n",
         T, (unsigned long long)events, secs, events ? (double)busy / (double)events : 0.0,
         secs > 0 ? (double)events / secs : 0.0, sim_opt.flood_rate, cpu, fin_s,
         sim_plugin_name(), sim_plugin_abi());
}

static void flood_setup(producer_t *ps, int T) {
  int abi = sim_plugin_abi();
  for (int t = 0; t < NCS_NTYPES; t++) fwd_type[t] = sim_abi_has_type(abi, (unsigned)t);
  for (int s = 0; s < NCS_NSTATES; s++) fwd_state[s] = sim_abi_has_state(abi, s);
  F = sim_calls;
  uint64_t each = sim_opt.flood_duration > 0 ? 0 : sim_opt.flood_events / (uint64_t)T;
  for (int i = 0; i < T; i++) {
    ps[i].index = i;
    ps[i].target = each + (i == 0 && each ? sim_opt.flood_events % (uint64_t)T : 0);
    char name[32];
    snprintf(name, sizeof name, "flood-%d", i);
    sim_comm_init(&ps[i].ctx, sim_mix(sim_opt.seed, 0xF100Du + (unsigned)i), name, 1, T, i);
  }
  g_rate_pt = sim_opt.flood_rate > 0 ? sim_opt.flood_rate / T : 0;
}

int sim_flood_run(int proc) {
  (void)proc;
  char err[768];
  if (sim_plugin_load(sim_opt.plugin, sim_opt.abi, err, sizeof err) != 0) {
    sim_fail("cannot load profiler plugin '%s': %s", sim_opt.plugin, err);
    return 1;
  }
  int T = sim_opt.threads;
  producer_t *ps = sim_xcalloc((size_t)T, sizeof *ps);
  flood_setup(ps, T);
  pthread_barrier_init(&g_bar, NULL, (unsigned)T + 1);
  int started = 0;
  for (; started < T; started++)
    if (pthread_create(&ps[started].th, NULL, producer_main, &ps[started]) != 0) break;
  if (started < T) { /* cannot happen in practice; do not leave the others at the barrier */
    fprintf(stderr, "nccl-sim: cannot start %d flood threads\n", T);
    abort();
  }
  double cpu0 = cpu_seconds();
  g_t_start = sim_now_ns();
  g_deadline = g_t_start + (uint64_t)(sim_opt.flood_duration * 1e9);
  pthread_barrier_wait(&g_bar);
  for (int i = 0; i < T; i++) pthread_join(ps[i].th, NULL);
  double cpu = cpu_seconds() - cpu0;
  uint64_t f0 = sim_now_ns();
  for (int i = 0; i < T; i++) sim_comm_finalize(ps[i].ctx);
  double fin = (double)(sim_now_ns() - f0) * 1e-9;
  flood_report(ps, T, cpu, fin);
  pthread_barrier_destroy(&g_bar);
  free(ps);
  sim_plugin_unload();
  return 0;
}
