/* internal.h - what the files of the job model share (model.h is the contract). */
#ifndef NCS_MODEL_INTERNAL_H
#define NCS_MODEL_INTERNAL_H

#include <stdint.h>

#include "model/model.h"
#include "trace/reader.h"
#include "util/hmap.h"

/* one ProxyOp of a held operation while its file holds it (breakdown.c): the public link (times
 * still monotonic) and its open steps, oldest first */
#define LK_OPEN 8 /* NCCL_STEPS: steps one ProxyOp can have in flight */
typedef struct {
  ncs_link_t l;
  uint64_t open_id[LK_OPEN];
  int8_t open_ph[LK_OPEN]; /* NCS_PH_*, -1 before its first state */
  uint8_t nopen;
  uint64_t last_ts;
} lk_t;

/* one KernelCh of an operation being checked (kch.c): raw times, host times mapped (s, e) */
typedef struct {
  uint64_t ps, pe, hs, he;
  int64_t s, e;
  uint8_t bad;
} kcv_t;

/* what checking one operation's KernelCh found (kch.c); summed per file into ncs_job_gchk_t */
typedef struct {
  uint32_t channels, ch_bad, ch_before_prev, ch_before_launch, ch_future, ch_after_next, ch_disagree, ch_settling;
  uint8_t claim_rejected, inferred;
} op_gchk_t;

/* an operation while its file holds it: what the records said, in the file's monotonic time;
 * the public ncs_op_t is made from it when it leaves the file (merge.c op_finish). Kept small:
 * a file holds every operation between its START and its settled completion. */
typedef struct {
  uint32_t proc, seg, comm;
  int32_t rank, peer;
  uint8_t p2p, is_send, unsampled, complete, api;
  uint32_t cflags;
  uint64_t id, seq, order, count;
  int64_t root;
  const char *func, *dtype;
  uint32_t thread; /* of the user's call (CollApi/P2pApi), else of the START */
  uint8_t tag_known; /* its START has userTag and its communicator is on ABI v7 or later */
  uint64_t tag;
  uint64_t api_ts, start_ts, stop_ts, end_ns, first_child, gpu_start, gpu_stop;
  uint64_t api_id; /* its CollApi/P2pApi's event id, 0 none */
  uint64_t prev_id; /* Coll: the event id of the previous Coll of its communicator rank in its
                     * segment (the call order of its thread), 0 none */
  /* its KernelCh, checked (kch.c) */
  uint32_t nch;       /* nChannels of its START */
  uint64_t group;     /* its parentGroup (the kernel plan), 0 unknown */
  uint64_t launch_ts; /* the KernelLaunch before it on its thread and communicator, 0 none */
  uint8_t ready;      /* settled: its records are all read */
  uint64_t ready_ts;  /* file time it settled at */
  uint8_t gk;         /* NCS_GK_*: what its GPU times rest on */
  uint8_t gk_open, gk_claim_rejected, inferred;
  uint64_t gk_seen_end; /* host time the last good channel stop was seen */
  uint64_t gk_s_seen, gk_e_seen; /* host times its GPU start and stop were read (their windows) */
  uint64_t infer_gpu, infer_seen, infer_end; /* inferred: the later operation's GPU start (read
                                               * at infer_seen), its end */
  op_gchk_t gchk;
  kcv_t *chv;        /* its KernelCh records, from its check until it leaves */
  uint32_t nchv;
  size_t capchv;
  uint8_t judged;    /* checked both ways and its completion judged */
} held_t;

/* one KernelCh record of an operation not yet checked (kch.c) */
typedef struct {
  uint64_t id, parent;
  uint64_t ps, hs, pe, he; /* start pTimer and the host time it was seen; stop likewise (0 none) */
  uint32_t next;           /* the next record of the same parent + 1 (0: none) */
  uint16_t ch;
  uint8_t used;
} kc_t;

/* one rank of a communicator in one file: its operations in START order (kch.c) */
typedef struct {
  uint32_t *q;        /* held indices, a ring */
  size_t head, n, cap;
  size_t checked;     /* q[0..checked) are checked */
  int have_end;
  int64_t end;        /* the earliest good channel end of the latest operation with good ones:
                       * host monotonic (clock mapped), else pTimer */
  uint64_t end_group; /* ... and its operation's group */
} chain_t;

typedef struct {
  kc_t *kc;
  size_t n, cap;
  uint32_t *free_;
  size_t nfree, capfree;
  hmap_t ids, par;    /* KernelCh id -> index + 1; parent id -> first index + 1 */
  uint64_t swept;
  chain_t *chains;
  size_t nchains, capchains;
  hmap_t chain_map;   /* (comm, rank) -> chain index + 1 */
} kc_src_t;

/* one ProxyOp being read (merge.c): its link and NetPlugin QPs, until the operation it belongs
 * to (parent) leaves its file. A thread's records may reach the file before the Coll/P2p START
 * written by another thread, so a ProxyOp does not need its parent yet. */
typedef struct {
  uint64_t parent;   /* Coll/P2p event id */
  uint64_t born;     /* file time of its START: orphans are dropped after the horizon */
  uint32_t gen, next; /* generation of the slot; next ProxyOp of the same parent + 1 (0: none) */
  int used;
  lk_t lk;
  ncs_netq_t *nq;
  uint32_t nnq;
  size_t capnq;
} acc_t;
/* an operation's CUPTI times (gpu.c), monotonic ns of its file */
typedef struct {
  uint64_t start, end;
  uint32_t kernels, replays;
  uint8_t captured;
} gop_t;

/* an open collective instance (match.c) */
typedef struct {
  uint32_t comm;
  const char *func;
  uint64_t seq;
  ncs_op_t *ops;
  size_t n, cap;
  uint64_t *seen; /* bitmap of ranks [0, nranks) */
  uint32_t distinct, nseen_words;
  int64_t joined; /* merged time of the last record */
  uint64_t opened; /* order it was opened in: the oldest open instance of a key comes first */
  int again;       /* opened by a rank that was in another open instance of the key */
  int used;
} inst_t;

/* a send or receive waiting for its partner (match.c) */
typedef struct {
  ncs_op_t o;
  int32_t src, dst;
  int used;
  int64_t joined;
} pwait_t;

typedef struct {
  /* lookups built by pass 1 */
  hmap_t comm_map;   /* hash of (commId, nranks[, file]) + probe -> comm index */
  hmap_t member_map; /* (proc, seg, index) -> member index */
  hmap_t rank_seen;  /* (comm, rank) -> 1 */
  size_t cap_procs, cap_comms, cap_members, cap_hosts, cap_losses;
  /* the streaming pass */
  const ncs_job_sink_t *sink;
  void *arg;
  int hostpass; /* the pass that estimates host offsets: instances only, to clock.c */
  int64_t now, last_sweep;
  uint64_t held, pending; /* rank operations held now; of which pending in their files */
  inst_t *inst;
  size_t ninst, capinst, nopen;
  uint32_t *inst_free;
  size_t ninst_free, capinst_free;
  hmap_t im, pm; /* open instances, waiting sends/recvs: hash -> index (match.c vfind) */
  uint32_t *comm_open; /* per communicator: open instances */
  size_t ncomm_open;
  pwait_t *pw;
  size_t npw, cappw, npw_used;
  uint32_t *pw_free;
  size_t npw_free, cappw_free;
  uint64_t next_inst_id, next_open;
  /* per (file, communicator, rank): the last Coll handed out, its end (ncs_op_t.prev_end;
   * match.c); the map's key is a hash, verified */
  hmap_t qtail;
  struct qtail_s {
    uint32_t proc, comm;
    int32_t rank;
    uint32_t seg;
    uint64_t id;
    int64_t end;
  } *qt;
  size_t nqt, capqt;
  /* host offsets (clock.c, during the host pass) */
  int64_t *hd, *hsp; /* [host * NCS_JOB_HOST_SAMPLES + k] */
  uint64_t *hn, rng;
  int64_t *lo, *hi;
  ncs_job_gwin_t **gwin; /* clock.c: per file, its GPU clock windows */
  int kernelch_only; /* NCCLSCOPE_GPU_TIMES=kernelch: CUPTI's kernels not used for operations'
                      * times (to compare KernelCh's with them on the same run: docs/report.md) */
  /* CUPTI (gpu.c): per file, (segment, Coll/P2p id) -> index into gops + 1 */
  hmap_t *gop_map;
  gop_t *gops;
  size_t ngops, capgops, cap_gdevs, cap_replays, cap_kernels, cap_pending;
  /* retained (opts.retain; retain.c) */
  int retain;
  ncs_op_t *ops;
  size_t nops, capops;
  ncs_inst_t *insts;
  size_t ninsts, capinsts;
  ncs_job_left_t *left; /* operations the filter left out (retain only) */
  size_t nleft, capleft;
  /* user ranges (ranges.c) */
  void *ranges;
  /* the filter's --range and --tag (select.c); NULL when it has neither */
  void *sel;
  void *srcs; /* merge.c: the files of the pass running (merge_oldest) */
} jpriv_t;

static inline jpriv_t *jp(const ncs_job_t *j) { return (jpriv_t *)j->priv; }

/* job.c */
uint32_t job_comm(ncs_job_t *j, const ncs_comm_info_t *c, uint32_t proc);
/* jobs.c: which files form the job, decided after pass 1 */
typedef struct {
  int *excl;           /* per file: NCS_JX_* */
  uint32_t *same_as;   /* per file: NCS_JX_DUPLICATE's kept file */
  uint32_t *job_no;    /* per file: its job, 1-based; 0 unknown */
  ncs_job_part_t *parts;
  uint32_t njobs, job, nexcluded;
} job_plan_t;
/* 0, or -1 with err (and *why) when `want` (0: the only one) names no job */
int job_plan(const ncs_job_t *j, uint32_t want, job_plan_t *pl, int *why, char *err, size_t errlen);
void job_plan_free(job_plan_t *pl);
/* clock.c */
void clock_scan_begin(void **state);
void clock_scan_item(void *state, const ncs_item_t *it, uint32_t seg);
void clock_scan_end(void *state, ncs_job_t *j, uint32_t proc);
void clock_hosts(ncs_job_t *j);
void clock_host_instance(ncs_job_t *j, const ncs_op_t *ops, size_t n);
/* coverage.c */
void cov_scan_begin(void **state);
void cov_scan_item(void *state, ncs_job_t *j, uint32_t proc, const ncs_item_t *it, uint32_t seg,
                   uint64_t seg_start);
void cov_scan_end(void *state, ncs_job_t *j, uint32_t proc);
void clock_host_offsets(ncs_job_t *j);
void clock_job_offsets(ncs_job_t *j);
/* gpu.c */
void gpu_scan_begin(void **state);
int gpu_scan_item(void *state, const ncs_reader_t *r, const ncs_item_t *it);
void gpu_scan_end(void *state, ncs_job_t *j, uint32_t proc);
void gpu_job_times(ncs_job_t *j); /* once job_off is known: monotonic -> job time */
const gop_t *gpu_op(const ncs_job_t *j, uint32_t proc, uint32_t seg, uint64_t id);
void gpu_free(ncs_job_t *j);
/* merge.c */
void merge_pass(ncs_job_t *j);
/* the earliest call time (monotonic ns of file proc) an operation still to leave the file may
 * have: of the operations it holds, and of those whose records may still come (a horizon back) */
uint64_t merge_oldest(const ncs_job_t *j, uint32_t proc);
/* kch.c */
void kc_event(kc_src_t *K, const ncs_event_t *e, uint64_t now);
void kc_free(kc_src_t *K);
chain_t *chain_of(kc_src_t *K, uint32_t comm, int32_t rank);
void chain_push(chain_t *c, uint32_t hi);
void chain_drain(ncs_job_t *j, kc_src_t *K, chain_t *c, held_t *held, uint64_t now, int final,
                 void (*release)(ncs_job_t *, void *, uint32_t), void *arg);
void chains_free(kc_src_t *K);
/* match.c */
void match_coll(ncs_job_t *j, const ncs_op_t *o);
void match_p2p(ncs_job_t *j, const ncs_op_t *o);
void match_sweep(ncs_job_t *j);
void match_end(ncs_job_t *j);
void match_free(ncs_job_t *j);
void match_peak(ncs_job_t *j);
/* breakdown.c: proxy records of a held operation, and an instance's bottleneck */
void bd_record(lk_t *k, const ncs_event_t *e, uint32_t type);
void bd_link(acc_t *a, const ncs_event_t *e);
uint32_t bd_netq(acc_t *a, const ncs_event_t *e); /* UINT32_MAX: too many */
/* the links and QPs of an operation leaving its file: its ProxyOps acc[0..n) */
void bd_finish(const ncs_job_t *j, const held_t *h, ncs_op_t *o, acc_t *const *acc, size_t n);
void bd_op_free(ncs_op_t *o);
void bd_instance(const ncs_job_t *j, ncs_inst_t *in, const ncs_op_t *ops);
/* ranges.c: user ranges, read in the streaming pass (not the host pass) */
void ranges_item(ncs_job_t *j, uint32_t proc, uint32_t seg, const ncs_item_t *it, int flight);
void ranges_op(ncs_job_t *j, const ncs_op_t *o);
void ranges_finish(ncs_job_t *j);
void ranges_free(ncs_job_t *j);
/* select.c: the filter's --range and --tag. sel_setup in pass 1 when the filter has either
 * (it keeps the lists: sel_lists points j->filter at them); sel_scan_* in pass 1; sel_check after
 * it (0, or -1 with why); the rest in the streaming pass (not the host pass) */
void sel_setup(ncs_job_t *j, const ncs_job_filter_t *f);
void sel_lists(ncs_job_t *j);
void sel_scan_item(ncs_job_t *j, uint32_t proc, const ncs_item_t *it, int flight);
void sel_scan_end(ncs_job_t *j, uint32_t proc, const ncs_flight_info_t *fl);
int sel_check(const ncs_job_t *j, char *err, size_t len);
void sel_stream_begin(ncs_job_t *j);
void sel_item(ncs_job_t *j, uint32_t proc, const ncs_item_t *it, int flight);
void sel_op(ncs_job_t *j, ncs_op_t *o);
void sel_finish(ncs_job_t *j);
void sel_free(ncs_job_t *j);
/* retain.c */
void retain_instance(ncs_job_t *j, const ncs_inst_t *in, const ncs_op_t *ops);
void retain_p2p(ncs_job_t *j, const ncs_op_t *op, const ncs_op_t *partner);
void retain_left(ncs_job_t *j, const ncs_op_t *ops, size_t n); /* left out by the filter */
void retain_layout(ncs_job_t *j);
void retain_free(ncs_job_t *j);

#endif
