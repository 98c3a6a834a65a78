/* html_report.h - `ncclscope report --html FILE`: the analysis of a job as one self-contained
 * HTML page that works offline (docs/report.md, "The HTML page").
 *
 * Inline CSS and inline SVG charts drawn here; no script, no external resource (a
 * Content-Security-Policy meta tag forbids both). Every string that comes from a trace (paths,
 * host names, function names) is escaped. Charts: bus bandwidth vs message size per
 * (communicator, collective); a per-rank arrival-skew heatmap per communicator; latency
 * distributions per size bucket. Then the tables of buckets, ranks, communicators, processes.
 */
#ifndef NCS_EXPORT_HTML_REPORT_H
#define NCS_EXPORT_HTML_REPORT_H

#include <stdio.h>

#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/ranges.h"

#define NCS_HTML_HEAT_ROWS 256  /* ranks per communicator drawn in the heatmap (the latest) */
#define NCS_HTML_HEAT_COLS 64   /* size buckets per communicator drawn (the most frequent) */
#define NCS_HTML_HEAT_COMMS 32  /* communicators drawn in the heatmap */
#define NCS_HTML_LAT_ROWS 256   /* buckets drawn in the latency chart (the most frequent) */
#define NCS_HTML_RANK_ROWS 4096 /* rows of the rank table */

/* Write the page of `a` with the findings `f` (ncs_findings_build) and the user ranges `rg`
 * (ncs_ranges_build; NULL: none) to `o`. 0, or -1 when a write failed (errno is the stream's). */
int ncs_report_html(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_ranges_t *rg);

#endif
