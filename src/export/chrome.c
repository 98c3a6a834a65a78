/* chrome.c - the Chrome trace-event JSON sink, for viewers that do not read Perfetto protobuf.
 *
 * Layout: {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}. One JSON pid per rank
 * (the same synthetic pid as in the .pftrace). Slices are complete events ("X"), written when
 * they end (their arguments are rendered when they begin and kept until then). Timestamps are
 * µs relative to the origin with 3 decimals (ns precision). Flows are v1 flow events: "s" on the
 * slice the arrow leaves, "f" with "bp":"e" on the slice it reaches, placed 1-2 ns inside the
 * slices so that they bind to them. Counters are "C" events, states "i" instants.
 *
 * Rows (docs/timeline.md, "Thread rows"). JSON has no lanes: a thread row ("tid") must hold
 * slices that nest. The timeline's lanes are packed into rows per process and class (the
 * lane's pack name, "comm X / steps" for every channel of a kind, else its row's path; and
 * KernelPhase slices apart). A lane's event (its slice and what nests in it: a "tree") is held
 * back, its JSON rendered with a mark where the tid goes, until it ends; then it takes the row
 * of its class free at its start whose last tree ended last (the best fit), else one with a gap
 * for it among its last HIST trees (trees that come out of time order: threads write their
 * records in chunks), else a new row. A row is free at t when
 * no tree holds it and its last tree ended before t, or at t when neither tree has flows (a
 * flow placed near a slice's end then binds to that slice only). Trees end in about the order
 * of their ends, so a row's last end is mostly all it needs to know. A tree whose JSON grows
 * past the hold size (NCCLSCOPE_CHROME_HOLD, default HOLD_DEFAULT) takes its row at once (held
 * until it ends) and is written as it comes. Rows get their names and order ("thread_name",
 * "thread_sort_index": the class, its channels, "#k") when their part of the output (the job's
 * tracks, a file) is done, from what they hold.
 *
 * A slice that names a host (tl_slice_t.within: a KernelPhase's KernelCh) is held back by the
 * host until the host's tree ends; then it goes into the host's row if it lies in the host's
 * slice and overlaps no other slice held there (a host with nested slices of its own holds
 * none), else into a row of its own class like any tree. A host holds at most 4 x hold bytes.
 *
 * Memory: per lane, its open slices (rendered arguments, flows) and the held-back JSON of its
 * open tree (at most hold) and of the slices it holds (at most 4 x hold); per row about
 * 300 bytes; per process 16 (its next tid and sort index, kept to the end). Rows and classes of
 * a file's processes are freed once the file is done.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/sink.h"
#include "util/fmt.h"
#include "util/hmap.h"
#include "util/mem.h"

#define MAX_DEPTH 4
#define J_NONE 0xFFFFFFFFu
#define TID_MARK 0x01            /* in held-back JSON: where the row's tid goes (never in text) */
#define HOLD_DEFAULT (64u << 10) /* JSON bytes an open tree holds back before it takes its row */
#define HIST 8                   /* trees a row remembers to fit out-of-order ones between */
#define MAX_CH 1024              /* channels a row names (the timeline's channels: 0..1023) */

typedef struct {
  uint64_t ts;
  const char *name;
  uint8_t cat;
  pb_buf_t args; /* rendered "k":v,... */
  tl_flow_t *flows;
  uint32_t nflows, flow_cap;
} jslice_t;

typedef struct { /* a slice (with what nests in it) held back by its host */
  uint64_t s, e;
  size_t off, len; /* in the host's kids buffer */
  uint32_t cls;
  int32_t ch;
  uint8_t flows;
} jkid_t;

typedef struct { /* one lane of the timeline */
  int32_t pid, ch;
  uint8_t declared, depth, over, adopted, chan, tflows; /* tflows: its open tree has flows */
  const char *cname; /* class name (stable while the file is written) */
  uint32_t csort;
  uint32_t cls[2];   /* its classes: [1] for KernelPhase trees; J_NONE until needed */
  uint32_t tcls;     /* class of the open tree */
  uint32_t row;      /* row of the open tree; J_NONE while held back */
  uint32_t host;     /* held back: the host's lane */
  uint64_t host_serial, serial;
  uint32_t nested;   /* slices nested in the open tree */
  pb_buf_t own;      /* held back: the tree's JSON, tids marked */
  pb_buf_t kids;     /* the JSON of the trees it holds back */
  jkid_t *kid;
  uint32_t nkid;
  size_t kid_cap;
  jslice_t st[MAX_DEPTH];
} jtrack_t;

typedef struct {
  int32_t pid;
  char *name;
  uint8_t sub, chan;
  uint32_t sort;
  uint32_t *rows; /* its rows, in order of creation */
  uint32_t nrows;
  size_t rows_cap;
  uint32_t *ord; /* its rows that no open tree holds, by (last end, index) */
  uint32_t nord;
  size_t ord_cap;
} jclass_t;

typedef struct {
  uint32_t cls; /* its class */
  uint32_t tid;
  uint64_t last_end, floor;   /* its last end; every tree it forgot ended by floor */
  uint64_t hs[HIST], he[HIST]; /* its last HIST trees, by start */
  uint8_t hf[HIST];            /* which of them have flows */
  uint8_t nh, last_flows;      /* a tree with flows ended at last_end */
  uint8_t open, used, noch, in_ord;
  int32_t lo; /* lowest channel held, MAX_CH none */
  uint64_t chans[MAX_CH / 64];
} jrow_t;

typedef struct {
  tl_sink_t base;
  jtrack_t *tr;
  uint32_t ntr;
  int first; /* no event written yet */
  int whole; /* header and trailer are ours (else a fragment of events) */
  int32_t *named_pids;
  uint32_t nnamed;
  jclass_t *cls;
  uint32_t ncls;
  size_t cls_cap;
  jrow_t *rows;
  uint32_t nrows, named_upto;
  size_t rows_cap;
  hmap_t cls_map;  /* (pid, name, sub, chan) -> class */
  hmap_t pid_map;  /* pid -> next tid (low 32 bits), next sort index (high 32) */
  uint64_t serial;
  uint32_t open_trees;
  uint64_t hold; /* JSON bytes an open tree holds back before it takes its row */
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

static void put_cb(void *b, const char *p, size_t n) { put(b, p, n); }

/* a JSON string (ncs_json_escape): control bytes are escaped, so TID_MARK never appears in one */
static void put_jstr(pb_buf_t *b, const char *s) {
  PUTS(b, "\"");
  ncs_json_escape(s, put_cb, b);
  PUTS(b, "\"");
}

/* µs with 3 decimals, relative to the origin */
static void put_ts(pb_buf_t *b, uint64_t origin, uint64_t ts) {
  if (ts < origin) {
    PUTS(b, "-");
    ts = origin - ts;
  } else {
    ts -= origin;
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

/* the tid of an event: a number, or the mark of a held-back one (tid 0) */
static void put_tid(pb_buf_t *b, uint32_t tid) {
  if (tid) {
    put_u64(b, tid);
  } else {
    char m = TID_MARK;
    put(b, &m, 1);
  }
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

/* Events into b: the output (after ev_open) or a held-back buffer (",\n" first, tid 0). */

static void x_event(js_t *j, pb_buf_t *b, int32_t pid, uint32_t tid, const jslice_t *e,
                    uint64_t dur) {
  PUTS(b, "{\"ph\":\"X\",\"name\":");
  put_jstr(b, e->name);
  PUTS(b, ",\"cat\":\"");
  put(b, tl_cat_names[e->cat], strlen(tl_cat_names[e->cat]));
  PUTS(b, "\",\"pid\":");
  put_i64(b, pid);
  PUTS(b, ",\"tid\":");
  put_tid(b, tid);
  PUTS(b, ",\"ts\":");
  put_ts(b, j->base.origin, e->ts);
  PUTS(b, ",\"dur\":");
  put_dur(b, dur);
  PUTS(b, ",\"args\":{");
  if (!e->args.oom) put(b, (const char *)e->args.p, e->args.n);
  PUTS(b, "}}");
}

static void flow_event(js_t *j, pb_buf_t *b, int32_t pid, uint32_t tid, const tl_flow_t *f,
                       uint64_t ts) {
  PUTS(b, "{\"ph\":\"");
  put(b, f->out ? "s" : "f", 1);
  PUTS(b, "\",\"cat\":\"flow\",\"name\":\"flow\",\"id\":");
  put_hex(b, f->id);
  if (!f->out) PUTS(b, ",\"bp\":\"e\"");
  PUTS(b, ",\"pid\":");
  put_i64(b, pid);
  PUTS(b, ",\"tid\":");
  put_tid(b, tid);
  PUTS(b, ",\"ts\":");
  put_ts(b, j->base.origin, ts);
  PUTS(b, "}");
}

static void i_event(js_t *j, pb_buf_t *b, int32_t pid, uint32_t tid, const tl_slice_t *sl) {
  PUTS(b, "{\"ph\":\"i\",\"s\":\"t\",\"name\":");
  put_jstr(b, sl->name);
  PUTS(b, ",\"cat\":\"");
  put(b, tl_cat_names[sl->cat], strlen(tl_cat_names[sl->cat]));
  PUTS(b, "\",\"pid\":");
  put_i64(b, pid);
  PUTS(b, ",\"tid\":");
  put_tid(b, tid);
  PUTS(b, ",\"ts\":");
  put_ts(b, j->base.origin, sl->ts);
  PUTS(b, ",\"args\":{");
  render_args(b, sl->args, sl->nargs);
  PUTS(b, "}}");
}

/* held-back JSON into the output, with the row's tid where the marks are */
static void put_marked(js_t *j, const uint8_t *p, size_t n, uint32_t tid) {
  pb_buf_t *b = &j->base.out;
  char t[16];
  int tl = snprintf(t, sizeof t, "%" PRIu32, tid);
  size_t i = 0;
  while (i < n) {
    const uint8_t *m = memchr(p + i, TID_MARK, n - i);
    size_t k = m ? (size_t)(m - p) : n;
    put(b, (const char *)p + i, k - i);
    if (m) put(b, t, (size_t)tl);
    i = m ? k + 1 : n;
    tl_out_maybe_flush(&j->base);
  }
  tl_out_maybe_flush(&j->base);
}

static void set_oom(js_t *j) { j->base.out.oom = 1; }

/* ---------------------------------------------------------------- tracks */

static jtrack_t *jt(js_t *j, uint32_t idx) {
  if (idx >= j->ntr) {
    uint32_t n = j->ntr ? j->ntr : 256;
    while (n <= idx) n *= 2;
    jtrack_t *t = realloc(j->tr, n * sizeof *t);
    if (!t) {
      set_oom(j);
      return NULL;
    }
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
  if (!n) {
    set_oom(j);
    return;
  }
  j->named_pids = n;
  n[j->nnamed++] = pid;
  meta(j, "process_name", pid, 0, name, 0, 1);
  meta(j, "process_sort_index", pid, 0, NULL, order, 0);
}

/* ---------------------------------------------------------------- classes and rows */

static uint32_t class_of(js_t *j, const jtrack_t *x, int sub) {
  uint64_t name = hm_bytes(x->cname, strlen(x->cname), NCS_HM_FNV0), v;
  uint64_t key = hm_mix2(hm_mix2((uint64_t)(uint32_t)x->pid, name), (uint64_t)(sub * 2 + x->chan));
  for (;; key = hm_mix(key + 1)) { /* a collision of different classes probes on */
    if (!hm_get(&j->cls_map, key, &v)) break;
    const jclass_t *c = &j->cls[v];
    if (c->pid == x->pid && c->sub == sub && c->chan == x->chan && !strcmp(c->name, x->cname))
      return (uint32_t)v;
  }
  if (NCS_GROW(j->cls, j->cls_cap, j->ncls + 1) != 0) {
    set_oom(j);
    return J_NONE;
  }
  jclass_t *c = &j->cls[j->ncls];
  memset(c, 0, sizeof *c);
  c->name = strdup(x->cname);
  if (!c->name || hm_put(&j->cls_map, key, j->ncls) != 0) {
    free(c->name);
    set_oom(j);
    return J_NONE;
  }
  c->pid = x->pid, c->sub = (uint8_t)sub, c->chan = x->chan, c->sort = x->csort;
  return j->ncls++;
}

/* a tree ending at end and one starting at start may share a row: one after the other, or
 * touching when neither has flows (a flow placed at a slice's end binds to one slice only) */
static int after(uint64_t end, int end_flows, uint64_t start, int start_flows) {
  return end < start || (end == start && !end_flows && !start_flows);
}

/* free for a tree from s on (fl: it has flows): nothing holds the row and its last tree ended
 * before s */
static int row_free(const jrow_t *r, uint64_t s, int fl) {
  return !r->open && (!r->used || after(r->last_end, r->last_flows, s, fl));
}

/* free for a finished tree [s, e] that came out of order: it fits in a gap between the row's
 * last HIST trees, above every older one */
static int row_fits(const jrow_t *r, uint64_t s, uint64_t e, int fl) {
  if (r->open || !r->used || s <= r->floor) return 0;
  uint32_t i = 0;
  while (i < r->nh && r->hs[i] < s) i++;
  return (i == 0 || after(r->he[i - 1], r->hf[i - 1], s, fl)) &&
         (i == r->nh || after(e, fl, r->hs[i], r->hf[i]));
}

static void row_hold(jrow_t *r, int32_t ch) {
  if (ch >= 0 && ch < MAX_CH) {
    r->chans[ch / 64] |= 1ull << (ch % 64);
    if (ch < r->lo) r->lo = ch;
  } else {
    r->noch = 1;
  }
}

/* the place of row ri in its class's order by (last end, index) */
static uint32_t ord_find(const js_t *j, const jclass_t *c, uint32_t ri) {
  uint64_t e = j->rows[ri].last_end;
  uint32_t lo = 0, hi = c->nord;
  while (lo < hi) {
    uint32_t m = lo + (hi - lo) / 2;
    const jrow_t *r = &j->rows[c->ord[m]];
    if (r->last_end < e || (r->last_end == e && c->ord[m] < ri))
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

static void ord_remove(js_t *j, jclass_t *c, uint32_t ri) {
  if (!j->rows[ri].in_ord) return;
  uint32_t p = ord_find(j, c, ri);
  if (p < c->nord && c->ord[p] == ri) {
    memmove(c->ord + p, c->ord + p + 1, (c->nord - p - 1) * sizeof *c->ord);
    c->nord--;
  }
  j->rows[ri].in_ord = 0;
}

static void ord_insert(js_t *j, jclass_t *c, uint32_t ri) {
  if (j->rows[ri].in_ord) return;
  if (NCS_GROW(c->ord, c->ord_cap, c->nord + 1) != 0) {
    set_oom(j);
    return;
  }
  uint32_t p = ord_find(j, c, ri);
  memmove(c->ord + p + 1, c->ord + p, (c->nord - p) * sizeof *c->ord);
  c->ord[p] = ri;
  c->nord++;
  j->rows[ri].in_ord = 1;
}

/* A row of class ci for a tree [s, e] of channel ch, with flows or not (e UINT64_MAX: its end
 * is not known yet), taken out of the class's order until row_done: the free row whose last tree
 * ended last (the best fit: trees come in about the order of their ends, and a row that ended
 * early stays for a tree that began early), else the first row with a gap for it, else a new
 * one. J_NONE: out of memory. */
static uint32_t row_pick(js_t *j, uint32_t ci, int32_t ch, uint64_t s, uint64_t e, int fl) {
  jclass_t *c = &j->cls[ci];
  uint32_t ri = J_NONE, lo = 0, hi = c->nord;
  while (lo < hi) { /* the first row of the order whose last end is after s */
    uint32_t m = lo + (hi - lo) / 2;
    if (j->rows[c->ord[m]].last_end <= s)
      lo = m + 1;
    else
      hi = m;
  }
  while (lo > 0 && ri == J_NONE) { /* back over rows ending at s that a flow keeps apart */
    const jrow_t *r = &j->rows[c->ord[--lo]];
    if (row_free(r, s, fl)) ri = c->ord[lo];
  }
  for (uint32_t i = 0; ri == J_NONE && e != UINT64_MAX && i < c->nrows; i++)
    if (row_fits(&j->rows[c->rows[i]], s, e, fl)) ri = c->rows[i];
  if (ri == J_NONE) {
    int created;
    uint64_t *next = hm_ref(&j->pid_map, (uint64_t)(uint32_t)c->pid, 1, &created);
    if (!next || NCS_GROW(j->rows, j->rows_cap, j->nrows + 1) != 0 ||
        NCS_GROW(c->rows, c->rows_cap, c->nrows + 1) != 0) {
      set_oom(j);
      return J_NONE;
    }
    jrow_t *r = &j->rows[j->nrows];
    memset(r, 0, sizeof *r);
    r->cls = ci, r->lo = MAX_CH;
    r->tid = (uint32_t)*next;
    *next = (*next & ~0xFFFFFFFFull) | (uint32_t)(r->tid + 1);
    c->rows[c->nrows++] = j->nrows;
    ri = j->nrows++;
  }
  ord_remove(j, c, ri);
  row_hold(&j->rows[ri], ch);
  return ri;
}

/* the tree [s, e] on row ri is done: the row's last end, its last HIST trees (by start), its
 * place in the order */
static void row_done(js_t *j, uint32_t ri, uint64_t s, uint64_t e, int fl) {
  jrow_t *r = &j->rows[ri];
  jclass_t *c = &j->cls[r->cls];
  r->open = 0;
  if (!r->used || e > r->last_end)
    r->last_end = e, r->last_flows = (uint8_t)fl;
  else if (e == r->last_end)
    r->last_flows |= (uint8_t)fl;
  r->used = 1;
  uint32_t i = r->nh;
  while (i > 0 && r->hs[i - 1] > s) i--;
  if (r->nh == HIST) { /* the oldest leaves: nothing may start at or before its end any more */
    if (i == 0) {
      if (e > r->floor) r->floor = e;
      goto ordered;
    }
    if (r->he[0] > r->floor) r->floor = r->he[0];
    memmove(r->hs, r->hs + 1, (size_t)(i - 1) * sizeof *r->hs);
    memmove(r->he, r->he + 1, (size_t)(i - 1) * sizeof *r->he);
    memmove(r->hf, r->hf + 1, (size_t)(i - 1) * sizeof *r->hf);
    i--;
  } else {
    memmove(r->hs + i + 1, r->hs + i, (size_t)(r->nh - i) * sizeof *r->hs);
    memmove(r->he + i + 1, r->he + i, (size_t)(r->nh - i) * sizeof *r->he);
    memmove(r->hf + i + 1, r->hf + i, (size_t)(r->nh - i) * sizeof *r->hf);
    r->nh++;
  }
  r->hs[i] = s, r->he[i] = e, r->hf[i] = (uint8_t)fl;
ordered:
  ord_insert(j, c, ri);
}

/* a finished tree (held-back JSON) into a row of class ci */
static void place_tree(js_t *j, uint32_t ci, int32_t ch, uint64_t s, uint64_t e, int fl,
                       const uint8_t *p, size_t n) {
  uint32_t ri = ci == J_NONE ? J_NONE : row_pick(j, ci, ch, s, e, fl);
  if (ri == J_NONE) return;
  put_marked(j, p, n, j->rows[ri].tid);
  row_done(j, ri, s, e, fl);
}

/* ---------------------------------------------------------------- names and order */

static _Thread_local const js_t *sort_js; /* qsort has no context; each worker sorts its own */
static int cmp_row(const void *a, const void *b) {
  const js_t *j = sort_js;
  const jrow_t *p = &j->rows[*(const uint32_t *)a], *q = &j->rows[*(const uint32_t *)b];
  const jclass_t *pc = &j->cls[p->cls], *qc = &j->cls[q->cls];
  if (pc->pid != qc->pid) return pc->pid < qc->pid ? -1 : 1;
  if (pc->sort != qc->sort) return pc->sort < qc->sort ? -1 : 1;
  int k = strcmp(pc->name, qc->name);
  if (k) return k;
  if (pc->chan != qc->chan) return pc->chan < qc->chan ? -1 : 1;
  if (pc->sub != qc->sub) return pc->sub < qc->sub ? -1 : 1;
  if (p->lo != q->lo) return p->lo < q->lo ? -1 : 1;
  k = memcmp(p->chans, q->chans, sizeof p->chans);
  if (k) return k;
  if (p->noch != q->noch) return p->noch < q->noch ? -1 : 1;
  return p->tid < q->tid ? -1 : p->tid > q->tid;
}

static int same_name(const jrow_t *p, const jrow_t *q) {
  return p->cls == q->cls && p->noch == q->noch && !memcmp(p->chans, q->chans, sizeof p->chans);
}

/* "comm X / steps ch 0-3,7" (+ " phases" for KernelPhase rows) */
static void row_name(const js_t *j, const jrow_t *r, char *out, size_t len) {
  const jclass_t *c = &j->cls[r->cls];
  size_t n = (size_t)snprintf(out, len, "%s%s", c->name, c->sub ? " phases" : "");
  if (!c->chan || n >= len) return;
  n += (size_t)snprintf(out + n, len - n, " ch ");
  int first = 1;
  for (int ch = 0; ch < MAX_CH && n < len; ch++) {
    if (!(r->chans[ch / 64] >> (ch % 64) & 1)) continue;
    int e = ch;
    while (e + 1 < MAX_CH && (r->chans[(e + 1) / 64] >> ((e + 1) % 64) & 1)) e++;
    n += (size_t)(e == ch ? snprintf(out + n, len - n, "%s%d", first ? "" : ",", ch)
                          : snprintf(out + n, len - n, "%s%d-%d", first ? "" : ",", ch, e));
    first = 0;
    ch = e;
  }
  if (r->noch && n < len) snprintf(out + n, len - n, "%s?", first ? "" : ",");
}

/* name and order the rows made since the last flush: at the end of a part (the job tracks, a
 * file), whose rows are final then (rows are per process, and a process belongs to one file) */
static void flush_rows(js_t *j) {
  uint32_t n = j->nrows - j->named_upto;
  if (n) {
    uint32_t *ix = malloc(n * sizeof *ix);
    if (!ix) {
      set_oom(j);
      return;
    }
    for (uint32_t i = 0; i < n; i++) ix[i] = j->named_upto + i;
    sort_js = j;
    qsort(ix, n, sizeof *ix, cmp_row);
    char name[6144];
    for (uint32_t i = 0, k = 0; i < n; i++) {
      jrow_t *r = &j->rows[ix[i]];
      int32_t pid = j->cls[r->cls].pid;
      k = i && same_name(r, &j->rows[ix[i - 1]]) ? k + 1 : 1;
      int dup = k > 1 || (i + 1 < n && same_name(r, &j->rows[ix[i + 1]]));
      row_name(j, r, name, sizeof name);
      if (dup) {
        size_t l = strlen(name);
        snprintf(name + (l < sizeof name - 16 ? l : sizeof name - 16), 16, " #%u", k);
      }
      int created;
      uint64_t *next = hm_ref(&j->pid_map, (uint64_t)(uint32_t)pid, 1, &created);
      if (!next) {
        set_oom(j);
        break;
      }
      uint32_t order = (uint32_t)(*next >> 32);
      *next += 1ull << 32;
      meta(j, "thread_name", pid, r->tid, name, 0, 1);
      meta(j, "thread_sort_index", pid, r->tid, NULL, order, 0);
      j->base.rows++;
    }
    free(ix);
    j->named_upto = j->nrows;
  }
  if (j->open_trees) return; /* something still open (not between files): keep the state */
  for (uint32_t i = 0; i < j->ncls; i++)
    free(j->cls[i].name), free(j->cls[i].rows), free(j->cls[i].ord);
  j->ncls = j->nrows = j->named_upto = 0;
  /* pid_map stays: a later part can add rows to a process of an earlier one (the export filter's
   * track goes under the job after the files), and its tids and sort indexes go on from there */
  hm_free(&j->cls_map);
}

static void js_seq_begin(tl_sink_t *s, uint32_t seq) {
  (void)s;
  (void)seq;
}

static void js_part_done(tl_sink_t *s) { flush_rows((js_t *)s); }

/* Lanes become rows when their slices come; processes and the job get a process name. Group
 * and counter tracks have no JSON counterpart (counters are named by their events). */
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
  x->declared = 1;
  x->depth = x->over = x->adopted = 0;
  x->chan = t->pack != NULL;
  x->ch = t->pack ? t->ch : -1;
  x->cname = t->pack ? t->pack : t->path ? t->path : t->name ? t->name : "?";
  x->csort = t->pack_sort;
  x->cls[0] = x->cls[1] = x->row = J_NONE;
  x->nkid = 0;
  x->kids.n = x->own.n = 0;
}

/* ---------------------------------------------------------------- slices */

static void js_begin(tl_sink_t *s, const tl_slice_t *sl) {
  js_t *j = (js_t *)s;
  jtrack_t *x = jt(j, sl->track->idx);
  if (!x || !x->declared) return;
  if (x->depth >= MAX_DEPTH) {
    x->over++;
    return;
  }
  if (!x->depth) { /* a new tree: held back until it ends (or its host's ends) */
    x->serial = ++j->serial;
    x->nested = 0;
    int sub = sl->cat == TC_KPHASE;
    if (x->cls[sub] == J_NONE) x->cls[sub] = class_of(j, x, sub);
    x->tcls = x->cls[sub];
    if (x->tcls == J_NONE) { /* out of memory (the export fails): its END finds nothing */
      x->over++;
      return;
    }
    jtrack_t *h = sl->within ? jt(j, sl->within->idx) : NULL;
    x->adopted = h && h != x && h->declared && h->depth && !h->adopted && h->pid == x->pid &&
                 h->kids.n < 4 * j->hold;
    if (x->adopted) x->host = sl->within->idx, x->host_serial = h->serial;
    x->row = J_NONE;
    x->own.n = 0;
    x->tflows = 0;
    j->open_trees++;
  } else {
    x->nested++;
  }
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
      if (!f) {
        set_oom(j);
        return;
      }
      e->flows = f;
      e->flow_cap = sl->nflows;
    }
    memcpy(e->flows, sl->flows, sl->nflows * sizeof *e->flows);
    e->nflows = sl->nflows;
  }
}

/* An open tree whose held-back JSON grew past the hold size takes a row free at its start now (the
 * row stays taken until it ends) and is written from then on as it comes. */
static void pin_tree(js_t *j, jtrack_t *x) {
  x->adopted = 0;
  /* its start may touch the row's last end unless flows leave its start (only its slice's own
   * flows bind near it) */
  x->row = row_pick(j, x->tcls, x->ch, x->st[0].ts, UINT64_MAX, x->st[0].nflows > 0);
  if (x->row == J_NONE) return;
  j->rows[x->row].open = 1;
  if (x->own.oom) set_oom(j);
  put_marked(j, x->own.p, x->own.n, j->rows[x->row].tid);
  x->own.n = 0;
}

/* where the events of x's open tree go: the output with its row's tid, or held back (tid 0) */
static pb_buf_t *tree_out(js_t *j, jtrack_t *x, uint32_t *tid) {
  if (x->row != J_NONE) {
    *tid = j->rows[x->row].tid;
    ev_open(j);
    return &j->base.out;
  }
  *tid = 0;
  PUTS(&x->own, ",\n");
  return &x->own;
}

static void tree_wrote(js_t *j, jtrack_t *x) {
  if (x->row != J_NONE)
    ev_close(j);
  else if (x->own.n > j->hold)
    pin_tree(j, x);
}

/* the events of a slice that ends */
static void write_slice(js_t *j, jtrack_t *x, const jslice_t *e, uint64_t ts, const tl_flow_t *f,
                        uint32_t nf) {
  uint64_t dur = ts > e->ts ? ts - e->ts : 0;
  /* flow ends inside the slice: leaving ones 1 ns in, arriving ones 2 ns in (when it is long
   * enough), so a slice that starts with its hub still binds after it */
  uint64_t d1 = dur / 3 < 1 ? dur / 3 : 1, d2 = dur * 2 / 3 < 2 ? dur * 2 / 3 : 2;
  if (e->nflows || nf) x->tflows = 1;
  for (uint32_t i = 0; i < 1 + e->nflows + nf; i++) {
    uint32_t tid;
    pb_buf_t *b = tree_out(j, x, &tid);
    if (i == 0)
      x_event(j, b, x->pid, tid, e, dur);
    else if (i <= e->nflows)
      flow_event(j, b, x->pid, tid, &e->flows[i - 1], e->ts + (e->flows[i - 1].out ? d1 : d2));
    else
      flow_event(j, b, x->pid, tid, &f[i - 1 - e->nflows], ts - d1);
    tree_wrote(j, x);
  }
}

static int cmp_kid(const void *a, const void *b) {
  const jkid_t *p = a, *q = b;
  if (p->s != q->s) return p->s < q->s ? -1 : 1;
  return p->off < q->off ? -1 : p->off > q->off;
}

/* the host's tree ended at [hs, he] in row: the trees it held back go into that row when they
 * lie in its slice one after the other (and it has no nested slices of its own), else into a
 * row of their own class */
static void place_kids(js_t *j, jtrack_t *h, uint64_t hs, uint64_t he, uint32_t row) {
  if (h->nkid > 1) qsort(h->kid, h->nkid, sizeof *h->kid, cmp_kid);
  uint64_t prev = hs;
  for (uint32_t i = 0; i < h->nkid; i++) {
    const jkid_t *k = &h->kid[i];
    if (h->kids.oom) { /* its JSON is incomplete: the export fails */
      set_oom(j);
      break;
    }
    const uint8_t *p = h->kids.p + k->off;
    if (!h->nested && row != J_NONE && k->s >= prev && k->e <= he) {
      put_marked(j, p, k->len, j->rows[row].tid);
      prev = k->e;
    } else {
      place_tree(j, k->cls, k->ch, k->s, k->e, k->flows, p, k->len);
    }
  }
  h->nkid = 0;
  h->kids.n = 0;
}

/* a held-back tree ended at [ts0, te]: to its host while the host's tree is open, else a row */
static void kid_done(js_t *j, jtrack_t *x, uint64_t ts0, uint64_t te) {
  jtrack_t *h = x->host < j->ntr ? &j->tr[x->host] : NULL;
  if (x->own.oom) {
    set_oom(j);
  } else if (h && h->depth && h->serial == x->host_serial && h->kids.n + x->own.n <= 4 * j->hold &&
             NCS_GROW(h->kid, h->kid_cap, h->nkid + 1) == 0) {
    jkid_t *k = &h->kid[h->nkid++];
    k->s = ts0, k->e = te, k->off = h->kids.n, k->len = x->own.n, k->cls = x->tcls, k->ch = x->ch;
    k->flows = x->tflows;
    put(&h->kids, (const char *)x->own.p, x->own.n);
  } else {
    place_tree(j, x->tcls, x->ch, ts0, te, x->tflows, x->own.p, x->own.n);
  }
  x->own.n = 0;
  x->adopted = 0;
}

static void js_end(tl_sink_t *s, const tl_track_t *t, uint64_t ts, const tl_flow_t *f,
                   uint32_t nf) {
  js_t *j = (js_t *)s;
  jtrack_t *x = jt(j, t->idx);
  if (!x) return;
  if (x->over) {
    x->over--;
    return;
  }
  if (!x->depth) return;
  jslice_t *e = &x->st[--x->depth];
  write_slice(j, x, e, ts, f, nf);
  if (x->depth) return;
  /* the tree is done: [e->ts, ts] */
  j->open_trees--;
  if (x->adopted) {
    kid_done(j, x, e->ts, ts);
    return;
  }
  uint32_t row = x->row;
  if (row == J_NONE) { /* held back until now: a row free at its start */
    row = row_pick(j, x->tcls, x->ch, e->ts, ts, x->tflows);
    if (row != J_NONE) put_marked(j, x->own.p, x->own.n, j->rows[row].tid);
    if (x->own.oom) set_oom(j);
    x->own.n = 0;
  }
  if (row != J_NONE) row_done(j, row, e->ts, ts, x->tflows);
  place_kids(j, x, e->ts, ts, row);
  x->row = J_NONE;
}

static void js_instant(tl_sink_t *s, const tl_slice_t *sl) {
  js_t *j = (js_t *)s;
  jtrack_t *x = jt(j, sl->track->idx);
  if (!x || !x->declared) return;
  uint32_t tid;
  if (x->depth) { /* with its tree */
    pb_buf_t *b = tree_out(j, x, &tid);
    i_event(j, b, x->pid, tid, sl);
    tree_wrote(j, x);
    return;
  }
  /* outside any slice of its lane: a row free at its time */
  if (x->cls[0] == J_NONE) x->cls[0] = class_of(j, x, 0);
  uint32_t ri = x->cls[0] == J_NONE ? J_NONE : row_pick(j, x->cls[0], x->ch, sl->ts, sl->ts, 0);
  if (ri == J_NONE) return;
  ev_open(j);
  i_event(j, &s->out, x->pid, j->rows[ri].tid, sl);
  ev_close(j);
  row_done(j, ri, sl->ts, sl->ts, 0);
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
  put_ts(b, s->origin, ts);
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
  flush_rows(j);
  if (j->whole) {
    PUTS(&s->out, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"ncclscope "
                  "export\",\"origin_ns\":\"");
    put_u64(&s->out, s->origin);
    PUTS(&s->out, "\"");
    if (s->has_clock) { /* ts 0 as wall-clock time: to line the JSON up with another trace */
      PUTS(&s->out, ",\"origin_realtime_ns\":\"");
      put_u64(&s->out, s->origin + (uint64_t)s->realtime_off);
      PUTS(&s->out, "\"");
    }
    if (s->nmeta) PUTS(&s->out, ","), render_args(&s->out, s->meta, s->nmeta);
    PUTS(&s->out, "}}\n");
  }
  return tl_sink_close(s);
}

static void js_destroy(tl_sink_t *s) {
  js_t *j = (js_t *)s;
  for (uint32_t i = 0; i < j->ntr; i++) {
    jtrack_t *x = &j->tr[i];
    for (int d = 0; d < MAX_DEPTH; d++) {
      pb_free(&x->st[d].args);
      free(x->st[d].flows);
    }
    pb_free(&x->own), pb_free(&x->kids);
    free(x->kid);
  }
  for (uint32_t i = 0; i < j->ncls; i++)
    free(j->cls[i].name), free(j->cls[i].rows), free(j->cls[i].ord);
  free(j->cls), free(j->rows);
  hm_free(&j->cls_map), hm_free(&j->pid_map);
  free(j->tr);
  free(j->named_pids);
  pb_free(&s->out);
  free(j);
}

tl_sink_t *tl_chrome_sink(int fd, uint64_t origin, int whole, int32_t job_pid, uint64_t hold) {
  js_t *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  tl_sink_t *s = &j->base;
  s->seq_begin = js_seq_begin;
  s->track = js_track;
  s->begin = js_begin;
  s->end = js_end;
  s->instant = js_instant;
  s->counter = js_counter;
  s->part_done = js_part_done;
  s->finish = js_finish;
  s->destroy = js_destroy;
  s->fd = fd;
  s->origin = origin;
  j->whole = whole;
  j->hold = hold ? hold : HOLD_DEFAULT;
  if (whole) { /* the first event, so that every later one (and every fragment's) has a comma */
    j->first = 1;
    PUTS(&s->out, "{\"traceEvents\":[");
    name_pid(j, job_pid, "job", -1);
  }
  return s;
}
