/* clock.c - model time (--clock model, docs/nccl-sim.md "Model time").
 *
 * In model time every timestamp of the job comes from nccl-sim's model, never from when a thread
 * happened to run: the plugin reads its host clock from ncclsim_clock_ns() (NCCLSCOPE_CLOCK=sim,
 * which --clock model sets), and the fake GPU clock is derived from the same model. The threads
 * still run as in live mode (they wait for each other, in real time, where NCCL's would), but a
 * wait only orders things; what it costs in time is the model's, so a loaded machine changes how
 * long the run takes and nothing in the trace.
 *
 * Each simulated activity has a clock of its own: a user thread, a proxy operation, a proxy step,
 * a network transfer. A thread binds the clock of the activity it works for (sim_vt_bind) before
 * it calls the plugin; every call is stamped with that clock and advances it by SIM_VT_TICK_NS
 * (sim_vt_tick). Where an activity depends on another (a receive on the peer's send, a kernel's
 * end on every rank's arrival), its clock moves to max(own, the other's) (sim_vt_wait): the times
 * are a function of the model and the seed alone.
 *
 * Threads that belong to no activity (the plugin's writer) read the model's frontier: the
 * earliest time any activity of the process may still stamp an event with (the least of the user
 * threads' clocks and of the posting times of the proxy ops not yet finished; none: the latest
 * time handed out). The writer judges "no child came for a while" by its clock against the
 * events' times; with the frontier, an event it has not read yet can never be older than its
 * clock, however far the threads ran apart in real time, as on a real host where every event
 * it has not read is more recent than its clock.
 */
#include <stdlib.h>
#include <time.h>

#include "sim.h"

static uint64_t g_base_mono, g_base_real; /* the model's time 0, taken once before any fork */
static _Atomic uint64_t g_vmax;           /* the latest model time handed out in this process */
static _Thread_local uint64_t *t_clk;     /* the clock of the activity this thread works for */
/* the frontier's floors: every registered activity stamps no event before its floor */
static pthread_mutex_t g_floor_mu = PTHREAD_MUTEX_INITIALIZER;
static sim_vt_floor_t g_floors = {.prev = &g_floors, .next = &g_floors};
static _Thread_local sim_vt_floor_t t_floor; /* a user thread's: its own clock */
static _Thread_local uint64_t *t_own;        /* the clock t_floor follows */

static uint64_t real_clock(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int sim_vt_setup(void) {
  if (!sim_opt.model) return 0;
  g_base_mono = real_clock(CLOCK_MONOTONIC);
  g_base_real = real_clock(CLOCK_REALTIME);
  /* the fake GPU clock (--gpu-clock, --gpu-offset-us, --gpu-drift-ppm) reads the model too: its
     CLOCK_REALTIME is the model's, and its drift counts from the model's time 0 */
  sim_gpu_clock_base((int64_t)(g_base_real - g_base_mono), g_base_mono);
  /* the plugin takes its host times from ncclsim_clock_ns (src/core/clock.c) */
  return setenv("NCCLSCOPE_CLOCK", "sim", 1);
}

static void publish(uint64_t v) {
  uint64_t m = atomic_load_explicit(&g_vmax, memory_order_relaxed);
  while (m < v && !atomic_compare_exchange_weak_explicit(&g_vmax, &m, v, memory_order_relaxed,
                                                         memory_order_relaxed)) {
  }
}

/* The plugin's clock under NCCLSCOPE_CLOCK=sim: looked up with dlsym, so it must be exported
 * (sim/CMakeLists.txt). realtime: CLOCK_REALTIME's model, the same offset from the monotonic one
 * in every process of the job, as on one host. */
void sim_vt_floor_add(sim_vt_floor_t *f, uint64_t v) {
  if (!sim_opt.model) return;
  atomic_store_explicit(&f->v, v, memory_order_relaxed);
  pthread_mutex_lock(&g_floor_mu);
  f->prev = g_floors.prev, f->next = &g_floors;
  g_floors.prev->next = f, g_floors.prev = f;
  pthread_mutex_unlock(&g_floor_mu);
}

void sim_vt_floor_del(sim_vt_floor_t *f) {
  if (!sim_opt.model) return;
  pthread_mutex_lock(&g_floor_mu); /* f->next is written under it when a floor is added after f */
  if (f->next) {
    f->prev->next = f->next, f->next->prev = f->prev;
    f->prev = f->next = NULL;
  }
  pthread_mutex_unlock(&g_floor_mu);
}

static uint64_t frontier(void) {
  uint64_t v = UINT64_MAX;
  pthread_mutex_lock(&g_floor_mu);
  for (sim_vt_floor_t *f = g_floors.next; f != &g_floors; f = f->next) {
    uint64_t x = atomic_load_explicit(&f->v, memory_order_relaxed);
    if (x < v) v = x;
  }
  pthread_mutex_unlock(&g_floor_mu);
  return v != UINT64_MAX ? v : atomic_load_explicit(&g_vmax, memory_order_relaxed);
}

uint64_t ncclsim_clock_ns(int realtime);
uint64_t ncclsim_clock_ns(int realtime) {
  uint64_t v = t_clk ? *t_clk : frontier();
  return (realtime ? g_base_real : g_base_mono) + v;
}

/* the bound clock moved to v */
static void moved(uint64_t v) {
  publish(v);
  if (t_clk == t_own) atomic_store_explicit(&t_floor.v, v, memory_order_relaxed);
}

uint64_t *sim_vt_bind(uint64_t *clk) {
  uint64_t *old = t_clk;
  if (sim_opt.model) {
    t_clk = clk;
    if (clk) publish(*clk);
  }
  return old;
}

void sim_vt_thread_begin(uint64_t *clk) {
  if (!sim_opt.model) return;
  t_own = clk;
  sim_vt_floor_add(&t_floor, *clk);
  sim_vt_bind(clk);
}

void sim_vt_thread_done(void) {
  if (!sim_opt.model) return;
  sim_vt_floor_del(&t_floor);
  t_own = NULL;
}

void sim_vt_thread_end(void) {
  sim_vt_thread_done();
  sim_vt_bind(NULL);
}

uint64_t sim_vt_now(void) { return t_clk ? *t_clk : 0; }

/* Before a plugin call: the latest time handed out includes the call's tick, so that once every
 * thread made its last call, it is the latest time of all, whichever thread ended last. */
void sim_vt_call(void) {
  if (t_clk) publish(*t_clk + SIM_VT_TICK_NS);
}

void sim_vt_tick(void) {
  if (!t_clk) return;
  *t_clk += SIM_VT_TICK_NS;
  moved(*t_clk);
}

void sim_vt_add(uint64_t ns) {
  if (!t_clk) return;
  *t_clk += ns;
  moved(*t_clk);
}

void sim_vt_wait(uint64_t v) {
  if (!t_clk || *t_clk >= v) return;
  *t_clk = v;
  moved(v);
}

uint64_t sim_vt_host(uint64_t v) { return g_base_mono + v; }

uint64_t sim_vt_of_host(uint64_t host_ns) {
  return host_ns > g_base_mono ? host_ns - g_base_mono : 0;
}

uint64_t sim_host_ns(void) {
  return sim_opt.model ? g_base_mono + sim_vt_now() : sim_now_ns();
}

void sim_vt_max(_Atomic uint64_t *m, uint64_t v) {
  uint64_t x = atomic_load(m);
  while (x < v && !atomic_compare_exchange_weak(m, &x, v)) {
  }
}
