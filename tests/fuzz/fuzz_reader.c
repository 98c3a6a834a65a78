/* fuzz_reader.c - libFuzzer target for the trace reader.
 *
 * Opens the input with ncs_reader_open_mem and drains every item, checking the promises the
 * tools rely on (kinds and types in range, strings resolved or flagged lost, counts bounded,
 * GAP items that tile the skipped bytes, damage accounting that matches the items). A broken
 * promise traps, so the fuzzer reports it like a crash. replay_main.c runs the same function over
 * the corpus in every build.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) __builtin_trap();                                                                    \
  } while (0)

static void check_event(const ncs_reader_t *r, const ncs_event_t *e) {
  CHECK(e->kind >= NCS_REC_START && e->kind <= NCS_REC_MAX);
  CHECK(e->type < NCS_T_COUNT);
  CHECK(e->lost <= (NCS_LOST_STRING | NCS_LOST_COMM));
  if (e->kind != NCS_REC_START) {
    CHECK(!e->lost);
    return;
  }
  CHECK(e->ctx_kind <= NCS_CTX_INVALID && e->parent_kind <= NCS_REF_STALE);
  CHECK(!(e->lost & NCS_LOST_COMM) || e->ctx_kind == NCS_CTX_LOCAL);
  /* fewer fields in a file written before some were appended; those it lacks read as 0 */
  CHECK(e->nfields <= ncs_schema[e->type].nfields);
  for (unsigned i = e->nfields; i < ncs_schema[e->type].nfields; i++)
    CHECK(!e->f[i] && !e->fstr[i] && !e->fref_kind[i]);
  int unresolved = 0;
  for (unsigned i = 0; i < e->nfields; i++) {
    uint8_t k = ncs_schema[e->type].fields[i].kind;
    /* a string id resolves, or the record says a string was lost */
    if (k == NCS_FK_STR && e->f[i] == 0) CHECK(e->fstr[i] == NULL);
    if (k == NCS_FK_STR && e->f[i] && !e->fstr[i]) unresolved = 1;
    if (k == NCS_FK_STR && e->fstr[i]) CHECK(e->fstr[i] == ncs_reader_string(r, e->f[i]));
    if (k == NCS_FK_STR && e->fstr[i]) CHECK(strlen(e->fstr[i]) <= NCS_STRING_MAX);
    if (k == NCS_FK_REF) CHECK(e->fref_kind[i] <= NCS_REF_STALE);
    if (k == NCS_FK_BOOL) CHECK(e->f[i] <= 1);
  }
  CHECK(unresolved == !!(e->lost & NCS_LOST_STRING));
}

static void check_gpu(const ncs_reader_t *r, const ncs_item_t *it) {
  if (it->what == NCS_ITEM_GPU_STATE) {
    const ncs_gpu_state_t *s = &it->gpu_state;
    CHECK(s->state < NCS_GPU_NSTATES && s->ncounters <= NCS_GPU_MAX_COUNTERS);
    CHECK(s->reason && s->library && s->holder);
    CHECK(strlen(s->reason) <= NCS_STRING_MAX && strlen(s->library) <= NCS_STRING_MAX);
    return;
  }
  const ncs_gpu_rec_t *g = &it->gpu;
  CHECK(g->kind >= NCS_GR_KERNEL && g->kind <= NCS_GR_MAX);
  CHECK(g->name == NULL || g->name == ncs_reader_string(r, g->name_id));
  CHECK(g->name == NULL || strlen(g->name) <= NCS_STRING_MAX);
}

static void check_range(const ncs_reader_t *r, const ncs_item_t *it) {
  if (it->what == NCS_ITEM_RANGE_STATE) {
    const ncs_range_state_t *s = &it->range_state;
    CHECK(s->nvtx_path && s->reason && s->chip);
    CHECK(s->nmetrics <= NCS_RANGE_MAX_METRICS && s->ncounters <= NCS_RANGE_MAX_COUNTERS);
    for (uint32_t i = 0; i < s->nmetrics; i++) CHECK(s->metric[i] && strlen(s->metric[i]) <= NCS_STRING_MAX);
    return;
  }
  const ncs_range_rec_t *g = &it->range;
  CHECK(g->kind >= NCS_RR_BEGIN && g->kind <= NCS_RR_MAX && g->nvalues <= NCS_RANGE_MAX_METRICS);
  CHECK(g->name == NULL || g->name == ncs_reader_string(r, g->name_id));
  CHECK(g->domain == NULL || g->domain == ncs_reader_string(r, g->domain_id));
  CHECK(g->name == NULL || strlen(g->name) <= NCS_STRING_MAX);
}

/* what the items said, to compare with ncs_reader_damage_info at the end */
typedef struct {
  uint32_t gaps, recovered;
  uint64_t gap_bytes, lost;
} seen_t;

static void check_item(const ncs_reader_t *r, const ncs_item_t *it, size_t size, seen_t *sn) {
  const ncs_segment_info_t *s = ncs_reader_segment(r);
  if (it->what == NCS_ITEM_GAP) { /* may come first; it ends where reading goes on */
    /* 0 bytes: an EVENTS chunk whose records end before its count says */
    CHECK(it->gap.offset >= NCS_FILE_HEADER_LEN);
    CHECK(it->gap.offset + it->gap.bytes == ncs_reader_offset(r) && ncs_reader_offset(r) <= size);
    CHECK(it->gap.why && it->gap.why[0]);
    sn->gaps++, sn->gap_bytes += it->gap.bytes;
    return;
  }
  CHECK(s != NULL); /* every other item comes after a SEGMENT */
  if (it->what == NCS_ITEM_SEGMENT) sn->recovered += s->recovered != 0;
  if (it->what == NCS_ITEM_SEGMENT && s->recovered) CHECK(!s->start_mono_ns && !s->start_realtime_ns);
  if (it->what == NCS_ITEM_EVENT) sn->lost += it->ev.lost != 0;
  CHECK(s->host && s->plugin_version && s->cmdline);
  CHECK(strlen(s->host) <= NCS_STRING_MAX && strlen(s->cmdline) <= NCS_STRING_MAX);
  switch (it->what) {
  case NCS_ITEM_COMM: CHECK(it->comm.name != NULL); break;
  case NCS_ITEM_THREAD: CHECK(it->thread_name != NULL); break;
  case NCS_ITEM_EVENT: check_event(r, &it->ev); break;
  case NCS_ITEM_COUNTERS:
  case NCS_ITEM_FOOTER: CHECK(it->counters && it->counters->nkeys <= 512); break;
  case NCS_ITEM_LOSS: {
    uint64_t sum = 0;
    CHECK(it->loss.reason != 0 && it->loss.from_ns <= it->loss.to_ns);
    for (unsigned t = 0; t < NCS_T_COUNT; t++) {
      CHECK(it->loss.by_type[t] <= it->loss.records - sum); /* the types add up to at most the total */
      sum += it->loss.by_type[t];
    }
    break;
  }
  case NCS_ITEM_GPU_STATE:
  case NCS_ITEM_GPU: check_gpu(r, it); break;
  case NCS_ITEM_RANGE_STATE:
  case NCS_ITEM_RANGE: check_range(r, it); break;
  default: CHECK(it->what >= NCS_ITEM_SEGMENT && it->what <= NCS_ITEM_FOOTER);
  }
}

static void read_all(const uint8_t *data, size_t size) {
  char err[256];
  ncs_reader_t *r = ncs_reader_open_mem(data, size, err, sizeof err);
  if (!r) {
    CHECK(err[0] != 0);
    return;
  }
  ncs_item_t it;
  int rc;
  uint64_t last = 0;
  seen_t sn = {0};
  while ((rc = ncs_reader_next(r, &it)) > 0) {
    check_item(r, &it, size, &sn);
    uint64_t off = ncs_reader_offset(r);
    CHECK(off >= last && off <= size); /* the reader only moves forward, within the input */
    last = off;
  }
  CHECK(rc == 0 || rc == -1);
  CHECK((rc == -1) == (ncs_reader_error(r)[0] != 0));
  CHECK((rc == -1) == (ncs_reader_damage(r) != NCS_DAMAGE_NONE));
  /* the damage summary counts exactly what the items showed */
  ncs_damage_t d;
  ncs_reader_damage_info(r, &d);
  CHECK(d.gaps == sn.gaps && d.gap_bytes == sn.gap_bytes);
  CHECK(d.lost_refs == sn.lost && d.lost_segments == sn.recovered);
  CHECK(d.tail <= NCS_TAIL_LOST && d.tail_offset + d.tail_bytes <= size);
  CHECK((ncs_reader_damage(r) == NCS_DAMAGE_TRUNCATED) ==
        (d.tail == NCS_TAIL_TRUNCATED && !d.gaps && !d.lost_refs && !d.lost_segments && !d.bad_slots &&
         !d.out_of_order && !d.foreign_segments));
  CHECK(d.foreign_segments <= d.gaps); /* each is skipped as a gap */
  CHECK(ncs_reader_next(r, &it) == rc);
  ncs_reader_close(r);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Give every whole chunk its correct CRC, so that mutations inside payloads reach the decoders
 * instead of stopping at the checksum. Where the framing breaks, the next chunk magic is looked
 * for and fixed from there on, so that damage is followed by valid chunks and the reader's
 * resynchronization is exercised too. The reader itself stays exactly as shipped. */
static void fix_crcs(uint8_t *p, size_t size) {
  size_t off = NCS_FILE_HEADER_LEN;
  while (off <= size && size - off >= NCS_CHUNK_HEADER_LEN) {
    uint32_t len = le32(p + off + 8);
    if (le32(p + off) != NCS_CHUNK_MAGIC || len > size - off - NCS_CHUNK_HEADER_LEN) {
      off++;
      continue;
    }
    uint32_t crc = ncs_crc32c(ncs_crc32c(0, p + off + 4, 8), p + off + NCS_CHUNK_HEADER_LEN, len);
    for (int i = 0; i < 4; i++) p[off + 12 + i] = (uint8_t)(crc >> (8 * i));
    off += NCS_CHUNK_HEADER_LEN + (size_t)len;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  read_all(data, size); /* as is: framing, checksums, truncation */
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  fix_crcs(copy, size);
  read_all(copy, size); /* with good checksums: the payload decoders */
  free(copy);
  return 0;
}
