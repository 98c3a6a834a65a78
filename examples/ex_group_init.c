/* ex_group_init: one process, one thread: ncclGetUniqueId, then ncclCommInitRank for every GPU
 * inside ncclGroupStart/End, then --iters AllReduce (sum), verified. */
#include "common.h"

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "group_init", &o, 1 << 20, 0);
  int n = o.ranks;
  ncclUniqueId id;
  ncclComm_t comms[EX_MAX_RANKS];
  ex_bufs_t b[EX_MAX_RANKS];
  NCCLCHECK(ncclGetUniqueId(&id));
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    CUDACHECK(cudaSetDevice(i));
    NCCLCHECK(ncclCommInitRank(&comms[i], n, id, i));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < n; i++) ex_bufs_alloc(&b[i], i, i, o.count, o.count);

  ex_group_allreduce(comms, b, n, &o);
  ex_ok(n);
  return 0;
}
