/* chain.c - NCCLSCOPE_CHAIN=PATH: forward every call to a second profiler plugin (docs/chain.md).
 *
 * NCCL loads one profiler plugin. With the chain on, ncclscope stands between NCCL and a second
 * plugin and gives each of them what NCCL would have given it alone:
 *
 *  - its own init per communicator, with its own context (a per-communicator pair behind the
 *    context NCCL holds) and its own activation mask int. NCCL's int gets the union; an event is
 *    passed to a side only when that side's mask would have made NCCL start it (NCCL's ancestor
 *    rules, `trigger` below), so neither side gets what it did not ask for;
 *  - its own event handles. NCCL holds one handle per event: ncclscope's own when the chained
 *    plugin did not get the event, else a chain handle naming an entry of a table allocated at
 *    load (NCCLSCOPE_CHAIN_SLOTS entries; no allocation on the event path) that holds both sides'
 *    handles. Parents (parentObj, parentGroup) are translated per side;
 *  - the chained plugin is called through its newest ncclProfiler_vM with M <= NCCL's version N,
 *    as NCCL would pick it. M == N passes the descriptors through; N = 5..7 with M = 4..N-1 is
 *    converted as NCCL's adapters do (types and states M does not know are not passed; v4's
 *    Coll/P2p parent is the Group). Other pairs leave the chain off, and the log says so.
 *
 * An entry lives from START until it is reused: a STOP marks it closed, but it stays readable, so
 * the children NCCL starts after their parent's STOP (a Coll stops when enqueued) still find the
 * parent. Reuse takes closed entries in ring order, and open ones only when they are four laps
 * old (events NCCL never stops). A child whose parent entry was reused gets a NULL parent.
 *
 * Failures of the chained plugin that are survived: a library that does not load or has no
 * usable ncclProfiler_vM (the chain stays off), an init that fails (that communicator gets no
 * chained events), NULL entry points (not called), error returns from every call (counted and
 * ignored, as NCCL ignores them), handles it never writes (NULL). Not survived: a crash or a hang
 * inside it: it runs in NCCL's threads, as it would alone.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/chain.h"

#define CH_TAG 0xCBull   /* bits 63..56 of a chain event handle (ncclscope's are 0xEC) */
#define CH_CTX_TAG 0xCDull /* bits 63..56 of a chain context (ncclscope's are 0xC7) */
#define CH_ID_MASK ((1ull << 48) - 1)
#define CH_OPEN (1ull << 55) /* in an entry's key: started and not stopped */
#define CH_BUSY 1ull         /* an entry's key while it is being written */

enum { F_OURS = 1, F_THEIRS = 2 };

typedef struct {
  _Atomic uint64_t key;  /* the handle NCCL holds (| CH_OPEN), 0 never used, CH_BUSY being written */
  _Atomic uint64_t ours; /* ncclscope's handle */
  _Atomic uint64_t theirs;
  _Atomic uint32_t fwd; /* F_OURS | F_THEIRS: who got the START (and so gets its STOP/STATEs) */
  uint32_t pad_;
} ch_ent_t;

typedef struct {
  void *ours, *theirs;
  int ok; /* the chained plugin's init succeeded */
} ch_comm_t;

typedef union {
  const ncs_profiler_v7_t *v7;
  const ncs_profiler_v6_t *v6; /* also v5 */
  const ncs_profiler_v4_t *v4;
  const ncs_profiler_v3_t *v3;
  const ncs_profiler_v2_t *v2;
  const ncs_profiler_v1_t *v1;
} ch_api_t;

static struct {
  int tried;     /* load attempted (once per load of ncclscope) */
  int abi;       /* NCCL's version (N) */
  int their_abi; /* the chained plugin's (M) */
  void *lib;
  ch_api_t api;
  ch_ent_t *tab;
  uint64_t tab_mask;
  ch_comm_t *comms;
  uint32_t max_comms;
  _Atomic uint32_t ncomms;
  _Atomic int ours_mask, theirs_mask; /* each side's process-wide mask int */
  _Atomic uint32_t theirs_seen;       /* theirs_mask when NCCL's int was last set */
  _Atomic(int *) nccl_mask;
  _Atomic uint64_t next_id;
  /* counters (rare paths) */
  _Atomic uint64_t full, parent_lost, stale, errors, init_failed;
} ch;

static char ch_null[4]; /* handles of events whose every receiver returned NULL: &ch_null[fwd] */

static __attribute__((tls_model("initial-exec"))) _Thread_local uint64_t tls_next, tls_end;

/* ------------------------------------------------------------------ what each side gets */

/* The mask bits that make NCCL start an event of each type (the research notes, 3.1). */
static const uint32_t trigger[NCS_NTYPES] = {
    [NCS_T_GROUP_API] = NCS_EV_ALL_V6 & ~(uint32_t)NCS_EV_PROXY_CTRL, /* not KernelPhase (below) */
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
    [NCS_T_KERNEL_PHASE] = NCS_EV_KERNEL_PHASE, /* v7: only under KernelCh, which NCCL adds for it */
};

static uint32_t abi_types(int abi) {
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

/* A mask as NCCL v7 uses it: KernelPhase turns KernelCh on (NCCL 2.31 does so at init). */
static uint32_t v7_mask(uint32_t m) {
  return (m & NCS_EV_KERNEL_PHASE) && ch.abi >= 7 ? m | NCS_EV_KERNEL_CH : m;
}

/* The chained plugin's mask as NCCL's adapter for its version leaves it. */
static uint32_t theirs_eff(void) {
  return v7_mask((uint32_t)atomic_load_explicit(&ch.theirs_mask, memory_order_relaxed) & abi_types(ch.their_abi));
}

/* NCCL's int is the union. The chained plugin may change its int at any time (the example plugin
 * does); NCCL reads its own at every operation, so the union follows at the next START. */
static void mask_refresh(void) {
  uint32_t t = (uint32_t)atomic_load_explicit(&ch.theirs_mask, memory_order_relaxed);
  if (NCS_LIKELY(t == atomic_load_explicit(&ch.theirs_seen, memory_order_relaxed))) return;
  atomic_store_explicit(&ch.theirs_seen, t, memory_order_relaxed);
  int *m = atomic_load_explicit(&ch.nccl_mask, memory_order_acquire);
  if (m)
    __atomic_store_n(m, (int)((uint32_t)atomic_load_explicit(&ch.ours_mask, memory_order_relaxed) | theirs_eff()),
                     __ATOMIC_RELAXED);
}

/* States NCCL's adapters pass to a plugin of version M when NCCL speaks N (5..7). */
static int state_passes(int state) {
  if (ch.their_abi == ch.abi) return 1;
  if (state == NCS_ST_KERNEL_PHASE_STOP) return 0; /* v4 .. v6 */
  if (state >= NCS_ST_CE_COLL_START && state <= NCS_ST_CE_BATCH_COMPLETE) return 0; /* v4, v5 */
  if (ch.their_abi == 4 && (state == NCS_ST_GROUP_START_API_STOP || state == NCS_ST_GROUP_END_API_START))
    return 0;
  return 1;
}

/* ------------------------------------------------------------------ handles */

static inline int is_null_handle(uint64_t h) { return h - (uint64_t)(uintptr_t)ch_null < sizeof ch_null; }

static uint64_t new_id(void) {
  if (NCS_UNLIKELY(tls_next >= tls_end)) {
    tls_next = atomic_fetch_add_explicit(&ch.next_id, 64, memory_order_relaxed);
    tls_end = tls_next + 64;
  }
  return tls_next++ & CH_ID_MASK;
}

/* A free entry (never used, closed, or open for four laps: an event NCCL never stopped), with its
 * key set to CH_BUSY; *h is the handle it will have. NULL after 8 entries in a row are open. */
static ch_ent_t *claim(uint64_t *h) {
  for (int i = 0; i < 8; i++) {
    uint64_t id = new_id();
    ch_ent_t *e = &ch.tab[id & ch.tab_mask];
    uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
    if (k == CH_BUSY) continue;
    if ((k & CH_OPEN) && ((id - (k & CH_ID_MASK)) & CH_ID_MASK) < 4 * (ch.tab_mask + 1)) continue;
    if (!atomic_compare_exchange_strong_explicit(&e->key, &k, CH_BUSY, memory_order_acq_rel, memory_order_relaxed))
      continue;
    *h = (CH_TAG << 56) | id;
    return e;
  }
  return NULL;
}

/* Reads the entry of chain handle h (seqlock: the key before and after the fields). */
static int lookup(uint64_t h, uint64_t *ours, uint64_t *theirs, uint32_t *fwd, ch_ent_t **ep) {
  ch_ent_t *e = &ch.tab[h & ch.tab_mask];
  if ((atomic_load_explicit(&e->key, memory_order_acquire) & ~CH_OPEN) != h) return 0;
  *ours = atomic_load_explicit(&e->ours, memory_order_relaxed);
  *theirs = atomic_load_explicit(&e->theirs, memory_order_relaxed);
  *fwd = atomic_load_explicit(&e->fwd, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  if ((atomic_load_explicit(&e->key, memory_order_relaxed) & ~CH_OPEN) != h) return 0;
  if (ep) *ep = e;
  return 1;
}

/* A parent (or parentGroup) as NCCL passes it, for each side. */
static void translate(void *p, void **op, void **tp) {
  uint64_t h = (uint64_t)(uintptr_t)p;
  *op = *tp = NULL;
  if (!h || is_null_handle(h)) return;
  if ((h >> 56) != CH_TAG) { /* ncclscope's own handle: the chained plugin did not get the parent */
    *op = p;
    return;
  }
  uint64_t o, t;
  uint32_t f;
  if (!lookup(h, &o, &t, &f, NULL)) {
    atomic_fetch_add_explicit(&ch.parent_lost, 1, memory_order_relaxed);
    return;
  }
  *op = (void *)(uintptr_t)o;
  *tp = (void *)(uintptr_t)t;
}

/* ------------------------------------------------------------------ contexts */

static uint64_t ctx_make(uint32_t idx) {
  return (CH_CTX_TAG << 56) | ((uint64_t)((uint32_t)ncs_g.pid & 0xFFFFFF) << 32) |
         ((uint64_t)(atomic_load(&ncs_g.epoch) & 0xFF) << 24) | (idx & 0xFFFFFF);
}

/* The chain's communicator behind a context NCCL passes, or NULL (ncclscope's own context, a
 * foreign one from PXN, NULL, garbage). */
static ch_comm_t *ctx_comm(void *ctx) {
  uint64_t v = (uint64_t)(uintptr_t)ctx;
  if ((v >> 56) != CH_CTX_TAG || ((v >> 32) & 0xFFFFFF) != ((uint32_t)ncs_g.pid & 0xFFFFFF) ||
      ((v >> 24) & 0xFF) != (atomic_load_explicit(&ncs_g.epoch, memory_order_relaxed) & 0xFF))
    return NULL;
  uint32_t idx = v & 0xFFFFFF;
  uint32_t n = atomic_load_explicit(&ch.ncomms, memory_order_acquire);
  return idx < n && idx < ch.max_comms ? &ch.comms[idx] : NULL;
}

/* ------------------------------------------------------------------ load, init, finalize */

int ncs_chain_load_locked(int abi) {
  if (ch.tried) return atomic_load(&ncs_g.chain_on);
  ch.tried = 1;
  const char *path = ncs_g.cfg.chain;
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CHAIN: cannot load '%s' (%s); nothing is chained", path, dlerror());
    return 0;
  }
  /* ncclscope itself, by this name or another (a copy, a link, another build): it would read the
   * same NCCLSCOPE_CHAIN and forward to itself until the stack runs out */
  const char *id = dlsym(lib, NCS_IDENTITY_SYMBOL);
  if (id) {
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CHAIN: '%s' is ncclscope (%s; it exports %s: \"%.64s\"), refused: "
            "ncclscope chained to ncclscope would forward to itself without end; nothing is chained",
            path, id == ncclscopePluginIdentity ? "this very library" : "another copy or build",
            NCS_IDENTITY_SYMBOL, id);
    dlclose(lib);
    return 0;
  }
  int m = 0;
  void *sym = NULL;
  for (m = abi; m >= 1 && !sym; m--) {
    char name[32];
    snprintf(name, sizeof name, "ncclProfiler_v%d", m);
    sym = dlsym(lib, name);
  }
  m++; /* the loop stepped one past the version found */
  int ok = sym != NULL && (m == abi || (abi >= 5 && abi <= 7 && m >= 4));
  if (!sym)
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CHAIN: '%s' exports no ncclProfiler_v1..v%d; nothing is chained", path, abi);
  else if (!ok)
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CHAIN: '%s' speaks profiler ABI v%d and NCCL v%d; this pair is not "
                          "supported (docs/chain.md); nothing is chained", path, m, abi);
  /* every version's struct starts with name, init, startEvent, stopEvent, recordEventState, finalize */
  const ncs_profiler_v1_t *p = sym;
  if (ok && (!p->init || !p->startEvent)) {
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CHAIN: '%s' has a NULL init or startEvent; nothing is chained", path);
    ok = 0;
  }
  if (ok) {
    ch.tab = calloc(ncs_g.cfg.chain_slots, sizeof *ch.tab);
    ch.comms = calloc(ncs_g.cfg.max_comms, sizeof *ch.comms);
    if (!ch.tab || !ch.comms) {
      ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CHAIN: out of memory for %u handle slots; nothing is chained",
              ncs_g.cfg.chain_slots);
      free(ch.tab), free(ch.comms);
      ch.tab = NULL, ch.comms = NULL;
      ok = 0;
    }
  }
  if (!ok) {
    dlclose(lib);
    return 0;
  }
  ch.lib = lib;
  ch.abi = abi;
  ch.their_abi = m;
  ch.api.v6 = sym; /* read as version m's struct (ch_api_t) */
  ch.tab_mask = ncs_g.cfg.chain_slots - 1;
  ch.max_comms = ncs_g.cfg.max_comms;
  /* handles of an earlier load (NCCL reloads plugins) must not match: ids start at random */
  uint64_t t = ncs_mono_ns();
  atomic_store(&ch.next_id, ((t * 0x9E3779B97F4A7C15ull) >> 20) & (CH_ID_MASK >> 1));
  if (ncs_g.cfg.kernel_sample > 1) {
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_SAMPLE=%u is ignored with NCCLSCOPE_CHAIN: NCCL's mask is shared "
                          "with the chained plugin; recording every operation", ncs_g.cfg.kernel_sample);
    ncs_g.cfg.kernel_sample = 1;
    atomic_store(&ncs_g.kernel_sample, 1);
  }
  atomic_store(&ncs_g.chain_on, 1);
  ncs_hot_set(0, 0, 0); /* every call takes the slow paths from now on */
  ncs_log(NCS_LOG_INFO, "NCCLSCOPE_CHAIN: '%s' (%s) chained through ncclProfiler_v%d, NCCL speaks v%d", path,
          p->name ? p->name : "?", m, abi);
  return 1;
}

static ncs_result_t their_init(void **tctx, uint64_t comm_id, const char *name, int nn, int nr, int r,
                               ncs_logger_t logfn) {
  int *tm = (int *)&ch.theirs_mask; /* one int for all its communicators, as NCCL's */
  switch (ch.their_abi) {
  case 7: return ch.api.v7->init(tctx, comm_id, tm, name, nn, nr, r, logfn);
  case 6:
  case 5: return ch.api.v6->init(tctx, comm_id, tm, name, nn, nr, r, logfn);
  case 4: return ch.api.v4->init(tctx, tm, name, comm_id, nn, nr, r, logfn);
  case 3: return ch.api.v3->init(tctx, tm);
  case 2: return ch.api.v2->init(tctx, tm);
  default: return ch.api.v1->init(tctx, tm);
  }
}

ncs_result_t ncs_chain_init(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncs_logger_t logfn, int abi) {
  void *ours = NULL, *theirs = NULL;
  ncs_init_rec(&ours, comm_id, (int *)&ch.ours_mask, name, nnodes, nranks, rank, logfn, abi);
  uint32_t idx = atomic_load(&ch.ncomms);
  while (idx < ch.max_comms && !atomic_compare_exchange_weak(&ch.ncomms, &idx, idx + 1)) {
  }
  if (idx >= ch.max_comms) {
    /* no room: this communicator is ncclscope's alone (its context is ncclscope's own) */
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CHAIN: more than NCCLSCOPE_MAX_COMMS=%u communicators; the chained "
                          "plugin does not get this one", ch.max_comms);
    *context = ours;
  } else {
    ch_comm_t *c = &ch.comms[idx];
    ncs_result_t rc = their_init(&theirs, comm_id, name, nnodes, nranks, rank, logfn);
    c->ours = ours;
    c->theirs = theirs;
    c->ok = rc == NCS_SUCCESS;
    if (rc != NCS_SUCCESS) {
      atomic_fetch_add(&ch.init_failed, 1);
      ncs_log(NCS_LOG_WARN, "NCCLSCOPE_CHAIN: the chained plugin's init failed (%d) for communicator "
                            "%llx; it gets no events of it", rc, (unsigned long long)comm_id);
    }
    *context = (void *)(uintptr_t)ctx_make(idx);
  }
  if (mask) {
    atomic_store(&ch.nccl_mask, mask);
    uint32_t t = (uint32_t)atomic_load(&ch.theirs_mask);
    atomic_store(&ch.theirs_seen, t);
    __atomic_store_n(mask, (int)((uint32_t)atomic_load(&ch.ours_mask) | theirs_eff()), __ATOMIC_RELAXED);
  }
  return NCS_SUCCESS;
}

ncs_result_t ncs_chain_finalize(void *context) {
  ch_comm_t *c = ctx_comm(context);
  if (!c) return ncs_finalize_rec(context);
  if (c->ours) ncs_finalize_rec(c->ours);
  /* NCCL finalizes only a non-NULL context, and a plugin whose init failed is not finalized */
  if (c->ok && c->theirs && ch.api.v1->finalize) {
    ncs_result_t rc = ch.api.v1->finalize(c->theirs); /* the same signature in every version */
    if (rc != NCS_SUCCESS) atomic_fetch_add(&ch.errors, 1);
  }
  /* c->ok stays: a shared proxy thread keeps starting ProxyCtrl with its creator's context after
   * the creator's finalize, and NCCL would pass them to the chained plugin too (research 1.4) */
  return NCS_SUCCESS;
}

void ncs_chain_unload(void) {
  if (!ch.lib) return;
  unsigned long long full = atomic_load(&ch.full), lost = atomic_load(&ch.parent_lost),
                     stale = atomic_load(&ch.stale), err = atomic_load(&ch.errors),
                     fail = atomic_load(&ch.init_failed);
  ncs_log(full || lost || stale || err || fail ? NCS_LOG_WARN : NCS_LOG_INFO,
          "NCCLSCOPE_CHAIN: table_full=%llu parent_lost=%llu stale=%llu errors=%llu init_failed=%llu", full,
          lost, stale, err, fail);
  atomic_store(&ncs_g.chain_on, 0);
  dlclose(ch.lib);
  free(ch.tab);
  free(ch.comms);
  memset(&ch, 0, sizeof ch);
}

/* ------------------------------------------------------------------ events */

/* Every descriptor version has the type first, parentObj at 8, rank at 16 and the union at 24;
 * v5+'s type is 64-bit, older ones' 8-bit. */
_Static_assert(offsetof(ncs_descr_v7_t, parentObj) == 8 && offsetof(ncs_descr_v6_t, parentObj) == 8 && offsetof(ncs_descr_v4_t, parentObj) == 8 &&
                   offsetof(ncs_descr_v3_t, parentObj) == 8 && offsetof(ncs_descr_v2_t, parentObj) == 8 &&
                   offsetof(ncs_descr_v1_t, parentObj) == 8,
               "parentObj");
_Static_assert(offsetof(ncs_descr_v7_t, proxyOp.pid) == offsetof(ncs_descr_v4_t, proxyOp.pid) &&
                   offsetof(ncs_descr_v7_t, coll.parentGroup) == offsetof(ncs_descr_v6_t, coll.parentGroup) &&
                   offsetof(ncs_descr_v7_t, p2p.parentGroup) == offsetof(ncs_descr_v6_t, p2p.parentGroup) &&
                   sizeof(ncs_descr_v6_t) <= sizeof(ncs_descr_v7_t) &&
                   offsetof(ncs_descr_v6_t, proxyOp.pid) == offsetof(ncs_descr_v4_t, proxyOp.pid) &&
                   offsetof(ncs_descr_v4_t, proxyOp.pid) == offsetof(ncs_descr_v1_t, proxyOp.pid) &&
                   offsetof(ncs_descr_v3_t, proxyOp.pid) == offsetof(ncs_descr_v1_t, proxyOp.pid) &&
                   offsetof(ncs_descr_v2_t, proxyOp.pid) == offsetof(ncs_descr_v1_t, proxyOp.pid),
               "proxyOp.pid");

typedef union {
  ncs_descr_v7_t v7;
  ncs_descr_v6_t v6;
  ncs_descr_v4_t v4;
  ncs_descr_v3_t v3;
  ncs_descr_v2_t v2;
  ncs_descr_v1_t v1;
} ch_descr_t;

static size_t descr_size(int abi) {
  switch (abi) {
  case 1: return sizeof(ncs_descr_v1_t);
  case 2: return sizeof(ncs_descr_v2_t);
  case 3: return sizeof(ncs_descr_v3_t);
  case 4: return sizeof(ncs_descr_v4_t);
  case 5:
  case 6: return sizeof(ncs_descr_v6_t);
  default: return sizeof(ncs_descr_v7_t);
  }
}

static int type_of(const ch_descr_t *d, int abi) {
  uint64_t ty = abi >= 5 ? d->v6.type : d->v1.type;
  if (!ty || (ty & (ty - 1)) || ty > NCS_EV_KERNEL_PHASE) return -1;
  return __builtin_ctzll(ty);
}

/* The chained plugin's descriptor from NCCL's (a copy, with its parents); 0 when version M has no
 * such event. */
static int their_descr(ch_descr_t *out, const ch_descr_t *in, int t, void *parent, void *group) {
  if (ch.their_abi == ch.abi) {
    memcpy(out, in, descr_size(ch.abi));
    out->v6.parentObj = parent;
    if (ch.abi >= 5 && t == NCS_T_COLL) out->v6.coll.parentGroup = group;
    if (ch.abi >= 5 && t == NCS_T_P2P) out->v6.p2p.parentGroup = group;
    return 1;
  }
  if (!((abi_types(ch.their_abi) >> t) & 1)) return 0;
  if (ch.their_abi >= 5) { /* v5 and v6 are v7's prefix (NCCL v6 or v7, plugin v5 or v6) */
    memcpy(out, in, sizeof(ncs_descr_v6_t));
    out->v6.parentObj = parent;
    if (t == NCS_T_COLL) out->v6.coll.parentGroup = group;
    if (t == NCS_T_P2P) out->v6.p2p.parentGroup = group;
    return 1;
  }
  /* plugin v4 under NCCL v5/v6: v4's members are v6's without parentGroup, at the same offsets;
   * the Coll/P2p parent is the Group (NCCL's v4 adapter) */
  memset(out, 0, sizeof(ncs_descr_v4_t));
  out->v4.type = (uint8_t)in->v6.type;
  out->v4.rank = in->v6.rank;
  memcpy((char *)out + offsetof(ncs_descr_v4_t, coll), (const char *)in + offsetof(ncs_descr_v6_t, coll),
         sizeof(ncs_descr_v4_t) - offsetof(ncs_descr_v4_t, coll));
  out->v4.parentObj = t == NCS_T_COLL || t == NCS_T_P2P ? group : parent;
  return 1;
}
_Static_assert(offsetof(ncs_descr_v4_t, coll) == offsetof(ncs_descr_v6_t, coll) &&
                   offsetof(ncs_descr_v4_t, coll.proto) == offsetof(ncs_descr_v6_t, coll.proto) &&
                   offsetof(ncs_descr_v4_t, p2p.nChannels) == offsetof(ncs_descr_v6_t, p2p.nChannels) &&
                   offsetof(ncs_descr_v4_t, kernelCh.pTimer) == offsetof(ncs_descr_v6_t, kernelCh.pTimer) &&
                   offsetof(ncs_descr_v4_t, netPlugin.data) == offsetof(ncs_descr_v6_t, netPlugin.data) &&
                   sizeof(ncs_descr_v4_t) <= sizeof(ncs_descr_v6_t),
               "v4 members at v6's offsets");

static ncs_result_t their_start(void *ctx, void **h, ch_descr_t *d) {
  switch (ch.their_abi) {
  case 7: return ch.api.v7->startEvent(ctx, h, &d->v7);
  case 6:
  case 5: return ch.api.v6->startEvent(ctx, h, &d->v6);
  case 4: return ch.api.v4->startEvent(ctx, h, &d->v4);
  case 3: return ch.api.v3->startEvent(ctx, h, &d->v3);
  case 2: return ch.api.v2->startEvent(ctx, h, &d->v2);
  default: return ch.api.v1->startEvent(ctx, h, &d->v1);
  }
}

static void their_end(void *h, int kind, int state, void *args) {
  ncs_result_t rc = NCS_SUCCESS;
  if (kind == NCS_REC_STOP) {
    if (ch.api.v1->stopEvent) rc = ch.api.v1->stopEvent(h); /* the same signature in every version */
  } else if (state_passes(state)) {
    switch (ch.their_abi) {
    case 7:
      if (ch.api.v7->recordEventState) rc = ch.api.v7->recordEventState(h, state, args);
      break;
    case 6:
    case 5:
      if (ch.api.v6->recordEventState) rc = ch.api.v6->recordEventState(h, state, args);
      break;
    case 4:
      if (ch.api.v4->recordEventState) rc = ch.api.v4->recordEventState(h, state, args);
      break;
    default: /* v1-v3 share the state arguments (ncs_args_v1_t) and the signature */
      if (ch.api.v1->recordEventState) rc = ch.api.v1->recordEventState(h, state, args);
      break;
    }
  }
  if (rc != NCS_SUCCESS) atomic_fetch_add_explicit(&ch.errors, 1, memory_order_relaxed);
}

ncs_result_t ncs_chain_start(void *ctx, void **eh, void *descr, ncs_start_rec_fn rec) {
  if (!eh || !descr) return rec(ctx, eh, descr); /* ncclscope's answer to a malformed call */
  const ch_descr_t *d = descr;
  int n = ch.abi, t = type_of(d, n);
  if (t < 0) return rec(ctx, eh, descr);
  mask_refresh();
  uint32_t fo = (trigger[t] & v7_mask((uint32_t)atomic_load_explicit(&ch.ours_mask, memory_order_relaxed))) ? F_OURS : 0;
  uint32_t ft = (trigger[t] & theirs_eff()) ? F_THEIRS : 0;
  void *octx = ctx, *tctx = ctx;
  ch_comm_t *c = ctx_comm(ctx);
  if (c) {
    octx = c->ours, tctx = c->theirs;
    if (!c->ok) ft = 0;
  } else if ((uint64_t)(uintptr_t)ctx >> 56 == NCS_CH_TAG) {
    ft = 0; /* ncclscope's own context: a communicator the chain had no room for */
  }
  /* a PXN ProxyOp carries another process's context and parent: passed as they are to both */
  int pxn = t == NCS_T_PROXY_OP && d->v1.proxyOp.pid != ncs_g.pid;
  void *op = d->v1.parentObj, *tp = op, *og = NULL, *tg = NULL;
  if (!pxn) translate(d->v1.parentObj, &op, &tp);
  if (n >= 5 && (t == NCS_T_COLL || t == NCS_T_P2P))
    translate(t == NCS_T_COLL ? d->v6.coll.parentGroup : d->v6.p2p.parentGroup, &og, &tg);
  if (t == NCS_T_CE_SYNC || t == NCS_T_CE_BATCH) { /* NCCL starts them only under a non-NULL CeColl */
    if (!op) fo = 0;
    if (!tp) ft = 0;
  }
  ch_descr_t td;
  if (ft && !their_descr(&td, d, t, tp, tg)) ft = 0;
  uint64_t h = 0;
  ch_ent_t *e = NULL;
  if (ft && !(e = claim(&h))) {
    ft = 0;
    atomic_fetch_add_explicit(&ch.full, 1, memory_order_relaxed);
  }
  void *oh = NULL, *th = NULL;
  if (fo) {
    ch_descr_t od;
    memcpy(&od, d, descr_size(n));
    od.v1.parentObj = op;
    if (n >= 5 && t == NCS_T_COLL) od.v6.coll.parentGroup = og;
    if (n >= 5 && t == NCS_T_P2P) od.v6.p2p.parentGroup = og;
    rec(octx, &oh, &od);
  }
  if (ft && their_start(tctx, &th, &td) != NCS_SUCCESS)
    atomic_fetch_add_explicit(&ch.errors, 1, memory_order_relaxed);
  if (!ft) {
    *eh = fo ? oh : (void *)&ch_null[0];
    return NCS_SUCCESS;
  }
  /* NCCL skips the STOP/STATEs of a NULL handle, but for NetPlugin events (research notes 3.10) */
  if (t != NCS_T_NET_PLUGIN) {
    if (!oh) fo = 0;
    if (!th) ft = 0;
  }
  if (!oh && !th) { /* nothing to map: the STOP/STATEs go to whoever gets them, with NULL */
    atomic_store_explicit(&e->key, 0, memory_order_release);
    *eh = &ch_null[fo | ft];
    return NCS_SUCCESS;
  }
  atomic_store_explicit(&e->ours, (uint64_t)(uintptr_t)oh, memory_order_relaxed);
  atomic_store_explicit(&e->theirs, (uint64_t)(uintptr_t)th, memory_order_relaxed);
  atomic_store_explicit(&e->fwd, fo | ft, memory_order_relaxed);
  atomic_store_explicit(&e->key, h | CH_OPEN, memory_order_release);
  *eh = (void *)(uintptr_t)h;
  return NCS_SUCCESS;
}

void ncs_chain_end(void *eh, int kind, int state, uint64_t a0, uint64_t a1, void *args) {
  uint64_t h = (uint64_t)(uintptr_t)eh;
  if (is_null_handle(h)) {
    uint32_t f = (uint32_t)(h - (uint64_t)(uintptr_t)ch_null);
    if (f & F_OURS) ncs_end_rec(NULL, kind, state, a0, a1);
    if (f & F_THEIRS) their_end(NULL, kind, state, args);
    return;
  }
  if ((h >> 56) != CH_TAG) { /* ncclscope's own handle (or NULL, or garbage: ncclscope counts it) */
    ncs_end_rec(eh, kind, state, a0, a1);
    return;
  }
  uint64_t o, t;
  uint32_t f;
  ch_ent_t *e;
  if (!lookup(h, &o, &t, &f, &e)) { /* reused or never ours: ncclscope counts it as a bad handle */
    atomic_fetch_add_explicit(&ch.stale, 1, memory_order_relaxed);
    ncs_end_rec(eh, kind, state, a0, a1);
    return;
  }
  if (f & F_OURS) ncs_end_rec((void *)(uintptr_t)o, kind, state, a0, a1);
  if (f & F_THEIRS) their_end((void *)(uintptr_t)t, kind, state, args);
  if (kind == NCS_REC_STOP) { /* closed, but still readable as a parent */
    uint64_t k = h | CH_OPEN;
    atomic_compare_exchange_strong_explicit(&e->key, &k, h, memory_order_relaxed, memory_order_relaxed);
  }
}
