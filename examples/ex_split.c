/* ex_split: communicators made from a parent by ncclCommSplit and ncclCommShrink, one thread
 * per GPU. Every child runs --iters AllReduce (sum) with its own ranks' data, verified:
 *   dup     same color on every rank: a copy of the parent
 *   half    color = rank % 2 (with 2 GPUs each half has one rank)
 *   quarter color = rank / (ranks / 4): four blocks of consecutive ranks (one rank each on 4 GPUs)
 *   grouped one ncclGroupStart/End with an AllReduce on the parent, its half and its quarter
 *   nocolor the last rank passes NCCL_SPLIT_NOCOLOR and must get NULL; the others get a comm
 *   share   splitShare = 1 in ncclConfig_t: the child shares the parent's resources and proxy
 *   shrink  ncclCommShrink without the last rank (NCCL 2.27+, 2 or more ranks; the excluded
 *           rank does not call it)
 * The parent runs an AllReduce too; children are destroyed before the parent. */
#include "common.h"

#include <pthread.h>
#include <stdio.h>

typedef struct {
  const ex_opts_t *o;
  ncclUniqueId id;
  int rank;
  pthread_barrier_t *barrier;
} targ_t;

/* AllReduce on comm with data of its own rank numbering, verified; returns the comm's size */
static int allreduce_check(ncclComm_t comm, int dev, const ex_opts_t *o, const char *what) {
  int nranks = 0, rank = -1;
  NCCLCHECK(ncclCommCount(comm, &nranks));
  NCCLCHECK(ncclCommUserRank(comm, &rank));
  ex_bufs_t b;
  ex_bufs_alloc(&b, dev, rank, o->count, o->count);
  for (int it = 0; it < o->iters; it++)
    NCCLCHECK(ncclAllReduce(b.send, b.recv, o->count, ncclFloat, ncclSum, comm, b.stream));
  ex_sync(&b);
  ex_expect_t e = {.kind = EX_SUM, .nranks = nranks};
  ex_verify(dev, b.recv, o->count, &e, rank, what);
  ex_bufs_free(&b);
  return nranks;
}

/* One group: an AllReduce on each of comms[0..k) (different communicators, one GPU), verified */
static void grouped_check(ncclComm_t *comms, int k, int dev, const ex_opts_t *o) {
  ex_bufs_t b[4];
  int nr[4];
  for (int i = 0; i < k; i++) {
    int rank;
    NCCLCHECK(ncclCommCount(comms[i], &nr[i]));
    NCCLCHECK(ncclCommUserRank(comms[i], &rank));
    ex_bufs_alloc(&b[i], dev, rank, o->count, o->count);
  }
  for (int it = 0; it < o->iters; it++) {
    NCCLCHECK(ncclGroupStart());
    for (int i = 0; i < k; i++)
      NCCLCHECK(ncclAllReduce(b[i].send, b[i].recv, o->count, ncclFloat, ncclSum, comms[i], b[i].stream));
    NCCLCHECK(ncclGroupEnd());
  }
  for (int i = 0; i < k; i++) {
    ex_sync(&b[i]);
    ex_expect_t e = {.kind = EX_SUM, .nranks = nr[i]};
    ex_verify(dev, b[i].recv, o->count, &e, 0, "grouped AllReduce over parent, half and quarter");
    ex_bufs_free(&b[i]);
  }
}

static void destroy(ncclComm_t comm) {
  if (!comm) return;
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
}

static void *run_rank(void *p) {
  targ_t *t = p;
  const ex_opts_t *o = t->o;
  int n = o->ranks, r = t->rank, dev = r, got;
  CUDACHECK(cudaSetDevice(dev));
  ncclConfig_t pcfg = NCCL_CONFIG_INITIALIZER;
  pcfg.commName = "ncs-split-parent";
  ncclComm_t parent, dup = NULL, half = NULL, quarter = NULL, nocolor = NULL, share = NULL,
             shrunk = NULL;
  NCCLCHECK(ncclCommInitRankConfig(&parent, n, t->id, r, &pcfg));

  NCCLCHECK(ncclCommSplit(parent, 0, r, &dup, NULL));
  got = allreduce_check(dup, dev, o, "AllReduce on the duplicate");
  EXCHECK(got == n, "duplicate has %d ranks, expected %d", got, n);

  NCCLCHECK(ncclCommSplit(parent, r % 2, r, &half, NULL));
  got = allreduce_check(half, dev, o, "AllReduce on a half");
  EXCHECK(got == (n - r % 2 + 1) / 2, "half %d has %d ranks, expected %d", r % 2, got,
          (n - r % 2 + 1) / 2);

  int qsize = n >= 4 ? n / 4 : 1, qcolor = r / qsize > 3 ? 3 : r / qsize;
  NCCLCHECK(ncclCommSplit(parent, qcolor, r, &quarter, NULL));
  got = allreduce_check(quarter, dev, o, "AllReduce on a quarter");
  int qwant = qcolor < 3 ? qsize : n - 3 * qsize;
  if (n < 4) qwant = 1;
  EXCHECK(got == qwant, "quarter %d has %d ranks, expected %d", qcolor, got, qwant);
  ncclComm_t trio[3] = {parent, half, quarter};
  grouped_check(trio, 3, dev, o);

  NCCLCHECK(ncclCommSplit(parent, r == n - 1 ? NCCL_SPLIT_NOCOLOR : 0, r, &nocolor, NULL));
  if (r == n - 1) {
    EXCHECK(nocolor == NULL, "rank %d split with NCCL_SPLIT_NOCOLOR but got a communicator", r);
  } else {
    got = allreduce_check(nocolor, dev, o, "AllReduce without the NOCOLOR rank");
    EXCHECK(got == n - 1, "NOCOLOR split has %d ranks, expected %d", got, n - 1);
  }

  ncclConfig_t scfg = NCCL_CONFIG_INITIALIZER;
  scfg.splitShare = 1;
  scfg.commName = "ncs-split-share";
  NCCLCHECK(ncclCommSplit(parent, 0, r, &share, &scfg));
  allreduce_check(share, dev, o, "AllReduce on the splitShare child");

  allreduce_check(parent, dev, o, "AllReduce on the parent");

#if defined(NCCL_SHRINK_DEFAULT) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  if (n >= 2 && r != n - 1) {
    int excl = n - 1;
    NCCLCHECK(ncclCommShrink(parent, &excl, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT));
    got = allreduce_check(shrunk, dev, o, "AllReduce on the shrunk communicator");
    EXCHECK(got == n - 1, "shrunk communicator has %d ranks, expected %d", got, n - 1);
  }
#endif
  pthread_barrier_wait(t->barrier); /* no rank finalizes the parent while others shrink it */

  destroy(shrunk);
  destroy(share);
  destroy(nocolor);
  destroy(quarter);
  destroy(half);
  destroy(dup);
  destroy(parent);
  return NULL;
}

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "split", &o, 1 << 18, 0);
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)o.ranks);
  targ_t t[EX_MAX_RANKS];
  for (int r = 0; r < o.ranks; r++)
    t[r] = (targ_t){.o = &o, .id = id, .rank = r, .barrier = &barrier};
  ex_spawn(o.ranks, run_rank, t, sizeof t[0]);
  pthread_barrier_destroy(&barrier);
#if defined(NCCL_SHRINK_DEFAULT) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  printf("example=split shrink=%s\n", o.ranks >= 2 ? "yes" : "no (needs 2 ranks)");
#else
  printf("example=split shrink=no (nccl.h older than 2.27)\n");
#endif
  ex_ok(o.ranks);
  return 0;
}
