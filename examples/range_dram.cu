/* range_dram.cu - the GPU proof of per-range hardware metrics (issue 17; docs/testing.md "User
 * ranges"): ranges whose DRAM traffic is known, measured through the plugin's range API and
 * CUPTI's range profiler (NCCLSCOPE_RANGE_METRICS), then read back from the trace and compared.
 * Built and run by scripts/gpu-ranges.sh with nvcc (not part of the CMake build).
 *
 *   range_dram PLUGIN DIR
 *
 * Each range launches one kernel over buffers far larger than the L2 (4x 1 GiB ... 256 MiB), so
 * every byte goes to DRAM once: "copy-N" reads N bytes and writes N bytes, "fill-N" writes N.
 * Prints one line per range: measured and known bytes read and written and their ratio, then
 * "range dram: ok" when every one is within 5 %, or "range dram: FAILED".
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../include/ncclscope.h"
extern "C" { /* the project's C headers and libraries */
#include "abi/ncs_abi.h"
#include "trace/reader.h"
}

__global__ void copy(const float4 *a, float4 *b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    b[i] = a[i];
}
__global__ void fill(float4 *b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    b[i] = make_float4(1, 2, 3, 4);
}

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "range dram: %s: %s\n", #x, cudaGetErrorString(e_));                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

struct want { char name[32]; double rd, wr; uint64_t mid; double got_rd, got_wr; int have; };
static want W[16];
static int nw;

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: range_dram PLUGIN DIR\n");
    return 2;
  }
  setenv("NCCLSCOPE_DIR", argv[2], 1);
  setenv("NCCL_PROFILER_PLUGIN", argv[1], 1);
  if (!getenv("NCCLSCOPE_RANGE_METRICS"))
    setenv("NCCLSCOPE_RANGE_METRICS", "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum", 1);
  CK(cudaFree(0)); /* a CUDA context before the first range: the metrics thread has one */
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  const ncs_profiler_v6_t *p = h ? (const ncs_profiler_v6_t *)dlsym(h, "ncclProfiler_v6") : NULL;
  if (!p) {
    fprintf(stderr, "range dram: cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  void *ctx = NULL;
  int mask = 0;
  p->init(&ctx, 0xd7a, &mask, "range-dram", 1, 1, 0, NULL); /* plays NCCL: a segment records */
  const size_t GiB = 1ull << 30;
  float4 *a, *b;
  CK(cudaMalloc(&a, GiB));
  CK(cudaMalloc(&b, GiB));
  CK(cudaMemset(a, 0, GiB));
  CK(cudaDeviceSynchronize());
  size_t sizes[] = {GiB, GiB / 2, GiB / 4};
  for (int rep = 0; rep < 2; rep++)
    for (size_t s : sizes) {
      size_t n = s / sizeof(float4);
      want *w = &W[nw++];
      snprintf(w->name, sizeof w->name, "copy-%zuMiB-%d", s >> 20, rep);
      w->rd = (double)s, w->wr = (double)s;
      ncclscope_range_push(w->name);
      copy<<<1320, 512>>>(a, b, n);
      CK(cudaDeviceSynchronize());
      ncclscope_range_pop();
      w = &W[nw++];
      snprintf(w->name, sizeof w->name, "fill-%zuMiB-%d", s >> 20, rep);
      w->rd = 0, w->wr = (double)s;
      ncclscope_range_push(w->name);
      fill<<<1320, 512>>>(b, n);
      CK(cudaDeviceSynchronize());
      ncclscope_range_pop();
    }
  /* the host cost of a range at the metrics level (CUPTI's range push and pop on top of the
   * plugin's): 256 empty ranges, each a push and a pop, timed as a whole */
  {
    const int R = 256;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < R; i++) {
      ncclscope_range_push("cost");
      ncclscope_range_pop();
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    printf("range dram: cost with metrics: %.0f ns per push or pop (%d empty ranges at the metrics level)\n",
           ns / (2.0 * R), R);
  }
  p->finalize(ctx);

  char **paths, err[256];
  size_t np;
  if (ncs_list_traces(argv[2], &paths, &np, err, sizeof err) != 0 || np != 1) {
    fprintf(stderr, "range dram: FAILED: one trace in %s expected (%s)\n", argv[2], err);
    return 1;
  }
  ncs_reader_t *r = ncs_reader_open(paths[0], err, sizeof err);
  ncs_free_paths(paths, np);
  if (!r) {
    fprintf(stderr, "range dram: FAILED: %s\n", err);
    return 1;
  }
  int ird = -1, iwr = -1;
  ncs_item_t it;
  static ncs_range_rec_t mets[64];
  int nm = 0;
  while (ncs_reader_next(r, &it) > 0) {
    if (it.what == NCS_ITEM_RANGE_STATE) {
      const ncs_range_state_t *s = &it.range_state;
      for (uint32_t i = 0; i < s->nmetrics; i++) {
        if (!strcmp(s->metric[i], "dram__bytes_read.sum")) ird = (int)i;
        if (!strcmp(s->metric[i], "dram__bytes_write.sum")) iwr = (int)i;
      }
      if (s->flags & NCS_RSF_FINAL)
        printf("range dram: metrics=%s reason=\"%s\" chip=%s\n", ncs_hwm_state_name(s->mx_state), s->reason, s->chip);
    }
    if (it.what == NCS_ITEM_RANGE && it.range.kind == NCS_RR_BEGIN && it.range.name)
      for (int i = 0; i < nw; i++)
        if (!strcmp(W[i].name, it.range.name)) W[i].mid = it.range.mid;
    if (it.what == NCS_ITEM_RANGE && it.range.kind == NCS_RR_METRICS && nm < 64) mets[nm++] = it.range;
  }
  ncs_reader_close(r);
  int bad = ird < 0 || iwr < 0;
  if (bad) printf("range dram: FAILED: the trace names no dram__bytes_read.sum / dram__bytes_write.sum\n");
  for (int i = 0; i < nw && !bad; i++) {
    want *w = &W[i];
    for (int k = 0; k < nm; k++)
      if (w->mid && mets[k].mid == w->mid && (uint32_t)ird < mets[k].nvalues && (uint32_t)iwr < mets[k].nvalues)
        w->got_rd = mets[k].values[ird], w->got_wr = mets[k].values[iwr], w->have = 1;
    /* a copy's read and a fill's write must be within 5 %; a fill reads (almost) nothing */
    double ewr = w->got_wr / w->wr - 1, erd = w->rd > 0 ? w->got_rd / w->rd - 1 : w->got_rd / w->wr;
    int ok = w->have && fabs(ewr) <= 0.05 && fabs(erd) <= 0.05;
    printf("range dram: %-18s read %.0f (known %.0f, %+.2f%%) write %.0f (known %.0f, %+.2f%%) %s\n", w->name,
           w->got_rd, w->rd, 100 * erd, w->got_wr, w->wr, 100 * ewr, !w->have ? "NO VALUES" : ok ? "ok" : "OFF");
    bad |= !ok;
  }
  printf("range dram: %s\n", bad ? "FAILED" : "ok");
  return bad;
}
