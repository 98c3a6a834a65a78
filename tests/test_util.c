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

static int fails;
#define CHECK(c)                                                                                  \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                       \
      fails++;                                                                                    \
    }                                                                                             \
  } while (0)

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

int main(void) {
  pool(), fmt(), arrays(), binom();
  if (fails) return 1;
  printf("test_util: ok\n");
  return 0;
}
