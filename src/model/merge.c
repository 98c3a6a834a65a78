/* merge.c - the streaming pass: every file read at once, merged in time order; each Coll/P2p is
 * held in its file from its START until its completion settled, then finished (its times in job
 * time) and handed to the matching (match.c). docs/report.md, "Memory", gives the bounds.
 *
 * The next record always comes from the file whose latest event time, in job time, is the
 * smallest. A Coll/P2p settles NCS_JOB_SETTLE_NS of its file's time after its last COMPLETE or
 * EXPIRED record (the writer revises a completion within 250 ms), or at the end of its segment.
 * CollApi/P2pApi records are kept NCS_JOB_HORIZON_NS of their file's time for their Coll/P2p. */
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"
#include "util/num.h"

typedef struct {
  uint32_t thread;
  uint64_t id, ts, count;
  int64_t root;
  const char *dtype;
} api_t;

typedef struct { /* one file in a merged pass */
  ncs_reader_t *r;
  uint32_t proc, seg;
  int64_t key;   /* the latest event time seen, in job time (the heap's order) */
  uint64_t tmax; /* the latest event time seen (monotonic) */
  /* CollApi/P2pApi by id: a FIFO of sequence numbers; the slot of sequence q is q % capapis, so
   * growing the ring never renumbers what the map holds */
  hmap_t api;
  api_t *apis;
  size_t capapis;
  uint64_t head, tail;
  hmap_t ops; /* Coll/P2p id -> index into held + 1 */
  held_t *held;
  uint64_t *settle; /* per held: 0 not completed, else the file time it is final at */
  size_t nheld, capheld;
  uint32_t *free_;
  size_t nfree, capfree;
  uint32_t *fifo; /* completed held ops in settle order (ring) */
  size_t capfifo, fhead, ftail;
  hmap_t order; /* sends/recvs per (comm, peer, kind, rank) so far */
  /* proxy records (breakdown.c): ProxyOps being read (acc), chained per parent (par: parent id ->
   * first + 1); ProxyOp, ProxyStep and NetPlugin ids -> pk(acc, generation, QP index);
   * NetPlugin ids -> start time */
  acc_t *acc;
  size_t nacc, capacc, naccfree, capaccfree;
  uint32_t *accfree;
  uint64_t acc_sweep;
  hmap_t par, px, sp, np, npt;
  /* NetPlugin STARTs read before their ProxyStep's (the net plugin's thread's records can reach
   * the file first): kept until it comes (pnp: step id -> first + 1, chained; pni: NetPlugin id
   * -> index + 1), given up with the ProxyOps whose parent never came (acc_sweep) */
  struct pnet_s *pnet;
  size_t npnet, cappnet, *pnfree, npnfree, cappnfree;
  hmap_t pnp, pni;
  uint32_t comm_map[NCS_JOB_COMM_INDEX_MAX]; /* comm index -> job comm + 1 */
  int32_t comm_rank[NCS_JOB_COMM_INDEX_MAX];
  uint8_t comm_v7[NCS_JOB_COMM_INDEX_MAX]; /* NCCL called it through ABI v7 or later: userTag */
  /* per comm index: the id of the latest Coll START read (ncs_op_t.prev_id of the next one) */
  uint64_t last_coll[NCS_JOB_COMM_INDEX_MAX];
  kc_src_t kc;  /* KernelCh records of operations not yet checked, and the chains (kch.c) */
  hmap_t launch; /* (thread, ctx) -> its last KernelLaunch start */
  ncs_job_t *job;
} src_t;

/* ------------------------------------------------------------------ finishing an operation */

static int has_gpu(const held_t *h) {
  if (h->gk == NCS_GK_UNKNOWN) return 0; /* its channels cannot be right (kch.c) */
  return (h->cflags & NCS_CF_KERNEL) && h->gpu_stop > h->gpu_start && h->gpu_start;
}

/* how long it took, and from what (model.h, ncs_op_t.timing) */
static void duration(const held_t *h, ncs_op_t *o) {
  if (has_gpu(h)) {
    o->timing = NCS_SRC_KERNEL_GPU, o->duration = (int64_t)(h->gpu_stop - h->gpu_start);
  } else if (h->complete && h->end_ns > h->first_child && h->first_child &&
             !(h->cflags & NCS_CF_NO_CHILDREN) && !h->inferred &&
             (h->gk != NCS_GK_UNKNOWN || (h->cflags & NCS_CF_PROXY))) {
    /* not when its only children are KernelCh that cannot be right: their host times are those
     * of stale slots read at enqueue (kch.c) */
    o->timing = NCS_SRC_PROXY_HOST, o->duration = (int64_t)(h->end_ns - h->first_child);
  } else {
    uint64_t from = h->api_ts ? h->api_ts : h->start_ts;
    o->timing = NCS_SRC_ENQUEUE_HOST;
    o->duration = h->stop_ts > from ? (int64_t)(h->stop_ts - from) : 0;
  }
}

/* the public operation, its times in job time, as it leaves its file */
static void op_finish(const ncs_job_t *j, const held_t *h, ncs_op_t *o) {
  uint32_t p = h->proc;
  *o = (ncs_op_t){.proc = p, .seg = h->seg, .id = h->id, .comm = h->comm, .rank = h->rank,
                  .peer = h->peer, .func = h->func, .dtype = h->dtype, .seq = h->seq,
                  .order = h->order, .count = h->count, .root = h->root, .p2p = h->p2p,
                  .is_send = h->is_send, .unsampled = h->unsampled, .complete = h->complete,
                  .api = h->api_ts != 0, .api_id = h->api_id, .thread = h->thread, .tag = h->tag,
                  .tag_known = h->tag_known,
                  .cflags = h->cflags, .gpu_start = h->gpu_start, .gpu_stop = h->gpu_stop,
                  .inst = SIZE_MAX, .pair = SIZE_MAX};
  o->start = ncs_job_time(j, p, h->start_ts), o->stop = ncs_job_time(j, p, h->stop_ts);
  o->arrival = ncs_job_time(j, p, h->api_ts ? h->api_ts : h->start_ts);
  o->prev_id = h->prev_id;
  o->gk = h->gk, o->inferred = h->inferred;
  o->end = h->complete ? ncs_job_time(j, p, h->end_ns) : 0;
  if (h->complete && h->gk == NCS_GK_REPAIRED && h->gk_seen_end) /* not a stale channel's stop */
    o->end = ncs_job_time(j, p, h->gk_seen_end);
  if (h->inferred) { /* it ended before the later operation's kernel started (or it ended) */
    int64_t b = h->infer_gpu ? ncs_job_gpu_time_seen(j, p, h->infer_gpu, h->infer_seen) : 0;
    o->end = b ? b : ncs_job_time(j, p, h->infer_end);
  }
  if (has_gpu(h)) o->kstart = ncs_job_gpu_time_seen(j, p, h->gpu_start, h->gk_s_seen);
  if (o->kstart) o->kstop = ncs_job_gpu_time_seen(j, p, h->gpu_stop, h->gk_e_seen);
  if (o->kstart) o->gsrc = NCS_GS_KERNELCH;
  duration(h, o);
  const gop_t *g = gpu_op(j, p, h->seg, h->id);
  if (g) { /* CUPTI's kernels are preferred (docs/gpu-truth.md, "Analysis") */
    o->captured = g->captured, o->kernels = g->kernels, o->replays = g->replays;
    if (g->start && g->end > g->start && !jp(j)->kernelch_only) {
      o->gsrc = NCS_GS_CUPTI, o->kstart = ncs_job_time(j, p, g->start);
      o->kstop = ncs_job_time(j, p, g->end);
      o->timing = NCS_SRC_KERNEL_GPU, o->duration = (int64_t)(g->end - g->start);
    }
  }
  int32_t n = h->p2p ? 1 : j->comms[h->comm].nranks;
  o->bytes = ncs_op_bytes(h->func, h->dtype, h->count, n, h->p2p);
}

/* ------------------------------------------------------------------ proxy records */
static uint64_t pk(size_t ai, uint32_t gen, uint32_t q) {
  return ((uint64_t)ai << 40) | ((uint64_t)(gen & 0xFFFFFFu) << 16) | q;
}
/* the ProxyOp a packed value names (and the QP index); NULL when it is gone */
static acc_t *unpk(src_t *S, const hmap_t *m, uint64_t id, uint32_t *q) {
  uint64_t v;
  if (!hm_get(m, id, &v)) return NULL;
  size_t ai = (size_t)(v >> 40);
  if (ai >= S->nacc || !S->acc[ai].used || (S->acc[ai].gen & 0xFFFFFFu) != ((v >> 16) & 0xFFFFFFu))
    return NULL;
  if (q) *q = (uint32_t)(v & 0xFFFF);
  return &S->acc[ai];
}

static void acc_drop(src_t *S, size_t ai) {
  acc_t *a = &S->acc[ai];
  free(a->nq);
  a->nq = NULL, a->nnq = 0, a->capnq = 0, a->used = 0, a->gen++;
  NCS_XGROW(S->accfree, S->capaccfree, S->naccfree + 1);
  S->accfree[S->naccfree++] = (uint32_t)ai;
}

/* the ProxyOps of parent `id` leave with it */
static void acc_drop_parent(src_t *S, uint64_t id) {
  uint64_t v;
  if (!hm_get(&S->par, id, &v)) return;
  for (size_t ai = v - 1;;) {
    uint32_t next = S->acc[ai].next;
    acc_drop(S, ai);
    if (!next) break;
    ai = next - 1;
  }
  hm_del(&S->par, id);
}

/* a NetPlugin START waiting for its ProxyStep's, and its STOP's time if that came too */
typedef struct pnet_s {
  ncs_event_t e;
  uint64_t stop_ts;
  size_t next; /* the next one of the same step + 1 */
  int used;
} pnet_t;

static void pnet_free(src_t *S, size_t i) {
  S->pnet[i].used = 0;
  hm_del(&S->pni, S->pnet[i].e.id);
  NCS_XGROW(S->pnfree, S->cappnfree, S->npnfree + 1);
  S->pnfree[S->npnfree++] = i;
}

/* ProxyOps whose parent never came (lost, or not an operation of a local communicator), and
 * NetPlugin events whose step never came */
static void acc_sweep(src_t *S) {
  S->acc_sweep = S->tmax;
  for (size_t i = 0; i < S->nacc; i++)
    if (S->acc[i].used && S->acc[i].born + (uint64_t)NCS_JOB_HORIZON_NS < S->tmax)
      acc_drop_parent(S, S->acc[i].parent);
  for (size_t i = 0; i < S->npnet; i++)
    if (S->pnet[i].used && S->pnet[i].e.ts + (uint64_t)NCS_JOB_HORIZON_NS < S->tmax) {
      hm_del(&S->pnp, S->pnet[i].e.parent); /* its chain goes with it: all as old */
      pnet_free(S, i);
    }
}

static void acc_clear(src_t *S) {
  for (size_t i = 0; i < S->nacc; i++) free(S->acc[i].nq);
  free(S->acc), free(S->accfree), free(S->pnet), free(S->pnfree);
  S->acc = NULL, S->accfree = NULL, S->nacc = S->capacc = S->naccfree = S->capaccfree = 0;
  S->pnet = NULL, S->pnfree = NULL, S->npnet = S->cappnet = S->npnfree = S->cappnfree = 0;
  hm_clear(&S->par), hm_clear(&S->px), hm_clear(&S->sp), hm_clear(&S->np), hm_clear(&S->npt);
  hm_clear(&S->pnp), hm_clear(&S->pni);
}

/* a NetPlugin START under step v (packed): its QP, and its time when its STOP came already */
static void net_start(src_t *S, acc_t *a, uint64_t v, const ncs_event_t *e, uint64_t stop_ts) {
  uint32_t q = bd_netq(a, e);
  if (q == UINT32_MAX) return;
  if (stop_ts) {
    if (stop_ts >= e->ts) a->nq[q].ns += (int64_t)(stop_ts - e->ts);
    return;
  }
  if (hm_put(&S->np, e->id, (v & ~0xFFFFull) | q) != 0 || hm_put(&S->npt, e->id, e->ts) != 0) ncs_oom();
}

/* the ProxyStep START of step id came: the NetPlugin events that waited for it */
static void net_pending(src_t *S, uint64_t step, acc_t *a, uint64_t v) {
  uint64_t head;
  if (!hm_get(&S->pnp, step, &head)) return;
  hm_del(&S->pnp, step);
  for (size_t i = (size_t)head - 1;;) {
    size_t n = S->pnet[i].next;
    if (S->pnet[i].used) {
      net_start(S, a, v, &S->pnet[i].e, S->pnet[i].stop_ts);
      pnet_free(S, i);
    }
    if (!n) break;
    i = n - 1;
  }
}

static void proxy_start_op(src_t *S, const ncs_event_t *e) {
  if (S->tmax - S->acc_sweep > (uint64_t)NCS_JOB_HORIZON_NS / 8) acc_sweep(S);
  size_t ai;
  if (S->naccfree) {
    ai = S->accfree[--S->naccfree];
  } else {
    if (S->nacc >= (1u << 24)) return;
    NCS_XGROW(S->acc, S->capacc, S->nacc + 1);
    ai = S->nacc++;
    S->acc[ai].gen = 0, S->acc[ai].nq = NULL;
  }
  acc_t *a = &S->acc[ai];
  a->used = 1, a->parent = e->parent, a->born = e->ts, a->nnq = 0, a->capnq = 0;
  bd_link(a, e);
  int created;
  uint64_t *head = hm_ref(&S->par, e->parent, 0, &created);
  if (!head) ncs_oom();
  a->next = (uint32_t)*head, *head = ai + 1;
  if (hm_put(&S->px, e->id, pk(ai, a->gen, 0)) != 0) ncs_oom();
}

static void proxy_event(src_t *S, const ncs_event_t *e) {
  uint32_t q;
  uint64_t v;
  acc_t *a;
  if (e->kind == NCS_REC_START && e->parent_kind != NCS_REF_LOCAL) return; /* PXN: not ours */
  if (e->type == NCS_T_PROXY_OP) {
    if (e->kind == NCS_REC_START) {
      proxy_start_op(S, e);
    } else if (e->kind == NCS_REC_STOP || e->kind == NCS_REC_EXPIRED) {
      if ((a = unpk(S, &S->px, e->id, NULL))) bd_record(&a->lk, e, NCS_T_PROXY_OP);
      hm_del(&S->px, e->id);
    }
  } else if (e->type == NCS_T_PROXY_STEP) {
    if (e->kind == NCS_REC_START) {
      if (!(a = unpk(S, &S->px, e->parent, NULL)) || !hm_get(&S->px, e->parent, &v)) return;
      bd_record(&a->lk, e, NCS_T_PROXY_STEP);
      if (hm_put(&S->sp, e->id, v) != 0) ncs_oom();
      net_pending(S, e->id, a, v);
    } else {
      if ((a = unpk(S, &S->sp, e->id, NULL))) bd_record(&a->lk, e, NCS_T_PROXY_STEP);
      /* also when its ProxyOp is gone (the operation left the file before its steps stopped):
       * the entry would stay for the rest of the file */
      if (e->kind == NCS_REC_STOP || e->kind == NCS_REC_EXPIRED) hm_del(&S->sp, e->id);
    }
  } else if (e->type == NCS_T_NET_PLUGIN) {
    if (e->kind == NCS_REC_START) {
      if ((a = unpk(S, &S->sp, e->parent, NULL)) && hm_get(&S->sp, e->parent, &v)) {
        net_start(S, a, v, e, 0);
        return;
      }
      if (hm_get(&S->sp, e->parent, &v)) return; /* its step's ProxyOp is gone */
      /* its step's START may still come (another thread's records): it waits */
      if (S->tmax - S->acc_sweep > (uint64_t)NCS_JOB_HORIZON_NS / 8) acc_sweep(S);
      size_t i;
      if (S->npnfree) {
        i = S->pnfree[--S->npnfree];
      } else {
        NCS_XGROW(S->pnet, S->cappnet, S->npnet + 1);
        i = S->npnet++;
      }
      uint64_t head = 0;
      hm_get(&S->pnp, e->parent, &head);
      S->pnet[i] = (pnet_t){.e = *e, .stop_ts = 0, .next = (size_t)head, .used = 1};
      if (hm_put(&S->pnp, e->parent, i + 1) != 0 || hm_put(&S->pni, e->id, i + 1) != 0) ncs_oom();
    } else if (e->kind == NCS_REC_STOP) {
      if ((a = unpk(S, &S->np, e->id, &q)) && q < a->nnq && hm_get(&S->npt, e->id, &v) && e->ts >= v)
        a->nq[q].ns += (int64_t)(e->ts - v);
      else if (hm_get(&S->pni, e->id, &v)) /* its START waits for its step: the STOP waits with it */
        S->pnet[v - 1].stop_ts = e->ts;
      hm_del(&S->np, e->id), hm_del(&S->npt, e->id);
    }
  }
}

/* an operation leaving its file takes its ProxyOps along (breakdown.c) */
static void proxy_take(const ncs_job_t *j, src_t *S, const held_t *h, ncs_op_t *o) {
  acc_t *stack[64], **v = stack;
  size_t n = 0, cap = 64;
  uint64_t head;
  if (hm_get(&S->par, o->id, &head))
    for (size_t ai = head - 1;;) {
      if (n == cap) {
        acc_t **w = ncs_xrealloc(NULL, 2 * cap * sizeof *w);
        memcpy(w, v, n * sizeof *v);
        if (v != stack) free(v);
        v = w, cap *= 2;
      }
      v[n++] = &S->acc[ai];
      if (!S->acc[ai].next) break;
      ai = S->acc[ai].next - 1;
    }
  bd_finish(j, h, o, v, n);
  if (v != stack) free(v);
  acc_drop_parent(S, o->id);
}

/* an operation leaves its file: to its instance or its pair */
static void release(ncs_job_t *j, src_t *S, uint32_t hi) {
  jpriv_t *P = jp(j);
  ncs_op_t o;
  const held_t *h = &S->held[hi];
  op_finish(j, h, &o);
  proxy_take(j, S, h, &o);
  if (!P->hostpass) { /* what checking its KernelCh found, per file (kch.c) */
    ncs_job_gchk_t *g = &j->procs[h->proc].gchk;
    g->ops += h->gk != NCS_GK_NONE, g->ok += h->gk == NCS_GK_OK;
    g->repaired += h->gk == NCS_GK_REPAIRED, g->unknown += h->gk == NCS_GK_UNKNOWN;
    g->channels += h->gchk.channels, g->ch_bad += h->gchk.ch_bad;
    g->ch_before_prev += h->gchk.ch_before_prev, g->ch_before_launch += h->gchk.ch_before_launch;
    g->ch_future += h->gchk.ch_future, g->ch_after_next += h->gchk.ch_after_next;
    g->ch_disagree += h->gchk.ch_disagree, g->ch_settling += h->gchk.ch_settling;
    g->claims_rejected += h->gchk.claim_rejected, g->inferred += h->gchk.inferred;
  }
  hm_del(&S->ops, o.id);
  S->settle[hi] = 0;
  NCS_XGROW(S->free_, S->capfree, S->nfree + 1);
  S->free_[S->nfree++] = hi;
  P->held--, P->pending--;
  if (!P->hostpass) ranges_op(j, &o);
  if (!P->hostpass && P->sel) sel_op(j, &o); /* the filter's --range and --tag */
  if (o.p2p)
    match_p2p(j, &o);
  else
    match_coll(j, &o);
}

static void release_cb(ncs_job_t *j, void *arg, uint32_t hi) { release(j, arg, hi); }

/* op hi settled: its chain checks and hands on what it can (kch.c) */
static void settled(ncs_job_t *j, src_t *S, uint32_t hi, int final) {
  held_t *h = &S->held[hi];
  if (!h->ready) h->ready = 1, h->ready_ts = S->tmax;
  chain_drain(j, &S->kc, chain_of(&S->kc, h->comm, h->rank), S->held, S->tmax, final, release_cb, S);
}

/* every held op of the file (the end of a segment or of the file): each chain in START order, so
 * that instances finish about in seq order (the throughput pairs them with their neighbours) */
static void release_all(ncs_job_t *j, src_t *S) {
  for (size_t c = 0; c < S->kc.nchains; c++)
    chain_drain(j, &S->kc, &S->kc.chains[c], S->held, S->tmax, 1, release_cb, S);
  chains_free(&S->kc);
  S->fhead = S->ftail = 0;
}

/* ------------------------------------------------------------------ API records, the settle FIFO */
static void api_push(src_t *S, const api_t *x) {
  if (S->tail - S->head == S->capapis) { /* full: double, each at its sequence's new slot */
    size_t c = S->capapis ? 2 * S->capapis : 64;
    api_t *n = ncs_xrealloc(NULL, c * sizeof *n);
    for (uint64_t q = S->head; q < S->tail; q++) n[q % c] = S->apis[q % S->capapis];
    free(S->apis);
    S->apis = n, S->capapis = c;
  }
  S->apis[S->tail % S->capapis] = *x;
  if (hm_put(&S->api, x->id, S->tail++) != 0) ncs_oom();
  /* drop the ones older than the horizon: a Coll finds its parent soon after it */
  while (S->head < S->tail && S->apis[S->head % S->capapis].ts + (uint64_t)NCS_JOB_HORIZON_NS < S->tmax) {
    uint64_t q;
    const api_t *h = &S->apis[S->head % S->capapis];
    if (hm_get(&S->api, h->id, &q) && q == S->head) hm_del(&S->api, h->id);
    S->head++;
  }
}

static const api_t *api_get(const src_t *S, uint64_t id) {
  uint64_t q;
  if (!hm_get(&S->api, id, &q) || q < S->head || q >= S->tail) return NULL;
  return &S->apis[q % S->capapis];
}

static void fifo_push(src_t *S, uint32_t hi) {
  if (S->ftail - S->fhead == S->capfifo) {
    size_t c = S->capfifo ? 2 * S->capfifo : 64;
    uint32_t *n = ncs_xrealloc(NULL, c * sizeof *n);
    for (size_t i = S->fhead; i < S->ftail; i++) n[i - S->fhead] = S->fifo[i % S->capfifo];
    free(S->fifo);
    S->fifo = n, S->ftail -= S->fhead, S->fhead = 0, S->capfifo = c;
  }
  S->fifo[S->ftail++ % S->capfifo] = hi;
}

/* ------------------------------------------------------------------ records */
static uint32_t held_slot(src_t *S) {
  if (S->nfree) return S->free_[--S->nfree];
  size_t cap = S->capheld;
  NCS_XGROW(S->held, S->capheld, S->nheld + 1);
  if (S->capheld != cap) S->settle = ncs_xrealloc(S->settle, S->capheld * sizeof *S->settle);
  return (uint32_t)S->nheld++;
}

/* the k-th Send (Recv) of this rank to (from) peer on the communicator */
static uint64_t p2p_order(src_t *S, const held_t *h) {
  uint64_t key = hm_mix(((uint64_t)h->comm << 40) ^ ((uint64_t)(uint32_t)h->peer << 1) ^
                        h->is_send ^ ((uint64_t)(uint32_t)h->rank << 20));
  int created;
  uint64_t *cnt = hm_ref(&S->order, key, 0, &created);
  if (!cnt) ncs_oom();
  return (*cnt)++;
}

static const char *fstr(ncs_job_t *j, const ncs_event_t *e, int i) {
  return ncs_pool_str(&j->strs, e->fstr[i] ? e->fstr[i] : "");
}

static void start_op(ncs_job_t *j, src_t *S, const ncs_event_t *e) {
  jpriv_t *P = jp(j);
  uint32_t hi = held_slot(S);
  held_t *h = &S->held[hi];
  *h = (held_t){.proc = S->proc, .seg = S->seg, .comm = S->comm_map[e->ctx] - 1,
                .rank = S->comm_rank[e->ctx], .id = e->id, .start_ts = e->ts, .thread = e->thread,
                .unsampled = (e->flags & NCS_SF_UNSAMPLED) != 0};
  /* the userTag: known when NCCL called the communicator through ABI v7 and the file has the field
   * (format 1.3); the plugin writes 0 for older ABIs, which is "unknown", not "untagged" */
  int tf = e->type == NCS_T_COLL ? NCS_F(Coll, userTag) : NCS_F(P2p, userTag);
  if (S->comm_v7[e->ctx] && NCS_HAS(e, tf)) h->tag_known = 1, h->tag = e->f[tf];
  S->settle[hi] = 0;
  if (e->type == NCS_T_COLL) {
    h->seq = e->f[NCS_F(Coll, seqNumber)], h->func = fstr(j, e, NCS_F(Coll, func));
    h->count = e->f[NCS_F(Coll, count)], h->root = (int64_t)e->f[NCS_F(Coll, root)];
    h->dtype = fstr(j, e, NCS_F(Coll, datatype));
  } else {
    h->p2p = 1, h->func = fstr(j, e, NCS_F(P2p, func)), h->dtype = fstr(j, e, NCS_F(P2p, datatype));
    h->count = e->f[NCS_F(P2p, count)], h->peer = (int32_t)(int64_t)e->f[NCS_F(P2p, peer)];
    h->is_send = ncs_is_func(h->func, "Send");
    h->order = p2p_order(S, h);
  }
  const api_t *x = e->parent_kind == NCS_REF_LOCAL ? api_get(S, e->parent) : NULL;
  if (x) { /* the user's count and datatype (NCCL rewrites AllGather/Broadcast to bytes) */
    h->api_ts = x->ts, h->count = x->count, h->dtype = x->dtype, h->thread = x->thread;
    h->api_id = x->id;
    if (!h->p2p) h->root = x->root;
  }
  int gi = e->type == NCS_T_COLL ? NCS_F(Coll, parentGroup) : NCS_F(P2p, parentGroup);
  h->group = e->fref_kind[gi] == NCS_REF_LOCAL ? e->f[gi] : 0;
  h->nch = (uint32_t)e->f[e->type == NCS_T_COLL ? NCS_F(Coll, nChannels) : NCS_F(P2p, nChannels)];
  uint64_t old;
  if (hm_get(&S->launch, hm_mix2(e->thread, e->ctx), &old)) h->launch_ts = old;
  if (hm_get(&S->ops, e->id, &old)) settled(j, S, (uint32_t)(old - 1), 1); /* id reused */
  h = &S->held[hi];
  if (hm_put(&S->ops, e->id, hi + 1) != 0) ncs_oom();
  if (!h->p2p) h->prev_id = S->last_coll[e->ctx], S->last_coll[e->ctx] = e->id;
  chain_push(chain_of(&S->kc, h->comm, h->rank), hi);
  P->held++, P->pending++;
  match_peak(j);
}

static void api_start(ncs_job_t *j, src_t *S, const ncs_event_t *e) {
  int c = e->type == NCS_T_COLL_API;
  const char *dt = e->fstr[c ? NCS_F(CollApi, datatype) : NCS_F(P2pApi, datatype)];
  api_t x = {.id = e->id, .ts = e->ts, .thread = e->thread,
             .count = e->f[c ? NCS_F(CollApi, count) : NCS_F(P2pApi, count)],
             .dtype = ncs_pool_str(&j->strs, dt ? dt : ""),
             .root = c ? (int64_t)e->f[NCS_F(CollApi, root)] : 0};
  api_push(S, &x);
}

static void completion(src_t *S, const ncs_event_t *e) {
  uint64_t oi;
  if (!hm_get(&S->ops, e->id, &oi)) return;
  uint32_t hi = (uint32_t)(oi - 1);
  if (e->kind == NCS_REC_COMPLETE && !S->held[hi].gk_claim_rejected) { /* the last one wins */
    held_t *h = &S->held[hi];
    h->complete = 1, h->cflags = e->cflags, h->end_ns = e->end_ns;
    h->first_child = e->first_child_ns, h->gpu_start = e->gpu_start, h->gpu_stop = e->gpu_stop;
  }
  if (!S->settle[hi]) { /* a revision within the settle time replaces it in place */
    S->settle[hi] = S->tmax + NCS_JOB_SETTLE_NS + 1;
    fifo_push(S, hi);
  }
}

static void handle_event(ncs_job_t *j, src_t *S, const ncs_event_t *e) {
  int op = e->type == NCS_T_COLL || e->type == NCS_T_P2P;
  uint64_t oi;
  if (e->type == NCS_T_PROXY_OP || e->type == NCS_T_PROXY_STEP || e->type == NCS_T_NET_PLUGIN) {
    if (!jp(j)->hostpass) proxy_event(S, e);
  } else if (e->type == NCS_T_KERNEL_CH) {
    kc_event(&S->kc, e, S->tmax);
  } else if (e->type == NCS_T_KERNEL_LAUNCH && e->kind == NCS_REC_START) {
    if (hm_put(&S->launch, hm_mix2(e->thread, e->ctx), e->ts) != 0) ncs_oom();
  } else if (e->kind == NCS_REC_START) {
    /* a record that names a function, datatype or communicator lost with damage is no operation
     * to match or compare: left out, counted by the coverage (ncs_job_cov_t.damaged_ops) */
    if (e->lost && (op || e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API)) return;
    if ((e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API) && !jp(j)->hostpass)
      api_start(j, S, e);
    else if (op && e->ctx_kind == NCS_CTX_LOCAL && e->ctx < NCS_JOB_COMM_INDEX_MAX &&
             S->comm_map[e->ctx] && !(jp(j)->hostpass && e->type == NCS_T_P2P))
      start_op(j, S, e);
  } else if (op && e->kind == NCS_REC_STOP) {
    if (hm_get(&S->ops, e->id, &oi)) S->held[oi - 1].stop_ts = e->ts;
  } else if (op && (e->kind == NCS_REC_COMPLETE || e->kind == NCS_REC_EXPIRED)) {
    completion(S, e);
  }
}

static void handle_item(ncs_job_t *j, src_t *S, const ncs_item_t *it) {
  switch (it->what) {
  case NCS_ITEM_SEGMENT:
    release_all(j, S);
    hm_clear(&S->api), S->head = S->tail = 0;
    acc_clear(S);
    kc_free(&S->kc), hm_clear(&S->launch);
    S->seg = ncs_reader_segment(S->r) ? ncs_reader_segment(S->r)->index : 0;
    memset(S->comm_map, 0, sizeof S->comm_map);
    memset(S->last_coll, 0, sizeof S->last_coll);
    memset(S->comm_v7, 0, sizeof S->comm_v7);
    break;
  case NCS_ITEM_COMM:
    if (it->comm.index < NCS_JOB_COMM_INDEX_MAX) {
      const ncs_job_member_t *m = ncs_job_member(j, S->proc, S->seg, it->comm.index);
      S->comm_map[it->comm.index] = m ? m->comm + 1 : 0;
      S->comm_rank[it->comm.index] = it->comm.rank;
      S->comm_v7[it->comm.index] = it->comm.abi_version >= 7;
    }
    break;
  case NCS_ITEM_EVENT:
    if (it->ev.ts > S->tmax && it->ev.kind != NCS_REC_COMPLETE && it->ev.kind != NCS_REC_EXPIRED) {
      S->tmax = it->ev.ts;
      S->key = ncs_job_time(j, S->proc, S->tmax);
    }
    handle_event(j, S, &it->ev);
    while (S->fhead < S->ftail) { /* settled completions */
      uint32_t hi = S->fifo[S->fhead % S->capfifo];
      if (S->settle[hi] > S->tmax) break;
      S->fhead++;
      if (S->settle[hi]) S->settle[hi] = 0, settled(j, S, hi, 0); /* 0: released already */
    }
    break;
  case NCS_ITEM_RANGE:
  case NCS_ITEM_RANGE_STATE:
  case NCS_ITEM_GPU:
  case NCS_ITEM_GPU_STATE:
    if (!jp(j)->hostpass) {
      int flight = ncs_reader_flight(S->r) != NULL;
      ranges_item(j, S->proc, S->seg, it, flight);
      if (jp(j)->sel) sel_item(j, S->proc, it, flight);
    }
    break;
  default: break;
  }
}

static void src_free(src_t *S) {
  if (S->r) ncs_reader_close(S->r);
  hm_free(&S->api), hm_free(&S->ops), hm_free(&S->order);
  acc_clear(S);
  chains_free(&S->kc), kc_free(&S->kc), hm_free(&S->launch);
  hm_free(&S->par), hm_free(&S->px), hm_free(&S->sp), hm_free(&S->np), hm_free(&S->npt);
  hm_free(&S->pnp), hm_free(&S->pni);
  free(S->apis), free(S->held), free(S->settle), free(S->free_), free(S->fifo);
}

/* ------------------------------------------------------------------ the merged pass */
static void heap_down(src_t **h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && h[l]->key < h[m]->key) m = l;
    if (l + 1 < n && h[l + 1]->key < h[m]->key) m = l + 1;
    if (m == i) return;
    src_t *t = h[i];
    h[i] = h[m], h[m] = t, i = m;
  }
}

/* the merged time moved on: close what the horizon passed, every eighth of it */
static void advance(ncs_job_t *j, int64_t key) {
  jpriv_t *P = jp(j);
  if (key <= P->now) return;
  P->now = key;
  if (P->last_sweep == INT64_MIN) P->last_sweep = P->now;
  if ((uint64_t)P->now - (uint64_t)P->last_sweep > (uint64_t)NCS_JOB_HORIZON_NS / 8) match_sweep(j);
}

void merge_pass(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  src_t *S = ncs_xcalloc(j->nprocs, sizeof *S);
  src_t **h = ncs_xcalloc(j->nprocs, sizeof *h);
  size_t nh = 0;
  P->now = INT64_MIN, P->last_sweep = INT64_MIN;
  P->srcs = S;
  hm_clear(&P->qtail), P->nqt = 0; /* the queue's tails (match.c) start again with each pass */
  if (!P->hostpass) sel_stream_begin(j);
  for (uint32_t i = 0; i < j->nprocs; i++) {
    char err[256];
    S[i].proc = i, S[i].key = INT64_MIN;
    if (j->procs[i].readable && (S[i].r = ncs_reader_open(j->procs[i].path, err, sizeof err)))
      h[nh++] = &S[i];
  }
  ncs_item_t it;
  while (nh) {
    src_t *s = h[0];
    if (ncs_reader_next(s->r, &it) != 1) {
      release_all(j, s);
      ncs_reader_close(s->r), s->r = NULL;
      h[0] = h[--nh];
    } else {
      handle_item(j, s, &it);
    }
    heap_down(h, nh, 0);
    if (nh) advance(j, h[0]->key);
  }
  match_end(j);
  if (!P->hostpass) ranges_finish(j);
  if (!P->hostpass) sel_finish(j); /* after ranges_finish: it reads the files' range counters */
  for (uint32_t i = 0; i < j->nprocs; i++) src_free(&S[i]);
  free(S), free(h);
  P->srcs = NULL;
}

uint64_t merge_oldest(const ncs_job_t *j, uint32_t proc) {
  const src_t *S = (const src_t *)jp(j)->srcs + proc;
  /* records of a thread come in time order, but chunks overlap a little: a horizon back */
  uint64_t t = S->tmax > (uint64_t)NCS_JOB_HORIZON_NS ? S->tmax - (uint64_t)NCS_JOB_HORIZON_NS : 0;
  for (size_t i = 0; i < S->ops.cap; i++)
    if (S->ops.used[i]) {
      const held_t *h = &S->held[S->ops.vals[i] - 1];
      uint64_t a = h->api_ts ? h->api_ts : h->start_ts;
      if (a < t) t = a;
    }
  return t;
}
