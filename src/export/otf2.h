/* otf2.h - `ncclscope export --format otf2`: a recorded job as an OTF2 archive for Score-P's tools
 * and Vampir (docs/otf2.md has the mapping).
 *
 * The archive is a directory: ARCHIVE/traces.otf2 (the anchor file a viewer opens), traces.def
 * and traces/. It is built in a hidden temporary directory beside ARCHIVE and renamed into place
 * once OTF2 closed it, so a failed export never leaves a partial archive under the final name.
 * Memory: the analysis (retained: about 370 bytes per Coll/P2p) plus one interval per API call,
 * group and operation of the job.
 */
#ifndef NCS_EXPORT_OTF2_H
#define NCS_EXPORT_OTF2_H

#include <stddef.h>
#include <stdint.h>

#include "export/xfilter.h"
#include "model/model.h"

#define NCS_OTF2_ANCHOR "traces.otf2" /* the file to open, inside the archive directory */

typedef struct {
  const char *out;  /* the archive directory */
  int force;        /* replace an existing archive (a directory holding traces.otf2) */
  uint32_t job;     /* which job when the files hold several (ncs_job_opts_t.job; 0: one) */
  const char *prog; /* prefix of messages ("ncclscope export") */
  const ncs_job_filter_t *filter; /* the shared filters (xfilter.h); NULL: the whole job */
  int (*job_check)(const ncs_job_t *j, void *arg); /* as ncs_export_opts_t's (status 4) */
  void *check_arg;
} ncs_otf2_opts_t;

typedef struct {
  uint64_t files, records, bytes_in;
  uint64_t locations, host_locations, stream_locations, extra_lanes, unrecorded_ranks;
  uint64_t filtered_ranks; /* ranks of a communicator written whose operations the filter left
                            * out: a location without events, like an unrecorded rank's */
  uint64_t regions, events, enters, collectives, messages, metrics;
  uint64_t ops, ops_gpu, ops_host;   /* Coll/P2p written; on a GPU stream; with host times */
  uint64_t ops_skipped;  /* operations with no usable time (never started in job time) */
  uint64_t coll_unknown; /* collectives whose function has no OTF2 operation: region only */
  uint64_t p2p_unpaired; /* sends and receives without a partner: region, no message */
  uint64_t unfinished;   /* API calls and groups that never stopped: closed at their segment end */
  uint32_t damaged, truncated;
  int64_t t_begin, t_end; /* job time of the first and last event written (clock properties) */
  double seconds;
  ncs_xf_stats_t filter;  /* what the filter left out (events_left: API calls and groups) */
} ncs_otf2_stats_t;

/* Export the traces of `path` (a directory or one file). Returns 0 on success, 1 when the
 * archive was written but an input file is damaged in the middle, 2 when there are no traces,
 * 3 when they hold several jobs and o->job chooses none, 4 when o->job_check refused the job,
 * -1 on failure (out of memory, an OTF2 error; err says why), -2 when the output was refused or
 * could not be written. On failure
 * nothing is left at o->out. Without OTF2 at build time it returns -3 and says so. */
int ncs_export_otf2(const char *path, const ncs_otf2_opts_t *o, ncs_otf2_stats_t *st, char *err,
                    size_t errlen);

#endif
