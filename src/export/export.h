/* export.h - turn a directory of ncclscope traces into one timeline file (docs/timeline.md).
 *
 * The job model (src/model) reads the job once, retaining its operations, instances, pairs and
 * clocks; the emit pass then streams each trace file to the output as it reads, never holding a
 * file in memory (timeline.h lists the parts).
 */
#ifndef NCS_EXPORT_EXPORT_H
#define NCS_EXPORT_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "export/xfilter.h"
#include "model/model.h"

enum { NCS_EXPORT_PERFETTO = 1, NCS_EXPORT_CHROME = 2 };

typedef struct {
  int format;          /* NCS_EXPORT_* */
  const char *out;     /* output path; "-" is stdout (written as src/util/outfile.h says) */
  int force;           /* replace an existing output file */
  uint32_t job;        /* which job when the files hold several (ncs_job_opts_t.job; 0: one) */
  uint32_t types;      /* event types to export (bit per NCS_T_*); 0 means all */
  int progress;        /* print progress lines to stderr for long exports */
  int jobs;            /* threads; 0: one per core (the output is the same for any number) */
  const char *prog;    /* prefix of messages ("ncclscope export") */
  uint64_t json_hold;  /* Chrome JSON: bytes an open slice holds back before it takes its row
                          (0: 64 KiB; docs/timeline.md, "Chrome JSON") */
  const ncs_job_filter_t *filter; /* the shared filters (xfilter.h); NULL: the whole job */
  /* once the job is read: 0 to go on, else the export stops and returns 4, writing nothing
   * (the check said why: a --comm that names no communicator of the job); NULL: none */
  int (*job_check)(const ncs_job_t *j, void *arg);
  void *check_arg;
} ncs_export_opts_t;

typedef struct {
  uint64_t files, records, bytes_in, bytes_out;
  uint64_t processes, tracks, slices, instants, counter_samples;
  uint64_t coll_flows, p2p_flows, job_slices;
  uint64_t json_rows;       /* Chrome JSON: thread rows the lanes were packed into */
  uint64_t unmatched_stops; /* STOP/STATE of events whose START is not in the trace (dropped) */
  uint64_t unfinished;      /* slices closed at the end of their segment (never stopped) */
  uint32_t damaged, truncated;
  double seconds;
  int gpu_mapped;           /* files whose KernelCh GPU times were mapped to host time */
  int gpu_bounded;          /* of those, files with an error bound (KernelLaunch records) */
  int64_t max_gpu_offset_err_ns; /* the largest such bound */
  int clock_conflicts;      /* files whose GPU and host clocks contradict each other */
  ncs_xf_stats_t filter;    /* what the filter left out (events_left: slices and instants'
                             * records, ranges, loss windows, CUPTI kernels and replays) */
} ncs_export_stats_t;

/* Export the traces of `paths` (directories or files). Returns 0 on success, 1 when something
 * was exported but an input file is damaged in the middle, 2 when there are no traces, 3 when
 * they hold several jobs and o->job chooses none (err lists them), 4 when o->job_check refused
 * the job, -1 on failure (err says why: out of memory), -2 when the output was refused or could
 * not be written (err says why; nothing was left under its name). */
int ncs_export(char *const *paths, size_t npaths, const ncs_export_opts_t *o,
               ncs_export_stats_t *st, char *err, size_t errlen);

#endif
