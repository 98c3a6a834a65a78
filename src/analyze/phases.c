/* phases.c - GPU phases, user tags and symmetric kernels of ABI v7 (phases.h). */
#include "analyze/phases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/reader.h"
#include "util/hmap.h"

const char *const ncs_gpu_phase_names[NCS_GPU_PHASES] = {"initial_sync", "compute", "final_sync"};

/* ================================================================ computations */

uint32_t ncs_gpu_split(const ncs_kphase_t *p, size_t n, ncs_gpu_split_t *out) {
  uint64_t seen[4] = {0, 0, 0, 0}, sum[NCS_GPU_PHASES] = {0, 0, 0}; /* channels 0..255 */
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < n; i++) {
    if (p[i].phase >= NCS_GPU_PHASES || !p[i].end || p[i].end < p[i].start || p[i].channel > 255) {
      out->bad++;
      continue;
    }
    sum[p[i].phase] += p[i].end - p[i].start;
    uint32_t c = p[i].channel;
    if (!(seen[c >> 6] >> (c & 63) & 1)) seen[c >> 6] |= 1ull << (c & 63), out->channels++;
  }
  for (int k = 0; k < NCS_GPU_PHASES && out->channels; k++) out->ns[k] = sum[k] / out->channels;
  return out->channels;
}

void ncs_gpu_split_add(ncs_gpu_split_sum_t *s, const ncs_gpu_split_t *op, int had_kernel) {
  if (!op || !op->channels) {
    s->ops_without += had_kernel != 0;
    return;
  }
  s->ops++;
  for (int k = 0; k < NCS_GPU_PHASES; k++) s->ns[k] += op->ns[k];
}

int ncs_gpu_last_arrival(const uint64_t *initial, size_t n, uint64_t *spread) {
  int last = -1, known = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t k = 0; k < n; k++) {
    if (initial[k] == UINT64_MAX) continue;
    known++;
    if (initial[k] < lo) lo = initial[k], last = (int)k;
    if (initial[k] > hi) hi = initial[k];
  }
  if (known < 2 || lo == hi) return -1;
  *spread = hi - lo;
  return last;
}

int ncs_tags_add(ncs_tags_t *t, int tagged, uint64_t tag, int64_t start, int64_t end) {
  if (!tagged) return t->unknown++, 0;
  if (!tag) return t->untagged++, 0;
  if (!t->index && !(t->index = calloc(1, sizeof(hmap_t)))) return -1;
  int created;
  uint64_t *ix = hm_ref(t->index, tag, t->n, &created);
  if (!ix) return -1;
  if (created) {
    if (t->n == t->cap) {
      size_t cap = t->cap ? 2 * t->cap : 16;
      ncs_tag_t *v = realloc(t->v, cap * sizeof *v);
      if (!v) {
        hm_del(t->index, tag);
        return -1;
      }
      t->v = v, t->cap = cap;
    }
    t->v[t->n++] = (ncs_tag_t){tag, 0, start, start, 0};
  }
  ncs_tag_t *g = &t->v[*ix];
  g->ops++;
  if (start < g->first_start) g->first_start = start;
  if (end >= start) {
    if (end > g->last_end) g->last_end = end;
    g->busy += end - start;
  }
  return 0;
}

static int tag_cmp(const void *a, const void *b) {
  uint64_t x = ((const ncs_tag_t *)a)->tag, y = ((const ncs_tag_t *)b)->tag;
  return x < y ? -1 : x > y;
}

void ncs_tags_sort(ncs_tags_t *t) {
  if (t->n) qsort(t->v, t->n, sizeof *t->v, tag_cmp);
  if (t->index) hm_free(t->index);
  free(t->index); /* the index no longer matches: adding ends here */
  t->index = NULL;
}

void ncs_tags_free(ncs_tags_t *t) {
  free(t->v);
  if (t->index) hm_free(t->index);
  free(t->index);
  memset(t, 0, sizeof *t);
}

/* ================================================================ the pass over a job */

/* A Coll/P2p from its first record (its START, or a KernelCh under it that another thread's block
 * put first in the file) until it settled: NCS_JOB_SETTLE_NS of file time after its last COMPLETE,
 * the job model's rule (merge.c), so a revised COMPLETE, and the KernelCh and phases the writer
 * read after the first one, count as the model counts them. */
typedef struct {
  uint64_t id, tag;
  int64_t start;      /* job time of its START */
  int64_t end;        /* its last COMPLETE's end (job time), -1 none */
  int64_t settle;     /* file time at which it settles (0: no COMPLETE yet) */
  uint32_t ri;        /* its (comm, rank) in out->ranks, UINT32_MAX none */
  int v7, in_use, started;
  uint32_t nkch;      /* KernelCh children */
  ncs_kphase_t *ph;
  uint64_t *phid;     /* event id of ph[k] (its STATE names it) */
  uint32_t nph, cap;
} op_t;

typedef struct {
  const ncs_job_t *j;
  ncs_v7_t *out;
  op_t *ops;
  uint32_t nops, cap, *free_ops, nfree;
  uint32_t *fifo;     /* completed ops by settle time (indexes; stale ones are skipped) */
  size_t fhead, ftail, capfifo;
  int64_t tmax;       /* the file's latest START/STOP/STATE time so far */
  hmap_t op_map, kch_map, ph_map, rank_map;
  uint32_t proc, seg; /* the file read, and its segment now */
  int oom;
} scan_t;

static void op_release(scan_t *s, op_t *o) {
  hm_del(&s->op_map, o->id);
  for (uint32_t k = 0; k < o->nph; k++) hm_del(&s->ph_map, o->phid[k]);
  o->in_use = 0, o->nph = 0, o->settle = 0;
  s->free_ops[s->nfree++] = (uint32_t)(o - s->ops);
}

static op_t *op_new(scan_t *s, uint64_t id) {
  uint32_t i;
  if (s->nfree) {
    i = s->free_ops[--s->nfree];
  } else {
    if (s->nops == s->cap) {
      uint32_t cap = s->cap ? 2 * s->cap : 256;
      op_t *v = realloc(s->ops, cap * sizeof *v);
      if (!v) return s->oom = 1, NULL;
      memset(v + s->cap, 0, (cap - s->cap) * sizeof *v);
      s->ops = v;
      uint32_t *f = realloc(s->free_ops, cap * sizeof *f);
      if (!f) return s->oom = 1, NULL;
      s->free_ops = f, s->cap = cap;
    }
    i = s->nops++;
  }
  if (hm_put(&s->op_map, id, i) != 0) return s->oom = 1, NULL;
  op_t *o = &s->ops[i];
  o->id = id, o->in_use = 1, o->nph = 0, o->nkch = 0, o->ri = UINT32_MAX, o->tag = 0, o->v7 = 0;
  o->started = 0, o->settle = 0, o->end = -1, o->start = 0;
  return o;
}

static op_t *op_get(scan_t *s, uint64_t id) {
  uint64_t i;
  return hm_get(&s->op_map, id, &i) ? &s->ops[i] : NULL;
}

/* the op of a child's parent id: a placeholder when the child came first */
static op_t *op_ref(scan_t *s, uint64_t id) {
  op_t *o = op_get(s, id);
  return o ? o : op_new(s, id);
}

static uint32_t rank_index(scan_t *s, int32_t comm, int32_t rank) {
  uint64_t key = (uint64_t)(uint32_t)comm << 32 | (uint32_t)rank, v;
  if (hm_get(&s->rank_map, key, &v)) return (uint32_t)v;
  ncs_v7_t *o = s->out;
  ncs_v7_rank_t *r = realloc(o->ranks, (o->nranks + 1) * sizeof *r);
  if (!r || hm_put(&s->rank_map, key, o->nranks) != 0) {
    if (r) o->ranks = r;
    return s->oom = 1, UINT32_MAX;
  }
  o->ranks = r;
  memset(&r[o->nranks], 0, sizeof r[0]);
  r[o->nranks].comm = (uint32_t)comm, r[o->nranks].rank = rank;
  return o->nranks++;
}

static void count_variant(scan_t *s, const char *func, const char *variant) {
  ncs_v7_t *o = s->out;
  func = func ? func : "?", variant = variant ? variant : "(none)";
  for (uint32_t i = 0; i < o->nvariants; i++)
    if (!strcmp(o->variants[i].func, func) && !strcmp(o->variants[i].variant, variant)) {
      o->variants[i].ops++;
      return;
    }
  ncs_v7_variant_t *v = realloc(o->variants, (o->nvariants + 1) * sizeof *v);
  if (!v) {
    s->oom = 1;
    return;
  }
  o->variants = v;
  snprintf(v[o->nvariants].func, sizeof v->func, "%s", func);
  snprintf(v[o->nvariants].variant, sizeof v->variant, "%s", variant);
  v[o->nvariants++].ops = 1;
}

static void on_start(scan_t *s, const ncs_event_t *e) {
  if (e->type == NCS_T_COLL || e->type == NCS_T_P2P) {
    op_t *o = op_get(s, e->id);
    if (o && o->started) op_release(s, o), o = NULL; /* an id used again */
    if (!o && !(o = op_new(s, e->id))) return;
    o->started = 1;
    /* the model's member of the operation's communicator: comm, rank and the ABI of that rank */
    const ncs_job_member_t *c =
        e->ctx_kind == NCS_CTX_LOCAL ? ncs_job_member(s->j, s->proc, s->seg, e->ctx) : NULL;
    s->out->ops++;
    o->start = ncs_job_time(s->j, s->proc, e->ts);
    o->v7 = c && c->abi >= 7;
    int tf = e->type == NCS_T_COLL ? NCS_F(Coll, userTag) : NCS_F(P2p, userTag);
    o->v7 &= NCS_HAS(e, tf); /* a file before format 1.3 has no tags to tell */
    if (o->v7) o->tag = e->f[tf];
    if (o->v7) o->ri = rank_index(s, (int32_t)c->comm, c->rank);
    if (o->v7 && e->type == NCS_T_COLL) {
      s->out->colls++;
      if (e->f[NCS_F(Coll, isSymColl)]) {
        s->out->sym_colls++;
        count_variant(s, e->fstr[NCS_F(Coll, func)], e->fstr[NCS_F(Coll, kernelVariant)]);
      }
    }
  } else if (e->type == NCS_T_KERNEL_CH && e->parent_kind == NCS_REF_LOCAL) {
    op_t *o = op_ref(s, e->parent);
    if (o) o->nkch++;
    if (o && hm_put(&s->kch_map, e->id, e->parent) != 0) s->oom = 1;
  } else if (e->type == NCS_T_KERNEL_PHASE && e->parent_kind == NCS_REF_LOCAL) {
    uint64_t opid;
    op_t *o = hm_get(&s->kch_map, e->parent, &opid) ? op_get(s, opid) : NULL;
    if (!o || o->nph >= 65536) return;
    if (o->nph == o->cap) {
      uint32_t cap = o->cap ? 2 * o->cap : 8;
      ncs_kphase_t *p = realloc(o->ph, cap * sizeof *p);
      uint64_t *q = p ? realloc(o->phid, cap * sizeof *q) : NULL;
      if (p) o->ph = p;
      if (!p || !q) return (void)(s->oom = 1);
      o->phid = q, o->cap = cap;
    }
    o->ph[o->nph] = (ncs_kphase_t){(uint32_t)e->f[NCS_F(KernelPhase, channelId)],
                                   (uint32_t)e->f[NCS_F(KernelPhase, phaseId)],
                                   e->f[NCS_F(KernelPhase, pTimer)], 0};
    o->phid[o->nph] = e->id;
    if (hm_put(&s->ph_map, e->id, (uint64_t)(o - s->ops) << 32 | o->nph) != 0) s->oom = 1;
    o->nph++;
  }
}

/* KernelPhaseStop: the phase's GPU end */
static void on_state(scan_t *s, const ncs_event_t *e) {
  uint64_t v;
  if (e->type != NCS_T_KERNEL_PHASE || e->state != 31 || !hm_get(&s->ph_map, e->id, &v)) return;
  op_t *o = &s->ops[v >> 32];
  uint32_t k = (uint32_t)v;
  if (o->in_use && k < o->nph && o->phid[k] == e->id) o->ph[k].end = e->arg0;
}

/* a settled op: its phases and tag count, as of its last COMPLETE */
static void op_settle(scan_t *s, op_t *o) {
  ncs_gpu_split_t sp;
  ncs_gpu_split(o->ph, o->nph, &sp);
  if (o->v7) {
    ncs_gpu_split_add(&s->out->all, &sp, o->nkch > 0);
    if (o->ri != UINT32_MAX) ncs_gpu_split_add(&s->out->ranks[o->ri].sum, &sp, o->nkch > 0);
  }
  if (ncs_tags_add(&s->out->tags, o->v7, o->tag, o->start, o->end) != 0) s->oom = 1;
  op_release(s, o);
}

static void on_complete(scan_t *s, const ncs_event_t *e) {
  op_t *o = op_get(s, e->id);
  if (!o || !o->started) return; /* its START is not in the file (dropped): nothing to count */
  o->end = e->end_ns ? ncs_job_time(s->j, s->proc, e->end_ns) : -1; /* the last one wins */
  if (o->settle) return; /* a revision within the settle time: in place */
  o->settle = s->tmax + NCS_JOB_SETTLE_NS + 1;
  if (s->ftail - s->fhead == s->capfifo) { /* grow the ring, keeping its order */
    size_t cap = s->capfifo ? 2 * s->capfifo : 256, n = s->ftail - s->fhead;
    uint32_t *f = malloc(cap * sizeof *f);
    if (!f) return (void)(s->oom = 1);
    for (size_t k = 0; k < n; k++) f[k] = s->fifo[(s->fhead + k) % s->capfifo];
    free(s->fifo);
    s->fifo = f, s->capfifo = cap, s->fhead = 0, s->ftail = n;
  }
  s->fifo[s->ftail++ % s->capfifo] = (uint32_t)(o - s->ops);
}

/* ops whose settle time the file has passed (all of them at the end of a segment) */
static void settle_due(scan_t *s, int all) {
  while (s->fhead < s->ftail) {
    op_t *o = &s->ops[s->fifo[s->fhead % s->capfifo]];
    if (o->in_use && o->settle && !all && o->settle > s->tmax) break;
    s->fhead++;
    if (o->in_use && o->settle) op_settle(s, o); /* else released already, or a reused slot */
  }
}

static void segment_reset(scan_t *s) {
  settle_due(s, 1);
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->ops[i].in_use) {
      s->out->incomplete += s->ops[i].started; /* a placeholder's op never started here */
      op_release(s, &s->ops[i]);
    }
  s->fhead = s->ftail = 0, s->tmax = 0;
  hm_clear(&s->op_map), hm_clear(&s->kch_map), hm_clear(&s->ph_map);
}

static void scan_file(scan_t *s, const char *path) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  if (!r) return; /* the analysis read it, or said why not */
  ncs_item_t it;
  while (!s->oom && ncs_reader_next(r, &it) > 0) {
    switch (it.what) {
    case NCS_ITEM_SEGMENT:
      segment_reset(s);
      s->seg = ncs_reader_segment(r) ? ncs_reader_segment(r)->index : 0; /* as the model's */
      break;
    case NCS_ITEM_EVENT:
      if (it.ev.kind <= NCS_REC_STATE && it.ev.ts && ncs_job_time(s->j, s->proc, it.ev.ts) > s->tmax)
        s->tmax = ncs_job_time(s->j, s->proc, it.ev.ts);
      settle_due(s, 0);
      if (it.ev.kind == NCS_REC_START) on_start(s, &it.ev);
      else if (it.ev.kind == NCS_REC_STATE) on_state(s, &it.ev);
      else if (it.ev.kind == NCS_REC_COMPLETE) on_complete(s, &it.ev);
      else if (it.ev.kind == NCS_REC_STOP && it.ev.type == NCS_T_KERNEL_CH) hm_del(&s->kch_map, it.ev.id);
      break;
    default: break;
    }
  }
  segment_reset(s);
  ncs_reader_close(r);
}

static int cmp_rank(const void *a, const void *b) {
  const ncs_v7_rank_t *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

int ncs_v7_scan(const ncs_analysis_t *a, ncs_v7_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  scan_t s;
  memset(&s, 0, sizeof s);
  const ncs_job_t *j = a->job;
  s.j = j, s.out = out;
  /* the communicator ranks of ABI v7+ are the model's members (a COMM chunk restated, as flight
     keyframes do, is one member) */
  for (uint32_t i = 0; i < j->nmembers; i++) out->v7_comm_ranks += j->members[i].abi >= 7;
  /* only files with a communicator of ABI v7+ have anything to say (NCCL before 2.31 has no
     phases, tags nor symmetric Colls): the others are not read again, nor are the files the
     model left out (unreadable, copies, another job's) */
  for (uint32_t i = 0; i < j->nprocs && !s.oom; i++) {
    const ncs_job_proc_t *p = &j->procs[i];
    if (p->readable && !p->excluded && p->abi_max >= 7) out->procs++, s.proc = i, scan_file(&s, p->path);
  }
  for (uint32_t i = 0; i < s.nops; i++) free(s.ops[i].ph), free(s.ops[i].phid);
  free(s.ops), free(s.free_ops), free(s.fifo);
  /* by communicator and rank, not by the order the files happened to be read in */
  if (out->nranks) qsort(out->ranks, out->nranks, sizeof *out->ranks, cmp_rank);
  hm_free(&s.op_map), hm_free(&s.kch_map), hm_free(&s.ph_map), hm_free(&s.rank_map);
  ncs_tags_sort(&out->tags);
  if (s.oom) {
    snprintf(err, errlen, "out of memory reading the GPU phases and user tags");
    ncs_v7_free(out);
    return -1;
  }
  return 0;
}

void ncs_v7_free(ncs_v7_t *v) {
  free(v->ranks);
  free(v->variants);
  ncs_tags_free(&v->tags);
  memset(v, 0, sizeof *v);
}
