/* pb.h - a small protocol-buffers writer (and reader helpers) for the Perfetto exporter.
 *
 * Only what the exporter needs: varints, fixed64, doubles, length-delimited bytes and nested
 * messages, written into one growable buffer. A nested message is written in place: pb_open
 * writes the tag and reserves one byte for the length, pb_close patches the length and moves
 * the body when the length needs more than one byte (rare: most messages here are short).
 * Field numbers and wire types are the caller's; see docs/timeline.md for the ones we emit.
 */
#ifndef NCS_EXPORT_PB_H
#define NCS_EXPORT_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2, PB_FIXED32 = 5 };

typedef struct {
  uint8_t *p;
  size_t n, cap;
  int oom; /* an allocation failed: the buffer stopped growing, its content is incomplete */
} pb_buf_t;

/* make room for `need` more bytes; returns 0, or -1 (and sets oom) when out of memory */
int pb_grow(pb_buf_t *b, size_t need);
void pb_free(pb_buf_t *b);

static inline int pb_room(pb_buf_t *b, size_t need) {
  return b->n + need <= b->cap ? 0 : pb_grow(b, need);
}

static inline void pb_varint(pb_buf_t *b, uint64_t v) {
  if (pb_room(b, 10)) return;
  uint8_t *p = b->p + b->n;
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  b->n = (size_t)(p - b->p);
}

static inline void pb_tag(pb_buf_t *b, uint32_t field, uint32_t wt) {
  pb_varint(b, ((uint64_t)field << 3) | wt);
}

static inline void pb_u64(pb_buf_t *b, uint32_t field, uint64_t v) {
  pb_tag(b, field, PB_VARINT);
  pb_varint(b, v);
}

/* int32/int64 fields: two's complement (negative values take 10 bytes), not zigzag */
static inline void pb_i64(pb_buf_t *b, uint32_t field, int64_t v) { pb_u64(b, field, (uint64_t)v); }

static inline void pb_fixed64(pb_buf_t *b, uint32_t field, uint64_t v) {
  pb_tag(b, field, PB_FIXED64);
  if (pb_room(b, 8)) return;
  for (int i = 0; i < 8; i++) b->p[b->n++] = (uint8_t)(v >> (8 * i));
}

static inline void pb_double(pb_buf_t *b, uint32_t field, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  pb_fixed64(b, field, v);
}

static inline void pb_bytes(pb_buf_t *b, uint32_t field, const void *d, size_t n) {
  pb_tag(b, field, PB_LEN);
  pb_varint(b, n);
  if (pb_room(b, n)) return;
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}

static inline void pb_str(pb_buf_t *b, uint32_t field, const char *s) {
  pb_bytes(b, field, s, strlen(s));
}

/* Start a nested message (or any length-delimited field): returns the mark for pb_close. */
static inline size_t pb_open(pb_buf_t *b, uint32_t field) {
  pb_tag(b, field, PB_LEN);
  if (pb_room(b, 1)) return b->n;
  b->p[b->n++] = 0;
  return b->n; /* the body starts here; the length byte is at mark - 1 */
}

/* Finish the message opened at `mark`: writes its length, moving the body if needed. */
void pb_close(pb_buf_t *b, size_t mark);

/* ---- reading (used by the lint and the tests) */

/* Read a varint at *p (< end). Returns 0, or -1 when it is cut or longer than 10 bytes. */
int pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

typedef struct {
  uint32_t field, wt;
  uint64_t v;          /* VARINT, FIXED64, FIXED32 */
  const uint8_t *data; /* LEN */
  size_t len;
} pb_field_t;

/* Read the next field of a message. Returns 1 with *f filled, 0 at the end, -1 when malformed
 * (groups, which we never write, are malformed here). */
int pb_next(const uint8_t **p, const uint8_t *end, pb_field_t *f);

#endif
