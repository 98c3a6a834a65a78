/* test_quantile.c - src/analyze/quantile.h on plain inputs: nearest-rank quantiles, order
 * statistics, and the median's distribution-free 95% interval against the binomial table. */
#include <math.h>
#include <stdio.h>

#include "analyze/quantile.h"

#include "check.h"

/* 1..n, added in a scrambled order */
static void fill(qs_t *q, unsigned n) {
  for (unsigned i = 0; i < n; i++) qs_add(q, (double)((i * 7919u) % n + 1));
  qs_sort(q);
}

int main(void) {
  double lo = -1, hi = -1;
  for (unsigned n = 1; n <= 5; n++) { /* 2 / 2^n > 5%: no 95% interval exists */
    qs_t q = {0};
    fill(&q, n);
    CHECK(!qs_median_ci(&q, &lo, &hi));
    qs_free(&q);
  }
  /* the order statistics (k, n + 1 - k) of the usual table: n 6 -> 1, 10 -> 2, 20 -> 6, 100 -> 40 */
  static const unsigned tab[][2] = {{6, 1}, {8, 1}, {9, 2}, {10, 2}, {20, 6}, {30, 10}, {100, 40}};
  for (size_t t = 0; t < sizeof tab / sizeof *tab; t++) {
    qs_t q = {0};
    fill(&q, tab[t][0]);
    CHECK(qs_median_ci(&q, &lo, &hi));
    if (lo != (double)tab[t][1] || hi != (double)(tab[t][0] + 1 - tab[t][1]))
      fprintf(stderr, "n %u: [%g, %g], expected [%u, %u]\n", tab[t][0], lo, hi, tab[t][1],
              tab[t][0] + 1 - tab[t][1]),
          fails++;
    CHECK(lo <= qs_q(&q, .5) && qs_q(&q, .5) <= hi);
    qs_free(&q);
  }
  /* past the exact samples: from the sketch, within its relative error of n/2 -+ 0.98 sqrt(n) */
  {
    qs_t q = {0};
    unsigned n = 20000;
    fill(&q, n);
    CHECK(qs_sketched(&q));
    CHECK(qs_median_ci(&q, &lo, &hi));
    double k = n / 2.0 - 1.959964 * sqrt((double)n) / 2;
    CHECK(fabs(lo - k) <= k * 0.011 + 1 && fabs(hi - (n + 1 - k)) <= (n + 1 - k) * 0.011 + 1);
    qs_free(&q);
  }
  /* qs_kth clamps its rank */
  {
    qs_t q = {0};
    fill(&q, 10);
    CHECK(qs_kth(&q, 0) == 1 && qs_kth(&q, 1) == 1 && qs_kth(&q, 10) == 10 && qs_kth(&q, 11) == 10);
    qs_free(&q);
  }
  if (fails) return 1;
  printf("test_quantile: ok\n");
  return 0;
}
