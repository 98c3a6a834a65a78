/* agg.c - live metrics: aggregation on the writer thread (metrics.h, docs/metrics.md).
 *
 * The writer calls these hooks where it already has the facts: a Coll/P2p START (its
 * communicator, function, size, algorithm and protocol, and its arrival), the moment the
 * operation is settled (its last completion is known: what it took and where that time came
 * from), and every rise of the loss counters. Everything is kept in bounded tables: labels
 * beyond the caps go to "other" series, which are counted, so totals stay true.
 *
 * Once a second the tables are copied into a snapshot; the metrics thread takes the newest one
 * through a triple buffer whose mutex is held only for an index swap, so a slow renderer, HTTP
 * client or collector never makes the writer wait.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics/metrics.h"

/* the upper bounds of the execution-time buckets: 5 us to 10 s, 1-2.5-5 per decade */
const uint64_t ncs_mx_bounds_ns[NCS_MX_BOUNDS] = {
    5000,      10000,     25000,      50000,      100000,     250000,     500000,
    1000000,   2500000,   5000000,    10000000,   25000000,   50000000,   100000000,
    250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000ull};

#define PUBLISH_MAX_NS 1000000000ull  /* snapshots at least once a second */
#define INST_CAP 4096                 /* arrival instances open at once (power of two) */
#define INST_AGE_NS 10000000000ull    /* given up when not every local rank came by then */
#define WAIT_CAP 8192                 /* a rank's waits settled before an earlier one (power of 2) */
#define API_CAP 8192                  /* CollApi/P2pApi start times waiting for their operation */
#define NAME_CACHE 256                /* name indexes by string pointer (direct-mapped) */
#define OVER_BASES 2                  /* base 0: collectives over the caps; 1: send/recv */

/* an operation kind before its timing is known: its series per timing source */
typedef struct {
  uint64_t key;
  uint16_t comm;
  uint8_t func, algo, proto, p2p;
  int8_t lg;
  uint32_t ser[NCS_MX_TIMINGS]; /* series index + 1 */
} base_t;

/* one collective instance (comm, function, seqNumber) while the local ranks arrive */
typedef struct {
  uint64_t comm_id, seq, born_ns;
  uint8_t func, used;
  uint16_t n;
  uint64_t seen; /* one bit per local index */
  int64_t arr[NCS_MX_LOCAL_MAX];
  uint16_t slot[NCS_MX_LOCAL_MAX];
  uint32_t ano[NCS_MX_LOCAL_MAX]; /* the number of that rank's arrival (ncs_mx_comm_t.arrivals) */
} inst_t;

/* A rank's waiting in an instance that settled before one of its earlier arrivals did: kept until
 * its turn (key: slot << 32 | arrival number + 1; 0 free). skip: the instance was given up. */
typedef struct {
  uint64_t key;
  int64_t arr, last;
  uint16_t by; /* slot + 1 of the rank it waited for, whose waiting caused grows too; 0 none */
  uint8_t skip;
} wait_t;

int ncs_mx_active;
_Atomic int ncs_mx_exiting;

static struct {
  ncs_mx_snap_t L; /* the live tables */
  uint32_t cap_series, cap_comms, cap_bases;
  base_t *bases;
  uint32_t nbases;
  uint32_t *bhash, bhash_mask; /* base index + 1 by key */
  uint16_t *comm_of;           /* communicator index of this segment -> slot + 1 */
  uint32_t comm_of_n;
  struct { const void *p; uint8_t idx; } nptr[NAME_CACHE];
  struct { uint64_t id, ts; } *api;
  uint32_t napi;
  inst_t *inst;
  uint32_t ninst;
  wait_t *wait;
  uint32_t nwait;
  uint64_t wait_over; /* waits counted out of turn: the table was full */
  uint64_t lost[NCS_LOSS_MAX][NCS_T_COUNT];
  uint64_t over_comm, over_series, over_name, incomplete;
  uint32_t local_seen, local_live; /* what local_count counted last (ncomms + 1, live_comms) */
  uint64_t next_pub_ns, win_start_ns, start_real_ns;
  /* the triple buffer: the writer fills back, publishes it as mid; the metrics thread takes mid
   * as front. Only the indexes move under the mutex. */
  ncs_mx_snap_t *buf[3];
  int back, mid, front, fresh;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int sync_ok;
} A;

/* ------------------------------------------------------------------ names */

/* The index of a function/algorithm/protocol name. NCCL's strings are static (the writer reads
 * them too), so a pointer cache spares the string compare; 1 is "unknown" (NULL or empty),
 * 0 "other" when the table is full. */
static uint8_t name_of(const char *s) {
  if (!s || !*s) return 1;
  uint32_t h = (uint32_t)(((uint64_t)(uintptr_t)s * 0x9E3779B97F4A7C15ull) >> 56) & (NAME_CACHE - 1);
  if (A.nptr[h].p == s) return A.nptr[h].idx;
  char tmp[NCS_MX_NAME_LEN];
  size_t n = strnlen(s, sizeof tmp - 1);
  memcpy(tmp, s, n);
  tmp[n] = 0;
  uint32_t i;
  for (i = 2; i < A.L.nnames; i++)
    if (!strcmp(A.L.names[i], tmp)) break;
  if (i == A.L.nnames) {
    if (A.L.nnames >= NCS_MX_NAMES) {
      A.over_name++;
      return 0;
    }
    memcpy(A.L.names[A.L.nnames++], tmp, n + 1);
  }
  A.nptr[h].p = s, A.nptr[h].idx = (uint8_t)i;
  return (uint8_t)i;
}

/* ------------------------------------------------------------------ communicators */

/* The slot of communicator index idx of this segment (one rank of one communicator): created at
 * its first operation from the COMM facts, 0 ("other") beyond NCCLSCOPE_METRICS_MAX_COMMS. */
static uint16_t comm_slot(const ncs_event_t *e) {
  if (e->ctx_kind != NCS_CTX_LOCAL || e->ctx >= A.comm_of_n) return NCS_MX_OTHER;
  uint32_t idx = (uint32_t)e->ctx;
  if (A.comm_of[idx]) return (uint16_t)(A.comm_of[idx] - 1);
  const ncs_comm_t *c = &ncs_g.comms[idx];
  uint32_t s;
  for (s = 1; s < A.L.ncomms; s++) /* the same communicator and rank again (a new comm index) */
    if (A.L.comms[s].comm_id == c->comm_id && A.L.comms[s].rank == c->rank) break;
  if (s == A.L.ncomms) {
    if (A.L.ncomms >= A.cap_comms) {
      A.comm_of[idx] = NCS_MX_OTHER + 1; /* its operations are counted in over_comm */
      return NCS_MX_OTHER;
    }
    ncs_mx_comm_t *m = &A.L.comms[A.L.ncomms++];
    memset(m, 0, sizeof *m);
    m->comm_id = c->comm_id, m->rank = c->rank, m->nranks = c->nranks, m->nnodes = c->nnodes;
    m->device = c->device;
    snprintf(m->name, sizeof m->name, "%.*s", (int)sizeof m->name - 1, c->name);
    /* its place among the ranks of this communicator in this process: the order of their
     * inits, which never changes (arrivals compare across them) */
    uint32_t n = 0;
    for (uint32_t k = 0; k < idx; k++) n += ncs_g.comms[k].comm_id == c->comm_id;
    m->local = n < NCS_MX_LOCAL_MAX ? (uint8_t)n : 255;
    A.local_seen = 0; /* count the group again */
  }
  A.comm_of[idx] = (uint16_t)(s + 1);
  return (uint16_t)s;
}

/* ------------------------------------------------------------------ arrivals */

/* How many ranks of each slot's communicator live in this process: its live COMM entries. Every
 * rank's init comes before its operations, and NCCL's init is collective, so an arrival never
 * waits for a rank that is still to come. Counted again when communicators come; the most ever
 * seen stays (an instance a rank left by finalizing early never completes: it is counted). */
static void local_count(void) {
  uint32_t n = atomic_load(&ncs_g.ncomms), live = (uint32_t)atomic_load(&ncs_g.live_comms);
  if (A.local_seen == n + 1 && A.local_live == live) return;
  A.local_seen = n + 1, A.local_live = live;
  for (uint32_t s = 1; s < A.L.ncomms; s++) {
    uint16_t k = 0;
    for (uint32_t i = 0; i < n; i++)
      k += ncs_g.comms[i].comm_id == A.L.comms[s].comm_id &&
           atomic_load(&ncs_g.comms[i].state) == NCS_COMM_LIVE;
    if (k > A.L.comms[s].local_n) A.L.comms[s].local_n = k; /* kept once they finalize */
  }
}

static inline uint32_t inst_home(uint64_t comm_id, uint8_t func, uint64_t seq) {
  uint64_t h = (comm_id ^ (seq * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)func << 56)) * 0xBF58476D1CE4E5B9ull;
  return (uint32_t)(h >> 40) & (INST_CAP - 1);
}

static void inst_remove(uint32_t i) {
  A.inst[i].used = 0;
  A.ninst--;
  for (uint32_t j = (i + 1) & (INST_CAP - 1); A.inst[j].used; j = (j + 1) & (INST_CAP - 1)) {
    const inst_t *x = &A.inst[j];
    if (ncs_probe_moves(i, j, inst_home(x->comm_id, x->func, x->seq))) {
      A.inst[i] = A.inst[j];
      A.inst[j].used = 0;
      i = j;
    }
  }
}

/* Waiting is time, as in report: NCCL calls return at once, so a rank's waits for successive
 * instances overlap; only the part of [arrival, last] not yet counted for the rank is new. That
 * makes the union of the intervals when they are taken in the rank's call order (the last
 * arrivals come in that order), so a rank's waits count in the order of its arrivals, whatever
 * order the instances settle in (docs/metrics.md, "Late arrivals"). */
static void count_wait(ncs_mx_comm_t *c, int64_t arr, int64_t last, uint16_t by) {
  int64_t from = arr > c->wait_mark ? arr : c->wait_mark;
  uint64_t fresh = last > from ? (uint64_t)(last - from) : 0;
  if (last > c->wait_mark) c->wait_mark = last;
  c->wait_ns += fresh;
  if (by) A.L.comms[by - 1].caused_ns += fresh;
}

static inline uint32_t wait_home(uint64_t key) {
  return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & (WAIT_CAP - 1);
}

static wait_t *wait_find(uint64_t key) {
  for (uint32_t i = wait_home(key);; i = (i + 1) & (WAIT_CAP - 1)) {
    if (A.wait[i].key == key) return &A.wait[i];
    if (!A.wait[i].key) return NULL;
  }
}

static void wait_remove(wait_t *w) {
  uint32_t i = (uint32_t)(w - A.wait);
  A.wait[i].key = 0;
  A.nwait--;
  for (uint32_t j = (i + 1) & (WAIT_CAP - 1); A.wait[j].key; j = (j + 1) & (WAIT_CAP - 1))
    if (ncs_probe_moves(i, j, wait_home(A.wait[j].key))) {
      A.wait[i] = A.wait[j];
      A.wait[j].key = 0;
      i = j;
    }
}

/* arrival number `no` of the rank in slot s is done (counted, or given up): count it and the
 * ones after it that were waiting for their turn */
static void wait_done(uint16_t s, uint32_t no, int64_t arr, int64_t last, uint16_t by, int skip) {
  ncs_mx_comm_t *c = &A.L.comms[s];
  if (no != c->counted) {
    if (A.nwait < WAIT_CAP * 3 / 4) {
      uint64_t key = (uint64_t)s << 32 | ((uint64_t)no + 1);
      uint32_t i = wait_home(key);
      while (A.wait[i].key) i = (i + 1) & (WAIT_CAP - 1);
      A.wait[i] = (wait_t){.key = key, .arr = arr, .last = last, .by = by, .skip = (uint8_t)skip};
      A.nwait++;
      return;
    }
    A.wait_over++; /* no room to wait: counted now, out of turn */
    if (!skip) count_wait(c, arr, last, by);
    return;
  }
  if (!skip) count_wait(c, arr, last, by);
  c->counted++;
  wait_t *w;
  while ((w = wait_find((uint64_t)s << 32 | ((uint64_t)c->counted + 1)))) {
    if (!w->skip) count_wait(c, w->arr, w->last, w->by);
    wait_remove(w);
    c->counted++;
  }
}

/* Every local rank arrived: the same rules as report's (docs/report.md, "Per rank and
 * instance"), over the ranks of this process. The last arrival is the latest time, the lowest
 * rank among equal ones. */
static void inst_settle(const inst_t *x) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  int lk = -1;
  for (int k = 0; k < NCS_MX_LOCAL_MAX; k++) {
    if (!(x->seen >> k & 1)) continue;
    int64_t t = x->arr[k];
    if (t < first) first = t;
    if (t > last || (t == last && A.L.comms[x->slot[k]].rank < A.L.comms[x->slot[lk]].rank))
      last = t, lk = k;
  }
  uint16_t by = 0;
  if (x->n > 1 && last > first) {
    A.L.comms[x->slot[lk]].late++;
    by = (uint16_t)(x->slot[lk] + 1);
  }
  for (int k = 0; k < NCS_MX_LOCAL_MAX; k++) {
    if (!(x->seen >> k & 1)) continue;
    A.L.comms[x->slot[k]].instances++;
    wait_done(x->slot[k], x->ano[k], x->arr[k], last, by, 0);
  }
}

/* An instance given up: its ranks' arrivals there count no waiting, and no longer hold up the
 * ones after them. */
static void inst_give_up(uint32_t i) {
  const inst_t *x = &A.inst[i];
  A.incomplete++;
  for (int k = 0; k < NCS_MX_LOCAL_MAX; k++)
    if (x->seen >> k & 1) wait_done(x->slot[k], x->ano[k], 0, 0, 0, 1);
  inst_remove(i);
}

/* the oldest open instance gives up: not every local rank arrived (a drop, a hang) */
static void inst_evict_oldest(void) {
  uint32_t o = INST_CAP;
  for (uint32_t i = 0; i < INST_CAP; i++)
    if (A.inst[i].used && (o == INST_CAP || A.inst[i].born_ns < A.inst[o].born_ns)) o = i;
  if (o == INST_CAP) return;
  inst_give_up(o);
}

static void arrive(uint16_t slot, uint8_t func, uint64_t seq, uint64_t t) {
  const ncs_mx_comm_t *c = &A.L.comms[slot];
  if (slot == NCS_MX_OTHER || c->nranks < 2 || c->local >= NCS_MX_LOCAL_MAX) return;
  local_count();
  if (c->local_n < 2 || c->local_n > NCS_MX_LOCAL_MAX) return;
  if (A.ninst >= INST_CAP * 3 / 4) inst_evict_oldest();
  uint32_t i = inst_home(c->comm_id, func, seq);
  inst_t *x;
  for (;; i = (i + 1) & (INST_CAP - 1)) {
    x = &A.inst[i];
    if (!x->used || (x->comm_id == c->comm_id && x->func == func && x->seq == seq)) break;
  }
  if (!x->used) {
    memset(x, 0, offsetof(inst_t, arr));
    x->used = 1, x->comm_id = c->comm_id, x->func = func, x->seq = seq, x->born_ns = t;
    A.ninst++;
  }
  if (x->seen >> c->local & 1) return; /* a second record of one rank for one key: report's
                                          duplicate_seq; the first arrival counts */
  x->seen |= 1ull << c->local;
  x->arr[c->local] = (int64_t)t;
  x->slot[c->local] = slot;
  x->ano[c->local] = A.L.comms[slot].arrivals++; /* the writer reads a rank's records in call order */
  if (++x->n < c->local_n) return;
  inst_settle(x);
  inst_remove(i);
}

/* ------------------------------------------------------------------ operations */

/* API call starts by id until the Coll/P2p under them takes theirs (one each). Starts nothing
 * takes (their operations were not recorded: NCCLSCOPE_UNSAMPLED_EVENTS) fill the table; then it
 * starts over, and an operation whose start was forgotten arrives at its own start. */
static inline uint32_t api_home(uint64_t id) {
  return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & (API_CAP - 1);
}

void ncs_mx_api(const ncs_event_t *e) {
  if (A.napi >= API_CAP * 3 / 4) {
    memset(A.api, 0, sizeof *A.api * API_CAP);
    A.napi = 0;
  }
  uint32_t i = api_home(e->id);
  while (A.api[i].id && A.api[i].id != e->id) i = (i + 1) & (API_CAP - 1);
  A.napi += !A.api[i].id;
  A.api[i].id = e->id, A.api[i].ts = e->ts;
}

/* report's arrival: the CollApi/P2pApi start when the operation's parent is one, else its own */
static uint64_t arrival(const ncs_event_t *e) {
  if (e->parent_kind != NCS_REF_LOCAL) return e->ts;
  uint32_t i = api_home(e->parent);
  while (A.api[i].id && A.api[i].id != e->parent) i = (i + 1) & (API_CAP - 1);
  if (!A.api[i].id) return e->ts;
  uint64_t ts = A.api[i].ts;
  A.api[i].id = 0; /* taken: backward-shift the entries after it */
  A.napi--;
  for (uint32_t j = (i + 1) & (API_CAP - 1); A.api[j].id; j = (j + 1) & (API_CAP - 1))
    if (ncs_probe_moves(i, j, api_home(A.api[j].id))) {
      A.api[i] = A.api[j];
      A.api[j].id = 0;
      i = j;
    }
  return ts;
}

static uint32_t base_of(uint16_t comm, uint8_t func, uint8_t algo, uint8_t proto, int p2p, int lg) {
  uint64_t key = (uint64_t)comm | (uint64_t)func << 16 | (uint64_t)algo << 24 | (uint64_t)proto << 32 |
                 (uint64_t)p2p << 40 | (uint64_t)(uint8_t)(lg + 1) << 48 | 1ull << 63;
  uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & A.bhash_mask;
  for (; A.bhash[h]; h = (h + 1) & A.bhash_mask)
    if (A.bases[A.bhash[h] - 1].key == key) return A.bhash[h] - 1;
  if (A.nbases >= A.cap_bases) return (uint32_t)p2p; /* the overflow base of its kind */
  base_t *b = &A.bases[A.nbases];
  memset(b, 0, sizeof *b);
  b->key = key, b->comm = comm, b->func = func, b->algo = algo, b->proto = proto;
  b->p2p = (uint8_t)p2p, b->lg = (int8_t)lg;
  A.bhash[h] = ++A.nbases;
  return A.nbases - 1;
}

static int log2b(uint64_t b) {
  int k = -1;
  while (b) b >>= 1, k++;
  return k;
}

uint32_t ncs_mx_op(const ncs_event_t *e, const uint64_t *raw, uint64_t *bytes, double *bus) {
  int p2p = e->type == NCS_T_P2P;
  const char *func = (const char *)(uintptr_t)raw[p2p ? NCS_F(P2p, func) : NCS_F(Coll, func)];
  const char *dt = (const char *)(uintptr_t)raw[p2p ? NCS_F(P2p, datatype) : NCS_F(Coll, datatype)];
  uint64_t count = raw[p2p ? NCS_F(P2p, count) : NCS_F(Coll, count)];
  uint16_t slot = comm_slot(e);
  int nranks = slot != NCS_MX_OTHER ? A.L.comms[slot].nranks
               : e->ctx_kind == NCS_CTX_LOCAL && e->ctx < A.comm_of_n ? ncs_g.comms[e->ctx].nranks
                                                                      : 1;
  uint8_t fn = name_of(func);
  const char *fname = fn > 1 ? A.L.names[fn] : NULL;
  *bytes = ncs_op_bytes(fname, dt, count, nranks, p2p);
  *bus = (double)*bytes * (p2p ? 1.0 : ncs_bus_factor(fname, nranks));
  uint8_t algo = 1, proto = 1;
  if (!p2p) {
    algo = name_of((const char *)(uintptr_t)raw[NCS_F(Coll, algo)]);
    proto = name_of((const char *)(uintptr_t)raw[NCS_F(Coll, proto)]);
    arrive(slot, fn, raw[NCS_F(Coll, seqNumber)], arrival(e));
  }
  if (slot == NCS_MX_OTHER) A.over_comm++;
  return base_of(slot, fn, algo, proto, p2p, log2b(*bytes)) + 1;
}

/* the series of a base and timing; beyond the cap, the "other" series of its kind and timing */
static ncs_mx_series_t *series_of(uint32_t bi, int timing) {
  base_t *b = &A.bases[bi];
  if (!b->ser[timing]) {
    uint32_t n = A.L.nseries;
    if (n >= A.cap_series && bi >= OVER_BASES) {
      b = &A.bases[b->p2p]; /* the overflow base of its kind */
      if (b->ser[timing]) return &A.L.series[b->ser[timing] - 1];
    }
    ncs_mx_series_t *s = &A.L.series[A.L.nseries++]; /* OVER_BASES x timings stay reserved */
    memset(s, 0, sizeof *s);
    s->comm = b->comm, s->func = b->func, s->algo = b->algo, s->proto = b->proto;
    s->p2p = b->p2p, s->lg = b->lg, s->timing = (uint8_t)timing;
    b->ser[timing] = A.L.nseries;
  }
  return &A.L.series[b->ser[timing] - 1];
}

static int bucket_of(uint64_t ns) {
  int k = 0;
  while (k < NCS_MX_BOUNDS && ns > ncs_mx_bounds_ns[k]) k++;
  return k;
}

void ncs_mx_settle(uint32_t base, uint64_t bytes, double bus, int timing, uint64_t ns) {
  ncs_mx_series_t *s = series_of(base - 1, timing);
  if (s->lg == NCS_MX_LG_OTHER) A.over_series++;
  ncs_mx_val_t *v = &s->v;
  v->count++;
  v->bytes += bytes;
  if (timing == NCS_MX_ENQUEUE_HOST) return; /* only the enqueue is known: no execution time */
  v->timed++;
  v->time_ns += ns;
  v->bus_bytes += bus;
  v->hist[bucket_of(ns)]++;
  if (timing != NCS_MX_KERNEL_GPU) return; /* Inspector's gauges: GPU times only, as its default */
  v->w_n++;
  v->w_ns += ns;
  if (ns && bus > 0) {
    v->w_logbw += ncs_mx_ln(bus / (double)ns); /* bytes/ns = GB/s */
    v->w_nbw++;
  }
}

void ncs_mx_lost(unsigned reason, const uint64_t *n) {
  if (reason < 1 || reason > NCS_LOSS_MAX) return;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) A.lost[reason - 1][t] += n[t];
}

/* ------------------------------------------------------------------ snapshots */

int ncs_mx_due(uint64_t now) { return now >= A.next_pub_ns; }

/* Inspector's gauges are the means over the last closed window of NCCLSCOPE_METRICS_INTERVAL_MS */
static void close_window(uint64_t now) {
  for (uint32_t i = 0; i < A.L.nseries; i++) {
    ncs_mx_val_t *v = &A.L.series[i].v;
    v->g_n = v->w_n, v->g_nbw = v->w_nbw;
    v->g_us = v->w_n ? (double)v->w_ns / (double)v->w_n / 1e3 : 0;
    v->g_bw = v->w_nbw ? ncs_mx_exp(v->w_logbw / (double)v->w_nbw) : 0;
    v->w_n = v->w_ns = v->w_nbw = 0, v->w_logbw = 0;
  }
  A.L.p.window_ns = now - A.win_start_ns;
  A.win_start_ns = now;
}

static void snap_copy(ncs_mx_snap_t *d, const ncs_mx_snap_t *s) {
  d->p = s->p;
  d->nseries = s->nseries, d->ncomms = s->ncomms, d->nnames = s->nnames;
  memcpy(d->series, s->series, sizeof *s->series * s->nseries);
  memcpy(d->comms, s->comms, sizeof *s->comms * s->ncomms);
  memcpy(d->names, s->names, sizeof s->names);
  d->final = s->final;
}

void ncs_mx_publish(const ncs_mx_proc_t *p, int final) {
  uint64_t now = p->mono_ns, iv = (uint64_t)ncs_g.cfg.mx_interval_ms * 1000000ull;
  local_count();
  if (final || now - A.win_start_ns >= iv) close_window(now);
  for (uint32_t i = 0; i < INST_CAP; i++) /* instances a rank never came to */
    if (A.inst[i].used && now > A.inst[i].born_ns + INST_AGE_NS) {
      inst_give_up(i);
      i--; /* the backward shift may have moved another entry here */
    }
  uint64_t window = A.L.p.window_ns;
  A.L.p = *p;
  A.L.p.window_ns = window;
  A.L.p.start_real_ns = A.start_real_ns;
  memcpy(A.L.p.lost, A.lost, sizeof A.lost);
  A.L.p.over_comm = A.over_comm, A.L.p.over_series = A.over_series, A.L.p.over_name = A.over_name;
  A.L.p.incomplete = A.incomplete;
  A.L.final = final;
  snap_copy(A.buf[A.back], &A.L);
  pthread_mutex_lock(&A.mu);
  int t = A.mid;
  A.mid = A.back, A.back = t, A.fresh = 1;
  pthread_cond_signal(&A.cv);
  pthread_mutex_unlock(&A.mu);
  A.next_pub_ns = now + (iv < PUBLISH_MAX_NS ? iv : PUBLISH_MAX_NS);
}

const ncs_mx_snap_t *ncs_mx_take(int wait_ms) {
  pthread_mutex_lock(&A.mu);
  if (!A.fresh && wait_ms > 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += wait_ms / 1000;
    ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&A.cv, &A.mu, &ts);
  }
  const ncs_mx_snap_t *s = NULL;
  if (A.fresh) {
    int t = A.front;
    A.front = A.mid, A.mid = t, A.fresh = 0;
    s = A.buf[A.front];
  }
  pthread_mutex_unlock(&A.mu);
  return s;
}

/* ------------------------------------------------------------------ lifecycle */

static void snap_free(ncs_mx_snap_t *s) {
  if (!s) return;
  free(s->series);
  free(s->comms);
  free(s);
}

static ncs_mx_snap_t *snap_new(void) {
  ncs_mx_snap_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->series = calloc(A.cap_series + OVER_BASES * NCS_MX_TIMINGS, sizeof *s->series);
  s->comms = calloc(A.cap_comms, sizeof *s->comms);
  if (!s->series || !s->comms) {
    snap_free(s);
    return NULL;
  }
  return s;
}

static void free_all(void) {
  free(A.L.series);
  free(A.L.comms);
  free(A.bases);
  free(A.bhash);
  free(A.comm_of);
  free(A.inst);
  free(A.wait);
  free(A.api);
  for (int i = 0; i < 3; i++) snap_free(A.buf[i]);
  if (A.sync_ok) {
    pthread_mutex_destroy(&A.mu);
    pthread_cond_destroy(&A.cv);
  }
  memset(&A, 0, sizeof A);
}

static int alloc_all(void) {
  const ncs_config_t *c = &ncs_g.cfg;
  A.cap_series = c->mx_max_series;
  A.cap_comms = c->mx_max_comms + 1; /* slot 0 is "other" */
  A.cap_bases = c->mx_max_series + OVER_BASES;
  uint32_t hc = 64;
  while (hc < 2 * A.cap_bases) hc <<= 1;
  A.bhash_mask = hc - 1;
  A.comm_of_n = c->max_comms;
  A.L.series = calloc(A.cap_series + OVER_BASES * NCS_MX_TIMINGS, sizeof *A.L.series);
  A.L.comms = calloc(A.cap_comms, sizeof *A.L.comms);
  A.bases = calloc(A.cap_bases, sizeof *A.bases);
  A.bhash = calloc(hc, sizeof *A.bhash);
  A.comm_of = calloc(A.comm_of_n, sizeof *A.comm_of);
  A.inst = calloc(INST_CAP, sizeof *A.inst);
  A.wait = calloc(WAIT_CAP, sizeof *A.wait);
  A.api = calloc(API_CAP, sizeof *A.api);
  for (int i = 0; i < 3; i++) A.buf[i] = snap_new();
  if (!A.L.series || !A.L.comms || !A.bases || !A.bhash || !A.comm_of || !A.inst || !A.wait || !A.api || !A.buf[0] ||
      !A.buf[1] || !A.buf[2])
    return -1;
  if (pthread_mutex_init(&A.mu, NULL) != 0) return -1;
  if (pthread_cond_init(&A.cv, NULL) != 0) {
    pthread_mutex_destroy(&A.mu);
    return -1;
  }
  A.sync_ok = 1;
  A.back = 0, A.mid = 1, A.front = 2;
  return 0;
}

void ncs_mx_begin(void) {
  ncs_mx_active = 0;
  if (!ncs_g.cfg.metrics) return;
  free_all();
  if (alloc_all() != 0) {
    free_all();
    ncs_log(NCS_LOG_WARN, "metrics: out of memory for NCCLSCOPE_METRICS_MAX_SERIES=%u; no live metrics",
            ncs_g.cfg.mx_max_series);
    return;
  }
  /* names 0 and 1, communicator slot 0 and bases 0 and 1: what the caps send to "other" */
  snprintf(A.L.names[0], NCS_MX_NAME_LEN, "other");
  snprintf(A.L.names[1], NCS_MX_NAME_LEN, "unknown");
  A.L.nnames = 2;
  A.L.ncomms = 1;
  snprintf(A.L.comms[0].name, sizeof A.L.comms[0].name, "other");
  for (int k = 0; k < OVER_BASES; k++) {
    A.bases[k].p2p = (uint8_t)k, A.bases[k].lg = NCS_MX_LG_OTHER;
    A.bases[k].key = ~0ull - (uint64_t)k; /* never a real key (bit 63 set, and all bits) */
  }
  A.nbases = OVER_BASES;
  uint64_t now = ncs_mono_ns();
  A.win_start_ns = A.next_pub_ns = now;
  A.start_real_ns = ncs_realtime_ns();
  if (ncs_mx_serve_start() != 0) {
    free_all();
    return;
  }
  ncs_mx_active = 1;
}

void ncs_mx_end(void) {
  if (!ncs_mx_active) return;
  ncs_mx_serve_stop(); /* the metrics thread takes the final snapshot first */
  ncs_mx_active = 0;
  free_all();
}

/* A fork child has no metrics thread and no server: forget them (the memory is the child's copy,
 * the mutex may have been held by the parent's writer at the fork). */
void ncs_mx_after_fork(void) {
  ncs_mx_serve_after_fork();
  ncs_mx_active = 0;
  A.sync_ok = 0;
  free_all();
}
