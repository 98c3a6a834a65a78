/* diff.c - `ncclscope diff A B`: what changed between two runs (docs/diff.md).
 *
 * Both runs go through the report's analysis (retained, so that every instance's latency and
 * bus bandwidth are there). Per (communicator, function, size bucket) present in both, the change
 * of the median latency and of the median bus bandwidth, in percent of A's, with a 95% bootstrap
 * percentile interval (NCS_DIFF_BOOT resamples of each run's instances, a fixed seed: the same
 * inputs give the same output). A bucket is "slower" ("faster") when the latency interval lies
 * above (below) zero; a regression when the interval's lower end is above --fail-above PCT.
 * Stragglers and slow ranks are the report's findings of each run; bottleneck labels are the
 * buckets' breakdown labels. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "cli/cli.h"
#include "util/fmt.h"
#include "util/mem.h"
#include "util/num.h"
#include "util/text.h"

#define NCS_DIFF_BOOT 2000
#define NCS_DIFF_MIN_N 5 /* instances per run a bucket needs to be compared */

typedef struct {
  double *lat, *bw;
  size_t n, cap;
} samples_t;

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double median(double *v, size_t n) {
  ncs_sort(v, n, sizeof *v, ncs_cmp_dbl);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* the change of the median from a to b in % of a's, and its 95% bootstrap interval */
static void boot(const double *a, size_t na, const double *b, size_t nb, uint64_t seed, double *pt,
                 double *lo, double *hi) {
  double *ta = ncs_xrealloc(NULL, na * sizeof *ta), *tb = ncs_xrealloc(NULL, nb * sizeof *tb);
  double *d = ncs_xrealloc(NULL, NCS_DIFF_BOOT * sizeof *d);
  memcpy(ta, a, na * sizeof *a), memcpy(tb, b, nb * sizeof *b);
  double ma = median(ta, na), mb = median(tb, nb);
  *pt = ma > 0 ? 100 * (mb - ma) / ma : 0;
  for (int k = 0; k < NCS_DIFF_BOOT; k++) {
    for (size_t i = 0; i < na; i++) ta[i] = a[rng_next(&seed) % na];
    for (size_t i = 0; i < nb; i++) tb[i] = b[rng_next(&seed) % nb];
    double x = median(ta, na), y = median(tb, nb);
    d[k] = x > 0 ? 100 * (y - x) / x : 0;
  }
  ncs_sort(d, NCS_DIFF_BOOT, sizeof *d, ncs_cmp_dbl);
  *lo = d[(size_t)(0.025 * NCS_DIFF_BOOT)], *hi = d[(size_t)(0.975 * NCS_DIFF_BOOT) - 1];
  free(ta), free(tb), free(d);
}

/* per bucket of `a`, its instances' latency and busbw (unsampled ones left out, as report does) */
static samples_t *collect(const ncs_analysis_t *a) {
  samples_t *s = ncs_xcalloc(a->nbuckets + 1, sizeof *s);
  for (size_t i = 0; i < ncs_job_inst_count(a->job); i++) {
    const ncs_inst_t *in = ncs_job_inst(a->job, i);
    const ncs_an_instance_t *x = ncs_an_instance(a, in->id);
    if (!x || x->unsampled) continue;
    for (uint32_t k = 0; k < a->nbuckets; k++) {
      const ncs_an_bucket_t *b = &a->buckets[k];
      if (b->p2p || b->comm != in->comm || b->func != in->func || b->log2 != x->log2) continue;
      samples_t *t = &s[k];
      if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->lat = ncs_xrealloc(t->lat, t->cap * sizeof *t->lat);
        t->bw = ncs_xrealloc(t->bw, t->cap * sizeof *t->bw);
      }
      t->lat[t->n] = (double)x->latency, t->bw[t->n++] = x->busbw;
      break;
    }
  }
  return s;
}

/* B's bucket of A's bucket k: the same communicator index, function and size bucket */
static int match(const ncs_analysis_t *a, uint32_t k, const ncs_analysis_t *b) {
  const ncs_an_bucket_t *x = &a->buckets[k];
  for (uint32_t i = 0; i < b->nbuckets; i++) {
    const ncs_an_bucket_t *y = &b->buckets[i];
    if (!y->p2p && y->comm == x->comm && y->log2 == x->log2 && !strcmp(y->func, x->func) &&
        a->job->comms[x->comm].nranks == b->job->comms[y->comm].nranks)
      return (int)i;
  }
  return -1;
}

typedef struct {
  int kind; /* NCS_FIND_STRAGGLER or NCS_FIND_SLOW_RANK */
  uint32_t comm;
  int32_t rank;
} who_t;

static size_t whos(const ncs_findings_t *f, who_t *w, size_t max) {
  size_t n = 0;
  for (uint32_t k = 0; k < f->n && n < max; k++)
    if (f->items[k].kind == NCS_FIND_STRAGGLER || f->items[k].kind == NCS_FIND_SLOW_RANK)
      w[n++] = (who_t){f->items[k].kind, f->items[k].rank->comm, f->items[k].rank->rank};
  return n;
}
/* A finding of one run only is a change when that rank's share (last arrivals, or slowest) in
 * that run is more than chance given both runs: P(X >= k) under the pooled share, X binomial over
 * its trials, at most NCS_DIFF_ALPHA. A rank the other run lacks is a change. */
#define NCS_DIFF_ALPHA 0.01
static const ncs_an_rank_t *rank_of(const ncs_analysis_t *a, uint32_t comm, int32_t rank) {
  for (uint32_t k = 0; k < a->nranks; k++)
    if (a->ranks[k].comm == comm && a->ranks[k].rank == rank) return &a->ranks[k];
  return NULL;
}
static int who_changed(const ncs_analysis_t *x, const ncs_analysis_t *other, const who_t *w) {
  const ncs_an_rank_t *r = rank_of(x, w->comm, w->rank), *o = rank_of(other, w->comm, w->rank);
  if (!r || !o) return 1;
  int st = w->kind == NCS_FIND_STRAGGLER;
  uint64_t k = st ? r->last : r->slowest, n = st ? r->last_trials : r->slow_trials;
  uint64_t ko = st ? o->last : o->slowest, no = st ? o->last_trials : o->slow_trials;
  if (!no) return 1;
  if (!n) return 0;
  double p0 = (double)(k + ko) / (double)(n + no);
  return ncs_binom_sf(k, n, p0) <= NCS_DIFF_ALPHA;
}

static int has_who(const who_t *w, size_t n, const who_t *x) {
  for (size_t i = 0; i < n; i++)
    if (w[i].kind == x->kind && w[i].comm == x->comm && w[i].rank == x->rank) return 1;
  return 0;
}

static const char diff_help[] =
    "usage: ncclscope diff [OPTIONS] A B\n"
    "\n"
    "What changed from run A to run B (two trace directories), per communicator,\n"
    "function and size: the change of the median latency and bus bandwidth in % of\n"
    "A's, with 95% bootstrap intervals; stragglers and slow ranks that appeared or\n"
    "vanished; changed bottleneck labels (docs/diff.md). Communicators are matched\n"
    "by label (c0, c1, ...: their order in each run) and size.\n"
    "\n"
    "options:\n"
    "  -j, --json            machine-readable output (schema: docs/diff.md)\n"
    "      --fail-above PCT  a regression: a latency interval whose lower end is\n"
    "                        above +PCT% (default 5); exit status 1 when there is one\n"
    "      --run-a N|last    the N-th run (by start time) when A holds several\n"
    "      --run-b N|last    the same for B\n"
    "      --wide            every column (the busbw interval, the bottleneck of\n"
    "                        every row), lines as long as they need (the default\n"
    "                        fits the terminal: 80 to 120 columns)\n"
    "  -h, --help            this help\n"
    "\n"
    "examples:\n"
    "  ncclscope diff base new\n"
    "  ncclscope diff --fail-above 10 base new || echo slower   # a CI gate\n"
    "  ncclscope diff -j base new | jq '.buckets[] | select(.regression)'\n"
    "\n"
    "exit status: 0 no regression, 1 a regression beyond --fail-above, 2 usage error\n"
    "(or several runs in A or B without --run-a/--run-b), 3 no traces in A or B\n"
    "(or nothing to compare), 4 no regression but an input is damaged, 5 the output\n"
    "cannot be written (docs/cli.md)\n";

static ncs_analysis_t *open_run(const char *path, uint32_t run, int *rc) {
  char err[1024];
  int why = 0;
  ncs_analyze_opts_t o = {.retain = 1, .job = run, .why = &why};
  ncs_analysis_t *a = ncs_analyze_path_opts(path, &o, err, sizeof err);
  if (!a) {
    ncs_error("%s", err);
    *rc = ncs_job_exit(why);
    return NULL;
  }
  /* no file that could be read, or no operation in those that could: nothing to compare, never
   * "0 regressions" (docs/cli.md, "Exit status") */
  if (ncs_no_input("diff", a->job)) {
    ncs_analysis_free(a);
    *rc = NCS_EXIT_NO_INPUT;
    return NULL;
  }
  if (!ncs_job_op_count(a->job)) {
    ncs_error("%s holds no collective or send/receive: nothing to compare", path);
    ncs_analysis_free(a);
    *rc = NCS_EXIT_NO_INPUT;
    return NULL;
  }
  return a;
}

int ncs_cmd_diff(int argc, char **argv) {
  static const struct option lo[] = {{"json", 0, 0, 'j'},  {"fail-above", 1, 0, 'f'},
                                     {"run-a", 1, 0, 'a'}, {"run-b", 1, 0, 'b'},
                                     {"wide", 0, 0, 'W'},  {"help", 0, 0, 'h'},
                                     {0, 0, 0, 0}};
  int json = 0, wide = 0, c;
  double pct = 5;
  uint32_t ra = 0, rb = 0;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":jh", lo, NULL)) != -1) {
    char *e;
    switch (c) {
    case 'j': json = 1; break;
    case 'W': wide = 1; break;
    case 'f':
      pct = strtod(optarg, &e);
      if (e == optarg || *e || !(pct >= 0) || pct > 1e6)
        return ncs_usage_error("diff", "--fail-above needs a percentage >= 0, not '%s'", optarg);
      break;
    case 'a':
    case 'b':
      if (ncs_parse_run("diff", optarg, c == 'a' ? &ra : &rb) != 0) return NCS_EXIT_USAGE;
      break;
    case 'h': fputs(diff_help, stdout); return NCS_EXIT_OK;
    default: return ncs_bad_option("diff", c, argv);
    }
  }
  if (argc - optind < 2)
    return ncs_usage_error("diff", "which runs? give two trace directories, A and B");
  if (argc - optind > 2) return ncs_usage_error("diff", "two trace directories, A and B, please");
  int rc = NCS_EXIT_OK;
  ncs_analysis_t *A = open_run(argv[optind], ra, &rc), *B = A ? open_run(argv[optind + 1], rb, &rc) : NULL;
  if (!B) {
    ncs_analysis_free(A);
    return rc;
  }
  /* a damaged input: what was compared is what could be read (status 4 without a regression) */
  int damaged = ncs_job_input(A->job) == NCS_JOB_IN_DAMAGED || ncs_job_input(B->job) == NCS_JOB_IN_DAMAGED;
  samples_t *sa = collect(A), *sb = collect(B);
  ncs_findings_t fa, fb;
  ncs_findings_build(&fa, A, 16), ncs_findings_build(&fb, B, 16);
  who_t wa[32], wb[32];
  size_t nwa = whos(&fa, wa, 32), nwb = whos(&fb, wb, 32);
  /* the text is built in memory and fitted to the terminal at the end (docs/cli.md, "Terminal
   * output"); JSON goes out as it is */
  char *buf = NULL;
  size_t blen = 0;
  FILE *o = json ? stdout : open_memstream(&buf, &blen);
  if (!o) return NCS_EXIT_ERROR;
  int regressions = 0, first = 1;
  ncs_tab_t *t = ncs_tab_new("buckets");
  ncs_tab_col(t, "comm", "comm", NCS_COL_GROUP, 0);
  ncs_tab_col(t, "func", "func", NCS_COL_KEY, 13);
  ncs_tab_col(t, "size>=", "bytes_lo", NCS_COL_KEY, 0);
  ncs_tab_col(t, "n A", "n_a", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "n B", "n_b", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "latency", "latency_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "95% interval", "latency_ci", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "busbw", "busbw_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "95% interval", "busbw_ci", NCS_COL_WIDE, 0);
  ncs_tab_col(t, "verdict", "verdict", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "bottleneck A -> B", "bottleneck", NCS_COL_TEXT, 0);
  if (json) {
    fprintf(o, "{\"schema\":\"ncclscope-diff/1\",\"a\":");
    ncs_json_str(o, argv[optind]);
    fprintf(o, ",\"b\":");
    ncs_json_str(o, argv[optind + 1]);
    fprintf(o, ",\"fail_above_pct\":%g,\"interval\":\"bootstrap-95-median\",\"resamples\":%d,\"buckets\":[",
            pct, NCS_DIFF_BOOT);
  } else {
    fprintf(o, "ncclscope diff: A %s, B %s\n", argv[optind], argv[optind + 1]);
    fprintf(o, "Change from A to B of the median per collective instance, %% of A's, with 95%% bootstrap "
               "intervals; a regression: a latency interval above +%g%%\n", pct);
    for (int side = 0; side < 2; side++) { /* what the labels stand for in each run */
      const ncs_analysis_t *r = side ? B : A;
      for (uint32_t ci = 0; ci < r->job->ncomms; ci++) {
        char cl[160];
        ncs_fmt_comm(cl, sizeof cl, ci, r->job->comms[ci].comm_id, r->job->comms[ci].name);
        fprintf(o, "  %s %s, %d ranks\n", side ? "B" : "A", cl, r->job->comms[ci].nranks);
      }
    }
  }
  /* one row per bucket; grouped by communicator on the terminal */
#define ROW(comm, func, log2)                                                                        \
  do {                                                                                              \
    char cl_[16], sz_[24], lo_[24];                                                                 \
    ncs_fmt_comm_label(cl_, sizeof cl_, comm);                                                      \
    ncs_fmt_bytes(sz_, sizeof sz_, log2);                                                           \
    snprintf(lo_, sizeof lo_, "%llu", (log2) < 0 ? 0ull : 1ull << (log2));                          \
    ncs_tab_row(t);                                                                                 \
    ncs_tab_put(t, cl_, NULL);                                                                      \
    ncs_tab_put(t, func, NULL);                                                                     \
    ncs_tab_put(t, sz_, lo_);                                                                       \
  } while (0)
  for (uint32_t k = 0; k < A->nbuckets; k++) {
    const ncs_an_bucket_t *x = &A->buckets[k];
    if (x->p2p) continue;
    int m = match(A, k, B);
    const ncs_an_bucket_t *y = m >= 0 ? &B->buckets[m] : NULL;
    size_t na = sa[k].n, nb = y ? sb[m].n : 0;
    double lp = 0, ll = 0, lh = 0, bp = 0, bl = 0, bh = 0;
    const char *verdict = !y ? "vanished" : na < NCS_DIFF_MIN_N || nb < NCS_DIFF_MIN_N ? "too_few" : NULL;
    int reg = 0;
    if (!verdict) {
      uint64_t seed = 0x6e63636c73636f70ull ^ ((uint64_t)k << 32);
      boot(sa[k].lat, na, sb[m].lat, nb, seed, &lp, &ll, &lh);
      boot(sa[k].bw, na, sb[m].bw, nb, seed + 1, &bp, &bl, &bh);
      verdict = ll > 0 ? "slower" : lh < 0 ? "faster" : "no_change";
      reg = ll > pct;
      regressions += reg;
    }
    char la[320], lb[320];
    ncs_bd_label_text(x, la, sizeof la);
    if (y) ncs_bd_label_text(y, lb, sizeof lb);
    else snprintf(lb, sizeof lb, "-");
    int changed = y && (x->bd_label != y->bd_label || x->bd_wait_rank != y->bd_wait_rank);
    if (json) {
      fprintf(o, "%s\n{\"comm\":%u,\"comm_label\":\"c%u\",\"func\":", first ? "" : ",", x->comm, x->comm);
      ncs_json_str(o, x->func);
      fprintf(o, ",\"bytes_lo\":%llu,\"n_a\":%zu,\"n_b\":%zu,\"verdict\":\"%s\",\"regression\":%s",
              x->log2 < 0 ? 0ull : 1ull << x->log2, na, nb, verdict, reg ? "true" : "false");
      if (strcmp(verdict, "vanished") && strcmp(verdict, "too_few"))
        fprintf(o, ",\"latency_pct\":%.3f,\"latency_ci\":[%.3f,%.3f],\"busbw_pct\":%.3f,\"busbw_ci\":[%.3f,%.3f]",
                lp, ll, lh, bp, bl, bh);
      fprintf(o, ",\"label_a\":\"%s\",\"label_b\":%s%s%s,\"label_changed\":%s}",
              x->bd_label >= 0 ? ncs_bn_names[x->bd_label] : "-", y ? "\"" : "",
              y ? (y->bd_label >= 0 ? ncs_bn_names[y->bd_label] : "-") : "null", y ? "\"" : "",
              changed ? "true" : "false");
    } else {
      ROW(x->comm, x->func, x->log2);
      char l1[64] = "-", l2[64] = "-", b1[64] = "-", b2[64] = "-", n1[24], n2[24], bn[700];
      if (strcmp(verdict, "vanished") && strcmp(verdict, "too_few")) {
        snprintf(l1, sizeof l1, "%+.1f%%", lp), snprintf(l2, sizeof l2, "[%+.1f, %+.1f]", ll, lh);
        snprintf(b1, sizeof b1, "%+.1f%%", bp), snprintf(b2, sizeof b2, "[%+.1f, %+.1f]", bl, bh);
      }
      snprintf(n1, sizeof n1, "%zu", na), snprintf(n2, sizeof n2, "%zu", nb);
      ncs_tab_put(t, n1, NULL), ncs_tab_put(t, n2, NULL);
      ncs_tab_put(t, l1, NULL), ncs_tab_put(t, l2, NULL);
      ncs_tab_put(t, b1, NULL), ncs_tab_put(t, b2, NULL);
      ncs_tab_put(t, reg ? "REGRESSION" : verdict, reg ? "regression" : verdict);
      /* the bottleneck: only where it changed, unless --wide */
      snprintf(bn, sizeof bn, "%s%s%s", changed || wide ? la : "", changed ? " -> " : "", changed ? lb : "");
      ncs_tab_put(t, bn, NULL);
    }
    first = 0;
  }
  for (uint32_t k = 0; k < B->nbuckets; k++) { /* buckets only B has */
    const ncs_an_bucket_t *y = &B->buckets[k];
    if (y->p2p || match(B, k, A) >= 0) continue;
    if (json) {
      fprintf(o, "%s\n{\"comm\":%u,\"comm_label\":\"c%u\",\"func\":", first ? "" : ",", y->comm, y->comm);
      ncs_json_str(o, y->func);
      fprintf(o, ",\"bytes_lo\":%llu,\"n_a\":0,\"n_b\":%zu,\"verdict\":\"new\",\"regression\":false}",
              y->log2 < 0 ? 0ull : 1ull << y->log2, sb[k].n);
    } else {
      char n2[24];
      ROW(y->comm, y->func, y->log2);
      snprintf(n2, sizeof n2, "%zu", sb[k].n);
      ncs_tab_put(t, "0", NULL), ncs_tab_put(t, n2, NULL);
      for (int q = 0; q < 4; q++) ncs_tab_put(t, "-", NULL);
      ncs_tab_put(t, "new", NULL), ncs_tab_put(t, "", NULL);
    }
    first = 0;
  }
#undef ROW
  if (!json) {
    ncs_tab_view_t tv = {.indent = 2, .width = wide ? 0 : ncs_term_width(STDOUT_FILENO), .wide = wide};
    ncs_tab_print(o, t, &tv);
  }
  ncs_tab_free(t);
  /* stragglers and slow ranks: the report's findings of each run */
  if (json) fprintf(o, "],\n\"findings\":[");
  else fprintf(o, "\nStragglers and slow ranks (the report's findings)\n");
  int nf = 0;
  for (int side = 0; side < 2; side++) {
    const who_t *w = side ? wa : wb, *other = side ? wb : wa;
    size_t n = side ? nwa : nwb, no = side ? nwb : nwa;
    for (size_t i = 0; i < n; i++) {
      if (has_who(other, no, &w[i])) continue;
      const char *what = w[i].kind == NCS_FIND_STRAGGLER ? "straggler" : "slow_rank";
      const char *ch = !who_changed(side ? A : B, side ? B : A, &w[i]) ? "not_significant"
                       : side                                           ? "vanished"
                                                                        : "new";
      if (json)
        fprintf(o, "%s{\"change\":\"%s\",\"kind\":\"%s\",\"comm\":%u,\"comm_label\":\"c%u\",\"rank\":%d,"
                   "\"run\":\"%s\"}",
                nf ? "," : "", ch, what, w[i].comm, w[i].comm, w[i].rank, side ? "a" : "b");
      else if (*ch == 'n' && ch[1] == 'o')
        fprintf(o, "  - %s: c%u rank %d, a finding of run %s only, but no significant change "
                   "between the runs\n", what, w[i].comm, w[i].rank, side ? "A" : "B");
      else
        fprintf(o, "  - %s %s: c%u rank %d\n", ch, what, w[i].comm, w[i].rank);
      nf++;
    }
  }
  if (!json && !nf) fprintf(o, "  - none new or vanished\n");
  if (json) fprintf(o, "],\"regressions\":%d}\n", regressions);
  else fprintf(o, "\n%d regression%s beyond +%g%%\n", regressions, regressions == 1 ? "" : "s", pct);
  if (!json) {
    fclose(o);
    ncs_fit(stdout, buf, blen, wide ? 0 : ncs_term_width(STDOUT_FILENO), 4);
    free(buf);
    o = stdout;
  }
  for (uint32_t k = 0; k <= A->nbuckets; k++) free(sa[k].lat), free(sa[k].bw);
  for (uint32_t k = 0; k <= B->nbuckets; k++) free(sb[k].lat), free(sb[k].bw);
  free(sa), free(sb);
  ncs_findings_free(&fa), ncs_findings_free(&fb);
  ncs_analysis_free(A), ncs_analysis_free(B);
  if (fflush(o) != 0 || ferror(o)) return NCS_EXIT_OUTPUT;
  return regressions ? NCS_EXIT_FOUND : damaged ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
}
