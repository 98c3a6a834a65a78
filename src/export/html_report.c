/* html_report.c - the --html page of `ncclscope report` (html_report.h; docs/report.md defines
 * every number, "The HTML page" what each chart draws).
 *
 * The page is written in one pass: header, findings (findings.c, the terminal report's order and
 * sentences), three SVG charts, then tables. Charts are plain SVG with a <title> per mark as its
 * tooltip; nothing runs in the browser. Trace strings go through esc() only.
 */
#include "export/html_report.h"
#include "util/fmt.h"
#include "util/mem.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ escaping */
/* Text or attribute value from an untrusted source: markup characters become entities, control
 * characters and bytes that are not UTF-8 become visible \xNN (C1 controls \u00NN). */
static void esc(FILE *o, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  while (*p) {
    unsigned c = *p;
    size_t k;
    switch (c) {
    case '&': fputs("&amp;", o); break;
    case '<': fputs("&lt;", o); break;
    case '>': fputs("&gt;", o); break;
    case '"': fputs("&quot;", o); break;
    case '\'': fputs("&#39;", o); break;
    default:
      if (c < 0x20 || c == 0x7f) {
        fprintf(o, "\\x%02x", c);
      } else if (c < 0x80) {
        fputc((int)c, o);
      } else if ((k = ncs_utf8_len(p)) == 0) {
        fprintf(o, "\\x%02x", c);
      } else {
        if (c == 0xc2 && p[1] < 0xa0)
          fprintf(o, "\\u%04x", p[1]);
        else
          fwrite(p, 1, k, o);
        p += k;
        continue;
      }
    }
    p++;
  }
}

/* printf, then esc() the result (for text that mixes numbers and trace strings) */
static void escf(FILE *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void escf(FILE *o, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  esc(o, buf);
}

/* ------------------------------------------------------------------ helpers */
static const char *const palette[10] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#7f7f7f"};
/* The colour of series s: the 10 of the palette, then hues 137.5 degrees apart (the golden
 * angle: no two of the first hundreds are close) at three lightnesses, so that many series stay
 * apart; the same series has the same colour in every chart. */
static const char *series_color(size_t s, char *buf, size_t len) {
  if (s < 10) return palette[s];
  double h = fmod((double)(s - 10) * 137.508 + 265, 360);
  snprintf(buf, len, "hsl(%.0f,%d%%,%d%%)", h, 70 - 10 * (int)((s / 7) % 3), 38 + 8 * (int)(s % 3));
  return buf;
}

/* "1 MiB" .. "2 MiB" of a bucket */
static void bucket_range(char *out, size_t n, int lg) {
  char lo[24], hi[24];
  ncs_fmt_bytes(lo, sizeof lo, lg);
  if (lg < 0) {
    snprintf(out, n, "0 B");
    return;
  }
  ncs_fmt_bytes(hi, sizeof hi, lg + 1);
  snprintf(out, n, "%s .. %s", lo, hi);
}

static int cmp_bucket(const void *x, const void *y) {
  const ncs_an_bucket_t *a = *(const ncs_an_bucket_t *const *)x,
                        *b = *(const ncs_an_bucket_t *const *)y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->p2p != b->p2p) return a->p2p - b->p2p;
  int c = strcmp(a->func ? a->func : "", b->func ? b->func : "");
  if (c) return c;
  return a->log2 < b->log2 ? -1 : a->log2 > b->log2;
}
static int cmp_count_desc(const void *x, const void *y) {
  const ncs_an_bucket_t *a = *(const ncs_an_bucket_t *const *)x,
                        *b = *(const ncs_an_bucket_t *const *)y;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return cmp_bucket(x, y);
}

/* a run of sorted buckets with the same (comm, p2p, func): one chart series */
typedef struct {
  uint32_t comm;
  const char *func;
  int p2p;
  size_t first, n; /* into the sorted bucket list */
} series_t;

typedef struct {
  const ncs_an_bucket_t **b; /* every bucket, by (comm, p2p, func, size) */
  size_t n;
  series_t *s;
  size_t ns;
} buckets_t;

static void buckets_build(buckets_t *L, const ncs_analysis_t *a) {
  L->b = calloc(a->nbuckets + 1, sizeof *L->b);
  L->s = calloc(a->nbuckets + 1, sizeof *L->s);
  if (!L->b || !L->s) ncs_oom();
  L->n = a->nbuckets, L->ns = 0;
  for (uint32_t k = 0; k < a->nbuckets; k++) L->b[k] = &a->buckets[k];
  if (L->n > 1) qsort(L->b, L->n, sizeof *L->b, cmp_bucket);
  for (size_t k = 0; k < L->n; k++) {
    const ncs_an_bucket_t *b = L->b[k];
    series_t *s = L->ns ? &L->s[L->ns - 1] : NULL;
    if (!s || s->comm != b->comm || s->p2p != b->p2p ||
        strcmp(s->func ? s->func : "", b->func ? b->func : "")) {
      s = &L->s[L->ns++];
      *s = (series_t){b->comm, b->func, b->p2p, k, 0};
    }
    s->n++;
  }
}

static size_t series_of(const buckets_t *L, size_t bi) {
  for (size_t s = 0; s < L->ns; s++)
    if (bi >= L->s[s].first && bi < L->s[s].first + L->s[s].n) return s;
  return 0;
}

static void svg_text(FILE *o, double x, double y, const char *anchor, const char *cls,
                     const char *s) {
  fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s%s>", x, y, anchor,
          cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
  esc(o, s);
  fputs("</text>\n", o);
}

/* ------------------------------------------------------------------ chart 1: busbw vs size */
static void chart_busbw(FILE *o, const buckets_t *L) {
  const double W = 980, H = 440, ML = 84, MR = 250, MT = 16, MB = 56;
  const double pw = W - ML - MR, ph = H - MT - MB;
  int xmin = INT_MAX, xmax = INT_MIN;
  double ymax = 0, ymin = INFINITY;
  size_t npts = 0, nser = 0;
  for (size_t s = 0; s < L->ns; s++) {
    if (L->s[s].p2p) continue;
    size_t pts = 0;
    for (size_t k = L->s[s].first; k < L->s[s].first + L->s[s].n; k++) {
      const ncs_an_bucket_t *b = L->b[k];
      if (!b->n || b->log2 < 0) continue;
      if (b->log2 < xmin) xmin = b->log2;
      if (b->log2 > xmax) xmax = b->log2;
      if (b->busbw_p50 > ymax) ymax = b->busbw_p50;
      if (b->busbw_p50 > 0 && b->busbw_p50 < ymin) ymin = b->busbw_p50;
      if (b->busbw_p99 > 0 && b->busbw_p99 < ymin) ymin = b->busbw_p99;
      pts++;
    }
    npts += pts, nser += pts > 0;
  }
  fprintf(o,
          "<svg id=\"chart-busbw\" class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
          "height=\"%.0f\" role=\"img\" aria-label=\"bus bandwidth versus message size\">\n",
          W, H, W, H);
  if (!npts) {
    svg_text(o, W / 2, H / 2, "middle", "empty", "no collective with a size and a duration");
    fputs("</svg>\n", o);
    return;
  }
  /* a log y axis over whole decades: small messages' busbw is orders of magnitude below large
   * ones', and a linear axis flattens it onto the floor. 0 GB/s (no duration) sits on the floor. */
  if (ymax <= 0) ymax = 1;
  if (!(ymin < INFINITY) || ymin > ymax) ymin = ymax;
  double dlo = floor(log10(ymin) + 1e-9), dhi = ceil(log10(ymax) - 1e-9);
  if (dhi <= dlo) dhi = dlo + 1;
  int span = xmax - xmin + 1;
  double colw = pw / span;
#define BX(lg) (ML + ((lg)-xmin + 0.5) * colw)
#define BY(v) (MT + ph - ((v) > 0 ? (log10(v) - dlo) / (dhi - dlo) : 0) * ph)
  char t[64];
  fputs("<g class=\"grid\">\n", o);
  for (double d = dlo; d <= dhi + 1e-9; d++) {
    for (int m = 1; m < 10; m++) {
      double v = pow(10, d) * m;
      if (d >= dhi && m > 1) break;
      fprintf(o, "<line%s x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
              m == 1 ? "" : " class=\"minor\"", ML, BY(v), ML + pw, BY(v));
      if (m != 1 && !(m == 5 && dhi - dlo <= 3)) continue;
      snprintf(t, sizeof t, "%g", v);
      svg_text(o, ML - 6, BY(v) + 4, "end", NULL, t);
    }
  }
  int every = (span + 11) / 12;
  for (int lg = xmin; lg <= xmax; lg++) {
    fprintf(o, "<line class=\"minor\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", BX(lg),
            MT, BX(lg), MT + ph);
    if ((lg - xmin) % every) continue;
    ncs_fmt_bytes(t, sizeof t, lg);
    svg_text(o, BX(lg), MT + ph + 16, "middle", NULL, t);
  }
  fputs("</g>\n", o);
  fprintf(o,
          "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
          ML, MT, ML, MT + ph, ML, MT + ph, ML + pw, MT + ph);
  svg_text(o, ML + pw / 2, H - 14, "middle", "title",
           "message size (bucket lower bound, log2 scale)");
  fprintf(o,
          "<text class=\"title\" transform=\"translate(18 %.1f) rotate(-90)\" "
          "text-anchor=\"middle\">busbw GB/s (log scale)</text>\n",
          MT + ph / 2);
  /* series */
  double jit = colw * 0.5 / (double)(nser + 1);
  if (jit > 4) jit = 4;
  size_t si = 0, legend = 0;
  const size_t legend_max = 26;
  for (size_t s = 0; s < L->ns; s++) {
    const series_t *S = &L->s[s];
    if (S->p2p) continue;
    size_t pts = 0;
    for (size_t k = S->first; k < S->first + S->n; k++) pts += L->b[k]->n && L->b[k]->log2 >= 0;
    if (!pts) continue;
    char colbuf[40];
    const char *col = series_color(s, colbuf, sizeof colbuf), *dash = "none";
    double dx = ((double)si - (double)(nser - 1) / 2) * jit;
    fprintf(o, "<g class=\"series\" stroke=\"%s\" fill=\"%s\">\n<title>c%u ", col, col,
            S->comm);
    esc(o, S->func);
    fputs("</title>\n<polyline fill=\"none\" stroke-width=\"2\"", o);
    if (strcmp(dash, "none")) fprintf(o, " stroke-dasharray=\"%s\"", dash);
    fputs(" points=\"", o);
    for (size_t k = S->first; k < S->first + S->n; k++) {
      const ncs_an_bucket_t *b = L->b[k];
      if (b->n && b->log2 >= 0) fprintf(o, "%.1f,%.1f ", BX(b->log2) + dx, BY(b->busbw_p50));
    }
    fputs("\"/>\n", o);
    for (size_t k = S->first; k < S->first + S->n; k++) {
      const ncs_an_bucket_t *b = L->b[k];
      if (!b->n || b->log2 < 0) continue;
      double x = BX(b->log2) + dx;
      char rng[64], lat[32];
      bucket_range(rng, sizeof rng, b->log2);
      ncs_fmt_ns(lat, sizeof lat, b->lat_p50);
      /* a bucket holding instances whose GPU times cannot be right is drawn hollow, and says so */
      fprintf(o, "<g class=\"pt%s\"><title>c", b->suspect ? " doubtful" : "");
      escf(o,
           "%u %s, %s, %" PRIu64 " instances: busbw p50 %.3f GB/s, p95 %.3f, p99 %.3f (slow side); "
           "algbw p50 %.3f GB/s; latency p50 %s",
           b->comm, b->func, rng, b->count, b->busbw_p50, b->busbw_p95, b->busbw_p99, b->algbw_p50,
           lat);
      if (b->suspect)
        escf(o, "; DOUBTFUL: %" PRIu64 " of these instances have GPU times that cannot be right",
             b->suspect);
      fprintf(o,
              "</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"1\"/>"
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"2\"/>"
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"1\"/>"
              "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\"%s/>"
              "<text class=\"n\" x=\"%.1f\" y=\"%.1f\" stroke=\"none\">%" PRIu64 "</text></g>\n",
              x, BY(b->busbw_p99), x, BY(b->busbw_p50), x - 4, BY(b->busbw_p95), x + 4,
              BY(b->busbw_p95), x - 3, BY(b->busbw_p99), x + 3, BY(b->busbw_p99), x,
              BY(b->busbw_p50), b->suspect ? " fill=\"#fff\" stroke-width=\"2\"" : "", x + 6,
              BY(b->busbw_p50) - 6, b->count);
    }
    fputs("</g>\n", o);
    if (legend < legend_max) {
      double ly = MT + 8 + 16 * (double)legend, lx = W - MR + 20;
      fprintf(
          o,
          "<g class=\"legend\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
          "stroke-width=\"2\"%s%s%s/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>",
          lx, ly, lx + 22, ly, col, strcmp(dash, "none") ? " stroke-dasharray=\"" : "",
          strcmp(dash, "none") ? dash : "", strcmp(dash, "none") ? "\"" : "", lx + 11, ly, col);
      fprintf(o, "<text x=\"%.1f\" y=\"%.1f\">c%u ", lx + 28, ly + 4, S->comm);
      esc(o, S->func);
      fputs("</text></g>\n", o);
    } else if (legend == legend_max) {
      svg_text(o, W - MR + 20, MT + 12 + 16 * (double)legend, "start", NULL,
               "(more series: see the table)");
    }
    legend++, si++;
  }
#undef BX
#undef BY
  fputs("</svg>\n", o);
}

/* ------------------------------------------------------------------ chart 2: skew heatmap */
/* YlOrRd: 0 -> pale yellow, 1 -> dark red */
static void ramp(double v, char *out, size_t n) {
  static const int st[5][3] = {
      {255, 255, 204}, {254, 217, 118}, {253, 141, 60}, {227, 26, 28}, {128, 0, 38}};
  if (!(v > 0)) v = 0;
  if (v > 1) v = 1;
  double p = v * 4;
  int i = (int)p;
  if (i > 3) i = 3;
  double f = p - i;
  snprintf(out, n, "#%02x%02x%02x", (int)(st[i][0] + (st[i + 1][0] - st[i][0]) * f + .5),
           (int)(st[i][1] + (st[i + 1][1] - st[i][1]) * f + .5),
           (int)(st[i][2] + (st[i + 1][2] - st[i][2]) * f + .5));
}

typedef struct {
  uint32_t comm;
  uint32_t *rows; /* rank indices, by rank */
  size_t nrows, rows_all;
  const ncs_an_bucket_t **cols; /* by (func, size) */
  size_t ncols, cols_all;
  const ncs_an_cell_t **m; /* nrows x ncols */
  double *all_late;        /* per row: mean lateness over every bucket of the communicator */
  uint64_t *all_n, *all_last;
  int64_t *all_wait;
  double cw, ch, top, h; /* layout */
} heat_t;

static const ncs_analysis_t *g_rank_sort_a; /* qsort context (single-threaded page writer) */
static const double *g_rank_sort_late;
static int cmp_row_late(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  if (g_rank_sort_late[a] != g_rank_sort_late[b])
    return g_rank_sort_late[a] > g_rank_sort_late[b] ? -1 : 1;
  return g_rank_sort_a->ranks[a].rank < g_rank_sort_a->ranks[b].rank ? -1 : 1;
}
static int cmp_row_rank(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  int32_t ra = g_rank_sort_a->ranks[a].rank, rb = g_rank_sort_a->ranks[b].rank;
  return ra < rb ? -1 : ra > rb;
}

static int cmp_dbl(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static void chart_heat(FILE *o, const ncs_analysis_t *a) {
  const double W = 980, LABW = 84, COLLAB = 96;
  /* per rank: lateness sums over all its cells (to pick rows), per bucket: whether it has cells */
  double *late_sum = calloc(a->nranks + 1, sizeof *late_sum);
  uint64_t *rn = calloc(a->nranks + 1, sizeof *rn), *rlast = calloc(a->nranks + 1, sizeof *rlast);
  int64_t *rwait = calloc(a->nranks + 1, sizeof *rwait);
  char *has = calloc(a->nbuckets + 1, 1);
  long *colof = malloc((a->nbuckets + 1) * sizeof *colof),
       *rowof = malloc((a->nranks + 1) * sizeof *rowof);
  heat_t *hs = calloc(a->job->ncomms + 1, sizeof *hs);
  if (!late_sum || !rn || !rlast || !rwait || !has || !colof || !rowof || !hs) ncs_oom();
  for (uint32_t k = 0; k < a->ncells; k++) {
    const ncs_an_cell_t *c = &a->cells[k];
    late_sum[c->rank] += (double)c->late, rn[c->rank] += c->n, rlast[c->rank] += c->last;
    rwait[c->rank] += c->waited;
    has[c->bucket] = 1;
  }
  size_t nh = 0, comms_all = 0, nvals = 0;
  double vmax = 0, vtop = 0, y = 8;
  double *vals = malloc((a->ncells + a->nranks + 1) * sizeof *vals); /* drawn cells' values */
  if (!vals) ncs_oom();
  for (uint32_t cm = 0; cm < a->job->ncomms; cm++) {
    heat_t H = {.comm = cm};
    for (uint32_t b = 0; b < a->nbuckets; b++) H.cols_all += has[b] && a->buckets[b].comm == cm;
    for (uint32_t r = 0; r < a->nranks; r++) H.rows_all += a->ranks[r].comm == cm && rn[r];
    if (!H.cols_all || !H.rows_all) continue;
    comms_all++;
    if (nh >= NCS_HTML_HEAT_COMMS) continue;
    /* columns: the most frequent buckets, drawn by (func, size) */
    H.cols = calloc(H.cols_all, sizeof *H.cols);
    H.rows = calloc(H.rows_all, sizeof *H.rows);
    if (!H.cols || !H.rows) ncs_oom();
    for (uint32_t b = 0; b < a->nbuckets; b++)
      if (has[b] && a->buckets[b].comm == cm) H.cols[H.ncols++] = &a->buckets[b];
    if (H.ncols > NCS_HTML_HEAT_COLS) {
      qsort(H.cols, H.ncols, sizeof *H.cols, cmp_count_desc);
      H.ncols = NCS_HTML_HEAT_COLS;
    }
    if (H.ncols > 1) qsort(H.cols, H.ncols, sizeof *H.cols, cmp_bucket);
    /* rows: the ranks that were latest in total, drawn by rank */
    for (uint32_t r = 0; r < a->nranks; r++)
      if (a->ranks[r].comm == cm && rn[r]) H.rows[H.nrows++] = r;
    g_rank_sort_a = a, g_rank_sort_late = late_sum;
    if (H.nrows > NCS_HTML_HEAT_ROWS) {
      qsort(H.rows, H.nrows, sizeof *H.rows, cmp_row_late);
      H.nrows = NCS_HTML_HEAT_ROWS;
    }
    if (H.nrows > 1) qsort(H.rows, H.nrows, sizeof *H.rows, cmp_row_rank);
    H.m = calloc(H.nrows * H.ncols + 1, sizeof *H.m);
    H.all_late = calloc(H.nrows + 1, sizeof *H.all_late);
    if (!H.m || !H.all_late) ncs_oom();
    for (uint32_t b = 0; b < a->nbuckets; b++) colof[b] = -1;
    for (uint32_t r = 0; r < a->nranks; r++) rowof[r] = -1;
    for (size_t c = 0; c < H.ncols; c++) colof[H.cols[c] - a->buckets] = (long)c;
    for (size_t r = 0; r < H.nrows; r++) rowof[H.rows[r]] = (long)r;
    for (uint32_t k = 0; k < a->ncells; k++) {
      const ncs_an_cell_t *c = &a->cells[k];
      if (rowof[c->rank] < 0 || colof[c->bucket] < 0) continue;
      H.m[(size_t)rowof[c->rank] * H.ncols + (size_t)colof[c->bucket]] = c;
      double v = c->n ? (double)c->late / (double)c->n : 0;
      if (c->n) vals[nvals++] = v;
    }
    for (size_t r = 0; r < H.nrows; r++) {
      uint32_t ri = H.rows[r];
      H.all_late[r] = rn[ri] ? late_sum[ri] / (double)rn[ri] : 0;
      if (rn[ri]) vals[nvals++] = H.all_late[r];
    }
    /* layout */
    H.cw = (W - LABW - 40) / (double)(H.ncols + 1);
    if (H.cw > 30) H.cw = 30;
    if (H.cw < 10) H.cw = 10;
    H.ch = H.nrows <= 32 ? 18 : H.nrows <= 64 ? 12 : H.nrows <= 128 ? 8 : 5;
    H.top = y + 22 + COLLAB;
    H.h = 22 + COLLAB + H.ch * (double)H.nrows + 18;
    y += H.h;
    hs[nh++] = H;
  }
  /* The colour scale ends at the 95th percentile of the drawn cells (nearest rank), not at the
   * largest: one outlier would otherwise leave every other cell pale. Cells above it are drawn
   * in the darkest colour with a black outline, and the legend says how many and the largest. */
  size_t nclip = 0;
  if (nvals) {
    qsort(vals, nvals, sizeof *vals, cmp_dbl);
    vtop = vals[nvals - 1];
    vmax = vals[(size_t)ceil(0.95 * (double)nvals) - 1];
    if (!(vmax > 0)) vmax = vtop;
    for (size_t k = 0; k < nvals; k++) nclip += vals[k] > vmax;
  }
  free(vals);
  double legend_y = y + 10, Htot = legend_y + 62;
  double Wtot = W;
  for (size_t i = 0; i < nh; i++) {
    double need = LABW + (double)(hs[i].ncols + 1) * hs[i].cw + 16 + 40;
    if (need > Wtot) Wtot = need;
  }
  fprintf(o,
          "<svg id=\"chart-skew\" class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
          "height=\"%.0f\" "
          "role=\"img\" aria-label=\"per-rank arrival skew heatmap\">\n",
          Wtot, nh ? Htot : 60, Wtot, nh ? Htot : 60);
  if (!nh) {
    svg_text(o, Wtot / 2, 34, "middle", "empty", "no collective matched across ranks");
    fputs("</svg>\n", o);
  }
  char t[96], t2[32], t3[32], colr[16];
  for (size_t i = 0; nh && i < nh; i++) {
    const heat_t *H = &hs[i];
    const ncs_job_comm_t *c = &a->job->comms[H->comm];
    double y0 = H->top - COLLAB - 22;
    snprintf(t, sizeof t, "c%u " NCS_COMM_ID_FMT ", %d ranks%s", H->comm, c->comm_id, c->nranks,
             H->nrows < H->rows_all || H->ncols < H->cols_all ? " (part: see the note below)" : "");
    svg_text(o, 4, y0 + 14, "start", "title", t);
    /* column labels, rotated */
    for (size_t k = 0; k <= H->ncols; k++) {
      double x = LABW + ((double)k + 0.5) * H->cw + (k == H->ncols ? 8 : 0);
      fprintf(o, "<text class=\"col\" transform=\"translate(%.1f %.1f) rotate(-50)\">", x + 3,
              H->top - 4);
      if (k == H->ncols) {
        fputs("all sizes", o);
      } else {
        ncs_fmt_bytes(t2, sizeof t2, H->cols[k]->log2);
        esc(o, H->cols[k]->func);
        fprintf(o, " %s", t2);
      }
      fputs("</text>\n", o);
    }
    int every = H->ch >= 12 ? 1 : H->ch >= 8 ? 2 : 4;
    for (size_t r = 0; r < H->nrows; r++) {
      const ncs_an_rank_t *R = &a->ranks[H->rows[r]];
      double yy = H->top + H->ch * (double)r;
      if (r % (size_t)every == 0) {
        snprintf(t, sizeof t, "rank %d", R->rank);
        svg_text(o, LABW - 6, yy + H->ch / 2 + 4, "end", NULL, t);
      }
      const ncs_job_proc_t *p = &a->job->procs[R->proc];
      for (size_t k = 0; k <= H->ncols; k++) {
        double x = LABW + (double)k * H->cw + (k == H->ncols ? 8 : 0);
        const ncs_an_cell_t *cell = k < H->ncols ? H->m[r * H->ncols + k] : NULL;
        uint64_t n = k < H->ncols ? (cell ? cell->n : 0) : rn[H->rows[r]];
        if (!n) {
          fprintf(
              o,
              "<rect class=\"cell none\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
              x, yy, H->cw, H->ch);
          continue;
        }
        double late = k < H->ncols ? (double)cell->late / (double)n : H->all_late[r];
        double wait = (double)(k < H->ncols ? cell->waited : rwait[H->rows[r]]) / (double)n;
        uint64_t last = k < H->ncols ? cell->last : rlast[H->rows[r]];
        ramp(vmax > 0 ? late / vmax : 0, colr, sizeof colr);
        fprintf(o,
                "<rect class=\"cell%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"%s\">",
                late > vmax ? " clipped" : "", x, yy, H->cw, H->ch, colr);
        ncs_fmt_ns(t2, sizeof t2, late), ncs_fmt_ns(t3, sizeof t3, wait);
        fprintf(o, "<title>rank %d (pid %" PRIu64 ", host ", R->rank, p->pid);
        esc(o, p->host);
        fprintf(o, "), c%u ", H->comm);
        if (k < H->ncols) {
          char rng[64];
          bucket_range(rng, sizeof rng, H->cols[k]->log2);
          esc(o, H->cols[k]->func);
          fprintf(o, " %s", rng);
        } else {
          fputs("all sizes", o);
        }
        fprintf(o,
                ": %" PRIu64 " instances, last to arrive in %" PRIu64 "; mean lateness %s "
                "(own arrival - first arrival); mean wait for the last %s</title></rect>\n",
                n, last, t2, t3);
      }
    }
  }
  if (nh) {
    /* legend: the colour ramp */
    const double lx = LABW, lw = 260;
    fputs("<defs><linearGradient id=\"skew-ramp\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">", o);
    for (int k = 0; k <= 4; k++) {
      ramp(k / 4.0, colr, sizeof colr);
      fprintf(o, "<stop offset=\"%d%%\" stop-color=\"%s\"/>", k * 25, colr);
    }
    fputs("</linearGradient></defs>\n", o);
    fprintf(o,
            "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\" "
            "fill=\"url(#skew-ramp)\" "
            "stroke=\"#999\"/>",
            lx, legend_y, lw);
    ncs_fmt_ns(t2, sizeof t2, vmax);
    svg_text(o, lx, legend_y + 26, "start", NULL, "0");
    svg_text(o, lx + lw, legend_y + 26, "end", NULL, t2);
    ncs_fmt_ns(t3, sizeof t3, vtop);
    char clip[200];
    if (nclip)
      snprintf(clip, sizeof clip, "scale clipped at the 95th percentile of the cells (%s); %zu "
               "cell%s above it, outlined, up to %s", t2, nclip, nclip == 1 ? "" : "s", t3);
    else
      snprintf(clip, sizeof clip, "scale up to the 95th percentile of the cells (%s); none is "
               "above it", t2);
    svg_text(o, lx, legend_y + 58, "start", "note", clip);
    fprintf(o, "<rect class=\"cell none\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\"/>",
            lx + lw + 24, legend_y);
    svg_text(o, lx + lw + 42, legend_y + 10, "start", NULL, "no instance of that bucket");
    svg_text(o, lx, legend_y + 42, "start", "note",
             "colour: mean lateness per instance = own arrival - first arrival of the instance "
             "(clock error bound in the header)");
    fputs("</g>\n</svg>\n", o);
  }
  /* what was left out */
  int capped = comms_all > nh;
  for (size_t i = 0; i < nh; i++)
    capped |= hs[i].nrows < hs[i].rows_all || hs[i].ncols < hs[i].cols_all;
  if (capped || a->cells_dropped) {
    fputs("<p class=\"note\">Not everything is drawn:", o);
    for (size_t i = 0; i < nh; i++) {
      if (hs[i].nrows < hs[i].rows_all)
        fprintf(o, " c%u: the %zu of %zu ranks with the largest total lateness (limit %d).",
                hs[i].comm, hs[i].nrows, hs[i].rows_all, NCS_HTML_HEAT_ROWS);
      if (hs[i].ncols < hs[i].cols_all)
        fprintf(o, " c%u: the %zu of %zu size buckets with the most instances (limit %d).",
                hs[i].comm, hs[i].ncols, hs[i].cols_all, NCS_HTML_HEAT_COLS);
    }
    if (comms_all > nh)
      fprintf(o, " %zu of %zu communicators (limit %d).", nh, comms_all, NCS_HTML_HEAT_COMMS);
    if (a->cells_dropped)
      fprintf(o,
              " The analysis keeps at most %d rank x bucket cells; %" PRIu64
              " rank operations are in no cell (\"all sizes\" and the tables still count them).",
              NCS_AN_CELL_MAX, a->cells_dropped);
    fputs("</p>\n", o);
  }
  for (size_t i = 0; i < nh; i++)
    free(hs[i].cols), free(hs[i].rows), free(hs[i].m), free(hs[i].all_late);
  free(hs), free(late_sum), free(rn), free(rlast), free(rwait), free(has), free(colof), free(rowof);
}

/* ------------------------------------------------------------------ chart 3: latency */
static void chart_latency(FILE *o, const buckets_t *L) {
  const double W = 980, ML = 290, MR = 24, MT = 44, MB = 44, RH = 18;
  const double pw = W - ML - MR;
  const ncs_an_bucket_t **rows = calloc(L->n + 1, sizeof *rows);
  if (!rows) ncs_oom();
  size_t nrows = 0, rows_all;
  for (size_t k = 0; k < L->n; k++)
    if (L->b[k]->n) rows[nrows++] = L->b[k];
  rows_all = nrows;
  if (nrows > NCS_HTML_LAT_ROWS) {
    qsort(rows, nrows, sizeof *rows, cmp_count_desc);
    nrows = NCS_HTML_LAT_ROWS;
    qsort(rows, nrows, sizeof *rows, cmp_bucket);
  }
  double vmin = 0, vmax = 0;
  for (size_t k = 0; k < nrows; k++) {
    const ncs_an_bucket_t *b = rows[k];
    double lo = b->lat_min > 1 ? b->lat_min : 1, hi = b->lat_max > 1 ? b->lat_max : 1;
    if (!k || lo < vmin) vmin = lo;
    if (hi > vmax) vmax = hi;
  }
  double H = MT + RH * (double)nrows + MB;
  fprintf(o,
          "<svg id=\"chart-latency\" class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
          "height=\"%.0f\" "
          "role=\"img\" aria-label=\"latency distribution per size bucket\">\n",
          W, nrows ? H : 60, W, nrows ? H : 60);
  if (!nrows) {
    svg_text(o, W / 2, 34, "middle", "empty", "no operation with a duration");
    fputs("</svg>\n", o);
    free(rows);
    return;
  }
  double dmin = floor(log10(vmin)), dmax = ceil(log10(vmax));
  if (dmax <= dmin) dmax = dmin + 1;
  double floorv = pow(10, dmin);
#define LX(v) (ML + (log10((v) > floorv ? (v) : floorv) - dmin) / (dmax - dmin) * pw)
  char t[96];
  /* legend */
  fprintf(
      o,
      "<g class=\"legend\"><line x1=\"%.1f\" y1=\"12\" x2=\"%.1f\" y2=\"12\" stroke=\"#555\"/>"
      "<rect x=\"%.1f\" y=\"6\" width=\"30\" height=\"12\" fill=\"#4e79a7\" fill-opacity=\"0.35\" "
      "stroke=\"#4e79a7\"/><line x1=\"%.1f\" y1=\"5\" x2=\"%.1f\" y2=\"19\" stroke=\"#222\" "
      "stroke-width=\"2.5\"/>",
      ML, ML + 80, ML + 20, ML + 33, ML + 33);
  svg_text(o, ML + 88, 16, "start", NULL, "min .. max, box p25 .. p75, bar p50,");
  fprintf(o, "<circle cx=\"%.1f\" cy=\"12\" r=\"3\" fill=\"#fff\" stroke=\"#222\"/>", ML + 318);
  svg_text(o, ML + 326, 16, "start", NULL, "p95,");
  fprintf(o, "<circle cx=\"%.1f\" cy=\"12\" r=\"3\" fill=\"#222\"/>", ML + 364);
  svg_text(o, ML + 372, 16, "start", NULL, "p99 (log scale)");
  fputs("</g>\n<g class=\"grid\">\n", o);
  for (double d = dmin; d <= dmax + 1e-9; d++) {
    for (int m = 1; m < 10; m++) {
      double v = pow(10, d) * m;
      if (d == dmax && m > 1) break;
      fprintf(o, "<line%s x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
              m == 1 ? "" : " class=\"minor\"", LX(v), MT - 6, LX(v), H - MB);
      if (m == 1) {
        ncs_fmt_dur(t, sizeof t, v, NCS_DUR_SHORT);
        svg_text(o, LX(v), H - MB + 16, "middle", NULL, t);
      }
    }
  }
  fputs("</g>\n", o);
  svg_text(
      o, ML + pw / 2, H - 10, "middle", "title",
      "latency: collectives the slowest rank's duration per instance, Send/Recv each operation's");
  for (size_t k = 0; k < nrows; k++) {
    const ncs_an_bucket_t *b = rows[k];
    size_t bi = 0;
    while (bi < L->n && L->b[bi] != b) bi++;
    char colbuf[40];
    const char *col = series_color(series_of(L, bi), colbuf, sizeof colbuf);
    double yy = MT + RH * (double)k, yc = yy + RH / 2;
    double mn = b->lat_min, p25 = b->lat_p25, p50 = b->lat_p50, p75 = b->lat_p75;
    double mx = b->lat_max;
    char v[7][32], rng[64];
    ncs_fmt_ns(v[0], 32, mn), ncs_fmt_ns(v[1], 32, p25), ncs_fmt_ns(v[2], 32, p50);
    ncs_fmt_ns(v[3], 32, p75), ncs_fmt_ns(v[4], 32, b->lat_p95), ncs_fmt_ns(v[5], 32, b->lat_p99);
    ncs_fmt_ns(v[6], 32, mx);
    bucket_range(rng, sizeof rng, b->log2);
    fputs("<g class=\"row\"><title>c", o);
    escf(o,
         "%u %s, %s, %" PRIu64
         " %s (timing %s): min %s, p25 %s, p50 %s, p75 %s, p95 %s, p99 %s, max %s",
         b->comm, b->func, rng, b->count, b->p2p ? "operations" : "instances", ncs_bucket_timing(b),
         v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
    fputs("</title>", o);
    if (k % 2)
      fprintf(o, "<rect class=\"band\" x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\"/>", yy, W,
              RH);
    ncs_fmt_bytes(t, sizeof t, b->log2);
    fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">c%u ", ML - 8, yc + 4, b->comm);
    esc(o, b->func);
    fprintf(o, " &#8805;%s (n=%" PRIu64 ")</text>", t, b->count);
    fprintf(o,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>"
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
            "fill-opacity=\"0.35\" "
            "stroke=\"%s\"/>"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
            "stroke-width=\"2.5\"/>"
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#fff\" stroke=\"#222\"/>"
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#222\"/></g>\n",
            LX(mn), yc, LX(mx), yc, LX(p25), yy + 3, LX(p75) - LX(p25) > 1 ? LX(p75) - LX(p25) : 1,
            RH - 6, col, col, LX(p50), yy + 2, LX(p50), yy + RH - 2, LX(b->lat_p95), yc,
            LX(b->lat_p99), yc);
  }
#undef LX
  fputs("</svg>\n", o);
  if (rows_all > nrows)
    fprintf(o,
            "<p class=\"note\">The %zu of %zu buckets with the most samples are drawn (limit %d); "
            "the table below has all of them.</p>\n",
            nrows, rows_all, NCS_HTML_LAT_ROWS);
  free(rows);
}

/* ------------------------------------------------------------------ tables */
static void td_ns(FILE *o, double ns) {
  char t[32];
  ncs_fmt_ns(t, sizeof t, ns);
  fprintf(o, "<td>%s</td>", t);
}

/* <table id=ID><thead>: a <th> per '|'-separated name; a name starting with '<' is left-aligned */
static void thead(FILE *o, const char *id, const char *cols) {
  fprintf(o, "<table id=\"%s\"><thead><tr>", id);
  for (const char *p = cols; *p;) {
    const char *e = strchr(p, '|');
    int n = e ? (int)(e - p) : (int)strlen(p), left = *p == '<';
    fprintf(o, "<th%s>%.*s</th>", left ? " class=\"l\"" : "", n - left, p + left);
    p += n + (e != NULL);
  }
  fputs("</tr></thead><tbody>\n", o);
}

static void table_buckets(FILE *o, const buckets_t *L) {
  thead(o, "buckets-table",
        "comm|<func|size &#8805;|count|lat p50|lat p95|lat p99|p50 95% interval|busbw p50|busbw p95|"
        "busbw p99|algbw p50|skew p50|skew max|<timing");
  for (size_t k = 0; k < L->n; k++) {
    const ncs_an_bucket_t *b = L->b[k];
    char sz[24];
    ncs_fmt_bytes(sz, sizeof sz, b->log2);
    fprintf(o, "<tr><td>c%u</td><td class=\"l\">", b->comm);
    esc(o, b->func);
    fprintf(o, "</td><td>%s</td><td>%" PRIu64, sz, b->count);
    if (b->no_gpu + b->unsampled) fprintf(o, " +%" PRIu64 " no GPU time", b->no_gpu + b->unsampled);
    fputs("</td>", o);
    if (!b->count) { /* no instance with a GPU time: no figures, not zeros */
      fputs("<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>"
            "<td>-</td><td class=\"l\">-</td></tr>\n", o);
      continue;
    }
    td_ns(o, b->lat_p50), td_ns(o, b->lat_p95), td_ns(o, b->lat_p99);
    if (b->lat_ci) { /* the median's 95% interval; none under 6 instances */
      char lo[32], hi[32];
      ncs_fmt_ns(lo, sizeof lo, b->lat_p50_lo), ncs_fmt_ns(hi, sizeof hi, b->lat_p50_hi);
      fprintf(o, "<td>%s .. %s</td>", lo, hi);
    } else {
      fputs("<td title=\"fewer than 6 instances with GPU times: no 95% interval\">-</td>", o);
    }
    fprintf(o, "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>", b->busbw_p50, b->busbw_p95,
            b->busbw_p99, b->algbw_p50);
    if (b->p2p)
      fputs("<td>-</td><td>-</td>", o);
    else
      td_ns(o, b->skew_p50), td_ns(o, b->skew_max);
    fprintf(o, "<td class=\"l\">%s</td></tr>\n", ncs_bucket_timing(b));
  }
  fputs("</tbody></table>\n"
        "<p class=\"note\">busbw and algbw in GB/s (1e9 bytes/s); busbw p95 and p99 are the slow "
        "side (5% and 1% of instances were slower). Latency of a collective: its slowest rank's "
        "duration; of a Send/Recv: the operation's.</p>\n",
        o);
}

/* where the time goes (docs/report.md, "Breakdown"): the analysis's per-bucket sums and labels,
 * as the terminal report prints them */
static void table_breakdown(FILE *o, const buckets_t *L, const ncs_analysis_t *a) {
  thead(o, "breakdown-table",
        "comm|<func|size &#8805;|with proxy|queue|launch|gpu wait|peer wait|network|flush|"
        "network bytes|<bottleneck|<instances by label");
  for (size_t k = 0; k < L->n; k++) {
    const ncs_an_bucket_t *b = L->b[k];
    if (b->p2p || !b->count) continue;
    char sz[24], lab[320];
    ncs_fmt_bytes(sz, sizeof sz, b->log2);
    ncs_bd_label_text(b, lab, sizeof lab);
    fprintf(o, "<tr data-label=\"%s\"><td>c%u</td><td class=\"l\">", ncs_bn_names[b->bd_label],
            b->comm);
    esc(o, b->func);
    fprintf(o, "</td><td>%s</td><td>%" PRIu64 "</td>", sz, b->bd_n);
    if (b->bd_n)
      fprintf(o, "<td>%.0f%%</td><td>%.0f%%</td><td>%.0f%%</td><td>%.0f%%</td><td>%.0f%%</td>"
                 "<td>%.0f%%</td><td>%" PRIu64 "</td>",
              100 * ncs_bd_queue_share(b), 100 * ncs_bd_launch_share(b), 100 * ncs_bd_share(b, NCS_PH_GPU),
              100 * ncs_bd_share(b, NCS_PH_PEER), 100 * ncs_bd_share(b, NCS_PH_NET),
              100 * ncs_bd_share(b, NCS_PH_FLUSH), b->bd_bytes);
    else
      fputs("<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>", o);
    fputs("<td class=\"l\">", o);
    esc(o, lab);
    fputs("</td><td class=\"l\">", o);
    for (int l = 0, sep = 0; l < NCS_BN_N; l++)
      if (b->bd_labels[l])
        fprintf(o, "%s%s %" PRIu64, sep++ ? ", " : "", ncs_bn_names[l], b->bd_labels[l]);
    fputs("</td></tr>\n", o);
  }
  fprintf(o, "</tbody></table>\n<p class=\"note\">From the ProxyStep records: gpu wait, peer "
             "wait, network and flush in %% of the proxy time (summed over ranks and links), launch "
             "in %% of launch + proxy time, queue (waiting behind the earlier work of the "
             "communicator) in %% of queue + launch + proxy time. %" PRIu64 " of the collective instances have a "
             "breakdown. A bucket's bottleneck is the label of at least 2/3 of its labelled "
             "instances, else mixed; cannot tell says why.</p>\n",
          a->bd_instances);
}

static void table_ranks(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f) {
  thead(o, "ranks-table",
        "comm|rank|pid|<host|instances|last %|wait caused|waited|slowest %|excess|kernel wait|"
        "transfer|queue mean|launch mean");
  uint32_t n = a->nranks < NCS_HTML_RANK_ROWS ? a->nranks : NCS_HTML_RANK_ROWS;
  for (uint32_t k = 0; k < n; k++) {
    const ncs_an_rank_t *r = f->by_wait[k];
    const ncs_job_proc_t *p = &a->job->procs[r->proc];
    fprintf(o, "<tr><td>c%u</td><td>%d</td><td>%" PRIu64 "</td><td class=\"l\">", r->comm, r->rank,
            p->pid);
    esc(o, p->host);
    fprintf(o, "</td><td>%" PRIu64 "</td><td>%.0f%%</td>", r->instances,
            ncs_pct(r->last, r->instances));
    td_ns(o, (double)r->wait_caused), td_ns(o, (double)r->wait_suffered);
    fprintf(o, "<td>%.0f%%</td>", ncs_pct(r->slowest, r->instances));
    td_ns(o, (double)r->excess), td_ns(o, (double)r->kwait), td_ns(o, (double)r->transfer);
    if (r->launch_n)
      td_ns(o, (double)r->queue_sum / (double)r->launch_n),
          td_ns(o, (double)r->launch_sum / (double)r->launch_n);
    else
      fputs("<td>-</td><td>-</td>", o);
    fputs("</tr>\n", o);
  }
  fputs("</tbody></table>\n", o);
  if (n < a->nranks)
    fprintf(o, "<p class=\"note\">The first %u of %u ranks by waiting caused (limit %d).</p>\n", n,
            a->nranks, NCS_HTML_RANK_ROWS);
}

static void table_procs(FILE *o, const ncs_analysis_t *a) {
  thead(o, "procs-table",
        "<file|<host|pid|clock offset|clock spread|CLOCK pairs|<GPU clock|gap p50|gap p99|"
        "samples|<state");
  for (uint32_t i = 0; i < a->job->nprocs; i++) {
    const ncs_job_proc_t *p = &a->job->procs[i];
    if (p->excluded) continue; /* not of this job: the warnings say so */
    fputs("<tr><td class=\"l\">", o);
    esc(o, p->path);
    fputs("</td><td class=\"l\">", o);
    esc(o, p->host);
    fprintf(o, "</td><td>%" PRIu64 "</td>", p->pid);
    td_ns(o, (double)p->clk_off), td_ns(o, (double)p->clk_spread);
    fprintf(o, "<td>%u</td><td class=\"l\">%s</td>", p->clk_pairs,
            p->gpu_domain == NCS_GPU_REALTIME ? "realtime"
            : p->gpu_domain == NCS_GPU_OWN    ? "own"
                                              : "none");
    if (p->gap_n)
      td_ns(o, (double)p->gap_p50), td_ns(o, (double)p->gap_p99);
    else
      fputs("<td>-</td><td>-</td>", o);
    fprintf(o, "<td>%" PRIu64 "</td><td class=\"l\">%s</td></tr>\n", p->gap_n,
            !p->readable ? "unreadable" : p->damage ? "damaged" : "ok");
  }
  fputs("</tbody></table>\n", o);
}

/* ------------------------------------------------------------------ the page */
static const char css[] =
    ":root{color-scheme:light}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif;"
    "margin:0 auto;max-width:1240px;padding:16px 24px 48px;color:#1d1d1f;background:#fff}"
    "h1{font-size:22px;margin:0 0 10px}"
    "h2{font-size:18px;margin:30px 0 8px;padding-bottom:4px;border-bottom:1px solid #ddd}"
    "nav{margin:10px 0 0;font-size:13px}nav a{margin-right:14px;color:#2a5db0}"
    "dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 18px;margin:0}"
    "dl.meta dt{color:#666}dl.meta dd{margin:0;overflow-wrap:anywhere}"
    "ul#findings-list{padding-left:20px}ul#findings-list li{margin:5px 0}"
    "ul#warnings-list{padding-left:20px}li.warn{margin:5px 0;color:#8a4b00}"
    "li.rank{color:#8a1c1c}li.job{color:#7a4a00}li.none{color:#2d6a2d}"
    ".note{color:#666;font-size:13px;max-width:980px}"
    "p.explain{max-width:980px}"
    "table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums;margin:6px 0}"
    "th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}"
    "th{background:#f4f4f6;font-weight:600}th.l,td.l{text-align:left}"
    /* text cells wrap between words only ("AllReduce" is never split); a word wider than the
     * cell's 420 px (a path) breaks, the only thing that may */
    "td.l{white-space:normal;overflow-wrap:break-word;word-break:normal;hyphens:none;max-width:420px}"
    "tbody tr:hover{background:#f7f9fc}"
    "svg.chart{display:block;max-width:100%;height:auto;margin:8px 0;"
    "font:12px system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif}"
    "svg.chart text{fill:#333}svg.chart text.title{font-weight:600}svg.chart text.note{fill:#666}"
    "svg.chart text.empty{fill:#888;font-size:14px}svg.chart text.col{font-size:11px}"
    ".grid line{stroke:#e4e4e4}.grid line.minor{stroke:#f3f3f3}.axis line{stroke:#777}"
    "rect.cell{stroke:#fff;stroke-width:1}rect.cell.none{fill:#f2f2f2}"
    "rect.cell:hover{stroke:#000}rect.band{fill:#f8f8fa}g.row:hover rect.band{fill:#eef2f8}"
    "g.pt:hover circle{r:6}svg.chart text.n{font-size:10px;fill:#555}"
    "rect.cell.clipped{stroke:#000;stroke-width:1.5}"
    "footer{margin-top:36px;color:#888;font-size:12px}";

/* CUPTI: overlap per GPU and graph replays, as the terminal report (docs/report.md, "GPU truth") */
static void gpu_section(FILE *o, const ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  fputs("<section id=\"gpu\">\n<h2>GPU: compute/communication overlap (CUPTI)</h2>\n", o);
  if (!a->gpu.ndevs) {
    fputs("<p id=\"gpu-none\">No CUPTI kernel records: no overlap numbers (record with --cupti on).</p>\n"
          "</section>\n", o);
    return;
  }
  fputs("<p class=\"explain\">Per GPU, the time some NCCL kernel ran (comm), some other kernel ran "
        "(compute), both at once (overlap), and NCCL kernels with no other kernel beside them "
        "(exposed). A GPU whose file lost CUPTI records has no numbers: the reason is shown.</p>\n", o);
  thead(o, "gpu-table", "comm|rank|device|NCCL kernels|other kernels|comm|compute|overlap|exposed|<file");
  for (uint32_t k = 0; k < a->gpu.ndevs; k++) {
    const ncs_an_gdev_t *x = &a->gpu.devs[k];
    const ncs_job_gpu_dev_t *D = &j->gdevs[x->dev];
    fputs("<tr>", o);
    if (D->comm != UINT32_MAX)
      fprintf(o, "<td>c%u</td><td>%d</td>", D->comm, D->rank);
    else
      fputs("<td>-</td><td>-</td>", o);
    fprintf(o, "<td>%d</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td>", D->device, D->nccl_kernels,
            D->compute_kernels);
    if (x->known) {
      td_ns(o, (double)x->ov.comm_ns), td_ns(o, (double)x->ov.compute_ns);
      td_ns(o, (double)x->ov.overlap_ns), td_ns(o, (double)x->ov.exposed_ns);
    } else {
      fputs("<td colspan=\"4\" class=\"l cannot-tell\">cannot tell: ", o);
      esc(o, x->why);
      fputs("</td>", o);
    }
    fputs("<td class=\"l\">", o);
    esc(o, j->procs[D->proc].path);
    fputs("</td></tr>\n", o);
  }
  fputs("</tbody></table>\n", o);
  if (a->gpu.nreplays) {
    fputs("<h3>CUDA graph replays of NCCL operations</h3>\n", o);
    thead(o, "replay-table", "comm|<func|bytes|instances|incomplete|kernels|lat p50|lat max");
    for (uint32_t k = 0; k < a->gpu.nreplays; k++) {
      const ncs_an_replay_t *r = &a->gpu.replays[k];
      if (r->comm != UINT32_MAX)
        fprintf(o, "<tr><td>c%u</td><td class=\"l\">", r->comm);
      else
        fputs("<tr><td>-</td><td class=\"l\">", o);
      esc(o, r->func);
      fprintf(o, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td>",
              r->bytes, r->instances, r->incomplete, r->kernels);
      if (r->lat_p50 >= 0)
        td_ns(o, (double)r->lat_p50), td_ns(o, (double)r->lat_max);
      else
        fputs("<td>-</td><td>-</td>", o);
      fputs("</tr>\n", o);
    }
    fputs("</tbody></table>\n", o);
  }
  fputs("</section>\n", o);
}

/* user ranges (docs/ranges.md, "What the read side shows"): per name over ranks, as the terminal
 * report's section; numbers only of the ranges with known ends, and what was lost said first */
static void ranges_section(FILE *o, const ncs_ranges_t *r) {
  if (!r || (!r->ranges && !r->marks && !r->lost && !r->begin_lost && !r->end_lost && !r->open)) return;
  fprintf(o, "<section id=\"ranges\">\n<h2>User ranges</h2>\n<p>%" PRIu64 " ranges, %" PRIu64
             " marks in %u file%s; sums over ranks of the ranges with known ends.</p>\n",
          r->ranges, r->marks, r->files, r->files == 1 ? "" : "s");
  if (r->lost || r->begin_lost || r->end_lost || r->open || r->partial)
    fprintf(o, "<p class=\"warn\">%" PRIu64 " range records lost, %" PRIu64 " ranges whose end was lost, %" PRIu64
               " that never ended (no numbers for them), %" PRIu64 " pops whose push was lost, %" PRIu64
               " that began before the trace's window (lower bounds, not summed).</p>\n",
            r->lost, r->end_lost, r->open, r->begin_lost, r->partial);
  thead(o, "ranges-table", "<name|ranks|count|with end|wall|mean|ops|bytes|comm|GB/s|exposed");
  for (size_t k = 0; k < r->nnames; k++) {
    const ncs_range_agg_t *g = &r->by_name[k];
    char b[24];
    fputs("<tr><td class=\"l\">", o);
    esc(o, *g->name ? g->name : "(no name)");
    fprintf(o, "</td><td>%u</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td>", g->ranks, g->ranges, g->measured);
    if (g->measured)
      td_ns(o, (double)g->wall_ns), td_ns(o, (double)g->wall_ns / (double)g->measured);
    else
      fputs("<td>-</td><td>-</td>", o);
    ncs_fmt_size(b, sizeof b, g->bytes);
    fprintf(o, "<td>%" PRIu64 "</td><td>%s</td>", g->colls + g->p2ps, b);
    if (g->comm_ns || !g->ops_without_gpu) {
      char t[24];
      ncs_fmt_ns(t, sizeof t, (double)g->comm_ns);
      fprintf(o, "<td>%s%s</td>", g->comm_partial ? "&#8805;" : "", t);
    } else {
      fputs("<td>-</td>", o);
    }
    if (g->comm_ns)
      fprintf(o, "<td>%.2f</td>", g->bus_gbps);
    else
      fputs("<td>-</td>", o);
    if (g->measured && g->exposed_known == g->measured)
      td_ns(o, (double)g->exposed_ns);
    else
      fputs("<td>unknown</td>", o);
    fputs("</tr>\n", o);
  }
  fputs("</tbody></table>\n<p class=\"note\">comm: the union of the GPU intervals of the NCCL operations "
        "inside, summed over ranges (&#8805;: some had no GPU time); exposed: communication with no "
        "compute kernel running, known only with CUPTI's kernel records; ranges without an end have "
        "no numbers.</p>\n</section>\n",
        o);
}

int ncs_report_html(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_ranges_t *rg) {
  char err[32];
  ncs_fmt_ns(err, sizeof err, (double)a->job->error);
  buckets_t L;
  buckets_build(&L, a);

  /* head: no script and no external resource may load (a check besides the escaping) */
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" "
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"ncclscope ",
        o);
  esc(o, NCS_VERSION);
  fputs("\">\n<title>ncclscope report: ", o);
  esc(o, a->path);
  fprintf(o, "</title>\n<style>%s</style>\n</head>\n<body>\n", css);

  /* header */
  fputs("<header>\n<h1>ncclscope report</h1>\n<dl class=\"meta\">\n"
        "<dt>job</dt><dd id=\"job-path\">",
        o);
  esc(o, a->path);
  fprintf(o, "</dd>\n<dt>trace files</dt><dd>%u (one per process) on %u host%s", a->cov.files,
          a->job->nhosts, a->job->nhosts == 1 ? "" : "s");
  if (a->damaged_files) fprintf(o, ", <b>%" PRIu64 " damaged</b>", a->damaged_files);
  fprintf(o, "</dd>\n<dt>communicators</dt><dd>%u", a->job->ncomms);
  for (uint32_t c = 0; c < a->job->ncomms && c < 16; c++)
    fprintf(o, "%s%d ranks", c ? ", " : ": ", a->job->comms[c].nranks);
  if (a->job->ncomms > 16) fputs(", ...", o);
  fprintf(o, "</dd>\n<dt>ranks</dt><dd>%u (communicator, rank) pairs recorded</dd>\n", a->nranks);
  fprintf(o,
          "<dt>collectives</dt><dd>%" PRIu64 " instances (%" PRIu64 " rank operations), %" PRIu64
          " incomplete, %" PRIu64 " mismatched</dd>\n",
          a->instances, a->coll_ops, a->incomplete, a->mismatched);
  fprintf(o,
          "<dt>point-to-point</dt><dd>%" PRIu64 " sends, %" PRIu64 " receives, %" PRIu64
          " pairs</dd>\n",
          a->sends, a->recvs, a->p2p_pairs);
  if (ncs_job_filter_active(&a->job->filter)) { /* report's filters (docs/cli.md) */
    char ft[512];
    ncs_job_filter_text(&a->job->filter, ft, sizeof ft);
    fputs("<dt>filter</dt><dd id=\"filter\">", o);
    escf(o, "%s: %" PRIu64 " collective instances and %" PRIu64 " sends/receives left out; every "
            "number on this page is of the rest", ft, a->job->run.filtered_inst,
         a->job->run.filtered_p2p);
    fputs("</dd>\n", o);
  }
  uint64_t ops = a->cov.timing[0] + a->cov.timing[1] + a->cov.timing[2];
  fprintf(o,
          "<dt>coverage</dt><dd id=\"coverage\">%u of %u files read; completion from GPU kernels "
          "%.0f%%, proxy ops %.0f%%, none %.0f%% of %" PRIu64 " operations; %.1f%% of the "
          "operation calls lost</dd>\n",
          a->cov.files - a->cov.unreadable, a->cov.files, ncs_pct(a->cov.timing[0], ops),
          ncs_pct(a->cov.timing[1], ops), ncs_pct(a->cov.timing[2], ops), ops,
          ncs_pct(a->cov.op_lost, a->cov.op_calls));
  fprintf(o,
          "<dt>GPU times</dt><dd id=\"gpu-sources\">CUPTI %" PRIu64 ", KernelCh %" PRIu64
          ", none %" PRIu64 " of %" PRIu64 " operations (%" PRIu64 " captured into CUDA graphs)</dd>\n",
          a->cov.gsrc[NCS_GS_CUPTI], a->cov.gsrc[NCS_GS_KERNELCH], a->cov.gsrc[NCS_GS_NONE],
          a->cov.gsrc[0] + a->cov.gsrc[1] + a->cov.gsrc[2], a->cov.captured);
  fprintf(o,
          "<dt>clock error bound</dt><dd id=\"error-bound\">&#177;%s (of every cross-rank time "
          "difference: skew, lateness, waiting)</dd>\n</dl>\n",
          err);
  fputs("<nav><a href=\"#findings\">findings</a><a href=\"#busbw\">bus bandwidth</a>"
        "<a href=\"#skew\">skew heatmap</a><a href=\"#latency\">latency</a>"
        "<a href=\"#buckets\">buckets</a><a href=\"#ranks\">ranks</a><a href=\"#gpu\">GPU</a>"
        "<a href=\"#processes\">processes</a></nav>\n</header>\n",
        o);

  /* warnings and findings: the terminal report's, in its order */
  fputs("<section id=\"findings\">\n<h2>Findings</h2>\n", o);
  if (f->nwarn) {
    fputs("<ul id=\"warnings-list\">\n", o);
    for (uint32_t k = 0; k < f->nwarn; k++) {
      fprintf(o, "<li class=\"warn\" data-key=\"%s\">", f->warn[k].key);
      esc(o, f->warn[k].text);
      fputs("</li>\n", o);
    }
    fputs("</ul>\n", o);
  }
  fputs("<ul id=\"findings-list\">\n", o);
  for (uint32_t k = 0; k < f->nheadline; k++) {
    char line[1024];
    const ncs_finding_t *x = &f->items[k];
    ncs_finding_text(a, x, line, sizeof line);
    fprintf(o, "<li class=\"%s\">",
            x->kind == NCS_FIND_MISMATCH || x->kind == NCS_FIND_INCOMPLETE || x->kind == NCS_FIND_P2P ||
                    x->kind == NCS_FIND_DAMAGED
                ? "job"
                : "rank");
    esc(o, line);
    fputs("</li>\n", o);
  }
  if (!f->nheadline) {
    fputs("<li class=\"none\">", o);
    esc(o, f->none);
    fputs("</li>\n", o);
  }
  fputs("</ul>\n", o);
  if (f->n > f->nheadline) { /* minor: significant, small (docs/report.md, "Findings") */
    fprintf(o, "<h3>Minor findings</h3>\n<p class=\"note\">Significant, but each cost the others under "
               "%.0f%% of the job's time.</p>\n<ul id=\"minor-list\">\n", 100 * NCS_FIND_MATERIAL);
    for (uint32_t k = f->nheadline; k < f->n; k++) {
      char line[1024];
      ncs_finding_text(a, &f->items[k], line, sizeof line);
      fputs("<li class=\"minor\">", o);
      esc(o, line);
      fputs("</li>\n", o);
    }
    fputs("</ul>\n", o);
  }
  if (a->nmism > 1) {
    thead(o, "mismatch-table", "comm|<func|seq|rank|vs rank|<what");
    for (uint32_t k = 0; k < a->nmism; k++) {
      const ncs_an_mismatch_t *m = &a->mism[k];
      fprintf(o, "<tr><td>c%u</td><td class=\"l\">", m->comm);
      esc(o, m->func);
      fprintf(o, "</td><td>%" PRIu64 "</td><td>%d</td><td>%d</td><td class=\"l\">", m->seq,
              m->rank_a, m->rank_b);
      esc(o, m->what);
      fputs("</td></tr>\n", o);
    }
    fputs("</tbody></table>\n", o);
  }
  fputs("</section>\n", o);

  /* the charts */
  fputs("<section id=\"busbw\">\n<h2>Bus bandwidth vs message size</h2>\n"
        "<p class=\"explain\">One series per (communicator, collective); one point per "
        "power-of-two size bucket, at its lower bound. The dot is the median busbw of the "
        "bucket's instances; the whisker goes down to p99 with a cap at p95 (the slow side: 5% "
        "and 1% of instances were slower). The number beside a dot is how many instances the "
        "bucket holds. The y axis is logarithmic, so that small messages are not flattened. "
        "busbw = algbw x the nccl-tests bus factor, GB/s = 1e9 "
        "bytes/s. Send/Recv are in the latency chart and the tables. Hover a point for its "
        "numbers.</p>\n",
        o);
  chart_busbw(o, &L);
  if (a->gpu_suspect)
    fprintf(o, "<p class=\"explain\" id=\"doubtful-note\">Hollow points: buckets holding some of "
               "the %" PRIu64 " instances whose GPU times cannot be right (see the warnings); their "
               "bandwidth is doubtful.</p>\n",
            a->gpu_suspect);
  fputs("</section>\n", o);
  fputs("<section id=\"skew\">\n<h2>Per-rank arrival skew</h2>\n"
        "<p class=\"explain\">One block per communicator: a row per rank, a column per "
        "(collective, size bucket), and \"all sizes\". The colour is the rank's mean lateness: "
        "how long after the first rank of each instance it arrived (called the collective). A "
        "straggler is a dark row; a rank that is late only for some sizes shows as dark cells. "
        "Hover a cell for the instances, how often the rank was last, and how long it waited for "
        "the last rank on average.</p>\n",
        o);
  chart_heat(o, a);
  fputs("</section>\n", o);
  fputs("<section id=\"latency\">\n<h2>Latency distributions</h2>\n"
        "<p class=\"explain\">One row per (communicator, function, size bucket), log time scale. "
        "A collective instance's latency is its slowest rank's duration; a Send or Recv counts "
        "each operation. Hover a row for its quantiles and the timing source.</p>\n",
        o);
  chart_latency(o, &L);
  fputs("</section>\n", o);

  /* the tables */
  fputs("<section id=\"buckets\">\n<h2>Collectives per communicator x function x size</h2>\n", o);
  table_buckets(o, &L);
  fputs("</section>\n<section id=\"breakdown\">\n<h2>Where the time goes</h2>\n", o);
  table_breakdown(o, &L, a);
  fputs("</section>\n<section id=\"ranks\">\n<h2>Ranks by waiting caused</h2>\n", o);
  table_ranks(o, a, f);
  fputs("</section>\n", o);
  gpu_section(o, a);
  ranges_section(o, rg);
  fputs("<section id=\"processes\">\n"
        "<h2>Communicators, processes and clocks</h2>\n",
        o);
  thead(o, "comms-table", "comm|<commId|<name|nranks|nodes|ranks recorded");
  for (uint32_t c = 0; c < a->job->ncomms; c++) {
    fprintf(o, "<tr><td>c%u</td><td class=\"l\">" NCS_COMM_ID_FMT "</td><td class=\"l\">", c,
            a->job->comms[c].comm_id);
    esc(o, a->job->comms[c].name);
    fprintf(o, "</td><td>%d</td><td>%d</td><td>%d</td></tr>\n", a->job->comms[c].nranks,
            a->job->comms[c].nnodes, a->job->comms[c].ranks_seen);
  }
  fputs("</tbody></table>\n", o);
  table_procs(o, a);
  if (a->job->nhosts <= 1) {
    fprintf(o,
            "<p>Clocks: one host; all ranks share CLOCK_MONOTONIC, error bound = the largest "
            "CLOCK pair spread, %s.</p>\n",
            err);
  } else {
    fputs("<p>Clocks: host offsets from collective end times, relative to ", o);
    esc(o, a->job->hosts[0].host);
    fputs(".</p>\n", o);
    thead(o, "hosts-table", "<host|offset|error|instances");
    for (uint32_t h = 0; h < a->job->nhosts; h++) {
      fputs("<tr><td class=\"l\">", o);
      esc(o, a->job->hosts[h].host);
      fputs("</td>", o);
      td_ns(o, (double)a->job->hosts[h].offset), td_ns(o, (double)a->job->hosts[h].error);
      fprintf(o, "<td>%" PRIu64 "</td></tr>\n", a->job->hosts[h].samples);
    }
    fputs("</tbody></table>\n", o);
  }
  fputs("</section>\n<footer>Written by ncclscope ", o);
  esc(o, NCS_VERSION);
  fputs(" report --html. Every number is defined in ncclscope's docs/report.md.</footer>\n"
        "</body>\n</html>\n",
        o);
  free(L.b), free(L.s);
  return ferror(o) ? -1 : 0;
}
