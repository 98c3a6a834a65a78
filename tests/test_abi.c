/* test_abi.c - the project's ABI structs must match NCCL's byte for byte (x86-64 Linux).
 * The numbers come from the research notes (sizes and offsets computed from NCCL's headers).
 * A mismatch fails the build, not a run. The run checks the exported objects. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "abi/ncs_abi.h"

#define OFF(T, m, v) _Static_assert(offsetof(T, m) == (v), #T "." #m)
#define SZ(T, v) _Static_assert(sizeof(T) == (v), "sizeof " #T)

SZ(ncs_descr_v7_t, 136);
SZ(ncs_descr_v6_t, 112);
SZ(ncs_descr_v4_t, 104);
SZ(ncs_descr_v3_t, 120);
SZ(ncs_descr_v2_t, 128);
SZ(ncs_descr_v1_t, 120);
SZ(ncs_args_v4_t, 8);
SZ(ncs_args_v1_t, 16);
SZ(ncs_args_v7_t, 8);
SZ(ncs_profiler_v7_t, 48);
SZ(ncs_profiler_v6_t, 48);
SZ(ncs_profiler_v4_t, 48);
SZ(ncs_profiler_v1_t, 48);
SZ(ncs_net_ib_v1_t, 40);
SZ(ncs_net_sock_v1_t, 24);

OFF(ncs_descr_v6_t, type, 0);
OFF(ncs_descr_v6_t, parentObj, 8);
OFF(ncs_descr_v6_t, rank, 16);
OFF(ncs_descr_v6_t, groupApi.graphCaptured, 24);
OFF(ncs_descr_v6_t, groupApi.groupDepth, 28);
OFF(ncs_descr_v6_t, collApi.func, 24);
OFF(ncs_descr_v6_t, collApi.count, 32);
OFF(ncs_descr_v6_t, collApi.datatype, 40);
OFF(ncs_descr_v6_t, collApi.root, 48);
OFF(ncs_descr_v6_t, collApi.stream, 56);
OFF(ncs_descr_v6_t, collApi.graphCaptured, 64);
OFF(ncs_descr_v6_t, p2pApi.func, 24);
OFF(ncs_descr_v6_t, p2pApi.count, 32);
OFF(ncs_descr_v6_t, p2pApi.datatype, 40);
OFF(ncs_descr_v6_t, p2pApi.stream, 48);
OFF(ncs_descr_v6_t, p2pApi.graphCaptured, 56);
OFF(ncs_descr_v6_t, kernelLaunch.stream, 24);
OFF(ncs_descr_v6_t, coll.seqNumber, 24);
OFF(ncs_descr_v6_t, coll.func, 32);
OFF(ncs_descr_v6_t, coll.sendBuff, 40);
OFF(ncs_descr_v6_t, coll.recvBuff, 48);
OFF(ncs_descr_v6_t, coll.count, 56);
OFF(ncs_descr_v6_t, coll.root, 64);
OFF(ncs_descr_v6_t, coll.datatype, 72);
OFF(ncs_descr_v6_t, coll.nChannels, 80);
OFF(ncs_descr_v6_t, coll.nWarps, 81);
OFF(ncs_descr_v6_t, coll.algo, 88);
OFF(ncs_descr_v6_t, coll.proto, 96);
OFF(ncs_descr_v6_t, coll.parentGroup, 104);
OFF(ncs_descr_v6_t, p2p.func, 24);
OFF(ncs_descr_v6_t, p2p.buff, 32);
OFF(ncs_descr_v6_t, p2p.datatype, 40);
OFF(ncs_descr_v6_t, p2p.count, 48);
OFF(ncs_descr_v6_t, p2p.peer, 56);
OFF(ncs_descr_v6_t, p2p.nChannels, 60);
OFF(ncs_descr_v6_t, p2p.parentGroup, 64);
OFF(ncs_descr_v6_t, proxyOp.pid, 24);
OFF(ncs_descr_v6_t, proxyOp.channelId, 28);
OFF(ncs_descr_v6_t, proxyOp.peer, 32);
OFF(ncs_descr_v6_t, proxyOp.nSteps, 36);
OFF(ncs_descr_v6_t, proxyOp.chunkSize, 40);
OFF(ncs_descr_v6_t, proxyOp.isSend, 44);
OFF(ncs_descr_v6_t, proxyStep.step, 24);
OFF(ncs_descr_v6_t, kernelCh.channelId, 24);
OFF(ncs_descr_v6_t, kernelCh.pTimer, 32);
OFF(ncs_descr_v6_t, netPlugin.id, 24);
OFF(ncs_descr_v6_t, netPlugin.data, 32);
OFF(ncs_descr_v6_t, ceColl.seqNumber, 24);
OFF(ncs_descr_v6_t, ceColl.syncStrategy, 80);
OFF(ncs_descr_v6_t, ceColl.intraBatchSync, 88);
OFF(ncs_descr_v6_t, ceColl.batchSize, 92);
OFF(ncs_descr_v6_t, ceColl.numBatches, 96);
OFF(ncs_descr_v6_t, ceColl.ceSeqNum, 100);
OFF(ncs_descr_v6_t, ceColl.stream, 104);
OFF(ncs_descr_v6_t, ceCollSync.isComplete, 24);
OFF(ncs_descr_v6_t, ceCollSync.nRanks, 28);
OFF(ncs_descr_v6_t, ceCollBatch.numOps, 24);
OFF(ncs_descr_v6_t, ceCollBatch.totalBytes, 32);
OFF(ncs_descr_v6_t, ceCollBatch.useIntraSync, 40);
/* v7 (NCCL 2.31.2): v6's offsets, the appended userTag, kernelVariant, isSymColl, and kernelPhase */
OFF(ncs_descr_v7_t, type, 0);
OFF(ncs_descr_v7_t, parentObj, 8);
OFF(ncs_descr_v7_t, rank, 16);
OFF(ncs_descr_v7_t, groupApi.graphCaptured, 24);
OFF(ncs_descr_v7_t, groupApi.groupDepth, 28);
OFF(ncs_descr_v7_t, collApi.func, 24);
OFF(ncs_descr_v7_t, collApi.count, 32);
OFF(ncs_descr_v7_t, collApi.datatype, 40);
OFF(ncs_descr_v7_t, collApi.root, 48);
OFF(ncs_descr_v7_t, collApi.stream, 56);
OFF(ncs_descr_v7_t, collApi.graphCaptured, 64);
OFF(ncs_descr_v7_t, collApi.userTag, 72);
OFF(ncs_descr_v7_t, p2pApi.func, 24);
OFF(ncs_descr_v7_t, p2pApi.count, 32);
OFF(ncs_descr_v7_t, p2pApi.datatype, 40);
OFF(ncs_descr_v7_t, p2pApi.stream, 48);
OFF(ncs_descr_v7_t, p2pApi.graphCaptured, 56);
OFF(ncs_descr_v7_t, p2pApi.userTag, 64);
OFF(ncs_descr_v7_t, kernelLaunch.stream, 24);
OFF(ncs_descr_v7_t, coll.seqNumber, 24);
OFF(ncs_descr_v7_t, coll.func, 32);
OFF(ncs_descr_v7_t, coll.sendBuff, 40);
OFF(ncs_descr_v7_t, coll.recvBuff, 48);
OFF(ncs_descr_v7_t, coll.count, 56);
OFF(ncs_descr_v7_t, coll.root, 64);
OFF(ncs_descr_v7_t, coll.datatype, 72);
OFF(ncs_descr_v7_t, coll.nChannels, 80);
OFF(ncs_descr_v7_t, coll.nWarps, 81);
OFF(ncs_descr_v7_t, coll.algo, 88);
OFF(ncs_descr_v7_t, coll.proto, 96);
OFF(ncs_descr_v7_t, coll.parentGroup, 104);
OFF(ncs_descr_v7_t, coll.kernelVariant, 112);
OFF(ncs_descr_v7_t, coll.isSymColl, 120);
OFF(ncs_descr_v7_t, coll.userTag, 128);
OFF(ncs_descr_v7_t, p2p.func, 24);
OFF(ncs_descr_v7_t, p2p.buff, 32);
OFF(ncs_descr_v7_t, p2p.datatype, 40);
OFF(ncs_descr_v7_t, p2p.count, 48);
OFF(ncs_descr_v7_t, p2p.peer, 56);
OFF(ncs_descr_v7_t, p2p.nChannels, 60);
OFF(ncs_descr_v7_t, p2p.parentGroup, 64);
OFF(ncs_descr_v7_t, p2p.userTag, 72);
OFF(ncs_descr_v7_t, proxyOp.pid, 24);
OFF(ncs_descr_v7_t, proxyOp.channelId, 28);
OFF(ncs_descr_v7_t, proxyOp.peer, 32);
OFF(ncs_descr_v7_t, proxyOp.nSteps, 36);
OFF(ncs_descr_v7_t, proxyOp.chunkSize, 40);
OFF(ncs_descr_v7_t, proxyOp.isSend, 44);
OFF(ncs_descr_v7_t, proxyStep.step, 24);
OFF(ncs_descr_v7_t, kernelCh.channelId, 24);
OFF(ncs_descr_v7_t, kernelCh.pTimer, 32);
OFF(ncs_descr_v7_t, netPlugin.id, 24);
OFF(ncs_descr_v7_t, netPlugin.data, 32);
OFF(ncs_descr_v7_t, ceColl.seqNumber, 24);
OFF(ncs_descr_v7_t, ceColl.func, 32);
OFF(ncs_descr_v7_t, ceColl.sendBuff, 40);
OFF(ncs_descr_v7_t, ceColl.recvBuff, 48);
OFF(ncs_descr_v7_t, ceColl.count, 56);
OFF(ncs_descr_v7_t, ceColl.root, 64);
OFF(ncs_descr_v7_t, ceColl.datatype, 72);
OFF(ncs_descr_v7_t, ceColl.syncStrategy, 80);
OFF(ncs_descr_v7_t, ceColl.intraBatchSync, 88);
OFF(ncs_descr_v7_t, ceColl.batchSize, 92);
OFF(ncs_descr_v7_t, ceColl.numBatches, 96);
OFF(ncs_descr_v7_t, ceColl.ceSeqNum, 100);
OFF(ncs_descr_v7_t, ceColl.stream, 104);
OFF(ncs_descr_v7_t, ceColl.userTag, 112);
OFF(ncs_descr_v7_t, ceCollSync.isComplete, 24);
OFF(ncs_descr_v7_t, ceCollSync.nRanks, 28);
OFF(ncs_descr_v7_t, ceCollBatch.numOps, 24);
OFF(ncs_descr_v7_t, ceCollBatch.totalBytes, 32);
OFF(ncs_descr_v7_t, ceCollBatch.useIntraSync, 40);
OFF(ncs_descr_v7_t, kernelPhase.channelId, 24);
OFF(ncs_descr_v7_t, kernelPhase.phaseId, 25);
OFF(ncs_descr_v7_t, kernelPhase.phaseName, 32);
OFF(ncs_descr_v7_t, kernelPhase.pTimer, 40);
OFF(ncs_args_v7_t, kernelCh.pTimer, 0);
OFF(ncs_profiler_v7_t, init, 8);
OFF(ncs_profiler_v7_t, startEvent, 16);
OFF(ncs_profiler_v7_t, stopEvent, 24);
OFF(ncs_profiler_v7_t, recordEventState, 32);
OFF(ncs_profiler_v7_t, finalize, 40);
_Static_assert(NCS_EV_KERNEL_PHASE == 1 << 15, "ncclProfileKernelPhase is bit 15");
_Static_assert(NCS_ST_KERNEL_PHASE_STOP == 31, "ncclProfilerKernelPhaseStop is state 31");
OFF(ncs_descr_v4_t, parentObj, 8);
OFF(ncs_descr_v4_t, coll.proto, 96);
OFF(ncs_descr_v4_t, p2p.nChannels, 60);
OFF(ncs_descr_v4_t, kernelCh.pTimer, 32);
OFF(ncs_descr_v3_t, coll.name, 24);
OFF(ncs_descr_v3_t, coll.commHash, 32);
OFF(ncs_descr_v3_t, coll.nMaxChannels, 96);
OFF(ncs_descr_v3_t, coll.proto, 112);
OFF(ncs_descr_v2_t, coll.trafficBytes, 96);
OFF(ncs_descr_v2_t, coll.proto, 120);
OFF(ncs_descr_v1_t, coll.func, 48);
OFF(ncs_descr_v1_t, coll.datatype, 84);
OFF(ncs_descr_v1_t, coll.op, 88);
OFF(ncs_descr_v1_t, coll.isCollnet, 108);
OFF(ncs_descr_v1_t, coll.isNvls, 112);
OFF(ncs_profiler_v6_t, init, 8);
OFF(ncs_profiler_v6_t, startEvent, 16);
OFF(ncs_profiler_v6_t, stopEvent, 24);
OFF(ncs_profiler_v6_t, recordEventState, 32);
OFF(ncs_profiler_v6_t, finalize, 40);
OFF(ncs_net_ib_v1_t, qp.device, 8);
OFF(ncs_net_ib_v1_t, qp.wr_id, 16);
OFF(ncs_net_ib_v1_t, qp.opcode, 24);
OFF(ncs_net_ib_v1_t, qp.qpNum, 28);
OFF(ncs_net_ib_v1_t, qp.length, 32);
OFF(ncs_net_sock_v1_t, sock.fd, 8);
OFF(ncs_net_sock_v1_t, sock.op, 12);
OFF(ncs_net_sock_v1_t, sock.length, 16);

int main(int argc, char **argv) {
  /* the plugin exports every version as a data object with the right name */
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  const char *names[] = {"ncclProfiler_v1", "ncclProfiler_v2", "ncclProfiler_v3", "ncclProfiler_v4",
                         "ncclProfiler_v5", "ncclProfiler_v6", "ncclProfiler_v7"};
  int bad = 0;
  for (int i = 0; i < 7; i++) {
    const ncs_profiler_v1_t *p = dlsym(h, names[i]);
    if (!p || !p->name || strcmp(p->name, "ncclscope") || !p->init || !p->startEvent ||
        !p->stopEvent || !p->recordEventState || !p->finalize) {
      fprintf(stderr, "%s missing or incomplete\n", names[i]);
      bad = 1;
    }
  }
  if (dlsym(h, "ncs_g") || dlsym(h, "ncs_log")) {
    fprintf(stderr, "internal symbols are exported\n");
    bad = 1;
  }
  dlclose(h);
  printf("%s\n", bad ? "abi: FAILED" : "abi: ok");
  return bad;
}
