/* range.h - the range chunks of the trace format (format 1.4, docs/trace-format.md "Range chunks").
 *
 * User ranges (NVTX push/pop and start/end ranges, marks, and ncclscope's own range API; docs/
 * ranges.md) are written in two chunk types besides the NCCL events: RANGE_STATE (13) says what
 * range recording and hardware metrics did, with the names of the metrics and counters, and
 * RANGES (14) holds records: a range's begin and end, marks, the kernel launches made inside a
 * range, and the hardware metric values of a range. Readers that do not know these chunk types
 * skip them. This header is shared by the plugin's encoder and the reader's decoder (range.c).
 */
#ifndef NCS_TRACE_RANGE_H
#define NCS_TRACE_RANGE_H

#include <stddef.h>
#include <stdint.h>

/* RANGE_STATE: where NVTX_INJECTION64_PATH pointed when the plugin was set up */
enum {
  NCS_NVTX_UNSET = 0,  /* not set: NVTX ranges cannot reach the plugin, only its own range API */
  NCS_NVTX_OURS = 1,   /* this plugin: NVTX ranges are recorded */
  NCS_NVTX_OTHER = 2,  /* another tool (nsys, a libcupti): NVTX ranges go there, not here */
  NCS_NVTX_NSTATES = 3
};

/* RANGE_STATE: the hardware metrics (CUPTI's range profiler) */
enum {
  NCS_HWM_OFF = 0,         /* not asked for (NCCLSCOPE_RANGE_METRICS unset) */
  NCS_HWM_ACTIVE = 1,      /* ranges of the metrics thread at the metrics level get values */
  NCS_HWM_BUSY = 2,        /* another CUPTI client or counter user holds them (reason) */
  NCS_HWM_UNAVAILABLE = 3, /* no CUPTI (reason), or the CUPTI has no range profiler */
  NCS_HWM_FAILED = 4,      /* a CUPTI call failed at set-up or while running (reason) */
  NCS_HWM_REFUSED = 5,     /* the metric list cannot be collected as asked (multi-pass, unknown) */
  NCS_HWM_NO_PRIVILEGES = 6, /* CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: no access to the counters */
  NCS_HWM_WAITING = 7,     /* asked for, not set up yet (no CUDA context seen on a range thread) */
  NCS_HWM_NSTATES = 8
};

/* RANGE_STATE flags */
enum {
  NCS_RSF_FINAL = 1u << 0,   /* the segment's last RANGE_STATE: its counters are totals */
  NCS_RSF_RANGES_OFF = 1u << 1, /* NCCLSCOPE_RANGES=off: no range is recorded */
};

/* replay modes (NCCLSCOPE_RANGE_REPLAY) */
enum { NCS_REPLAY_NONE = 0, NCS_REPLAY_USER = 1 };

/* metric types, as CUPTI's host API gives them (CUpti_MetricType) */
enum { NCS_MT_COUNTER = 0, NCS_MT_RATIO = 1, NCS_MT_THROUGHPUT = 2, NCS_MT_UNKNOWN = 255 };

/* RANGE_STATE counter keys (totals for the segment so far; unknown keys are ignored) */
enum {
  NCS_RK_BEGUN = 1,           /* ranges begun (push or start) */
  NCS_RK_ENDED = 2,           /* ranges ended (pop or end) */
  NCS_RK_MARKS = 3,           /* marks */
  NCS_RK_DROPPED = 4,         /* range records lost on the application's threads (pool full) */
  NCS_RK_NO_SLOT = 5,         /* ... because more threads called than NCCLSCOPE_MAX_THREADS */
  NCS_RK_UNMATCHED_POPS = 6,  /* pops with no range open on the thread */
  NCS_RK_UNMATCHED_ENDS = 7,  /* ends of an id that is not an open start/end range of the segment */
  NCS_RK_END_LOST = 8,        /* ranges whose pop was lost (END flag endlost) */
  NCS_RK_BEGIN_LOST = 9,      /* pops whose range's push was lost (nothing written for them) */
  NCS_RK_UNTRACKED = 10,      /* range records the writer could not follow: deeper than 1024 levels,
                                 too many threads or open start/end ranges, no memory */
  NCS_RK_TRUNCATED = 11,      /* names cut to NCS_RANGE_NAME_MAX bytes */
  NCS_RK_NAMES_FULL = 12,     /* names written again because the name table was full */
  NCS_RK_CROSS_DOMAIN = 13,   /* pops in another NVTX domain than their range's push */
  NCS_RK_IGNORED = 14,        /* NVTX calls of ignored domains (NCCL's own ranges) */
  NCS_RK_OPEN = 15,           /* ranges open now (at the end: never ended in the segment) */
  NCS_RK_LAUNCHES = 16,       /* kernel and graph launches made inside a range (LAUNCH records) */
  NCS_RK_NVTX_INITS = 17,     /* NVTX copies in the process that attached to the plugin (since it
                                 was loaded, not per segment) */
  NCS_RK_FORWARDED = 18,      /* ranges given to CUPTI's range profiler */
  NCS_RK_WITH_VALUES = 19,    /* metric ids that got values (METRICS records) */
  NCS_RK_CUPTI_DROPPED = 20,  /* ranges CUPTI says it dropped (numOfRangeDropped) */
  NCS_RK_NO_BUFFER = 21,      /* forwarded ranges lost: no free counter buffer */
  NCS_RK_SESSION_LOST = 22,   /* forwarded ranges lost to a failed CUPTI call or an open session at the end */
  NCS_RK_BUFFERS = 23,        /* counter buffers filled and decoded (rollovers + 1) */
  NCS_RK_NOT_FORWARDED = 24,  /* ranges at the metrics level that were not forwarded (metrics not active) */
  NCS_RK_OTHER_THREADS = 25,  /* ranges at the metrics level on threads other than the metrics thread */
  NCS_RK_WRITE_LOST = 26,     /* RANGES records in chunks that could not be written */
  NCS_RK_MAX = 26
};

/* RANGES record kinds. A record is u8 kind, varint length of what follows, then its fields: a
 * reader skips kinds it does not know and bytes after the fields it knows. */
enum {
  NCS_RR_BEGIN = 1,   /* a range began: push/pop (depth >= 1) or start/end (depth 0) */
  NCS_RR_END = 2,     /* a range ended */
  NCS_RR_MARK = 3,    /* an instantaneous marker */
  NCS_RR_LAUNCH = 4,  /* a kernel or graph launch made inside a range, on its thread */
  NCS_RR_METRICS = 5, /* hardware metric values of a range (or of a replay group of ranges) */
  NCS_RR_MAX = 5
};

/* BEGIN / END / MARK flags */
enum {
  NCS_RF_STARTEND = 1u << 0,  /* an NVTX start/end range (ends on any thread), not push/pop */
  NCS_RF_API = 1u << 1,       /* from ncclscope's own range API (include/ncclscope.h), not NVTX */
  NCS_RF_TRUNCATED = 1u << 2, /* the name was cut */
  NCS_RF_RESTATED = 1u << 3,  /* BEGIN of a range still open, restated at a flight slot's start */
  NCS_RF_NO_NAME = 1u << 4,   /* the name could not be read (unknown message type, unknown handle) */
  NCS_RF_END_LOST = 1u << 5,  /* END: the pop was lost; ts is the time it was noticed (an upper bound) */
  NCS_RF_GRAPH = 1u << 6,     /* LAUNCH: a CUDA graph launch (its kernels share its correlation id) */
  NCS_RF_REPLAY = 1u << 7,    /* METRICS: values combine the passes over every range with this mid */
};

/* NVTX payload types kept with a range (nvtxPayloadType_t); 0 none */
enum {
  NCS_PAYLOAD_NONE = 0,
  NCS_PAYLOAD_U64 = 1,
  NCS_PAYLOAD_I64 = 2,
  NCS_PAYLOAD_DOUBLE = 3,
  NCS_PAYLOAD_U32 = 4,
  NCS_PAYLOAD_I32 = 5,
  NCS_PAYLOAD_FLOAT = 6,
};

#define NCS_RANGE_NAME_MAX 256    /* bytes of a name kept (UTF-8) */
#define NCS_RANGE_MAX_METRICS 32  /* metrics per RANGE_STATE and per METRICS record */
#define NCS_RANGE_MAX_COUNTERS 64

/* One RANGE_STATE chunk, decoded. Strings stay valid like the reader's other strings. */
typedef struct {
  uint32_t flags;
  uint32_t nvtx;           /* NCS_NVTX_* */
  const char *nvtx_path;   /* NVTX_INJECTION64_PATH as found; "" */
  uint32_t mx_state;       /* NCS_HWM_* */
  uint64_t since_ns;       /* monotonic ns when mx_state began */
  const char *reason;      /* why metrics are (not) active; "" */
  const char *chip;        /* the GPU's chip as CUPTI names it ("GH100"); "" */
  uint32_t replay;         /* NCS_REPLAY_* */
  uint32_t passes;         /* passes the metric list needs (0 unknown) */
  uint32_t level;          /* the nesting level whose ranges get metrics (1 = outermost) */
  uint32_t mx_thread;      /* thread index of the metrics thread, +1 (0 none yet) */
  uint32_t buffer_ranges;  /* ranges per counter buffer */
  uint32_t nmetrics;
  const char *metric[NCS_RANGE_MAX_METRICS];
  uint8_t metric_type[NCS_RANGE_MAX_METRICS]; /* NCS_MT_* */
  uint32_t ncounters;
  uint32_t keys[NCS_RANGE_MAX_COUNTERS];
  uint64_t values[NCS_RANGE_MAX_COUNTERS];
} ncs_range_state_t;

/* One RANGES record, decoded. Which fields mean something depends on kind. */
typedef struct {
  uint8_t kind; /* NCS_RR_* */
  uint32_t flags;
  uint32_t thread;      /* BEGIN, END, MARK: producer thread index */
  uint64_t ts;          /* BEGIN, END, MARK: monotonic ns */
  uint64_t id;          /* BEGIN, END; LAUNCH: the range */
  uint64_t parent;      /* BEGIN, MARK: the innermost push/pop range open on the thread, 0 none */
  uint32_t depth;       /* BEGIN: push/pop nesting level, 1 = outermost; 0 for start/end */
  uint64_t domain_id;   /* BEGIN, MARK: STRINGS id of the NVTX domain's name, 0 default domain */
  const char *domain;   /* resolved; NULL for the default domain */
  uint64_t name_id;     /* BEGIN, MARK: STRINGS id of the name, 0 none */
  const char *name;     /* resolved; NULL when 0 or not defined */
  uint32_t category;    /* BEGIN, MARK: NVTX category, 0 none */
  uint32_t payload_type; /* BEGIN, MARK: NCS_PAYLOAD_* */
  uint64_t payload;     /* raw 64 bits (a double's bits for DOUBLE) */
  uint64_t mid;         /* BEGIN: metrics id whose METRICS record has its values, 0 none; METRICS: it */
  uint64_t corr;        /* LAUNCH: CUPTI correlation id of the launch */
  uint32_t nvalues;     /* METRICS: values in RANGE_STATE's metric order */
  double values[NCS_RANGE_MAX_METRICS];
} ncs_range_rec_t;

const char *ncs_nvtx_state_name(unsigned s);    /* "ours"; "?" */
const char *ncs_hwm_state_name(unsigned s);      /* "active"; "?" */
const char *ncs_range_rec_name(unsigned kind);  /* "BEGIN"; "?" */
const char *ncs_range_counter_name(unsigned key); /* "begun"; NULL when unknown */
const char *ncs_metric_type_name(unsigned t);   /* "counter", "ratio", "throughput", "?" */
const char *ncs_replay_name(unsigned r);        /* "none", "user"; "?" */

/* Encoders: trace/encode.h (ncs_range_enc_*). Decoding: the reader (items RANGE_STATE, RANGE). */

#endif
