/* pftrace_lint.c - ncs-pftrace-lint: decode a Perfetto protobuf trace without Perfetto and check
 * what trace processor enforces when it imports TrackEvent data (each rule below is a stat that
 * trace processor would count, or data it would drop or misplace):
 *
 *   - the file is a sequence of Trace.packet (field 1) records that decode as protobuf;
 *   - every packet has trusted_packet_sequence_id (else: track_event_missing_sequence_id);
 *   - interned ids are defined (on their sequence, in this or an earlier packet) before use, a
 *     sequence clears its incremental state before it interns, and packets that use interned
 *     ids say so (SEQ_NEEDS_INCREMENTAL_STATE);
 *   - track uuids are unique, parents exist (no loops, depth < 100), one process track per pid,
 *     every event's track was described before the event;
 *   - per track, after sorting by timestamp (file order breaks ties, as trace processor does):
 *     every END closes an open BEGIN, nothing stays open, depth < 512, and no END falls at the
 *     time of the BEGIN it closes (that is how "END before BEGIN at equal timestamps" breaks:
 *     the END of the previous slice closes the next one instead);
 *   - counter events only on counter tracks, always with a value; slices never on them;
 *   - every flow id appears on at least two events (it links something).
 *
 * usage: ncs-pftrace-lint [--summary|--slices] FILE   exit 0 clean, 1 problems (listed), 2 usage
 *        ncs-pftrace-lint --write-broken KIND FILE
 *            writes a small trace that breaks one rule (for the negative tests): noseq,
 *            unbalanced, unclosed, endorder, dupuuid, parent, undeclared, flow, iid, counter.
 * --summary prints "key value" lines: packets, sequences, processes, tracks by kind, rows (lanes
 * merged by sibling_merge_key), slices and instants per category, counter events, flows.
 * --slices prints every slice and instant as one JSON object per line, in the Chrome JSON's
 * conventions (tests/chrome_rows_check.py compares the two): {"ph":"X" or "i","pid":P (null
 * off processes),"track":uuid,"ts":ns,"dur":ns,"cat":..,"name":..,"args":{..},"flows":[..]} with
 * the flow ids on the slice's BEGIN and END, and correlation_id among the args.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hmap.h"
#include "export/pb.h"

#define MAX_CATS 64

typedef struct {
  uint64_t uuid, parent;
  int has_parent, is_process, is_counter, pid;
  const uint8_t *name, *merge_key;
  size_t name_len, merge_len;
  uint64_t nslices, nevents;
  int has_children;
} track_t;

typedef struct {
  uint64_t ts, order;
  uint32_t track; /* index into tracks */
  uint8_t type;
  uint32_t info;  /* --slices: its entry in L.infos, or UINT32_MAX */
} ev_t;

typedef struct { /* --slices: what a BEGIN, INSTANT or END carries */
  char *text;    /* BEGIN, INSTANT: "\"cat\":..,\"name\":..,\"args\":{..}" */
  char *flows;   /* "\"0x..\",..." or NULL */
} info_t;

typedef struct {
  char name[64];
  uint64_t slices, instants;
} cat_t;

static struct {
  const uint8_t *buf;
  size_t len;
  track_t *tracks;
  size_t ntracks, track_cap;
  hmap_t uuid_map;   /* uuid -> track index */
  hmap_t pid_map;    /* pid -> track index */
  ev_t *evs;
  size_t nevs, ev_cap;
  unsigned clock_snapshots; /* ClockSnapshot packets seen */
  hmap_t intern;     /* (seq, kind, iid) -> (offset << 24 | len) */
  hmap_t seq_state;  /* seq -> 1 cleared */
  hmap_t flows;      /* id -> count */
  cat_t cats[MAX_CATS];
  int ncats;
  uint64_t packets, counter_events, instants, slices, errors, flow_endpoints;
  hmap_t seqs;
  int want_slices;
  info_t *infos;
  size_t ninfos, info_cap;
} L;

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...) {
  if (L.errors++ < 25) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ncs-pftrace-lint: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
  }
}

static void *xgrow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return p;
  size_t n = *cap ? *cap * 2 : 1024;
  while (n < need) n *= 2;
  void *q = realloc(p, n * elem);
  if (!q) {
    fprintf(stderr, "ncs-pftrace-lint: out of memory\n");
    exit(2);
  }
  *cap = n;
  return q;
}

static uint64_t ikey(uint64_t seq, int kind, uint64_t iid) {
  return hm_mix(seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)kind << 56) ^ iid);
}

static int cat_index(const uint8_t *s, size_t n) {
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), (const char *)s);
  for (int i = 0; i < L.ncats; i++)
    if (!strcmp(L.cats[i].name, name)) return i;
  if (L.ncats == MAX_CATS) return MAX_CATS - 1;
  snprintf(L.cats[L.ncats].name, sizeof L.cats[L.ncats].name, "%s", name);
  return L.ncats++;
}

/* interned kinds as InternedData field numbers */
enum { K_CAT = 1, K_NAME = 2, K_ARG = 3, K_STR = 29 };

static int lookup(uint64_t seq, int kind, uint64_t iid, const uint8_t **s, size_t *n, uint64_t pkt) {
  uint64_t v;
  if (!hm_get(&L.intern, ikey(seq, kind, iid), &v)) {
    err("packet %" PRIu64 ": interned id %" PRIu64 " (InternedData field %d) used on sequence %" PRIu64
        " before it was defined",
        pkt, iid, kind, seq);
    return -1;
  }
  if (s) *s = L.buf + (v >> 24), *n = (size_t)(v & 0xFFFFFF);
  return 0;
}

static void parse_interned(uint64_t seq, const uint8_t *p, const uint8_t *end, uint64_t pkt) {
  pb_field_t f;
  int rc;
  while ((rc = pb_next(&p, end, &f)) > 0) {
    if (f.wt != PB_LEN) continue;
    if (f.field != K_CAT && f.field != K_NAME && f.field != K_ARG && f.field != K_STR) continue;
    const uint8_t *q = f.data, *qe = f.data + f.len;
    pb_field_t g;
    uint64_t iid = 0;
    const uint8_t *s = NULL;
    size_t n = 0;
    while (pb_next(&q, qe, &g) > 0) {
      if (g.field == 1 && g.wt == PB_VARINT) iid = g.v;
      if (g.field == 2 && g.wt == PB_LEN) s = g.data, n = g.len;
    }
    if (!iid || !s) {
      err("packet %" PRIu64 ": interned entry without iid or string", pkt);
      continue;
    }
    hm_put(&L.intern, ikey(seq, (int)f.field, iid), ((uint64_t)(s - L.buf) << 24) | (n & 0xFFFFFF));
  }
  if (rc < 0) err("packet %" PRIu64 ": malformed InternedData", pkt);
}

static void parse_descriptor(const uint8_t *p, const uint8_t *end, uint64_t pkt) {
  track_t t;
  memset(&t, 0, sizeof t);
  int has_uuid = 0;
  pb_field_t f;
  int rc;
  while ((rc = pb_next(&p, end, &f)) > 0) {
    switch (f.field) {
    case 1: t.uuid = f.v, has_uuid = 1; break;
    case 2: t.name = f.data, t.name_len = f.len; break;
    case 5: t.parent = f.v, t.has_parent = 1; break;
    case 8: t.is_counter = 1; break;
    case 16: t.merge_key = f.data, t.merge_len = f.len; break;
    case 3: {
      t.is_process = 1;
      const uint8_t *q = f.data, *qe = f.data + f.len;
      pb_field_t g;
      int has_pid = 0;
      while (pb_next(&q, qe, &g) > 0)
        if (g.field == 1 && g.wt == PB_VARINT) t.pid = (int)(int64_t)g.v, has_pid = 1;
        else if (g.field == 6 && g.wt == PB_LEN) t.name = g.data, t.name_len = g.len;
      if (!has_pid) err("packet %" PRIu64 ": process descriptor without pid", pkt);
      break;
    }
    case 4: err("packet %" PRIu64 ": thread descriptors are not expected", pkt); break;
    default: break;
    }
  }
  if (rc < 0) err("packet %" PRIu64 ": malformed TrackDescriptor", pkt);
  if (!has_uuid) {
    err("packet %" PRIu64 ": TrackDescriptor without uuid", pkt);
    return;
  }
  if (hm_get(&L.uuid_map, t.uuid, NULL)) {
    err("packet %" PRIu64 ": track uuid %" PRIu64 " described twice", pkt, t.uuid);
    return;
  }
  if (t.is_process) {
    uint64_t other;
    if (hm_get(&L.pid_map, (uint64_t)(uint32_t)t.pid, &other))
      err("packet %" PRIu64 ": two process tracks for pid %d", pkt, t.pid);
    hm_put(&L.pid_map, (uint64_t)(uint32_t)t.pid, L.ntracks);
  }
  L.tracks = xgrow(L.tracks, &L.track_cap, L.ntracks + 1, sizeof *L.tracks);
  hm_put(&L.uuid_map, t.uuid, L.ntracks);
  L.tracks[L.ntracks++] = t;
}


/* ---------------------------------------------------------------- --slices */

typedef struct {
  char *p;
  size_t n, cap;
} sbuf_t;

static void sb_put(sbuf_t *b, const char *s, size_t n) {
  b->p = xgrow(b->p, &b->cap, b->n + n + 1, 1);
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void sb_fmt(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(sbuf_t *b, const char *fmt, ...) {
  char t[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  sb_put(b, t, (size_t)(n < (int)sizeof t ? n : (int)sizeof t - 1));
}
/* a JSON string as chrome.c writes one */
static void sb_jstr(sbuf_t *b, const uint8_t *s, size_t n) {
  sb_put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"' || s[i] == '\\') {
      char t[2] = {'\\', (char)s[i]};
      sb_put(b, t, 2);
    } else if (s[i] < 0x20 || s[i] == 0x7F) {
      sb_fmt(b, "\\u%04x", s[i]);
    } else {
      sb_put(b, (const char *)s + i, 1);
    }
  }
  sb_put(b, "\"", 1);
}

/* one DebugAnnotation as "name":value, in chrome.c's conventions */
static void sb_arg(sbuf_t *b, uint64_t seq, const uint8_t *p, const uint8_t *end, uint64_t pkt) {
  pb_field_t f;
  const uint8_t *name = (const uint8_t *)"?";
  size_t nlen = 1;
  sbuf_t v = {0};
  while (pb_next(&p, end, &f) > 0) {
    switch (f.field) {
    case 1: lookup(seq, K_ARG, f.v, &name, &nlen, pkt); break;
    case 10: name = f.data, nlen = f.len; break;
    case 2: v.n = 0, sb_fmt(&v, "%s", f.v ? "true" : "false"); break;
    case 3:
      v.n = 0;
      if (f.v > (1ull << 53))
        sb_fmt(&v, "\"0x%" PRIx64 "\"", f.v);
      else
        sb_fmt(&v, "%" PRIu64, f.v);
      break;
    case 4: v.n = 0, sb_fmt(&v, "%" PRId64, (int64_t)f.v); break;
    case 5: {
      double d;
      memcpy(&d, &f.v, sizeof d);
      if (d != d || d > 1e300 || d < -1e300) d = 0;
      v.n = 0, sb_fmt(&v, "%.9g", d);
      break;
    }
    case 6: v.n = 0, sb_jstr(&v, f.data, f.len); break;
    case 7: v.n = 0, sb_fmt(&v, "\"0x%" PRIx64 "\"", f.v); break;
    case 17: {
      const uint8_t *s;
      size_t n;
      if (lookup(seq, K_STR, f.v, &s, &n, pkt) == 0) v.n = 0, sb_jstr(&v, s, n);
      break;
    }
    default: break;
    }
  }
  if (b->n && b->p[b->n - 1] != '{') sb_put(b, ",", 1);
  sb_jstr(b, name, nlen);
  sb_put(b, ":", 1);
  if (v.n)
    sb_put(b, v.p, v.n);
  else
    sb_put(b, "null", 4);
  free(v.p);
}

static uint32_t add_info(char *text, char *flows) {
  L.infos = xgrow(L.infos, &L.info_cap, L.ninfos + 1, sizeof *L.infos);
  L.infos[L.ninfos] = (info_t){text, flows};
  return (uint32_t)L.ninfos++;
}

static int track_pid(uint32_t t, int *pid) {
  uint64_t cur = t;
  for (int d = 0; d < 101; d++) {
    if (L.tracks[cur].is_process) {
      *pid = L.tracks[cur].pid;
      return 1;
    }
    if (!L.tracks[cur].has_parent || !hm_get(&L.uuid_map, L.tracks[cur].parent, &cur)) return 0;
  }
  return 0;
}

static void print_slice(const ev_t *b, uint64_t dur, const info_t *end) {
  const info_t *i = &L.infos[b->info];
  int pid;
  printf("{\"ph\":\"%s\",\"pid\":", b->type == 1 ? "X" : "i");
  if (track_pid(b->track, &pid))
    printf("%d", pid);
  else
    printf("null");
  printf(",\"track\":%" PRIu64 ",\"ts\":%" PRIu64 ",\"dur\":%" PRIu64 ",%s,\"flows\":[%s%s%s]}\n",
         L.tracks[b->track].uuid, b->ts, dur, i->text,
         i->flows ? i->flows : "", i->flows && end && end->flows ? "," : "",
         end && end->flows ? end->flows : "");
}

static void parse_event(uint64_t seq, int has_ts, uint64_t ts, uint32_t flags,
                        const uint8_t *p, const uint8_t *end, uint64_t pkt) {
  pb_field_t f;
  int rc, type = 0, has_track = 0, has_value = 0, cat = -1, uses_iid = 0;
  uint64_t track = 0, corr = 0;
  sbuf_t args = {0}, flows = {0};
  const uint8_t *name = NULL;
  size_t name_len = 0;
  if (L.want_slices) sb_put(&args, "{", 1);
  while ((rc = pb_next(&p, end, &f)) > 0) {
    switch (f.field) {
    case 9: type = (int)f.v; break;
    case 11: track = f.v, has_track = 1; break;
    case 30:
    case 44: has_value = 1; break;
    case 3: {
      const uint8_t *s;
      size_t n;
      uses_iid = 1;
      if (lookup(seq, K_CAT, f.v, &s, &n, pkt) == 0) cat = cat_index(s, n);
      break;
    }
    case 22: cat = cat_index(f.data, f.len); break;
    case 10:
      uses_iid = 1;
      lookup(seq, K_NAME, f.v, &name, &name_len, pkt);
      break;
    case 23: name = f.data, name_len = f.len; break;
    case 52: corr = f.v; break;
    case 47:
    case 48: {
      int created;
      uint64_t *c = hm_ref(&L.flows, f.v, 0, &created);
      if (c) (*c)++;
      L.flow_endpoints++;
      if (L.want_slices) sb_fmt(&flows, "%s\"0x%" PRIx64 "\"", flows.n ? "," : "", f.v);
      break;
    }
    case 4: {
      const uint8_t *q = f.data, *qe = f.data + f.len;
      pb_field_t g;
      while (pb_next(&q, qe, &g) > 0) {
        if (g.field == 1) uses_iid = 1, lookup(seq, K_ARG, g.v, NULL, NULL, pkt);
        if (g.field == 17) uses_iid = 1, lookup(seq, K_STR, g.v, NULL, NULL, pkt);
      }
      if (L.want_slices) sb_arg(&args, seq, f.data, f.data + f.len, pkt);
      break;
    }
    default: break;
    }
  }
  if (rc < 0) err("packet %" PRIu64 ": malformed TrackEvent", pkt);
  if (uses_iid && !(flags & 2))
    err("packet %" PRIu64 ": uses interned ids without SEQ_NEEDS_INCREMENTAL_STATE", pkt);
  if (!has_ts) err("packet %" PRIu64 ": TrackEvent without timestamp", pkt);
  if (!has_track) {
    err("packet %" PRIu64 ": TrackEvent without track_uuid", pkt);
    free(args.p), free(flows.p);
    return;
  }
  uint64_t ti;
  if (!hm_get(&L.uuid_map, track, &ti)) {
    err("packet %" PRIu64 ": event on track %" PRIu64 " that was not described before", pkt, track);
    free(args.p), free(flows.p);
    return;
  }
  track_t *t = &L.tracks[ti];
  t->nevents++;
  if (type == 4) {
    L.counter_events++;
    if (!t->is_counter) err("packet %" PRIu64 ": counter event on a non-counter track %" PRIu64, pkt, track);
    if (!has_value) err("packet %" PRIu64 ": counter event without a value", pkt);
    free(args.p), free(flows.p);
    return;
  }
  if (t->is_counter) err("packet %" PRIu64 ": slice event on counter track %" PRIu64, pkt, track);
  if (type < 1 || type > 3) {
    err("packet %" PRIu64 ": TrackEvent type %d", pkt, type);
    free(args.p), free(flows.p);
    return;
  }
  if (type == 1) {
    L.slices++, t->nslices++;
    if (cat >= 0) L.cats[cat].slices++;
  } else if (type == 3) {
    L.instants++;
    if (cat >= 0) L.cats[cat].instants++;
  }
  uint32_t info = UINT32_MAX;
  if (L.want_slices) {
    if (type != 2) {
      if (corr)
        sb_fmt(&args, "%s\"correlation_id\":\"0x%" PRIx64 "\"", args.n > 1 ? "," : "", corr);
      sb_put(&args, "}", 1);
      sbuf_t tx = {0};
      sb_put(&tx, "\"cat\":", 6);
      if (cat >= 0)
        sb_jstr(&tx, (const uint8_t *)L.cats[cat].name, strlen(L.cats[cat].name));
      else
        sb_put(&tx, "null", 4);
      sb_put(&tx, ",\"name\":", 8);
      sb_jstr(&tx, name ? name : (const uint8_t *)"", name ? name_len : 0);
      sb_put(&tx, ",\"args\":", 8);
      sb_put(&tx, args.p, args.n);
      info = add_info(tx.p, flows.p);
      flows.p = NULL;
    } else if (flows.n) {
      info = add_info(NULL, flows.p);
      flows.p = NULL;
    }
  }
  free(args.p), free(flows.p);
  L.evs = xgrow(L.evs, &L.ev_cap, L.nevs + 1, sizeof *L.evs);
  L.evs[L.nevs++] = (ev_t){ts, L.nevs, (uint32_t)ti, (uint8_t)type, info};
}

/* ClockSnapshot { repeated Clock clocks = 1 { clock_id = 1; timestamp = 2 }; primary_trace_clock = 2 } */
static void check_clock_snapshot(const uint8_t *p, const uint8_t *end, uint64_t pkt) {
  pb_field_t f, g;
  int rc, boottime = 0, realtime = 0;
  while ((rc = pb_next(&p, end, &f)) > 0) {
    if (f.field == 2 && f.wt == PB_VARINT && f.v != 6)
      err("packet %" PRIu64 ": the primary trace clock is %" PRIu64 ", not BOOTTIME (6)", pkt, f.v);
    if (f.field != 1 || f.wt != PB_LEN) continue;
    const uint8_t *q = f.data, *qe = f.data + f.len;
    uint64_t id = 0, ts = 0;
    while (pb_next(&q, qe, &g) > 0) {
      if (g.field == 1) id = g.v;
      if (g.field == 2) ts = g.v;
    }
    if (!ts) err("packet %" PRIu64 ": clock %" PRIu64 " without a timestamp", pkt, id);
    boottime |= id == 6, realtime |= id == 1;
  }
  if (rc < 0) err("packet %" PRIu64 ": malformed ClockSnapshot", pkt);
  if (!boottime || !realtime) err("packet %" PRIu64 ": a ClockSnapshot without BOOTTIME and REALTIME", pkt);
}

static void parse_packet(const uint8_t *p, const uint8_t *end, uint64_t pkt) {
  pb_field_t f;
  int rc, has_seq = 0, has_ts = 0;
  uint64_t seq = 0, ts = 0;
  uint32_t flags = 0;
  const uint8_t *te = NULL, *td = NULL, *in = NULL;
  size_t te_len = 0, td_len = 0, in_len = 0;
  while ((rc = pb_next(&p, end, &f)) > 0) {
    switch (f.field) {
    case 8: ts = f.v, has_ts = 1; break;
    case 10: seq = f.v, has_seq = 1; break;
    case 13: flags = (uint32_t)f.v; break;
    case 11: te = f.data, te_len = f.len; break;
    case 12: in = f.data, in_len = f.len; break;
    case 60: td = f.data, td_len = f.len; break;
    case 6: /* ClockSnapshot: once, before any event, with the trace clock (BOOTTIME) in it */
      if (L.nevs) err("packet %" PRIu64 ": a ClockSnapshot after the first event", pkt);
      if (L.clock_snapshots++) err("packet %" PRIu64 ": a second ClockSnapshot", pkt);
      check_clock_snapshot(f.data, f.data + f.len, pkt);
      break;
    default: err("packet %" PRIu64 ": unexpected TracePacket field %u", pkt, f.field); break;
    }
  }
  if (rc < 0) {
    err("packet %" PRIu64 ": malformed TracePacket", pkt);
    return;
  }
  if (!has_seq || seq == 0) err("packet %" PRIu64 ": no trusted_packet_sequence_id", pkt);
  hm_put(&L.seqs, seq, 1);
  if (flags & 1) { /* incremental state cleared: forget this sequence's interned data */
    hm_put(&L.seq_state, seq, 1);
  }
  if (in) {
    if (!hm_get(&L.seq_state, seq, NULL))
      err("packet %" PRIu64 ": interned data on sequence %" PRIu64 " before SEQ_INCREMENTAL_STATE_CLEARED",
          pkt, seq);
    parse_interned(seq, in, in + in_len, pkt);
  }
  if (td) parse_descriptor(td, td + td_len, pkt);
  if (te) parse_event(seq, has_ts, ts, flags, te, te + te_len, pkt);
}

static int cmp_ev(const void *a, const void *b) {
  const ev_t *x = a, *y = b;
  if (x->track != y->track) return x->track < y->track ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static void check_nesting(void) {
  if (L.nevs) qsort(L.evs, L.nevs, sizeof *L.evs, cmp_ev);
  uint64_t stack[512];
  size_t open[512];
  size_t i = 0;
  while (i < L.nevs) {
    uint32_t t = L.evs[i].track;
    size_t depth = 0, over = 0;
    for (; i < L.nevs && L.evs[i].track == t; i++) {
      const ev_t *e = &L.evs[i];
      if (e->type == 3 && L.want_slices && e->info != UINT32_MAX) print_slice(e, 0, NULL);
      if (e->type == 1) {
        if (depth == 512) {
          over++;
          continue;
        }
        open[depth] = i;
        stack[depth++] = e->ts;
      } else if (e->type == 2) {
        if (over) {
          over--;
          continue;
        }
        if (!depth) {
          err("track %" PRIu64 ": END at %" PRIu64 " closes nothing", L.tracks[t].uuid, e->ts);
          continue;
        }
        --depth;
        if (L.want_slices && L.evs[open[depth]].info != UINT32_MAX)
          print_slice(&L.evs[open[depth]], e->ts - stack[depth],
                      e->info != UINT32_MAX ? &L.infos[e->info] : NULL);
        if (stack[depth] == e->ts)
          err("track %" PRIu64 ": an END at %" PRIu64 " closes the slice that BEGAN at the same time "
              "(an END written after a BEGIN at equal timestamps, or a zero-length slice)",
              L.tracks[t].uuid, e->ts);
      }
    }
    if (over) err("track %" PRIu64 ": slices nested deeper than 512", L.tracks[t].uuid);
    if (depth)
      err("track %" PRIu64 ": %zu slice(s) never end (the first began at %" PRIu64 ")",
          L.tracks[t].uuid, depth, stack[0]);
  }
}

static void check_tracks(void) {
  for (size_t i = 0; i < L.ntracks; i++) {
    track_t *t = &L.tracks[i];
    if (!t->has_parent) continue;
    uint64_t pi;
    if (!hm_get(&L.uuid_map, t->parent, &pi)) {
      err("track %" PRIu64 ": parent %" PRIu64 " does not exist", t->uuid, t->parent);
      continue;
    }
    L.tracks[pi].has_children = 1;
    uint64_t cur = i;
    int depth = 0;
    while (L.tracks[cur].has_parent && depth < 101) {
      if (!hm_get(&L.uuid_map, L.tracks[cur].parent, &cur)) break;
      depth++;
    }
    if (depth > 100) err("track %" PRIu64 ": more than 100 ancestors (a loop?)", t->uuid);
  }
  for (size_t i = 0; i < L.flows.cap; i++)
    if (L.flows.used[i] && L.flows.vals[i] < 2)
      err("flow id %" PRIu64 " appears on one event only", L.flows.keys[i]);
}

static void summary(void) {
  uint64_t proc = 0, ctr = 0, slice = 0, group = 0, max_lanes = 0;
  hmap_t rows = {0};
  for (size_t i = 0; i < L.ntracks; i++) {
    track_t *t = &L.tracks[i];
    if (t->is_process) proc++;
    else if (t->is_counter) ctr++;
    else if (t->nevents) {
      slice++;
      uint64_t k = t->merge_key ? hm_mix(t->parent ^ hm_mix(t->merge_len)) : hm_mix(t->uuid + 77);
      for (size_t c = 0; t->merge_key && c < t->merge_len; c++) k = (k ^ t->merge_key[c]) * 0x100000001b3ull;
      int created;
      uint64_t *n = hm_ref(&rows, k, 0, &created);
      if (n && ++*n > max_lanes) max_lanes = *n;
    } else if (t->uuid != 0) group++;
  }
  printf("packets %" PRIu64 "\nsequences %zu\nprocesses %" PRIu64 "\ntracks %zu\n", L.packets,
         L.seqs.n, proc, L.ntracks);
  printf("tracks.process %" PRIu64 "\ntracks.counter %" PRIu64 "\ntracks.slice %" PRIu64
         "\ntracks.group %" PRIu64 "\nrows %zu\nmax_lanes %" PRIu64 "\n",
         proc, ctr, slice, group, rows.n, max_lanes);
  printf("slices %" PRIu64 "\n", L.slices);
  for (int i = 0; i < L.ncats; i++) printf("slices.%s %" PRIu64 "\n", L.cats[i].name, L.cats[i].slices);
  printf("instants %" PRIu64 "\n", L.instants);
  for (int i = 0; i < L.ncats; i++)
    if (L.cats[i].instants) printf("instants.%s %" PRIu64 "\n", L.cats[i].name, L.cats[i].instants);
  printf("counter_events %" PRIu64 "\nflows %zu\nflow_endpoints %" PRIu64 "\nerrors %" PRIu64 "\n",
         L.counter_events, L.flows.n, L.flow_endpoints, L.errors);
  hm_free(&rows);
}

/* ---------------------------------------------------------------- broken files */

static pb_buf_t W;
static void w_desc(uint64_t uuid, int has_parent, uint64_t parent, const char *name, int pid) {
  size_t m = pb_open(&W, 1);
  pb_u64(&W, 10, 1);
  size_t d = pb_open(&W, 60);
  pb_u64(&W, 1, uuid);
  if (pid) {
    size_t pd = pb_open(&W, 3);
    pb_u64(&W, 1, (uint64_t)pid);
    pb_close(&W, pd);
  } else {
    if (has_parent) pb_u64(&W, 5, parent);
    pb_str(&W, 2, name);
  }
  pb_close(&W, d);
  pb_close(&W, m);
}
static void w_ev(int seq, uint64_t ts, int type, uint64_t track, uint64_t flow, int name_iid) {
  size_t m = pb_open(&W, 1);
  pb_u64(&W, 8, ts);
  if (seq) pb_u64(&W, 10, (uint64_t)seq);
  if (name_iid) pb_u64(&W, 13, 2);
  size_t e = pb_open(&W, 11);
  pb_u64(&W, 9, (uint64_t)type);
  pb_u64(&W, 11, track);
  if (type == 1 || type == 3) {
    if (name_iid)
      pb_u64(&W, 10, (uint64_t)name_iid);
    else
      pb_str(&W, 23, "x");
  }
  if (type == 4) pb_u64(&W, 30, 5);
  if (flow) pb_fixed64(&W, 47, flow);
  pb_close(&W, e);
  pb_close(&W, m);
}

static int write_broken(const char *kind, const char *path) {
  w_desc(10, 0, 0, NULL, 42);
  w_desc(11, 1, 10, "lane", 0);
  if (!strcmp(kind, "noseq")) {
    w_ev(0, 100, 1, 11, 0, 0), w_ev(1, 200, 2, 11, 0, 0);
  } else if (!strcmp(kind, "unbalanced")) {
    w_ev(1, 100, 1, 11, 0, 0), w_ev(1, 200, 2, 11, 0, 0), w_ev(1, 300, 2, 11, 0, 0);
  } else if (!strcmp(kind, "unclosed")) {
    w_ev(1, 100, 1, 11, 0, 0), w_ev(1, 150, 1, 11, 0, 0), w_ev(1, 200, 2, 11, 0, 0);
  } else if (!strcmp(kind, "endorder")) { /* A [100,200], then B begins at 200 before A ends */
    w_ev(1, 100, 1, 11, 0, 0), w_ev(1, 200, 1, 11, 0, 0), w_ev(1, 200, 2, 11, 0, 0),
        w_ev(1, 300, 2, 11, 0, 0);
  } else if (!strcmp(kind, "dupuuid")) {
    w_desc(11, 1, 10, "again", 0);
  } else if (!strcmp(kind, "parent")) {
    w_desc(12, 1, 999, "orphan", 0);
  } else if (!strcmp(kind, "undeclared")) {
    w_ev(1, 100, 1, 77, 0, 0), w_ev(1, 200, 2, 77, 0, 0);
  } else if (!strcmp(kind, "flow")) {
    w_ev(1, 100, 1, 11, 0xABC, 0), w_ev(1, 200, 2, 11, 0, 0);
  } else if (!strcmp(kind, "iid")) {
    w_ev(1, 100, 1, 11, 0, 5), w_ev(1, 200, 2, 11, 0, 0);
  } else if (!strcmp(kind, "counter")) {
    w_ev(1, 100, 4, 11, 0, 0);
  } else {
    fprintf(stderr, "ncs-pftrace-lint: unknown broken kind '%s'\n", kind);
    return 2;
  }
  FILE *o = fopen(path, "wb");
  if (!o || fwrite(W.p, 1, W.n, o) != W.n || fclose(o) != 0) {
    fprintf(stderr, "ncs-pftrace-lint: cannot write %s: %s\n", path, strerror(errno));
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--write-broken")) return write_broken(argv[2], argv[3]);
  int want_summary = 0;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--summary")) want_summary = 1;
    else if (!strcmp(argv[i], "--slices")) L.want_slices = 1;
    else if (!path && argv[i][0] != '-') path = argv[i];
    else path = NULL, i = argc;
  }
  if (!path) {
    fprintf(stderr, "usage: ncs-pftrace-lint [--summary|--slices] FILE\n"
                    "       ncs-pftrace-lint --write-broken KIND FILE\n");
    return 2;
  }
  FILE *in = fopen(path, "rb");
  if (!in) {
    fprintf(stderr, "ncs-pftrace-lint: cannot open %s: %s\n", path, strerror(errno));
    return 2;
  }
  size_t cap = 1 << 20, n = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) return 2;
    n += fread(buf + n, 1, cap - n, in);
    if (n < cap) break;
    cap *= 2;
    buf = realloc(buf, cap);
  }
  fclose(in);
  L.buf = buf, L.len = n;
  const uint8_t *p = buf, *end = buf + n;
  pb_field_t f;
  int rc;
  while ((rc = pb_next(&p, end, &f)) > 0) {
    L.packets++;
    if (f.field != 1 || f.wt != PB_LEN) {
      err("offset %zu: top-level field %u (wire type %u) is not a Trace.packet",
          (size_t)(p - buf), f.field, f.wt);
      continue;
    }
    parse_packet(f.data, f.data + f.len, L.packets);
  }
  if (rc < 0) err("offset %zu: the file does not decode as protobuf", (size_t)(p - buf));
  check_tracks();
  check_nesting();
  if (want_summary) summary();
  if (L.errors > 25) fprintf(stderr, "ncs-pftrace-lint: ... %" PRIu64 " problems in all\n", L.errors);
  if (L.errors) {
    fprintf(stderr, "ncs-pftrace-lint: %s: %" PRIu64 " problem(s)\n", path, L.errors);
    return 1;
  }
  if (!want_summary && !L.want_slices)
    printf("ncs-pftrace-lint: %s: ok (%" PRIu64 " packets, %zu tracks, %" PRIu64 " slices, %zu flows)\n",
           path, L.packets, L.ntracks, L.slices, L.flows.n);
  return 0;
}
