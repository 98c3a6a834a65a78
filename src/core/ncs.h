/* ncs.h - the plugin's internal state, handle encoding and hot-path helpers.
 *
 * Hot path rules (DESIGN.md): no locks, no allocation, O(1), never dereference a pointer NCCL
 * hands us unless it is provably ours. Handles are therefore not pointers at all: an event
 * handle is an encoded 64-bit value (tag, type, load epoch, id) and a context handle encodes
 * (tag, pid, epoch, comm index). Validation is a few compares; a stale, foreign or garbage
 * value can be told apart without touching memory.
 */
#ifndef NCS_CORE_H
#define NCS_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi/ncs_abi.h"
#include "trace/format.h"

_Static_assert(NCS_NTYPES == NCS_T_COUNT, "one internal type per NCCL event bit");
_Static_assert(NCS_NSTATES == NCS_STATE_COUNT, "a name for every NCCL state");

#define NCS_HIDDEN __attribute__((visibility("hidden")))
#define NCS_LIKELY(x) __builtin_expect(!!(x), 1)
#define NCS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- handles ---- */
#define NCS_EH_TAG 0xECull /* bits 63..56 of an event handle */
#define NCS_CH_TAG 0xC7ull /* bits 63..56 of a context handle */
#define NCS_ID_BITS 44
#define NCS_ID_MASK ((1ull << NCS_ID_BITS) - 1)

#define NCS_HKEY(epoch) ((uint32_t)(NCS_EH_TAG << 12) | ((epoch) & 0xFF))
static inline uint64_t ncs_eh_make(unsigned type, unsigned epoch, uint64_t id) {
  return (NCS_EH_TAG << 56) | ((uint64_t)(type & 0xF) << 52) | ((uint64_t)(epoch & 0xFF) << 44) |
         (id & NCS_ID_MASK);
}
static inline int ncs_eh_is_ours(uint64_t h) { return (h >> 56) == NCS_EH_TAG && ((h >> 52) & 0xF) < NCS_T_COUNT; }
static inline unsigned ncs_eh_type(uint64_t h) { return (unsigned)((h >> 52) & 0xF); }
static inline unsigned ncs_eh_epoch(uint64_t h) { return (unsigned)((h >> 44) & 0xFF); }
static inline uint64_t ncs_eh_id(uint64_t h) { return h & NCS_ID_MASK; }

static inline uint64_t ncs_ch_make(pid_t pid, unsigned epoch, uint32_t index) {
  return (NCS_CH_TAG << 56) | ((uint64_t)((uint32_t)pid & 0xFFFFFF) << 32) |
         ((uint64_t)(epoch & 0xFF) << 24) | (index & 0xFFFFFF);
}

/* ---- configuration (read once at setup from NCCLSCOPE_* variables; see docs/config.md) ---- */
/* the live metrics' outputs (NCCLSCOPE_METRICS, ncs_config_t.metrics): here, not in metrics/metrics.h,
 * so that core reads its configuration without including the metrics above it */
enum { NCS_MX_HTTP = 1, NCS_MX_TEXTFILE = 2, NCS_MX_OTLP = 4 };

typedef struct {
  char dir[1024];
  uint32_t events;       /* NCCL event bits to record */
  uint64_t pool_bytes;   /* buffer pool */
  uint32_t max_threads;  /* producer thread slots */
  uint32_t max_comms;
  uint32_t expire_ms;    /* events open longer than this are expired */
  uint32_t flush_ms;     /* longest time records wait in memory before reaching the file */
  uint32_t track_max;    /* open events the writer tracks for completions (power of 2) */
  int use_tsc;
  int sim_clock;         /* NCCLSCOPE_CLOCK=sim: time from nccl-sim's model (ncs_clock_sim) */
  int disabled;
  int mode;    /* NCS_MODE_TRACE or NCS_MODE_CAPTURE */
  int capture; /* NCCLSCOPE_CAPTURE: record every call NCCL makes, for replay */
  int flight;  /* NCCLSCOPE_MODE=flight */
  uint64_t flight_bytes; /* NCCLSCOPE_FLIGHT_SIZE: the ring */
  uint32_t flight_ops;   /* NCCLSCOPE_FLIGHT_OPS: operations kept per communicator */
  uint32_t watchdog_s;   /* NCCLSCOPE_WATCHDOG_S: 0 = off */
  int dump_signal;       /* NCCLSCOPE_DUMP_SIGNAL: 0 = none */
  uint32_t kernel_sample; /* NCCLSCOPE_SAMPLE (or _KERNEL_SAMPLE): 1 group in N in full (1 = all) */
  uint32_t unsampled_events; /* NCCLSCOPE_UNSAMPLED_EVENTS: what the other groups still record */
  int cupti;                 /* NCCLSCOPE_CUPTI=on: kernel times from CUPTI (docs/gpu-truth.md) */
  char cupti_lib[512];       /* NCCLSCOPE_CUPTI_LIB: the libcupti to load ("" search) */
  uint64_t cupti_buffer_bytes; /* NCCLSCOPE_CUPTI_BUFFER_SIZE: CUPTI's activity buffers */
  int cupti_summary;         /* NCCLSCOPE_CUPTI_KERNELS=nccl: other kernels summarized per stream */
  int ranges;                /* NCCLSCOPE_RANGES (default on): user ranges (docs/ranges.md) */
  char range_metrics[1024];  /* NCCLSCOPE_RANGE_METRICS: hardware metrics per range ("" off) */
  int range_replay;          /* NCCLSCOPE_RANGE_REPLAY: NCS_REPLAY_NONE or _USER */
  uint32_t range_metrics_level; /* NCCLSCOPE_RANGE_METRICS_LEVEL: the nesting level that gets metrics */
  uint32_t range_metrics_ranges;/* NCCLSCOPE_RANGE_METRICS_RANGES: ranges per counter buffer */
  /* live metrics (docs/metrics.md) */
  uint32_t metrics;          /* NCCLSCOPE_METRICS: NCS_MX_* outputs, 0 = off */
  char mx_addr[64];          /* NCCLSCOPE_METRICS_ADDR: numeric address to listen on */
  uint32_t mx_port;          /* NCCLSCOPE_METRICS_PORT: base port (0: any free port) */
  int32_t mx_port_offset;    /* NCCLSCOPE_METRICS_PORT_OFFSET: -1 = auto (the local rank) */
  uint32_t mx_interval_ms;   /* NCCLSCOPE_METRICS_INTERVAL_MS */
  char mx_dir[1024];         /* NCCLSCOPE_METRICS_DIR: textfiles and endpoint files */
  uint32_t mx_max_comms, mx_max_series, mx_max_conns;
  char otlp_endpoint[512];   /* OTEL_EXPORTER_OTLP_(METRICS_)ENDPOINT */
  char otlp_headers[1024];   /* OTEL_EXPORTER_OTLP_(METRICS_)HEADERS */
  uint32_t otlp_timeout_ms;  /* OTEL_EXPORTER_OTLP_(METRICS_)TIMEOUT */
  char chain[1024];          /* NCCLSCOPE_CHAIN: a second profiler plugin to forward to ("" none) */
  uint32_t chain_slots;      /* NCCLSCOPE_CHAIN_SLOTS: the chain's handle table (power of 2) */
  char errors[1024]; /* configuration problems, logged through NCCL's logger at init */
} ncs_config_t;

NCS_HIDDEN void ncs_config_load(ncs_config_t *c);

/* ---- clock ---- */
static inline uint64_t ncs_tsc(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}
NCS_HIDDEN uint64_t ncs_mono_ns(void);
NCS_HIDDEN uint64_t ncs_realtime_ns(void);
NCS_HIDDEN int ncs_tsc_usable(void);
/* NCCLSCOPE_CLOCK=sim: every host time the plugin takes (events, the writer, flight, metrics)
 * comes from nccl-sim's model clock (`nccl-sim --clock model`, docs/nccl-sim.md "Model time")
 * instead of CLOCK_MONOTONIC/CLOCK_REALTIME, so a test's trace has exactly the times the model
 * gives. 0 when the process has that clock, -1 (system clocks kept) when it has not. */
NCS_HIDDEN int ncs_clock_sim(void);

/* ---- buffer pool: fixed-size blocks shared by all threads, chained per thread ----
 *
 * A record is published by its header word: the producer writes the record's other words and a
 * zero terminator in the word after it, then stores the header (w[0], never 0) with release. The
 * writer reads a header with acquire: 0 means nothing more in this block yet. So an event costs
 * no store outside the lines its own record covers (no shared "committed" counter), and on x86
 * the release store is a plain move. A block's last word is kept for the terminator. */
#define NCS_BLOCK_BYTES (64u * 1024u)

typedef struct ncs_block {
  uint32_t cap;               /* words */
  uint32_t index;             /* position in the pool */
  uint32_t next_free;         /* free-stack link (index + 1, 0 = none) */
  uint32_t pad0_;
  _Atomic(struct ncs_block *) next; /* set by the producer when it moves on: this block is final */
  uint64_t pad_[5];           /* the header fills one cache line; records start on the next */
  uint64_t words[];           /* header words are read and written with __atomic builtins */
} ncs_block_t;

enum { NCS_SLOT_FREE = 0, NCS_SLOT_ACTIVE = 1, NCS_SLOT_EXITED = 2 };

/* One per producer thread: what the writer and the counters need. The producer's own position
 * lives in its thread-local ncs_tls_t, so the event path touches no shared line; the writer
 * owns the second cache line here, the rare-path counters the third. */
typedef struct {
  _Alignas(64) _Atomic int state;
  uint32_t thread_index; /* per load; assigned at claim */
  pid_t tid;
  _Atomic(ncs_block_t *) first; /* the first block, published for the writer */
  /* writer side */
  _Alignas(64) ncs_block_t *rd;
  uint32_t rdpos;
  uint32_t announced; /* thread index the writer has written a THREAD chunk for, +1 */
  /* rare-path counters, written by the producer only (relaxed) */
  _Alignas(64) _Atomic uint64_t drops[NCS_T_COUNT];
  _Atomic uint64_t bad_handle, stale_handle, null_handle, disabled, unknown_type, unknown_state;
  _Atomic uint64_t groups, groups_unsampled; /* group sampling: GroupApi starts, unsampled ones */
  _Atomic uint64_t range_drops, range_ignored; /* range records dropped (pool full); NVTX calls of
                                                  ignored domains (range/range.c) */
} ncs_slot_t;

/* A producer thread's private state (initial-exec TLS: one %fs-relative access). */
typedef struct {
  uint64_t *w;          /* where the next record goes */
  uint64_t *end;        /* a record of n words fits when n <= end - w (w[n] stays in the block) */
  ncs_block_t *blk;     /* the block w is in; NULL before the first */
  uint64_t next_id, id_end; /* event ids handed out in batches from ncs_g.id_counter */
  ncs_slot_t *slot;     /* NULL until claimed */
} ncs_tls_t;

/* ---- communicators ---- */
enum { NCS_COMM_FREE = 0, NCS_COMM_LIVE = 1, NCS_COMM_DONE = 2 };
typedef struct {
  _Atomic int state;
  _Atomic int published; /* the writer wrote its COMM chunk (1) and COMM_END (2) */
  uint64_t comm_id;
  char name[256];
  int nranks, nnodes, rank;
  int abi;
  uint64_t init_tsc, fini_tsc;
  uint32_t mask;
  int device;     /* CUDA device current at init, -1 unknown */
  char bus_id[32];
} ncs_comm_t;

/* ---- raw records in the blocks (8-byte words) ----
 * w0: kind | type << 8 | nwords << 16 | flags << 24 | aux << 32
 * w1: tsc, w2: id
 * START: w3 ctx raw, w4 parent raw, w5.. one word per schema field (strings as pointers,
 *        REF fields as raw pointers); NetPlugin START carries the decoded net descriptor.
 * STATE: aux = state, w3 arg0, w4 arg1.   STOP: 3 words. */
#define NCS_REC_HDR(kind, type, nw, flags, aux)                                                   \
  ((uint64_t)(kind) | ((uint64_t)(type) << 8) | ((uint64_t)(nw) << 16) |                         \
   ((uint64_t)(flags) << 24) | ((uint64_t)(uint32_t)(aux) << 32))
#define NCS_START_WORDS 5
#define NCS_MAX_REC_WORDS (NCS_START_WORDS + NCS_MAX_FIELDS)

/* ---- global state ---- */
typedef struct {
  /* read on every event: one cache line, written only at setup and segment changes */
  _Alignas(64) _Atomic uint32_t enabled; /* event bits we record */
  _Atomic uint32_t hkey;  /* (NCS_EH_TAG << 12) | epoch: bits 63..44 of a valid handle, type masked */
  /* the fast paths (plugin.c, "Event path"): START of a type in `hot` and STOP/STATE of a handle
   * whose bits 63..44 (type masked) equal `hkey_hot` need nothing but a record. Both are off
   * (0, ~0) while group sampling or set-up need the slow path's checks. */
  _Atomic uint32_t hot;
  _Atomic uint32_t cold; /* START types answered at once with a NULL handle: not recorded */
  _Atomic uint32_t hkey_hot;
  _Atomic uint64_t hbase; /* NCS_EH_TAG and epoch in place: a handle is hbase | type << 52 | id */
  _Atomic int ready;      /* pool and tables exist */
  int use_tsc;
  _Atomic uint32_t kernel_sample; /* cfg.kernel_sample (1 once sampling stopped), read by every START */
  /* group sampling, ABI v5+ (plugin.c, "Sampling"): set at init, under the lock */
  _Atomic int sampling;        /* on for this load */
  _Atomic uint32_t mask_full;  /* the mask of a sampled group: every requested event */
  _Atomic uint32_t mask_hook;  /* the mask of the others: GroupApi, P2pApi + unsampled events */
  _Atomic uint32_t unsampled;  /* event bits recorded in unsampled groups */
  _Atomic int sample_hold_hook; /* sampling ended at an unsampled CUDA graph capture: hook mask */
  uint64_t id_base; /* first id of this load: random, so a stale handle's id is out of range */
  _Atomic uint32_t epoch;
  pid_t pid;

  /* written once per ~4096 starts per thread */
  _Alignas(64) _Atomic uint64_t id_counter;

  /* written once per block by producers and the writer */
  _Alignas(64) _Atomic uint64_t free_head; /* (tag << 32) | (index + 1) */
  _Atomic uint32_t blocks_in_use, blocks_peak;
  _Atomic uint32_t blocks_fresh; /* blocks below this index have been handed out at least once */

  _Alignas(64) pthread_mutex_t lock; /* setup, init and finalize only: never on the event path */
  ncs_config_t cfg;
  _Atomic uint32_t seg; /* segment counter within this load */
  uint32_t mask_set;    /* the activation mask we hand NCCL */
  _Atomic(int *) mask_ptr; /* NCCL's process-wide activation mask int (KernelCh sampling) */

  uint8_t *pool;
  size_t pool_len;
  uint32_t nblocks;

  ncs_slot_t *slots;
  uint32_t nslots;
  _Atomic uint32_t next_thread_index;
  pthread_key_t tls_key;
  int tls_key_ok;

  ncs_comm_t *comms;
  _Atomic uint32_t ncomms; /* indexes handed out this segment */
  _Atomic int live_comms;

  /* counters not owned by a slot (rare paths) */
  _Atomic uint64_t no_slot_drops, no_slot_by_type[NCS_T_COUNT];
  _Atomic uint64_t comms_untracked; /* inits beyond NCCLSCOPE_MAX_COMMS (NCS_CK_COMMS_UNTRACKED) */

  /* NCCLSCOPE_CHAIN (plugin/chain.c): set once per load, before the first event, under the lock.
   * While it is on the fast paths stay off, so every call reaches the cold paths that forward. */
  _Atomic int chain_on;

  /* writer */
  int writer_running;
  pthread_t writer;
  _Atomic int writer_stop;
} ncs_global_t;

extern NCS_HIDDEN ncs_global_t ncs_g;

static inline void ncs_set_epoch(uint32_t e) {
  atomic_store(&ncs_g.epoch, e & 0xFF);
  atomic_store(&ncs_g.hkey, NCS_HKEY(e));
  atomic_store(&ncs_g.hbase, ncs_eh_make(0, e, 0));
  if (atomic_load(&ncs_g.hkey_hot) != ~0u) atomic_store(&ncs_g.hkey_hot, NCS_HKEY(e));
}

/* Turn the fast paths on (for the START types in `types`, except those in `slow`, which always
 * take the slow path: KernelLaunch while CUPTI is active) or off: after set-up, at init, and
 * when group sampling starts or stops needing the slow path (plugin.c, "Event path"). */
static inline void ncs_hot_set(int on, uint32_t types, uint32_t slow) {
  on = on && !atomic_load(&ncs_g.chain_on); /* the chain forwards from the slow paths only */
  atomic_store(&ncs_g.hot, on ? types & ~slow : 0);
  atomic_store(&ncs_g.cold, on ? ~(types | slow) & ((1u << NCS_T_COUNT) - 1) : 0);
  atomic_store(&ncs_g.hkey_hot, on ? atomic_load(&ncs_g.hkey) : ~0u);
}

/* pool.c */
NCS_HIDDEN int ncs_pool_setup(void);
NCS_HIDDEN void ncs_pool_teardown(void);
NCS_HIDDEN void ncs_pool_reset_after_fork(void);
NCS_HIDDEN ncs_slot_t *ncs_slot_claim(void);
NCS_HIDDEN ncs_block_t *ncs_block_pop(void);
NCS_HIDDEN void ncs_block_push(ncs_block_t *b);
NCS_HIDDEN uint64_t *ncs_slot_advance(ncs_tls_t *T, uint32_t nwords);
NCS_HIDDEN void ncs_refill_ids(ncs_tls_t *T);
/* Maps the pages of [p, p + len) writable now (MADV_POPULATE_WRITE, Linux 5.14+) without touching
 * their contents, so that threads writing there later take no page fault; pages already mapped
 * are left alone. Safe while other threads write in the range. Returns 0, or -1 where the kernel
 * cannot (nothing is done then). */
NCS_HIDDEN int ncs_prefault(void *p, size_t len);
/* The writer thread, as it starts: ncs_prefault on the blocks the threads take first (the free
 * stack hands out block 0, 1, ... and takes drained ones back on top, so these are the blocks a
 * steady job keeps reusing): NCS_PREFAULT_BLOCKS at most. Returns the bytes prefaulted. */
#define NCS_PREFAULT_BLOCKS 64u /* 4 MiB */
NCS_HIDDEN size_t ncs_pool_prefault(void);

extern NCS_HIDDEN __attribute__((tls_model("initial-exec"))) _Thread_local ncs_tls_t ncs_t;

/* The calling thread's slot, claimed on first use; NULL when none is left (or not set up). */
static inline ncs_slot_t *ncs_slot(void) {
  ncs_slot_t *s = ncs_t.slot;
  if (NCS_UNLIKELY(!s)) s = ncs_slot_claim();
  return s;
}

static inline uint64_t ncs_new_id(ncs_tls_t *T) {
  if (NCS_UNLIKELY(T->next_id >= T->id_end)) ncs_refill_ids(T);
  return T->next_id++;
}

/* Space for nwords (and the terminator after them) in the thread's block; NULL when the pool is
 * exhausted. */
static inline uint64_t *ncs_reserve(ncs_tls_t *T, uint32_t nwords) {
  if (NCS_LIKELY(nwords <= (size_t)(T->end - T->w))) return T->w;
  return ncs_slot_advance(T, nwords);
}

/* Publish the record of nwords at T->w whose header is hdr: terminator first, header last. */
static inline void ncs_publish(ncs_tls_t *T, uint32_t nwords, uint64_t hdr) {
  uint64_t *w = T->w;
  __atomic_store_n(&w[nwords], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&w[0], hdr, __ATOMIC_RELEASE);
  T->w = w + nwords;
}

static inline void ncs_count(_Atomic uint64_t *c) {
  /* single writer: a relaxed load + store is enough and avoids a locked instruction */
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Linear-probing deletion without tombstones (the writer's and the flight recorder's tables):
 * after emptying slot `hole`, the entry at `j` whose home slot is `home` moves into the hole when
 * its home is not cyclically in (hole, j]. */
static inline int ncs_probe_moves(uint32_t hole, uint32_t j, uint32_t home) {
  return (j > hole && (home <= hole || home > j)) || (j < hole && home <= hole && home > j);
}

/* plugin.c: the plugin's set-up (configuration, buffer pool) outside NCCL's init, for a range
 * call that comes first; 0 when the plugin is ready */
NCS_HIDDEN int ncs_setup(void);

/* writer.c */
NCS_HIDDEN int ncs_writer_start(void);
NCS_HIDDEN void ncs_writer_stop(void);

/* log through NCCL's logger when we have one */
NCS_HIDDEN void ncs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern NCS_HIDDEN _Atomic(ncs_logger_t) ncs_logfn;

#endif
