/* ex_cupti: GPU truth on real GPUs (docs/gpu-truth.md, scripts/gpu-cupti.sh). One thread per GPU,
 * one NCCL communicator over all of them (one GPU is enough: its one-rank communicator loads
 * and initializes the profiler plugin as any NCCL program does, and the plugin takes CUPTI).
 * Each rank then:
 *   - launches --iters rounds of a spinning kernel (ncs_spin, 20 us by the GPU's clock) on each of
 *     --streams streams (driver API, PTX below: no nvcc needed), and with two or more ranks an
 *     AllReduce per round after one warm-up AllReduce;
 *   - captures a graph of ncs_spin (10 us), an AllReduce (two or more ranks) and ncs_empty, and
 *     replays it --replays times.
 * It writes what the trace must then hold to --expect FILE (ncs-cupti-check --counts reads it):
 * every kernel and every replay, by name, and the NCCL kernels joined to their AllReduces.
 *
 * --bench N: instead, time N launches of an empty kernel on one stream (and with two or more
 * ranks N small AllReduces), the cost per kernel launch that CUPTI adds when compared across
 * runs with NCCLSCOPE_CUPTI=off and on (scripts/gpu-cupti.sh). */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define CUCHECK(cmd)                                                                              \
  do {                                                                                            \
    CUresult e_ = (cmd);                                                                          \
    if (e_ != CUDA_SUCCESS) ex_die(__FILE__, __LINE__, "%s: CUDA driver error %d", #cmd, (int)e_); \
  } while (0)

/* ncs_spin(ns): one thread waits until the GPU's global timer moved ns; ncs_empty: returns */
static const char ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry ncs_empty() { ret; }\n"
    ".visible .entry ncs_spin(.param .u64 ns) {\n"
    "  .reg .u64 %n, %t0, %t1, %d;\n"
    "  .reg .pred %p;\n"
    "  ld.param.u64 %n, [ns];\n"
    "  mov.u64 %t0, %globaltimer;\n"
    "LOOP:\n"
    "  mov.u64 %t1, %globaltimer;\n"
    "  sub.u64 %d, %t1, %t0;\n"
    "  setp.lt.u64 %p, %d, %n;\n"
    "  @%p bra LOOP;\n"
    "  ret;\n"
    "}\n";

#define SPIN_NS 20000ull
#define GRAPH_SPIN_NS 10000ull
#define MAX_STREAMS 8

static int streams = 3, replays = 20, bench;
static const char *expect_path;
static pthread_barrier_t bar;

typedef struct {
  const ex_opts_t *o;
  ncclUniqueId id;
  int rank;
  double bench_launch_ns, bench_allreduce_ns;
} targ_t;

static void launch(CUfunction f, CUstream s, uint64_t ns) {
  void *args[] = {&ns};
  CUCHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, ns ? args : NULL, NULL));
}

static void run_bench(targ_t *t, ncclComm_t comm, CUfunction empty, cudaStream_t s, float *buf) {
  int n = bench;
  double t0 = ex_now();
  if (t->rank == 0)
    for (int i = 0; i < n; i++) launch(empty, (CUstream)s, 0);
  CUDACHECK(cudaStreamSynchronize(s));
  t->bench_launch_ns = (ex_now() - t0) * 1e9 / n;
  if (t->o->ranks < 2) return;
  pthread_barrier_wait(&bar);
  t0 = ex_now();
  for (int i = 0; i < n; i++) NCCLCHECK(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, s));
  CUDACHECK(cudaStreamSynchronize(s));
  t->bench_allreduce_ns = (ex_now() - t0) * 1e9 / n;
}

static void *run_rank(void *p) {
  targ_t *t = p;
  int n = t->o->ranks, r = t->rank;
  CUDACHECK(cudaSetDevice(r));
  CUDACHECK(cudaFree(0)); /* the primary context, current for the driver API too */
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, n, t->id, r));
  pthread_barrier_wait(&bar); /* every communicator exists: the plugin is set up */
  CUmodule mod;
  CUfunction spin, empty;
  CUCHECK(cuModuleLoadData(&mod, ptx));
  CUCHECK(cuModuleGetFunction(&spin, mod, "ncs_spin"));
  CUCHECK(cuModuleGetFunction(&empty, mod, "ncs_empty"));
  cudaStream_t st[MAX_STREAMS];
  for (int s = 0; s < streams; s++) CUDACHECK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
  float *buf;
  size_t cnt = t->o->count;
  CUDACHECK(cudaMalloc((void **)&buf, cnt * sizeof(float)));
  CUDACHECK(cudaMemset(buf, 0, cnt * sizeof(float)));
  if (bench) {
    run_bench(t, comm, empty, st[0], buf);
  } else {
    if (n > 1) NCCLCHECK(ncclAllReduce(buf, buf, cnt, ncclFloat, ncclSum, comm, st[0])); /* warm-up */
    for (int it = 0; it < t->o->iters; it++) {
      for (int s = 0; s < streams; s++) launch(spin, (CUstream)st[s], SPIN_NS);
      if (n > 1) NCCLCHECK(ncclAllReduce(buf, buf, cnt, ncclFloat, ncclSum, comm, st[0]));
    }
    for (int s = 0; s < streams; s++) CUDACHECK(cudaStreamSynchronize(st[s]));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDACHECK(cudaStreamBeginCapture(st[0], cudaStreamCaptureModeThreadLocal));
    launch(spin, (CUstream)st[0], GRAPH_SPIN_NS);
    if (n > 1) NCCLCHECK(ncclAllReduce(buf, buf, cnt, ncclFloat, ncclSum, comm, st[0]));
    launch(empty, (CUstream)st[0], 0);
    CUDACHECK(cudaStreamEndCapture(st[0], &graph));
    CUDACHECK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
    for (int i = 0; i < replays; i++) CUDACHECK(cudaGraphLaunch(exec, st[0]));
    CUDACHECK(cudaStreamSynchronize(st[0]));
    CUDACHECK(cudaGraphExecDestroy(exec));
    CUDACHECK(cudaGraphDestroy(graph));
  }
  for (int s = 0; s < streams; s++) CUDACHECK(cudaStreamDestroy(st[s]));
  CUDACHECK(cudaFree(buf));
  CUCHECK(cuModuleUnload(mod));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm)); /* the last one: the plugin completes the trace */
  return NULL;
}

/* What the trace must hold (ncs-cupti-check --counts). */
static void write_expect(const ex_opts_t *o) {
  FILE *f = fopen(expect_path, "w");
  EXCHECK(f, "cannot write %s", expect_path);
  int n = o->ranks;
  fprintf(f, "expect name=ncs_spin graph=0 count=%d min_ns=%llu\n", n * o->iters * streams, SPIN_NS);
  fprintf(f, "expect name=ncs_spin graph=1 count=%d replays=%d min_ns=%llu\n", n * replays, replays,
          GRAPH_SPIN_NS);
  fprintf(f, "expect name=ncs_empty graph=1 count=%d replays=%d\n", n * replays, replays);
  if (n > 1) {
    fprintf(f, "expect nccl=eager count=%d func=AllReduce\n", n * (o->iters + 1));
    fprintf(f, "expect nccl=graph count=%d replays=%d func=AllReduce\n", n * replays, replays);
  }
  fclose(f);
}

/* Take this program's own options out of argv before ex_init parses the common ones. */
static int own_options(int argc, char **argv) {
  int k = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--streams") && v) streams = atoi(v), i++;
    else if (!strcmp(a, "--replays") && v) replays = atoi(v), i++;
    else if (!strcmp(a, "--expect") && v) expect_path = v, i++;
    else if (!strcmp(a, "--bench") && v) bench = atoi(v), i++;
    else argv[k++] = argv[i];
  }
  if (streams < 1 || streams > MAX_STREAMS || replays < 1 || bench < 0) {
    fprintf(stderr, "ex_cupti: --streams 1..%d, --replays >= 1, --bench >= 0\n", MAX_STREAMS);
    exit(2);
  }
  return k;
}

int main(int argc, char **argv) {
  argc = own_options(argc, argv);
  ex_opts_t o;
  ex_init(argc, argv, "cupti", &o, 1 << 16, 0);
  pthread_barrier_init(&bar, NULL, (unsigned)o.ranks);
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  targ_t t[EX_MAX_RANKS];
  for (int r = 0; r < o.ranks; r++) t[r] = (targ_t){.o = &o, .id = id, .rank = r};
  ex_spawn(o.ranks, run_rank, t, sizeof t[0]);
  if (bench)
    printf("bench ranks=%d launches=%d ns_per_kernel_launch=%.1f ns_per_allreduce=%.1f cupti=%s\n",
           o.ranks, bench, t[0].bench_launch_ns, t[0].bench_allreduce_ns,
           getenv("NCCLSCOPE_CUPTI") ? getenv("NCCLSCOPE_CUPTI") : "unset");
  else if (expect_path)
    write_expect(&o);
  ex_ok(o.ranks);
  return 0;
}
