/* gpu_writer.c - the writer thread's half of GPU truth (docs/gpu-truth.md).
 *
 * Every writer cycle: take CUPTI's completed activity buffers (before the thread blocks are
 * drained, so that the launch record of any kernel in them has been published and is read in the
 * same cycle), then, after the drain, decode the buffers and join each kernel:
 *   - eagerly launched NCCL kernels by correlation id: the LAUNCH record written by the kernel
 *     launch callback inside NCCL's KernelLaunch event names the event;
 *   - replays of a captured NCCL kernel by graph node: the captured node (GNODE, made inside the
 *     KernelLaunch) -> its copy in the instantiated graph (GCLONE) -> the replayed kernel's
 *     graphNodeId; the replay index counts the launches of that exec graph (GLAUNCH).
 * The trace says which KernelLaunch each kernel belongs to (or none); what that launch ran is
 * in the NCCL events (docs/gpu-truth.md, "The join"). Launches whose kernels have not come stay
 * pending: at the end of a segment, and at the start of every flight-recorder slot, they are
 * written out as PENDING records: a hang's evidence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "core/emap.h"
#include "trace/gpu.h"

#define PEND_CAP 8192   /* pending launches (at most 3/4 used) */
#define CNODE_CAP 16384 /* captured NCCL nodes */
#define ENODE_CAP 16384 /* their instantiated copies */
#define GEXEC_CAP 2048  /* exec graphs */
#define NAME_CAP 8192   /* kernel names */
#define SUM_CAP 256     /* streams summarized (NCCLSCOPE_CUPTI_KERNELS=nccl) */
#define GL_KEEP 4096    /* graph launches remembered (correlation id -> replay index) */
#define STATE_NS 1000000000ull
#define GBUF_BYTES (2u << 20)
#define FLUSH_TRACE (1u << 20)
#define FLUSH_FLIGHT (32u << 10) /* flight mode: chunks must fit a ring slot comfortably */
#define MAX_TAKE 4096

/* ------------------------------------------------------------------ state */

typedef struct { /* a launch whose kernels have not come */
  uint64_t corr;
  uint64_t launch, ts, group, stream, graph; /* graph: exec id of a graph launch, 0 eager */
  uint32_t thread, comm, flags, left;        /* left: NCCL kernels still to come (graph) */
} pend_t;

typedef struct {
  uint64_t node;
  uint64_t launch;
} node_t;

typedef struct {
  uint64_t exec;
  uint64_t orig;          /* the graph it was instantiated from (GEXEC), 0 unknown */
  uint32_t nccl;          /* NCCL nodes in it (GCLONE) */
  uint32_t launches;      /* GLAUNCH seen */
} gexec_t;

typedef struct { /* a recent graph launch */
  uint64_t corr;
  uint64_t exec;
  uint32_t replay;
} glaunch_t;

typedef struct {
  uint64_t ptr;
  uint32_t id;
  char head[20]; /* the first bytes, to notice a name pointer reused for another name */
} name_t;

typedef struct {
  uint64_t key; /* (device << 32 | stream) + 1 */
  uint64_t count, busy, first, last;
} sum_t;

static struct {
  map_t pend, cnode, enode, gexec, names, sums, gl;
  uint64_t gl_fifo[GL_KEEP]; /* the GL_KEEP latest graph launches, oldest evicted first */
  uint32_t gl_pos;
  ncs_buf_t buf;
  ncs_gpu_chunk_t c;
  int open, ok; /* ok: the tables exist */
  int taken[MAX_TAKE], ntaken;
  uint64_t last_state_ns, last_flush_ns, last_cupti_flush_ns, last_cupti; /* last_cupti: a CUPTI time */
  uint64_t clock_mono, clock_cupti, clock_width;
  ncs_gpu_cb_counts_t cb0; /* the callbacks' counters when the segment began */
  uint64_t k[NCS_GK_MAX + 1]; /* this segment's counters, by NCS_GK_* */
} X;

static void count(unsigned key, uint64_t n) { X.k[key] += n; }

/* ------------------------------------------------------------------ output */

static size_t flush_limit(void) { return ncs_g.cfg.flight ? FLUSH_FLIGHT : FLUSH_TRACE; }

static void chunk_out(void) {
  if (!X.open) return;
  ncs_gpu_enc_end(&X.buf, &X.c);
  if (X.c.count && ncs_writer_chunk(NCS_CHUNK_GPU, &X.buf) != 0) count(NCS_GK_WRITE_LOST, X.c.count);
  ncs_buf_reset(&X.buf);
  X.open = 0;
  X.last_flush_ns = ncs_mono_ns();
}

static void emit(const ncs_gpu_rec_t *g) {
  if (!X.buf.p) return;
  if (X.open && X.buf.len > flush_limit()) chunk_out();
  if (!X.open) {
    int host = g->kind == NCS_GR_LAUNCH || g->kind == NCS_GR_GLAUNCH || g->kind == NCS_GR_PENDING;
    int timed = g->kind == NCS_GR_KERNEL || g->kind == NCS_GR_SUMMARY;
    ncs_gpu_enc_begin(&X.buf, &X.c, host ? g->ts : ncs_mono_ns(), timed ? g->start : X.last_cupti);
    X.open = 1;
  }
  ncs_gpu_enc_rec(&X.buf, &X.c, g);
}

static void put_counter(ncs_gpu_state_t *s, unsigned key, uint64_t v) {
  if (s->ncounters < NCS_GPU_MAX_COUNTERS) s->keys[s->ncounters] = key, s->values[s->ncounters++] = v;
}

static void write_state(int final) {
  ncs_gpu_status_t st;
  ncs_gpu_status(&st);
  ncs_gpu_cb_counts_t cb;
  ncs_gpu_cb_counts(&cb);
  X.k[NCS_GK_NO_BUFFER] = cb.no_buffer - X.cb0.no_buffer;
  X.k[NCS_GK_CUPTI_DROPPED] = cb.cupti_dropped - X.cb0.cupti_dropped;
  X.k[NCS_GK_HOST_DROPS] = cb.host_drops - X.cb0.host_drops;
  X.k[NCS_GK_LAUNCHES] = cb.launches - X.cb0.launches;
  X.k[NCS_GK_NODE_SET_FULL] = cb.node_set_full - X.cb0.node_set_full;
  X.k[NCS_GK_PENDING] = X.pend.n;
  ncs_gpu_state_t s = {.state = st.state, .since_ns = st.since_ns, .reason = st.reason,
                       .library = st.library, .api_version = st.version, .holder = st.holder};
  s.flags = (final ? NCS_GSF_FINAL : 0) | (st.summary ? NCS_GSF_SUMMARY : 0);
  if (ncs_gpu_clock(&X.clock_mono, &X.clock_cupti, &X.clock_width) == 0) X.last_cupti = X.clock_cupti;
  s.clock_mono_ns = X.clock_mono, s.clock_cupti_ns = X.clock_cupti, s.clock_width_ns = X.clock_width;
  if (st.state != NCS_GPU_OFF)
    for (unsigned key = NCS_GK_RECORDS; key <= NCS_GK_MAX; key++) put_counter(&s, key, X.k[key]);
  chunk_out(); /* records before the state that counts them */
  ncs_buf_t b;
  if (ncs_buf_init(&b, 4096) != 0) return;
  ncs_gpu_enc_state(&b, &s);
  ncs_writer_chunk(NCS_CHUNK_GPU_STATE, &b);
  ncs_buf_free(&b);
  X.last_state_ns = ncs_mono_ns();
}

/* ------------------------------------------------------------------ names */

static uint64_t name_id(const char *p) {
  if (!p) return 0;
  name_t *n = m_find(&X.names, (uint64_t)(uintptr_t)p);
  if (n && !strncmp(n->head, p, sizeof n->head)) return n->id;
  if (!n) n = m_put(&X.names, (uint64_t)(uintptr_t)p);
  if (!n) {
    count(NCS_GK_NAMES_FULL, 1);
    return 0;
  }
  n->id = ncs_writer_string(p);
  memset(n->head, 0, sizeof n->head);
  memcpy(n->head, p, strnlen(p, sizeof n->head));
  if (!n->id) count(NCS_GK_NAMES_FULL, 1);
  return n->id;
}

/* ------------------------------------------------------------------ raw records (NCCL's threads) */

/* A context handle of this load: its comm index + 1, else 0 (core/ncs.h, ncs_ch_make). */
static uint32_t comm_of(uint64_t raw) {
  if ((raw >> 56) != NCS_CH_TAG || ((raw >> 32) & 0xFFFFFF) != ((uint32_t)ncs_g.pid & 0xFFFFFF) ||
      ((raw >> 24) & 0xFF) != (atomic_load(&ncs_g.epoch) & 0xFF) || (raw & 0xFFFFFF) >= atomic_load(&ncs_g.ncomms))
    return 0;
  return (uint32_t)(raw & 0xFFFFFF) + 1;
}

/* An event handle of this load: its id, else 0. */
static uint64_t event_of(uint64_t raw) {
  uint64_t id = raw & NCS_ID_MASK;
  if ((raw >> 56) != NCS_EH_TAG || ((raw >> 44) & 0xFF) != (atomic_load(&ncs_g.epoch) & 0xFF) ||
      id < ncs_g.id_base || id >= atomic_load(&ncs_g.id_counter))
    return 0;
  return id;
}

static gexec_t *exec_get(uint64_t exec) {
  gexec_t *x = m_put(&X.gexec, exec);
  if (!x && exec) count(NCS_GK_MAP_FULL, 1);
  return x;
}

static void raw_launch(const uint64_t *w, ncs_gpu_rec_t *g) {
  g->kind = NCS_GR_LAUNCH;
  g->corr = w[2], g->launch = w[3], g->comm = comm_of(w[4]), g->group = event_of(w[5]);
  g->stream = w[6], g->flags = (uint32_t)w[7];
  pend_t *p = m_put(&X.pend, g->corr);
  if (!p) {
    count(NCS_GK_UNTRACKED, 1);
    return;
  }
  p->launch = g->launch, p->ts = g->ts, p->group = g->group, p->stream = g->stream;
  p->thread = g->thread, p->comm = g->comm, p->flags = g->flags, p->left = 1;
}

static void raw_gnode(const uint64_t *w, ncs_gpu_rec_t *g) {
  g->kind = NCS_GR_GNODE;
  g->launch = w[2], g->corr = w[3], g->node = w[4], g->graph = w[5];
  pend_t *p = m_find(&X.pend, g->corr); /* captured, not launched: no kernel will come for it */
  if (p && !p->graph && p->launch == g->launch) m_del(&X.pend, p);
  node_t *n = m_put(&X.cnode, g->node);
  if (n)
    n->launch = g->launch;
  else
    count(NCS_GK_MAP_FULL, 1);
  count(NCS_GK_GRAPH_NODES, 1);
}

static void raw_gclone(const uint64_t *w, ncs_gpu_rec_t *g) {
  g->kind = NCS_GR_GCLONE;
  g->node = w[2], g->orig = w[3];
  const node_t *c = m_find(&X.cnode, g->orig);
  g->launch = c ? c->launch : 0;
  node_t *n = m_put(&X.enode, g->node);
  if (n)
    n->launch = g->launch;
  else
    count(NCS_GK_MAP_FULL, 1);
  gexec_t *x = exec_get(g->node >> 32); /* a node id is (graph id << 32) | index */
  if (x) x->nccl++;
  count(NCS_GK_CLONES, 1);
}

static void raw_glaunch(const uint64_t *w, ncs_gpu_rec_t *g) {
  g->kind = NCS_GR_GLAUNCH;
  g->corr = w[2], g->graph = w[3], g->stream = w[4];
  gexec_t *x = exec_get(g->graph);
  if (!x) return;
  x->launches++;
  uint64_t old = X.gl_fifo[X.gl_pos]; /* CUPTI delivers kernels within a flush or two: older
                                         launches are forgotten */
  glaunch_t *o = old ? m_find(&X.gl, old) : NULL;
  if (o) m_del(&X.gl, o);
  glaunch_t *l = m_put(&X.gl, g->corr);
  if (l) l->exec = g->graph, l->replay = x->launches;
  X.gl_fifo[X.gl_pos] = l ? g->corr : 0;
  X.gl_pos = (X.gl_pos + 1) % GL_KEEP;
  if (!x->nccl) return;
  count(NCS_GK_GRAPH_LAUNCHES, 1);
  pend_t *p = m_put(&X.pend, g->corr);
  if (!p) {
    count(NCS_GK_UNTRACKED, 1);
    return;
  }
  p->graph = g->graph, p->ts = g->ts, p->stream = g->stream, p->thread = g->thread;
  p->flags = NCS_GLF_GRAPH, p->left = x->nccl;
}

void ncs_gpu_raw(const uint64_t *w, uint64_t hdr, uint32_t thread, uint64_t ts_ns) {
  if (!X.ok) return;
  ncs_gpu_rec_t g;
  memset(&g, 0, sizeof g);
  g.thread = thread, g.ts = ts_ns;
  switch ((hdr >> 8) & 0xFF) {
  case NCS_RG_LAUNCH: raw_launch(w, &g); break;
  case NCS_RG_GNODE: raw_gnode(w, &g); break;
  case NCS_RG_GCLONE: raw_gclone(w, &g); break;
  case NCS_RG_GLAUNCH: raw_glaunch(w, &g); break;
  case NCS_RG_GEXEC: {
    g.kind = NCS_GR_GEXEC;
    g.graph = w[2], g.orig = w[3];
    gexec_t *x = exec_get(g.graph);
    if (x) x->orig = g.orig;
    break;
  }
  default: return;
  }
  emit(&g);
}

/* ------------------------------------------------------------------ kernels */

/* The replay index of a graph kernel: which launch of its exec graph it belongs to, counted from
 * the GLAUNCH records. Without one (the graph was launched before CUPTI was set up, or the
 * callback's record was lost) it is 0 and flagged: CUPTI's correlation ids grow in launch order,
 * so a reader ranks the kernel's among its graph's (trace/gpujoin.c); kernels arrive out of
 * launch order, so the writer cannot. */
static uint32_t replay_of(const gexec_t *x, uint64_t corr, uint32_t *flags) {
  const glaunch_t *l = m_find(&X.gl, corr);
  if (l && l->exec == x->exec) return l->replay;
  *flags |= NCS_GKF_REPLAY_ORDER;
  return 0;
}

static void join_graph(ncs_gpu_rec_t *g) {
  gexec_t *x = exec_get(g->graph);
  if (x) g->replay = replay_of(x, g->corr, &g->flags);
  const node_t *n = m_find(&X.enode, g->node);
  if (!n && x && x->orig) { /* no GCLONE: the same index in the graph it came from */
    n = m_find(&X.cnode, x->orig << 32 | (g->node & 0xFFFFFFFFull));
    if (n && n->launch) g->flags |= NCS_GKF_BY_INDEX;
  }
  if (!n || !n->launch) return; /* not an NCCL node: the application's own graph kernel */
  g->launch = n->launch;
  g->flags |= NCS_GKF_GRAPH;
  count(NCS_GK_REPLAYED, 1);
  pend_t *p = m_find(&X.pend, g->corr);
  if (p && p->graph == g->graph && (!p->left || --p->left == 0)) m_del(&X.pend, p);
}

static void summarize(const ncs_gpu_rec_t *g) {
  sum_t *s = m_put(&X.sums, ((uint64_t)g->device << 32 | (g->stream & 0xFFFFFFFFu)) + 1);
  if (!s) { /* more streams than the table: record the kernel after all */
    emit(g);
    return;
  }
  if (!s->count || g->start < s->first) s->first = g->start;
  if (g->end > s->last) s->last = g->end;
  s->count++;
  s->busy += g->end - g->start;
  count(NCS_GK_SUMMARIZED, 1);
}

static void summaries_out(void) {
  for (uint32_t i = 0; X.sums.n && i < X.sums.cap; i++) {
    sum_t *s = m_at(&X.sums, i);
    if (!s->key) continue;
    ncs_gpu_rec_t g = {.kind = NCS_GR_SUMMARY, .device = (uint32_t)((s->key - 1) >> 32),
                       .stream = (s->key - 1) & 0xFFFFFFFFu, .count = s->count, .busy_ns = s->busy,
                       .start = s->first, .end = s->last};
    emit(&g);
  }
  m_clear(&X.sums);
}

static void kernel(const ncs_cupti_kernel_t *k) {
  ncs_gpu_rec_t g;
  memset(&g, 0, sizeof g);
  g.kind = NCS_GR_KERNEL;
  g.corr = k->correlationId, g.start = k->start, g.end = k->end, g.device = k->deviceId;
  g.stream = k->streamId, g.graph = k->graphId, g.node = k->graphNodeId;
  count(NCS_GK_KERNELS, 1);
  /* CUPTI can hand back zero or reversed times (a forced flush of unfinished work, long runs) */
  if (!g.start || !g.end || g.end < g.start) {
    g.flags |= NCS_GKF_BAD_TIME;
    g.end = g.start;
    count(NCS_GK_BAD_TIME, 1);
  }
  if (g.graph) {
    join_graph(&g);
  } else {
    pend_t *p = m_find(&X.pend, g.corr);
    if (p && !p->graph) {
      g.launch = p->launch;
      g.flags |= NCS_GKF_EAGER;
      count(NCS_GK_EAGER, 1);
      m_del(&X.pend, p);
    }
  }
  if (!(g.flags & NCS_GKF_BAD_TIME)) X.last_cupti = g.start;
  if (!g.launch && X.sums.e && ncs_g.cfg.cupti_summary && !(g.flags & NCS_GKF_BAD_TIME)) {
    summarize(&g);
    return;
  }
  g.name_id = name_id(k->name);
  emit(&g);
}

static void decode(int i) {
  size_t valid = 0;
  const uint8_t *buf = ncs_gpu_buffer(i, &valid);
  void *rec = NULL;
  for (;;) {
    ncs_cupti_result_t r = ncs_gpu_next_record(buf, valid, &rec);
    if (r == NCS_CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (r != NCS_CUPTI_SUCCESS || !rec) {
      count(NCS_GK_BAD_BUFFER, 1);
      break;
    }
    count(NCS_GK_RECORDS, 1);
    uint32_t kind;
    memcpy(&kind, rec, sizeof kind);
    if (kind == NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
      kernel(rec);
    else
      count(NCS_GK_OTHER_KIND, 1);
  }
  ncs_gpu_give_back(i);
}

/* ------------------------------------------------------------------ the writer's calls */

void ncs_gpu_segment_free(void) {
  map_t *m[] = {&X.pend, &X.cnode, &X.enode, &X.gexec, &X.names, &X.sums, &X.gl};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) m_free(m[i]);
  ncs_buf_free(&X.buf);
  X.ok = 0;
}

void ncs_gpu_segment_begin(void) {
  memset(X.k, 0, sizeof X.k);
  X.open = 0, X.ntaken = 0;
  X.clock_mono = X.clock_cupti = X.clock_width = X.last_cupti = 0;
  ncs_gpu_cb_counts(&X.cb0);
  if (ncs_g.cfg.cupti) /* the tables live for the segment (ncs_gpu_segment_free) */
    X.ok = !ncs_buf_init(&X.buf, GBUF_BYTES) && !m_init(&X.pend, sizeof(pend_t), PEND_CAP) &&
           !m_init(&X.cnode, sizeof(node_t), CNODE_CAP) && !m_init(&X.enode, sizeof(node_t), ENODE_CAP) &&
           !m_init(&X.gexec, sizeof(gexec_t), GEXEC_CAP) && !m_init(&X.names, sizeof(name_t), NAME_CAP) &&
           !m_init(&X.sums, sizeof(sum_t), SUM_CAP) && !m_init(&X.gl, sizeof(glaunch_t), 2 * GL_KEEP);
  memset(X.gl_fifo, 0, sizeof X.gl_fifo); /* ids, names and graphs are per segment */
  X.gl_pos = 0;
  X.last_flush_ns = X.last_cupti_flush_ns = ncs_mono_ns();
  write_state(0);
}

void ncs_gpu_collect(void) {
  if (X.ok) X.ntaken = ncs_gpu_take(X.taken, MAX_TAKE);
}

static void decode_taken(void) {
  for (int i = 0; i < X.ntaken; i++) decode(X.taken[i]);
  X.ntaken = 0;
}

void ncs_gpu_cycle(int final) {
  if (!X.ok) return;
  decode_taken();
  uint64_t now = ncs_mono_ns(), fl = (uint64_t)ncs_g.cfg.flush_ms * 1000000ull;
  if (!final && atomic_load_explicit(&ncs_gpu_on, memory_order_relaxed) && now - X.last_cupti_flush_ns >= fl) {
    /* completed buffers reach the list now; the next cycle takes them */
    if (ncs_gpu_flush(0) == 0)
      X.k[NCS_GK_FLUSH_NS] = now;
    else
      count(NCS_GK_FLUSH_ERRORS, 1);
    X.last_cupti_flush_ns = now;
  }
  if (final || now - X.last_flush_ns >= fl) {
    summaries_out();
    chunk_out();
  }
  if (!final && now - X.last_state_ns >= STATE_NS) write_state(0);
}

static void pending_rec(const pend_t *p, ncs_gpu_rec_t *g) {
  memset(g, 0, sizeof *g);
  g->kind = NCS_GR_PENDING;
  g->flags = p->flags, g->ts = p->ts, g->thread = p->thread, g->corr = p->corr;
  g->launch = p->launch, g->comm = p->comm, g->group = p->group, g->stream = p->stream;
  g->graph = p->graph;
}

/* The end of the segment: stop CUPTI collecting, flush everything it has (unfinished kernels
 * come back with bad times), and say what never completed. Called by the writer thread after its
 * last drain, with the records of ncs_gpu_collect(1)'s flush drained too. */
void ncs_gpu_segment_end(void) {
  if (X.ok) {
    ncs_gpu_cycle(1);
    for (uint32_t i = 0; X.pend.n && i < X.pend.cap; i++) {
      const pend_t *p = m_at(&X.pend, i);
      if (!p->corr) continue;
      ncs_gpu_rec_t g;
      pending_rec(p, &g);
      emit(&g);
    }
  }
  write_state(1);
}

void ncs_gpu_final_flush(void) {
  if (!X.ok) return;
  ncs_gpu_stop_collecting();
  if (ncs_gpu_flush(1) == 0) X.k[NCS_GK_FLUSH_NS] = ncs_mono_ns();
  ncs_gpu_collect();
}

size_t ncs_gpu_keyframe(ncs_buf_t *b, size_t limit) {
  if (!X.ok || !X.pend.n) return 0;
  ncs_buf_reset(b);
  ncs_gpu_chunk_t c;
  ncs_gpu_enc_begin(b, &c, ncs_mono_ns(), X.last_cupti);
  for (uint32_t i = 0; i < X.pend.cap; i++) {
    const pend_t *p = m_at(&X.pend, i);
    if (!p->corr) continue;
    size_t before = b->len;
    ncs_gpu_chunk_t saved = c;
    ncs_gpu_rec_t g;
    pending_rec(p, &g);
    ncs_gpu_enc_rec(b, &c, &g);
    if (b->overflow || b->len > limit) { /* keep what fits */
      b->len = before, b->overflow = 0, c = saved;
      break;
    }
  }
  ncs_gpu_enc_end(b, &c);
  return c.count ? b->len : 0;
}
