/* phases.h - what profiler ABI v7 (NCCL 2.31) adds to an analysis: the split of an operation's
 * GPU time by its kernels' phases (KernelPhase: initial sync, compute, final sync), user tags
 * (ncclCollConfig_t userProfilerTag) as the application's steps or phases, and symmetric kernels.
 *
 * Two layers. The computations take plain inputs (one operation's phases, one instance's ranks,
 * one operation's tag and times), so that any reader of a job can feed them (docs/report.md, "GPU
 * phases and user tags"). ncs_v7_scan feeds them from the trace files of an analysed job, with
 * the job model's members (communicator, rank, ABI) and job time, for `ncclscope report`: one
 * streaming pass, memory bounded by the operations in flight.
 */
#ifndef NCS_ANALYZE_PHASES_H
#define NCS_ANALYZE_PHASES_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/analyze.h"

#define NCS_GPU_PHASES 3 /* KernelPhase phaseId 0 initial sync, 1 compute, 2 final sync */
extern const char *const ncs_gpu_phase_names[NCS_GPU_PHASES]; /* "initial_sync", ... */

/* One KernelPhase of one channel: GPU ns from its start (pTimer) to its end (KernelPhaseStop).
 * end 0: the end never came. */
typedef struct {
  uint32_t channel, phase;
  uint64_t start, end;
} ncs_kphase_t;

/* One operation's GPU time split: for each phase, its mean duration over the channels that
 * reported phases (NCCL leaves out phases of no length: a channel without one spent 0 ns in it).
 * The three add up to the mean length of those channels' phased work. */
typedef struct {
  uint32_t channels; /* channels with at least one complete phase; 0: cannot tell */
  uint64_t ns[NCS_GPU_PHASES];
  uint32_t bad;      /* phases left out: unknown id, no end, or an end before the start */
} ncs_gpu_split_t;

/* Splits one operation's phases; returns out->channels. */
uint32_t ncs_gpu_split(const ncs_kphase_t *p, size_t n, ncs_gpu_split_t *out);

/* The sum of operations' splits, e.g. per rank. ops_without: operations whose kernels reported
 * channels (KernelCh) but no phase: their split cannot be told. */
typedef struct {
  uint64_t ops, ops_without;
  uint64_t ns[NCS_GPU_PHASES]; /* sums over ops of the split's ns */
} ncs_gpu_split_sum_t;
void ncs_gpu_split_add(ncs_gpu_split_sum_t *s, const ncs_gpu_split_t *op, int had_kernel);

/* The ranks of one collective instance seen from the GPU: a rank whose kernels waited least in
 * the initial sync (its peers' opening barrier) arrived last. initial[k]: rank k's initial-sync
 * ns, or UINT64_MAX when it cannot be told. Returns the index of the last arrival and sets
 * *spread (largest - smallest initial sync); -1 when fewer than 2 ranks can be told or no rank
 * waited less than another (no evidence of an order). */
int ncs_gpu_last_arrival(const uint64_t *initial, size_t n, uint64_t *spread);

/* User tags: the operations of each tag. Tag 0 is "untagged" (NCCL's convention); operations of
 * communicators NCCL called through ABI v6 or older have no tag to tell (unknown, not untagged). */
typedef struct {
  uint64_t tag;
  uint64_t ops;
  int64_t first_start, last_end; /* job time ns of its earliest operation start, latest end */
  int64_t busy;                  /* sum of its operations' durations (start to completion), ns */
} ncs_tag_t;
typedef struct {
  ncs_tag_t *v;
  size_t n, cap;
  uint64_t untagged, unknown;
  void *index; /* tag -> v index */
} ncs_tags_t;
/* tagged: the communicator's ABI has tags (v7+); tag 0 then counts as untagged. end < start:
 * no completion known (busy and last_end left alone). Returns 0, or -1 out of memory. */
int ncs_tags_add(ncs_tags_t *t, int tagged, uint64_t tag, int64_t start, int64_t end);
void ncs_tags_sort(ncs_tags_t *t); /* by tag; no ncs_tags_add after it */
void ncs_tags_free(ncs_tags_t *t);

/* ---- the pass over a job's trace files (ncclscope report) */
typedef struct {
  uint32_t comm;
  int32_t rank;
  ncs_gpu_split_sum_t sum;
} ncs_v7_rank_t;

typedef struct {
  char func[32], variant[64]; /* a symmetric kernel's function and variant */
  uint64_t ops;
} ncs_v7_variant_t;

typedef struct {
  uint32_t procs;          /* trace files with a communicator of ABI v7+: the only ones read */
  uint32_t v7_comm_ranks;  /* COMM chunks (a communicator's rank in a segment) of ABI v7+ */
  uint64_t ops;            /* Coll/P2p operations seen */
  uint64_t incomplete;     /* of which never completed in their segment (not split, not tagged) */
  ncs_v7_rank_t *ranks;    /* per (comm, rank) with phases or KernelCh under v7, by comm and rank */
  uint32_t nranks;
  ncs_gpu_split_sum_t all; /* every operation */
  ncs_tags_t tags;
  ncs_v7_variant_t *variants; /* symmetric kernels per (func, variant) */
  uint32_t nvariants;
  uint64_t colls, sym_colls;  /* Coll operations of v7 communicators, of which symmetric */
} ncs_v7_t;

/* Reads the files of an analysed job (the model's a->job->procs) that have a communicator of ABI
 * v7 or later (ncs_job_proc_t.abi_max), once; communicators, ranks and times are the model's. Operations of the communicators of older versions there count
 * as tags unknown. 0, or -1 with err (out of memory); damage ends a file's pass where the
 * analysis's ended. */
int ncs_v7_scan(const ncs_analysis_t *a, ncs_v7_t *out, char *err, size_t errlen);
void ncs_v7_free(ncs_v7_t *v);

#endif
