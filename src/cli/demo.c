/* demo.c - `ncclscope demo`: record a simulated job with nccl-sim, with a fault injected when a
 * scenario asks for one, and show on one screen what the report and diagnose make of it; write
 * its timeline (DIR.pftrace, for ui.perfetto.dev) and report page (DIR.html) beside the trace
 * directory.
 *
 * nccl-sim drives the plugin through NCCL's real call patterns on the CPU, so the demo needs no
 * GPU and no NCCL. It runs through the same code as `record`, `export`, `report` and `diagnose`.
 * A demo directory is the demo's own (a marker file says so): running the demo into it again
 * replaces the run it holds (docs/cli.md, "ncclscope demo").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/diagnose.h"
#include "cli/cli.h"
#include "export/export.h"
#include "model/model.h"
#include "trace/format.h"
#include "util/fmt.h"
#include "util/text.h"

static const char demo_help[] =
    "usage: ncclscope demo [OPTIONS]\n"
    "\n"
    "Run nccl-sim (a simulated NCCL job on the CPU, no GPU needed) with the profiler\n"
    "plugin, with a fault injected when the scenario asks for one; write its trace,\n"
    "the timeline DIR.pftrace (for https://ui.perfetto.dev) and the report DIR.html\n"
    "beside the trace directory, and print one screen: what ran, what was injected,\n"
    "the report's findings, diagnose's verdict, where the files are (about 40 MB with\n"
    "the defaults) and the next commands.\n"
    "\n"
    "scenarios (--scenario):\n"
    "  healthy     nothing injected: a mix of every operation over 2 communicators\n"
    "              (the default)\n"
    "  straggler   one rank sleeps 10 ms before each of its collectives\n"
    "  stall       one rank sleeps 1 s once, before one collective\n"
    "  hang        one rank never calls one collective; the others hang in it\n"
    "  slow-link   one rank's network transfers take 5 ms longer each\n"
    "  desync      one rank calls one collective with twice the others' count\n"
    "  any other name runs that nccl-sim scenario as it is (nccl-sim --list)\n"
    "\n"
    "options:\n"
    "  -o, --output DIR      trace directory (default $TMPDIR/ncclscope-demo-DATE-\n"
    "                        TIME, /tmp without TMPDIR); a demo directory is\n"
    "                        replaced by the next demo run into it\n"
    "      --scenario NAME   what to run (above; default healthy)\n"
    "  -r, --ranks N         simulated ranks, 1 to 1024 (default 8; 2 or more with a\n"
    "                        fault)\n"
    "      --iters K         operations per rank (default 200; 10 or more with a\n"
    "                        fault)\n"
    "  -p, --procs P         processes the ranks run in (default: one per rank, like\n"
    "                        a real job, up to 16)\n"
    "  -e, --events LIST     event types to record (default: all)\n"
    "      --wide            lines as long as they need (the default fits the\n"
    "                        terminal)\n"
    "      --force           replace traces, DIR.pftrace and DIR.html that another\n"
    "                        command wrote (refused otherwise)\n"
    "  -h, --help            this help\n"
    "\n"
    "examples:\n"
    "  ncclscope demo\n"
    "  ncclscope demo --scenario straggler -o /tmp/straggler\n"
    "  ncclscope demo --scenario hang --ranks 4 --iters 40\n"
    "\n"
    "environment: NCCLSCOPE_SIM overrides the nccl-sim path, NCCLSCOPE_PLUGIN the\n"
    "plugin's.\n"
    "\n"
    "exit status: 0 ok (the hang scenario's nccl-sim exits 3 by design: still 0),\n"
    "2 usage error, 4 a trace file is damaged, 5 an output was refused or cannot be\n"
    "written, 6 nccl-sim or the plugin not found; else nccl-sim's own status\n";

/* ---------------------------------------------------------------- the scenarios */

typedef struct {
  const char *name;
  const char *sim;      /* nccl-sim's scenario */
  const char *fault;    /* nccl-sim's fault options, with R (rank) and S (operation) to fill in */
  const char *couple;   /* nccl-sim --couple: ranks wait for each other's data, as on GPUs */
  const char *injected; /* what was injected, in words (R, S as above) */
  int sim_rc;           /* nccl-sim's status when the fault did what it should */
  int brief;            /* NCS_BRIEF_*: the lines that show it */
} scenario_t;

static const scenario_t scenarios[] = {
    {"healthy", "mixed", NULL, "on", "nothing: a healthy job (every operation, 2 communicators)", 0, 0},
    {"straggler", "allreduce", "--slow-rank R --slow-us 10000", "on",
     "rank R sleeps 10 ms before each of its collectives: a straggler", 0, 0},
    /* the report names a one-off stall once it has a stall finding; the worst line shows it now */
    {"stall", "allreduce", "--pause R:S:1000", "on",
     "rank R sleeps 1 s once, before its collective S: a one-off stall", 0, NCS_BRIEF_WORST},
    {"hang", "allreduce", "--fault skip:R:S --hang-s 2", "on",
     "rank R never calls its collective S: the others hang in it (and give up after 2 s)", 3, 0},
    /* kernel times from the bytes (--gpu-gbps), so that the link's own time stands out from
     * the machine's load */
    {"slow-link", "allreduce", "--slow-link R --slow-link-us 5000 --gpu-gbps 0.2", "on",
     "each network transfer of rank R takes 5 ms longer: a slow link", 0, NCS_BRIEF_LINKS},
    {"desync", "allreduce", "--fault mismatch:R:S", "on",
     "rank R calls its collective S with twice the others' count: a desync", 0, 0},
};

static const scenario_t *find_scenario(const char *name) {
  for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; k++)
    if (!strcmp(scenarios[k].name, name)) return &scenarios[k];
  return NULL;
}

/* text with R and S (standing alone, or before ':') replaced by the rank and the operation */
static void fill(char *out, size_t len, const char *text, int rank, unsigned long seq) {
  size_t n = 0;
  out[0] = 0;
  for (const char *p = text; *p && n + 24 < len; p++) {
    int alone = (p == text || strchr(" :", p[-1])) && (!p[1] || strchr(" :,", p[1]));
    if (alone && *p == 'R')
      n += (size_t)snprintf(out + n, len - n, "%d", rank);
    else if (alone && *p == 'S')
      n += (size_t)snprintf(out + n, len - n, "%lu", seq);
    else
      out[n++] = *p, out[n] = 0;
  }
}

typedef struct {
  const char *out, *ranks, *iters, *procs, *scenario, *events;
  int force, wide;
} demo_opts_t;

static int parse(int argc, char **argv, demo_opts_t *d) {
  static const struct option opts[] = {
      {"output", required_argument, 0, 'o'}, {"ranks", required_argument, 0, 'r'},
      {"iters", required_argument, 0, 'i'},  {"scenario", required_argument, 0, 's'},
      {"events", required_argument, 0, 'e'}, {"procs", required_argument, 0, 'p'},
      {"force", no_argument, 0, 'F'},        {"wide", no_argument, 0, 'W'},
      {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
  int c;
  uint64_t v;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:r:p:e:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o':
      if (!*optarg) return ncs_usage_error("demo", "-o needs a directory name");
      d->out = optarg;
      break;
    case 's':
      if (!*optarg || strchr(optarg, '/') || optarg[0] == '-')
        return ncs_usage_error("demo", "--scenario needs a scenario name, not '%s'", optarg);
      d->scenario = optarg;
      break;
    case 'e': d->events = optarg; break;
    case 'F': d->force = 1; break;
    case 'W': d->wide = 1; break;
    case 'r':
      if (ncs_parse_count(optarg, 1, 1024, &v) != 0) /* nccl-sim's limits */
        return ncs_usage_error("demo", "--ranks needs a number from 1 to 1024, not '%s'", optarg);
      d->ranks = optarg;
      break;
    case 'i':
      if (ncs_parse_count(optarg, 1, 10000000, &v) != 0)
        return ncs_usage_error("demo", "--iters needs a positive number, not '%s'", optarg);
      d->iters = optarg;
      break;
    case 'p':
      if (ncs_parse_count(optarg, 1, 16, &v) != 0)
        return ncs_usage_error("demo", "--procs needs a number from 1 to 16, not '%s'", optarg);
      d->procs = optarg;
      break;
    case 'h': fputs(demo_help, stdout); return -1;
    default: return ncs_bad_option("demo", c, argv);
    }
  }
  if (optind < argc) return ncs_usage_error("demo", "unexpected argument '%s'", argv[optind]);
  return 0;
}

/* ---------------------------------------------------------------- the directory */

#define DEMO_MARKER ".ncclscope-demo" /* in a trace directory the demo wrote */

/* bytes of a file, or of the regular files directly in a directory */
static uint64_t du(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return (uint64_t)st.st_size;
  uint64_t n = 0;
  DIR *d = opendir(path);
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));) {
    char p[PATH_MAX + 300];
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    if (e->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode)) n += (uint64_t)st.st_size;
  }
  closedir(d);
  return n;
}

static int is_trace_name(const char *n) {
  size_t l = strlen(n), a = strlen(NCS_TRACE_SUFFIX);
  return (l > a && !strcmp(n + l - a, NCS_TRACE_SUFFIX)) || (l > 9 && !strcmp(n + l - 9, ".nsflight"));
}

/* the trace files directly in dir (and in dir/dumps): counted, or removed */
static int traces_in(const char *dir, int remove, char *err, size_t len) {
  int n = 0;
  for (int sub = 0; sub < 2; sub++) {
    char d[PATH_MAX + 8];
    snprintf(d, sizeof d, "%s%s", dir, sub ? "/dumps" : "");
    DIR *dh = opendir(d);
    if (!dh) continue;
    for (struct dirent *e; (e = readdir(dh));) {
      if (!is_trace_name(e->d_name)) continue;
      char p[PATH_MAX + 300];
      snprintf(p, sizeof p, "%s/%s", d, e->d_name);
      if (remove && unlink(p) != 0 && errno != ENOENT) {
        snprintf(err, len, "cannot remove %.*s: %s", PATH_MAX, p, strerror(errno));
        closedir(dh);
        return -1;
      }
      n++;
    }
    closedir(dh);
  }
  return n;
}

/* Before a run into `dir`: the run a demo left there goes (its traces; its timeline, page and
 * log are replaced); traces of anything else stay unless --force. 0, or an exit status. */
static int make_room(const char *dir, int force, int *replace) {
  char marker[PATH_MAX + 32], err[2 * PATH_MAX + 128];
  snprintf(marker, sizeof marker, "%s/" DEMO_MARKER, dir);
  int ours = access(marker, F_OK) == 0;
  int n = traces_in(dir, 0, err, sizeof err);
  *replace = ours || force;
  if (n > 0 && !ours && !force) {
    ncs_error("%s holds %d trace file%s that no demo wrote: give another -o, or --force to replace "
              "them", dir, n, n == 1 ? "" : "s");
    return NCS_EXIT_OUTPUT;
  }
  if (n > 0 && traces_in(dir, 1, err, sizeof err) < 0) {
    ncs_error("%s", err);
    return NCS_EXIT_OUTPUT;
  }
  if (n > 0) ncs_note("replacing the run in %s (%d trace file%s)", dir, n, n == 1 ? "" : "s");
  return 0;
}

/* ---------------------------------------------------------------- the next commands */

/* How to run this ncclscope again from the shell the demo runs in: "ncclscope" when that name
 * on PATH is this executable, else its path (relative to the current directory when it lies
 * below it). *on_path: the first. */
static void self_cmd(char *out, size_t len, int *on_path) {
  char exe[PATH_MAX], cwd[PATH_MAX], cand[PATH_MAX + 16];
  *on_path = 0;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(out, len, "ncclscope");
    return;
  }
  exe[n] = 0;
  const char *path = getenv("PATH");
  struct stat a, b;
  if (path && stat(exe, &a) == 0) {
    for (const char *p = path; *p;) {
      size_t l = strcspn(p, ":");
      snprintf(cand, sizeof cand, "%.*s/ncclscope", (int)l, l ? p : ".");
      if (stat(cand, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        *on_path = l > 0;
        break;
      }
      if (stat(cand, &b) == 0) break; /* another ncclscope comes first on PATH */
      p += l + (p[l] == ':');
    }
  }
  if (*on_path) {
    snprintf(out, len, "ncclscope");
    return;
  }
  size_t cl = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
  if (cl > 1 && !strncmp(exe, cwd, cl) && exe[cl] == '/')
    snprintf(out, len, "%s", exe + cl + 1); /* build/ncclscope: has a '/', so the shell runs it */
  else
    snprintf(out, len, "%s", exe);
}

/* diagnose's first verdict, on one line that fits */
static void verdict_line(FILE *o, const char *dir, int width) {
  ncs_dg_opts_t dopts = {.job = NCS_JOB_LAST};
  ncs_dg_t *d = NULL;
  char err[1024];
  if (ncs_diagnose(dir, &dopts, &d, err, sizeof err) != 0) {
    ncs_wrap(o, "verdict   ", "          ", err, width);
    return;
  }
  if (d->nverdicts) {
    char line[1200];
    snprintf(line, sizeof line, "%s %s", ncs_dg_label(d->verdicts[0].kind), d->verdicts[0].summary);
    ncs_wrap(o, "verdict   ", "          ", line, width);
  }
  ncs_dg_free(d);
}

int ncs_cmd_demo(int argc, char **argv) {
  demo_opts_t d = {.ranks = "8", .iters = "200", .scenario = "healthy", .events = "all"};
  int rc = parse(argc, argv, &d);
  if (rc) return rc < 0 ? NCS_EXIT_OK : rc;
  const scenario_t *sc = find_scenario(d.scenario);
  int nranks = atoi(d.ranks), iters = atoi(d.iters);
  if (sc && sc->fault && (nranks < 2 || iters < 10))
    return ncs_usage_error("demo", "--scenario %s needs 2 ranks or more and 10 operations per rank or more",
                           sc->name);
  /* one process per rank (one trace file per rank), up to nccl-sim's 16 processes */
  if (!d.procs) d.procs = nranks > 16 ? "16" : d.ranks;
  int width = d.wide ? 0 : ncs_term_width(STDOUT_FILENO);
  static const char *const sim_rel[] = {"", "sim", "../bin", NULL};
  char sim[PATH_MAX], plugin[PATH_MAX], dir[PATH_MAX] = "", def[PATH_MAX];
  if (ncs_find_tool("NCCLSCOPE_SIM", "nccl-sim", sim_rel, sim, sizeof sim) != 0 ||
      ncs_find_plugin(plugin, sizeof plugin) != 0)
    return NCS_EXIT_ERROR;
  /* the default is under $TMPDIR (else /tmp), not the current directory: the demo writes tens
   * of MB that nobody asked to keep (docs/cli.md, "ncclscope demo") */
  if (!d.out) {
    const char *tmp = getenv("TMPDIR");
    time_t now = time(NULL);
    struct tm tm;
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    snprintf(def, sizeof def, "%s/ncclscope-demo-%s", tmp && *tmp ? tmp : "/tmp", ts);
    d.out = def;
  }
  int replace = 0;
  if ((rc = make_room(d.out, d.force, &replace)) != 0) return rc;
  /* the fault: on rank 3 (the last rank of fewer), at 30% of the run */
  int frank = nranks > 3 ? 3 : nranks - 1;
  unsigned long fseq = (unsigned long)iters * 3 / 10;
  char fault[256] = "", injected[512];
  if (sc && sc->fault) fill(fault, sizeof fault, sc->fault, frank, fseq);
  if (sc)
    fill(injected, sizeof injected, sc->injected, frank, fseq);
  else
    snprintf(injected, sizeof injected, "nothing: nccl-sim's scenario %s as it is", d.scenario);
  /* nccl-sim's own output, its messages too (a hang it injected says so), goes to a log beside
   * the trace, not onto the demo's screen: sh -c 'exec nccl-sim ... 2>&1' with stdout the log */
  char *cmd[40];
  int nc = 0;
  cmd[nc++] = "/bin/sh", cmd[nc++] = "-c", cmd[nc++] = "exec \"$0\" \"$@\" 2>&1";
  cmd[nc++] = sim, cmd[nc++] = "--plugin", cmd[nc++] = plugin;
  cmd[nc++] = "--scenario", cmd[nc++] = (char *)(sc ? sc->sim : d.scenario);
  cmd[nc++] = "--ranks", cmd[nc++] = (char *)d.ranks, cmd[nc++] = "--iters", cmd[nc++] = (char *)d.iters;
  cmd[nc++] = "--procs", cmd[nc++] = (char *)d.procs;
  cmd[nc++] = "--couple", cmd[nc++] = (char *)(sc ? sc->couple : "on");
  /* the demo's scenarios in model time (docs/nccl-sim.md, "Model time"): the trace's times are
   * nccl-sim's model, not when the machine ran the threads, so a 10 ms straggler is last in every
   * collective however loaded the machine is; another nccl-sim scenario runs live (some of them
   * model time cannot run) */
  if (sc) cmd[nc++] = "--clock", cmd[nc++] = "model";
  char fbuf[256];
  snprintf(fbuf, sizeof fbuf, "%s", fault);
  for (char *tok = strtok(fbuf, " "); tok && nc < 38; tok = strtok(NULL, " ")) cmd[nc++] = tok;
  cmd[nc] = NULL;
  ncs_record_opts_t o = {.verb = "demo",
                         .out_dir = d.out,
                         .events = d.events,
                         .kernel_sample = "1", /* the demo shows every GPU time */
                         .plugin = plugin,
                         .cmd = cmd,
                         .quiet = 1,
                         .dir_used = dir,
                         .dir_used_len = sizeof dir};
  ncs_note("running nccl-sim (a simulated NCCL on the CPU, no GPU): scenario %s, %s ranks in %s "
           "processes, %s operations per rank ...", d.scenario, d.ranks, d.procs, d.iters);
  fflush(NULL);
  char log[PATH_MAX + 16];
  snprintf(log, sizeof log, "%s.nccl-sim.log", d.out);
  int saved = dup(STDOUT_FILENO), lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (saved >= 0 && lfd >= 0) dup2(lfd, STDOUT_FILENO);
  if (lfd >= 0) close(lfd);
  rc = ncs_record_run(&o);
  fflush(stdout);
  if (saved >= 0) dup2(saved, STDOUT_FILENO), close(saved);
  if (rc == NCS_EXIT_USAGE && !dir[0]) return rc;
  if (sc && rc == sc->sim_rc) rc = 0; /* the hang: nccl-sim says ranks hung, as it should */
  char terr[256];
  int ntraces = dir[0] ? traces_in(dir, 0, terr, sizeof terr) : 0;
  if (rc == NCS_EXIT_USAGE && !sc && ntraces <= 0) /* nccl-sim did not know the scenario */
    return ncs_usage_error("demo", "no scenario '%s': healthy, straggler, stall, hang, slow-link, desync, or "
                                   "one of 'nccl-sim --list'", d.scenario);
  if (rc != 0) ncs_warn("nccl-sim exited with status %d (its output: %s)", rc, log);
  if (!dir[0] || ntraces <= 0) return rc ? rc : NCS_EXIT_ERROR; /* nothing to show */
  char marker[PATH_MAX + 32];
  snprintf(marker, sizeof marker, "%s/" DEMO_MARKER, dir);
  int mfd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (mfd >= 0) {
    static const char note[] = "written by ncclscope demo: a later demo run into this directory replaces it\n";
    if (write(mfd, note, sizeof note - 1) < 0) { /* only a hint; the run is there either way */
    }
    close(mfd);
  }
  /* the timeline, as `ncclscope export DIR` writes it */
  char pf[PATH_MAX + 16], html[PATH_MAX + 16];
  snprintf(pf, sizeof pf, "%s.pftrace", dir);
  snprintf(html, sizeof html, "%s.html", dir);
  char *in[] = {dir};
  ncs_export_opts_t eo = {.format = NCS_EXPORT_PERFETTO, .out = pf, .force = replace,
                          .job = NCS_JOB_LAST, .progress = isatty(STDERR_FILENO),
                          .prog = "ncclscope demo"}; /* a bar on a terminal; no lines in a log */
  ncs_export_stats_t es;
  char err[2 * PATH_MAX] = "";
  int st = 0, erc = ncs_export(in, 1, &eo, &es, err, sizeof err);
  int have_pf = !(erc < 0 || erc == 2 || erc == 3);
  if (!have_pf) {
    ncs_error("no timeline written: %s", err);
    st = erc == -2 ? NCS_EXIT_OUTPUT : erc >= 2 ? NCS_EXIT_NO_INPUT : NCS_EXIT_ERROR;
  }
  /* one screen: what ran and was injected, what the report and diagnose find, where the files
   * are, what to try next */
  FILE *out = stdout;
  char line[3 * PATH_MAX];
  snprintf(line, sizeof line, "nccl-sim, scenario %s: %s ranks in %s processes, %s operations per rank, on the "
           "CPU (%s)", d.scenario, d.ranks, d.procs, d.iters,
           sc ? "in model time: the host and GPU times are nccl-sim's, whatever the machine's load"
              : "simulated GPU times");
  ncs_wrap(out, "ran       ", "          ", line, width);
  snprintf(line, sizeof line, "%s%s%s%s", injected, *fault ? " (nccl-sim " : "", fault, *fault ? ")" : "");
  ncs_wrap(out, "injected  ", "          ", line, width);
  int rrc = ncs_report_brief(dir, NCS_JOB_LAST, html, replace, out, 3, width, sc ? sc->brief : 0);
  if (rrc == NCS_EXIT_OUTPUT && !st) st = rrc;
  verdict_line(out, dir, width);
  /* where the files are, the directory once in a shell variable D, ready to paste; then the
   * next commands, with ncclscope as this shell can run it */
  uint64_t bt = du(dir), bp = have_pf ? du(pf) : 0, bh = rrc == NCS_EXIT_OUTPUT ? 0 : du(html);
  char sz[32];
  fprintf(out, "files     D=%s\n", dir);
  ncs_fmt_size(sz, sizeof sz, bt);
  snprintf(line, sizeof line, "$D/  trace, %s (every event, one file per process)", sz);
  ncs_wrap(out, "          ", "            ", line, width);
  if (have_pf) {
    ncs_fmt_size(sz, sizeof sz, bp);
    snprintf(line, sizeof line, "$D.pftrace  timeline, %s: open it at https://ui.perfetto.dev", sz);
    ncs_wrap(out, "          ", "            ", line, width);
  }
  if (bh) {
    ncs_fmt_size(sz, sizeof sz, bh);
    snprintf(line, sizeof line, "$D.html  report with charts, %s: open it in a browser", sz);
    ncs_wrap(out, "          ", "            ", line, width);
  }
  ncs_fmt_size(sz, sizeof sz, bt + bp + bh + du(log));
  snprintf(line, sizeof line, "%s in all%s; remove with: rm -r $D $D.*", sz,
           d.out == def ? " (under $TMPDIR, else /tmp)" : "");
  ncs_wrap(out, "          ", "            ", line, width);
  char self[PATH_MAX];
  int on_path;
  self_cmd(self, sizeof self, &on_path);
  static const char *const next[][2] = {{"report $D", "the whole report (--wide, --json, --csv)"},
                                        {"diagnose $D", "hang and desync verdicts"},
                                        {"export -f sqlite $D", "the job as SQL tables"},
                                        {"dump --stats $D", "events and drops per process"}};
  /* what each does beside it, when every line has room for it; else the commands alone (they
   * must stay pasteable, one per line) */
  int described = 1;
  for (size_t k = 0; k < sizeof next / sizeof next[0]; k++)
    described &= !width || (int)(10 + strlen(self) + 20 + 2 + strlen(next[k][1])) <= width;
  for (size_t k = 0; k < sizeof next / sizeof next[0]; k++) {
    char c[PATH_MAX + 64];
    snprintf(c, sizeof c, "%s %s", self, next[k][0]);
    const char *lab = k ? "          " : "next      ";
    if (described)
      fprintf(out, "%s%-*s  %s\n", lab, (int)(strlen(self) + 20), c, next[k][1]);
    else
      fprintf(out, "%s%s\n", lab, c);
  }
  if (!on_path) {
    char bindir[PATH_MAX];
    if (ncs_exe_dir(bindir, sizeof bindir) == 0) {
      snprintf(line, sizeof line, "ncclscope is not on PATH: export PATH=\"%s:$PATH\"", bindir);
      ncs_wrap(out, "          ", "          ", line, width);
    }
  }
  return rc ? rc : st ? st : rrc == NCS_EXIT_DAMAGED ? rrc : 0;
}
