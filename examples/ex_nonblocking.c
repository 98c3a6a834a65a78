/* ex_nonblocking: non-blocking communicators (config.blocking = 0) with commName, minCTAs and
 * maxCTAs set, driven from one thread. Every NCCL call may answer ncclInProgress; the program then
 * polls ncclCommGetAsyncError until no communicator is in progress (60 s limit) before the next
 * call: after the init, after every group of collectives, and after ncclCommFinalize. */
#include "common.h"

#define WAIT_S 60.0

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "nonblocking", &o, 1 << 20, 0);
  int n = o.ranks;
  ncclUniqueId id;
  ncclComm_t comms[EX_MAX_RANKS];
  ex_bufs_t b[EX_MAX_RANKS];
  NCCLCHECK(ncclGetUniqueId(&id));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.commName = "ncs-nonblocking";
  cfg.minCTAs = 2;
  cfg.maxCTAs = 4;
  NCCLCHECK_ASYNC(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    CUDACHECK(cudaSetDevice(i));
    NCCLCHECK_ASYNC(ncclCommInitRankConfig(&comms[i], n, id, i, &cfg));
  }
  NCCLCHECK_ASYNC(ncclGroupEnd());
  ex_wait_comms(comms, n, WAIT_S, "ncclCommInitRankConfig");
  for (int i = 0; i < n; i++) ex_bufs_alloc(&b[i], i, i, o.count, 2 * o.count);

  /* AllReduce into recv[0, count), Broadcast from the last rank into recv[count, 2 count) */
  for (int it = 0; it < o.iters; it++) {
    NCCLCHECK_ASYNC(ncclGroupStart());
    for (int i = 0; i < n; i++)
      NCCLCHECK_ASYNC(
          ncclAllReduce(b[i].send, b[i].recv, o.count, ncclFloat, ncclSum, comms[i], b[i].stream));
    NCCLCHECK_ASYNC(ncclGroupEnd());
    ex_wait_comms(comms, n, WAIT_S, "ncclAllReduce");
    NCCLCHECK_ASYNC(ncclGroupStart());
    for (int i = 0; i < n; i++)
      NCCLCHECK_ASYNC(ncclBroadcast(b[i].send, b[i].recv + o.count, o.count, ncclFloat, n - 1,
                                    comms[i], b[i].stream));
    NCCLCHECK_ASYNC(ncclGroupEnd());
    ex_wait_comms(comms, n, WAIT_S, "ncclBroadcast");
  }
  ex_expect_t sum = {.kind = EX_SUM, .nranks = n}, bc = {.kind = EX_COPY, .src = n - 1};
  for (int i = 0; i < n; i++) {
    ex_sync(&b[i]);
    ex_verify(b[i].dev, b[i].recv, o.count, &sum, i, "AllReduce");
    ex_verify(b[i].dev, b[i].recv + o.count, o.count, &bc, i, "Broadcast");
    ex_bufs_free(&b[i]);
  }
  for (int i = 0; i < n; i++) NCCLCHECK_ASYNC(ncclCommFinalize(comms[i]));
  ex_wait_comms(comms, n, WAIT_S, "ncclCommFinalize");
  for (int i = 0; i < n; i++) NCCLCHECK_ASYNC(ncclCommDestroy(comms[i]));
  ex_ok(n);
  return 0;
}
