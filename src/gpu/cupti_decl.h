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
  NCS_CUPTI_ERROR_HARDWARE_BUSY = 26,    /* the performance counters are in use (DCGM, ncu, nsys) */
  NCS_CUPTI_ERROR_NOT_SUPPORTED = 27,
  NCS_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES = 35, /* no access to the performance counters */
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

/* ---- the range profiler and the profiler host API (cupti_range_profiler.h, cupti_profiler_target.h,
 * cupti_profiler_host.h, cupti_target.h; CUDA 12.6 and later). Every call takes a parameter struct
 * whose first field is its size: NCS_PSIZE, as CUPTI's *_STRUCT_SIZE macros compute it (the end of
 * the last field, without trailing padding). cupti_profiler_host.h includes <string> in CUDA 13.0
 * and cannot be compiled as C; the plugin never includes it, and tests/test_cupti_decl.c compiles
 * it as C with an empty <string> (tests/cstub). */
#define NCS_PSIZE(T, last) (offsetof(T, last) + sizeof(((T *)0)->last))

enum { NCS_CUPTI_USER_RANGE = 2 };              /* CUpti_ProfilerRange: CUPTI_UserRange */
enum { NCS_CUPTI_USER_REPLAY = 3 };             /* CUpti_ProfilerReplayMode: CUPTI_UserReplay */
enum { NCS_CUPTI_PROFILER_TYPE_RANGE = 0 };     /* CUpti_ProfilerType: CUPTI_PROFILER_TYPE_RANGE_PROFILER */
enum { NCS_CUPTI_METRIC_COUNTER = 0, NCS_CUPTI_METRIC_RATIO = 1, NCS_CUPTI_METRIC_THROUGHPUT = 2 };

typedef struct { size_t structSize; void *pPriv; } ncs_cupti_prof_init_t; /* CUpti_Profiler_Initialize_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  size_t deviceIndex;
  const char *pChipName;
} ncs_cupti_chip_name_t; /* CUpti_Device_GetChipName_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *ctx; /* CUcontext */
  size_t counterAvailabilityImageSize;
  uint8_t *pCounterAvailabilityImage;
} ncs_cupti_avail_t; /* CUpti_Profiler_GetCounterAvailability_Params */

typedef struct {
  size_t structSize;
  void *pPriv;
  int profilerType;
  const char *pChipName;
  const uint8_t *pCounterAvailabilityImage;
  void *pHostObject;
} ncs_cupti_host_init_t; /* CUpti_Profiler_Host_Initialize_Params */
typedef struct { size_t structSize; void *pPriv; void *pHostObject; } ncs_cupti_host_deinit_t;
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pHostObject;
  const char **ppMetricNames;
  size_t numMetrics;
} ncs_cupti_host_add_t; /* CUpti_Profiler_Host_ConfigAddMetrics_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pHostObject;
  size_t configImageSize;
} ncs_cupti_host_config_size_t; /* CUpti_Profiler_Host_GetConfigImageSize_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pHostObject;
  size_t configImageSize;
  uint8_t *pConfigImage;
} ncs_cupti_host_config_t; /* CUpti_Profiler_Host_GetConfigImage_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  size_t configImageSize;
  uint8_t *pConfigImage;
  size_t numOfPasses;
} ncs_cupti_host_passes_t; /* CUpti_Profiler_Host_GetNumOfPasses_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pHostObject;
  const char *pMetricName;
  const char *pDescription;
  const char *pHwUnit;
  const char *pDimUnit;
  int metricType;
} ncs_cupti_host_props_t; /* CUpti_Profiler_Host_GetMetricProperties_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pHostObject;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t rangeIndex;
  const char **ppMetricNames;
  size_t numMetrics;
  double *pMetricValues;
} ncs_cupti_host_eval_t; /* CUpti_Profiler_Host_EvaluateToGpuValues_Params */

typedef struct {
  size_t structSize;
  void *pPriv;
  void *ctx;
  void *pRangeProfilerObject;
} ncs_cupti_rp_enable_t; /* CUpti_RangeProfiler_Enable_Params */
typedef struct { size_t structSize; void *pPriv; void *pRangeProfilerObject; } ncs_cupti_rp_obj_t;
/* ^ Disable, Start and PopRange take just the object */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pRangeProfilerObject;
  const char **pMetricNames;
  size_t numMetrics;
  size_t maxNumOfRanges;
  uint32_t maxNumRangeTreeNodes;
  size_t counterDataSize;
} ncs_cupti_rp_size_t; /* CUpti_RangeProfiler_GetCounterDataSize_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pRangeProfilerObject;
  size_t counterDataSize;
  uint8_t *pCounterData;
} ncs_cupti_rp_image_init_t; /* CUpti_RangeProfiler_CounterDataImage_Initialize_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pRangeProfilerObject;
  size_t configSize;
  const uint8_t *pConfig;
  size_t counterDataImageSize;
  uint8_t *pCounterDataImage;
  int range;      /* CUpti_ProfilerRange */
  int replayMode; /* CUpti_ProfilerReplayMode */
  size_t maxRangesPerPass;
  uint16_t numNestingLevels;
  uint16_t minNestingLevel;
  size_t passIndex;
  uint16_t targetNestingLevel;
} ncs_cupti_rp_config_t; /* CUpti_RangeProfiler_SetConfig_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pRangeProfilerObject;
  size_t passIndex;
  size_t targetNestingLevel;
  uint8_t isAllPassSubmitted;
} ncs_cupti_rp_stop_t; /* CUpti_RangeProfiler_Stop_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pRangeProfilerObject;
  const char *pRangeName;
} ncs_cupti_rp_push_t; /* CUpti_RangeProfiler_PushRange_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  void *pRangeProfilerObject;
  size_t numOfRangeDropped;
} ncs_cupti_rp_decode_t; /* CUpti_RangeProfiler_DecodeData_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t numTotalRanges;
} ncs_cupti_rp_info_t; /* CUpti_RangeProfiler_GetCounterDataInfo_Params */
typedef struct {
  size_t structSize;
  void *pPriv;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t rangeIndex;
  const char *rangeDelimiter;
  const char *rangeName;
} ncs_cupti_rp_range_t; /* CUpti_RangeProfiler_CounterData_GetRangeInfo_Params */

/* the profiler entry points, looked up when metrics are asked for */
typedef struct {
  ncs_cupti_result_t (*ProfilerInitialize)(ncs_cupti_prof_init_t *p);
  ncs_cupti_result_t (*DeviceGetChipName)(ncs_cupti_chip_name_t *p);
  ncs_cupti_result_t (*ProfilerGetCounterAvailability)(ncs_cupti_avail_t *p);
  ncs_cupti_result_t (*ProfilerHostInitialize)(ncs_cupti_host_init_t *p);
  ncs_cupti_result_t (*ProfilerHostDeinitialize)(ncs_cupti_host_deinit_t *p);
  ncs_cupti_result_t (*ProfilerHostConfigAddMetrics)(ncs_cupti_host_add_t *p);
  ncs_cupti_result_t (*ProfilerHostGetConfigImageSize)(ncs_cupti_host_config_size_t *p);
  ncs_cupti_result_t (*ProfilerHostGetConfigImage)(ncs_cupti_host_config_t *p);
  ncs_cupti_result_t (*ProfilerHostGetNumOfPasses)(ncs_cupti_host_passes_t *p);
  ncs_cupti_result_t (*ProfilerHostGetMetricProperties)(ncs_cupti_host_props_t *p);
  ncs_cupti_result_t (*ProfilerHostEvaluateToGpuValues)(ncs_cupti_host_eval_t *p);
  ncs_cupti_result_t (*RangeProfilerEnable)(ncs_cupti_rp_enable_t *p);
  ncs_cupti_result_t (*RangeProfilerDisable)(ncs_cupti_rp_obj_t *p);
  ncs_cupti_result_t (*RangeProfilerGetCounterDataSize)(ncs_cupti_rp_size_t *p);
  ncs_cupti_result_t (*RangeProfilerCounterDataImageInitialize)(ncs_cupti_rp_image_init_t *p);
  ncs_cupti_result_t (*RangeProfilerSetConfig)(ncs_cupti_rp_config_t *p);
  ncs_cupti_result_t (*RangeProfilerStart)(ncs_cupti_rp_obj_t *p);
  ncs_cupti_result_t (*RangeProfilerStop)(ncs_cupti_rp_stop_t *p);
  ncs_cupti_result_t (*RangeProfilerPushRange)(ncs_cupti_rp_push_t *p);
  ncs_cupti_result_t (*RangeProfilerPopRange)(ncs_cupti_rp_obj_t *p);
  ncs_cupti_result_t (*RangeProfilerDecodeData)(ncs_cupti_rp_decode_t *p);
  ncs_cupti_result_t (*RangeProfilerGetCounterDataInfo)(ncs_cupti_rp_info_t *p);
  ncs_cupti_result_t (*RangeProfilerCounterDataGetRangeInfo)(ncs_cupti_rp_range_t *p);
} ncs_cupti_prof_api_t;

#endif
