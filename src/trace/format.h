/* format.h - the ncclscope trace file format (version 1.4), shared by the writer and the reader.
 *
 * docs/trace-format.md is the prose description; this header is the normative list of
 * constants and per-event field schemas. Both sides drive their encoding and decoding from
 * ncs_schema[], so a field added here shows up in the writer, the reader and `dump`.
 */
#ifndef NCS_TRACE_FORMAT_H
#define NCS_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NCS_FILE_MAGIC "NCSTRACE" /* 8 bytes at offset 0 */
#define NCS_FILE_MAGIC_LEN 8
#define NCS_FORMAT_VERSION 1
#define NCS_FILE_HEADER_LEN 16 /* magic, u32 version, u32 reserved (0) */
#define NCS_TRACE_SUFFIX ".nstrace"

#define NCS_CHUNK_MAGIC 0x4B4E4843u /* "CHNK" as little-endian u32 */
#define NCS_CHUNK_HEADER_LEN 16     /* u32 magic, u16 type, u16 flags, u32 len, u32 crc32c */
#define NCS_CHUNK_MAX_PAYLOAD (16u << 20)
#define NCS_STRING_MAX 4096
#define NCS_MAX_FIELDS 24

/* chunk types */
enum {
  NCS_CHUNK_SEGMENT = 1,  /* starts a segment: one per plugin load (see docs) */
  NCS_CHUNK_CLOCK = 2,    /* (mono_ns, realtime_ns) calibration pair */
  NCS_CHUNK_STRINGS = 3,  /* string table additions */
  NCS_CHUNK_COMM = 4,     /* communicator init */
  NCS_CHUNK_COMM_END = 5, /* communicator finalize */
  NCS_CHUNK_THREAD = 6,   /* a producer thread */
  NCS_CHUNK_EVENTS = 7,   /* a batch of event records */
  NCS_CHUNK_COUNTERS = 8, /* periodic counter snapshot */
  NCS_CHUNK_FOOTER = 9,   /* final counters: the segment ended cleanly */
  NCS_CHUNK_LOSS = 10,    /* records the plugin lost: why, how many of which types, when */
  /* GPU activity (format 1.2, trace/gpu.h): CUPTI's state and its kernel and graph records */
  NCS_CHUNK_GPU_STATE = 11,
  NCS_CHUNK_GPU = 12,
  /* user ranges and their hardware metrics (format 1.4, trace/range.h) */
  NCS_CHUNK_RANGE_STATE = 13,
  NCS_CHUNK_RANGES = 14,
  NCS_CHUNK_MAX_TYPE = 14,
  /* reserved: 15 */
};


/* record kinds inside an EVENTS chunk */
enum {
  NCS_REC_START = 1,
  NCS_REC_STOP = 2,
  NCS_REC_STATE = 3,
  NCS_REC_COMPLETE = 4, /* derived by the writer: completion of a Coll/P2p from its children */
  NCS_REC_EXPIRED = 5,  /* derived by the writer: an event that never stopped */
  NCS_REC_BADCALL = 6,  /* capture mode: stop/state on a handle that is not a live one of ours */
  NCS_REC_MAX = 6
};

/* internal event types: the bit index of NCCL's ncclProfile* bit (0..15) */
enum {
  NCS_T_GROUP = 0,
  NCS_T_COLL = 1,
  NCS_T_P2P = 2,
  NCS_T_PROXY_OP = 3,
  NCS_T_PROXY_STEP = 4,
  NCS_T_PROXY_CTRL = 5,
  NCS_T_KERNEL_CH = 6,
  NCS_T_NET_PLUGIN = 7,
  NCS_T_GROUP_API = 8,
  NCS_T_COLL_API = 9,
  NCS_T_P2P_API = 10,
  NCS_T_KERNEL_LAUNCH = 11,
  NCS_T_CE_COLL = 12,
  NCS_T_CE_SYNC = 13,
  NCS_T_CE_BATCH = 14,
  NCS_T_KERNEL_PHASE = 15, /* format 1.3 (profiler ABI v7, NCCL 2.31) */
  NCS_T_COUNT = 16
};
#define NCS_T_ALL ((1u << NCS_T_COUNT) - 1) /* every type's bit */

/* Why records were lost (a LOSS chunk's reason, docs/trace-format.md) */
enum {
  NCS_LOSS_DROPS = 1,   /* the buffer pool was full: records dropped on NCCL's thread */
  NCS_LOSS_NO_SLOT = 2, /* more producer threads than NCCLSCOPE_MAX_THREADS */
  NCS_LOSS_WRITE = 3,   /* a chunk could not be written (disk full, I/O error): its records */
  NCS_LOSS_MAX = 3,
};

/* A LOSS chunk decoded (the reader's NCS_ITEM_LOSS): in [from_ns, to_ns] (CLOCK_MONOTONIC ns of
 * the process) `records` records were lost for `reason`, by_type[t] of them of event type t.
 * Records of types this reader does not know count in `records` only. */
typedef struct {
  uint32_t reason; /* NCS_LOSS_* */
  uint64_t from_ns, to_ns;
  uint64_t records;
  uint64_t by_type[NCS_T_COUNT];
} ncs_loss_t;

/* context encoding of a START record */
enum {
  NCS_CTX_NONE = 0,    /* NULL context */
  NCS_CTX_LOCAL = 1,   /* value = communicator index in this segment */
  NCS_CTX_FOREIGN = 2, /* an ncclscope context of another process (PXN): value = (pid << 16) | index */
  NCS_CTX_INVALID = 3, /* not an ncclscope context of this load: value = raw pointer */
};

/* parent / handle-reference encoding */
enum {
  NCS_REF_NONE = 0,    /* NULL */
  NCS_REF_LOCAL = 1,   /* value = event id in this segment */
  NCS_REF_FOREIGN = 2, /* raw pointer value: from another process (PXN) or not an ncclscope handle */
  NCS_REF_STALE = 3,   /* an ncclscope handle of an earlier load of the plugin: value = raw */
};

/* START record flags */
enum {
  NCS_SF_PXN = 1u << 0,       /* ProxyOp whose pid is not this process */
  NCS_SF_ABI_V1 = 1u << 1,    /* descriptor came through the v1 enum layout */
  NCS_SF_TRUNCATED = 1u << 2, /* a string or net descriptor was truncated */
  NCS_SF_UNSAMPLED = 1u << 3, /* Coll/P2p of an unsampled group, recorded because of
                                 NCCLSCOPE_UNSAMPLED_EVENTS (NCCLSCOPE_SAMPLE): expect no KernelCh */
};

/* COMPLETE record flags */
enum {
  NCS_CF_KERNEL = 1u << 0,  /* end time from KernelCh (GPU pTimer available) */
  NCS_CF_PROXY = 1u << 1,   /* end time from ProxyOp stops */
  NCS_CF_REVISED = 1u << 2, /* a later child arrived after an earlier COMPLETE for this id */
  NCS_CF_FORCED = 1u << 3,  /* emitted at expiry or flush while children were still open */
  NCS_CF_NO_CHILDREN = 1u << 4, /* the event stopped and had no children: no completion known */
  NCS_CF_GROUP = 1u << 5, /* no children of its own (e.g. a send/recv to itself): the times of
                             the other operations of its Group, i.e. of the same kernel plan */
};

/* BADCALL: which call (the record's flags) */
enum { NCS_BC_STOP = 2, NCS_BC_STATE = 3 };

/* SEGMENT modes */
enum { NCS_MODE_TRACE = 0, NCS_MODE_FLIGHT = 1, NCS_MODE_CAPTURE = 2 };

/* EXPIRED reasons */
enum {
  NCS_XR_TIMEOUT = 1, /* open for longer than NCCLSCOPE_EXPIRE_MS */
  NCS_XR_FLUSH = 2,   /* still open when the segment ended */
  NCS_XR_EVICTED = 3, /* the writer's tracking table was full */
};

/* field kinds of a schema */
enum {
  NCS_FK_U64 = 1,  /* varint */
  NCS_FK_I64 = 2,  /* zigzag varint */
  NCS_FK_STR = 3,  /* varint string id, 0 = NULL */
  NCS_FK_PTR = 4,  /* varint pointer value (printed in hex) */
  NCS_FK_BOOL = 5, /* varint 0/1 */
  NCS_FK_REF = 6,  /* two varints: NCS_REF_* kind, value */
};

/* The START fields of every event type, in record order: X(Type, name, KIND). This one list
 * generates ncs_schema[] (format.c) and the field indices NCS_F(Type, name) that the plugin, the
 * writer, the reader and every consumer use: no code indexes a field by number, so a field added
 * here moves everywhere at once. KIND is an NCS_FK_* suffix. Fields are only ever appended (a file
 * states its lists in its SEGMENT chunk, docs/trace-format.md): the last ones of Coll (from
 * kernelVariant), P2p, CollApi, P2pApi and CeColl (userTag) came with format 1.3 (ABI v7); a
 * reader finds fewer in older files (ncs_event_t.nfields). */
#define NCS_FIELDS_Group(X)
#define NCS_FIELDS_Coll(X)                                                                         \
  X(Coll, seqNumber, U64) X(Coll, func, STR) X(Coll, sendBuff, PTR) X(Coll, recvBuff, PTR)        \
  X(Coll, count, U64) X(Coll, root, I64) X(Coll, datatype, STR) X(Coll, nChannels, U64)           \
  X(Coll, nWarps, U64) X(Coll, algo, STR) X(Coll, proto, STR) X(Coll, parentGroup, REF)           \
  X(Coll, commHash, U64) X(Coll, name, STR) X(Coll, trafficBytes, U64) X(Coll, op, I64)           \
  X(Coll, isCollnet, BOOL) X(Coll, isNvls, BOOL) X(Coll, kernelVariant, STR)                      \
  X(Coll, isSymColl, BOOL) X(Coll, userTag, U64)
#define NCS_FIELDS_P2p(X)                                                                          \
  X(P2p, func, STR) X(P2p, buff, PTR) X(P2p, datatype, STR) X(P2p, count, U64) X(P2p, peer, I64)  \
  X(P2p, nChannels, U64) X(P2p, parentGroup, REF) X(P2p, commHash, U64) X(P2p, name, STR)         \
  X(P2p, userTag, U64)
#define NCS_FIELDS_ProxyOp(X)                                                                      \
  X(ProxyOp, pid, I64) X(ProxyOp, channelId, U64) X(ProxyOp, peer, I64) X(ProxyOp, nSteps, I64)   \
  X(ProxyOp, chunkSize, I64) X(ProxyOp, isSend, I64)
#define NCS_FIELDS_ProxyStep(X) X(ProxyStep, step, I64)
#define NCS_FIELDS_ProxyCtrl(X)
#define NCS_FIELDS_KernelCh(X) X(KernelCh, channelId, U64) X(KernelCh, pTimer, U64)
#define NCS_FIELDS_NetPlugin(X)                                                                    \
  X(NetPlugin, id, I64) X(NetPlugin, data, PTR) X(NetPlugin, decoded, BOOL) X(NetPlugin, fd, I64) \
  X(NetPlugin, op, I64) X(NetPlugin, length, U64) X(NetPlugin, device, I64)                       \
  X(NetPlugin, wr_id, U64) X(NetPlugin, opcode, I64) X(NetPlugin, qpNum, I64)
#define NCS_FIELDS_GroupApi(X) X(GroupApi, graphCaptured, BOOL) X(GroupApi, groupDepth, I64)
#define NCS_FIELDS_CollApi(X)                                                                      \
  X(CollApi, func, STR) X(CollApi, count, U64) X(CollApi, datatype, STR) X(CollApi, root, I64)    \
  X(CollApi, stream, PTR) X(CollApi, graphCaptured, BOOL) X(CollApi, userTag, U64)
#define NCS_FIELDS_P2pApi(X)                                                                       \
  X(P2pApi, func, STR) X(P2pApi, count, U64) X(P2pApi, datatype, STR) X(P2pApi, stream, PTR)      \
  X(P2pApi, graphCaptured, BOOL) X(P2pApi, userTag, U64)
#define NCS_FIELDS_KernelLaunch(X) X(KernelLaunch, stream, PTR)
#define NCS_FIELDS_CeColl(X)                                                                       \
  X(CeColl, seqNumber, U64) X(CeColl, func, STR) X(CeColl, sendBuff, PTR)                         \
  X(CeColl, recvBuff, PTR) X(CeColl, count, U64) X(CeColl, root, I64) X(CeColl, datatype, STR)    \
  X(CeColl, syncStrategy, STR) X(CeColl, intraBatchSync, BOOL) X(CeColl, batchSize, U64)          \
  X(CeColl, numBatches, U64) X(CeColl, ceSeqNum, U64) X(CeColl, stream, PTR)                     \
  X(CeColl, userTag, U64)
#define NCS_FIELDS_CeSync(X) X(CeSync, isComplete, BOOL) X(CeSync, nRanks, I64)
#define NCS_FIELDS_CeBatch(X)                                                                      \
  X(CeBatch, numOps, I64) X(CeBatch, totalBytes, U64) X(CeBatch, useIntraSync, BOOL)
/* KernelPhase: one phase of a KernelCh's work (phaseId 0 initial sync, 1 compute, 2 final sync),
 * from pTimer (GPU ns) to the KernelPhaseStop state's arg0 */
#define NCS_FIELDS_KernelPhase(X)                                                                  \
  X(KernelPhase, channelId, U64) X(KernelPhase, phaseId, U64) X(KernelPhase, phaseName, STR)      \
  X(KernelPhase, pTimer, U64)

/* Every event type: X(NCS_T_ suffix, Type, cli name), in type order. */
#define NCS_EVENT_TYPES(X)                                                                         \
  X(GROUP, Group, group) X(COLL, Coll, coll) X(P2P, P2p, p2p) X(PROXY_OP, ProxyOp, proxyop)        \
  X(PROXY_STEP, ProxyStep, proxystep) X(PROXY_CTRL, ProxyCtrl, proxyctrl)                          \
  X(KERNEL_CH, KernelCh, kernel) X(NET_PLUGIN, NetPlugin, net) X(GROUP_API, GroupApi, groupapi)    \
  X(COLL_API, CollApi, collapi) X(P2P_API, P2pApi, p2papi) X(KERNEL_LAUNCH, KernelLaunch, launch) \
  X(CE_COLL, CeColl, cecoll) X(CE_SYNC, CeSync, cesync) X(CE_BATCH, CeBatch, cebatch)           \
  X(KERNEL_PHASE, KernelPhase, kernelphase)

/* NCS_F(Coll, seqNumber): the index of a field in ncs_event_t.f[] (and fstr[], fref_kind[]);
 * NCS_NF(Coll): how many fields the type has. */
#define NCS_F(type, name) NCS_F_##type##_##name
#define NCS_NF(type) NCS_NF_##type
#define NCS_FIELD_INDEX_(T, n, k) NCS_F(T, n),
#define NCS_FIELD_ENUM_(E, T, c) enum { NCS_FIELDS_##T(NCS_FIELD_INDEX_) NCS_NF(T) };
NCS_EVENT_TYPES(NCS_FIELD_ENUM_)
#undef NCS_FIELD_ENUM_

typedef struct {
  const char *name;
  uint8_t kind;
} ncs_field_t;

typedef struct {
  const char *name;  /* "Coll", "ProxyOp", ... as in NCCL's enum without the ncclProfile prefix */
  const char *cli;   /* name used by NCCLSCOPE_EVENTS and the CLI: "coll", "proxyop", ... */
  uint8_t nfields;
  ncs_field_t fields[NCS_MAX_FIELDS];
} ncs_schema_t;

/* START payload schema per type (after the common START header). */
extern const ncs_schema_t ncs_schema[NCS_T_COUNT];
/* STATE names by value 0..31; NULL for unknown */
#define NCS_STATE_COUNT 32
#define NCS_STATE_KERNEL_CH_STOP 22 /* ncs_state_names[22]: the state that carries a KernelCh's GPU stop */
extern const char *const ncs_state_names[NCS_STATE_COUNT];

/* COMPLETE fields (after id) in order */
#define NCS_COMPLETE_FIELDS                                                                        \
  X(flags) X(end_ns) X(first_child_ns) X(gpu_start) X(gpu_stop) X(n_kernel_ch) X(n_proxy_op)      \
  X(n_open)
/* footer / counter keys: (group << 8) | type for per-type groups, plain keys below 0x100 */
enum {
  NCS_CK_STARTS = 0x100,
  NCS_CK_STOPS = 0x200,
  NCS_CK_STATES = 0x300,
  NCS_CK_DROPS = 0x400,   /* records lost because the buffer pool was full */
  NCS_CK_EXPIRED = 0x500, /* events that never stopped */
  NCS_CK_BAD_HANDLE = 0x01,      /* stop/state with a handle that is not ours (ignored) */
  NCS_CK_STALE_HANDLE = 0x02,    /* stop/state with a handle of an earlier load (ignored) */
  NCS_CK_NULL_HANDLE = 0x03,     /* stop/state with NULL (ignored) */
  NCS_CK_FOREIGN_CTX = 0x04,     /* starts with a PXN/foreign context */
  NCS_CK_NULL_CTX = 0x05,        /* starts with a NULL context */
  NCS_CK_NO_THREAD_SLOT = 0x06,  /* records lost: more producer threads than slots */
  NCS_CK_COMPLETIONS = 0x07,
  NCS_CK_REVISIONS = 0x08,
  NCS_CK_BYTES = 0x09,           /* bytes written to this file by this segment */
  NCS_CK_CHUNKS = 0x0A,
  NCS_CK_THREADS = 0x0B,         /* producer threads seen */
  NCS_CK_UNKNOWN_TYPE = 0x0C,    /* starts with a type bit we do not know (handle NULL) */
  NCS_CK_UNKNOWN_STATE = 0x0D,
  NCS_CK_POOL_BYTES = 0x0E,      /* configured buffer pool */
  NCS_CK_POOL_PEAK = 0x0F,       /* peak bytes of the pool in use */
  NCS_CK_END_NS = 0x10,          /* mono ns when the counters were taken */
  NCS_CK_TRACKED_PEAK = 0x11,    /* peak open events tracked by the writer */
  NCS_CK_WRITE_ERRORS = 0x12,    /* chunks that could not be written (disk full, ...) */
  NCS_CK_DISABLED_TYPE = 0x13,   /* starts of types outside NCCLSCOPE_EVENTS (handle NULL) */
  NCS_CK_GROUPS = 0x14,          /* group sampling (v5+): groups started */
  NCS_CK_GROUPS_UNSAMPLED = 0x15, /* ... of which unsampled (only NCCLSCOPE_UNSAMPLED_EVENTS) */
  NCS_CK_WRITE_LOST = 0x16,      /* records in chunks that could not be written (LOSS write) */
  NCS_CK_COMMS_UNTRACKED = 0x17, /* communicators beyond NCCLSCOPE_MAX_COMMS: not tracked, their
                                    events recorded with a NULL context */
  NCS_CK_EVICTED = 0x18,         /* events the writer's table (NCCLSCOPE_TRACK_MAX) had no room
                                    for: their completion is not derived */
  NCS_CK_MAX_COMMS = 0x19,       /* the NCCLSCOPE_MAX_COMMS in force */
  NCS_CK_TRACK_MAX = 0x1A,       /* the NCCLSCOPE_TRACK_MAX in force (a power of two) */
};

/* CRC-32C (Castagnoli), reflected, init ~0, final xor ~0. crc of "123456789" = 0xE3069283 */
uint32_t ncs_crc32c(uint32_t crc, const void *buf, size_t len);
/* the portable (table) path, whatever the CPU: tests compare it with ncs_crc32c */
uint32_t ncs_crc32c_soft(uint32_t crc, const void *buf, size_t len);
/* 1 when ncs_crc32c uses the CPU's crc32 instruction (x86-64 with SSE4.2) */
int ncs_crc32c_hw(void);

/* LEB128 varints. put returns bytes written (<= 10). get returns bytes read, 0 on error
 * (overlong, or runs past end). */
size_t ncs_put_varint(uint8_t *p, uint64_t v);
size_t ncs_get_varint_slow(const uint8_t *p, const uint8_t *end, uint64_t *v);
/* inline: most fields of a record are one or two bytes long */
static inline size_t ncs_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v) {
  if (p < end && !(p[0] & 0x80)) {
    *v = p[0];
    return 1;
  }
  if (end - p >= 2 && !(p[1] & 0x80)) {
    *v = (uint64_t)(p[0] & 0x7F) | (uint64_t)p[1] << 7;
    return 2;
  }
  return ncs_get_varint_slow(p, end, v);
}
static inline uint64_t ncs_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t ncs_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Mask names: "api,coll,kernel" or a number. Returns 0 on success, -1 with *bad = offending
 * token. Known names: the per-type cli names plus api, proxy, ce, all, none, default. */
int ncs_parse_event_list(const char *s, uint32_t *mask, const char **bad, size_t *badlen);
#define NCS_DEFAULT_EVENTS "api,group,coll,p2p,kernel"

/* The one rule for on/off settings (NCCLSCOPE_DISABLE, NCCLSCOPE_CAPTURE, NCCLSCOPE_RANGES,
 * NCCLSCOPE_CUPTI, ...; docs/config.md "Values"), in any case: 1, on, true, yes, enable,
 * enabled give 1; 0, off, false, no, disable, disabled give 0; anything else -1 (the caller
 * warns and keeps the default). The plugin and the tools read them alike. */
int ncs_parse_bool(const char *s);

/* Group sampling (NCCLSCOPE_SAMPLE=N, docs/config.md "Sampling"): is a thread's group number g
 * sampled? The first group is, then those whose number hashes to 0 mod N (1 in N on average).
 * Every rank of an SPMD program numbers its groups alike, so all ranks sample the same ones; the
 * hash, rather than every N-th group, keeps a program whose step has a period sharing a factor
 * with N (25 buckets + 1 optimizer AllReduce = 26 groups per step, N = 64) from never sampling
 * some of its operations. */
static inline int ncs_kernel_sampled(uint32_t g, uint32_t n) {
  uint64_t z = (uint64_t)g * 0x9E3779B97F4A7C15ull; /* splitmix64's finalizer */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return g == 0 || n <= 1 || (uint32_t)((z ^ (z >> 31)) >> 32) % n == 0;
}
const char *ncs_type_name(unsigned t); /* "Coll"; "?" when out of range */
const char *ncs_loss_reason_name(unsigned r); /* "pool-full", "no-slot", "write-error"; "?" */
const char *ncs_chunk_name(unsigned t);       /* "EVENTS"; "chunk" when unknown */
const char *ncs_state_name(unsigned s);
/* nccl-tests' byte conventions, shared by `report`, the job model and the live metrics: the one
 * datatype-size table, by NCCL's names (ncclDatatypeToString, research notes 2.9: ncclInt8 ...
 * ncclFloat8e5m2, and "Unknown" for ncclUint8, 1 byte; the older aliases ncclChar, ncclInt,
 * ncclHalf, ncclFloat, ncclDouble, ncclUint8 too); any other name (NULL included) is 0: the
 * operation's bytes are not known. An operation's algbw bytes (count x type size, x nranks for
 * AllGather and ReduceScatter); the bus bandwidth factor (AllReduce 2(n-1)/n, AllGather and
 * ReduceScatter (n-1)/n, else 1) */
uint32_t ncs_type_size(const char *dt);
uint64_t ncs_op_bytes(const char *func, const char *dt, uint64_t count, int nranks, int p2p);
double ncs_bus_factor(const char *func, int nranks);
/* an operation's function (NCCL's name, "AllReduce"; NULL when not known) is name */
static inline int ncs_is_func(const char *f, const char *name) { return f && !strcmp(f, name); }
/* Collectives in which every rank's output depends on every rank's input (AllReduce, AllGather,
 * ReduceScatter): no member can finish one before every member's kernel began. Not Broadcast or
 * Reduce: a root (Broadcast) or a sender (Reduce) may finish into its peers' buffers first. */
static inline int ncs_all_depend(const char *f) {
  return ncs_is_func(f, "AllReduce") || ncs_is_func(f, "AllGather") || ncs_is_func(f, "ReduceScatter");
}

#endif
