/* text.c - the verbs' terminal text: width, wrapping, fitting, tables and CSV (text.h). */
#include "util/text.h"

#include <stdarg.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/mem.h"

int ncs_term_width(int fd) {
  int w = 0;
  struct winsize ws;
  const char *cols = getenv("COLUMNS");
  if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
    w = ws.ws_col;
  else if (cols && atoi(cols) > 0)
    w = atoi(cols);
  else if (isatty(fd))
    w = NCS_TEXT_DEFAULT; /* a terminal that does not say its size */
  else
    return 0; /* a pipe or a file: whole lines */
  return w < NCS_TEXT_MIN ? NCS_TEXT_MIN : w > NCS_TEXT_MAX ? NCS_TEXT_MAX : w;
}

size_t ncs_text_widthn(const char *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n && s[i];) {
    unsigned char c = (unsigned char)s[i];
    if (c == 0x1b && i + 1 < n && s[i + 1] == '[') { /* CSI ... final byte */
      i += 2;
      while (i < n && s[i] && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e)) i++;
      if (i < n && s[i]) i++;
      continue;
    }
    if ((c & 0xC0) != 0x80) w++; /* not a UTF-8 continuation byte */
    i++;
  }
  return w;
}

size_t ncs_text_width(const char *s) { return ncs_text_widthn(s, SIZE_MAX); }

/* bytes of s that take at most `cols` columns */
static size_t bytes_for(const char *s, size_t cols) {
  size_t i = 0, w = 0;
  while (s[i]) {
    size_t j = i + 1;
    while (s[j] && ((unsigned char)s[j] & 0xC0) == 0x80) j++;
    if (w + 1 > cols) break;
    w++, i = j;
  }
  return i;
}

/* ---------------------------------------------------------------- wrapping */

/* text wrapped to width, the first line starting at column col (what is before it is printed
 * already), the others with rest */
static void wrap_from(FILE *o, int col, const char *rest, const char *text, int width) {
  int indent = (int)ncs_text_width(rest);
  int start = col, space = 0;
  const char *p = text;
  while (*p) {
    if (*p == '\n') { /* a break the text asks for */
      fprintf(o, "\n%s", rest);
      col = start = indent, space = 0, p++;
      while (*p == ' ') p++;
      continue;
    }
    size_t n = strcspn(p, " \n");
    /* a number and its unit stay on one line: "50 ns", "2 MiB" */
    static const char *const units[] = {"ns", "us", "ms", "s", "B", "KiB", "MiB", "GiB", "GB/s", "%", NULL};
    if (p[n] == ' ' && n && p[n - 1] >= '0' && p[n - 1] <= '9')
      for (int u = 0; units[u]; u++) {
        size_t ul = strlen(units[u]);
        char after = p[n + 1 + ul];
        if (!strncmp(p + n + 1, units[u], ul) && (!after || strchr(" ,;:)\n", after))) {
          n += 1 + ul;
          break;
        }
      }
    int w = (int)ncs_text_widthn(p, n);
    /* the first word after a prefix ("tool: warning: ") goes under it when only there it fits */
    if (width > 0 && col > indent && (col > start || indent + w <= width) && col + space + w > width) {
      fprintf(o, "\n%s", rest);
      col = start = indent, space = 0;
    }
    if (space) fputc(' ', o), col++;
    fwrite(p, 1, n, o);
    col += w;
    p += n;
    space = 0;
    while (*p == ' ') p++, space = 1;
  }
  fputc('\n', o);
}

void ncs_wrap(FILE *o, const char *first, const char *rest, const char *text, int width) {
  fputs(first, o);
  if (width <= 0 && !strchr(text, '\n')) { /* one line, as it is */
    fputs(text, o);
    fputc('\n', o);
    return;
  }
  wrap_from(o, (int)ncs_text_width(first), rest, text, width);
}

/* where a line's continuation lines start: after its leading spaces and a marker */
static size_t marker_end(const char *s, size_t len, int more, size_t *lead) {
  size_t i = 0;
  while (i < len && s[i] == ' ') i++;
  *lead = i;
  if (i + 1 < len && strchr("-!*", s[i]) && s[i + 1] == ' ') return i + 2;
  size_t j = i; /* "HANG   ", "CANNOT TELL  ": an upper-case label and two spaces or more */
  while (j < len && ((s[j] >= 'A' && s[j] <= 'Z') || (s[j] == ' ' && j + 1 < len && s[j + 1] != ' ')))
    j++;
  if (j > i + 1 && j + 1 < len && s[j] == ' ' && s[j + 1] == ' ') {
    while (j < len && s[j] == ' ') j++;
    return j;
  }
  /* "ran       nccl-sim ...": a lower-case word and three spaces or more (the demo's screen) */
  j = i;
  while (j < len && s[j] >= 'a' && s[j] <= 'z') j++;
  if (j > i && j + 2 < len && !strncmp(s + j, "   ", 3)) {
    while (j < len && s[j] == ' ') j++;
    return j;
  }
  return i + (size_t)more;
}

void ncs_fit(FILE *o, const char *buf, size_t len, int width, int more) {
  size_t pos = 0;
  while (pos < len) {
    const char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - s) : len - pos;
    pos += n + (nl ? 1 : 0);
    if (width <= 0 || (int)ncs_text_widthn(s, n) <= width) {
      fwrite(s, 1, n, o);
      if (nl) fputc('\n', o);
      continue;
    }
    size_t lead, m = marker_end(s, n, more, &lead);
    size_t cut = m < n ? m : lead; /* `first`: the leading part up to the marker's end */
    if (cut > lead && m >= n) cut = lead;
    char *first = ncs_xcalloc(cut + 1, 1), *rest = ncs_xcalloc(m + 1, 1), *text = ncs_xcalloc(n - cut + 1, 1);
    memcpy(first, s, cut);
    memset(rest, ' ', m < (size_t)width / 2 ? m : lead);
    memcpy(text, s + cut, n - cut);
    ncs_wrap(o, first, rest, text, width);
    free(first), free(rest), free(text);
  }
}

/* ---------------------------------------------------------------- tables */

typedef struct {
  char *head, *key;
  int flags, max;
} col_t;

struct ncs_tab {
  char *name;
  col_t *cols;
  size_t ncols, capc;
  char **cells; /* per row and column: text, raw */
  size_t nrows, caprows, cur;
  int ungroup;  /* sorted by a column that is no group column: groups print as columns */
};

ncs_tab_t *ncs_tab_new(const char *name) {
  ncs_tab_t *t = ncs_xcalloc(1, sizeof *t);
  t->name = ncs_xstrdup(name ? name : "");
  return t;
}

void ncs_tab_free(ncs_tab_t *t) {
  if (!t) return;
  for (size_t k = 0; k < t->nrows * t->ncols * 2; k++) free(t->cells[k]);
  for (size_t c = 0; c < t->ncols; c++) free(t->cols[c].head), free(t->cols[c].key);
  free(t->cells), free(t->cols), free(t->name), free(t);
}

const char *ncs_tab_name(const ncs_tab_t *t) { return t->name; }
size_t ncs_tab_nrows(const ncs_tab_t *t) { return t->nrows; }

void ncs_tab_col(ncs_tab_t *t, const char *head, const char *key, int flags, int max) {
  if (t->nrows) return; /* columns come first */
  NCS_XGROW(t->cols, t->capc, t->ncols + 1);
  t->cols[t->ncols++] = (col_t){ncs_xstrdup(head ? head : ""), key ? ncs_xstrdup(key) : NULL, flags, max};
}

void ncs_tab_row(ncs_tab_t *t) {
  if (!t->ncols) return;
  size_t need = (t->nrows + 1) * t->ncols * 2;
  if (need > t->caprows) {
    size_t cap = t->caprows ? 2 * t->caprows : 64 * t->ncols;
    while (cap < need) cap *= 2;
    t->cells = ncs_xrealloc(t->cells, cap * sizeof *t->cells);
    memset(t->cells + t->caprows, 0, (cap - t->caprows) * sizeof *t->cells);
    t->caprows = cap;
  }
  t->nrows++, t->cur = 0;
}

void ncs_tab_put(ncs_tab_t *t, const char *text, const char *raw) {
  if (!t->nrows || t->cur >= t->ncols) return;
  char **c = &t->cells[((t->nrows - 1) * t->ncols + t->cur++) * 2];
  free(c[0]), free(c[1]);
  c[0] = ncs_xstrdup(text ? text : "");
  c[1] = ncs_xstrdup(raw ? raw : text ? text : "");
}

void ncs_tab_putf(ncs_tab_t *t, const char *raw, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ncs_tab_put(t, buf, raw);
}

void ncs_tab_num(ncs_tab_t *t, const char *text, double raw) {
  char r[64];
  if (raw == (double)(int64_t)raw && raw > -9e18 && raw < 9e18)
    snprintf(r, sizeof r, "%" PRId64, (int64_t)raw);
  else
    snprintf(r, sizeof r, "%.6g", raw);
  ncs_tab_put(t, text, r);
}

static const char *cell(const ncs_tab_t *t, size_t row, size_t col, int raw) {
  const char *s = t->cells[(row * t->ncols + col) * 2 + (raw ? 1 : 0)];
  return s ? s : "";
}

static int col_of(const ncs_tab_t *t, const char *key) {
  for (size_t c = 0; c < t->ncols; c++)
    if (t->cols[c].key && !strcmp(t->cols[c].key, key)) return (int)c;
  return -1;
}

int ncs_tab_has_key(const ncs_tab_t *t, const char *key) { return col_of(t, key) >= 0; }

void ncs_tab_keys(const ncs_tab_t *t, char *out, size_t len) {
  size_t n = 0;
  if (len) out[0] = 0;
  for (size_t c = 0; c < t->ncols && n < len; c++)
    if (t->cols[c].key && !(t->cols[c].flags & NCS_COL_NOCSV))
      n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "," : "", t->cols[c].key);
}

/* ---- sorting: a stable merge sort of row indices by one column */
typedef struct {
  const ncs_tab_t *t;
  size_t col;
  int asc;
} sortctx_t;

static int blank(const char *s) { return !*s || !strcmp(s, "-"); }

static int num_of(const char *s, double *v) {
  char *e;
  *v = strtod(s, &e);
  return e != s && !*e;
}

static int cmp_rows(const sortctx_t *c, size_t a, size_t b) {
  const char *x = cell(c->t, a, c->col, 1), *y = cell(c->t, b, c->col, 1);
  if (blank(x) || blank(y)) return blank(x) - blank(y);
  double u, v;
  if (num_of(x, &u) && num_of(y, &v)) {
    int r = u < v ? -1 : u > v ? 1 : 0;
    return c->asc ? r : -r;
  }
  return strcmp(x, y);
}

static void msort(const sortctx_t *c, size_t *v, size_t *tmp, size_t n) {
  if (n < 2) return;
  size_t h = n / 2;
  msort(c, v, tmp, h), msort(c, v + h, tmp, n - h);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp_rows(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
  while (i < h) tmp[k++] = v[i++];
  while (j < n) tmp[k++] = v[j++];
  memcpy(v, tmp, n * sizeof *v);
}

int ncs_tab_sort(ncs_tab_t *t, const char *key) {
  int c = col_of(t, key);
  if (c < 0) return -1;
  size_t *ix = ncs_xcalloc(t->nrows, sizeof *ix), *tmp = ncs_xcalloc(t->nrows, sizeof *tmp);
  for (size_t r = 0; r < t->nrows; r++) ix[r] = r;
  sortctx_t ctx = {t, (size_t)c, (t->cols[c].flags & NCS_COL_ASC) != 0};
  msort(&ctx, ix, tmp, t->nrows);
  char **cells = ncs_xcalloc(t->caprows ? t->caprows : 1, sizeof *cells);
  for (size_t r = 0; r < t->nrows; r++)
    memcpy(cells + r * t->ncols * 2, t->cells + ix[r] * t->ncols * 2, t->ncols * 2 * sizeof *cells);
  free(t->cells);
  t->cells = cells;
  free(ix), free(tmp);
  if (!(t->cols[c].flags & NCS_COL_GROUP)) t->ungroup = 1;
  return 0;
}

/* ---- the terminal */

/* line `l` (0-based) of a header with '\n' in it; "" past its lines */
static void head_line(const char *h, int l, char *out, size_t len) {
  for (; l > 0 && h; l--) h = strchr(h, '\n'), h = h ? h + 1 : NULL;
  size_t n = h ? strcspn(h, "\n") : 0;
  snprintf(out, len, "%.*s", (int)n, h ? h : "");
}

static int head_lines(const char *h) {
  int n = 1;
  for (; *h; h++) n += *h == '\n';
  return n;
}

static void spaces(FILE *o, int n) {
  for (int i = 0; i < n; i++) fputc(' ', o);
}

/* a cell in `w` columns; cut with "~" when longer (not with --wide) */
static void put_cell(FILE *o, const char *s, int w, int right, int last, int cut) {
  int sw = (int)ncs_text_width(s);
  if (cut && sw > w && w > 0) {
    size_t b = bytes_for(s, (size_t)w - 1);
    fwrite(s, 1, b, o);
    fputc('~', o);
    return;
  }
  if (right) spaces(o, w - sw);
  fputs(s, o);
  if (!right && !last) spaces(o, w - sw);
}

static size_t print_block(FILE *o, const ncs_tab_t *t, const ncs_tab_view_t *v, const size_t *cols,
                          size_t ncols, const int *w, size_t nshow, int grouped) {
  int ind = v->indent, nhl = 1;
  for (size_t k = 0; k < ncols; k++) {
    int h = head_lines(t->cols[cols[k]].head);
    if (h > nhl) nhl = h;
  }
  /* the free-text column: wraps under itself, or goes to lines of its own */
  size_t last = ncols ? cols[ncols - 1] : 0;
  int text = ncols && (t->cols[last].flags & NCS_COL_TEXT), fixed = ind, own_line = 0, tw = 0;
  for (size_t k = 0; k < ncols; k++) fixed += w[cols[k]] + (k ? (text && k == ncols - 1 ? 2 : 1) : 0);
  if (text) {
    fixed -= w[last];
    tw = w[last];
    if (!v->wide && v->width > 0 && fixed + tw > v->width) {
      tw = v->width - fixed;
      if (tw < 16) own_line = 1, tw = v->width - ind - 4;
    }
  }
  char hb[256];
  for (int l = 0; l < nhl; l++) {
    spaces(o, ind);
    if (v->bold) fputs(v->bold, o);
    for (size_t k = 0; k < ncols; k++) {
      const col_t *c = &t->cols[cols[k]];
      head_line(c->head, l, hb, sizeof hb);
      if (k) spaces(o, text && k == ncols - 1 ? 2 : 1);
      if (text && k == ncols - 1 && own_line) { /* its header on a line of its own, as its cells */
        if (l == nhl - 1) fprintf(o, "\n%*s%s", ind + 4, "", c->head);
        break;
      }
      put_cell(o, hb, w[cols[k]], (c->flags & NCS_COL_RIGHT) != 0, k == ncols - 1, 0);
    }
    if (v->bold && v->reset) fputs(v->reset, o);
    fputc('\n', o);
  }
  char grp[512], prev[512];
  int have_prev = 0;
  for (size_t r = 0; r < nshow; r++) {
    if (grouped) { /* a heading whenever the group columns change */
      size_t n = 0;
      grp[0] = 0;
      for (size_t c = 0; c < t->ncols && n < sizeof grp; c++)
        if (t->cols[c].flags & NCS_COL_GROUP)
          n += (size_t)snprintf(grp + n, sizeof grp - n, "%s%s", n ? " " : "", cell(t, r, c, 0));
      if (!have_prev || strcmp(prev, grp)) {
        spaces(o, ind > 0 ? ind - 1 : 0);
        if (v->bold) fputs(v->bold, o);
        fputs(grp, o);
        if (v->bold && v->reset) fputs(v->reset, o);
        fputc('\n', o);
      }
      memcpy(prev, grp, sizeof prev);
      have_prev = 1;
    }
    spaces(o, ind);
    int col = ind;
    for (size_t k = 0; k < ncols; k++) {
      const col_t *c = &t->cols[cols[k]];
      /* a group column shown as a column (the table was sorted by another): its short raw value */
      const char *s = cell(t, r, cols[k], (c->flags & NCS_COL_GROUP) != 0);
      if (text && k == ncols - 1) {
        if (own_line && !*s) {
          fputc('\n', o);
        } else if (own_line) {
          fputc('\n', o);
          char rest[64];
          snprintf(rest, sizeof rest, "%*s", ind + 4, "");
          ncs_wrap(o, rest, rest, s, v->width);
        } else {
          char rest[256];
          int at = col + 2;
          snprintf(rest, sizeof rest, "%*s", at < (int)sizeof rest - 1 ? at : (int)sizeof rest - 1, "");
          fputs("  ", o);
          wrap_from(o, at, rest, s, v->wide ? 0 : at + tw);
        }
        goto next;
      }
      if (k) spaces(o, 1), col++;
      put_cell(o, s, w[cols[k]], (c->flags & NCS_COL_RIGHT) != 0, k == ncols - 1, !v->wide);
      col += w[cols[k]];
    }
    fputc('\n', o);
  next:;
  }
  return nshow;
}

static size_t tab_print(FILE *o, const ncs_tab_t *t, const ncs_tab_view_t *v);

/* the table into memory, then out without the spaces that padding left at the ends of lines */
size_t ncs_tab_print(FILE *o, const ncs_tab_t *t, const ncs_tab_view_t *v) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return tab_print(o, t, v);
  size_t left = tab_print(m, t, v);
  fclose(m);
  for (size_t p = 0; p < len;) {
    char *nl = memchr(buf + p, '\n', len - p);
    size_t n = nl ? (size_t)(nl - (buf + p)) : len - p, e = n;
    while (e > 0 && buf[p + e - 1] == ' ') e--;
    fwrite(buf + p, 1, e, o);
    if (nl) fputc('\n', o);
    p += n + (nl ? 1 : 0);
  }
  free(buf);
  return left;
}

static size_t tab_print(FILE *o, const ncs_tab_t *t, const ncs_tab_view_t *v) {
  size_t nshow = v->top && t->nrows > v->top ? v->top : t->nrows;
  int grouped = 0;
  for (size_t c = 0; c < t->ncols; c++) grouped |= (t->cols[c].flags & NCS_COL_GROUP) != 0;
  grouped &= !t->ungroup;
  int *w = ncs_xcalloc(t->ncols ? t->ncols : 1, sizeof *w);
  size_t *vis = ncs_xcalloc(t->ncols ? t->ncols : 1, sizeof *vis), nvis = 0;
  char hb[256];
  for (size_t c = 0; c < t->ncols; c++) {
    const col_t *C = &t->cols[c];
    if ((C->flags & NCS_COL_WIDE) && !v->wide) continue;
    if (C->flags & NCS_COL_CSV) continue;
    if ((C->flags & NCS_COL_GROUP) && grouped) continue;
    vis[nvis++] = c;
    for (int l = 0; l < head_lines(C->head); l++) {
      head_line(C->head, l, hb, sizeof hb);
      int hw = (int)ncs_text_width(hb);
      if (hw > w[c]) w[c] = hw;
    }
    for (size_t r = 0; r < nshow; r++) {
      int cw = (int)ncs_text_width(cell(t, r, c, (C->flags & NCS_COL_GROUP) != 0));
      if (cw > w[c]) w[c] = cw;
    }
    if (!v->wide && C->max > 0 && w[c] > C->max) w[c] = C->max;
  }
  /* fold: blocks of columns that fit, each with the key columns (the free text goes last) */
  int total = v->indent;
  for (size_t k = 0; k < nvis; k++)
    if (!(t->cols[vis[k]].flags & NCS_COL_TEXT)) total += w[vis[k]] + (k ? 1 : 0);
  if (v->wide || v->width <= 0 || total <= v->width) {
    print_block(o, t, v, vis, nvis, w, nshow, grouped);
  } else {
    size_t *blk = ncs_xcalloc(nvis + 1, sizeof *blk), used = 0;
    int keyw = v->indent, nkeys = 0;
    for (size_t k = 0; k < nvis; k++)
      if (t->cols[vis[k]].flags & NCS_COL_KEY) keyw += w[vis[k]] + (nkeys++ ? 1 : 0);
    size_t k = 0;
    while (k < nvis) {
      size_t n = 0;
      int bw = keyw;
      for (size_t q = 0; q < nvis; q++)
        if (t->cols[vis[q]].flags & NCS_COL_KEY) blk[n++] = vis[q];
      size_t added = 0;
      for (; k < nvis; k++) {
        const col_t *C = &t->cols[vis[k]];
        if (C->flags & NCS_COL_KEY) continue;
        if (C->flags & NCS_COL_TEXT) { /* always fits: it wraps */
          blk[n++] = vis[k], added++;
          continue;
        }
        if (added && bw + 1 + w[vis[k]] > v->width) break;
        blk[n++] = vis[k], bw += 1 + w[vis[k]], added++;
      }
      if (!added) break;
      if (used++) fputc('\n', o);
      print_block(o, t, v, blk, n, w, nshow, grouped);
    }
    free(blk);
  }
  free(w), free(vis);
  if (nshow < t->nrows) {
    spaces(o, v->indent);
    fprintf(o, "... %zu more row%s%s%s%s\n", t->nrows - nshow, t->nrows - nshow == 1 ? "" : "s",
            v->more ? " (" : "", v->more ? v->more : "", v->more ? ")" : "");
  }
  return t->nrows - nshow;
}

void ncs_csv_field(FILE *o, const char *s) {
  int q = !*s ? 0 : strpbrk(s, ",\"\r\n") != NULL || s[0] == ' ' || s[strlen(s) - 1] == ' ';
  if (!q) {
    fputs(s, o);
    return;
  }
  fputc('"', o);
  for (; *s; s++) {
    if (*s == '"') fputc('"', o);
    fputc(*s, o);
  }
  fputc('"', o);
}

void ncs_tab_csv(FILE *o, const ncs_tab_t *t, size_t top) {
  int any = 0;
  for (size_t c = 0; c < t->ncols; c++) {
    if (!t->cols[c].key || (t->cols[c].flags & NCS_COL_NOCSV)) continue;
    if (any++) fputc(',', o);
    ncs_csv_field(o, t->cols[c].key);
  }
  fputc('\n', o);
  size_t n = top && top < t->nrows ? top : t->nrows;
  for (size_t r = 0; r < n; r++) {
    any = 0;
    for (size_t c = 0; c < t->ncols; c++) {
      if (!t->cols[c].key || (t->cols[c].flags & NCS_COL_NOCSV)) continue;
      if (any++) fputc(',', o);
      ncs_csv_field(o, cell(t, r, c, 1));
    }
    fputc('\n', o);
  }
}
