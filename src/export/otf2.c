/* otf2.c - `ncclscope export --format otf2` (otf2.h; the mapping is docs/otf2.md).
 *
 * 1. ncs_analyze_path_opts (retained): the job model and the report's numbers per instance (bus
 *    bandwidth).
 * 2. ox_plan (otf2_plan.c): tracks, lanes, regions.
 * 3. The archive, in a hidden temporary directory beside the output: every location's events
 *    (Enter/Leave, collective begin/end, send/receive, the bus bandwidth metric), then the
 *    global definitions (clock, strings, system tree, location groups, locations, regions,
 *    groups, communicators, metric) and the archive properties that say what the trace covers
 *    and what it lost; then the rename into place.
 */
#define _XOPEN_SOURCE 700
#include "export/otf2.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <otf2/otf2.h>

#include "export/otf2_int.h"
#include "util/mem.h"
#include "util/outfile.h"

#define OX_MAX_RANKS 65536       /* a communicator larger than this is not written as one */
#define OX_MAX_RANK_SLOTS (1u << 22) /* rank slots of all communicators together */

typedef struct {
  ox_t x;
  OTF2_Archive *ar;
  OTF2_GlobalDefWriter *gd;
  uint64_t *loc_events;   /* per location */
  uint32_t **rank_loc;    /* per communicator written: the location of each rank; NULL not written */
  uint32_t nplaceholders;
  uint32_t *ph_comm;      /* placeholder k: its communicator and rank */
  int32_t *ph_rank;
  size_t ph_cap;
  hmap_t strings;         /* pooled pointer -> string ref */
  uint32_t nstrings;
  int64_t t0, t1;         /* the first and last timestamp written */
  uint32_t *lg_proc;      /* per file: its location group (processes are numbered first) */
  uint32_t nlg;           /* location groups defined so far */
  hmap_t accel;           /* (file, device) -> its accelerator location group */
  char err[512];
  int failed;
} ow_t;

static char ox_errmsg[256]; /* OTF2's last message (its callback has no user data of ours) */

static OTF2_ErrorCode on_otf2_error(void *u, const char *file, uint64_t line, const char *fn,
                                    OTF2_ErrorCode code, const char *fmt, va_list va) {
  (void)u, (void)file, (void)line, (void)fn;
  int n = snprintf(ox_errmsg, sizeof ox_errmsg, "%s: ", OTF2_Error_GetName(code));
  if (n > 0 && (size_t)n < sizeof ox_errmsg) vsnprintf(ox_errmsg + n, sizeof ox_errmsg - n, fmt, va);
  return code;
}

static void ow_fail(ow_t *w, OTF2_ErrorCode c, const char *what) {
  if (w->failed) return;
  w->failed = 1;
  snprintf(w->err, sizeof w->err, "OTF2 (%s): %s", what,
           ox_errmsg[0] ? ox_errmsg : OTF2_Error_GetDescription(c));
}
#define OK(w, call, what)                                                                          \
  do {                                                                                             \
    OTF2_ErrorCode c_ = (call);                                                                    \
    if (c_ != OTF2_SUCCESS) ow_fail((w), c_, (what));                                              \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ================================================================ strings */

static OTF2_StringRef ow_str(ow_t *w, const char *s) {
  s = ncs_pool_str(&w->x.pool, s ? s : "");
  uint64_t v;
  if (!s) return ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "strings"), 0;
  if (hm_get(&w->strings, (uintptr_t)s, &v)) return (OTF2_StringRef)v;
  if (hm_put(&w->strings, (uintptr_t)s, w->nstrings) != 0)
    return ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "strings"), 0;
  OK(w, OTF2_GlobalDefWriter_WriteString(w->gd, w->nstrings, s), "string");
  return w->nstrings++;
}

static OTF2_StringRef ow_fmt(ow_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static OTF2_StringRef ow_fmt(ow_t *w, const char *fmt, ...) {
  char b[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  return ow_str(w, b);
}

/* ================================================================ communicators */

static int comm_written(const ow_t *w, uint32_t c) { return c < w->x.job->ncomms && w->rank_loc[c]; }

/* a file recorded rank r of communicator c (its placeholder is then the filter's doing) */
static int rank_recorded(const ncs_job_t *j, uint32_t c, int32_t r) {
  for (uint32_t m = 0; m < j->nmembers; m++)
    if (j->members[m].comm == c && j->members[m].rank == r) return 1;
  return 0;
}

/* which location stands for each rank of each communicator: the lane-0 location of the track of
 * the rank's first operation, else the first track of a file that recorded the rank, else a
 * placeholder location without events ("not recorded") */
static int ow_ranks(ow_t *w) {
  ox_t *x = &w->x;
  const ncs_job_t *j = x->job;
  w->rank_loc = calloc(j->ncomms ? j->ncomms : 1, sizeof *w->rank_loc);
  if (!w->rank_loc) return -1;
  uint64_t slots = 0;
  uint8_t *has_ops = calloc(j->ncomms + 1, 1); /* with a filter: communicators with operations */
  if (!has_ops) return -1;
  for (size_t k = 0; k < ncs_job_op_count(j); k++)
    if (x->op_track[k] != OX_NONE && ncs_job_op(j, k)->comm < j->ncomms) has_ops[ncs_job_op(j, k)->comm] = 1;
  for (uint32_t c = 0; c < j->ncomms; c++) {
    int32_t n = j->comms[c].nranks;
    if (x->xf.active && !has_ops[c]) continue; /* the filter left out all its operations */
    if (n < 1 || n > OX_MAX_RANKS || slots + (uint64_t)n > OX_MAX_RANK_SLOTS) continue;
    slots += (uint64_t)n;
    if (!(w->rank_loc[c] = malloc((size_t)n * sizeof **w->rank_loc))) return free(has_ops), -1;
    for (int32_t r = 0; r < n; r++) w->rank_loc[c][r] = OX_NONE;
  }
  free(has_ops);
  for (size_t k = 0; k < ncs_job_op_count(j); k++) {
    const ncs_op_t *op = ncs_job_op(j, k);
    if (x->op_track[k] == OX_NONE || !comm_written(w, op->comm) || op->rank < 0 ||
        op->rank >= j->comms[op->comm].nranks || w->rank_loc[op->comm][op->rank] != OX_NONE)
      continue;
    w->rank_loc[op->comm][op->rank] = x->tracks[x->op_track[k]].loc0;
  }
  for (uint32_t m = 0; m < j->nmembers; m++) {
    const ncs_job_member_t *mb = &j->members[m];
    if (!comm_written(w, mb->comm) || mb->rank < 0 || mb->rank >= j->comms[mb->comm].nranks ||
        w->rank_loc[mb->comm][mb->rank] != OX_NONE)
      continue;
    for (uint32_t t = 0; t < x->ntracks; t++)
      if (x->tracks[t].proc == mb->proc) {
        w->rank_loc[mb->comm][mb->rank] = x->tracks[t].loc0;
        break;
      }
  }
  for (uint32_t c = 0; c < j->ncomms; c++)
    for (int32_t r = 0; comm_written(w, c) && r < j->comms[c].nranks; r++) {
      if (w->rank_loc[c][r] != OX_NONE) continue;
      if (NCS_GROW(w->ph_comm, w->ph_cap, w->nplaceholders + 1) != 0) return -1;
      size_t cap = w->ph_cap - 1; /* the same growth for the parallel array */
      int32_t *pr = realloc(w->ph_rank, (cap + 1) * sizeof *pr);
      if (!pr) return -1;
      w->ph_rank = pr;
      w->ph_comm[w->nplaceholders] = c, w->ph_rank[w->nplaceholders] = r;
      w->rank_loc[c][r] = x->nlocations + w->nplaceholders++;
      if (rank_recorded(j, c, r)) x->st->filtered_ranks++;
      else x->st->unrecorded_ranks++;
    }
  if (x->xf.active && !x->nlocations && !w->nplaceholders) { /* nothing passed: OTF2's readers
                                                   want a location, one that says so */
    if (NCS_GROW(w->ph_comm, w->ph_cap, 1) != 0) return -1;
    int32_t *pr = realloc(w->ph_rank, w->ph_cap * sizeof *pr);
    if (!pr) return -1;
    w->ph_rank = pr;
    w->ph_comm[0] = UINT32_MAX, w->ph_rank[0] = -1, w->nplaceholders = 1;
  }
  return 0;
}

/* ================================================================ events */

static double inst_busbw(const ow_t *w, const ncs_op_t *op) {
  const ncs_an_instance_t *in = op->inst != SIZE_MAX ? ncs_an_instance(w->x.a, op->inst) : NULL;
  return in && !in->unsampled && in->busbw > 0 ? in->busbw : 0;
}

static int paired(const ow_t *w, const ncs_op_t *op) {
  if (op->pair == SIZE_MAX || op->pair >= ncs_job_op_count(w->x.job)) return 0;
  return w->x.op_track[op->pair] != OX_NONE && comm_written(w, op->comm) && op->peer >= 0 &&
         op->peer < w->x.job->comms[op->comm].nranks;
}

static void ev_enter(ow_t *w, OTF2_EvtWriter *ev, const ox_iv_t *iv) {
  OTF2_TimeStamp t = (OTF2_TimeStamp)iv->b;
  OK(w, OTF2_EvtWriter_Enter(ev, NULL, t, iv->region), "enter");
  w->x.st->enters++;
  if (iv->op == SIZE_MAX) return;
  const ncs_op_t *op = ncs_job_op(w->x.job, iv->op);
  if (iv->kind == IV_COLL && comm_written(w, op->comm) && ox_coll_op(op->func) >= 0)
    OK(w, OTF2_EvtWriter_MpiCollectiveBegin(ev, NULL, t), "collective begin");
  if (iv->kind == IV_P2P && op->is_send && paired(w, op))
    OK(w, OTF2_EvtWriter_MpiSend(ev, NULL, t, (uint32_t)op->peer, op->comm, 0, op->bytes), "send");
}

static void ev_leave(ow_t *w, OTF2_EvtWriter *ev, const ox_iv_t *iv) {
  OTF2_TimeStamp t = (OTF2_TimeStamp)iv->e;
  const ncs_op_t *op = iv->op != SIZE_MAX ? ncs_job_op(w->x.job, iv->op) : NULL;
  if (op && iv->kind == IV_P2P) {
    if (paired(w, op) && !op->is_send) {
      OK(w, OTF2_EvtWriter_MpiRecv(ev, NULL, t, (uint32_t)op->peer, op->comm, 0, op->bytes),
         "receive");
      w->x.st->messages++;
    } else if (!paired(w, op))
      w->x.st->p2p_unpaired++;
  }
  if (op && iv->kind == IV_COLL) {
    int c = ox_coll_op(op->func);
    if (c >= 0 && comm_written(w, op->comm)) {
      uint64_t sent, recvd;
      ox_coll_sizes(w->x.job, op, &sent, &recvd);
      uint32_t root = op->root >= 0 && op->root < w->x.job->comms[op->comm].nranks &&
                              (c == OTF2_COLLECTIVE_OP_BCAST || c == OTF2_COLLECTIVE_OP_REDUCE ||
                               c == OTF2_COLLECTIVE_OP_GATHER || c == OTF2_COLLECTIVE_OP_SCATTER)
                          ? (uint32_t)op->root
                          : OTF2_UNDEFINED_UINT32;
      OK(w, OTF2_EvtWriter_MpiCollectiveEnd(ev, NULL, t, (OTF2_CollectiveOp)c, op->comm, root, sent,
                                            recvd),
         "collective end");
      w->x.st->collectives++;
    } else
      w->x.st->coll_unknown++;
    double bw = inst_busbw(w, op);
    if (bw > 0) {
      OTF2_Type ty = OTF2_TYPE_DOUBLE;
      OTF2_MetricValue v = {.floating_point = bw};
      OK(w, OTF2_EvtWriter_Metric(ev, NULL, t, 0, 1, &ty, &v), "metric");
      w->x.st->metrics++;
    }
  }
  OK(w, OTF2_EvtWriter_Leave(ev, NULL, t, iv->region), "leave");
}

/* one lane of a track: its intervals nest (ox_lanes), so a stack replays them in time order */
static void ow_lane(ow_t *w, const ox_track_t *t, uint32_t lane) {
  OTF2_LocationRef loc = t->loc0 + lane;
  OTF2_EvtWriter *ev = OTF2_Archive_GetEvtWriter(w->ar, loc);
  if (!ev) return ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "event writer");
  const ox_iv_t **stack = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < t->niv && !w->failed; i++) {
    const ox_iv_t *iv = &t->iv[i];
    if (iv->lane != lane) continue;
    while (n && stack[n - 1]->e <= iv->b) ev_leave(w, ev, stack[--n]);
    if (NCS_GROW(stack, cap, n + 1) != 0) {
      ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "events");
      break;
    }
    stack[n++] = iv;
    ev_enter(w, ev, iv);
    if (iv->b < w->t0) w->t0 = iv->b;
    if (iv->e > w->t1) w->t1 = iv->e;
  }
  while (n && !w->failed) ev_leave(w, ev, stack[--n]);
  free(stack);
  uint64_t ne = 0;
  OK(w, OTF2_EvtWriter_GetNumberOfEvents(ev, &ne), "event count");
  w->loc_events[loc] = ne;
  w->x.st->events += ne;
  OK(w, OTF2_Archive_CloseEvtWriter(w->ar, ev), "event writer");
}

static void ow_events(ow_t *w) {
  OK(w, OTF2_Archive_OpenEvtFiles(w->ar), "event files");
  for (uint32_t t = 0; t < w->x.ntracks && !w->failed; t++)
    for (uint32_t l = 0; l < w->x.tracks[t].nlanes && !w->failed; l++) ow_lane(w, &w->x.tracks[t], l);
  for (uint32_t k = 0; k < w->nplaceholders && !w->failed; k++) { /* empty event files */
    OTF2_EvtWriter *ev = OTF2_Archive_GetEvtWriter(w->ar, w->x.nlocations + k);
    if (!ev) ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "event writer");
    else OK(w, OTF2_Archive_CloseEvtWriter(w->ar, ev), "event writer");
  }
  OK(w, OTF2_Archive_CloseEvtFiles(w->ar), "event files");
  uint32_t nloc = w->x.nlocations + w->nplaceholders;
  OK(w, OTF2_Archive_OpenDefFiles(w->ar), "definition files");
  for (uint32_t l = 0; l < nloc && !w->failed; l++) {
    OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(w->ar, l);
    if (!dw) ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "definition writer");
    else OK(w, OTF2_Archive_CloseDefWriter(w->ar, dw), "definition writer");
  }
  OK(w, OTF2_Archive_CloseDefFiles(w->ar), "definition files");
}

/* ================================================================ definitions */

/* a realtime (ns since 1970) for job time t: job time is a file's monotonic time plus its job_off,
 * and the file's realtime is its monotonic time plus clk_off */
static uint64_t ow_realtime(const ow_t *w, int64_t t) {
  const ncs_job_t *j = w->x.job;
  for (uint32_t p = 0; p < j->nprocs; p++)
    if (!j->procs[p].excluded && j->procs[p].readable && j->procs[p].clk_pairs)
      return (uint64_t)(t + j->procs[p].clk_off - j->procs[p].job_off);
  return OTF2_UNDEFINED_TIMESTAMP;
}

static void def_clock(ow_t *w) {
  if (w->t1 < w->t0) w->t0 = w->t1 = 0; /* nothing written */
  w->x.st->t_begin = w->t0, w->x.st->t_end = w->t1;
  OK(w, OTF2_GlobalDefWriter_WriteClockProperties(w->gd, 1000000000ull, (uint64_t)w->t0,
                                                  (uint64_t)(w->t1 - w->t0),
                                                  w->t1 > 0 ? ow_realtime(w, w->t0)
                                                            : OTF2_UNDEFINED_TIMESTAMP),
     "clock properties");
}

/* system tree: the job, its hosts; location groups: a process per file, an accelerator per
 * (file, GPU) with streams, one for the ranks no file recorded */
static void def_system(ow_t *w) {
  const ncs_job_t *j = w->x.job;
  OK(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(w->gd, 0, ow_str(w, "NCCL job"),
                                                 ow_str(w, "job"), OTF2_UNDEFINED_SYSTEM_TREE_NODE),
     "system tree");
  for (uint32_t h = 0; h < j->nhosts; h++)
    OK(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(w->gd, 1 + h, ow_str(w, j->hosts[h].host),
                                                   ow_str(w, "node"), 0),
       "system tree");
  if (!(w->lg_proc = calloc(j->nprocs ? j->nprocs : 1, sizeof *w->lg_proc)))
    return ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "groups");
  for (uint32_t p = 0; p < j->nprocs; p++) {
    const ncs_job_proc_t *pr = &j->procs[p];
    if (pr->excluded || !pr->readable) continue;
    int used = !w->x.xf.active; /* with a filter: a process with nothing left is not written */
    for (uint32_t t = 0; !used && t < w->x.ntracks; t++) used = w->x.tracks[t].proc == p;
    if (!used) continue;
    w->lg_proc[p] = w->nlg;
    OK(w, OTF2_GlobalDefWriter_WriteLocationGroup(
              w->gd, w->nlg++, ow_fmt(w, "pid %" PRIu64 " on %s", pr->pid, pr->host),
              OTF2_LOCATION_GROUP_TYPE_PROCESS, pr->host_index < j->nhosts ? 1 + pr->host_index : 0,
              OTF2_UNDEFINED_LOCATION_GROUP),
       "location group");
  }
}

/* the accelerator location group of a GPU track: one per (file, device) */
static uint64_t accel_key(const ox_track_t *t) {
  return ((uint64_t)t->proc << 32) | (uint32_t)t->device; /* exact: no collisions */
}
static void def_accel(ow_t *w, const ox_track_t *t) {
  const ncs_job_t *j = w->x.job;
  if (!t->gpu || hm_get(&w->accel, accel_key(t), NULL)) return;
  if (hm_put(&w->accel, accel_key(t), w->nlg) != 0)
    return ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "groups");
  const ncs_job_proc_t *pr = &j->procs[t->proc];
  char dev[16] = "?";
  if (t->device >= 0) snprintf(dev, sizeof dev, "%d", t->device);
  OK(w, OTF2_GlobalDefWriter_WriteLocationGroup(
            w->gd, w->nlg++, ow_fmt(w, "GPU %s of pid %" PRIu64 " on %s", dev, pr->pid, pr->host),
            OTF2_LOCATION_GROUP_TYPE_ACCELERATOR,
            pr->host_index < j->nhosts ? 1 + pr->host_index : 0, w->lg_proc[t->proc]),
     "location group");
}

static void def_locations(ow_t *w) {
  ox_t *x = &w->x;
  for (uint32_t t = 0; t < x->ntracks && !w->failed; t++) def_accel(w, &x->tracks[t]);
  OTF2_LocationGroupRef ph = w->nlg;
  if (w->nplaceholders)
    OK(w, OTF2_GlobalDefWriter_WriteLocationGroup(w->gd, w->nlg++,
                                                  ow_str(w, w->x.xf.active
                                                                ? "ranks not recorded or left out by the filter"
                                                                : "ranks not recorded"),
                                                  OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                  OTF2_UNDEFINED_LOCATION_GROUP),
       "location group");
  for (uint32_t t = 0; t < x->ntracks && !w->failed; t++) {
    const ox_track_t *tr = &x->tracks[t];
    uint64_t g = w->lg_proc[tr->proc];
    if (tr->gpu) hm_get(&w->accel, accel_key(tr), &g);
    for (uint32_t l = 0; l < tr->nlanes; l++)
      OK(w, OTF2_GlobalDefWriter_WriteLocation(
                w->gd, tr->loc0 + l, ow_str(w, ox_track_name(x, tr, l)),
                tr->gpu ? OTF2_LOCATION_TYPE_ACCELERATOR_STREAM : OTF2_LOCATION_TYPE_CPU_THREAD,
                w->loc_events[tr->loc0 + l], (OTF2_LocationGroupRef)g),
         "location");
  }
  if (w->nplaceholders) {
    for (uint32_t k = 0; k < w->nplaceholders && !w->failed; k++)
      OK(w, OTF2_GlobalDefWriter_WriteLocation(
                w->gd, x->nlocations + k,
                w->ph_comm[k] == UINT32_MAX
                    ? ow_str(w, "nothing passed the export filter")
                    : ow_fmt(w, "c%u rank %d (%s)", w->ph_comm[k], w->ph_rank[k],
                             rank_recorded(x->job, w->ph_comm[k], w->ph_rank[k])
                                 ? "left out by the export filter" : "not recorded"),
                OTF2_LOCATION_TYPE_CPU_THREAD, 0, ph),
         "location");
  }
}

static void def_regions(ow_t *w) {
  for (uint32_t r = 0; r < w->x.nregions && !w->failed; r++) {
    const ox_region_t *g = &w->x.regions[r];
    OTF2_StringRef s = ow_str(w, g->name);
    OK(w, OTF2_GlobalDefWriter_WriteRegion(w->gd, r, s, s, ow_str(w, g->desc ? g->desc : ""),
                                           (OTF2_RegionRole)g->role, (OTF2_Paradigm)g->paradigm,
                                           OTF2_REGION_FLAG_NONE, ow_str(w, ""), 0, 0),
       "region");
  }
}

/* group 0 lists every location that stands for a rank (COMM_LOCATIONS); group 1 + c is
 * communicator c's ranks, as indexes into group 0 (COMM_GROUP); communicator c is comm c */
static void def_comms(ow_t *w) {
  const ncs_job_t *j = w->x.job;
  uint32_t nloc = w->x.nlocations + w->nplaceholders;
  uint64_t *members = NULL, *index = calloc(nloc ? nloc : 1, sizeof *index);
  size_t n = 0, cap = 0;
  if (!index) return ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "groups");
  for (uint32_t c = 0; c < j->ncomms; c++) /* index[loc]: 1 + its position in group 0 */
    for (int32_t r = 0; comm_written(w, c) && r < j->comms[c].nranks; r++) {
      uint32_t l = w->rank_loc[c][r];
      if (index[l]) continue;
      if (NCS_GROW(members, cap, n + 1) != 0) goto oom;
      members[n++] = l, index[l] = n;
    }
  OK(w, OTF2_GlobalDefWriter_WriteGroup(w->gd, 0, ow_str(w, "NCCL ranks"),
                                        OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, (uint32_t)n, members),
     "group");
  for (uint32_t c = 0; c < j->ncomms && !w->failed; c++) {
    if (!comm_written(w, c)) continue;
    int32_t nr = j->comms[c].nranks;
    uint64_t *m = malloc((size_t)nr * sizeof *m);
    if (!m) goto oom;
    for (int32_t r = 0; r < nr; r++) m[r] = index[w->rank_loc[c][r]] - 1;
    OTF2_StringRef name = ow_fmt(w, "NCCL comm c%u 0x%016" PRIx64 "%s%s (%d ranks)", c, j->comms[c].comm_id,
                                 *j->comms[c].name ? " " : "", j->comms[c].name, nr);
    OK(w, OTF2_GlobalDefWriter_WriteGroup(w->gd, 1 + c, name, OTF2_GROUP_TYPE_COMM_GROUP,
                                          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, (uint32_t)nr, m),
       "group");
    OK(w, OTF2_GlobalDefWriter_WriteComm(w->gd, c, name, 1 + c, OTF2_UNDEFINED_COMM,
                                         OTF2_COMM_FLAG_NONE),
       "communicator");
    free(m);
  }
  free(members), free(index);
  return;
oom:
  free(members), free(index);
  ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "groups");
}

static void def_metric(ow_t *w) {
  OTF2_MetricMemberRef m = 0;
  OK(w, OTF2_GlobalDefWriter_WriteMetricMember(
            w->gd, 0, ow_str(w, "bus bandwidth"),
            ow_str(w, "the collective instance's bus bandwidth (nccl-tests' busbw, as ncclscope "
                      "report computes it), written at the end of each rank's operation"),
            OTF2_METRIC_TYPE_OTHER, OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_DOUBLE,
            OTF2_BASE_DECIMAL, 9, ow_str(w, "B/s")),
     "metric member");
  OK(w, OTF2_GlobalDefWriter_WriteMetricClass(w->gd, 0, 1, &m, OTF2_METRIC_ASYNCHRONOUS,
                                              OTF2_RECORDER_KIND_ABSTRACT),
     "metric class");
}

/* ================================================================ properties: coverage and loss */

static void prop(ow_t *w, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void prop(ow_t *w, const char *name, const char *fmt, ...) {
  char key[96], val[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(val, sizeof val, fmt, ap);
  va_end(ap);
  snprintf(key, sizeof key, "NCCLSCOPE::%s", name);
  OK(w, OTF2_Archive_SetProperty(w->ar, key, val, true), "property");
}

static void ow_properties(ow_t *w) {
  const ncs_analysis_t *a = w->x.a;
  const ncs_job_t *j = w->x.job;
  const ncs_otf2_stats_t *s = w->x.st;
  prop(w, "FILES", "%u", a->cov.files);
  prop(w, "FILES_UNREADABLE", "%u", a->cov.unreadable);
  prop(w, "FILES_DAMAGED", "%u", a->cov.damaged);
  prop(w, "FILES_DUPLICATE", "%u", a->cov.duplicates);
  prop(w, "FILES_OTHER_JOB", "%u", a->cov.other_job);
  prop(w, "SEGMENTS_WITHOUT_FOOTER", "%u", a->cov.no_footer);
  prop(w, "JOB", "%u of %u", j->job ? j->job : 1, j->njobs ? j->njobs : 1);
  for (int k = 1; k <= NCS_JL_UNKNOWN; k++) {
    char key[48];
    snprintf(key, sizeof key, "LOST_%s", ncs_jl_names[k]);
    for (char *c = key; *c; c++) *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    prop(w, key, "%" PRIu64 " records in %" PRIu64 " windows%s", a->cov.lost[k], a->cov.windows[k],
         a->cov.windows[k] && !a->cov.lost[k] ? " (count unknown)" : "");
  }
  prop(w, "WRITE_ERRORS", "%" PRIu64, a->cov.write_errors);
  prop(w, "OPERATIONS_DAMAGED", "%" PRIu64 " left out (they name what damage lost)", a->cov.damaged_ops);
  prop(w, "COMMUNICATORS_UNTRACKED", "%" PRIu64 " (NCCLSCOPE_MAX_COMMS=%u): %" PRIu64 " operations left out",
       a->cov.comms_untracked, a->cov.max_comms, a->cov.no_comm_ops);
  prop(w, "EVENTS_EVICTED", "%" PRIu64 " without completion (NCCLSCOPE_TRACK_MAX=%u), %" PRIu64 " operations",
       a->cov.evicted, a->cov.track_max, a->cov.evicted_ops);
  prop(w, "GAPS", "%" PRIu64 " (%" PRIu64 " bytes)", a->cov.gaps, a->cov.gap_bytes);
  prop(w, "OPERATIONS_LOST", "%" PRIu64 " of %" PRIu64 " API and operation calls", a->cov.op_lost,
       a->cov.op_calls);
  prop(w, "TIMING", "%" PRIu64 " kernel_gpu, %" PRIu64 " proxy_host, %" PRIu64 " enqueue_host",
       a->cov.timing[NCS_SRC_KERNEL_GPU], a->cov.timing[NCS_SRC_PROXY_HOST],
       a->cov.timing[NCS_SRC_ENQUEUE_HOST]);
  prop(w, "OPERATIONS", "%" PRIu64 " written: %" PRIu64 " on GPU streams (kernel times), %" PRIu64
       " on host threads (host times); %" PRIu64 " with no usable time left out",
       s->ops, s->ops_gpu, s->ops_host, s->ops_skipped);
  prop(w, "COLLECTIVES_WITHOUT_RECORD", "%" PRIu64 " (no OTF2 operation, or communicator not "
       "written): region only", s->coll_unknown);
  prop(w, "P2P_UNPAIRED", "%" PRIu64 " sends/receives without a partner: region, no message",
       s->p2p_unpaired);
  prop(w, "UNSAMPLED_INSTANCES", "%" PRIu64 " (no bus bandwidth)", a->unsampled);
  prop(w, "UNFINISHED_CALLS", "%" PRIu64 " never stopped: closed at their segment's end",
       s->unfinished);
  prop(w, "EXTRA_LANES", "%" PRIu64 " locations for intervals that did not nest", s->extra_lanes);
  prop(w, "RANKS_NOT_RECORDED", "%" PRIu64, s->unrecorded_ranks);
  if (s->filter.active) { /* what a filtered export covers (docs/otf2.md, "Filters") */
    prop(w, "FILTER", "%s", s->filter.text);
    prop(w, "FILTER_KEPT", "%" PRIu64 " collective instances, %" PRIu64 " rank operations%s",
         s->filter.inst_kept, s->filter.ops_kept,
         s->filter.ops_kept ? "" : " (no collective or send/receive passed the filter)");
    prop(w, "FILTER_LEFT_OUT", "%" PRIu64 " collective instances, %" PRIu64 " sends/receives, %" PRIu64
         " API calls and groups; %" PRIu64 " operations the job model could not place (cannot "
         "tell whether they pass)", s->filter.inst_left, s->filter.p2p_left, s->filter.events_left,
         s->filter.cannot_tell);
    prop(w, "RANKS_LEFT_OUT", "%" PRIu64 " ranks of the communicators written have no operation "
         "that passed: locations without events", s->filtered_ranks);
  }
  prop(w, "CLOCK", "job time, ns (docs/model.md); cross-rank error bound %" PRId64 " ns over %u "
       "hosts", j->error, j->nhosts);
}

/* ================================================================ the output directory */

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p) != 0 && errno != ENOENT ? -1 : 0;
}
static void rm_tree(const char *p) {
  if (*p) nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

typedef struct {
  char parent[PATH_MAX], base[NAME_MAX + 1], tmp[PATH_MAX + NAME_MAX + 32];
  int replace;
  int slot; /* tmp's signal cleanup (util/outfile.h): a signal that ends the process removes it */
} outdir_t;

/* check the output against the rules of docs/cli.md ("Output files") for a directory, and make
 * the temporary one beside it */
static int out_open(outdir_t *d, const char *out, const char *in, int force, char *err, size_t el) {
  char a[PATH_MAX], b[PATH_MAX], real_in[PATH_MAX], real_parent[PATH_MAX];
  struct stat sb;
  snprintf(a, sizeof a, "%s", out), snprintf(b, sizeof b, "%s", out);
  snprintf(d->parent, sizeof d->parent, "%s", dirname(a));
  snprintf(d->base, sizeof d->base, "%s", basename(b));
  if (!*out || !strcmp(d->base, "/") || !strcmp(d->base, ".") || !strcmp(d->base, ".."))
    return snprintf(err, el, "cannot write %s: not a name for an archive directory", out), -1;
  if (!realpath(d->parent, real_parent))
    return snprintf(err, el, "cannot write %s: %s: %s", out, d->parent, strerror(errno)), -1;
  if (realpath(in, real_in)) {
    size_t n = strlen(real_in);
    char whole[PATH_MAX + NAME_MAX + 2];
    snprintf(whole, sizeof whole, "%s/%s", real_parent, d->base);
    if (!strncmp(whole, real_in, n) && (whole[n] == '/' || !whole[n]))
      return snprintf(err, el, "cannot write %s: it is, or lies inside, the input %s", out, in), -1;
  }
  if (lstat(out, &sb) == 0) {
    snprintf(a, sizeof a, "%s/%s", out, NCS_OTF2_ANCHOR);
    if (!S_ISDIR(sb.st_mode) || access(a, F_OK) != 0)
      return snprintf(err, el, "cannot write %s: it exists and is not an OTF2 archive directory "
                      "(one holding %s)", out, NCS_OTF2_ANCHOR), -1;
    if (!force)
      return snprintf(err, el, "cannot write %s: it exists (--force replaces it)", out), -1;
    d->replace = 1;
  }
  snprintf(d->tmp, sizeof d->tmp, "%s/.%s.tmp-XXXXXX", d->parent, d->base);
  if (!ncs_out_mkdtemp(d->tmp, &d->slot)) {
    int e = errno;
    d->tmp[0] = 0;
    return snprintf(err, el, "cannot write %s: %s", out, strerror(e)), -1;
  }
  return 0;
}

static int out_commit(outdir_t *d, const char *out, char *err, size_t el) {
  char old[PATH_MAX + NAME_MAX + 32] = "";
  if (d->replace) {
    snprintf(old, sizeof old, "%s/.%s.old-XXXXXX", d->parent, d->base);
    if (!mkdtemp(old) || rename(out, old) != 0) {
      int e = errno;
      if (*old) rmdir(old);
      return snprintf(err, el, "cannot replace %s: %s", out, strerror(e)), -1;
    }
  }
  if (rename(d->tmp, out) != 0) {
    int e = errno;
    if (*old) rename(old, out); /* put the old archive back */
    return snprintf(err, el, "cannot write %s: %s", out, strerror(e)), -1;
  }
  d->tmp[0] = 0;
  ncs_out_forget(&d->slot);
  int s = *old ? ncs_out_track_dir(old) : -1; /* the replaced archive goes even when interrupted */
  rm_tree(old);
  ncs_out_forget(&s);
  return 0;
}

/* ================================================================ the driver */

static OTF2_FlushType pre_flush(void *u, OTF2_FileType ft, OTF2_LocationRef l, void *c, bool fin) {
  (void)u, (void)ft, (void)l, (void)c, (void)fin;
  return OTF2_FLUSH;
}
static const OTF2_FlushCallbacks flush_cbs = {.otf2_pre_flush = pre_flush, .otf2_post_flush = NULL};

static void ow_archive(ow_t *w, const char *dir) {
  w->ar = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                            OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!w->ar) return ow_fail(w, OTF2_ERROR_FILE_INTERACTION, "open archive");
  OK(w, OTF2_Archive_SetFlushCallbacks(w->ar, &flush_cbs, NULL), "flush callbacks");
  OK(w, OTF2_Archive_SetSerialCollectiveCallbacks(w->ar), "collective callbacks");
  OK(w, OTF2_Archive_SetCreator(w->ar, "ncclscope " NCS_VERSION), "creator");
  OK(w, OTF2_Archive_SetDescription(w->ar, "an NCCL job recorded by ncclscope (docs/otf2.md)"),
     "description");
  if (w->x.job->nhosts) OK(w, OTF2_Archive_SetMachineName(w->ar, w->x.job->hosts[0].host), "machine");
  uint32_t nloc = w->x.nlocations + w->nplaceholders;
  w->loc_events = calloc(nloc ? nloc : 1, sizeof *w->loc_events);
  if (!w->loc_events) return ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "locations");
  if (!w->failed) ow_events(w);
  if (!w->failed && !(w->gd = OTF2_Archive_GetGlobalDefWriter(w->ar)))
    ow_fail(w, OTF2_ERROR_MEM_ALLOC_FAILED, "global definitions");
  if (!w->failed) def_clock(w);
  if (!w->failed) def_system(w);
  if (!w->failed) def_locations(w);
  if (!w->failed) def_regions(w);
  if (!w->failed) def_comms(w);
  if (!w->failed) def_metric(w);
  if (!w->failed) ow_properties(w);
  OTF2_ErrorCode c = OTF2_Archive_Close(w->ar);
  w->ar = NULL;
  if (c != OTF2_SUCCESS) ow_fail(w, c, "close archive");
  /* libotf2 reports some failed writes (a full disk, a file size limit) only to its error
   * callback, and the call that flushed still returns success: any error it reported fails */
  if (!w->failed && ox_errmsg[0]) ow_fail(w, OTF2_ERROR_FILE_INTERACTION, "write");
  w->x.st->locations = nloc;
  w->x.st->regions = w->x.nregions;
}

static void ow_free(ow_t *w) {
  if (w->ar) OTF2_Archive_Close(w->ar);
  for (uint32_t c = 0; w->rank_loc && c < w->x.job->ncomms; c++) free(w->rank_loc[c]);
  free(w->rank_loc), free(w->loc_events), free(w->ph_comm), free(w->ph_rank), free(w->lg_proc);
  hm_free(&w->strings), hm_free(&w->accel);
  ox_free_plan(&w->x);
  if (w->x.a) ncs_xf_free(&w->x.xf), ncs_analysis_free(w->x.a);
}

/* the analysis and the plan; 0, or an ncs_export_otf2 status with err filled */
static int ow_prepare(ow_t *w, const char *path, const ncs_otf2_opts_t *o, char *err, size_t el) {
  int why = 0;
  const ncs_analyze_opts_t ao = {.retain = 1, .job = o->job, .why = &why, .filter = o->filter};
  w->x.a = ncs_analyze_path_opts(path, &ao, err, el);
  if (!w->x.a) return why == NCS_JOB_ERR_SEVERAL || why == NCS_JOB_ERR_NO_JOB || why == NCS_JOB_ERR_FILTER ? 3 : 2;
  w->x.job = w->x.a->job;
  if (o->job_check && o->job_check(w->x.job, o->check_arg) != 0) return 4;
  if (ncs_xf_init(&w->x.xf, w->x.job) != 0) {
    snprintf(err, el, "out of memory");
    return -1;
  }
  struct stat sb;
  for (uint32_t i = 0; i < w->x.job->nprocs; i++)
    if (!w->x.job->procs[i].excluded && stat(w->x.job->procs[i].path, &sb) == 0)
      w->x.st->bytes_in += (uint64_t)sb.st_size;
  if (ox_plan(&w->x) != 0 || ow_ranks(w) != 0) {
    snprintf(err, el, "%s", w->x.msg[0] ? w->x.msg : "out of memory");
    return -1;
  }
  uint64_t left = w->x.st->filter.events_left, ct = w->x.st->filter.cannot_tell;
  ncs_xf_stats(&w->x.xf, &w->x.st->filter);
  w->x.st->filter.events_left = left, w->x.st->filter.cannot_tell = ct;
  return 0;
}

int ncs_export_otf2(const char *path, const ncs_otf2_opts_t *o, ncs_otf2_stats_t *st, char *err,
                    size_t errlen) {
  memset(st, 0, sizeof *st);
  uint64_t t0 = now_ns();
  ow_t *w = calloc(1, sizeof *w);
  outdir_t *d = calloc(1, sizeof *d);
  if (!w || !d) {
    free(w), free(d);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  w->x.st = st, w->t0 = INT64_MAX, w->t1 = INT64_MIN;
  d->slot = -1;
  OTF2_Error_RegisterCallback(on_otf2_error, NULL);
  ox_errmsg[0] = 0;
  int rc = out_open(d, o->out, path, o->force, err, errlen) != 0 ? -2 : 0;
  if (!rc) rc = ow_prepare(w, path, o, err, errlen);
  if (!rc) {
    ow_archive(w, d->tmp);
    if (w->failed) snprintf(err, errlen, "cannot write %s: %s", o->out, w->err), rc = -2;
  }
  if (!rc && out_commit(d, o->out, err, errlen) != 0) rc = -2;
  if (!rc && (st->damaged || ncs_job_input(w->x.job) == NCS_JOB_IN_DAMAGED)) rc = 1;
  if (d->tmp[0]) rm_tree(d->tmp);
  ncs_out_forget(&d->slot);
  ow_free(w);
  free(w), free(d);
  st->seconds = (double)(now_ns() - t0) * 1e-9;
  return rc;
}
