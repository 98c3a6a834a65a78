/* range_cost.c - what a user range costs the application's thread (issue 17: at most 100 ns per
 * push and per pop without hardware metrics; docs/benchmarks.md "User ranges").
 *
 *   ncs-range-cost PLUGIN|none DIR [PAIRS [ROUNDS]]
 *
 * PLUGIN: the plugin is loaded as NCCL loads it and a communicator is initialized, so a segment
 * is recording into DIR; the range API (include/ncclscope.h) and, where built with NVTX's headers
 * (NCS_BENCH_NVTX), NVTX through NVTX_INJECTION64_PATH reach it. none: the same calls with no
 * plugin (the API finds none, NVTX has no tool): the floor. Each round times PAIRS push/pop pairs
 * (one level under an open outer range), then sleeps so the writer drains the buffers; the median
 * round is printed, in ns per call (a pair is two calls). Afterwards the trace is read back and
 * the ranges it holds and lost are printed: a round whose records were dropped was cheaper than
 * a recorded one, so a run with drops says so instead of claiming the cost.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef NCS_BENCH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include "../include/ncclscope.h"
#include "abi/ncs_abi.h"
#include "trace/reader.h"

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

enum { API, NVTX };

/* ns per call (push or pop), median over rounds */
static double measure(int how, long pairs, int rounds) {
  double r[64];
  for (int k = 0; k < rounds; k++) {
    uint64_t t0 = now_ns();
    if (how == API) {
      for (long i = 0; i < pairs; i++) {
        ncclscope_range_push("bench");
        ncclscope_range_pop();
      }
    } else {
#ifdef NCS_BENCH_NVTX
      for (long i = 0; i < pairs; i++) {
        nvtxRangePushA("bench");
        nvtxRangePop();
      }
#endif
    }
    r[k] = (double)(now_ns() - t0) / (2.0 * (double)pairs);
    pause_ms(50); /* the writer drains the threads' blocks */
  }
  qsort(r, (size_t)rounds, sizeof r[0], cmp);
  return r[rounds / 2];
}

static void read_back(const char *dir) {
  char **paths, err[256];
  size_t n;
  if (ncs_list_traces(dir, &paths, &n, err, sizeof err) != 0 || n != 1) {
    printf("range cost: trace: expected one file in %s (%s)\n", dir, err);
    return;
  }
  ncs_reader_t *r = ncs_reader_open(paths[0], err, sizeof err);
  ncs_free_paths(paths, n);
  if (!r) {
    printf("range cost: trace: %s\n", err);
    return;
  }
  ncs_item_t it;
  uint64_t begins = 0, k[NCS_RK_MAX + 1] = {0};
  while (ncs_reader_next(r, &it) > 0) {
    if (it.what == NCS_ITEM_RANGE && it.range.kind == NCS_RR_BEGIN) begins++;
    if (it.what == NCS_ITEM_RANGE_STATE && (it.range_state.flags & NCS_RSF_FINAL))
      for (uint32_t i = 0; i < it.range_state.ncounters; i++)
        if (it.range_state.keys[i] <= NCS_RK_MAX) k[it.range_state.keys[i]] = it.range_state.values[i];
  }
  printf("range cost: trace: ranges=%" PRIu64 " begun=%" PRIu64 " dropped=%" PRIu64 " no_slot=%" PRIu64
         " untracked=%" PRIu64 " damage=%s\n",
         begins, k[NCS_RK_BEGUN], k[NCS_RK_DROPPED], k[NCS_RK_NO_SLOT], k[NCS_RK_UNTRACKED],
         ncs_reader_damage(r) ? "yes" : "none");
  if (k[NCS_RK_DROPPED] || k[NCS_RK_NO_SLOT])
    printf("range cost: WARNING: records were dropped; the numbers above are lower than a recorded range costs "
           "(fewer pairs or a larger NCCLSCOPE_BUFFER_SIZE)\n");
  ncs_reader_close(r);
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 5) {
    fprintf(stderr, "usage: ncs-range-cost PLUGIN|none DIR [PAIRS [ROUNDS]]\n");
    return 2;
  }
  long pairs = argc > 3 ? atol(argv[3]) : 20000;
  int rounds = argc > 4 ? atoi(argv[4]) : 15;
  if (pairs < 1 || rounds < 1 || rounds > 64) {
    fprintf(stderr, "range cost: PAIRS >= 1, ROUNDS 1 to 64\n");
    return 2;
  }
  int with = strcmp(argv[1], "none") != 0;
  const ncs_profiler_v6_t *p = NULL;
  void *ctx = NULL;
  if (with) {
    setenv("NCCLSCOPE_DIR", argv[2], 1);
    setenv("NCCL_PROFILER_PLUGIN", argv[1], 1);
    setenv("NVTX_INJECTION64_PATH", argv[1], 1);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    p = h ? dlsym(h, "ncclProfiler_v6") : NULL;
    if (!p) {
      fprintf(stderr, "range cost: cannot load %s: %s\n", argv[1], dlerror());
      return 1;
    }
    int mask = 0;
    p->init(&ctx, 0x5eed, &mask, "range-cost", 1, 1, 0, NULL);
  } else {
    unsetenv("NCCL_PROFILER_PLUGIN");
    unsetenv("NVTX_INJECTION64_PATH");
  }
  ncclscope_range_push("outer"); /* the measured ranges are one level down, as a step's phases */
  double api = measure(API, pairs, rounds);
  printf("range cost: plugin=%s api ns/call=%.1f pairs=%ld rounds=%d\n", with ? "yes" : "none", api, pairs,
         rounds);
#ifdef NCS_BENCH_NVTX
  nvtxRangePushA("outer");
  double nv = measure(NVTX, pairs, rounds);
  nvtxRangePop();
  printf("range cost: plugin=%s nvtx ns/call=%.1f pairs=%ld rounds=%d\n", with ? "yes" : "none", nv, pairs,
         rounds);
#else
  printf("range cost: nvtx not measured (built without NVTX's headers)\n");
#endif
  ncclscope_range_pop();
  if (with) {
    p->finalize(ctx);
    read_back(argv[2]);
  }
  return 0;
}
