/* scenarios.c - scenario tests: nccl-sim drives a profiler plugin, the trace reader checks what
 * the plugin recorded against what nccl-sim says it called.
 *
 *   scenario_test --sim PATH --plugin PATH --scenario NAME [--abi N] [--events LIST]
 *                 [--buffer SIZE] [--expect-drops] [--keep] [-- more nccl-sim args]
 *
 * Runs nccl-sim into a fresh directory (NCCLSCOPE_DIR, NCCLSCOPE_EVENTS=all unless --events),
 * parses its summary lines, reads every trace file and checks:
 *   - every segment has a FOOTER, the reader finds no damage, ABI version of the COMM chunks;
 *   - START/STOP/STATE counts per type equal nccl-sim's calls; no drops (footer 0x4tt, 0x06),
 *     or with --expect-drops: recorded + dropped == called;
 *   - every START's parent is a local event of the expected type (CollApi -> Coll, Coll ->
 *     ProxyOp/KernelCh, ProxyOp -> ProxyStep, ProxyStep -> NetPlugin, ...), per ABI version;
 *   - only the types and states the ABI version allows;
 *   - every Coll/P2p whose children all stopped has a final COMPLETE with end_ns = the last child
 *     stop and gpu_stop = the last KernelChStop pTimer; one with open children is FORCED/EXPIRED;
 *   - Coll seqNumbers per (communicator, func) run 0..n-1;
 *   - per scenario: pxn foreign ProxyOps, neverstop/abort expiry, stale handle counters,
 *     reload segments, graph replay parents, grouped cross-communicator parents, ...
 *   - ABI v7: every KernelPhase lies inside its KernelCh (channel, GPU times, names); userTag is
 *     the one nccl-sim gave (Coll/P2p/CeColl carry their API event's), 0 before v7; symmetric
 *     kernels (scenario symmetric) are Colls with isSymColl, kernelVariant, algo its suffix, no
 *     protocol, no ProxyOp and a KernelCh per channel, and before v7 are API events only.
 * Exit status 0 when everything held.
 */
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/ncs_abi.h"
#include "trace/reader.h"

#define NT NCS_T_COUNT

static int g_fails;

static void failf(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL (scenarios.c:%d): ", line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  g_fails++;
}
/* Report at most a few failures of one kind: a broken invariant repeats for every event. */
#define CHECK(cond, ...)                                                                          \
  do {                                                                                            \
    if (!(cond) && g_fails < 200) failf(__LINE__, __VA_ARGS__);                                   \
    else if (!(cond)) g_fails++;                                                                  \
  } while (0)

/* ------------------------------------------------------------------ options */
static struct {
  const char *sim, *plugin, *scenario, *events, *buffer;
  int abi, keep, expect_drops, timeout;
  char **extra;
  int nextra;
} O = {.events = "all", .timeout = 300};

static int parse_opts(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--")) {
      O.extra = argv + i + 1;
      O.nextra = argc - i - 1;
      break;
    }
    if (!strcmp(a, "--keep")) O.keep = 1;
    else if (!strcmp(a, "--expect-drops")) O.expect_drops = 1;
    else if (!v) {
      fprintf(stderr, "scenario_test: %s needs a value\n", a);
      return -1;
    } else if (!strcmp(a, "--sim")) O.sim = v, i++;
    else if (!strcmp(a, "--plugin")) O.plugin = v, i++;
    else if (!strcmp(a, "--scenario")) O.scenario = v, i++;
    else if (!strcmp(a, "--events")) O.events = v, i++;
    else if (!strcmp(a, "--buffer")) O.buffer = v, i++;
    else if (!strcmp(a, "--abi")) O.abi = atoi(v), i++;
    else if (!strcmp(a, "--timeout")) O.timeout = atoi(v), i++;
    else {
      fprintf(stderr, "scenario_test: unknown option %s\n", a);
      return -1;
    }
  }
  if (!O.sim || !O.plugin || !O.scenario) {
    fprintf(stderr, "usage: scenario_test --sim PATH --plugin PATH --scenario NAME [--abi N] "
                    "[--events LIST] [--buffer SIZE] [--expect-drops] [--keep] [-- sim args]\n");
    return -1;
  }
  return 0;
}

static int is(const char *name) { return strcmp(O.scenario, name) == 0; }

/* ------------------------------------------------------------------ nccl-sim's summary */
typedef struct {
  char key[48][32];
  uint64_t val[48];
  int n, have_main, have_types;
  uint64_t start[NT], stop[NT], state[NT];
} summary_t;

static uint64_t sv(const summary_t *s, const char *key) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->key[i], key)) return s->val[i];
  failf(__LINE__, "nccl-sim summary has no '%s'", key);
  return 0;
}

static void parse_main(summary_t *s, char *line) {
  for (char *tok = strtok(line, " \n"); tok; tok = strtok(NULL, " \n")) {
    char *eq = strchr(tok, '=');
    if (!eq || s->n >= 48 || eq - tok >= 32) continue;
    *eq = 0;
    snprintf(s->key[s->n], sizeof s->key[0], "%s", tok);
    s->val[s->n++] = strtoull(eq + 1, NULL, 0);
  }
  s->have_main = 1;
}

static void parse_types(summary_t *s, char *line) {
  for (char *tok = strtok(line, " \n"); tok; tok = strtok(NULL, " \n")) {
    char *eq = strchr(tok, '=');
    if (!eq) continue;
    *eq = 0;
    for (int t = 0; t < NT; t++)
      if (!strcmp(tok, ncs_schema[t].name)) {
        unsigned long long a, b, c;
        if (sscanf(eq + 1, "%llu,%llu,%llu", &a, &b, &c) == 3)
          s->start[t] = a, s->stop[t] = b, s->state[t] = c;
      }
  }
  s->have_types = 1;
}

static void parse_summary(summary_t *s, char *out) {
  for (char *line = out, *nl; line && *line; line = nl) {
    nl = strchr(line, '\n');
    if (nl) *nl++ = 0;
    if (!strncmp(line, "nccl-sim: ", 10)) parse_main(s, line + 10);
    else if (!strncmp(line, "nccl-sim-types: ", 16)) parse_types(s, line + 16);
  }
}

/* ------------------------------------------------------------------ running nccl-sim */
static volatile pid_t g_child;
static void on_alarm(int sig) {
  (void)sig;
  if (g_child > 0) kill(g_child, SIGKILL);
}

static char *read_all(int fd) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (n + 1 >= cap) buf = realloc(buf, cap *= 2);
    ssize_t r = read(fd, buf + n, cap - n - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  buf[n] = 0;
  return buf;
}

static void child_exec(const char *dir, int out_fd) {
  dup2(out_fd, 1);
  setenv("NCCLSCOPE_DIR", dir, 1);
  setenv("NCCLSCOPE_EVENTS", O.events, 1);
  if (O.buffer) setenv("NCCLSCOPE_BUFFER_SIZE", O.buffer, 1);
  unsetenv("NCCLSCOPE_DISABLE");
  char abi[16];
  snprintf(abi, sizeof abi, "%d", O.abi);
  const char **argv = calloc((size_t)O.nextra + 10, sizeof *argv);
  int k = 0;
  argv[k++] = O.sim;
  argv[k++] = "--plugin", argv[k++] = O.plugin;
  argv[k++] = "--scenario", argv[k++] = O.scenario;
  if (O.abi) argv[k++] = "--abi", argv[k++] = abi;
  for (int i = 0; i < O.nextra; i++) argv[k++] = O.extra[i];
  execv(O.sim, (char *const *)argv);
  perror("exec nccl-sim");
  _exit(127);
}

/* Returns nccl-sim's exit status (-1: killed). */
static int run_sim(const char *dir, summary_t *sum) {
  int p[2];
  if (pipe(p)) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    child_exec(dir, p[1]);
  }
  close(p[1]);
  g_child = pid;
  signal(SIGALRM, on_alarm);
  alarm((unsigned)O.timeout);
  char *out = read_all(p[0]);
  close(p[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  alarm(0);
  fputs(out, stdout);
  parse_summary(sum, out);
  free(out);
  if (WIFSIGNALED(st)) {
    failf(__LINE__, "nccl-sim died with signal %d%s", WTERMSIG(st),
          WTERMSIG(st) == SIGKILL ? " (timeout: a hang?)" : "");
    return -1;
  }
  return WEXITSTATUS(st);
}

/* ------------------------------------------------------------------ events of one segment */
enum { F_OTHER = 0, F_COLLFUNC_BASE = 1 };

typedef struct {
  uint64_t id; /* 0: free slot */
  int8_t type; /* -1: no START seen (yet) */
  uint8_t ctx_kind, parent_kind, pg_kind, captured, stopped, expired, has_complete;
  uint32_t flags, cflags, c_nk, c_np;
  uint64_t ctx, parent, pg, stop_ts, kstop, seq, end_ns, gpu_stop;
  int func; /* index in func_names, -1 other */
  /* children, filled at the end of the segment; "late": started after the COMPLETE's end */
  uint32_t k_n, p_n, open, late_k, late_p;
  uint64_t max_stop, max_kstop, early_stop, early_kstop, start_ts;
  /* ABI v7: userTag (Coll, P2p, their API events, CeColl); KernelCh and KernelPhase: channel,
     GPU start (pTimer) and KernelPhase's end (KernelPhaseStop), phaseId; Coll: isSymColl */
  uint64_t tag, ptimer, pend;
  uint8_t chan, phase, sym, nch;
  uint8_t nphases; /* KernelCh: its KernelPhase children */
} ev_t;

typedef struct {
  ev_t *v;
  size_t cap, n;
} evmap_t;

static const char *const func_names[] = {"Broadcast", "Reduce",   "AllGather", "ReduceScatter",
                                         "AllReduce", "SendRecv", "Send",      "Recv"};
#define NFUNC 8

static size_t hslot(uint64_t id, size_t cap) {
  return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static ev_t *ev_find(evmap_t *m, uint64_t id) {
  if (!m->cap || !id) return NULL;
  for (size_t i = hslot(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->v[i].id == id) return &m->v[i];
    if (!m->v[i].id) return NULL;
  }
}

static ev_t *ev_slot(evmap_t *m, uint64_t id) {
  size_t i = hslot(id, m->cap);
  while (m->v[i].id && m->v[i].id != id) i = (i + 1) & (m->cap - 1);
  return &m->v[i];
}

static void evmap_grow(evmap_t *m) {
  evmap_t g = {calloc(m->cap ? m->cap * 2 : 4096, sizeof(ev_t)), m->cap ? m->cap * 2 : 4096, m->n};
  for (size_t i = 0; i < m->cap; i++)
    if (m->v[i].id) *ev_slot(&g, m->v[i].id) = m->v[i];
  free(m->v);
  *m = g;
}

static ev_t *ev_get(evmap_t *m, uint64_t id) {
  if (2 * (m->n + 1) > m->cap) evmap_grow(m);
  ev_t *e = ev_slot(m, id);
  if (!e->id) {
    memset(e, 0, sizeof *e);
    e->id = id;
    e->type = -1;
    e->func = -1;
    m->n++;
  }
  return e;
}

static void evmap_clear(evmap_t *m) {
  free(m->v);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------ totals over the run */
typedef struct {
  uint64_t start[NT], stop[NT], state[NT], expired[NT], drops[NT], states_by_value[32];
  uint64_t ctr[0x20];
  uint64_t lost[NCS_LOSS_MAX + 1][NT]; /* LOSS records by reason and type */
  uint64_t files, segments, footers, comms, bad_abi;
  uint64_t pxn_ops, forced, completes_checked, graph_colls, cross_ctx, ncclint8_bad;
  uint64_t late; /* COMPLETEs some children came after (a thread far behind) */
  uint64_t seq_groups;
  /* ABI v7 */
  uint64_t tagged, tag_mismatch, sym_colls, sym_bad, nonsym_bad, phases, phase_bad, kch_phases_bad;
} totals_t;

static int field_index(int type, const char *name) {
  for (int i = 0; i < ncs_schema[type].nfields; i++)
    if (!strcmp(ncs_schema[type].fields[i].name, name)) return i;
  return -1;
}

static int func_of(const char *s) {
  for (int i = 0; s && i < NFUNC; i++)
    if (!strcmp(s, func_names[i])) return i;
  return -1;
}

/* The fields ABI v7 added; strings are checked here, while they are valid. */
static void on_start_v7(ev_t *e, totals_t *T, const ncs_event_t *ev) {
  int t = ev->type, tf = field_index(t, "userTag");
  if (tf >= 0) e->tag = ev->f[tf], T->tagged += e->tag != 0;
  if (t == NCS_T_COLL) {
    const char *var = ev->fstr[NCS_F(Coll, kernelVariant)], *algo = ev->fstr[NCS_F(Coll, algo)];
    const char *proto = ev->fstr[NCS_F(Coll, proto)], *u = var ? strchr(var, '_') : NULL;
    e->sym = (uint8_t)ev->f[NCS_F(Coll, isSymColl)];
    e->nch = (uint8_t)ev->f[NCS_F(Coll, nChannels)];
    if (e->sym) { /* NCCL 2.31: algo is the variant's part after its first '_', no protocol */
      T->sym_colls++;
      T->sym_bad += !var || !u || !algo || strcmp(algo, u + 1) || !proto || *proto;
    } else {
      T->nonsym_bad += var != NULL;
    }
  }
  if (t == NCS_T_KERNEL_CH) e->chan = (uint8_t)ev->f[NCS_F(KernelCh, channelId)], e->ptimer = ev->f[NCS_F(KernelCh, pTimer)];
  if (t == NCS_T_KERNEL_PHASE) {
    static const char *const names[3] = {"initial_sync", "compute", "final_sync"};
    const char *name = ev->fstr[NCS_F(KernelPhase, phaseName)];
    e->chan = (uint8_t)ev->f[NCS_F(KernelPhase, channelId)];
    e->phase = (uint8_t)ev->f[NCS_F(KernelPhase, phaseId)];
    e->ptimer = ev->f[NCS_F(KernelPhase, pTimer)];
    T->phase_bad += e->phase > 2 || !name || strcmp(name, names[e->phase > 2 ? 0 : e->phase]);
  }
}

static void on_start(evmap_t *m, totals_t *T, const ncs_event_t *ev) {
  ev_t *e = ev_get(m, ev->id);
  CHECK(e->type < 0, "two STARTs for event id %llu", (unsigned long long)ev->id);
  e->type = (int8_t)ev->type;
  e->start_ts = ev->ts;
  e->ctx_kind = ev->ctx_kind, e->ctx = ev->ctx;
  e->parent_kind = ev->parent_kind, e->parent = ev->parent;
  e->flags = ev->flags;
  T->start[ev->type]++;
  int t = ev->type;
  if (t == NCS_T_COLL || t == NCS_T_P2P) {
    int pg = field_index(t, "parentGroup");
    if (pg >= 0) e->pg_kind = ev->fref_kind[pg], e->pg = ev->f[pg];
    e->func = func_of(ev->fstr[field_index(t, "func")]);
  }
  if (t == NCS_T_COLL) {
    e->seq = ev->f[field_index(t, "seqNumber")];
    const char *dt = ev->fstr[field_index(t, "datatype")];
    if ((e->func == 0 || e->func == 2) && (!dt || strcmp(dt, "ncclInt8") != 0))
      T->ncclint8_bad++; /* AllGather/Broadcast count bytes (R§2.9) */
  }
  if (t == NCS_T_COLL_API) e->captured = (uint8_t)ev->f[field_index(t, "graphCaptured")];
  on_start_v7(e, T, ev);
}

static void on_event(evmap_t *m, totals_t *T, const ncs_event_t *ev) {
  if (ev->type >= NT) {
    failf(__LINE__, "record of unknown type %u", ev->type);
    return;
  }
  ev_t *e;
  switch (ev->kind) {
  case NCS_REC_START: on_start(m, T, ev); break;
  case NCS_REC_STOP:
    e = ev_get(m, ev->id);
    e->stopped = 1;
    if (ev->ts > e->stop_ts) e->stop_ts = ev->ts;
    T->stop[ev->type]++;
    break;
  case NCS_REC_STATE:
    e = ev_get(m, ev->id);
    T->state[ev->type]++;
    if (ev->state < 32) T->states_by_value[ev->state]++;
    if (ev->state == 22 && ev->arg0 > e->kstop) e->kstop = ev->arg0; /* KernelChStop pTimer */
    if (ev->state == NCS_ST_KERNEL_PHASE_STOP) e->pend = ev->arg0;
    break;
  case NCS_REC_COMPLETE:
    e = ev_get(m, ev->id);
    e->has_complete = 1; /* the last one wins */
    e->cflags = ev->cflags, e->end_ns = ev->end_ns, e->gpu_stop = ev->gpu_stop;
    e->c_nk = ev->n_kernel_ch, e->c_np = ev->n_proxy_op;
    break;
  case NCS_REC_EXPIRED:
    e = ev_get(m, ev->id);
    e->expired = 1;
    T->expired[ev->type]++;
    break;
  default: failf(__LINE__, "record of unknown kind %u", ev->kind);
  }
}

/* ------------------------------------------------------------------ per-segment checks */
/* Which type the parent of a START must have; -1: no parent. */
static int parent_type(int t, int abi, int *alt) {
  *alt = -1;
  switch (t) {
  case NCS_T_COLL: return abi >= 5 ? NCS_T_COLL_API : NCS_T_GROUP;
  case NCS_T_P2P: return abi >= 5 ? NCS_T_P2P_API : NCS_T_GROUP;
  case NCS_T_PROXY_OP:
  case NCS_T_KERNEL_CH: *alt = NCS_T_P2P; return NCS_T_COLL;
  case NCS_T_PROXY_STEP: return NCS_T_PROXY_OP;
  case NCS_T_KERNEL_PHASE: return NCS_T_KERNEL_CH;
  case NCS_T_NET_PLUGIN: return NCS_T_PROXY_STEP;
  case NCS_T_COLL_API:
  case NCS_T_P2P_API:
  case NCS_T_KERNEL_LAUNCH: return NCS_T_GROUP_API;
  case NCS_T_CE_COLL: return NCS_T_COLL_API;
  case NCS_T_CE_SYNC:
  case NCS_T_CE_BATCH: return NCS_T_CE_COLL;
  default: return -1;
  }
}

static int type_allowed(int abi, int t) {
  if (abi >= 7) return 1;
  if (abi == 6) return t != NCS_T_KERNEL_PHASE;
  if (abi == 5) return t < NCS_T_CE_COLL;
  if (t >= NCS_T_GROUP_API) return 0;
  if (abi >= 3) return 1;
  return t != NCS_T_KERNEL_CH && t != NCS_T_NET_PLUGIN;
}

static int state_allowed(int abi, int s) {
  int ctrl = s >= 13 && s <= 18, step = s >= 8 && s <= 12;
  if (abi >= 7) return 1;
  if (abi == 6) return s != NCS_ST_KERNEL_PHASE_STOP;
  if (abi == 5) return s < 25;
  if (abi == 4) return ctrl || step || s == 19 || s == 20 || s == 21 || s == 22;
  return ctrl || step;
}

static void check_parent(evmap_t *m, const ev_t *e, int abi) {
  int alt, want = parent_type(e->type, abi, &alt);
  const char *tn = ncs_type_name((unsigned)e->type);
  if (e->type == NCS_T_PROXY_OP && (e->flags & NCS_SF_PXN)) {
    CHECK(e->parent_kind == NCS_REF_FOREIGN, "PXN ProxyOp %llu: parent kind %u, want FOREIGN",
          (unsigned long long)e->id, e->parent_kind);
    CHECK(e->ctx_kind == NCS_CTX_FOREIGN || e->ctx_kind == NCS_CTX_INVALID,
          "PXN ProxyOp %llu: context kind %u, want FOREIGN or INVALID", (unsigned long long)e->id,
          e->ctx_kind);
    return;
  }
  CHECK(e->ctx_kind != NCS_CTX_FOREIGN || e->type == NCS_T_PROXY_STEP ||
            e->type == NCS_T_NET_PLUGIN,
        "%s %llu has a foreign context but is not a PXN ProxyOp or its child", tn,
        (unsigned long long)e->id);
  if (want < 0) {
    CHECK(e->parent_kind == NCS_REF_NONE, "%s %llu: has parent kind %u, want none", tn,
          (unsigned long long)e->id, e->parent_kind);
    return;
  }
  CHECK(e->parent_kind == NCS_REF_LOCAL, "%s %llu: parent kind %u, want a local %s", tn,
        (unsigned long long)e->id, e->parent_kind, ncs_type_name((unsigned)want));
  if (e->parent_kind != NCS_REF_LOCAL) return;
  const ev_t *p = ev_find(m, e->parent);
  CHECK(p && p->type >= 0, "%s %llu: parent id %llu has no START in the segment", tn,
        (unsigned long long)e->id, (unsigned long long)e->parent);
  if (!p || p->type < 0) return;
  CHECK(p->type == want || p->type == alt, "%s %llu: parent %llu is a %s, want %s", tn,
        (unsigned long long)e->id, (unsigned long long)e->parent, ncs_type_name((unsigned)p->type),
        ncs_type_name((unsigned)want));
  if ((e->type == NCS_T_COLL || e->type == NCS_T_P2P) && abi >= 5) {
    const ev_t *g = e->pg_kind == NCS_REF_LOCAL ? ev_find(m, e->pg) : NULL;
    CHECK(g && g->type == NCS_T_GROUP, "%s %llu: parentGroup is not a local Group", tn,
          (unsigned long long)e->id);
  }
}

/* Children (ProxyOp, KernelCh) fold into their Coll/P2p. */
static void fold_children(evmap_t *m) {
  for (size_t i = 0; i < m->cap; i++) {
    ev_t *c = &m->v[i];
    if (!c->id || (c->type != NCS_T_PROXY_OP && c->type != NCS_T_KERNEL_CH)) continue;
    if (c->parent_kind != NCS_REF_LOCAL) continue;
    ev_t *p = ev_find(m, c->parent);
    if (!p) continue;
    if (c->type == NCS_T_KERNEL_CH) p->k_n++;
    else p->p_n++;
    if (!c->stopped) p->open++;
    if (c->stopped && c->stop_ts > p->max_stop) p->max_stop = c->stop_ts;
    if (c->kstop > p->max_kstop) p->max_kstop = c->kstop;
    /* a child that started after the last child stop its parent's COMPLETE counted: the writer
       had seen the parent quiet for its grace period, and may have let the entry go */
    if (p->has_complete && c->start_ts > p->end_ns) {
      if (c->type == NCS_T_KERNEL_CH) p->late_k++;
      else p->late_p++;
      continue;
    }
    if (c->stopped && c->stop_ts > p->early_stop) p->early_stop = c->stop_ts;
    if (c->kstop > p->early_kstop) p->early_kstop = c->kstop;
  }
}

static void check_completion(const ev_t *e, totals_t *T) {
  if (e->type != NCS_T_COLL && e->type != NCS_T_P2P) return;
  if (!e->k_n && !e->p_n) return;
  const char *tn = ncs_type_name((unsigned)e->type);
  unsigned long long id = e->id;
  if (e->open) { /* children that never stopped: the writer must close the books anyway */
    CHECK((e->has_complete && (e->cflags & NCS_CF_FORCED)) || e->expired,
          "%s %llu: %u children never stopped, but no FORCED COMPLETE or EXPIRED", tn, id, e->open);
    T->forced++;
    return;
  }
  T->completes_checked++;
  CHECK(e->has_complete, "%s %llu: all %u children stopped but no COMPLETE", tn, id,
        e->k_n + e->p_n);
  if (!e->has_complete) return;
  CHECK(!(e->cflags & NCS_CF_FORCED), "%s %llu: COMPLETE is FORCED although all children stopped",
        tn, id);
  if (e->late_k + e->late_p && !(e->cflags & NCS_CF_REVISED)) {
    /* children that began after the last stop the COMPLETE counted, when a thread of the job fell
       far behind the others (a loaded machine): the writer's rule (docs/trace-format.md,
       COMPLETE) is that the COMPLETE holds the children that came before it went quiet, exactly */
    T->late++;
    if (e->cflags & NCS_CF_GROUP) {
      /* it had no child yet when the writer's grace period ran out, so it took its Group's times
       * (writer.c complete_from_group); every child of its own came later */
      CHECK(!e->early_stop && e->late_k == e->k_n && e->late_p == e->p_n && !e->c_nk && !e->c_np,
            "%s %llu: COMPLETE from its Group, but %u KernelCh / %u ProxyOp of its own came before it",
            tn, id, e->k_n - e->late_k, e->p_n - e->late_p);
      return;
    }
    CHECK(e->end_ns == e->early_stop, "%s %llu: COMPLETE end_ns %llu != last stop %llu of the children "
          "before it (%u came later)", tn, id, (unsigned long long)e->end_ns,
          (unsigned long long)e->early_stop, e->late_k + e->late_p);
    CHECK(e->gpu_stop == e->early_kstop, "%s %llu: COMPLETE gpu_stop %llu != last KernelChStop %llu of the "
          "children before it", tn, id, (unsigned long long)e->gpu_stop, (unsigned long long)e->early_kstop);
    CHECK(e->c_nk == e->k_n - e->late_k && e->c_np == e->p_n - e->late_p,
          "%s %llu: COMPLETE counts %u KernelCh / %u ProxyOp, the children before it %u / %u", tn, id,
          e->c_nk, e->c_np, e->k_n - e->late_k, e->p_n - e->late_p);
    return;
  }
  CHECK(e->end_ns == e->max_stop, "%s %llu: COMPLETE end_ns %llu != last child stop %llu", tn, id,
        (unsigned long long)e->end_ns, (unsigned long long)e->max_stop);
  CHECK(e->gpu_stop == e->max_kstop, "%s %llu: COMPLETE gpu_stop %llu != last KernelChStop %llu",
        tn, id, (unsigned long long)e->gpu_stop, (unsigned long long)e->max_kstop);
  CHECK(e->c_nk == e->k_n && e->c_np == e->p_n,
        "%s %llu: COMPLETE counts %u KernelCh / %u ProxyOp, trace has %u / %u", tn, id, e->c_nk,
        e->c_np, e->k_n, e->p_n);
}

/* seqNumbers of one (communicator, func) must be 0..n-1 (R§3.6). */
typedef struct {
  uint64_t ctx, seq;
  int func;
} seqrec_t;

static int seq_cmp(const void *a, const void *b) {
  const seqrec_t *x = a, *y = b;
  if (x->ctx != y->ctx) return x->ctx < y->ctx ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void check_seq(evmap_t *m, totals_t *T) {
  seqrec_t *r = calloc(m->n + 1, sizeof *r);
  size_t n = 0;
  for (size_t i = 0; i < m->cap; i++) {
    const ev_t *e = &m->v[i];
    if (e->id && e->type == NCS_T_COLL && e->ctx_kind == NCS_CTX_LOCAL)
      r[n++] = (seqrec_t){e->ctx, e->seq, e->func};
  }
  qsort(r, n, sizeof *r, seq_cmp);
  for (size_t i = 0, want = 0; i < n; i++) {
    if (i == 0 || r[i].ctx != r[i - 1].ctx || r[i].func != r[i - 1].func) want = 0, T->seq_groups++;
    CHECK(r[i].seq == want, "comm %llu %s: seqNumber %llu where %zu was due",
          (unsigned long long)r[i].ctx, r[i].func >= 0 ? func_names[r[i].func] : "?",
          (unsigned long long)r[i].seq, want);
    want++;
  }
  free(r);
}

/* The flood benchmark does not build NCCL's hierarchy, and a run that drops records loses
 * parents: both only get the accounting checks. */
static int structural(void) { return !O.expect_drops && !is("flood"); }

/* A KernelPhase lies in its KernelCh: same channel, GPU start and end inside the KernelCh's. A
 * Coll/P2p/CeColl carries its API event's userTag. A symmetric Coll has no ProxyOp and a KernelCh
 * per channel. (Counted into T; check_scenario judges the totals.) */
static void check_v7(evmap_t *m, const ev_t *e, totals_t *T) {
  const ev_t *p = e->parent_kind == NCS_REF_LOCAL ? ev_find(m, e->parent) : NULL;
  if (e->type == NCS_T_KERNEL_PHASE) {
    T->phases++;
    int in = p && p->type == NCS_T_KERNEL_CH && p->chan == e->chan && e->stopped && p->ptimer <= e->ptimer &&
             e->ptimer < e->pend && e->pend <= p->kstop;
    CHECK(in, "KernelPhase %llu (channel %u, GPU %llu..%llu) is not inside its KernelCh",
          (unsigned long long)e->id, e->chan, (unsigned long long)e->ptimer, (unsigned long long)e->pend);
    T->phase_bad += !in;
  }
  if ((e->type == NCS_T_COLL || e->type == NCS_T_P2P || e->type == NCS_T_CE_COLL) && p &&
      (p->type == NCS_T_COLL_API || p->type == NCS_T_P2P_API))
    T->tag_mismatch += e->tag != p->tag;
  if (e->type == NCS_T_COLL && e->sym && e->stopped && !e->open)
    CHECK(e->p_n == 0 && e->k_n == e->nch, "symmetric Coll %llu: %u ProxyOp, %u KernelCh for %u channels",
          (unsigned long long)e->id, e->p_n, e->k_n, e->nch);
  if (e->type == NCS_T_KERNEL_CH && e->kstop) T->kch_phases_bad += e->nphases > 3;
}

/* KernelPhase children fold into their KernelCh. */
static void fold_phases(evmap_t *m) {
  for (size_t i = 0; i < m->cap; i++) {
    const ev_t *c = &m->v[i];
    if (!c->id || c->type != NCS_T_KERNEL_PHASE || c->parent_kind != NCS_REF_LOCAL) continue;
    ev_t *p = ev_find(m, c->parent);
    if (p) p->nphases++;
  }
}

static void check_segment(evmap_t *m, totals_t *T, int abi) {
  if (!structural()) return;
  fold_children(m);
  fold_phases(m);
  for (size_t i = 0; i < m->cap; i++) {
    const ev_t *e = &m->v[i];
    if (!e->id) continue;
    if (e->type < 0) {
      failf(__LINE__, "event id %llu has STOP/STATE records but no START",
            (unsigned long long)e->id);
      continue;
    }
    CHECK(type_allowed(abi, e->type), "%s recorded, but ABI v%d has no such event",
          ncs_type_name((unsigned)e->type), abi);
    if (e->type == NCS_T_PROXY_OP && (e->flags & NCS_SF_PXN)) T->pxn_ops++;
    if (abi == 1 && e->type == NCS_T_COLL)
      CHECK(e->flags & NCS_SF_ABI_V1, "Coll %llu under ABI v1 lacks the v1 flag",
            (unsigned long long)e->id);
    check_parent(m, e, abi);
    check_completion(e, T);
    check_v7(m, e, T);
    const ev_t *p = e->parent_kind == NCS_REF_LOCAL ? ev_find(m, e->parent) : NULL;
    if (e->type == NCS_T_COLL && p && p->type == NCS_T_COLL_API && p->captured) T->graph_colls++;
    if (e->type == NCS_T_COLL_API && p && p->type == NCS_T_GROUP_API && p->ctx != e->ctx)
      T->cross_ctx++;
  }
  check_seq(m, T);
}

/* ------------------------------------------------------------------ reading the files */
static void on_counters(totals_t *T, const ncs_counters_t *c) {
  for (uint32_t i = 0; i < c->nkeys; i++) {
    uint32_t k = c->keys[i];
    if (k < 0x20) T->ctr[k] += c->values[i];
    else if ((k & ~0xFFu) == NCS_CK_DROPS && (k & 0xFF) < NT) T->drops[k & 0xFF] += c->values[i];
  }
}

static void read_file(const char *path, totals_t *T, int abi) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  CHECK(r, "cannot open %s: %s", path, err);
  if (!r) return;
  T->files++;
  evmap_t m = {0};
  ncs_item_t it;
  int rc, in_seg = 0;
  while ((rc = ncs_reader_next(r, &it)) > 0) {
    switch (it.what) {
    case NCS_ITEM_SEGMENT:
      if (in_seg) check_segment(&m, T, abi), evmap_clear(&m);
      in_seg = 1;
      T->segments++;
      break;
    case NCS_ITEM_COMM:
      T->comms++;
      if ((int)it.comm.abi_version != abi) T->bad_abi++;
      break;
    case NCS_ITEM_EVENT: on_event(&m, T, &it.ev); break;
    case NCS_ITEM_LOSS:
      CHECK(it.loss.reason >= 1 && it.loss.reason <= NCS_LOSS_MAX && it.loss.from_ns <= it.loss.to_ns,
            "LOSS record: reason %u, window %llu..%llu", it.loss.reason,
            (unsigned long long)it.loss.from_ns, (unsigned long long)it.loss.to_ns);
      for (int t = 0; t < NT && it.loss.reason <= NCS_LOSS_MAX; t++)
        T->lost[it.loss.reason][t] += it.loss.by_type[t];
      break;
    case NCS_ITEM_FOOTER:
      T->footers++;
      on_counters(T, it.counters);
      break;
    default: break;
    }
  }
  CHECK(rc == 0, "%s is damaged: %s", path, ncs_reader_error(r));
  if (in_seg) check_segment(&m, T, abi);
  evmap_clear(&m);
  ncs_reader_close(r);
}

/* ------------------------------------------------------------------ whole-run checks */
static void check_counts(const summary_t *s, const totals_t *T) {
  uint64_t lost = T->ctr[NCS_CK_NO_THREAD_SLOT], dropped = lost, called = 0, recorded = 0;
  uint64_t noslot = 0;
  for (int t = 0; t < NT; t++) {
    /* every drop the footer counts is in a LOSS record of its type, and no LOSS record more */
    CHECK(T->lost[NCS_LOSS_DROPS][t] == T->drops[t], "%s: footer drops %llu, LOSS records %llu",
          ncs_type_name((unsigned)t), (unsigned long long)T->drops[t],
          (unsigned long long)T->lost[NCS_LOSS_DROPS][t]);
    CHECK(T->lost[NCS_LOSS_WRITE][t] == 0, "%s: %llu records not written",
          ncs_type_name((unsigned)t), (unsigned long long)T->lost[NCS_LOSS_WRITE][t]);
    noslot += T->lost[NCS_LOSS_NO_SLOT][t];
  }
  CHECK(noslot == lost, "footer no-slot drops %llu, LOSS records %llu", (unsigned long long)lost,
        (unsigned long long)noslot);
  for (int t = 0; t < NT; t++) {
    dropped += T->drops[t];
    uint64_t c = s->start[t] + s->stop[t] + s->state[t], r = T->start[t] + T->stop[t] + T->state[t];
    called += c, recorded += r;
    const char *tn = ncs_type_name((unsigned)t);
    if (O.expect_drops) { /* nothing dropped silently: what is missing was counted */
      CHECK(r <= c, "%s: %llu records for %llu calls", tn, (unsigned long long)r,
            (unsigned long long)c);
      if (c != r + T->drops[t])
        printf("scenario_test: %s: called %llu, recorded %llu, counted as dropped %llu\n", tn,
               (unsigned long long)c, (unsigned long long)r, (unsigned long long)T->drops[t]);
      continue;
    }
    /* the stale scenario may stop/record on a stopped handle the plugin cannot tell apart */
    uint64_t xs = is("stale") && t == NCS_T_PROXY_CTRL ? sv(s, "double_stops") : 0;
    uint64_t xt = is("stale") && t == NCS_T_PROXY_CTRL ? sv(s, "double_states") : 0;
    CHECK(T->start[t] == s->start[t], "%s: %llu START records, nccl-sim started %llu", tn,
          (unsigned long long)T->start[t], (unsigned long long)s->start[t]);
    CHECK(T->stop[t] >= s->stop[t] && T->stop[t] <= s->stop[t] + xs,
          "%s: %llu STOP records, nccl-sim stopped %llu", tn, (unsigned long long)T->stop[t],
          (unsigned long long)s->stop[t]);
    CHECK(T->state[t] >= s->state[t] && T->state[t] <= s->state[t] + xt,
          "%s: %llu STATE records, nccl-sim recorded %llu", tn, (unsigned long long)T->state[t],
          (unsigned long long)s->state[t]);
    CHECK(T->drops[t] == 0, "%s: %llu records dropped", tn, (unsigned long long)T->drops[t]);
  }
  if (O.expect_drops) {
    CHECK(
        recorded + dropped == called,
        "recorded %llu + dropped %llu (no thread slot: %llu) != called %llu: records lost silently",
        (unsigned long long)recorded, (unsigned long long)dropped, (unsigned long long)lost,
        (unsigned long long)called);
    printf("scenario_test: called %llu, recorded %llu, dropped %llu\n", (unsigned long long)called,
           (unsigned long long)recorded, (unsigned long long)dropped);
  } else {
    CHECK(lost == 0, "%llu records lost for want of thread slots", (unsigned long long)lost);
  }
}

static void check_states(const totals_t *T, int abi) {
  for (int s = 0; s < 32; s++)
    CHECK(!T->states_by_value[s] || state_allowed(abi, s), "state %s (%d) recorded under ABI v%d",
          ncs_state_name((unsigned)s), s, abi);
}

static uint64_t open_of(const summary_t *s, int t) { return s->start[t] - s->stop[t]; }

/* What ABI v7 adds, and that nothing of it shows before v7 (no false positives). */
static void check_scenario_v7(const summary_t *s, const totals_t *T, int abi) {
  CHECK(T->phase_bad == 0 && T->kch_phases_bad == 0,
        "%llu KernelPhase events out of place or misnamed, %llu KernelCh with more than 3 phases",
        (unsigned long long)T->phase_bad, (unsigned long long)T->kch_phases_bad);
  CHECK(T->tag_mismatch == 0, "%llu operations whose userTag is not their API event's",
        (unsigned long long)T->tag_mismatch);
  CHECK(T->sym_bad == 0 && T->nonsym_bad == 0,
        "%llu symmetric Colls without a kernelVariant whose suffix is algo and an empty proto, %llu "
        "other Colls with a kernelVariant",
        (unsigned long long)T->sym_bad, (unsigned long long)T->nonsym_bad);
  uint64_t tags = sv(s, "user_tags");
  if (abi < 7) {
    CHECK(T->tagged == 0 && T->phases == 0 && T->sym_colls == 0,
          "ABI v%d: %llu tagged events, %llu KernelPhase, %llu symmetric Colls", abi,
          (unsigned long long)T->tagged, (unsigned long long)T->phases, (unsigned long long)T->sym_colls);
  } else if (structural()) {
    /* every event that has a userTag carries nccl-sim's (a replay carries the capture's) */
    uint64_t n = T->start[NCS_T_COLL_API] + T->start[NCS_T_P2P_API] + T->start[NCS_T_COLL] +
                 T->start[NCS_T_P2P] + T->start[NCS_T_CE_COLL];
    if (!is("replay"))
      CHECK(T->tagged == (tags ? n : 0), "--user-tags %llu: %llu tagged events of %llu",
            (unsigned long long)tags, (unsigned long long)T->tagged, (unsigned long long)n);
    CHECK(!s->start[NCS_T_KERNEL_PHASE] || T->phases == s->start[NCS_T_KERNEL_PHASE],
          "%llu KernelPhase checked of %llu", (unsigned long long)T->phases,
          (unsigned long long)s->start[NCS_T_KERNEL_PHASE]);
  }
  if (is("symmetric") && structural()) {
    if (abi >= 7)
      CHECK(T->sym_colls > 0 && T->start[NCS_T_COLL] > T->sym_colls,
            "symmetric: %llu symmetric Colls of %llu", (unsigned long long)T->sym_colls,
            (unsigned long long)T->start[NCS_T_COLL]);
    else if (abi >= 5) /* NCCL before 2.31 reports symmetric kernels by their API events only */
      CHECK(T->start[NCS_T_COLL_API] > T->start[NCS_T_COLL] && T->start[NCS_T_COLL] > 0,
            "symmetric, ABI v%d: %llu CollApi for %llu Colls, want more", abi,
            (unsigned long long)T->start[NCS_T_COLL_API], (unsigned long long)T->start[NCS_T_COLL]);
  }
}

static void check_scenario(const summary_t *s, const totals_t *T, int abi) {
  uint64_t loads = sv(s, "loads");
  CHECK(T->files == sv(s, "procs"), "%llu trace files for %llu processes",
        (unsigned long long)T->files, (unsigned long long)sv(s, "procs"));
  CHECK(T->segments >= loads, "%llu segments for %llu plugin loads",
        (unsigned long long)T->segments, (unsigned long long)loads);
  if (is("reload") || is("stale"))
    CHECK(T->segments == loads, "reload: %llu segments, want one per load (%llu)",
          (unsigned long long)T->segments, (unsigned long long)loads);
  CHECK(T->ncclint8_bad == 0, "%llu AllGather/Broadcast Colls not counted in ncclInt8",
        (unsigned long long)T->ncclint8_bad);
  if (is("pxn")) {
    CHECK(T->pxn_ops == sv(s, "foreign_starts") && T->pxn_ops > 0,
          "pxn: %llu ProxyOps flagged as foreign, nccl-sim started %llu",
          (unsigned long long)T->pxn_ops, (unsigned long long)sv(s, "foreign_starts"));
    CHECK(T->ctr[NCS_CK_FOREIGN_CTX] >= T->pxn_ops, "pxn: foreign-context counter %llu < %llu",
          (unsigned long long)T->ctr[NCS_CK_FOREIGN_CTX], (unsigned long long)T->pxn_ops);
  } else {
    CHECK(T->pxn_ops == 0, "%llu ProxyOps flagged PXN in a one-process run",
          (unsigned long long)T->pxn_ops);
  }
  if (is("neverstop") || is("abort")) {
    CHECK(open_of(s, NCS_T_PROXY_OP) > 0, "%s: nccl-sim left no ProxyOp open", O.scenario);
    for (int t = 0; t < NT; t++) {
      if (t != NCS_T_PROXY_OP && t != NCS_T_KERNEL_CH && t != NCS_T_COLL && t != NCS_T_P2P)
        continue;
      CHECK(T->expired[t] == open_of(s, t), "%s: %llu EXPIRED %s, %llu were left open", O.scenario,
            (unsigned long long)T->expired[t], ncs_type_name((unsigned)t),
            (unsigned long long)open_of(s, t));
    }
    CHECK(T->forced > 0, "%s: no Coll/P2p with open children was closed", O.scenario);
  }
  if (is("stale")) {
    uint64_t nulls = sv(s, "null_stops") + sv(s, "null_states");
    uint64_t bad = sv(s, "garbage_stops") + sv(s, "garbage_states") + sv(s, "stale_stops") +
                   sv(s, "stale_states");
    CHECK(T->ctr[NCS_CK_NULL_HANDLE] == nulls,
          "stale: NULL-handle counter %llu, nccl-sim passed %llu",
          (unsigned long long)T->ctr[NCS_CK_NULL_HANDLE], (unsigned long long)nulls);
    CHECK(
        T->ctr[NCS_CK_BAD_HANDLE] + T->ctr[NCS_CK_STALE_HANDLE] >= bad,
        "stale: bad %llu + stale %llu handle counters < %llu invalid handles passed (previous-load "
        "handles taken as current: epoch collision?)",
        (unsigned long long)T->ctr[NCS_CK_BAD_HANDLE],
        (unsigned long long)T->ctr[NCS_CK_STALE_HANDLE], (unsigned long long)bad);
    CHECK(T->ctr[NCS_CK_NULL_CTX] == sv(s, "null_ctx_starts"),
          "stale: NULL-context counter %llu, want %llu",
          (unsigned long long)T->ctr[NCS_CK_NULL_CTX],
          (unsigned long long)sv(s, "null_ctx_starts"));
  }
  if (is("graph") && abi >= 5)
    CHECK(T->graph_colls == sv(s, "graph_colls") && T->graph_colls > 0,
          "graph: %llu Colls under a captured CollApi, nccl-sim replayed %llu",
          (unsigned long long)T->graph_colls, (unsigned long long)sv(s, "graph_colls"));
  if (is("grouped") && abi >= 5)
    CHECK(T->cross_ctx > 0, "grouped: no CollApi under a GroupApi of another communicator");
  if (is("alltoall")) CHECK(T->start[NCS_T_COLL_API] == 0, "alltoall: CollApi events recorded");
  check_scenario_v7(s, T, abi);
  if (!is("neverstop") && !is("abort") && !is("stale") && structural())
    CHECK(T->completes_checked > 0 || T->start[NCS_T_COLL] + T->start[NCS_T_P2P] == 0 ||
              !T->start[NCS_T_KERNEL_CH],
          "no Coll/P2p completion was checked");
}

/* ------------------------------------------------------------------ main */
static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

int main(int argc, char **argv) {
  if (parse_opts(argc, argv)) return 2;
  const char *tmp = getenv("TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/ncs-scenario-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", O.scenario);
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 2;
  }
  summary_t sum;
  memset(&sum, 0, sizeof sum);
  int rc = run_sim(dir, &sum);
  CHECK(rc == 0, "nccl-sim exited with %d", rc);
  CHECK(sum.have_main && sum.have_types, "nccl-sim printed no summary");
  totals_t T;
  memset(&T, 0, sizeof T);
  int abi = sum.have_main ? (int)sv(&sum, "abi") : 6;
  if (O.abi) CHECK(abi == O.abi, "nccl-sim used ABI v%d, asked for v%d", abi, O.abi);
  char lerr[256], **paths = NULL;
  size_t n = 0;
  if (ncs_list_traces(dir, &paths, &n, lerr, sizeof lerr) != 0)
    failf(__LINE__, "listing %s: %s", dir, lerr);
  for (size_t i = 0; i < n; i++) read_file(paths[i], &T, abi);
  ncs_free_paths(paths, n);
  if (sum.have_main && sum.have_types) {
    CHECK(T.files >= 1, "no trace file in %s", dir);
    CHECK(T.footers == T.segments, "%llu segments but %llu footers: a segment did not end cleanly",
          (unsigned long long)T.segments, (unsigned long long)T.footers);
    CHECK(T.bad_abi == 0, "%llu COMM chunks with an ABI version other than %d",
          (unsigned long long)T.bad_abi, abi);
    check_counts(&sum, &T);
    check_states(&T, abi);
    check_scenario(&sum, &T, abi);
  }
  printf("scenario_test: %s abi=%d files=%llu segments=%llu completions=%llu late=%llu forced=%llu "
         "seq_groups=%llu "
         "pxn=%llu graph=%llu: %s\n",
         O.scenario, abi, (unsigned long long)T.files, (unsigned long long)T.segments,
         (unsigned long long)T.completes_checked, (unsigned long long)T.late, (unsigned long long)T.forced,
         (unsigned long long)T.seq_groups, (unsigned long long)T.pxn_ops,
         (unsigned long long)T.graph_colls, g_fails ? "FAILED" : "ok");
  if (g_fails || O.keep)
    fprintf(stderr, "scenario_test: trace kept in %s\n", dir);
  else
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return g_fails ? 1 : 0;
}
