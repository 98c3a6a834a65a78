/* range.c - names and encoders of the range chunks (trace/range.h, docs/trace-format.md). The
 * reader decodes them (reader.c); the plugin's writer thread and the tests' trace generator
 * encode. */
#include "trace/range.h"

#include <string.h>

#include "trace/encode.h"

const char *ncs_nvtx_state_name(unsigned s) {
  static const char *const n[NCS_NVTX_NSTATES] = {"unset", "ours", "other"};
  return s < NCS_NVTX_NSTATES ? n[s] : "?";
}

const char *ncs_hwm_state_name(unsigned s) {
  static const char *const n[NCS_HWM_NSTATES] = {"off",     "active",  "busy",          "unavailable",
                                                "failed",  "refused", "no-privileges", "waiting"};
  return s < NCS_HWM_NSTATES ? n[s] : "?";
}

const char *ncs_range_rec_name(unsigned kind) {
  static const char *const n[NCS_RR_MAX + 1] = {"?", "BEGIN", "END", "MARK", "LAUNCH", "METRICS"};
  return kind <= NCS_RR_MAX ? n[kind] : "?";
}

const char *ncs_range_counter_name(unsigned key) {
  static const char *const n[NCS_RK_MAX + 1] = {
      NULL,          "begun",         "ended",         "marks",          "dropped",
      "no_slot",     "unmatched_pops", "unmatched_ends", "end_lost",      "begin_lost",
      "untracked",    "truncated",     "names_full",    "cross_domain",   "ignored",
      "open",        "launches",      "nvtx_inits",    "forwarded",      "with_values",
      "cupti_dropped", "no_buffer",   "session_lost",  "buffers",        "not_forwarded",
      "other_threads", "write_lost"};
  return key <= NCS_RK_MAX ? n[key] : NULL;
}

const char *ncs_metric_type_name(unsigned t) {
  switch (t) {
  case NCS_MT_COUNTER: return "counter";
  case NCS_MT_RATIO: return "ratio";
  case NCS_MT_THROUGHPUT: return "throughput";
  default: return "?";
  }
}

const char *ncs_replay_name(unsigned r) {
  return r == NCS_REPLAY_NONE ? "none" : r == NCS_REPLAY_USER ? "user" : "?";
}

void ncs_range_enc_state(ncs_buf_t *b, const ncs_range_state_t *s) {
  ncs_buf_varint(b, s->flags);
  ncs_buf_varint(b, s->nvtx);
  ncs_buf_str(b, s->nvtx_path);
  ncs_buf_varint(b, s->mx_state);
  ncs_buf_varint(b, s->since_ns);
  ncs_buf_str(b, s->reason);
  ncs_buf_str(b, s->chip);
  ncs_buf_varint(b, s->replay);
  ncs_buf_varint(b, s->passes);
  ncs_buf_varint(b, s->level);
  ncs_buf_varint(b, s->mx_thread);
  ncs_buf_varint(b, s->buffer_ranges);
  uint32_t n = s->nmetrics < NCS_RANGE_MAX_METRICS ? s->nmetrics : NCS_RANGE_MAX_METRICS;
  ncs_buf_varint(b, n);
  for (uint32_t i = 0; i < n; i++) {
    ncs_buf_str(b, s->metric[i]);
    ncs_buf_varint(b, s->metric_type[i]);
  }
  n = s->ncounters < NCS_RANGE_MAX_COUNTERS ? s->ncounters : NCS_RANGE_MAX_COUNTERS;
  ncs_buf_varint(b, n);
  for (uint32_t i = 0; i < n; i++) {
    ncs_buf_varint(b, s->keys[i]);
    ncs_buf_varint(b, s->values[i]);
  }
}

void ncs_range_enc_begin(ncs_buf_t *b, ncs_range_chunk_t *c, uint64_t base_mono) {
  ncs_buf_varint(b, base_mono);
  c->count_at = ncs_buf_count_slot(b); /* patched when the chunk ends */
  c->count = 0;
  c->prev_ts = base_mono;
}

void ncs_range_enc_end(ncs_buf_t *b, ncs_range_chunk_t *c) { ncs_buf_count_patch(b, c->count_at, c->count); }

static void host_time(ncs_buf_t *b, ncs_range_chunk_t *c, const ncs_range_rec_t *g) {
  ncs_buf_varint(b, g->thread);
  ncs_buf_zigzag(b, (int64_t)(g->ts - c->prev_ts));
  c->prev_ts = g->ts;
}

static void labels(ncs_buf_t *b, const ncs_range_rec_t *g) {
  ncs_buf_varint(b, g->domain_id);
  ncs_buf_varint(b, g->name_id);
  ncs_buf_varint(b, g->category);
  ncs_buf_varint(b, g->payload_type);
  ncs_buf_varint(b, g->payload_type ? g->payload : 0);
}

static void f64(ncs_buf_t *b, double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  uint8_t le[8];
  for (int i = 0; i < 8; i++) le[i] = (uint8_t)(u >> (8 * i));
  ncs_buf_bytes(b, le, sizeof le);
}

/* A record's length is a varint: METRICS records can exceed 127 bytes, so the fields go to a
 * scratch buffer first. */
void ncs_range_enc_rec(ncs_buf_t *b, ncs_range_chunk_t *c, const ncs_range_rec_t *g) {
  uint8_t tmp[64 + NCS_RANGE_MAX_METRICS * 8];
  ncs_buf_t f = {tmp, 0, sizeof tmp, 0};
  ncs_buf_varint(&f, g->flags);
  switch (g->kind) {
  case NCS_RR_BEGIN:
    host_time(&f, c, g);
    ncs_buf_varint(&f, g->id);
    ncs_buf_varint(&f, g->parent);
    ncs_buf_varint(&f, g->depth);
    labels(&f, g);
    ncs_buf_varint(&f, g->mid);
    break;
  case NCS_RR_END:
    host_time(&f, c, g);
    ncs_buf_varint(&f, g->id);
    break;
  case NCS_RR_MARK:
    host_time(&f, c, g);
    ncs_buf_varint(&f, g->parent);
    labels(&f, g);
    break;
  case NCS_RR_LAUNCH:
    ncs_buf_varint(&f, g->id);
    ncs_buf_varint(&f, g->corr);
    break;
  case NCS_RR_METRICS: {
    uint32_t n = g->nvalues < NCS_RANGE_MAX_METRICS ? g->nvalues : NCS_RANGE_MAX_METRICS;
    ncs_buf_varint(&f, g->mid);
    ncs_buf_varint(&f, n);
    for (uint32_t i = 0; i < n; i++) f64(&f, g->values[i]);
    break;
  }
  default: break;
  }
  ncs_buf_u8(b, g->kind);
  ncs_buf_varint(b, f.len);
  ncs_buf_bytes(b, tmp, f.len);
  c->count++;
}
