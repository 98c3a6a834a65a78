/* ranges.h - user ranges summed per range name, and per name and rank (docs/report.md, "Ranges").
 *
 * The job model gives every range of every file with its numbers (model.h ncs_job_range_t, from
 * trace/rangestat.h). This sums them: only ranges whose numbers are known (ended; not a lower
 * bound) are summed, the others are counted (no_end, partial). Bus bandwidth is the ratio of the
 * sums (bus bytes / communication time); hardware metrics are combined by rangestat's rules
 * (counters summed, ratios weighted by GPU time or not combined). */
#ifndef NCS_ANALYZE_RANGES_H
#define NCS_ANALYZE_RANGES_H

#include "model/model.h"

typedef struct {
  const char *name;        /* pooled */
  int32_t rank;            /* -1: every rank */
  uint32_t ranks;          /* distinct ranks that had it */
  uint64_t ranges;         /* ranges of that name */
  uint64_t measured;       /* of which ended with known numbers (summed below) */
  uint64_t no_end;         /* its end was lost, or it never ended: not summed */
  uint64_t partial;        /* began before the trace's coverage: lower bounds, not summed */
  uint64_t wall_ns, wall_max_ns;
  uint64_t colls, p2ps, ops_without_gpu, bytes;
  double bus_bytes, bus_gbps; /* bus_gbps: bus_bytes / comm_ns (0: no GPU time) */
  uint64_t comm_ns;        /* union of its operations' GPU intervals, summed over ranges */
  uint64_t comm_partial;   /* measured ranges with operations without GPU times (comm is a bound) */
  uint64_t compute_ns, exposed_ns;
  uint64_t exposed_known;  /* measured ranges whose compute kernels are known (CUPTI) */
  uint32_t nmetrics;       /* 0: none, or the files' metric lists differ */
  const char *metric[NCS_RANGE_MAX_METRICS];
  double value[NCS_RANGE_MAX_METRICS]; /* NaN: cannot be combined */
  uint8_t how[NCS_RANGE_MAX_METRICS];  /* NCS_RS_SUM, NCS_RS_TIME_WEIGHTED, NCS_RS_NONE */
  uint64_t with_values;    /* ranges whose metric values are combined */
  double dram_gbps;        /* (DRAM read + written) / GPU time of the sums; NaN unknown */
} ncs_range_agg_t;

typedef struct {
  ncs_range_agg_t *by_name; /* by total measured wall time, largest first */
  size_t nnames;
  ncs_range_agg_t *by_rank; /* by name (as by_name), then rank */
  size_t nrank;
  uint32_t files;           /* files that recorded ranges (a RANGE_STATE) */
  uint64_t ranges, marks, end_lost, open, partial;
  uint64_t lost;            /* range records the plugin lost (dropped, no slot, untracked, write) */
  uint64_t begin_lost;      /* pops whose push was lost: not in the trace at all */
  uint64_t dropped, no_slot, untracked, write_lost;
  uint32_t files_no_kernels; /* files with ranges but no CUPTI: compute and exposed unknown */
} ncs_ranges_t;

/* 0; the aggregates of j's ranges (after ncs_job_stream) */
int ncs_ranges_build(const ncs_job_t *j, ncs_ranges_t *out);
void ncs_ranges_free(ncs_ranges_t *r);

#endif
