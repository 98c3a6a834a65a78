/* report_text.h - the terminal and CSV forms of `ncclscope report` (report_text.c); report.c
 * parses the options, runs the analysis and writes the JSON and HTML forms. */
#ifndef NCS_CLI_REPORT_TEXT_H
#define NCS_CLI_REPORT_TEXT_H

#include <stdint.h>
#include <stdio.h>

#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/phases.h"
#include "analyze/ranges.h"

/* how the report is laid out (docs/report.md, "The terminal report", "CSV") */
typedef struct {
  int wide;          /* --wide: every column, no fitting */
  int color;         /* ANSI colour: a terminal, no --no-color, no NO_COLOR */
  int width;         /* fit to this many columns */
  uint32_t top;      /* --top: rows of the bounded tables, findings per kind */
  int top_given;     /* --top was given: it bounds the CSV too */
  const char *sort;  /* --sort KEY, or NULL */
  const char *table; /* --table NAME with --csv, or NULL: every table */
} ncs_rview_t;

/* the report's tables, in the order they are printed; their --csv / --table names */
extern const char *const ncs_report_tables[];
/* 1 when name is a table's name */
int ncs_report_table_known(const char *name);
/* 1 when some table has a column `key` (a --sort key); the keys of every table into out */
int ncs_report_sort_known(const char *key, char *out, size_t len);

void ncs_report_text(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_v7_t *v,
                     const ncs_ranges_t *rg, const ncs_rview_t *rv);
void ncs_report_csv(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_v7_t *v,
                    const ncs_ranges_t *rg, const ncs_rview_t *rv);

#endif
