/* hotpath_parts.c - where the time of a recorded plugin call goes on this host.
 *
 * Builds the event path up one part at a time, as ncclscope's STATE fast path does it
 * (src/plugin/plugin.c), and times each stage over many calls made through a function pointer,
 * as NCCL makes them:
 *
 *   call      an empty function through a pointer (what the empty plugin costs)
 *   check     + the thread-local state and the global handle check
 *   stores    + the record's five words and the terminator, published by a release store, in
 *               64 KiB blocks that are recycled in turn (no clock read)
 *   tsc       + the TSC read: the whole fast path of a STATE
 *   tsc+drain the same with a second thread draining the blocks as ncclscope's writer does
 *               (reading each header with acquire, every DRAIN_US microseconds), so the lines
 *               the producer writes next come back from another core
 *   rdtsc     the TSC read alone, back to back
 *
 * Each stage's time per call is the median of REPS runs of N calls. The differences between
 * stages are what each part costs; docs/benchmarks.md ("Event cost on the GPU host") reads them.
 * Usage: hotpath_parts [N [REPS [DRAIN_US [CPU_PRODUCER CPU_WRITER]]]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK_WORDS 8192 /* 64 KiB */
#define NBLOCKS 64

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

/* the producer's state, as ncclscope's ncs_tls_t */
typedef struct {
  uint64_t *w, *end;
  unsigned blk;
} tls_t;
static __thread tls_t T;
static uint64_t (*blocks)[BLOCK_WORDS];
static _Atomic unsigned published_blk; /* the block the producer is in, for the drainer */
static _Atomic uint32_t hkey = 0xEC0AB; /* what the handle check compares against */
static _Atomic int stop_drain;
static unsigned drain_us = 1000;

static void next_block(void) {
  T.blk = (T.blk + 1) % NBLOCKS;
  T.w = blocks[T.blk];
  T.end = T.w + BLOCK_WORDS - 1;
  __atomic_store_n(&T.w[0], 0, __ATOMIC_RELAXED);
  atomic_store_explicit(&published_blk, T.blk, memory_order_release);
}

typedef int (*state_fn)(void *eh, int st, void *args);

static int f_call(void *eh, int st, void *a) {
  (void)eh, (void)st, (void)a;
  return 0;
}

static int f_check(void *eh, int st, void *a) {
  uint64_t h = (uint64_t)(uintptr_t)eh, a0 = a ? *(uint64_t *)a : 0;
  if (((uint32_t)(h >> 44) & 0xFF0FFu) == atomic_load_explicit(&hkey, memory_order_relaxed) &&
      5 <= (size_t)(T.end - T.w)) {
    __asm__ __volatile__("" ::"r"(a0), "r"(st) : "memory");
    return 0;
  }
  return 1;
}

#define STATE_BODY(TS)                                                                            \
  uint64_t h = (uint64_t)(uintptr_t)eh, a0 = a ? *(uint64_t *)a : 0;                              \
  if (((uint32_t)(h >> 44) & 0xFF0FFu) == atomic_load_explicit(&hkey, memory_order_relaxed) &&    \
      5 <= (size_t)(T.end - T.w)) {                                                               \
    uint64_t *w = T.w;                                                                            \
    w[1] = (TS);                                                                                  \
    w[2] = h & ((1ull << 44) - 1);                                                                \
    w[3] = a0;                                                                                    \
    w[4] = 0;                                                                                     \
    __atomic_store_n(&w[5], 0, __ATOMIC_RELAXED);                                                 \
    __atomic_store_n(&w[0], 3 | (5 << 16) | ((uint64_t)st << 32), __ATOMIC_RELEASE);              \
    T.w = w + 5;                                                                                  \
    return 0;                                                                                     \
  }                                                                                               \
  next_block();                                                                                   \
  return 1;

static int f_stores(void *eh, int st, void *a) { STATE_BODY(0) }
static int f_tsc(void *eh, int st, void *a) { STATE_BODY(rdtsc()) }

/* the writer's reading: each block's headers, with acquire, DRAIN_US apart */
static void *drainer(void *arg) {
  int cpu = (int)(intptr_t)arg;
  if (cpu >= 0) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
  }
  unsigned rd_blk = 0, rd = 0;
  uint64_t sum = 0;
  while (!atomic_load_explicit(&stop_drain, memory_order_acquire)) {
    for (;;) {
      uint64_t *b = blocks[rd_blk];
      uint64_t hdr = rd < BLOCK_WORDS - 1 ? __atomic_load_n(&b[rd], __ATOMIC_ACQUIRE) : 0;
      if (hdr) {
        sum += b[rd + 1];
        rd += (unsigned)(hdr >> 16) & 0xFF;
        continue;
      }
      if (atomic_load_explicit(&published_blk, memory_order_acquire) == rd_blk) break;
      rd_blk = (rd_blk + 1) % NBLOCKS, rd = 0; /* the producer moved on */
    }
    struct timespec ts = {0, (long)drain_us * 1000};
    nanosleep(&ts, NULL);
  }
  __asm__ __volatile__("" ::"r"(sum));
  return NULL;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double run(state_fn volatile fn, uint64_t n, int reps) {
  double v[64];
  uint64_t arg = 131072;
  if (reps > 64) reps = 64;
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) fn((void *)(uintptr_t)(0xEC0ABull << 44 | (i & 0xFFFF)), 9, &arg);
    v[r] = (double)(now_ns() - t0) / (double)n;
  }
  qsort(v, (size_t)reps, sizeof v[0], cmp_dbl);
  return v[reps / 2];
}

/* a whole decimal number in [lo, hi], or exit 2 saying which argument is wrong */
static long long arg_num(const char *s, const char *what, long long lo, long long hi) {
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) {
    fprintf(stderr, "hotpath_parts: %s must be a number from %lld to %lld, not '%s' (--help)\n", what, lo, hi, s);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    printf("usage: hotpath_parts [N [REPS [DRAIN_US [CPU_PRODUCER CPU_WRITER]]]]\n"
           "  N             calls per run (default 20000000)\n"
           "  REPS          runs per stage; the median is printed (default 5)\n"
           "  DRAIN_US      the draining thread's period in microseconds (default 1000)\n"
           "  CPU_PRODUCER CPU_WRITER  pin the calling and the draining thread (default: not pinned)\n"
           "Prints each stage's time per call and what each part adds (docs/benchmarks.md).\n");
    return 0;
  }
  if (argc > 6 || argc == 5) {
    fprintf(stderr, "hotpath_parts: give both CPUs or neither (--help)\n");
    return 2;
  }
  uint64_t n = argc > 1 ? (uint64_t)arg_num(argv[1], "N", 1000, 100000000000ll) : 20000000ull;
  int reps = argc > 2 ? (int)arg_num(argv[2], "REPS", 1, 64) : 5;
  drain_us = argc > 3 ? (unsigned)arg_num(argv[3], "DRAIN_US", 1, 10000000) : 1000;
  int cpu_p = argc > 5 ? (int)arg_num(argv[4], "CPU_PRODUCER", 0, CPU_SETSIZE - 1) : -1;
  int cpu_w = argc > 5 ? (int)arg_num(argv[5], "CPU_WRITER", 0, CPU_SETSIZE - 1) : -1;
  if (cpu_p >= 0) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu_p, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
  }
  blocks = aligned_alloc(64, sizeof(uint64_t) * BLOCK_WORDS * NBLOCKS);
  if (!blocks) return 1;
  memset(blocks, 0, sizeof(uint64_t) * BLOCK_WORDS * NBLOCKS);
  next_block();
  double call = run(f_call, n, reps), check = run(f_check, n, reps);
  double stores = run(f_stores, n, reps), tsc = run(f_tsc, n, reps);
  pthread_t th;
  pthread_create(&th, NULL, drainer, (void *)(intptr_t)cpu_w);
  double drained = run(f_tsc, n, reps);
  atomic_store(&stop_drain, 1);
  pthread_join(th, NULL);
  uint64_t t0 = now_ns(), acc = 0;
  for (uint64_t i = 0; i < n; i++) acc += rdtsc();
  double tsc_alone = (double)(now_ns() - t0) / (double)n;
  __asm__ __volatile__("" ::"r"(acc));
  printf("hotpath_parts: calls=%llu reps=%d drain_us=%u cpus=%d,%d\n", (unsigned long long)n, reps,
         drain_us, cpu_p, cpu_w);
  printf("  call       %6.2f ns\n", call);
  printf("  check      %6.2f ns  (+%.2f over call)\n", check, check - call);
  printf("  stores     %6.2f ns  (+%.2f over check)\n", stores, stores - check);
  printf("  tsc        %6.2f ns  (+%.2f over stores)  the STATE fast path: %.2f over call\n", tsc,
         tsc - stores, tsc - call);
  printf("  tsc+drain  %6.2f ns  (+%.2f over tsc)\n", drained, drained - tsc);
  printf("  rdtsc      %6.2f ns  (alone, back to back)\n", tsc_alone);
  free(blocks);
  return 0;
}
