/* rangestat.c - what a user range held (rangestat.h). */
#include "trace/rangestat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace/range.h"

typedef struct {
  uint64_t a, b;
} ivl_t;

static int cmp_ivl(const void *x, const void *y) {
  const ivl_t *p = x, *q = y;
  return p->a < q->a ? -1 : p->a > q->a;
}

/* Length of the union of n intervals (sorted in place). */
static uint64_t union_ns(ivl_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_ivl);
  uint64_t total = 0, lo = 0, hi = 0;
  for (size_t i = 0; i < n; i++) {
    if (!i || v[i].a > hi) {
      total += hi - lo;
      lo = v[i].a, hi = v[i].b;
    } else if (v[i].b > hi) {
      hi = v[i].b;
    }
  }
  return n ? total + hi - lo : 0;
}

/* operations sorted by (thread, call time): a push/pop range's are one slice */
static int cmp_op(const void *x, const void *y, void *ctx) {
  const ncs_rs_op_t *ops = ctx, *p = &ops[*(const size_t *)x], *q = &ops[*(const size_t *)y];
  if (p->thread != q->thread) return p->thread < q->thread ? -1 : 1;
  return p->api_ns < q->api_ns ? -1 : p->api_ns > q->api_ns;
}

/* first index in order[] whose op is at (thread, t) or after */
static size_t lower(const ncs_rs_op_t *ops, const size_t *order, size_t n, uint32_t thread, uint64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const ncs_rs_op_t *o = &ops[order[mid]];
    if (o->thread < thread || (o->thread == thread && o->api_ns < t))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void add_op(ncs_rs_stat_t *s, const ncs_rs_op_t *o, ivl_t *comm, size_t *nc) {
  if (o->p2p)
    s->p2ps++;
  else
    s->colls++;
  s->bytes += o->bytes;
  s->bus_bytes += o->bus_bytes;
  if (o->gpu_start && o->gpu_end >= o->gpu_start)
    comm[(*nc)++] = (ivl_t){o->gpu_start, o->gpu_end};
  else
    s->ops_without_gpu++;
}

/* ranges sorted by id, to find a kernel's range and a range's parent */
static int cmp_id(const void *x, const void *y, void *ctx) {
  const ncs_rs_range_t *r = ctx;
  uint64_t a = r[*(const size_t *)x].id, b = r[*(const size_t *)y].id;
  return a < b ? -1 : a > b;
}

/* index of range id in r[], or -1 */
static long find(const ncs_rs_range_t *r, const size_t *byid, size_t n, uint64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[byid[mid]].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && r[byid[lo]].id == id ? (long)byid[lo] : -1;
}

int ncs_rs_compute(const ncs_rs_range_t *r, size_t nr, const ncs_rs_op_t *ops, size_t nops,
                   const ncs_rs_kernel_t *k, size_t nk, int have_kernels, uint64_t covered_from,
                   ncs_rs_stat_t *out) {
  size_t *order = malloc((nops ? nops : 1) * sizeof *order), *byid = malloc((nr ? nr : 1) * sizeof *byid);
  ivl_t *comm = malloc((nops ? nops : 1) * sizeof *comm);
  /* the kernels of each range, its inner ranges' included: (range, kernel) pairs, grouped by range
   * (kcount[i] .. kcount[i + 1] in kidx) */
  size_t *kcount = calloc(nr + 1, sizeof *kcount), *kidx = NULL;
  ivl_t *busy = NULL;
  int rc = -1;
  if (!order || !byid || !comm || !kcount) goto out;
  for (size_t i = 0; i < nops; i++) order[i] = i;
  qsort_r(order, nops, sizeof *order, cmp_op, (void *)ops);
  for (size_t i = 0; i < nr; i++) byid[i] = i;
  qsort_r(byid, nr, sizeof *byid, cmp_id, (void *)r);
  size_t pairs = 0;
  for (int pass = 0; pass < 2; pass++) { /* count, then fill */
    if (pass) {
      for (size_t i = 0; i < nr; i++) kcount[i + 1] += kcount[i];
      kidx = malloc((pairs ? pairs : 1) * sizeof *kidx);
      if (!kidx) goto out;
    }
    size_t *fill = pass ? calloc(nr ? nr : 1, sizeof *fill) : NULL;
    if (pass && !fill) goto out;
    for (size_t j = 0; j < nk; j++) {
      long at = k[j].range ? find(r, byid, nr, k[j].range) : -1;
      for (size_t hops = 0; at >= 0 && hops <= nr; hops++) {
        if (!pass) kcount[at + 1]++, pairs++;
        else kidx[kcount[at] + fill[at]++] = j;
        at = r[at].parent ? find(r, byid, nr, r[at].parent) : -1;
      }
    }
    free(fill);
  }
  busy = malloc((nops + pairs ? nops + pairs : 1) * sizeof *busy);
  if (!busy) goto out;
  for (size_t i = 0; i < nr; i++) {
    ncs_rs_stat_t *s = &out[i];
    memset(s, 0, sizeof *s);
    if (!r[i].end_ns || r[i].end_ns < r[i].begin_ns) {
      s->flags = NCS_RS_NO_END;
      continue;
    }
    s->wall_ns = r[i].end_ns - r[i].begin_ns;
    if (r[i].begin_ns < covered_from) s->flags |= NCS_RS_PARTIAL;
    size_t nc = 0;
    if (r[i].startend) {
      for (size_t j = 0; j < nops; j++)
        if (ops[j].api_ns >= r[i].begin_ns && ops[j].api_ns <= r[i].end_ns) add_op(s, &ops[j], comm, &nc);
    } else {
      for (size_t j = lower(ops, order, nops, r[i].thread, r[i].begin_ns);
           j < nops && ops[order[j]].thread == r[i].thread && ops[order[j]].api_ns <= r[i].end_ns; j++)
        add_op(s, &ops[order[j]], comm, &nc);
    }
    if (s->ops_without_gpu) s->flags |= NCS_RS_COMM_PARTIAL;
    memcpy(busy, comm, nc * sizeof *comm);
    s->comm_ns = union_ns(comm, nc);
    s->bus_gbps = s->comm_ns ? s->bus_bytes / (double)s->comm_ns : 0;
    if (!have_kernels || r[i].startend) {
      s->flags |= NCS_RS_NO_KERNELS;
      continue;
    }
    size_t nb = nc, first = nc;
    for (size_t p = kcount[i]; p < kcount[i + 1]; p++) {
      const ncs_rs_kernel_t *kk = &k[kidx[p]];
      s->kernels++;
      if (kk->start && kk->end >= kk->start)
        busy[nb++] = (ivl_t){kk->start, kk->end};
      else
        s->kernels_without_times++;
    }
    s->compute_ns = union_ns(busy + first, nb - first);
    s->busy_ns = union_ns(busy, nb);
    s->exposed_ns = s->busy_ns - s->compute_ns; /* |C u K| - |K| = |C \ K| */
  }
  rc = 0;
out:
  free(order), free(byid), free(comm), free(kcount), free(kidx), free(busy);
  return rc;
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

static long index_of(const char *const *names, uint32_t nm, const char *name) {
  for (uint32_t m = 0; m < nm; m++)
    if (names[m] && !strcmp(names[m], name)) return (long)m;
  return -1;
}

void ncs_rs_aggregate(const char *const *names, const uint8_t *types, uint32_t nm, const double *values,
                      size_t n, double *out, uint8_t *how) {
  long t = index_of(names, nm, "gpu__time_duration.sum");
  for (uint32_t m = 0; m < nm; m++) {
    int elapsed = names[m] && (ends_with(names[m], ".per_second") || ends_with(names[m], ".pct_of_peak_sustained_elapsed"));
    how[m] = types[m] == NCS_MT_COUNTER ? NCS_RS_SUM : elapsed && t >= 0 ? NCS_RS_TIME_WEIGHTED : NCS_RS_NONE;
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
      double v = values[i * nm + m];
      if (how[m] == NCS_RS_SUM) num += v;
      if (how[m] == NCS_RS_TIME_WEIGHTED) num += v * values[i * nm + (size_t)t], den += values[i * nm + (size_t)t];
    }
    out[m] = how[m] == NCS_RS_SUM ? num : how[m] == NCS_RS_TIME_WEIGHTED && den > 0 ? num / den : NAN;
  }
}

double ncs_rs_dram_gbps(const char *const *names, uint32_t nm, const double *sums) {
  long rd = index_of(names, nm, "dram__bytes_read.sum"), wr = index_of(names, nm, "dram__bytes_write.sum");
  long t = index_of(names, nm, "gpu__time_duration.sum");
  if (rd < 0 || wr < 0 || t < 0 || !(sums[t] > 0)) return NAN;
  return (sums[rd] + sums[wr]) / sums[t];
}
