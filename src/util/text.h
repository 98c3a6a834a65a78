/* text.h - the verbs' terminal text (ncs_util): the width every verb fits its output to, prose
 * wrapped at word boundaries, and tables that fit that width, print the first N rows with an
 * "N more" line, sort by a column and write themselves as CSV (docs/cli.md, "Terminal output").
 *
 * One rule for every verb, so that `report`, `diagnose`, `diff`, `dump --stats` and `demo` fit
 * the same terminal the same way: the width is the terminal's (TIOCGWINSZ) when standard output
 * is one, else $COLUMNS when it is set, never less than 80 nor more than 120 columns (prose wider
 * than 120 columns reads badly); into a pipe or a file without $COLUMNS, whole lines (0), as `ls`
 * and `git` do, so that grep and scripts see one line per item. --wide turns fitting off. */
#ifndef NCS_UTIL_TEXT_H
#define NCS_UTIL_TEXT_H

#include <stddef.h>
#include <stdio.h>

#define NCS_TEXT_MIN 80
#define NCS_TEXT_MAX 120
#define NCS_TEXT_DEFAULT 100 /* a terminal that does not say its size, and no COLUMNS */

/* the width to fit output on fd to (see above): 0 for whole lines */
int ncs_term_width(int fd);
/* columns s takes on a terminal: ANSI escape sequences take none, a UTF-8 character one */
size_t ncs_text_width(const char *s);
/* the first n bytes of s as columns (as ncs_text_width) */
size_t ncs_text_widthn(const char *s, size_t n);

/* `first`, then text wrapped at spaces so that no line is wider than `width` (0: one line);
 * continuation lines start with `rest`. A number and its unit ("50 ns", "2 MiB") stay on one line.
 * A word longer than a line is never split. Ends with a newline. */
void ncs_wrap(FILE *o, const char *first, const char *rest, const char *text, int width);

/* Every line of `buf` (len bytes) to o, a line wider than `width` wrapped at spaces as ncs_wrap
 * does, its continuation lines indented as far as the text after its leading spaces and a "- ",
 * "! " or "LABEL  " (upper-case word and two spaces) marker, plus `more` columns when it has no
 * marker. width 0: as is. The verbs build their text in memory and fit it at the end. */
void ncs_fit(FILE *o, const char *buf, size_t len, int width, int more);

/* ---------------------------------------------------------------- tables */

enum {
  NCS_COL_LEFT = 0,
  NCS_COL_RIGHT = 1 << 0, /* numbers: right-aligned */
  NCS_COL_TEXT = 1 << 1,  /* free text, the last column: wraps under itself when the row is wide */
  NCS_COL_WIDE = 1 << 2,  /* on the terminal only with --wide (always in CSV) */
  NCS_COL_GROUP = 1 << 3, /* on the terminal a heading line whenever its value changes, not a
                             column (unless the table was sorted by another column) */
  NCS_COL_KEY = 1 << 4,   /* repeated in every block when the table is folded to fit */
  NCS_COL_NOCSV = 1 << 5, /* the terminal only */
  NCS_COL_ASC = 1 << 6,   /* --sort: smallest first (numbers sort largest first otherwise) */
  NCS_COL_CSV = 1 << 7,   /* CSV only, never on the terminal (what another cell shows there) */
};

typedef struct ncs_tab ncs_tab_t;

/* A table named `name` (its --csv / --table name). Columns first, then rows. */
ncs_tab_t *ncs_tab_new(const char *name);
void ncs_tab_free(ncs_tab_t *t);
const char *ncs_tab_name(const ncs_tab_t *t);
/* a column: `head` its terminal header ("\n" splits it over two header lines: "busbw p50\nGB/s"),
 * `key` its CSV header and --sort name (NULL: not in CSV, not sortable), `max` the most columns its
 * cells take on the terminal without --wide (0: no limit; longer cells are cut and end in "~") */
void ncs_tab_col(ncs_tab_t *t, const char *head, const char *key, int flags, int max);
/* a new row; then one ncs_tab_put per column, in order */
void ncs_tab_row(ncs_tab_t *t);
/* the next cell: `text` on the terminal, `raw` in CSV and for --sort (NULL: the same as text;
 * a number sorts as a number) */
void ncs_tab_put(ncs_tab_t *t, const char *text, const char *raw);
void ncs_tab_putf(ncs_tab_t *t, const char *raw, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* a number: text as formatted, raw with every digit */
void ncs_tab_num(ncs_tab_t *t, const char *text, double raw);
size_t ncs_tab_nrows(const ncs_tab_t *t);
int ncs_tab_has_key(const ncs_tab_t *t, const char *key);
/* the column keys that --sort takes, comma-separated, into out */
void ncs_tab_keys(const ncs_tab_t *t, char *out, size_t len);
/* sort the rows by the column `key` (stable; numbers largest first unless NCS_COL_ASC, text and
 * NCS_COL_ASC smallest first, empty and "-" cells last); 0, or -1 when the table has no such key */
int ncs_tab_sort(ncs_tab_t *t, const char *key);

typedef struct {
  int indent;       /* spaces before every line */
  int width;        /* fit to this many columns (0: no limit) */
  int wide;         /* --wide: NCS_COL_WIDE columns, no cutting, no folding */
  size_t top;       /* print at most this many rows (0: all), then "... N more" */
  const char *more; /* after "N more rows": how to see them ("--top N, --csv") */
  const char *bold, *reset; /* around the header lines (NULL: none) */
} ncs_tab_view_t;

/* the table on a terminal: the header lines, the rows (a heading line when a group column
 * changes), "N more" when top cut it. When the columns are wider than `width`, the free-text
 * column wraps under itself (or goes to a line of its own), and when the other columns alone are
 * too wide, the table is printed in blocks of columns, each with the key columns. Returns how
 * many rows were left out. */
size_t ncs_tab_print(FILE *o, const ncs_tab_t *t, const ncs_tab_view_t *v);
/* the table as CSV (RFC 4180): a header line of the column keys, then at most `top` rows (0: all)
 * of raw values */
void ncs_tab_csv(FILE *o, const ncs_tab_t *t, size_t top);
/* one CSV field, quoted when it must be */
void ncs_csv_field(FILE *o, const char *s);

#endif
