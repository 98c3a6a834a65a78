/* ex_threads: one thread per GPU. The unique id is made before the threads start; each thread
 * runs ncclCommInitRank, --iters AllReduce (sum), verifies, finalizes and destroys. */
#include "common.h"

typedef struct {
  const ex_opts_t *o;
  ncclUniqueId id;
  int rank;
} targ_t;

static void *run_rank(void *p) {
  targ_t *t = p;
  int n = t->o->ranks;
  CUDACHECK(cudaSetDevice(t->rank));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, n, t->id, t->rank));
  ex_rank_allreduce(comm, t->rank, n, t->o);
  return NULL;
}

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "threads", &o, 1 << 20, 0);
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  targ_t t[EX_MAX_RANKS];
  for (int r = 0; r < o.ranks; r++) t[r] = (targ_t){.o = &o, .id = id, .rank = r};
  ex_spawn(o.ranks, run_rank, t, sizeof t[0]);
  ex_ok(o.ranks);
  return 0;
}
