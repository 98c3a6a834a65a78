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
  uint32_t comm_map[NCS_JOB_COMM_INDEX_MAX]; /* comm index -> job comm + 1 */
  int32_t comm_rank[NCS_JOB_COMM_INDEX_MAX];
} src_t;

/* ------------------------------------------------------------------ finishing an operation */

static int has_gpu(const held_t *h) {
  return (h->cflags & NCS_CF_KERNEL) && h->gpu_stop > h->gpu_start && h->gpu_start;
}

/* how long it took, and from what (model.h, ncs_op_t.timing) */
static void duration(const held_t *h, ncs_op_t *o) {
  if (has_gpu(h)) {
    o->timing = NCS_SRC_KERNEL_GPU, o->duration = (int64_t)(h->gpu_stop - h->gpu_start);
  } else if (h->complete && h->end_ns > h->first_child && h->first_child &&
             !(h->cflags & NCS_CF_NO_CHILDREN)) {
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
                  .api = h->api_ts != 0, .thread = h->thread,
                  .cflags = h->cflags, .gpu_start = h->gpu_start, .gpu_stop = h->gpu_stop,
                  .inst = SIZE_MAX, .pair = SIZE_MAX};
  o->start = ncs_job_time(j, p, h->start_ts), o->stop = ncs_job_time(j, p, h->stop_ts);
  o->arrival = ncs_job_time(j, p, h->api_ts ? h->api_ts : h->start_ts);
  o->end = h->complete ? ncs_job_time(j, p, h->end_ns) : 0;
  if (has_gpu(h)) o->kstart = ncs_job_gpu_time(j, p, h->gpu_start);
  if (o->kstart) o->kstop = ncs_job_gpu_time(j, p, h->gpu_stop);
  duration(h, o);
  int32_t n = h->p2p ? 1 : j->comms[h->comm].nranks;
  o->bytes = ncs_op_bytes(h->func, h->dtype, h->count, n, h->p2p);
}

/* an operation leaves its file: to its instance or its pair */
static void release(ncs_job_t *j, src_t *S, uint32_t hi) {
  jpriv_t *P = jp(j);
  ncs_op_t o;
  op_finish(j, &S->held[hi], &o);
  hm_del(&S->ops, o.id);
  S->settle[hi] = 0;
  NCS_XGROW(S->free_, S->capfree, S->nfree + 1);
  S->free_[S->nfree++] = hi;
  P->held--, P->pending--;
  if (!P->hostpass) ranges_op(j, &o);
  if (o.p2p)
    match_p2p(j, &o);
  else
    match_coll(j, &o);
}

/* every held op of the file (the end of a segment or of the file), in START (id) order, so that
 * instances finish about in seq order (the throughput pairs them with their neighbours) */
static void release_all(ncs_job_t *j, src_t *S) {
  size_t n = 0;
  uint64_t *idx = ncs_xrealloc(NULL, (S->ops.n + 1) * 2 * sizeof *idx); /* (id, held index) */
  for (size_t i = 0; i < S->ops.cap; i++)
    if (S->ops.used[i]) idx[2 * n] = S->ops.keys[i], idx[2 * n + 1] = S->ops.vals[i] - 1, n++;
  ncs_sort(idx, n, 2 * sizeof *idx, ncs_cmp_u64);
  for (size_t i = 0; i < n; i++) release(j, S, (uint32_t)idx[2 * i + 1]);
  free(idx);
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
    if (!h->p2p) h->root = x->root;
  }
  uint64_t old;
  if (hm_get(&S->ops, e->id, &old)) release(j, S, (uint32_t)(old - 1)); /* id reused */
  if (hm_put(&S->ops, e->id, hi + 1) != 0) ncs_oom();
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
  if (e->kind == NCS_REC_COMPLETE) { /* the last one wins: revisions */
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
  if (e->kind == NCS_REC_START) {
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
    S->seg = ncs_reader_segment(S->r) ? ncs_reader_segment(S->r)->index : 0;
    memset(S->comm_map, 0, sizeof S->comm_map);
    break;
  case NCS_ITEM_COMM:
    if (it->comm.index < NCS_JOB_COMM_INDEX_MAX) {
      const ncs_job_member_t *m = ncs_job_member(j, S->proc, S->seg, it->comm.index);
      S->comm_map[it->comm.index] = m ? m->comm + 1 : 0;
      S->comm_rank[it->comm.index] = it->comm.rank;
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
      if (S->settle[hi]) release(j, S, hi); /* 0: released already (its id was reused) */
    }
    break;
  case NCS_ITEM_RANGE:
  case NCS_ITEM_RANGE_STATE:
  case NCS_ITEM_GPU:
  case NCS_ITEM_GPU_STATE:
    if (!jp(j)->hostpass) ranges_item(j, S->proc, S->seg, it, ncs_reader_flight(S->r) != NULL);
    break;
  default: break;
  }
}

static void src_free(src_t *S) {
  if (S->r) ncs_reader_close(S->r);
  hm_free(&S->api), hm_free(&S->ops), hm_free(&S->order);
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
  for (uint32_t i = 0; i < j->nprocs; i++) src_free(&S[i]);
  free(S), free(h);
}
