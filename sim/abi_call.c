/* abi_call.c - load a profiler plugin and call it the way NCCL 2.23 .. 2.31 does.
 *
 * NCCL's core builds a v7 descriptor (2.31). A v7 plugin gets it as is; older plugins get it
 * through an adapter that copies what their version knows and drops the rest (R§2.8; 2.31's v6
 * shim drops KernelPhase, its state and the appended fields). The adapters here behave like
 * NCCL's: which events and states they drop, whether *eHandle is written for a dropped event, the
 * v1 enum conversion, the v5 adapter's uninitialised descriptor bytes. Every call that reaches
 * the plugin is counted in sim_cnt.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

sim_calls_t sim_calls;

static void *g_lib;
static int g_abi;
static const char *g_name;
static ncs_profiler_v7_t *g_v7;
static ncs_profiler_v6_t *g_v6; /* also v5: same table shape */
static ncs_profiler_v4_t *g_v4;
static ncs_profiler_v3_t *g_v3;
static ncs_profiler_v2_t *g_v2;
static ncs_profiler_v1_t *g_v1;

/* NCCL's process-global ncclProfilerEventMask: every init writes the same int (R§1.4). */
static int g_mask;

const char *const sim_type_names[NCS_NTYPES] = {
    "Group",     "Coll",         "P2p",       "ProxyOp",  "ProxyStep",
    "ProxyCtrl", "KernelCh",     "NetPlugin", "GroupApi", "CollApi",
    "P2pApi",    "KernelLaunch", "CeColl",    "CeSync",   "CeBatch",    "KernelPhase"};

unsigned sim_type_index(uint64_t type_bit) { return (unsigned)__builtin_ctzll(type_bit); }

int sim_mask(void) { return __atomic_load_n(&g_mask, __ATOMIC_RELAXED); }

/* --toggle-kch: what a naive sampling plugin does to NCCL's mask between groups. */
void sim_mask_kernel_ch(int on) {
  if (on)
    __atomic_fetch_or(&g_mask, NCS_EV_KERNEL_CH, __ATOMIC_RELAXED);
  else
    __atomic_fetch_and(&g_mask, ~NCS_EV_KERNEL_CH, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ activation (R§3.1) */
int sim_active(int mask, unsigned type) {
  static const int need[NCS_NTYPES] = {
      [SIM_T_GROUP_API] = NCS_EV_ALL_V6 & ~NCS_EV_PROXY_CTRL, /* not KernelPhase: it needs KernelCh */
      [SIM_T_COLL_API] = NCS_EV_COLL_API | NCS_EV_COLL | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP |
                         NCS_EV_KERNEL_CH | NCS_EV_NET_PLUGIN | NCS_EV_CE_COLL | NCS_EV_CE_SYNC |
                         NCS_EV_CE_BATCH,
      [SIM_T_P2P_API] = NCS_EV_P2P_API | NCS_EV_P2P | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP |
                        NCS_EV_KERNEL_CH | NCS_EV_NET_PLUGIN,
      [SIM_T_KERNEL_LAUNCH] = NCS_EV_KERNEL_LAUNCH,
      [SIM_T_GROUP] = NCS_EV_GROUP | NCS_EV_COLL | NCS_EV_P2P | NCS_EV_PROXY_OP |
                      NCS_EV_PROXY_STEP | NCS_EV_KERNEL_CH | NCS_EV_NET_PLUGIN,
      [SIM_T_COLL] = NCS_EV_COLL | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP | NCS_EV_KERNEL_CH |
                     NCS_EV_NET_PLUGIN,
      [SIM_T_P2P] = NCS_EV_P2P | NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP | NCS_EV_KERNEL_CH |
                    NCS_EV_NET_PLUGIN,
      [SIM_T_PROXY_OP] = NCS_EV_PROXY_OP | NCS_EV_PROXY_STEP | NCS_EV_NET_PLUGIN,
      [SIM_T_PROXY_STEP] = NCS_EV_PROXY_STEP | NCS_EV_NET_PLUGIN,
      [SIM_T_PROXY_CTRL] = NCS_EV_PROXY_CTRL,
      [SIM_T_KERNEL_CH] = NCS_EV_KERNEL_CH,
      [SIM_T_NET_PLUGIN] = NCS_EV_NET_PLUGIN,
      [SIM_T_CE_COLL] = NCS_EV_CE_COLL | NCS_EV_CE_SYNC | NCS_EV_CE_BATCH,
      [SIM_T_CE_SYNC] = NCS_EV_CE_SYNC,
      [SIM_T_CE_BATCH] = NCS_EV_CE_BATCH,
      /* posted only for work with KernelCh, which NCCL 2.31 turns on for it at init */
      [SIM_T_KERNEL_PHASE] = NCS_EV_KERNEL_PHASE,
  };
  return type < NCS_NTYPES && (mask & need[type]) != 0;
}

/* ------------------------------------------------------------ what each version forwards */
static int is_api(unsigned t) { return t >= SIM_T_GROUP_API && t <= SIM_T_KERNEL_LAUNCH; }
static int is_ce(unsigned t) { return t >= SIM_T_CE_COLL && t <= SIM_T_CE_BATCH; }

int sim_abi_has_type(int abi, unsigned t) {
  if (t >= NCS_NTYPES) return 0;
  if (t == SIM_T_KERNEL_PHASE) return abi >= 7;
  if (abi >= 6) return 1;
  if (abi == 5) return !is_ce(t);
  if (is_api(t) || is_ce(t)) return 0;
  if (abi >= 3) return 1;
  return t != SIM_T_KERNEL_CH && t != SIM_T_NET_PLUGIN; /* v1, v2 */
}

static int is_ctrl_state(int s) {
  return s >= NCS_ST_PROXY_CTRL_IDLE && s <= NCS_ST_PROXY_CTRL_APPEND_END;
}
static int is_step_state_v1(int s) {
  return s >= NCS_ST_PROXY_STEP_SEND_GPU_WAIT && s <= NCS_ST_PROXY_STEP_RECV_GPU_WAIT;
}

int sim_abi_has_state(int abi, int s) {
  if (abi >= 7) return 1;
  if (abi == 6) return s != NCS_ST_KERNEL_PHASE_STOP;
  if (abi == 5) return s < NCS_ST_CE_COLL_START;
  if (abi == 4)
    return is_ctrl_state(s) || is_step_state_v1(s) || s == NCS_ST_PROXY_OP_IN_PROGRESS_V4 ||
           s == NCS_ST_PROXY_STEP_SEND_PEER_WAIT_V4 || s == NCS_ST_NET_PLUGIN_UPDATE ||
           s == NCS_ST_KERNEL_CH_STOP;
  return is_ctrl_state(s) || is_step_state_v1(s); /* v1 .. v3 */
}

/* ------------------------------------------------------------ adapters: v6, v5 */
/* Every v6 member is a prefix of its v7 member (the same offsets, v7 appends): copy a member's v6
 * size, which leaves v7's appended fields out. Group and ProxyCtrl have no fields. */
static void copy_v6(ncs_descr_v6_t *o, const ncs_descr_v7_t *d, unsigned t) {
#define CP(m) memcpy(&o->m, &d->m, sizeof o->m)
  o->type = d->type;
  o->parentObj = d->parentObj;
  o->rank = d->rank;
  switch (t) {
  case SIM_T_GROUP_API: CP(groupApi); break;
  case SIM_T_COLL_API: CP(collApi); break;
  case SIM_T_P2P_API: CP(p2pApi); break;
  case SIM_T_KERNEL_LAUNCH: CP(kernelLaunch); break;
  case SIM_T_COLL: CP(coll); break;
  case SIM_T_P2P: CP(p2p); break;
  case SIM_T_PROXY_OP: CP(proxyOp); break;
  case SIM_T_PROXY_STEP: CP(proxyStep); break;
  case SIM_T_KERNEL_CH: CP(kernelCh); break;
  case SIM_T_NET_PLUGIN: CP(netPlugin); break;
  case SIM_T_CE_COLL: CP(ceColl); break;
  case SIM_T_CE_SYNC: CP(ceCollSync); break;
  case SIM_T_CE_BATCH: CP(ceCollBatch); break;
  default: break;
  }
#undef CP
}

/* v6: NCCL 2.29-2.30 build this descriptor themselves; 2.31's shim copies into a zeroed one */
static ncs_result_t v6_start(void *ctx, void **eh, ncs_descr_v7_t *d) {
  unsigned t = sim_type_index(d->type);
  if (!sim_abi_has_type(6, t)) { /* KernelPhase: 2.31's shim writes NULL */
    *eh = NULL;
    return NCS_SUCCESS;
  }
  ncs_descr_v6_t d6;
  memset(&d6, 0, sizeof d6);
  copy_v6(&d6, d, t);
  return g_v6->startEvent(ctx, eh, &d6);
}

static ncs_result_t v6_record(void *eh, ncs_state_t s, ncs_args_v7_t *a) {
  if (!sim_abi_has_state(6, s)) return NCS_SUCCESS;
  return g_v6->recordEventState(eh, s, a);
}

static ncs_result_t v5_start(void *ctx, void **eh, ncs_descr_v7_t *d) {
  unsigned t = sim_type_index(d->type);
  if (!sim_abi_has_type(5, t)) return NCS_SUCCESS; /* *eh not written, as NCCL's adapter */
  /* NCCL copies into an uninitialised local: bytes of the union it does not copy are garbage. */
  ncs_descr_v5_t d5;
  memset(&d5, 0xA5, sizeof d5);
  copy_v6(&d5, d, t);
  return g_v6->startEvent(ctx, eh, &d5);
}

static ncs_result_t v5_record(void *eh, ncs_state_t s, ncs_args_v7_t *a) {
  if (!sim_abi_has_state(5, s)) return NCS_SUCCESS;
  return g_v6->recordEventState(eh, s, a);
}

/* ------------------------------------------------------------ adapters: v4 */
static ncs_result_t v4_start(void *ctx, void **eh, ncs_descr_v7_t *d) {
  unsigned t = sim_type_index(d->type);
  if (!sim_abi_has_type(4, t)) return NCS_SUCCESS; /* API/CE: *eh not written (R§3.10) */
  ncs_descr_v4_t d4;
  memset(&d4, 0, sizeof d4);
  d4.type = (uint8_t)d->type;
  d4.parentObj = d->parentObj;
  d4.rank = d->rank;
  switch (t) {
  case SIM_T_COLL:
    d4.parentObj = d->coll.parentGroup; /* before v5 a Coll hangs under its Group */
    d4.coll.seqNumber = d->coll.seqNumber;
    d4.coll.func = d->coll.func;
    d4.coll.sendBuff = d->coll.sendBuff;
    d4.coll.recvBuff = d->coll.recvBuff;
    d4.coll.count = d->coll.count;
    d4.coll.root = d->coll.root;
    d4.coll.datatype = d->coll.datatype;
    d4.coll.nChannels = d->coll.nChannels;
    d4.coll.nWarps = d->coll.nWarps;
    d4.coll.algo = d->coll.algo;
    d4.coll.proto = d->coll.proto;
    break;
  case SIM_T_P2P:
    d4.parentObj = d->p2p.parentGroup;
    d4.p2p.func = d->p2p.func;
    d4.p2p.buff = d->p2p.buff;
    d4.p2p.datatype = d->p2p.datatype;
    d4.p2p.count = d->p2p.count;
    d4.p2p.peer = d->p2p.peer;
    d4.p2p.nChannels = d->p2p.nChannels;
    break;
  case SIM_T_PROXY_OP:
    d4.proxyOp.pid = d->proxyOp.pid;
    d4.proxyOp.channelId = d->proxyOp.channelId;
    d4.proxyOp.peer = d->proxyOp.peer;
    d4.proxyOp.nSteps = d->proxyOp.nSteps;
    d4.proxyOp.chunkSize = d->proxyOp.chunkSize;
    d4.proxyOp.isSend = d->proxyOp.isSend;
    break;
  case SIM_T_PROXY_STEP: d4.proxyStep.step = d->proxyStep.step; break;
  case SIM_T_KERNEL_CH:
    d4.kernelCh.channelId = d->kernelCh.channelId;
    d4.kernelCh.pTimer = d->kernelCh.pTimer;
    break;
  case SIM_T_NET_PLUGIN:
    d4.netPlugin.id = d->netPlugin.id;
    d4.netPlugin.data = d->netPlugin.data;
    break;
  default: break;
  }
  return g_v4->startEvent(ctx, eh, &d4);
}

static ncs_result_t v4_record(void *eh, ncs_state_t s, ncs_args_v7_t *a) {
  if (!sim_abi_has_state(4, s)) return NCS_SUCCESS;
  return g_v4->recordEventState(eh, s, a); /* v4 args have the v6 layout */
}

/* ------------------------------------------------------------ adapters: v3, v2 (strings) */
#define COPY_OLD_COMMON(D)                                                                        \
  do {                                                                                            \
    (D).type = (uint8_t)d->type;                                                                  \
    (D).parentObj = d->parentObj;                                                                 \
    (D).rank = d->rank;                                                                           \
  } while (0)

#define COPY_OLD_COLL(D)                                                                          \
  do {                                                                                            \
    (D).parentObj = d->coll.parentGroup;                                                          \
    (D).coll.name = NULL;                                                                         \
    (D).coll.commHash = 0;                                                                        \
    (D).coll.seqNumber = d->coll.seqNumber;                                                       \
    (D).coll.sendBuff = d->coll.sendBuff;                                                         \
    (D).coll.recvBuff = d->coll.recvBuff;                                                         \
    (D).coll.count = d->coll.count;                                                               \
    (D).coll.root = d->coll.root;                                                                 \
    (D).coll.nMaxChannels = d->coll.nChannels;                                                    \
    (D).coll.nWarps = d->coll.nWarps;                                                             \
  } while (0)

#define COPY_OLD_P2P(D)                                                                           \
  do {                                                                                            \
    (D).parentObj = d->p2p.parentGroup;                                                           \
    (D).p2p.name = NULL;                                                                          \
    (D).p2p.commHash = 0;                                                                         \
    (D).p2p.buff = d->p2p.buff;                                                                   \
    (D).p2p.count = d->p2p.count;                                                                 \
    (D).p2p.peer = d->p2p.peer;                                                                   \
  } while (0)

#define COPY_OLD_PROXY(D)                                                                         \
  do {                                                                                            \
    (D).proxyOp.pid = d->proxyOp.pid;                                                             \
    (D).proxyOp.channelId = d->proxyOp.channelId;                                                 \
    (D).proxyOp.peer = d->proxyOp.peer;                                                           \
    (D).proxyOp.nSteps = d->proxyOp.nSteps;                                                       \
    (D).proxyOp.chunkSize = d->proxyOp.chunkSize;                                                 \
    (D).proxyOp.isSend = d->proxyOp.isSend;                                                       \
  } while (0)

static ncs_result_t v3_start(void *ctx, void **eh, ncs_descr_v7_t *d) {
  *eh = NULL; /* the v1..v3 adapters clear the handle first */
  unsigned t = sim_type_index(d->type);
  if (!sim_abi_has_type(3, t)) return NCS_SUCCESS;
  ncs_descr_v3_t d3;
  memset(&d3, 0, sizeof d3);
  COPY_OLD_COMMON(d3);
  switch (t) {
  case SIM_T_COLL:
    COPY_OLD_COLL(d3);
    d3.coll.func = d->coll.func;
    d3.coll.datatype = d->coll.datatype;
    d3.coll.algo = d->coll.algo;
    d3.coll.proto = d->coll.proto;
    break;
  case SIM_T_P2P:
    COPY_OLD_P2P(d3);
    d3.p2p.func = d->p2p.func;
    d3.p2p.datatype = d->p2p.datatype;
    break;
  case SIM_T_PROXY_OP: COPY_OLD_PROXY(d3); break;
  case SIM_T_PROXY_STEP: d3.proxyStep.step = d->proxyStep.step; break;
  case SIM_T_KERNEL_CH: d3.kernelCh.channelId = d->kernelCh.channelId; break;
  case SIM_T_NET_PLUGIN:
    d3.netPlugin.id = d->netPlugin.id;
    d3.netPlugin.data = d->netPlugin.data;
    break;
  default: break;
  }
  return g_v3->startEvent(ctx, eh, &d3);
}

static ncs_result_t v2_start(void *ctx, void **eh, ncs_descr_v7_t *d) {
  *eh = NULL;
  unsigned t = sim_type_index(d->type);
  if (!sim_abi_has_type(2, t)) return NCS_SUCCESS;
  ncs_descr_v2_t d2;
  memset(&d2, 0, sizeof d2);
  COPY_OLD_COMMON(d2);
  switch (t) {
  case SIM_T_COLL:
    COPY_OLD_COLL(d2);
    d2.coll.func = d->coll.func;
    d2.coll.datatype = d->coll.datatype;
    d2.coll.algo = d->coll.algo;
    d2.coll.proto = d->coll.proto;
    d2.coll.trafficBytes = 0;
    break;
  case SIM_T_P2P:
    COPY_OLD_P2P(d2);
    d2.p2p.func = d->p2p.func;
    d2.p2p.datatype = d->p2p.datatype;
    break;
  case SIM_T_PROXY_OP: COPY_OLD_PROXY(d2); break;
  case SIM_T_PROXY_STEP: d2.proxyStep.step = d->proxyStep.step; break;
  default: break;
  }
  return g_v2->startEvent(ctx, eh, &d2);
}

/* ------------------------------------------------------------ adapters: v1 (enums) */
static uint8_t str_to_enum(const char *s, const char *const *names, int n, uint8_t fallback) {
  if (!s) return fallback;
  for (int i = 0; i < n; i++)
    if (names[i] && strcmp(s, names[i]) == 0) return (uint8_t)i;
  return fallback; /* NCCL falls back too: Send, PAT, SIMPLE, Float64 (R§2.8) */
}

/* Names NCCL's v1 adapter recognises, at their v1 enum value. ncclUint8 is absent because
 * NCCL turns it into "Unknown" before the adapter sees it (R§2.9). */
static const char *const v1_dtype_names[SIM_NDTYPES] = {
    "ncclInt8", NULL, "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64", "ncclFloat16",
    "ncclFloat32", "ncclFloat64", "ncclBfloat16"};

static ncs_result_t v1_start(void *ctx, void **eh, ncs_descr_v7_t *d) {
  *eh = NULL;
  unsigned t = sim_type_index(d->type);
  if (!sim_abi_has_type(1, t)) return NCS_SUCCESS;
  ncs_descr_v1_t d1;
  memset(&d1, 0, sizeof d1);
  COPY_OLD_COMMON(d1);
  switch (t) {
  case SIM_T_COLL:
    COPY_OLD_COLL(d1);
    d1.coll.func = str_to_enum(d->coll.func, sim_func_str, SIM_NFUNCS, F_SEND);
    d1.coll.datatype = str_to_enum(d->coll.datatype, v1_dtype_names, SIM_NDTYPES, D_FLOAT64);
    d1.coll.algo = str_to_enum(d->coll.algo, sim_algo_str, SIM_NALGOS, A_PAT);
    d1.coll.proto = str_to_enum(d->coll.proto, sim_proto_str, SIM_NPROTOS, P_SIMPLE);
    d1.coll.op = 0;
    d1.coll.trafficBytes = 0;
    break;
  case SIM_T_P2P:
    COPY_OLD_P2P(d1);
    d1.p2p.func = str_to_enum(d->p2p.func, sim_func_str, SIM_NFUNCS, F_SEND);
    d1.p2p.datatype = str_to_enum(d->p2p.datatype, v1_dtype_names, SIM_NDTYPES, D_FLOAT64);
    break;
  case SIM_T_PROXY_OP: COPY_OLD_PROXY(d1); break;
  case SIM_T_PROXY_STEP: d1.proxyStep.step = d->proxyStep.step; break;
  default: break;
  }
  return g_v1->startEvent(ctx, eh, &d1);
}

/* v1..v3 state args: ProxyCtrl keeps appendedProxyOps; the ProxyStep states go out with zeroed
 * args (NCCL does not translate transSize for them). */
static ncs_result_t old_record(int abi, void *eh, ncs_state_t s, ncs_args_v7_t *a) {
  if (!sim_abi_has_state(abi, s)) return NCS_SUCCESS;
  ncs_args_v1_t o;
  memset(&o, 0, sizeof o);
  if (is_ctrl_state(s) && a) o.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
  switch (abi) {
  case 3: return g_v3->recordEventState(eh, s, &o);
  case 2: return g_v2->recordEventState(eh, s, &o);
  default: return g_v1->recordEventState(eh, s, &o);
  }
}
static ncs_result_t v3_record(void *eh, ncs_state_t s, ncs_args_v7_t *a) {
  return old_record(3, eh, s, a);
}
static ncs_result_t v2_record(void *eh, ncs_state_t s, ncs_args_v7_t *a) {
  return old_record(2, eh, s, a);
}
static ncs_result_t v1_record(void *eh, ncs_state_t s, ncs_args_v7_t *a) {
  return old_record(1, eh, s, a);
}

/* ------------------------------------------------------------ the built-in no-op plugin */
/* "--plugin none": a table of no-op functions for every version, bound like a real plugin, so
 * the flood benchmark measures the same indirections (and adapters, with --abi) minus the
 * plugin's work. Its init asks for every event the version knows. */
static int noop_token;

static ncs_result_t noop_stop(void *eh) {
  (void)eh;
  return NCS_SUCCESS;
}
static ncs_result_t noop_finalize(void *ctx) {
  (void)ctx;
  return NCS_SUCCESS;
}
static void noop_mask(int *mask, int bits) { __atomic_store_n(mask, bits, __ATOMIC_RELAXED); }

static ncs_result_t noop_init_v7(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                                 int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &noop_token;
  noop_mask(mask, NCS_EV_ALL);
  return NCS_SUCCESS;
}
static ncs_result_t noop_init_v6(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                                 int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &noop_token;
  noop_mask(mask, NCS_EV_ALL_V6);
  return NCS_SUCCESS;
}
static ncs_result_t noop_init_v4(void **ctx, int *mask, const char *name, uint64_t id, int nnodes,
                                 int nranks, int rank, ncs_logger_t log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &noop_token;
  noop_mask(mask, NCS_EV_ALL_V3);
  return NCS_SUCCESS;
}
static ncs_result_t noop_init_v3(void **ctx, int *mask) {
  *ctx = &noop_token;
  noop_mask(mask, NCS_EV_ALL_V3);
  return NCS_SUCCESS;
}
static ncs_result_t noop_init_v1(void **ctx, int *mask) {
  *ctx = &noop_token;
  noop_mask(mask, NCS_EV_ALL_V1);
  return NCS_SUCCESS;
}

#define NOOP_FNS(V)                                                                               \
  static ncs_result_t noop_start_v##V(void *ctx, void **eh, ncs_descr_v##V##_t *d) {              \
    (void)ctx, (void)d;                                                                           \
    *eh = &noop_token;                                                                            \
    return NCS_SUCCESS;                                                                           \
  }                                                                                               \
  static ncs_result_t noop_record_v##V(void *eh, ncs_state_t s, ncs_args_v##V##_t *a) {           \
    (void)eh, (void)s, (void)a;                                                                   \
    return NCS_SUCCESS;                                                                           \
  }
NOOP_FNS(7)
NOOP_FNS(6)
NOOP_FNS(4)
NOOP_FNS(3)
NOOP_FNS(2)
NOOP_FNS(1)
#undef NOOP_FNS

static ncs_profiler_v7_t noop_v7 = {"none",    noop_init_v7,   noop_start_v7,
                                    noop_stop, noop_record_v7, noop_finalize};
static ncs_profiler_v6_t noop_v6 = {"none",    noop_init_v6,   noop_start_v6,
                                    noop_stop, noop_record_v6, noop_finalize};
static ncs_profiler_v4_t noop_v4 = {"none",    noop_init_v4,   noop_start_v4,
                                    noop_stop, noop_record_v4, noop_finalize};
static ncs_profiler_v3_t noop_v3 = {"none",    noop_init_v3,   noop_start_v3,
                                    noop_stop, noop_record_v3, noop_finalize};
static ncs_profiler_v2_t noop_v2 = {"none",    noop_init_v1,   noop_start_v2,
                                    noop_stop, noop_record_v2, noop_finalize};
static ncs_profiler_v1_t noop_v1 = {"none",    noop_init_v1,   noop_start_v1,
                                    noop_stop, noop_record_v1, noop_finalize};

/* ------------------------------------------------------------ loading */
static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* NCCL's lookup (R§1.2): the name as given, then libnccl-profiler-<name>.so for a bare name. */
static void *open_lib(const char *name, char *err, size_t errlen) {
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  char first[384];
  snprintf(first, sizeof first, "%s", dlerror());
  snprintf(err, errlen, "%s", first);
  if (strchr(name, '/') || (strncmp(name, "lib", 3) == 0 && ends_with(name, ".so"))) return NULL;
  char alt[256];
  snprintf(alt, sizeof alt, "libnccl-profiler-%s.so", name);
  h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
  if (!h) snprintf(err, errlen, "%s (also tried %s: %s)", first, alt, dlerror());
  return h;
}

static void set_calls(int abi) {
  static const sim_calls_t tab[7] = {
      [1] = {v1_start, NULL, v1_record}, [2] = {v2_start, NULL, v2_record},
      [3] = {v3_start, NULL, v3_record}, [4] = {v4_start, NULL, v4_record},
      [5] = {v5_start, NULL, v5_record}, [6] = {v6_start, NULL, v6_record},
  };
  if (abi == 7) {
    sim_calls.start = g_v7->startEvent;
    sim_calls.stop = g_v7->stopEvent;
    sim_calls.record = g_v7->recordEventState;
    return;
  }
  sim_calls = tab[abi];
  /* stopEvent has the same shape in every version: NCCL calls the plugin's directly */
  switch (abi) {
  case 6:
  case 5: sim_calls.stop = g_v6->stopEvent; break;
  case 4: sim_calls.stop = g_v4->stopEvent; break;
  case 3: sim_calls.stop = g_v3->stopEvent; break;
  case 2: sim_calls.stop = g_v2->stopEvent; break;
  default: sim_calls.stop = g_v1->stopEvent; break;
  }
}

static int bind_version(int v) {
  char sym[32];
  snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
  static void *const noop[8] = {NULL, &noop_v1, &noop_v2, &noop_v3, &noop_v4, &noop_v6, &noop_v6, &noop_v7};
  void *p = g_lib ? dlsym(g_lib, sym) : noop[v];
  if (!p) return 0;
  switch (v) {
  case 7: g_v7 = p; g_name = g_v7->name; break;
  case 6:
  case 5: g_v6 = p; g_name = g_v6->name; break;
  case 4: g_v4 = p; g_name = g_v4->name; break;
  case 3: g_v3 = p; g_name = g_v3->name; break;
  case 2: g_v2 = p; g_name = g_v2->name; break;
  default: g_v1 = p; g_name = g_v1->name; break;
  }
  g_abi = v;
  return 1;
}

int sim_plugin_load(const char *name, int abi, char *err, size_t errlen) {
  err[0] = 0;
  g_v7 = NULL, g_v6 = NULL, g_v4 = NULL, g_v3 = NULL, g_v2 = NULL, g_v1 = NULL;
  __atomic_store_n(&g_mask, 0, __ATOMIC_RELAXED);
  int none = strcmp(name, "none") == 0;
  g_lib = none ? NULL : open_lib(name, err, errlen);
  if (!g_lib && !none) return -1;
  int ok = 0;
  if (abi)
    ok = bind_version(abi);
  else
    for (int v = 7; v >= 1 && !ok; v--) ok = bind_version(v); /* newest first, like NCCL */
  if (!ok) {
    if (abi)
      snprintf(err, errlen, "%s does not export ncclProfiler_v%d (forced by --abi)", name, abi);
    else
      snprintf(err, errlen, "%s exports no ncclProfiler_v1..v7 symbol", name);
    if (g_lib) dlclose(g_lib);
    g_lib = NULL;
    return -1;
  }
  set_calls(g_abi);
  atomic_fetch_add(&sim_cnt->loads, 1);
  return 0;
}

void sim_plugin_unload(void) {
  if (g_lib) dlclose(g_lib);
  g_lib = NULL;
  memset(&sim_calls, 0, sizeof sim_calls);
}

int sim_plugin_loaded(void) { return sim_calls.start != NULL; }
void *sim_plugin_lib(void) { return g_lib; }
int sim_plugin_abi(void) { return g_abi; }
const char *sim_plugin_name(void) { return g_name ? g_name : "?"; }

/* ------------------------------------------------------------ init / finalize */
static void sim_logfn(int level, unsigned long flags, const char *file, int line, const char *fmt,
                      ...) {
  if (!sim_opt.verbose) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "nccl-sim[%d] plugin log level=%d flags=0x%lx %s:%d: %s\n", (int)getpid(), level,
          flags, file ? file : "?", line, msg);
}

static ncs_result_t call_init(void **ctx, uint64_t id, const char *name, int nnodes, int nranks,
                              int rank) {
  switch (g_abi) {
  case 7: return g_v7->init(ctx, id, &g_mask, name, nnodes, nranks, rank, sim_logfn);
  case 6:
  case 5: return g_v6->init(ctx, id, &g_mask, name, nnodes, nranks, rank, sim_logfn);
  case 4: return g_v4->init(ctx, &g_mask, name, id, nnodes, nranks, rank, sim_logfn);
  case 3: return g_v3->init(ctx, &g_mask);
  case 2: return g_v2->init(ctx, &g_mask);
  default: return g_v1->init(ctx, &g_mask);
  }
}

int sim_comm_init(void **ctx, uint64_t comm_id, const char *name, int nnodes, int nranks,
                  int rank) {
  *ctx = NULL;
  atomic_fetch_add(&sim_cnt->inits, 1);
  sim_vt_call();
  ncs_result_t r = call_init(ctx, comm_id, name, nnodes, nranks, rank);
  sim_vt_tick();
  if (r != NCS_SUCCESS) {
    /* NCCL goes on with whatever context the plugin left (R§1.4); we only report it. */
    atomic_fetch_add(&sim_cnt->init_failures, 1);
    fprintf(stderr, "nccl-sim: plugin init failed with %d for comm %s rank %d\n", r,
            name ? name : "(null)", rank);
  }
  /* The v5 adapter clears the CE bits after the plugin's init (R§2.8), 2.31's v6 shim the
   * KernelPhase bit. 2.31 then turns KernelCh on when the mask has KernelPhase without it. */
  if (g_abi == 5)
    __atomic_fetch_and(&g_mask, ~(NCS_EV_CE_COLL | NCS_EV_CE_SYNC | NCS_EV_CE_BATCH),
                       __ATOMIC_RELAXED);
  if (g_abi <= 6) __atomic_fetch_and(&g_mask, ~NCS_EV_KERNEL_PHASE, __ATOMIC_RELAXED);
  if ((sim_mask() & NCS_EV_KERNEL_PHASE) && !(sim_mask() & NCS_EV_KERNEL_CH))
    __atomic_fetch_or(&g_mask, NCS_EV_KERNEL_CH, __ATOMIC_RELAXED);
  if (sim_opt.mask_override >= 0)
    __atomic_store_n(&g_mask, (int)sim_opt.mask_override, __ATOMIC_RELAXED);
  static _Atomic int other_done; /* --cupti-other: once, after the first init */
  if (sim_opt.cupti_other && !atomic_exchange(&other_done, 1)) sim_gpu_other();
  return 0;
}

void sim_comm_finalize(void *ctx) {
  if (!ctx) return; /* NCCL skips finalize for a NULL context */
  atomic_fetch_add(&sim_cnt->finalizes, 1);
  sim_vt_call();
  switch (g_abi) {
  case 7: g_v7->finalize(ctx); break;
  case 6:
  case 5: g_v6->finalize(ctx); break;
  case 4: g_v4->finalize(ctx); break;
  case 3: g_v3->finalize(ctx); break;
  case 2: g_v2->finalize(ctx); break;
  default: g_v1->finalize(ctx); break;
  }
  sim_vt_tick();
}

/* ------------------------------------------------------------ counted calls */
void sim_ev_start(void *ctx, void **eh, ncs_descr_v7_t *d) {
  unsigned t = sim_type_index(d->type);
  if (!sim_abi_has_type(g_abi, t)) {
    if (g_abi <= 3) *eh = NULL; /* what the adapter does; the plugin is not called */
    return;
  }
  sim_vt_call();
  sim_calls.start(ctx, eh, d);
  sim_vt_tick();
  atomic_fetch_add_explicit(&sim_cnt->start[t], 1, memory_order_relaxed);
  if (!ctx) atomic_fetch_add_explicit(&sim_cnt->null_ctx_starts, 1, memory_order_relaxed);
  if (t == SIM_T_PROXY_OP && d->proxyOp.pid != getpid())
    atomic_fetch_add_explicit(&sim_cnt->foreign_starts, 1, memory_order_relaxed);
}

void sim_ev_stop(unsigned type, void **eh) {
  if (!*eh) return;
  sim_vt_call();
  sim_calls.stop(*eh);
  sim_vt_tick();
  atomic_fetch_add_explicit(&sim_cnt->stop[type], 1, memory_order_relaxed);
  *eh = NULL; /* NCCL clears most handle slots after the stop */
}

void sim_ev_state(unsigned type, void *eh, int state, ncs_args_v7_t *a) {
  if (!eh || !sim_abi_has_state(g_abi, state)) return;
  sim_vt_call();
  sim_calls.record(eh, state, a);
  sim_vt_tick();
  atomic_fetch_add_explicit(&sim_cnt->state[type], 1, memory_order_relaxed);
}

void sim_ev_stop_unchecked(unsigned type, void *eh) {
  if (!eh) {
    sim_ev_bad_stop(SIM_BAD_NULL, type, eh);
    return;
  }
  sim_vt_call();
  sim_calls.stop(eh);
  sim_vt_tick();
  atomic_fetch_add_explicit(&sim_cnt->stop[type], 1, memory_order_relaxed);
}

void sim_ev_state_unchecked(unsigned type, void *eh, int state, ncs_args_v7_t *a) {
  if (!sim_abi_has_state(g_abi, state)) return;
  if (!eh) {
    sim_ev_bad_state(SIM_BAD_NULL, type, eh, state, a);
    return;
  }
  sim_vt_call();
  sim_calls.record(eh, state, a);
  sim_vt_tick();
  atomic_fetch_add_explicit(&sim_cnt->state[type], 1, memory_order_relaxed);
}

static _Atomic uint64_t *bad_counter(int kind, int is_stop) {
  switch (kind) {
  case SIM_BAD_NULL: return is_stop ? &sim_cnt->null_stops : &sim_cnt->null_states;
  case SIM_BAD_GARBAGE: return is_stop ? &sim_cnt->garbage_stops : &sim_cnt->garbage_states;
  case SIM_BAD_DOUBLE: return is_stop ? &sim_cnt->double_stops : &sim_cnt->double_states;
  default: return is_stop ? &sim_cnt->stale_stops : &sim_cnt->stale_states;
  }
}

void sim_ev_bad_stop(int kind, unsigned type, void *eh) {
  (void)type;
  sim_vt_call();
  sim_calls.stop(eh);
  sim_vt_tick();
  atomic_fetch_add_explicit(bad_counter(kind, 1), 1, memory_order_relaxed);
}

void sim_ev_bad_state(int kind, unsigned type, void *eh, int state, ncs_args_v7_t *a) {
  (void)type;
  if (!sim_abi_has_state(g_abi, state)) return;
  sim_vt_call();
  sim_calls.record(eh, state, a);
  sim_vt_tick();
  atomic_fetch_add_explicit(bad_counter(kind, 0), 1, memory_order_relaxed);
}
