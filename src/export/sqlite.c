/* sqlite.c - `ncclscope export --format sqlite` (sqlite.h; the schema is docs/sqlite.md).
 *
 * 1. ncs_analyze_path: the report's analysis of the whole job (instances matched across ranks,
 *    durations, arrivals, clocks, buckets, per-rank totals).
 * 2. One streaming pass per trace file, in the analysis's file order. Coll and P2p rows are
 *    inserted at their START (their analysis numbers are looked up by (segment, event id)) and
 *    updated at STOP, COMPLETE and EXPIRED. KernelCh, ProxyOp and ProxyStep events are kept
 *    while open and inserted once at their STOP (or at the end of their segment when they never
 *    stop), with their states; each state of a ProxyOp/ProxyStep also becomes a proxy_states
 *    row when the next state (or the stop) tells how long it lasted. Row ids are assigned at
 *    START, so a child names its parent's row even before the parent's row is complete.
 * 3. The analysis tables (comms, ranks, collectives, buckets, p2p, hosts), then indexes, views,
 *    ANALYZE, and the rename of the temporary file over the output.
 *
 * Everything is written in one transaction per file through prepared statements, with the
 * journal off: the database is a fresh temporary file (src/util/outfile.h: a named one beside
 * the output, since SQLite opens files by name) that is deleted on any failure.
 */
#include "export/sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "util/hmap.h"
#include "trace/reader.h"
#include "util/outfile.h"

const char *const ncs_sqlite_table_names[NCS_SQ_NTABLES] = {
    "meta",        "processes", "hosts",           "segments",  "comms",
    "ranks",       "collectives", "buckets",       "instances", "p2p",
    "kernel_channels", "proxy_ops", "proxy_steps", "proxy_states"};

/* ================================================================ schema
 * One X-macro list per table: X(prefix, column, declaration). The enum gives the column's index
 * for binding; CREATE TABLE and INSERT are generated from the same list. docs/sqlite.md
 * describes every column. */
#define I "INTEGER"
#define T "TEXT"
#define R "REAL"

#define COLS_META(X, P) X(P, key, T " PRIMARY KEY") X(P, value, T)

#define COLS_PROCESSES(X, P)                                                                       \
  X(P, id, I " PRIMARY KEY") X(P, file, T " NOT NULL") X(P, host, T) X(P, pid, I)                  \
  X(P, plugin_version, T) X(P, segments, I) X(P, host_id, I) X(P, clock_offset_ns, I)              \
  X(P, clock_spread_ns, I) X(P, clock_pairs, I) X(P, job_offset_ns, I) X(P, gpu_clock, T)          \
  X(P, gpu_offset_ns, I) X(P, gpu_gap_p50_ns, I) X(P, gpu_gap_p99_ns, I) X(P, gpu_gap_min_ns, I)  \
  X(P, gpu_gap_max_ns, I) X(P, gpu_gap_samples, I) X(P, file_bytes, I) X(P, records, I)            \
  X(P, damage, T) X(P, damage_message, T)

#define COLS_HOSTS(X, P)                                                                           \
  X(P, id, I " PRIMARY KEY") X(P, host, T) X(P, offset_ns, I) X(P, error_ns, I) X(P, samples, I)

#define COLS_SEGMENTS(X, P)                                                                        \
  X(P, process_id, I " NOT NULL") X(P, segment, I " NOT NULL") X(P, plugin_version, T)             \
  X(P, epoch, I) X(P, mode, T) X(P, events_mask, I) X(P, start_realtime_ns, I)                     \
  X(P, start_mono_ns, I) X(P, end_mono_ns, I) X(P, cmdline, T) X(P, pool_bytes, I)                 \
  X(P, records, I) X(P, drops, I) X(P, clean, I)

#define COLS_COMMS(X, P)                                                                           \
  X(P, id, I " PRIMARY KEY") X(P, comm_id, I) X(P, comm_hex, T) X(P, name, T) X(P, nranks, I)      \
  X(P, nnodes, I) X(P, ranks_seen, I) X(P, ranks_recorded, I)

#define COLS_RANKS(X, P)                                                                           \
  X(P, id, I " PRIMARY KEY") X(P, comm, I " NOT NULL") X(P, rank, I) X(P, process_id, I)           \
  X(P, segment, I) X(P, comm_index, I) X(P, abi_version, I) X(P, device, I) X(P, bus_id, T)        \
  X(P, init_mono_ns, I) X(P, finalize_mono_ns, I) X(P, instances, I) X(P, last_arrivals, I)        \
  X(P, wait_caused_ns, I) X(P, wait_suffered_ns, I) X(P, slowest, I) X(P, excess_ns, I)            \
  X(P, kernel_wait_ns, I) X(P, transfer_ns, I) X(P, launch_delay_mean_ns, I)

#define COLS_COLLECTIVES(X, P)                                                                     \
  X(P, id, I " PRIMARY KEY") X(P, comm, I " NOT NULL") X(P, func, T) X(P, seq, I) X(P, bytes, I)   \
  X(P, size_log2, I) X(P, nranks, I) X(P, nranks_seen, I) X(P, complete, I) X(P, latency_ns, I)    \
  X(P, timing, T) X(P, median_duration_ns, I) X(P, algbw_gbs, R) X(P, busbw_gbs, R)                \
  X(P, first_arrival_job_ns, I) X(P, last_arrival_job_ns, I) X(P, skew_ns, I) X(P, first_rank, I)  \
  X(P, last_rank, I) X(P, last_counted, I) X(P, wait_caused_ns, I) X(P, slowest_rank, I)           \
  X(P, slowest_excess_ns, I) X(P, unsampled, I) X(P, gpu_suspect, I)

#define COLS_BUCKETS(X, P)                                                                         \
  X(P, id, I " PRIMARY KEY") X(P, comm, I " NOT NULL") X(P, func, T) X(P, p2p, I)                  \
  X(P, size_log2, I) X(P, bytes_lo, I) X(P, bytes_hi, I) X(P, count, I) X(P, bytes, I)             \
  X(P, timing_kernel_gpu, I) X(P, timing_proxy_host, I) X(P, timing_enqueue_host, I)               \
  X(P, lat_p50_ns, R) X(P, lat_p95_ns, R) X(P, lat_p99_ns, R) X(P, algbw_p50_gbs, R)               \
  X(P, busbw_p50_gbs, R) X(P, busbw_p95_gbs, R) X(P, busbw_p99_gbs, R) X(P, skew_p50_ns, R)        \
  X(P, skew_max_ns, R)

#define COLS_INSTANCES(X, P)                                                                       \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, event_id, I)    \
  X(P, type, T) X(P, comm, I) X(P, rank, I) X(P, func, T) X(P, seq, I) X(P, peer, I)               \
  X(P, count, I) X(P, datatype, T) X(P, nccl_count, I) X(P, nccl_datatype, T) X(P, root, I)        \
  X(P, bytes, I) X(P, op, I) X(P, algo, T) X(P, proto, T) X(P, n_channels, I) X(P, n_warps, I)     \
  X(P, traffic_bytes, I) X(P, is_collnet, I) X(P, is_nvls, I) X(P, api_start_mono_ns, I)           \
  X(P, start_mono_ns, I) X(P, stop_mono_ns, I) X(P, end_mono_ns, I) X(P, first_child_mono_ns, I)   \
  X(P, kernel_start_gpu_ns, I) X(P, kernel_stop_gpu_ns, I) X(P, completion_flags, I)               \
  X(P, n_kernel_ch, I) X(P, n_proxy_op, I) X(P, n_open, I) X(P, expired, T)                        \
  X(P, arrival_job_ns, I) X(P, duration_ns, I) X(P, timing, T) X(P, kernel_start_job_ns, I)        \
  X(P, collective_id, I) X(P, p2p_order, I)

#define COLS_P2P(X, P)                                                                             \
  X(P, id, I " PRIMARY KEY") X(P, comm, I " NOT NULL") X(P, sender, I) X(P, receiver, I)           \
  X(P, pair_order, I) X(P, send_id, I) X(P, recv_id, I) X(P, send_bytes, I) X(P, recv_bytes, I)    \
  X(P, send_arrival_job_ns, I) X(P, recv_arrival_job_ns, I) X(P, send_duration_ns, I)              \
  X(P, recv_duration_ns, I)

#define COLS_KERNEL_CHANNELS(X, P)                                                                 \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, event_id, I)    \
  X(P, parent_event_id, I) X(P, instance_id, I) X(P, comm, I) X(P, rank, I) X(P, channel, I)       \
  X(P, start_mono_ns, I) X(P, stop_mono_ns, I) X(P, start_gpu_ns, I) X(P, stop_gpu_ns, I)          \
  X(P, gpu_duration_ns, I) X(P, expired, T)

#define COLS_PROXY_OPS(X, P)                                                                       \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, event_id, I)    \
  X(P, parent_event_id, I) X(P, instance_id, I) X(P, comm, I) X(P, rank, I) X(P, pid, I)          \
  X(P, pxn, I) X(P, channel, I)                                                                    \
  X(P, peer, I) X(P, n_steps, I) X(P, chunk_size, I) X(P, is_send, I) X(P, start_mono_ns, I)       \
  X(P, stop_mono_ns, I) X(P, duration_ns, I) X(P, in_progress_mono_ns, I) X(P, n_states, I)        \
  X(P, last_state, T) X(P, last_state_mono_ns, I) X(P, trans_size, I) X(P, steps_done, I)          \
  X(P, expired, T)

#define COLS_PROXY_STEPS(X, P)                                                                     \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, event_id, I)    \
  X(P, parent_event_id, I) X(P, proxy_op_id, I) X(P, step, I) X(P, start_mono_ns, I)              \
  X(P, stop_mono_ns, I)                                                                            \
  X(P, duration_ns, I) X(P, send_gpu_wait_mono_ns, I) X(P, send_peer_wait_mono_ns, I)              \
  X(P, send_wait_mono_ns, I) X(P, recv_wait_mono_ns, I) X(P, recv_flush_wait_mono_ns, I)           \
  X(P, recv_gpu_wait_mono_ns, I) X(P, n_states, I) X(P, last_state, T)                             \
  X(P, last_state_mono_ns, I) X(P, trans_size, I) X(P, expired, T)

#define COLS_PROXY_STATES(X, P)                                                                    \
  X(P, id, I " PRIMARY KEY") X(P, proxy_op_id, I) X(P, proxy_step_id, I) X(P, state, T)            \
  X(P, state_code, I) X(P, mono_ns, I) X(P, until_mono_ns, I) X(P, duration_ns, I) X(P, arg0, I)   \
  X(P, arg1, I)

#define X_ENUM(P, n, t) P##_##n,
#define X_DEF(P, n, t) {#n, t},
enum { COLS_META(X_ENUM, MT) MT_N };
enum { COLS_PROCESSES(X_ENUM, PR) PR_N };
enum { COLS_HOSTS(X_ENUM, HO) HO_N };
enum { COLS_SEGMENTS(X_ENUM, SG) SG_N };
enum { COLS_COMMS(X_ENUM, CM) CM_N };
enum { COLS_RANKS(X_ENUM, RK) RK_N };
enum { COLS_COLLECTIVES(X_ENUM, CO) CO_N };
enum { COLS_BUCKETS(X_ENUM, BK) BK_N };
enum { COLS_INSTANCES(X_ENUM, IN) IN_N };
enum { COLS_P2P(X_ENUM, PP) PP_N };
enum { COLS_KERNEL_CHANNELS(X_ENUM, KC) KC_N };
enum { COLS_PROXY_OPS(X_ENUM, PO) PO_N };
enum { COLS_PROXY_STEPS(X_ENUM, PS) PS_N };
enum { COLS_PROXY_STATES(X_ENUM, PT) PT_N };

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
static const col_t c_instances[] = {COLS_INSTANCES(X_DEF, IN)};
static const col_t c_p2p[] = {COLS_P2P(X_DEF, PP)};
static const col_t c_kernel_channels[] = {COLS_KERNEL_CHANNELS(X_DEF, KC)};
static const col_t c_proxy_ops[] = {COLS_PROXY_OPS(X_DEF, PO)};
static const col_t c_proxy_steps[] = {COLS_PROXY_STEPS(X_DEF, PS)};
static const col_t c_proxy_states[] = {COLS_PROXY_STATES(X_DEF, PT)};

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
    [NCS_SQ_INSTANCES] = TBL(c_instances, NULL),
    [NCS_SQ_P2P] = TBL(c_p2p, NULL),
    [NCS_SQ_KERNEL_CHANNELS] = TBL(c_kernel_channels, NULL),
    [NCS_SQ_PROXY_OPS] = TBL(c_proxy_ops, NULL),
    [NCS_SQ_PROXY_STEPS] = TBL(c_proxy_steps, NULL),
    [NCS_SQ_PROXY_STATES] = TBL(c_proxy_states, NULL),
};
#undef TBL

/* made after the rows are in (faster than maintaining them while inserting) */
static const char *const post_sql[] = {
    "CREATE INDEX instances_event ON instances (process_id, segment, event_id)",
    "CREATE INDEX instances_collective ON instances (collective_id)",
    "CREATE INDEX instances_comm_rank ON instances (comm, rank)",
    "CREATE INDEX collectives_bucket ON collectives (comm, func, size_log2)",
    "CREATE INDEX collectives_last ON collectives (comm, last_rank)",
    "CREATE INDEX ranks_comm_rank ON ranks (comm, rank)",
    "CREATE INDEX p2p_send ON p2p (send_id)",
    "CREATE INDEX p2p_recv ON p2p (recv_id)",
    "CREATE INDEX kernel_channels_instance ON kernel_channels (instance_id)",
    "CREATE INDEX kernel_channels_channel ON kernel_channels (comm, rank, channel)",
    "CREATE INDEX proxy_ops_instance ON proxy_ops (instance_id)",
    "CREATE INDEX proxy_ops_event ON proxy_ops (process_id, segment, event_id)",
    "CREATE INDEX proxy_steps_op ON proxy_steps (proxy_op_id)",
    "CREATE INDEX proxy_states_step ON proxy_states (proxy_step_id)",
    "CREATE INDEX proxy_states_op ON proxy_states (proxy_op_id)",
    "CREATE INDEX proxy_states_state ON proxy_states (state, duration_ns)",
    /* children whose START came before their parent's in the file (chunks of different
     * threads overlap in time): link them now */
    "UPDATE kernel_channels SET instance_id = (SELECT i.id FROM instances i WHERE "
    "i.process_id = kernel_channels.process_id AND i.segment = kernel_channels.segment AND "
    "i.event_id = kernel_channels.parent_event_id) "
    "WHERE instance_id IS NULL AND parent_event_id IS NOT NULL",
    "UPDATE proxy_ops SET instance_id = (SELECT i.id FROM instances i WHERE "
    "i.process_id = proxy_ops.process_id AND i.segment = proxy_ops.segment AND "
    "i.event_id = proxy_ops.parent_event_id) "
    "WHERE instance_id IS NULL AND parent_event_id IS NOT NULL",
    "UPDATE proxy_steps SET proxy_op_id = (SELECT o.id FROM proxy_ops o WHERE "
    "o.process_id = proxy_steps.process_id AND o.segment = proxy_steps.segment AND "
    "o.event_id = proxy_steps.parent_event_id) "
    "WHERE proxy_op_id IS NULL AND parent_event_id IS NOT NULL",
    "UPDATE comms SET ranks_recorded = "
    "(SELECT COUNT(DISTINCT r.rank) FROM ranks r WHERE r.comm = comms.id)",
    /* views: docs/sqlite.md */
    "CREATE VIEW v_instances AS SELECT i.*, "
    "c.last_arrival_job_ns - i.arrival_job_ns AS waited_ns, "
    "i.arrival_job_ns - c.first_arrival_job_ns AS late_ns, c.latency_ns AS collective_latency_ns "
    "FROM instances i LEFT JOIN collectives c ON c.id = i.collective_id",
    "CREATE VIEW v_busbw AS WITH s AS (SELECT comm, func, size_log2, busbw_gbs, latency_ns, "
    "skew_ns, ROW_NUMBER() OVER (PARTITION BY comm, func, size_log2 ORDER BY busbw_gbs) AS kb, "
    "ROW_NUMBER() OVER (PARTITION BY comm, func, size_log2 ORDER BY latency_ns) AS kl, "
    "ROW_NUMBER() OVER (PARTITION BY comm, func, size_log2 ORDER BY skew_ns) AS ks, "
    "COUNT(*) OVER (PARTITION BY comm, func, size_log2) AS n FROM collectives "
    "WHERE NOT unsampled) "
    "SELECT comm, func, size_log2, n AS count, "
    "MAX(CASE WHEN kb = (n + 1) / 2 THEN busbw_gbs END) AS busbw_p50_gbs, "
    "MAX(CASE WHEN kl = (n + 1) / 2 THEN latency_ns END) AS lat_p50_ns, "
    "MAX(CASE WHEN ks = (n + 1) / 2 THEN skew_ns END) AS skew_p50_ns "
    "FROM s GROUP BY comm, func, size_log2",
    "CREATE VIEW v_stragglers AS "
    "WITH l AS (SELECT comm, last_rank AS rank, COUNT(*) AS last_arrivals, "
    "SUM(wait_caused_ns) AS wait_caused_ns, MAX(skew_ns) AS worst_skew_ns "
    "FROM collectives WHERE last_counted GROUP BY comm, last_rank), "
    "n AS (SELECT comm, rank, COUNT(*) AS instances FROM instances "
    "WHERE collective_id IS NOT NULL GROUP BY comm, rank) "
    "SELECT l.comm, l.rank, n.instances, l.last_arrivals, "
    "1.0 * l.last_arrivals / n.instances AS last_fraction, l.wait_caused_ns, l.worst_skew_ns "
    "FROM l LEFT JOIN n ON n.comm = l.comm AND n.rank = l.rank "
    "ORDER BY l.wait_caused_ns DESC, l.last_arrivals DESC",
    "CREATE VIEW v_kernel_channels AS SELECT k.*, i.func, i.seq, i.collective_id, "
    "k.start_gpu_ns - p.gpu_offset_ns AS gpu_start_mono_ns, "
    "k.stop_gpu_ns - p.gpu_offset_ns AS gpu_stop_mono_ns "
    "FROM kernel_channels k JOIN processes p ON p.id = k.process_id "
    "LEFT JOIN instances i ON i.id = k.instance_id",
    "CREATE VIEW v_proxy_step_states AS SELECT t.id, t.proxy_step_id, s.proxy_op_id, "
    "s.process_id, o.comm, o.rank, o.channel, o.peer, o.is_send, o.instance_id, s.step, "
    "t.state, t.state_code, t.mono_ns, t.until_mono_ns, t.duration_ns, t.arg0 AS trans_size "
    "FROM proxy_states t JOIN proxy_steps s ON s.id = t.proxy_step_id "
    "LEFT JOIN proxy_ops o ON o.id = s.proxy_op_id",
};

/* ================================================================ state */

#define NSTATES 31
/* ncs_state_names indexes */
enum {
  ST_STEP_SEND_GPU_WAIT = 8, ST_STEP_SEND_WAIT = 9, ST_STEP_RECV_WAIT = 10,
  ST_STEP_RECV_FLUSH_WAIT = 11, ST_STEP_RECV_GPU_WAIT = 12, ST_OP_IN_PROGRESS = 19,
  ST_STEP_SEND_PEER_WAIT = 20, ST_KERNEL_CH_STOP = 22,
};

/* an open KernelCh, ProxyOp or ProxyStep: inserted at its STOP */
typedef struct {
  uint64_t id, row, parent_row, parent_id; /* parent_id: its event id, 0 none or not local */
  uint64_t start, stop, f[6];
  int64_t comm; /* -1 unknown */
  int32_t rank;
  uint8_t type, in_use, pxn, expired, has_pending;
  uint32_t nstates, last_state;
  uint64_t last_state_ts, trans_size, steps_done, gpu_stop;
  uint64_t first[NSTATES]; /* first time of each state, 0 none */
  uint32_t p_state;        /* the state whose proxy_states row waits for its end */
  uint64_t p_ts, p_arg0, p_arg1;
} open_t;

typedef struct {
  int64_t comm;
  int32_t rank;
  uint32_t proc, seg, comm_index, abi;
  int32_t device;
  char *bus_id;
  uint64_t init_ns, fin_ns;
} rinfo_t;

typedef struct {
  uint64_t comm_id;
  int32_t nranks, nnodes;
  char *name;
} cinfo_t;

typedef struct {
  ncs_sqlite_opts_t o;
  ncs_sqlite_stats_t *st;
  ncs_analysis_t *a;
  sqlite3 *db;
  sqlite3_stmt *ins[NCS_SQ_NTABLES];
  sqlite3_stmt *upd_stop, *upd_complete, *upd_expired, *upd_segment;
  int failed, oom;
  char msg[512];
  uint64_t next_row[NCS_SQ_NTABLES];
  /* analysis lookups */
  size_t nops, *by_proc, *proc_first; /* op indexes grouped by process */
  uint64_t *op_row;                   /* op index -> instances.id (0 none) */
  /* communicators: the analysis's, then any it does not have */
  cinfo_t *comms;
  size_t ncomms, cap_comms;
  rinfo_t *ranks;
  size_t nranks, cap_ranks;
  hmap_t rank_map; /* (comm, rank, proc) -> ranks index */
  /* per file */
  uint32_t proc, seg;
  int in_seg;
  hmap_t ops;      /* (seg, id) -> op index + 1 */
  hmap_t cmap;     /* comm index -> comm + 1 */
  hmap_t rmap;     /* comm index -> ranks index */
  hmap_t api;      /* CollApi/P2pApi id -> start ns */
  hmap_t rows;     /* Coll/P2p/ProxyOp id -> row id */
  hmap_t open_map; /* id -> open index */
  open_t *open;
  uint32_t nopen, cap_open, *free_open, nfree; /* free_open holds cap_open entries */
  uint64_t seg_records, seg_drops, seg_end;
  int seg_clean;
  char *plugin_version;
  /* progress */
  uint64_t t0, last_print, bytes_before, bytes_total;
  int printed;
} sq_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void failf(sq_t *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(sq_t *q, const char *fmt, ...) {
  if (q->failed) return;
  q->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(q->msg, sizeof q->msg, fmt, ap);
  va_end(ap);
}
/* SQLite's message, and the system's when an I/O call failed ("disk I/O error: File too large") */
static const char *db_err(sq_t *q, const char *msg, char *buf, size_t len) {
  int e = sqlite3_system_errno(q->db);
  if (e && (sqlite3_errcode(q->db) & 0xff) == SQLITE_IOERR)
    snprintf(buf, len, "%s: %s", msg, strerror(e));
  else if (e == ENOSPC && (sqlite3_errcode(q->db) & 0xff) == SQLITE_FULL)
    snprintf(buf, len, "%s", strerror(e));
  else
    snprintf(buf, len, "%s", msg);
  return buf;
}
static void db_fail(sq_t *q, const char *what) {
  char b[256];
  failf(q, "cannot write %s: %s (%s)", q->o.out, db_err(q, sqlite3_errmsg(q->db), b, sizeof b),
        what);
}
static void oom(sq_t *q) {
  failf(q, "out of memory");
  q->oom = 1;
}

static int exec(sq_t *q, const char *sql) {
  if (q->failed) return -1;
  char *e = NULL;
  if (sqlite3_exec(q->db, sql, NULL, NULL, &e) != SQLITE_OK) {
    char b[256];
    failf(q, "cannot write %s: %s (%.40s)", q->o.out,
          db_err(q, e ? e : sqlite3_errmsg(q->db), b, sizeof b), sql);
    sqlite3_free(e);
    return -1;
  }
  return 0;
}

static sqlite3_stmt *prepare(sq_t *q, const char *sql) {
  sqlite3_stmt *s = NULL;
  if (q->failed) return NULL;
  if (sqlite3_prepare_v3(q->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
    failf(q, "cannot prepare '%.60s': %s", sql, sqlite3_errmsg(q->db));
    return NULL;
  }
  return s;
}

/* binding: column c of the table (0-based) is parameter c + 1 */
static void b_i64(sqlite3_stmt *s, int c, int64_t v) { sqlite3_bind_int64(s, c + 1, v); }
static void b_u64(sqlite3_stmt *s, int c, uint64_t v) { sqlite3_bind_int64(s, c + 1, (int64_t)v); }
static void b_nz(sqlite3_stmt *s, int c, uint64_t v) { /* 0 means unknown: NULL */
  if (v) sqlite3_bind_int64(s, c + 1, (int64_t)v);
}
static void b_dbl(sqlite3_stmt *s, int c, double v) { sqlite3_bind_double(s, c + 1, v); }
static void b_txt(sqlite3_stmt *s, int c, const char *v) { /* executed before v goes away */
  if (v) sqlite3_bind_text(s, c + 1, v, -1, SQLITE_STATIC);
}

static void step(sq_t *q, sqlite3_stmt *s, const char *what) {
  if (!q->failed && sqlite3_step(s) != SQLITE_DONE) db_fail(q, what);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
}
static void insert(sq_t *q, int t) {
  if (q->failed) {
    sqlite3_reset(q->ins[t]), sqlite3_clear_bindings(q->ins[t]);
    return;
  }
  step(q, q->ins[t], ncs_sqlite_table_names[t]);
  if (!q->failed) q->st->rows[t]++;
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

/* ================================================================ schema creation */

static int create_schema(sq_t *q) {
  static const char *const pragmas =
      "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
      "PRAGMA cache_size=-65536; PRAGMA page_size=8192;";
  if (exec(q, pragmas) != 0) return -1;
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
        oom(q);
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
    if (exec(q, sql) != 0) break;
    k = (size_t)snprintf(sql, cap, "INSERT INTO %s VALUES (", ncs_sqlite_table_names[t]);
    for (int c = 0; c < tables[t].ncols; c++)
      k += (size_t)snprintf(sql + k, cap - k, "%s?", c ? "," : "");
    snprintf(sql + k, cap - k, ")");
    q->ins[t] = prepare(q, sql);
  }
  free(sql);
  q->upd_stop = prepare(q, "UPDATE instances SET stop_mono_ns = ?1 WHERE id = ?2");
  q->upd_complete = prepare(q,
                            "UPDATE instances SET end_mono_ns = ?1, first_child_mono_ns = ?2, "
                            "kernel_start_gpu_ns = ?3, kernel_stop_gpu_ns = ?4, "
                            "completion_flags = ?5, n_kernel_ch = ?6, n_proxy_op = ?7, n_open = ?8 "
                            "WHERE id = ?9");
  q->upd_expired = prepare(q, "UPDATE instances SET expired = ?1 WHERE id = ?2");
  q->upd_segment = prepare(q,
                           "UPDATE segments SET records = ?1, drops = ?2, clean = ?3, "
                           "end_mono_ns = ?4 WHERE process_id = ?5 AND segment = ?6");
  return q->failed ? -1 : 0;
}

/* ================================================================ communicators and ranks */

static int64_t comm_of(sq_t *q, const ncs_comm_info_t *c) {
  int64_t k = ncs_job_comm_index(q->a->job, c->comm_id, c->nranks, q->proc);
  if (k < 0) { /* the analysis skipped it (comm index beyond its table): our own row */
    for (size_t i = q->a->job->ncomms; i < q->ncomms; i++)
      if (q->comms[i].comm_id == c->comm_id && q->comms[i].nranks == c->nranks) return (int64_t)i;
    if (q->ncomms == q->cap_comms) {
      size_t n = q->cap_comms ? 2 * q->cap_comms : 16;
      cinfo_t *p = realloc(q->comms, n * sizeof *p);
      if (!p) return oom(q), -1;
      q->comms = p, q->cap_comms = n;
    }
    k = (int64_t)q->ncomms++;
    q->comms[k] = (cinfo_t){c->comm_id, c->nranks, c->nnodes, NULL};
  }
  cinfo_t *ci = &q->comms[k];
  if (!ci->name && c->name && *c->name && !(ci->name = strdup(c->name))) oom(q);
  return k;
}

static void on_comm(sq_t *q, const ncs_comm_info_t *c) {
  int64_t k = comm_of(q, c);
  if (k < 0) return;
  if (hm_put(&q->cmap, c->index, ((uint64_t)(k + 1) << 32) | (uint32_t)c->rank) != 0) {
    oom(q);
    return;
  }
  uint64_t key = hm_mix(((uint64_t)k << 40) ^ ((uint64_t)(uint32_t)c->rank << 8)) ^ q->proc;
  uint64_t ri;
  for (;; key++) { /* the key is a hash: verify */
    if (!hm_get(&q->rank_map, key, &ri)) break;
    const rinfo_t *r = &q->ranks[ri];
    if (r->comm == k && r->rank == c->rank && r->proc == q->proc) {
      if (hm_put(&q->rmap, c->index, ri) != 0) oom(q);
      return; /* the first COMM chunk of (comm, rank, process) describes it */
    }
  }
  if (q->nranks == q->cap_ranks) {
    size_t n = q->cap_ranks ? 2 * q->cap_ranks : 64;
    rinfo_t *p = realloc(q->ranks, n * sizeof *p);
    if (!p) {
      oom(q);
      return;
    }
    q->ranks = p, q->cap_ranks = n;
  }
  rinfo_t *r = &q->ranks[q->nranks];
  *r = (rinfo_t){k, c->rank, q->proc, q->seg, c->index, c->abi_version, c->device, NULL,
                 c->init_ns, 0};
  if (c->bus_id && *c->bus_id && !(r->bus_id = strdup(c->bus_id))) oom(q);
  if (hm_put(&q->rank_map, key, q->nranks) != 0 || hm_put(&q->rmap, c->index, q->nranks) != 0)
    oom(q);
  q->nranks++;
}

/* comm (or -1) and rank of a START's context */
static void ctx_of(const sq_t *q, const ncs_event_t *e, int64_t *comm, int32_t *rank) {
  uint64_t v;
  *comm = -1, *rank = e->rank;
  if (e->ctx_kind == NCS_CTX_LOCAL && hm_get(&q->cmap, e->ctx, &v))
    *comm = (int64_t)(v >> 32) - 1, *rank = (int32_t)(uint32_t)v;
}

/* ================================================================ Coll / P2p */

static uint64_t parent_row(const sq_t *q, const ncs_event_t *e) {
  uint64_t v;
  return e->parent_kind == NCS_REF_LOCAL && hm_get(&q->rows, e->parent, &v) ? v : 0;
}

static void coll_start(sq_t *q, const ncs_event_t *e) {
  sqlite3_stmt *s = q->ins[NCS_SQ_INSTANCES];
  uint64_t row = ++q->next_row[NCS_SQ_INSTANCES], v;
  if (hm_put(&q->rows, e->id, row) != 0) {
    oom(q);
    return;
  }
  int64_t comm;
  int32_t rank;
  ctx_of(q, e, &comm, &rank);
  const int coll = e->type == NCS_T_COLL;
  b_u64(s, IN_id, row), b_u64(s, IN_process_id, q->proc), b_u64(s, IN_segment, q->seg);
  b_u64(s, IN_event_id, e->id), b_txt(s, IN_type, coll ? "Coll" : "P2p");
  if (comm >= 0) b_i64(s, IN_comm, comm);
  b_i64(s, IN_rank, rank);
  b_u64(s, IN_start_mono_ns, e->ts);
  if (e->parent_kind == NCS_REF_LOCAL && hm_get(&q->api, e->parent, &v))
    b_u64(s, IN_api_start_mono_ns, v);
  const char *dtype;
  uint64_t count;
  if (coll) {
    b_u64(s, IN_seq, e->f[NCS_F(Coll, seqNumber)]), b_txt(s, IN_func, e->fstr[NCS_F(Coll, func)]);
    b_i64(s, IN_root, (int64_t)e->f[NCS_F(Coll, root)]);
    count = e->f[NCS_F(Coll, count)], dtype = e->fstr[NCS_F(Coll, datatype)];
    b_u64(s, IN_n_channels, e->f[NCS_F(Coll, nChannels)]), b_u64(s, IN_n_warps, e->f[NCS_F(Coll, nWarps)]);
    b_txt(s, IN_algo, e->fstr[NCS_F(Coll, algo)]), b_txt(s, IN_proto, e->fstr[NCS_F(Coll, proto)]);
    b_u64(s, IN_traffic_bytes, e->f[NCS_F(Coll, trafficBytes)]), b_i64(s, IN_op, (int64_t)e->f[NCS_F(Coll, op)]);
    b_u64(s, IN_is_collnet, e->f[NCS_F(Coll, isCollnet)]), b_u64(s, IN_is_nvls, e->f[NCS_F(Coll, isNvls)]);
  } else {
    b_txt(s, IN_func, e->fstr[NCS_F(P2p, func)]), b_i64(s, IN_peer, (int64_t)e->f[NCS_F(P2p, peer)]);
    count = e->f[NCS_F(P2p, count)], dtype = e->fstr[NCS_F(P2p, datatype)];
    b_u64(s, IN_n_channels, e->f[NCS_F(P2p, nChannels)]);
  }
  b_u64(s, IN_nccl_count, count), b_txt(s, IN_nccl_datatype, dtype);
  /* the analysis's view of this operation: the same record, found by (segment, event id) */
  uint64_t k;
  const ncs_op_t *op;
  if (hm_get(&q->ops, ((uint64_t)q->seg << 40) ^ e->id, &k) && (op = ncs_job_op(q->a->job, k - 1)) &&
      op->seg == q->seg && op->id == e->id && op->proc == q->proc) {
    q->op_row[k - 1] = row;
    count = op->count, dtype = op->dtype;
    b_u64(s, IN_bytes, op->bytes);
    b_i64(s, IN_arrival_job_ns, op->arrival), b_i64(s, IN_duration_ns, op->duration);
    b_txt(s, IN_timing, ncs_src_names[op->timing]);
    if (op->kstart) b_i64(s, IN_kernel_start_job_ns, op->kstart);
    if (op->inst != SIZE_MAX) b_u64(s, IN_collective_id, op->inst + 1);
    if (op->p2p) b_u64(s, IN_p2p_order, op->order);
  }
  b_u64(s, IN_count, count), b_txt(s, IN_datatype, dtype);
  insert(q, NCS_SQ_INSTANCES);
}

static void coll_update(sq_t *q, sqlite3_stmt *s, const char *what) {
  if (q->failed) {
    sqlite3_reset(s), sqlite3_clear_bindings(s);
    return;
  }
  step(q, s, what);
}

static void coll_stop(sq_t *q, const ncs_event_t *e, uint64_t row) {
  b_u64(q->upd_stop, 0, e->ts), b_u64(q->upd_stop, 1, row);
  coll_update(q, q->upd_stop, "instances stop");
}

static void coll_complete(sq_t *q, const ncs_event_t *e, uint64_t row) {
  sqlite3_stmt *s = q->upd_complete;
  b_nz(s, 0, e->end_ns), b_nz(s, 1, e->first_child_ns), b_nz(s, 2, e->gpu_start);
  b_nz(s, 3, e->gpu_stop), b_u64(s, 4, e->cflags), b_u64(s, 5, e->n_kernel_ch);
  b_u64(s, 6, e->n_proxy_op), b_u64(s, 7, e->n_open), b_u64(s, 8, row);
  coll_update(q, s, "instances completion");
}

/* ================================================================ KernelCh, ProxyOp, ProxyStep */

static void close_open(sq_t *q, open_t *o, uint64_t stop);

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
      if (!p) return oom(q), NULL;
      q->open = p;
      uint32_t *f = realloc(q->free_open, n * sizeof *f);
      if (!f) return oom(q), NULL;
      q->free_open = f, q->cap_open = n;
    }
    i = q->nopen++;
  }
  if (hm_put(&q->open_map, e->id, i) != 0) return oom(q), NULL;
  open_t *o = &q->open[i];
  memset(o, 0, sizeof *o);
  o->id = e->id, o->type = e->type, o->in_use = 1, o->start = e->ts;
  _Static_assert(NCS_NF(ProxyOp) <= 6 && NCS_NF(KernelCh) <= 6 && NCS_NF(ProxyStep) <= 6, "open_t.f holds them");
  for (int k = 0; k < 6 && k < e->nfields; k++) o->f[k] = e->f[k];
  ctx_of(q, e, &o->comm, &o->rank);
  o->pxn = (e->flags & NCS_SF_PXN) != 0;
  o->parent_row = parent_row(q, e);
  o->parent_id = e->parent_kind == NCS_REF_LOCAL ? e->parent : 0;
  return o;
}

static open_t *open_get(sq_t *q, uint64_t id) {
  uint64_t i;
  return hm_get(&q->open_map, id, &i) ? &q->open[i] : NULL;
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
  insert(q, NCS_SQ_PROXY_STATES);
}

static void on_state(sq_t *q, open_t *o, const ncs_event_t *e) {
  if (o->type == NCS_T_KERNEL_CH) {
    if (e->state == ST_KERNEL_CH_STOP && e->arg0) o->gpu_stop = e->arg0;
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

/* insert the row of an open event; stop 0: it never stopped */
static void close_open(sq_t *q, open_t *o, uint64_t stop) {
  sqlite3_stmt *s;
  if (!stop) q->st->unfinished++;
  if (!o->parent_row && o->parent_id) hm_get(&q->rows, o->parent_id, &o->parent_row);
  if (o->type == NCS_T_KERNEL_CH) {
    s = q->ins[NCS_SQ_KERNEL_CHANNELS];
    b_u64(s, KC_id, o->row), b_u64(s, KC_process_id, q->proc), b_u64(s, KC_segment, q->seg);
    b_u64(s, KC_event_id, o->id), b_nz(s, KC_parent_event_id, o->parent_id);
    b_nz(s, KC_instance_id, o->parent_row);
    if (o->comm >= 0) b_i64(s, KC_comm, o->comm);
    b_i64(s, KC_rank, o->rank), b_u64(s, KC_channel, o->f[NCS_F(KernelCh, channelId)]);
    b_u64(s, KC_start_mono_ns, o->start), b_nz(s, KC_stop_mono_ns, stop);
    uint64_t ptimer = o->f[NCS_F(KernelCh, pTimer)];
    b_nz(s, KC_start_gpu_ns, ptimer), b_nz(s, KC_stop_gpu_ns, o->gpu_stop);
    if (ptimer && o->gpu_stop >= ptimer) b_u64(s, KC_gpu_duration_ns, o->gpu_stop - ptimer);
    if (o->expired) b_txt(s, KC_expired, expired_name(o->expired));
    insert(q, NCS_SQ_KERNEL_CHANNELS);
  } else if (o->type == NCS_T_PROXY_OP) {
    state_row(q, o, stop);
    s = q->ins[NCS_SQ_PROXY_OPS];
    b_u64(s, PO_id, o->row), b_u64(s, PO_process_id, q->proc), b_u64(s, PO_segment, q->seg);
    b_u64(s, PO_event_id, o->id), b_nz(s, PO_parent_event_id, o->parent_id);
    b_nz(s, PO_instance_id, o->parent_row);
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
    insert(q, NCS_SQ_PROXY_OPS);
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
    insert(q, NCS_SQ_PROXY_STEPS);
  }
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
  case NCS_T_COLL:
  case NCS_T_P2P: return NCS_SQ_INSTANCES;
  default: return -1;
  }
}

/* ================================================================ streaming */

static void on_event(sq_t *q, const ncs_event_t *e) {
  uint64_t row;
  open_t *o;
  if (e->kind == NCS_REC_START && (e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API)) {
    if (hm_put(&q->api, e->id, e->ts) != 0) oom(q);
    return;
  }
  int t = table_of(e->type);
  if (t < 0 || !want(q, e->type)) return;
  int coll = t == NCS_SQ_INSTANCES;
  switch (e->kind) {
  case NCS_REC_START:
    if (coll) {
      coll_start(q, e);
    } else if ((o = open_new(q, e))) {
      o->row = ++q->next_row[t];
      if (e->type == NCS_T_PROXY_OP && hm_put(&q->rows, e->id, o->row) != 0) oom(q);
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
      coll_update(q, q->upd_expired, "instances expired");
    } else if (!coll && (o = open_get(q, e->id))) {
      o->expired = (uint8_t)(e->reason ? e->reason : 255);
    }
    break;
  default: break;
  }
}

static void segment_end(sq_t *q) {
  if (!q->in_seg) return;
  for (uint32_t i = 0; i < q->nopen; i++)
    if (q->open[i].in_use) close_open(q, &q->open[i], 0);
  sqlite3_stmt *s = q->upd_segment;
  b_u64(s, 0, q->seg_records), b_u64(s, 1, q->seg_drops), b_u64(s, 2, (uint64_t)q->seg_clean);
  b_nz(s, 3, q->seg_end), b_u64(s, 4, q->proc), b_u64(s, 5, q->seg);
  coll_update(q, s, "segments");
  hm_clear(&q->cmap), hm_clear(&q->rmap), hm_clear(&q->api), hm_clear(&q->rows);
  hm_clear(&q->open_map);
  q->nopen = q->nfree = 0;
  q->in_seg = 0;
}

static void segment_start(sq_t *q, const ncs_segment_info_t *si) {
  static const char *const modes[] = {"trace", "flight", "capture"};
  segment_end(q);
  q->in_seg = 1, q->seg = si->index;
  q->seg_records = q->seg_drops = q->seg_end = 0, q->seg_clean = 0;
  if (!q->plugin_version &&
      !(q->plugin_version = strdup(si->plugin_version ? si->plugin_version : "")))
    oom(q);
  sqlite3_stmt *s = q->ins[NCS_SQ_SEGMENTS];
  b_u64(s, SG_process_id, q->proc), b_u64(s, SG_segment, si->index);
  b_txt(s, SG_plugin_version, si->plugin_version), b_u64(s, SG_epoch, si->epoch);
  b_txt(s, SG_mode, si->mode < 3 ? modes[si->mode] : "unknown");
  b_u64(s, SG_events_mask, si->mask), b_u64(s, SG_start_realtime_ns, si->start_realtime_ns);
  b_u64(s, SG_start_mono_ns, si->start_mono_ns), b_txt(s, SG_cmdline, si->cmdline);
  b_u64(s, SG_pool_bytes, si->pool_bytes), b_u64(s, SG_clean, 0);
  insert(q, NCS_SQ_SEGMENTS);
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

static void progress(sq_t *q, ncs_reader_t *r, int final) {
  if (!q->o.progress) return;
  uint64_t t = now_ns();
  if (final) {
    if (!q->printed) return;
  } else if (t - q->t0 < 1000000000ull || t - q->last_print < 1000000000ull) {
    return;
  }
  q->last_print = t, q->printed = 1;
  uint64_t done = final ? q->bytes_total : q->bytes_before + (r ? ncs_reader_offset(r) : 0);
  double pct = q->bytes_total ? 100.0 * (double)done / (double)q->bytes_total : 100.0;
  fprintf(stderr, "%s: %5.1f%% (file %u of %" PRIu64 ", %" PRIu64 " records, %.1f s)\n", q->o.prog,
          pct > 100 ? 100 : pct, q->proc + 1 > q->a->job->nprocs ? q->a->job->nprocs : q->proc + 1,
          (uint64_t)q->a->job->nprocs, q->st->records, (double)(t - q->t0) * 1e-9);
}

static void export_file(sq_t *q, uint32_t pi) {
  const ncs_job_proc_t *p = &q->a->job->procs[pi];
  q->proc = pi, q->in_seg = 0, q->seg = 0;
  free(q->plugin_version);
  q->plugin_version = NULL;
  /* this file's operations in the analysis, by (segment, event id) */
  hm_clear(&q->ops);
  for (size_t k = q->proc_first[pi]; k < q->proc_first[pi + 1]; k++) {
    const ncs_op_t *op = ncs_job_op(q->a->job, q->by_proc[k]);
    if (op && hm_put(&q->ops, ((uint64_t)op->seg << 40) ^ op->id, q->by_proc[k] + 1) != 0) {
      oom(q);
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
      case NCS_ITEM_COMM: on_comm(q, &it.comm); break;
      case NCS_ITEM_COMM_END: {
        uint64_t ri;
        if (hm_get(&q->rmap, it.comm.index, &ri) && q->ranks[ri].seg == q->seg)
          q->ranks[ri].fin_ns = it.ts;
        break;
      }
      case NCS_ITEM_EVENT:
        records++, q->seg_records++, q->st->records++;
        on_event(q, &it.ev);
        break;
      case NCS_ITEM_COUNTERS: on_counters(q, it.counters, 0); break;
      case NCS_ITEM_FOOTER: on_counters(q, it.counters, 1); break;
      default: break;
      }
      if (++n == 65536) n = 0, progress(q, r, 0);
    }
    if (!q->failed && rc < 0) {
      int d = ncs_reader_damage(r);
      damage = d == NCS_DAMAGE_TRUNCATED ? "truncated" : "corrupt";
      snprintf(err, sizeof err, "%s", ncs_reader_error(r));
      if (d == NCS_DAMAGE_TRUNCATED)
        q->st->truncated++;
      else
        q->st->damaged++;
      fprintf(stderr, "%s: warning: %s: %s\n", q->o.prog, p->path, err);
    }
    segment_end(q);
    ncs_reader_close(r);
  }
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
  insert(q, NCS_SQ_PROCESSES);
}

/* ================================================================ the analysis tables */

static void analysis_tables(sq_t *q) {
  const ncs_analysis_t *a = q->a;
  sqlite3_stmt *s;
  for (uint32_t h = 0; h < a->job->nhosts; h++) {
    s = q->ins[NCS_SQ_HOSTS];
    b_u64(s, HO_id, h), b_txt(s, HO_host, a->job->hosts[h].host);
    b_i64(s, HO_offset_ns, a->job->hosts[h].offset), b_i64(s, HO_error_ns, a->job->hosts[h].error);
    b_u64(s, HO_samples, a->job->hosts[h].samples);
    insert(q, NCS_SQ_HOSTS);
  }
  for (size_t c = 0; c < q->ncomms; c++) {
    const cinfo_t *ci = &q->comms[c];
    char hex[24];
    snprintf(hex, sizeof hex, "0x%016" PRIx64, ci->comm_id);
    s = q->ins[NCS_SQ_COMMS];
    b_u64(s, CM_id, c), b_u64(s, CM_comm_id, ci->comm_id), b_txt(s, CM_comm_hex, hex);
    b_txt(s, CM_name, ci->name), b_i64(s, CM_nranks, ci->nranks), b_i64(s, CM_nnodes, ci->nnodes);
    b_i64(s, CM_ranks_seen, c < a->job->ncomms ? a->job->comms[c].ranks_seen : 0);
    insert(q, NCS_SQ_COMMS);
  }
  /* ranks: the report's per-rank totals belong to (comm, rank) and the process of its first
   * operation */
  hmap_t am = {0};
  for (uint32_t k = 0; k < a->nranks; k++)
    if (hm_put(&am, ((uint64_t)a->ranks[k].comm << 32) | (uint32_t)a->ranks[k].rank, k) != 0)
      {
        hm_free(&am);
        oom(q);
        return;
      }
  for (size_t k = 0; k < q->nranks; k++) {
    const rinfo_t *r = &q->ranks[k];
    s = q->ins[NCS_SQ_RANKS];
    b_u64(s, RK_id, k + 1), b_i64(s, RK_comm, r->comm), b_i64(s, RK_rank, r->rank);
    b_u64(s, RK_process_id, r->proc), b_u64(s, RK_segment, r->seg);
    b_u64(s, RK_comm_index, r->comm_index), b_u64(s, RK_abi_version, r->abi);
    if (r->device >= 0) b_i64(s, RK_device, r->device);
    b_txt(s, RK_bus_id, r->bus_id), b_nz(s, RK_init_mono_ns, r->init_ns);
    b_nz(s, RK_finalize_mono_ns, r->fin_ns);
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
    insert(q, NCS_SQ_RANKS);
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
    insert(q, NCS_SQ_COLLECTIVES);
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
    insert(q, NCS_SQ_BUCKETS);
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
    insert(q, NCS_SQ_P2P);
  }
}

static void meta(sq_t *q, const char *path) {
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
    insert(q, NCS_SQ_META);
  }
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
    b_txt(s, MT_key, nums[i].k), b_txt(s, MT_value, nums[i].v);
    insert(q, NCS_SQ_META);
  }
  snprintf(buf, sizeof buf, "%u", a->job->nhosts);
  b_txt(s, MT_key, "hosts"), b_txt(s, MT_value, buf);
  insert(q, NCS_SQ_META);
}

static void sq_free(sq_t *q) {
  for (int t = 0; t < NCS_SQ_NTABLES; t++) sqlite3_finalize(q->ins[t]);
  sqlite3_finalize(q->upd_stop), sqlite3_finalize(q->upd_complete);
  sqlite3_finalize(q->upd_expired), sqlite3_finalize(q->upd_segment);
  if (q->db) sqlite3_close_v2(q->db);
  q->db = NULL;
  for (size_t i = 0; i < q->ncomms; i++) free(q->comms[i].name);
  for (size_t i = 0; i < q->nranks; i++) free(q->ranks[i].bus_id);
  free(q->comms), free(q->ranks), free(q->by_proc), free(q->proc_first), free(q->op_row);
  free(q->open), free(q->free_open), free(q->plugin_version);
  hm_free(&q->rank_map), hm_free(&q->ops), hm_free(&q->cmap), hm_free(&q->rmap);
  hm_free(&q->api), hm_free(&q->rows), hm_free(&q->open_map);
  if (q->a) ncs_analysis_free(q->a);
}

/* index the analysis: its operations grouped by process, its communicators first */
static int prepare_analysis(sq_t *q) {
  const ncs_analysis_t *a = q->a;
  q->nops = ncs_job_op_count(a->job);
  q->by_proc = malloc((q->nops ? q->nops : 1) * sizeof *q->by_proc);
  q->proc_first = calloc(a->job->nprocs + 2, sizeof *q->proc_first);
  q->op_row = calloc(q->nops ? q->nops : 1, sizeof *q->op_row);
  q->cap_comms = a->job->ncomms + 16;
  q->comms = calloc(q->cap_comms, sizeof *q->comms);
  if (!q->by_proc || !q->proc_first || !q->op_row || !q->comms) return oom(q), -1;
  const ncs_op_t *op;
  for (size_t k = 0; k < q->nops; k++)
    if ((op = ncs_job_op(a->job, k)) && op->proc < a->job->nprocs) q->proc_first[op->proc + 2]++;
  for (uint32_t p = 0; p < a->job->nprocs; p++) q->proc_first[p + 2] += q->proc_first[p + 1];
  for (size_t k = 0; k < q->nops; k++) /* counting sort: proc_first[p + 1] is p's next slot */
    if ((op = ncs_job_op(a->job, k)) && op->proc < a->job->nprocs)
      q->by_proc[q->proc_first[op->proc + 1]++] = k;
  for (uint32_t c = 0; c < a->job->ncomms; c++)
    q->comms[c] = (cinfo_t){a->job->comms[c].comm_id, a->job->comms[c].nranks, a->job->comms[c].nnodes, NULL};
  q->ncomms = a->job->ncomms;
  return 0;
}

int ncs_export_sqlite(const char *path, const ncs_sqlite_opts_t *o, ncs_sqlite_stats_t *st,
                      char *err, size_t errlen) {
  memset(st, 0, sizeof *st);
  struct stat sb;
  sq_t *q = calloc(1, sizeof *q);
  if (!q) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  q->o = *o, q->st = st, q->t0 = now_ns();
  if (!q->o.types) q->o.types = (1u << NCS_T_COUNT) - 1;
  if (!q->o.prog) q->o.prog = "ncclscope export";
  int rc = 0, opened = 0;
  /* the database is built in a temporary file that takes the output's name at the end; a
   * signal removes it, and a file size limit is a write error (EFBIG) */
  char *in = (char *)path;
  ncs_out_opts_t oo = {.force = o->force, .by_name = 1, .inputs = &in, .ninputs = 1};
  ncs_out_t of;
  if (ncs_out_open(&of, o->out, &oo, err, errlen) != 0) {
    rc = -2;
    goto out;
  }
  opened = 1;
  const ncs_analyze_opts_t ao = {.retain = 1}; /* every operation and instance: rows */
  q->a = ncs_analyze_path_opts(path, &ao, err, errlen);
  if (!q->a) {
    rc = 2;
    goto out;
  }
  st->analysis_seconds = (double)(now_ns() - q->t0) * 1e-9;
  st->files = q->a->job->nprocs;
  for (uint32_t i = 0; i < q->a->job->nprocs; i++)
    if (stat(q->a->job->procs[i].path, &sb) == 0) q->bytes_total += (uint64_t)sb.st_size;
  st->bytes_in = q->bytes_total;
  if (prepare_analysis(q) != 0) goto fail;
  /* one thread uses this connection: no per-call locks, no allocation statistics (the latter
   * is process-wide and only possible before SQLite initialises; harmless when too late) */
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  if (sqlite3_open_v2(of.tmp, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    failf(q, "cannot write %s: %s", o->out, q->db ? sqlite3_errmsg(q->db) : "out of memory");
    goto fail;
  }
  if (create_schema(q) != 0) goto fail;
  for (uint32_t i = 0; i < q->a->job->nprocs && !q->failed; i++) {
    if (exec(q, "BEGIN") != 0) break;
    export_file(q, i);
    exec(q, "COMMIT");
  }
  if (exec(q, "BEGIN") == 0) {
    meta(q, path);
    analysis_tables(q);
    for (size_t i = 0; i < sizeof post_sql / sizeof post_sql[0]; i++) exec(q, post_sql[i]);
    exec(q, "COMMIT");
  }
  exec(q, "PRAGMA analysis_limit=1000; ANALYZE");
  if (q->failed) goto fail;
  for (int t = 0; t < NCS_SQ_NTABLES; t++) sqlite3_finalize(q->ins[t]), q->ins[t] = NULL;
  sqlite3_finalize(q->upd_stop), sqlite3_finalize(q->upd_complete);
  sqlite3_finalize(q->upd_expired), sqlite3_finalize(q->upd_segment);
  q->upd_stop = q->upd_complete = q->upd_expired = q->upd_segment = NULL;
  if (sqlite3_close(q->db) != SQLITE_OK) {
    failf(q, "cannot write %s: %s", o->out, sqlite3_errmsg(q->db));
    goto fail;
  }
  q->db = NULL;
  if (fstat(of.fd, &sb) == 0) st->bytes_out = (uint64_t)sb.st_size;
  opened = 0;
  if (ncs_out_commit(&of, err, errlen) != 0) {
    rc = -2;
    goto out;
  }
  progress(q, NULL, 1);
  rc = st->damaged ? 1 : 0;
  goto out;
fail:
  snprintf(err, errlen, "%s", q->msg[0] ? q->msg : "failed");
  /* out of memory is ncclscope's failure; anything else here is the database's file */
  rc = q->oom || (q->db && sqlite3_errcode(q->db) == SQLITE_NOMEM) ? -1 : -2;
out:
  sq_free(q); /* closes the database before its file is removed */
  if (opened) ncs_out_abort(&of);
  st->seconds = (double)(now_ns() - q->t0) * 1e-9;
  free(q);
  return rc;
}
