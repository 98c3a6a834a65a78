/* plugin.c - the exported ncclProfiler_v1 .. v7 objects and the lifecycle around them.
 *
 * Each ABI version has thin entry points that translate its descriptor into one raw record
 * (core/ncs.h describes the words). Everything here runs on NCCL's threads: no locks on the
 * event path, no allocation, and *eHandle is always written.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/ncs.h"
#include "plugin/chain.h"
#include "gpu/gpu.h"
#include "metrics/metrics.h"
#include "range/range.h"
#include "record/flight.h"

ncs_global_t ncs_g = {.lock = PTHREAD_MUTEX_INITIALIZER, .hkey_hot = ~0u};
_Atomic(ncs_logger_t) ncs_logfn;

#define EXPORT __attribute__((visibility("default")))

void ncs_log(int level, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ncs_logger_t fn = atomic_load_explicit(&ncs_logfn, memory_order_relaxed);
  /* NCCL prints a message only when its subsystem is in NCCL_DEBUG_SUBSYS, whose default is
   * INIT,BOOTSTRAP,ENV: warnings also carry INIT so that NCCL_DEBUG=WARN shows them */
  unsigned long subsys = NCS_LOG_SUBSYS_PROFILE | (level <= NCS_LOG_WARN ? NCS_LOG_SUBSYS_INIT : 0);
  if (fn)
    fn(level, subsys, __FILE__, __LINE__, "ncclscope: %s", msg);
  else if (level <= NCS_LOG_WARN)
    fprintf(stderr, "ncclscope: %s\n", msg);
}

static inline int is_ready(void) { return atomic_load_explicit(&ncs_g.ready, memory_order_relaxed); }

static inline uint64_t now(void) {
  return NCS_LIKELY(ncs_g.use_tsc) ? ncs_tsc() : ncs_mono_ns();
}

/* ------------------------------------------------------------------ lifecycle */

static void after_fork_child(void) {
  /* The writer thread does not exist in the child and the file belongs to the parent.
   * Start over: the child's first communicator opens its own file. */
  ncs_g.writer_running = 0;
  atomic_store(&ncs_g.live_comms, 0);
  pthread_mutex_init(&ncs_g.lock, NULL);
  ncs_g.pid = getpid();
  if (ncs_g.ready) ncs_pool_reset_after_fork();
  ncs_gpu_after_fork();
  ncs_mx_after_fork(); /* the metrics thread and server are the parent's */
  ncs_hwm_after_fork(); /* the range metrics' CUPTI session is the parent's */
}

static int setup_locked(void) {
  if (ncs_g.ready) return 0;
  ncs_config_load(&ncs_g.cfg);
  if (ncs_g.cfg.errors[0]) ncs_log(NCS_LOG_WARN, "configuration: %s", ncs_g.cfg.errors);
  if (ncs_g.cfg.disabled) {
    static int said; /* once per load: init asks again for every communicator */
    if (!said++)
      ncs_log(NCS_LOG_INFO, "NCCLSCOPE_DISABLE=%s: the plugin is off; nothing is recorded",
              getenv("NCCLSCOPE_DISABLE") ? getenv("NCCLSCOPE_DISABLE") : "");
    return -1;
  }
  ncs_g.pid = getpid();
  uint64_t t = ncs_mono_ns();
  ncs_set_epoch((uint32_t)((t ^ (t >> 17) ^ (uint64_t)ncs_g.pid) & 0xFF));
  ncs_g.use_tsc = ncs_g.cfg.use_tsc;
  /* after t: the epoch and id base need the real clock, which differs between loads */
  if (ncs_g.cfg.sim_clock && ncs_clock_sim() != 0)
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CLOCK=sim: this process has no simulator clock "
                          "(ncclsim_clock_ns); using CLOCK_MONOTONIC");
  atomic_store(&ncs_g.kernel_sample, ncs_g.cfg.kernel_sample); /* 1 in capture mode */
  /* ids of this load start at a random point: a handle of an earlier load whose 8-bit epoch
   * happens to match is still rejected, because its id is outside [id_base, counter) */
  ncs_g.id_base = ((t * 0x9E3779B97F4A7C15ull) >> 24) & (NCS_ID_MASK >> 2);
  if (!ncs_g.id_base) ncs_g.id_base = 1;
  atomic_store(&ncs_g.id_counter, ncs_g.id_base);
  if (ncs_pool_setup() != 0) {
    ncs_log(NCS_LOG_WARN, "cannot map a %llu-byte buffer pool; profiling disabled",
            (unsigned long long)ncs_g.cfg.pool_bytes);
    return -1;
  }
  size_t clen = sizeof(ncs_comm_t) * ncs_g.cfg.max_comms;
  ncs_g.comms = calloc(1, clen);
  if (!ncs_g.comms) {
    ncs_pool_teardown();
    return -1;
  }
  /* capture records every call NCCL makes, whatever NCCLSCOPE_EVENTS asked NCCL for */
  atomic_store(&ncs_g.enabled, ncs_g.cfg.capture ? NCS_EV_ALL : ncs_g.cfg.events);
  /* flight mode: a signal asks for a dump (the handler only sets a flag; docs/flight.md) */
  if (ncs_g.cfg.flight && ncs_g.cfg.dump_signal) ncs_fl_signal_install(ncs_g.cfg.dump_signal);
  static int atfork_done; /* per load: glibc drops the handler again at dlclose */
  if (!atfork_done) pthread_atfork(NULL, NULL, after_fork_child);
  atfork_done = 1;
  ncs_range_setup();
  ncs_g.ready = 1;
  return 0;
}

int ncs_setup(void) {
  pthread_mutex_lock(&ncs_g.lock);
  int rc = setup_locked();
  pthread_mutex_unlock(&ncs_g.lock);
  return rc;
}

static uint32_t abi_mask(int abi) {
  switch (abi) {
  case 1:
  case 2: return NCS_EV_ALL_V1;
  case 3:
  case 4: return NCS_EV_ALL_V3;
  case 5: return NCS_EV_ALL_V5;
  case 6: return NCS_EV_ALL_V6;
  default: return NCS_EV_ALL;
  }
}

/* The GPU of the communicator being created: NCCL calls init with its device current. The
 * driver is already loaded (the CUDA runtime loads it privately, so it is not in the global
 * scope); RTLD_NOLOAD finds it without loading anything. The plugin does not link CUDA. */
typedef int (*cu_get_device_fn)(int *dev);
typedef int (*cu_bus_id_fn)(char *bus, int len, int dev);

static void current_gpu(int *dev, char *bus, size_t len) {
  *dev = -1;
  bus[0] = 0;
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!cuda) return; /* no CUDA driver in this process (nccl-sim, tests) */
  cu_get_device_fn get = (cu_get_device_fn)dlsym(cuda, "cuCtxGetDevice");
  cu_bus_id_fn bus_of = (cu_bus_id_fn)dlsym(cuda, "cuDeviceGetPCIBusId");
  int d = -1;
  if (get && get(&d) == 0 && d >= 0) {
    *dev = d;
    if (!bus_of || bus_of(bus, (int)len, d) != 0) bus[0] = 0;
  }
  dlclose(cuda); /* drops only the reference RTLD_NOLOAD took */
}

/* ncclscope's own init (the chain calls it too). Never fails: a communicator we cannot track gets
 * a NULL context. */
ncs_result_t ncs_init_rec(void **context, uint64_t comm_id, int *mask, const char *name,
                          int nnodes, int nranks, int rank, ncs_logger_t logfn, int abi) {
  if (context) *context = NULL;
  if (logfn) atomic_store_explicit(&ncs_logfn, logfn, memory_order_relaxed);
  if (!context) return NCS_SUCCESS;
  pthread_mutex_lock(&ncs_g.lock);
  if (setup_locked() != 0) {
    pthread_mutex_unlock(&ncs_g.lock);
    return NCS_SUCCESS;
  }
  if (!ncs_g.writer_running) { /* CUPTI and metrics, when asked for: before the segment says so */
    ncs_gpu_setup();
    ncs_hwm_setup();
  }
  if (!ncs_g.writer_running && ncs_writer_start() != 0) {
    pthread_mutex_unlock(&ncs_g.lock);
    return NCS_SUCCESS; /* the writer logged why (e.g. the directory is not writable) */
  }
  uint32_t m = ncs_g.cfg.events & abi_mask(abi);
  /* group sampling (ABI v5+, "Sampling" below): the mask of an unsampled group keeps GroupApi
   * (whose stop picks the next group's mask), P2pApi (sampling stops at the first send/recv) and
   * what NCCLSCOPE_UNSAMPLED_EVENTS asks for */
  uint32_t hook = (NCS_EV_GROUP_API | NCS_EV_P2P_API | (ncs_g.cfg.unsampled_events & m)) & abi_mask(abi);
  /* KernelPhase is GPU time like KernelCh, and never in the hook: NCCL 2.31 turns KernelCh on at
   * every communicator init whose mask has KernelPhase without it (which would undo an unsampled
   * capture's hold, "Sampling" below) */
  hook &= ~(uint32_t)(NCS_EV_KERNEL_CH | NCS_EV_KERNEL_PHASE);
  /* what this init hands NCCL in its one process-wide int (every init writes it, under our lock;
   * the last one wins): the full mask, but after sampling ended at an unsampled CUDA graph
   * capture KernelCh must never come back, so the hook */
  int init_mask = (int)(atomic_load(&ncs_g.sampling) && atomic_load(&ncs_g.sample_hold_hook) ? hook : m);
  uint32_t idx = atomic_load(&ncs_g.ncomms);
  if (idx >= ncs_g.cfg.max_comms) {
    uint64_t n = atomic_fetch_add(&ncs_g.comms_untracked, 1) + 1;
    ncs_log(NCS_LOG_WARN, "more than NCCLSCOPE_MAX_COMMS=%u communicators; not tracking this one (%llu "
            "so far): its events are recorded without their communicator, and every ncclscope output "
            "says how many were left out", ncs_g.cfg.max_comms, (unsigned long long)n);
    if (mask) __atomic_store_n(mask, init_mask, __ATOMIC_RELAXED); /* NCCL reads it atomically */
    pthread_mutex_unlock(&ncs_g.lock);
    return NCS_SUCCESS;
  }
  ncs_comm_t *c = &ncs_g.comms[idx];
  memset(c, 0, sizeof *c);
  c->comm_id = comm_id;
  snprintf(c->name, sizeof c->name, "%s", name ? name : "");
  c->nranks = nranks;
  c->nnodes = nnodes;
  c->rank = rank;
  c->abi = abi;
  c->init_tsc = now();
  c->mask = m;
  current_gpu(&c->device, c->bus_id, sizeof c->bus_id);
  atomic_store(&c->state, NCS_COMM_LIVE);
  atomic_store(&ncs_g.ncomms, idx + 1);
  atomic_fetch_add(&ncs_g.live_comms, 1);
  ncs_g.mask_set = m;
  atomic_store(&ncs_g.mask_full, m);
  atomic_store(&ncs_g.mask_hook, hook);
  atomic_store(&ncs_g.unsampled, ncs_g.cfg.unsampled_events & m);
  if (abi < 5 && atomic_load(&ncs_g.kernel_sample) > 1) {
    /* no GroupApi, so no hook before an operation copies the mask: toggling KernelCh per plan
     * (as the Group event could) desynchronizes NCCL's KernelCh counters under CUDA graphs, and
     * ABI v4 says nothing of graphs (docs/config.md, "Sampling") */
    ncs_log(NCS_LOG_WARN, "sampling (NCCLSCOPE_SAMPLE=%u) needs NCCL 2.28 or later (profiler ABI v5); "
                          "recording every operation", atomic_load(&ncs_g.kernel_sample));
    atomic_store(&ncs_g.kernel_sample, 1);
  }
  /* on for the load as configured: once sampling has stopped (kernel_sample 1), a GroupApi stop
   * still writes the mask it stopped with (full, or the hook for good after an unsampled capture) */
  atomic_store(&ncs_g.sampling, abi >= 5 && ncs_g.cfg.kernel_sample > 1 && hook != m &&
                                    (m & ~(uint32_t)NCS_EV_PROXY_CTRL) != 0);
  /* the fast paths read the TSC (NCCLSCOPE_CLOCK=monotonic, or a host without an invariant TSC,
   * takes the slow paths) and are off while group sampling needs the slow path's steps */
  ncs_hot_set(ncs_g.use_tsc && !atomic_load(&ncs_g.sampling) && atomic_load(&ncs_g.kernel_sample) <= 1,
              atomic_load(&ncs_g.enabled), atomic_load(&ncs_gpu_on) ? NCS_EV_KERNEL_LAUNCH : 0);
  if (mask) atomic_store_explicit(&ncs_g.mask_ptr, mask, memory_order_release);
  *context = (void *)(uintptr_t)ncs_ch_make(ncs_g.pid, atomic_load(&ncs_g.epoch), idx);
  if (mask) __atomic_store_n(mask, init_mask, __ATOMIC_RELAXED); /* NCCL reads it atomically */
  pthread_mutex_unlock(&ncs_g.lock);
  return NCS_SUCCESS;
}

/* Shared by every version: with NCCLSCOPE_CHAIN set, the first init loads the chained plugin and
 * every init goes through the chain (plugin/chain.c). */
static ncs_result_t do_init(void **context, uint64_t comm_id, int *mask, const char *name,
                            int nnodes, int nranks, int rank, ncs_logger_t logfn, int abi) {
  if (context) *context = NULL;
  if (logfn) atomic_store_explicit(&ncs_logfn, logfn, memory_order_relaxed);
  if (!context) return NCS_SUCCESS;
  pthread_mutex_lock(&ncs_g.lock);
  int chained = 0;
  if (setup_locked() == 0 && ncs_g.cfg.chain[0]) chained = ncs_chain_load_locked(abi);
  pthread_mutex_unlock(&ncs_g.lock);
  if (chained) return ncs_chain_init(context, comm_id, mask, name, nnodes, nranks, rank, logfn, abi);
  return ncs_init_rec(context, comm_id, mask, name, nnodes, nranks, rank, logfn, abi);
}

/* Returns the comm index of one of our live contexts of this load, or -1. */
static int ctx_index(void *context) {
  uint64_t v = (uint64_t)(uintptr_t)context;
  if ((v >> 56) != NCS_CH_TAG) return -1;
  if (((v >> 32) & 0xFFFFFF) != ((uint32_t)ncs_g.pid & 0xFFFFFF)) return -1;
  if (((v >> 24) & 0xFF) != (atomic_load_explicit(&ncs_g.epoch, memory_order_relaxed) & 0xFF))
    return -1;
  uint32_t idx = v & 0xFFFFFF;
  if (idx >= atomic_load(&ncs_g.ncomms)) return -1;
  return (int)idx;
}

ncs_result_t ncs_finalize_rec(void *context) {
  pthread_mutex_lock(&ncs_g.lock);
  int idx = ncs_g.ready ? ctx_index(context) : -1;
  if (idx >= 0) {
    ncs_comm_t *c = &ncs_g.comms[idx];
    /* only finalize moves LIVE -> DONE, under the lock; fini_tsc is written before the state
     * the writer reads it by */
    if (atomic_load(&c->state) == NCS_COMM_LIVE) {
      c->fini_tsc = now();
      atomic_store(&c->state, NCS_COMM_DONE);
      /* Last communicator: NCCL may dlclose us right after this returns, so the writer is
       * joined and the file completed now. */
      if (atomic_fetch_sub(&ncs_g.live_comms, 1) == 1 && ncs_g.writer_running) ncs_writer_stop();
    }
  }
  pthread_mutex_unlock(&ncs_g.lock);
  return NCS_SUCCESS;
}

static ncs_result_t do_finalize(void *context) {
  if (atomic_load_explicit(&ncs_g.chain_on, memory_order_relaxed)) return ncs_chain_finalize(context);
  return ncs_finalize_rec(context);
}

__attribute__((destructor)) static void ncs_unload(void) {
  /* dlclose, or process exit with communicators still alive (common: many programs never
   * destroy their communicators). Either way the trace is completed. */
  pthread_mutex_lock(&ncs_g.lock);
  if (ncs_g.writer_running) {
    atomic_store(&ncs_mx_exiting, 1);
    ncs_writer_stop();
  }
  int live = atomic_load(&ncs_g.live_comms);
  if (ncs_g.ready && live == 0) {
    /* dlclose after the last finalize: no NCCL thread will call us again, and our signal
     * handler must not outlive the code it points to */
    ncs_hot_set(0, 0, 0);
    ncs_fl_signal_remove();
    ncs_chain_unload(); /* every communicator of the chained plugin was finalized too */
    ncs_range_free();
    free(ncs_g.comms);
    ncs_g.comms = NULL;
    /* Once a range call came, the application's threads call in too, whatever NCCL does, and
     * at process exit they may still run while this destructor does: their buffer blocks then
     * stay mapped until the process is gone (nothing reads them any more). */
    if (!atomic_load(&ncs_range_used)) {
      ncs_pool_teardown();
      ncs_g.ready = 0;
    }
  }
  /* With live communicators this is process exit: other threads may still be inside NCCL,
   * so the memory stays mapped until the process is gone. */
  pthread_mutex_unlock(&ncs_g.lock);
}

/* ------------------------------------------------------------------ event path
 *
 * Every call NCCL makes lands here, on its threads, often on its critical path. The common case
 * (a START of a type we record, a STOP or STATE of one of our handles, room in the thread's block)
 * is a fast path that does nothing but write the record: no function call, no shared line, one
 * clock read. Everything else (no slot or block yet, a type not recorded, group sampling, a bad
 * handle, a full pool) goes through the cold slow paths. Checks that need not happen on NCCL's
 * thread are the writer's: whether a STOP/STATE handle's id was really issued by this load
 * (stale handles of an earlier load whose 8-bit epoch happens to match), and whether a state or
 * type value is known. */

#define HOT __attribute__((always_inline)) inline
#define COLD __attribute__((noinline, cold))

static inline int hot_type(unsigned t) {
  return (atomic_load_explicit(&ncs_g.hot, memory_order_relaxed) >> t) & 1;
}

/* types neither recorded nor needing the slow path: answered with a NULL handle at once */
static inline int cold_type(unsigned t) {
  return (atomic_load_explicit(&ncs_g.cold, memory_order_relaxed) >> t) & 1;
}

static inline int hot_handle(uint64_t h) {
  return ((uint32_t)(h >> 44) & 0xFF0FFu) == atomic_load_explicit(&ncs_g.hkey_hot, memory_order_relaxed);
}

static inline void *make_handle(unsigned t, uint64_t id) {
  return (void *)(uintptr_t)(atomic_load_explicit(&ncs_g.hbase, memory_order_relaxed) |
                             ((uint64_t)t << 52) | id);
}

/* A START record's first words (the header comes last, at publish time). */
static HOT uint64_t *start_words(uint64_t *w, uint64_t ts, uint64_t id, void *ctx, void *parent) {
  w[1] = ts;
  w[2] = id;
  w[3] = (uint64_t)(uintptr_t)ctx;
  w[4] = (uint64_t)(uintptr_t)parent;
  return w + NCS_START_WORDS;
}

static void group_sample_start_v5(unsigned t, void **eh, int captured, int *skip);
static inline uint32_t sample_flag(unsigned t);

/* What start_slow hands back: where the fields go (NULL: nothing to write) and the flags it
 * adds (NCS_SF_UNSAMPLED). Returned in registers, so the fast path keeps its locals there. */
typedef struct {
  uint64_t *f;
  uint32_t flags;
} ncs_slow_t;

/* START off the fast path. `sample` is -1 for ABI v4 and older (no sampling), else whether the
 * descriptor is a captured GroupApi (v5+). *eh is set either way. A dropped record still hands
 * out a valid handle, so children keep a parent id. */
static COLD ncs_slow_t start_slow(void *ctx, void **eh, unsigned t, uint32_t nw, void *parent,
                                  int sample) {
  ncs_slow_t r = {NULL, 0};
  *eh = NULL;
  if (!is_ready()) return r;
  if (sample >= 0) {
    int skip = 0;
    group_sample_start_v5(t, eh, sample, &skip);
    if (skip) return r; /* *eh is a hook handle */
    r.flags = sample_flag(t);
  }
  ncs_slot_t *s = ncs_slot();
  if (!((atomic_load_explicit(&ncs_g.enabled, memory_order_relaxed) >> t) & 1)) {
    if (s) ncs_count(&s->disabled);
    return r;
  }
  if (!s) { /* more threads than NCCLSCOPE_MAX_THREADS */
    uint64_t id = atomic_fetch_add_explicit(&ncs_g.id_counter, 1, memory_order_relaxed);
    *eh = make_handle(t, id);
    atomic_fetch_add_explicit(&ncs_g.no_slot_drops, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ncs_g.no_slot_by_type[t], 1, memory_order_relaxed);
    return r;
  }
  ncs_tls_t *T = &ncs_t;
  uint64_t id = ncs_new_id(T);
  *eh = make_handle(t, id);
  uint64_t *w = ncs_reserve(T, nw);
  if (!w) {
    ncs_count(&s->drops[t]);
    return r;
  }
  r.f = start_words(w, now(), id, ctx, parent);
  return r;
}

/* Every version's startEvent is made twice from one list of cases (below): a fast function that
 * records the common case with no call at all (so it needs no stack frame) and otherwise jumps to
 * the full one, which handles everything (start_slow). START_TYPE is START_TYPE_FAST or
 * START_TYPE_FULL while each is made.
 *
 * START_ENTRY: the full version's checks of the descriptor and its type (up to MAXT for that
 * version); it writes *eh on every path and declares t. */
#define START_ENTRY(d, MAXT)                                                                      \
  if (NCS_UNLIKELY(!eh)) return NCS_SUCCESS;                                                      \
  if (NCS_UNLIKELY(!d)) {                                                                         \
    *eh = NULL;                                                                                   \
    return NCS_SUCCESS;                                                                           \
  }                                                                                               \
  int t = type_index(d->type, MAXT);                                                              \
  if (NCS_UNLIKELY(t < 0)) {                                                                      \
    *eh = NULL;                                                                                   \
    unknown_type();                                                                               \
    return NCS_SUCCESS;                                                                           \
  }

/* The fast function: the same checks, leaving everything unusual to FULL (a tail call). A type
 * nobody asked for (`cold`) is answered here too: a NULL handle and a count. */
#define START_FAST_FN(NAME, DESCR, MAXT, FULL, CASES)                                             \
  static ncs_result_t NAME(void *ctx, void **eh, DESCR *d) {                                      \
    if (NCS_LIKELY(eh && d)) {                                                                    \
      int t = type_index(d->type, MAXT);                                                          \
      if (NCS_LIKELY(t >= 0)) {                                                                   \
        if (NCS_LIKELY(hot_type((unsigned)t))) {                                                  \
          switch (t) { CASES }                                                                    \
        } else if (cold_type((unsigned)t) && ncs_t.slot) {                                        \
          *eh = NULL;                                                                             \
          ncs_count(&ncs_t.slot->disabled);                                                       \
          return NCS_SUCCESS;                                                                     \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    return FULL(ctx, eh, d);                                                                      \
  }
/* NAME##_rec is ncclscope's own START; NAME hands the call to the chain when it is on (the fast
 * paths are off then, so every START reaches it). */
#define START_FULL_FN(NAME, DESCR, MAXT, CASES)                                                   \
  static COLD ncs_result_t NAME##_rec(void *ctx, void **eh, void *dv) {                           \
    DESCR *d = dv;                                                                                \
    START_ENTRY(d, MAXT);                                                                         \
    switch (t) { CASES }                                                                          \
    return NCS_SUCCESS;                                                                           \
  }                                                                                               \
  static COLD ncs_result_t NAME(void *ctx, void **eh, DESCR *d) {                                 \
    if (NCS_UNLIKELY(atomic_load_explicit(&ncs_g.chain_on, memory_order_relaxed)))                \
      return ncs_chain_start(ctx, eh, d, NAME##_rec);                                             \
    return NAME##_rec(ctx, eh, d);                                                                \
  }

/* One START of event type Ty (NCS_T_##E), a case of the lists below: reserve the record (its size
 * is a constant of the type), hand out the handle, fill f[] (the statements after the fixed
 * arguments), publish, and return. XFLAGS: START flags known from the descriptor (PXN, ABI v1);
 * SAMPLE: start_slow's `sample` argument. The fast form (reached for hot types only) records
 * when the thread has room and ids, else it leaves the switch for the full function. */
#define START_TYPE_FAST(Ty, E, XFLAGS, SAMPLE, ...)                                               \
  {                                                                                               \
    const uint32_t nw = NCS_START_WORDS + NCS_NF(Ty);                                            \
    ncs_tls_t *T = &ncs_t;                                                                        \
    if (NCS_LIKELY(nw <= (size_t)(T->end - T->w) && T->next_id < T->id_end)) {                   \
      uint64_t id_ = T->next_id++;                                                                \
      *eh = make_handle(NCS_T_##E, id_);                                                          \
      uint64_t *f = start_words(T->w, ncs_tsc(), id_, ctx, d->parentObj);                         \
      (void)f;                                                                                    \
      __VA_ARGS__;                                                                                \
      ncs_publish(T, nw, NCS_REC_HDR(NCS_REC_START, NCS_T_##E, nw, (XFLAGS), d->rank));           \
      return NCS_SUCCESS;                                                                         \
    }                                                                                             \
    break;                                                                                        \
  }
#define START_TYPE_FULL(Ty, E, XFLAGS, SAMPLE, ...)                                               \
  {                                                                                               \
    const uint32_t nw = NCS_START_WORDS + NCS_NF(Ty);                                            \
    ncs_slow_t r_ = start_slow(ctx, eh, NCS_T_##E, nw, d->parentObj, (SAMPLE));                   \
    if (!r_.f) return NCS_SUCCESS;                                                                \
    uint64_t *f = r_.f;                                                                           \
    (void)f;                                                                                      \
    __VA_ARGS__;                                                                                  \
    ncs_publish(&ncs_t, nw, NCS_REC_HDR(NCS_REC_START, NCS_T_##E, nw, (XFLAGS) | r_.flags, d->rank)); \
    return NCS_SUCCESS;                                                                           \
  }

#define U(x) ((uint64_t)(uintptr_t)(x))
#define I(x) ((uint64_t)(int64_t)(x))
#define N(type, name) NCS_F(type, name) /* a field's index in the record (trace/format.h) */

/* The type index of a descriptor's type bit, or -1 when it is not one bit up to 1 << maxt (the
 * version's last type): one compare covers both. */
static inline int type_index(uint64_t type, int maxt) {
  if (NCS_UNLIKELY(type == 0 || (type & (type - 1)) || type > (1ull << maxt))) return -1;
  return __builtin_ctzll(type);
}

static void unknown_type(void) {
  ncs_slot_t *s = is_ready() ? ncs_slot() : NULL;
  if (s) ncs_count(&s->unknown_type);
}

/* NetPlugin: the net plugin's descriptor is only valid during the call, so copy it now. */
static inline void net_fields(uint64_t *f, int64_t id, void *data) {
  uint32_t ntype = (uint32_t)id & NCS_NET_TYPE_MASK, ver = (uint32_t)id & NCS_NET_VER_MASK;
  for (int i = 0; i < NCS_NF(NetPlugin); i++) f[i] = 0;
  f[N(NetPlugin, id)] = I(id);
  f[N(NetPlugin, data)] = U(data);
  if (!data || ver != 1) return;
  if (ntype == NCS_NET_TYPE_SOCK) {
    const ncs_net_sock_v1_t *d = data;
    f[N(NetPlugin, decoded)] = 1, f[N(NetPlugin, fd)] = I(d->sock.fd);
    f[N(NetPlugin, op)] = I(d->sock.op), f[N(NetPlugin, length)] = d->sock.length;
  } else if (ntype == NCS_NET_TYPE_IB) {
    const ncs_net_ib_v1_t *d = data;
    f[N(NetPlugin, decoded)] = 1, f[N(NetPlugin, length)] = d->qp.length;
    f[N(NetPlugin, device)] = I(d->qp.device), f[N(NetPlugin, wr_id)] = d->qp.wr_id;
    f[N(NetPlugin, opcode)] = I(d->qp.opcode), f[N(NetPlugin, qpNum)] = I(d->qp.qpNum);
  }
}

static inline void proxyop_fields(uint64_t *f, pid_t pid, uint8_t ch, int peer, int nsteps,
                                  int chunk, int is_send) {
  f[N(ProxyOp, pid)] = I(pid), f[N(ProxyOp, channelId)] = ch, f[N(ProxyOp, peer)] = I(peer);
  f[N(ProxyOp, nSteps)] = I(nsteps), f[N(ProxyOp, chunkSize)] = I(chunk);
  f[N(ProxyOp, isSend)] = I(is_send);
}

static inline uint32_t pxn_flag(pid_t pid) { return pid != ncs_g.pid ? NCS_SF_PXN : 0; }

/* The Coll, P2p, proxy, KernelCh and NetPlugin members have the same names in v4 to v7; only v5+
 * has parentGroup (PG: the expression for it), only v7 the appended fields (X7: the macro that
 * fills them, NO_V7_COLL and NO_V7_TAG before). Each fill writes f[] (comma expressions, for START_TYPE's
 * tail); every field is written, zero where the version has none. */
#define NO_V7_COLL(d) f[N(Coll, kernelVariant)] = 0, f[N(Coll, isSymColl)] = 0, f[N(Coll, userTag)] = 0
#define V7_COLL(d)                                                                                \
  f[N(Coll, kernelVariant)] = U(d->coll.kernelVariant), f[N(Coll, isSymColl)] = d->coll.isSymColl, \
  f[N(Coll, userTag)] = d->coll.userTag
#define NO_V7_TAG(Ty) f[N(Ty, userTag)] = 0
#define V7_TAG(Ty, member) f[N(Ty, userTag)] = d->member.userTag
#define FILL_COLL_V4(d, PG, X7)                                                                   \
  f[N(Coll, seqNumber)] = d->coll.seqNumber, f[N(Coll, func)] = U(d->coll.func),                  \
  f[N(Coll, sendBuff)] = U(d->coll.sendBuff), f[N(Coll, recvBuff)] = U(d->coll.recvBuff),         \
  f[N(Coll, count)] = d->coll.count, f[N(Coll, root)] = I(d->coll.root),                          \
  f[N(Coll, datatype)] = U(d->coll.datatype), f[N(Coll, nChannels)] = d->coll.nChannels,          \
  f[N(Coll, nWarps)] = d->coll.nWarps, f[N(Coll, algo)] = U(d->coll.algo),                        \
  f[N(Coll, proto)] = U(d->coll.proto), f[N(Coll, parentGroup)] = (PG), f[N(Coll, commHash)] = 0, \
  f[N(Coll, name)] = 0, f[N(Coll, trafficBytes)] = 0, f[N(Coll, op)] = I(-1),                     \
  f[N(Coll, isCollnet)] = 0, f[N(Coll, isNvls)] = 0, X7(d)
#define FILL_P2P_V4(d, PG, X7)                                                                    \
  f[N(P2p, func)] = U(d->p2p.func), f[N(P2p, buff)] = U(d->p2p.buff),                             \
  f[N(P2p, datatype)] = U(d->p2p.datatype), f[N(P2p, count)] = d->p2p.count,                      \
  f[N(P2p, peer)] = I(d->p2p.peer), f[N(P2p, nChannels)] = d->p2p.nChannels,                      \
  f[N(P2p, parentGroup)] = (PG), f[N(P2p, commHash)] = 0, f[N(P2p, name)] = 0, X7
#define FILL_PROXY_OP(d)                                                                          \
  proxyop_fields(f, d->proxyOp.pid, d->proxyOp.channelId, d->proxyOp.peer, d->proxyOp.nSteps,     \
                 d->proxyOp.chunkSize, d->proxyOp.isSend)
#define FILL_PROXY_STEP(d) f[N(ProxyStep, step)] = I(d->proxyStep.step)
#define FILL_KERNEL_CH_V4(d)                                                                      \
  f[N(KernelCh, channelId)] = d->kernelCh.channelId, f[N(KernelCh, pTimer)] = d->kernelCh.pTimer
#define FILL_NET(d) net_fields(f, d->netPlugin.id, d->netPlugin.data)
/* The cases every version from v4 on has; SAMPLE: start_slow's `sample` (-1: v4, no sampling);
 * COLL7, P2P7: the fills of v7's appended Coll and P2p fields. */
#define CASES_V4(d, PG_COLL, PG_P2P, SAMPLE, COLL7, P2P7)                                         \
  case NCS_T_GROUP: START_TYPE(Group, GROUP, 0, SAMPLE, (void)0);                                 \
  case NCS_T_COLL: START_TYPE(Coll, COLL, 0, SAMPLE, FILL_COLL_V4(d, PG_COLL, COLL7));            \
  case NCS_T_P2P: START_TYPE(P2p, P2P, 0, SAMPLE, FILL_P2P_V4(d, PG_P2P, P2P7));                  \
  case NCS_T_PROXY_OP:                                                                            \
    START_TYPE(ProxyOp, PROXY_OP, pxn_flag(d->proxyOp.pid), SAMPLE, FILL_PROXY_OP(d));            \
  case NCS_T_PROXY_STEP: START_TYPE(ProxyStep, PROXY_STEP, 0, SAMPLE, FILL_PROXY_STEP(d));        \
  case NCS_T_PROXY_CTRL: START_TYPE(ProxyCtrl, PROXY_CTRL, 0, SAMPLE, (void)0);                   \
  case NCS_T_KERNEL_CH: START_TYPE(KernelCh, KERNEL_CH, 0, SAMPLE, FILL_KERNEL_CH_V4(d));         \
  case NCS_T_NET_PLUGIN: START_TYPE(NetPlugin, NET_PLUGIN, 0, SAMPLE, FILL_NET(d));

/* Group sampling's per-thread state (see "Group sampling" below): tls_groups counts the
 * thread's GroupApi stops, so every rank of an SPMD program with one thread per rank numbers its
 * groups alike and samples the same ones; tls_sampled says whether the thread's current group
 * has the full mask (1) or the hook mask (2). Coll/P2p of a hook group (recorded only with
 * NCCLSCOPE_UNSAMPLED_EVENTS) are flagged, so the writer completes them without waiting for
 * KernelCh that will not come. 0: this thread has not started a group (e.g. a CUDA callback
 * thread or a non-blocking communicator's launch thread): no flag. */
static __attribute__((tls_model("initial-exec"))) _Thread_local uint32_t tls_groups;
static __attribute__((tls_model("initial-exec"))) _Thread_local uint8_t tls_sampled; /* 1 on, 2 off */

/* Sampling stops for good at the first point-to-point operation (ncs_sampling_stops_at). On
 * NCCL 2.28.9, turning KernelCh off and on between groups that contain Send/Recv
 * (ncclSend/ncclRecv, AlltoAll) leaves NCCL's profiler proxy operations waiting for GPU work
 * counters that never come: every iteration runs, then the process hangs when its communicators
 * are destroyed (measured on 2xH200 with an empty plugin as well; docs/config.md). The group that
 * holds the first Send/Recv keeps its setting; every later group gets KernelCh. */
static COLD void sample_stop(void) {
  uint32_t n = atomic_exchange(&ncs_g.kernel_sample, 1);
  if (n <= 1) return; /* another thread stopped it */
  /* the group of this send/recv stays as it is; its GroupApi stop sets the full mask */
  ncs_log(NCS_LOG_WARN,
          "sampling (NCCLSCOPE_SAMPLE=%u) stopped at the first send/recv: NCCL 2.28 hangs at "
          "communicator destroy when KernelCh changes between groups with send/recv "
          "(docs/config.md); every later operation is recorded in full", n);
}

/* ---- Group sampling, ABI v5+ (NCCLSCOPE_SAMPLE=N, docs/config.md "Sampling").
 * NCCL copies its global activation mask into a thread-local copy at every operation's append,
 * just before it calls the GroupApi start, and every event of the operation follows that copy
 * (research 3.1). So the mask of the next group is written when a group's GroupApi stops: the full
 * mask for one group in N, for the others the hook mask (GroupApi, P2pApi and
 * NCCLSCOPE_UNSAMPLED_EVENTS), for which NCCL calls the plugin a few times per operation and does
 * no other profiler work. A group's GroupApi start reads the mask NCCL just copied, so the
 * thread knows whether its current group is sampled even when another thread wrote the mask. The
 * hook's own events are not recorded in an unsampled group: their handles are ncs_hook[0]
 * (GroupApi: its stop still picks the next mask) and ncs_hook[1] (P2pApi). */
static char ncs_hook[2];

static inline int is_hook(uint64_t h) { return h - (uint64_t)(uintptr_t)ncs_hook < 2; }

/* CUDA graphs: NCCL keeps a per-channel host counter of KernelCh work items that must follow the
 * GPU's. An operation without KernelCh advances the host counter once, when it is planned; inside
 * a CUDA graph the GPU advances its counter at every replay, so a captured operation without
 * KernelCh puts the two out of step for every later operation with KernelCh, whose profiler
 * proxy operations then wait forever: the process hangs at communicator destroy (2.28.9, measured;
 * proxy.cc SaveProxyProfiler/incWorkCounter, unchanged through 2.30). So sampling ends at the
 * first captured group: with the full mask for good when that group was sampled, else with the
 * hook mask for good (no more KernelCh, so nothing can wait), and the plugin says so. */
static COLD void sample_graph(int sampled) {
  uint32_t n = atomic_exchange(&ncs_g.kernel_sample, 1);
  if (n <= 1) return; /* already stopped */
  if (!sampled) atomic_store(&ncs_g.sample_hold_hook, 1);
  if (sampled)
    ncs_log(NCS_LOG_WARN, "sampling (NCCLSCOPE_SAMPLE=%u) stopped at the first CUDA graph capture, "
                          "which was sampled: every later operation is recorded in full", n);
  else
    ncs_log(NCS_LOG_WARN,
            "sampling (NCCLSCOPE_SAMPLE=%u) stopped at the first CUDA graph capture, which was not "
            "sampled: KernelCh now stays off (NCCL would hang at communicator destroy otherwise, "
            "docs/config.md) and later operations record only NCCLSCOPE_UNSAMPLED_EVENTS. "
            "Set NCCLSCOPE_SAMPLE=1 to record programs that capture NCCL in CUDA graphs", n);
}

/* At a GroupApi or P2pApi start with sampling on. Returns 1 when the event is not recorded (its
 * handle is then a hook handle). */
static int group_sample_start(int t, void **eh, int captured) {
  if (t == NCS_T_GROUP_API) {
    int *mp = atomic_load_explicit(&ncs_g.mask_ptr, memory_order_acquire);
    int cur = mp ? __atomic_load_n(mp, __ATOMIC_RELAXED) : 0;
    int off = mp && (uint32_t)cur == atomic_load_explicit(&ncs_g.mask_hook, memory_order_relaxed);
    tls_sampled = off ? 2 : 1;
    if (NCS_UNLIKELY(captured) && atomic_load_explicit(&ncs_g.kernel_sample, memory_order_relaxed) > 1)
      sample_graph(!off);
    ncs_slot_t *s = is_ready() ? ncs_slot() : NULL;
    if (s) {
      ncs_count(&s->groups);
      if (off) ncs_count(&s->groups_unsampled);
    }
  } else if (atomic_load_explicit(&ncs_g.kernel_sample, memory_order_relaxed) > 1) {
    sample_stop(); /* P2pApi: the next group's mask (at this group's stop) is the full one */
  }
  /* not recorded: the hook's own events in an unsampled group, and a GroupApi outside
   * NCCLSCOPE_EVENTS (NCCL starts it anyway; the hook handle makes NCCL call its stop) */
  if ((tls_sampled == 2 && !((atomic_load_explicit(&ncs_g.unsampled, memory_order_relaxed) >> t) & 1)) ||
      (t == NCS_T_GROUP_API && !((atomic_load_explicit(&ncs_g.enabled, memory_order_relaxed) >> t) & 1))) {
    *eh = &ncs_hook[t == NCS_T_GROUP_API ? 0 : 1];
    return 1;
  }
  return 0;
}

/* At a GroupApi stop (recorded or hook): the mask of this thread's next group. */
static void group_sample_stop(void) {
  if (!atomic_load_explicit(&ncs_g.sampling, memory_order_relaxed)) return;
  int *mp = atomic_load_explicit(&ncs_g.mask_ptr, memory_order_acquire);
  if (!mp) return;
  uint32_t n = atomic_load_explicit(&ncs_g.kernel_sample, memory_order_relaxed);
  uint32_t full = atomic_load_explicit(&ncs_g.mask_full, memory_order_relaxed);
  uint32_t hook = atomic_load_explicit(&ncs_g.mask_hook, memory_order_relaxed);
  uint32_t want = atomic_load_explicit(&ncs_g.sample_hold_hook, memory_order_relaxed) ? hook
                  : n <= 1 || ncs_kernel_sampled(++tls_groups, n)                   ? full
                                                                                    : hook;
  ncs_sample_mask(mp, want, full, hook);
}

static inline uint32_t sample_flag(unsigned t) {
  return (t == NCS_T_COLL || t == NCS_T_P2P) && tls_sampled == 2 ? NCS_SF_UNSAMPLED : 0;
}

/* The v5+ sampling steps of a START (the slow path runs them): GroupApi and P2pApi starts, and a
 * P2p start stops sampling for a plugin mask without P2pApi. *skip: not recorded (hook handle). */
static void group_sample_start_v5(unsigned t, void **eh, int captured, int *skip) {
  if (t == NCS_T_GROUP_API || t == NCS_T_P2P_API) {
    if (atomic_load_explicit(&ncs_g.sampling, memory_order_relaxed) &&
        group_sample_start((int)t, eh, captured))
      *skip = 1;
  } else if (NCS_UNLIKELY(t == NCS_T_P2P) &&
             atomic_load_explicit(&ncs_g.kernel_sample, memory_order_relaxed) > 1) {
    sample_stop();
  }
}

/* v5, v6 and v7 share the descriptor's offsets; v5 never sends CE types, only v7 sends KernelPhase
 * and has the appended fields (V7: V7_COLL, V7_TAG; else NO_V7_COLL, NO_V7_TAG). Group sampling
 * (v5+) runs on the slow path (ncs_g.hot is 0 while it is on): start_slow's `sample` is whether a
 * GroupApi was captured in a CUDA graph, else 0. */
#define CASES_V5PLUS(COLL7, TAG)                                                                  \
  CASES_V4(d, U(d->coll.parentGroup), U(d->p2p.parentGroup), 0, COLL7, TAG(P2p, p2p))             \
  case NCS_T_GROUP_API:                                                                           \
    START_TYPE(GroupApi, GROUP_API, 0, d->groupApi.graphCaptured,                                 \
               f[N(GroupApi, graphCaptured)] = d->groupApi.graphCaptured,                         \
               f[N(GroupApi, groupDepth)] = I(d->groupApi.groupDepth));                           \
  case NCS_T_COLL_API:                                                                            \
    START_TYPE(CollApi, COLL_API, 0, 0, f[N(CollApi, func)] = U(d->collApi.func),                 \
               f[N(CollApi, count)] = d->collApi.count, f[N(CollApi, datatype)] = U(d->collApi.datatype),\
               f[N(CollApi, root)] = I(d->collApi.root), f[N(CollApi, stream)] = U(d->collApi.stream),\
               f[N(CollApi, graphCaptured)] = d->collApi.graphCaptured, TAG(CollApi, collApi));   \
  case NCS_T_P2P_API:                                                                             \
    START_TYPE(P2pApi, P2P_API, 0, 0, f[N(P2pApi, func)] = U(d->p2pApi.func),                     \
               f[N(P2pApi, count)] = d->p2pApi.count, f[N(P2pApi, datatype)] = U(d->p2pApi.datatype),\
               f[N(P2pApi, stream)] = U(d->p2pApi.stream),                                        \
               f[N(P2pApi, graphCaptured)] = d->p2pApi.graphCaptured, TAG(P2pApi, p2pApi));       \
  case NCS_T_KERNEL_LAUNCH:                                                                       \
    START_TYPE(KernelLaunch, KERNEL_LAUNCH, 0, 0, f[N(KernelLaunch, stream)] = U(d->kernelLaunch.stream),\
               LAUNCH_NOTE(eh, ctx, d->parentObj, d->kernelLaunch.stream));                       \
  case NCS_T_CE_COLL:                                                                             \
    START_TYPE(CeColl, CE_COLL, 0, 0, f[N(CeColl, seqNumber)] = d->ceColl.seqNumber,              \
               f[N(CeColl, func)] = U(d->ceColl.func), f[N(CeColl, sendBuff)] = U(d->ceColl.sendBuff),\
               f[N(CeColl, recvBuff)] = U(d->ceColl.recvBuff), f[N(CeColl, count)] = d->ceColl.count,\
               f[N(CeColl, root)] = I(d->ceColl.root), f[N(CeColl, datatype)] = U(d->ceColl.datatype),\
               f[N(CeColl, syncStrategy)] = U(d->ceColl.syncStrategy),                            \
               f[N(CeColl, intraBatchSync)] = d->ceColl.intraBatchSync,                           \
               f[N(CeColl, batchSize)] = d->ceColl.batchSize,                                     \
               f[N(CeColl, numBatches)] = d->ceColl.numBatches,                                   \
               f[N(CeColl, ceSeqNum)] = d->ceColl.ceSeqNum, f[N(CeColl, stream)] = U(d->ceColl.stream),\
               TAG(CeColl, ceColl));                                                              \
  case NCS_T_CE_SYNC:                                                                             \
    START_TYPE(CeSync, CE_SYNC, 0, 0, f[N(CeSync, isComplete)] = d->ceCollSync.isComplete,        \
               f[N(CeSync, nRanks)] = I(d->ceCollSync.nRanks));                                   \
  case NCS_T_CE_BATCH:                                                                            \
    START_TYPE(CeBatch, CE_BATCH, 0, 0, f[N(CeBatch, numOps)] = I(d->ceCollBatch.numOps),         \
               f[N(CeBatch, totalBytes)] = d->ceCollBatch.totalBytes,                             \
               f[N(CeBatch, useIntraSync)] = d->ceCollBatch.useIntraSync);                        \
  /* end of CASES_V5PLUS */
#define NO_V7_TAG2(Ty, member) NO_V7_TAG(Ty)
#define CASES_V6 CASES_V5PLUS(NO_V7_COLL, NO_V7_TAG2)
/* v7: the appended fields, and KernelPhase (its stop time comes as the KernelPhaseStop state) */
#define CASES_V7                                                                                  \
  CASES_V5PLUS(V7_COLL, V7_TAG)                                                                \
  case NCS_T_KERNEL_PHASE:                                                                        \
    START_TYPE(KernelPhase, KERNEL_PHASE, 0, 0,                                                   \
               f[N(KernelPhase, channelId)] = d->kernelPhase.channelId,                           \
               f[N(KernelPhase, phaseId)] = d->kernelPhase.phaseId,                               \
               f[N(KernelPhase, phaseName)] = U(d->kernelPhase.phaseName),                        \
               f[N(KernelPhase, pTimer)] = d->kernelPhase.pTimer);

/* KernelLaunch with CUPTI active takes the full path only (ncs_hot_set's `slow`), which notes the
 * launch for the join (gpu/gpu.h); the fast path has nothing to do for it. */
#define LAUNCH_NOTE_FAST(eh, ctx, parent, stream) (void)0
#define LAUNCH_NOTE_FULL(eh, ctx, parent, stream) ncs_gpu_launch_begin(eh, ctx, parent, stream)

#define CASES_V4_ONLY CASES_V4(d, 0, 0, -1, NO_V7_COLL, NO_V7_TAG(P2p)) /* v4 does not sample */
#define START_TYPE START_TYPE_FULL
#define LAUNCH_NOTE LAUNCH_NOTE_FULL
START_FULL_FN(start_v7_full, ncs_descr_v7_t, NCS_T_KERNEL_PHASE, CASES_V7)
START_FULL_FN(start_v6_full, ncs_descr_v6_t, NCS_T_CE_BATCH, CASES_V6)
START_FULL_FN(start_v4_full, ncs_descr_v4_t, NCS_T_NET_PLUGIN, CASES_V4_ONLY)
#undef START_TYPE
#undef LAUNCH_NOTE
#define START_TYPE START_TYPE_FAST
#define LAUNCH_NOTE LAUNCH_NOTE_FAST
START_FAST_FN(start_v7, ncs_descr_v7_t, NCS_T_KERNEL_PHASE, start_v7_full, CASES_V7)
START_FAST_FN(start_v6, ncs_descr_v6_t, NCS_T_CE_BATCH, start_v6_full, CASES_V6)
START_FAST_FN(start_v4, ncs_descr_v4_t, NCS_T_NET_PLUGIN, start_v4_full, CASES_V4_ONLY)
#undef START_TYPE
#undef LAUNCH_NOTE

/* v1 passes enums; record NCCL's own strings so every version reads the same. */
static const char *const v1_func[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                      "AllReduce", "SendRecv", "Send",    "Recv"};
static const char *const v1_dtype[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",
                                       "ncclUint32",  "ncclInt64",   "ncclUint64",
                                       "ncclFloat16", "ncclFloat32", "ncclFloat64",
                                       "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
static const char *const v1_algo[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                      "NVLS", "NVLS_TREE", "PAT"};
static const char *const v1_proto[] = {"LL", "LL128", "SIMPLE"};
#define ENUM_STR(tab, v) ((unsigned)(v) < sizeof(tab) / sizeof((tab)[0]) ? (tab)[(v)] : "Unknown")

/* v1 .. v3 descriptors share everything but the Coll/P2p member layouts; v3 adds KernelCh
 * (without pTimer) and NetPlugin (CASES_V3). X_ is the START flag of the version. */
#define CASES_OLD(X_, COLL_FILL, P2P_FILL)                                                        \
  case NCS_T_GROUP: START_TYPE(Group, GROUP, X_, -1, (void)0);                                    \
  case NCS_T_COLL: START_TYPE(Coll, COLL, X_, -1, COLL_FILL);                                     \
  case NCS_T_P2P: START_TYPE(P2p, P2P, X_, -1, P2P_FILL);                                         \
  case NCS_T_PROXY_OP:                                                                            \
    START_TYPE(ProxyOp, PROXY_OP, X_ | pxn_flag(d->proxyOp.pid), -1, FILL_PROXY_OP(d));           \
  case NCS_T_PROXY_STEP: START_TYPE(ProxyStep, PROXY_STEP, X_, -1, FILL_PROXY_STEP(d));           \
  case NCS_T_PROXY_CTRL: START_TYPE(ProxyCtrl, PROXY_CTRL, X_, -1, (void)0);
#define CASES_V3                                                                                  \
  case NCS_T_KERNEL_CH:                                                                           \
    START_TYPE(KernelCh, KERNEL_CH, 0, -1, f[N(KernelCh, channelId)] = d->kernelCh.channelId,     \
               f[N(KernelCh, pTimer)] = 0);                                                       \
  case NCS_T_NET_PLUGIN: START_TYPE(NetPlugin, NET_PLUGIN, 0, -1, FILL_NET(d));

/* v1-v3 Coll: the v4+ fill's fields, then name, commHash and (v1, v2) trafficBytes; FUNC, DTYPE,
 * ALGO and PROTO are the strings (v1 passes enums, mapped by ENUM_STR). */
#define COLL_OLD_FILL(FUNC, DTYPE, ALGO, PROTO, TRAFFIC, OP, COLLNET, NVLS)                        \
  f[N(Coll, seqNumber)] = d->coll.seqNumber, f[N(Coll, func)] = U(FUNC),                          \
  f[N(Coll, sendBuff)] = U(d->coll.sendBuff), f[N(Coll, recvBuff)] = U(d->coll.recvBuff),         \
  f[N(Coll, count)] = d->coll.count, f[N(Coll, root)] = I(d->coll.root),                          \
  f[N(Coll, datatype)] = U(DTYPE), f[N(Coll, nChannels)] = d->coll.nMaxChannels,                  \
  f[N(Coll, nWarps)] = d->coll.nWarps, f[N(Coll, algo)] = U(ALGO), f[N(Coll, proto)] = U(PROTO),  \
  f[N(Coll, parentGroup)] = 0, f[N(Coll, commHash)] = d->coll.commHash,                           \
  f[N(Coll, name)] = U(d->coll.name), f[N(Coll, trafficBytes)] = (TRAFFIC),                       \
  f[N(Coll, op)] = I(OP), f[N(Coll, isCollnet)] = (COLLNET), f[N(Coll, isNvls)] = (NVLS), NO_V7_COLL(d)
#define COLL_STR_FILL(TRAFFIC)                                                                     \
  COLL_OLD_FILL(d->coll.func, d->coll.datatype, d->coll.algo, d->coll.proto, TRAFFIC, -1, 0, 0)
#define P2P_OLD_FILL(FUNC, DTYPE)                                                                  \
  f[N(P2p, func)] = U(FUNC), f[N(P2p, buff)] = U(d->p2p.buff), f[N(P2p, datatype)] = U(DTYPE),    \
  f[N(P2p, count)] = d->p2p.count, f[N(P2p, peer)] = I(d->p2p.peer), f[N(P2p, nChannels)] = 0,    \
  f[N(P2p, parentGroup)] = 0, f[N(P2p, commHash)] = d->p2p.commHash, f[N(P2p, name)] = U(d->p2p.name), \
  NO_V7_TAG(P2p)
#define P2P_STR_FILL P2P_OLD_FILL(d->p2p.func, d->p2p.datatype)

#define CASES_V3_ALL CASES_OLD(0, COLL_STR_FILL(0), P2P_STR_FILL) CASES_V3
#define CASES_V2_ALL CASES_OLD(0, COLL_STR_FILL(d->coll.trafficBytes), P2P_STR_FILL)
#define CASES_V1_ALL                                                                              \
  CASES_OLD(NCS_SF_ABI_V1,                                                                        \
            COLL_OLD_FILL(ENUM_STR(v1_func, d->coll.func), ENUM_STR(v1_dtype, d->coll.datatype),  \
                          ENUM_STR(v1_algo, d->coll.algo), ENUM_STR(v1_proto, d->coll.proto),     \
                          d->coll.trafficBytes, d->coll.op, d->coll.isCollnet != 0,               \
                          d->coll.isNvls != 0),                                                   \
            P2P_OLD_FILL(ENUM_STR(v1_func, d->p2p.func), ENUM_STR(v1_dtype, d->p2p.datatype)))
#define START_TYPE START_TYPE_FULL
START_FULL_FN(start_v3_full, ncs_descr_v3_t, NCS_T_NET_PLUGIN, CASES_V3_ALL)
START_FULL_FN(start_v2_full, ncs_descr_v2_t, NCS_T_PROXY_CTRL, CASES_V2_ALL)
START_FULL_FN(start_v1_full, ncs_descr_v1_t, NCS_T_PROXY_CTRL, CASES_V1_ALL)
#undef START_TYPE
#define START_TYPE START_TYPE_FAST
START_FAST_FN(start_v3, ncs_descr_v3_t, NCS_T_NET_PLUGIN, start_v3_full, CASES_V3_ALL)
START_FAST_FN(start_v2, ncs_descr_v2_t, NCS_T_PROXY_CTRL, start_v2_full, CASES_V2_ALL)
START_FAST_FN(start_v1, ncs_descr_v1_t, NCS_T_PROXY_CTRL, start_v1_full, CASES_V1_ALL)
#undef START_TYPE

/* A handle NCCL gives back is ours, of this load, and issued: tag and epoch in one compare, the
 * type nibble, and the id inside [id_base, id_counter). (The fast paths check only the first; the
 * writer checks the rest of what they record.) */
static int handle_ok(uint64_t h) {
  uint64_t id = h & NCS_ID_MASK;
  return ((uint32_t)(h >> 44) & 0xFF0FFu) == atomic_load_explicit(&ncs_g.hkey, memory_order_relaxed) &&
         ncs_eh_type(h) < NCS_T_COUNT &&
         id - ncs_g.id_base < atomic_load_explicit(&ncs_g.id_counter, memory_order_relaxed) - ncs_g.id_base;
}

static ncs_result_t stop_any(void *eh);

/* STOP/STATE off the fast path: group sampling's hooks, counting what was wrong, or writing the
 * record after claiming a slot or a block. */
void ncs_end_rec(void *eh, int kind, int state, uint64_t a0, uint64_t a1) {
  uint64_t h = (uint64_t)(uintptr_t)eh;
  if (NCS_UNLIKELY((h >> 56) == NCS_EH_TAG_LAUNCH)) { /* a KernelLaunch while CUPTI is active */
    h = (h & ~(0xFFull << 56)) | (NCS_EH_TAG << 56);
    eh = (void *)(uintptr_t)h;
    if (kind == NCS_REC_STOP) { /* the launch is over; its STOP as any other's */
      ncs_gpu_launch_end();
      stop_any(eh);
      return;
    }
  }
  if (is_hook(h)) { /* an unrecorded event of an unsampled group */
    if (kind == NCS_REC_STOP && h == (uint64_t)(uintptr_t)&ncs_hook[0]) group_sample_stop();
    return;
  }
  if (!is_ready()) return;
  if (kind == NCS_REC_STOP && ncs_eh_type(h) == NCS_T_GROUP_API && ncs_eh_is_ours(h)) group_sample_stop();
  ncs_slot_t *s = ncs_slot();
  ncs_tls_t *T = &ncs_t;
  _Atomic uint64_t *bad = NULL;
  if (!h)
    bad = s ? &s->null_handle : NULL;
  else if (!ncs_eh_is_ours(h))
    bad = s ? &s->bad_handle : NULL;
  else if (!handle_ok(h))
    bad = s ? &s->stale_handle : NULL;
  else if (!s) { /* a valid handle but no thread slot: the record is lost, and counted */
    atomic_fetch_add_explicit(&ncs_g.no_slot_drops, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ncs_g.no_slot_by_type[ncs_eh_type(h)], 1, memory_order_relaxed);
    return;
  }
  if (bad || !s) {
    if (bad) ncs_count(bad);
    if (bad && ncs_g.cfg.capture) { /* keep the raw call, so a replay makes it too */
      unsigned bt = ncs_eh_is_ours(h) ? ncs_eh_type(h) : 0;
      uint64_t *w = ncs_reserve(T, 5);
      if (!w) {
        ncs_count(&s->drops[bt]);
        return;
      }
      w[1] = now();
      w[2] = h;
      w[3] = a0, w[4] = a1;
      ncs_publish(T, 5, NCS_REC_HDR(NCS_REC_BADCALL, bt, 5, kind == NCS_REC_STOP ? NCS_BC_STOP : NCS_BC_STATE, state));
    }
    return;
  }
  unsigned t = ncs_eh_type(h);
  uint32_t nw = kind == NCS_REC_STOP ? 3 : 5;
  uint64_t *w = ncs_reserve(T, nw);
  if (!w) {
    ncs_count(&s->drops[t]);
    return;
  }
  w[1] = now();
  w[2] = h & NCS_ID_MASK;
  if (nw == 5) w[3] = a0, w[4] = a1;
  ncs_publish(T, nw, NCS_REC_HDR(kind, t, nw, 0, kind == NCS_REC_STATE ? state : 0));
}

/* `args` is NCCL's state argument pointer (its ABI version's), for the chain. */
static COLD void end_slow(void *eh, int kind, int state, uint64_t a0, uint64_t a1, void *args) {
  if (NCS_UNLIKELY(atomic_load_explicit(&ncs_g.chain_on, memory_order_relaxed))) {
    ncs_chain_end(eh, kind, state, a0, a1, args);
    return;
  }
  ncs_end_rec(eh, kind, state, a0, a1);
}

static ncs_result_t stop_any(void *eh) {
  ncs_tls_t *T = &ncs_t;
  uint64_t h = (uint64_t)(uintptr_t)eh;
  if (NCS_LIKELY(hot_handle(h) && 3 <= (size_t)(T->end - T->w))) {
    uint64_t *w = T->w;
    w[1] = ncs_tsc();
    w[2] = h & NCS_ID_MASK;
    ncs_publish(T, 3, NCS_REC_HDR(NCS_REC_STOP, ncs_eh_type(h), 3, 0, 0));
    return NCS_SUCCESS;
  }
  end_slow(eh, NCS_REC_STOP, 0, 0, 0, NULL);
  return NCS_SUCCESS;
}

/* A state value of NCS_NSTATES or more is recorded as it is and counted by the writer. */
static HOT void record_state(void *eh, int state, uint64_t a0, uint64_t a1, void *args) {
  ncs_tls_t *T = &ncs_t;
  uint64_t h = (uint64_t)(uintptr_t)eh;
  if (NCS_LIKELY(hot_handle(h) && 5 <= (size_t)(T->end - T->w))) {
    uint64_t *w = T->w;
    w[1] = ncs_tsc();
    w[2] = h & NCS_ID_MASK;
    w[3] = a0;
    w[4] = a1;
    ncs_publish(T, 5, NCS_REC_HDR(NCS_REC_STATE, ncs_eh_type(h), 5, 0, state));
    return;
  }
  end_slow(eh, NCS_REC_STATE, state, a0, a1, args);
}

static ncs_result_t state_v4(void *eh, ncs_state_t st, ncs_args_v4_t *a) {
  uint64_t a0 = 0;
  if (a) memcpy(&a0, a, sizeof a0); /* every v4+ state argument is the union's first 8 bytes */
  record_state(eh, st, a0, 0, a);
  return NCS_SUCCESS;
}

static ncs_result_t state_v1(void *eh, ncs_state_t st, ncs_args_v1_t *a) {
  uint64_t a0 = 0, a1 = 0;
  if (a) a0 = a->proxyOp.transSize, a1 = I(a->proxyOp.steps);
  record_state(eh, st, a0, a1, a);
  return NCS_SUCCESS;
}

/* ------------------------------------------------------------------ self time (bench only) */

#ifdef NCS_SELFTIME
/* libnccl-profiler-ncclscope-selftime.so (bench/CMakeLists.txt): the same plugin with every
 * start/stop/state call timed from entry to return (lfence; rdtsc on both sides), summed per call
 * kind and event type, per thread, and printed to stderr when the library is unloaded or the
 * process exits. It answers "how much of ncclscope's cost on a GPU host is spent inside its own
 * calls" (docs/benchmarks.md); the timing itself adds about two rdtsc per call. */
#define ST_THREADS 64
typedef struct {
  _Alignas(64) uint64_t n[3][NCS_T_COUNT + 1], cyc[3][NCS_T_COUNT + 1]; /* [NCS_T_COUNT]: other */
} st_acc_t;
static st_acc_t st_acc[ST_THREADS];
static _Atomic unsigned st_nthreads;
static _Thread_local int st_idx = -1;
static _Atomic uint64_t st_tsc0, st_ns0, st_self; /* set by the first thread (st_self 0 until then) */

static inline uint64_t st_tsc(void) {
  __asm__ __volatile__("lfence" ::: "memory");
  uint64_t t = ncs_tsc();
  __asm__ __volatile__("lfence" ::: "memory");
  return t;
}

static void st_add(int kind, int type, uint64_t cyc) {
  if (st_idx < 0) {
    unsigned i = atomic_fetch_add(&st_nthreads, 1);
    if (i == 0) {
      atomic_store(&st_tsc0, ncs_tsc());
      atomic_store(&st_ns0, ncs_mono_ns());
      uint64_t best = UINT64_MAX; /* what the timing itself costs: the least of empty intervals */
      for (int k = 0; k < 2000; k++) {
        uint64_t a = st_tsc(), b = st_tsc();
        if (b - a < best) best = b - a;
      }
      atomic_store(&st_self, best);
    }
    st_idx = i < ST_THREADS ? (int)i : ST_THREADS - 1; /* overflow threads share the last (racy) */
  }
  unsigned t = type >= 0 && type < NCS_T_COUNT ? (unsigned)type : NCS_T_COUNT;
  uint64_t self = atomic_load_explicit(&st_self, memory_order_relaxed);
  /* one writer per slot (but the overflow slot); relaxed load + store: plain moves on x86, and
   * race-free for the exit-time reader */
  uint64_t *pn = &st_acc[st_idx].n[kind][t], *pc = &st_acc[st_idx].cyc[kind][t];
  __atomic_store_n(pn, __atomic_load_n(pn, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  __atomic_store_n(pc, __atomic_load_n(pc, __ATOMIC_RELAXED) + (cyc > self ? cyc - self : 0),
                   __ATOMIC_RELAXED);
}

static ncs_result_t start_v6_st(void *ctx, void **eh, ncs_descr_v6_t *d) {
  uint64_t t0 = st_tsc();
  ncs_result_t r = start_v6(ctx, eh, d);
  st_add(0, d ? type_index(d->type, NCS_T_CE_BATCH) : -1, st_tsc() - t0);
  return r;
}
static ncs_result_t start_v7_st(void *ctx, void **eh, ncs_descr_v7_t *d) {
  uint64_t t0 = st_tsc();
  ncs_result_t r = start_v7(ctx, eh, d);
  st_add(0, d ? type_index(d->type, NCS_T_KERNEL_PHASE) : -1, st_tsc() - t0);
  return r;
}
static ncs_result_t stop_st(void *eh) {
  uint64_t t0 = st_tsc();
  ncs_result_t r = stop_any(eh);
  uint64_t h = (uint64_t)(uintptr_t)eh;
  st_add(1, ncs_eh_is_ours(h) ? (int)ncs_eh_type(h) : -1, st_tsc() - t0);
  return r;
}
static ncs_result_t state_st(void *eh, ncs_state_t st, ncs_args_v4_t *a) {
  uint64_t t0 = st_tsc();
  ncs_result_t r = state_v4(eh, st, a);
  uint64_t h = (uint64_t)(uintptr_t)eh;
  st_add(2, ncs_eh_is_ours(h) ? (int)ncs_eh_type(h) : -1, st_tsc() - t0);
  return r;
}

__attribute__((destructor)) static void st_print(void) {
  unsigned nt = atomic_load(&st_nthreads);
  if (!nt) return;
  double ns_per = (double)(ncs_mono_ns() - atomic_load(&st_ns0)) / (double)(ncs_tsc() - atomic_load(&st_tsc0));
  static const char *kinds[3] = {"start", "stop", "state"};
  uint64_t tot_n = 0, tot_c = 0, ops = 0;
  for (int k = 0; k < 3; k++)
    for (int t = 0; t <= NCS_T_COUNT; t++) {
      uint64_t n = 0, c = 0;
      for (unsigned i = 0; i < nt && i < ST_THREADS; i++)
        n += __atomic_load_n(&st_acc[i].n[k][t], __ATOMIC_RELAXED),
        c += __atomic_load_n(&st_acc[i].cyc[k][t], __ATOMIC_RELAXED);
      if (!n) continue;
      if (k == 0 && t == NCS_T_GROUP_API) ops = n;
      tot_n += n, tot_c += c;
      fprintf(stderr, "selftime: pid=%d %s type=%s calls=%llu mean_ns=%.1f\n", (int)getpid(), kinds[k],
              t < NCS_T_COUNT ? ncs_schema[t].name : "other", (unsigned long long)n,
              (double)c * ns_per / (double)n);
    }
  fprintf(stderr, "selftime: pid=%d total calls=%llu mean_ns=%.1f groupapi=%llu ns_per_groupapi=%.1f threads=%u "
          "timer_ns=%.1f (subtracted)\n", (int)getpid(), (unsigned long long)tot_n, tot_n ? (double)tot_c * ns_per / (double)tot_n : 0.0,
          (unsigned long long)ops, ops ? (double)tot_c * ns_per / (double)ops : 0.0, nt,
          (double)atomic_load(&st_self) * ns_per);
}
#define START_V7 start_v7_st
#define START_V6 start_v6_st
#define STOP_ANY stop_st
#define STATE_V4 state_st
#else
#define START_V7 start_v7
#define START_V6 start_v6
#define STOP_ANY stop_any
#define STATE_V4 state_v4
#endif

/* ------------------------------------------------------------------ init per version */

static ncs_result_t init_v7(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r,
                            ncs_logger_t l) {
  return do_init(c, id, m, n, nn, nr, r, l, 7);
}
static ncs_result_t init_v6(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r,
                            ncs_logger_t l) {
  return do_init(c, id, m, n, nn, nr, r, l, 6);
}
static ncs_result_t init_v5(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r,
                            ncs_logger_t l) {
  return do_init(c, id, m, n, nn, nr, r, l, 5);
}
static ncs_result_t init_v4(void **c, int *m, const char *n, uint64_t id, int nn, int nr, int r,
                            ncs_logger_t l) {
  return do_init(c, id, m, n, nn, nr, r, l, 4);
}
/* v1-v3 init passes no communicator facts: they are recorded as unknown (-1). */
static ncs_result_t init_v3(void **c, int *m) { return do_init(c, 0, m, NULL, -1, -1, -1, NULL, 3); }
static ncs_result_t init_v2(void **c, int *m) { return do_init(c, 0, m, NULL, -1, -1, -1, NULL, 2); }
static ncs_result_t init_v1(void **c, int *m) { return do_init(c, 0, m, NULL, -1, -1, -1, NULL, 1); }

/* NCCL 2.31 and later pick v7; 2.29-2.30 v6; 2.28 v5; 2.27 v4; 2.26 v3; 2.24-2.25 v2; 2.23 v1 */
/* ncclscope's identity (chain.h): NCCLSCOPE_CHAIN refuses a library that exports it */
EXPORT const char ncclscopePluginIdentity[] = "ncclscope profiler plugin " NCS_VERSION;

EXPORT const ncs_profiler_v7_t ncclProfiler_v7 = {"ncclscope", init_v7, START_V7, STOP_ANY,
                                                  STATE_V4, do_finalize};
EXPORT const ncs_profiler_v6_t ncclProfiler_v6 = {"ncclscope", init_v6, START_V6, STOP_ANY,
                                                  STATE_V4, do_finalize};
EXPORT const ncs_profiler_v5_t ncclProfiler_v5 = {"ncclscope", init_v5, START_V6, STOP_ANY,
                                                  STATE_V4, do_finalize};
EXPORT const ncs_profiler_v4_t ncclProfiler_v4 = {"ncclscope", init_v4, start_v4, stop_any,
                                                  state_v4, do_finalize};
EXPORT const ncs_profiler_v3_t ncclProfiler_v3 = {"ncclscope", init_v3, start_v3, stop_any,
                                                  state_v1, do_finalize};
EXPORT const ncs_profiler_v2_t ncclProfiler_v2 = {"ncclscope", init_v2, start_v2, stop_any,
                                                  state_v1, do_finalize};
EXPORT const ncs_profiler_v1_t ncclProfiler_v1 = {"ncclscope", init_v1, start_v1, stop_any,
                                                  state_v1, do_finalize};
