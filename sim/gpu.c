/* gpu.c - nccl-sim as the CUDA driver under a fake CUPTI (--cupti PATH; docs/nccl-sim.md "GPU
 * truth with a fake CUPTI").
 *
 * A real process has CUDA's driver calling CUPTI's callbacks around kernel launches and graph
 * operations, and CUPTI reporting every kernel that ran. nccl-sim has no GPU; with --cupti it
 * loads a library with CUPTI's API plus a small control API (tests/fake_cupti.c) and calls it
 * where the driver would: around each kernel plan's launch (inside the KernelLaunch event, as
 * NCCL's cuLaunchKernelEx is), at graph instantiation and launch, and when a fake kernel ends.
 * The plugin loads the same library as its libcupti. With --gpu-truth FILE every process also
 * appends what really happened, one line per kernel, for the tests to compare with the trace.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

static struct {
  void *lib;
  uint32_t (*launch)(int graph, uint64_t *node);
  int (*kernel)(uint32_t corr, uint32_t device, uint32_t stream, const char *name, uint64_t start,
                uint64_t end, uint32_t graph, uint64_t node);
  uint32_t (*graph_new)(void);
  uint32_t (*instantiate)(uint32_t graph);
  uint32_t (*graph_launch)(uint32_t exec, void *stream);
  int (*other)(const char *name, char *holder, size_t n);
  void (*set_device)(int device); /* --cuda */
  int truth;
} S = {.truth = -1};

/* Kernel names are static, as CUPTI's are shared strings. */
static const char *const nccl_names[SIM_NFUNCS] = {
    "ncclDevKernel_Broadcast_RING_LL", "ncclDevKernel_Reduce_Sum_f32_RING_LL",
    "ncclDevKernel_AllGather_RING_LL", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_SendRecv",
    "ncclDevKernel_SendRecv", "ncclDevKernel_SendRecv"};
static const char *const compute_names[4] = {"sim_gemm_128x128_kernel", "sim_layernorm_kernel",
                                             "sim_softmax_fwd_kernel", "sim_elementwise_add_kernel"};

int sim_gpu_load(void) {
  if (!sim_opt.cupti_path) return 0;
  S.lib = dlopen(sim_opt.cupti_path, RTLD_NOW | RTLD_GLOBAL);
  if (!S.lib) {
    fprintf(stderr, "nccl-sim: --cupti %s: %s\n", sim_opt.cupti_path, dlerror());
    return -1;
  }
  *(void **)&S.launch = dlsym(S.lib, "fakecupti_launch");
  *(void **)&S.kernel = dlsym(S.lib, "fakecupti_kernel");
  *(void **)&S.graph_new = dlsym(S.lib, "fakecupti_graph_new");
  *(void **)&S.instantiate = dlsym(S.lib, "fakecupti_instantiate");
  *(void **)&S.graph_launch = dlsym(S.lib, "fakecupti_graph_launch");
  *(void **)&S.other = dlsym(S.lib, "fakecupti_subscribe_other");
  if (!S.launch || !S.kernel || !S.graph_new || !S.instantiate || !S.graph_launch || !S.other) {
    fprintf(stderr, "nccl-sim: --cupti %s is not a fake CUPTI (no fakecupti_* functions)\n",
            sim_opt.cupti_path);
    return -1;
  }
  if (sim_opt.cuda_path) { /* the plugin asks the driver for the current context (metrics) */
    void *cuda = dlopen(sim_opt.cuda_path, RTLD_NOW | RTLD_GLOBAL);
    *(void **)&S.set_device = cuda ? dlsym(cuda, "fakecuda_set_device") : NULL;
    if (!S.set_device) {
      fprintf(stderr, "nccl-sim: --cuda %s is not a fake libcuda (%s)\n", sim_opt.cuda_path,
              cuda ? "no fakecuda_set_device" : dlerror());
      return -1;
    }
  }
  if (sim_opt.gpu_truth) {
    S.truth = open(sim_opt.gpu_truth, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (S.truth < 0) {
      perror(sim_opt.gpu_truth);
      return -1;
    }
  }
  return 0;
}

int sim_gpu_on(void) { return S.lib != NULL; }

/* One line of ground truth; a single write, so lines of several processes do not mix. */
static void truth(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void truth(const char *fmt, ...) {
  if (S.truth < 0) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  if (write(S.truth, line, (size_t)n) != n) sim_fail("cannot write --gpu-truth");
}

uint32_t sim_gpu_launch(uint32_t graph, uint64_t *node) {
  if (node) *node = 0;
  uint32_t corr = S.lib ? S.launch((int)graph, node) : 0;
  if (corr && !graph) sim_range_note_launch(corr, 0);
  return corr;
}

void sim_gpu_set_device(int device) {
  if (S.set_device) S.set_device(device);
}

uint32_t sim_gpu_graph_new(void) { return S.lib ? S.graph_new() : 0; }
uint32_t sim_gpu_instantiate(uint32_t graph) { return S.lib && graph ? S.instantiate(graph) : 0; }
uint32_t sim_gpu_graph_launch(uint32_t exec, void *stream) {
  return S.lib && exec ? S.graph_launch(exec, stream) : 0;
}

/* The CUPTI stream id of a communicator's stream, and of a rank's compute stream. */
uint32_t sim_gpu_stream(const void *stream) { return (uint32_t)(((uintptr_t)stream >> 8) & 0xFFFF) + 16; }
#define COMPUTE_STREAM 7

/* A plan's kernel ended (or never will). `ops` is the plan's operations as the truth line
 * states them. */
void sim_gpu_kernel_end(const sim_inst_t *in, int completed) {
  if (!S.lib || !in->corr) return;
  if (!completed) {
    atomic_fetch_add(&sim_cnt->gpu_hung, 1);
    truth("H pid=%d corr=%u comm=0x%llx rank=%d", (int)getpid(), in->corr,
          (unsigned long long)in->kcomm, in->krank);
    return;
  }
  uint64_t end = sim_now_ns();
  uint64_t start = in->kstart < end ? in->kstart : end - 1000;
  const char *name = nccl_names[in->kfunc >= 0 && in->kfunc < SIM_NFUNCS ? in->kfunc : 0];
  /* it ran, whether or not CUPTI records it (dropped, not tracing) */
  if (!S.kernel(in->corr, in->kdevice, in->kstream, name, start, end, in->kgraph, in->knode))
    atomic_fetch_add(&sim_cnt->gpu_untraced, 1);
  atomic_fetch_add(in->kgraph ? &sim_cnt->gpu_replays : &sim_cnt->gpu_nccl, 1);
  truth("K pid=%d corr=%u kind=nccl device=%u stream=%u start=%llu end=%llu graph=%u node=0x%llx "
        "replay=%u comm=0x%llx rank=%d ops=%s",
        (int)getpid(), in->corr, in->kdevice, in->kstream, (unsigned long long)start,
        (unsigned long long)end, in->kgraph, (unsigned long long)in->knode, in->kreplay,
        (unsigned long long)in->kcomm, in->krank, in->kops);
}

/* Compute kernels: nccl-sim's stand-in for the application's own work between NCCL calls, on
 * the rank's compute stream (or captured into its graph). */
static uint64_t compute_ns(int k) { return 20000u + 15000u * (uint64_t)(k % 4); }

void sim_gpu_compute(int device, uint32_t graph, uint64_t *nodes, int n) {
  for (int k = 0; S.lib && k < n; k++) {
    uint64_t node = 0;
    uint32_t corr = S.launch((int)graph, &node);
    if (!graph) sim_range_note_launch(corr, 1);
    if (graph) { /* captured: runs at every replay */
      if (nodes) nodes[k] = node;
      continue;
    }
    uint64_t start = sim_now_ns(), end = start + compute_ns(k);
    if (!S.kernel(corr, (uint32_t)device, COMPUTE_STREAM, compute_names[k % 4], start, end, 0, 0))
      atomic_fetch_add(&sim_cnt->gpu_untraced, 1);
    atomic_fetch_add(&sim_cnt->gpu_compute, 1);
    truth("K pid=%d corr=%u kind=compute device=%d stream=%d start=%llu end=%llu graph=0 node=0x0 "
          "replay=0", (int)getpid(), corr, device, COMPUTE_STREAM, (unsigned long long)start,
          (unsigned long long)end);
  }
}

/* The captured compute kernels of a graph at one of its replays. */
void sim_gpu_compute_replay(int device, uint32_t exec, uint32_t corr, uint32_t replay,
                            const uint64_t *nodes, int n) {
  uint64_t t = sim_now_ns();
  for (int k = 0; S.lib && k < n; k++) {
    uint64_t node = (uint64_t)exec << 32 | (nodes[k] & 0xFFFFFFFFull);
    uint64_t start = t, end = t + compute_ns(k);
    t = end;
    if (!S.kernel(corr, (uint32_t)device, COMPUTE_STREAM, compute_names[k % 4], start, end, exec, node))
      atomic_fetch_add(&sim_cnt->gpu_untraced, 1);
    atomic_fetch_add(&sim_cnt->gpu_compute, 1);
    truth("K pid=%d corr=%u kind=compute device=%d stream=%d start=%llu end=%llu graph=%u node=0x%llx "
          "replay=%u", (int)getpid(), corr, device, COMPUTE_STREAM, (unsigned long long)start,
          (unsigned long long)end, exec, (unsigned long long)node, replay);
  }
}

/* --cupti-other: another CUPTI client tries to subscribe; its answer goes in the summary. */
void sim_gpu_other(void) {
  if (!S.lib || !sim_opt.cupti_other) return;
  char holder[64] = "";
  int r = S.other("sim-other-tool", holder, sizeof holder);
  atomic_store(&sim_cnt->cupti_other, r);
  snprintf(sim_cnt->cupti_other_holder, sizeof sim_cnt->cupti_other_holder, "%s", holder[0] ? holder : "-");
  for (char *p = sim_cnt->cupti_other_holder; *p; p++)
    if (*p == ' ') *p = '_';
}

void sim_gpu_flood_kernel(uint32_t corr) {
  uint64_t t = sim_now_ns();
  if (!S.kernel(corr, 0, 16, nccl_names[F_ALLREDUCE], t, t + 1000, 0, 0))
    atomic_fetch_add(&sim_cnt->gpu_untraced, 1);
  else
    atomic_fetch_add(&sim_cnt->gpu_nccl, 1);
}
