/* findings.h - what `ncclscope report` says first, and how it writes numbers: shared by the
 * terminal report, --json and the --html page (src/cli/report.c, src/export/html_report.c), so
 * that all of them name the same ranks in the same order (docs/report.md).
 */
#ifndef NCS_ANALYZE_FINDINGS_H
#define NCS_ANALYZE_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/analyze.h"
#include "util/fmt.h"

typedef enum {
  NCS_FIND_STRAGGLER,  /* a rank that arrived last and made the others wait (rank) */
  NCS_FIND_SLOW_RANK,  /* a rank that took longest in 25%+ of its collectives (rank) */
  NCS_FIND_MISMATCH,   /* collective instances that differ across ranks (mism[0] as example) */
  NCS_FIND_INCOMPLETE, /* instances not recorded by every rank */
  NCS_FIND_P2P,        /* unpaired sends/receives, pairs with different sizes */
  NCS_FIND_DAMAGED,    /* damaged trace files */
} ncs_find_kind_t;

typedef struct {
  ncs_find_kind_t kind;
  const ncs_an_rank_t *rank; /* NCS_FIND_STRAGGLER and NCS_FIND_SLOW_RANK, else NULL */
} ncs_finding_t;

typedef struct {
  const ncs_an_rank_t **by_wait; /* all nranks: most waiting caused first, then most last arrivals */
  const ncs_an_rank_t **by_slow; /* all nranks: largest excess first, then most often slowest */
  ncs_finding_t *items;          /* the findings, in the order the report prints them */
  uint32_t n;
} ncs_findings_t;

/* Select the findings of `a`: at most `top` stragglers and `top` slow ranks (the rules are in
 * docs/report.md, Findings). Aborts when out of memory. */
void ncs_findings_build(ncs_findings_t *f, const ncs_analysis_t *a, uint32_t top);
void ncs_findings_free(ncs_findings_t *f);
/* One finding as the terminal report's sentence (without "  - " and newline). Strings from the
 * trace (function names) are copied as they are: escape the result for HTML. */
void ncs_finding_text(const ncs_analysis_t *a, const ncs_finding_t *f, char *out, size_t len);

/* the name of the timing source most of a bucket's samples used (ncs_src_names) */
const char *ncs_bucket_timing(const ncs_an_bucket_t *b);

#endif
