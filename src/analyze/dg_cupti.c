/* dg_cupti.c - what CUPTI's kernel records add to the verdicts (docs/diagnose.md, "CUPTI"):
 *  - an NCCL kernel launched and never completed is evidence of a hang, when it was launched
 *    before the file's last successful CUPTI flush (a completed kernel would have been handed
 *    over by then) and CUPTI lost nothing in that file; otherwise the line says why it is not;
 *  - an operation whose host events are still open, but whose kernel CUPTI saw complete, is
 *    evidence against a hang in its kernel (its GPU work finished; what is open is host side).
 * The job model holds both (ncs_job_t.pending, ncs_job_cupti_op). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analyze/dg_int.h"
#include "util/fmt.h"

typedef struct {
  const char *func;
  int64_t seq;
  const dg_op_t *found;
} want_t;

static void want_fn(dg_op_t *op, void *arg) {
  want_t *w = arg;
  if (op->status == OP_DONE) return; /* its host events say it completed: nothing to add */
  if (!op->func || strcmp(op->func, w->func) || (w->seq >= 0 && op->seq != w->seq)) return;
  if (!w->found || op->start < w->found->start) w->found = op;
}

static void pending_lines(dg_t *D, ncs_dg_verdict_t *v) {
  const ncs_job_t *j = D->job;
  int shown = 0, lost_said = 0, skipped = 0;
  for (size_t i = 0; i < j->npending; i++) {
    const ncs_job_pending_t *p = &j->pending[i];
    if ((int)p->comm != v->comm) continue;
    if (D->cut && p->ts > D->cut_job) continue; /* --to: launched after the cut */
    const ncs_job_gpu_t *g = &j->gpu[p->proc];
    const ncs_job_proc_t *P = &j->procs[p->proc];
    char what[96];
    if (*p->func && p->seq >= 0)
      snprintf(what, sizeof what, "%s #%" PRId64 "%s", p->func, p->seq, p->nops > 1 ? " (and its group)" : "");
    else
      snprintf(what, sizeof what, "%s", *p->func ? p->func : "an operation");
    if (*g->lost) {
      if (!lost_said++)
        dg_ev_line(v, "rank %d (%s-%" PRIu64 "): CUPTI lost records (%s): its %s launches without "
                      "kernels are no evidence of a hang", p->rank, P->host, P->pid, g->lost,
                   p->graph ? "graph" : "kernel");
      continue;
    }
    if (v->nev >= NCS_DG_EVIDENCE - 1) { /* the last line says how many are not shown */
      skipped++;
      continue;
    }
    shown++;
    if (p->before_flush) {
      char ago[32];
      ncs_fmt_ns(ago, sizeof ago, /* unsigned: no overflow on a hostile file's times */
                 (double)(int64_t)(g->flush_ns + (uint64_t)P->job_off - (uint64_t)p->ts));
      dg_ev_line(v, "rank %d (%s-%" PRIu64 "): CUPTI: the NCCL %s of %s (KernelLaunch %" PRIu64
                    ", stream 0x%" PRIx64 ") was launched %s before CUPTI's last flush and never completed",
                 p->rank, P->host, P->pid, p->graph ? "graph launch" : "kernel", what, p->launch,
                 p->stream, ago);
    } else if (!p->ts) {
      dg_ev_line(v, "rank %d (%s-%" PRIu64 "): CUPTI: the NCCL %s of %s has no kernel, but its launch "
                    "time was not recorded: not known whether it had time to complete (no evidence)",
                 p->rank, P->host, P->pid, p->graph ? "graph launch" : "kernel", what);
    } else {
      dg_ev_line(v, "rank %d (%s-%" PRIu64 "): CUPTI: the NCCL %s of %s was launched after CUPTI's last "
                    "flush: not known whether it completed (no evidence either way)",
                 p->rank, P->host, P->pid, p->graph ? "graph launch" : "kernel", what);
    }
  }
  if (skipped)
    dg_ev_line(v, "CUPTI: %d more NCCL launch%s of this communicator without kernels (not shown)",
               skipped, skipped == 1 ? "" : "es");
}

static void completed_lines(dg_t *D, ncs_dg_verdict_t *v) {
  if (v->comm < 0 || (uint32_t)v->comm >= D->ncomms || !v->func[0]) return;
  dg_comm_t *C = &D->comms[v->comm];
  for (int r = 0; r < C->nranks && v->nev < NCS_DG_EVIDENCE - 2; r++) {
    if (!C->cranks[r]) continue;
    dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
    want_t w = {v->func, v->seq, NULL};
    dg_for_each_op(cr, want_fn, &w);
    int64_t s, e;
    /* diagnose counts segments from 1, the job model from 0 */
    if (!w.found || !w.found->seg ||
        !ncs_job_cupti_op(D->job, (uint32_t)cr->proc, w.found->seg - 1, w.found->id, &s, &e))
      continue;
    if (D->cut && e > D->cut_job) continue; /* --to: it completed after the cut */
    char d[32];
    ncs_fmt_ns(d, sizeof d, (double)((uint64_t)e - (uint64_t)s));
    dg_ev_line(v, "rank %d: against a hang in its kernel: CUPTI saw the kernel of %s #%" PRId64
                  " complete (%s) although its host events are open",
               r, v->func, w.found->seq, d);
  }
}

void dg_cupti(dg_t *D) {
  if (!D->job || !D->job->gpu) return;
  for (uint32_t k = 0; k < D->pub.nverdicts; k++) {
    ncs_dg_verdict_t *v = &D->pub.verdicts[k];
    if (v->comm < 0 || v->kind == NCS_DG_V_NOTHING_STUCK || v->kind == NCS_DG_V_MISMATCH) continue;
    completed_lines(D, v);
    pending_lines(D, v);
  }
}
