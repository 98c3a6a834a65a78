/* chain_logger.c - a profiler plugin that counts and checks every call it receives, for the
 * NCCLSCOPE_CHAIN tests (tests/chain.cmake, tests/chain_check.py).
 *
 * It asks for CHAINLOG_EVENTS (NCCLSCOPE_EVENTS' syntax; default all) and hands out handles that
 * point into its own table of events. At every call it checks what a plugin alone under NCCL
 * could rely on, and counts what breaks it (`violations`, the first one described):
 *   - a START's type is one its mask makes NCCL start (NCCL's ancestor rules) and its version has;
 *   - a START's context is one its init returned (PXN ProxyOps aside: another process's);
 *   - a parent is NULL or one of its handles, of a type that can be that event's parent
 *     (for ABI v4 and older, a Coll/P2p's parent is the Group);
 *   - a STOP/STATE's handle is NULL or one of its handles, and an event is stopped once.
 * At unload (or exit) it appends to CHAINLOG_OUT (else stderr) one summary line and one line of
 * starts,stops,states per type in nccl-sim's `nccl-sim-types:` format, so the test compares them.
 *
 * Other environment: CHAINLOG_NULL_ANCESTORS=1 returns without writing *eHandle for events outside
 * its mask (as NVIDIA's Inspector does); CHAINLOG_FAIL_INIT=K makes its K-th init fail (1-based);
 * CHAINLOG_START_ERR=1 makes every startEvent return an error (after writing the handle).
 * Build options: CHAINLOG_MAX_ABI / CHAINLOG_MIN_ABI limit the ncclProfiler_vN it exports;
 * CHAINLOG_NO_END leaves stopEvent, recordEventState and finalize NULL.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi/ncs_abi.h"
#include "trace/format.h"

#ifndef CHAINLOG_MAX_ABI
#define CHAINLOG_MAX_ABI 7
#endif
#ifndef CHAINLOG_MIN_ABI
#define CHAINLOG_MIN_ABI 1
#endif
#define EXPORT __attribute__((visibility("default")))
#define NEV (1u << 21)
#define NCTX 4096
#define MAGIC 0xC4A1

typedef struct {
  uint16_t magic;
  uint8_t type;
  _Atomic uint8_t stopped;
} ev_t;

static ev_t evs[NEV];
static _Atomic uint32_t nev;
static struct {
  int finalized;
} ctxs[NCTX];
static _Atomic uint32_t nctx, ninit, nfini;
static uint32_t cfg_mask;
static int cfg_null_anc, cfg_fail_init, cfg_start_err, abi_used;
static _Atomic uint64_t cnt[NCS_T_COUNT][3], null_stops, null_states, violations, exhausted;
static char first_violation[256];
static _Atomic int first_taken;

static const uint32_t trigger[NCS_NTYPES] = {
    [NCS_T_GROUP_API] = NCS_EV_ALL_V6 & ~(uint32_t)NCS_EV_PROXY_CTRL,
    [NCS_T_COLL_API] = NCS_EV_COLL_API | NCS_EV_COLL | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP | NCS_EV_KERNEL_CH |
                       NCS_EV_NET_PLUGIN | NCS_EV_CE_COLL | NCS_EV_CE_SYNC | NCS_EV_CE_BATCH,
    [NCS_T_P2P_API] = NCS_EV_P2P_API | NCS_EV_P2P | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP | NCS_EV_KERNEL_CH |
                      NCS_EV_NET_PLUGIN,
    [NCS_T_KERNEL_LAUNCH] = NCS_EV_KERNEL_LAUNCH,
    [NCS_T_GROUP] = NCS_EV_GROUP | NCS_EV_COLL | NCS_EV_P2P | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP |
                    NCS_EV_KERNEL_CH | NCS_EV_NET_PLUGIN,
    [NCS_T_COLL] = NCS_EV_COLL | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP | NCS_EV_KERNEL_CH | NCS_EV_NET_PLUGIN,
    [NCS_T_P2P] = NCS_EV_P2P | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP | NCS_EV_KERNEL_CH | NCS_EV_NET_PLUGIN,
    [NCS_T_PROXY_OP] = NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP | NCS_EV_NET_PLUGIN,
    [NCS_T_PROXY_STEP] = NCS_EV_PROXY_STEP | NCS_EV_NET_PLUGIN,
    [NCS_T_PROXY_CTRL] = NCS_EV_PROXY_CTRL,
    [NCS_T_KERNEL_CH] = NCS_EV_KERNEL_CH,
    [NCS_T_NET_PLUGIN] = NCS_EV_NET_PLUGIN,
    [NCS_T_CE_COLL] = NCS_EV_CE_COLL | NCS_EV_CE_SYNC | NCS_EV_CE_BATCH,
    [NCS_T_CE_SYNC] = NCS_EV_CE_SYNC,
    [NCS_T_CE_BATCH] = NCS_EV_CE_BATCH,
    [NCS_T_KERNEL_PHASE] = NCS_EV_KERNEL_PHASE,
};

static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void violation(const char *fmt, ...) {
  atomic_fetch_add(&violations, 1);
  if (atomic_exchange(&first_taken, 1)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(first_violation, sizeof first_violation, fmt, ap);
  va_end(ap);
}

static uint32_t abi_types(int abi) {
  return abi <= 2 ? NCS_EV_ALL_V1 : abi <= 4 ? NCS_EV_ALL_V3 : abi == 5 ? NCS_EV_ALL_V5 : abi == 6 ? NCS_EV_ALL_V6 : NCS_EV_ALL;
}

static ev_t *ev_of(void *h) {
  ev_t *e = h;
  if (e < evs || e >= evs + NEV || ((char *)e - (char *)evs) % sizeof *e || e->magic != MAGIC) return NULL;
  return e;
}

/* which types may parent each type (bit masks of type indexes) */
static uint32_t parent_ok(int t, int abi) {
  switch (t) {
  case NCS_T_COLL: return abi >= 5 ? 1u << NCS_T_COLL_API : 1u << NCS_T_GROUP;
  case NCS_T_P2P: return abi >= 5 ? 1u << NCS_T_P2P_API : 1u << NCS_T_GROUP;
  case NCS_T_PROXY_OP:
  case NCS_T_KERNEL_CH: return 1u << NCS_T_COLL | 1u << NCS_T_P2P;
  case NCS_T_PROXY_STEP: return 1u << NCS_T_PROXY_OP;
  case NCS_T_NET_PLUGIN: return 1u << NCS_T_PROXY_STEP;
  case NCS_T_COLL_API:
  case NCS_T_P2P_API:
  case NCS_T_KERNEL_LAUNCH: return 1u << NCS_T_GROUP_API;
  case NCS_T_CE_COLL: return 1u << NCS_T_COLL_API;
  case NCS_T_CE_SYNC:
  case NCS_T_CE_BATCH: return 1u << NCS_T_CE_COLL;
  case NCS_T_KERNEL_PHASE: return 1u << NCS_T_KERNEL_CH;
  default: return 0;
  }
}

/* Once, before any init returns: a second communicator's init must not write the mask int while
 * the first one is still reading the configuration (it wrote 0 then, and NCCL, reading the mask
 * at every event, rightly started nothing of this plugin's for the first events of the job). */
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static int cfg_abi;
static void config_once(void);
static void config(int abi) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu); /* the first caller's abi */
  if (!cfg_abi) cfg_abi = abi;
  pthread_mutex_unlock(&mu);
  pthread_once(&cfg_once, config_once);
}
static void config_once(void) {
  int abi = cfg_abi;
  abi_used = abi;
  uint32_t m = NCS_EV_ALL;
  const char *ev = getenv("CHAINLOG_EVENTS"), *bad;
  size_t badlen;
  if (ev && *ev && ncs_parse_event_list(ev, &m, &bad, &badlen) != 0) m = NCS_EV_ALL;
  cfg_mask = m & abi_types(abi);
  const char *s = getenv("CHAINLOG_NULL_ANCESTORS");
  cfg_null_anc = s && atoi(s);
  s = getenv("CHAINLOG_FAIL_INIT");
  cfg_fail_init = s ? atoi(s) : 0;
  s = getenv("CHAINLOG_START_ERR");
  cfg_start_err = s && atoi(s);
}

static int do_init(void **ctx, int *mask, int abi) {
  config(abi);
  uint32_t k = atomic_fetch_add(&ninit, 1) + 1;
  if (cfg_fail_init && (int)k == cfg_fail_init) return 3; /* ncclInternalError */
  if (mask) __atomic_store_n(mask, (int)cfg_mask, __ATOMIC_RELAXED);
  uint32_t i = atomic_fetch_add(&nctx, 1);
  *ctx = i < NCTX ? (void *)&ctxs[i] : NULL;
  return 0;
}

static int ctx_ok(void *c) {
  return (char *)c >= (char *)ctxs && (char *)c < (char *)(ctxs + NCTX) && ((char *)c - (char *)ctxs) % sizeof ctxs[0] == 0;
}

static int start(void *ctx, void **eh, uint64_t type, void *parent, int pxn, int abi) {
  if (!eh) {
    violation("start with a NULL eHandle");
    return 0;
  }
  if (!type || (type & (type - 1)) || type > NCS_EV_KERNEL_PHASE) {
    violation("start of unknown type 0x%llx", (unsigned long long)type);
    *eh = NULL;
    return 0;
  }
  int t = __builtin_ctzll(type);
  /* NCCL 2.31 (v7) turns KernelCh on for a mask with KernelPhase */
  uint32_t eff = abi >= 7 && (cfg_mask & NCS_EV_KERNEL_PHASE) ? cfg_mask | NCS_EV_KERNEL_CH : cfg_mask;
  if (!((abi_types(abi) >> t) & 1) || !(trigger[t] & eff)) violation("start of type %s, not asked for", ncs_schema[t].name);
  if (!pxn && !ctx_ok(ctx)) violation("start of %s with context %p, not one of ours", ncs_schema[t].name, ctx);
  if (parent && !pxn) {
    ev_t *p = ev_of(parent);
    if (!p)
      violation("start of %s with parent %p, not one of our handles", ncs_schema[t].name, parent);
    else if (!((parent_ok(t, abi) >> p->type) & 1))
      violation("start of %s with a parent of type %s", ncs_schema[t].name, ncs_schema[p->type].name);
  }
  atomic_fetch_add_explicit(&cnt[t][0], 1, memory_order_relaxed);
  if (!((eff >> t) & 1) && cfg_null_anc) return cfg_start_err; /* *eh not written */
  uint32_t i = atomic_fetch_add(&nev, 1);
  if (i >= NEV) {
    atomic_fetch_add(&exhausted, 1);
    *eh = NULL;
    return cfg_start_err;
  }
  evs[i].type = (uint8_t)t;
  evs[i].magic = MAGIC;
  *eh = &evs[i];
  return cfg_start_err; /* 0, or an error NCCL would ignore */
}

static int end(void *h, int kind) {
  if (!h) {
    atomic_fetch_add(kind ? &null_states : &null_stops, 1);
    return 0;
  }
  ev_t *e = ev_of(h);
  if (!e) {
    violation("%s on %p, not one of our handles", kind ? "state" : "stop", h);
    return 0;
  }
  if (!kind && atomic_exchange(&e->stopped, 1)) violation("second stop of a %s", ncs_schema[e->type].name);
  atomic_fetch_add_explicit(&cnt[e->type][kind ? 2 : 1], 1, memory_order_relaxed);
  return 0;
}

static __attribute__((unused)) int stop_any(void *h) { return end(h, 0); }
static __attribute__((unused)) int fini(void *ctx) {
  if (!ctx_ok(ctx)) violation("finalize of context %p, not one of ours", ctx);
  atomic_fetch_add(&nfini, 1);
  return 0;
}

#define PXN_OF(d) ((d) && (d)->type == NCS_EV_PROXY_OP && (d)->proxyOp.pid != getpid())
static __attribute__((unused)) int start_v6(void *c, void **eh, ncs_descr_v6_t *d) {
  if (!d) return 0;
  int r = start(c, eh, d->type, d->parentObj, PXN_OF(d), abi_used);
  int t = __builtin_ctzll(d->type | (1ull << 63));
  if ((t == NCS_T_COLL || t == NCS_T_P2P) && abi_used >= 5) {
    void *g = t == NCS_T_COLL ? d->coll.parentGroup : d->p2p.parentGroup;
    ev_t *p = g ? ev_of(g) : NULL;
    if (g && (!p || p->type != NCS_T_GROUP)) violation("%s with parentGroup %p, not one of our Groups", ncs_schema[t].name, g);
  }
  return r;
}
static __attribute__((unused)) int start_v7(void *c, void **eh, ncs_descr_v7_t *d) {
  return start_v6(c, eh, (ncs_descr_v6_t *)d); /* v6's members at the same offsets (ncs_abi.h) */
}
static __attribute__((unused)) int start_v4(void *c, void **eh, ncs_descr_v4_t *d) { return d ? start(c, eh, d->type, d->parentObj, PXN_OF(d), 4) : 0; }
static __attribute__((unused)) int start_v3(void *c, void **eh, ncs_descr_v3_t *d) { return d ? start(c, eh, d->type, d->parentObj, PXN_OF(d), 3) : 0; }
static __attribute__((unused)) int start_v2(void *c, void **eh, ncs_descr_v2_t *d) { return d ? start(c, eh, d->type, d->parentObj, PXN_OF(d), 2) : 0; }
static __attribute__((unused)) int start_v1(void *c, void **eh, ncs_descr_v1_t *d) { return d ? start(c, eh, d->type, d->parentObj, PXN_OF(d), 1) : 0; }
static __attribute__((unused)) int state_v4(void *h, ncs_state_t s, ncs_args_v4_t *a) { (void)s, (void)a; return end(h, 1); }
static __attribute__((unused)) int state_v1(void *h, ncs_state_t s, ncs_args_v1_t *a) { (void)s, (void)a; return end(h, 1); }

static __attribute__((unused)) int init_v7(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r, ncs_logger_t l) {
  (void)id, (void)n, (void)nn, (void)nr, (void)r, (void)l;
  return do_init(c, m, 7);
}
static __attribute__((unused)) int init_v6(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r, ncs_logger_t l) {
  (void)id, (void)n, (void)nn, (void)nr, (void)r, (void)l;
  return do_init(c, m, 6);
}
static __attribute__((unused)) int init_v5(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r, ncs_logger_t l) {
  (void)id, (void)n, (void)nn, (void)nr, (void)r, (void)l;
  return do_init(c, m, 5);
}
static __attribute__((unused)) int init_v4(void **c, int *m, const char *n, uint64_t id, int nn, int nr, int r, ncs_logger_t l) {
  (void)id, (void)n, (void)nn, (void)nr, (void)r, (void)l;
  return do_init(c, m, 4);
}
static __attribute__((unused)) int init_v3(void **c, int *m) { return do_init(c, m, 3); }
static __attribute__((unused)) int init_v2(void **c, int *m) { return do_init(c, m, 2); }
static __attribute__((unused)) int init_v1(void **c, int *m) { return do_init(c, m, 1); }

#ifdef CHAINLOG_NO_END
#define STOP_FN NULL
#define ST4 NULL
#define ST1 NULL
#define FINI NULL
#else
#define STOP_FN stop_any
#define ST4 state_v4
#define ST1 state_v1
#define FINI fini
#endif

#if CHAINLOG_MAX_ABI >= 7 && CHAINLOG_MIN_ABI <= 7
EXPORT const ncs_profiler_v7_t ncclProfiler_v7 = {"chainlog", init_v7, start_v7, STOP_FN, ST4, FINI};
#endif
#if CHAINLOG_MAX_ABI >= 6 && CHAINLOG_MIN_ABI <= 6
EXPORT const ncs_profiler_v6_t ncclProfiler_v6 = {"chainlog", init_v6, start_v6, STOP_FN, ST4, FINI};
#endif
#if CHAINLOG_MAX_ABI >= 5 && CHAINLOG_MIN_ABI <= 5
EXPORT const ncs_profiler_v5_t ncclProfiler_v5 = {"chainlog", init_v5, start_v6, STOP_FN, ST4, FINI};
#endif
#if CHAINLOG_MAX_ABI >= 4 && CHAINLOG_MIN_ABI <= 4
EXPORT const ncs_profiler_v4_t ncclProfiler_v4 = {"chainlog", init_v4, start_v4, STOP_FN, ST4, FINI};
#endif
#if CHAINLOG_MAX_ABI >= 3 && CHAINLOG_MIN_ABI <= 3
EXPORT const ncs_profiler_v3_t ncclProfiler_v3 = {"chainlog", init_v3, start_v3, STOP_FN, ST1, FINI};
#endif
#if CHAINLOG_MAX_ABI >= 2 && CHAINLOG_MIN_ABI <= 2
EXPORT const ncs_profiler_v2_t ncclProfiler_v2 = {"chainlog", init_v2, start_v2, STOP_FN, ST1, FINI};
#endif
#if CHAINLOG_MAX_ABI >= 1 && CHAINLOG_MIN_ABI <= 1
EXPORT const ncs_profiler_v1_t ncclProfiler_v1 = {"chainlog", init_v1, start_v1, STOP_FN, ST1, FINI};
#endif

__attribute__((destructor)) static void report(void) {
  if (!atomic_load(&ninit)) return;
  const char *path = getenv("CHAINLOG_OUT");
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  FILE *o = f ? f : stderr;
  fprintf(o, "chainlog: pid=%d abi=%d mask=0x%x inits=%u finalizes=%u null_stops=%llu null_states=%llu "
             "exhausted=%llu violations=%llu first=%s\n", (int)getpid(), abi_used, cfg_mask,
          atomic_load(&ninit), atomic_load(&nfini), (unsigned long long)atomic_load(&null_stops),
          (unsigned long long)atomic_load(&null_states), (unsigned long long)atomic_load(&exhausted),
          (unsigned long long)atomic_load(&violations), first_taken ? first_violation : "-");
  fprintf(o, "chainlog-types:");
  for (int t = 0; t < NCS_T_COUNT; t++)
    fprintf(o, " %s=%llu,%llu,%llu", ncs_schema[t].name, (unsigned long long)atomic_load(&cnt[t][0]),
            (unsigned long long)atomic_load(&cnt[t][1]), (unsigned long long)atomic_load(&cnt[t][2]));
  fprintf(o, "\n");
  if (f) fclose(f);
}
