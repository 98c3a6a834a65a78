/* analyze.h - the report's analysis of a recorded job (the engine of `ncclscope report`, its
 * --json and --html, and the analysis tables of `export --format sqlite`).
 *
 * It consumes the job model (src/model/model.h): files, communicators, clocks, operations,
 * collective instances and send/receive pairs come from there, and this adds the numbers of
 * docs/report.md: per instance its latency, bandwidth, skew, who arrived last and who was slowest;
 * aggregates per communicator x collective x size bucket and per rank; mismatched arguments;
 * GPU times that cannot be right. All times are ns; bandwidths are GB/s (1e9 bytes/s).
 *
 * Memory is bounded by the ranks, communicators, buckets and the operations in flight (the
 * model's streaming pass), not by the length of the job (docs/report.md, "Memory"); quantiles of
 * a bucket come from at most NCS_AN_EXACT_MAX exact samples, then from a log-scale sketch.
 * ncs_analyze_opts_t.retain also keeps every instance's numbers and the model's operations, for
 * exporters (ncs_an_instance, ncs_job_op), whose memory then grows with the job.
 */
#ifndef NCS_ANALYZE_H
#define NCS_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

#define NCS_AN_EVIDENCE 3    /* instances kept as evidence per rank */
#define NCS_AN_CELL_MAX 262144 /* rank x bucket cells kept (about 10 MB); see cells_dropped */
#ifndef NCS_AN_EXACT_MAX
#define NCS_AN_EXACT_MAX 4096 /* exact samples per quantile of a bucket; beyond: the sketch */
#endif
#define NCS_AN_SKETCH_ERR 0.005 /* the sketch's largest relative error of a quantile */
/* GPU times that cannot be right (docs/report.md): a rank's kernel of an AllReduce/AllGather/
 * ReduceScatter ended more than this before any other rank's kernel of the same instance started */
#define NCS_AN_GPU_TOL_NS NCS_JOB_GPU_TOL_NS

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
  uint64_t suspect; /* of its instances, those whose GPU times cannot be right (doubtful) */
  uint64_t no_gpu;  /* of its instances, those left out of latency and bandwidth: a rank's GPU
                     * time is unknown (its KernelCh timestamps cannot be right, model.h NCS_GK_*) */
  uint64_t unsampled; /* of its instances, those left out because a rank's group was not sampled
                       * (NCCLSCOPE_SAMPLE: no KernelCh asked for) */
  /* a 95% interval of lat_p50 from its count samples (qs_median_ci); lat_ci 0: fewer than 6 */
  double lat_p50_lo, lat_p50_hi;
  int lat_ci;
  /* where its time went (docs/report.md, "Breakdown"), summed over its instances (the model's
   * ncs_bd_t); collectives only (p2p buckets: bd_label -1) */
  int64_t bd_launch, bd_span, bd_ph[NCS_PH_N];
  int64_t bd_queue;     /* of the time before the work began, behind earlier work (ncs_bd_t.queue) */
  uint64_t bd_q_unknown; /* rank operations whose queue could not be told (ncs_bd_t.q_unknown) */
  uint64_t bd_bytes, bd_n;          /* bd_n: instances with proxy links */
  uint64_t bd_labels[NCS_BN_N];     /* its instances by label */
  uint64_t bd_why[NCS_BW_N];        /* its cannot_tell instances by reason */
  int bd_label;   /* the label of at least 2/3 of its labelled instances, else mixed; cannot_tell
                   * when none is labelled (bd_reason: the most common reason) */
  int bd_reason;
  int32_t bd_wait_rank; /* peer_wait: the rank most of its peer-labelled instances waited for */
} ncs_an_bucket_t;

/* one connection (ProxyOp) of a rank, summed over the job: a channel's sends to, or receives
 * from, one peer (docs/report.md, "Breakdown") */
typedef struct {
  uint32_t comm;
  int32_t rank, peer;
  uint16_t channel;
  uint8_t is_send;
  uint64_t ops, steps, bytes;
  int64_t active;          /* summed link time: first step start to last step stop */
  int64_t ph[NCS_PH_N];
} ncs_an_link_t;

/* NetPlugin events of a rank on one IB QP or socket, summed over the job */
typedef struct {
  uint32_t comm;
  int32_t rank;
  uint8_t kind;            /* ncs_netq_t.kind: 1 IB, 2 socket, 0 not decoded */
  int32_t device;
  int64_t qp;
  uint64_t events, bytes;
  int64_t ns;
} ncs_an_netq_t;

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
  /* the instances a last arrival (a slowest rank) could be counted in: complete, 2+ ranks (3+),
   * arrivals further apart than the clock error bound; the binomial test's trials (Findings) */
  uint64_t last_trials, slow_trials;
  /* the same per quarter of the job's time (by the instance's last arrival): the test asks that
   * the evidence not come from one quarter alone (Findings) */
  uint32_t q_last[4], q_last_trials[4], q_slow[4], q_slow_trials[4];
  int64_t wait_caused;   /* over instances where it arrived last, the waiting it caused: summed
                          * over the other ranks, the new part of their waiting (below) */
  int64_t wait_suffered; /* time it waited for the last arrival: the union of its
                          * [own arrival, last arrival] intervals (at most the job's wall time) */
  int64_t wait_mark;     /* the end of that union so far (its instances taken in call order) */
  uint32_t done_proc, done_seg; /* the operation it counted last (its file, segment and id): the */
  uint64_t done_id;             /* next one in its call order has it as prev_id (0: none yet) */
  /* The waiting it caused, measured where it happens (docs/report.md, "Where waiting is
   * measured"), what findings weigh: GPU-side in the instances whose every member has
   * trustworthy GPU times (each member's kernel start to the last kernel start, counted for the
   * rank whose kernel started last), host-side in the others (wait_caused's part from them, as
   * above); and the instances of each. wait_caused itself stays all host-side (arrivals). */
  int64_t wait_caused_gpu, wait_caused_host;
  uint64_t caused_gpu_n, caused_host_n;
  int64_t wait_suffered_gpu; /* its GPU-side waits (kernel start to the last kernel start) */
  uint32_t stalls;           /* stalls it caused (ncs_analysis_t.stalls, found at the end) */
  int64_t stall_caused;      /* the others' waiting in them, summed */
  int64_t excess;        /* sum over instances where it was slowest of (duration - median) */
  /* Of the times it was slowest, those a late arrival could explain: the instance's last rank
   * arrived later than the median arrival by more than this rank's excess (instance.c), by the
   * rank that arrived late (up to 4 of them). When that rank is a significant straggler the
   * analysis takes them back (late_explained): a straggler's ring successor, whose data waits
   * for it, and the straggler itself, which sends last, are not slow. */
  struct {
    int32_t rank;
    uint32_t n, q[4];
    int64_t excess;
  } slow_late[4];
  uint64_t late_explained; /* times slowest taken back as a straggler's doing */
  int64_t kwait, transfer; /* in-kernel wait for peers and the rest of the duration */
  int64_t launch_sum;    /* over its operations with a kernel start: kernel start - arrival, less */
  int64_t queue_sum;     /* the queue: the time until its previous kernel ended (ncs_op_t.prev_end) */
  uint64_t launch_n;
  uint64_t gsrc[NCS_GS_N]; /* its collective operations by GPU-time source (NCS_GS_*) */
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

/* one GPU (ncs_job_t.gdevs[dev]) over its whole recording; when its file lost CUPTI records
 * (why) or has no compute kernels recorded one by one, nothing is computed (known 0) */
typedef struct {
  uint32_t dev;
  int known;             /* 0: CUPTI lost records of its file (why): no numbers */
  const char *why;       /* "" when known */
  ncs_gpu_overlap_t ov;  /* [from, to) of the device */
} ncs_an_gdev_t;

/* graph replays of one (comm, func, size): replay instances (comm, seq, replay index) */
typedef struct {
  uint32_t comm;
  const char *func;
  uint64_t bytes;
  uint64_t instances;    /* distinct (seq, replay) */
  uint64_t incomplete;   /* of them with fewer ranks than the communicator has */
  uint64_t kernels;      /* replay kernels (rank records) */
  int64_t lat_p50, lat_max; /* per instance: the longest rank's kernel (end - start), ns */
} ncs_an_replay_t;

typedef struct {
  ncs_an_gdev_t *devs;
  uint32_t ndevs;
  ncs_an_replay_t *replays;
  uint32_t nreplays;
  uint32_t files_cupti;  /* files with CUPTI kernel records */
  uint32_t files_lost;   /* of them: CUPTI's picture is incomplete (ncs_job_gpu_t.lost) */
  uint32_t files_asked;  /* files where CUPTI was asked for (a state other than off) */
} ncs_an_gpu_t;

/* A stall (docs/report.md, "Stalls"): a complete collective instance whose ranks waited for one
 * late rank far longer than is usual for its bucket. `wait` is the others' mean wait (caused /
 * others); it is a stall when it is at least NCS_STALL_FLOOR_NS and either an outlier of its
 * bucket (at least NCS_STALL_MIN_N instances; above median + NCS_STALL_SIGMAS robust sigmas,
 * sigma = IQR / 1.349, and above NCS_STALL_RATIO x the median) or at least NCS_STALL_SHARE of
 * the job's wall time (and above NCS_STALL_RATIO x the median when the bucket has
 * NCS_STALL_MIN_N instances). */
#define NCS_STALL_FLOOR_NS 1000000ll /* 1 ms: below, never a stall (scheduling noise) */
#define NCS_STALL_MIN_N 8
#define NCS_STALL_SIGMAS 10.0
#define NCS_STALL_RATIO 3.0
#define NCS_STALL_SHARE 0.10
#define NCS_STALL_KEEP 16 /* candidates kept per bucket (the largest waits) */
typedef struct {
  uint32_t comm, bucket;  /* bucket: index into buckets */
  const char *func;
  uint64_t seq, bytes;
  int32_t rank;           /* the late rank: last host arrival, or latest kernel start (GPU-side) */
  uint32_t proc;          /* its file */
  int gpu;                /* 1: measured GPU-side, 0: host-side */
  int32_t others;         /* ranks that waited for it */
  int64_t from;           /* job time: when the first of the others began waiting */
  int64_t from_real;      /* the same, CLOCK_REALTIME of the late rank's file (0 unknown) */
  int64_t wait;           /* the others' mean wait, ns */
  int64_t longest;        /* the longest wait of one of them */
  int64_t caused;         /* their waits summed */
  double med, sigma;      /* its bucket's usual: median and robust sigma of `wait`, ns */
  uint64_t bucket_n;      /* instances of the bucket with a wait measured */
  int by_share;           /* found by the share rule (not an outlier of its bucket) */
  /* A stall holds ranks up in other instances while it lasts: a waiting rank's next kernel (or
   * call) on another communicator starts late, and the late rank's next instance waits too.
   * A stall whose waiting [from, from + longest] overlaps a larger one's is its knock-on
   * (knock_on: the larger's index in stalls; -1 none), not a stall of its own: it is left out
   * of the findings and of the per-rank counts, and the larger counts it (knock_ons). */
  int32_t knock_on;
  uint32_t knock_ons;
} ncs_an_stall_t;

/* the first instance (by first arrival) not recorded by every rank of its communicator */
typedef struct {
  int set;
  uint32_t comm;
  const char *func;
  uint64_t seq;
  int64_t at;             /* its first arrival, job time */
  int32_t nranks;         /* its communicator's */
  int32_t nmissing;       /* ranks with no record of it */
  int32_t missing[8];     /* the first of them */
} ncs_an_incomplete_t;

typedef struct ncs_analysis ncs_analysis_t;
/* overlap of one GPU in a window [from, to) of job time (steps or user ranges plug in here) */
int ncs_an_gpu_window(const ncs_analysis_t *a, uint32_t dev, int64_t from, int64_t to,
                      ncs_gpu_overlap_t *out);

struct ncs_analysis {
  char path[512];
  ncs_job_t *job; /* the job model: files (procs), hosts, communicators, clocks, error bound */
  ncs_an_bucket_t *buckets;
  uint32_t nbuckets;
  ncs_an_rank_t *ranks;
  uint32_t nranks;
  uint64_t instances, incomplete, coll_ops, unmatched_seq;
  ncs_an_incomplete_t first_incomplete;
  /* stalls (largest wait first) and how they were measured; stalls_capped: some bucket had more
   * than NCS_STALL_KEEP candidates over its threshold (the counts are lower bounds) */
  ncs_an_stall_t *stalls;
  uint32_t nstalls;
  int stalls_capped;
  /* complete instances by where their waits were measured: GPU-side, host-side */
  uint64_t wait_gpu_n, wait_host_n;
  uint64_t mismatched;
  uint64_t unsampled; /* instances left out of latency/bandwidth: KernelCh not sampled (docs) */
  uint64_t no_gpu;    /* instances (and sends/receives) left out of latency/bandwidth: a rank's
                       * KernelCh times cannot be right and nothing repaired them */
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
  uint64_t damaged_files; /* files that could not be read, or end early (job->unreadable + damaged) */
  ncs_an_link_t *links; /* by (comm, rank, peer, channel, send first) */
  uint32_t nlinks;
  ncs_an_netq_t *netqs; /* by (comm, rank, kind, device, qp) */
  uint32_t nnetqs;
  uint64_t bd_instances; /* collective instances with a breakdown (proxy links) */
  uint64_t bd_labels[NCS_BN_N]; /* collective instances by label */
  ncs_an_cell_t *cells; /* (bucket, rank) arrival sums, in order of first appearance */
  uint32_t ncells;
  uint64_t cells_dropped; /* rank operations left out of cells: NCS_AN_CELL_MAX reached */
  /* what the analysis rests on (docs/report.md, "Coverage"): the job model's files and losses
   * summed, and where the operations' durations came from */
  struct {
    uint32_t files, unreadable, damaged, no_footer; /* no_footer: segments without a footer */
    uint32_t duplicates, other_job; /* listed files left out: copies, another job's (model.h) */
    uint64_t lost[NCS_JL_UNKNOWN + 1];  /* records lost, by kind (ncs_jl_names; 0 not counted) */
    uint64_t windows[NCS_JL_UNKNOWN + 1]; /* loss windows, by kind */
    /* records (START, STOP) of Coll/P2p/CollApi/P2pApi calls that happened (recorded + lost),
     * and those lost, each once: op_lost <= op_calls; op_starts: the STARTs recorded */
    uint64_t op_calls, op_lost, op_starts;
    uint64_t damaged_ops; /* operation records that name what damage lost: left out */
    /* what the plugin's limits left out (ncs_job_cov_t): communicators not tracked and their
     * operations, events without room in the writer's table and the operations among them;
     * the largest NCCLSCOPE_MAX_COMMS and smallest NCCLSCOPE_TRACK_MAX in force (0 unknown) */
    uint64_t comms_untracked, no_comm_ops, evicted, evicted_ops;
    uint32_t max_comms, track_max;
    uint64_t p2p_lost;  /* P2p records lost: the k-th send is no longer the k-th receive's */
    uint64_t write_errors, gaps, gap_bytes;
    uint64_t groups, groups_unsampled;
    uint64_t timing[NCS_SRC_N]; /* Coll and P2p operations by the source of their duration */
    uint64_t gsrc[NCS_GS_N];    /* Coll and P2p operations by the source of their GPU times */
    uint64_t gk[NCS_GK_N];      /* Coll and P2p operations by what their KernelCh times rest on */
    uint64_t gk_enqueue;        /* of the unknown ones, those whose duration is only the enqueue */
    uint64_t captured;          /* of them captured into CUDA graphs (their GPU work: replays) */
  } cov;
  /* CUPTI (docs/report.md, "GPU truth"): per GPU, overlap of communication and computation;
   * graph replays by (comm, func, size). Empty when no file has CUPTI kernels. */
  ncs_an_gpu_t gpu;
  /* internal */
  void *priv;
};

typedef struct {
  int retain; /* keep every operation and instance for ncs_an_op/ncs_an_instance (memory grows
               * with the job); without it their counts are 0 */
  uint32_t job; /* which job when the files hold several (ncs_job_opts_t.job) */
  int *why;     /* optional out: NCS_JOB_ERR_* when it fails */
  const ncs_job_filter_t *filter; /* NULL: the whole job (ncs_job_opts_t.filter) */
} ncs_analyze_opts_t;

/* Analyse the traces of a directory (or one file). NULL with err filled on failure. */
ncs_analysis_t *ncs_analyze_path(const char *path, char *err, size_t errlen);
/* the same with options (NULL: the defaults, as ncs_analyze_path) */
ncs_analysis_t *ncs_analyze_path_opts(const char *path, const ncs_analyze_opts_t *opts, char *err,
                                      size_t errlen);
void ncs_analysis_free(ncs_analysis_t *a); /* and its job */

/* ---- Per instance: the numbers behind the aggregates, kept only when the analysis ran with
 * ncs_analyze_opts_t.retain; instance i is the model's ncs_job_inst(a->job, i), its operations
 * ncs_job_op(a->job, first_op + k). Every number here is the one the aggregates and the per-rank
 * totals were computed from, by the same code. */
typedef struct {
  uint64_t bytes;        /* nccl-tests' algbw size of the lowest rank's record */
  int log2;              /* its size bucket: bytes in [2^log2, 2^(log2+1)); -1 for 0 bytes */
  int64_t latency;       /* the largest duration over its ranks, ns */
  int timing;            /* NCS_SRC_* of that largest duration */
  int64_t median_duration;
  double algbw, busbw;   /* GB/s */
  int64_t skew;          /* last arrival - first arrival */
  int last_counted;      /* the report counts the instance's last_rank as arriving last */
  int64_t wait_caused;   /* when last_counted: sum over its ranks of their new waiting time */
  int wait_gpu;          /* every member's GPU times are trusted: its waits are measured GPU-side */
  int32_t caused_rank;   /* the rank the waiting where it happens is counted for (-1 none): the
                          * latest kernel start when wait_gpu, else the last arrival */
  int64_t caused_gpu;    /* wait_gpu: sum over its ranks of (last kernel start - own kernel start) */
  int32_t slowest_rank;  /* the rank counted as slowest (3+ ranks, > 5% over the median), -1 */
  int64_t slowest_excess; /* its duration - the median duration */
  int unsampled;         /* left out of its bucket's latency and bandwidth (a->unsampled) */
  int no_gpu;            /* left out of them: a rank's GPU time is unknown (a->no_gpu) */
  int gpu_suspect;       /* its GPU times cannot be right (a->gpu_suspect, docs/report.md) */
  ncs_bd_t bd;           /* the model's breakdown and bottleneck label */
} ncs_an_instance_t;

const ncs_an_instance_t *ncs_an_instance(const ncs_analysis_t *a, size_t i); /* NULL: past end */
/* A retained collective operation's share of its rank's wait_suffered: the new part of its
 * [arrival, last arrival] interval (docs/report.md, "Per rank and instance"); op indexes
 * ncs_job_op. -1: not a collective, or left out by the filter. */
int64_t ncs_an_op_wait(const ncs_analysis_t *a, size_t op);

#endif
