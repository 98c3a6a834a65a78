/* gpu.c - names and encoders of the GPU chunks (trace/gpu.h, docs/trace-format.md). The reader
 * decodes them (reader.c); the plugin's writer thread and the tests' trace generator encode. */
#include "trace/gpu.h"

#include <string.h>

#include "trace/encode.h"

const char *ncs_gpu_state_name(unsigned s) {
  static const char *const n[NCS_GPU_NSTATES] = {"off", "active", "busy", "unavailable", "failed"};
  return s < NCS_GPU_NSTATES ? n[s] : "?";
}

const char *ncs_gpu_rec_name(unsigned kind) {
  static const char *const n[NCS_GR_MAX + 1] = {"?",      "KERNEL",  "LAUNCH",  "GNODE", "GEXEC",
                                                "GCLONE", "GLAUNCH", "PENDING", "SUMMARY"};
  return kind <= NCS_GR_MAX ? n[kind] : "?";
}

const char *ncs_gpu_counter_name(unsigned key) {
  static const char *const n[] = {
      NULL,          "records",      "kernels",        "eager",          "replayed",
      "bad_time",    "cupti_dropped", "no_buffer",     "bad_buffer",     "other_kind",
      "launches",    "pending",      "untracked",      "host_drops",     "graph_nodes",
      "clones",      "node_set_full", "graph_launches", "flush_errors",  "flush_ns",
      "summarized",  "map_full",     "names_full",     "write_lost"};
  return key < sizeof n / sizeof n[0] ? n[key] : NULL;
}

void ncs_gpu_enc_state(ncs_buf_t *b, const ncs_gpu_state_t *s) {
  ncs_buf_varint(b, s->state);
  ncs_buf_varint(b, s->flags);
  ncs_buf_varint(b, s->since_ns);
  ncs_buf_str(b, s->reason);
  ncs_buf_str(b, s->library);
  ncs_buf_varint(b, s->api_version);
  ncs_buf_str(b, s->holder);
  ncs_buf_varint(b, s->clock_mono_ns);
  ncs_buf_varint(b, s->clock_cupti_ns);
  ncs_buf_varint(b, s->clock_width_ns);
  uint32_t n = s->ncounters < NCS_GPU_MAX_COUNTERS ? s->ncounters : NCS_GPU_MAX_COUNTERS;
  ncs_buf_varint(b, n);
  for (uint32_t i = 0; i < n; i++) {
    ncs_buf_varint(b, s->keys[i]);
    ncs_buf_varint(b, s->values[i]);
  }
}

void ncs_gpu_enc_begin(ncs_buf_t *b, ncs_gpu_chunk_t *c, uint64_t base_mono, uint64_t base_cupti) {
  ncs_buf_varint(b, base_mono);
  ncs_buf_varint(b, base_cupti);
  c->count_at = ncs_buf_count_slot(b); /* patched when the chunk ends */
  c->count = 0;
  c->prev_ts = base_mono, c->prev_start = base_cupti, c->prev_corr = 0;
}

void ncs_gpu_enc_end(ncs_buf_t *b, ncs_gpu_chunk_t *c) { ncs_buf_count_patch(b, c->count_at, c->count); }

static void host_time(ncs_buf_t *b, ncs_gpu_chunk_t *c, const ncs_gpu_rec_t *g) {
  ncs_buf_varint(b, g->thread);
  ncs_buf_zigzag(b, (int64_t)(g->ts - c->prev_ts));
  c->prev_ts = g->ts;
}

/* The fields of a record are at most 12 varints (120 bytes), so the length fits the one byte
 * reserved for it. */
void ncs_gpu_enc_rec(ncs_buf_t *b, ncs_gpu_chunk_t *c, const ncs_gpu_rec_t *g) {
  ncs_buf_u8(b, g->kind);
  size_t len_at = b->len;
  ncs_buf_u8(b, 0);
  ncs_buf_varint(b, g->flags);
  switch (g->kind) {
  case NCS_GR_KERNEL:
    ncs_buf_zigzag(b, (int64_t)(g->corr - c->prev_corr));
    ncs_buf_zigzag(b, (int64_t)(g->start - c->prev_start));
    ncs_buf_varint(b, g->end >= g->start ? g->end - g->start : 0);
    ncs_buf_varint(b, g->device);
    ncs_buf_varint(b, g->stream);
    ncs_buf_varint(b, g->name_id);
    ncs_buf_varint(b, g->graph);
    ncs_buf_varint(b, g->node);
    ncs_buf_varint(b, g->launch);
    ncs_buf_varint(b, g->replay);
    c->prev_corr = g->corr, c->prev_start = g->start;
    break;
  case NCS_GR_LAUNCH:
  case NCS_GR_PENDING:
    host_time(b, c, g);
    ncs_buf_varint(b, g->corr);
    ncs_buf_varint(b, g->launch);
    ncs_buf_varint(b, g->comm);
    ncs_buf_varint(b, g->group);
    ncs_buf_varint(b, g->stream);
    if (g->kind == NCS_GR_PENDING) ncs_buf_varint(b, g->graph);
    break;
  case NCS_GR_GNODE:
    ncs_buf_varint(b, g->launch);
    ncs_buf_varint(b, g->corr);
    ncs_buf_varint(b, g->node);
    ncs_buf_varint(b, g->graph);
    break;
  case NCS_GR_GEXEC:
    ncs_buf_varint(b, g->graph);
    ncs_buf_varint(b, g->orig);
    break;
  case NCS_GR_GCLONE:
    ncs_buf_varint(b, g->node);
    ncs_buf_varint(b, g->orig);
    ncs_buf_varint(b, g->launch);
    break;
  case NCS_GR_GLAUNCH:
    host_time(b, c, g);
    ncs_buf_varint(b, g->corr);
    ncs_buf_varint(b, g->graph);
    ncs_buf_varint(b, g->stream);
    break;
  case NCS_GR_SUMMARY:
    ncs_buf_varint(b, g->device);
    ncs_buf_varint(b, g->stream);
    ncs_buf_varint(b, g->count);
    ncs_buf_varint(b, g->busy_ns);
    ncs_buf_zigzag(b, (int64_t)(g->start - c->prev_start));
    ncs_buf_varint(b, g->end >= g->start ? g->end - g->start : 0);
    c->prev_start = g->start;
    break;
  default: break;
  }
  if (!b->overflow) b->p[len_at] = (uint8_t)(b->len - len_at - 1);
  c->count++;
}
