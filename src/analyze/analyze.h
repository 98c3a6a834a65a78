/* analyze.h - cross-rank analysis of a recorded job (the engine of `ncclscope report`).
 *
 * ncs_analyze_path reads every trace file of a job directory, matches collective instances across
 * ranks by (commId, func, seqNumber), pairs sends with receives by (commId, peer, order), maps
 * clocks, and aggregates per communicator x collective x size bucket and per rank. Every number
 * is defined in docs/report.md. All times are ns; bandwidths are GB/s (1e9 bytes/s).
 *
 * Memory: one small record per (rank, Coll/P2p) of the job (about 150 bytes), two doubles per
 * collective instance in its bucket, up to NCS_AN_GAP_MAX clock samples per process, and the
 * per-segment id tables of one file at a time.
 */
#ifndef NCS_ANALYZE_H
#define NCS_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#define NCS_AN_GAP_MAX 65536 /* KernelCh clock samples kept per process */
#define NCS_AN_EVIDENCE 3    /* instances kept as evidence per rank */

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
  int p2p;
  /* internal */
  double *lat, *bw, *abw, *skew;
  size_t n, cap;
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

typedef struct {
  uint32_t comm;
  const char *func;
  uint64_t seq;
  int32_t rank_a, rank_b;
  char what[96];
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
  ncs_an_mismatch_t mism[16];
  uint32_t nmism;
  uint64_t sends, recvs, p2p_pairs, p2p_unmatched_send, p2p_unmatched_recv, p2p_bytes_mismatch;
  uint64_t damaged_files;
  /* internal */
  void *priv;
} ncs_analysis_t;

/* Analyse the traces of a directory (or one file). NULL with err filled on failure. */
ncs_analysis_t *ncs_analyze_path(const char *path, char *err, size_t errlen);
void ncs_analysis_free(ncs_analysis_t *a);

#endif
