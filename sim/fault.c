/* fault.c - peer coupling between the ranks of a communicator, and fault injection (--fault).
 *
 * Coupling. Real NCCL ranks depend on each other: a receive cannot finish before the peer sent,
 * a send cannot start before the peer posted the receive (clear-to-send), and a kernel cannot
 * finish before its data arrived. nccl-sim couples every eager kernel collective (Broadcast,
 * Reduce, AllGather, ReduceScatter, AllReduce; not send/receive, CE, CollNet-style or graph
 * replays) of a communicator with more than one rank: the n-th such plan of a communicator is
 * instance n on every rank. Each instance has a slot in MAP_SHARED memory, made before fork, so
 * ranks in other processes see it:
 *   entered  ranks that started the instance (their Coll);
 *   out      ranks whose send proxy ops all finished (or that have none: their data is out);
 *   left     ranks that dropped every reference to it (the slot can then be reused);
 *   marks    per (rank, lane) with lane = (task & 1) x channels + channel: SENT = send steps
 *            stopped in order, CTS = receive steps posted (RecvWait recorded).
 * A receive step of rank r waits in RecvWait until SENT[prev] > step; a send step waits after its
 * SendPeerWait until CTS[next] > step; a KernelCh stops only when entered == out == nranks. The
 * slots of a communicator form a ring of CPL_NINST; a rank that gets that far ahead waits.
 *
 * A dead peer. Coupled ranks cannot go on without every peer, as NCCL ranks cannot (NCCL's
 * sockets report the closed connection and the job aborts). A process that dies from a signal
 * other than its own kill fault (an outside SIGKILL) is seen by the parent, which peeks at its
 * children without reaping them; a dead parent is seen by its children (their parent changes).
 * Either way every process of the job ends within about 20 ms, with status 6 and one line on
 * stderr, instead of waiting out the coupling timeouts.
 *
 * Faults (docs/nccl-sim.md "Faults"): skip, stall, mismatch, mismatch-dtype and kill at the SEQ-th
 * counted collective of a rank. Hung ranks give up after --hang-s and abort; what happened to each
 * rank goes into a second shared table that the parent turns into one line on stderr.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim.h"

/* ------------------------------------------------------------------ coupling table */
#define CPL_NINST 16  /* instances of one communicator in flight at once */
#define CPL_NCOMMS 40 /* communicators (keys) coupled per run; later ones run uncoupled */

struct sim_cpl {
  _Atomic int64_t tag;   /* the instance this slot holds */
  _Atomic int released;  /* every rank left the instance in 'tag': the slot may be reused */
  _Atomic int claiming;
  _Atomic int entered, out, left;
  _Atomic uint64_t ticks; /* bumped by every change: a hung instance stops ticking */
  _Atomic int nranks; /* rewritten (same value) by each claimer while stragglers still read it */
  int pad;
  _Atomic uint64_t all_in_ns; /* CLOCK_MONOTONIC when the last rank entered (0 not yet) */
  _Atomic int begun;          /* ranks whose kernel began on their GPU (their stream let it) */
  _Atomic uint64_t begun_ns;  /* CLOCK_MONOTONIC of the latest such begin */
  /* followed by _Atomic int marks[2][g_ranks][g_lanes] */
};

/* shared: a process of the job died (sim_cpl_watch) */
typedef struct {
  _Atomic int dead;     /* 1 + the process index, 0 none */
  _Atomic int pid, sig;
} cpl_dead_t;

static struct {
  cpl_dead_t *dead;
  _Atomic uint64_t *keys; /* comm id (0 -> 1) per communicator slot, 0 free */
  char *slots;            /* CPL_NCOMMS x CPL_NINST slots of 'stride' bytes */
  size_t stride;
  int ranks, lanes;
} g_cpl;

static sim_cpl_t *slot_at(int comm, int64_t pos) {
  return (sim_cpl_t *)(g_cpl.slots + ((size_t)comm * CPL_NINST + (size_t)pos) * g_cpl.stride);
}

static _Atomic int *mark_at(sim_cpl_t *c, int which, int rank, int lane) {
  return (_Atomic int *)(c + 1) + ((size_t)which * (size_t)g_cpl.ranks + (size_t)rank) *
                                      (size_t)g_cpl.lanes + (size_t)lane;
}

int sim_couple_setup(void) {
  if (!sim_opt.couple) return 0;
  g_cpl.ranks = sim_opt.ranks;
  g_cpl.lanes = 2 * sim_opt.channels;
  size_t marks = 2 * (size_t)g_cpl.ranks * (size_t)g_cpl.lanes * sizeof(_Atomic int);
  g_cpl.stride = (sizeof(sim_cpl_t) + marks + 63) & ~(size_t)63;
  size_t head = 64, keys = (CPL_NCOMMS * sizeof(_Atomic uint64_t) + 63) & ~(size_t)63;
  size_t len = head + keys + (size_t)CPL_NCOMMS * CPL_NINST * g_cpl.stride;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    perror("nccl-sim: mmap (coupling)");
    return -1;
  }
  g_cpl.dead = m;
  g_cpl.keys = (_Atomic uint64_t *)((char *)m + head);
  g_cpl.slots = (char *)m + head + keys;
  for (int c = 0; c < CPL_NCOMMS; c++)
    for (int pos = 0; pos < CPL_NINST; pos++) { /* as if instance pos - NINST had been released */
      sim_cpl_t *s = slot_at(c, pos);
      atomic_store(&s->tag, (int64_t)pos - CPL_NINST);
      atomic_store(&s->released, 1);
    }
  return 0;
}

int sim_cpl_lanes(void) { return g_cpl.lanes; }

uint64_t sim_cpl_key(uint64_t comm_id, int grank) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static struct made {
    uint64_t id;
    int grank, n;
  } *v;
  static size_t n, cap;
  int gen = 0;
  pthread_mutex_lock(&mu);
  size_t i = 0;
  while (i < n && !(v[i].id == comm_id && v[i].grank == grank)) i++;
  if (i == n) {
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      v = realloc(v, cap * sizeof *v);
      if (!v) abort();
    }
    v[n++] = (struct made){comm_id, grank, 0};
  }
  gen = v[i].n++;
  pthread_mutex_unlock(&mu);
  return gen ? sim_mix(comm_id, (uint64_t)gen) : comm_id;
}

static int comm_slot(uint64_t k0) {
  uint64_t key = k0 ? k0 : 1;
  for (int i = 0; i < CPL_NCOMMS; i++) {
    uint64_t k = atomic_load(&g_cpl.keys[i]);
    if (k == key) return i;
    if (k == 0) {
      uint64_t z = 0;
      if (atomic_compare_exchange_strong(&g_cpl.keys[i], &z, key) || z == key) return i;
    }
  }
  return -1;
}

/* Claims the slot of instance idx (the first rank to get there resets it), then enters it. */
sim_cpl_t *sim_cpl_enter(uint64_t key, int nranks, int64_t idx) {
  if (!g_cpl.slots || nranks < 2 || nranks > g_cpl.ranks) return NULL;
  int cs = comm_slot(key);
  if (cs < 0) return NULL;
  sim_cpl_t *s = slot_at(cs, idx % CPL_NINST);
  uint64_t t0 = sim_now_ns();
  double limit = sim_fault_active() ? sim_opt.hang_s + 30.0 : 30.0;
  for (;;) {
    int64_t t = atomic_load(&s->tag);
    if (t == idx) break;
    if (t == idx - CPL_NINST && atomic_load(&s->released)) {
      int z = 0;
      if (atomic_compare_exchange_strong(&s->claiming, &z, 1)) {
        if (atomic_load(&s->tag) == idx - CPL_NINST) {
          atomic_store(&s->entered, 0);
          atomic_store(&s->all_in_ns, 0);
          atomic_store(&s->begun, 0);
          atomic_store(&s->begun_ns, 0);
          atomic_store(&s->out, 0);
          atomic_store(&s->left, 0);
          atomic_store(&s->ticks, 0);
          atomic_store_explicit(&s->nranks, nranks, memory_order_relaxed);
          for (int w = 0; w < 2; w++)
            for (int r = 0; r < nranks; r++)
              for (int l = 0; l < g_cpl.lanes; l++)
                atomic_store_explicit(mark_at(s, w, r, l), 0, memory_order_relaxed);
          atomic_store(&s->released, 0);
          atomic_store(&s->tag, idx);
        }
        atomic_store(&s->claiming, 0);
        continue;
      }
    }
    if (t > idx || (double)(sim_now_ns() - t0) * 1e-9 > limit) {
      sim_fail("coupling: communicator key %016llx instance %lld: slot holds %lld (ranks out of "
               "step)", (unsigned long long)key, (long long)idx, (long long)t);
      return NULL;
    }
    sim_sleep_us(50);
  }
  uint64_t now = sim_now_ns();
  if (atomic_fetch_add(&s->entered, 1) + 1 == nranks) atomic_store(&s->all_in_ns, now);
  atomic_fetch_add(&s->ticks, 1);
  return s;
}

void sim_cpl_out(sim_cpl_t *c) {
  atomic_fetch_add(&c->out, 1);
  atomic_fetch_add(&c->ticks, 1);
}

uint64_t sim_cpl_ticks(sim_cpl_t *c) { return atomic_load(&c->ticks); }

static int cpl_nranks(sim_cpl_t *c) { return atomic_load_explicit(&c->nranks, memory_order_relaxed); }

void sim_cpl_leave(sim_cpl_t *c) {
  int n = cpl_nranks(c);
  if (atomic_fetch_add(&c->left, 1) + 1 == n) atomic_store(&c->released, 1);
}

int sim_cpl_entered_all(sim_cpl_t *c) { return atomic_load(&c->entered) >= cpl_nranks(c); }

uint64_t sim_cpl_all_in_ns(sim_cpl_t *c) {
  return sim_cpl_entered_all(c) ? atomic_load(&c->all_in_ns) : 0;
}

void sim_cpl_begun(sim_cpl_t *c, uint64_t host_ns) {
  uint64_t b = atomic_load(&c->begun_ns);
  while (host_ns > b && !atomic_compare_exchange_weak(&c->begun_ns, &b, host_ns)) {
  }
  atomic_fetch_add(&c->begun, 1);
  atomic_fetch_add(&c->ticks, 1);
}

uint64_t sim_cpl_all_begun_ns(sim_cpl_t *c) {
  return atomic_load(&c->begun) >= cpl_nranks(c) ? atomic_load(&c->begun_ns) : 0;
}

int sim_cpl_ready(sim_cpl_t *c) {
  int n = cpl_nranks(c);
  return atomic_load(&c->entered) >= n && atomic_load(&c->out) >= n;
}

void sim_cpl_mark(sim_cpl_t *c, int which, int rank, int lane, int value) {
  _Atomic int *m = mark_at(c, which, rank, lane);
  int v = atomic_load(m);
  while (v < value && !atomic_compare_exchange_weak(m, &v, value)) {
  }
  atomic_fetch_add(&c->ticks, 1);
}

int sim_cpl_get(sim_cpl_t *c, int which, int rank, int lane) {
  return atomic_load(mark_at(c, which, rank, lane));
}

/* ------------------------------------------------------------------ fault options */
static const char *const kind_names[SIM_NFAULT_KINDS] = {
    "none", "skip", "stall", "mismatch", "mismatch-dtype", "kill", "ktime"};

const char *sim_fault_name(int kind) {
  return kind > 0 && kind < SIM_NFAULT_KINDS ? kind_names[kind] : "none";
}

static int parse_one(const char *spec) {
  char kind[32];
  const char *c1 = strchr(spec, ':');
  if (!c1 || (size_t)(c1 - spec) >= sizeof kind) goto bad;
  memcpy(kind, spec, (size_t)(c1 - spec));
  kind[c1 - spec] = 0;
  int k = 0;
  for (int i = 1; i < SIM_NFAULT_KINDS; i++)
    if (strcmp(kind, kind_names[i]) == 0) k = i;
  if (!k) goto bad;
  char *e;
  errno = 0;
  long rank = strtol(c1 + 1, &e, 10);
  if (e == c1 + 1 || *e != ':' || errno || rank < 0 || rank >= SIM_MAX_RANKS) goto bad;
  const char *s3 = e + 1;
  long long seq = strtoll(s3, &e, 10);
  if (e == s3 || *e || errno || seq < 0) goto bad;
  if (sim_opt.nfaults >= SIM_MAX_FAULTS) {
    fprintf(stderr, "nccl-sim: at most %d faults\n", SIM_MAX_FAULTS);
    return -1;
  }
  sim_opt.faults[sim_opt.nfaults++] = (sim_fault_t){k, (int)rank, (int64_t)seq};
  return 0;
bad:
  fprintf(stderr,
          "nccl-sim: bad --fault '%s': expected KIND:RANK:SEQ, KIND one of skip, stall, mismatch, "
          "mismatch-dtype, kill, ktime; RANK and SEQ numbers from 0\n",
          spec);
  return -1;
}

int sim_fault_parse(const char *arg) {
  char buf[512];
  if (strlen(arg) >= sizeof buf) {
    fprintf(stderr, "nccl-sim: --fault list too long\n");
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", arg);
  char *save = NULL;
  int n = 0;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
    if (parse_one(t)) return -1;
  if (!n) return parse_one(arg);
  return 0;
}

int sim_fault_check_opts(const char *scenario) {
  if (!sim_opt.nfaults) return 0;
  static const char *const ok[] = {"allreduce", "allgather", "reducescatter",
                                   "broadcast", "reduce",    "mixed"};
  int found = 0;
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) found |= strcmp(scenario, ok[i]) == 0;
  if (!found) {
    fprintf(stderr,
            "nccl-sim: --fault works with the scenarios allreduce, allgather, reducescatter, "
            "broadcast, reduce and mixed, not '%s'\n",
            scenario);
    return -1;
  }
  if (!sim_opt.couple) {
    fprintf(stderr, "nccl-sim: --fault needs --couple on\n");
    return -1;
  }
  if (sim_opt.ranks < 2) {
    fprintf(stderr, "nccl-sim: --fault needs at least 2 ranks\n");
    return -1;
  }
  for (int i = 0; i < sim_opt.nfaults; i++)
    if (sim_opt.faults[i].rank >= sim_opt.ranks) {
      fprintf(stderr, "nccl-sim: --fault %s:%d:%lld: rank %d out of range (--ranks %d)\n",
              kind_names[sim_opt.faults[i].kind], sim_opt.faults[i].rank,
              (long long)sim_opt.faults[i].seq, sim_opt.faults[i].rank, sim_opt.ranks);
      return -1;
    }
  return 0;
}

/* ------------------------------------------------------------------ fault state */
typedef struct {
  int state;   /* SIM_RS_HUNG, _SKIPPED, _KILLED (first one wins), 0 none */
  int stalled; /* the stall fault froze this rank's sends */
  int func;
  int64_t op;
  uint64_t seqno, comm_id;
} rank_status_t;

typedef struct {
  pthread_mutex_t mu; /* process-shared */
  _Atomic int fired[SIM_MAX_FAULTS];
  rank_status_t r[SIM_MAX_RANKS];
} fault_shared_t;

static fault_shared_t *g_fs;
static _Thread_local int t_halted;
static _Atomic int g_aborting;

int sim_fault_active(void) { return sim_opt.nfaults > 0; }

int sim_fault_setup(void) {
  if (!sim_opt.nfaults) return 0;
  void *m = mmap(NULL, sizeof *g_fs, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    perror("nccl-sim: mmap (faults)");
    return -1;
  }
  g_fs = m;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(&g_fs->mu, &a);
  pthread_mutexattr_destroy(&a);
  return 0;
}

int sim_fault_at(int grank, int64_t op) {
  for (int i = 0; i < sim_opt.nfaults; i++)
    if (sim_opt.faults[i].rank == grank && sim_opt.faults[i].seq == op) {
      if (g_fs) atomic_store(&g_fs->fired[i], 1);
      return sim_opt.faults[i].kind;
    }
  return 0;
}

void sim_fault_note(int grank, int state, uint64_t comm_id, int func, int64_t op, uint64_t seqno) {
  if (!g_fs || grank < 0 || grank >= SIM_MAX_RANKS) return;
  pthread_mutex_lock(&g_fs->mu);
  rank_status_t *r = &g_fs->r[grank];
  if (state == SIM_RS_STALLED) {
    r->stalled = 1;
  } else if (!r->state) {
    r->state = state;
  } else {
    pthread_mutex_unlock(&g_fs->mu);
    return;
  }
  r->func = func, r->op = op, r->seqno = seqno, r->comm_id = comm_id;
  pthread_mutex_unlock(&g_fs->mu);
}

static void halt(void) {
  t_halted = 1;
  atomic_store(&g_aborting, 1);
}

void sim_fault_hung(const sim_inst_t *in) {
  sim_fault_note(in->grank, SIM_RS_HUNG, in->comm_id, in->func, in->opidx, in->seqno);
  halt();
}

void sim_fault_idle(void) {
  sim_sleep_us((unsigned)(sim_opt.hang_s * 1e6));
  halt();
}

int sim_fault_halted(void) { return t_halted; }
int sim_fault_aborting(void) { return atomic_load(&g_aborting); }
int sim_fault_proc_status(void) { return atomic_load(&g_aborting) ? 3 : 0; }

/* ------------------------------------------------------------------ the parent's report */
typedef struct {
  char *s;
  size_t n, cap;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    size_t room = b->cap - b->n;
    va_start(ap, fmt);
    int w = vsnprintf(b->s ? b->s + b->n : NULL, room, fmt, ap);
    va_end(ap);
    if (w < 0) return;
    if ((size_t)w < room) {
      b->n += (size_t)w;
      return;
    }
    b->cap = (b->cap + (size_t)w + 64) * 2;
    char *ns = realloc(b->s, b->cap);
    if (!ns) abort();
    b->s = ns;
  }
}

/* "0-2,5": the ranks with sel[r] set */
static void sb_ranks(sbuf_t *b, const char *sel, int n) {
  int first = 1;
  for (int r = 0; r < n;) {
    if (!sel[r]) {
      r++;
      continue;
    }
    int e = r;
    while (e + 1 < n && sel[e + 1]) e++;
    sb_printf(b, "%s%d", first ? "" : ",", r);
    if (e > r) sb_printf(b, "%s%d", e == r + 1 ? "," : "-", e);
    first = 0;
    r = e + 1;
  }
}

static void sb_op(sbuf_t *b, const rank_status_t *r) {
  const char *func = r->func >= 0 && r->func < SIM_NFUNCS ? sim_func_str[r->func] : "?";
  sb_printf(b, "%s seqNumber %llu", func, (unsigned long long)r->seqno);
  if (r->op >= 0)
    sb_printf(b, " (op %lld on comm 0x%016llx)", (long long)r->op, (unsigned long long)r->comm_id);
  else
    sb_printf(b, " (comm 0x%016llx)", (unsigned long long)r->comm_id);
}

/* "it" when a hung group already named the op */
static void sb_op_or_it(sbuf_t *b, const rank_status_t *r) {
  for (int q = 0; q < sim_opt.ranks; q++) {
    const rank_status_t *x = &g_fs->r[q];
    if (x->state == SIM_RS_HUNG && x->comm_id == r->comm_id && x->func == r->func &&
        x->seqno == r->seqno) {
      sb_printf(b, "it");
      return;
    }
  }
  sb_op(b, r);
}

static int proc_of(int grank) {
  int per = (sim_opt.ranks + sim_opt.procs - 1) / sim_opt.procs;
  return grank / per;
}

int sim_fault_report(const pid_t *pids, const int *status, int nprocs) {
  int n = sim_opt.ranks, rc = 0, any_hung = 0, killed = 0;
  char *sel = sim_xcalloc((size_t)n, 1), *done = sim_xcalloc((size_t)n, 1);
  sbuf_t b = {0};
  /* processes: a child that died other than by its kill fault is a failure */
  for (int p = 0; p < nprocs; p++) {
    int st = status[p];
    int kill_here = 0;
    for (int r = 0; r < n; r++)
      if (proc_of(r) == p && g_fs->r[r].state == SIM_RS_KILLED) kill_here = 1;
    if (WIFSIGNALED(st)) {
      if (!(kill_here && WTERMSIG(st) == SIGKILL)) {
        fprintf(stderr, "nccl-sim: process %d (pid %d) killed by signal %d\n", p,
                (int)pids[p], WTERMSIG(st));
        rc = 1;
      } else {
        killed = 1;
      }
    } else if (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 3) {
      fprintf(stderr, "nccl-sim: process %d (pid %d) exited with %d\n", p, (int)pids[p],
              WEXITSTATUS(st));
      rc = 1;
    }
  }
  /* hung ranks, grouped by the op they hung in */
  for (int r = 0; r < n; r++) {
    const rank_status_t *a = &g_fs->r[r];
    if (a->state != SIM_RS_HUNG || done[r]) continue;
    memset(sel, 0, (size_t)n);
    for (int q = r; q < n; q++) {
      const rank_status_t *x = &g_fs->r[q];
      if (x->state == SIM_RS_HUNG && !done[q] && x->comm_id == a->comm_id && x->func == a->func &&
          x->seqno == a->seqno)
        sel[q] = done[q] = 1;
    }
    sb_printf(&b, "%s", any_hung ? "; " : "");
    int cnt = 0;
    for (int q = 0; q < n; q++) cnt += sel[q];
    sb_printf(&b, "%s ", cnt > 1 ? "ranks" : "rank");
    sb_ranks(&b, sel, n);
    sb_printf(&b, " hung in ");
    sb_op(&b, a);
    any_hung = 1;
  }
  if (any_hung) sb_printf(&b, " and aborted after %g s without progress", sim_opt.hang_s);
  /* what the faults did */
  for (int i = 0; i < sim_opt.nfaults; i++) {
    const sim_fault_t *f = &sim_opt.faults[i];
    const rank_status_t *a = &g_fs->r[f->rank];
    char spec[64];
    snprintf(spec, sizeof spec, "%s:%d:%lld", kind_names[f->kind], f->rank, (long long)f->seq);
    if (!atomic_load(&g_fs->fired[i])) {
      fprintf(stderr, "nccl-sim: warning: fault %s never fired (rank %d made fewer counted "
                      "collectives)\n", spec, f->rank);
      continue;
    }
    if (f->kind == SIM_FAULT_SKIP && a->state == SIM_RS_SKIPPED) {
      sb_printf(&b, "; rank %d never called ", f->rank);
      sb_op_or_it(&b, a);
      sb_printf(&b, " (fault %s)", spec);
    } else if (f->kind == SIM_FAULT_STALL && a->stalled) {
      sb_printf(&b, "; rank %d stalled inside ", f->rank);
      sb_op_or_it(&b, a);
      sb_printf(&b, " (fault %s)", spec);
    } else if (f->kind == SIM_FAULT_KILL && a->state == SIM_RS_KILLED) {
      int p = proc_of(f->rank);
      memset(sel, 0, (size_t)n);
      for (int q = 0; q < n; q++) sel[q] = proc_of(q) == p;
      sb_printf(&b, "%srank %d killed process %d (pid %d, ranks ", b.n ? "; " : "", f->rank, p,
                (int)pids[p]);
      sb_ranks(&b, sel, n);
      sb_printf(&b, ") before ");
      sb_op_or_it(&b, a);
      sb_printf(&b, " (fault %s)", spec);
    }
  }
  if (any_hung) {
    fprintf(stderr, "nccl-sim: hang: %s\n", b.s);
    if (!rc) rc = 3;
  } else if (killed) {
    fprintf(stderr, "nccl-sim: killed: %s; no rank left to hang\n", b.s ? b.s : "");
    if (!rc) rc = 4;
  }
  free(b.s);
  free(sel);
  free(done);
  return rc;
}

/* ------------------------------------------------------------------ a dead peer */
static struct {
  pid_t parent;      /* a child: the parent it was forked by */
  const pid_t *kids; /* the parent: its children, processes first.. */
  int nkids, first, runs_ranks;
  _Atomic int reaping; /* the parent's main thread waits for its children itself */
  _Atomic int reported;
} g_watch;

/* The first death is the one reported. */
static void mark_dead(int p, pid_t pid, int sig) {
  static _Atomic int claimed; /* in this process; processes race only through dead below */
  int z = 0;
  if (!g_cpl.dead || atomic_load(&g_cpl.dead->dead) || !atomic_compare_exchange_strong(&claimed, &z, 1))
    return;
  atomic_store(&g_cpl.dead->pid, (int)pid);
  atomic_store(&g_cpl.dead->sig, sig);
  atomic_store(&g_cpl.dead->dead, 1 + p);
}

/* a death by a signal other than the process's own kill fault */
static int unexpected(int p, int sig) {
  for (int r = 0; g_fs && r < sim_opt.ranks; r++)
    if (proc_of(r) == p && g_fs->r[r].state == SIM_RS_KILLED && sig == SIGKILL) return 0;
  return 1;
}

void sim_cpl_reaped(int p, pid_t pid, int status) {
  if (WIFSIGNALED(status) && unexpected(p, WTERMSIG(status))) mark_dead(p, pid, WTERMSIG(status));
}

/* 1 while child pid exists and has not ended (peeked at: it is left to be reaped) */
static int running(pid_t pid, siginfo_t *si) {
  memset(si, 0, sizeof *si);
  return waitid(P_PID, (id_t)pid, si, WEXITED | WNOHANG | WNOWAIT) == 0 && si->si_pid == 0;
}

/* The parent that also runs ranks: once the others are gone (at most 5 s, then SIGKILL), say
 * why and end. */
static void parent_ends(void) {
  siginfo_t si;
  for (int t = 0; t < 500; t++) {
    int left = 0;
    for (int i = 0; i < g_watch.nkids; i++) left += running(g_watch.kids[i], &si);
    if (!left) break;
    sim_sleep_us(10000);
  }
  for (int i = 0; i < g_watch.nkids; i++)
    if (running(g_watch.kids[i], &si)) kill(g_watch.kids[i], SIGKILL);
  sim_cpl_dead_report();
  fflush(stdout);
  _exit(SIM_EXIT_PEER_DIED);
}

static void *watch_main(void *arg) {
  (void)arg;
  for (;;) {
    sim_sleep_us(10000);
    if (g_watch.parent && getppid() != g_watch.parent) { /* the parent died: its pid is gone */
      fprintf(stderr, "nccl-sim[%d]: the parent process (pid %d) died; coupled ranks cannot go "
              "on without it: exiting\n", (int)getpid(), (int)g_watch.parent);
      _exit(SIM_EXIT_PEER_DIED);
    }
    siginfo_t si;
    for (int i = 0; i < g_watch.nkids; i++)
      if (!running(g_watch.kids[i], &si) && si.si_pid == g_watch.kids[i] &&
          (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) &&
          unexpected(g_watch.first + i, si.si_status))
        mark_dead(g_watch.first + i, g_watch.kids[i], si.si_status);
    if (!atomic_load(&g_cpl.dead->dead)) continue;
    if (g_watch.parent) _exit(SIM_EXIT_PEER_DIED); /* a child: the parent says why */
    if (g_watch.runs_ranks && !atomic_load(&g_watch.reaping)) parent_ends();
    return NULL; /* the parent's main thread reaps and reports (sim_cpl_dead_report) */
  }
}

void sim_cpl_watch(const pid_t *kids, int nkids, int first, int runs_ranks) {
  if (!g_cpl.dead || sim_opt.procs < 2) return;
  g_watch.parent = kids ? 0 : getppid();
  g_watch.kids = kids, g_watch.nkids = nkids, g_watch.first = first;
  g_watch.runs_ranks = runs_ranks;
  pthread_t t;
  if (pthread_create(&t, NULL, watch_main, NULL) == 0) pthread_detach(t);
}

void sim_cpl_reaping(void) { atomic_store(&g_watch.reaping, 1); }

int sim_cpl_dead_report(void) {
  int d = g_cpl.dead ? atomic_load(&g_cpl.dead->dead) : 0;
  if (!d) return 0;
  if (atomic_exchange(&g_watch.reported, 1)) return 1; /* said once */
  char ranks[64];
  int lo = -1, hi = -1;
  for (int r = 0; r < sim_opt.ranks; r++)
    if (proc_of(r) == d - 1) hi = r, lo = lo < 0 ? r : lo;
  if (lo == hi)
    snprintf(ranks, sizeof ranks, "rank %d", lo);
  else
    snprintf(ranks, sizeof ranks, "ranks %d-%d", lo, hi);
  fprintf(stderr, "nccl-sim: process %d (pid %d, %s) was killed by signal %d; coupled ranks "
          "cannot go on without it: every process stopped (exit %d)\n", d - 1,
          atomic_load(&g_cpl.dead->pid), ranks, atomic_load(&g_cpl.dead->sig),
          SIM_EXIT_PEER_DIED);
  return 1;
}
