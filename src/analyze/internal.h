/* internal.h - what the files of the report's analysis share (analyze.h is the contract). */
#ifndef NCS_ANALYZE_INTERNAL_H
#define NCS_ANALYZE_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "analyze/analyze.h"
#include "analyze/quantile.h"
#include "util/hmap.h"

typedef struct { /* what orders a bucket, a rank, a cell, a mismatch as the sorted analysis did */
  uint32_t comm;
  const char *func;
  uint64_t seq;
  int32_t rank;
  int set;
} ikey_t;

typedef struct { /* a bucket's private part (parallel to a->buckets) */
  qs_t lat, bw, abw, skew, tbw;
  int p2p_first;        /* p2p: the first op in (comm, sender, receiver, order, send first) */
  uint32_t pcomm;
  int32_t psrc, pdst;
  uint64_t porder;
  int psend;
  ikey_t first;         /* collective: the first instance (comm, func, seq) */
  hmap_t wr;            /* breakdown: rank -> peer-labelled instances that waited for it */
  qs_t wq;              /* its complete instances' mean wait of the others (stalls) */
  ncs_an_stall_t cand[NCS_STALL_KEEP]; /* the largest of them over NCS_STALL_FLOOR_NS */
  uint32_t ncand;
} bx_t;

#define TPUT_KEEP 16 /* finished instances kept per (comm, func) for throughput */
typedef struct { /* one finished instance's kernel times, by rank */
  int used;
  uint64_t seq, bytes;
  struct tk_s {
    int32_t rank;
    int gpu;
    uint64_t start, stop;
  } *tk;
  size_t ntk, captk;
} tinst_t;
typedef struct { /* per (comm, func): the TPUT_KEEP finished instances of the highest seq */
  uint32_t comm;
  const char *func;
  tinst_t keep[TPUT_KEEP];
} stream_t;

typedef struct {
  int retain;
  bx_t *bx;              /* parallel to a->buckets */
  ikey_t *rkey;          /* per a->ranks: its first instance */
  ikey_t *ckey;          /* per a->cells: its first instance */
  ikey_t mkey[16];       /* per a->mism */
  hmap_t bm, rm, cm, sm; /* bucket, rank, cell, throughput stream maps */
  stream_t *streams;
  size_t nstreams, capstreams;
  size_t capbuckets, capranks, capcells;
  int64_t *durs, *arr, *tiv, *fresh; /* scratch */
  size_t capd, captiv;
  hmap_t lm, qm;          /* breakdown: link and QP maps */
  size_t caplinks, capnetqs;
  ncs_an_instance_t *insts; /* retained, by the model's instance id */
  size_t ninsts, capinsts;
  int64_t *opwait; /* retained: per retained operation (ncs_job_op index), its new waiting */
  size_t nopwait, capopwait;
  /* waits of operations handed out before the previous one of their rank (instance.c, park_t),
   * by rank index << 44 | the previous one's id */
  hmap_t pm;
  struct park_s *parks;
  size_t nparks, capparks, *pfree, npfree, cappfree;
} priv_t;

static inline priv_t *an_priv(const ncs_analysis_t *a) { return (priv_t *)a->priv; }

/* aggregate.c */
int ikey_cmp(const ikey_t *x, const ikey_t *y);
int ikey_min(ikey_t *k, ikey_t x);
ikey_t op_key(const ncs_op_t *o);
int log2b(uint64_t b);
ncs_an_bucket_t *an_bucket(ncs_analysis_t *a, uint32_t comm, const char *func, int lg, int p2p);
void an_bucket_add(ncs_analysis_t *a, ncs_an_bucket_t *b, uint64_t bytes, double lat, double bw,
                   double abw, double skew, int src);
ncs_an_rank_t *an_rank(ncs_analysis_t *a, const ncs_op_t *o);
void an_cell(ncs_analysis_t *a, uint32_t bi, uint32_t ri, const ncs_op_t *o, int64_t late,
             int64_t waited, int last);
void an_p2p(ncs_analysis_t *a, const ncs_op_t *op, const ncs_op_t *partner);
/* instance.c */
void an_left(ncs_analysis_t *a, const ncs_op_t *ops, size_t n);
void an_waits_finish(ncs_analysis_t *a);
void an_instance(ncs_analysis_t *a, const ncs_inst_t *in, const ncs_op_t *ops);
void an_stalls_finish(ncs_analysis_t *a);
/* breakdown.c */
void an_bd_instance(ncs_analysis_t *a, ncs_an_bucket_t *b, const ncs_inst_t *in);
void an_bd_op(ncs_analysis_t *a, const ncs_op_t *o);
void an_bd_finish(ncs_analysis_t *a);
void an_bd_free(ncs_analysis_t *a);
/* gpu_an.c */
void an_gpu(ncs_analysis_t *a);
/* throughput.c */
void an_throughput(ncs_analysis_t *a, const ncs_op_t *ops, size_t n, uint64_t bytes);
void an_throughput_free(priv_t *P);

#endif
