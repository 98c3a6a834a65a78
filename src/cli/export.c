/* export.c - `ncclscope export`: write a recording as one timeline file for Perfetto (native
 * protobuf) or for Chrome-JSON viewers, as an SQLite database or as an OTF2 archive, all of it or
 * what the shared filters select. The work is in src/export (docs/timeline.md, docs/sqlite.md,
 * docs/otf2.md; the filters: docs/cli.md "Filters"). */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "export/export.h"
#include "export/otf2.h"
#include "export/sqlite.h"
#include "trace/reader.h"

static const char export_help[] =
    "usage: ncclscope export [OPTIONS] DIR|FILE...\n"
    "\n"
    "Write a recorded job as one file: a timeline (Perfetto or Chrome JSON: one\n"
    "process per rank with its API calls, collectives, GPU work per channel, proxy\n"
    "operations, steps and network events, a job track per communicator, flows\n"
    "across ranks), an SQLite database or an OTF2 archive. Open a .pftrace at\n"
    "https://ui.perfetto.dev (docs/timeline.md: beside a PyTorch profiler or nsys\n"
    "trace of the same job).\n"
    "\n"
    "options:\n"
    "  -f, --format FMT      perfetto (the default), chrome (trace-event JSON),\n"
    "                        sqlite (docs/sqlite.md; one DIR) or otf2 (a directory\n"
    "                        for Vampir; docs/otf2.md; one DIR)\n"
    "  -o, --output FILE     output file, '-' for stdout (default: DIR.pftrace,\n"
    "                        DIR.json, DIR.sqlite or the directory DIR-otf2); written\n"
    "                        under its name only once complete\n"
    "  -e, --events LIST     only these event types (names as for record --events;\n"
    "                        default all; not with otf2)\n"
    "      --jobs N          threads (default: one per core; the output does not\n"
    "                        depend on it)\n"
    "  -q, --quiet           no progress and no summary on stderr (warnings stay)\n"
    "      --force           replace an existing output (refused otherwise)\n"
    "      --run N|last      the N-th run (by start time) when the traces hold\n"
    "                        several; without it such traces are refused\n"
    "  -h, --help            this help\n"
    "\n" NCS_FILTER_HELP
    "An operation left out leaves nothing (API call, kernels, proxy and network\n"
    "events, rows); other events stay for those ranks over that window.\n"
    "\n"
    "examples:\n"
    "  ncclscope export run1                          # run1.pftrace\n"
    "  ncclscope export -f sqlite run1                # run1.sqlite (docs/sqlite.md)\n"
    "  ncclscope export --comm c0 --from 10s --to 12s -o window.pftrace run1\n"
    "\n"
    "environment: NCCLSCOPE_EXPORT_WARN_SIZE (default 100M): warn when the output's\n"
    "estimate, or a Chrome JSON written, reaches it; NCCLSCOPE_CHROME_HOLD (default\n"
    "64K): the JSON an unfinished slice holds back before it takes its thread row\n"
    "(docs/timeline.md)\n"
    "\n"
    "exit status: 0 ok (a truncated last chunk and a filter that leaves nothing only\n"
    "warn), 2 usage error (a filter the job cannot answer too), 3 no traces found,\n"
    "4 an input file is damaged in the middle (what could be read is exported),\n"
    "5 the output was refused or cannot be written, 6 out of memory (docs/cli.md)\n";

/* ncs_export's, ncs_export_sqlite's and ncs_export_otf2's results as exit statuses */
static int export_status(int rc) {
  switch (rc) {
  case 0: return NCS_EXIT_OK;
  case 1: return NCS_EXIT_DAMAGED;
  case 2: return NCS_EXIT_NO_INPUT;
  case 3: return NCS_EXIT_USAGE; /* several jobs, none chosen (or no such one) */
  case -2: return NCS_EXIT_OUTPUT;
  case -3: return NCS_EXIT_USAGE; /* a format this build does not have */
  default: return NCS_EXIT_ERROR;
  }
}

/* Output size per byte of trace, measured on nccl-sim jobs (scenarios mixed and allreduce, 20 KB
 * to 23 MB of traces): Chrome JSON 6.4 to 7.5 (5.9 for a recording made under ThreadSanitizer),
 * Perfetto protobuf 3.0 to 3.3 (docs/timeline.md, "Size"). An estimate says "about" and the
 * range; it is printed before a long export starts. */
#define NCS_CHROME_PER_BYTE_LO 5.5
#define NCS_CHROME_PER_BYTE_HI 8.0
#define NCS_PFTRACE_PER_BYTE_LO 3.0
#define NCS_PFTRACE_PER_BYTE_HI 3.5
/* From this size on, export warns (the estimate before, the Chrome JSON's real size after):
 * chrome://tracing and the Perfetto UI parse a JSON trace whole in memory and struggle with
 * larger ones. NCCLSCOPE_EXPORT_WARN_SIZE overrides it (docs/timeline.md, "Size"). */
#define NCS_SIZE_WARN_BYTES (100ull << 20)
#define NCS_SIZE_WARN_ENV "NCCLSCOPE_EXPORT_WARN_SIZE"

/* a size from the environment (as for record -b: 64M, 1G, bytes), else dflt; a value that is not
 * a size is said and ignored */
static uint64_t env_size(const char *name, uint64_t dflt, const char *what) {
  const char *e = getenv(name);
  uint64_t v;
  if (!e || !*e) return dflt;
  if (ncs_parse_size(e, &v) == 0) return v;
  ncs_warn("ignoring %s='%s': not a size (such as 100M, 1G or a number "
          "of bytes); %s",
          name, e, what);
  return dflt;
}

/* the size from which export warns: NCCLSCOPE_EXPORT_WARN_SIZE, else NCS_SIZE_WARN_BYTES */
static uint64_t warn_size(void) {
  char what[64];
  snprintf(what, sizeof what, "warning from %llu MiB on", NCS_SIZE_WARN_BYTES >> 20);
  return env_size(NCS_SIZE_WARN_ENV, NCS_SIZE_WARN_BYTES, what);
}

/* "100 MiB", "64 KiB", "1000 bytes": the warning size as it was given */
static void fmt_size(char *out, size_t len, uint64_t v) {
  if (v >= (1ull << 30) && !(v & ((1ull << 30) - 1)))
    snprintf(out, len, "%" PRIu64 " GiB", v >> 30);
  else if (v >= (1ull << 20) && !(v & ((1ull << 20) - 1)))
    snprintf(out, len, "%" PRIu64 " MiB", v >> 20);
  else if (v >= (1ull << 10) && !(v & ((1ull << 10) - 1)))
    snprintf(out, len, "%" PRIu64 " KiB", v >> 10);
  else
    snprintf(out, len, "%" PRIu64 " bytes", v);
}

/* the bytes of the trace files of the inputs (0 when they cannot be listed: the export says
 * why) */
static uint64_t input_bytes(char *const *paths, int n) {
  char **list;
  size_t nl;
  if (ncs_gather_traces_quiet(paths, n, &list, &nl) != 0) return 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < nl; i++) {
    struct stat st;
    if (stat(list[i], &st) == 0) sum += (uint64_t)st.st_size;
  }
  ncs_free_paths(list, nl);
  return sum;
}

/* Before a Chrome JSON or Perfetto export that will be large: its size, estimated */
static void size_warning(char *const *paths, int n, int chrome, uint64_t limit) {
  uint64_t in = input_bytes(paths, n);
  double lo = (double)in * (chrome ? NCS_CHROME_PER_BYTE_LO : NCS_PFTRACE_PER_BYTE_LO);
  double hi = (double)in * (chrome ? NCS_CHROME_PER_BYTE_HI : NCS_PFTRACE_PER_BYTE_HI);
  if (hi < (double)limit) return;
  ncs_warn("the %s file will be about %.0f to %.0f MB (estimated from "
          "%.1f MB of traces)%s; '--events all,-proxystep,-proxyctrl,-net' leaves out the proxy "
          "steps and network events that make most of it",
          chrome ? "Chrome JSON" : "Perfetto", lo / 1e6, hi / 1e6, (double)in / 1e6,
          chrome ? ": chrome://tracing and the Perfetto UI struggle with JSON that large; Perfetto "
                   "protobuf (--format perfetto) is about half as large and loads faster"
                 : "");
}

/* once the job is read: no file that could be read at all is no input (status 3), a --comm that
 * names no communicator of it is a usage error (status 2); nothing is written */
/* What each file lost or lacks, once for every format, -q or not (docs/cli.md, "Exit status": a
 * file cut short, an empty one or a segment without footer only warns; damage is status 4) */
static void file_warnings(const ncs_job_t *j) {
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_proc_t *p = &j->procs[i];
    const ncs_job_cov_t *c = &p->cov;
    if (p->excluded == NCS_JX_DUPLICATE)
      ncs_warn("%s is the same recording as %s: read once", p->path, j->procs[p->same_as].path);
    if (p->excluded) continue;
    if (p->empty)
      ncs_warn("%s: empty: only the file header (a process that died before its first chunk)", p->path);
    else if (!p->readable || p->damage)
      ncs_warn("%s: %s", p->path, p->damage_msg[0] ? p->damage_msg : "no segment could be read");
    else if (!p->nsegs)
      ncs_warn("%s: no segment could be read", p->path);
    if (p->nsegs && !p->segs[p->nsegs - 1].clean && p->segs[p->nsegs - 1].mode != NCS_MODE_FLIGHT)
      ncs_warn("%s: the last segment has no footer: the process was killed or is still running, and what it "
               "did after its last chunk is not in the output", p->path);
    if (c->comms_untracked || c->no_comm_ops)
      ncs_warn("%s: %" PRIu64 " communicators not tracked (NCCLSCOPE_MAX_COMMS=%u): %" PRIu64
               " operations recorded without a communicator are left out", p->path, c->comms_untracked,
               c->max_comms, c->no_comm_ops);
    if (c->evicted)
      ncs_warn("%s: the plugin's table of open events was full (NCCLSCOPE_TRACK_MAX=%u): %" PRIu64
               " events got no completion, %" PRIu64 " of them operations", p->path, c->track_max, c->evicted,
               c->evicted_ops);
    if (c->damaged_ops)
      ncs_warn("%s: %" PRIu64 " records of operation calls name strings or communicators lost with damage: "
               "left out", p->path, c->damaged_ops);
  }
}

static int g_no_input; /* check_comm refused a job none of whose files could be read */
static int check_comm(const ncs_job_t *j, void *arg) {
  if (ncs_no_input("export", j)) return g_no_input = 1;
  file_warnings(j);
  return ncs_check_filter_comm("export", (const ncs_job_filter_t *)arg, j);
}

/* what the filter left out, on stderr (the outputs say it too); with -q only the warning that
 * nothing passed */
static void filter_summary(const ncs_xf_stats_t *f, const char *events, int quiet) {
  if (!f->active) return;
  char more[200] = "";
  if (f->cannot_tell)
    snprintf(more, sizeof more, ", among them %" PRIu64 " operations the job model could not place (no "
             "communicator recorded: cannot tell whether they pass)", f->cannot_tell);
  if (!quiet)
    ncs_note("filter: %s: kept %" PRIu64 " collective instances and %" PRIu64 " rank operations; left out %" PRIu64
             " collective instances, %" PRIu64 " sends/receives and %" PRIu64 " %s%s",
             f->text, f->inst_kept, f->ops_kept, f->inst_left, f->p2p_left, f->events_left, events, more);
  if (!f->ops_kept)
    ncs_warn("no collective or send/receive passed the filter (%s): the output holds only what else it "
             "selects, and says so", f->text);
}

/* a result of ncs_export, ncs_export_sqlite or ncs_export_otf2 that ends the verb: 4, check_comm's
 * refusal (it said why: a usage error), or a failure (err says why); 1 with *status set, else 0 */
static int export_ended(int rc, const char *err, int *status) {
  if (rc == 4) return *status = g_no_input ? NCS_EXIT_NO_INPUT : NCS_EXIT_USAGE, 1;
  if (rc == 2 || rc == 3 || rc < 0) {
    ncs_error("%s", err);
    return *status = export_status(rc), 1;
  }
  return 0;
}

/* DIR -> DIR.pftrace, FILE.nstrace -> FILE.pftrace */
static int default_output(const char *in, const char *ext, char *out, size_t len) {
  size_t n = strlen(in);
  while (n > 1 && in[n - 1] == '/') n--;
  static const char sfx[] = ".nstrace";
  if (n > sizeof sfx - 1 && !strncmp(in + n - (sizeof sfx - 1), sfx, sizeof sfx - 1))
    n -= sizeof sfx - 1;
  if (n == 1 && in[0] == '.') return snprintf(out, len, "ncclscope%s", ext) < (int)len ? 0 : -1;
  return snprintf(out, len, "%.*s%s", (int)n, in, ext) < (int)len ? 0 : -1;
}

/* --format sqlite: one trace directory (or file), one database (docs/sqlite.md) */
static int export_sqlite(const char *in, const char *out_opt, int force, uint32_t types,
                         uint32_t job, int quiet, ncs_cli_filter_t *cf) {
  char out[PATH_MAX];
  if (!out_opt) {
    if (default_output(in, ".sqlite", out, sizeof out) != 0)
      return ncs_usage_error("export", "path too long: %s", in);
    out_opt = out;
  }
  ncs_sqlite_opts_t so = {.out = out_opt, .force = force, .types = types, .job = job,
                          .progress = !quiet, .prog = "ncclscope export",
                          .filter = ncs_job_filter_active(&cf->f) ? &cf->f : NULL,
                          .job_check = check_comm, .check_arg = &cf->f};
  ncs_sqlite_stats_t st;
  char err[2 * PATH_MAX] = "";
  int rc = ncs_export_sqlite(in, &so, &st, err, sizeof err);
  int status;
  if (export_ended(rc, err, &status)) return status;
  if (!quiet) {
    ncs_note("wrote %s (%.1f MB, SQLite): %" PRIu64 " processes, %" PRIu64
            " communicators, %" PRIu64 " collective instances, %" PRIu64 " rank operations, %" PRIu64
            " kernel channels, %" PRIu64 " kernel phases, %" PRIu64 " proxy ops, %" PRIu64
            " proxy steps, %" PRIu64 " proxy states, %" PRIu64 " send/recv pairs",
            so.out, (double)st.bytes_out / 1e6, st.rows[NCS_SQ_PROCESSES], st.rows[NCS_SQ_COMMS],
            st.rows[NCS_SQ_COLLECTIVES], st.rows[NCS_SQ_OPERATIONS],
            st.rows[NCS_SQ_KERNEL_CHANNELS], st.rows[NCS_SQ_KERNEL_PHASES], st.rows[NCS_SQ_PROXY_OPS],
            st.rows[NCS_SQ_PROXY_STEPS], st.rows[NCS_SQ_PROXY_STATES], st.rows[NCS_SQ_P2P]);
    ncs_note("%" PRIu64 " records from %" PRIu64 " files (%.1f MB) in %.2f s "
            "(analysis %.2f s): %.2f M records/s",
            st.records, st.files, (double)st.bytes_in / 1e6, st.seconds, st.analysis_seconds,
            st.seconds > 0 ? (double)st.records / st.seconds / 1e6 : 0.0);
    if (st.unmatched || st.unfinished)
      ncs_note("%" PRIu64 " stop/state/completion records without their start "
              "(dropped records), %" PRIu64 " events never stopped (their stop is NULL)",
              st.unmatched, st.unfinished);
  }
  filter_summary(&st.filter, "rows of events (meta: filter_*)", quiet);
  if (!quiet)
    ncs_note("query it with: sqlite3 %s (schema: docs/sqlite.md)",
            so.out);
  return export_status(rc);
}

/* --format otf2: one trace directory (or file), one archive directory (docs/otf2.md) */
static int export_otf2(const char *in, const char *out_opt, int force, uint32_t job, int quiet,
                       ncs_cli_filter_t *cf) {
  char out[PATH_MAX];
  if (!out_opt) {
    if (default_output(in, "-otf2", out, sizeof out) != 0)
      return ncs_usage_error("export", "path too long: %s", in);
    out_opt = out;
  }
  if (!strcmp(out_opt, "-"))
    return ncs_usage_error("export", "an OTF2 archive is a directory: name it with -o DIR");
  ncs_otf2_opts_t oo = {.out = out_opt, .force = force, .job = job, .prog = "ncclscope export",
                        .filter = ncs_job_filter_active(&cf->f) ? &cf->f : NULL,
                        .job_check = check_comm, .check_arg = &cf->f};
  ncs_otf2_stats_t st;
  char err[2 * PATH_MAX] = "";
  int rc = ncs_export_otf2(in, &oo, &st, err, sizeof err);
  int status;
  if (export_ended(rc, err, &status)) return status;
  if (!quiet) {
    ncs_note("wrote %s/%s (OTF2): %" PRIu64 " locations (%" PRIu64
            " host threads, %" PRIu64 " GPU streams, %" PRIu64 " of them extra lanes, %" PRIu64
            " ranks not recorded), %" PRIu64 " regions, %" PRIu64 " events: %" PRIu64
            " collectives, %" PRIu64 " send/recv messages, %" PRIu64 " bus bandwidth samples",
            oo.out, NCS_OTF2_ANCHOR, st.locations, st.host_locations, st.stream_locations,
            st.extra_lanes, st.unrecorded_ranks, st.regions, st.events, st.collectives,
            st.messages, st.metrics);
    ncs_note("%" PRIu64 " operations: %" PRIu64 " with GPU kernel times, %" PRIu64
            " with host times only, %" PRIu64 " without a usable time (left out); %" PRIu64
            " records from %" PRIu64 " files (%.1f MB) in %.2f s",
            st.ops + st.ops_skipped, st.ops_gpu, st.ops_host, st.ops_skipped, st.records,
            st.files, (double)st.bytes_in / 1e6, st.seconds);
    if (st.coll_unknown || st.p2p_unpaired || st.unfinished)
      ncs_note("%" PRIu64 " collectives without an OTF2 collective record, %" PRIu64
              " sends/receives without a partner, %" PRIu64
              " calls that never stopped (closed at their segment's end)",
              st.coll_unknown, st.p2p_unpaired, st.unfinished);
    if (st.filtered_ranks)
      ncs_note("%" PRIu64 " ranks of the communicators written have no "
                      "operation that passed the filter (locations without events)",
              st.filtered_ranks);
  }
  filter_summary(&st.filter, "API calls and groups", quiet);
  if (!quiet)
    ncs_note("what the trace covers and lost: the archive's NCCLSCOPE::* "
                    "properties (otf2-print -I %s/%s)", oo.out, NCS_OTF2_ANCHOR);
  return export_status(rc);
}

int ncs_cmd_export(int argc, char **argv) {
  static const struct option opts[] = {
      {"format", required_argument, 0, 'f'}, {"output", required_argument, 0, 'o'},
      {"events", required_argument, 0, 'e'}, {"quiet", no_argument, 0, 'q'},
      {"jobs", required_argument, 0, 'N'},   {"help", no_argument, 0, 'h'},
      {"force", no_argument, 0, 'F'},        {"run", required_argument, 0, 'R'},
      NCS_FILTER_OPTIONS,                    {0, 0, 0, 0}};
  ncs_export_opts_t o = {.format = NCS_EXPORT_PERFETTO, .progress = 1, .prog = "ncclscope export"};
  int c, quiet = 0, sqlite = 0, otf2 = 0, force = 0;
  static ncs_cli_filter_t cf;
  memset(&cf, 0, sizeof cf);
  uint64_t v;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":f:o:e:jqh", opts, NULL)) != -1) {
    switch (c) {
    case 'f':
      sqlite = otf2 = 0;
      if (!strcmp(optarg, "perfetto") || !strcmp(optarg, "pftrace") || !strcmp(optarg, "proto"))
        o.format = NCS_EXPORT_PERFETTO;
      else if (!strcmp(optarg, "chrome") || !strcmp(optarg, "json"))
        o.format = NCS_EXPORT_CHROME;
      else if (!strcmp(optarg, "sqlite") || !strcmp(optarg, "sqlite3") || !strcmp(optarg, "db"))
        sqlite = 1;
      else if (!strcmp(optarg, "otf2"))
        otf2 = 1;
      else
        return ncs_usage_error("export",
                               "--format must be perfetto, chrome, sqlite or otf2, not '%s'",
                               optarg);
      break;
    case 'o': o.out = optarg; break;
    case 'e':
      if (ncs_check_events("export", "--events", optarg, &o.types) != 0) return NCS_EXIT_USAGE;
      if (!o.types) return ncs_usage_error("export", "--events selects no event type");
      break;
    case 'q': quiet = 1; break;
    case 'F': force = 1; break;
    case 'R':
      if (ncs_parse_run("export", optarg, &o.job) != 0) return NCS_EXIT_USAGE;
      break;
    case 'j': /* one letter, one meaning in every verb (docs/cli.md, "Short options") */
      return ncs_usage_error("export", "-j is short for --json, which export does not take; "
                                       "threads: --jobs N");
    case 'N':
      if (ncs_parse_count(optarg, 1, 64, &v) != 0)
        return ncs_usage_error("export", "--jobs needs a number from 1 to 64, not '%s'", optarg);
      o.jobs = (int)v;
      break;
    case 'h': fputs(export_help, stdout); return NCS_EXIT_OK;
    default: {
      int frc;
      if (ncs_parse_filter("export", c, optarg, &cf, &frc)) {
        if (frc) return frc;
        break;
      }
      return ncs_bad_option("export", c, argv);
    }
    }
  }
  const ncs_job_filter_t *filter = ncs_job_filter_active(&cf.f) ? &cf.f : NULL;
  if (optind >= argc)
    return ncs_usage_error("export", "which traces? give a trace directory or files");
  if (otf2) {
    if (argc - optind > 1)
      return ncs_usage_error("export", "--format otf2 takes one trace directory (or file)");
    if (o.types) return ncs_usage_error("export", "--events does not apply to --format otf2");
    return export_otf2(argv[optind], o.out, force, o.job, quiet, &cf);
  }
  if (sqlite) {
    if (argc - optind > 1)
      return ncs_usage_error("export", "--format sqlite takes one trace directory (or file)");
    return export_sqlite(argv[optind], o.out, force, o.types, o.job, quiet, &cf);
  }
  char out[PATH_MAX];
  const char *ext = o.format == NCS_EXPORT_CHROME ? ".json" : ".pftrace";
  if (!o.out) {
    if (argc - optind > 1)
      return ncs_usage_error("export", "several inputs: name the output with -o FILE");
    if (default_output(argv[optind], ext, out, sizeof out) != 0)
      return ncs_usage_error("export", "path too long: %s", argv[optind]);
    o.out = out;
  }
  o.progress = !quiet;
  uint64_t limit = warn_size();
  if (o.format == NCS_EXPORT_CHROME) /* docs/timeline.md, "Chrome JSON": rows and memory */
    o.json_hold = env_size("NCCLSCOPE_CHROME_HOLD", 0, "holding back up to 64 KiB per slice");
  /* the estimate is from the input's size: with a filter it says nothing */
  if (!filter) size_warning(argv + optind, argc - optind, o.format == NCS_EXPORT_CHROME, limit);
  ncs_export_stats_t st;
  char err[2 * PATH_MAX] = "";
  o.force = force;
  o.filter = filter, o.job_check = check_comm, o.check_arg = &cf.f;
  int rc = ncs_export(argv + optind, (size_t)(argc - optind), &o, &st, err, sizeof err);
  int status;
  if (export_ended(rc, err, &status)) return status;
  if (o.format == NCS_EXPORT_CHROME && st.bytes_out >= limit) {
    char lim[32];
    fmt_size(lim, sizeof lim, limit);
    ncs_warn("the Chrome JSON is %.1f MB (%" PRIu64 " bytes; the warning "
            "size is %s): chrome://tracing and the Perfetto UI parse JSON whole in memory and "
            "struggle with files this large; --format perfetto writes a smaller file that "
            "Perfetto loads faster, and --events (such as all,-proxystep,-proxyctrl,-net) "
            "leaves out the busiest rows",
            (double)st.bytes_out / 1e6, st.bytes_out, lim);
  }
  filter_summary(&st.filter, "slices, instants and other records", quiet);
  if (!quiet) {
    double mb = (double)st.bytes_out / 1e6;
    char rows[48] = "";
    if (o.format == NCS_EXPORT_CHROME)
      snprintf(rows, sizeof rows, " in %" PRIu64 " thread rows", st.json_rows);
    ncs_note("wrote %s (%.1f MB, %s): %" PRIu64 " processes, %" PRIu64
            " tracks%s, %" PRIu64 " slices, %" PRIu64 " instants, %" PRIu64
            " counter samples, %" PRIu64 " job slices, %" PRIu64 " flows (%" PRIu64
            " collective, %" PRIu64 " send/recv)",
            o.out, mb, o.format == NCS_EXPORT_CHROME ? "Chrome JSON" : "Perfetto protobuf",
            st.processes, st.tracks, rows, st.slices, st.instants, st.counter_samples,
            st.job_slices, st.coll_flows + st.p2p_flows, st.coll_flows, st.p2p_flows);
    ncs_note("%" PRIu64 " records from %" PRIu64 " files (%.1f MB) in %.2f s: "
            "%.2f M records/s",
            st.records, st.files, (double)st.bytes_in / 1e6, st.seconds,
            st.seconds > 0 ? (double)st.records / st.seconds / 1e6 : 0.0);
    if (st.gpu_bounded)
      ncs_note("GPU times mapped to host time for %d of %" PRIu64
              " files (offset error at most %.1f us for the %d files with a bound)",
              st.gpu_mapped, st.files, (double)st.max_gpu_offset_err_ns / 1e3, st.gpu_bounded);
    else if (st.gpu_mapped)
      ncs_note("GPU times mapped to host time for %d of %" PRIu64
              " files (error bound unknown: no kernel launch recorded before the kernels)",
              st.gpu_mapped, st.files);
    if (st.unmatched_stops || st.unfinished)
      ncs_note("%" PRIu64 " stop/state records without their start (dropped "
              "records), %" PRIu64 " events never stopped (shown up to the end of their "
              "segment)",
              st.unmatched_stops, st.unfinished);
    if (o.format == NCS_EXPORT_PERFETTO && strcmp(o.out, "-"))
      ncs_note("open it at https://ui.perfetto.dev (Open trace file)");
  }
  return export_status(rc);
}
