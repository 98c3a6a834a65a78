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

static double mean(const double *v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  return n ? s / (double)n : 0;
}

/* The change of the mean from a to b (b's - a's, in their unit), and its 95% bootstrap percentile
 * interval: for per-rank waits and last arrivals, whose totals are what a user compares (a sum
 * over instances is n times the mean; most instances add 0, so a median would say nothing). */
static void boot_mean(const double *a, size_t na, const double *b, size_t nb, uint64_t seed,
                      double *pt, double *lo, double *hi) {
  double *d = ncs_xrealloc(NULL, NCS_DIFF_BOOT * sizeof *d);
  *pt = mean(b, nb) - mean(a, na);
  for (int k = 0; k < NCS_DIFF_BOOT; k++) {
    double sa = 0, sb = 0;
    for (size_t i = 0; i < na; i++) sa += a[rng_next(&seed) % na];
    for (size_t i = 0; i < nb; i++) sb += b[rng_next(&seed) % nb];
    d[k] = sb / (double)nb - sa / (double)na;
  }
  ncs_sort(d, NCS_DIFF_BOOT, sizeof *d, ncs_cmp_dbl);
  *lo = d[(size_t)(0.025 * NCS_DIFF_BOOT)], *hi = d[(size_t)(0.975 * NCS_DIFF_BOOT) - 1];
  free(d);
}

/* the change of the median from a to b in % of a's, and its bootstrap interval at level 1 - alpha */
static void boot(const double *a, size_t na, const double *b, size_t nb, uint64_t seed, double alpha,
                 double *pt, double *lo, double *hi) {
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
  size_t tail = (size_t)(alpha / 2 * NCS_DIFF_BOOT); /* resamples below the interval, and above */
  *lo = d[tail], *hi = d[NCS_DIFF_BOOT - 1 - tail];
  free(ta), free(tb), free(d);
}

static void add_sample(samples_t *t, double lat, double bw) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 64;
    t->lat = ncs_xrealloc(t->lat, t->cap * sizeof *t->lat);
    t->bw = ncs_xrealloc(t->bw, t->cap * sizeof *t->bw);
  }
  t->lat[t->n] = lat, t->bw[t->n++] = bw;
}

static int log2b(uint64_t bytes) {
  int l = -1;
  while (bytes) bytes >>= 1, l++;
  return l;
}

/* per bucket of `a`, its instances' latency and busbw (unsampled ones left out, as report does);
 * for send/receive buckets each Send and Recv: its duration and bandwidth (src/analyze, p2p_one) */
static samples_t *collect(const ncs_analysis_t *a) {
  samples_t *s = ncs_xcalloc(a->nbuckets + 1, sizeof *s);
  for (size_t i = 0; i < ncs_job_op_count(a->job); i++) {
    const ncs_op_t *o = ncs_job_op(a->job, i);
    if (!o->p2p || (o->gk == NCS_GK_UNKNOWN && o->timing != NCS_SRC_KERNEL_GPU)) continue;
    for (uint32_t k = 0; k < a->nbuckets; k++) {
      const ncs_an_bucket_t *b = &a->buckets[k];
      if (!b->p2p || b->comm != o->comm || strcmp(b->func, o->func) || b->log2 != log2b(o->bytes)) continue;
      add_sample(&s[k], (double)o->duration, o->duration > 0 ? (double)o->bytes / (double)o->duration : 0);
      break;
    }
  }
  for (size_t i = 0; i < ncs_job_inst_count(a->job); i++) {
    const ncs_inst_t *in = ncs_job_inst(a->job, i);
    const ncs_an_instance_t *x = ncs_an_instance(a, in->id);
    if (!x || x->unsampled) continue;
    for (uint32_t k = 0; k < a->nbuckets; k++) {
      const ncs_an_bucket_t *b = &a->buckets[k];
      if (b->p2p || b->comm != in->comm || b->func != in->func || b->log2 != x->log2) continue;
      add_sample(&s[k], (double)x->latency, x->busbw);
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
    if (y->p2p == x->p2p && y->comm == x->comm && y->log2 == x->log2 && !strcmp(y->func, x->func) &&
        a->job->comms[x->comm].nranks == b->job->comms[y->comm].nranks)
      return (int)i;
  }
  return -1;
}

/* A headline finding of one run about one rank (a straggler, a slow rank, and whatever rank
 * finding src/analyze adds): compared by kind, communicator and rank. */
typedef struct {
  int kind; /* ncs_find_kind_t */
  uint32_t comm;
  int32_t rank;
  double p;  /* its test's p-value in its run */
} who_t;

/* the short name of a finding's kind in diff's output; a kind added to findings.h must be named
 * here (the switch has no default: the compiler says so) */
static const char *kind_name(int kind) {
  switch ((ncs_find_kind_t)kind) {
  case NCS_FIND_STRAGGLER: return "straggler";
  case NCS_FIND_SLOW_RANK: return "slow_rank";
  case NCS_FIND_MISMATCH: return "mismatch";
  case NCS_FIND_INCOMPLETE: return "incomplete";
  case NCS_FIND_P2P: return "p2p";
  case NCS_FIND_DAMAGED: return "damaged";
  case NCS_FIND_STALL: return "stall";
  case NCS_FIND_STALLS: return "repeated_stalls";
  }
  return "finding";
}

/* the headline findings of a run: about a rank (comm, rank), or about the job (rank -1) */
static size_t whos(const ncs_findings_t *f, who_t *w, size_t max) {
  size_t n = 0;
  for (uint32_t k = 0; k < f->n && n < max; k++) {
    const ncs_finding_t *x = &f->items[k];
    if (!x->headline) continue; /* minor: significant, but too small to act on (docs/report.md) */
    w[n++] = (who_t){x->kind, x->rank ? x->rank->comm : UINT32_MAX, x->rank ? x->rank->rank : -1,
                     x->test.p};
  }
  return n;
}
/* A finding of one run only is a change when the other run does not explain it by chance. For
 * the findings whose test counts events of the rank among trials (last arrivals, times slowest):
 * that rank's count in that run is more than chance given both runs, P(X >= k) under the pooled
 * share, X binomial over its trials, at most NCS_DIFF_ALPHA. Other findings (their own test is
 * of one run: a size, a stall) are a change as they are. A rank the other run lacks is a change. */
#define NCS_DIFF_ALPHA 0.01
static const ncs_an_rank_t *rank_of(const ncs_analysis_t *a, uint32_t comm, int32_t rank) {
  for (uint32_t k = 0; k < a->nranks; k++)
    if (a->ranks[k].comm == comm && a->ranks[k].rank == rank) return &a->ranks[k];
  return NULL;
}
static double pooled_p(uint64_t k, uint64_t n, uint64_t ko, uint64_t no) {
  if (!no) return 0;
  if (!n) return 1;
  return ncs_binom_sf(k, n, (double)(k + ko) / (double)(n + no));
}
static int who_changed(const ncs_analysis_t *x, const ncs_analysis_t *other, const who_t *w) {
  if (w->kind != NCS_FIND_STRAGGLER && w->kind != NCS_FIND_SLOW_RANK) return 1;
  const ncs_an_rank_t *r = rank_of(x, w->comm, w->rank), *o = rank_of(other, w->comm, w->rank);
  if (!r || !o) return 1;
  int st = w->kind == NCS_FIND_STRAGGLER;
  return pooled_p(st ? r->last : r->slowest, st ? r->last_trials : r->slow_trials,
                  st ? o->last : o->slowest, st ? o->last_trials : o->slow_trials) <= NCS_DIFF_ALPHA;
}

static int has_who(const who_t *w, size_t n, const who_t *x) {
  for (size_t i = 0; i < n; i++)
    if (w[i].kind == x->kind && w[i].comm == x->comm && w[i].rank == x->rank) return 1;
  return 0;
}

/* ---- per rank: the waiting it caused and suffered, and its last arrivals, per instance of its
 * communicator, from the analysis (ncs_an_instance, ncs_an_op_wait): what report's "Ranks by
 * waiting caused" sums. caused: the instance's wait_caused when the rank counted as its last
 * arrival, else 0; waited: its operation's new waiting; last: 1 or 0 over the instances whose last
 * arrival counts (the trials of the straggler test). */
typedef struct {
  double *caused, *waited, *last;
  size_t n, nlast, cap, caplast;
} rsamp_t;

static rsamp_t *rank_samples(const ncs_analysis_t *a) {
  rsamp_t *s = ncs_xcalloc(a->nranks + 1, sizeof *s);
  for (size_t i = 0; i < ncs_job_inst_count(a->job); i++) {
    const ncs_inst_t *in = ncs_job_inst(a->job, i);
    const ncs_an_instance_t *x = ncs_an_instance(a, i);
    if (!x) continue;
    for (uint32_t k = 0; k < in->nops; k++) {
      const ncs_op_t *o = ncs_job_op(a->job, in->first_op + k);
      int64_t w = ncs_an_op_wait(a, in->first_op + k);
      const ncs_an_rank_t *r = o ? rank_of(a, o->comm, o->rank) : NULL;
      if (!r || w < 0) continue;
      rsamp_t *t = &s[r - a->ranks];
      int last = x->last_counted && o->rank == in->last_rank;
      if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->caused = ncs_xrealloc(t->caused, t->cap * sizeof *t->caused);
        t->waited = ncs_xrealloc(t->waited, t->cap * sizeof *t->waited);
      }
      t->caused[t->n] = last ? (double)x->wait_caused : 0, t->waited[t->n++] = (double)w;
      if (!x->last_counted) continue;
      NCS_XGROW(t->last, t->caplast, t->nlast + 1);
      t->last[t->nlast++] = last;
    }
  }
  return s;
}

static void rank_samples_free(rsamp_t *s, uint32_t n) {
  for (uint32_t k = 0; s && k <= n; k++) free(s[k].caused), free(s[k].waited), free(s[k].last);
  free(s);
}

/* the median latency of A's collective instances of a communicator (the yardstick of a rank's
 * waiting: --fail-above PCT of it), 0 when A has none */
static double comm_median(const ncs_analysis_t *a, const samples_t *sa, uint32_t comm) {
  size_t n = 0;
  for (uint32_t k = 0; k < a->nbuckets; k++)
    if (!a->buckets[k].p2p && a->buckets[k].comm == comm) n += sa[k].n;
  if (!n) return 0;
  double *v = ncs_xrealloc(NULL, n * sizeof *v), m;
  n = 0;
  for (uint32_t k = 0; k < a->nbuckets; k++)
    if (!a->buckets[k].p2p && a->buckets[k].comm == comm && sa[k].n)
      memcpy(v + n, sa[k].lat, sa[k].n * sizeof *v), n += sa[k].n;
  m = median(v, n);
  free(v);
  return m;
}

/* the rows of the buckets table: A's bucket (or -1) and B's (or -1), in size order */
typedef struct {
  int ka, kb;
  const ncs_an_bucket_t *b; /* the one that names it */
} row_t;
static int cmp_row(const void *x, const void *y) {
  const ncs_an_bucket_t *a = ((const row_t *)x)->b, *b = ((const row_t *)y)->b;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->p2p != b->p2p) return a->p2p - b->p2p;
  int c = strcmp(a->func, b->func);
  if (c) return c;
  return (a->log2 > b->log2) - (a->log2 < b->log2);
}

static const char diff_help[] =
    "usage: ncclscope diff [OPTIONS] A B\n"
    "\n"
    "What changed from run A to run B (two trace directories), per communicator,\n"
    "function and size: the change of the median latency and bus bandwidth in % of\n"
    "A's, with 95% bootstrap intervals (send/receive buckets too); per rank the\n"
    "waiting it caused and suffered and its last arrivals; findings (stragglers,\n"
    "slow ranks, ...) that appeared or vanished; changed bottleneck labels\n"
    "(docs/diff.md). Communicators are matched by label (c0, c1, ...: their order\n"
    "in each run) and size.\n"
    "\n"
    "options:\n"
    "  -j, --json            machine-readable output (schema: docs/diff.md)\n"
    "      --fail-above PCT  a regression: a latency interval whose lower end is\n"
    "                        above +PCT% (default 5), a rank arriving last more often\n"
    "                        whose caused waiting rose above PCT% of A's median\n"
    "                        latency, or a new finding about a rank (a straggler);\n"
    "                        exit status 1 when there is one\n"
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
    "exit status: 0 no regression, 1 a regression, 2 usage error\n"
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
  rsamp_t *ra_ = rank_samples(A), *rb_ = rank_samples(B);
  ncs_findings_t fa, fb;
  ncs_findings_build(&fa, A, 16), ncs_findings_build(&fb, B, 16);
  who_t wa[64], wb[64];
  size_t nwa = whos(&fa, wa, 64), nwb = whos(&fb, wb, 64);
  /* the rows in size order: per communicator, collectives then sends/receives, by function and
   * size; a bucket only one run has where it would be */
  row_t *rows = ncs_xcalloc((size_t)A->nbuckets + B->nbuckets + 1, sizeof *rows);
  size_t nrows = 0;
  for (uint32_t k = 0; k < A->nbuckets; k++) {
    int m = match(A, k, B);
    rows[nrows++] = (row_t){(int)k, m, &A->buckets[k]};
  }
  for (uint32_t k = 0; k < B->nbuckets; k++)
    if (match(B, k, A) < 0) rows[nrows++] = (row_t){-1, (int)k, &B->buckets[k]};
  ncs_sort(rows, nrows, sizeof *rows, cmp_row);
  /* the text is built in memory and fitted to the terminal at the end (docs/cli.md, "Terminal
   * output"); JSON goes out as it is */
  char *buf = NULL;
  size_t blen = 0;
  FILE *o = json ? stdout : open_memstream(&buf, &blen);
  if (!o) return NCS_EXIT_ERROR;
  int regressions = 0, first = 1;
  /* Every bucket compared is one more chance of a false regression: its interval is at level
   * 1 - 0.05/m for the m buckets compared (Bonferroni), so that healthy runs show one in 20 times
   * at most, whatever their number of buckets (docs/diff.md, "Verdicts") */
  int ncompared = 0;
  for (size_t ri = 0; ri < nrows; ri++)
    ncompared += rows[ri].ka >= 0 && rows[ri].kb >= 0 && sa[rows[ri].ka].n >= NCS_DIFF_MIN_N &&
                 sb[rows[ri].kb].n >= NCS_DIFF_MIN_N;
  double alpha = 0.05 / (ncompared > 0 ? ncompared : 1);
  ncs_tab_t *t = ncs_tab_new("buckets");
  ncs_tab_col(t, "comm", "comm", NCS_COL_GROUP, 0);
  ncs_tab_col(t, "func", "func", NCS_COL_KEY, 13);
  ncs_tab_col(t, "size>=", "bytes_lo", NCS_COL_KEY, 0);
  ncs_tab_col(t, "n A", "n_a", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "n B", "n_b", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "latency", "latency_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "interval", "latency_ci", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "busbw", "busbw_pct", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "interval", "busbw_ci", NCS_COL_WIDE, 0);
  ncs_tab_col(t, "verdict", "verdict", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "bottleneck A -> B", "bottleneck", NCS_COL_TEXT, 0);
  if (json) {
    fprintf(o, "{\"schema\":\"ncclscope-diff/2\",\"a\":");
    ncs_json_str(o, argv[optind]);
    fprintf(o, ",\"b\":");
    ncs_json_str(o, argv[optind + 1]);
    fprintf(o, ",\"fail_above_pct\":%g,\"interval\":\"bootstrap-median-bonferroni\",\"buckets_compared\":%d,"
               "\"bucket_level\":%.6f,\"family_level\":0.95,\"rank_interval\":\"bootstrap-95-mean\",\"resamples\":%d,"
               "\"buckets\":[",
            pct, ncompared, 1 - alpha, NCS_DIFF_BOOT);
  } else {
    fprintf(o, "ncclscope diff: A %s, B %s\n", argv[optind], argv[optind + 1]);
    fprintf(o, "Change from A to B of the median per collective instance (per send or receive), %% of "
               "A's, with bootstrap intervals at %.2f%% each (95%% for the %d buckets compared together); "
               "a regression: a latency interval above +%g%%\n", 100 * (1 - alpha), ncompared, pct);
    for (int side = 0; side < 2; side++) { /* what the labels stand for in each run */
      const ncs_analysis_t *r = side ? B : A;
      for (uint32_t ci = 0; ci < r->job->ncomms; ci++) {
        char cl[160];
        ncs_fmt_comm(cl, sizeof cl, ci, r->job->comms[ci].comm_id, r->job->comms[ci].name);
        fprintf(o, "  %s %s, %d ranks\n", side ? "B" : "A", cl, r->job->comms[ci].nranks);
      }
    }
  }
  for (size_t ri = 0; ri < nrows; ri++) { /* one row per bucket; grouped by communicator */
    const ncs_an_bucket_t *x = rows[ri].ka >= 0 ? &A->buckets[rows[ri].ka] : NULL;
    const ncs_an_bucket_t *y = rows[ri].kb >= 0 ? &B->buckets[rows[ri].kb] : NULL;
    const ncs_an_bucket_t *z = rows[ri].b;
    size_t na = x ? sa[rows[ri].ka].n : 0, nb = y ? sb[rows[ri].kb].n : 0;
    double lp = 0, ll = 0, lh = 0, bp = 0, bl = 0, bh = 0;
    const char *verdict = !y ? "vanished" : !x ? "new" : na < NCS_DIFF_MIN_N || nb < NCS_DIFF_MIN_N ? "too_few" : NULL;
    int reg = 0;
    if (!verdict) {
      uint64_t seed = 0x6e63636c73636f70ull ^ ((uint64_t)rows[ri].ka << 32);
      boot(sa[rows[ri].ka].lat, na, sb[rows[ri].kb].lat, nb, seed, alpha, &lp, &ll, &lh);
      boot(sa[rows[ri].ka].bw, na, sb[rows[ri].kb].bw, nb, seed + 1, alpha, &bp, &bl, &bh);
      /* no change only where the data rule out one beyond --fail-above either way; an interval
       * holding 0 and a change beyond that cannot tell (a bimodal bucket of few instances) */
      verdict = ll > 0 ? "slower" : lh < 0 ? "faster" : ll >= -pct && lh <= pct ? "no_change" : "cannot_tell";
      reg = ll > pct;
      regressions += reg;
    }
    int compared = strcmp(verdict, "vanished") && strcmp(verdict, "new") && strcmp(verdict, "too_few");
    char la[320] = "-", lb[320] = "-";
    if (x) ncs_bd_label_text(x, la, sizeof la);
    if (y) ncs_bd_label_text(y, lb, sizeof lb);
    int changed = x && y && (x->bd_label != y->bd_label || x->bd_wait_rank != y->bd_wait_rank);
    if (json) {
      fprintf(o, "%s\n{\"comm\":%u,\"comm_label\":\"c%u\",\"func\":", first ? "" : ",", z->comm, z->comm);
      ncs_json_str(o, z->func);
      fprintf(o, ",\"p2p\":%s,\"bytes_lo\":%llu,\"n_a\":%zu,\"n_b\":%zu,\"verdict\":\"%s\",\"regression\":%s",
              z->p2p ? "true" : "false", z->log2 < 0 ? 0ull : 1ull << z->log2, na, nb, verdict,
              reg ? "true" : "false");
      if (compared)
        fprintf(o, ",\"latency_pct\":%.3f,\"latency_ci\":[%.3f,%.3f],\"busbw_pct\":%.3f,\"busbw_ci\":[%.3f,%.3f]",
                lp, ll, lh, bp, bl, bh);
      fprintf(o, ",\"label_a\":");
      if (x && x->bd_label >= 0) fprintf(o, "\"%s\"", ncs_bn_names[x->bd_label]);
      else fprintf(o, x ? "\"-\"" : "null");
      fprintf(o, ",\"label_b\":");
      if (y && y->bd_label >= 0) fprintf(o, "\"%s\"", ncs_bn_names[y->bd_label]);
      else fprintf(o, y ? "\"-\"" : "null");
      fprintf(o, ",\"label_changed\":%s}", changed ? "true" : "false");
    } else {
      char cl[16], sz[24], szk[24];
      ncs_fmt_comm_label(cl, sizeof cl, z->comm);
      ncs_fmt_bytes(sz, sizeof sz, z->log2);
      snprintf(szk, sizeof szk, "%llu", z->log2 < 0 ? 0ull : 1ull << z->log2);
      ncs_tab_row(t);
      ncs_tab_put(t, cl, NULL), ncs_tab_put(t, z->func, NULL), ncs_tab_put(t, sz, szk);
      char l1[64] = "-", l2[64] = "-", b1[64] = "-", b2[64] = "-", n1[24], n2[24], bn[700];
      if (compared) {
        snprintf(l1, sizeof l1, "%+.1f%%", lp), snprintf(l2, sizeof l2, "[%+.1f, %+.1f]", ll, lh);
        snprintf(b1, sizeof b1, "%+.1f%%", bp), snprintf(b2, sizeof b2, "[%+.1f, %+.1f]", bl, bh);
      }
      snprintf(n1, sizeof n1, "%zu", na), snprintf(n2, sizeof n2, "%zu", nb);
      ncs_tab_put(t, n1, NULL), ncs_tab_put(t, n2, NULL);
      ncs_tab_put(t, l1, NULL), ncs_tab_put(t, l2, NULL);
      ncs_tab_put(t, b1, NULL), ncs_tab_put(t, b2, NULL);
      ncs_tab_put(t, reg ? "REGRESSION" : verdict, reg ? "regression" : verdict);
      /* the bottleneck: only where it changed, unless --wide (send/receive buckets have none) */
      snprintf(bn, sizeof bn, "%s%s%s", (changed || wide) && !z->p2p ? la : "", changed ? " -> " : "",
               changed ? lb : "");
      ncs_tab_put(t, bn, NULL);
    }
    first = 0;
  }
  if (!json) {
    ncs_tab_view_t tv = {.indent = 2, .width = wide ? 0 : ncs_term_width(STDOUT_FILENO), .wide = wide};
    ncs_tab_print(o, t, &tv);
  }
  ncs_tab_free(t);
  /* per rank: the waiting it caused and suffered, its last arrivals (ranks of both runs, matched
   * by communicator label and rank) */
  if (json) fprintf(o, "],\n\"ranks\":[");
  else fprintf(o, "\nRanks: change from A to B of the mean per instance, with 95%% bootstrap intervals; a "
                  "regression: last arrivals more often beyond chance, and a caused interval above +%g%% of "
                  "A's median latency of the communicator\n", pct);
  t = ncs_tab_new("ranks");
  ncs_tab_col(t, "comm", "comm", NCS_COL_GROUP, 0);
  ncs_tab_col(t, "rank", "rank", NCS_COL_RIGHT | NCS_COL_KEY, 0);
  ncs_tab_col(t, "last% A", "last_pct_a", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "last% B", "last_pct_b", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "caused", "wait_caused_change_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "95% interval", "wait_caused_ci", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "waited", "wait_suffered_change_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "95% interval", "wait_suffered_ci", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "verdict", "verdict", NCS_COL_LEFT, 0);
  int nrk = 0;
  for (uint32_t k = 0; k < A->nranks + B->nranks; k++) {
    const ncs_an_rank_t *r = k < A->nranks ? &A->ranks[k] : &B->ranks[k - A->nranks];
    if (k >= A->nranks && rank_of(A, r->comm, r->rank)) continue; /* listed with A's */
    const ncs_an_rank_t *p = k < A->nranks ? r : NULL, *q = rank_of(B, r->comm, r->rank);
    if (p && q && A->job->comms[p->comm].nranks != B->job->comms[q->comm].nranks) q = NULL;
    const rsamp_t *sp = p ? &ra_[p - A->ranks] : NULL, *sq = q ? &rb_[q - B->ranks] : NULL;
    const char *verdict = !q ? "vanished" : !p ? "new" : sp->n < NCS_DIFF_MIN_N || sq->n < NCS_DIFF_MIN_N ? "too_few" : NULL;
    double cp = 0, cl_ = 0, ch = 0, wp = 0, wl = 0, wh = 0, lp = 0, ll = 0, lh = 0, lpv = 1, yard = 0;
    int reg = 0, last_changed = 0;
    if (!verdict) {
      uint64_t seed = 0x7761697473ull ^ ((uint64_t)k << 32);
      boot_mean(sp->caused, sp->n, sq->caused, sq->n, seed, &cp, &cl_, &ch);
      boot_mean(sp->waited, sp->n, sq->waited, sq->n, seed + 1, &wp, &wl, &wh);
      if (sp->nlast && sq->nlast) boot_mean(sp->last, sp->nlast, sq->last, sq->nlast, seed + 2, &lp, &ll, &lh);
      /* last arrivals: more (fewer) in B than chance given both runs, the straggler test's rule */
      double up = pooled_p(q->last, q->last_trials, p->last, p->last_trials);
      double down = pooled_p(p->last, p->last_trials, q->last, q->last_trials);
      lpv = up < down ? up : down;
      last_changed = sp->nlast && sq->nlast && lpv <= NCS_DIFF_ALPHA;
      yard = comm_median(A, sa, p->comm) * pct / 100;
      /* A rank's waits follow the ranks' run-ahead from one instance to the next (a rank that
       * enqueues ahead waits in many instances in a row): the instances are not independent, the
       * interval is too narrow, and two healthy runs of different seeds differ beyond it. So a
       * rank is a regression only when it also arrived last more often than chance given both
       * runs (the straggler test's rule), and the waiting it caused rose beyond the yardstick */
      reg = yard > 0 && up <= NCS_DIFF_ALPHA && sp->nlast && sq->nlast && cl_ > yard;
      /* no change only where both intervals lie within the yardstick either way */
      verdict = reg                          ? "regression"
                : cl_ > 0 || wl > 0          ? "more"
                : ch < 0 || wh < 0           ? "less"
                : yard > 0 && cl_ >= -yard && ch <= yard && wl >= -yard && wh <= yard ? "no_change"
                                                                                       : "cannot_tell";
      regressions += reg;
    }
    const ncs_an_rank_t *z = p ? p : q;
    const ncs_analysis_t *zr = p ? A : B;
    double pa = p && p->last_trials ? 100.0 * (double)p->last / (double)p->last_trials : -1;
    double pb = q && q->last_trials ? 100.0 * (double)q->last / (double)q->last_trials : -1;
    int cmp_ = strcmp(verdict, "vanished") && strcmp(verdict, "new") && strcmp(verdict, "too_few");
    if (json) {
      fprintf(o, "%s\n{\"comm\":%u,\"comm_label\":\"c%u\",\"rank\":%d,\"n_a\":%zu,\"n_b\":%zu,\"verdict\":\"%s\","
                 "\"regression\":%s",
              nrk ? "," : "", z->comm, z->comm, z->rank, sp ? sp->n : 0, sq ? sq->n : 0, verdict,
              reg ? "true" : "false");
      if (p)
        fprintf(o, ",\"last_a\":%" PRIu64 ",\"last_trials_a\":%" PRIu64 ",\"wait_caused_a_ns\":%.0f,"
                   "\"wait_suffered_a_ns\":%.0f",
                p->last, p->last_trials, sp->n ? mean(sp->caused, sp->n) : 0, sp->n ? mean(sp->waited, sp->n) : 0);
      if (q)
        fprintf(o, ",\"last_b\":%" PRIu64 ",\"last_trials_b\":%" PRIu64 ",\"wait_caused_b_ns\":%.0f,"
                   "\"wait_suffered_b_ns\":%.0f",
                q->last, q->last_trials, sq->n ? mean(sq->caused, sq->n) : 0, sq->n ? mean(sq->waited, sq->n) : 0);
      if (cmp_)
        fprintf(o, ",\"wait_caused_change_ns\":%.0f,\"wait_caused_ci\":[%.0f,%.0f],\"wait_suffered_change_ns\":%.0f,"
                   "\"wait_suffered_ci\":[%.0f,%.0f],\"last_share_change\":%.4f,\"last_share_ci\":[%.4f,%.4f],"
                   "\"last_p_value\":%.3g,\"last_changed\":%s,\"threshold_ns\":%.0f",
                cp, cl_, ch, wp, wl, wh, lp, ll, lh, lpv, last_changed ? "true" : "false", yard);
      fputc('}', o);
    } else {
      char cl[16], rk[16], a1[24] = "-", a2[24] = "-", c1[32] = "-", c2[64] = "-", w1[32] = "-", w2[64] = "-";
      ncs_fmt_comm_label(cl, sizeof cl, z->comm);
      snprintf(rk, sizeof rk, "%d", z->rank);
      if (pa >= 0) snprintf(a1, sizeof a1, "%.0f%%", pa);
      if (pb >= 0) snprintf(a2, sizeof a2, "%.0f%%%s", pb, last_changed ? "*" : "");
      if (cmp_) {
        char u[3][24];
        ncs_fmt_ns(u[0], sizeof u[0], fabs(cp)), ncs_fmt_ns(u[1], sizeof u[1], fabs(cl_)),
            ncs_fmt_ns(u[2], sizeof u[2], fabs(ch));
        snprintf(c1, sizeof c1, "%s%s", cp < 0 ? "-" : "+", u[0]);
        snprintf(c2, sizeof c2, "[%s%s, %s%s]", cl_ < 0 ? "-" : "+", u[1], ch < 0 ? "-" : "+", u[2]);
        ncs_fmt_ns(u[0], sizeof u[0], fabs(wp)), ncs_fmt_ns(u[1], sizeof u[1], fabs(wl)),
            ncs_fmt_ns(u[2], sizeof u[2], fabs(wh));
        snprintf(w1, sizeof w1, "%s%s", wp < 0 ? "-" : "+", u[0]);
        snprintf(w2, sizeof w2, "[%s%s, %s%s]", wl < 0 ? "-" : "+", u[1], wh < 0 ? "-" : "+", u[2]);
      }
      ncs_tab_row(t);
      ncs_tab_put(t, cl, NULL), ncs_tab_put(t, rk, NULL), ncs_tab_put(t, a1, NULL), ncs_tab_put(t, a2, NULL);
      ncs_tab_put(t, c1, NULL), ncs_tab_put(t, c2, NULL), ncs_tab_put(t, w1, NULL), ncs_tab_put(t, w2, NULL);
      ncs_tab_put(t, reg ? "REGRESSION" : verdict, verdict);
    }
    (void)zr;
    nrk++;
  }
  if (!json) {
    ncs_tab_view_t tv = {.indent = 2, .width = wide ? 0 : ncs_term_width(STDOUT_FILENO), .wide = wide};
    ncs_tab_print(o, t, &tv);
    fprintf(o, "  caused: the waiting of the others it caused, waited: its own, per instance (the "
               "report's \"Ranks by waiting caused\" over its instances); * last arrivals changed "
               "beyond chance (p <= %g)\n", NCS_DIFF_ALPHA);
  }
  ncs_tab_free(t);
  /* the headline findings (stragglers, slow ranks, ...) of each run, by kind and rank */
  if (json) fprintf(o, "],\n\"findings\":[");
  else fprintf(o, "\nFindings (the report's) that appeared or vanished\n");
  int nf = 0;
  for (int side = 0; side < 2; side++) {
    const who_t *w = side ? wa : wb, *other = side ? wb : wa;
    size_t n = side ? nwa : nwb, no = side ? nwb : nwa;
    for (size_t i = 0; i < n; i++) {
      if (has_who(other, no, &w[i])) continue;
      const char *what = kind_name(w[i].kind);
      const char *ch = !who_changed(side ? A : B, side ? B : A, &w[i]) ? "not_significant"
                       : side                                           ? "vanished"
                                                                        : "new";
      /* a finding about a rank that appears in B is a regression (a straggler, a stall, ...) */
      int reg = !side && w[i].rank >= 0 && !strcmp(ch, "new");
      regressions += reg;
      if (json) {
        fprintf(o, "%s{\"change\":\"%s\",\"kind\":\"%s\",", nf ? "," : "", ch, what);
        if (w[i].rank >= 0) fprintf(o, "\"comm\":%u,\"comm_label\":\"c%u\",\"rank\":%d,", w[i].comm, w[i].comm, w[i].rank);
        else fprintf(o, "\"comm\":null,\"comm_label\":null,\"rank\":null,");
        fprintf(o, "\"run\":\"%s\",\"regression\":%s}", side ? "a" : "b", reg ? "true" : "false");
      } else {
        char who[64] = "the job";
        if (w[i].rank >= 0) snprintf(who, sizeof who, "c%u rank %d", w[i].comm, w[i].rank);
        if (*ch == 'n' && ch[1] == 'o')
          fprintf(o, "  - %s: %s, a finding of run %s only, but no significant change between the runs\n",
                  what, who, side ? "A" : "B");
        else
          fprintf(o, "  - %s %s: %s%s\n", ch, what, who, reg ? " (REGRESSION)" : "");
      }
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
  free(sa), free(sb), free(rows);
  rank_samples_free(ra_, A->nranks), rank_samples_free(rb_, B->nranks);
  ncs_findings_free(&fa), ncs_findings_free(&fb);
  ncs_analysis_free(A), ncs_analysis_free(B);
  if (fflush(o) != 0 || ferror(o)) return NCS_EXIT_OUTPUT;
  return regressions ? NCS_EXIT_FOUND : damaged ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
}
