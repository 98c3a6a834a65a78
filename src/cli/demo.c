/* demo.c - `ncclscope demo`: record a simulated job with nccl-sim, summarise it, and write its
 * timeline (DIR.pftrace, for ui.perfetto.dev) beside the trace directory.
 *
 * nccl-sim drives the plugin through NCCL's real call patterns on the CPU, so the demo needs no
 * GPU and no NCCL. It runs through the same code as `record` and `export`.
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "export/export.h"
#include "model/model.h"

static const char demo_help[] =
    "usage: ncclscope demo [OPTIONS]\n"
    "\n"
    "Run nccl-sim (a simulated NCCL job on the CPU, no GPU needed) with the profiler plugin,\n"
    "write its trace, the timeline DIR.pftrace (for https://ui.perfetto.dev) and the report\n"
    "DIR.html beside the trace directory, and print one screen: what ran, the findings, where\n"
    "the files are (about 40 MB with the defaults) and the next commands.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR     trace directory (default $TMPDIR/ncclscope-demo-YYYYmmdd-HHMMSS,\n"
    "                       /tmp without TMPDIR)\n"
    "  -r, --ranks N        simulated ranks, 1 to 1024 (default 8)\n"
    "      --iters K        operations per rank (default 200)\n"
    "  -p, --procs P        processes the ranks run in (default: one per rank, like a real job)\n"
    "      --scenario NAME  nccl-sim scenario (default mixed)\n"
    "  -e, --events LIST    event types to record (default: all)\n"
    "      --force          replace an existing DIR.pftrace and DIR.html (refused otherwise)\n"
    "  -h, --help           this help\n"
    "\n"
    "environment: NCCLSCOPE_SIM overrides the nccl-sim path, NCCLSCOPE_PLUGIN the plugin's.\n";

typedef struct {
  const char *out, *ranks, *iters, *procs, *scenario, *events;
  int force;
} demo_opts_t;

static int parse(int argc, char **argv, demo_opts_t *d) {
  static const struct option opts[] = {
      {"output", required_argument, 0, 'o'}, {"ranks", required_argument, 0, 'r'},
      {"iters", required_argument, 0, 'i'},  {"scenario", required_argument, 0, 's'},
      {"events", required_argument, 0, 'e'}, {"procs", required_argument, 0, 'p'},
      {"force", no_argument, 0, 'F'},        {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int c;
  uint64_t v;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:r:p:e:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': d->out = optarg; break;
    case 's': d->scenario = optarg; break;
    case 'e': d->events = optarg; break;
    case 'F': d->force = 1; break;
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

int ncs_cmd_demo(int argc, char **argv) {
  demo_opts_t d = {.ranks = "8", .iters = "200", .scenario = "mixed", .events = "all"};
  int rc = parse(argc, argv, &d);
  if (rc) return rc < 0 ? NCS_EXIT_OK : rc;
  /* one process per rank (one trace file per rank), up to nccl-sim's 16 processes */
  if (!d.procs) d.procs = atoi(d.ranks) > 16 ? "16" : d.ranks;
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
  char *cmd[] = {sim,
                 "--plugin",
                 plugin,
                 "--scenario",
                 (char *)d.scenario,
                 "--ranks",
                 (char *)d.ranks,
                 "--iters",
                 (char *)d.iters,
                 "--procs",
                 (char *)d.procs,
                 "--couple", /* ranks wait for each other, as on GPUs: kernels overlap */
                 "on",
                 NULL};
  ncs_record_opts_t o = {.verb = "demo",
                         .out_dir = d.out,
                         .events = d.events,
                         .kernel_sample = "1", /* the demo shows every GPU time */
                         .plugin = plugin,
                         .cmd = cmd,
                         .quiet = 1,
                         .dir_used = dir,
                         .dir_used_len = sizeof dir};
  fprintf(stderr, "ncclscope demo: running nccl-sim (a simulated NCCL on the CPU, no GPU): "
                  "scenario %s, %s ranks in %s processes, %s operations per rank ...\n",
          d.scenario, d.ranks, d.procs, d.iters);
  fflush(NULL);
  /* nccl-sim's own counters go to a log beside the trace, not onto the screen */
  char log[PATH_MAX + 16];
  snprintf(log, sizeof log, "%s.nccl-sim.log", d.out);
  int saved = dup(STDOUT_FILENO), lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (saved >= 0 && lfd >= 0) dup2(lfd, STDOUT_FILENO);
  if (lfd >= 0) close(lfd);
  rc = ncs_record_run(&o);
  fflush(stdout);
  if (saved >= 0) dup2(saved, STDOUT_FILENO), close(saved);
  if (rc == NCS_EXIT_USAGE && !dir[0]) return rc;
  if (rc != 0) ncs_warn("nccl-sim exited with status %d (its output: %s)", rc, log);
  if (!dir[0]) return rc ? rc : NCS_EXIT_ERROR;
  /* the timeline, as `ncclscope export DIR` writes it */
  char pf[PATH_MAX + 16], html[PATH_MAX + 16];
  snprintf(pf, sizeof pf, "%s.pftrace", dir);
  snprintf(html, sizeof html, "%s.html", dir);
  char *in[] = {dir};
  /* the run just recorded: the directory may hold earlier ones (--force) */
  ncs_export_opts_t eo = {.format = NCS_EXPORT_PERFETTO, .out = pf, .force = d.force,
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
  /* one screen: what ran, what the report finds first, where the files are, what to try next */
  FILE *out = stdout;
  fprintf(out, "ran       nccl-sim, scenario %s: %s ranks in %s processes, %s operations per rank, "
               "on the CPU (simulated GPU times)\n",
          d.scenario, d.ranks, d.procs, d.iters);
  int rrc = ncs_report_brief(dir, NCS_JOB_LAST, html, d.force, out, 3);
  if (rrc == NCS_EXIT_OUTPUT && !st) st = rrc;
  uint64_t bt = du(dir), bp = have_pf ? du(pf) : 0, bh = rrc == NCS_EXIT_OUTPUT ? 0 : du(html);
  fprintf(out, "files     %s/  trace, %.1f MB (every event, one file per process)\n", dir,
          (double)bt / 1e6);
  if (have_pf)
    fprintf(out, "          %s  timeline, %.1f MB: open it at https://ui.perfetto.dev\n", pf,
            (double)bp / 1e6);
  if (bh) fprintf(out, "          %s  report with charts, %.1f MB: open it in a browser\n", html, (double)bh / 1e6);
  fprintf(out, "          %.1f MB in all%s; remove with: rm -r %s %s.*\n",
          (double)(bt + bp + bh + du(log)) / 1e6, d.out == def ? " (under $TMPDIR, else /tmp)" : "",
          dir, dir);
  /* the next commands, ready to paste: the directory once, in a shell variable */
  fprintf(out, "next      D=%s\n"
               "          ncclscope report $D             the whole report (--wide, --json)\n"
               "          ncclscope export -f sqlite $D   the job as SQL tables\n"
               "          ncclscope diagnose $D           hang and desync verdicts\n"
               "          ncclscope dump --stats $D       events and drops per process\n",
          dir);
  return rc ? rc : st ? st : rrc == NCS_EXIT_DAMAGED ? rrc : 0;
}
