/* writer.c - the plugin's one background thread.
 *
 * It follows every thread's chain of blocks, turns raw records into the trace format
 * (docs/trace-format.md), derives collective completions from children, and appends checksummed
 * chunks to <dir>/<host>-<pid>.nstrace. All file I/O, string reading and hashing happen here,
 * off NCCL's threads.
 *
 * Nothing is lost without a record of it. The producers' drop counters are read every cycle and
 * every rise becomes part of a loss window, written as a LOSS chunk (in flight mode, kept in the
 * flight file's header). A chunk that cannot be written is cut off again, so the file always
 * ends with a whole chunk; its records go into a loss window, the chunks needed to read later
 * ones wait in a backlog, and writing is tried again with a back-off.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/ncs.h"
#include "gpu/gpu.h"
#include "metrics/metrics.h"
#include "range/range.h"
#include "record/flight.h"
#include "trace/encode.h"

#define EV_FLUSH_BYTES (1u << 20)
#define EV_FLUSH_FLIGHT (32u << 10) /* flight mode: chunks must fit a ring slot comfortably */
#define EV_BUF_BYTES (2u << 20)
#define STR_BUF_BYTES (1u << 20)
#define STR_TABLE 8192 /* distinct string pointers per segment; more share one "<many>" id */
#define GRACE_NS 20000000ull   /* children quiet this long: a completion is final */
#define KCH_GRACE_NS 250000000ull /* ... when KernelCh come from NCCL 2.31's profiler thread */
#define LINGER_NS 250000000ull /* keep a completed entry this long to catch late children */
#define SWEEP_NS 50000000ull
#define CLOCK_NS 1000000000ull
#define COUNTERS_NS 5000000000ull
/* A loss window closes (and is written) after LOSS_QUIET_NS without new losses, or once it spans
 * LOSS_SPAN_NS: a steady overload writes one LOSS chunk per second and reason, not one per cycle */
#define LOSS_QUIET_NS 100000000ull
#define LOSS_SPAN_NS 1000000000ull
/* after a failed write: the next try waits this long, doubling up to the maximum */
#define IO_BACKOFF_MIN_NS 50000000ull
#define IO_BACKOFF_MAX_NS 5000000000ull
#define BACKLOG_BYTES (4u << 20) /* chunks kept through a write outage (strings, comms, ...) */
#define IO_LOG_MAX 8             /* outages logged one by one; the rest only in the total */
#ifndef BUSY_PAUSE_US
#define BUSY_PAUSE_US 1000 /* the writer's pause between drains when events keep coming */
#endif

/* --- open events tracked for completions and expiry --- */
typedef struct {
  uint64_t id; /* 0 = empty */
  uint64_t parent;
  uint64_t start_ns, last_ns, end_ns, first_child_ns, gpu_start, gpu_stop, emitted_ns;
  uint64_t group; /* parentGroup id (the kernel plan), 0 if none */
  uint32_t n_kch, n_pop, n_open;
  uint8_t type, stopped, seen_start, emitted, revise, forced, nch;
  uint8_t agg; /* keyed by a Group's id: what its members completed at (see grp_note) */
  uint8_t unsampled; /* NCS_SF_UNSAMPLED: KernelCh was off for its group */
  uint32_t mx;       /* live metrics: the operation's series (ncs_mx_op), 0 none */
  uint64_t mx_bytes;
  double mx_bus;
  uint8_t kch_thread; /* its communicator is ABI v7+: KernelCh come from another thread */
} trk_t;

typedef struct {
  const void *ptr;
  uint32_t id;
} strent_t;

/* one reason's loss accounting */
typedef struct {
  uint64_t prev[NCS_T_COUNT]; /* its counters at the last reading (drops, no slot) */
  uint64_t base[NCS_T_COUNT]; /* ... at the start of the segment */
  ncs_loss_t w;               /* the open window; w.records == 0: none */
  uint64_t last_ns;           /* when it last grew */
  int dirty;                  /* grew since the flight header last saw it */
} loss_w_t;

typedef struct {
  int fd;
  int flight; /* NCCLSCOPE_MODE=flight: chunks go to the flight recorder's ring (flight.c) */
  char path[1280];
  ncs_buf_t ev, str, tmp;
  ncs_evchunk_t evc;
  int ev_open;
  uint64_t last_flush_ns, last_clock_ns, last_counters_ns, last_sweep_ns;
  uint64_t pair_mono; /* the monotonic time of the last CLOCK pair written in this segment */
  uint64_t drain_ns; /* when the last full drain began: every record published before is read */
  /* clock conversion */
  uint64_t cal0_tsc, cal0_ns, anchor_tsc, anchor_ns;
  double ns_per_tick;
  /* strings */
  strent_t strs[STR_TABLE];
  uint32_t nstr;     /* string ids handed out (intern and ncs_writer_string) */
  uint32_t ninterned; /* entries of strs[] */
  /* tracking */
  trk_t *trk;
  uint32_t trk_cap, trk_n, trk_peak;
  uint32_t expect_children;
  /* counters for this segment */
  uint64_t starts[NCS_T_COUNT], stops[NCS_T_COUNT], states[NCS_T_COUNT], expired[NCS_T_COUNT];
  uint64_t foreign_ctx, null_ctx, completions, revisions, bytes, chunks, write_errors;
  uint64_t bad_end, stale_end, unknown_state; /* found by the writer in fast-path records (end_ok) */
  uint64_t write_lost; /* records in chunks that could not be written */
  uint64_t threads_seen;
  /* the EVENTS chunk being built: records per type and their time span (what a lost one loses) */
  uint64_t evs_n[NCS_T_COUNT], evs_from, evs_to;
  /* loss windows by reason - 1; loss_read_ns: when the last reading of the counters began */
  loss_w_t loss[NCS_LOSS_MAX];
  uint64_t loss_read_ns;
  uint32_t slots_used; /* slots [0, slots_used) have been claimed at least once */
  uint64_t last_ev_ns;   /* the latest record's time (the watchdog's view, for the metrics) */
  uint64_t fl_dumps[5];  /* flight dumps written, by reason */
  /* file I/O (trace mode). good_end: the file's size after its last whole chunk. An outage
   * begins with a failed write and ends with the next one that works. */
  uint64_t good_end;
  int torn;      /* a failed write left bytes after good_end that could not be cut off yet */
  int io_failed; /* in an outage: chunks are tried again from io_retry_ns on */
  int ending;    /* the final drain: every chunk is tried, whatever the back-off says */
  int io_err;    /* the outage's first error */
  uint64_t io_fail_ns, io_retry_ns, io_backoff_ns, io_lost_chunks, io_lost_records;
  uint32_t io_outages;
  ncs_buf_t backlog; /* whole chunks (and a file header) to write before anything else */
  uint32_t backlog_chunks, backlog_hdr;
  int fl_lost_logged;
  /* producer counters at segment start, subtracted so the footer is per segment */
  uint64_t base_bad, base_stale, base_null, base_disabled,
      base_unk_type, base_unk_state, base_groups, base_groups_unsampled, base_untracked;
  uint64_t evicted; /* events the tracking table had no room for (NCCLSCOPE_TRACK_MAX) */
} writer_t;

static writer_t W;

/* ------------------------------------------------------------------ time */

/* One (TSC, CLOCK_MONOTONIC) pair. A pair taken while the thread was preempted between the
 * reads would be off by the preemption, so the tightest of a few tries is kept. */
static void cal_sample(uint64_t *tsc, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  *tsc = *ns = 0;
  for (int i = 0; i < 5; i++) {
    uint64_t a = ncs_tsc();
    uint64_t n = ncs_mono_ns();
    uint64_t b = ncs_tsc();
    if (b - a < best) best = b - a, *tsc = a + (b - a) / 2, *ns = n;
  }
}

static void clock_setup(void) {
  if (!ncs_g.use_tsc) return;
  cal_sample(&W.cal0_tsc, &W.cal0_ns);
  uint64_t t, n;
  do { /* 2 ms is enough for a first rate; it is refined from a growing baseline */
    cal_sample(&t, &n);
  } while (n - W.cal0_ns < 2000000);
  W.ns_per_tick = (double)(n - W.cal0_ns) / (double)(t - W.cal0_tsc);
  W.anchor_tsc = t, W.anchor_ns = n;
}

/* Called every writer cycle: the rate comes from the whole baseline since the segment began
 * (its error shrinks as the baseline grows) and the anchor is fresh, so an event is never
 * converted far from a measured pair. */
static void clock_refresh(void) {
  if (!ncs_g.use_tsc) return;
  uint64_t t, n;
  cal_sample(&t, &n);
  if (t > W.cal0_tsc) W.ns_per_tick = (double)(n - W.cal0_ns) / (double)(t - W.cal0_tsc);
  W.anchor_tsc = t, W.anchor_ns = n;
}

static inline uint64_t to_ns(uint64_t stamp) {
  if (!ncs_g.use_tsc) return stamp;
  double d = ((double)(int64_t)(stamp - W.anchor_tsc)) * W.ns_per_tick;
  return (uint64_t)((int64_t)W.anchor_ns + (int64_t)d);
}

/* ------------------------------------------------------------------ loss windows */

/* n[t] records of type t were lost in [from, to]; `now` is when the writer learned of it. */
static void loss_add(unsigned reason, const uint64_t *n, uint64_t from, uint64_t to, uint64_t now) {
  loss_w_t *l = &W.loss[reason - 1];
  ncs_loss_t *w = &l->w;
  if (!w->records) {
    w->reason = reason, w->from_ns = from, w->to_ns = to;
  } else {
    if (from < w->from_ns) w->from_ns = from;
    if (to > w->to_ns) w->to_ns = to;
  }
  for (unsigned t = 0; t < NCS_T_COUNT; t++) w->by_type[t] += n[t], w->records += n[t];
  l->last_ns = now;
  l->dirty = 1;
  if (ncs_mx_active) ncs_mx_lost(reason, n);
}

/* The counters of one reason were read as cur[] between from and to: what rose since the last
 * reading was lost after the last reading began and before this one ended. */
static void loss_rise(unsigned reason, const uint64_t *cur, uint64_t from, uint64_t to) {
  loss_w_t *l = &W.loss[reason - 1];
  uint64_t d[NCS_T_COUNT], n = 0;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    d[t] = cur[t] > l->prev[t] ? cur[t] - l->prev[t] : 0;
    l->prev[t] = cur[t];
    n += d[t];
  }
  if (n) loss_add(reason, d, from, to, to);
}

/* The producers' loss counters: records dropped because the pool was full, and because the
 * thread had no slot. Relaxed loads of counters only the rare paths write. A slot never claimed
 * holds no count, so only slots up to the highest one seen in use are read (a slot freed again
 * keeps its counts; drain_all sees every slot in use before it frees it). */
static void loss_counters(uint64_t *pool, uint64_t *noslot) {
  memset(pool, 0, sizeof(uint64_t) * NCS_T_COUNT);
  for (uint32_t i = 0; i < ncs_g.nslots; i++) {
    ncs_slot_t *s = &ncs_g.slots[i];
    if (i >= W.slots_used) {
      if (atomic_load_explicit(&s->state, memory_order_acquire) == NCS_SLOT_FREE) continue;
      W.slots_used = i + 1;
    }
    for (unsigned t = 0; t < NCS_T_COUNT; t++)
      pool[t] += atomic_load_explicit(&s->drops[t], memory_order_relaxed);
  }
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    noslot[t] = atomic_load_explicit(&ncs_g.no_slot_by_type[t], memory_order_relaxed);
}

static void loss_base(void) {
  uint64_t pool[NCS_T_COUNT], noslot[NCS_T_COUNT];
  W.loss_read_ns = ncs_mono_ns();
  loss_counters(pool, noslot);
  memcpy(W.loss[NCS_LOSS_DROPS - 1].prev, pool, sizeof pool);
  memcpy(W.loss[NCS_LOSS_NO_SLOT - 1].prev, noslot, sizeof noslot);
  memcpy(W.loss[NCS_LOSS_DROPS - 1].base, pool, sizeof pool);
  memcpy(W.loss[NCS_LOSS_NO_SLOT - 1].base, noslot, sizeof noslot);
}

static void small_chunk(uint16_t type);

static void loss_close(unsigned reason) {
  loss_w_t *l = &W.loss[reason - 1];
  if (W.flight) {
    ncs_fl_loss(&l->w, 1);
  } else {
    ncs_enc_loss(&W.tmp, &l->w);
    small_chunk(NCS_CHUNK_LOSS); /* kept through a write outage like the metadata */
  }
  memset(&l->w, 0, sizeof l->w);
  l->dirty = 0;
}

/* Every writer cycle: read the counters, grow the windows, close the ones that are due. During a
 * write outage no window closes (their LOSS chunks could not be written either): they grow until
 * writing works again, which keeps them true and the backlog small. In flight mode the open
 * windows go to the file's header every cycle, where a kill -9 cannot take them. */
static void loss_cycle(int final) {
  uint64_t pool[NCS_T_COUNT], noslot[NCS_T_COUNT];
  uint64_t t0 = ncs_mono_ns();
  loss_counters(pool, noslot);
  uint64_t t1 = ncs_mono_ns();
  loss_rise(NCS_LOSS_DROPS, pool, W.loss_read_ns, t1);
  loss_rise(NCS_LOSS_NO_SLOT, noslot, W.loss_read_ns, t1);
  W.loss_read_ns = t0;
  for (unsigned r = 1; r <= NCS_LOSS_MAX; r++) {
    loss_w_t *l = &W.loss[r - 1];
    if (!l->w.records) continue;
    int due = final || (!W.io_failed && (t1 - l->last_ns >= LOSS_QUIET_NS ||
                                         l->w.to_ns - l->w.from_ns >= LOSS_SPAN_NS));
    if (due) {
      loss_close(r);
    } else if (W.flight && l->dirty) {
      ncs_fl_loss(&l->w, 0);
      l->dirty = 0;
    }
  }
}

/* ------------------------------------------------------------------ output */

/* Chunks that later chunks cannot be read without, or that say what was lost: through a write
 * outage they wait in the backlog; the others (events, clock pairs, snapshots) are lost. */
static int must_keep(uint16_t type) {
  return type == NCS_CHUNK_SEGMENT || type == NCS_CHUNK_STRINGS || type == NCS_CHUNK_COMM ||
         type == NCS_CHUNK_COMM_END || type == NCS_CHUNK_THREAD || type == NCS_CHUNK_LOSS ||
         type == NCS_CHUNK_FOOTER || type == NCS_CHUNK_GPU_STATE || type == NCS_CHUNK_RANGE_STATE;
}

/* A chunk did not reach the file: count it, and for events, which records and when. */
static void chunk_lost(uint16_t type) {
  W.write_errors++;
  W.io_lost_chunks++;
  if (type != NCS_CHUNK_EVENTS) return;
  uint64_t n = 0, now = ncs_mono_ns();
  for (unsigned t = 0; t < NCS_T_COUNT; t++) n += W.evs_n[t];
  if (!n) return;
  W.write_lost += n;
  W.io_lost_records += n;
  loss_add(NCS_LOSS_WRITE, W.evs_n, W.evs_from ? W.evs_from : now, W.evs_to ? W.evs_to : now, now);
}

/* Write iov whole: 0, or the errno of the call that failed. A short write (a disk that fills up
 * writes what fits first) is continued; the next call then reports the error. */
static int write_all(struct iovec *iov, int n) {
  while (n > 0) {
    ssize_t k = writev(W.fd, iov, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno ? errno : EIO;
    if (k == 0) return EIO;
    size_t d = (size_t)k;
    while (n > 0 && d >= iov->iov_len) d -= iov->iov_len, iov++, n--;
    if (n > 0) iov->iov_base = (char *)iov->iov_base + d, iov->iov_len -= d;
  }
  return 0;
}

/* Append whole chunks (len bytes). After a failure the file is cut back to its last whole chunk,
 * so nothing is ever appended after a torn one; if even that fails, nothing is appended until
 * it works. */
static int io_put(struct iovec *iov, int n, size_t len) {
  if (W.torn) {
    if (ftruncate(W.fd, (off_t)W.good_end) != 0) return errno ? errno : EIO;
    W.torn = 0;
  }
  int e = write_all(iov, n);
  if (!e) {
    W.good_end += len;
    return 0;
  }
  if (ftruncate(W.fd, (off_t)W.good_end) != 0) W.torn = 1;
  return e;
}

static int backlog_flush(void) {
  if (!W.backlog.len) return 0;
  struct iovec iov = {W.backlog.p, W.backlog.len};
  int e = io_put(&iov, 1, W.backlog.len);
  if (e) return e;
  W.bytes += W.backlog.len - W.backlog_hdr;
  W.chunks += W.backlog_chunks;
  ncs_buf_reset(&W.backlog);
  W.backlog_chunks = W.backlog_hdr = 0;
  return 0;
}

static void io_fail(int e, uint16_t type, size_t len, uint64_t now) {
  if (!W.io_failed) {
    W.io_failed = 1, W.io_err = e, W.io_fail_ns = now, W.io_backoff_ns = IO_BACKOFF_MIN_NS;
    W.io_lost_chunks = W.io_lost_records = 0;
    if (++W.io_outages <= IO_LOG_MAX)
      ncs_log(NCS_LOG_WARN,
              "writing %s failed: %s (%s chunk, %zu bytes); %s; events are lost until writing "
              "works again (tried again after %.2f s, then every %.0f s at most), and a LOSS record "
              "will say which and when",
              W.path, strerror(e), ncs_chunk_name(type), len + NCS_CHUNK_HEADER_LEN,
              W.torn ? "the torn chunk could not be cut off yet: nothing is appended after it"
                     : "the file was cut back to its last complete chunk",
              IO_BACKOFF_MIN_NS / 1e9, IO_BACKOFF_MAX_NS / 1e9);
  } else if (W.io_backoff_ns < IO_BACKOFF_MAX_NS) {
    W.io_backoff_ns = W.io_backoff_ns * 2 < IO_BACKOFF_MAX_NS ? W.io_backoff_ns * 2 : IO_BACKOFF_MAX_NS;
  }
  W.io_retry_ns = now + W.io_backoff_ns;
}

static void io_recovered(uint64_t now) {
  W.io_failed = 0;
  if (W.io_outages <= IO_LOG_MAX)
    ncs_log(NCS_LOG_WARN,
            "writing %s works again after %.1f s (%s): %llu chunks with %llu event records could "
            "not be written; a LOSS record in the trace says which and when",
            W.path, (double)(now - W.io_fail_ns) / 1e9, strerror(W.io_err),
            (unsigned long long)W.io_lost_chunks, (unsigned long long)W.io_lost_records);
}

/* Append one chunk to the trace file. 0 when written or kept in the backlog, -1 when lost. */
static int file_put(uint16_t type, const uint8_t *hdr, const void *p, size_t len) {
  uint64_t now = ncs_mono_ns();
  int e = W.io_failed && !W.ending && now < W.io_retry_ns ? -1 : backlog_flush(); /* -1: not tried */
  if (!e) {
    struct iovec iov[2] = {{(void *)hdr, NCS_CHUNK_HEADER_LEN}, {(void *)p, len}};
    e = io_put(iov, 2, NCS_CHUNK_HEADER_LEN + len);
    if (!e) {
      W.bytes += NCS_CHUNK_HEADER_LEN + len;
      W.chunks++;
      if (W.io_failed) io_recovered(now);
      return 0;
    }
  }
  if (e > 0) io_fail(e, type, len, now);
  if (must_keep(type) && W.backlog.len + NCS_CHUNK_HEADER_LEN + len <= W.backlog.cap) {
    ncs_buf_bytes(&W.backlog, hdr, NCS_CHUNK_HEADER_LEN);
    ncs_buf_bytes(&W.backlog, p, len);
    W.backlog_chunks++;
    return 0;
  }
  chunk_lost(type);
  return -1;
}

static void flush_events(void);
static int write_chunk(uint16_t type, const ncs_buf_t *b) {
  if (W.fd < 0 && !W.flight) return -1;
  /* flight: a chunk bound for the ring (not the meta region, not the events chunk itself) that
   * would leave the pending events no room in the slot lets them go first, so they are never
   * written after a keyframe that restates them (see emit) */
  if (W.flight && W.ev_open && type != NCS_CHUNK_EVENTS && ncs_fl_in_ring(type) &&
      !ncs_fl_fits(3 * NCS_CHUNK_HEADER_LEN + W.ev.len + b->len + NCS_EV_ENC_MAX))
    flush_events();
  if (b->overflow) {
    chunk_lost(type);
    return -1;
  }
  uint8_t hdr[NCS_CHUNK_HEADER_LEN];
  ncs_chunk_header(hdr, type, b->p, (uint32_t)b->len);
  if (!W.flight) return file_put(type, hdr, b->p, b->len);
  if (ncs_fl_chunk(type, hdr, b->p, b->len) != 0) {
    if (!W.fl_lost_logged++)
      ncs_log(NCS_LOG_WARN,
              "flight recorder: a %s chunk of %zu bytes did not fit in %s (its region is full); "
              "what it held is lost (counted)",
              ncs_chunk_name(type), b->len + sizeof hdr, W.path);
    chunk_lost(type);
    return -1;
  }
  W.bytes += sizeof hdr + b->len;
  W.chunks++;
  return 0;
}

static void publish_comms(int ends);
static void flush_events(void) {
  if (!W.ev_open) return;
  publish_comms(0);
  if (W.str.len) {
    write_chunk(NCS_CHUNK_STRINGS, &W.str);
    ncs_buf_reset(&W.str);
  }
  ncs_enc_events_end(&W.ev, &W.evc);
  if (W.evc.count) write_chunk(NCS_CHUNK_EVENTS, &W.ev);
  ncs_buf_reset(&W.ev);
  memset(W.evs_n, 0, sizeof W.evs_n);
  W.evs_from = W.evs_to = 0;
  W.ev_open = 0;
  W.last_flush_ns = ncs_mono_ns();
}

static void emit(const ncs_event_t *e) {
  if (W.ev_open && W.ev.len > (W.flight ? EV_FLUSH_FLIGHT : EV_FLUSH_BYTES)) flush_events();
  if (W.flight) {
    /* The chunk this event joins would not fit the ring slot: what is pending goes into this
     * slot now, and the next slot begins before the event is noted. Were the slot begun when the
     * chunk is written, its keyframe would restate the chunk's open events a second time. */
    if (!ncs_fl_fits(2 * NCS_CHUNK_HEADER_LEN + (W.ev_open ? W.ev.len : 32) + NCS_EV_ENC_MAX)) {
      flush_events();
      ncs_fl_next_slot();
    }
    ncs_fl_note(e);
  }
  if (!W.ev_open) {
    ncs_enc_events_begin(&W.ev, &W.evc,
                         e->kind <= NCS_REC_STATE || e->kind == NCS_REC_BADCALL ? e->ts
                                                                                : W.evc.prev_ts);
    W.ev_open = 1;
  }
  ncs_enc_event(&W.ev, &W.evc, e);
  /* what the chunk holds, should it be lost (derived records carry their end time, if any) */
  uint64_t ts = e->ts ? e->ts : e->end_ns;
  W.evs_n[e->type]++;
  if (ts && (!W.evs_from || ts < W.evs_from)) W.evs_from = ts;
  if (ts > W.evs_to) W.evs_to = ts;
}

/* A chunk of another subsystem (GPU truth): the strings it names go first. 0, or -1 when it
 * was lost (counted in write errors; the caller says what it held). */
int ncs_writer_chunk(uint16_t type, const ncs_buf_t *b) {
  if (W.str.len) {
    write_chunk(NCS_CHUNK_STRINGS, &W.str);
    ncs_buf_reset(&W.str);
  }
  return write_chunk(type, b);
}

/* A new string id for s (copied now), written with the next chunk; 0 when the segment has used
 * every id the writer keeps for strings. */
uint32_t ncs_writer_string(const char *s) {
  if (W.nstr >= UINT32_MAX - 1 || W.str.len + NCS_STRING_MAX + 16 > W.str.cap) return 0;
  uint32_t id = ++W.nstr;
  ncs_enc_string(&W.str, id, s);
  return id;
}

static void small_chunk(uint16_t type) {
  write_chunk(type, &W.tmp);
  ncs_buf_reset(&W.tmp);
}

/* ------------------------------------------------------------------ strings */

static uint32_t intern(const void *p) {
  if (!p) return 0;
  uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
  uint32_t i = (uint32_t)(h >> 51) & (STR_TABLE - 1);
  for (uint32_t n = 0; n < STR_TABLE; n++, i = (i + 1) & (STR_TABLE - 1)) {
    if (W.strs[i].ptr == p) return W.strs[i].id;
    if (!W.strs[i].ptr) {
      if (W.ninterned >= STR_TABLE - 1) break;
      W.ninterned++;
      W.strs[i].ptr = p;
      W.strs[i].id = ++W.nstr;
      /* NCCL's strings (func, datatype, algo, proto) are static: read once, here */
      ncs_enc_string(&W.str, W.strs[i].id, (const char *)p);
      return W.strs[i].id;
    }
  }
  return 0; /* table full: the field reads as NULL rather than growing without bound */
}

/* ------------------------------------------------------------------ tracking */

static inline uint32_t trk_hash(uint64_t id) {
  return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (W.trk_cap - 1);
}

static trk_t *trk_find(uint64_t id) {
  for (uint32_t i = trk_hash(id);; i = (i + 1) & (W.trk_cap - 1)) {
    if (W.trk[i].id == id) return &W.trk[i];
    if (!W.trk[i].id) return NULL;
  }
}

/* The table is full: an event is left untracked (its completion is not derived). Counted
 * (NCS_CK_EVICTED) and said once per segment in NCCL's log. */
static void trk_full(void) {
  if (!W.evicted++)
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_TRACK_MAX=%u: the writer's table of open events is full; events "
            "it has no room for get no completion (counted in the trace, and said by every ncclscope "
            "output); raise NCCLSCOPE_TRACK_MAX", W.trk_cap);
}

static trk_t *trk_insert(uint64_t id) {
  if (W.trk_n + 1 >= W.trk_cap * 3 / 4) { /* keep probes short */
    trk_full();
    return NULL;
  }
  uint32_t i = trk_hash(id);
  while (W.trk[i].id && W.trk[i].id != id) i = (i + 1) & (W.trk_cap - 1);
  if (!W.trk[i].id) {
    memset(&W.trk[i], 0, sizeof W.trk[i]);
    W.trk[i].id = id;
    if (++W.trk_n > W.trk_peak) W.trk_peak = W.trk_n;
  }
  return &W.trk[i];
}

/* A Coll/P2p leaves the table: what it took is settled (its fields are those of its last COMPLETE,
 * the one the trace keeps), and the live metrics get it, timed as report's duration() times it
 * (docs/report.md): GPU times from KernelCh, else the host time of its children, else only its
 * enqueue, which is no execution time (so one that never completed). An unsampled group's
 * operation without GPU times is left out of the times, as report leaves it out of latency and
 * bandwidth. */
static void mx_settle(const trk_t *p) {
  int t = NCS_MX_ENQUEUE_HOST;
  uint64_t ns = 0;
  if (p->emitted && p->n_kch && p->gpu_start && p->gpu_stop > p->gpu_start)
    t = NCS_MX_KERNEL_GPU, ns = p->gpu_stop - p->gpu_start;
  else if (!p->unsampled && p->emitted && p->first_child_ns && p->end_ns > p->first_child_ns)
    t = NCS_MX_PROXY_HOST, ns = p->end_ns - p->first_child_ns;
  ncs_mx_settle(p->mx, p->mx_bytes, p->mx_bus, t, ns);
}

static void trk_remove(trk_t *e) {
  if (e->mx) mx_settle(e);
  /* backward-shift deletion keeps linear probing correct without tombstones */
  uint32_t i = (uint32_t)(e - W.trk);
  W.trk[i].id = 0;
  W.trk_n--;
  for (uint32_t j = (i + 1) & (W.trk_cap - 1); W.trk[j].id; j = (j + 1) & (W.trk_cap - 1)) {
    uint32_t h = trk_hash(W.trk[j].id);
    /* move j into the hole when its home is not in (i, j] cyclically */
    if (ncs_probe_moves(i, j, h)) {
      W.trk[i] = W.trk[j];
      W.trk[j].id = 0;
      i = j;
    }
  }
}

static void emit_expired(uint64_t id, unsigned type, unsigned reason, uint64_t start_ns) {
  ncs_event_t e = {.kind = NCS_REC_EXPIRED, .type = (uint8_t)type, .id = id, .reason = reason,
                   .start_ns = start_ns};
  emit(&e);
  if (type < NCS_T_COUNT) W.expired[type]++;
}

/* What the operations of one Group (one kernel plan) completed at, kept under the Group's own
 * id (ids are unique, so it cannot collide with a tracked event) for members that have no
 * children of their own. It lingers like a completed parent. */
static trk_t *grp_find(uint64_t group) {
  trk_t *g = group ? trk_find(group) : NULL;
  return g && g->agg ? g : NULL;
}

static void grp_note(const trk_t *p) {
  if (!p->group || !(p->n_kch + p->n_pop)) return;
  trk_t *g = grp_find(p->group);
  if (!g) {
    if (trk_find(p->group) || !(g = trk_insert(p->group))) return; /* table full: no group times */
    g->agg = 1;
    g->seen_start = g->stopped = g->emitted = 1;
  }
  g->emitted_ns = ncs_mono_ns();
  if (p->end_ns > g->end_ns) g->end_ns = p->end_ns;
  if (p->first_child_ns && (!g->first_child_ns || p->first_child_ns < g->first_child_ns))
    g->first_child_ns = p->first_child_ns;
  if (p->gpu_start && (!g->gpu_start || p->gpu_start < g->gpu_start)) g->gpu_start = p->gpu_start;
  if (p->gpu_stop > g->gpu_stop) g->gpu_stop = p->gpu_stop;
}

static void emit_complete(trk_t *p, uint32_t extra) {
  ncs_event_t e = {.kind = NCS_REC_COMPLETE, .type = p->type, .id = p->id};
  grp_note(p);
  e.cflags = extra | (p->n_kch ? NCS_CF_KERNEL : 0) | (p->n_pop ? NCS_CF_PROXY : 0) |
             (p->forced ? NCS_CF_FORCED : 0) | (p->emitted ? NCS_CF_REVISED : 0);
  e.end_ns = p->end_ns;
  e.first_child_ns = p->first_child_ns;
  e.gpu_start = p->gpu_start;
  e.gpu_stop = p->gpu_stop;
  e.n_kernel_ch = p->n_kch;
  e.n_proxy_op = p->n_pop;
  e.n_open = p->n_open;
  emit(&e);
  W.completions++;
  if (p->emitted) W.revisions++;
  p->emitted = 1;
  p->revise = 0;
  p->emitted_ns = ncs_mono_ns();
}

/* t is more than lim ns before now. Event times converted from the TSC can be a little later
 * than the writer's own clock reading, so the difference must not wrap. */
static inline int older_than(uint64_t now, uint64_t t, uint64_t lim) { return t < now && now - t > lim; }

static int is_parent(unsigned t) { return t == NCS_T_COLL || t == NCS_T_P2P; }
static int is_child(unsigned t) { return t == NCS_T_PROXY_OP || t == NCS_T_KERNEL_CH; }

/* Try to close a Coll/P2p. `now` < 0 means called from the event stream (no grace yet). */
static void maybe_complete(trk_t *p, int from_sweep, uint64_t now) {
  if (!p->seen_start || !p->stopped || p->n_open) return;
  if (p->n_kch + p->n_pop == 0) return;
  if (p->emitted && !p->revise) return;
  /* every channel reported its kernel work: final right away; otherwise wait for quiet */
  int all_channels = p->nch && p->n_kch >= p->nch && !(W.expect_children & NCS_EV_PROXY_OP);
  /* NCCL 2.31 reports KernelCh from its profiler thread, which can fall behind the proxy thread
     by more than GRACE_NS on a busy host: an operation still missing some waits longer for them
     (a COMPLETE without its GPU times would be revised when they come) */
  int kch_due = p->kch_thread && !p->unsampled && p->n_kch < p->nch && (W.expect_children & NCS_EV_KERNEL_CH);
  uint64_t grace = kch_due ? KCH_GRACE_NS : GRACE_NS;
  if (all_channels || (from_sweep && older_than(now, p->last_ns, grace))) emit_complete(p, 0);
}

/* returns a Coll/P2p's own entry (NULL when the table is full, and for other types) */
static trk_t *track_start(const ncs_event_t *e) {
  unsigned t = e->type;
  if (is_parent(t)) {
    trk_t *p = trk_insert(e->id);
    if (!p) {
      emit_expired(e->id, t, NCS_XR_EVICTED, e->ts);
      return NULL;
    }
    p->type = (uint8_t)t;
    p->seen_start = 1;
    p->unsampled = (e->flags & NCS_SF_UNSAMPLED) != 0;
    p->start_ns = e->ts;
    if (!p->last_ns) p->last_ns = e->ts;
    p->nch = (uint8_t)e->f[t == NCS_T_COLL ? NCS_F(Coll, nChannels) : NCS_F(P2p, nChannels)];
    p->kch_thread = e->ctx_kind == NCS_CTX_LOCAL && ncs_g.comms[e->ctx].abi >= 7; /* ctx checked */
    unsigned gi = t == NCS_T_COLL ? NCS_F(Coll, parentGroup) : NCS_F(P2p, parentGroup);
    p->group = e->fref_kind[gi] == NCS_REF_LOCAL ? e->f[gi] : 0;
    return p;
  }
  if (!is_child(t)) return NULL;
  trk_t *c = trk_insert(e->id);
  if (!c) {
    emit_expired(e->id, t, NCS_XR_EVICTED, e->ts);
    return NULL;
  }
  c->type = (uint8_t)t;
  c->seen_start = 1;
  c->start_ns = c->last_ns = e->ts;
  if (t == NCS_T_KERNEL_CH) c->gpu_start = e->f[NCS_F(KernelCh, pTimer)];
  if (e->parent_kind != NCS_REF_LOCAL) return NULL;
  trk_t *p = trk_find(e->parent);
  if (!p) {
    p = trk_insert(e->parent); /* the parent's START may still sit in another thread's block */
    if (!p) return NULL;
    p->start_ns = e->ts;
  }
  c->parent = e->parent;
  p->n_open++;
  if (t == NCS_T_KERNEL_CH) {
    p->n_kch++;
    if (c->gpu_start && (!p->gpu_start || c->gpu_start < p->gpu_start)) p->gpu_start = c->gpu_start;
  } else {
    p->n_pop++;
  }
  if (!p->first_child_ns || e->ts < p->first_child_ns) p->first_child_ns = e->ts;
  if (p->last_ns < e->ts) p->last_ns = e->ts;
  if (p->emitted) p->revise = 1;
  return NULL;
}

static void track_state(const ncs_event_t *e) {
  if (e->type != NCS_T_KERNEL_CH || e->state != NCS_ST_KERNEL_CH_STOP) return;
  trk_t *c = trk_find(e->id);
  if (c) c->gpu_stop = e->arg0;
}

static void track_stop(const ncs_event_t *e) {
  unsigned t = e->type;
  if (!is_parent(t) && !is_child(t)) return;
  trk_t *x = trk_find(e->id);
  if (!x) return;
  if (is_parent(t)) {
    x->stopped = 1;
    if (x->last_ns < e->ts) x->last_ns = e->ts;
    if (x->n_kch + x->n_pop == 0 &&
        (!W.expect_children || (x->unsampled && !(W.expect_children & NCS_EV_PROXY_OP)))) {
      /* nothing NCCL reports can run under it with this event mask */
      emit_complete(x, NCS_CF_NO_CHILDREN);
      trk_remove(x);
      return;
    }
    maybe_complete(x, 0, 0);
    return;
  }
  uint64_t parent = x->parent, gpu_stop = x->gpu_stop;
  trk_remove(x);
  if (!parent) return;
  trk_t *p = trk_find(parent);
  if (!p) return;
  if (p->n_open) p->n_open--;
  if (e->ts > p->end_ns) p->end_ns = e->ts;
  if (e->ts > p->last_ns) p->last_ns = e->ts;
  if (t == NCS_T_KERNEL_CH && gpu_stop > p->gpu_stop) p->gpu_stop = gpu_stop;
  maybe_complete(p, 0, 0);
}

/* A member of a kernel plan with no children of its own: NCCL reports nothing for it (a
 * send/recv to itself, for one), but it ran in the same kernel as its Group's other members. */
static void complete_from_group(trk_t *e) {
  const trk_t *g = grp_find(e->group);
  e->end_ns = g->end_ns, e->first_child_ns = g->first_child_ns;
  e->gpu_start = g->gpu_start, e->gpu_stop = g->gpu_stop;
  emit_complete(e, NCS_CF_GROUP);
}

/* Periodic pass: final completions after the grace period, expiry, and cleanup. With
 * `flush` everything still open is closed (end of segment). */
static void sweep(int flush) {
  uint64_t now = ncs_mono_ns();
  uint64_t expire = (uint64_t)ncs_g.cfg.expire_ms * 1000000ull;
  if (flush && W.flight) { /* what is closed below without a completion was open at the end */
    uint32_t open = 0;
    for (uint32_t i = 0; i < W.trk_cap; i++) {
      const trk_t *e = &W.trk[i];
      open += e->id && !e->agg && is_parent(e->type) && e->seen_start && (!e->stopped || e->n_open);
    }
    ncs_fl_open_at_end(open);
  }
  if (flush) /* parents with children first, so their Groups are known to childless members */
    for (uint32_t i = 0; i < W.trk_cap; i++) {
      trk_t *e = &W.trk[i];
      if (!e->id || e->agg || is_child(e->type) || !e->seen_start || !(e->n_kch + e->n_pop))
        continue;
      if (e->emitted && !e->revise) continue;
      if (e->n_open || !e->stopped) e->forced = 1;
      emit_complete(e, 0);
    }
  for (uint32_t i = 0; i < W.trk_cap; i++) {
    trk_t *e = &W.trk[i];
    if (!e->id) continue;
    int again = 0;
    if (e->agg) {
      /* flush: group entries go last, after the members that may still need them */
      if (!flush && older_than(now, e->emitted_ns, LINGER_NS)) {
        trk_remove(e);
        again = 1;
      }
    } else if (is_child(e->type)) {
      if (flush || older_than(now, e->start_ns, expire)) {
        emit_expired(e->id, e->type, flush ? NCS_XR_FLUSH : NCS_XR_TIMEOUT, e->start_ns);
        trk_t *p = e->parent ? trk_find(e->parent) : NULL;
        if (p) {
          if (p->n_open) p->n_open--;
          p->forced = 1;
        }
        trk_remove(e);
        again = 1;
      }
    } else {
      int kids = e->n_kch + e->n_pop;
      if (!e->seen_start) {
        /* a placeholder whose START never came (dropped): completions cannot be attributed */
        if (flush || older_than(now, e->start_ns, expire)) {
          trk_remove(e);
          again = 1;
        }
      } else if (flush) {
        if (!e->stopped) emit_expired(e->id, e->type, NCS_XR_FLUSH, e->start_ns);
        if (kids && (!e->emitted || e->revise)) {
          if (e->n_open || !e->stopped) e->forced = 1;
          emit_complete(e, 0);
        } else if (!kids && e->stopped && !e->emitted) {
          if (grp_find(e->group))
            complete_from_group(e);
          else
            emit_complete(e, NCS_CF_NO_CHILDREN);
        }
        trk_remove(e);
        again = 1;
      } else if (!kids && e->stopped && !e->emitted && older_than(now, e->last_ns, GRACE_NS) &&
                 grp_find(e->group)) {
        complete_from_group(e);
        trk_remove(e);
        again = 1;
      } else {
        /* quiet until the drain began, not until now: a child recorded on another thread just
           before the drain is read by it even when that thread's block came first (NCCL 2.31
           reports KernelCh on a profiler thread, ProxyOps on the proxy thread) */
        maybe_complete(e, 1, W.drain_ns ? W.drain_ns : now);
        int done_lingering = e->emitted && !e->revise && older_than(now, e->emitted_ns, LINGER_NS);
        int stale = older_than(now, e->start_ns, expire);
        if (done_lingering) {
          trk_remove(e);
          again = 1;
        } else if (stale) {
          if (!e->stopped) {
            emit_expired(e->id, e->type, NCS_XR_TIMEOUT, e->start_ns);
          } else if (kids) {
            e->forced = 1;
            emit_complete(e, 0);
          } else {
            emit_complete(e, NCS_CF_NO_CHILDREN | NCS_CF_FORCED);
          }
          trk_remove(e);
          again = 1;
        }
      }
    }
    if (again) i--; /* backward shift may have moved another entry into slot i */
  }
  if (flush) /* the group entries, now that no member needs them */
    for (uint32_t i = 0; i < W.trk_cap; i++)
      if (W.trk[i].id && W.trk[i].agg) {
        trk_remove(&W.trk[i]);
        i--;
      }
  W.last_sweep_ns = now;
}

/* ------------------------------------------------------------------ records */

static void decode_ctx(uint64_t raw, int pxn, ncs_event_t *e) {
  e->ctx = raw;
  if (!raw) {
    e->ctx_kind = NCS_CTX_NONE;
    W.null_ctx++;
    return;
  }
  if ((raw >> 56) == NCS_CH_TAG) {
    uint32_t pid = (uint32_t)(raw >> 32) & 0xFFFFFF, idx = raw & 0xFFFFFF;
    unsigned epoch = (raw >> 24) & 0xFF;
    int ours = pid == ((uint32_t)ncs_g.pid & 0xFFFFFF);
    if (ours && !pxn && epoch == (atomic_load(&ncs_g.epoch) & 0xFF) && idx < atomic_load(&ncs_g.ncomms)) {
      e->ctx_kind = NCS_CTX_LOCAL;
      e->ctx = idx;
      return;
    }
    if (!ours) {
      e->ctx_kind = NCS_CTX_FOREIGN;
      e->ctx = ((uint64_t)pid << 16) | (idx & 0xFFFF);
      W.foreign_ctx++;
      return;
    }
  }
  e->ctx_kind = NCS_CTX_INVALID;
  W.foreign_ctx += pxn;
}

static void decode_ref(uint64_t raw, int pxn, uint8_t *kind, uint64_t *val) {
  *val = raw;
  if (!raw)
    *kind = NCS_REF_NONE;
  else if (pxn || (raw >> 56) != NCS_EH_TAG)
    *kind = NCS_REF_FOREIGN; /* never dereferenced, only recorded */
  else if (((raw >> 44) & 0xFF) != (atomic_load(&ncs_g.epoch) & 0xFF) ||
           (raw & NCS_ID_MASK) < ncs_g.id_base || (raw & NCS_ID_MASK) >= atomic_load(&ncs_g.id_counter))
    *kind = NCS_REF_STALE;
  else {
    *kind = NCS_REF_LOCAL;
    *val = raw & NCS_ID_MASK;
  }
}

/* A STOP/STATE from the fast path was checked only for our tag and this segment's epoch: its type
 * and id must still be ones this load issued (a stale handle of an earlier load can match the
 * 8-bit epoch). Counted like the slow path's bad and stale handles; capture mode keeps the call
 * as a BADCALL so that a replay makes it too. */
static int end_ok(ncs_event_t *e, uint64_t hdr, const uint64_t *w) {
  uint64_t ctr = atomic_load_explicit(&ncs_g.id_counter, memory_order_relaxed);
  int bad = e->type >= NCS_T_COUNT, stale = !bad && (e->id < ncs_g.id_base || e->id >= ctr);
  if (!bad && !stale) return 1;
  if (bad) W.bad_end++; else W.stale_end++;
  if (ncs_g.cfg.capture) {
    e->kind = NCS_REC_BADCALL;
    e->flags = (hdr & 0xFF) == NCS_REC_STOP ? NCS_BC_STOP : NCS_BC_STATE;
    e->state = e->flags == NCS_BC_STATE ? (uint32_t)(hdr >> 32) : 0;
    e->arg0 = e->flags == NCS_BC_STATE ? w[3] : 0;
    e->arg1 = e->flags == NCS_BC_STATE ? w[4] : 0;
    e->id = ncs_eh_make(e->type, atomic_load(&ncs_g.epoch), e->id); /* the raw handle */
    if (bad) e->type = 0;
    emit(e);
  }
  return 0;
}

/* Live metrics: an API call's start is the arrival of the operation under it; a Coll/P2p gets its
 * series, settled when it leaves the table (mx_settle). One the table had no room for was closed
 * as evicted at once: it is settled at once, without an execution time. */
static void mx_start(const ncs_event_t *e, const uint64_t *raw, trk_t *p) {
  if (e->type == NCS_T_COLL_API || e->type == NCS_T_P2P_API) {
    ncs_mx_api(e);
  } else if (is_parent(e->type)) {
    uint64_t bytes;
    double bus;
    uint32_t s = ncs_mx_op(e, raw, &bytes, &bus);
    if (!p) {
      ncs_mx_settle(s, bytes, bus, NCS_MX_ENQUEUE_HOST, 0);
    } else {
      p->mx = s, p->mx_bytes = bytes, p->mx_bus = bus;
    }
  }
}

static void process(const uint64_t *w, uint64_t hdr, uint32_t thread) {
  if ((hdr & 0xFF) == NCS_RAW_GPU) { /* a kernel launch or graph record of GPU truth */
    ncs_gpu_raw(w, hdr, thread, to_ns(w[1]));
    return;
  }
  if ((hdr & 0xFF) == NCS_RAW_RANGE) { /* a user range's push, pop, start, end or mark */
    ncs_range_raw(w, hdr, thread, to_ns(w[1]));
    return;
  }
  ncs_event_t e;
  e.kind = (uint8_t)(hdr & 0xFF);
  e.type = (uint8_t)((hdr >> 8) & 0xFF);
  e.thread = thread;
  e.ts = to_ns(w[1]);
  e.id = w[2];
  if (e.ts > W.last_ev_ns) W.last_ev_ns = e.ts;
  if ((e.kind == NCS_REC_STOP || e.kind == NCS_REC_STATE) && !end_ok(&e, hdr, w)) return;
  if (e.type >= NCS_T_COUNT) return;
  switch (e.kind) {
  case NCS_REC_START: {
    uint32_t flags = (uint32_t)(hdr >> 24) & 0xFF;
    int pxn = (flags & NCS_SF_PXN) != 0;
    e.flags = flags;
    e.rank = (int32_t)(uint32_t)(hdr >> 32);
    decode_ctx(w[3], pxn, &e);
    decode_ref(w[4], pxn, &e.parent_kind, &e.parent);
    const ncs_schema_t *s = &ncs_schema[e.type];
    e.nfields = s->nfields;
    const uint64_t *f = w + NCS_START_WORDS;
    for (unsigned i = 0; i < s->nfields; i++) {
      switch (s->fields[i].kind) {
      case NCS_FK_STR: e.f[i] = intern((const void *)(uintptr_t)f[i]); break;
      case NCS_FK_REF: decode_ref(f[i], pxn, &e.fref_kind[i], &e.f[i]); break;
      default: e.f[i] = f[i];
      }
    }
    W.starts[e.type]++;
    emit(&e);
    trk_t *p = track_start(&e);
    if (ncs_mx_active) mx_start(&e, f, p);
    break;
  }
  case NCS_REC_STOP:
    W.stops[e.type]++;
    emit(&e);
    track_stop(&e);
    break;
  case NCS_REC_BADCALL:
    e.flags = (uint32_t)(hdr >> 24) & 0xFF;
    e.state = (uint32_t)(hdr >> 32);
    e.arg0 = w[3];
    e.arg1 = w[4];
    emit(&e);
    break;
  case NCS_REC_STATE:
    e.state = (uint32_t)(hdr >> 32);
    if (e.state >= NCS_NSTATES) W.unknown_state++;
    e.arg0 = w[3];
    e.arg1 = w[4];
    /* ProxyCtrl's argument is an int in an 8-byte union: drop the undefined upper half */
    if (e.state >= NCS_ST_PROXY_CTRL_IDLE && e.state <= NCS_ST_PROXY_CTRL_APPEND_END)
      e.arg0 = (uint64_t)(uint32_t)e.arg0;
    W.states[e.type]++;
    emit(&e);
    track_state(&e);
    break;
  default: break;
  }
}

static void announce_thread(ncs_slot_t *s) {
  char path[64], name[64] = "";
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)s->tid);
  FILE *f = fopen(path, "r");
  if (f) {
    if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
    fclose(f);
  }
  ncs_enc_thread(&W.tmp, s->thread_index, (uint64_t)s->tid, name);
  small_chunk(NCS_CHUNK_THREAD);
  s->announced = s->thread_index + 1;
  W.threads_seen++;
}

/* Drain one slot's chain of blocks (core/ncs.h: a record is published by its header word, 0 =
 * nothing more yet; a block's last word is only ever a terminator). Returns records processed. */
static uint64_t drain_slot(ncs_slot_t *s) {
  uint64_t n = 0;
  if (!s->rd) s->rd = atomic_load_explicit(&s->first, memory_order_acquire);
  if (!s->rd) return 0; /* the thread has not had a block yet */
  for (;;) {
    ncs_block_t *b = s->rd;
    uint32_t lim = b->cap - 1;
    while (s->rdpos < lim) {
      const uint64_t *w = &b->words[s->rdpos];
      uint64_t hdr = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE);
      if (!hdr) break;
      uint32_t nw = (uint32_t)(hdr >> 16) & 0xFF;
      if (nw < 3 || s->rdpos + nw > lim) { /* cannot happen with a sane producer; skip block */
        s->rdpos = lim;
        break;
      }
      process(w, hdr, s->thread_index);
      s->rdpos += nw;
      n++;
    }
    ncs_block_t *nx = atomic_load_explicit(&b->next, memory_order_acquire);
    if (!nx) break;
    /* the producer moved on, after publishing everything it wrote here: read what the loop may
     * have missed before leaving the block */
    if (s->rdpos < lim && __atomic_load_n(&b->words[s->rdpos], __ATOMIC_ACQUIRE)) continue;
    s->rd = nx;
    s->rdpos = 0;
    ncs_block_push(b);
  }
  return n;
}

/* The slot's thread exited and everything it published has been read. */
static int slot_drained(const ncs_slot_t *s) {
  const ncs_block_t *b = s->rd;
  return !b || (!atomic_load_explicit(&b->next, memory_order_acquire) &&
                (s->rdpos >= b->cap - 1 || !__atomic_load_n(&b->words[s->rdpos], __ATOMIC_ACQUIRE)));
}

static uint64_t drain_all(void) {
  uint64_t n = 0;
  W.drain_ns = ncs_mono_ns();
  for (uint32_t i = 0; i < ncs_g.nslots; i++) {
    ncs_slot_t *s = &ncs_g.slots[i];
    int st = atomic_load_explicit(&s->state, memory_order_acquire);
    if (st != NCS_SLOT_ACTIVE && st != NCS_SLOT_EXITED) continue;
    if (i >= W.slots_used) W.slots_used = i + 1; /* seen before it can be freed: loss_counters */
    if (s->announced != s->thread_index + 1) announce_thread(s);
    n += drain_slot(s);
    if (st == NCS_SLOT_EXITED && slot_drained(s)) {
      if (s->rd) ncs_block_push(s->rd);
      s->rd = NULL;
      s->rdpos = 0;
      atomic_store_explicit(&s->first, NULL, memory_order_relaxed);
      atomic_store_explicit(&s->state, NCS_SLOT_FREE, memory_order_release);
    }
  }
  return n;
}

/* COMM chunks for new communicators and COMM_END for finalized ones. flush_events calls it with
 * ends = 0 before each EVENTS chunk: a reader must meet a communicator before any event of it,
 * and a busy new communicator can fill an EVENTS chunk before the next housekeeping pass (seen
 * with 64 ranks per process and every event on: report lost 4% of the collectives). */
static void publish_comms(int ends) {
  uint32_t n = atomic_load(&ncs_g.ncomms);
  for (uint32_t i = 0; i < n; i++) {
    ncs_comm_t *c = &ncs_g.comms[i];
    int st = atomic_load(&c->state), pub = atomic_load(&c->published);
    if (st == NCS_COMM_FREE) continue;
    if (pub == 0) {
      ncs_comm_info_t ci = {.index = i, .comm_id = c->comm_id, .name = c->name, .nranks = c->nranks,
                            .nnodes = c->nnodes, .rank = c->rank, .abi_version = (uint32_t)c->abi,
                            .init_ns = to_ns(c->init_tsc), .mask = c->mask,
                            .device = c->device, .bus_id = c->bus_id};
      ncs_enc_comm(&W.tmp, &ci);
      small_chunk(NCS_CHUNK_COMM);
      atomic_store(&c->published, pub = 1);
    }
    if (ends && st == NCS_COMM_DONE && pub == 1) {
      ncs_enc_comm_end(&W.tmp, i, to_ns(c->fini_tsc));
      small_chunk(NCS_CHUNK_COMM_END);
      atomic_store(&c->published, 2);
    }
  }
}

/* ------------------------------------------------------------------ counters */

typedef struct {
  uint64_t bad, stale, null, disabled, unk_type, unk_state, groups, groups_unsampled;
} prod_t;

static void producer_counters(prod_t *p) {
  memset(p, 0, sizeof *p);
  for (uint32_t i = 0; i < ncs_g.nslots; i++) {
    ncs_slot_t *s = &ncs_g.slots[i];
    p->bad += atomic_load_explicit(&s->bad_handle, memory_order_relaxed);
    p->stale += atomic_load_explicit(&s->stale_handle, memory_order_relaxed);
    p->null += atomic_load_explicit(&s->null_handle, memory_order_relaxed);
    p->disabled += atomic_load_explicit(&s->disabled, memory_order_relaxed);
    p->unk_type += atomic_load_explicit(&s->unknown_type, memory_order_relaxed);
    p->unk_state += atomic_load_explicit(&s->unknown_state, memory_order_relaxed);
    p->groups += atomic_load_explicit(&s->groups, memory_order_relaxed);
    p->groups_unsampled += atomic_load_explicit(&s->groups_unsampled, memory_order_relaxed);
  }
}

static void counters_base(void) {
  prod_t p;
  producer_counters(&p);
  W.base_bad = p.bad, W.base_stale = p.stale, W.base_null = p.null;
  W.base_disabled = p.disabled, W.base_unk_type = p.unk_type, W.base_unk_state = p.unk_state;
  W.base_groups = p.groups, W.base_groups_unsampled = p.groups_unsampled;
  W.base_untracked = atomic_load(&ncs_g.comms_untracked);
}

static void put(ncs_counters_t *c, uint32_t k, uint64_t v) {
  if (c->nkeys < 512) c->keys[c->nkeys] = k, c->values[c->nkeys++] = v;
}

static void write_counters(uint16_t type) {
  static ncs_counters_t c;
  prod_t p;
  producer_counters(&p);
  /* drops from the loss windows' last reading (this cycle's): the LOSS records and the counters
   * agree exactly, whatever producers drop in between */
  const loss_w_t *drops = &W.loss[NCS_LOSS_DROPS - 1], *noslot = &W.loss[NCS_LOSS_NO_SLOT - 1];
  uint64_t nslot = 0;
  c.nkeys = 0;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    put(&c, NCS_CK_STARTS | t, W.starts[t]);
    put(&c, NCS_CK_STOPS | t, W.stops[t]);
    put(&c, NCS_CK_STATES | t, W.states[t]);
    put(&c, NCS_CK_DROPS | t, drops->prev[t] - drops->base[t]); /* pool full; no slot: below */
    nslot += noslot->prev[t] - noslot->base[t];
    put(&c, NCS_CK_EXPIRED | t, W.expired[t]);
  }
  put(&c, NCS_CK_BAD_HANDLE, p.bad - W.base_bad + W.bad_end);
  put(&c, NCS_CK_STALE_HANDLE, p.stale - W.base_stale + W.stale_end);
  put(&c, NCS_CK_NULL_HANDLE, p.null - W.base_null);
  put(&c, NCS_CK_FOREIGN_CTX, W.foreign_ctx);
  put(&c, NCS_CK_NULL_CTX, W.null_ctx);
  put(&c, NCS_CK_NO_THREAD_SLOT, nslot); /* by type: the LOSS records */
  put(&c, NCS_CK_COMPLETIONS, W.completions);
  put(&c, NCS_CK_REVISIONS, W.revisions);
  put(&c, NCS_CK_CHUNKS, W.chunks);
  put(&c, NCS_CK_THREADS, W.threads_seen);
  put(&c, NCS_CK_UNKNOWN_TYPE, p.unk_type - W.base_unk_type);
  put(&c, NCS_CK_UNKNOWN_STATE, p.unk_state - W.base_unk_state + W.unknown_state);
  put(&c, NCS_CK_POOL_BYTES, ncs_g.pool_len);
  put(&c, NCS_CK_POOL_PEAK, (uint64_t)atomic_load(&ncs_g.blocks_peak) * NCS_BLOCK_BYTES);
  put(&c, NCS_CK_END_NS, ncs_mono_ns());
  put(&c, NCS_CK_TRACKED_PEAK, W.trk_peak);
  put(&c, NCS_CK_WRITE_ERRORS, W.write_errors);
  put(&c, NCS_CK_DISABLED_TYPE, p.disabled - W.base_disabled);
  put(&c, NCS_CK_GROUPS, p.groups - W.base_groups);
  put(&c, NCS_CK_GROUPS_UNSAMPLED, p.groups_unsampled - W.base_groups_unsampled);
  put(&c, NCS_CK_WRITE_LOST, W.write_lost);
  put(&c, NCS_CK_COMMS_UNTRACKED, atomic_load(&ncs_g.comms_untracked) - W.base_untracked);
  put(&c, NCS_CK_EVICTED, W.evicted);
  put(&c, NCS_CK_MAX_COMMS, ncs_g.cfg.max_comms);
  put(&c, NCS_CK_TRACK_MAX, W.trk_cap);
  put(&c, NCS_CK_BYTES, W.bytes); /* last: includes everything before this chunk */
  ncs_enc_counters(&W.tmp, &c);
  small_chunk(type);
}

/* ------------------------------------------------------------------ segment */

static int open_file(void) {
  const char *dir = ncs_g.cfg.dir;
  /* mkdir -p */
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    mkdir(tmp, 0755);
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
    ncs_log(NCS_LOG_WARN, "cannot create NCCLSCOPE_DIR=%s: %s; profiling disabled", dir, strerror(errno));
    return -1;
  }
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  host[strcspn(host, "/")] = 0;
  if (ncs_g.cfg.flight) {
    char why[1500];
    if (ncs_fl_open(dir, host, ncs_g.cfg.flight_bytes, ncs_g.cfg.flight_ops, ncs_g.cfg.max_comms,
                    W.path, sizeof W.path, why, sizeof why) != 0) {
      ncs_log(NCS_LOG_WARN, "flight recorder: %s; profiling disabled", why);
      return -1;
    }
    W.flight = 1;
    return 0;
  }
  int n = snprintf(W.path, sizeof W.path, "%.1023s/%.100s-%d%s", dir, host, (int)ncs_g.pid,
                   NCS_TRACE_SUFFIX);
  if (n < 0 || (size_t)n >= sizeof W.path) {
    ncs_log(NCS_LOG_WARN, "trace path too long under NCCLSCOPE_DIR=%s; profiling disabled", dir);
    return -1;
  }
  W.fd = open(W.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (W.fd < 0) {
    ncs_log(NCS_LOG_WARN, "cannot open %s: %s; profiling disabled", W.path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(W.fd, &st) != 0) {
    ncs_log(NCS_LOG_WARN, "cannot stat %s: %s; profiling disabled", W.path, strerror(errno));
    close(W.fd);
    W.fd = -1;
    return -1;
  }
  /* appends go after what an earlier load of the plugin in this process wrote; a new file gets
   * its header with the first chunk (through the backlog, so a full disk is handled alike) */
  W.good_end = (uint64_t)st.st_size;
  if (st.st_size == 0) {
    uint8_t h[NCS_FILE_HEADER_LEN];
    ncs_file_header(h);
    ncs_buf_bytes(&W.backlog, h, sizeof h);
    W.backlog_hdr = sizeof h;
  }
  return 0;
}

static void read_cmdline(char *out, size_t n) {
  out[0] = 0;
  FILE *f = fopen("/proc/self/cmdline", "r");
  if (!f) return;
  size_t len = fread(out, 1, n - 1, f);
  fclose(f);
  out[len] = 0;
  for (size_t i = 0; i + 1 < len; i++)
    if (!out[i]) out[i] = ' ';
}

static void segment_begin(void) {
  static char cmd[1025];
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  read_cmdline(cmd, sizeof cmd);
  ncs_segment_info_t s = {.format_version = NCS_FORMAT_VERSION, .plugin_version = NCS_VERSION,
                          .host = host, .pid = (uint64_t)ncs_g.pid,
                          .epoch = atomic_load(&ncs_g.epoch) & 0xFF, .mode = (uint32_t)ncs_g.cfg.mode,
                          .mask = ncs_g.cfg.events, .start_realtime_ns = ncs_realtime_ns(),
                          .start_mono_ns = ncs_mono_ns(), .cmdline = cmd,
                          .pool_bytes = ncs_g.pool_len};
  ncs_enc_segment(&W.tmp, &s);
  small_chunk(NCS_CHUNK_SEGMENT);
  ncs_enc_clock(&W.tmp, s.start_mono_ns, s.start_realtime_ns);
  small_chunk(NCS_CHUNK_CLOCK);
  W.pair_mono = s.start_mono_ns;
  ncs_gpu_segment_begin(); /* GPU_STATE: whether kernel times come from CUPTI, and why (not) */
  ncs_range_segment_begin(); /* RANGE_STATE: where NVTX points, metrics; ranges still open */
}

static void mx_publish(int final);
static void housekeeping(int final) {
  uint64_t now = ncs_mono_ns();
  clock_refresh();
  loss_cycle(0);
  publish_comms(1);
  if (final || now - W.last_sweep_ns > SWEEP_NS) sweep(final);
  if (final || now - W.last_flush_ns >= (uint64_t)ncs_g.cfg.flush_ms * 1000000ull) flush_events();
  if (now - W.last_clock_ns > CLOCK_NS) {
    flush_events(); /* keep chunks in time order around the clock pair */
    /* read the pair now, between two monotonic reads, the tightest of a few tries: `now` is from
     * before the flushes, which can take long on a loaded machine (a pair 0.9 s apart was seen
     * at load 200), and the spread of the pairs is the report's clock error bound */
    uint64_t bm = 0, brt = 0, bw = UINT64_MAX;
    for (int k = 0; k < 4 && bw > 20000; k++) {
      uint64_t m1 = ncs_mono_ns(), rt = ncs_realtime_ns(), m2 = ncs_mono_ns();
      if (m2 - m1 < bw) bw = m2 - m1, bm = m1 + (m2 - m1) / 2, brt = rt;
    }
    /* a pair no later than the last one adds nothing, and an equal one would be a byte-for-byte
     * copy of an earlier chunk, which the reader calls damage: a host clock does not go back, but
     * nccl-sim's model clock (NCCLSCOPE_CLOCK=sim) is the frontier of its activities, which can */
    if (bm > W.pair_mono) {
      ncs_enc_clock(&W.tmp, bm, brt);
      small_chunk(NCS_CHUNK_CLOCK);
      W.pair_mono = bm;
    }
    W.last_clock_ns = now;
  }
  if (!final && now - W.last_counters_ns > COUNTERS_NS) {
    write_counters(NCS_CHUNK_COUNTERS);
    W.last_counters_ns = now;
  }
  if (W.flight && !final) {
    char trig[128];
    uint64_t treal;
    int why = ncs_fl_poll(trig, sizeof trig, &treal);
    if (why) { /* everything recorded so far goes into the mapping, then it is copied */
      ncs_gpu_flush(0); /* what CUPTI has completed goes in too */
      ncs_gpu_collect();
      drain_all();
      ncs_gpu_cycle(1);
      ncs_range_cycle(1);
      sweep(0);
      flush_events();
      write_counters(NCS_CHUNK_COUNTERS);
      if (ncs_fl_dump(why, trig, treal) == 0 && why > 0 && why < 5) W.fl_dumps[why]++;
    }
  }
  if (ncs_mx_active && ncs_mx_due(now)) mx_publish(0);
}

/* ------------------------------------------------------------------ live metrics */

/* What only the writer knows, for a metrics snapshot: its counters (per segment, as the footer's)
 * and the watchdog's view. The open operations are counted by a pass over the table, once a
 * second at most. */
static void mx_publish(int final) {
  ncs_mx_proc_t p;
  prod_t q;
  memset(&p, 0, sizeof p);
  producer_counters(&q);
  p.mono_ns = ncs_mono_ns();
  p.real_ns = ncs_realtime_ns();
  memcpy(p.starts, W.starts, sizeof p.starts);
  memcpy(p.stops, W.stops, sizeof p.stops);
  memcpy(p.states, W.states, sizeof p.states);
  memcpy(p.expired, W.expired, sizeof p.expired);
  p.bad_handles = q.bad - W.base_bad + W.bad_end;
  p.stale_handles = q.stale - W.base_stale + W.stale_end;
  p.null_handles = q.null - W.base_null;
  p.groups = q.groups - W.base_groups;
  p.groups_unsampled = q.groups_unsampled - W.base_groups_unsampled;
  p.revisions = W.revisions;
  p.pool_bytes = ncs_g.pool_len;
  p.pool_used = (uint64_t)atomic_load(&ncs_g.blocks_in_use) * NCS_BLOCK_BYTES;
  p.pool_peak = (uint64_t)atomic_load(&ncs_g.blocks_peak) * NCS_BLOCK_BYTES;
  p.tracked = W.trk_n;
  p.trace_bytes = W.bytes;
  p.write_errors = W.write_errors;
  for (uint32_t i = 0; i < W.trk_cap && W.trk_n; i++) {
    const trk_t *e = &W.trk[i];
    if (!e->id || e->agg || !is_parent(e->type) || !e->seen_start || e->emitted) continue;
    p.open_ops++;
    if (!p.oldest_open_ns || e->start_ns < p.oldest_open_ns) p.oldest_open_ns = e->start_ns;
  }
  p.last_event_ns = W.last_ev_ns;
  memcpy(p.dumps, W.fl_dumps, sizeof p.dumps);
  p.watchdog_s = ncs_g.cfg.watchdog_s;
  p.events = ncs_g.cfg.events;
  p.mode = ncs_g.cfg.mode;
  ncs_mx_publish(&p, final);
}

/* The end of a segment: a write outage that never ended is told once more, with its toll. */
static void io_end(void) {
  if (W.fd < 0 || !(W.io_failed || W.backlog.len || W.torn)) return;
  if (W.torn && ftruncate(W.fd, (off_t)W.good_end) == 0) W.torn = 0;
  ncs_log(NCS_LOG_WARN,
          "writing %s failed until the end (%s, for %.1f s): %llu chunks with %llu event records "
          "could not be written%s; the file ends with its last complete chunk%s",
          W.path, strerror(W.io_err), (double)(ncs_mono_ns() - W.io_fail_ns) / 1e9,
          (unsigned long long)(W.io_lost_chunks + W.backlog_chunks),
          (unsigned long long)W.io_lost_records,
          W.backlog_chunks ? ", nor the end of the segment (its loss records and footer)" : "",
          W.torn ? ", followed by a torn one that could not be cut off" : "");
  W.write_errors += W.backlog_chunks;
}

static void *writer_main(void *arg) {
  (void)arg;
  unsigned idle_us = 500;
  /* before the first drain, off NCCL's threads: the page faults of the pool's first blocks, which
   * the threads would otherwise take in their first thousand operations, and of the table of open
   * events (writer-owned; its inserts land all over it), which this thread would take while
   * draining them (docs/benchmarks.md, "The first operations") */
  ncs_pool_prefault();
  if (ncs_prefault(W.trk, (size_t)W.trk_cap * sizeof *W.trk) != 0) {
    volatile char *t = (volatile char *)W.trk; /* an older kernel: touch each page (all zero) */
    for (size_t o = 0; o < (size_t)W.trk_cap * sizeof *W.trk; o += 4096) t[o] = 0;
  }
  while (!atomic_load_explicit(&ncs_g.writer_stop, memory_order_acquire)) {
    ncs_gpu_collect(); /* before the drain: the launches of these kernels are in the blocks */
    uint64_t n = drain_all();
    ncs_gpu_cycle(0);
    ncs_range_cycle(0);
    housekeeping(0);
    if (n) {
      idle_us = 500;
      /* Busy: pause anyway, unless the pool is filling up. Reading the header word a producer is
       * about to write pulls its cache line away, and the producer's next record then pays a
       * coherence miss (across sockets on a GPU server, about 100 ns). Draining every
       * BUSY_PAUSE_US lets a producer write thousands of records between two such reads. */
      if (atomic_load_explicit(&ncs_g.blocks_in_use, memory_order_relaxed) * 4u < ncs_g.nblocks) {
        struct timespec ts = {0, BUSY_PAUSE_US * 1000L};
        nanosleep(&ts, NULL);
      }
      continue;
    }
    struct timespec ts = {0, (long)idle_us * 1000};
    nanosleep(&ts, NULL);
    if (idle_us < 5000) idle_us *= 2;
  }
  /* final: everything the threads committed before the stop request, and what CUPTI has;
   * through a write outage, each of the last chunks gets a try (a few calls at most: then it is
   * over) */
  W.ending = 1;
  ncs_gpu_final_flush();
  while (drain_all()) {
  }
  housekeeping(1);
  flush_events();
  ncs_gpu_segment_end();
  ncs_range_segment_end();
  loss_cycle(1);
  write_counters(NCS_CHUNK_FOOTER);
  if (W.evicted)
    ncs_log(NCS_LOG_WARN, "NCCLSCOPE_TRACK_MAX=%u: %llu events of this segment had no room in the writer's "
            "table and got no completion", W.trk_cap, (unsigned long long)W.evicted);
  io_end();
  if (ncs_mx_active) mx_publish(1); /* everything is settled: the metrics' last word */
  return NULL;
}

static void writer_free(void) {
  free(W.trk);
  W.trk = NULL;
  ncs_buf_free(&W.ev);
  ncs_buf_free(&W.str);
  ncs_buf_free(&W.tmp);
  ncs_buf_free(&W.backlog);
  ncs_gpu_segment_free();
  ncs_range_segment_free();
}

int ncs_writer_start(void) {
  /* a new segment: comm indexes and handles of a previous segment of this load go stale */
  if (atomic_load(&ncs_g.live_comms) == 0) {
    if (atomic_fetch_add(&ncs_g.seg, 1) > 0) ncs_set_epoch((atomic_load(&ncs_g.epoch) + 1) & 0xFF);
    atomic_store(&ncs_g.ncomms, 0);
  }
  writer_free();
  memset(&W, 0, sizeof W);
  W.fd = -1;
  W.trk_cap = ncs_g.cfg.track_max;
  W.trk = calloc(W.trk_cap, sizeof(trk_t));
  if (!W.trk || ncs_buf_init(&W.ev, EV_BUF_BYTES) || ncs_buf_init(&W.str, STR_BUF_BYTES) ||
      ncs_buf_init(&W.tmp, 64 * 1024) || ncs_buf_init(&W.backlog, BACKLOG_BYTES) ||
      open_file() != 0) {
    if (!W.trk) ncs_log(NCS_LOG_WARN, "out of memory starting the writer; profiling disabled");
    writer_free(); /* no writer_stop will come for a writer that did not start */
    return -1;
  }
  W.expect_children = ncs_g.cfg.events & (NCS_EV_KERNEL_CH | NCS_EV_PROXY_OP);
  for (uint32_t i = 0; i < ncs_g.nslots; i++) ncs_g.slots[i].announced = 0;
  clock_setup();
  counters_base();
  segment_begin();
  loss_base(); /* after the segment's start time: a loss window never begins before it */
  W.last_clock_ns = W.last_flush_ns = W.last_counters_ns = W.last_sweep_ns = ncs_mono_ns();
  atomic_store(&ncs_g.writer_stop, 0);
  ncs_mx_begin();
  if (pthread_create(&ncs_g.writer, NULL, writer_main, NULL) != 0) {
    ncs_log(NCS_LOG_WARN, "cannot start the writer thread; profiling disabled");
    ncs_mx_end();
    if (W.fd >= 0) close(W.fd);
    W.fd = -1;
    if (W.flight) ncs_fl_close(0);
    W.flight = 0;
    writer_free();
    return -1;
  }
  ncs_g.writer_running = 1;
  ncs_log(NCS_LOG_INFO, "recording to %s (events 0x%x, buffer %zu bytes)", W.path,
          ncs_g.cfg.events, ncs_g.pool_len);
  return 0;
}

void ncs_writer_stop(void) {
  ncs_hwm_segment_end(); /* no range is measured after this: the last buffer is decoded now */
  atomic_store_explicit(&ncs_g.writer_stop, 1, memory_order_release);
  pthread_join(ncs_g.writer, NULL);
  ncs_g.writer_running = 0;
  ncs_hwm_release();
  ncs_gpu_release(); /* the segment is complete: CUPTI is free for others until the next one */
  ncs_mx_end(); /* the writer published the last snapshot: the outputs give it out, then go */
  /* close reports what the filesystem could not keep (NFS, a disk that failed late) */
  if (W.fd >= 0 && close(W.fd) != 0)
    ncs_log(NCS_LOG_WARN, "closing %s failed: %s; the end of the trace may be lost", W.path,
            strerror(errno));
  W.fd = -1;
  if (W.flight) ncs_fl_close(1); /* the live file says the process ended cleanly */
  W.flight = 0;
  writer_free();
}
