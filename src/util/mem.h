/* mem.h - allocation helpers of the read side (ncs_util): the tools' allocator, which stops the
 * program with a message when memory runs out, and growable arrays.
 *
 * The tools (report, export, diagnose) hold what a trace needs and nothing the user controls
 * beyond it; running out of memory is not an answer they can give, so the x* functions abort
 * with "ncclscope: out of memory" instead of returning NULL. ncs_grow is for code that reports
 * the failure itself (the timeline exporter returns "out of memory" to its caller). */
#ifndef NCS_UTIL_MEM_H
#define NCS_UTIL_MEM_H

#include <stddef.h>

_Noreturn void ncs_oom(void);          /* "ncclscope: out of memory", then abort */
void *ncs_xrealloc(void *p, size_t n);      /* realloc; n 0 gives a 1-byte block */
void *ncs_xcalloc(size_t n, size_t size);   /* calloc; 0 gives a 1-byte block */
char *ncs_xstrdup(const char *s);           /* NULL stays NULL */

/* Grow the array *pp of elements of `elem` bytes and capacity *cap to hold at least `need`,
 * doubling from 16; new elements are zeroed. 0, or -1 when out of memory (*pp is unchanged). */
int ncs_grow(void *pp, size_t *cap, size_t need, size_t elem);
/* the same, aborting when out of memory */
void ncs_xgrow(void *pp, size_t *cap, size_t need, size_t elem);
#define NCS_GROW(arr, cap, need) ncs_grow(&(arr), &(cap), (need), sizeof *(arr))
#define NCS_XGROW(arr, cap, need) ncs_xgrow(&(arr), &(cap), (need), sizeof *(arr))

#endif
