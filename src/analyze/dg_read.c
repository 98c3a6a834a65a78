/* dg_read.c - reading one recording for `ncclscope diagnose` (dg_int.h): per (communicator,
 * rank) the last NCS_DG_RING_OPS Coll/P2p operations (entered, enqueued, completed), and the
 * events still open at the end (ProxyOp, ProxyStep with its last state, KernelCh, API calls),
 * linked to their operation. Contexts resolve through the job model's members; times map to
 * CLOCK_REALTIME with the model's clock offset of the file. */
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


/* Strings come from untrusted files: keep printable ASCII, so that every output line stays one
 * line and the JSON stays valid UTF-8. */
void dg_cpy(char *dst, size_t n, const char *src) {
  snprintf(dst, n, "%s", src ? src : "");
  for (char *c = dst; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
}

/* a string of the trace, made printable (cpy), pooled */
const char *dg_intern(dg_t *D, const char *raw) {
  if (!raw) return NULL;
  char s[NCS_STRING_MAX + 1];
  dg_cpy(s, sizeof s, raw);
  return ncs_pool_str(&D->strs, s);
}

int64_t dg_to_real(const dg_proc_t *P, uint64_t mono) {
  return mono ? (int64_t)(mono + (uint64_t)P->clk_off) : 0; /* wraps, never UB */
}

/* ------------------------------------------------------------------ comms and ranks */

void dg_comms(dg_t *D) {
  const ncs_job_t *j = D->job;
  D->ncomms = j->ncomms;
  D->comms = ncs_xcalloc(j->ncomms, sizeof *D->comms);
  for (uint32_t c = 0; c < j->ncomms; c++) {
    dg_comm_t *C = &D->comms[c];
    C->comm_id = j->comms[c].comm_id, C->nranks = j->comms[c].nranks;
    dg_cpy(C->name, sizeof C->name, j->comms[c].name);
    C->cranks = ncs_xcalloc(C->nranks > 0 ? (size_t)C->nranks : 1, sizeof *C->cranks);
  }
}

static uint32_t dg_crank_get(dg_t *D, uint32_t comm, int rank, int proc) {
  dg_comm_t *c = &D->comms[comm];
  if (c->cranks[rank]) {
    dg_crank_t *cr = D->cranks[c->cranks[rank] - 1];
    cr->proc = proc; /* the same rank again (a reload): the later recording holds it */
    return cr->gidx;
  }
  if (D->ncranks == D->capcranks) {
    D->capcranks = D->capcranks ? D->capcranks * 2 : 64;
    D->cranks = ncs_xrealloc(D->cranks, D->capcranks * sizeof *D->cranks);
  }
  dg_crank_t *cr = ncs_xcalloc(1, sizeof *cr);
  cr->comm = comm, cr->rank = rank, cr->proc = proc, cr->gidx = D->ncranks, cr->thread = -1;
  D->cranks[D->ncranks++] = cr;
  c->cranks[rank] = cr->gidx + 1;
  return cr->gidx;
}

ncs_dg_fseq_t *dg_fseq(dg_crank_t *cr, const char *func, int p2p) {
  for (uint32_t i = 0; i < cr->nf; i++)
    if (cr->fs[i].func == func && cr->fs[i].p2p == p2p) return &cr->fs[i];
  if (cr->nf == NCS_DG_MAX_FUNCS) return NULL;
  ncs_dg_fseq_t *f = &cr->fs[cr->nf++];
  f->func = func, f->p2p = p2p, f->entered = f->completed = p2p ? 0 : -1;
  return f;
}

/* slot index -> operation: ring slots first, then the overflow slots */
dg_op_t *dg_op_at(dg_crank_t *cr, uint32_t idx) {
  if (idx < NCS_DG_RING_OPS) return idx < cr->cap ? &cr->ring[idx] : NULL;
  idx -= NCS_DG_RING_OPS;
  return idx < DG_OVER ? &cr->over[idx] : NULL;
}

void dg_for_each_op(dg_crank_t *cr, void (*fn)(dg_op_t *, void *), void *arg) {
  for (uint32_t i = 0; i < cr->n; i++)
    if (cr->ring[i].id) fn(&cr->ring[i], arg);
  for (uint32_t i = 0; i < DG_OVER; i++)
    if (cr->over[i].id) fn(&cr->over[i], arg);
}

/* ------------------------------------------------------------------ reading one file */

typedef struct {
  dg_t *D;
  int proc;
  dg_proc_t *P;
  uint32_t seg;
  hmap_t opmap; /* event id -> (crank << 32) | slot, operations of this segment */
  hmap_t evmap; /* event id -> pool index, open events of this segment */
  dg_ev_t *pool;
  uint32_t npool, cappool;
  int32_t freelist;
  int32_t *ctxmap; /* comm index of this segment -> global crank + 1 */
  uint32_t nctx;
  /* children met before their operation's START (records of different threads interleave by
   * chunk): what they said, keyed by the operation's id, merged when its START comes */
  hmap_t early;
  struct early_s {
    uint32_t kch_started, kch_stopped, kids;
    uint64_t progress;
  } *ea;
  uint32_t nea, capea;
} rd_t;


static dg_op_t *rd_op(rd_t *R, uint64_t id, dg_crank_t **crp);

/* --to: a time after the cut. Such a record is not applied: the job is judged as it was at the
 * cut (docs/diagnose.md, "Filters"); that the recording goes on says the process was alive. */
static int rd_late(rd_t *R, uint64_t t) {
  if (!R->D->cut || t <= R->P->cut_mono) return 0;
  R->P->after_cut = 1;
  return 1;
}

/* --to: did the segment of the current record end by the cut (then what the writer emitted at
 * its end, expiries and forced completions, was known at the cut)? */
static int rd_seg_ended(rd_t *R) {
  const ncs_job_proc_t *jp = &R->D->job->procs[R->proc];
  return R->seg >= 1 && R->seg <= jp->nsegs && jp->segs[R->seg - 1].last_ns <= R->P->cut_mono;
}

/* --to: is this record's moment after the cut? COMPLETE and EXPIRED carry no record time: a
 * completion counts from its end time (none known, or forced by the writer: only when the
 * segment ended by the cut; the whole recording says whether it came); "stopped, no completion known" once the operation stopped; an expiry for
 * lack of room in the writer's table (nothing known) always; one at a timeout or at the end of
 * the segment only when the segment ended by the cut. */
static int rd_after_cut(rd_t *R, const ncs_event_t *e) {
  if (!R->D->cut) return 0;
  switch (e->kind) {
  case NCS_REC_START:
  case NCS_REC_STOP:
  case NCS_REC_STATE:
    if (!rd_late(R, e->ts)) return 0;
    if (e->type != NCS_T_PROXY_CTRL) R->P->events_after_cut = 1;
    return 1;
  case NCS_REC_COMPLETE: {
    if (e->cflags & NCS_CF_NO_CHILDREN) {
      const dg_op_t *op = rd_op(R, e->id, NULL);
      return !op || !op->stopped;
    }
    /* a forced completion is the writer's, at an expiry or the segment's end: its end time is
     * the operation's last child, not when it was forced */
    if (!e->end_ns || (e->cflags & NCS_CF_FORCED)) return !rd_seg_ended(R);
    return rd_late(R, e->end_ns);
  }
  case NCS_REC_EXPIRED:
    if (e->reason != NCS_XR_TIMEOUT && e->reason != NCS_XR_FLUSH) return 0;
    return !rd_seg_ended(R);
  default: return 1;
  }
}

static dg_op_t *rd_op(rd_t *R, uint64_t id, dg_crank_t **crp) {
  uint64_t v;
  if (!id || !hm_get(&R->opmap, id, &v)) return NULL;
  uint32_t g = (uint32_t)(v >> 32);
  if (g >= R->D->ncranks) return NULL;
  dg_crank_t *cr = R->D->cranks[g];
  dg_op_t *op = dg_op_at(cr, (uint32_t)v);
  if (!op || op->id != id || op->seg != R->seg) return NULL;
  if (crp) *crp = cr;
  return op;
}

static dg_ev_t *rd_ev(rd_t *R, uint64_t id) {
  uint64_t v;
  if (!id || !hm_get(&R->evmap, id, &v)) return NULL;
  return &R->pool[v];
}

static void rd_ev_del(rd_t *R, uint64_t id) {
  uint64_t v;
  if (!hm_get(&R->evmap, id, &v)) return;
  hm_del(&R->evmap, id);
  R->pool[v].id = 0;
  R->pool[v].next_free = R->freelist;
  R->freelist = (int32_t)v;
}

static dg_ev_t *rd_ev_new(rd_t *R, uint64_t id) {
  dg_ev_t *old = rd_ev(R, id);
  if (old) return old; /* a START restated (keyframe): refresh it */
  if (R->evmap.n >= DG_EV_MAX) {
    R->P->pub->events_unkept++;
    return NULL;
  }
  uint32_t i;
  if (R->freelist >= 0) {
    i = (uint32_t)R->freelist;
    R->freelist = R->pool[i].next_free;
  } else {
    if (R->npool == R->cappool) {
      R->cappool = R->cappool ? R->cappool * 2 : 256;
      R->pool = ncs_xrealloc(R->pool, R->cappool * sizeof *R->pool);
    }
    i = R->npool++;
  }
  dg_ev_t *e = &R->pool[i];
  memset(e, 0, sizeof *e);
  e->id = id, e->seg = R->seg, e->crank = -1, e->channel = e->peer = e->step = -1;
  e->next_free = -1;
  if (hm_put(&R->evmap, id, i) != 0) ncs_oom();
  return e;
}

static void progress(dg_op_t *op, uint64_t ts) {
  if (op && ts > op->progress) op->progress = ts;
}

/* the record of a child whose operation (id) has not started yet */
static struct early_s *early_of(rd_t *R, uint64_t id) {
  if (!id) return NULL;
  uint64_t v;
  if (hm_get(&R->early, id, &v)) return &R->ea[v];
  if (R->nea >= DG_EV_MAX) return NULL;
  if (R->nea == R->capea) {
    R->capea = R->capea ? R->capea * 2 : 64;
    R->ea = ncs_xrealloc(R->ea, R->capea * sizeof *R->ea);
  }
  memset(&R->ea[R->nea], 0, sizeof R->ea[R->nea]);
  if (hm_put(&R->early, id, R->nea) != 0) ncs_oom();
  return &R->ea[R->nea++];
}

/* a new slot for an operation of cr: the ring grows to NCS_DG_RING_OPS, then wraps; a pending
 * operation pushed out moves to the overflow slots */
static uint32_t op_slot(rd_t *R, dg_crank_t *cr) {
  if (cr->n < NCS_DG_RING_OPS) {
    if (cr->n == cr->cap) {
      uint32_t nc = cr->cap ? cr->cap * 2 : 16;
      if (nc > NCS_DG_RING_OPS) nc = NCS_DG_RING_OPS;
      cr->ring = ncs_xrealloc(cr->ring, nc * sizeof *cr->ring);
      memset(cr->ring + cr->cap, 0, (nc - cr->cap) * sizeof *cr->ring);
      cr->cap = nc;
    }
    return cr->n++;
  }
  uint32_t s = cr->head;
  cr->head = (cr->head + 1) % NCS_DG_RING_OPS;
  dg_op_t *old = &cr->ring[s];
  int mapped = old->id && old->seg == R->seg;
  if (old->id && old->status == OP_PENDING) {
    uint32_t o = cr->over_next;
    cr->over_next = (cr->over_next + 1) % DG_OVER;
    dg_op_t *v = &cr->over[o];
    if (v->id && v->seg == R->seg) hm_del(&R->opmap, v->id);
    *v = *old;
    if (mapped) hm_put(&R->opmap, old->id, ((uint64_t)cr->gidx << 32) | (NCS_DG_RING_OPS + o));
  } else if (mapped) {
    hm_del(&R->opmap, old->id);
  }
  memset(old, 0, sizeof *old);
  return s;
}

static const char *fstr(rd_t *R, const ncs_event_t *e, int i) {
  return dg_intern(R->D, e->fstr[i] ? e->fstr[i] : "?");
}

static dg_crank_t *ctx_crank(rd_t *R, const ncs_event_t *e) {
  if (e->ctx_kind != NCS_CTX_LOCAL || e->ctx >= R->nctx || !R->ctxmap[e->ctx]) return NULL;
  return R->D->cranks[R->ctxmap[e->ctx] - 1];
}

void dg_op_done(dg_crank_t *cr, dg_op_t *op) {
  if (op->status == OP_DONE) return;
  op->status = OP_DONE;
  op->xwhy = XW_NONE;
  ncs_dg_fseq_t *f = dg_fseq(cr, op->func, op->seq < 0);
  if (!f) return;
  if (op->seq < 0)
    f->completed++;
  else if (op->seq > f->completed)
    f->completed = op->seq;
}

/* The GPU finished the operation on every channel and it was enqueued: it is complete on this
 * rank, whatever ProxyOps stay open (NCCL never stops the ProxyOps of CollNet, SHM and
 * proxy-copy transfers, so the writer only forces their completion at expiry). */
static void kernels_check(dg_crank_t *cr, dg_op_t *op, uint64_t ts) {
  if (op->status != OP_PENDING || !op->stopped || !op->kch_started || op->kch_stopped < op->kch_started ||
      op->kch_started < (op->nch ? op->nch : 1))
    return;
  if (!op->end) op->end = ts;
  dg_op_done(cr, op);
}

static void ev_start(rd_t *R, const ncs_event_t *e) {
  unsigned t = e->type;
  if ((t == NCS_T_COLL || t == NCS_T_P2P) && e->lost) {
    /* it names a function, datatype or communicator lost with damage: not an operation to
     * judge or compare (its file is damaged, and the model's coverage has its time) */
    R->P->pub->damaged_ops++;
    return;
  }
  if (t == NCS_T_COLL || t == NCS_T_P2P) {
    dg_crank_t *cr = ctx_crank(R, e);
    if (!cr) return;
    dg_crank_t *c2;
    dg_op_t *op = rd_op(R, e->id, &c2);
    int fresh = !op;
    if (!op) {
      uint32_t s = op_slot(R, cr);
      op = &cr->ring[s];
      memset(op, 0, sizeof *op);
      if (hm_put(&R->opmap, e->id, ((uint64_t)cr->gidx << 32) | s) != 0) ncs_oom();
    } else {
      cr = c2;
    }
    op->id = e->id, op->seg = R->seg, op->type = (uint8_t)t;
    op->start = e->ts;
    cr->thread = (int)e->thread, cr->seg = R->seg;
    if (op->progress < e->ts) op->progress = e->ts;
    if (t == NCS_T_COLL) {
      op->seq = (int64_t)e->f[NCS_F(Coll, seqNumber)];
      op->func = fstr(R, e, NCS_F(Coll, func));
      op->count = e->f[NCS_F(Coll, count)];
      op->root = (int64_t)e->f[NCS_F(Coll, root)];
      op->dtype = fstr(R, e, NCS_F(Coll, datatype));
      op->nch = (uint32_t)e->f[NCS_F(Coll, nChannels)];
      op->algo = fstr(R, e, NCS_F(Coll, algo));
      op->proto = fstr(R, e, NCS_F(Coll, proto));
    } else {
      op->seq = -1;
      op->func = fstr(R, e, NCS_F(P2p, func));
      op->dtype = fstr(R, e, NCS_F(P2p, datatype));
      op->count = e->f[NCS_F(P2p, count)];
      op->root = (int64_t)e->f[NCS_F(P2p, peer)]; /* a P2p's "root" is its peer */
      op->nch = (uint32_t)e->f[NCS_F(P2p, nChannels)];
      op->algo = op->proto = NULL;
    }
    uint64_t ev;
    if (hm_get(&R->early, e->id, &ev)) {
      const struct early_s *x = &R->ea[ev];
      op->kch_started += x->kch_started, op->kch_stopped += x->kch_stopped, op->kids += x->kids;
      progress(op, x->progress);
      hm_del(&R->early, e->id);
    }
    if (fresh) {
      ncs_dg_fseq_t *f = dg_fseq(cr, op->func, t == NCS_T_P2P);
      if (f) {
        if (t == NCS_T_P2P)
          f->entered++;
        else if (op->seq > f->entered)
          f->entered = op->seq;
      }
    }
    return;
  }
  if (t != NCS_T_PROXY_OP && t != NCS_T_PROXY_STEP && t != NCS_T_KERNEL_CH && t != NCS_T_GROUP_API &&
      t != NCS_T_COLL_API && t != NCS_T_P2P_API)
    return;
  dg_ev_t *v = rd_ev_new(R, e->id);
  if (!v) return;
  v->type = (uint8_t)t;
  v->ts = e->ts;
  v->thread = e->thread;
  dg_crank_t *cr = ctx_crank(R, e);
  v->crank = cr ? (int32_t)cr->gidx : -1;
  v->parent = e->parent_kind == NCS_REF_LOCAL ? e->parent : 0;
  switch (t) {
  case NCS_T_PROXY_OP:
    v->channel = (int32_t)e->f[NCS_F(ProxyOp, channelId)];
    v->peer = (int32_t)(int64_t)e->f[NCS_F(ProxyOp, peer)];
    v->is_send = (int64_t)e->f[NCS_F(ProxyOp, isSend)] != 0;
    v->op_id = v->parent;
    break;
  case NCS_T_PROXY_STEP: {
    v->step = (int32_t)(int64_t)e->f[NCS_F(ProxyStep, step)];
    const dg_ev_t *po = rd_ev(R, v->parent);
    if (po && po->type == NCS_T_PROXY_OP) {
      v->op_id = po->op_id;
      v->channel = po->channel, v->peer = po->peer, v->is_send = po->is_send;
      if (v->crank < 0) v->crank = po->crank;
    }
    break;
  }
  case NCS_T_KERNEL_CH:
    v->channel = (int32_t)e->f[NCS_F(KernelCh, channelId)];
    v->op_id = v->parent;
    break;
  case NCS_T_COLL_API:
  case NCS_T_P2P_API:
    v->func = fstr(R, e, t == NCS_T_COLL_API ? NCS_F(CollApi, func) : NCS_F(P2pApi, func));
    break;
  default: break;
  }
  dg_op_t *op = rd_op(R, v->op_id, NULL);
  if (op) {
    progress(op, e->ts);
    if (t == NCS_T_PROXY_OP || t == NCS_T_KERNEL_CH) op->kids++;
    if (t == NCS_T_KERNEL_CH) op->kch_started++;
  } else if (t == NCS_T_PROXY_OP || t == NCS_T_KERNEL_CH) {
    struct early_s *x = early_of(R, v->op_id);
    if (x) {
      x->kids++;
      if (t == NCS_T_KERNEL_CH) x->kch_started++;
      if (e->ts > x->progress) x->progress = e->ts;
    }
  }
}

static void ev_record(rd_t *R, const ncs_event_t *e) {
  switch (e->kind) {
  case NCS_REC_START: ev_start(R, e); return;
  case NCS_REC_STATE: {
    dg_ev_t *v = rd_ev(R, e->id);
    if (!v) return;
    v->has_state = 1, v->state = e->state, v->state_ts = e->ts;
    progress(rd_op(R, v->op_id, NULL), e->ts);
    return;
  }
  case NCS_REC_STOP: {
    dg_crank_t *cr;
    dg_op_t *op = rd_op(R, e->id, &cr);
    if (op) {
      op->stopped = 1, op->stop = e->ts;
      progress(op, e->ts);
      kernels_check(cr, op, e->ts);
      return;
    }
    dg_ev_t *v = rd_ev(R, e->id);
    if (!v) return;
    dg_crank_t *oc;
    dg_op_t *po = rd_op(R, v->op_id, &oc);
    progress(po, e->ts);
    if (po && v->type == NCS_T_KERNEL_CH) {
      po->kch_stopped++;
      kernels_check(oc, po, e->ts);
    } else if (!po && v->type == NCS_T_KERNEL_CH) {
      struct early_s *x = early_of(R, v->op_id);
      if (x) {
        x->kch_stopped++;
        if (e->ts > x->progress) x->progress = e->ts;
      }
    }
    rd_ev_del(R, e->id);
    return;
  }
  case NCS_REC_COMPLETE: {
    dg_crank_t *cr;
    dg_op_t *op = rd_op(R, e->id, &cr);
    if (!op) return;
    if (e->end_ns) {
      op->end = e->end_ns;
      progress(op, e->end_ns);
    }
    if (e->cflags & NCS_CF_FORCED) {
      if (op->status != OP_DONE && !op->xwhy) op->xwhy = XW_FORCED;
    } else if (e->cflags & NCS_CF_NO_CHILDREN) { /* "stopped, no completion known" */
      if (op->status == OP_PENDING) op->status = OP_NOCOMP;
    } else {
      dg_op_done(cr, op);
    }
    return;
  }
  case NCS_REC_EXPIRED: {
    dg_crank_t *cr;
    dg_op_t *op = rd_op(R, e->id, &cr);
    uint8_t why = e->reason == NCS_XR_TIMEOUT ? XW_TIMEOUT : e->reason == NCS_XR_FLUSH ? XW_FLUSH : 0;
    if (op) {
      if (op->status == OP_DONE) return;
      if (!why)
        op->status = OP_UNKNOWN; /* evicted from the writer's table: nothing known */
      else
        op->xwhy = why;
      return;
    }
    dg_ev_t *v = rd_ev(R, e->id);
    if (!v) return;
    if (!why)
      rd_ev_del(R, e->id);
    else
      v->xwhy = why;
    return;
  }
  default: return;
  }
}

/* the end of a segment: what is still open is kept with the process */
static void rd_seg_end(rd_t *R) {
  dg_proc_t *P = R->P;
  for (uint32_t i = 0; i < R->npool; i++) {
    dg_ev_t *v = &R->pool[i];
    if (!v->id) continue;
    if (P->nopen == P->capopen) {
      P->capopen = P->capopen ? P->capopen * 2 : 64;
      P->open = ncs_xrealloc(P->open, P->capopen * sizeof *P->open);
    }
    P->open[P->nopen++] = *v;
  }
  R->npool = 0, R->freelist = -1;
  hm_clear(&R->evmap);
  hm_clear(&R->opmap);
  hm_clear(&R->early);
  R->nea = 0;
  if (R->ctxmap) memset(R->ctxmap, 0, R->nctx * sizeof *R->ctxmap);
}

void dg_note(dg_t *D, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dg_note(dg_t *D, const char *fmt, ...) {
  if (D->pub.nnotes >= sizeof D->pub.notes / sizeof D->pub.notes[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(D->pub.notes[D->pub.nnotes++], NCS_DG_LINE, fmt, ap);
  va_end(ap);
}

const char *dg_base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Read one recording (a file the job model could open) into the rings. */
void dg_read_file(dg_t *D, int proc) {
  ncs_dg_proc_t *pp = &D->pub.procs[proc];
  dg_proc_t *P = &D->procs[proc];
  P->pub = pp;
  P->clk_off = D->job->procs[proc].clk_off;
  char e2[512];
  ncs_reader_t *r = ncs_reader_open(pp->file, e2, sizeof e2);
  if (!r) {
    pp->unreadable = 1;
    dg_cpy(pp->damage_msg, sizeof pp->damage_msg, e2);
    return;
  }
  const ncs_flight_info_t *fi = ncs_reader_flight(r);
  if (fi) {
    P->fi = *fi;
    uint64_t *t[] = {&P->fi.heartbeat_mono, &P->fi.heartbeat_real, &P->fi.last_event_mono,
                     &P->fi.dump_mono,      &P->fi.dump_real,      &P->fi.trigger_real};
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) *t[k] = dg_sane_time(*t[k]);
    P->is_flight = 1;
    pp->flight_state = fi->state;
    pp->dump_reason = fi->dump_reason;
    pp->dump_index = fi->dump_index;
    dg_cpy(pp->trigger, sizeof pp->trigger, fi->trigger);
    pp->pid = fi->pid;
    dg_cpy(pp->host, sizeof pp->host, fi->host);
    pp->heartbeat_real = (int64_t)P->fi.heartbeat_real;
  }
  rd_t R;
  memset(&R, 0, sizeof R);
  R.D = D, R.proc = proc, R.P = P, R.freelist = -1;
  ncs_item_t it;
  int rc, footer = 0;
  while ((rc = ncs_reader_next(r, &it)) == 1) {
    switch (it.what) {
    case NCS_ITEM_SEGMENT: {
      if (R.seg) rd_seg_end(&R);
      R.seg++;
      footer = 0;
      const ncs_segment_info_t *s = ncs_reader_segment(r);
      if (s) {
        if (!fi) {
          dg_cpy(pp->host, sizeof pp->host, s->host);
          pp->pid = s->pid;
        }
        if (s->start_mono_ns > P->last_life && !rd_late(&R, s->start_mono_ns)) P->last_life = s->start_mono_ns;
      }
      break;
    }
    case NCS_ITEM_CLOCK:
      if (it.clock_mono_ns > P->last_life && !rd_late(&R, it.clock_mono_ns)) P->last_life = it.clock_mono_ns;
      break;
    case NCS_ITEM_COMM: { /* the job model's member: its communicator and rank */
      const ncs_job_member_t *m = R.seg ? ncs_job_member(D->job, (uint32_t)proc, R.seg - 1, it.comm.index) : NULL;
      if (!m || m->rank < 0 || m->rank >= D->comms[m->comm].nranks || D->comms[m->comm].nranks > (1 << 20))
        break;
      if (it.comm.index >= R.nctx) {
        uint32_t n = it.comm.index + 1 > R.nctx * 2 ? it.comm.index + 1 : R.nctx * 2;
        if (n > (1u << 22)) break;
        R.ctxmap = ncs_xrealloc(R.ctxmap, n * sizeof *R.ctxmap);
        memset(R.ctxmap + R.nctx, 0, (n - R.nctx) * sizeof *R.ctxmap);
        R.nctx = n;
      }
      uint32_t g = dg_crank_get(D, m->comm, m->rank, proc);
      D->cranks[g]->finalized = 0;
      R.ctxmap[it.comm.index] = (int32_t)g + 1;
      break;
    }
    case NCS_ITEM_COMM_END:
      if (rd_late(&R, it.ts)) break;
      if (it.comm.index < R.nctx && R.ctxmap[it.comm.index])
        D->cranks[R.ctxmap[it.comm.index] - 1]->finalized = 1;
      break;
    case NCS_ITEM_EVENT: {
      const ncs_event_t *e = &it.ev;
      if (rd_after_cut(&R, e)) break;
      if (e->kind <= NCS_REC_STATE && e->type != NCS_T_PROXY_CTRL && e->ts > P->last_event)
        P->last_event = e->ts;
      ev_record(&R, e);
      break;
    }
    case NCS_ITEM_COUNTERS:
    case NCS_ITEM_FOOTER:
      if (it.counters)
        for (uint32_t k = 0; k < it.counters->nkeys; k++)
          if (it.counters->keys[k] == NCS_CK_END_NS && it.counters->values[k] > P->last_life &&
              !rd_late(&R, it.counters->values[k]))
            P->last_life = it.counters->values[k];
      if (it.what == NCS_ITEM_FOOTER) footer = 1;
      break;
    default: break;
    }
  }
  if (rc < 0) {
    pp->damage = ncs_reader_damage(r);
    dg_cpy(pp->damage_msg, sizeof pp->damage_msg, ncs_reader_error(r));
  }
  rd_seg_end(&R);
  pp->footer = footer && !P->after_cut; /* --to: a process that ended after the cut had not yet */
  if (P->last_event > P->last_life) P->last_life = P->last_event;
  ncs_reader_close(r);
  hm_free(&R.opmap);
  hm_free(&R.evmap);
  hm_free(&R.early);
  free(R.ea);
  free(R.pool);
  free(R.ctxmap);
}


/* ------------------------------------------------------------------ settling */

typedef struct {
  uint64_t done_start; /* the latest start of a completed operation */
} settle_t;

static void latest_done(dg_op_t *op, void *arg) {
  settle_t *t = arg;
  if (op->status == OP_DONE && !op->inferred && op->start > t->done_start) t->done_start = op->start;
}

typedef struct {
  dg_t *D;
  dg_crank_t *cr;
  uint64_t done_start;
} settle_op_t;

/* NCCL runs the operations of a communicator in order: one that started before a completed one
 * completed; a pending one in a file that lost records after it started cannot be judged; one
 * without an expiry in a cleanly ended segment lost its completion records */
/* --to: what the whole recording (D->full) says of op, open at the cut: its own copy there
 * (NULL: not kept), and whether it completed later: it completed itself, or an operation of its
 * rank and communicator that started after it did (NCCL runs them in order) */
typedef struct {
  const dg_op_t *op, *copy;
  int done;
} later_t;

static void later_fn(dg_op_t *x, void *arg) {
  later_t *l = arg;
  int same = x->id == l->op->id && x->seg == l->op->seg;
  if (same) l->copy = x;
  if (x->status == OP_DONE && (same || x->start > l->op->start)) l->done = 1;
}

static later_t full_view(const dg_t *D, const dg_crank_t *cr, const dg_op_t *op) {
  later_t l = {op, NULL, 0};
  const dg_t *F = D->full;
  if (!F || cr->comm >= F->ncomms || cr->rank < 0 || cr->rank >= F->comms[cr->comm].nranks) return l;
  uint32_t g = F->comms[cr->comm].cranks[cr->rank];
  if (!g || F->cranks[g - 1]->proc != cr->proc) return l; /* another recording's: another clock */
  dg_for_each_op(F->cranks[g - 1], later_fn, &l);
  return l;
}

static void settle_op(dg_op_t *op, void *arg) {
  settle_op_t *t = arg;
  const dg_proc_t *P = &t->D->procs[t->cr->proc];
  const ncs_job_proc_t *jp = &t->D->job->procs[t->cr->proc];
  if ((op->status == OP_PENDING || op->status == OP_NOCOMP) && op->start < t->done_start) {
    op->inferred = 1;
    dg_op_done(t->cr, op);
    return;
  }
  later_t l = {op, NULL, 0};
  if (t->D->full && (op->status == OP_PENDING || op->status == OP_NOCOMP)) {
    l = full_view(t->D, t->cr, op);
    if (l.done) { /* in progress at the cut */
      op->status = OP_PENDING, op->later = 1, op->xwhy = XW_NONE;
      return;
    }
    if (l.copy && l.copy->status == OP_UNKNOWN) { /* the whole recording knows nothing of it */
      op->status = OP_UNKNOWN;
      return;
    }
  }
  if (op->status != OP_PENDING || P->pub->dead) return;
  /* cut by --to: its completion may be in records lost after the cut too */
  uint64_t to = t->D->cut ? UINT64_MAX : P->snap_mono ? P->snap_mono : UINT64_MAX;
  op->loss = ncs_job_lost(t->D->job, (uint32_t)t->cr->proc, op->start, to, NCS_JL_RECORDED, DG_COMPLETION_TYPES);
  /* without an expiry in a segment that ended cleanly, its completion records were lost (cut
   * by --to: what the whole segment says) */
  int xwhy = t->D->cut ? l.copy && l.copy->xwhy : op->xwhy;
  if (op->loss)
    op->status = OP_LOST;
  else if (!xwhy && op->seg >= 1 && op->seg <= jp->nsegs && jp->segs[op->seg - 1].clean && (!t->D->cut || l.copy))
    op->status = OP_UNKNOWN;
}

typedef struct {
  const int64_t *mn;      /* per fseq index of the crank: the least seqNumber every member entered,
                           * INT64_MAX where that cannot be told or the function is not judged */
  dg_crank_t *cr;
  uint64_t block;         /* the earliest start of an operation that cannot have completed */
  uint64_t rejected;
  int64_t low[NCS_DG_MAX_FUNCS]; /* per fseq index: the lowest seqNumber taken back (Coll) */
  uint32_t nback[NCS_DG_MAX_FUNCS]; /* per fseq index: completions taken back (P2p counts) */
} imposs_t;

static int fseq_index(dg_crank_t *cr, const dg_op_t *op) {
  for (uint32_t i = 0; i < cr->nf; i++)
    if (cr->fs[i].func == op->func && cr->fs[i].p2p == (op->seq < 0)) return (int)i;
  return -1;
}

/* an operation it entered that some member never entered: it cannot have completed */
static void imposs_block(dg_op_t *op, void *arg) {
  imposs_t *t = arg;
  int i = fseq_index(t->cr, op);
  if (i < 0 || op->seq < 0 || t->mn[i] == INT64_MAX || op->seq <= t->mn[i]) return;
  if (op->start < t->block) t->block = op->start;
}

static void imposs_take(dg_op_t *op, void *arg) {
  imposs_t *t = arg;
  int i = fseq_index(t->cr, op);
  if (i < 0 || op->status != OP_DONE) return;
  int beyond = op->seq >= 0 && t->mn[i] != INT64_MAX && op->seq > t->mn[i];
  if (!beyond && !(op->start > t->block)) return;
  op->status = OP_PENDING, op->rejected = 1, op->inferred = 0, op->end = 0;
  t->rejected++;
  if (op->seq >= 0 && op->seq < t->low[i]) t->low[i] = op->seq;
  if (op->seq < 0) t->nback[i]++;
}

/* Before any verdict: completions that cannot be true are taken back (docs/diagnose.md,
 * "Completions that cannot be true").
 *   - An AllReduce, AllGather or ReduceScatter cannot complete on one rank before every member
 *     entered it (every rank's output needs every rank's input): a completion of seqNumber s while
 *     a recorded member's recording shows it never entered s (nothing of it lost, and for a flight
 *     window, some operation of the function in it) rests on timestamps that cannot be right (NCCL
 *     2.28's stale KernelCh). Not Broadcast or Reduce: a root or a sender may finish into its peers'
 *     buffers before they enter.
 *   - NCCL runs one communicator's kernels of a rank one after another: an operation started after
 *     one that cannot have completed cannot have completed either, whatever its function.
 * Each member whose recording is whole testifies on its own; one whose recording lost records, or
 * has no footer (a killed process, a cut file: what it entered after its last chunk is not
 * recorded), says nothing, and does not silence the others. */
static void dg_impossible(dg_t *D) {
  for (uint32_t c = 0; c < D->ncomms; c++) {
    dg_comm_t *C = &D->comms[c];
    if (C->nranks <= 0) continue;
    for (int r = 0; r < C->nranks; r++) {
      if (!C->cranks[r]) continue;
      dg_crank_t *cr = D->cranks[C->cranks[r] - 1];
      int64_t mn[NCS_DG_MAX_FUNCS];
      int any = 0;
      for (uint32_t i = 0; i < cr->nf; i++) {
        ncs_dg_fseq_t *f = &cr->fs[i];
        mn[i] = INT64_MAX;
        if (f->p2p || !ncs_all_depend(f->func))
          continue;
        /* the least entered over the members whose recordings can say they never entered */
        int64_t m = INT64_MAX;
        for (int q = 0; q < C->nranks; q++) {
          if (!C->cranks[q]) continue; /* not recorded: it cannot tell */
          dg_crank_t *qr = D->cranks[C->cranks[q] - 1];
          const dg_proc_t *P = &D->procs[qr->proc];
          /* lost records, or a trace without footer: its entered count is a lower bound (a flight
           * file holds its process's newest records, written as they happen) */
          if (ncs_job_lost(D->job, (uint32_t)qr->proc, 0, UINT64_MAX, NCS_JL_RECORDED, 1u << NCS_T_COLL) ||
              (!P->is_flight && !dg_proc_clean(D, qr->proc)))
            continue;
          int64_t got = -1;
          for (uint32_t j = 0; j < qr->nf; j++)
            if (qr->fs[j].func == f->func && !qr->fs[j].p2p) got = qr->fs[j].entered;
          /* a flight window holds a rank's newest operations: what it entered of a function is its
           * latest there, but none there says nothing (they may all be older than the window) */
          if (got < 0 && P->is_flight) continue;
          if (got < m) m = got;
        }
        mn[i] = m;
        any |= m != INT64_MAX && f->entered > m;
      }
      if (!any) continue;
      imposs_t t = {.mn = mn, .cr = cr, .block = UINT64_MAX};
      for (uint32_t i = 0; i < NCS_DG_MAX_FUNCS; i++) t.low[i] = INT64_MAX;
      dg_for_each_op(cr, imposs_block, &t);
      dg_for_each_op(cr, imposs_take, &t);
      for (uint32_t i = 0; i < cr->nf; i++) {
        ncs_dg_fseq_t *f = &cr->fs[i];
        int64_t was = f->completed;
        if (mn[i] != INT64_MAX && f->completed > mn[i]) f->completed = mn[i];
        if (t.low[i] != INT64_MAX && f->completed >= t.low[i]) f->completed = t.low[i] - 1;
        if (f->p2p) f->completed = f->completed > (int64_t)t.nback[i] ? f->completed - (int64_t)t.nback[i] : 0;
        if (!t.rejected && f->completed < was) D->pub.impossible++; /* claimed by counters alone */
      }
      D->pub.impossible += t.rejected;
    }
  }
}

void dg_settle(dg_t *D) {
  dg_impossible(D);
  if (D->pub.impossible)
    dg_note(D, "%" PRIu64 " completion%s taken back: claimed on ranks where a member of the communicator had "
               "not entered the collective yet (or after such a one on the same stream), which cannot "
               "happen: the times they rest on are not of this work (NCCL 2.28 hands KernelCh times of "
               "earlier work: docs/diagnose.md, \"Completions that cannot be true\")",
            D->pub.impossible, D->pub.impossible == 1 ? " was" : "s were");
  for (uint32_t g = 0; g < D->ncranks; g++) {
    settle_t s = {0};
    dg_for_each_op(D->cranks[g], latest_done, &s);
    settle_op_t t = {D, D->cranks[g], s.done_start};
    dg_for_each_op(D->cranks[g], settle_op, &t);
  }
}

int dg_proc_clean(const dg_t *D, int proc) {
  const ncs_dg_proc_t *q = &D->pub.procs[proc];
  const dg_proc_t *P = &D->procs[proc];
  return (q->source == NCS_DG_SRC_TRACE && q->footer) ||
         (q->source == NCS_DG_SRC_LIVE && P->is_flight && P->fi.state == NCS_FS_EXITED);
}
