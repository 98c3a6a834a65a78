/* gpujoin.h - which NCCL operations each CUPTI kernel of a trace ran, and the GPU time of each
 * operation with its source (docs/gpu-truth.md, "The join"). Read-side: feed it every item of a
 * trace file in order, then ask.
 *
 * What the trace states and what this derives:
 *  - a KERNEL record names its KernelLaunch event (`launch`): eager kernels by correlation id,
 *    replays of a captured kernel by graph node (the capture's KernelLaunch, and a replay index);
 *  - that KernelLaunch START names its communicator (context) and its GroupApi (parent);
 *  - the group's CollApi/P2pApi events on the same communicator are the operations it launched,
 *    and their Coll/P2p children carry seqNumber, algorithm, channels (each Coll/P2p names its
 *    CollApi/P2pApi as parent).
 * One (GroupApi, communicator) normally has one KernelLaunch; when NCCL split the group into
 * several kernel plans, every operation of it gets every kernel (ncs_gj_op_t.launches > 1 says
 * so: the times then span the plans).
 * Kernel times are CUPTI's (CLOCK_REALTIME ns on Linux); they are mapped to the trace's monotonic
 * clock with the GPU_STATE clock pairs (ncs_gj_to_mono).
 */
#ifndef NCS_TRACE_GPUJOIN_H
#define NCS_TRACE_GPUJOIN_H

#include <stddef.h>
#include <stdint.h>

#include "trace/reader.h"

typedef struct ncs_gj ncs_gj_t;

/* the GPU-time source of an operation */
enum { NCS_GJ_NONE = 0, NCS_GJ_CUPTI = 1, NCS_GJ_KERNELCH = 2 };

typedef struct {
  uint32_t segment; /* index of the segment in the file */
  ncs_gpu_rec_t k;  /* the KERNEL record (k.name is NULL: see name). A replay index the writer
                       could not know (flag NCS_GKF_REPLAY_ORDER) is derived here: the rank of
                       its correlation id among its exec graph's in the segment */
  char name[128];   /* its name, cut to 127 bytes ("" unknown) */
  uint64_t start_mono, end_mono; /* mapped; 0 when no clock pair or bad times */
  int32_t comm;     /* the launch's communicator index, -1 unknown or not NCCL */
  uint64_t comm_id; /* its commHash, 0 unknown */
  uint64_t group;   /* the launch's GroupApi id, 0 unknown */
  uint32_t nops;    /* operations it ran: ops[0..nops) index ncs_gj_op() */
  const uint32_t *ops;
} ncs_gj_kernel_t;

typedef struct {
  uint32_t segment;
  uint64_t api;      /* the CollApi/P2pApi event id (0: a Coll/P2p without one) */
  uint8_t api_type;  /* NCS_T_COLL_API or NCS_T_P2P_API (0 none) */
  int captured;      /* its graphCaptured flag */
  const char *func;  /* from the API event, else the Coll/P2p ("?" unknown) */
  const char *dtype; /* likewise ("?" unknown) */
  uint64_t count;
  uint64_t exec;     /* the event id of its first Coll/P2p (0 none): the job model's operation */
  int32_t comm;      /* communicator index, -1 unknown */
  uint64_t group;    /* GroupApi id */
  int64_t seq;       /* seqNumber of its first Coll child, -1 none */
  uint32_t nexec;    /* its Coll/P2p events (executions; replays with KernelCh fire one each) */
  int source;        /* NCS_GJ_*: where its GPU time comes from */
  uint32_t kernels;  /* CUPTI kernels joined to it (replays count one each) */
  uint32_t launches; /* KernelLaunch events of its group and communicator (> 1: split plans) */
  uint64_t gpu_start, gpu_end; /* CUPTI: mapped start of its first, end of its last kernel */
} ncs_gj_op_t;

typedef struct {
  uint64_t kernels, nccl_eager, nccl_replays, compute, bad_time;
  uint64_t launches;              /* LAUNCH records */
  uint64_t pending_end;           /* launches whose kernels are not in the file (ncs_gj_pending) */
  uint64_t unjoined_launch;       /* KERNEL records naming a launch absent from the trace */
  uint32_t states[NCS_GPU_NSTATES]; /* GPU_STATE chunks seen per state */
  uint32_t last_state;            /* the last GPU_STATE's state (NCS_GPU_OFF when none) */
  int have_state;                 /* a GPU_STATE was seen at all (format 1.2) */
} ncs_gj_summary_t;

ncs_gj_t *ncs_gj_new(void);
void ncs_gj_free(ncs_gj_t *j);
/* every item of one file, in the order the reader returns them (the reader is needed for the
 * segment index); returns -1 when out of memory */
int ncs_gj_item(ncs_gj_t *j, const ncs_reader_t *r, const ncs_item_t *it);
/* once the file is read: resolve kernels to operations */
void ncs_gj_finish(ncs_gj_t *j);

size_t ncs_gj_nkernels(const ncs_gj_t *j);
const ncs_gj_kernel_t *ncs_gj_kernel(const ncs_gj_t *j, size_t i);
size_t ncs_gj_nops(const ncs_gj_t *j);
const ncs_gj_op_t *ncs_gj_op(const ncs_gj_t *j, size_t i);
/* Launches whose kernels are not in the file, as PENDING records (one per correlation id): NCCL
 * kernel launches (LAUNCH, or PENDING restated at a segment's end or in a flight keyframe) and
 * launches of graphs holding NCCL kernels (flag NCS_GLF_GRAPH). A hang's evidence when the launch
 * is older than the last CUPTI flush (GPU_STATE counter flush_ns) by more than the kernel can
 * take, and later kernels of the same stream completed; not when CUPTI dropped records (counters
 * cupti_dropped, no_buffer) or stopped (a FAILED state): then "cannot tell". */
size_t ncs_gj_npending(const ncs_gj_t *j);
const ncs_gpu_rec_t *ncs_gj_pending(const ncs_gj_t *j, size_t i, uint32_t *segment);
const ncs_gj_summary_t *ncs_gj_summary(const ncs_gj_t *j);
/* the Coll/P2p events (executions) in file order, after ncs_gj_finish: segment, event id and the
 * index of its operation (ncs_gj_op); -1 past the end */
size_t ncs_gj_nexecs(const ncs_gj_t *j);
int ncs_gj_exec(const ncs_gj_t *j, size_t i, uint32_t *segment, uint64_t *id, uint32_t *op);
/* CUPTI time -> monotonic ns of a segment, by the latest clock pair at or before it (else the
 * first); 0 when the segment has none. CLOCK_REALTIME and CLOCK_MONOTONIC are slewed alike, so
 * their difference changes only when the wall clock is stepped: *err (when not NULL) is the
 * pair's half-width plus how much that difference changed between the pairs around the time. */
uint64_t ncs_gj_to_mono(const ncs_gj_t *j, uint32_t segment, uint64_t cupti, uint64_t *err);

#endif
