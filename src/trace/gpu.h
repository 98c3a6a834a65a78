/* gpu.h - the GPU chunks of the trace format (format 1.2, docs/trace-format.md "GPU chunks").
 *
 * When the plugin traces kernels through CUPTI (docs/gpu-truth.md) it writes two chunk types
 * besides the NCCL events: GPU_STATE (11) says whether CUPTI is in use and why not, with a clock
 * pair and counters, and GPU (12) holds records: every kernel CUPTI reported, the NCCL kernel
 * launches seen inside NCCL's KernelLaunch events, and the CUDA graph bookkeeping that ties a
 * replayed kernel to the capture it came from. Readers that do not know these chunk types skip
 * them. This header is shared by the plugin's encoder and the reader's decoder (gpu.c).
 */
#ifndef NCS_TRACE_GPU_H
#define NCS_TRACE_GPU_H

#include <stddef.h>
#include <stdint.h>

/* GPU_STATE: what the plugin's CUPTI backend is doing */
enum {
  NCS_GPU_OFF = 0,         /* not asked for (NCCLSCOPE_CUPTI unset or off) */
  NCS_GPU_ACTIVE = 1,      /* subscribed: kernel records come from CUPTI */
  NCS_GPU_BUSY = 2,        /* another CUPTI subscriber holds CUPTI (holder says who): stepped aside */
  NCS_GPU_UNAVAILABLE = 3, /* no usable libcupti (reason says what was tried) */
  NCS_GPU_FAILED = 4,      /* a CUPTI call failed at setup or while running (reason) */
  NCS_GPU_NSTATES = 5
};

/* GPU_STATE flags */
enum {
  NCS_GSF_FINAL = 1u << 0,   /* the segment's last GPU_STATE: its counters are totals */
  NCS_GSF_SUMMARY = 1u << 1, /* NCCLSCOPE_CUPTI_KERNELS=nccl: other kernels only as SUMMARY records */
};

/* GPU_STATE counter keys (totals for the segment so far; unknown keys are ignored) */
enum {
  NCS_GK_RECORDS = 1,        /* activity records read from CUPTI's buffers */
  NCS_GK_KERNELS = 2,        /* kernel records among them */
  NCS_GK_EAGER = 3,          /* kernels joined to a KernelLaunch by correlation id */
  NCS_GK_REPLAYED = 4,       /* kernels joined to a captured KernelLaunch through their graph node */
  NCS_GK_BAD_TIME = 5,       /* kernel records without usable timestamps (flag BAD_TIME) */
  NCS_GK_CUPTI_DROPPED = 6,  /* records CUPTI says it dropped (cuptiActivityGetNumDroppedRecords) */
  NCS_GK_NO_BUFFER = 7,      /* buffer requests refused: the pool (NCCLSCOPE_CUPTI_BUFFER_SIZE) was empty */
  NCS_GK_BAD_BUFFER = 8,     /* buffers whose records stopped decoding (the rest of each is lost) */
  NCS_GK_OTHER_KIND = 9,     /* activity records of kinds the plugin does not use (ignored) */
  NCS_GK_LAUNCHES = 10,      /* NCCL kernel launches seen inside KernelLaunch events */
  NCS_GK_PENDING = 11,       /* launches (eager, and graph launches with NCCL nodes) without kernels yet */
  NCS_GK_UNTRACKED = 12,     /* launches the pending table had no room for (their kernels cannot join) */
  NCS_GK_HOST_DROPS = 13,    /* LAUNCH/graph records lost on the app's threads (buffer pool full) */
  NCS_GK_GRAPH_NODES = 14,   /* NCCL kernels captured into CUDA graphs (GNODE) */
  NCS_GK_CLONES = 15,        /* their instantiated copies (GCLONE) */
  NCS_GK_NODE_SET_FULL = 16, /* captured nodes not remembered for GCLONE (set full) */
  NCS_GK_GRAPH_LAUNCHES = 17,/* graph launches of graphs holding NCCL kernels (GLAUNCH) */
  NCS_GK_FLUSH_ERRORS = 18,  /* cuptiActivityFlushAll calls that failed */
  NCS_GK_FLUSH_NS = 19,      /* monotonic ns of the last CUPTI flush that returned success */
  NCS_GK_SUMMARIZED = 20,    /* kernels counted only in SUMMARY records */
  NCS_GK_MAP_FULL = 21,      /* graph bookkeeping entries that found their table full */
  NCS_GK_NAMES_FULL = 22,    /* kernel records whose name was not kept (name table full) */
  NCS_GK_WRITE_LOST = 23,    /* GPU records in chunks that could not be written (disk full, ...) */
  NCS_GK_MAX = 23
};

/* GPU record kinds. A record is u8 kind, varint length of what follows, then its fields: a
 * reader skips kinds it does not know and bytes after the fields it knows. */
enum {
  NCS_GR_KERNEL = 1,  /* a kernel's execution, from a CUPTI activity record */
  NCS_GR_LAUNCH = 2,  /* an NCCL kernel launch, inside a KernelLaunch event */
  NCS_GR_GNODE = 3,   /* that launch was captured: the graph node it became */
  NCS_GR_GEXEC = 4,   /* a graph was instantiated: exec graph id -> the graph it came from */
  NCS_GR_GCLONE = 5,  /* the exec graph's copy of a captured NCCL node */
  NCS_GR_GLAUNCH = 6, /* a launch of an exec graph holding NCCL nodes */
  NCS_GR_PENDING = 7, /* flight keyframes: a LAUNCH or GLAUNCH whose kernels had not come */
  NCS_GR_SUMMARY = 8, /* kernels of one stream counted, not recorded one by one */
  NCS_GR_MAX = 8
};

/* KERNEL flags */
enum {
  NCS_GKF_EAGER = 1u << 0,    /* joined by correlation id: `launch` is the KernelLaunch */
  NCS_GKF_GRAPH = 1u << 1,    /* a replay of a captured NCCL kernel: `launch` is the capture's KernelLaunch */
  NCS_GKF_BAD_TIME = 1u << 2, /* CUPTI gave no usable start/end: times unknown (duration 0) */
  NCS_GKF_DEVICE_LAUNCHED = 1u << 3,
  NCS_GKF_REPLAY_ORDER = 1u << 4, /* no GLAUNCH for it: replay 0; a reader ranks its correlation id
                                     among its exec graph's (CUPTI's ids grow in launch order) */
  NCS_GKF_BY_INDEX = 1u << 5,     /* graph node matched by its index (no GCLONE was seen) */
};

/* LAUNCH / PENDING flags */
enum {
  NCS_GLF_GRAPH = 1u << 0, /* PENDING: a GLAUNCH (exec graph launch), not an eager LAUNCH */
  NCS_GLF_REPEAT = 1u << 1 /* a second kernel launch inside the same KernelLaunch event */
};

/* One GPU_STATE chunk, decoded. Strings stay valid like the reader's other strings. */
#define NCS_GPU_MAX_COUNTERS 64
typedef struct {
  uint32_t state, flags;
  uint64_t since_ns;   /* monotonic ns when this state began */
  const char *reason;  /* why (not) active; "" */
  const char *library; /* the libcupti used or tried; "" */
  uint32_t api_version; /* cuptiGetVersion, 0 unknown */
  const char *holder;  /* BUSY: the other subscriber's name as CUPTI gives it; "" */
  /* a clock pair: CUPTI time (CLOCK_REALTIME ns on Linux) read between two monotonic reads
   * `width` ns apart, mono_ns their midpoint; all 0 when none */
  uint64_t clock_mono_ns, clock_cupti_ns, clock_width_ns;
  uint32_t ncounters;
  uint32_t keys[NCS_GPU_MAX_COUNTERS];
  uint64_t values[NCS_GPU_MAX_COUNTERS];
} ncs_gpu_state_t;

/* One GPU record, decoded. Which fields mean something depends on kind (docs/trace-format.md). */
typedef struct {
  uint8_t kind; /* NCS_GR_* */
  uint32_t flags;
  /* host-side records (LAUNCH, GLAUNCH, PENDING): monotonic ns and producer thread */
  uint64_t ts;
  uint32_t thread;
  uint64_t corr;      /* CUPTI correlation id (KERNEL, LAUNCH, GNODE, GLAUNCH, PENDING) */
  uint64_t launch;    /* KernelLaunch event id (LAUNCH, GNODE, GCLONE, PENDING; KERNEL when joined) */
  uint32_t comm;      /* LAUNCH/PENDING: comm index + 1 of the KernelLaunch's context, 0 unknown */
  uint64_t group;     /* LAUNCH/PENDING: GroupApi event id (the KernelLaunch's parent), 0 unknown */
  uint64_t stream;    /* LAUNCH/GLAUNCH/PENDING: CUstream pointer; KERNEL/SUMMARY: CUPTI stream id */
  /* KERNEL: CUPTI times (CLOCK_REALTIME ns on Linux; map with GPU_STATE clock pairs) */
  uint64_t start, end;
  uint32_t device;
  uint64_t name_id;   /* STRINGS id of the kernel name, 0 unknown */
  const char *name;   /* resolved; NULL when 0 or not defined */
  uint64_t graph;     /* KERNEL: exec graph id (0 not from a graph); GNODE: capture graph id;
                         GEXEC/GLAUNCH/PENDING graph: exec graph id */
  uint64_t node;      /* KERNEL: graph node id; GNODE: capture node id; GCLONE: exec node id */
  uint64_t orig;      /* GCLONE: the captured node id; GEXEC: the graph it was instantiated from */
  uint32_t replay;    /* KERNEL: 1-based graph launch index of its exec graph (0 not a replay, or
                         unknown: flag NCS_GKF_REPLAY_ORDER) */
  /* SUMMARY: kernels of `stream` on `device`, `count` of them busy `busy_ns` in [start, end] */
  uint64_t count, busy_ns;
} ncs_gpu_rec_t;

const char *ncs_gpu_state_name(unsigned s);  /* "active"; "?" */
const char *ncs_gpu_rec_name(unsigned kind); /* "KERNEL"; "?" */
const char *ncs_gpu_counter_name(unsigned key); /* "kernels"; NULL when unknown */

/* Encoders: trace/encode.h (ncs_gpu_enc_*). Decoding: the reader (reader.h items GPU_STATE, GPU). */

#endif
