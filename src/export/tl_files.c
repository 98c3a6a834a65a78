/* tl_files.c - the job model's files as the timeline places them (timeline.h): each file's
 * communicators (the model's members), one process per rank, and the model operations of a
 * file for its emit pass. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "export/timeline.h"
#include "util/fmt.h"

/* event ids have 44 bits (docs/architecture.md, "Handles are not pointers"): exact for any trace
 * the plugin wrote; tl_op checks the key anyway */
static uint64_t op_key(uint32_t seg, uint64_t id) { return ((uint64_t)seg << 44) ^ id; }

/* each file's communicators, in the order its COMM chunks came, and its model operations by
 * (segment, id): the first of two with the same key (a damaged trace) is the one linked */
int tl_files(ex_t *x) {
  const ncs_job_t *j = x->job;
  size_t nops = ncs_job_op_count(j);
  x->nfiles = j->nprocs;
  x->files = calloc(j->nprocs + 1, sizeof *x->files);
  x->linked = calloc(nops + 1, 1);
  if (!x->files || !x->linked) return -1;
  for (uint32_t i = 0; i < j->nmembers; i++) {
    const ncs_job_member_t *m = &j->members[i];
    file_t *f = &x->files[m->proc];
    if (GROW(f->comms, f->comm_cap, f->ncomms + 1) != 0) return -1;
    const ncs_job_comm_t *jc = &j->comms[m->comm];
    f->comms[f->ncomms] = (comm_t){jc->comm_id, jc->name, m->rank, jc->nranks, m->seg, m->index,
                                   NONE32, f->ncomms, m->device, m->bus_id, "", m->comm};
    comm_t *nc = &f->comms[f->ncomms];
    ncs_fmt_comm_id(nc->id_str, sizeof nc->id_str, nc->comm_id);
    if (hm_put(&f->comm_map, ((uint64_t)m->seg << 32) | m->index, f->ncomms++) != 0) return -1;
  }
  for (uint32_t i = 0; i < j->nprocs; i++) {
    file_t *f = &x->files[i];
    struct stat sb;
    f->path = j->procs[i].path, f->frag_fd = -1;
    if (j->procs[i].excluded) continue; /* not of this job: not read */
    f->size = stat(f->path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    x->bytes_total += f->size;
  }
  for (size_t k = 0; k < nops; k++) {
    const ncs_op_t *op = ncs_job_op(j, k);
    int created;
    uint64_t *v = hm_ref(&x->files[op->proc].ops, op_key(op->seg, op->id), k + 1, &created);
    if (!v) return -1;
    x->linked[k] = (uint8_t)created;
  }
  return 0;
}

comm_t *tl_file_comm(const file_t *f, uint32_t seg, uint64_t index) {
  uint64_t v;
  if (index > 0xFFFFFFFFu || !hm_get(&f->comm_map, ((uint64_t)seg << 32) | index, &v)) return NULL;
  return &f->comms[v];
}

const ncs_op_t *tl_op(const ex_t *x, file_t *f, uint32_t seg, uint64_t id, size_t *idx) {
  uint64_t v, key = op_key(seg, id);
  if (!hm_get(&f->ops, key, &v)) return NULL;
  const ncs_op_t *op = ncs_job_op(x->job, v - 1);
  if (op->seg != seg || op->id != id) return NULL;
  hm_del(&f->ops, key);
  if (idx) *idx = v - 1;
  return op;
}

/* the end of a Coll/P2p: its completion, else its stop, else the end of its segment */
uint64_t tl_op_end(const ex_t *x, const ncs_op_t *op) {
  uint64_t end = (uint64_t)op->stop;
  if (op->end && !(op->cflags & NCS_CF_NO_CHILDREN)) end = max64(end, (uint64_t)op->end);
  const ncs_job_proc_t *p = &x->job->procs[op->proc];
  if (!end && op->seg < p->nsegs) end = to_out(x, op->proc, p->segs[op->seg].last_ns);
  return max64(end, (uint64_t)op->start + 1);
}

/* ================================================================ processes */

static int cmp_proc(const void *a, const void *b) {
  const proc_t *p = a, *q = b;
  if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
  if (p->file != q->file) return p->file < q->file ? -1 : 1;
  return 0;
}

static int add_proc(ex_t *x, uint32_t fi, int32_t rank) {
  if (GROW(x->procs, x->proc_cap, x->nprocs + 1) != 0) return -1;
  x->procs[x->nprocs].file = fi, x->procs[x->nprocs].rank = rank;
  x->procs[x->nprocs].device = -1, x->procs[x->nprocs].bus_id = "";
  x->nprocs++;
  return 0;
}

/* One process per rank: a file holding several ranks of its widest communicator (a process
 * driving several GPUs) is split by those ranks; its other communicators go to the process with
 * the same rank number, else to the rank whose communicator was created just before. */
int tl_make_procs(ex_t *x) {
  for (uint32_t fi = 0; fi < x->nfiles; fi++) {
    file_t *f = &x->files[fi];
    f->p0 = x->nprocs;
    const comm_t *world = NULL;
    for (uint32_t i = 0; i < f->ncomms; i++)
      if (!world || f->comms[i].nranks > world->nranks) world = &f->comms[i];
    for (uint32_t i = 0; world && i < f->ncomms; i++) {
      comm_t *c = &f->comms[i];
      if (c->comm_id != world->comm_id || c->nranks != world->nranks) continue;
      uint32_t k;
      for (k = f->p0; k < x->nprocs; k++)
        if (x->procs[k].rank == c->rank) break;
      if (k == x->nprocs && add_proc(x, fi, c->rank) != 0) return -1;
      c->proc = k;
      if (x->procs[k].device < 0 && c->device >= 0) /* the GPU its world communicator ran on */
        x->procs[k].device = c->device, x->procs[k].bus_id = c->bus_id;
    }
    if (x->nprocs == f->p0 && add_proc(x, fi, -1) != 0) return -1; /* no communicator */
    for (uint32_t i = 0; i < f->ncomms; i++) {
      comm_t *c = &f->comms[i];
      if (c->proc != NONE32) continue;
      for (uint32_t k = f->p0; k < x->nprocs && c->proc == NONE32; k++)
        if (x->procs[k].rank == c->rank) c->proc = k;
      for (uint32_t j = i; j-- > 0 && c->proc == NONE32;)
        if (f->comms[j].seg == c->seg && f->comms[j].proc != NONE32 &&
            f->comms[j].comm_id == world->comm_id)
          c->proc = f->comms[j].proc;
      if (c->proc == NONE32) c->proc = f->p0;
    }
    f->p1 = x->nprocs;
  }
  /* pids and order by rank */
  proc_t *sorted = malloc(((size_t)x->nprocs + 1) * sizeof *sorted);
  if (!sorted) return -1;
  memcpy(sorted, x->procs, (size_t)x->nprocs * sizeof *sorted);
  for (uint32_t i = 0; i < x->nprocs; i++) sorted[i].pid = (int32_t)i; /* remember the index */
  qsort(sorted, x->nprocs, sizeof *sorted, cmp_proc);
  for (uint32_t k = 0; k < x->nprocs; k++) {
    proc_t *p = &x->procs[sorted[k].pid];
    const ncs_job_proc_t *f = &x->job->procs[p->file];
    p->pid = (int32_t)k + 1;
    p->order = (int32_t)k;
    if (p->rank >= 0 && p->device >= 0)
      p->name = ncs_pool_fmt(&x->pool, "rank %d \xc2\xb7 GPU %d%s%s%s \xc2\xb7 %s:%" PRIu64, p->rank,
                      p->device, p->bus_id[0] ? " (" : "", p->bus_id, p->bus_id[0] ? ")" : "",
                      f->host, f->pid);
    else if (p->rank >= 0)
      p->name = ncs_pool_fmt(&x->pool, "rank %d \xc2\xb7 %s:%" PRIu64, p->rank, f->host, f->pid);
    else
      p->name = ncs_pool_fmt(&x->pool, "%s:%" PRIu64, f->host, f->pid);
    tl_track_t *t = &p->trk;
    t->uuid = x->next_uuid++;
    t->idx = x->next_track++;
    t->kind = TK_PROCESS;
    t->pid = p->pid;
    t->order = p->order;
    t->name = p->name;
  }
  free(sorted);
  x->job_pid = (int32_t)x->nprocs + 1;
  return 0;
}

