/* otf2_plan.c - what the OTF2 archive will hold, before a byte of it is written (otf2_int.h).
 *
 * Every interval sits on a track: a host thread of a file (API calls, groups, and operations
 * without GPU times, from their START to their completion or enqueue) or a GPU stream of a file
 * (operations with GPU kernel times, from kernel start to kernel stop, both the job model's).
 * OTF2 wants Enter/Leave strictly nested on a location, and the recording does not promise that
 * (operations of one group run in one kernel; an operation completes after the next API call
 * began): intervals that do not nest go to a further lane of their track, each lane its own
 * location, rather than being cut or moved.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

#include "export/otf2_int.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "util/mem.h"

static void ox_oom(ox_t *x) {
  x->oom = 1;
  snprintf(x->msg, sizeof x->msg, "out of memory");
}

/* ---------------------------------------------------------------- regions and tracks */

static uint32_t ox_region(ox_t *x, const char *name, int paradigm, int role, const char *desc) {
  name = ncs_pool_str(&x->pool, name);
  if (!name) return ox_oom(x), OX_NONE;
  uint64_t key = hm_mix2(hm_mix2((uintptr_t)name, (uint64_t)paradigm), (uint64_t)role), v;
  for (;; key++) { /* the key is a hash: verify */
    if (!hm_get(&x->region_map, key, &v)) break;
    const ox_region_t *r = &x->regions[v];
    if (r->name == name && r->paradigm == paradigm && r->role == role) return (uint32_t)v;
  }
  if (NCS_GROW(x->regions, x->region_cap, x->nregions + 1) != 0 ||
      hm_put(&x->region_map, key, x->nregions) != 0)
    return ox_oom(x), OX_NONE;
  x->regions[x->nregions] = (ox_region_t){name, paradigm, role, desc};
  return x->nregions++;
}

/* the track of (proc, host thread `id`) or (proc, GPU stream `id`) */
static uint32_t ox_track(ox_t *x, uint32_t proc, int gpu, uint64_t id) {
  uint64_t key = hm_mix2(hm_mix2(proc, (uint64_t)gpu), id), v;
  for (;; key++) {
    if (!hm_get(&x->track_map, key, &v)) break;
    const ox_track_t *t = &x->tracks[v];
    if (t->proc == proc && t->gpu == gpu && (gpu ? t->stream : t->thread) == id) return (uint32_t)v;
  }
  if (NCS_GROW(x->tracks, x->track_cap, x->ntracks + 1) != 0 ||
      hm_put(&x->track_map, key, x->ntracks) != 0)
    return ox_oom(x), OX_NONE;
  ox_track_t *t = &x->tracks[x->ntracks];
  memset(t, 0, sizeof *t);
  t->proc = proc, t->gpu = gpu, t->device = -1;
  if (gpu) t->stream = id;
  else t->thread = (uint32_t)id;
  return x->ntracks++;
}

static int ox_add(ox_t *x, uint32_t track, int64_t b, int64_t e, uint32_t region, uint8_t kind,
                  size_t op) {
  if (track == OX_NONE || region == OX_NONE) return -1;
  ox_track_t *t = &x->tracks[track];
  if (NCS_GROW(t->iv, t->cap, t->niv + 1) != 0) return ox_oom(x), -1;
  t->iv[t->niv++] = (ox_iv_t){.b = b, .e = e < b ? b : e, .region = region, .kind = kind,
                              .op = op, .order = x->order++};
  return 0;
}

/* ---------------------------------------------------------------- one file's API calls and groups */

typedef struct {
  int64_t b;
  uint32_t thread, region;
  uint64_t id;
  int own; /* of no operation (the filter): written when it overlaps the window */
} pend_t;

typedef struct {
  ox_t *x;
  uint32_t proc;
  int seg;          /* -1 before the first segment */
  size_t *ops;      /* this file's operations (model indexes) */
  size_t nops;
  hmap_t open;      /* event id -> index in pend (API calls and groups open) */
  hmap_t stream;    /* CollApi/P2pApi id -> its stream */
  hmap_t opid;      /* Coll/P2p id of this segment -> model operation */
  pend_t *pend;
  size_t npend, pend_cap;
  uint32_t *op_thread; /* per model operation: the thread of its START (OX_NONE unknown) */
  uint64_t *op_stream;
  ncs_xf_file_t xs;    /* the filter on this file's records */
  hmap_t tids;         /* with a filter: thread index -> OS id, for the tracks that get events */
} rd_t;

static const char *api_name(ox_t *x, const ncs_event_t *e) {
  const char *f = NULL;
  if (e->type == NCS_T_COLL_API) f = e->fstr[NCS_F(CollApi, func)];
  if (e->type == NCS_T_P2P_API) f = e->fstr[NCS_F(P2pApi, func)];
  if (e->type == NCS_T_GROUP_API) return "ncclGroupStart..ncclGroupEnd";
  if (e->type == NCS_T_GROUP) return "NCCL group (enqueue)";
  return ncs_pool_fmt(&x->pool, "nccl%s", f && *f ? f : "?");
}

/* an API call or group ends at e: its interval (one of no operation: when it overlaps the
 * filter's window) */
static void rd_call(rd_t *r, const pend_t *q, int64_t e, int unfinished) {
  ox_t *x = r->x;
  if (q->own && !ncs_xf_in_window(&x->xf, q->b, e)) {
    ncs_xf_drop(&r->xs, q->id);
    return;
  }
  ox_add(x, ox_track(x, r->proc, 0, q->thread), q->b, e, q->region, IV_REGION, SIZE_MAX);
  x->st->unfinished += (uint64_t)unfinished;
}

/* close every call still open in the segment at its last time: it never stopped */
static void rd_end_segment(rd_t *r) {
  ox_t *x = r->x;
  const ncs_job_proc_t *p = &x->job->procs[r->proc];
  if (r->seg >= 0 && (uint32_t)r->seg < p->nsegs) {
    int64_t end = ncs_job_time(x->job, r->proc, p->segs[r->seg].last_ns);
    for (size_t i = 0; i < r->open.cap; i++)
      if (r->open.used[i]) rd_call(r, &r->pend[r->open.vals[i]], end, 1);
  }
  hm_clear(&r->open), hm_clear(&r->stream), hm_clear(&r->opid);
  r->npend = 0;
}

static void rd_segment(rd_t *r) {
  rd_end_segment(r);
  r->seg++;
  ncs_xf_segment(&r->xs, (uint32_t)r->seg);
  for (size_t k = 0; k < r->nops; k++) {
    const ncs_op_t *op = ncs_job_op(r->x->job, r->ops[k]);
    if ((int)op->seg == r->seg && hm_put(&r->opid, op->id, r->ops[k]) != 0) ox_oom(r->x);
  }
}

static int is_call(uint8_t type) {
  return type == NCS_T_COLL_API || type == NCS_T_P2P_API || type == NCS_T_GROUP_API ||
         type == NCS_T_GROUP;
}

static void rd_record(rd_t *r, const ncs_event_t *e, int cls) {
  ox_t *x = r->x;
  uint64_t v;
  if (e->kind == NCS_REC_START && is_call(e->type)) {
    if (e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API) {
      uint64_t s = e->type == NCS_T_COLL_API ? e->f[NCS_F(CollApi, stream)]
                                             : e->f[NCS_F(P2pApi, stream)];
      if (hm_put(&r->stream, e->id, s) != 0) return ox_oom(x);
    }
    if (hm_get(&r->open, e->id, NULL)) return; /* a START seen twice: the first one counts */
    uint32_t reg = ox_region(x, api_name(x, e), OTF2_PARADIGM_USER,
                             e->type == NCS_T_GROUP ? OTF2_REGION_ROLE_CODE
                                                    : OTF2_REGION_ROLE_WRAPPER, NULL);
    if (reg == OX_NONE || NCS_GROW(r->pend, r->pend_cap, r->npend + 1) != 0 ||
        hm_put(&r->open, e->id, r->npend) != 0)
      return ox_oom(x);
    r->pend[r->npend++] = (pend_t){ncs_job_time(x->job, r->proc, e->ts), e->thread, reg, e->id,
                                   cls == XF_OWN};
  } else if (e->kind == NCS_REC_STOP && is_call(e->type) && hm_get(&r->open, e->id, &v)) {
    rd_call(r, &r->pend[v], ncs_job_time(x->job, r->proc, e->ts), 0);
    hm_del(&r->open, e->id);
  } else if (e->kind == NCS_REC_START && (e->type == NCS_T_COLL || e->type == NCS_T_P2P) &&
             hm_get(&r->opid, e->id, &v) && r->op_thread[v] == OX_NONE) {
    r->op_thread[v] = e->thread;
    uint64_t s = 0;
    if (e->parent_kind == NCS_REF_LOCAL && hm_get(&r->stream, e->parent, &s)) r->op_stream[v] = s;
  }
}

/* the filter first: a record of an operation left out (or of a call left out) is not read */
static void rd_event(rd_t *r, const ncs_event_t *e) {
  int cls = XF_KEEP;
  if (e->kind == NCS_REC_START) {
    if ((cls = ncs_xf_start(&r->xs, e, is_call(e->type))) == XF_DROP) return;
  } else if (ncs_xf_skip(&r->xs, e)) {
    if (e->kind == NCS_REC_STOP) ncs_xf_stopped(&r->xs, e);
    return;
  }
  rd_record(r, e, cls);
  if (e->kind == NCS_REC_STOP) ncs_xf_stopped(&r->xs, e);
}

static int ox_read_file(ox_t *x, uint32_t proc, rd_t *r) {
  char err[256];
  ncs_reader_t *rd = ncs_reader_open(x->job->procs[proc].path, err, sizeof err);
  if (!rd) return 0; /* the model counted it as unreadable already */
  r->proc = proc, r->seg = -1;
  ncs_xf_file_free(&r->xs);
  ncs_xf_file(&r->xs, &x->xf, proc);
  hm_clear(&r->tids);
  ncs_item_t it;
  int rc;
  while (!x->oom && (rc = ncs_reader_next(rd, &it)) == 1) {
    x->st->records++;
    if (it.what == NCS_ITEM_SEGMENT) rd_segment(r);
    else if (it.what == NCS_ITEM_EVENT && r->seg >= 0) rd_event(r, &it.ev);
    else if (it.what == NCS_ITEM_THREAD && x->xf.active) { /* a track only for what is written */
      int created;
      uint64_t *v = hm_ref(&r->tids, it.thread_index, it.thread_tid, &created);
      if (!v) ox_oom(x);
    } else if (it.what == NCS_ITEM_THREAD) {
      uint32_t t = ox_track(x, proc, 0, it.thread_index);
      if (t != OX_NONE && !x->tracks[t].tid) x->tracks[t].tid = it.thread_tid;
    }
  }
  if (!x->oom && rc < 0) {
    if (ncs_reader_damage(rd) == NCS_DAMAGE_TRUNCATED) x->st->truncated++;
    else x->st->damaged++;
  }
  rd_end_segment(r);
  ncs_reader_close(rd);
  if (r->xs.oom) ox_oom(x);
  x->st->filter.events_left += r->xs.left, x->st->filter.cannot_tell += r->xs.cannot_tell;
  r->xs.left = r->xs.cannot_tell = 0;
  return x->oom ? -1 : 0;
}

/* ---------------------------------------------------------------- operations */

int ox_coll_op(const char *f) {
  static const struct { const char *name; int op; } map[] = {
      {"AllReduce", OTF2_COLLECTIVE_OP_ALLREDUCE},
      {"Broadcast", OTF2_COLLECTIVE_OP_BCAST},
      {"Reduce", OTF2_COLLECTIVE_OP_REDUCE},
      {"AllGather", OTF2_COLLECTIVE_OP_ALLGATHER},
      {"ReduceScatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
      {"AlltoAll", OTF2_COLLECTIVE_OP_ALLTOALL},
      {"AllToAll", OTF2_COLLECTIVE_OP_ALLTOALL},
      {"Gather", OTF2_COLLECTIVE_OP_GATHER},
      {"Scatter", OTF2_COLLECTIVE_OP_SCATTER},
  };
  for (size_t i = 0; f && i < sizeof map / sizeof *map; i++)
    if (!strcmp(f, map[i].name)) return map[i].op;
  return -1;
}

static int coll_role(const char *f) {
  int op = ox_coll_op(f);
  if (op == OTF2_COLLECTIVE_OP_BCAST || op == OTF2_COLLECTIVE_OP_SCATTER)
    return OTF2_REGION_ROLE_COLL_ONE2ALL;
  if (op == OTF2_COLLECTIVE_OP_REDUCE || op == OTF2_COLLECTIVE_OP_GATHER)
    return OTF2_REGION_ROLE_COLL_ALL2ONE;
  return op < 0 ? OTF2_REGION_ROLE_COLL_OTHER : OTF2_REGION_ROLE_COLL_ALL2ALL;
}

void ox_coll_sizes(const ncs_job_t *j, const ncs_op_t *op, uint64_t *sent, uint64_t *recvd) {
  uint64_t unit = op->count * ncs_type_size(op->dtype); /* 0 when the datatype is unknown */
  uint64_t n = op->comm < j->ncomms && j->comms[op->comm].nranks > 0
                   ? (uint64_t)j->comms[op->comm].nranks : 1;
  int c = ox_coll_op(op->func), root = op->root == op->rank;
  *sent = *recvd = unit;
  if (c == OTF2_COLLECTIVE_OP_ALLGATHER || c == OTF2_COLLECTIVE_OP_GATHER) *recvd = unit * n;
  if (c == OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK || c == OTF2_COLLECTIVE_OP_SCATTER)
    *sent = unit * n;
  if (c == OTF2_COLLECTIVE_OP_BCAST && !root) *sent = 0;       /* only the root's buffer is sent */
  if ((c == OTF2_COLLECTIVE_OP_REDUCE || c == OTF2_COLLECTIVE_OP_GATHER) && !root) *recvd = 0;
  if (c == OTF2_COLLECTIVE_OP_SCATTER && !root) *sent = 0;
}

static void place_op(ox_t *x, size_t k, const rd_t *r) {
  const ncs_op_t *op = ncs_job_op(x->job, k);
  const char *f = op->func ? op->func : "?";
  uint8_t kind = op->p2p ? IV_P2P : IV_COLL;
  int role = op->p2p ? OTF2_REGION_ROLE_POINT2POINT : coll_role(f);
  uint32_t track;
  int64_t b, e;
  if (op->timing == NCS_SRC_KERNEL_GPU && op->kstart > 0 && op->kstop >= op->kstart) {
    track = ox_track(x, op->proc, 1, r->op_stream[k]);
    if (track == OX_NONE) return;
    for (uint32_t m = 0; !x->tracks[track].looked && m < x->job->nmembers; m++) {
      const ncs_job_member_t *mb = &x->job->members[m];
      if (mb->proc == op->proc && mb->seg == op->seg && mb->comm == op->comm)
        x->tracks[track].device = mb->device, x->tracks[track].looked = 1;
    }
    x->tracks[track].looked = 1;
    b = op->kstart, e = op->kstop;
    x->st->ops_gpu++;
    if (ox_add(x, track, b, e, ox_region(x, f, OTF2_PARADIGM_CUDA, role, NULL), kind, k) != 0)
      return;
  } else {
    b = op->start > 0 ? op->start : op->arrival;
    e = op->end > 0 ? op->end : op->stop;
    if (b <= 0) {
      x->st->ops_skipped++;
      return;
    }
    track = ox_track(x, op->proc, 0, r->op_thread[k] == OX_NONE ? 0 : r->op_thread[k]);
    const char *name = ncs_pool_fmt(&x->pool, "%s (%s)", f,
                                    op->end > 0 ? "host: to completion" : "host: enqueue only");
    x->st->ops_host++;
    if (ox_add(x, track, b, e, ox_region(x, name, OTF2_PARADIGM_USER, role, NULL), kind, k) != 0)
      return;
  }
  x->op_track[k] = track;
  x->st->ops++;
}

/* ---------------------------------------------------------------- lanes */

static int iv_cmp(const void *pa, const void *pb) {
  const ox_iv_t *a = pa, *b = pb;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  if (a->e != b->e) return a->e > b->e ? -1 : 1; /* the longer one first: it encloses */
  return a->order < b->order ? -1 : a->order > b->order;
}

typedef struct {
  int64_t *end;
  size_t n, cap;
} stack_t_;

/* sort a track's intervals and give each the first lane where it nests */
static int ox_lanes(ox_t *x, ox_track_t *t) {
  if (t->niv > 1) qsort(t->iv, t->niv, sizeof *t->iv, iv_cmp); /* iv is NULL when empty */
  stack_t_ *lanes = NULL;
  size_t nl = 0, cap = 0;
  int rc = 0;
  for (size_t i = 0; i < t->niv && !rc; i++) {
    ox_iv_t *v = &t->iv[i];
    size_t l = 0;
    for (; l < nl; l++) {
      stack_t_ *s = &lanes[l];
      while (s->n && s->end[s->n - 1] <= v->b) s->n--;
      if (!s->n || s->end[s->n - 1] >= v->e) break;
    }
    if (l == nl) {
      if (NCS_GROW(lanes, cap, nl + 1) != 0) { rc = -1; break; }
      memset(&lanes[nl++], 0, sizeof *lanes);
    }
    stack_t_ *s = &lanes[l];
    if (NCS_GROW(s->end, s->cap, s->n + 1) != 0) { rc = -1; break; }
    s->end[s->n++] = v->e;
    v->lane = (uint32_t)l;
  }
  t->nlanes = (uint32_t)(nl ? nl : 1);
  for (size_t l = 0; l < nl; l++) free(lanes[l].end);
  free(lanes);
  if (rc) ox_oom(x);
  return rc;
}

const char *ox_track_name(ox_t *x, const ox_track_t *t, uint32_t lane) {
  char extra[32] = "";
  if (lane) snprintf(extra, sizeof extra, " (lane %u)", lane + 1);
  char dev[16] = "?";
  if (t->device >= 0) snprintf(dev, sizeof dev, "%d", t->device);
  if (t->gpu)
    return t->stream ? ncs_pool_fmt(&x->pool, "GPU %s stream 0x%llx%s", dev,
                                    (unsigned long long)t->stream, extra)
                     : ncs_pool_fmt(&x->pool, "GPU %s stream unknown%s", dev, extra);
  if (t->tid)
    return ncs_pool_fmt(&x->pool, "thread %u (tid %llu)%s", t->thread,
                        (unsigned long long)t->tid, extra);
  return ncs_pool_fmt(&x->pool, "thread %u%s", t->thread, extra);
}

/* ---------------------------------------------------------------- the plan */

static int read_files(ox_t *x, size_t nops) {
  rd_t r = {.x = x};
  uint32_t np = x->job->nprocs;
  size_t *first = calloc((size_t)np + 2, sizeof *first); /* counting sort of ops by file */
  r.op_thread = malloc((nops ? nops : 1) * sizeof *r.op_thread);
  r.op_stream = calloc(nops ? nops : 1, sizeof *r.op_stream);
  size_t *by_proc = malloc((nops ? nops : 1) * sizeof *by_proc);
  int rc = (!first || !r.op_thread || !r.op_stream || !by_proc) ? (ox_oom(x), -1) : 0;
  for (size_t k = 0; !rc && k < nops; k++) {
    r.op_thread[k] = OX_NONE;
    if (ncs_job_op(x->job, k)->proc < np) first[ncs_job_op(x->job, k)->proc + 2]++;
  }
  for (uint32_t p = 0; !rc && p < np; p++) first[p + 2] += first[p + 1];
  for (size_t k = 0; !rc && k < nops; k++)
    if (ncs_job_op(x->job, k)->proc < np) by_proc[first[ncs_job_op(x->job, k)->proc + 1]++] = k;
  for (uint32_t p = 0; !rc && p < np; p++) {
    const ncs_job_proc_t *pr = &x->job->procs[p];
    if (pr->excluded || !pr->readable) continue;
    x->st->files++;
    r.ops = by_proc + first[p], r.nops = first[p + 1] - first[p];
    rc = ox_read_file(x, p, &r);
    /* every file has a location, even one with no events (with a filter: only what has events) */
    if (!rc && !x->xf.active) ox_track(x, p, 0, 0);
    for (size_t i = 0; !rc && i < r.nops; i++) place_op(x, r.ops[i], &r);
    for (uint32_t t = 0; !rc && x->xf.active && t < x->ntracks; t++) { /* the threads' OS ids */
      uint64_t tid;
      ox_track_t *tr = &x->tracks[t];
      if (tr->proc == p && !tr->gpu && !tr->tid && hm_get(&r.tids, tr->thread, &tid)) tr->tid = tid;
    }
    if (x->oom) rc = -1;
  }
  free(first), free(by_proc), free(r.op_thread), free(r.op_stream), free(r.pend);
  hm_free(&r.open), hm_free(&r.stream), hm_free(&r.opid), hm_free(&r.tids);
  ncs_xf_file_free(&r.xs);
  return rc;
}

int ox_plan(ox_t *x) {
  size_t nops = ncs_job_op_count(x->job);
  x->op_track = malloc((nops ? nops : 1) * sizeof *x->op_track);
  x->op_lane = calloc(nops ? nops : 1, sizeof *x->op_lane);
  if (!x->op_track || !x->op_lane) return ox_oom(x), -1;
  for (size_t k = 0; k < nops; k++) x->op_track[k] = OX_NONE;
  if (read_files(x, nops) != 0) return -1;
  for (uint32_t t = 0; t < x->ntracks; t++) {
    ox_track_t *tr = &x->tracks[t];
    if (ox_lanes(x, tr) != 0) return -1;
    tr->loc0 = x->nlocations;
    x->nlocations += tr->nlanes;
    x->st->extra_lanes += tr->nlanes - 1;
    if (tr->gpu) x->st->stream_locations += tr->nlanes;
    else x->st->host_locations += tr->nlanes;
    for (size_t i = 0; i < tr->niv; i++)
      if (tr->iv[i].op != SIZE_MAX) x->op_lane[tr->iv[i].op] = tr->iv[i].lane;
  }
  return 0;
}

void ox_free_plan(ox_t *x) {
  for (uint32_t t = 0; t < x->ntracks; t++) free(x->tracks[t].iv);
  free(x->tracks), free(x->regions), free(x->op_track), free(x->op_lane), free(x->member_loc);
  hm_free(&x->track_map), hm_free(&x->region_map);
  ncs_pool_free(&x->pool);
}
