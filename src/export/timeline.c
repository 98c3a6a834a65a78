/* timeline.c - the timeline model behind `ncclscope export` (docs/timeline.md).
 *
 * Pass 0 reads the first items of every file (host, pid, first clock pair) to decide the job
 * time line. Pass 1 (index) reads each file once and keeps only what linking across ranks and
 * the emit pass need:
 *   - per Coll/P2p event, in file order: start, stop, completion (the last COMPLETE), GPU span,
 *     its collective instance and rank (64 bytes each);
 *   - per collective instance (commId, func, seqNumber): earliest and latest start, latest end,
 *     first rank, straggler, last rank to finish, and a bitmap of the ranks seen;
 *   - per (commId, sender, receiver): how many sends and receives, to pair the k-th of each;
 *   - per file: communicators, segment end times, the GPU clock offset and its error bound.
 * Then the job tracks are written, and pass 2 (emit) streams each file: every START becomes a
 * BEGIN on the first free lane of its row, every STOP the END, states become nested phases or
 * instants. Coll/P2p slices are written whole at their START, since their end is known from
 * pass 1. Memory in pass 2 is bounded by what is open at once (events, lanes, pending counter
 * changes), plus the index above.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/export.h"
#include "export/hmap.h"
#include "export/sink.h"
#include "trace/reader.h"

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

/* ================================================================ small helpers */

#define NONE32 0xFFFFFFFFu
#define COUNTER_WINDOW_NS 1000000000ull /* counter changes are reordered within 1 s */

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
  const uint8_t *s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}
static uint64_t mix2(uint64_t a, uint64_t b) { return hm_mix(a ^ hm_mix(b + 0x9e3779b97f4a7c15ull)); }
static uint64_t nz(uint64_t v) { return v ? v : 1; }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* growable array */
static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return 0;
  uint32_t n = *cap ? *cap : 16;
  while (n < need) n *= 2;
  void *q = realloc(*p, (size_t)n * elem);
  if (!q) return -1;
  memset((char *)q + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
  *p = q;
  *cap = n;
  return 0;
}
#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof *(arr))

/* ---------------------------------------------------------------- string pool */
typedef struct {
  hmap_t map; /* content hash -> char* (probing on collision: hash+1, ...) */
  char *block;
  size_t left;
  char **blocks;
  uint32_t nblocks, cap;
} pool_t;

static const char *pool_n(pool_t *p, const char *s, size_t n) {
  uint64_t h = fnv(s, n, 0xcbf29ce484222325ull), v;
  for (;; h++) {
    if (!hm_get(&p->map, h, &v)) break;
    const char *c = (const char *)(uintptr_t)v;
    if (strlen(c) == n && memcmp(c, s, n) == 0) return c;
  }
  if (n + 1 > p->left) {
    size_t sz = n + 1 > 65536 ? n + 1 : 65536;
    char *b = malloc(sz);
    if (!b || GROW(p->blocks, p->cap, p->nblocks + 1) != 0) {
      free(b);
      return "";
    }
    p->blocks[p->nblocks++] = b;
    p->block = b;
    p->left = sz;
  }
  char *c = p->block;
  memcpy(c, s, n);
  c[n] = 0;
  p->block += n + 1;
  p->left -= n + 1;
  if (hm_put(&p->map, h, (uint64_t)(uintptr_t)c) != 0) return c;
  return c;
}
static const char *pool(pool_t *p, const char *s) { return s ? pool_n(p, s, strlen(s)) : NULL; }
static const char *poolf(pool_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *poolf(pool_t *p, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return "";
  return pool_n(p, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}
static void pool_free(pool_t *p) {
  for (uint32_t i = 0; i < p->nblocks; i++) free(p->blocks[i]);
  free(p->blocks);
  hm_free(&p->map);
}

/* ================================================================ the index */

typedef struct {
  uint64_t comm_id; /* 0: unknown (ABI v1-v3): no linking across ranks */
  const char *name;
  int32_t rank, nranks;
  uint32_t seg, index, proc;
  uint32_t order; /* order of first appearance in the file: groups */
} comm_t;

typedef struct {         /* one Coll or P2p event, in file order */
  uint64_t id, start, stop, end, gpu_start, gpu_stop; /* host mono ns (gpu: raw pTimer) */
  uint32_t inst;         /* Coll: instance + 1; 0 none */
  int32_t rank;          /* its communicator rank; -1 unknown */
  uint16_t seg;
  uint8_t cflags, type;
  uint8_t dup, has_complete;
} ent_t;

typedef struct {
  uint64_t comm_id, seq, h, count;
  const char *func, *algo, *proto, *dtype, *comm_name;
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
  int32_t rank; /* world rank, -1 none */
  uint64_t world; /* world commId */
  int32_t pid, order;
  const char *name;
  tl_track_t trk;
  tl_track_t ctr[2];
  uint8_t ctr_declared[2];
  double ctr_val[2];
} proc_t;

typedef struct {
  char *path;
  uint64_t size;
  const char *host;
  uint64_t pid;
  int have_clock;
  int64_t clock_off;   /* realtime - mono from the first clock pair */
  int64_t host_off;    /* added to host mono to get output time */
  int has_gpu;
  int64_t gpu_off;     /* host mono = pTimer + gpu_off */
  int64_t gpu_lo;      /* lower bound of the true offset (INT64_MIN: unknown) */
  uint64_t min_ts, min_ptimer;
  uint64_t *seg_end;   /* per segment: last host ts */
  uint32_t nseg, seg_cap;
  ent_t *ents;
  uint32_t nent, ent_cap;
  uint32_t c0, c1;     /* its comms in ex->comms */
  uint32_t p0, p1;     /* its procs in ex->procs */
  hmap_t comm_map;     /* (seg << 32 | index) -> comm index */
  int damage;
  char errmsg[256];
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
  uint32_t nlanes, lane_cap;
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
  uint8_t type, phase_open, expired, is_send, in_use;
} open_t;

typedef struct {
  uint64_t ts;
  double delta;
  uint32_t proc;
  uint8_t kind;
} cdelta_t;

typedef struct {
  ncs_export_opts_t o;
  ncs_export_stats_t *st;
  tl_sink_t *sink;
  pool_t pool;
  file_t *files;
  uint32_t nfiles, file_cap;
  comm_t *comms;
  uint32_t ncomms, comm_cap;
  proc_t *procs;
  uint32_t nprocs, proc_cap;
  inst_t *insts;
  uint32_t ninsts, inst_cap;
  hmap_t inst_map; /* key hash -> inst + 1 */
  pair_t *pairs;
  uint32_t npairs, pair_cap;
  hmap_t pair_map; /* (commId, src, dst) -> pair index */
  uint64_t next_uuid;
  uint32_t next_track;
  int32_t job_pid;
  uint64_t origin;
  /* progress */
  uint64_t bytes_total, bytes_done;
  double t0, last_print;
  int printed;
  /* emit pass, per file */
  file_t *f;
  uint32_t fi;
  row_t *rows;
  uint32_t nrows, row_cap;
  hmap_t row_map;
  group_t *groups;
  uint32_t ngroups, group_cap;
  hmap_t group_map;
  open_t *open;
  uint32_t nopen, open_cap, *free_open, nfree, free_cap;
  hmap_t open_map;   /* id -> open index */
  hmap_t parent_map; /* Coll/P2p id -> func (KernelCh names) */
  hmap_t occ_map;    /* p2p (commId, me, peer, dir) -> count */
  hmap_t tid_map;    /* thread index -> tid, per segment */
  cdelta_t *heap;
  uint32_t nheap, heap_cap;
  uint64_t max_coll_start;
  uint32_t ent_cursor, seg;
  const char *argname[NCS_T_COUNT][NCS_MAX_FIELDS];
  tl_arg_t args[64];
  uint32_t nargs;
  tl_flow_t *flows;
  uint32_t flow_cap;
  int oom;
} ex_t;

static void new_track(ex_t *x, tl_track_t *t, uint8_t kind, uint64_t parent, int32_t pid);

/* ================================================================ progress */

static void progress(ex_t *x, ncs_reader_t *r, int force) {
  if (!x->o.progress) return;
  double t = now_s();
  if (!force && (t - x->t0 < 1.0 || t - x->last_print < 0.5)) return;
  if (force && !x->printed) return;
  uint64_t done = x->bytes_done + (r ? ncs_reader_offset(r) : 0);
  double pct = x->bytes_total ? 100.0 * (double)done / (double)x->bytes_total : 100.0;
  fprintf(stderr, "%s: %5.1f%% (%s, file %u of %u, %.1f s)\n", x->o.prog, pct > 100 ? 100 : pct,
          x->sink ? "writing" : "indexing", x->fi + 1, x->nfiles, t - x->t0);
  x->last_print = t;
  x->printed = 1;
}

/* ================================================================ pass 0: hosts and clocks */

static int pass0(ex_t *x, file_t *f) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open(f->path, err, sizeof err);
  if (!r) {
    snprintf(f->errmsg, sizeof f->errmsg, "%s", err);
    f->damage = NCS_DAMAGE_CORRUPT;
    return 0;
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
      f->have_clock = 1;
      break;
    }
  }
  ncs_reader_close(r);
  if (!f->host) f->host = "?";
  return 0;
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

static comm_t *file_comm(ex_t *x, const file_t *f, uint32_t seg, uint64_t index) {
  uint64_t v;
  if (index > 0xFFFFFFFFu || !hm_get(&f->comm_map, ((uint64_t)seg << 32) | index, &v)) return NULL;
  return &x->comms[v];
}

static uint64_t to_out(const file_t *f, uint64_t host) { return host + (uint64_t)f->host_off; }

static int dtype_size(const char *d) {
  if (!d) return 0;
  if (!strncmp(d, "nccl", 4)) d += 4;
  static const struct {
    const char *n;
    int s;
  } t[] = {{"Int8", 1},    {"Char", 1},     {"Uint8", 1},    {"Float8e4m3", 1}, {"Float8e5m2", 1},
           {"Float16", 2}, {"Half", 2},     {"Bfloat16", 2}, {"Int32", 4},      {"Int", 4},
           {"Uint32", 4},  {"Float32", 4},  {"Float", 4},    {"Int64", 8},      {"Uint64", 8},
           {"Float64", 8}, {"Double", 8}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(d, t[i].n)) return t[i].s;
  return 0;
}

/* schema field index by name, or -1 */
static int fidx(unsigned type, const char *name) {
  for (unsigned i = 0; i < ncs_schema[type].nfields; i++)
    if (!strcmp(ncs_schema[type].fields[i].name, name)) return (int)i;
  return -1;
}
static int F_COLL_SEQ, F_COLL_FUNC, F_COLL_COUNT, F_COLL_DTYPE, F_COLL_ALGO, F_COLL_PROTO,
    F_COLL_HASH, F_P2P_FUNC, F_P2P_PEER, F_P2P_COUNT, F_P2P_DTYPE, F_P2P_HASH, F_PO_CH, F_PO_PEER,
    F_PO_SEND, F_KC_CH, F_KC_PTIMER, F_API_FUNC, F_P2PAPI_FUNC, F_CE_FUNC, F_NET_ID;

static void field_indexes(void) {
  F_COLL_SEQ = fidx(NCS_T_COLL, "seqNumber"), F_COLL_FUNC = fidx(NCS_T_COLL, "func");
  F_COLL_COUNT = fidx(NCS_T_COLL, "count"), F_COLL_DTYPE = fidx(NCS_T_COLL, "datatype");
  F_COLL_ALGO = fidx(NCS_T_COLL, "algo"), F_COLL_PROTO = fidx(NCS_T_COLL, "proto");
  F_COLL_HASH = fidx(NCS_T_COLL, "commHash");
  F_P2P_FUNC = fidx(NCS_T_P2P, "func"), F_P2P_PEER = fidx(NCS_T_P2P, "peer");
  F_P2P_COUNT = fidx(NCS_T_P2P, "count"), F_P2P_DTYPE = fidx(NCS_T_P2P, "datatype");
  F_P2P_HASH = fidx(NCS_T_P2P, "commHash");
  F_PO_CH = fidx(NCS_T_PROXY_OP, "channelId"), F_PO_PEER = fidx(NCS_T_PROXY_OP, "peer");
  F_PO_SEND = fidx(NCS_T_PROXY_OP, "isSend");
  F_KC_CH = fidx(NCS_T_KERNEL_CH, "channelId"), F_KC_PTIMER = fidx(NCS_T_KERNEL_CH, "pTimer");
  F_API_FUNC = fidx(NCS_T_COLL_API, "func"), F_P2PAPI_FUNC = fidx(NCS_T_P2P_API, "func");
  F_CE_FUNC = fidx(NCS_T_CE_COLL, "func"), F_NET_ID = fidx(NCS_T_NET_PLUGIN, "id");
}

static const char *fstr(ex_t *x, const ncs_event_t *e, int i) {
  return i >= 0 && i < e->nfields ? pool(&x->pool, e->fstr[i]) : NULL;
}
static uint64_t fval(const ncs_event_t *e, int i) { return i >= 0 && i < e->nfields ? e->f[i] : 0; }

/* commId for linking: the COMM's, else the descriptor's commHash (v4+), else 0 */
static uint64_t link_id(const comm_t *c, const ncs_event_t *e, int hash_field) {
  if (c && c->comm_id) return c->comm_id;
  return fval(e, hash_field);
}

static uint64_t inst_key(uint64_t comm_id, const char *func, uint64_t seq) {
  return mix2(mix2(comm_id, fnv(func, strlen(func), 0xcbf29ce484222325ull)), seq);
}
static uint64_t pair_key(uint64_t comm_id, int32_t src, int32_t dst) {
  return mix2(mix2(comm_id, (uint64_t)(uint32_t)src), (uint64_t)(uint32_t)dst + 0x5e4d);
}

typedef struct {
  hmap_t ids;      /* (seg, id) -> ent index */
  hmap_t launch;   /* (seg, comm index) -> the last KernelLaunch start */
  hmap_t launched; /* (seg, Coll/P2p id) -> the KernelLaunch start before it */
} idx_tmp_t;

static void index_start(ex_t *x, file_t *f, idx_tmp_t *tmp, const ncs_event_t *e, uint32_t seg) {
  hmap_t *ids = &tmp->ids;
  if (e->type == NCS_T_KERNEL_LAUNCH) {
    if (hm_put(&tmp->launch, ((uint64_t)seg << 32) ^ e->ctx, e->ts) != 0) x->oom = 1;
    return;
  }
  if (e->type == NCS_T_KERNEL_CH) {
    uint64_t pt = fval(e, F_KC_PTIMER);
    if (pt) {
      int64_t off = (int64_t)(e->ts - pt);
      if (!f->has_gpu || off < f->gpu_off) f->gpu_off = off;
      f->has_gpu = 1;
      if (pt < f->min_ptimer) f->min_ptimer = pt;
      /* the kernel cannot start before the launch that carried its operation: a lower bound */
      uint64_t lt;
      if (e->parent_kind == NCS_REF_LOCAL &&
          hm_get(&tmp->launched, e->parent ^ ((uint64_t)seg << 52), &lt)) {
        int64_t lo = (int64_t)(lt - pt);
        if (lo > f->gpu_lo) f->gpu_lo = lo;
      }
    }
    return;
  }
  if (e->type != NCS_T_COLL && e->type != NCS_T_P2P) return;
  if (GROW(f->ents, f->ent_cap, f->nent + 1) != 0) {
    x->oom = 1;
    return;
  }
  ent_t *n = &f->ents[f->nent];
  memset(n, 0, sizeof *n);
  n->id = e->id, n->start = e->ts, n->seg = (uint16_t)seg, n->type = e->type, n->rank = -1;
  if (hm_put(ids, e->id ^ ((uint64_t)seg << 52), f->nent) != 0) x->oom = 1;
  f->nent++;
  uint64_t lt;
  if (e->ctx_kind == NCS_CTX_LOCAL && hm_get(&tmp->launch, ((uint64_t)seg << 32) ^ e->ctx, &lt) &&
      hm_put(&tmp->launched, e->id ^ ((uint64_t)seg << 52), lt) != 0)
    x->oom = 1;
  const comm_t *c = e->ctx_kind == NCS_CTX_LOCAL ? file_comm(x, f, seg, e->ctx) : NULL;
  if (!c || c->rank < 0 || c->rank >= c->nranks) return;
  n->rank = c->rank;
  if (e->type == NCS_T_P2P) {
    const char *func = fstr(x, e, F_P2P_FUNC);
    uint64_t cid = link_id(c, e, F_P2P_HASH);
    int64_t peer = (int64_t)fval(e, F_P2P_PEER);
    if (!cid || !func || peer < 0 || peer >= c->nranks) return;
    int send = !strcmp(func, "Send");
    if (!send && strcmp(func, "Recv")) return;
    uint64_t key = send ? pair_key(cid, c->rank, (int32_t)peer) : pair_key(cid, (int32_t)peer, c->rank);
    int created;
    uint64_t *pi = hm_ref(&x->pair_map, key, x->npairs, &created);
    if (!pi || (created && GROW(x->pairs, x->pair_cap, x->npairs + 1) != 0)) {
      x->oom = 1;
      return;
    }
    if (created) x->npairs++;
    if (send)
      x->pairs[*pi].nsend++;
    else
      x->pairs[*pi].nrecv++;
    return;
  }
  const char *func = fstr(x, e, F_COLL_FUNC);
  uint64_t cid = link_id(c, e, F_COLL_HASH);
  if (!cid || !func) return;
  uint64_t seq = fval(e, F_COLL_SEQ), key = inst_key(cid, func, seq);
  int created;
  uint64_t *ii = hm_ref(&x->inst_map, key, x->ninsts, &created);
  if (!ii || (created && GROW(x->insts, x->inst_cap, x->ninsts + 1) != 0)) {
    x->oom = 1;
    return;
  }
  inst_t *in = &x->insts[*ii];
  if (created) {
    x->ninsts++;
    in->comm_id = cid, in->seq = seq, in->func = func, in->h = nz(key);
    in->algo = fstr(x, e, F_COLL_ALGO), in->proto = fstr(x, e, F_COLL_PROTO);
    in->dtype = fstr(x, e, F_COLL_DTYPE), in->count = fval(e, F_COLL_COUNT);
    in->comm_name = c->name, in->nranks = c->nranks;
    in->min_start = UINT64_MAX;
    in->first_rank = in->straggler = in->last_rank = -1;
    in->bits = calloc(((size_t)c->nranks + 63) / 64, sizeof(uint64_t));
    if (!in->bits) x->oom = 1;
  }
  if (c->nranks != in->nranks || !in->bits) return; /* a different comm with the same id? */
  uint64_t bit = 1ull << (c->rank & 63), *w = &in->bits[c->rank / 64];
  if (*w & bit) {
    n->dup = 1; /* the same rank ran this instance twice: not linked */
    return;
  }
  *w |= bit;
  n->inst = (uint32_t)*ii + 1;
}

static void index_file(ex_t *x, file_t *f) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open(f->path, err, sizeof err);
  if (!r) return; /* pass 0 said why */
  idx_tmp_t tmp;
  memset(&tmp, 0, sizeof tmp);
  hmap_t *ids = &tmp.ids;
  f->c0 = f->c1 = x->ncomms;
  f->min_ts = UINT64_MAX, f->min_ptimer = UINT64_MAX, f->gpu_lo = INT64_MIN;
  uint32_t seg = 0, nseg = 0, order = 0;
  ncs_item_t it;
  uint64_t n = 0;
  int rc;
  while ((rc = ncs_reader_next(r, &it)) > 0 && !x->oom) {
    if ((++n & 4095) == 0) progress(x, r, 0);
    switch (it.what) {
    case NCS_ITEM_SEGMENT:
      seg = nseg++;
      if (GROW(f->seg_end, f->seg_cap, nseg) != 0) x->oom = 1;
      else f->seg_end[seg] = ncs_reader_segment(r)->start_mono_ns, f->nseg = nseg;
      break;
    case NCS_ITEM_COMM: {
      if (!nseg || GROW(x->comms, x->comm_cap, x->ncomms + 1) != 0) break;
      comm_t *c = &x->comms[x->ncomms];
      c->comm_id = it.comm.comm_id, c->name = pool(&x->pool, it.comm.name);
      c->rank = it.comm.rank, c->nranks = it.comm.nranks;
      c->seg = seg, c->index = it.comm.index, c->proc = NONE32, c->order = order++;
      if (hm_put(&f->comm_map, ((uint64_t)seg << 32) | it.comm.index, x->ncomms) != 0) x->oom = 1;
      x->ncomms++;
      f->c1 = x->ncomms;
      break;
    }
    case NCS_ITEM_EVENT: {
      const ncs_event_t *e = &it.ev;
      x->st->records++;
      if (!nseg) break;
      uint64_t ts = e->kind == NCS_REC_COMPLETE ? e->end_ns : e->kind <= NCS_REC_STATE ? e->ts : 0;
      if (ts > f->seg_end[seg]) f->seg_end[seg] = ts;
      if (e->kind <= NCS_REC_STATE && ts && ts < f->min_ts) f->min_ts = ts;
      uint64_t ei;
      if (e->kind == NCS_REC_START) {
        index_start(x, f, &tmp, e, seg);
      } else if (e->kind == NCS_REC_STATE && e->type == NCS_T_KERNEL_CH && e->state == 22 &&
                 e->arg0) { /* KernelChStop: the GPU stop, seen a little later by the host */
        int64_t off = (int64_t)(e->ts - e->arg0);
        if (!f->has_gpu || off < f->gpu_off) f->gpu_off = off;
        f->has_gpu = 1;
      } else if ((e->type == NCS_T_COLL || e->type == NCS_T_P2P) &&
                 hm_get(ids, e->id ^ ((uint64_t)seg << 52), &ei)) {
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
  x->bytes_done += f->size;
  ncs_reader_close(r);
  hm_free(&tmp.ids), hm_free(&tmp.launch), hm_free(&tmp.launched);
  if (f->min_ts == UINT64_MAX) f->min_ts = f->nseg ? f->seg_end[0] : 0;
}

/* the end of a Coll/P2p: its completion, else its stop, else the end of its segment */
static uint64_t ent_end(const file_t *f, const ent_t *e) {
  uint64_t end = e->stop;
  if (e->has_complete && e->end && !(e->cflags & NCS_CF_NO_CHILDREN)) end = max64(end, e->end);
  if (!end) end = e->seg < f->nseg ? f->seg_end[e->seg] : e->start;
  return max64(end, e->start + 1);
}

/* after every file is indexed: fold the Coll times into their instances */
static void fold_instances(ex_t *x) {
  for (uint32_t fi = 0; fi < x->nfiles; fi++) {
    file_t *f = &x->files[fi];
    for (uint32_t i = 0; i < f->nent; i++) {
      ent_t *e = &f->ents[i];
      if (!e->inst) continue;
      inst_t *in = &x->insts[e->inst - 1];
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

/* One process per rank: a file holding several ranks of its widest communicator (a process
 * driving several GPUs) is split by those ranks; its other communicators go to the process with
 * the same rank number, else to the rank whose communicator was created just before. */
static void make_procs(ex_t *x) {
  for (uint32_t fi = 0; fi < x->nfiles; fi++) {
    file_t *f = &x->files[fi];
    f->p0 = x->nprocs;
    const comm_t *world = NULL;
    for (uint32_t i = f->c0; i < f->c1; i++)
      if (!world || x->comms[i].nranks > world->nranks) world = &x->comms[i];
    uint32_t first = x->nprocs;
    if (world) {
      for (uint32_t i = f->c0; i < f->c1; i++) {
        comm_t *c = &x->comms[i];
        if (c->comm_id != world->comm_id || c->nranks != world->nranks) continue;
        uint32_t k;
        for (k = first; k < x->nprocs; k++)
          if (x->procs[k].rank == c->rank) break;
        if (k == x->nprocs) {
          if (GROW(x->procs, x->proc_cap, x->nprocs + 1) != 0) {
            x->oom = 1;
            return;
          }
          x->procs[k].file = fi, x->procs[k].rank = c->rank, x->procs[k].world = c->comm_id;
          x->nprocs++;
        }
        c->proc = k;
      }
    }
    if (x->nprocs == first) { /* no communicator: one process for the file */
      if (GROW(x->procs, x->proc_cap, x->nprocs + 1) != 0) {
        x->oom = 1;
        return;
      }
      x->procs[x->nprocs].file = fi, x->procs[x->nprocs].rank = -1;
      x->nprocs++;
    }
    for (uint32_t i = f->c0; i < f->c1; i++) {
      comm_t *c = &x->comms[i];
      if (c->proc != NONE32) continue;
      for (uint32_t k = first; k < x->nprocs && c->proc == NONE32; k++)
        if (x->procs[k].rank == c->rank) c->proc = k;
      for (uint32_t j = i; j-- > f->c0 && c->proc == NONE32;)
        if (x->comms[j].seg == c->seg && x->comms[j].proc != NONE32 && world &&
            x->comms[j].comm_id == world->comm_id)
          c->proc = x->comms[j].proc;
      if (c->proc == NONE32) c->proc = first;
    }
    f->p1 = x->nprocs;
  }
  /* pids and order by rank: sort a copy of the indexes */
  proc_t *sorted = malloc((size_t)x->nprocs * sizeof *sorted);
  if (!sorted) {
    x->oom = 1;
    return;
  }
  memcpy(sorted, x->procs, (size_t)x->nprocs * sizeof *sorted);
  for (uint32_t i = 0; i < x->nprocs; i++) sorted[i].pid = (int32_t)i; /* remember the index */
  qsort(sorted, x->nprocs, sizeof *sorted, cmp_proc);
  for (uint32_t k = 0; k < x->nprocs; k++) {
    proc_t *p = &x->procs[sorted[k].pid];
    const file_t *f = &x->files[p->file];
    p->pid = (int32_t)k + 1;
    p->order = (int32_t)k;
    if (p->rank >= 0)
      p->name = poolf(&x->pool, "rank %d \xc2\xb7 %s:%" PRIu64, p->rank, f->host, f->pid);
    else
      p->name = poolf(&x->pool, "%s:%" PRIu64, f->host, f->pid);
    new_track(x, &p->trk, TK_PROCESS, 0, p->pid);
    p->trk.order = p->order;
    p->trk.name = p->name;
  }
  free(sorted);
  x->job_pid = (int32_t)x->nprocs + 1;
}

/* ================================================================ emitting helpers */

static void a_u64(ex_t *x, const char *n, uint64_t v) {
  if (x->nargs < 64) x->args[x->nargs].name = n, x->args[x->nargs].kind = TA_U64, x->args[x->nargs++].v.u = v;
}
static void a_i64(ex_t *x, const char *n, int64_t v) {
  if (x->nargs < 64) x->args[x->nargs].name = n, x->args[x->nargs].kind = TA_I64, x->args[x->nargs++].v.i = v;
}
static void a_ptr(ex_t *x, const char *n, uint64_t v) {
  if (x->nargs < 64) x->args[x->nargs].name = n, x->args[x->nargs].kind = TA_PTR, x->args[x->nargs++].v.u = v;
}
static void a_str(ex_t *x, const char *n, const char *v) {
  if (v && x->nargs < 64) x->args[x->nargs].name = n, x->args[x->nargs].kind = TA_STR, x->args[x->nargs++].v.s = v;
}
static void a_dbl(ex_t *x, const char *n, double v) {
  if (x->nargs < 64) x->args[x->nargs].name = n, x->args[x->nargs].kind = TA_DBL, x->args[x->nargs++].v.d = v;
}
static void a_bool(ex_t *x, const char *n, uint64_t v) {
  if (x->nargs < 64) x->args[x->nargs].name = n, x->args[x->nargs].kind = TA_BOOL, x->args[x->nargs++].v.u = v;
}

static const char *ref_str(ex_t *x, uint8_t kind, uint64_t v) {
  static const char *const k[] = {"none", "local", "foreign", "stale"};
  return poolf(&x->pool, "%s:0x%" PRIx64, kind < 4 ? k[kind] : "?", v);
}

/* every field of the START, by its schema name, plus the common header */
static void start_args(ex_t *x, const ncs_event_t *e) {
  x->nargs = 0;
  a_u64(x, "id", e->id);
  if (e->parent_kind == NCS_REF_LOCAL)
    a_u64(x, "parent", e->parent);
  else if (e->parent_kind != NCS_REF_NONE)
    a_str(x, "parent", ref_str(x, e->parent_kind, e->parent));
  uint64_t tid;
  if (hm_get(&x->tid_map, e->thread, &tid))
    a_u64(x, "tid", tid);
  else
    a_u64(x, "thread", e->thread);
  a_i64(x, "rank", e->rank);
  if (e->flags) a_u64(x, "flags", e->flags);
  if (e->ctx_kind == NCS_CTX_FOREIGN) a_str(x, "ctx", poolf(&x->pool, "foreign:%" PRIu64 ".%" PRIu64, e->ctx >> 16, e->ctx & 0xFFFF));
  else if (e->ctx_kind == NCS_CTX_INVALID) a_ptr(x, "ctx_invalid", e->ctx);
  const ncs_schema_t *s = &ncs_schema[e->type];
  for (unsigned i = 0; i < e->nfields && i < s->nfields; i++) {
    const char *n = x->argname[e->type][i];
    switch (s->fields[i].kind) {
    case NCS_FK_I64: a_i64(x, n, (int64_t)e->f[i]); break;
    case NCS_FK_STR: a_str(x, n, e->fstr[i] ? pool(&x->pool, e->fstr[i]) : NULL); break;
    case NCS_FK_PTR: a_ptr(x, n, e->f[i]); break;
    case NCS_FK_BOOL: a_bool(x, n, e->f[i]); break;
    case NCS_FK_REF:
      if (e->fref_kind[i] == NCS_REF_LOCAL) a_u64(x, n, e->f[i]);
      else if (e->fref_kind[i] != NCS_REF_NONE) a_str(x, n, ref_str(x, e->fref_kind[i], e->f[i]));
      break;
    default: a_u64(x, n, e->f[i]); break;
    }
  }
}

static void arg_names(ex_t *x) {
  static char buf[NCS_T_COUNT][NCS_MAX_FIELDS][48];
  static const char *const clash[] = {"id", "parent", "tid", "thread", "rank", "flags", "ctx"};
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    for (unsigned i = 0; i < ncs_schema[t].nfields; i++) {
      const char *n = ncs_schema[t].fields[i].name;
      int c = 0;
      for (size_t k = 0; k < sizeof clash / sizeof clash[0]; k++) c |= !strcmp(n, clash[k]);
      if (c) {
        snprintf(buf[t][i], sizeof buf[t][i], "%s.%s", ncs_schema[t].cli, n);
        x->argname[t][i] = buf[t][i];
      } else {
        x->argname[t][i] = n;
      }
    }
}

static tl_flow_t *flows(ex_t *x, uint32_t n) {
  if (GROW(x->flows, x->flow_cap, n) != 0) {
    x->oom = 1;
    return NULL;
  }
  return x->flows;
}

static void new_track(ex_t *x, tl_track_t *t, uint8_t kind, uint64_t parent, int32_t pid) {
  t->uuid = x->next_uuid++;
  t->idx = x->next_track++;
  t->kind = kind;
  t->parent = parent;
  t->pid = pid;
  x->st->tracks++;
}

/* ================================================================ rows, lanes, groups */

static const char *const row_names[] = {"API", "groups", "other", "collectives", "copy engine",
                                        "proxy progress", "GPU", "proxy", "steps", "net", "net"};
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

static uint32_t group_for(ex_t *x, uint32_t proc, const ncs_event_t *e, const comm_t *c) {
  uint64_t key;
  const char *name;
  int32_t order;
  if (c) {
    key = mix2(proc, c->comm_id ? c->comm_id : mix2(c->seg, c->index));
    if (c->name && *c->name)
      name = poolf(&x->pool, "comm %s 0x%016" PRIx64, c->name, c->comm_id);
    else
      name = poolf(&x->pool, "comm 0x%016" PRIx64, c->comm_id);
    order = 10 + (int32_t)c->order;
  } else if (e->ctx_kind == NCS_CTX_FOREIGN) {
    key = mix2(proc, mix2(0xF0, e->ctx));
    name = poolf(&x->pool, "PXN for pid %" PRIu64 " comm %" PRIu64, e->ctx >> 16, e->ctx & 0xFFFF);
    order = 1000;
  } else {
    key = mix2(proc, 0xF1);
    name = "no communicator";
    order = 1001;
  }
  int created;
  uint64_t *gi = hm_ref(&x->group_map, key, x->ngroups, &created);
  if (!gi) {
    x->oom = 1;
    return NONE32;
  }
  if (created) {
    if (GROW(x->groups, x->group_cap, x->ngroups + 1) != 0) {
      x->oom = 1;
      return NONE32;
    }
    group_t *g = &x->groups[x->ngroups++];
    memset(g, 0, sizeof *g);
    new_track(x, &g->t, TK_GROUP, x->procs[proc].trk.uuid, x->procs[proc].pid);
    g->t.name = g->t.path = name;
    g->t.order = order;
    g->t.explicit_order = 1;
    g->t.sort = (uint32_t)order * 1000;
    g->t.desc = "One NCCL communicator of this rank: its operations, GPU channels, proxy and net.";
  }
  return (uint32_t)*gi;
}

static uint32_t row_for(ex_t *x, uint32_t proc, uint32_t group, uint8_t kind, int32_t ch) {
  uint64_t key = mix2(mix2(proc, group), mix2(kind, (uint64_t)(uint32_t)ch));
  int created;
  uint64_t *ri = hm_ref(&x->row_map, key, x->nrows, &created);
  if (!ri) {
    x->oom = 1;
    return NONE32;
  }
  if (created) {
    if (GROW(x->rows, x->row_cap, x->nrows + 1) != 0) {
      x->oom = 1;
      return NONE32;
    }
    row_t *r = &x->rows[x->nrows++];
    memset(r, 0, sizeof *r);
    r->proc = proc, r->group = group, r->kind = kind, r->ch = ch;
    if (kind >= RK_GPU && kind <= RK_NET)
      r->name = ch >= 0 ? poolf(&x->pool, "%s ch %d", row_names[kind], ch)
                        : poolf(&x->pool, "%s ch ?", row_names[kind]);
    else
      r->name = row_names[kind];
    r->desc = row_desc[kind];
    r->order = kind >= RK_GPU && kind <= RK_NET ? 100 + (ch >= 0 ? ch : 999) * 8 + (kind - RK_GPU)
               : kind == RK_NETX                 ? 99
                                                 : kind;
    if (group != NONE32)
      r->path = poolf(&x->pool, "%s / %s", x->groups[group].t.name, r->name);
    else
      r->path = r->name;
  }
  return (uint32_t)*ri;
}

/* the first lane of the row that is free at ts (nothing open, its last slice ended by ts) */
static uint32_t lane_pick(ex_t *x, uint32_t ri, uint64_t ts) {
  row_t *r = &x->rows[ri];
  for (uint32_t i = 0; i < r->nlanes; i++)
    if (!r->lanes[i].depth && r->lanes[i].last_end <= ts) return i;
  if (GROW(r->lanes, r->lane_cap, r->nlanes + 1) != 0) {
    x->oom = 1;
    return NONE32;
  }
  lane_t *l = &r->lanes[r->nlanes];
  memset(l, 0, sizeof *l);
  proc_t *p = &x->procs[r->proc];
  uint64_t parent = p->trk.uuid;
  if (r->group != NONE32) {
    group_t *g = &x->groups[r->group];
    if (!g->declared) {
      x->sink->track(x->sink, &g->t);
      g->declared = 1;
    }
    parent = g->t.uuid;
  }
  new_track(x, &l->t, TK_LANE, parent, p->pid);
  l->t.name = r->name;
  l->t.path = r->path;
  l->t.merge_key = r->name;
  l->t.desc = r->desc;
  l->t.order = r->order;
  l->t.lane = (uint16_t)r->nlanes;
  l->t.sort = (r->group != NONE32 ? x->groups[r->group].t.sort : 0) + (uint32_t)r->order * 8 +
              (r->nlanes < 8 ? r->nlanes : 7);
  x->sink->track(x->sink, &l->t);
  return r->nlanes++;
}

static void emit_begin(ex_t *x, const tl_track_t *t, uint64_t ts, const char *name, uint8_t cat,
                       const tl_flow_t *fl, uint32_t nfl, uint64_t corr) {
  tl_slice_t sl = {t, ts, name, cat, x->args, x->nargs, fl, nfl, corr};
  x->sink->begin(x->sink, &sl);
  x->st->slices++;
}

static void emit_instant(ex_t *x, const tl_track_t *t, uint64_t ts, const char *name, uint8_t cat) {
  tl_slice_t sl = {t, ts, name, cat, x->args, x->nargs, NULL, 0, 0};
  x->sink->instant(x->sink, &sl);
  x->st->instants++;
}

/* ================================================================ counters */

static void heap_push(ex_t *x, uint64_t ts, uint32_t proc, uint8_t kind, double d) {
  if (GROW(x->heap, x->heap_cap, x->nheap + 1) != 0) {
    x->oom = 1;
    return;
  }
  uint32_t i = x->nheap++;
  while (i) {
    uint32_t p = (i - 1) / 2;
    if (x->heap[p].ts <= ts) break;
    x->heap[i] = x->heap[p];
    i = p;
  }
  x->heap[i] = (cdelta_t){ts, d, proc, kind};
}

static cdelta_t heap_pop(ex_t *x) {
  cdelta_t top = x->heap[0], last = x->heap[--x->nheap];
  uint32_t i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= x->nheap) break;
    if (c + 1 < x->nheap && x->heap[c + 1].ts < x->heap[c].ts) c++;
    if (x->heap[c].ts >= last.ts) break;
    x->heap[i] = x->heap[c];
    i = c;
  }
  if (x->nheap) x->heap[i] = last;
  return top;
}

static const char *const ctr_names[2] = {"bytes in flight", "busbw"};

static void counters_flush(ex_t *x, uint64_t upto) {
  while (x->nheap && x->heap[0].ts <= upto) {
    cdelta_t d = heap_pop(x);
    proc_t *p = &x->procs[d.proc];
    p->ctr_val[d.kind] += d.delta;
    if (x->nheap && x->heap[0].ts == d.ts && x->heap[0].proc == d.proc && x->heap[0].kind == d.kind)
      continue; /* one sample per time */
    tl_track_t *t = &p->ctr[d.kind];
    if (!p->ctr_declared[d.kind]) {
      new_track(x, t, TK_COUNTER, p->trk.uuid, p->pid);
      t->name = t->path = ctr_names[d.kind];
      t->order = 2000 + d.kind;
      t->integer = d.kind == 0;
      t->unit_bytes = d.kind == 0;
      t->unit = d.kind == 0 ? NULL : "GB/s";
      t->desc = d.kind == 0 ? "Bytes of the Coll/P2p operations between enqueue and completion."
                            : "Sum of the bus bandwidth of the operations running (GPU time when "
                              "known), as nccl-tests defines it.";
      x->sink->track(x->sink, t);
      p->ctr_declared[d.kind] = 1;
    }
    double v = p->ctr_val[d.kind];
    if (v < 1e-9 && v > -1e-9) v = p->ctr_val[d.kind] = 0;
    x->sink->counter(x->sink, t, d.ts, v);
    x->st->counter_samples++;
  }
}

/* ================================================================ the job tracks */

static int cmp_inst(const void *a, const void *b) {
  const inst_t *p = a, *q = b;
  if (p->comm_id != q->comm_id) return p->comm_id < q->comm_id ? -1 : 1;
  if (p->min_start != q->min_start) return p->min_start < q->min_start ? -1 : 1;
  return p->seq < q->seq ? -1 : p->seq > q->seq;
}

static uint64_t hub_flow(const inst_t *in, int32_t rank) { return nz(mix2(in->h, 0xC011ull + (uint64_t)rank)); }

static void emit_job(ex_t *x) {
  if (!x->ninsts) return;
  /* sorted by comm and start for the lanes; from here on an entry's `inst` only says that it is
   * linked, and the emit pass finds its instance by key */
  qsort(x->insts, x->ninsts, sizeof *x->insts, cmp_inst);
  hm_clear(&x->inst_map);
  for (uint32_t i = 0; i < x->ninsts; i++)
    if (hm_put(&x->inst_map, inst_key(x->insts[i].comm_id, x->insts[i].func, x->insts[i].seq), i) != 0)
      x->oom = 1;
  tl_track_t job;
  memset(&job, 0, sizeof job);
  new_track(x, &job, TK_GROUP, 0, x->job_pid);
  job.name = job.path = "job";
  job.desc = "One row per communicator: one slice per collective instance over all its ranks.";
  job.order = -1;
  x->sink->track(x->sink, &job);
  lane_t *lanes = NULL;
  uint32_t nl = 0, lcap = 0;
  uint64_t cur = 0;
  const char *row = NULL;
  for (uint32_t i = 0; i < x->ninsts; i++) {
    inst_t *in = &x->insts[i];
    if (!in->nseen) continue;
    if (!row || in->comm_id != cur) {
      cur = in->comm_id, nl = 0;
      row = in->comm_name && *in->comm_name
                ? poolf(&x->pool, "comm %s 0x%016" PRIx64 " (%d ranks)", in->comm_name, in->comm_id, in->nranks)
                : poolf(&x->pool, "comm 0x%016" PRIx64 " (%d ranks)", in->comm_id, in->nranks);
    }
    uint64_t s = in->min_start, e = max64(in->max_end, s + 1);
    uint32_t l;
    for (l = 0; l < nl; l++)
      if (lanes[l].last_end <= s) break;
    if (l == nl) {
      if (grow((void **)&lanes, &lcap, nl + 1, sizeof *lanes) != 0) {
        x->oom = 1;
        break;
      }
      memset(&lanes[l], 0, sizeof lanes[l]);
      new_track(x, &lanes[l].t, TK_LANE, job.uuid, x->job_pid);
      lanes[l].t.name = lanes[l].t.path = lanes[l].t.merge_key = row;
      lanes[l].t.lane = (uint16_t)l;
      lanes[l].t.sort = l;
      lanes[l].t.desc = "Collective instances (commId, func, seqNumber): from the first rank's "
                        "enqueue to the last rank's completion. skew_ns: last start - first "
                        "start; straggler_rank: the rank that started last.";
      x->sink->track(x->sink, &lanes[l].t);
      nl++;
    }
    lanes[l].last_end = e;
    x->nargs = 0;
    a_ptr(x, "commId", in->comm_id);
    a_str(x, "func", in->func);
    a_u64(x, "seqNumber", in->seq);
    a_i64(x, "nranks", in->nranks);
    a_u64(x, "ranks_seen", in->nseen);
    a_i64(x, "first_rank", in->first_rank);
    a_i64(x, "straggler_rank", in->straggler);
    a_u64(x, "skew_ns", in->max_start - in->min_start);
    a_i64(x, "last_to_finish_rank", in->last_rank);
    a_u64(x, "span_ns", e - s);
    a_u64(x, "count", in->count);
    a_str(x, "datatype", in->dtype);
    a_str(x, "algo", in->algo);
    a_str(x, "proto", in->proto);
    uint32_t nf = 0;
    tl_flow_t *fl = flows(x, (uint32_t)in->nranks);
    if (!fl) break;
    for (int32_t r = 0; r < in->nranks; r++)
      if (in->bits[r / 64] >> (r & 63) & 1) fl[nf].id = hub_flow(in, r), fl[nf++].out = 1;
    emit_begin(x, &lanes[l].t, s, in->func, TC_JOB, fl, nf, in->h);
    x->sink->end(x->sink, &lanes[l].t, e, NULL, 0);
    x->st->job_slices++;
    x->st->coll_flows += nf;
  }
  free(lanes);
}

/* after sorting, a Coll entry finds its instance again by key (emit pass) */
static inst_t *inst_of(ex_t *x, uint64_t cid, const char *func, uint64_t seq) {
  uint64_t i;
  if (!cid || !func || !hm_get(&x->inst_map, inst_key(cid, func, seq), &i)) return NULL;
  return &x->insts[i];
}

/* ================================================================ pass 2: emit */

static open_t *open_new(ex_t *x, uint64_t id) {
  uint32_t i;
  if (x->nfree) {
    i = x->free_open[--x->nfree];
  } else {
    if (GROW(x->open, x->open_cap, x->nopen + 1) != 0) {
      x->oom = 1;
      return NULL;
    }
    i = x->nopen++;
  }
  if (hm_put(&x->open_map, id, i) != 0) {
    x->oom = 1;
    return NULL;
  }
  open_t *o = &x->open[i];
  memset(o, 0, sizeof *o);
  o->id = id;
  o->in_use = 1;
  return o;
}

static open_t *open_get(ex_t *x, uint64_t id) {
  uint64_t i;
  return hm_get(&x->open_map, id, &i) ? &x->open[i] : NULL;
}

static void open_del(ex_t *x, open_t *o) {
  hm_del(&x->open_map, o->id);
  o->in_use = 0;
  if (GROW(x->free_open, x->free_cap, x->nfree + 1) != 0) {
    x->oom = 1;
    return;
  }
  x->free_open[x->nfree++] = (uint32_t)(o - x->open);
}

static lane_t *lane_of(ex_t *x, const open_t *o) { return &x->rows[o->row].lanes[o->lane]; }

/* close o at ts (clamped so that the slice and its phase last at least 1 ns and stay nested) */
static void close_open(ex_t *x, open_t *o, uint64_t ts, int unfinished) {
  lane_t *l = lane_of(x, o);
  uint64_t t = max64(ts, o->last);
  if (o->phase_open) {
    t = max64(t, o->phase_start + 1);
    x->sink->end(x->sink, &l->t, t, NULL, 0);
  }
  t = max64(t, o->start + 1);
  x->sink->end(x->sink, &l->t, t, NULL, 0);
  l->depth = 0;
  l->last_end = t;
  if (unfinished) x->st->unfinished++;
  open_del(x, o);
}

static void close_all(ex_t *x, uint64_t ts) {
  for (uint32_t i = 0; i < x->nopen; i++)
    if (x->open[i].in_use) close_open(x, &x->open[i], ts, 1);
}

static const char *state_phase_name(unsigned s) {
  const char *n = ncs_state_name(s);
  static const char *const pre[] = {"ProxyStep", "ProxyOp", "ProxyCtrl"};
  for (size_t i = 0; i < 3; i++)
    if (!strncmp(n, pre[i], strlen(pre[i]))) return n + strlen(pre[i]);
  return n;
}

static void coll_p2p(ex_t *x, file_t *f, const ncs_event_t *e, uint32_t proc, const comm_t *c,
                     uint32_t group) {
  ent_t *en = NULL;
  if (x->ent_cursor < f->nent && f->ents[x->ent_cursor].id == e->id &&
      f->ents[x->ent_cursor].seg == x->seg)
    en = &f->ents[x->ent_cursor++];
  uint64_t start = to_out(f, e->ts);
  uint64_t end = en ? to_out(f, ent_end(f, en)) : start + 1;
  int coll = e->type == NCS_T_COLL;
  const char *func = fstr(x, e, coll ? F_COLL_FUNC : F_P2P_FUNC);
  if (hm_put(&x->parent_map, e->id, (uint64_t)(uintptr_t)(func ? func : "")) != 0) x->oom = 1;
  int64_t nr = c ? c->nranks : 0;
  start_args(x, e);
  uint64_t cid = c ? link_id(c, e, coll ? F_COLL_HASH : F_P2P_HASH) : 0;
  if (cid) a_ptr(x, "commId", cid);
  if (c) a_i64(x, "comm_rank", c->rank), a_i64(x, "nranks", c->nranks);
  uint64_t count = fval(e, coll ? F_COLL_COUNT : F_P2P_COUNT);
  int dsz = dtype_size(fstr(x, e, coll ? F_COLL_DTYPE : F_P2P_DTYPE));
  uint64_t bytes = count * (uint64_t)dsz;
  if (dsz) a_u64(x, "bytes", bytes);
  uint64_t gs = 0, ge = 0;
  if (en) {
    if (en->stop) a_u64(x, "enqueue_ns", en->stop > en->start ? en->stop - en->start : 0);
    static const char *const how[] = {"none", "kernel", "proxy", "kernel+proxy"};
    a_str(x, "completion", !en->has_complete                 ? "unknown"
                           : en->cflags & NCS_CF_NO_CHILDREN ? "no children"
                                                             : how[en->cflags & 3]);
    if (en->cflags & NCS_CF_FORCED) a_bool(x, "completion_forced", 1);
    if (en->cflags & NCS_CF_REVISED) a_bool(x, "completion_revised", 1);
    a_u64(x, "duration_ns", end - start);
    if (f->has_gpu && en->gpu_start && en->gpu_stop > en->gpu_start) {
      gs = to_out(f, en->gpu_start + (uint64_t)f->gpu_off);
      ge = to_out(f, en->gpu_stop + (uint64_t)f->gpu_off);
      a_u64(x, "gpu_start_ns", gs);
      a_u64(x, "gpu_ns", ge - gs);
    }
  }
  /* bandwidths as nccl-tests computes them */
  double alg = 0, bus = 0;
  uint64_t bs = gs ? gs : start, be = gs ? ge : end;
  if (bytes && be > bs && func) {
    double n = nr > 0 ? (double)nr : 1, total = (double)bytes, factor = 1;
    if (coll && !strcmp(func, "AllReduce")) factor = 2 * (n - 1) / n;
    else if (coll && (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter")))
      total = (double)bytes * n, factor = (n - 1) / n;
    alg = total / (double)(be - bs);
    bus = alg * factor;
    a_dbl(x, "algbw_GBps", alg);
    a_dbl(x, "busbw_GBps", bus);
  }
  /* links */
  tl_flow_t bf[1], ef[1];
  uint32_t nb = 0, ne = 0;
  uint64_t corr = 0;
  if (coll) {
    inst_t *in = en && en->inst && en->rank >= 0 ? inst_of(x, cid, func, fval(e, F_COLL_SEQ)) : NULL;
    if (in && in->bits && en->rank < in->nranks && (in->bits[en->rank / 64] >> (en->rank & 63) & 1)) {
      a_u64(x, "wait_ns", in->max_start > start ? in->max_start - start : 0);
      a_i64(x, "straggler_rank", in->straggler);
      a_u64(x, "skew_ns", in->max_start - in->min_start);
      corr = in->h;
      if (x->o.types & (1u << NCS_T_COLL)) bf[nb].id = hub_flow(in, en->rank), bf[nb++].out = 0;
    }
  } else if (cid && c && func && en && en->rank >= 0) {
    int send = !strcmp(func, "Send");
    int64_t peer = (int64_t)fval(e, F_P2P_PEER);
    uint64_t pi;
    if ((send || !strcmp(func, "Recv")) && peer >= 0 && peer < c->nranks) {
      int32_t src = send ? en->rank : (int32_t)peer, dst = send ? (int32_t)peer : en->rank;
      uint64_t pk = pair_key(cid, src, dst);
      int created;
      uint64_t *k = hm_ref(&x->occ_map, mix2(pk, (uint64_t)send), 0, &created);
      if (k && hm_get(&x->pair_map, pk, &pi)) {
        uint64_t nth = (*k)++;
        pair_t *p = &x->pairs[pi];
        if (nth < p->nsend && nth < p->nrecv) {
          uint64_t id = nz(mix2(pk, 0xF10Aull + nth));
          corr = nz(mix2(pk, nth));
          if (send)
            bf[nb].id = id, bf[nb++].out = 1, x->st->p2p_flows++;
          else
            ef[ne].id = id, ef[ne++].out = 0;
        }
      }
    }
  }
  /* the slice, whole */
  uint32_t row = row_for(x, proc, group, RK_COLL, -1);
  if (row == NONE32) return;
  uint32_t ln = lane_pick(x, row, start);
  if (ln == NONE32) return;
  lane_t *l = &x->rows[row].lanes[ln];
  const char *name = func ? func : ncs_type_name(e->type);
  if (!coll && func) {
    int64_t peer = (int64_t)fval(e, F_P2P_PEER);
    name = !strcmp(func, "Send")   ? poolf(&x->pool, "Send to %" PRId64, peer)
           : !strcmp(func, "Recv") ? poolf(&x->pool, "Recv from %" PRId64, peer)
                                   : func;
  }
  emit_begin(x, &l->t, start, name, coll ? TC_COLL : TC_P2P, bf, nb, corr);
  x->sink->end(x->sink, &l->t, end, ef, ne);
  l->last_end = end;
  /* counters */
  if (bytes) {
    heap_push(x, start, proc, 0, (double)bytes);
    heap_push(x, end, proc, 0, -(double)bytes);
  }
  if (bus > 0) {
    heap_push(x, bs, proc, 1, bus);
    heap_push(x, be, proc, 1, -bus);
  }
  if (start > x->max_coll_start) x->max_coll_start = start;
  if (x->max_coll_start > COUNTER_WINDOW_NS) counters_flush(x, x->max_coll_start - COUNTER_WINDOW_NS);
}

static void ev_start(ex_t *x, file_t *f, const ncs_event_t *e) {
  const comm_t *c = e->ctx_kind == NCS_CTX_LOCAL ? file_comm(x, f, x->seg, e->ctx) : NULL;
  uint32_t proc = c ? c->proc : f->p0;
  if (e->type == NCS_T_COLL || e->type == NCS_T_P2P) {
    if (!(x->o.types & (1u << e->type))) {
      if (x->ent_cursor < f->nent && f->ents[x->ent_cursor].id == e->id) x->ent_cursor++;
      return;
    }
    coll_p2p(x, f, e, proc, c, group_for(x, proc, e, c));
    return;
  }
  if (!(x->o.types & (1u << e->type))) return;
  uint64_t ts = to_out(f, e->ts);
  uint8_t kind, cat;
  int32_t ch = -1;
  uint32_t group = NONE32;
  const char *name = ncs_type_name(e->type);
  open_t *parent = e->parent_kind == NCS_REF_LOCAL ? open_get(x, e->parent) : NULL;
  int is_send = 0;
  switch (e->type) {
  case NCS_T_GROUP_API: kind = RK_API, cat = TC_API, name = "ncclGroup"; break;
  case NCS_T_COLL_API:
  case NCS_T_P2P_API: {
    kind = RK_API, cat = TC_API;
    const char *fn = fstr(x, e, e->type == NCS_T_COLL_API ? F_API_FUNC : F_P2PAPI_FUNC);
    name = fn ? poolf(&x->pool, "nccl%s", fn) : name;
    break;
  }
  case NCS_T_KERNEL_LAUNCH: kind = RK_API, cat = TC_API, name = "kernel launch"; break;
  case NCS_T_GROUP: kind = RK_GROUP, cat = TC_GROUP, name = "group"; break;
  case NCS_T_CE_COLL: {
    kind = RK_COLL, cat = TC_CE;
    const char *fn = fstr(x, e, F_CE_FUNC);
    name = fn ? poolf(&x->pool, "%s (CE)", fn) : name;
    group = group_for(x, proc, e, c);
    break;
  }
  case NCS_T_CE_SYNC:
  case NCS_T_CE_BATCH:
    kind = RK_CE, cat = TC_CE, name = e->type == NCS_T_CE_SYNC ? "CE sync" : "CE batch";
    group = group_for(x, proc, e, c);
    break;
  case NCS_T_PROXY_CTRL:
    kind = RK_PCTRL, cat = TC_PROXYCTRL, name = "proxy ctrl";
    group = group_for(x, proc, e, c);
    break;
  case NCS_T_KERNEL_CH: {
    kind = RK_GPU, cat = TC_KERNEL;
    uint64_t chv = fval(e, F_KC_CH), pt = fval(e, F_KC_PTIMER), fn;
    ch = chv < 1024 ? (int32_t)chv : -1;
    if (e->parent_kind == NCS_REF_LOCAL && hm_get(&x->parent_map, e->parent, &fn) &&
        *(const char *)(uintptr_t)fn)
      name = (const char *)(uintptr_t)fn;
    else
      name = "kernel";
    if (f->has_gpu && pt) ts = to_out(f, pt + (uint64_t)f->gpu_off);
    group = group_for(x, proc, e, c);
    break;
  }
  case NCS_T_PROXY_OP: {
    kind = RK_PROXY, cat = TC_PROXYOP;
    uint64_t chv = fval(e, F_PO_CH);
    ch = chv < 1024 ? (int32_t)chv : -1;
    is_send = fval(e, F_PO_SEND) != 0;
    name = poolf(&x->pool, is_send ? "send to %" PRId64 : "recv from %" PRId64,
                 (int64_t)fval(e, F_PO_PEER));
    group = group_for(x, proc, e, c);
    break;
  }
  case NCS_T_PROXY_STEP:
    kind = RK_STEPS, cat = TC_PROXYSTEP;
    if (parent && parent->type == NCS_T_PROXY_OP) {
      ch = parent->ch, is_send = parent->is_send, group = parent->group, proc = parent->proc;
      name = is_send ? "send step" : "recv step";
    } else {
      name = "step";
      group = group_for(x, proc, e, c);
    }
    break;
  case NCS_T_NET_PLUGIN: {
    cat = TC_NET;
    uint64_t nid = fval(e, F_NET_ID);
    name = (nid & 0x20000) ? "net socket" : (nid & 0x10000) ? "net ib" : "net";
    if (parent && parent->type == NCS_T_PROXY_STEP)
      kind = RK_NET, ch = parent->ch, group = parent->group, proc = parent->proc;
    else
      kind = RK_NETX, group = group_for(x, proc, e, c);
    break;
  }
  default: kind = RK_OTHER, cat = TC_OTHER; break;
  }
  if (x->oom) return;
  uint32_t row = row_for(x, proc, group, kind, ch);
  if (row == NONE32) return;
  uint32_t ln = lane_pick(x, row, ts);
  if (ln == NONE32) return;
  open_t *o = open_new(x, e->id);
  if (!o) return;
  lane_t *l = &x->rows[row].lanes[ln];
  l->depth = 1;
  o->row = row, o->lane = ln, o->start = o->last = ts, o->type = e->type;
  o->group = group, o->proc = proc, o->ch = ch, o->is_send = (uint8_t)is_send;
  start_args(x, e);
  if (e->type == NCS_T_KERNEL_CH && f->has_gpu && fval(e, F_KC_PTIMER))
    a_u64(x, "host_seen_ns", to_out(f, e->ts));
  emit_begin(x, &l->t, ts, name, cat, NULL, 0, 0);
}

static void ev_state(ex_t *x, file_t *f, const ncs_event_t *e) {
  open_t *o = open_get(x, e->id);
  if (!o) {
    x->st->unmatched_stops++;
    return;
  }
  lane_t *l = lane_of(x, o);
  uint64_t ts = max64(to_out(f, e->ts), o->last);
  if (e->type == NCS_T_KERNEL_CH && e->state == 22) { /* KernelChStop: the GPU end */
    if (f->has_gpu && e->arg0) o->gpu_end = to_out(f, e->arg0 + (uint64_t)f->gpu_off);
    return;
  }
  x->nargs = 0;
  if (e->arg0) a_u64(x, e->type == NCS_T_NET_PLUGIN ? "data" : "arg0", e->arg0);
  if (e->arg1) a_u64(x, "arg1", e->arg1);
  if (e->type == NCS_T_PROXY_OP || e->type == NCS_T_PROXY_STEP || e->type == NCS_T_PROXY_CTRL) {
    if (o->phase_open) {
      ts = max64(ts, o->phase_start + 1);
      x->sink->end(x->sink, &l->t, ts, NULL, 0);
    }
    emit_begin(x, &l->t, ts, state_phase_name(e->state), TC_PHASE, NULL, 0, 0);
    o->phase_open = 1, o->phase_start = ts, o->last = ts;
    l->depth = 2;
  } else {
    emit_instant(x, &l->t, ts, ncs_state_name(e->state), TC_STATE);
    o->last = ts;
  }
}

static void ev_stop(ex_t *x, file_t *f, const ncs_event_t *e) {
  open_t *o = open_get(x, e->id);
  if (!o) {
    x->st->unmatched_stops++;
    return;
  }
  uint64_t ts = to_out(f, e->ts);
  if (o->type == NCS_T_KERNEL_CH && o->gpu_end) ts = o->gpu_end;
  close_open(x, o, ts, 0);
}

static void reset_file_state(ex_t *x) {
  for (uint32_t i = 0; i < x->nrows; i++) free(x->rows[i].lanes);
  x->nrows = 0, x->ngroups = 0, x->nopen = 0, x->nfree = 0, x->nheap = 0;
  hm_free(&x->row_map), hm_free(&x->group_map), hm_free(&x->open_map);
  hm_free(&x->parent_map), hm_free(&x->occ_map), hm_free(&x->tid_map);
  x->max_coll_start = 0, x->ent_cursor = 0;
}

static void emit_file(ex_t *x, uint32_t fi) {
  file_t *f = &x->files[fi];
  x->f = f, x->fi = fi;
  char err[256];
  ncs_reader_t *r = ncs_reader_open(f->path, err, sizeof err);
  if (!r) return;
  x->sink->seq_begin(x->sink);
  for (uint32_t p = f->p0; p < f->p1; p++) x->sink->track(x->sink, &x->procs[p].trk);
  x->st->processes += f->p1 - f->p0;
  reset_file_state(x);
  ncs_item_t it;
  uint64_t n = 0;
  int nseg = 0;
  x->seg = 0;
  while (!x->oom && !x->sink->err && ncs_reader_next(r, &it) > 0) {
    if ((++n & 4095) == 0) progress(x, r, 0);
    if (it.what == NCS_ITEM_SEGMENT) {
      if (nseg) close_all(x, to_out(f, f->seg_end[x->seg]));
      x->seg = (uint32_t)nseg++;
      hm_clear(&x->tid_map);
      hm_clear(&x->parent_map);
      continue;
    }
    if (it.what == NCS_ITEM_THREAD) {
      if (hm_put(&x->tid_map, it.thread_index, it.thread_tid) != 0) x->oom = 1;
      continue;
    }
    if (it.what != NCS_ITEM_EVENT || !nseg) continue;
    const ncs_event_t *e = &it.ev;
    switch (e->kind) {
    case NCS_REC_START: ev_start(x, f, e); break;
    case NCS_REC_STOP:
      if (e->type != NCS_T_COLL && e->type != NCS_T_P2P && (x->o.types & (1u << e->type)))
        ev_stop(x, f, e);
      break;
    case NCS_REC_STATE:
      if (e->type != NCS_T_COLL && e->type != NCS_T_P2P && (x->o.types & (1u << e->type)))
        ev_state(x, f, e);
      break;
    case NCS_REC_EXPIRED: {
      open_t *o = open_get(x, e->id);
      if (o) o->expired = (uint8_t)e->reason;
      break;
    }
    default: break;
    }
  }
  if (nseg) close_all(x, to_out(f, f->seg_end[x->seg]));
  counters_flush(x, UINT64_MAX);
  x->bytes_done += f->size;
  ncs_reader_close(r);
  free(f->ents); /* not needed any more */
  f->ents = NULL;
  f->nent = 0;
}

/* ================================================================ driver */

static void ex_free(ex_t *x) {
  reset_file_state(x);
  for (uint32_t i = 0; i < x->nfiles; i++) {
    free(x->files[i].path);
    free(x->files[i].seg_end);
    free(x->files[i].ents);
    hm_free(&x->files[i].comm_map);
  }
  for (uint32_t i = 0; i < x->ninsts; i++) free(x->insts[i].bits);
  free(x->files), free(x->comms), free(x->procs), free(x->insts), free(x->pairs);
  free(x->rows), free(x->groups), free(x->open), free(x->free_open), free(x->heap), free(x->flows);
  hm_free(&x->inst_map), hm_free(&x->pair_map);
  pool_free(&x->pool);
}

int ncs_export(char *const *paths, size_t npaths, const ncs_export_opts_t *o,
               ncs_export_stats_t *st, char *err, size_t errlen) {
  ex_t *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  memset(st, 0, sizeof *st);
  x->o = *o;
  if (!x->o.types) x->o.types = (1u << NCS_T_COUNT) - 1;
  if (!x->o.prog) x->o.prog = "ncclscope export";
  x->st = st;
  x->next_uuid = 0x100;
  x->t0 = now_s();
  field_indexes();
  arg_names(x);
  int rc = 0, fd = -1;
  /* the files */
  for (size_t i = 0; i < npaths; i++) {
    char **list;
    size_t n;
    if (ncs_list_traces(paths[i], &list, &n, err, errlen) != 0) {
      rc = 2;
      goto out;
    }
    for (size_t k = 0; k < n; k++) {
      if (GROW(x->files, x->file_cap, x->nfiles + 1) != 0) {
        ncs_free_paths(list, n);
        goto oom;
      }
      file_t *f = &x->files[x->nfiles++];
      f->path = strdup(list[k]);
      struct stat sb;
      f->size = stat(list[k], &sb) == 0 ? (uint64_t)sb.st_size : 0;
      x->bytes_total += 2 * f->size;
      st->bytes_in += f->size;
    }
    ncs_free_paths(list, n);
  }
  if (!x->nfiles) {
    snprintf(err, errlen, "no *%s files found", NCS_TRACE_SUFFIX);
    rc = 2;
    goto out;
  }
  st->files = x->nfiles;
  for (uint32_t i = 0; i < x->nfiles; i++) pass0(x, &x->files[i]);
  host_offsets(x);
  for (x->fi = 0; x->fi < x->nfiles && !x->oom; x->fi++) index_file(x, &x->files[x->fi]);
  if (x->oom) goto oom;
  fold_instances(x);
  make_procs(x);
  if (x->oom) goto oom;
  x->origin = UINT64_MAX;
  for (uint32_t i = 0; i < x->nfiles; i++) {
    file_t *f = &x->files[i];
    if (f->has_gpu) {
      st->gpu_mapped_files++;
      if (f->gpu_lo != INT64_MIN && f->gpu_off - f->gpu_lo > st->max_gpu_offset_err_ns)
        st->max_gpu_offset_err_ns = f->gpu_off - f->gpu_lo;
      if (f->gpu_lo != INT64_MIN && f->gpu_lo > f->gpu_off) {
        st->clock_conflicts++;
        fprintf(stderr,
                "%s: warning: %s: GPU and host clocks disagree by %.1f us (a kernel seen "
                "starting before its launch): the host timestamps of this process drift "
                "(NCCLSCOPE_CLOCK=monotonic avoids the TSC conversion)\n",
                x->o.prog, f->path, (double)(f->gpu_lo - f->gpu_off) / 1e3);
      }
      if (f->min_ptimer != UINT64_MAX && to_out(f, f->min_ptimer + (uint64_t)f->gpu_off) < x->origin)
        x->origin = to_out(f, f->min_ptimer + (uint64_t)f->gpu_off);
    }
    if (f->nseg && to_out(f, f->min_ts) < x->origin) x->origin = to_out(f, f->min_ts);
  }
  if (x->origin == UINT64_MAX) x->origin = 0;
  /* the output */
  if (!strcmp(o->out, "-")) {
    fd = 1;
  } else {
    fd = open(o->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      snprintf(err, errlen, "cannot write %s: %s", o->out, strerror(errno));
      rc = -1;
      goto out;
    }
  }
  x->sink = o->format == NCS_EXPORT_CHROME ? tl_chrome_sink(fd, x->origin) : tl_pftrace_sink(fd);
  if (!x->sink) goto oom;
  x->bytes_done = x->bytes_total / 2;
  x->sink->seq_begin(x->sink);
  if (x->o.types & (1u << NCS_T_COLL)) emit_job(x);
  /* instances were sorted: entries find theirs by key in the emit pass */
  for (x->fi = 0; x->fi < x->nfiles && !x->oom && !x->sink->err; x->fi++) emit_file(x, x->fi);
  if (x->oom) goto oom;
  if (x->sink->finish(x->sink) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", o->out, strerror(errno));
    rc = -1;
    goto out;
  }
  st->bytes_out = x->sink->bytes_out;
  for (uint32_t i = 0; i < x->nfiles; i++) {
    file_t *f = &x->files[i];
    if (f->damage == NCS_DAMAGE_CORRUPT) st->damaged++, rc = rc ? rc : 1;
    if (f->damage == NCS_DAMAGE_TRUNCATED) st->truncated++;
    if (f->damage)
      fprintf(stderr, "%s: warning: %s: %s\n", x->o.prog, f->path, f->errmsg);
  }
  progress(x, NULL, 1);
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
  rc = -1;
out:
  if (x->sink) {
    if (x->sink->out.n && rc < 0) x->sink->out.n = 0;
    x->sink->destroy(x->sink);
  }
  if (fd > 1) {
    if (close(fd) != 0 && rc == 0) {
      snprintf(err, errlen, "cannot write %s: %s", o->out, strerror(errno));
      rc = -1;
    }
  }
  st->seconds = now_s() - x->t0;
  ex_free(x);
  free(x);
  return rc;
}
