/* record.c - `ncclscope record`: run a command with the profiler plugin loaded.
 *
 * Like `perf record`, this does little: it checks the options, creates the trace directory, sets
 * NCCL_PROFILER_PLUGIN and the NCCLSCOPE_* variables that the plugin reads, runs the command and
 * waits for it. The plugin in each process of the command writes one file into the directory.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "trace/reader.h"

static const char record_help[] =
    "usage: ncclscope record [OPTIONS] [--] CMD [ARGS...]\n"
    "\n"
    "Run CMD with the ncclscope profiler plugin loaded into NCCL; every process writes one\n"
    "<host>-<pid>.nstrace file into the trace directory.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR       trace directory (created; default ncclscope-YYYYmmdd-HHMMSS)\n"
    "  -e, --events LIST      event types to record (default: " NCS_DEFAULT_EVENTS ")\n"
    "                         names: group coll p2p proxyop proxystep proxyctrl kernel net\n"
    "                         groupapi collapi p2papi launch cecoll cesync cebatch, aliases api\n"
    "                         proxy ce all none default, a number, -NAME removes a type\n"
    "  -m, --mode MODE        trace (default, everything) or flight (the recent past in bounded\n"
    "                         memory, dumped on SIGUSR1, a watchdog or a request; docs/flight.md)\n"
    "  -b, --buffer-size SIZE buffer pool per process, 1M to 16G, e.g. 64M (K, M, G: powers of "
    "1024)\n"
    "  -s, --sample N         record one group of operations in N in full, GPU times included, and\n"
    "                         only counts of the others; 1: every operation (default: 64 in trace\n"
    "                         mode, 1 in flight mode; NCCLSCOPE_SAMPLE, docs/config.md \"Sampling\").\n"
    "                         -k, --kernel-sample is its earlier name\n"
    "      --cupti on|off     GPU times of every kernel from CUPTI, joined to NCCL's operations\n"
    "                         (default off: CUPTI serves one tool per process, and PyTorch's\n"
    "                         profiler or Nsight Systems would get nothing; NCCLSCOPE_CUPTI,\n"
    "                         docs/gpu-truth.md)\n"
    "  -h, --help             this help\n"
    "\n"
    "environment: NCCLSCOPE_PLUGIN overrides the plugin path (default: next to ncclscope, else\n"
    "../lib). The exit status is CMD's (128+N when a signal N killed it); 2 for usage errors, 1\n"
    "when the command could not be started.\n";

/* ---------------------------------------------------------------- the trace directory */

static int mkdir_p(const char *path) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
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
  if (mkdir_p(dir) != 0) {
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

/* Check the options that do not need the file system. Returns 0 or an exit status. */
static int check_opts(const ncs_record_opts_t *o, char *size, size_t size_len) {
  uint32_t mask;
  if (o->events && ncs_check_events(o->verb, "--events", o->events, &mask) != 0)
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
  if (!o->cmd || !o->cmd[0]) return ncs_usage_error(o->verb, "no command to run");
  return 0;
}

/* ---------------------------------------------------------------- the child */

/* Wait for the command, forwarding SIGINT and SIGTERM to it. The signals (and SIGCHLD) are
 * blocked and taken with sigwaitinfo, not with handlers: nothing runs in signal context, and a
 * signal cannot slip in between fork and wait. A signal from the terminal (si_code SI_KERNEL)
 * already went to the whole foreground process group, the command included: it is not sent a
 * second time. */
static int wait_child(pid_t pid, const sigset_t *set) {
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return NCS_EXIT_FAIL;
    siginfo_t si;
    int sig = sigwaitinfo(set, &si);
    if ((sig == SIGINT || sig == SIGTERM) && si.si_code != SI_KERNEL) kill(pid, sig);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return NCS_EXIT_FAIL;
}

static int run_child(char *const *cmd) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  struct sigaction dfl, old_chld;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL; /* an inherited SIG_IGN would reap the command before we can */
  sigemptyset(&dfl.sa_mask);
  fflush(NULL);
  sigaction(SIGCHLD, &dfl, &old_chld);
  sigprocmask(SIG_BLOCK, &set, &old);
  pid_t pid = fork();
  if (pid == 0) { /* the command gets the signal state ncclscope was started with */
    sigaction(SIGCHLD, &old_chld, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    execvp(cmd[0], cmd);
    int e = errno;
    fprintf(stderr, "%s: cannot run %s: %s\n", ncs_prog, cmd[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  int rc = -1;
  if (pid < 0)
    ncs_error("fork: %s", strerror(errno));
  else
    rc = wait_child(pid, &set);
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
    return NCS_EXIT_FAIL;
  if (make_dir(o, dir, sizeof dir) != 0) return NCS_EXIT_FAIL;
  if (o->dir_used) snprintf(o->dir_used, o->dir_used_len, "%s", dir);
  size_t before = count_traces(dir);
  if (before)
    ncs_warn("%s already holds %zu trace file%s; new ones are added beside them", dir, before,
             before == 1 ? "" : "s");
  if (set_env(plugin, dir, o->events, o->mode ? o->mode : "trace", size[0] ? size : NULL,
              o->kernel_sample) != 0) {
    ncs_error("setenv: %s", strerror(errno));
    return NCS_EXIT_FAIL;
  }
  rc = run_child(o->cmd);
  if (rc < 0) return NCS_EXIT_FAIL;
  size_t after = count_traces(dir);
  fprintf(stderr, "%s: trace written to %s (%zu file%s)\n", ncs_prog, dir, after - before,
          after - before == 1 ? "" : "s");
  if (after == before)
    ncs_warn("no trace file was written: did the command use NCCL (2.23 or later), and did NCCL "
             "load %s? Try NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV",
             plugin);
  return rc;
}

int ncs_cmd_record(int argc, char **argv) {
  static const struct option opts[] = {
      {"output", required_argument, 0, 'o'}, {"events", required_argument, 0, 'e'},
      {"mode", required_argument, 0, 'm'},   {"buffer-size", required_argument, 0, 'b'},
      {"sample", required_argument, 0, 's'},        {"kernel-sample", required_argument, 0, 'k'},
      {"cupti", required_argument, 0, 'C'},         {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  ncs_record_opts_t o = {.verb = "record"};
  int c;
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
    case 'C': /* the plugin reads it; record only checks it */
      if (strcmp(optarg, "on") && strcmp(optarg, "off"))
        return ncs_usage_error("record", "--cupti must be on or off, not '%s'", optarg);
      if (setenv("NCCLSCOPE_CUPTI", optarg, 1) != 0) return NCS_EXIT_FAIL;
      break;
    case 'h': fputs(record_help, stdout); return NCS_EXIT_OK;
    default: return ncs_bad_option("record", c, argv);
    }
  }
  if (o.out_dir && !*o.out_dir) return ncs_usage_error("record", "-o needs a directory name");
  o.cmd = argv + optind;
  return ncs_record_run(&o);
}
