/* host_cost.c - what the primitives of ncclscope's event path cost on this host: the TSC read,
 * clock_gettime, a thread-local store, an atomic add, and a cache line bounced between two
 * threads. Run it where a plugin call costs more than expected (docs/benchmarks.md).
 * Usage: host_cost [CPU_A CPU_B]   (the two CPUs of the ping-pong test; default: unpinned) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t rdtsc(void) {
#if defined(__x86_64__)
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
#else
  return now_ns();
#endif
}

#define N 20000000ull
static volatile uint64_t sink;
static _Atomic uint64_t shared_ctr;
static _Atomic uint64_t pingpong;
static int cpu_a = -1, cpu_b = -1;

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof s, &s);
  if (rc) {
    fprintf(stderr, "host_cost: cannot pin to CPU %d (error %d)\n", cpu, rc);
    exit(2);
  }
}

static void *ponger(void *arg) {
  (void)arg;
  pin(cpu_b);
  for (uint64_t i = 1; i < 2 * 1000000ull; i += 2) {
    while (atomic_load_explicit(&pingpong, memory_order_acquire) != i) {
    }
    atomic_store_explicit(&pingpong, i + 1, memory_order_release);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc == 3) cpu_a = atoi(argv[1]), cpu_b = atoi(argv[2]);
  pin(cpu_a);
  uint64_t t0 = now_ns(), acc = 0;
  for (uint64_t i = 0; i < N; i++) acc += rdtsc();
  uint64_t t1 = now_ns();
  sink = acc;
  printf("rdtsc            %6.2f ns\n", (double)(t1 - t0) / N);
  t0 = now_ns();
  for (uint64_t i = 0; i < N / 4; i++) acc += now_ns();
  t1 = now_ns();
  sink = acc;
  printf("clock_gettime    %6.2f ns (CLOCK_MONOTONIC)\n", (double)(t1 - t0) / (N / 4));
  t0 = now_ns();
  for (uint64_t i = 0; i < N; i++) atomic_fetch_add_explicit(&shared_ctr, 1, memory_order_relaxed);
  t1 = now_ns();
  printf("atomic add       %6.2f ns (uncontended)\n", (double)(t1 - t0) / N);
  pthread_t th;
  pthread_create(&th, NULL, ponger, NULL);
  t0 = now_ns();
  for (uint64_t i = 0; i < 2 * 1000000ull; i += 2) {
    atomic_store_explicit(&pingpong, i + 1, memory_order_release);
    while (atomic_load_explicit(&pingpong, memory_order_acquire) != i + 2) {
    }
  }
  t1 = now_ns();
  pthread_join(th, NULL);
  printf("line ping-pong   %6.2f ns (one-way, cpus %d,%d)\n", (double)(t1 - t0) / 2000000.0, cpu_a, cpu_b);
  return 0;
}
