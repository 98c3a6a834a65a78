/* test_cupti_decl.c - the plugin's own CUPTI declarations (src/gpu/cupti_decl.h) against the real
 * CUPTI headers, where a CUDA toolkit is installed (tests/cupti.cmake builds it only then). Every
 * value the plugin passes to CUPTI and every offset it reads is checked at compile time; the
 * program itself only prints what it checked. */
#include <cupti.h>
#include <stddef.h>
#include <stdio.h>

#include "gpu/cupti_decl.h"

#define SAME(a, b) _Static_assert((long long)(a) == (long long)(b), #a " != " #b)
#define OFF(T1, f1, T2, f2) _Static_assert(offsetof(T1, f1) == offsetof(T2, f2), #T1 "." #f1)

SAME(NCS_CUPTI_SUCCESS, CUPTI_SUCCESS);
SAME(NCS_CUPTI_ERROR_INVALID_PARAMETER, CUPTI_ERROR_INVALID_PARAMETER);
SAME(NCS_CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
SAME(NCS_CUPTI_ERROR_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED);
SAME(NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME(NCS_CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_DRIVER_API);
SAME(NCS_CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_RESOURCE);
SAME(NCS_CUPTI_API_ENTER, CUPTI_API_ENTER);
SAME(NCS_CUPTI_API_EXIT, CUPTI_API_EXIT);
SAME(NCS_CUPTI_DRIVER_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
SAME(NCS_CUPTI_DRIVER_CBID_cuLaunchKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz);
SAME(NCS_CUPTI_DRIVER_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
SAME(NCS_CUPTI_DRIVER_CBID_cuGraphLaunch_ptsz, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
SAME(NCS_CUPTI_DRIVER_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
SAME(NCS_CUPTI_DRIVER_CBID_cuLaunchKernelEx_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz);
SAME(NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
SAME(NCS_CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED);
SAME(NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
SAME(NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME(NCS_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
SAME(NCS_CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_KERNEL);
SAME(NCS_CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN, CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN);
SAME(sizeof(CUpti_CallbackDomain), sizeof(int));
SAME(sizeof(CUpti_CallbackId), sizeof(uint32_t));
SAME(sizeof(CUptiResult), sizeof(ncs_cupti_result_t));

SAME(sizeof(ncs_cupti_cbdata_t), sizeof(CUpti_CallbackData));
OFF(ncs_cupti_cbdata_t, callbackSite, CUpti_CallbackData, callbackSite);
OFF(ncs_cupti_cbdata_t, functionParams, CUpti_CallbackData, functionParams);
OFF(ncs_cupti_cbdata_t, correlationId, CUpti_CallbackData, correlationId);
SAME(sizeof(ncs_cupti_resdata_t), sizeof(CUpti_ResourceData));
OFF(ncs_cupti_resdata_t, resourceDescriptor, CUpti_ResourceData, resourceDescriptor);
SAME(sizeof(ncs_cupti_graphdata_t), sizeof(CUpti_GraphData));
OFF(ncs_cupti_graphdata_t, graph, CUpti_GraphData, graph);
OFF(ncs_cupti_graphdata_t, originalGraph, CUpti_GraphData, originalGraph);
OFF(ncs_cupti_graphdata_t, node, CUpti_GraphData, node);
OFF(ncs_cupti_graphdata_t, originalNode, CUpti_GraphData, originalNode);
OFF(ncs_cupti_graphdata_t, nodeType, CUpti_GraphData, nodeType);
OFF(ncs_cupti_graphdata_t, graphExec, CUpti_GraphData, graphExec);
SAME(sizeof(ncs_cupti_subscriber_params_t), sizeof(CUpti_SubscriberParams));
SAME(sizeof(ncs_cupti_subscriber_params_t), CUpti_SubscriberParams_STRUCT_SIZE);
OFF(ncs_cupti_subscriber_params_t, subscriberName, CUpti_SubscriberParams, subscriberName);
OFF(ncs_cupti_subscriber_params_t, oldSubscriberName, CUpti_SubscriberParams, oldSubscriberName);
OFF(ncs_cupti_subscriber_params_t, oldSubscriberSize, CUpti_SubscriberParams, oldSubscriberSize);
SAME(sizeof(ncs_cu_graph_launch_params_t), sizeof(cuGraphLaunch_params));
OFF(ncs_cu_graph_launch_params_t, hGraphExec, cuGraphLaunch_params, hGraph);
OFF(ncs_cu_graph_launch_params_t, hStream, cuGraphLaunch_params, hStream);
OFF(ncs_cu_graph_launch_params_t, hGraphExec, cuGraphLaunch_ptsz_params, hGraphExec);
OFF(ncs_cu_graph_launch_params_t, hStream, cuGraphLaunch_ptsz_params, hStream);

/* the kernel record: our prefix is every version's from Kernel5 (CUDA 11) to Kernel10 (13.0) */
#define KERNEL_FIELDS(X, T)                                                                        \
  X(T, kind) X(T, start) X(T, end) X(T, completed) X(T, deviceId) X(T, contextId) X(T, streamId)   \
  X(T, correlationId) X(T, gridId) X(T, name) X(T, graphNodeId) X(T, graphId)
#define KOFF(T, f) OFF(ncs_cupti_kernel_t, f, T, f);
KERNEL_FIELDS(KOFF, CUpti_ActivityKernel10)
KERNEL_FIELDS(KOFF, CUpti_ActivityKernel9)
KERNEL_FIELDS(KOFF, CUpti_ActivityKernel5)
SAME(sizeof(ncs_cupti_kernel_t), offsetof(CUpti_ActivityKernel10, graphId) + sizeof(uint32_t));

/* Function types are the plugin's own (int for CUptiResult, void * for CUPTI's handle types):
 * the same calling convention for these arguments, as the sizes above say, though C calls the
 * pointer types incompatible. */

int main(void) {
  printf("cupti declarations: ok (CUPTI_API_VERSION %d; %zu-byte kernel prefix of a %zu-byte "
         "CUpti_ActivityKernel10)\n", CUPTI_API_VERSION, sizeof(ncs_cupti_kernel_t),
         sizeof(CUpti_ActivityKernel10));
  return 0;
}
