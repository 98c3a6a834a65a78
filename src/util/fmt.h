/* fmt.h - how the read side writes durations, sizes and shares (ncs_util): one formatter each, so
 * that the terminal, JSON notes, HTML and diagnose print the same number the same way. */
#ifndef NCS_UTIL_FMT_H
#define NCS_UTIL_FMT_H

#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>

enum {
  NCS_DUR_FIXED = 0, /* "1.50 s", "15.30 ms", "12.3 us", "850 ns": text and tables */
  NCS_DUR_SHORT = 1, /* "1.5 s", "15.3 ms", "12.3 us", "850 ns": chart ticks (%g) */
};
void ncs_fmt_dur(char *out, size_t len, double ns, int style);
static inline void ncs_fmt_ns(char *out, size_t len, double ns) {
  ncs_fmt_dur(out, len, ns, NCS_DUR_FIXED);
}
/* the lower bound of a size bucket [2^log2, 2^(log2+1)): "256 KiB"; "0 B" for log2 -1 */
void ncs_fmt_bytes(char *out, size_t len, int log2);
/* a byte count: "512 B", "1.5 KiB", "3.0 GiB" */
void ncs_fmt_size(char *out, size_t len, uint64_t bytes);
/* a realtime in ns as "2026-01-31 12:00:00.123 UTC" ("?" when not a time) */
void ncs_fmt_utc(char *out, size_t len, int64_t real_ns);
/* A commId, written one way everywhere (terminal, JSON, HTML, SQLite, dump, diagnose and the
 * timelines' slice arguments): "0x04f3c7918c4cba01", 16 hex digits with leading zeros, so that a
 * search for one output's commId finds it in every other. Use the macro in format strings, the
 * function for a string. */
#define NCS_COMM_ID_FMT "0x%016" PRIx64
void ncs_fmt_comm_id(char *out, size_t len, uint64_t id);
/* A communicator's label (docs/glossary.md): "c" and its index in the job model (the order the
 * job's files first name them, files in name order), the same in every output of one trace
 * directory: the report, export (timeline, SQLite, OTF2), diagnose, diff and the HTML page.
 * `--comm` takes the label, the index or the commId. */
void ncs_fmt_comm_label(char *out, size_t len, uint32_t index);
/* the label with what identifies the communicator beyond it: "c0 0x04f3c7918c4cba01", then
 * NCCL's name for it when it has one: "c0 0x04f3c7918c4cba01 \"sim-comm-0\"" */
void ncs_fmt_comm(char *out, size_t len, uint32_t index, uint64_t comm_id, const char *name);
/* A progress report of a long export on stderr: on a terminal one bar redrawn in place
 * ("prog: [#########-----------]  45.0% detail"), ended by a newline when final; elsewhere (a
 * log, a pipe) one plain line per call ("prog:  45.0% (detail)"), as before. */
void ncs_progress(const char *prog, double pct, const char *detail, int final);
/* How long a long-running verb works before it reports progress: NCCLSCOPE_PROGRESS_AFTER_MS
 * (default 1000; 0: from the start), in ns. Read once. */
uint64_t ncs_progress_after_ns(void);
/* 100 * a / b, 0 when b is 0 */
double ncs_pct(uint64_t a, uint64_t b);

/* Strings from traces are untrusted bytes. One rule for every JSON the read side writes
 * (report --json, diagnose --json, diff --json, the Chrome trace): '"' and '\\'
 * escaped, control characters (below 0x20, and 0x7F) as \u00XX, each byte that is not part of a
 * valid UTF-8 sequence as \ufffd (U+FFFD), valid UTF-8 as it is. The string's body, without the
 * quotes, goes to put(ctx, bytes, n) in runs. */
typedef void (*ncs_put_fn)(void *ctx, const char *p, size_t n);
void ncs_json_escape(const char *s, ncs_put_fn put, void *ctx);
/* the length of the valid UTF-8 sequence of 2 to 4 bytes at p, or 0 (an overlong form, a
 * surrogate, past U+10FFFF, a cut one); never reads past a NUL */
size_t ncs_utf8_len(const unsigned char *p);

#endif
