/* reader.c - streaming reader for ncclscope trace files (docs/trace-format.md).
 *
 * The reader holds one chunk at a time. ncs_reader_next loads the next chunk, checks its magic,
 * length and CRC, and decodes it; an EVENTS chunk is decoded one record per call, so a damaged
 * record late in a chunk still lets every record before it through. Nothing in the file is
 * trusted: every varint, length, count, string id and kind byte is checked, and the first
 * problem ends the file with a message that names its byte offset.
 *
 * Memory: one chunk (file mode; memory mode points into the caller's buffer) plus the strings of
 * the current segment, both capped.
 */
#include "trace/reader.h"
#include "trace/flight.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Caps on the per-segment string store. A real trace interns a few hundred names; these only
 * stop a hostile file from using unbounded memory. */
#define MAX_STRINGS (1u << 20)
#define MAX_STRING_BYTES (64u << 20)
#define ARENA_BLOCK (64u << 10)

/* Strings live in an arena of blocks so pointers handed out stay valid until the segment ends. */
typedef struct arena_block {
  struct arena_block *next;
  size_t used, cap;
  char data[];
} arena_block_t;

typedef struct {
  uint64_t id; /* 0 = empty slot (string ids start at 1) */
  const char *s;
} str_slot_t;

enum { RS_OK, RS_DONE, RS_FAILED };

struct ncs_reader {
  int fd;             /* file mode, else -1 */
  const uint8_t *mem; /* memory mode */
  size_t mem_len;
  uint8_t *buf; /* file mode: header + payload of the current chunk */
  size_t buf_cap;
  uint64_t next_off; /* offset of the next chunk header */

  /* the chunk being decoded */
  uint16_t ctype;
  uint64_t chunk_off, pay_off;
  const uint8_t *pay, *pos, *end;
  int in_events;
  uint32_t ev_count, ev_done;
  uint64_t prev_ts;
  uint64_t gpu_prev_start, gpu_prev_corr; /* GPU chunk: kernel start and correlation id bases */

  int state;
  int damage;
  uint64_t err_off;
  char err[400];

  /* the current segment */
  int have_seg;
  uint32_t nseg;
  ncs_segment_info_t seg;
  arena_block_t *arena;
  size_t str_bytes;
  str_slot_t *slots;
  size_t slot_cap, nstrings;
  uint64_t seed; /* hash secret of the string table */
  ncs_counters_t counters;

  /* a flight file: its linearized stream (owned) and what its header says */
  uint8_t *owned;
  int is_flight;
  ncs_flight_info_t flight;
  uint32_t flight_bad_slots;
  uint32_t loss_next; /* the header's loss windows handed out as LOSS items so far */
};

static const char *chunk_name(unsigned t) { return ncs_chunk_name(t); }

/* ---------------------------------------------------------------- errors */

static int fail(ncs_reader_t *r, int damage, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Record the first error; the reader returns -1 from then on. */
static int fail(ncs_reader_t *r, int damage, uint64_t off, const char *fmt, ...) {
  if (r->state == RS_FAILED) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err, sizeof r->err, fmt, ap);
  va_end(ap);
  r->state = RS_FAILED;
  r->damage = damage;
  r->err_off = off;
  return -1;
}

/* Offset in the file of the decoding position. */
static uint64_t pos_off(const ncs_reader_t *r) { return r->pay_off + (uint64_t)(r->pos - r->pay); }

/* A field error inside the current chunk: always corruption (the chunk passed its CRC, so the
 * writer or something after it produced bytes this reader cannot accept). */
static int bad_field(ncs_reader_t *r, const char *what, const char *problem) {
  return fail(r, NCS_DAMAGE_CORRUPT, pos_off(r),
              "%s at offset %llu (in the %s chunk at offset %llu)%s%s", problem,
              (unsigned long long)pos_off(r), chunk_name(r->ctype),
              (unsigned long long)r->chunk_off, what ? ": " : "", what ? what : "");
}

/* ---------------------------------------------------------------- the byte source */

static uint64_t src_size(const ncs_reader_t *r) {
  if (r->fd < 0) return r->mem_len;
  struct stat st;
  return fstat(r->fd, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

static int ensure_buf(ncs_reader_t *r, size_t n) {
  if (n <= r->buf_cap) return 0;
  size_t cap = r->buf_cap ? r->buf_cap : 4096;
  while (cap < n) cap *= 2;
  uint8_t *p = realloc(r->buf, cap);
  if (!p) return -1;
  r->buf = p;
  r->buf_cap = cap;
  return 0;
}

static int pread_all(int fd, void *dst, size_t len, uint64_t off) {
  uint8_t *d = dst;
  while (len) {
    ssize_t n = pread(fd, d, len, (off_t)off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    d += n, off += (uint64_t)n, len -= (size_t)n;
  }
  return 0;
}

/* Bytes [off, off+len) of the source, into r->buf at `at` in file mode. NULL with the reader
 * failed when they cannot be read. The caller has checked that they lie within src_size. */
static const uint8_t *src_bytes(ncs_reader_t *r, uint64_t off, size_t len, size_t at) {
  if (r->fd < 0) return r->mem + off;
  if (ensure_buf(r, at + len) != 0) {
    fail(r, NCS_DAMAGE_CORRUPT, off, "out of memory reading %zu bytes at offset %llu", len,
         (unsigned long long)off);
    return NULL;
  }
  if (len && pread_all(r->fd, r->buf + at, len, off) != 0) {
    fail(r, NCS_DAMAGE_TRUNCATED, off, "cannot read %zu bytes at offset %llu: %s", len,
         (unsigned long long)off, errno ? strerror(errno) : "file shrank");
    return NULL;
  }
  return r->buf + at;
}

/* True when every byte from off to the end is zero: what a filesystem leaves when a crash cut
 * off data that was allocated but never written. */
static int tail_is_zero(ncs_reader_t *r, uint64_t off, uint64_t size) {
  uint8_t tmp[4096];
  while (off < size) {
    size_t n = size - off < sizeof tmp ? (size_t)(size - off) : sizeof tmp;
    const uint8_t *p;
    if (r->fd < 0) {
      p = r->mem + off;
    } else {
      if (pread_all(r->fd, tmp, n, off) != 0) return 0;
      p = tmp;
    }
    for (size_t i = 0; i < n; i++)
      if (p[i]) return 0;
    off += n;
  }
  return 1;
}

/* ---------------------------------------------------------------- the string store */

static void arena_free(ncs_reader_t *r) {
  for (arena_block_t *b = r->arena, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  r->arena = NULL;
  r->str_bytes = 0;
}

/* A NUL-terminated copy of n bytes that lives until the segment ends. */
static const char *arena_str(ncs_reader_t *r, const uint8_t *s, size_t n) {
  if (r->str_bytes + n + 1 > MAX_STRING_BYTES) return NULL;
  arena_block_t *b = r->arena;
  if (!b || b->cap - b->used < n + 1) {
    size_t cap = n + 1 > ARENA_BLOCK ? n + 1 : ARENA_BLOCK;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->next = r->arena, b->used = 0, b->cap = cap;
    r->arena = b;
  }
  char *d = b->data + b->used;
  memcpy(d, s, n);
  d[n] = 0;
  b->used += n + 1;
  r->str_bytes += n + 1;
  return d;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* The string table hashes ids with a per-reader secret, so that a hostile file cannot choose
 * ids that all collide and turn lookups quadratic (the writer's ids are 1, 2, 3...). */
static size_t slot_of(const ncs_reader_t *r, uint64_t id, size_t cap) {
  return (size_t)mix64(id + r->seed) & (cap - 1);
}

static void strings_reset(ncs_reader_t *r) {
  arena_free(r);
  free(r->slots);
  r->slots = NULL;
  r->slot_cap = r->nstrings = 0;
}

static int strings_grow(ncs_reader_t *r) {
  size_t cap = r->slot_cap ? r->slot_cap * 2 : 256;
  str_slot_t *s = calloc(cap, sizeof *s);
  if (!s) return -1;
  for (size_t i = 0; i < r->slot_cap; i++) {
    if (!r->slots[i].id) continue;
    size_t j = slot_of(r, r->slots[i].id, cap);
    while (s[j].id) j = (j + 1) & (cap - 1);
    s[j] = r->slots[i];
  }
  free(r->slots);
  r->slots = s;
  r->slot_cap = cap;
  return 0;
}

const char *ncs_reader_string(const ncs_reader_t *r, uint64_t id) {
  if (!r || !id || !r->slot_cap) return NULL;
  for (size_t j = slot_of(r, id, r->slot_cap);; j = (j + 1) & (r->slot_cap - 1)) {
    if (r->slots[j].id == id) return r->slots[j].s;
    if (!r->slots[j].id) return NULL;
  }
}

/* Define (or redefine: the last definition wins) string `id`. */
static int strings_put(ncs_reader_t *r, uint64_t id, const char *s) {
  if (r->nstrings + 1 > r->slot_cap / 2 && strings_grow(r) != 0) return -1;
  size_t j = slot_of(r, id, r->slot_cap);
  while (r->slots[j].id && r->slots[j].id != id) j = (j + 1) & (r->slot_cap - 1);
  if (!r->slots[j].id) r->nstrings++;
  r->slots[j].id = id;
  r->slots[j].s = s;
  return 0;
}

/* ---------------------------------------------------------------- field decoding */

static int get_u64(ncs_reader_t *r, uint64_t *v, const char *what) {
  size_t n = ncs_get_varint(r->pos, r->end, v);
  if (n) {
    r->pos += n;
    return 0;
  }
  /* tell "ran off the end" from "too long" */
  const uint8_t *p = r->pos;
  while (p < r->end && p - r->pos < 10 && (*p & 0x80)) p++;
  if (p >= r->end && p - r->pos < 10)
    return bad_field(r, what, "field runs past the end of the chunk");
  return bad_field(r, what, "bad varint (more than 64 bits)");
}

static int get_u32(ncs_reader_t *r, uint32_t *v, const char *what) {
  uint64_t x = 0;
  if (get_u64(r, &x, what) != 0) return -1;
  if (x > UINT32_MAX) return bad_field(r, what, "value out of range");
  *v = (uint32_t)x;
  return 0;
}

static int get_i32(ncs_reader_t *r, int32_t *v, const char *what) {
  uint64_t x = 0;
  if (get_u64(r, &x, what) != 0) return -1;
  int64_t s = ncs_unzigzag(x);
  if (s < INT32_MIN || s > INT32_MAX) return bad_field(r, what, "value out of range");
  *v = (int32_t)s;
  return 0;
}

/* a varint written as the uint32 bit pattern of an int (COMM nranks, nNodes) */
static int get_u32_as_i32(ncs_reader_t *r, int32_t *v, const char *what) {
  uint32_t x = 0;
  if (get_u32(r, &x, what) != 0) return -1;
  *v = (int32_t)x;
  return 0;
}

static int get_u8(ncs_reader_t *r, uint8_t *v, const char *what) {
  if (r->pos >= r->end) return bad_field(r, what, "field runs past the end of the chunk");
  *v = *r->pos++;
  return 0;
}

/* An inline string: varint length (<= NCS_STRING_MAX) then the bytes. */
static int get_str(ncs_reader_t *r, const char **s, const char *what) {
  uint64_t n = 0;
  const uint8_t *start = r->pos;
  if (get_u64(r, &n, what) != 0) return -1;
  if (n > NCS_STRING_MAX) {
    r->pos = start;
    return bad_field(r, what, "string longer than 4096 bytes");
  }
  if (n > (uint64_t)(r->end - r->pos)) {
    r->pos = start;
    return bad_field(r, what, "string runs past the end of the chunk");
  }
  *s = arena_str(r, r->pos, (size_t)n);
  if (!*s) return bad_field(r, what, "too many string bytes in this segment (limit 64 MiB)");
  r->pos += n;
  return 0;
}

static int get_ref(ncs_reader_t *r, uint8_t *kind, uint64_t *v, const char *what) {
  uint64_t k = 0;
  const uint8_t *at = r->pos;
  if (get_u64(r, &k, what) != 0) return -1;
  if (k > NCS_REF_STALE) {
    r->pos = at;
    return bad_field(r, what, "unknown reference kind");
  }
  *kind = (uint8_t)k;
  return get_u64(r, v, what);
}

/* ---------------------------------------------------------------- chunk payloads */

static int dec_segment(ncs_reader_t *r) {
  strings_reset(r); /* the old segment's strings die with it */
  ncs_segment_info_t *s = &r->seg;
  memset(s, 0, sizeof *s);
  s->plugin_version = s->host = s->cmdline = "";
  r->have_seg = 0;
  if (get_u32(r, &s->format_version, "format version") ||
      get_str(r, &s->plugin_version, "plugin version") || get_str(r, &s->host, "host") ||
      get_u64(r, &s->pid, "pid") || get_u32(r, &s->epoch, "load epoch") ||
      get_u32(r, &s->mode, "mode") || get_u32(r, &s->mask, "event mask") ||
      get_u64(r, &s->start_realtime_ns, "start realtime") ||
      get_u64(r, &s->start_mono_ns, "start monotonic") || get_str(r, &s->cmdline, "command line") ||
      get_u64(r, &s->pool_bytes, "buffer pool bytes"))
    return -1;
  s->index = r->nseg++;
  r->have_seg = 1;
  return NCS_ITEM_SEGMENT;
}

static int dec_strings(ncs_reader_t *r) {
  while (r->pos < r->end) {
    uint64_t id = 0;
    const char *s = NULL;
    const uint8_t *at = r->pos;
    if (get_u64(r, &id, "string id") != 0) return -1;
    if (id == 0) {
      r->pos = at;
      return bad_field(r, NULL, "string id 0 (ids start at 1)");
    }
    if (r->nstrings >= MAX_STRINGS && !ncs_reader_string(r, id)) {
      r->pos = at;
      return bad_field(r, NULL, "too many strings in this segment (limit 1048576)");
    }
    if (get_str(r, &s, "string") != 0) return -1;
    if (strings_put(r, id, s) != 0) return bad_field(r, NULL, "out of memory for the string table");
  }
  return 0; /* no item */
}

static int dec_comm(ncs_reader_t *r, ncs_item_t *it) {
  ncs_comm_info_t *c = &it->comm;
  if (get_u32(r, &c->index, "comm index") || get_u64(r, &c->comm_id, "commId") ||
      get_str(r, &c->name, "commName") || get_u32_as_i32(r, &c->nranks, "nranks") ||
      get_u32_as_i32(r, &c->nnodes, "nNodes") || get_i32(r, &c->rank, "rank") ||
      get_u32(r, &c->abi_version, "ABI version") || get_u64(r, &c->init_ns, "init time") ||
      get_u32(r, &c->mask, "activation mask"))
    return -1;
  c->device = -1, c->bus_id = "";
  /* appended later (format 1.1): the GPU; files written before have no such bytes */
  if (r->pos < r->end && (get_i32(r, &c->device, "device") || get_str(r, &c->bus_id, "bus id")))
    return -1;
  it->ts = c->init_ns;
  return NCS_ITEM_COMM;
}

static int dec_comm_end(ncs_reader_t *r, ncs_item_t *it) {
  if (get_u32(r, &it->comm.index, "comm index") || get_u64(r, &it->ts, "finalize time")) return -1;
  it->comm.name = "";
  return NCS_ITEM_COMM_END;
}

static int dec_thread(ncs_reader_t *r, ncs_item_t *it) {
  if (get_u32(r, &it->thread_index, "thread index") || get_u64(r, &it->thread_tid, "tid") ||
      get_str(r, &it->thread_name, "thread name"))
    return -1;
  return NCS_ITEM_THREAD;
}

static int dec_counters(ncs_reader_t *r, ncs_item_t *it, int what) {
  ncs_counters_t *c = &r->counters;
  c->nkeys = 0;
  while (r->pos < r->end) {
    uint64_t k = 0, v = 0;
    if (get_u64(r, &k, "counter key") || get_u64(r, &v, "counter value")) return -1;
    if (k > UINT32_MAX) continue; /* unknown keys are ignored; ours fit 32 bits */
    if (c->nkeys >= sizeof c->keys / sizeof c->keys[0])
      return bad_field(r, NULL, "more than 512 counters in one chunk");
    c->keys[c->nkeys] = (uint32_t)k;
    c->values[c->nkeys++] = v;
  }
  it->counters = c;
  return what;
}

/* LOSS: reason, window, total, then (type, count) pairs. A reason or type this reader does not
 * know (a newer writer) is passed on or left to `records`; what cannot be true is an error. */
static int dec_loss(ncs_reader_t *r, ncs_item_t *it) {
  ncs_loss_t *l = &it->loss;
  uint32_t n = 0;
  if (get_u32(r, &l->reason, "loss reason") || get_u64(r, &l->from_ns, "loss from") ||
      get_u64(r, &l->to_ns, "loss to") || get_u64(r, &l->records, "lost records") ||
      get_u32(r, &n, "loss type count"))
    return -1;
  if (l->reason == 0) return bad_field(r, "loss reason", "reason 0");
  if (l->from_ns > l->to_ns) return bad_field(r, "loss window", "the window ends before it starts");
  uint64_t sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t t = 0;
    uint64_t c = 0;
    if (get_u32(r, &t, "loss type") || get_u64(r, &c, "lost records of a type")) return -1;
    if (c > l->records - sum) return bad_field(r, "loss types", "per-type counts exceed the total");
    sum += c;
    if (t < NCS_T_COUNT) l->by_type[t] += c;
  }
  it->ts = l->from_ns;
  return NCS_ITEM_LOSS;
}

static int dec_events_header(ncs_reader_t *r) {
  uint32_t count = 0;
  if (get_u64(r, &r->prev_ts, "base time") || get_u32(r, &count, "record count")) return -1;
  r->ev_count = count;
  r->ev_done = 0;
  r->in_events = count > 0;
  return 0;
}

/* ---------------------------------------------------------------- event records */

static int get_dts(ncs_reader_t *r, ncs_event_t *e) {
  uint64_t z = 0;
  if (get_u64(r, &z, "time delta") != 0) return -1;
  r->prev_ts += (uint64_t)ncs_unzigzag(z); /* wraps mod 2^64 like the encoder's subtraction */
  e->ts = r->prev_ts;
  return 0;
}

static int dec_field(ncs_reader_t *r, ncs_event_t *e, unsigned i, const ncs_field_t *fd) {
  uint64_t v = 0;
  switch (fd->kind) {
  case NCS_FK_U64:
  case NCS_FK_PTR: return get_u64(r, &e->f[i], fd->name);
  case NCS_FK_I64:
    if (get_u64(r, &v, fd->name) != 0) return -1;
    e->f[i] = (uint64_t)ncs_unzigzag(v);
    return 0;
  case NCS_FK_BOOL: {
    const uint8_t *at = r->pos;
    if (get_u64(r, &e->f[i], fd->name) != 0) return -1;
    if (e->f[i] > 1) {
      r->pos = at;
      return bad_field(r, fd->name, "boolean field is neither 0 nor 1");
    }
    return 0;
  }
  case NCS_FK_STR: {
    const uint8_t *at = r->pos;
    if (get_u64(r, &e->f[i], fd->name) != 0) return -1;
    if (!e->f[i]) return 0;
    e->fstr[i] = ncs_reader_string(r, e->f[i]);
    if (e->fstr[i]) return 0;
    r->pos = at;
    char msg[96];
    snprintf(msg, sizeof msg, "string id %llu is not defined", (unsigned long long)e->f[i]);
    return bad_field(r, fd->name, msg);
  }
  case NCS_FK_REF: return get_ref(r, &e->fref_kind[i], &e->f[i], fd->name);
  }
  return bad_field(r, fd->name, "unknown field kind in the schema");
}

static int dec_start(ncs_reader_t *r, ncs_event_t *e) {
  uint64_t ck = 0;
  const uint8_t *at;
  if (get_u32(r, &e->thread, "thread") || get_dts(r, e) || get_u64(r, &e->id, "id")) return -1;
  at = r->pos;
  if (get_u64(r, &ck, "context kind") != 0) return -1;
  if (ck > NCS_CTX_INVALID) {
    r->pos = at;
    return bad_field(r, "context kind", "unknown context kind");
  }
  e->ctx_kind = (uint8_t)ck;
  if (get_u64(r, &e->ctx, "context") || get_ref(r, &e->parent_kind, &e->parent, "parent") ||
      get_i32(r, &e->rank, "rank") || get_u32(r, &e->flags, "flags"))
    return -1;
  const ncs_schema_t *s = &ncs_schema[e->type];
  e->nfields = s->nfields;
  for (unsigned i = 0; i < s->nfields; i++)
    if (dec_field(r, e, i, &s->fields[i]) != 0) return -1;
  return 0;
}

static int dec_complete(ncs_reader_t *r, ncs_event_t *e) {
  return get_u64(r, &e->id, "id") || get_u32(r, &e->cflags, "flags") ||
                 get_u64(r, &e->end_ns, "end") ||
                 get_u64(r, &e->first_child_ns, "first child start") ||
                 get_u64(r, &e->gpu_start, "GPU start") || get_u64(r, &e->gpu_stop, "GPU stop") ||
                 get_u32(r, &e->n_kernel_ch, "KernelCh count") ||
                 get_u32(r, &e->n_proxy_op, "ProxyOp count") ||
                 get_u32(r, &e->n_open, "children open")
             ? -1
             : 0;
}

static int dec_record(ncs_reader_t *r, ncs_event_t *e) {
  const uint8_t *at = r->pos;
  if (get_u8(r, &e->kind, "record kind") || get_u8(r, &e->type, "event type")) return -1;
  if (e->kind < NCS_REC_START || e->kind > NCS_REC_MAX) {
    r->pos = at;
    return bad_field(r, NULL, "unknown record kind");
  }
  if (e->type >= NCS_T_COUNT) {
    r->pos = at + 1;
    return bad_field(r, NULL, "unknown event type (written by a newer ncclscope?)");
  }
  switch (e->kind) {
  case NCS_REC_START: return dec_start(r, e);
  case NCS_REC_STOP:
    return get_u32(r, &e->thread, "thread") || get_dts(r, e) || get_u64(r, &e->id, "id") ? -1 : 0;
  case NCS_REC_STATE:
    return get_u32(r, &e->thread, "thread") || get_dts(r, e) || get_u64(r, &e->id, "id") ||
                   get_u32(r, &e->state, "state") || get_u64(r, &e->arg0, "arg0") ||
                   get_u64(r, &e->arg1, "arg1")
               ? -1
               : 0;
  case NCS_REC_COMPLETE: return dec_complete(r, e);
  case NCS_REC_BADCALL: {
    if (get_u32(r, &e->thread, "thread") || get_dts(r, e) || get_u64(r, &e->id, "handle"))
      return -1;
    const uint8_t *call_at = r->pos;
    if (get_u32(r, &e->flags, "call") != 0) return -1;
    if (e->flags != NCS_BC_STOP && e->flags != NCS_BC_STATE) {
      r->pos = call_at;
      return bad_field(r, "call", "a bad call is neither a stop nor a state");
    }
    return get_u32(r, &e->state, "state") || get_u64(r, &e->arg0, "arg0") ||
                   get_u64(r, &e->arg1, "arg1")
               ? -1
               : 0;
  }
  default: /* NCS_REC_EXPIRED */
    return get_u64(r, &e->id, "id") || get_u32(r, &e->reason, "reason") ||
                   get_u64(r, &e->start_ns, "start")
               ? -1
               : 0;
  }
}

static int next_record(ncs_reader_t *r, ncs_item_t *it) {
  if (r->pos >= r->end) {
    char msg[128];
    snprintf(msg, sizeof msg, "the chunk ends after %u of its %u records", r->ev_done, r->ev_count);
    return bad_field(r, NULL, msg);
  }
  if (dec_record(r, &it->ev) != 0) return -1;
  if (++r->ev_done == r->ev_count) r->in_events = 0; /* bytes after the last record are ignored */
  it->ts = it->ev.ts;
  return NCS_ITEM_EVENT;
}

/* ---------------------------------------------------------------- GPU chunks (trace/gpu.h) */

static int dec_gpu_state(ncs_reader_t *r, ncs_item_t *it) {
  ncs_gpu_state_t *g = &it->gpu_state;
  uint32_t n = 0;
  if (get_u32(r, &g->state, "GPU state") || get_u32(r, &g->flags, "GPU state flags") ||
      get_u64(r, &g->since_ns, "GPU state time") || get_str(r, &g->reason, "GPU state reason") ||
      get_str(r, &g->library, "CUPTI library") || get_u32(r, &g->api_version, "CUPTI version") ||
      get_str(r, &g->holder, "CUPTI holder") || get_u64(r, &g->clock_mono_ns, "GPU clock mono") ||
      get_u64(r, &g->clock_cupti_ns, "GPU clock CUPTI") ||
      get_u64(r, &g->clock_width_ns, "GPU clock width") || get_u32(r, &n, "GPU counter count"))
    return -1;
  if (g->state >= NCS_GPU_NSTATES) return bad_field(r, "GPU state", "unknown state");
  if (n > NCS_GPU_MAX_COUNTERS) return bad_field(r, NULL, "more than 64 GPU counters");
  for (uint32_t i = 0; i < n; i++)
    if (get_u32(r, &g->keys[i], "GPU counter key") || get_u64(r, &g->values[i], "GPU counter value"))
      return -1;
  g->ncounters = n;
  it->ts = g->since_ns;
  return NCS_ITEM_GPU_STATE;
}

static int dec_gpu_header(ncs_reader_t *r) {
  uint32_t count = 0;
  if (get_u64(r, &r->prev_ts, "GPU base mono") || get_u64(r, &r->gpu_prev_start, "GPU base CUPTI") ||
      get_u32(r, &count, "GPU record count"))
    return -1;
  r->gpu_prev_corr = 0;
  r->ev_count = count;
  r->ev_done = 0;
  r->in_events = count > 0;
  return 0;
}

static int gpu_delta(ncs_reader_t *r, uint64_t *prev, uint64_t *out, const char *what) {
  uint64_t z = 0;
  if (get_u64(r, &z, what) != 0) return -1;
  *prev += (uint64_t)ncs_unzigzag(z); /* wraps like the encoder's subtraction */
  *out = *prev;
  return 0;
}

static int gpu_host_time(ncs_reader_t *r, ncs_gpu_rec_t *g) {
  return get_u32(r, &g->thread, "GPU record thread") ||
         gpu_delta(r, &r->prev_ts, &g->ts, "GPU record time");
}

/* The fields of one record kind; *r->pos is inside the record's length. */
static int dec_gpu_fields(ncs_reader_t *r, ncs_gpu_rec_t *g) {
  uint64_t dur = 0;
  switch (g->kind) {
  case NCS_GR_KERNEL:
    if (gpu_delta(r, &r->gpu_prev_corr, &g->corr, "kernel correlation id") ||
        gpu_delta(r, &r->gpu_prev_start, &g->start, "kernel start") ||
        get_u64(r, &dur, "kernel duration") || get_u32(r, &g->device, "kernel device") ||
        get_u64(r, &g->stream, "kernel stream") || get_u64(r, &g->name_id, "kernel name") ||
        get_u64(r, &g->graph, "kernel graph") || get_u64(r, &g->node, "kernel graph node") ||
        get_u64(r, &g->launch, "kernel launch") || get_u32(r, &g->replay, "kernel replay"))
      return -1;
    g->end = g->start + dur;
    if (g->name_id) g->name = ncs_reader_string(r, g->name_id);
    return 0;
  case NCS_GR_LAUNCH:
  case NCS_GR_PENDING:
    if (gpu_host_time(r, g) || get_u64(r, &g->corr, "launch correlation id") ||
        get_u64(r, &g->launch, "launch event") || get_u32(r, &g->comm, "launch comm") ||
        get_u64(r, &g->group, "launch group") || get_u64(r, &g->stream, "launch stream"))
      return -1;
    return g->kind == NCS_GR_PENDING ? get_u64(r, &g->graph, "pending graph") : 0;
  case NCS_GR_GNODE:
    return get_u64(r, &g->launch, "node launch") || get_u64(r, &g->corr, "node correlation id") ||
                   get_u64(r, &g->node, "graph node") || get_u64(r, &g->graph, "graph")
               ? -1
               : 0;
  case NCS_GR_GEXEC:
    return get_u64(r, &g->graph, "exec graph") || get_u64(r, &g->orig, "template graph") ? -1 : 0;
  case NCS_GR_GCLONE:
    return get_u64(r, &g->node, "exec node") || get_u64(r, &g->orig, "captured node") ||
                   get_u64(r, &g->launch, "clone launch")
               ? -1
               : 0;
  case NCS_GR_GLAUNCH:
    return gpu_host_time(r, g) || get_u64(r, &g->corr, "graph launch correlation id") ||
                   get_u64(r, &g->graph, "graph launch exec") || get_u64(r, &g->stream, "graph launch stream")
               ? -1
               : 0;
  default: /* NCS_GR_SUMMARY */
    if (get_u32(r, &g->device, "summary device") || get_u64(r, &g->stream, "summary stream") ||
        get_u64(r, &g->count, "summary count") || get_u64(r, &g->busy_ns, "summary busy") ||
        gpu_delta(r, &r->gpu_prev_start, &g->start, "summary start") || get_u64(r, &dur, "summary span"))
      return -1;
    g->end = g->start + dur;
    return 0;
  }
}

/* One GPU record: u8 kind, varint length, fields. Unknown kinds are skipped, and so are bytes
 * after the fields this reader knows (a later minor version may append some). Returns the item,
 * 0 for a skipped record, -1. */
static int dec_gpu_rec(ncs_reader_t *r, ncs_item_t *it) {
  ncs_gpu_rec_t *g = &it->gpu;
  uint64_t len = 0;
  if (get_u8(r, &g->kind, "GPU record kind") || get_u64(r, &len, "GPU record length")) return -1;
  if (len > (uint64_t)(r->end - r->pos)) return bad_field(r, "GPU record", "runs past the end of the chunk");
  const uint8_t *end = r->pos + len, *chunk_end = r->end;
  int what = 0;
  if (g->kind >= NCS_GR_KERNEL && g->kind <= NCS_GR_MAX) {
    r->end = end; /* the record's fields must fit its length */
    int bad = get_u32(r, &g->flags, "GPU record flags") || dec_gpu_fields(r, g);
    r->end = chunk_end;
    if (bad) return -1;
    what = NCS_ITEM_GPU;
    it->ts = g->ts;
  }
  r->pos = end;
  return what;
}

static int next_gpu_record(ncs_reader_t *r, ncs_item_t *it) {
  if (r->pos >= r->end) {
    char msg[128];
    snprintf(msg, sizeof msg, "the GPU chunk ends after %u of its %u records", r->ev_done, r->ev_count);
    return bad_field(r, NULL, msg);
  }
  int what = dec_gpu_rec(r, it);
  if (what < 0) return -1;
  if (++r->ev_done == r->ev_count) r->in_events = 0;
  return what;
}

/* ---------------------------------------------------------------- chunks */

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int fail_tail(ncs_reader_t *r, uint64_t off, uint64_t size, const char *what) {
  if (tail_is_zero(r, off, size))
    return fail(
        r, NCS_DAMAGE_TRUNCATED, off,
        "%llu zero bytes at the end of the file from offset %llu (the process probably died "
        "while writing)",
        (unsigned long long)(size - off), (unsigned long long)off);
  return fail(r, NCS_DAMAGE_TRUNCATED, off,
              "%s at offset %llu (the process probably died while writing)", what,
              (unsigned long long)off);
}

/* Load and check the next chunk. 1 loaded, 0 clean end of file, -1 failed. */
static int load_chunk(ncs_reader_t *r) {
  uint64_t off = r->next_off, size = src_size(r);
  if (off >= size) return 0;
  if (size - off < NCS_CHUNK_HEADER_LEN) return fail_tail(r, off, size, "truncated chunk header");
  const uint8_t *h = src_bytes(r, off, NCS_CHUNK_HEADER_LEN, 0);
  if (!h) return -1;
  uint32_t magic = get_le32(h), len = get_le32(h + 8), crc = get_le32(h + 12);
  uint16_t type = (uint16_t)(h[4] | h[5] << 8), flags = (uint16_t)(h[6] | h[7] << 8);
  if (magic != NCS_CHUNK_MAGIC) {
    if (tail_is_zero(r, off, size)) return fail_tail(r, off, size, "");
    return fail(r, NCS_DAMAGE_CORRUPT, off,
                "bad chunk magic 0x%08x at offset %llu: the file is damaged here", magic,
                (unsigned long long)off);
  }
  if (len > NCS_CHUNK_MAX_PAYLOAD)
    return fail(
        r, NCS_DAMAGE_CORRUPT, off,
        "chunk at offset %llu claims a payload of %u bytes (the limit is 16 MiB): the file is "
        "damaged here",
        (unsigned long long)off, len);
  uint64_t left = size - off - NCS_CHUNK_HEADER_LEN;
  if (len > left)
    return fail(
        r, NCS_DAMAGE_TRUNCATED, off,
        "truncated chunk at offset %llu: %u payload bytes announced, %llu present (the process "
        "probably died while writing)",
        (unsigned long long)off, len, (unsigned long long)left);
  const uint8_t *p = src_bytes(r, off + NCS_CHUNK_HEADER_LEN, len, NCS_CHUNK_HEADER_LEN);
  if (!p) return -1;
  h = r->fd < 0 ? h : r->buf; /* the buffer may have moved */
  if (ncs_crc32c(ncs_crc32c(0, h + 4, 8), p, len) != crc) {
    if (len == left)
      return fail(
          r, NCS_DAMAGE_TRUNCATED, off,
          "bad checksum in the last chunk at offset %llu (the process probably died while writing)",
          (unsigned long long)off);
    return fail(
        r, NCS_DAMAGE_CORRUPT, off,
        "checksum mismatch in the %s chunk at offset %llu (%u bytes): the file is damaged here; "
        "%llu bytes after it are not read",
        chunk_name(type), (unsigned long long)off, len, (unsigned long long)(left - len));
  }
  r->next_off = off + NCS_CHUNK_HEADER_LEN + len;
  r->ctype = type;
  r->chunk_off = off;
  r->pay_off = off + NCS_CHUNK_HEADER_LEN;
  r->pay = r->pos = p;
  r->end = p + len;
  if (flags && type >= 1 && type <= NCS_CHUNK_MAX_TYPE)
    return fail(
        r, NCS_DAMAGE_CORRUPT, off,
        "the %s chunk at offset %llu has flags 0x%x that this reader does not know (written by a "
        "newer ncclscope?)",
        chunk_name(type), (unsigned long long)off, flags);
  return 1;
}

/* Decode the loaded chunk. Returns an NCS_ITEM_* (> 0), 0 when the chunk yields no item (yet),
 * or -1. */
static int dec_chunk(ncs_reader_t *r, ncs_item_t *it) {
  if (r->ctype > NCS_CHUNK_MAX_TYPE || r->ctype == 0) return 0; /* unknown: skipped */
  if (r->ctype != NCS_CHUNK_SEGMENT && !r->have_seg)
    return fail(r, NCS_DAMAGE_CORRUPT, r->chunk_off,
                "%s chunk at offset %llu comes before any SEGMENT chunk", chunk_name(r->ctype),
                (unsigned long long)r->chunk_off);
  switch (r->ctype) {
  case NCS_CHUNK_SEGMENT: return dec_segment(r);
  case NCS_CHUNK_CLOCK:
    if (get_u64(r, &it->clock_mono_ns, "monotonic ns") ||
        get_u64(r, &it->clock_realtime_ns, "realtime ns"))
      return -1;
    it->ts = it->clock_mono_ns;
    return NCS_ITEM_CLOCK;
  case NCS_CHUNK_STRINGS: return dec_strings(r);
  case NCS_CHUNK_COMM: return dec_comm(r, it);
  case NCS_CHUNK_COMM_END: return dec_comm_end(r, it);
  case NCS_CHUNK_THREAD: return dec_thread(r, it);
  case NCS_CHUNK_EVENTS: return dec_events_header(r);
  case NCS_CHUNK_COUNTERS: return dec_counters(r, it, NCS_ITEM_COUNTERS);
  case NCS_CHUNK_LOSS: return dec_loss(r, it);
  case NCS_CHUNK_GPU_STATE: return dec_gpu_state(r, it);
  case NCS_CHUNK_GPU: return dec_gpu_header(r);
  default: /* NCS_CHUNK_FOOTER */ return dec_counters(r, it, NCS_ITEM_FOOTER);
  }
}

int ncs_reader_next(ncs_reader_t *r, ncs_item_t *item) {
  if (!r || !item) return -1;
  if (r->state == RS_FAILED) return -1;
  if (r->state == RS_DONE) return 0;
  memset(item, 0, sizeof *item);
  if (r->is_flight && r->have_seg && r->loss_next < r->flight.nloss) {
    /* a flight file's loss windows live in its header (kill -9 cannot lose them): they come
     * as LOSS items right after its SEGMENT */
    item->loss = r->flight.loss[r->loss_next++];
    item->ts = item->loss.from_ns;
    item->what = NCS_ITEM_LOSS;
    return 1;
  }
  for (;;) {
    int what;
    if (r->in_events) {
      what = r->ctype == NCS_CHUNK_GPU ? next_gpu_record(r, item) : next_record(r, item);
    } else {
      int got = load_chunk(r);
      if (got <= 0) {
        if (got == 0) r->state = RS_DONE;
        return got;
      }
      what = dec_chunk(r, item);
    }
    if (what < 0) return -1;
    if (what > 0) {
      item->what = what;
      return 1;
    }
  }
}

/* ---------------------------------------------------------------- open / close */

static ncs_reader_t *reader_new(void) {
  ncs_reader_t *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->fd = -1;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  r->seed = mix64((uint64_t)(uintptr_t)r ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32));
  return r;
}

/* Check the 16-byte file header. A file shorter than that whose bytes match the start of a header
 * is a trace whose process died at once: the reader opens and reports the truncation. */
static int check_header(ncs_reader_t *r, const uint8_t *h, size_t n, char *err, size_t errlen) {
  uint8_t want[NCS_FILE_MAGIC_LEN];
  memcpy(want, NCS_FILE_MAGIC, NCS_FILE_MAGIC_LEN);
  size_t m = n < NCS_FILE_MAGIC_LEN ? n : NCS_FILE_MAGIC_LEN;
  if (memcmp(h, want, m) != 0) {
    snprintf(err, errlen, "not an ncclscope trace (bad magic)");
    return -1;
  }
  if (n < NCS_FILE_HEADER_LEN) {
    fail(r, NCS_DAMAGE_TRUNCATED, 0,
         "truncated file header at offset 0: %zu of 16 bytes (the process probably died while "
         "writing)",
         n);
    return 0;
  }
  uint32_t ver = get_le32(h + 8);
  if (ver != NCS_FORMAT_VERSION) {
    snprintf(err, errlen, "trace format version %u is not supported (this reader knows version %d)",
             ver, NCS_FORMAT_VERSION);
    return -1;
  }
  r->next_off = NCS_FILE_HEADER_LEN;
  return 0;
}

static ncs_reader_t *open_flight(const uint8_t *data, size_t len, char *err, size_t errlen) {
  uint8_t *lin;
  size_t lin_len;
  ncs_flight_info_t fi;
  uint32_t bad;
  if (ncs_flight_linearize(data, len, &lin, &lin_len, &fi, &bad, err, errlen) != 0) return NULL;
  ncs_reader_t *r = ncs_reader_open_mem(lin, lin_len, err, errlen);
  if (!r) {
    free(lin);
    return NULL;
  }
  r->owned = lin;
  r->is_flight = 1;
  r->flight = fi;
  r->flight_bad_slots = bad;
  return r;
}

ncs_reader_t *ncs_reader_open_mem(const void *data, size_t len, char *err, size_t errlen) {
  if (data && ncs_flight_is(data, len)) return open_flight(data, len, err, errlen);
  ncs_reader_t *r = reader_new();
  if (!r) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  r->mem = data;
  r->mem_len = len;
  size_t n = len < NCS_FILE_HEADER_LEN ? len : NCS_FILE_HEADER_LEN;
  if (check_header(r, data ? data : (const void *)"", n, err, errlen) != 0) {
    ncs_reader_close(r);
    return NULL;
  }
  return r;
}

/* Takes over fd. A flight file is bounded by its configured size (NCCLSCOPE_FLIGHT_SIZE). */
static ncs_reader_t *open_flight_file(int fd, const char *path, uint64_t size, char *err,
                                      size_t errlen) {
  if (size > (8ull << 30)) {
    snprintf(err, errlen, "%s: flight file of %llu bytes is too large", path, (unsigned long long)size);
    close(fd);
    return NULL;
  }
  uint8_t *img = malloc(size ? size : 1);
  if (!img) {
    snprintf(err, errlen, "out of memory reading %s", path);
    close(fd);
    return NULL;
  }
  size_t got = 0;
  while (got < size) {
    ssize_t k = pread(fd, img + got, size - got, (off_t)got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  char e2[300];
  ncs_reader_t *r = open_flight(img, got, e2, sizeof e2);
  free(img);
  if (!r) snprintf(err, errlen, "%s: %s", path, e2);
  return r;
}

ncs_reader_t *ncs_reader_open(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s is not a regular file", path);
    close(fd);
    return NULL;
  }
  ncs_reader_t *r = reader_new();
  if (!r) {
    snprintf(err, errlen, "out of memory");
    close(fd);
    return NULL;
  }
  r->fd = fd;
  uint8_t h[NCS_FILE_HEADER_LEN];
  size_t n = 0;
  while (n < sizeof h) {
    ssize_t k = pread(fd, h + n, sizeof h - n, (off_t)n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += (size_t)k;
  }
  if (ncs_flight_is(h, n)) { /* a flight file: read it whole (it may still be changing) */
    r->fd = -1; /* open_flight_file takes the descriptor over */
    ncs_reader_close(r);
    return open_flight_file(fd, path, (uint64_t)st.st_size, err, errlen);
  }
  if (check_header(r, h, n, err, errlen) != 0) {
    ncs_reader_close(r);
    return NULL;
  }
  return r;
}

void ncs_reader_close(ncs_reader_t *r) {
  if (!r) return;
  if (r->fd >= 0) close(r->fd);
  strings_reset(r);
  free(r->buf);
  free(r->owned);
  free(r);
}

const char *ncs_reader_error(const ncs_reader_t *r) {
  return r && r->state == RS_FAILED ? r->err : "";
}
int ncs_reader_damage(const ncs_reader_t *r) {
  return r && r->state == RS_FAILED ? r->damage : NCS_DAMAGE_NONE;
}
uint64_t ncs_reader_error_offset(const ncs_reader_t *r) { return r ? r->err_off : 0; }
const ncs_flight_info_t *ncs_reader_flight(const ncs_reader_t *r) {
  return r && r->is_flight ? &r->flight : NULL;
}
uint32_t ncs_reader_flight_bad_slots(const ncs_reader_t *r) { return r ? r->flight_bad_slots : 0; }
const ncs_segment_info_t *ncs_reader_segment(const ncs_reader_t *r) {
  return r && r->have_seg ? &r->seg : NULL;
}
uint64_t ncs_reader_offset(const ncs_reader_t *r) { return r ? r->next_off : 0; }

/* ---------------------------------------------------------------- listing */

static int has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n > m && strcmp(s + n - m, suf) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_path(char ***v, size_t *n, size_t *cap, char *p) {
  if (!p) return -1;
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    char **nv = realloc(*v, c * sizeof *nv);
    if (!nv) {
      free(p);
      return -1;
    }
    *v = nv, *cap = c;
  }
  (*v)[(*n)++] = p;
  return 0;
}

static char *join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *p = malloc(a + b + 2);
  if (!p) return NULL;
  memcpy(p, dir, a);
  size_t at = a;
  if (a && dir[a - 1] != '/') p[at++] = '/';
  memcpy(p + at, name, b + 1);
  return p;
}

int ncs_list_traces(const char *path, char ***paths, size_t *n, char *err, size_t errlen) {
  *paths = NULL, *n = 0;
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  size_t cap = 0;
  if (!S_ISDIR(st.st_mode)) {
    if (add_path(paths, n, &cap, strdup(path)) != 0) goto oom;
    return 0;
  }
  DIR *d = opendir(path);
  if (!d) {
    snprintf(err, errlen, "cannot read directory %s: %s", path, strerror(errno));
    return -1;
  }
  for (struct dirent *de; (de = readdir(d));) {
    if (!has_suffix(de->d_name, NCS_TRACE_SUFFIX) && !has_suffix(de->d_name, NCS_FLIGHT_SUFFIX))
      continue;
    char *p = join(path, de->d_name);
    struct stat fst;
    if (p && (stat(p, &fst) != 0 || !S_ISREG(fst.st_mode))) {
      free(p);
      continue;
    }
    if (add_path(paths, n, &cap, p) != 0) {
      closedir(d);
      goto oom;
    }
  }
  closedir(d);
  if (*n) qsort(*paths, *n, sizeof **paths, cmp_str);
  return 0;
oom:
  ncs_free_paths(*paths, *n);
  *paths = NULL, *n = 0;
  snprintf(err, errlen, "out of memory");
  return -1;
}

void ncs_free_paths(char **paths, size_t n) {
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
}
