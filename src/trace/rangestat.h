/* rangestat.h - what a user range held, per range of one process (docs/ranges.md "Per range").
 *
 * Plain inputs, so that any consumer (the job model's report, export and SQLite) can feed it
 * from what it read: the ranges of a process (RANGES BEGIN/END records), its NCCL operations
 * (API calls with their sizes and GPU times) and its other kernels (CUPTI kernel records with the
 * range they were launched in, from LAUNCH records). Times are the process's monotonic ns (GPU
 * times mapped to it). Which operations fall inside a range:
 *   - a push/pop range holds the operations called on its thread between its begin and end
 *     (NCCL's API calls are made on the thread that pushed the range; a range includes its inner
 *     ones);
 *   - a start/end range (NVTX start/end, which may end on another thread) holds the operations
 *     called on any thread of the process in that time;
 *   - a kernel belongs to the range it was launched in (LAUNCH) and to that range's ancestors;
 *     start/end ranges get none (a launch is tied to the thread's push/pop range only).
 * Nothing is guessed: a range whose end is unknown gets no numbers (NCS_RS_NO_END), one that
 * began before the trace covers (a flight file's window) gets lower bounds (NCS_RS_PARTIAL),
 * operations without GPU times make the communication time a lower bound (NCS_RS_COMM_PARTIAL),
 * and without a kernel source (no CUPTI) GPU busy and exposed communication cannot be told
 * (NCS_RS_NO_KERNELS). Ratios are computed from sums, never averaged.
 */
#ifndef NCS_TRACE_RANGESTAT_H
#define NCS_TRACE_RANGESTAT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t id, parent;       /* parent: the enclosing push/pop range, 0 none */
  uint32_t thread;           /* the producer thread index that began it */
  int startend;              /* 1: an NVTX start/end range */
  uint64_t begin_ns, end_ns; /* end_ns 0: never ended, or its end was lost */
} ncs_rs_range_t;

typedef struct {
  uint32_t thread;
  uint64_t api_ns;    /* when the operation was called (CollApi/P2pApi, Coll/P2p before ABI v5) */
  int p2p;            /* a send or receive; else a collective */
  uint64_t bytes;     /* algorithm bytes, nccl-tests' convention */
  double bus_bytes;   /* bytes times the bus factor */
  uint64_t gpu_start, gpu_end; /* when it ran on the GPU; 0 0 unknown */
} ncs_rs_op_t;

typedef struct {
  uint64_t range;      /* the range it was launched in (innermost), 0 none */
  uint64_t start, end; /* 0 0: no usable times */
} ncs_rs_kernel_t;

enum {
  NCS_RS_NO_END = 1u << 0,       /* the range never ended (or its end was lost): no numbers */
  NCS_RS_COMM_PARTIAL = 1u << 1, /* operations without GPU times: comm_ns and bus_bw are bounds */
  NCS_RS_NO_KERNELS = 1u << 2,   /* no kernel source (CUPTI off) or a start/end range: busy_ns,
                                    compute_ns and exposed_ns cannot be told */
  NCS_RS_PARTIAL = 1u << 3,      /* it began before the trace's coverage: counts, bytes and times
                                    are lower bounds */
};

typedef struct {
  uint32_t flags;      /* NCS_RS_* */
  uint64_t wall_ns;    /* end - begin */
  uint32_t colls, p2ps, ops_without_gpu, kernels, kernels_without_times;
  uint64_t bytes;      /* algorithm bytes of its operations */
  double bus_bytes;
  uint64_t comm_ns;    /* the union of its operations' GPU intervals */
  uint64_t compute_ns; /* the union of its kernels' intervals */
  uint64_t busy_ns;    /* the union of both */
  uint64_t exposed_ns; /* communication not overlapped by a kernel of the range */
  double bus_gbps;     /* bus_bytes / comm_ns (GB/s); 0 when comm_ns is 0 */
} ncs_rs_stat_t;

/* One stat per range, out[i] for r[i]. have_kernels: a kernel source existed (CUPTI active), so
 * a range without kernels had none. covered_from: what the trace holds of the process starts
 * then (a flight file's oldest slot; 0: everything). Returns 0, -1 when out of memory. */
int ncs_rs_compute(const ncs_rs_range_t *r, size_t nr, const ncs_rs_op_t *ops, size_t nops,
                   const ncs_rs_kernel_t *k, size_t nk, int have_kernels, uint64_t covered_from,
                   ncs_rs_stat_t *out);

/* Hardware metrics over several ranges (RANGE_STATE's list: names, NCS_MT_* types; values of
 * range i at values[i * nm + m]). Counters are summed. A ratio or throughput is weighted by GPU
 * time when its denominator is the elapsed time (*.per_second, *.pct_of_peak_sustained_elapsed)
 * and gpu__time_duration.sum is in the list: Σ(v·t)/Σt, the ratio of the sums; any other ratio
 * cannot be combined (how NONE, value NaN). Returns the how of each in how[m]. */
enum { NCS_RS_SUM = 1, NCS_RS_TIME_WEIGHTED = 2, NCS_RS_NONE = 3 };
void ncs_rs_aggregate(const char *const *names, const uint8_t *types, uint32_t nm, const double *values,
                      size_t n, double *out, uint8_t *how);

/* DRAM bytes (read + written) per ns of GPU time, i.e. GB/s, from summed counters; NaN when the
 * list lacks dram__bytes_read.sum, dram__bytes_write.sum or gpu__time_duration.sum, or no time. */
double ncs_rs_dram_gbps(const char *const *names, uint32_t nm, const double *sums);

#endif
