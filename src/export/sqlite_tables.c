/* sqlite_tables.c - the tables of the job model and the analysis (hosts, comms, ranks,
 * collectives, buckets, p2p) and meta (sqlite_int.h, docs/sqlite.md). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/findings.h"
#include "export/sqlite_int.h"
#include "util/fmt.h"

/* ================================================================ the analysis tables */

/* what the files lost: the job model's loss windows (docs/model.md, "Coverage") */
static void losses(sq_t *q) {
  const ncs_job_t *j = q->a->job;
  sqlite3_stmt *s = q->ins[NCS_SQ_LOSSES];
  for (uint32_t i = 0; i < j->nlosses; i++) {
    const ncs_job_loss_t *l = &j->losses[i];
    if (!ncs_xf_loss(&q->xf, l)) { /* the filter */
      q->rows_left++;
      continue;
    }
    b_u64(s, LS_id, i), b_u64(s, LS_process_id, l->proc), b_u64(s, LS_segment, l->seg);
    b_txt(s, LS_kind, ncs_jl_names[l->kind]), b_u64(s, LS_from_mono_ns, l->from_ns);
    if (l->to_ns != UINT64_MAX) b_u64(s, LS_to_mono_ns, l->to_ns); /* NULL: to the end */
    if (l->records) b_u64(s, LS_records, l->records);                /* NULL: not known */
    b_u64(s, LS_types, l->types);
    sq_insert(q, NCS_SQ_LOSSES);
  }
}

/* the report's findings as report --json gives them with its default --top (its "findings"),
 * one row each; a stall with its own numbers */
static void findings(sq_t *q, const ncs_findings_t *f) {
  const ncs_analysis_t *a = q->a;
  sqlite3_stmt *s = q->ins[NCS_SQ_FINDINGS];
  for (uint32_t k = 0; k < f->n; k++) {
    const ncs_finding_t *y = &f->items[k];
    char line[2048];
    ncs_finding_text(a, y, line, sizeof line);
    b_u64(s, FD_id, k), b_txt(s, FD_kind, ncs_find_kind_names[y->kind]), b_i64(s, FD_headline, y->headline);
    if (y->rank) b_i64(s, FD_comm, y->rank->comm), b_i64(s, FD_rank, y->rank->rank);
    else if (y->stall) {
      b_i64(s, FD_comm, y->stall->comm);
      if (y->stall->rank >= 0) b_i64(s, FD_rank, y->stall->rank);
    }
    b_i64(s, FD_size_ns, y->size_ns), b_dbl(s, FD_size_share, y->share);
    if (y->side) b_txt(s, FD_wait_side, y->side == NCS_SIDE_GPU ? "gpu" : y->side == NCS_SIDE_HOST ? "host" : "mixed");
    if (y->stall) {
      const ncs_an_stall_t *x = y->stall;
      b_txt(s, FD_func, x->func), b_u64(s, FD_seq, x->seq), b_u64(s, FD_bytes, x->bytes);
      b_i64(s, FD_from_job_ns, x->from - a->job->t_first), b_i64(s, FD_others, x->others);
      b_i64(s, FD_wait_ns, x->wait), b_i64(s, FD_longest_ns, x->longest), b_i64(s, FD_caused_ns, x->caused);
      b_u64(s, FD_knock_ons, x->knock_ons);
    }
    b_txt(s, FD_text, line);
    sq_insert(q, NCS_SQ_FINDINGS);
  }
}

/* the breakdown (docs/report.md, "Breakdown"): the model's per collective instance, and per
 * retained operation its links and NetPlugin QPs; nothing is computed here */
static void breakdown_row(sq_t *q, size_t i, const ncs_bd_t *d) {
  sqlite3_stmt *s = q->ins[NCS_SQ_BREAKDOWN];
  b_u64(s, BD_collective_id, i + 1), b_txt(s, BD_label, ncs_bn_names[d->label]);
  if (d->label == NCS_BN_CANNOT) b_txt(s, BD_reason, ncs_bw_text[d->why]);
  if (d->wait_rank >= 0) b_i64(s, BD_wait_rank, d->wait_rank);
  b_i64(s, BD_launch_ns, d->launch), b_i64(s, BD_span_ns, d->span);
  b_i64(s, BD_queue_ns, d->queue), b_u64(s, BD_queue_unknown, d->q_unknown);
  b_i64(s, BD_gpu_wait_ns, d->ph[NCS_PH_GPU]), b_i64(s, BD_peer_wait_ns, d->ph[NCS_PH_PEER]);
  b_i64(s, BD_network_ns, d->ph[NCS_PH_NET]), b_i64(s, BD_flush_ns, d->ph[NCS_PH_FLUSH]);
  b_u64(s, BD_network_bytes, d->bytes), b_u64(s, BD_links, d->links), b_u64(s, BD_steps, d->steps);
  sq_insert(q, NCS_SQ_BREAKDOWN);
}

static void link_rows(sq_t *q, size_t k, const ncs_op_t *o) {
  static const char *const kinds[3] = {NULL, "ib", "socket"};
  for (uint32_t l = 0; l < o->nlinks && !q->failed; l++) {
    const ncs_link_t *L = &o->links[l];
    sqlite3_stmt *s = q->ins[NCS_SQ_LINKS];
    b_u64(s, LK_id, ++q->next_row[NCS_SQ_LINKS]), b_nz(s, LK_operation_id, q->op_row[k]);
    if (o->inst != SIZE_MAX) b_u64(s, LK_collective_id, o->inst + 1);
    b_u64(s, LK_comm, o->comm), b_i64(s, LK_rank, o->rank), b_i64(s, LK_peer, L->peer);
    b_u64(s, LK_channel, L->channel), b_i64(s, LK_is_send, L->is_send);
    b_u64(s, LK_steps, L->steps), b_u64(s, LK_bytes, L->bytes);
    if (L->t0) b_i64(s, LK_start_job_ns, L->t0), b_i64(s, LK_stop_job_ns, L->t1);
    if (L->first_data) b_i64(s, LK_first_data_job_ns, L->first_data);
    b_i64(s, LK_gpu_wait_ns, L->ph[NCS_PH_GPU]), b_i64(s, LK_peer_wait_ns, L->ph[NCS_PH_PEER]);
    b_i64(s, LK_network_ns, L->ph[NCS_PH_NET]), b_i64(s, LK_flush_ns, L->ph[NCS_PH_FLUSH]);
    b_i64(s, LK_open, L->open), b_i64(s, LK_proxy_lost, o->proxy_lost);
    sq_insert(q, NCS_SQ_LINKS);
  }
  for (uint32_t n = 0; n < o->nnetq && !q->failed; n++) {
    const ncs_netq_t *x = &o->netq[n];
    sqlite3_stmt *s = q->ins[NCS_SQ_NET_QPS];
    b_u64(s, NQ_id, ++q->next_row[NCS_SQ_NET_QPS]), b_nz(s, NQ_operation_id, q->op_row[k]);
    if (o->inst != SIZE_MAX) b_u64(s, NQ_collective_id, o->inst + 1);
    b_u64(s, NQ_comm, o->comm), b_i64(s, NQ_rank, o->rank);
    if (x->kind == 1 || x->kind == 2) {
      b_txt(s, NQ_kind, kinds[x->kind]), b_i64(s, NQ_qp, x->qp);
      if (x->kind == 1) b_i64(s, NQ_device, x->device);
    }
    b_u64(s, NQ_events, x->events), b_u64(s, NQ_bytes, x->bytes), b_i64(s, NQ_busy_ns, x->ns);
    sq_insert(q, NCS_SQ_NET_QPS);
  }
}

/* CUPTI's kernels (the job model keeps them: retain) and the overlap per GPU (docs/sqlite.md) */
static void gpu_tables(sq_t *q) {
  const ncs_job_t *j = q->a->job;
  sqlite3_stmt *s = q->ins[NCS_SQ_KERNELS];
  for (size_t i = 0; i < j->nkernels; i++) {
    const ncs_job_kernel_t *k = &j->kernels[i];
    if (!ncs_xf_kernel(&q->xf, k)) { /* the filter */
      q->rows_left++;
      continue;
    }
    b_u64(s, KN_id, i), b_u64(s, KN_process_id, k->proc), b_u64(s, KN_segment, k->seg);
    b_i64(s, KN_device, k->device), b_u64(s, KN_stream, k->stream), b_txt(s, KN_name, k->name);
    if (k->start) b_i64(s, KN_start_job_ns, k->start), b_i64(s, KN_end_job_ns, k->end);
    b_u64(s, KN_nccl, k->nccl);
    if (k->comm != UINT32_MAX) b_u64(s, KN_comm, k->comm);
    if (k->rank >= 0) b_i64(s, KN_rank, k->rank);
    if (*k->func) b_txt(s, KN_func, k->func);
    if (k->seq >= 0) b_i64(s, KN_seq, k->seq);
    b_u64(s, KN_n_ops, k->nops);
    if (k->graph) b_u64(s, KN_graph_id, k->graph_id), b_u64(s, KN_replay, k->replay);
    sq_insert(q, NCS_SQ_KERNELS);
  }
  s = q->ins[NCS_SQ_GPU_DEVICES];
  for (uint32_t d = 0; d < q->a->gpu.ndevs; d++) {
    const ncs_an_gdev_t *x = &q->a->gpu.devs[d];
    const ncs_job_gpu_dev_t *D = &j->gdevs[x->dev];
    b_u64(s, GD_id, d), b_u64(s, GD_process_id, D->proc), b_i64(s, GD_device, D->device);
    if (D->comm != UINT32_MAX) b_u64(s, GD_comm, D->comm), b_i64(s, GD_rank, D->rank);
    b_u64(s, GD_nccl_kernels, D->nccl_kernels), b_u64(s, GD_compute_kernels, D->compute_kernels);
    b_i64(s, GD_from_job_ns, D->from), b_i64(s, GD_to_job_ns, D->to);
    if (x->known) { /* NULL: CUPTI lost records of the file (cannot_tell says which) */
      b_i64(s, GD_comm_ns, x->ov.comm_ns), b_i64(s, GD_compute_ns, x->ov.compute_ns);
      b_i64(s, GD_overlap_ns, x->ov.overlap_ns), b_i64(s, GD_exposed_ns, x->ov.exposed_ns);
    } else {
      b_txt(s, GD_cannot_tell, x->why);
    }
    sq_insert(q, NCS_SQ_GPU_DEVICES);
  }
}

/* user ranges: the job model's, with their numbers (docs/sqlite.md "ranges"); NULL where a number
 * cannot be told (no end, no GPU time, no compute kernels) */
static void ranges(sq_t *q) {
  const ncs_job_t *j = q->a->job;
  sqlite3_stmt *s = q->ins[NCS_SQ_RANGES];
  for (size_t i = 0; i < j->nranges; i++) {
    const ncs_job_range_t *x = &j->ranges[i];
    const ncs_rs_stat_t *st = &x->st;
    if (!ncs_xf_range(&q->xf, x)) { /* the filter (a kept range's parents stay) */
      q->rows_left++;
      continue;
    }
    b_u64(s, RG_id, i), b_u64(s, RG_process_id, x->proc), b_u64(s, RG_segment, x->seg);
    b_u64(s, RG_range_id, x->id);
    if (x->parent != SIZE_MAX) b_u64(s, RG_parent, x->parent);
    if (x->rank >= 0) b_i64(s, RG_rank, x->rank);
    b_u64(s, RG_thread, x->thread), b_u64(s, RG_depth, x->depth);
    b_txt(s, RG_name, x->name), b_txt(s, RG_domain, x->domain);
    b_txt(s, RG_kind, (x->flags & NCS_RF_STARTEND) ? "startend" : (x->flags & NCS_RF_API) ? "api" : "nvtx");
    b_txt(s, RG_state, ncs_jr_names[x->state]);
    b_i64(s, RG_begin_job_ns, x->begin);
    if (!(st->flags & NCS_RS_NO_END)) {
      b_i64(s, RG_lower_bound, (st->flags & NCS_RS_PARTIAL) != 0);
      b_i64(s, RG_end_job_ns, x->end), b_u64(s, RG_wall_ns, st->wall_ns);
      b_u64(s, RG_colls, st->colls), b_u64(s, RG_p2ps, st->p2ps);
      b_u64(s, RG_ops_without_gpu, st->ops_without_gpu), b_u64(s, RG_bytes, st->bytes);
      b_dbl(s, RG_bus_bytes, st->bus_bytes), b_u64(s, RG_comm_ns, st->comm_ns);
      b_i64(s, RG_comm_lower_bound, (st->flags & NCS_RS_COMM_PARTIAL) != 0);
      if (st->comm_ns) b_dbl(s, RG_busbw_gbps, st->bus_gbps);
      if (!(st->flags & NCS_RS_NO_KERNELS)) {
        b_u64(s, RG_kernels, st->kernels), b_u64(s, RG_compute_ns, st->compute_ns);
        b_u64(s, RG_busy_ns, st->busy_ns), b_u64(s, RG_exposed_ns, st->exposed_ns);
      }
    }
    b_i64(s, RG_replay, x->replay);
    sq_insert(q, NCS_SQ_RANGES);
    const ncs_job_rproc_t *rp = &j->rprocs[x->proc];
    for (uint32_t m = 0; m < x->nvalues && m < rp->nmetrics; m++) {
      sqlite3_stmt *t = q->ins[NCS_SQ_RANGE_METRICS];
      b_u64(t, RM_range_id, i), b_txt(t, RM_metric, rp->metric[m]);
      b_txt(t, RM_type, ncs_metric_type_name(rp->metric_type[m]));
      b_dbl(t, RM_value, j->range_values[x->values + m]);
      sq_insert(q, NCS_SQ_RANGE_METRICS);
    }
  }
}

void sq_analysis_tables(sq_t *q) {
  const ncs_analysis_t *a = q->a;
  sqlite3_stmt *s;
  losses(q);
  gpu_tables(q);
  ranges(q);
  for (uint32_t h = 0; h < a->job->nhosts; h++) {
    s = q->ins[NCS_SQ_HOSTS];
    b_u64(s, HO_id, h), b_txt(s, HO_host, a->job->hosts[h].host);
    b_i64(s, HO_offset_ns, a->job->hosts[h].offset), b_i64(s, HO_error_ns, a->job->hosts[h].error);
    b_u64(s, HO_samples, a->job->hosts[h].samples);
    sq_insert(q, NCS_SQ_HOSTS);
  }
  for (uint32_t c = 0; c < a->job->ncomms; c++) {
    const ncs_job_comm_t *ci = &a->job->comms[c];
    char hex[24];
    snprintf(hex, sizeof hex, NCS_COMM_ID_FMT, ci->comm_id);
    s = q->ins[NCS_SQ_COMMS];
    char label[16];
    ncs_fmt_comm_label(label, sizeof label, c);
    b_u64(s, CM_id, c), b_txt(s, CM_label, label);
    b_u64(s, CM_comm_id, ci->comm_id), b_txt(s, CM_comm_hex, hex);
    if (*ci->name) b_txt(s, CM_name, ci->name);
    b_i64(s, CM_nranks, ci->nranks), b_i64(s, CM_nnodes, ci->nnodes);
    b_i64(s, CM_ranks_seen, ci->ranks_seen);
    sq_insert(q, NCS_SQ_COMMS);
  }
  /* ranks: the report's per-rank totals belong to (comm, rank) and the process of its first
   * operation */
  hmap_t am = {0};
  for (uint32_t k = 0; k < a->nranks; k++)
    if (hm_put(&am, ((uint64_t)a->ranks[k].comm << 32) | (uint32_t)a->ranks[k].rank, k) != 0) {
      hm_free(&am);
      sq_oom(q);
      return;
    }
  for (uint32_t k = 0; k < q->nrank_rows; k++) {
    const ncs_job_member_t *r = &a->job->members[q->rank_first[k]];
    s = q->ins[NCS_SQ_RANKS];
    b_u64(s, RK_id, k + 1), b_i64(s, RK_comm, r->comm), b_i64(s, RK_rank, r->rank);
    b_u64(s, RK_process_id, r->proc), b_u64(s, RK_segment, r->seg);
    b_u64(s, RK_comm_index, r->index), b_u64(s, RK_abi_version, r->abi);
    if (r->device >= 0) b_i64(s, RK_device, r->device);
    if (*r->bus_id) b_txt(s, RK_bus_id, r->bus_id);
    b_nz(s, RK_init_mono_ns, r->init_ns), b_nz(s, RK_finalize_mono_ns, r->fin_ns);
    uint64_t ai;
    if (hm_get(&am, ((uint64_t)r->comm << 32) | (uint32_t)r->rank, &ai) &&
        a->ranks[ai].proc == r->proc) {
      const ncs_an_rank_t *x = &a->ranks[ai];
      b_u64(s, RK_instances, x->instances), b_u64(s, RK_last_arrivals, x->last);
      b_i64(s, RK_wait_caused_ns, x->wait_caused), b_i64(s, RK_wait_suffered_ns, x->wait_suffered);
      b_u64(s, RK_slowest, x->slowest), b_i64(s, RK_excess_ns, x->excess);
      b_i64(s, RK_kernel_wait_ns, x->kwait), b_i64(s, RK_transfer_ns, x->transfer);
      if (x->launch_n) b_i64(s, RK_launch_delay_mean_ns, x->launch_sum / (int64_t)x->launch_n);
      if (x->launch_n) b_i64(s, RK_queue_delay_mean_ns, x->queue_sum / (int64_t)x->launch_n);
    }
    sq_insert(q, NCS_SQ_RANKS);
  }
  hm_free(&am);
  size_t ni = ncs_job_inst_count(a->job);
  for (size_t i = 0; i < ni && !q->failed; i++) {
    const ncs_inst_t *in = ncs_job_inst(a->job, i);
    const ncs_an_instance_t *x = ncs_an_instance(a, i);
    if (!x) continue;
    s = q->ins[NCS_SQ_COLLECTIVES];
    int32_t nr = a->job->comms[in->comm].nranks;
    b_u64(s, CO_id, i + 1), b_u64(s, CO_comm, in->comm), b_txt(s, CO_func, in->func);
    b_u64(s, CO_seq, in->seq), b_u64(s, CO_bytes, x->bytes), b_i64(s, CO_size_log2, x->log2);
    b_i64(s, CO_nranks, nr), b_u64(s, CO_nranks_seen, in->nops);
    b_i64(s, CO_complete, (int32_t)in->nops >= nr), b_i64(s, CO_latency_ns, x->latency);
    b_txt(s, CO_timing, ncs_src_names[x->timing]);
    b_i64(s, CO_median_duration_ns, x->median_duration);
    b_dbl(s, CO_algbw_gbs, x->algbw), b_dbl(s, CO_busbw_gbs, x->busbw);
    b_i64(s, CO_first_arrival_job_ns, in->first_arrival);
    b_i64(s, CO_last_arrival_job_ns, in->last_arrival), b_i64(s, CO_skew_ns, x->skew);
    b_i64(s, CO_first_rank, in->first_rank), b_i64(s, CO_last_rank, in->last_rank);
    b_i64(s, CO_last_counted, x->last_counted), b_i64(s, CO_wait_caused_ns, x->wait_caused);
    if (x->slowest_rank >= 0)
      b_i64(s, CO_slowest_rank, x->slowest_rank), b_i64(s, CO_slowest_excess_ns, x->slowest_excess);
    b_i64(s, CO_unsampled, x->unsampled != 0);
    b_i64(s, CO_gpu_suspect, x->gpu_suspect != 0);
    b_i64(s, CO_no_gpu_time, x->no_gpu != 0);
    sq_insert(q, NCS_SQ_COLLECTIVES);
    breakdown_row(q, i, &in->bd);
  }
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    const ncs_an_bucket_t *b = &a->buckets[k];
    s = q->ins[NCS_SQ_BUCKETS];
    b_u64(s, BK_id, k + 1), b_u64(s, BK_comm, b->comm), b_txt(s, BK_func, b->func);
    b_i64(s, BK_p2p, b->p2p), b_i64(s, BK_size_log2, b->log2);
    b_u64(s, BK_bytes_lo, b->log2 < 0 ? 0 : 1ull << b->log2);
    b_u64(s, BK_bytes_hi, b->log2 < 0 ? 1 : 2ull << b->log2);
    b_u64(s, BK_count, b->count), b_u64(s, BK_bytes, b->bytes);
    b_u64(s, BK_timing_kernel_gpu, b->src[NCS_SRC_KERNEL_GPU]);
    b_u64(s, BK_timing_proxy_host, b->src[NCS_SRC_PROXY_HOST]);
    b_u64(s, BK_timing_enqueue_host, b->src[NCS_SRC_ENQUEUE_HOST]);
    if (b->count) { /* else no instance has a GPU time: NULL, not 0 */
      b_dbl(s, BK_lat_p50_ns, b->lat_p50), b_dbl(s, BK_lat_p95_ns, b->lat_p95);
      b_dbl(s, BK_lat_p99_ns, b->lat_p99), b_dbl(s, BK_algbw_p50_gbs, b->algbw_p50);
      b_dbl(s, BK_busbw_p50_gbs, b->busbw_p50), b_dbl(s, BK_busbw_p95_gbs, b->busbw_p95);
      b_dbl(s, BK_busbw_p99_gbs, b->busbw_p99), b_dbl(s, BK_skew_p50_ns, b->skew_p50);
      b_dbl(s, BK_skew_max_ns, b->skew_max);
    }
    b_u64(s, BK_no_gpu_time, b->no_gpu), b_u64(s, BK_unsampled, b->unsampled);
    if (b->lat_ci) b_dbl(s, BK_lat_p50_ci_lo_ns, b->lat_p50_lo), b_dbl(s, BK_lat_p50_ci_hi_ns, b->lat_p50_hi);
    if (b->bd_label >= 0) { /* collectives only */
      b_txt(s, BK_bd_label, ncs_bn_names[b->bd_label]);
      if (b->bd_label == NCS_BN_CANNOT) b_txt(s, BK_bd_reason, ncs_bw_text[b->bd_reason]);
      if (b->bd_wait_rank >= 0) b_i64(s, BK_bd_wait_rank, b->bd_wait_rank);
    }
    sq_insert(q, NCS_SQ_BUCKETS);
  }
  for (size_t k = 0; k < q->nops && !q->failed; k++) {
    const ncs_op_t *o = ncs_job_op(a->job, k);
    if (o) link_rows(q, k, o);
  }
  /* send/receive pairs: each pair once, from its send */
  for (size_t k = 0; k < q->nops && !q->failed; k++) {
    const ncs_op_t *xp = ncs_job_op(a->job, k), *yp;
    if (!xp || !xp->p2p || !xp->is_send || xp->pair == SIZE_MAX || !(yp = ncs_job_op(a->job, xp->pair)))
      continue;
    const ncs_op_t x = *xp, y = *yp;
    s = q->ins[NCS_SQ_P2P];
    b_u64(s, PP_id, ++q->next_row[NCS_SQ_P2P]), b_u64(s, PP_comm, x.comm);
    b_i64(s, PP_sender, x.rank), b_i64(s, PP_receiver, y.rank), b_u64(s, PP_pair_order, x.order);
    b_nz(s, PP_send_id, q->op_row[k]), b_nz(s, PP_recv_id, q->op_row[x.pair]);
    b_u64(s, PP_send_bytes, x.bytes), b_u64(s, PP_recv_bytes, y.bytes);
    b_i64(s, PP_send_arrival_job_ns, x.arrival), b_i64(s, PP_recv_arrival_job_ns, y.arrival);
    b_i64(s, PP_send_duration_ns, x.duration), b_i64(s, PP_recv_duration_ns, y.duration);
    sq_insert(q, NCS_SQ_P2P);
  }
}

static void meta_txt(sq_t *q, const char *k, const char *v) {
  sqlite3_stmt *s = q->ins[NCS_SQ_META];
  b_txt(s, MT_key, k), b_txt(s, MT_value, v);
  sq_insert(q, NCS_SQ_META);
}
static void meta_i64(sq_t *q, const char *k, int64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRId64, v);
  meta_txt(q, k, b);
}

/* what the job covers and lost, and the report's warnings (docs/sqlite.md, "meta") */
static void meta_coverage(sq_t *q) {
  const ncs_analysis_t *a = q->a;
  char k[64];
  meta_i64(q, "unreadable_files", a->cov.unreadable);
  meta_i64(q, "duplicate_files", a->cov.duplicates);
  meta_i64(q, "other_run_files", a->cov.other_job);
  meta_i64(q, "run", a->job->job), meta_i64(q, "runs", a->job->njobs);
  meta_i64(q, "segments_without_footer", a->cov.no_footer);
  meta_i64(q, "operation_calls", (int64_t)a->cov.op_calls);
  meta_i64(q, "operation_calls_lost", (int64_t)a->cov.op_lost);
  meta_i64(q, "write_errors", (int64_t)a->cov.write_errors);
  meta_i64(q, "damaged_operations", (int64_t)a->cov.damaged_ops);
  meta_i64(q, "untracked_communicators", (int64_t)a->cov.comms_untracked);
  meta_i64(q, "operations_without_communicator", (int64_t)a->cov.no_comm_ops);
  meta_i64(q, "evicted_events", (int64_t)a->cov.evicted);
  meta_i64(q, "evicted_operations", (int64_t)a->cov.evicted_ops);
  meta_i64(q, "gaps", (int64_t)a->cov.gaps);
  for (unsigned t = 1; t <= NCS_JL_UNKNOWN; t++) {
    snprintf(k, sizeof k, "lost_records_%s", ncs_jl_names[t]);
    meta_i64(q, k, (int64_t)a->cov.lost[t]);
  }
  for (unsigned t = 0; t < NCS_SRC_N; t++) {
    snprintf(k, sizeof k, "timing_%s", ncs_src_names[t]);
    meta_i64(q, k, (int64_t)a->cov.timing[t]);
  }
  ncs_findings_t f;
  ncs_findings_build(&f, a, NCS_FIND_TOP);
  findings(q, &f);
  for (uint32_t i = 0; i < f.nwarn; i++) {
    /* a key said again (one warning per unreadable file): warning_KEY, warning_KEY_2, ... */
    uint32_t same = 1;
    for (uint32_t z = 0; z < i; z++) same += !strcmp(f.warn[z].key, f.warn[i].key);
    if (same == 1)
      snprintf(k, sizeof k, "warning_%s", f.warn[i].key);
    else
      snprintf(k, sizeof k, "warning_%s_%u", f.warn[i].key, same);
    meta_txt(q, k, f.warn[i].text);
  }
  ncs_findings_free(&f);
}

void sq_meta(sq_t *q, const char *path) {
  char abs[PATH_MAX];
  const ncs_analysis_t *a = q->a;
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  char created[32];
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const char *kv[][2] = {{"schema", NCS_SQLITE_SCHEMA},
                         {"tool_version", NCS_VERSION},
                         {"sqlite_version", sqlite3_libversion()},
                         {"source", path},
                         {"source_abs", realpath(path, abs) ? abs : path},
                         {"created_utc", created},
                         {"time_unit", "ns"},
                         {"bandwidth_unit", "GB/s (1e9 bytes/s)"}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) meta_txt(q, kv[i][0], kv[i][1]);
  const struct {
    const char *k;
    int64_t v;
  } nums[] = {{"trace_format_version", NCS_FORMAT_VERSION}, {"files", a->cov.files},
              {"error_bound_ns", a->job->error}, {"instances", (int64_t)a->instances},
              {"incomplete", (int64_t)a->incomplete}, {"rank_ops", (int64_t)a->coll_ops},
              {"duplicate_seq", (int64_t)a->unmatched_seq}, {"mismatched", (int64_t)a->mismatched},
              {"sends", (int64_t)a->sends}, {"recvs", (int64_t)a->recvs},
              {"p2p_pairs", (int64_t)a->p2p_pairs}, {"p2p_unmatched_sends", (int64_t)a->p2p_unmatched_send},
              {"p2p_unmatched_recvs", (int64_t)a->p2p_unmatched_recv},
              {"p2p_bytes_mismatch", (int64_t)a->p2p_bytes_mismatch},
              {"damaged_files", (int64_t)a->damaged_files}, {"unsampled", (int64_t)a->unsampled},
              {"gpu_suspect", (int64_t)a->gpu_suspect}, {"hosts", a->job->nhosts}};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) meta_i64(q, nums[i].k, nums[i].v);
  meta_coverage(q);
}


/* With a filter (docs/sqlite.md, "Filters"): a row of an event of no operation that was left out
 * at its stop (outside the window) takes the rows of its children and states with it, which were
 * written before it; then meta says what the export covers and what it left out. */
void sq_filter_meta(sq_t *q) {
  static const struct {
    int table;
    const char *sql;
  } orphans[] = {
      {NCS_SQ_PROXY_STEPS, "DELETE FROM proxy_steps WHERE proxy_op_id IS NOT NULL AND proxy_op_id "
                           "NOT IN (SELECT id FROM proxy_ops)"},
      {NCS_SQ_PROXY_STATES, "DELETE FROM proxy_states WHERE (proxy_op_id IS NOT NULL AND "
                            "proxy_op_id NOT IN (SELECT id FROM proxy_ops)) OR (proxy_step_id IS "
                            "NOT NULL AND proxy_step_id NOT IN (SELECT id FROM proxy_steps))"},
      {NCS_SQ_KERNEL_PHASES, "DELETE FROM kernel_phases WHERE kernel_channel_id IS NOT NULL AND "
                             "kernel_channel_id NOT IN (SELECT id FROM kernel_channels)"},
  };
  for (size_t i = 0; i < sizeof orphans / sizeof orphans[0] && !q->failed; i++) {
    if (sq_exec(q, orphans[i].sql) != 0) return;
    uint64_t n = (uint64_t)sqlite3_changes64(q->db);
    q->st->rows[orphans[i].table] -= n;
    if (orphans[i].table != NCS_SQ_PROXY_STATES) q->rows_left += n; /* states: not events */
  }
  ncs_xf_stats_t fs;
  ncs_xf_stats(&q->xf, &fs);
  fs.events_left = q->st->filter.events_left + q->rows_left;
  fs.cannot_tell = q->st->filter.cannot_tell;
  q->st->filter = fs;
  meta_txt(q, "filter", fs.text);
  meta_txt(q, "filter_result", fs.ops_kept ? "only what passed the filter is in the event tables"
                                           : "no collective or send/receive passed the filter");
  meta_i64(q, "filter_instances_kept", (int64_t)fs.inst_kept);
  meta_i64(q, "filter_operations_kept", (int64_t)fs.ops_kept);
  meta_i64(q, "filter_instances_left_out", (int64_t)fs.inst_left);
  meta_i64(q, "filter_p2p_left_out", (int64_t)fs.p2p_left);
  meta_i64(q, "filter_rows_left_out", (int64_t)fs.events_left);
  meta_i64(q, "filter_operations_cannot_tell", (int64_t)fs.cannot_tell);
}
