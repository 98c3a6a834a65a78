/* util.c - helpers shared by the ncclscope verbs: messages, option errors, finding files next to
 * the executable, and number and string formatting. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "model/model.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "util/fmt.h"
#include "util/text.h"

const char *ncs_prog = "ncclscope";
const char *ncs_verb = NULL;

/* One message on stderr: "ncclscope VERB: " (docs/cli.md, "Messages"), the kind ("error: ",
 * "warning: " or nothing) and the text; on a terminal wrapped to its width, continuation lines
 * indented by two spaces. */
static void message(const char *verb, const char *kind, const char *fmt, va_list ap) {
  char text[4096], first[128];
  if (!verb) verb = ncs_verb;
  vsnprintf(text, sizeof text, fmt, ap);
  snprintf(first, sizeof first, "%s%s%s: %s", ncs_prog, verb ? " " : "", verb ? verb : "", kind);
  fflush(stdout);
  if (isatty(STDERR_FILENO) && !strchr(text, '\n')) {
    ncs_wrap(stderr, first, "  ", text, ncs_term_width(STDERR_FILENO));
  } else {
    fputs(first, stderr);
    fputs(text, stderr);
    fputc('\n', stderr);
  }
}

int ncs_usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (!verb) verb = ncs_verb;
  message(verb, "error: ", fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try '%s%s%s --help'.\n", ncs_prog, verb ? " " : "", verb ? verb : "");
  return NCS_EXIT_USAGE;
}

void ncs_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message(NULL, "warning: ", fmt, ap);
  va_end(ap);
}

void ncs_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message(NULL, "error: ", fmt, ap);
  va_end(ap);
}

void ncs_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message(NULL, "", fmt, ap);
  va_end(ap);
}

int ncs_bad_option(const char *verb, int c, char **argv) {
  const char *opt = optind > 0 ? argv[optind - 1] : "?";
  if (c == ':') return ncs_usage_error(verb, "option '%s' needs a value", opt);
  if (optopt && optopt != '?') return ncs_usage_error(verb, "unknown option '-%c'", optopt);
  return ncs_usage_error(verb, "unknown option '%s'", opt);
}

int ncs_exe_dir(char *out, size_t len) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return -1;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return -1;
  *slash = 0;
  if ((size_t)snprintf(out, len, "%s", buf[0] ? buf : "/") >= len) return -1;
  return 0;
}

int ncs_find_tool(const char *env, const char *name, const char *const *rel, char *out,
                  size_t len) {
  const char *e = env ? getenv(env) : NULL;
  if (e && *e) {
    if (access(e, R_OK) != 0) {
      ncs_error("%s=%s: %s", env, e, strerror(errno));
      return -1;
    }
    char *abs = realpath(e, NULL);
    int ok = abs && strlen(abs) < len;
    if (ok) strcpy(out, abs);
    free(abs);
    return ok ? 0 : -1;
  }
  char dir[PATH_MAX];
  if (ncs_exe_dir(dir, sizeof dir) != 0) return -1;
  for (size_t i = 0; rel[i]; i++) {
    if ((size_t)snprintf(out, len, "%s/%s%s%s", dir, rel[i], rel[i][0] ? "/" : "", name) >= len)
      continue;
    if (access(out, R_OK) == 0) {
      char *abs = realpath(out, NULL);
      if (abs && strlen(abs) < len) strcpy(out, abs);
      free(abs);
      return 0;
    }
  }
  char where[PATH_MAX + 256] = "";
  for (size_t i = 0; rel[i]; i++)
    snprintf(where + strlen(where), sizeof where - strlen(where), "%s%s%s%s", i ? ", " : "", dir,
             rel[i][0] ? "/" : "", rel[i]);
  ncs_error("cannot find %s (looked in %s)%s%s", name, where, env ? "; set " : "", env ? env : "");
  return -1;
}

int ncs_find_plugin(char *out, size_t len) {
#ifndef NCS_INSTALL_LIBDIR
#define NCS_INSTALL_LIBDIR "lib"
#endif
  /* the build directory (side by side), the installed tree (bin/../lib/<arch>), then ../lib */
  static const char *const rel[] = {"", "../" NCS_INSTALL_LIBDIR, "../lib", NULL};
  return ncs_find_tool("NCCLSCOPE_PLUGIN", "libnccl-profiler-ncclscope.so", rel, out, len);
}

int ncs_parse_size(const char *s, uint64_t *v) {
  if (!s || !*s || *s == '-' || *s == '+') return -1;
  char *end;
  errno = 0;
  unsigned long long n = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned shift = 0;
  if (*end) {
    switch (*end) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: return -1;
    }
    end++;
    if (*end == 'i') end++; /* KiB, MiB, GiB */
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return -1;
  }
  if (n == 0 || n > (1ull << 40) >> shift) return -1; /* 1 TiB is plenty */
  *v = (uint64_t)n << shift;
  return 0;
}

int ncs_parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *v) {
  if (!s || !*s || *s == '-' || *s == '+') return -1;
  char *end;
  errno = 0;
  unsigned long long n = strtoull(s, &end, 10);
  if (errno || *end || end == s || n < lo || n > hi) return -1;
  *v = n;
  return 0;
}

int ncs_parse_run(const char *verb, const char *s, uint32_t *job) {
  uint64_t v;
  if (s && !strcmp(s, "last")) {
    *job = NCS_JOB_LAST;
    return 0;
  }
  if (ncs_parse_count(s, 1, 1000000, &v) != 0)
    return ncs_usage_error(verb, "--run needs a number from 1 (the runs' order by start time) or "
                                 "'last', not '%s'", s);
  *job = (uint32_t)v;
  return 0;
}

int ncs_no_input(const char *verb, const ncs_job_t *j) {
  if (ncs_job_input(j) != NCS_JOB_IN_NONE) return 0;
  for (uint32_t i = 0; i < j->nprocs; i++)
    if (!j->procs[i].excluded)
      ncs_warn("%s: %s", j->procs[i].path,
               j->procs[i].empty ? "empty (a process that died before its first chunk)"
               : j->procs[i].damage_msg[0] ? j->procs[i].damage_msg : "no segment could be read");
  ncs_error("%s: no trace file could be read", verb);
  return 1;
}

int ncs_job_exit(int why) {
  return why == NCS_JOB_ERR_SEVERAL || why == NCS_JOB_ERR_NO_JOB || why == NCS_JOB_ERR_FILTER
             ? NCS_EXIT_USAGE
             : NCS_EXIT_NO_INPUT;
}

/* A list that selects nothing records (or shows) nothing: an error, never a silent empty run.
 * A list of removals only ("-1", "-coll") starts from nothing, which is most likely not meant. */
static int empty_events(const char *verb, const char *opt, const char *list) {
  const char *p = list + strspn(list, ", |+");
  if (*p == '-' || *p == '^')
    ncs_usage_error(verb, "%s '%s' selects no event type: a list starts empty and '%c' removes "
                    "from it (did you mean 'default,%s' or 'all,%s'?)", opt, list, *p, p, p);
  else
    ncs_usage_error(verb, "%s '%s' selects no event type", opt, list);
  return -1;
}

int ncs_check_events(const char *verb, const char *opt, const char *list, uint32_t *mask) {
  const char *bad = NULL;
  size_t badlen = 0;
  if (ncs_parse_event_list(list, mask, &bad, &badlen) == 0)
    return *mask ? 0 : empty_events(verb, opt, list);
  if (badlen == 0) {
    ncs_usage_error(verb, "%s: empty event list", opt);
    return -1;
  }
  fprintf(stderr, "%s %s: error: %s: unknown event type '%.*s' in '%s'\nknown:", ncs_prog, verb, opt,
          (int)badlen, bad, list);
  for (unsigned t = 0; t < NCS_T_COUNT; t++) fprintf(stderr, " %s", ncs_schema[t].cli);
  fprintf(stderr, ", api, proxy, ce, all, none, default, a number (bit mask), -NAME removes\n"
                  "Try '%s %s --help'.\n", ncs_prog, verb);
  return -1;
}

void ncs_put_str(FILE *o, const char *s) {
  if (!s) {
    fputs("(null)", o);
    return;
  }
  int bare = *s != 0;
  for (const unsigned char *p = (const unsigned char *)s; *p && bare; p++)
    bare = *p > 0x20 && *p < 0x7F && *p != '"' && *p != '\\';
  if (bare) {
    fputs(s, o);
    return;
  }
  fputc('"', o);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(o, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", o);
    else if (*p == '\t')
      fputs("\\t", o);
    else if (*p < 0x20 || *p >= 0x7F) /* control bytes, and bytes a terminal might take as C1 */
      fprintf(o, "\\x%02x", *p);
    else
      fputc(*p, o);
  }
  fputc('"', o);
}

void ncs_put_mask(FILE *o, uint32_t mask) {
  /* all but one or two types (all of ABI v6's: all,-kernelphase): as NCCLSCOPE_EVENTS says it */
  uint32_t missing = NCS_T_ALL & ~mask;
  if (!(mask >> NCS_T_COUNT) && __builtin_popcount(missing) <= 2) {
    fputs("all", o);
    for (unsigned t = 0; t < NCS_T_COUNT; t++)
      if (missing & (1u << t)) fprintf(o, ",-%s", ncs_schema[t].cli);
    return;
  }
  int any = 0;
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    if (mask & (1u << t)) fprintf(o, "%s%s", any++ ? "," : "", ncs_schema[t].cli);
  if (mask >> NCS_T_COUNT)
    fprintf(o, "%s0x%x", any++ ? "," : "", mask >> NCS_T_COUNT << NCS_T_COUNT);
  if (!any) fputs("none", o);
}

void ncs_short_name(const char *path, char *out, size_t len) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  size_t n = strlen(b), m = strlen(NCS_TRACE_SUFFIX);
  if (n > m && strcmp(b + n - m, NCS_TRACE_SUFFIX) == 0) n -= m;
  snprintf(out, len, "%.*s", (int)n, b);
}

void ncs_counter_name(uint32_t key, char *out, size_t len) {
  static const char *const groups[] = {NULL, "starts", "stops", "states", "drops", "expired"};
  static const char *const plain[] = {
      NULL,        "bad_handles",    "stale_handles", "null_handles",  "foreign_ctx",
      "null_ctx",  "no_thread_slot", "completions",   "revisions",     "bytes",
      "chunks",    "threads",        "unknown_type",  "unknown_state", "pool_bytes",
      "pool_peak", "end_ns",         "tracked_peak",  "write_errors",  "disabled_type",
      "groups",    "groups_unsampled", "write_lost", "comms_untracked", "evicted",
      "max_comms", "track_max"};
  unsigned g = key >> 8, t = key & 0xFF;
  if (g >= 1 && g <= 5 && t < NCS_T_COUNT)
    snprintf(out, len, "%s.%s", groups[g], ncs_schema[t].name);
  else if (key > 0 && key < sizeof plain / sizeof plain[0])
    snprintf(out, len, "%s", plain[key]);
  else
    snprintf(out, len, "0x%x", key);
}

static void put_file(void *o, const char *p, size_t n) { fwrite(p, 1, n, o); }

void ncs_json_str(FILE *o, const char *s) {
  fputc('"', o);
  ncs_json_escape(s, put_file, o);
  fputc('"', o);
}

int ncs_gather_traces(char *const *paths, int npaths, char ***out, size_t *nout) {
  char err[512];
  size_t dups = 0, *found = calloc(npaths > 0 ? (size_t)npaths : 1, sizeof *found);
  *out = NULL, *nout = 0;
  if (!found) return NCS_EXIT_ERROR;
  if (ncs_list_traces_n(paths, (size_t)npaths, out, nout, &dups, found, err, sizeof err) != 0) {
    ncs_error("%s", err);
    free(found);
    return NCS_EXIT_NO_INPUT;
  }
  for (int i = 0; i < npaths; i++)
    if (!found[i]) ncs_warn("no *.nstrace or *.nsflight files in %s", paths[i]);
  free(found);
  /* the same file twice would count its ranks and operations twice */
  if (dups)
    ncs_warn("%zu path%s named a trace file already listed (the same path twice, or a link): "
             "each file is read once",
             dups, dups == 1 ? "" : "s");
  if (!*nout) {
    ncs_error("no trace files found");
    ncs_free_paths(*out, 0);
    *out = NULL;
    return NCS_EXIT_NO_INPUT;
  }
  return 0;
}

int ncs_gather_traces_quiet(char *const *paths, int npaths, char ***out, size_t *nout) {
  char err[512];
  size_t dups = 0, *found = calloc(npaths > 0 ? (size_t)npaths : 1, sizeof *found);
  *out = NULL, *nout = 0;
  if (!found) return -1;
  int rc = ncs_list_traces_n(paths, (size_t)npaths, out, nout, &dups, found, err, sizeof err);
  free(found);
  return rc != 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- filters */

/* "1.5", "1.5s", "250ms", "30us", "100ns" -> ns; 0 or -1 */
static int parse_time(const char *s, int64_t *ns) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !(v >= 0) || v > 1e7) return -1;
  double mul = 1e9;
  if (!*end || !strcmp(end, "s")) mul = 1e9;
  else if (!strcmp(end, "ms")) mul = 1e6;
  else if (!strcmp(end, "us")) mul = 1e3;
  else if (!strcmp(end, "ns")) mul = 1;
  else return -1;
  *ns = (int64_t)(v * mul + 0.5);
  return 0;
}

/* a decimal number without sign; 0 or -1 (*end: where it stopped) */
static int parse_u64(const char *s, uint64_t *v, const char **end) {
  char *e;
  if (*s < '0' || *s > '9') return -1;
  errno = 0;
  unsigned long long n = strtoull(s, &e, 10);
  if (errno) return -1;
  *v = n, *end = e;
  return 0;
}

/* --range NAME, NAME:N, NAME:N-M; NAME: (a trailing ':') is NAME whatever it holds */
static int parse_range(const char *verb, const char *arg, ncs_cli_filter_t *cf) {
  ncs_job_filter_t *f = &cf->f;
  if (f->nrsel >= NCS_CLI_MAX_RANGES)
    return ncs_usage_error(verb, "--range: at most %d of them", NCS_CLI_MAX_RANGES);
  ncs_job_rsel_t *r = &cf->rsel[f->nrsel];
  *r = (ncs_job_rsel_t){0};
  size_t len = strlen(arg);
  const char *colon = strrchr(arg, ':'), *end;
  if (colon && !colon[1]) {
    len = (size_t)(colon - arg);
  } else if (colon && parse_u64(colon + 1, &r->from, &end) == 0) {
    r->to = r->from;
    if (*end == '-' && parse_u64(end + 1, &r->to, &end) != 0) end = "-";
    if (*end || r->from < 1 || r->to < r->from)
      return ncs_usage_error(verb, "--range '%s': a range name, NAME:N (the N-th range of that name on "
                                   "each thread, from 1) or NAME:N-M; a name with a ':' of its own ends "
                                   "with one more ':'", arg);
    len = (size_t)(colon - arg);
  }
  if (!len) return ncs_usage_error(verb, "--range needs the name of a user range (docs/ranges.md)");
  if (len > NCS_RANGE_NAME_MAX)
    return ncs_usage_error(verb, "--range: a name of at most %d bytes (a trace keeps no more of one)",
                           NCS_RANGE_NAME_MAX);
  memcpy(cf->rname[f->nrsel], arg, len);
  cf->rname[f->nrsel][len] = 0;
  r->name = cf->rname[f->nrsel];
  f->nrsel++, f->rsel = cf->rsel;
  return 0;
}

/* --tag 7, 3,5-9 */
static int parse_tags(const char *verb, const char *arg, ncs_cli_filter_t *cf) {
  ncs_job_filter_t *f = &cf->f;
  const char *p = arg;
  do {
    uint64_t lo, hi;
    if (parse_u64(p, &lo, &p) != 0) break;
    hi = lo;
    if (*p == '-' && (parse_u64(p + 1, &hi, &p) != 0 || hi < lo)) break;
    if (*p && *p != ',') break;
    if (f->ntsel >= NCS_CLI_MAX_TAGS)
      return ncs_usage_error(verb, "--tag: at most %d numbers and intervals", NCS_CLI_MAX_TAGS);
    cf->tsel[f->ntsel++] = (ncs_job_tsel_t){lo, hi};
    f->tsel = cf->tsel;
    if (!*p) return 0;
    p++;
  } while (1);
  return ncs_usage_error(verb, "--tag needs NCCL user tags such as 7 or 3,5-9 (0: untagged), not '%s'", arg);
}

int ncs_parse_filter(const char *verb, int c, const char *arg, ncs_cli_filter_t *cf, int *rc) {
  ncs_job_filter_t *f = &cf->f;
  *rc = 0;
  switch (c) {
  case NCS_OPT_COMM: { /* a label (c3), an index (3) or a commId (0x...) */
    char *end;
    errno = 0;
    if (!strncmp(arg, "0x", 2)) {
      unsigned long long v = strtoull(arg, &end, 16);
      if (errno || end == arg + 2 || *end)
        *rc = ncs_usage_error(verb, "--comm needs a communicator's label (c0), index (0) or commId (0x "
                                    "and 16 hex digits), not '%s'", arg);
      f->comm_set = 1, f->comm_id = v, f->comm_by_index = 0;
      return 1;
    }
    const char *d = arg + (arg[0] == 'c');
    unsigned long v = *d >= '0' && *d <= '9' ? strtoul(d, &end, 10) : 0;
    if (*d < '0' || *d > '9' || errno || *end || v > 1u << 30)
      *rc = ncs_usage_error(verb, "--comm needs a communicator's label (c0), index (0) or commId (0x "
                                  "and 16 hex digits, as 'ncclscope report' lists them), not '%s'", arg);
    f->comm_set = 1, f->comm_by_index = 1, f->comm_index = (uint32_t)v;
    return 1;
  }
  case NCS_OPT_RANK: { /* "0,2,5-7" */
    const char *p = arg;
    while (*p) {
      char *end;
      errno = 0;
      long a = strtol(p, &end, 10), b = a;
      if (end == p || a < 0 || a > 1 << 24) break;
      p = end;
      if (*p == '-') {
        const char *q = p + 1;
        b = strtol(q, &end, 10);
        if (end == q || b < a || b > 1 << 24) break;
        p = end;
      }
      for (long r = a; r <= b; r++) {
        if (f->nranks >= sizeof cf->ranks / sizeof cf->ranks[0]) {
          *rc = ncs_usage_error(verb, "--rank: at most %zu ranks", sizeof cf->ranks / sizeof cf->ranks[0]);
          return 1;
        }
        cf->ranks[f->nranks++] = (int32_t)r;
      }
      if (*p == ',') p++;
      else if (*p) break;
    }
    if (*p || !f->nranks)
      *rc = ncs_usage_error(verb, "--rank needs ranks such as 0,2,4-7, not '%s'", arg);
    f->ranks = cf->ranks;
    return 1;
  }
  case NCS_OPT_FROM:
  case NCS_OPT_TO: {
    int64_t ns;
    if (parse_time(arg, &ns) != 0) {
      *rc = ncs_usage_error(verb, "--%s needs a time since the job's first event, e.g. 1.5, 1.5s, "
                                  "250ms, not '%s'", c == NCS_OPT_FROM ? "from" : "to", arg);
      return 1;
    }
    if (!f->window) f->window = 1, f->from_ns = 0, f->to_ns = INT64_MAX;
    if (c == NCS_OPT_FROM) f->from_ns = ns;
    else f->to_ns = ns;
    if (f->to_ns < f->from_ns) *rc = ncs_usage_error(verb, "--to is before --from");
    return 1;
  }
  case NCS_OPT_RANGE: *rc = parse_range(verb, arg, cf); return 1;
  case NCS_OPT_TAG: *rc = parse_tags(verb, arg, cf); return 1;
  default: return 0;
  }
}

int ncs_check_filter_comm(const char *verb, const ncs_job_filter_t *f, const ncs_job_t *j) {
  ncs_job_filter_t g = *f;
  char err[1024];
  if (ncs_job_filter_comm(&g, j->comms, j->ncomms, err, sizeof err) == 0) return 0;
  return ncs_usage_error(verb, "%s", err);
}
