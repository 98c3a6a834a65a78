/* quantile.c - exact samples, then a log-scale sketch (quantile.h). */
#include "analyze/quantile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"
#include "util/num.h"

static int32_t qs_index(double x) { return (int32_t)ceil(log(x) / log(QS_GAMMA)); }
/* the bin (g^(i-1), g^i]'s value: 2 g^i / (g + 1), within NCS_AN_SKETCH_ERR of all of it */
static double qs_value(int32_t i) { return 2.0 * pow(QS_GAMMA, i) / (QS_GAMMA + 1.0); }

static void qs_sketch(qs_t *q, double x) {
  if (!(x >= QS_TINY)) {
    q->zeros++;
    return;
  }
  int32_t i = qs_index(x);
  if (!q->nbin) {
    q->bin = ncs_xrealloc(NULL, sizeof *q->bin), q->bin[0] = 0, q->lo = i, q->nbin = 1;
  } else if (i < q->lo || i >= q->lo + (int32_t)q->nbin) {
    int32_t lo = i < q->lo ? i : q->lo, hi = i >= q->lo + (int32_t)q->nbin ? i + 1 : q->lo + (int32_t)q->nbin;
    uint64_t *b = ncs_xcalloc((size_t)(hi - lo), sizeof *b);
    memcpy(b + (q->lo - lo), q->bin, q->nbin * sizeof *b);
    free(q->bin);
    q->bin = b, q->lo = lo, q->nbin = (uint32_t)(hi - lo);
  }
  q->bin[i - q->lo]++;
}

void qs_add(qs_t *q, double x) {
  if (!q->total || x < q->min) q->min = x;
  if (!q->total || x > q->max) q->max = x;
  q->total++;
  if (q->nbin || q->zeros) { /* sketching already */
    qs_sketch(q, x);
    return;
  }
  if (q->n < NCS_AN_EXACT_MAX) {
    NCS_XGROW(q->v, q->cap, q->n + 1);
    q->v[q->n++] = x;
    return;
  }
  for (size_t k = 0; k < q->n; k++) qs_sketch(q, q->v[k]); /* switch to the sketch */
  free(q->v), q->v = NULL, q->n = q->cap = 0;
  qs_sketch(q, x);
}

int qs_sketched(const qs_t *q) { return q->nbin || q->zeros; }

/* nearest-rank quantile; call qs_sort first */
double qs_q(const qs_t *q, double p) {
  if (!q->total) return 0;
  return qs_kth(q, ncs_nrank((size_t)q->total, p));
}

/* the k-th smallest (1-based; exact samples, or the sketch's bin holding it) */
double qs_kth(const qs_t *q, uint64_t k) {
  if (!q->total) return 0;
  if (k < 1) k = 1;
  if (k > q->total) k = q->total;
  if (!qs_sketched(q)) return q->v[k - 1];
  double x = q->max;
  if (k <= q->zeros) {
    x = 0;
  } else {
    uint64_t c = q->zeros;
    for (uint32_t b = 0; b < q->nbin; b++)
      if ((c += q->bin[b]) >= k) {
        x = qs_value(q->lo + (int32_t)b);
        break;
      }
  }
  return x < q->min ? q->min : x > q->max ? q->max : x;
}
void qs_sort(qs_t *q) { ncs_sort(q->v, q->n, sizeof *q->v, ncs_cmp_dbl); }
void qs_free(qs_t *q) { free(q->v), free(q->bin); }


/* The distribution-free interval of the median: with n samples, the k-th smallest and k-th largest
 * bound the median with probability 1 - 2 P(Bin(n, 1/2) < k); k is the largest whose probability
 * is at least 95%. Under 6 samples no such k exists. */
int qs_median_ci(const qs_t *q, double *lo, double *hi) {
  uint64_t n = q->total, k = 0;
  if (n < 6) return 0;
  if (n <= 100000) {
    double lp = -(double)n * log(2.0), cdf = 0; /* log P(X = j), j = 0; P(X < j + 1) */
    for (uint64_t j = 0; j < n; j++) {
      cdf += exp(lp);
      if (2 * cdf > 0.05) break; /* P(X <= j) too large: k = j */
      k = j + 1;
      lp += log((double)(n - j)) - log((double)(j + 1));
    }
  } else { /* normal approximation */
    double c = (double)n / 2 - 1.959964 * sqrt((double)n) / 2;
    k = c < 1 ? 0 : (uint64_t)c;
  }
  if (k < 1) return 0;
  *lo = qs_kth(q, k), *hi = qs_kth(q, n + 1 - k);
  return 1;
}
