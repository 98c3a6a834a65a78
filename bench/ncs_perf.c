/* ncs_perf.c - a collective benchmark in the spirit of nccl-tests, written for ncclscope.
 *
 * Times AllReduce, AllGather, ReduceScatter, AlltoAll (grouped send/recv) and SendRecv (ring)
 * over a size sweep, eagerly or as a CUDA graph, either with all GPUs in one process or with
 * one process per GPU. Bus bandwidth uses nccl-tests' factors, so the numbers compare with
 * theirs and with `ncclscope report`.
 *
 *   ncs_perf [--op all|OP[,OP...]] [--min BYTES]
 *            [--max BYTES] [--factor F] [--iters N] [--warmup W] [--graph] [--procs]
 *            [--gpus N] [--check] [--gpu-time]
 *
 * Timing: by default the host's wall time over `iters` operations (launch gaps included, as
 * nccl-tests); --graph launches them as one CUDA graph; --gpu-time queues them behind a held
 * stream and times the GPU running them back to back (time_us is then GPU time per operation,
 * comparable with the kernel durations `ncclscope report` measures).
 *
 * Sizes are the bytes per rank of the collective's "count" in nccl-tests' sense: AllReduce
 * size, AllGather/ReduceScatter total (per-rank share = size / nranks), AlltoAll total.
 * Output: one line per (op, size): `perf: op=allreduce bytes=1048576 time_us=12.34 algbw=..
 * busbw=.. graph=0 procs=0 ranks=2 ok=1 host_us=..` (host_us: the time per operation to issue
 * them, eager runs only; 0 otherwise), after a header line `perf: nccl=22809 gpus=2 procs=0
 * graph=0 iters=20`. OP is allreduce, allgather, reducescatter, alltoall or sendrecv. Sizes are
 * rounded down to a multiple of 4 x ranks bytes (floats, split evenly over the ranks), and up to
 * that when smaller: 8 B is the smallest size at 2 ranks, for every op. bench/overhead.sh
 * parses these lines.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda_runtime.h>
#include <errno.h>
#include <stdatomic.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXG 16
#define CUDA(x)                                                                                   \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "ncs_perf: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)
#define NCCL(x)                                                                                   \
  do {                                                                                            \
    ncclResult_t r_ = (x);                                                                        \
    if (r_ != ncclSuccess) {                                                                      \
      fprintf(stderr, "ncs_perf: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_ALLTOALL, OP_SENDRECV, NOPS };
static const char *const op_names[NOPS] = {"allreduce", "allgather", "reducescatter", "alltoall",
                                           "sendrecv"};

typedef struct {
  int op_mask, iters, warmup, graph, procs, gpus, check, gpu_time;
  size_t min, max;
  double factor;
} opts_t;

/* One rank: its device, communicator, stream and buffers (of the largest size). */
typedef struct {
  int dev, rank;
  ncclComm_t comm;
  cudaStream_t stream;
  float *send, *recv;
  size_t cap; /* bytes of each buffer */
} rank_t;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t parse_size(const char *s) {
  char *e;
  double v = strtod(s, &e);
  switch (*e) {
  case 'K': case 'k': v *= 1024; break;
  case 'M': case 'm': v *= 1024 * 1024; break;
  case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
  default: break;
  }
  return (size_t)v;
}

/* nccl-tests: algbw = size / time; busbw = algbw * factor */
static double bus_factor(int op, int n) {
  switch (op) {
  case OP_ALLREDUCE: return 2.0 * (n - 1) / n;
  case OP_ALLGATHER:
  case OP_REDUCESCATTER:
  case OP_ALLTOALL: return (double)(n - 1) / n;
  default: return 1.0;
  }
}

/* Issue one operation of `bytes` on one rank (inside a group when several ranks share a
 * thread). */
static void issue(int op, rank_t *r, int nranks, size_t bytes) {
  size_t count = bytes / sizeof(float);
  switch (op) {
  case OP_ALLREDUCE:
    NCCL(ncclAllReduce(r->send, r->recv, count, ncclFloat, ncclSum, r->comm, r->stream));
    break;
  case OP_ALLGATHER:
    NCCL(ncclAllGather(r->send, r->recv, count / nranks, ncclFloat, r->comm, r->stream));
    break;
  case OP_REDUCESCATTER:
    NCCL(ncclReduceScatter(r->send, r->recv, count / nranks, ncclFloat, ncclSum, r->comm,
                           r->stream));
    break;
  case OP_ALLTOALL: {
    size_t per = count / nranks;
    NCCL(ncclGroupStart());
    for (int p = 0; p < nranks; p++) {
      NCCL(ncclSend(r->send + p * per, per, ncclFloat, p, r->comm, r->stream));
      NCCL(ncclRecv(r->recv + p * per, per, ncclFloat, p, r->comm, r->stream));
    }
    NCCL(ncclGroupEnd());
    break;
  }
  case OP_SENDRECV: {
    int next = (r->rank + 1) % nranks, prev = (r->rank + nranks - 1) % nranks;
    NCCL(ncclGroupStart());
    NCCL(ncclSend(r->send, count, ncclFloat, next, r->comm, r->stream));
    NCCL(ncclRecv(r->recv, count, ncclFloat, prev, r->comm, r->stream));
    NCCL(ncclGroupEnd());
    break;
  }
  }
}

/* The ranks this process drives (all of them, or its own with --procs) issue k operations. */
static void issue_all(int op, rank_t *rs, int nlocal, int nranks, size_t bytes, int k) {
  for (int it = 0; it < k; it++) {
    NCCL(ncclGroupStart());
    for (int i = 0; i < nlocal; i++) {
      CUDA(cudaSetDevice(rs[i].dev));
      issue(op, &rs[i], nranks, bytes);
    }
    NCCL(ncclGroupEnd());
  }
}

static void sync_all(rank_t *rs, int nlocal) {
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaStreamSynchronize(rs[i].stream));
  }
}

/* Check an AllReduce of ones: every element must equal nranks. */
static int check_allreduce(rank_t *rs, int nlocal, int nranks, size_t bytes) {
  size_t n = bytes / sizeof(float);
  float *h = malloc(bytes ? bytes : 1);
  int ok = 1;
  for (int i = 0; i < nlocal && ok; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaMemcpy(h, rs[i].recv, bytes, cudaMemcpyDeviceToHost));
    for (size_t j = 0; j < n; j++)
      if (h[j] != (float)nranks) {
        fprintf(stderr, "ncs_perf: rank %d element %zu = %g, want %d\n", rs[i].rank, j, h[j], nranks);
        ok = 0;
        break;
      }
  }
  free(h);
  return ok;
}

static void fill_ones(rank_t *r, size_t bytes) {
  size_t n = bytes / sizeof(float);
  float *h = malloc(bytes ? bytes : 1);
  for (size_t j = 0; j < n; j++) h[j] = 1.0f;
  CUDA(cudaSetDevice(r->dev));
  CUDA(cudaMemcpy(r->send, h, bytes, cudaMemcpyHostToDevice));
  free(h);
}

/* --gpu-time: every stream first runs a host function that waits for `gate`, so the operations
 * are all queued before any runs and the GPU then executes them back to back, with no launch
 * gaps. Events after the first and after the last operation give the GPU time per operation
 * (the first one absorbs the ranks' different release times). If queueing blocks (NCCL waits
 * for room in its work FIFO while the stream is held), the gate opens by itself after 10 s and
 * the figure is marked. */
static _Atomic int gate;
static _Atomic int gate_timeouts;
static void CUDART_CB hold_stream(void *arg) {
  (void)arg;
  double t0 = now_s();
  while (!atomic_load(&gate)) {
    if (now_s() - t0 > 10) {
      atomic_fetch_add(&gate_timeouts, 1);
      break;
    }
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}

static double time_gpu(const opts_t *o, int op, rank_t *rs, int nlocal, int nranks, size_t bytes) {
  cudaEvent_t e0[MAXG], e1[MAXG];
  atomic_store(&gate, 0);
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaEventCreate(&e0[i]));
    CUDA(cudaEventCreate(&e1[i]));
    CUDA(cudaLaunchHostFunc(rs[i].stream, hold_stream, NULL));
  }
  issue_all(op, rs, nlocal, nranks, bytes, 1);
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaEventRecord(e0[i], rs[i].stream));
  }
  issue_all(op, rs, nlocal, nranks, bytes, o->iters);
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaEventRecord(e1[i], rs[i].stream));
  }
  atomic_store(&gate, 1);
  sync_all(rs, nlocal);
  float worst = 0;
  for (int i = 0; i < nlocal; i++) {
    float ms;
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaEventElapsedTime(&ms, e0[i], e1[i]));
    if (ms > worst) worst = ms;
    CUDA(cudaEventDestroy(e0[i]));
    CUDA(cudaEventDestroy(e1[i]));
  }
  return (double)worst / 1e3 / o->iters;
}

/* Eager timing: the host's time per operation to issue the `iters` operations, before waiting
 * for them (printed as host_us; close to time_us when the host, not the GPU, sets the pace). */
static double host_s;

/* Time `iters` operations (after `warmup`), eagerly or as one CUDA graph per rank. */
static double time_op(const opts_t *o, int op, rank_t *rs, int nlocal, int nranks, size_t bytes) {
  issue_all(op, rs, nlocal, nranks, bytes, o->warmup);
  sync_all(rs, nlocal);
  if (o->gpu_time) return time_gpu(o, op, rs, nlocal, nranks, bytes);
  if (!o->graph) {
    double t0 = now_s();
    issue_all(op, rs, nlocal, nranks, bytes, o->iters);
    host_s = (now_s() - t0) / o->iters;
    sync_all(rs, nlocal);
    return (now_s() - t0) / o->iters;
  }
  cudaGraph_t g[MAXG];
  cudaGraphExec_t ge[MAXG];
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaStreamBeginCapture(rs[i].stream, cudaStreamCaptureModeThreadLocal));
  }
  issue_all(op, rs, nlocal, nranks, bytes, o->iters);
  /* end every capture before instantiating: while one stream of this thread still captures,
   * instantiation is not permitted (thread-local capture mode) */
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaStreamEndCapture(rs[i].stream, &g[i]));
  }
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaGraphInstantiate(&ge[i], g[i], 0));
  }
  /* one untimed launch, then the timed one */
  for (int pass = 0; pass < 2; pass++) {
    double t0 = now_s();
    for (int i = 0; i < nlocal; i++) {
      CUDA(cudaSetDevice(rs[i].dev));
      CUDA(cudaGraphLaunch(ge[i], rs[i].stream));
    }
    sync_all(rs, nlocal);
    if (pass == 1) {
      for (int i = 0; i < nlocal; i++) {
        CUDA(cudaGraphExecDestroy(ge[i]));
        CUDA(cudaGraphDestroy(g[i]));
      }
      return (now_s() - t0) / o->iters;
    }
  }
  return 0;
}

static int run_ranks(const opts_t *o, rank_t *rs, int nlocal, int nranks, int print) {
  int ok = 1;
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaStreamCreateWithFlags(&rs[i].stream, cudaStreamNonBlocking));
    rs[i].cap = o->max;
    CUDA(cudaMalloc((void **)&rs[i].send, o->max));
    CUDA(cudaMalloc((void **)&rs[i].recv, o->max));
    fill_ones(&rs[i], o->max);
  }
  for (int op = 0; op < NOPS; op++) {
    if (!(o->op_mask & (1 << op))) continue;
    for (size_t b = o->min; b <= o->max; b = (size_t)((double)b * o->factor) > b ? (size_t)((double)b * o->factor) : b + 1) {
      size_t bytes = b - b % (sizeof(float) * (size_t)nranks); /* divisible by ranks */
      if (!bytes) bytes = sizeof(float) * (size_t)nranks;
      double t = time_op(o, op, rs, nlocal, nranks, bytes);
      int good = 1;
      if (o->check && op == OP_ALLREDUCE) good = check_allreduce(rs, nlocal, nranks, bytes);
      ok &= good;
      double alg = (double)bytes / t / 1e9;
      if (print)
        printf("perf: op=%s bytes=%zu time_us=%.2f algbw=%.3f busbw=%.3f graph=%d procs=%d "
               "ranks=%d ok=%d host_us=%.2f%s\n",
               op_names[op], bytes, t * 1e6, alg, alg * bus_factor(op, nranks), o->graph,
               o->procs, nranks, good, o->graph || o->gpu_time ? 0.0 : host_s * 1e6,
               o->gpu_time ? (atomic_exchange(&gate_timeouts, 0) ? " gpu_time=gate-timeout"
                                                                  : " gpu_time=1")
                           : "");
      fflush(stdout);
    }
  }
  for (int i = 0; i < nlocal; i++) {
    CUDA(cudaSetDevice(rs[i].dev));
    CUDA(cudaFree(rs[i].send));
    CUDA(cudaFree(rs[i].recv));
    CUDA(cudaStreamDestroy(rs[i].stream));
    NCCL(ncclCommFinalize(rs[i].comm));
    NCCL(ncclCommDestroy(rs[i].comm));
  }
  return ok;
}

static void usage(FILE *f) {
  fputs("usage: ncs_perf [--op all|OP[,OP...]]  (OP: allreduce allgather reducescatter alltoall sendrecv)\n"
        "                [--min BYTES] [--max BYTES] [--factor F] [--iters N] [--warmup W]\n"
        "                [--graph | --gpu-time] [--procs] [--gpus N] [--check]\n"
        "  --gpu-time  queue all operations behind a held stream, then time them on the GPU back\n"
        "              to back (cudaEvents): GPU time per operation, without host launch gaps\n",
        f);
}

static int parse(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.op_mask = (1 << NOPS) - 1, .iters = 20, .warmup = 5, .min = 8,
                .max = 256u << 20, .factor = 2};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--graph")) o->graph = 1;
    else if (!strcmp(a, "--procs")) o->procs = 1;
    else if (!strcmp(a, "--check")) o->check = 1;
    else if (!strcmp(a, "--gpu-time")) o->gpu_time = 1;
    else if (!strcmp(a, "--help")) { usage(stdout); exit(0); }
    else if (!v) { usage(stderr); return -1; }
    else if (!strcmp(a, "--op")) { /* one name, a comma-separated list, or all */
      o->op_mask = 0;
      for (const char *p = v; *p;) {
        size_t len = strcspn(p, ",");
        int m = len == 3 && !strncmp(p, "all", 3) ? (1 << NOPS) - 1 : 0;
        for (int k = 0; k < NOPS; k++)
          if (strlen(op_names[k]) == len && !strncmp(p, op_names[k], len)) m = 1 << k;
        if (!m) { fprintf(stderr, "ncs_perf: unknown --op %.*s\n", (int)len, p); return -1; }
        o->op_mask |= m;
        p += len + (p[len] == ',');
      }
      if (!o->op_mask) { fprintf(stderr, "ncs_perf: empty --op\n"); return -1; }
      i++;
    } else if (!strcmp(a, "--min")) o->min = parse_size(v), i++;
    else if (!strcmp(a, "--max")) o->max = parse_size(v), i++;
    else if (!strcmp(a, "--factor")) o->factor = atof(v), i++;
    else if (!strcmp(a, "--iters")) o->iters = atoi(v), i++;
    else if (!strcmp(a, "--warmup")) o->warmup = atoi(v), i++;
    else if (!strcmp(a, "--gpus")) o->gpus = atoi(v), i++;
    else { usage(stderr); return -1; }
  }
  if (o->graph && o->gpu_time) {
    fprintf(stderr, "ncs_perf: --graph and --gpu-time are two timings; pick one\n");
    return -1;
  }
  if (o->iters < 1 || o->factor <= 1.0 || o->min < 1 || o->max < o->min) {
    fprintf(stderr, "ncs_perf: need --iters >= 1, --factor > 1 and --min <= --max\n");
    return -1;
  }
  return 0;
}

/* The GPU count without initializing CUDA here: a process that forks must not have touched
 * CUDA, so a short-lived child asks and reports through a pipe. */
static int count_gpus(void) {
  int fd[2], n = 0;
  if (pipe(fd)) return 0;
  pid_t p = fork();
  if (p == 0) {
    int c = 0;
    if (cudaGetDeviceCount(&c) != cudaSuccess) c = 0;
    if (write(fd[1], &c, sizeof c) != (ssize_t)sizeof c) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  if (p < 0 || read(fd[0], &n, sizeof n) != (ssize_t)sizeof n) n = 0;
  close(fd[0]);
  if (p > 0) waitpid(p, NULL, 0);
  return n;
}

static int run_procs(const opts_t *o, int n) {
  rank_t r0;
  memset(&r0, 0, sizeof r0);
  int fds[MAXG][2];
  pid_t kids[MAXG];
  for (int r = 1; r < n; r++) {
    if (pipe(fds[r])) return 0;
    kids[r] = fork();
    if (kids[r] < 0) {
      perror("ncs_perf: fork");
      return 0;
    }
    if (kids[r] == 0) { /* rank r: wait for the id, then only touch its own GPU */
      ncclUniqueId id;
      close(fds[r][1]);
      if (read(fds[r][0], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
      CUDA(cudaSetDevice(r));
      r0.dev = r, r0.rank = r;
      NCCL(ncclCommInitRank(&r0.comm, n, id, r));
      _exit(run_ranks(o, &r0, 1, n, 0) ? 0 : 1);
    }
    close(fds[r][0]);
  }
  ncclUniqueId id;
  NCCL(ncclGetUniqueId(&id));
  for (int r = 1; r < n; r++) {
    if (write(fds[r][1], &id, sizeof id) != (ssize_t)sizeof id) return 0;
    close(fds[r][1]);
  }
  CUDA(cudaSetDevice(0));
  NCCL(ncclCommInitRank(&r0.comm, n, id, 0));
  int ok = run_ranks(o, &r0, 1, n, 1);
  for (int r = 1; r < n; r++) {
    int st;
    while (waitpid(kids[r], &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st)) ok = 0;
  }
  return ok;
}

int main(int argc, char **argv) {
  opts_t o;
  if (parse(argc, argv, &o)) return 2;
  int ndev = o.procs ? count_gpus() : 0;
  if (!o.procs) CUDA(cudaGetDeviceCount(&ndev));
  int n = o.gpus > 0 && o.gpus < ndev ? o.gpus : ndev;
  if (n < 1 || n > MAXG) {
    fprintf(stderr, "ncs_perf: %d GPUs (need 1 to %d)\n", n, MAXG);
    return 1;
  }
  int v;
  NCCL(ncclGetVersion(&v));
  printf("perf: nccl=%d gpus=%d procs=%d graph=%d iters=%d\n", v, n, o.procs, o.graph, o.iters);
  fflush(stdout);
  if (o.procs) return run_procs(&o, n) ? 0 : 1;
  rank_t rs[MAXG];
  memset(rs, 0, sizeof rs);
  int devs[MAXG];
  ncclComm_t comms[MAXG];
  for (int i = 0; i < n; i++) devs[i] = i;
  NCCL(ncclCommInitAll(comms, n, devs));
  for (int i = 0; i < n; i++) rs[i].dev = i, rs[i].rank = i, rs[i].comm = comms[i];
  return run_ranks(&o, rs, n, n, 1) ? 0 : 1;
}
