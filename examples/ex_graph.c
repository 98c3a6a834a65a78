/* ex_graph: CUDA graph capture of NCCL collectives, one thread per GPU (a graph per rank).
 * After one eager AllReduce (connections are set up outside the capture), each rank captures
 * AllReduce, AllGather and ReduceScatter on its stream (cudaStreamBeginCapture ...
 * cudaStreamEndCapture, cudaGraphInstantiateWithFlags), replays the graph --iters times with
 * cudaGraphLaunch and verifies all three results. */
#include "common.h"

typedef struct {
  const ex_opts_t *o;
  ncclUniqueId id;
  int rank;
} targ_t;

static void *run_rank(void *p) {
  targ_t *t = p;
  int n = t->o->ranks, r = t->rank;
  size_t cnt = t->o->count, nc = (size_t)n * cnt;
  CUDACHECK(cudaSetDevice(r));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, n, t->id, r));
  /* recv: [AllReduce: cnt][AllGather: n*cnt][ReduceScatter: cnt]; send: n*cnt */
  ex_bufs_t b;
  ex_bufs_alloc(&b, r, r, nc, 2 * cnt + nc);
  float *ar = b.recv, *ag = b.recv + cnt, *rs = b.recv + cnt + nc;
  NCCLCHECK(ncclAllReduce(b.send, ar, cnt, ncclFloat, ncclSum, comm, b.stream));
  ex_sync(&b);

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDACHECK(cudaStreamBeginCapture(b.stream, cudaStreamCaptureModeThreadLocal));
  NCCLCHECK(ncclAllReduce(b.send, ar, cnt, ncclFloat, ncclSum, comm, b.stream));
  NCCLCHECK(ncclAllGather(b.send, ag, cnt, ncclFloat, comm, b.stream));
  NCCLCHECK(ncclReduceScatter(b.send, rs, cnt, ncclFloat, ncclSum, comm, b.stream));
  CUDACHECK(cudaStreamEndCapture(b.stream, &graph));
  CUDACHECK(cudaGraphInstantiateWithFlags(&exec, graph, 0));

  ex_poison(b.recv, b.recv_n, b.stream); /* only the replays can fill it */
  for (int it = 0; it < t->o->iters; it++) CUDACHECK(cudaGraphLaunch(exec, b.stream));
  ex_sync(&b);
  ex_expect_t sum = {.kind = EX_SUM, .nranks = n};
  ex_expect_t gather = {.kind = EX_GATHER, .block = cnt};
  ex_expect_t scatter = {.kind = EX_SUM, .nranks = n, .offset = (size_t)r * cnt};
  ex_verify(r, ar, cnt, &sum, r, "AllReduce (graph replay)");
  ex_verify(r, ag, nc, &gather, r, "AllGather (graph replay)");
  ex_verify(r, rs, cnt, &scatter, r, "ReduceScatter (graph replay)");

  CUDACHECK(cudaGraphExecDestroy(exec));
  CUDACHECK(cudaGraphDestroy(graph));
  ex_bufs_free(&b);
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  return NULL;
}

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "graph", &o, 1 << 16, 0);
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  targ_t t[EX_MAX_RANKS];
  for (int r = 0; r < o.ranks; r++) t[r] = (targ_t){.o = &o, .id = id, .rank = r};
  ex_spawn(o.ranks, run_rank, t, sizeof t[0]);
  ex_ok(o.ranks);
  return 0;
}
