/* tracegen.h - craft ncclscope trace files in memory for the tests, the CLI fixtures and the
 * fuzzing seed corpus. Built on src/trace/encode.h, so the files are what the writer produces. */
#ifndef NCS_TESTS_TRACEGEN_H
#define NCS_TESTS_TRACEGEN_H

#include "trace/encode.h"

typedef struct {
  ncs_buf_t file; /* the whole file */
  ncs_buf_t pay;  /* the payload of the chunk being built */
  ncs_evchunk_t ev;
  ncs_event_t *log; /* every event encoded, in order (STR fields with fstr set) */
  size_t nlog, caplog;
} tg_t;

void tg_init(tg_t *g);
void tg_free(tg_t *g);
void tg_header(tg_t *g);
/* append a chunk of `type` from g->pay (then cleared) */
void tg_chunk(tg_t *g, uint16_t type);

/* The i-th sample event of type t and kind (deterministic, every field non-trivial). STR fields
 * get string ids 1..TG_NSTRINGS. */
#define TG_NSTRINGS 6
extern const char *const tg_strings[TG_NSTRINGS + 1]; /* [id] */
void tg_event(ncs_event_t *e, uint8_t kind, uint8_t type, uint64_t id, uint64_t ts);
void tg_segment_info(ncs_segment_info_t *s, uint32_t epoch, uint64_t pid);
void tg_comm_info(ncs_comm_info_t *c, uint32_t index, int rank);

/* encode one event into the open EVENTS chunk and log it */
void tg_put_event(tg_t *g, const ncs_event_t *e);

/* Segment building blocks */
void tg_segment(tg_t *g, uint32_t epoch, uint64_t pid); /* SEGMENT, CLOCK, STRINGS, COMM, THREAD */
/* one EVENTS chunk with START/STATE/STOP of every type and COMPLETE/EXPIRED; returns the count */
uint32_t tg_all_events(tg_t *g, uint64_t base_ns, uint64_t first_id);
void tg_counters(tg_t *g, uint16_t type, uint32_t nrecs); /* COUNTERS or FOOTER */

/* GPU chunks (format 1.2): a GPU_STATE and a GPU chunk with one record of every kind, their
 * values from tg_gpu_rec (kind k, index i) and tg_gpu_state. Kernel names use string id 1. */
void tg_gpu_state(ncs_gpu_state_t *s);
void tg_gpu_rec(ncs_gpu_rec_t *g, uint8_t kind, uint32_t i);
void tg_gpu(tg_t *g);
void tg_ranges(tg_t *g); /* RANGE_STATE and RANGES, every record kind */

/* Field lists other than this build's (docs/trace-format.md, format 1.3). extra < 0: none, as
 * format 1.1 wrote (START records then carry format 1.1's fields: tg_nfields_v11); extra > 0:
 * every type lists `extra` more fields than this build knows, alternately U64 and REF, and START
 * records carry them (values 300, and a local ref to 5), as a later format would write. */
unsigned tg_nfields_v11(unsigned type);
void tg_segment_lists(tg_t *g, uint32_t epoch, uint64_t pid, int extra); /* as tg_segment */
/* as tg_segment, with `lists` (NULL: none) as the SEGMENT's field lists */
void tg_segment_raw(tg_t *g, uint32_t epoch, uint64_t pid, const ncs_buf_t *lists);
/* one START as written under those lists (other kinds as tg_put_event); e is logged as read back:
 * the fields format 1.1 lacks are 0 */
void tg_put_event_lists(tg_t *g, ncs_event_t *e, int extra);

/* A complete file: `nseg` segments; the last one has no footer when `crash`. */
void tg_sample(tg_t *g, int nseg, int crash, uint64_t pid);

#endif
