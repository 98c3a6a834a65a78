/* main.c - the ncclscope command: dispatch to one verb per file (dump.c, record.c, demo.c, ...).
 *
 * Shape follows `perf`: `ncclscope VERB [OPTIONS] ARGS`. Every verb answers --help; unknown verbs
 * and options exit with status 2.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "trace/format.h"
#include "util/outfile.h"

#ifndef NCS_VERSION
#define NCS_VERSION "unknown"
#endif

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} verb_t;

/* Add new verbs here (and a file src/cli/<verb>.c). */
static const verb_t verbs[] = {
    {"record", ncs_cmd_record, "run a command with the profiler plugin and record a trace"},
    {"dump", ncs_cmd_dump, "print every event of a trace, or counts with --stats"},
    {"demo", ncs_cmd_demo, "a simulated job, a fault injected, what the tools say (no GPU)"},
    {"export", ncs_cmd_export, "write a trace as Perfetto, Chrome JSON, SQLite or OTF2"},
    {"report", ncs_cmd_report, "cross-rank analysis: stragglers, skew, busbw per size (--csv)"},
    {"diff", ncs_cmd_diff, "what changed between two runs: latency and busbw with intervals"},
    {"diagnose", ncs_cmd_diagnose, "hang and desync verdicts: who never entered, who is stuck"},
    {"trigger", ncs_cmd_trigger, "make every flight-mode process recording into DIR dump"},
};

static void usage(FILE *o) {
  fprintf(o,
          "usage: %s [--version] [--help] VERB [OPTIONS] [ARGS]\n"
          "\n"
          "ncclscope records what NCCL does (through NCCL's profiler plugin API) and\n"
          "analyses it.\n"
          "\n"
          "verbs:\n",
          ncs_prog);
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    fprintf(o, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
  fprintf(o,
          "\n"
          "examples:\n"
          "  %s demo --scenario straggler     see a finding, no GPU needed\n"
          "  %s record -o run1 -- torchrun --nproc-per-node 8 train.py\n"
          "  %s report run1\n"
          "\n"
          "Run '%s VERB --help' for a verb's options. Docs: docs/cli.md, the words:\n"
          "docs/glossary.md\n",
          ncs_prog, ncs_prog, ncs_prog, ncs_prog);
}

/* Every verb's standard output is checked at the end: a full disk or a closed descriptor is an
 * output failure (status 5), never a silent success. */
static int finish(int rc) {
  char err[256];
  if (ncs_out_close_stdout(err, sizeof err) == 0) return rc;
  ncs_error("%s", err);
  return rc == NCS_EXIT_USAGE || rc == NCS_EXIT_NO_INPUT || rc == NCS_EXIT_ERROR ? rc
                                                                              : NCS_EXIT_OUTPUT;
}

static int run(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return NCS_EXIT_USAGE;
  }
  const char *v = argv[1];
  if (!strcmp(v, "--help") || !strcmp(v, "-h") || !strcmp(v, "help")) {
    usage(stdout);
    return NCS_EXIT_OK;
  }
  if (!strcmp(v, "--version") || !strcmp(v, "-V") || !strcmp(v, "version")) {
    printf("ncclscope %s (trace format %d)\n", NCS_VERSION, NCS_FORMAT_VERSION);
    return NCS_EXIT_OK;
  }
  if (v[0] == '-') return ncs_usage_error(NULL, "unknown option '%s'", v);
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (!strcmp(v, verbs[i].name)) {
      ncs_verb = verbs[i].name;
      return verbs[i].run(argc - 1, argv + 1);
    }
  char names[256] = "";
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
             verbs[i].name);
  return ncs_usage_error(NULL, "unknown verb '%s' (verbs: %s)", v, names);
}

int main(int argc, char **argv) {
  ncs_out_init_signals(); /* a file size limit is a write error (status 5), not SIGXFSZ */
  return finish(run(argc, argv));
}
