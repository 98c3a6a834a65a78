/* encode.c - chunk and record encoders (see docs/trace-format.md). */
#include "trace/encode.h"

#include <stdlib.h>
#include <string.h>

int ncs_buf_init(ncs_buf_t *b, size_t cap) {
  b->p = malloc(cap);
  b->len = 0;
  b->cap = b->p ? cap : 0;
  b->overflow = 0;
  return b->p ? 0 : -1;
}

void ncs_buf_free(ncs_buf_t *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void ncs_buf_bytes(ncs_buf_t *b, const void *p, size_t n) {
  if (!n) return; /* memcpy must not see a NULL source, even for 0 bytes */
  if (b->overflow || n > b->cap - b->len) {
    b->overflow = 1;
    return;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

void ncs_buf_u8(ncs_buf_t *b, uint8_t v) { ncs_buf_bytes(b, &v, 1); }

void ncs_buf_varint(ncs_buf_t *b, uint64_t v) {
  uint8_t tmp[10];
  ncs_buf_bytes(b, tmp, ncs_put_varint(tmp, v));
}

void ncs_buf_str(ncs_buf_t *b, const char *s) {
  size_t n = s ? strnlen(s, NCS_STRING_MAX) : 0;
  ncs_buf_varint(b, n);
  ncs_buf_bytes(b, s, n);
}

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void ncs_file_header(uint8_t out[NCS_FILE_HEADER_LEN]) {
  memcpy(out, NCS_FILE_MAGIC, NCS_FILE_MAGIC_LEN);
  put_u32(out + 8, NCS_FORMAT_VERSION);
  put_u32(out + 12, 0);
}

void ncs_chunk_header(uint8_t out[NCS_CHUNK_HEADER_LEN], uint16_t type, const void *payload,
                      uint32_t len) {
  put_u32(out, NCS_CHUNK_MAGIC);
  out[4] = (uint8_t)type;
  out[5] = (uint8_t)(type >> 8);
  out[6] = out[7] = 0;
  put_u32(out + 8, len);
  uint32_t crc = ncs_crc32c(0, out + 4, 8);
  crc = ncs_crc32c(crc, payload, len);
  put_u32(out + 12, crc);
}

void ncs_enc_segment(ncs_buf_t *b, const ncs_segment_info_t *s) {
  ncs_buf_varint(b, s->format_version);
  ncs_buf_str(b, s->plugin_version);
  ncs_buf_str(b, s->host);
  ncs_buf_varint(b, s->pid);
  ncs_buf_varint(b, s->epoch);
  ncs_buf_varint(b, s->mode);
  ncs_buf_varint(b, s->mask);
  ncs_buf_varint(b, s->start_realtime_ns);
  ncs_buf_varint(b, s->start_mono_ns);
  ncs_buf_str(b, s->cmdline);
  ncs_buf_varint(b, s->pool_bytes);
  /* format 1.3: every type's START field list (kinds), so that readers of other versions can
     decode the records (docs/trace-format.md) */
  ncs_buf_varint(b, NCS_T_COUNT);
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    ncs_buf_varint(b, ncs_schema[t].nfields);
    for (unsigned i = 0; i < ncs_schema[t].nfields; i++) ncs_buf_varint(b, ncs_schema[t].fields[i].kind);
  }
}

void ncs_enc_clock(ncs_buf_t *b, uint64_t mono_ns, uint64_t realtime_ns) {
  ncs_buf_varint(b, mono_ns);
  ncs_buf_varint(b, realtime_ns);
}

void ncs_enc_string(ncs_buf_t *b, uint64_t id, const char *s) {
  ncs_buf_varint(b, id);
  ncs_buf_str(b, s);
}

void ncs_enc_comm(ncs_buf_t *b, const ncs_comm_info_t *c) {
  ncs_buf_varint(b, c->index);
  ncs_buf_varint(b, c->comm_id);
  ncs_buf_str(b, c->name);
  ncs_buf_varint(b, (uint64_t)(uint32_t)c->nranks);
  ncs_buf_varint(b, (uint64_t)(uint32_t)c->nnodes);
  ncs_buf_zigzag(b, c->rank);
  ncs_buf_varint(b, c->abi_version);
  ncs_buf_varint(b, c->init_ns);
  ncs_buf_varint(b, c->mask);
  ncs_buf_zigzag(b, c->device);
  ncs_buf_str(b, c->bus_id);
}

void ncs_enc_comm_end(ncs_buf_t *b, uint32_t index, uint64_t ns) {
  ncs_buf_varint(b, index);
  ncs_buf_varint(b, ns);
}

void ncs_enc_thread(ncs_buf_t *b, uint32_t index, uint64_t tid, const char *name) {
  ncs_buf_varint(b, index);
  ncs_buf_varint(b, tid);
  ncs_buf_str(b, name);
}

void ncs_enc_counters(ncs_buf_t *b, const ncs_counters_t *c) {
  for (uint32_t i = 0; i < c->nkeys && i < 512; i++) {
    ncs_buf_varint(b, c->keys[i]);
    ncs_buf_varint(b, c->values[i]);
  }
}

void ncs_enc_loss(ncs_buf_t *b, const ncs_loss_t *l) {
  uint32_t n = 0;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) n += l->by_type[t] != 0;
  ncs_buf_varint(b, l->reason);
  ncs_buf_varint(b, l->from_ns);
  ncs_buf_varint(b, l->to_ns);
  ncs_buf_varint(b, l->records);
  ncs_buf_varint(b, n);
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    if (l->by_type[t]) {
      ncs_buf_varint(b, t);
      ncs_buf_varint(b, l->by_type[t]);
    }
}

void ncs_enc_events_begin(ncs_buf_t *b, ncs_evchunk_t *c, uint64_t base_ns) {
  ncs_buf_varint(b, base_ns);
  c->count_at = ncs_buf_count_slot(b); /* patched when the chunk ends */
  c->count = 0;
  c->prev_ts = base_ns;
}

size_t ncs_buf_count_slot(ncs_buf_t *b) {
  size_t at = b->len;
  static const uint8_t pad[5] = {0x80, 0x80, 0x80, 0x80, 0x00};
  ncs_buf_bytes(b, pad, sizeof pad);
  return at;
}

void ncs_buf_count_patch(ncs_buf_t *b, size_t at, uint32_t v) {
  if (b->overflow || at + 5 > b->len) return;
  uint8_t *p = b->p + at;
  for (int i = 0; i < 4; i++) {
    p[i] = (uint8_t)((v & 0x7F) | 0x80);
    v >>= 7;
  }
  p[4] = (uint8_t)(v & 0x7F);
}

void ncs_enc_events_end(ncs_buf_t *b, ncs_evchunk_t *c) { ncs_buf_count_patch(b, c->count_at, c->count); }

static void enc_time(ncs_buf_t *b, ncs_evchunk_t *c, uint64_t ts) {
  ncs_buf_zigzag(b, (int64_t)(ts - c->prev_ts));
  c->prev_ts = ts;
}

void ncs_enc_event(ncs_buf_t *b, ncs_evchunk_t *c, const ncs_event_t *e) {
  ncs_buf_u8(b, e->kind);
  ncs_buf_u8(b, e->type);
  switch (e->kind) {
  case NCS_REC_START: {
    ncs_buf_varint(b, e->thread);
    enc_time(b, c, e->ts);
    ncs_buf_varint(b, e->id);
    ncs_buf_varint(b, e->ctx_kind);
    ncs_buf_varint(b, e->ctx);
    ncs_buf_varint(b, e->parent_kind);
    ncs_buf_varint(b, e->parent);
    ncs_buf_zigzag(b, e->rank);
    ncs_buf_varint(b, e->flags);
    const ncs_schema_t *s = &ncs_schema[e->type < NCS_T_COUNT ? e->type : 0];
    for (unsigned i = 0; i < s->nfields; i++) {
      switch (s->fields[i].kind) {
      case NCS_FK_I64:
        ncs_buf_zigzag(b, (int64_t)e->f[i]);
        break;
      case NCS_FK_REF:
        ncs_buf_varint(b, e->fref_kind[i]);
        ncs_buf_varint(b, e->f[i]);
        break;
      default:
        ncs_buf_varint(b, e->f[i]);
      }
    }
    break;
  }
  case NCS_REC_STOP:
    ncs_buf_varint(b, e->thread);
    enc_time(b, c, e->ts);
    ncs_buf_varint(b, e->id);
    break;
  case NCS_REC_STATE:
    ncs_buf_varint(b, e->thread);
    enc_time(b, c, e->ts);
    ncs_buf_varint(b, e->id);
    ncs_buf_varint(b, e->state);
    ncs_buf_varint(b, e->arg0);
    ncs_buf_varint(b, e->arg1);
    break;
  case NCS_REC_COMPLETE:
    ncs_buf_varint(b, e->id);
    ncs_buf_varint(b, e->cflags);
    ncs_buf_varint(b, e->end_ns);
    ncs_buf_varint(b, e->first_child_ns);
    ncs_buf_varint(b, e->gpu_start);
    ncs_buf_varint(b, e->gpu_stop);
    ncs_buf_varint(b, e->n_kernel_ch);
    ncs_buf_varint(b, e->n_proxy_op);
    ncs_buf_varint(b, e->n_open);
    break;
  case NCS_REC_EXPIRED:
    ncs_buf_varint(b, e->id);
    ncs_buf_varint(b, e->reason);
    ncs_buf_varint(b, e->start_ns);
    break;
  case NCS_REC_BADCALL:
    ncs_buf_varint(b, e->thread);
    enc_time(b, c, e->ts);
    ncs_buf_varint(b, e->id); /* the raw handle value */
    ncs_buf_varint(b, e->flags);
    ncs_buf_varint(b, e->state);
    ncs_buf_varint(b, e->arg0);
    ncs_buf_varint(b, e->arg1);
    break;
  }
  c->count++;
}
