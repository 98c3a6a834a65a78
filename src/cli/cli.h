/* cli.h - shared pieces of the ncclscope command-line tool: one file per verb, helpers in util.c.
 *
 * A verb is a function `int verb(int argc, char **argv)` with argv[0] the verb's name; it returns
 * the process exit status. To add one, write src/cli/<verb>.c and add a line to the table in
 * main.c.
 */
#ifndef NCS_CLI_H
#define NCS_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"

/* Exit statuses: one table for every verb (docs/cli.md, "Exit status"). The same condition
 * gives the same status in every verb. When a verb stops early, the condition that stopped it
 * decides (USAGE, NO_INPUT, OUTPUT, ERROR); otherwise OUTPUT (standard output failed at the end)
 * wins over FOUND, FOUND over DAMAGED. record and demo return the command's own status. */
enum {
  NCS_EXIT_OK = 0,
  NCS_EXIT_FOUND = 1,    /* diagnose found a problem (a hang, a desync, a dead process) */
  NCS_EXIT_USAGE = 2,    /* bad command line */
  NCS_EXIT_NO_INPUT = 3, /* no trace files, or nothing in them could be read */
  NCS_EXIT_DAMAGED = 4,  /* an input is damaged: the result covers what could be read */
  NCS_EXIT_OUTPUT = 5,   /* an output could not be written, or was refused */
  NCS_EXIT_ERROR = 6,    /* ncclscope failed: out of memory, plugin not found, no directory */
};

/* verbs */
int ncs_cmd_dump(int argc, char **argv);
int ncs_cmd_record(int argc, char **argv);
int ncs_cmd_demo(int argc, char **argv);
int ncs_cmd_export(int argc, char **argv);
int ncs_cmd_report(int argc, char **argv);
int ncs_cmd_diagnose(int argc, char **argv);
int ncs_cmd_diff(int argc, char **argv);
int ncs_cmd_trigger(int argc, char **argv);

/* demo: the report's head on a few lines (what was recorded, coverage, warnings, up to
 * max_findings findings) to o, and the --html page to html (NULL: none); an exit status */
#define NCS_BRIEF_WORST 1 /* the instance with the largest arrival skew: who the others waited for */
#define NCS_BRIEF_LINKS 2 /* the slowest network link against the median one */
int ncs_report_brief(const char *dir, uint32_t job, const char *html, int force, FILE *o,
                     uint32_t max_findings, int width, int flags);
/* diagnose: a verdict's word as the text prints it ("HANG", "DESYNC", "DEAD", "CANNOT TELL", "OK") */
const char *ncs_dg_label(int kind);
/* dump --stats over the traces of `path` (a directory or one file); used by dump and demo */
int ncs_stats_path(const char *path, FILE *out);
int ncs_stats_paths(char *const *paths, int npaths, FILE *out); /* one job over several paths */

/* record: run a command with the plugin loaded and the NCCLSCOPE_* variables set */
typedef struct {
  const char *verb;        /* for messages: "record", "demo" */
  const char *out_dir;     /* NULL: ncclscope-<YYYYmmdd-HHMMSS> */
  const char *dir_prefix;  /* default directory name before the timestamp */
  const char *events;      /* NULL: keep NCCLSCOPE_EVENTS, else the default */
  const char *mode;        /* NULL: trace */
  const char *buffer_size; /* NULL: the plugin's default */
  const char *kernel_sample; /* --sample: NULL keeps NCCLSCOPE_SAMPLE (else the plugin's default) */
  const char *range_metrics; /* --range-metrics: NULL keeps NCCLSCOPE_RANGE_METRICS */
  const char *plugin;      /* NULL: found by ncs_find_plugin */
  char *const *cmd;        /* NULL-terminated */
  unsigned grace_s;        /* after a termination signal, seconds until the job is killed
                              (0: 10) */
  char *dir_used;          /* out: the absolute trace directory ("" if removed again) */
  size_t dir_used_len;
  int dir_created;         /* out: record created the directory */
  int quiet;               /* no "trace written" line (demo says where its files are) */
  int not_run;             /* out: the command could not be started (status 126/127) */
  int incomplete;          /* out: processes of the job had to be killed */
} ncs_record_opts_t;
int ncs_record_run(ncs_record_opts_t *o);

/* The shared filters (docs/cli.md, "Filters"): --comm ID, --rank LIST, --from T, --to T,
 * --range NAME[:N[-M]], --tag LIST. A verb lists NCS_FILTER_OPTIONS in its getopt_long table and
 * hands each of their codes to ncs_parse_filter; the model applies the result (ncs_job_filter_t),
 * and ncs_job_open refuses (NCS_JOB_ERR_FILTER: ncs_job_exit gives 2) a --range or --tag the job
 * cannot answer. */
#define NCS_OPT_COMM 0x1001
#define NCS_OPT_RANK 0x1002
#define NCS_OPT_FROM 0x1003
#define NCS_OPT_TO 0x1004
#define NCS_OPT_RANGE 0x1005
#define NCS_OPT_TAG 0x1006
#define NCS_FILTER_OPTIONS                                                                    \
  {"comm", required_argument, 0, NCS_OPT_COMM}, {"rank", required_argument, 0, NCS_OPT_RANK},   \
      {"from", required_argument, 0, NCS_OPT_FROM}, {"to", required_argument, 0, NCS_OPT_TO},   \
      {"range", required_argument, 0, NCS_OPT_RANGE}, {"tag", required_argument, 0, NCS_OPT_TAG}
/* the filters in a verb's --help (report, export): one text, one column layout */
#define NCS_FILTER_HELP                                                                            \
  "filters (docs/cli.md, \"Filters\"; the output says what they left out):\n"                     \
  "      --comm C          only communicator C: its label (c0), index (0) or commId\n"               \
  "                        (0x and 16 hex digits), as the report lists them\n"                      \
  "      --rank LIST       only collective instances with one of these ranks\n"                     \
  "                        (0,2,4-7), kept whole, and sends/receives from or to\n"                  \
  "                        them\n"                                                                  \
  "      --from T, --to T  only those whose first arrival is T after the job's\n"                   \
  "                        first event (1.5, 1.5s, 250ms, 30us)\n"                                  \
  "      --range NAME      only those with an operation called inside a user range\n"              \
  "                        of this name (docs/ranges.md); NAME:N, NAME:N-M only its\n"              \
  "                        N-th (to M-th) range on each thread; several: any\n"                     \
  "      --tag LIST        only those with an operation whose NCCL user tag (ABI\n"                 \
  "                        v7) is in LIST (7, 3,5-9; 0 untagged). One operation\n"                  \
  "                        must meet --rank, --range and --tag together\n"
#define NCS_CLI_MAX_RANGES 16 /* --range flags */
#define NCS_CLI_MAX_TAGS 64   /* numbers and intervals of --tag lists, together */
typedef struct {
  ncs_job_filter_t f;
  int32_t ranks[1024];
  ncs_job_rsel_t rsel[NCS_CLI_MAX_RANGES];
  char rname[NCS_CLI_MAX_RANGES][NCS_RANGE_NAME_MAX + 1];
  ncs_job_tsel_t tsel[NCS_CLI_MAX_TAGS];
} ncs_cli_filter_t;
/* 1 when c is a filter option (then *rc is 0, or the usage error's exit status) */
int ncs_parse_filter(const char *verb, int c, const char *arg, ncs_cli_filter_t *cf, int *rc);
/* after the job is open: a --comm that names no communicator of the job is a usage error */
int ncs_check_filter_comm(const char *verb, const ncs_job_filter_t *f, const ncs_job_t *j);

/* helpers (util.c) */
extern const char *ncs_prog; /* "ncclscope" */
extern const char *ncs_verb; /* the verb running ("report"), set by main; NULL before */
/* Messages on stderr, one format for every verb (docs/cli.md, "Messages"):
 *   ncclscope VERB: error: WHAT          (then the exit status says which kind)
 *   ncclscope VERB: warning: WHAT
 *   ncclscope VERB: WHAT                 (what was written, progress)
 * A usage error adds "Try 'ncclscope VERB --help'." and returns 2. verb NULL: ncs_verb. */
int ncs_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ncs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ncs_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ncs_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* report a getopt_long failure ('?' or ':') for the option at argv[optind - 1]; returns 2 */
int ncs_bad_option(const char *verb, int c, char **argv);
/* directory of the running executable (from /proc/self/exe); 0 or -1 */
int ncs_exe_dir(char *out, size_t len);
/* find a file next to the executable or in one of `rel` dirs relative to it; env overrides */
int ncs_find_tool(const char *env, const char *name, const char *const *rel, char *out, size_t len);
int ncs_find_plugin(char *out, size_t len);
/* "123", "64K", "16M", "1G" (powers of 1024) -> bytes; 0 or -1 */
int ncs_parse_size(const char *s, uint64_t *v);
/* a decimal count in [lo, hi]; 0 or -1 */
int ncs_parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *v);
/* --run N|last (the traces of several runs, or jobs, in one directory: docs/model.md): 0, or
 * an exit status after saying why */
int ncs_parse_run(const char *verb, const char *s, uint32_t *job);
/* the exit status of a job model that could not be opened (NCS_JOB_ERR_* in why): several jobs
 * and none chosen, no such job, or a filter the job cannot answer is a usage error; anything else
 * is no input */
int ncs_job_exit(int why);
/* 1 (after saying why) when no file of the job could be read at all: exit status 3, the verb
 * stops (ncs_job_input) */
int ncs_no_input(const char *verb, const ncs_job_t *j);
/* "unknown event type 'x' in 'coll,x'" style message for ncs_parse_event_list; -1 or 0. A list
 * that selects no event type ("-1", "none") is an error too. */
int ncs_check_events(const char *verb, const char *opt, const char *list, uint32_t *mask);
/* write a string so that one line stays one line: bare when safe, else quoted with escapes */
/* The trace files (*.nstrace, *.nsflight) of all paths, in order, warning about a path without
 * any. 0, or an exit status after printing why (a path that cannot be read, or no trace file
 * at all: NCS_EXIT_NO_INPUT). Free the list with ncs_free_paths. */
int ncs_gather_traces(char *const *paths, int npaths, char ***out, size_t *nout);
/* the same without any message (0, or -1) */
int ncs_gather_traces_quiet(char *const *paths, int npaths, char ***out, size_t *nout);
void ncs_put_str(FILE *o, const char *s);
/* s as a JSON string, quotes included (NULL as ""); control characters escaped */
void ncs_json_str(FILE *o, const char *s);
/* "api,coll" style names of a mask */
void ncs_put_mask(FILE *o, uint32_t mask);
/* "starts.Coll", "bad_handles", ... for a counter key; "0x123" for keys this tool does not know */
void ncs_counter_name(uint32_t key, char *out, size_t len);
/* the basename of a trace path without the .nstrace suffix */
void ncs_short_name(const char *path, char *out, size_t len);

#endif
