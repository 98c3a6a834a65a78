/* reader.c - streaming reader for ncclscope trace files (docs/trace-format.md).
 *
 * The reader holds one chunk at a time. ncs_reader_next loads the next chunk, checks its magic,
 * length and CRC, and decodes it; an EVENTS chunk is decoded one record per call, so a damaged
 * record late in a chunk still lets every record before it through. Nothing in the file is
 * trusted: every varint, length, count, string id and kind byte is checked.
 *
 * Damage costs what it hit, not the rest of the file. A chunk that fails its checks (or a payload
 * that passes its CRC and does not decode) becomes a GAP item, and the reader scans forward for
 * the next chunk with the magic, a plausible length and a good CRC, and goes on there. Only when
 * no valid chunk follows does damage end the file: as a truncation when it looks like a torn last
 * write, else as a lost tail. Records that name strings or communicators lost in a gap are
 * decoded anyway and flagged (ncs_event_t.lost). docs/trace-format.md, "Damage and
 * resynchronization", has the rules.
 *
 * Memory: one chunk (file mode; memory mode points into the caller's buffer), a 64 KiB scan
 * window, and per segment the strings, the communicator indexes and the fingerprints of the
 * chunks read (to find a chunk written twice), all capped.
 */
#include "trace/reader.h"
#include "trace/flight.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Caps on the per-segment string store. A real trace interns a few hundred names; these only
 * stop a hostile file from using unbounded memory. */
#define MAX_STRINGS (1u << 20)
#define MAX_COMMS (1u << 20) /* communicator indexes remembered per segment */
#define MAX_STRING_BYTES (64u << 20)
#define ARENA_BLOCK (64u << 10)
/* chunks per segment whose fingerprints are kept to recognize a second copy (8 MiB at most) */
#define MAX_SEEN_CHUNKS (1u << 18)
#define SCAN_WINDOW (64u << 10)
/* CRC bytes that false chunk headers may cost while resynchronizing, on top of the file's size:
 * a hostile file full of plausible headers cannot make the scan quadratic */
#define VERIFY_SLACK (64ull << 20)
/* order checks: ids of completions remembered per generation, string ids and communicator
 * indexes remembered as named before their definition */
#define DONE_GEN (1u << 15)
#define MAX_MISSED (1u << 16)
#define MISSED_COMM (1ull << 63)

/* Strings live in an arena of blocks so pointers handed out stay valid until the segment ends. */
typedef struct arena_block {
  struct arena_block *next;
  size_t used, cap;
  char data[];
} arena_block_t;

/* An open-addressing map from non-zero 64-bit keys to 64-bit values: string ids to strings,
 * communicator indexes + 1, chunk fingerprints to offsets. */
typedef struct {
  uint64_t k, v; /* k 0 = empty slot */
} map_slot_t;

typedef struct {
  map_slot_t *s;
  size_t cap, n;
} map_t;

enum { RS_OK, RS_DONE, RS_FAILED };

/* why the chunk at an offset is not valid (check_chunk) */
enum { BAD_SHORT = 1, BAD_MAGIC, BAD_LEN, BAD_CUT, BAD_CRC };

/* the most fields a SEGMENT may list per type, and types it may list (a later format may have
   more of either than this reader knows; it skips the fields it does not know by their kind) */
#define NCS_SEG_MAX_FIELDS 64
#define NCS_SEG_MAX_TYPES 64

struct ncs_reader {
  int fd;             /* file mode, else -1 */
  const uint8_t *mem; /* memory mode */
  size_t mem_len;
  uint8_t *buf; /* file mode: header + payload of the current chunk */
  size_t buf_cap;
  uint8_t *scan; /* file mode: the resynchronization window */
  uint64_t next_off; /* offset of the next chunk header */
  int empty;

  /* the chunk being decoded */
  uint16_t ctype, cflags;
  uint64_t chunk_off, pay_off;
  const uint8_t *pay, *pos, *end;
  uint64_t rec_off; /* where the record (or string entry) being decoded starts */
  int in_events, redo;
  uint32_t ev_count, ev_done;
  uint64_t prev_ts;
  uint64_t gpu_prev_start, gpu_prev_corr; /* GPU chunk: kernel start and correlation id bases */

  /* damage */
  int state, end_rc;
  int bad;          /* BAD_*: what load_chunk found wrong */
  uint32_t bad_len; /* the length the bad chunk announced */
  int gave_up;      /* the CRC budget for false chunk headers is spent */
  uint64_t verify_left;
  char why[400];      /* the damage just found */
  char gap_why[400];  /* the last GAP item's why */
  char first_gap[400], first_seg[200], tail_msg[400];
  char msg[1400]; /* ncs_reader_error */
  ncs_damage_t dmg;
  uint64_t first_off, lost_ref_off, lost_seg_off;
  int have_first;

  /* the current segment */
  int have_seg;
  int seg_gap;        /* a gap since it began: later chunks may belong to a segment we lost */
  int seg_footer;     /* its FOOTER was read */
  char over_why[160]; /* why the next chunk cannot belong to the current segment, "" if it can */
  char evidence[160]; /* why the chunk just loaded starts a recovered segment, "" if it does not */
  uint32_t nseg;
  ncs_segment_info_t seg;
  arena_block_t *arena;
  size_t str_bytes;
  map_t strings, comms, seen;
  uint64_t seg_key, seg_key_off; /* the last SEGMENT chunk's fingerprint and offset */
  /* the writer's order (docs/trace-format.md, "Order"): string ids and communicator indexes that
   * records named before any chunk defined them (MISSED_COMM marks an index), the ids of the
   * latest completions and expiries (two generations of at most DONE_GEN each: a START of one
   * of them comes after its completion), the newest CLOCK pair */
  map_t missed, done[2];
  uint64_t last_clock;
  char order_why[300];
  uint64_t order_off;
  /* the last segment that decoded: what a recovered segment inherits (one file, one process) */
  ncs_segment_info_t id;
  int have_id;
  char id_host[NCS_STRING_MAX + 1], id_plugin[NCS_STRING_MAX + 1], id_cmd[NCS_STRING_MAX + 1];
  uint64_t seed; /* hash secret of the maps */
  ncs_counters_t counters;
  /* the segment's START field lists (format 1.3 states them in its SEGMENT; older files have
     format 1.1's, legacy_nfields): how many fields each type's records carry, and their kinds */
  uint8_t seg_nf[NCS_T_COUNT];
  uint8_t seg_kind[NCS_T_COUNT][NCS_SEG_MAX_FIELDS];
  /* the field lists of the last segment that decoded: a recovered segment inherits them too */
  uint8_t id_nf[NCS_T_COUNT];
  uint8_t id_kind[NCS_T_COUNT][NCS_SEG_MAX_FIELDS];

  /* a flight file: its linearized stream (owned) and what its header says */
  uint8_t *owned;
  int is_flight;
  ncs_flight_info_t flight;
  uint32_t flight_bad_slots;
  uint32_t loss_next; /* the header's loss windows handed out as LOSS items so far */
};

static const char *chunk_name(unsigned t) { return ncs_chunk_name(t); }

static uint64_t src_size(const ncs_reader_t *r);

/* ---------------------------------------------------------------- damage accounting */

static void note_off(ncs_reader_t *r, uint64_t off) {
  if (!r->have_first || off < r->first_off) r->first_off = off;
  r->have_first = 1;
}

/* ncs_reader_error's line: every kind of damage met so far, in file order. */
static void compose(ncs_reader_t *r) {
  const ncs_damage_t *d = &r->dmg;
  size_t n = 0, cap = sizeof r->msg;
  r->msg[0] = 0;
#define PUT(...)                                                                                   \
  do {                                                                                             \
    if (n < cap) n += (size_t)snprintf(r->msg + n, cap - n, __VA_ARGS__);                          \
  } while (0)
  if (d->gaps)
    PUT("%s: skipped, reading went on after it (%u damaged range%s, %llu bytes in all)",
        r->first_gap, d->gaps, d->gaps == 1 ? "" : "s", (unsigned long long)d->gap_bytes);
  if (d->lost_segments)
    PUT("%s%u segment%s lost %s SEGMENT chunk; the first at offset %llu: %s", n ? "; " : "",
        d->lost_segments, d->lost_segments == 1 ? "" : "s", d->lost_segments == 1 ? "its" : "their",
        (unsigned long long)r->lost_seg_off, r->first_seg);
  if (d->lost_refs)
    PUT("%s%llu record%s name%s strings or communicators that were never defined (lost with "
        "damage), the first at offset %llu",
        n ? "; " : "", (unsigned long long)d->lost_refs, d->lost_refs == 1 ? "" : "s",
        d->lost_refs == 1 ? "s" : "", (unsigned long long)r->lost_ref_off);
  if (d->bad_slots)
    PUT("%s%u damaged ring slot%s of the flight file left out", n ? "; " : "", d->bad_slots,
        d->bad_slots == 1 ? "" : "s");
  if (d->out_of_order)
    PUT("%s%u chunk%s or record%s out of the writer's order (moved or swapped); the first: %s",
        n ? "; " : "", d->out_of_order, d->out_of_order == 1 ? "" : "s", d->out_of_order == 1 ? "" : "s",
        r->order_why);
  if (d->foreign_segments)
    PUT("%s%u segment%s of another recording spliced into the file, skipped", n ? "; " : "",
        d->foreign_segments, d->foreign_segments == 1 ? "" : "s");
  if (d->tail != NCS_TAIL_CLEAN) PUT("%s%s", n ? "; then " : "", r->tail_msg);
  if (r->is_flight && (d->gaps || d->lost_refs || d->lost_segments || d->out_of_order ||
                       d->tail != NCS_TAIL_CLEAN))
    PUT(" (offsets in the flight file's linearized ring, docs/trace-format.md)");
#undef PUT
}

static int damaged(const ncs_reader_t *r) {
  const ncs_damage_t *d = &r->dmg;
  return d->tail != NCS_TAIL_CLEAN || d->gaps || d->lost_refs || d->lost_segments || d->bad_slots ||
         d->out_of_order || d->foreign_segments;
}

static int end_tail(ncs_reader_t *r, int tail, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reading ends at `off`: the bytes from there on are a truncated or lost tail. Returns -1. */
static int end_tail(ncs_reader_t *r, int tail, uint64_t off, const char *fmt, ...) {
  if (r->state == RS_FAILED) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->tail_msg, sizeof r->tail_msg, fmt, ap);
  va_end(ap);
  uint64_t size = src_size(r);
  r->dmg.tail = tail;
  r->dmg.tail_offset = off;
  r->dmg.tail_bytes = size > off ? size - off : 0;
  note_off(r, off);
  r->state = RS_FAILED;
  r->end_rc = -1;
  r->in_events = 0;
  compose(r);
  return -1;
}

/* Offset in the file of the decoding position. */
static uint64_t pos_off(const ncs_reader_t *r) { return r->pay_off + (uint64_t)(r->pos - r->pay); }

/* A field error inside the current chunk, which passed its CRC: the writer or something after it
 * produced bytes this reader cannot accept. Says why in r->why; the caller skips the rest of the
 * chunk as a gap. Returns -1. */
static int bad_field(ncs_reader_t *r, const char *what, const char *problem) {
  snprintf(r->why, sizeof r->why, "%s at offset %llu (in the %s chunk at offset %llu)%s%s",
           problem, (unsigned long long)pos_off(r), chunk_name(r->ctype),
           (unsigned long long)r->chunk_off, what ? ": " : "", what ? what : "");
  return -1;
}

/* Chunks or records out of the writer's order (r->order_why says the first). The file is
 * damaged; what to do with the chunk is the caller's. */
static void order_damage(ncs_reader_t *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void order_damage(ncs_reader_t *r, uint64_t off, const char *fmt, ...) {
  if (!r->dmg.out_of_order++) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->order_why, sizeof r->order_why, fmt, ap);
    va_end(ap);
    r->order_off = off;
  }
  note_off(r, off);
  compose(r);
}

/* A record that named something its segment never defined (ncs_event_t.lost) was returned. */
static void count_lost(ncs_reader_t *r) {
  if (r->dmg.lost_refs++) return;
  r->lost_ref_off = r->rec_off;
  note_off(r, r->rec_off);
  compose(r);
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
    if (n == 0) errno = 0; /* the file shrank */
    if (n <= 0) return -1;
    d += n, off += (uint64_t)n, len -= (size_t)n;
  }
  return 0;
}

static const uint8_t *read_failed(ncs_reader_t *r, uint64_t off, size_t len) {
  if (errno)
    end_tail(r, NCS_TAIL_LOST, off, "cannot read %zu bytes at offset %llu: %s", len,
             (unsigned long long)off, strerror(errno));
  else
    end_tail(r, NCS_TAIL_TRUNCATED, off,
             "the file shrank while it was read (at offset %llu): it is still being written?",
             (unsigned long long)off);
  return NULL;
}

/* Bytes [off, off+len) of the source, into r->buf at `at` in file mode. NULL with the reader
 * failed when they cannot be read. The caller has checked that they lie within src_size. */
static const uint8_t *src_bytes(ncs_reader_t *r, uint64_t off, size_t len, size_t at) {
  if (r->fd < 0) return r->mem + off;
  if (ensure_buf(r, at + len) != 0) {
    end_tail(r, NCS_TAIL_LOST, off, "out of memory reading %zu bytes at offset %llu", len,
             (unsigned long long)off);
    return NULL;
  }
  if (len && pread_all(r->fd, r->buf + at, len, off) != 0) return read_failed(r, off, len);
  return r->buf + at;
}

/* Up to SCAN_WINDOW bytes at off (fewer at the end): in file mode into r->scan. */
static const uint8_t *src_window(ncs_reader_t *r, uint64_t off, size_t len) {
  if (r->fd < 0) return r->mem + off;
  if (!r->scan && !(r->scan = malloc(SCAN_WINDOW))) {
    end_tail(r, NCS_TAIL_LOST, off, "out of memory scanning at offset %llu",
             (unsigned long long)off);
    return NULL;
  }
  if (pread_all(r->fd, r->scan, len, off) != 0) return read_failed(r, off, len);
  return r->scan;
}

/* The first offset >= off that holds data: a hole of a sparse file reads as zeros, holds no
 * chunk and need not be read. `size` when only holes follow. */
static uint64_t data_from(const ncs_reader_t *r, uint64_t off, uint64_t size) {
  if (r->fd < 0 || off >= size) return off;
  off_t d = lseek(r->fd, (off_t)off, SEEK_DATA);
  if (d < 0) return errno == ENXIO ? size : off; /* no SEEK_DATA here: read everything */
  return (uint64_t)d < size ? (uint64_t)d : size;
}

/* The first hole (bytes never written) at or after off, or `size` when there is none. */
static uint64_t hole_from(const ncs_reader_t *r, uint64_t off, uint64_t size) {
  if (r->fd < 0 || off >= size) return size;
  off_t h = lseek(r->fd, (off_t)off, SEEK_HOLE);
  return h < 0 || (uint64_t)h > size ? size : (uint64_t)h;
}

/* True when every byte from off to the end is zero: what a filesystem leaves when a crash cut
 * off data that was allocated but never written, or a hole at the end of a sparse file. */
static int tail_is_zero(ncs_reader_t *r, uint64_t off, uint64_t size) {
  uint8_t tmp[4096];
  while ((off = data_from(r, off, size)) < size) {
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

/* ---------------------------------------------------------------- maps */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Keys are hashed with a per-reader secret, so that a hostile file cannot choose keys that all
 * collide and turn lookups quadratic (the writer's ids are 1, 2, 3...). */
static size_t slot_of(const ncs_reader_t *r, uint64_t k, size_t cap) {
  return (size_t)mix64(k + r->seed) & (cap - 1);
}

static void map_clear(map_t *m) {
  free(m->s);
  m->s = NULL;
  m->cap = m->n = 0;
}

static int map_get(const ncs_reader_t *r, const map_t *m, uint64_t k, uint64_t *v) {
  if (!k || !m->cap) return 0;
  for (size_t j = slot_of(r, k, m->cap);; j = (j + 1) & (m->cap - 1)) {
    if (m->s[j].k == k) {
      if (v) *v = m->s[j].v;
      return 1;
    }
    if (!m->s[j].k) return 0;
  }
}

static int map_grow(const ncs_reader_t *r, map_t *m) {
  size_t cap = m->cap ? m->cap * 2 : 256;
  map_slot_t *s = calloc(cap, sizeof *s);
  if (!s) return -1;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->s[i].k) continue;
    size_t j = slot_of(r, m->s[i].k, cap);
    while (s[j].k) j = (j + 1) & (cap - 1);
    s[j] = m->s[i];
  }
  free(m->s);
  m->s = s;
  m->cap = cap;
  return 0;
}

/* Set (or replace: the last one wins) the value of key k != 0. */
static int map_put(const ncs_reader_t *r, map_t *m, uint64_t k, uint64_t v) {
  if (m->n + 1 > m->cap / 2 && map_grow(r, m) != 0) return -1;
  size_t j = slot_of(r, k, m->cap);
  while (m->s[j].k && m->s[j].k != k) j = (j + 1) & (m->cap - 1);
  if (!m->s[j].k) m->n++;
  m->s[j].k = k;
  m->s[j].v = v;
  return 0;
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

/* What a segment knows dies with it: strings, communicators, chunk fingerprints. */
static void segment_reset(ncs_reader_t *r) {
  arena_free(r);
  map_clear(&r->strings);
  map_clear(&r->comms);
  map_clear(&r->seen);
  map_clear(&r->missed), map_clear(&r->done[0]), map_clear(&r->done[1]);
  r->last_clock = 0;
  r->seg_gap = r->seg_footer = 0;
  r->over_why[0] = 0;
}

const char *ncs_reader_string(const ncs_reader_t *r, uint64_t id) {
  uint64_t v;
  return r && map_get(r, &r->strings, id, &v) ? (const char *)(uintptr_t)v : NULL;
}

static int comm_known(const ncs_reader_t *r, uint64_t index) {
  return index < UINT32_MAX && map_get(r, &r->comms, index + 1, NULL);
}

/* ---------------------------------------------------------------- field decoding */

/* the error of a varint that does not decode: "ran off the end" or "too long" (out of line: the
 * decoder's inner loop calls get_u64 about eight times per record) */
__attribute__((noinline, cold)) static int bad_varint(ncs_reader_t *r, const char *what) {
  const uint8_t *p = r->pos;
  while (p < r->end && p - r->pos < 10 && (*p & 0x80)) p++;
  if (p >= r->end && p - r->pos < 10)
    return bad_field(r, what, "field runs past the end of the chunk");
  return bad_field(r, what, "bad varint (more than 64 bits)");
}

static inline int get_u64(ncs_reader_t *r, uint64_t *v, const char *what) {
  size_t n = ncs_get_varint(r->pos, r->end, v);
  if (__builtin_expect(n != 0, 1)) {
    r->pos += n;
    return 0;
  }
  return bad_varint(r, what);
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

static void keep_identity(ncs_reader_t *r);

/* Files before format 1.3 state no field lists: theirs are format 1.1's (1.2 kept them), which
 * 1.3 extended by appending (format.h) userTag to Coll, P2p, CollApi, P2pApi and CeColl, and
 * kernelVariant and isSymColl before it to Coll; KernelPhase did not exist. */
static uint8_t legacy_nfields(unsigned t) {
  switch (t) {
  case NCS_T_COLL: return NCS_F(Coll, kernelVariant);
  case NCS_T_P2P: return NCS_F(P2p, userTag);
  case NCS_T_COLL_API: return NCS_F(CollApi, userTag);
  case NCS_T_P2P_API: return NCS_F(P2pApi, userTag);
  case NCS_T_CE_COLL: return NCS_F(CeColl, userTag);
  case NCS_T_KERNEL_PHASE: return 0;
  default: return ncs_schema[t].nfields;
  }
}

static void field_lists_legacy(ncs_reader_t *r) {
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    r->seg_nf[t] = legacy_nfields(t);
    for (unsigned i = 0; i < r->seg_nf[t]; i++) r->seg_kind[t][i] = ncs_schema[t].fields[i].kind;
  }
}

static void field_lists_current(ncs_reader_t *r) {
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    r->seg_nf[t] = ncs_schema[t].nfields;
    for (unsigned i = 0; i < r->seg_nf[t]; i++) r->seg_kind[t][i] = ncs_schema[t].fields[i].kind;
  }
}

/* The SEGMENT's field lists (format 1.3; absent before): varint ntypes, then per type varint
 * nfields and one varint kind per field. A field this reader knows must have the kind it knows
 * (fields are only appended); fields it does not know are skipped by their kind. */
static int dec_field_lists(ncs_reader_t *r) {
  if (r->pos >= r->end) {
    field_lists_legacy(r);
    return 0;
  }
  uint32_t nt = 0;
  const uint8_t *at = r->pos;
  if (get_u32(r, &nt, "field lists") != 0) return -1;
  if (nt > NCS_SEG_MAX_TYPES) {
    r->pos = at;
    return bad_field(r, "field lists", "more than 64 event types");
  }
  memset(r->seg_nf, 0, sizeof r->seg_nf); /* a type the file does not list has no fields */
  for (uint32_t t = 0; t < nt; t++) {
    uint32_t nf = 0;
    at = r->pos;
    if (get_u32(r, &nf, "field count") != 0) return -1;
    if (nf > NCS_SEG_MAX_FIELDS) {
      r->pos = at;
      return bad_field(r, "field count", "more than 64 fields");
    }
    for (uint32_t i = 0; i < nf; i++) {
      uint32_t k = 0;
      at = r->pos;
      if (get_u32(r, &k, "field kind") != 0) return -1;
      if (k < NCS_FK_U64 || k > NCS_FK_REF) {
        r->pos = at;
        return bad_field(r, "field kind", "unknown field kind");
      }
      if (t >= NCS_T_COUNT) continue;
      if (i < ncs_schema[t].nfields && k != ncs_schema[t].fields[i].kind) {
        char msg[160];
        r->pos = at;
        snprintf(msg, sizeof msg, "%s field %u (%s) has kind %u in this file, %u in this reader",
                 ncs_schema[t].name, i, ncs_schema[t].fields[i].name, k, ncs_schema[t].fields[i].kind);
        return bad_field(r, "field kind", msg);
      }
      r->seg_kind[t][i] = (uint8_t)k;
    }
    if (t < NCS_T_COUNT) r->seg_nf[t] = (uint8_t)nf;
  }
  return 0;
}

static int dec_segment(ncs_reader_t *r) {
  segment_reset(r); /* the old segment's strings, communicators and fingerprints die with it */
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
      get_u64(r, &s->pool_bytes, "buffer pool bytes") || dec_field_lists(r)) {
    /* a segment began here, but what follows cannot be tied to it */
    snprintf(r->over_why, sizeof r->over_why,
             "follows a SEGMENT chunk (at offset %llu) that does not decode",
             (unsigned long long)r->chunk_off);
    return -1;
  }
  s->index = r->nseg++;
  r->have_seg = 1;
  keep_identity(r);
  return NCS_ITEM_SEGMENT;
}

static int dec_strings(ncs_reader_t *r) {
  int late = 0; /* strings defined after records named them */
  while (r->pos < r->end) {
    uint64_t id = 0;
    const char *s = NULL;
    const uint8_t *at = r->pos;
    r->rec_off = pos_off(r);
    if (get_u64(r, &id, "string id") != 0) return -1;
    if (id == 0) {
      r->pos = at;
      return bad_field(r, NULL, "string id 0 (ids start at 1)");
    }
    if (r->strings.n >= MAX_STRINGS && !ncs_reader_string(r, id)) {
      r->pos = at;
      return bad_field(r, NULL, "too many strings in this segment (limit 1048576)");
    }
    if (get_str(r, &s, "string") != 0) return -1;
    if (map_put(r, &r->strings, id, (uint64_t)(uintptr_t)s) != 0)
      return bad_field(r, NULL, "out of memory for the string table");
    uint64_t named = 0;
    if (!(id & MISSED_COMM) && map_get(r, &r->missed, id, &named) && named) {
      /* the writer defines a string before the first record that names it */
      map_put(r, &r->missed, id, 0);
      if (!late++) /* once per chunk */
        order_damage(r, r->chunk_off,
                   "the STRINGS chunk at offset %llu defines string %llu, which records before it named",
                   (unsigned long long)r->chunk_off, (unsigned long long)id);
    }
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
  if (r->comms.n >= MAX_COMMS && !comm_known(r, c->index))
    return bad_field(r, NULL, "too many communicators in this segment (limit 1048576)");
  if (map_put(r, &r->comms, (uint64_t)c->index + 1, 1) != 0)
    return bad_field(r, NULL, "out of memory for the communicator table");
  uint64_t was = 0;
  if (map_get(r, &r->missed, MISSED_COMM | ((uint64_t)c->index + 1), &was) && was) {
    map_put(r, &r->missed, MISSED_COMM | ((uint64_t)c->index + 1), 0);
    order_damage(r, r->chunk_off,
                 "the COMM chunk at offset %llu defines communicator %u, which records before it named",
                 (unsigned long long)r->chunk_off, c->index);
  }
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
  memset(l, 0, sizeof *l); /* ncs_reader_next clears only the items' common head */
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
  case NCS_FK_STR:
    if (get_u64(r, &e->f[i], fd->name) != 0) return -1;
    if (!e->f[i]) return 0;
    /* an id its segment never defined: its STRINGS chunk was lost (or the segment's start) */
    if (!(e->fstr[i] = ncs_reader_string(r, e->f[i]))) {
      e->lost |= NCS_LOST_STRING;
      if (r->missed.n < MAX_MISSED && !(e->f[i] & MISSED_COMM)) map_put(r, &r->missed, e->f[i], 1);
    }
    return 0;
  case NCS_FK_REF: return get_ref(r, &e->fref_kind[i], &e->f[i], fd->name);
  }
  return bad_field(r, fd->name, "unknown field kind in the schema");
}

/* A field of a later format: one varint, or two for a reference. */
static int skip_field(ncs_reader_t *r, uint8_t kind) {
  uint64_t v;
  if (get_u64(r, &v, "field of a later format") != 0) return -1;
  return kind == NCS_FK_REF ? get_u64(r, &v, "field of a later format") : 0;
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
  if (e->ctx_kind == NCS_CTX_LOCAL && !comm_known(r, e->ctx)) {
    e->lost |= NCS_LOST_COMM;
    if (r->missed.n < MAX_MISSED && e->ctx < UINT32_MAX) map_put(r, &r->missed, MISSED_COMM | (e->ctx + 1), 1);
  }
  /* the fields the segment's list has: those this reader knows are decoded, later ones skipped;
     known ones the file does not have (an older file) stay 0 and are not counted in nfields */
  const ncs_schema_t *s = &ncs_schema[e->type];
  unsigned nw = r->seg_nf[e->type];
  e->nfields = (uint8_t)(nw < s->nfields ? nw : s->nfields);
  for (unsigned i = 0; i < nw; i++) {
    if (i < s->nfields) {
      if (dec_field(r, e, i, &s->fields[i]) != 0) return -1;
    } else if (skip_field(r, r->seg_kind[e->type][i]) != 0) {
      return -1;
    }
  }
  for (unsigned i = e->nfields; i < s->nfields; i++) e->f[i] = 0, e->fstr[i] = NULL, e->fref_kind[i] = 0;
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
  r->rec_off = pos_off(r);
  if (r->pos >= r->end) {
    char msg[128];
    snprintf(msg, sizeof msg, "the chunk ends after %u of its %u records", r->ev_done, r->ev_count);
    return bad_field(r, NULL, msg);
  }
  if (dec_record(r, &it->ev) != 0) {
    size_t n = strlen(r->why);
    snprintf(r->why + n, sizeof r->why - n, "; records %u to %u of the chunk are lost",
             r->ev_done + 1, r->ev_count);
    return -1;
  }
  const ncs_event_t *e = &it->ev;
  if (e->kind == NCS_REC_START && e->id &&
      (map_get(r, &r->done[0], e->id, NULL) || map_get(r, &r->done[1], e->id, NULL))) {
    /* the writer completes (or expires) only events whose START it wrote: this record was
     * written before a chunk that comes earlier in the file */
    order_damage(r, r->rec_off, "the START of event %llu at offset %llu comes after its completion",
                 (unsigned long long)e->id, (unsigned long long)r->rec_off);
    snprintf(r->why, sizeof r->why,
             "the START of event %llu at offset %llu (in the %s chunk at offset %llu) comes after its "
             "completion: chunks out of order; records %u to %u of the chunk are skipped",
             (unsigned long long)e->id, (unsigned long long)r->rec_off, chunk_name(r->ctype),
             (unsigned long long)r->chunk_off, r->ev_done + 1, r->ev_count);
    return -1;
  }
  if ((e->kind == NCS_REC_COMPLETE || e->kind == NCS_REC_EXPIRED) && e->id) {
    if (r->done[0].n >= DONE_GEN) { /* a new generation: the oldest ids are forgotten */
      map_clear(&r->done[1]);
      r->done[1] = r->done[0];
      memset(&r->done[0], 0, sizeof r->done[0]);
    }
    map_put(r, &r->done[0], e->id, 1); /* no memory: one check less */
  }
  if (it->ev.lost) count_lost(r);
  if (++r->ev_done == r->ev_count) r->in_events = 0; /* bytes after the last record are ignored */
  it->ts = it->ev.ts;
  return NCS_ITEM_EVENT;
}

/* ---------------------------------------------------------------- GPU chunks (trace/gpu.h) */

static int dec_gpu_state(ncs_reader_t *r, ncs_item_t *it) {
  ncs_gpu_state_t *g = &it->gpu_state;
  memset(g, 0, sizeof *g); /* ncs_reader_next clears only the items' common head */
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
  memset(g, 0, sizeof *g); /* ncs_reader_next clears only the items' common head */
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

/* ---------------------------------------------------------------- range chunks (trace/range.h) */

static int dec_range_state(ncs_reader_t *r, ncs_item_t *it) {
  ncs_range_state_t *s = &it->range_state;
  memset(s, 0, sizeof *s); /* ncs_reader_next clears only the items' common head */
  uint32_t n = 0;
  if (get_u32(r, &s->flags, "range state flags") || get_u32(r, &s->nvtx, "NVTX state") ||
      get_str(r, &s->nvtx_path, "NVTX injection path") || get_u32(r, &s->mx_state, "metrics state") ||
      get_u64(r, &s->since_ns, "metrics state time") || get_str(r, &s->reason, "metrics reason") ||
      get_str(r, &s->chip, "metrics chip") || get_u32(r, &s->replay, "metrics replay") ||
      get_u32(r, &s->passes, "metrics passes") || get_u32(r, &s->level, "metrics level") ||
      get_u32(r, &s->mx_thread, "metrics thread") || get_u32(r, &s->buffer_ranges, "metrics buffer") ||
      get_u32(r, &n, "metric count"))
    return -1;
  if (s->nvtx >= NCS_NVTX_NSTATES) return bad_field(r, "NVTX state", "unknown state");
  if (s->mx_state >= NCS_HWM_NSTATES) return bad_field(r, "metrics state", "unknown state");
  if (n > NCS_RANGE_MAX_METRICS) return bad_field(r, NULL, "more than 32 metrics");
  for (uint32_t i = 0; i < n; i++) {
    uint32_t t = 0;
    if (get_str(r, &s->metric[i], "metric name") || get_u32(r, &t, "metric type")) return -1;
    s->metric_type[i] = t <= NCS_MT_THROUGHPUT ? (uint8_t)t : NCS_MT_UNKNOWN;
  }
  s->nmetrics = n;
  if (get_u32(r, &n, "range counter count")) return -1;
  if (n > NCS_RANGE_MAX_COUNTERS) return bad_field(r, NULL, "more than 64 range counters");
  for (uint32_t i = 0; i < n; i++)
    if (get_u32(r, &s->keys[i], "range counter key") || get_u64(r, &s->values[i], "range counter value"))
      return -1;
  s->ncounters = n;
  it->ts = s->since_ns;
  return NCS_ITEM_RANGE_STATE;
}

/* RANGES shares the GPU chunk's framing: base time, record count, then length-prefixed records */
static int dec_ranges_header(ncs_reader_t *r) {
  uint32_t count = 0;
  if (get_u64(r, &r->prev_ts, "ranges base mono") || get_u32(r, &count, "ranges record count"))
    return -1;
  r->ev_count = count;
  r->ev_done = 0;
  r->in_events = count > 0;
  return 0;
}

static int range_host_time(ncs_reader_t *r, ncs_range_rec_t *g) {
  return get_u32(r, &g->thread, "range thread") || gpu_delta(r, &r->prev_ts, &g->ts, "range time");
}

static int range_labels(ncs_reader_t *r, ncs_range_rec_t *g) {
  if (get_u64(r, &g->domain_id, "range domain") || get_u64(r, &g->name_id, "range name") ||
      get_u32(r, &g->category, "range category") || get_u32(r, &g->payload_type, "payload type") ||
      get_u64(r, &g->payload, "payload"))
    return -1;
  if (g->domain_id) g->domain = ncs_reader_string(r, g->domain_id);
  if (g->name_id) g->name = ncs_reader_string(r, g->name_id);
  return 0;
}

static int get_f64(ncs_reader_t *r, double *v) {
  if (r->end - r->pos < 8) return bad_field(r, "metric value", "runs past the end of the record");
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u |= (uint64_t)r->pos[i] << (8 * i);
  r->pos += 8;
  memcpy(v, &u, sizeof *v);
  return 0;
}

static int dec_range_fields(ncs_reader_t *r, ncs_range_rec_t *g) {
  switch (g->kind) {
  case NCS_RR_BEGIN:
    return range_host_time(r, g) || get_u64(r, &g->id, "range id") ||
                   get_u64(r, &g->parent, "range parent") || get_u32(r, &g->depth, "range depth") ||
                   range_labels(r, g) || get_u64(r, &g->mid, "range metrics id")
               ? -1
               : 0;
  case NCS_RR_END: return range_host_time(r, g) || get_u64(r, &g->id, "range id") ? -1 : 0;
  case NCS_RR_MARK:
    return range_host_time(r, g) || get_u64(r, &g->parent, "mark parent") || range_labels(r, g) ? -1 : 0;
  case NCS_RR_LAUNCH:
    return get_u64(r, &g->id, "launch range") || get_u64(r, &g->corr, "launch correlation id") ? -1 : 0;
  default: { /* NCS_RR_METRICS */
    uint32_t n = 0;
    if (get_u64(r, &g->mid, "metrics id") || get_u32(r, &n, "metric value count")) return -1;
    if (n > NCS_RANGE_MAX_METRICS) return bad_field(r, "metric value count", "more than 32");
    for (uint32_t i = 0; i < n; i++)
      if (get_f64(r, &g->values[i])) return -1;
    g->nvalues = n;
    return 0;
  }
  }
}

/* One RANGES record: u8 kind, varint length, fields; unknown kinds and trailing bytes skipped. */
static int dec_range_rec(ncs_reader_t *r, ncs_item_t *it) {
  ncs_range_rec_t *g = &it->range;
  memset(g, 0, sizeof *g); /* ncs_reader_next clears only the items' common head */
  uint64_t len = 0;
  if (get_u8(r, &g->kind, "range record kind") || get_u64(r, &len, "range record length")) return -1;
  if (len > (uint64_t)(r->end - r->pos)) return bad_field(r, "range record", "runs past the end of the chunk");
  const uint8_t *end = r->pos + len, *chunk_end = r->end;
  int what = 0;
  if (g->kind >= NCS_RR_BEGIN && g->kind <= NCS_RR_MAX) {
    r->end = end;
    int bad = get_u32(r, &g->flags, "range record flags") || dec_range_fields(r, g);
    r->end = chunk_end;
    if (bad) return -1;
    what = NCS_ITEM_RANGE;
    it->ts = g->ts;
  }
  r->pos = end;
  return what;
}

static int next_range_record(ncs_reader_t *r, ncs_item_t *it) {
  if (r->pos >= r->end) {
    char msg[128];
    snprintf(msg, sizeof msg, "the RANGES chunk ends after %u of its %u records", r->ev_done, r->ev_count);
    return bad_field(r, NULL, msg);
  }
  int what = dec_range_rec(r, it);
  if (what < 0) return -1;
  if (++r->ev_done == r->ev_count) r->in_events = 0;
  return what;
}

/* ---------------------------------------------------------------- chunks */

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A chunk's identity for finding a second copy of it: type, length and CRC (compared byte for
 * byte before anything is called a copy). Never 0: known types are 1..15. */
static uint64_t fingerprint(uint16_t type, uint32_t len, uint32_t crc) {
  return (uint64_t)crc | (uint64_t)len << 32 | (uint64_t)(type & 0xF) << 57;
}

/* Check the chunk at `off`. 1: it is whole and its CRC matches; its header is r->buf or r->mem
 * at off, the payload at r->pay. 0: it is not (r->bad and, when `explain`, r->why say why). -1:
 * the reader failed (a read error). A candidate met while resynchronizing (`explain` 0) must
 * also have a known type and no flags, and its CRC is paid from r->verify_left. */
static int check_chunk(ncs_reader_t *r, uint64_t off, uint64_t size, int explain) {
  unsigned long long o = (unsigned long long)off;
  r->bad = BAD_SHORT;
  if (size - off < NCS_CHUNK_HEADER_LEN) {
    if (explain) snprintf(r->why, sizeof r->why, "truncated chunk header at offset %llu", o);
    return 0;
  }
  const uint8_t *h = src_bytes(r, off, NCS_CHUNK_HEADER_LEN, 0);
  if (!h) return -1;
  uint32_t magic = get_le32(h), len = get_le32(h + 8), crc = get_le32(h + 12);
  uint16_t type = (uint16_t)(h[4] | h[5] << 8), flags = (uint16_t)(h[6] | h[7] << 8);
  uint64_t left = size - off - NCS_CHUNK_HEADER_LEN;
  r->bad = magic != NCS_CHUNK_MAGIC ? BAD_MAGIC
           : len > NCS_CHUNK_MAX_PAYLOAD ? BAD_LEN
           : len > left                  ? BAD_CUT
                                         : 0;
  r->bad_len = len;
  if (!explain && !r->bad && (type == 0 || type > 15 || flags)) r->bad = BAD_MAGIC;
  if (!explain && !r->bad && len > r->verify_left) r->gave_up = 1, r->bad = BAD_MAGIC;
  if (r->bad) {
    if (!explain) return 0;
    if (r->bad == BAD_MAGIC && magic == 0)
      snprintf(r->why, sizeof r->why, "zero bytes at offset %llu where a chunk should start", o);
    else if (r->bad == BAD_MAGIC)
      snprintf(r->why, sizeof r->why, "bad chunk magic 0x%08x at offset %llu", magic, o);
    else if (r->bad == BAD_LEN)
      snprintf(r->why, sizeof r->why,
               "chunk at offset %llu claims a payload of %u bytes (the limit is 16 MiB)", o, len);
    else
      snprintf(r->why, sizeof r->why,
               "truncated chunk at offset %llu: %u payload bytes announced, %llu present", o, len,
               (unsigned long long)left);
    return 0;
  }
  const uint8_t *p = src_bytes(r, off + NCS_CHUNK_HEADER_LEN, len, NCS_CHUNK_HEADER_LEN);
  if (!p) return -1;
  h = r->fd < 0 ? h : r->buf; /* the buffer may have moved */
  if (ncs_crc32c(ncs_crc32c(0, h + 4, 8), p, len) != crc) {
    r->bad = BAD_CRC;
    if (!explain) r->verify_left -= len;
    if (explain)
      snprintf(r->why, sizeof r->why, "checksum mismatch in the %s chunk at offset %llu (%u bytes)",
               chunk_name(type), o, len);
    return 0;
  }
  r->ctype = type;
  r->cflags = flags;
  r->chunk_off = off;
  r->pay_off = off + NCS_CHUNK_HEADER_LEN;
  r->pay = r->pos = p;
  r->end = p + len;
  return 1;
}

/* The first valid chunk after `from`, or `size` when none is left. Holes are skipped without
 * reading them; the window overlaps by 3 bytes so that no magic is missed at its edge. Every
 * chunk magic met on the way that does not start a valid chunk is counted in *magics. */
static uint64_t resync(ncs_reader_t *r, uint64_t from, uint64_t size, uint32_t *magics) {
  const uint8_t want[4] = {NCS_CHUNK_MAGIC & 0xFF, (NCS_CHUNK_MAGIC >> 8) & 0xFF,
                           (NCS_CHUNK_MAGIC >> 16) & 0xFF, NCS_CHUNK_MAGIC >> 24};
  uint64_t p = from;
  while (!r->gave_up && (p = data_from(r, p, size)) + NCS_CHUNK_HEADER_LEN <= size) {
    size_t n = size - p < SCAN_WINDOW ? (size_t)(size - p) : SCAN_WINDOW;
    const uint8_t *w = src_window(r, p, n);
    if (!w) return size;
    for (size_t i = 0; i + 4 <= n;) {
      const uint8_t *c = memchr(w + i, want[0], n - 3 - i);
      if (!c) break;
      i = (size_t)(c - w);
      if (!memcmp(c, want, 4)) {
        int ok = check_chunk(r, p + i, size, 0);
        if (ok < 0) return size;
        if (ok) return p + i;
        (*magics)++;
        if (r->gave_up) return size;
      }
      i++;
    }
    if (p + n >= size) break;
    p += n - 3;
  }
  return size;
}

static void keep_identity(ncs_reader_t *r) {
  r->id = r->seg;
  snprintf(r->id_host, sizeof r->id_host, "%s", r->seg.host);
  snprintf(r->id_plugin, sizeof r->id_plugin, "%s", r->seg.plugin_version);
  snprintf(r->id_cmd, sizeof r->id_cmd, "%s", r->seg.cmdline);
  memcpy(r->id_nf, r->seg_nf, sizeof r->id_nf);
  memcpy(r->id_kind, r->seg_kind, sizeof r->id_kind);
  r->have_id = 1;
}

/* The chunk just loaded cannot belong to the current segment (`why`): its SEGMENT chunk was
 * lost. Start a recovered segment, return its SEGMENT item, and decode the chunk again in it. */
static int recover_segment(ncs_reader_t *r, const char *why) {
  if (!r->dmg.lost_segments) { /* before the reset: why may be r->over_why */
    snprintf(r->first_seg, sizeof r->first_seg, "the %s chunk there %s", chunk_name(r->ctype), why);
    r->lost_seg_off = r->chunk_off;
    note_off(r, r->chunk_off);
  }
  r->dmg.lost_segments++;
  r->evidence[0] = 0; /* why may be r->evidence: used above */
  segment_reset(r);
  ncs_segment_info_t *s = &r->seg;
  memset(s, 0, sizeof *s);
  s->plugin_version = s->host = s->cmdline = "";
  if (r->have_id) {
    *s = r->id;
    s->host = r->id_host, s->plugin_version = r->id_plugin, s->cmdline = r->id_cmd;
    memcpy(r->seg_nf, r->id_nf, sizeof r->seg_nf);
    memcpy(r->seg_kind, r->id_kind, sizeof r->seg_kind);
  } else {
    /* no segment decoded: assume this reader's format, its field lists included */
    s->format_version = NCS_FORMAT_VERSION;
    field_lists_current(r);
  }
  s->start_realtime_ns = s->start_mono_ns = 0; /* unknown */
  s->index = r->nseg++;
  s->recovered = 1;
  r->have_seg = 1;
  compose(r);
  /* the chunk starts the new segment's fingerprints, as it would have after its SEGMENT */
  map_put(r, &r->seen, fingerprint(r->ctype, (uint32_t)(r->end - r->pay), get_le32(r->pay - 4)),
          r->chunk_off);
  r->redo = 1;
  return NCS_ITEM_SEGMENT;
}

/* Evidence that the chunk just loaded (after a gap) belongs to a later segment than the current
 * one: "" when there is none. The writer never defines a communicator index twice or changes a
 * string in one segment. */
static const char *later_segment(ncs_reader_t *r, char *buf, size_t len) {
  if (r->ctype == NCS_CHUNK_SEGMENT || r->ctype == 0 || r->ctype > NCS_CHUNK_MAX_TYPE) return "";
  if (!r->have_seg) return r->over_why[0] ? r->over_why : "comes before any SEGMENT chunk";
  if (r->over_why[0]) return r->over_why;
  if (!r->seg_gap) return "";
  uint64_t v = 0;
  const uint8_t *p = r->pay;
  size_t n;
  if (r->ctype == NCS_CHUNK_COMM && ncs_get_varint(p, r->end, &v) && comm_known(r, v)) {
    snprintf(buf, len, "defines communicator %llu again, after damage", (unsigned long long)v);
    return buf;
  }
  while (r->ctype == NCS_CHUNK_STRINGS && (n = ncs_get_varint(p, r->end, &v)) != 0) {
    uint64_t id = v, slen = 0;
    p += n;
    if (!(n = ncs_get_varint(p, r->end, &slen)) || slen > (uint64_t)(r->end - p - n)) break;
    p += n;
    const char *old = ncs_reader_string(r, id);
    if (old && (strlen(old) != slen || memcmp(old, p, (size_t)slen))) {
      snprintf(buf, len, "gives string %llu another value, after damage", (unsigned long long)id);
      return buf;
    }
    p += slen;
  }
  return "";
}

/* Decode the loaded chunk. Returns an NCS_ITEM_* (> 0), 0 when the chunk yields no item (yet),
 * or -1 with r->why set. */
static int dec_chunk(ncs_reader_t *r, ncs_item_t *it) {
  if (r->ctype > NCS_CHUNK_MAX_TYPE || r->ctype == 0) return 0; /* unknown: skipped */
  r->rec_off = r->chunk_off;
  if (r->cflags) {
    snprintf(r->why, sizeof r->why,
             "the %s chunk at offset %llu has flags 0x%x that this reader does not know (written "
             "by a newer ncclscope?)",
             chunk_name(r->ctype), (unsigned long long)r->chunk_off, r->cflags);
    return -1;
  }
  if (r->evidence[0]) return recover_segment(r, r->evidence);
  r->redo = 0;
  switch (r->ctype) {
  case NCS_CHUNK_SEGMENT: return dec_segment(r);
  case NCS_CHUNK_CLOCK:
    if (get_u64(r, &it->clock_mono_ns, "monotonic ns") ||
        get_u64(r, &it->clock_realtime_ns, "realtime ns"))
      return -1;
    it->ts = it->clock_mono_ns;
    /* the writer reads its clock pairs in order: an older one after a newer one was moved */
    if (it->clock_mono_ns < r->last_clock)
      order_damage(r, r->chunk_off, "the CLOCK chunk at offset %llu is older than the one before it",
                   (unsigned long long)r->chunk_off);
    else
      r->last_clock = it->clock_mono_ns;
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
  case NCS_CHUNK_RANGE_STATE: return dec_range_state(r, it);
  case NCS_CHUNK_RANGES: return dec_ranges_header(r);
  default: /* NCS_CHUNK_FOOTER */
    r->seg_footer = 1;
    return dec_counters(r, it, NCS_ITEM_FOOTER);
  }
}

/* The GAP item for [off, off+bytes). `lost`: what the range held is gone, and with it perhaps
 * the start of a segment (a second copy of a chunk loses nothing). */
static int gap_item(ncs_reader_t *r, ncs_item_t *it, uint64_t off, uint64_t bytes, uint32_t chunks,
                    const char *why, int lost) {
  snprintf(r->gap_why, sizeof r->gap_why, "%s", why);
  if (!r->dmg.gaps++) snprintf(r->first_gap, sizeof r->first_gap, "%s", why);
  r->dmg.gap_bytes += bytes;
  note_off(r, off);
  if (lost) r->seg_gap = 1;
  if (lost && r->seg_footer && !r->over_why[0])
    snprintf(r->over_why, sizeof r->over_why,
             "comes after damage that followed its segment's FOOTER");
  compose(r);
  it->what = NCS_ITEM_GAP;
  it->gap = (ncs_gap_t){.offset = off, .bytes = bytes, .chunks = chunks, .why = r->gap_why};
  return 1;
}

/* Nothing valid follows the bad chunk at `off` (r->bad, r->why): the file ends in damage. A torn
 * last write, or zeros, is a truncation; anything else a lost tail. Returns -1. */
static int end_damaged(ncs_reader_t *r, uint64_t off, uint64_t size, const char *why) {
  unsigned long long o = (unsigned long long)off;
  const char *died = "(the process probably died while writing)";
  if (r->state == RS_FAILED) return -1;
  if (r->gave_up)
    return end_tail(r, NCS_TAIL_LOST, off,
                    "%s: the file is damaged from there; the rest (%llu bytes) is not read: too "
                    "many false chunk headers after it (a hostile file?)",
                    why, (unsigned long long)(size - off));
  if (r->is_flight) /* the flight writer raises a slot's `used` after its bytes: no torn write */
    return end_tail(r, NCS_TAIL_LOST, off, "%s: the flight file's ring is damaged from there to its end", why);
  if (tail_is_zero(r, off, size)) {
    if (hole_from(r, off, size) < size)
      return end_tail(r, NCS_TAIL_TRUNCATED, off,
                      "the file ends in %llu bytes of zeros and holes never written, from offset "
                      "%llu (a sparse file, or a crash before the data reached the disk)",
                      (unsigned long long)(size - off), o);
    return end_tail(r, NCS_TAIL_TRUNCATED, off,
                    "%llu zero bytes at the end of the file from offset %llu %s",
                    (unsigned long long)(size - off), o, died);
  }
  uint64_t chunk_end = off + NCS_CHUNK_HEADER_LEN + r->bad_len;
  if (r->bad == BAD_SHORT || r->bad == BAD_CUT) return end_tail(r, NCS_TAIL_TRUNCATED, off, "%s %s", why, died);
  if (r->bad == BAD_CRC && (chunk_end == size || tail_is_zero(r, chunk_end, size)))
    return end_tail(r, NCS_TAIL_TRUNCATED, off, "bad checksum in the last chunk at offset %llu %s", o,
                    died);
  return end_tail(r, NCS_TAIL_LOST, off,
                  "%s: the file is damaged from there to its end (%llu bytes, no valid chunk after "
                  "it)",
                  why, (unsigned long long)(size - off));
}

/* The chunk at `off` is bad (r->bad, r->why): find the next valid one and return a GAP item for
 * the range between, or end the file. */
static int skip_bad_chunk(ncs_reader_t *r, ncs_item_t *it, uint64_t off) {
  uint64_t size = src_size(r);
  char why[sizeof r->why];
  snprintf(why, sizeof why, "%s", r->why);
  int bad = r->bad;
  uint32_t len = r->bad_len;
  uint32_t magics = bad == BAD_CUT || bad == BAD_LEN || bad == BAD_CRC;
  uint64_t q = resync(r, off + 1, size, &magics);
  if (r->state == RS_FAILED) return -1;
  uint64_t hole = hole_from(r, off, size);
  if (hole < q) {
    size_t n = strlen(why);
    uint64_t end = data_from(r, hole, size);
    snprintf(why + n, sizeof why - n, "; %llu bytes from offset %llu were never written (a hole: "
             "a sparse file)", (unsigned long long)((end < q ? end : q) - hole),
             (unsigned long long)hole);
  }
  if (q < size) {
    r->next_off = q;
    return gap_item(r, it, off, q - off, magics, why, 1);
  }
  r->bad = bad, r->bad_len = len;
  return end_damaged(r, off, size, why);
}

/* A second copy of a chunk this segment already read (a write that was replayed): 1 when the
 * loaded chunk is one, with *first the offset of the original. Only a byte-for-byte match is. */
static int is_copy(ncs_reader_t *r, uint64_t *first) {
  /* a thread is announced again in each segment, and a string defined again changes nothing;
   * a RANGE_STATE (absolute counters) is restated in every flight keyframe, unchanged when
   * nothing happened to ranges */
  if (r->ctype == 0 || r->ctype > NCS_CHUNK_MAX_TYPE || r->ctype == NCS_CHUNK_THREAD ||
      r->ctype == NCS_CHUNK_STRINGS || r->ctype == NCS_CHUNK_RANGE_STATE)
    return 0;
  size_t len = (size_t)(r->end - r->pay);
  uint64_t key = fingerprint(r->ctype, (uint32_t)len, get_le32(r->pay - 4)), at = 0;
  /* a SEGMENT chunk is compared with the previous one: the fingerprints die with a segment */
  int found = r->ctype == NCS_CHUNK_SEGMENT ? r->seg_key == key && (at = r->seg_key_off, 1)
                                            : map_get(r, &r->seen, key, &at);
  if (r->ctype == NCS_CHUNK_SEGMENT) r->seg_key = key, r->seg_key_off = r->chunk_off;
  if (!found) {
    if (r->ctype != NCS_CHUNK_SEGMENT && r->seen.n < MAX_SEEN_CHUNKS)
      map_put(r, &r->seen, key, r->chunk_off); /* no memory: one copy less found */
    return 0;
  }
  /* compare the payloads, the old one through the scan window in file mode */
  for (size_t done = 0; done < len;) {
    size_t n = len - done < SCAN_WINDOW ? len - done : SCAN_WINDOW;
    const uint8_t *old = src_window(r, at + NCS_CHUNK_HEADER_LEN + done, n);
    if (!old || memcmp(old, r->pay + done, n)) return 0;
    done += n;
  }
  *first = at;
  return 1;
}

/* The identity a SEGMENT chunk's payload states (host, pid, start realtime), read without
 * touching the reader's state; 0 when it does not decode that far. */
static int seg_peek(const uint8_t *p, const uint8_t *end, const uint8_t **host, uint64_t *hlen,
                    uint64_t *pid, uint64_t *real) {
  uint64_t v = 0, skip = 0;
  size_t n;
  if (!(n = ncs_get_varint(p, end, &v))) return 0; /* format version */
  p += n;
  if (!(n = ncs_get_varint(p, end, &skip)) || skip > (uint64_t)(end - p - n)) return 0;
  p += n + skip; /* plugin version */
  if (!(n = ncs_get_varint(p, end, hlen)) || *hlen > (uint64_t)(end - p - n)) return 0;
  *host = p + n;
  p += n + *hlen;
  if (!(n = ncs_get_varint(p, end, pid))) return 0;
  p += n;
  for (int i = 0; i < 3; i++) { /* load epoch, mode, event mask */
    if (!(n = ncs_get_varint(p, end, &v))) return 0;
    p += n;
  }
  return ncs_get_varint(p, end, real) != 0;
}

/* Why the SEGMENT chunk just loaded cannot be this file's next segment, "" if it can: one file is
 * one process (host and pid), and its segments start one after the other. */
static const char *foreign_segment(ncs_reader_t *r, char *buf, size_t len) {
  const uint8_t *h = NULL;
  uint64_t hl = 0, pid = 0, real = 0;
  if (r->ctype != NCS_CHUNK_SEGMENT || !r->have_id || !seg_peek(r->pay, r->end, &h, &hl, &pid, &real))
    return "";
  if (hl != strlen(r->id_host) || memcmp(h, r->id_host, (size_t)hl) || pid != r->id.pid) {
    snprintf(buf, len, "belongs to another process (host %.*s, pid %llu; this file's: host %.64s, pid %llu)",
             (int)(hl > 64 ? 64 : hl), (const char *)h, (unsigned long long)pid, r->id_host,
             (unsigned long long)r->id.pid);
    return buf;
  }
  if (real && r->id.start_realtime_ns && real < r->id.start_realtime_ns) {
    snprintf(buf, len, "starts before the segment it follows");
    return buf;
  }
  return "";
}

/* The SEGMENT chunk at `off` is another recording's (why): skip it and every chunk after it up to
 * the next SEGMENT chunk that can be this file's, a damaged chunk, or the end. A GAP item (what
 * lay between is lost to this file). */
static int skip_foreign(ncs_reader_t *r, ncs_item_t *it, uint64_t off, const char *why) {
  char w[400];
  snprintf(w, sizeof w, "the SEGMENT chunk at offset %llu %s: a segment of another recording "
           "spliced into the file", (unsigned long long)off, why);
  r->dmg.foreign_segments++;
  uint64_t size = src_size(r), q = r->next_off;
  char buf[200];
  while (q < size) {
    int ok = check_chunk(r, q, size, 1);
    if (ok < 0) return -1;
    if (!ok) break;
    if (r->ctype == NCS_CHUNK_SEGMENT && !foreign_segment(r, buf, sizeof buf)[0]) break;
    q = r->pay_off + (uint64_t)(r->end - r->pay);
  }
  r->next_off = q;
  size_t n = strlen(w);
  snprintf(w + n, sizeof w - n, "; skipped %s (%llu bytes)", q < size ? "up to the next segment" : "to the end",
           (unsigned long long)(q - off));
  return gap_item(r, it, off, q - off, 1, w, 1);
}

/* Load and check the next chunk. 1 loaded, 0 clean end of file, 2 a GAP item in *it, -1 the
 * reader failed. */
static int load_chunk(ncs_reader_t *r, ncs_item_t *it) {
  uint64_t off = r->next_off, size = src_size(r);
  if (off >= size) return 0;
  int ok = check_chunk(r, off, size, 1);
  if (ok < 0) return -1;
  if (!ok) return skip_bad_chunk(r, it, off) < 0 ? -1 : 2;
  r->next_off = r->pay_off + (uint64_t)(r->end - r->pay);
  /* Evidence of a lost segment start comes first: a new segment's chunk may equal one of the
   * old segment's, and is no copy. */
  char buf[sizeof r->evidence];
  snprintf(r->evidence, sizeof r->evidence, "%s", later_segment(r, buf, sizeof buf));
  uint64_t first;
  if (!r->evidence[0] && is_copy(r, &first)) {
    char why[200];
    snprintf(why, sizeof why,
             "the %s chunk at offset %llu is a second copy of the one at offset %llu (%zu bytes, "
             "nothing lost)",
             chunk_name(r->ctype), (unsigned long long)off, (unsigned long long)first,
             (size_t)(r->end - r->pay));
    gap_item(r, it, off, r->next_off - off, 1, why, 0);
    return 2;
  }
  if (r->state == RS_FAILED) return -1; /* a read error while comparing */
  const char *f = r->evidence[0] ? "" : foreign_segment(r, buf, sizeof buf);
  if (f[0]) return skip_foreign(r, it, off, f) < 0 ? -1 : 2;
  if (!r->evidence[0] && r->have_seg && r->seg_footer && !r->seg_gap && r->ctype != NCS_CHUNK_SEGMENT &&
      r->ctype >= 1 && r->ctype <= NCS_CHUNK_MAX_TYPE) {
    /* the writer ends a segment with its FOOTER: a chunk after it was moved there */
    char why[200];
    snprintf(why, sizeof why, "the %s chunk at offset %llu comes after its segment's FOOTER: chunks out of order",
             chunk_name(r->ctype), (unsigned long long)off);
    order_damage(r, off, "%s", why);
    gap_item(r, it, off, r->next_off - off, 1, why, 1);
    return 2;
  }
  return 1;
}

static int finish(ncs_reader_t *r) {
  r->state = RS_DONE;
  r->end_rc = damaged(r) ? -1 : 0;
  compose(r);
  return r->end_rc;
}

int ncs_reader_next(ncs_reader_t *r, ncs_item_t *item) {
  if (!r || !item) return -1;
  if (r->state != RS_OK) return r->end_rc;
  /* the common head and the event (about 600 of the item's 3400 bytes, a record's worth); the
   * decoders of the other kinds (loss, GPU, range) clear their own part */
  memset(item, 0, offsetof(ncs_item_t, gap));
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
      what = r->ctype == NCS_CHUNK_GPU      ? next_gpu_record(r, item)
             : r->ctype == NCS_CHUNK_RANGES ? next_range_record(r, item)
                                            : next_record(r, item);
    } else if (r->redo) {
      r->pos = r->pay;
      what = dec_chunk(r, item);
    } else {
      int got = load_chunk(r, item);
      if (got == 0) return finish(r);
      if (got < 0) return r->end_rc;
      if (got == 2) return 1;
      what = dec_chunk(r, item);
    }
    if (what < 0) {
      /* the chunk passed its CRC but does not decode: the rest of it is lost */
      r->in_events = 0;
      r->redo = 0;
      memset(item, 0, sizeof *item);
      return gap_item(r, item, r->rec_off, r->next_off - r->rec_off, 1, r->why, 1);
    }
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

/* Check the 16-byte file header of a source of `size` bytes. A file shorter than that whose bytes
 * match the start of a header is a trace whose process died at once: the reader opens and
 * reports the truncation. */
static int check_header(ncs_reader_t *r, const uint8_t *h, size_t n, uint64_t size, int *why,
                        char *err, size_t errlen) {
  uint8_t want[NCS_FILE_MAGIC_LEN];
  memcpy(want, NCS_FILE_MAGIC, NCS_FILE_MAGIC_LEN);
  size_t m = n < NCS_FILE_MAGIC_LEN ? n : NCS_FILE_MAGIC_LEN;
  r->verify_left = VERIFY_SLACK + size;
  r->empty = size <= NCS_FILE_HEADER_LEN;
  if (memcmp(h, want, m) != 0) {
    snprintf(err, errlen, "not an ncclscope trace (bad magic)");
    *why = NCS_OPEN_NOT_TRACE;
    return -1;
  }
  if (n < NCS_FILE_HEADER_LEN) {
    end_tail(r, NCS_TAIL_TRUNCATED, 0,
             "truncated file header at offset 0: %zu of 16 bytes (the process probably died "
             "while writing)",
             n);
    return 0;
  }
  uint32_t ver = get_le32(h + 8);
  if (ver != NCS_FORMAT_VERSION) {
    snprintf(err, errlen, "trace format version %u is not supported (this reader knows version %d)",
             ver, NCS_FORMAT_VERSION);
    *why = NCS_OPEN_UNSUPPORTED;
    return -1;
  }
  r->next_off = NCS_FILE_HEADER_LEN;
  return 0;
}

static ncs_reader_t *open_flight(const uint8_t *data, size_t len, int *why, char *err,
                                 size_t errlen) {
  uint8_t *lin;
  size_t lin_len;
  ncs_flight_info_t fi;
  uint32_t bad;
  if (ncs_flight_linearize(data, len, &lin, &lin_len, &fi, &bad, err, errlen) != 0) {
    *why = NCS_OPEN_DAMAGED;
    return NULL;
  }
  ncs_reader_t *r = ncs_reader_open_mem(lin, lin_len, err, errlen);
  if (!r) {
    *why = NCS_OPEN_DAMAGED;
    free(lin);
    return NULL;
  }
  r->owned = lin;
  r->is_flight = 1;
  r->flight = fi;
  r->flight_bad_slots = r->dmg.bad_slots = bad;
  compose(r);
  return r;
}

ncs_reader_t *ncs_reader_open_mem(const void *data, size_t len, char *err, size_t errlen) {
  int why;
  if (data && ncs_flight_is(data, len)) return open_flight(data, len, &why, err, errlen);
  ncs_reader_t *r = reader_new();
  if (!r) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  r->mem = data;
  r->mem_len = len;
  size_t n = len < NCS_FILE_HEADER_LEN ? len : NCS_FILE_HEADER_LEN;
  if (check_header(r, data ? data : (const void *)"", n, len, &why, err, errlen) != 0) {
    ncs_reader_close(r);
    return NULL;
  }
  return r;
}

/* Read [0, size) of a flight file into a zeroed buffer, skipping holes: a sparse file costs
 * neither time nor memory for what was never written. 0, or -1 with errno. */
static int read_extents(int fd, uint8_t *img, uint64_t size) {
  for (uint64_t off = 0; off < size;) {
    off_t d = lseek(fd, (off_t)off, SEEK_DATA);
    if (d < 0 && errno == ENXIO) return 0; /* only holes are left */
    uint64_t from = d < 0 ? off : (uint64_t)d;
    off_t h = d < 0 ? -1 : lseek(fd, d, SEEK_HOLE);
    uint64_t to = h < 0 || (uint64_t)h > size ? size : (uint64_t)h;
    if (from >= size) return 0;
    if (to <= from) to = size;
    if (pread_all(fd, img + from, (size_t)(to - from), from) != 0) return -1;
    off = to;
  }
  return 0;
}

/* Takes over fd. A flight file is bounded by its configured size (NCCLSCOPE_FLIGHT_SIZE). */
static ncs_reader_t *open_flight_file(int fd, uint64_t size, int *why, char *err, size_t errlen) {
  if (size > (8ull << 30)) {
    snprintf(err, errlen, "flight file of %llu bytes is too large", (unsigned long long)size);
    *why = NCS_OPEN_DAMAGED;
    close(fd);
    return NULL;
  }
  uint8_t *img = calloc(1, size ? size : 1);
  if (!img) {
    snprintf(err, errlen, "out of memory reading a flight file of %llu bytes",
             (unsigned long long)size);
    *why = NCS_OPEN_CANNOT_READ;
    close(fd);
    return NULL;
  }
  if (read_extents(fd, img, size) != 0) {
    snprintf(err, errlen, "cannot read: %s", errno ? strerror(errno) : "the file shrank");
    *why = NCS_OPEN_CANNOT_READ;
    free(img);
    close(fd);
    return NULL;
  }
  close(fd);
  ncs_reader_t *r = open_flight(img, size, why, err, errlen);
  free(img);
  return r;
}

static const char *file_kind(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISFIFO(m) ? "a FIFO (named pipe)"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
                       : "something else";
}

/* Messages name no path: the caller puts it in front ("run/x.nstrace: cannot read: ..."). */
static ncs_reader_t *cannot_read(int e, int fd, int *why, char *err, size_t errlen) {
  snprintf(err, errlen, "cannot read: %s",
           e == EACCES || e == EPERM ? "permission denied"
           : e == ENOENT             ? "no such file"
           : e                       ? strerror(e)
                                     : "it shrank");
  *why = NCS_OPEN_CANNOT_READ;
  if (fd >= 0) close(fd);
  return NULL;
}

ncs_reader_t *ncs_reader_open_why(const char *path, int *why, char *err, size_t errlen) {
  int ignored;
  if (!why) why = &ignored;
  *why = NCS_OPEN_OK;
  /* A FIFO or a device is refused before it is opened: opening or reading it could block
   * forever or have side effects. The descriptor is non-blocking and checked again, in case the
   * name changed in between. */
  struct stat st;
  if (stat(path, &st) != 0) return cannot_read(errno, -1, why, err, errlen);
  int fd = -1;
  if (S_ISREG(st.st_mode)) {
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return cannot_read(errno, -1, why, err, errlen);
    if (fstat(fd, &st) != 0) return cannot_read(errno, fd, why, err, errlen);
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "not a regular file but %s: refused, never opened for reading",
             file_kind(st.st_mode));
    *why = NCS_OPEN_NOT_FILE;
    if (fd >= 0) close(fd);
    return NULL;
  }
  uint8_t h[NCS_FILE_HEADER_LEN];
  size_t n = 0;
  while (n < sizeof h) {
    ssize_t k = pread(fd, h + n, sizeof h - n, (off_t)n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return cannot_read(errno, fd, why, err, errlen);
    if (k == 0) break;
    n += (size_t)k;
  }
  if (ncs_flight_is(h, n)) /* a flight file: read it whole (it may still be changing) */
    return open_flight_file(fd, (uint64_t)st.st_size, why, err, errlen);
  ncs_reader_t *r = reader_new();
  if (!r) {
    snprintf(err, errlen, "out of memory");
    close(fd);
    return NULL;
  }
  r->fd = fd;
  if (check_header(r, h, n, (uint64_t)st.st_size, why, err, errlen) != 0) {
    ncs_reader_close(r);
    return NULL;
  }
  return r;
}

ncs_reader_t *ncs_reader_open(const char *path, char *err, size_t errlen) {
  return ncs_reader_open_why(path, NULL, err, errlen);
}

void ncs_reader_close(ncs_reader_t *r) {
  if (!r) return;
  if (r->fd >= 0) close(r->fd);
  segment_reset(r);
  free(r->buf);
  free(r->scan);
  free(r->owned);
  free(r);
}

const char *ncs_reader_error(const ncs_reader_t *r) { return r ? r->msg : ""; }

int ncs_reader_damage(const ncs_reader_t *r) {
  if (!r || !damaged(r)) return NCS_DAMAGE_NONE;
  const ncs_damage_t *d = &r->dmg;
  if (d->tail == NCS_TAIL_TRUNCATED && !d->gaps && !d->lost_refs && !d->lost_segments &&
      !d->bad_slots && !d->out_of_order && !d->foreign_segments)
    return NCS_DAMAGE_TRUNCATED;
  return NCS_DAMAGE_CORRUPT;
}

void ncs_reader_damage_info(const ncs_reader_t *r, ncs_damage_t *d) {
  if (r)
    *d = r->dmg;
  else
    memset(d, 0, sizeof *d);
}

uint64_t ncs_reader_error_offset(const ncs_reader_t *r) { return r ? r->first_off : 0; }
int ncs_reader_empty(const ncs_reader_t *r) { return r && r->empty; }
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

typedef struct {
  char *path;
  dev_t dev;
  ino_t ino;
  int known; /* stat worked: dev and ino are valid */
  size_t order;
} entry_t;

typedef struct {
  entry_t *v;
  size_t n, cap;
} entries_t;

static int add_entry(entries_t *e, char *p) {
  if (!p) return -1;
  if (e->n == e->cap) {
    size_t c = e->cap ? e->cap * 2 : 16;
    entry_t *nv = realloc(e->v, c * sizeof *nv);
    if (!nv) {
      free(p);
      return -1;
    }
    e->v = nv, e->cap = c;
  }
  struct stat st;
  entry_t *x = &e->v[e->n];
  *x = (entry_t){.path = p, .order = e->n};
  if (stat(p, &st) == 0) x->dev = st.st_dev, x->ino = st.st_ino, x->known = 1;
  e->n++;
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

/* The trace names of one directory, sorted, appended to e. 0, or -1 with err filled. Every name
 * that looks like a trace is listed, whatever it is: opening it says why it is not one. */
static int list_dir(const char *path, entries_t *e, char *err, size_t errlen) {
  DIR *d = opendir(path);
  if (!d) {
    snprintf(err, errlen, "cannot read directory %s: %s", path, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (struct dirent *de; rc == 0 && (de = readdir(d));) {
    if (!has_suffix(de->d_name, NCS_TRACE_SUFFIX) && !has_suffix(de->d_name, NCS_FLIGHT_SUFFIX))
      continue;
    if (n == cap) {
      char **nv = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof *nv);
      if (!nv) {
        rc = -1;
        break;
      }
      names = nv;
    }
    if (!(names[n] = join(path, de->d_name))) rc = -1;
    n += rc == 0;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    if (rc == 0)
      rc = add_entry(e, names[i]);
    else
      free(names[i]);
  }
  free(names);
  if (rc) snprintf(err, errlen, "out of memory");
  return rc;
}

static int cmp_inode(const void *a, const void *b) {
  const entry_t *x = *(entry_t *const *)a, *y = *(entry_t *const *)b;
  if (x->known != y->known) return x->known - y->known;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return (x->order > y->order) - (x->order < y->order);
}

/* Drop every entry whose file an earlier entry names (same device and inode). */
static size_t dedupe(entries_t *e) {
  entry_t **by = malloc((e->n ? e->n : 1) * sizeof *by);
  if (!by) return 0; /* no memory: a duplicate is read twice rather than lose a file */
  for (size_t i = 0; i < e->n; i++) by[i] = &e->v[i];
  qsort(by, e->n, sizeof *by, cmp_inode);
  size_t dups = 0;
  for (size_t i = 1; i < e->n; i++)
    if (by[i]->known && by[i - 1]->known && by[i]->dev == by[i - 1]->dev &&
        by[i]->ino == by[i - 1]->ino) {
      free(by[i]->path);
      by[i]->path = NULL;
      dups++;
    }
  free(by);
  size_t k = 0;
  for (size_t i = 0; i < e->n; i++)
    if (e->v[i].path) e->v[k++] = e->v[i];
  e->n = k;
  return dups;
}

int ncs_list_traces_n(char *const *paths, size_t npaths, char ***out, size_t *n, size_t *dups,
                      size_t *found, char *err, size_t errlen) {
  *out = NULL, *n = 0;
  if (dups) *dups = 0;
  entries_t e = {0};
  for (size_t i = 0; i < npaths; i++) {
    size_t before = e.n;
    struct stat st;
    if (stat(paths[i], &st) != 0) {
      snprintf(err, errlen, "cannot open %s: %s", paths[i], strerror(errno));
      goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
      if (list_dir(paths[i], &e, err, errlen) != 0) goto fail;
    } else if (add_entry(&e, strdup(paths[i])) != 0) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
    if (found) found[i] = e.n - before;
  }
  size_t d = dedupe(&e);
  if (dups) *dups = d;
  char **v = malloc((e.n ? e.n : 1) * sizeof *v);
  if (!v) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < e.n; i++) v[i] = e.v[i].path;
  *out = v, *n = e.n;
  free(e.v);
  return 0;
fail:
  for (size_t i = 0; i < e.n; i++) free(e.v[i].path);
  free(e.v);
  return -1;
}

int ncs_list_traces(const char *path, char ***paths, size_t *n, char *err, size_t errlen) {
  char *p = (char *)path;
  return ncs_list_traces_n(&p, 1, paths, n, NULL, NULL, err, errlen);
}

void ncs_free_paths(char **paths, size_t n) {
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
}
