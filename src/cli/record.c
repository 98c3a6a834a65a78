/* record.c - `ncclscope record`: run a command with the profiler plugin loaded.
 *
 * Like `perf record`, this does little: it checks the options, creates the trace directory, sets
 * NCCL_PROFILER_PLUGIN and the NCCLSCOPE_* variables that the plugin reads, runs the command and
 * waits for it. The plugin in each process of the command writes one file into the directory.
 *
 * It owns the command's process tree (docs/cli.md, "Processes and signals"): the command runs in
 * a process group of its own, record is the subreaper of everything it starts, signals sent to
 * record reach every process of the job, and the trace is called complete only once every one of
 * them is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "trace/reader.h"
#include "util/outfile.h"

static const char record_help[] =
    "usage: ncclscope record [OPTIONS] [--] CMD [ARGS...]\n"
    "\n"
    "Run CMD with the ncclscope profiler plugin loaded into NCCL; every process that\n"
    "uses NCCL writes one <host>-<pid>.nstrace file into the trace directory.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR      trace directory (created; default\n"
    "                        ncclscope-YYYYmmdd-HHMMSS)\n"
    "  -e, --events LIST     event types to record (default:\n"
    "                        " NCS_DEFAULT_EVENTS ");\n"
    "                        names: group coll p2p proxyop proxystep proxyctrl kernel\n"
    "                        kernelphase net groupapi collapi p2papi launch cecoll\n"
    "                        cesync cebatch; aliases api proxy ce all none default;\n"
    "                        a number; -NAME removes a type (docs/config.md)\n"
    "  -m, --mode MODE       trace (default: everything) or flight (the recent past\n"
    "                        in bounded memory, dumped on SIGUSR1, a watchdog or a\n"
    "                        request: docs/flight.md)\n"
    "  -b, --buffer-size SIZE  buffer pool per process, 1M to 16G, e.g. 64M (K, M, G:\n"
    "                        powers of 1024)\n"
    "  -s, --sample N        GPU kernel times for one group of operations in N; every\n"
    "                        operation is still recorded (default 1: every group;\n"
    "                        docs/config.md \"Sampling\"). -k, --kernel-sample: its\n"
    "                        earlier name\n"
    "      --grace SECONDS   after SIGINT, SIGTERM, SIGHUP or SIGQUIT is passed on to\n"
    "                        the job, how long its processes have to end before they\n"
    "                        are killed (1 to 3600, default 10)\n"
    "      --cupti on|off    GPU times of every kernel from CUPTI, joined to NCCL's\n"
    "                        operations (default off: CUPTI serves one tool per\n"
    "                        process; docs/gpu-truth.md)\n"
    "      --range-metrics LIST  hardware metrics per user range through CUPTI's\n"
    "                        range profiler: CUPTI metric names, or default (DRAM\n"
    "                        bytes, GPU time, NVLink bytes); asks for CUPTI\n"
    "                        (docs/ranges.md)\n"
    "  -h, --help            this help\n"
    "\n"
    "record waits for every process of the job, forwards SIGINT, SIGTERM, SIGHUP and\n"
    "SIGQUIT to all of them and SIGUSR1 (a flight dump) to those that handle it\n"
    "(docs/cli.md). NVTX ranges are recorded: NVTX_INJECTION64_PATH is set to the\n"
    "plugin unless it is set already (record says so) or NCCLSCOPE_RANGES=off.\n"
    "\n"
    "examples:\n"
    "  ncclscope record -o run1 -- ./my_nccl_app\n"
    "  ncclscope record -o run1 -e all -- torchrun --nproc-per-node 8 train.py\n"
    "  ncclscope record --mode flight -o run2 -- torchrun --nproc-per-node 8 train.py\n"
    "  mpirun -np 16 ncclscope record -o /shared/run3 -- ./app  # one per rank\n"
    "\n"
    "environment: NCCLSCOPE_PLUGIN overrides the plugin path (default: next to\n"
    "ncclscope, else ../lib); the other NCCLSCOPE_* variables reach the plugin as\n"
    "they are (docs/config.md).\n"
    "\n"
    "exit status: CMD's own (128+N when signal N ended it, 127 not found, 126 not\n"
    "executable); 2 usage error, 6 record itself failed (docs/cli.md)\n";

/* ---------------------------------------------------------------- the trace directory */

/* mkdir -p; *created: the directory itself is new */
static int mkdir_p(const char *path, int *created) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  *created = mkdir(buf, 0777) == 0;
  if (!*created && errno != EEXIST) return -1;
  struct stat st;
  if (stat(buf, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
  return 0;
}

static size_t count_traces(const char *dir) {
  char **list, err[256];
  size_t n = 0;
  if (ncs_list_traces(dir, &list, &n, err, sizeof err) != 0) return 0;
  ncs_free_paths(list, n);
  return n;
}

/* Create the directory and return its absolute path in o->dir_used. */
static int make_dir(ncs_record_opts_t *o, char *abs, size_t len) {
  char def[128];
  const char *dir = o->out_dir;
  if (!dir) {
    time_t now = time(NULL);
    struct tm tm;
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    snprintf(def, sizeof def, "%s-%s", o->dir_prefix ? o->dir_prefix : "ncclscope", ts);
    dir = def;
  }
  if (mkdir_p(dir, &o->dir_created) != 0) {
    ncs_error("cannot create the trace directory %s: %s", dir, strerror(errno));
    return -1;
  }
  char *real = realpath(dir, NULL);
  if (!real || strlen(real) >= len) {
    ncs_error("cannot resolve %s", dir);
    free(real);
    return -1;
  }
  strcpy(abs, real);
  free(real);
  return 0;
}

/* ---------------------------------------------------------------- the environment */

static int set_env(const char *plugin, const char *dir, const char *events, const char *mode,
                   const char *size, const char *sample) {
  int rc = setenv("NCCL_PROFILER_PLUGIN", plugin, 1) | setenv("NCCLSCOPE_DIR", dir, 1) |
           setenv("NCCLSCOPE_MODE", mode, 1);
  if (events)
    rc |= setenv("NCCLSCOPE_EVENTS", events, 1);
  else if (!getenv("NCCLSCOPE_EVENTS"))
    rc |= setenv("NCCLSCOPE_EVENTS", NCS_DEFAULT_EVENTS, 1);
  if (size) rc |= setenv("NCCLSCOPE_BUFFER_SIZE", size, 1);
  if (sample) rc |= setenv("NCCLSCOPE_SAMPLE", sample, 1);
  return rc ? -1 : 0;
}

/* an on/off setting said off (the plugin's spellings, ncs_parse_bool) */
static int env_off(const char *v) { return v && ncs_parse_bool(v) == 0; }

/* NVTX ranges (docs/ranges.md): every copy of NVTX in the job loads the library that
 * NVTX_INJECTION64_PATH names at its first call, so naming the plugin there records them. A
 * value the user set is theirs (another tool may be listening): kept, and said. Not set when
 * ranges are off: the plugin would only decline NVTX's call. */
static int set_nvtx(const char *plugin) {
  if (env_off(getenv("NCCLSCOPE_RANGES"))) return 0;
  const char *cur = getenv("NVTX_INJECTION64_PATH");
  if (cur && *cur) {
    struct stat a, b;
    if (stat(cur, &a) == 0 && stat(plugin, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
      return 0; /* the plugin already */
    ncs_warn("NVTX_INJECTION64_PATH is set to %s, not to the plugin: NVTX ranges go there and "
             "are not recorded (ranges of the ncclscope range API are)",
             cur);
    return 0;
  }
  char *abs = realpath(plugin, NULL); /* the job's processes may change directory */
  int rc = setenv("NVTX_INJECTION64_PATH", abs ? abs : plugin, 1);
  free(abs);
  return rc;
}

/* Check the options that do not need the file system. Returns 0 or an exit status. */
static int check_opts(const ncs_record_opts_t *o, char *size, size_t size_len) {
  uint32_t mask;
  if (o->events && ncs_check_events(o->verb, "--events", o->events, &mask) != 0)
    return NCS_EXIT_USAGE;
  /* an inherited list is the plugin's to use: the same check, before anything runs */
  const char *env = getenv("NCCLSCOPE_EVENTS");
  if (!o->events && env && *env && ncs_check_events(o->verb, "NCCLSCOPE_EVENTS", env, &mask) != 0)
    return NCS_EXIT_USAGE;
  if (o->mode && strcmp(o->mode, "trace") != 0 && strcmp(o->mode, "flight") != 0)
    return ncs_usage_error(o->verb, "--mode must be trace or flight, not '%s'", o->mode);
  size[0] = 0;
  if (o->buffer_size) {
    uint64_t v;
    if (ncs_parse_size(o->buffer_size, &v) != 0)
      return ncs_usage_error(o->verb, "--buffer-size: bad size '%s' (e.g. 64M, 1G, 1048576)",
                             o->buffer_size);
    if (v < (1ull << 20) || v > (16ull << 30)) /* the plugin's range (docs/config.md) */
      return ncs_usage_error(o->verb, "--buffer-size must be from 1M to 16G, not '%s'",
                             o->buffer_size);
    snprintf(size, size_len, "%llu", (unsigned long long)v);
  }
  uint64_t n;
  if (o->kernel_sample && ncs_parse_count(o->kernel_sample, 1, 1u << 20, &n) != 0)
    return ncs_usage_error(o->verb, "--sample needs a number from 1 to 1048576, not '%s'",
                           o->kernel_sample);
  if (o->range_metrics) {
    if (!*o->range_metrics || strlen(o->range_metrics) > 1023) /* the plugin's limit */
      return ncs_usage_error(o->verb, "--range-metrics needs a list of CUPTI metric names (or "
                             "default), up to 1023 bytes");
    if (env_off(getenv("NCCLSCOPE_RANGES")))
      return ncs_usage_error(o->verb, "--range-metrics are per range, and NCCLSCOPE_RANGES=off");
    if (env_off(getenv("NCCLSCOPE_CUPTI")))
      return ncs_usage_error(o->verb, "--range-metrics need CUPTI, and --cupti off or "
                             "NCCLSCOPE_CUPTI=off was asked for");
  }
  if (!o->cmd || !o->cmd[0]) return ncs_usage_error(o->verb, "no command to run");
  return 0;
}

/* ---------------------------------------------------------------- the job's processes */

/* The job is the command and everything it starts. record is their subreaper: a process whose
 * parent ends is handed to record, not to init, so every process of the job stays a descendant
 * of record until it is gone, and "record has no child left" means "the job is over". */

#define MAX_JOB_PIDS 1024

/* the children of p (every thread's), appended to out; -1 when /proc cannot tell */
static int add_children(pid_t p, pid_t *out, int *n) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)p);
  DIR *d = opendir(path);
  if (!d) return -1;
  int seen = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char cp[sizeof path + sizeof e->d_name + 16];
    snprintf(cp, sizeof cp, "%s/%s/children", path, e->d_name);
    FILE *f = fopen(cp, "r");
    if (!f) continue;
    seen = 1;
    for (long c; fscanf(f, "%ld", &c) == 1;)
      if (*n < MAX_JOB_PIDS) out[(*n)++] = (pid_t)c;
    fclose(f);
  }
  closedir(d);
  return seen ? 0 : -1;
}

/* Every process of the job still there (zombies included), breadth first; -1 when /proc cannot
 * list children (a kernel without CONFIG_PROC_CHILDREN). */
static int job_pids(pid_t *out) {
  int n = 0;
  if (add_children(getpid(), out, &n) != 0) return -1;
  for (int head = 0; head < n; head++) add_children(out[head], out, &n);
  return n;
}

/* 1 when process p has a handler for sig (/proc/PID/status, SigCgt) */
static int catches(pid_t p, int sig) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)p);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  unsigned long long m = 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = sscanf(line, "SigCgt: %llx", &m) == 1;
  fclose(f);
  return found && ((m >> (sig - 1)) & 1);
}

typedef struct {
  const char *verb;
  pid_t pid, pgid;      /* the command; its process group */
  int tty;              /* the terminal handed to the job, or -1 */
  int status, done;     /* the command's wait status, once it ended */
  int term_sig;         /* the first termination signal passed on, 0 none */
  uint64_t term_ns;     /* when */
  uint64_t done_ns;     /* when the command ended */
  unsigned grace_s;
  int told_waiting, killed, warned_usr1;
} job_t;

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static const char *sig_name(int sig) {
  switch (sig) {
  case SIGINT: return "SIGINT";
  case SIGTERM: return "SIGTERM";
  case SIGHUP: return "SIGHUP";
  case SIGQUIT: return "SIGQUIT";
  default: return "a signal";
  }
}

/* "1234, 1240, 1241" (at most 10, then "..."); the count */
static int pid_list(char *buf, size_t len) {
  static pid_t pids[MAX_JOB_PIDS];
  int n = job_pids(pids);
  buf[0] = 0;
  for (int i = 0; i < n && i < 10; i++)
    snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", i ? ", " : "", (int)pids[i]);
  if (n > 10) snprintf(buf + strlen(buf), len - strlen(buf), ", ...");
  return n;
}

/* Pass sig on to every process of the job: its process group, and the processes that left it
 * (setsid, setpgid). SIGUSR1 (a flight dump) only goes to processes that handle it: to the
 * others (a launcher, a shell) its default action is to terminate. */
static void forward(job_t *j, int sig) {
  static pid_t pids[MAX_JOB_PIDS];
  int n = job_pids(pids);
  if (sig == SIGUSR1) {
    if (n < 0 && !j->warned_usr1++)
      ncs_warn("cannot tell which processes handle SIGUSR1 (no /proc children list): not "
               "passed on");
    for (int i = 0; i < n; i++)
      if (catches(pids[i], sig)) kill(pids[i], sig);
    return;
  }
  /* the group's id is the command's pid: once the command is reaped and the group empty, that
   * number may belong to someone else, so the group is signalled only while it is known to exist */
  int group = !j->done || n < 0;
  for (int i = 0; i < n; i++)
    if (getpgid(pids[i]) == j->pgid)
      group = 1;
    else
      kill(pids[i], sig);
  if (group) kill(-j->pgid, sig);
}

/* The terminal record runs in the foreground of, or -1: the job gets it while it runs, so that
 * it can read it and Ctrl-C reaches it directly */
static int foreground_tty(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (isatty(fd) && tcgetpgrp(fd) == getpgrp()) return fd;
  return -1;
}

/* The command stopped (Ctrl-Z in the terminal the job owns, or SIGTTIN): record stops too, as
 * a shell job would, so that the shell gets the terminal back; when continued, it gives the
 * terminal to the job again if it is in the foreground (fg, not bg) and continues the job. */
static void job_stopped(job_t *j) {
  if (j->tty >= 0) tcsetpgrp(j->tty, getpgrp());
  raise(SIGSTOP);
  j->tty = foreground_tty(); /* continued in the foreground (fg) or not (bg) */
  if (j->tty >= 0) tcsetpgrp(j->tty, j->pgid);
  kill(-j->pgid, SIGCONT);
}

/* Reap what ended. 1 when no process of the job is left. */
static int reap(job_t *j) {
  for (;;) {
    int st;
    pid_t w = waitpid(-1, &st, WNOHANG | WUNTRACED);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno == ECHILD;
    if (w == 0) return 0;
    if (w != j->pid) continue; /* an orphan of the job, handed to record */
    if (WIFSTOPPED(st)) {
      job_stopped(j);
    } else if (!j->done) {
      j->done = 1, j->status = st, j->done_ns = mono_ns();
    }
  }
}

/* After a termination signal, the job has grace_s seconds to end; then what is left is
 * killed, and record says so. */
static void check_grace(job_t *j, uint64_t now) {
  char pids[160];
  if (j->done && !j->term_sig && !j->told_waiting && now - j->done_ns > 2000000000u) {
    j->told_waiting = 1;
    int n = pid_list(pids, sizeof pids);
    if (n > 0)
      ncs_warn("the command exited; waiting for %d more process%s of the job (pid%s %s): "
               "the trace is complete when they end (SIGINT or SIGTERM to ncclscope ends them)",
               n, n == 1 ? "" : "es", n == 1 ? "" : "s", pids);
  }
  if (!j->term_sig || j->killed || now - j->term_ns < (uint64_t)j->grace_s * 1000000000u) return;
  j->killed = 1;
  int n = pid_list(pids, sizeof pids);
  ncs_warn("%d process%s of the job did not end within %u s of %s (pid%s %s): killed "
           "(SIGKILL); their trace files may be incomplete",
           n < 0 ? 0 : n, n == 1 ? "" : "es", j->grace_s, sig_name(j->term_sig),
           n == 1 ? "" : "s", n < 0 ? "unknown" : pids);
  forward(j, SIGKILL);
}

/* Wait until no process of the job is left, passing signals on. The signals (and SIGCHLD) are
 * blocked and taken with sigtimedwait, not with handlers: nothing runs in signal context, and
 * none can slip in between fork and wait. */
static void wait_job(job_t *j, const sigset_t *set) {
  while (!reap(j)) {
    uint64_t now = mono_ns();
    check_grace(j, now);
    if (j->killed && now - j->term_ns > ((uint64_t)j->grace_s + 10) * 1000000000u) {
      ncs_warn("processes of the job are still there 10 s after SIGKILL (stuck in the "
               "kernel?): the trace may be incomplete");
      return;
    }
    struct timespec tick = {0, 250000000}; /* for the grace period and the messages */
    siginfo_t si;
    int sig = sigtimedwait(set, &si, j->done || j->term_sig ? &tick : NULL);
    if (sig <= 0 || sig == SIGCHLD || sig == SIGTTOU) continue;
    if (sig != SIGUSR1 && !j->term_sig) j->term_sig = sig, j->term_ns = mono_ns();
    forward(j, sig);
  }
}

/* Start the command in a process group of its own. Returns its pid, or -1 after saying why;
 * *exec_errno is the errno of a failed exec (0 when the command runs). */
static pid_t start(char *const *cmd, int tty, const sigset_t *old,
                   const struct sigaction *old_chld, int *exec_errno) {
  int p[2];
  *exec_errno = 0;
  if (pipe2(p, O_CLOEXEC) != 0) {
    ncs_error("pipe: %s", strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) { /* the command gets the signal state ncclscope was started with */
    setpgid(0, 0);
    if (tty >= 0) tcsetpgrp(tty, getpid()); /* SIGTTOU is still blocked here */
    sigaction(SIGCHLD, old_chld, NULL);
    ncs_out_child_signals(); /* SIGXFSZ as ncclscope was started with it */
    sigprocmask(SIG_SETMASK, old, NULL);
    execvp(cmd[0], cmd);
    int e = errno;
    if (write(p[1], &e, sizeof e) != (ssize_t)sizeof e) {
    }
    _exit(e == ENOENT ? 127 : 126);
  }
  close(p[1]);
  if (pid < 0) {
    ncs_error("fork: %s", strerror(errno));
    close(p[0]);
    return -1;
  }
  setpgid(pid, pid); /* both sides, so that neither depends on which runs first */
  if (tty >= 0) tcsetpgrp(tty, pid);
  /* the pipe closes at exec (O_CLOEXEC); an errno on it means exec failed */
  int e = 0;
  ssize_t r;
  while ((r = read(p[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  close(p[0]);
  if (r == (ssize_t)sizeof e) *exec_errno = e;
  return pid;
}

/* Run the command and wait for its whole process tree. Returns its exit status (128+N for a
 * signal N, 127/126 when it could not be run, like a shell), or -1. */
static int run_job(ncs_record_opts_t *o) {
  static const int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1};
  sigset_t set, old;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) sigaddset(&set, fwd[i]);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTTOU); /* handing the terminal over and back from the background */
  struct sigaction dfl, old_chld;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL; /* an inherited SIG_IGN would reap the command before we can */
  sigemptyset(&dfl.sa_mask);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    ncs_warn("cannot become the job's subreaper (%s): processes that leave their parent "
             "are not waited for", strerror(errno));
  fflush(NULL);
  sigaction(SIGCHLD, &dfl, &old_chld);
  sigprocmask(SIG_BLOCK, &set, &old);
  job_t j = {.verb = o->verb, .tty = foreground_tty(), .grace_s = o->grace_s ? o->grace_s : 10};
  int e, rc = -1;
  j.pid = j.pgid = start(o->cmd, j.tty, &old, &old_chld, &e);
  if (j.pid > 0) {
    wait_job(&j, &set);
    if (j.tty >= 0) tcsetpgrp(j.tty, getpgrp());
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) > 0) { /* nobody is left to pass them to */
    }
    if (e) {
      ncs_error("cannot run %s: %s", o->cmd[0], strerror(e));
      o->not_run = 1;
    }
    rc = !j.done                   ? 128 + SIGKILL
         : WIFEXITED(j.status)     ? WEXITSTATUS(j.status)
         : WIFSIGNALED(j.status)   ? 128 + WTERMSIG(j.status)
                                   : NCS_EXIT_ERROR;
    o->incomplete = j.killed;
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  sigaction(SIGCHLD, &old_chld, NULL);
  return rc;
}

int ncs_record_run(ncs_record_opts_t *o) {
  char size[32], plugin[PATH_MAX], dir[PATH_MAX];
  int rc = check_opts(o, size, sizeof size);
  if (rc) return rc;
  if (o->plugin)
    snprintf(plugin, sizeof plugin, "%s", o->plugin);
  else if (ncs_find_plugin(plugin, sizeof plugin) != 0)
    return NCS_EXIT_ERROR;
  if (make_dir(o, dir, sizeof dir) != 0) return NCS_EXIT_ERROR;
  if (o->dir_used) snprintf(o->dir_used, o->dir_used_len, "%s", dir);
  size_t before = count_traces(dir);
  if (before)
    ncs_warn("%s already holds %zu trace file%s; new ones are added beside them", dir, before,
             before == 1 ? "" : "s");
  if (set_env(plugin, dir, o->events, o->mode ? o->mode : "trace", size[0] ? size : NULL,
              o->kernel_sample) != 0 ||
      (o->range_metrics && setenv("NCCLSCOPE_RANGE_METRICS", o->range_metrics, 1) != 0) ||
      set_nvtx(plugin) != 0) {
    ncs_error("setenv: %s", strerror(errno));
    return NCS_EXIT_ERROR;
  }
  rc = run_job(o);
  if (rc < 0) return NCS_EXIT_ERROR;
  size_t after = count_traces(dir);
  if (o->not_run) { /* nothing ran: no trace to speak of, and no empty directory left behind */
    if (o->dir_created && after == 0 && rmdir(dir) == 0 && o->dir_used) o->dir_used[0] = 0;
    return rc;
  }
  /* one line: where the trace went, or that there is none (never "0 files" and then a warning) */
  if (after == before)
    ncs_warn("no trace file was written to %s%s: did the command use NCCL (2.23 or later), and did "
             "NCCL load %s? Try NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV",
             dir, o->incomplete ? " (processes of the job had to be killed: what there is of it may be incomplete)" : "",
             plugin);
  else if (!o->quiet || o->incomplete)
    ncs_note("trace written to %s (%zu file%s)%s", dir, after - before, after - before == 1 ? "" : "s",
             o->incomplete ? "; it may be incomplete: processes of the job had to be killed" : "");
  return rc;
}

int ncs_cmd_record(int argc, char **argv) {
  static const struct option opts[] = {
      {"output", required_argument, 0, 'o'}, {"events", required_argument, 0, 'e'},
      {"mode", required_argument, 0, 'm'},   {"buffer-size", required_argument, 0, 'b'},
      {"sample", required_argument, 0, 's'}, {"kernel-sample", required_argument, 0, 'k'},
      {"grace", required_argument, 0, 'G'},  {"cupti", required_argument, 0, 'C'},
      {"range-metrics", required_argument, 0, 'R'}, {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  ncs_record_opts_t o = {.verb = "record"};
  int c;
  uint64_t v;
  optind = 0;
  opterr = 0;
  /* '+': options end at the command, so its own options are left alone */
  while ((c = getopt_long(argc, argv, "+:o:e:m:b:s:k:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': o.out_dir = optarg; break;
    case 'e': o.events = optarg; break;
    case 'm': o.mode = optarg; break;
    case 'b': o.buffer_size = optarg; break;
    case 's':
    case 'k': o.kernel_sample = optarg; break;
    case 'G':
      if (ncs_parse_count(optarg, 1, 3600, &v) != 0)
        return ncs_usage_error("record", "--grace needs seconds from 1 to 3600, not '%s'", optarg);
      o.grace_s = (unsigned)v;
      break;
    case 'C': /* the plugin reads it; record only checks it */
      if (strcmp(optarg, "on") && strcmp(optarg, "off"))
        return ncs_usage_error("record", "--cupti must be on or off, not '%s'", optarg);
      if (setenv("NCCLSCOPE_CUPTI", optarg, 1) != 0) return NCS_EXIT_ERROR;
      break;
    case 'R': o.range_metrics = optarg; break;
    case 'h': fputs(record_help, stdout); return NCS_EXIT_OK;
    default: return ncs_bad_option("record", c, argv);
    }
  }
  if (o.out_dir && !*o.out_dir) return ncs_usage_error("record", "-o needs a directory name");
  o.cmd = argv + optind;
  return ncs_record_run(&o);
}
