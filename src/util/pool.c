/* pool.c - stable, deduplicated strings (pool.h). Strings are packed into 64 KiB blocks; the map
 * goes from a content hash to the copy, probing hash + 1, + 2, ... on a collision. */
#include "util/pool.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

#define BLOCK (64u << 10)

static char *room(ncs_pool_t *p, size_t n) {
  if (n > p->left) {
    size_t sz = n > BLOCK ? n : BLOCK;
    NCS_XGROW(p->blocks, p->cap, p->nblocks + 1);
    p->block = p->blocks[p->nblocks++] = ncs_xrealloc(NULL, sz);
    p->left = sz;
  }
  char *c = p->block;
  p->block += n, p->left -= n;
  return c;
}

const char *ncs_pool_strn(ncs_pool_t *p, const char *s, size_t n) {
  uint64_t h = hm_bytes(s, n, NCS_HM_FNV0), v;
  for (;; h++) {
    if (!hm_get(&p->map, h, &v)) break;
    const char *c = (const char *)(uintptr_t)v;
    if (!strncmp(c, s, n) && !c[n]) return c;
  }
  char *c = room(p, n + 1);
  memcpy(c, s, n);
  c[n] = 0;
  if (hm_put(&p->map, h, (uint64_t)(uintptr_t)c) != 0) ncs_oom();
  return c;
}

const char *ncs_pool_str(ncs_pool_t *p, const char *s) {
  return s ? ncs_pool_strn(p, s, strlen(s)) : NULL;
}

const char *ncs_pool_fmt(ncs_pool_t *p, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  return ncs_pool_strn(p, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void ncs_pool_free(ncs_pool_t *p) {
  for (size_t i = 0; i < p->nblocks; i++) free(p->blocks[i]);
  free(p->blocks);
  hm_free(&p->map);
  memset(p, 0, sizeof *p);
}
