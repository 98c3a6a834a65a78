/* range.c - nccl-sim's user ranges (--ranges; docs/nccl-sim.md "User ranges").
 *
 * A training program marks its phases with ranges: with --ranges every user thread wraps each
 * iteration in a range "step" (level 1) holding a range "comm" (level 2) around the iteration's
 * NCCL calls and a range "optimizer" (level 2) around compute kernels of its own (with --cupti),
 * and marks "iteration" inside "step" (with --range-outer, all of them inside a range "train"). The
 * calls go to the plugin's own range API
 * (ncclscopeRangePush, ncclscopeRangePop, ncclscopeMark, include/ncclscope.h), looked up in the
 * plugin nccl-sim loaded. With --range-truth FILE every process appends, per range at its pop,
 * what happened inside it on its thread: the NCCL operations issued, the kernels launched and
 * the sum of their correlation ids (what the fake CUPTI's range profiler counts from), so the
 * tests can compare the trace with it (tests/range_check.c).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim.h"

#define DEPTH 8

static struct {
  int (*push)(const char *name);
  int (*pop)(void);
  void (*mark)(const char *name);
  int truth;
} R = {.truth = -1};

typedef struct {
  const char *name;
  uint64_t b0, b1; /* CLOCK_MONOTONIC around the push: the plugin's time of it is in between */
  uint64_t ops, launches, corrsum, compute, bytes;
} open_t;

static _Thread_local open_t t_stack[DEPTH];
static _Thread_local int t_depth;
static _Thread_local unsigned t_seq;

int sim_range_load(void *plugin) {
  if (!sim_opt.ranges) return 0;
  *(void **)&R.push = plugin ? dlsym(plugin, "ncclscopeRangePush") : NULL;
  *(void **)&R.pop = plugin ? dlsym(plugin, "ncclscopeRangePop") : NULL;
  *(void **)&R.mark = plugin ? dlsym(plugin, "ncclscopeMark") : NULL;
  if (!R.push || !R.pop || !R.mark) {
    sim_fail("--ranges: the plugin has no range API (ncclscopeRangePush, ncclscopeRangePop, ncclscopeMark)");
    return -1;
  }
  if (sim_opt.range_truth && R.truth < 0) {
    R.truth = open(sim_opt.range_truth, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (R.truth < 0) {
      sim_fail("cannot open --range-truth %s", sim_opt.range_truth);
      return -1;
    }
  }
  return 0;
}

/* One line of ground truth; a single write, so lines of several processes do not mix. */
static void truth(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void truth(const char *fmt, ...) {
  if (R.truth < 0) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  if (write(R.truth, line, (size_t)n) != n) sim_fail("cannot write --range-truth");
}

static void push(const char *name) {
  uint64_t b0 = sim_now_ns();
  int level = R.push(name);
  uint64_t b1 = sim_now_ns();
  if (level != t_depth) sim_fail("ncclscopeRangePush(%s) returned level %d, expected %d", name, level, t_depth);
  if (t_depth < DEPTH) t_stack[t_depth] = (open_t){name, b0, b1, 0, 0, 0, 0, 0};
  t_depth++;
}

static void pop(void) {
  if (!t_depth) return;
  uint64_t e0 = sim_now_ns();
  int level = R.pop();
  uint64_t e1 = sim_now_ns();
  t_depth--;
  if (level != t_depth) sim_fail("ncclscopeRangePop returned level %d, expected %d", level, t_depth);
  if (t_depth >= DEPTH) return;
  const open_t *o = &t_stack[t_depth];
  truth("R pid=%d tid=%ld seq=%u name=%s level=%d b0=%llu b1=%llu e0=%llu e1=%llu ops=%llu launches=%llu "
        "corrsum=%llu compute=%llu bytes=%llu", (int)getpid(), (long)syscall(SYS_gettid), t_seq++, o->name, t_depth + 1,
        (unsigned long long)o->b0, (unsigned long long)o->b1, (unsigned long long)e0, (unsigned long long)e1,
        (unsigned long long)o->ops, (unsigned long long)o->launches, (unsigned long long)o->corrsum,
        (unsigned long long)o->compute, (unsigned long long)o->bytes);
}

/* What the calling thread did, counted in every range open on it (a range includes its inner
 * ones). */
void sim_range_note_ops(int n, uint64_t bytes) {
  for (int i = 0; i < t_depth && i < DEPTH; i++) t_stack[i].ops += (uint64_t)n, t_stack[i].bytes += bytes;
}

void sim_range_note_launch(uint32_t corr, int compute) {
  for (int i = 0; i < t_depth && i < DEPTH; i++) {
    t_stack[i].launches++;
    t_stack[i].corrsum += corr;
    t_stack[i].compute += compute != 0;
  }
}

/* --range-outer: a range around all the iterations of a thread ("train", level 1; begin 1, end 0),
 * which outlives flight-recorder slots and segments. */
void sim_range_outer(int begin) {
  if (!R.push || !sim_opt.range_outer) return;
  if (begin)
    push("train");
  else
    pop();
}

/* One iteration of a user thread, inside its ranges; device: the thread's first rank's GPU. */
void sim_range_iteration(void (*body)(void *arg), void *arg, int device) {
  if (!R.push) {
    body(arg);
    return;
  }
  push("step");
  push("comm");
  body(arg);
  pop();
  push("optimizer");
  if (sim_gpu_on()) sim_gpu_compute(device, 0, NULL, sim_opt.compute > 0 ? sim_opt.compute : 1);
  pop();
  R.mark("iteration");
  truth("M pid=%d tid=%ld name=iteration level=%d", (int)getpid(), (long)syscall(SYS_gettid), t_depth);
  pop();
}
