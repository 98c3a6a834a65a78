/* demo.c - `ncclscope demo`: record a simulated job with nccl-sim, summarise it, and write its
 * timeline (DIR.pftrace, for ui.perfetto.dev) beside the trace directory.
 *
 * nccl-sim drives the plugin through NCCL's real call patterns on the CPU, so the demo needs no
 * GPU and no NCCL. It runs through the same code as `record` and `export`.
 */
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "export/export.h"
#include "model/model.h"

static const char demo_help[] =
    "usage: ncclscope demo [OPTIONS]\n"
    "\n"
    "Run nccl-sim (a simulated NCCL job on the CPU, no GPU needed) with the profiler plugin,\n"
    "write its trace, print the 'dump --stats' summary and write the timeline DIR.pftrace beside\n"
    "the trace directory (open it at https://ui.perfetto.dev: Open trace file).\n"
    "\n"
    "options:\n"
    "  -o, --output DIR     trace directory (default ncclscope-demo-YYYYmmdd-HHMMSS)\n"
    "  -r, --ranks N        simulated ranks, 1 to 1024 (default 8)\n"
    "      --iters K        operations per rank (default 200)\n"
    "  -p, --procs P        processes the ranks run in (default: one per rank, like a real job)\n"
    "      --scenario NAME  nccl-sim scenario (default mixed)\n"
    "  -e, --events LIST    event types to record (default: all)\n"
    "      --force          replace an existing timeline DIR.pftrace (refused otherwise)\n"
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

int ncs_cmd_demo(int argc, char **argv) {
  demo_opts_t d = {.ranks = "8", .iters = "200", .scenario = "mixed", .events = "all"};
  int rc = parse(argc, argv, &d);
  if (rc) return rc < 0 ? NCS_EXIT_OK : rc;
  /* one process per rank (one trace file per rank), up to nccl-sim's 16 processes */
  if (!d.procs) d.procs = atoi(d.ranks) > 16 ? "16" : d.ranks;
  static const char *const sim_rel[] = {"", "sim", "../bin", NULL};
  char sim[PATH_MAX], plugin[PATH_MAX], dir[PATH_MAX] = "";
  if (ncs_find_tool("NCCLSCOPE_SIM", "nccl-sim", sim_rel, sim, sizeof sim) != 0 ||
      ncs_find_plugin(plugin, sizeof plugin) != 0)
    return NCS_EXIT_ERROR;
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
                         .dir_prefix = "ncclscope-demo",
                         .events = d.events,
                         .kernel_sample = "1", /* the demo shows every GPU time */
                         .plugin = plugin,
                         .cmd = cmd,
                         .dir_used = dir,
                         .dir_used_len = sizeof dir};
  fprintf(stderr,
          "ncclscope demo: running nccl-sim: scenario %s, %s ranks in %s processes, %s "
          "operations per rank (%s)\n",
          d.scenario, d.ranks, d.procs, d.iters, sim);
  rc = ncs_record_run(&o);
  if (rc == NCS_EXIT_USAGE && !dir[0]) return rc;
  if (rc != 0) ncs_warn("nccl-sim exited with status %d", rc);
  if (!dir[0]) return rc ? rc : NCS_EXIT_ERROR;
  fprintf(stderr, "ncclscope demo: summary ('ncclscope dump --stats %s'):\n", dir);
  fflush(stderr);
  int st = ncs_stats_path(dir, stdout);
  fflush(stdout);
  fprintf(stderr, "ncclscope demo: every event: ncclscope dump %s | less\n", dir);
  /* the timeline, as `ncclscope export DIR` writes it */
  char pf[PATH_MAX + 16];
  snprintf(pf, sizeof pf, "%s.pftrace", dir);
  char *in[] = {dir};
  /* the run just recorded: the directory may hold earlier ones (--force) */
  ncs_export_opts_t eo = {.format = NCS_EXPORT_PERFETTO, .out = pf, .force = d.force,
                          .job = NCS_JOB_LAST, .progress = 1, .prog = "ncclscope demo"};
  ncs_export_stats_t es;
  char err[2 * PATH_MAX] = "";
  int erc = ncs_export(in, 1, &eo, &es, err, sizeof err);
  if (erc < 0 || erc == 2 || erc == 3) {
    ncs_error("no timeline written: %s", err);
    if (!st) st = erc == -2 ? NCS_EXIT_OUTPUT : erc >= 2 ? NCS_EXIT_NO_INPUT : NCS_EXIT_ERROR;
  } else
    fprintf(stderr,
            "ncclscope demo: timeline written to %s (%.1f MB: %llu slices, %llu flows)\n"
            "ncclscope demo: open it at https://ui.perfetto.dev (Open trace file, then pick %s)\n",
            pf, (double)es.bytes_out / 1e6, (unsigned long long)es.slices,
            (unsigned long long)(es.coll_flows + es.p2p_flows), pf);
  /* and the answer: the cross-rank report, as `ncclscope report DIR` prints it */
  fprintf(stderr, "ncclscope demo: report ('ncclscope report --run last %s'):\n", dir);
  fflush(stderr);
  char *rargv[] = {"report", "--run", "last", dir, NULL};
  int rrc = ncs_cmd_report(4, rargv);
  if (rrc != 0) ncs_warn("the report failed with status %d", rrc);
  return rc ? rc : st;
}
