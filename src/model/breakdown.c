/* breakdown.c - where an operation's proxy time went, and an instance's bottleneck
 * (docs/report.md, "Breakdown"; model.h, ncs_link_t and ncs_bd_t).
 *
 * While a Coll/P2p is held in its file (merge.c), its ProxyOps become links, and the records of
 * their ProxySteps split each link's active time by the state of its oldest open step: NCCL stops
 * a ProxyOp's steps in order, so the oldest one is what holds the pipeline, and the phases of a
 * link add up to its time from the first step's start to the last step's stop. NetPlugin records
 * under the steps add up per IB QP or socket. When the instance is final (match.c), its ranks'
 * links give the instance's breakdown and its label. */
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"
#include "util/num.h"

const char *const ncs_ph_names[NCS_PH_N] = {"gpu_wait", "peer_wait", "network", "flush"};
const char *const ncs_bn_names[NCS_BN_N] = {"cannot_tell", "launch", "gpu_wait", "peer_wait",
                                            "network",     "flush",  "mixed"};
const char *const ncs_bw_text[NCS_BW_N] = {
    "",
    "ProxyStep events were not recorded (NCCLSCOPE_EVENTS lacks proxystep)",
    "no rank had network proxy work (transfers within a node, or no ProxyOps)",
    "proxy records were lost while it ran",
    "not every rank recorded it",
};

/* the phase a ProxyStep state starts; -1 when it is not one */
static int state_phase(uint32_t st) {
  switch (st) {
  case 8: return NCS_PH_GPU;   /* SendGPUWait */
  case 12: return NCS_PH_GPU;  /* RecvGPUWait: device-side consumption, unpack included */
  case 20: return NCS_PH_PEER; /* SendPeerWait_v4 */
  case 9: return NCS_PH_NET;   /* SendWait */
  case 10: return NCS_PH_NET;  /* RecvWait */
  case 11: return NCS_PH_FLUSH; /* RecvFlushWait */
  default: return -1;
  }
}

void bd_link(acc_t *a, const ncs_event_t *e) {
  memset(&a->lk, 0, sizeof a->lk);
  a->lk.l.peer = (int32_t)(int64_t)e->f[NCS_F(ProxyOp, peer)];
  a->lk.l.channel = (uint16_t)e->f[NCS_F(ProxyOp, channelId)];
  a->lk.l.is_send = (int64_t)e->f[NCS_F(ProxyOp, isSend)] != 0;
}

static int same_q(const ncs_netq_t *x, const ncs_netq_t *y) {
  return x->kind == y->kind && x->device == y->device && x->qp == y->qp;
}

uint32_t bd_netq(acc_t *a, const ncs_event_t *e) {
  uint32_t type = (uint32_t)e->f[NCS_F(NetPlugin, id)] & 0xFFFF0000u;
  int dec = e->f[NCS_F(NetPlugin, decoded)] != 0;
  ncs_netq_t q = {.kind = 0, .device = -1, .qp = -1};
  if (dec && type == 0x10000u)
    q.kind = 1, q.device = (int32_t)(int64_t)e->f[NCS_F(NetPlugin, device)],
    q.qp = (int64_t)e->f[NCS_F(NetPlugin, qpNum)];
  else if (dec && type == 0x20000u)
    q.kind = 2, q.qp = (int64_t)e->f[NCS_F(NetPlugin, fd)];
  uint32_t i = 0;
  while (i < a->nnq && !same_q(&a->nq[i], &q)) i++;
  if (i == a->nnq) {
    if (a->nnq >= 0xFFFF) return UINT32_MAX;
    if (a->nnq == a->capnq) { /* most ProxyOps use one or two QPs: not NCS_XGROW's 16 */
      a->capnq = a->capnq ? 2 * a->capnq : 2;
      a->nq = ncs_xrealloc(a->nq, a->capnq * sizeof *a->nq);
    }
    a->nq[a->nnq++] = q;
  }
  a->nq[i].events++;
  if (dec) a->nq[i].bytes += e->f[NCS_F(NetPlugin, length)];
  return i;
}

/* the time since the link's last record goes to the state of its oldest open step */
static void lk_advance(lk_t *k, uint64_t ts) {
  if (ts <= k->last_ts) return;
  if (k->nopen && k->last_ts && k->open_ph[0] >= 0)
    k->l.ph[k->open_ph[0]] += (int64_t)(ts - k->last_ts);
  k->last_ts = ts;
}

static int lk_find(const lk_t *k, uint64_t id) {
  for (int i = 0; i < k->nopen; i++)
    if (k->open_id[i] == id) return i;
  return -1;
}

void bd_record(lk_t *k, const ncs_event_t *e, uint32_t type) {
  if (type == NCS_T_PROXY_OP) { /* its stop or expiry */
    if (e->kind == NCS_REC_EXPIRED) k->l.open = 1;
    return;
  }
  lk_advance(k, e->ts);
  int at = lk_find(k, e->id);
  switch (e->kind) {
  case NCS_REC_START:
    if (!k->l.t0 || (int64_t)e->ts < k->l.t0) k->l.t0 = (int64_t)e->ts;
    if ((int64_t)e->ts > k->l.t1) k->l.t1 = (int64_t)e->ts;
    k->l.steps++;
    if (k->nopen < LK_OPEN) k->open_id[k->nopen] = e->id, k->open_ph[k->nopen++] = -1;
    break;
  case NCS_REC_STATE: {
    int ph = state_phase(e->state);
    if (at >= 0 && ph >= 0) k->open_ph[at] = (int8_t)ph;
    if ((e->state == 9 && k->l.is_send) || (e->state == 11 && !k->l.is_send)) {
      k->l.bytes += e->arg0; /* transSize is valid at SendWait and RecvFlushWait */
      if (e->state == 11 && !k->l.first_data) k->l.first_data = (int64_t)e->ts;
    }
    if ((int64_t)e->ts > k->l.t1) k->l.t1 = (int64_t)e->ts;
    break;
  }
  case NCS_REC_STOP:
    if ((int64_t)e->ts > k->l.t1) k->l.t1 = (int64_t)e->ts;
    /* fall through */
  default:
    if (e->kind == NCS_REC_EXPIRED) k->l.open = 1;
    if (at >= 0) {
      memmove(k->open_id + at, k->open_id + at + 1, (size_t)(k->nopen - at - 1) * sizeof *k->open_id);
      memmove(k->open_ph + at, k->open_ph + at + 1, (size_t)(k->nopen - at - 1));
      k->nopen--;
    }
    break;
  }
}

void bd_finish(const ncs_job_t *j, const held_t *h, ncs_op_t *o, acc_t *const *acc, size_t n) {
  o->links = NULL, o->netq = NULL, o->nlinks = o->nnetq = 0;
  uint64_t to = h->end_ns > h->stop_ts ? h->end_ns : h->stop_ts;
  if (n) {
    ncs_link_t *L = ncs_xrealloc(NULL, n * sizeof *L);
    ncs_netq_t *Q = NULL;
    size_t nq = 0, capq = 0;
    for (size_t i = 0; i < n; i++) {
      L[i] = acc[i]->lk.l;
      if (acc[i]->lk.nopen) L[i].open = 1;
      if ((uint64_t)L[i].t1 > to) to = (uint64_t)L[i].t1;
      L[i].t0 = ncs_job_time(j, h->proc, (uint64_t)L[i].t0);
      L[i].t1 = ncs_job_time(j, h->proc, (uint64_t)L[i].t1);
      L[i].first_data = ncs_job_time(j, h->proc, (uint64_t)L[i].first_data);
      for (uint32_t q = 0; q < acc[i]->nnq; q++) { /* one entry per QP over the ProxyOps */
        const ncs_netq_t *x = &acc[i]->nq[q];
        size_t k = 0;
        while (k < nq && !same_q(&Q[k], x)) k++;
        if (k == nq) {
          NCS_XGROW(Q, capq, nq + 1);
          Q[nq++] = (ncs_netq_t){.kind = x->kind, .device = x->device, .qp = x->qp};
        }
        Q[k].events += x->events, Q[k].bytes += x->bytes, Q[k].ns += x->ns;
      }
    }
    o->links = L, o->nlinks = (uint32_t)n;
    o->netq = Q, o->nnetq = (uint32_t)nq;
  }
  uint32_t types = (1u << NCS_T_PROXY_OP) | (1u << NCS_T_PROXY_STEP);
  o->proxy_lost = ncs_job_lost(j, h->proc, h->start_ts, to ? to : UINT64_MAX, NCS_JL_RECORDED,
                               types) != NULL;
}

void bd_op_free(ncs_op_t *o) {
  free((void *)o->links), free((void *)o->netq);
  o->links = NULL, o->netq = NULL, o->nlinks = o->nnetq = 0;
}

/* ------------------------------------------------------------------ an instance */
static int recorded_steps(const ncs_job_t *j, const ncs_op_t *o) {
  const ncs_job_proc_t *p = &j->procs[o->proc];
  return o->seg < p->nsegs && (p->segs[o->seg].mask & (1u << NCS_T_PROXY_STEP));
}

/* Peer wait dominates: whom did the ranks wait for, and why? A rank W that spent, in one phase
 * (GPU, network, flush), at least NCS_BD_OWN times what the median rank spent there, that phase
 * being most of W's own time, and whose extra time there is at least a quarter of the peer wait,
 * is what the others waited for: that phase is the label, W its rank (the largest extra time
 * wins). Otherwise peer_wait, for the rank that holds at least half of the peer wait (-1: no one
 * rank, the ranks waited for each other). */
#define NCS_BD_OWN 2.0
static void peer_root(ncs_bd_t *b, int32_t nr, const int64_t *waited, const int64_t *own) {
  int64_t best = 0, all = 0, top = 0;
  for (int32_t r = 0; r < nr; r++) {
    all += waited[r];
    if (waited[r] > best) best = waited[r], b->wait_rank = r;
  }
  if (2 * best < all) b->wait_rank = -1;
  int64_t *col = ncs_xcalloc(nr > 0 ? (size_t)nr : 1, sizeof *col);
  static const int phs[3] = {NCS_PH_GPU, NCS_PH_NET, NCS_PH_FLUSH};
  static const int lab[3] = {NCS_BN_GPU, NCS_BN_NET, NCS_BN_FLUSH};
  for (int i = 0; i < 3; i++) {
    int p = phs[i];
    for (int32_t r = 0; r < nr; r++) col[r] = own[(size_t)r * NCS_PH_N + p];
    ncs_sort(col, (size_t)nr, sizeof *col, ncs_cmp_i64);
    int64_t med = nr > 0 ? col[(nr - 1) / 2] : 0;
    for (int32_t r = 0; r < nr; r++) {
      const int64_t *m = own + (size_t)r * NCS_PH_N;
      int64_t rest = m[NCS_PH_GPU] + m[NCS_PH_NET] + m[NCS_PH_FLUSH], extra = m[p] - med;
      if (rest > 0 && (double)m[p] >= NCS_BD_DOMINANT * (double)rest &&
          (double)m[p] >= NCS_BD_OWN * (double)med && 4 * extra >= b->ph[NCS_PH_PEER] && extra > top)
        top = extra, b->label = lab[i], b->wait_rank = r;
    }
  }
  free(col);
  (void)waited;
}

void bd_instance(const ncs_job_t *j, ncs_inst_t *in, const ncs_op_t *ops) {
  ncs_bd_t *b = &in->bd;
  memset(b, 0, sizeof *b);
  b->wait_rank = -1;
  int32_t nr = j->comms[in->comm].nranks;
  size_t nn = nr > 0 ? (size_t)nr : 1;
  const ncs_op_t **by = ncs_xcalloc(nn, sizeof *by);
  int64_t *waited = ncs_xcalloc(nn, sizeof *waited); /* peer wait for rank */
  int64_t *own = ncs_xcalloc(nn * NCS_PH_N, sizeof *own); /* per rank: its phases */
  int any_rec = 0, lost = 0;
  for (uint32_t k = 0; k < in->nops; k++)
    if (ops[k].rank >= 0 && ops[k].rank < nr && !by[ops[k].rank]) by[ops[k].rank] = &ops[k];
  for (uint32_t k = 0; k < in->nops; k++) {
    const ncs_op_t *o = &ops[k];
    any_rec |= recorded_steps(j, o);
    lost |= o->proxy_lost;
    if (!o->nlinks) continue;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (uint32_t l = 0; l < o->nlinks; l++) {
      const ncs_link_t *L = &o->links[l];
      int64_t ph[NCS_PH_N];
      memcpy(ph, L->ph, sizeof ph);
      if (L->t0 && L->t0 < first) first = L->t0;
      if (L->t1 > last) last = L->t1;
      const ncs_op_t *po = L->peer >= 0 && L->peer < nr ? by[L->peer] : NULL;
      if (!L->is_send && po && po->arrival > L->t0 && L->t0) {
        /* no data can come before the sending peer called: that wait is the peer's */
        int64_t until = L->first_data ? L->first_data : L->t1;
        int64_t late = (po->arrival < until ? po->arrival : until) - L->t0;
        if (late > ph[NCS_PH_NET]) late = ph[NCS_PH_NET];
        if (late > 0) ph[NCS_PH_NET] -= late, ph[NCS_PH_PEER] += late;
      }
      if (po && L->peer != o->rank) waited[L->peer] += ph[NCS_PH_PEER];
      for (int p = 0; p < NCS_PH_N; p++) b->ph[p] += ph[p];
      if (o->rank >= 0 && o->rank < nr)
        for (int p = 0; p < NCS_PH_N; p++) own[(size_t)o->rank * NCS_PH_N + p] += ph[p];
      b->bytes += L->bytes, b->steps += L->steps, b->links++;
    }
    if (first != INT64_MAX && last > first) {
      b->span += last - first;
      /* from its arrival until its kernel or proxy work began: first behind the previous
       * operation of its communicator (the queue), then its own launch */
      int64_t go = o->kstart && o->kstart < first ? o->kstart : first, from = o->arrival;
      if (o->prev_end > from && go > from) {
        int64_t q = (o->prev_end < go ? o->prev_end : go) - from;
        b->queue += q, from += q;
      } else if (o->prev_id && !o->prev_end && go > from) {
        b->q_unknown++;
      }
      if (go > from) b->launch += go - from;
    }
  }
  int64_t sum = 0;
  for (int p = 0; p < NCS_PH_N; p++) sum += b->ph[p];
  if ((int32_t)in->distinct < nr) {
    b->label = NCS_BN_CANNOT, b->why = NCS_BW_INCOMPLETE;
  } else if (lost) {
    b->label = NCS_BN_CANNOT, b->why = NCS_BW_LOST;
  } else if (!b->links || sum <= 0) {
    b->label = NCS_BN_CANNOT, b->why = any_rec ? NCS_BW_NO_PROXY : NCS_BW_NOT_RECORDED;
  } else if ((double)b->launch >= NCS_BD_DOMINANT * (double)(b->launch + b->span)) {
    b->label = NCS_BN_LAUNCH;
  } else {
    int top = 0;
    for (int p = 1; p < NCS_PH_N; p++)
      if (b->ph[p] > b->ph[top]) top = p;
    static const int lab[NCS_PH_N] = {NCS_BN_GPU, NCS_BN_PEER, NCS_BN_NET, NCS_BN_FLUSH};
    b->label = (double)b->ph[top] >= NCS_BD_DOMINANT * (double)sum ? lab[top] : NCS_BN_MIXED;
  }
  if (b->label == NCS_BN_PEER) peer_root(b, nr, waited, own);
  free(by), free(waited), free(own);
}
