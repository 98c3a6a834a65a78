/* otf2_int.h - what the files of the OTF2 exporter share (otf2.h is its interface):
 *
 *   otf2_plan.c  the plan: the job model's operations and each file's API calls and groups as
 *                intervals on tracks (a host thread, a GPU stream), the tracks split into lanes
 *                where intervals do not nest (OTF2 wants Enter/Leave strictly nested per
 *                location), the regions, the communicators' rank locations;
 *   otf2.c       the archive: definitions, events, properties, and the output directory.
 */
#ifndef NCS_EXPORT_OTF2_INT_H
#define NCS_EXPORT_OTF2_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/analyze.h"
#include "export/otf2.h"
#include "export/xfilter.h"
#include "util/hmap.h"
#include "util/pool.h"

#define OX_NONE 0xFFFFFFFFu

/* what an interval is */
enum {
  IV_REGION = 0, /* an API call or a group: Enter/Leave only */
  IV_COLL = 1,   /* a collective: Enter, collective begin ... collective end, Leave */
  IV_P2P = 2,    /* a send or receive: Enter, (paired send: MpiSend) ... (paired recv: MpiRecv), Leave */
};

typedef struct {
  int64_t b, e;     /* job time */
  uint32_t region;  /* index into ox_t.regions */
  uint32_t lane;
  uint8_t kind;     /* IV_* */
  size_t op;        /* IV_COLL/IV_P2P: the model operation; else SIZE_MAX */
  uint64_t order;   /* tie-break: the order intervals were added */
} ox_iv_t;

/* a host thread of a file, or a GPU stream of a file */
typedef struct {
  uint32_t proc;
  int gpu;          /* 0: host thread `thread`; 1: GPU stream `stream` of device `device` */
  uint32_t thread;
  uint64_t tid;     /* the thread's OS id when the file named it (0 unknown) */
  uint64_t stream;  /* 0: unknown (no CollApi/P2pApi recorded its stream) */
  int32_t device;    /* the CUDA device of the first member of its file that ran on it, -1 unknown */
  uint8_t looked;    /* device looked up */
  ox_iv_t *iv;
  size_t niv, cap;
  uint32_t nlanes;
  uint32_t loc0;    /* the OTF2 location of lane 0; lane k is loc0 + k */
} ox_track_t;

typedef struct {
  const char *name; /* pooled */
  int paradigm;     /* OTF2_Paradigm */
  int role;         /* OTF2_RegionRole */
  const char *desc;
} ox_region_t;

typedef struct {
  ncs_analysis_t *a;  /* the analysis, retained: the model's operations and instances */
  ncs_job_t *job;
  ncs_xf_t xf;        /* the filter on the API calls and groups (xfilter.h) */
  ncs_pool_t pool;
  ox_track_t *tracks;
  uint32_t ntracks;
  size_t track_cap;
  hmap_t track_map;   /* hm_mix2(proc, gpu << 63 | thread or stream) -> track (hashes: verified) */
  ox_region_t *regions;
  uint32_t nregions;
  size_t region_cap;
  hmap_t region_map;  /* (name pointer, paradigm, role) hash -> region (verified) */
  uint32_t *op_track; /* per model operation: its track (OX_NONE: not placed) */
  uint32_t *op_lane;
  uint32_t *member_loc; /* per job member: the location of its rank (OX_NONE: none yet) */
  uint32_t nlocations;
  uint64_t order;
  ncs_otf2_stats_t *st;
  int oom;
  char msg[256];
} ox_t;

/* otf2_plan.c */
int ox_plan(ox_t *x);                   /* 0, or -1 (x->msg) */
void ox_free_plan(ox_t *x);
const char *ox_track_name(ox_t *x, const ox_track_t *t, uint32_t lane);
int ox_coll_op(const char *func);       /* OTF2_CollectiveOp, -1 none */
/* bytes this rank sent and received in a collective (its send and receive buffers) */
void ox_coll_sizes(const ncs_job_t *j, const ncs_op_t *op, uint64_t *sent, uint64_t *recvd);

#endif
