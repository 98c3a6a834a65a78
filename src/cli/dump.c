/* dump.c - `ncclscope dump`: one line per item of a trace, every field of every event.
 *
 * Files are printed one after another in name order; within a file, items come in file order
 * (records of a chunk are ordered by time per thread, chunks may overlap a little). With --stats
 * the work goes to stats.c instead.
 */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "trace/reader.h"
#include "util/fmt.h"
#include "util/text.h"

static const char dump_help[] =
    "usage: ncclscope dump [OPTIONS] DIR|FILE...\n"
    "\n"
    "Print one line per event (and per segment, clock, communicator, thread, counter\n"
    "snapshot, footer, loss record, CUPTI state and kernel record, range state and\n"
    "range record) of the *.nstrace files in DIR, with every field; or, with --stats,\n"
    "counts per file and over the job.\n"
    "\n"
    "options:\n"
    "      --stats           per file and job-wide counts per event type, drops and\n"
    "                        losses, handles, completions\n"
    "  -e, --events LIST     only events of these types (coll,p2p or proxy; names as\n"
    "                        for record --events); hides the other lines. --type: the\n"
    "                        same\n"
    "      --limit N         stop after N lines\n"
    "      --abs             raw monotonic ns instead of seconds since the segment\n"
    "                        start\n"
    "      --wide            lines as long as they need: on a terminal each line is\n"
    "                        cut at its width by default (a pipe gets whole lines)\n"
    "  -h, --help            this help\n"
    "\n"
    "examples:\n"
    "  ncclscope dump run1 | less -S\n"
    "  ncclscope dump -e coll,kernel --limit 100 run1/node1-4242.nstrace\n"
    "  ncclscope dump --stats run1\n"
    "\n"
    "exit status: 0 ok (a truncated last chunk is only a warning), 2 usage error,\n"
    "3 no traces or none readable, 4 a file is damaged in the middle (its other\n"
    "chunks are printed) or cannot be read, 5 the output cannot be written\n"
    "(docs/cli.md)\n";

typedef struct {
  FILE *o;
  uint32_t types; /* event types to print */
  int filtered;   /* --type given: only event lines */
  int abs;
  uint64_t limit, lines;
  uint64_t segs;  /* SEGMENT items read, over all files */
  char name[128];
  uint32_t seg;
  uint64_t seg_start;
  int64_t cupti_off; /* CUPTI ns - monotonic ns from the latest GPU_STATE clock pair */
  int have_pair;
} dump_t;

/* ---------------------------------------------------------------- small formatters */

static void put_time(dump_t *d, uint64_t ts) {
  if (d->abs) {
    fprintf(d->o, "%" PRIu64, ts);
    return;
  }
  uint64_t mag = ts >= d->seg_start ? ts - d->seg_start : d->seg_start - ts;
  fprintf(d->o, "%s%" PRIu64 ".%09" PRIu64, ts >= d->seg_start ? "" : "-", mag / 1000000000u,
          mag % 1000000000u);
}

/* "<file> seg=N t=T " */
static void put_prefix(dump_t *d, int has_ts, uint64_t ts) {
  fprintf(d->o, "%s seg=%u t=", d->name, d->seg);
  if (has_ts)
    put_time(d, ts);
  else
    fputc('-', d->o);
  fputc(' ', d->o);
}

static void put_ref(FILE *o, uint8_t kind, uint64_t v) {
  switch (kind) {
  case NCS_REF_NONE: fputs("none", o); break;
  case NCS_REF_LOCAL: fprintf(o, "local:%" PRIu64, v); break;
  case NCS_REF_FOREIGN: fprintf(o, "foreign:0x%" PRIx64, v); break;
  default: fprintf(o, "stale:0x%" PRIx64, v); break;
  }
}

static void put_ctx(FILE *o, uint8_t kind, uint64_t v) {
  switch (kind) {
  case NCS_CTX_NONE: fputs("none", o); break;
  case NCS_CTX_LOCAL: fprintf(o, "%" PRIu64, v); break;
  case NCS_CTX_FOREIGN: fprintf(o, "foreign:%" PRIu64 ".%" PRIu64, v >> 16, v & 0xFFFF); break;
  default: fprintf(o, "invalid:0x%" PRIx64, v); break;
  }
}

static void put_flags(FILE *o, uint32_t flags, const char *const *names, unsigned n) {
  fprintf(o, "0x%x", flags);
  if (!flags) return;
  int any = 0;
  fputc('(', o);
  for (unsigned i = 0; i < 32; i++) {
    if (!(flags & (1u << i))) continue;
    if (i < n)
      fprintf(o, "%s%s", any++ ? "," : "", names[i]);
    else
      fprintf(o, "%sbit%u", any++ ? "," : "", i);
  }
  fputc(')', o);
}

/* A field named like a key of the line's header (NetPlugin's "id") gets the type as a prefix. */
static int header_key(const char *name) {
  static const char *const keys[] = {"id", "thr", "ctx", "parent", "rank", "flags"};
  for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(name, keys[i])) return 1;
  return 0;
}

static void put_field(FILE *o, const ncs_event_t *e, unsigned i) {
  const ncs_field_t *f = &ncs_schema[e->type].fields[i];
  if (header_key(f->name))
    fprintf(o, " %s.%s=", ncs_schema[e->type].cli, f->name);
  else
    fprintf(o, " %s=", f->name);
  switch (f->kind) {
  case NCS_FK_I64: fprintf(o, "%" PRId64, (int64_t)e->f[i]); break;
  case NCS_FK_STR: ncs_put_str(o, e->fstr[i]); break;
  case NCS_FK_PTR: fprintf(o, "0x%" PRIx64, e->f[i]); break;
  case NCS_FK_REF: put_ref(o, e->fref_kind[i], e->f[i]); break;
  default: fprintf(o, "%" PRIu64, e->f[i]); break;
  }
}

/* a host time field of a derived record: 0 means unknown */
static void put_host_time(dump_t *d, const char *name, uint64_t ts) {
  fprintf(d->o, " %s=", name);
  if (ts)
    put_time(d, ts);
  else
    fputc('-', d->o);
}

/* ---------------------------------------------------------------- event lines */

static void line_start(dump_t *d, const ncs_event_t *e) {
  static const char *const sf[] = {"pxn", "v1", "trunc", "unsampled"};
  fprintf(d->o, " ctx=");
  put_ctx(d->o, e->ctx_kind, e->ctx);
  fprintf(d->o, " parent=");
  put_ref(d->o, e->parent_kind, e->parent);
  fprintf(d->o, " rank=%d flags=", e->rank);
  put_flags(d->o, e->flags, sf, 4);
  for (unsigned i = 0; i < e->nfields; i++) put_field(d->o, e, i);
}

static void line_complete(dump_t *d, const ncs_event_t *e) {
  static const char *const cf[] = {"kernel", "proxy", "revised", "forced", "nochildren", "group"};
  fprintf(d->o, " flags=");
  put_flags(d->o, e->cflags, cf, 6);
  put_host_time(d, "end", e->end_ns);
  put_host_time(d, "firstChild", e->first_child_ns);
  fprintf(d->o, " gpuStart=%" PRIu64 " gpuStop=%" PRIu64 " kernelCh=%u proxyOp=%u open=%u",
          e->gpu_start, e->gpu_stop, e->n_kernel_ch, e->n_proxy_op, e->n_open);
}

static void line_event(dump_t *d, const ncs_event_t *e) {
  static const char *const kinds[] = {"?",        "START",   "STOP",   "STATE",
                                      "COMPLETE", "EXPIRED", "BADCALL"};
  static const char *const reasons[] = {"?", "timeout", "segment-end", "evicted"};
  int timed = e->kind <= NCS_REC_STATE || e->kind == NCS_REC_BADCALL ||
              (e->kind == NCS_REC_COMPLETE && e->end_ns);
  put_prefix(d, timed, e->kind == NCS_REC_COMPLETE ? e->end_ns : e->ts);
  fprintf(d->o, "%s %s id=%" PRIu64, kinds[e->kind], ncs_type_name(e->type), e->id);
  if (e->kind <= NCS_REC_STATE || e->kind == NCS_REC_BADCALL) fprintf(d->o, " thr=%u", e->thread);
  switch (e->kind) {
  case NCS_REC_START: line_start(d, e); break;
  case NCS_REC_STATE:
    fprintf(d->o, " state=%s(%u) arg0=%" PRIu64 " arg1=%" PRIu64, ncs_state_name(e->state),
            e->state, e->arg0, e->arg1);
    break;
  case NCS_REC_COMPLETE: line_complete(d, e); break;
  case NCS_REC_BADCALL:
    fprintf(d->o, " call=%s handle=0x%" PRIx64 " state=%s(%u) arg0=%" PRIu64 " arg1=%" PRIu64,
            e->flags == NCS_BC_STOP ? "stop" : "state", e->id, ncs_state_name(e->state), e->state,
            e->arg0, e->arg1);
    break;
  case NCS_REC_EXPIRED:
    fprintf(d->o, " reason=%s", e->reason < 4 ? reasons[e->reason] : "?");
    if (e->reason >= 4) fprintf(d->o, "(%u)", e->reason);
    put_host_time(d, "start", e->start_ns);
    break;
  }
  fputc('\n', d->o);
}

/* ---------------------------------------------------------------- GPU lines (trace/gpu.h) */

static void line_gpu_state(dump_t *d, const ncs_gpu_state_t *g) {
  static const char *const gf[] = {"final", "summary"};
  if (g->clock_mono_ns && g->clock_cupti_ns) {
    d->cupti_off = (int64_t)(g->clock_cupti_ns - g->clock_mono_ns);
    d->have_pair = 1;
  }
  put_prefix(d, g->since_ns != 0, g->since_ns);
  fprintf(d->o, "GPU_STATE state=%s flags=", ncs_gpu_state_name(g->state));
  put_flags(d->o, g->flags, gf, 2);
  fputs(" reason=", d->o);
  ncs_put_str(d->o, g->reason);
  fputs(" lib=", d->o);
  ncs_put_str(d->o, g->library);
  fprintf(d->o, " version=%u holder=", g->api_version);
  ncs_put_str(d->o, g->holder);
  fprintf(d->o, " clockMono=%" PRIu64 " clockCupti=%" PRIu64 " clockWidth=%" PRIu64, g->clock_mono_ns,
          g->clock_cupti_ns, g->clock_width_ns);
  for (uint32_t i = 0; i < g->ncounters; i++) {
    const char *n = ncs_gpu_counter_name(g->keys[i]);
    if (n)
      fprintf(d->o, " %s=%" PRIu64, n, g->values[i]);
    else
      fprintf(d->o, " gpu_0x%x=%" PRIu64, g->keys[i], g->values[i]);
  }
  fputc('\n', d->o);
}

static void line_gpu_kernel(dump_t *d, const ncs_gpu_rec_t *g) {
  static const char *const kf[] = {"eager", "graph", "badtime", "device", "replayorder", "byindex"};
  fprintf(d->o, " corr=%" PRIu64 " start=%" PRIu64 " end=%" PRIu64 " dur=%" PRIu64 " device=%u stream=%" PRIu64
          " name=", g->corr, g->start, g->end, g->end - g->start, g->device, g->stream);
  if (g->name)
    ncs_put_str(d->o, g->name);
  else
    fprintf(d->o, "-");
  fprintf(d->o, " graph=%" PRIu64 " node=0x%" PRIx64 " launch=%" PRIu64 " replay=%u flags=", g->graph,
          g->node, g->launch, g->replay);
  put_flags(d->o, g->flags, kf, 6);
}

static void line_gpu(dump_t *d, const ncs_gpu_rec_t *g) {
  static const char *const lf[] = {"graph", "repeat"};
  int host = g->kind == NCS_GR_LAUNCH || g->kind == NCS_GR_GLAUNCH || g->kind == NCS_GR_PENDING;
  /* a kernel's t= is its start mapped to the monotonic clock by the latest clock pair */
  int kt = (g->kind == NCS_GR_KERNEL || g->kind == NCS_GR_SUMMARY) && d->have_pair && g->start;
  put_prefix(d, host || kt, host ? g->ts : (uint64_t)((int64_t)g->start - d->cupti_off));
  fprintf(d->o, "GPU %s", ncs_gpu_rec_name(g->kind));
  if (host) fprintf(d->o, " thr=%u", g->thread);
  switch (g->kind) {
  case NCS_GR_KERNEL: line_gpu_kernel(d, g); break;
  case NCS_GR_LAUNCH:
  case NCS_GR_PENDING:
    fprintf(d->o, " corr=%" PRIu64 " launch=%" PRIu64 " comm=", g->corr, g->launch);
    if (g->comm)
      fprintf(d->o, "%u", g->comm - 1);
    else
      fputc('-', d->o);
    fprintf(d->o, " group=%" PRIu64 " stream=0x%" PRIx64, g->group, g->stream);
    if (g->kind == NCS_GR_PENDING) fprintf(d->o, " graph=%" PRIu64, g->graph);
    fputs(" flags=", d->o);
    put_flags(d->o, g->flags, lf, 2);
    break;
  case NCS_GR_GNODE:
    fprintf(d->o, " launch=%" PRIu64 " corr=%" PRIu64 " node=0x%" PRIx64 " graph=%" PRIu64, g->launch,
            g->corr, g->node, g->graph);
    break;
  case NCS_GR_GEXEC: fprintf(d->o, " exec=%" PRIu64 " from=%" PRIu64, g->graph, g->orig); break;
  case NCS_GR_GCLONE:
    fprintf(d->o, " node=0x%" PRIx64 " from=0x%" PRIx64 " launch=%" PRIu64, g->node, g->orig, g->launch);
    break;
  case NCS_GR_GLAUNCH:
    fprintf(d->o, " corr=%" PRIu64 " exec=%" PRIu64 " stream=0x%" PRIx64, g->corr, g->graph, g->stream);
    break;
  default: /* SUMMARY */
    fprintf(d->o, " device=%u stream=%" PRIu64 " kernels=%" PRIu64 " busy=%" PRIu64 " start=%" PRIu64
            " end=%" PRIu64, g->device, g->stream, g->count, g->busy_ns, g->start, g->end);
    break;
  }
  fputc('\n', d->o);
}

/* ---------------------------------------------------------------- other lines */

static void line_segment(dump_t *d, const ncs_segment_info_t *s) {
  put_prefix(d, 1, s->start_mono_ns);
  fprintf(d->o, "SEGMENT version=%u plugin=", s->format_version);
  ncs_put_str(d->o, s->plugin_version);
  fprintf(d->o, " host=");
  ncs_put_str(d->o, s->host);
  fprintf(d->o, " pid=%" PRIu64 " epoch=%u mode=%s mask=0x%x(", s->pid, s->epoch,
          s->mode == NCS_MODE_TRACE    ? "trace"
          : s->mode == NCS_MODE_FLIGHT ? "flight"
          : s->mode == NCS_MODE_CAPTURE ? "capture"
                                        : "?",
          s->mask);
  ncs_put_mask(d->o, s->mask);
  fprintf(d->o, ") startRealtime=%" PRIu64 " startMono=%" PRIu64 " pool=%" PRIu64 " cmd=",
          s->start_realtime_ns, s->start_mono_ns, s->pool_bytes);
  ncs_put_str(d->o, s->cmdline);
  fputc('\n', d->o);
}

static void line_comm(dump_t *d, const ncs_comm_info_t *c) {
  put_prefix(d, 1, c->init_ns);
  fprintf(d->o, "COMM index=%u commId=" NCS_COMM_ID_FMT " name=", c->index, c->comm_id);
  ncs_put_str(d->o, c->name);
  fprintf(d->o, " rank=%d nranks=%d nNodes=%d abi=%u mask=0x%x(", c->rank, c->nranks, c->nnodes,
          c->abi_version, c->mask);
  ncs_put_mask(d->o, c->mask);
  fprintf(d->o, ") device=%d busId=", c->device);
  ncs_put_str(d->o, c->bus_id && c->bus_id[0] ? c->bus_id : "-");
  fprintf(d->o, "\n");
}

static void line_counters(dump_t *d, const ncs_item_t *it) {
  const ncs_counters_t *c = it->counters;
  uint64_t end = 0;
  for (uint32_t i = 0; i < c->nkeys; i++)
    if (c->keys[i] == NCS_CK_END_NS) end = c->values[i];
  put_prefix(d, end != 0, end);
  fputs(it->what == NCS_ITEM_FOOTER ? "FOOTER" : "COUNTERS", d->o);
  for (uint32_t i = 0; i < c->nkeys; i++) {
    char name[64];
    ncs_counter_name(c->keys[i], name, sizeof name);
    fprintf(d->o, " %s=%" PRIu64, name, c->values[i]);
  }
  fputc('\n', d->o);
}

/* LOSS reason=pool-full records=N from=T to=T types=Coll:3,ProxyStep:12 */
static void line_loss(dump_t *d, const ncs_loss_t *l) {
  put_prefix(d, 1, l->from_ns);
  fprintf(d->o, "LOSS reason=%s", ncs_loss_reason_name(l->reason));
  if (l->reason == 0 || l->reason > NCS_LOSS_MAX) fprintf(d->o, "(%u)", l->reason);
  fprintf(d->o, " records=%" PRIu64, l->records);
  put_host_time(d, "from", l->from_ns);
  put_host_time(d, "to", l->to_ns);
  fputs(" types=", d->o);
  uint64_t known = 0;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    if (!l->by_type[t]) continue;
    fprintf(d->o, "%s%s:%" PRIu64, known ? "," : "", ncs_schema[t].name, l->by_type[t]);
    known += l->by_type[t];
  }
  if (known < l->records) fprintf(d->o, "%s?:%" PRIu64, known ? "," : "", l->records - known);
  fputc('\n', d->o);
}

/* ---------------------------------------------------------------- range lines (trace/range.h) */

static void line_range_state(dump_t *d, const ncs_range_state_t *s) {
  static const char *const sf[] = {"final", "rangesoff"};
  put_prefix(d, s->since_ns != 0, s->since_ns);
  fprintf(d->o, "RANGE_STATE nvtx=%s nvtxPath=", ncs_nvtx_state_name(s->nvtx));
  ncs_put_str(d->o, s->nvtx_path);
  fputs(" flags=", d->o);
  put_flags(d->o, s->flags, sf, 2);
  fprintf(d->o, " metrics=%s reason=", ncs_hwm_state_name(s->mx_state));
  ncs_put_str(d->o, s->reason);
  fputs(" chip=", d->o);
  ncs_put_str(d->o, s->chip);
  fprintf(d->o, " replay=%s passes=%u level=%u thread=", ncs_replay_name(s->replay), s->passes, s->level);
  if (s->mx_thread)
    fprintf(d->o, "%u", s->mx_thread - 1);
  else
    fputc('-', d->o);
  fprintf(d->o, " bufferRanges=%u list=", s->buffer_ranges);
  for (uint32_t i = 0; i < s->nmetrics; i++) {
    if (i) fputc(',', d->o);
    ncs_put_str(d->o, s->metric[i]);
    fprintf(d->o, ":%s", ncs_metric_type_name(s->metric_type[i]));
  }
  if (!s->nmetrics) fputc('-', d->o);
  for (uint32_t i = 0; i < s->ncounters; i++) {
    const char *n = ncs_range_counter_name(s->keys[i]);
    if (n)
      fprintf(d->o, " %s=%" PRIu64, n, s->values[i]);
    else
      fprintf(d->o, " range_0x%x=%" PRIu64, s->keys[i], s->values[i]);
  }
  fputc('\n', d->o);
}

static void put_label(FILE *o, const char *key, uint64_t id, const char *s) {
  fprintf(o, " %s=", key);
  if (s)
    ncs_put_str(o, s);
  else if (id)
    fprintf(o, "#%" PRIu64, id); /* a string id the file does not define */
  else
    fputc('-', o);
}

static void range_labels(dump_t *d, const ncs_range_rec_t *g) {
  put_label(d->o, "name", g->name_id, g->name);
  put_label(d->o, "domain", g->domain_id, g->domain);
  fprintf(d->o, " category=%u", g->category);
  if (g->payload_type) fprintf(d->o, " payload=%u:0x%" PRIx64, g->payload_type, g->payload);
}

static void line_range(dump_t *d, const ncs_range_rec_t *g) {
  static const char *const rf[] = {"startend", "api",     "truncated", "restated",
                                   "noname",   "endlost", "graph",     "replay"};
  int host = g->kind == NCS_RR_BEGIN || g->kind == NCS_RR_END || g->kind == NCS_RR_MARK;
  put_prefix(d, host, g->ts);
  fprintf(d->o, "RANGE %s", ncs_range_rec_name(g->kind));
  if (host) fprintf(d->o, " thr=%u", g->thread);
  switch (g->kind) {
  case NCS_RR_BEGIN:
    fprintf(d->o, " id=%" PRIu64 " parent=%" PRIu64 " depth=%u", g->id, g->parent, g->depth);
    range_labels(d, g);
    fprintf(d->o, " mid=%" PRIu64, g->mid);
    break;
  case NCS_RR_END: fprintf(d->o, " id=%" PRIu64, g->id); break;
  case NCS_RR_MARK:
    fprintf(d->o, " parent=%" PRIu64, g->parent);
    range_labels(d, g);
    break;
  case NCS_RR_LAUNCH: fprintf(d->o, " id=%" PRIu64 " corr=%" PRIu64, g->id, g->corr); break;
  default: /* METRICS: values in the order of the latest RANGE_STATE's list */
    fprintf(d->o, " mid=%" PRIu64 " values=", g->mid);
    for (uint32_t i = 0; i < g->nvalues; i++) fprintf(d->o, "%s%.17g", i ? "," : "", g->values[i]);
    if (!g->nvalues) fputc('-', d->o);
    break;
  }
  fputs(" flags=", d->o);
  put_flags(d->o, g->flags, rf, 8);
  fputc('\n', d->o);
}

/* One line for an item; returns 1 when a line was printed. */
static int line_item(dump_t *d, ncs_reader_t *r, const ncs_item_t *it) {
  if (it->what == NCS_ITEM_SEGMENT) {
    const ncs_segment_info_t *s = ncs_reader_segment(r);
    d->seg = s->index;
    d->seg_start = s->start_mono_ns;
    d->have_pair = 0;
    if (d->filtered) return 0;
    line_segment(d, s);
    return 1;
  }
  if (it->what == NCS_ITEM_EVENT) {
    if (!(d->types & (1u << it->ev.type))) return 0;
    line_event(d, &it->ev);
    return 1;
  }
  if (it->what == NCS_ITEM_GAP) { /* shown even with --type: records of any type may be lost */
    put_prefix(d, 0, 0);
    fprintf(d->o, "GAP offset=%" PRIu64 " bytes=%" PRIu64 " chunks=%u why=", it->gap.offset,
            it->gap.bytes, it->gap.chunks);
    ncs_put_str(d->o, it->gap.why);
    fputc('\n', d->o);
    return 1;
  }
  if (d->filtered) return 0;
  switch (it->what) {
  case NCS_ITEM_CLOCK:
    put_prefix(d, 1, it->clock_mono_ns);
    fprintf(d->o, "CLOCK mono=%" PRIu64 " realtime=%" PRIu64 "\n", it->clock_mono_ns,
            it->clock_realtime_ns);
    break;
  case NCS_ITEM_COMM: line_comm(d, &it->comm); break;
  case NCS_ITEM_COMM_END:
    put_prefix(d, 1, it->ts);
    fprintf(d->o, "COMM_END index=%u\n", it->comm.index);
    break;
  case NCS_ITEM_GPU_STATE: line_gpu_state(d, &it->gpu_state); break;
  case NCS_ITEM_GPU: line_gpu(d, &it->gpu); break;
  case NCS_ITEM_RANGE_STATE: line_range_state(d, &it->range_state); break;
  case NCS_ITEM_RANGE: line_range(d, &it->range); break;
  case NCS_ITEM_THREAD:
    put_prefix(d, 0, 0);
    fprintf(d->o, "THREAD index=%u tid=%" PRIu64 " name=", it->thread_index, it->thread_tid);
    ncs_put_str(d->o, it->thread_name);
    fputc('\n', d->o);
    break;
  case NCS_ITEM_LOSS: line_loss(d, &it->loss); break;
  case NCS_ITEM_COUNTERS:
  case NCS_ITEM_FOOTER: line_counters(d, it); break;
  default: return 0; /* an item this version does not print */
  }
  return 1;
}

/* ---------------------------------------------------------------- files */

/* Dump one file. Returns its NCS_DAMAGE_*, or -1 when it cannot be opened. */
static int dump_file(dump_t *d, const char *path) {
  char err[512];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  if (!r) {
    ncs_warn("%s: %s", path, err);
    return -1;
  }
  ncs_short_name(path, d->name, sizeof d->name);
  d->seg = 0;
  d->seg_start = 0;
  if (ncs_reader_empty(r)) /* a process that died before its first chunk: nothing of it is here */
    ncs_warn("%s: empty: only the file header, no segment (the process wrote nothing)", path);
  ncs_item_t it;
  int rc = 1, footer = 0;
  /* a failed output (a full disk) stops the dump: the rest would be lost as well */
  while (d->lines < d->limit && !ferror(d->o) && (rc = ncs_reader_next(r, &it)) > 0) {
    if (it.what == NCS_ITEM_SEGMENT || it.what == NCS_ITEM_FOOTER) footer = it.what == NCS_ITEM_FOOTER;
    if (it.what == NCS_ITEM_SEGMENT) d->segs++;
    d->lines += line_item(d, r, &it);
  }
  int damage = ncs_reader_damage(r);
  if (damage) ncs_warn("%s: %s", path, ncs_reader_error(r));
  /* a trace read to its end without a footer: what the process did after its last chunk is not
   * here (a flight file has none unless its process exited: its header says) */
  if (rc == 0 && !footer && ncs_reader_segment(r) && !ncs_reader_flight(r))
    ncs_warn("%s: the last segment has no footer: the process was killed or is still running, "
             "and what it did after the last chunk is not recorded",
             path);
  ncs_reader_close(r);
  return damage;
}

static int dump_paths(dump_t *d, char **paths, int npaths) {
  char **list;
  size_t n;
  int rc = ncs_gather_traces(paths, npaths, &list, &n);
  if (rc) return rc;
  int worst = NCS_DAMAGE_NONE;
  size_t tried = 0, opened = 0;
  for (size_t k = 0; k < n && d->lines < d->limit && !ferror(d->o); k++, tried++) {
    uint64_t segs = d->segs;
    int dmg = dump_file(d, list[k]);
    if (dmg < 0) dmg = NCS_DAMAGE_CORRUPT; /* unreadable: what it holds is lost */
    else if (d->segs > segs) opened++;   /* read: it holds a segment (an empty file does not) */
    if (dmg > worst) worst = dmg;
  }
  ncs_free_paths(list, n);
  /* no file could be read at all (docs/cli.md, "Exit status"); a --limit that stopped the dump
   * early is no such case */
  if (tried && !opened && d->lines < d->limit) return NCS_EXIT_NO_INPUT;
  return worst == NCS_DAMAGE_CORRUPT ? NCS_EXIT_DAMAGED : NCS_EXIT_OK; /* stdout: main.c */
}

/* On a terminal, each event line is cut at the terminal's width (as ps does; --wide, or a pipe,
 * gets whole lines): a stream that passes text through and drops what a line has beyond `width`
 * columns, ending a cut line with "~". */
typedef struct {
  FILE *to;
  int width, col;
  uint64_t cut; /* lines cut */
} cut_t;

static ssize_t cut_write(void *cookie, const char *buf, size_t size) {
  cut_t *c = cookie;
  for (size_t i = 0; i < size; i++) {
    char ch = buf[i];
    if (ch == '\n') {
      fputc('\n', c->to);
      c->col = 0;
      continue;
    }
    int cont = ((unsigned char)ch & 0xC0) == 0x80; /* a UTF-8 continuation byte: no column */
    if (c->col < c->width - 1 || (cont && c->col <= c->width - 1)) {
      fputc(ch, c->to);
      c->col += !cont;
    } else if (c->col == c->width - 1 && !cont) {
      fputc('~', c->to);
      c->col++, c->cut++;
    }
  }
  return (ssize_t)size;
}

int ncs_cmd_dump(int argc, char **argv) {
  static const struct option opts[] = {
      {"stats", no_argument, 0, 's'},       {"type", required_argument, 0, 't'},
      {"events", required_argument, 0, 't'},
      {"limit", required_argument, 0, 'n'}, {"abs", no_argument, 0, 'a'},
      {"wide", no_argument, 0, 'W'},        {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  dump_t d = {.o = stdout, .types = NCS_T_ALL, .limit = UINT64_MAX};
  int stats = 0, c, wide = 0;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":e:h", opts, NULL)) != -1) {
    switch (c) {
    case 's': stats = 1; break;
    case 'a': d.abs = 1; break;
    case 'W': wide = 1; break;
    case 'h': fputs(dump_help, stdout); return NCS_EXIT_OK;
    case 'e':
    case 't':
      if (ncs_check_events("dump", "--type", optarg, &d.types) != 0) return NCS_EXIT_USAGE;
      d.filtered = 1;
      break;
    case 'n':
      if (ncs_parse_count(optarg, 1, UINT64_MAX, &d.limit) != 0)
        return ncs_usage_error("dump", "--limit needs a positive number, not '%s'", optarg);
      break;
    default: return ncs_bad_option("dump", c, argv);
    }
  }
  if (optind >= argc) return ncs_usage_error("dump", "which trace? give a directory or a file");
  int width = wide ? 0 : ncs_term_width(STDOUT_FILENO);
  if (stats) { /* built in memory, then fitted to the terminal (docs/cli.md, "Terminal output") */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return NCS_EXIT_ERROR;
    int rc = ncs_stats_paths(argv + optind, argc - optind, m);
    fclose(m);
    ncs_fit(stdout, buf, len, width, 4);
    free(buf);
    return rc;
  }
  if (wide || !isatty(STDOUT_FILENO)) return dump_paths(&d, argv + optind, argc - optind);
  cut_t cut = {.to = stdout, .width = width};
  FILE *o = fopencookie(&cut, "w", (cookie_io_functions_t){.write = cut_write});
  if (!o) return dump_paths(&d, argv + optind, argc - optind);
  d.o = o;
  int rc = dump_paths(&d, argv + optind, argc - optind);
  fclose(o);
  if (cut.cut)
    ncs_note("%" PRIu64 " line%s cut at %d columns: --wide, or a pipe (| less -S), shows them whole", cut.cut,
             cut.cut == 1 ? "" : "s", width);
  return rc;
}
