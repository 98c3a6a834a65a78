/* diagnose.c - hang and desync verdicts over the recordings of a job (see diagnose.h and
 * docs/diagnose.md for what is read, how each verdict is decided, and the limits). */
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
#include "analyze/diagnose.h"
#include "util/fmt.h"
#include "util/mem.h"

/* ------------------------------------------------------------------ processes: snapshot, death */

#define DG_PLAUSIBLE_NS 3600000000000ll /* a header time this far from the file's clock is bogus */

/* A flight header's times come from an untrusted file: one that its own clock pairs and records
 * contradict by more than an hour is not used (the times the records show are). */
static int far_apart(int64_t a, int64_t b) {
  uint64_t d = a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
  return d > (uint64_t)DG_PLAUSIBLE_NS;
}

static void header_times(dg_t *D, dg_proc_t *P) {
  ncs_flight_info_t *f = &P->fi;
  int bad = 0;
  if (f->heartbeat_mono > P->last_life + DG_PLAUSIBLE_NS) f->heartbeat_mono = 0, bad = 1;
  if (f->dump_mono > P->last_life + DG_PLAUSIBLE_NS) f->dump_mono = 0, bad = 1;
  int64_t hb = dg_to_real(P, f->heartbeat_mono ? f->heartbeat_mono : P->last_life);
  if (f->heartbeat_real && far_apart((int64_t)f->heartbeat_real, hb)) f->heartbeat_real = 0, bad = 1;
  if (f->dump_real && f->dump_mono && far_apart((int64_t)f->dump_real, dg_to_real(P, f->dump_mono)))
    f->dump_real = 0, f->dump_mono = 0, bad = 1;
  P->pub->heartbeat_real = (int64_t)f->heartbeat_real;
  if (bad) dg_note(D, "%s: its header's heartbeat or dump time contradicts its records; the records' times are used", P->pub->name);
}

/* The newest completion, in realtime, of an operation that needs every rank of its communicator
 * (AllReduce, AllGather, ReduceScatter: no member can finish it alone; a Broadcast root or a
 * Reduce sender may) recorded by another process in a communicator where process i holds a rank:
 * process i was alive then, whatever its own records say. 0 when there is none. */
typedef struct {
  int64_t t;
  const dg_proc_t *P;
} alive_ctx_t;
static void alive_op(dg_op_t *op, void *arg) {
  alive_ctx_t *x = arg;
  if (op->status != OP_DONE || op->inferred || !op->end || op->seq < 0 || !ncs_all_depend(op->func)) return;
  int64_t t = dg_to_real(x->P, op->end);
  if (t > x->t) x->t = t;
}
static int64_t alive_until(dg_t *D, uint32_t i) {
  alive_ctx_t x = {0, NULL};
  for (uint32_t g = 0; g < D->ncranks; g++) {
    if (D->cranks[g]->proc != (int)i) continue;
    for (uint32_t h = 0; h < D->ncranks; h++) {
      dg_crank_t *o = D->cranks[h];
      if (o->proc == (int)i || o->comm != D->cranks[g]->comm) continue;
      x.P = &D->procs[o->proc];
      dg_for_each_op(o, alive_op, &x);
    }
  }
  return x.t;
}

static void procs_prepare(dg_t *D) {
  ncs_dg_t *G = &D->pub;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    dg_proc_t *P = &D->procs[i];
    ncs_dg_proc_t *p = &G->procs[i];
    p->clk_off = P->clk_off;
    if (P->is_flight) header_times(D, P);
    if (P->is_flight && p->source == NCS_DG_SRC_DUMP && P->fi.dump_mono) {
      P->snap_mono = P->fi.dump_mono;
      p->snap_real = (int64_t)P->fi.dump_real;
    } else if (P->is_flight && P->fi.heartbeat_mono) {
      P->snap_mono = P->fi.heartbeat_mono > P->last_life ? P->fi.heartbeat_mono : P->last_life;
      p->snap_real = P->fi.heartbeat_real ? (int64_t)P->fi.heartbeat_real : dg_to_real(P, P->snap_mono);
    } else if (D->cut && P->after_cut) { /* --to: alive at the cut, which is its snapshot */
      p->after_cut = 1;
      P->snap_mono = P->cut_mono;
      p->snap_real = dg_to_real(P, P->cut_mono);
    } else {
      P->snap_mono = P->last_life;
      p->snap_real = dg_to_real(P, P->last_life);
    }
    p->last_event_real = dg_to_real(P, P->last_event);
  }
  /* reference time: the incident's last dump request, else the newest snapshot */
  if (G->incident) {
    G->ref_real = G->request_real;
    G->ref_name = "the dump request";
  } else {
    G->ref_real = 0;
    for (uint32_t i = 0; i < G->nprocs; i++)
      if (G->procs[i].snap_real > G->ref_real) G->ref_real = G->procs[i].snap_real;
    G->ref_name = D->cut ? (D->pub.filter.rsel || D->pub.filter.tsel ? "the window end" : "the --to time") : "the end of the recording";
  }
  int64_t trig = G->incident ? G->request_real : 0;
  uint32_t nofooter = 0;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    dg_proc_t *P = &D->procs[i];
    ncs_dg_proc_t *p = &G->procs[i];
    if (p->unreadable || p->excluded) continue; /* nothing is known of it, its death included */
    int64_t newest = 0;
    for (uint32_t j = 0; j < G->nprocs; j++)
      if (j != i && G->procs[j].snap_real > newest) newest = G->procs[j].snap_real;
    char d[32];
    /* the newest clean end of another process (a trace footer, a flight file marked exited) */
    int64_t clean_after = 0;
    for (uint32_t j = 0; j < G->nprocs; j++) {
      const ncs_dg_proc_t *q = &G->procs[j];
      int clean = dg_proc_clean(D, (int)j);
      if (j != i && clean && q->snap_real > clean_after) clean_after = q->snap_real;
    }
    if (p->source == NCS_DG_SRC_TRACE && !p->footer) {
      /* A living writer adds a CLOCK pair every second: a trace that stops well before the
       * others, or while another process went on to end cleanly, belongs to a dead process.
       * Traces that all stop together without footers: the job was stopped as a whole (or is
       * still running), which is no one process's death. */
      int64_t gap = newest - p->snap_real;
      /* ... unless the others' records prove it lived on: a peer completed, later than a CLOCK
       * pair's second after its last record, an operation it had to take part in. Then its
       * records are missing (cut short, lost), not its life; what it did at its end is unknown
       * (unended_procs, and the verdicts about missing records) */
      int64_t alive = alive_until(D, i);
      if (alive > p->snap_real + 1000000000ll) {
        ncs_fmt_ns(d, sizeof d, (double)(alive - p->snap_real));
        dg_note(D, "%s: it was alive %s after its recording ends (a peer completed an AllReduce, AllGather or "
                "ReduceScatter it had to take part in): its records of that time are missing, and it is not "
                "called dead", p->name, d);
        continue;
      }
      if (G->nprocs > 1 && (gap > NCS_DG_DEAD_NS || clean_after - p->snap_real > 1500000000ll)) {
        p->dead = 1;
        ncs_fmt_ns(d, sizeof d, (double)gap);
        snprintf(p->dead_why, sizeof p->dead_why,
                 "its trace has no footer%s: the process was killed or crashed; it stopped %s before "
                 "the other processes",
                 p->damage == NCS_DAMAGE_TRUNCATED ? " (cut short)" : "", d);
      } else if (!P->after_cut && !clean_after) { /* --to: one cut there simply goes on; one
                                                     * that stops while another ended cleanly
                                                     * is judged by unended_procs */
        nofooter++;
      }
    } else if (p->source == NCS_DG_SRC_LIVE && P->is_flight && P->fi.state == NCS_FS_RUNNING) {
      int64_t hb = p->heartbeat_real ? p->heartbeat_real : p->snap_real;
      int64_t gap = newest - hb;
      if (G->nprocs > 1 && (gap > NCS_DG_DEAD_NS || clean_after - hb > 1000000000ll)) {
        p->dead = 1;
        ncs_fmt_ns(d, sizeof d, (double)gap);
        snprintf(p->dead_why, sizeof p->dead_why,
                 "its live file says running, but its last heartbeat is %s older than the other "
                 "processes' newest: the process died (kill -9, crash)", d);
      } else if (G->incident && trig && hb < trig - 500000000ll) {
        p->dead = 1;
        ncs_fmt_ns(d, sizeof d, (double)trig - hb);
        snprintf(p->dead_why, sizeof p->dead_why,
                 "it did not answer the incident's dump request; its live file says running, with "
                 "its last heartbeat %s before the request: the process died (kill -9, crash)", d);
      }
    }
  }
  if (nofooter)
    dg_note(D, "%u trace%s without footer stop%s with the others: the job was stopped as a whole, or is "
            "still running", nofooter, nofooter == 1 ? "" : "s", nofooter == 1 ? "s" : "");
}

/* ------------------------------------------------------------------ ordering and public API */

static int prio(const ncs_dg_t *G, const ncs_dg_verdict_t *v) {
  switch (v->kind) {
  case NCS_DG_V_DEAD: return 0;
  case NCS_DG_V_MISMATCH:
    if (v->comm >= 0 && G->comms[v->comm].has_stuck && !strcmp(v->func, G->comms[v->comm].stuck_func) &&
        v->seq == G->comms[v->comm].stuck_seq)
      return 1;
    return 4;
  case NCS_DG_V_NOT_ENTERED: return 2;
  case NCS_DG_V_STUCK_INSIDE: return 3;
  case NCS_DG_V_CANNOT_TELL: return 5;
  default: return 6;
  }
}

static const ncs_dg_t *sort_ctx;
static int by_prio(const void *a, const void *b) {
  const ncs_dg_verdict_t *x = a, *y = b;
  int p = prio(sort_ctx, x), q = prio(sort_ctx, y);
  if (p != q) return p - q;
  if (x->comm != y->comm) return x->comm - y->comm;
  return x->rank - y->rank;
}

/* a dead process holding no rank that a verdict names still gets a verdict */
static void dead_procs(dg_t *D) {
  ncs_dg_t *G = &D->pub;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    if (!G->procs[i].dead) continue;
    int named = 0;
    for (uint32_t k = 0; k < G->nverdicts; k++)
      if (G->verdicts[k].proc == (int)i && G->verdicts[k].kind == NCS_DG_V_DEAD) named = 1;
    if (named) continue;
    ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_DEAD, -1);
    v->proc = (int)i;
    v->where = NCS_DG_W_DEAD;
    char rl[NCS_DG_LINE] = "";
    size_t len = 0;
    for (uint32_t g = 0; g < D->ncranks && len < sizeof rl - 40; g++) {
      const dg_crank_t *cr = D->cranks[g];
      if (cr->proc != (int)i) continue;
      /* --comm: a death is reported whatever the filter; it names a judged communicator first */
      if (v->comm < 0 || (!G->comms[v->comm].judged && G->comms[cr->comm].judged))
        v->comm = (int)cr->comm, v->rank = cr->rank;
      len += (size_t)snprintf(rl + len, sizeof rl - len, "%srank %d of c%u " NCS_COMM_ID_FMT, len ? ", " : "",
                              cr->rank, (unsigned)cr->comm, D->comms[cr->comm].comm_id);
    }
    snprintf(v->summary, sizeof v->summary, "process %s-%" PRIu64 " died%s%s", G->procs[i].host,
             G->procs[i].pid, rl[0] ? " holding " : "", rl);
    dg_ev_line(v, "%s", G->procs[i].dead_why);
    if (v->comm >= 0 && G->comms[v->comm].has_stuck)
      dg_ev_line(v, "its communicator is stuck in %s", G->comms[v->comm].stuck_func);
    if (G->procs[i].last_event_real) {
      char a[80];
      dg_ago_str(D, a, sizeof a, G->procs[i].last_event_real);
      dg_ev_line(v, "last event of the process %s", a);
    }
  }
}

/* A trace without a footer (the process was killed, or still runs) whose last NCCL event is long
 * before its last sign of life, with nothing of it open in NCCL: no verdict names it, yet "nothing
 * stuck" would be a guess. It may be stuck outside NCCL or in work NCCL reports no event for
 * (NCCL 2.30's Broadcast has no Coll), or it was stopped while it computed. Seen on 2xH200 with
 * NCCL 2.30.7: an example hung for 100 s and the trace looked complete. Only when nothing else
 * was found: a hang or a death already rules out the all-clear. */
#define NCS_DG_IDLE_NS 10000000000ll
static void idle_unended(dg_t *D) {
  ncs_dg_t *G = &D->pub;
  for (uint32_t k = 0; k < G->nverdicts; k++)
    if (G->verdicts[k].kind != NCS_DG_V_NOTHING_STUCK) return;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    const ncs_dg_proc_t *p = &G->procs[i];
    if (p->footer || p->dead || p->unreadable || p->excluded || p->flight_state || !p->ranks) continue;
    if (p->open_ops || p->open_children || p->open_api || !p->last_event_real) continue;
    if (p->snap_real - p->last_event_real < NCS_DG_IDLE_NS) continue;
    if (D->procs[i].events_after_cut) continue; /* --to: it called NCCL again after the cut */
    int comm = -1, rank = -1;
    for (uint32_t g = 0; g < D->ncranks && comm < 0; g++)
      if (D->cranks[g]->proc == (int)i && G->comms[D->cranks[g]->comm].judged)
        comm = (int)D->cranks[g]->comm, rank = D->cranks[g]->rank;
    if (comm < 0) continue; /* --comm: it holds no rank of a judged communicator */
    ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_CANNOT_TELL, comm);
    v->proc = (int)i, v->rank = rank;
    char idle[32], a[80];
    ncs_fmt_ns(idle, sizeof idle, (double)(p->snap_real - p->last_event_real));
    snprintf(v->summary, sizeof v->summary,
             "cannot tell whether process %s-%" PRIu64 " is healthy: its recording did not end cleanly "
             "and it made no NCCL call in its last %s", p->host, p->pid, idle);
    dg_ev_line(v, "nothing of it is open in NCCL: no operation, kernel, proxy op or API call");
    dg_ago_str(D, a, sizeof a, p->last_event_real);
    dg_ev_line(v, "its last NCCL event was %s; its recording goes on to %s", a,
               p->snap_real >= G->ref_real ? "the end" : "earlier");
    dg_ev_line(v, "it may be stuck outside NCCL, in work NCCL reports no event for (NCCL 2.30's "
                  "Broadcast has no Coll), or it was stopped while it computed");
  }
}

/* A recording that did not end cleanly is never part of an all-clear (docs/diagnose.md, "Cannot
 * tell"), when nothing else was found and the death rules above did not name it:
 *   - a trace without footer (or a live flight file that says running) while another process
 *     ended cleanly: it was killed or crashed (or still runs), and what it did after its last
 *     record is unknown: a crash moments before the others ended leaves no gap to judge by;
 *   - a trace without footer, when no process ended cleanly, that stops with operations in
 *     flight: the job was killed or crashed while they ran (or still runs); whether they would
 *     have completed is unknown.
 * A job stopped as a whole with nothing in flight keeps its note (and idle_unended's rule). */
static int found_problem(const ncs_dg_t *G) {
  for (uint32_t k = 0; k < G->nverdicts; k++) {
    const ncs_dg_verdict_t *v = &G->verdicts[k];
    if (v->kind != NCS_DG_V_NOTHING_STUCK && (v->kind != NCS_DG_V_CANNOT_TELL || v->waiting)) return 1;
  }
  return 0;
}

static void unended_procs(dg_t *D) {
  ncs_dg_t *G = &D->pub;
  if (found_problem(G)) return;
  int clean_any = -1;
  for (uint32_t j = 0; j < G->nprocs; j++)
    if (!G->procs[j].unreadable && !G->procs[j].excluded && dg_proc_clean(D, (int)j) &&
        (clean_any < 0 || G->procs[j].snap_real > G->procs[clean_any].snap_real))
      clean_any = (int)j;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    const ncs_dg_proc_t *p = &G->procs[i];
    const dg_proc_t *P = &D->procs[i];
    if (p->unreadable || p->excluded || p->dead || dg_proc_clean(D, (int)i) || P->after_cut) continue;
    int named = 0;
    for (uint32_t k = 0; k < G->nverdicts; k++) named |= G->verdicts[k].proc == (int)i;
    if (named) continue; /* idle_unended's verdict says it already */
    int trace = p->source == NCS_DG_SRC_TRACE;
    int live = p->source == NCS_DG_SRC_LIVE && P->is_flight && P->fi.state == NCS_FS_RUNNING;
    if (!trace && !live) continue;
    if (clean_any < 0 && (!trace || !p->open_ops)) continue;
    int comm = -1, rank = -1;
    for (uint32_t g = 0; g < D->ncranks && comm < 0; g++)
      if (D->cranks[g]->proc == (int)i && G->comms[D->cranks[g]->comm].judged)
        comm = (int)D->cranks[g]->comm, rank = D->cranks[g]->rank;
    int holds = 0;
    for (uint32_t g = 0; g < D->ncranks; g++) holds |= D->cranks[g]->proc == (int)i;
    if (holds && comm < 0) continue; /* --comm: it holds no rank of a judged communicator */
    ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_CANNOT_TELL, comm);
    v->proc = (int)i, v->rank = rank;
    char a[80], d[32];
    const char *how = trace ? (p->damage == NCS_DAMAGE_TRUNCATED ? "its trace has no footer and is cut short"
                                                                 : "its trace has no footer")
                            : "its live flight file says running";
    if (clean_any >= 0) {
      const ncs_dg_proc_t *q = &G->procs[clean_any];
      ncs_fmt_ns(d, sizeof d, (double)(q->snap_real - p->snap_real));
      snprintf(v->summary, sizeof v->summary,
               "cannot tell what process %s-%" PRIu64 " did at its end: %s while %s ended cleanly: it was "
               "killed or crashed, or still runs", p->host, p->pid, how, q->name);
      dg_ev_line(v, "%s, while %s-%" PRIu64 " ended cleanly %s %s", how, q->host, q->pid, d,
                 q->snap_real >= p->snap_real ? "later" : "earlier");
    } else {
      snprintf(v->summary, sizeof v->summary,
               "cannot tell whether process %s-%" PRIu64 " was stuck: no recording ended cleanly, and its "
               "trace stops with %u operation%s in flight", p->host, p->pid, p->open_ops,
               p->open_ops == 1 ? "" : "s");
      dg_ev_line(v, "%s, and no process of the job ended cleanly: the job was killed or crashed while "
                    "they ran, or it still runs", how);
    }
    dg_ago_str(D, a, sizeof a, p->snap_real);
    dg_ev_line(v, "its recording ends %s: what it did after that is unknown", a);

    if (p->ranks)
      dg_ev_line(v, "it holds %u rank%s; %u operation%s open at its end", p->ranks, p->ranks == 1 ? "" : "s",
                 p->open_ops, p->open_ops == 1 ? "" : "s");
    else
      dg_ev_line(v, "it recorded no rank of any communicator");
  }
}

/* What the plugin's limits left out of a recording (docs/config.md): operations of communicators
 * beyond NCCLSCOPE_MAX_COMMS (recorded without their communicator, so not judged), operations
 * whose completion the writer could not follow (NCCLSCOPE_TRACK_MAX). "Nothing stuck" would be a
 * guess about them: a CANNOT TELL per file, when nothing else was found. */
static void limits_verdicts(dg_t *D) {
  ncs_dg_t *G = &D->pub;
  if (found_problem(G)) return;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    const ncs_dg_proc_t *p = &G->procs[i];
    if (p->unreadable || p->excluded) continue;
    const ncs_job_cov_t *c = &D->job->procs[i].cov;
    if (!c->comms_untracked && !c->no_comm_ops && !c->evicted_ops) continue;
    ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_CANNOT_TELL, -1);
    v->proc = (int)i;
    if (c->comms_untracked || c->no_comm_ops) {
      snprintf(v->summary, sizeof v->summary,
               "cannot tell whether the operations of process %s-%" PRIu64 " completed: %" PRIu64
               " communicator%s not tracked (NCCLSCOPE_MAX_COMMS=%u)", p->host, p->pid, c->comms_untracked,
               c->comms_untracked == 1 ? " was" : "s were", c->max_comms);
      dg_ev_line(v, "%" PRIu64 " operations were recorded without their communicator: their ranks are "
                    "not in the tables, and whether they completed is not judged", c->no_comm_ops);
      for (uint32_t k = 0; k < G->ncomms; k++)
        if (G->comms[k].judged && G->comms[k].ranks_present < G->comms[k].nranks)
          dg_ev_line(v, "communicator " NCS_COMM_ID_FMT ": %d of %d ranks recorded", G->comms[k].comm_id,
                     G->comms[k].ranks_present, G->comms[k].nranks);
    } else {
      snprintf(v->summary, sizeof v->summary,
               "cannot tell whether %" PRIu64 " operations of process %s-%" PRIu64 " completed: the plugin's "
               "table of open events was full (NCCLSCOPE_TRACK_MAX=%u)", c->evicted_ops, p->host, p->pid,
               c->track_max);
    }
    if (c->evicted_ops && (c->comms_untracked || c->no_comm_ops))
      dg_ev_line(v, "and the plugin's table of open events was full (NCCLSCOPE_TRACK_MAX=%u): %" PRIu64
                    " operations have no completion", c->track_max, c->evicted_ops);
  }
}

/* a recording that could not be read: what its process did is unknown (file-level: its
 * communicators are unknown too, so the verdict names none) */
static void unreadable_verdict(dg_t *D, int i) {
  const ncs_dg_proc_t *p = &D->pub.procs[i];
  ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_CANNOT_TELL, -1);
  v->proc = i;
  snprintf(v->summary, sizeof v->summary,
           "cannot tell what the process of %s did: the file could not be read (%s)", p->name,
           p->damage_msg);
  dg_ev_line(v, "the ranks it held, and whether they are stuck, are unknown; the other recordings "
                "are diagnosed without it");
}

/* a recording the job model left out: a copy of another, or another run's */
static int excluded(dg_t *D, uint32_t i) {
  const ncs_job_proc_t *jp = &D->job->procs[i];
  ncs_dg_proc_t *p = &D->pub.procs[i];
  if (!jp->excluded) return 0;
  p->excluded = jp->excluded;
  dg_cpy(p->host, sizeof p->host, jp->host), p->pid = jp->pid;
  if (jp->excluded == NCS_JX_DUPLICATE)
    dg_cpy(p->same_as, sizeof p->same_as, D->pub.procs[jp->same_as].name);
  return 1;
}

/* the job model of the chosen recordings: files, members, clocks */
static int open_job(dg_t *D, const ncs_dg_opts_t *o, char *err, size_t errlen) {
  ncs_dg_t *G = &D->pub;
  char **paths = ncs_xcalloc(G->nprocs, sizeof *paths);
  for (uint32_t i = 0; i < G->nprocs; i++) paths[i] = G->procs[i].file;
  ncs_job_opts_t jo = {.job = o->job, .why = o->why};
  D->job = ncs_job_open_files(paths, G->nprocs, &jo, err, errlen);
  free(paths);
  if (!D->job) return -1;
  const ncs_job_t *j = D->job;
  if (j->duplicates)
    dg_note(D, "%u recording%s repeat%s another (the same host, pid and start) and %s read once",
            j->duplicates, j->duplicates == 1 ? "" : "s", j->duplicates == 1 ? "s" : "",
            j->duplicates == 1 ? "is" : "are");
  if (j->other_job)
    dg_note(D, "the recordings hold %u runs (recordings that never held ranks of one communicator together): "
            "this is run %u; %u recording%s of the others left out (choose with --run N)", j->njobs,
            j->job, j->other_job, j->other_job == 1 ? "" : "s");
  dg_comms(D);
  return 0;
}

/* ------------------------------------------------------------------ filters */

static int listed(const ncs_job_filter_t *f, int r) {
  if (!f->ranks) return 1;
  for (uint32_t k = 0; k < f->nranks; k++)
    if (f->ranks[k] == r) return 1;
  return 0;
}

int dg_comm_judged(const dg_t *D, uint32_t c) {
  return !D->pub.filter.comm_set || D->comms[c].comm_id == D->pub.filter.comm_id;
}

/* --range, --tag: the time span of the operations they select (docs/diagnose.md, "Filters").
 * The job model selects them as for report and export (an instance whole, when one of its
 * operations was called inside a selected range or carries a listed tag); the span runs from the
 * earliest arrival among them to the latest completion, and is open (judged at the end) when one
 * of them never completed, an instance lacks a rank, a send lacks its receive, or a selected range
 * never ended. */
typedef struct {
  const ncs_job_t *j;
  int64_t first, last;
  uint64_t ops, open;
} span_t;

static void span_op(span_t *s, const ncs_op_t *op) {
  s->ops++;
  int64_t a = op->arrival ? op->arrival : op->start;
  if (a && (!s->first || a < s->first)) s->first = a;
  int64_t e = op->end > op->stop ? op->end : op->stop;
  if (!op->complete || !e)
    s->open++;
  else if (e > s->last)
    s->last = e;
}

static void span_inst(void *arg, const ncs_inst_t *in, const ncs_op_t *ops) {
  span_t *s = arg;
  for (uint32_t k = 0; k < in->nops; k++) span_op(s, &ops[k]);
  if (in->comm < s->j->ncomms && (int32_t)in->distinct < s->j->comms[in->comm].nranks) s->open++;
}

static void span_p2p(void *arg, const ncs_op_t *op, const ncs_op_t *partner) {
  span_t *s = arg;
  span_op(s, op);
  if (partner)
    span_op(s, partner);
  else
    s->open++;
}

static int sel_window(dg_t *D, ncs_job_filter_t *f, char *err, size_t errlen) {
  ncs_dg_t *G = &D->pub;
  const char *what = f->rsel && f->tsel ? "--range and --tag" : f->rsel ? "--range" : "--tag";
  if (f->window) {
    snprintf(err, errlen, "with %s the time window is the span of the operations selected: give %s without "
                          "--from and --to",
             what, f->rsel && f->tsel ? "them" : "it");
    return -1;
  }
  ncs_job_filter_t sf = {.comm_set = f->comm_set, .comm_id = f->comm_id, .comm_by_index = f->comm_by_index,
                         .comm_index = f->comm_index, .rsel = f->rsel, .nrsel = f->nrsel,
                         .tsel = f->tsel, .ntsel = f->ntsel};
  char **paths = ncs_xcalloc(G->nprocs, sizeof *paths);
  for (uint32_t i = 0; i < G->nprocs; i++) paths[i] = G->procs[i].file;
  ncs_job_opts_t jo = {.job = D->job_choice, .filter = &sf};
  ncs_job_t *j = ncs_job_open_files(paths, G->nprocs, &jo, err, errlen);
  free(paths);
  if (!j) return -1;
  span_t s = {.j = j};
  ncs_job_sink_t sink = {span_inst, span_p2p};
  ncs_job_stream(j, &sink, &s);
  if (j->filter.notes) dg_note(D, "%s: %s", what, j->filter.notes);
  G->sel_ops = s.ops, G->sel_open = s.open;
  int range_open = j->sel.end_unknown > 0;
  int64_t t0 = j->t_first;
  ncs_job_free(j);
  if (!s.ops || !s.first) {
    char ft[NCS_DG_LINE];
    ncs_job_filter_text(&sf, ft, sizeof ft);
    snprintf(err, errlen, "%s: no NCCL operation of the recordings was selected (%s), so there is nothing to "
                          "diagnose over them",
             what, ft);
    return -1;
  }
  f->window = 1;
  f->from_ns = s.first > t0 ? s.first - t0 : 0;
  f->to_ns = INT64_MAX;
  G->sel_open_why = s.open ? 1 : range_open ? 2 : 0;
  if (G->sel_open_why) return 0;
  for (uint32_t i = 0; i < G->nprocs; i++)
    if (G->procs[i].source != NCS_DG_SRC_TRACE && !D->job->procs[i].excluded) {
      G->sel_open_why = 3; /* a flight recording: no earlier state to rebuild */
      return 0;
    }
  f->to_ns = s.last - t0 + NCS_DG_SEL_MARGIN_NS;
  return 0;
}

/* The filter against the recordings (docs/diagnose.md, "Filters"): -1 with err for what does
 * not fit them (a usage error); else the cut (--to) and the start of the mismatch checks (--from)
 * in job time, and the cut in each file's clock. */
static int filter_setup(dg_t *D, const ncs_job_filter_t *f, char *err, size_t errlen) {
  ncs_dg_t *G = &D->pub;
  if (!f || !ncs_job_filter_active(f)) return 0;
  G->filter = *f;
  if (f->ranks) {
    G->filter_ranks = ncs_xcalloc(f->nranks ? f->nranks : 1, sizeof *G->filter_ranks);
    memcpy(G->filter_ranks, f->ranks, f->nranks * sizeof *f->ranks);
    G->filter.ranks = G->filter_ranks;
  }
  /* --comm by label or index: the model's order, which D->comms keeps */
  if (ncs_job_filter_comm(&G->filter, D->job->comms, D->job->ncomms, err, errlen) != 0) return -1;
  if ((f->rsel || f->tsel) && sel_window(D, &G->filter, err, errlen) != 0) return -1;
  f = &G->filter;
  ncs_job_filter_text(&G->filter, G->filter_text, sizeof G->filter_text);
  char ids[160] = "";
  size_t n = 0;
  for (uint32_t c = 0; c < D->ncomms && n < sizeof ids - 40; c++)
    n += (size_t)snprintf(ids + n, sizeof ids - n, "%s" NCS_COMM_ID_FMT " (%d ranks)", c ? ", " : "",
                          D->comms[c].comm_id, D->comms[c].nranks);
  if (D->ncomms > 0 && n >= sizeof ids - 40) snprintf(ids + n, sizeof ids - n, ", ...");
  if (f->comm_set) {
    uint32_t c = 0;
    while (c < D->ncomms && D->comms[c].comm_id != f->comm_id) c++;
    if (c == D->ncomms) {
      snprintf(err, errlen, "--comm " NCS_COMM_ID_FMT ": no such communicator in the recordings (%s)", f->comm_id,
               D->ncomms ? ids : "they hold none");
      return -1;
    }
  }
  if (f->ranks) {
    int any = 0;
    for (uint32_t c = 0; c < D->ncomms; c++)
      for (uint32_t k = 0; k < f->nranks && dg_comm_judged(D, c); k++)
        any |= f->ranks[k] < D->comms[c].nranks;
    if (!any) {
      snprintf(err, errlen, "--rank: no communicator %shas such a rank (%s)", f->comm_set ? "judged " : "",
               D->ncomms ? ids : "the recordings hold none");
      return -1;
    }
  }
  if (!f->window) return 0;
  if (f->from_ns > 0) D->from_set = 1, D->from_job = D->job->t_first + f->from_ns;
  if (f->to_ns == INT64_MAX) return 0;
  for (uint32_t i = 0; i < G->nprocs; i++)
    if (G->procs[i].source != NCS_DG_SRC_TRACE && !D->job->procs[i].excluded) {
      snprintf(err, errlen,
               "--to judges the job as it was at an earlier time, which needs full traces (*.nstrace): "
               "%s is a flight recording, which keeps only its last operations, so the state at an "
               "earlier time is not in it (diagnose it without --to; --comm, --rank and --from apply)",
               G->procs[i].name);
      return -1;
    }
  D->cut = 1;
  D->cut_job = D->job->t_first + f->to_ns;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    int64_t m = D->cut_job - D->job->procs[i].job_off;
    D->procs[i].cut_mono = m > 0 ? (uint64_t)m : 0;
    if (!G->cut_real && !D->job->procs[i].excluded && D->job->procs[i].readable)
      G->cut_real = (int64_t)(D->procs[i].cut_mono + (uint64_t)D->job->procs[i].clk_off);
  }
  return 0;
}

/* --to: the recordings read whole, to tell which operations open at the cut completed later */
static dg_t *read_whole(const dg_t *D) {
  const ncs_dg_t *G = &D->pub;
  dg_t *F = ncs_xcalloc(1, sizeof *F);
  F->pub.nprocs = G->nprocs;
  F->pub.procs = ncs_xcalloc(G->nprocs, sizeof *F->pub.procs);
  memcpy(F->pub.procs, G->procs, G->nprocs * sizeof *G->procs);
  F->job = D->job;
  dg_comms(F);
  F->procs = ncs_xcalloc(G->nprocs, sizeof *F->procs);
  for (uint32_t i = 0; i < G->nprocs; i++) {
    F->procs[i].pub = &F->pub.procs[i];
    if (!G->procs[i].unreadable && !G->procs[i].excluded) dg_read_file(F, (int)i);
  }
  return F;
}

static void free_whole(dg_t *F) {
  if (!F) return;
  F->job = NULL; /* D's */
  ncs_dg_free(&F->pub);
}

/* --to: operations open at the cut, without progress for longer than a hang needs, that the
 * recording shows completing later */
typedef struct {
  ncs_dg_t *G;
  const dg_proc_t *P;
  const dg_crank_t *cr;
  uint64_t comm_id;
} later_ctx_t;

static void later_count(dg_op_t *op, void *arg) {
  later_ctx_t *x = arg;
  if (!op->later || x->P->snap_mono <= op->progress) return;
  int64_t idle = (int64_t)(x->P->snap_mono - op->progress);
  if (idle <= NCS_DG_STUCK_NS) return;
  x->G->later_done++;
  if (idle <= x->G->later_idle_max) return;
  x->G->later_idle_max = idle;
  char d[32], nm[64];
  ncs_fmt_ns(d, sizeof d, (double)idle);
  if (op->seq >= 0)
    snprintf(nm, sizeof nm, "%s #%" PRId64, op->func ? op->func : "?", op->seq);
  else
    snprintf(nm, sizeof nm, "a %s", op->func ? op->func : "?");
  snprintf(x->G->later_example, sizeof x->G->later_example, "rank %d's %s of " NCS_COMM_ID_FMT ", %s",
           x->cr->rank, nm, x->comm_id, d);
}

static void later_stats(dg_t *D) {
  for (uint32_t g = 0; g < D->ncranks; g++) {
    dg_crank_t *cr = D->cranks[g];
    if (!dg_comm_judged(D, cr->comm)) continue;
    later_ctx_t x = {&D->pub, &D->procs[cr->proc], cr, D->comms[cr->comm].comm_id};
    dg_for_each_op(cr, later_count, &x);
  }
}

/* --rank: the ranks a verdict names outside the list; the rows each communicator leaves out */
static void rank_filter(dg_t *D) {
  ncs_dg_t *G = &D->pub;
  if (!G->filter.ranks) return;
  for (uint32_t k = 0; k < G->nverdicts; k++) {
    ncs_dg_verdict_t *v = &G->verdicts[k];
    if (v->comm < 0 || v->kind == NCS_DG_V_NOTHING_STUCK) continue;
    int named[17], nn = 0;
    if (v->rank >= 0) named[nn++] = v->rank;
    for (int q = 0; q < v->nranks && nn < 17; q++) named[nn++] = v->ranks[q];
    for (int q = 0; q < nn; q++) {
      int dup = 0;
      for (int z = 0; z < v->noutside; z++) dup |= v->outside[z] == named[q];
      if (!dup && !listed(&G->filter, named[q]) && v->noutside < 16) v->outside[v->noutside++] = named[q];
    }
    qsort(v->outside, (size_t)v->noutside, sizeof v->outside[0], dg_by_int);
  }
  for (uint32_t c = 0; c < G->ncomms; c++)
    for (int r = 0; r < G->comms[c].nranks; r++) G->comms[c].ranks_left_out += !listed(&G->filter, r);
}

/* nothing found in what was judged */
static void nothing_stuck(dg_t *D) {
  ncs_dg_t *G = &D->pub;
  ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_NOTHING_STUCK, -1);
  uint64_t done = 0, flight = 0;
  for (uint32_t c = 0; c < G->ncomms; c++)
    if (G->comms[c].judged) done += G->comms[c].ops_completed_all, flight += G->comms[c].in_flight;
  const char *cutname = D->pub.filter.rsel || D->pub.filter.tsel ? "the window end" : "the --to time";
  const char *at = D->cut ? (D->pub.filter.rsel || D->pub.filter.tsel ? " at the window end" : " at the --to time") : "";
  if (flight)
    snprintf(v->summary, sizeof v->summary,
             "nothing stuck%s: no open collective without progress (%" PRIu64 " in flight, progressing); "
             "%" PRIu64 " collectives completed on every rank", at, flight, done);
  else
    snprintf(v->summary, sizeof v->summary,
             "nothing stuck%s: no open collective; %" PRIu64 " collectives completed on every rank", at, done);
  if (G->later_done)
    dg_ev_line(v, "%u operation%s open at %s had made no progress for over %d ms (longest: %s), "
                  "but completed later in the recording: in progress, not stuck",
               G->later_done, G->later_done == 1 ? "" : "s", cutname, (int)(NCS_DG_STUCK_NS / 1000000), G->later_example);
  /* --to: the losses by the cut; later ones could hide only completions, and every operation
   * open at the cut completed later or would have been judged */
  uint32_t nlosses = 0;
  for (uint32_t k = 0; k < D->job->nlosses; k++) {
    const ncs_job_loss_t *x = &D->job->losses[k];
    nlosses += !D->cut || (x->proc < G->nprocs && x->from_ns <= D->procs[x->proc].cut_mono);
  }
  if (nlosses)
    dg_ev_line(v, "the recordings lost records (%u loss window%s%s; see dump --stats): every rank's "
                  "newest operation completed%s, or its process ended cleanly, so none can hide "
                  "an operation still open", nlosses, nlosses == 1 ? "" : "s", D->cut ? (D->pub.filter.rsel || D->pub.filter.tsel ? " by the window end" : " by the --to time") : "",
               D->cut ? " (or was in progress, completing later)" : "");
  for (uint32_t c = 0; c < G->ncomms; c++)
    if (G->comms[c].judged)
      dg_ev_line(v, "communicator c%u " NCS_COMM_ID_FMT "%s%s%s: %d of %d ranks recorded, %" PRIu64
                    " collectives completed on every rank",
                 c, G->comms[c].comm_id, G->comms[c].name[0] ? " \"" : "", G->comms[c].name,
                 G->comms[c].name[0] ? "\"" : "", G->comms[c].ranks_present,
                 G->comms[c].nranks, G->comms[c].ops_completed_all);
}

static int usage_fail(ncs_dg_t *G, const ncs_dg_opts_t *o) {
  if (o->usage) *o->usage = 1;
  ncs_dg_free(G);
  return -1;
}

int ncs_diagnose(const char *path, const ncs_dg_opts_t *opts, ncs_dg_t **out, char *err, size_t errlen) {
  static const ncs_dg_opts_t defaults = {0};
  if (!opts) opts = &defaults;
  if (opts->usage) *opts->usage = 0;
  *out = NULL;
  dg_t *D = ncs_xcalloc(1, sizeof *D);
  ncs_dg_t *G = &D->pub;
  dg_cpy(G->path, sizeof G->path, path);
  if (dg_choose_files(D, path, opts, err, errlen) != 0) {
    ncs_dg_free(G);
    return -1;
  }
  if (open_job(D, opts, err, errlen) != 0) {
    ncs_dg_free(G);
    return -1;
  }
  if (ncs_job_input(D->job) == NCS_JOB_IN_NONE) { /* exit status 3, as for every verb */
    const ncs_job_proc_t *p = &D->job->procs[0];
    snprintf(err, errlen, "no recording could be read (%s: %s)", p->path,
             p->empty ? "empty" : p->damage_msg[0] ? p->damage_msg : "no segment");
    if (opts->why) *opts->why = NCS_JOB_ERR_NO_INPUT;
    ncs_dg_free(G);
    return -1;
  }
  D->procs = ncs_xcalloc(G->nprocs, sizeof *D->procs);
  D->job_choice = opts->job;
  if (filter_setup(D, opts->filter, err, errlen) != 0) return usage_fail(G, opts);
  for (uint32_t i = 0; i < G->nprocs; i++) {
    ncs_dg_proc_t *p = &G->procs[i];
    D->procs[i].pub = p;
    const ncs_job_proc_t *jp = &D->job->procs[i];
    if (excluded(D, i)) continue;
    if (!jp->readable || !jp->nsegs) { /* diagnose the readable ranks, and say which are not */
      p->unreadable = 1;
      dg_cpy(p->damage_msg, sizeof p->damage_msg, jp->readable ? "no segment could be read" : jp->damage_msg);
      if (jp->readable && jp->damage_msg[0])
        snprintf(p->damage_msg + strlen(p->damage_msg), sizeof p->damage_msg - strlen(p->damage_msg),
                 ": %s", jp->damage_msg);
      unreadable_verdict(D, (int)i);
      continue;
    }
    dg_read_file(D, (int)i);
    if (p->damage == NCS_DAMAGE_CORRUPT)
      dg_note(D, "%s is damaged: %s (its readable chunks were read)", p->name, p->damage_msg);
    else if (p->damage == NCS_DAMAGE_TRUNCATED)
      dg_note(D, "%s is truncated: %s (everything before it was read)", p->name, p->damage_msg);
    if (p->damaged_ops)
      dg_note(D, "%s: %" PRIu64 " operations name strings or communicators lost with damage: not judged",
              p->name, p->damaged_ops);
    if (p->events_unkept)
      dg_note(D, "%s: %" PRIu64 " open events not kept (more than %u open)", p->name, p->events_unkept, DG_EV_MAX);
  }
  if (D->cut) { /* --to: nothing after the cut, the cut changes nothing; else read them whole */
    int after = 0;
    for (uint32_t i = 0; i < G->nprocs; i++) after |= D->procs[i].after_cut;
    if (after) {
      G->cut = 1;
      D->full = read_whole(D);
    } else {
      G->cut_past_end = 1, D->cut = 0;
    }
  }
  procs_prepare(D);
  dg_settle(D);
  free_whole(D->full);
  D->full = NULL;
  for (uint32_t g = 0; g < D->ncranks; g++) {
    const dg_crank_t *cr = D->cranks[g];
    G->procs[cr->proc].ranks++;
    last_t l = dg_rank_last(D, D->cranks[g]);
    G->procs[cr->proc].open_ops += l.pending;
  }
  for (uint32_t i = 0; i < G->nprocs; i++)
    for (uint32_t k = 0; k < D->procs[i].nopen; k++) {
      const dg_ev_t *v = &D->procs[i].open[k];
      if (v->type == NCS_T_GROUP_API || v->type == NCS_T_COLL_API || v->type == NCS_T_P2P_API)
        G->procs[i].open_api++;
      else
        G->procs[i].open_children++;
    }
  G->ncomms = D->ncomms;
  G->comms = ncs_xcalloc(D->ncomms, sizeof *G->comms);
  for (uint32_t c = 0; c < D->ncomms; c++) {
    ncs_dg_comm_t *C = &G->comms[c];
    C->judged = dg_comm_judged(D, c);
    if (C->judged) {
      dg_analyze_comm(D, c);
      continue;
    }
    G->comms_not_judged++; /* --comm: named, nothing else */
    C->comm_id = D->comms[c].comm_id, C->nranks = D->comms[c].nranks;
    dg_cpy(C->name, sizeof C->name, D->comms[c].name);
    C->stuck_seq = -1, C->stuck_rank = C->stuck_peer = -1;
  }
  if (G->cut) later_stats(D);
  dg_cupti(D);
  dead_procs(D);
  idle_unended(D);
  unended_procs(D);
  limits_verdicts(D);
  for (uint32_t k = 0; k < G->nverdicts; k++) {
    const ncs_dg_verdict_t *v = &G->verdicts[k];
    if (v->kind == NCS_DG_V_CANNOT_TELL) G->cannot_tell = 1;
    if (v->kind != NCS_DG_V_NOTHING_STUCK && (v->kind != NCS_DG_V_CANNOT_TELL || v->waiting))
      G->problem = 1;
  }
  if (!G->problem && !G->cannot_tell) nothing_stuck(D);
  rank_filter(D);
  sort_ctx = G;
  if (G->nverdicts > 1) qsort(G->verdicts, G->nverdicts, sizeof *G->verdicts, by_prio);
  sort_ctx = NULL;
  *out = G;
  return 0;
}

void ncs_dg_free(ncs_dg_t *G) {
  if (!G) return;
  dg_t *D = (dg_t *)G;
  ncs_pool_free(&D->strs);
  if (D->procs)
    for (uint32_t i = 0; i < G->nprocs; i++) free(D->procs[i].open);
  free(D->procs);
  for (uint32_t g = 0; g < D->ncranks; g++) {
    free(D->cranks[g]->ring);
    free(D->cranks[g]);
  }
  free(D->cranks);
  for (uint32_t c = 0; c < D->ncomms; c++) free(D->comms[c].cranks);
  free(D->comms);
  ncs_job_free(D->job);
  if (G->comms)
    for (uint32_t c = 0; c < G->ncomms; c++) free(G->comms[c].ranks);
  free(G->comms);
  free(G->procs);
  free(G->verdicts);
  free(G->filter_ranks);
  free(D);
}

const char *ncs_dg_kind_name(int k) {
  static const char *const n[] = {"dead", "mismatch", "not_entered", "stuck_inside", "nothing_stuck",
                                  "cannot_tell"};
  return k >= 0 && k < (int)(sizeof n / sizeof n[0]) ? n[k] : "?";
}

const char *ncs_dg_where_name(int w) {
  static const char *const n[] = {"unknown", "dead", "other_op", "other_comm", "in_api", "outside", "exited"};
  return w >= 0 && w < (int)(sizeof n / sizeof n[0]) ? n[w] : "?";
}

const char *ncs_dg_state_name(int s) {
  static const char *const n[] = {"none", "waiting", "completed", "not_entered", "missing"};
  return s >= 0 && s < (int)(sizeof n / sizeof n[0]) ? n[s] : "?";
}

const char *ncs_dg_source_name(int s) {
  static const char *const n[] = {"trace", "live", "dump"};
  return s >= 0 && s < (int)(sizeof n / sizeof n[0]) ? n[s] : "?";
}
