/* proxy.c - NCCL's proxy progress thread, one per communicator (or shared after a split).
 *
 * What it emits, and why (R§3.2, R§3.4, R§3.5):
 *   ProxyCtrl  Sleep/Wakeup around the wait for work, Append/AppendEnd around taking new ops
 *              (16 per batch, like NCCL_PROXY_APPEND_BATCH_SIZE), Idle/Active on transitions.
 *              Its context is the creator's, even after the creator was finalized.
 *   ProxyOp    started when the op is appended; InProgress_v4 when progress begins; stopped when
 *              all its steps are done. CollNet/SHM ops (POP_NOSTOP) are started and never stopped.
 *   ProxyStep  up to SIM_PIPELINE steps in flight, handles in a ring of 8, stopped in order.
 *              send: SendGPUWait, SendPeerWait_v4 (sometimes repeated), SendWait(transSize);
 *              recv: RecvWait, RecvFlushWait(transSize), RecvGPUWait. The network transfer in
 *              between runs on a net helper thread, which emits the NetPlugin events.
 *   KernelCh   from a profiler proxy op per channel: start with the GPU start time, then
 *              KernelChStop with the GPU stop time once the network part of the plan is done.
 *              It starts only once the GPU's ring slot of its work counter is there
 *              (kernel_ready, nccl.c "KernelCh work counters"); one that never is stays pending
 *              and is dropped, counted as stuck, when its communicator is destroyed. One whose
 *              slot an item a lap (64 items) later overwrote first takes that item's times, as
 *              NCCL's does (kch_lapped; never in model time). NCCL 2.31
 *              (ABI v7) polls them on a profiler thread of its own (the same loop without
 *              ProxyCtrl) and reports each one's phases (KernelPhase) just before its stop.
 * All of it races with the launching thread's Coll/P2p stop, as in NCCL.
 *
 * Model time (--clock model, clock.c): each op and each of its steps has a clock, bound before
 * every call made for it. An op starts when it was posted; a step when the pipeline has room
 * (step s - SIM_PIPELINE stopped); a send leaves once the receiver posted the receive, a receive
 * completes once the peer's send went out (coupling), and a transfer lasts SIM_VT_NET_LAT_NS plus
 * its bytes at SIM_VT_NET_GBPS; steps stop in order. A KernelCh's GPU start follows its launch,
 * its end is computed from the work (--gpu-gbps), the network and the last rank's arrival, and the
 * proxy sees each SIM_VT_POLL_NS after the GPU's time. Random choices are drawn per op and step.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

enum { PH_FREE = 0, PH_S_GPUWAIT, PH_S_PEERWAIT, PH_S_CTS, PH_S_SEND, PH_NET, PH_R_WAIT,
       PH_R_DATA, PH_R_FLUSH, PH_R_GPUWAIT, PH_R_CONSUME, PH_DONE };

#define APPEND_BATCH 16

/* Model time, --slow-link: the slow rank's transfers go over its link one after the other, op by
 * op in the order the ops were posted and each op's steps in order, every one SIM_VT_NET_* plus
 * --slow-link-us long: a deterministic order where live mode takes them as they come. An op takes
 * its turn when g_link_turn[rank] == its position - 1; its last transfer passes the turn on. The
 * op holding the turn alone touches g_link_vt[rank] (when the link is free). */
static _Atomic uint64_t g_link_turn[SIM_MAX_RANKS], g_link_next[SIM_MAX_RANKS];
static uint64_t g_link_vt[SIM_MAX_RANKS];

void sim_link_enqueue(sim_pop_t *o, int grank) {
  if (!sim_opt.model || !sim_opt.slow_link_us || grank != sim_opt.slow_link_rank || grank < 0 ||
      grank >= SIM_MAX_RANKS || (o->kind != POP_SEND && o->kind != POP_RECV) || o->nsteps < 1)
    return;
  o->link_rank = grank;
  o->link_pos = atomic_fetch_add(&g_link_next[grank], 1) + 1;
}

/* model time: a random number of this op for `salt` (a step, a purpose), whatever the order the
 * proxy thread takes ops in */
static uint64_t op_rand(const sim_pop_t *o, uint64_t salt) { return sim_mix(o->vrng, salt); }

/* model time: this thread's calls are now made for clock *c (no-op live) */
static void at(uint64_t *c) { sim_vt_bind(c); }

void sim_inst_put(sim_inst_t *in) {
  if (!in || atomic_fetch_sub(&in->refs, 1) != 1) return;
  /* --cupti: the kernel ended when every op of it finished (a KernelCh waiting for its ring slot
   * does not hold the kernel); a hung or aborted one never does */
  sim_gpu_kernel_end(in, !in->hang && atomic_load(&in->ops_left) - atomic_load(&in->kch_wait) <= 0);
  if (in->cpl) sim_cpl_leave(in->cpl, atomic_load(&in->done_vt)); /* nothing of this rank touches it */
  free(in);
}

/* ------------------------------------------------------------------ ProxyCtrl */
/* NCCL re-reads the global mask for every ProxyCtrl start and record (R§3.1). */
static void *ctrl_begin(sim_proxy_t *p, int state, int appended) {
  void *h = NULL;
  if (p->profiler || !(sim_mask() & NCS_EV_PROXY_CTRL)) return NULL;
  at(&p->vt);
  ncs_descr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = NCS_EV_PROXY_CTRL;
  sim_ev_start(p->ctrl_ctx, &h, &d);
  if (h && (sim_mask() & NCS_EV_PROXY_CTRL)) {
    ncs_args_v7_t a = {.proxyCtrl.appendedProxyOps = appended};
    sim_ev_state(SIM_T_PROXY_CTRL, h, state, &a);
  }
  return h;
}

static void ctrl_end(sim_proxy_t *p, void **h, int state, int appended) {
  if (*h) at(&p->vt);
  if (*h && state >= 0 && (sim_mask() & NCS_EV_PROXY_CTRL)) {
    ncs_args_v7_t a = {.proxyCtrl.appendedProxyOps = appended};
    sim_ev_state(SIM_T_PROXY_CTRL, *h, state, &a);
  }
  sim_ev_stop(SIM_T_PROXY_CTRL, h);
}

static void ctrl_event(sim_proxy_t *p, int state) {
  if (p->profiler) return;
  void *h = ctrl_begin(p, state, 0);
  ctrl_end(p, &h, -1, 0);
}

/* ------------------------------------------------------------------ op lifecycle */
static void start_op(sim_pop_t *o) {
  if (o->kind == POP_KERNEL || !sim_active(o->mask, SIM_T_PROXY_OP)) return;
  at(&o->vt);
  ncs_descr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = NCS_EV_PROXY_OP;
  d.parentObj = o->parent;
  d.rank = o->rank;
  d.proxyOp.pid = o->pid; /* the poster's pid: another process under PXN (R§3.7) */
  d.proxyOp.channelId = (uint8_t)o->channel;
  d.proxyOp.peer = o->peer;
  d.proxyOp.nSteps = o->nsteps;
  d.proxyOp.chunkSize = o->chunk;
  d.proxyOp.isSend = o->kind == POP_SEND;
  sim_ev_start(o->ctx, &o->op_h, &d);
}

/* The op is done (or was never going to stop): release what it holds. */
static void finish_op(sim_pop_t *o) {
  sim_vt_floor_del(&o->floor); /* every event of it is out */
  if (o->comm) sim_vt_max(&o->comm->done_vt, o->vt); /* before it no longer counts */
  if (o->comm) atomic_fetch_sub(&o->comm->inflight, 1);
  if (o->inst) {
    sim_vt_max(&o->inst->done_vt, o->vt);
    if (o->kind != POP_KERNEL) {
      uint64_t now = sim_opt.model ? sim_gpu_at(sim_vt_host(o->vt)) : sim_gpu_ns(),
               prev = atomic_load(&o->inst->net_done_gpu);
      while (prev < now && !atomic_compare_exchange_weak(&o->inst->net_done_gpu, &prev, now)) {
      }
      atomic_fetch_sub(&o->inst->net_left, 1);
    }
    /* the last coupled send of this rank finished: its data is out (fault.c) */
    if (o->cpl && o->kind == POP_SEND) sim_vt_max(&o->inst->out_vt, o->vt);
    if (o->cpl && o->kind == POP_SEND && atomic_fetch_sub(&o->inst->sends_left, 1) == 1)
      sim_cpl_out(o->cpl, atomic_load(&o->inst->out_vt));
    atomic_fetch_sub(&o->inst->ops_left, 1);
    sim_inst_put(o->inst);
  }
  free(o);
}

/* Abort: drop the op without stopping its events. A transfer already handed to a net helper
 * must end first, because the helper reads the step handle through the op. */
static void discard_op(sim_pop_t *o) {
  sim_vt_floor_del(&o->floor);
  for (int i = 0; i < SIM_STEP_RING; i++) {
    sim_netreq_t *r = o->st[i].req;
    if (!r) continue;
    while (!atomic_load_explicit(&r->done, memory_order_acquire)) sim_sleep_us(20);
    free(r);
  }
  sim_inst_put(o->inst);
  free(o);
}

/* ------------------------------------------------------------------ network steps */
static void submit_net(sim_pop_t *o, struct sim_step *st) {
  sim_netreq_t *r = sim_xcalloc(1, sizeof *r);
  r->ctx = o->ctx;
  r->step_h = &st->h;
  r->mask = o->mask;
  r->rank = o->rank;
  r->is_send = o->kind == POP_SEND;
  r->fd = 40 + o->channel;
  r->grank = o->comm ? sim_global_rank(o->comm, o->rank) : o->rank;
  r->len = st->trans;
  r->net_kind = o->net_kind;
  if (sim_opt.model) { /* the transfer's times */
    int s = o->net_seq++;
    uint64_t x = SIM_VT_NET_LAT_NS + (uint64_t)((double)r->len / SIM_VT_NET_GBPS);
    r->vt = st->vt;
    r->vrng = op_rand(o, 0x1000u + (uint64_t)s);
    if (o->cpl && o->kind == POP_RECV && !o->link_pos) {
      /* coupled: the peer's send step stopped once its data was delivered (the wait for it is
         this step's clock), so the data is here a poll later, not after a transfer of its own */
      r->vt_end = st->vt + SIM_VT_POLL_NS;
    } else if (o->link_pos) { /* the slow link: after every transfer before it in the link's order */
      int g = r->grank;
      uint64_t from = st->vt > g_link_vt[g] ? st->vt : g_link_vt[g];
      r->vt_end = g_link_vt[g] = from + x + (uint64_t)sim_opt.slow_link_us * 1000u;
      if (o->net_seq == o->nsteps) atomic_store(&g_link_turn[g], o->link_pos); /* the next op's */
    } else {
      r->vt_end = st->vt + x;
    }
  }
  st->req = r;
  sim_net_submit(r);
}

/* model time: transfers and GPU consumption take steps in step order, so that whichever step
 * the proxy thread reached first in real time does not decide the times; a slow link's transfers
 * go in the order its ops were posted (sim_link_enqueue) */
static int net_turn(const sim_pop_t *o, int s) {
  if (!sim_opt.model) return 1;
  if (o->net_seq != s) return 0;
  return !o->link_pos || atomic_load(&g_link_turn[o->link_rank]) == o->link_pos - 1;
}

static void start_step(sim_pop_t *o) {
  int s = o->next_step++;
  struct sim_step *st = &o->st[s % SIM_STEP_RING];
  memset(st, 0, sizeof *st);
  size_t off = (size_t)s * (size_t)o->chunk;
  st->trans =
      off >= o->bytes ? 0 : (o->bytes - off < (size_t)o->chunk ? o->bytes - off : (size_t)o->chunk);
  st->phase = o->kind == POP_SEND ? PH_S_GPUWAIT : PH_R_WAIT;
  /* model time: once the op is in progress and the pipeline had room (step s - 4 stopped) */
  st->vt = o->vt;
  if (s >= SIM_PIPELINE && o->stop_vt[(s - SIM_PIPELINE) % SIM_STEP_RING] > st->vt)
    st->vt = o->stop_vt[(s - SIM_PIPELINE) % SIM_STEP_RING];
  at(&st->vt);
  if (!sim_active(o->mask, SIM_T_PROXY_STEP)) return;
  ncs_descr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = NCS_EV_PROXY_STEP;
  d.parentObj = o->op_h;
  d.rank = o->rank;
  d.proxyStep.step = s;
  sim_ev_start(o->ctx, &st->h, &d);
}

static void step_state(struct sim_step *st, int state, size_t trans) {
  ncs_args_v7_t a;
  memset(&a, 0, sizeof a);
  a.proxyStep.transSize = trans;
  sim_ev_state(SIM_T_PROXY_STEP, st->h, state, &a);
}

/* Peer coupling (fault.c): the receiver posted receive step s (clear-to-send)... */
static int peer_cts(const sim_pop_t *o, int s) {
  return !o->cpl || sim_cpl_get(o->cpl, SIM_MARK_CTS, o->peer, o->lane) > s;
}
/* ... and the sender's step s went out. */
static int peer_sent(const sim_pop_t *o, int s) {
  return !o->cpl || sim_cpl_get(o->cpl, SIM_MARK_SENT, o->peer, o->lane) > s;
}

/* One state transition of step s; returns 1 when something happened. */
static int advance_step(sim_proxy_t *p, sim_pop_t *o, int s) {
  struct sim_step *st = &o->st[s % SIM_STEP_RING];
  size_t stale = o->st[(o->done_steps + SIM_STEP_RING - 1) % SIM_STEP_RING].trans;
  at(&st->vt);
  switch (st->phase) {
  case PH_S_GPUWAIT:
    step_state(st, NCS_ST_PROXY_STEP_SEND_GPU_WAIT, stale); /* transSize is stale here */
    st->phase = PH_S_PEERWAIT;
    if (sim_opt.model) {
      uint64_t r = op_rand(o, (uint64_t)s);
      st->repeats = r % 3 == 0 ? 1 + (int)(r / 3 % 2) : 0;
    } else {
      st->repeats = (sim_rand(&p->rng) % 3 == 0) ? 1 + (int)(sim_rand(&p->rng) % 2) : 0;
    }
    return 1;
  case PH_S_PEERWAIT: /* isend returned no request yet: recorded again (R§3.4) */
    step_state(st, NCS_ST_PROXY_STEP_SEND_PEER_WAIT_V4, stale);
    if (st->repeats-- > 0) return 1;
    st->phase = PH_S_CTS;
    if (!peer_cts(o, s)) return 1;
    /* fall through */
  case PH_S_CTS: /* no clear-to-send from the receiver yet: isend keeps returning NULL */
    if (!peer_cts(o, s)) return 0;
    st->phase = PH_S_SEND;
    return 1;
  case PH_S_SEND:
    if (s == o->stall_at - 1 && o->done_steps < s) return 0; /* stall after the earlier steps */
    if (!net_turn(o, s)) return 0;
    if (o->cpl) sim_vt_wait(sim_cpl_mark_vt(o->cpl, SIM_MARK_CTS, o->peer, o->lane, s));
    step_state(st, NCS_ST_PROXY_STEP_SEND_WAIT, st->trans);
    if (s == o->stall_at - 1) { /* --fault stall: the transfer never completes */
      o->stalled = 1;
      o->net_seq++;
      return 1;
    }
    submit_net(o, st);
    st->phase = PH_NET;
    return 1;
  case PH_R_WAIT: /* irecv posted: the sender may go */
    step_state(st, NCS_ST_PROXY_STEP_RECV_WAIT, stale);
    if (o->cpl) sim_cpl_mark(o->cpl, SIM_MARK_CTS, o->rank, o->lane, s + 1);
    st->phase = PH_R_DATA;
    if (!peer_sent(o, s)) return 1;
    /* fall through */
  case PH_R_DATA: /* the data arrives once the peer sent it */
    if (!peer_sent(o, s) || !net_turn(o, s)) return 0;
    if (o->cpl) sim_vt_wait(sim_cpl_mark_vt(o->cpl, SIM_MARK_SENT, o->peer, o->lane, s));
    submit_net(o, st);
    st->phase = PH_NET;
    return 1;
  case PH_NET:
    if (!atomic_load_explicit(&st->req->done, memory_order_acquire)) return 0;
    sim_vt_wait(st->req->vt_done);
    free(st->req);
    st->req = NULL;
    st->phase = o->kind == POP_SEND ? PH_DONE : PH_R_FLUSH;
    return 1;
  case PH_R_FLUSH:
    step_state(st, NCS_ST_PROXY_STEP_RECV_FLUSH_WAIT, st->trans);
    st->phase = PH_R_GPUWAIT;
    return 1;
  case PH_R_GPUWAIT:
    step_state(st, NCS_ST_PROXY_STEP_RECV_GPU_WAIT, st->trans);
    st->phase = PH_DONE;
    if (sim_opt.slow_gpu_us && o->comm &&
        sim_global_rank(o->comm, o->rank) == sim_opt.slow_gpu_rank) {
      /* --slow-gpu: the GPU consumes (unpacks) the received steps one after the other */
      st->phase = PH_R_CONSUME;
      if (sim_opt.model) return 1; /* its turn comes in step order (PH_R_CONSUME) */
      uint64_t now = sim_now_ns();
      st->due = (o->gpu_busy > now ? o->gpu_busy : now) + (uint64_t)sim_opt.slow_gpu_us * 1000u;
      o->gpu_busy = st->due;
    }
    return 1;
  case PH_R_CONSUME:
    if (sim_opt.model) { /* model time: no waiting, the step takes its time in step order */
      if (o->gpu_seq != s) return 0;
      o->gpu_seq++;
      o->gpu_busy = (o->gpu_busy > st->vt ? o->gpu_busy : st->vt) + (uint64_t)sim_opt.slow_gpu_us * 1000u;
      sim_vt_wait(o->gpu_busy);
      st->phase = PH_DONE;
      return 1;
    }
    if (sim_now_ns() < st->due) return 0;
    st->phase = PH_DONE;
    return 1;
  default: return 0;
  }
}

/* Abort scenario: an op that stops making progress after its first step began. */
static int progress_hang(sim_proxy_t *p, sim_pop_t *o) {
  if (o->next_step == 0) {
    start_step(o);
    return 1;
  }
  struct sim_step *st = &o->st[0];
  if (st->phase == PH_S_GPUWAIT) return advance_step(p, o, 0);
  if (!o->frozen) {
    o->frozen = 1;
    atomic_fetch_add(&o->inst->frozen, 1);
  }
  return 0;
}

/* Returns 0 nothing happened, 1 progress, 2 finished. */
static int progress_net(sim_proxy_t *p, sim_pop_t *o) {
  if (!o->started) {
    ncs_args_v7_t a;
    memset(&a, 0, sizeof a);
    at(&o->vt);
    sim_ev_state(SIM_T_PROXY_OP, o->op_h, NCS_ST_PROXY_OP_IN_PROGRESS_V4, &a);
    o->started = 1;
    return 1;
  }
  if (o->hang) return progress_hang(p, o);
  if (o->stalled) return 0; /* --fault stall: nothing moves any more */
  int moved = 0;
  for (int s = o->done_steps; s < o->next_step && !o->stalled; s++) moved |= advance_step(p, o, s);
  if (o->stalled) return moved;
  while (o->done_steps < o->next_step && o->st[o->done_steps % SIM_STEP_RING].phase == PH_DONE) {
    struct sim_step *st = &o->st[o->done_steps % SIM_STEP_RING];
    at(&st->vt);
    sim_vt_wait(o->last_stop_vt); /* model time: steps stop in order */
    sim_ev_stop(SIM_T_PROXY_STEP, &st->h);
    o->last_stop_vt = o->stop_vt[o->done_steps % SIM_STEP_RING] = st->vt;
    o->done_steps++;
    if (o->cpl && o->kind == POP_SEND) /* in order: the receiver's step may complete */
      sim_cpl_mark(o->cpl, SIM_MARK_SENT, o->rank, o->lane, o->done_steps);
    moved = 1;
  }
  if (o->next_step < o->nsteps && o->next_step - o->done_steps < SIM_PIPELINE) {
    start_step(o);
    moved = 1;
  }
  if (o->done_steps < o->nsteps) return moved;
  at(&o->vt);
  sim_vt_wait(o->last_stop_vt);
  sim_ev_stop(SIM_T_PROXY_OP, &o->op_h);
  return 2;
}

/* ------------------------------------------------------------------ KernelCh */
/* profilerProxyProgress: the op starts once ring slot base % 64 holds a counter >= base, with
 * whatever work item wrote it. Returns 1 ready, 0 wait, -1 stuck (its communicator is being
 * destroyed and the GPU has no more work: NCCL's proxy would wait forever). *slot: the item whose
 * times the KernelCh takes. */
static int kernel_ready(sim_pop_t *o, uint64_t *slot) {
  *slot = o->kdev;
  if (o->sym) return 1; /* NCCL 2.31 reserves a symmetric kernel's counters before its launch */
  sim_comm_t *c = o->comm;
  int final = c && atomic_load_explicit(&c->kch_final, memory_order_acquire);
  uint64_t v = c ? sim_kch_slot(c, o->channel, o->kbase) : o->kbase;
  int r = o->kbase <= v ? 1 : final ? -1 : 0;
  /* model time: NCCL's proxy reads the slot a poll (SIM_VT_POLL_NS) after the GPU wrote it, long
     before the channel's item 64 later can run: where host and GPU agree on the item's value it
     finds its own item there, however far this thread fell behind the host in real time */
  if (r > 0 && sim_opt.model && o->kbase == o->kdev && v > o->kdev) v = o->kdev;
  *slot = v;
  if (r < 0) {
    atomic_fetch_add(&sim_cnt->kch_stuck, 1);
    sim_log("comm %s rank %d channel %d: KernelCh waits for work counter %llu, its ring slot "
            "holds %llu (the GPU ran the item as %llu): stuck",
            c->name, c->rank, o->channel, (unsigned long long)o->kbase, (unsigned long long)v,
            (unsigned long long)o->kdev);
  }
  return r;
}

/* the op's NCCL side waits for its ring slot, or for times another item stamps there: counted in
 * inst->kch_wait (a plan's wait for its children does not wait for it) */
static void kernel_wait(sim_pop_t *o, int w) {
  if (w && !o->kwait) atomic_fetch_add(&o->inst->kch_wait, 1), o->kwait = 1;
  if (!w && o->kwait) atomic_fetch_sub(&o->inst->kch_wait, 1), o->kwait = 0;
}

/* the comm's GPU ran all the work issued to it: every kernel with KernelCh ended on its stream */
static int gpu_idle(sim_comm_t *c) {
  return atomic_load(&c->st_done) >= atomic_load(&c->st_issued);
}

/* NCCL 2.31's KernelPhase events of a KernelCh from start to stop (GPU ns): the kernel stamps
 * when its opening barrier with the peers ends and when its closing one begins. The opening one
 * ends when the last rank entered the instance (coupled), else after a short wait; the closing
 * one takes a short while. Each phase is started, given its end (KernelPhaseStop) and stopped at
 * once, before the KernelCh's own stop; NCCL skips phases of no length. */
static void kernel_phases(sim_proxy_t *p, sim_pop_t *o, uint64_t start, uint64_t stop) {
  static const char *const names[NCS_NPHASES] = {"initial_sync", "compute", "final_sync"};
  if (!(o->mask & NCS_EV_KERNEL_PHASE) || stop <= start) return;
  uint64_t len = stop - start, ts[NCS_NPHASES + 1];
  ts[0] = start, ts[3] = stop;
  uint64_t r1 = sim_opt.model ? op_rand(o, 0x2001) : sim_rand(&p->rng);
  uint64_t r2 = sim_opt.model ? op_rand(o, 0x2002) : sim_rand(&p->rng);
  ts[1] = o->entered_gpu ? o->entered_gpu + o->kshift : start + len / 16 + r1 % (len / 16 + 1);
  ts[2] = stop - len / 32 - r2 % (len / 32 + 1);
  if (ts[1] < ts[0] || ts[1] > ts[3]) ts[1] = ts[1] < ts[0] ? ts[0] : ts[3];
  if (ts[2] < ts[1]) ts[2] = ts[1];
  for (int i = 0; i < NCS_NPHASES; i++) {
    if (ts[i] == ts[i + 1]) continue;
    ncs_descr_v7_t d;
    memset(&d, 0, sizeof d);
    d.type = NCS_EV_KERNEL_PHASE;
    d.parentObj = o->kch_h;
    d.kernelPhase.channelId = (uint8_t)o->channel;
    d.kernelPhase.phaseId = (uint8_t)i;
    d.kernelPhase.phaseName = names[i];
    d.kernelPhase.pTimer = ts[i];
    void *h = NULL;
    sim_ev_start(o->ctx, &h, &d);
    ncs_args_v7_t a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = ts[i + 1];
    sim_ev_state(SIM_T_KERNEL_PHASE, h, NCS_ST_KERNEL_PHASE_STOP, &a);
    sim_ev_stop(SIM_T_KERNEL_PHASE, &h);
  }
}

/* The comm's stream: a kernel begins once the kernels issued before it on its communicator ended,
 * not before its launch (so a CPU that runs ahead sees its work queue). 1 when begun. */
static int stream_begin(sim_pop_t *o) {
  sim_inst_t *in = o->inst;
  if (atomic_load(&in->gpu_begin)) return 1;
  sim_comm_t *c = in->st_comm;
  uint64_t b = in->gpu_launch + 700;
  if (c) {
    if (atomic_load(&c->st_done) + 1 != in->st_idx) {
      if (!o->swait) atomic_fetch_add(&in->kch_wait, 1), o->swait = 1;
      return 0;
    }
    uint64_t tail = atomic_load(&c->st_tail);
    if (tail + 300 > b) b = tail + 300;
  }
  uint64_t z = 0, now = sim_gpu_ns();
  if (atomic_compare_exchange_strong(&in->gpu_begin, &z, b)) {
    for (int k = 0; c && k < in->nself; k++) /* the GPU stamps its self copies' slots too */
      sim_kts_put(c, in->self_ch[k], in->self_d[k], b, b + 300, 0);
    /* coupled: its peers' kernels cannot end before this one began (host time of the begin) */
    if (in->cpl)
      sim_cpl_begun(in->cpl, sim_opt.model ? sim_host_at(b) : sim_now_ns() - (now > b ? now - b : 0));
  }
  return 1;
}

/* a channel of the kernel ended at GPU time stop (0: it never will): the last one ends the
 * kernel on the stream */
static void stream_end(sim_pop_t *o, uint64_t stop) {
  sim_inst_t *in = o->inst;
  uint64_t e = atomic_load(&in->st_end);
  while (stop > e && !atomic_compare_exchange_weak(&in->st_end, &e, stop)) {
  }
  sim_comm_t *c = in->st_comm;
  if (!c || atomic_fetch_sub(&in->st_left, 1) != 1) return;
  e = atomic_load(&in->st_end);
  uint64_t t = atomic_load(&c->st_tail);
  while (e > t && !atomic_compare_exchange_weak(&c->st_tail, &t, e)) {
  }
  atomic_fetch_add(&c->st_done, 1);
}

static void kch_start_event(sim_pop_t *o, uint64_t ptimer) {
  ncs_descr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = NCS_EV_KERNEL_CH;
  d.parentObj = o->parent;
  d.kernelCh.channelId = (uint8_t)o->channel;
  d.kernelCh.pTimer = ptimer;
  sim_ev_start(o->ctx, &o->kch_h, &d);
}

static void kch_stop_event(sim_pop_t *o, uint64_t ptimer) {
  ncs_args_v7_t a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = ptimer;
  sim_ev_state(SIM_T_KERNEL_CH, o->kch_h, NCS_ST_KERNEL_CH_STOP, &a);
  sim_ev_stop(SIM_T_KERNEL_CH, &o->kch_h);
}

/* Model time: the kernel's end on the fake GPU clock, from the model alone: with --gpu-gbps
 * kern_ns after the kernel began on its stream (the data of a slow link or GPU later, if later);
 * else when the network part of the plan finished, at least SIM_VT_KERNEL_NS after its start;
 * never before every rank entered and sent its data, nor before every rank's kernel began
 * (coupled); a little jitter per op. Called once all of that happened (true_end). */
static uint64_t kernel_end_model(sim_pop_t *o) {
  sim_cpl_t *c = o->inst->cpl;
  uint64_t net = atomic_load(&o->inst->net_done_gpu), end;
  if (c && !o->entered_gpu) o->entered_gpu = sim_gpu_at(sim_cpl_all_in_ns(c));
  if (c) {
    o->ready_gpu = sim_gpu_at(sim_vt_host(sim_cpl_ready_vt(c)));
    uint64_t b = sim_gpu_at(sim_cpl_all_begun_ns(c)) + 500;
    if (b > o->ready_gpu) o->ready_gpu = b;
  }
  if (o->kern_ns) {
    end = atomic_load(&o->inst->gpu_begin) + o->kern_ns;
    if ((sim_opt.slow_link_us > 0 || sim_opt.slow_gpu_us > 0) && net > end) end = net;
  } else {
    end = o->gpu_start + SIM_VT_KERNEL_NS;
    if (net + 200 > end) end = net + 200;
  }
  if (end < o->ready_gpu) end = o->ready_gpu;
  /* a little more per op, as a real GPU's kernels do not end on the same ns: ranks whose ends the
     model derives alike (the peers of the last rank's data) are not tied for the slowest */
  end += op_rand(o, 0x2000) % 1500;
  if (end <= o->gpu_start) end = o->gpu_start + 100;
  return end;
}

/* Model time: NCCL's proxy (this op's clock) reads a ring slot's timestamp a poll after the GPU
 * wrote it (ptimer: as reported, shift: how far that is from the GPU's true time) */
static void kch_seen(sim_pop_t *o, uint64_t ptimer, uint64_t shift) {
  if (!sim_opt.model || !ptimer) return;
  at(&o->vt);
  sim_vt_wait(sim_vt_of_host(sim_host_at(ptimer - shift)) + SIM_VT_POLL_NS);
}

/* The GPU side of a KernelCh op: its channel's block of the kernel ends. 1 when it ended (stop:
 * its GPU time), 0 not yet. */
static int true_end(sim_proxy_t *p, sim_pop_t *o, uint64_t *stop_out) {
  /* coupled: the GPU time the last rank entered, the end of the kernels' opening barrier
     (KernelPhase): a fact of the GPUs, not of when this thread happened to look */
  if (o->inst->cpl && !o->entered_gpu) {
    uint64_t in = sim_cpl_all_in_ns(o->inst->cpl);
    if (in) o->entered_gpu = sim_gpu_at(in);
  }
  if (++o->rounds < 2 || atomic_load(&o->inst->net_left) > 0) return 0;
  /* coupled: the kernel ends only when every rank entered and sent its data (fault.c), and every
     rank's kernel began on its GPU (its stream may have queued it behind earlier work) */
  if (o->inst->cpl && (!sim_cpl_ready(o->inst->cpl) || !sim_cpl_all_begun_ns(o->inst->cpl))) return 0;
  if (sim_opt.model) {
    *stop_out = kernel_end_model(o);
    return 1;
  }
  /* the fake GPU clock when this rank saw every rank enter: its kernel, which needs their data,
     cannot end before (report: GPU times that cannot be right) */
  if (o->inst->cpl && !o->ready_gpu) {
    o->ready_gpu = sim_gpu_ns();
    uint64_t b = sim_gpu_at(sim_cpl_all_begun_ns(o->inst->cpl)) + 500;
    if (b > o->ready_gpu) o->ready_gpu = b;
  }
  /* the GPU finished a little before the proxy polled the completion slot */
  uint64_t stop = sim_gpu_ns() - 200 - sim_rand(&p->rng) % 1500;
  if (o->kern_ns) { /* --gpu-gbps: the fake GPU clock says every channel ends kern_ns after the
                       kernel began, whatever the host's scheduling did. With an injected slow
                       link the kernel waits for its data: it ends when the network finished,
                       if that was later (the injected delay dwarfs scheduling noise). */
    uint64_t end = atomic_load(&o->inst->gpu_begin) + o->kern_ns;
    if (sim_opt.slow_link_us > 0 || sim_opt.slow_gpu_us > 0) {
      uint64_t net = atomic_load(&o->inst->net_done_gpu);
      if (net > end) end = net;
    }
    if (end < o->ready_gpu) end = o->ready_gpu;
    if (sim_gpu_ns() < end) return 0;
    stop = end;
  }
  if (stop <= o->gpu_start) stop = o->gpu_start + 100;
  *stop_out = stop;
  return 1;
}

/* A KernelCh op has two sides (docs/nccl-sim.md "KernelCh work counters"):
 *  - the GPU's: its channel's block runs once the comm's stream lets the kernel begin, and ends
 *    (true_end); the GPU stamps both times into the ring slot of its counter value (kdev);
 *  - NCCL's proxy: starts the KernelCh once the slot of the host's value (kbase) holds a counter
 *    >= kbase, with the times of whichever item stamped it (R§3.5), and stops it likewise. With
 *    the host's counter behind the GPU's (--kch-self) that is earlier work, reported at once.
 * The op is done when both are. */
static int progress_kernel(sim_proxy_t *p, sim_pop_t *o) {
  int moved = 0;
  at(&o->vt); /* model time: NCCL's side of the op (the GPU's has no clock of its own) */
  if (!o->started) {
    if (stream_begin(o)) {
      if (o->swait) atomic_fetch_sub(&o->inst->kch_wait, 1), o->swait = 0;
      o->gpu_start = atomic_load(&o->inst->gpu_begin) + 40 * (uint64_t)o->channel;
      if (o->comm) sim_kts_put(o->comm, o->channel, o->kdev, o->gpu_start + o->kshift, 0, o->kshift);
      o->started = 1, moved = 1;
      if (o->hang) {
        o->frozen = 1;
        atomic_fetch_add(&o->inst->frozen, 1);
      }
    }
  } else if (!o->tdone && !o->hang) { /* a hanging kernel never ends: KernelCh stays open */
    uint64_t stop;
    if (true_end(p, o, &stop)) {
      if (o->comm) sim_kts_put(o->comm, o->channel, o->kdev, 0, stop + o->kshift, o->kshift);
      stream_end(o, stop);
      o->tdone = 1, o->tstop = stop, moved = 1;
    }
  }
  int waits = 0; /* NCCL's side waits for its slot, or for another item's times in it */
  if (!o->rstart) {
    uint64_t v, t0 = 0, t1 = 0, sh = 0;
    int r = kernel_ready(o, &v);
    if (r < 0) { /* never started, never stopped: dropped (NCCL hangs here) */
      kernel_wait(o, 0);
      if (!o->tdone) stream_end(o, 0);
      return 2;
    }
    waits = r == 0;
    if (r > 0 && o->comm) sim_kts_get(o->comm, o->channel, v, &t0, &t1, &sh);
    if (r > 0 && !o->comm && o->started) t0 = o->gpu_start + o->kshift, sh = o->kshift;
    if (r > 0 && !v && o->kdev) { /* a slot nothing wrote yet (a captured item's host value is 0):
                                     NCCL reports its zero timestamps at once */
      kch_start_event(o, 0);
      kch_stop_event(o, 0);
      o->rstart = o->rstop = 1, o->fv = 0, moved = 1;
      atomic_fetch_add(&sim_cnt->kch_foreign, 1);
    } else if (r > 0 && t0) { /* the slot's item has begun: its start */
      /* another item's: host and GPU disagree on the value (foreign), or they agree and the
         channel's item a lap (64 items) later overwrote the slot before this proxy read it:
         NCCL's proxy fell behind the GPU, and reports that item's times (lapped) */
      if (v != o->kdev)
        atomic_fetch_add(o->kbase == o->kdev ? &sim_cnt->kch_lapped : &sim_cnt->kch_foreign, 1);
      kch_seen(o, t0, sh);
      kch_start_event(o, t0);
      o->rstart = 1, o->fv = v, moved = 1;
    } else if (r > 0 && v != o->kdev) { /* the GPU ran that item; the sim has not stamped it yet */
      waits = !o->swait;                  /* (waiting for the stream is counted already) */
    }
  }
  if (o->rstart && !o->rstop) {
    uint64_t t0 = 0, t1 = 0, sh = 0;
    if (o->fv == o->kdev || !o->comm) {
      if (o->tdone) {
        kch_seen(o, o->tstop, 0);
        kernel_phases(p, o, o->gpu_start + o->kshift, o->tstop + o->kshift);
        t1 = o->tstop + o->kshift;
      }
    } else {
      /* NCCL's stop reads the completion slot too: when a later item of the channel stamped it
         meanwhile, that item's stop */
      uint64_t w = sim_kts_item(o->comm, o->channel, o->fv);
      if (w > o->fv) o->fv = w;
      sim_kts_get(o->comm, o->channel, o->fv, &t0, &t1, &sh);
      kch_seen(o, t1, sh);
      waits = !t1 && !o->swait;
    }
    if (t1) kch_stop_event(o, t1), o->rstop = 1, moved = 1;
  }
  kernel_wait(o, waits && !o->rstop);
  int final = o->comm && atomic_load_explicit(&o->comm->kch_final, memory_order_acquire);
  /* model time: the op is done when the GPU's side is too (what a stream sync waits for) */
  if (o->tdone && (o->rstop || final)) kch_seen(o, o->tstop, 0);
  if (o->rstop && o->tdone) return 2;
  /* At the comm's end, once its GPU work has all run (the sim stamps a slot's times when its
     item runs, which may be after this op's own end), nothing more will stamp the slot: NCCL's
     proxy would wait forever. Counted as stuck and dropped. */
  if (o->tdone && final && gpu_idle(o->comm)) {
    kernel_wait(o, 0);
    atomic_fetch_add(&sim_cnt->kch_stuck, 1);
    sim_log("comm %s rank %d channel %d: KernelCh (work counter %llu, GPU item %llu) %s "
            "item %llu's times, which never come: stuck",
            o->comm->name, o->comm->rank, o->channel, (unsigned long long)o->kbase,
            (unsigned long long)o->kdev, o->rstart ? "waits to stop with" : "waits to start with",
            (unsigned long long)(o->rstart ? o->fv : sim_kch_slot(o->comm, o->channel, o->kbase)));
    return 2;
  }
  return moved;
}

/* ------------------------------------------------------------------ the thread */
typedef struct {
  sim_pop_t *head, *tail;
} oplist_t;

static void append_ops(sim_proxy_t *p, sim_pop_t *list, oplist_t *act) {
  while (list) {
    void *h = ctrl_begin(p, NCS_ST_PROXY_CTRL_APPEND, 0);
    int n = 0;
    for (; list && n < APPEND_BATCH; n++) {
      sim_pop_t *o = list;
      list = o->next;
      o->next = NULL;
      if (o->vt > p->vt) p->vt = o->vt; /* model time: ProxyCtrl follows what it takes up */
      start_op(o);
      if (o->kind == POP_NOSTOP) { /* nothing ever stops it (R§3.4) */
        finish_op(o);
        continue;
      }
      if (act->tail)
        act->tail->next = o;
      else
        act->head = o;
      act->tail = o;
    }
    ctrl_end(p, &h, NCS_ST_PROXY_CTRL_APPEND_END, n);
  }
}

static int progress_all(sim_proxy_t *p, oplist_t *act) {
  int moved = 0;
  sim_pop_t *prev = NULL, *o = act->head;
  while (o) {
    sim_pop_t *next = o->next;
    int r = o->kind == POP_KERNEL ? progress_kernel(p, o) : progress_net(p, o);
    moved |= r;
    if (r == 2) {
      if (prev)
        prev->next = next;
      else
        act->head = next;
      if (act->tail == o) act->tail = prev;
      finish_op(o);
    } else {
      prev = o;
    }
    o = next;
  }
  return moved;
}

/* Sleep/Wakeup bracket the wait, as in NCCL's progress loop. Called with p->mu held. */
static void proxy_sleep(sim_proxy_t *p) {
  pthread_mutex_unlock(&p->mu);
  void *h = ctrl_begin(p, NCS_ST_PROXY_CTRL_SLEEP, 0);
  pthread_mutex_lock(&p->mu);
  while (!p->pending && !p->stop) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  ctrl_end(p, &h, NCS_ST_PROXY_CTRL_WAKEUP, 0);
  pthread_mutex_lock(&p->mu);
}

static void *proxy_main(void *arg) {
  sim_proxy_t *p = arg;
  oplist_t act = {NULL, NULL};
  int idle = 1;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    if (!p->pending && !act.head && !p->stop) proxy_sleep(p);
    if (p->stop && (p->abort || (!p->pending && !act.head))) {
      sim_pop_t *left = p->pending;
      p->pending = p->pending_tail = NULL;
      pthread_mutex_unlock(&p->mu);
      act.tail = NULL;
      for (sim_pop_t *o = left; o; o = left) left = o->next, discard_op(o);
      break;
    }
    sim_pop_t *list = p->pending;
    p->pending = p->pending_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    if (list) append_ops(p, list, &act);
    /* --profiler-lag-us: a profiler thread that falls behind (a busy host): its KernelCh events
       come late, after the proxy thread's ProxyOps of the same operations */
    if (list && p->profiler && sim_opt.profiler_lag_us) sim_sleep_us(sim_opt.profiler_lag_us);
    if (act.head && idle) ctrl_event(p, NCS_ST_PROXY_CTRL_ACTIVE), idle = 0;
    int moved = progress_all(p, &act);
    if (!act.head && !idle) ctrl_event(p, NCS_ST_PROXY_CTRL_IDLE), idle = 1;
    if (act.head) {
      if (moved)
        sched_yield();
      else
        sim_sleep_us(20); /* everything waits on the network */
    }
  }
  for (sim_pop_t *o = act.head, *n; o; o = n) n = o->next, discard_op(o); /* abort */
  return NULL;
}

sim_proxy_t *sim_proxy_create(void *ctrl_ctx, int index, int profiler) {
  sim_proxy_t *p = sim_xcalloc(1, sizeof *p);
  p->profiler = profiler;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->ctrl_ctx = ctrl_ctx;
  p->index = index;
  p->refs = 1;
  p->rng = sim_mix(sim_opt.seed ^ (uint64_t)profiler << 40, 0x9e3779b97f4a7c15ull * (uint64_t)(index + 1)) | 1;
  sim_net_acquire();
  if (pthread_create(&p->th, NULL, proxy_main, p) != 0) sim_fail("cannot start a proxy thread");
  return p;
}

void sim_proxy_ref(sim_proxy_t *p) {
  pthread_mutex_lock(&p->mu);
  p->refs++;
  pthread_mutex_unlock(&p->mu);
}

void sim_proxy_unref(sim_proxy_t *p, int abort) {
  pthread_mutex_lock(&p->mu);
  int last = --p->refs == 0;
  if (last) {
    p->stop = 1;
    p->abort = abort;
    pthread_cond_signal(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  if (!last) return;
  pthread_join(p->th, NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
  sim_net_release();
}

void sim_proxy_post(sim_proxy_t *p, sim_pop_t *ops) {
  sim_pop_t *last = ops;
  while (last->next) last = last->next;
  pthread_mutex_lock(&p->mu);
  if (p->pending_tail)
    p->pending_tail->next = ops;
  else
    p->pending = ops;
  p->pending_tail = last;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}
