/* dg_verdict.c - the verdicts of one communicator (dg_int.h, docs/diagnose.md): the table of
 * the last seqNumber entered and completed by every rank, the operation the others wait in, for
 * each rank that did not enter it where it is, and when every rank entered it which rank stopped
 * progressing first; collectives whose count, datatype or root differ between ranks. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/dg_int.h"
#include "util/fmt.h"
#include "util/mem.h"

/* ------------------------------------------------------------------ analysis helpers */

int dg_op_stuck(const dg_proc_t *P, const dg_op_t *op) {
  if (op->status != OP_PENDING || op->later) return 0;
  if (op->xwhy || P->pub->dead) return 1;
  return P->snap_mono > op->progress && (int64_t)(P->snap_mono - op->progress) > NCS_DG_STUCK_NS;
}

static int64_t dg_ago(const dg_t *D, int64_t real) { return D->pub.ref_real - real; }

void dg_ago_str(const dg_t *D, char *out, size_t n, int64_t real) {
  char d[32];
  int64_t a = dg_ago(D, real);
  ncs_fmt_ns(d, sizeof d, (double)(a < 0 ? -a : a));
  snprintf(out, n, "%s %s %s", d, a < 0 ? "after" : "before", D->pub.ref_name);
}

static void dg_op_name(char *out, size_t n, const dg_op_t *op) {
  if (op->seq >= 0)
    snprintf(out, n, "%s #%" PRId64, op->func ? op->func : "?", op->seq);
  else
    snprintf(out, n, "%s %s rank %" PRId64, op->func ? op->func : "?",
             op->func && !strcmp(op->func, "Recv") ? "from" : "to", op->root);
}

ncs_dg_verdict_t *dg_verdict(dg_t *D, int kind, int comm) {
  if (D->pub.nverdicts == D->capverdicts) {
    D->capverdicts = D->capverdicts ? D->capverdicts * 2 : 8;
    D->pub.verdicts = ncs_xrealloc(D->pub.verdicts, D->capverdicts * sizeof *D->pub.verdicts);
  }
  ncs_dg_verdict_t *v = &D->pub.verdicts[D->pub.nverdicts++];
  memset(v, 0, sizeof *v);
  v->kind = kind, v->comm = comm, v->rank = -1, v->proc = -1, v->seq = -1, v->where = NCS_DG_W_UNKNOWN;
  v->channel = v->peer = v->step = v->is_send = -1;
  return v;
}

void dg_ev_line(ncs_dg_verdict_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dg_ev_line(ncs_dg_verdict_t *v, const char *fmt, ...) {
  if (v->nev >= NCS_DG_EVIDENCE) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->evidence[v->nev++], NCS_DG_LINE, fmt, ap);
  va_end(ap);
}

/* "0,1,3" or "0-2,5" */
int dg_by_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

void dg_rank_list(char *out, size_t n, const int *r, int nr) {
  out[0] = 0;
  size_t len = 0;
  for (int i = 0; i < nr && len < n; i++) {
    int j = i;
    while (j + 1 < nr && r[j + 1] == r[j] + 1) j++;
    int k = j > i + 1 ? snprintf(out + len, n - len, "%s%d-%d", i ? "," : "", r[i], r[j])
                      : snprintf(out + len, n - len, "%s%d", i ? "," : "", r[i]);
    if (j == i + 1) k += snprintf(out + len + (size_t)k, n - len - (size_t)k, ",%d", r[j]);
    if (k < 0) break;
    len += (size_t)k;
    i = j;
  }
  if (len >= n && n > 4) memcpy(out + n - 4, "...", 4);
}


static void last_fn(dg_op_t *op, void *arg) {
  last_t *l = arg;
  if (op->status == OP_UNKNOWN) return;
  if (!l->entered || op->start > l->entered->start) l->entered = op;
  if (op->status == OP_DONE && (!l->completed || op->end > l->completed->end ||
                                (op->end == l->completed->end && op->start > l->completed->start)))
    l->completed = op;
  if (op->status == OP_PENDING) {
    l->pending++;
    if (dg_op_stuck(l->P, op)) l->stuck++;
    if (!l->oldest_pending || op->start < l->oldest_pending->start) l->oldest_pending = op;
  }
}

last_t dg_rank_last(dg_t *D, dg_crank_t *cr) {
  last_t l;
  memset(&l, 0, sizeof l);
  l.P = &D->procs[cr->proc];
  dg_for_each_op(cr, last_fn, &l);
  return l;
}

/* find an operation of a rank */
typedef struct {
  const char *func;
  int64_t seq, peer;
  int pending_only;
  const dg_op_t *found;
} find_t;

static void find_fn(dg_op_t *op, void *arg) {
  find_t *f = arg;
  if (op->func != f->func || op->status == OP_UNKNOWN) return;
  if (f->seq >= 0 ? op->seq != f->seq : op->root != f->peer) return;
  if (f->pending_only && op->status != OP_PENDING) return;
  if (!f->found || op->start < f->found->start) f->found = op;
}

static const dg_op_t *dg_find_op(dg_crank_t *cr, const char *func, int64_t seq, int64_t peer,
                              int pending_only) {
  find_t f = {func, seq, peer, pending_only, NULL};
  dg_for_each_op(cr, find_fn, &f);
  return f.found;
}

/* describe what a rank did last in its communicator */
static void dg_last_line(dg_t *D, char *out, size_t n, dg_crank_t *cr) {
  last_t l = dg_rank_last(D, cr);
  const dg_proc_t *P = &D->procs[cr->proc];
  if (!l.entered) {
    snprintf(out, n, "no operation of this communicator recorded");
    return;
  }
  char a[64], b[80], c[64], d[80];
  dg_op_name(a, sizeof a, l.entered);
  dg_ago_str(D, b, sizeof b, dg_to_real(P, l.entered->start));
  if (l.completed) {
    dg_op_name(c, sizeof c, l.completed);
    dg_ago_str(D, d, sizeof d, dg_to_real(P, l.completed->end ? l.completed->end : l.completed->progress));
    if (l.completed == l.entered)
      snprintf(out, n, "last entered %s %s, completed %s", a, b, d);
    else
      snprintf(out, n, "last entered %s %s; last completed %s %s", a, b, c, d);
  } else {
    snprintf(out, n, "last entered %s %s; none completed", a, b);
  }
}

/* open events of process P attached to op (of crank g) */
typedef struct {
  const dg_ev_t *ev[64];
  int n;
  int steps, kernels, proxyops;
} kids_t;

static void dg_op_kids(const dg_proc_t *P, const dg_crank_t *cr, const dg_op_t *op, kids_t *k) {
  memset(k, 0, sizeof *k);
  for (uint32_t i = 0; i < P->nopen; i++) {
    const dg_ev_t *v = &P->open[i];
    if (v->op_id != op->id || v->seg != op->seg) continue;
    if (v->crank >= 0 && (uint32_t)v->crank != cr->gidx) continue;
    if (v->type == NCS_T_PROXY_STEP) k->steps++;
    else if (v->type == NCS_T_KERNEL_CH) k->kernels++;
    else if (v->type == NCS_T_PROXY_OP) k->proxyops++;
    else continue;
    if (k->n < 64) k->ev[k->n++] = v;
  }
}

static const char *dg_short_state(uint32_t s) {
  const char *n = ncs_state_name(s);
  if (!n || !strcmp(n, "?")) return "?";
  if (!strncmp(n, "ProxyStep", 9)) return n + 9;
  if (!strncmp(n, "ProxyOp", 7)) return n + 7;
  return n;
}

/* Could b be driven by the same thread as a (the same GPU of a process that holds several)?
 * Unknown threads do not exclude. */
static int dg_same_thread(const dg_crank_t *a, int thread, uint32_t seg) {
  return a->thread < 0 || thread < 0 || a->seg != seg || a->thread == thread;
}

/* an API call of this rank (or of any rank of its process when any_rank) still open */
static const dg_ev_t *dg_open_api(const dg_t *D, const dg_crank_t *cr, int any_rank) {
  const dg_proc_t *P = &D->procs[cr->proc];
  const dg_ev_t *best = NULL;
  for (uint32_t i = 0; i < P->nopen; i++) {
    const dg_ev_t *v = &P->open[i];
    if (v->type != NCS_T_GROUP_API && v->type != NCS_T_COLL_API && v->type != NCS_T_P2P_API) continue;
    if (v->xwhy) continue;
    if (!any_rank && v->crank >= 0 && (uint32_t)v->crank != cr->gidx) continue;
    if (any_rank && !dg_same_thread(cr, (int)v->thread, v->seg)) continue;
    if (!best || v->ts < best->ts) best = v;
  }
  return best;
}

/* ------------------------------------------------------------------ what cannot be seen */

/* the newest operation of a rank, and one whose file lost records after it started */
typedef struct {
  const dg_op_t *newest, *lost;
} unseen_t;

static void unseen_fn(dg_op_t *op, void *arg) {
  unseen_t *u = arg;
  if (op->status == OP_UNKNOWN) return;
  if (!u->newest || op->start > u->newest->start) u->newest = op;
  if (op->status == OP_LOST && !u->lost) u->lost = op;
}

static void lost_line(dg_t *D, ncs_dg_verdict_t *v, int rank, const dg_proc_t *P, const dg_op_t *op) {
  char nm[64], a[80];
  dg_op_name(nm, sizeof nm, op);
  dg_ago_str(D, a, sizeof a, dg_to_real(P, op->loss->from_ns));
  dg_ev_line(v, "rank %d's %s is open, and its recording lost %s (%s) from %s on", rank, nm,
             op->loss->records ? "records" : "an unknown number of records",
             ncs_jl_names[op->loss->kind], a);
}

#define OP_TYPES ((1u << NCS_T_COLL) | (1u << NCS_T_P2P) | (1u << NCS_T_COLL_API) | (1u << NCS_T_P2P_API))

/* A rank that did not enter the operation the others wait in, in a file that lost records after
 * its last known operation: its entry may be among them. */
static int absent_lost(dg_t *D, dg_crank_t *cr, ncs_dg_verdict_t *v) {
  const dg_proc_t *P = &D->procs[cr->proc];
  last_t l = dg_rank_last(D, cr);
  uint32_t types = DG_COMPLETION_TYPES | (1u << NCS_T_COLL_API) | (1u << NCS_T_P2P_API);
  const ncs_job_loss_t *x = ncs_job_lost(D->job, (uint32_t)cr->proc, l.entered ? l.entered->start : 0,
                                         P->snap_mono ? P->snap_mono : UINT64_MAX, NCS_JL_RECORDED,
                                         types);
  if (!x) return 0;
  char a[80];
  dg_ago_str(D, a, sizeof a, dg_to_real(P, x->from_ns));
  dg_ev_line(v, "its recording lost %s (%s) from %s on: its entry may be among them",
             x->records ? "records" : "an unknown number of records", ncs_jl_names[x->kind], a);
  return 1;
}

/* what the entries alone show: ranks that never entered a collective others entered; 1 when a rank
 * that entered it has not completed it (it waits for those behind), 0 when every rank that
 * entered it completed it (the ranks behind lack records, a cut file or a killed process's: no
 * one waits for them) */
static int behind_lines(dg_t *D, dg_comm_t *C, ncs_dg_verdict_t *v) {
  const dg_crank_t *first = NULL;
  int any = 0;
  for (int r = 0; r < C->nranks && !first; r++)
    if (C->cranks[r]) first = D->cranks[C->cranks[r] - 1];
  for (uint32_t i = 0; first && i < first->nf; i++) {
    if (first->fs[i].p2p) continue;
    const char *func = first->fs[i].func;
    int64_t top = -1;
    int behind[16], nb = 0;
    for (int r = 0; r < C->nranks; r++) {
      const ncs_dg_fseq_t *f = C->cranks[r] ? dg_fseq(D->cranks[C->cranks[r] - 1], func, 0) : NULL;
      if (f && f->entered > top) top = f->entered;
    }
    for (int r = 0; r < C->nranks; r++) {
      const ncs_dg_fseq_t *f = C->cranks[r] ? dg_fseq(D->cranks[C->cranks[r] - 1], func, 0) : NULL;
      if (f && f->entered < top && nb < 16) behind[nb++] = r;
    }
    if (!nb) continue;
    for (int r = 0; r < C->nranks; r++) {
      const ncs_dg_fseq_t *f = C->cranks[r] ? dg_fseq(D->cranks[C->cranks[r] - 1], func, 0) : NULL;
      if (f && f->entered == top && f->completed < top) any = 1;
    }
    char rl[96];
    dg_rank_list(rl, sizeof rl, behind, nb);
    dg_ev_line(v, "rank%s %s did not enter %s #%" PRId64 ", which other ranks entered", nb > 1 ? "s" : "",
               rl, func, top);
  }
  return any;
}

/* a rank of the communicator has an open operation whose file lost records after it started */
static int comm_lost(dg_t *D, dg_comm_t *C) {
  for (int r = 0; r < C->nranks; r++) {
    if (!C->cranks[r]) continue;
    unseen_t u = {0};
    dg_for_each_op(D->cranks[C->cranks[r] - 1], unseen_fn, &u);
    if (u.lost) return 1;
  }
  return 0;
}

/* a rank's entry for a collective function, or NULL (dg_fseq would make one) */
static const ncs_dg_fseq_t *fseq_find(const dg_crank_t *cr, const char *func, int p2p) {
  for (uint32_t i = 0; i < cr->nf; i++)
    if (cr->fs[i].func == func && cr->fs[i].p2p == p2p) return &cr->fs[i];
  return NULL;
}

/* Why a rank's records may be missing: its trace did not end cleanly, lost records after its newest
 * operation, or is damaged (a cut file, a process killed before its writer flushed, records that
 * name lost strings); NULL when its recording is whole or is a flight window, a snapshot of its
 * own time. */
static const char *records_gone_why(dg_t *D, dg_crank_t *cr) {
  const dg_proc_t *P = &D->procs[cr->proc];
  if (P->is_flight || P->pub->source != NCS_DG_SRC_TRACE) return NULL;
  last_t l = dg_rank_last(D, cr);
  const ncs_job_loss_t *x = ncs_job_lost(D->job, (uint32_t)cr->proc, l.entered ? l.entered->start : 0,
                                         UINT64_MAX, ~0u, NCS_JL_ALL_TYPES);
  return P->pub->damage == NCS_DAMAGE_TRUNCATED ? "its file is cut short"
         : P->pub->damage                       ? "its file is damaged"
         : !dg_proc_clean(D, cr->proc) ? "its trace has no footer: the process was killed or crashed, or still runs"
         : x ? (x->kind == NCS_JL_DROPS ? "its recording lost records: the buffer was full"
                : x->kind == NCS_JL_NO_SLOT ? "its recording lost records: no thread slot"
                : x->kind == NCS_JL_WRITE ? "its recording lost records: writes failed"
                                          : "its file is damaged")
             : NULL;
}

/* Rank r's proof of missing records in communicator C: a collective it recorded entering only up
 * to *entered (-1: none) that rank *by completed up to *top, which NCCL cannot do before every rank
 * entered it. The function's name, or NULL when no collective shows that. */
static const char *missing_proof(dg_t *D, dg_comm_t *C, int r, int64_t *entered, int64_t *top, int *by) {
  if (!C->cranks[r]) return NULL;
  dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
  for (int q = 0; q < C->nranks; q++)
    for (uint32_t i = 0; C->cranks[q] && i < D->cranks[C->cranks[q] - 1]->nf; i++) {
      const ncs_dg_fseq_t *fq = &D->cranks[C->cranks[q] - 1]->fs[i];
      if (fq->p2p || fq->completed < 0) continue;
      const ncs_dg_fseq_t *f = fseq_find(cr, fq->func, 0);
      int64_t e = f ? f->entered : -1;
      if (e >= fq->completed) continue;
      *entered = e, *top = fq->completed, *by = q;
      return fq->func;
    }
  return NULL;
}

/* The evidence of missing records: ranks `lag` (nl) recorded `func` only up to #entered (-1:
 * none), yet rank `by` completed #top, which needs every rank; `why` the first reason. */
static void missing_line(ncs_dg_verdict_t *v, const int *lag, int nl, const char *func, int64_t entered,
                         int by, int64_t top, const char *why) {
  char rl[96];
  dg_rank_list(rl, sizeof rl, lag, nl);
  if (entered < 0)
    dg_ev_line(v, "rank%s %s recorded no %s, yet rank %d completed %s #%" PRId64 ", which needs every "
                  "rank: %s records are missing (%s)", nl > 1 ? "s" : "", rl, func, by, func, top,
               nl > 1 ? "their" : "its", why);
  else
    dg_ev_line(v, "rank%s %s recorded %s only up to #%" PRId64 ", yet rank %d completed #%" PRId64
                  ", which needs every rank: %s later records are missing (%s)", nl > 1 ? "s" : "", rl,
               func, entered, by, top, nl > 1 ? "their" : "its", why);
}

/* A rank whose recording never shows it entering a collective that another rank completed: NCCL
 * completes none before every rank entered it, so that rank's records of it are missing, and
 * with them whatever it did next. Said when records_gone_why() gives a reason. Full traces only,
 * whole (a flight window or a --to cut is a snapshot of its own time). 1 when a line was added
 * (the verdict made if needed). */
static int missing_entries(dg_t *D, dg_comm_t *C, ncs_dg_verdict_t **vp, int c) {
  if (D->cut) return 0;
  int any = 0;
  for (int q = 0; q < C->nranks; q++)
  for (uint32_t i = 0; C->cranks[q] && i < D->cranks[C->cranks[q] - 1]->nf; i++) {
    const ncs_dg_fseq_t *fq = &D->cranks[C->cranks[q] - 1]->fs[i];
    if (fq->p2p) continue;
    const char *func = fq->func;
    int seen = 0; /* a function of an earlier rank: done */
    for (int z = 0; z < q && !seen; z++) seen = C->cranks[z] && fseq_find(D->cranks[C->cranks[z] - 1], func, 0);
    if (seen) continue;
    int64_t top = -1;
    int by = -1;
    for (int r = 0; r < C->nranks; r++) {
      const ncs_dg_fseq_t *f = C->cranks[r] ? fseq_find(D->cranks[C->cranks[r] - 1], func, 0) : NULL;
      if (f && f->completed > top) top = f->completed, by = r;
    }
    if (top < 0) continue;
    int lag[16], nl = 0;
    int64_t lag_seq = INT64_MAX;
    const char *why = NULL;
    for (int r = 0; r < C->nranks; r++) {
      if (!C->cranks[r]) continue;
      dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
      const ncs_dg_fseq_t *f = fseq_find(cr, func, 0);
      int64_t entered = f ? f->entered : -1;
      if (entered >= top) continue;
      const char *w = records_gone_why(D, cr);
      if (!w) continue;
      if (!why) why = w;
      if (entered < lag_seq) lag_seq = entered;
      if (nl < 16) lag[nl++] = r;
    }
    if (!nl) continue;
    if (!*vp) {
      *vp = dg_verdict(D, NCS_DG_V_CANNOT_TELL, c);
      (*vp)->rank = lag[0], (*vp)->proc = D->cranks[C->cranks[lag[0]] - 1]->proc;
    }
    missing_line(*vp, lag, nl, func, lag_seq, by, top, why);
    any = 1;
  }
  return any;
}

/* A rank that seems never to have entered the stuck operation while other ranks completed
 * collectives it has no record of: its later records are missing (records_gone_why), so where it
 * is cannot be told. 1 with the evidence added to v. */
static int absent_missing(dg_t *D, dg_comm_t *C, int r, ncs_dg_verdict_t *v) {
  if (D->cut) return 0;
  int64_t entered, top;
  int by;
  const char *func = missing_proof(D, C, r, &entered, &top, &by);
  const char *why = func ? records_gone_why(D, D->cranks[C->cranks[r] - 1]) : NULL;
  if (!why) return 0;
  missing_line(v, &r, 1, func, entered, by, top, why);
  return 1;
}

/* No operation of the communicator is stuck, but the recording cannot show that every one
 * completed: a rank's open operation whose file lost records after it started, or a rank whose
 * newest operation has no event that could show its completion. That is not "nothing stuck". */
static void cannot_tell_comm(dg_t *D, uint32_t c, int waiting) {
  dg_comm_t *C = &D->comms[c];
  ncs_dg_verdict_t *v = NULL;
  int nlost = 0, nnocomp = 0;
  for (int r = 0; r < C->nranks; r++) {
    if (!C->cranks[r]) continue;
    dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
    unseen_t u = {0};
    dg_for_each_op(cr, unseen_fn, &u);
    int nocomp = u.newest && u.newest->status == OP_NOCOMP;
    const ncs_job_loss_t *later = NULL;
    const dg_proc_t *P = &D->procs[cr->proc];
    if (!P->pub->dead && !dg_proc_clean(D, cr->proc)) /* an ended process is stuck in nothing */
      later = ncs_job_lost(D->job, (uint32_t)cr->proc, u.newest ? u.newest->start : 0,
                           P->snap_mono ? P->snap_mono : UINT64_MAX, NCS_JL_RECORDED, OP_TYPES);
    if (!u.lost && !nocomp && !later) continue;
    if (!v) {
      v = dg_verdict(D, NCS_DG_V_CANNOT_TELL, (int)c);
      v->rank = r, v->proc = cr->proc, v->waiting = waiting;
    }
    if (u.lost) nlost++, lost_line(D, v, r, P, u.lost);
    if (later && !u.lost) {
      char a[80];
      nlost++;
      dg_ago_str(D, a, sizeof a, dg_to_real(P, later->from_ns));
      dg_ev_line(v, "rank %d's recording lost %s (%s) from %s on, after its newest operation: a "
                    "later one may be among them", r, later->records ? "records" : "an unknown number of records",
                 ncs_jl_names[later->kind], a);
    }
    if (nocomp) {
      char nm[64];
      dg_op_name(nm, sizeof nm, u.newest);
      nnocomp++;
      dg_ev_line(v, "rank %d's newest operation %s stopped (enqueued), but nothing recorded could "
                    "show its completion (no KernelCh or ProxyOp events for it)", r, nm);
    }
  }
  int nmiss = missing_entries(D, C, &v, (int)c);
  if (!v) return;
  if (behind_lines(D, C, v)) v->waiting = 1; /* the others wait for those behind */
  char lost[64] = "", nocomp[80] = "";
  if (nlost) snprintf(lost, sizeof lost, "%d rank%s lost records after an operation started", nlost,
                      nlost == 1 ? "" : "s");
  if (nnocomp) snprintf(nocomp, sizeof nocomp, "%d rank%s newest operation has no visible completion",
                        nnocomp, nnocomp == 1 ? "'s" : "s'");
  snprintf(v->summary, sizeof v->summary,
           "cannot tell which rank communicator c%u " NCS_COMM_ID_FMT " waits for, or whether it is "
           "stuck: %s%s%s%s%s", c, C->comm_id, lost, nlost && nnocomp ? ", " : "", nocomp,
           nmiss && (nlost || nnocomp) ? ", " : "",
           nmiss ? "records of collectives that other ranks completed are missing" : "");
}

/* ------------------------------------------------------------------ per communicator */

/* The only operation stuck in communicator c is a dead process's: that death is the verdict
 * (the DEAD verdict, for this communicator), not a hang of a living rank. */
static void dead_inside(dg_t *D, uint32_t c, int rank, const dg_op_t *K) {
  dg_comm_t *C = &D->comms[c];
  dg_crank_t *cr = D->cranks[C->cranks[rank] - 1];
  const ncs_dg_proc_t *p = D->procs[cr->proc].pub;
  ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_DEAD, (int)c);
  char nm[64], a[80];
  dg_op_name(nm, sizeof nm, K);
  dg_cpy(v->func, sizeof v->func, K->func);
  v->seq = K->seq, v->rank = rank, v->proc = cr->proc, v->where = NCS_DG_W_DEAD;
  snprintf(v->summary, sizeof v->summary,
           "rank %d of communicator c%u " NCS_COMM_ID_FMT " died inside %s: its process died", rank,
           c, C->comm_id, nm);
  dg_ev_line(v, "rank %d (%s-%" PRIu64 "): %s", rank, p->host, p->pid, p->dead_why);
  dg_ago_str(D, a, sizeof a, dg_to_real(&D->procs[cr->proc], K->start));
  dg_ev_line(v, "it entered %s %s; no living rank of the communicator is stuck", nm, a);
}

/* the stuck operation of a communicator: the oldest stuck one, on a live process if any */
typedef struct {
  const dg_op_t *op;
  int rank;
  int64_t real;
} pick_t;

static pick_t pick_stuck(dg_t *D, uint32_t c) {
  dg_comm_t *C = &D->comms[c];
  pick_t best = {NULL, -1, 0};
  for (int pass = 0; pass < 2 && !best.op; pass++)
    for (int r = 0; r < C->nranks; r++) {
      if (!C->cranks[r]) continue;
      dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
      const dg_proc_t *P = &D->procs[cr->proc];
      if ((pass == 0) == (P->pub->dead != 0)) continue;
      for (uint32_t i = 0; i < cr->n + DG_OVER; i++) {
        const dg_op_t *op = i < cr->n ? &cr->ring[i] : &cr->over[i - cr->n];
        if (!op->id || !dg_op_stuck(P, op)) continue;
        int64_t real = dg_to_real(P, op->start);
        if (!best.op || real < best.real) best.op = op, best.rank = r, best.real = real;
      }
    }
  return best;
}

static const char *where_text(int w) {
  switch (w) {
  case NCS_DG_W_DEAD: return "its process died";
  case NCS_DG_W_OTHER_OP: return "it is inside NCCL, in another operation of this communicator";
  case NCS_DG_W_OTHER_COMM: return "it is inside NCCL, in an operation of another communicator";
  case NCS_DG_W_IN_API: return "it is inside an NCCL API call";
  case NCS_DG_W_OUTSIDE: return "it is outside NCCL (nothing open): stuck in the application";
  case NCS_DG_W_EXITED: return "it is outside NCCL: its process finalized and exited";
  default: return "no recording holds it";
  }
}

/* where is a rank that did not enter the stuck operation; fills evidence */
static int classify_absent(dg_t *D, dg_crank_t *cr, ncs_dg_verdict_t *v) {
  const dg_proc_t *P = &D->procs[cr->proc];
  const ncs_dg_proc_t *p = P->pub;
  char l[NCS_DG_LINE], a[80], nm[64];
  dg_last_line(D, l, sizeof l, cr);
  dg_ev_line(v, "rank %d (%s-%" PRIu64 "): %s", cr->rank, p->host, p->pid, l);
  if (p->dead) {
    dg_ev_line(v, "%s", p->dead_why);
    if (p->last_event_real) {
      dg_ago_str(D, a, sizeof a, p->last_event_real);
      dg_ev_line(v, "last event of the process %s (a killed process loses what its writer had not "
                 "written yet: its last few ms)", a);
    }
    return NCS_DG_W_DEAD;
  }
  last_t l2 = dg_rank_last(D, cr);
  if (l2.oldest_pending) {
    dg_op_name(nm, sizeof nm, l2.oldest_pending);
    dg_ago_str(D, a, sizeof a, dg_to_real(P, l2.oldest_pending->start));
    dg_ev_line(v, "it has %s of this communicator open, entered %s", nm, a);
    return NCS_DG_W_OTHER_OP;
  }
  /* other communicators of the same process */
  for (uint32_t g = 0; g < D->ncranks; g++) {
    dg_crank_t *o = D->cranks[g];
    if (o->proc != cr->proc || o->comm == cr->comm || !dg_same_thread(cr, o->thread, o->seg)) continue;
    last_t lo = dg_rank_last(D, o);
    if (!lo.oldest_pending) continue;
    dg_op_name(nm, sizeof nm, lo.oldest_pending);
    dg_ago_str(D, a, sizeof a, dg_to_real(P, lo.oldest_pending->start));
    dg_ev_line(v, "it has %s open in communicator c%u " NCS_COMM_ID_FMT " (rank %d there), entered %s", nm,
            (unsigned)o->comm, D->comms[o->comm].comm_id, o->rank, a);
    return NCS_DG_W_OTHER_COMM;
  }
  const dg_ev_t *api = dg_open_api(D, cr, 1);
  if (api) {
    dg_ago_str(D, a, sizeof a, dg_to_real(P, api->ts));
    dg_ev_line(v, "a thread is inside an NCCL call (%s%s%s open since %s)", ncs_type_name(api->type),
            api->func ? " " : "", api->func ? api->func : "", a);
    return NCS_DG_W_IN_API;
  }
  if (dg_proc_clean(D, cr->proc)) {
    dg_ago_str(D, a, sizeof a, p->snap_real);
    dg_ev_line(v, "its process ended cleanly %s%s", a, cr->finalized ? " (communicator finalized)" : "");
    return NCS_DG_W_EXITED;
  }
  if (P->after_cut) { /* --to */
    dg_ev_line(v, "nothing of it is open in NCCL: no operation, kernel, proxy op or API call; its "
                  "process is alive (its trace goes on after %s)", D->pub.ref_name);
    return NCS_DG_W_OUTSIDE;
  }
  dg_ago_str(D, a, sizeof a, p->snap_real);
  if (p->source == NCS_DG_SRC_TRACE) /* no footer: alive until its last record, then unknown */
    dg_ev_line(v, "nothing of it is open in NCCL: no operation, kernel, proxy op or API call; its "
                  "process was alive until its trace's last record, %s (the trace has no footer)", a);
  else
    dg_ev_line(v, "nothing of it is open in NCCL: no operation, kernel, proxy op or API call; its "
                  "process is alive (%s %s)", p->source == NCS_DG_SRC_DUMP ? "dumped" : "last heartbeat", a);
  return NCS_DG_W_OUTSIDE;
}

typedef struct {
  int rank;
  dg_crank_t *cr;
  const dg_op_t *op;
  int64_t prog_real;
  kids_t k;
  int recv_from[8], nrecv_from; /* peers its receives wait on (RecvWait) */
  int send_stuck;               /* a send step in SendGPUWait/SendPeerWait/SendWait */
} waiter_t;

static int by_prog(const void *a, const void *b) {
  const waiter_t *x = a, *y = b;
  if (x->prog_real != y->prog_real) return x->prog_real < y->prog_real ? -1 : 1;
  return x->rank - y->rank;
}

static int is_send_wait(const dg_ev_t *s) {
  return s->type == NCS_T_PROXY_STEP && s->is_send && s->has_state &&
         (s->state == 8 /* SendGPUWait */ || s->state == 9 /* SendWait */ || s->state == 20 /* SendPeerWait */);
}

/* one line per kind of open step of a rank: "2 recv steps in RecvWait from rank 0 (ch 0,1, steps 4-5)" */
static void steps_lines(dg_t *D, ncs_dg_verdict_t *v, const waiter_t *w) {
  const dg_proc_t *P = &D->procs[w->cr->proc];
  int done[64] = {0};
  /* sends stuck in SendGPUWait/SendWait first, then the rest */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < w->k.n; i++) {
      const dg_ev_t *a = w->k.ev[i];
      if (done[i] || a->type != NCS_T_PROXY_STEP) continue;
      if (pass == 0 && !(is_send_wait(a) && a->state != 20)) continue;
      int n = 0, smin = a->step, smax = a->step;
      uint64_t since = a->has_state ? a->state_ts : a->ts;
      for (int j = i; j < w->k.n; j++) {
        const dg_ev_t *b = w->k.ev[j];
        if (done[j] || b->type != NCS_T_PROXY_STEP || b->is_send != a->is_send || b->peer != a->peer ||
            b->has_state != a->has_state || (a->has_state && b->state != a->state))
          continue;
        done[j] = 1, n++;
        if (b->step < smin) smin = b->step;
        if (b->step > smax) smax = b->step;
        uint64_t t = b->has_state ? b->state_ts : b->ts;
        if (t < since) since = t;
      }
      char ag[80], st[24], in[48];
      dg_ago_str(D, ag, sizeof ag, dg_to_real(P, since));
      if (smin == smax)
        snprintf(st, sizeof st, "step %d", smin);
      else
        snprintf(st, sizeof st, "steps %d-%d", smin, smax);
      if (a->has_state)
        snprintf(in, sizeof in, "in %s", dg_short_state(a->state));
      else
        snprintf(in, sizeof in, "started (no state yet)");
      dg_ev_line(v, "rank %d: %d %s step%s (%s) %s %s rank %d since %s", w->rank, n, a->is_send ? "send" : "recv",
              n > 1 ? "s" : "", st, in, a->is_send ? "to" : "from", a->peer, ag);
    }
  }
}

/* the first KernelCh start of a waiting rank in the stuck operation, in real time; 0 none */
static int64_t kernel_first(const dg_t *D, const waiter_t *x) {
  uint64_t first = 0;
  for (int q = 0; q < x->k.n; q++)
    if (x->k.ev[q]->type == NCS_T_KERNEL_CH && (!first || x->k.ev[q]->ts < first)) first = x->k.ev[q]->ts;
  return first ? dg_to_real(&D->procs[x->cr->proc], first) : 0;
}

/* Its kernel started: a KernelCh of the operation is open, or one started and stopped. */
static int kernel_started(const waiter_t *x) { return x->k.kernels > 0 || x->op->kch_started > 0; }

/* Every rank entered the operation and none of them single out a culprit: the evidence the
 * default events give (a Coll and its kernels) shows that the ranks wait, not for whom. Which
 * rank's kernel started last, or whose host events stopped first, is how the ranks happened to
 * arrive: not a sign of a stall inside NCCL (issue 31: bench/diagnose_rate.sh, the start order
 * named the same rank whichever rank was stalled). So: CANNOT TELL, with what the evidence shows and
 * what to record to tell. `what` says why the ranks cannot be told apart; `cand`, when not
 * empty, are the ranks the evidence narrows the culprit to; `tell` what would tell. */
static void cannot_tell_inside(dg_t *D, uint32_t c, const char *func, int64_t seq, const waiter_t *w,
                               int nw, const int *done_ranks, int ndone, const char *brief,
                               const char *what, const int *cand, int ncand, const char *tell) {
  dg_comm_t *C = &D->comms[c];
  ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_CANNOT_TELL, (int)c);
  dg_cpy(v->func, sizeof v->func, func);
  v->seq = seq, v->waiting = 1;
  char nm[64], dl[96] = "";
  if (seq >= 0)
    snprintf(nm, sizeof nm, "%s #%" PRId64, func, seq);
  else
    dg_cpy(nm, sizeof nm, func);
  if (ndone) dg_rank_list(dl, sizeof dl, done_ranks, ndone);
  snprintf(v->summary, sizeof v->summary,
           "cannot tell which rank communicator c%u " NCS_COMM_ID_FMT " waits for: every rank entered %s "
           "and %s%s%s; %s: to tell, %s",
           c, C->comm_id, nm, ndone ? "ranks " : "none completed it", dl, ndone ? " completed it" : "", brief,
           tell);
  if (ncand) {
    char cl[96];
    int s[16], n = ncand < 16 ? ncand : 16;
    memcpy(s, cand, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, dg_by_int);
    dg_rank_list(cl, sizeof cl, s, n);
    dg_ev_line(v, "%s: the culprit is one of ranks %s", what, cl);
  } else {
    dg_ev_line(v, "%s", what);
  }
  int64_t kmin = 0, kmax = 0;
  int rmin = -1, rmax = -1;
  for (int i = 0; i < nw; i++) {
    int64_t t = kernel_first(D, &w[i]);
    if (!t) continue;
    if (rmin < 0 || t < kmin) kmin = t, rmin = w[i].rank;
    if (rmax < 0 || t > kmax) kmax = t, rmax = w[i].rank;
  }
  if (rmin >= 0 && rmin != rmax) {
    char d[32];
    ncs_fmt_ns(d, sizeof d, (double)(kmax - kmin));
    dg_ev_line(v, "the kernels started within %s of each other (rank %d first, rank %d last): the order "
                  "in which the ranks arrived, not a sign of which one stalled", d, rmin, rmax);
  }
  for (int i = 0; i < nw && v->nev < NCS_DG_EVIDENCE - 1 - NCS_DG_EVIDENCE_CUPTI; i++) {
    const waiter_t *x = &w[i];
    const dg_proc_t *Q = &D->procs[x->cr->proc];
    char ag[80], kinds[96] = "", ks[64] = "";
    dg_ago_str(D, ag, sizeof ag, x->prog_real);
    if (x->k.steps || x->k.kernels || x->k.proxyops)
      snprintf(kinds, sizeof kinds, "; open: %d proxy op%s, %d step%s, %d kernel channel%s", x->k.proxyops,
               x->k.proxyops == 1 ? "" : "s", x->k.steps, x->k.steps == 1 ? "" : "s", x->k.kernels,
               x->k.kernels == 1 ? "" : "s");
    int64_t kf = kernel_first(D, x);
    if (kf && rmin != rmax) {
      char kg[32];
      ncs_fmt_ns(kg, sizeof kg, (double)(kf - kmin));
      snprintf(ks, sizeof ks, "; kernel started %s after the first rank's", kg);
    }
    dg_ev_line(v, "rank %d (%s-%" PRIu64 "): last progress %s%s%s", x->rank, Q->pub->host, Q->pub->pid, ag,
               kinds, ks);
  }
}

/* the ProxyOps of the waiting ranks, without their steps: the transfers still open. When they
 * are all one direction of one link (rank S's send to P, P's receive from S), the culprit is one
 * of S and P; which one, only the steps' states say. 1 with *s, *p set; 0 otherwise. */
static int open_link(const waiter_t *w, int nw, int *s, int *p) {
  int ns = -1, np = -1;
  for (int i = 0; i < nw; i++)
    for (int q = 0; q < w[i].k.n; q++) {
      const dg_ev_t *e = w[i].k.ev[q];
      if (e->type != NCS_T_PROXY_OP || e->peer < 0) continue;
      int from = e->is_send ? w[i].rank : e->peer, to = e->is_send ? e->peer : w[i].rank;
      if (ns >= 0 && (ns != from || np != to)) return 0;
      ns = from, np = to;
    }
  if (ns < 0 || ns == np) return 0;
  *s = ns, *p = np;
  return 1;
}

/* How strongly the open steps of waiting rank i point at it. Its send stuck in SendWait (posted
 * to the network, never done) is stronger than in SendGPUWait (its GPU has not produced the data:
 * in a ring that is also what waiting for the previous rank looks like); either is stronger when
 * another rank's receive waits in RecvWait for its data. 5 waited for and SendWait, 4 waited for
 * and SendGPUWait, 3 SendWait, 2 SendGPUWait, 1 waited for, 0 neither. */
static int step_class(const waiter_t *w, int nw, int i) {
  int pointed = 0, hard = 0;
  for (int j = 0; j < nw; j++)
    for (int q = 0; q < w[j].nrecv_from; q++)
      if (j != i && w[j].recv_from[q] == w[i].rank) pointed++;
  for (int q = 0; q < w[i].k.n; q++) {
    const dg_ev_t *s = w[i].k.ev[q];
    if (s->type == NCS_T_PROXY_STEP && s->is_send && s->has_state && (s->state == 8 || s->state == 9)) {
      int h = s->state == 9 ? 2 : 1; /* SendWait, SendGPUWait */
      if (h > hard) hard = h;
    }
  }
  if (hard) return (pointed ? 3 : 1) + hard;
  return pointed ? 1 : 0;
}

static const char *step_class_why(int cls) {
  switch (cls) {
  case 5: return "the others' receives wait for its data and its send is stuck in the network";
  case 4: return "the others' receives wait for its data and its GPU never produced it";
  case 3: return "its send is stuck in the network";
  case 2: return "its send waits for its GPU";
  case 1: return "the others' receives wait for its data";
  default: return "it is the only rank with network steps open";
  }
}

#define DG_RECORD_STEPS "record the proxy steps (`ncclscope record --events all`)"

static void stuck_inside(dg_t *D, uint32_t c, const char *func, int64_t seq, waiter_t *w, int nw,
                         const int *done_ranks, int ndone, int mismatched) {
  qsort(w, (size_t)nw, sizeof *w, by_prog);
  int steps = 0, kernels = 0, proxyops = 0;
  for (int i = 0; i < nw; i++) steps += w[i].k.steps, kernels += w[i].k.kernels, proxyops += w[i].k.proxyops;
  int cul = 0;
  const char *why;
  int64_t lead = nw > 1 ? w[1].prog_real - w[0].prog_real : 0;
  if (steps) {
    /* Ranks with only kernels open sent everything and wait for the others: not the culprit.
     * Among the ranks with open network steps, the one whose steps point at it most (step_class).
     * Two ranks of the best class are not told apart by when they stopped: cannot tell. */
    int bestcls = -1, ntie = 0, tie[16];
    cul = -1;
    for (int i = 0; i < nw; i++) {
      if (!w[i].k.steps) continue;
      int cls = step_class(w, nw, i);
      if (cls > bestcls || (cls == bestcls && w[i].prog_real < w[cul].prog_real)) cul = i, bestcls = cls;
    }
    for (int i = 0; i < nw; i++)
      if (w[i].k.steps && step_class(w, nw, i) == bestcls) {
        if (ntie < 16) tie[ntie] = w[i].rank;
        ntie++;
      }
    if (ntie > 1) {
      char what[160];
      snprintf(what, sizeof what, "the network steps of %d ranks are open alike (for each: %s); when "
                                  "each stopped is no evidence of which one stalled", ntie,
               bestcls ? step_class_why(bestcls) : "not waited for, no send stuck");
      cannot_tell_inside(D, c, func, seq, w, nw, done_ranks, ndone, "the network steps do not single out a rank",
                         what, tie, ntie < 16 ? ntie : 16,
                         "see whose GPU work stopped (CUPTI: `ncclscope record --cupti on`)");
      return;
    }
    why = step_class_why(bestcls);
  } else if (kernels || proxyops) {
    /* No steps (the default events: only kernels, or ProxyOps without their steps). What singles
     * out a rank: its kernel never started while every other rank's did (its GPU never joined;
     * the others wait for its data). Not: which kernel started last, whose events stopped first. */
    int nost[16], nn = 0, started = 0;
    for (int i = 0; i < nw; i++)
      if (!kernel_started(&w[i])) {
        if (nn < 16) nost[nn] = w[i].rank;
        nn++, cul = i;
      } else
        started++;
    if (nn == 1 && started) {
      why = "its kernel never started while every other rank's did: the others wait for its data";
    } else {
      char what[200], brief[64];
      int cand[2], ncand = 0, s, p;
      if (nn > 1 && started) {
        snprintf(brief, sizeof brief, "the kernels of %d ranks never started", nn);
        snprintf(what, sizeof what, "the kernels of %d ranks never started while the others' did", nn);
      } else if (proxyops && open_link(w, nw, &s, &p)) {
        snprintf(brief, sizeof brief, "only the transfer from rank %d to rank %d is open", s, p);
        snprintf(what, sizeof what, "the transfer from rank %d to rank %d never finished (rank %d's send "
                 "and rank %d's receive ProxyOps are open, every other one completed); which side stopped "
                 "is not in the ProxyOps", s, p, s, p);
        cand[0] = s, cand[1] = p, ncand = 2;
      } else if (!started) {
        snprintf(brief, sizeof brief, "no rank's kernel started");
        snprintf(what, sizeof what, "no rank's kernel of it started: the recorded events do not show "
                 "which rank holds the others up");
      } else {
        snprintf(brief, sizeof brief, "the kernels' start order singles out no rank");
        snprintf(what, sizeof what, "every rank's kernel started and none ended: the ranks wait, but "
                 "kernels do not show for whom (which kernel started last is when its rank arrived)");
      }
      cannot_tell_inside(D, c, func, seq, w, nw, done_ranks, ndone, brief, what, ncand ? cand : nost,
                         ncand ? ncand : (nn > 1 && started ? (nn < 16 ? nn : 16) : 0), DG_RECORD_STEPS);
      return;
    }
  } else {
    cannot_tell_inside(D, c, func, seq, w, nw, done_ranks, ndone, "no kernel or proxy event of it was recorded",
                       "no kernel or proxy event of it was recorded (NCCLSCOPE_EVENTS): nothing shows which "
                       "rank stopped", NULL, 0, DG_RECORD_STEPS);
    return;
  }
  ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_STUCK_INSIDE, (int)c);
  dg_cpy(v->func, sizeof v->func, func);
  v->seq = seq;
  waiter_t *W = &w[cul];
  v->rank = W->rank, v->proc = W->cr->proc;
  v->since_ns = D->procs[W->cr->proc].pub->snap_real - W->prog_real; /* idle when last seen */
  v->lead_ns = cul == 0 && nw > 1 ? lead : 0;
  /* its most telling open step: a send stuck in SendGPUWait/SendWait, then one waiting for the
   * peer (SendPeerWait), then any; the oldest state of the best kind */
  const dg_ev_t *best = NULL;
  int bestk = -1;
  for (int q = 0; q < W->k.n; q++) {
    const dg_ev_t *s = W->k.ev[q];
    if (s->type != NCS_T_PROXY_STEP) continue;
    int kind = !is_send_wait(s) ? 0 : s->state == 20 ? 1 : 2;
    uint64_t t = s->has_state ? s->state_ts : s->ts;
    if (!best || kind > bestk || (kind == bestk && t < (best->has_state ? best->state_ts : best->ts)))
      best = s, bestk = kind;
  }
  char ag[80], ld[32], sd[32];
  ncs_fmt_ns(sd, sizeof sd, (double)v->since_ns);
  ncs_fmt_ns(ld, sizeof ld, (double)lead);
  if (best && best->type == NCS_T_PROXY_STEP) {
    v->channel = best->channel, v->peer = best->peer, v->step = best->step, v->is_send = best->is_send;
    dg_cpy(v->state, sizeof v->state, best->has_state ? dg_short_state(best->state) : "started");
    snprintf(v->summary, sizeof v->summary,
             "every rank of communicator c%u " NCS_COMM_ID_FMT " entered %s #%" PRId64 "; rank %d is stuck inside it: %s step %d on channel "
             "%d %s rank %d in %s, no progress for %s (%s)",
             c, D->comms[c].comm_id, func, seq, W->rank, best->is_send ? "send" : "recv", best->step, best->channel,
             best->is_send ? "to" : "from", best->peer, v->state, sd, why);
  } else {
    if (!steps) dg_cpy(v->state, sizeof v->state, "no_kernel"); /* the one rank whose kernel never started */
    snprintf(v->summary, sizeof v->summary,
             "every rank of communicator c%u " NCS_COMM_ID_FMT " entered %s #%" PRId64 "; rank %d is stuck inside it, no progress for %s (%s)",
             c, D->comms[c].comm_id, func, seq, W->rank, sd, why);
  }
  if (mismatched) {
    size_t l = strlen(v->summary);
    snprintf(v->summary + l, sizeof v->summary - l, "; likely a consequence of the mismatch");
  }
  if (nw > 1 && cul == 0)
    dg_ev_line(v, "rank %d stopped progressing %s before any other rank", W->rank, ld);
  if (steps) {
    int only_k[16], nk = 0;
    for (int i = 0; i < nw && nk < 16; i++)
      if (!w[i].k.steps && w[i].k.kernels) only_k[nk++] = w[i].rank;
    if (nk) {
      char kl[96];
      qsort(only_k, (size_t)nk, sizeof only_k[0], dg_by_int);
      dg_rank_list(kl, sizeof kl, only_k, nk);
      dg_ev_line(v, "rank%s %s: no network step open, only kernel%s: %s sent everything and wait%s for the others",
              nk > 1 ? "s" : "", kl, nk > 1 ? "s" : "", nk > 1 ? "they" : "it", nk > 1 ? "" : "s");
    }
  }
  {
    int ptr[16], np = 0;
    for (int j = 0; j < nw && np < 16; j++)
      for (int q = 0; q < w[j].nrecv_from; q++)
        if (j != cul && w[j].recv_from[q] == W->rank) {
          ptr[np++] = w[j].rank;
          break;
        }
    if (np) {
      char pl[96];
      qsort(ptr, (size_t)np, sizeof ptr[0], dg_by_int);
      dg_rank_list(pl, sizeof pl, ptr, np);
      dg_ev_line(v, "rank%s %s wait%s in RecvWait for data from rank %d", np > 1 ? "s" : "", pl,
              np > 1 ? "" : "s", W->rank);
    }
  }
  int64_t kmin = 0; /* the earliest kernel start of the waiting ranks */
  for (int i = 0; i < nw; i++)
    for (int q = 0; q < w[i].k.n; q++)
      if (w[i].k.ev[q]->type == NCS_T_KERNEL_CH) {
        int64_t t = dg_to_real(&D->procs[w[i].cr->proc], w[i].k.ev[q]->ts);
        if (!kmin || t < kmin) kmin = t;
      }
  for (int i = 0; i < nw && v->nev < NCS_DG_EVIDENCE - 1 - NCS_DG_EVIDENCE_CUPTI; i++) {
    const waiter_t *x = &w[i == 0 ? cul : (i == cul ? 0 : i)];
    const dg_proc_t *Q = &D->procs[x->cr->proc];
    dg_ago_str(D, ag, sizeof ag, x->prog_real);
    char kinds[96] = "";
    if (x->k.steps || x->k.kernels || x->k.proxyops)
      snprintf(kinds, sizeof kinds, "; open: %d proxy op%s, %d step%s, %d kernel channel%s", x->k.proxyops,
               x->k.proxyops == 1 ? "" : "s", x->k.steps, x->k.steps == 1 ? "" : "s", x->k.kernels,
               x->k.kernels == 1 ? "" : "s");
    uint64_t kfirst = 0;
    for (int q = 0; q < x->k.n; q++)
      if (x->k.ev[q]->type == NCS_T_KERNEL_CH && (!kfirst || x->k.ev[q]->ts < kfirst)) kfirst = x->k.ev[q]->ts;
    char ks[96] = "";
    if (kfirst && !steps) {
      char kg[32];
      ncs_fmt_ns(kg, sizeof kg, (double)dg_to_real(Q, kfirst) - kmin);
      snprintf(ks, sizeof ks, "; kernel started %s after the first rank's", kg);
    } else if (!steps && kernels && !kernel_started(x)) {
      snprintf(ks, sizeof ks, "; its kernel never started");
    }
    dg_ev_line(v, "rank %d (%s-%" PRIu64 "): last progress %s%s%s", x->rank, Q->pub->host, Q->pub->pid, ag, kinds, ks);
    if (i == 0 || i < 4) steps_lines(D, v, x);
  }
  if (ndone) {
    char rl[96];
    dg_rank_list(rl, sizeof rl, done_ranks, ndone);
    dg_ev_line(v, "rank%s %s completed it", ndone > 1 ? "s" : "", rl);
  }
}

void dg_analyze_comm(dg_t *D, uint32_t c) {
  dg_comm_t *C = &D->comms[c];
  ncs_dg_comm_t *out = &D->pub.comms[c];
  out->comm_id = C->comm_id;
  dg_cpy(out->name, sizeof out->name, C->name);
  out->nranks = C->nranks;
  out->ranks = ncs_xcalloc(C->nranks > 0 ? (size_t)C->nranks : 1, sizeof *out->ranks);
  out->stuck_seq = -1, out->stuck_rank = out->stuck_peer = -1;
  if (C->nranks <= 0) { /* NCCL's profiler ABI v1-v3 pass no rank, size or commId */
    ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_CANNOT_TELL, (int)c);
    snprintf(v->summary, sizeof v->summary,
             "cannot tell whether communicator %u is stuck: it was recorded without its ranks and "
             "size (NCCL profiler ABI v1-v3 do not pass them), so its ranks cannot be matched", c);
    return;
  }
  /* table: last seqNumber entered/completed per func */
  for (int r = 0; r < C->nranks; r++) {
    ncs_dg_rank_t *R = &out->ranks[r];
    R->proc = -1;
    if (!C->cranks[r]) continue;
    dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
    R->present = 1, R->proc = cr->proc;
    out->ranks_present++;
    memcpy(R->f, cr->fs, sizeof R->f);
    R->nf = cr->nf;
    last_t l = dg_rank_last(D, cr);
    R->open = l.pending, R->stuck = l.stuck;
    if (l.pending > l.stuck) out->in_flight += l.pending - l.stuck;
    if (l.oldest_pending) {
      char nm[64], d[32];
      dg_op_name(nm, sizeof nm, l.oldest_pending);
      const dg_proc_t *P = &D->procs[cr->proc];
      ncs_fmt_ns(d, sizeof d, (double)P->pub->snap_real - dg_to_real(P, l.oldest_pending->progress));
      if (P->pub->dead)
        snprintf(R->open_desc, sizeof R->open_desc, "%s%s (its recording ends)", nm, l.pending > 1 ? " +more" : "");
      else if (l.oldest_pending->later)
        snprintf(R->open_desc, sizeof R->open_desc, "%s%s (idle %s) in flight, completed later", nm,
                 l.pending > 1 ? " +more" : "", d);
      else
        snprintf(R->open_desc, sizeof R->open_desc, "%s%s (idle %s)%s", nm, l.pending > 1 ? " +more" : "", d,
                 dg_op_stuck(P, l.oldest_pending) ? "" : " in flight");
    }
  }
  /* collectives completed on every rank */
  for (int r = 0; r < C->nranks; r++) {
    if (!out->ranks[r].present) continue;
    for (uint32_t i = 0; i < out->ranks[r].nf; i++) {
      const ncs_dg_fseq_t *f = &out->ranks[r].f[i];
      int first = 1;
      for (int q = 0; q < r; q++)
        for (uint32_t j = 0; j < out->ranks[q].nf; j++)
          if (out->ranks[q].f[j].func == f->func && out->ranks[q].f[j].p2p == f->p2p) first = 0;
      if (!first || f->p2p) continue;
      int64_t mn = INT64_MAX;
      for (int q = 0; q < C->nranks; q++) {
        if (!out->ranks[q].present) continue;
        int64_t got = -1;
        for (uint32_t j = 0; j < out->ranks[q].nf; j++)
          if (out->ranks[q].f[j].func == f->func && !out->ranks[q].f[j].p2p) got = out->ranks[q].f[j].completed;
        if (got < mn) mn = got;
      }
      if (mn != INT64_MAX && mn >= 0) out->ops_completed_all += (uint64_t)mn + 1;
    }
  }
  pick_t pk = pick_stuck(D, c);
  if (!pk.op) {
    dg_comm_mismatches(D, c, NULL, -1);
    cannot_tell_comm(D, c, 0);
    return;
  }
  const dg_op_t *K = pk.op;
  out->has_stuck = 1;
  if (D->procs[D->cranks[C->cranks[pk.rank] - 1]->proc].pub->dead) {
    /* no rank of a living process is stuck: the communicator waits for a dead one */
    dead_inside(D, c, pk.rank, K);
    dg_comm_mismatches(D, c, K->func, K->seq);
    return;
  }
  dg_cpy(out->stuck_func, sizeof out->stuck_func, K->func);
  out->stuck_p2p = K->seq < 0;
  out->stuck_seq = K->seq;
  if (K->seq < 0) out->stuck_rank = pk.rank, out->stuck_peer = (int)K->root;
  char kname[64];
  dg_op_name(kname, sizeof kname, K);
  if (K->seq < 0) snprintf(kname + strlen(kname), sizeof kname - strlen(kname), " (of rank %d)", pk.rank);
  int mismatched = dg_comm_mismatches(D, c, K->func, K->seq);
  /* per rank: entered it? */
  waiter_t *w = ncs_xcalloc((size_t)C->nranks, sizeof *w);
  int nw = 0, absent = 0;
  int *done = ncs_xcalloc((size_t)C->nranks, sizeof *done);
  int ndone = 0;
  int *waiting_ranks = ncs_xcalloc((size_t)C->nranks, sizeof *waiting_ranks);
  int nwaiting = 0;
  const char *peer_func = K->seq < 0 ? dg_intern(D, strcmp(K->func, "Send") ? "Send" : "Recv") : NULL;
  int64_t oldest_wait = 0;
  for (int r = 0; r < C->nranks; r++) {
    ncs_dg_rank_t *R = &out->ranks[r];
    if (K->seq < 0 && r != pk.rank && r != (int)K->root) continue; /* P2p: only the two ends */
    if (!C->cranks[r]) {
      R->state = NCS_DG_R_MISSING;
      absent++;
      continue;
    }
    dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
    const dg_proc_t *P = &D->procs[cr->proc];
    const dg_op_t *op = K->seq >= 0 ? dg_find_op(cr, K->func, K->seq, 0, 0)
                        : r == pk.rank ? K
                                       : dg_find_op(cr, peer_func, -1, pk.rank, 1);
    int entered = op != NULL;
    if (!op && K->seq >= 0) {
      const ncs_dg_fseq_t *f = NULL;
      for (uint32_t i = 0; i < cr->nf; i++)
        if (cr->fs[i].func == K->func && !cr->fs[i].p2p) f = &cr->fs[i];
      if (f && f->entered >= K->seq) {
        entered = 1;
        if (f->completed >= K->seq) {
          R->state = NCS_DG_R_COMPLETED;
          done[ndone++] = r;
          continue;
        }
      }
    }
    if (!entered) {
      R->state = NCS_DG_R_NOT_ENTERED;
      absent++;
      continue;
    }
    if (op && op->status == OP_DONE) {
      R->state = NCS_DG_R_COMPLETED;
      done[ndone++] = r;
      continue;
    }
    R->state = NCS_DG_R_WAITING;
    waiting_ranks[nwaiting++] = r;
    if (op) {
      R->stuck_since_real = dg_to_real(P, op->progress);
      int64_t st = dg_to_real(P, op->start);
      if (!oldest_wait || st < oldest_wait) oldest_wait = st;
      waiter_t *x = &w[nw++];
      x->rank = r, x->cr = cr, x->op = op, x->prog_real = R->stuck_since_real;
      dg_op_kids(P, cr, op, &x->k);
      for (int q = 0; q < x->k.n; q++) {
        const dg_ev_t *s = x->k.ev[q];
        if (s->type != NCS_T_PROXY_STEP) continue;
        if (!s->is_send && s->has_state && s->state == 10 /* RecvWait */ && x->nrecv_from < 8) {
          int dup = 0;
          for (int z = 0; z < x->nrecv_from; z++) dup |= x->recv_from[z] == s->peer;
          if (!dup) x->recv_from[x->nrecv_from++] = s->peer;
        }
        if (is_send_wait(s)) x->send_stuck = 1;
      }
    }
  }
  char wl[96], ag[80];
  dg_rank_list(wl, sizeof wl, waiting_ranks, nwaiting);
  if (oldest_wait) dg_ago_str(D, ag, sizeof ag, oldest_wait);
  if (absent) {
    for (int r = 0; r < C->nranks; r++) {
      ncs_dg_rank_t *R = &out->ranks[r];
      if (R->state != NCS_DG_R_NOT_ENTERED && R->state != NCS_DG_R_MISSING) continue;
      ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_NOT_ENTERED, (int)c);
      const char *why = "no readable recording holds it";
      dg_cpy(v->func, sizeof v->func, K->func);
      v->seq = K->seq;
      v->rank = r;
      if (R->state == NCS_DG_R_MISSING) {
        v->where = NCS_DG_W_UNKNOWN;
        dg_ev_line(v, "no recording in this directory holds rank %d of this communicator", r);
        for (uint32_t i = 0; i < D->pub.nprocs; i++) /* it may be in a file that could not be read */
          if (D->pub.procs[i].unreadable) {
            v->kind = NCS_DG_V_CANNOT_TELL, v->waiting = 1;
            dg_ev_line(v, "%s could not be read (%s): it may hold rank %d", D->pub.procs[i].name,
                       D->pub.procs[i].damage_msg, r);
          }
        /* a process that died before its writer recorded its communicators */
        for (uint32_t i = 0; i < D->pub.nprocs; i++) {
          const ncs_dg_proc_t *q = &D->pub.procs[i];
          int holds = 0;
          for (uint32_t g = 0; g < D->ncranks; g++) holds |= D->cranks[g]->proc == (int)i;
          if (!q->dead || holds) continue;
          dg_ev_line(v, "process %s-%" PRIu64 " died before recording any communicator: %s", q->host, q->pid,
                  q->dead_why);
          v->kind = NCS_DG_V_DEAD, v->where = NCS_DG_W_DEAD, v->proc = (int)i;
          R->where = NCS_DG_W_DEAD;
        }
      } else {
        dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
        v->proc = cr->proc;
        v->where = classify_absent(D, cr, v);
        R->where = v->where;
        if (v->where == NCS_DG_W_DEAD) v->kind = NCS_DG_V_DEAD;
        else if (absent_lost(D, cr, v))
          v->kind = NCS_DG_V_CANNOT_TELL, v->waiting = 1, why = "its recording lost records";
        else if (absent_missing(D, C, r, v))
          v->kind = NCS_DG_V_CANNOT_TELL, v->waiting = 1,
          why = "its records of collectives that other ranks completed are missing";
      }
      if (nwaiting)
        dg_ev_line(v, "rank%s %s wait%s in %s, entered %s", nwaiting > 1 ? "s" : "", wl,
                nwaiting > 1 ? "" : "s", kname, ag);
      if (ndone) {
        char dl[96];
        dg_rank_list(dl, sizeof dl, done, ndone);
        dg_ev_line(v, "rank%s %s completed it", ndone > 1 ? "s" : "", dl);
      }
      if (K->seq < 0)
        snprintf(v->summary, sizeof v->summary,
                 "rank %d never posted the %s %s rank %d that rank %d's %s waits for (communicator "
                 "c%u " NCS_COMM_ID_FMT "): %s",
                 r, peer_func, !strcmp(peer_func, "Recv") ? "from" : "to", pk.rank, pk.rank, K->func,
                 c, C->comm_id, where_text(v->where));
      else
        snprintf(v->summary, sizeof v->summary, "rank %d never entered %s (communicator c%u "
                 NCS_COMM_ID_FMT "): %s", r, kname, c, C->comm_id, where_text(v->where));
      if (v->kind == NCS_DG_V_CANNOT_TELL)
        snprintf(v->summary, sizeof v->summary,
                 "cannot tell whether rank %d entered %s (communicator c%u " NCS_COMM_ID_FMT "): %s", r,
                 kname, c, C->comm_id, why);
    }
  } else if (nw && comm_lost(D, C)) { /* who stopped first is unknowable with a rank's records lost */
    out->has_stuck = 0;
    cannot_tell_comm(D, c, 1);
  } else if (nw) {
    stuck_inside(D, c, K->seq < 0 ? kname : K->func, K->seq, w, nw, done, ndone, mismatched);
  }
  free(w);
  free(done);
  free(waiting_ranks);
}

