/* clock.c - host clocks. Events are stamped with the TSC (about 10 ns cheaper than
 * clock_gettime here) when it is invariant; the writer converts to CLOCK_MONOTONIC ns. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/ncs.h"

/* NCCLSCOPE_CLOCK=sim: nccl-sim's model clock, `uint64_t ncclsim_clock_ns(int realtime)` in the
 * simulator's executable. Set once at setup, before the writer and the other threads start. */
static uint64_t (*sim_clock)(int realtime);

int ncs_clock_sim(void) {
  uint64_t (*f)(int);
  void *p = dlsym(RTLD_DEFAULT, "ncclsim_clock_ns");
  memcpy(&f, &p, sizeof f);
  sim_clock = f;
  return f ? 0 : -1;
}

uint64_t ncs_mono_ns(void) {
  if (NCS_UNLIKELY(sim_clock != NULL)) return sim_clock(0);
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint64_t ncs_realtime_ns(void) {
  if (NCS_UNLIKELY(sim_clock != NULL)) return sim_clock(1);
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The TSC is usable when the CPU says it is constant and does not stop in idle states. */
int ncs_tsc_usable(void) {
#if defined(__x86_64__)
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[4096];
  int constant = 0, nonstop = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5)) continue;
    constant = strstr(line, " constant_tsc") != NULL;
    nonstop = strstr(line, " nonstop_tsc") != NULL;
    break;
  }
  fclose(f);
  return constant && nonstop;
#else
  return 0;
#endif
}
