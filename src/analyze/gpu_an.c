/* gpu_an.c - what the report says about CUPTI's kernels (docs/report.md, "GPU truth"): per GPU,
 * how much of the time NCCL's kernels ran was hidden behind other kernels (overlap) and how much
 * was not (exposed communication); graph replays per (communicator, function, size).
 *
 * Never a confident wrong answer: a GPU whose file lost CUPTI records (dropped, refused buffers,
 * undecodable buffers, lost launch records, damaged bytes, compute kernels only summarized) gets
 * no numbers, only the reason; a file without CUPTI kernels gets no GPU entry at all. */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "trace/gpu.h"
#include "util/mem.h"

int ncs_an_gpu_window(const ncs_analysis_t *a, uint32_t dev, int64_t from, int64_t to,
                      ncs_gpu_overlap_t *out) {
  memset(out, 0, sizeof *out);
  if (dev >= a->job->ngdevs) return -1;
  const ncs_job_gpu_t *g = &a->job->gpu[a->job->gdevs[dev].proc];
  if (*g->lost) return -1;
  ncs_job_gpu_overlap(&a->job->gdevs[dev], from, to, out);
  return 0;
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

static int64_t span(const ncs_job_replay_t *r) { /* no overflow on a hostile file's times */
  return (int64_t)((uint64_t)r->end - (uint64_t)r->start);
}

/* the replays, sorted by (comm, func, seq, replay, rank) in the model: one bucket per
 * (comm, func, bytes), one instance per (comm, func, seq, replay) run */
static void replays(ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  ncs_an_gpu_t *G = &a->gpu;
  size_t cap = 0, nl = 0, capl = 0;
  int64_t *lat = NULL;
  for (size_t i = 0; i < j->nreplays;) {
    const ncs_job_replay_t *r = &j->replays[i];
    size_t e = i + 1;
    int64_t worst = -1;
    uint32_t ranks = 0;
    int32_t last = INT32_MIN;
    for (; e < j->nreplays; e++) {
      const ncs_job_replay_t *q = &j->replays[e];
      if (q->comm != r->comm || q->func != r->func || q->seq != r->seq || q->replay != r->replay) break;
    }
    for (size_t k = i; k < e; k++) {
      const ncs_job_replay_t *q = &j->replays[k];
      if (q->rank != last) ranks++, last = q->rank;
      if (q->start && q->end > q->start && span(q) > worst) worst = span(q);
    }
    ncs_an_replay_t *b = NULL;
    for (uint32_t k = 0; k < G->nreplays && !b; k++)
      if (G->replays[k].comm == r->comm && G->replays[k].func == r->func && G->replays[k].bytes == r->bytes)
        b = &G->replays[k];
    if (!b) {
      NCS_XGROW(G->replays, cap, G->nreplays + 1);
      b = &G->replays[G->nreplays++];
      *b = (ncs_an_replay_t){.comm = r->comm, .func = r->func, .bytes = r->bytes, .lat_p50 = -1,
                             .lat_max = -1};
    }
    b->instances++, b->kernels += e - i;
    if (r->comm == UINT32_MAX || (int32_t)ranks < j->comms[r->comm].nranks) b->incomplete++;
    if (worst >= 0 && worst > b->lat_max) b->lat_max = worst;
    i = e;
  }
  /* medians: a second walk per bucket (the buckets are few) */
  for (uint32_t k = 0; k < G->nreplays; k++) {
    ncs_an_replay_t *b = &G->replays[k];
    nl = 0;
    for (size_t i = 0; i < j->nreplays;) {
      const ncs_job_replay_t *r = &j->replays[i];
      size_t e = i + 1;
      while (e < j->nreplays && j->replays[e].comm == r->comm && j->replays[e].func == r->func &&
             j->replays[e].seq == r->seq && j->replays[e].replay == r->replay)
        e++;
      if (r->comm == b->comm && r->func == b->func && r->bytes == b->bytes) {
        int64_t worst = -1;
        for (size_t q = i; q < e; q++) {
          const ncs_job_replay_t *x = &j->replays[q];
          if (x->start && x->end > x->start && span(x) > worst) worst = span(x);
        }
        if (worst >= 0) {
          NCS_XGROW(lat, capl, nl + 1);
          lat[nl++] = worst;
        }
      }
      i = e;
    }
    if (nl) {
      qsort(lat, nl, sizeof *lat, cmp_i64);
      b->lat_p50 = lat[(nl - 1) / 2];
    }
  }
  free(lat);
}

void an_gpu(ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  ncs_an_gpu_t *G = &a->gpu;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_gpu_t *g = &j->gpu[i];
    if (j->procs[i].excluded) continue;
    if (g->kernels) G->files_cupti++, G->files_lost += *g->lost != 0;
    if (g->states_seen & ~(1u << NCS_GPU_OFF)) G->files_asked++;
  }
  if (j->ngdevs) G->devs = ncs_xcalloc(j->ngdevs, sizeof *G->devs);
  for (uint32_t d = 0; d < j->ngdevs; d++) {
    const ncs_job_gpu_dev_t *D = &j->gdevs[d];
    ncs_an_gdev_t *x = &G->devs[G->ndevs++];
    x->dev = d;
    x->why = j->gpu[D->proc].lost;
    x->known = ncs_an_gpu_window(a, d, D->from, D->to, &x->ov) == 0;
  }
  replays(a);
}
