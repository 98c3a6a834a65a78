/* trigger.c - `ncclscope trigger`: ask every process that records in flight mode into a trace
 * directory to dump its ring, on every host that shares the directory.
 *
 * The mechanism is the plugin's request file (docs/flight.md, "Dumps"): each flight-mode process
 * polls the modification time of <dir>/ncclscope.dump every 0.2 s and dumps when it changes,
 * taking the file's first line as the trigger. The line ends with the trigger's realtime in ns,
 * which every dump of the incident records, so `diagnose` groups them as one. This verb writes
 * that line whole (a temporary file renamed over the old one: no process reads half a line) and,
 * with --wait, counts the dumps that appear in <dir>/dumps.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/text.h"

static const char trigger_help[] =
    "usage: ncclscope trigger [OPTIONS] DIR\n"
    "\n"
    "Ask every process that records in flight mode (record --mode flight) into the\n"
    "trace directory DIR to dump its flight recorder into DIR/dumps, on every host\n"
    "that shares DIR (a shared file system). It writes the request file\n"
    "DIR/ncclscope.dump, which each process polls every 0.2 s (docs/flight.md); then\n"
    "read the dumps with 'ncclscope diagnose DIR'.\n"
    "\n"
    "options:\n"
    "      --reason TEXT     recorded as the dumps' trigger (default: manual)\n"
    "  -w, --wait SECONDS    wait up to SECONDS (0 to 3600, default 5) for the dumps\n"
    "                        and count them against the processes recording into DIR;\n"
    "                        0: do not wait\n"
    "  -h, --help            this help\n"
    "\n"
    "examples:\n"
    "  ncclscope trigger run2 && ncclscope diagnose --latest run2\n"
    "  ncclscope trigger --reason 'step 900 slow' --wait 30 /shared/run2\n"
    "\n"
    "exit status: 0 the request was written (and, when waiting, every recording\n"
    "process dumped), 1 when waiting, some recording process did not dump in time,\n"
    "2 usage error, 3 DIR does not exist or is not a directory, 5 the request file\n"
    "cannot be written\n";

static uint64_t real_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* files in dir ending in .nsflight (dumps are written as .tmp and renamed: a new name is a
 * whole dump) */
static int count_flight(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (e->d_name[0] == '.' || l < 9 || strcmp(e->d_name + l - 9, ".nsflight")) continue;
    char p[PATH_MAX + 300];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) n++;
  }
  closedir(d);
  return n;
}

/* the request line, written whole: "<reason> <host>-<pid> <realtime ns>\n" */
static int write_request(const char *dir, const char *reason, uint64_t now) {
  char host[256] = "?", path[PATH_MAX], tmp[PATH_MAX + 32], line[512];
  gethostname(host, sizeof host - 1);
  if ((size_t)snprintf(path, sizeof path, "%s/ncclscope.dump", dir) >= sizeof path) {
    ncs_error("path too long: %s", dir);
    return NCS_EXIT_OUTPUT;
  }
  snprintf(tmp, sizeof tmp, "%s.trigger-%d", path, (int)getpid());
  int n = snprintf(line, sizeof line, "%s %s-%d %llu\n", reason, host, (int)getpid(),
                   (unsigned long long)now);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    ncs_error("cannot write %s: %s", tmp, strerror(errno));
    return NCS_EXIT_OUTPUT;
  }
  int ok = write(fd, line, (size_t)n) == n;
  int e = errno;
  if (close(fd) != 0 && ok) ok = 0, e = errno;
  if (!ok || rename(tmp, path) != 0) {
    if (ok) e = errno;
    unlink(tmp);
    ncs_error("cannot write %s: %s", path, strerror(e));
    return NCS_EXIT_OUTPUT;
  }
  return 0;
}

int ncs_cmd_trigger(int argc, char **argv) {
  static const struct option opts[] = {{"reason", required_argument, 0, 'R'},
                                       {"wait", required_argument, 0, 'w'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *reason = "manual";
  uint64_t wait_s = 5;
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":w:h", opts, NULL)) != -1) {
    switch (c) {
    case 'R':
      if (!*optarg || strpbrk(optarg, "\n\r"))
        return ncs_usage_error("trigger", "--reason needs one line of text");
      if (strlen(optarg) > 200) return ncs_usage_error("trigger", "--reason: at most 200 characters");
      reason = optarg;
      break;
    case 'w':
      if (!strcmp(optarg, "0")) {
        wait_s = 0;
        break;
      }
      if (ncs_parse_count(optarg, 1, 3600, &wait_s) != 0)
        return ncs_usage_error("trigger", "--wait needs seconds from 0 to 3600, not '%s'", optarg);
      break;
    case 'h': fputs(trigger_help, stdout); return NCS_EXIT_OK;
    default: return ncs_bad_option("trigger", c, argv);
    }
  }
  if (optind >= argc) return ncs_usage_error("trigger", "which trace directory? give DIR");
  if (optind + 1 < argc) return ncs_usage_error("trigger", "one directory, please");
  const char *dir = argv[optind];
  struct stat st;
  int srs = stat(dir, &st);
  if (srs != 0 || !S_ISDIR(st.st_mode)) {
    ncs_error("%s: %s", dir, srs != 0 ? strerror(errno) : "not a directory");
    return NCS_EXIT_NO_INPUT;
  }
  int live = count_flight(dir); /* one live flight file per recording process (and per load) */
  if (!live)
    ncs_warn("%s holds no *.nsflight file: no process records in flight mode into it "
             "(yet); the request stays there and is taken when one starts", dir);
  char dumps[PATH_MAX + 8];
  snprintf(dumps, sizeof dumps, "%s/dumps", dir);
  int before = count_flight(dumps); /* dumps of earlier incidents: not this one's */
  uint64_t now = real_ns();
  int rc = write_request(dir, reason, now);
  if (rc) return rc;
  ncs_note("requested a flight dump from every process recording into %s (%d flight file%s there); "
           "dumps go to %s/dumps", dir, live, live == 1 ? "" : "s", dir);
  if (!wait_s) return NCS_EXIT_OK;
  int got = 0;
  for (uint64_t t = 0; t < wait_s * 10; t++) { /* processes poll every 0.2 s */
    got = count_flight(dumps) - before;
    if (live && got >= live) break;
    struct timespec tick = {0, 100000000};
    nanosleep(&tick, NULL);
  }
  /* a flight file of a process that has ended (or of an earlier load) never dumps again: the
   * count says what it is, not more */
  char line[3 * PATH_MAX];
  snprintf(line, sizeof line, "%d new dump%s in %s for %d flight file%s in %s%s", got, got == 1 ? "" : "s",
           dumps, live, live == 1 ? "" : "s", dir,
           got >= live ? "" : " (a file of a process that has ended, or of an earlier load of the "
                              "plugin, does not dump; nor does a host that does not see the directory)");
  ncs_wrap(stdout, "", "  ", line, ncs_term_width(STDOUT_FILENO));
  if (got) printf("next: %s diagnose --latest %s\n", ncs_prog, dir);
  return live && got >= live ? NCS_EXIT_OK : NCS_EXIT_FOUND;
}
