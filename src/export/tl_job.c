/* tl_job.c - the job tracks and the counters of the timeline (timeline.h, docs/timeline.md).
 *
 * Job tracks: one row per communicator with one slice per collective instance of the job model,
 * from its first rank's arrival to its last rank's completion, with a flow to every rank's Coll
 * slice. Counters: per process, bytes in flight and bus bandwidth, from the Coll/P2p slices. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/timeline.h"
#include "util/fmt.h"

/* ================================================================ counters */

void tl_heap_push(wk_t *w, uint64_t ts, uint32_t proc, uint8_t kind, double d) {
  if (GROW(w->heap, w->heap_cap, w->nheap + 1) != 0) {
    tl_set_oom(w);
    return;
  }
  uint32_t i = w->nheap++;
  while (i) {
    uint32_t p = (i - 1) / 2;
    if (w->heap[p].ts <= ts) break;
    w->heap[i] = w->heap[p];
    i = p;
  }
  w->heap[i] = (cdelta_t){ts, d, proc, kind};
}

static cdelta_t heap_pop(wk_t *w) {
  cdelta_t top = w->heap[0], last = w->heap[--w->nheap];
  uint32_t i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= w->nheap) break;
    if (c + 1 < w->nheap && w->heap[c + 1].ts < w->heap[c].ts) c++;
    if (w->heap[c].ts >= last.ts) break;
    w->heap[i] = w->heap[c];
    i = c;
  }
  if (w->nheap) w->heap[i] = last;
  return top;
}

static const char *const ctr_names[2] = {"bytes in flight", "busbw"};

/* apply the counter changes up to `upto`, in time order, one sample per time and counter */
void tl_counters_flush(wk_t *w, uint64_t upto) {
  while (w->nheap && w->heap[0].ts <= upto) {
    cdelta_t d = heap_pop(w);
    proc_t *p = &w->x->procs[d.proc];
    p->ctr_val[d.kind] += d.delta;
    if (w->nheap && w->heap[0].ts == d.ts && w->heap[0].proc == d.proc &&
        w->heap[0].kind == d.kind)
      continue;
    tl_track_t *t = &p->ctr[d.kind];
    if (!p->ctr_declared[d.kind]) {
      tl_new_track(w, t, TK_COUNTER, p->trk.uuid, p->pid);
      t->name = t->path = ctr_names[d.kind];
      t->order = 2000 + d.kind;
      t->integer = d.kind == 0;
      t->unit_bytes = d.kind == 0;
      t->unit = d.kind == 0 ? NULL : "GB/s";
      t->desc = d.kind == 0 ? "Bytes of the Coll/P2p operations between enqueue and completion."
                            : "Sum of the bus bandwidth of the operations running (GPU time when "
                              "known), as nccl-tests defines it.";
      tl_proc_use(w, d.proc);
      tl_declare(w, w->sink, t);
      p->ctr_declared[d.kind] = 1;
    }
    double v = p->ctr_val[d.kind];
    if (v < 1e-9 && v > -1e-9) v = p->ctr_val[d.kind] = 0;
    w->sink->counter(w->sink, t, d.ts, v);
    w->st.counter_samples++;
  }
}

/* ================================================================ the job tracks */

/* the flow from instance inst's job slice to its operation op's Coll slice */
uint64_t tl_hub_flow(size_t inst, size_t op) { return nz(hm_mix2(0xC011ull + inst, op)); }

static const ncs_job_t *sort_job; /* qsort has no context argument; set under the single thread */
static int cmp_inst(const void *a, const void *b) {
  size_t i = *(const size_t *)a, k = *(const size_t *)b;
  const ncs_inst_t *p = ncs_job_inst(sort_job, i), *q = ncs_job_inst(sort_job, k);
  uint64_t pc = sort_job->comms[p->comm].comm_id, qc = sort_job->comms[q->comm].comm_id;
  if (pc != qc) return pc < qc ? -1 : 1;
  if (p->first_arrival != q->first_arrival) return p->first_arrival < q->first_arrival ? -1 : 1;
  int c = strcmp(p->func, q->func);
  if (c) return c;
  if (p->seq != q->seq) return p->seq < q->seq ? -1 : 1;
  return (i > k) - (i < k);
}

/* a communicator's row: a lane per overlap */
typedef struct {
  lane_t *lanes;
  uint32_t n;
  size_t cap;
  uint32_t comm;
  const char *name;
} jrow_t;

/* a group of the job's tracks ("job", "lost records", ...): written before its first lane;
 * without a filter at once, even when nothing comes (as it always was) */
typedef struct {
  tl_track_t t;
  int declared;
} jgrp_t;

static void jgrp_new(wk_t *w, jgrp_t *g, const char *name, const char *desc, int32_t order) {
  memset(g, 0, sizeof *g);
  tl_new_track(w, &g->t, TK_GROUP, 0, w->x->job_pid);
  g->t.name = g->t.path = name;
  g->t.desc = desc;
  g->t.order = order;
  if (!w->x->xf.active) tl_declare(w, w->x->main_sink, &g->t), g->declared = 1;
}

static lane_t *job_lane(wk_t *w, jrow_t *r, jgrp_t *job, uint64_t start, const char *desc) {
  uint32_t l;
  for (l = 0; l < r->n; l++)
    if (r->lanes[l].last_end <= start) return &r->lanes[l];
  if (GROW(r->lanes, r->cap, r->n + 1) != 0) {
    tl_set_oom(w);
    return NULL;
  }
  if (!job->declared) tl_declare(w, w->x->main_sink, &job->t), job->declared = 1;
  lane_t *ln = &r->lanes[r->n++];
  tl_new_track(w, &ln->t, TK_LANE, job->t.uuid, w->x->job_pid);
  ln->t.name = ln->t.path = ln->t.merge_key = r->name;
  ln->t.lane = (uint16_t)(l < 0xFFFF ? l : 0xFFFF);
  ln->t.sort = l;
  ln->t.desc = desc;
  tl_declare(w, w->x->main_sink, &ln->t);
  return ln;
}

static void job_slice(wk_t *w, const lane_t *ln, size_t ii, const ncs_inst_t *in, uint64_t end,
                      int32_t last_rank) {
  ex_t *x = w->x;
  const ncs_job_comm_t *c = &x->job->comms[in->comm];
  const ncs_op_t *first = ncs_job_op(x->job, in->first_op);
  uint64_t s = (uint64_t)in->first_arrival;
  w->nargs = 0;
  tl_arg_str(w, "comm", ncs_pool_fmt(&w->pool, "c%u", in->comm));
  tl_arg_str(w, "commId", ncs_pool_fmt(&w->pool, NCS_COMM_ID_FMT, c->comm_id));
  tl_arg_str(w, "func", in->func);
  tl_arg_u64(w, "seqNumber", in->seq);
  tl_arg_i64(w, "nranks", c->nranks);
  tl_arg_u64(w, "ranks_seen", in->distinct);
  tl_arg_i64(w, "first_rank", in->first_rank);
  tl_arg_i64(w, "straggler_rank", in->last_rank);
  tl_arg_u64(w, "skew_ns", (uint64_t)(in->last_arrival - in->first_arrival));
  tl_arg_i64(w, "last_to_finish_rank", last_rank);
  tl_arg_u64(w, "span_ns", end - s);
  tl_arg_u64(w, "count", first->count);
  tl_arg_str(w, "datatype", first->dtype);
  /* the model's breakdown and bottleneck label (docs/report.md, "Breakdown") */
  const ncs_bd_t *d = &in->bd;
  tl_arg_str(w, "bottleneck", ncs_bn_names[d->label]);
  if (d->label == NCS_BN_CANNOT) tl_arg_str(w, "bottleneck_reason", ncs_bw_text[d->why]);
  if (d->wait_rank >= 0) tl_arg_i64(w, "bottleneck_rank", d->wait_rank);
  if (d->links) {
    tl_arg_i64(w, "queue_ns", d->queue), tl_arg_i64(w, "launch_ns", d->launch);
    static const char *const keys[NCS_PH_N] = {"gpu_wait_ns", "peer_wait_ns", "network_ns",
                                                "flush_ns"}; /* ncs_ph_names + "_ns" */
    for (int p = 0; p < NCS_PH_N; p++) tl_arg_i64(w, keys[p], d->ph[p]);
    tl_arg_u64(w, "network_bytes", d->bytes);
  }
  tl_flow_t *fl = tl_flows(w, in->nops);
  if (!fl) return;
  uint32_t nf = 0;
  for (uint32_t k = 0; k < in->nops; k++)
    if (x->linked[in->first_op + k]) fl[nf].id = tl_hub_flow(ii, in->first_op + k), fl[nf++].out = 1;
  tl_slice_t sl = {&ln->t, s, in->func, TC_JOB, w->args, w->nargs, fl, nf, nz(hm_mix2(0xC0, ii))};
  x->main_sink->begin(x->main_sink, &sl);
  x->main_sink->end(x->main_sink, &ln->t, end, NULL, 0);
  w->st.slices++, w->st.job_slices++, w->st.coll_flows += nf;
}

void tl_emit_job(wk_t *w) {
  ex_t *x = w->x;
  size_t n = ncs_job_inst_count(x->job);
  size_t *order = malloc((n + 1) * sizeof *order);
  if (!order) {
    tl_set_oom(w);
    return;
  }
  for (size_t i = 0; i < n; i++) order[i] = i;
  sort_job = x->job; /* in order of comm and start, for the lanes */
  if (n > 1) qsort(order, n, sizeof *order, cmp_inst);
  jgrp_t job;
  jgrp_new(w, &job, "job",
           "One row per communicator: one slice per collective instance over all its ranks.", -1);
  jrow_t row = {.comm = NONE32};
  for (size_t i = 0; i < n && !w->oom; i++) {
    const ncs_inst_t *in = ncs_job_inst(x->job, order[i]);
    const ncs_job_comm_t *c = &x->job->comms[in->comm];
    if (in->comm != row.comm) {
      row.comm = in->comm, row.n = 0;
      char cn[160];
      ncs_fmt_comm(cn, sizeof cn, in->comm, c->comm_id, c->name);
      row.name = ncs_pool_fmt(&w->pool, "%s (%d ranks)", cn, c->nranks);
    }
    uint64_t s = (uint64_t)in->first_arrival, e = s + 1;
    int32_t last = -1;
    for (uint32_t k = 0; k < in->nops; k++) { /* the last rank to finish */
      const ncs_op_t *op = ncs_job_op(x->job, in->first_op + k);
      if (tl_op_end(x, op) > e || last < 0) e = max64(e, tl_op_end(x, op)), last = op->rank;
    }
    lane_t *ln = job_lane(w, &row, &job, s,
                          "Collective instances (commId, func, seqNumber) of the job model: from "
                          "the first rank's arrival (its API call) to the last rank's completion. "
                          "skew_ns: last arrival - first arrival; straggler_rank: the rank that "
                          "arrived last.");
    if (!ln) break;
    ln->last_end = e;
    job_slice(w, ln, order[i], in, e, last);
  }
  free(row.lanes);
  free(order);
}

/* What the files lost (docs/model.md, "Coverage"): a row per file with loss windows, a slice per
 * window, on the job's tracks. The windows come by file, then by time. */
void tl_emit_losses(wk_t *w) {
  ex_t *x = w->x;
  const ncs_job_t *j = x->job;
  jgrp_t grp;
  jgrp_new(w, &grp, "lost records",
           "What each trace file says it lost: dropped records, failed writes, damaged ranges, a "
           "damaged tail, or nothing known after the last chunk of a process without a footer.",
           -2);
  jrow_t row = {.comm = NONE32};
  for (uint32_t i = 0; i < j->nlosses && !w->oom; i++) {
    const ncs_job_loss_t *l = &j->losses[i];
    uint64_t s = to_out(x, l->proc, l->from_ns);
    uint64_t e = l->to_ns == UINT64_MAX ? (uint64_t)j->t_last : to_out(x, l->proc, l->to_ns);
    e = max64(e, s + 1);
    if (!ncs_xf_loss(&x->xf, l)) { /* the filter */
      w->st.filter.events_left++;
      continue;
    }
    if (l->proc != row.comm) row.comm = l->proc, row.n = 0, row.name = j->procs[l->proc].path;
    lane_t *ln = job_lane(w, &row, &grp, s, "Loss windows of one trace file (model.h ncs_job_loss_t): "
                                            "records 0 means the count is not known.");
    if (!ln) break;
    ln->last_end = e;
    w->nargs = 0;
    tl_arg_str(w, "kind", ncs_jl_names[l->kind <= NCS_JL_UNKNOWN ? l->kind : 0]);
    tl_arg_u64(w, "records", l->records);
    tl_arg_u64(w, "types", l->types);
    tl_arg_u64(w, "segment", l->seg);
    static const char *const names[] = {"lost", "lost: drops", "lost: no_slot", "lost: write",
                                        "lost: gap", "lost: tail", "lost: unknown"};
    tl_slice_t sl = {&ln->t, s, names[l->kind <= NCS_JL_UNKNOWN ? l->kind : 0], TC_LOSS, w->args,
                     w->nargs, NULL, 0, 0};
    x->main_sink->begin(x->main_sink, &sl);
    x->main_sink->end(x->main_sink, &ln->t, e, NULL, 0);
    w->st.slices++;
  }
  free(row.lanes);
}

/* CUPTI (docs/timeline.md, "GPU"): a row per (file, device, stream) with every kernel CUPTI
 * reported, NCCL's next to the others, so that compute lanes sit beside NCCL's; and the graph
 * replays of captured NCCL operations, a row per (communicator, function) whose lanes merge by
 * that kind (sibling_merge_key), each slice with the capture's metadata. Kernels and replays are
 * in job time already. */
static int cmp_kernel(const void *a, const void *b) {
  const ncs_job_kernel_t *p = *(const ncs_job_kernel_t *const *)a, *q = *(const ncs_job_kernel_t *const *)b;
  if (p->proc != q->proc) return p->proc < q->proc ? -1 : 1;
  if (p->device != q->device) return p->device < q->device ? -1 : 1;
  if (p->stream != q->stream) return p->stream < q->stream ? -1 : 1;
  return (p->start > q->start) - (p->start < q->start);
}

static void gpu_kernels(wk_t *w) {
  ex_t *x = w->x;
  const ncs_job_t *j = x->job;
  const ncs_job_kernel_t **v = malloc((j->nkernels + 1) * sizeof *v);
  if (!v) {
    tl_set_oom(w);
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < j->nkernels; i++)
    if (j->kernels[i].start && j->kernels[i].end >= j->kernels[i].start) v[n++] = &j->kernels[i];
  qsort(v, n, sizeof *v, cmp_kernel);
  jgrp_t grp;
  jgrp_new(w, &grp, "GPU kernels (CUPTI)",
           "Every kernel CUPTI reported, a row per process, GPU and CUDA stream: NCCL's kernels "
           "(func, seqNumber of the operations they ran) next to the compute kernels. Kernels "
           "CUPTI gave no usable times are left out (report: bad_time).",
           -3);
  jrow_t row = {.comm = NONE32};
  const ncs_job_kernel_t *prev = NULL;
  for (size_t i = 0; i < n && !w->oom; i++) {
    const ncs_job_kernel_t *k = v[i];
    if (!ncs_xf_kernel(&x->xf, k)) {
      w->st.filter.events_left++;
      continue;
    }
    if (!prev || k->proc != prev->proc || k->device != prev->device || k->stream != prev->stream) {
      row.n = 0;
      row.name = ncs_pool_fmt(&w->pool, "%s-%" PRIu64 " GPU %d stream %" PRIu64, j->procs[k->proc].host,
                              j->procs[k->proc].pid, k->device, k->stream);
    }
    prev = k;
    uint64_t s = (uint64_t)k->start, e = max64((uint64_t)k->end, s + 1);
    lane_t *ln = job_lane(w, &row, &grp, s, "Kernels of one CUDA stream as CUPTI reported them.");
    if (!ln) break;
    ln->last_end = e;
    w->nargs = 0;
    tl_arg_str(w, "kernel", *k->name ? k->name : "?");
    tl_arg_i64(w, "device", k->device);
    tl_arg_u64(w, "stream", k->stream);
    if (k->nccl) {
      tl_arg_str(w, "func", *k->func ? k->func : "?");
      if (k->seq >= 0) tl_arg_i64(w, "seqNumber", k->seq);
      if (k->rank >= 0) tl_arg_i64(w, "rank", k->rank);
      tl_arg_u64(w, "operations", k->nops);
    }
    if (k->graph) tl_arg_u64(w, "graph", k->graph_id), tl_arg_u64(w, "replay", k->replay);
    const char *name = k->nccl && *k->func ? ncs_pool_fmt(&w->pool, "%s%s", k->func, k->graph ? " (replay)" : "")
                                           : (*k->name ? k->name : "kernel");
    tl_slice_t sl = {&ln->t, s, name, TC_CUPTI, w->args, w->nargs, NULL, 0, 0};
    x->main_sink->begin(x->main_sink, &sl);
    x->main_sink->end(x->main_sink, &ln->t, e, NULL, 0);
    w->st.slices++;
  }
  free(row.lanes);
  free(v);
}

static void gpu_replays(wk_t *w) {
  ex_t *x = w->x;
  const ncs_job_t *j = x->job;
  jgrp_t grp;
  jgrp_new(w, &grp, "CUDA graph replays (CUPTI)",
           "Every replay of a captured NCCL operation, with the capture's metadata (func, count, "
           "datatype, communicator, seqNumber of the capture, replay index): a row per "
           "communicator and function; rows of one kind merge their lanes.",
           -4);
  /* the replays come sorted by (comm, func, seq, replay, rank): a row per (comm, func), lanes
   * by overlap; starts are not in order within a row, so each row takes its own pass */
  size_t i = 0;
  while (i < j->nreplays && !w->oom) {
    size_t e = i;
    while (e < j->nreplays && j->replays[e].comm == j->replays[i].comm && j->replays[e].func == j->replays[i].func) e++;
    const ncs_job_replay_t *r0 = &j->replays[i];
    jrow_t row = {.comm = r0->comm};
    row.name = r0->comm == UINT32_MAX
                   ? ncs_pool_fmt(&w->pool, "replays %s", r0->func)
                   : ncs_pool_fmt(&w->pool, "replays %s comm 0x%016" PRIx64, r0->func, j->comms[r0->comm].comm_id);
    const char *key = ncs_pool_fmt(&w->pool, "replay %s", r0->func);
    for (size_t k = i; k < e && !w->oom; k++) {
      const ncs_job_replay_t *r = &j->replays[k];
      if (!r->start) continue; /* CUPTI gave no usable times */
      uint64_t s = (uint64_t)r->start, en = max64((uint64_t)r->end, s + 1);
      if (!ncs_xf_replay(&x->xf, r)) {
        w->st.filter.events_left++;
        continue;
      }
      lane_t *ln = NULL;
      for (uint32_t l = 0; l < row.n && !ln; l++)
        if (row.lanes[l].last_end <= s) ln = &row.lanes[l];
      if (!ln) {
        ln = job_lane(w, &row, &grp, s, "Replays of captured NCCL operations of one communicator and function.");
        if (!ln) break;
        ln->t.merge_key = key;
      }
      ln->last_end = max64(ln->last_end, en);
      w->nargs = 0;
      tl_arg_str(w, "func", r->func);
      tl_arg_u64(w, "count", r->count);
      tl_arg_str(w, "datatype", r->dtype);
      tl_arg_u64(w, "bytes", r->bytes);
      if (r->comm != UINT32_MAX) tl_arg_ptr(w, "commId", j->comms[r->comm].comm_id);
      tl_arg_i64(w, "rank", r->rank);
      tl_arg_i64(w, "capture_seqNumber", r->seq);
      tl_arg_u64(w, "replay", r->replay);
      tl_arg_u64(w, "graph", r->graph);
      tl_arg_str(w, "kernel", r->name);
      tl_arg_i64(w, "device", r->device);
      tl_arg_str(w, "gpu_source", "cupti");
      tl_slice_t sl = {&ln->t, s, r->func, TC_REPLAY, w->args, w->nargs, NULL, 0, 0};
      x->main_sink->begin(x->main_sink, &sl);
      x->main_sink->end(x->main_sink, &ln->t, en, NULL, 0);
      w->st.slices++;
    }
    free(row.lanes);
    i = e;
  }
}

void tl_emit_gpu(wk_t *w) {
  if (w->x->job->nkernels) gpu_kernels(w);
  if (w->x->job->nreplays) gpu_replays(w);
}

/* User ranges (docs/ranges.md, docs/timeline.md "Range tracks"): the job model's ranges of file
 * fi, on a row per rank and thread under the rank's process ("ranges · thread N"), a lane per
 * nesting level as they overlap. A range whose end is unknown (end_lost, open) runs to its noted
 * end, or the job's last event, and has no numbers; the model gives them by file, then begin. */
void tl_emit_ranges(wk_t *w, uint32_t fi) {
  ex_t *x = w->x;
  const ncs_job_t *j = x->job;
  const file_t *f = &x->files[fi];
  const ncs_job_rproc_t *rp = j->rprocs ? &j->rprocs[fi] : NULL; /* NULL: no file has ranges */
  jrow_t *rows = NULL;
  uint32_t *keyp = NULL, *keyt = NULL, nrows = 0;
  size_t cap = 0, kcap = 0, kcap2 = 0;
  for (size_t i = 0; i < j->nranges && !w->oom; i++) {
    const ncs_job_range_t *r = &j->ranges[i];
    if (r->proc != fi) continue;
    if (!ncs_xf_range(&x->xf, r)) { /* the filter */
      w->xs.left++;
      continue;
    }
    uint32_t p = f->p0;
    for (uint32_t q = f->p0; q < f->p1; q++)
      if (x->procs[q].rank == r->rank) p = q;
    uint32_t k;
    for (k = 0; k < nrows; k++)
      if (keyp[k] == p && keyt[k] == r->thread) break;
    if (k == nrows) {
      if (GROW(rows, cap, nrows + 1) || GROW(keyp, kcap, nrows + 1) || GROW(keyt, kcap2, nrows + 1)) {
        tl_set_oom(w);
        break;
      }
      rows[k] = (jrow_t){.comm = p, .name = ncs_pool_fmt(&w->pool, "ranges \xc2\xb7 thread %u", r->thread)};
      keyp[k] = p, keyt[k] = r->thread, nrows++;
    }
    jrow_t *row = &rows[k];
    proc_t *pr = &x->procs[p];
    uint64_t s = (uint64_t)r->begin;
    uint64_t e = r->state == NCS_JR_ENDED || r->end > r->begin ? (uint64_t)r->end : (uint64_t)j->t_last;
    e = max64(e, s + 1);
    lane_t *ln = NULL;
    for (uint32_t l = 0; l < row->n && !ln; l++)
      if (row->lanes[l].last_end <= s) ln = &row->lanes[l];
    if (!ln) {
      if (GROW(row->lanes, row->cap, row->n + 1)) {
        tl_set_oom(w);
        break;
      }
      uint32_t l = row->n++;
      ln = &row->lanes[l];
      tl_new_track(w, &ln->t, TK_LANE, pr->trk.uuid, pr->pid);
      tl_proc_use(w, p);
      ln->t.name = ln->t.path = ln->t.merge_key = row->name;
      ln->t.lane = (uint16_t)(l < 0xFFFF ? l : 0xFFFF);
      ln->t.order = -1;
      ln->t.sort = l;
      ln->t.desc = "User ranges of one thread (NVTX, ncclscope's API): name, domain, state "
                   "(ended, end_lost, open: no end in the trace, drawn to the last event), "
                   "lower_bound, and their numbers (docs/ranges.md); no numbers without an end.";
      tl_declare(w, w->sink, &ln->t);
    }
    ln->last_end = e;
    w->nargs = 0;
    tl_arg_str(w, "domain", r->domain);
    tl_arg_str(w, "state", ncs_jr_names[r->state >= 0 && r->state <= 2 ? r->state : 2]);
    tl_arg_u64(w, "lower_bound", r->before ? 1 : 0);
    tl_arg_u64(w, "range_id", r->id);
    tl_arg_u64(w, "thread", r->thread);
    tl_arg_u64(w, "depth", r->depth);
    tl_arg_i64(w, "rank", r->rank);
    tl_arg_str(w, "kind", r->flags & NCS_RF_STARTEND ? "start/end" : r->flags & NCS_RF_API ? "api" : "nvtx");
    const ncs_rs_stat_t *st = &r->st;
    if (!(st->flags & NCS_RS_NO_END)) {
      tl_arg_u64(w, "wall_ns", st->wall_ns);
      tl_arg_u64(w, "colls", st->colls);
      tl_arg_u64(w, "p2ps", st->p2ps);
      tl_arg_u64(w, "bytes", st->bytes);
      tl_arg_u64(w, "comm_ns", st->comm_ns);
      tl_arg_u64(w, "comm_lower_bound", st->flags & NCS_RS_COMM_PARTIAL ? 1 : 0);
      if (!(st->flags & NCS_RS_NO_KERNELS)) {
        tl_arg_u64(w, "kernels", st->kernels);
        tl_arg_u64(w, "compute_ns", st->compute_ns);
        tl_arg_u64(w, "busy_ns", st->busy_ns);
        tl_arg_u64(w, "exposed_ns", st->exposed_ns);
      }
      for (uint32_t m = 0; rp && m < r->nvalues && m < rp->nmetrics && w->nargs < MAX_ARGS; m++) {
        w->args[w->nargs].name = rp->metric[m];
        w->args[w->nargs].kind = TA_DBL;
        w->args[w->nargs++].v.d = j->range_values[r->values + m];
      }
    }
    tl_slice_t sl = {&ln->t, s, *r->name ? r->name : "(unnamed)", TC_RANGE, w->args, w->nargs, NULL, 0, 0};
    w->sink->begin(w->sink, &sl);
    w->sink->end(w->sink, &ln->t, e, NULL, 0);
    w->st.slices++;
  }
  for (uint32_t k = 0; k < nrows; k++) free(rows[k].lanes);
  free(rows), free(keyp), free(keyt);
}

/* A filtered export says what it covers (docs/timeline.md, "Filters"): a track "export filter"
 * under the job with one slice over the window (the whole job without one), named after the
 * filter, whose arguments count what passed and what was left out; Chrome JSON also has them in
 * its otherData. Written last, as a sequence of its own, when every count is known. */
void tl_emit_filter(wk_t *w, const ncs_xf_stats_t *fs) {
  ex_t *x = w->x;
  const ncs_job_t *j = x->job;
  tl_sink_t *ms = x->main_sink;
  ms->seq_begin(ms, x->nfiles + 2);
  int nothing = !fs->ops_kept;
  jgrp_t grp;
  jgrp_new(w, &grp, "export filter",
           "What this export covers: only the operations that passed the filter (ncclscope export "
           "--comm/--rank/--from/--to, docs/cli.md \"Filters\"), whole, and the other events of "
           "the ranks and the time it selects. The slice spans the window; its arguments count "
           "what was left out.",
           -10);
  jrow_t row = {.comm = NONE32, .name = "export filter"};
  int64_t s = j->t_first, e = j->t_last;
  if (x->xf.from > s) s = x->xf.from < e ? x->xf.from : e;
  if (x->xf.to < e) e = x->xf.to > s ? x->xf.to : s;
  if (e <= s) e = s + 1;
  lane_t *ln = job_lane(w, &row, &grp, (uint64_t)s, "The export's filter and what it left out.");
  if (!ln) return;
  w->nargs = 0;
  tl_arg_str(w, "filter", ncs_pool_str(&w->pool, fs->text));
  tl_arg_str(w, "result", nothing ? "no collective or send/receive passed the filter"
                                  : "only what passed the filter is in this file");
  tl_arg_u64(w, "instances_kept", fs->inst_kept);
  tl_arg_u64(w, "operations_kept", fs->ops_kept);
  tl_arg_u64(w, "instances_left_out", fs->inst_left);
  tl_arg_u64(w, "p2p_left_out", fs->p2p_left);
  tl_arg_u64(w, "events_left_out", fs->events_left);
  tl_arg_u64(w, "operations_cannot_tell", fs->cannot_tell);
  tl_arg_i64(w, "window_from_job_ns", s); /* the slice's span, in job time (docs/model.md) */
  tl_arg_i64(w, "window_to_job_ns", e);
  tl_arg_i64(w, "time_zero_job_ns", (int64_t)x->origin); /* Chrome JSON's ts 0 */
  uint32_t n = w->nargs < sizeof x->fmeta / sizeof x->fmeta[0] ? w->nargs
                                                                : sizeof x->fmeta / sizeof x->fmeta[0];
  memcpy(x->fmeta, w->args, n * sizeof *w->args);
  ms->meta = x->fmeta, ms->nmeta = n;
  const char *name = ncs_pool_fmt(&w->pool, "%s: %s", nothing ? "filter (nothing passed)" : "filter",
                                  fs->text);
  tl_slice_t sl = {&ln->t, (uint64_t)s, name, TC_FILTER, w->args, w->nargs, NULL, 0, 0};
  ms->begin(ms, &sl);
  ms->end(ms, &ln->t, (uint64_t)e, NULL, 0);
  w->st.slices++;
  free(row.lanes);
}
