/* match.c - collective instances and send/receive pairs (model.h).
 *
 * A finished operation joins its instance, keyed (comm, func, seq); the instance is handed out
 * as soon as every rank of the communicator is in. One that no record joined for
 * NCS_JOB_HORIZON_NS of merged time is closed incomplete, and so is the oldest open one of a
 * communicator with NCS_JOB_OPEN_MAX open (both are "evicted"); a record that arrives after its
 * instance was closed starts a new one. Sends and receives wait, keyed (comm, sender, receiver,
 * order), for their partner at most the horizon.
 *
 * The maps are verified: the map holds hash + k -> index for the first free k < VPROBE, and a
 * match function says whether an index is the key sought. Lookups probe the VPROBE slots
 * whatever is absent, so deletions need no tombstones. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "model/internal.h"
#include "util/fmt.h"
#include "util/mem.h"
#include "util/num.h"

#define VPROBE 8
typedef int (*vmatch_f)(const jpriv_t *P, uint64_t idx, const void *key);

static int vfind(const jpriv_t *P, const hmap_t *m, uint64_t h, vmatch_f match, const void *key,
                 uint64_t *idx, uint64_t *at) {
  for (uint64_t k = 0; k < VPROBE; k++) {
    uint64_t v;
    if (hm_get(m, h + k, &v) && match(P, v, key)) {
      if (idx) *idx = v;
      if (at) *at = h + k;
      return 1;
    }
  }
  return 0;
}

static int vput(hmap_t *m, uint64_t h, uint64_t idx) {
  for (uint64_t k = 0; k < VPROBE; k++)
    if (!hm_get(m, h + k, NULL)) {
      if (hm_put(m, h + k, idx) != 0) ncs_oom();
      return 0;
    }
  return -1; /* VPROBE colliding keys: not expected with 64-bit hashes */
}

static int older(int64_t now, int64_t t) {
  return now > t && (uint64_t)now - (uint64_t)t > (uint64_t)NCS_JOB_HORIZON_NS;
}

void match_peak(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  if (P->nopen > j->run.peak_open) j->run.peak_open = P->nopen;
  if (P->held > j->run.peak_held) j->run.peak_held = P->held;
}

/* ------------------------------------------------------------------ handing out */
static int cmp_rank(const void *x, const void *y) {
  const ncs_op_t *a = x, *b = y;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  if (a->seg != b->seg) return a->seg < b->seg ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

/* ------------------------------------------------------------------ filters (model.h) */
int ncs_job_filter_active(const ncs_job_filter_t *f) {
  return f && (f->comm_set || f->ranks || f->window || f->rsel || f->tsel);
}

int ncs_job_filter_comm(ncs_job_filter_t *f, const ncs_job_comm_t *comms, uint32_t ncomms, char *err,
                        size_t errlen) {
  if (!f->comm_set) return 0;
  for (uint32_t c = 0; c < ncomms; c++)
    if (f->comm_by_index ? c == f->comm_index : comms[c].comm_id == f->comm_id) {
      f->comm_by_index = 1, f->comm_index = c, f->comm_id = comms[c].comm_id;
      return 0;
    }
  char asked[48], ids[512] = "";
  if (f->comm_by_index)
    snprintf(asked, sizeof asked, "c%u", f->comm_index);
  else
    snprintf(asked, sizeof asked, NCS_COMM_ID_FMT, f->comm_id);
  size_t n = 0;
  for (uint32_t c = 0; c < ncomms && n < sizeof ids - 48; c++)
    n += (size_t)snprintf(ids + n, sizeof ids - n, "%sc%u " NCS_COMM_ID_FMT, c ? ", " : "", c, comms[c].comm_id);
  if (ncomms && n >= sizeof ids - 48) snprintf(ids + n, sizeof ids - n, ", ...");
  snprintf(err, errlen, "--comm %s: no such communicator in the job (%s)", asked,
           ncomms ? ids : "it holds none");
  return -1;
}

/* a name that ends in ':' and a number (or nothing) is written with one more ':' (docs/cli.md) */
static int name_needs_colon(const char *s) {
  const char *c = strrchr(s, ':');
  if (!c) return 0;
  c++;
  c += strspn(c, "0123456789");
  if (*c == '-') c++, c += strspn(c, "0123456789");
  return !*c;
}

void ncs_job_filter_text(const ncs_job_filter_t *f, char *out, size_t len) {
  out[0] = 0;
  if (!ncs_job_filter_active(f)) return;
  size_t n = 0;
#define ADD(...) n += (size_t)snprintf(out + n, n < len ? len - n : 0, __VA_ARGS__)
  if (f->comm_set && f->comm_by_index)
    ADD("comm c%u " NCS_COMM_ID_FMT, f->comm_index, f->comm_id);
  else if (f->comm_set)
    ADD("comm " NCS_COMM_ID_FMT, f->comm_id);
  if (f->ranks) {
    ADD("%sranks ", n ? ", " : "");
    for (uint32_t k = 0; k < f->nranks && n < len; k++) {
      uint32_t e = k;
      while (e + 1 < f->nranks && f->ranks[e + 1] == f->ranks[e] + 1) e++;
      if (e > k + 1)
        ADD("%s%d-%d", k ? "," : "", f->ranks[k], f->ranks[e]), k = e;
      else
        ADD("%s%d", k ? "," : "", f->ranks[k]);
    }
  }
  if (f->window) {
    char a[32], b[32];
    ncs_fmt_ns(a, sizeof a, (double)f->from_ns);
    if (f->to_ns == INT64_MAX)
      ADD("%sfrom %s after the job's first event to the end", n ? ", " : "", a);
    else
      ncs_fmt_ns(b, sizeof b, (double)f->to_ns), ADD("%sfrom %s to %s after the job's first event", n ? ", " : "", a, b);
  }
  if (f->rsel) {
    ADD("%sinside the user range%s ", n ? ", " : "", f->nrsel == 1 ? "" : "s");
    for (uint32_t k = 0; k < f->nrsel && n < len; k++) {
      const ncs_job_rsel_t *r = &f->rsel[k];
      ADD("%s%s", k ? " or " : "", r->name);
      if (!r->from && name_needs_colon(r->name))
        ADD(":");
      else if (r->from && r->from == r->to)
        ADD(":%llu", (unsigned long long)r->from);
      else if (r->from)
        ADD(":%llu-%llu", (unsigned long long)r->from, (unsigned long long)r->to);
    }
  }
  if (f->tsel) {
    ADD("%suser tag%s ", n ? ", " : "", f->ntsel == 1 && f->tsel[0].lo == f->tsel[0].hi ? "" : "s");
    for (uint32_t k = 0; k < f->ntsel && n < len; k++) {
      ADD("%s%llu", k ? "," : "", (unsigned long long)f->tsel[k].lo);
      if (f->tsel[k].hi != f->tsel[k].lo) ADD("-%llu", (unsigned long long)f->tsel[k].hi);
    }
  }
  if (f->notes && *f->notes) ADD(" (%s)", f->notes);
#undef ADD
  if (n >= len && len > 4) strcpy(out + len - 4, "...");
}

static int rank_in(const ncs_job_filter_t *f, int32_t r) {
  for (uint32_t k = 0; k < f->nranks; k++)
    if (f->ranks[k] == r) return 1;
  return 0;
}

static int in_window(const ncs_job_t *j, int64_t t) {
  const ncs_job_filter_t *f = &j->filter;
  return !f->window || (t - j->t_first >= f->from_ns && t - j->t_first <= f->to_ns);
}

/* the filter's questions about one operation: one of the ranks, called inside a selected range,
 * a listed userTag (sel: select.c decided the last two as it left its file). An instance or a
 * pair needs one operation that answers all of them. */
static int per_op(const ncs_job_filter_t *f) { return f->ranks || f->rsel || f->tsel; }
static int op_kept(const ncs_job_filter_t *f, const ncs_op_t *o) {
  return (!f->ranks || rank_in(f, o->rank)) && (!f->rsel || (o->sel & NCS_OSEL_RANGE)) &&
         (!f->tsel || (o->sel & NCS_OSEL_TAG));
}

/* the one place every consumer's filter is applied: an instance */
static int pass_instance(const ncs_job_t *j, const ncs_inst_t *in, const ncs_op_t *ops) {
  const ncs_job_filter_t *f = &j->filter;
  if (f->comm_set && j->comms[in->comm].comm_id != f->comm_id) return 0;
  if (!in_window(j, in->first_arrival)) return 0;
  if (!per_op(f)) return 1;
  for (uint32_t k = 0; k < in->nops; k++)
    if (op_kept(f, &ops[k])) return 1;
  return 0;
}

/* and a send or receive (partner NULL: unpaired) */
static int pass_p2p(const ncs_job_t *j, const ncs_op_t *op, const ncs_op_t *partner) {
  const ncs_job_filter_t *f = &j->filter;
  if (f->comm_set && j->comms[op->comm].comm_id != f->comm_id) return 0;
  int64_t t = partner && partner->arrival < op->arrival ? partner->arrival : op->arrival;
  if (!in_window(j, t)) return 0;
  return !per_op(f) || op_kept(f, op) || (partner && op_kept(f, partner));
}

/* Could member `rank` of communicator `comm` have entered an instance we have no record of? Not
 * when its rank is recorded by a file that is read, traced (not a flight window) and lost none of
 * its Coll records: then it never entered it. */
static int never_entered(const ncs_job_t *j, uint32_t comm, int32_t rank) {
  for (uint32_t m = 0; m < j->nmembers; m++) {
    const ncs_job_member_t *mb = &j->members[m];
    if (mb->comm != comm || mb->rank != rank) continue;
    const ncs_job_proc_t *p = &j->procs[mb->proc];
    if (!p->readable || p->excluded || p->damage || mb->seg >= p->nsegs) return 0;
    if (p->segs[mb->seg].mode == NCS_MODE_FLIGHT) return 0;
    if (ncs_job_lost(j, mb->proc, 0, UINT64_MAX, ~0u, 1u << NCS_T_COLL)) return 0;
    return 1;
  }
  return 0; /* not recorded: cannot tell */
}

/* No AllReduce, AllGather or ReduceScatter completes on one rank before every member entered it (the
 * kernels wait for each other): a completion claimed earlier than the last arrival (beyond the
 * clock error), or while a recorded member never entered, rests on timestamps that cannot be
 * right (NCCL 2.28's stale KernelCh) and is taken back, with its KernelCh GPU times. CUPTI's
 * kernel times are the GPU's own and stay. */

/* o's KernelCh times cannot be right: it has no GPU time (counted as unknown, not as ok or
 * repaired) and its duration falls back to the enqueue interval */
static void drop_kernelch(ncs_job_t *j, ncs_op_t *o) {
  if (!jp(j)->hostpass) {
    ncs_job_gchk_t *g = &j->procs[o->proc].gchk;
    g->ok -= o->gk == NCS_GK_OK && g->ok, g->repaired -= o->gk == NCS_GK_REPAIRED && g->repaired;
    g->unknown += o->gk != NCS_GK_UNKNOWN;
  }
  o->kstart = o->kstop = 0, o->gsrc = NCS_GS_NONE, o->gk = NCS_GK_UNKNOWN;
  o->timing = NCS_SRC_ENQUEUE_HOST, o->duration = o->stop > o->arrival ? o->stop - o->arrival : 0;
}

static void impossible(ncs_job_t *j, inst_t *x, int64_t last_arrival) {
  if (x->again || !ncs_all_depend(x->func)) return; /* again: a reload cycle or a duplicate (seqNumbers
                                                  * do not line up) */
  int32_t nr = j->comms[x->comm].nranks;
  int missing = 0;
  if ((int32_t)x->distinct < nr && nr > 0 && nr <= 65536) {
    for (int32_t r = 0; r < nr && !missing; r++) {
      int in = 0;
      for (size_t k = 0; k < x->n && !in; k++) in = x->ops[k].rank == r;
      if (!in && never_entered(j, x->comm, r)) missing = 1;
    }
  }
  /* the host pass (several hosts) estimates the offsets between the hosts' clocks: until they
   * are known, an end is compared with the arrivals on its own host only (a later arrival on
   * another host may be a clock offset, not a fact); the last arrival per host, by host index */
  int64_t *hlast = NULL;
  if (jp(j)->hostpass && j->nhosts > 1) {
    hlast = ncs_xcalloc(j->nhosts, sizeof *hlast);
    for (uint32_t h = 0; h < j->nhosts; h++) hlast[h] = INT64_MIN;
    for (size_t k = 0; k < x->n; k++) {
      uint32_t h = j->procs[x->ops[k].proc].host_index;
      if (x->ops[k].arrival > hlast[h]) hlast[h] = x->ops[k].arrival;
    }
  }
  for (size_t k = 0; k < x->n; k++) {
    ncs_op_t *o = &x->ops[k];
    if (!o->complete || o->gsrc == NCS_GS_CUPTI) continue;
    int64_t last = hlast ? hlast[j->procs[o->proc].host_index] : last_arrival;
    int early = o->end && (int32_t)x->distinct == nr && o->end + j->error + 2000 < last;
    if (!missing && !early) continue;
    o->complete = 0, o->end = 0, o->inferred = 0, o->impossible = 1;
    if (o->gsrc == NCS_GS_KERNELCH) drop_kernelch(j, o); /* its KernelCh times go with the claim */
    if (!jp(j)->hostpass) j->procs[o->proc].gchk.impossible++;
  }
  free(hlast);
}

/* The kernels of one collective on its ranks wait for each other: they share a moment. When the
 * KernelCh times of a complete instance do not (a rank's kernel ended before another's began, by
 * more than the clock error), some rank's times are of other work that its own checks could not
 * tell (no good neighbour in its chain); which one cannot be told: every rank's KernelCh times of
 * the instance go, counted (the completions stay: they rest on the chain, not on these times). */
static void disjoint(ncs_job_t *j, inst_t *x) {
  int32_t nr = j->comms[x->comm].nranks;
  if ((int32_t)x->distinct != nr || x->n < 2 || !ncs_all_depend(x->func)) return;
  /* the host pass (several hosts): the kernels of ranks on different hosts are compared only once
   * the hosts' offsets are known (and this pass takes no GPU time, only completion ends) */
  if (jp(j)->hostpass && j->nhosts > 1) return;
  int64_t smax = INT64_MIN, emin = INT64_MAX;
  for (size_t k = 0; k < x->n; k++) {
    const ncs_op_t *o = &x->ops[k];
    if (o->gsrc != NCS_GS_KERNELCH || !o->kstart) continue;
    if (o->kstart > smax) smax = o->kstart;
    if (o->kstop < emin) emin = o->kstop;
  }
  if (smax == INT64_MIN || smax <= emin + j->error + 2000) return;
  for (size_t k = 0; k < x->n; k++) {
    ncs_op_t *o = &x->ops[k];
    if (o->gsrc != NCS_GS_KERNELCH) continue;
    if (!jp(j)->hostpass) j->procs[o->proc].gchk.disjoint++;
    drop_kernelch(j, o);
  }
}

/* The queue (docs/report.md, "Breakdown"): NCCL runs a communicator's kernels of a rank one after
 * another, so an operation's kernel cannot start before its previous one ended. Instances are
 * handed out in each rank's call order (its operations complete in order), so the last one handed
 * out of its file and communicator is, when its id is the operation's prev_id, the previous one,
 * with its cross-rank checks done: its end is its GPU kernel's stop, else its completion (a bound:
 * when the host saw it). Anything else (out of order, lost, no end) leaves prev_end unknown. */
static void queue_tails(ncs_job_t *j, inst_t *x) {
  jpriv_t *P = jp(j);
  for (size_t k = 0; k < x->n; k++) {
    ncs_op_t *o = &x->ops[k];
    uint64_t key = hm_mix2(((uint64_t)o->proc << 32) | o->comm, (uint64_t)(uint32_t)o->rank), v;
    int64_t end = o->kstart && o->kstop > o->kstart ? o->kstop : o->complete ? o->end : 0;
    for (;; key++) { /* ranks of one file (threads) have tails of their own */
      if (!hm_get(&P->qtail, key, &v)) {
        NCS_XGROW(P->qt, P->capqt, P->nqt + 1);
        v = P->nqt++;
        if (hm_put(&P->qtail, key, v) != 0) ncs_oom();
        break;
      }
      const struct qtail_s *t = &P->qt[v];
      if (t->proc == o->proc && t->comm == o->comm && t->rank == o->rank) {
        if (o->prev_id && t->id == o->prev_id && t->seg == o->seg) o->prev_end = t->end;
        break;
      }
    }
    P->qt[v] = (struct qtail_s){.proc = o->proc, .comm = o->comm, .rank = o->rank, .seg = o->seg,
                                .id = o->id, .end = end};
  }
}

static void hand_instance(ncs_job_t *j, inst_t *x, int evicted) {
  jpriv_t *P = jp(j);
  ncs_sort(x->ops, x->n, sizeof *x->ops, cmp_rank);
  ncs_inst_t in = {.comm = x->comm, .func = x->func, .seq = x->seq, .nops = (uint32_t)x->n,
                   .distinct = x->distinct, .again = x->again, .evicted = evicted,
                   .first_arrival = INT64_MAX,
                   .last_arrival = INT64_MIN};
  for (size_t k = 0; k < x->n; k++) {
    const ncs_op_t *o = &x->ops[k];
    if (o->arrival < in.first_arrival) in.first_arrival = o->arrival, in.first_rank = o->rank;
    if (o->arrival > in.last_arrival) in.last_arrival = o->arrival, in.last_rank = o->rank;
  }
  impossible(j, x, in.last_arrival);
  disjoint(j, x);
  if (P->hostpass) {
    clock_host_instance(j, x->ops, x->n);
    for (size_t k = 0; k < x->n; k++) bd_op_free(&x->ops[k]); /* nobody takes its links */
    return;
  }
  queue_tails(j, x);
  if (ncs_job_filter_active(&j->filter) && !pass_instance(j, &in, x->ops)) {
    j->run.filtered_inst++;
    if (P->retain) retain_left(j, x->ops, x->n); /* exporters leave out its records too */
    if (P->sink && P->sink->left) P->sink->left(P->arg, x->ops, x->n);
    for (size_t k = 0; k < x->n; k++) bd_op_free(&x->ops[k]); /* left out: nobody takes its links */
    return;
  }
  in.id = P->next_inst_id++;
  bd_instance(j, &in, x->ops);
  if (P->retain) retain_instance(j, &in, x->ops);
  if (P->sink && P->sink->instance) P->sink->instance(P->arg, &in, x->ops);
  if (!P->retain) /* retained: the job keeps the links */
    for (size_t k = 0; k < x->n; k++) bd_op_free(&x->ops[k]);
}

static void hand_p2p(ncs_job_t *j, const ncs_op_t *op, const ncs_op_t *partner) {
  jpriv_t *P = jp(j);
  if (partner && !op->is_send) { /* the Send first */
    const ncs_op_t *t = op;
    op = partner, partner = t;
  }
  if (ncs_job_filter_active(&j->filter) && !P->hostpass && !pass_p2p(j, op, partner)) {
    j->run.filtered_p2p += partner ? 2 : 1;
    if (P->retain) retain_left(j, op, 1);
    if (P->retain && partner) retain_left(j, partner, 1);
    bd_op_free((ncs_op_t *)op); /* left out: nobody takes its links */
    if (partner) bd_op_free((ncs_op_t *)partner);
    return;
  }
  if (P->retain) retain_p2p(j, op, partner);
  if (P->sink && P->sink->p2p) P->sink->p2p(P->arg, op, partner);
  if (!P->retain) {
    bd_op_free((ncs_op_t *)op);
    if (partner) bd_op_free((ncs_op_t *)partner);
  }
}

/* ------------------------------------------------------------------ collective instances */
typedef struct {
  uint32_t comm;
  const char *func;
  uint64_t seq;
} ikey_t;

static uint64_t inst_hash(const ikey_t *k) {
  return hm_mix(hm_mix(k->seq) ^ ((uint64_t)k->comm << 32) ^ (uint64_t)(uintptr_t)k->func);
}
static int inst_match(const jpriv_t *P, uint64_t idx, const void *key) {
  const ikey_t *k = key;
  const inst_t *x = &P->inst[idx];
  return x->used && x->comm == k->comm && x->func == k->func && x->seq == k->seq;
}

static void close_instance(ncs_job_t *j, size_t i, int evicted) {
  jpriv_t *P = jp(j);
  inst_t *x = &P->inst[i];
  ikey_t k = {x->comm, x->func, x->seq};
  uint64_t h = inst_hash(&k), v;
  for (uint64_t q = 0; q < VPROBE; q++) /* its own slot: other instances may share the key */
    if (hm_get(&P->im, h + q, &v) && v == i) {
      hm_del(&P->im, h + q);
      break;
    }
  evicted = evicted && (int32_t)x->distinct < j->comms[x->comm].nranks;
  if (evicted && !P->hostpass) j->run.evicted++;
  hand_instance(j, x, evicted);
  P->held -= x->n;
  P->comm_open[x->comm]--;
  P->nopen--;
  x->used = 0, x->n = 0;
  NCS_XGROW(P->inst_free, P->capinst_free, P->ninst_free + 1);
  P->inst_free[P->ninst_free++] = (uint32_t)i;
}

/* the open instance of the comm with the oldest last record */
static void evict_oldest(ncs_job_t *j, uint32_t comm) {
  jpriv_t *P = jp(j);
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < P->ninst; i++)
    if (P->inst[i].used && P->inst[i].comm == comm &&
        (best == SIZE_MAX || P->inst[i].joined < P->inst[best].joined))
      best = i;
  if (best != SIZE_MAX) close_instance(j, best, 1);
}

static size_t open_instance(ncs_job_t *j, const ikey_t *k, uint64_t h) {
  jpriv_t *P = jp(j);
  size_t idx;
  if (P->ninst_free) {
    idx = P->inst_free[--P->ninst_free];
  } else {
    NCS_XGROW(P->inst, P->capinst, P->ninst + 1);
    idx = P->ninst++;
  }
  inst_t *x = &P->inst[idx];
  int32_t nr = j->comms[k->comm].nranks;
  x->comm = k->comm, x->func = k->func, x->seq = k->seq, x->used = 1, x->n = 0, x->distinct = 0;
  x->opened = P->next_open++, x->again = 0;
  uint32_t words = nr > 0 ? (uint32_t)((nr + 63) / 64) : 0;
  if (words > x->nseen_words) {
    x->seen = ncs_xrealloc(x->seen, words * sizeof *x->seen);
    x->nseen_words = words;
  }
  if (words) memset(x->seen, 0, words * sizeof *x->seen);
  (void)vput(&P->im, h, idx); /* on failure: an instance of its own, closed by the sweep */
  if (k->comm >= P->ncomm_open) NCS_XGROW(P->comm_open, P->ncomm_open, k->comm + 1);
  P->nopen++, P->comm_open[k->comm]++;
  return idx;
}

static int has_rank(const inst_t *x, int32_t rank, int32_t nranks) {
  return rank >= 0 && rank < nranks && (x->seen[rank / 64] >> (rank % 64) & 1);
}

/* The open instance of o's key that o's rank has not joined yet, the oldest one: a rank's n-th
 * record of a key belongs to its n-th instance, however the records of a reload cycle (the same
 * seqNumbers again) interleave with the last ones of the cycle before. */
static int find_instance(const jpriv_t *P, const ikey_t *k, uint64_t h, const ncs_op_t *o,
                         int32_t nranks, size_t *idx, int *again) {
  int found = 0;
  for (uint64_t q = 0; q < VPROBE; q++) {
    uint64_t v;
    if (!hm_get(&P->im, h + q, &v) || !inst_match(P, v, k)) continue;
    if (has_rank(&P->inst[v], o->rank, nranks)) {
      *again = 1; /* this rank ran the key again while an instance of it was open */
      continue;
    }
    if (!found || P->inst[v].opened < P->inst[*idx].opened) *idx = (size_t)v, found = 1;
  }
  return found;
}

void match_coll(ncs_job_t *j, const ncs_op_t *o) {
  jpriv_t *P = jp(j);
  ikey_t k = {o->comm, o->func, o->seq};
  uint64_t h = inst_hash(&k);
  int32_t nr = j->comms[o->comm].nranks;
  size_t idx = 0;
  int again = 0;
  if (!find_instance(P, &k, h, o, nr, &idx, &again)) {
    idx = open_instance(j, &k, h);
    P->inst[idx].again = again;
  }
  inst_t *x = &P->inst[idx];
  NCS_XGROW(x->ops, x->cap, x->n + 1);
  x->ops[x->n++] = *o;
  x->joined = P->now;
  P->held++;
  match_peak(j);
  if (o->rank >= 0 && o->rank < nr && !has_rank(x, o->rank, nr)) {
    x->seen[o->rank / 64] |= 1ull << (o->rank % 64);
    x->distinct++;
  }
  if ((int32_t)x->distinct >= nr)
    close_instance(j, idx, 0);
  else if (P->comm_open[o->comm] > NCS_JOB_OPEN_MAX)
    evict_oldest(j, o->comm);
}

/* ------------------------------------------------------------------ point-to-point */
typedef struct {
  uint32_t comm;
  int32_t s, d;
  uint64_t order;
  int want_send;
} pkey_t;

static uint64_t p2p_hash(const pkey_t *k) {
  return hm_mix(hm_mix(k->order) ^ ((uint64_t)k->comm << 40) ^ ((uint64_t)(uint32_t)k->s << 20) ^
                (uint32_t)k->d);
}
static int p2p_match(const jpriv_t *P, uint64_t idx, const void *key) {
  const pkey_t *k = key;
  const pwait_t *w = &P->pw[idx];
  return w->used && w->o.comm == k->comm && w->src == k->s && w->dst == k->d &&
         w->o.order == k->order && w->o.is_send == k->want_send;
}

static void p2p_drop(jpriv_t *P, size_t i, uint64_t at) {
  hm_del(&P->pm, at);
  P->pw[i].used = 0, P->npw_used--, P->held--;
  NCS_XGROW(P->pw_free, P->cappw_free, P->npw_free + 1);
  P->pw_free[P->npw_free++] = (uint32_t)i;
}

/* one Send/Recv: paired with the waiting k-th of the other side, or left waiting */
void match_p2p(ncs_job_t *j, const ncs_op_t *o) {
  jpriv_t *P = jp(j);
  pkey_t k = {o->comm, o->is_send ? o->rank : o->peer, o->is_send ? o->peer : o->rank, o->order,
              !o->is_send};
  uint64_t h = p2p_hash(&k), idx, at;
  if (vfind(P, &P->pm, h, p2p_match, &k, &idx, &at)) {
    ncs_op_t w = P->pw[idx].o;
    p2p_drop(P, (size_t)idx, at);
    hand_p2p(j, o, &w);
    return;
  }
  if (P->npw_free) {
    idx = P->pw_free[--P->npw_free];
  } else {
    NCS_XGROW(P->pw, P->cappw, P->npw + 1);
    idx = P->npw++;
  }
  if (vput(&P->pm, h, idx) != 0) { /* VPROBE collisions: stays unpaired */
    NCS_XGROW(P->pw_free, P->cappw_free, P->npw_free + 1);
    P->pw_free[P->npw_free++] = (uint32_t)idx;
    hand_p2p(j, o, NULL);
    return;
  }
  P->pw[idx] = (pwait_t){.o = *o, .src = k.s, .dst = k.d, .used = 1, .joined = P->now};
  P->npw_used++, P->held++;
  match_peak(j);
}

static void give_up(ncs_job_t *j, size_t i, int evicted) {
  jpriv_t *P = jp(j);
  pwait_t *w = &P->pw[i];
  pkey_t k = {w->o.comm, w->src, w->dst, w->o.order, w->o.is_send};
  uint64_t at;
  if (!vfind(P, &P->pm, p2p_hash(&k), p2p_match, &k, NULL, &at)) return;
  ncs_op_t o = w->o;
  p2p_drop(P, i, at);
  if (evicted) j->run.p2p_evicted++;
  hand_p2p(j, &o, NULL);
}

/* close what the horizon passed: instances not joined, sends/recvs waiting that long */
void match_sweep(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  P->last_sweep = P->now;
  for (size_t i = 0; i < P->ninst; i++)
    if (P->inst[i].used && older(P->now, P->inst[i].joined)) close_instance(j, i, 1);
  for (size_t i = 0; i < P->npw; i++)
    if (P->pw[i].used && older(P->now, P->pw[i].joined)) give_up(j, i, 1);
}

/* the end of the pass: what is still open is incomplete, what still waits is unpaired */
void match_end(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  for (size_t i = 0; i < P->ninst; i++)
    if (P->inst[i].used) close_instance(j, i, 0);
  for (size_t i = 0; i < P->npw; i++)
    if (P->pw[i].used) give_up(j, i, 0);
}

void match_free(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  for (size_t i = 0; i < P->ninst; i++) free(P->inst[i].ops), free(P->inst[i].seen);
  free(P->inst), free(P->inst_free), free(P->comm_open), free(P->pw), free(P->pw_free);
  hm_free(&P->im), hm_free(&P->pm), hm_free(&P->qtail);
  free(P->qt);
  P->qt = NULL, P->nqt = P->capqt = 0;
  P->inst = NULL, P->inst_free = NULL, P->comm_open = NULL, P->pw = NULL, P->pw_free = NULL;
  P->ninst = P->capinst = P->nopen = P->ninst_free = P->capinst_free = P->ncomm_open = 0;
  P->npw = P->cappw = P->npw_used = P->npw_free = P->cappw_free = 0;
}
