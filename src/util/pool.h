/* pool.h - the string pool of the read side (ncs_util): stable, deduplicated copies.
 *
 * A pooled string lives until ncs_pool_free and is never moved, so callers keep plain pointers
 * to it. Equal strings get the same pointer: within one pool, pointer equality is string
 * equality (the analysis compares datatypes and functions that way; the timeline's sinks intern
 * by pointer). Not thread-safe: callers that share a pool lock around it. Out of memory aborts
 * (mem.h). */
#ifndef NCS_UTIL_POOL_H
#define NCS_UTIL_POOL_H

#include <stddef.h>

#include "util/hmap.h"

typedef struct {
  hmap_t map; /* content hash (+ probe) -> pointer */
  char *block;
  size_t left;
  char **blocks;
  size_t nblocks, cap;
} ncs_pool_t;

const char *ncs_pool_strn(ncs_pool_t *p, const char *s, size_t n); /* s need not end at n */
const char *ncs_pool_str(ncs_pool_t *p, const char *s);            /* NULL stays NULL */
const char *ncs_pool_fmt(ncs_pool_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ncs_pool_free(ncs_pool_t *p); /* every string of the pool goes; the pool can be reused */

#endif
