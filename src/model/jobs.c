/* jobs.c - which of the listed files form the job (model.h; docs/model.md, "Jobs and
 * duplicates").
 *
 * After pass 1 every readable file is known by its host, pid, segments and the communicators it
 * held. Two files with the same host, pid and first segment (start times included) are one
 * recording listed twice (a copy, a file that is a prefix of another): one is read. The others
 * are joined into jobs: two files belong to one job when they held ranks of one communicator
 * (the same nonzero commId), unless they held the same rank of it one after the other: a rank is
 * one process, so the later file belongs to another run. NCCL draws a commId at random per communicator, so runs
 * never share one; nccl-sim's are fixed, and two runs recorded into one directory share them,
 * rank for rank. A file that held no such communicator joins the job nearest in time.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/fmt.h"
#include "util/mem.h"

static uint32_t uf_find(uint32_t *up, uint32_t x) {
  while (up[x] != x) x = up[x] = up[up[x]];
  return x;
}
static void uf_join(uint32_t *up, uint32_t a, uint32_t b) {
  a = uf_find(up, a), b = uf_find(up, b);
  if (a != b) up[a > b ? a : b] = a < b ? a : b;
}

/* a readable file's realtime span: its segments from their start to their last record */
static int has_span(const ncs_job_proc_t *p) { return p->readable && p->nsegs; }
static void span(const ncs_job_proc_t *p, int64_t *lo, int64_t *hi) {
  *lo = INT64_MAX, *hi = INT64_MIN;
  for (uint32_t s = 0; s < p->nsegs; s++) {
    const ncs_job_seg_t *g = &p->segs[s];
    int64_t a = (int64_t)g->start_real, b = a + (int64_t)(g->last_ns - g->start_mono);
    if (a < *lo) *lo = a;
    if (b > *hi) *hi = b;
  }
}

/* of two recordings of one process, the one to read: more segments, then the later last
 * record, then undamaged, then the one listed first (a) */
static int better(const ncs_job_proc_t *a, const ncs_job_proc_t *b) {
  if (a->nsegs != b->nsegs) return a->nsegs > b->nsegs;
  uint64_t la = a->segs[a->nsegs - 1].last_ns, lb = b->segs[b->nsegs - 1].last_ns;
  if (la != lb) return la > lb;
  if (!a->damage != !b->damage) return !a->damage;
  return 1;
}

static int same_recording(const ncs_job_proc_t *a, const ncs_job_proc_t *b) {
  return a->host == b->host && a->pid == b->pid && /* hosts are pooled */
         a->segs[0].start_mono == b->segs[0].start_mono &&
         a->segs[0].start_real == b->segs[0].start_real;
}

static void find_duplicates(const ncs_job_t *j, job_plan_t *pl) {
  hmap_t seen = {0};
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_proc_t *p = &j->procs[i];
    if (!has_span(p)) continue;
    uint64_t h = hm_mix2(hm_mix2(p->pid, p->segs[0].start_mono), p->segs[0].start_real), v;
    for (;; h++) {
      if (!hm_get(&seen, h, &v)) {
        if (hm_put(&seen, h, i) != 0) ncs_oom();
        break;
      }
      if (!same_recording(&j->procs[v], p)) continue;
      uint32_t keep = better(&j->procs[v], p) ? (uint32_t)v : i, drop = keep == i ? (uint32_t)v : i;
      pl->excl[drop] = NCS_JX_DUPLICATE, pl->same_as[drop] = keep;
      for (uint32_t k = 0; k < j->nprocs; k++) /* earlier copies of the dropped one */
        if (pl->excl[k] == NCS_JX_DUPLICATE && pl->same_as[k] == drop) pl->same_as[k] = keep;
      if (hm_put(&seen, h, keep) != 0) ncs_oom();
      break;
    }
  }
  hm_free(&seen);
}

typedef struct {
  int64_t lo, hi;
  uint32_t proc, group;
  int32_t rank;
} member_span_t;

static int by_lo(const void *a, const void *b) {
  const member_span_t *x = a, *y = b;
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* the file's recording ended before t (realtime) */
static int ended_before(const ncs_job_proc_t *p, int64_t t) {
  int64_t lo, hi;
  span(p, &lo, &hi);
  return hi < t;
}

/* The files that held communicator c, in the order they started: one job until a file holds a
 * rank that an earlier file of the job held, and that file had ended before this one began (a
 * rank is one process: that is the next run with the same commId). Two files that held one rank
 * at the same time are not told apart (no run does that). */
static void join_comm(const ncs_job_t *j, const job_plan_t *pl, uint32_t c, uint32_t *up,
                      int *joined, member_span_t *ms) {
  size_t n = 0;
  for (uint32_t k = 0; k < j->nmembers; k++) {
    uint32_t i = j->members[k].proc;
    if (j->members[k].comm != c || pl->excl[i]) continue;
    span(&j->procs[i], &ms[n].lo, &ms[n].hi);
    ms[n].proc = i, ms[n++].rank = j->members[k].rank;
  }
  qsort(ms, n, sizeof *ms, by_lo);
  hmap_t held = {0}; /* rank -> the file of the current run holding it, + 1 */
  uint64_t v;
  for (size_t k = 0, first = 0; k < n; k++) {
    joined[ms[k].proc] = 1;
    if (k && ms[k].proc != ms[k - 1].proc) { /* a file's ranks, then the next file */
      int clash = 0;
      for (size_t m = k; m < n && ms[m].proc == ms[k].proc && !clash; m++)
        clash = hm_get(&held, (uint64_t)(uint32_t)ms[m].rank, &v) && v != ms[k].proc + 1 &&
                ended_before(&j->procs[v - 1], ms[k].lo);
      if (clash) hm_clear(&held), first = k;
      else uf_join(up, ms[first].proc, ms[k].proc);
    }
    if (hm_put(&held, (uint64_t)(uint32_t)ms[k].rank, ms[k].proc + 1) != 0) ncs_oom();
  }
  hm_free(&held);
}

/* Files that held no communicator with a commId (ABI v1-v3 pass none, or none was recorded) say
 * nothing about their run, and their communicators are matched within the file only: each joins
 * the job it overlaps in time, else the nearest one; without any such job they form one. */
static void join_loose(const ncs_job_t *j, const job_plan_t *pl, uint32_t *up, const int *joined) {
  int64_t first_loose = -1;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    if (joined[i] || pl->excl[i] || !has_span(&j->procs[i])) continue;
    int64_t lo, hi, a, b, best_d = INT64_MAX;
    int64_t best = -1;
    span(&j->procs[i], &lo, &hi);
    for (uint32_t k = 0; k < j->nprocs; k++) {
      if (!joined[k] || pl->excl[k] || !has_span(&j->procs[k])) continue;
      span(&j->procs[k], &a, &b);
      int64_t d = a > hi ? a - hi : lo > b ? lo - b : 0; /* 0: they overlap */
      if (d < best_d) best_d = d, best = k;
    }
    if (best >= 0) uf_join(up, i, (uint32_t)best);
    else if (first_loose >= 0) uf_join(up, i, (uint32_t)first_loose);
    else first_loose = i;
  }
}

/* number the jobs by start time, describe them in pl->parts */
static void number_jobs(const ncs_job_t *j, job_plan_t *pl, uint32_t *up) {
  uint32_t *root_job = ncs_xcalloc(j->nprocs, sizeof *root_job);
  for (uint32_t i = 0; i < j->nprocs; i++) {
    if (pl->excl[i] || !has_span(&j->procs[i])) continue;
    uint32_t r = uf_find(up, i);
    int64_t lo, hi;
    span(&j->procs[i], &lo, &hi);
    if (!root_job[r]) {
      pl->parts = ncs_xrealloc(pl->parts, (pl->njobs + 1) * sizeof *pl->parts);
      pl->parts[pl->njobs] = (ncs_job_part_t){.first = i, .start_real = lo, .end_real = hi};
      root_job[r] = ++pl->njobs;
    }
    ncs_job_part_t *q = &pl->parts[root_job[r] - 1];
    q->files++;
    if (lo < q->start_real) q->start_real = lo;
    if (hi > q->end_real) q->end_real = hi;
    pl->job_no[i] = root_job[r];
  }
  for (uint32_t k = 0; k < j->nmembers; k++) {
    const ncs_job_member_t *m = &j->members[k];
    ncs_job_part_t *q = pl->job_no[m->proc] ? &pl->parts[pl->job_no[m->proc] - 1] : NULL;
    if (q && !q->comm_id) q->comm_id = j->comms[m->comm].comm_id;
  }
  /* by start time: renumber */
  uint32_t *order = ncs_xcalloc(pl->njobs + 1, sizeof *order);
  for (uint32_t a = 0; a < pl->njobs; a++) {
    uint32_t rank = 0;
    for (uint32_t b = 0; b < pl->njobs; b++)
      rank += pl->parts[b].start_real < pl->parts[a].start_real ||
              (pl->parts[b].start_real == pl->parts[a].start_real && b < a);
    order[a] = rank;
  }
  ncs_job_part_t *sorted = ncs_xcalloc(pl->njobs ? pl->njobs : 1, sizeof *sorted);
  for (uint32_t a = 0; a < pl->njobs; a++) sorted[order[a]] = pl->parts[a];
  for (uint32_t i = 0; i < j->nprocs; i++)
    if (pl->job_no[i]) pl->job_no[i] = order[pl->job_no[i] - 1] + 1;
  free(pl->parts);
  pl->parts = sorted;
  free(order), free(root_job);
}

/* the jobs, for an error message: "run 1: 4 files from 2026-..., first file vm-1.nstrace" */
static void list_jobs(const ncs_job_t *j, const job_plan_t *pl, char *err, size_t errlen) {
  size_t n = strlen(err);
  for (uint32_t k = 0; k < pl->njobs && n + 1 < errlen; k++) {
    const ncs_job_part_t *q = &pl->parts[k];
    char t[48], d[32];
    ncs_fmt_utc(t, sizeof t, q->start_real);
    ncs_fmt_ns(d, sizeof d, (double)(q->end_real - q->start_real));
    n += (size_t)snprintf(err + n, errlen - n, "\n  run %u: %u file%s from %s for %s, commId " NCS_COMM_ID_FMT ","
                          " first file %s", k + 1, q->files, q->files == 1 ? "" : "s", t, d,
                          q->comm_id, j->procs[q->first].path);
  }
}

int job_plan(const ncs_job_t *j, uint32_t want, job_plan_t *pl, int *why, char *err, size_t errlen) {
  memset(pl, 0, sizeof *pl);
  pl->excl = ncs_xcalloc(j->nprocs, sizeof *pl->excl);
  pl->same_as = ncs_xcalloc(j->nprocs, sizeof *pl->same_as);
  pl->job_no = ncs_xcalloc(j->nprocs, sizeof *pl->job_no);
  find_duplicates(j, pl);
  uint32_t *up = ncs_xcalloc(j->nprocs, sizeof *up);
  int *joined = ncs_xcalloc(j->nprocs, sizeof *joined);
  member_span_t *ms = ncs_xcalloc(j->nmembers + 1, sizeof *ms);
  for (uint32_t i = 0; i < j->nprocs; i++) up[i] = i;
  for (uint32_t c = 0; c < j->ncomms; c++)
    if (j->comms[c].comm_id) join_comm(j, pl, c, up, joined, ms);
  join_loose(j, pl, up, joined);
  number_jobs(j, pl, up);
  free(up), free(joined), free(ms);
  if (want == NCS_JOB_LAST) want = pl->njobs ? pl->njobs : 1;
  pl->job = want ? want : 1;
  if (want > (pl->njobs ? pl->njobs : 1) || (!want && pl->njobs > 1)) {
    if (want)
      snprintf(err, errlen, "no run %u: the traces hold %u run%s:", want, pl->njobs,
               pl->njobs == 1 ? "" : "s");
    else
      snprintf(err, errlen, "the traces hold %u runs (recordings that never held ranks of one "
               "communicator together), which are never merged; choose one with --run N:", pl->njobs);
    list_jobs(j, pl, err, errlen);
    if (why) *why = want ? NCS_JOB_ERR_NO_JOB : NCS_JOB_ERR_SEVERAL;
    return -1;
  }
  for (uint32_t i = 0; i < j->nprocs; i++) {
    if (pl->excl[i]) pl->nexcluded++;
    else if (pl->job_no[i] && pl->job_no[i] != pl->job) pl->excl[i] = NCS_JX_OTHER_JOB, pl->nexcluded++;
  }
  return 0;
}

void job_plan_free(job_plan_t *pl) {
  free(pl->excl), free(pl->same_as), free(pl->job_no), free(pl->parts);
  memset(pl, 0, sizeof *pl);
}
