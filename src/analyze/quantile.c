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
  size_t k = ncs_nrank((size_t)q->total, p);
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

