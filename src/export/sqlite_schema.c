/* sqlite_schema.c - the database's tables, indexes and views (sqlite_int.h; docs/sqlite.md
 * describes every column). CREATE TABLE and INSERT are generated from one column list per
 * table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/sqlite_int.h"

const char *const ncs_sqlite_table_names[NCS_SQ_NTABLES] = {
    "meta",        "processes", "hosts",           "segments",  "comms",
    "ranks",       "collectives", "buckets",       "operations", "p2p",
    "kernel_channels", "proxy_ops", "proxy_steps", "proxy_states", "losses",
    "kernel_phases", "breakdown",   "links",     "net_qps",     "kernels",   "gpu_devices",
    "ranges",        "range_metrics", "findings"};

typedef struct {
  const char *name, *decl;
} col_t;
static const col_t c_meta[] = {COLS_META(X_DEF, MT)};
static const col_t c_processes[] = {COLS_PROCESSES(X_DEF, PR)};
static const col_t c_hosts[] = {COLS_HOSTS(X_DEF, HO)};
static const col_t c_segments[] = {COLS_SEGMENTS(X_DEF, SG)};
static const col_t c_comms[] = {COLS_COMMS(X_DEF, CM)};
static const col_t c_ranks[] = {COLS_RANKS(X_DEF, RK)};
static const col_t c_collectives[] = {COLS_COLLECTIVES(X_DEF, CO)};
static const col_t c_buckets[] = {COLS_BUCKETS(X_DEF, BK)};
static const col_t c_operations[] = {COLS_OPERATIONS(X_DEF, OP)};
static const col_t c_p2p[] = {COLS_P2P(X_DEF, PP)};
static const col_t c_kernel_channels[] = {COLS_KERNEL_CHANNELS(X_DEF, KC)};
static const col_t c_proxy_ops[] = {COLS_PROXY_OPS(X_DEF, PO)};
static const col_t c_proxy_steps[] = {COLS_PROXY_STEPS(X_DEF, PS)};
static const col_t c_proxy_states[] = {COLS_PROXY_STATES(X_DEF, PT)};
static const col_t c_losses[] = {COLS_LOSSES(X_DEF, LS)};
static const col_t c_kernel_phases[] = {COLS_KERNEL_PHASES(X_DEF, KP)};
static const col_t c_breakdown[] = {COLS_BREAKDOWN(X_DEF, BD)};
static const col_t c_links[] = {COLS_LINKS(X_DEF, LK)};
static const col_t c_net_qps[] = {COLS_NET_QPS(X_DEF, NQ)};
static const col_t c_kernels[] = {COLS_KERNELS(X_DEF, KN)};
static const col_t c_gpu_devices[] = {COLS_GPU_DEVICES(X_DEF, GD)};
static const col_t c_ranges[] = {COLS_RANGES(X_DEF, RG)};
static const col_t c_range_metrics[] = {COLS_RANGE_METRICS(X_DEF, RM)};
static const col_t c_findings[] = {COLS_FINDINGS(X_DEF, FD)};

#define TBL(cols, extra) {cols, sizeof cols / sizeof cols[0], extra}
static const struct {
  const col_t *cols;
  int ncols;
  const char *extra; /* table constraints */
} tables[NCS_SQ_NTABLES] = {
    [NCS_SQ_META] = TBL(c_meta, NULL),
    [NCS_SQ_PROCESSES] = TBL(c_processes, NULL),
    [NCS_SQ_HOSTS] = TBL(c_hosts, NULL),
    [NCS_SQ_SEGMENTS] = TBL(c_segments, "PRIMARY KEY (process_id, segment)"),
    [NCS_SQ_COMMS] = TBL(c_comms, NULL),
    [NCS_SQ_RANKS] = TBL(c_ranks, NULL),
    [NCS_SQ_COLLECTIVES] = TBL(c_collectives, NULL),
    [NCS_SQ_BUCKETS] = TBL(c_buckets, NULL),
    [NCS_SQ_OPERATIONS] = TBL(c_operations, NULL),
    [NCS_SQ_P2P] = TBL(c_p2p, NULL),
    [NCS_SQ_KERNEL_CHANNELS] = TBL(c_kernel_channels, NULL),
    [NCS_SQ_PROXY_OPS] = TBL(c_proxy_ops, NULL),
    [NCS_SQ_PROXY_STEPS] = TBL(c_proxy_steps, NULL),
    [NCS_SQ_PROXY_STATES] = TBL(c_proxy_states, NULL),
    [NCS_SQ_LOSSES] = TBL(c_losses, NULL),
    [NCS_SQ_KERNEL_PHASES] = TBL(c_kernel_phases, NULL),
    [NCS_SQ_BREAKDOWN] = TBL(c_breakdown, NULL),
    [NCS_SQ_LINKS] = TBL(c_links, NULL),
    [NCS_SQ_NET_QPS] = TBL(c_net_qps, NULL),
    [NCS_SQ_KERNELS] = TBL(c_kernels, NULL),
    [NCS_SQ_GPU_DEVICES] = TBL(c_gpu_devices, NULL),
    [NCS_SQ_RANGES] = TBL(c_ranges, NULL),
    [NCS_SQ_RANGE_METRICS] = TBL(c_range_metrics, NULL),
    [NCS_SQ_FINDINGS] = TBL(c_findings, NULL),
};
#undef TBL

/* made after the rows are in (faster than maintaining them while inserting) */
static const char *const post_sql[] = {
    "CREATE INDEX operations_event ON operations (process_id, segment, event_id)",
    "CREATE INDEX operations_collective ON operations (collective_id)",
    "CREATE INDEX operations_comm_rank ON operations (comm, rank)",
    "CREATE INDEX kernels_stream ON kernels (process_id, device, stream, start_job_ns)",
    "CREATE INDEX collectives_bucket ON collectives (comm, func, size_log2)",
    "CREATE INDEX collectives_last ON collectives (comm, last_rank)",
    "CREATE INDEX ranks_comm_rank ON ranks (comm, rank)",
    "CREATE INDEX p2p_send ON p2p (send_id)",
    "CREATE INDEX p2p_recv ON p2p (recv_id)",
    "CREATE INDEX kernel_channels_operation ON kernel_channels (operation_id)",
    "CREATE INDEX kernel_channels_channel ON kernel_channels (comm, rank, channel)",
    "CREATE INDEX proxy_ops_operation ON proxy_ops (operation_id)",
    "CREATE INDEX proxy_ops_event ON proxy_ops (process_id, segment, event_id)",
    "CREATE INDEX proxy_steps_op ON proxy_steps (proxy_op_id)",
    "CREATE INDEX proxy_states_step ON proxy_states (proxy_step_id)",
    "CREATE INDEX proxy_states_op ON proxy_states (proxy_op_id)",
    "CREATE INDEX proxy_states_state ON proxy_states (state, duration_ns)",
    /* a KernelPhase stops before its KernelCh, whose row comes later: link it now */
    "UPDATE kernel_phases SET kernel_channel_id = (SELECT k.id FROM kernel_channels k WHERE "
    "k.process_id = kernel_phases.process_id AND k.segment = kernel_phases.segment AND "
    "k.event_id = kernel_phases.parent_event_id) "
    "WHERE kernel_channel_id IS NULL AND parent_event_id IS NOT NULL",
    "CREATE INDEX breakdown_label ON breakdown (label)",
    "CREATE INDEX links_operation ON links (operation_id)",
    "CREATE INDEX links_collective ON links (collective_id)",
    "CREATE INDEX links_rank ON links (comm, rank, peer, channel)",
    "CREATE INDEX net_qps_operation ON net_qps (operation_id)",
    /* children whose START came before their parent's in the file (chunks of different
     * threads overlap in time): link them now */
    "UPDATE kernel_channels SET operation_id = (SELECT i.id FROM operations i WHERE "
    "i.process_id = kernel_channels.process_id AND i.segment = kernel_channels.segment AND "
    "i.event_id = kernel_channels.parent_event_id) "
    "WHERE operation_id IS NULL AND parent_event_id IS NOT NULL",
    "UPDATE proxy_ops SET operation_id = (SELECT i.id FROM operations i WHERE "
    "i.process_id = proxy_ops.process_id AND i.segment = proxy_ops.segment AND "
    "i.event_id = proxy_ops.parent_event_id) "
    "WHERE operation_id IS NULL AND parent_event_id IS NOT NULL",
    "UPDATE proxy_steps SET proxy_op_id = (SELECT o.id FROM proxy_ops o WHERE "
    "o.process_id = proxy_steps.process_id AND o.segment = proxy_steps.segment AND "
    "o.event_id = proxy_steps.parent_event_id) "
    "WHERE proxy_op_id IS NULL AND parent_event_id IS NOT NULL",
    "UPDATE kernel_phases SET operation_id = (SELECT k.operation_id FROM kernel_channels k WHERE "
    "k.id = kernel_phases.kernel_channel_id) WHERE operation_id IS NULL",
    "CREATE INDEX kernel_phases_channel ON kernel_phases (kernel_channel_id)",
    "CREATE INDEX kernel_phases_operation ON kernel_phases (operation_id, phase_id)",
    "UPDATE comms SET ranks_recorded = "
    "(SELECT COUNT(DISTINCT r.rank) FROM ranks r WHERE r.comm = comms.id)",
    /* views: docs/sqlite.md */
    "CREATE VIEW v_operations AS SELECT i.*, "
    "c.last_arrival_job_ns - i.arrival_job_ns AS waited_ns, "
    "i.arrival_job_ns - c.first_arrival_job_ns AS late_ns, c.latency_ns AS collective_latency_ns "
    "FROM operations i LEFT JOIN collectives c ON c.id = i.collective_id",
    "CREATE VIEW v_busbw AS WITH s AS (SELECT comm, func, size_log2, busbw_gbs, latency_ns, "
    "skew_ns, ROW_NUMBER() OVER (PARTITION BY comm, func, size_log2 ORDER BY busbw_gbs) AS kb, "
    "ROW_NUMBER() OVER (PARTITION BY comm, func, size_log2 ORDER BY latency_ns) AS kl, "
    "ROW_NUMBER() OVER (PARTITION BY comm, func, size_log2 ORDER BY skew_ns) AS ks, "
    "COUNT(*) OVER (PARTITION BY comm, func, size_log2) AS n FROM collectives "
    "WHERE NOT unsampled AND NOT no_gpu_time) "
    "SELECT comm, func, size_log2, n AS count, "
    "MAX(CASE WHEN kb = (n + 1) / 2 THEN busbw_gbs END) AS busbw_p50_gbs, "
    "MAX(CASE WHEN kl = (n + 1) / 2 THEN latency_ns END) AS lat_p50_ns, "
    "MAX(CASE WHEN ks = (n + 1) / 2 THEN skew_ns END) AS skew_p50_ns "
    "FROM s GROUP BY comm, func, size_log2",
    "CREATE VIEW v_stragglers AS "
    "WITH l AS (SELECT comm, last_rank AS rank, COUNT(*) AS last_arrivals, "
    "SUM(wait_caused_ns) AS wait_caused_ns, MAX(skew_ns) AS worst_skew_ns "
    "FROM collectives WHERE last_counted GROUP BY comm, last_rank), "
    "n AS (SELECT comm, rank, COUNT(*) AS instances FROM operations "
    "WHERE collective_id IS NOT NULL GROUP BY comm, rank) "
    "SELECT l.comm, l.rank, n.instances, l.last_arrivals, "
    "1.0 * l.last_arrivals / n.instances AS last_fraction, l.wait_caused_ns, l.worst_skew_ns "
    "FROM l LEFT JOIN n ON n.comm = l.comm AND n.rank = l.rank "
    "ORDER BY l.wait_caused_ns DESC, l.last_arrivals DESC",
    "CREATE VIEW v_kernel_channels AS SELECT k.*, i.func, i.seq, i.collective_id, "
    "k.start_gpu_ns - p.gpu_offset_ns AS gpu_start_mono_ns, "
    "k.stop_gpu_ns - p.gpu_offset_ns AS gpu_stop_mono_ns "
    "FROM kernel_channels k JOIN processes p ON p.id = k.process_id "
    "LEFT JOIN operations i ON i.id = k.operation_id",
    /* ABI v7: an operation's GPU time split by its kernels' phases, channel means (docs/sqlite.md) */
    "CREATE VIEW v_operation_phases AS SELECT operation_id, COUNT(DISTINCT channel) AS channels, "
    "CAST(1.0 * SUM(CASE WHEN phase_id = 0 THEN gpu_duration_ns ELSE 0 END) / COUNT(DISTINCT channel) AS INTEGER) "
    "AS initial_sync_ns, "
    "CAST(1.0 * SUM(CASE WHEN phase_id = 1 THEN gpu_duration_ns ELSE 0 END) / COUNT(DISTINCT channel) AS INTEGER) "
    "AS compute_ns, "
    "CAST(1.0 * SUM(CASE WHEN phase_id = 2 THEN gpu_duration_ns ELSE 0 END) / COUNT(DISTINCT channel) AS INTEGER) "
    "AS final_sync_ns "
    "FROM kernel_phases WHERE operation_id IS NOT NULL AND gpu_duration_ns IS NOT NULL GROUP BY operation_id",
    /* ABI v7: the operations of each user tag (a step or phase of the application) */
    "CREATE VIEW v_user_tags AS SELECT comm, user_tag, COUNT(*) AS operations, "
    "COUNT(DISTINCT rank) AS ranks, SUM(bytes) AS bytes, MIN(arrival_job_ns) AS first_arrival_job_ns, "
    "MAX(arrival_job_ns + duration_ns) AS last_end_job_ns, SUM(duration_ns) AS duration_ns "
    "FROM operations WHERE user_tag IS NOT NULL GROUP BY comm, user_tag",
    "CREATE VIEW v_proxy_step_states AS SELECT t.id, t.proxy_step_id, s.proxy_op_id, "
    "s.process_id, o.comm, o.rank, o.channel, o.peer, o.is_send, o.operation_id, s.step, "
    "t.state, t.state_code, t.mono_ns, t.until_mono_ns, t.duration_ns, t.arg0 AS trans_size "
    "FROM proxy_states t JOIN proxy_steps s ON s.id = t.proxy_step_id "
    "LEFT JOIN proxy_ops o ON o.id = s.proxy_op_id",
};

/* ================================================================ schema creation */

int sq_create_schema(sq_t *q) {
  static const char *const pragmas =
      "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
      "PRAGMA cache_size=-65536; PRAGMA page_size=8192;";
  if (sq_exec(q, pragmas) != 0) return -1;
  char *sql = NULL;
  size_t cap = 0;
  for (int t = 0; t < NCS_SQ_NTABLES; t++) {
    /* the longest statement: every column's name and declaration */
    size_t need = 256;
    for (int c = 0; c < tables[t].ncols; c++)
      need += strlen(tables[t].cols[c].name) + strlen(tables[t].cols[c].decl) + 8;
    if (need > cap) {
      char *n = realloc(sql, need);
      if (!n) {
        free(sql);
        sq_oom(q);
        return -1;
      }
      sql = n, cap = need;
    }
    size_t k = (size_t)snprintf(sql, cap, "CREATE TABLE %s (", ncs_sqlite_table_names[t]);
    for (int c = 0; c < tables[t].ncols; c++)
      k += (size_t)snprintf(sql + k, cap - k, "%s%s %s", c ? ", " : "", tables[t].cols[c].name,
                            tables[t].cols[c].decl);
    if (tables[t].extra) k += (size_t)snprintf(sql + k, cap - k, ", %s", tables[t].extra);
    snprintf(sql + k, cap - k, ")");
    if (sq_exec(q, sql) != 0) break;
    k = (size_t)snprintf(sql, cap, "INSERT INTO %s VALUES (", ncs_sqlite_table_names[t]);
    for (int c = 0; c < tables[t].ncols; c++)
      k += (size_t)snprintf(sql + k, cap - k, "%s?", c ? "," : "");
    snprintf(sql + k, cap - k, ")");
    q->ins[t] = sq_prepare(q, sql);
  }
  free(sql);
  q->upd_stop = sq_prepare(q, "UPDATE operations SET stop_mono_ns = ?1 WHERE id = ?2");
  q->upd_complete = sq_prepare(q,
                            "UPDATE operations SET end_mono_ns = ?1, first_child_mono_ns = ?2, "
                            "kernel_start_gpu_ns = ?3, kernel_stop_gpu_ns = ?4, "
                            "completion_flags = ?5, n_kernel_ch = ?6, n_proxy_op = ?7, n_open = ?8 "
                            "WHERE id = ?9");
  q->upd_expired = sq_prepare(q, "UPDATE operations SET expired = ?1 WHERE id = ?2");
  q->upd_segment = sq_prepare(q,
                           "UPDATE segments SET records = ?1, drops = ?2, clean = ?3, "
                           "end_mono_ns = ?4 WHERE process_id = ?5 AND segment = ?6");
  return q->failed ? -1 : 0;
}

int sq_post(sq_t *q) {
  for (size_t i = 0; i < sizeof post_sql / sizeof post_sql[0]; i++) sq_exec(q, post_sql[i]);
  return q->failed ? -1 : 0;
}
