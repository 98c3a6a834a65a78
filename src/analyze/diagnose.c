/* diagnose.c - hang and desync verdicts over the recordings of a job (see diagnose.h and
 * docs/diagnose.md for what is read, how each verdict is decided, and the limits). */
#include "analyze/diagnose.h"
#include "analyze/analyze.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fmt.h"
#include "util/hmap.h"
#include "util/mem.h"
#include "util/pool.h"
#include "trace/flight.h"
#include "trace/reader.h"

/* Every line is built with snprintf into a fixed buffer; a cut line is acceptable. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* ------------------------------------------------------------------ helpers */


/* Strings come from untrusted files: keep printable ASCII, so that every output line stays one
 * line and the JSON stays valid UTF-8. */
static void cpy(char *dst, size_t n, const char *src) {
  snprintf(dst, n, "%s", src ? src : "");
  for (char *c = dst; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
}

/* ------------------------------------------------------------------ model */

enum { OP_PENDING = 0, OP_DONE = 1, OP_UNKNOWN = 2 };
/* why a pending operation's state is final: the recording says it never finished */
enum { XW_NONE = 0, XW_TIMEOUT = 1, XW_FLUSH = 2, XW_FORCED = 3 };

typedef struct {
  uint64_t id;     /* START's event id in its segment; 0 = empty slot */
  uint32_t seg;
  uint8_t type, status, stopped, xwhy;
  const char *func, *dtype, *algo, *proto;
  int64_t seq;     /* Coll seqNumber, -1 for P2p */
  int64_t root;    /* Coll root, P2p peer */
  uint64_t count;
  uint32_t nch, kids;
  uint32_t kch_started, kch_stopped; /* its KernelCh events seen */
  uint64_t start, stop, end, progress; /* mono ns; progress: newest event of it or its children */
} dg_op_t;

#define DG_OVER 32 /* pending operations pushed out of a full ring, kept per (comm, rank) */

typedef struct {
  uint32_t comm, gidx;
  int rank, proc;
  dg_op_t *ring;
  uint32_t cap, n, head;
  dg_op_t over[DG_OVER];
  uint32_t over_next;
  ncs_dg_fseq_t fs[NCS_DG_MAX_FUNCS];
  uint32_t nf;
  int finalized;
  int thread;      /* the thread that launched its last operation (its user thread), -1 unknown */
  uint32_t seg;    /* ... in this segment of its file */
} dg_crank_t;

typedef struct {
  uint64_t comm_id;
  char name[64];
  int32_t nranks;
  uint32_t *cranks; /* nranks entries: global crank index + 1, 0 none */
} dg_comm_t;

/* an open event other than Coll/P2p: ProxyOp, ProxyStep, KernelCh, GroupApi, CollApi, P2pApi */
typedef struct {
  uint64_t id, op_id, parent;
  uint32_t seg;
  int32_t crank; /* global crank index, -1 unknown */
  uint32_t thread;
  uint8_t type, has_state, xwhy, is_send;
  uint32_t state;
  int32_t channel, peer, step;
  uint64_t ts, state_ts;
  const char *func;
  int32_t next_free;
} dg_ev_t;

typedef struct {
  ncs_dg_proc_t *pub; /* index into D->pub.procs: set after reading */
  uint64_t snap_mono, last_life, last_event;
  uint64_t clk_mono, clk_real;
  int have_clk;
  ncs_flight_info_t fi;
  int is_flight;
  dg_ev_t *open;     /* open events at the end of the recording */
  uint32_t nopen, capopen;
} dg_proc_t;

typedef struct {
  ncs_dg_t pub; /* first: ncs_dg_t * and dg_t * are the same pointer */
  ncs_pool_t strs; /* strings of the trace, printable */
  dg_proc_t *procs;
  dg_crank_t **cranks;
  uint32_t ncranks, capcranks;
  dg_comm_t *comms;
  uint32_t ncomms, capcomms;
  uint32_t capverdicts;
} dg_t;

/* a string of the trace, made printable (cpy), pooled */
static const char *intern(dg_t *D, const char *raw) {
  if (!raw) return NULL;
  char s[NCS_STRING_MAX + 1];
  cpy(s, sizeof s, raw);
  return ncs_pool_str(&D->strs, s);
}

static int64_t to_real(const dg_proc_t *P, uint64_t mono) {
  if (!mono) return 0;
  return P->have_clk ? (int64_t)mono + ((int64_t)P->clk_real - (int64_t)P->clk_mono) : (int64_t)mono;
}

/* ------------------------------------------------------------------ comms and ranks */

static uint32_t comm_find(dg_t *D, uint64_t comm_id, const char *name, int32_t nranks) {
  for (uint32_t i = 0; i < D->ncomms; i++) {
    dg_comm_t *c = &D->comms[i];
    if (c->comm_id != comm_id || c->nranks != nranks) continue;
    if (!comm_id && strcmp(c->name, name ? name : "")) continue; /* ABI v1-v3: no commId */
    return i;
  }
  if (D->ncomms == D->capcomms) {
    D->capcomms = D->capcomms ? D->capcomms * 2 : 8;
    D->comms = ncs_xrealloc(D->comms, D->capcomms * sizeof *D->comms);
  }
  dg_comm_t *c = &D->comms[D->ncomms];
  memset(c, 0, sizeof *c);
  c->comm_id = comm_id;
  cpy(c->name, sizeof c->name, name);
  c->nranks = nranks;
  c->cranks = ncs_xcalloc((size_t)nranks, sizeof *c->cranks);
  return D->ncomms++;
}

static uint32_t crank_get(dg_t *D, uint32_t comm, int rank, int proc) {
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

static ncs_dg_fseq_t *fseq(dg_crank_t *cr, const char *func, int p2p) {
  for (uint32_t i = 0; i < cr->nf; i++)
    if (cr->fs[i].func == func && cr->fs[i].p2p == p2p) return &cr->fs[i];
  if (cr->nf == NCS_DG_MAX_FUNCS) return NULL;
  ncs_dg_fseq_t *f = &cr->fs[cr->nf++];
  f->func = func, f->p2p = p2p, f->entered = f->completed = p2p ? 0 : -1;
  return f;
}

/* slot index -> operation: ring slots first, then the overflow slots */
static dg_op_t *op_at(dg_crank_t *cr, uint32_t idx) {
  if (idx < NCS_DG_RING_OPS) return idx < cr->cap ? &cr->ring[idx] : NULL;
  idx -= NCS_DG_RING_OPS;
  return idx < DG_OVER ? &cr->over[idx] : NULL;
}

static void for_each_op(dg_crank_t *cr, void (*fn)(dg_op_t *, void *), void *arg) {
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

#define DG_EV_MAX (1u << 20) /* open events kept per process */

static dg_op_t *rd_op(rd_t *R, uint64_t id, dg_crank_t **crp) {
  uint64_t v;
  if (!id || !hm_get(&R->opmap, id, &v)) return NULL;
  uint32_t g = (uint32_t)(v >> 32);
  if (g >= R->D->ncranks) return NULL;
  dg_crank_t *cr = R->D->cranks[g];
  dg_op_t *op = op_at(cr, (uint32_t)v);
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
  if (hm_put(&R->evmap, id, i) != 0) abort();
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
  if (hm_put(&R->early, id, R->nea) != 0) abort();
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
  return intern(R->D, e->fstr[i] ? e->fstr[i] : "?");
}

static dg_crank_t *ctx_crank(rd_t *R, const ncs_event_t *e) {
  if (e->ctx_kind != NCS_CTX_LOCAL || e->ctx >= R->nctx || !R->ctxmap[e->ctx]) return NULL;
  return R->D->cranks[R->ctxmap[e->ctx] - 1];
}

static void op_done(dg_crank_t *cr, dg_op_t *op) {
  if (op->status == OP_DONE) return;
  op->status = OP_DONE;
  op->xwhy = XW_NONE;
  ncs_dg_fseq_t *f = fseq(cr, op->func, op->seq < 0);
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
  op_done(cr, op);
}

static void ev_start(rd_t *R, const ncs_event_t *e) {
  unsigned t = e->type;
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
      if (hm_put(&R->opmap, e->id, ((uint64_t)cr->gidx << 32) | s) != 0) abort();
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
      ncs_dg_fseq_t *f = fseq(cr, op->func, t == NCS_T_P2P);
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
    } else {
      op_done(cr, op);
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

static void note(dg_t *D, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(dg_t *D, const char *fmt, ...) {
  if (D->pub.nnotes >= sizeof D->pub.notes / sizeof D->pub.notes[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(D->pub.notes[D->pub.nnotes++], NCS_DG_LINE, fmt, ap);
  va_end(ap);
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Read one recording into the model. Returns 0, or -1 when it cannot be opened at all. */
static int read_file(dg_t *D, int proc, char *err, size_t errlen) {
  ncs_dg_proc_t *pp = &D->pub.procs[proc];
  dg_proc_t *P = &D->procs[proc];
  P->pub = pp;
  char e2[512];
  ncs_reader_t *r = ncs_reader_open(pp->file, e2, sizeof e2);
  if (!r) {
    snprintf(err, errlen, "%s", e2);
    return -1;
  }
  const ncs_flight_info_t *fi = ncs_reader_flight(r);
  if (fi) {
    P->fi = *fi;
    P->is_flight = 1;
    pp->flight_state = fi->state;
    pp->dump_reason = fi->dump_reason;
    pp->dump_index = fi->dump_index;
    cpy(pp->trigger, sizeof pp->trigger, fi->trigger);
    pp->pid = fi->pid;
    cpy(pp->host, sizeof pp->host, fi->host);
    pp->heartbeat_real = (int64_t)fi->heartbeat_real;
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
          cpy(pp->host, sizeof pp->host, s->host);
          pp->pid = s->pid;
        }
        if (s->start_mono_ns && s->start_realtime_ns) {
          P->clk_mono = s->start_mono_ns, P->clk_real = s->start_realtime_ns, P->have_clk = 1;
          if (s->start_mono_ns > P->last_life) P->last_life = s->start_mono_ns;
        }
      }
      break;
    }
    case NCS_ITEM_CLOCK:
      if (it.clock_mono_ns && it.clock_realtime_ns) {
        P->clk_mono = it.clock_mono_ns, P->clk_real = it.clock_realtime_ns, P->have_clk = 1;
        if (it.clock_mono_ns > P->last_life) P->last_life = it.clock_mono_ns;
      }
      break;
    case NCS_ITEM_COMM: {
      const ncs_comm_info_t *c = &it.comm;
      if (c->nranks <= 0 || c->nranks > (1 << 20) || c->rank < 0 || c->rank >= c->nranks) break;
      if (c->index >= R.nctx) {
        uint32_t n = c->index + 1 > R.nctx * 2 ? c->index + 1 : R.nctx * 2;
        if (n > (1u << 22)) break;
        R.ctxmap = ncs_xrealloc(R.ctxmap, n * sizeof *R.ctxmap);
        memset(R.ctxmap + R.nctx, 0, (n - R.nctx) * sizeof *R.ctxmap);
        R.nctx = n;
      }
      uint32_t cm = comm_find(D, c->comm_id, c->name, c->nranks);
      if (!D->comms[cm].name[0] && c->name) cpy(D->comms[cm].name, sizeof D->comms[cm].name, c->name);
      uint32_t g = crank_get(D, cm, c->rank, proc);
      D->cranks[g]->finalized = 0;
      R.ctxmap[c->index] = (int32_t)g + 1;
      break;
    }
    case NCS_ITEM_COMM_END:
      if (it.comm.index < R.nctx && R.ctxmap[it.comm.index])
        D->cranks[R.ctxmap[it.comm.index] - 1]->finalized = 1;
      break;
    case NCS_ITEM_EVENT: {
      const ncs_event_t *e = &it.ev;
      if (e->kind <= NCS_REC_STATE && e->type != NCS_T_PROXY_CTRL && e->ts > P->last_event)
        P->last_event = e->ts;
      ev_record(&R, e);
      break;
    }
    case NCS_ITEM_COUNTERS:
    case NCS_ITEM_FOOTER:
      if (it.counters)
        for (uint32_t k = 0; k < it.counters->nkeys; k++)
          if (it.counters->keys[k] == NCS_CK_END_NS && it.counters->values[k] > P->last_life)
            P->last_life = it.counters->values[k];
      if (it.what == NCS_ITEM_FOOTER) footer = 1;
      break;
    default: break;
    }
  }
  if (rc < 0) {
    pp->damage = ncs_reader_damage(r);
    cpy(pp->damage_msg, sizeof pp->damage_msg, ncs_reader_error(r));
  }
  rd_seg_end(&R);
  pp->footer = footer;
  if (P->last_event > P->last_life) P->last_life = P->last_event;
  ncs_reader_close(r);
  hm_free(&R.opmap);
  hm_free(&R.evmap);
  hm_free(&R.early);
  free(R.ea);
  free(R.pool);
  free(R.ctxmap);
  return 0;
}

/* ------------------------------------------------------------------ choosing files */

typedef struct {
  char *path;
  ncs_flight_hdr_t h;
} dump_t;

static int read_flight_hdr(const char *path, ncs_flight_hdr_t *h) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  uint8_t page[sizeof *h];
  ssize_t k = read(fd, page, sizeof page);
  close(fd);
  if (k != (ssize_t)sizeof page || !ncs_flight_is(page, sizeof page)) return -1;
  memcpy(h, page, sizeof *h);
  h->host[sizeof h->host - 1] = 0;
  h->trigger[sizeof h->trigger - 1] = 0;
  return h->version == NCS_FLIGHT_VERSION ? 0 : -1;
}

/* host and pid of a recording: a flight file's header, or a trace's first SEGMENT */
static int peek_id(const char *path, char *host, size_t hl, uint64_t *pid) {
  ncs_flight_hdr_t h;
  if (read_flight_hdr(path, &h) == 0) {
    cpy(host, hl, h.host);
    *pid = h.pid;
    return 0;
  }
  char err[256];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  if (!r) return -1;
  ncs_item_t it;
  int rc = -1;
  while (ncs_reader_next(r, &it) == 1)
    if (it.what == NCS_ITEM_SEGMENT) {
      const ncs_segment_info_t *s = ncs_reader_segment(r);
      cpy(host, hl, s->host);
      *pid = s->pid;
      rc = 0;
      break;
    }
  ncs_reader_close(r);
  return rc;
}

static int by_dump_real(const void *a, const void *b) {
  const dump_t *x = a, *y = b;
  if (x->h.dump_real != y->h.dump_real) return x->h.dump_real < y->h.dump_real ? -1 : 1;
  return strcmp(x->path, y->path);
}

static void add_proc(dg_t *D, const char *path, int source) {
  D->pub.procs = ncs_xrealloc(D->pub.procs, (D->pub.nprocs + 1) * sizeof *D->pub.procs);
  ncs_dg_proc_t *p = &D->pub.procs[D->pub.nprocs++];
  memset(p, 0, sizeof *p);
  snprintf(p->file, sizeof p->file, "%s", path); /* paths as given: they are opened */
  snprintf(p->name, sizeof p->name, "%s", base_name(path));
  p->source = source;
}

/* Pick the recordings to diagnose: the chosen incident's dumps plus the live files of the
 * processes without a dump in it; or every file of the directory when there are no dumps. */
static int choose_files(dg_t *D, const char *path, const ncs_dg_opts_t *o, char *err, size_t errlen) {
  char **paths = NULL, **dpaths = NULL;
  size_t n = 0, nd = 0;
  if (ncs_list_traces(path, &paths, &n, err, errlen) != 0) return -1;
  struct stat st;
  char ddir[1100];
  snprintf(ddir, sizeof ddir, "%s/dumps", path);
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && stat(ddir, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (ncs_list_traces(ddir, &dpaths, &nd, err, errlen) != 0) {
      ncs_free_paths(paths, n);
      return -1;
    }
  }
  dump_t *dumps = ncs_xcalloc(nd, sizeof *dumps);
  size_t ndumps = 0;
  for (size_t i = 0; i < nd; i++) {
    if (read_flight_hdr(dpaths[i], &dumps[ndumps].h) != 0) {
      note(D, "%s: not a readable flight dump; ignored", base_name(dpaths[i]));
      continue;
    }
    dumps[ndumps++].path = dpaths[i];
  }
  int rc = 0;
  if (!n && !ndumps) {
    snprintf(err, errlen, "no recordings (*.nstrace, *.nsflight) in '%s'", path);
    rc = -1;
    goto out;
  }
  D->pub.ndumps = (uint32_t)ndumps;
  if (ndumps) qsort(dumps, ndumps, sizeof *dumps, by_dump_real);
  /* incidents: a gap of more than NCS_DG_INCIDENT_GAP_NS between consecutive dumps */
  uint32_t ninc = 0;
  size_t *inc_first = ncs_xcalloc(ndumps + 1, sizeof *inc_first);
  for (size_t i = 0; i < ndumps; i++)
    if (!i || (int64_t)(dumps[i].h.dump_real - dumps[i - 1].h.dump_real) > NCS_DG_INCIDENT_GAP_NS)
      inc_first[ninc++] = i;
  inc_first[ninc] = ndumps;
  D->pub.nincidents = ninc;
  if (o->incident > 0 && (uint32_t)o->incident > ninc) {
    if (ninc)
      snprintf(err, errlen, "no incident %d: %s/dumps holds %u incident%s", o->incident, path, ninc,
               ninc == 1 ? "" : "s");
    else
      snprintf(err, errlen, "no incident %d: there are no dumps in %s/dumps", o->incident, path);
    free(inc_first);
    rc = -1;
    goto out;
  }
  if (ninc) {
    uint32_t k = o->incident > 0 ? (uint32_t)o->incident - 1 : o->incident < 0 ? ninc - 1 : 0;
    D->pub.incident = k + 1;
    size_t a = inc_first[k], b = inc_first[k + 1];
    D->pub.incident_first_real = (int64_t)dumps[a].h.dump_real;
    D->pub.incident_last_real = (int64_t)dumps[b - 1].h.dump_real;
    /* the incident's last dump request: every process alive then answered it. (Under a long
     * hang several watchdogs fire one after the other, and an early request may have been a
     * stall that resolved; the last one shows what stayed stuck.) */
    int64_t last_req = 0;
    for (size_t i = a; i < b; i++) {
      int64_t t = (int64_t)(dumps[i].h.trigger_real ? dumps[i].h.trigger_real : dumps[i].h.dump_real);
      if (t >= last_req) {
        last_req = t;
        cpy(D->pub.trigger, sizeof D->pub.trigger, dumps[i].h.trigger);
      }
    }
    D->pub.request_real = last_req;
    /* each process's latest dump in the incident, unless it predates the last request (the
     * process missed it: its live file says more) */
    uint32_t nstale = 0, nchosen = 0;
    size_t *stale = ncs_xcalloc(b - a, sizeof *stale), *chosen = ncs_xcalloc(b - a, sizeof *chosen);
    for (size_t i = a; i < b; i++) {
      int later = 0;
      for (size_t j2 = a; j2 < b; j2++)
        if (j2 != i && dumps[j2].h.pid == dumps[i].h.pid && !strcmp(dumps[j2].h.host, dumps[i].h.host) &&
            (dumps[j2].h.dump_real > dumps[i].h.dump_real ||
             (dumps[j2].h.dump_real == dumps[i].h.dump_real && j2 > i)))
          later = 1;
      if (later) continue;
      if ((int64_t)dumps[i].h.dump_real + 1000000000ll < last_req) {
        stale[nstale++] = i;
        continue;
      }
      add_proc(D, dumps[i].path, NCS_DG_SRC_DUMP);
      chosen[nchosen++] = i;
    }
    /* live files of the processes without a (current) dump in this incident */
    for (size_t i = 0; i < n; i++) {
      char host[128];
      uint64_t pid;
      if (peek_id(paths[i], host, sizeof host, &pid) != 0) {
        snprintf(err, errlen, "%s: unreadable", paths[i]);
        free(stale);
        free(chosen);
        free(inc_first);
        rc = -1;
        goto out;
      }
      int have = 0, old = -1;
      for (uint32_t q = 0; q < nchosen && !have; q++)
        have = dumps[chosen[q]].h.pid == pid && !strcmp(dumps[chosen[q]].h.host, host);
      if (have) continue;
      for (uint32_t q = 0; q < nstale; q++)
        if (dumps[stale[q]].h.pid == pid && !strcmp(dumps[stale[q]].h.host, host)) {
          old = (int)q;
          stale[q] = SIZE_MAX; /* replaced by the live file */
        }
      add_proc(D, paths[i], strstr(paths[i], NCS_FLIGHT_SUFFIX) ? NCS_DG_SRC_LIVE : NCS_DG_SRC_TRACE);
      if (old >= 0)
        note(D, "%s-%" PRIu64 " did not answer the incident's last dump request: its live file %s is used",
             host, pid, base_name(paths[i]));
      else
        note(D, "%s-%" PRIu64 " has no dump in incident %u: its live file %s is used", host, pid,
             D->pub.incident, base_name(paths[i]));
    }
    for (uint32_t q = 0; q < nstale; q++) /* no live file: the older dump is all there is */
      if (stale[q] != SIZE_MAX) {
        add_proc(D, dumps[stale[q]].path, NCS_DG_SRC_DUMP);
        note(D, "%s: this process did not answer the incident's last dump request, and has no live file",
             base_name(dumps[stale[q]].path));
      }
    free(stale);
    free(chosen);
  } else {
    if (o->incident < 0) note(D, "no dumps in %s/dumps: --latest has nothing to choose", path);
    for (size_t i = 0; i < n; i++)
      add_proc(D, paths[i], strstr(paths[i], NCS_FLIGHT_SUFFIX) ? NCS_DG_SRC_LIVE : NCS_DG_SRC_TRACE);
  }
  free(inc_first);
out:
  free(dumps);
  ncs_free_paths(paths, n);
  ncs_free_paths(dpaths, nd);
  return rc;
}

/* ------------------------------------------------------------------ analysis helpers */

static int op_stuck(const dg_proc_t *P, const dg_op_t *op) {
  if (op->status != OP_PENDING) return 0;
  if (op->xwhy || P->pub->dead) return 1;
  return P->snap_mono > op->progress && (int64_t)(P->snap_mono - op->progress) > NCS_DG_STUCK_NS;
}

static int64_t ago(const dg_t *D, int64_t real) { return D->pub.ref_real - real; }

static void ago_str(const dg_t *D, char *out, size_t n, int64_t real) {
  char d[32];
  int64_t a = ago(D, real);
  ncs_fmt_ns(d, sizeof d, (double)(a < 0 ? -a : a));
  snprintf(out, n, "%s %s %s", d, a < 0 ? "after" : "before", D->pub.ref_name);
}

static void op_name(char *out, size_t n, const dg_op_t *op) {
  if (op->seq >= 0)
    snprintf(out, n, "%s #%" PRId64, op->func ? op->func : "?", op->seq);
  else
    snprintf(out, n, "%s %s rank %" PRId64, op->func ? op->func : "?",
             op->func && !strcmp(op->func, "Recv") ? "from" : "to", op->root);
}

static ncs_dg_verdict_t *verdict(dg_t *D, int kind, int comm) {
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

static void ev_line(ncs_dg_verdict_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ev_line(ncs_dg_verdict_t *v, const char *fmt, ...) {
  if (v->nev >= NCS_DG_EVIDENCE) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->evidence[v->nev++], NCS_DG_LINE, fmt, ap);
  va_end(ap);
}

/* "0,1,3" or "0-2,5" */
static void rank_list(char *out, size_t n, const int *r, int nr) {
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

/* the newest operation entered and the newest completed by a rank */
typedef struct {
  const dg_op_t *entered, *completed;
  uint32_t pending, stuck;
  const dg_op_t *oldest_pending;
  const dg_proc_t *P;
} last_t;

static void last_fn(dg_op_t *op, void *arg) {
  last_t *l = arg;
  if (op->status == OP_UNKNOWN) return;
  if (!l->entered || op->start > l->entered->start) l->entered = op;
  if (op->status == OP_DONE && (!l->completed || op->end > l->completed->end ||
                                (op->end == l->completed->end && op->start > l->completed->start)))
    l->completed = op;
  if (op->status == OP_PENDING) {
    l->pending++;
    if (op_stuck(l->P, op)) l->stuck++;
    if (!l->oldest_pending || op->start < l->oldest_pending->start) l->oldest_pending = op;
  }
}

static last_t rank_last(dg_t *D, dg_crank_t *cr) {
  last_t l;
  memset(&l, 0, sizeof l);
  l.P = &D->procs[cr->proc];
  for_each_op(cr, last_fn, &l);
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

static const dg_op_t *find_op(dg_crank_t *cr, const char *func, int64_t seq, int64_t peer,
                              int pending_only) {
  find_t f = {func, seq, peer, pending_only, NULL};
  for_each_op(cr, find_fn, &f);
  return f.found;
}

/* describe what a rank did last in its communicator */
static void last_line(dg_t *D, char *out, size_t n, dg_crank_t *cr) {
  last_t l = rank_last(D, cr);
  const dg_proc_t *P = &D->procs[cr->proc];
  if (!l.entered) {
    snprintf(out, n, "no operation of this communicator recorded");
    return;
  }
  char a[64], b[80], c[64], d[80];
  op_name(a, sizeof a, l.entered);
  ago_str(D, b, sizeof b, to_real(P, l.entered->start));
  if (l.completed) {
    op_name(c, sizeof c, l.completed);
    ago_str(D, d, sizeof d, to_real(P, l.completed->end ? l.completed->end : l.completed->progress));
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

static void op_kids(const dg_proc_t *P, const dg_crank_t *cr, const dg_op_t *op, kids_t *k) {
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

static const char *short_state(uint32_t s) {
  const char *n = ncs_state_name(s);
  if (!n || !strcmp(n, "?")) return "?";
  if (!strncmp(n, "ProxyStep", 9)) return n + 9;
  if (!strncmp(n, "ProxyOp", 7)) return n + 7;
  return n;
}

/* Could b be driven by the same thread as a (the same GPU of a process that holds several)?
 * Unknown threads do not exclude. */
static int same_thread(const dg_crank_t *a, int thread, uint32_t seg) {
  return a->thread < 0 || thread < 0 || a->seg != seg || a->thread == thread;
}

/* an API call of this rank (or of any rank of its process when any_rank) still open */
static const dg_ev_t *open_api(const dg_t *D, const dg_crank_t *cr, int any_rank) {
  const dg_proc_t *P = &D->procs[cr->proc];
  const dg_ev_t *best = NULL;
  for (uint32_t i = 0; i < P->nopen; i++) {
    const dg_ev_t *v = &P->open[i];
    if (v->type != NCS_T_GROUP_API && v->type != NCS_T_COLL_API && v->type != NCS_T_P2P_API) continue;
    if (v->xwhy) continue;
    if (!any_rank && v->crank >= 0 && (uint32_t)v->crank != cr->gidx) continue;
    if (any_rank && !same_thread(cr, (int)v->thread, v->seg)) continue;
    if (!best || v->ts < best->ts) best = v;
  }
  return best;
}

/* ------------------------------------------------------------------ processes: snapshot, death */

static void procs_prepare(dg_t *D) {
  ncs_dg_t *G = &D->pub;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    dg_proc_t *P = &D->procs[i];
    ncs_dg_proc_t *p = &G->procs[i];
    p->clk_off = P->have_clk ? (int64_t)P->clk_real - (int64_t)P->clk_mono : 0;
    if (P->is_flight && p->source == NCS_DG_SRC_DUMP && P->fi.dump_mono) {
      P->snap_mono = P->fi.dump_mono;
      p->snap_real = (int64_t)P->fi.dump_real;
    } else if (P->is_flight && P->fi.heartbeat_mono) {
      P->snap_mono = P->fi.heartbeat_mono > P->last_life ? P->fi.heartbeat_mono : P->last_life;
      p->snap_real = P->fi.heartbeat_real ? (int64_t)P->fi.heartbeat_real : to_real(P, P->snap_mono);
    } else {
      P->snap_mono = P->last_life;
      p->snap_real = to_real(P, P->last_life);
    }
    p->last_event_real = to_real(P, P->last_event);
  }
  /* reference time: the incident's last dump request, else the newest snapshot */
  if (G->incident) {
    G->ref_real = G->request_real;
    G->ref_name = "the dump request";
  } else {
    G->ref_real = 0;
    for (uint32_t i = 0; i < G->nprocs; i++)
      if (G->procs[i].snap_real > G->ref_real) G->ref_real = G->procs[i].snap_real;
    G->ref_name = "the end of the recording";
  }
  int64_t trig = G->incident ? G->request_real : 0;
  uint32_t nofooter = 0;
  for (uint32_t i = 0; i < G->nprocs; i++) {
    dg_proc_t *P = &D->procs[i];
    ncs_dg_proc_t *p = &G->procs[i];
    int64_t newest = 0;
    for (uint32_t j = 0; j < G->nprocs; j++)
      if (j != i && G->procs[j].snap_real > newest) newest = G->procs[j].snap_real;
    char d[32];
    /* the newest clean end of another process (a trace footer, a flight file marked exited) */
    int64_t clean_after = 0;
    for (uint32_t j = 0; j < G->nprocs; j++) {
      const ncs_dg_proc_t *q = &G->procs[j];
      int clean = (q->source == NCS_DG_SRC_TRACE && q->footer) ||
                  (q->source == NCS_DG_SRC_LIVE && D->procs[j].is_flight && D->procs[j].fi.state == NCS_FS_EXITED);
      if (j != i && clean && q->snap_real > clean_after) clean_after = q->snap_real;
    }
    if (p->source == NCS_DG_SRC_TRACE && !p->footer) {
      /* A living writer adds a CLOCK pair every second: a trace that stops well before the
       * others, or while another process went on to end cleanly, belongs to a dead process.
       * Traces that all stop together without footers: the job was stopped as a whole (or is
       * still running), which is no one process's death. */
      int64_t gap = newest - p->snap_real;
      if (G->nprocs > 1 && (gap > NCS_DG_DEAD_NS || clean_after - p->snap_real > 1500000000ll)) {
        p->dead = 1;
        ncs_fmt_ns(d, sizeof d, (double)gap);
        snprintf(p->dead_why, sizeof p->dead_why,
                 "its trace has no footer%s: the process was killed or crashed; it stopped %s before "
                 "the other processes",
                 p->damage == NCS_DAMAGE_TRUNCATED ? " (cut short)" : "", d);
      } else {
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
    note(D, "%u trace%s without footer stop%s with the others: the job was stopped as a whole, or is "
            "still running", nofooter, nofooter == 1 ? "" : "s", nofooter == 1 ? "s" : "");
}

/* ------------------------------------------------------------------ mismatches */

typedef struct {
  uint64_t count;
  const char *dtype;
  int64_t root;
  int n;
  int ranks[16];
  int nr;
} tuple_t;

typedef struct {
  const char *func;
  int64_t seq;
  tuple_t t[4];
  int nt;
  int overflow;
} mkey_t;

typedef struct {
  hmap_t idx; /* hash(func, seq) -> index + 1 into keys (chained on collision by +1 keys) */
  mkey_t *keys;
  uint32_t n, cap;
  int rank;
  int root_matters;
} mism_t;

static int root_matters(const char *func) {
  return func && (!strcmp(func, "Broadcast") || !strcmp(func, "Reduce"));
}

static void mism_fn(dg_op_t *op, void *arg) {
  mism_t *M = arg;
  if (op->seq < 0 || op->status == OP_UNKNOWN) return;
  uint64_t h = hm_mix((uint64_t)(uintptr_t)op->func ^ ((uint64_t)op->seq * 0x9E3779B97F4A7C15ull)), v;
  mkey_t *k = NULL;
  uint64_t key = h;
  for (;; key++) {
    if (!hm_get(&M->idx, key, &v)) break;
    mkey_t *c = &M->keys[v - 1];
    if (c->func == op->func && c->seq == op->seq) {
      k = c;
      break;
    }
  }
  if (!k) {
    if (M->n == M->cap) {
      M->cap = M->cap ? M->cap * 2 : 256;
      M->keys = ncs_xrealloc(M->keys, M->cap * sizeof *M->keys);
    }
    k = &M->keys[M->n++];
    memset(k, 0, sizeof *k);
    k->func = op->func, k->seq = op->seq;
    if (hm_put(&M->idx, key, M->n) != 0) abort();
  }
  int64_t root = root_matters(op->func) ? op->root : 0;
  for (int i = 0; i < k->nt; i++) {
    tuple_t *t = &k->t[i];
    if (t->count == op->count && t->dtype == op->dtype && t->root == root) {
      t->n++;
      if (t->nr < 16) t->ranks[t->nr++] = M->rank;
      return;
    }
  }
  if (k->nt == 4) {
    k->overflow++;
    return;
  }
  tuple_t *t = &k->t[k->nt++];
  memset(t, 0, sizeof *t);
  t->count = op->count, t->dtype = op->dtype, t->root = root, t->n = 1;
  t->ranks[t->nr++] = M->rank;
}

static int by_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

static void tuple_str(char *out, size_t n, const tuple_t *t, const char *func) {
  if (root_matters(func))
    snprintf(out, n, "count %" PRIu64 " %s root %" PRId64, t->count, t->dtype ? t->dtype : "?", t->root);
  else
    snprintf(out, n, "count %" PRIu64 " %s", t->count, t->dtype ? t->dtype : "?");
}

/* verdicts for the mismatched collectives of a communicator; the stuck one first */
static int comm_mismatches(dg_t *D, uint32_t c, const char *stuck_func, int64_t stuck_seq) {
  int stuck_mismatched = 0;
  dg_comm_t *C = &D->comms[c];
  mism_t M;
  memset(&M, 0, sizeof M);
  for (int r = 0; r < C->nranks; r++) {
    if (!C->cranks[r]) continue;
    M.rank = r;
    for_each_op(D->cranks[C->cranks[r] - 1], mism_fn, &M);
  }
  uint32_t shown = 0;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < M.n; i++) {
      mkey_t *k = &M.keys[i];
      if (k->nt < 2) continue;
      int is_stuck = k->func == stuck_func && k->seq == stuck_seq;
      if ((pass == 0) != is_stuck) continue;
      if (pass == 0 || shown < 8) {
        /* the majority tuple; a tie has no majority */
        int maj = 0, tie = 0;
        for (int j = 1; j < k->nt; j++)
          if (k->t[j].n > k->t[maj].n) maj = j, tie = 0;
          else if (k->t[j].n == k->t[maj].n) tie = 1;
        ncs_dg_verdict_t *v = verdict(D, NCS_DG_V_MISMATCH, (int)c);
        cpy(v->func, sizeof v->func, k->func);
        v->seq = k->seq;
        int diff_count = 0, diff_dtype = 0, diff_root = 0;
        for (int j = 0; j < k->nt; j++) {
          if (j == maj && !tie) continue;
          const tuple_t *t = &k->t[j];
          diff_count |= t->count != k->t[maj].count;
          diff_dtype |= t->dtype != k->t[maj].dtype;
          diff_root |= t->root != k->t[maj].root;
          for (int q = 0; q < t->nr && v->nranks < 16; q++) v->ranks[v->nranks++] = t->ranks[q];
        }
        if (tie) /* name every rank of the tuples that share the top count */
          for (int q = 0; q < k->t[maj].nr && v->nranks < 16; q++) v->ranks[v->nranks++] = k->t[maj].ranks[q];
        qsort(v->ranks, (size_t)v->nranks, sizeof v->ranks[0], by_int);
        snprintf(v->what, sizeof v->what, "%s%s%s%s%s", diff_count ? "count" : "",
                 diff_count && (diff_dtype || diff_root) ? "," : "", diff_dtype ? "datatype" : "",
                 diff_dtype && diff_root ? "," : "", diff_root ? "root" : "");
        v->rank = v->nranks ? v->ranks[0] : -1;
        if (v->rank >= 0 && C->cranks[v->rank]) v->proc = D->cranks[C->cranks[v->rank] - 1]->proc;
        char rl[96];
        rank_list(rl, sizeof rl, v->ranks, v->nranks);
        char mt[96];
        tuple_str(mt, sizeof mt, &k->t[maj], k->func);
        if (tie)
          snprintf(v->summary, sizeof v->summary,
                   "mismatched %s #%" PRId64 " (%s differs, no majority): ranks %s disagree", k->func,
                   k->seq, v->what, rl);
        else
          snprintf(v->summary, sizeof v->summary,
                   "mismatched %s #%" PRId64 ": rank%s %s called it with a different %s than the "
                   "other %d (%s)",
                   k->func, k->seq, v->nranks > 1 ? "s" : "", rl, v->what, k->t[maj].n, mt);
        for (int j = 0; j < k->nt; j++) {
          const tuple_t *t = &k->t[j];
          int rs[16];
          memcpy(rs, t->ranks, sizeof rs);
          qsort(rs, (size_t)t->nr, sizeof rs[0], by_int);
          char tl[96], ts[96];
          rank_list(tl, sizeof tl, rs, t->nr);
          tuple_str(ts, sizeof ts, t, k->func);
          ev_line(v, "rank%s %s%s: %s%s", t->n > 1 ? "s" : "", tl, t->n > t->nr ? " ..." : "", ts,
                  j == maj && !tie ? " (majority)" : "");
        }
        if (k->overflow) ev_line(v, "%d more distinct values", k->overflow);
        if (is_stuck) {
          ev_line(v, "this is the operation the communicator is stuck in");
          stuck_mismatched = 1;
        }
      }
      shown++;
      D->pub.mismatches++;
    }
  hm_free(&M.idx);
  free(M.keys);
  return stuck_mismatched;
}

/* ------------------------------------------------------------------ per communicator */

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
        if (!op->id || !op_stuck(P, op)) continue;
        int64_t real = to_real(P, op->start);
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
  last_line(D, l, sizeof l, cr);
  ev_line(v, "rank %d (%s-%" PRIu64 "): %s", cr->rank, p->host, p->pid, l);
  if (p->dead) {
    ev_line(v, "%s", p->dead_why);
    if (p->last_event_real) {
      ago_str(D, a, sizeof a, p->last_event_real);
      ev_line(v, "last event of the process %s (a killed process loses what its writer had not "
                 "written yet: its last few ms)", a);
    }
    return NCS_DG_W_DEAD;
  }
  last_t l2 = rank_last(D, cr);
  if (l2.oldest_pending) {
    op_name(nm, sizeof nm, l2.oldest_pending);
    ago_str(D, a, sizeof a, to_real(P, l2.oldest_pending->start));
    ev_line(v, "it has %s of this communicator open, entered %s", nm, a);
    return NCS_DG_W_OTHER_OP;
  }
  /* other communicators of the same process */
  for (uint32_t g = 0; g < D->ncranks; g++) {
    dg_crank_t *o = D->cranks[g];
    if (o->proc != cr->proc || o->comm == cr->comm || !same_thread(cr, o->thread, o->seg)) continue;
    last_t lo = rank_last(D, o);
    if (!lo.oldest_pending) continue;
    op_name(nm, sizeof nm, lo.oldest_pending);
    ago_str(D, a, sizeof a, to_real(P, lo.oldest_pending->start));
    ev_line(v, "it has %s open in communicator 0x%016" PRIx64 " (rank %d there), entered %s", nm,
            D->comms[o->comm].comm_id, o->rank, a);
    return NCS_DG_W_OTHER_COMM;
  }
  const dg_ev_t *api = open_api(D, cr, 1);
  if (api) {
    ago_str(D, a, sizeof a, to_real(P, api->ts));
    ev_line(v, "a thread is inside an NCCL call (%s%s%s open since %s)", ncs_type_name(api->type),
            api->func ? " " : "", api->func ? api->func : "", a);
    return NCS_DG_W_IN_API;
  }
  if ((p->source == NCS_DG_SRC_TRACE && p->footer) ||
      (P->is_flight && P->fi.state == NCS_FS_EXITED)) {
    ago_str(D, a, sizeof a, p->snap_real);
    ev_line(v, "its process ended cleanly %s%s", a, cr->finalized ? " (communicator finalized)" : "");
    return NCS_DG_W_EXITED;
  }
  ago_str(D, a, sizeof a, p->snap_real);
  ev_line(v, "nothing of it is open in NCCL: no operation, kernel, proxy op or API call; its "
             "process is alive (%s %s)",
          p->source == NCS_DG_SRC_DUMP ? "dumped" : p->source == NCS_DG_SRC_LIVE ? "last heartbeat"
                                                                                : "its trace goes on until",
          a);
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
      ago_str(D, ag, sizeof ag, to_real(P, since));
      if (smin == smax)
        snprintf(st, sizeof st, "step %d", smin);
      else
        snprintf(st, sizeof st, "steps %d-%d", smin, smax);
      if (a->has_state)
        snprintf(in, sizeof in, "in %s", short_state(a->state));
      else
        snprintf(in, sizeof in, "started (no state yet)");
      ev_line(v, "rank %d: %d %s step%s (%s) %s %s rank %d since %s", w->rank, n, a->is_send ? "send" : "recv",
              n > 1 ? "s" : "", st, in, a->is_send ? "to" : "from", a->peer, ag);
    }
  }
}

static void stuck_inside(dg_t *D, uint32_t c, const char *func, int64_t seq, waiter_t *w, int nw,
                         const int *done_ranks, int ndone, int mismatched) {
  ncs_dg_verdict_t *v = verdict(D, NCS_DG_V_STUCK_INSIDE, (int)c);
  cpy(v->func, sizeof v->func, func);
  v->seq = seq;
  qsort(w, (size_t)nw, sizeof *w, by_prog);
  int steps = 0, kernels = 0;
  for (int i = 0; i < nw; i++) steps += w[i].k.steps, kernels += w[i].k.kernels;
  int cul = 0;
  const char *why;
  int64_t lead = nw > 1 ? w[1].prog_real - w[0].prog_real : 0;
  int kernel_missing = -1;
  if (!steps && kernels) {
    for (int i = 0; i < nw; i++)
      if (!w[i].k.kernels) kernel_missing = i;
  }
  if (steps) {
    /* Ranks with only kernels open sent everything and wait for the others: not the culprit.
     * Among the ranks with open network steps, best: the others' receives wait for its data and
     * its own send is stuck (SendGPUWait: its GPU never produced the data; SendWait: posted,
     * never done); then a stuck send; then waited on; ties go to the earliest last progress. */
    int bestcls = -1;
    cul = -1;
    for (int i = 0; i < nw; i++) {
      if (!w[i].k.steps) continue;
      int pointed = 0, hard = 0;
      for (int j = 0; j < nw; j++)
        for (int q = 0; q < w[j].nrecv_from; q++)
          if (j != i && w[j].recv_from[q] == w[i].rank) pointed++;
      for (int q = 0; q < w[i].k.n; q++) {
        const dg_ev_t *s = w[i].k.ev[q];
        if (s->type == NCS_T_PROXY_STEP && s->is_send && s->has_state && (s->state == 8 || s->state == 9))
          hard = 1;
      }
      int cls = pointed && hard ? 3 : hard ? 2 : pointed ? 1 : 0;
      if (cls > bestcls || (cls == bestcls && w[i].prog_real < w[cul].prog_real)) cul = i, bestcls = cls;
    }
    if (cul < 0) cul = 0;
    why = bestcls == 3   ? "the others' receives wait for its data and its send is stuck"
          : bestcls == 2 ? "its send is stuck"
          : bestcls == 1 ? "the others' receives wait for its data"
                         : "its progress stopped first among the ranks with network steps open";
  } else if (kernels) {
    if (kernel_missing >= 0) {
      cul = kernel_missing;
      why = "its kernel never started while the others' run";
    } else {
      /* NVLink-style: only KernelCh; name the rank whose kernel started last */
      uint64_t best = 0;
      for (int i = 0; i < nw; i++) {
        uint64_t first = UINT64_MAX;
        for (int q = 0; q < w[i].k.n; q++)
          if (w[i].k.ev[q]->type == NCS_T_KERNEL_CH && w[i].k.ev[q]->ts < first) first = w[i].k.ev[q]->ts;
        int64_t fr = to_real(&D->procs[w[i].cr->proc], first);
        if (first != UINT64_MAX && (uint64_t)fr > best) best = (uint64_t)fr, cul = i;
      }
      why = "no proxy events: the kernels of all ranks are open; its kernel started last";
    }
  } else {
    why = "its progress stopped first; no kernel or proxy step events were recorded (NCCLSCOPE_EVENTS)";
  }
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
  if (!best)
    for (int q = 0; q < W->k.n; q++)
      if (W->k.ev[q]->type == NCS_T_KERNEL_CH && (!best || W->k.ev[q]->ts < best->ts)) best = W->k.ev[q];
  char ag[80], ld[32], sd[32];
  ncs_fmt_ns(sd, sizeof sd, (double)v->since_ns);
  ncs_fmt_ns(ld, sizeof ld, (double)lead);
  if (best && best->type == NCS_T_PROXY_STEP) {
    v->channel = best->channel, v->peer = best->peer, v->step = best->step, v->is_send = best->is_send;
    cpy(v->state, sizeof v->state, best->has_state ? short_state(best->state) : "started");
    snprintf(v->summary, sizeof v->summary,
             "every rank entered %s #%" PRId64 "; rank %d is stuck inside it: %s step %d on channel "
             "%d %s rank %d in %s, no progress for %s (%s)",
             func, seq, W->rank, best->is_send ? "send" : "recv", best->step, best->channel,
             best->is_send ? "to" : "from", best->peer, v->state, sd, why);
  } else if (best) {
    v->channel = best->channel;
    cpy(v->state, sizeof v->state, "KernelCh");
    snprintf(v->summary, sizeof v->summary,
             "every rank entered %s #%" PRId64 "; rank %d: kernel open on channel %d, no progress "
             "for %s (%s)",
             func, seq, W->rank, best->channel, sd, why);
  } else {
    snprintf(v->summary, sizeof v->summary,
             "every rank entered %s #%" PRId64 "; rank %d is stuck inside it, no progress for %s (%s)",
             func, seq, W->rank, sd, why);
  }
  if (mismatched) {
    size_t l = strlen(v->summary);
    snprintf(v->summary + l, sizeof v->summary - l, "; likely a consequence of the mismatch");
  }
  if (nw > 1 && cul == 0)
    ev_line(v, "rank %d stopped progressing %s before any other rank", W->rank, ld);
  if (steps) {
    int only_k[16], nk = 0;
    for (int i = 0; i < nw && nk < 16; i++)
      if (!w[i].k.steps && w[i].k.kernels) only_k[nk++] = w[i].rank;
    if (nk) {
      char kl[96];
      qsort(only_k, (size_t)nk, sizeof only_k[0], by_int);
      rank_list(kl, sizeof kl, only_k, nk);
      ev_line(v, "rank%s %s: no network step open, only kernel%s: %s sent everything and wait%s for the others",
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
      qsort(ptr, (size_t)np, sizeof ptr[0], by_int);
      rank_list(pl, sizeof pl, ptr, np);
      ev_line(v, "rank%s %s wait%s in RecvWait for data from rank %d", np > 1 ? "s" : "", pl,
              np > 1 ? "" : "s", W->rank);
    }
  }
  int64_t kmin = 0; /* the earliest kernel start of the waiting ranks */
  for (int i = 0; i < nw; i++)
    for (int q = 0; q < w[i].k.n; q++)
      if (w[i].k.ev[q]->type == NCS_T_KERNEL_CH) {
        int64_t t = to_real(&D->procs[w[i].cr->proc], w[i].k.ev[q]->ts);
        if (!kmin || t < kmin) kmin = t;
      }
  for (int i = 0; i < nw && v->nev < NCS_DG_EVIDENCE - 1; i++) {
    const waiter_t *x = &w[i == 0 ? cul : (i == cul ? 0 : i)];
    const dg_proc_t *Q = &D->procs[x->cr->proc];
    ago_str(D, ag, sizeof ag, x->prog_real);
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
      ncs_fmt_ns(kg, sizeof kg, (double)to_real(Q, kfirst) - kmin);
      snprintf(ks, sizeof ks, "; kernel started %s after the first rank's", kg);
    }
    ev_line(v, "rank %d (%s-%" PRIu64 "): last progress %s%s%s", x->rank, Q->pub->host, Q->pub->pid, ag, kinds, ks);
    if (i == 0 || i < 4) steps_lines(D, v, x);
  }
  if (ndone) {
    char rl[96];
    rank_list(rl, sizeof rl, done_ranks, ndone);
    ev_line(v, "rank%s %s completed it", ndone > 1 ? "s" : "", rl);
  }
}

static void analyze_comm(dg_t *D, uint32_t c) {
  dg_comm_t *C = &D->comms[c];
  ncs_dg_comm_t *out = &D->pub.comms[c];
  out->comm_id = C->comm_id;
  cpy(out->name, sizeof out->name, C->name);
  out->nranks = C->nranks;
  out->ranks = ncs_xcalloc((size_t)C->nranks, sizeof *out->ranks);
  out->stuck_seq = -1, out->stuck_rank = out->stuck_peer = -1;
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
    last_t l = rank_last(D, cr);
    R->open = l.pending, R->stuck = l.stuck;
    if (l.pending > l.stuck) out->in_flight += l.pending - l.stuck;
    if (l.oldest_pending) {
      char nm[64], d[32];
      op_name(nm, sizeof nm, l.oldest_pending);
      const dg_proc_t *P = &D->procs[cr->proc];
      ncs_fmt_ns(d, sizeof d, (double)P->pub->snap_real - to_real(P, l.oldest_pending->progress));
      if (P->pub->dead)
        snprintf(R->open_desc, sizeof R->open_desc, "%s%s (its recording ends)", nm, l.pending > 1 ? " +more" : "");
      else
        snprintf(R->open_desc, sizeof R->open_desc, "%s%s (idle %s)%s", nm, l.pending > 1 ? " +more" : "", d,
                 op_stuck(P, l.oldest_pending) ? "" : " in flight");
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
    comm_mismatches(D, c, NULL, -1);
    return;
  }
  const dg_op_t *K = pk.op;
  out->has_stuck = 1;
  cpy(out->stuck_func, sizeof out->stuck_func, K->func);
  out->stuck_p2p = K->seq < 0;
  out->stuck_seq = K->seq;
  if (K->seq < 0) out->stuck_rank = pk.rank, out->stuck_peer = (int)K->root;
  char kname[64];
  op_name(kname, sizeof kname, K);
  if (K->seq < 0) snprintf(kname + strlen(kname), sizeof kname - strlen(kname), " (of rank %d)", pk.rank);
  int mismatched = comm_mismatches(D, c, K->func, K->seq);
  /* per rank: entered it? */
  waiter_t *w = ncs_xcalloc((size_t)C->nranks, sizeof *w);
  int nw = 0, absent = 0;
  int *done = ncs_xcalloc((size_t)C->nranks, sizeof *done);
  int ndone = 0;
  int *waiting_ranks = ncs_xcalloc((size_t)C->nranks, sizeof *waiting_ranks);
  int nwaiting = 0;
  const char *peer_func = K->seq < 0 ? intern(D, strcmp(K->func, "Send") ? "Send" : "Recv") : NULL;
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
    const dg_op_t *op = K->seq >= 0 ? find_op(cr, K->func, K->seq, 0, 0)
                        : r == pk.rank ? K
                                       : find_op(cr, peer_func, -1, pk.rank, 1);
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
      R->stuck_since_real = to_real(P, op->progress);
      int64_t st = to_real(P, op->start);
      if (!oldest_wait || st < oldest_wait) oldest_wait = st;
      waiter_t *x = &w[nw++];
      x->rank = r, x->cr = cr, x->op = op, x->prog_real = R->stuck_since_real;
      op_kids(P, cr, op, &x->k);
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
  rank_list(wl, sizeof wl, waiting_ranks, nwaiting);
  if (oldest_wait) ago_str(D, ag, sizeof ag, oldest_wait);
  if (absent) {
    for (int r = 0; r < C->nranks; r++) {
      ncs_dg_rank_t *R = &out->ranks[r];
      if (R->state != NCS_DG_R_NOT_ENTERED && R->state != NCS_DG_R_MISSING) continue;
      ncs_dg_verdict_t *v = verdict(D, NCS_DG_V_NOT_ENTERED, (int)c);
      cpy(v->func, sizeof v->func, K->func);
      v->seq = K->seq;
      v->rank = r;
      if (R->state == NCS_DG_R_MISSING) {
        v->where = NCS_DG_W_UNKNOWN;
        ev_line(v, "no recording in this directory holds rank %d of this communicator", r);
        /* a process that died before its writer recorded its communicators */
        for (uint32_t i = 0; i < D->pub.nprocs; i++) {
          const ncs_dg_proc_t *q = &D->pub.procs[i];
          int holds = 0;
          for (uint32_t g = 0; g < D->ncranks; g++) holds |= D->cranks[g]->proc == (int)i;
          if (!q->dead || holds) continue;
          ev_line(v, "process %s-%" PRIu64 " died before recording any communicator: %s", q->host, q->pid,
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
      }
      if (nwaiting)
        ev_line(v, "rank%s %s wait%s in %s, entered %s", nwaiting > 1 ? "s" : "", wl,
                nwaiting > 1 ? "" : "s", kname, ag);
      if (ndone) {
        char dl[96];
        rank_list(dl, sizeof dl, done, ndone);
        ev_line(v, "rank%s %s completed it", ndone > 1 ? "s" : "", dl);
      }
      if (K->seq < 0)
        snprintf(v->summary, sizeof v->summary,
                 "rank %d never posted the %s %s rank %d that rank %d's %s waits for (communicator "
                 "0x%016" PRIx64 "): %s",
                 r, peer_func, !strcmp(peer_func, "Recv") ? "from" : "to", pk.rank, pk.rank, K->func,
                 C->comm_id, where_text(v->where));
      else
        snprintf(v->summary, sizeof v->summary, "rank %d never entered %s (communicator 0x%016" PRIx64
                 "): %s", r, kname, C->comm_id, where_text(v->where));
    }
  } else if (nw) {
    stuck_inside(D, c, K->seq < 0 ? kname : K->func, K->seq, w, nw, done, ndone, mismatched);
  }
  free(w);
  free(done);
  free(waiting_ranks);
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
  default: return 5;
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
    ncs_dg_verdict_t *v = verdict(D, NCS_DG_V_DEAD, -1);
    v->proc = (int)i;
    v->where = NCS_DG_W_DEAD;
    char rl[NCS_DG_LINE] = "";
    size_t len = 0;
    for (uint32_t g = 0; g < D->ncranks && len < sizeof rl - 40; g++) {
      const dg_crank_t *cr = D->cranks[g];
      if (cr->proc != (int)i) continue;
      if (v->comm < 0) v->comm = (int)cr->comm, v->rank = cr->rank;
      len += (size_t)snprintf(rl + len, sizeof rl - len, "%srank %d of 0x%016" PRIx64, len ? ", " : "",
                              cr->rank, D->comms[cr->comm].comm_id);
    }
    snprintf(v->summary, sizeof v->summary, "process %s-%" PRIu64 " died%s%s", G->procs[i].host,
             G->procs[i].pid, rl[0] ? " holding " : "", rl);
    ev_line(v, "%s", G->procs[i].dead_why);
    if (v->comm >= 0 && G->comms[v->comm].has_stuck)
      ev_line(v, "its communicator is stuck in %s", G->comms[v->comm].stuck_func);
    if (G->procs[i].last_event_real) {
      char a[80];
      ago_str(D, a, sizeof a, G->procs[i].last_event_real);
      ev_line(v, "last event of the process %s", a);
    }
  }
}

int ncs_diagnose(const char *path, const ncs_dg_opts_t *opts, ncs_dg_t **out, char *err, size_t errlen) {
  static const ncs_dg_opts_t defaults = {0};
  if (!opts) opts = &defaults;
  *out = NULL;
  dg_t *D = ncs_xcalloc(1, sizeof *D);
  ncs_dg_t *G = &D->pub;
  cpy(G->path, sizeof G->path, path);
  if (choose_files(D, path, opts, err, errlen) != 0) {
    ncs_dg_free(G);
    return -1;
  }
  D->procs = ncs_xcalloc(G->nprocs, sizeof *D->procs);
  for (uint32_t i = 0; i < G->nprocs; i++) {
    D->procs[i].pub = &G->procs[i];
    if (read_file(D, (int)i, err, errlen) != 0) {
      ncs_dg_free(G);
      return -1;
    }
    ncs_dg_proc_t *p = &G->procs[i];
    if (p->damage == NCS_DAMAGE_CORRUPT)
      note(D, "%s is damaged: %s (its readable chunks were read)", p->name, p->damage_msg);
    if (p->events_unkept)
      note(D, "%s: %" PRIu64 " open events not kept (more than %u open)", p->name, p->events_unkept, DG_EV_MAX);
  }
  procs_prepare(D);
  for (uint32_t g = 0; g < D->ncranks; g++) {
    const dg_crank_t *cr = D->cranks[g];
    G->procs[cr->proc].ranks++;
    last_t l = rank_last(D, D->cranks[g]);
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
  for (uint32_t c = 0; c < D->ncomms; c++) analyze_comm(D, c);
  dead_procs(D);
  for (uint32_t k = 0; k < G->nverdicts; k++)
    if (G->verdicts[k].kind != NCS_DG_V_NOTHING_STUCK) G->problem = 1;
  if (!G->problem) {
    ncs_dg_verdict_t *v = verdict(D, NCS_DG_V_NOTHING_STUCK, -1);
    uint64_t done = 0, flight = 0;
    for (uint32_t c = 0; c < G->ncomms; c++) done += G->comms[c].ops_completed_all, flight += G->comms[c].in_flight;
    if (flight)
      snprintf(v->summary, sizeof v->summary,
               "nothing stuck: no open collective without progress (%" PRIu64 " in flight, progressing); "
               "%" PRIu64 " collectives completed on every rank", flight, done);
    else
      snprintf(v->summary, sizeof v->summary,
               "nothing stuck: no open collective; %" PRIu64 " collectives completed on every rank", done);
    for (uint32_t c = 0; c < G->ncomms; c++)
      ev_line(v, "communicator 0x%016" PRIx64 "%s%s: %d of %d ranks recorded, %" PRIu64
                 " collectives completed on every rank",
              G->comms[c].comm_id, G->comms[c].name[0] ? " " : "", G->comms[c].name, G->comms[c].ranks_present,
              G->comms[c].nranks, G->comms[c].ops_completed_all);
  }
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
  if (G->comms)
    for (uint32_t c = 0; c < G->ncomms; c++) free(G->comms[c].ranks);
  free(G->comms);
  free(G->procs);
  free(G->verdicts);
  free(D);
}

const char *ncs_dg_kind_name(int k) {
  static const char *const n[] = {"dead", "mismatch", "not_entered", "stuck_inside", "nothing_stuck"};
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
