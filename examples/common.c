/* common.c - helpers shared by the NCCL example programs (see common.h). */
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *g_name = "example";
static char g_alarm_msg[160];
static size_t g_alarm_len;
static int g_kill_pids[EX_MAX_RANKS];
static int g_nkill;

void ex_die(const char *file, int line, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "example=%s FAILED at %s:%d: %s\n", g_name, file, line, msg);
  fflush(stderr);
  _exit(1); /* other threads may sit inside NCCL: do not run exit handlers under them */
}

void ex_die_nccl(const char *file, int line, const char *what, ncclResult_t r) {
  const char *last = ncclGetLastError(NULL);
  ex_die(file, line, "%s: NCCL error %d: %s%s%s", what, (int)r, ncclGetErrorString(r),
         last && *last ? ": " : "", last ? last : "");
}

static void on_alarm(int sig) {
  (void)sig;
  for (int i = 0; i < g_nkill; i++)
    if (g_kill_pids[i] > 0) kill(g_kill_pids[i], SIGKILL);
  ssize_t w = write(2, g_alarm_msg, g_alarm_len);
  (void)w;
  _exit(3);
}

void ex_watchdog(int seconds) {
  g_alarm_len = (size_t)snprintf(g_alarm_msg, sizeof g_alarm_msg,
                                 "example=%s FAILED: timed out after %d s (pid %d)\n", g_name,
                                 seconds, (int)getpid());
  if (g_alarm_len >= sizeof g_alarm_msg) g_alarm_len = sizeof g_alarm_msg - 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  alarm(seconds > 0 ? (unsigned)seconds : 0);
}

void ex_watchdog_kill(const int *pids, int n) {
  if (n > EX_MAX_RANKS) n = EX_MAX_RANKS;
  for (int i = 0; i < n; i++) g_kill_pids[i] = pids[i];
  g_nkill = n;
}

double ex_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ex_sleep(double seconds) {
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int g_nccl_version; /* asked in the probe child of ex_device_count(EX_INIT_NO_CUDA) */

int ex_device_count(int flags) {
  int n = 0;
  if (!(flags & EX_INIT_NO_CUDA)) {
    CUDACHECK(cudaGetDeviceCount(&n));
    return n;
  }
  /* CUDA (and NCCL) must stay uninitialised in a process that forks their users: ask a child */
  int fd[2], v[2] = {0, 0};
  EXCHECK(pipe(fd) == 0, "pipe: %s", strerror(errno));
  fflush(stdout);
  pid_t pid = fork();
  EXCHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    close(fd[0]);
    CUDACHECK(cudaGetDeviceCount(&v[0]));
    NCCLCHECK(ncclGetVersion(&v[1]));
    ssize_t w = write(fd[1], v, sizeof v);
    _exit(w == (ssize_t)sizeof v ? 0 : 1);
  }
  close(fd[1]);
  ssize_t r = read(fd[0], v, sizeof v);
  close(fd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  EXCHECK(r == (ssize_t)sizeof v && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "could not count the GPUs in a child process");
  g_nccl_version = v[1];
  return v[0];
}

const char *ex_nccl_version(void) {
  static char buf[32];
  int v = g_nccl_version;
  if (!v) NCCLCHECK(ncclGetVersion(&v));
  /* NCCL_VERSION(): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 */
  if (v >= 10000)
    snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  else
    snprintf(buf, sizeof buf, "%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
  return buf;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: ex_%s [--ranks N] [--iters K] [--count N] [--timeout S] [--stall-rank R ...]\n"
          "  --ranks N    ranks, one GPU each (default: every visible GPU)\n"
          "  --iters K    operations per step (default 20)\n"
          "  --count N    elements (floats) per rank (default depends on the example)\n"
          "  --timeout S  give up after S seconds, exit status 3 (default 90; 0 = never)\n"
          "  --stall-rank R --stall-at K --stall-s S\n"
          "               rank R sleeps S seconds before its K-th AllReduce, so the others hang\n"
          "               in it (ex_fork, ex_threads-style examples that use one comm per rank)\n",
          g_name);
}

static long parse_num(const char *opt, const char *v, long lo, long hi) {
  char *e = NULL;
  errno = 0;
  long x = v ? strtol(v, &e, 10) : 0;
  if (!v || !*v || *e || errno || x < lo || x > hi) {
    fprintf(stderr, "ex_%s: %s needs a number from %ld to %ld\n", g_name, opt, lo, hi);
    usage(stderr);
    exit(2);
  }
  return x;
}

void ex_init(int argc, char **argv, const char *name, ex_opts_t *o, size_t default_count,
             int flags) {
  g_name = name;
  setvbuf(stdout, NULL, _IOLBF, 0);
  memset(o, 0, sizeof *o);
  o->iters = 20;
  o->count = default_count;
  o->timeout_s = 90;
  o->stall_rank = -1, o->stall_at = 0, o->stall_s = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--ranks")) {
      o->ranks = (int)parse_num(a, v, 1, EX_MAX_RANKS), i++;
    } else if (!strcmp(a, "--iters")) {
      o->iters = (int)parse_num(a, v, 1, 1000000), i++;
    } else if (!strcmp(a, "--count")) {
      o->count = (size_t)parse_num(a, v, 1, 1L << 30), o->count_set = 1, i++;
    } else if (!strcmp(a, "--timeout")) {
      o->timeout_s = (int)parse_num(a, v, 0, 86400), i++;
    } else if (!strcmp(a, "--stall-rank")) {
      o->stall_rank = (int)parse_num(a, v, 0, EX_MAX_RANKS - 1), i++;
    } else if (!strcmp(a, "--stall-at")) {
      o->stall_at = (int)parse_num(a, v, 0, 1000000), i++;
    } else if (!strcmp(a, "--stall-s")) {
      o->stall_s = (double)parse_num(a, v, 0, 3600), i++;
    } else {
      fprintf(stderr, "ex_%s: unknown option '%s'\n", g_name, a);
      usage(stderr);
      exit(2);
    }
  }
  ex_watchdog(o->timeout_s);
  int ndev = ex_device_count(flags);
  EXCHECK(ndev > 0, "no CUDA device visible");
  if (!o->ranks) o->ranks = ndev < EX_MAX_RANKS ? ndev : EX_MAX_RANKS;
  EXCHECK(o->ranks <= ndev, "--ranks %d but only %d GPUs are visible", o->ranks, ndev);
  printf("example=%s start nccl=%s header=%d.%d.%d gpus=%d ranks=%d iters=%d count=%zu\n", name,
         ex_nccl_version(), NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, ndev, o->ranks, o->iters, o->count);
}

void ex_ok(int ranks) {
  printf("example=%s ranks=%d nccl=%s ok\n", g_name, ranks, ex_nccl_version());
}

void ex_spawn(int n, void *(*fn)(void *), void *arg0, size_t stride) {
  pthread_t t[EX_MAX_RANKS];
  EXCHECK(n > 0 && n <= EX_MAX_RANKS, "bad thread count %d", n);
  for (int i = 0; i < n; i++) {
    int rc = pthread_create(&t[i], NULL, fn, (char *)arg0 + (size_t)i * stride);
    EXCHECK(rc == 0, "pthread_create: %s", strerror(rc));
  }
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

void ex_wait_comms(ncclComm_t *comms, int n, double timeout_s, const char *what) {
  double end = ex_now() + timeout_s;
  for (;;) {
    int busy = 0;
    for (int i = 0; i < n; i++) {
      if (!comms[i]) continue;
      ncclResult_t st = ncclInProgress;
      NCCLCHECK(ncclCommGetAsyncError(comms[i], &st));
      if (st == ncclInProgress)
        busy = 1;
      else if (st != ncclSuccess)
        ex_die_nccl(__FILE__, __LINE__, what, st);
    }
    if (!busy) return;
    EXCHECK(ex_now() < end, "%s: still in progress after %.0f s", what, timeout_s);
    ex_sleep(0.001);
  }
}

float ex_value(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 13 + 1)); }

void ex_fill(int dev, float *buf, size_t n, int rank) {
  float *h = malloc(n * sizeof *h);
  EXCHECK(h, "out of host memory (%zu floats)", n);
  for (size_t i = 0; i < n; i++) h[i] = ex_value(rank, i);
  CUDACHECK(cudaSetDevice(dev));
  CUDACHECK(cudaMemcpy(buf, h, n * sizeof *h, cudaMemcpyHostToDevice));
  free(h);
}

void ex_poison(float *buf, size_t n, cudaStream_t s) {
  CUDACHECK(cudaMemsetAsync(buf, 0xFF, n * sizeof *buf, s));
}

float ex_expected(const ex_expect_t *e, size_t i) {
  switch (e->kind) {
  case EX_SUM: {
    /* sum over r of (r + 1) * k = k * n (n + 1) / 2 */
    int k = (int)((e->offset + i) % 13 + 1);
    return (float)(k * e->nranks * (e->nranks + 1) / 2);
  }
  case EX_COPY: return ex_value(e->src, e->offset + i);
  case EX_GATHER: return ex_value((int)(i / e->block), e->offset + i % e->block);
  }
  return 0.0f;
}

void ex_verify(int dev, const float *buf, size_t n, const ex_expect_t *e, int rank,
               const char *what) {
  float *h = malloc(n * sizeof *h);
  EXCHECK(h, "out of host memory (%zu floats)", n);
  CUDACHECK(cudaSetDevice(dev));
  CUDACHECK(cudaMemcpy(h, buf, n * sizeof *h, cudaMemcpyDeviceToHost));
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    float want = ex_expected(e, i);
    if (h[i] != want) {
      if (!bad) first = i;
      bad++;
    }
  }
  if (bad) {
    float got = h[first], want = ex_expected(e, first);
    free(h);
    ex_die(__FILE__, __LINE__,
           "%s: rank %d: %zu of %zu elements wrong; first at %zu: got %g, expected %g", what, rank,
           bad, n, first, (double)got, (double)want);
  }
  free(h);
}

void ex_bufs_alloc(ex_bufs_t *b, int dev, int rank, size_t send_n, size_t recv_n) {
  memset(b, 0, sizeof *b);
  b->dev = dev;
  b->send_n = send_n;
  b->recv_n = recv_n;
  CUDACHECK(cudaSetDevice(dev));
  CUDACHECK(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
  CUDACHECK(cudaMalloc((void **)&b->send, send_n * sizeof(float)));
  CUDACHECK(cudaMalloc((void **)&b->recv, recv_n * sizeof(float)));
  ex_fill(dev, b->send, send_n, rank);
  ex_poison(b->recv, recv_n, b->stream);
  CUDACHECK(cudaStreamSynchronize(b->stream));
}

void ex_bufs_free(ex_bufs_t *b) {
  CUDACHECK(cudaSetDevice(b->dev));
  CUDACHECK(cudaFree(b->send));
  CUDACHECK(cudaFree(b->recv));
  CUDACHECK(cudaStreamDestroy(b->stream));
  memset(b, 0, sizeof *b);
}

void ex_sync(const ex_bufs_t *b) {
  CUDACHECK(cudaSetDevice(b->dev));
  CUDACHECK(cudaStreamSynchronize(b->stream));
}

void ex_rank_allreduce(ncclComm_t comm, int rank, int nranks, const ex_opts_t *o) {
  ex_bufs_t b;
  ex_bufs_alloc(&b, rank, rank, o->count, o->count);
  for (int it = 0; it < o->iters; it++) {
    if (rank == o->stall_rank && it == o->stall_at) {
      ex_sync(&b);
      printf("example: rank %d stalls %.1f s before AllReduce %d\n", rank, o->stall_s, it);
      fflush(stdout);
      ex_sleep(o->stall_s);
    }
    NCCLCHECK(ncclAllReduce(b.send, b.recv, o->count, ncclFloat, ncclSum, comm, b.stream));
  }
  ex_sync(&b);
  ex_expect_t e = {.kind = EX_SUM, .nranks = nranks};
  ex_verify(b.dev, b.recv, o->count, &e, rank, "AllReduce");
  ex_bufs_free(&b);
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
}

void ex_group_allreduce(ncclComm_t *comms, ex_bufs_t *b, int n, const ex_opts_t *o) {
  for (int it = 0; it < o->iters; it++) {
    NCCLCHECK(ncclGroupStart());
    for (int i = 0; i < n; i++)
      NCCLCHECK(
          ncclAllReduce(b[i].send, b[i].recv, o->count, ncclFloat, ncclSum, comms[i], b[i].stream));
    NCCLCHECK(ncclGroupEnd());
  }
  ex_expect_t e = {.kind = EX_SUM, .nranks = n};
  for (int i = 0; i < n; i++) {
    ex_sync(&b[i]);
    ex_verify(b[i].dev, b[i].recv, o->count, &e, i, "AllReduce");
  }
  for (int i = 0; i < n; i++) {
    ex_bufs_free(&b[i]);
    NCCLCHECK(ncclCommDestroy(comms[i]));
  }
}
