/* sink.h - what the timeline model (timeline.c) hands to an output format (pftrace.c, chrome.c).
 *
 * The model decides everything about the timeline: processes, tracks and lanes, slice names,
 * arguments, flows and counters, in output time (ns). A sink only encodes it. Strings passed to
 * a sink (names, string arguments) are "stable": static, or from the model's string pool, so a
 * sink may key its interning tables by pointer. Tracks are declared (sink->track) before their
 * first event. Slices on one track are properly nested and, at equal timestamps, an END is
 * always handed over before a BEGIN; a slice's END is never at its BEGIN's time.
 */
#ifndef NCS_EXPORT_SINK_H
#define NCS_EXPORT_SINK_H

#include <stdint.h>
#include <stdio.h>

#include "export/pb.h"

/* slice categories: the "kind" a slice is counted under (lint --summary, docs/timeline.md) */
enum {
  TC_API = 0,    /* GroupApi, CollApi, P2pApi, KernelLaunch */
  TC_GROUP,      /* NCCL's internal Group event */
  TC_COLL,       /* Coll: enqueue to completion */
  TC_P2P,        /* P2p: enqueue to completion */
  TC_CE,         /* CeColl, CeSync, CeBatch */
  TC_KERNEL,     /* KernelCh, GPU time */
  TC_PROXYOP,    /* ProxyOp */
  TC_PROXYSTEP,  /* ProxyStep */
  TC_PROXYCTRL,  /* ProxyCtrl */
  TC_NET,        /* NetPlugin */
  TC_PHASE,      /* a state of a ProxyOp/ProxyStep/ProxyCtrl, nested in it */
  TC_STATE,      /* an instant: a state of any other event */
  TC_JOB,        /* one collective instance over all its ranks (job track) */
  TC_LOSS,       /* a loss window of a trace file (job track) */
  TC_KPHASE,     /* KernelPhase: a phase of a KernelCh, GPU time */
  TC_CUPTI,      /* a kernel as CUPTI reported it (job track, docs/gpu-truth.md) */
  TC_REPLAY,     /* a CUDA graph replay of a captured NCCL operation (job track) */
  TC_RANGE,      /* a user range (docs/ranges.md), on its rank's range track */
  TC_OTHER,
  TC_FILTER,     /* what a filtered export covers (job track "export filter") */
  TC_COUNT
};
extern const char *const tl_cat_names[TC_COUNT];

enum { TK_PROCESS = 1, TK_GROUP, TK_LANE, TK_COUNTER };

typedef struct {
  uint64_t uuid, parent; /* parent 0: top level (or a process track's own) */
  uint32_t idx;          /* dense, 0.. in declaration order */
  int32_t pid;           /* synthetic pid of the process the track belongs to; 0 for job tracks */
  uint8_t kind;          /* TK_* */
  uint8_t unit_bytes;    /* counters: values are bytes */
  uint8_t integer;       /* counters: integer values */
  uint8_t explicit_order;/* order children by sibling order */
  uint16_t lane;         /* lanes: 0.. within the row */
  int32_t order;         /* sibling_order_rank; processes: their order */
  const char *name;      /* process name, row name, counter name */
  const char *path;      /* "group / row" for formats without hierarchy */
  const char *merge_key; /* lanes: rows merge their lanes by this key */
  const char *desc;      /* description, or NULL */
  const char *unit;      /* counters: unit name, or NULL */
  uint32_t sort;         /* flat sort index within the process (JSON thread_sort_index) */
  /* JSON rows (chrome.c): lanes of one process with the same pack name share rows. A lane of a
   * per-channel row has pack ("comm X / steps") and its channel (-1: not known); other lanes
   * have pack NULL and share by path. pack_sort orders the rows within the process (0: by name) */
  const char *pack;
  int32_t ch;
  uint32_t pack_sort;
} tl_track_t;

enum { TA_U64 = 1, TA_I64, TA_STR, TA_PTR, TA_BOOL, TA_DBL };
typedef struct {
  const char *name; /* stable */
  uint8_t kind;
  union {
    uint64_t u;
    int64_t i;
    double d;
    const char *s; /* stable */
  } v;
} tl_arg_t;

typedef struct {
  uint64_t id;
  uint8_t out; /* 1: the arrow leaves this slice; 0: it arrives (JSON s/f) */
} tl_flow_t;

typedef struct {
  const tl_track_t *track;
  uint64_t ts;
  const char *name; /* stable */
  uint8_t cat;      /* TC_* */
  const tl_arg_t *args;
  uint32_t nargs;
  const tl_flow_t *flows; /* on the BEGIN */
  uint32_t nflows;
  uint64_t corr; /* correlation id, 0 none */
  /* JSON only: the lane of the open slice (of another event) whose slice holds this one in time,
   * such as a KernelPhase's KernelCh; the JSON nests it there when it fits. NULL: none */
  const tl_track_t *within;
} tl_slice_t;

typedef struct tl_sink tl_sink_t;
struct tl_sink {
  /* a new producer stream: sequence 1 for the job tracks, 2 + index for each trace file */
  void (*seq_begin)(tl_sink_t *s, uint32_t seq);
  void (*track)(tl_sink_t *s, const tl_track_t *t);
  void (*begin)(tl_sink_t *s, const tl_slice_t *sl);
  /* flows here bind to the slice being closed (JSON: near its end) */
  void (*end)(tl_sink_t *s, const tl_track_t *t, uint64_t ts, const tl_flow_t *flows,
              uint32_t nflows);
  void (*instant)(tl_sink_t *s, const tl_slice_t *sl);
  void (*counter)(tl_sink_t *s, const tl_track_t *t, uint64_t ts, double v);
  /* optional (NULL): a part of the output is done, the job tracks or one file's, and none of
   * its tracks gets more events (the JSON names its rows here) */
  void (*part_done)(tl_sink_t *s);
  int (*finish)(tl_sink_t *s); /* flush and close: 0, or -1 (errno set) */
  void (*destroy)(tl_sink_t *s);
  /* shared state */
  int fd;
  int err;           /* errno of the first write error */
  uint64_t origin;   /* output ns that becomes 0 in formats with relative time */
  uint64_t bytes_out;
  uint64_t rows;     /* JSON: thread rows written (chrome.c); 0 for the .pftrace */
  pb_buf_t out;      /* pending output bytes */
  /* the output's clock against wall-clock time, set before the job's sequence begins (sequence
   * 1): output time `clock_at` is realtime `clock_at + realtime_off` ns; one_host: output time is
   * that host's CLOCK_MONOTONIC (else host 0's realtime estimate). has_clock 0: not known (no
   * CLOCK pair in any file) */
  int has_clock, one_host;
  uint64_t clock_at;
  int64_t realtime_off;
  /* what the whole file covers (the filter), for formats with file metadata (Chrome JSON's
   * otherData), set before finish; stable like slice arguments */
  const tl_arg_t *meta;
  uint32_t nmeta;
};

/* Append-and-flush output shared by the sinks: flush when more than 1 MiB is pending. */
void tl_out_flush(tl_sink_t *s);
/* The last flush of a sink: 0, or -1 with errno set to the first error it met. */
int tl_sink_close(tl_sink_t *s);
static inline void tl_out_maybe_flush(tl_sink_t *s) {
  if (s->out.n >= (1u << 20)) tl_out_flush(s);
}

tl_sink_t *tl_pftrace_sink(int fd);
/* whole: write the JSON header (and the job's process name) and, at finish, the trailer;
 * otherwise a fragment: events only, each after a comma, to be appended to a whole one. hold:
 * the JSON bytes an open slice holds back before it takes its row (0: the default, 64 KiB) */
tl_sink_t *tl_chrome_sink(int fd, uint64_t origin, int whole, int32_t job_pid, uint64_t hold);

#endif
