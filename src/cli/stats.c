/* stats.c - `ncclscope dump --stats`: what each process recorded, and whether anything was lost.
 *
 * Per file: host, pid, plugin version, segments (clean or not), the ABI versions NCCL chose, the
 * communicators, counts per event type and the totals of drops, bad handles and completions.
 * Then the same counts for the whole job. A segment with a footer uses the footer's counters
 * (they count calls, including records that were dropped); a segment without one (crash, kill)
 * counts its records and takes drops and handle counts from its loss records and last counter
 * snapshot: exact for a flight file, whose header keeps every loss record, a lower bound
 * otherwise, and "unknown" when there is neither.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "trace/gpujoin.h"
#include "trace/reader.h"
#include "util/fmt.h"

#define NPLAIN 0x20     /* plain counter keys 0x01..0x1F */
#define MAX_COMMS 256   /* communicators listed per file */
#define MAX_SEGS 64     /* segments listed per file */
#define MAX_PAIRS 65536 /* (commId, rank) pairs remembered for the job summary */

typedef struct {
  uint64_t starts[NCS_T_COUNT], stops[NCS_T_COUNT], states[NCS_T_COUNT];
  uint64_t drops[NCS_T_COUNT], expired[NCS_T_COUNT];
  uint64_t plain[NPLAIN];
  uint64_t cflags[6]; /* COMPLETE records per flag bit (always from records) */
  /* LOSS records (always from records): windows, records per reason ([0]: a reason this version
   * does not know), and the ones dropped because the pool was full, per type */
  uint64_t loss_windows, lost[NCS_LOSS_MAX + 1], loss_drops[NCS_T_COUNT];
  /* segments whose drops are a lower bound (no footer), or not known at all */
  uint32_t drops_atleast, drops_unknown;
} counts_t;

typedef struct {
  uint32_t index, epoch, mode, mask;
  uint64_t start_rt, start_mono, last_ts;
  int footer, snapshot;
  int cut;       /* the file is damaged before this segment's end */
  int recovered; /* its SEGMENT chunk was lost: found again after damage */
  uint32_t gaps; /* damaged ranges skipped inside it */
} seg_t;

typedef struct {
  uint64_t comm_id;
  char name[64];
  int32_t rank, nranks, nnodes;
  uint32_t abi, index, seg;
  int finalized;
  int32_t device; /* -1 unknown */
  char bus[32];
} comm_t;

typedef struct {
  uint64_t comm_id;
  int32_t rank, nranks;
} pair_t;

/* GPU times of the file's operations, by source (trace/gpujoin.h), and CUPTI's state */
typedef struct {
  uint64_t ops[3]; /* by NCS_GJ_* */
  uint64_t kernels, eager, replays, other, bad, pending, cupti_lost, no_buffer;
  int have_state;
  uint32_t state;
  char reason[160], library[160], holder[80];
} gpu_t;

typedef struct {
  char host[128], plugin[64];
  uint64_t pid;
  uint32_t nseg;
  seg_t segs[MAX_SEGS];
  seg_t cur; /* the open segment */
  counts_t rec, snap, foot, total;
  uint32_t abi_mask;
  comm_t comms[MAX_COMMS];
  uint32_t ncomms, ncomms_all;
  int from_records, snap_used, snap_missing;
  int opened; /* the reader could open it */
  int loss_exact; /* a flight file whose header keeps every loss: its LOSS records are complete */
  gpu_t gpu;
} file_t;

typedef struct {
  counts_t total;
  gpu_t gpu;
  uint32_t files, segs, crashed, damaged, truncated, unreadable, empty;
  pair_t *pairs;
  size_t npairs;
  int pairs_full;
} job_t;

/* ---------------------------------------------------------------- counting */

static void counts_add(counts_t *a, const counts_t *b) {
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    a->starts[t] += b->starts[t], a->stops[t] += b->stops[t], a->states[t] += b->states[t];
    a->drops[t] += b->drops[t], a->expired[t] += b->expired[t];
  }
  for (unsigned k = 0; k < NPLAIN; k++) a->plain[k] += b->plain[k];
  for (unsigned k = 0; k < 6; k++) a->cflags[k] += b->cflags[k];
  a->loss_windows += b->loss_windows;
  for (unsigned r = 0; r <= NCS_LOSS_MAX; r++) a->lost[r] += b->lost[r];
  for (unsigned t = 0; t < NCS_T_COUNT; t++) a->loss_drops[t] += b->loss_drops[t];
  a->drops_atleast += b->drops_atleast, a->drops_unknown += b->drops_unknown;
}

/* a LOSS record: its records by reason, and the pool-full ones by type */
static void count_loss(counts_t *c, const ncs_loss_t *l) {
  c->loss_windows++;
  c->lost[l->reason <= NCS_LOSS_MAX ? l->reason : 0] += l->records;
  if (l->reason == NCS_LOSS_DROPS)
    for (unsigned t = 0; t < NCS_T_COUNT; t++) c->loss_drops[t] += l->by_type[t];
}

static void counts_from_chunk(counts_t *c, const ncs_counters_t *k) {
  memset(c, 0, sizeof *c);
  for (uint32_t i = 0; i < k->nkeys; i++) {
    uint32_t key = k->keys[i], g = key >> 8, t = key & 0xFF;
    uint64_t v = k->values[i];
    if (t < NCS_T_COUNT && g == 1)
      c->starts[t] = v;
    else if (t < NCS_T_COUNT && g == 2)
      c->stops[t] = v;
    else if (t < NCS_T_COUNT && g == 3)
      c->states[t] = v;
    else if (t < NCS_T_COUNT && g == 4)
      c->drops[t] = v;
    else if (t < NCS_T_COUNT && g == 5)
      c->expired[t] = v;
    else if (key < NPLAIN)
      c->plain[key] = v;
  }
}

static void count_event(counts_t *c, const ncs_event_t *e) {
  switch (e->kind) {
  case NCS_REC_START:
    c->starts[e->type]++;
    if (e->ctx_kind == NCS_CTX_FOREIGN) c->plain[NCS_CK_FOREIGN_CTX]++;
    if (e->ctx_kind == NCS_CTX_NONE) c->plain[NCS_CK_NULL_CTX]++;
    break;
  case NCS_REC_STOP: c->stops[e->type]++; break;
  case NCS_REC_STATE: c->states[e->type]++; break;
  case NCS_REC_EXPIRED: c->expired[e->type]++; break;
  case NCS_REC_BADCALL: break; /* counted by the plugin under the handle counters */
  default: /* COMPLETE */
    c->plain[NCS_CK_COMPLETIONS]++;
    if (e->cflags & NCS_CF_REVISED) c->plain[NCS_CK_REVISIONS]++;
    for (unsigned b = 0; b < 6; b++)
      if (e->cflags & (1u << b)) c->cflags[b]++;
  }
}

static uint64_t total_drops(const counts_t *c) {
  uint64_t d = c->plain[NCS_CK_NO_THREAD_SLOT];
  for (unsigned t = 0; t < NCS_T_COUNT; t++) d += c->drops[t];
  return d;
}

/* ---------------------------------------------------------------- segments */

/* Close the open segment: fold its counts into the file's totals. */
static void seg_end(file_t *f) {
  if (!f->nseg) return;
  seg_t *s = &f->cur;
  counts_t c;
  if (s->footer) {
    c = f->foot;
    /* per-flag counts and loss records only exist as records */
    memcpy(c.cflags, f->rec.cflags, sizeof c.cflags);
    c.loss_windows = f->rec.loss_windows;
    memcpy(c.lost, f->rec.lost, sizeof c.lost);
    memcpy(c.loss_drops, f->rec.loss_drops, sizeof c.loss_drops);
  } else {
    c = f->rec;
    f->from_records = 1;
    /* drops: a flight header's loss records hold every one (up to its heartbeat); otherwise the
     * last counter snapshot and the loss records are both lower bounds */
    memcpy(c.drops, c.loss_drops, sizeof c.drops);
    c.plain[NCS_CK_NO_THREAD_SLOT] = c.lost[NCS_LOSS_NO_SLOT];
    c.plain[NCS_CK_WRITE_LOST] = c.lost[NCS_LOSS_WRITE];
    if (s->snapshot) {
      /* what records cannot tell: drops and ignored handles */
      for (unsigned t = 0; t < NCS_T_COUNT && !f->loss_exact; t++)
        if (f->snap.drops[t] > c.drops[t]) c.drops[t] = f->snap.drops[t];
      for (unsigned k = NCS_CK_BAD_HANDLE; k <= NCS_CK_NULL_HANDLE; k++)
        c.plain[k] = f->snap.plain[k];
      static const unsigned lower_bounds[] = {NCS_CK_NO_THREAD_SLOT, NCS_CK_WRITE_LOST};
      for (unsigned i = 0; i < 2 && !f->loss_exact; i++) {
        unsigned k = lower_bounds[i];
        if (f->snap.plain[k] > c.plain[k]) c.plain[k] = f->snap.plain[k];
      }
      c.plain[NCS_CK_WRITE_ERRORS] = f->snap.plain[NCS_CK_WRITE_ERRORS];
      f->snap_used = 1;
    } else {
      f->snap_missing = 1;
    }
    if (!f->loss_exact) {
      if (s->snapshot || c.loss_windows)
        c.drops_atleast = 1;
      else
        c.drops_unknown = 1;
    }
  }
  counts_add(&f->total, &c);
  if (s->index < MAX_SEGS) f->segs[s->index] = *s;
}

static void seg_begin(file_t *f, const ncs_segment_info_t *si) {
  seg_end(f);
  if (!f->nseg) {
    snprintf(f->host, sizeof f->host, "%s", si->host);
    snprintf(f->plugin, sizeof f->plugin, "%s", si->plugin_version);
    f->pid = si->pid;
  }
  f->nseg++;
  memset(&f->cur, 0, sizeof f->cur);
  f->cur = (seg_t){.index = si->index,
                   .epoch = si->epoch,
                   .mode = si->mode,
                   .mask = si->mask,
                   .start_rt = si->start_realtime_ns,
                   .start_mono = si->start_mono_ns,
                   .last_ts = si->start_mono_ns,
                   .recovered = si->recovered};
  memset(&f->rec, 0, sizeof f->rec);
  memset(&f->snap, 0, sizeof f->snap);
  memset(&f->foot, 0, sizeof f->foot);
}

static void add_comm(file_t *f, const ncs_comm_info_t *c) {
  f->ncomms_all++;
  if (c->abi_version < 32) f->abi_mask |= 1u << c->abi_version;
  if (f->ncomms >= MAX_COMMS) return;
  comm_t *m = &f->comms[f->ncomms++];
  *m = (comm_t){.comm_id = c->comm_id,
                .rank = c->rank,
                .nranks = c->nranks,
                .nnodes = c->nnodes,
                .abi = c->abi_version,
                .index = c->index,
                .device = c->device,
                .seg = f->nseg - 1};
  snprintf(m->name, sizeof m->name, "%s", c->name);
  snprintf(m->bus, sizeof m->bus, "%s", c->bus_id ? c->bus_id : "");
}

static void end_comm(file_t *f, uint32_t index) {
  for (uint32_t i = f->ncomms; i-- > 0;)
    if (f->comms[i].index == index && f->comms[i].seg == f->nseg - 1) {
      f->comms[i].finalized = 1;
      return;
    }
}

static void item(file_t *f, ncs_reader_t *r, const ncs_item_t *it) {
  seg_t *s = &f->cur;
  if (it->ts > s->last_ts && it->what != NCS_ITEM_COUNTERS && it->what != NCS_ITEM_FOOTER)
    s->last_ts = it->ts;
  switch (it->what) {
  case NCS_ITEM_SEGMENT: seg_begin(f, ncs_reader_segment(r)); break;
  case NCS_ITEM_COMM: add_comm(f, &it->comm); break;
  case NCS_ITEM_COMM_END: end_comm(f, it->comm.index); break;
  case NCS_ITEM_THREAD: f->rec.plain[NCS_CK_THREADS]++; break;
  case NCS_ITEM_EVENT:
    count_event(&f->rec, &it->ev);
    if (it->ev.kind == NCS_REC_COMPLETE && it->ev.end_ns > s->last_ts) s->last_ts = it->ev.end_ns;
    break;
  case NCS_ITEM_COUNTERS:
    counts_from_chunk(&f->snap, it->counters);
    s->snapshot = 1;
    break;
  case NCS_ITEM_LOSS: count_loss(&f->rec, &it->loss); break;
  case NCS_ITEM_FOOTER:
    counts_from_chunk(&f->foot, it->counters);
    if (f->foot.plain[NCS_CK_END_NS] > s->last_ts) s->last_ts = f->foot.plain[NCS_CK_END_NS];
    s->footer = 1;
    break;
  case NCS_ITEM_GAP: s->gaps++; break;
  default: break;
  }
}

/* ---------------------------------------------------------------- printing */

static void put_table(FILE *o, const counts_t *c, const char *indent) {
  fprintf(o, "%s%-13s %12s %12s %12s %10s %10s\n", indent, "event type", "starts", "stops",
          "states", "dropped", "expired");
  int any = 0;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    if (!(c->starts[t] | c->stops[t] | c->states[t] | c->drops[t] | c->expired[t])) continue;
    fprintf(o, "%s%-13s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
            indent, ncs_schema[t].name, c->starts[t], c->stops[t], c->states[t], c->drops[t],
            c->expired[t]);
    any = 1;
  }
  if (!any) fprintf(o, "%s(no events)\n", indent);
}

/* Drops: exact, a lower bound, or unknown, never a 0 that means "unknown". */
static void put_drops(FILE *o, const counts_t *c, const char *indent) {
  const uint64_t *p = c->plain;
  uint64_t d = total_drops(c);
  if (c->drops_unknown && !d && !c->drops_atleast) {
    fprintf(o, "%sdrops unknown (%u segment%s without a footer, counter snapshot or loss record)\n",
            indent, c->drops_unknown, c->drops_unknown == 1 ? "" : "s");
  } else {
    fprintf(o, "%sdrops %s%" PRIu64 " (buffer pool full %" PRIu64 ", no thread slot %" PRIu64 ")",
            indent, c->drops_unknown || c->drops_atleast ? "at least " : "", d,
            d - p[NCS_CK_NO_THREAD_SLOT], p[NCS_CK_NO_THREAD_SLOT]);
    if (c->drops_unknown)
      fprintf(o, "; unknown for %u segment%s without a footer, counter snapshot or loss record",
              c->drops_unknown, c->drops_unknown == 1 ? "" : "s");
    else if (c->drops_atleast)
      fprintf(o, "; %u segment%s without a footer", c->drops_atleast,
              c->drops_atleast == 1 ? "" : "s");
    fputc('\n', o);
  }
  if (c->loss_windows) {
    fprintf(o,
            "%sloss records: %" PRIu64 ", %" PRIu64 " records lost (buffer pool full %" PRIu64
            ", no thread slot %" PRIu64 ", not written %" PRIu64,
            indent, c->loss_windows,
            c->lost[0] + c->lost[NCS_LOSS_DROPS] + c->lost[NCS_LOSS_NO_SLOT] + c->lost[NCS_LOSS_WRITE],
            c->lost[NCS_LOSS_DROPS], c->lost[NCS_LOSS_NO_SLOT], c->lost[NCS_LOSS_WRITE]);
    if (c->lost[0]) fprintf(o, ", other %" PRIu64, c->lost[0]);
    fputs(")\n", o);
  }
}

static void put_totals(FILE *o, const counts_t *c, const char *indent) {
  const uint64_t *p = c->plain;
  put_drops(o, c, indent);
  fprintf(o,
          "%shandles: bad %" PRIu64 ", stale %" PRIu64 ", NULL %" PRIu64
          "; contexts: foreign %" PRIu64 ", NULL %" PRIu64 "\n"
          "%scompletions %" PRIu64 " (kernel %" PRIu64 ", proxy %" PRIu64 ", revised %" PRIu64
          ", forced %" PRIu64 ", no children %" PRIu64 ", from group %" PRIu64
          "), threads %" PRIu64 "\n",
          indent, p[NCS_CK_BAD_HANDLE], p[NCS_CK_STALE_HANDLE],
          p[NCS_CK_NULL_HANDLE], p[NCS_CK_FOREIGN_CTX], p[NCS_CK_NULL_CTX], indent,
          p[NCS_CK_COMPLETIONS], c->cflags[0], c->cflags[1], c->cflags[2], c->cflags[3],
          c->cflags[4], c->cflags[5], p[NCS_CK_THREADS]);
  if (p[NCS_CK_UNKNOWN_TYPE] | p[NCS_CK_UNKNOWN_STATE] | p[NCS_CK_DISABLED_TYPE])
    fprintf(o,
            "%signored: starts of unknown type %" PRIu64 ", unknown states %" PRIu64
            ", starts of types not requested %" PRIu64 "\n",
            indent, p[NCS_CK_UNKNOWN_TYPE], p[NCS_CK_UNKNOWN_STATE], p[NCS_CK_DISABLED_TYPE]);
  if (p[NCS_CK_GROUPS])
    fprintf(o, "%ssampling: %" PRIu64 " groups, %" PRIu64 " recorded in full, %" PRIu64
               " unsampled (NCCLSCOPE_SAMPLE)\n",
            indent, p[NCS_CK_GROUPS], p[NCS_CK_GROUPS] - p[NCS_CK_GROUPS_UNSAMPLED],
            p[NCS_CK_GROUPS_UNSAMPLED]);
  if (p[NCS_CK_WRITE_ERRORS] || p[NCS_CK_WRITE_LOST])
    fprintf(o, "%sWARNING: %" PRIu64 " chunks with %" PRIu64
               " event records could not be written (disk full?)\n",
            indent, p[NCS_CK_WRITE_ERRORS], p[NCS_CK_WRITE_LOST]);
}

static void put_utc(FILE *o, uint64_t ns) {
  time_t t = (time_t)(ns / 1000000000u);
  struct tm tm;
  char buf[32];
  if (ns && gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm))
    fprintf(o, "%s UTC", buf);
  else
    fputs("unknown time", o);
}

static void put_segments(FILE *o, const file_t *f) {
  for (uint32_t i = 0; i < f->nseg && i < MAX_SEGS; i++) {
    const seg_t *s = &f->segs[i];
    uint64_t dur = s->last_ts > s->start_mono ? s->last_ts - s->start_mono : 0;
    fprintf(o, "  segment %u: load %u, mode %s, events ", s->index, s->epoch,
            s->mode == NCS_MODE_TRACE    ? "trace"
            : s->mode == NCS_MODE_CAPTURE ? "capture"
            : s->mode == NCS_MODE_FLIGHT ? "flight"
                           : "?");
    ncs_put_mask(o, s->mask);
    fprintf(o, ", started ");
    put_utc(o, s->start_rt);
    fprintf(o, ", %.3f s, %s", (double)dur / 1e9,
            s->footer && !s->gaps ? "clean"
            : s->footer           ? "footer read"
            : s->cut              ? "footer not reached: the file is damaged"
            : s->mode == NCS_MODE_FLIGHT ? "no footer: a dump, a running or a killed process (see below)"
                      : "no footer: crashed/killed");
    if (s->gaps) fprintf(o, "; DAMAGED: %u damaged range%s skipped inside it", s->gaps, s->gaps == 1 ? "" : "s");
    if (s->recovered)
      fprintf(o, "; RECOVERED: its SEGMENT chunk was lost, found again after damage (start time "
                 "unknown)");
    fputc('\n', o);
  }
  if (f->nseg > MAX_SEGS) fprintf(o, "  ... %u more segments\n", f->nseg - MAX_SEGS);
}

static void put_comms(FILE *o, const file_t *f) {
  fprintf(o, "  NCCL ABI:");
  if (!f->abi_mask) fprintf(o, " (no communicator)");
  for (unsigned v = 0; v < 32; v++)
    if (f->abi_mask & (1u << v)) fprintf(o, " v%u", v);
  fprintf(o, "\n  communicators: %u\n", f->ncomms_all);
  for (uint32_t i = 0; i < f->ncomms; i++) {
    const comm_t *c = &f->comms[i];
    fprintf(o, "    commId " NCS_COMM_ID_FMT "  name ", c->comm_id);
    ncs_put_str(o, c->name[0] ? c->name : "-");
    fprintf(o, "  rank %d/%d  nNodes %d  abi v%u  seg %u", c->rank, c->nranks, c->nnodes, c->abi,
            c->seg);
    if (c->device >= 0) fprintf(o, "  gpu %d%s%s", c->device, c->bus[0] ? " " : "", c->bus);
    fprintf(o, "%s\n", c->finalized ? "" : "  (not finalized)");
  }
  if (f->ncomms_all > f->ncomms) fprintf(o, "    ... %u more\n", f->ncomms_all - f->ncomms);
}

static void put_file(FILE *o, const char *path, const file_t *f) {
  fprintf(o, "== %s\n  host ", path);
  ncs_put_str(o, f->nseg ? f->host : "?");
  fprintf(o, ", pid %" PRIu64 ", plugin ", f->pid);
  ncs_put_str(o, f->nseg ? f->plugin : "?");
  fprintf(o, ", %u segment%s\n", f->nseg, f->nseg == 1 ? "" : "s");
  if (!f->nseg) {
    fprintf(o, "  no segment: the process died before it wrote one\n");
    return;
  }
  put_segments(o, f);
  put_comms(o, f);
  if (f->from_records)
    fprintf(o, "  counts computed from the records (no footer)%s%s\n",
            f->loss_exact ? "; drops from the flight header's loss records (complete up to its "
                            "heartbeat)"
            : f->snap_used ? "; drops and handles from the last counter snapshot and the loss "
                             "records"
                           : "",
            f->snap_missing ? "; no counter snapshot: handle counts unknown" : "");
  put_table(o, &f->total, "  ");
  put_totals(o, &f->total, "  ");
}

/* ---------------------------------------------------------------- the job */

static void job_pairs(job_t *j, const file_t *f) {
  for (uint32_t i = 0; i < f->ncomms; i++) {
    if (j->npairs >= MAX_PAIRS) {
      j->pairs_full = 1;
      return;
    }
    if (!j->pairs && !(j->pairs = malloc(MAX_PAIRS * sizeof *j->pairs))) return;
    j->pairs[j->npairs++] = (pair_t){f->comms[i].comm_id, f->comms[i].rank, f->comms[i].nranks};
  }
}

static int cmp_pair(const void *a, const void *b) {
  const pair_t *x = a, *y = b;
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* One line per commId: how many of its ranks left a trace. */
static void put_job_comms(FILE *o, job_t *j) {
  if (!j->npairs) return;
  qsort(j->pairs, j->npairs, sizeof *j->pairs, cmp_pair);
  size_t ncomm = 0;
  for (size_t i = 0; i < j->npairs;) {
    size_t k = i, ranks = 0;
    for (; k < j->npairs && j->pairs[k].comm_id == j->pairs[i].comm_id; k++)
      if (k == i || j->pairs[k].rank != j->pairs[k - 1].rank) ranks++;
    if (ncomm++ < 32)
      fprintf(o, "    commId " NCS_COMM_ID_FMT ": %zu of %d ranks recorded%s\n", j->pairs[i].comm_id,
              ranks, j->pairs[i].nranks, j->pairs[i].comm_id ? "" : " (ABI v1-v3: no commId)");
    i = k;
  }
  if (ncomm > 32) fprintf(o, "    ... %zu more\n", ncomm - 32);
  fprintf(o, "  communicators: %zu distinct commIds%s\n", ncomm,
          j->pairs_full ? " (list cut)" : "");
}

static void put_job(FILE *o, job_t *j) {
  fprintf(o, "== job: %u file%s, %u segment%s (%u without footer), %u damaged, %u truncated",
          j->files, j->files == 1 ? "" : "s", j->segs, j->segs == 1 ? "" : "s", j->crashed,
          j->damaged, j->truncated);
  if (j->unreadable) fprintf(o, ", %u unreadable", j->unreadable);
  if (j->empty)
    fprintf(o, "; %u empty file%s (header only) not counted", j->empty, j->empty == 1 ? "" : "s");
  fputc('\n', o);
  put_job_comms(o, j);
  put_table(o, &j->total, "  ");
  put_totals(o, &j->total, "  ");
}

/* What a flight-recorder file's header says (docs/flight.md). */
static void put_flight(FILE *o, const ncs_reader_t *r) {
  const ncs_flight_info_t *fi = ncs_reader_flight(r);
  if (!fi) return;
  fprintf(o, "  flight recorder: %s", ncs_flight_state_name(fi->state));
  if (fi->dump_index)
    fprintf(o, ", %s dump %u (\"%s\")", ncs_flight_reason_name(fi->dump_reason), fi->dump_index,
            fi->trigger);
  fprintf(o, ", %u of %u slots of %u KiB kept (%" PRIu64 " reused), window from mono %.3f s",
          fi->slots_used, fi->nslots, fi->slot_bytes >> 10, fi->slots_recycled,
          (double)fi->window_mono / 1e9);
  fprintf(o, ", heartbeat mono %.3f s, last event %.3f s, ", (double)fi->heartbeat_mono / 1e9,
          (double)fi->last_event_mono / 1e9);
  if (fi->state == NCS_FS_EXITED)
    fprintf(o, "%u operations without a completion at the end\n", fi->open_ops);
  else
    fprintf(o, "%u operations open\n", fi->open_ops);
  if (!fi->has_loss && fi->state != NCS_FS_EXITED) /* an exited file holds its footer */
    fprintf(o, "  loss records: none kept (a flight file of an older ncclscope): drops after the "
               "last counter snapshot unknown\n");
  if (fi->loss_torn)
    fprintf(o, "  WARNING: the process died while updating its loss records: they may miss the "
               "losses of its last cycle\n");
  if (fi->loss_bad)
    fprintf(o, "  WARNING: %u damaged loss records skipped\n", fi->loss_bad);
  if (fi->keyframe_trunc)
    fprintf(o, "  WARNING: %" PRIu64 " keyframes were cut short (too many open events)\n",
            fi->keyframe_trunc);
  if (ncs_reader_flight_bad_slots(r))
    fprintf(o, "  WARNING: %u damaged ring slots skipped\n", ncs_reader_flight_bad_slots(r));
}

/* ---------------------------------------------------------------- GPU times */

static uint64_t gpu_counter(const ncs_gpu_state_t *s, unsigned key) {
  for (uint32_t i = 0; i < s->ncounters; i++)
    if (s->keys[i] == key) return s->values[i];
  return 0;
}

/* The last GPU_STATE of each segment has its totals: add them when the next one starts. */
static void gpu_state(gpu_t *g, const ncs_gpu_state_t *s, ncs_gpu_state_t *last) {
  if (last->flags & NCS_GSF_FINAL) {
    g->cupti_lost += gpu_counter(last, NCS_GK_CUPTI_DROPPED), g->no_buffer += gpu_counter(last, NCS_GK_NO_BUFFER);
    last->flags = 0;
  }
  if (!s) return;
  *last = *s;
  g->have_state = 1, g->state = s->state;
  snprintf(g->reason, sizeof g->reason, "%s", s->reason);
  snprintf(g->library, sizeof g->library, "%s", s->library);
  snprintf(g->holder, sizeof g->holder, "%s", s->holder);
}

static void gpu_collect(gpu_t *g, const ncs_gj_t *j) {
  for (size_t i = 0; i < ncs_gj_nops(j); i++) {
    const ncs_gj_op_t *o = ncs_gj_op(j, i);
    if (o->api || o->nexec) g->ops[o->source < 3 ? o->source : 0]++;
  }
  const ncs_gj_summary_t *m = ncs_gj_summary(j);
  g->kernels = m->kernels, g->eager = m->nccl_eager, g->replays = m->nccl_replays;
  g->other = m->compute, g->bad = m->bad_time, g->pending = m->pending_end;
}

static void gpu_add(gpu_t *a, const gpu_t *b) {
  for (int i = 0; i < 3; i++) a->ops[i] += b->ops[i];
  a->kernels += b->kernels, a->eager += b->eager, a->replays += b->replays, a->other += b->other;
  a->bad += b->bad, a->pending += b->pending, a->cupti_lost += b->cupti_lost, a->no_buffer += b->no_buffer;
}

static void put_gpu(FILE *o, const gpu_t *g, int file) {
  if (file) {
    if (!g->have_state)
      fprintf(o, "  CUPTI: no GPU_STATE (a plugin older than format 1.2): GPU times from KernelCh only\n");
    else {
      fprintf(o, "  CUPTI: %s", ncs_gpu_state_name(g->state));
      if (g->reason[0]) fprintf(o, " (%s)", g->reason);
      if (g->library[0]) fprintf(o, ", %s", g->library);
      fputc('\n', o);
    }
  }
  if (g->kernels || g->pending)
    fprintf(o, "  kernels (CUPTI): %" PRIu64 ": %" PRIu64 " NCCL eager, %" PRIu64 " NCCL graph replays, %" PRIu64
            " other; %" PRIu64 " without usable times; %" PRIu64 " NCCL launches without a kernel record\n",
            g->kernels, g->eager, g->replays, g->other, g->bad, g->pending);
  if (g->cupti_lost || g->no_buffer)
    fprintf(o, "  WARNING: CUPTI lost %" PRIu64 " kernel records (%" PRIu64 " buffer requests refused): those "
            "kernels, NCCL's included, have no record; a launch without one cannot be called hung\n",
            g->cupti_lost, g->no_buffer);
  fprintf(o, "  GPU times of operations: %" PRIu64 " from CUPTI, %" PRIu64 " from KernelCh, %" PRIu64 " none\n",
          g->ops[NCS_GJ_CUPTI], g->ops[NCS_GJ_KERNELCH], g->ops[NCS_GJ_NONE]);
}

/* what stats_file found besides NCS_DAMAGE_*: a file it could not read, or an empty one */
enum { FILE_UNREADABLE = 10, FILE_EMPTY = 11 };

/* Read one file into *f and print it. Returns its NCS_DAMAGE_*, or FILE_*. */
static int stats_file(const char *path, file_t *f, FILE *o) {
  char err[512];
  int why;
  memset(f, 0, sizeof *f);
  ncs_reader_t *r = ncs_reader_open_why(path, &why, err, sizeof err);
  if (!r) {
    ncs_warn("%s: %s", path, err);
    /* a newer format is not damage: this tool cannot read it */
    int unreadable = why == NCS_OPEN_CANNOT_READ || why == NCS_OPEN_NOT_FILE ||
                     why == NCS_OPEN_UNSUPPORTED;
    fprintf(o, "== %s\n  %s%s\n", path, unreadable ? "" : "DAMAGED: ", err);
    return unreadable ? FILE_UNREADABLE : NCS_DAMAGE_CORRUPT;
  }
  if (ncs_reader_empty(r)) { /* a process that died before its first chunk: not a process here */
    fprintf(o, "== %s\n  empty: only the file header, no segment (not counted)\n", path);
    ncs_reader_close(r);
    return FILE_EMPTY;
  }
  f->opened = 1;
  ncs_item_t it;
  ncs_gj_t *gj = ncs_gj_new();
  ncs_gpu_state_t last;
  memset(&last, 0, sizeof last);
  while (ncs_reader_next(r, &it) > 0) {
    item(f, r, &it);
    if (it.what == NCS_ITEM_GPU_STATE) gpu_state(&f->gpu, &it.gpu_state, &last);
    if (gj && ncs_gj_item(gj, r, &it) != 0) ncs_gj_free(gj), gj = NULL;
  }
  gpu_state(&f->gpu, NULL, &last);
  if (gj) {
    ncs_gj_finish(gj);
    gpu_collect(&f->gpu, gj);
    ncs_gj_free(gj);
  }
  const ncs_flight_info_t *fi = ncs_reader_flight(r);
  f->loss_exact = fi && fi->has_loss;
  int damage = ncs_reader_damage(r);
  f->cur.cut = damage == NCS_DAMAGE_CORRUPT;
  seg_end(f);
  put_file(o, path, f);
  if (f->nseg) put_gpu(o, &f->gpu, 1);
  put_flight(o, r);
  if (damage) {
    fprintf(o, "  %s: %s\n", damage == NCS_DAMAGE_CORRUPT ? "DAMAGED" : "truncated",
            ncs_reader_error(r));
    ncs_warn("%s: %s", path, ncs_reader_error(r));
  }
  ncs_reader_close(r);
  return damage;
}

int ncs_stats_paths(char *const *paths, int npaths, FILE *o) {
  char **list;
  size_t n;
  int rc = ncs_gather_traces(paths, npaths, &list, &n);
  file_t *f = rc ? NULL : malloc(sizeof *f);
  if (!f) {
    ncs_free_paths(list, n);
    return rc ? rc : NCS_EXIT_ERROR;
  }
  job_t j = {0};
  size_t opened = 0;
  for (size_t i = 0; i < n; i++) {
    int dmg = stats_file(list[i], f, o);
    opened += f->opened && f->nseg; /* read: it holds a segment */
    j.unreadable += dmg == FILE_UNREADABLE, j.empty += dmg == FILE_EMPTY;
    if (dmg == NCS_DAMAGE_NONE && f->opened && !f->nseg) dmg = NCS_DAMAGE_CORRUPT; /* no segment */
    if (dmg == FILE_UNREADABLE || dmg == FILE_EMPTY) continue;
    j.files++, j.segs += f->nseg;
    for (uint32_t s = 0; s < f->nseg && s < MAX_SEGS; s++) j.crashed += !f->segs[s].footer;
    j.damaged += dmg == NCS_DAMAGE_CORRUPT, j.truncated += dmg == NCS_DAMAGE_TRUNCATED;
    counts_add(&j.total, &f->total);
    gpu_add(&j.gpu, &f->gpu);
    job_pairs(&j, f);
  }
  put_job(o, &j);
  put_gpu(o, &j.gpu, 0);
  free(j.pairs);
  free(f);
  ncs_free_paths(list, n);
  if (!opened) return NCS_EXIT_NO_INPUT; /* no file could be read at all (or all were empty) */
  return j.damaged || j.unreadable ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
}

int ncs_stats_path(const char *path, FILE *o) {
  char *p = (char *)path;
  return ncs_stats_paths(&p, 1, o);
}
