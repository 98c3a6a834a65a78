/* num.c - sorting and order statistics (num.h). */
#include "util/num.h"

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
