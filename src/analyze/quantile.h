/* quantile.h - quantiles of one series of the report in bounded memory (docs/report.md,
 * "Aggregates"): exact samples up to NCS_AN_EXACT_MAX, then a log-scale sketch. */
#ifndef NCS_ANALYZE_QUANTILE_H
#define NCS_ANALYZE_QUANTILE_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/analyze.h"

/* Quantiles of one series: exact samples up to NCS_AN_EXACT_MAX, then a log-scale histogram
 * (bins of ratio QS_GAMMA, the value of a bin its midpoint in relative terms: relative error at
 * most NCS_AN_SKETCH_ERR) plus exact min and max. Values below QS_TINY count as 0. */
#define QS_GAMMA ((1.0 + NCS_AN_SKETCH_ERR) / (1.0 - NCS_AN_SKETCH_ERR))
#define QS_TINY 1e-9
typedef struct {
  double *v;
  size_t n, cap;
  uint64_t *bin; /* sketch: counts of bins lo .. lo + nbin - 1 */
  int32_t lo;
  uint32_t nbin;
  uint64_t zeros, total;
  double min, max;
} qs_t;

void qs_add(qs_t *q, double x);
void qs_sort(qs_t *q);                /* before qs_q */
double qs_q(const qs_t *q, double p); /* nearest-rank quantile */
double qs_kth(const qs_t *q, uint64_t k); /* the k-th smallest, 1-based */
/* a 95% interval of the median, distribution-free (order statistics): 0 with under 6 samples */
int qs_median_ci(const qs_t *q, double *lo, double *hi);
int qs_sketched(const qs_t *q);       /* 1: beyond NCS_AN_EXACT_MAX samples, from the sketch */
void qs_free(qs_t *q);

#endif
