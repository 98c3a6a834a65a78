/* sqlite.c - `ncclscope export --format sqlite` (sqlite.h; the schema is docs/sqlite.md).
 *
 * 1. ncs_analyze_path: the report's analysis of the whole job (instances matched across ranks,
 *    durations, arrivals, clocks, buckets, per-rank totals).
 * 2. One streaming pass per trace file, in the analysis's file order. Coll and P2p rows are
 *    inserted at their START (their analysis numbers are looked up by (segment, event id)) and
 *    updated at STOP, COMPLETE and EXPIRED. KernelCh, ProxyOp and ProxyStep events are kept
 *    while open and inserted once at their STOP (or at the end of their segment when they never
 *    stop), with their states; each state of a ProxyOp/ProxyStep also becomes a proxy_states
 *    row when the next state (or the stop) tells how long it lasted. Row ids are assigned at
 *    START, so a child names its parent's row even before the parent's row is complete.
 * 3. The analysis tables (comms, ranks, collectives, buckets, p2p, hosts), then indexes, views,
 *    ANALYZE, and the rename of the temporary file over the output.
 *
 * Everything is written in one transaction per file through prepared statements, with the
 * journal off: the database is a fresh temporary file (src/util/outfile.h: a named one beside
 * the output, since SQLite opens files by name) that is deleted on any failure.
 */
#include "export/sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/sqlite_int.h"
#include "util/outfile.h"

/* ================================================================ SQLite helpers */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sq_failf(sq_t *q, const char *fmt, ...) {
  if (q->failed) return;
  q->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(q->msg, sizeof q->msg, fmt, ap);
  va_end(ap);
}
/* SQLite's message, and the system's when an I/O call failed ("disk I/O error: File too large") */
static const char *db_err(sq_t *q, const char *msg, char *buf, size_t len) {
  int e = sqlite3_system_errno(q->db);
  if (e && (sqlite3_errcode(q->db) & 0xff) == SQLITE_IOERR)
    snprintf(buf, len, "%s: %s", msg, strerror(e));
  else if (e == ENOSPC && (sqlite3_errcode(q->db) & 0xff) == SQLITE_FULL)
    snprintf(buf, len, "%s", strerror(e));
  else
    snprintf(buf, len, "%s", msg);
  return buf;
}
static void db_fail(sq_t *q, const char *what) {
  char b[256];
  sq_failf(q, "cannot write %s: %s (%s)", q->o.out, db_err(q, sqlite3_errmsg(q->db), b, sizeof b),
        what);
}
void sq_oom(sq_t *q) {
  sq_failf(q, "out of memory");
  q->oom = 1;
}

int sq_exec(sq_t *q, const char *sql) {
  if (q->failed) return -1;
  char *e = NULL;
  if (sqlite3_exec(q->db, sql, NULL, NULL, &e) != SQLITE_OK) {
    char b[256];
    sq_failf(q, "cannot write %s: %s (%.40s)", q->o.out,
          db_err(q, e ? e : sqlite3_errmsg(q->db), b, sizeof b), sql);
    sqlite3_free(e);
    return -1;
  }
  return 0;
}

sqlite3_stmt *sq_prepare(sq_t *q, const char *sql) {
  sqlite3_stmt *s = NULL;
  if (q->failed) return NULL;
  if (sqlite3_prepare_v3(q->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
    sq_failf(q, "cannot prepare '%.60s': %s", sql, sqlite3_errmsg(q->db));
    return NULL;
  }
  return s;
}

void sq_step(sq_t *q, sqlite3_stmt *s, const char *what) {
  if (!q->failed && sqlite3_step(s) != SQLITE_DONE) db_fail(q, what);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
}
void sq_insert(sq_t *q, int t) {
  if (q->failed) {
    sqlite3_reset(q->ins[t]), sqlite3_clear_bindings(q->ins[t]);
    return;
  }
  sq_step(q, q->ins[t], ncs_sqlite_table_names[t]);
  if (!q->failed) q->st->rows[t]++;
}

static void sq_free(sq_t *q) {
  for (int t = 0; t < NCS_SQ_NTABLES; t++) sqlite3_finalize(q->ins[t]);
  sqlite3_finalize(q->upd_stop), sqlite3_finalize(q->upd_complete);
  sqlite3_finalize(q->upd_expired), sqlite3_finalize(q->upd_segment);
  if (q->db) sqlite3_close_v2(q->db);
  q->db = NULL;
  free(q->rank_first), free(q->by_proc), free(q->proc_first), free(q->op_row);
  free(q->open), free(q->free_open), free(q->plugin_version);
  hm_free(&q->ops);
  hm_free(&q->api), hm_free(&q->rows), hm_free(&q->open_map);
  ncs_xf_file_free(&q->xs);
  if (q->a) ncs_xf_free(&q->xf), ncs_analysis_free(q->a);
}

/* index the analysis: its operations grouped by process, its communicators first */
static int prepare_analysis(sq_t *q) {
  const ncs_analysis_t *a = q->a;
  q->nops = ncs_job_op_count(a->job);
  q->by_proc = malloc((q->nops ? q->nops : 1) * sizeof *q->by_proc);
  q->proc_first = calloc(a->job->nprocs + 2, sizeof *q->proc_first);
  q->op_row = calloc(q->nops ? q->nops : 1, sizeof *q->op_row);
  q->rank_first = calloc(a->job->nmembers + 1, sizeof *q->rank_first);
  if (!q->by_proc || !q->proc_first || !q->op_row || !q->rank_first) return sq_oom(q), -1;
  const ncs_op_t *op;
  for (size_t k = 0; k < q->nops; k++)
    if ((op = ncs_job_op(a->job, k)) && op->proc < a->job->nprocs) q->proc_first[op->proc + 2]++;
  for (uint32_t p = 0; p < a->job->nprocs; p++) q->proc_first[p + 2] += q->proc_first[p + 1];
  for (size_t k = 0; k < q->nops; k++) /* counting sort: proc_first[p + 1] is p's next slot */
    if ((op = ncs_job_op(a->job, k)) && op->proc < a->job->nprocs)
      q->by_proc[q->proc_first[op->proc + 1]++] = k;
  /* a row per (comm, rank, process): the first COMM chunk that recorded it describes it */
  hmap_t seen = {0};
  for (uint32_t k = 0; k < a->job->nmembers; k++) {
    const ncs_job_member_t *m = &a->job->members[k];
    uint64_t key = hm_mix2(hm_mix2(m->comm, (uint64_t)(uint32_t)m->rank), m->proc), v;
    for (;; key++) { /* the key is a hash: verify */
      if (!hm_get(&seen, key, &v)) break;
      const ncs_job_member_t *o = &a->job->members[v];
      if (o->comm == m->comm && o->rank == m->rank && o->proc == m->proc) break;
    }
    if (hm_get(&seen, key, NULL)) continue;
    if (hm_put(&seen, key, k) != 0) return hm_free(&seen), sq_oom(q), -1;
    q->rank_first[q->nrank_rows++] = k;
  }
  hm_free(&seen);
  return 0;
}

int ncs_export_sqlite(const char *path, const ncs_sqlite_opts_t *o, ncs_sqlite_stats_t *st,
                      char *err, size_t errlen) {
  memset(st, 0, sizeof *st);
  struct stat sb;
  sq_t *q = calloc(1, sizeof *q);
  if (!q) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  q->o = *o, q->st = st, q->t0 = now_ns();
  if (!q->o.types) q->o.types = (1u << NCS_T_COUNT) - 1;
  if (!q->o.prog) q->o.prog = "ncclscope export";
  int rc = 0, opened = 0;
  /* the database is built in a temporary file that takes the output's name at the end; a
   * signal removes it, and a file size limit is a write error (EFBIG) */
  char *in = (char *)path;
  ncs_out_opts_t oo = {.force = o->force, .by_name = 1, .inputs = &in, .ninputs = 1};
  ncs_out_t of;
  if (ncs_out_open(&of, o->out, &oo, err, errlen) != 0) {
    rc = -2;
    goto out;
  }
  opened = 1;
  int why = 0; /* every operation and instance: rows */
  const ncs_analyze_opts_t ao = {.retain = 1, .job = o->job, .why = &why, .filter = o->filter};
  q->a = ncs_analyze_path_opts(path, &ao, err, errlen);
  if (!q->a) {
    rc = why == NCS_JOB_ERR_SEVERAL || why == NCS_JOB_ERR_NO_JOB || why == NCS_JOB_ERR_FILTER ? 3 : 2;
    goto out;
  }
  if (o->job_check && o->job_check(q->a->job, o->check_arg) != 0) {
    rc = 4;
    goto out;
  }
  if (ncs_xf_init(&q->xf, q->a->job) != 0) {
    sq_oom(q);
    goto fail;
  }
  st->analysis_seconds = (double)(now_ns() - q->t0) * 1e-9;
  st->files = q->a->cov.files;
  for (uint32_t i = 0; i < q->a->job->nprocs; i++)
    if (!q->a->job->procs[i].excluded && stat(q->a->job->procs[i].path, &sb) == 0)
      q->bytes_total += (uint64_t)sb.st_size;
  st->bytes_in = q->bytes_total;
  if (prepare_analysis(q) != 0) goto fail;
  /* one thread uses this connection: no per-call locks, no allocation statistics (the latter
   * is process-wide and only possible before SQLite initialises; harmless when too late) */
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  if (sqlite3_open_v2(of.tmp, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    sq_failf(q, "cannot write %s: %s", o->out, q->db ? sqlite3_errmsg(q->db) : "out of memory");
    goto fail;
  }
  if (sq_create_schema(q) != 0) goto fail;
  for (uint32_t i = 0; i < q->a->job->nprocs && !q->failed; i++) {
    if (q->a->job->procs[i].excluded) continue; /* a copy, or another job's: not read */
    if (sq_exec(q, "BEGIN") != 0) break;
    sq_export_file(q, i);
    sq_exec(q, "COMMIT");
  }
  if (sq_exec(q, "BEGIN") == 0) {
    sq_meta(q, path);
    sq_analysis_tables(q);
    if (q->xf.active) sq_filter_meta(q);
    sq_post(q);
    sq_exec(q, "COMMIT");
  }
  sq_exec(q, "PRAGMA analysis_limit=1000; ANALYZE");
  if (q->failed) goto fail;
  for (int t = 0; t < NCS_SQ_NTABLES; t++) sqlite3_finalize(q->ins[t]), q->ins[t] = NULL;
  sqlite3_finalize(q->upd_stop), sqlite3_finalize(q->upd_complete);
  sqlite3_finalize(q->upd_expired), sqlite3_finalize(q->upd_segment);
  q->upd_stop = q->upd_complete = q->upd_expired = q->upd_segment = NULL;
  if (sqlite3_close(q->db) != SQLITE_OK) {
    sq_failf(q, "cannot write %s: %s", o->out, sqlite3_errmsg(q->db));
    goto fail;
  }
  q->db = NULL;
  if (fstat(of.fd, &sb) == 0) st->bytes_out = (uint64_t)sb.st_size;
  opened = 0;
  if (ncs_out_commit(&of, err, errlen) != 0) {
    rc = -2;
    goto out;
  }
  sq_progress(q, NULL, 1);
  rc = st->damaged || ncs_job_input(q->a->job) == NCS_JOB_IN_DAMAGED ? 1 : 0;
  goto out;
fail:
  snprintf(err, errlen, "%s", q->msg[0] ? q->msg : "failed");
  /* out of memory is ncclscope's failure; anything else here is the database's file */
  rc = q->oom || (q->db && sqlite3_errcode(q->db) == SQLITE_NOMEM) ? -1 : -2;
out:
  sq_free(q); /* closes the database before its file is removed */
  if (opened) ncs_out_abort(&of);
  st->seconds = (double)(now_ns() - q->t0) * 1e-9;
  free(q);
  return rc;
}
