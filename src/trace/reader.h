/* reader.h - streaming reader for ncclscope trace files (docs/trace-format.md).
 *
 * The reader never trusts the file: every length, count, id and varint is bounds-checked, and a
 * bad chunk ends the file with a message (ncs_reader_error) instead of a crash. Memory is bounded
 * by one chunk plus the string table of the current segment.
 */
#ifndef NCS_TRACE_READER_H
#define NCS_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "trace/flight.h"
#include "trace/format.h"
#include "trace/gpu.h"

typedef struct ncs_reader ncs_reader_t;

typedef struct {
  uint32_t format_version;
  const char *plugin_version;
  const char *host;
  uint64_t pid;
  uint32_t epoch;
  uint32_t mode;
  uint32_t mask;
  uint64_t start_realtime_ns;
  uint64_t start_mono_ns;
  const char *cmdline;
  uint64_t pool_bytes;
  uint32_t index; /* 0 for the first segment of the file */
} ncs_segment_info_t;

typedef struct {
  uint32_t index;
  uint64_t comm_id;
  const char *name; /* "" when NULL */
  int32_t nranks, nnodes, rank;
  uint32_t abi_version;
  uint64_t init_ns;
  uint32_t mask;
  int32_t device;     /* CUDA device ordinal current at init, -1 unknown (format 1.1 field) */
  const char *bus_id; /* its PCI bus id, "" unknown */
} ncs_comm_info_t;

typedef struct {
  uint8_t kind; /* NCS_REC_* */
  uint8_t type; /* NCS_T_* */
  uint32_t thread;
  uint64_t ts; /* mono ns (START/STOP/STATE/BADCALL) */
  uint64_t id;
  /* START */
  uint8_t ctx_kind;
  uint64_t ctx;
  uint8_t parent_kind;
  uint64_t parent;
  int32_t rank;
  uint32_t flags; /* START flags; for BADCALL the call: NCS_BC_STOP or NCS_BC_STATE */
  uint8_t nfields;          /* ncs_schema[type].nfields */
  uint64_t f[NCS_MAX_FIELDS]; /* raw values; I64 already un-zigzagged (cast to int64_t) */
  uint8_t fref_kind[NCS_MAX_FIELDS]; /* for REF fields: the ref kind; f[] holds the value */
  const char *fstr[NCS_MAX_FIELDS];  /* for STR fields: the string, NULL when id 0 */
  /* STATE */
  uint32_t state;
  uint64_t arg0, arg1;
  /* COMPLETE */
  uint32_t cflags;
  uint64_t end_ns, first_child_ns, gpu_start, gpu_stop;
  uint32_t n_kernel_ch, n_proxy_op, n_open;
  /* EXPIRED */
  uint32_t reason;
  uint64_t start_ns;
} ncs_event_t;

typedef struct {
  uint32_t nkeys;
  uint32_t keys[512];
  uint64_t values[512];
} ncs_counters_t;

/* what ncs_reader_next returned */
enum {
  NCS_ITEM_END = 0,
  NCS_ITEM_SEGMENT = 1,  /* r->segment info valid (ncs_reader_segment) */
  NCS_ITEM_CLOCK = 2,    /* clock pair in item->clock_* */
  NCS_ITEM_COMM = 3,     /* item->comm */
  NCS_ITEM_COMM_END = 4, /* item->comm.index, item->ts */
  NCS_ITEM_THREAD = 5,   /* item->thread_* */
  NCS_ITEM_EVENT = 6,    /* item->ev */
  NCS_ITEM_COUNTERS = 7, /* item->counters */
  NCS_ITEM_FOOTER = 8,   /* item->counters: the segment ended cleanly */
  NCS_ITEM_GAP = 9,      /* item->gap: damaged bytes were skipped; reading resumed after them */
  NCS_ITEM_LOSS = 10,    /* item->loss: records the plugin lost (a LOSS chunk) */
  NCS_ITEM_GPU_STATE = 11, /* item->gpu_state: CUPTI's state, a clock pair, counters (trace/gpu.h) */
  NCS_ITEM_GPU = 12,       /* item->gpu: one GPU record: a kernel, a launch, graph bookkeeping */
};

/* What a GAP item says: the reader found damage at `offset` and resynchronized on the next valid
 * chunk, `bytes` later. Whatever those bytes held (events, strings, communicators) is lost. */
typedef struct {
  uint64_t offset, bytes; /* where the skipped range starts in the file, and its length */
  uint32_t chunks;        /* chunk headers seen inside it (0 when none could be recognized) */
  const char *why;        /* what was wrong at `offset` (valid until the next ncs_reader_next) */
} ncs_gap_t;

/* A LOSS item's payload, ncs_loss_t, and its reasons NCS_LOSS_* are in format.h. */

typedef struct {
  int what;
  uint64_t ts;
  uint64_t clock_mono_ns, clock_realtime_ns;
  ncs_comm_info_t comm;
  uint32_t thread_index;
  uint64_t thread_tid;
  const char *thread_name;
  ncs_event_t ev;
  const ncs_counters_t *counters;
  ncs_gap_t gap;   /* NCS_ITEM_GAP */
  ncs_loss_t loss; /* NCS_ITEM_LOSS */
  ncs_gpu_state_t gpu_state; /* NCS_ITEM_GPU_STATE */
  ncs_gpu_rec_t gpu;         /* NCS_ITEM_GPU; item->ts is its host time (LAUNCH, GLAUNCH, PENDING) */
} ncs_item_t;

/* Open a trace file. Returns NULL and fills err on failure (no such file, not a trace, ...). */
ncs_reader_t *ncs_reader_open(const char *path, char *err, size_t errlen);
/* Read from a memory buffer (the fuzzer uses this). The buffer must outlive the reader. */
ncs_reader_t *ncs_reader_open_mem(const void *data, size_t len, char *err, size_t errlen);
/* Next item. Returns 1 with *item filled, 0 at the end of the file, -1 when the file is damaged
 * from here on (ncs_reader_error says what and where; everything before it was returned).
 * Strings in *item stay valid until the next SEGMENT item or close. */
int ncs_reader_next(ncs_reader_t *r, ncs_item_t *item);
const char *ncs_reader_error(const ncs_reader_t *r); /* "" when none */
/* How the file is damaged once ncs_reader_next returned -1. TRUNCATED: the file ends in a short
 * or torn last chunk (or zero bytes), the normal result of a killed process. CORRUPT: a bad
 * chunk with data after it, or a chunk that passed its CRC but does not decode. */
enum { NCS_DAMAGE_NONE = 0, NCS_DAMAGE_TRUNCATED = 1, NCS_DAMAGE_CORRUPT = 2 };
int ncs_reader_damage(const ncs_reader_t *r);
uint64_t ncs_reader_error_offset(const ncs_reader_t *r); /* where the damage starts */
const ncs_segment_info_t *ncs_reader_segment(const ncs_reader_t *r); /* NULL before the first */
/* Look up a string id of the current segment; NULL when unknown. */
const char *ncs_reader_string(const ncs_reader_t *r, uint64_t id);
uint64_t ncs_reader_offset(const ncs_reader_t *r); /* byte offset of the next chunk */
void ncs_reader_close(ncs_reader_t *r);

/* Flight files (*.nsflight, trace/flight.h) open like trace files: the reader sees their
 * retained window as one ordinary stream. This says what the file's header says; NULL for a
 * trace file. Slots found damaged while linearizing are counted. */
const ncs_flight_info_t *ncs_reader_flight(const ncs_reader_t *r);
uint32_t ncs_reader_flight_bad_slots(const ncs_reader_t *r);

/* List the trace files (*.nstrace and *.nsflight) of a directory, sorted by name. A path that is itself a file
 * is returned as the only entry. Returns 0 (with *n == 0 for a directory without traces), or -1
 * with err filled. Free with ncs_free_paths. */
int ncs_list_traces(const char *path, char ***paths, size_t *n, char *err, size_t errlen);
void ncs_free_paths(char **paths, size_t n);

#endif
