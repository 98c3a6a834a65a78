/* kch.c - an operation's GPU times from its KernelCh records, checked against what is physically
 * possible (docs/report.md, "GPU times that cannot be right"), and the order in which the
 * operations of one rank of a communicator leave their file (a "chain").
 *
 * NCCL 2.28 hands stale KernelCh timestamps: on the channels that send/recv work used, the host's
 * work counter falls behind the GPU's, and the proxy thread then reads the slot of earlier work,
 * start and stop, as soon as the operation is posted; measured on H200s, 16 of 24 channels of a
 * 16 MiB AllReduce carried times 0.08 to 10 ms older than its kernel (CUPTI), and every channel of
 * a 64 KiB one did. A channel's times are left out when:
 *   - its stop precedes its start;
 *   - it starts before the end of the previous operation of the chain that ran in another kernel
 *     (one communicator's kernels run one after the other on its stream: earlier work's time);
 *   - it starts before its operation's KernelLaunch, with the GPU clock mapped by its least offset
 *     (clock.c: the latest host time the evidence allows, so the check cannot wrongly fire);
 *   - its start or stop lies after the host read it, by more than the clock's error bound (a time
 *     in the future of its reading: not of this work).
 * The operation's GPU start and stop come from the channels left (REPAIRED when some were left out);
 * with none, its GPU time is unknown, and so is its completion (the writer's COMPLETE rested on the
 * stale channels), until a later operation of the chain completes on good evidence: NCCL runs them
 * in order, so that completes every earlier one (INFERRED, its end bounded by the later kernel's
 * start). An operation with a good channel that started and never stopped is not known complete
 * either.
 *
 * The chain: every Coll/P2p of one (communicator, rank) of a file, in START order. Checks need the
 * previous operation's checked end, so the chain checks its operations in that order as they settle
 * (merge.c) and hands them on in that order once nothing later can change them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"

#define KC_TOL_NS 2000 /* slack of the order checks (GPU timestamps are written per block) */

const char *const ncs_gk_names[NCS_GK_N] = {"none", "ok", "repaired", "unknown"};

/* ------------------------------------------------------------------ KernelCh records */
static uint32_t kc_new(kc_src_t *K) {
  if (K->nfree) return K->free_[--K->nfree];
  NCS_XGROW(K->kc, K->cap, K->n + 1);
  return (uint32_t)K->n++;
}

static void kc_put(kc_src_t *K, uint32_t i) {
  K->kc[i].used = 0;
  NCS_XGROW(K->free_, K->capfree, K->nfree + 1);
  K->free_[K->nfree++] = i;
}

/* the KernelCh records of parent `id`, dropped */
static void kc_drop_parent(kc_src_t *K, uint64_t id) {
  uint64_t v;
  if (!hm_get(&K->par, id, &v)) return;
  for (uint32_t i = (uint32_t)v - 1;;) {
    uint32_t next = K->kc[i].next;
    hm_del(&K->ids, K->kc[i].id);
    kc_put(K, i);
    if (!next) break;
    i = next - 1;
  }
  hm_del(&K->par, id);
}

/* records whose operation never came (not one of a local communicator, or its START was lost) */
static void kc_sweep(kc_src_t *K, uint64_t now) {
  K->swept = now;
  for (size_t i = 0; i < K->n; i++)
    if (K->kc[i].used && K->kc[i].hs + (uint64_t)NCS_JOB_HORIZON_NS < now) kc_drop_parent(K, K->kc[i].parent);
}

void kc_event(kc_src_t *K, const ncs_event_t *e, uint64_t now) {
  uint64_t v;
  if (e->kind == NCS_REC_START) {
    if (e->parent_kind != NCS_REF_LOCAL) return;
    if (now - K->swept > (uint64_t)NCS_JOB_HORIZON_NS / 8) kc_sweep(K, now);
    if (hm_get(&K->ids, e->id, &v)) return; /* the same id twice: the first one stands */
    uint32_t i = kc_new(K);
    kc_t *c = &K->kc[i];
    *c = (kc_t){.id = e->id, .parent = e->parent, .ps = e->f[NCS_F(KernelCh, pTimer)], .hs = e->ts,
                .ch = (uint16_t)e->f[NCS_F(KernelCh, channelId)], .used = 1};
    int created;
    uint64_t *head = hm_ref(&K->par, e->parent, 0, &created);
    if (!head) ncs_oom();
    c->next = (uint32_t)*head, *head = i + 1;
    if (hm_put(&K->ids, e->id, i + 1) != 0) ncs_oom();
  } else if (e->kind == NCS_REC_STATE && e->state == NCS_STATE_KERNEL_CH_STOP) {
    if (hm_get(&K->ids, e->id, &v)) K->kc[v - 1].pe = e->arg0, K->kc[v - 1].he = e->ts;
  }
}

void kc_free(kc_src_t *K) {
  free(K->kc), free(K->free_);
  hm_free(&K->ids), hm_free(&K->par);
  memset(K, 0, sizeof *K);
}

/* ------------------------------------------------------------------ checking one operation */
/* host monotonic time of GPU time p in file proc, read by the host at seen, at its least offset
 * (the latest it can be; the window of the reading, right also across a step of the GPU clock) */
static int64_t gpu_mono(const ncs_job_proc_t *p, uint64_t ptimer, uint64_t seen) {
  return (int64_t)(ptimer - (uint64_t)ncs_gwin_off(p->gwin, p->ngwin, (int64_t)seen));
}

/* Was GPU time p, read by the host at seen, surely later than seen (a timestamp of work that had
 * not happened when the host read it)? p maps to at most gpu_mono(p), at least that less the
 * window's error; unknown error: no. */
static int after_seen(const ncs_job_proc_t *pr, uint64_t p, uint64_t seen) {
  if (!pr->ngwin || !seen) return 0;
  int64_t t = (int64_t)seen;
  size_t lo = 0, hi = pr->ngwin;
  while (hi - lo > 1) { /* the window of t */
    size_t m = (lo + hi) / 2;
    if (pr->gwin[m].from <= t) lo = m;
    else hi = m;
  }
  int64_t err = pr->gwin[lo].err;
  if (err < 0) return 0;
  return gpu_mono(pr, p, seen) - err - KC_TOL_NS > (int64_t)seen;
}

/* h's KernelCh records move to its own array (freed when it leaves) */
static void kc_take(kc_src_t *K, held_t *h) {
  uint64_t v;
  if (!hm_get(&K->par, h->id, &v)) return;
  for (uint32_t i = (uint32_t)v - 1;;) {
    const kc_t *k = &K->kc[i];
    NCS_XGROW(h->chv, h->capchv, h->nchv + 1);
    h->chv[h->nchv++] = (kcv_t){.ps = k->ps, .pe = k->pe, .hs = k->hs, .he = k->he};
    if (!k->next) break;
    i = k->next - 1;
  }
  kc_drop_parent(K, h->id);
}

static int other_kernel(const held_t *a, uint64_t group) { return !a->group || a->group != group; }

/* Forward: each channel against its own start and stop, the previous operation of the chain (the
 * earliest end of its good channels: every channel of the kernel before had ended by then, and a
 * channel of earlier work started before it), its launch and when the host read it. */
static void kc_forward(const ncs_job_t *j, kc_src_t *K, const chain_t *c, held_t *h) {
  const ncs_job_proc_t *pr = &j->procs[h->proc];
  int mapped = pr->ngwin > 0;
  kc_take(K, h);
  h->gchk.channels = h->nchv;
  for (uint32_t i = 0; i < h->nchv; i++) {
    kcv_t *k = &h->chv[i];
    k->s = mapped ? gpu_mono(pr, k->ps, k->hs) : (int64_t)k->ps;
    k->e = k->pe ? (mapped ? gpu_mono(pr, k->pe, k->he) : (int64_t)k->pe) : 0;
    if (!k->ps || (k->pe && k->pe < k->ps)) {
      k->bad = 1, h->gchk.ch_bad++;
    } else if (pr->gpu_first_ns && k->hs >= pr->gpu_first_ns &&
               k->hs - pr->gpu_first_ns < (uint64_t)NCS_JOB_GPU_SETTLE_NS) {
      k->bad = 1, h->gchk.ch_settling++;
    } else if (c->have_end && other_kernel(h, c->end_group) && k->s + KC_TOL_NS < c->end) {
      k->bad = 1, h->gchk.ch_before_prev++;
    } else if (h->launch_ts && mapped && k->s + KC_TOL_NS < (int64_t)h->launch_ts) {
      k->bad = 1, h->gchk.ch_before_launch++;
    } else if (after_seen(pr, k->ps, k->hs) || (k->pe && after_seen(pr, k->pe, k->he))) {
      k->bad = 1, h->gchk.ch_future++;
    }
  }
}

/* the earliest start of h's good channels (INT64_MAX: none) */
static int64_t good_start(const held_t *h) {
  int64_t m = INT64_MAX;
  for (uint32_t i = 0; i < h->nchv; i++)
    if (!h->chv[i].bad && h->chv[i].s < m) m = h->chv[i].s;
  return m;
}

/* Backward, once the next operation of the chain is checked: a channel of h that ends after the
 * next kernel began carries later work's times (NCCL 2.30.7 with PyTorch: up to 13 ms later). */
static void kc_backward(held_t *h, const held_t *next) {
  if (!other_kernel(next, h->group)) return;
  int64_t ns = good_start(next);
  if (ns == INT64_MAX) return;
  for (uint32_t i = 0; i < h->nchv; i++) {
    kcv_t *k = &h->chv[i];
    if (!k->bad && k->pe && k->e > ns + KC_TOL_NS) k->bad = 1, h->gchk.ch_after_next++;
  }
}

/* h's GPU times and verdict from its good channels; the chain's end moves to the earliest end of
 * them (what the next operation's channels are checked against) */
static void kc_settle(chain_t *c, held_t *h) {
  /* the blocks of one kernel run together: the good channels' spans share a moment. Spans that do
   * not (clusters apart: earlier or later work that no neighbour could tell from this one's, when
   * the chain has no good operation near it) leave which one is this work's open: all go */
  int64_t smax = INT64_MIN, emin_all = INT64_MAX;
  for (uint32_t i = 0; i < h->nchv; i++) {
    const kcv_t *k = &h->chv[i];
    if (k->bad || !k->pe) continue;
    if (k->s > smax) smax = k->s;
    if (k->e < emin_all) emin_all = k->e;
  }
  if (smax != INT64_MIN && smax > emin_all + KC_TOL_NS)
    for (uint32_t i = 0; i < h->nchv; i++)
      if (!h->chv[i].bad && h->chv[i].pe) h->chv[i].bad = 1, h->gchk.ch_disagree++;
  uint32_t nvalid = 0, nopen = 0;
  uint64_t s = 0, e = 0, he = 0, s_seen = 0, e_seen = 0;
  int64_t emin = INT64_MAX;
  h->gk = NCS_GK_NONE;
  if (!h->nchv) return;
  for (uint32_t i = 0; i < h->nchv; i++) {
    const kcv_t *k = &h->chv[i];
    if (k->bad) continue;
    if (!k->pe) {
      nopen++; /* started, never stopped in the trace */
      continue;
    }
    nvalid++;
    if (!s || k->ps < s) s = k->ps, s_seen = k->hs;
    if (k->pe > e) e = k->pe, e_seen = k->he;
    if (k->he > he) he = k->he;
    if (k->e < emin) emin = k->e;
  }
  /* fewer channels than nChannels is no evidence: NCCL 2.30.7 reported 8 KernelCh for some
   * AllReduces of nChannels 24 that CUPTI saw complete (fixture diagnose/idle-nccl-2.30.7) */
  h->gk_open = nopen > 0;
  if (nvalid && !nopen) {
    h->gk = nvalid < h->nchv ? NCS_GK_REPAIRED : NCS_GK_OK;
    h->gpu_start = s, h->gpu_stop = e, h->gk_seen_end = he;
    h->gk_s_seen = s_seen, h->gk_e_seen = e_seen;
    if (!c->have_end || emin > c->end) c->end = emin;
    c->have_end = 1, c->end_group = h->group;
  } else {
    h->gk = NCS_GK_UNKNOWN;
    h->gpu_start = h->gpu_stop = 0;
  }
}

/* ------------------------------------------------------------------ chains */
chain_t *chain_of(kc_src_t *K, uint32_t comm, int32_t rank) {
  uint64_t key = ((uint64_t)comm << 32) | (uint32_t)rank, v;
  if (hm_get(&K->chain_map, key, &v)) return &K->chains[v - 1];
  NCS_XGROW(K->chains, K->capchains, K->nchains + 1);
  chain_t *c = &K->chains[K->nchains];
  memset(c, 0, sizeof *c);
  if (hm_put(&K->chain_map, key, ++K->nchains) != 0) ncs_oom();
  return c;
}

void chain_push(chain_t *c, uint32_t hi) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 16;
    uint32_t *q = ncs_xrealloc(NULL, cap * sizeof *q);
    for (size_t i = 0; i < c->n; i++) q[i] = c->q[(c->head + i) % c->cap];
    free(c->q);
    c->q = q, c->cap = cap, c->head = 0;
  }
  c->q[(c->head + c->n++) % c->cap] = hi;
}

static held_t *at(held_t *held, const chain_t *c, size_t i) { return &held[c->q[(c->head + i) % c->cap]]; }

/* Does h's completion rest on evidence that holds? (1 yes; 0 its claim rests on KernelCh that
 * cannot be trusted: it waits for a later operation of the chain to complete) */
static int claim_holds(const held_t *h) {
  if (!h->complete) return 1; /* no claim */
  if (h->cflags & (NCS_CF_PROXY | NCS_CF_FORCED | NCS_CF_NO_CHILDREN | NCS_CF_GROUP)) return 1;
  if (!(h->cflags & NCS_CF_KERNEL) || h->gk == NCS_GK_NONE) return 1;
  return h->gk == NCS_GK_OK || h->gk == NCS_GK_REPAIRED;
}

/* good evidence that h completed (a later one's completes everything before it) */
static int completed_well(const held_t *h) {
  return h->complete && !(h->cflags & (NCS_CF_FORCED | NCS_CF_NO_CHILDREN)) && claim_holds(h) &&
         !h->gk_claim_rejected;
}

/* Check the chain's settled operations in order; hand on (release) those that nothing later can
 * change. final: the file or segment ends (or an id is reused): everything goes. */
/* h's completion, judged: its claim taken back when it rests on channels that cannot be right;
 * else a good one completes the n operations before it in the chain */
static void judge(held_t *held, const chain_t *c, size_t n, held_t *h) {
  h->judged = 1;
  if (h->complete && !claim_holds(h)) {
    h->gk_claim_rejected = 1, h->complete = 0, h->gchk.claim_rejected = 1;
  } else if (completed_well(h)) {
    for (size_t i = 0; i < n; i++) {
      held_t *x = at(held, c, i);
      if (x->complete) continue;
      x->complete = 1, x->inferred = 1, x->gchk.inferred = 1;
      /* it ended before this one's kernel started (GPU), else before this one ended */
      x->infer_gpu = h->gpu_start, x->infer_seen = h->gk_s_seen, x->infer_end = h->end_ns;
    }
  }
}

/* Check the chain's settled operations in order (forward when it settles, backward once the next
 * one is checked, then judged), and hand on (release) those that nothing later can change.
 * final: the file or segment ends (or an id is reused): everything goes. */
void chain_drain(ncs_job_t *j, kc_src_t *K, chain_t *c, held_t *held, uint64_t now, int final,
                 void (*release)(ncs_job_t *, void *, uint32_t), void *arg) {
  while (c->checked < c->n) {
    held_t *h = at(held, c, c->checked);
    if (!h->ready && !final) break;
    kc_forward(j, K, c, h);
    if (c->checked > 0) { /* the one before is final now */
      held_t *p = at(held, c, c->checked - 1);
      kc_backward(p, h);
      kc_settle(c, p);
      judge(held, c, c->checked - 1, p);
    }
    c->checked++;
  }
  if (final && c->checked && !at(held, c, c->checked - 1)->judged) { /* the last has no next */
    held_t *p = at(held, c, c->checked - 1);
    kc_settle(c, p);
    judge(held, c, c->checked - 1, p);
  }
  /* hand on from the head: what is judged and no longer waits for a later completion (one
   * waiting is held until a later one of its chain completes well, the end, or the horizon) */
  while (c->n && at(held, c, 0)->judged) {
    held_t *h = at(held, c, 0);
    int waits = h->gk_claim_rejected && !h->inferred;
    if (waits && !final && now < h->ready_ts + (uint64_t)NCS_JOB_HORIZON_NS && c->n < NCS_JOB_OPEN_MAX)
      break;
    uint32_t hi = c->q[c->head];
    c->head = (c->head + 1) % c->cap, c->n--, c->checked--;
    free(h->chv), h->chv = NULL, h->nchv = h->capchv = 0;
    release(j, arg, hi);
  }
}

void chains_free(kc_src_t *K) {
  for (size_t i = 0; i < K->nchains; i++) free(K->chains[i].q);
  free(K->chains);
  K->chains = NULL, K->nchains = K->capchains = 0;
  hm_free(&K->chain_map);
}
