/* cupti_check.c - compare a trace's GPU records with what really ran (tests/cupti.cmake, and the
 * GPU proof scripts/gpu-cupti.sh).
 *
 *   ncs-cupti-check DIR TRUTH [--state S] [--reason TEXT] [--holder TEXT] [--tolerance-us U]
 *                   [--min-bad N] [--allow-lost]
 *
 * TRUTH has one line per kernel that ran ("K pid= corr= kind=nccl|compute device= stream=
 * start= end= graph= node= replay= [comm= rank= ops=FUNC:COUNT:SEQ,...]", CLOCK_MONOTONIC ns)
 * and per NCCL kernel launched that never completed ("H pid= corr= comm= rank="), as nccl-sim
 * --gpu-truth or the GPU proof program write them. The trace is read with the join of
 * trace/gpujoin.h, as any consumer would. With the CUPTI state active (the default --state):
 *   - every NCCL kernel is in the trace, joined to the KernelLaunch of its plan: the same
 *     communicator, the same operations (function and count), the eager ones with their
 *     seqNumbers, the replayed ones with the right replay index;
 *   - every other kernel is in the trace and joined to nothing (no false join);
 *   - no kernel is in the trace that did not run; times agree within the clock pair's bound
 *     plus --tolerance-us (default 2);
 *   - every hung launch is a PENDING record and has no kernel;
 *   - bad records (CUPTI's zero or reversed times) are flagged, at least --min-bad of them.
 * With another --state, the trace must say that state (and --reason / --holder) and hold no
 * kernel. --allow-lost: kernels missing from the trace are fine when the GPU_STATE counters
 * account for every one of them (CUPTI drops, refused buffers).
 * Prints "cupti check: ok ..." or the first problems and exits 1.
 *
 *   ncs-cupti-check --counts DIR EXPECT
 *
 * for a real GPU, where correlation ids are CUPTI's: EXPECT (examples/ex_cupti --expect) says how
 * many kernels of each name ran, eagerly or in graphs (each graph node then once per replay,
 * replay indices 1..R), how long they took at least, and how many NCCL kernels ran and which
 * function; the trace must hold exactly those, every NCCL kernel joined to its operation, no
 * other kernel joined, nothing pending, no record lost, CUPTI active to the end.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/gpujoin.h"
#include "trace/reader.h"

typedef struct {
  int hung, nccl, seen;
  long pid;
  uint64_t corr, start, end, node, comm;
  uint32_t graph, replay, device;
  char ops[400];
} truth_t;

static truth_t *T;
static size_t nT;
static int fails;

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    if (fails++ < 20) {                                                                            \
      fprintf(stderr, "cupti check: ");                                                            \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

static const char *field(const char *line, const char *k) {
  char pat[32];
  snprintf(pat, sizeof pat, " %s=", k);
  const char *p = strstr(line, pat);
  return p ? p + strlen(pat) : NULL;
}
static uint64_t num(const char *line, const char *k) {
  const char *p = field(line, k);
  return p ? strtoull(p, NULL, 0) : 0;
}

static void load_truth(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(2);
  }
  char line[2048];
  size_t cap = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] != 'K' && line[0] != 'H') continue;
    if (nT == cap) {
      cap = cap ? 2 * cap : 1024;
      T = realloc(T, cap * sizeof *T);
      if (!T) abort();
    }
    truth_t *t = &T[nT++];
    memset(t, 0, sizeof *t);
    t->hung = line[0] == 'H';
    t->pid = (long)num(line, "pid"), t->corr = num(line, "corr");
    t->start = num(line, "start"), t->end = num(line, "end");
    t->graph = (uint32_t)num(line, "graph"), t->node = num(line, "node");
    t->replay = (uint32_t)num(line, "replay"), t->device = (uint32_t)num(line, "device");
    t->comm = num(line, "comm");
    const char *k = field(line, "kind");
    t->nccl = t->hung || (k && !strncmp(k, "nccl", 4));
    const char *o = field(line, "ops");
    if (o) snprintf(t->ops, sizeof t->ops, "%.*s", (int)strcspn(o, " \n"), o);
  }
  fclose(f);
}

/* the truth line of a kernel record of process pid, or NULL */
static truth_t *truth_of(long pid, const ncs_gpu_rec_t *k) {
  for (size_t i = 0; i < nT; i++) {
    truth_t *t = &T[i];
    if (t->pid == pid && !t->hung && t->corr == k->corr && t->graph == k->graph &&
        (!k->graph || t->node == k->node))
      return t;
  }
  return NULL;
}

/* "AllReduce:262144:3,..." -> does the kernel's operation list say the same (in any order)?
 * seq is compared for eager kernels only: a replay's operations are the captured ones. */
static int same_ops(const ncs_gj_t *j, const ncs_gj_kernel_t *k, const char *want, int eager, char *got, size_t n) {
  size_t len = 0;
  got[0] = 0;
  int want_n = want[0] ? 1 : 0;
  for (const char *p = want; *p; p++) want_n += *p == ',';
  if ((int)k->nops != want_n) {
    for (uint32_t i = 0; i < k->nops && len + 64 < n; i++) {
      const ncs_gj_op_t *o = ncs_gj_op(j, k->ops[i]);
      len += (size_t)snprintf(got + len, n - len, "%s%s:%" PRIu64 ":%" PRId64, i ? "," : "", o->func, o->count, o->seq);
    }
    return 0;
  }
  for (uint32_t i = 0; i < k->nops; i++) {
    const ncs_gj_op_t *o = ncs_gj_op(j, k->ops[i]);
    char one[128];
    if (eager)
      snprintf(one, sizeof one, "%s:%" PRIu64 ":%" PRId64, o->func, o->count, o->seq);
    else
      snprintf(one, sizeof one, "%s:%" PRIu64 ":", o->func, o->count);
    const char *p = want;
    int found = 0;
    while (*p && !found) {
      size_t m = strcspn(p, ",");
      found = eager ? (m == strlen(one) && !strncmp(p, one, m)) : !strncmp(p, one, strlen(one));
      p += m + (p[m] == ',');
    }
    if (!found) {
      snprintf(got, n, "%s", one);
      return 0;
    }
  }
  return 1;
}

typedef struct {
  const char *state, *reason, *holder;
  double tol_us;
  long min_bad;
  int allow_lost;
} opts_t;

typedef struct {
  uint64_t eager, replays, compute, bad, pending, ops_cupti, ops_kch, ops_total, lost_counted;
  uint64_t false_pending; /* pending launches whose kernels ran (records lost) */
  int active;
} tally_t;

static uint64_t counter(const ncs_gpu_state_t *s, unsigned key) {
  for (uint32_t i = 0; i < s->ncounters; i++)
    if (s->keys[i] == key) return s->values[i];
  return 0;
}

static void check_file(const char *path, const opts_t *op, tally_t *tl) {
  char err[512];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  if (!r) {
    FAIL("%s: %s", path, err);
    return;
  }
  ncs_gj_t *j = ncs_gj_new();
  ncs_item_t it;
  long pid = -1;
  ncs_gpu_state_t last;
  memset(&last, 0, sizeof last);
  int have_state = 0;
  char reason[400] = "", holder[128] = "";
  while (ncs_reader_next(r, &it) > 0) {
    if (it.what == NCS_ITEM_SEGMENT) pid = (long)ncs_reader_segment(r)->pid;
    if (it.what == NCS_ITEM_GPU_STATE) {
      last = it.gpu_state, have_state = 1;
      snprintf(reason, sizeof reason, "%s", it.gpu_state.reason);
      snprintf(holder, sizeof holder, "%s", it.gpu_state.holder);
    }
    if (ncs_gj_item(j, r, &it) != 0) FAIL("%s: out of memory", path);
  }
  if (ncs_reader_damage(r)) FAIL("%s: %s", path, ncs_reader_error(r));
  ncs_reader_close(r);
  ncs_gj_finish(j);
  const char *state = have_state ? ncs_gpu_state_name(last.state) : "none";
  if (!(last.flags & NCS_GSF_FINAL)) FAIL("%s: the last GPU_STATE is not the final one", path);
  int active = !strcmp(op->state, "active");
  if (strcmp(state, op->state)) FAIL("%s: final GPU state %s (%s), expected %s", path, state, reason, op->state);
  if (op->reason && !strstr(reason, op->reason)) FAIL("%s: reason '%s' lacks '%s'", path, reason, op->reason);
  if (op->holder && !strstr(holder, op->holder)) FAIL("%s: holder '%s' lacks '%s'", path, holder, op->holder);
  const ncs_gj_summary_t *sm = ncs_gj_summary(j);
  if (!active && strcmp(op->state, "failed") && sm->kernels)
    FAIL("%s: %" PRIu64 " kernels recorded in state %s", path, sm->kernels, op->state);
  tl->lost_counted += counter(&last, NCS_GK_CUPTI_DROPPED);
  /* CUPTI not ours: the plugin made no CUPTI call, so none can have failed */
  if (strcmp(op->state, "active") && strcmp(op->state, "failed") && counter(&last, NCS_GK_FLUSH_ERRORS))
    FAIL("%s: %" PRIu64 " CUPTI flushes failed in state %s", path, counter(&last, NCS_GK_FLUSH_ERRORS), op->state);
  /* every kernel of the trace ran, and is joined as it should be */
  for (size_t i = 0; i < ncs_gj_nkernels(j); i++) {
    const ncs_gj_kernel_t *k = ncs_gj_kernel(j, i);
    truth_t *t = truth_of(pid, &k->k);
    if (!t) {
      FAIL("%s: kernel corr=%" PRIu64 " graph=%" PRIu64 " node=0x%" PRIx64 " did not run", path,
           k->k.corr, k->k.graph, k->k.node);
      continue;
    }
    t->seen++;
    int bad = (k->k.flags & NCS_GKF_BAD_TIME) != 0;
    tl->bad += bad;
    if (!t->nccl) {
      tl->compute++;
      if (k->k.launch || k->nops)
        FAIL("%s: compute kernel corr=%" PRIu64 " (%s) joined to launch %" PRIu64, path, k->k.corr, k->name, k->k.launch);
    } else {
      int eager = !t->graph;
      if (eager) tl->eager++; else tl->replays++;
      char got[400];
      if (!(k->k.flags & (eager ? NCS_GKF_EAGER : NCS_GKF_GRAPH)) || !k->k.launch)
        FAIL("%s: NCCL kernel corr=%" PRIu64 " not joined (flags 0x%x)", path, k->k.corr, k->k.flags);
      else if (k->comm_id != t->comm)
        FAIL("%s: NCCL kernel corr=%" PRIu64 " joined to comm 0x%" PRIx64 ", ran on 0x%" PRIx64, path, k->k.corr, k->comm_id, t->comm);
      else if (t->ops[0] && !same_ops(j, k, t->ops, eager, got, sizeof got))
        FAIL("%s: NCCL kernel corr=%" PRIu64 " ran %s, joined to %s", path, k->k.corr, t->ops, got);
      else if (!eager && k->k.replay != t->replay)
        FAIL("%s: replayed kernel corr=%" PRIu64 " has replay index %u, it was replay %u", path, k->k.corr, k->k.replay, t->replay);
    }
    if (bad) continue;
    uint64_t e1 = 0, e2 = 0;
    uint64_t s = ncs_gj_to_mono(j, k->segment, k->k.start, &e1), e = ncs_gj_to_mono(j, k->segment, k->k.end, &e2);
    double ds = ((double)s - (double)t->start) / 1e3, de = ((double)e - (double)t->end) / 1e3;
    double lim = (double)(e1 > e2 ? e1 : e2) / 1e3 + op->tol_us;
    if (ds > lim || ds < -lim || de > lim || de < -lim)
      FAIL("%s: kernel corr=%" PRIu64 " at %+.3f/%+.3f us from the truth (bound %.3f us)", path, k->k.corr, ds, de, lim);
  }
  /* hung launches are pending, and nothing else is */
  for (size_t i = 0; i < ncs_gj_npending(j); i++) {
    const ncs_gpu_rec_t *p = ncs_gj_pending(j, i, NULL);
    int found = 0;
    for (size_t x = 0; x < nT; x++)
      if (T[x].pid == pid && T[x].hung && T[x].corr == p->corr) T[x].seen++, found = 1;
    /* a launch whose kernel ran is pending when its record was lost: fine only when lost records
     * are counted (then a hang cannot be told from a loss, and the GPU_STATE says so) */
    if (!found && active && (++tl->false_pending > tl->lost_counted + 0 || !op->allow_lost))
      FAIL("%s: launch corr=%" PRIu64 " pending, but its kernel completed", path, p->corr);
    tl->pending++;
  }
  for (size_t i = 0; i < ncs_gj_nops(j); i++) {
    const ncs_gj_op_t *o = ncs_gj_op(j, i);
    if (!o->api) continue;
    tl->ops_total++;
    tl->ops_cupti += o->source == NCS_GJ_CUPTI;
    tl->ops_kch += o->source == NCS_GJ_KERNELCH;
  }
  if (sm->unjoined_launch) FAIL("%s: %" PRIu64 " kernels name a launch the trace lacks", path, sm->unjoined_launch);
  tl->active |= active;
  ncs_gj_free(j);
}

/* ---------------------------------------------------------------- --counts (real GPUs) */

typedef struct {
  char name[64];  /* kernel name, or "" for an nccl line */
  int nccl;       /* 1 eager, 2 graph */
  int graph;      /* graph kernels (1) or eager (0) */
  long count, replays;
  uint64_t min_ns;
  char func[32];
  long seen;
} expect_t;

static int is_nccl_name(const char *n) { return !strncmp(n, "ncclDevKernel", 13) || !strncmp(n, "ncclKernel", 10); }

/* replay indices per graph node: each must be 1..R, each once */
typedef struct {
  uint32_t seg;
  uint64_t graph, node;
  uint32_t replay;
  int e; /* expectation index */
} rep_t;

static int rep_cmp(const void *a, const void *b) {
  const rep_t *x = a, *y = b;
  if (x->seg != y->seg) return x->seg < y->seg ? -1 : 1;
  if (x->graph != y->graph) return x->graph < y->graph ? -1 : 1;
  if (x->node != y->node) return x->node < y->node ? -1 : 1;
  return x->replay < y->replay ? -1 : x->replay > y->replay;
}

static int counts_mode(const char *dir, const char *path) {
  expect_t ex[32];
  int nex = 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 2;
  }
  char line[512];
  while (nex < 32 && fgets(line, sizeof line, f)) {
    if (strncmp(line, "expect ", 7)) continue;
    expect_t *e = &ex[nex++];
    memset(e, 0, sizeof *e);
    const char *v = field(line, "name");
    if (v) snprintf(e->name, sizeof e->name, "%.*s", (int)strcspn(v, " \n"), v);
    v = field(line, "nccl");
    if (v) e->nccl = !strncmp(v, "graph", 5) ? 2 : 1;
    e->graph = e->nccl ? e->nccl == 2 : (int)num(line, "graph");
    e->count = (long)num(line, "count"), e->replays = (long)num(line, "replays");
    e->min_ns = num(line, "min_ns");
    v = field(line, "func");
    if (v) snprintf(e->func, sizeof e->func, "%.*s", (int)strcspn(v, " \n"), v);
  }
  fclose(f);
  char **paths, err[256];
  size_t n;
  if (ncs_list_traces(dir, &paths, &n, err, sizeof err) != 0 || !n) {
    fprintf(stderr, "ncs-cupti-check: %s: %s\n", dir, n ? err : "no traces");
    return 2;
  }
  rep_t *reps = NULL;
  size_t nreps = 0, capreps = 0;
  uint64_t kernels = 0, other = 0;
  for (size_t p = 0; p < n; p++) {
    ncs_reader_t *r = ncs_reader_open(paths[p], err, sizeof err);
    if (!r) {
      FAIL("%s: %s", paths[p], err);
      continue;
    }
    ncs_gj_t *j = ncs_gj_new();
    ncs_item_t it;
    ncs_gpu_state_t last;
    memset(&last, 0, sizeof last);
    while (ncs_reader_next(r, &it) > 0) {
      if (it.what == NCS_ITEM_GPU_STATE) last = it.gpu_state;
      ncs_gj_item(j, r, &it);
    }
    if (ncs_reader_damage(r)) FAIL("%s: %s", paths[p], ncs_reader_error(r));
    ncs_reader_close(r);
    ncs_gj_finish(j);
    if (last.state != NCS_GPU_ACTIVE || !(last.flags & NCS_GSF_FINAL))
      FAIL("%s: CUPTI %s at the end (%s)", paths[p], ncs_gpu_state_name(last.state), last.reason);
    if (counter(&last, NCS_GK_CUPTI_DROPPED) || counter(&last, NCS_GK_NO_BUFFER))
      FAIL("%s: CUPTI lost records (%" PRIu64 " dropped, %" PRIu64 " buffers refused)", paths[p],
           counter(&last, NCS_GK_CUPTI_DROPPED), counter(&last, NCS_GK_NO_BUFFER));
    const ncs_gj_summary_t *sm = ncs_gj_summary(j);
    if (sm->pending_end) FAIL("%s: %" PRIu64 " launches without a kernel record", paths[p], sm->pending_end);
    if (sm->bad_time) FAIL("%s: %" PRIu64 " kernels without usable times", paths[p], sm->bad_time);
    for (size_t i = 0; i < ncs_gj_nkernels(j); i++) {
      const ncs_gj_kernel_t *k = ncs_gj_kernel(j, i);
      int nccl = is_nccl_name(k->name), graph = k->k.graph != 0;
      kernels++;
      int e = -1;
      for (int x = 0; x < nex && e < 0; x++)
        if (ex[x].graph == graph && (nccl ? ex[x].nccl : !strcmp(ex[x].name, k->name))) e = x;
      if (e < 0) {
        other++; /* NCCL's or the runtime's own kernels, not this program's */
        if (!nccl && k->k.launch) FAIL("kernel %s (corr %" PRIu64 ") joined to launch %" PRIu64, k->name, k->k.corr, k->k.launch);
        continue;
      }
      ex[e].seen++;
      uint64_t dur = k->k.end - k->k.start;
      if (ex[e].min_ns && dur < ex[e].min_ns)
        FAIL("kernel %s corr %" PRIu64 " lasted %" PRIu64 " ns, it spins %" PRIu64, k->name, k->k.corr, dur, ex[e].min_ns);
      if (!nccl && k->k.launch) FAIL("kernel %s joined to launch %" PRIu64, k->name, k->k.launch);
      if (nccl) {
        int ok = k->k.launch && (k->k.flags & (graph ? NCS_GKF_GRAPH : NCS_GKF_EAGER));
        for (uint32_t o = 0; ok && ex[e].func[0] && o < k->nops; o++)
          ok = !strcmp(ncs_gj_op(j, k->ops[o])->func, ex[e].func);
        if (!ok || !k->nops)
          FAIL("NCCL kernel %s corr %" PRIu64 " not joined to its %s (launch %" PRIu64 ", %u operations)", k->name,
               k->k.corr, ex[e].func, k->k.launch, k->nops);
      }
      if (graph) {
        if (nreps == capreps) {
          capreps = capreps ? 2 * capreps : 256;
          reps = realloc(reps, capreps * sizeof *reps);
          if (!reps) abort();
        }
        reps[nreps++] = (rep_t){k->segment, k->k.graph, k->k.node, k->k.replay, e};
      }
    }
    ncs_gj_free(j);
  }
  ncs_free_paths(paths, n);
  qsort(reps, nreps, sizeof *reps, rep_cmp);
  for (size_t i = 0; i < nreps;) { /* one graph node: replays 1..R */
    size_t k = i;
    uint32_t want = 1;
    for (; k < nreps && reps[k].seg == reps[i].seg && reps[k].graph == reps[i].graph && reps[k].node == reps[i].node; k++, want++)
      if (reps[k].replay != want) {
        FAIL("graph %" PRIu64 " node 0x%" PRIx64 ": replay %u where %u was due", reps[i].graph, reps[i].node, reps[k].replay, want);
        break;
      }
    if ((long)(want - 1) != ex[reps[i].e].replays && k == i + (want - 1))
      FAIL("graph %" PRIu64 " node 0x%" PRIx64 ": %u replays, %ld ran", reps[i].graph, reps[i].node, want - 1, ex[reps[i].e].replays);
    while (k < nreps && reps[k].seg == reps[i].seg && reps[k].graph == reps[i].graph && reps[k].node == reps[i].node) k++;
    i = k;
  }
  free(reps);
  for (int x = 0; x < nex; x++)
    if (ex[x].seen != ex[x].count)
      FAIL("%s %s: %ld kernels in the trace, %ld ran", ex[x].nccl ? "NCCL kernels" : ex[x].name,
           ex[x].graph ? "in graphs" : "eager", ex[x].seen, ex[x].count);
  if (fails) {
    fprintf(stderr, "cupti check: FAILED (%d problems)\n", fails);
    return 1;
  }
  printf("cupti check: ok counts: %" PRIu64 " kernels (%" PRIu64 " not the program's)", kernels, other);
  for (int x = 0; x < nex; x++)
    printf(", %s%s%s %s %ld", ex[x].nccl ? "NCCL " : ex[x].name, ex[x].nccl ? ex[x].func : "",
           ex[x].nccl && !ex[x].func[0] ? "kernels" : "", ex[x].graph ? "replayed" : "eager", ex[x].seen);
  printf("\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--counts")) return counts_mode(argv[2], argv[3]);
  if (argc < 3) {
    fprintf(stderr, "usage: ncs-cupti-check DIR TRUTH [--state S] [--reason T] [--holder T] "
                    "[--tolerance-us U] [--min-bad N] [--allow-lost]\n");
    return 2;
  }
  opts_t op = {.state = "active", .tol_us = 2};
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--state") && v) op.state = v, i++;
    else if (!strcmp(a, "--reason") && v) op.reason = v, i++;
    else if (!strcmp(a, "--holder") && v) op.holder = v, i++;
    else if (!strcmp(a, "--tolerance-us") && v) op.tol_us = atof(v), i++;
    else if (!strcmp(a, "--min-bad") && v) op.min_bad = atol(v), i++;
    else if (!strcmp(a, "--allow-lost")) op.allow_lost = 1;
    else {
      fprintf(stderr, "ncs-cupti-check: unknown argument %s\n", a);
      return 2;
    }
  }
  load_truth(argv[2]);
  char **paths, err[256];
  size_t n;
  if (ncs_list_traces(argv[1], &paths, &n, err, sizeof err) != 0 || !n) {
    fprintf(stderr, "ncs-cupti-check: %s: %s\n", argv[1], n ? err : "no traces");
    return 2;
  }
  tally_t tl;
  memset(&tl, 0, sizeof tl);
  for (size_t i = 0; i < n; i++) check_file(paths[i], &op, &tl);
  ncs_free_paths(paths, n);
  uint64_t missing = 0, hung = 0;
  for (size_t i = 0; i < nT; i++) {
    if (T[i].hung) {
      hung++;
      if (!T[i].seen && !strcmp(op.state, "active")) FAIL("hung launch corr=%" PRIu64 " (pid %ld) is not pending in the trace", T[i].corr, T[i].pid);
      continue;
    }
    if (T[i].seen > 1) FAIL("kernel corr=%" PRIu64 " (pid %ld) is in the trace %d times", T[i].corr, T[i].pid, T[i].seen);
    if (!T[i].seen && !strcmp(op.state, "active")) missing++;
  }
  if (missing && (!op.allow_lost || missing > tl.lost_counted))
    FAIL("%" PRIu64 " kernels that ran are not in the trace (%" PRIu64 " accounted for as lost)", missing, tl.lost_counted);
  if ((long)tl.bad < op.min_bad) FAIL("%" PRIu64 " bad records flagged, expected at least %ld", tl.bad, op.min_bad);
  if (fails) {
    fprintf(stderr, "cupti check: FAILED (%d problems)\n", fails);
    return 1;
  }
  printf("cupti check: ok state=%s nccl_eager=%" PRIu64 " nccl_replays=%" PRIu64 " compute=%" PRIu64
         " bad=%" PRIu64 " hung=%" PRIu64 " pending=%" PRIu64 " missing=%" PRIu64 " lost_counted=%" PRIu64
         " ops_with_cupti=%" PRIu64 "/%" PRIu64 " ops_with_kernelch=%" PRIu64 "\n",
         op.state, tl.eager, tl.replays, tl.compute, tl.bad, hung, tl.pending, missing, tl.lost_counted,
         tl.ops_cupti, tl.ops_total, tl.ops_kch);
  return 0;
}
