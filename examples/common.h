/* common.h - helpers shared by the NCCL example programs (docs/gpu.md).
 *
 * Every example checks every CUDA and NCCL call (CUDACHECK, NCCLCHECK), checks its results by
 * copying them back to the host (ex_verify), and ends with one line
 *   example=<name> ranks=<N> nccl=<version> ok
 * on success. Any error prints "example=<name> FAILED at file:line: ..." and exits with status 1;
 * the watchdog (--timeout, default 90 s) exits with status 3.
 *
 * Data: rank r's send buffer holds ex_value(r, i) = (r + 1) * (i % 13 + 1) at element i, small
 * integers in floats, so sums over ranks are exact whatever order NCCL adds in.
 */
#ifndef NCS_EXAMPLES_COMMON_H
#define NCS_EXAMPLES_COMMON_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define EX_MAX_RANKS 64

#define CUDACHECK(cmd)                                                                            \
  do {                                                                                            \
    cudaError_t e_ = (cmd);                                                                       \
    if (e_ != cudaSuccess)                                                                        \
      ex_die(__FILE__, __LINE__, "%s: CUDA error %d: %s", #cmd, (int)e_, cudaGetErrorString(e_)); \
  } while (0)

#define NCCLCHECK(cmd)                                                                            \
  do {                                                                                            \
    ncclResult_t r_ = (cmd);                                                                      \
    if (r_ != ncclSuccess) ex_die_nccl(__FILE__, __LINE__, #cmd, r_);                             \
  } while (0)

/* Non-blocking communicators: ncclInProgress is a normal answer too. */
#define NCCLCHECK_ASYNC(cmd)                                                                      \
  do {                                                                                            \
    ncclResult_t r_ = (cmd);                                                                      \
    if (r_ != ncclSuccess && r_ != ncclInProgress) ex_die_nccl(__FILE__, __LINE__, #cmd, r_);     \
  } while (0)

#define EXCHECK(cond, ...)                                                                        \
  do {                                                                                            \
    if (!(cond)) ex_die(__FILE__, __LINE__, __VA_ARGS__);                                         \
  } while (0)

typedef struct {
  int ranks;     /* --ranks N: default all visible GPUs */
  int iters;     /* --iters K: default 20 */
  size_t count;  /* --count N: elements (floats) per rank; default per example */
  int count_set; /* --count was given */
  int timeout_s; /* --timeout S: watchdog, default 90 */
  /* --stall-rank R --stall-at K --stall-s S: rank R finishes its earlier operations, then sleeps
   * S seconds before it enqueues its K-th AllReduce (0-based), so the other ranks wait inside
   * that collective: a hang for `ncclscope diagnose` (ex_rank_allreduce only). R = -1: none. */
  int stall_rank, stall_at;
  double stall_s;
} ex_opts_t;

enum { EX_INIT_NO_CUDA = 1 }; /* ex_init flag: do not initialise CUDA in this process (fork) */

/* Parse the options (exits 2 on a usage error), arm the watchdog, print the start line. */
void ex_init(int argc, char **argv, const char *name, ex_opts_t *o, size_t default_count,
             int flags);
/* Print the success line. */
void ex_ok(int ranks);
/* (Re-)arm the watchdog in this process (a forked child does not inherit it). */
void ex_watchdog(int seconds);
/* Processes the watchdog kills before it exits (ex_fork's children). */
void ex_watchdog_kill(const int *pids, int n);

void ex_die(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
void ex_die_nccl(const char *file, int line, const char *what, ncclResult_t r)
    __attribute__((noreturn));

double ex_now(void);            /* CLOCK_MONOTONIC seconds */
void ex_sleep(double seconds);
int ex_device_count(int flags); /* with EX_INIT_NO_CUDA: asked in a forked child */
const char *ex_nccl_version(void); /* "2.28.9" of the library in use */

/* Run fn(arg0 + i * stride) on n threads and join them all. */
void ex_spawn(int n, void *(*fn)(void *), void *arg0, size_t stride);

/* Poll ncclCommGetAsyncError on every non-NULL comm until none is ncclInProgress; any error,
 * or timeout_s passing, is fatal. */
void ex_wait_comms(ncclComm_t *comms, int n, double timeout_s, const char *what);

/* ---- data */
float ex_value(int rank, size_t i);
/* buf[i] = ex_value(rank, i) for i < n, on device dev (synchronous) */
void ex_fill(int dev, float *buf, size_t n, int rank);
/* set n floats to NaN (all bits set), stream-ordered on s */
void ex_poison(float *buf, size_t n, cudaStream_t s);

enum {
  EX_SUM,    /* sum over ranks r < nranks of ex_value(r, offset + i) */
  EX_COPY,   /* ex_value(src, offset + i) */
  EX_GATHER, /* block b = i / block: ex_value(b, offset + i % block) */
};
typedef struct {
  int kind;
  int nranks;
  int src;
  size_t offset;
  size_t block;
} ex_expect_t;
float ex_expected(const ex_expect_t *e, size_t i);
/* Copy n floats from device dev back and compare with e; a mismatch is fatal and names `what`,
 * the rank, the first bad element and how many are bad. */
void ex_verify(int dev, const float *buf, size_t n, const ex_expect_t *e, int rank,
               const char *what);

/* One rank's device, stream and buffers. */
typedef struct {
  int dev;
  cudaStream_t stream;
  float *send, *recv;
  size_t send_n, recv_n;
} ex_bufs_t;
/* cudaSetDevice(dev), a stream, send filled with ex_value(rank, .), recv poisoned */
void ex_bufs_alloc(ex_bufs_t *b, int dev, int rank, size_t send_n, size_t recv_n);
void ex_bufs_free(ex_bufs_t *b);
void ex_sync(const ex_bufs_t *b); /* cudaStreamSynchronize on b's device */

/* The workload of the examples that exercise a way of creating communicators: --iters
 * AllReduce (sum) of --count floats, verified on the host, then the teardown.
 * ex_rank_allreduce: one rank that owns its communicator on GPU `rank`; it is finalized and
 * destroyed. ex_group_allreduce: one thread drives comms[0..n) with buffers b[0..n) (already
 * allocated) in ncclGroupStart/End; buffers are freed and communicators destroyed. */
void ex_rank_allreduce(ncclComm_t comm, int rank, int nranks, const ex_opts_t *o);
void ex_group_allreduce(ncclComm_t *comms, ex_bufs_t *b, int n, const ex_opts_t *o);

#endif
