/* findings.c - the report's findings and number formats (findings.h). */
#include "analyze/findings.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

const char *ncs_bucket_timing(const ncs_an_bucket_t *b) {
  return b->src[0] >= b->src[1] && b->src[0] >= b->src[2] ? ncs_src_names[0]
         : b->src[1] >= b->src[2]                         ? ncs_src_names[1]
                                                          : ncs_src_names[2];
}

static int cmp_wait(const void *x, const void *y) {
  const ncs_an_rank_t *a = *(const ncs_an_rank_t *const *)x, *b = *(const ncs_an_rank_t *const *)y;
  if (a->wait_caused != b->wait_caused) return a->wait_caused > b->wait_caused ? -1 : 1;
  return a->last > b->last ? -1 : a->last < b->last;
}
static int cmp_slow(const void *x, const void *y) {
  const ncs_an_rank_t *a = *(const ncs_an_rank_t *const *)x, *b = *(const ncs_an_rank_t *const *)y;
  if (a->excess != b->excess) return a->excess > b->excess ? -1 : 1;
  return a->slowest > b->slowest ? -1 : a->slowest < b->slowest;
}

static void add(ncs_findings_t *f, ncs_find_kind_t kind, const ncs_an_rank_t *r) {
  f->items[f->n++] = (ncs_finding_t){kind, r};
}

void ncs_findings_build(ncs_findings_t *f, const ncs_analysis_t *a, uint32_t top) {
  f->by_wait = calloc(a->nranks + 1, sizeof *f->by_wait);
  f->by_slow = calloc(a->nranks + 1, sizeof *f->by_slow);
  /* at most top stragglers + top slow ranks (each <= nranks) + 4 job-wide findings */
  f->items = calloc(2 * (size_t)a->nranks + 4, sizeof *f->items);
  f->n = 0;
  if (!f->by_wait || !f->by_slow || !f->items) abort();
  for (uint32_t k = 0; k < a->nranks; k++) f->by_wait[k] = f->by_slow[k] = &a->ranks[k];
  if (a->nranks > 1) {
    qsort(f->by_wait, a->nranks, sizeof *f->by_wait, cmp_wait);
    qsort(f->by_slow, a->nranks, sizeof *f->by_slow, cmp_slow);
  }
  /* stragglers: the rank that caused most waiting, then others while they arrived last clearly
   * more often than chance (1.5 x 1/nranks of their instances) */
  for (uint32_t k = 0; k < top && k < a->nranks; k++) {
    const ncs_an_rank_t *r = f->by_wait[k];
    if (!r->last || r->wait_caused <= 0) break;
    const ncs_job_comm_t *c = &a->job->comms[r->comm];
    if (k > 0 && ncs_pct(r->last, r->instances) < 100.0 / (c->nranks ? c->nranks : 1) * 1.5) break;
    add(f, NCS_FIND_STRAGGLER, r);
  }
  /* slow ranks: slowest in at least 25% of their instances */
  for (uint32_t k = 0; k < top && k < a->nranks; k++) {
    const ncs_an_rank_t *r = f->by_slow[k];
    if (!r->slowest || ncs_pct(r->slowest, r->instances) < 25) break;
    add(f, NCS_FIND_SLOW_RANK, r);
  }
  if (a->mismatched) add(f, NCS_FIND_MISMATCH, NULL);
  if (a->incomplete) add(f, NCS_FIND_INCOMPLETE, NULL);
  if (a->p2p_unmatched_send || a->p2p_unmatched_recv || a->p2p_bytes_mismatch)
    add(f, NCS_FIND_P2P, NULL);
  if (a->damaged_files) add(f, NCS_FIND_DAMAGED, NULL);
}

void ncs_findings_free(ncs_findings_t *f) {
  free(f->by_wait), free(f->by_slow), free(f->items);
  f->by_wait = f->by_slow = NULL, f->items = NULL, f->n = 0;
}

void ncs_finding_text(const ncs_analysis_t *a, const ncs_finding_t *f, char *o, size_t n) {
  char t1[32], t2[32], err[32];
  const ncs_an_rank_t *r = f->rank;
  ncs_fmt_ns(err, sizeof err, (double)a->job->error);
  switch (f->kind) {
  case NCS_FIND_STRAGGLER:
    ncs_fmt_ns(t1, sizeof t1, (double)r->wait_caused);
    ncs_fmt_ns(t2, sizeof t2, r->nev ? (double)r->ev[0].late : 0);
    snprintf(o, n,
             "rank %d (pid %" PRIu64 ") arrived last in %.0f%% of %" PRIu64
             " collectives on comm 0x%016" PRIx64 ", causing %s of waiting (+-%s); worst: %s seq %" PRIu64
             " by %s",
             r->rank, a->job->procs[r->proc].pid, ncs_pct(r->last, r->instances), r->instances,
             a->job->comms[r->comm].comm_id, t1, err, r->nev ? r->ev[0].func : "-",
             r->nev ? r->ev[0].seq : 0, t2);
    break;
  case NCS_FIND_SLOW_RANK:
    ncs_fmt_ns(t1, sizeof t1, (double)r->excess);
    snprintf(o, n,
             "rank %d (pid %" PRIu64 ") took longest in %.0f%% of %" PRIu64
             " collectives on comm 0x%016" PRIx64 ", %s over the median rank in total",
             r->rank, a->job->procs[r->proc].pid, ncs_pct(r->slowest, r->instances), r->instances,
             a->job->comms[r->comm].comm_id, t1);
    break;
  case NCS_FIND_MISMATCH: {
    const ncs_an_mismatch_t *m = &a->mism[0];
    char more[48] = ""; /* rank_a differs from what most ranks passed (rank_b's) */
    if (m->nodd > 1) snprintf(more, sizeof more, " (%d ranks differ from most)", m->nodd);
    snprintf(o, n,
             "%" PRIu64 " collective instances differ across ranks, e.g. %s seq %" PRIu64
             " on comm 0x%016" PRIx64 ": rank %d differs from rank %d%s: %s",
             a->mismatched, m->func, m->seq, a->job->comms[m->comm].comm_id, m->rank_a, m->rank_b, more,
             m->what);
    break;
  }
  case NCS_FIND_INCOMPLETE:
    snprintf(o, n, "%" PRIu64 " collective instances were not recorded by every rank of their communicator",
             a->incomplete);
    break;
  case NCS_FIND_P2P:
    snprintf(o, n,
             "point-to-point: %" PRIu64 " sends and %" PRIu64 " receives without a partner, %" PRIu64
             " pairs with different sizes",
             a->p2p_unmatched_send, a->p2p_unmatched_recv, a->p2p_bytes_mismatch);
    break;
  case NCS_FIND_DAMAGED:
    snprintf(o, n, "%" PRIu64 " trace files are damaged (their readable chunks were analysed)", a->damaged_files);
    break;
  }
}
