/* ex_abort: ending communicators both ways, one thread, non-blocking communicators (so no call
 * can block the thread).
 *   1. normal: init, AllReduce (verified), ncclCommFinalize (polled), ncclCommDestroy.
 *   2. abort: init, one AllReduce on every rank (connections up, verified), then a large
 *      AllReduce that only rank 0 issues, so its kernel waits for peers that never come. After
 *      about a second every communicator is ended with ncclCommAbort, and rank 0's stream must
 *      drain. With one rank nothing hangs; the abort still runs.
 * Exits 0 after a clean abort. Coll/P2p events of the hung AllReduce never complete: the trace
 * check runs with --allow-missing-completion coll,p2p --no-seq-match for this example. */
#include "common.h"

#include <stdio.h>

#define WAIT_S 60.0

static void init_comms(ncclComm_t *comms, int n, const char *name) {
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.commName = name;
  NCCLCHECK_ASYNC(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    CUDACHECK(cudaSetDevice(i));
    NCCLCHECK_ASYNC(ncclCommInitRankConfig(&comms[i], n, id, i, &cfg));
  }
  NCCLCHECK_ASYNC(ncclGroupEnd());
  ex_wait_comms(comms, n, WAIT_S, "ncclCommInitRankConfig");
}

static void allreduce_all(ncclComm_t *comms, ex_bufs_t *b, int n, size_t count) {
  NCCLCHECK_ASYNC(ncclGroupStart());
  for (int i = 0; i < n; i++)
    NCCLCHECK_ASYNC(
        ncclAllReduce(b[i].send, b[i].recv, count, ncclFloat, ncclSum, comms[i], b[i].stream));
  NCCLCHECK_ASYNC(ncclGroupEnd());
  ex_wait_comms(comms, n, WAIT_S, "ncclAllReduce");
  ex_expect_t e = {.kind = EX_SUM, .nranks = n};
  for (int i = 0; i < n; i++) {
    ex_sync(&b[i]);
    ex_verify(b[i].dev, b[i].recv, count, &e, i, "AllReduce");
  }
}

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "abort", &o, 16 << 20, 0);
  int n = o.ranks;
  ncclComm_t comms[EX_MAX_RANKS];
  ex_bufs_t b[EX_MAX_RANKS];
  for (int i = 0; i < n; i++) ex_bufs_alloc(&b[i], i, i, o.count, o.count);

  /* 1. the normal end */
  init_comms(comms, n, "ncs-abort-normal");
  for (int it = 0; it < o.iters; it++) allreduce_all(comms, b, n, o.count);
  for (int i = 0; i < n; i++) NCCLCHECK_ASYNC(ncclCommFinalize(comms[i]));
  ex_wait_comms(comms, n, WAIT_S, "ncclCommFinalize");
  for (int i = 0; i < n; i++) NCCLCHECK_ASYNC(ncclCommDestroy(comms[i]));

  /* 2. abort a hung operation */
  init_comms(comms, n, "ncs-abort-hang");
  allreduce_all(comms, b, n, o.count);
  NCCLCHECK_ASYNC(
      ncclAllReduce(b[0].send, b[0].recv, o.count, ncclFloat, ncclSum, comms[0], b[0].stream));
  double end = ex_now() + 10;
  ncclResult_t st = ncclInProgress;
  while (st == ncclInProgress && ex_now() < end) { /* the enqueue, not the operation */
    NCCLCHECK(ncclCommGetAsyncError(comms[0], &st));
    if (st == ncclInProgress) ex_sleep(0.001);
  }
  EXCHECK(st == ncclSuccess || st == ncclInProgress, "rank 0 AllReduce: NCCL error %d: %s", (int)st,
          ncclGetErrorString(st));
  ex_sleep(1.0);
  CUDACHECK(cudaSetDevice(0));
  cudaError_t q = cudaStreamQuery(b[0].stream);
  int hung = q == cudaErrorNotReady;
  EXCHECK(q == cudaSuccess || hung, "rank 0 stream: CUDA error %d: %s", (int)q,
          cudaGetErrorString(q));
  if (n > 1 && st == ncclSuccess)
    EXCHECK(hung, "the AllReduce that rank %d skipped finished anyway", n - 1);
  printf("example=abort hung=%s enqueue=%s\n", hung ? "yes" : "no",
         st == ncclSuccess ? "done" : "in-progress");
  for (int i = 0; i < n; i++) NCCLCHECK_ASYNC(ncclCommAbort(comms[i]));
  end = ex_now() + 20;
  while ((q = cudaStreamQuery(b[0].stream)) == cudaErrorNotReady) {
    EXCHECK(ex_now() < end, "rank 0 stream still busy 20 s after ncclCommAbort");
    ex_sleep(0.01);
  }
  EXCHECK(q == cudaSuccess, "rank 0 stream after abort: CUDA error %d: %s", (int)q,
          cudaGetErrorString(q));
  for (int i = 0; i < n; i++) ex_bufs_free(&b[i]);
  ex_ok(n);
  return 0;
}
