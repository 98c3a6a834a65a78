/* pb.c - protocol-buffers writer and reader helpers (see pb.h). */
#include "export/pb.h"

#include <stdlib.h>

int pb_grow(pb_buf_t *b, size_t need) {
  if (b->oom) return -1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + need) cap *= 2;
  uint8_t *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return -1;
  }
  b->p = p;
  b->cap = cap;
  return 0;
}

void pb_free(pb_buf_t *b) {
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
  b->oom = 0;
}

void pb_close(pb_buf_t *b, size_t mark) {
  if (b->oom || mark == 0 || mark > b->n) return;
  size_t len = b->n - mark;
  if (len < 0x80) {
    b->p[mark - 1] = (uint8_t)len;
    return;
  }
  uint8_t tmp[10];
  size_t k = 0;
  uint64_t v = len;
  while (v >= 0x80) {
    tmp[k++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  tmp[k++] = (uint8_t)v;
  if (pb_room(b, k - 1)) return;
  memmove(b->p + mark - 1 + k, b->p + mark, len);
  memcpy(b->p + mark - 1, tmp, k);
  b->n += k - 1;
}

int pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  const uint8_t *q = *p;
  for (int i = 0; i < 10; i++) {
    if (q >= end) return -1;
    uint8_t c = *q++;
    if (i == 9 && c > 1) return -1;
    r |= (uint64_t)(c & 0x7F) << (7 * i);
    if (!(c & 0x80)) {
      *p = q;
      *v = r;
      return 0;
    }
  }
  return -1;
}

int pb_next(const uint8_t **p, const uint8_t *end, pb_field_t *f) {
  if (*p >= end) return 0;
  uint64_t key;
  if (pb_read_varint(p, end, &key) != 0) return -1;
  f->field = (uint32_t)(key >> 3);
  f->wt = (uint32_t)(key & 7);
  if (f->field == 0 || key >> 3 > 0x1FFFFFFF) return -1;
  f->data = NULL;
  f->len = 0;
  f->v = 0;
  switch (f->wt) {
  case PB_VARINT: return pb_read_varint(p, end, &f->v) == 0 ? 1 : -1;
  case PB_FIXED64:
    if (end - *p < 8) return -1;
    for (int i = 0; i < 8; i++) f->v |= (uint64_t)(*p)[i] << (8 * i);
    *p += 8;
    return 1;
  case PB_FIXED32:
    if (end - *p < 4) return -1;
    for (int i = 0; i < 4; i++) f->v |= (uint64_t)(*p)[i] << (8 * i);
    *p += 4;
    return 1;
  case PB_LEN: {
    uint64_t n;
    if (pb_read_varint(p, end, &n) != 0 || n > (uint64_t)(end - *p)) return -1;
    f->data = *p;
    f->len = (size_t)n;
    *p += n;
    return 1;
  }
  default: return -1;
  }
}
