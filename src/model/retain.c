/* retain.c - the retaining side of the job model (ncs_job_opts_t.retain): every operation and
 * instance the streaming pass handed out, laid out at the end in the documented order (model.h):
 * instances by (comm, func, seq, then the order they finished), their operations by rank; then
 * sends and receives by (comm, sender, receiver, order, send first). */
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"
#include "util/num.h"

void retain_instance(ncs_job_t *j, const ncs_inst_t *in, const ncs_op_t *ops) {
  jpriv_t *P = jp(j);
  NCS_XGROW(P->rops, P->caprops, P->nrops + in->nops);
  NCS_XGROW(P->insts, P->capinsts, P->ninsts + 1);
  ncs_inst_t *x = &P->insts[P->ninsts++];
  *x = *in;
  x->first_op = P->nrops;
  memcpy(P->rops + P->nrops, ops, in->nops * sizeof *ops);
  P->nrops += in->nops;
}

/* a send and its receive side by side, pair = index of the partner + 1 (0 none) for now */
void retain_p2p(ncs_job_t *j, const ncs_op_t *op, const ncs_op_t *partner) {
  jpriv_t *P = jp(j);
  NCS_XGROW(P->rp2p, P->caprp2p, P->nrp2p + 2);
  size_t a = P->nrp2p++;
  P->rp2p[a] = *op, P->rp2p[a].pair = 0;
  if (partner) {
    P->rp2p[a + 1] = *partner;
    P->rp2p[a + 1].pair = a + 1, P->rp2p[a].pair = a + 2;
    P->nrp2p++;
  }
}

static int cmp_inst(const void *x, const void *y) {
  const ncs_inst_t *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->func != b->func) return strcmp(a->func, b->func);
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* sends by (comm, rank, peer, order); recvs by (comm, peer, rank, order): the same key order;
 * inst holds the retained index meanwhile, for a stable order */
static int cmp_p2p(const void *x, const void *y) {
  const ncs_op_t *a = x, *b = y;
  int32_t as = a->is_send ? a->rank : a->peer, ad = a->is_send ? a->peer : a->rank;
  int32_t bs = b->is_send ? b->rank : b->peer, bd = b->is_send ? b->peer : b->rank;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (as != bs) return as < bs ? -1 : 1;
  if (ad != bd) return ad < bd ? -1 : 1;
  if (a->order != b->order) return a->order < b->order ? -1 : 1;
  if (a->is_send != b->is_send) return (int)b->is_send - (int)a->is_send;
  return (a->inst > b->inst) - (a->inst < b->inst);
}

void retain_layout(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  ncs_sort(P->insts, P->ninsts, sizeof *P->insts, cmp_inst);
  P->nops = P->nrops + P->nrp2p;
  P->ops = ncs_xrealloc(NULL, (P->nops + 1) * sizeof *P->ops);
  size_t k = 0;
  for (size_t i = 0; i < P->ninsts; i++) {
    ncs_inst_t *x = &P->insts[i];
    for (uint32_t q = 0; q < x->nops; q++) {
      P->ops[k + q] = P->rops[x->first_op + q];
      P->ops[k + q].inst = i, P->ops[k + q].pair = SIZE_MAX;
    }
    x->first_op = k, k += x->nops;
  }
  ncs_op_t *p2 = P->ops + k;
  for (size_t i = 0; i < P->nrp2p; i++) p2[i] = P->rp2p[i], p2[i].inst = i;
  ncs_sort(p2, P->nrp2p, sizeof *p2, cmp_p2p);
  size_t *at = ncs_xrealloc(NULL, (P->nrp2p + 1) * sizeof *at);
  for (size_t i = 0; i < P->nrp2p; i++) at[p2[i].inst] = k + i;
  for (size_t i = 0; i < P->nrp2p; i++) {
    p2[i].pair = p2[i].pair ? at[p2[i].pair - 1] : SIZE_MAX;
    p2[i].inst = SIZE_MAX;
  }
  free(at), free(P->rops), free(P->rp2p);
  P->rops = P->rp2p = NULL;
  P->nrops = P->nrp2p = 0;
}

void retain_free(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  free(P->rops), free(P->rp2p), free(P->ops), free(P->insts);
}

size_t ncs_job_op_count(const ncs_job_t *j) { return jp(j)->nops; }
const ncs_op_t *ncs_job_op(const ncs_job_t *j, size_t i) {
  return i < jp(j)->nops ? &jp(j)->ops[i] : NULL;
}
size_t ncs_job_inst_count(const ncs_job_t *j) { return jp(j)->ops ? jp(j)->ninsts : 0; }
const ncs_inst_t *ncs_job_inst(const ncs_job_t *j, size_t i) {
  return jp(j)->ops && i < jp(j)->ninsts ? &jp(j)->insts[i] : NULL;
}
