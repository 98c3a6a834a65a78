/* timeline.c - the timeline model behind `ncclscope export` (docs/timeline.md).
 *
 * Pass 0 reads the first items of every file (host, pid, first clock pair) to decide the job's
 * time line. Pass 1 (index) reads each file once and keeps only what linking across ranks and
 * the emit pass need:
 *   - per Coll/P2p event, in file order: start, stop, completion (the last COMPLETE), GPU span,
 *     its collective instance and rank (64 bytes each);
 *   - per collective instance (commId, func, seqNumber): earliest and latest start, latest end,
 *     first rank, straggler, last rank to finish, and a bitmap of the ranks seen;
 *   - per (commId, sender, receiver): how many sends and receives, to pair the k-th of each;
 *   - per file: communicators, segment end times, the GPU clock offset and its error bounds.
 * Then the job tracks are written, and pass 2 (emit) streams each file: every START becomes a
 * BEGIN on the first free lane of its row, every STOP the END, states become nested phases or
 * instants. Coll/P2p slices are written whole at their START: their end is known from pass 1.
 *
 * Both passes run on several threads, one file at a time each. A .pftrace is a concatenation of
 * packets and every file is its own packet sequence with its own uuid range, so each file's part
 * is written to an anonymous temporary file next to the output and appended to the output in
 * file order: the output is the same for any number of threads. The output itself is written as
 * every output of ncclscope is (src/util/outfile.h): under its final name only once complete.
 * Memory in pass 2 is bounded by what is open at once per worker (events, lanes, pending counter
 * changes), plus the index above.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/export.h"
#include "util/dtype.h"
#include "util/hmap.h"
#include "util/mem.h"
#include "util/pool.h"
#include "export/sink.h"
#include "trace/reader.h"
#include "util/outfile.h"

const char *const tl_cat_names[TC_COUNT] = {
    "api", "group", "coll", "p2p", "ce", "kernel", "proxyop", "proxystep", "proxyctrl", "net",
    "phase", "state", "job", "other"};

void tl_out_flush(tl_sink_t *s) {
  size_t off = 0;
  while (off < s->out.n && !s->err) {
    ssize_t w = write(s->fd, s->out.p + off, s->out.n - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      s->err = errno;
      break;
    }
    off += (size_t)w;
  }
  s->bytes_out += off;
  s->out.n = 0;
}

int tl_sink_close(tl_sink_t *s) {
  tl_out_flush(s);
  if (s->out.oom && !s->err) s->err = ENOMEM;
  if (s->err) {
    errno = s->err;
    return -1;
  }
  return 0;
}

/* ================================================================ small helpers */

#define NONE32 0xFFFFFFFFu
#define COUNTER_WINDOW_NS 1000000000ull /* counter changes are reordered within 1 s */
#define MAX_ARGS 64
#define MAX_WORKERS 16
#define ST_KERNEL_CH_STOP 22 /* ncs_state_names[22] */

static uint64_t nz(uint64_t v) { return v ? v : 1; }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* the pool's strings are stable: sinks intern them by pointer */
static const char *pool(ncs_pool_t *p, const char *s) { return ncs_pool_str(p, s); }
#define poolf ncs_pool_fmt
#define GROW(arr, cap, need) NCS_GROW(arr, cap, need)

/* ================================================================ the index */

/* What the KernelCh records say about one GPU's globaltimer against the host clock. Every host
 * observation comes after what it observed, so host ts - pTimer is at least the true offset: the
 * smallest is the estimate (an upper bound). A kernel cannot start before the KernelLaunch that
 * carried its operation: launch ts - pTimer start is at most the true offset (a lower bound). */
typedef struct {
  int has;
  int64_t off; /* host mono = pTimer + off */
  int64_t lo;  /* INT64_MIN: no lower bound */
  uint64_t min_pt;
} gpuclk_t;

static void clk_init(gpuclk_t *g) {
  g->has = 0, g->off = 0, g->lo = INT64_MIN, g->min_pt = UINT64_MAX;
}
static void clk_obs(gpuclk_t *g, uint64_t host, uint64_t pt, int is_start) {
  int64_t off = (int64_t)(host - pt);
  if (!g->has || off < g->off) g->off = off;
  g->has = 1;
  if (is_start && pt < g->min_pt) g->min_pt = pt;
}
static void clk_merge(gpuclk_t *a, const gpuclk_t *b) {
  if (!b->has) return;
  if (!a->has || b->off < a->off) a->off = b->off;
  a->has = 1;
  if (b->lo > a->lo) a->lo = b->lo;
  if (b->min_pt < a->min_pt) a->min_pt = b->min_pt;
}

typedef struct {
  uint64_t comm_id; /* 0: unknown (ABI v1-v3): no linking across ranks */
  const char *name; /* shared pool */
  int32_t rank, nranks;
  uint32_t seg, index, proc;
  uint32_t order; /* order of first appearance in the file: groups */
  gpuclk_t clk;   /* its GPU's clock, from its KernelCh */
  int32_t device; /* CUDA device at init, -1 unknown */
  const char *bus_id; /* shared pool; "" unknown */
} comm_t;

typedef struct {         /* one Coll or P2p event, in file order */
  uint64_t id, start, stop, end, gpu_start, gpu_stop; /* host mono ns (gpu: raw pTimer) */
  uint32_t inst;         /* Coll: its instance + 1; 0 not linked */
  int32_t rank;          /* its communicator rank; -1 unknown */
  uint16_t seg;
  uint8_t cflags, type;
  uint8_t has_complete;
} ent_t;

typedef struct {
  uint64_t comm_id, seq, h, count;
  uint32_t occurrence; /* the n-th time the ranks ran (commId, func, seq): a re-created comm */
  const char *func, *algo, *proto, *dtype, *comm_name; /* shared pool */
  uint64_t min_start, max_start, max_end; /* output time */
  int32_t first_rank, straggler, last_rank, nranks;
  uint32_t nseen;
  uint64_t *bits;
} inst_t;

typedef struct {
  uint32_t nsend, nrecv;
} pair_t;

typedef struct {
  uint32_t file;
  int32_t rank;   /* world rank, -1 none */
  int32_t device; /* its GPU, -1 unknown */
  const char *bus_id;
  int32_t pid, order;
  const char *name;
  gpuclk_t clk; /* its GPU's clock: the comms' together */
  tl_track_t trk;
  /* the emit pass of its file only */
  tl_track_t ctr[2];
  uint8_t ctr_declared[2];
  double ctr_val[2];
} proc_t;

typedef struct {
  char *path;
  uint64_t size;
  const char *host;
  uint64_t pid;
  int64_t clock_off;   /* realtime - mono from the first clock pair */
  int64_t host_off;    /* added to host mono to get output time */
  gpuclk_t clk;        /* KernelCh without a communicator of this file */
  uint64_t min_ts;
  uint64_t *seg_end;   /* per segment: last host ts */
  uint32_t nseg;
  size_t seg_cap;
  ent_t *ents;
  uint32_t nent;
  size_t ent_cap;
  comm_t *comms;
  uint32_t ncomms;
  size_t comm_cap;
  hmap_t comm_map;     /* (seg << 32 | index) -> index in comms */
  uint32_t p0, p1;     /* its procs */
  int damage;
  char errmsg[256];
  /* emit pass: the file's part of the output, in a temporary file */
  int frag_fd, frag_done;
} file_t;

/* ================================================================ emit-pass state */

enum { RK_API = 0, RK_GROUP, RK_OTHER, RK_COLL, RK_CE, RK_PCTRL, RK_GPU, RK_PROXY, RK_STEPS,
       RK_NET, RK_NETX };

typedef struct {
  tl_track_t t;
  uint8_t depth;
  uint64_t last_end;
} lane_t;

typedef struct {
  uint32_t proc, group; /* group NONE32: directly under the process */
  uint8_t kind;
  int32_t ch;
  const char *name, *path, *desc;
  int32_t order;
  lane_t *lanes;
  uint32_t nlanes, free_hint;
  size_t lane_cap;
} row_t;

typedef struct {
  tl_track_t t;
  int declared;
} group_t;

typedef struct {
  uint64_t id;
  uint32_t row, lane;
  uint64_t start, last, phase_start, gpu_end;
  uint32_t group, proc;
  int32_t ch;
  uint8_t type, phase_open, is_send, in_use;
} open_t;

typedef struct {
  uint64_t ts;
  double delta;
  uint32_t proc;
  uint8_t kind;
} cdelta_t;

typedef struct ex ex_t;

typedef struct { /* one worker: everything the emit pass of one file needs */
  ex_t *x;
  pthread_t thread;
  tl_sink_t *sink;
  ncs_pool_t pool; /* strings of the emit pass (the sink interns them by pointer) */
  ncs_export_stats_t st;
  file_t *f;
  uint32_t fi, seg, ent_cursor;
  uint64_t next_uuid;
  uint32_t next_track;
  row_t *rows;
  uint32_t nrows;
  size_t row_cap;
  hmap_t row_map;
  group_t *groups;
  uint32_t ngroups;
  size_t group_cap;
  hmap_t group_map;
  open_t *open;
  uint32_t nopen, *free_open, nfree;
  size_t open_cap, free_cap;
  hmap_t open_map;   /* id -> open index */
  hmap_t parent_map; /* Coll/P2p id -> func (KernelCh names) */
  hmap_t occ_map;    /* p2p (pair, dir) -> count */
  hmap_t tid_map;    /* thread index -> tid, per segment */
  hmap_t name_map;   /* (kind, value) -> pooled name */
  cdelta_t *heap;
  uint32_t nheap;
  size_t heap_cap;
  uint64_t max_coll_start;
  tl_arg_t args[MAX_ARGS];
  uint32_t nargs;
  tl_flow_t *flows;
  size_t flow_cap;
  uint64_t reported; /* bytes of the current file counted in x->bytes_done */
  int oom;
} wk_t;

struct ex {
  ncs_export_opts_t o;
  file_t *files;
  uint32_t nfiles;
  size_t file_cap;
  proc_t *procs;
  uint32_t nprocs;
  size_t proc_cap;
  inst_t *insts;
  uint32_t ninsts;
  size_t inst_cap;
  hmap_t inst_map; /* key -> inst index */
  pair_t *pairs;
  uint32_t npairs;
  size_t pair_cap;
  hmap_t pair_map; /* (commId, src, dst) -> pair index */
  ncs_pool_t pool;     /* strings of the index (under mu while indexing) */
  uint64_t next_uuid;
  uint32_t next_track;
  int32_t job_pid;
  uint64_t origin;
  const char *argname[NCS_T_COUNT][NCS_MAX_FIELDS];
  char argbuf[NCS_T_COUNT][NCS_MAX_FIELDS][48];
  /* threads */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t nworkers, next_file, appended;
  int direct; /* one worker: write straight into the output */
  tl_sink_t *main_sink;
  atomic_int oom, failed;
  char fail_msg[256];
  const char *tmp_dir;
  /* progress */
  uint64_t bytes_total;
  atomic_uint_fast64_t bytes_done;
  atomic_uint_fast64_t last_print_ns;
  atomic_int printed, writing;
  uint64_t t0_ns;
};

static void new_track(wk_t *w, tl_track_t *t, uint8_t kind, uint64_t parent, int32_t pid);

/* ================================================================ progress */

static void progress_print(ex_t *x, int final) {
  uint64_t t = now_ns();
  if (!x->o.progress) return;
  if (final) {
    if (!atomic_load(&x->printed)) return;
  } else {
    uint64_t last = atomic_load(&x->last_print_ns);
    if (t - x->t0_ns < 1000000000ull || t - last < 500000000ull) return;
    if (!atomic_compare_exchange_strong(&x->last_print_ns, &last, t)) return; /* another did */
  }
  atomic_store(&x->printed, 1);
  uint64_t done = final ? x->bytes_total : atomic_load(&x->bytes_done);
  double pct = x->bytes_total ? 100.0 * (double)done / (double)x->bytes_total : 100.0;
  fprintf(stderr, "%s: %5.1f%% (%s, %.1f s)\n", x->o.prog, pct > 100 ? 100 : pct,
          atomic_load(&x->writing) ? "writing" : "indexing", (double)(t - x->t0_ns) * 1e-9);
}

static void progress(wk_t *w, ncs_reader_t *r) {
  uint64_t off = r ? ncs_reader_offset(r) : 0;
  if (off > w->reported) {
    atomic_fetch_add(&w->x->bytes_done, off - w->reported);
    w->reported = off;
  }
  progress_print(w->x, 0);
}

static void file_done(wk_t *w, const file_t *f) {
  if (f->size > w->reported) atomic_fetch_add(&w->x->bytes_done, f->size - w->reported);
  w->reported = 0;
}

static void set_oom(wk_t *w) {
  w->oom = 1;
  atomic_store(&w->x->oom, 1);
}

/* ================================================================ pass 0: hosts and clocks */

static void pass0(ex_t *x, file_t *f) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open(f->path, err, sizeof err);
  if (!r) {
    snprintf(f->errmsg, sizeof f->errmsg, "%s", err);
    f->damage = NCS_DAMAGE_CORRUPT;
    f->host = "?";
    return;
  }
  ncs_item_t it;
  for (int n = 0; n < 64 && ncs_reader_next(r, &it) > 0; n++) {
    if (it.what == NCS_ITEM_SEGMENT && !f->host) {
      const ncs_segment_info_t *s = ncs_reader_segment(r);
      f->host = pool(&x->pool, s->host);
      f->pid = s->pid;
      f->clock_off = (int64_t)(s->start_realtime_ns - s->start_mono_ns);
    } else if (it.what == NCS_ITEM_CLOCK) {
      f->clock_off = (int64_t)(it.clock_realtime_ns - it.clock_mono_ns);
      break;
    }
  }
  ncs_reader_close(r);
  if (!f->host) f->host = "?";
}

/* single host: the raw monotonic clock; several: each host's clock moved to wall-clock time by
 * the first clock pair seen on that host */
static void host_offsets(ex_t *x) {
  int multi = 0;
  for (uint32_t i = 1; i < x->nfiles; i++)
    if (strcmp(x->files[i].host, x->files[0].host) != 0) multi = 1;
  for (uint32_t i = 0; i < x->nfiles; i++) {
    file_t *f = &x->files[i];
    f->host_off = 0;
    if (!multi) continue;
    for (uint32_t j = 0; j <= i; j++)
      if (strcmp(x->files[j].host, f->host) == 0) {
        f->host_off = x->files[j].clock_off;
        break;
      }
  }
}

/* ================================================================ pass 1: index */

static comm_t *file_comm(const file_t *f, uint32_t seg, uint64_t index) {
  uint64_t v;
  if (index > 0xFFFFFFFFu || !hm_get(&f->comm_map, ((uint64_t)seg << 32) | index, &v)) return NULL;
  return &f->comms[v];
}

static uint64_t to_out(const file_t *f, uint64_t host) { return host + (uint64_t)f->host_off; }

static const char *fstr(ncs_pool_t *p, const ncs_event_t *e, int i) {
  return i >= 0 && i < e->nfields ? pool(p, e->fstr[i]) : NULL;
}
static const char *fraw(const ncs_event_t *e, int i) {
  return i >= 0 && i < e->nfields ? e->fstr[i] : NULL;
}
static uint64_t fval(const ncs_event_t *e, int i) { return i >= 0 && i < e->nfields ? e->f[i] : 0; }

/* commId for linking: the COMM's, else the descriptor's commHash (v4+), else 0 */
static uint64_t link_id(const comm_t *c, const ncs_event_t *e, int hash_field) {
  if (c && c->comm_id) return c->comm_id;
  return fval(e, hash_field);
}

static uint64_t inst_key(uint64_t comm_id, const char *func, uint64_t seq) {
  return hm_mix2(hm_mix2(comm_id, hm_bytes(func, strlen(func), NCS_HM_FNV0)), seq);
}
static uint64_t pair_key(uint64_t comm_id, int32_t src, int32_t dst) {
  return hm_mix2(hm_mix2(comm_id, (uint64_t)(uint32_t)src), (uint64_t)(uint32_t)dst + 0x5e4d);
}

typedef struct {
  hmap_t ids;      /* (seg, id) -> ent index */
  hmap_t launch;   /* (seg, thread, comm index) -> the last KernelLaunch start */
  hmap_t launched; /* (seg, Coll/P2p id) -> the KernelLaunch start before it */
  hmap_t occ;      /* (instance key, rank) -> times seen */
  hmap_t kch;      /* (seg, KernelCh id) -> comm index + 1 (0: none), while open */
} idx_tmp_t;

static uint64_t seg_id(uint64_t id, uint32_t seg) { return id ^ ((uint64_t)seg << 52); }
/* KernelLaunch and the Coll/P2p it carries: same thread (the eager path; graph replays start
 * their Coll on a callback thread that has no launch), same communicator */
static uint64_t launch_key(const ncs_event_t *e, uint32_t seg) {
  return hm_mix2(((uint64_t)seg << 32) ^ e->thread, e->ctx);
}

/* shared part of indexing a Coll/P2p START: instance or send/recv pair (x->mu held) */
static void index_link(wk_t *w, idx_tmp_t *tmp, ent_t *n, const comm_t *c,
                       const ncs_event_t *e) {
  ex_t *x = w->x;
  if (e->type == NCS_T_P2P) {
    const char *func = fraw(e, NCS_F(P2p, func));
    uint64_t cid = link_id(c, e, NCS_F(P2p, commHash));
    int64_t peer = (int64_t)fval(e, NCS_F(P2p, peer));
    if (!cid || !func || peer < 0 || peer >= c->nranks) return;
    int send = !strcmp(func, "Send");
    if (!send && strcmp(func, "Recv")) return;
    uint64_t key =
        send ? pair_key(cid, c->rank, (int32_t)peer) : pair_key(cid, (int32_t)peer, c->rank);
    int created;
    uint64_t *pi = hm_ref(&x->pair_map, key, x->npairs, &created);
    if (!pi || (created && GROW(x->pairs, x->pair_cap, x->npairs + 1) != 0)) {
      set_oom(w);
      return;
    }
    if (created) x->npairs++;
    if (send)
      x->pairs[*pi].nsend++;
    else
      x->pairs[*pi].nrecv++;
    return;
  }
  const char *func = fstr(&x->pool, e, NCS_F(Coll, func));
  uint64_t cid = link_id(c, e, NCS_F(Coll, commHash));
  if (!cid || !func) return;
  uint64_t seq = fval(e, NCS_F(Coll, seqNumber)), key = inst_key(cid, func, seq);
  int created;
  uint64_t *occ = hm_ref(&tmp->occ, hm_mix2(key, (uint64_t)(uint32_t)c->rank), 0, &created);
  if (!occ) {
    set_oom(w);
    return;
  }
  uint32_t k = (uint32_t)(*occ)++;
  if (k) key = hm_mix2(key, k); /* the same rank again: a later incarnation of the comm */
  uint64_t *ii = hm_ref(&x->inst_map, key, x->ninsts, &created);
  if (!ii || (created && GROW(x->insts, x->inst_cap, x->ninsts + 1) != 0)) {
    set_oom(w);
    return;
  }
  inst_t *in = &x->insts[*ii];
  if (created) {
    x->ninsts++;
    in->comm_id = cid, in->seq = seq, in->func = func, in->h = nz(key), in->occurrence = k;
    in->algo = fstr(&x->pool, e, NCS_F(Coll, algo)), in->proto = fstr(&x->pool, e, NCS_F(Coll, proto));
    in->dtype = fstr(&x->pool, e, NCS_F(Coll, datatype)), in->count = fval(e, NCS_F(Coll, count));
    in->comm_name = c->name, in->nranks = c->nranks;
    in->min_start = UINT64_MAX;
    in->first_rank = in->straggler = in->last_rank = -1;
    in->bits = calloc(((size_t)c->nranks + 63) / 64, sizeof(uint64_t));
    if (!in->bits) set_oom(w);
  }
  if (c->nranks != in->nranks || !in->bits) return; /* a different comm with the same id? */
  n->inst = (uint32_t)*ii + 1;
}

static void index_start(wk_t *w, file_t *f, idx_tmp_t *tmp, const ncs_event_t *e, uint32_t seg) {
  if (e->type == NCS_T_KERNEL_LAUNCH) {
    if (hm_put(&tmp->launch, launch_key(e, seg), e->ts) != 0) set_oom(w);
    return;
  }
  if (e->type == NCS_T_KERNEL_CH) {
    uint64_t pt = fval(e, NCS_F(KernelCh, pTimer)), ci = 0;
    if (!pt) return;
    if (e->ctx_kind == NCS_CTX_LOCAL) {
      uint64_t v;
      if (e->ctx <= 0xFFFFFFFFu && hm_get(&f->comm_map, ((uint64_t)seg << 32) | e->ctx, &v))
        ci = v + 1;
    }
    gpuclk_t *g = ci ? &f->comms[ci - 1].clk : &f->clk;
    clk_obs(g, e->ts, pt, 1);
    if (hm_put(&tmp->kch, seg_id(e->id, seg), ci) != 0) set_oom(w);
    uint64_t lt;
    if (e->parent_kind == NCS_REF_LOCAL && hm_get(&tmp->launched, seg_id(e->parent, seg), &lt)) {
      int64_t lo = (int64_t)(lt - pt);
      if (lo > g->lo) g->lo = lo;
    }
    return;
  }
  if (e->type != NCS_T_COLL && e->type != NCS_T_P2P) return;
  if (GROW(f->ents, f->ent_cap, f->nent + 1) != 0) {
    set_oom(w);
    return;
  }
  ent_t *n = &f->ents[f->nent];
  memset(n, 0, sizeof *n);
  n->id = e->id, n->start = e->ts, n->seg = (uint16_t)seg, n->type = e->type, n->rank = -1;
  if (hm_put(&tmp->ids, seg_id(e->id, seg), f->nent) != 0) set_oom(w);
  f->nent++;
  uint64_t lt;
  if (e->ctx_kind == NCS_CTX_LOCAL && hm_get(&tmp->launch, launch_key(e, seg), &lt) &&
      hm_put(&tmp->launched, seg_id(e->id, seg), lt) != 0)
    set_oom(w);
  const comm_t *c = e->ctx_kind == NCS_CTX_LOCAL ? file_comm(f, seg, e->ctx) : NULL;
  if (!c || c->rank < 0 || c->rank >= c->nranks) return;
  n->rank = c->rank;
  pthread_mutex_lock(&w->x->mu);
  index_link(w, tmp, n, c, e);
  pthread_mutex_unlock(&w->x->mu);
}

static void index_file(wk_t *w, file_t *f) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open(f->path, err, sizeof err);
  if (!r) return; /* pass 0 said why */
  idx_tmp_t tmp;
  memset(&tmp, 0, sizeof tmp);
  f->min_ts = UINT64_MAX;
  clk_init(&f->clk);
  uint32_t seg = 0, nseg = 0, order = 0;
  ncs_item_t it;
  uint64_t n = 0;
  int rc;
  while ((rc = ncs_reader_next(r, &it)) > 0 && !w->oom) {
    if ((++n & 8191) == 0) progress(w, r);
    switch (it.what) {
    case NCS_ITEM_SEGMENT:
      seg = nseg++;
      if (GROW(f->seg_end, f->seg_cap, nseg) != 0)
        set_oom(w);
      else
        f->seg_end[seg] = ncs_reader_segment(r)->start_mono_ns, f->nseg = nseg;
      break;
    case NCS_ITEM_COMM: {
      if (!nseg || GROW(f->comms, f->comm_cap, f->ncomms + 1) != 0) break;
      comm_t *c = &f->comms[f->ncomms];
      clk_init(&c->clk);
      pthread_mutex_lock(&w->x->mu);
      c->name = pool(&w->x->pool, it.comm.name);
      c->bus_id = pool(&w->x->pool, it.comm.bus_id ? it.comm.bus_id : "");
      pthread_mutex_unlock(&w->x->mu);
      c->device = it.comm.device;
      c->comm_id = it.comm.comm_id;
      c->rank = it.comm.rank, c->nranks = it.comm.nranks;
      c->seg = seg, c->index = it.comm.index, c->proc = NONE32, c->order = order++;
      if (hm_put(&f->comm_map, ((uint64_t)seg << 32) | it.comm.index, f->ncomms) != 0)
        set_oom(w);
      f->ncomms++;
      break;
    }
    case NCS_ITEM_EVENT: {
      const ncs_event_t *e = &it.ev;
      w->st.records++;
      if (!nseg) break;
      uint64_t ts = e->kind == NCS_REC_COMPLETE ? e->end_ns : e->kind <= NCS_REC_STATE ? e->ts : 0;
      if (ts > f->seg_end[seg]) f->seg_end[seg] = ts;
      if (e->kind <= NCS_REC_STATE && ts && ts < f->min_ts) f->min_ts = ts;
      uint64_t ei;
      if (e->kind == NCS_REC_START) {
        index_start(w, f, &tmp, e, seg);
      } else if (e->kind == NCS_REC_STATE && e->type == NCS_T_KERNEL_CH &&
                 e->state == ST_KERNEL_CH_STOP && e->arg0) {
        /* KernelChStop carries the GPU stop, seen a little later by the host */
        uint64_t ci;
        if (hm_get(&tmp.kch, seg_id(e->id, seg), &ci))
          clk_obs(ci ? &f->comms[ci - 1].clk : &f->clk, e->ts, e->arg0, 0);
      } else if (e->kind == NCS_REC_STOP && e->type == NCS_T_KERNEL_CH) {
        hm_del(&tmp.kch, seg_id(e->id, seg));
      } else if ((e->type == NCS_T_COLL || e->type == NCS_T_P2P) &&
                 hm_get(&tmp.ids, seg_id(e->id, seg), &ei)) {
        ent_t *en = &f->ents[ei];
        if (e->kind == NCS_REC_STOP) {
          en->stop = e->ts;
        } else if (e->kind == NCS_REC_COMPLETE) { /* the last one wins (revisions) */
          en->end = e->end_ns, en->gpu_start = e->gpu_start, en->gpu_stop = e->gpu_stop;
          en->cflags = (uint8_t)e->cflags, en->has_complete = 1;
        }
      }
      break;
    }
    default: break;
    }
  }
  if (rc < 0) {
    f->damage = ncs_reader_damage(r);
    snprintf(f->errmsg, sizeof f->errmsg, "%s", ncs_reader_error(r));
  }
  file_done(w, f);
  ncs_reader_close(r);
  hm_free(&tmp.ids), hm_free(&tmp.launch), hm_free(&tmp.launched), hm_free(&tmp.occ);
  hm_free(&tmp.kch);
  if (f->min_ts == UINT64_MAX) f->min_ts = f->nseg ? f->seg_end[0] : 0;
}

/* the end of a Coll/P2p: its completion, else its stop, else the end of its segment */
static uint64_t ent_end(const file_t *f, const ent_t *e) {
  uint64_t end = e->stop;
  if (e->has_complete && e->end && !(e->cflags & NCS_CF_NO_CHILDREN)) end = max64(end, e->end);
  if (!end) end = e->seg < f->nseg ? f->seg_end[e->seg] : e->start;
  return max64(end, e->start + 1);
}

/* after every file is indexed, in file order: fold each rank's Coll into its instance. A rank
 * that ran the same instance twice (same commId, func, seqNumber) is linked the first time. */
static void fold_instances(ex_t *x) {
  for (uint32_t fi = 0; fi < x->nfiles; fi++) {
    file_t *f = &x->files[fi];
    for (uint32_t i = 0; i < f->nent; i++) {
      ent_t *e = &f->ents[i];
      if (!e->inst) continue;
      inst_t *in = &x->insts[e->inst - 1];
      uint64_t bit = 1ull << (e->rank & 63), *wd = &in->bits[e->rank / 64];
      if (*wd & bit) {
        e->inst = 0;
        continue;
      }
      *wd |= bit;
      uint64_t s = to_out(f, e->start), end = to_out(f, ent_end(f, e));
      in->nseen++;
      if (s < in->min_start || (s == in->min_start && e->rank < in->first_rank))
        in->min_start = s, in->first_rank = e->rank;
      if (in->straggler < 0 || s > in->max_start || (s == in->max_start && e->rank < in->straggler))
        in->max_start = s, in->straggler = e->rank;
      if (in->last_rank < 0 || end > in->max_end) in->max_end = end, in->last_rank = e->rank;
    }
  }
}

/* ================================================================ processes */

static int cmp_proc(const void *a, const void *b) {
  const proc_t *p = a, *q = b;
  if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
  if (p->file != q->file) return p->file < q->file ? -1 : 1;
  return 0;
}

static int add_proc(ex_t *x, uint32_t fi, int32_t rank) {
  if (GROW(x->procs, x->proc_cap, x->nprocs + 1) != 0) return -1;
  x->procs[x->nprocs].file = fi, x->procs[x->nprocs].rank = rank;
  x->procs[x->nprocs].device = -1, x->procs[x->nprocs].bus_id = "";
  x->nprocs++;
  return 0;
}

/* One process per rank: a file holding several ranks of its widest communicator (a process
 * driving several GPUs) is split by those ranks; its other communicators go to the process with
 * the same rank number, else to the rank whose communicator was created just before. */
static int make_procs(ex_t *x) {
  for (uint32_t fi = 0; fi < x->nfiles; fi++) {
    file_t *f = &x->files[fi];
    f->p0 = x->nprocs;
    const comm_t *world = NULL;
    for (uint32_t i = 0; i < f->ncomms; i++)
      if (!world || f->comms[i].nranks > world->nranks) world = &f->comms[i];
    for (uint32_t i = 0; world && i < f->ncomms; i++) {
      comm_t *c = &f->comms[i];
      if (c->comm_id != world->comm_id || c->nranks != world->nranks) continue;
      uint32_t k;
      for (k = f->p0; k < x->nprocs; k++)
        if (x->procs[k].rank == c->rank) break;
      if (k == x->nprocs && add_proc(x, fi, c->rank) != 0) return -1;
      c->proc = k;
      if (x->procs[k].device < 0 && c->device >= 0) /* the GPU its world communicator ran on */
        x->procs[k].device = c->device, x->procs[k].bus_id = c->bus_id;
    }
    if (x->nprocs == f->p0 && add_proc(x, fi, -1) != 0) return -1; /* no communicator */
    for (uint32_t i = 0; i < f->ncomms; i++) {
      comm_t *c = &f->comms[i];
      if (c->proc != NONE32) continue;
      for (uint32_t k = f->p0; k < x->nprocs && c->proc == NONE32; k++)
        if (x->procs[k].rank == c->rank) c->proc = k;
      for (uint32_t j = i; j-- > 0 && c->proc == NONE32;)
        if (f->comms[j].seg == c->seg && f->comms[j].proc != NONE32 &&
            f->comms[j].comm_id == world->comm_id)
          c->proc = f->comms[j].proc;
      if (c->proc == NONE32) c->proc = f->p0;
    }
    f->p1 = x->nprocs;
    for (uint32_t k = f->p0; k < f->p1; k++) clk_init(&x->procs[k].clk);
    for (uint32_t i = 0; i < f->ncomms; i++)
      clk_merge(&x->procs[f->comms[i].proc].clk, &f->comms[i].clk);
    clk_merge(&x->procs[f->p0].clk, &f->clk);
  }
  /* pids and order by rank */
  proc_t *sorted = malloc(((size_t)x->nprocs + 1) * sizeof *sorted);
  if (!sorted) return -1;
  memcpy(sorted, x->procs, (size_t)x->nprocs * sizeof *sorted);
  for (uint32_t i = 0; i < x->nprocs; i++) sorted[i].pid = (int32_t)i; /* remember the index */
  qsort(sorted, x->nprocs, sizeof *sorted, cmp_proc);
  for (uint32_t k = 0; k < x->nprocs; k++) {
    proc_t *p = &x->procs[sorted[k].pid];
    const file_t *f = &x->files[p->file];
    p->pid = (int32_t)k + 1;
    p->order = (int32_t)k;
    if (p->rank >= 0 && p->device >= 0)
      p->name = poolf(&x->pool, "rank %d \xc2\xb7 GPU %d%s%s%s \xc2\xb7 %s:%" PRIu64, p->rank,
                      p->device, p->bus_id[0] ? " (" : "", p->bus_id, p->bus_id[0] ? ")" : "",
                      f->host, f->pid);
    else if (p->rank >= 0)
      p->name = poolf(&x->pool, "rank %d \xc2\xb7 %s:%" PRIu64, p->rank, f->host, f->pid);
    else
      p->name = poolf(&x->pool, "%s:%" PRIu64, f->host, f->pid);
    tl_track_t *t = &p->trk;
    t->uuid = x->next_uuid++;
    t->idx = x->next_track++;
    t->kind = TK_PROCESS;
    t->pid = p->pid;
    t->order = p->order;
    t->name = p->name;
  }
  free(sorted);
  x->job_pid = (int32_t)x->nprocs + 1;
  return 0;
}

/* ================================================================ emitting helpers */

static void arg(wk_t *w, const char *n, uint8_t kind) {
  w->args[w->nargs].name = n;
  w->args[w->nargs].kind = kind;
}
static void a_u64(wk_t *w, const char *n, uint64_t v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_U64), w->args[w->nargs++].v.u = v;
}
static void a_i64(wk_t *w, const char *n, int64_t v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_I64), w->args[w->nargs++].v.i = v;
}
static void a_ptr(wk_t *w, const char *n, uint64_t v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_PTR), w->args[w->nargs++].v.u = v;
}
static void a_str(wk_t *w, const char *n, const char *v) {
  if (v && w->nargs < MAX_ARGS) arg(w, n, TA_STR), w->args[w->nargs++].v.s = v;
}
static void a_dbl(wk_t *w, const char *n, double v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_DBL), w->args[w->nargs++].v.d = v;
}
static void a_bool(wk_t *w, const char *n, uint64_t v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_BOOL), w->args[w->nargs++].v.u = v;
}

static const char *ref_str(wk_t *w, uint8_t kind, uint64_t v) {
  static const char *const k[] = {"none", "local", "foreign", "stale"};
  return poolf(&w->pool, "%s:0x%" PRIx64, kind < 4 ? k[kind] : "?", v);
}

/* every field of the START, by its schema name, after the record's header */
static void start_args(wk_t *w, const ncs_event_t *e) {
  w->nargs = 0;
  a_u64(w, "id", e->id);
  if (e->parent_kind == NCS_REF_LOCAL)
    a_u64(w, "parent", e->parent);
  else if (e->parent_kind != NCS_REF_NONE)
    a_str(w, "parent", ref_str(w, e->parent_kind, e->parent));
  uint64_t tid;
  if (hm_get(&w->tid_map, e->thread, &tid))
    a_u64(w, "tid", tid);
  else
    a_u64(w, "thread", e->thread);
  a_i64(w, "rank", e->rank);
  if (e->flags) a_u64(w, "flags", e->flags);
  if (e->ctx_kind == NCS_CTX_FOREIGN)
    a_str(w, "ctx",
          poolf(&w->pool, "foreign:%" PRIu64 ".%" PRIu64, e->ctx >> 16, e->ctx & 0xFFFF));
  else if (e->ctx_kind == NCS_CTX_INVALID)
    a_ptr(w, "ctx_invalid", e->ctx);
  const ncs_schema_t *s = &ncs_schema[e->type];
  for (unsigned i = 0; i < e->nfields && i < s->nfields; i++) {
    const char *n = w->x->argname[e->type][i];
    switch (s->fields[i].kind) {
    case NCS_FK_I64: a_i64(w, n, (int64_t)e->f[i]); break;
    case NCS_FK_STR: a_str(w, n, e->fstr[i] ? pool(&w->pool, e->fstr[i]) : NULL); break;
    case NCS_FK_PTR: a_ptr(w, n, e->f[i]); break;
    case NCS_FK_BOOL: a_bool(w, n, e->f[i]); break;
    case NCS_FK_REF:
      if (e->fref_kind[i] == NCS_REF_LOCAL)
        a_u64(w, n, e->f[i]);
      else if (e->fref_kind[i] != NCS_REF_NONE)
        a_str(w, n, ref_str(w, e->fref_kind[i], e->f[i]));
      break;
    default: a_u64(w, n, e->f[i]); break;
    }
  }
}

/* argument names: the schema's, prefixed with the type where they clash with the header's */
static void arg_names(ex_t *x) {
  static const char *const clash[] = {"id", "parent", "tid", "thread", "rank", "flags", "ctx"};
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    for (unsigned i = 0; i < ncs_schema[t].nfields; i++) {
      const char *n = ncs_schema[t].fields[i].name;
      int c = 0;
      for (size_t k = 0; k < sizeof clash / sizeof clash[0]; k++) c |= !strcmp(n, clash[k]);
      if (c) {
        snprintf(x->argbuf[t][i], sizeof x->argbuf[t][i], "%s.%s", ncs_schema[t].cli, n);
        x->argname[t][i] = x->argbuf[t][i];
      } else {
        x->argname[t][i] = n;
      }
    }
}

static tl_flow_t *flows(wk_t *w, uint32_t n) {
  if (GROW(w->flows, w->flow_cap, n ? n : 1) != 0) {
    set_oom(w);
    return NULL;
  }
  return w->flows;
}

static void new_track(wk_t *w, tl_track_t *t, uint8_t kind, uint64_t parent, int32_t pid) {
  memset(t, 0, sizeof *t);
  t->uuid = w->next_uuid++;
  t->idx = w->next_track++;
  t->kind = kind;
  t->parent = parent;
  t->pid = pid;
  w->st.tracks++;
}

/* a pooled name for (kind, value), formatted once per worker */
static const char *cached_name(wk_t *w, uint64_t kind, int64_t v, const char *fmt) {
  uint64_t key = hm_mix2(kind, (uint64_t)v), p;
  if (hm_get(&w->name_map, key, &p)) return (const char *)(uintptr_t)p;
  char buf[64];
  snprintf(buf, sizeof buf, fmt, v);
  const char *s = pool(&w->pool, buf);
  if (hm_put(&w->name_map, key, (uint64_t)(uintptr_t)s) != 0) set_oom(w);
  return s;
}

/* ================================================================ rows, lanes, groups */

static const char *const row_names[] = {"API",   "groups", "other", "collectives",
                                        "copy engine", "proxy progress", "GPU", "proxy",
                                        "steps", "net",    "net"};
static const char *const row_desc[] = {
    "NCCL API calls on the application's threads: ncclGroupStart..End (GroupApi), collective "
    "and send/recv calls (CollApi, P2pApi) and kernel launches (KernelLaunch).",
    "NCCL's internal Group event around the Coll/P2p operations of one ncclGroupEnd.",
    "Events of types this exporter does not place elsewhere.",
    "Coll and P2p operations (and CeColl) from enqueue (START) to completion: the last KernelCh "
    "or ProxyOp of the operation, derived by the plugin (COMPLETE). Linked to the job track.",
    "Copy-engine work: CeSync and CeBatch.",
    "The proxy thread's progress loop (ProxyCtrl): append, active, idle, sleep and wakeup.",
    "Per-channel GPU work (KernelCh) on the host time line: GPU globaltimer ns mapped with a "
    "per-process offset (docs/timeline.md).",
    "Network operations of the proxy (ProxyOp) on this channel, with their states.",
    "Network steps (ProxyStep) of this channel, with their wait states.",
    "Network plugin calls (NetPlugin) under this channel's steps.",
    "Network plugin calls (NetPlugin) whose step was not found."};

static uint32_t group_for(wk_t *w, uint32_t proc, const ncs_event_t *e, const comm_t *c) {
  uint64_t key;
  if (c)
    key = hm_mix2(proc, c->comm_id ? c->comm_id : hm_mix2(c->seg, c->index));
  else if (e->ctx_kind == NCS_CTX_FOREIGN)
    key = hm_mix2(proc, hm_mix2(0xF0, e->ctx));
  else
    key = hm_mix2(proc, 0xF1);
  int created;
  uint64_t *gi = hm_ref(&w->group_map, key, w->ngroups, &created);
  if (!gi) {
    set_oom(w);
    return NONE32;
  }
  if (!created) return (uint32_t)*gi;
  if (GROW(w->groups, w->group_cap, w->ngroups + 1) != 0) {
    set_oom(w);
    return NONE32;
  }
  const char *name;
  int32_t order;
  if (c) {
    if (c->name && *c->name)
      name = poolf(&w->pool, "comm %s 0x%016" PRIx64, c->name, c->comm_id);
    else
      name = poolf(&w->pool, "comm 0x%016" PRIx64, c->comm_id);
    order = 10 + (int32_t)c->order;
  } else if (e->ctx_kind == NCS_CTX_FOREIGN) {
    name = poolf(&w->pool, "PXN for pid %" PRIu64 " comm %" PRIu64, e->ctx >> 16, e->ctx & 0xFFFF);
    order = 1000;
  } else {
    name = "no communicator";
    order = 1001;
  }
  group_t *g = &w->groups[w->ngroups++];
  memset(g, 0, sizeof *g);
  proc_t *p = &w->x->procs[proc];
  new_track(w, &g->t, TK_GROUP, p->trk.uuid, p->pid);
  g->t.name = g->t.path = name;
  g->t.order = order;
  g->t.explicit_order = 1;
  g->t.sort = (uint32_t)order * 1000000u;
  g->t.desc = "One NCCL communicator of this rank: its operations, GPU channels, proxy and net.";
  return (uint32_t)*gi;
}

static uint32_t row_for(wk_t *w, uint32_t proc, uint32_t group, uint8_t kind, int32_t ch) {
  uint64_t key = hm_mix2(hm_mix2(proc, group), hm_mix2(kind, (uint64_t)(uint32_t)ch));
  int created;
  uint64_t *ri = hm_ref(&w->row_map, key, w->nrows, &created);
  if (!ri) {
    set_oom(w);
    return NONE32;
  }
  if (!created) return (uint32_t)*ri;
  if (GROW(w->rows, w->row_cap, w->nrows + 1) != 0) {
    set_oom(w);
    return NONE32;
  }
  row_t *r = &w->rows[w->nrows++];
  memset(r, 0, sizeof *r);
  r->proc = proc, r->group = group, r->kind = kind, r->ch = ch;
  if (kind >= RK_GPU && kind <= RK_NET)
    r->name = ch >= 0 ? poolf(&w->pool, "%s ch %d", row_names[kind], ch)
                      : poolf(&w->pool, "%s ch ?", row_names[kind]);
  else
    r->name = row_names[kind];
  r->desc = row_desc[kind];
  r->order = kind >= RK_GPU && kind <= RK_NET ? 100 + (ch >= 0 ? ch : 999) * 8 + (kind - RK_GPU)
             : kind == RK_NETX               ? 99
                                             : kind;
  r->path = group != NONE32 ? poolf(&w->pool, "%s / %s", w->groups[group].t.name, r->name)
                            : r->name;
  return (uint32_t)*ri;
}

/* the first lane of the row that is free at ts (nothing open, its last slice ended by ts) */
static uint32_t lane_pick(wk_t *w, uint32_t ri, uint64_t ts) {
  row_t *r = &w->rows[ri];
  for (uint32_t i = r->free_hint; i < r->nlanes; i++)
    if (!r->lanes[i].depth && r->lanes[i].last_end <= ts) {
      if (i == r->free_hint) r->free_hint++;
      return i;
    }
  if (GROW(r->lanes, r->lane_cap, r->nlanes + 1) != 0) {
    set_oom(w);
    return NONE32;
  }
  lane_t *l = &r->lanes[r->nlanes];
  proc_t *p = &w->x->procs[r->proc];
  uint64_t parent = p->trk.uuid;
  uint32_t sort = 0;
  if (r->group != NONE32) {
    group_t *g = &w->groups[r->group];
    if (!g->declared) {
      w->sink->track(w->sink, &g->t);
      g->declared = 1;
    }
    parent = g->t.uuid;
    sort = g->t.sort;
  }
  new_track(w, &l->t, TK_LANE, parent, p->pid);
  l->depth = 0;
  l->last_end = 0;
  l->t.name = r->name;
  l->t.path = r->path;
  l->t.merge_key = r->name;
  l->t.desc = r->desc;
  l->t.order = r->order;
  l->t.lane = (uint16_t)(r->nlanes < 0xFFFF ? r->nlanes : 0xFFFF);
  l->t.sort = sort + (uint32_t)r->order * 64 + (r->nlanes < 63 ? r->nlanes : 63);
  w->sink->track(w->sink, &l->t);
  if (r->free_hint == r->nlanes) r->free_hint++;
  return r->nlanes++;
}

/* a lane became free: the next pick may start looking there */
static void lane_freed(row_t *r, uint32_t lane) {
  if (lane < r->free_hint) r->free_hint = lane;
}

static void emit_begin(wk_t *w, const tl_track_t *t, uint64_t ts, const char *name, uint8_t cat,
                       const tl_flow_t *fl, uint32_t nfl, uint64_t corr) {
  tl_slice_t sl = {t, ts, name, cat, w->args, w->nargs, fl, nfl, corr};
  w->sink->begin(w->sink, &sl);
  w->st.slices++;
}

static void emit_instant(wk_t *w, const tl_track_t *t, uint64_t ts, const char *name,
                         uint8_t cat) {
  tl_slice_t sl = {t, ts, name, cat, w->args, w->nargs, NULL, 0, 0};
  w->sink->instant(w->sink, &sl);
  w->st.instants++;
}

/* ================================================================ counters */

static void heap_push(wk_t *w, uint64_t ts, uint32_t proc, uint8_t kind, double d) {
  if (GROW(w->heap, w->heap_cap, w->nheap + 1) != 0) {
    set_oom(w);
    return;
  }
  uint32_t i = w->nheap++;
  while (i) {
    uint32_t p = (i - 1) / 2;
    if (w->heap[p].ts <= ts) break;
    w->heap[i] = w->heap[p];
    i = p;
  }
  w->heap[i] = (cdelta_t){ts, d, proc, kind};
}

static cdelta_t heap_pop(wk_t *w) {
  cdelta_t top = w->heap[0], last = w->heap[--w->nheap];
  uint32_t i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= w->nheap) break;
    if (c + 1 < w->nheap && w->heap[c + 1].ts < w->heap[c].ts) c++;
    if (w->heap[c].ts >= last.ts) break;
    w->heap[i] = w->heap[c];
    i = c;
  }
  if (w->nheap) w->heap[i] = last;
  return top;
}

static const char *const ctr_names[2] = {"bytes in flight", "busbw"};

/* apply the counter changes up to `upto`, in time order, one sample per time and counter */
static void counters_flush(wk_t *w, uint64_t upto) {
  while (w->nheap && w->heap[0].ts <= upto) {
    cdelta_t d = heap_pop(w);
    proc_t *p = &w->x->procs[d.proc];
    p->ctr_val[d.kind] += d.delta;
    if (w->nheap && w->heap[0].ts == d.ts && w->heap[0].proc == d.proc &&
        w->heap[0].kind == d.kind)
      continue;
    tl_track_t *t = &p->ctr[d.kind];
    if (!p->ctr_declared[d.kind]) {
      new_track(w, t, TK_COUNTER, p->trk.uuid, p->pid);
      t->name = t->path = ctr_names[d.kind];
      t->order = 2000 + d.kind;
      t->integer = d.kind == 0;
      t->unit_bytes = d.kind == 0;
      t->unit = d.kind == 0 ? NULL : "GB/s";
      t->desc = d.kind == 0 ? "Bytes of the Coll/P2p operations between enqueue and completion."
                            : "Sum of the bus bandwidth of the operations running (GPU time when "
                              "known), as nccl-tests defines it.";
      w->sink->track(w->sink, t);
      p->ctr_declared[d.kind] = 1;
    }
    double v = p->ctr_val[d.kind];
    if (v < 1e-9 && v > -1e-9) v = p->ctr_val[d.kind] = 0;
    w->sink->counter(w->sink, t, d.ts, v);
    w->st.counter_samples++;
  }
}

/* ================================================================ the job tracks */

static const inst_t *sort_insts; /* qsort has no context argument; set under the single thread */
static int cmp_inst(const void *a, const void *b) {
  const inst_t *p = &sort_insts[*(const uint32_t *)a], *q = &sort_insts[*(const uint32_t *)b];
  if (p->comm_id != q->comm_id) return p->comm_id < q->comm_id ? -1 : 1;
  if (p->min_start != q->min_start) return p->min_start < q->min_start ? -1 : 1;
  int c = strcmp(p->func, q->func);
  if (c) return c;
  if (p->occurrence != q->occurrence) return p->occurrence < q->occurrence ? -1 : 1;
  return p->seq < q->seq ? -1 : p->seq > q->seq;
}

static uint64_t hub_flow(const inst_t *in, int32_t rank) {
  return nz(hm_mix2(in->h, 0xC011ull + (uint64_t)rank));
}

static void emit_job(wk_t *w) {
  ex_t *x = w->x;
  /* in order of comm and start, for the lanes */
  uint32_t *order = malloc(((size_t)x->ninsts + 1) * sizeof *order);
  if (!order) {
    set_oom(w);
    return;
  }
  for (uint32_t i = 0; i < x->ninsts; i++) order[i] = i;
  sort_insts = x->insts;
  qsort(order, x->ninsts, sizeof *order, cmp_inst);
  tl_track_t job;
  new_track(w, &job, TK_GROUP, 0, x->job_pid);
  job.name = job.path = "job";
  job.desc = "One row per communicator: one slice per collective instance over all its ranks.";
  job.order = -1;
  x->main_sink->track(x->main_sink, &job);
  lane_t *lanes = NULL;
  uint32_t nl = 0;
  size_t lcap = 0;
  uint64_t cur = 0;
  const char *row = NULL;
  for (uint32_t i = 0; i < x->ninsts && !w->oom; i++) {
    inst_t *in = &x->insts[order[i]];
    if (!in->nseen) continue;
    if (!row || in->comm_id != cur) {
      cur = in->comm_id, nl = 0;
      row = in->comm_name && *in->comm_name
                ? poolf(&w->pool, "comm %s 0x%016" PRIx64 " (%d ranks)", in->comm_name,
                        in->comm_id, in->nranks)
                : poolf(&w->pool, "comm 0x%016" PRIx64 " (%d ranks)", in->comm_id, in->nranks);
    }
    uint64_t s = in->min_start, e = max64(in->max_end, s + 1);
    uint32_t l;
    for (l = 0; l < nl; l++)
      if (lanes[l].last_end <= s) break;
    if (l == nl) {
      if (GROW(lanes, lcap, nl + 1) != 0) {
        set_oom(w);
        break;
      }
      new_track(w, &lanes[l].t, TK_LANE, job.uuid, x->job_pid);
      lanes[l].t.name = lanes[l].t.path = lanes[l].t.merge_key = row;
      lanes[l].t.lane = (uint16_t)(l < 0xFFFF ? l : 0xFFFF);
      lanes[l].t.sort = l;
      lanes[l].t.desc = "Collective instances (commId, func, seqNumber): from the first rank's "
                        "enqueue to the last rank's completion. skew_ns: last start - first "
                        "start; straggler_rank: the rank that started last.";
      x->main_sink->track(x->main_sink, &lanes[l].t);
      nl++;
    }
    lanes[l].last_end = e;
    w->nargs = 0;
    a_ptr(w, "commId", in->comm_id);
    a_str(w, "func", in->func);
    a_u64(w, "seqNumber", in->seq);
    if (in->occurrence) a_u64(w, "occurrence", in->occurrence);
    a_i64(w, "nranks", in->nranks);
    a_u64(w, "ranks_seen", in->nseen);
    a_i64(w, "first_rank", in->first_rank);
    a_i64(w, "straggler_rank", in->straggler);
    a_u64(w, "skew_ns", in->max_start - in->min_start);
    a_i64(w, "last_to_finish_rank", in->last_rank);
    a_u64(w, "span_ns", e - s);
    a_u64(w, "count", in->count);
    a_str(w, "datatype", in->dtype);
    a_str(w, "algo", in->algo);
    a_str(w, "proto", in->proto);
    uint32_t nf = 0;
    tl_flow_t *fl = flows(w, (uint32_t)in->nranks);
    if (!fl) break;
    for (int32_t r = 0; r < in->nranks; r++)
      if (in->bits[r / 64] >> (r & 63) & 1) fl[nf].id = hub_flow(in, r), fl[nf++].out = 1;
    tl_slice_t sl = {&lanes[l].t, s, in->func, TC_JOB, w->args, w->nargs, fl, nf, in->h};
    x->main_sink->begin(x->main_sink, &sl);
    x->main_sink->end(x->main_sink, &lanes[l].t, e, NULL, 0);
    w->st.slices++;
    w->st.job_slices++;
    w->st.coll_flows += nf;
  }
  free(lanes);
  free(order);
}

/* ================================================================ pass 2: emit */

static open_t *open_new(wk_t *w, uint64_t id) {
  uint32_t i;
  if (w->nfree) {
    i = w->free_open[--w->nfree];
  } else {
    if (GROW(w->open, w->open_cap, w->nopen + 1) != 0) {
      set_oom(w);
      return NULL;
    }
    i = w->nopen++;
  }
  if (hm_put(&w->open_map, id, i) != 0) {
    set_oom(w);
    return NULL;
  }
  open_t *o = &w->open[i];
  memset(o, 0, sizeof *o);
  o->id = id;
  o->in_use = 1;
  return o;
}

static open_t *open_get(wk_t *w, uint64_t id) {
  uint64_t i;
  return hm_get(&w->open_map, id, &i) ? &w->open[i] : NULL;
}

static void open_del(wk_t *w, open_t *o) {
  hm_del(&w->open_map, o->id);
  o->in_use = 0;
  if (GROW(w->free_open, w->free_cap, w->nfree + 1) != 0) {
    set_oom(w);
    return;
  }
  w->free_open[w->nfree++] = (uint32_t)(o - w->open);
}

/* close o at ts (clamped so that the slice and its phase last at least 1 ns and stay nested) */
static void close_open(wk_t *w, open_t *o, uint64_t ts, int unfinished) {
  row_t *r = &w->rows[o->row];
  lane_t *l = &r->lanes[o->lane];
  uint64_t t = max64(ts, o->last);
  if (o->phase_open) {
    t = max64(t, o->phase_start + 1);
    w->sink->end(w->sink, &l->t, t, NULL, 0);
  }
  t = max64(t, o->start + 1);
  w->sink->end(w->sink, &l->t, t, NULL, 0);
  l->depth = 0;
  l->last_end = t;
  lane_freed(r, o->lane);
  if (unfinished) w->st.unfinished++;
  open_del(w, o);
}

static void close_all(wk_t *w, uint64_t ts) {
  for (uint32_t i = 0; i < w->nopen; i++)
    if (w->open[i].in_use) close_open(w, &w->open[i], ts, 1);
}

static const char *state_phase_name(unsigned s) {
  const char *n = ncs_state_name(s);
  static const char *const pre[] = {"ProxyStep", "ProxyOp", "ProxyCtrl"};
  for (size_t i = 0; i < 3; i++)
    if (!strncmp(n, pre[i], strlen(pre[i]))) return n + strlen(pre[i]);
  return n;
}

/* the links of a Coll (to its instance on the job track) or a P2p (send to receive) */
static uint64_t links(wk_t *w, const ncs_event_t *e, const comm_t *c, const ent_t *en,
                      uint64_t cid, const char *func, uint64_t start, tl_flow_t *bf,
                      uint32_t *nb, tl_flow_t *ef, uint32_t *ne) {
  ex_t *x = w->x;
  if (e->type == NCS_T_COLL) {
    inst_t *in = en && en->inst && en->rank >= 0 ? &x->insts[en->inst - 1] : NULL;
    if (!in || !in->bits || en->rank >= in->nranks) return 0;
    a_u64(w, "wait_ns", in->max_start > start ? in->max_start - start : 0);
    a_i64(w, "straggler_rank", in->straggler);
    a_u64(w, "skew_ns", in->max_start - in->min_start);
    bf[*nb].id = hub_flow(in, en->rank), bf[(*nb)++].out = 0;
    return in->h;
  }
  if (!cid || !c || !func || !en || en->rank < 0) return 0;
  int send = !strcmp(func, "Send");
  int64_t peer = (int64_t)fval(e, NCS_F(P2p, peer));
  uint64_t pi;
  if ((!send && strcmp(func, "Recv")) || peer < 0 || peer >= c->nranks) return 0;
  int32_t src = send ? en->rank : (int32_t)peer, dst = send ? (int32_t)peer : en->rank;
  uint64_t pk = pair_key(cid, src, dst);
  int created;
  uint64_t *k = hm_ref(&w->occ_map, hm_mix2(pk, (uint64_t)send), 0, &created);
  if (!k) {
    set_oom(w);
    return 0;
  }
  if (!hm_get(&x->pair_map, pk, &pi)) return 0;
  uint64_t nth = (*k)++;
  const pair_t *p = &x->pairs[pi];
  if (nth >= p->nsend || nth >= p->nrecv) return 0;
  uint64_t id = nz(hm_mix2(pk, 0xF10Aull + nth));
  a_i64(w, "p2p_seq", (int64_t)nth);
  if (send) {
    bf[*nb].id = id, bf[(*nb)++].out = 1;
    w->st.p2p_flows++;
  } else {
    ef[*ne].id = id, ef[(*ne)++].out = 0;
  }
  return nz(hm_mix2(pk, nth));
}

static void coll_p2p(wk_t *w, file_t *f, const ncs_event_t *e, uint32_t proc, const comm_t *c,
                     uint32_t group) {
  const ent_t *en = NULL;
  if (w->ent_cursor < f->nent && f->ents[w->ent_cursor].id == e->id &&
      f->ents[w->ent_cursor].seg == w->seg)
    en = &f->ents[w->ent_cursor++];
  uint64_t start = to_out(f, e->ts);
  uint64_t end = en ? to_out(f, ent_end(f, en)) : start + 1;
  int coll = e->type == NCS_T_COLL;
  const char *func = fstr(&w->pool, e, coll ? NCS_F(Coll, func) : NCS_F(P2p, func));
  if (hm_put(&w->parent_map, e->id, (uint64_t)(uintptr_t)(func ? func : "")) != 0) set_oom(w);
  start_args(w, e);
  uint64_t cid = c ? link_id(c, e, coll ? NCS_F(Coll, commHash) : NCS_F(P2p, commHash)) : 0;
  if (cid) a_ptr(w, "commId", cid);
  if (c) a_i64(w, "comm_rank", c->rank), a_i64(w, "nranks", c->nranks);
  uint64_t count = fval(e, coll ? NCS_F(Coll, count) : NCS_F(P2p, count));
  int dsz = (int)ncs_dtype_size(fraw(e, coll ? NCS_F(Coll, datatype) : NCS_F(P2p, datatype)));
  uint64_t bytes = count * (uint64_t)dsz;
  if (dsz) a_u64(w, "bytes", bytes);
  uint64_t gs = 0, ge = 0;
  if (en) {
    static const char *const how[] = {"none", "kernel", "proxy", "kernel+proxy"};
    if (en->stop) a_u64(w, "enqueue_ns", en->stop > en->start ? en->stop - en->start : 0);
    a_str(w, "completion", !en->has_complete                 ? "unknown"
                           : en->cflags & NCS_CF_NO_CHILDREN ? "no children"
                                                             : how[en->cflags & 3]);
    if (en->cflags & NCS_CF_FORCED) a_bool(w, "completion_forced", 1);
    if (en->cflags & NCS_CF_REVISED) a_bool(w, "completion_revised", 1);
    a_u64(w, "duration_ns", end - start);
    const gpuclk_t *g = &w->x->procs[proc].clk;
    if (g->has && en->gpu_start && en->gpu_stop > en->gpu_start) {
      gs = to_out(f, en->gpu_start + (uint64_t)g->off);
      ge = to_out(f, en->gpu_stop + (uint64_t)g->off);
      a_u64(w, "gpu_start_ns", gs);
      a_u64(w, "gpu_ns", ge - gs);
    }
  }
  /* bandwidths as nccl-tests computes them, over the GPU time when known */
  double bus = 0;
  uint64_t bs = gs ? gs : start, be = gs ? ge : end;
  if (bytes && be > bs && func) {
    double n = c && c->nranks > 0 ? (double)c->nranks : 1, total = (double)bytes, factor = 1;
    if (coll && !strcmp(func, "AllReduce"))
      factor = 2 * (n - 1) / n;
    else if (coll && (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter")))
      total = (double)bytes * n, factor = (n - 1) / n;
    double alg = total / (double)(be - bs);
    bus = alg * factor;
    a_dbl(w, "algbw_GBps", alg);
    a_dbl(w, "busbw_GBps", bus);
  }
  tl_flow_t bf[1], ef[1];
  uint32_t nb = 0, ne = 0;
  uint64_t corr = links(w, e, c, en, cid, func, start, bf, &nb, ef, &ne);
  /* the slice, whole */
  uint32_t row = row_for(w, proc, group, RK_COLL, -1);
  if (row == NONE32) return;
  uint32_t ln = lane_pick(w, row, start);
  if (ln == NONE32) return;
  lane_t *l = &w->rows[row].lanes[ln];
  const char *name = func ? func : ncs_type_name(e->type);
  if (!coll && func) {
    int64_t peer = (int64_t)fval(e, NCS_F(P2p, peer));
    name = !strcmp(func, "Send")   ? cached_name(w, 1, peer, "Send to %" PRId64)
           : !strcmp(func, "Recv") ? cached_name(w, 2, peer, "Recv from %" PRId64)
                                   : func;
  }
  emit_begin(w, &l->t, start, name, coll ? TC_COLL : TC_P2P, bf, nb, corr);
  w->sink->end(w->sink, &l->t, end, ef, ne);
  l->last_end = end;
  lane_freed(&w->rows[row], ln);
  /* counters */
  if (bytes) {
    heap_push(w, start, proc, 0, (double)bytes);
    heap_push(w, end, proc, 0, -(double)bytes);
  }
  if (bus > 0) {
    heap_push(w, bs, proc, 1, bus);
    heap_push(w, be, proc, 1, -bus);
  }
  if (start > w->max_coll_start) w->max_coll_start = start;
  if (w->max_coll_start > COUNTER_WINDOW_NS)
    counters_flush(w, w->max_coll_start - COUNTER_WINDOW_NS);
}

static void ev_start(wk_t *w, file_t *f, const ncs_event_t *e) {
  const comm_t *c = e->ctx_kind == NCS_CTX_LOCAL ? file_comm(f, w->seg, e->ctx) : NULL;
  uint32_t proc = c ? c->proc : f->p0;
  uint32_t types = w->x->o.types;
  if (e->type == NCS_T_COLL || e->type == NCS_T_P2P) {
    if (!(types & (1u << e->type))) {
      if (w->ent_cursor < f->nent && f->ents[w->ent_cursor].id == e->id) w->ent_cursor++;
      return;
    }
    coll_p2p(w, f, e, proc, c, group_for(w, proc, e, c));
    return;
  }
  if (!(types & (1u << e->type))) return;
  uint64_t ts = to_out(f, e->ts);
  uint8_t kind, cat;
  int32_t ch = -1;
  uint32_t group = NONE32;
  const char *name = ncs_type_name(e->type);
  open_t *parent = e->parent_kind == NCS_REF_LOCAL ? open_get(w, e->parent) : NULL;
  int is_send = 0;
  switch (e->type) {
  case NCS_T_GROUP_API: kind = RK_API, cat = TC_API, name = "ncclGroup"; break;
  case NCS_T_COLL_API:
  case NCS_T_P2P_API: {
    kind = RK_API, cat = TC_API;
    const char *fn = fstr(&w->pool, e, e->type == NCS_T_COLL_API ? NCS_F(CollApi, func) : NCS_F(P2pApi, func));
    if (fn) {
      uint64_t key = hm_mix2(3, (uint64_t)(uintptr_t)fn), p;
      if (hm_get(&w->name_map, key, &p)) {
        name = (const char *)(uintptr_t)p;
      } else {
        name = poolf(&w->pool, "nccl%s", fn);
        if (hm_put(&w->name_map, key, (uint64_t)(uintptr_t)name) != 0) set_oom(w);
      }
    } else {
      name = ncs_type_name(e->type);
    }
    break;
  }
  case NCS_T_KERNEL_LAUNCH: kind = RK_API, cat = TC_API, name = "kernel launch"; break;
  case NCS_T_GROUP: kind = RK_GROUP, cat = TC_GROUP, name = "group"; break;
  case NCS_T_CE_COLL: {
    kind = RK_COLL, cat = TC_CE;
    const char *fn = fraw(e, NCS_F(CeColl, func));
    name = fn ? poolf(&w->pool, "%s (CE)", fn) : name;
    group = group_for(w, proc, e, c);
    break;
  }
  case NCS_T_CE_SYNC:
  case NCS_T_CE_BATCH:
    kind = RK_CE, cat = TC_CE, name = e->type == NCS_T_CE_SYNC ? "CE sync" : "CE batch";
    group = group_for(w, proc, e, c);
    break;
  case NCS_T_PROXY_CTRL:
    kind = RK_PCTRL, cat = TC_PROXYCTRL, name = "proxy ctrl";
    group = group_for(w, proc, e, c);
    break;
  case NCS_T_KERNEL_CH: {
    kind = RK_GPU, cat = TC_KERNEL;
    uint64_t chv = fval(e, NCS_F(KernelCh, channelId)), pt = fval(e, NCS_F(KernelCh, pTimer)), fn;
    ch = chv < 1024 ? (int32_t)chv : -1;
    if (e->parent_kind == NCS_REF_LOCAL && hm_get(&w->parent_map, e->parent, &fn) &&
        *(const char *)(uintptr_t)fn)
      name = (const char *)(uintptr_t)fn;
    else
      name = "kernel";
    const gpuclk_t *g = &w->x->procs[proc].clk;
    if (g->has && pt) ts = to_out(f, pt + (uint64_t)g->off);
    group = group_for(w, proc, e, c);
    break;
  }
  case NCS_T_PROXY_OP: {
    kind = RK_PROXY, cat = TC_PROXYOP;
    uint64_t chv = fval(e, NCS_F(ProxyOp, channelId));
    ch = chv < 1024 ? (int32_t)chv : -1;
    is_send = fval(e, NCS_F(ProxyOp, isSend)) != 0;
    int64_t peer = (int64_t)fval(e, NCS_F(ProxyOp, peer));
    name = is_send ? cached_name(w, 4, peer, "send to %" PRId64)
                   : cached_name(w, 5, peer, "recv from %" PRId64);
    group = group_for(w, proc, e, c);
    break;
  }
  case NCS_T_PROXY_STEP:
    kind = RK_STEPS, cat = TC_PROXYSTEP;
    if (parent && parent->type == NCS_T_PROXY_OP) {
      ch = parent->ch, is_send = parent->is_send, group = parent->group, proc = parent->proc;
      name = is_send ? "send step" : "recv step";
    } else {
      name = "step";
      group = group_for(w, proc, e, c);
    }
    break;
  case NCS_T_NET_PLUGIN: {
    cat = TC_NET;
    uint64_t nid = fval(e, NCS_F(NetPlugin, id));
    name = (nid & 0x20000) ? "net socket" : (nid & 0x10000) ? "net ib" : "net";
    if (parent && parent->type == NCS_T_PROXY_STEP)
      kind = RK_NET, ch = parent->ch, group = parent->group, proc = parent->proc;
    else
      kind = RK_NETX, group = group_for(w, proc, e, c);
    break;
  }
  default: kind = RK_OTHER, cat = TC_OTHER; break;
  }
  if (w->oom) return;
  uint32_t row = row_for(w, proc, group, kind, ch);
  if (row == NONE32) return;
  uint32_t ln = lane_pick(w, row, ts);
  if (ln == NONE32) return;
  open_t *o = open_new(w, e->id);
  if (!o) return;
  lane_t *l = &w->rows[row].lanes[ln];
  l->depth = 1;
  o->row = row, o->lane = ln, o->start = o->last = ts, o->type = e->type;
  o->group = group, o->proc = proc, o->ch = ch, o->is_send = (uint8_t)is_send;
  start_args(w, e);
  if (e->type == NCS_T_KERNEL_CH && w->x->procs[proc].clk.has && fval(e, NCS_F(KernelCh, pTimer)))
    a_u64(w, "host_seen_ns", to_out(f, e->ts));
  emit_begin(w, &l->t, ts, name, cat, NULL, 0, 0);
}

static void ev_state(wk_t *w, file_t *f, const ncs_event_t *e) {
  open_t *o = open_get(w, e->id);
  if (!o) {
    w->st.unmatched_stops++;
    return;
  }
  lane_t *l = &w->rows[o->row].lanes[o->lane];
  uint64_t ts = max64(to_out(f, e->ts), o->last);
  if (e->type == NCS_T_KERNEL_CH && e->state == ST_KERNEL_CH_STOP) { /* the GPU end */
    const gpuclk_t *g = &w->x->procs[o->proc].clk;
    if (g->has && e->arg0) o->gpu_end = to_out(f, e->arg0 + (uint64_t)g->off);
    return;
  }
  w->nargs = 0;
  if (e->arg0) a_u64(w, e->type == NCS_T_NET_PLUGIN ? "data" : "arg0", e->arg0);
  if (e->arg1) a_u64(w, "arg1", e->arg1);
  if (e->type == NCS_T_PROXY_OP || e->type == NCS_T_PROXY_STEP || e->type == NCS_T_PROXY_CTRL) {
    if (o->phase_open) {
      ts = max64(ts, o->phase_start + 1);
      w->sink->end(w->sink, &l->t, ts, NULL, 0);
    }
    emit_begin(w, &l->t, ts, state_phase_name(e->state), TC_PHASE, NULL, 0, 0);
    o->phase_open = 1, o->phase_start = ts, o->last = ts;
    l->depth = 2;
  } else {
    emit_instant(w, &l->t, ts, ncs_state_name(e->state), TC_STATE);
    o->last = ts;
  }
}

static void ev_stop(wk_t *w, file_t *f, const ncs_event_t *e) {
  open_t *o = open_get(w, e->id);
  if (!o) {
    w->st.unmatched_stops++;
    return;
  }
  uint64_t ts = to_out(f, e->ts);
  if (o->type == NCS_T_KERNEL_CH && o->gpu_end) ts = o->gpu_end;
  close_open(w, o, ts, 0);
}

static void reset_file_state(wk_t *w) {
  for (uint32_t i = 0; i < w->nrows; i++) free(w->rows[i].lanes);
  w->nrows = 0, w->ngroups = 0, w->nopen = 0, w->nfree = 0, w->nheap = 0;
  hm_free(&w->row_map), hm_free(&w->group_map), hm_free(&w->open_map);
  hm_free(&w->parent_map), hm_free(&w->occ_map), hm_free(&w->tid_map), hm_free(&w->name_map);
  w->max_coll_start = 0, w->ent_cursor = 0, w->seg = 0;
}

/* the uuids of file fi: its own range, so that files can be written in any order */
static uint64_t file_uuid_base(uint32_t fi) { return (uint64_t)(fi + 1) << 26; }

static void emit_file(wk_t *w, uint32_t fi) {
  ex_t *x = w->x;
  file_t *f = &x->files[fi];
  w->f = f, w->fi = fi;
  reset_file_state(w);
  w->next_uuid = file_uuid_base(fi);
  w->next_track = 0;
  w->sink->seq_begin(w->sink, fi + 2);
  for (uint32_t p = f->p0; p < f->p1; p++) w->sink->track(w->sink, &x->procs[p].trk);
  w->st.processes += f->p1 - f->p0;
  w->st.tracks += f->p1 - f->p0;
  char err[256];
  ncs_reader_t *r = ncs_reader_open(f->path, err, sizeof err);
  if (!r) {
    file_done(w, f);
    return;
  }
  ncs_item_t it;
  uint64_t n = 0;
  int nseg = 0;
  while (!w->oom && !w->sink->err && ncs_reader_next(r, &it) > 0) {
    if ((++n & 8191) == 0) {
      progress(w, r);
      if (atomic_load(&x->failed) || atomic_load(&x->oom)) break;
    }
    if (it.what == NCS_ITEM_SEGMENT) {
      if (nseg) close_all(w, to_out(f, f->seg_end[w->seg]));
      w->seg = (uint32_t)nseg++;
      hm_clear(&w->tid_map);
      hm_clear(&w->parent_map);
      continue;
    }
    if (it.what == NCS_ITEM_THREAD) {
      if (hm_put(&w->tid_map, it.thread_index, it.thread_tid) != 0) set_oom(w);
      continue;
    }
    if (it.what != NCS_ITEM_EVENT || !nseg || w->seg >= f->nseg) continue;
    const ncs_event_t *e = &it.ev;
    int linked = e->type == NCS_T_COLL || e->type == NCS_T_P2P;
    switch (e->kind) {
    case NCS_REC_START: ev_start(w, f, e); break;
    case NCS_REC_STOP:
      if (!linked && (x->o.types & (1u << e->type))) ev_stop(w, f, e);
      break;
    case NCS_REC_STATE:
      if (!linked && (x->o.types & (1u << e->type))) ev_state(w, f, e);
      break;
    default: break;
    }
  }
  if (nseg && w->seg < f->nseg) close_all(w, to_out(f, f->seg_end[w->seg]));
  counters_flush(w, UINT64_MAX);
  file_done(w, f);
  ncs_reader_close(r);
  free(f->ents); /* not needed any more */
  f->ents = NULL;
  f->nent = 0;
}

/* ================================================================ workers */

static void wk_free(wk_t *w) {
  reset_file_state(w);
  free(w->rows), free(w->groups), free(w->open), free(w->free_open), free(w->heap), free(w->flows);
  ncs_pool_free(&w->pool);
  if (w->sink) w->sink->destroy(w->sink);
  w->sink = NULL;
}

static void *index_worker(void *arg) {
  wk_t *w = arg;
  ex_t *x = w->x;
  for (;;) {
    pthread_mutex_lock(&x->mu);
    uint32_t fi = x->next_file++;
    pthread_mutex_unlock(&x->mu);
    if (fi >= x->nfiles || atomic_load(&x->oom)) break;
    index_file(w, &x->files[fi]);
  }
  return NULL;
}

static tl_sink_t *new_sink(ex_t *x, int fd, int whole) {
  return x->o.format == NCS_EXPORT_CHROME ? tl_chrome_sink(fd, x->origin, whole, x->job_pid)
                                          : tl_pftrace_sink(fd);
}

static void fail(ex_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(ex_t *x, const char *fmt, ...) {
  pthread_mutex_lock(&x->mu);
  if (!atomic_load(&x->failed)) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->fail_msg, sizeof x->fail_msg, fmt, ap);
    va_end(ap);
    atomic_store(&x->failed, 1);
  }
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

static void *emit_worker(void *arg) {
  wk_t *w = arg;
  ex_t *x = w->x;
  for (;;) {
    pthread_mutex_lock(&x->mu);
    /* stay at most a few files ahead of the one being appended: bounded temporary space */
    while (x->next_file < x->nfiles && x->next_file > x->appended + x->nworkers &&
           !atomic_load(&x->failed) && !atomic_load(&x->oom))
      pthread_cond_wait(&x->cv, &x->mu);
    uint32_t fi = x->next_file++;
    pthread_mutex_unlock(&x->mu);
    if (fi >= x->nfiles || atomic_load(&x->failed) || atomic_load(&x->oom)) break;
    file_t *f = &x->files[fi];
    int fd = ncs_out_scratch(x->tmp_dir);
    if (fd < 0) {
      fail(x, "cannot create a temporary file in %s: %s", x->tmp_dir, strerror(errno));
      break;
    }
    w->sink = new_sink(x, fd, 0);
    if (!w->sink) {
      close(fd);
      set_oom(w);
      break;
    }
    emit_file(w, fi);
    int bad = w->sink->finish(w->sink) != 0;
    int e = errno;
    w->st.bytes_out += w->sink->bytes_out;
    w->sink->destroy(w->sink);
    w->sink = NULL;
    if (bad) {
      close(fd);
      fail(x, "cannot write a temporary file in %s: %s", x->tmp_dir, strerror(e));
      break;
    }
    pthread_mutex_lock(&x->mu);
    f->frag_fd = fd;
    f->frag_done = 1;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
  }
  pthread_mutex_lock(&x->mu);
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

/* append a finished fragment to the output */
static int append_fragment(int out, int in) {
  off_t off = 0;
  for (;;) {
    ssize_t n = copy_file_range(in, &off, out, NULL, 1u << 30, 0);
    if (n > 0) continue;
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP &&
        errno != EBADF)
      return -1;
    break; /* not possible here (a pipe, another file system): copy by hand */
  }
  static char buf[1 << 20];
  for (;;) {
    ssize_t n = pread(in, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) return 0;
    off += n;
    for (ssize_t done = 0; done < n;) {
      ssize_t m = write(out, buf + done, (size_t)(n - done));
      if (m < 0 && errno == EINTR) continue;
      if (m < 0) return -1;
      done += m;
    }
  }
}

/* ================================================================ driver */

static void ex_free(ex_t *x) {
  for (uint32_t i = 0; i < x->nfiles; i++) {
    file_t *f = &x->files[i];
    free(f->path), free(f->seg_end), free(f->ents), free(f->comms);
    hm_free(&f->comm_map);
    if (f->frag_fd > 0) close(f->frag_fd);
  }
  for (uint32_t i = 0; i < x->ninsts; i++) free(x->insts[i].bits);
  free(x->files), free(x->procs), free(x->insts), free(x->pairs);
  hm_free(&x->inst_map), hm_free(&x->pair_map);
  ncs_pool_free(&x->pool);
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->cv);
}

static void add_stats(ncs_export_stats_t *a, const ncs_export_stats_t *b) {
  a->records += b->records, a->bytes_out += b->bytes_out, a->processes += b->processes;
  a->tracks += b->tracks, a->slices += b->slices, a->instants += b->instants;
  a->counter_samples += b->counter_samples, a->coll_flows += b->coll_flows;
  a->p2p_flows += b->p2p_flows, a->job_slices += b->job_slices;
  a->unmatched_stops += b->unmatched_stops, a->unfinished += b->unfinished;
}

static int list_files(ex_t *x, char *const *paths, size_t npaths, char *err, size_t errlen) {
  for (size_t i = 0; i < npaths; i++) {
    char **list;
    size_t n;
    if (ncs_list_traces(paths[i], &list, &n, err, errlen) != 0) return 2;
    for (size_t k = 0; k < n; k++) {
      if (GROW(x->files, x->file_cap, x->nfiles + 1) != 0) {
        ncs_free_paths(list, n);
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      file_t *f = &x->files[x->nfiles++];
      f->path = strdup(list[k]);
      f->frag_fd = -1;
      struct stat sb;
      f->size = stat(list[k], &sb) == 0 ? (uint64_t)sb.st_size : 0;
      x->bytes_total += 2 * f->size;
    }
    ncs_free_paths(list, n);
  }
  if (!x->nfiles) {
    snprintf(err, errlen, "no *%s files in %s%s", NCS_TRACE_SUFFIX, npaths ? paths[0] : "",
             npaths > 1 ? " and the other paths" : "");
    return 2;
  }
  return 0;
}

/* GPU offsets, their error bounds and the time origin */
static void clocks(ex_t *x, ncs_export_stats_t *st) {
  x->origin = UINT64_MAX;
  int conflicts = 0;
  int64_t worst = 0;
  for (uint32_t i = 0; i < x->nprocs; i++) {
    const gpuclk_t *g = &x->procs[i].clk;
    const file_t *f = &x->files[x->procs[i].file];
    if (!g->has) continue;
    st->gpu_mapped++;
    if (g->lo != INT64_MIN && g->lo <= g->off) {
      st->gpu_bounded++;
      if (g->off - g->lo > st->max_gpu_offset_err_ns) st->max_gpu_offset_err_ns = g->off - g->lo;
    }
    if (g->lo != INT64_MIN && g->lo > g->off) {
      conflicts++;
      if (g->lo - g->off > worst) worst = g->lo - g->off;
    }
    uint64_t t = to_out(f, g->min_pt + (uint64_t)g->off);
    if (g->min_pt != UINT64_MAX && t < x->origin) x->origin = t;
  }
  for (uint32_t i = 0; i < x->nfiles; i++) {
    file_t *f = &x->files[i];
    if (f->nseg && to_out(f, f->min_ts) < x->origin) x->origin = to_out(f, f->min_ts);
  }
  if (x->origin == UINT64_MAX) x->origin = 0;
  st->clock_conflicts = conflicts;
  if (conflicts)
    fprintf(stderr,
            "%s: warning: for %d of %d ranks the host and GPU clocks disagree by up to %.1f us "
            "(with the offset that no observation contradicts, a kernel would start before its "
            "launch): the host or GPU timestamps of those ranks are not consistent\n",
            x->o.prog, conflicts, st->gpu_mapped, (double)worst / 1e3);
}

static unsigned workers_for(const ex_t *x) {
  long n = x->o.jobs > 0 ? x->o.jobs : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > MAX_WORKERS) n = MAX_WORKERS;
  if ((uint32_t)n > x->nfiles) n = (long)x->nfiles;
  return (unsigned)n;
}

int ncs_export(char *const *paths, size_t npaths, const ncs_export_opts_t *o,
               ncs_export_stats_t *st, char *err, size_t errlen) {
  ex_t *x = calloc(1, sizeof *x);
  wk_t *ws = calloc(MAX_WORKERS, sizeof *ws);
  if (!x || !ws) {
    free(x), free(ws);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  memset(st, 0, sizeof *st);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->cv, NULL);
  x->o = *o;
  if (!x->o.types) x->o.types = (1u << NCS_T_COUNT) - 1;
  if (!x->o.prog) x->o.prog = "ncclscope export";
  x->next_uuid = 0x100;
  x->t0_ns = now_ns();
  arg_names(x);
  (void)ncs_crc32c(0, "", 0); /* build the CRC table before the threads share it */
  int rc = 0, fd = -1, opened = 0;
  tl_sink_t *ms = NULL;
  wk_t *w0 = &ws[0];
  ncs_out_t of;
  for (unsigned i = 0; i < MAX_WORKERS; i++) ws[i].x = x;
  rc = list_files(x, paths, npaths, err, errlen);
  if (rc) goto out;
  /* the output first: a refused one (it exists, it is an input) costs no reading */
  ncs_out_opts_t oo = {.force = o->force, .inputs = paths, .ninputs = npaths};
  if (ncs_out_open(&of, o->out, &oo, err, errlen) != 0) {
    rc = -2;
    goto out;
  }
  opened = 1;
  fd = of.fd;
  x->tmp_dir = of.dir;
  for (uint32_t i = 0; i < x->nfiles; i++) st->bytes_in += x->files[i].size;
  st->files = x->nfiles;
  x->nworkers = workers_for(x);
  for (uint32_t i = 0; i < x->nfiles; i++) pass0(x, &x->files[i]);
  host_offsets(x);
  /* pass 1 */
  x->next_file = 0;
  for (unsigned i = 1; i < x->nworkers; i++)
    if (pthread_create(&ws[i].thread, NULL, index_worker, &ws[i]) != 0) ws[i].thread = 0;
  index_worker(w0);
  for (unsigned i = 1; i < x->nworkers; i++)
    if (ws[i].thread) pthread_join(ws[i].thread, NULL);
  if (atomic_load(&x->oom)) goto oom;
  fold_instances(x);
  if (make_procs(x) != 0) goto oom;
  clocks(x, st);
  /* the job tracks into the output */
  ms = x->main_sink = new_sink(x, fd, 1);
  if (!ms) goto oom;
  atomic_store(&x->writing, 1);
  ms->seq_begin(ms, 1);
  w0->next_uuid = 1ull << 25; /* processes: from 0x100; files: (index + 1) << 26 */
  w0->next_track = x->next_track;
  if (x->o.types & (1u << NCS_T_COLL)) emit_job(w0);
  ncs_pool_free(&w0->pool);
  if (w0->oom) goto oom;
  /* pass 2 */
  x->direct = x->nworkers == 1;
  if (x->direct) {
    w0->sink = ms;
    for (uint32_t fi = 0; fi < x->nfiles && !w0->oom && !ms->err; fi++) emit_file(w0, fi);
    w0->sink = NULL;
  } else {
    tl_out_flush(ms);
    x->next_file = 0;
    unsigned started = 0;
    for (unsigned i = 0; i < x->nworkers; i++)
      if (pthread_create(&ws[i].thread, NULL, emit_worker, &ws[i]) == 0) started++;
      else ws[i].thread = 0;
    if (!started) { /* no thread: do it here */
      x->nworkers = 1;
      emit_worker(w0);
    }
    for (uint32_t fi = 0; fi < x->nfiles; fi++) {
      file_t *f = &x->files[fi];
      pthread_mutex_lock(&x->mu);
      while (!f->frag_done && !atomic_load(&x->failed) && !atomic_load(&x->oom)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 500000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        pthread_mutex_unlock(&x->mu);
        progress_print(x, 0);
        pthread_mutex_lock(&x->mu);
      }
      int ready = f->frag_done;
      pthread_mutex_unlock(&x->mu);
      if (!ready) break;
      if (append_fragment(fd, f->frag_fd) != 0) {
        fail(x, "cannot write %s: %s", o->out, strerror(errno));
        break;
      }
      close(f->frag_fd);
      f->frag_fd = -1;
      pthread_mutex_lock(&x->mu);
      x->appended = fi + 1;
      pthread_cond_broadcast(&x->cv);
      pthread_mutex_unlock(&x->mu);
    }
    fail(x, "%s", "stopped"); /* wakes the workers if something went wrong; harmless if not */
    for (unsigned i = 0; i < x->nworkers; i++)
      if (ws[i].thread) pthread_join(ws[i].thread, NULL);
    int all = 1;
    for (uint32_t fi = 0; fi < x->nfiles; fi++) all &= x->files[fi].frag_done;
    if (all) {
      atomic_store(&x->failed, 0);
    } else if (!atomic_load(&x->oom) && strcmp(x->fail_msg, "stopped")) {
      snprintf(err, errlen, "%s", x->fail_msg); /* writing the output or a fragment failed */
      rc = -2;
      goto out;
    }
  }
  if (atomic_load(&x->oom)) goto oom;
  if (ms->finish(ms) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", o->out, strerror(errno));
    rc = -2;
    goto out;
  }
  for (unsigned i = 0; i < MAX_WORKERS; i++) add_stats(st, &ws[i].st);
  st->bytes_out += ms->bytes_out; /* with workers, the fragments were counted by them */
  for (uint32_t i = 0; i < x->nfiles; i++) {
    file_t *f = &x->files[i];
    if (f->damage == NCS_DAMAGE_CORRUPT) st->damaged++, rc = rc ? rc : 1;
    if (f->damage == NCS_DAMAGE_TRUNCATED) st->truncated++;
    if (f->damage) fprintf(stderr, "%s: warning: %s: %s\n", x->o.prog, f->path, f->errmsg);
  }
  progress_print(x, 1);
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
  rc = -1;
out:
  for (unsigned i = 0; i < MAX_WORKERS; i++) {
    if (ws[i].sink == ms) ws[i].sink = NULL;
    wk_free(&ws[i]);
  }
  if (ms) ms->destroy(ms);
  if (opened && rc >= 0 && ncs_out_commit(&of, err, errlen) != 0) rc = -2;
  if (opened && rc < 0) ncs_out_abort(&of);
  st->seconds = (double)(now_ns() - x->t0_ns) * 1e-9;
  ex_free(x);
  free(x);
  free(ws);
  return rc;
}
