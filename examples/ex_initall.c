/* ex_initall: one process drives every GPU from one thread. ncclCommInitAll, then --iters
 * AllReduce (sum) calls in ncclGroupStart/End, verified on the host. */
#include "common.h"

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "initall", &o, 1 << 20, 0);
  int n = o.ranks, devs[EX_MAX_RANKS];
  ncclComm_t comms[EX_MAX_RANKS];
  ex_bufs_t b[EX_MAX_RANKS];
  for (int i = 0; i < n; i++) devs[i] = i;
  NCCLCHECK(ncclCommInitAll(comms, n, devs));
  for (int i = 0; i < n; i++) ex_bufs_alloc(&b[i], devs[i], i, o.count, o.count);

  ex_group_allreduce(comms, b, n, &o);
  ex_ok(n);
  return 0;
}
