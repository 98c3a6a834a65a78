/* ex_collectives: every collective at a few sizes, one thread per GPU, each result verified:
 * AllReduce, Broadcast, Reduce, AllGather, ReduceScatter at 1 KiB, 1 MiB and 16 MiB per rank
 * (or --count elements only), a Send/Recv ring, an all-to-all as grouped Send/Recv, and two
 * AllReduce calls on two communicators (the parent and its ncclCommSplit duplicate) in one
 * ncclGroupStart/End. Each operation runs --iters times before it is checked. */
#include "common.h"

#include <stdio.h>

typedef struct {
  const ex_opts_t *o;
  ncclUniqueId id;
  int rank;
} targ_t;

typedef struct {
  int rank, n, iters;
  size_t count;
  ncclComm_t comm, dup;
  ex_bufs_t *b;
} ctx_t;

enum {
  OP_ALLREDUCE,
  OP_BROADCAST,
  OP_REDUCE,
  OP_ALLGATHER,
  OP_REDUCESCATTER,
  OP_RING,
  OP_ALLTOALL,
  OP_TWO_COMMS,
  OP_COUNT
};
static const char *const op_names[OP_COUNT] = {"AllReduce",
                                               "Broadcast",
                                               "Reduce",
                                               "AllGather",
                                               "ReduceScatter",
                                               "SendRecv ring",
                                               "AlltoAll (Send/Recv)",
                                               "AllReduce on 2 comms in one group"};

static void issue(const ctx_t *c, int op, int root) {
  const ex_bufs_t *b = c->b;
  size_t cnt = c->count;
  int n = c->n, r = c->rank;
  switch (op) {
  case OP_ALLREDUCE:
    NCCLCHECK(ncclAllReduce(b->send, b->recv, cnt, ncclFloat, ncclSum, c->comm, b->stream));
    break;
  case OP_BROADCAST:
    NCCLCHECK(ncclBroadcast(b->send, b->recv, cnt, ncclFloat, root, c->comm, b->stream));
    break;
  case OP_REDUCE:
    NCCLCHECK(ncclReduce(b->send, b->recv, cnt, ncclFloat, ncclSum, root, c->comm, b->stream));
    break;
  case OP_ALLGATHER:
    NCCLCHECK(ncclAllGather(b->send, b->recv, cnt, ncclFloat, c->comm, b->stream));
    break;
  case OP_REDUCESCATTER:
    NCCLCHECK(ncclReduceScatter(b->send, b->recv, cnt, ncclFloat, ncclSum, c->comm, b->stream));
    break;
  case OP_RING:
    NCCLCHECK(ncclGroupStart());
    NCCLCHECK(ncclSend(b->send, cnt, ncclFloat, (r + 1) % n, c->comm, b->stream));
    NCCLCHECK(ncclRecv(b->recv, cnt, ncclFloat, (r + n - 1) % n, c->comm, b->stream));
    NCCLCHECK(ncclGroupEnd());
    break;
  case OP_ALLTOALL:
    NCCLCHECK(ncclGroupStart());
    for (int p = 0; p < n; p++) {
      NCCLCHECK(ncclSend(b->send + (size_t)p * cnt, cnt, ncclFloat, p, c->comm, b->stream));
      NCCLCHECK(ncclRecv(b->recv + (size_t)p * cnt, cnt, ncclFloat, p, c->comm, b->stream));
    }
    NCCLCHECK(ncclGroupEnd());
    break;
  case OP_TWO_COMMS:
    NCCLCHECK(ncclGroupStart());
    NCCLCHECK(ncclAllReduce(b->send, b->recv, cnt, ncclFloat, ncclSum, c->comm, b->stream));
    NCCLCHECK(ncclAllReduce(b->send, b->recv + cnt, cnt, ncclFloat, ncclSum, c->dup, b->stream));
    NCCLCHECK(ncclGroupEnd());
    break;
  }
}

static void check(const ctx_t *c, int op, int root) {
  const ex_bufs_t *b = c->b;
  size_t cnt = c->count;
  int n = c->n, r = c->rank;
  char what[96];
  snprintf(what, sizeof what, "%s of %zu floats", op_names[op], cnt);
  ex_expect_t sum = {.kind = EX_SUM, .nranks = n};
  ex_expect_t e = sum;
  size_t len = cnt;
  switch (op) {
  case OP_BROADCAST: e = (ex_expect_t){.kind = EX_COPY, .src = root}; break;
  case OP_REDUCE:
    if (r != root) return;
    break;
  case OP_ALLGATHER:
    e = (ex_expect_t){.kind = EX_GATHER, .block = cnt};
    len = (size_t)n * cnt;
    break;
  case OP_REDUCESCATTER: e.offset = (size_t)r * cnt; break;
  case OP_RING: e = (ex_expect_t){.kind = EX_COPY, .src = (r + n - 1) % n}; break;
  case OP_ALLTOALL:
    e = (ex_expect_t){.kind = EX_GATHER, .block = cnt, .offset = (size_t)r * cnt};
    len = (size_t)n * cnt;
    break;
  }
  if (op == OP_TWO_COMMS) { /* both communicators computed the same sum */
    ex_verify(b->dev, b->recv, cnt, &e, r, what);
    ex_verify(b->dev, b->recv + cnt, cnt, &e, r, what);
    return;
  }
  ex_verify(b->dev, b->recv, len, &e, r, what);
}

static void *run_rank(void *p) {
  targ_t *t = p;
  const ex_opts_t *o = t->o;
  int n = o->ranks, r = t->rank;
  size_t sizes[3] = {256, 256 << 10, 4 << 20}; /* floats: 1 KiB, 1 MiB, 16 MiB */
  int nsizes = 3;
  if (o->count_set) sizes[0] = o->count, nsizes = 1;
  size_t maxc = 0;
  for (int s = 0; s < nsizes; s++) maxc = sizes[s] > maxc ? sizes[s] : maxc;
  size_t slots = (size_t)(n > 2 ? n : 2);

  CUDACHECK(cudaSetDevice(r));
  ncclComm_t comm, dup;
  NCCLCHECK(ncclCommInitRank(&comm, n, t->id, r));
  NCCLCHECK(ncclCommSplit(comm, 0, r, &dup, NULL));
  ex_bufs_t b;
  ex_bufs_alloc(&b, r, r, slots * maxc, slots * maxc);
  for (int s = 0; s < nsizes; s++) {
    ctx_t c = {
        .rank = r, .n = n, .iters = o->iters, .count = sizes[s], .comm = comm, .dup = dup, .b = &b};
    for (int op = 0; op < OP_COUNT; op++) {
      int root = (s + op) % n;
      ex_poison(b.recv, b.recv_n, b.stream);
      for (int it = 0; it < o->iters; it++) issue(&c, op, root);
      ex_sync(&b);
      check(&c, op, root);
    }
  }
  ex_bufs_free(&b);
  NCCLCHECK(ncclCommFinalize(dup));
  NCCLCHECK(ncclCommDestroy(dup));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  return NULL;
}

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "collectives", &o, 256, 0);
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  targ_t t[EX_MAX_RANKS];
  for (int r = 0; r < o.ranks; r++) t[r] = (targ_t){.o = &o, .id = id, .rank = r};
  ex_spawn(o.ranks, run_rank, t, sizeof t[0]);
  ex_ok(o.ranks);
  return 0;
}
