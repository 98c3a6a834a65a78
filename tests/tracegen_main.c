/* tracegen_main.c - ncs-tracegen: write crafted trace files for the CLI tests and the fuzzing
 * seed corpus.
 *
 *   ncs-tracegen fixtures DIR   valid/, crashed/, damaged/, escape/ and empty/ trace dirs
 *   ncs-tracegen corpus DIR     small files of every chunk and record type, and damaged ones
 *                               that exercise resynchronization (seed corpus)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace/flight.h"
#include "tracegen.h"

static void put(const char *dir, const char *name, const void *p, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "ncs-tracegen: cannot write %s: %s\n", path, strerror(errno));
    exit(1);
  }
}

static void mkdirs(const char *dir, const char *sub, char *out, size_t len) {
  snprintf(out, len, "%s%s%s", dir, sub ? "/" : "", sub ? sub : "");
  if (mkdir(out, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "ncs-tracegen: cannot create %s: %s\n", out, strerror(errno));
    exit(1);
  }
}

static void put_sample(const char *dir, const char *name, int nseg, int crash, uint64_t pid) {
  tg_t g;
  tg_init(&g);
  tg_sample(&g, nseg, crash, pid);
  put(dir, name, g.file.p, g.file.len);
  tg_free(&g);
}

static void fixtures(const char *root) {
  char d[512];
  mkdirs(root, NULL, d, sizeof d);
  mkdirs(root, "valid", d, sizeof d);
  put_sample(d, "node1-100.nstrace", 2, 0, 100);
  put_sample(d, "node2-200.nstrace", 1, 0, 200);
  mkdirs(root, "empty", d, sizeof d);
  /* crashed: no footer, and half of a last chunk */
  mkdirs(root, "crashed", d, sizeof d);
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, 1, 300);
  size_t len = g.file.len;
  tg_all_events(&g, 5000000000ull, 500);
  put(d, "node1-300.nstrace", g.file.p, len + (g.file.len - len) / 2);
  tg_free(&g);
  /* damaged: a flipped byte in the middle (the 5th chunk) */
  mkdirs(root, "damaged", d, sizeof d);
  tg_init(&g);
  tg_sample(&g, 1, 0, 400);
  size_t off = NCS_FILE_HEADER_LEN;
  for (int k = 0; k < 4; k++) {
    uint32_t n;
    memcpy(&n, g.file.p + off + 8, 4);
    off += NCS_CHUNK_HEADER_LEN + n;
  }
  g.file.p[off + NCS_CHUNK_HEADER_LEN] ^= 0x55;
  put(d, "node1-400.nstrace", g.file.p, g.file.len);
  tg_free(&g);
  /* escape: hostile strings must stay on one line */
  mkdirs(root, "escape", d, sizeof d);
  tg_init(&g);
  tg_header(&g);
  ncs_segment_info_t s;
  tg_segment_info(&s, 0, 600);
  s.host = "evil\nhost\x1b[31m\xff\xc0" "end"; /* and bytes that are not UTF-8 */
  s.cmdline = "a \"quoted\" arg";
  ncs_enc_segment(&g.pay, &s);
  tg_chunk(&g, NCS_CHUNK_SEGMENT);
  put(d, "evil-600.nstrace", g.file.p, g.file.len);
  tg_free(&g);
}

/* A segment followed by the chunk built by `fn`. */
static void seed(const char *dir, const char *name, void (*fn)(tg_t *)) {
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 77);
  if (fn) fn(&g);
  put(dir, name, g.file.p, g.file.len);
  tg_free(&g);
}

static void c_events(tg_t *g) { tg_all_events(g, 1000000100, 1); }
static void c_counters(tg_t *g) { tg_counters(g, NCS_CHUNK_COUNTERS, 1); }
static void c_footer(tg_t *g) { tg_counters(g, NCS_CHUNK_FOOTER, 1); }
static void c_comm_end(tg_t *g) {
  ncs_enc_comm_end(&g->pay, 0, 1000000900);
  tg_chunk(g, NCS_CHUNK_COMM_END);
}
static void c_unknown(tg_t *g) {
  ncs_buf_bytes(&g->pay, "\x01\x02\x03\x04", 4);
  tg_chunk(g, 42);
}
static void c_loss(tg_t *g) {
  ncs_loss_t l = {.reason = NCS_LOSS_DROPS, .from_ns = 1000000100, .to_ns = 1000000900, .records = 7};
  l.by_type[NCS_T_COLL] = 2, l.by_type[NCS_T_PROXY_STEP] = 5;
  ncs_enc_loss(&g->pay, &l);
  tg_chunk(g, NCS_CHUNK_LOSS);
}
static void c_gpu(tg_t *g) { tg_gpu(g); }
static void c_ranges(tg_t *g) { tg_ranges(g); }
static void c_two_segments(tg_t *g) {
  c_footer(g);
  tg_segment(g, 1, 77);
  c_events(g);
}

/* one EVENTS chunk with one record of `kind` per type */
static void events_of_kind(tg_t *g, uint8_t kind) {
  ncs_event_t e;
  ncs_enc_events_begin(&g->pay, &g->ev, 1000000100);
  for (uint8_t t = 0; t < NCS_T_COUNT; t++) {
    if ((kind == NCS_REC_COMPLETE || kind == NCS_REC_EXPIRED) && t != NCS_T_COLL && t != NCS_T_P2P)
      continue;
    tg_event(&e, kind, t, 1 + t, 1000000200 + 10 * t);
    tg_put_event(g, &e);
  }
  ncs_enc_events_end(&g->pay, &g->ev);
  tg_chunk(g, NCS_CHUNK_EVENTS);
}
static void c_start(tg_t *g) { events_of_kind(g, NCS_REC_START); }
static void c_stop(tg_t *g) { events_of_kind(g, NCS_REC_STOP); }
static void c_state(tg_t *g) { events_of_kind(g, NCS_REC_STATE); }
static void c_complete(tg_t *g) { events_of_kind(g, NCS_REC_COMPLETE); }
static void c_expired(tg_t *g) { events_of_kind(g, NCS_REC_EXPIRED); }

/* format 1.1 (no field lists, fewer fields) and a later format (2 more fields per type) */
static void fields_seed(const char *dir, const char *name, int extra) {
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  tg_segment_lists(&g, 0, 77, extra);
  ncs_event_t e;
  ncs_enc_events_begin(&g.pay, &g.ev, 1000000100);
  for (uint8_t t = 0; t < NCS_T_COUNT; t++) {
    if (extra < 0 && t == NCS_T_KERNEL_PHASE) continue;
    tg_event(&e, NCS_REC_START, t, 1 + t, 1000000200 + 10 * t);
    tg_put_event_lists(&g, &e, extra);
  }
  ncs_enc_events_end(&g.pay, &g.ev);
  tg_chunk(&g, NCS_CHUNK_EVENTS);
  put(dir, name, g.file.p, g.file.len);
  tg_free(&g);
}

/* A small flight file (trace/flight.h) made of a sample trace's chunks: the meta chunks in the
 * meta region, the others spread over 1 KiB ring slots whose seq order differs from their
 * position (the ring has wrapped), the first chunk of each slot counted as its keyframe. ranges:
 * the range chunks of the "ranges" seed follow (RANGE_STATE, RANGES with every record kind; their
 * STRINGS in the meta region). */
static void put_flight(const char *dir, const char *name, int crash, int damage, int ranges) {
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 1, crash, 500);
  if (ranges) tg_ranges(&g);
  enum { SLOT = 1024, NSLOTS = 6, META = 4096 };
  size_t len = NCS_FLIGHT_HDR_LEN + META + (size_t)SLOT * NSLOTS;
  uint8_t *img = calloc(1, len);
  ncs_flight_hdr_t h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, NCS_FLIGHT_MAGIC, 8);
  h.version = NCS_FLIGHT_VERSION, h.hdr_len = NCS_FLIGHT_HDR_LEN, h.file_len = len;
  h.meta_off = NCS_FLIGHT_HDR_LEN, h.meta_cap = META;
  h.ring_off = NCS_FLIGHT_HDR_LEN + META, h.slot_bytes = SLOT, h.nslots = NSLOTS;
  h.state = crash ? NCS_FS_RUNNING : NCS_FS_EXITED, h.pid = 500;
  /* loss windows: one folded earlier, two kept (the newer one still open when killed) */
  h.features = NCS_FLF_LOSS | NCS_FLF_LOSS_T16, h.loss_next_seq = 4;
  h.loss_earlier[0] = (ncs_flight_loss_t){.seq = 1, .reason = NCS_LOSS_DROPS, .from_mono = 1000000000,
                                          .to_mono = 1000000050};
  h.loss_earlier[0].by_type[NCS_T_PROXY_STEP] = 40;
  h.loss[5] = (ncs_flight_loss_t){.seq = 3, .reason = NCS_LOSS_DROPS, .open = (uint32_t)crash,
                                  .from_mono = 1000000300, .to_mono = 1000000400};
  h.loss[5].by_type[NCS_T_COLL] = 1;
  h.loss[2] = (ncs_flight_loss_t){.seq = 2, .reason = NCS_LOSS_NO_SLOT, .from_mono = 1000000100,
                                  .to_mono = 1000000200};
  h.loss[2].by_type[NCS_T_KERNEL_CH] = 3;
  snprintf(h.host, sizeof h.host, "node1");
  memcpy(img + h.meta_off, g.file.p, NCS_FILE_HEADER_LEN);
  h.meta_len = NCS_FILE_HEADER_LEN;
  int slot = 3; /* the ring wrapped: positions 3, 4, 5, 0, 1, ... hold seq 1, 2, 3, ... */
  uint64_t seq = 1;
  ncs_flight_slot_t *cur = NULL;
  for (size_t off = NCS_FILE_HEADER_LEN; off + NCS_CHUNK_HEADER_LEN <= g.file.len;) {
    uint16_t type;
    uint32_t plen;
    memcpy(&type, g.file.p + off + 4, 2);
    memcpy(&plen, g.file.p + off + 8, 4);
    size_t n = NCS_CHUNK_HEADER_LEN + plen;
    if (off + n > g.file.len) break;
    if (type == NCS_CHUNK_SEGMENT || type == NCS_CHUNK_STRINGS || type == NCS_CHUNK_COMM ||
        type == NCS_CHUNK_COMM_END || type == NCS_CHUNK_THREAD) {
      if (h.meta_len + n <= META) memcpy(img + h.meta_off + h.meta_len, g.file.p + off, n), h.meta_len += n;
    } else if (n + NCS_FLIGHT_SLOT_HDR <= SLOT) {
      if (!cur || cur->used + n > SLOT - NCS_FLIGHT_SLOT_HDR) {
        cur = (ncs_flight_slot_t *)(img + h.ring_off + (size_t)(slot % NSLOTS) * SLOT);
        memset(cur, 0, SLOT);
        cur->seq = seq++;
        slot++;
      }
      memcpy((uint8_t *)cur + NCS_FLIGHT_SLOT_HDR + cur->used, g.file.p + off, n);
      /* the ranges' slot is read whole (a later slot's keyframe is skipped: it restates) */
      if (!cur->used && !(ranges && type == NCS_CHUNK_RANGES)) cur->kf_len = (uint32_t)n;
      cur->used += (uint32_t)n;
    }
    off += n;
  }
  h.next_seq = seq;
  memcpy(img, &h, sizeof h);
  /* damage: a flipped byte in the first chunk of the oldest slot (position 3), which is read
   * whole: the reader skips that chunk and reads the slots after it */
  if (damage) img[h.ring_off + 3 * (size_t)SLOT + NCS_FLIGHT_SLOT_HDR + NCS_CHUNK_HEADER_LEN + 1] ^= 0x20;
  put(dir, name, img, len);
  free(img);
  tg_free(&g);
}

/* Damage in the middle of a two-segment sample, for the reader's resynchronization: each seed
 * has valid chunks after the damage. */
static size_t nth_chunk(const tg_t *g, int k) {
  size_t off = NCS_FILE_HEADER_LEN;
  for (int i = 0; i < k; i++) {
    uint32_t n;
    memcpy(&n, g->file.p + off + 8, 4);
    off += NCS_CHUNK_HEADER_LEN + n;
  }
  return off;
}

static void damaged_seeds(const char *d) {
  tg_t g;
  tg_init(&g);
  tg_sample(&g, 2, 1, 99);
  size_t len = g.file.len, ev = nth_chunk(&g, 7), next = nth_chunk(&g, 8);
  uint8_t *b = malloc(2 * len);
  /* torn: the first EVENTS chunk cut to a third, the chunks after it appended whole */
  size_t keep = (next - ev) / 3;
  memcpy(b, g.file.p, ev + keep);
  memcpy(b + ev + keep, g.file.p + next, len - next);
  put(d, "torn-chunk", b, len - (next - ev - keep));
  /* one flipped bit inside it */
  memcpy(b, g.file.p, len);
  b[ev + NCS_CHUNK_HEADER_LEN + 5] ^= 0x10;
  put(d, "flipped-bit", b, len);
  /* its length field too large, valid chunks after it */
  memcpy(b, g.file.p, len);
  b[ev + 10] = 0x40;
  put(d, "bad-length", b, len);
  /* zeros over the end of one chunk and the header of the next (a dead disk block), and over
   * the second segment's SEGMENT and CLOCK chunks (a recovered segment) */
  memcpy(b, g.file.p, len);
  memset(b + next - 7, 0, 7 + NCS_CHUNK_HEADER_LEN);
  size_t seg2 = nth_chunk(&g, 12), strings2 = nth_chunk(&g, 14);
  memset(b + seg2, 0, strings2 - seg2);
  put(d, "zeroed-resync", b, len);
  /* the first EVENTS chunk written twice */
  memcpy(b, g.file.p, next);
  memcpy(b + next, g.file.p + ev, next - ev);
  memcpy(b + next + (next - ev), g.file.p + next, len - next);
  put(d, "duplicate-chunk", b, len + (next - ev));
  /* 1 KiB of zeros (what a hole reads as) between the two segments */
  memcpy(b, g.file.p, seg2);
  memset(b + seg2, 0, 1024);
  memcpy(b + seg2 + 1024, g.file.p + seg2, len - seg2);
  put(d, "hole", b, len + 1024);
  /* the STRINGS chunk lost: records name strings never defined */
  size_t st = nth_chunk(&g, 2), st_end = nth_chunk(&g, 3);
  memcpy(b, g.file.p, st);
  memcpy(b + st, g.file.p + st_end, len - st_end);
  put(d, "lost-strings", b, len - (st_end - st));
  free(b);
  tg_free(&g);
}

static void corpus(const char *root) {
  char d[512];
  mkdirs(root, NULL, d, sizeof d);
  uint8_t h[NCS_FILE_HEADER_LEN];
  ncs_file_header(h);
  put(d, "header-only", h, sizeof h);
  seed(d, "segment", NULL);
  seed(d, "events-all", c_events);
  seed(d, "events-start", c_start);
  seed(d, "events-stop", c_stop);
  seed(d, "events-state", c_state);
  seed(d, "events-complete", c_complete);
  seed(d, "events-expired", c_expired);
  seed(d, "counters", c_counters);
  seed(d, "footer", c_footer);
  seed(d, "comm-end", c_comm_end);
  seed(d, "unknown-chunk", c_unknown);
  seed(d, "two-segments", c_two_segments);
  seed(d, "loss", c_loss);
  seed(d, "gpu", c_gpu);
  seed(d, "ranges", c_ranges);
  put_sample(d, "sample-crashed", 1, 1, 88);
  fields_seed(d, "fields-format-1.1", -1);
  fields_seed(d, "fields-later", 2);
  put_flight(d, "flight-exited", 0, 0, 0);
  put_flight(d, "flight-killed", 1, 0, 0);
  put_flight(d, "flight-damaged-slot", 0, 1, 0);
  put_flight(d, "flight-ranges", 1, 0, 1);
  damaged_seeds(d);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "fixtures")) {
    fixtures(argv[2]);
    return 0;
  }
  if (argc == 3 && !strcmp(argv[1], "corpus")) {
    corpus(argv[2]);
    return 0;
  }
  fprintf(stderr, "usage: ncs-tracegen fixtures|corpus DIR\n");
  return 2;
}
