/* sim.h - nccl-sim: a simulated NCCL that drives any profiler plugin on a CPU.
 *
 * nccl-sim reproduces how NCCL 2.23 .. 2.31 calls a profiler plugin: which events it starts for
 * a given activation mask, on which threads, with which descriptors and parents, and in which
 * (racy) order. It never touches a GPU. The facts it follows are in
 * shared/research/nccl-profiler-api.md (sections 1-4 and 7); comments cite them as "R§n".
 *
 * Layers, bottom up:
 *   abi_call.c  load the plugin, adapt descriptors to the ABI version NCCL would use, count calls
 *   proxy.c     per-communicator proxy progress threads: ProxyCtrl, ProxyOp, ProxyStep, KernelCh
 *   net.c       net-plugin helper threads (NetPlugin events) and the PXN pipe between processes
 *   nccl.c      communicators, groups, kernel plans, graph capture/replay, CE collectives
 *   scenarios.c the named scenarios (--scenario) built from the above
 *   fault.c     peer coupling of the ranks of a communicator, and fault injection (--fault)
 *   flood.c     the event-cost benchmark loop
 *   clock.c     model time (--clock model): every timestamp from the model, none from the wall
 *   main.c      options, processes, summary
 */
#ifndef NCS_SIM_H
#define NCS_SIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "abi/ncs_abi.h"

#define SIM_MAX_CHANNELS 32
#define SIM_MAX_RANKS 1024
#define SIM_MAX_COMMS 16   /* communicators per rank */
#define SIM_STEP_RING 8    /* NCCL_STEPS: ProxyStep handles live in a ring of 8 (R§3.4) */
#define SIM_PIPELINE 4     /* network steps a proxy op keeps in flight */
#define SIM_KCH_SLOTS 64   /* MAX_PROFILER_EVENTS_PER_CHANNEL: the GPU's KernelCh ring per channel */
/* Waits that end only on a bug (proxy work that never finishes, ranks out of step) give up after
 * this long, and say so: generous, as a loaded machine (a test suite beside a parallel build, a
 * sanitizer) can hold a thread up for many seconds, and a guard is not a verdict on timing. */
#define SIM_GUARD_S 120
#define SIM_DEV0_N (SIM_MAX_CHANNELS + 1) /* a plan execution's GPU counters, then its stream index */
#define SIM_DEV0_ST SIM_MAX_CHANNELS
#define SIM_SELF_MAX 64    /* self-copy work items of one plan execution whose slots it stamps */

/* Event type indexes: the bit number of NCCL's ncclProfile* bit. */
enum {
  SIM_T_GROUP = 0, SIM_T_COLL, SIM_T_P2P, SIM_T_PROXY_OP, SIM_T_PROXY_STEP, SIM_T_PROXY_CTRL,
  SIM_T_KERNEL_CH, SIM_T_NET_PLUGIN, SIM_T_GROUP_API, SIM_T_COLL_API, SIM_T_P2P_API,
  SIM_T_KERNEL_LAUNCH, SIM_T_CE_COLL, SIM_T_CE_SYNC, SIM_T_CE_BATCH, SIM_T_KERNEL_PHASE
};

/* ---------------------------------------------------------------- options */
enum { SIM_NET_SOCK = 0, SIM_NET_IB = 1, SIM_NET_MIX = 2 };

/* --fault KIND:RANK:SEQ (docs/nccl-sim.md "Faults") */
enum { SIM_FAULT_NONE = 0, SIM_FAULT_SKIP, SIM_FAULT_STALL, SIM_FAULT_MISMATCH,
       SIM_FAULT_MISMATCH_DTYPE, SIM_FAULT_KILL, SIM_FAULT_KTIME, SIM_NFAULT_KINDS };
/* ktime: that rank's KernelCh pTimers of the op are another operation's, this much later */
#define SIM_KTIME_SHIFT_NS 100000000ull
#define SIM_MAX_FAULTS 16
typedef struct {
  int kind, rank; /* rank: global rank */
  int64_t seq;    /* index of the rank's kernel collectives on its first communicator */
} sim_fault_t;

typedef struct {
  const char *plugin;   /* path, NCCL-style name, or "none" */
  const char *scenario;
  int abi;              /* 0: newest the plugin has, like NCCL; else forced */
  int ranks, procs, threads, iters, comms, channels, steps, nodes;
  int replays, cycles, race_pct, net_threads, net_kind;
  size_t count;         /* elements per operation */
  uint64_t seed;
  long mask_override;   /* -1: keep what the plugin set */
  int verbose;
  int threads_set, comms_set; /* given on the command line */
  /* flood */
  uint64_t flood_events;
  double flood_duration, flood_rate;
  int flood_yield; /* --pace yield */
  double flood_cold_kb; /* --cold KB: flood rounds are API operations, with KB swept between */
  /* replay */
  const char *replay_path;
  char **replay_files;
  int replay_nfiles, replay_ncomms;
  double replay_speed; /* 1 = recorded pace, 0 = as fast as the dependencies allow */
  /* fake GPU clock */
  int64_t gpu_offset_ns;
  double gpu_drift_ppm;
  int gpu_clock_mono; /* --gpu-clock monotonic: the fake GPU clock is not near CLOCK_REALTIME */
  int kch_self;       /* --kch-self on: a self send/recv advances the GPU's KernelCh work counter
                         but not the host's (NCCL 2.28-2.30): later KernelCh read earlier work's
                         ring slots, with their timestamps */
  /* delay injection (report validation): -1 = none. Ranks are global ranks. */
  int slow_rank, slow_link_rank, slow_gpu_rank;
  unsigned slow_us, slow_link_us, slow_gpu_us;
  int pause_rank;             /* --pause R:N:MS: global rank R sleeps MS ms once, before its N-th */
  uint64_t pause_at;          /* enqueue (0-based, a group counts once); -1 rank: none */
  unsigned pause_ms;
  double gpu_gbps; /* > 0: a kernel lasts bus bytes / gpu_gbps (see docs/nccl-sim.md) */
  unsigned hold_ms; /* --hold: the communicators stay alive this long after their last operation */
  /* peer coupling and faults (fault.c) */
  int couple;      /* ranks wait for each other's data (-1 auto: on with --fault) */
  sim_fault_t faults[SIM_MAX_FAULTS];
  int nfaults;
  double hang_s;   /* hung ranks give up (abort) after this long */
  /* KernelCh work counters (docs/nccl-sim.md "KernelCh work counters") */
  int toggle_kch;  /* > 0: KernelCh on for one group in N at each GroupApi stop, like a naive
                      sampling plugin */
  int capture_at;  /* graph: the iteration whose group is captured (0) */
  int late_comm;   /* graph: one more communicator per rank, created after the capture */
  /* GPU truth with a fake CUPTI (gpu.c) */
  const char *cupti_path; /* --cupti: the fake libcupti to drive */
  const char *gpu_truth;  /* --gpu-truth: append what really ran here */
  int compute;            /* --compute N: compute kernels per group (and captured per graph) */
  int cupti_other;        /* --cupti-other: another CUPTI client subscribes after the first init */
  int user_tags;   /* ABI v7: the operations of iteration i carry userTag 1 + i / N (0: none) */
  unsigned profiler_lag_us; /* ABI v7: the profiler thread takes up new KernelCh work this late */
  const char *cuda_path;  /* --cuda: a fake libcuda.so.1 (the current context the plugin asks for) */
  /* user ranges (range.c) */
  int ranges;              /* --ranges: every iteration inside ranges, through the plugin's API */
  const char *range_truth; /* --range-truth: append what happened inside each range */
  int range_outer;         /* --range-outer: the iterations inside one more range, "train" */
  int model;               /* --clock model: timestamps from the model (clock.c) */
} sim_opts_t;

extern sim_opts_t sim_opt;

/* ---------------------------------------------------------------- counters
 * What nccl-sim called, summed over all its processes: the table lives in a MAP_SHARED mapping
 * made before any fork, so children add to the same numbers the parent prints. */
typedef struct {
  _Atomic uint64_t start[NCS_NTYPES], stop[NCS_NTYPES], state[NCS_NTYPES];
  _Atomic uint64_t null_stops, null_states;       /* handle NULL */
  _Atomic uint64_t garbage_stops, garbage_states; /* never a plugin handle */
  _Atomic uint64_t double_stops, double_states;   /* a handle already stopped */
  _Atomic uint64_t stale_stops, stale_states;     /* a handle of an earlier plugin load */
  _Atomic uint64_t null_args;                     /* recordEventState with NULL args where a
                                                     state normally has them */
  _Atomic uint64_t null_ctx_starts, foreign_starts;
  _Atomic uint64_t graph_colls; /* Coll/P2p starts issued by graph replays */
  _Atomic uint64_t kch_stuck;   /* KernelCh work items whose ring slot never reached their
                                   work counter: NCCL's proxy waits for them forever */
  _Atomic uint64_t kch_foreign; /* KernelCh started from a ring slot another work item wrote,
                                   with that item's timestamps (--kch-self) */
  _Atomic uint64_t kch_lapped;  /* KernelCh started from its ring slot after a later work item of
                                   the channel (64 on) overwrote it, with that item's timestamps:
                                   NCCL's proxy fell a lap behind the GPU (live time only) */
  _Atomic uint64_t ops, loads, inits, init_failures, finalizes;
  /* --cupti: kernel records the fake CUPTI got (NCCL eager, NCCL replays, compute), NCCL kernels
   * launched that never completed, kernels it did not record (not tracing) */
  _Atomic uint64_t gpu_nccl, gpu_replays, gpu_compute, gpu_hung, gpu_untraced;
  _Atomic int cupti_other; /* --cupti-other: CUPTI's answer to the other client (-1 not tried) */
  char cupti_other_holder[64];
  _Atomic int failed;
  char fail_msg[256];
} sim_counts_t;

extern sim_counts_t *sim_cnt;

/* ---------------------------------------------------------------- util (main.c) */
uint64_t sim_now_ns(void);           /* CLOCK_MONOTONIC */
uint64_t sim_gpu_ns(void);           /* fake %globaltimer: ahead of CLOCK_MONOTONIC */
uint64_t sim_gpu_at(uint64_t host_ns); /* what sim_gpu_ns said at CLOCK_MONOTONIC host_ns */
uint64_t sim_host_at(uint64_t gpu_ns); /* the host time at which sim_gpu_ns says gpu_ns */
/* model time: the GPU clock's CLOCK_REALTIME - CLOCK_MONOTONIC and drift origin (clock.c) */
void sim_gpu_clock_base(int64_t real_minus_mono, uint64_t h0);
uint64_t sim_rand(uint64_t *state);  /* xorshift64* */
uint64_t sim_mix(uint64_t a, uint64_t b);
void sim_sleep_us(unsigned us);
void sim_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *sim_xcalloc(size_t n, size_t size);
/* Per-rank delay injection: --slow-rank sleeps at ENQUEUE. (--slow-link delays the rank's
 * network transfers on the net helper threads, net.c; --slow-gpu its receive steps' GPU
 * consumption, proxy.c.) 'rank' is the global rank. */
enum { SIM_AT_ENQUEUE = 0, SIM_AT_STEP = 1 };
void sim_delay_point(int rank, int where);

/* ---------------------------------------------------------------- clock.c (--clock model)
 * Model time: every activity (a user thread, a proxy op, a step, a transfer) has a clock, in ns
 * from the model's time 0; the plugin's calls are stamped with the clock the calling thread bound.
 * Live (no --clock model) these do nothing, and sim_host_ns is CLOCK_MONOTONIC. */
#define SIM_VT_TICK_NS 200ull     /* one plugin call and NCCL's work around it */
#define SIM_VT_POLL_NS 1000ull    /* a progress thread notices a change this late */
#define SIM_VT_GAP_NS 50000ull    /* the application's work between a user thread's groups... */
#define SIM_VT_JITTER_NS 20000ull /* ... plus up to this much more, drawn per rank and group */
#define SIM_VT_NET_LAT_NS 2000ull /* a network transfer: this, plus its bytes at ... */
#define SIM_VT_NET_GBPS 12.5      /* ... GB/s (100 Gb/s) */
#define SIM_VT_KERNEL_NS 4000ull  /* a kernel's shortest run without --gpu-gbps */
int sim_vt_setup(void);             /* main, before any fork: time 0, NCCLSCOPE_CLOCK=sim */
/* The frontier (clock.c): an activity that may still stamp events registers the earliest time it
 * may stamp one with (its floor), and leaves when it no longer can. */
typedef struct sim_vt_floor {
  _Atomic uint64_t v;
  struct sim_vt_floor *prev, *next;
} sim_vt_floor_t;
void sim_vt_floor_add(sim_vt_floor_t *f, uint64_t v);
void sim_vt_floor_del(sim_vt_floor_t *f);
void sim_vt_thread_begin(uint64_t *clk); /* a user thread: bound to clk, its floor follows it */
void sim_vt_thread_done(void);     /* it will only destroy communicators: its floor goes */
void sim_vt_thread_end(void);
void sim_vt_call(void);             /* before a plugin call (abi_call.c), sim_vt_tick after it */
uint64_t *sim_vt_bind(uint64_t *clk); /* this thread's calls are stamped with *clk; the old one */
uint64_t sim_vt_now(void);          /* the bound clock (0: none) */
void sim_vt_tick(void);             /* after a plugin call: the bound clock moves on a tick */
void sim_vt_add(uint64_t ns);       /* the bound activity spends ns */
void sim_vt_wait(uint64_t v);       /* the bound activity waited for something done at v */
uint64_t sim_vt_host(uint64_t v);   /* model time -> the CLOCK_MONOTONIC value the plugin sees */
uint64_t sim_vt_of_host(uint64_t host_ns);
uint64_t sim_host_ns(void);         /* now for the bound activity: model or CLOCK_MONOTONIC */
void sim_vt_max(_Atomic uint64_t *m, uint64_t v); /* atomic max */

/* ---------------------------------------------------------------- abi_call.c
 * NCCL's core builds a v7 descriptor (NCCL 2.31); a plugin called through an older version gets
 * it through an adapter, as NCCL's shims and the NCCL of that version's time give it. */
typedef ncs_result_t (*sim_start_fn)(void *ctx, void **eh, ncs_descr_v7_t *d);
typedef ncs_result_t (*sim_stop_fn)(void *eh);
typedef ncs_result_t (*sim_record_fn)(void *eh, ncs_state_t st, ncs_args_v7_t *a);
/* The functions NCCL's core calls: the v7 plugin's own, an adapter for older versions, or the
 * built-in no-op plugin ("--plugin none"). */
typedef struct {
  sim_start_fn start;
  sim_stop_fn stop;
  sim_record_fn record;
} sim_calls_t;
extern sim_calls_t sim_calls;

void *sim_plugin_lib(void); /* the loaded plugin's handle (NULL for none) */
int sim_plugin_load(const char *name, int abi, char *err, size_t errlen);
void sim_plugin_unload(void);
int sim_plugin_loaded(void);
int sim_plugin_abi(void);
const char *sim_plugin_name(void);
int sim_abi_has_type(int abi, unsigned type);   /* the adapter forwards this event type */
int sim_abi_has_state(int abi, int state);      /* the adapter forwards this state */
int sim_mask(void);                             /* relaxed load of the global mask */
void sim_mask_kernel_ch(int on);                /* sets or clears KernelCh in the global mask */
int sim_comm_init(void **ctx, uint64_t comm_id, const char *name, int nnodes, int nranks,
                  int rank);
void sim_comm_finalize(void *ctx);
unsigned sim_type_index(uint64_t type_bit);
extern const char *const sim_type_names[NCS_NTYPES];

/* Counted calls, shaped like NCCL's call sites: stop/state skip NULL handles, as NCCL does. */
void sim_ev_start(void *ctx, void **eh, ncs_descr_v7_t *d);
void sim_ev_stop(unsigned type, void **eh);     /* stops *eh if non-NULL, then clears it */
void sim_ev_state(unsigned type, void *eh, int state, ncs_args_v7_t *a);
/* Unchecked variants: the net-plugin callback passes whatever it holds (R§3.10 item 2). */
void sim_ev_stop_unchecked(unsigned type, void *eh);
void sim_ev_state_unchecked(unsigned type, void *eh, int state, ncs_args_v7_t *a);
/* Raw calls for the stale scenario; 'kind' says which invalid-handle counter to bump. */
enum { SIM_BAD_NULL, SIM_BAD_GARBAGE, SIM_BAD_DOUBLE, SIM_BAD_STALE };
void sim_ev_bad_stop(int kind, unsigned type, void *eh);
void sim_ev_bad_state(int kind, unsigned type, void *eh, int state, ncs_args_v7_t *a);

/* NCCL's "ancestors are emitted too" table (R§3.1): does this mask start an event of 'type'? */
int sim_active(int mask, unsigned type);

/* ---------------------------------------------------------------- proxy.c */
enum { POP_SEND = 0, POP_RECV = 1, POP_KERNEL = 2, POP_NOSTOP = 3 };

typedef struct sim_inst sim_inst_t;
typedef struct sim_comm sim_comm_t;
typedef struct sim_proxy sim_proxy_t;
typedef struct sim_cpl sim_cpl_t;

/* One execution of a kernel plan: proxy ops hold a reference, so the launching thread can wait
 * for the children (to stop the Coll after them) and KernelCh knows when the network is done. */
struct sim_inst {
  _Atomic int refs;
  _Atomic int ops_left;  /* local proxy ops not finished */
  _Atomic int net_left;  /* local network ops not finished */
  _Atomic int frozen;    /* hanging ops that reached the point where they stop progressing */
  uint64_t gpu_launch;   /* fake GPU time of the kernel launch */
  int hang;              /* abort scenario: number of its ops that never finish */
  _Atomic uint64_t net_done_gpu; /* fake GPU time when its last network op finished */
  _Atomic int kch_wait;  /* KernelCh ops waiting for their ring slot (never waited for) */
  /* model time: when its last op finished, and its last coupled send (this rank's data out) */
  _Atomic uint64_t done_vt, out_vt;
  /* peer coupling (fault.c): the collective instance all ranks of the comm share, or NULL */
  sim_cpl_t *cpl;
  _Atomic int sends_left; /* coupled send ops not finished: at 0 this rank's data is out */
  int grank, func;        /* what a hang report says about it */
  int64_t opidx;
  uint64_t seqno, comm_id;
  /* --cupti: the kernel this execution is (gpu.c); corr 0 when none runs (capture time) */
  uint32_t corr, kdevice, kstream, kgraph, kreplay;
  uint64_t knode, kstart, kcomm;
  int krank, kfunc;
  char kops[256]; /* the plan's operations, for --gpu-truth */
  /* the comm's stream (proxy.c): the GPU runs a comm's kernels one after another, so this one
   * begins once the kernels issued before it ended (CPU ahead of the GPU: it queues) */
  sim_comm_t *st_comm;       /* NULL: no KernelCh of it to order */
  uint64_t st_idx;           /* 1-based place in the comm's stream */
  _Atomic uint64_t gpu_begin; /* fake GPU time its kernel began (0: not yet) */
  _Atomic int st_left;       /* its KernelCh channels that have not ended on the GPU */
  _Atomic uint64_t st_end;   /* the latest of their ends */
  int nself;                 /* self copies (no proxy op, still GPU work items): their slots */
  uint8_t self_ch[SIM_SELF_MAX];
  uint64_t self_d[SIM_SELF_MAX];
};
void sim_inst_put(sim_inst_t *in);

/* A proxy op as NCCL's proxy thread sees it after ncclProxyOpToArgs (R§3.7: everything here is
 * copied, so for PXN ctx and parent are pointers of another process). */
typedef struct sim_pop {
  struct sim_pop *next;
  int kind;
  void *ctx, *parent;
  pid_t pid;
  int rank, channel, peer, nsteps, chunk, mask, net_kind;
  size_t bytes;          /* bytes this op moves */
  int hang;              /* stop progressing after the first step (abort) */
  sim_cpl_t *cpl;        /* coupled to the peer's op of the same instance, or NULL */
  int lane;              /* index of this (task, channel) in the instance's marks */
  int stall_at;          /* --fault stall: freeze in SendWait of step stall_at - 1 (0 none) */
  int stalled;
  sim_inst_t *inst;      /* NULL for ops of another process */
  sim_comm_t *comm;      /* comm accounted for the op (drain before destroy) */
  /* progress (proxy thread only) */
  void *op_h;
  int started, next_step, done_steps;
  struct sim_step {
    void *h;             /* stepEventHandle; the net helper reads it (NCCL's pHandle) */
    int phase, repeats;
    size_t trans;
    uint64_t due;        /* --slow-gpu: when the GPU has consumed this step (monotonic ns) */
    uint64_t vt;         /* model time: the step's clock */
    struct sim_netreq *req;
  } st[SIM_STEP_RING];
  /* model time: the op's clock; its random choices (per op and step, not per thread, so they
     do not depend on the order the proxy thread takes ops in); the steps' stops in order; the
     link (--slow-link) and the GPU (--slow-gpu) taking transfers and steps one after the other,
     in step order (net_seq, gpu_seq: steps that have had their turn) */
  uint64_t vt, vrng, last_stop_vt, stop_vt[SIM_STEP_RING];
  uint64_t link_pos;     /* --slow-link: its place in the slow link's order (1..), 0 none */
  int link_rank, net_seq, gpu_seq;
  sim_vt_floor_t floor;  /* model time: no event of it before its posting time */
  uint64_t gpu_busy;     /* --slow-gpu: the GPU consumes one step after the other */
  int rounds, frozen;
  uint64_t gpu_start;
  uint64_t kern_ns;      /* --gpu-gbps: KernelCh lasts this long (bus bytes / G) */
  uint64_t kshift;       /* --fault ktime: added to its KernelCh pTimers */
  uint64_t ready_gpu;    /* coupled: fake GPU time when every rank entered and sent its data */
  uint64_t entered_gpu;  /* coupled: fake GPU time when the last rank entered (0 not yet) */
  void *kch_h;
  /* KernelCh work counters: the host's expectation (sub->base) and the GPU's counter value of
     this work item; the op starts once ring slot kbase % 64 holds a value >= kbase */
  uint64_t kbase, kdev;
  int kwait;             /* counted in inst->kch_wait */
  int swait;             /* waiting for the stream, counted in inst->kch_wait as well */
  int tdone;             /* the GPU side: its block ended (at tstop) */
  int rstart, rstop;     /* NCCL's side: KernelCh started, stopped (with the times of item fv) */
  uint64_t fv, tstop;
  int sym;               /* a symmetric kernel's channel (NCCL 2.31): its own work counters */
} sim_pop_t;

struct sim_proxy {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t th;
  int index;
  void *ctrl_ctx;        /* context of the communicator that created it (R§1.4) */
  int refs;
  int stop, abort;
  int profiler;          /* NCCL 2.31's profiler thread: KernelCh only, no ProxyCtrl */
  uint64_t vt;           /* model time: ProxyCtrl's clock (the latest op it took up) */
  sim_pop_t *pending, *pending_tail;
  uint64_t rng;
};

/* profiler: the thread NCCL 2.31 polls KernelCh (and KernelPhase) from, instead of the proxy */
sim_proxy_t *sim_proxy_create(void *ctrl_ctx, int index, int profiler);
void sim_proxy_ref(sim_proxy_t *p);
/* Drops a reference; the last one stops and joins the thread ('abort': leave ops open). */
void sim_proxy_unref(sim_proxy_t *p, int abort);
void sim_proxy_post(sim_proxy_t *p, sim_pop_t *ops); /* a NULL-terminated list */
/* model time, --slow-link: the op's transfers take their turn on the slow rank's link in the
 * order the ops are posted (call in that order, from the posting thread) */
void sim_link_enqueue(sim_pop_t *o, int grank);

/* ---------------------------------------------------------------- net.c */
typedef struct sim_netreq {
  void *ctx;
  void **step_h;         /* &sub->pHandles[i].stepEventHandle */
  int mask, rank, is_send, fd, net_kind;
  int grank;             /* global rank (--slow-link) */
  size_t len;
  uint64_t due;          /* --slow-link: the transfer completes at this monotonic ns */
  uint64_t vt, vt_end, vt_done; /* model time: start, the transfer's end, its events' end */
  uint64_t vrng;         /* model time: its random choices */
  int nev;               /* NetPlugin events started, and their handles and descriptors */
  void *neh[3];
  _Alignas(8) unsigned char nd[3][40];
  _Atomic int done;
  struct sim_netreq *next;
} sim_netreq_t;

void sim_net_acquire(void);  /* starts the helper threads on first use */
void sim_net_release(void);  /* joins them after the last user */
void sim_net_submit(sim_netreq_t *r);

/* PXN: a process forwards its send proxy ops to the next process's proxy through a pipe. */
int sim_pxn_setup(int nprocs);            /* before fork */
void sim_pxn_child_fds(int proc);         /* after fork: keep this process's two ends */
int sim_pxn_active(void);
void sim_pxn_forward(const sim_pop_t *op);
void sim_pxn_start_listener(sim_comm_t *(*host)(int channel));
void sim_pxn_finish(void);                /* close our write end, wait for the peer's EOF */

/* ---------------------------------------------------------------- nccl.c */
enum { F_BROADCAST = 0, F_REDUCE, F_ALLGATHER, F_REDUCESCATTER, F_ALLREDUCE, F_SENDRECV, F_SEND,
       F_RECV, SIM_NFUNCS };
enum { D_INT8 = 0, D_UINT8, D_INT32, D_UINT32, D_INT64, D_UINT64, D_FLOAT16, D_FLOAT32,
       D_FLOAT64, D_BFLOAT16, SIM_NDTYPES };
enum { A_TREE = 0, A_RING, A_COLLNET_DIRECT, A_COLLNET_CHAIN, A_NVLS, A_NVLS_TREE, A_PAT,
       SIM_NALGOS };
enum { P_LL = 0, P_LL128, P_SIMPLE, SIM_NPROTOS };
extern const char *const sim_func_str[SIM_NFUNCS];
extern const char *const sim_dtype_str[SIM_NDTYPES];
extern const char *const sim_algo_str[SIM_NALGOS];
extern const char *const sim_proto_str[SIM_NPROTOS];

/* How a task's proxy ops behave. K_SYM: a symmetric-memory kernel (no proxy ops; NCCL 2.31 reports
 * it as a Coll with isSymColl and KernelCh, older NCCL only with its API events). */
enum { K_NORMAL = 0, K_NOSTOP = 1, K_HANG = 2, K_CE = 3, K_SYM = 4 };

typedef struct sim_cbq sim_cbq_t;

struct sim_comm {
  int rank, nranks, nnodes;
  int gbase, gstride;    /* global rank of comm rank k = gbase + gstride * k */
  uint64_t comm_id;
  char name[48];
  void *ctx;
  int init_failed;
  sim_proxy_t *proxy;
  sim_proxy_t *prof;     /* NCCL 2.31's profiler thread (ABI v7), shared like the proxy */
  _Atomic uint64_t seq[SIM_NFUNCS];
  uint32_t ce_seq;
  void *stream;
  sim_cbq_t *cbq;        /* CUDA host-callback thread of this rank's device, if any */
  _Atomic int inflight;  /* local proxy ops posted and not finished */
  int hung;              /* an aborted op left ops open */
  _Atomic int64_t couple_seq; /* coupled plans so far: the instance index all ranks agree on */
  uint64_t couple_key;   /* sim_cpl_key */
  /* KernelCh work counters per channel (docs/nccl-sim.md "KernelCh work counters"):
   * kch_host  comm->profiler.workCounter[ch], advanced by the host when it plans work;
   * kch_dev   the GPU's ncclDevChannel workCounter, advanced for every work item the GPU runs
   *           (assigned at issue: stream order);
   * kch_ring  the counter fields of workStarted/workCompleted[ch].data[64], written by the GPU
   *           for work items with KernelCh only (allocated on first use);
   * kch_capturing  comm->planner.persistent: a capturing group of this comm is being planned;
   * kch_final      set by sim_comm_drain: no more GPU work, a KernelCh still waiting is stuck. */
  _Atomic uint64_t kch_host[SIM_MAX_CHANNELS], kch_dev[SIM_MAX_CHANNELS];
  _Atomic(_Atomic uint64_t *) kch_ring[SIM_MAX_CHANNELS];
  /* what the item that last wrote each ring slot stamped: [4 * slot] its counter value,
   * [4 * slot + 1] start, [4 * slot + 2] stop pTimer (0: not yet), [4 * slot + 3] how far its
   * pTimers are shifted from the GPU's true times (--fault ktime); allocated on first use */
  _Atomic(_Atomic uint64_t *) kch_ts[SIM_MAX_CHANNELS];
  /* its stream: executions with KernelCh in GPU order (proxy.c) */
  _Atomic uint64_t st_issued, st_done, st_tail;
  _Atomic int kch_capturing, kch_final;
  _Atomic uint64_t done_vt; /* model time: when its latest op finished */
};
/* The ring slot of counter value v on channel ch: what the GPU last wrote there (0: nothing). */
uint64_t sim_kch_slot(sim_comm_t *c, int ch, uint64_t v);
uint64_t sim_kts_item(sim_comm_t *c, int ch, uint64_t v);
/* the timestamps the item of counter value v stamped into its slot (0 0: not there) */
void sim_kts_get(sim_comm_t *c, int ch, uint64_t v, uint64_t *start, uint64_t *stop, uint64_t *shift);
void sim_kts_put(sim_comm_t *c, int ch, uint64_t v, uint64_t start, uint64_t stop, uint64_t shift);

/* One user-level call: ncclAllReduce(comm, ...), ncclSend(...), ... */
typedef struct {
  sim_comm_t *comm;
  int func, dtype, algo, proto, nchannels, kind;
  size_t count;          /* user count */
  int root;              /* root, or the peer for Send/Recv */
  int fault;             /* SIM_FAULT_STALL: this call's sends freeze (fault.c) */
  int64_t opidx;         /* index among the rank's counted collectives (--fault SEQ), or -1 */
  uint64_t tag;          /* ncclCollConfig_t userProfilerTag (ABI v7), 0 untagged */
} sim_call_t;

typedef struct sim_graph sim_graph_t;

sim_comm_t *sim_comm_create(uint64_t comm_id, int rank, int nranks, int gbase, int gstride,
                            const char *name, sim_comm_t *share_proxy_with);
/* Waits until the proxy finished every op of this comm (ncclCommDestroy's wait). */
void sim_comm_drain(sim_comm_t *c);
/* Waits for the comm's ops, drops its proxy reference, finalizes its plugin context. */
void sim_comm_destroy(sim_comm_t *c, int abort);
/* ncclGroupStart ... calls ... ncclGroupEnd on the calling thread. depth: 1 implicit group,
 * 2 user group. With 'capture' the calls are captured into that graph instead of launched. */
void sim_group(const sim_call_t *calls, int n, int depth, sim_graph_t *capture, uint64_t *rng);
sim_graph_t *sim_graph_new(void);
void sim_graph_launch(sim_graph_t *g); /* one replay on the callback thread(s) */
void sim_graph_destroy(sim_graph_t *g); /* waits for its replays */
sim_cbq_t *sim_cbq_create(void);
void sim_cbq_drain(sim_cbq_t *q);
void sim_cbq_destroy(sim_cbq_t *q);
int sim_global_rank(const sim_comm_t *c, int k);
int sim_node_of(int grank);

/* ---------------------------------------------------------------- fault.c
 * Peer coupling: the ranks of a communicator share, per coupled collective instance (the n-th
 * eager kernel-collective plan of the communicator), a slot in MAP_SHARED memory made before
 * fork. A receive step gets its data only after the peer's matching send step finished; a send
 * step leaves SendPeerWait only after the peer posted the matching receive (clear-to-send); a
 * KernelCh stops, and the op completes, only when every rank entered and sent all its data. */
enum { SIM_MARK_SENT = 0, SIM_MARK_CTS = 1 };
int sim_couple_setup(void);     /* main, before fork; no-op when coupling is off */
sim_cpl_t *sim_cpl_enter(uint64_t key, int nranks, int64_t idx); /* NULL: uncoupled */
void sim_cpl_out(sim_cpl_t *c, uint64_t vt); /* this rank's data has all left (at model time vt) */
void sim_cpl_leave(sim_cpl_t *c, uint64_t vt); /* this rank no longer touches the instance
                                                   (its ops all finished at model time vt) */
int sim_cpl_entered_all(sim_cpl_t *c);
uint64_t sim_cpl_all_in_ns(sim_cpl_t *c); /* CLOCK_MONOTONIC when the last rank entered; 0 not yet */
uint64_t sim_cpl_ready_vt(sim_cpl_t *c);  /* model time: every rank entered and its data is out */
/* model time: when rank's step of lane got its mark (SENT: the send step stopped; CTS: the
 * receive step was posted); valid once sim_cpl_get > step */
uint64_t sim_cpl_mark_vt(sim_cpl_t *c, int which, int rank, int lane, int step);
int sim_cpl_ready(sim_cpl_t *c); /* every rank entered and its data is out */
/* this rank's kernel of the instance began on its GPU at host_ns (its stream let it) */
void sim_cpl_begun(sim_cpl_t *c, uint64_t host_ns);
/* CLOCK_MONOTONIC when the last rank's kernel began; 0 not yet */
uint64_t sim_cpl_all_begun_ns(sim_cpl_t *c);
uint64_t sim_cpl_ticks(sim_cpl_t *c); /* changes whenever any rank makes progress in it */
void sim_cpl_mark(sim_cpl_t *c, int which, int rank, int lane, int value); /* atomic max */
int sim_cpl_get(sim_cpl_t *c, int which, int rank, int lane);
int sim_cpl_lanes(void);
/* The coupling key of a new communicator: its id and how often this rank created that id before
 * (reload cycles create the same communicators again; every rank agrees on the count). */
uint64_t sim_cpl_key(uint64_t comm_id, int grank);
/* A dead peer (a process killed from outside, not by its kill fault) ends every process of the
 * job at once with SIM_EXIT_PEER_DIED. Each process starts a watcher after fork: a child with
 * kids NULL (it watches its parent), the parent with its children (processes first, first + 1,
 * ...); runs_ranks: the parent also runs ranks, so it ends itself once the others are gone. */
enum { SIM_EXIT_PEER_DIED = 6 };
void sim_cpl_watch(const pid_t *kids, int nkids, int first, int runs_ranks);
void sim_cpl_reaping(void);    /* the parent's main thread now waits for its children */
void sim_cpl_reaped(int proc, pid_t pid, int status); /* the parent reaped a child */
int sim_cpl_dead_report(void); /* the parent: 1 after saying which process died, else 0 */

/* Faults. Ranks are global ranks. */
int sim_fault_parse(const char *arg);            /* appends to sim_opt.faults; -1: message given */
int sim_fault_check_opts(const char *scenario);  /* -1: message given */
int sim_fault_setup(void);                       /* main, before fork */
int sim_fault_active(void);                      /* any --fault given */
int sim_fault_at(int grank, int64_t op);         /* the fault kind for this op of this rank, or 0 */
const char *sim_fault_name(int kind);
enum { SIM_RS_NONE = 0, SIM_RS_HUNG, SIM_RS_SKIPPED, SIM_RS_KILLED, SIM_RS_STALLED };
/* Records what happened to a rank at an op (for the final report). */
void sim_fault_note(int grank, int state, uint64_t comm_id, int func, int64_t op, uint64_t seqno);
void sim_fault_hung(const sim_inst_t *in);       /* this thread's op hung: note it, halt */
void sim_fault_idle(void);                       /* a skipping rank idles --hang-s, then halts */
int sim_fault_halted(void);                      /* this thread stopped issuing operations */
int sim_fault_aborting(void);                    /* this process aborts its communicators */
int sim_fault_proc_status(void);                 /* a child's exit status: 0, or 3 when it hung */
int sim_fault_report(const pid_t *pids, const int *status, int nprocs); /* parent: exit status */

/* ---------------------------------------------------------------- gpu.c (--cupti) */
int sim_gpu_load(void);
int sim_gpu_on(void);
uint32_t sim_gpu_launch(uint32_t graph, uint64_t *node); /* inside KernelLaunch: correlation id */
uint32_t sim_gpu_graph_new(void);
uint32_t sim_gpu_instantiate(uint32_t graph);
uint32_t sim_gpu_graph_launch(uint32_t exec, void *stream);
uint32_t sim_gpu_stream(const void *stream);
void sim_gpu_kernel_end(const sim_inst_t *in, int completed);
void sim_gpu_compute(int device, uint32_t graph, uint64_t *nodes, int n);
void sim_gpu_compute_replay(int device, uint32_t exec, uint32_t corr, uint32_t replay,
                            const uint64_t *nodes, int n);
void sim_gpu_other(void);
void sim_gpu_flood_kernel(uint32_t corr); /* flood --cold: the launched kernel ran (no truth line) */
void sim_gpu_set_device(int device); /* --cuda: the calling thread's current context */

/* ---------------------------------------------------------------- range.c (--ranges) */
int sim_range_load(void *plugin);
void sim_range_iteration(void (*body)(void *arg), void *arg, int device);
void sim_range_outer(int begin);
void sim_range_note_ops(int n, uint64_t bytes);
void sim_range_note_launch(uint32_t corr, int compute);

/* ---------------------------------------------------------------- scenarios.c / flood.c */
typedef struct {
  const char *name;
  const char *help;
  int (*run)(int proc);  /* runs in every process; returns 0 on success */
  int min_procs;
  int default_comms;
} sim_scenario_t;

int sim_replay_run(int proc);

const sim_scenario_t *sim_scenario_find(const char *name);
void sim_scenario_list(void);
int sim_flood_run(int proc);

#endif /* NCS_SIM_H */
