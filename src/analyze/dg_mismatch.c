/* dg_mismatch.c - collectives whose count, datatype or root differ between the ranks of a
 * communicator, named by majority (dg_int.h, docs/diagnose.md "Mismatch"). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/dg_int.h"
#include "util/fmt.h"
#include "util/mem.h"

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
  int64_t first;   /* its earliest entry (job time) */
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
  const ncs_job_t *job;
  uint32_t proc;   /* the rank's recording */
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
    k->func = op->func, k->seq = op->seq, k->first = INT64_MAX;
    if (hm_put(&M->idx, key, M->n) != 0) ncs_oom();
  }
  int64_t entry = ncs_job_time(M->job, M->proc, op->start);
  if (entry < k->first) k->first = entry;
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


static void tuple_str(char *out, size_t n, const tuple_t *t, const char *func) {
  if (root_matters(func))
    snprintf(out, n, "count %" PRIu64 " %s root %" PRId64, t->count, t->dtype ? t->dtype : "?", t->root);
  else
    snprintf(out, n, "count %" PRIu64 " %s", t->count, t->dtype ? t->dtype : "?");
}

/* verdicts for the mismatched collectives of a communicator; the stuck one first */
int dg_comm_mismatches(dg_t *D, uint32_t c, const char *stuck_func, int64_t stuck_seq) {
  int stuck_mismatched = 0;
  dg_comm_t *C = &D->comms[c];
  mism_t M;
  memset(&M, 0, sizeof M);
  M.job = D->job;
  for (int r = 0; r < C->nranks; r++) {
    if (!C->cranks[r]) continue;
    M.rank = r;
    M.proc = (uint32_t)D->cranks[C->cranks[r] - 1]->proc;
    dg_for_each_op(D->cranks[C->cranks[r] - 1], mism_fn, &M);
  }
  /* --from: only the collectives entered from then on are checked */
  if (D->from_set)
    for (uint32_t i = 0; i < M.n; i++)
      if (M.keys[i].first < D->from_job) M.keys[i].nt = -1, D->pub.from_unchecked++;
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
        ncs_dg_verdict_t *v = dg_verdict(D, NCS_DG_V_MISMATCH, (int)c);
        dg_cpy(v->func, sizeof v->func, k->func);
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
        qsort(v->ranks, (size_t)v->nranks, sizeof v->ranks[0], dg_by_int);
        snprintf(v->what, sizeof v->what, "%s%s%s%s%s", diff_count ? "count" : "",
                 diff_count && (diff_dtype || diff_root) ? "," : "", diff_dtype ? "datatype" : "",
                 diff_dtype && diff_root ? "," : "", diff_root ? "root" : "");
        v->rank = v->nranks ? v->ranks[0] : -1;
        if (v->rank >= 0 && C->cranks[v->rank]) v->proc = D->cranks[C->cranks[v->rank] - 1]->proc;
        char rl[96];
        dg_rank_list(rl, sizeof rl, v->ranks, v->nranks);
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
          qsort(rs, (size_t)t->nr, sizeof rs[0], dg_by_int);
          char tl[96], ts[96];
          dg_rank_list(tl, sizeof tl, rs, t->nr);
          tuple_str(ts, sizeof ts, t, k->func);
          dg_ev_line(v, "rank%s %s%s: %s%s", t->n > 1 ? "s" : "", tl, t->n > t->nr ? " ..." : "", ts,
                  j == maj && !tie ? " (majority)" : "");
        }
        if (k->overflow) dg_ev_line(v, "%d more distinct values", k->overflow);
        if (is_stuck) {
          dg_ev_line(v, "this is the operation the communicator is stuck in");
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

