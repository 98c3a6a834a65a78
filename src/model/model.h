/* model.h - the job model: one reading of a recorded job that every analysis and output uses
 * (docs/model.md is the contract in prose).
 *
 * A job is the trace files of one directory (or the files given), one per process. The model
 * reads them and decides, once, for everyone:
 *   - the files (procs), their segments (one per plugin load) and their damage;
 *   - the communicators, keyed by (commId, nranks), and their members (one COMM chunk: a rank of
 *     a communicator as one segment of one file recorded it);
 *   - the clocks: per file, CLOCK_REALTIME - CLOCK_MONOTONIC (median of its CLOCK pairs, with
 *     their spread); per host, its offset against host 0 from collective end times (with an
 *     error); per file, how the GPU's pTimer maps to host time (with an error bound when kernel
 *     launches were recorded). "Job time" is ns on one time line for the whole job: a file's
 *     monotonic ns plus ncs_job_proc_t.job_off;
 *   - the operations (one Coll or P2p of one rank: ncs_op_t), with their arrival, enqueue,
 *     completion and GPU times in job time, their duration and where it came from;
 *   - the collective instances: the operations with the same (commId, func, seqNumber), gathered
 *     while the job is read; a rank's n-th record of a key belongs to the key's n-th instance, so
 *     a reloaded library restarting its seqNumbers starts new instances;
 *   - the send/receive pairs: the k-th Send of rank s to d with the k-th Recv of d from s;
 *   - which files form the job: a file that repeats another (the same host, pid and first
 *     segment: a copy) is read once; files of runs that share no communicator at the same time
 *     are other jobs, never merged into this one (one is chosen: ncs_job_opts_t.job).
 *
 * Two ways to consume it:
 *   - streaming (ncs_job_stream): every file is read at once, merged in time order, and each
 *     instance and each send/receive is handed to a sink as soon as it is final. Memory is
 *     bounded by the operations in flight, not by the length of the job (docs/report.md,
 *     "Memory");
 *   - retaining (ncs_job_opts_t.retain): the same pass also keeps every operation and instance,
 *     in a documented order, for exporters that need all of them (ncs_job_op, ncs_job_inst).
 *
 * Strings handed out (function, datatype, host and communicator names) are pooled: they live as
 * long as the job, and within one job pointer equality is string equality.
 */
#ifndef NCS_MODEL_MODEL_H
#define NCS_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "trace/format.h"
#include "trace/range.h"
#include "trace/rangestat.h"
#include "util/pool.h"

/* bounds of the streaming pass (docs/report.md, "Memory"); -D overrides are for tests */
#ifndef NCS_JOB_HORIZON_NS
#define NCS_JOB_HORIZON_NS 10000000000ll /* trace time after which an open instance is closed */
#endif
#ifndef NCS_JOB_SETTLE_NS
#define NCS_JOB_SETTLE_NS 1000000000ll /* trace time a completion waits for its revisions */
#endif
#define NCS_JOB_OPEN_MAX 4096       /* open instances per communicator at most */
#define NCS_JOB_HOST_SAMPLES 65536  /* host offset samples kept per host (reservoir) */
#define NCS_JOB_CLOCK_SAMPLES 65536 /* CLOCK pairs and KernelCh clock gaps used per file */
#define NCS_JOB_COMM_INDEX_MAX 4096 /* communicator indexes of a segment the model follows */
/* a KernelCh pTimer more than this after the host saw the channel start belongs to another
 * operation and is not used to map the GPU clock (docs/report.md, "GPU times that cannot be
 * right") */
#define NCS_JOB_GPU_TOL_NS 1000000ll
/* a KernelCh stop this much before its own start is a step of the GPU clock, not noise */
#define NCS_JOB_GPU_STEP_NS 100000ll
/* the GPU clock settles after a process's first KernelCh: measured on H200s (NCCL 2.28.9 and
 * 2.30.7), %globaltimer ran 1.2 to 6.7 ms off CUPTI's time and at a changing rate for the first
 * 6 to 8 ms of GPU time in 5 of 10 processes of the ncs_perf fixtures, read by a proxy thread that
 * lagged by up to 5 ms then; KernelCh times read within this long of the first one are not used
 * (with 2 ms, 5 such readings up to 105 us off CUPTI's remained; with 10 ms none) */
#define NCS_JOB_GPU_SETTLE_NS 10000000ll

/* where an operation's duration comes from, best first */
enum { NCS_SRC_KERNEL_GPU = 0, NCS_SRC_PROXY_HOST = 1, NCS_SRC_ENQUEUE_HOST = 2, NCS_SRC_N = 3 };
extern const char *const ncs_src_names[NCS_SRC_N]; /* "kernel_gpu", "proxy_host", "enqueue_host" */

/* where an operation's GPU times come from (docs/gpu-truth.md, "Analysis"): CUPTI's kernel records
 * joined to it, else its KernelCh events (NCCL's pTimer), else none. CUPTI is preferred. */
enum { NCS_GS_NONE = 0, NCS_GS_CUPTI = 1, NCS_GS_KERNELCH = 2, NCS_GS_N = 3 };
extern const char *const ncs_gs_names[NCS_GS_N]; /* "none", "cupti", "kernelch" */

/* what an operation's KernelCh GPU times rest on, once checked (docs/report.md, "GPU times that
 * cannot be right"): none recorded; every channel good; some channels left out (stale, out of
 * order), the times from the others; none usable, or channels missing or never stopped: unknown */
enum { NCS_GK_NONE = 0, NCS_GK_OK = 1, NCS_GK_REPAIRED = 2, NCS_GK_UNKNOWN = 3, NCS_GK_N = 4 };
extern const char *const ncs_gk_names[NCS_GK_N]; /* "none", "ok", "repaired", "unknown" */

/* what checking a file's KernelCh times found (docs/report.md, "GPU times that cannot be right") */
typedef struct {
  uint64_t ops;            /* operations with KernelCh records */
  uint64_t ok, repaired, unknown; /* of which: NCS_GK_OK, _REPAIRED, _UNKNOWN */
  uint64_t channels;       /* KernelCh records checked */
  uint64_t ch_bad;         /* left out: no start, or a stop before the start */
  uint64_t ch_before_prev; /* left out: starts before the previous kernel of its chain ended */
  uint64_t ch_before_launch; /* left out: starts before its KernelLaunch */
  uint64_t ch_future;      /* left out: a start or stop after the host read it (beyond the clock's
                            * bound): a time that had not happened yet */
  uint64_t ch_after_next;  /* left out: ends after the next kernel of its chain began (later work) */
  uint64_t ch_disagree;    /* left out: the operation's channels ran at times that share no moment
                            * (work of several kernels: which is its own cannot be told) */
  uint64_t ch_settling;    /* left out: read while the GPU clock settled (NCS_JOB_GPU_SETTLE_NS) */
  uint64_t claims_rejected; /* completions the writer claimed on channels that cannot be right */
  uint64_t inferred;       /* completions inferred: a later operation of its chain completed */
  uint64_t impossible;     /* completions rejected across ranks: before a member entered */
  uint64_t disjoint;       /* operations whose KernelCh times went with their instance's: the
                            * ranks' kernels shared no moment (counted in unknown too) */
} ncs_job_gchk_t;

/* how a file's GPU pTimer maps to host time */
enum { NCS_GPU_NONE = 0, NCS_GPU_REALTIME = 1, NCS_GPU_OWN = 2 };
extern const char *const ncs_gpu_domain_names[3]; /* "none", "realtime", "own" */

typedef struct {
  uint32_t index;     /* 0 the first */
  uint64_t start_mono, start_real; /* the SEGMENT chunk's */
  uint64_t last_ns;   /* its latest event, clock pair or counter time (monotonic) */
  uint32_t mode, mask, epoch;
  const char *plugin_version, *cmdline; /* pooled */
  uint64_t pool_bytes;
  int clean;          /* ended with a FOOTER */
} ncs_job_seg_t;

/* What a file says it lost (docs/model.md, "Coverage"): a time window of the file's monotonic
 * clock, the records lost in it (0: unknown) and their event types (bit per NCS_T_*; every bit
 * when not known). */
enum {
  NCS_JL_DROPS = 1,   /* the plugin's buffer was full: records dropped on NCCL's thread */
  NCS_JL_NO_SLOT = 2, /* more producer threads than slots */
  NCS_JL_WRITE = 3,   /* a chunk could not be written (disk full, I/O error) */
  NCS_JL_GAP = 4,     /* damaged bytes the reader skipped */
  NCS_JL_TAIL = 5,    /* the file is damaged or cut from here on: the rest is lost */
  NCS_JL_UNKNOWN = 6, /* a segment without a footer (a killed process): after its last chunk */
};
extern const char *const ncs_jl_names[7]; /* "", "drops", "no_slot", "write", "gap", "tail", "unknown" */
#define NCS_JL_ALL_TYPES ((1u << NCS_T_COUNT) - 1)

typedef struct {
  uint32_t proc, seg, kind;
  uint64_t from_ns, to_ns; /* monotonic; to_ns UINT64_MAX: to the end of the recording */
  uint64_t records;        /* 0: not known */
  uint32_t types;
} ncs_job_loss_t;

/* why a listed file is not part of the job (it is kept in procs, with no segments, so that
 * indexes stay those of the list) */
enum {
  NCS_JX_NONE = 0,
  NCS_JX_DUPLICATE = 1, /* the same recording as the file same_as (host, pid, first segment) */
  NCS_JX_OTHER_JOB = 2, /* it belongs to another job (job_no) than the one chosen */
};

/* what one file covers */
typedef struct {
  uint64_t lost[NCS_JL_UNKNOWN + 1]; /* records lost by kind (0 when not counted) */
  /* records lost by event type, each once: from LOSS records, or (files without them) from the
   * growth of the drop counters; drops and no-slot losses never reached the writer, write
   * losses did (they are in recorded[] too) */
  uint64_t lost_by_type[NCS_T_COUNT];       /* drops and no-slot losses */
  uint64_t write_lost_by_type[NCS_T_COUNT]; /* records of chunks that could not be written */
  uint64_t recorded[NCS_T_COUNT]; /* START, STOP and STATE records the writer received (the
                                     counters: footers, else the last snapshot) */
  uint64_t write_errors;   /* chunks that could not be written */
  uint64_t gaps, gap_bytes;
  uint64_t starts[NCS_T_COUNT]; /* calls the plugin counted (footers, else the last snapshot) */
  uint64_t groups, groups_unsampled; /* group sampling: groups started; of which without GPU times */
  uint32_t nolog_segs;     /* segments without a footer */
  uint64_t damaged_ops;    /* Coll/P2p/CollApi/P2pApi STARTs that name strings or communicators
                              lost with damage (ncs_event_t.lost): left out of the operations */
  /* what the plugin's limits left out (docs/config.md): communicators beyond NCCLSCOPE_MAX_COMMS
   * (their Coll/P2p recorded with a NULL context, no_comm_ops, and left out of the job), and
   * events its writer's table (NCCLSCOPE_TRACK_MAX) had no room for (evicted; of them Coll/P2p:
   * evicted_ops, without a completion). max_comms, track_max: the limits in force (0 unknown:
   * files written before these counters) */
  uint64_t comms_untracked, no_comm_ops, evicted, evicted_ops;
  uint32_t max_comms, track_max;
} ncs_job_cov_t;

/* A window of a file's GPU clock map (docs/report.md, "Clocks"): host monotonic = pTimer - off
 * near this window (ncs_job_gpu_time joins the windows' offsets by straight lines) */
typedef struct {
  int64_t from, len;     /* host monotonic ns it covers */
  int64_t mid;           /* the mean host time of its readings: where off holds best */
  int step;              /* it begins at a step of the GPU clock (set back: a KernelCh ended more
                          * than NCS_JOB_GPU_STEP_NS before it started); never joined across */
  int64_t off;           /* the least offset pTimer - host the timestamps allow (host read them
                          * after they were written) */
  int64_t err;           /* the true offset lies in [off, off + err] (a kernel starts after its
                          * launch); -1: no launch bounded it */
  uint64_t n;            /* GPU timestamps that bounded it from below */
  uint64_t launches;     /* operations whose launch bounded it from above */
  uint64_t stale_bounds; /* of those: left out, below the lower bound (every channel of the
                          * operation carried earlier work's timestamps) */
} ncs_job_gwin_t;
/* the offset of windows g[0..n) at host monotonic time t */
int64_t ncs_gwin_off(const ncs_job_gwin_t *g, size_t n, int64_t t);

/* one recording: a trace (or flight) file, one process */
typedef struct {
  const char *path;   /* as listed (pooled) */
  const char *host;   /* pooled; "?" when no segment could be read */
  uint64_t pid;
  uint32_t host_index;
  int readable;       /* 0: it could not be opened (why: damage_msg) */
  int empty;          /* the file holds at most its header: a process that died before its first
                         chunk (ncs_reader_empty); no segment, and no damage either */
  int damage;         /* NCS_DAMAGE_* of the reader: the file ends early (truncated, corrupt) */
  char damage_msg[256];
  ncs_job_seg_t *segs;
  uint32_t nsegs;
  uint64_t first_ns;  /* monotonic ns of its earliest event record; 0 none */
  /* clocks (docs/report.md, "Clocks") */
  int64_t clk_off;    /* median (realtime - monotonic) over its first NCS_JOB_CLOCK_SAMPLES pairs */
  int64_t clk_spread; /* max - min of (realtime - monotonic) over all pairs */
  uint32_t clk_pairs;
  int64_t job_off;    /* job time = monotonic + job_off: 0 on one host, else clk_off - host offset */
  int gpu_domain;     /* NCS_GPU_* */
  int64_t gpu_off;    /* host monotonic = pTimer - gpu_off (its first window's; gwin has all) */
  int64_t gpu_err;    /* in every window the true offset lies within gpu_err above the one used;
                       * -1 unknown (a window no kernel launch bounded) */
  int64_t gpu_err_known; /* the largest bound of the windows that have one; -1 none */
  double gpu_drift_ppb;  /* (last window's offset - first's) / time between them, 1e-9 */
  const ncs_job_gwin_t *gwin; /* the clock map, by time */
  uint32_t ngwin;
  uint64_t gpu_stale_bounds; /* launch bounds left out: below the lower bound (stale channels) */
  uint64_t gpu_steps;  /* steps of the GPU clock seen (it was set back): windows split there */
  uint64_t gpu_first_ns; /* monotonic time of its first KernelCh record (the GPU clock may settle
                          * for NCS_JOB_GPU_SETTLE_NS from there); 0 none */
  int gpu_unsettled;  /* the readings of its first NCS_JOB_GPU_SETTLE_NS contradict the mapping
                       * that follows (kch.c then leaves their channels out) */
  int gpu_conflict;   /* a window has launch bounds, all of them below its lower bound */
  int64_t gap_p50, gap_p99, gap_min, gap_max; /* pTimer - (host ts + gpu_off) at KernelCh START */
  uint64_t gap_n;
  ncs_job_cov_t cov;  /* what it lost (loss windows: ncs_job_t.losses) */
  ncs_job_gchk_t gchk; /* its KernelCh times, checked (after ncs_job_stream) */
  uint32_t abi_max;   /* the newest profiler ABI version NCCL called its communicators through
                       * (its COMM chunks; 0 none) */
  int excluded;       /* NCS_JX_*: not read (host and pid are still known) */
  uint32_t same_as;   /* NCS_JX_DUPLICATE: the file read in its place */
  uint32_t job_no;    /* the job (1-based, ncs_job_t.parts) its file belongs to; 0 unknown (a
                       * file that could not be read belongs to whichever is chosen) */
} ncs_job_proc_t;

/* one job found among the listed files: files joined by a communicator they held at the same time */
typedef struct {
  uint32_t files;     /* readable files of it, duplicates not counted */
  uint32_t first;     /* index of its first file */
  uint64_t comm_id;   /* the commId of one of its communicators (0: none recorded) */
  int64_t start_real, end_real; /* realtime span of its files' segments */
} ncs_job_part_t;


typedef struct {
  const char *host;   /* pooled */
  int64_t offset;     /* ns to subtract from this host's realtime to get host 0's */
  int64_t error;      /* its error bound (docs/report.md, "Clocks") */
  uint64_t samples;
} ncs_job_host_t;

typedef struct {
  uint64_t comm_id;   /* NCCL's commHash; 0 (ABI v1-v3): the communicator of one file only */
  int32_t nranks, nnodes;
  const char *name;   /* pooled; "" when none */
  int32_t ranks_seen; /* distinct ranks recorded (COMM chunks) */
} ncs_job_comm_t;

/* a communicator member: one COMM chunk, a rank of a communicator as one segment of one file
 * recorded it */
typedef struct {
  uint32_t proc, seg, index; /* the file, its segment, the comm index there */
  uint32_t comm;             /* index into comms */
  int32_t rank;
  uint32_t abi;
  int32_t device;            /* CUDA device at init, -1 unknown */
  const char *bus_id;        /* pooled; "" unknown */
  uint64_t init_ns, fin_ns;  /* monotonic ns of its init and finalize (0: not recorded) */
} ncs_job_member_t;

/* ---- Where an operation's proxy time went (docs/report.md, "Breakdown"). The model reads the
 * ProxyOp, ProxyStep and NetPlugin records under each Coll/P2p in its streaming pass; a ProxyOp is
 * one connection of one channel to one peer (a "link"). A link's time, from its first step's
 * start to its last step's stop, is split by the state of its oldest open step (NCCL stops steps
 * in order: the oldest is what holds the pipeline), so the phases of a link add up to its active
 * time. */
enum { NCS_PH_GPU = 0,   /* SendGPUWait, RecvGPUWait: the GPU producing or consuming (unpack) */
       NCS_PH_PEER = 1,  /* SendPeerWait: no clear-to-send from the receiver yet */
       NCS_PH_NET = 2,   /* SendWait, RecvWait: the transfer posted, not done */
       NCS_PH_FLUSH = 3, /* RecvFlushWait */
       NCS_PH_N = 4 };
extern const char *const ncs_ph_names[NCS_PH_N]; /* "gpu_wait", "peer_wait", "network", "flush" */

typedef struct { /* one ProxyOp of an operation: a channel's connection to a peer */
  int32_t peer;       /* the ProxyOp's peer (a rank of the communicator) */
  uint16_t channel;
  uint8_t is_send;
  uint8_t open;       /* some step never stopped (expired, hung) */
  uint32_t steps;     /* ProxySteps started */
  uint64_t bytes;     /* transSize summed (SendWait for sends, RecvFlushWait for receives) */
  int64_t t0, t1;     /* job time: its first step's start, its last step's stop (or last record) */
  int64_t first_data; /* receive: job time the first step's data arrived (RecvFlushWait); 0 */
  int64_t ph[NCS_PH_N]; /* wall ns of [t0, t1] by the state of the oldest open step */
} ncs_link_t;

typedef struct { /* the NetPlugin events of an operation on one IB QP or one socket */
  uint8_t kind;       /* 1 IB (device, qpNum), 2 socket (fd), 0 not decoded */
  int32_t device;     /* IB device index; -1 for sockets */
  int64_t qp;         /* IB qpNum, socket fd */
  uint64_t events, bytes; /* bytes: the descriptors' lengths (IB receives carry none) */
  int64_t ns;         /* summed start-to-stop time of its events */
} ncs_netq_t;

/* One Coll or P2p of one rank. Times are job time (ns); 0 is unknown. */
typedef struct {
  uint32_t proc, seg;    /* its file and segment */
  uint64_t id;           /* event id of the Coll/P2p START in that segment, as `dump` prints */
  uint32_t comm;         /* index into comms */
  int32_t rank, peer;    /* peer: P2p only */
  const char *func, *dtype; /* pooled; dtype and count are the user's (CollApi/P2pApi) when known */
  uint64_t seq;          /* Coll: seqNumber */
  uint64_t order;        /* P2p: the k-th Send (Recv) of rank to (from) peer on comm, 0-based */
  uint64_t count;
  int64_t root;
  uint64_t bytes;        /* nccl-tests' algbw size: count x type size (x nranks for AllGather and
                          * ReduceScatter); 0 when the datatype is not known */
  uint8_t p2p, is_send;
  uint8_t unsampled;     /* recorded in an unsampled group (NCS_SF_UNSAMPLED): expect no KernelCh */
  uint8_t complete;      /* a COMPLETE record was seen */
  uint8_t api;           /* its CollApi/P2pApi record was found: count, datatype and arrival are
                          * the user's call's */
  uint64_t api_id;       /* that record's event id in its segment (0: none found) */
  uint32_t cflags;       /* its NCS_CF_* flags */
  int64_t arrival;       /* CollApi/P2pApi start, else the Coll/P2p START */
  uint64_t prev_id;      /* Coll: the event id (same segment) of the rank's previous Coll on the
                          * communicator, in its file's order (its thread's call order); 0 none */
  int64_t prev_end;      /* Coll: when that previous Coll ended, job time: its GPU kernel's stop,
                          * else its completion; 0 unknown (none, not handed out before this one,
                          * or no end known). Its kernel could not start before (NCCL runs a
                          * communicator's kernels in order): the queue of docs/report.md */
  int64_t start, stop;   /* the Coll/P2p START and STOP (enqueued) */
  int64_t end;           /* completion from its children (COMPLETE end) */
  int64_t kstart, kstop; /* GPU kernel start and stop in job time, from `gsrc`: CUPTI's kernels
                          * (mapped with its clock pairs), else KernelCh's pTimer (mapped) */
  int gsrc;              /* NCS_GS_*: where kstart/kstop (and a kernel_gpu duration) come from */
  uint8_t gk;            /* NCS_GK_*: its KernelCh times, checked (kstart/kstop from KernelCh only
                          * when ok or repaired) */
  uint8_t inferred;      /* complete because a later operation of its rank and communicator
                          * completed (NCCL runs them in order); end is then a bound */
  uint8_t impossible;    /* a completion was claimed before every member had entered: rejected */
  uint8_t captured;      /* captured into a CUDA graph (graphCaptured): its GPU work is its
                          * replays (ncs_job_replay_t), not this record */
  uint32_t kernels;      /* CUPTI kernels joined to it (eager; > 1: NCCL split its group) */
  uint32_t replays;      /* CUPTI kernels of graph replays of it (ncs_job_t.replays) */
  uint64_t gpu_start, gpu_stop; /* the same as raw pTimer ns: one GPU's clock, no mapping */
  int64_t duration;      /* ns, from `timing` */
  int timing;            /* NCS_SRC_*: kernel_gpu (GPU stop - start), proxy_host (completion end -
                          * first child start), enqueue_host (STOP - arrival: a lower bound) */
  size_t inst;           /* retained Coll: index of its instance; else SIZE_MAX */
  size_t pair;           /* retained P2p: index of its partner; SIZE_MAX when unpaired or Coll */
  /* its proxy work (Breakdown): valid during a sink call; with retain, as long as the job */
  const ncs_link_t *links;
  const ncs_netq_t *netq;
  uint32_t nlinks, nnetq;
  uint8_t proxy_lost;    /* its file lost proxy records while it ran: the links are partial */
  uint32_t thread;       /* the producer thread of the user's call (its CollApi/P2pApi record,
                          * else the Coll/P2p START): the thread whose user ranges hold it */
  uint64_t tag;          /* NCCL's userTag (ABI v7: ncclCollConfig_t.userProfilerTag; 0 untagged) */
  uint8_t tag_known;     /* its file recorded it through ABI v7 or later: tag is known */
  uint8_t sel;           /* NCS_OSEL_*: what the filter's --range and --tag found (set only when
                          * the filter selects by them) */
} ncs_op_t;
/* ncs_op_t.sel (docs/model.md, "Filters") */
enum {
  NCS_OSEL_RANGE = 1u << 0, /* called inside a range the filter selects */
  NCS_OSEL_TAG = 1u << 1,   /* its userTag is in the filter's list */
};

/* an instance's bottleneck (docs/report.md, "Breakdown") */
enum { NCS_BN_CANNOT = 0, /* cannot tell: why in ncs_bd_t.why */
       NCS_BN_LAUNCH = 1, /* enqueue and launch: the ranks' host side */
       NCS_BN_GPU = 2, NCS_BN_PEER = 3, NCS_BN_NET = 4, NCS_BN_FLUSH = 5,
       NCS_BN_MIXED = 6,  /* no part holds NCS_BD_DOMINANT of the time */
       NCS_BN_N = 7 };
extern const char *const ncs_bn_names[NCS_BN_N];
/* "cannot_tell", "launch", "gpu_wait", "peer_wait", "network", "flush", "mixed" */
enum { NCS_BW_NONE = 0, NCS_BW_NOT_RECORDED = 1, /* proxystep not in the recording's events */
       NCS_BW_NO_PROXY = 2, /* recorded, but no rank had network proxy work (within a node) */
       NCS_BW_LOST = 3,     /* proxy records lost while it ran */
       NCS_BW_INCOMPLETE = 4, /* not every rank recorded it */
       NCS_BW_N = 5 };
extern const char *const ncs_bw_text[NCS_BW_N];
#define NCS_BD_DOMINANT 0.5 /* the share of the time a part needs to be the label */

typedef struct {
  int label;          /* NCS_BN_* */
  int why;            /* NCS_BW_*: for NCS_BN_CANNOT */
  int32_t wait_rank;  /* the rank that held at least half of the peer wait (-1 none): for
                       * peer_wait the rank waited for; for gpu_wait, network or flush the rank
                       * whose own time in that phase the others waited for */
  int64_t launch;     /* summed over ranks: first proxy step (or kernel start) - arrival, less
                       * the queue */
  int64_t queue;      /* summed over ranks: of that time, what it waited behind the previous
                       * operation of its communicator (until ncs_op_t.prev_end) */
  uint32_t q_unknown; /* ranks with a previous operation whose end is not known: all their
                       * delay counts as launch */
  int64_t span;       /* summed over ranks: first proxy step - last step stop */
  int64_t ph[NCS_PH_N]; /* summed over ranks and links; network time before the sending peer
                         * arrived counts as peer wait */
  uint64_t bytes;     /* network bytes of every link */
  uint32_t links, steps;
} ncs_bd_t;

/* a collective instance: its operations, sorted by rank */
typedef struct {
  uint32_t comm;
  const char *func;
  uint64_t seq;
  uint32_t nops;          /* rank records (fewer than nranks: incomplete) */
  uint32_t distinct;      /* distinct ranks among them (fewer than nops: ranks out of range) */
  int again;              /* opened by a rank that ran the key again while an instance of it was
                           * still open (a reload cycle overlapping the last one, or a duplicate) */
  int evicted;            /* closed incomplete before the end: the horizon or NCS_JOB_OPEN_MAX */
  int64_t first_arrival, last_arrival;
  int32_t first_rank, last_rank; /* ranks of the earliest and the latest arrival (lowest on ties) */
  uint64_t id;            /* order it was handed out in (0, 1, ...) */
  size_t first_op;        /* retained: its operations are ncs_job_op(j, first_op + k), k < nops */
  ncs_bd_t bd;            /* where its time went, and its bottleneck */
} ncs_inst_t;

/* what the streaming pass hands over. Pointers are valid during the call only. */
typedef struct {
  /* a finished instance: complete, evicted, or open at the end of the job */
  void (*instance)(void *arg, const ncs_inst_t *in, const ncs_op_t *ops);
  /* a send or receive: paired (op is the Send, partner the Recv), or given up unpaired
   * (partner NULL) by the horizon or at the end */
  void (*p2p)(void *arg, const ncs_op_t *op, const ncs_op_t *partner);
  /* optional: an instance the filter left out (its operations, by rank); a consumer that follows
   * a rank's operations in call order (prev_id) learns that these will not come */
  void (*left)(void *arg, const ncs_op_t *ops, size_t n);
} ncs_job_sink_t;

/* ------------------------------------------------------------------ CUPTI (docs/gpu-truth.md) */
/* a time interval, job time, [from, to) */
typedef struct {
  int64_t from, to;
} ncs_iv_t;
/* sort and merge overlapping or touching intervals in place (empty ones go); the new count */
size_t ncs_iv_union(ncs_iv_t *v, size_t n);
/* length of a union inside [from, to) */
int64_t ncs_iv_len(const ncs_iv_t *u, size_t n, int64_t from, int64_t to);
/* length of the intersection of two unions inside [from, to) */
int64_t ncs_iv_overlap(const ncs_iv_t *a, size_t na, const ncs_iv_t *b, size_t nb, int64_t from,
                       int64_t to);

/* what one file says about CUPTI (its GPU_STATE chunks and GPU records) */
typedef struct {
  int have_state;           /* a GPU_STATE was seen (format 1.2): else nothing is known */
  uint32_t state;           /* the last state (NCS_GPU_*) */
  uint32_t states_seen;     /* bit per NCS_GPU_* state seen */
  const char *reason, *holder, *library; /* pooled, of the last GPU_STATE that had one; "" */
  uint64_t kernels, nccl_eager, nccl_replays, compute, bad_time, unjoined_launch;
  uint64_t pending;         /* launches without their kernels (ncs_job_t.pending) */
  /* the segments' GPU_STATE counters, summed over segments (the last of each) */
  uint64_t cupti_dropped, no_buffer, bad_buffer, untracked, host_drops, write_lost, map_full,
      node_set_full, names_full, flush_errors, summarized;
  uint64_t flush_ns;        /* monotonic ns of the last successful flush (0 none) */
  int summary_mode;         /* NCCLSCOPE_CUPTI_KERNELS=nccl: compute kernels only summarized */
  const char *lost;         /* pooled: why what CUPTI gave is incomplete ("" when complete) */
  int64_t active_from, active_to; /* job time of its first and last kernel (0 none) */
} ncs_job_gpu_t;

/* one GPU (file, device) that CUPTI saw kernels on: its NCCL and compute kernels as unions of
 * intervals, for overlap and exposed communication in any window. The unions are in the file's
 * monotonic time (job time = monotonic + off); ncs_job_gpu_overlap takes job time. */
typedef struct {
  uint32_t proc;
  int32_t device;           /* CUPTI's device id */
  int32_t rank;             /* the rank whose NCCL kernels ran here (the lowest; -1 none joined) */
  uint32_t comm;            /* that rank's communicator (job index; UINT32_MAX none) */
  uint64_t nccl_kernels, compute_kernels;
  ncs_iv_t *nccl, *compute; /* unions, by time (monotonic ns of the file, below 2^62) */
  size_t nnccl, ncompute;
  int64_t off;              /* job time - monotonic time of the file */
  int64_t from, to;         /* its first kernel start, last kernel end (job time) */
} ncs_job_gpu_dev_t;

/* the numbers of one device in a window (ncs_job_gpu_overlap) */
typedef struct {
  int64_t comm_ns;     /* time some NCCL kernel ran */
  int64_t compute_ns;  /* time some other kernel ran */
  int64_t overlap_ns;  /* both at once */
  int64_t exposed_ns;  /* NCCL kernels with no compute beside them: comm_ns - overlap_ns */
} ncs_gpu_overlap_t;
void ncs_job_gpu_overlap(const ncs_job_gpu_dev_t *d, int64_t from, int64_t to,
                         ncs_gpu_overlap_t *out);

/* one replay of a captured NCCL operation: a CUPTI kernel of a graph launch, with the captured
 * operation's metadata. Sorted by (comm, func, seq, replay, rank): the replays of one
 * (comm, seq, replay index) across ranks are adjacent, one instance of the replay. */
typedef struct {
  uint32_t proc, seg;
  uint32_t comm;           /* job communicator (UINT32_MAX unknown) */
  int32_t rank;            /* -1 unknown */
  const char *func, *dtype; /* pooled: the captured operation's */
  uint64_t count, bytes;   /* bytes as ncs_op_t.bytes (0 datatype unknown) */
  int64_t seq;             /* the capture's seqNumber (-1 unknown) */
  uint64_t op_id;          /* the captured Coll/P2p event id (ncs_op_t.id; 0 none) */
  uint32_t replay;         /* 1-based graph launch index of its exec graph */
  uint64_t graph;          /* exec graph id */
  uint64_t stream;         /* CUPTI stream id */
  int32_t device;
  const char *name;        /* pooled kernel name */
  int64_t start, end;      /* job time; 0 when CUPTI's times were bad */
} ncs_job_replay_t;

/* one CUPTI kernel (kept with opts.retain): what the timeline draws */
typedef struct {
  uint32_t proc, seg;
  int32_t device;
  uint64_t stream;          /* CUPTI stream id */
  const char *name;         /* pooled; "" unknown */
  int64_t start, end;       /* job time; 0 when bad */
  uint8_t nccl;             /* joined to NCCL operations (or named like NCCL's kernels) */
  uint8_t graph;            /* from a graph launch */
  uint32_t replay;          /* graph launch index, 0 eager */
  uint64_t graph_id;
  int32_t rank;             /* NCCL: the launch's rank (-1 unknown) */
  uint32_t comm;            /* NCCL: job communicator (UINT32_MAX unknown) */
  const char *func;         /* NCCL: its first operation's function (pooled; "" none) */
  int64_t seq;              /* NCCL: its first operation's seqNumber (-1 none) */
  uint32_t nops;            /* NCCL: operations it ran */
  uint32_t op_seg;          /* NCCL: its first operation's segment and Coll/P2p event id */
  uint64_t op_id;           /*   (ncs_op_t.seg and .id; op_id 0: none joined) */
} ncs_job_kernel_t;

/* an NCCL launch whose kernels are not in the file (docs/gpu-truth.md "Hangs") */
typedef struct {
  uint32_t proc, seg;
  int64_t ts;               /* job time of the launch (0 unknown: restated without time) */
  uint64_t corr, launch, stream; /* CUPTI correlation id, KernelLaunch id, CUstream pointer */
  uint64_t graph;           /* a graph launch: its exec graph id; 0 eager */
  uint32_t comm;            /* job communicator (UINT32_MAX unknown) */
  int32_t rank;
  const char *func;         /* the first operation of its group on that communicator (pooled; "") */
  int64_t seq;              /* its seqNumber, -1 unknown */
  uint64_t op_id;           /* its Coll/P2p event id (0 unknown) */
  uint32_t nops;            /* operations of the group on that communicator */
  int before_flush;         /* launched before the file's last successful CUPTI flush */
} ncs_job_pending_t;

/* why ncs_job_open failed */
enum {
  NCS_JOB_ERR_NO_INPUT = 1, /* no trace files */
  NCS_JOB_ERR_SEVERAL = 2,  /* the files hold several jobs and none was chosen (err lists them) */
  NCS_JOB_ERR_NO_JOB = 3,   /* the chosen job does not exist */
  NCS_JOB_ERR_FILTER = 4,   /* the job cannot answer the filter (err says why): a --range name (or
                             * number) none of its ranges has, --range on a recording without user
                             * ranges, --tag on one without user tags, a --comm it lacks */
};

#define NCS_JOB_LAST UINT32_MAX

/* one --range of a filter: the ranges of this name, or only the from-th to to-th of it on each
 * thread (1-based, in begin order per thread) */
typedef struct {
  const char *name;
  uint64_t from, to;        /* 0 0: every range of the name */
} ncs_job_rsel_t;
/* one interval of a --tag list: userTags lo to hi */
typedef struct {
  uint64_t lo, hi;
} ncs_job_tsel_t;

/* What part of the job a reader asks for (docs/model.md, "Filters"). Applied in one place, where
 * the streaming pass hands an instance or a send/receive over (and retains it): what does not pass
 * is counted in run.filtered_* and handed to no one. A collective instance passes when it is of
 * the communicator, its first arrival lies in the time window, and one of its operations is of a
 * listed rank, called inside a selected user range and of a listed userTag (each when asked for);
 * it passes whole (every rank's operation), since its numbers are across ranks. A send or receive
 * passes the same way, by its arrival and by the send or the receive. ncs_job_open refuses a range
 * or tag filter the job cannot answer (NCS_JOB_ERR_FILTER). */
typedef struct {
  int comm_set;             /* only the communicator with this commId */
  uint64_t comm_id;
  int comm_by_index;        /* with comm_set: the communicator was given by its label or index
                             * (comm_index); ncs_job_filter_comm sets comm_id from it. After it,
                             * always set, with the index of comm_id's communicator */
  uint32_t comm_index;
  const int32_t *ranks;     /* only instances and pairs with one of these ranks (NULL: all) */
  uint32_t nranks;
  int window;               /* only those whose first arrival is in [from_ns, to_ns] */
  int64_t from_ns, to_ns;   /* ns since the job's first event (t_first); to_ns INT64_MAX: end */
  const ncs_job_rsel_t *rsel; /* only those with an operation called inside one of these user
                               * ranges (NULL: any) */
  uint32_t nrsel;
  const ncs_job_tsel_t *tsel; /* only those with an operation whose userTag is in one of these */
  uint32_t ntsel;
  const char *notes;        /* set by the model in ncs_job_t.filter after the streaming pass: what
                             * the range and tag selection could not tell (pooled; NULL: nothing) */
} ncs_job_filter_t;
/* An operation the filter left out, kept with opts.retain (ncs_job_left): enough for an exporter
 * to leave out its records too (its API call, children and kernels). Every operation the
 * streaming pass made is either retained (ncs_job_op) or one of these. */
typedef struct {
  uint32_t proc, seg;   /* its file and segment */
  uint64_t id;          /* its Coll/P2p START's event id (ncs_op_t.id) */
  uint64_t api_id;      /* its CollApi/P2pApi's event id (0: none found) */
  uint32_t comm;        /* index into comms */
  int32_t rank;
} ncs_job_left_t;
/* 1 when the filter asks for less than the whole job */
int ncs_job_filter_active(const ncs_job_filter_t *f);
/* --comm against the job's communicators (`comms`, `ncomms` of the model or of a reader that
 * keeps the model's order): a label or index sets comm_id, a commId sets comm_index. 0, or -1
 * with err ("no such communicator", with the job's labels and commIds) for one the job lacks. */
int ncs_job_filter_comm(ncs_job_filter_t *f, const ncs_job_comm_t *comms, uint32_t ncomms, char *err,
                        size_t errlen);
/* the filter in words ("comm 0x..., ranks 0,2-5, from 1.50 s to the end ..., inside the user
 * range step:5, user tags 3,5-9"), followed by its notes in parentheses when the model set them
 * (ncs_job_t.filter after the streaming pass: what the range and tag selection could not tell);
 * "" for none */
void ncs_job_filter_text(const ncs_job_filter_t *f, char *out, size_t len);

typedef struct {
  int retain;   /* keep every operation and instance (memory grows with the job) */
  uint32_t job; /* which job, when the files hold several (1-based, by start time; NCS_JOB_LAST
                 * the latest); 0: they must hold one */
  int *why;     /* optional out: NCS_JOB_ERR_* when the open fails */
  const ncs_job_filter_t *filter; /* NULL: the whole job; copied by ncs_job_open */
} ncs_job_opts_t;

/* User ranges (docs/ranges.md, "What the read side shows"): one range of one file, after the
 * streaming pass. Its numbers follow trace/rangestat.h; times are job time. */
enum {
  NCS_JR_ENDED = 0,    /* begun and ended in the trace */
  NCS_JR_END_LOST = 1, /* its pop was lost (END flag endlost): its end is unknown, no numbers */
  NCS_JR_OPEN = 2,     /* never ended in the trace (open at the end, or the file was cut) */
};
extern const char *const ncs_jr_names[3]; /* "ended", "end_lost", "open" */

typedef struct {
  uint32_t proc, seg;
  uint64_t id;           /* the range's id in its segment, as `dump` prints it */
  size_t parent;         /* index of the enclosing push/pop range in ncs_job_t.ranges; SIZE_MAX none */
  uint32_t thread, depth; /* depth: push/pop nesting level (1 = outermost); 0 start/end */
  uint32_t flags;        /* its BEGIN's NCS_RF_* (STARTEND, API, TRUNCATED, RESTATED, NO_NAME) */
  int state;             /* NCS_JR_* */
  int before;            /* it began before the file's coverage (a flight window): lower bounds */
  const char *name, *domain; /* pooled; "" unknown / the default domain */
  int32_t rank;          /* the lowest rank among its operations, else the file's lowest rank; -1 */
  int64_t begin, end;    /* job time; end 0 unknown */
  ncs_rs_stat_t st;      /* its numbers (rangestat.h): flags say what is unknown or a bound */
  uint32_t nvalues;      /* hardware metric values (its file's metric list, ncs_job_rproc_t) */
  size_t values;         /* index of the first in ncs_job_t.range_values */
  uint8_t replay;        /* its values combine a replay group (METRICS flag replay) */
} ncs_job_range_t;

/* what a file says about its ranges: the last RANGE_STATE of each segment, summed */
typedef struct {
  int seen;              /* a RANGE_STATE was read */
  uint32_t nvtx, mx_state; /* NCS_NVTX_*, NCS_HWM_* of the last one */
  const char *reason;    /* pooled */
  uint32_t nmetrics;
  const char *metric[NCS_RANGE_MAX_METRICS]; /* pooled */
  uint8_t metric_type[NCS_RANGE_MAX_METRICS];
  uint64_t counters[NCS_RK_MAX + 1]; /* NCS_RK_* totals over its segments */
  int have_kernels;      /* CUPTI was active: compute kernels are known */
  uint64_t ranges, marks; /* ranges (distinct BEGINs) and marks read */
  uint64_t lost;         /* range records it lost: dropped + no_slot + untracked + write_lost */
} ncs_job_rproc_t;

typedef struct {
  char path[512];
  ncs_job_proc_t *procs;
  uint32_t nprocs;
  ncs_job_host_t *hosts;
  uint32_t nhosts;
  ncs_job_comm_t *comms;
  uint32_t ncomms;
  ncs_job_member_t *members;
  uint32_t nmembers;
  int64_t error;           /* error bound of every cross-rank time difference, ns: the largest
                            * CLOCK pair spread plus the largest host offset error */
  int64_t t_first, t_last; /* earliest and latest event of the job (job time); wall = last - first */
  ncs_job_loss_t *losses;  /* every loss window of every file, by file then time */
  uint32_t nlosses;
  uint32_t unreadable, damaged; /* files that could not be opened; files that end early */
  uint32_t duplicates;     /* files left out as copies of another (NCS_JX_DUPLICATE) */
  uint32_t other_job;      /* files left out as another job's (NCS_JX_OTHER_JOB) */
  ncs_job_part_t *parts;   /* the jobs found among the listed files, by start time */
  /* CUPTI (docs/gpu-truth.md, "Analysis"): per file, per GPU, replays, pending launches; kernels
   * only with opts.retain. Filled by pass 1; times in job time. */
  ncs_job_gpu_t *gpu;      /* [nprocs] */
  ncs_job_gpu_dev_t *gdevs;
  uint32_t ngdevs;
  ncs_job_replay_t *replays;
  size_t nreplays;
  ncs_job_kernel_t *kernels;
  size_t nkernels;
  ncs_job_pending_t *pending;
  size_t npending;
  uint32_t njobs, job;     /* how many; which one this is (1-based) */
  /* the last streaming pass (docs/report.md, "Memory") */
  struct {
    uint64_t evicted;       /* incomplete instances closed before the end: horizon or cap */
    uint64_t p2p_evicted;   /* sends/recvs given up unpaired before the end: horizon */
    uint64_t peak_open;     /* most collective instances open at once */
    uint64_t peak_held;     /* most rank operations held at once (pending, open, unpaired) */
    uint64_t filtered_inst, filtered_p2p; /* left out by the filter (instances; sends/recvs) */
    uint32_t passes;        /* reading passes over the files: 2, 3 with several hosts */
    double pass_s[3];       /* seconds of each pass */
  } run;
  ncs_job_filter_t filter; /* opts.filter (lists copied), or all zero: the whole job */
  /* what the --range and --tag selection found (after ncs_job_stream; docs/model.md, "Filters") */
  struct {
    uint64_t ranges;        /* ranges the --range list selected, over every file */
    uint64_t partial;       /* of which began before their file's recording: a flight window (or a
                             * segment start that was lost); what they held before it is not there */
    uint64_t end_unknown;   /* of which never ended in the recording or lost their END: they held
                             * what followed their begin up to the end of the recording */
    uint64_t late;          /* selected ranges whose BEGIN or END was read after operations they
                             * may hold had been decided: those decisions may be wrong */
    uint64_t ops_blind;     /* operations of files that could not record user ranges (no
                             * RANGE_STATE: an older plugin; NCCLSCOPE_RANGES=off): never selected */
    uint64_t ops_early;     /* operations of a flight file called before its ranges are all known
                             * and inside none of those it has: never selected (cannot tell) */
    uint64_t ops_no_tag;    /* operations whose userTag is unknown (an ABI before v7): never selected */
    uint64_t records_lost;  /* range records lost by files that recorded ranges (RANGE_STATE:
                             * dropped, no_slot, untracked, write_lost; begin_lost) */
    uint32_t files_lost;    /* such files */
    uint32_t files_no_nvtx; /* files whose NVTX ranges were not recorded (NVTX_INJECTION64_PATH unset
                             * or naming another tool) while selected ranges came from NVTX */
    int flight_numbered;    /* NAME:N counted ranges of a flight recording, from its window */
  } sel;
  /* user ranges, after ncs_job_stream: by file, then begin time */
  ncs_job_range_t *ranges;
  size_t nranges;
  ncs_job_rproc_t *rprocs; /* per file (nprocs) */
  double *range_values;
  size_t nrange_values;
  ncs_pool_t strs;
  void *priv;
} ncs_job_t;

/* Read the files of a directory (or one file): pass 1 (files, segments, communicators, clocks)
 * and, with several hosts, the pass that estimates host offsets. NULL with err filled (and
 * opts->why) when there are no trace files, or when they hold several jobs and opts->job does not
 * choose one. Unreadable files are kept, marked (readable 0), and counted; duplicates and
 * other jobs' files are kept, marked (excluded), and counted. */
ncs_job_t *ncs_job_open(const char *path, const ncs_job_opts_t *opts, char *err, size_t errlen);
/* the same for an explicit list of files */
ncs_job_t *ncs_job_open_files(char *const *paths, size_t n, const ncs_job_opts_t *opts, char *err,
                              size_t errlen);
/* The streaming pass: every instance and send/receive to the sink (NULL: none; with retain the
 * job keeps them anyway). Run it once. */
void ncs_job_stream(ncs_job_t *j, const ncs_job_sink_t *sink, void *arg);
void ncs_job_free(ncs_job_t *j);

/* What the input is, for the one exit-status table of every verb (docs/cli.md, "Exit status"):
 *   NCS_JOB_IN_NONE     no file with a segment that could be read (unreadable, not a trace, a
 *                       newer format, damaged throughout, or only empty files): exit 3;
 *   NCS_JOB_IN_DAMAGED  a file is damaged in the middle (the reader's CORRUPT), or one could not be
 *                       read (or holds no segment) while others could: exit 4;
 *   NCS_JOB_IN_OK       otherwise: a file cut short (truncated last chunk), an empty file or a
 *                       segment without footer only warns.
 * Files left out (a duplicate, another run's) do not count. */
enum { NCS_JOB_IN_OK = 0, NCS_JOB_IN_DAMAGED = 1, NCS_JOB_IN_NONE = 2 };
int ncs_job_input(const ncs_job_t *j);

/* the retained operations and instances (opts.retain, after ncs_job_stream). Instances are in
 * (comm, func, seq, then the order they finished) order; the operations of instance i are
 * ncs_job_op(j, first_op + k), k < nops, by rank. Operations are in the order they were handed
 * out: a send is directly followed by its receive (ncs_op_t.pair links them). NULL past the end. */
size_t ncs_job_op_count(const ncs_job_t *j);
const ncs_op_t *ncs_job_op(const ncs_job_t *j, size_t i);
size_t ncs_job_inst_count(const ncs_job_t *j);
const ncs_inst_t *ncs_job_inst(const ncs_job_t *j, size_t i);
/* the operations the filter left out (opts.retain with a filter, after ncs_job_stream), in the
 * order they were left out; NULL past the end */
size_t ncs_job_left_count(const ncs_job_t *j);
const ncs_job_left_t *ncs_job_left(const ncs_job_t *j, size_t i);

/* clocks */
static inline int64_t ncs_job_time(const ncs_job_t *j, uint32_t proc, uint64_t mono) {
  return mono ? (int64_t)(mono + (uint64_t)j->procs[proc].job_off) : 0; /* wraps, never UB */
}
static inline int64_t ncs_job_realtime(const ncs_job_t *j, uint32_t proc, uint64_t mono) {
  return mono ? (int64_t)(mono + (uint64_t)j->procs[proc].clk_off) : 0;
}
/* a pTimer value of file proc in job time; 0 when its GPU clock is not mapped */
int64_t ncs_job_gpu_time(const ncs_job_t *j, uint32_t proc, uint64_t ptimer);
/* the same for a pTimer the host read at monotonic time seen (its record's time): the right window
 * also across a step of the GPU clock */
int64_t ncs_job_gpu_time_seen(const ncs_job_t *j, uint32_t proc, uint64_t ptimer, uint64_t seen);

/* The first loss window of file proc, of a kind in `kinds` (bit per NCS_JL_*), that overlaps
 * [from, to] (monotonic ns) and lost records of a type in `types`; NULL when the file says it lost
 * none there. (UNKNOWN windows start where a recording without a footer ends: a question about
 * what happened up to that end leaves them out.) */
#define NCS_JL_RECORDED (~(1u << NCS_JL_UNKNOWN)) /* every kind but UNKNOWN */
const ncs_job_loss_t *ncs_job_lost(const ncs_job_t *j, uint32_t proc, uint64_t from, uint64_t to,
                                   uint32_t kinds, uint32_t types);

/* the communicator of (commId, nranks) seen in file proc; -1 when the job has none */
int64_t ncs_job_comm_index(const ncs_job_t *j, uint64_t comm_id, int32_t nranks, uint32_t proc);
/* the member of file proc, segment seg, comm index idx; NULL when none was recorded */
const ncs_job_member_t *ncs_job_member(const ncs_job_t *j, uint32_t proc, uint32_t seg,
                                       uint64_t idx);

/* the CUPTI kernels of the operation (file proc, segment seg, Coll/P2p event id), eager only:
 * 1 with their first start and last end (job time), 0 none joined */
int ncs_job_cupti_op(const ncs_job_t *j, uint32_t proc, uint32_t seg, uint64_t id, int64_t *start,
                     int64_t *end);

#endif
