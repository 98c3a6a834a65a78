/* num.h - sorting and order statistics of the read side (ncs_util). */
#ifndef NCS_UTIL_NUM_H
#define NCS_UTIL_NUM_H

#include <stddef.h>
#include <stdint.h>

/* qsort that accepts an empty array given as NULL (qsort's pointer must not be, even for 0) */
void ncs_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
int ncs_cmp_i64(const void *a, const void *b);
int ncs_cmp_u64(const void *a, const void *b);
int ncs_cmp_dbl(const void *a, const void *b);
/* nearest rank: the 1-based position ceil(q*n), within [1, n] */
size_t ncs_nrank(size_t n, double q);
/* the nearest-rank quantile of a sorted array; 0 for an empty one */
int64_t ncs_qi64(const int64_t *v, size_t n, double q);

/* P(X >= k) for X ~ Binomial(n, p): the one-sided p-value of seeing k or more successes in n
 * trials of chance p (the regularized incomplete beta I_p(k, n - k + 1)); 1 for k 0 */
double ncs_binom_sf(uint64_t k, uint64_t n, double p);

#endif
