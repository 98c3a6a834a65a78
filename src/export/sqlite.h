/* sqlite.h - `ncclscope export --format sqlite`: a recorded job as one SQLite database whose
 * tables (processes, comms, ranks, collectives, instances, kernel channels, proxy operations and
 * steps, ...) answer the report's questions in SQL. The schema is documented in docs/sqlite.md.
 *
 * The cross-rank numbers (collective latency, bus bandwidth, skew, who arrived last, per-rank
 * duration, arrival, timing source, send/receive pairs) come from src/analyze, the code behind
 * `ncclscope report`; the per-event rows come from one streaming pass over each trace file.
 * Memory: the analysis (about 170 bytes per Coll/P2p of the job) plus the events open at once.
 *
 * The database is written to a temporary file next to the output and renamed over it at the
 * end, so a failed or interrupted export never leaves a partial output (src/util/outfile.h;
 * a FIFO, a character device or "-" gets the finished database copied into it).
 */
#ifndef NCS_EXPORT_SQLITE_H
#define NCS_EXPORT_SQLITE_H

#include <stddef.h>
#include <stdint.h>

#include "export/xfilter.h"
#include "model/model.h"

#define NCS_SQLITE_SCHEMA "ncclscope-sqlite/2" /* meta.schema; bumped on incompatible changes */

/* tables, in creation order */
enum {
  NCS_SQ_META = 0,
  NCS_SQ_PROCESSES,
  NCS_SQ_HOSTS,
  NCS_SQ_SEGMENTS,
  NCS_SQ_COMMS,
  NCS_SQ_RANKS,
  NCS_SQ_COLLECTIVES,
  NCS_SQ_BUCKETS,
  NCS_SQ_OPERATIONS,
  NCS_SQ_P2P,
  NCS_SQ_KERNEL_CHANNELS,
  NCS_SQ_PROXY_OPS,
  NCS_SQ_PROXY_STEPS,
  NCS_SQ_PROXY_STATES,
  NCS_SQ_LOSSES,
  NCS_SQ_KERNEL_PHASES,
  NCS_SQ_BREAKDOWN,
  NCS_SQ_LINKS,
  NCS_SQ_NET_QPS,
  NCS_SQ_KERNELS,
  NCS_SQ_GPU_DEVICES,
  NCS_SQ_RANGES,
  NCS_SQ_RANGE_METRICS,
  NCS_SQ_FINDINGS,
  NCS_SQ_NTABLES
};
extern const char *const ncs_sqlite_table_names[NCS_SQ_NTABLES];

typedef struct {
  const char *out;  /* the database file; "-" is standard output */
  int force;        /* replace an existing file; without it an existing output is an error */
  uint32_t job;     /* which job when the files hold several (ncs_job_opts_t.job; 0: one) */
  uint32_t types;   /* event types whose rows are written (bit per NCS_T_*; 0: all). Coll and
                       P2p fill instances, KernelCh kernel_channels, ProxyOp proxy_ops, ProxyStep
                       proxy_steps, KernelPhase kernel_phases; the analysis tables are always
                       written */
  int progress;     /* progress lines on stderr, about once a second */
  const char *prog; /* prefix of messages ("ncclscope export") */
  const ncs_job_filter_t *filter; /* the shared filters (xfilter.h); NULL: the whole job */
  int (*job_check)(const ncs_job_t *j, void *arg); /* as ncs_export_opts_t's (status 4) */
  void *check_arg;
} ncs_sqlite_opts_t;

typedef struct {
  uint64_t files, records, bytes_in, bytes_out;
  uint64_t rows[NCS_SQ_NTABLES];
  uint64_t unmatched;   /* STOP/STATE/COMPLETE records whose START is not in the trace */
  uint64_t unfinished;  /* events of the event tables that never stopped (stop is NULL) */
  uint32_t damaged, truncated;
  double seconds, analysis_seconds;
  ncs_xf_stats_t filter; /* what the filter left out (events_left: rows) */
} ncs_sqlite_stats_t;

/* Export the traces of `path` (a directory or one file). Returns 0 on success, 1 when the
 * database was written but an input file is damaged in the middle, 2 when there are no traces
 * (err says why), 3 when they hold several jobs and o->job chooses none, 4 when o->job_check
 * refused the job, -1 on failure (out of memory), -2 when the output was refused or could not be
 * written (it exists, it is an input, a full disk, ...); on failure nothing is left at o->out. */
int ncs_export_sqlite(const char *path, const ncs_sqlite_opts_t *o, ncs_sqlite_stats_t *st,
                      char *err, size_t errlen);

#endif
