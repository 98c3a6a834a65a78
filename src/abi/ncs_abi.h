/* ncs_abi.h - the NCCL profiler plugin ABI, versions 1 to 7, written for ncclscope.
 *
 * These declarations are binary-compatible with the structs NCCL passes to a profiler
 * plugin (NCCL 2.23 .. 2.31). They are written from the layout facts in the project's
 * research notes and from reading NCCL 2.31.2's profiler header for v7, not copied from NCCL.
 * tests/test_abi.c checks every size and offset with static asserts, so a wrong field here fails
 * the build.
 *
 * Names use the ncs_ prefix so this header can sit beside nccl.h in one translation unit.
 */
#ifndef NCS_ABI_H
#define NCS_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ncclResult_t is an int-sized enum; 0 is success. */
typedef int ncs_result_t;
#define NCS_SUCCESS 0

/* NCCL's debug logger: void (*)(ncclDebugLogLevel, unsigned long flags, file, line, fmt, ...) */
typedef void (*ncs_logger_t)(int level, unsigned long flags, const char *file, int line,
                             const char *fmt, ...);
#define NCS_LOG_WARN 2
#define NCS_LOG_INFO 3
#define NCS_LOG_SUBSYS_PROFILE 0x4000UL
#define NCS_LOG_SUBSYS_INIT 0x1UL /* NCCL_INIT: in NCCL_DEBUG_SUBSYS's default set */

/* ---- event type bits (the activation mask uses the same bits) ---- */
enum {
  NCS_EV_GROUP = 1 << 0,
  NCS_EV_COLL = 1 << 1,
  NCS_EV_P2P = 1 << 2,
  NCS_EV_PROXY_OP = 1 << 3,
  NCS_EV_PROXY_STEP = 1 << 4,
  NCS_EV_PROXY_CTRL = 1 << 5,
  NCS_EV_KERNEL_CH = 1 << 6,
  NCS_EV_NET_PLUGIN = 1 << 7,
  NCS_EV_GROUP_API = 1 << 8,
  NCS_EV_COLL_API = 1 << 9,
  NCS_EV_P2P_API = 1 << 10,
  NCS_EV_KERNEL_LAUNCH = 1 << 11,
  NCS_EV_CE_COLL = 1 << 12,
  NCS_EV_CE_SYNC = 1 << 13,
  NCS_EV_CE_BATCH = 1 << 14,
  NCS_EV_KERNEL_PHASE = 1 << 15, /* v7 (NCCL 2.31): a phase of a KernelCh, GPU timestamps */
};
#define NCS_EV_ALL_V1 0x3F
#define NCS_EV_ALL_V3 0xFF
#define NCS_EV_ALL_V5 0xFFF
#define NCS_EV_ALL_V6 0x7FFF
#define NCS_EV_ALL 0xFFFF
/* number of distinct event types: bit index 0..15 */
#define NCS_NTYPES 16

/* Group sampling (ABI v5+), shared by ncclscope and the empty benchmark plugin (docs/config.md,
 * "Sampling").
 * ncs_sample_mask: write `want` (the full or the hook mask) for the next group, unless the mask
 * holds neither (someone else set it: leave it alone).
 * ncs_sampling_stops_at: sampling stops for good at the first event of such a type: on NCCL
 * 2.28.9, KernelCh changing between groups that contain send/recv leaves the process hung at
 * communicator destroy. */
static inline void ncs_sample_mask(int *mask, uint32_t want, uint32_t full, uint32_t hook) {
  int cur = __atomic_load_n(mask, __ATOMIC_RELAXED);
  if (cur != (int)want && (cur == (int)full || cur == (int)hook)) __atomic_store_n(mask, (int)want, __ATOMIC_RELAXED);
}
static inline int ncs_sampling_stops_at(uint64_t type) {
  return type == NCS_EV_P2P_API || type == NCS_EV_P2P;
}

/* ---- event states ---- */
enum {
  NCS_ST_PROXY_OP_SEND_POSTED = 0,
  NCS_ST_PROXY_OP_SEND_REM_FIFO_WAIT = 1,
  NCS_ST_PROXY_OP_SEND_TRANSMITTED = 2,
  NCS_ST_PROXY_OP_SEND_DONE = 3,
  NCS_ST_PROXY_OP_RECV_POSTED = 4,
  NCS_ST_PROXY_OP_RECV_RECEIVED = 5,
  NCS_ST_PROXY_OP_RECV_TRANSMITTED = 6,
  NCS_ST_PROXY_OP_RECV_DONE = 7,
  NCS_ST_PROXY_STEP_SEND_GPU_WAIT = 8,
  NCS_ST_PROXY_STEP_SEND_WAIT = 9,
  NCS_ST_PROXY_STEP_RECV_WAIT = 10,
  NCS_ST_PROXY_STEP_RECV_FLUSH_WAIT = 11,
  NCS_ST_PROXY_STEP_RECV_GPU_WAIT = 12,
  NCS_ST_PROXY_CTRL_IDLE = 13,
  NCS_ST_PROXY_CTRL_ACTIVE = 14,
  NCS_ST_PROXY_CTRL_SLEEP = 15,
  NCS_ST_PROXY_CTRL_WAKEUP = 16,
  NCS_ST_PROXY_CTRL_APPEND = 17,
  NCS_ST_PROXY_CTRL_APPEND_END = 18,
  NCS_ST_PROXY_OP_IN_PROGRESS_V4 = 19,
  NCS_ST_PROXY_STEP_SEND_PEER_WAIT_V4 = 20,
  NCS_ST_NET_PLUGIN_UPDATE = 21,
  NCS_ST_KERNEL_CH_STOP = 22,
  NCS_ST_GROUP_START_API_STOP = 23,
  NCS_ST_GROUP_END_API_START = 24,
  NCS_ST_CE_COLL_START = 25,
  NCS_ST_CE_COLL_COMPLETE = 26,
  NCS_ST_CE_SYNC_START = 27,
  NCS_ST_CE_SYNC_COMPLETE = 28,
  NCS_ST_CE_BATCH_START = 29,
  NCS_ST_CE_BATCH_COMPLETE = 30,
  NCS_ST_KERNEL_PHASE_STOP = 31, /* v7: the phase's GPU end in the args' kernelCh.pTimer */
};
#define NCS_NSTATES 32
typedef int ncs_state_t; /* the C enum NCCL passes is int-sized */

/* ---- network plugin event ids (netPlugin.id) ---- */
#define NCS_NET_VER_MASK 0xFFFFu
#define NCS_NET_TYPE_MASK 0xFFFF0000u
#define NCS_NET_TYPE_IB 0x10000u
#define NCS_NET_TYPE_SOCK 0x20000u

/* IB descriptor v1 (40 bytes) and socket descriptor v1 (24 bytes), pointed to by netPlugin.data */
typedef struct {
  uint8_t type;
  union {
    struct {
      int device;
      uint64_t wr_id;
      int opcode;
      int qpNum;
      size_t length;
    } qp;
  };
} ncs_net_ib_v1_t;

typedef struct {
  uint8_t type;
  union {
    struct {
      int fd;
      int op;
      size_t length;
    } sock;
  };
} ncs_net_sock_v1_t;

/* ======================= v6 / v5 ======================= */
typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      int root;
      void *stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      void *stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void *stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
      void *parentGroup;
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void *parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void *data;
    } netPlugin;
    /* v6 only */
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      const char *syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void *stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncs_descr_v6_t;

/* v5 is v6 without the CE members; the shared prefix has identical offsets. */
typedef ncs_descr_v6_t ncs_descr_v5_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void *data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncs_args_v4_t; /* also v5 and v6 */
typedef ncs_args_v4_t ncs_args_v5_t;
typedef ncs_args_v4_t ncs_args_v6_t;

typedef struct {
  const char *name;
  ncs_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncs_logger_t logfn);
  ncs_result_t (*startEvent)(void *context, void **eHandle, ncs_descr_v6_t *eDescr);
  ncs_result_t (*stopEvent)(void *eHandle);
  ncs_result_t (*recordEventState)(void *eHandle, ncs_state_t eState, ncs_args_v6_t *eStateArgs);
  ncs_result_t (*finalize)(void *context);
} ncs_profiler_v6_t;
typedef ncs_profiler_v6_t ncs_profiler_v5_t;

/* ======================= v7 =======================
 * v6 plus, in NCCL 2.31: userTag (the ncclCollConfig_t userProfilerTag of the call, 0 untagged)
 * appended to collApi, p2pApi, coll, p2p and ceColl; kernelVariant and isSymColl appended to coll
 * (a symmetric-memory kernel: algo is then the variant's suffix and proto ""); and the KernelPhase
 * event. Every member keeps v6's offsets, so the v7 descriptor is v6's with longer members (136
 * bytes). KernelPhase's stop time comes as KernelPhaseStop with the args' kernelCh.pTimer. */
typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      int root;
      void *stream;
      bool graphCaptured;
      uint64_t userTag;
    } collApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      void *stream;
      bool graphCaptured;
      uint64_t userTag;
    } p2pApi;
    struct {
      void *stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
      void *parentGroup;
      const char *kernelVariant; /* symmetric kernels: e.g. "AGxLL_R"; else NULL */
      bool isSymColl;
      uint64_t userTag;
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void *parentGroup;
      uint64_t userTag;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void *data;
    } netPlugin;
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      const char *syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void *stream;
      uint64_t userTag;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
    struct {
      uint8_t channelId;
      uint8_t phaseId; /* NCS_PHASE_*: 0 initial sync, 1 compute, 2 final sync */
      const char *phaseName; /* "initial_sync", "compute", "final_sync" */
      uint64_t pTimer; /* GPU globaltimer ns at the phase's start */
    } kernelPhase;
  };
} ncs_descr_v7_t;

/* KernelPhase phaseId values */
enum { NCS_PHASE_INITIAL_SYNC = 0, NCS_PHASE_COMPUTE = 1, NCS_PHASE_FINAL_SYNC = 2, NCS_NPHASES = 3 };

typedef ncs_args_v4_t ncs_args_v7_t; /* KernelPhaseStop uses kernelCh.pTimer */

typedef struct {
  const char *name;
  ncs_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncs_logger_t logfn);
  ncs_result_t (*startEvent)(void *context, void **eHandle, ncs_descr_v7_t *eDescr);
  ncs_result_t (*stopEvent)(void *eHandle);
  ncs_result_t (*recordEventState)(void *eHandle, ncs_state_t eState, ncs_args_v7_t *eStateArgs);
  ncs_result_t (*finalize)(void *context);
} ncs_profiler_v7_t;

/* ======================= v4 ======================= */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void *data;
    } netPlugin;
  };
} ncs_descr_v4_t;

typedef struct {
  const char *name;
  ncs_result_t (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash,
                       int nNodes, int nranks, int rank, ncs_logger_t logfn);
  ncs_result_t (*startEvent)(void *context, void **eHandle, ncs_descr_v4_t *eDescr);
  ncs_result_t (*stopEvent)(void *eHandle);
  ncs_result_t (*recordEventState)(void *eHandle, ncs_state_t eState, ncs_args_v4_t *eStateArgs);
  ncs_result_t (*finalize)(void *context);
} ncs_profiler_v4_t;

/* ======================= v1 .. v3 ======================= */
typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncs_args_v1_t; /* also v2 and v3 */
typedef ncs_args_v1_t ncs_args_v2_t;
typedef ncs_args_v1_t ncs_args_v3_t;

typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    struct {
      const char *name;
      uint64_t commHash;
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    struct {
      int64_t id;
      void *data;
    } netPlugin;
  };
} ncs_descr_v3_t;

typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    struct {
      const char *name;
      uint64_t commHash;
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncs_descr_v2_t;

/* v1 carries enums (uint8_t) where v2+ carry strings. */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      uint8_t datatype;
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;
      uint8_t proto;
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char *name;
      uint64_t commHash;
      uint8_t func;
      void *buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncs_descr_v1_t;

#define NCS_DECLARE_PROFILER_OLD(V)                                                               \
  typedef struct {                                                                                \
    const char *name;                                                                             \
    ncs_result_t (*init)(void **context, int *eActivationMask);                                   \
    ncs_result_t (*startEvent)(void *context, void **eHandle, ncs_descr_v##V##_t *eDescr);       \
    ncs_result_t (*stopEvent)(void *eHandle);                                                     \
    ncs_result_t (*recordEventState)(void *eHandle, ncs_state_t eState,                          \
                                     ncs_args_v##V##_t *eStateArgs);                              \
    ncs_result_t (*finalize)(void *context);                                                      \
  } ncs_profiler_v##V##_t;
NCS_DECLARE_PROFILER_OLD(1)
NCS_DECLARE_PROFILER_OLD(2)
NCS_DECLARE_PROFILER_OLD(3)
#undef NCS_DECLARE_PROFILER_OLD

/* v1 enum values (NCCL's ncclFunc_t, ncclDataType_t, algorithm and protocol numbering of 2.23). */
enum {
  NCS_V1_FUNC_BROADCAST = 0,
  NCS_V1_FUNC_REDUCE = 1,
  NCS_V1_FUNC_ALLGATHER = 2,
  NCS_V1_FUNC_REDUCESCATTER = 3,
  NCS_V1_FUNC_ALLREDUCE = 4,
  NCS_V1_FUNC_SENDRECV = 5,
  NCS_V1_FUNC_SEND = 6,
  NCS_V1_FUNC_RECV = 7,
  NCS_V1_NFUNCS = 8
};

#endif /* NCS_ABI_H */
