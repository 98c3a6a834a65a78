/* sqlite_rows.c - one streaming pass per trace file, in the job model's file order (sqlite_int.h,
 * docs/sqlite.md). Coll and P2p rows are inserted at their START (their job model and analysis
 * numbers are looked up by (segment, event id)) and updated at STOP, COMPLETE and EXPIRED.
 * KernelCh, ProxyOp, ProxyStep and KernelPhase events are kept while open and inserted once at their STOP (or
 * at the end of their segment when they never stop), with their states; each state of a
 * ProxyOp/ProxyStep also becomes a proxy_states row when the next state (or the stop) tells how
 * long it lasted. Row ids are assigned at START, so a child names its parent's row even before
 * the parent's row is complete. Contexts resolve to the job model's members. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "export/sqlite_int.h"
#include "util/fmt.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int want(const sq_t *q, unsigned type) { return (q->o.types >> type) & 1; }

static const char *expired_name(uint32_t reason) {
  switch (reason) {
  case NCS_XR_TIMEOUT: return "timeout";
  case NCS_XR_FLUSH: return "segment-end";
  case NCS_XR_EVICTED: return "evicted";
  default: return "unknown";
  }
}

/* ================================================================ communicators and ranks */

/* comm (or -1) and rank of a START's context: the job model's member */
static void ctx_of(const sq_t *q, const ncs_event_t *e, int64_t *comm, int32_t *rank) {
  const ncs_job_member_t *m =
      e->ctx_kind == NCS_CTX_LOCAL ? ncs_job_member(q->a->job, q->proc, q->seg, e->ctx) : NULL;
  *comm = m ? (int64_t)m->comm : -1, *rank = m ? m->rank : e->rank;
}

/* the ABI version NCCL called the START's communicator through (the model's member); 0 unknown */
static uint32_t ctx_abi(const sq_t *q, const ncs_event_t *e) {
  const ncs_job_member_t *m =
      e->ctx_kind == NCS_CTX_LOCAL ? ncs_job_member(q->a->job, q->proc, q->seg, e->ctx) : NULL;
  return m ? m->abi : 0;
}

/* ================================================================ Coll / P2p */

static uint64_t parent_row(const sq_t *q, const ncs_event_t *e) {
  uint64_t v;
  return e->parent_kind == NCS_REF_LOCAL && hm_get(&q->rows, e->parent, &v) ? v : 0;
}

static void coll_start(sq_t *q, const ncs_event_t *e) {
  sqlite3_stmt *s = q->ins[NCS_SQ_OPERATIONS];
  uint64_t row = ++q->next_row[NCS_SQ_OPERATIONS], v;
  if (hm_put(&q->rows, e->id, row) != 0) {
    sq_oom(q);
    return;
  }
  int64_t comm;
  int32_t rank;
  ctx_of(q, e, &comm, &rank);
  const int coll = e->type == NCS_T_COLL, v7 = ctx_abi(q, e) >= 7;
  b_u64(s, OP_id, row), b_u64(s, OP_process_id, q->proc), b_u64(s, OP_segment, q->seg);
  b_u64(s, OP_event_id, e->id), b_txt(s, OP_type, coll ? "Coll" : "P2p");
  if (comm >= 0) b_i64(s, OP_comm, comm);
  b_i64(s, OP_rank, rank);
  b_u64(s, OP_start_mono_ns, e->ts);
  if (e->parent_kind == NCS_REF_LOCAL && hm_get(&q->api, e->parent, &v))
    b_u64(s, OP_api_start_mono_ns, v);
  const char *dtype;
  uint64_t count;
  if (coll) {
    b_u64(s, OP_seq, e->f[NCS_F(Coll, seqNumber)]), b_txt(s, OP_func, e->fstr[NCS_F(Coll, func)]);
    b_i64(s, OP_root, (int64_t)e->f[NCS_F(Coll, root)]);
    count = e->f[NCS_F(Coll, count)], dtype = e->fstr[NCS_F(Coll, datatype)];
    b_u64(s, OP_n_channels, e->f[NCS_F(Coll, nChannels)]), b_u64(s, OP_n_warps, e->f[NCS_F(Coll, nWarps)]);
    b_txt(s, OP_algo, e->fstr[NCS_F(Coll, algo)]), b_txt(s, OP_proto, e->fstr[NCS_F(Coll, proto)]);
    b_u64(s, OP_traffic_bytes, e->f[NCS_F(Coll, trafficBytes)]), b_i64(s, OP_op, (int64_t)e->f[NCS_F(Coll, op)]);
    b_u64(s, OP_is_collnet, e->f[NCS_F(Coll, isCollnet)]), b_u64(s, OP_is_nvls, e->f[NCS_F(Coll, isNvls)]);
    /* ABI v7: NULL when NCCL called an older version (which drops them) or the file predates
       them (before format 1.3) */
    if (v7 && NCS_HAS(e, NCS_F(Coll, userTag))) {
      b_u64(s, OP_user_tag, e->f[NCS_F(Coll, userTag)]), b_u64(s, OP_is_sym_coll, e->f[NCS_F(Coll, isSymColl)]);
      b_txt(s, OP_kernel_variant, e->fstr[NCS_F(Coll, kernelVariant)]);
    }
  } else {
    b_txt(s, OP_func, e->fstr[NCS_F(P2p, func)]), b_i64(s, OP_peer, (int64_t)e->f[NCS_F(P2p, peer)]);
    count = e->f[NCS_F(P2p, count)], dtype = e->fstr[NCS_F(P2p, datatype)];
    b_u64(s, OP_n_channels, e->f[NCS_F(P2p, nChannels)]);
    if (v7 && NCS_HAS(e, NCS_F(P2p, userTag))) b_u64(s, OP_user_tag, e->f[NCS_F(P2p, userTag)]);
  }
  b_u64(s, OP_nccl_count, count), b_txt(s, OP_nccl_datatype, dtype);
  /* the analysis's view of this operation: the same record, found by (segment, event id) */
  uint64_t k;
  const ncs_op_t *op;
  if (hm_get(&q->ops, ((uint64_t)q->seg << 40) ^ e->id, &k) && (op = ncs_job_op(q->a->job, k - 1)) &&
      op->seg == q->seg && op->id == e->id && op->proc == q->proc) {
    q->op_row[k - 1] = row;
    count = op->count, dtype = op->dtype;
    b_u64(s, OP_bytes, op->bytes);
    b_i64(s, OP_arrival_job_ns, op->arrival), b_i64(s, OP_duration_ns, op->duration);
    b_txt(s, OP_timing, ncs_src_names[op->timing]);
    if (op->kstart) b_i64(s, OP_kernel_start_job_ns, op->kstart), b_i64(s, OP_kernel_stop_job_ns, op->kstop);
    b_txt(s, OP_gpu_source, ncs_gs_names[op->gsrc]), b_u64(s, OP_cupti_kernels, op->kernels);
    b_txt(s, OP_gpu_check, ncs_gk_names[op->gk < NCS_GK_N ? op->gk : 0]);
    b_u64(s, OP_completion_inferred, op->inferred), b_u64(s, OP_completion_impossible, op->impossible);
    b_u64(s, OP_graph_captured, op->captured), b_u64(s, OP_graph_replays, op->replays);
    if (op->inst != SIZE_MAX) b_u64(s, OP_collective_id, op->inst + 1);
    if (op->p2p) b_u64(s, OP_p2p_order, op->order);
  }
  b_u64(s, OP_count, count), b_txt(s, OP_datatype, dtype);
  sq_insert(q, NCS_SQ_OPERATIONS);
}

static void coll_update(sq_t *q, sqlite3_stmt *s, const char *what) {
  if (q->failed) {
    sqlite3_reset(s), sqlite3_clear_bindings(s);
    return;
  }
  sq_step(q, s, what);
}

static void coll_stop(sq_t *q, const ncs_event_t *e, uint64_t row) {
  b_u64(q->upd_stop, 0, e->ts), b_u64(q->upd_stop, 1, row);
  coll_update(q, q->upd_stop, "operations stop");
}

static void coll_complete(sq_t *q, const ncs_event_t *e, uint64_t row) {
  sqlite3_stmt *s = q->upd_complete;
  b_nz(s, 0, e->end_ns), b_nz(s, 1, e->first_child_ns), b_nz(s, 2, e->gpu_start);
  b_nz(s, 3, e->gpu_stop), b_u64(s, 4, e->cflags), b_u64(s, 5, e->n_kernel_ch);
  b_u64(s, 6, e->n_proxy_op), b_u64(s, 7, e->n_open), b_u64(s, 8, row);
  coll_update(q, s, "operations completion");
}

/* ================================================================ KernelCh, ProxyOp, ProxyStep, KernelPhase */

static void close_open(sq_t *q, open_t *o, uint64_t stop);

static open_t *open_get(sq_t *q, uint64_t id) {
  uint64_t i;
  return hm_get(&q->open_map, id, &i) ? &q->open[i] : NULL;
}

static open_t *open_new(sq_t *q, const ncs_event_t *e) {
  uint64_t old;
  uint32_t i;
  if (hm_get(&q->open_map, e->id, &old)) /* the same id again (a damaged trace): end the first */
    close_open(q, &q->open[old], 0);
  if (q->nfree) {
    i = q->free_open[--q->nfree];
  } else {
    if (q->nopen == q->cap_open) { /* the free list can always hold every slot */
      uint32_t n = q->cap_open ? 2 * q->cap_open : 256;
      open_t *p = realloc(q->open, n * sizeof *p);
      if (!p) return sq_oom(q), NULL;
      q->open = p;
      uint32_t *f = realloc(q->free_open, n * sizeof *f);
      if (!f) return sq_oom(q), NULL;
      q->free_open = f, q->cap_open = n;
    }
    i = q->nopen++;
  }
  if (hm_put(&q->open_map, e->id, i) != 0) return sq_oom(q), NULL;
  open_t *o = &q->open[i];
  memset(o, 0, sizeof *o);
  o->id = e->id, o->type = e->type, o->in_use = 1, o->start = e->ts;
  _Static_assert(NCS_NF(ProxyOp) <= 6 && NCS_NF(KernelCh) <= 6 && NCS_NF(ProxyStep) <= 6 &&
                     NCS_NF(KernelPhase) <= 6, "open_t.f holds them");
  for (int k = 0; k < 6 && k < e->nfields; k++) o->f[k] = e->f[k];
  ctx_of(q, e, &o->comm, &o->rank);
  o->pxn = (e->flags & NCS_SF_PXN) != 0;
  o->parent_row = parent_row(q, e);
  o->parent_id = e->parent_kind == NCS_REF_LOCAL ? e->parent : 0;
  open_t *k = e->type == NCS_T_KERNEL_PHASE && o->parent_id ? open_get(q, o->parent_id) : NULL;
  if (k && k->type == NCS_T_KERNEL_CH) o->parent_row = k->row, o->inst_row = k->parent_row;
  return o;
}

/* the proxy_states row of the state that ends at `until` (0: never ended) */
static void state_row(sq_t *q, open_t *o, uint64_t until) {
  if (!o->has_pending) return;
  o->has_pending = 0;
  sqlite3_stmt *s = q->ins[NCS_SQ_PROXY_STATES];
  b_u64(s, PT_id, ++q->next_row[NCS_SQ_PROXY_STATES]);
  b_u64(s, o->type == NCS_T_PROXY_OP ? PT_proxy_op_id : PT_proxy_step_id, o->row);
  b_txt(s, PT_state, ncs_state_name(o->p_state)), b_u64(s, PT_state_code, o->p_state);
  b_u64(s, PT_mono_ns, o->p_ts), b_u64(s, PT_arg0, o->p_arg0), b_u64(s, PT_arg1, o->p_arg1);
  if (until) {
    b_u64(s, PT_until_mono_ns, until);
    b_i64(s, PT_duration_ns, until >= o->p_ts ? (int64_t)(until - o->p_ts) : 0);
  }
  sq_insert(q, NCS_SQ_PROXY_STATES);
}

static void on_state(sq_t *q, open_t *o, const ncs_event_t *e) {
  if (o->type == NCS_T_KERNEL_CH || o->type == NCS_T_KERNEL_PHASE) { /* the GPU end */
    uint32_t st = o->type == NCS_T_KERNEL_CH ? ST_KERNEL_CH_STOP : ST_KERNEL_PHASE_STOP;
    if (e->state == st && e->arg0) o->gpu_stop = e->arg0;
    return;
  }
  state_row(q, o, e->ts);
  o->has_pending = 1, o->p_state = e->state, o->p_ts = e->ts, o->p_arg0 = e->arg0;
  o->p_arg1 = e->arg1;
  o->nstates++, o->last_state = e->state, o->last_state_ts = e->ts;
  if (e->state < NSTATES && !o->first[e->state]) o->first[e->state] = e->ts;
  if (e->arg0) o->trans_size = e->arg0;
  if (o->type == NCS_T_PROXY_OP && e->arg1) o->steps_done = e->arg1; /* ABI v1-v3 */
}

static void bind_states(open_t *o, sqlite3_stmt *s, int n_states, int last_state, int last_ts) {
  b_u64(s, n_states, o->nstates);
  if (o->nstates)
    b_txt(s, last_state, ncs_state_name(o->last_state)), b_u64(s, last_ts, o->last_state_ts);
}

/* A KernelPhase: its GPU times (pTimer, then the KernelPhaseStop state's). NCCL names phases by
 * their id (0 initial_sync, 1 compute, 2 final_sync): the name is that of the id, or NULL. */
static void phase_row(sq_t *q, const open_t *o) {
  static const char *const names[] = {"initial_sync", "compute", "final_sync"};
  sqlite3_stmt *s = q->ins[NCS_SQ_KERNEL_PHASES];
  uint64_t pid = o->f[NCS_F(KernelPhase, phaseId)], start = o->f[NCS_F(KernelPhase, pTimer)];
  b_u64(s, KP_id, o->row), b_u64(s, KP_process_id, q->proc), b_u64(s, KP_segment, q->seg);
  b_u64(s, KP_event_id, o->id), b_nz(s, KP_parent_event_id, o->parent_id);
  b_nz(s, KP_kernel_channel_id, o->parent_row), b_nz(s, KP_operation_id, o->inst_row);
  if (o->comm >= 0) b_i64(s, KP_comm, o->comm);
  b_i64(s, KP_rank, o->rank), b_u64(s, KP_channel, o->f[NCS_F(KernelPhase, channelId)]);
  b_u64(s, KP_phase_id, pid);
  if (pid < sizeof names / sizeof names[0]) b_txt(s, KP_phase, names[pid]);
  b_nz(s, KP_start_gpu_ns, start), b_nz(s, KP_stop_gpu_ns, o->gpu_stop);
  if (start && o->gpu_stop >= start) b_u64(s, KP_gpu_duration_ns, o->gpu_stop - start);
  b_u64(s, KP_start_mono_ns, o->start);
  if (o->expired) b_txt(s, KP_expired, expired_name(o->expired));
  sq_insert(q, NCS_SQ_KERNEL_PHASES);
}

/* an event of no operation (the filter): does it overlap the window, from its start (GPU time
 * for kernel channels and phases when mapped) to its stop (0: it never stopped, the end of its
 * segment) */
static int own_in_window(const sq_t *q, const open_t *o, uint64_t stop) {
  const ncs_job_t *j = q->a->job;
  const ncs_job_proc_t *p = &j->procs[q->proc];
  int64_t b = ncs_job_time(j, q->proc, o->start);
  if (!stop) stop = q->seg < p->nsegs ? p->segs[q->seg].last_ns : o->start;
  int64_t e = ncs_job_time(j, q->proc, stop);
  uint64_t gs = o->type == NCS_T_KERNEL_CH ? o->f[NCS_F(KernelCh, pTimer)]
              : o->type == NCS_T_KERNEL_PHASE ? o->f[NCS_F(KernelPhase, pTimer)] : 0;
  if (gs && ncs_job_gpu_time(j, q->proc, gs)) {
    b = ncs_job_gpu_time(j, q->proc, gs);
    if (o->gpu_stop && ncs_job_gpu_time(j, q->proc, o->gpu_stop)) e = ncs_job_gpu_time(j, q->proc, o->gpu_stop);
  }
  return ncs_xf_in_window(&q->xf, b, e);
}

/* insert the row of an open event; stop 0: it never stopped */
static void close_open(sq_t *q, open_t *o, uint64_t stop) {
  sqlite3_stmt *s;
  if (o->own && !own_in_window(q, o, stop)) { /* left out: the rows of its children go too */
    ncs_xf_drop(&q->xs, o->id);
    goto done;
  }
  if (!stop) q->st->unfinished++;
  if (!o->parent_row && o->parent_id) hm_get(&q->rows, o->parent_id, &o->parent_row);
  if (o->type == NCS_T_KERNEL_CH) {
    s = q->ins[NCS_SQ_KERNEL_CHANNELS];
    b_u64(s, KC_id, o->row), b_u64(s, KC_process_id, q->proc), b_u64(s, KC_segment, q->seg);
    b_u64(s, KC_event_id, o->id), b_nz(s, KC_parent_event_id, o->parent_id);
    b_nz(s, KC_operation_id, o->parent_row);
    if (o->comm >= 0) b_i64(s, KC_comm, o->comm);
    b_i64(s, KC_rank, o->rank), b_u64(s, KC_channel, o->f[NCS_F(KernelCh, channelId)]);
    b_u64(s, KC_start_mono_ns, o->start), b_nz(s, KC_stop_mono_ns, stop);
    uint64_t ptimer = o->f[NCS_F(KernelCh, pTimer)];
    b_nz(s, KC_start_gpu_ns, ptimer), b_nz(s, KC_stop_gpu_ns, o->gpu_stop);
    if (ptimer && o->gpu_stop >= ptimer) b_u64(s, KC_gpu_duration_ns, o->gpu_stop - ptimer);
    if (o->expired) b_txt(s, KC_expired, expired_name(o->expired));
    sq_insert(q, NCS_SQ_KERNEL_CHANNELS);
  } else if (o->type == NCS_T_KERNEL_PHASE) {
    phase_row(q, o);
  } else if (o->type == NCS_T_PROXY_OP) {
    state_row(q, o, stop);
    s = q->ins[NCS_SQ_PROXY_OPS];
    b_u64(s, PO_id, o->row), b_u64(s, PO_process_id, q->proc), b_u64(s, PO_segment, q->seg);
    b_u64(s, PO_event_id, o->id), b_nz(s, PO_parent_event_id, o->parent_id);
    b_nz(s, PO_operation_id, o->parent_row);
    if (o->comm >= 0) b_i64(s, PO_comm, o->comm);
    b_i64(s, PO_rank, o->rank), b_i64(s, PO_pid, (int64_t)o->f[NCS_F(ProxyOp, pid)]), b_u64(s, PO_pxn, o->pxn);
    b_u64(s, PO_channel, o->f[NCS_F(ProxyOp, channelId)]), b_i64(s, PO_peer, (int64_t)o->f[NCS_F(ProxyOp, peer)]);
    b_i64(s, PO_n_steps, (int64_t)o->f[NCS_F(ProxyOp, nSteps)]);
    b_i64(s, PO_chunk_size, (int64_t)o->f[NCS_F(ProxyOp, chunkSize)]);
    b_i64(s, PO_is_send, (int64_t)o->f[NCS_F(ProxyOp, isSend)]);
    b_u64(s, PO_start_mono_ns, o->start), b_nz(s, PO_stop_mono_ns, stop);
    if (stop) b_i64(s, PO_duration_ns, stop >= o->start ? (int64_t)(stop - o->start) : 0);
    b_nz(s, PO_in_progress_mono_ns, o->first[ST_OP_IN_PROGRESS]);
    bind_states(o, s, PO_n_states, PO_last_state, PO_last_state_mono_ns);
    b_nz(s, PO_trans_size, o->trans_size), b_nz(s, PO_steps_done, o->steps_done);
    if (o->expired) b_txt(s, PO_expired, expired_name(o->expired));
    sq_insert(q, NCS_SQ_PROXY_OPS);
  } else {
    state_row(q, o, stop);
    s = q->ins[NCS_SQ_PROXY_STEPS];
    b_u64(s, PS_id, o->row), b_u64(s, PS_process_id, q->proc), b_u64(s, PS_segment, q->seg);
    b_u64(s, PS_event_id, o->id), b_nz(s, PS_parent_event_id, o->parent_id);
    b_nz(s, PS_proxy_op_id, o->parent_row);
    b_i64(s, PS_step, (int64_t)o->f[NCS_F(ProxyStep, step)]);
    b_u64(s, PS_start_mono_ns, o->start), b_nz(s, PS_stop_mono_ns, stop);
    if (stop) b_i64(s, PS_duration_ns, stop >= o->start ? (int64_t)(stop - o->start) : 0);
    b_nz(s, PS_send_gpu_wait_mono_ns, o->first[ST_STEP_SEND_GPU_WAIT]);
    b_nz(s, PS_send_peer_wait_mono_ns, o->first[ST_STEP_SEND_PEER_WAIT]);
    b_nz(s, PS_send_wait_mono_ns, o->first[ST_STEP_SEND_WAIT]);
    b_nz(s, PS_recv_wait_mono_ns, o->first[ST_STEP_RECV_WAIT]);
    b_nz(s, PS_recv_flush_wait_mono_ns, o->first[ST_STEP_RECV_FLUSH_WAIT]);
    b_nz(s, PS_recv_gpu_wait_mono_ns, o->first[ST_STEP_RECV_GPU_WAIT]);
    bind_states(o, s, PS_n_states, PS_last_state, PS_last_state_mono_ns);
    b_nz(s, PS_trans_size, o->trans_size);
    if (o->expired) b_txt(s, PS_expired, expired_name(o->expired));
    sq_insert(q, NCS_SQ_PROXY_STEPS);
  }
done:
  hm_del(&q->open_map, o->id);
  /* a ProxyOp's steps started before it stopped: its id is not needed any more (a step found
   * later in the file still gets linked, at the end, through parent_event_id) */
  if (o->type == NCS_T_PROXY_OP) hm_del(&q->rows, o->id);
  o->in_use = 0;
  q->free_open[q->nfree++] = (uint32_t)(o - q->open);
}

static int table_of(uint8_t type) {
  switch (type) {
  case NCS_T_KERNEL_CH: return NCS_SQ_KERNEL_CHANNELS;
  case NCS_T_PROXY_OP: return NCS_SQ_PROXY_OPS;
  case NCS_T_PROXY_STEP: return NCS_SQ_PROXY_STEPS;
  case NCS_T_KERNEL_PHASE: return NCS_SQ_KERNEL_PHASES;
  case NCS_T_COLL:
  case NCS_T_P2P: return NCS_SQ_OPERATIONS;
  default: return -1;
  }
}

/* ================================================================ streaming */

static void on_record(sq_t *q, const ncs_event_t *e) {
  uint64_t row;
  open_t *o;
  int t = table_of(e->type), cls = XF_KEEP;
  if (e->kind == NCS_REC_START) { /* the filter: of an operation that passed, left out, or none */
    cls = ncs_xf_start(&q->xs, e, t >= 0 && want(q, e->type));
    if (cls == XF_DROP) return;
  } else if (ncs_xf_skip(&q->xs, e)) {
    if (e->kind == NCS_REC_STOP) ncs_xf_stopped(&q->xs, e);
    return;
  }
  if (e->kind == NCS_REC_START && (e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API)) {
    if (hm_put(&q->api, e->id, e->ts) != 0) sq_oom(q);
    return;
  }
  if (t < 0 || !want(q, e->type)) return;
  int coll = t == NCS_SQ_OPERATIONS;
  switch (e->kind) {
  case NCS_REC_START:
    if (coll) {
      coll_start(q, e);
    } else if ((o = open_new(q, e))) {
      o->row = ++q->next_row[t];
      o->own = cls == XF_OWN;
      if (e->type == NCS_T_PROXY_OP && hm_put(&q->rows, e->id, o->row) != 0) sq_oom(q);
    }
    break;
  case NCS_REC_STOP:
    if (coll && hm_get(&q->rows, e->id, &row))
      coll_stop(q, e, row);
    else if (!coll && (o = open_get(q, e->id)))
      close_open(q, o, e->ts ? e->ts : 1);
    else
      q->st->unmatched++;
    break;
  case NCS_REC_STATE:
    if (!coll && (o = open_get(q, e->id)))
      on_state(q, o, e);
    else if (!coll)
      q->st->unmatched++;
    break;
  case NCS_REC_COMPLETE:
    if (coll && hm_get(&q->rows, e->id, &row))
      coll_complete(q, e, row);
    else
      q->st->unmatched++;
    break;
  case NCS_REC_EXPIRED:
    if (coll && hm_get(&q->rows, e->id, &row)) {
      b_txt(q->upd_expired, 0, expired_name(e->reason)), b_u64(q->upd_expired, 1, row);
      coll_update(q, q->upd_expired, "operations expired");
    } else if (!coll && (o = open_get(q, e->id))) {
      o->expired = (uint8_t)(e->reason ? e->reason : 255);
    }
    break;
  default: break;
  }
}

static void on_event(sq_t *q, const ncs_event_t *e) {
  on_record(q, e);
  if (e->kind == NCS_REC_STOP) ncs_xf_stopped(&q->xs, e); /* after it: a drop at its stop counts */
}

static void segment_end(sq_t *q) {
  if (!q->in_seg) return;
  for (uint32_t i = 0; i < q->nopen; i++)
    if (q->open[i].in_use) close_open(q, &q->open[i], 0);
  sqlite3_stmt *s = q->upd_segment;
  b_u64(s, 0, q->seg_records), b_u64(s, 1, q->seg_drops), b_u64(s, 2, (uint64_t)q->seg_clean);
  b_nz(s, 3, q->seg_end), b_u64(s, 4, q->proc), b_u64(s, 5, q->seg);
  coll_update(q, s, "segments");
  hm_clear(&q->api), hm_clear(&q->rows);
  hm_clear(&q->open_map);
  q->nopen = q->nfree = 0;
  q->in_seg = 0;
}

static void segment_start(sq_t *q, const ncs_segment_info_t *si) {
  static const char *const modes[] = {"trace", "flight", "capture"};
  segment_end(q);
  q->in_seg = 1, q->seg = si->index;
  ncs_xf_segment(&q->xs, si->index);
  q->seg_records = q->seg_drops = q->seg_end = 0, q->seg_clean = 0;
  if (!q->plugin_version &&
      !(q->plugin_version = strdup(si->plugin_version ? si->plugin_version : "")))
    sq_oom(q);
  sqlite3_stmt *s = q->ins[NCS_SQ_SEGMENTS];
  b_u64(s, SG_process_id, q->proc), b_u64(s, SG_segment, si->index);
  b_txt(s, SG_plugin_version, si->plugin_version), b_u64(s, SG_epoch, si->epoch);
  b_txt(s, SG_mode, si->mode < 3 ? modes[si->mode] : "unknown");
  b_u64(s, SG_events_mask, si->mask), b_u64(s, SG_start_realtime_ns, si->start_realtime_ns);
  b_u64(s, SG_start_mono_ns, si->start_mono_ns), b_txt(s, SG_cmdline, si->cmdline);
  b_u64(s, SG_pool_bytes, si->pool_bytes), b_u64(s, SG_clean, 0);
  sq_insert(q, NCS_SQ_SEGMENTS);
}

static void on_counters(sq_t *q, const ncs_counters_t *c, int footer) {
  uint64_t drops = 0, end = 0;
  for (uint32_t i = 0; i < c->nkeys; i++) {
    uint32_t k = c->keys[i];
    if ((k & ~0xFFu) == NCS_CK_DROPS || k == NCS_CK_NO_THREAD_SLOT) drops += c->values[i];
    if (k == NCS_CK_END_NS) end = c->values[i];
  }
  q->seg_drops = drops, q->seg_end = end;
  if (footer) q->seg_clean = 1;
}

void sq_progress(sq_t *q, ncs_reader_t *r, int final) {
  if (!q->o.progress) return;
  uint64_t t = now_ns();
  if (final) {
    if (!q->printed) return;
  } else if (t - q->t0 < ncs_progress_after_ns() || t - q->last_print < 1000000000ull) {
    return;
  }
  q->last_print = t, q->printed = 1;
  uint64_t done = final ? q->bytes_total : q->bytes_before + (r ? ncs_reader_offset(r) : 0);
  double pct = q->bytes_total ? 100.0 * (double)done / (double)q->bytes_total : 100.0;
  char detail[128];
  snprintf(detail, sizeof detail, "file %u of %" PRIu64 ", %" PRIu64 " records, %.1f s",
           q->proc + 1 > q->a->job->nprocs ? q->a->job->nprocs : q->proc + 1,
           (uint64_t)q->a->job->nprocs, q->st->records, (double)(t - q->t0) * 1e-9);
  ncs_progress(q->o.prog, pct, detail, final);
}

void sq_export_file(sq_t *q, uint32_t pi) {
  const ncs_job_proc_t *p = &q->a->job->procs[pi];
  q->proc = pi, q->in_seg = 0, q->seg = 0;
  ncs_xf_file_free(&q->xs);
  ncs_xf_file(&q->xs, &q->xf, pi);
  free(q->plugin_version);
  q->plugin_version = NULL;
  /* this file's operations in the analysis, by (segment, event id) */
  hm_clear(&q->ops);
  for (size_t k = q->proc_first[pi]; k < q->proc_first[pi + 1]; k++) {
    const ncs_op_t *op = ncs_job_op(q->a->job, q->by_proc[k]);
    if (op && hm_put(&q->ops, ((uint64_t)op->seg << 40) ^ op->id, q->by_proc[k] + 1) != 0) {
      sq_oom(q);
      return;
    }
  }
  char err[512] = "";
  struct stat sb;
  uint64_t size = stat(p->path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
  uint64_t records = 0;
  uint32_t nseg = 0;
  const char *damage = NULL;
  ncs_reader_t *r = ncs_reader_open(p->path, err, sizeof err);
  if (!r) {
    damage = "corrupt";
    q->st->damaged++;
  } else {
    ncs_item_t it;
    int rc;
    uint32_t n = 0;
    while (!q->failed && (rc = ncs_reader_next(r, &it)) == 1) {
      switch (it.what) {
      case NCS_ITEM_SEGMENT: segment_start(q, ncs_reader_segment(r)), nseg++; break;
      case NCS_ITEM_EVENT:
        records++, q->seg_records++, q->st->records++;
        on_event(q, &it.ev);
        break;
      case NCS_ITEM_COUNTERS: on_counters(q, it.counters, 0); break;
      case NCS_ITEM_FOOTER: on_counters(q, it.counters, 1); break;
      default: break;
      }
      if (++n == 65536) n = 0, sq_progress(q, r, 0);
    }
    if (!q->failed && rc < 0) {
      int d = ncs_reader_damage(r);
      damage = d == NCS_DAMAGE_TRUNCATED ? "truncated" : "corrupt";
      snprintf(err, sizeof err, "%s", ncs_reader_error(r));
      if (d == NCS_DAMAGE_TRUNCATED)
        q->st->truncated++;
      else
        q->st->damaged++;
    }
    segment_end(q);
    ncs_reader_close(r);
  }
  if (q->xs.oom) sq_oom(q);
  q->st->filter.events_left += q->xs.left, q->st->filter.cannot_tell += q->xs.cannot_tell;
  q->xs.left = q->xs.cannot_tell = 0;
  q->bytes_before += size;
  static const char *const domains[] = {"none", "realtime", "own"};
  sqlite3_stmt *s = q->ins[NCS_SQ_PROCESSES];
  b_u64(s, PR_id, pi), b_txt(s, PR_file, p->path), b_txt(s, PR_host, p->host);
  b_u64(s, PR_pid, p->pid), b_txt(s, PR_plugin_version, q->plugin_version);
  b_u64(s, PR_segments, nseg), b_u64(s, PR_host_id, p->host_index);
  b_i64(s, PR_clock_offset_ns, p->clk_off), b_i64(s, PR_clock_spread_ns, p->clk_spread);
  b_u64(s, PR_clock_pairs, p->clk_pairs), b_i64(s, PR_job_offset_ns, q->a->job->procs[pi].job_off);
  b_txt(s, PR_gpu_clock,
        p->gpu_domain >= 0 && p->gpu_domain <= 2 ? domains[p->gpu_domain] : "none");
  if (p->gpu_domain != NCS_GPU_NONE) {
    b_i64(s, PR_gpu_offset_ns, p->gpu_off), b_i64(s, PR_gpu_gap_p50_ns, p->gap_p50);
    b_i64(s, PR_gpu_gap_p99_ns, p->gap_p99), b_i64(s, PR_gpu_gap_min_ns, p->gap_min);
    b_i64(s, PR_gpu_gap_max_ns, p->gap_max);
  }
  b_u64(s, PR_gpu_gap_samples, p->gap_n), b_u64(s, PR_file_bytes, size);
  b_u64(s, PR_records, records), b_txt(s, PR_damage, damage);
  if (damage) b_txt(s, PR_damage_message, err);
  if (p->ngwin && p->gpu_err >= 0) b_i64(s, PR_gpu_offset_error_ns, p->gpu_err);
  b_u64(s, PR_gpu_clock_windows, p->ngwin), b_u64(s, PR_gpu_clock_steps, p->gpu_steps);
  const ncs_job_gchk_t *g = &p->gchk;
  b_u64(s, PR_gpu_check_ops, g->ops), b_u64(s, PR_gpu_check_repaired, g->repaired);
  b_u64(s, PR_gpu_check_unknown, g->unknown);
  b_u64(s, PR_gpu_check_channels_left_out, g->ch_bad + g->ch_before_prev + g->ch_before_launch +
                                               g->ch_future + g->ch_after_next + g->ch_disagree + g->ch_settling);
  b_u64(s, PR_gpu_check_claims_rejected, g->claims_rejected), b_u64(s, PR_gpu_check_inferred, g->inferred);
  b_u64(s, PR_gpu_check_impossible, g->impossible);
  sq_insert(q, NCS_SQ_PROCESSES);
}

