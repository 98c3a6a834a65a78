/* plugin.c - the exported ncclProfiler_v1 .. v6 objects and the lifecycle around them.
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
#include "record/flight.h"

ncs_global_t ncs_g = {.lock = PTHREAD_MUTEX_INITIALIZER};
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
}

static int setup_locked(void) {
  if (ncs_g.ready) return 0;
  ncs_config_load(&ncs_g.cfg);
  if (ncs_g.cfg.errors[0]) ncs_log(NCS_LOG_WARN, "configuration: %s", ncs_g.cfg.errors);
  if (ncs_g.cfg.disabled) return -1;
  ncs_g.pid = getpid();
  uint64_t t = ncs_mono_ns();
  ncs_set_epoch((uint32_t)((t ^ (t >> 17) ^ (uint64_t)ncs_g.pid) & 0xFF));
  ncs_g.use_tsc = ncs_g.cfg.use_tsc;
  atomic_store(&ncs_g.kernel_sample, ncs_g.cfg.capture ? 1 : ncs_g.cfg.kernel_sample);
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
  ncs_g.ready = 1;
  return 0;
}

static uint32_t abi_mask(int abi) {
  switch (abi) {
  case 1:
  case 2: return NCS_EV_ALL_V1;
  case 3:
  case 4: return NCS_EV_ALL_V3;
  case 5: return NCS_EV_ALL_V5;
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

/* Shared by every version. Never fails: a communicator we cannot track gets a NULL context. */
static ncs_result_t do_init(void **context, uint64_t comm_id, int *mask, const char *name,
                            int nnodes, int nranks, int rank, ncs_logger_t logfn, int abi) {
  if (context) *context = NULL;
  if (logfn) atomic_store_explicit(&ncs_logfn, logfn, memory_order_relaxed);
  if (!context) return NCS_SUCCESS;
  pthread_mutex_lock(&ncs_g.lock);
  if (setup_locked() != 0) {
    pthread_mutex_unlock(&ncs_g.lock);
    return NCS_SUCCESS;
  }
  if (!ncs_g.writer_running && ncs_writer_start() != 0) {
    pthread_mutex_unlock(&ncs_g.lock);
    return NCS_SUCCESS; /* the writer logged why (e.g. the directory is not writable) */
  }
  uint32_t m = ncs_g.cfg.events & abi_mask(abi);
  uint32_t idx = atomic_load(&ncs_g.ncomms);
  if (idx >= ncs_g.cfg.max_comms) {
    ncs_log(NCS_LOG_WARN, "more than NCCLSCOPE_MAX_COMMS=%u communicators; not tracking this one",
            ncs_g.cfg.max_comms);
    if (mask) __atomic_store_n(mask, (int)m, __ATOMIC_RELAXED); /* NCCL reads it with atomic loads */
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
  if (mask) atomic_store_explicit(&ncs_g.mask_ptr, mask, memory_order_release);
  *context = (void *)(uintptr_t)ncs_ch_make(ncs_g.pid, atomic_load(&ncs_g.epoch), idx);
  /* one process-wide int in NCCL: every init writes it (under our lock), the last one wins */
  if (mask) __atomic_store_n(mask, (int)m, __ATOMIC_RELAXED); /* NCCL reads it with atomic loads */
  pthread_mutex_unlock(&ncs_g.lock);
  return NCS_SUCCESS;
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

static ncs_result_t do_finalize(void *context) {
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

__attribute__((destructor)) static void ncs_unload(void) {
  /* dlclose, or process exit with communicators still alive (common: many programs never
   * destroy their communicators). Either way the trace is completed. */
  pthread_mutex_lock(&ncs_g.lock);
  if (ncs_g.writer_running) ncs_writer_stop();
  int live = atomic_load(&ncs_g.live_comms);
  if (ncs_g.ready && live == 0) {
    /* dlclose after the last finalize: no NCCL thread will call us again, and our signal
     * handler must not outlive the code it points to */
    ncs_fl_signal_remove();
    ncs_pool_teardown();
    free(ncs_g.comms);
    ncs_g.comms = NULL;
    ncs_g.ready = 0;
  }
  /* With live communicators this is process exit: other threads may still be inside NCCL,
   * so the memory stays mapped until the process is gone. */
  pthread_mutex_unlock(&ncs_g.lock);
}

/* ------------------------------------------------------------------ event path */

#define HOT __attribute__((always_inline)) inline
#define COLD __attribute__((noinline, cold))

/* START when the fast path could not run: no slot yet, type not recorded, or no space.
 * Returns where the fields go, or NULL when nothing must be written. A dropped record still
 * hands out a valid handle, so children keep a parent id. */
static COLD uint64_t *start_slow(ncs_slot_t **sp, void *ctx, void **eh, unsigned t, uint32_t nw,
                                 void *parent, int rank, uint32_t flags) {
  if (!is_ready()) return NULL;
  ncs_slot_t *s = ncs_slot();
  if (!((atomic_load_explicit(&ncs_g.enabled, memory_order_relaxed) >> t) & 1)) {
    if (s) ncs_count(&s->disabled);
    return NULL;
  }
  unsigned epoch = atomic_load_explicit(&ncs_g.epoch, memory_order_relaxed);
  if (!s) { /* more threads than NCCLSCOPE_MAX_THREADS */
    uint64_t id = atomic_fetch_add_explicit(&ncs_g.id_counter, 1, memory_order_relaxed);
    *eh = (void *)(uintptr_t)ncs_eh_make(t, epoch, id);
    atomic_fetch_add_explicit(&ncs_g.no_slot_drops, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ncs_g.no_slot_by_type[t], 1, memory_order_relaxed);
    return NULL;
  }
  uint64_t id = ncs_new_id(s);
  *eh = (void *)(uintptr_t)ncs_eh_make(t, epoch, id);
  uint64_t *w = ncs_reserve(s, nw);
  if (!w) {
    ncs_count(&s->drops[t]);
    return NULL;
  }
  w[0] = NCS_REC_HDR(NCS_REC_START, t, nw, flags, rank);
  w[1] = now();
  w[2] = id;
  w[3] = (uint64_t)(uintptr_t)ctx;
  w[4] = (uint64_t)(uintptr_t)parent;
  *sp = s;
  return w + NCS_START_WORDS;
}

/* Reserve a START record and hand out the handle: the common case inline, the rest in
 * start_slow. */
static HOT uint64_t *start_record(ncs_slot_t **sp, void *ctx, void **eh, unsigned t,
                                  uint32_t nfields, void *parent, int rank, uint32_t flags) {
  ncs_slot_t *s = ncs_tls_slot;
  uint32_t nw = NCS_START_WORDS + nfields;
  if (NCS_LIKELY(s && ((atomic_load_explicit(&ncs_g.enabled, memory_order_relaxed) >> t) & 1) &&
                 s->next_id < s->id_end && s->cur && s->pos + nw <= s->cur->cap)) {
    uint64_t id = s->next_id++;
    *eh = (void *)(uintptr_t)ncs_eh_make(t, atomic_load_explicit(&ncs_g.epoch, memory_order_relaxed), id);
    uint64_t *w = &s->cur->words[s->pos];
    w[0] = NCS_REC_HDR(NCS_REC_START, t, nw, flags, rank);
    w[1] = now();
    w[2] = id;
    w[3] = (uint64_t)(uintptr_t)ctx;
    w[4] = (uint64_t)(uintptr_t)parent;
    *sp = s;
    return w + NCS_START_WORDS;
  }
  return start_slow(sp, ctx, eh, t, nw, parent, rank, flags);
}

static HOT void finish(ncs_slot_t *s, uint32_t nfields) { ncs_commit(s, NCS_START_WORDS + nfields); }

#define U(x) ((uint64_t)(uintptr_t)(x))
#define I(x) ((uint64_t)(int64_t)(x))

static inline int type_index(uint64_t type) {
  if (NCS_UNLIKELY(type == 0 || (type & (type - 1)) || type > NCS_EV_CE_BATCH)) return -1;
  return __builtin_ctzll(type);
}

static void unknown_type(void) {
  ncs_slot_t *s = is_ready() ? ncs_slot() : NULL;
  if (s) ncs_count(&s->unknown_type);
}

/* NetPlugin: the net plugin's descriptor is only valid during the call, so copy it now. */
static inline void net_fields(uint64_t *f, int64_t id, void *data) {
  uint32_t ntype = (uint32_t)id & NCS_NET_TYPE_MASK, ver = (uint32_t)id & NCS_NET_VER_MASK;
  f[0] = I(id);
  f[1] = U(data);
  for (int i = 2; i < 10; i++) f[i] = 0;
  if (!data || ver != 1) return;
  if (ntype == NCS_NET_TYPE_SOCK) {
    const ncs_net_sock_v1_t *d = data;
    f[2] = 1, f[3] = I(d->sock.fd), f[4] = I(d->sock.op), f[5] = d->sock.length;
  } else if (ntype == NCS_NET_TYPE_IB) {
    const ncs_net_ib_v1_t *d = data;
    f[2] = 1, f[5] = d->qp.length, f[6] = I(d->qp.device), f[7] = d->qp.wr_id;
    f[8] = I(d->qp.opcode), f[9] = I(d->qp.qpNum);
  }
}

static inline void proxyop_fields(uint64_t *f, pid_t pid, uint8_t ch, int peer, int nsteps,
                                  int chunk, int is_send) {
  f[0] = I(pid), f[1] = ch, f[2] = I(peer), f[3] = I(nsteps), f[4] = I(chunk), f[5] = I(is_send);
}

static inline uint32_t pxn_flag(pid_t pid) { return pid != ncs_g.pid ? NCS_SF_PXN : 0; }

/* The Coll, P2p, proxy, KernelCh and NetPlugin members have the same names in v4, v5 and v6;
 * only v5+ has parentGroup (PG: the expression for it). */
#define FILL_V4_COMMON(d, PG_COLL, PG_P2P)                                                        \
  case NCS_T_COLL:                                                                                \
    f[0] = d->coll.seqNumber, f[1] = U(d->coll.func), f[2] = U(d->coll.sendBuff);               \
    f[3] = U(d->coll.recvBuff), f[4] = d->coll.count, f[5] = I(d->coll.root);                   \
    f[6] = U(d->coll.datatype), f[7] = d->coll.nChannels, f[8] = d->coll.nWarps;                \
    f[9] = U(d->coll.algo), f[10] = U(d->coll.proto), f[11] = (PG_COLL);                        \
    f[12] = 0, f[13] = 0, f[14] = 0, f[15] = I(-1), f[16] = 0, f[17] = 0;                       \
    break;                                                                                        \
  case NCS_T_P2P:                                                                                 \
    f[0] = U(d->p2p.func), f[1] = U(d->p2p.buff), f[2] = U(d->p2p.datatype);                    \
    f[3] = d->p2p.count, f[4] = I(d->p2p.peer), f[5] = d->p2p.nChannels, f[6] = (PG_P2P);       \
    f[7] = 0, f[8] = 0;                                                                           \
    break;                                                                                        \
  case NCS_T_PROXY_OP:                                                                            \
    proxyop_fields(f, d->proxyOp.pid, d->proxyOp.channelId, d->proxyOp.peer, d->proxyOp.nSteps, \
                   d->proxyOp.chunkSize, d->proxyOp.isSend);                                      \
    break;                                                                                        \
  case NCS_T_PROXY_STEP: f[0] = I(d->proxyStep.step); break;                                      \
  case NCS_T_KERNEL_CH: f[0] = d->kernelCh.channelId, f[1] = d->kernelCh.pTimer; break;           \
  case NCS_T_NET_PLUGIN: net_fields(f, d->netPlugin.id, d->netPlugin.data); break;

/* KernelCh sampling (NCCLSCOPE_KERNEL_SAMPLE=N, docs/config.md): NCCL copies its activation
 * mask for every operation at the API call (research 3.1), so turning the KernelCh bit on for one
 * group in N (on average; see ncs_kernel_sampled), at that group's GroupApi start, gives GPU times for
 * that group only. The count is
 * per thread: with one thread per rank, every rank samples the same groups of an SPMD program.
 * The Coll/P2p of an unsampled group are flagged, so the writer completes them without waiting
 * for KernelCh that will not come. 0: this thread has not started a group (e.g. a CUDA callback
 * thread or a non-blocking communicator's launch thread): no flag. */
static __attribute__((tls_model("initial-exec"))) _Thread_local uint32_t tls_groups;
static __attribute__((tls_model("initial-exec"))) _Thread_local uint8_t tls_sampled; /* 1 on, 2 off */

/* Not COLD: with the default NCCLSCOPE_KERNEL_SAMPLE (64) it runs at every group's start. */
static __attribute__((noinline)) void sample_kernel(void) {
  uint32_t n = atomic_load_explicit(&ncs_g.kernel_sample, memory_order_relaxed);
  int *mp = atomic_load_explicit(&ncs_g.mask_ptr, memory_order_acquire);
  if (n <= 1 || !mp || !(ncs_g.mask_set & NCS_EV_KERNEL_CH)) {
    tls_sampled = 0; /* sampling stopped (sample_stop): no more unsampled groups on this thread */
    return;
  }
  int on = ncs_kernel_sampled(tls_groups++, n);
  tls_sampled = on ? 1 : 2;
  ncs_mask_kernel_ch(mp, on);
  /* sample_stop ran meanwhile on another thread: make sure the bit it set is not lost */
  if (!on && atomic_load_explicit(&ncs_g.kernel_sample, memory_order_relaxed) <= 1)
    ncs_mask_kernel_ch(mp, 1);
}

/* Sampling stops for good at the first point-to-point operation (ncs_sampling_stops_at). On
 * NCCL 2.28.9, turning KernelCh off and on between groups that contain Send/Recv
 * (ncclSend/ncclRecv, AlltoAll) leaves NCCL's profiler proxy operations waiting for GPU work
 * counters that never come: every iteration runs, then the process hangs when its communicators
 * are destroyed (measured on 2xH200 with an empty plugin as well; docs/config.md). The group that
 * holds the first Send/Recv keeps its setting; every later group gets KernelCh. */
static COLD void sample_stop(void) {
  uint32_t n = atomic_exchange(&ncs_g.kernel_sample, 1);
  if (n <= 1) return; /* another thread stopped it */
  int *mp = atomic_load_explicit(&ncs_g.mask_ptr, memory_order_acquire);
  if (mp && (ncs_g.mask_set & NCS_EV_KERNEL_CH)) ncs_mask_kernel_ch(mp, 1);
  ncs_log(NCS_LOG_WARN,
          "KernelCh sampling (NCCLSCOPE_KERNEL_SAMPLE=%u) stopped at the first send/recv: "
          "NCCL 2.28 hangs at communicator destroy when KernelCh changes between groups with "
          "send/recv (docs/config.md); GPU times are now recorded for every operation", n);
}

static inline uint32_t sample_flag(int t) {
  return (t == NCS_T_COLL || t == NCS_T_P2P) && tls_sampled == 2 ? NCS_SF_UNSAMPLED : 0;
}

/* Every version's startEvent begins the same way: write *eHandle, check the descriptor and its
 * type (up to MAXT for that version), and reserve the START record. It declares t, nf, s and
 * f for the fill that follows, and returns when nothing is to be written. */
#define START_BEGIN(d, MAXT, EXTRA_FLAGS)                                                         \
  if (!eh) return NCS_SUCCESS;                                                                    \
  *eh = NULL;                                                                                     \
  if (NCS_UNLIKELY(!d)) return NCS_SUCCESS;                                                       \
  int t = type_index(d->type);                                                                    \
  if (NCS_UNLIKELY(t < 0 || t > (MAXT))) {                                                        \
    unknown_type();                                                                               \
    return NCS_SUCCESS;                                                                           \
  }                                                                                               \
  const uint32_t nf = ncs_schema[t].nfields;                                                      \
  ncs_slot_t *s = NULL;                                                                           \
  if (t == SAMPLE_AT) {                                                                           \
    if (atomic_load_explicit(&ncs_g.kernel_sample, memory_order_relaxed) > 1 || tls_sampled)     \
      sample_kernel(); /* the default samples: every group start */                              \
  } else if (NCS_UNLIKELY(ncs_sampling_stops_at(d->type)) &&                                    \
             atomic_load_explicit(&ncs_g.kernel_sample, memory_order_relaxed) > 1) {              \
    sample_stop();                                                                                \
  }                                                                                               \
  uint32_t flags = (t == NCS_T_PROXY_OP ? pxn_flag(d->proxyOp.pid) : 0) | sample_flag(t) |       \
                   (EXTRA_FLAGS);                                                                 \
  uint64_t *f = start_record(&s, ctx, eh, (unsigned)t, nf, d->parentObj, d->rank, flags);         \
  if (!f) return NCS_SUCCESS

/* v5 and v6 share the descriptor prefix; v5 never sends CE types. */
/* where sampling decides: GroupApi (v5+); v4 and older have no API events, so their Group (the
 * kernel plan, emitted after the launch) decides for the next plan */
#define SAMPLE_AT NCS_T_GROUP_API
static ncs_result_t start_v6(void *ctx, void **eh, ncs_descr_v6_t *d) {
  START_BEGIN(d, NCS_T_CE_BATCH, 0);
  switch (t) {
  case NCS_T_GROUP:
  case NCS_T_PROXY_CTRL: break;
    FILL_V4_COMMON(d, U(d->coll.parentGroup), U(d->p2p.parentGroup))
  case NCS_T_GROUP_API: f[0] = d->groupApi.graphCaptured, f[1] = I(d->groupApi.groupDepth); break;
  case NCS_T_COLL_API:
    f[0] = U(d->collApi.func), f[1] = d->collApi.count, f[2] = U(d->collApi.datatype);
    f[3] = I(d->collApi.root), f[4] = U(d->collApi.stream), f[5] = d->collApi.graphCaptured;
    break;
  case NCS_T_P2P_API:
    f[0] = U(d->p2pApi.func), f[1] = d->p2pApi.count, f[2] = U(d->p2pApi.datatype);
    f[3] = U(d->p2pApi.stream), f[4] = d->p2pApi.graphCaptured;
    break;
  case NCS_T_KERNEL_LAUNCH: f[0] = U(d->kernelLaunch.stream); break;
  case NCS_T_CE_COLL:
    f[0] = d->ceColl.seqNumber, f[1] = U(d->ceColl.func), f[2] = U(d->ceColl.sendBuff);
    f[3] = U(d->ceColl.recvBuff), f[4] = d->ceColl.count, f[5] = I(d->ceColl.root);
    f[6] = U(d->ceColl.datatype), f[7] = U(d->ceColl.syncStrategy), f[8] = d->ceColl.intraBatchSync;
    f[9] = d->ceColl.batchSize, f[10] = d->ceColl.numBatches, f[11] = d->ceColl.ceSeqNum;
    f[12] = U(d->ceColl.stream);
    break;
  case NCS_T_CE_SYNC: f[0] = d->ceCollSync.isComplete, f[1] = I(d->ceCollSync.nRanks); break;
  case NCS_T_CE_BATCH:
    f[0] = I(d->ceCollBatch.numOps), f[1] = d->ceCollBatch.totalBytes;
    f[2] = d->ceCollBatch.useIntraSync;
    break;
  }
  finish(s, nf);
  return NCS_SUCCESS;
}

#undef SAMPLE_AT
#define SAMPLE_AT NCS_T_GROUP
static ncs_result_t start_v4(void *ctx, void **eh, ncs_descr_v4_t *d) {
  START_BEGIN(d, NCS_T_NET_PLUGIN, 0);
  switch (t) {
    FILL_V4_COMMON(d, 0, 0)
  default: break;
  }
  finish(s, nf);
  return NCS_SUCCESS;
}

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

/* v1 .. v3 descriptors share everything but the Coll/P2p member layouts. */
#define START_OLD(V, COLL_FILL, P2P_FILL, HAS_KCH)                                                \
  static ncs_result_t start_v##V(void *ctx, void **eh, ncs_descr_v##V##_t *d) {                  \
    START_BEGIN(d, HAS_KCH ? NCS_T_NET_PLUGIN : NCS_T_PROXY_CTRL, V == 1 ? NCS_SF_ABI_V1 : 0);    \
    switch (t) {                                                                                  \
    case NCS_T_COLL: COLL_FILL; break;                                                            \
    case NCS_T_P2P: P2P_FILL; break;                                                              \
    case NCS_T_PROXY_OP:                                                                          \
      proxyop_fields(f, d->proxyOp.pid, d->proxyOp.channelId, d->proxyOp.peer,                   \
                     d->proxyOp.nSteps, d->proxyOp.chunkSize, d->proxyOp.isSend);                 \
      break;                                                                                      \
    case NCS_T_PROXY_STEP: f[0] = I(d->proxyStep.step); break;                                    \
    default: old_extra_v##V(t, f, d); break;                                                      \
    }                                                                                             \
    finish(s, nf);                                                                                \
    return NCS_SUCCESS;                                                                           \
  }

static inline void old_extra_v3(int t, uint64_t *f, ncs_descr_v3_t *d) {
  if (t == NCS_T_KERNEL_CH) f[0] = d->kernelCh.channelId, f[1] = 0;
  if (t == NCS_T_NET_PLUGIN) net_fields(f, d->netPlugin.id, d->netPlugin.data);
}
static inline void old_extra_v2(int t, uint64_t *f, ncs_descr_v2_t *d) { (void)t, (void)f, (void)d; }
static inline void old_extra_v1(int t, uint64_t *f, ncs_descr_v1_t *d) { (void)t, (void)f, (void)d; }

#define COLL_STR_FILL(TRAFFIC)                                                                     \
  f[0] = d->coll.seqNumber, f[1] = U(d->coll.func), f[2] = U(d->coll.sendBuff),                   \
  f[3] = U(d->coll.recvBuff), f[4] = d->coll.count, f[5] = I(d->coll.root),                       \
  f[6] = U(d->coll.datatype), f[7] = d->coll.nMaxChannels, f[8] = d->coll.nWarps,                 \
  f[9] = U(d->coll.algo), f[10] = U(d->coll.proto), f[11] = 0, f[12] = d->coll.commHash,          \
  f[13] = U(d->coll.name), f[14] = (TRAFFIC), f[15] = I(-1), f[16] = 0, f[17] = 0
#define P2P_STR_FILL                                                                               \
  f[0] = U(d->p2p.func), f[1] = U(d->p2p.buff), f[2] = U(d->p2p.datatype), f[3] = d->p2p.count,   \
  f[4] = I(d->p2p.peer), f[5] = 0, f[6] = 0, f[7] = d->p2p.commHash, f[8] = U(d->p2p.name)

START_OLD(3, COLL_STR_FILL(0), P2P_STR_FILL, 1)
START_OLD(2, COLL_STR_FILL(d->coll.trafficBytes), P2P_STR_FILL, 0)
START_OLD(1,
          (f[0] = d->coll.seqNumber, f[1] = U(ENUM_STR(v1_func, d->coll.func)),
           f[2] = U(d->coll.sendBuff), f[3] = U(d->coll.recvBuff), f[4] = d->coll.count,
           f[5] = I(d->coll.root), f[6] = U(ENUM_STR(v1_dtype, d->coll.datatype)),
           f[7] = d->coll.nMaxChannels, f[8] = d->coll.nWarps,
           f[9] = U(ENUM_STR(v1_algo, d->coll.algo)), f[10] = U(ENUM_STR(v1_proto, d->coll.proto)),
           f[11] = 0, f[12] = d->coll.commHash, f[13] = U(d->coll.name),
           f[14] = d->coll.trafficBytes, f[15] = I(d->coll.op), f[16] = d->coll.isCollnet != 0,
           f[17] = d->coll.isNvls != 0),
          (f[0] = U(ENUM_STR(v1_func, d->p2p.func)), f[1] = U(d->p2p.buff),
           f[2] = U(ENUM_STR(v1_dtype, d->p2p.datatype)), f[3] = d->p2p.count,
           f[4] = I(d->p2p.peer), f[5] = 0, f[6] = 0, f[7] = d->p2p.commHash,
           f[8] = U(d->p2p.name)),
          0)

/* A handle NCCL gives back is recorded only when it is ours, of this load, and issued: tag and
 * epoch in one compare, the type nibble, and the id inside [id_base, id_counter). */
static HOT int handle_ok(uint64_t h) {
  uint64_t id = h & NCS_ID_MASK;
  return ((uint32_t)(h >> 44) & 0xFF0FFu) == atomic_load_explicit(&ncs_g.hkey, memory_order_relaxed) &&
         ncs_eh_type(h) < NCS_T_COUNT &&
         id - ncs_g.id_base < atomic_load_explicit(&ncs_g.id_counter, memory_order_relaxed) - ncs_g.id_base;
}

/* STOP/STATE off the fast path: count what was wrong, or write the record after claiming a slot
 * or a block. */
static COLD void end_slow(void *eh, int kind, int state, uint64_t a0, uint64_t a1) {
  if (!is_ready()) return;
  ncs_slot_t *s = ncs_slot();
  uint64_t h = (uint64_t)(uintptr_t)eh;
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
      uint64_t *w = ncs_reserve(s, 5);
      if (!w) {
        ncs_count(&s->drops[ncs_eh_is_ours(h) ? ncs_eh_type(h) : 0]);
        return;
      }
      w[0] = NCS_REC_HDR(NCS_REC_BADCALL, ncs_eh_is_ours(h) ? ncs_eh_type(h) : 0, 5,
                         kind == NCS_REC_STOP ? NCS_BC_STOP : NCS_BC_STATE, state);
      w[1] = now();
      w[2] = h;
      w[3] = a0, w[4] = a1;
      ncs_commit(s, 5);
    }
    return;
  }
  unsigned t = ncs_eh_type(h);
  if (kind == NCS_REC_STATE && (unsigned)state >= NCS_NSTATES) ncs_count(&s->unknown_state);
  uint32_t nw = kind == NCS_REC_STOP ? 3 : 5;
  uint64_t *w = ncs_reserve(s, nw);
  if (!w) {
    ncs_count(&s->drops[t]);
    return;
  }
  w[0] = NCS_REC_HDR(kind, t, nw, 0, kind == NCS_REC_STATE ? state : 0);
  w[1] = now();
  w[2] = h & NCS_ID_MASK;
  if (nw == 5) w[3] = a0, w[4] = a1;
  ncs_commit(s, nw);
}

static ncs_result_t stop_any(void *eh) {
  ncs_slot_t *s = ncs_tls_slot;
  uint64_t h = (uint64_t)(uintptr_t)eh;
  if (NCS_LIKELY(s && handle_ok(h) && s->cur && s->pos + 3 <= s->cur->cap)) {
    uint64_t *w = &s->cur->words[s->pos];
    w[0] = NCS_REC_HDR(NCS_REC_STOP, ncs_eh_type(h), 3, 0, 0);
    w[1] = now();
    w[2] = h & NCS_ID_MASK;
    ncs_commit(s, 3);
    return NCS_SUCCESS;
  }
  end_slow(eh, NCS_REC_STOP, 0, 0, 0);
  return NCS_SUCCESS;
}

static HOT void record_state(void *eh, int state, uint64_t a0, uint64_t a1) {
  ncs_slot_t *s = ncs_tls_slot;
  uint64_t h = (uint64_t)(uintptr_t)eh;
  if (NCS_LIKELY(s && handle_ok(h) && (unsigned)state < NCS_NSTATES && s->cur &&
                 s->pos + 5 <= s->cur->cap)) {
    uint64_t *w = &s->cur->words[s->pos];
    w[0] = NCS_REC_HDR(NCS_REC_STATE, ncs_eh_type(h), 5, 0, state);
    w[1] = now();
    w[2] = h & NCS_ID_MASK;
    w[3] = a0;
    w[4] = a1;
    ncs_commit(s, 5);
    return;
  }
  end_slow(eh, NCS_REC_STATE, state, a0, a1);
}

static ncs_result_t state_v4(void *eh, ncs_state_t st, ncs_args_v4_t *a) {
  uint64_t a0 = 0;
  if (a) memcpy(&a0, a, sizeof a0); /* every v4+ state argument is the union's first 8 bytes */
  record_state(eh, st, a0, 0);
  return NCS_SUCCESS;
}

static ncs_result_t state_v1(void *eh, ncs_state_t st, ncs_args_v1_t *a) {
  uint64_t a0 = 0, a1 = 0;
  if (a) a0 = a->proxyOp.transSize, a1 = I(a->proxyOp.steps);
  record_state(eh, st, a0, a1);
  return NCS_SUCCESS;
}

/* ------------------------------------------------------------------ init per version */

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

EXPORT const ncs_profiler_v6_t ncclProfiler_v6 = {"ncclscope", init_v6, start_v6, stop_any,
                                                  state_v4, do_finalize};
EXPORT const ncs_profiler_v5_t ncclProfiler_v5 = {"ncclscope", init_v5, start_v6, stop_any,
                                                  state_v4, do_finalize};
EXPORT const ncs_profiler_v4_t ncclProfiler_v4 = {"ncclscope", init_v4, start_v4, stop_any,
                                                  state_v4, do_finalize};
EXPORT const ncs_profiler_v3_t ncclProfiler_v3 = {"ncclscope", init_v3, start_v3, stop_any,
                                                  state_v1, do_finalize};
EXPORT const ncs_profiler_v2_t ncclProfiler_v2 = {"ncclscope", init_v2, start_v2, stop_any,
                                                  state_v1, do_finalize};
EXPORT const ncs_profiler_v1_t ncclProfiler_v1 = {"ncclscope", init_v1, start_v1, stop_any,
                                                  state_v1, do_finalize};
