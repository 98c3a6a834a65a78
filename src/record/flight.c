/* flight.c - the flight recorder: NCCLSCOPE_MODE=flight (docs/flight.md).
 *
 * Runs on the writer thread only. The writer hands every chunk it would have appended to a trace
 * file to this module instead, which stores it in <dir>/<host>-<pid>.nsflight, a MAP_SHARED file
 * mapping laid out as in trace/flight.h: a meta region (strings, communicators, threads) and a
 * ring of slots that is reused oldest first. What the writer stored is in the kernel's page
 * cache, so it survives the process being killed.
 *
 * Every record the writer emits is also shown to ncs_fl_note, which keeps what a hang diagnosis
 * needs whatever the ring has forgotten: every open event of the API, Coll/P2p, ProxyOp, KernelCh
 * and ProxyStep types (START and its last STATE), and the last NCCLSCOPE_FLIGHT_OPS Coll/P2p of
 * every communicator (START, STOP, COMPLETE or EXPIRED). Each new slot starts with a keyframe
 * restating them, so the oldest retained slot reads on its own.
 *
 * Dumps copy the mapping to <dir>/dumps/<host>-<pid>-<n>.nsflight. They are requested by a
 * signal (flag set by the handler, acted on here), by the watchdog, by the trigger file
 * <dir>/ncclscope.dump, and the live file itself is finalized at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/ncs.h"
#include "gpu/gpu.h"
#include "range/range.h"
#include "record/flight.h"
#include "trace/encode.h"
#include "trace/flight.h"

#define FL_SLOT_BYTES (256u * 1024u)
#define FL_META_BYTES (2u << 20)
#define FL_POOL 4096   /* open events kept (besides the per-communicator operation rings) */
#define FL_HASH 16384  /* power of two, > 2 x (FL_POOL + ring entries likely open) */
#define FL_RING_BUDGET (8u << 20) /* bytes for all per-communicator operation rings */
#define FL_TRIGGER_POLL_NS 200000000ull
#define FL_MAX_DUMPS 64

typedef struct {
  uint64_t id, ts, ctx, parent;
  int32_t rank;
  uint32_t flags, thread;
  uint8_t type, ctx_kind, parent_kind, nfields;
  uint64_t f[NCS_MAX_FIELDS];
  uint8_t fref[NCS_MAX_FIELDS];
  /* what happened since */
  uint8_t used, stopped, has_state, done; /* done: 1 COMPLETE, 2 EXPIRED */
  uint32_t state, reason;
  uint64_t stop_ts, state_ts, arg0, arg1;
  uint32_t cflags, n_kch, n_pop, n_open;
  uint64_t end_ns, first_child_ns, gpu_start, gpu_stop, xstart;
  uint32_t comm;   /* ring owner (comm index + 1), 0 for the pool */
} kept_t;

typedef struct {
  uint64_t id; /* 0 empty */
  kept_t *k;
} href_t;

typedef struct {
  kept_t *ops; /* ring of nops */
  uint32_t head, n;
} ring_t;

static struct {
  int on;
  int fd;
  uint8_t *map;
  size_t len;
  ncs_flight_hdr_t *h;
  char path[1280], dir[1024], host[128], trig_path[1300];
  uint32_t cur; /* current slot index */
  ncs_flight_slot_t *slot;
  uint32_t slot_cap;
  /* kept state */
  kept_t pool[FL_POOL];
  uint32_t free_[FL_POOL], nfree;
  href_t hash[FL_HASH];
  uint32_t nhash;
  ring_t *rings;
  uint32_t nrings, nops, rings_max;
  uint64_t unkept;
  /* keyframe encoding */
  ncs_buf_t kf, gkf; /* gkf: the other subsystems' parts (GPU truth, ranges), one at a time */
  /* triggers */
  uint64_t last_event, last_poll, fired_at;
  struct timespec trig_mtime;
  int trig_seen;
  uint32_t dumps;
  uint32_t open_at_end; /* operations the writer had to close without a completion at the end */
  /* loss windows: the header entry of each reason's open window, index + 1 */
  uint32_t loss_open[NCS_LOSS_MAX];
} F;

/* ------------------------------------------------------------------ signal */

static _Atomic int fl_signal_flag;
static struct sigaction fl_old_sa;
static int fl_sig; /* installed signal, 0 none */

static void fl_handler(int sig, siginfo_t *si, void *uc) {
  atomic_store_explicit(&fl_signal_flag, 1, memory_order_relaxed);
  /* chain to the application's handler; its default action (terminate for SIGUSR1) is not
   * taken, which is the point of installing ours */
  if (fl_old_sa.sa_flags & SA_SIGINFO) {
    if (fl_old_sa.sa_sigaction) fl_old_sa.sa_sigaction(sig, si, uc);
  } else if (fl_old_sa.sa_handler != SIG_DFL && fl_old_sa.sa_handler != SIG_IGN) {
    fl_old_sa.sa_handler(sig);
  }
}

void ncs_fl_signal_install(int sig) {
  if (fl_sig || sig <= 0) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fl_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, &fl_old_sa) == 0) fl_sig = sig;
}

void ncs_fl_signal_remove(void) {
  if (!fl_sig) return;
  struct sigaction cur;
  /* put the application's handler back only if ours is still the one installed */
  if (sigaction(fl_sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fl_handler)
    sigaction(fl_sig, &fl_old_sa, NULL);
  fl_sig = 0;
}

/* ------------------------------------------------------------------ kept events */

static inline uint32_t hslot(uint64_t id) {
  return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & (FL_HASH - 1);
}

static href_t *h_find(uint64_t id) {
  for (uint32_t i = hslot(id), n = 0; n < FL_HASH; n++, i = (i + 1) & (FL_HASH - 1)) {
    if (F.hash[i].id == id) return &F.hash[i];
    if (!F.hash[i].id) return NULL;
  }
  return NULL;
}

static int h_put(uint64_t id, kept_t *k) {
  if (F.nhash + 1 > FL_HASH * 3 / 4) return -1;
  uint32_t i = hslot(id);
  while (F.hash[i].id && F.hash[i].id != id) i = (i + 1) & (FL_HASH - 1);
  if (!F.hash[i].id) F.nhash++;
  F.hash[i].id = id, F.hash[i].k = k;
  return 0;
}

static void h_del(href_t *e) {
  uint32_t i = (uint32_t)(e - F.hash);
  F.hash[i].id = 0;
  F.nhash--;
  for (uint32_t j = (i + 1) & (FL_HASH - 1); F.hash[j].id; j = (j + 1) & (FL_HASH - 1)) {
    uint32_t h = hslot(F.hash[j].id);
    if (ncs_probe_moves(i, j, h)) {
      F.hash[i] = F.hash[j];
      F.hash[j].id = 0;
      i = j;
    }
  }
}

static kept_t *pool_get(void) {
  if (!F.nfree) return NULL;
  kept_t *k = &F.pool[F.free_[--F.nfree]];
  memset(k, 0, sizeof *k);
  k->used = 1;
  return k;
}

static void pool_put(kept_t *k) {
  if (k >= F.pool && k < F.pool + FL_POOL) {
    k->used = 0;
    F.free_[F.nfree++] = (uint32_t)(k - F.pool);
  }
}

static int kept_type(unsigned t) {
  return t == NCS_T_COLL || t == NCS_T_P2P || t == NCS_T_PROXY_OP || t == NCS_T_PROXY_STEP ||
         t == NCS_T_KERNEL_CH || t == NCS_T_GROUP_API || t == NCS_T_COLL_API || t == NCS_T_P2P_API;
}

static ring_t *ring_of(const ncs_event_t *e) {
  if (e->ctx_kind != NCS_CTX_LOCAL || !F.nops) return NULL;
  uint64_t c = e->ctx;
  if (c >= F.rings_max) return NULL;
  ring_t *r = &F.rings[c];
  if (!r->ops) {
    if ((uint64_t)(F.nrings + 1) * F.nops * sizeof(kept_t) > FL_RING_BUDGET) return NULL;
    r->ops = calloc(F.nops, sizeof(kept_t));
    if (!r->ops) return NULL;
    F.nrings++;
  }
  return r;
}

static void copy_start(kept_t *k, const ncs_event_t *e) {
  k->id = e->id, k->ts = e->ts, k->ctx = e->ctx, k->parent = e->parent;
  k->rank = e->rank, k->flags = e->flags, k->thread = e->thread;
  k->type = e->type, k->ctx_kind = e->ctx_kind, k->parent_kind = e->parent_kind;
  k->nfields = e->nfields;
  memcpy(k->f, e->f, sizeof k->f);
  memcpy(k->fref, e->fref_kind, sizeof k->fref);
}

static void note_start(const ncs_event_t *e) {
  if (!kept_type(e->type)) return;
  kept_t *k = NULL;
  ring_t *r = (e->type == NCS_T_COLL || e->type == NCS_T_P2P) ? ring_of(e) : NULL;
  if (r) {
    k = &r->ops[r->head];
    if (k->used && !k->done) { /* still open: move the one being overwritten to the pool */
      href_t *h = h_find(k->id);
      kept_t *m = h ? pool_get() : NULL;
      if (m) {
        *m = *k;
        m->comm = 0;
        h->k = m;
      } else if (h) {
        h_del(h);
        F.unkept++;
      }
    }
    memset(k, 0, sizeof *k);
    k->used = 1;
    k->comm = (uint32_t)e->ctx + 1;
    r->head = (r->head + 1) % F.nops;
    if (r->n < F.nops) r->n++;
  } else {
    k = pool_get();
    if (!k) {
      F.unkept++;
      return;
    }
  }
  copy_start(k, e);
  if (h_put(e->id, k) != 0) {
    F.unkept++;
    if (!k->comm) pool_put(k);
    else k->done = 2; /* history only */
  }
}

static void drop(href_t *h) {
  kept_t *k = h->k;
  h_del(h);
  if (!k->comm) pool_put(k);
}

void ncs_fl_note(const ncs_event_t *e) {
  if (!F.on) return;
  if (e->type != NCS_T_PROXY_CTRL && e->kind <= NCS_REC_STATE && e->ts > F.last_event)
    F.last_event = e->ts;
  if (e->kind == NCS_REC_START) {
    note_start(e);
    return;
  }
  href_t *h = h_find(e->id);
  if (!h) return;
  kept_t *k = h->k;
  int op = k->type == NCS_T_COLL || k->type == NCS_T_P2P;
  switch (e->kind) {
  case NCS_REC_STATE:
    k->has_state = 1, k->state = e->state, k->state_ts = e->ts, k->arg0 = e->arg0, k->arg1 = e->arg1;
    break;
  case NCS_REC_STOP:
    k->stopped = 1, k->stop_ts = e->ts;
    if (!op) drop(h);
    break;
  case NCS_REC_COMPLETE:
    k->done = 1, k->cflags = e->cflags, k->end_ns = e->end_ns, k->first_child_ns = e->first_child_ns;
    k->gpu_start = e->gpu_start, k->gpu_stop = e->gpu_stop;
    k->n_kch = e->n_kernel_ch, k->n_pop = e->n_proxy_op, k->n_open = e->n_open;
    if (e->cflags & NCS_CF_FORCED) k->done = 2; /* forced: not a real completion */
    drop(h);
    break;
  case NCS_REC_EXPIRED:
    k->done = 2, k->reason = e->reason, k->xstart = e->start_ns;
    drop(h);
    break;
  default: break;
  }
}

/* ------------------------------------------------------------------ keyframes */

static ncs_evchunk_t kf_evc;
static size_t kf_limit;
static int kf_full;

static void kf_put(const ncs_event_t *e) {
  if (kf_full) return;
  size_t before = F.kf.len;
  ncs_evchunk_t saved = kf_evc;
  ncs_enc_event(&F.kf, &kf_evc, e);
  if (F.kf.overflow || F.kf.len > kf_limit) { /* undo the partial record and stop */
    F.kf.len = before;
    F.kf.overflow = 0;
    kf_evc = saved;
    kf_full = 1;
  }
}

static void kf_kept(const kept_t *k, int history) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = k->type, e.thread = k->thread, e.ts = k->ts, e.id = k->id;
  e.ctx_kind = k->ctx_kind, e.ctx = k->ctx, e.parent_kind = k->parent_kind, e.parent = k->parent;
  e.rank = k->rank, e.flags = k->flags, e.nfields = k->nfields;
  memcpy(e.f, k->f, sizeof e.f);
  memcpy(e.fref_kind, k->fref, sizeof e.fref_kind);
  kf_put(&e);
  ncs_event_t x;
  memset(&x, 0, sizeof x);
  x.type = k->type, x.thread = k->thread, x.id = k->id;
  if (k->has_state && !history) {
    x.kind = NCS_REC_STATE, x.ts = k->state_ts, x.state = k->state, x.arg0 = k->arg0, x.arg1 = k->arg1;
    kf_put(&x);
  }
  if (k->stopped) {
    x.kind = NCS_REC_STOP, x.ts = k->stop_ts;
    kf_put(&x);
  }
  if (k->done == 1 || (k->done == 2 && k->cflags)) {
    x.kind = NCS_REC_COMPLETE, x.cflags = k->cflags, x.end_ns = k->end_ns;
    x.first_child_ns = k->first_child_ns, x.gpu_start = k->gpu_start, x.gpu_stop = k->gpu_stop;
    x.n_kernel_ch = k->n_kch, x.n_proxy_op = k->n_pop, x.n_open = k->n_open;
    kf_put(&x);
  } else if (k->done == 2 && k->reason) {
    x.kind = NCS_REC_EXPIRED, x.reason = k->reason, x.start_ns = k->xstart;
    kf_put(&x);
  }
}

/* order the open events parents first, so a reader meets a parent before its children */
static const uint8_t kf_order[] = {NCS_T_GROUP_API, NCS_T_COLL_API, NCS_T_P2P_API,   NCS_T_COLL,
                                   NCS_T_P2P,       NCS_T_PROXY_OP, NCS_T_KERNEL_CH, NCS_T_PROXY_STEP};

/* Encode the keyframe into F.kf as one EVENTS chunk payload: open events first (what a hang
 * diagnosis needs most), then each communicator's last operations, oldest first. */
static void kf_build(uint64_t base_ns) {
  ncs_buf_reset(&F.kf);
  kf_full = 0;
  kf_limit = F.slot_cap / 2 - NCS_CHUNK_HEADER_LEN;
  ncs_enc_events_begin(&F.kf, &kf_evc, base_ns);
  /* open operations of the rings, then the other open events parents first, then history */
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t c = 0; c < F.rings_max; c++) {
      ring_t *r = &F.rings[c];
      for (uint32_t j = 0; r->ops && j < r->n; j++) {
        const kept_t *k = &r->ops[(r->head + F.nops - r->n + j) % F.nops];
        if (k->used && (k->done != 0) == pass) kf_kept(k, pass);
      }
    }
    if (pass == 0)
      for (size_t o = 0; o < sizeof kf_order; o++)
        for (uint32_t i = 0; i < FL_HASH; i++) {
          const href_t *h = &F.hash[i];
          if (h->id && h->k->type == kf_order[o] && !h->k->comm) kf_kept(h->k, 0);
        }
  }
  if (kf_full) F.h->keyframe_trunc++;
  ncs_enc_events_end(&F.kf, &kf_evc);
}

/* ------------------------------------------------------------------ ring */

static ncs_flight_slot_t *slot_at(uint32_t i) {
  return (ncs_flight_slot_t *)(F.map + F.h->ring_off + (uint64_t)i * F.h->slot_bytes);
}

static void slot_append(const void *a, size_t an, const void *b, size_t bn) {
  uint8_t *p = (uint8_t *)F.slot + NCS_FLIGHT_SLOT_HDR + F.slot->used;
  memcpy(p, a, an);
  if (bn) memcpy(p + an, b, bn);
  /* the bytes first, then the length that makes them visible (to a reader after a crash) */
  __atomic_store_n(&F.slot->used, F.slot->used + (uint32_t)(an + bn), __ATOMIC_RELEASE);
}

/* One more keyframe chunk of another subsystem, in the half of the slot keyframes may use. */
static void kf_part(uint16_t type, size_t (*build)(ncs_buf_t *b, size_t limit)) {
  size_t room = F.slot_cap / 2 > F.slot->used + NCS_CHUNK_HEADER_LEN
                    ? F.slot_cap / 2 - F.slot->used - NCS_CHUNK_HEADER_LEN : 0;
  size_t len = room ? build(&F.gkf, room) : 0;
  if (!len) return;
  uint8_t hdr[NCS_CHUNK_HEADER_LEN];
  ncs_chunk_header(hdr, type, F.gkf.p, (uint32_t)len);
  slot_append(hdr, sizeof hdr, F.gkf.p, len);
}

static void slot_open(uint64_t now) {
  F.cur = F.slot ? (F.cur + 1) % F.h->nslots : 0;
  F.slot = slot_at(F.cur);
  if (F.slot->seq) F.h->slots_recycled++;
  __atomic_store_n(&F.slot->seq, 0, __ATOMIC_RELEASE); /* invalid while rewritten */
  F.slot->used = F.slot->kf_len = 0;
  F.slot->first_mono = F.slot->last_mono = now;
  kf_build(now);
  if (kf_evc.count) {
    uint8_t hdr[NCS_CHUNK_HEADER_LEN];
    ncs_chunk_header(hdr, NCS_CHUNK_EVENTS, F.kf.p, (uint32_t)F.kf.len);
    slot_append(hdr, sizeof hdr, F.kf.p, F.kf.len);
  }
  /* GPU truth: NCCL kernel launches whose kernels CUPTI has not reported, a hang's evidence */
  kf_part(NCS_CHUNK_GPU, ncs_gpu_keyframe);
  /* user ranges still open, and the range state (the metric names a METRICS record needs) */
  kf_part(NCS_CHUNK_RANGES, ncs_range_keyframe);
  kf_part(NCS_CHUNK_RANGE_STATE, ncs_range_keyframe_state);
  F.slot->kf_len = F.slot->used;
  __atomic_store_n(&F.slot->seq, F.h->next_seq++, __ATOMIC_RELEASE);
}

int ncs_fl_fits(size_t n) { return F.slot && F.slot->used + n <= F.slot_cap; }

void ncs_fl_next_slot(void) { slot_open(ncs_mono_ns()); }

static int is_meta(uint16_t type) {
  return type == NCS_CHUNK_SEGMENT || type == NCS_CHUNK_STRINGS || type == NCS_CHUNK_COMM ||
         type == NCS_CHUNK_COMM_END || type == NCS_CHUNK_THREAD;
}

int ncs_fl_in_ring(uint16_t type) { return !is_meta(type); }

int ncs_fl_chunk(uint16_t type, const uint8_t *hdr, const void *payload, size_t len) {
  size_t n = NCS_CHUNK_HEADER_LEN + len;
  if (is_meta(type)) {
    if (F.h->meta_len + n > F.h->meta_cap) return -1;
    uint8_t *p = F.map + F.h->meta_off + F.h->meta_len;
    memcpy(p, hdr, NCS_CHUNK_HEADER_LEN);
    memcpy(p + NCS_CHUNK_HEADER_LEN, payload, len);
    __atomic_store_n(&F.h->meta_len, F.h->meta_len + n, __ATOMIC_RELEASE);
    return 0;
  }
  if (n > F.slot_cap / 2) return -1; /* the writer keeps chunks smaller than this */
  uint64_t now = ncs_mono_ns();
  if (!F.slot || F.slot->used + n > F.slot_cap) slot_open(now);
  if (F.slot->used + n > F.slot_cap) return -1;
  slot_append(hdr, NCS_CHUNK_HEADER_LEN, payload, len);
  F.slot->last_mono = now;
  return 0;
}

/* ------------------------------------------------------------------ file */

/* Why ncs_fl_open failed: what it was doing, on which file, and the error's own text. */
static int open_failed(char *err, size_t errlen, const char *what, const char *file, int e) {
  snprintf(err, errlen, "%s %s: %s", what, file, strerror(e));
  return -1;
}

int ncs_fl_open(const char *dir, const char *host, uint64_t ring_bytes, uint32_t nops,
                uint32_t max_comms, char *path, size_t pathlen, char *err, size_t errlen) {
  memset(&F, 0, sizeof F);
  F.fd = -1;
  snprintf(F.dir, sizeof F.dir, "%s", dir);
  snprintf(F.host, sizeof F.host, "%s", host);
  snprintf(F.trig_path, sizeof F.trig_path, "%s/ncclscope.dump", dir);
  /* <host>-<pid>.nsflight; a later load of the plugin in the same process (NCCL unloads it
   * after the last communicator) gets <host>-<pid>.2.nsflight and so on: nothing is overwritten */
  for (int k = 1; k <= 1000 && F.fd < 0; k++) {
    int n = k == 1 ? snprintf(F.path, sizeof F.path, "%s/%s-%d%s", dir, host, (int)ncs_g.pid,
                              NCS_FLIGHT_SUFFIX)
                   : snprintf(F.path, sizeof F.path, "%s/%s-%d.%d%s", dir, host, (int)ncs_g.pid, k,
                              NCS_FLIGHT_SUFFIX);
    if (n < 0 || (size_t)n >= sizeof F.path || (size_t)n >= pathlen)
      return open_failed(err, errlen, "cannot name a file in", F.dir, ENAMETOOLONG);
    F.fd = open(F.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (F.fd < 0 && errno != EEXIST) return open_failed(err, errlen, "cannot create", F.path, errno);
  }
  if (F.fd < 0) return open_failed(err, errlen, "1000 flight files of this process in", F.dir, EEXIST);
  snprintf(path, pathlen, "%s", F.path);
  uint32_t nslots = (uint32_t)(ring_bytes / FL_SLOT_BYTES);
  if (nslots < 4) nslots = 4;
  F.len = NCS_FLIGHT_HDR_LEN + FL_META_BYTES + (size_t)nslots * FL_SLOT_BYTES;
  int e = 0;
  const char *what = "cannot size";
  if (ftruncate(F.fd, (off_t)F.len) != 0) e = errno;
  /* reserve the blocks now, so a full disk shows here rather than as SIGBUS later;
   * posix_fallocate returns its error instead of setting errno */
  if (!e && (e = posix_fallocate(F.fd, 0, (off_t)F.len)) != 0) what = "cannot reserve the disk space of";
  if (!e) {
    F.map = mmap(NULL, F.len, PROT_READ | PROT_WRITE, MAP_SHARED, F.fd, 0);
    if (F.map == MAP_FAILED) F.map = NULL, e = errno, what = "cannot map";
  }
  if (e) {
    open_failed(err, errlen, what, F.path, e);
    goto fail;
  }
  F.h = (ncs_flight_hdr_t *)F.map;
  memset(F.h, 0, sizeof *F.h);
  F.h->version = NCS_FLIGHT_VERSION, F.h->hdr_len = NCS_FLIGHT_HDR_LEN;
  F.h->file_len = F.len;
  F.h->meta_off = NCS_FLIGHT_HDR_LEN, F.h->meta_cap = FL_META_BYTES;
  F.h->ring_off = NCS_FLIGHT_HDR_LEN + FL_META_BYTES;
  F.h->slot_bytes = FL_SLOT_BYTES, F.h->nslots = nslots;
  F.h->next_seq = 1;
  F.h->state = NCS_FS_RUNNING;
  F.h->pid = (uint64_t)ncs_g.pid;
  F.h->watchdog_ns = (uint64_t)ncs_g.cfg.watchdog_s * 1000000000ull;
  F.h->features = NCS_FLF_LOSS | NCS_FLF_LOSS_T16;
  F.h->loss_next_seq = 1;
  snprintf(F.h->host, sizeof F.h->host, "%s", host);
  ncs_file_header(F.map + F.h->meta_off);
  F.h->meta_len = NCS_FILE_HEADER_LEN;
  F.slot_cap = FL_SLOT_BYTES - NCS_FLIGHT_SLOT_HDR;
  F.nops = nops;
  F.rings_max = max_comms;
  F.rings = calloc(max_comms, sizeof(ring_t));
  if (!F.rings || ncs_buf_init(&F.kf, F.slot_cap) || ncs_buf_init(&F.gkf, F.slot_cap / 2)) {
    open_failed(err, errlen, "no memory for the flight recorder of", F.path, ENOMEM);
    goto fail;
  }
  for (uint32_t i = 0; i < FL_POOL; i++) F.free_[i] = FL_POOL - 1 - i;
  F.nfree = FL_POOL;
  /* the trigger file as it is now is not a request */
  struct stat st;
  if (stat(F.trig_path, &st) == 0) F.trig_mtime = st.st_mtim, F.trig_seen = 1;
  memcpy(F.h->magic, NCS_FLIGHT_MAGIC, 8); /* last: the file is a flight file from here on */
  F.on = 1;
  return 0;
fail:
  if (F.fd >= 0) unlink(F.path); /* a half-made file would read as damaged */
  ncs_fl_close(0);
  return -1;
}

void ncs_fl_open_at_end(uint32_t n) { F.open_at_end = n; }

void ncs_fl_close(int clean) {
  if (F.h && clean) {
    /* Open at the end: what the writer's final flush had to close without a completion (it
     * expired them, or completed them forced). The count of the last poll, taken while
     * operations were running, would not say it. */
    F.h->open_ops = F.open_at_end;
    F.h->stalled_since_mono = 0;
    F.h->last_event_mono = F.last_event;
    F.h->state = NCS_FS_EXITED;
    F.h->heartbeat_mono = ncs_mono_ns(), F.h->heartbeat_real = ncs_realtime_ns();
  }
  if (F.map) {
    msync(F.map, F.len, MS_ASYNC);
    munmap(F.map, F.len);
  }
  if (F.fd >= 0) close(F.fd);
  if (F.rings)
    for (uint32_t c = 0; c < F.rings_max; c++) free(F.rings[c].ops);
  free(F.rings);
  ncs_buf_free(&F.kf);
  ncs_buf_free(&F.gkf);
  F.rings = NULL, F.map = NULL, F.h = NULL, F.fd = -1, F.on = 0;
}

int ncs_fl_active(void) { return F.on; }

/* ------------------------------------------------------------------ loss windows */

/* A header entry for a new window: an unused one, else the oldest closed one, whose records move
 * into its reason's earlier window first (so every lost record stays in exactly one window). */
static ncs_flight_loss_t *loss_entry(void) {
  ncs_flight_hdr_t *h = F.h;
  ncs_flight_loss_t *pick = NULL;
  for (unsigned i = 0; i < NCS_FLIGHT_LOSS_WINDOWS; i++) {
    ncs_flight_loss_t *w = &h->loss[i];
    if (!w->seq) return w;
    if (!w->open && (!pick || w->seq < pick->seq)) pick = w;
  }
  if (!pick) return NULL; /* cannot happen: at most one window per reason is open */
  ncs_flight_loss_t *e = &h->loss_earlier[pick->reason - 1];
  if (!e->seq) {
    *e = *pick;
  } else {
    if (pick->from_mono < e->from_mono) e->from_mono = pick->from_mono;
    if (pick->to_mono > e->to_mono) e->to_mono = pick->to_mono;
    for (unsigned t = 0; t < NCS_T_COUNT; t++) e->by_type[t] += pick->by_type[t];
  }
  e->open = 0;
  memset(pick, 0, sizeof *pick);
  return pick;
}

void ncs_fl_loss(const ncs_loss_t *l, int closed) {
  if (!F.on || l->reason < 1 || l->reason > NCS_LOSS_MAX) return;
  ncs_flight_hdr_t *h = F.h;
  uint32_t r = l->reason - 1;
  /* Odd while changing: a reader of a file whose process died here knows it. The reader is a
   * later process, after this one died: what matters is only that the compiler keeps the stores
   * in program order, which a signal fence ensures (a process is killed between instructions). */
  __atomic_store_n(&h->loss_gen, h->loss_gen + 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  ncs_flight_loss_t *w = F.loss_open[r] ? &h->loss[F.loss_open[r] - 1] : loss_entry();
  if (w) {
    w->reason = l->reason, w->open = !closed;
    w->from_mono = l->from_ns, w->to_mono = l->to_ns;
    memcpy(w->by_type, l->by_type, sizeof l->by_type); /* NCS_T_COUNT <= NCS_FLIGHT_LOSS_TYPES */
    if (!w->seq) w->seq = h->loss_next_seq++;
    F.loss_open[r] = closed ? 0 : (uint32_t)(w - h->loss) + 1;
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&h->loss_gen, h->loss_gen + 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ dumps */

static uint32_t open_ops(uint64_t *oldest) {
  uint32_t n = 0;
  *oldest = 0;
  for (uint32_t i = 0; i < FL_HASH; i++) {
    const href_t *h = &F.hash[i];
    if (!h->id || (h->k->type != NCS_T_COLL && h->k->type != NCS_T_P2P)) continue;
    n++;
    if (!*oldest || h->k->ts < *oldest) *oldest = h->k->ts;
  }
  return n;
}

static void header_refresh(uint64_t now) {
  uint64_t oldest;
  F.h->heartbeat_mono = now, F.h->heartbeat_real = ncs_realtime_ns();
  F.h->last_event_mono = F.last_event;
  F.h->open_ops = open_ops(&oldest);
  F.h->stalled_since_mono = F.h->open_ops ? (F.last_event > oldest ? F.last_event : oldest) : 0;
}

/* Copy the mapping (the caller flushed everything pending into it first). */
int ncs_fl_dump(int reason, const char *trigger, uint64_t trigger_real) {
  if (!F.on) return -1;
  if (F.dumps >= FL_MAX_DUMPS) {
    ncs_log(NCS_LOG_WARN, "flight recorder: %d dumps taken already; not dumping again", FL_MAX_DUMPS);
    return -1;
  }
  uint64_t now = ncs_mono_ns();
  header_refresh(now);
  char ddir[1100], path[1400];
  snprintf(ddir, sizeof ddir, "%s/dumps", F.dir);
  if (mkdir(ddir, 0755) != 0 && errno != EEXIST) {
    ncs_log(NCS_LOG_WARN, "flight recorder: cannot create %s: %s", ddir, strerror(errno));
    return -1;
  }
  snprintf(path, sizeof path, "%s/%s-%d-%u%s", ddir, F.host, (int)ncs_g.pid, F.dumps + 1,
           NCS_FLIGHT_SUFFIX);
  char tmp[1420];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    ncs_log(NCS_LOG_WARN, "flight recorder: cannot write %s: %s", tmp, strerror(errno));
    return -1;
  }
  F.dumps++;
  F.h->dump_index = F.dumps;
  F.h->dump_reason = (uint32_t)reason;
  F.h->dump_mono = now, F.h->dump_real = ncs_realtime_ns();
  F.h->trigger_real = trigger_real ? trigger_real : F.h->dump_real;
  snprintf(F.h->trigger, sizeof F.h->trigger, "%s", trigger ? trigger : "");
  ncs_flight_hdr_t h = *F.h;
  h.state = NCS_FS_DUMP;
  uint8_t page[NCS_FLIGHT_HDR_LEN];
  memset(page, 0, sizeof page);
  memcpy(page, &h, sizeof h);
  /* the error that stopped it, whichever call it came from (a later call may reset errno) */
  int e = 0;
  size_t off = 0;
  while (!e && off < F.len) {
    const uint8_t *src = off < NCS_FLIGHT_HDR_LEN ? page + off : F.map + off;
    size_t n = off < NCS_FLIGHT_HDR_LEN ? NCS_FLIGHT_HDR_LEN - off : F.len - off;
    ssize_t k = write(fd, src, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) e = errno;
    else if (k == 0) e = EIO;
    else off += (size_t)k;
  }
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, path) != 0) e = errno;
  if (e) {
    ncs_log(NCS_LOG_WARN, "flight recorder: writing %s failed: %s; no dump taken", path, strerror(e));
    unlink(tmp);
    return -1;
  }
  static const char *const why[] = {"", "signal", "watchdog", "request", "exit"};
  ncs_log(NCS_LOG_WARN, "flight recorder: %s dump written to %s",
          reason > 0 && reason <= NCS_DR_EXIT ? why[reason] : "", path);
  return 0;
}

/* Ask every process of the job that records into the same directory to dump too. */
static void request_all(const char *what, uint64_t real) {
  char tmp[1320], line[256];
  snprintf(tmp, sizeof tmp, "%s.%d", F.trig_path, (int)ncs_g.pid);
  int n = snprintf(line, sizeof line, "%s %s-%d %llu\n", what, F.host, (int)ncs_g.pid, (unsigned long long)real);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  int ok = write(fd, line, (size_t)n) == n;
  close(fd);
  if (!ok || rename(tmp, F.trig_path) != 0) {
    unlink(tmp);
    return;
  }
  struct stat st;
  if (stat(F.trig_path, &st) == 0) F.trig_mtime = st.st_mtim, F.trig_seen = 1; /* ours: done */
}

/* Called every writer cycle. Returns a dump reason when one is due (and fills the trigger). */
int ncs_fl_poll(char *trigger, size_t tlen, uint64_t *trigger_real) {
  if (!F.on) return 0;
  uint64_t now = ncs_mono_ns();
  F.h->heartbeat_mono = now, F.h->heartbeat_real = ncs_realtime_ns(); /* one consistent pair */
  F.h->last_event_mono = F.last_event;
  *trigger_real = 0;
  if (atomic_exchange_explicit(&fl_signal_flag, 0, memory_order_relaxed)) {
    snprintf(trigger, tlen, "signal %d", fl_sig);
    return NCS_DR_SIGNAL;
  }
  if (now - F.last_poll < FL_TRIGGER_POLL_NS) return 0;
  F.last_poll = now;
  header_refresh(now);
  struct stat st;
  if (stat(F.trig_path, &st) == 0 &&
      (!F.trig_seen || st.st_mtim.tv_sec != F.trig_mtime.tv_sec || st.st_mtim.tv_nsec != F.trig_mtime.tv_nsec)) {
    /* `echo why > ncclscope.dump` creates (truncates) the file before it writes the line: an
     * empty file changed in the last 200 ms is still being written; take it at the next poll */
    uint64_t mt = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
    if (st.st_size == 0 && ncs_realtime_ns() < mt + 200000000ull) return 0;
    F.trig_mtime = st.st_mtim, F.trig_seen = 1;
    trigger[0] = 0;
    FILE *f = fopen(F.trig_path, "r");
    if (f) {
      if (fgets(trigger, (int)tlen, f)) trigger[strcspn(trigger, "\n")] = 0;
      fclose(f);
    }
    unsigned long long real = 0;
    const char *sp = strrchr(trigger, ' ');
    if (sp) real = strtoull(sp + 1, NULL, 10);
    *trigger_real = real;
    /* this dump covers our own stall too: the watchdog does not ask again for it */
    if (F.h->open_ops) F.fired_at = now;
    return NCS_DR_REQUEST;
  }
  /* watchdog: operations are open and nothing has happened for watchdog_ns */
  uint64_t wd = F.h->watchdog_ns;
  if (wd && F.h->open_ops && F.h->stalled_since_mono && now > F.h->stalled_since_mono &&
      now - F.h->stalled_since_mono > wd && F.fired_at < F.h->stalled_since_mono + 1) {
    F.fired_at = now;
    uint64_t real = ncs_realtime_ns();
    snprintf(trigger, tlen, "watchdog %s-%d %llu", F.host, (int)ncs_g.pid, (unsigned long long)real);
    request_all("watchdog", real);
    *trigger_real = real;
    return NCS_DR_WATCHDOG;
  }
  return 0;
}

uint64_t ncs_fl_unkept(void) { return F.unkept; }
