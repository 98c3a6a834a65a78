/* fmt.c - durations, sizes, shares and UTC times (fmt.h). */
#include "util/fmt.h"
#include "util/text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

void ncs_fmt_dur(char *o, size_t n, double ns, int style) {
  static const struct {
    double div;
    const char *unit, *fixed;
  } u[] = {{1e9, "s", "%.2f %s"}, {1e6, "ms", "%.2f %s"}, {1e3, "us", "%.1f %s"}, {1, "ns", "%.0f %s"}};
  double a = ns < 0 ? -ns : ns;
  size_t k = 0;
  while (k < 3 && a < u[k].div) k++;
  snprintf(o, n, style == NCS_DUR_SHORT ? "%g %s" : u[k].fixed, ns / u[k].div, u[k].unit);
}

static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};

void ncs_fmt_bytes(char *o, size_t n, int lg) {
  if (lg < 0) {
    snprintf(o, n, "0 B");
    return;
  }
  int k = lg / 10;
  if (k > 4) k = 4;
  snprintf(o, n, "%llu %s", 1ull << (lg - 10 * k), units[k]);
}

void ncs_fmt_size(char *o, size_t n, uint64_t b) {
  double v = (double)b;
  int k = 0;
  while (k < 4 && v >= 1024) v /= 1024, k++;
  if (k)
    snprintf(o, n, "%.1f %s", v, units[k]);
  else
    snprintf(o, n, "%llu B", (unsigned long long)b);
}

double ncs_pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0; }

void ncs_fmt_utc(char *o, size_t n, int64_t real) {
  time_t s = (time_t)(real / 1000000000);
  struct tm tm;
  char b[32];
  if (real <= 0 || !gmtime_r(&s, &tm) || !strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", &tm)) {
    snprintf(o, n, "?");
    return;
  }
  snprintf(o, n, "%s.%03d UTC", b, (int)((real % 1000000000) / 1000000));
}

void ncs_fmt_comm_id(char *out, size_t len, uint64_t id) { snprintf(out, len, NCS_COMM_ID_FMT, id); }

void ncs_fmt_comm_label(char *out, size_t len, uint32_t index) { snprintf(out, len, "c%u", index); }

void ncs_fmt_comm(char *out, size_t len, uint32_t index, uint64_t comm_id, const char *name) {
  if (name && *name)
    snprintf(out, len, "c%u " NCS_COMM_ID_FMT " \"%s\"", index, comm_id, name);
  else
    snprintf(out, len, "c%u " NCS_COMM_ID_FMT, index, comm_id);
}

uint64_t ncs_progress_after_ns(void) {
  static uint64_t after = UINT64_MAX;
  if (after == UINT64_MAX) {
    const char *e = getenv("NCCLSCOPE_PROGRESS_AFTER_MS");
    char *end = NULL;
    unsigned long long ms = e && *e ? strtoull(e, &end, 10) : 1000;
    if (e && *e && (!isdigit((unsigned char)*e) || *end || ms > 3600000)) {
      /* the settings' one rule (docs/config.md, "Values"): said, and the default used */
      fprintf(stderr, "ncclscope: warning: NCCLSCOPE_PROGRESS_AFTER_MS='%s' is not a number of ms from 0 "
              "to 3600000; using the default, 1000\n", e);
      ms = 1000;
    }
    after = (uint64_t)ms * 1000000ull;
  }
  return after;
}

void ncs_progress(const char *prog, double pct, const char *detail, int final) {
  if (pct > 100) pct = 100;
  if (pct < 0) pct = 0;
  if (!isatty(STDERR_FILENO)) {
    fprintf(stderr, "%s: %5.1f%% (%s)\n", prog, pct, detail);
    return;
  }
  char bar[31];
  int fill = (int)(pct * 30 / 100 + 0.5);
  for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '-';
  bar[30] = 0;
  /* the detail is cut so that the bar stays one line of the terminal (a wrapped line would not
   * be redrawn in place) */
  int room = ncs_term_width(STDERR_FILENO) - (int)strlen(prog) - 2 - 32 - 7 - 1;
  if (room < 0) room = 0;
  /* \r: back to the line's start; \033[K: clear what a longer earlier line left */
  fprintf(stderr, "\r%s: [%s] %5.1f%% %.*s\033[K%s", prog, bar, pct, room, detail, final ? "\n" : "");
  fflush(stderr);
}

size_t ncs_utf8_len(const unsigned char *p) {
  unsigned c = p[0];
  if (c >= 0xc2 && c <= 0xdf) return (p[1] & 0xc0) == 0x80 ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80) return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)) return 0; /* overlong, surrogate */
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80) return 0;
    if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)) return 0;
    return 4;
  }
  return 0;
}

void ncs_json_escape(const char *s, ncs_put_fn put, void *ctx) {
  const unsigned char *p = (const unsigned char *)(s ? s : ""), *run = p;
  while (*p) {
    unsigned c = *p;
    size_t k = 1;
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') { /* plain ASCII: part of the run */
      p++;
      continue;
    }
    if (c >= 0x80 && (k = ncs_utf8_len(p)) != 0) {
      p += k;
      continue;
    }
    if (p > run) put(ctx, (const char *)run, (size_t)(p - run));
    char t[8];
    if (c == '"' || c == '\\')
      t[0] = '\\', t[1] = (char)c, put(ctx, t, 2);
    else if (c < 0x80) /* a control character */
      snprintf(t, sizeof t, "\\u%04x", c), put(ctx, t, 6);
    else
      put(ctx, "\\ufffd", 6);
    run = ++p;
  }
  if (p > run) put(ctx, (const char *)run, (size_t)(p - run));
}
