/* cupti_decl.h - the part of CUPTI's C API the plugin uses, declared here.
 *
 * The plugin loads libcupti at run time (dlopen) and must build without CUDA's headers, so it
 * declares what it calls itself, as src/abi/ncs_abi.h does for NCCL. The values and layouts are
 * those of CUDA 13.0 (CUPTI API version 130001); tests/test_cupti_decl.c checks every one of them
 * against the real headers wherever a CUDA toolkit is installed. Record layouts: only the prefix
 * of the kernel activity record that is the same from CUpti_ActivityKernel5 (CUDA 11) through
 * Kernel10 (13.0) and later is read (kind .. graphId), so an older or newer libcupti works too.
 */
#ifndef NCS_GPU_CUPTI_DECL_H
#define NCS_GPU_CUPTI_DECL_H

#include <stddef.h>
#include <stdint.h>

typedef int ncs_cupti_result_t; /* CUptiResult */
enum {
  NCS_CUPTI_SUCCESS = 0,
  NCS_CUPTI_ERROR_INVALID_PARAMETER = 1,
  NCS_CUPTI_ERROR_MAX_LIMIT_REACHED = 12, /* cuptiActivityGetNextRecord: no more records */
  NCS_CUPTI_ERROR_NOT_INITIALIZED = 15,
  NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
};

/* callback domains and ids */
enum { NCS_CUPTI_CB_DOMAIN_DRIVER_API = 1, NCS_CUPTI_CB_DOMAIN_RESOURCE = 3 };
enum { NCS_CUPTI_API_ENTER = 0, NCS_CUPTI_API_EXIT = 1 };
enum {
  NCS_CUPTI_DRIVER_CBID_cuLaunchKernel = 307,
  NCS_CUPTI_DRIVER_CBID_cuLaunchKernel_ptsz = 442,
  NCS_CUPTI_DRIVER_CBID_cuGraphLaunch = 514,
  NCS_CUPTI_DRIVER_CBID_cuGraphLaunch_ptsz = 515,
  NCS_CUPTI_DRIVER_CBID_cuLaunchKernelEx = 652,
  NCS_CUPTI_DRIVER_CBID_cuLaunchKernelEx_ptsz = 653,
};
enum {
  NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED = 13,
  NCS_CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED = 18,
  NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED = 20,
};

/* activity kinds and flags */
enum { NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10 };
enum { NCS_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 };
enum { NCS_CU_GRAPH_NODE_TYPE_KERNEL = 0 }; /* CUgraphNodeType */

typedef void *ncs_cupti_subscriber_t; /* CUpti_SubscriberHandle */

/* CUpti_CallbackData (cupti_callbacks.h): what a driver-API callback receives */
typedef struct {
  int callbackSite; /* NCS_CUPTI_API_ENTER / EXIT */
  const char *functionName;
  const void *functionParams;
  void *functionReturnValue;
  const char *symbolName;
  void *context;
  uint32_t contextUid;
  uint64_t *correlationData;
  uint32_t correlationId;
} ncs_cupti_cbdata_t;

/* CUpti_ResourceData and CUpti_GraphData: what a graph resource callback receives */
typedef struct {
  void *context;
  void *resourceHandle;
  void *resourceDescriptor; /* ncs_cupti_graphdata_t * for the graph callbacks */
} ncs_cupti_resdata_t;

typedef struct {
  void *graph;         /* CUgraph */
  void *originalGraph; /* CUgraph: the graph a clone came from */
  void *node;          /* CUgraphNode */
  void *originalNode;  /* CUgraphNode: the node a clone came from */
  int nodeType;        /* CUgraphNodeType */
  void *dependency;    /* CUgraphNode */
  void *graphExec;     /* CUgraphExec */
} ncs_cupti_graphdata_t;

/* cuGraphLaunch's parameters (cuGraphLaunch_params and cuGraphLaunch_ptsz_params) */
typedef struct {
  void *hGraphExec;
  void *hStream;
} ncs_cu_graph_launch_params_t;

/* CUpti_SubscriberParams (cuptiSubscribe_v2, CUDA 13.0) */
typedef struct {
  size_t structSize;
  const char *subscriberName;
  char *oldSubscriberName;
  size_t oldSubscriberSize;
} ncs_cupti_subscriber_params_t;
#define NCS_CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN 64

/* The prefix of CUpti_ActivityKernel5 .. 10 (and later) up to graphId: the fields the plugin
 * reads, at the offsets every version since CUDA 11 has (a packed, 8-byte aligned struct). */
typedef struct {
  uint32_t kind; /* CUpti_ActivityKind */
  uint8_t cacheConfig, sharedMemoryConfig;
  uint16_t registersPerThread;
  uint32_t partitionedGlobalCacheRequested, partitionedGlobalCacheExecuted;
  uint64_t start;     /* 16 */
  uint64_t end;       /* 24 */
  uint64_t completed; /* 32 */
  uint32_t deviceId;  /* 40 */
  uint32_t contextId; /* 44 */
  uint32_t streamId;  /* 48 */
  int32_t grid[3], block[3];
  int32_t staticSharedMemory, dynamicSharedMemory;
  uint32_t localMemoryPerThread, localMemoryTotal;
  uint32_t correlationId; /* 92 */
  int64_t gridId;         /* 96 */
  const char *name;       /* 104: shared string, do not free */
  void *reserved0;
  uint64_t queued, submitted;
  uint8_t launchType, isSharedMemoryCarveoutRequested, sharedMemoryCarveoutRequested, padding;
  uint32_t sharedMemoryExecuted;
  uint64_t graphNodeId;   /* 144 */
  uint32_t shmemLimitConfig;
  uint32_t graphId;       /* 156 */
} ncs_cupti_kernel_t;

_Static_assert(offsetof(ncs_cupti_kernel_t, start) == 16, "kernel record: start");
_Static_assert(offsetof(ncs_cupti_kernel_t, correlationId) == 92, "kernel record: correlationId");
_Static_assert(offsetof(ncs_cupti_kernel_t, name) == 104, "kernel record: name");
_Static_assert(offsetof(ncs_cupti_kernel_t, graphNodeId) == 144, "kernel record: graphNodeId");
_Static_assert(offsetof(ncs_cupti_kernel_t, graphId) == 156, "kernel record: graphId");

/* function types (every CUPTI entry point the plugin looks up) */
typedef void (*ncs_cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef void (*ncs_cupti_buf_request_fn)(uint8_t **buffer, size_t *size, size_t *maxNumRecords);
typedef void (*ncs_cupti_buf_complete_fn)(void *ctx, uint32_t streamId, uint8_t *buffer, size_t size,
                                          size_t validSize);

typedef struct {
  ncs_cupti_result_t (*GetVersion)(uint32_t *version);
  ncs_cupti_result_t (*GetResultString)(ncs_cupti_result_t r, const char **str);
  ncs_cupti_result_t (*Subscribe)(ncs_cupti_subscriber_t *s, ncs_cupti_callback_fn cb, void *ud);
  ncs_cupti_result_t (*Subscribe_v2)(ncs_cupti_subscriber_t *s, ncs_cupti_callback_fn cb, void *ud,
                                     ncs_cupti_subscriber_params_t *p); /* CUDA 13.0+; may be NULL */
  ncs_cupti_result_t (*Unsubscribe)(ncs_cupti_subscriber_t s);
  ncs_cupti_result_t (*EnableCallback)(uint32_t enable, ncs_cupti_subscriber_t s, int domain, uint32_t cbid);
  ncs_cupti_result_t (*ActivityRegisterCallbacks)(ncs_cupti_buf_request_fn req, ncs_cupti_buf_complete_fn done);
  ncs_cupti_result_t (*ActivityEnable)(int kind);
  ncs_cupti_result_t (*ActivityDisable)(int kind);
  ncs_cupti_result_t (*ActivityGetNextRecord)(uint8_t *buffer, size_t valid, void **record);
  ncs_cupti_result_t (*ActivityGetNumDroppedRecords)(void *ctx, uint32_t streamId, size_t *dropped);
  ncs_cupti_result_t (*ActivityFlushAll)(uint32_t flag);
  ncs_cupti_result_t (*GetTimestamp)(uint64_t *ts);
  ncs_cupti_result_t (*GetGraphNodeId)(void *node, uint64_t *id);
  ncs_cupti_result_t (*GetGraphId)(void *graph, uint32_t *id);
  ncs_cupti_result_t (*GetGraphExecId)(void *exec, uint32_t *id);
} ncs_cupti_api_t;

#endif
