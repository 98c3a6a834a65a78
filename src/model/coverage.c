/* coverage.c - what each file says it lost, per time window (model.h, docs/model.md "Coverage").
 *
 * Read in pass 1, file by file:
 *   - LOSS chunks (the plugin's own loss windows: drops, threads without a slot, failed writes);
 *   - without them (older plugins), the COUNTERS and FOOTER snapshots: what their drop and write
 *     error counters grew by between two snapshots was lost in that interval;
 *   - GAP items: damaged bytes the reader skipped, from the last time before to the next after;
 *   - the end: a file damaged or cut short lost everything after its last good record (TAIL); a
 *     segment that has no footer (a killed process, or one still running) says nothing about what
 *     happened after its last chunk (UNKNOWN).
 * A consumer asks whether a file lost records of some types in a time window (ncs_job_lost). */
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"

const char *const ncs_jl_names[7] = {"", "drops", "no_slot", "write", "gap", "tail", "unknown"};

#define LOSS_MAX 4096 /* windows kept per file; beyond, a new one widens the last of its kind */

typedef struct {
  ncs_job_loss_t *w; /* this file's windows */
  size_t n, cap;
  ncs_job_loss_t *pend; /* the current segment's windows from counters (used without LOSS chunks) */
  size_t npend, cappend;
  uint32_t seg;
  int in_seg, loss_items, footer;
  uint64_t last_ts;  /* the latest time the segment shows */
  uint64_t prev_end; /* the time of the previous counters snapshot (or the segment start) */
  uint64_t prev_drops[NCS_T_COUNT], prev_noslot, prev_werr;
  uint64_t pend_by_type[NCS_T_COUNT]; /* drops by type from the counters (used without LOSS) */
  uint64_t starts[NCS_T_COUNT], groups, groups_unsampled; /* the segment's latest snapshot */
  uint64_t stops[NCS_T_COUNT], states[NCS_T_COUNT];
  uint64_t untracked, evicted; /* the segment's latest snapshot of the limits' counters */
  int gap_open;      /* the window w[gap_at] (a GAP) waits for the next time to end it */
  size_t gap_at;
  int dmg_open;      /* the window w[dmg_at] holds the damaged records just read (damaged_record) */
  size_t dmg_at;
  int tail;          /* the file is damaged from the end of this segment on */
} covscan_t;

static void push(ncs_job_loss_t **w, size_t *n, size_t *cap, const ncs_job_loss_t *x) {
  for (size_t k = *n; k-- > 0 && *n >= LOSS_MAX;) /* full: widen the last of its kind */
    if ((*w)[k].kind == x->kind) {
      ncs_job_loss_t *y = &(*w)[k];
      if (x->to_ns > y->to_ns) y->to_ns = x->to_ns;
      if (x->from_ns < y->from_ns) y->from_ns = x->from_ns;
      y->records = y->records && x->records ? y->records + x->records : 0;
      y->types |= x->types;
      return;
    }
  NCS_XGROW(*w, *cap, *n + 1);
  (*w)[(*n)++] = *x;
}

void cov_scan_begin(void **state) { *state = ncs_xcalloc(1, sizeof(covscan_t)); }

static void add(covscan_t *c, ncs_job_proc_t *p, uint32_t proc, uint32_t kind, uint64_t from,
                uint64_t to, uint64_t records, uint32_t types) {
  ncs_job_loss_t x = {proc, c->seg, kind, from, to, records, types ? types : NCS_JL_ALL_TYPES};
  push(&c->w, &c->n, &c->cap, &x);
  p->cov.lost[kind] += records;
}

/* the end of a segment: its counter windows count only without LOSS chunks (which say it better) */
static void seg_end(covscan_t *c, ncs_job_proc_t *p, uint32_t proc, uint64_t next_start) {
  if (!c->in_seg) return;
  for (size_t k = 0; k < c->npend && !c->loss_items; k++) {
    push(&c->w, &c->n, &c->cap, &c->pend[k]);
    p->cov.lost[c->pend[k].kind] += c->pend[k].records;
  }
  if (!c->loss_items) /* LOSS records say the same by type: counted once, from them */
    for (unsigned t = 0; t < NCS_T_COUNT; t++) p->cov.lost_by_type[t] += c->pend_by_type[t];
  if (!c->footer) p->cov.nolog_segs++;
  if (!c->footer && !c->tail) /* a TAIL window says it already */
    add(c, p, proc, NCS_JL_UNKNOWN, c->last_ts, next_start ? next_start : UINT64_MAX, 0, 0);
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    p->cov.starts[t] += c->starts[t], p->cov.recorded[t] += c->starts[t] + c->stops[t] + c->states[t];
  p->cov.groups += c->groups, p->cov.groups_unsampled += c->groups_unsampled;
  p->cov.comms_untracked += c->untracked, p->cov.evicted += c->evicted;
  c->in_seg = c->gap_open = 0;
}

static void seg_begin(covscan_t *c, ncs_job_proc_t *p, uint32_t proc, uint32_t seg, uint64_t start) {
  seg_end(c, p, proc, start);
  covscan_t keep = *c;
  memset(c, 0, sizeof *c);
  c->w = keep.w, c->n = keep.n, c->cap = keep.cap, c->pend = keep.pend, c->cappend = keep.cappend;
  c->seg = seg, c->in_seg = 1, c->last_ts = c->prev_end = start;
}

/* a snapshot: what the drop and write-error counters grew by since the last one */
static void counters(covscan_t *c, ncs_job_proc_t *p, uint32_t proc, const ncs_counters_t *k) {
  uint64_t drops[NCS_T_COUNT] = {0}, noslot = 0, werr = 0, end = 0;
  for (uint32_t i = 0; i < k->nkeys; i++) {
    uint32_t key = k->keys[i], t = key & 0xFF;
    uint64_t v = k->values[i];
    if ((key & ~0xFFu) == NCS_CK_DROPS && t < NCS_T_COUNT) drops[t] = v;
    if ((key & ~0xFFu) == NCS_CK_STARTS && t < NCS_T_COUNT) c->starts[t] = v;
    if ((key & ~0xFFu) == NCS_CK_STOPS && t < NCS_T_COUNT) c->stops[t] = v;
    if ((key & ~0xFFu) == NCS_CK_STATES && t < NCS_T_COUNT) c->states[t] = v;
    if (key == NCS_CK_NO_THREAD_SLOT) noslot = v;
    if (key == NCS_CK_WRITE_ERRORS) werr = v;
    if (key == NCS_CK_END_NS) end = v;
    if (key == NCS_CK_GROUPS) c->groups = v;
    if (key == NCS_CK_GROUPS_UNSAMPLED) c->groups_unsampled = v;
    if (key == NCS_CK_COMMS_UNTRACKED) c->untracked = v;
    if (key == NCS_CK_EVICTED) c->evicted = v;
    if (key == NCS_CK_MAX_COMMS && v <= UINT32_MAX) p->cov.max_comms = (uint32_t)v;
    if (key == NCS_CK_TRACK_MAX && v <= UINT32_MAX) p->cov.track_max = (uint32_t)v;
  }
  if (!end) end = c->last_ts;
  uint64_t n = 0;
  uint32_t types = 0;
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    if (drops[t] > c->prev_drops[t]) {
      n += drops[t] - c->prev_drops[t], types |= 1u << t;
      c->pend_by_type[t] += drops[t] - c->prev_drops[t];
      c->prev_drops[t] = drops[t];
    }
  ncs_job_loss_t x = {proc, c->seg, NCS_JL_DROPS, c->prev_end, end, n, types};
  if (n) push(&c->pend, &c->npend, &c->cappend, &x);
  if (noslot > c->prev_noslot) {
    x.kind = NCS_JL_NO_SLOT, x.records = noslot - c->prev_noslot, x.types = NCS_JL_ALL_TYPES;
    push(&c->pend, &c->npend, &c->cappend, &x);
    c->prev_noslot = noslot;
  }
  if (werr > c->prev_werr) {
    x.kind = NCS_JL_WRITE, x.records = 0, x.types = NCS_JL_ALL_TYPES;
    push(&c->pend, &c->npend, &c->cappend, &x);
    p->cov.write_errors += werr - c->prev_werr;
    c->prev_werr = werr;
  }
  if (end > c->prev_end) c->prev_end = end;
}

static void loss_item(covscan_t *c, ncs_job_proc_t *p, uint32_t proc, const ncs_loss_t *l) {
  uint32_t kind = l->reason == NCS_LOSS_NO_SLOT ? NCS_JL_NO_SLOT
                  : l->reason == NCS_LOSS_WRITE ? NCS_JL_WRITE
                                                : NCS_JL_DROPS;
  uint32_t types = 0;
  uint64_t *by = kind == NCS_JL_WRITE ? p->cov.write_lost_by_type : p->cov.lost_by_type;
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    if (l->by_type[t]) types |= 1u << t, by[t] += l->by_type[t];
  c->loss_items = 1;
  add(c, p, proc, kind, l->from_ns, l->to_ns, l->records, types);
}

/* A START that names strings or communicators lost with damage: an operation's is left out of
 * the job (merge.c), so its time is a damaged range (a GAP window, grown while such records
 * follow each other) where records are missing */
static void damaged_record(covscan_t *c, ncs_job_proc_t *p, uint32_t proc, const ncs_event_t *e) {
  unsigned t = e->type;
  if (t != NCS_T_COLL && t != NCS_T_P2P && t != NCS_T_COLL_API && t != NCS_T_P2P_API) return;
  p->cov.damaged_ops++;
  if (c->dmg_open && c->dmg_at < c->n && c->w[c->dmg_at].kind == NCS_JL_GAP) {
    ncs_job_loss_t *w = &c->w[c->dmg_at];
    if (e->ts < w->from_ns) w->from_ns = e->ts;
    if (e->ts > w->to_ns) w->to_ns = e->ts;
    w->records++;
    return;
  }
  ncs_job_loss_t x = {proc, c->seg, NCS_JL_GAP, e->ts, e->ts, 1,
                      (1u << NCS_T_COLL) | (1u << NCS_T_P2P) | (1u << NCS_T_COLL_API) | (1u << NCS_T_P2P_API)};
  push(&c->w, &c->n, &c->cap, &x);
  c->dmg_open = 1, c->dmg_at = c->n - 1;
}

/* the latest time an item shows; a pending GAP window ends there */
static void seen(covscan_t *c, uint64_t t) {
  if (!t) return;
  if (c->gap_open) c->w[c->gap_at].to_ns = t, c->gap_open = 0;
  if (t > c->last_ts) c->last_ts = t;
}

void cov_scan_item(void *state, ncs_job_t *j, uint32_t proc, const ncs_item_t *it, uint32_t seg,
                   uint64_t seg_start) {
  covscan_t *c = state;
  ncs_job_proc_t *p = &j->procs[proc];
  switch (it->what) {
  case NCS_ITEM_SEGMENT: seg_begin(c, p, proc, seg, seg_start); break;
  case NCS_ITEM_CLOCK: seen(c, it->clock_mono_ns); break;
  case NCS_ITEM_EVENT:
    if (it->ev.kind <= NCS_REC_STATE) seen(c, it->ev.ts);
    if (it->ev.lost && it->ev.kind == NCS_REC_START) damaged_record(c, p, proc, &it->ev);
    else if (it->ev.kind <= NCS_REC_STATE) c->dmg_open = 0;
    if (it->ev.type == NCS_T_COLL || it->ev.type == NCS_T_P2P) {
      /* an operation of a communicator the plugin did not track (NCCLSCOPE_MAX_COMMS) */
      if (it->ev.kind == NCS_REC_START && it->ev.ctx_kind == NCS_CTX_NONE) p->cov.no_comm_ops++;
      if (it->ev.kind == NCS_REC_EXPIRED && it->ev.reason == NCS_XR_EVICTED) p->cov.evicted_ops++;
    }
    break;
  case NCS_ITEM_COUNTERS: counters(c, p, proc, it->counters); break;
  case NCS_ITEM_FOOTER:
    counters(c, p, proc, it->counters);
    c->footer = 1;
    break;
  case NCS_ITEM_LOSS: loss_item(c, p, proc, &it->loss); break;
  case NCS_ITEM_GAP:
    p->cov.gaps++, p->cov.gap_bytes += it->gap.bytes;
    add(c, p, proc, NCS_JL_GAP, c->last_ts, UINT64_MAX, 0, 0);
    c->gap_open = 1, c->gap_at = c->n - 1;
    break;
  default: break;
  }
}

/* the end of the file: a damaged or cut file lost its rest; the windows join the job's */
void cov_scan_end(void *state, ncs_job_t *j, uint32_t proc) {
  covscan_t *c = state;
  ncs_job_proc_t *p = &j->procs[proc];
  /* the rest is lost; but zeros or holes after a segment's FOOTER (a sparse file, blocks that
   * never reached the disk) end a file whose recording had ended */
  if (p->damage && !(p->damage == NCS_DAMAGE_TRUNCATED && c->in_seg && c->footer)) {
    add(c, p, proc, NCS_JL_TAIL, c->last_ts, UINT64_MAX, 0, 0);
    c->tail = 1;
  }
  seg_end(c, p, proc, 0);
  if (c->n) {
    jpriv_t *P = jp(j);
    NCS_XGROW(j->losses, P->cap_losses, j->nlosses + c->n);
    memcpy(j->losses + j->nlosses, c->w, c->n * sizeof *c->w);
    j->nlosses += (uint32_t)c->n;
  }
  free(c->w), free(c->pend), free(c);
}

const ncs_job_loss_t *ncs_job_lost(const ncs_job_t *j, uint32_t proc, uint64_t from, uint64_t to,
                                   uint32_t kinds, uint32_t types) {
  for (uint32_t i = 0; i < j->nlosses; i++) {
    const ncs_job_loss_t *l = &j->losses[i];
    if (l->proc == proc && (kinds >> l->kind & 1) && (l->types & types) && l->from_ns <= to &&
        l->to_ns >= from)
      return l;
  }
  return NULL;
}
