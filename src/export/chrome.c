/* chrome.c - the Chrome trace-event JSON sink, for viewers that do not read Perfetto protobuf.
 *
 * Layout: {"traceEvents":[...],"displayTimeUnit":"ns"}. One JSON pid per rank (the same
 * synthetic pid as in the .pftrace), one tid per lane, named by "M" metadata events. Slices are
 * complete events ("X"), written when they end (their arguments are rendered when they begin
 * and kept until then: memory is bounded by the open slices). Timestamps are µs relative to the
 * start of the trace with 3 decimals (ns precision). Flows are v1 flow events: "s" on the slice
 * the arrow leaves, "f" with "bp":"e" on the slice it reaches, placed 1-2 ns inside the slices
 * so that they bind to them. Counters are "C" events, states "i" instants.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/sink.h"

#define MAX_DEPTH 4

typedef struct {
  uint64_t ts;
  const char *name;
  uint8_t cat;
  pb_buf_t args;  /* rendered "k":v,... */
  tl_flow_t *flows;
  uint32_t nflows, flow_cap;
} jslice_t;

typedef struct {
  int32_t pid;
  uint32_t tid;
  uint8_t kind, depth, declared;
  jslice_t st[MAX_DEPTH];
} jtrack_t;

typedef struct {
  tl_sink_t base;
  jtrack_t *tr;
  uint32_t ntr;
  int first; /* no event written yet */
  int whole; /* header and trailer are ours (else a fragment of events) */
  int32_t *named_pids;
  uint32_t nnamed;
} js_t;

/* ---------------------------------------------------------------- text output */

static void put(pb_buf_t *b, const char *s, size_t n) {
  if (!n || pb_room(b, n)) return;
  memcpy(b->p + b->n, s, n);
  b->n += n;
}
#define PUTS(b, lit) put((b), (lit), sizeof(lit) - 1)

static void put_u64(pb_buf_t *b, uint64_t v) {
  char t[24];
  int i = 24;
  do {
    t[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  put(b, t + i, (size_t)(24 - i));
}

static void put_i64(pb_buf_t *b, int64_t v) {
  if (v < 0) {
    PUTS(b, "-");
    put_u64(b, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(b, (uint64_t)v);
  }
}

static void put_hex(pb_buf_t *b, uint64_t v) {
  char t[24];
  int n = snprintf(t, sizeof t, "\"0x%" PRIx64 "\"", v);
  put(b, t, (size_t)n);
}

static void put_dbl(pb_buf_t *b, double d) {
  char t[40];
  if (d != d || d > 1e300 || d < -1e300) d = 0; /* JSON has no NaN or infinity */
  int n = snprintf(t, sizeof t, "%.9g", d);
  put(b, t, (size_t)n);
}

static void put_jstr(pb_buf_t *b, const char *s) {
  PUTS(b, "\"");
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') {
      char t[2] = {'\\', (char)*p};
      put(b, t, 2);
    } else if (*p < 0x20 || *p == 0x7F) {
      char t[8];
      snprintf(t, sizeof t, "\\u%04x", *p);
      put(b, t, 6);
    } else {
      put(b, (const char *)p, 1);
    }
  }
  PUTS(b, "\"");
}

/* µs with 3 decimals, relative to the origin */
static void put_ts(js_t *j, uint64_t ts) {
  pb_buf_t *b = &j->base.out;
  uint64_t o = j->base.origin;
  if (ts < o) {
    PUTS(b, "-");
    ts = o - ts;
  } else {
    ts -= o;
  }
  put_u64(b, ts / 1000);
  char t[5] = {'.', (char)('0' + ts % 1000 / 100), (char)('0' + ts % 100 / 10),
               (char)('0' + ts % 10), 0};
  put(b, t, 4);
}

static void put_dur(pb_buf_t *b, uint64_t d) {
  put_u64(b, d / 1000);
  char t[4] = {'.', (char)('0' + d % 1000 / 100), (char)('0' + d % 100 / 10), (char)('0' + d % 10)};
  put(b, t, 4);
}

static void ev_open(js_t *j) {
  if (j->first) {
    PUTS(&j->base.out, "\n");
    j->first = 0;
  } else {
    PUTS(&j->base.out, ",\n");
  }
}

static void ev_close(js_t *j) { tl_out_maybe_flush(&j->base); }

static void render_args(pb_buf_t *b, const tl_arg_t *a, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (i) PUTS(b, ",");
    put_jstr(b, a[i].name);
    PUTS(b, ":");
    switch (a[i].kind) {
    case TA_U64:
      if (a[i].v.u > (1ull << 53))
        put_hex(b, a[i].v.u);
      else
        put_u64(b, a[i].v.u);
      break;
    case TA_I64: put_i64(b, a[i].v.i); break;
    case TA_PTR: put_hex(b, a[i].v.u); break;
    case TA_BOOL:
      if (a[i].v.u)
        PUTS(b, "true");
      else
        PUTS(b, "false");
      break;
    case TA_DBL: put_dbl(b, a[i].v.d); break;
    default: put_jstr(b, a[i].v.s); break;
    }
  }
}

/* ---------------------------------------------------------------- tracks */

static jtrack_t *jt(js_t *j, uint32_t idx) {
  if (idx >= j->ntr) {
    uint32_t n = j->ntr ? j->ntr : 256;
    while (n <= idx) n *= 2;
    jtrack_t *t = realloc(j->tr, n * sizeof *t);
    if (!t) return NULL;
    memset(t + j->ntr, 0, (n - j->ntr) * sizeof *t);
    j->tr = t;
    j->ntr = n;
  }
  return &j->tr[idx];
}

static void meta(js_t *j, const char *what, int32_t pid, uint32_t tid, const char *name,
                 int64_t sort, int has_name) {
  pb_buf_t *b = &j->base.out;
  ev_open(j);
  PUTS(b, "{\"ph\":\"M\",\"name\":\"");
  put(b, what, strlen(what));
  PUTS(b, "\",\"pid\":");
  put_i64(b, pid);
  PUTS(b, ",\"tid\":");
  put_u64(b, tid);
  PUTS(b, ",\"args\":{");
  if (has_name) {
    PUTS(b, "\"name\":");
    put_jstr(b, name);
  } else {
    PUTS(b, "\"sort_index\":");
    put_i64(b, sort);
  }
  PUTS(b, "}}");
  ev_close(j);
}

static void name_pid(js_t *j, int32_t pid, const char *name, int64_t order) {
  for (uint32_t i = 0; i < j->nnamed; i++)
    if (j->named_pids[i] == pid) return;
  int32_t *n = realloc(j->named_pids, (j->nnamed + 1) * sizeof *n);
  if (!n) return;
  j->named_pids = n;
  n[j->nnamed++] = pid;
  meta(j, "process_name", pid, 0, name, 0, 1);
  meta(j, "process_sort_index", pid, 0, NULL, order, 0);
}

static void js_seq_begin(tl_sink_t *s, uint32_t seq) {
  (void)s;
  (void)seq;
}

/* Only lanes get a JSON thread; processes and the job get a process name. Group and counter
 * tracks have no JSON counterpart (counters are named by their events). */
static void js_track(tl_sink_t *s, const tl_track_t *t) {
  js_t *j = (js_t *)s;
  if (t->kind == TK_PROCESS) {
    name_pid(j, t->pid, t->name, t->order);
    return;
  }
  if (t->kind != TK_LANE) return;
  jtrack_t *x = jt(j, t->idx);
  if (!x) return;
  x->pid = t->pid;
  x->tid = t->idx + 1;
  x->kind = t->kind;
  x->declared = 1;
  x->depth = 0;
  char nm[512];
  if (t->lane)
    snprintf(nm, sizeof nm, "%s #%u", t->path ? t->path : t->name, (unsigned)t->lane + 1);
  else
    snprintf(nm, sizeof nm, "%s", t->path ? t->path : t->name);
  meta(j, "thread_name", t->pid, x->tid, nm, 0, 1);
  meta(j, "thread_sort_index", t->pid, x->tid, NULL, t->sort, 0);
}

static void flow_event(js_t *j, const jtrack_t *x, const tl_flow_t *f, uint64_t ts) {
  pb_buf_t *b = &j->base.out;
  ev_open(j);
  PUTS(b, "{\"ph\":\"");
  put(b, f->out ? "s" : "f", 1);
  PUTS(b, "\",\"cat\":\"flow\",\"name\":\"flow\",\"id\":");
  put_hex(b, f->id);
  if (!f->out) PUTS(b, ",\"bp\":\"e\"");
  PUTS(b, ",\"pid\":");
  put_i64(b, x->pid);
  PUTS(b, ",\"tid\":");
  put_u64(b, x->tid);
  PUTS(b, ",\"ts\":");
  put_ts(j, ts);
  PUTS(b, "}");
  ev_close(j);
}

static void js_begin(tl_sink_t *s, const tl_slice_t *sl) {
  js_t *j = (js_t *)s;
  jtrack_t *x = jt(j, sl->track->idx);
  if (!x || x->depth >= MAX_DEPTH) return;
  jslice_t *e = &x->st[x->depth++];
  e->ts = sl->ts;
  e->name = sl->name;
  e->cat = sl->cat;
  e->args.n = 0;
  render_args(&e->args, sl->args, sl->nargs);
  if (sl->corr) {
    if (sl->nargs) PUTS(&e->args, ",");
    PUTS(&e->args, "\"correlation_id\":");
    put_hex(&e->args, sl->corr);
  }
  e->nflows = 0;
  if (sl->nflows) {
    if (sl->nflows > e->flow_cap) {
      tl_flow_t *f = realloc(e->flows, sl->nflows * sizeof *f);
      if (!f) return;
      e->flows = f;
      e->flow_cap = sl->nflows;
    }
    memcpy(e->flows, sl->flows, sl->nflows * sizeof *e->flows);
    e->nflows = sl->nflows;
  }
}

static void js_end(tl_sink_t *s, const tl_track_t *t, uint64_t ts, const tl_flow_t *f,
                   uint32_t nf) {
  js_t *j = (js_t *)s;
  jtrack_t *x = jt(j, t->idx);
  if (!x || !x->depth) return;
  jslice_t *e = &x->st[--x->depth];
  pb_buf_t *b = &s->out;
  uint64_t dur = ts > e->ts ? ts - e->ts : 0;
  ev_open(j);
  PUTS(b, "{\"ph\":\"X\",\"name\":");
  put_jstr(b, e->name);
  PUTS(b, ",\"cat\":\"");
  put(b, tl_cat_names[e->cat], strlen(tl_cat_names[e->cat]));
  PUTS(b, "\",\"pid\":");
  put_i64(b, x->pid);
  PUTS(b, ",\"tid\":");
  put_u64(b, x->tid);
  PUTS(b, ",\"ts\":");
  put_ts(j, e->ts);
  PUTS(b, ",\"dur\":");
  put_dur(b, dur);
  PUTS(b, ",\"args\":{");
  if (!e->args.oom) put(b, (const char *)e->args.p, e->args.n);
  PUTS(b, "}}");
  ev_close(j);
  /* flow ends inside the slice: leaving ones 1 ns in, arriving ones 2 ns in (when it is long
   * enough), so a slice that starts with its hub still binds after it */
  uint64_t d1 = dur / 3 < 1 ? dur / 3 : 1, d2 = dur * 2 / 3 < 2 ? dur * 2 / 3 : 2;
  for (uint32_t i = 0; i < e->nflows; i++)
    flow_event(j, x, &e->flows[i], e->ts + (e->flows[i].out ? d1 : d2));
  for (uint32_t i = 0; i < nf; i++) flow_event(j, x, &f[i], ts - d1);
}

static void js_instant(tl_sink_t *s, const tl_slice_t *sl) {
  js_t *j = (js_t *)s;
  jtrack_t *x = jt(j, sl->track->idx);
  if (!x) return;
  pb_buf_t *b = &s->out;
  ev_open(j);
  PUTS(b, "{\"ph\":\"i\",\"s\":\"t\",\"name\":");
  put_jstr(b, sl->name);
  PUTS(b, ",\"cat\":\"");
  put(b, tl_cat_names[sl->cat], strlen(tl_cat_names[sl->cat]));
  PUTS(b, "\",\"pid\":");
  put_i64(b, x->pid);
  PUTS(b, ",\"tid\":");
  put_u64(b, x->tid);
  PUTS(b, ",\"ts\":");
  put_ts(j, sl->ts);
  PUTS(b, ",\"args\":{");
  render_args(b, sl->args, sl->nargs);
  PUTS(b, "}}");
  ev_close(j);
}

static void js_counter(tl_sink_t *s, const tl_track_t *t, uint64_t ts, double v) {
  js_t *j = (js_t *)s;
  pb_buf_t *b = &s->out;
  ev_open(j);
  PUTS(b, "{\"ph\":\"C\",\"name\":");
  put_jstr(b, t->name);
  PUTS(b, ",\"pid\":");
  put_i64(b, t->pid);
  PUTS(b, ",\"ts\":");
  put_ts(j, ts);
  PUTS(b, ",\"args\":{\"value\":");
  if (t->integer)
    put_i64(b, (int64_t)(v < 0 ? v - 0.5 : v + 0.5));
  else
    put_dbl(b, v);
  PUTS(b, "}}");
  ev_close(j);
}

static int js_finish(tl_sink_t *s) {
  js_t *j = (js_t *)s;
  if (j->whole) {
    PUTS(&s->out, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"ncclscope export\"");
    if (s->nmeta) PUTS(&s->out, ","), render_args(&s->out, s->meta, s->nmeta);
    PUTS(&s->out, "}}\n");
  }
  return tl_sink_close(s);
}

static void js_destroy(tl_sink_t *s) {
  js_t *j = (js_t *)s;
  for (uint32_t i = 0; i < j->ntr; i++)
    for (int d = 0; d < MAX_DEPTH; d++) {
      pb_free(&j->tr[i].st[d].args);
      free(j->tr[i].st[d].flows);
    }
  free(j->tr);
  free(j->named_pids);
  pb_free(&s->out);
  free(j);
}

tl_sink_t *tl_chrome_sink(int fd, uint64_t origin, int whole, int32_t job_pid) {
  js_t *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  tl_sink_t *s = &j->base;
  s->seq_begin = js_seq_begin;
  s->track = js_track;
  s->begin = js_begin;
  s->end = js_end;
  s->instant = js_instant;
  s->counter = js_counter;
  s->finish = js_finish;
  s->destroy = js_destroy;
  s->fd = fd;
  s->origin = origin;
  j->whole = whole;
  if (whole) { /* the first event, so that every later one (and every fragment's) has a comma */
    j->first = 1;
    PUTS(&s->out, "{\"traceEvents\":[");
    name_pid(j, job_pid, "job", -1);
  }
  return s;
}
