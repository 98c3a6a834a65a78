/* encode.h - building trace chunks: used by the plugin's writer thread and by tests that need
 * to craft trace files (valid or deliberately damaged). Not used on NCCL's threads. */
#ifndef NCS_TRACE_ENCODE_H
#define NCS_TRACE_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "trace/reader.h"

/* A byte buffer with a fixed capacity chosen at init. Appends past the capacity set
 * `overflow` and are discarded, so a caller checks once per chunk instead of per field. */
typedef struct {
  uint8_t *p;
  size_t len, cap;
  int overflow;
} ncs_buf_t;

int ncs_buf_init(ncs_buf_t *b, size_t cap); /* 0 or -1 (no memory) */
void ncs_buf_free(ncs_buf_t *b);
static inline void ncs_buf_reset(ncs_buf_t *b) { b->len = 0, b->overflow = 0; }
void ncs_buf_bytes(ncs_buf_t *b, const void *p, size_t n);
/* A record count written before its records are known: a 5-byte padded varint reserved here
 * (its offset returned), patched in place by ncs_buf_count_patch once the chunk is complete. */
size_t ncs_buf_count_slot(ncs_buf_t *b);
void ncs_buf_count_patch(ncs_buf_t *b, size_t at, uint32_t count);
void ncs_buf_u8(ncs_buf_t *b, uint8_t v);
void ncs_buf_varint(ncs_buf_t *b, uint64_t v);
static inline void ncs_buf_zigzag(ncs_buf_t *b, int64_t v) { ncs_buf_varint(b, ncs_zigzag(v)); }
/* a string of at most NCS_STRING_MAX bytes (longer ones are cut); NULL is written as "" */
void ncs_buf_str(ncs_buf_t *b, const char *s);

/* The 16-byte file header. */
void ncs_file_header(uint8_t out[NCS_FILE_HEADER_LEN]);
/* The 16-byte chunk header for a payload (computes the CRC). */
void ncs_chunk_header(uint8_t out[NCS_CHUNK_HEADER_LEN], uint16_t type, const void *payload,
                      uint32_t len);

/* Payload encoders: append to b. */
void ncs_enc_segment(ncs_buf_t *b, const ncs_segment_info_t *s);
void ncs_enc_clock(ncs_buf_t *b, uint64_t mono_ns, uint64_t realtime_ns);
void ncs_enc_string(ncs_buf_t *b, uint64_t id, const char *s); /* one STRINGS entry */
void ncs_enc_comm(ncs_buf_t *b, const ncs_comm_info_t *c);
void ncs_enc_comm_end(ncs_buf_t *b, uint32_t index, uint64_t ns);
void ncs_enc_thread(ncs_buf_t *b, uint32_t index, uint64_t tid, const char *name);
void ncs_enc_counters(ncs_buf_t *b, const ncs_counters_t *c);
/* LOSS: the per-type counts that are not 0 are written; `records` as given */
void ncs_enc_loss(ncs_buf_t *b, const ncs_loss_t *l);
/* EVENTS: begin writes the base and count placeholders; the count is patched by end. */
typedef struct {
  size_t count_at; /* offset of the fixed-width count */
  uint32_t count;
  uint64_t prev_ts;
} ncs_evchunk_t;
void ncs_enc_events_begin(ncs_buf_t *b, ncs_evchunk_t *c, uint64_t base_ns);
/* e->f[] of STR fields hold string ids (fstr is ignored). At most NCS_EV_ENC_MAX bytes: kind and
 * type, nine varints of at most 10 bytes, and each field as a ref kind and a value. */
#define NCS_EV_ENC_MAX (2u + 9u * 10u + NCS_MAX_FIELDS * 20u)
void ncs_enc_event(ncs_buf_t *b, ncs_evchunk_t *c, const ncs_event_t *e);
void ncs_enc_events_end(ncs_buf_t *b, ncs_evchunk_t *c);

/* GPU chunks (trace/gpu.h): GPU_STATE, and GPU records. */
void ncs_gpu_enc_state(ncs_buf_t *b, const ncs_gpu_state_t *s);
/* GPU chunk: begin writes the bases and a count placeholder, end patches the count. Host times
 * are delta-encoded from base_mono, kernel starts from base_cupti, correlation ids from 0. */
typedef struct {
  size_t count_at;
  uint32_t count;
  uint64_t prev_ts, prev_start, prev_corr;
} ncs_gpu_chunk_t;
void ncs_gpu_enc_begin(ncs_buf_t *b, ncs_gpu_chunk_t *c, uint64_t base_mono, uint64_t base_cupti);
void ncs_gpu_enc_rec(ncs_buf_t *b, ncs_gpu_chunk_t *c, const ncs_gpu_rec_t *g);
void ncs_gpu_enc_end(ncs_buf_t *b, ncs_gpu_chunk_t *c);

/* Range chunks (trace/range.h): RANGE_STATE, and RANGES records. Host times are delta-encoded
 * from base_mono; begin writes the base and a count placeholder, end patches the count. */
void ncs_range_enc_state(ncs_buf_t *b, const ncs_range_state_t *s);
typedef struct {
  size_t count_at;
  uint32_t count;
  uint64_t prev_ts;
} ncs_range_chunk_t;
void ncs_range_enc_begin(ncs_buf_t *b, ncs_range_chunk_t *c, uint64_t base_mono);
void ncs_range_enc_rec(ncs_buf_t *b, ncs_range_chunk_t *c, const ncs_range_rec_t *g);
void ncs_range_enc_end(ncs_buf_t *b, ncs_range_chunk_t *c);


#endif
