/* trace_rehost.c - test tool: rewrite a trace file as if another host had written it.
 *
 *   ncs-trace-rehost IN OUT [--host NAME] [--mono-shift NS] [--realtime-shift NS]
 *                    [--gpu-shift NS]
 *
 * Copies IN (a .nstrace file, docs/trace-format.md) chunk by chunk to OUT with new CRCs:
 * - --host: the SEGMENT's host name;
 * - --mono-shift: added to every CLOCK_MONOTONIC time: SEGMENT start, CLOCK pairs' monotonic
 *   side, COMM init, COMM_END, each EVENTS chunk's base (which moves every START, STOP, STATE
 *   and BADCALL time), COMPLETE end and first-child times, EXPIRED start times, and the
 *   counters' "taken at" time (key 0x10);
 * - --realtime-shift: added to the SEGMENT's start realtime and the CLOCK pairs' realtime side:
 *   the other host's wall clock is off by this much;
 * - --gpu-shift (default: the monotonic shift: a GPU clock in a time base of its own, as with
 *   nccl-sim --gpu-clock monotonic; nccl-sim's default GPU clock follows CLOCK_REALTIME, which
 *   --gpu-shift with the realtime shift rewrites as such): added to the GPU timestamps: KernelCh and KernelPhase pTimer (START field
 *   and STATE arg0) and COMPLETE GPU start and stop. Zero times (unknown) stay zero.
 * GPU chunks (format 1.2): GPU_STATE's time, clock pair and last-flush counter, and each GPU
 * chunk's two bases move with the monotonic shift, or the realtime shift for CUPTI's times
 * (CLOCK_REALTIME on Linux). Range chunks (format 1.4): RANGE_STATE's time and each RANGES
 * chunk's base move with the monotonic shift.
 * Everything else is copied as is, unknown trailing payload bytes included. A chunk that does not
 * decode is an error (exit 1): the tool is for well-formed files. Used by tests/clocks_check.sh to
 * turn one host's recording into a two-host job with known clock offsets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/encode.h"
#include "trace/format.h"

typedef struct {
  const uint8_t *p, *end;
  int bad;
} cur_t;

static uint64_t get(cur_t *c) {
  uint64_t v = 0;
  size_t n = c->bad ? 0 : ncs_get_varint(c->p, c->end, &v);
  if (!n) {
    c->bad = 1;
    return 0;
  }
  c->p += n;
  return v;
}

/* copy one varint, adding `shift` unless it is zero */
static void shifted(cur_t *c, ncs_buf_t *o, int64_t shift) {
  uint64_t v = get(c);
  ncs_buf_varint(o, v ? v + (uint64_t)shift : 0);
}
static void copy1(cur_t *c, ncs_buf_t *o) { ncs_buf_varint(o, get(c)); }
static void copy_str(cur_t *c, ncs_buf_t *o) {
  uint64_t n = get(c);
  if (c->bad || n > (uint64_t)(c->end - c->p) || n > NCS_STRING_MAX) {
    c->bad = 1;
    return;
  }
  ncs_buf_varint(o, n);
  ncs_buf_bytes(o, c->p, (size_t)n);
  c->p += n;
}
static void copy_rest(cur_t *c, ncs_buf_t *o) {
  if (!c->bad && c->p < c->end) ncs_buf_bytes(o, c->p, (size_t)(c->end - c->p));
  c->p = c->end;
}

typedef struct {
  const char *host;
  int64_t mono, real, gpu;
} opts_t;

static void rewrite_events(cur_t *c, ncs_buf_t *o, const opts_t *op) {
  shifted(c, o, op->mono); /* base: every delta-coded time moves with it */
  uint64_t count = get(c);
  ncs_buf_varint(o, count);
  for (uint64_t i = 0; i < count && !c->bad; i++) {
    if (c->end - c->p < 2) {
      c->bad = 1;
      break;
    }
    uint8_t kind = c->p[0], type = c->p[1];
    ncs_buf_bytes(o, c->p, 2);
    c->p += 2;
    if (type >= NCS_T_COUNT) c->bad = 1;
    switch (c->bad ? 0 : kind) {
    case NCS_REC_START: {
      for (int k = 0; k < 8; k++) copy1(c, o); /* thread dts id ctxkind ctx pkind parent rank */
      copy1(c, o);                             /* flags */
      const ncs_schema_t *s = &ncs_schema[type];
      for (unsigned f = 0; f < s->nfields; f++) {
        if (s->fields[f].kind == NCS_FK_REF) copy1(c, o);
        if ((type == NCS_T_KERNEL_CH || type == NCS_T_KERNEL_PHASE) && !strcmp(s->fields[f].name, "pTimer"))
          shifted(c, o, op->gpu);
        else
          copy1(c, o);
      }
      break;
    }
    case NCS_REC_STOP:
      for (int k = 0; k < 3; k++) copy1(c, o);
      break;
    case NCS_REC_STATE:
      for (int k = 0; k < 4; k++) copy1(c, o); /* thread dts id state */
      if (type == NCS_T_KERNEL_CH || type == NCS_T_KERNEL_PHASE)
        shifted(c, o, op->gpu); /* pTimer */
      else
        copy1(c, o);
      copy1(c, o);
      break;
    case NCS_REC_COMPLETE:
      copy1(c, o), copy1(c, o);                       /* id flags */
      shifted(c, o, op->mono), shifted(c, o, op->mono); /* end, first child start */
      shifted(c, o, op->gpu), shifted(c, o, op->gpu);   /* GPU start, stop */
      for (int k = 0; k < 3; k++) copy1(c, o);
      break;
    case NCS_REC_EXPIRED:
      copy1(c, o), copy1(c, o);
      shifted(c, o, op->mono);
      break;
    case NCS_REC_BADCALL:
      for (int k = 0; k < 7; k++) copy1(c, o);
      break;
    default: c->bad = 1; break;
    }
  }
  copy_rest(c, o);
}

static int rewrite(uint16_t type, cur_t *c, ncs_buf_t *o, const opts_t *op) {
  switch (type) {
  case NCS_CHUNK_SEGMENT:
    copy1(c, o), copy_str(c, o); /* format version, plugin version */
    if (op->host) {
      uint64_t n = get(c);
      if (!c->bad && n <= (uint64_t)(c->end - c->p)) c->p += n; else c->bad = 1;
      ncs_buf_str(o, op->host);
    } else {
      copy_str(c, o);
    }
    for (int k = 0; k < 4; k++) copy1(c, o); /* pid epoch mode mask */
    shifted(c, o, op->real), shifted(c, o, op->mono);
    copy_rest(c, o); /* command line, pool bytes, later fields */
    break;
  case NCS_CHUNK_CLOCK:
    shifted(c, o, op->mono), shifted(c, o, op->real);
    copy_rest(c, o);
    break;
  case NCS_CHUNK_COMM:
    copy1(c, o), copy1(c, o), copy_str(c, o); /* index commId name */
    for (int k = 0; k < 4; k++) copy1(c, o);   /* nranks nnodes rank abi */
    shifted(c, o, op->mono);                   /* init */
    copy_rest(c, o);
    break;
  case NCS_CHUNK_COMM_END:
    copy1(c, o), shifted(c, o, op->mono);
    copy_rest(c, o);
    break;
  case NCS_CHUNK_EVENTS: rewrite_events(c, o, op); break;
  case NCS_CHUNK_GPU_STATE: {
    copy1(c, o), copy1(c, o), shifted(c, o, op->mono); /* state flags since */
    copy_str(c, o), copy_str(c, o), copy1(c, o), copy_str(c, o); /* reason library version holder */
    shifted(c, o, op->mono), shifted(c, o, op->real), copy1(c, o); /* the clock pair, its width */
    uint64_t n = get(c);
    ncs_buf_varint(o, n);
    for (uint64_t i = 0; i < n && !c->bad; i++) {
      uint64_t k = get(c);
      ncs_buf_varint(o, k);
      if (k == 19) /* NCS_GK_FLUSH_NS */
        shifted(c, o, op->mono);
      else
        copy1(c, o);
    }
    copy_rest(c, o);
    break;
  }
  case NCS_CHUNK_GPU: /* records are deltas from the two bases */
    shifted(c, o, op->mono), shifted(c, o, op->real);
    copy_rest(c, o);
    break;
  case NCS_CHUNK_RANGE_STATE:
    copy1(c, o), copy1(c, o), copy_str(c, o), copy1(c, o); /* flags nvtx path state */
    shifted(c, o, op->mono);                               /* since */
    copy_rest(c, o);
    break;
  case NCS_CHUNK_RANGES: /* host times are deltas from the base */
    shifted(c, o, op->mono);
    copy_rest(c, o);
    break;
  case NCS_CHUNK_COUNTERS:
  case NCS_CHUNK_FOOTER:
    while (c->p < c->end && !c->bad) {
      uint64_t k = get(c);
      ncs_buf_varint(o, k);
      if (k == NCS_CK_END_NS)
        shifted(c, o, op->mono);
      else
        copy1(c, o);
    }
    break;
  default: copy_rest(c, o); break; /* STRINGS, THREAD, unknown types */
  }
  return c->bad || o->overflow ? -1 : 0;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int64_t num(const char *s) {
  char *e;
  errno = 0;
  long long v = strtoll(s, &e, 0);
  if (errno || *e || e == s) {
    fprintf(stderr, "ncs-trace-rehost: not a number: %s\n", s);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  opts_t op = {0};
  const char *in = NULL, *out = NULL;
  int gpu_set = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--host") && v) op.host = v, i++;
    else if (!strcmp(a, "--mono-shift") && v) op.mono = num(v), i++;
    else if (!strcmp(a, "--realtime-shift") && v) op.real = num(v), i++;
    else if (!strcmp(a, "--gpu-shift") && v) op.gpu = num(v), gpu_set = 1, i++;
    else if (a[0] != '-' && !in) in = a;
    else if (a[0] != '-' && !out) out = a;
    else {
      fprintf(stderr, "usage: ncs-trace-rehost IN OUT [--host NAME] [--mono-shift NS] "
                      "[--realtime-shift NS] [--gpu-shift NS]\n");
      return 2;
    }
  }
  if (!in || !out) {
    fprintf(stderr, "ncs-trace-rehost: need IN and OUT\n");
    return 2;
  }
  if (!gpu_set) op.gpu = op.mono;
  FILE *f = fopen(in, "rb");
  if (!f) {
    fprintf(stderr, "ncs-trace-rehost: %s: %s\n", in, strerror(errno));
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
  if (!buf || size < NCS_FILE_HEADER_LEN || fread(buf, 1, (size_t)size, f) != (size_t)size ||
      memcmp(buf, NCS_FILE_MAGIC, NCS_FILE_MAGIC_LEN)) {
    fprintf(stderr, "ncs-trace-rehost: %s: not a trace file\n", in);
    return 1;
  }
  fclose(f);
  FILE *o = fopen(out, "wb");
  if (!o) {
    fprintf(stderr, "ncs-trace-rehost: %s: %s\n", out, strerror(errno));
    return 1;
  }
  fwrite(buf, 1, NCS_FILE_HEADER_LEN, o);
  ncs_buf_t pay;
  if (ncs_buf_init(&pay, NCS_CHUNK_MAX_PAYLOAD + 4096) != 0) abort();
  size_t off = NCS_FILE_HEADER_LEN;
  int rc = 0, chunks = 0;
  while (off + NCS_CHUNK_HEADER_LEN <= (size_t)size) {
    const uint8_t *h = buf + off;
    uint32_t len = le32(h + 8);
    uint16_t type = (uint16_t)(h[4] | h[5] << 8);
    if (le32(h) != NCS_CHUNK_MAGIC || len > (size_t)size - off - NCS_CHUNK_HEADER_LEN ||
        ncs_crc32c(ncs_crc32c(0, h + 4, 8), h + NCS_CHUNK_HEADER_LEN, len) != le32(h + 12)) {
      fprintf(stderr, "ncs-trace-rehost: %s: damaged chunk at offset %zu; stopping there\n", in, off);
      rc = 1;
      break;
    }
    cur_t c = {h + NCS_CHUNK_HEADER_LEN, h + NCS_CHUNK_HEADER_LEN + len, 0};
    ncs_buf_reset(&pay);
    if (rewrite(type, &c, &pay, &op) != 0) {
      fprintf(stderr, "ncs-trace-rehost: %s: chunk type %u at offset %zu does not decode\n", in,
              type, off);
      rc = 1;
      break;
    }
    uint8_t nh[NCS_CHUNK_HEADER_LEN];
    ncs_chunk_header(nh, type, pay.p, (uint32_t)pay.len);
    fwrite(nh, 1, sizeof nh, o);
    fwrite(pay.p, 1, pay.len, o);
    off += NCS_CHUNK_HEADER_LEN + len;
    chunks++;
  }
  if (!rc && off != (size_t)size) {
    fprintf(stderr, "ncs-trace-rehost: %s: %zu bytes after the last chunk\n", in, (size_t)size - off);
    rc = 1;
  }
  if (fclose(o) != 0) rc = 1;
  ncs_buf_free(&pay);
  free(buf);
  if (!rc) printf("ncs-trace-rehost: %s -> %s: %d chunks\n", in, out, chunks);
  return rc;
}
