/* num.c - sorting and order statistics (num.h). */
#include "util/num.h"

#include <math.h>
#include <stdlib.h>

void ncs_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, size, cmp);
}

int ncs_cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}
int ncs_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
int ncs_cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

size_t ncs_nrank(size_t n, double q) {
  size_t k = (size_t)(q * (double)n);
  if ((double)k < q * (double)n) k++; /* ceil */
  if (k > n) k = n;
  return k ? k : 1;
}

int64_t ncs_qi64(const int64_t *v, size_t n, double q) { return n ? v[ncs_nrank(n, q) - 1] : 0; }

/* the continued fraction of the incomplete beta function (modified Lentz), x < (a+1)/(a+b+2) */
static double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; m++) {
    double m2 = 2.0 * m, aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d, c = 1 + aa / c;
    d = fabs(d) < tiny ? 1 / tiny : 1 / d, c = fabs(c) < tiny ? tiny : c;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d, c = 1 + aa / c;
    d = fabs(d) < tiny ? 1 / tiny : 1 / d, c = fabs(c) < tiny ? tiny : c;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-15) break;
  }
  return h;
}

/* I_x(a, b), the regularized incomplete beta function */
static double beta_inc(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return exp(lbt) * beta_cf(a, b, x) / a;
  return 1 - exp(lbt) * beta_cf(b, a, 1 - x) / b;
}

double ncs_binom_sf(uint64_t k, uint64_t n, double p) {
  if (k == 0) return 1;
  if (k > n) return 0;
  return beta_inc((double)k, (double)(n - k + 1), p);
}
