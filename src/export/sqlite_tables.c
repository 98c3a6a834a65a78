/* sqlite_tables.c - the tables of the job model and the analysis (hosts, comms, ranks,
 * collectives, buckets, p2p) and meta (sqlite_int.h, docs/sqlite.md). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/sqlite_int.h"

/* ================================================================ the analysis tables */

void sq_analysis_tables(sq_t *q) {
  const ncs_analysis_t *a = q->a;
  sqlite3_stmt *s;
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
    snprintf(hex, sizeof hex, "0x%016" PRIx64, ci->comm_id);
    s = q->ins[NCS_SQ_COMMS];
    b_u64(s, CM_id, c), b_u64(s, CM_comm_id, ci->comm_id), b_txt(s, CM_comm_hex, hex);
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
    sq_insert(q, NCS_SQ_COLLECTIVES);
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
    b_dbl(s, BK_lat_p50_ns, b->lat_p50), b_dbl(s, BK_lat_p95_ns, b->lat_p95);
    b_dbl(s, BK_lat_p99_ns, b->lat_p99), b_dbl(s, BK_algbw_p50_gbs, b->algbw_p50);
    b_dbl(s, BK_busbw_p50_gbs, b->busbw_p50), b_dbl(s, BK_busbw_p95_gbs, b->busbw_p95);
    b_dbl(s, BK_busbw_p99_gbs, b->busbw_p99), b_dbl(s, BK_skew_p50_ns, b->skew_p50);
    b_dbl(s, BK_skew_max_ns, b->skew_max);
    sq_insert(q, NCS_SQ_BUCKETS);
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

void sq_meta(sq_t *q, const char *path) {
  char abs[PATH_MAX], buf[64];
  const ncs_analysis_t *a = q->a;
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  char created[32];
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
  struct {
    const char *k;
    char v[64];
  } nums[] = {{"trace_format_version", ""}, {"files", ""},       {"error_bound_ns", ""},
              {"instances", ""},            {"incomplete", ""},  {"rank_ops", ""},
              {"duplicate_seq", ""},        {"mismatched", ""},  {"sends", ""},
              {"recvs", ""},                {"p2p_pairs", ""},   {"p2p_unmatched_sends", ""},
              {"p2p_unmatched_recvs", ""},  {"p2p_bytes_mismatch", ""}, {"damaged_files", ""},
              {"unsampled", ""},            {"gpu_suspect", ""}};
  uint64_t vals[] = {NCS_FORMAT_VERSION, a->job->nprocs, (uint64_t)a->job->error, a->instances,
                     a->incomplete, a->coll_ops, a->unmatched_seq, a->mismatched, a->sends,
                     a->recvs, a->p2p_pairs, a->p2p_unmatched_send, a->p2p_unmatched_recv,
                     a->p2p_bytes_mismatch, a->damaged_files, a->unsampled, a->gpu_suspect};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    snprintf(nums[i].v, sizeof nums[i].v, "%" PRId64, (int64_t)vals[i]);
  const char *kv[][2] = {{"schema", NCS_SQLITE_SCHEMA},
                         {"tool_version", NCS_VERSION},
                         {"sqlite_version", sqlite3_libversion()},
                         {"source", path},
                         {"source_abs", realpath(path, abs) ? abs : path},
                         {"created_utc", created},
                         {"time_unit", "ns"},
                         {"bandwidth_unit", "GB/s (1e9 bytes/s)"}};
  sqlite3_stmt *s = q->ins[NCS_SQ_META];
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
    b_txt(s, MT_key, kv[i][0]), b_txt(s, MT_value, kv[i][1]);
    sq_insert(q, NCS_SQ_META);
  }
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
    b_txt(s, MT_key, nums[i].k), b_txt(s, MT_value, nums[i].v);
    sq_insert(q, NCS_SQ_META);
  }
  snprintf(buf, sizeof buf, "%u", a->job->nhosts);
  b_txt(s, MT_key, "hosts"), b_txt(s, MT_value, buf);
  sq_insert(q, NCS_SQ_META);
}

