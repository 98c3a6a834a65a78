/* damage.c - ncs-damage: write a damaged copy of a trace file, for the CLI tests and the
 * hostile-input harness (scripts/hostile.sh, docs/testing.md).
 *
 *   ncs-damage IN list                    one line per chunk: index offset type length
 *   ncs-damage IN OUT cut OFF             the first OFF bytes
 *   ncs-damage IN OUT flip OFF BIT        one bit flipped
 *   ncs-damage IN OUT zero OFF LEN        LEN bytes zeroed
 *   ncs-damage IN OUT tear K KEEP         chunk K cut to KEEP bytes, the chunks after it whole
 *                                         (what a transient full disk left before the writer
 *                                         truncated back)
 *   ncs-damage IN OUT dup K               chunk K written twice
 *   ncs-damage IN OUT swap K              chunks K and K+1 swapped
 *   ncs-damage IN OUT len K VALUE         chunk K's length field set to VALUE
 *   ncs-damage IN OUT version V           the file header's format version set to V
 *   ncs-damage IN OUT random SEED LEN     LEN bytes of xorshift noise after IN's first 16 bytes
 *   ncs-damage IN OUT splice K OTHER      the chunks of trace file OTHER (all after its file
 *                                         header) inserted after chunk K: another recording's
 *                                         segment spliced in
 *   ncs-damage IN where OFF               where offset OFF (or @N) lies, one line: the offset and,
 *                                         for a trace file, "chunk K of N" (K -1: the file
 *                                         header); for a flight file "header", "meta", "slot S
 *                                         hdr", "slot S kf" (its keyframe) or "slot S" (S by
 *                                         age, 0 the oldest, of N used)
 *
 * Chunk indexes count the whole, well-framed chunks from the start (as `list` prints them); an
 * index past them is an error (exit 2). Offsets past the end are clamped. An offset written @N
 * is the N-th byte (modulo their number) of the bytes that hold data: for a trace file every
 * byte after the file header; for a flight file its header fields, the valid part of its meta
 * region and the used part of each used ring slot (the rest is padding or free room, where a
 * flipped bit loses nothing).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/flight.h"
#include "trace/format.h"

typedef struct {
  uint8_t *p;
  size_t len;
} bytes_t;

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int die(const char *msg) {
  fprintf(stderr, "ncs-damage: %s\n", msg);
  return 2;
}

static int load(const char *path, bytes_t *b) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16;
  b->p = malloc(cap), b->len = 0;
  for (size_t n; b->p && (n = fread(b->p + b->len, 1, cap - b->len, f)) > 0;) {
    b->len += n;
    if (b->len == cap) b->p = realloc(b->p, cap *= 2);
  }
  fclose(f);
  return b->p ? 0 : -1;
}

static int save(const char *path, const uint8_t *p, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(p, 1, len, f) == len;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* Offsets of the well-framed chunks; off[n] is where the framing ends. */
static size_t chunks(const bytes_t *b, size_t *off, size_t max) {
  size_t n = 0, o = NCS_FILE_HEADER_LEN;
  while (n < max && o + NCS_CHUNK_HEADER_LEN <= b->len && le32(b->p + o) == NCS_CHUNK_MAGIC &&
         le32(b->p + o + 8) <= b->len - o - NCS_CHUNK_HEADER_LEN) {
    off[n++] = o;
    o += NCS_CHUNK_HEADER_LEN + le32(b->p + o + 8);
  }
  off[n] = o;
  return n;
}

static uint64_t num(const char *s) { return strtoull(s, NULL, 0); }

/* The byte ranges of `b` that hold data (see the top), into r[0..max); returns how many. */
static size_t live(const bytes_t *b, uint64_t (*r)[2], size_t max) {
  ncs_flight_hdr_t h;
  if (!ncs_flight_is(b->p, b->len) || b->len < NCS_FLIGHT_HDR_LEN) {
    r[0][0] = NCS_FILE_HEADER_LEN < b->len ? NCS_FILE_HEADER_LEN : 0, r[0][1] = b->len;
    return 1;
  }
  memcpy(&h, b->p, sizeof h);
  size_t n = 0;
  r[n][0] = 0, r[n++][1] = sizeof h;
  if (h.meta_off < b->len) r[n][0] = h.meta_off, r[n++][1] = h.meta_off + h.meta_len;
  for (uint64_t i = 0; i < h.nslots && n < max; i++) {
    uint64_t at = h.ring_off + i * h.slot_bytes;
    ncs_flight_slot_t sl;
    if (at + sizeof sl > b->len) break;
    memcpy(&sl, b->p + at, sizeof sl);
    if (sl.seq) r[n][0] = at, r[n++][1] = at + NCS_FLIGHT_SLOT_HDR + sl.used;
  }
  for (size_t i = 0; i < n; i++) /* a damaged header may point anywhere */
    if (r[i][1] > b->len) r[i][1] = b->len;
  return n;
}

/* An offset argument: a number, or @N (the N-th byte that holds data). */
static uint64_t offset(const bytes_t *b, const char *s) {
  if (s[0] != '@') return num(s);
  static uint64_t r[1 << 16][2];
  size_t n = live(b, r, 1 << 16);
  uint64_t total = 0, k = num(s + 1);
  for (size_t i = 0; i < n; i++) total += r[i][1] > r[i][0] ? r[i][1] - r[i][0] : 0;
  if (!total) return 0;
  k %= total;
  for (size_t i = 0; i < n; i++) {
    uint64_t w = r[i][1] > r[i][0] ? r[i][1] - r[i][0] : 0;
    if (k < w) return r[i][0] + k;
    k -= w;
  }
  return 0;
}

/* Where offset `at` lies (see the top). */
static int where(const bytes_t *b, const size_t *off, size_t n, uint64_t at) {
  if (!ncs_flight_is(b->p, b->len) || b->len < NCS_FLIGHT_HDR_LEN) {
    long k = -1;
    for (size_t i = 0; i < n; i++)
      if (at >= off[i]) k = (long)i;
    if (n && at >= off[n]) k = (long)n; /* past the framing: bytes after the last whole chunk */
    printf("%llu chunk %ld of %zu\n", (unsigned long long)at, k, n);
    return 0;
  }
  ncs_flight_hdr_t h;
  memcpy(&h, b->p, sizeof h);
  if (at < NCS_FLIGHT_HDR_LEN) return printf("%llu header\n", (unsigned long long)at), 0;
  if (at >= h.meta_off && at < h.meta_off + h.meta_cap) return printf("%llu meta\n", (unsigned long long)at), 0;
  uint64_t used = 0, older = 0, mine = 0, kf = 0;
  int found = 0;
  for (uint64_t i = 0; i < h.nslots; i++) {
    uint64_t s = h.ring_off + i * h.slot_bytes;
    ncs_flight_slot_t sl;
    if (s + sizeof sl > b->len) break;
    memcpy(&sl, b->p + s, sizeof sl);
    if (sl.seq) used++;
    if (at >= s && at < s + h.slot_bytes)
      found = 1, mine = sl.seq, older = at < s + NCS_FLIGHT_SLOT_HDR,
      kf = at >= s + NCS_FLIGHT_SLOT_HDR && at < s + NCS_FLIGHT_SLOT_HDR + sl.kf_len;
  }
  if (!found) return printf("%llu other\n", (unsigned long long)at), 0;
  uint64_t age = 0; /* slots with a smaller seq */
  for (uint64_t i = 0; i < h.nslots; i++) {
    uint64_t s = h.ring_off + i * h.slot_bytes;
    ncs_flight_slot_t sl;
    if (s + sizeof sl > b->len) break;
    memcpy(&sl, b->p + s, sizeof sl);
    if (sl.seq && sl.seq < mine) age++;
  }
  printf("%llu slot %llu%s of %llu\n", (unsigned long long)at, (unsigned long long)age,
         older ? " hdr" : kf ? " kf" : "", (unsigned long long)used);
  return 0;
}

/* The operation argv[3] on `in` (chunks at off[0..n]), written to argv[2]. */
static int damage(const bytes_t *inp, const size_t *off, size_t n, int argc, char **argv) {
  const bytes_t in = *inp;
  const char *out = argv[2], *op = argv[3];
  uint64_t a = argc > 4 ? offset(&in, argv[4]) : 0, c = argc > 5 ? num(argv[5]) : 0;
  size_t len = in.len;
  uint8_t *o = malloc(2 * len + 64 + (!strcmp(op, "random") ? c : 0));
  memcpy(o, in.p, len);
  int chunk_op = !strcmp(op, "tear") || !strcmp(op, "dup") || !strcmp(op, "swap") ||
                 !strcmp(op, "len");
  if (!strcmp(op, "splice")) a = num(argv[4]);
  if (chunk_op && (a >= n || (!strcmp(op, "swap") && a + 1 >= n))) {
    free(o);
    return die("no such chunk");
  }
  size_t k = (size_t)a, at = chunk_op ? off[k] : 0, clen = chunk_op ? off[k + 1] - off[k] : 0;
  if (!strcmp(op, "splice")) {
    bytes_t other;
    if (argc < 6 || a >= n) {
      free(o);
      return die(argc < 6 ? "splice needs K and OTHER" : "no such chunk");
    }
    if (load(argv[5], &other) != 0 || other.len < NCS_FILE_HEADER_LEN) {
      free(o);
      return die("cannot read OTHER");
    }
    size_t add = other.len - NCS_FILE_HEADER_LEN, after = off[k + 1];
    uint8_t *x = realloc(o, len + add);
    if (!x) {
      free(o), free(other.p);
      return die("out of memory");
    }
    o = x;
    memcpy(o + after + add, in.p + after, in.len - after);
    memcpy(o + after, other.p + NCS_FILE_HEADER_LEN, add);
    len = in.len + add;
    free(other.p);
  } else if (!strcmp(op, "cut")) {
    len = a < len ? (size_t)a : len;
  } else if (!strcmp(op, "flip")) {
    if (a < len) o[a] ^= (uint8_t)(1u << (c & 7));
  } else if (!strcmp(op, "zero")) {
    if (a < len) memset(o + a, 0, c < len - a ? (size_t)c : len - (size_t)a);
  } else if (!strcmp(op, "tear")) {
    size_t keep = c < clen ? (size_t)c : clen - 1;
    memcpy(o + at + keep, in.p + off[k + 1], in.len - off[k + 1]);
    len = in.len - (clen - keep);
  } else if (!strcmp(op, "dup")) {
    memcpy(o + off[k + 1], in.p + at, clen);
    memcpy(o + off[k + 1] + clen, in.p + off[k + 1], in.len - off[k + 1]);
    len = in.len + clen;
  } else if (!strcmp(op, "swap")) {
    size_t nlen = off[k + 2] - off[k + 1];
    memcpy(o + at, in.p + off[k + 1], nlen);
    memcpy(o + at + nlen, in.p + at, clen);
  } else if (!strcmp(op, "len")) {
    for (int i = 0; i < 4; i++) o[at + 8 + i] = (uint8_t)(c >> (8 * i));
  } else if (!strcmp(op, "version")) {
    for (int i = 0; i < 4 && 8 + i < (int)len; i++) o[8 + i] = (uint8_t)(a >> (8 * i));
  } else if (!strcmp(op, "random")) {
    uint64_t x = a * 0x9E3779B97F4A7C15ull + 1;
    len = (len < NCS_FILE_HEADER_LEN ? len : NCS_FILE_HEADER_LEN) + (size_t)c;
    for (size_t i = len - (size_t)c; i < len; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      o[i] = (uint8_t)x;
    }
  } else {
    free(o);
    return die("unknown operation");
  }
  int rc = save(out, o, len) != 0 ? die("cannot write the output") : 0;
  free(o);
  return rc;
}

int main(int argc, char **argv) {
  bytes_t in;
  if (argc < 3) return die("usage: ncs-damage IN list | IN OUT OP ARGS... (see tests/damage.c)");
  if (load(argv[1], &in) != 0) return die("cannot read the input");
  enum { MAXC = 1 << 20 };
  size_t *off = malloc((MAXC + 1) * sizeof *off), n = chunks(&in, off, MAXC);
  if (!strcmp(argv[2], "where")) {
    int rc = argc < 4 ? die("where needs an offset") : where(&in, off, n, offset(&in, argv[3]));
    free(off), free(in.p);
    return rc;
  }
  if (!strcmp(argv[2], "list")) {
    for (size_t k = 0; k < n; k++)
      printf("%zu %zu %u %u\n", k, off[k], (unsigned)(in.p[off[k] + 4] | in.p[off[k] + 5] << 8),
             le32(in.p + off[k] + 8));
    free(off), free(in.p);
    return 0;
  }
  int rc = argc < 4 ? die("missing operation") : damage(&in, off, n, argc, argv);
  free(off), free(in.p);
  return rc;
}
