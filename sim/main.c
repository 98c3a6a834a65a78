/* main.c - nccl-sim's command line, processes and summary.
 *
 * Every process (the parent is process 0; --procs forks the others before anything is loaded,
 * so each loads the plugin itself like a separate NCCL rank) runs the scenario and adds what it
 * called to one shared table. The parent prints that table: the tests compare it with what the
 * plugin recorded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim.h"
#include "trace/reader.h"

sim_opts_t sim_opt;
sim_counts_t *sim_cnt;

/* ------------------------------------------------------------------ util */
uint64_t sim_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The GPU's %globaltimer: NCCL 2.28's KernelCh pTimer reads about CLOCK_REALTIME, but off it by
 * 0.05 to 2.5 ms, differently per GPU (measured on H200s, docs/nccl-sim.md "GPU clock"), and it
 * drifts. --gpu-clock realtime (the default): CLOCK_REALTIME + --gpu-offset-us + 57 us per process
 * index (each process is another GPU) + drift since the first reading; monotonic: CLOCK_MONOTONIC
 * + the offset + drift (another time base, as some drivers give). */
static int sim_proc_ix;
/* CLOCK_REALTIME - CLOCK_MONOTONIC (0: not taken yet), and the host time drift counts from. Live,
 * each process takes them at its first reading; in model time sim_gpu_clock_base sets them before
 * any fork (the model's time 0 and its CLOCK_REALTIME), so that GPU times are the model's too. */
static _Atomic int64_t g_gpu_base;
static _Atomic uint64_t g_gpu_h0;

void sim_gpu_clock_base(int64_t real_minus_mono, uint64_t h0) {
  atomic_store(&g_gpu_h0, h0);
  atomic_store(&g_gpu_base, real_minus_mono ? real_minus_mono : 1);
}

/* the clock's offset from the host's monotonic clock at the drift's origin */
static int64_t gpu_off(void) {
  int64_t b = atomic_load_explicit(&g_gpu_base, memory_order_acquire);
  return (sim_opt.gpu_clock_mono ? 0 : b) + sim_opt.gpu_offset_ns + (int64_t)sim_proc_ix * 57000;
}

uint64_t sim_gpu_at(uint64_t h) {
  if (!atomic_load_explicit(&g_gpu_base, memory_order_acquire)) {
    struct timespec r, m;
    clock_gettime(CLOCK_REALTIME, &r), clock_gettime(CLOCK_MONOTONIC, &m);
    int64_t v = ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000ll + (r.tv_nsec - m.tv_nsec);
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&g_gpu_h0, &zero, h); /* before the base: read after it */
    int64_t z = 0;
    atomic_compare_exchange_strong(&g_gpu_base, &z, v ? v : 1);
  }
  int64_t off = gpu_off();
  uint64_t first = atomic_load_explicit(&g_gpu_h0, memory_order_relaxed);
  double since = h > first ? (double)(h - first) : 0;
  return h + (uint64_t)off + (uint64_t)(int64_t)(since * sim_opt.gpu_drift_ppm * 1e-6);
}

/* In model time, the activity's model time (clock.c). */
uint64_t sim_gpu_ns(void) { return sim_gpu_at(sim_host_ns()); }

/* The host time at which the fake GPU clock reads g (the inverse of sim_gpu_at), rounded up.
 * In integers but for the drift (a double holds 2^53 ns exactly, not a CLOCK_REALTIME value). */
uint64_t sim_host_at(uint64_t g) {
  if (!atomic_load_explicit(&g_gpu_base, memory_order_acquire)) sim_gpu_at(sim_now_ns()); /* taken */
  int64_t off = gpu_off();
  uint64_t first = atomic_load_explicit(&g_gpu_h0, memory_order_relaxed);
  uint64_t x = g > (uint64_t)off ? g - (uint64_t)off : 0; /* with no drift */
  if (x > first) x -= (uint64_t)((double)(x - first) * sim_opt.gpu_drift_ppm * 1e-6 /
                                 (1.0 + sim_opt.gpu_drift_ppm * 1e-6));
  while (x > 0 && sim_gpu_at(x - 1) >= g) x--;
  while (sim_gpu_at(x) < g) x++;
  return x;
}

uint64_t sim_rand(uint64_t *s) {
  uint64_t x = *s ? *s : 0x2545F4914F6CDD1Dull;
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

uint64_t sim_mix(uint64_t a, uint64_t b) { /* splitmix64 of a combination */
  uint64_t z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void sim_sleep_us(unsigned us) {
  struct timespec t = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

void sim_fail(const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "nccl-sim[%d]: error: %s\n", (int)getpid(), msg);
  int was = 0;
  if (atomic_compare_exchange_strong(&sim_cnt->failed, &was, 1))
    snprintf(sim_cnt->fail_msg, sizeof sim_cnt->fail_msg, "%s", msg);
}

void sim_log(const char *fmt, ...) {
  if (!sim_opt.verbose) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "nccl-sim[%d]: ", (int)getpid());
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void *sim_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) {
    fprintf(stderr, "nccl-sim: out of memory\n");
    abort();
  }
  return p;
}

/* Per-rank delays: --slow-rank R --slow-us U sleeps before each enqueue of global rank R (a
 * straggler); --pause R:N:MS sleeps once, before R's N-th enqueue (a one-off stall: a rank held up
 * by I/O, a checkpoint or the scheduler). --slow-link and --slow-gpu act in net.c and proxy.c. */
void sim_delay_point(int rank, int where) {
  if (where != SIM_AT_ENQUEUE) return;
  uint64_t us = 0;
  if (rank == sim_opt.slow_rank && sim_opt.slow_us) us += sim_opt.slow_us;
  if (rank == sim_opt.pause_rank) {
    static _Atomic uint64_t enqueued; /* only rank pause_rank counts: one rank's groups */
    if (atomic_fetch_add(&enqueued, 1) == sim_opt.pause_at) {
      sim_log("pause: rank %d sleeps %u ms before its enqueue %" PRIu64, rank, sim_opt.pause_ms,
              sim_opt.pause_at);
      us += (uint64_t)sim_opt.pause_ms * 1000u; /* at most 600 s */
    }
  }
  if (!us) return;
  if (sim_opt.model) /* model time: the rank spends the time; nothing waits for it in real time */
    sim_vt_add(us * 1000u);
  else
    sim_sleep_us((unsigned)us);
}

/* ------------------------------------------------------------------ options */
static void usage(FILE *f) {
  fprintf(
      f,
      "usage: nccl-sim [--plugin PATH|NAME|none] [--scenario NAME] [options]\n"
      "Drives an NCCL profiler plugin the way NCCL 2.23..2.31 does, on a CPU.\n\n"
      "  --plugin P        plugin .so (path, NCCL-style name, or 'none' for built-in no-ops);\n"
      "                    default $NCCL_PROFILER_PLUGIN, else libnccl-profiler.so\n"
      "  --scenario S      what to run (default allreduce); --list shows them\n"
      "  --abi N           call through ncclProfiler_vN (1..7); default: newest exported. v7\n"
      "                    plays NCCL 2.31.2, v6 2.29-2.30, v5 2.28, ... (docs/nccl-sim.md)\n"
      "  --ranks N         ranks (default 4, at most %d)\n"
      "  --procs P         run the ranks in P processes (default 1; pxn needs 2)\n"
      "  --threads T       user threads per process (default one per rank); flood: producers\n"
      "  --iters K         operations per rank (default 10)\n"
      "  --comms C         communicators per rank (default 1; grouped/mixed 2)\n"
      "  --channels N      channels per operation, at most (default 2, max %d)\n"
      "  --steps N         network steps per proxy op (default 4)\n"
      "  --nodes N         nodes the ranks spread over (default: one node per rank)\n"
      "  --count N         elements per operation (default 262144)\n"
      "  --seed S          random seed (default 1)\n"
      "  --replays K       graph: replays of the captured graph (default 4)\n"
      "  --capture-at N    graph: capture the group of iteration N (default 0); eager\n"
      "                    operations only before it\n"
      "  --user-tags N     ABI v7: the operations of iteration i carry userTag 1 + i/N (default 1;\n"
      "                    0: untagged)\n"
      "  --profiler-lag-us U  ABI v7: the profiler thread sleeps U us whenever it takes up new\n"
      "                    KernelCh work (a profiler thread left behind; in model time only\n"
      "                    when the calls are made, not their times)\n"
      "  --late-comm       graph: every rank creates one more communicator two iterations after\n"
      "                    the capture (as a lazily created one; three replays have run) and\n"
      "                    runs an AllReduce on it per iteration from then on\n"
      "  --cycles N        reload: load/unload cycles (default 3)\n"
      "  --race PCT        %% of plans whose children finish before the Coll stop (default 30)\n"
      "  --net KIND        net descriptors: sock, ib or mix (default sock)\n"
      "  --net-threads N   net helper threads (default 2)\n"
      "  --mask M          force the activation mask after every init (like a RAS override)\n"
      "  --toggle-kch N    at every GroupApi stop, turn KernelCh on in NCCL's mask for one\n"
      "                    group in N (this thread's groups 0, N, 2N, ...) and off for the\n"
      "                    others, whatever the plugin wants (a naive sampling plugin)\n"
      "  --gpu-clock C     realtime (default: the fake %%globaltimer reads about\n"
      "                    CLOCK_REALTIME, as NCCL 2.28's pTimer) or monotonic\n"
      "  --gpu-offset-us U fake GPU clock offset from that clock (default 100; each process\n"
      "                    index adds 57 us: another GPU)\n"
      "  --gpu-drift-ppm D fake GPU clock drift from the first reading (default 1.5)\n"
      "  --kch-self on|off a self send/recv advances the GPU's KernelCh work counter but not\n"
      "                    the host's, so later KernelCh carry earlier work's timestamps, as\n"
      "                    NCCL 2.28-2.30 do (default on)\n"
      "  --slow-rank R --slow-us U  global rank R sleeps U us before enqueueing each operation\n"
      "  --pause R:N:MS    global rank R sleeps MS ms once, before enqueueing its N-th operation\n"
      "                    (from 0; a group counts once): a one-off stall\n"
      "  --hold MS            keep the communicators alive MS ms after their last operation finished\n"
      "  --slow-link R --slow-link-us U  each network transfer of global rank R takes U us longer,\n"
      "                    one after the other (a slow link)\n"
      "  --slow-gpu R --slow-gpu-us U  each receive step of global rank R waits U us longer in\n"
      "                    RecvGPUWait, one after the other (a slow GPU consumer, device unpack)\n"
      "  --gpu-gbps G      a kernel lasts (bus bytes)/G ns, G in GB/s (default: as fast as it runs)\n"
      "  --cupti LIB       play the CUDA driver under this fake libcupti (tests/fake_cupti.c):\n"
      "                    kernel launches, graph instantiation and launches, kernel records\n"
      "  --gpu-truth FILE  with --cupti: append one line per kernel that really ran (or hung)\n"
      "  --compute N       with --cupti: N compute kernels after every group (captured into the\n"
      "                    graph of the graph scenario, where they run at every replay)\n"
      "  --cupti-other     with --cupti: another CUPTI client subscribes after the first init\n"
      "  --cuda LIB        a fake libcuda.so.1 (tests/fake_cuda.c): each user thread makes its\n"
      "                    first rank's device current, as cudaSetDevice does\n"
      "  --ranges          every iteration inside user ranges (step > comm, optimizer) through the\n"
      "                    plugin's range API, and a mark\n"
      "  --range-truth FILE  with --ranges: append what happened inside each range\n"
      "  --range-outer     with --ranges: all iterations of a thread inside one more range\n"
      "  --couple on|off   ranks wait for each other's data per collective (default: on with\n"
      "                    --fault, else off)\n"
      "  --fault KIND:RANK:SEQ  inject a fault at the SEQ-th (from 0) kernel collective of global\n"
      "                    rank RANK on its first communicator; KIND: skip, stall, mismatch,\n"
      "                    mismatch-dtype, kill; repeatable or comma-separated. Exit status 3\n"
      "                    when ranks hung, 4 when a kill left no rank to hang\n"
      "  --hang-s S        --fault: hung ranks abort after S seconds (default 10)\n"
      "  --events N        flood: total plugin calls (default 1000000)\n"
      "  --duration S      flood: run S seconds instead of a call count\n"
      "  --rate R          flood: pace to R calls/s in total (default: as fast as possible)\n"
      "  --replay PATH     play back a capture (a trace dir or file recorded with\n"
      "                    NCCLSCOPE_CAPTURE=1) against the plugin; one process per file;\n"
      "                    implies --scenario replay\n"
      "  --speed X         replay: X times the recorded pace (default 1; 0 = no pacing)\n"
      "  --pace spin|yield flood: wait between paced batches spinning (default) or calling\n"
      "                    sched_yield like an idle NCCL proxy thread (for more threads than cores)\n"
      "  --cold KB         flood: each round is one AllReduce as NCCL 2.28 reports it with the\n"
      "                    default events (GroupApi, CollApi, Group, Coll, KernelLaunch: 13 calls),\n"
      "                    and KB of memory is written between rounds, untimed, as NCCL's own\n"
      "                    enqueue work evicts the plugin's cache lines between operations\n"
      "  --clock live|model  live (default): the plugin reads the host's clocks; model: every\n"
      "                    timestamp comes from nccl-sim's model, none from when threads ran, so\n"
      "                    a loaded machine changes nothing in the trace (docs/nccl-sim.md)\n"
      "  --verbose         print the plugin's log lines and progress to stderr\n"
      "  --list            list the scenarios\n"
      "  --help            this text\n"
      "Exit status 5: KernelCh work items would wait forever (NCCL hangs at communicator\n"
      "destroy; kch_stuck in the summary).\n",
      SIM_MAX_RANKS, SIM_MAX_CHANNELS);
}

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out) {
  char *e;
  errno = 0;
  double v = strtod(s, &e);
  if (e == s || *e || errno || v < lo || v > hi) {
    fprintf(stderr, "nccl-sim: bad value for %s: '%s' (expected %g..%g)\n", opt, s, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_mask(const char *s, long *out) {
  char *e;
  errno = 0;
  long v = strtol(s, &e, 0);
  if (e == s || *e || errno || v < 0 || v > NCS_EV_ALL) {
    fprintf(stderr, "nccl-sim: bad value for --mask: '%s' (expected 0..0xffff)\n", s);
    return -1;
  }
  *out = v;
  return 0;
}

enum { O_PLUGIN = 256, O_SCENARIO, O_ABI, O_RANKS, O_PROCS, O_THREADS, O_ITERS, O_COMMS,
       O_CHANNELS, O_STEPS, O_NODES, O_COUNT, O_SEED, O_REPLAYS, O_CYCLES, O_RACE, O_NET,
       O_NET_THREADS, O_MASK, O_GPU_OFF, O_GPU_DRIFT, O_GPU_CLOCK, O_KCH_SELF, O_SLOW_RANK, O_SLOW_US, O_PAUSE, O_HOLD, O_SLOW_LINK, O_SLOW_LINK_US, O_SLOW_GPU, O_SLOW_GPU_US, O_GPU_GBPS, O_COUPLE, O_FAULT, O_HANG_S, O_EVENTS, O_DURATION, O_RATE,
  O_PACE, O_COLD, O_REPLAY, O_SPEED, O_VERBOSE, O_TOGGLE_KCH, O_CAPTURE_AT, O_LATE_COMM,
  O_CUPTI, O_GPU_TRUTH, O_COMPUTE, O_CUPTI_OTHER, O_USER_TAGS, O_PROFILER_LAG,
  O_CUDA, O_RANGES, O_RANGE_TRUTH, O_RANGE_OUTER, O_CLOCK,
       O_LIST, O_HELP };

static const struct option long_opts[] = {{"plugin", 1, 0, O_PLUGIN},
                                          {"scenario", 1, 0, O_SCENARIO},
                                          {"abi", 1, 0, O_ABI},
                                          {"ranks", 1, 0, O_RANKS},
                                          {"procs", 1, 0, O_PROCS},
                                          {"threads", 1, 0, O_THREADS},
                                          {"iters", 1, 0, O_ITERS},
                                          {"comms", 1, 0, O_COMMS},
                                          {"channels", 1, 0, O_CHANNELS},
                                          {"steps", 1, 0, O_STEPS},
                                          {"nodes", 1, 0, O_NODES},
                                          {"count", 1, 0, O_COUNT},
                                          {"seed", 1, 0, O_SEED},
                                          {"replays", 1, 0, O_REPLAYS},
                                          {"cycles", 1, 0, O_CYCLES},
                                          {"race", 1, 0, O_RACE},
                                          {"net", 1, 0, O_NET},
                                          {"net-threads", 1, 0, O_NET_THREADS},
                                          {"mask", 1, 0, O_MASK},
                                          {"gpu-offset-us", 1, 0, O_GPU_OFF},
                                          {"gpu-drift-ppm", 1, 0, O_GPU_DRIFT},
                                          {"gpu-clock", 1, 0, O_GPU_CLOCK},
                                          {"kch-self", 1, 0, O_KCH_SELF},
                                          {"slow-rank", 1, 0, O_SLOW_RANK},
                                          {"slow-us", 1, 0, O_SLOW_US},
                                          {"pause", 1, 0, O_PAUSE},
                                          {"hold", 1, 0, O_HOLD},
                                          {"slow-link", 1, 0, O_SLOW_LINK},
                                          {"slow-link-us", 1, 0, O_SLOW_LINK_US},
                                          {"slow-gpu", 1, 0, O_SLOW_GPU},
                                          {"slow-gpu-us", 1, 0, O_SLOW_GPU_US},
                                          {"gpu-gbps", 1, 0, O_GPU_GBPS},
                                          {"couple", 1, 0, O_COUPLE},
                                          {"fault", 1, 0, O_FAULT},
                                          {"hang-s", 1, 0, O_HANG_S},
                                          {"events", 1, 0, O_EVENTS},
                                          {"duration", 1, 0, O_DURATION},
                                          {"rate", 1, 0, O_RATE}, {"pace", 1, 0, O_PACE}, {"cold", 1, 0, O_COLD}, {"replay", 1, 0, O_REPLAY}, {"speed", 1, 0, O_SPEED},
                                          {"verbose", 0, 0, O_VERBOSE},
                                          {"toggle-kch", 1, 0, O_TOGGLE_KCH},
                                          {"capture-at", 1, 0, O_CAPTURE_AT},
                                          {"late-comm", 0, 0, O_LATE_COMM},
                                          {"cupti", 1, 0, O_CUPTI},
                                          {"gpu-truth", 1, 0, O_GPU_TRUTH},
                                          {"compute", 1, 0, O_COMPUTE},
                                          {"cupti-other", 0, 0, O_CUPTI_OTHER},
                                          {"user-tags", 1, 0, O_USER_TAGS},
                                          {"profiler-lag-us", 1, 0, O_PROFILER_LAG},
                                          {"cuda", 1, 0, O_CUDA},
                                          {"ranges", 0, 0, O_RANGES},
                                          {"range-truth", 1, 0, O_RANGE_TRUTH},
                                          {"range-outer", 0, 0, O_RANGE_OUTER},
                                          {"clock", 1, 0, O_CLOCK},
                                          {"list", 0, 0, O_LIST},
                                          {"help", 0, 0, O_HELP},
                                          {0, 0, 0, 0}};

static void set_defaults(sim_opts_t *o) {
  memset(o, 0, sizeof *o);
  const char *env = getenv("NCCL_PROFILER_PLUGIN");
  o->plugin = env && *env ? env : "libnccl-profiler.so";
  o->scenario = "allreduce";
  o->ranks = 4, o->procs = 1, o->iters = 10, o->channels = 2, o->steps = 4;
  o->replay_speed = 1.0;
  o->replays = 4, o->cycles = 3, o->race_pct = 30, o->net_threads = 2;
  o->count = 262144, o->seed = 1, o->mask_override = -1;
  o->flood_events = 1000000;
  o->gpu_offset_ns = 100000, o->gpu_drift_ppm = 1.5;
  o->kch_self = 1;
  o->slow_rank = o->slow_link_rank = o->slow_gpu_rank = o->pause_rank = -1;
  o->couple = -1; /* auto: on with --fault */
  o->hang_s = 10;
  o->user_tags = 1;
}

/* Returns 0 to run, 1 to exit successfully (help, list), -1 on a bad argument. */
static int parse_args(int argc, char **argv, sim_opts_t *o) {
  int c;
  double v;
  int li = -1;
  char name[40];
  while ((c = getopt_long(argc, argv, "", long_opts, &li)) != -1) {
    snprintf(name, sizeof name, "--%s", li >= 0 ? long_opts[li].name : "?");
    li = -1;
#define NUM(lo, hi, dst)                                                                          \
  do {                                                                                            \
    if (parse_num(name, optarg, lo, hi, &v)) return -1;                                           \
    dst = v;                                                                                      \
  } while (0)
    switch (c) {
    case O_PLUGIN: o->plugin = optarg; break;
    case O_SCENARIO: o->scenario = optarg; break;
    case O_ABI: NUM(1, 7, o->abi); break;
    case O_RANKS: NUM(1, SIM_MAX_RANKS, o->ranks); break;
    case O_PROCS: NUM(1, 16, o->procs); break;
    case O_THREADS: NUM(1, 256, o->threads); o->threads_set = 1; break;
    case O_ITERS: NUM(0, 1e9, o->iters); break;
    case O_COMMS: NUM(1, SIM_MAX_COMMS, o->comms); o->comms_set = 1; break;
    case O_CHANNELS: NUM(1, SIM_MAX_CHANNELS, o->channels); break;
    case O_STEPS: NUM(1, 100000, o->steps); break;
    case O_NODES: NUM(1, SIM_MAX_RANKS, o->nodes); break;
    case O_COUNT: NUM(1, 1e12, o->count); break;
    case O_SEED: NUM(0, 1.8e19, o->seed); break;
    case O_REPLAYS: NUM(0, 1e6, o->replays); break;
    case O_CYCLES: NUM(1, 1000, o->cycles); break;
    case O_RACE: NUM(0, 100, o->race_pct); break;
    case O_NET:
      if (!strcmp(optarg, "sock") || !strcmp(optarg, "socket")) o->net_kind = SIM_NET_SOCK;
      else if (!strcmp(optarg, "ib")) o->net_kind = SIM_NET_IB;
      else if (!strcmp(optarg, "mix")) o->net_kind = SIM_NET_MIX;
      else {
        fprintf(stderr, "nccl-sim: bad value for --net: '%s' (sock, ib or mix)\n", optarg);
        return -1;
      }
      break;
    case O_NET_THREADS: NUM(1, 16, o->net_threads); break;
    case O_MASK: if (parse_mask(optarg, &o->mask_override)) return -1; break;
    case O_GPU_OFF: NUM(-1e9, 1e9, v); o->gpu_offset_ns = (int64_t)(v * 1000.0); break;
    case O_GPU_DRIFT: NUM(-1e5, 1e5, o->gpu_drift_ppm); break;
    case O_GPU_CLOCK:
      if (strcmp(optarg, "realtime") && strcmp(optarg, "monotonic")) {
        fprintf(stderr, "nccl-sim: --gpu-clock takes realtime or monotonic, not '%s'\n", optarg);
        return -1;
      }
      o->gpu_clock_mono = !strcmp(optarg, "monotonic");
      break;
    case O_KCH_SELF:
      if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
        fprintf(stderr, "nccl-sim: --kch-self takes on or off, not '%s'\n", optarg);
        return -1;
      }
      o->kch_self = !strcmp(optarg, "on");
      break;
    case O_SLOW_RANK: NUM(0, SIM_MAX_RANKS - 1, v); o->slow_rank = (int)v; break;
    case O_SLOW_US: NUM(0, 1e7, v); o->slow_us = (unsigned)v; break;
    case O_PAUSE: {
      unsigned long long r, n, ms;
      char tail;
      if (sscanf(optarg, "%llu:%llu:%llu%c", &r, &n, &ms, &tail) != 3 || r >= SIM_MAX_RANKS || ms < 1 ||
          ms > 600000) {
        fprintf(stderr, "nccl-sim: bad value for --pause: '%s' (RANK:N:MS, e.g. 3:60:1000; MS 1 to 600000)\n",
                optarg);
        return -1;
      }
      o->pause_rank = (int)r, o->pause_at = n, o->pause_ms = (unsigned)ms;
      break;
    }
    case O_HOLD: NUM(0, 3.6e6, v); o->hold_ms = (unsigned)v; break;
    case O_SLOW_LINK: NUM(0, SIM_MAX_RANKS - 1, v); o->slow_link_rank = (int)v; break;
    case O_SLOW_LINK_US: NUM(0, 1e7, v); o->slow_link_us = (unsigned)v; break;
    case O_SLOW_GPU: NUM(0, SIM_MAX_RANKS - 1, v); o->slow_gpu_rank = (int)v; break;
    case O_SLOW_GPU_US: NUM(0, 1e7, v); o->slow_gpu_us = (unsigned)v; break;
    case O_GPU_GBPS: NUM(1e-3, 1e6, o->gpu_gbps); break;
    case O_COUPLE:
      if (!strcmp(optarg, "on") || !strcmp(optarg, "off")) {
        o->couple = optarg[1] == 'n';
        break;
      }
      fprintf(stderr, "nccl-sim: --couple must be on or off, not '%s'\n", optarg);
      return -1;
    case O_FAULT: if (sim_fault_parse(optarg)) return -1; break;
    case O_HANG_S: NUM(0.01, 3600, o->hang_s); break;
    case O_EVENTS: NUM(1, 1e15, o->flood_events); break;
    case O_DURATION: NUM(0.001, 86400, o->flood_duration); break;
    case O_RATE: NUM(1, 1e12, o->flood_rate); break;
    case O_REPLAY:
      o->replay_path = optarg;
      o->scenario = "replay";
      break;
    case O_SPEED: NUM(0, 1e6, o->replay_speed); break;
    case O_COLD: NUM(1, 1048576, o->flood_cold_kb); break;
    case O_PACE:
      if (!strcmp(optarg, "spin") || !strcmp(optarg, "yield")) {
        o->flood_yield = optarg[0] == 'y';
        break;
      }
      fprintf(stderr, "nccl-sim: --pace must be spin or yield, not '%s'\n", optarg);
      return -1;
    case O_VERBOSE: o->verbose = 1; break;
    case O_TOGGLE_KCH: NUM(1, 1e9, o->toggle_kch); break;
    case O_CAPTURE_AT: NUM(0, 1e9, o->capture_at); break;
    case O_LATE_COMM: o->late_comm = 1; break;
    case O_CUPTI: o->cupti_path = optarg; break;
    case O_GPU_TRUTH: o->gpu_truth = optarg; break;
    case O_COMPUTE: NUM(0, 1000, o->compute); break;
    case O_CUPTI_OTHER: o->cupti_other = 1; break;
    case O_USER_TAGS: NUM(0, 1e9, o->user_tags); break;
    case O_PROFILER_LAG: NUM(0, 1e6, o->profiler_lag_us); break;
    case O_CUDA: o->cuda_path = optarg; break;
    case O_RANGES: o->ranges = 1; break;
    case O_RANGE_TRUTH: o->range_truth = optarg; break;
    case O_RANGE_OUTER: o->range_outer = 1; break;
    case O_CLOCK:
      if (!strcmp(optarg, "live") || !strcmp(optarg, "model")) {
        o->model = optarg[0] == 'm';
        break;
      }
      fprintf(stderr, "nccl-sim: --clock must be live or model, not '%s'\n", optarg);
      return -1;
    case O_LIST: sim_scenario_list(); return 1;
    case O_HELP: usage(stdout); return 1;
    default: usage(stderr); return -1;
    }
#undef NUM
  }
  if (optind < argc) {
    fprintf(stderr, "nccl-sim: unexpected argument '%s'\n", argv[optind]);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ summary */
static uint64_t ld(_Atomic uint64_t *p) { return atomic_load(p); }

static void print_summary(const sim_opts_t *o, double seconds) {
  sim_counts_t *c = sim_cnt;
  uint64_t starts = 0, stops = 0, states = 0;
  for (int t = 0; t < NCS_NTYPES; t++)
    starts += ld(&c->start[t]), stops += ld(&c->stop[t]), states += ld(&c->state[t]);
  printf("nccl-sim: scenario=%s plugin=%s abi=%d procs=%d ranks=%d comms=%d threads=%d iters=%d "
         "loads=%llu inits=%llu finalizes=%llu init_failures=%llu ops=%llu starts=%llu stops=%llu "
         "states=%llu open=%lld null_stops=%llu null_states=%llu garbage_stops=%llu "
         "garbage_states=%llu double_stops=%llu double_states=%llu stale_stops=%llu "
         "stale_states=%llu null_args=%llu null_ctx_starts=%llu foreign_starts=%llu "
         "graph_colls=%llu kch_stuck=%llu kch_foreign=%llu kch_lapped=%llu user_tags=%d mask=0x%x "
         "seconds=%.3f\n",
         o->scenario, o->plugin, sim_plugin_abi(), o->procs, o->ranks, o->comms, o->threads,
         o->iters, (unsigned long long)ld(&c->loads), (unsigned long long)ld(&c->inits),
         (unsigned long long)ld(&c->finalizes), (unsigned long long)ld(&c->init_failures),
         (unsigned long long)ld(&c->ops), (unsigned long long)starts, (unsigned long long)stops,
         (unsigned long long)states, (long long)(starts - stops),
         (unsigned long long)ld(&c->null_stops), (unsigned long long)ld(&c->null_states),
         (unsigned long long)ld(&c->garbage_stops), (unsigned long long)ld(&c->garbage_states),
         (unsigned long long)ld(&c->double_stops), (unsigned long long)ld(&c->double_states),
         (unsigned long long)ld(&c->stale_stops), (unsigned long long)ld(&c->stale_states),
         (unsigned long long)ld(&c->null_args), (unsigned long long)ld(&c->null_ctx_starts),
         (unsigned long long)ld(&c->foreign_starts), (unsigned long long)ld(&c->graph_colls),
         (unsigned long long)ld(&c->kch_stuck), (unsigned long long)ld(&c->kch_foreign),
         (unsigned long long)ld(&c->kch_lapped), o->user_tags, (unsigned)sim_mask(), seconds);
  if (o->cupti_path)
    printf("nccl-sim-gpu: nccl=%llu replays=%llu compute=%llu hung=%llu untraced=%llu other=%d holder=%s\n",
           (unsigned long long)ld(&c->gpu_nccl), (unsigned long long)ld(&c->gpu_replays),
           (unsigned long long)ld(&c->gpu_compute), (unsigned long long)ld(&c->gpu_hung),
           (unsigned long long)ld(&c->gpu_untraced), atomic_load(&c->cupti_other),
           c->cupti_other_holder[0] ? c->cupti_other_holder : "-");
  printf("nccl-sim-types:");
  for (int t = 0; t < NCS_NTYPES; t++)
    printf(" %s=%llu,%llu,%llu", sim_type_names[t], (unsigned long long)ld(&c->start[t]),
           (unsigned long long)ld(&c->stop[t]), (unsigned long long)ld(&c->state[t]));
  printf("\n");
  fflush(stdout);
}

/* KernelCh work items that NCCL's proxy would wait for forever: a message, and exit status 5
 * when nothing else failed. */
static int kch_status(int rc) {
  uint64_t n = ld(&sim_cnt->kch_stuck);
  if (!n) return rc;
  fprintf(stderr,
          "nccl-sim: %llu KernelCh work items would wait forever (NCCL hangs at communicator "
          "destroy)\n",
          (unsigned long long)n);
  return rc ? rc : 5;
}

/* ------------------------------------------------------------------ processes */
static int run_proc(const sim_scenario_t *s, int proc) {
  sim_proc_ix = proc;
  sim_pxn_child_fds(proc);
  if (sim_gpu_load() != 0) return 1; /* before the plugin, which finds it loaded */
  int rc = s->run(proc);
  if (atomic_load(&sim_cnt->failed)) rc = 1;
  return rc;
}

static int wait_children(const pid_t *pids, int n) {
  int rc = 0;
  for (int i = 0; i < n; i++) {
    int st;
    while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {
    }
    sim_cpl_reaped(i + 1, pids[i], st); /* coupled peers stop at once (fault.c) */
    if (WIFSIGNALED(st)) {
      fprintf(stderr, "nccl-sim: process %d (pid %d) killed by signal %d\n", i + 1, (int)pids[i],
              WTERMSIG(st));
      rc = 1;
    } else if (WEXITSTATUS(st) != 0) {
      fprintf(stderr, "nccl-sim: process %d (pid %d) exited with %d\n", i + 1, (int)pids[i],
              WEXITSTATUS(st));
      rc = 1;
    }
  }
  return rc;
}

/* --replay: one process per trace file */
static int replay_files(sim_opts_t *o) {
  char err[512];
  size_t n = 0;
  if (!o->replay_path) {
    fprintf(stderr, "nccl-sim: scenario replay needs --replay PATH\n");
    return -1;
  }
  if (ncs_list_traces(o->replay_path, &o->replay_files, &n, err, sizeof err) != 0) {
    fprintf(stderr, "nccl-sim: --replay %s: %s\n", o->replay_path, err);
    return -1;
  }
  if (n == 0 || n > 16) {
    fprintf(stderr, "nccl-sim: --replay %s: %zu trace files (need 1 to 16)\n", o->replay_path, n);
    return -1;
  }
  o->replay_nfiles = (int)n;
  o->procs = (int)n;
  if (o->ranks < o->procs) o->ranks = o->procs;
  return 0;
}

/* --clock model covers the scenarios and options whose every time it models (docs/nccl-sim.md
 * "Model time"); the others are refused rather than given times from the wall clock. */
static int check_model(const sim_opts_t *o, const sim_scenario_t *s) {
  static const char *const ok[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                   "sendrecv",  "alltoall",  "grouped",       "ce",        "mixed",
                                   "symmetric"};
  int found = 0;
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) found |= strcmp(s->name, ok[i]) == 0;
  const char *bad = !found ? s->name
                    : o->cupti_path ? "--cupti"
                    : o->ranges ? "--ranges"
                    : o->toggle_kch ? "--toggle-kch"
                    : NULL;
  if (!bad) return 0;
  fprintf(stderr,
          "nccl-sim: --clock model does not model %s%s; it covers the scenarios allreduce, "
          "allgather, reducescatter, broadcast, reduce, sendrecv, alltoall, grouped, ce, mixed and "
          "symmetric, without --cupti, --ranges and --toggle-kch\n",
          found ? "" : "the scenario ", bad);
  return -1;
}

static int check_opts(sim_opts_t *o, const sim_scenario_t *s) {
  if (strcmp(s->name, "replay") == 0 && replay_files(o) != 0) return -1;
  if (o->couple < 0) o->couple = o->nfaults > 0;
  if (sim_fault_check_opts(s->name)) return -1;
  if (o->procs < s->min_procs) o->procs = s->min_procs;
  if (o->procs > o->ranks) {
    fprintf(stderr, "nccl-sim: --procs %d needs at least that many ranks (have %d)\n", o->procs,
            o->ranks);
    return -1;
  }
  if (!o->comms_set) o->comms = s->default_comms;
  if (o->late_comm && (strcmp(s->name, "graph") != 0 || o->comms >= SIM_MAX_COMMS)) {
    fprintf(stderr, "nccl-sim: --late-comm is for the graph scenario, with --comms below %d\n",
            SIM_MAX_COMMS);
    return -1;
  }
  if (o->nodes > o->ranks) o->nodes = o->ranks;
  if (o->model && check_model(o, s)) return -1;
  int per_proc = (o->ranks + o->procs - 1) / o->procs;
  if (strcmp(s->name, "flood") == 0) {
    if (!o->threads_set) o->threads = 1;
    if (o->procs != 1) {
      fprintf(stderr, "nccl-sim: flood runs in one process\n");
      return -1;
    }
  } else if (!o->threads_set || o->threads > per_proc) {
    if (o->threads_set)
      fprintf(stderr, "nccl-sim: --threads capped at %d (ranks per process)\n", per_proc);
    o->threads = per_proc;
  }
  return 0;
}

/* Fork processes first .. procs-1, each running its ranks; a child exits 1 on failure, else 0,
 * or with --fault its fault status. Returns how many were forked, -1 when fork failed. */
static int fork_procs(const sim_scenario_t *s, int first, int fault, pid_t *pids) {
  int n = 0;
  for (int p = first; p < sim_opt.procs; p++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("nccl-sim: fork");
      return -1;
    }
    if (pid == 0) {
      sim_cpl_watch(NULL, 0, 0, 0);
      int rc = run_proc(s, p);
      fflush(stdout);
      fflush(stderr);
      _exit(rc ? 1 : fault ? sim_fault_proc_status() : 0);
    }
    pids[n++] = pid;
  }
  return n;
}

/* --fault: every process is a child and the parent only watches, so that a process killed by
 * the kill fault (or one that hung) is reported like the others. Exit status: 1 failure, 3 ranks
 * hung, 4 a kill left nobody to hang, else 0 (sim_fault_report). */
static int supervise(const sim_scenario_t *s, uint64_t t0) {
  pid_t pids[16];
  int status[16], n = fork_procs(s, 0, 1, pids);
  if (n < 0) return 1;
  sim_cpl_watch(pids, n, 0, 0);
  for (int i = 0; i < n; i++) {
    while (waitpid(pids[i], &status[i], 0) < 0 && errno == EINTR) {
    }
    sim_cpl_reaped(i, pids[i], status[i]);
  }
  if (sim_cpl_dead_report()) return SIM_EXIT_PEER_DIED;
  print_summary(&sim_opt, (double)(sim_now_ns() - t0) * 1e-9);
  int rc = sim_fault_report(pids, status, n);
  if (atomic_load(&sim_cnt->failed)) {
    fprintf(stderr, "nccl-sim: FAILED: %s\n", sim_cnt->fail_msg);
    rc = 1;
  }
  return kch_status(rc);
}

int main(int argc, char **argv) {
  set_defaults(&sim_opt);
  int pr = parse_args(argc, argv, &sim_opt);
  if (pr) return pr > 0 ? 0 : 2;
  const sim_scenario_t *s = sim_scenario_find(sim_opt.scenario);
  if (!s) {
    fprintf(stderr, "nccl-sim: unknown scenario '%s'; --list shows them\n", sim_opt.scenario);
    return 2;
  }
  if (check_opts(&sim_opt, s)) return 2;
  sim_cnt = mmap(NULL, sizeof *sim_cnt, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sim_cnt == MAP_FAILED) {
    perror("nccl-sim: mmap");
    return 1;
  }
  atomic_store(&sim_cnt->cupti_other, -1);
  if (sim_opt.procs > 1 && strcmp(s->name, "pxn") == 0 && sim_pxn_setup(sim_opt.procs) != 0) {
    perror("nccl-sim: pipe");
    return 1;
  }
  if (sim_couple_setup() != 0 || sim_fault_setup() != 0) return 1;
  if (sim_vt_setup() != 0) {
    perror("nccl-sim: setenv");
    return 1;
  }
  uint64_t t0 = sim_now_ns();
  fflush(stdout);
  fflush(stderr);
  if (sim_fault_active()) return supervise(s, t0);
  pid_t pids[16];
  int nkids = fork_procs(s, 1, 0, pids);
  if (nkids < 0) return 1;
  sim_cpl_watch(pids, nkids, 1, 1);
  int rc = run_proc(s, 0);
  sim_cpl_reaping();
  if (wait_children(pids, nkids)) rc = 1;
  if (sim_cpl_dead_report()) return SIM_EXIT_PEER_DIED;
  print_summary(&sim_opt, (double)(sim_now_ns() - t0) * 1e-9);
  if (atomic_load(&sim_cnt->failed)) {
    fprintf(stderr, "nccl-sim: FAILED: %s\n", sim_cnt->fail_msg);
    rc = 1;
  }
  return kch_status(rc ? 1 : 0);
}
