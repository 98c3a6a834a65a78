/* analyze.h - cross-rank analysis of a recorded job (the engine of `ncclscope report`).
 *
 * ncs_analyze_path reads every trace file of a job directory, matches collective instances across
 * ranks by (commId, func, seqNumber), pairs sends with receives by (commId, peer, order), maps
 * clocks, and aggregates per communicator x collective x size bucket and per rank. Every number
 * is defined in docs/report.md. All times are ns; bandwidths are GB/s (1e9 bytes/s).
 *
 * Memory is bounded by the ranks, communicators, buckets and the operations in flight, not by the
 * length of the job (docs/report.md, "Memory"): all trace files are read at once, merged in time
 * order; an operation is kept from its START until its completion settled, an instance until all
 * its ranks were seen (or the horizon closed it), and the quantiles of a bucket come from at most
 * NCS_AN_EXACT_MAX exact samples, then from a log-scale sketch. Unless ncs_analyze_opts_t.retain
 * asks for the per-operation and per-instance records (ncs_an_op, ncs_an_instance: exporters),
 * whose memory grows with the job.
 */
#ifndef NCS_ANALYZE_H
#define NCS_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#define NCS_AN_GAP_MAX 65536 /* KernelCh clock samples kept per process */
#define NCS_AN_EVIDENCE 3    /* instances kept as evidence per rank */
#define NCS_AN_CELL_MAX 262144 /* rank x bucket cells kept (about 10 MB); see cells_dropped */
/* the streaming analysis's bounds (docs/report.md, "Memory"); -D overrides are for tests */
#ifndef NCS_AN_EXACT_MAX
#define NCS_AN_EXACT_MAX 4096 /* exact samples per quantile of a bucket; beyond: the sketch */
#endif
#define NCS_AN_SKETCH_ERR 0.005 /* the sketch's largest relative error of a quantile */
#ifndef NCS_AN_HORIZON_NS
#define NCS_AN_HORIZON_NS 10000000000ll /* trace time after which an open instance is closed */
#endif
#ifndef NCS_AN_SETTLE_NS
#define NCS_AN_SETTLE_NS 1000000000ll /* trace time a completion waits for its revisions */
#endif
#define NCS_AN_OPEN_MAX 4096      /* open instances per communicator at most */
#define NCS_AN_HOST_SAMPLES 65536 /* host offset samples kept per host (reservoir) */
/* GPU times that cannot be right (docs/report.md, "GPU times that cannot be right"): a rank's
 * kernel of an AllReduce/AllGather/ReduceScatter ended more than this before any other rank's
 * kernel of the same instance started; and a KernelCh pTimer more than this after the host saw
 * the channel start is not used to map the GPU clock */
#define NCS_AN_GPU_TOL_NS 1000000ll

enum { NCS_SRC_KERNEL_GPU = 0, NCS_SRC_PROXY_HOST = 1, NCS_SRC_ENQUEUE_HOST = 2, NCS_SRC_N = 3 };
extern const char *const ncs_src_names[NCS_SRC_N]; /* "kernel_gpu", "proxy_host", "enqueue_host" */

enum { NCS_GPU_NONE = 0, NCS_GPU_REALTIME = 1, NCS_GPU_OWN = 2 };

typedef struct {
  char file[256], host[128];
  uint64_t pid;
  uint32_t host_index;
  int64_t clk_off;    /* median (realtime - monotonic) over the CLOCK pairs */
  int64_t clk_spread; /* max - min of (realtime - monotonic) */
  uint32_t clk_pairs;
  int gpu_domain;     /* NCS_GPU_*: how pTimer maps to host time */
  int64_t gpu_off;    /* pTimer - monotonic used to map GPU times to host monotonic time */
  int64_t gap_p50, gap_p99, gap_min, gap_max; /* pTimer - (host ts + gpu_off) at KernelCh START */
  uint64_t gap_n;
  int damaged;
} ncs_an_proc_t;

typedef struct {
  char host[128];
  int64_t offset; /* ns to subtract from this host's realtime to get the reference host's */
  int64_t error;  /* median absolute deviation of the per-instance estimates */
  uint64_t samples;
} ncs_an_host_t;

typedef struct {
  uint64_t comm_id;
  int32_t nranks, nnodes, ranks_seen;
} ncs_an_comm_t;

typedef struct {
  uint32_t comm;
  const char *func;
  int log2; /* bytes in [2^log2, 2^(log2+1)); -1 for 0 bytes */
  uint64_t count, bytes;
  uint64_t src[NCS_SRC_N];
  double lat_p50, lat_p95, lat_p99; /* ns */
  double busbw_p50, busbw_p95, busbw_p99, algbw_p50; /* GB/s; p95 of busbw is the 5th-slowest% */
  double skew_p50, skew_max; /* arrival skew, ns */
  /* throughput busbw (docs/report.md): from the interval between the kernel starts of
   * consecutive instances that ran back to back, what a benchmark loop's time per iteration
   * measures; tput_n instances had such a successor */
  double tput_busbw_p50;
  uint64_t tput_n;
  int p2p;
  size_t n; /* samples of latency, bandwidth and skew (count less the unsampled instances) */
  /* the latency distribution report --html draws: smallest, p25, p75, largest (nearest rank) */
  double lat_min, lat_p25, lat_p75, lat_max;
  int sketch; /* 0: every quantile exact; 1: over NCS_AN_EXACT_MAX samples, from the sketch */
} ncs_an_bucket_t;

typedef struct {
  const char *func;
  uint64_t seq;
  int64_t late; /* ns: this rank's arrival - the earliest arrival */
} ncs_an_evidence_t;

typedef struct {
  uint32_t comm;
  int32_t rank;
  uint32_t proc;
  uint64_t instances, last, slowest;
  int64_t wait_caused;   /* sum over instances where it arrived last: sum of (last - arrival) */
  int64_t wait_suffered; /* sum of (last arrival - own arrival) */
  int64_t excess;        /* sum over instances where it was slowest of (duration - median) */
  int64_t kwait, transfer; /* in-kernel wait for peers and the rest of the duration */
  int64_t launch_sum;
  uint64_t launch_n;
  ncs_an_evidence_t ev[NCS_AN_EVIDENCE];
  uint32_t nev;
} ncs_an_rank_t;

/* One rank in one collective bucket (same communicator): its arrivals relative to the others of
 * each instance, for the per-rank skew heatmap of `report --html`. Collective buckets only. */
typedef struct {
  uint32_t bucket, rank; /* indices into buckets and ranks */
  uint64_t n;            /* instances of the bucket this rank took part in */
  uint64_t last;         /* of which it was counted as arriving last (as ncs_an_rank_t.last) */
  int64_t late;          /* sum of (own arrival - first arrival of the instance), ns */
  int64_t waited;        /* sum of (last arrival of the instance - own arrival), ns */
} ncs_an_cell_t;

typedef struct {
  uint32_t comm;
  const char *func;
  uint64_t seq;
  int32_t rank_a, rank_b; /* rank_a differs from what most ranks passed; rank_b passed that */
  int32_t nodd;           /* ranks that differ (rank_a is the lowest of them) */
  char what[96];          /* rank_a's values vs rank_b's */
} ncs_an_mismatch_t;

typedef struct {
  char path[512];
  ncs_an_proc_t *procs;
  uint32_t nprocs;
  ncs_an_host_t *hosts;
  uint32_t nhosts;
  int64_t error; /* error bound of every cross-rank time difference (skew, wait), ns */
  ncs_an_comm_t *comms;
  uint32_t ncomms;
  ncs_an_bucket_t *buckets;
  uint32_t nbuckets;
  ncs_an_rank_t *ranks;
  uint32_t nranks;
  uint64_t instances, incomplete, coll_ops, unmatched_seq;
  uint64_t mismatched;
  uint64_t unsampled; /* instances left out of latency/bandwidth: KernelCh not sampled (docs) */
  /* instances whose GPU times cannot be right (NCS_AN_GPU_TOL_NS): counted, the first few
   * as examples; they stay in the aggregates */
  uint64_t gpu_suspect;
  struct {
    uint32_t comm;
    const char *func;
    uint64_t seq;
    int32_t rank;   /* the rank whose kernel start is furthest from its own arrival */
    int64_t gap;    /* how long before the other ranks' first kernel start its kernel ended, ns */
    int64_t launch; /* that rank's kernel start - its arrival, ns */
  } gsus[8];
  uint32_t ngsus;
  ncs_an_mismatch_t mism[16];
  uint32_t nmism;
  uint64_t sends, recvs, p2p_pairs, p2p_unmatched_send, p2p_unmatched_recv, p2p_bytes_mismatch;
  uint64_t damaged_files;
  ncs_an_cell_t *cells; /* (bucket, rank) arrival sums, in order of first appearance */
  uint32_t ncells;
  uint64_t cells_dropped; /* rank operations left out of cells: NCS_AN_CELL_MAX reached */
  /* the streaming analysis (docs/report.md, "Memory") */
  uint64_t evicted;      /* incomplete instances closed before the end: horizon or cap */
  uint64_t p2p_evicted;  /* sends/recvs given up unpaired before the end: horizon */
  uint64_t peak_open_instances; /* most collective instances open at once */
  uint64_t peak_held_ops; /* most rank operations held at once (pending, open, unpaired) */
  uint32_t passes;       /* reading passes over the files: 2, 3 with several hosts */
  double pass_s[3];      /* seconds of each pass */
  /* internal */
  void *priv;
} ncs_analysis_t;

typedef struct {
  int retain; /* keep every operation and instance for ncs_an_op/ncs_an_instance (memory grows
               * with the job); without it their counts are 0 */
} ncs_analyze_opts_t;

/* Analyse the traces of a directory (or one file). NULL with err filled on failure. */
ncs_analysis_t *ncs_analyze_path(const char *path, char *err, size_t errlen);
/* the same with options (NULL: the defaults, as ncs_analyze_path) */
ncs_analysis_t *ncs_analyze_path_opts(const char *path, const ncs_analyze_opts_t *opts, char *err,
                                      size_t errlen);
void ncs_analysis_free(ncs_analysis_t *a);

/* ---- Per instance and per operation: the matched data behind the aggregates above, for
 * exporters (`ncclscope export --format sqlite`, docs/sqlite.md), kept only when the analysis
 * ran with ncs_analyze_opts_t.retain. Every number here is the one the aggregates and the
 * per-rank totals were computed from, by the same code.
 *
 * Operations (one Coll or P2p of one rank) are in analysis order: collectives first, sorted by
 * (comm, func, seq, rank) so that each instance's operations are contiguous; then sends and
 * receives by (comm, sender, receiver, order). Pointers stay valid until ncs_analysis_free. */
typedef struct {
  uint32_t comm;         /* index into communicators */
  const char *func;
  uint64_t seq;
  uint64_t bytes;        /* nccl-tests' algbw size of the lowest rank's record */
  int log2;              /* size bucket: bytes in [2^log2, 2^(log2+1)); -1 for 0 bytes */
  size_t first_op;       /* its operations: ncs_an_op(a, first_op + k, ...), k < nops, by rank */
  uint32_t nops;         /* rank records matched (fewer than nranks: incomplete) */
  int64_t latency;       /* the largest duration over its ranks, ns */
  int timing;            /* NCS_SRC_* of that largest duration */
  int64_t median_duration;
  double algbw, busbw;   /* GB/s */
  int64_t first_arrival, last_arrival, skew; /* job time ns (ncs_an_job_offset) */
  int32_t first_rank, last_rank; /* ranks of the earliest and the latest arrival */
  int last_counted;      /* the report counts last_rank as arriving last (nops > 1, skew > 0) */
  int64_t wait_caused;   /* when last_counted: sum over its ranks of (last arrival - arrival) */
  int32_t slowest_rank;  /* the rank counted as slowest (3+ ranks, > 5% over the median), -1 */
  int64_t slowest_excess; /* its duration - the median duration */
  int unsampled;         /* left out of its bucket's latency and bandwidth (a->unsampled) */
  int gpu_suspect;       /* its GPU times cannot be right (a->gpu_suspect, docs/report.md) */
} ncs_an_instance_t;

typedef struct {
  uint32_t proc;         /* index into procs (the trace file) */
  uint32_t seg;          /* segment of that file (0 the first) */
  uint64_t id;           /* event id of the Coll/P2p START in that segment, as `dump` prints */
  uint32_t comm;
  int32_t rank, peer;    /* peer: P2p only */
  const char *func, *dtype; /* dtype and count: the user's (CollApi/P2pApi) when known */
  uint64_t seq, count, order; /* seq: Coll; order: P2p, k-th send (recv) to (from) peer */
  int64_t root;
  uint64_t bytes;
  int p2p, is_send;
  int64_t arrival;       /* job time ns: CollApi/P2pApi start, else the Coll/P2p start */
  int64_t duration;      /* ns */
  int timing;            /* NCS_SRC_* */
  int64_t kernel_start;  /* GPU kernel start in job time ns, 0 unknown */
  size_t instance;       /* Coll: index of its instance; SIZE_MAX for P2p */
  size_t pair;           /* P2p: index of the paired recv/send; SIZE_MAX when unpaired or Coll */
} ncs_an_op_t;

size_t ncs_an_instance_count(const ncs_analysis_t *a);
const ncs_an_instance_t *ncs_an_instance(const ncs_analysis_t *a, size_t i); /* NULL: past end */
size_t ncs_an_op_count(const ncs_analysis_t *a);
int ncs_an_op(const ncs_analysis_t *a, size_t i, ncs_an_op_t *out); /* 0, or -1 past the end */
/* the communicator index of a COMM chunk's (commId, nranks); -1 when the analysis has none */
int64_t ncs_an_comm_index(const ncs_analysis_t *a, uint64_t comm_id, int32_t nranks);
/* ns to add to a host CLOCK_MONOTONIC time of process `proc` to get job time: 0 on one host,
 * else its clock offset minus its host's offset (docs/report.md, Clocks) */
int64_t ncs_an_job_offset(const ncs_analysis_t *a, uint32_t proc);

#endif
