/* flight.h - the flight-recorder file (<host>-<pid>.nsflight), docs/trace-format.md "Flight files".
 *
 * In flight mode the plugin keeps the recent past in a file-backed shared mapping instead of an
 * ever-growing trace. The file is:
 *
 *   [header page][meta region][ring of slots]
 *
 * - The meta region is an ordinary trace stream (file header, then SEGMENT, STRINGS, COMM,
 *   COMM_END and THREAD chunks), appended only. meta_len says how much of it is valid.
 * - Each ring slot holds whole chunks (EVENTS, CLOCK, COUNTERS, FOOTER). A slot begins with a
 *   keyframe: EVENTS chunk(s) that restate what was open and the last operations of every
 *   communicator when the slot was started, so the oldest retained slot can be read on its own.
 *   Slots are reused oldest first; `seq` orders them.
 * - Because the mapping is MAP_SHARED on a file, what the writer stored survives the process
 *   being killed: the kernel owns the pages. A dump copies the mapping to another file.
 *
 * ncs_flight_linearize turns such a file (untrusted bytes) into one ordinary trace stream:
 * meta, then the oldest slot whole, then every later slot without its keyframe.
 */
#ifndef NCS_TRACE_FLIGHT_H
#define NCS_TRACE_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "trace/format.h"

#define NCS_FLIGHT_SUFFIX ".nsflight"
#define NCS_FLIGHT_MAGIC "NCSFLT1"  /* 8 bytes with the NUL */
#define NCS_FLIGHT_VERSION 1
#define NCS_FLIGHT_HDR_LEN 4096
#define NCS_FLIGHT_SLOT_HDR 64

/* file states */
enum { NCS_FS_RUNNING = 1, NCS_FS_EXITED = 2, NCS_FS_DUMP = 3 };
/* why a dump was taken */
enum {
  NCS_DR_NONE = 0,
  NCS_DR_SIGNAL = 1,   /* NCCLSCOPE_DUMP_SIGNAL */
  NCS_DR_WATCHDOG = 2, /* an operation made no progress for NCCLSCOPE_WATCHDOG_S */
  NCS_DR_REQUEST = 3,  /* the trigger file <dir>/ncclscope.dump changed */
  NCS_DR_EXIT = 4,     /* the last communicator was finalized, or the process exited */
};

/* header features (ncs_flight_hdr_t.features) */
enum {
  /* the header keeps the loss windows (older files: drops unknown). NCS_FLF_LOSS_T16: windows of
   * NCS_FLIGHT_LOSS_TYPES types (trace format 1.3); NCS_FLF_LOSS alone: format 1.2's windows of
   * 15 types (152 bytes each, from the same offset), which the reader still reads */
  NCS_FLF_LOSS = 1u << 0,
  NCS_FLF_LOSS_T16 = 1u << 1,
};

#define NCS_FLIGHT_LOSS_WINDOWS 16 /* the latest loss windows kept in the header */
#define NCS_FLIGHT_LOSS_TYPES 16   /* per-type counts of a window: fixed, whatever NCS_T_COUNT */
_Static_assert(NCS_T_COUNT <= NCS_FLIGHT_LOSS_TYPES, "a loss window counts every event type");

/* One loss window in the header: what a LOSS chunk says (format.h ncs_loss_t), kept in place so
 * that a kill -9 cannot lose it. The total is the sum of by_type. */
typedef struct {
  uint64_t seq;    /* 0: unused; windows are opened in seq order */
  uint32_t reason; /* NCS_LOSS_* */
  uint32_t open;   /* 1: still growing when the header was last written */
  uint64_t from_mono, to_mono;
  uint64_t by_type[NCS_FLIGHT_LOSS_TYPES];
} ncs_flight_loss_t;

/* The header page. All fields little-endian; the writer updates them in place. */
typedef struct {
  char magic[8];
  uint32_t version, hdr_len;
  uint64_t file_len;
  uint64_t meta_off, meta_cap, meta_len;
  uint64_t ring_off;
  uint32_t slot_bytes, nslots;
  uint64_t next_seq;       /* seq the next slot will get */
  uint32_t state;          /* NCS_FS_* */
  uint32_t dump_reason;    /* NCS_DR_*: for a dump copy, why; for the live file, the last dump's */
  uint64_t pid;
  uint64_t heartbeat_mono, heartbeat_real; /* the writer's last cycle */
  uint64_t last_event_mono;  /* newest event time seen (any type but ProxyCtrl) */
  uint64_t dump_mono, dump_real; /* when the dump was taken */
  uint64_t trigger_real;     /* realtime of the request that caused it (groups a job's dumps) */
  uint32_t dump_index;       /* 1, 2, ... per process */
  uint32_t open_ops;         /* Coll/P2p not completed when the header was last written */
  uint64_t stalled_since_mono; /* watchdog: the oldest open operation's last progress, 0 none */
  uint64_t watchdog_ns;
  uint64_t keyframe_trunc;   /* keyframes cut short because they would not fit a slot */
  uint64_t slots_recycled;
  char trigger[128];         /* "watchdog host-pid ..." or the request file's first line */
  char host[128];
  /* Loss accounting (features & NCS_FLF_LOSS), updated every writer cycle: every record the
   * plugin lost is in exactly one window, so the drop counters are the windows' sums. A window
   * pushed out of loss[] is folded into its reason's `earlier` window. loss_gen is odd while the
   * writer changes them (a process killed then leaves them off by one cycle's losses). */
  uint32_t features;
  uint32_t loss_gen;
  uint64_t loss_next_seq;
  ncs_flight_loss_t loss_earlier[NCS_LOSS_MAX]; /* [reason - 1]; seq 0: none */
  ncs_flight_loss_t loss[NCS_FLIGHT_LOSS_WINDOWS];
} ncs_flight_hdr_t;

typedef struct {
  uint64_t seq;     /* 0: never used */
  uint32_t used;    /* bytes of whole chunks after the slot header */
  uint32_t kf_len;  /* bytes of keyframe chunks at the start */
  uint64_t first_mono, last_mono;
  uint8_t pad[NCS_FLIGHT_SLOT_HDR - 32];
} ncs_flight_slot_t;

_Static_assert(sizeof(ncs_flight_hdr_t) <= NCS_FLIGHT_HDR_LEN, "flight header fits its page");
/* the offsets docs/trace-format.md gives */
_Static_assert(sizeof(ncs_flight_loss_t) == 160 && offsetof(ncs_flight_hdr_t, features) == 432 &&
                   offsetof(ncs_flight_hdr_t, loss_earlier) == 448 && offsetof(ncs_flight_hdr_t, loss) == 928,
               "flight header loss windows as documented");
_Static_assert(sizeof(ncs_flight_slot_t) == NCS_FLIGHT_SLOT_HDR, "slot header size");

/* What the reader reports about a flight file (ncs_reader_flight). */
typedef struct {
  uint32_t state, dump_reason, dump_index, open_ops;
  uint64_t pid;
  uint64_t heartbeat_mono, heartbeat_real, last_event_mono;
  uint64_t dump_mono, dump_real, trigger_real, stalled_since_mono, watchdog_ns;
  uint64_t keyframe_trunc, slots_recycled;
  uint32_t slots_used, nslots, slot_bytes;
  uint64_t window_mono; /* first_mono of the oldest retained slot */
  char trigger[128], host[128];
  /* loss accounting: has_loss 0 for a file written before it existed (drops unknown unless the
   * ring holds the footer). The windows, earliest first, are also the file's LOSS items. */
  int has_loss;
  int loss_torn;      /* the writer was changing them when the header was last written */
  uint32_t nloss;     /* windows in loss[] */
  uint32_t loss_bad;  /* windows skipped as impossible (damage) */
  ncs_loss_t loss[NCS_LOSS_MAX + NCS_FLIGHT_LOSS_WINDOWS];
} ncs_flight_info_t;

/* Is this a flight file (by its first bytes)? */
int ncs_flight_is(const void *data, size_t len);
/* Build the linear trace stream of a flight file image. Returns a malloc'd buffer (*out, *outlen)
 * and fills *info; -1 with err filled when the header is unusable. Slots whose header is damaged
 * are skipped (counted in *bad_slots); a slot's bytes are otherwise passed on for the reader to
 * check (it skips damaged chunks as GAP items). */
int ncs_flight_linearize(const uint8_t *data, size_t len, uint8_t **out, size_t *outlen,
                         ncs_flight_info_t *info, uint32_t *bad_slots, char *err, size_t errlen);
const char *ncs_flight_reason_name(uint32_t r);
const char *ncs_flight_state_name(uint32_t s);

#endif
