/* mem.c - the tools' allocator and growable arrays (mem.h). */
#include "util/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void ncs_oom(void) {
  fprintf(stderr, "ncclscope: out of memory\n");
  abort();
}

void *ncs_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) ncs_oom();
  return q;
}

void *ncs_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) ncs_oom();
  return p;
}

char *ncs_xstrdup(const char *s) {
  if (!s) return NULL;
  char *c = strdup(s);
  if (!c) ncs_oom();
  return c;
}

int ncs_grow(void *pp, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > ((size_t)-1 / 2) / (elem ? elem : 1)) return -1;
    c *= 2;
  }
  void *q = realloc(*(void **)pp, c * elem);
  if (!q) return -1;
  memset((char *)q + *cap * elem, 0, (c - *cap) * elem);
  *(void **)pp = q;
  *cap = c;
  return 0;
}

void ncs_xgrow(void *pp, size_t *cap, size_t need, size_t elem) {
  if (ncs_grow(pp, cap, need, elem) != 0) ncs_oom();
}
