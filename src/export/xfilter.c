/* xfilter.c - the shared filters applied to the records of the files (xfilter.h). */
#include "export/xfilter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the class of an event: of an operation that passed; left out (its children too); left out
 * for the window only (its later records go, its children are judged on their own: an API call
 * that returned before the window parents CE work that reaches into it) */
enum { XO_KEPT = 1, XO_LEFT = 2, XO_WINDOW = 3 };

/* event ids have 44 bits (docs/architecture.md, "Handles are not pointers") */
static uint64_t key(uint32_t seg, uint64_t id) { return ((uint64_t)seg << 44) ^ id; }

static int rank_ok(const ncs_job_filter_t *f, int32_t r) {
  if (!f->ranks) return 1;
  for (uint32_t k = 0; k < f->nranks; k++)
    if (f->ranks[k] == r) return 1;
  return 0;
}
static int comm_ok(const ncs_job_t *j, uint32_t c) {
  return !j->filter.comm_set || (c < j->ncomms && j->comms[c].comm_id == j->filter.comm_id);
}

static int mark(ncs_xf_t *x, uint32_t proc, uint32_t seg, uint64_t id, uint64_t cls) {
  if (!id || proc >= x->j->nprocs) return 0;
  uint64_t old;
  if (cls == XO_LEFT && hm_get(&x->ops[proc], key(seg, id), &old)) return 0; /* passed wins: a
                                            CollApi parents the replays of its capture */
  return hm_put(&x->ops[proc], key(seg, id), cls);
}

int ncs_xf_init(ncs_xf_t *x, const ncs_job_t *j) {
  memset(x, 0, sizeof *x);
  x->j = j;
  x->from = INT64_MIN, x->to = INT64_MAX;
  x->active = ncs_job_filter_active(&j->filter);
  if (!x->active) return 0;
  ncs_job_filter_text(&j->filter, x->text, sizeof x->text);
  if (j->filter.window) {
    x->from = j->t_first + j->filter.from_ns;
    x->to = j->filter.to_ns == INT64_MAX ? INT64_MAX : j->t_first + j->filter.to_ns;
  }
  x->ops = calloc(j->nprocs + 1, sizeof *x->ops);
  x->file_ok = calloc(j->nprocs + 1, 1);
  x->file_comm = calloc(j->nprocs + 1, 1);
  if (!x->ops || !x->file_ok || !x->file_comm) return -1;
  for (size_t k = 0; k < ncs_job_op_count(j); k++) {
    const ncs_op_t *o = ncs_job_op(j, k);
    if (mark(x, o->proc, o->seg, o->id, XO_KEPT) || mark(x, o->proc, o->seg, o->api_id, XO_KEPT))
      return -1;
  }
  for (size_t k = 0; k < ncs_job_left_count(j); k++) {
    const ncs_job_left_t *l = ncs_job_left(j, k);
    if (mark(x, l->proc, l->seg, l->id, XO_LEFT) || mark(x, l->proc, l->seg, l->api_id, XO_LEFT))
      return -1;
  }
  for (uint32_t m = 0; m < j->nmembers; m++) {
    const ncs_job_member_t *mb = &j->members[m];
    if (mb->proc >= j->nprocs) continue;
    int ok = comm_ok(j, mb->comm) && rank_ok(&j->filter, mb->rank);
    x->file_ok[mb->proc] |= (uint8_t)ok;
    x->file_comm[mb->proc] |= (uint8_t)comm_ok(j, mb->comm);
    if (mb->device >= 0) {
      int created;
      uint64_t *v = hm_ref(&x->dev, ((uint64_t)mb->proc << 32) | (uint32_t)mb->device, 0, &created);
      if (!v) return -1;
      *v |= (uint64_t)ok;
    }
  }
  /* without --comm (and --rank) every process passes, even one with no communicator */
  if (!j->filter.comm_set) memset(x->file_comm, 1, j->nprocs);
  if (!j->filter.comm_set && !j->filter.ranks) memset(x->file_ok, 1, j->nprocs);
  return 0;
}

void ncs_xf_free(ncs_xf_t *x) {
  for (uint32_t i = 0; x->ops && i < x->j->nprocs; i++) hm_free(&x->ops[i]);
  free(x->ops), free(x->file_ok), free(x->file_comm);
  hm_free(&x->dev);
  x->ops = NULL, x->file_ok = x->file_comm = NULL;
}

void ncs_xf_stats(const ncs_xf_t *x, ncs_xf_stats_t *s) {
  memset(s, 0, sizeof *s);
  s->active = x->active;
  if (!x->active) return;
  snprintf(s->text, sizeof s->text, "%s", x->text);
  s->inst_left = x->j->run.filtered_inst, s->p2p_left = x->j->run.filtered_p2p;
  s->inst_kept = ncs_job_inst_count(x->j), s->ops_kept = ncs_job_op_count(x->j);
}

int ncs_xf_who(const ncs_xf_t *x, uint32_t proc, uint32_t comm, int32_t rank) {
  if (!x->active) return 1;
  const ncs_job_t *j = x->j;
  if (proc >= j->nprocs) return 0;
  if (comm != UINT32_MAX ? !comm_ok(j, comm) : !x->file_comm[proc]) return 0;
  return rank >= 0 ? rank_ok(&j->filter, rank) : x->file_ok[proc];
}

int ncs_xf_device(const ncs_xf_t *x, uint32_t proc, int32_t device) {
  uint64_t v;
  if (!x->active) return 1;
  if (proc >= x->j->nprocs) return 0;
  if (device >= 0 && hm_get(&x->dev, ((uint64_t)proc << 32) | (uint32_t)device, &v)) return v != 0;
  return x->file_ok[proc];
}

int ncs_xf_op(const ncs_xf_t *x, uint32_t proc, uint32_t seg, uint64_t id) {
  uint64_t v;
  if (!x->active) return XF_KEEP;
  if (!id || proc >= x->j->nprocs || !hm_get(&x->ops[proc], key(seg, id), &v)) return XF_OWN;
  return v == XO_KEPT ? XF_KEEP : XF_DROP;
}

int ncs_xf_kernel(const ncs_xf_t *x, const ncs_job_kernel_t *k) {
  if (!x->active) return 1;
  int c = k->nccl ? ncs_xf_op(x, k->proc, k->op_seg, k->op_id) : XF_OWN;
  if (c != XF_OWN) return c == XF_KEEP;
  int who = k->nccl && k->comm != UINT32_MAX ? ncs_xf_who(x, k->proc, k->comm, k->rank)
                                             : ncs_xf_device(x, k->proc, k->device);
  return who && ncs_xf_in_window(x, k->start, k->end);
}

int ncs_xf_replay(const ncs_xf_t *x, const ncs_job_replay_t *r) {
  if (!x->active) return 1;
  int c = ncs_xf_op(x, r->proc, r->seg, r->op_id);
  if (c != XF_OWN) return c == XF_KEEP;
  return ncs_xf_who(x, r->proc, r->comm, r->rank) && ncs_xf_in_window(x, r->start, r->end);
}

int ncs_xf_range(const ncs_xf_t *x, const ncs_job_range_t *r) {
  if (!x->active) return 1;
  int64_t end = r->state == NCS_JR_ENDED || r->end > r->begin ? r->end : x->j->t_last;
  return ncs_xf_who(x, r->proc, UINT32_MAX, -1) && ncs_xf_in_window(x, r->begin, end);
}

int ncs_xf_loss(const ncs_xf_t *x, const ncs_job_loss_t *l) {
  if (!x->active) return 1;
  int64_t b = ncs_job_time(x->j, l->proc, l->from_ns);
  int64_t e = l->to_ns == UINT64_MAX ? x->j->t_last : ncs_job_time(x->j, l->proc, l->to_ns);
  return ncs_xf_who(x, l->proc, UINT32_MAX, -1) && ncs_xf_in_window(x, b, e);
}

/* ---------------------------------------------------------------- one file */

void ncs_xf_file(ncs_xf_file_t *s, const ncs_xf_t *x, uint32_t proc) {
  memset(s, 0, sizeof *s);
  s->x = x, s->proc = proc;
}

void ncs_xf_segment(ncs_xf_file_t *s, uint32_t seg) {
  s->seg = seg;
  hm_clear(&s->drop), hm_clear(&s->keep), hm_clear(&s->recent);
  s->nring = s->head = 0;
}

void ncs_xf_file_free(ncs_xf_file_t *s) {
  hm_free(&s->drop), hm_free(&s->keep), hm_free(&s->recent);
}

static void put(ncs_xf_file_t *s, hmap_t *m, uint64_t id, uint64_t cls) {
  if (hm_put(m, id, cls) != 0) s->oom = 1;
}

/* the class of a parent event for its children: XO_KEPT, XO_LEFT, 0 unknown or judged alone */
static int parent_class(const ncs_xf_file_t *s, uint64_t id) {
  uint64_t v;
  if (hm_get(&s->x->ops[s->proc], key(s->seg, id), &v)) return (int)v;
  if (hm_get(&s->drop, id, &v) || hm_get(&s->recent, id, &v)) return v == XO_WINDOW ? 0 : (int)v;
  if (hm_get(&s->keep, id, NULL)) return XO_KEPT;
  return 0;
}

/* a record of no operation: its communicator and rank */
static int own(const ncs_xf_file_t *s, const ncs_event_t *e) {
  const ncs_job_t *j = s->x->j;
  const ncs_job_member_t *m =
      e->ctx_kind == NCS_CTX_LOCAL ? ncs_job_member(j, s->proc, s->seg, e->ctx) : NULL;
  if (m) return comm_ok(j, m->comm) && rank_ok(&j->filter, m->rank) ? XF_OWN : XF_DROP;
  return s->x->file_ok[s->proc] ? XF_OWN : XF_DROP;
}

int ncs_xf_start(ncs_xf_file_t *s, const ncs_event_t *e, int count) {
  const ncs_xf_t *x = s->x;
  if (!x->active) return XF_KEEP;
  uint64_t v;
  int r, of_op = 0;
  if (hm_get(&x->ops[s->proc], key(s->seg, e->id), &v) &&
      (e->type == NCS_T_COLL || e->type == NCS_T_P2P || e->type == NCS_T_COLL_API ||
       e->type == NCS_T_P2P_API)) {
    r = v == XO_KEPT ? XF_KEEP : XF_DROP, of_op = 1;
  } else if (e->type == NCS_T_COLL || e->type == NCS_T_P2P) {
    r = XF_DROP, of_op = 1; /* the model could not place it: whether it passes cannot be told */
    if (count) s->cannot_tell++;
  } else if (e->parent_kind == NCS_REF_LOCAL && (v = (uint64_t)parent_class(s, e->parent)) != 0) {
    r = v == XO_KEPT ? XF_KEEP : XF_DROP, of_op = v == XO_KEPT;
  } else {
    r = own(s, e);
  }
  if (r == XF_DROP) {
    put(s, &s->drop, e->id, XO_LEFT);
    if (count) s->left++;
  } else if (of_op && (e->type == NCS_T_PROXY_OP || e->type == NCS_T_PROXY_STEP ||
                       e->type == NCS_T_KERNEL_CH)) {
    put(s, &s->keep, e->id, XO_KEPT); /* its children go with it */
  }
  return r;
}

int ncs_xf_skip(ncs_xf_file_t *s, const ncs_event_t *e) {
  if (!s->x->active) return 0;
  uint64_t v;
  if (hm_get(&s->drop, e->id, NULL)) return 1;
  if (hm_get(&s->x->ops[s->proc], key(s->seg, e->id), &v) && v == XO_LEFT &&
      (e->type == NCS_T_COLL || e->type == NCS_T_P2P || e->type == NCS_T_COLL_API ||
       e->type == NCS_T_P2P_API))
    return 1;
  return hm_get(&s->recent, e->id, &v) && v != XO_KEPT;
}

void ncs_xf_stopped(ncs_xf_file_t *s, const ncs_event_t *e) {
  if (!s->x->active) return;
  /* a Coll/P2p left out is remembered to the end of the segment: its COMPLETE and its KernelCh
   * come after its STOP */
  if (e->type == NCS_T_COLL || e->type == NCS_T_P2P) return;
  uint64_t cls = 0;
  if (hm_get(&s->drop, e->id, &cls)) hm_del(&s->drop, e->id);
  else if (hm_del(&s->keep, e->id)) cls = XO_KEPT;
  if (!cls) return;
  if (s->nring == XF_RECENT) { /* forget the oldest */
    hm_del(&s->recent, s->ring[s->head]);
    s->head = (s->head + 1) % XF_RECENT, s->nring--;
  }
  s->ring[(s->head + s->nring++) % XF_RECENT] = e->id;
  if (hm_put(&s->recent, e->id, cls) != 0) s->oom = 1;
}

void ncs_xf_drop(ncs_xf_file_t *s, uint64_t id) {
  s->left++;
  put(s, &s->drop, id, XO_WINDOW);
}
