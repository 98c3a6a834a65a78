/* ex_scalable: ncclCommInitRankScalable with several unique ids (nId = 2 when ranks >= 2), one
 * thread per GPU. Id k is made by rank k * nranks / nId (the designated ranks) and shared through
 * memory after a barrier; then every rank inits with all ids, runs --iters AllReduce (sum),
 * verifies, finalizes and destroys. */
#include "common.h"

#include <pthread.h>
#include <stdio.h>

#define MAX_IDS 2

typedef struct {
  const ex_opts_t *o;
  int rank, nid;
  ncclUniqueId *ids;
  pthread_barrier_t *barrier;
} targ_t;

static void *run_rank(void *p) {
  targ_t *t = p;
  int n = t->o->ranks;
  for (int k = 0; k < t->nid; k++)
    if (k * n / t->nid == t->rank) NCCLCHECK(ncclGetUniqueId(&t->ids[k]));
  pthread_barrier_wait(t->barrier);

  CUDACHECK(cudaSetDevice(t->rank));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.commName = "ncs-scalable";
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRankScalable(&comm, n, t->rank, t->nid, t->ids, &cfg));
  ex_rank_allreduce(comm, t->rank, n, t->o);
  return NULL;
}

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "scalable", &o, 1 << 20, 0);
  int nid = o.ranks >= 2 ? MAX_IDS : 1;
  ncclUniqueId ids[MAX_IDS];
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)o.ranks);
  targ_t t[EX_MAX_RANKS];
  for (int r = 0; r < o.ranks; r++)
    t[r] = (targ_t){.o = &o, .rank = r, .nid = nid, .ids = ids, .barrier = &barrier};
  ex_spawn(o.ranks, run_rank, t, sizeof t[0]);
  pthread_barrier_destroy(&barrier);
  printf("example=scalable nId=%d\n", nid);
  ex_ok(o.ranks);
  return 0;
}
