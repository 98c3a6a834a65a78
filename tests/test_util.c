/* test_util.c - the read side's shared helpers (src/util): the string pool, the formatters,
 * growable arrays and order statistics. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/fmt.h"
#include "util/hmap.h"
#include "util/mem.h"
#include "util/num.h"
#include "util/pool.h"
#include "util/text.h"

#include "check.h"

static int same(const char *a, const char *b) { return !strcmp(a, b); }

static void pool(void) {
  ncs_pool_t p = {0};
  const char *a = ncs_pool_str(&p, "AllReduce"), *b = ncs_pool_strn(&p, "AllReduce!", 9);
  CHECK(a == b && same(a, "AllReduce"));
  CHECK(ncs_pool_str(&p, "AllGather") != a && ncs_pool_str(&p, NULL) == NULL);
  CHECK(ncs_pool_fmt(&p, "comm %d", 3) == ncs_pool_str(&p, "comm 3"));
  char big[200000];
  memset(big, 'x', sizeof big - 1), big[sizeof big - 1] = 0; /* larger than a block */
  const char *c = ncs_pool_str(&p, big);
  CHECK(strlen(c) == sizeof big - 1 && ncs_pool_str(&p, big) == c);
  for (int i = 0; i < 20000; i++) { /* many blocks, the map grows: every string stays put */
    char s[32];
    snprintf(s, sizeof s, "s%d", i);
    const char *x = ncs_pool_str(&p, s);
    CHECK(same(x, s));
  }
  CHECK(a == ncs_pool_str(&p, "AllReduce") && same(a, "AllReduce"));
  ncs_pool_free(&p);
}

static void fmt(void) {
  char b[32];
  ncs_fmt_ns(b, sizeof b, 1.5e9);
  CHECK(same(b, "1.50 s"));
  ncs_fmt_ns(b, sizeof b, 15.3e6);
  CHECK(same(b, "15.30 ms"));
  ncs_fmt_ns(b, sizeof b, 12345);
  CHECK(same(b, "12.3 us"));
  ncs_fmt_ns(b, sizeof b, 850);
  CHECK(same(b, "850 ns"));
  ncs_fmt_ns(b, sizeof b, -2e6);
  CHECK(same(b, "-2.00 ms"));
  ncs_fmt_dur(b, sizeof b, 1e6, NCS_DUR_SHORT);
  CHECK(same(b, "1 ms"));
  ncs_fmt_dur(b, sizeof b, 200, NCS_DUR_SHORT);
  CHECK(same(b, "200 ns"));
  ncs_fmt_bytes(b, sizeof b, -1);
  CHECK(same(b, "0 B"));
  ncs_fmt_bytes(b, sizeof b, 18);
  CHECK(same(b, "256 KiB"));
  ncs_fmt_bytes(b, sizeof b, 60);
  CHECK(same(b, "1048576 TiB"));
  ncs_fmt_size(b, sizeof b, 512);
  CHECK(same(b, "512 B"));
  ncs_fmt_size(b, sizeof b, 3u << 29);
  CHECK(same(b, "1.5 GiB"));
  CHECK(ncs_pct(1, 4) == 25.0 && ncs_pct(1, 0) == 0);
}

static void arrays(void) {
  int *a = NULL;
  size_t cap = 0;
  CHECK(NCS_GROW(a, cap, 5) == 0 && cap == 16 && a[15] == 0);
  a[3] = 7;
  NCS_XGROW(a, cap, 100);
  CHECK(cap == 128 && a[3] == 7 && a[127] == 0);
  free(a);
  int64_t v[] = {5, 1, 4, 2, 3};
  ncs_sort(v, 5, sizeof v[0], ncs_cmp_i64);
  CHECK(v[0] == 1 && v[4] == 5);
  CHECK(ncs_qi64(v, 5, 0.5) == 3 && ncs_qi64(v, 5, 0.99) == 5 && ncs_qi64(v, 5, 0) == 1);
  CHECK(ncs_qi64(NULL, 0, 0.5) == 0);
  ncs_sort(NULL, 0, 8, ncs_cmp_i64);
  hmap_t m = {0};
  for (uint64_t k = 0; k < 1000; k++) CHECK(hm_put(&m, k * 7919, k) == 0);
  for (uint64_t k = 0; k < 1000; k += 2) CHECK(hm_del(&m, k * 7919));
  uint64_t x;
  CHECK(hm_get(&m, 999 * 7919, &x) && x == 999 && !hm_get(&m, 998 * 7919, &x) && m.n == 500);
  hm_free(&m);
  CHECK(hm_bytes("a", 1, NCS_HM_FNV0) != hm_bytes("b", 1, NCS_HM_FNV0));
}

/* P(X >= k) by summing the terms, for small n */
static double sf_sum(uint64_t k, uint64_t n, double p) {
  double s = 0;
  for (uint64_t i = k; i <= n; i++)
    s += exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) +
             (double)i * log(p) + (double)(n - i) * log1p(-p));
  return s;
}

static void binom(void) {
  static const uint64_t ns[] = {1, 2, 7, 20, 99, 300};
  static const double ps[] = {0.5, 0.125, 1.0 / 16, 0.01};
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t b = 0; b < sizeof ps / sizeof ps[0]; b++)
      for (uint64_t k = 0; k <= ns[a]; k++) {
        double want = k ? sf_sum(k, ns[a], ps[b]) : 1, got = ncs_binom_sf(k, ns[a], ps[b]);
        double tol = 1e-9 + 1e-6 * want;
        if (fabs(got - want) > tol) {
          fprintf(stderr, "binom_sf(%llu, %llu, %g) = %g, want %g\n", (unsigned long long)k,
                  (unsigned long long)ns[a], ps[b], got, want);
          fails++;
        }
      }
  /* the demo's headline: 20% of 99 with chance 1/8 is not significant; 45% of 99 is */
  CHECK(ncs_binom_sf(20, 99, 0.125) > 0.01 && ncs_binom_sf(45, 99, 0.125) < 1e-12);
  CHECK(ncs_binom_sf(5, 4, 0.5) == 0 && ncs_binom_sf(1000000, 1000000, 0.5) < 1e-300);
}

/* what fn wrote to a FILE, as a string (free it) */
static char *capture(void (*fn)(FILE *, void *), void *arg) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  fn(m, arg);
  fclose(m);
  return buf;
}

static int widest(const char *s) {
  int w = 0, c = 0;
  for (; *s; s++) {
    if (*s == '\n') c = 0;
    else if (++c > w) w = c;
  }
  return w;
}

static void wrap_40(FILE *o, void *arg) { ncs_wrap(o, "  - ", "    ", arg, 40); }
static void fit_40(FILE *o, void *arg) { ncs_fit(o, arg, strlen(arg), 40, 4); }

typedef struct {
  ncs_tab_t *t;
  ncs_tab_view_t v;
} tv_t;
static void tab_print(FILE *o, void *arg) {
  tv_t *x = arg;
  ncs_tab_print(o, x->t, &x->v);
}
static void tab_csv(FILE *o, void *arg) { ncs_tab_csv(o, arg, 0); }

/* the verbs' terminal text (src/util/text.c, docs/cli.md "Terminal output") */
static void text(void) {
  CHECK(ncs_text_width("\033[1mab\033[0m") == 2 && ncs_text_width("\xc3\xa9t\xc3\xa9") == 3);
  /* wrapping: at word boundaries, never wider than asked, a number keeps its unit */
  char *w = capture(wrap_40, "rank 2 arrived last in 73% of 100 collectives; the others waited 789.49 ms for "
                             "it in total, a supercalifragilisticexpialidocious-long-word too");
  CHECK(strstr(w, "789.49 ms") != NULL && strstr(w, "\n    ") != NULL);
  CHECK(!strncmp(w, "  - rank 2", 10));
  for (char *l = strtok(w, "\n"); l; l = strtok(NULL, "\n"))
    CHECK(strlen(l) <= 40 || strstr(l, "supercali") != NULL); /* only the unbreakable word */
  free(w);
  /* fitting: a line that fits stays as it is, a wider one wraps under its marker */
  w = capture(fit_40, "short line\nHANG   rank 2 never entered AllReduce #15 of communicator c0 and more\n");
  CHECK(!strncmp(w, "short line\nHANG   rank 2", 24) && widest(w) <= 40 && strstr(w, "\n       #15") != NULL);
  free(w);
  /* a table: widths from the cells, right-aligned numbers, --top with "N more rows" */
  ncs_tab_t *t = ncs_tab_new("ranks");
  ncs_tab_col(t, "comm", "comm", NCS_COL_KEY | NCS_COL_ASC, 0);
  ncs_tab_col(t, "rank", "rank", NCS_COL_RIGHT | NCS_COL_ASC, 0);
  ncs_tab_col(t, "waited", "waited_ns", NCS_COL_RIGHT, 0);
  ncs_tab_col(t, "note", "note", NCS_COL_TEXT, 0);
  static const double wait[] = {5e6, 9e6, 1e6};
  for (int r = 0; r < 3; r++) {
    char rk[8];
    ncs_tab_row(t);
    ncs_tab_put(t, "c0", NULL);
    snprintf(rk, sizeof rk, "%d", r);
    ncs_tab_put(t, rk, NULL);
    char d[32];
    ncs_fmt_ns(d, sizeof d, wait[r]);
    ncs_tab_num(t, d, wait[r]);
    ncs_tab_put(t, r == 1 ? "a note long enough to be wrapped under its column, many words" : "", NULL);
  }
  tv_t x = {t, {.indent = 2, .width = 40, .top = 2, .more = "--top N"}};
  w = capture(tab_print, &x);
  CHECK(strstr(w, "  comm rank  waited  note\n") == w && strstr(w, "\n  c0      0 5.00 ms\n") != NULL);
  CHECK(strstr(w, "\n  c0      1 9.00 ms  a note long enough\n                     to be") != NULL);
  CHECK(strstr(w, "... 1 more row (--top N)") != NULL && widest(w) <= 40);
  free(w);
  /* sorting: numbers largest first, stable; CSV: raw values, quoted when they must be */
  CHECK(ncs_tab_sort(t, "waited_ns") == 0 && ncs_tab_sort(t, "nosuch") == -1);
  w = capture(tab_csv, t);
  CHECK(!strcmp(w, "comm,rank,waited_ns,note\nc0,1,9000000,\"a note long enough to be wrapped under its column, many "
                   "words\"\nc0,0,5000000,\nc0,2,1000000,\n"));
  free(w);
  char keys[128];
  ncs_tab_keys(t, keys, sizeof keys);
  CHECK(same(keys, "comm,rank,waited_ns,note") && ncs_tab_has_key(t, "rank"));
  ncs_tab_free(t);
  /* folding: columns wider than the width go in blocks, each with the key column */
  t = ncs_tab_new("wide");
  ncs_tab_col(t, "rank", "rank", NCS_COL_KEY, 0);
  for (int c = 0; c < 6; c++) {
    char h[16];
    snprintf(h, sizeof h, "function%d", c);
    ncs_tab_col(t, h, h, NCS_COL_LEFT, 0);
  }
  ncs_tab_row(t);
  ncs_tab_put(t, "0", NULL);
  for (int c = 0; c < 6; c++) ncs_tab_put(t, "15/14", NULL);
  x = (tv_t){t, {.indent = 2, .width = 40}};
  w = capture(tab_print, &x);
  CHECK(widest(w) <= 40 && strstr(w, "function5") != NULL);
  int blocks = 0;
  for (char *p = w; (p = strstr(p, "  rank")); p++) blocks++;
  CHECK(blocks >= 2);
  free(w);
  ncs_tab_free(t);
}

/* ncs_json_escape: one rule for every JSON output (fmt.h) */
typedef struct {
  char b[256];
  size_t n, calls;
} jbuf_t;
static void jput(void *ctx, const char *p, size_t n) {
  jbuf_t *j = ctx;
  if (j->n + n < sizeof j->b) memcpy(j->b + j->n, p, n), j->n += n, j->b[j->n] = 0;
  j->calls++;
}
static const char *jesc(jbuf_t *j, const char *s) {
  j->n = j->calls = 0, j->b[0] = 0;
  ncs_json_escape(s, jput, j);
  return j->b;
}
static void json(void) {
  jbuf_t j;
  CHECK(same(jesc(&j, "plain text"), "plain text") && j.calls == 1); /* one run */
  CHECK(same(jesc(&j, ""), "") && j.calls == 0);
  CHECK(same(jesc(&j, NULL), ""));
  CHECK(same(jesc(&j, "a \"q\" b\\c"), "a \\\"q\\\" b\\\\c"));
  CHECK(same(jesc(&j, "x\ny\t\x1b[31m\x7f"), "x\\u000ay\\u0009\\u001b[31m\\u007f"));
  /* valid UTF-8 as it is: 2, 3 and 4 bytes */
  CHECK(same(jesc(&j, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  /* not UTF-8: a stray continuation, 0xFF, an overlong form, a surrogate, a cut sequence */
  CHECK(same(jesc(&j, "a\x80" "b"), "a\\ufffdb"));
  CHECK(same(jesc(&j, "\xff"), "\\ufffd"));
  CHECK(same(jesc(&j, "\xc0\x80"), "\\ufffd\\ufffd"));
  CHECK(same(jesc(&j, "\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd"));
  CHECK(same(jesc(&j, "\xe2\x82"), "\\ufffd\\ufffd"));
  CHECK(same(jesc(&j, "\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd")); /* past U+10FFFF */
}

int main(void) {
  pool(), fmt(), arrays(), binom(), text(), json();
  if (fails) return 1;
  printf("test_util: ok\n");
  return 0;
}
