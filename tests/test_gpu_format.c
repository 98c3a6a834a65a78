/* test_gpu_format.c - the GPU chunks of format 1.2 (trace/gpu.h) through the encoder and the
 * reader: every record kind and the GPU_STATE round-trip field by field; unknown record kinds
 * and bytes after known fields are skipped; damaged records and states are refused with the
 * offset of the damage; an unknown chunk type of the GPU range is skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/reader.h"
#include "tracegen.h"

static int fails;
#define EXPECT(c, ...)                                                                             \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fails++;                                                                                     \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #c);                                      \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

/* Read every item of a crafted file; returns the reader's last result (0 end, -1 damage). */
static int read_all(tg_t *g, ncs_item_t *items, int max, int *n, char *err, size_t errlen) {
  ncs_reader_t *r = ncs_reader_open_mem(g->file.p, g->file.len, err, errlen);
  if (!r) return -2;
  int rc;
  *n = 0;
  ncs_item_t it;
  while ((rc = ncs_reader_next(r, &it)) > 0)
    if ((it.what == NCS_ITEM_GPU || it.what == NCS_ITEM_GPU_STATE) && *n < max) {
      /* the reader's strings die with it */
      if (it.what == NCS_ITEM_GPU && it.gpu.name) it.gpu.name = strdup(it.gpu.name);
      if (it.what == NCS_ITEM_GPU_STATE) {
        it.gpu_state.reason = strdup(it.gpu_state.reason);
        it.gpu_state.library = strdup(it.gpu_state.library);
        it.gpu_state.holder = strdup(it.gpu_state.holder);
      }
      items[(*n)++] = it;
    }
  snprintf(err, errlen, "%s", ncs_reader_error(r));
  ncs_reader_close(r);
  return rc;
}

static void same_rec(const ncs_gpu_rec_t *a, const ncs_gpu_rec_t *b) {
  EXPECT(a->kind == b->kind && a->flags == b->flags, "kind %u/%u flags %u/%u", a->kind, b->kind, a->flags, b->flags);
  int host = a->kind == NCS_GR_LAUNCH || a->kind == NCS_GR_GLAUNCH || a->kind == NCS_GR_PENDING;
  if (host) EXPECT(a->ts == b->ts && a->thread == b->thread, "%s time", ncs_gpu_rec_name(a->kind));
  switch (a->kind) {
  case NCS_GR_KERNEL:
    EXPECT(a->corr == b->corr && a->start == b->start && a->end == b->end && a->device == b->device &&
               a->stream == b->stream && a->name_id == b->name_id && a->graph == b->graph &&
               a->node == b->node && a->launch == b->launch && a->replay == b->replay,
           "KERNEL fields");
    EXPECT(b->name && !strcmp(b->name, tg_strings[1]), "kernel name %s", b->name ? b->name : "(null)");
    break;
  case NCS_GR_LAUNCH:
  case NCS_GR_PENDING:
    EXPECT(a->corr == b->corr && a->launch == b->launch && a->comm == b->comm && a->group == b->group &&
               a->stream == b->stream && (a->kind == NCS_GR_LAUNCH || a->graph == b->graph),
           "%s fields", ncs_gpu_rec_name(a->kind));
    break;
  case NCS_GR_GNODE:
    EXPECT(a->launch == b->launch && a->corr == b->corr && a->node == b->node && a->graph == b->graph, "GNODE");
    break;
  case NCS_GR_GEXEC: EXPECT(a->graph == b->graph && a->orig == b->orig, "GEXEC"); break;
  case NCS_GR_GCLONE: EXPECT(a->node == b->node && a->orig == b->orig && a->launch == b->launch, "GCLONE"); break;
  case NCS_GR_GLAUNCH: EXPECT(a->corr == b->corr && a->graph == b->graph && a->stream == b->stream, "GLAUNCH"); break;
  case NCS_GR_SUMMARY:
    EXPECT(a->device == b->device && a->stream == b->stream && a->count == b->count &&
               a->busy_ns == b->busy_ns && a->start == b->start && a->end == b->end, "SUMMARY");
    break;
  }
}

static void round_trip(void) {
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 77);
  tg_gpu(&g);
  ncs_item_t items[64];
  int n;
  char err[256];
  int rc = read_all(&g, items, 64, &n, err, sizeof err);
  EXPECT(rc == 0, "read: %s", err);
  EXPECT(n == 1 + 2 * NCS_GR_MAX, "%d GPU items", n);
  ncs_gpu_state_t s;
  tg_gpu_state(&s);
  const ncs_gpu_state_t *d = &items[0].gpu_state;
  EXPECT(items[0].what == NCS_ITEM_GPU_STATE && d->state == s.state && d->flags == s.flags &&
             d->since_ns == s.since_ns && !strcmp(d->library, s.library) && d->api_version == s.api_version &&
             d->clock_mono_ns == s.clock_mono_ns && d->clock_cupti_ns == s.clock_cupti_ns &&
             d->clock_width_ns == s.clock_width_ns && d->ncounters == s.ncounters,
         "GPU_STATE");
  for (uint32_t i = 0; i < s.ncounters && i < d->ncounters; i++)
    EXPECT(d->keys[i] == s.keys[i] && d->values[i] == s.values[i], "counter %u", i);
  free((void *)d->reason), free((void *)d->library), free((void *)d->holder);
  int k = 1;
  for (uint32_t i = 0; i < 2; i++)
    for (uint8_t kind = NCS_GR_KERNEL; kind <= NCS_GR_MAX && k < n; kind++, k++) {
      ncs_gpu_rec_t want;
      tg_gpu_rec(&want, kind, i);
      EXPECT(items[k].what == NCS_ITEM_GPU, "item %d", k);
      same_rec(&want, &items[k].gpu);
      free((void *)items[k].gpu.name);
    }
  tg_free(&g);
}

/* A GPU chunk of raw records (kind, length, bytes...) after a valid KERNEL. */
static int raw_chunk(const uint8_t *extra, size_t n, ncs_item_t *items, int *nitems, char *err) {
  tg_t g;
  tg_init(&g);
  tg_header(&g);
  tg_segment(&g, 0, 77);
  ncs_gpu_chunk_t c;
  ncs_gpu_enc_begin(&g.pay, &c, 1000000100, 1700000000000000900ull);
  ncs_gpu_rec_t r;
  tg_gpu_rec(&r, NCS_GR_GEXEC, 0);
  ncs_gpu_enc_rec(&g.pay, &c, &r);
  ncs_buf_bytes(&g.pay, extra, n);
  c.count += 1;
  ncs_gpu_enc_rec(&g.pay, &c, &r); /* one more after it */
  ncs_gpu_enc_end(&g.pay, &c);
  tg_chunk(&g, NCS_CHUNK_GPU);
  ncs_buf_bytes(&g.pay, "\x01\x02", 2); /* an unknown chunk type (15 is reserved) */
  tg_chunk(&g, 15);
  int rc = read_all(&g, items, 16, nitems, err, 256);
  tg_free(&g);
  return rc;
}

static void robustness(void) {
  ncs_item_t it[16];
  int n;
  char err[256];
  /* an unknown kind (99) with 3 bytes: skipped, the record after it is read */
  static const uint8_t unknown[] = {99, 3, 1, 2, 3};
  EXPECT(raw_chunk(unknown, sizeof unknown, it, &n, err) == 0 && n == 2, "unknown kind: rc %s n %d", err, n);
  /* a GEXEC with two bytes after its fields: ignored */
  static const uint8_t longer[] = {NCS_GR_GEXEC, 5, 0, 7, 8, 0x55, 0x66};
  EXPECT(raw_chunk(longer, sizeof longer, it, &n, err) == 0 && n == 3 && it[1].gpu.graph == 7 && it[1].gpu.orig == 8,
         "trailing bytes: %s n %d", err, n);
  /* a GEXEC whose fields run past its length: damage, named */
  static const uint8_t shortrec[] = {NCS_GR_GEXEC, 2, 0, 7, NCS_GR_GEXEC, 3, 0, 1, 1};
  EXPECT(raw_chunk(shortrec, sizeof shortrec, it, &n, err) == -1 && strstr(err, "GPU"), "short record: %s", err);
  /* a length past the chunk's end */
  static const uint8_t past[] = {NCS_GR_KERNEL, 120, 0};
  EXPECT(raw_chunk(past, sizeof past, it, &n, err) == -1 && strstr(err, "runs past"), "long record: %s", err);
  /* a GPU_STATE of an unknown state, and one with 65 counters */
  for (int bad = 0; bad < 2; bad++) {
    tg_t g;
    tg_init(&g);
    tg_header(&g);
    tg_segment(&g, 0, 77);
    ncs_gpu_state_t s;
    tg_gpu_state(&s);
    if (bad == 0) s.state = NCS_GPU_NSTATES;
    ncs_gpu_enc_state(&g.pay, &s);
    if (bad == 1) { /* no counters, then the count (the last byte) patched to 65, and 65 pairs */
      ncs_buf_reset(&g.pay);
      s.ncounters = 0;
      ncs_gpu_enc_state(&g.pay, &s);
      g.pay.p[g.pay.len - 1] = 65;
      for (int k = 0; k < 65; k++) ncs_buf_bytes(&g.pay, "\x01\x01", 2);
    }
    tg_chunk(&g, NCS_CHUNK_GPU_STATE);
    int rc = read_all(&g, it, 16, &n, err, sizeof err);
    EXPECT(rc == -1 && n == 0, "bad state %d: rc %d %s", bad, rc, err);
    tg_free(&g);
  }
}

int main(void) {
  round_trip();
  robustness();
  if (fails) {
    fprintf(stderr, "gpu format: %d FAILED\n", fails);
    return 1;
  }
  printf("gpu format: ok\n");
  return 0;
}
