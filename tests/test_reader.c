/* test_reader.c - the trace reader against valid, cut and damaged files (cmocka).
 *
 * Files are crafted with tracegen.c (the writer's encoders), so a round trip checks encoder and
 * reader against each other field by field, and the damage tests change single bytes of them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "trace/reader.h"
#include "tracegen.h"

/* ---------------------------------------------------------------- helpers */

typedef struct {
  int n;  /* items read */
  int rc; /* last ncs_reader_next result */
  int damage;
  ncs_damage_t info;
  char err[1400];
  int what[4096];     /* item kinds in order */
  uint64_t end[4096]; /* ncs_reader_offset after each item: the end of its chunk */
  int events, lost, recovered, footers;
  uint64_t err_off;
  int ngap;
  ncs_gap_t gap[8]; /* the first GAP items (why copied below) */
  char why[8][400];
} drain_t;

static void drain_reader(ncs_reader_t *r, drain_t *d) {
  ncs_item_t it;
  memset(d, 0, sizeof *d);
  while ((d->rc = ncs_reader_next(r, &it)) > 0) {
    assert_true(d->n < 4096);
    d->what[d->n] = it.what;
    d->end[d->n++] = ncs_reader_offset(r);
    d->events += it.what == NCS_ITEM_EVENT;
    d->lost += it.what == NCS_ITEM_EVENT && it.ev.lost;
    d->footers += it.what == NCS_ITEM_FOOTER;
    if (it.what == NCS_ITEM_SEGMENT) d->recovered += ncs_reader_segment(r)->recovered;
    if (it.what == NCS_ITEM_GAP && d->ngap < 8) {
      snprintf(d->why[d->ngap], sizeof d->why[0], "%s", it.gap.why);
      d->gap[d->ngap] = it.gap;
      d->gap[d->ngap].why = d->why[d->ngap];
      d->ngap++;
    }
  }
  d->damage = ncs_reader_damage(r);
  ncs_reader_damage_info(r, &d->info);
  d->err_off = ncs_reader_error_offset(r);
  snprintf(d->err, sizeof d->err, "%s", ncs_reader_error(r));
  /* sticky: after the end or an error, the same answer again */
  assert_int_equal(ncs_reader_next(r, &it), d->rc);
}

/* Read a buffer; returns 0 when it could not even be opened. */
static int drain_mem(const void *p, size_t len, drain_t *d) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open_mem(p, len, err, sizeof err);
  if (!r) {
    memset(d, 0, sizeof *d);
    snprintf(d->err, sizeof d->err, "%s", err);
    return 0;
  }
  drain_reader(r, d);
  ncs_reader_close(r);
  return 1;
}

static char tmpdir[64];

static int setup_tmp(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ncs-test-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const void *p, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, len, f), len);
  fclose(f);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Offsets of the chunk headers of a valid file. */
static size_t chunk_offsets(const tg_t *g, size_t *off, size_t max) {
  size_t n = 0;
  for (size_t o = NCS_FILE_HEADER_LEN; o < g->file.len && n < max;
       o += NCS_CHUNK_HEADER_LEN + le32(g->file.p + o + 8))
    off[n++] = o;
  return n;
}

/* A file with one segment, then a raw EVENTS payload given as bytes. */
static void file_with_events(tg_t *g, const uint8_t *pay, size_t len) {
  tg_init(g);
  tg_header(g);
  tg_segment(g, 0, 42);
  ncs_buf_bytes(&g->pay, pay, len);
  tg_chunk(g, NCS_CHUNK_EVENTS);
}

static void assert_contains(const char *s, const char *what) {
  if (!strstr(s, what)) fail_msg("'%s' does not contain '%s'", s, what);
}

/* ---------------------------------------------------------------- round trip */

static void check_event(const ncs_event_t *got, const ncs_event_t *want) {
  assert_int_equal(got->kind, want->kind);
  assert_int_equal(got->type, want->type);
  assert_int_equal(got->id, want->id);
  switch (want->kind) {
  case NCS_REC_START:
    assert_int_equal(got->ctx_kind, want->ctx_kind);
    assert_int_equal(got->ctx, want->ctx);
    assert_int_equal(got->parent_kind, want->parent_kind);
    assert_int_equal(got->parent, want->parent);
    assert_int_equal(got->rank, want->rank);
    assert_int_equal(got->flags, want->flags);
    assert_int_equal(got->nfields, want->nfields);
    for (unsigned i = 0; i < ncs_schema[want->type].nfields; i++) { /* 0 beyond nfields */
      assert_int_equal(got->f[i], want->f[i]);
      uint8_t k = ncs_schema[want->type].fields[i].kind;
      if (k == NCS_FK_REF) assert_int_equal(got->fref_kind[i], want->fref_kind[i]);
      if (k == NCS_FK_STR && want->fstr[i]) assert_string_equal(got->fstr[i], want->fstr[i]);
      if (k == NCS_FK_STR && !want->fstr[i]) assert_null(got->fstr[i]);
    }
    assert_int_equal(got->thread, want->thread);
    assert_int_equal(got->ts, want->ts);
    break;
  case NCS_REC_STOP:
    assert_int_equal(got->thread, want->thread);
    assert_int_equal(got->ts, want->ts);
    break;
  case NCS_REC_STATE:
    assert_int_equal(got->thread, want->thread);
    assert_int_equal(got->ts, want->ts);
    assert_int_equal(got->state, want->state);
    assert_int_equal(got->arg0, want->arg0);
    assert_int_equal(got->arg1, want->arg1);
    break;
  case NCS_REC_COMPLETE:
    assert_int_equal(got->cflags, want->cflags);
    assert_int_equal(got->end_ns, want->end_ns);
    assert_int_equal(got->first_child_ns, want->first_child_ns);
    assert_int_equal(got->gpu_start, want->gpu_start);
    assert_int_equal(got->gpu_stop, want->gpu_stop);
    assert_int_equal(got->n_kernel_ch, want->n_kernel_ch);
    assert_int_equal(got->n_proxy_op, want->n_proxy_op);
    assert_int_equal(got->n_open, want->n_open);
    break;
  default:
    assert_int_equal(got->reason, want->reason);
    assert_int_equal(got->start_ns, want->start_ns);
  }
}

static void check_segment(ncs_reader_t *r, uint32_t index) {
  ncs_segment_info_t want;
  tg_segment_info(&want, index, 4242);
  const ncs_segment_info_t *s = ncs_reader_segment(r);
  assert_non_null(s);
  assert_int_equal(s->index, index);
  assert_int_equal(s->format_version, want.format_version);
  assert_string_equal(s->plugin_version, want.plugin_version);
  assert_string_equal(s->host, want.host);
  assert_int_equal(s->pid, want.pid);
  assert_int_equal(s->epoch, want.epoch);
  assert_int_equal(s->mode, want.mode);
  assert_int_equal(s->mask, want.mask);
  assert_int_equal(s->start_realtime_ns, want.start_realtime_ns);
  assert_int_equal(s->start_mono_ns, want.start_mono_ns);
  assert_string_equal(s->cmdline, want.cmdline);
  assert_int_equal(s->pool_bytes, want.pool_bytes);
}

static void check_comm(const ncs_item_t *it) {
  ncs_comm_info_t want;
  tg_comm_info(&want, 0, 3);
  assert_int_equal(it->comm.index, want.index);
  assert_int_equal(it->comm.comm_id, want.comm_id);
  assert_string_equal(it->comm.name, want.name);
  assert_int_equal(it->comm.nranks, want.nranks);
  assert_int_equal(it->comm.nnodes, want.nnodes);
  assert_int_equal(it->comm.rank, want.rank);
  assert_int_equal(it->comm.abi_version, want.abi_version);
  assert_int_equal(it->comm.init_ns, want.init_ns);
  assert_int_equal(it->comm.mask, want.mask);
}

static void check_counters(const ncs_item_t *it, uint32_t nrecs) {
  const ncs_counters_t *c = it->counters;
  assert_non_null(c);
  assert_int_equal(c->nkeys, 3 * NCS_T_COUNT + 7);
  assert_int_equal(c->keys[0], NCS_CK_STARTS | 0);
  assert_int_equal(c->values[0], 1);
  assert_int_equal(c->keys[3 * NCS_T_COUNT], NCS_CK_DROPS | NCS_T_COLL);
  assert_int_equal(c->values[3 * NCS_T_COUNT], 5);
  assert_int_equal(c->keys[c->nkeys - 1], 0x7777);
  assert_int_equal(c->values[c->nkeys - 1], nrecs);
}

/* Walk one segment of tg_sample and compare every item. */
static size_t check_sample_segment(ncs_reader_t *r, const tg_t *g, size_t ev, uint32_t seg,
                                   int footer) {
  ncs_item_t it;
  static const int head[] = {NCS_ITEM_SEGMENT, NCS_ITEM_CLOCK,  NCS_ITEM_COMM,
                             NCS_ITEM_THREAD,  NCS_ITEM_THREAD, NCS_ITEM_THREAD};
  for (unsigned i = 0; i < sizeof head / sizeof head[0]; i++) {
    assert_int_equal(ncs_reader_next(r, &it), 1);
    assert_int_equal(it.what, head[i]);
    if (it.what == NCS_ITEM_SEGMENT) check_segment(r, seg);
    if (it.what == NCS_ITEM_CLOCK) assert_int_equal(it.clock_mono_ns, 1000000000ull * (seg + 1));
    if (it.what == NCS_ITEM_CLOCK)
      assert_int_equal(it.clock_realtime_ns, 1700000000000000000ull + seg);
    if (it.what == NCS_ITEM_COMM) check_comm(&it);
    if (it.what == NCS_ITEM_THREAD) {
      assert_int_equal(it.thread_index, i - 3);
      assert_int_equal(it.thread_tid, 5000 + i - 3);
      assert_string_equal(it.thread_name, i == 3 ? "python" : "nccl-proxy");
    }
  }
  /* the STRINGS chunk came before the COMM chunk */
  for (uint64_t id = 1; id <= TG_NSTRINGS; id++)
    assert_string_equal(ncs_reader_string(r, id), tg_strings[id]);
  assert_null(ncs_reader_string(r, TG_NSTRINGS + 1));
  assert_null(ncs_reader_string(r, 0));
  size_t per_chunk = 3 * NCS_T_COUNT + 4;
  for (int half = 0; half < 2; half++) {
    for (size_t k = 0; k < per_chunk; k++, ev++) {
      assert_int_equal(ncs_reader_next(r, &it), 1);
      assert_int_equal(it.what, NCS_ITEM_EVENT);
      check_event(&it.ev, &g->log[ev]);
    }
    if (half == 0) {
      assert_int_equal(ncs_reader_next(r, &it), 1);
      assert_int_equal(it.what, NCS_ITEM_COUNTERS);
      check_counters(&it, (uint32_t)per_chunk);
    }
  }
  assert_int_equal(ncs_reader_next(r, &it), 1);
  assert_int_equal(it.what, NCS_ITEM_COMM_END);
  assert_int_equal(it.comm.index, 0);
  assert_int_equal(it.ts, 1000000000ull * (seg + 1) + 1000 + 200000);
  if (footer) {
    assert_int_equal(ncs_reader_next(r, &it), 1);
    assert_int_equal(it.what, NCS_ITEM_FOOTER);
    check_counters(&it, (uint32_t)(2 * per_chunk));
  }
  return ev;
}

static void test_round_trip(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 2, 0, 4242);
  char err[256];
  ncs_reader_t *r = ncs_reader_open_mem(g.file.p, g.file.len, err, sizeof err);
  assert_non_null(r);
  assert_null(ncs_reader_segment(r));
  size_t ev = check_sample_segment(r, &g, 0, 0, 1);
  ev = check_sample_segment(r, &g, ev, 1, 1);
  assert_int_equal(ev, g.nlog);
  ncs_item_t it;
  assert_int_equal(ncs_reader_next(r, &it), 0);
  assert_string_equal(ncs_reader_error(r), "");
  assert_int_equal(ncs_reader_damage(r), NCS_DAMAGE_NONE);
  assert_int_equal(ncs_reader_offset(r), g.file.len);
  ncs_reader_close(r);
  tg_free(&g);
}

/* The same through a real file (pread path). */
static void test_round_trip_file(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 2, 1, 4242);
  char path[128], err[256];
  snprintf(path, sizeof path, "%s/rt.nstrace", tmpdir);
  write_file(path, g.file.p, g.file.len);
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  assert_non_null(r);
  size_t ev = check_sample_segment(r, &g, 0, 0, 1);
  check_sample_segment(r, &g, ev, 1, 0); /* crashed: no footer */
  ncs_item_t it;
  assert_int_equal(ncs_reader_next(r, &it), 0);
  ncs_reader_close(r);
  tg_free(&g);
}

/* ---------------------------------------------------------------- truncation */

/* Every prefix of a valid file: never a crash, exactly the items of the whole chunks before the
 * cut, a TRUNCATED verdict inside a chunk and a clean end at a chunk boundary. */
static void check_all_cuts(const tg_t *g, int use_file) {
  drain_t *full = malloc(sizeof *full), *d = malloc(sizeof *d);
  assert_true(drain_mem(g->file.p, g->file.len, full));
  assert_int_equal(full->rc, 0);
  size_t off[256], nch = chunk_offsets(g, off, 256);
  char path[128];
  snprintf(path, sizeof path, "%s/cut.nstrace", tmpdir);
  for (size_t len = 0; len <= g->file.len; len++) {
    if (use_file) {
      char err[256];
      write_file(path, g->file.p, len);
      ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
      assert_non_null(r);
      drain_reader(r, d);
      ncs_reader_close(r);
    } else {
      assert_true(drain_mem(g->file.p, len, d));
    }
    int want = 0;
    while (want < full->n && full->end[want] <= len) want++;
    assert_int_equal(d->n, want);
    assert_memory_equal(d->what, full->what, (size_t)want * sizeof d->what[0]);
    int boundary = len == NCS_FILE_HEADER_LEN || len == g->file.len;
    for (size_t k = 0; k < nch; k++) boundary |= off[k] == len;
    if (boundary) {
      assert_int_equal(d->rc, 0);
    } else {
      assert_int_equal(d->rc, -1);
      assert_int_equal(d->damage, NCS_DAMAGE_TRUNCATED);
      assert_contains(d->err, "offset");
      assert_contains(d->err, "died while writing");
    }
  }
  free(full);
  free(d);
}

static void test_truncate_every_offset(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 2, 0, 7);
  check_all_cuts(&g, 0);
  tg_free(&g);
}

static void test_truncate_every_offset_file(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 1, 7);
  check_all_cuts(&g, 1);
  tg_free(&g);
}

static void test_empty_and_header_only(void **state) {
  (void)state;
  drain_t d;
  assert_true(drain_mem("", 0, &d));
  assert_int_equal(d.rc, -1);
  assert_int_equal(d.damage, NCS_DAMAGE_TRUNCATED);
  assert_contains(d.err, "truncated file header at offset 0");
  uint8_t h[NCS_FILE_HEADER_LEN];
  ncs_file_header(h);
  assert_true(drain_mem(h, sizeof h, &d));
  assert_int_equal(d.rc, 0);
  assert_int_equal(d.n, 0);
  /* a header-only file is empty: no segment, nothing to count as a process */
  char err[256];
  for (size_t len = 0; len <= sizeof h; len++) {
    ncs_reader_t *r = ncs_reader_open_mem(h, len, err, sizeof err);
    assert_non_null(r);
    assert_true(ncs_reader_empty(r));
    ncs_reader_close(r);
  }
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 1, 7);
  ncs_reader_t *r = ncs_reader_open_mem(g.file.p, NCS_FILE_HEADER_LEN + 1, err, sizeof err);
  assert_false(ncs_reader_empty(r)); /* one byte of a chunk: a cut file, not an empty one */
  ncs_reader_close(r);
  char path[128];
  snprintf(path, sizeof path, "%s/empty.nstrace", tmpdir);
  write_file(path, h, sizeof h);
  assert_non_null(r = ncs_reader_open(path, err, sizeof err));
  assert_true(ncs_reader_empty(r));
  ncs_reader_close(r);
  write_file(path, g.file.p, g.file.len);
  assert_non_null(r = ncs_reader_open(path, err, sizeof err));
  assert_false(ncs_reader_empty(r));
  ncs_reader_close(r);
  tg_free(&g);
}

/* ---------------------------------------------------------------- damage */

static void test_bad_file_magic_and_version(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  drain_t d;
  g.file.p[0] = 'X';
  assert_false(drain_mem(g.file.p, g.file.len, &d));
  assert_contains(d.err, "not an ncclscope trace");
  assert_false(drain_mem("hello", 5, &d));
  g.file.p[0] = 'N';
  g.file.p[8] = 2; /* format version 2 */
  assert_false(drain_mem(g.file.p, g.file.len, &d));
  assert_contains(d.err, "version 2");
  tg_free(&g);
}

/* Items of the whole file that come from chunks starting in [from, to). */
static int items_from(const drain_t *full, uint64_t from, uint64_t to) {
  int n = 0;
  for (int i = 0; i < full->n; i++) n += full->end[i] > from && full->end[i] <= to;
  return n;
}

static void test_crc_corruption(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  size_t off[64], n = chunk_offsets(&g, off, 64);
  off[n] = g.file.len;
  drain_t *full = malloc(sizeof *full), *d = malloc(sizeof *d);
  drain_mem(g.file.p, g.file.len, full);
  /* a byte in every chunk but the last: that chunk is skipped as a GAP, the rest is read */
  for (size_t k = 0; k + 1 < n; k++) {
    size_t at = off[k] + NCS_CHUNK_HEADER_LEN;
    g.file.p[at] ^= 0x40;
    drain_mem(g.file.p, g.file.len, d);
    g.file.p[at] ^= 0x40;
    assert_int_equal(d->rc, -1);
    assert_int_equal(d->damage, NCS_DAMAGE_CORRUPT);
    assert_contains(d->err, "checksum mismatch");
    char where[64];
    snprintf(where, sizeof where, "offset %zu", off[k]);
    assert_contains(d->err, where);
    assert_int_equal(d->ngap, 1);
    assert_int_equal(d->gap[0].offset, off[k]);
    assert_int_equal(d->gap[0].bytes, off[k + 1] - off[k]);
    assert_int_equal(d->gap[0].chunks, 1);
    assert_int_equal(d->info.gaps, 1);
    assert_int_equal(d->info.gap_bytes, off[k + 1] - off[k]);
    assert_int_equal(d->info.tail, NCS_TAIL_CLEAN);
    assert_int_equal(d->err_off, off[k]);
    /* the items before it, then the GAP */
    int before = items_from(full, 0, off[k] + 1);
    assert_memory_equal(d->what, full->what, (size_t)before * sizeof d->what[0]);
    assert_int_equal(d->what[before], NCS_ITEM_GAP);
    /* every chunk after it was read: the footer is there, and only its own records are gone */
    int lost = items_from(full, off[k], off[k + 1]);
    assert_int_equal(d->footers, 1);
    uint16_t type = (uint16_t)(g.file.p[off[k] + 4] | g.file.p[off[k] + 5] << 8);
    int events_in = type == NCS_CHUNK_EVENTS ? lost : 0;
    assert_int_equal(d->events, full->events - events_in);
    /* what a lost chunk defined shows in the records after it, and only then */
    assert_int_equal(d->recovered, type == NCS_CHUNK_SEGMENT);
    if (type == NCS_CHUNK_STRINGS || type == NCS_CHUNK_COMM)
      assert_true(d->lost > 0);
    else
      assert_int_equal(d->lost, 0);
    if (type == NCS_CHUNK_SEGMENT) assert_contains(d->err, "before any SEGMENT chunk");
  }
  /* the last chunk: a torn write, not damage in the middle */
  g.file.p[off[n - 1] + NCS_CHUNK_HEADER_LEN] ^= 1;
  drain_mem(g.file.p, g.file.len, d);
  assert_int_equal(d->damage, NCS_DAMAGE_TRUNCATED);
  assert_contains(d->err, "bad checksum in the last chunk");
  free(full);
  free(d);
  tg_free(&g);
}

static void test_bad_chunk_magic_and_zero_tail(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  size_t off[64];
  chunk_offsets(&g, off, 64);
  drain_t d;
  g.file.p[off[2]] = 'Z';
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.damage, NCS_DAMAGE_CORRUPT);
  assert_contains(d.err, "bad chunk magic");
  assert_int_equal(d.what[2], NCS_ITEM_GAP);
  assert_int_equal(d.gap[0].chunks, 0); /* its magic is gone: no header recognized */
  assert_int_equal(d.footers, 1);
  g.file.p[off[2]] = 'C';
  /* zeros after the data, as a crash on some filesystems leaves */
  size_t len = g.file.len;
  uint8_t zeros[100] = {0};
  ncs_buf_bytes(&g.file, zeros, sizeof zeros);
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.damage, NCS_DAMAGE_TRUNCATED);
  assert_contains(d.err, "100 zero bytes");
  assert_int_equal(d.end[d.n - 1], len);
  assert_int_equal(d.info.tail, NCS_TAIL_TRUNCATED);
  assert_int_equal(d.info.tail_offset, len);
  assert_int_equal(d.info.tail_bytes, 100);
  /* garbage after the data, no valid chunk in it: a lost tail, not a truncation */
  g.file.len = len;
  uint8_t junk[100];
  memset(junk, 0xAA, sizeof junk);
  ncs_buf_bytes(&g.file, junk, sizeof junk);
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.damage, NCS_DAMAGE_CORRUPT);
  assert_int_equal(d.info.tail, NCS_TAIL_LOST);
  assert_int_equal(d.info.tail_offset, len);
  assert_int_equal(d.info.gaps, 0);
  assert_contains(d.err, "no valid chunk after it");
  assert_int_equal(d.footers, 1);
  tg_free(&g);
}

static void test_oversize_length(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  size_t off[64];
  chunk_offsets(&g, off, 64);
  drain_t d;
  uint32_t big = NCS_CHUNK_MAX_PAYLOAD + 1;
  memcpy(g.file.p + off[1] + 8, &big, 4);
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.damage, NCS_DAMAGE_CORRUPT);
  assert_contains(d.err, "claims a payload");
  assert_int_equal(d.what[1], NCS_ITEM_GAP);
  assert_int_equal(d.gap[0].offset, off[1]);
  assert_int_equal(d.gap[0].bytes, off[2] - off[1]);
  assert_int_equal(d.footers, 1);
  /* a length inside the limit but past the end of the file, with chunks after it: not a cut-off
   * write (the reader found the chunks after it) */
  uint32_t past = (uint32_t)g.file.len;
  memcpy(g.file.p + off[1] + 8, &past, 4);
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.damage, NCS_DAMAGE_CORRUPT);
  assert_contains(d.err, "truncated chunk at offset");
  assert_int_equal(d.gap[0].bytes, off[2] - off[1]);
  assert_int_equal(d.footers, 1);
  /* the same in the last chunk: a cut-off write */
  uint32_t orig = (uint32_t)(off[2] - off[1] - NCS_CHUNK_HEADER_LEN);
  memcpy(g.file.p + off[1] + 8, &orig, 4);
  size_t nch = chunk_offsets(&g, off, 64);
  past = (uint32_t)(g.file.len - off[nch - 1]);
  memcpy(g.file.p + off[nch - 1] + 8, &past, 4);
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.damage, NCS_DAMAGE_TRUNCATED);
  assert_int_equal(d.info.tail, NCS_TAIL_TRUNCATED);
  assert_contains(d.err, "truncated chunk at offset");
  assert_int_equal(d.ngap, 0);
  tg_free(&g);
}

static void test_bad_varints(void **state) {
  (void)state;
  tg_t g;
  drain_t d;
  /* base ns: 11 bytes of continuation */
  uint8_t overlong[12];
  memset(overlong, 0xFF, 11);
  overlong[11] = 0;
  file_with_events(&g, overlong, sizeof overlong);
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.damage, NCS_DAMAGE_CORRUPT);
  assert_contains(d.err, "bad varint");
  tg_free(&g);
  /* a 10th byte above 1 */
  uint8_t ten[10] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02};
  file_with_events(&g, ten, sizeof ten);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "bad varint");
  tg_free(&g);
  /* runs past the end: base 5, count 1, STOP Coll with a cut varint */
  uint8_t cut[] = {5, 1, NCS_REC_STOP, NCS_T_COLL, 0, 0x80};
  file_with_events(&g, cut, sizeof cut);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "runs past the end of the chunk");
  assert_contains(d.err, "in the EVENTS chunk at offset");
  tg_free(&g);
  /* a u32 field above 32 bits: thread = 2^40 */
  uint8_t range[] = {5, 1, NCS_REC_STOP, NCS_T_COLL, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0, 1};
  file_with_events(&g, range, sizeof range);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "value out of range");
  assert_contains(d.err, "thread");
  tg_free(&g);
}

/* A START Coll record with all fields 0 except one STR field set to `sid`. */
static size_t coll_start(uint8_t *p, uint8_t sid, uint8_t ctx_kind, uint8_t ref_kind,
                         uint8_t bool_v) {
  size_t n = 0;
  p[n++] = NCS_REC_START, p[n++] = NCS_T_COLL;
  p[n++] = 0, p[n++] = 2, p[n++] = 1;        /* thread, dts, id */
  p[n++] = ctx_kind, p[n++] = 0;             /* ctx */
  p[n++] = ref_kind, p[n++] = 0, p[n++] = 0; /* parent, rank */
  p[n++] = 0;                                /* flags */
  for (unsigned i = 0; i < ncs_schema[NCS_T_COLL].nfields; i++) {
    uint8_t k = ncs_schema[NCS_T_COLL].fields[i].kind;
    if (k == NCS_FK_REF) p[n++] = 0;
    p[n++] = k == NCS_FK_STR && i == 1 ? sid : k == NCS_FK_BOOL ? bool_v : 0;
  }
  return n;
}

static void expect_event_error(const uint8_t *rec, size_t len, const char *msg, int good_before) {
  uint8_t pay[256] = {5, 2};
  memcpy(pay + 2, rec, len);
  tg_t g;
  drain_t d;
  file_with_events(&g, pay, len + 2);
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.rc, -1);
  assert_int_equal(d.damage, NCS_DAMAGE_CORRUPT);
  assert_contains(d.err, msg);
  /* segment, clock, comm, 3 threads, the good records, then the rest of the chunk as a GAP */
  assert_int_equal(d.n, 6 + good_before + 1);
  assert_int_equal(d.what[d.n - 1], NCS_ITEM_GAP);
  assert_int_equal(d.gap[0].offset + d.gap[0].bytes, g.file.len);
  assert_int_equal(d.info.tail, NCS_TAIL_CLEAN);
  tg_free(&g);
}

static void test_bad_records(void **state) {
  (void)state;
  uint8_t rec[128];
  size_t n = coll_start(rec, 1, 0, 0, 0);
  /* two records: the first is good, the second is broken in various ways */
  memcpy(rec + n, rec, n);
  uint8_t *second = rec + n;
  second[0] = 9;
  expect_event_error(rec, 2 * n, "unknown record kind", 1);
  second[0] = NCS_REC_START;
  second[1] = NCS_T_COUNT;
  expect_event_error(rec, 2 * n, "unknown event type", 1);
  coll_start(second, 1, 4, 0, 0);
  expect_event_error(rec, 2 * n, "unknown context kind", 1);
  coll_start(second, 1, 0, 4, 0);
  expect_event_error(rec, 2 * n, "unknown reference kind", 1);
  coll_start(second, 1, 0, 0, 2);
  expect_event_error(rec, 2 * n, "boolean field", 1);
  /* the count says 2 but only one record is there */
  expect_event_error(rec, n, "ends after 1 of its 2 records", 1);
}

/* Format 1.3's field lists: a format 1.1 file (none: fewer fields) and a later format's (more,
 * skipped by their kind) read with every field this reader knows in place. */
static void field_lists_file(tg_t *g, int extra) {
  ncs_event_t e;
  uint64_t ts = 1000000100;
  tg_init(g);
  tg_header(g);
  tg_segment_lists(g, 0, 4242, extra);
  ncs_enc_events_begin(&g->pay, &g->ev, ts);
  for (uint8_t t = 0; t < NCS_T_COUNT; t++) {
    if (extra < 0 && t == NCS_T_KERNEL_PHASE) continue; /* format 1.1 had no such type */
    static const uint8_t kinds[] = {NCS_REC_START, NCS_REC_STATE, NCS_REC_STOP};
    for (unsigned k = 0; k < 3; k++) {
      tg_event(&e, kinds[k], t, 1 + t, ts += 1000);
      tg_put_event_lists(g, &e, extra);
    }
  }
  ncs_enc_events_end(&g->pay, &g->ev);
  tg_chunk(g, NCS_CHUNK_EVENTS);
}

static void test_field_lists(void **state) {
  (void)state;
  const int extras[] = {-1, 1, 2, 5};
  for (unsigned x = 0; x < sizeof extras / sizeof extras[0]; x++) {
    tg_t g;
    field_lists_file(&g, extras[x]);
    char err[256];
    ncs_reader_t *r = ncs_reader_open_mem(g.file.p, g.file.len, err, sizeof err);
    assert_non_null(r);
    ncs_item_t it;
    size_t ev = 0, n11 = 0;
    int rc;
    while ((rc = ncs_reader_next(r, &it)) == 1) {
      if (it.what != NCS_ITEM_EVENT) continue;
      assert_true(ev < g.nlog);
      check_event(&it.ev, &g.log[ev++]);
      if (it.ev.kind == NCS_REC_START && it.ev.nfields < ncs_schema[it.ev.type].nfields) n11++;
    }
    if (rc != 0) fail_msg("extra %d: %s", extras[x], ncs_reader_error(r));
    assert_int_equal(ev, g.nlog);
    /* format 1.1: Coll, P2p, CollApi, P2pApi and CeColl lack the fields 1.3 appended */
    assert_int_equal(n11, extras[x] < 0 ? 5 : 0);
    ncs_reader_close(r);
    tg_free(&g);
  }
  /* field lists that contradict this reader, or are too long */
  struct {
    uint64_t v[8];
    size_t n;
    const char *msg;
  } bad[] = {
      {{2, 0, 2, NCS_FK_U64, NCS_FK_U64}, 5, "Coll field 1 (func) has kind 1 in this file, 3 in this reader"},
      {{1, 65}, 2, "more than 64 fields"},
      {{65}, 1, "more than 64 event types"},
      {{1, 1, 9}, 3, "unknown field kind"},
      {{1, 3, 1, 1}, 4, "runs past the end"},
  };
  for (unsigned k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ncs_buf_t b;
    assert_int_equal(ncs_buf_init(&b, 256), 0);
    for (size_t i = 0; i < bad[k].n; i++) ncs_buf_varint(&b, bad[k].v[i]);
    tg_t g;
    tg_init(&g);
    tg_header(&g);
    tg_segment_raw(&g, 0, 4242, &b);
    ncs_buf_free(&b);
    drain_t d;
    drain_mem(g.file.p, g.file.len, &d);
    assert_int_equal(d.rc, -1);
    assert_contains(d.err, bad[k].msg);
    tg_free(&g);
  }
}

static void test_strings(void **state) {
  (void)state;
  tg_t g;
  drain_t d;
  /* id 0 */
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  ncs_enc_string(&g.pay, 0, "x");
  tg_chunk(&g, NCS_CHUNK_STRINGS);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "string id 0");
  tg_free(&g);
  /* longer than 4096 */
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  ncs_buf_varint(&g.pay, 9);
  ncs_buf_varint(&g.pay, 5000);
  uint8_t big[5000] = {0};
  ncs_buf_bytes(&g.pay, big, sizeof big);
  tg_chunk(&g, NCS_CHUNK_STRINGS);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "string longer than 4096");
  tg_free(&g);
  /* a length past the end of the chunk */
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  ncs_buf_varint(&g.pay, 9);
  ncs_buf_varint(&g.pay, 10);
  ncs_buf_bytes(&g.pay, "abc", 3);
  tg_chunk(&g, NCS_CHUNK_STRINGS);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "string runs past the end");
  tg_free(&g);
  /* a redefinition wins; sparse huge ids work */
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  ncs_enc_string(&g.pay, 1, "first");
  ncs_enc_string(&g.pay, 1, "second");
  ncs_enc_string(&g.pay, UINT64_MAX, "max");
  tg_chunk(&g, NCS_CHUNK_STRINGS);
  char err[128];
  ncs_reader_t *r = ncs_reader_open_mem(g.file.p, g.file.len, err, sizeof err);
  ncs_item_t it;
  while (ncs_reader_next(r, &it) > 0) {
  }
  assert_string_equal(ncs_reader_error(r), "");
  assert_string_equal(ncs_reader_string(r, 1), "second");
  assert_string_equal(ncs_reader_string(r, UINT64_MAX), "max");
  assert_null(ncs_reader_string(r, 7));
  ncs_reader_close(r);
  tg_free(&g);
}

static void test_many_strings(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  char s[32];
  for (uint64_t id = 10; id < 30010; id++) {
    snprintf(s, sizeof s, "s%llu", (unsigned long long)id);
    ncs_enc_string(&g.pay, id * 7919, s);
  }
  tg_chunk(&g, NCS_CHUNK_STRINGS);
  char err[128];
  ncs_reader_t *r = ncs_reader_open_mem(g.file.p, g.file.len, err, sizeof err);
  ncs_item_t it;
  while (ncs_reader_next(r, &it) > 0) {
  }
  assert_string_equal(ncs_reader_error(r), "");
  assert_string_equal(ncs_reader_string(r, 12345 * 7919), "s12345");
  assert_string_equal(ncs_reader_string(r, 1), "AllReduce");
  ncs_reader_close(r);
  tg_free(&g);
}

/* Ids that share their low bits must not make the table quadratic (hashing with a secret). */
static void test_colliding_string_ids(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  for (uint64_t i = 1; i <= 60000; i++) ncs_enc_string(&g.pay, i << 40, "x");
  tg_chunk(&g, NCS_CHUNK_STRINGS);
  char err[128];
  ncs_reader_t *r = ncs_reader_open_mem(g.file.p, g.file.len, err, sizeof err);
  ncs_item_t it;
  while (ncs_reader_next(r, &it) > 0) {
  }
  assert_string_equal(ncs_reader_error(r), "");
  assert_string_equal(ncs_reader_string(r, 59999ull << 40), "x");
  assert_null(ncs_reader_string(r, 60001ull << 40));
  ncs_reader_close(r);
  tg_free(&g);
}

static void test_unknown_chunks_and_trailing_bytes(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  ncs_buf_bytes(&g.pay, "future stuff", 12);
  tg_chunk(&g, 200); /* before the first segment too */
  tg_segment(&g, 0, 1);
  ncs_buf_bytes(&g.pay, "\xff\xff\xff", 3);
  tg_chunk(&g, 0);
  tg_chunk(&g, 0xFFFF); /* empty payload */
  /* a known chunk with bytes after its fields (a later minor version) */
  ncs_enc_comm_end(&g.pay, 3, 99);
  ncs_buf_bytes(&g.pay, "\x01\x02\x03", 3);
  tg_chunk(&g, NCS_CHUNK_COMM_END);
  /* EVENTS: one record, then junk after it */
  ncs_event_t e;
  ncs_enc_events_begin(&g.pay, &g.ev, 100);
  tg_event(&e, NCS_REC_STOP, NCS_T_P2P, 5, 150);
  tg_put_event(&g, &e);
  ncs_enc_events_end(&g.pay, &g.ev);
  ncs_buf_bytes(&g.pay, "\xff\xff", 2);
  tg_chunk(&g, NCS_CHUNK_EVENTS);
  /* an EVENTS chunk with no records */
  ncs_enc_events_begin(&g.pay, &g.ev, 100);
  ncs_enc_events_end(&g.pay, &g.ev);
  tg_chunk(&g, NCS_CHUNK_EVENTS);
  tg_counters(&g, NCS_CHUNK_FOOTER, 1);
  char err[128];
  ncs_reader_t *r = ncs_reader_open_mem(g.file.p, g.file.len, err, sizeof err);
  ncs_item_t it;
  int what[32], n = 0, rc;
  while ((rc = ncs_reader_next(r, &it)) > 0 && n < 32) {
    what[n++] = it.what;
    if (it.what == NCS_ITEM_COMM_END) assert_int_equal(it.ts, 99);
    if (it.what == NCS_ITEM_EVENT) check_event(&it.ev, &g.log[0]);
  }
  assert_int_equal(rc, 0);
  int want[] = {NCS_ITEM_SEGMENT,  NCS_ITEM_CLOCK,  NCS_ITEM_COMM,
                NCS_ITEM_THREAD,   NCS_ITEM_THREAD, NCS_ITEM_THREAD,
                NCS_ITEM_COMM_END, NCS_ITEM_EVENT,  NCS_ITEM_FOOTER};
  assert_int_equal(n, sizeof want / sizeof want[0]);
  assert_memory_equal(what, want, sizeof want);
  ncs_reader_close(r);
  tg_free(&g);
}

static void test_chunk_rules(void **state) {
  (void)state;
  tg_t g;
  drain_t d;
  /* a known chunk before any SEGMENT */
  tg_init(&g);
  tg_header(&g);
  ncs_enc_clock(&g.pay, 1, 2);
  tg_chunk(&g, NCS_CHUNK_CLOCK);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "before any SEGMENT");
  tg_free(&g);
  /* flags this reader does not know */
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  size_t off[64];
  chunk_offsets(&g, off, 64);
  g.file.p[off[1] + 6] = 1; /* flags are covered by the CRC: fix it up */
  uint8_t h[NCS_CHUNK_HEADER_LEN];
  uint32_t len = le32(g.file.p + off[1] + 8);
  ncs_chunk_header(h, NCS_CHUNK_CLOCK, g.file.p + off[1] + NCS_CHUNK_HEADER_LEN, len);
  memcpy(g.file.p + off[1] + 12, h + 12, 4); /* wrong CRC on purpose first */
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "checksum");
  uint32_t crc = ncs_crc32c(ncs_crc32c(0, g.file.p + off[1] + 4, 8), g.file.p + off[1] + 16, len);
  memcpy(g.file.p + off[1] + 12, &crc, 4);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "flags 0x1");
  tg_free(&g);
  /* more than 512 counters */
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  for (unsigned i = 0; i < 600; i++) ncs_buf_varint(&g.pay, i), ncs_buf_varint(&g.pay, i);
  tg_chunk(&g, NCS_CHUNK_COUNTERS);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "more than 512 counters");
  tg_free(&g);
  /* a key without a value */
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  ncs_buf_varint(&g.pay, 0x101);
  tg_chunk(&g, NCS_CHUNK_FOOTER);
  drain_mem(g.file.p, g.file.len, &d);
  assert_contains(d.err, "counter value");
  tg_free(&g);
}

static void test_multi_segment(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 3, 0, 7);
  /* a fourth segment that uses a string id the earlier segments defined but it does not */
  ncs_segment_info_t s;
  tg_segment_info(&s, 3, 7);
  ncs_enc_segment(&g.pay, &s);
  tg_chunk(&g, NCS_CHUNK_SEGMENT);
  uint8_t rec[128];
  size_t n = coll_start(rec, 1, 0, 0, 0);
  uint8_t pay[160] = {5, 1};
  memcpy(pay + 2, rec, n);
  ncs_buf_bytes(&g.pay, pay, n + 2);
  tg_chunk(&g, NCS_CHUNK_EVENTS);
  char err[128];
  ncs_reader_t *r = ncs_reader_open_mem(g.file.p, g.file.len, err, sizeof err);
  ncs_item_t it;
  uint32_t segs = 0, footers = 0;
  int rc;
  ncs_event_t last = {0};
  while ((rc = ncs_reader_next(r, &it)) > 0) {
    if (it.what == NCS_ITEM_EVENT) last = it.ev;
    if (it.what == NCS_ITEM_SEGMENT) {
      assert_int_equal(ncs_reader_segment(r)->index, segs);
      assert_int_equal(ncs_reader_segment(r)->epoch, segs);
      segs++;
    }
    footers += it.what == NCS_ITEM_FOOTER;
  }
  assert_int_equal(segs, 4);
  assert_int_equal(footers, 3);
  assert_int_equal(rc, -1);
  /* decoded anyway, flagged: the old segment's strings are gone */
  assert_int_equal(last.lost, NCS_LOST_STRING);
  assert_int_equal(last.f[1], 1);
  assert_null(last.fstr[1]);
  assert_contains(ncs_reader_error(r), "1 record names strings or communicators that were never");
  assert_null(ncs_reader_string(r, 1));
  ncs_reader_close(r);
  tg_free(&g);
}

/* ---------------------------------------------------------------- listing */

static void test_list_traces(void **state) {
  (void)state;
  char dir[128], p[192], err[256];
  snprintf(dir, sizeof dir, "%s/list", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  char **v;
  size_t n;
  assert_int_equal(ncs_list_traces(dir, &v, &n, err, sizeof err), 0);
  assert_int_equal(n, 0);
  ncs_free_paths(v, n);
  const char *names[] = {"b-2.nstrace", "a-1.nstrace", "notes.txt", "x.nstrace.tmp", ".nstrace"};
  for (unsigned i = 0; i < 5; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    write_file(p, "x", 1);
  }
  /* a directory named like a trace is listed: opening it says what it is */
  snprintf(p, sizeof p, "%s/sub.nstrace", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  assert_int_equal(ncs_list_traces(dir, &v, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  snprintf(p, sizeof p, "%s/a-1.nstrace", dir);
  assert_string_equal(v[0], p);
  snprintf(p, sizeof p, "%s/b-2.nstrace", dir);
  assert_string_equal(v[1], p);
  snprintf(p, sizeof p, "%s/sub.nstrace", dir);
  assert_string_equal(v[2], p);
  ncs_free_paths(v, n);
  int why;
  assert_null(ncs_reader_open_why(p, &why, err, sizeof err));
  assert_int_equal(why, NCS_OPEN_NOT_FILE);
  assert_contains(err, "not a regular file but a directory");
  /* a file is its own list, whatever its name */
  snprintf(p, sizeof p, "%s/notes.txt", dir);
  assert_int_equal(ncs_list_traces(p, &v, &n, err, sizeof err), 0);
  assert_int_equal(n, 1);
  assert_string_equal(v[0], p);
  ncs_free_paths(v, n);
  assert_int_equal(ncs_list_traces("/nonexistent/dir", &v, &n, err, sizeof err), -1);
  assert_contains(err, "/nonexistent/dir");
  /* open refuses directories and missing files */
  assert_null(ncs_reader_open_why(dir, &why, err, sizeof err));
  assert_int_equal(why, NCS_OPEN_NOT_FILE);
  assert_null(ncs_reader_open_why("/nonexistent/x.nstrace", &why, err, sizeof err));
  assert_int_equal(why, NCS_OPEN_CANNOT_READ);
  assert_string_equal(err, "cannot read: no such file");
  snprintf(p, sizeof p, "%s/notes.txt", dir);
  assert_null(ncs_reader_open_why(p, &why, err, sizeof err));
  assert_int_equal(why, NCS_OPEN_NOT_TRACE);
}

/* One file reached twice is listed once: the same path, a hard link, a symbolic link, a file
 * also inside a directory given; different files with equal bytes stay two. */
static void test_list_duplicates(void **state) {
  (void)state;
  char dir[128], a[192], b[192], hard[192], sym[192], copy[192], err[256];
  snprintf(dir, sizeof dir, "%s/dups", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(a, sizeof a, "%s/a-1.nstrace", dir);
  snprintf(b, sizeof b, "%s/b-2.nstrace", dir);
  snprintf(hard, sizeof hard, "%s/c-hard.nstrace", dir);
  snprintf(sym, sizeof sym, "%s/d-sym.nstrace", dir);
  snprintf(copy, sizeof copy, "%s/e-copy.nstrace", dir);
  write_file(a, "same bytes", 10);
  write_file(b, "other", 5);
  write_file(copy, "same bytes", 10); /* same content, another file: the job model's business */
  assert_int_equal(link(a, hard), 0);
  assert_int_equal(symlink(a, sym), 0);
  char **v;
  size_t n, dups, found[4];
  char *one[] = {dir};
  assert_int_equal(ncs_list_traces_n(one, 1, &v, &n, &dups, found, err, sizeof err), 0);
  assert_int_equal(n, 3); /* a, b, e: the hard and the symbolic link are a again */
  assert_int_equal(dups, 2);
  assert_int_equal(found[0], 5);
  assert_string_equal(v[0], a);
  assert_string_equal(v[1], b);
  assert_string_equal(v[2], copy);
  ncs_free_paths(v, n);
  /* the plain call dedupes too */
  assert_int_equal(ncs_list_traces(dir, &v, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  ncs_free_paths(v, n);
  /* a path given twice, a file and its directory: the first name is kept, in order */
  char *twice[] = {b, b, dir, sym};
  assert_int_equal(ncs_list_traces_n(twice, 4, &v, &n, &dups, found, err, sizeof err), 0);
  assert_int_equal(n, 3);
  assert_string_equal(v[0], b);
  assert_string_equal(v[1], a);
  assert_string_equal(v[2], copy);
  assert_int_equal(dups, 1 + 1 + 2 + 1); /* b again; b, hard and sym in dir; sym */
  assert_int_equal(found[0], 1);
  assert_int_equal(found[1], 1);
  assert_int_equal(found[2], 5);
  assert_int_equal(found[3], 1);
  ncs_free_paths(v, n);
  /* nothing to drop: no false duplicates */
  char *distinct[] = {a, b, copy};
  assert_int_equal(ncs_list_traces_n(distinct, 3, &v, &n, &dups, NULL, err, sizeof err), 0);
  assert_int_equal(n, 3);
  assert_int_equal(dups, 0);
  ncs_free_paths(v, n);
}

/* ---------------------------------------------------------------- damage inside the file */

/* The chunks of a valid file written as a file: chunk k cut to `keep` bytes (a torn write that a
 * transient full disk left), the chunks after it appended whole. */
static void torn_file(const tg_t *g, const size_t *off, size_t k, size_t keep, ncs_buf_t *out) {
  ncs_buf_reset(out);
  ncs_buf_bytes(out, g->file.p, off[k] + keep);
  ncs_buf_bytes(out, g->file.p + off[k + 1], g->file.len - off[k + 1]);
}

static void test_torn_chunk_in_middle(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 2, 0, 7);
  size_t off[64], n = chunk_offsets(&g, off, 64);
  off[n] = g.file.len;
  drain_t *full = malloc(sizeof *full), *d = malloc(sizeof *d);
  drain_mem(g.file.p, g.file.len, full);
  ncs_buf_t b;
  assert_int_equal(ncs_buf_init(&b, g.file.len), 0);
  for (size_t k = 0; k + 1 < n; k++) {
    size_t len = off[k + 1] - off[k];
    uint16_t type = (uint16_t)(g.file.p[off[k] + 4] | g.file.p[off[k] + 5] << 8);
    for (size_t keep = 1; keep < len; keep += keep < 20 ? 1 : 97) {
      torn_file(&g, off, k, keep, &b);
      drain_mem(b.p, b.len, d);
      assert_int_equal(d->rc, -1);
      assert_int_equal(d->damage, NCS_DAMAGE_CORRUPT);
      assert_int_equal(d->info.tail, NCS_TAIL_CLEAN);
      assert_int_equal(d->ngap, 1);
      assert_int_equal(d->gap[0].offset, off[k]);
      assert_int_equal(d->gap[0].bytes, keep);
      assert_int_equal(d->footers, 2 - (type == NCS_CHUNK_FOOTER)); /* every chunk after it */
      int lost = type == NCS_CHUNK_EVENTS ? items_from(full, off[k], off[k + 1]) : 0;
      assert_int_equal(d->events, full->events - lost);
    }
  }
  ncs_buf_free(&b);
  free(full);
  free(d);
  tg_free(&g);
}

/* Zeros over the end of one chunk and the start of the next (a damaged disk block): one GAP for
 * both, and reading goes on at the chunk after them. */
static void test_zeroed_range(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  size_t off[64], n = chunk_offsets(&g, off, 64);
  drain_t d;
  /* the last EVENTS chunk's tail and the COMM_END header after it */
  size_t k = n - 3;
  memset(g.file.p + off[k + 1] - 5, 0, 5 + NCS_CHUNK_HEADER_LEN);
  drain_mem(g.file.p, g.file.len, &d);
  assert_int_equal(d.ngap, 1);
  assert_int_equal(d.gap[0].offset, off[k]);
  assert_int_equal(d.gap[0].bytes, off[k + 2] - off[k]);
  assert_int_equal(d.gap[0].chunks, 1); /* the EVENTS header is still recognizable */
  assert_int_equal(d.footers, 1);
  assert_int_equal(d.what[d.n - 1], NCS_ITEM_FOOTER);
  tg_free(&g);
}

/* A chunk written twice (a replayed write) is read once; the copy is named. */
static void test_duplicate_chunk(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  size_t off[64], n = chunk_offsets(&g, off, 64);
  off[n] = g.file.len;
  drain_t *full = malloc(sizeof *full), *d = malloc(sizeof *d);
  drain_mem(g.file.p, g.file.len, full);
  ncs_buf_t b;
  assert_int_equal(ncs_buf_init(&b, 2 * g.file.len), 0);
  for (size_t k = 0; k < n; k++) {
    uint16_t type = (uint16_t)(g.file.p[off[k] + 4] | g.file.p[off[k] + 5] << 8);
    size_t len = off[k + 1] - off[k];
    ncs_buf_reset(&b);
    ncs_buf_bytes(&b, g.file.p, off[k + 1]);
    ncs_buf_bytes(&b, g.file.p + off[k], len);
    ncs_buf_bytes(&b, g.file.p + off[k + 1], g.file.len - off[k + 1]);
    drain_mem(b.p, b.len, d);
    if (type == NCS_CHUNK_THREAD || type == NCS_CHUNK_STRINGS) {
      /* a thread is announced again in each segment, and a string defined twice changes
       * nothing: no copy is looked for, and nothing is counted twice */
      assert_int_equal(d->ngap, 0);
      assert_int_equal(d->damage, NCS_DAMAGE_NONE);
      assert_int_equal(d->events, full->events);
      continue;
    }
    assert_int_equal(d->ngap, 1);
    assert_int_equal(d->gap[0].offset, off[k + 1]);
    assert_int_equal(d->gap[0].bytes, len);
    assert_contains(d->gap[0].why, "second copy");
    assert_contains(d->gap[0].why, "nothing lost");
    assert_contains(d->err, "second copy");
    assert_int_equal(d->events, full->events);
    assert_int_equal(d->recovered, 0);
    assert_int_equal(d->lost, 0);
    assert_int_equal(d->damage, NCS_DAMAGE_CORRUPT);
  }
  ncs_buf_free(&b);
  free(full);
  free(d);
  tg_free(&g);
}

/* Damage that took the start of the second segment: the reader finds evidence that a new segment
 * began and does not decode its records with the first segment's strings and communicators. */
static void test_lost_segment_start(void **state) {
  (void)state;
  for (int crash = 0; crash <= 1; crash++) {
    tg_t g;
    tg_init(&g);
    tg_sample(&g, 1, crash, 7);
    size_t seg2 = g.file.len;
    ncs_segment_info_t si;
    tg_segment_info(&si, 1, 7);
    ncs_enc_segment(&g.pay, &si);
    tg_chunk(&g, NCS_CHUNK_SEGMENT);
    ncs_enc_clock(&g.pay, 5, 6);
    tg_chunk(&g, NCS_CHUNK_CLOCK);
    size_t strings = g.file.len;
    for (uint64_t id = 1; id <= TG_NSTRINGS; id++) ncs_enc_string(&g.pay, id, tg_strings[id]);
    tg_chunk(&g, NCS_CHUNK_STRINGS); /* the same strings as the first segment's */
    ncs_comm_info_t c;
    tg_comm_info(&c, 0, 5);
    ncs_enc_comm(&g.pay, &c);
    tg_chunk(&g, NCS_CHUNK_COMM);
    uint8_t rec[128];
    size_t n = coll_start(rec, 1, NCS_CTX_LOCAL, 0, 0);
    uint8_t pay[160] = {5, 1};
    memcpy(pay + 2, rec, n);
    ncs_buf_bytes(&g.pay, pay, n + 2);
    tg_chunk(&g, NCS_CHUNK_EVENTS);
    /* zero the SEGMENT and CLOCK chunks of the second segment */
    memset(g.file.p + seg2, 0, strings - seg2);
    drain_t d;
    drain_mem(g.file.p, g.file.len, &d);
    assert_int_equal(d.ngap, 1);
    assert_int_equal(d.gap[0].offset, seg2);
    assert_int_equal(d.gap[0].bytes, strings - seg2);
    assert_int_equal(d.recovered, 1);
    assert_int_equal(d.info.lost_segments, 1);
    /* The recovered segment has its own communicator. With a footer before the damage, its
     * STRINGS chunk belongs to it too; without, the evidence comes only at the COMM chunk, after
     * the strings were taken for the old segment's: the record's string is flagged lost rather
     * than read with a meaning it may not have. */
    assert_int_equal(d.lost, crash);
    /* with a footer, the first chunk after the damage starts it; without, the COMM chunk that
     * defines communicator 0 again */
    assert_contains(d.err, crash ? "defines communicator 0 again" : "followed its segment's FOOTER");
    assert_int_equal(d.what[d.n - 3], NCS_ITEM_SEGMENT);
    assert_int_equal(d.what[d.n - 2], NCS_ITEM_COMM);
    tg_free(&g);
  }
  /* no false alarm: damage inside a segment keeps it (test_crc_corruption checks every chunk) */
}

/* Records that name strings or communicators their segment never defined are decoded anyway,
 * flagged and counted, also when no damage explains it. */
static void test_lost_references(void **state) {
  (void)state;
  uint8_t rec[128], pay[300] = {5, 2};
  size_t n = coll_start(rec, 99, NCS_CTX_LOCAL, 0, 0); /* string 99, communicator 0: neither */
  memcpy(pay + 2, rec, n);
  n = coll_start(rec, 1, NCS_CTX_NONE, 0, 0);
  memcpy(pay + 2 + (n + 0), rec, n);
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  ncs_segment_info_t si;
  tg_segment_info(&si, 0, 42);
  ncs_enc_segment(&g.pay, &si);
  tg_chunk(&g, NCS_CHUNK_SEGMENT);
  ncs_enc_string(&g.pay, 1, "AllReduce");
  tg_chunk(&g, NCS_CHUNK_STRINGS);
  ncs_buf_bytes(&g.pay, pay, 2 + 2 * n);
  tg_chunk(&g, NCS_CHUNK_EVENTS);
  char err[128];
  ncs_reader_t *r = ncs_reader_open_mem(g.file.p, g.file.len, err, sizeof err);
  ncs_item_t it;
  assert_int_equal(ncs_reader_next(r, &it), 1); /* SEGMENT */
  assert_int_equal(ncs_reader_next(r, &it), 1);
  assert_int_equal(it.what, NCS_ITEM_EVENT);
  assert_int_equal(it.ev.lost, NCS_LOST_STRING | NCS_LOST_COMM);
  assert_int_equal(it.ev.f[1], 99);
  assert_null(it.ev.fstr[1]);
  assert_int_equal(ncs_reader_next(r, &it), 1);
  assert_int_equal(it.ev.lost, 0);
  assert_string_equal(it.ev.fstr[1], "AllReduce");
  assert_int_equal(ncs_reader_next(r, &it), -1);
  assert_int_equal(ncs_reader_damage(r), NCS_DAMAGE_CORRUPT);
  ncs_damage_t d;
  ncs_reader_damage_info(r, &d);
  assert_int_equal(d.lost_refs, 1);
  assert_int_equal(d.gaps, 0);
  assert_contains(ncs_reader_error(r), "never defined");
  ncs_reader_close(r);
  tg_free(&g);
}

/* A file full of plausible chunk headers with bad checksums after a damaged chunk: the scan
 * gives up within its CRC budget instead of checking every candidate's payload. */
static void test_resync_budget(void **state) {
  (void)state;
  size_t len = 4u << 20;
  uint8_t *p = calloc(1, len);
  ncs_file_header(p);
  for (size_t off = NCS_FILE_HEADER_LEN; off + NCS_CHUNK_HEADER_LEN <= len; off += 16) {
    uint8_t h[NCS_CHUNK_HEADER_LEN];
    uint32_t claim = (uint32_t)(len - off - NCS_CHUNK_HEADER_LEN);
    if (claim > NCS_CHUNK_MAX_PAYLOAD) claim = NCS_CHUNK_MAX_PAYLOAD;
    ncs_chunk_header(h, NCS_CHUNK_EVENTS, NULL, 0);
    memcpy(h + 8, &claim, 4); /* the CRC is that of an empty payload: wrong */
    memcpy(p + off, h, sizeof h);
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  drain_t d;
  drain_mem(p, len, &d);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  assert_int_equal(d.rc, -1);
  assert_int_equal(d.info.tail, NCS_TAIL_LOST);
  assert_contains(d.err, "too many false chunk headers");
  /* without the budget: ~260000 candidates of ~2 MiB each, hours of CRC */
  assert_true(s < 30);
  free(p);
}

/* ---------------------------------------------------------------- inputs */

/* A sparse file: a hole of 100 GB at the end reads as a truncation, and a hole in the middle as
 * a GAP, without reading the hole. */
static void test_sparse_file(void **state) {
  (void)state;
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  char path[128], err[256];
  snprintf(path, sizeof path, "%s/sparse.nstrace", tmpdir);
  write_file(path, g.file.p, g.file.len);
  uint64_t big = 100ull << 30;
  assert_int_equal(truncate(path, (off_t)big), 0);
  int fd = open(path, O_RDONLY);
  off_t hole = lseek(fd, 0, SEEK_HOLE);
  close(fd);
  if (hole < 0 || (uint64_t)hole >= big) {
    unlink(path);
    skip(); /* this filesystem keeps no holes: nothing to test */
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  drain_t d;
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  assert_non_null(r);
  drain_reader(r, &d);
  ncs_reader_close(r);
  assert_int_equal(d.damage, NCS_DAMAGE_TRUNCATED);
  assert_contains(d.err, "never written");
  assert_int_equal(d.footers, 1);
  /* the same hole with a chunk after it */
  tg_t more;
  tg_init(&more);
  ncs_enc_clock(&more.pay, 77, 88);
  tg_chunk(&more, NCS_CHUNK_CLOCK);
  int wfd = open(path, O_WRONLY | O_APPEND);
  assert_int_equal(write(wfd, more.file.p, more.file.len), (ssize_t)more.file.len);
  close(wfd);
  tg_free(&more);
  r = ncs_reader_open(path, err, sizeof err);
  drain_reader(r, &d);
  ncs_reader_close(r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_int_equal(d.damage, NCS_DAMAGE_CORRUPT);
  assert_int_equal(d.ngap, 1);
  assert_int_equal(d.gap[0].offset, g.file.len);
  assert_int_equal(d.gap[0].bytes, big - g.file.len);
  assert_contains(d.gap[0].why, "a hole");
  assert_int_equal(d.what[d.n - 1], NCS_ITEM_CLOCK); /* read after 100 GB, without reading them */
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  assert_true(s < 10); /* reading 200 GB of zeros would take minutes */
  unlink(path);
  tg_free(&g);
}

/* A FIFO, a device, a socket and a directory are refused at once, never read. */
static void test_special_files(void **state) {
  (void)state;
  char path[128], err[256];
  int why;
  snprintf(path, sizeof path, "%s/fifo.nstrace", tmpdir);
  assert_int_equal(mkfifo(path, 0644), 0);
  assert_null(ncs_reader_open_why(path, &why, err, sizeof err)); /* would block without a writer */
  assert_int_equal(why, NCS_OPEN_NOT_FILE);
  assert_contains(err, "FIFO");
  assert_null(ncs_reader_open_why("/dev/zero", &why, err, sizeof err));
  assert_int_equal(why, NCS_OPEN_NOT_FILE);
  assert_contains(err, "character device");
  snprintf(path, sizeof path, "%s/sock.nstrace", tmpdir);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  assert_true(strlen(path) < sizeof sa.sun_path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_null(ncs_reader_open_why(path, &why, err, sizeof err));
  assert_int_equal(why, NCS_OPEN_NOT_FILE);
  assert_contains(err, "socket");
  close(s);
}

/* Permission denied is "cannot read", not damage. As root, permission bits do not stop a read,
 * so a child process drops to nobody's uid first. */
static void test_permission_denied(void **state) {
  (void)state;
  char dir[128], path[192], err[256];
  snprintf(dir, sizeof dir, "%s/perm", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(chmod(tmpdir, 0755), 0); /* nobody may reach it, not read it */
  snprintf(path, sizeof path, "%s/secret.nstrace", dir);
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 0, 7);
  write_file(path, g.file.p, g.file.len);
  tg_free(&g);
  assert_int_equal(chmod(path, 0600), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (geteuid() == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    } else if (chmod(path, 0) != 0) {
      _exit(4);
    }
    int why;
    ncs_reader_t *r = ncs_reader_open_why(path, &why, err, sizeof err);
    _exit(!r && why == NCS_OPEN_CANNOT_READ && !strcmp(err, "cannot read: permission denied")
              ? 0
              : 5);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  chmod(tmpdir, 0700);
}

/* ---------------------------------------------------------------- loss records */

/* the items of a buffer, LOSS ones into l[] */
static int read_losses(const void *p, size_t len, ncs_loss_t *l, int max, drain_t *d) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open_mem(p, len, err, sizeof err);
  assert_non_null(r);
  int n = 0;
  ncs_item_t it;
  memset(d, 0, sizeof *d);
  while ((d->rc = ncs_reader_next(r, &it)) > 0) {
    d->what[d->n++] = it.what;
    if (it.what == NCS_ITEM_LOSS && n < max) l[n++] = it.loss;
  }
  snprintf(d->err, sizeof d->err, "%s", ncs_reader_error(r));
  ncs_reader_close(r);
  return n;
}

static void test_loss_records(void **state) {
  (void)state;
  tg_t g;
  drain_t d;
  ncs_loss_t got[4];
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  ncs_loss_t a = {.reason = NCS_LOSS_DROPS, .from_ns = 100, .to_ns = 250, .records = 12};
  a.by_type[NCS_T_COLL] = 2, a.by_type[NCS_T_PROXY_STEP] = 10;
  ncs_enc_loss(&g.pay, &a);
  tg_chunk(&g, NCS_CHUNK_LOSS);
  ncs_loss_t b = {.reason = NCS_LOSS_WRITE, .from_ns = 300, .to_ns = 300, .records = 1};
  b.by_type[NCS_T_CE_BATCH] = 1;
  ncs_enc_loss(&g.pay, &b);
  tg_chunk(&g, NCS_CHUNK_LOSS);
  /* a newer writer: a reason and a type this reader does not know, and bytes after the fields */
  ncs_buf_varint(&g.pay, 9), ncs_buf_varint(&g.pay, 5), ncs_buf_varint(&g.pay, 6);
  ncs_buf_varint(&g.pay, 8), ncs_buf_varint(&g.pay, 2);
  ncs_buf_varint(&g.pay, NCS_T_COUNT + 3), ncs_buf_varint(&g.pay, 5);
  ncs_buf_varint(&g.pay, NCS_T_GROUP), ncs_buf_varint(&g.pay, 3);
  ncs_buf_bytes(&g.pay, "\x01\x02", 2);
  tg_chunk(&g, NCS_CHUNK_LOSS);
  assert_int_equal(read_losses(g.file.p, g.file.len, got, 4, &d), 3);
  assert_int_equal(d.rc, 0);
  assert_memory_equal(&got[0], &a, sizeof a);
  assert_memory_equal(&got[1], &b, sizeof b);
  assert_int_equal(got[2].reason, 9);
  assert_int_equal(got[2].records, 8);
  assert_int_equal(got[2].by_type[NCS_T_GROUP], 3);
  uint64_t known = 0;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) known += got[2].by_type[t];
  assert_int_equal(known, 3); /* the unknown type's 5 count in records only */
  assert_string_equal(ncs_loss_reason_name(NCS_LOSS_NO_SLOT), "no-slot");
  assert_string_equal(ncs_loss_reason_name(9), "?");
  tg_free(&g);
  /* what cannot be true is damage */
  static const struct {
    uint64_t v[7];
    int n;
    const char *err;
  } bad[] = {
      {{0, 1, 2, 0, 0}, 5, "reason 0"},
      {{1, 5, 4, 0, 0}, 5, "ends before it starts"},
      {{1, 1, 2, 3, 2, NCS_T_COLL, 2}, 7, "field runs past"},
      {{1, 1, 2, 3, 2, NCS_T_COLL, 4}, 7, "exceed the total"},
      {{1, 1, 2}, 3, "lost records"},
  };
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tg_init(&g);
    tg_header(&g);
    tg_segment(&g, 0, 1);
    for (int k = 0; k < bad[i].n; k++) ncs_buf_varint(&g.pay, bad[i].v[k]);
    if (i == 2) ncs_buf_varint(&g.pay, 1); /* a second pair whose count is missing */
    tg_chunk(&g, NCS_CHUNK_LOSS);
    assert_int_equal(read_losses(g.file.p, g.file.len, got, 4, &d), 0);
    assert_int_equal(d.rc, -1);
    assert_contains(d.err, bad[i].err);
    assert_contains(d.err, "LOSS chunk");
    tg_free(&g);
  }
}

/* A flight image whose meta region is a segment and whose header keeps loss windows. */
static uint8_t *flight_image(const ncs_flight_hdr_t *lh, size_t *len) {
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 1);
  enum { META = 8192, SLOT = 1024, NSLOTS = 2 };
  *len = NCS_FLIGHT_HDR_LEN + META + SLOT * NSLOTS;
  uint8_t *img = calloc(1, *len);
  ncs_flight_hdr_t h = *lh;
  memcpy(h.magic, NCS_FLIGHT_MAGIC, 8);
  h.version = NCS_FLIGHT_VERSION, h.hdr_len = NCS_FLIGHT_HDR_LEN, h.file_len = *len;
  h.meta_off = NCS_FLIGHT_HDR_LEN, h.meta_cap = META, h.meta_len = g.file.len;
  h.ring_off = NCS_FLIGHT_HDR_LEN + META, h.slot_bytes = SLOT, h.nslots = NSLOTS;
  assert_true(g.file.len <= META);
  memcpy(img + h.meta_off, g.file.p, g.file.len);
  memcpy(img, &h, sizeof h);
  tg_free(&g);
  return img;
}

static void test_flight_loss_windows(void **state) {
  (void)state;
  ncs_flight_hdr_t h;
  memset(&h, 0, sizeof h);
  h.features = NCS_FLF_LOSS | NCS_FLF_LOSS_T16;
  h.loss_earlier[NCS_LOSS_DROPS - 1] = (ncs_flight_loss_t){.seq = 2, .reason = NCS_LOSS_DROPS,
                                                           .from_mono = 10, .to_mono = 40};
  h.loss_earlier[NCS_LOSS_DROPS - 1].by_type[NCS_T_COLL] = 100;
  h.loss[7] = (ncs_flight_loss_t){.seq = 9, .reason = NCS_LOSS_DROPS, .open = 1, .from_mono = 90,
                                  .to_mono = 95};
  h.loss[7].by_type[NCS_T_PROXY_STEP] = 3, h.loss[7].by_type[NCS_T_KERNEL_CH] = 1;
  h.loss[7].by_type[NCS_T_KERNEL_PHASE] = 1; /* the last type: 16 per window */
  h.loss[1] = (ncs_flight_loss_t){.seq = 5, .reason = NCS_LOSS_NO_SLOT, .from_mono = 50, .to_mono = 60};
  h.loss[1].by_type[NCS_T_GROUP] = 7;
  h.loss[3] = (ncs_flight_loss_t){.seq = 6, .reason = 7, .from_mono = 1, .to_mono = 2}; /* damage */
  h.loss[3].by_type[0] = 1;
  h.loss[4] = (ncs_flight_loss_t){.seq = 7, .reason = 1, .from_mono = 9, .to_mono = 2}; /* damage */
  h.loss[4].by_type[0] = 1;
  h.loss[5] = (ncs_flight_loss_t){.seq = 8, .reason = 1, .from_mono = 3, .to_mono = 4}; /* empty */
  size_t len;
  uint8_t *img = flight_image(&h, &len);
  char err[256];
  ncs_reader_t *r = ncs_reader_open_mem(img, len, err, sizeof err);
  assert_non_null(r);
  const ncs_flight_info_t *fi = ncs_reader_flight(r);
  assert_non_null(fi);
  assert_int_equal(fi->has_loss, 1);
  assert_int_equal(fi->nloss, 3);
  assert_int_equal(fi->loss_bad, 2);
  assert_int_equal(fi->loss_torn, 0);
  /* LOSS items right after the SEGMENT: the earlier window, then the kept ones by seq */
  ncs_item_t it;
  assert_int_equal(ncs_reader_next(r, &it), 1);
  assert_int_equal(it.what, NCS_ITEM_SEGMENT);
  uint64_t want_from[] = {10, 50, 90}, want_records[] = {100, 7, 5};
  uint32_t want_reason[] = {NCS_LOSS_DROPS, NCS_LOSS_NO_SLOT, NCS_LOSS_DROPS};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(ncs_reader_next(r, &it), 1);
    assert_int_equal(it.what, NCS_ITEM_LOSS);
    assert_int_equal(it.loss.reason, want_reason[i]);
    assert_int_equal(it.loss.from_ns, want_from[i]);
    assert_int_equal(it.loss.records, want_records[i]);
    assert_int_equal(it.ts, want_from[i]);
  }
  assert_int_equal(it.loss.by_type[NCS_T_PROXY_STEP], 3);
  assert_int_equal(it.loss.by_type[NCS_T_KERNEL_PHASE], 1);
  int rc, more = 0;
  while ((rc = ncs_reader_next(r, &it)) > 0) more += it.what == NCS_ITEM_LOSS;
  assert_int_equal(rc, 0);
  assert_int_equal(more, 0); /* handed out once */
  ncs_reader_close(r);
  free(img);
  /* killed while changing them */
  h.loss_gen = 3;
  img = flight_image(&h, &len);
  r = ncs_reader_open_mem(img, len, err, sizeof err);
  assert_int_equal(ncs_reader_flight(r)->loss_torn, 1);
  ncs_reader_close(r);
  free(img);
  /* an older file: no loss windows, whatever the bytes say */
  h.features = 0;
  img = flight_image(&h, &len);
  r = ncs_reader_open_mem(img, len, err, sizeof err);
  fi = ncs_reader_flight(r);
  assert_int_equal(fi->has_loss, 0);
  assert_int_equal(fi->nloss, 0);
  while ((rc = ncs_reader_next(r, &it)) > 0) assert_int_not_equal(it.what, NCS_ITEM_LOSS);
  assert_int_equal(rc, 0);
  ncs_reader_close(r);
  free(img);
  /* format 1.2's header (bit 0 alone): windows of 15 types, 152 bytes each, from loss_earlier */
  memset(&h, 0, sizeof h);
  h.features = NCS_FLF_LOSS;
  img = flight_image(&h, &len);
  uint8_t *p = img + offsetof(ncs_flight_hdr_t, loss_earlier);
  const size_t W15 = 152;
  uint64_t u64;
  uint32_t u32;
#define PUT(off, v, n) (u##n = (v), memcpy(p + (off), &u##n, sizeof u##n))
  PUT(0, 2, 64), PUT(8, NCS_LOSS_DROPS, 32), PUT(16, 10, 64), PUT(24, 40, 64); /* earlier[0] */
  PUT(32 + 8 * NCS_T_COLL, 100, 64);
  p += (NCS_LOSS_MAX + 5) * W15; /* loss[5] */
  PUT(0, 9, 64), PUT(8, NCS_LOSS_NO_SLOT, 32), PUT(12, 1, 32), PUT(16, 90, 64), PUT(24, 95, 64);
  PUT(32 + 8 * NCS_T_GROUP, 4, 64), PUT(32 + 8 * 14, 3, 64); /* type 14: the last of 15 */
  p += W15; /* loss[6]: seq 0, unused, whatever follows it */
  PUT(32, 77, 64);
#undef PUT
  r = ncs_reader_open_mem(img, len, err, sizeof err);
  assert_non_null(r);
  fi = ncs_reader_flight(r);
  assert_int_equal(fi->has_loss, 1);
  assert_int_equal(fi->nloss, 2);
  assert_int_equal(fi->loss_bad, 0);
  assert_int_equal(ncs_reader_next(r, &it), 1);
  assert_int_equal(it.what, NCS_ITEM_SEGMENT);
  assert_int_equal(ncs_reader_next(r, &it), 1);
  assert_int_equal(it.what, NCS_ITEM_LOSS);
  assert_int_equal(it.loss.reason, NCS_LOSS_DROPS);
  assert_int_equal(it.loss.from_ns, 10);
  assert_int_equal(it.loss.to_ns, 40);
  assert_int_equal(it.loss.records, 100);
  assert_int_equal(it.loss.by_type[NCS_T_COLL], 100);
  assert_int_equal(ncs_reader_next(r, &it), 1);
  assert_int_equal(it.what, NCS_ITEM_LOSS);
  assert_int_equal(it.loss.reason, NCS_LOSS_NO_SLOT);
  assert_int_equal(it.loss.from_ns, 90);
  assert_int_equal(it.loss.records, 7);
  assert_int_equal(it.loss.by_type[NCS_T_GROUP], 4);
  assert_int_equal(it.loss.by_type[14], 3);
  assert_int_equal(it.loss.by_type[NCS_T_KERNEL_PHASE], 0);
  while ((rc = ncs_reader_next(r, &it)) > 0) assert_int_not_equal(it.what, NCS_ITEM_LOSS);
  assert_int_equal(rc, 0);
  ncs_reader_close(r);
  free(img);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_round_trip_file),
      cmocka_unit_test(test_truncate_every_offset),
      cmocka_unit_test(test_truncate_every_offset_file),
      cmocka_unit_test(test_empty_and_header_only),
      cmocka_unit_test(test_bad_file_magic_and_version),
      cmocka_unit_test(test_crc_corruption),
      cmocka_unit_test(test_bad_chunk_magic_and_zero_tail),
      cmocka_unit_test(test_oversize_length),
      cmocka_unit_test(test_bad_varints),
      cmocka_unit_test(test_bad_records),
      cmocka_unit_test(test_field_lists),
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_many_strings),
      cmocka_unit_test(test_colliding_string_ids),
      cmocka_unit_test(test_unknown_chunks_and_trailing_bytes),
      cmocka_unit_test(test_chunk_rules),
      cmocka_unit_test(test_multi_segment),
      cmocka_unit_test(test_list_traces),
      cmocka_unit_test(test_loss_records),
      cmocka_unit_test(test_flight_loss_windows),
      cmocka_unit_test(test_list_duplicates),
      cmocka_unit_test(test_torn_chunk_in_middle),
      cmocka_unit_test(test_zeroed_range),
      cmocka_unit_test(test_duplicate_chunk),
      cmocka_unit_test(test_lost_segment_start),
      cmocka_unit_test(test_lost_references),
      cmocka_unit_test(test_resync_budget),
      cmocka_unit_test(test_sparse_file),
      cmocka_unit_test(test_special_files),
      cmocka_unit_test(test_permission_denied),
  };
  return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
