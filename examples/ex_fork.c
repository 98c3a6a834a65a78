/* ex_fork: one process per GPU. The parent never touches CUDA; it forks one child per rank.
 * Child 0 makes the unique id and writes it into a pipe to every other child; each child runs
 * ncclCommInitRank, --iters AllReduce (sum), verifies, finalizes and destroys its communicator.
 * The parent waits for all children and fails if any failed. */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void run_rank(const ex_opts_t *o, int rank, int fds[][2]) {
  int n = o->ranks;
  ex_watchdog(o->timeout_s);
  ncclUniqueId id;
  if (rank == 0) {
    NCCLCHECK(ncclGetUniqueId(&id));
    for (int r = 1; r < n; r++)
      EXCHECK(write(fds[r][1], &id, sizeof id) == (ssize_t)sizeof id, "write id: %s",
              strerror(errno));
  } else {
    size_t got = 0;
    while (got < sizeof id) {
      ssize_t k = read(fds[rank][0], (char *)&id + got, sizeof id - got);
      EXCHECK(k > 0, "rank %d: reading the unique id: %s", rank,
              k == 0 ? "rank 0 closed the pipe" : strerror(errno));
      got += (size_t)k;
    }
  }
  for (int r = 1; r < n; r++) close(fds[r][0]), close(fds[r][1]);

  CUDACHECK(cudaSetDevice(rank));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, n, id, rank));
  ex_rank_allreduce(comm, rank, n, o);
}

int main(int argc, char **argv) {
  ex_opts_t o;
  ex_init(argc, argv, "fork", &o, 1 << 20, EX_INIT_NO_CUDA);
  int n = o.ranks, fds[EX_MAX_RANKS][2], pids[EX_MAX_RANKS];
  for (int r = 1; r < n; r++) EXCHECK(pipe(fds[r]) == 0, "pipe: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n; r++) {
    pid_t pid = fork();
    EXCHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      run_rank(&o, r, fds);
      fflush(stdout);
      exit(0); /* exit handlers run: the profiler plugin completes its trace file */
    }
    pids[r] = (int)pid;
  }
  ex_watchdog_kill(pids, n);
  for (int r = 1; r < n; r++) close(fds[r][0]), close(fds[r][1]);
  int failed = 0;
  for (int r = 0; r < n; r++) {
    int st = 0;
    while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      failed++;
      if (WIFSIGNALED(st))
        fprintf(stderr, "example=fork: rank %d (pid %d) killed by signal %d\n", r, pids[r],
                WTERMSIG(st));
      else
        fprintf(stderr, "example=fork: rank %d (pid %d) exited with status %d\n", r, pids[r],
                WEXITSTATUS(st));
    }
  }
  EXCHECK(!failed, "%d of %d ranks failed", failed, n);
  ex_ok(n);
  return 0;
}
