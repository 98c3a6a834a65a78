/* range_writer.c - the writer thread's half of user ranges (docs/ranges.md).
 *
 * It reads the raw range records of each thread in the order the thread wrote them, and:
 *   - pairs each pop with its push through a stack per thread: every record carries its level,
 *     so a push or pop that was dropped (pool full) is noticed, and the range it concerned is
 *     written as ended-unknown (END flag endlost) or not at all (begin_lost), never paired with
 *     the wrong one;
 *   - keeps the start/end ranges that are open, by id (they may end on another thread);
 *   - interns names by content (the application's strings are copied into the records);
 *   - writes BEGIN, END, MARK, LAUNCH and METRICS records in RANGES chunks, and RANGE_STATE.
 * Open ranges outlive a segment: a new segment (and every flight-recorder slot) restates them,
 * so a range is never cut in two. A slot's keyframe is made when the slot opens, which may be
 * while records older than that wait in the chunk being built: it restates the ranges open now
 * and those ended in records not written yet, so every END and LAUNCH in the slot has its BEGIN. Memory is bounded: MAX_DEPTH levels per thread, STACKS threads,
 * OPENS start/end ranges and NAMES names (what does not fit is counted: untracked, names_full).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "range/range.h"
#include "core/emap.h"

#define STACKS 4096        /* threads with push/pop ranges followed (3/4 of it) */
#define OPENS 16384        /* start/end ranges open at once (3/4 of it) */
#define NAMES 16384        /* distinct names and domains interned (3/4 of it) */
#define NAME_BYTES (1u << 20)
#define MAX_DEPTH 1024
#define RBUF_BYTES (2u << 20)
#define FLUSH_TRACE (1u << 20)
#define FLUSH_FLIGHT (32u << 10) /* flight mode: chunks must fit a ring slot comfortably */
#define STATE_NS 1000000000ull
#define NDOM 256
#define RECENT 4096 /* flight: ranges ended in records not written yet (a 32 KiB chunk holds fewer) */

typedef struct {
  uint64_t h; /* content hash | 1 */
  char *s;
  uint32_t len, id, seg; /* id: its STRINGS id in segment seg */
} name_t;

typedef struct { /* a name as one range holds it: the id in segment seg, and the interned copy */
  name_t *n;
  uint32_t id, seg;
} nref_t;

typedef struct {
  uint64_t id, ts, parent, mid, payload;
  nref_t name;
  uint32_t thread, level, category, ptype, flags, dom;
} open_t;

typedef struct {
  uint64_t key; /* thread index + 1 */
  uint32_t n, cap;
  open_t *e;
} tstack_t;

typedef struct {
  uint64_t id;
  open_t o;
} sopen_t;

static struct {
  map_t stacks, opens, names; /* kept across segments: ranges outlive them */
  size_t name_bytes;
  int opens_full;             /* an END may then belong to an untracked start */
  nref_t dom[NDOM];
  open_t *recent; /* flight: ended since the last RANGES chunk was written */
  uint32_t nrecent;
  uint32_t seg;
  ncs_buf_t buf;
  ncs_range_chunk_t c;
  int open, ok, dirty;
  uint64_t last_flush_ns, last_state_ns;
  uint64_t k[NCS_RK_MAX + 1];
  uint64_t base_drops, base_ignored, base_no_slot;
  ncs_hwm_status_t mx0; /* the metrics counters when the segment began */
} RW;

/* ------------------------------------------------------------------ names */

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
  return h | 1;
}

static uint32_t new_string(const char *s, size_t n) {
  char tmp[NCS_RANGE_NAME_MAX + 1];
  if (n > NCS_RANGE_NAME_MAX) n = NCS_RANGE_NAME_MAX;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  return ncs_writer_string(tmp);
}

/* This segment's STRINGS id of a name held by a range (0: unknown, when the name table was full
 * and the range began in an earlier segment). */
static uint32_t ref_id(nref_t *r) {
  if (r->seg == RW.seg && r->id) return r->id;
  name_t *n = r->n;
  if (!n) return 0;
  if (n->seg != RW.seg || !n->id) n->id = ncs_writer_string(n->s), n->seg = RW.seg;
  r->id = n->id, r->seg = RW.seg;
  return r->id;
}

static nref_t intern(const char *s, size_t len) {
  uint64_t h = hash(s, len);
  name_t *n = m_find(&RW.names, h);
  if (n && (n->len != len || memcmp(n->s, s, len))) n = NULL; /* a hash collision: not interned */
  else if (!n && RW.name_bytes + len < NAME_BYTES && (n = m_put(&RW.names, h))) {
    n->s = malloc(len + 1);
    if (!n->s) {
      m_del(&RW.names, n);
      n = NULL;
    } else {
      memcpy(n->s, s, len);
      n->s[len] = 0;
      n->len = (uint32_t)len;
      RW.name_bytes += len + 1;
    }
  }
  nref_t r = {n, 0, 0};
  if (n) {
    ref_id(&r);
    return r;
  }
  RW.k[NCS_RK_NAMES_FULL]++; /* written again at every use */
  r.id = new_string(s, len), r.seg = RW.seg;
  return r;
}

static uint32_t domain_id(uint32_t dom) {
  if (!dom || dom >= NDOM) return 0;
  if (!RW.dom[dom].n && !RW.dom[dom].id) {
    const char *s = ncs_range_domain(dom);
    if (!s) return 0;
    RW.dom[dom] = intern(s, strlen(s));
  }
  return ref_id(&RW.dom[dom]);
}

/* ------------------------------------------------------------------ output */

static size_t flush_limit(void) { return ncs_g.cfg.flight ? FLUSH_FLIGHT : FLUSH_TRACE; }

static void chunk_out(void) {
  if (!RW.open) return;
  ncs_range_enc_end(&RW.buf, &RW.c);
  if (RW.c.count && ncs_writer_chunk(NCS_CHUNK_RANGES, &RW.buf) != 0) RW.k[NCS_RK_WRITE_LOST] += RW.c.count;
  ncs_buf_reset(&RW.buf);
  RW.open = 0;
  RW.nrecent = 0; /* written: a later slot's keyframe need not restate them */
  RW.last_flush_ns = ncs_mono_ns();
}

static int ready(void);

static void emit(const ncs_range_rec_t *g) {
  if (!ready()) return;
  if (RW.open && RW.buf.len > flush_limit()) chunk_out();
  if (!RW.open) {
    ncs_range_enc_begin(&RW.buf, &RW.c, g->ts ? g->ts : ncs_mono_ns());
    RW.open = 1;
  }
  ncs_range_enc_rec(&RW.buf, &RW.c, g);
}

static void begin_rec(ncs_range_rec_t *g, open_t *o, uint32_t extra) {
  memset(g, 0, sizeof *g);
  g->kind = NCS_RR_BEGIN, g->flags = o->flags | extra, g->thread = o->thread, g->ts = o->ts;
  g->id = o->id, g->parent = o->parent, g->depth = o->level, g->mid = o->mid;
  g->domain_id = domain_id(o->dom), g->category = o->category, g->payload_type = o->ptype;
  g->payload = o->payload;
  g->name_id = ref_id(&o->name);
  if (!g->name_id) g->flags |= NCS_RF_NO_NAME;
}

static void end_rec(const open_t *o, uint32_t thread, uint64_t ts, uint32_t flags) {
  ncs_range_rec_t g = {.kind = NCS_RR_END, .flags = (o->flags & NCS_RF_STARTEND) | flags,
                       .thread = thread, .ts = ts, .id = o->id};
  emit(&g);
  if (!ncs_g.cfg.flight) return;
  if (!RW.recent) RW.recent = malloc(RECENT * sizeof *RW.recent);
  if (RW.recent && RW.nrecent < RECENT)
    RW.recent[RW.nrecent++] = *o;
  else
    RW.k[NCS_RK_UNTRACKED]++; /* a keyframe may miss its BEGIN */
}

/* ------------------------------------------------------------------ raw records */

/* The labels of a PUSH, START or MARK record (range/range.h describes the words). */
static void label(open_t *o, const uint64_t *w, uint64_t hdr) {
  uint32_t nw = (uint32_t)(hdr >> 16) & 0xFF;
  uint64_t w3 = w[3];
  o->dom = (uint32_t)(w3 & 0xFFFF), o->ptype = (uint32_t)(w3 >> 24) & 0xFF, o->category = (uint32_t)(w3 >> 32);
  o->payload = w[4], o->mid = w[6];
  o->flags = (uint32_t)(hdr >> 24) & (NCS_RF_API | NCS_RF_TRUNCATED | NCS_RF_NO_NAME | NCS_RF_STARTEND);
  unsigned kind = (unsigned)(w3 >> 16) & 0xFF;
  const char *s = NULL;
  size_t len = 0;
  if (kind == NCS_RM_INLINE && w[5] <= NCS_RANGE_NAME_MAX &&
      NCS_RANGE_FIXED_WORDS + (w[5] + 7) / 8 <= nw)
    s = (const char *)&w[NCS_RANGE_FIXED_WORDS], len = (size_t)w[5];
  else if (kind == NCS_RM_REGISTERED && (s = ncs_range_registered((uint32_t)w[5])))
    len = strlen(s);
  if (s)
    o->name = intern(s, len);
  else
    o->flags |= NCS_RF_NO_NAME;
}

static tstack_t *stack_of(uint32_t thread, int create) {
  tstack_t *st = create ? m_put(&RW.stacks, (uint64_t)thread + 1) : m_find(&RW.stacks, (uint64_t)thread + 1);
  return st;
}

static open_t *top(tstack_t *st) { return st && st->n ? &st->e[st->n - 1] : NULL; }

static open_t *stack_push(tstack_t *st) {
  if (st->n == st->cap) {
    uint32_t cap = st->cap ? st->cap * 2 : 16;
    if (cap > MAX_DEPTH) cap = MAX_DEPTH;
    open_t *e = st->n < cap ? realloc(st->e, cap * sizeof *e) : NULL;
    if (!e) return NULL;
    st->e = e, st->cap = cap;
  }
  return &st->e[st->n++];
}

/* The innermost range's pop was lost: it ended, no later than ts. */
static void end_lost(tstack_t *st, uint64_t ts) {
  open_t *o = top(st);
  end_rec(o, o->thread, ts, NCS_RF_END_LOST);
  RW.k[NCS_RK_END_LOST]++;
  st->n--;
}

static void on_push(const uint64_t *w, uint64_t hdr, uint32_t thread, uint64_t ts, uint32_t level) {
  tstack_t *st = stack_of(thread, 1);
  while (top(st) && top(st)->level >= level) end_lost(st, ts); /* their pops never came */
  open_t o;
  memset(&o, 0, sizeof o);
  label(&o, w, hdr);
  o.id = w[2], o.ts = ts, o.thread = thread, o.level = level;
  o.parent = top(st) ? top(st)->id : 0;
  ncs_range_rec_t g;
  begin_rec(&g, &o, 0);
  emit(&g);
  RW.k[NCS_RK_BEGUN]++;
  open_t *slot = st && level <= MAX_DEPTH ? stack_push(st) : NULL;
  if (slot)
    *slot = o;
  else
    RW.k[NCS_RK_UNTRACKED]++; /* it gets no END */
}

static void on_pop(uint32_t thread, uint64_t ts, uint32_t level, uint32_t dom) {
  if (!level) {
    RW.k[NCS_RK_UNMATCHED_POPS]++;
    return;
  }
  if (level > MAX_DEPTH) return; /* its push was counted untracked */
  tstack_t *st = stack_of(thread, 0);
  while (top(st) && top(st)->level > level) end_lost(st, ts);
  open_t *o = top(st);
  if (!o || o->level < level) { /* its push was lost, or found no stack */
    RW.k[st || RW.stacks.n < STACKS / 4 * 3 ? NCS_RK_BEGIN_LOST : NCS_RK_UNTRACKED]++;
    return;
  }
  if (o->dom != dom) RW.k[NCS_RK_CROSS_DOMAIN]++;
  end_rec(o, thread, ts, 0);
  RW.k[NCS_RK_ENDED]++;
  st->n--;
}

static void on_start(const uint64_t *w, uint64_t hdr, uint32_t thread, uint64_t ts) {
  open_t o;
  memset(&o, 0, sizeof o);
  label(&o, w, hdr);
  o.flags |= NCS_RF_STARTEND;
  o.id = w[2], o.ts = ts, o.thread = thread;
  open_t *p = top(stack_of(thread, 0));
  o.parent = p ? p->id : 0;
  ncs_range_rec_t g;
  begin_rec(&g, &o, 0);
  emit(&g);
  RW.k[NCS_RK_BEGUN]++;
  sopen_t *x = m_put(&RW.opens, o.id);
  if (x)
    x->o = o;
  else
    RW.opens_full = 1, RW.k[NCS_RK_UNTRACKED]++;
}

static void on_end(uint32_t thread, uint64_t ts, uint64_t id) {
  sopen_t *x = m_find(&RW.opens, id);
  if (x || RW.opens_full) { /* an untracked start may be it: written, the reader pairs by id */
    open_t o = {.id = id, .flags = NCS_RF_STARTEND};
    end_rec(x ? &x->o : &o, thread, ts, 0);
    RW.k[NCS_RK_ENDED]++;
    if (x) m_del(&RW.opens, x);
    return;
  }
  RW.k[NCS_RK_UNMATCHED_ENDS]++;
}

static void on_mark(const uint64_t *w, uint64_t hdr, uint32_t thread, uint64_t ts) {
  open_t o;
  memset(&o, 0, sizeof o);
  label(&o, w, hdr);
  open_t *p = top(stack_of(thread, 0));
  ncs_range_rec_t g = {.kind = NCS_RR_MARK, .flags = o.flags, .thread = thread, .ts = ts,
                       .parent = p ? p->id : 0, .domain_id = domain_id(o.dom), .category = o.category,
                       .payload_type = o.ptype, .payload = o.payload};
  g.name_id = ref_id(&o.name);
  if (!g.name_id) g.flags |= NCS_RF_NO_NAME;
  emit(&g);
  RW.k[NCS_RK_MARKS]++;
}

static void on_launch(uint32_t thread, uint64_t corr, uint32_t flags) {
  open_t *p = top(stack_of(thread, 0));
  if (!p) return; /* its range was not followed */
  ncs_range_rec_t g = {.kind = NCS_RR_LAUNCH, .flags = flags & NCS_RF_GRAPH, .id = p->id, .corr = corr};
  emit(&g);
  RW.k[NCS_RK_LAUNCHES]++;
}

/* The tables, at the first range record (most jobs have none): the maps for the load, the chunk
 * buffer for the segment. */
static int ready(void) {
  if (RW.ok) return 1;
  RW.ok = (RW.buf.p || !ncs_buf_init(&RW.buf, RBUF_BYTES)) && !m_init(&RW.stacks, sizeof(tstack_t), STACKS) &&
          !m_init(&RW.opens, sizeof(sopen_t), OPENS) && !m_init(&RW.names, sizeof(name_t), NAMES);
  return RW.ok;
}

void ncs_range_raw(const uint64_t *w, uint64_t hdr, uint32_t thread, uint64_t ts_ns) {
  if (!ready()) { /* no memory for the tables: the record is lost, and counted */
    RW.k[NCS_RK_UNTRACKED]++;
    return;
  }
  uint32_t nw = (uint32_t)(hdr >> 16) & 0xFF, aux = (uint32_t)(hdr >> 32);
  RW.dirty = 1;
  switch ((hdr >> 8) & 0xFF) {
  case NCS_RG_PUSH:
    if (nw >= NCS_RANGE_FIXED_WORDS) on_push(w, hdr, thread, ts_ns, aux);
    break;
  case NCS_RG_POP: on_pop(thread, ts_ns, aux, (uint32_t)w[2]); break;
  case NCS_RG_START:
    if (nw >= NCS_RANGE_FIXED_WORDS) on_start(w, hdr, thread, ts_ns);
    break;
  case NCS_RG_END: on_end(thread, ts_ns, w[2]); break;
  case NCS_RG_MARK:
    if (nw >= NCS_RANGE_FIXED_WORDS) on_mark(w, hdr, thread, ts_ns);
    break;
  case NCS_RG_KLAUNCH:
    if (nw >= 4) on_launch(thread, (uint32_t)w[2], (uint32_t)w[3]);
    break;
  default: break;
  }
}

/* From the metrics thread's decoded counter buffers (gpu/metrics.c, on this thread). */
void ncs_range_metric_values(uint64_t mid, int replay, const double *v, uint32_t n) {
  ncs_range_rec_t g = {.kind = NCS_RR_METRICS, .flags = replay ? NCS_RF_REPLAY : 0, .mid = mid};
  g.nvalues = n < NCS_RANGE_MAX_METRICS ? n : NCS_RANGE_MAX_METRICS;
  memcpy(g.values, v, g.nvalues * sizeof *v);
  emit(&g);
  RW.dirty = 1;
}

/* ------------------------------------------------------------------ open ranges */

typedef void (*each_fn)(open_t *o, void *arg);

/* Every open range, outer ones first within a thread (a reader meets a parent first). */
static uint64_t each_open(each_fn fn, void *arg) {
  uint64_t n = 0;
  for (uint32_t i = 0; RW.stacks.e && i < RW.stacks.cap; i++) {
    tstack_t *st = m_at(&RW.stacks, i);
    for (uint32_t j = 0; st->key && j < st->n; j++, n++)
      if (fn) fn(&st->e[j], arg);
  }
  for (uint32_t i = 0; RW.opens.e && i < RW.opens.cap; i++) {
    sopen_t *x = m_at(&RW.opens, i);
    if (!x->id) continue;
    n++;
    if (fn) fn(&x->o, arg);
  }
  return n;
}

static void restate(open_t *o, void *arg) {
  (void)arg;
  ncs_range_rec_t g;
  begin_rec(&g, o, NCS_RF_RESTATED);
  emit(&g);
}

typedef struct {
  ncs_buf_t *b;
  ncs_range_chunk_t c;
  size_t limit;
  int full;
} kf_t;

static void kf_one(open_t *o, void *arg) {
  kf_t *k = arg;
  if (k->full) return;
  size_t before = k->b->len;
  ncs_range_chunk_t saved = k->c;
  ncs_range_rec_t g;
  begin_rec(&g, o, NCS_RF_RESTATED);
  ncs_range_enc_rec(k->b, &k->c, &g);
  if (k->b->overflow || k->b->len > k->limit) { /* keep what fits */
    k->b->len = before, k->b->overflow = 0, k->c = saved;
    k->full = 1;
  }
}

size_t ncs_range_keyframe(ncs_buf_t *b, size_t limit) {
  if (!RW.ok || (!each_open(NULL, NULL) && !RW.nrecent)) return 0;
  ncs_buf_reset(b);
  kf_t k = {b, {0}, limit, 0};
  ncs_range_enc_begin(b, &k.c, ncs_mono_ns());
  each_open(kf_one, &k);
  for (uint32_t i = 0; i < RW.nrecent; i++) kf_one(&RW.recent[i], &k); /* ended in unwritten records */
  ncs_range_enc_end(b, &k.c);
  return k.c.count ? b->len : 0;
}

/* ------------------------------------------------------------------ state */

static void slot_counters(uint64_t *drops, uint64_t *ignored) {
  *drops = *ignored = 0;
  for (uint32_t i = 0; i < ncs_g.nslots; i++) {
    *drops += atomic_load_explicit(&ncs_g.slots[i].range_drops, memory_order_relaxed);
    *ignored += atomic_load_explicit(&ncs_g.slots[i].range_ignored, memory_order_relaxed);
  }
}

static void put(ncs_range_state_t *s, unsigned key, uint64_t v) {
  if (s->ncounters < NCS_RANGE_MAX_COUNTERS) s->keys[s->ncounters] = key, s->values[s->ncounters++] = v;
}

/* The state and its counters: this segment's (the metrics counters since it began). */
static void fill_state(ncs_range_state_t *s, ncs_range_status_t *rs, ncs_hwm_status_t *mx, int final) {
  ncs_range_status(rs);
  ncs_hwm_status(mx);
  uint64_t drops, ignored;
  slot_counters(&drops, &ignored);
  memset(s, 0, sizeof *s);
  s->flags = (final ? NCS_RSF_FINAL : 0) | (ncs_g.cfg.ranges ? 0 : NCS_RSF_RANGES_OFF);
  s->nvtx = rs->nvtx, s->nvtx_path = rs->nvtx_path;
  s->mx_state = mx->state, s->since_ns = mx->since_ns, s->reason = mx->reason, s->chip = mx->chip;
  s->replay = mx->replay, s->passes = mx->passes, s->level = mx->level, s->mx_thread = mx->thread;
  s->buffer_ranges = mx->buffer_ranges, s->nmetrics = mx->nmetrics;
  memcpy(s->metric, mx->metric, sizeof s->metric);
  memcpy(s->metric_type, mx->metric_type, sizeof s->metric_type);
  RW.k[NCS_RK_DROPPED] = drops - RW.base_drops;
  RW.k[NCS_RK_IGNORED] = ignored - RW.base_ignored;
  RW.k[NCS_RK_NO_SLOT] = rs->no_slot - RW.base_no_slot;
  RW.k[NCS_RK_NVTX_INITS] = rs->nvtx_inits; /* since the load: NVTX attaches once per copy */
  RW.k[NCS_RK_OPEN] = each_open(NULL, NULL);
  const ncs_hwm_status_t *b = &RW.mx0;
  RW.k[NCS_RK_FORWARDED] = mx->forwarded - b->forwarded;
  RW.k[NCS_RK_WITH_VALUES] = mx->with_values - b->with_values;
  RW.k[NCS_RK_CUPTI_DROPPED] = mx->cupti_dropped - b->cupti_dropped;
  RW.k[NCS_RK_NO_BUFFER] = mx->no_buffer - b->no_buffer;
  RW.k[NCS_RK_SESSION_LOST] = mx->session_lost - b->session_lost;
  RW.k[NCS_RK_BUFFERS] = mx->buffers - b->buffers;
  RW.k[NCS_RK_NOT_FORWARDED] = mx->not_forwarded - b->not_forwarded;
  RW.k[NCS_RK_OTHER_THREADS] = mx->other_threads - b->other_threads;
  for (unsigned key = 1; key <= NCS_RK_MAX; key++) put(s, key, RW.k[key]);
}

size_t ncs_range_keyframe_state(ncs_buf_t *b, size_t limit) {
  ncs_range_state_t s;
  ncs_range_status_t rs;
  ncs_hwm_status_t mx;
  fill_state(&s, &rs, &mx, 0);
  ncs_buf_reset(b);
  ncs_range_enc_state(b, &s);
  return b->overflow || b->len > limit ? 0 : b->len;
}

static void write_state(int final) {
  static uint8_t mem[16384]; /* writer thread only */
  ncs_buf_t b = {mem, 0, sizeof mem, 0};
  ncs_range_state_t s;
  ncs_range_status_t rs;
  ncs_hwm_status_t mx;
  chunk_out(); /* records before the state that counts them */
  fill_state(&s, &rs, &mx, final);
  ncs_range_enc_state(&b, &s);
  ncs_writer_chunk(NCS_CHUNK_RANGE_STATE, &b);
  RW.last_state_ns = ncs_mono_ns();
  RW.dirty = 0;
}

/* ------------------------------------------------------------------ the writer's calls */

void ncs_range_segment_begin(void) {
  RW.seg++;
  memset(RW.k, 0, sizeof RW.k);
  RW.open = 0;
  ncs_range_status_t rs;
  ncs_range_status(&rs);
  slot_counters(&RW.base_drops, &RW.base_ignored);
  RW.base_no_slot = rs.no_slot;
  ncs_hwm_status(&RW.mx0);
  RW.last_flush_ns = RW.last_state_ns = ncs_mono_ns();
  if (RW.stacks.e && each_open(NULL, NULL) && ready()) each_open(restate, NULL); /* from before it */
  write_state(0);
}

void ncs_range_cycle(int final) {
  ncs_hwm_collect();
  uint64_t now = ncs_mono_ns();
  if (final || now - RW.last_flush_ns >= (uint64_t)ncs_g.cfg.flush_ms * 1000000ull) chunk_out();
  if (!final && RW.dirty && now - RW.last_state_ns >= STATE_NS) write_state(0);
}

void ncs_range_segment_end(void) {
  ncs_range_cycle(1);
  write_state(1);
}

/* After the writer stopped: the chunk buffer goes; open ranges, stacks and names stay, as the
 * ranges go on in the next segment. */
void ncs_range_segment_free(void) {
  ncs_buf_free(&RW.buf);
  RW.ok = 0;
}

void ncs_range_writer_free(void) {
  ncs_range_segment_free();
  for (uint32_t i = 0; RW.stacks.e && i < RW.stacks.cap; i++) free(((tstack_t *)m_at(&RW.stacks, i))->e);
  for (uint32_t i = 0; RW.names.e && i < RW.names.cap; i++) free(((name_t *)m_at(&RW.names, i))->s);
  m_free(&RW.stacks), m_free(&RW.opens), m_free(&RW.names);
  free(RW.recent);
  RW.recent = NULL, RW.nrecent = 0;
  memset(RW.dom, 0, sizeof RW.dom);
  RW.name_bytes = 0, RW.opens_full = 0;
}
