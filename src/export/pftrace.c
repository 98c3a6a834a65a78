/* pftrace.c - the Perfetto sink: TrackEvent protobuf, hand-encoded (docs/timeline.md).
 *
 * The file is a sequence of `Trace.packet` records (field 1), written as the model produces
 * them. Every packet carries trusted_packet_sequence_id; each trace file gets its own sequence,
 * the job tracks another. Event names, categories, argument names and string argument values
 * are interned per sequence (InternedData, defined in the packet that first uses them); the
 * first interning packet of a sequence sets SEQ_INCREMENTAL_STATE_CLEARED. Field numbers are
 * those of Perfetto's public protos (tests/perfetto_subset.proto lists every one we emit).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hmap.h"
#include "export/sink.h"

/* TracePacket */
enum { TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_INTERNED = 12,
       TP_SEQ_FLAGS = 13, TP_TRACK_DESC = 60 };
/* ClockSnapshot, its Clock, and the builtin clocks */
enum { CS_CLOCKS = 1, CS_PRIMARY = 2, CK_ID = 1, CK_TIMESTAMP = 2 };
enum { CLOCK_REALTIME_ID = 1, CLOCK_MONOTONIC_ID = 3, CLOCK_BOOTTIME_ID = 6 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS = 2 };
/* TrackDescriptor */
enum { TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_PARENT = 5, TD_COUNTER = 8,
       TD_CHILD_ORDERING = 11, TD_ORDER_RANK = 12, TD_DESCRIPTION = 14, TD_MERGE_BEHAVIOR = 15,
       TD_MERGE_KEY = 16, TD_PROCESS_ORDERING = 19 };
enum { ORDERING_EXPLICIT = 3, MERGE_BY_KEY = 3, PROCESS_ORDERING_EXPLICIT = 1 };
/* ProcessDescriptor, CounterDescriptor */
enum { PD_PID = 1, PD_NAME = 6, CD_UNIT = 3, CD_UNIT_NAME = 6, UNIT_SIZE_BYTES = 3 };
/* TrackEvent */
enum { TE_CATEGORY_IIDS = 3, TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11,
       TE_COUNTER_VALUE = 30, TE_DOUBLE_COUNTER = 44, TE_FLOW_IDS = 47, TE_CORRELATION = 52 };
enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
/* DebugAnnotation */
enum { DA_NAME_IID = 1, DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6,
       DA_POINTER = 7, DA_STRING_IID = 17 };
/* InternedData and its entries */
enum { ID_CATEGORIES = 1, ID_NAMES = 2, ID_ARG_NAMES = 3, ID_ARG_STRINGS = 29, IE_IID = 1,
       IE_NAME = 2 };
enum { IK_CAT = 0, IK_NAME, IK_ARG, IK_STR, IK_COUNT };
static const uint32_t ik_field[IK_COUNT] = {ID_CATEGORIES, ID_NAMES, ID_ARG_NAMES, ID_ARG_STRINGS};

#define MAX_PENDING 128

typedef struct {
  tl_sink_t base;
  uint32_t seq;     /* current sequence id (1: the job; 2 + file index) */
  int seq_started;  /* the current sequence has had its CLEARED packet */
  hmap_t intern;    /* (pointer, kind) -> iid, per sequence */
  uint64_t next_iid[IK_COUNT];
  struct {
    uint8_t kind;
    uint64_t iid;
    const char *s;
  } pending[MAX_PENDING]; /* new interned entries of the packet being built */
  uint32_t npending;
} pf_t;

static uint64_t intern(pf_t *p, int kind, const char *s) {
  uint64_t key = (uint64_t)(uintptr_t)s * IK_COUNT + (uint64_t)kind, iid;
  if (hm_get(&p->intern, key, &iid)) return iid;
  if (p->npending == MAX_PENDING) return 0; /* caller writes the string inline instead */
  iid = ++p->next_iid[kind];
  if (hm_put(&p->intern, key, iid) != 0) {
    p->next_iid[kind]--;
    return 0;
  }
  p->pending[p->npending].kind = (uint8_t)kind;
  p->pending[p->npending].iid = iid;
  p->pending[p->npending].s = s;
  p->npending++;
  return iid;
}

static size_t packet_open(pf_t *p, uint64_t ts, int has_ts) {
  pb_buf_t *b = &p->base.out;
  size_t m = pb_open(b, 1);
  if (has_ts) pb_u64(b, TP_TIMESTAMP, ts);
  pb_u64(b, TP_SEQ_ID, p->seq);
  return m;
}

static void packet_close(pf_t *p, size_t m) {
  pb_close(&p->base.out, m);
  tl_out_maybe_flush(&p->base);
}

/* after the TrackEvent: the interned data it introduced, and the sequence flags */
static void packet_interned(pf_t *p, int uses_interning) {
  pb_buf_t *b = &p->base.out;
  if (p->npending) {
    size_t m = pb_open(b, TP_INTERNED);
    for (uint32_t i = 0; i < p->npending; i++) {
      size_t e = pb_open(b, ik_field[p->pending[i].kind]);
      pb_u64(b, IE_IID, p->pending[i].iid);
      pb_str(b, IE_NAME, p->pending[i].s); /* EventName.name / InternedString.str: both 2 */
      pb_close(b, e);
    }
    pb_close(b, m);
    p->npending = 0;
  }
  if (uses_interning) {
    pb_u64(b, TP_SEQ_FLAGS, p->seq_started ? SEQ_NEEDS : SEQ_CLEARED | SEQ_NEEDS);
    p->seq_started = 1;
  }
}

static void pf_seq_begin(tl_sink_t *s, uint32_t seq) {
  pf_t *p = (pf_t *)s;
  p->seq = seq;
  p->seq_started = 0;
  hm_clear(&p->intern);
  for (int k = 0; k < IK_COUNT; k++) p->next_iid[k] = 0;
  if (p->seq == 1 && s->has_clock) {
    /* Which wall-clock time the trace's timestamps are (docs/timeline.md, "Time"): they carry no
     * timestamp_clock_id, so Perfetto reads them as BOOTTIME, the trace clock. On one host they
     * are CLOCK_MONOTONIC (BOOTTIME less the time the host was suspended: the same on a server
     * that never was), and REALTIME is off ns later; across hosts they are host 0's realtime.
     * Perfetto then shows wall-clock time and lines the trace up with other traces of the same
     * time by REALTIME (docs/timeline.md, "Beside other traces"). */
    pb_buf_t *b = &s->out;
    size_t m = packet_open(p, s->clock_at, 1);
    size_t cs = pb_open(b, TP_CLOCK_SNAPSHOT);
    static const uint32_t ids[] = {CLOCK_BOOTTIME_ID, CLOCK_MONOTONIC_ID, CLOCK_REALTIME_ID};
    for (int k = 0; k < 3; k++) {
      if (ids[k] == CLOCK_MONOTONIC_ID && !s->one_host) continue; /* not one host's clock */
      size_t c = pb_open(b, CS_CLOCKS);
      pb_u64(b, CK_ID, ids[k]);
      pb_u64(b, CK_TIMESTAMP, ids[k] == CLOCK_REALTIME_ID ? s->clock_at + (uint64_t)s->realtime_off : s->clock_at);
      pb_close(b, c);
    }
    pb_u64(b, CS_PRIMARY, CLOCK_BOOTTIME_ID);
    pb_close(b, cs);
    packet_close(p, m);
  }
  if (p->seq == 1) {
    /* the root track (uuid 0): order processes by their sibling_order_rank (Perfetto v57+) */
    size_t m = packet_open(p, 0, 0);
    size_t d = pb_open(&s->out, TP_TRACK_DESC);
    pb_u64(&s->out, TD_UUID, 0);
    pb_u64(&s->out, TD_PROCESS_ORDERING, PROCESS_ORDERING_EXPLICIT);
    pb_close(&s->out, d);
    packet_close(p, m);
  }
}

static void pf_track(tl_sink_t *s, const tl_track_t *t) {
  pf_t *p = (pf_t *)s;
  pb_buf_t *b = &s->out;
  size_t m = packet_open(p, 0, 0);
  size_t d = pb_open(b, TP_TRACK_DESC);
  pb_u64(b, TD_UUID, t->uuid);
  if (t->kind == TK_PROCESS) {
    size_t pd = pb_open(b, TD_PROCESS);
    pb_i64(b, PD_PID, t->pid);
    pb_str(b, PD_NAME, t->name);
    pb_close(b, pd);
    pb_i64(b, TD_ORDER_RANK, t->order);
  } else {
    if (t->parent) pb_u64(b, TD_PARENT, t->parent);
    pb_str(b, TD_NAME, t->name);
    if (t->desc) pb_str(b, TD_DESCRIPTION, t->desc);
    pb_i64(b, TD_ORDER_RANK, t->order);
    if (t->explicit_order) pb_u64(b, TD_CHILD_ORDERING, ORDERING_EXPLICIT);
    if (t->kind == TK_LANE && t->merge_key) {
      pb_u64(b, TD_MERGE_BEHAVIOR, MERGE_BY_KEY);
      pb_str(b, TD_MERGE_KEY, t->merge_key);
    }
    if (t->kind == TK_COUNTER) {
      size_t c = pb_open(b, TD_COUNTER);
      if (t->unit_bytes) pb_u64(b, CD_UNIT, UNIT_SIZE_BYTES);
      if (t->unit) pb_str(b, CD_UNIT_NAME, t->unit);
      pb_close(b, c);
    }
  }
  pb_close(b, d);
  packet_close(p, m);
}

static void put_args(pf_t *p, const tl_arg_t *a, uint32_t n) {
  pb_buf_t *b = &p->base.out;
  for (uint32_t i = 0; i < n; i++) {
    size_t m = pb_open(b, TE_DEBUG);
    uint64_t iid = intern(p, IK_ARG, a[i].name);
    if (iid)
      pb_u64(b, DA_NAME_IID, iid);
    else
      pb_str(b, 10 /* DebugAnnotation.name */, a[i].name);
    switch (a[i].kind) {
    case TA_U64: pb_u64(b, DA_UINT, a[i].v.u); break;
    case TA_I64: pb_i64(b, DA_INT, a[i].v.i); break;
    case TA_PTR: pb_u64(b, DA_POINTER, a[i].v.u); break;
    case TA_BOOL: pb_u64(b, DA_BOOL, a[i].v.u != 0); break;
    case TA_DBL: pb_double(b, DA_DOUBLE, a[i].v.d); break;
    default: {
      const char *str = a[i].v.s ? a[i].v.s : "";
      uint64_t sid = strlen(str) <= 256 ? intern(p, IK_STR, str) : 0;
      if (sid)
        pb_u64(b, DA_STRING_IID, sid);
      else
        pb_str(b, DA_STRING, str);
    }
    }
    pb_close(b, m);
  }
}

static void put_flows(pb_buf_t *b, const tl_flow_t *f, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) pb_fixed64(b, TE_FLOW_IDS, f[i].id);
}

static void slice_event(pf_t *p, const tl_slice_t *sl, int type) {
  pb_buf_t *b = &p->base.out;
  size_t m = packet_open(p, sl->ts, 1);
  size_t e = pb_open(b, TP_TRACK_EVENT);
  pb_u64(b, TE_TYPE, (uint64_t)type);
  pb_u64(b, TE_TRACK_UUID, sl->track->uuid);
  uint64_t cat = intern(p, IK_CAT, tl_cat_names[sl->cat]);
  if (cat)
    pb_u64(b, TE_CATEGORY_IIDS, cat);
  else
    pb_str(b, 22 /* categories */, tl_cat_names[sl->cat]);
  uint64_t name = intern(p, IK_NAME, sl->name);
  if (name)
    pb_u64(b, TE_NAME_IID, name);
  else
    pb_str(b, 23 /* name */, sl->name);
  put_flows(b, sl->flows, sl->nflows);
  if (sl->corr) pb_u64(b, TE_CORRELATION, sl->corr);
  put_args(p, sl->args, sl->nargs);
  pb_close(b, e);
  packet_interned(p, 1);
  packet_close(p, m);
}

static void pf_begin(tl_sink_t *s, const tl_slice_t *sl) { slice_event((pf_t *)s, sl, TYPE_BEGIN); }
static void pf_instant(tl_sink_t *s, const tl_slice_t *sl) {
  slice_event((pf_t *)s, sl, TYPE_INSTANT);
}

static void pf_end(tl_sink_t *s, const tl_track_t *t, uint64_t ts, const tl_flow_t *f,
                   uint32_t nf) {
  pf_t *p = (pf_t *)s;
  pb_buf_t *b = &s->out;
  size_t m = packet_open(p, ts, 1);
  size_t e = pb_open(b, TP_TRACK_EVENT);
  pb_u64(b, TE_TYPE, TYPE_END);
  pb_u64(b, TE_TRACK_UUID, t->uuid);
  put_flows(b, f, nf);
  pb_close(b, e);
  packet_close(p, m);
}

static void pf_counter(tl_sink_t *s, const tl_track_t *t, uint64_t ts, double v) {
  pf_t *p = (pf_t *)s;
  pb_buf_t *b = &s->out;
  size_t m = packet_open(p, ts, 1);
  size_t e = pb_open(b, TP_TRACK_EVENT);
  pb_u64(b, TE_TYPE, TYPE_COUNTER);
  pb_u64(b, TE_TRACK_UUID, t->uuid);
  if (t->integer)
    pb_i64(b, TE_COUNTER_VALUE, (int64_t)(v < 0 ? v - 0.5 : v + 0.5));
  else
    pb_double(b, TE_DOUBLE_COUNTER, v);
  pb_close(b, e);
  packet_close(p, m);
}

static int pf_finish(tl_sink_t *s) { return tl_sink_close(s); }

static void pf_destroy(tl_sink_t *s) {
  pf_t *p = (pf_t *)s;
  hm_free(&p->intern);
  pb_free(&s->out);
  free(p);
}

tl_sink_t *tl_pftrace_sink(int fd) {
  pf_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  tl_sink_t *s = &p->base;
  s->seq_begin = pf_seq_begin;
  s->track = pf_track;
  s->begin = pf_begin;
  s->end = pf_end;
  s->instant = pf_instant;
  s->counter = pf_counter;
  s->finish = pf_finish;
  s->destroy = pf_destroy;
  s->fd = fd;
  return s;
}
