/* xfilter.h - the shared filters (--comm, --rank, --from/--to; docs/cli.md "Filters") as every
 * exporter (timeline, SQLite, OTF2) applies them to the records of the files.
 *
 * Which operations pass is decided in one place, the job model (src/model/match.c): it retains
 * the operations that pass and lists those it left out (ncs_job_left). Here each record of a
 * file is sorted by the operation it belongs to:
 *   - a Coll/P2p, its CollApi/P2pApi and its children (KernelCh and its KernelPhases, ProxyOp
 *     and its ProxySteps and their NetPlugin events) go with their operation: all kept, or all
 *     left out;
 *   - a Coll/P2p the model could not place (no communicator recorded for its context) cannot be
 *     told to pass: it is left out with its children, and counted (cannot_tell);
 *   - every other record belongs to no operation (group API calls, kernel launches, NCCL's
 *     groups, proxy progress, CE work, a PXN proxy operation of another process, a child whose
 *     parent is not found): it stays when its communicator is the --comm one and its rank is in
 *     --rank (a record without a communicator: when its process holds such a rank, in such a
 *     communicator), and when its time overlaps the --from/--to window (XF_OWN: the caller knows
 *     the times and decides). A child of a record left out is left out too, unless that was for
 *     the window alone (an API call that returned before the window parents CE work that reaches
 *     into it): then the child is judged on its own.
 * Without a filter every record is kept (XF_KEEP) and nothing is looked up.
 */
#ifndef NCS_EXPORT_XFILTER_H
#define NCS_EXPORT_XFILTER_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "trace/reader.h"
#include "util/hmap.h"

enum {
  XF_KEEP = 0, /* of an operation that passed (or no filter) */
  XF_DROP = 1, /* left out: its later records and its children are too */
  XF_OWN = 2,  /* of no operation; its communicator and rank pass: the window decides */
};

/* the job's side, built once; read-only while the files are written (by several threads) */
typedef struct {
  const ncs_job_t *j;
  int active;             /* a filter is set */
  int64_t from, to;       /* the window in job time (INT64_MIN, INT64_MAX: none) */
  hmap_t *ops;            /* per file: (segment, event id) of every Coll/P2p and CollApi/P2pApi of
                           * an operation -> 1 passed, 2 left out */
  uint8_t *file_ok;       /* per file: its process holds a rank that passes --comm and --rank */
  uint8_t *file_comm;     /* per file: its process is of the --comm communicator */
  hmap_t dev;             /* (file, CUDA device) of a member -> 1 when one of its ranks passes */
  char text[512];         /* ncs_job_filter_text */
} ncs_xf_t;

/* what an export left out because of the filter (the summary, the outputs' metadata) */
typedef struct {
  int active;
  char text[512];
  uint64_t inst_left, p2p_left; /* the model's: collective instances, sends and receives */
  uint64_t inst_kept, ops_kept; /* collective instances; rank operations (Coll and P2p) */
  uint64_t events_left;         /* records (timeline, OTF2) or rows (SQLite) not written */
  uint64_t cannot_tell;         /* Coll/P2p the model could not place: left out */
} ncs_xf_stats_t;

#define XF_RECENT 4096 /* stopped events whose class is still known (late records, children) */

/* one file's pass, one thread */
typedef struct {
  const ncs_xf_t *x;
  uint32_t proc, seg;
  hmap_t drop, keep;      /* open events of this segment: left out; of an operation that passed */
  hmap_t recent;          /* id -> 1 kept, 2 left out: events that stopped lately */
  uint64_t ring[XF_RECENT];
  uint32_t nring, head;
  uint64_t left, cannot_tell;
  int oom;
} ncs_xf_file_t;

int ncs_xf_init(ncs_xf_t *x, const ncs_job_t *j); /* 0, or -1 out of memory */
void ncs_xf_free(ncs_xf_t *x);
/* the stats of an export, once its files are written; events_left and cannot_tell are the
 * caller's sums */
void ncs_xf_stats(const ncs_xf_t *x, ncs_xf_stats_t *s);

void ncs_xf_file(ncs_xf_file_t *s, const ncs_xf_t *x, uint32_t proc);
void ncs_xf_segment(ncs_xf_file_t *s, uint32_t seg); /* a new segment: ids start over */
void ncs_xf_file_free(ncs_xf_file_t *s);
/* a START: XF_KEEP, XF_DROP or XF_OWN. count: the record would be written (its type is
 * exported): a drop counts in s->left */
int ncs_xf_start(ncs_xf_file_t *s, const ncs_event_t *e, int count);
/* a STOP, STATE, COMPLETE or EXPIRED: 1 when its event was left out (skip it) */
int ncs_xf_skip(ncs_xf_file_t *s, const ncs_event_t *e);
/* after its STOP: the event's class is kept a while for late records and children */
void ncs_xf_stopped(ncs_xf_file_t *s, const ncs_event_t *e);
/* an XF_OWN event left out after all (its time is outside the window): counted; its later
 * records are left out too, its children judged on their own */
void ncs_xf_drop(ncs_xf_file_t *s, uint64_t id);

/* [b, e] (job time) overlaps the window */
static inline int ncs_xf_in_window(const ncs_xf_t *x, int64_t b, int64_t e) {
  return !x->active || (b <= x->to && (e > b ? e : b) >= x->from);
}
/* a record without an event id, of file proc, communicator comm (job index; UINT32_MAX: none
 * known, the process's) and rank (-1: none known, the process's): 1 when they pass */
int ncs_xf_who(const ncs_xf_t *x, uint32_t proc, uint32_t comm, int32_t rank);
/* a record of a GPU (a compute kernel): 1 when a rank that ran on it passes (the process's ranks
 * when no communicator of the file was created on that device) */
int ncs_xf_device(const ncs_xf_t *x, uint32_t proc, int32_t device);
/* an operation by its file, segment and Coll/P2p event id: XF_KEEP passed, XF_DROP left out,
 * XF_OWN not an operation of the model */
int ncs_xf_op(const ncs_xf_t *x, uint32_t proc, uint32_t seg, uint64_t id);
/* CUPTI's kernels and graph replays (1 keep, 0 leave out): an NCCL kernel goes with its (first)
 * operation, a replay with its captured operation; a kernel of no operation of the model, a
 * compute kernel included, stays with its GPU's ranks over the window */
int ncs_xf_kernel(const ncs_xf_t *x, const ncs_job_kernel_t *k);
int ncs_xf_replay(const ncs_xf_t *x, const ncs_job_replay_t *r);
/* a user range stays with its thread's process over the window (so the ranges enclosing a kept
 * one stay too); a loss window with its file's process over the window */
int ncs_xf_range(const ncs_xf_t *x, const ncs_job_range_t *r);
int ncs_xf_loss(const ncs_xf_t *x, const ncs_job_loss_t *l);

#endif
