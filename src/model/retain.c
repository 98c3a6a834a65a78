/* retain.c - the retaining side of the job model (ncs_job_opts_t.retain): every operation and
 * instance the streaming pass handed out, in one array in the order they were handed out (an
 * instance's operations contiguous and by rank, a send directly followed by its receive), and
 * the instances sorted at the end by (comm, func, seq, then the order they finished). Nothing is
 * copied a second time: the operations are most of a retained job's memory. */
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"
#include "util/num.h"

void retain_instance(ncs_job_t *j, const ncs_inst_t *in, const ncs_op_t *ops) {
  jpriv_t *P = jp(j);
  NCS_XGROW(P->ops, P->capops, P->nops + in->nops);
  NCS_XGROW(P->insts, P->capinsts, P->ninsts + 1);
  ncs_inst_t *x = &P->insts[P->ninsts++];
  *x = *in;
  x->first_op = P->nops;
  memcpy(P->ops + P->nops, ops, in->nops * sizeof *ops);
  P->nops += in->nops;
}

void retain_p2p(ncs_job_t *j, const ncs_op_t *op, const ncs_op_t *partner) {
  jpriv_t *P = jp(j);
  NCS_XGROW(P->ops, P->capops, P->nops + 2);
  size_t a = P->nops++;
  P->ops[a] = *op, P->ops[a].pair = SIZE_MAX;
  if (partner) {
    P->ops[a + 1] = *partner;
    P->ops[a + 1].pair = a, P->ops[a].pair = a + 1;
    P->nops++;
  }
}

void retain_left(ncs_job_t *j, const ncs_op_t *ops, size_t n) {
  jpriv_t *P = jp(j);
  NCS_XGROW(P->left, P->capleft, P->nleft + n);
  for (size_t k = 0; k < n; k++)
    P->left[P->nleft++] = (ncs_job_left_t){.proc = ops[k].proc, .seg = ops[k].seg, .id = ops[k].id,
                                           .api_id = ops[k].api_id, .comm = ops[k].comm,
                                           .rank = ops[k].rank};
}

static int cmp_inst(const void *x, const void *y) {
  const ncs_inst_t *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->func != b->func) return strcmp(a->func, b->func);
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

void retain_layout(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  ncs_sort(P->insts, P->ninsts, sizeof *P->insts, cmp_inst);
  for (size_t i = 0; i < P->ninsts; i++)
    for (uint32_t q = 0; q < P->insts[i].nops; q++) P->ops[P->insts[i].first_op + q].inst = i;
}

void retain_free(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  for (size_t i = 0; i < P->nops; i++) bd_op_free(&P->ops[i]);
  free(P->ops), free(P->insts), free(P->left);
}

size_t ncs_job_op_count(const ncs_job_t *j) { return jp(j)->nops; }
const ncs_op_t *ncs_job_op(const ncs_job_t *j, size_t i) {
  return i < jp(j)->nops ? &jp(j)->ops[i] : NULL;
}
size_t ncs_job_inst_count(const ncs_job_t *j) { return jp(j)->ninsts; }
const ncs_inst_t *ncs_job_inst(const ncs_job_t *j, size_t i) {
  return i < jp(j)->ninsts ? &jp(j)->insts[i] : NULL;
}
size_t ncs_job_left_count(const ncs_job_t *j) { return jp(j)->nleft; }
const ncs_job_left_t *ncs_job_left(const ncs_job_t *j, size_t i) {
  return i < jp(j)->nleft ? &jp(j)->left[i] : NULL;
}
