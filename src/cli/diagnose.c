/* diagnose.c - `ncclscope diagnose DIR [--json] [--incident N|--latest]`: hang and desync
 * verdicts with evidence over the recordings (traces, flight files and dumps) of every rank of a
 * job. The analysis is src/analyze/diagnose.c; docs/diagnose.md describes the verdicts and the
 * --json schema. Exit status (docs/cli.md): 0 nothing wrong, 1 a problem found, 2 usage, 3 no
 * readable recording, 4 nothing found but a recording is damaged or unreadable, or the recordings
 * cannot show whether everything completed (CANNOT TELL).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze/diagnose.h"
#include "cli/cli.h"
#include "model/model.h"
#include "trace/flight.h"
#include "trace/reader.h"
#include "util/fmt.h"
#include "util/text.h"

/* Lines are built with snprintf into fixed buffers; a cut line is acceptable. */
#ifndef __clang__ /* gcc only: clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

static const char diagnose_help[] =
    "usage: ncclscope diagnose [OPTIONS] DIR\n"
    "\n"
    "Hang and desync verdicts over the recordings of every rank of a job: DIR's\n"
    "traces (*.nstrace) or flight files (*.nsflight), and the flight dumps in\n"
    "DIR/dumps (docs/diagnose.md). Dumps taken within seconds of each other form an\n"
    "incident; the first incident is diagnosed unless told otherwise. For each\n"
    "communicator: the last seqNumber every rank entered and completed; the operation\n"
    "the others wait in and, for each rank that never entered it, where it is (dead,\n"
    "inside NCCL elsewhere, outside NCCL); when every rank entered it, the rank that\n"
    "stopped progressing first; collectives whose count, datatype or root differ.\n"
    "\n"
    "options:\n"
    "  -j, --json            machine-readable output (schema: docs/diagnose.md)\n"
    "  -i, --incident N      diagnose the N-th incident of DIR/dumps (1: the first)\n"
    "  -l, --latest          diagnose the last incident\n"
    "      --run N|last      the N-th run (by start time) when DIR holds several;\n"
    "                        without it such a DIR is refused, with the list of runs\n"
    "      --wide            lines as long as they need (the default fits the\n"
    "                        terminal: 80 to 120 columns)\n"
    "  -h, --help            this help\n"
    "\n"
    "filters (docs/diagnose.md, \"Filters\"); the output says what each left out, and\n"
    "a filtered diagnosis can miss a hang outside it:\n"
    "      --comm C          verdicts for communicator C only: its label (c0), index\n"
    "                        (0) or commId; the others are listed as not judged (a\n"
    "                        dead process is reported whatever its communicators)\n"
    "      --rank LIST       the tables show these ranks (0,2,4-7); verdicts are\n"
    "                        still judged from every rank\n"
    "      --to T            judge the job as it was T after its first event (1.5,\n"
    "                        1.5s, 250ms, 30us); full traces only\n"
    "      --from T          look for mismatched collectives (desync) only among\n"
    "                        those entered from T on; hangs are judged whatever their\n"
    "                        time\n"
    "      --range NAME[:N[-M]], --tag LIST\n"
    "                        the span of the operations in those user ranges or with\n"
    "                        those NCCL user tags, as --from and --to would be; not\n"
    "                        with --from/--to\n"
    "\n"
    "examples:\n"
    "  ncclscope diagnose run1\n"
    "  ncclscope trigger run2 && ncclscope diagnose --latest run2   # flight mode\n"
    "  ncclscope diagnose -j run1 | jq '.verdicts[0].summary'\n"
    "\n"
    "exit status: 0 nothing stuck, 1 a hang, desync or dead process was found (or\n"
    "ranks wait for a cause the recordings cannot show), 2 usage error, 3 no readable\n"
    "recording (or no such incident), 4 nothing found but a recording is damaged or\n"
    "unreadable, or it cannot tell whether every operation completed, 5 the output\n"
    "cannot be written. With a filter, the status is about what was judged.\n";

static const char *status_of(const ncs_dg_t *d) {
  if (!d->problem && d->cannot_tell) return "cannot_tell";
  if (!d->problem || !d->nverdicts) return "ok";
  switch (d->verdicts[0].kind) {
  case NCS_DG_V_DEAD: return "dead";
  case NCS_DG_V_CANNOT_TELL: return "cannot_tell";
  case NCS_DG_V_MISMATCH: return "desync";
  default: return "hang";
  }
}

static const char *proc_state(const ncs_dg_proc_t *p) {
  if (p->unreadable) return "unreadable";
  if (p->excluded) return p->excluded == NCS_JX_DUPLICATE ? "duplicate" : "other_run";
  if (p->source == NCS_DG_SRC_TRACE) return p->footer ? "trace_clean" : p->after_cut ? "trace_cut" : "trace_no_footer";
  return ncs_flight_state_name(p->flight_state);
}

static int listed(const ncs_dg_t *d, int r) {
  if (!d->filter.ranks) return 1;
  for (uint32_t k = 0; k < d->filter.nranks; k++)
    if (d->filter.ranks[k] == r) return 1;
  return 0;
}

/* ------------------------------------------------------------------ JSON */

/* "filter": what was asked and what it left out (docs/diagnose.md, "Filters") */
static void json_filter(FILE *o, const ncs_dg_t *d) {
  const ncs_job_filter_t *f = &d->filter;
  if (!ncs_job_filter_active(f)) {
    fprintf(o, ",\"filter\":null");
    return;
  }
  fprintf(o, ",\n\"filter\":{\"text\":");
  ncs_json_str(o, d->filter_text);
  if (f->comm_set)
    fprintf(o, ",\"comm_id\":\"" NCS_COMM_ID_FMT "\"", f->comm_id);
  else
    fprintf(o, ",\"comm_id\":null");
  fprintf(o, ",\"ranks\":");
  if (f->ranks) {
    fputc('[', o);
    for (uint32_t k = 0; k < f->nranks; k++) fprintf(o, "%s%d", k ? "," : "", f->ranks[k]);
    fputc(']', o);
  } else {
    fprintf(o, "null");
  }
  if (f->window && f->from_ns > 0)
    fprintf(o, ",\"from_ns\":%" PRId64, f->from_ns);
  else
    fprintf(o, ",\"from_ns\":null");
  if (f->window && f->to_ns != INT64_MAX)
    fprintf(o, ",\"to_ns\":%" PRId64 ",\"cut_real_ns\":%" PRId64 ",\"cut_past_end\":%s", f->to_ns, d->cut_real,
            d->cut_past_end ? "true" : "false");
  else
    fprintf(o, ",\"to_ns\":null,\"cut_real_ns\":null,\"cut_past_end\":false");
  fprintf(o, ",\"later_completed\":%u,\"collectives_not_checked\":%" PRIu64 ",\"comms_not_judged\":%u,\"not_judged\":[",
          d->later_done, d->from_unchecked, d->comms_not_judged);
  int first = 1;
  for (uint32_t c = 0; c < d->ncomms; c++) {
    if (d->comms[c].judged) continue;
    fprintf(o, "%s{\"comm_id\":\"" NCS_COMM_ID_FMT "\",\"label\":\"c%u\",\"name\":", first ? "" : ",",
            d->comms[c].comm_id, c);
    ncs_json_str(o, d->comms[c].name);
    fprintf(o, ",\"nranks\":%d}", d->comms[c].nranks);
    first = 0;
  }
  int32_t left = 0;
  for (uint32_t c = 0; c < d->ncomms; c++)
    if (d->comms[c].judged) left += d->comms[c].ranks_left_out;
  fprintf(o, "],\"ranks_left_out\":%d", left);
  if (f->rsel || f->tsel) {
    static const char *const why[] = {"null", "\"operations_open\"", "\"range_not_ended\"", "\"flight\""};
    fprintf(o, ",\"selected_ops\":%" PRIu64 ",\"selected_open\":%" PRIu64 ",\"window_open\":%s", d->sel_ops,
            d->sel_open, why[d->sel_open_why >= 0 && d->sel_open_why <= 3 ? d->sel_open_why : 0]);
  }
  fputc('}', o);
}

static void print_json(FILE *o, const ncs_dg_t *d) {
  fprintf(o, "{\"schema\":\"ncclscope-diagnose/1\",\"path\":");
  ncs_json_str(o, d->path);
  fprintf(o, ",\"problem\":%s,\"status\":\"%s\",\"reference\":{\"what\":\"%s\",\"real_ns\":%" PRId64 "}",
          d->problem ? "true" : "false", status_of(d), d->incident ? "dump" : "end", d->ref_real);
  if (d->incident) {
    fprintf(o,
            ",\"incident\":{\"index\":%u,\"count\":%u,\"dumps_in_dir\":%u,\"first_dump_real_ns\":%" PRId64
            ",\"last_dump_real_ns\":%" PRId64 ",\"request_real_ns\":%" PRId64 ",\"trigger\":",
            d->incident, d->nincidents, d->ndumps, d->incident_first_real, d->incident_last_real,
            d->request_real);
    ncs_json_str(o, d->trigger);
    fputc('}', o);
  } else {
    fprintf(o, ",\"incident\":null");
  }
  fprintf(o, ",\"notes\":[");
  for (uint32_t i = 0; i < d->nnotes; i++) {
    if (i) fputc(',', o);
    ncs_json_str(o, d->notes[i]);
  }
  fputc(']', o);
  json_filter(o, d);
  fprintf(o, ",\n\"verdicts\":[");
  for (uint32_t i = 0; i < d->nverdicts; i++) {
    const ncs_dg_verdict_t *v = &d->verdicts[i];
    fprintf(o, "%s\n{\"kind\":\"%s\",\"comm_id\":", i ? "," : "", ncs_dg_kind_name(v->kind));
    if (v->comm >= 0)
      fprintf(o, "\"" NCS_COMM_ID_FMT "\",\"comm_label\":\"c%d\"", d->comms[v->comm].comm_id, v->comm);
    else
      fprintf(o, "null,\"comm_label\":null");
    fprintf(o, ",\"rank\":%d,\"ranks\":[", v->rank);
    for (int k = 0; k < v->nranks; k++) fprintf(o, "%s%d", k ? "," : "", v->ranks[k]);
    fprintf(o, "],\"process\":");
    if (v->proc >= 0) {
      fprintf(o, "{\"host\":");
      ncs_json_str(o, d->procs[v->proc].host);
      fprintf(o, ",\"pid\":%" PRIu64 ",\"file\":", d->procs[v->proc].pid);
      ncs_json_str(o, d->procs[v->proc].file);
      fputc('}', o);
    } else {
      fprintf(o, "null");
    }
    fprintf(o, ",\"func\":");
    if (v->func[0])
      ncs_json_str(o, v->func);
    else
      fprintf(o, "null");
    fprintf(o, ",\"seq\":%" PRId64 ",\"where\":\"%s\"", v->seq, ncs_dg_where_name(v->where));
    if (v->kind == NCS_DG_V_STUCK_INSIDE) {
      fprintf(o, ",\"channel\":%d,\"peer\":%d,\"step\":%d,\"is_send\":%d,\"state\":", v->channel, v->peer,
              v->step, v->is_send);
      ncs_json_str(o, v->state);
      fprintf(o, ",\"no_progress_ns\":%" PRId64 ",\"lead_ns\":%" PRId64, v->since_ns, v->lead_ns);
    }
    if (v->kind == NCS_DG_V_MISMATCH) {
      fprintf(o, ",\"what\":");
      ncs_json_str(o, v->what);
    }
    fprintf(o, ",\"outside_filter\":[");
    for (int k = 0; k < v->noutside; k++) fprintf(o, "%s%d", k ? "," : "", v->outside[k]);
    fprintf(o, "],\"summary\":");
    ncs_json_str(o, v->summary);
    fprintf(o, ",\"evidence\":[");
    for (int k = 0; k < v->nev; k++) {
      if (k) fputc(',', o);
      ncs_json_str(o, v->evidence[k]);
    }
    fprintf(o, "]}");
  }
  fprintf(o, "],\n\"communicators\":[");
  int firstc = 1;
  for (uint32_t c = 0; c < d->ncomms; c++) {
    const ncs_dg_comm_t *C = &d->comms[c];
    if (!C->judged) continue; /* --comm: in filter.not_judged */
    fprintf(o, "%s\n{\"comm_id\":\"" NCS_COMM_ID_FMT "\",\"label\":\"c%u\",\"name\":", firstc ? "" : ",",
            C->comm_id, c);
    firstc = 0;
    ncs_json_str(o, C->name);
    fprintf(o, ",\"nranks\":%d,\"ranks_present\":%d,\"ranks_left_out\":%d,\"completed_on_all\":%" PRIu64
               ",\"in_flight\":%u,\"stuck\":",
            C->nranks, C->ranks_present, C->ranks_left_out, C->ops_completed_all, C->in_flight);
    if (C->has_stuck) {
      fprintf(o, "{\"func\":");
      ncs_json_str(o, C->stuck_func);
      fprintf(o, ",\"seq\":%" PRId64 ",\"p2p\":%s,\"rank\":%d,\"peer\":%d}", C->stuck_seq,
              C->stuck_p2p ? "true" : "false", C->stuck_rank, C->stuck_peer);
    } else {
      fprintf(o, "null");
    }
    fprintf(o, ",\"ranks\":[");
    int firstr = 1;
    for (int r = 0; r < C->nranks; r++) {
      const ncs_dg_rank_t *R = &C->ranks[r];
      if (!listed(d, r)) continue; /* --rank: counted in ranks_left_out */
      fprintf(o, "%s\n {\"rank\":%d,\"present\":%s,\"process\":%d,\"state\":\"%s\",\"where\":\"%s\","
                 "\"open\":%u,\"stuck\":%u,\"funcs\":[",
              firstr ? "" : ",", r, R->present ? "true" : "false", R->proc, ncs_dg_state_name(R->state),
              ncs_dg_where_name(R->where), R->open, R->stuck);
      for (uint32_t k = 0; k < R->nf; k++) {
        fprintf(o, "%s{\"func\":", k ? "," : "");
        ncs_json_str(o, R->f[k].func);
        fprintf(o, ",\"p2p\":%s,\"entered\":%" PRId64 ",\"completed\":%" PRId64 "}",
                R->f[k].p2p ? "true" : "false", R->f[k].entered, R->f[k].completed);
      }
      fprintf(o, "]}");
      firstr = 0;
    }
    fprintf(o, "]}");
  }
  fprintf(o, "],\n\"processes\":[");
  for (uint32_t i = 0; i < d->nprocs; i++) {
    const ncs_dg_proc_t *p = &d->procs[i];
    fprintf(o, "%s\n{\"index\":%u,\"file\":", i ? "," : "", i);
    ncs_json_str(o, p->file);
    fprintf(o, ",\"source\":\"%s\",\"host\":", ncs_dg_source_name(p->source));
    ncs_json_str(o, p->host);
    fprintf(o, ",\"pid\":%" PRIu64 ",\"state\":\"%s\",\"dump_reason\":\"%s\",\"dump_index\":%u,\"trigger\":",
            p->pid, proc_state(p), ncs_flight_reason_name(p->dump_reason), p->dump_index);
    ncs_json_str(o, p->trigger);
    fprintf(o, ",\"dead\":%s,\"dead_why\":", p->dead ? "true" : "false");
    ncs_json_str(o, p->dead_why);
    fprintf(o,
            ",\"snapshot_real_ns\":%" PRId64 ",\"last_event_real_ns\":%" PRId64 ",\"heartbeat_real_ns\":%" PRId64
            ",\"ranks\":%u,\"open_ops\":%u,\"open_children\":%u,\"open_api\":%u,\"damage\":",
            p->snap_real, p->last_event_real, p->heartbeat_real, p->ranks, p->open_ops, p->open_children,
            p->open_api);
    ncs_json_str(o, p->damage_msg);
    fputc('}', o);
  }
  fprintf(o, "]}\n");
}

/* ------------------------------------------------------------------ text */

const char *ncs_dg_label(int kind) {
  switch (kind) {
  case NCS_DG_V_DEAD: return "DEAD";
  case NCS_DG_V_MISMATCH: return "DESYNC";
  case NCS_DG_V_NOT_ENTERED:
  case NCS_DG_V_STUCK_INSIDE: return "HANG";
  case NCS_DG_V_CANNOT_TELL: return "CANNOT TELL";
  default: return "OK";
  }
}

static void cell_fn(char *out, size_t n, const ncs_dg_rank_t *R, const char *func, int p2p) {
  for (uint32_t k = 0; k < R->nf; k++)
    if (R->f[k].func == func && R->f[k].p2p == p2p) {
      char e[24], c[24];
      if (R->f[k].entered < 0) snprintf(e, sizeof e, "-");
      else snprintf(e, sizeof e, "%" PRId64, R->f[k].entered);
      if (R->f[k].completed < 0) snprintf(c, sizeof c, "-");
      else snprintf(c, sizeof c, "%" PRId64, R->f[k].completed);
      snprintf(out, n, "%s/%s", e, c);
      return;
    }
  snprintf(out, n, "-");
}

static const char *rank_state_text(const ncs_dg_rank_t *R) {
  switch (R->state) {
  case NCS_DG_R_WAITING: return "waiting";
  case NCS_DG_R_COMPLETED: return "completed";
  case NCS_DG_R_NOT_ENTERED:
    return R->where == NCS_DG_W_DEAD ? "NOT ENTERED (dead)"
           : R->where == NCS_DG_W_OUTSIDE ? "NOT ENTERED (outside)"
           : R->where == NCS_DG_W_EXITED ? "NOT ENTERED (exited)"
                                         : "NOT ENTERED (in NCCL)";
  case NCS_DG_R_MISSING: return "no recording";
  default: return "-";
  }
}

/* One rank's cells, as one string: to merge identical consecutive rows of a large communicator */
static void rank_row(char *row, size_t cap, const ncs_dg_rank_t *R, const char *const *fn,
                     const int *fp, int nfn) {
  size_t len = 0;
  for (int j = 0; j < nfn; j++) {
    char cell[48];
    cell_fn(cell, sizeof cell, R, fn[j], fp[j]);
    len += (size_t)snprintf(row + len, cap - len, "%s|", cell);
    if (len >= cap) len = cap - 1;
  }
  snprintf(row + len, cap - len, "%s|%s", rank_state_text(R), R->open_desc[0] ? R->open_desc : "-");
}

static int g_width; /* the terminal width to fit (0: --wide, or not a terminal) */
static int g_wide;  /* --wide: every column */

static void print_comm(FILE *o, const ncs_dg_t *d, const ncs_dg_comm_t *C, uint32_t index) {
  /* the functions of the table, in order of first appearance */
  const char *fn[NCS_DG_MAX_FUNCS];
  int fp[NCS_DG_MAX_FUNCS], nfn = 0;
  for (int r = 0; r < C->nranks; r++)
    for (uint32_t k = 0; k < C->ranks[r].nf && nfn < NCS_DG_MAX_FUNCS; k++) {
      int have = 0;
      for (int j = 0; j < nfn; j++) have |= fn[j] == C->ranks[r].f[k].func && fp[j] == C->ranks[r].f[k].p2p;
      if (!have) fn[nfn] = C->ranks[r].f[k].func, fp[nfn++] = C->ranks[r].f[k].p2p;
    }
  char title[160];
  ncs_fmt_comm(title, sizeof title, index, C->comm_id, C->name);
  fprintf(o, "\ncommunicator %s: %d ranks (%d recorded)", title, C->nranks, C->ranks_present);
  if (C->ranks_left_out)
    fprintf(o, ", %d shown (--rank)", C->nranks - C->ranks_left_out);
  if (C->has_stuck) {
    if (C->stuck_p2p)
      fprintf(o, ", stuck in %s of rank %d with rank %d", C->stuck_func, C->stuck_rank, C->stuck_peer);
    else
      fprintf(o, ", stuck in %s #%" PRId64, C->stuck_func, C->stuck_seq);
  }
  fprintf(o, "\n  last seqNumber entered/completed per collective (send/recv: counts seen)\n");
  ncs_tab_t *t = ncs_tab_new("ranks");
  ncs_tab_col(t, "rank", "rank", NCS_COL_KEY, 0);
  ncs_tab_col(t, "process", "process", NCS_COL_LEFT, 22);
  for (int j = 0; j < nfn; j++) ncs_tab_col(t, fn[j] ? fn[j] : "?", fn[j] ? fn[j] : "?", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "state", "state", NCS_COL_LEFT, 0);
  ncs_tab_col(t, "open", "open", NCS_COL_TEXT, 0);
  /* rows; with many ranks, consecutive identical rows are merged */
  int merge = C->nranks > 16;
  for (int r = 0; r < C->nranks;) {
    char row[512], prow[512];
    const ncs_dg_rank_t *R = &C->ranks[r];
    if (!listed(d, r)) { /* --rank */
      r++;
      continue;
    }
    rank_row(row, sizeof row, R, fn, fp, nfn);
    int r2 = r + 1;
    while (merge && r2 < C->nranks && listed(d, r2)) {
      rank_row(prow, sizeof prow, &C->ranks[r2], fn, fp, nfn);
      if (strcmp(row, prow)) break;
      r2++;
    }
    char rk[24], pr[64];
    if (r2 - r > 1)
      snprintf(rk, sizeof rk, "%d-%d", r, r2 - 1);
    else
      snprintf(rk, sizeof rk, "%d", r);
    if (r2 - r > 1)
      snprintf(pr, sizeof pr, "(%d ranks)", r2 - r);
    else if (R->present && R->proc >= 0)
      snprintf(pr, sizeof pr, "%.40s-%" PRIu64, d->procs[R->proc].host, d->procs[R->proc].pid);
    else
      snprintf(pr, sizeof pr, "-");
    ncs_tab_row(t);
    ncs_tab_put(t, rk, NULL);
    ncs_tab_put(t, pr, NULL);
    for (int j = 0; j < nfn; j++) {
      char cell[48];
      cell_fn(cell, sizeof cell, R, fn[j], fp[j]);
      ncs_tab_put(t, cell, NULL);
    }
    ncs_tab_put(t, rank_state_text(R), NULL);
    ncs_tab_put(t, R->open_desc[0] ? R->open_desc : "-", NULL);
    r = r2;
  }
  ncs_tab_view_t tv = {.indent = 2, .width = g_width, .wide = g_wide};
  ncs_tab_print(o, t, &tv);
  ncs_tab_free(t);
}

/* "0,1,3" or "0-2,5" */
static void rank_list(char *out, size_t n, const int *r, int nr) {
  size_t len = 0;
  out[0] = 0;
  for (int i = 0; i < nr && len < n; i++) {
    int j = i;
    while (j + 1 < nr && r[j + 1] == r[j] + 1) j++;
    int k = j > i ? snprintf(out + len, n - len, "%s%d-%d", i ? "," : "", r[i], r[j])
                  : snprintf(out + len, n - len, "%s%d", i ? "," : "", r[i]);
    if (k < 0) break;
    len += (size_t)k;
    i = j;
  }
}

/* the --rank list as given, in ranges */
static const char *ranks_text(const ncs_dg_t *d, char *out, size_t n) {
  int r[64], nr = 0;
  for (uint32_t k = 0; k < d->filter.nranks && nr < 64; k++) r[nr++] = d->filter.ranks[k];
  rank_list(out, n, r, nr);
  if (d->filter.nranks > 64) snprintf(out + strlen(out), n - strlen(out), ",...");
  return out;
}

/* the filters: what was asked, and what each left out (docs/diagnose.md, "Filters") */
static void print_filter(FILE *o, const ncs_dg_t *d) {
  const ncs_job_filter_t *f = &d->filter;
  if (!ncs_job_filter_active(f)) return;
  char a[64], b[128];
  int missed = 0;
  fprintf(o, "  filter: %s\n", d->filter_text);
  if (d->comms_not_judged) {
    fprintf(o, "  --comm: %u communicator%s not judged:", d->comms_not_judged, d->comms_not_judged == 1 ? "" : "s");
    uint32_t shown = 0;
    for (uint32_t c = 0; c < d->ncomms; c++) {
      if (d->comms[c].judged) continue;
      if (shown++ == 8) {
        fprintf(o, " ...");
        break;
      }
      char title[160];
      ncs_fmt_comm(title, sizeof title, c, d->comms[c].comm_id, d->comms[c].name);
      fprintf(o, "%s %s (%d ranks)", shown > 1 ? "," : "", title, d->comms[c].nranks);
    }
    fputc('\n', o);
    missed = 1;
  }
  if (f->ranks) {
    int32_t left = 0;
    for (uint32_t c = 0; c < d->ncomms; c++)
      if (d->comms[c].judged) left += d->comms[c].ranks_left_out;
    fprintf(o, "  --rank %s: verdicts are judged from every rank; the tables show these ranks only (%d row%s "
               "left out)\n", ranks_text(d, b, sizeof b), left, left == 1 ? "" : "s");
  }
  const int sel = f->rsel || f->tsel;
  const char *lto = sel ? "window end" : "--to", *lfrom = sel ? "window start" : "--from";
  if (sel) {
    const char *opt = f->rsel && f->tsel ? "--range, --tag" : f->rsel ? "--range" : "--tag";
    ncs_fmt_ns(a, sizeof a, (double)f->from_ns);
    fprintf(o, "  %s: the window is the span of the %" PRIu64 " operation%s selected, from %s after the job's "
               "first event ",
            opt, d->sel_ops, d->sel_ops == 1 ? "" : "s", a);
    if (f->to_ns != INT64_MAX) {
      ncs_fmt_ns(a, sizeof a, (double)f->to_ns);
      fprintf(o, "to %s (the latest completion among them, and %d ms)\n", a, NCS_DG_SEL_MARGIN_NS / 1000000);
    } else if (d->sel_open_why == 1) {
      fprintf(o, "to the end of the recordings: %" PRIu64 " of them never completed, lack a rank or lack "
                 "their partner, so the whole recording is judged\n",
              d->sel_open);
    } else if (d->sel_open_why == 2) {
      fprintf(o, "to the end of the recordings: a selected range never ended, so the whole recording is "
                 "judged\n");
    } else {
      fprintf(o, "to the end of the recordings: flight recordings keep only their last operations, so the job "
                 "as it was when the span ended cannot be rebuilt; the whole recording is judged, and a hang "
                 "found may have begun after the span\n");
    }
  }
  if (f->window && f->to_ns != INT64_MAX) {
    ncs_fmt_ns(a, sizeof a, (double)f->to_ns);
    if (d->cut_past_end) {
      fprintf(o, "  %s %s: at or after the end of every recording: the whole recording is judged\n", lto, a);
    } else {
      ncs_fmt_utc(b, sizeof b, d->cut_real);
      fprintf(o, "  %s %s: the job as it was at %s, %s after its first event: records after it are ignored, "
                 "except that an operation open then which the recording shows completing later was in "
                 "progress, not stuck",
              lto, a, b, a);
      if (d->later_done)
        fprintf(o, " (%u such operation%s had made no progress for longer than a hang needs)", d->later_done,
                d->later_done == 1 ? "" : "s");
      fprintf(o, "\n");
      missed = 1;
    }
  }
  if (f->window && f->from_ns > 0) {
    ncs_fmt_ns(a, sizeof a, (double)f->from_ns);
    fprintf(o, "  %s %s: mismatched collectives (desync) are looked for only among those entered from %s "
               "after the job's first event on (%" PRIu64 " collective%s entered before it not checked); hangs and "
               "deaths are judged whatever their time\n",
            lfrom, a, a, d->from_unchecked, d->from_unchecked == 1 ? "" : "s");
    missed |= d->from_unchecked > 0;
  }
  if (missed)
    fprintf(o, "  note: not everything was judged: a hang or desync outside the filter is not shown\n");
}

static void print_text(FILE *o, const ncs_dg_t *d) {
  char a[64], b[64];
  fprintf(o, "ncclscope diagnose: %s\n", d->path);
  if (d->incident) {
    ncs_fmt_utc(a, sizeof a, d->incident_first_real);
    uint32_t nd = 0;
    for (uint32_t i = 0; i < d->nprocs; i++) nd += d->procs[i].source == NCS_DG_SRC_DUMP;
    fprintf(o, "  incident %u of %u: dumps from %s", d->incident, d->nincidents, a);
    if (d->incident_last_real > d->incident_first_real) {
      ncs_fmt_ns(b, sizeof b, (double)d->incident_last_real - d->incident_first_real);
      fprintf(o, " over %s", b);
    }
    ncs_fmt_utc(a, sizeof a, d->request_real);
    fprintf(o, "; the last dump request, at %s (\"%s\"), was answered by %u process%s\n", a, d->trigger,
            nd, nd == 1 ? "" : "es");
  } else {
    ncs_fmt_utc(a, sizeof a, d->ref_real);
    fprintf(o, "  no dumps: %u recording%s, up to %s\n", d->nprocs, d->nprocs == 1 ? "" : "s", a);
  }
  for (uint32_t i = 0; i < d->nnotes; i++) fprintf(o, "  note: %s\n", d->notes[i]);
  print_filter(o, d);
  fputc('\n', o);
  char rl[128];
  for (uint32_t i = 0; i < d->nverdicts; i++) {
    const ncs_dg_verdict_t *v = &d->verdicts[i];
    char first[32];
    snprintf(first, sizeof first, "%-6s ", ncs_dg_label(v->kind));
    ncs_wrap(o, first, "       ", v->summary, g_width);
    if (v->noutside) {
      rank_list(rl, sizeof rl, v->outside, v->noutside);
      fprintf(o, "         - rank%s %s, named by this verdict, %s outside --rank %s: judged from every rank, "
                 "%s not in the tables below\n",
              v->noutside > 1 ? "s" : "", rl, v->noutside > 1 ? "are" : "is", ranks_text(d, a, sizeof a),
              v->noutside > 1 ? "they are" : "it is");
    }
    for (int k = 0; k < v->nev; k++) ncs_wrap(o, "         - ", "           ", v->evidence[k], g_width);
  }
  for (uint32_t c = 0; c < d->ncomms; c++)
    if (d->comms[c].judged) print_comm(o, d, &d->comms[c], c);
  fprintf(o, "\nprocesses (%u):\n", d->nprocs);
  for (uint32_t i = 0; i < d->nprocs; i++) {
    const ncs_dg_proc_t *p = &d->procs[i];
    char what[160];
    if (p->unreadable) {
      fprintf(o, "  %-22s could not be read: %s\n", p->name, p->damage_msg);
      continue;
    }
    if (p->excluded) {
      if (p->excluded == NCS_JX_DUPLICATE)
        fprintf(o, "  %-22s the same recording as %s: read once\n", p->name, p->same_as);
      else
        fprintf(o, "  %-22s another run's: left out\n", p->name);
      continue;
    }
    if (p->source == NCS_DG_SRC_DUMP)
      snprintf(what, sizeof what, "%s dump %u", ncs_flight_reason_name(p->dump_reason), p->dump_index);
    else if (p->source == NCS_DG_SRC_LIVE)
      snprintf(what, sizeof what, "live file, %s", ncs_flight_state_name(p->flight_state));
    else
      snprintf(what, sizeof what, "trace, %s", p->footer ? "clean end" : p->after_cut ? "cut by --to" : "no footer");
    int64_t ag = d->ref_real - p->snap_real;
    ncs_fmt_ns(a, sizeof a, (double)ag);
    char when[160];
    if (p->after_cut) /* --to: alive then; its state at the cut is what was read */
      snprintf(when, sizeof when, "goes on after %s", d->ref_name);
    else
      snprintf(when, sizeof when, "%s %s %s %s",
               p->source == NCS_DG_SRC_DUMP ? "dumped" : p->source == NCS_DG_SRC_LIVE ? "heartbeat" : "ends", a,
               ag < 0 ? "after" : "before", d->ref_name);
    char first[64], line[512];
    snprintf(first, sizeof first, "  %-22s ", p->name);
    snprintf(line, sizeof line, "%s; %u rank%s, %u open op%s, %u open child event%s, %u open API call%s; %s",
             what, p->ranks, p->ranks == 1 ? "" : "s", p->open_ops, p->open_ops == 1 ? "" : "s",
             p->open_children, p->open_children == 1 ? "" : "s", p->open_api, p->open_api == 1 ? "" : "s", when);
    ncs_wrap(o, first, "                         ", line, g_width);
    if (p->dead) {
      snprintf(line, sizeof line, "DIED: %s", p->dead_why);
      ncs_wrap(o, "                         ", "                           ", line, g_width);
    }
    if (p->damage == 2) {
      snprintf(line, sizeof line, "damaged: %s", p->damage_msg);
      ncs_wrap(o, "                         ", "                           ", line, g_width);
    }
  }
}

int ncs_cmd_diagnose(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                       {"wide", no_argument, 0, 'W'},
                                       {"incident", required_argument, 0, 'i'},
                                       {"latest", no_argument, 0, 'l'},
                                       {"run", required_argument, 0, 'R'},
                                       {"help", no_argument, 0, 'h'},
                                       NCS_FILTER_OPTIONS,
                                       {0, 0, 0, 0}};
  static ncs_cli_filter_t cf;
  memset(&cf, 0, sizeof cf);
  int c, json = 0, latest = 0, have_inc = 0, why = 0, li = -1, wide = 0;
  uint32_t run = 0;
  uint64_t inc = 0;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":ji:lh", opts, &li)) != -1) {
    int frc;
    li = -1;
    if (ncs_parse_filter("diagnose", c, optarg, &cf, &frc)) {
      if (frc) return frc;
      continue;
    }
    switch (c) {
    case 'j': json = 1; break;
    case 'W': wide = 1; break;
    case 'i':
      if (ncs_parse_count(optarg, 1, 1000000, &inc) != 0)
        return ncs_usage_error("diagnose", "--incident needs a number from 1, not '%s'", optarg);
      have_inc = 1;
      break;
    case 'l': latest = 1; break;
    case 'R':
      if (ncs_parse_run("diagnose", optarg, &run) != 0) return NCS_EXIT_USAGE;
      break;
    case 'h': fputs(diagnose_help, stdout); return NCS_EXIT_OK;
    default: return ncs_bad_option("diagnose", c, argv);
    }
  }
  if (have_inc && latest) return ncs_usage_error("diagnose", "--incident and --latest exclude each other");
  if (optind >= argc) return ncs_usage_error("diagnose", "which recordings? give the job's directory");
  if (optind + 1 < argc) return ncs_usage_error("diagnose", "one directory, please");
  int usage = 0;
  ncs_dg_opts_t o = {.incident = latest ? -1 : (int)inc, .job = run, .why = &why,
                     .filter = ncs_job_filter_active(&cf.f) ? &cf.f : NULL, .usage = &usage};
  ncs_dg_t *d;
  char err[4096];
  if (ncs_diagnose(argv[optind], &o, &d, err, sizeof err) != 0) {
    if (usage) return ncs_usage_error("diagnose", "%s", err);
    ncs_error("%s", err);
    return ncs_job_exit(why);
  }
  if (json) {
    print_json(stdout, d);
  } else { /* built in memory, then fitted to the terminal (docs/cli.md, "Terminal output") */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    g_width = wide ? 0 : ncs_term_width(STDOUT_FILENO), g_wide = wide;
    if (!m) {
      ncs_dg_free(d);
      return NCS_EXIT_ERROR;
    }
    print_text(m, d);
    fclose(m);
    ncs_fit(stdout, buf, len, g_width, 4);
    free(buf);
  }
  /* a problem found is the answer; without one, damage (or what the recordings cannot show)
   * means the "nothing found" covers only what could be read, which is not a clean bill */
  int damaged = 0;
  for (uint32_t i = 0; i < d->nprocs; i++)
    damaged |= d->procs[i].unreadable || d->procs[i].damage == NCS_DAMAGE_CORRUPT;
  int rc = d->problem ? NCS_EXIT_FOUND : damaged || d->cannot_tell ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
  ncs_dg_free(d);
  return rc;
}
