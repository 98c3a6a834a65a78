/* sqlite_int.h - what the files of the SQLite exporter share (sqlite.h is its interface;
 * docs/sqlite.md the schema).
 *
 *   sqlite_schema.c  the tables and their columns (one X-macro list each), indexes and views;
 *   sqlite_rows.c    one streaming pass per trace file: the raw event tables;
 *   sqlite_tables.c  the job model's and the analysis's tables, and meta;
 *   sqlite.c         the driver, SQLite helpers and the output file.
 */
#ifndef NCS_EXPORT_SQLITE_INT_H
#define NCS_EXPORT_SQLITE_INT_H

#include <sqlite3.h>
#include <stdint.h>

#include "analyze/analyze.h"
#include "export/sqlite.h"
#include "export/xfilter.h"
#include "trace/reader.h"
#include "util/hmap.h"

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
  X(P, damage, T) X(P, damage_message, T) X(P, gpu_offset_error_ns, I) X(P, gpu_clock_windows, I)  \
  X(P, gpu_clock_steps, I) X(P, gpu_check_ops, I) X(P, gpu_check_repaired, I)                     \
  X(P, gpu_check_unknown, I) X(P, gpu_check_channels_left_out, I) X(P, gpu_check_claims_rejected, I) \
  X(P, gpu_check_inferred, I) X(P, gpu_check_impossible, I)

#define COLS_HOSTS(X, P)                                                                           \
  X(P, id, I " PRIMARY KEY") X(P, host, T) X(P, offset_ns, I) X(P, error_ns, I) X(P, samples, I)

#define COLS_SEGMENTS(X, P)                                                                        \
  X(P, process_id, I " NOT NULL") X(P, segment, I " NOT NULL") X(P, plugin_version, T)             \
  X(P, epoch, I) X(P, mode, T) X(P, events_mask, I) X(P, start_realtime_ns, I)                     \
  X(P, start_mono_ns, I) X(P, end_mono_ns, I) X(P, cmdline, T) X(P, pool_bytes, I)                 \
  X(P, records, I) X(P, drops, I) X(P, clean, I)

#define COLS_COMMS(X, P)                                                                           \
  X(P, id, I " PRIMARY KEY") X(P, label, T) X(P, comm_id, I) X(P, comm_hex, T) X(P, name, T)       \
  X(P, nranks, I)                                                                                  \
  X(P, nnodes, I) X(P, ranks_seen, I) X(P, ranks_recorded, I)

#define COLS_RANKS(X, P)                                                                           \
  X(P, id, I " PRIMARY KEY") X(P, comm, I " NOT NULL") X(P, rank, I) X(P, process_id, I)           \
  X(P, segment, I) X(P, comm_index, I) X(P, abi_version, I) X(P, device, I) X(P, bus_id, T)        \
  X(P, init_mono_ns, I) X(P, finalize_mono_ns, I) X(P, instances, I) X(P, last_arrivals, I)        \
  X(P, wait_caused_ns, I) X(P, wait_suffered_ns, I) X(P, slowest, I) X(P, excess_ns, I)            \
  X(P, kernel_wait_ns, I) X(P, transfer_ns, I) X(P, launch_delay_mean_ns, I)                    \
  X(P, queue_delay_mean_ns, I)

#define COLS_COLLECTIVES(X, P)                                                                     \
  X(P, id, I " PRIMARY KEY") X(P, comm, I " NOT NULL") X(P, func, T) X(P, seq, I) X(P, bytes, I)   \
  X(P, size_log2, I) X(P, nranks, I) X(P, nranks_seen, I) X(P, complete, I) X(P, latency_ns, I)    \
  X(P, timing, T) X(P, median_duration_ns, I) X(P, algbw_gbs, R) X(P, busbw_gbs, R)                \
  X(P, first_arrival_job_ns, I) X(P, last_arrival_job_ns, I) X(P, skew_ns, I) X(P, first_rank, I)  \
  X(P, last_rank, I) X(P, last_counted, I) X(P, wait_caused_ns, I) X(P, slowest_rank, I)           \
  X(P, slowest_excess_ns, I) X(P, unsampled, I) X(P, gpu_suspect, I) X(P, no_gpu_time, I)

#define COLS_BUCKETS(X, P)                                                                         \
  X(P, id, I " PRIMARY KEY") X(P, comm, I " NOT NULL") X(P, func, T) X(P, p2p, I)                  \
  X(P, size_log2, I) X(P, bytes_lo, I) X(P, bytes_hi, I) X(P, count, I) X(P, bytes, I)             \
  X(P, timing_kernel_gpu, I) X(P, timing_proxy_host, I) X(P, timing_enqueue_host, I)               \
  X(P, lat_p50_ns, R) X(P, lat_p95_ns, R) X(P, lat_p99_ns, R) X(P, algbw_p50_gbs, R)               \
  X(P, busbw_p50_gbs, R) X(P, busbw_p95_gbs, R) X(P, busbw_p99_gbs, R) X(P, skew_p50_ns, R)        \
  X(P, skew_max_ns, R) X(P, bd_label, T) X(P, bd_reason, T) X(P, bd_wait_rank, I)                \
  X(P, no_gpu_time, I) X(P, unsampled, I) X(P, lat_p50_ci_lo_ns, R) X(P, lat_p50_ci_hi_ns, R)

#define COLS_OPERATIONS(X, P)                                                                       \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, event_id, I)    \
  X(P, type, T) X(P, comm, I) X(P, rank, I) X(P, func, T) X(P, seq, I) X(P, peer, I)               \
  X(P, count, I) X(P, datatype, T) X(P, nccl_count, I) X(P, nccl_datatype, T) X(P, root, I)        \
  X(P, bytes, I) X(P, op, I) X(P, algo, T) X(P, proto, T) X(P, n_channels, I) X(P, n_warps, I)     \
  X(P, traffic_bytes, I) X(P, is_collnet, I) X(P, is_nvls, I) X(P, api_start_mono_ns, I)           \
  X(P, start_mono_ns, I) X(P, stop_mono_ns, I) X(P, end_mono_ns, I) X(P, first_child_mono_ns, I)   \
  X(P, kernel_start_gpu_ns, I) X(P, kernel_stop_gpu_ns, I) X(P, completion_flags, I)               \
  X(P, n_kernel_ch, I) X(P, n_proxy_op, I) X(P, n_open, I) X(P, expired, T)                        \
  X(P, arrival_job_ns, I) X(P, duration_ns, I) X(P, timing, T) X(P, kernel_start_job_ns, I)        \
  X(P, collective_id, I) X(P, p2p_order, I) X(P, user_tag, I) X(P, kernel_variant, T)            \
  X(P, is_sym_coll, I) \
  X(P, gpu_source, T) X(P, kernel_stop_job_ns, I) \
  X(P, cupti_kernels, I) X(P, graph_captured, I) X(P, graph_replays, I) X(P, gpu_check, T)           \
  X(P, completion_inferred, I) X(P, completion_impossible, I)

#define COLS_P2P(X, P)                                                                             \
  X(P, id, I " PRIMARY KEY") X(P, comm, I " NOT NULL") X(P, sender, I) X(P, receiver, I)           \
  X(P, pair_order, I) X(P, send_id, I) X(P, recv_id, I) X(P, send_bytes, I) X(P, recv_bytes, I)    \
  X(P, send_arrival_job_ns, I) X(P, recv_arrival_job_ns, I) X(P, send_duration_ns, I)              \
  X(P, recv_duration_ns, I)

#define COLS_KERNEL_CHANNELS(X, P)                                                                 \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, event_id, I)    \
  X(P, parent_event_id, I) X(P, operation_id, I) X(P, comm, I) X(P, rank, I) X(P, channel, I)       \
  X(P, start_mono_ns, I) X(P, stop_mono_ns, I) X(P, start_gpu_ns, I) X(P, stop_gpu_ns, I)          \
  X(P, gpu_duration_ns, I) X(P, expired, T)

#define COLS_PROXY_OPS(X, P)                                                                       \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, event_id, I)    \
  X(P, parent_event_id, I) X(P, operation_id, I) X(P, comm, I) X(P, rank, I) X(P, pid, I)          \
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

#define COLS_LOSSES(X, P)                                                                          \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, kind, T)        \
  X(P, from_mono_ns, I) X(P, to_mono_ns, I) X(P, records, I) X(P, types, I)

#define COLS_KERNEL_PHASES(X, P)                                                                   \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, event_id, I)    \
  X(P, parent_event_id, I) X(P, kernel_channel_id, I) X(P, operation_id, I) X(P, comm, I)          \
  X(P, rank, I) X(P, channel, I) X(P, phase_id, I) X(P, phase, T) X(P, start_gpu_ns, I)           \
  X(P, stop_gpu_ns, I) X(P, gpu_duration_ns, I) X(P, start_mono_ns, I) X(P, expired, T)

/* the breakdown (docs/report.md, "Breakdown"): the job model's per collective instance, per
 * operation link and per NetPlugin QP */
/* the report's findings (docs/report.md, "Findings"), in its order: headlines first; a stall's
 * own columns NULL for the other kinds */
#define COLS_FINDINGS(X, P)                                                                        \
  X(P, id, I " PRIMARY KEY") X(P, kind, T) X(P, headline, I) X(P, comm, I) X(P, rank, I)           \
  X(P, size_ns, I) X(P, size_share, R) X(P, wait_side, T) X(P, func, T) X(P, seq, I) X(P, bytes, I) \
  X(P, from_job_ns, I) X(P, others, I) X(P, wait_ns, I) X(P, longest_ns, I) X(P, caused_ns, I)     \
  X(P, knock_ons, I) X(P, text, T)

#define COLS_BREAKDOWN(X, P)                                                                       \
  X(P, collective_id, I " PRIMARY KEY") X(P, label, T) X(P, reason, T) X(P, wait_rank, I)          \
  X(P, launch_ns, I) X(P, span_ns, I) X(P, gpu_wait_ns, I) X(P, peer_wait_ns, I)                   \
  X(P, network_ns, I) X(P, flush_ns, I) X(P, network_bytes, I) X(P, links, I) X(P, steps, I)      \
  X(P, queue_ns, I) X(P, queue_unknown, I)

#define COLS_LINKS(X, P)                                                                           \
  X(P, id, I " PRIMARY KEY") X(P, operation_id, I) X(P, collective_id, I) X(P, comm, I)             \
  X(P, rank, I) X(P, peer, I) X(P, channel, I) X(P, is_send, I) X(P, steps, I) X(P, bytes, I)      \
  X(P, start_job_ns, I) X(P, stop_job_ns, I) X(P, first_data_job_ns, I) X(P, gpu_wait_ns, I)       \
  X(P, peer_wait_ns, I) X(P, network_ns, I) X(P, flush_ns, I) X(P, open, I) X(P, proxy_lost, I)

#define COLS_NET_QPS(X, P)                                                                         \
  X(P, id, I " PRIMARY KEY") X(P, operation_id, I) X(P, collective_id, I) X(P, comm, I)             \
  X(P, rank, I) X(P, kind, T) X(P, device, I) X(P, qp, I) X(P, events, I) X(P, bytes, I)           \
  X(P, busy_ns, I)
#define COLS_KERNELS(X, P)                                                                         \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, device, I)      \
  X(P, stream, I) X(P, name, T) X(P, start_job_ns, I) X(P, end_job_ns, I) X(P, nccl, I)            \
  X(P, comm, I) X(P, rank, I) X(P, func, T) X(P, seq, I) X(P, n_ops, I) X(P, graph_id, I)          \
  X(P, replay, I)

#define COLS_GPU_DEVICES(X, P)                                                                     \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, device, I) X(P, comm, I)         \
  X(P, rank, I) X(P, nccl_kernels, I) X(P, compute_kernels, I) X(P, from_job_ns, I)                \
  X(P, to_job_ns, I) X(P, comm_ns, I) X(P, compute_ns, I) X(P, overlap_ns, I) X(P, exposed_ns, I)  \
  X(P, cannot_tell, T)

#define COLS_RANGES(X, P)                                                                          \
  X(P, id, I " PRIMARY KEY") X(P, process_id, I " NOT NULL") X(P, segment, I) X(P, range_id, I)    \
  X(P, parent, I) X(P, rank, I) X(P, thread, I) X(P, depth, I) X(P, name, T) X(P, domain, T)       \
  X(P, kind, T) X(P, state, T) X(P, lower_bound, I) X(P, begin_job_ns, I) X(P, end_job_ns, I)            \
  X(P, wall_ns, I) X(P, colls, I) X(P, p2ps, I) X(P, ops_without_gpu, I) X(P, bytes, I)           \
  X(P, bus_bytes, R) X(P, comm_ns, I) X(P, comm_lower_bound, I) X(P, busbw_gbps, R)              \
  X(P, kernels, I) X(P, compute_ns, I) X(P, busy_ns, I) X(P, exposed_ns, I) X(P, replay, I)

#define COLS_RANGE_METRICS(X, P)                                                                   \
  X(P, range_id, I " NOT NULL") X(P, metric, T) X(P, type, T) X(P, value, R)

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
enum { COLS_OPERATIONS(X_ENUM, OP) OP_N };
enum { COLS_P2P(X_ENUM, PP) PP_N };
enum { COLS_KERNEL_CHANNELS(X_ENUM, KC) KC_N };
enum { COLS_PROXY_OPS(X_ENUM, PO) PO_N };
enum { COLS_PROXY_STEPS(X_ENUM, PS) PS_N };
enum { COLS_PROXY_STATES(X_ENUM, PT) PT_N };
enum { COLS_LOSSES(X_ENUM, LS) LS_N };
enum { COLS_KERNEL_PHASES(X_ENUM, KP) KP_N };
enum { COLS_BREAKDOWN(X_ENUM, BD) BD_N };
enum { COLS_LINKS(X_ENUM, LK) LK_N };
enum { COLS_NET_QPS(X_ENUM, NQ) NQ_N };
enum { COLS_KERNELS(X_ENUM, KN) KN_N };
enum { COLS_GPU_DEVICES(X_ENUM, GD) GD_N };

enum { COLS_RANGES(X_ENUM, RG) RG_N };
enum { COLS_RANGE_METRICS(X_ENUM, RM) RM_N };
enum { COLS_FINDINGS(X_ENUM, FD) FD_N };

#define NSTATES NCS_STATE_COUNT
/* ncs_state_names indexes */
enum {
  ST_STEP_SEND_GPU_WAIT = 8, ST_STEP_SEND_WAIT = 9, ST_STEP_RECV_WAIT = 10,
  ST_STEP_RECV_FLUSH_WAIT = 11, ST_STEP_RECV_GPU_WAIT = 12, ST_OP_IN_PROGRESS = 19,
  ST_STEP_SEND_PEER_WAIT = 20, ST_KERNEL_CH_STOP = 22, ST_KERNEL_PHASE_STOP = 31,
};

/* an open KernelCh, ProxyOp, ProxyStep or KernelPhase: inserted at its STOP */
typedef struct {
  uint64_t id, row, parent_row, parent_id; /* parent_id: its event id, 0 none or not local */
  uint64_t inst_row; /* KernelPhase: its KernelCh's instance row (parent_row is the KernelCh's) */
  uint64_t start, stop, f[6];
  int64_t comm; /* -1 unknown */
  int32_t rank;
  uint8_t type, in_use, pxn, expired, has_pending;
  uint8_t own; /* of no operation (XF_OWN): its row is written only when it overlaps the window */
  uint32_t nstates, last_state;
  uint64_t last_state_ts, trans_size, steps_done, gpu_stop;
  uint64_t first[NSTATES]; /* first time of each state, 0 none */
  uint32_t p_state;        /* the state whose proxy_states row waits for its end */
  uint64_t p_ts, p_arg0, p_arg1;
} open_t;

typedef struct {
  ncs_sqlite_opts_t o;
  ncs_sqlite_stats_t *st;
  ncs_analysis_t *a;
  ncs_xf_t xf;       /* the filter on the rows (xfilter.h) */
  ncs_xf_file_t xs;  /* ... of the file being read */
  uint64_t rows_left; /* rows the filter left out, besides the files' (xs.left) */
  sqlite3 *db;
  sqlite3_stmt *ins[NCS_SQ_NTABLES];
  sqlite3_stmt *upd_stop, *upd_complete, *upd_expired, *upd_segment;
  int failed, oom;
  char msg[512];
  uint64_t next_row[NCS_SQ_NTABLES];
  /* analysis lookups */
  size_t nops, *by_proc, *proc_first; /* op indexes grouped by process */
  uint64_t *op_row;                   /* op index -> instances.id (0 none) */
  /* the ranks table: one row per (comm, rank, process), described by its first member */
  uint32_t *rank_first; /* row k - 1: the job model's member index */
  uint32_t nrank_rows;
  /* per file */
  uint32_t proc, seg;
  int in_seg;
  hmap_t ops;      /* (seg, id) -> op index + 1 */
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

/* sqlite.c: SQLite helpers; binding: column c of a table (0-based) is parameter c + 1 */
void sq_failf(sq_t *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sq_oom(sq_t *q);
int sq_exec(sq_t *q, const char *sql);
sqlite3_stmt *sq_prepare(sq_t *q, const char *sql);
void sq_step(sq_t *q, sqlite3_stmt *s, const char *what);
void sq_insert(sq_t *q, int table);
static inline void b_i64(sqlite3_stmt *s, int c, int64_t v) { sqlite3_bind_int64(s, c + 1, v); }
static inline void b_u64(sqlite3_stmt *s, int c, uint64_t v) { sqlite3_bind_int64(s, c + 1, (int64_t)v); }
static inline void b_nz(sqlite3_stmt *s, int c, uint64_t v) { /* 0 means unknown: NULL */
  if (v) sqlite3_bind_int64(s, c + 1, (int64_t)v);
}
static inline void b_dbl(sqlite3_stmt *s, int c, double v) { sqlite3_bind_double(s, c + 1, v); }
static inline void b_txt(sqlite3_stmt *s, int c, const char *v) { /* executed before v goes away */
  if (v) sqlite3_bind_text(s, c + 1, v, -1, SQLITE_STATIC);
}
/* sqlite_schema.c */
int sq_create_schema(sq_t *q);
int sq_post(sq_t *q); /* indexes, links, views */
/* sqlite_rows.c */
void sq_export_file(sq_t *q, uint32_t proc);
void sq_progress(sq_t *q, ncs_reader_t *r, int final); /* progress lines on stderr (opts.progress) */
/* sqlite_tables.c */
void sq_analysis_tables(sq_t *q);
void sq_meta(sq_t *q, const char *path);
void sq_filter_meta(sq_t *q); /* with a filter: rows of children left without their parent go,
                                 and meta says what the filter left out */

#endif
