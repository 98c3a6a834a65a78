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

/* The test behind a straggler or slow-rank finding (docs/report.md, "Findings"): a one-sided
 * binomial test of the rank's count (last arrivals, or times slowest) in its trials against the
 * chance 1/nranks, at a family-wise level NCS_FIND_ALPHA over every rank tested (Bonferroni), in
 * all of the job and again without the quarter of the job's time that holds most of the count (a
 * rank held up for a while, e.g. descheduled, is not a straggler), together with a minimum
 * effect: the count must be at least min(2/nranks, (1 + 1/nranks) / 2) of the trials (twice
 * chance, or halfway from chance to always for small communicators). */
#define NCS_FIND_ALPHA 0.01
/* A finding of an effect (a straggler, a slow rank, a stall, repeated stalls) is a headline only
 * when the effect is material: the time it cost each other rank of its communicator (a slow
 * rank: its excess) is at least this share of the job's wall time (docs/report.md, "Findings").
 * Smaller ones are listed as minor, with their size. */
#define NCS_FIND_MATERIAL 0.05

typedef struct {
  double p;          /* P(count or more | chance), one-sided */
  double p_rest;     /* the same without the quarter of the job holding most of the count */
  double chance;     /* 1/nranks */
  double min_share;  /* the least share of its trials that counts as an effect */
  uint32_t tests;    /* ranks tested (the Bonferroni correction) */
  int significant;   /* p and p_rest <= NCS_FIND_ALPHA / tests, and the share reaches min_share */
} ncs_find_test_t;

typedef enum {
  NCS_FIND_STRAGGLER,  /* a rank that arrived last significantly more often than chance (rank) */
  NCS_FIND_SLOW_RANK,  /* a rank that took longest significantly more often than chance (rank) */
  NCS_FIND_MISMATCH,   /* collective instances that differ across ranks (mism[0] as example) */
  NCS_FIND_INCOMPLETE, /* instances not recorded by every rank */
  NCS_FIND_P2P,        /* unpaired sends/receives, pairs with different sizes */
  NCS_FIND_DAMAGED,    /* damaged trace files */
  NCS_FIND_STALL,      /* one stall (stall; rank: the late rank when known) */
  NCS_FIND_STALLS,     /* a rank that stalled 2+ times (rank) */
} ncs_find_kind_t;
#define NCS_FIND_NKINDS (NCS_FIND_STALLS + 1)
/* the kinds as report --json and the SQLite findings table name them: "straggler", ... */
extern const char *const ncs_find_kind_names[NCS_FIND_NKINDS];

/* where a finding's waiting was measured (docs/report.md, "Where waiting is measured") */
enum { NCS_SIDE_NONE = 0, NCS_SIDE_HOST = 1, NCS_SIDE_GPU = 2, NCS_SIDE_MIXED = 3 };
extern const char *const ncs_side_names[4]; /* "", "host-side", "GPU-side", "mixed" */

typedef struct {
  ncs_find_kind_t kind;
  const ncs_an_rank_t *rank; /* STRAGGLER, SLOW_RANK, STALLS; STALL when found; else NULL */
  const ncs_an_stall_t *stall; /* NCS_FIND_STALL */
  ncs_find_test_t test;      /* STRAGGLER and SLOW_RANK */
  /* its size: what it cost each other rank (a slow rank: its excess), ns, and that as a share
   * of the job's wall time; headline: an effect of at least NCS_FIND_MATERIAL, or a finding that
   * is no effect (mismatches, incomplete instances, p2p, damage); else minor */
  int64_t size_ns;
  double share;
  int headline;
  int side;                  /* NCS_SIDE_* */
} ncs_finding_t;

/* A warning about what the analysis rests on (docs/report.md, "Coverage"): said before the
 * findings by the terminal report, in --json ("warnings") and on the --html page alike. */
#define NCS_WARN_MAX 16
typedef struct {
  const char *key; /* "unreadable", "damaged", "lost", "no_footer", "write_errors", "gaps",
                    * "sampled", "no_completion", "unsampled", "gpu_suspect" */
  char text[1024];
} ncs_warning_t;

typedef struct {
  const ncs_an_rank_t **by_wait; /* all nranks: most waiting caused first, then most last arrivals */
  const ncs_an_rank_t **by_slow; /* all nranks: largest excess first, then most often slowest */
  ncs_finding_t *items;          /* the findings, in the order the report prints them: the
                                  * headlines (nheadline), then the minor ones */
  uint32_t n, nheadline;
  ncs_warning_t warn[NCS_WARN_MAX];
  uint32_t nwarn;
  /* what to say when no finding stands out: "nothing stands out", or with records lost, that it
   * covers only what was recorded, or that the recording cannot tell (most operations lost) */
  char none[320];
} ncs_findings_t;

/* Select the findings of `a`: at most `top` stragglers, `top` slow ranks and `top` single stalls,
 * each significant, and a finding per rank that stalled twice or more (the rules are in
 * docs/report.md, Findings). Aborts when out of memory. */
void ncs_findings_build(ncs_findings_t *f, const ncs_analysis_t *a, uint32_t top);
#define NCS_FIND_TOP 5 /* report's --top default: the SQLite findings table uses it too */
void ncs_findings_free(ncs_findings_t *f);
/* the test of a rank's last arrivals (slow 0) or times slowest (slow 1) */
ncs_find_test_t ncs_find_test(const ncs_analysis_t *a, const ncs_an_rank_t *r, int slow,
                              uint32_t tests);
/* One finding as the terminal report's sentence (without "  - " and newline). Strings from the
 * trace (function names) are copied as they are: escape the result for HTML. */
void ncs_finding_text(const ncs_analysis_t *a, const ncs_finding_t *f, char *out, size_t len);

/* A bucket's breakdown label as a short phrase (docs/report.md, "Breakdown"): "network 82%",
 * "peer_wait 64% (for rank 2)", "mixed", "cannot tell: <reason>"; "-" for p2p buckets. */
void ncs_bd_label_text(const ncs_an_bucket_t *b, char *out, size_t len);
/* the share of a bucket's proxy time (summed phases) in phase p, 0..1 */
double ncs_bd_share(const ncs_an_bucket_t *b, int p);
/* the share of enqueue and launch in (launch + proxy span), 0..1 */
double ncs_bd_launch_share(const ncs_an_bucket_t *b);
/* the share of the queue (waiting behind earlier work of the communicator) in (queue + launch +
 * proxy span), 0..1 (src/analyze/breakdown.c) */
double ncs_bd_queue_share(const ncs_an_bucket_t *b);

/* the name of the timing source most of a bucket's samples used (ncs_src_names) */
const char *ncs_bucket_timing(const ncs_an_bucket_t *b);

#endif
