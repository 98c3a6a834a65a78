/* dg_int.h - what the files of `ncclscope diagnose`'s engine share (diagnose.h is its
 * interface; docs/diagnose.md the verdicts).
 *
 *   dg_files.c    which recordings to diagnose: dumps, incidents, live files;
 *   dg_read.c     reading a recording: per (communicator, rank) the last operations, and the
 *                 events still open, on the job model's files, members and clocks;
 *   dg_verdict.c  per communicator: the table, the stuck operation, who is where;
 *   dg_mismatch.c collectives whose arguments differ between ranks;
 *   diagnose.c    processes (snapshot, death), ordering of the verdicts, the API.
 */
#ifndef NCS_ANALYZE_DG_INT_H
#define NCS_ANALYZE_DG_INT_H

#include <stdint.h>

#include "analyze/diagnose.h"
#include "model/model.h"
#include "trace/flight.h"
#include "trace/reader.h"
#include "util/hmap.h"
#include "util/pool.h"

/* Every line is built with snprintf into a fixed buffer; a cut line is acceptable. */
#ifndef __clang__ /* gcc only: clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif


enum {
  OP_PENDING = 0, /* entered, not completed */
  OP_DONE = 1,    /* completed (or a later operation of its rank and communicator did) */
  OP_UNKNOWN = 2, /* nothing known: evicted from the writer's table, or its completion is not in a
                   * recording that ended cleanly (its records were lost) */
  OP_NOCOMP = 3,  /* enqueued, but no child event could show its completion (NCS_CF_NO_CHILDREN) */
  OP_LOST = 4,    /* pending, and its file lost records after it started: cannot tell */
};
/* why a pending operation's state is final: the recording says it never finished */
enum { XW_NONE = 0, XW_TIMEOUT = 1, XW_FLUSH = 2, XW_FORCED = 3 };

typedef struct {
  uint64_t id;     /* START's event id in its segment; 0 = empty slot */
  uint32_t seg;
  uint8_t type, status, stopped, xwhy;
  const char *func, *dtype, *algo, *proto;
  int64_t seq;     /* Coll seqNumber, -1 for P2p */
  int64_t root;    /* Coll root, P2p peer */
  uint64_t count;
  uint32_t nch, kids;
  uint32_t kch_started, kch_stopped; /* its KernelCh events seen */
  uint64_t start, stop, end, progress; /* mono ns; progress: newest event of it or its children */
  uint8_t inferred;  /* DONE because a later operation of its rank and communicator completed */
  uint8_t rejected;  /* its completion claim cannot be true: a member of its communicator never
                      * entered it (dg_impossible) */
  uint8_t later;     /* --to: open at the cut, and the whole recording shows it completed after
                      * the cut: in progress then, never stuck */
  const ncs_job_loss_t *loss; /* OP_LOST: the file's loss window after it started */
} dg_op_t;

#define DG_OVER 32 /* pending operations pushed out of a full ring, kept per (comm, rank) */

typedef struct {
  uint32_t comm, gidx;
  int rank, proc;
  dg_op_t *ring;
  uint32_t cap, n, head;
  dg_op_t over[DG_OVER];
  uint32_t over_next;
  ncs_dg_fseq_t fs[NCS_DG_MAX_FUNCS];
  uint32_t nf;
  int finalized;
  int thread;      /* the thread that launched its last operation (its user thread), -1 unknown */
  uint32_t seg;    /* ... in this segment of its file */
} dg_crank_t;

typedef struct {
  uint64_t comm_id;
  char name[64];
  int32_t nranks;
  uint32_t *cranks; /* nranks entries: global crank index + 1, 0 none */
} dg_comm_t;

/* an open event other than Coll/P2p: ProxyOp, ProxyStep, KernelCh, GroupApi, CollApi, P2pApi */
typedef struct {
  uint64_t id, op_id, parent;
  uint32_t seg;
  int32_t crank; /* global crank index, -1 unknown */
  uint32_t thread;
  uint8_t type, has_state, xwhy, is_send;
  uint32_t state;
  int32_t channel, peer, step;
  uint64_t ts, state_ts;
  const char *func;
  int32_t next_free;
} dg_ev_t;

typedef struct {
  ncs_dg_proc_t *pub; /* index into D->pub.procs: set after reading */
  uint64_t snap_mono, last_life, last_event;
  int64_t clk_off;   /* the job model's realtime - monotonic of the file */
  ncs_flight_info_t fi;
  int is_flight;
  dg_ev_t *open;     /* open events at the end of the recording */
  uint32_t nopen, capopen;
  uint64_t cut_mono; /* --to: the cut in this file's clock; records after it are not applied */
  int after_cut;     /* the recording goes on after the cut (the process was alive then) */
  int events_after_cut; /* ... with NCCL events */
} dg_proc_t;

typedef struct dg_s {
  ncs_dg_t pub; /* first: ncs_dg_t * and dg_t * are the same pointer */
  ncs_pool_t strs; /* strings of the trace, printable */
  dg_proc_t *procs;
  dg_crank_t **cranks;
  uint32_t ncranks, capcranks;
  dg_comm_t *comms;
  uint32_t ncomms;   /* the job model's communicators */
  ncs_job_t *job;    /* the job model of the chosen recordings (files, members, clocks) */
  uint32_t capverdicts;
  /* the filters (docs/diagnose.md, "Filters") */
  int cut;           /* --to: every file is read up to its cut_mono */
  int64_t cut_job;   /* the cut in job time */
  struct dg_s *full; /* --to: the same recordings read whole; which operations completed later */
  uint32_t job_choice; /* ncs_dg_opts_t.job */
  int from_set;      /* --from: mismatch checks only for collectives entered from from_job on */
  int64_t from_job;
} dg_t;

#define DG_EV_MAX (1u << 20) /* open events kept per process */

/* A time from an untrusted file header, as ns that differences cannot overflow: at most 2^62
 * (the year 2116) */
static inline uint64_t dg_sane_time(uint64_t t) { return t > (1ull << 62) ? 1ull << 62 : t; }

/* dg_read.c */
void dg_comms(dg_t *D); /* D->comms: the job model's, with room for their ranks */
void dg_cpy(char *dst, size_t n, const char *src); /* printable ASCII only */
const char *dg_intern(dg_t *D, const char *raw);
int64_t dg_to_real(const dg_proc_t *P, uint64_t mono);
ncs_dg_fseq_t *dg_fseq(dg_crank_t *cr, const char *func, int p2p);
dg_op_t *dg_op_at(dg_crank_t *cr, uint32_t idx);
void dg_for_each_op(dg_crank_t *cr, void (*fn)(dg_op_t *, void *), void *arg);
void dg_op_done(dg_crank_t *cr, dg_op_t *op);
void dg_note(dg_t *D, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *dg_base_name(const char *p);
void dg_read_file(dg_t *D, int proc);
/* after reading, with the snapshots known: completions inferred from later ones, pending
 * operations of clean recordings, and those whose file lost records after they started */
void dg_settle(dg_t *D);
/* the recording ended cleanly: a trace with a footer, a live flight file marked exited */
int dg_proc_clean(const dg_t *D, int proc);
#define DG_COMPLETION_TYPES                                                                        \
  ((1u << NCS_T_COLL) | (1u << NCS_T_P2P) | (1u << NCS_T_KERNEL_CH) | (1u << NCS_T_PROXY_OP) |    \
   (1u << NCS_T_PROXY_STEP))
/* dg_files.c */
int dg_choose_files(dg_t *D, const char *path, const ncs_dg_opts_t *o, char *err, size_t errlen);
/* dg_verdict.c */
typedef struct { /* the newest operation entered and the newest completed by a rank */
  const dg_op_t *entered, *completed;
  uint32_t pending, stuck;
  const dg_op_t *oldest_pending;
  const dg_proc_t *P;
} last_t;
int dg_op_stuck(const dg_proc_t *P, const dg_op_t *op);
int dg_comm_judged(const dg_t *D, uint32_t c); /* not left out by --comm */
void dg_ago_str(const dg_t *D, char *out, size_t n, int64_t real);
ncs_dg_verdict_t *dg_verdict(dg_t *D, int kind, int comm);
/* dg_cupti.c: CUPTI's evidence for and against, added to the verdicts */
void dg_cupti(dg_t *D);
void dg_ev_line(ncs_dg_verdict_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
last_t dg_rank_last(dg_t *D, dg_crank_t *cr);
void dg_analyze_comm(dg_t *D, uint32_t c);
void dg_rank_list(char *out, size_t n, const int *r, int nr); /* "0,1,3" or "0-2,5" */
int dg_by_int(const void *a, const void *b); /* qsort of ints */
/* dg_mismatch.c: verdicts for the mismatched collectives of communicator c, the stuck one first;
 * 1 when the stuck one is mismatched */
int dg_comm_mismatches(dg_t *D, uint32_t c, const char *stuck_func, int64_t stuck_seq);

#endif
