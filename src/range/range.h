/* range.h - user ranges in the plugin (docs/ranges.md).
 *
 * Two halves, like GPU truth:
 *   range.c         the application's side: ncclscope's range API (include/ncclscope.h) and the
 *                   NVTX tool interface (NVTX_INJECTION64_PATH names the plugin). A push, pop,
 *                   start, end or mark is one raw record (NCS_RAW_RANGE) in the calling thread's
 *                   buffer block, the same path an NCCL event takes: no lock, no allocation, the
 *                   name copied into the record. Domains and registered strings are copied once,
 *                   into tables, when they are created.
 *   range_writer.c  the writer thread's side: it pairs pops with pushes per thread, interns the
 *                   names, and writes the RANGE_STATE and RANGES chunks (trace/range.h).
 * Hardware metrics per range (gpu/metrics.c) hook in on the application's side, for the ranges of
 * one thread at one nesting level.
 */
#ifndef NCS_RANGE_H
#define NCS_RANGE_H

#include <stdint.h>

#include "core/ncs.h"
#include "gpu/gpu.h" /* and what GPU truth calls here: ncs_range_t, ncs_range_launch, ncs_range_metric_values */
#include "trace/encode.h"
#include "trace/range.h"

/* raw records in the per-thread blocks: kind NCS_RAW_RANGE, the type byte says which. Flags (the
 * header's flag byte) are NCS_RF_* bits that fit: API, TRUNCATED, NO_NAME; aux is a depth.
 *   PUSH, START, MARK: aux = the level (PUSH: of the new range; START, MARK: the thread's
 *         depth), w1 time, w2 id (0 for MARK), w3 domain | message kind << 16 | payload type << 24
 *         | category << 32, w4 payload, w5 name bytes (inline) or registered string index,
 *         w6 metrics id, w7.. the name's bytes
 *   POP:  aux = the level being closed, w1 time, w2 domain
 *   END:  w1 time, w2 id
 *   KLAUNCH: w1 time, w2 correlation id, w3 flags (NCS_RF_GRAPH) */
#define NCS_RAW_RANGE 0x41
enum { NCS_RG_PUSH = 1, NCS_RG_POP = 2, NCS_RG_START = 3, NCS_RG_END = 4, NCS_RG_MARK = 5, NCS_RG_KLAUNCH = 6 };
enum { NCS_RM_INLINE = 0, NCS_RM_REGISTERED = 1, NCS_RM_NONE = 2 }; /* where a name is */
#define NCS_RANGE_FIXED_WORDS 7

/* ---- range.c */
/* 1 once a range call came in this load: the plugin's memory must then outlive its unload, as
 * the application's threads may still call in at exit (plugin.c, ncs_unload) */
extern NCS_HIDDEN _Atomic int ncs_range_used;
NCS_HIDDEN void ncs_range_setup(void); /* with the plugin's set-up (config loaded): NVTX state */
/* what the writer half reads from range.c: a domain's name ("" default), whether it is ignored;
 * a registered string; NULL when the index is not (yet) one */
NCS_HIDDEN const char *ncs_range_domain(uint32_t idx);
NCS_HIDDEN const char *ncs_range_registered(uint32_t idx);
typedef struct {
  uint32_t nvtx;    /* NCS_NVTX_* */
  char nvtx_path[512];
  uint64_t nvtx_inits, no_slot;
} ncs_range_status_t;
NCS_HIDDEN void ncs_range_status(ncs_range_status_t *s);

/* the heap the range tables and metrics took, at the plugin's unload (writer stopped) */
NCS_HIDDEN void ncs_range_free(void);

/* ---- range_writer.c: the writer thread's half */
NCS_HIDDEN void ncs_range_segment_begin(void);
NCS_HIDDEN void ncs_range_raw(const uint64_t *w, uint64_t hdr, uint32_t thread, uint64_t ts_ns);
NCS_HIDDEN void ncs_range_cycle(int final); /* after the drain: metric values, chunks, state */
NCS_HIDDEN void ncs_range_segment_end(void); /* before the FOOTER */
NCS_HIDDEN void ncs_range_segment_free(void);
NCS_HIDDEN void ncs_range_writer_free(void); /* the tables kept across segments */
/* flight keyframes: a RANGES payload restating the open ranges, and the latest RANGE_STATE
 * payload; 0 when none */
NCS_HIDDEN size_t ncs_range_keyframe(ncs_buf_t *b, size_t limit);
NCS_HIDDEN size_t ncs_range_keyframe_state(ncs_buf_t *b, size_t limit);

#endif
