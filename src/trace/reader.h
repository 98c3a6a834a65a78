/* reader.h - streaming reader for ncclscope trace files (docs/trace-format.md).
 *
 * The reader never trusts the file: every length, count, id and varint is bounds-checked. A
 * damaged chunk costs that chunk: the reader reports the damaged range as a GAP item and goes on
 * at the next valid chunk (docs/trace-format.md, "Damage and resynchronization"). Memory is
 * bounded by one chunk plus the string table of the current segment.
 */
#ifndef NCS_TRACE_READER_H
#define NCS_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "trace/flight.h"
#include "trace/format.h"
#include "trace/gpu.h"
#include "trace/range.h"

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
  /* 1: this segment's SEGMENT chunk was lost in damage, and the reader found evidence that a new
   * segment began after it (docs/trace-format.md, "Damage and resynchronization"). Its start
   * times are unknown (0); the other fields are the previous segment's (one file is one
   * process), or empty and 0 when there was none. */
  int recovered;
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
  uint8_t nfields; /* fields the record has: ncs_schema[type].nfields, fewer in files written
                      before a field was appended (format.h); f[] beyond it is 0 (use NCS_HAS) */
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
  /* NCS_LOST_*: what this record names that its segment never defined (lost with damage) */
  uint8_t lost;
} ncs_event_t;

/* ncs_event_t.lost: the record was decoded anyway */
enum {
  NCS_LOST_STRING = 1, /* a STR field names an undefined string id: its fstr[] is NULL */
  NCS_LOST_COMM = 2,   /* a local context names a communicator index with no COMM chunk */
};

/* Does the START record have field NCS_F(Type, name)? False for a field appended after the file
 * was written (e.g. Coll's userTag in a format 1.1 file): unknown, not 0. */
#define NCS_HAS(e, idx) ((unsigned)(idx) < (unsigned)(e)->nfields)

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
  NCS_ITEM_GAP = 9,      /* item->gap: damaged bytes were skipped; reading resumed after them.
                            May come before the first SEGMENT item. */
  NCS_ITEM_LOSS = 10,    /* item->loss: records the plugin lost (a LOSS chunk) */
  NCS_ITEM_GPU_STATE = 11, /* item->gpu_state: CUPTI's state, a clock pair, counters (trace/gpu.h) */
  NCS_ITEM_GPU = 12,       /* item->gpu: one GPU record: a kernel, a launch, graph bookkeeping */
  NCS_ITEM_RANGE_STATE = 13, /* item->range_state: range recording and metrics state (trace/range.h) */
  NCS_ITEM_RANGE = 14,       /* item->range: one RANGES record: begin, end, mark, launch, metrics */
};

/* What a GAP item says: the reader found damage at `offset` and resynchronized on the next valid
 * chunk, `bytes` later. Whatever those bytes held (events, strings, communicators) is lost; a
 * GAP for a second copy of a chunk says so in `why` (nothing was lost, but the file is damaged).
 * For a flight file, offsets are those of its linearized stream. */
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
  ncs_range_state_t range_state; /* NCS_ITEM_RANGE_STATE */
  ncs_range_rec_t range;         /* NCS_ITEM_RANGE; item->ts is its host time (BEGIN, END, MARK) */
} ncs_item_t;

/* Open a trace file. Returns NULL and fills err on failure (no such file, not a trace, ...).
 * Only regular files are opened: a FIFO, device, socket or directory is refused without being
 * read (it could block forever). */
ncs_reader_t *ncs_reader_open(const char *path, char *err, size_t errlen);
/* The same, and *why (when not NULL) says why it failed, so that a tool can tell a file it cannot
 * read from a damaged one: */
enum {
  NCS_OPEN_OK = 0,
  NCS_OPEN_CANNOT_READ = 1, /* no such file, permission denied, an I/O error */
  NCS_OPEN_NOT_FILE = 2,    /* a FIFO, device, socket or directory: refused, never read */
  NCS_OPEN_NOT_TRACE = 3,   /* not an ncclscope trace or flight file */
  NCS_OPEN_UNSUPPORTED = 4, /* a format version this reader does not know (a newer ncclscope) */
  NCS_OPEN_DAMAGED = 5,     /* a flight file whose header cannot be used */
};
ncs_reader_t *ncs_reader_open_why(const char *path, int *why, char *err, size_t errlen);
/* Read from a memory buffer (the fuzzer uses this). The buffer must outlive the reader. */
ncs_reader_t *ncs_reader_open_mem(const void *data, size_t len, char *err, size_t errlen);
/* 1 when the file holds nothing after its 16-byte header (or not even all of it): a process that
 * died before it wrote its first chunk. It has no segment, so no host or pid: tools list it as
 * empty and do not count it as a process. Known at open. */
int ncs_reader_empty(const ncs_reader_t *r);
/* Next item. Returns 1 with *item filled; 0 at the end of a file read without damage; -1 at the
 * end of a damaged file, or where reading had to stop (ncs_reader_damage says how; every item
 * before it was returned). Damage inside the file does not end it: the reader returns a GAP item
 * for the skipped range and goes on. Strings in *item stay valid until the next SEGMENT item or
 * close. */
int ncs_reader_next(ncs_reader_t *r, ncs_item_t *item);
/* What is wrong with the file, one line with byte offsets; "" when nothing (so far). */
const char *ncs_reader_error(const ncs_reader_t *r);
/* How the file is damaged, in one word (final once ncs_reader_next returned 0 or -1):
 *   NONE       nothing wrong.
 *   TRUNCATED  only the end is missing: the file ends in a short or torn chunk or in zeros, the
 *              normal result of a killed process. Everything before it was read.
 *   CORRUPT    damage inside the file: ranges were skipped (GAP items), records name strings or
 *              communicators that were lost, a segment lost its SEGMENT chunk, ring slots of a
 *              flight file were damaged, or the rest of the file could not be read.
 * ncs_reader_damage_info gives the details. */
enum { NCS_DAMAGE_NONE = 0, NCS_DAMAGE_TRUNCATED = 1, NCS_DAMAGE_CORRUPT = 2 };
int ncs_reader_damage(const ncs_reader_t *r);

/* how reading ended (ncs_damage_t.tail) */
enum {
  NCS_TAIL_CLEAN = 0,     /* at the end of the file (or not yet) */
  NCS_TAIL_TRUNCATED = 1, /* a short or torn last chunk, or zeros: a killed process */
  NCS_TAIL_LOST = 2,      /* unrecoverable: bytes up to the end hold no valid chunk, or could not
                             be read (an I/O error); they are lost */
};
typedef struct {
  int tail;                        /* NCS_TAIL_* */
  uint64_t tail_offset, tail_bytes; /* the part lost at the end */
  uint32_t gaps;                   /* ranges skipped inside the file: one GAP item each */
  uint64_t gap_bytes;              /* their total length */
  uint64_t lost_refs;              /* records with ncs_event_t.lost set */
  uint32_t lost_segments;          /* segments with ncs_segment_info_t.recovered set */
  uint32_t bad_slots;              /* flight files: damaged ring slots left out */
  uint32_t out_of_order;           /* chunks or records found out of the writer's order: a string
                                      or communicator defined after records named it, a START
                                      after its completion, a CLOCK pair older than the one
                                      before it, a chunk after its segment's FOOTER */
  uint32_t foreign_segments;       /* segments of another process (host, pid), or starting before
                                      the previous one, spliced into the file: skipped */
} ncs_damage_t;
void ncs_reader_damage_info(const ncs_reader_t *r, ncs_damage_t *d);
uint64_t ncs_reader_error_offset(const ncs_reader_t *r); /* where the first damage starts */
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

/* List the trace files (*.nstrace and *.nsflight) of a directory, sorted by name: every such
 * name, whatever it names (opening refuses what is not a regular file, with a message that says
 * what it is). A path that is itself a file of any kind is returned as the only entry. Each file
 * is listed once: a name whose device and inode were already listed (a hard link, a symbolic
 * link) is dropped. Returns 0 (with *n == 0 for a directory without traces), or -1 with err
 * filled. Free with ncs_free_paths. */
int ncs_list_traces(const char *path, char ***paths, size_t *n, char *err, size_t errlen);
/* The same over several paths, in order, as one list: a file reached twice (a path given twice,
 * a file also found in a directory given, two names of one inode) is kept at its first name and
 * counted in *dups (when dups is not NULL). found[i] (when found is not NULL) gets how many trace
 * names paths[i] gave before duplicates were dropped. */
int ncs_list_traces_n(char *const *paths, size_t npaths, char ***out, size_t *n, size_t *dups,
                      size_t *found, char *err, size_t errlen);
void ncs_free_paths(char **paths, size_t n);

#endif
