/* report.c - `ncclscope report DIR [--json] [--top N] [--html FILE]`: cross-rank analysis of a
 * recorded job.
 *
 * The findings that matter come first (stragglers, slow ranks, mismatches, missing ranks), then
 * tables per communicator x collective x size bucket and per rank. The numbers come from
 * src/analyze (docs/report.md defines each of them and the --json schema); the findings are
 * selected by src/analyze/findings.c for the text, the JSON and the --html page alike.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/phases.h"
#include "analyze/ranges.h"
#include "cli/cli.h"
#include "trace/gpu.h"
#include "export/html_report.h"
#include "util/mem.h"
#include "util/outfile.h"
#include "util/fmt.h"

static const char report_help[] =
    "usage: ncclscope report [-j|--json] [-t|--top N] [--html FILE] [--wide] [--run N] DIR|FILE\n"
    "\n"
    "Cross-rank analysis of a recorded job: collectives matched across ranks by (commId, func,\n"
    "seqNumber), arrival skew and who arrived last, durations and bus bandwidth per size bucket,\n"
    "clock error bounds, mismatched collectives and unpaired sends/receives.\n"
    "\n"
    "  -j, --json    machine-readable output (schema: docs/report.md)\n"
    "  -t, --top N   stragglers and slow ranks listed (default 5)\n"
    "  --timing      print the seconds of each reading pass to stderr\n"
    "  --wide        every column of the size table (lat p99, algbw, busbw p95/p99, skew max)\n"
    "                and no wrapping; the default fits 80 to 120 columns\n"
    "  --no-color    no colour on a terminal (also: NO_COLOR set)\n"
    "  --no-pager    no pager on a terminal (default: $PAGER, else less -FRX)\n"
    "  --html FILE   also write one self-contained page with charts (busbw vs size, per-rank\n"
    "                skew heatmap, latency distributions) to FILE; '-' writes only the page to\n"
    "                stdout. The text (or --json) report is still printed.\n"
    "  --force       replace an existing --html FILE (it is refused otherwise)\n"
    "  --comm ID     only the communicator with this commId (0x and 16 hex digits)\n"
    "  --rank LIST   only collectives and sends/receives with one of these ranks (0,2,4-7)\n"
    "  --from T, --to T  only those whose first arrival is T after the job's first event\n"
    "                (1.5, 1.5s, 250ms)\n"
    "  --range NAME  only those with an operation called inside a user range of this name\n"
    "                (docs/ranges.md); NAME:N, NAME:N-M only the N-th (to M-th) range of it on\n"
    "                each thread, from 1; several --range: any of them\n"
    "  --tag LIST    only those with an operation whose NCCL user tag (ABI v7) is in LIST\n"
    "                (7, 3,5-9; 0 untagged). Filters combine: one operation must meet the\n"
    "                rank, range and tag filters; the report says what they left out\n"
    "  --run N|last  the N-th job (by start time) when DIR holds the traces of several runs;\n"
    "                without it such a DIR is refused, with the list of its runs\n"
    "  -h, --help    this help\n"
    "\n"
    "exit status: 0 ok, 2 usage error (or several runs and no --run, or a --comm, --range or\n"
    "--tag the job does not have), 3 no traces found, 4 a\n"
    "trace file is damaged (its readable chunks are analysed), 5 the output cannot be written\n"
    "(docs/cli.md)\n";



/* CUPTI: sources, files, overlap per GPU, replays (docs/report.md, "GPU truth") */
static const char *dev_file(const ncs_analysis_t *a, uint32_t d) {
  const char *p = a->job->procs[a->job->gdevs[d].proc].path, *b = strrchr(p, '/');
  return b ? b + 1 : p;
}

static void json_gpu(FILE *o, const ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  fprintf(o, "\"gpu\":{\"sources\":{");
  for (unsigned k = 0; k < NCS_GS_N; k++)
    fprintf(o, "%s\"%s\":%" PRIu64, k ? "," : "", ncs_gs_names[k], a->cov.gsrc[k]);
  fprintf(o, "},\"captured\":%" PRIu64 ",\"files_cupti\":%u,\"files_cupti_lost\":%u,\"files\":[",
          a->cov.captured, a->gpu.files_cupti, a->gpu.files_lost);
  for (uint32_t i = 0, n = 0; i < j->nprocs; i++) {
    const ncs_job_gpu_t *g = &j->gpu[i];
    if (j->procs[i].excluded) continue;
    fprintf(o, "%s{\"file\":", n++ ? "," : "");
    ncs_json_str(o, j->procs[i].path);
    fprintf(o, ",\"state\":\"%s\",\"reason\":", g->have_state ? ncs_gpu_state_name(g->state) : "none");
    ncs_json_str(o, g->reason);
    fprintf(o, ",\"holder\":");
    ncs_json_str(o, g->holder);
    fprintf(o,
            ",\"kernels\":%" PRIu64 ",\"nccl_eager\":%" PRIu64 ",\"nccl_replays\":%" PRIu64
            ",\"compute\":%" PRIu64 ",\"bad_time\":%" PRIu64 ",\"pending\":%" PRIu64
            ",\"cupti_dropped\":%" PRIu64 ",\"no_buffer\":%" PRIu64 ",\"lost\":",
            g->kernels, g->nccl_eager, g->nccl_replays, g->compute, g->bad_time, g->pending,
            g->cupti_dropped, g->no_buffer);
    ncs_json_str(o, g->lost);
    fputc('}', o);
  }
  fprintf(o, "],\"devices\":[");
  for (uint32_t k = 0; k < a->gpu.ndevs; k++) {
    const ncs_an_gdev_t *x = &a->gpu.devs[k];
    const ncs_job_gpu_dev_t *D = &j->gdevs[x->dev];
    fprintf(o, "%s\n{\"file\":", k ? "," : "");
    ncs_json_str(o, j->procs[D->proc].path);
    fprintf(o, ",\"device\":%d,\"rank\":%d,\"comm\":%d,\"nccl_kernels\":%" PRIu64
               ",\"compute_kernels\":%" PRIu64 ",\"from_ns\":%" PRId64 ",\"to_ns\":%" PRId64 ",",
            D->device, D->rank, D->comm == UINT32_MAX ? -1 : (int)D->comm, D->nccl_kernels,
            D->compute_kernels, D->from, D->to);
    if (x->known)
      fprintf(o, "\"comm_ns\":%" PRId64 ",\"compute_ns\":%" PRId64 ",\"overlap_ns\":%" PRId64
                 ",\"exposed_ns\":%" PRId64 ",\"cannot_tell\":\"\"}",
              x->ov.comm_ns, x->ov.compute_ns, x->ov.overlap_ns, x->ov.exposed_ns);
    else {
      fprintf(o, "\"comm_ns\":null,\"compute_ns\":null,\"overlap_ns\":null,\"exposed_ns\":null,\"cannot_tell\":");
      ncs_json_str(o, x->why);
      fputc('}', o);
    }
  }
  fprintf(o, "],\"replays\":[");
  for (uint32_t k = 0; k < a->gpu.nreplays; k++) {
    const ncs_an_replay_t *r = &a->gpu.replays[k];
    fprintf(o, "%s\n{\"comm\":%d,\"func\":", k ? "," : "", r->comm == UINT32_MAX ? -1 : (int)r->comm);
    ncs_json_str(o, r->func);
    fprintf(o, ",\"bytes\":%" PRIu64 ",\"instances\":%" PRIu64 ",\"incomplete\":%" PRIu64
               ",\"kernels\":%" PRIu64 ",\"lat_p50_ns\":%" PRId64 ",\"lat_max_ns\":%" PRId64 "}",
            r->bytes, r->instances, r->incomplete, r->kernels, r->lat_p50, r->lat_max);
  }
  fprintf(o, "]}");
}

static void put_wrapped(FILE *o, const char *first, const char *rest, const char *text);

/* the GPU section: sources, CUPTI per file, overlap per GPU, graph replays (80 columns; the
 * files of the overlap rows with --wide) */
static void print_gpu(FILE *o, const ncs_analysis_t *a, int wide) {
  const ncs_job_t *j = a->job;
  uint64_t ops = a->cov.gsrc[0] + a->cov.gsrc[1] + a->cov.gsrc[2];
  char line[2048];
  int n = snprintf(line, sizeof line, "GPU times by source: CUPTI %" PRIu64 ", KernelCh %" PRIu64 ", none %" PRIu64
                   " of %" PRIu64 " operations",
                   a->cov.gsrc[NCS_GS_CUPTI], a->cov.gsrc[NCS_GS_KERNELCH], a->cov.gsrc[NCS_GS_NONE], ops);
  if (a->cov.captured && n > 0 && (size_t)n < sizeof line)
    snprintf(line + n, sizeof line - (size_t)n,
             " (%" PRIu64 " captured into CUDA graphs: their GPU work is their replays)", a->cov.captured);
  put_wrapped(o, "", "  ", line);
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_gpu_t *g = &j->gpu[i];
    if (j->procs[i].excluded || !g->have_state || (!g->kernels && g->state == NCS_GPU_OFF)) continue;
    size_t k = (size_t)snprintf(line, sizeof line, "%s: CUPTI %s", j->procs[i].path, ncs_gpu_state_name(g->state));
#define ADD(...) if (k < sizeof line) k += (size_t)snprintf(line + k, sizeof line - k, __VA_ARGS__)
    if (*g->holder) ADD(" (held by %s)", g->holder);
    if (*g->reason && g->state != NCS_GPU_ACTIVE) ADD(" (%s)", g->reason);
    if (g->kernels)
      ADD(", %" PRIu64 " kernels: %" PRIu64 " NCCL eager, %" PRIu64 " NCCL replayed, %" PRIu64
          " other; %" PRIu64 " launches never completed",
          g->kernels, g->nccl_eager, g->nccl_replays, g->compute, g->pending);
    if (*g->lost) ADD("; incomplete: %s", g->lost);
#undef ADD
    put_wrapped(o, "  ", "    ", line);
  }
  if (!a->gpu.ndevs) {
    put_wrapped(o, "  ", "  ", "no CUPTI kernel records: no compute/communication overlap (record with --cupti on)");
    fputc('\n', o);
    return;
  }
  fputc('\n', o);
  put_wrapped(o, "", "  ", "Compute/communication overlap per GPU (CUPTI; exposed = NCCL kernels running with no "
                           "other kernel)");
  fprintf(o, "  %-4s %4s %3s %7s %7s %9s %9s %9s %9s %6s%s\n", "comm", "rank", "dev", "nccl k", "other k",
          "comm", "compute", "overlap", "exposed", "exp%", wide ? "  file" : "");
  for (uint32_t k = 0; k < a->gpu.ndevs; k++) {
    const ncs_an_gdev_t *x = &a->gpu.devs[k];
    const ncs_job_gpu_dev_t *D = &j->gdevs[x->dev];
    char c[16] = "-", r[16] = "-";
    if (D->comm != UINT32_MAX) snprintf(c, sizeof c, "%u", D->comm);
    if (D->rank >= 0) snprintf(r, sizeof r, "%d", D->rank);
    fprintf(o, "  %-4s %4s %3d %7" PRIu64 " %7" PRIu64 " ", c, r, D->device, D->nccl_kernels,
            D->compute_kernels);
    if (!x->known) {
      snprintf(line, sizeof line, "cannot tell: %s (%s)", x->why, dev_file(a, x->dev));
      put_wrapped(o, "", "    ", line);
      continue;
    }
    char t1[24], t2[24], t3[24], t4[24];
    ncs_fmt_ns(t1, sizeof t1, (double)x->ov.comm_ns), ncs_fmt_ns(t2, sizeof t2, (double)x->ov.compute_ns);
    ncs_fmt_ns(t3, sizeof t3, (double)x->ov.overlap_ns), ncs_fmt_ns(t4, sizeof t4, (double)x->ov.exposed_ns);
    fprintf(o, "%9s %9s %9s %9s %5.1f%%%s%s\n", t1, t2, t3, t4,
            ncs_pct((uint64_t)x->ov.exposed_ns, (uint64_t)x->ov.comm_ns), wide ? "  " : "",
            wide ? dev_file(a, x->dev) : "");
  }
  if (a->gpu.nreplays) {
    fputc('\n', o);
    put_wrapped(o, "", "  ", "CUDA graph replays of NCCL operations (CUPTI; metadata from the capture; latency = "
                             "slowest rank's kernel)");
    fprintf(o, "  %-4s %-13s %10s %9s %10s %7s %9s %9s\n", "comm", "func", "bytes", "instances",
            "incomplete", "kernels", "lat p50", "lat max");
    for (uint32_t k = 0; k < a->gpu.nreplays; k++) {
      const ncs_an_replay_t *rp = &a->gpu.replays[k];
      char c[16] = "-", l1[24] = "-", l2[24] = "-";
      if (rp->comm != UINT32_MAX) snprintf(c, sizeof c, "%u", rp->comm);
      if (rp->lat_p50 >= 0) ncs_fmt_ns(l1, sizeof l1, (double)rp->lat_p50);
      if (rp->lat_max >= 0) ncs_fmt_ns(l2, sizeof l2, (double)rp->lat_max);
      fprintf(o, "  %-4s %-13.13s %10" PRIu64 " %9" PRIu64 " %10" PRIu64 " %7" PRIu64 " %9s %9s\n", c,
              rp->func, rp->bytes, rp->instances, rp->incomplete, rp->kernels, l1, l2);
    }
  }
  fputc('\n', o);
}

/* "coverage" and "warnings" (docs/report.md, "Coverage") */
static void json_coverage(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f) {
  fprintf(o, "\"coverage\":{\"files\":%u,\"unreadable\":%u,\"damaged\":%u,\"segments_without_footer\":%u,"
             "\"duplicates\":%u,\"other_job_files\":%u,\"job\":%u,\"jobs\":%u,\"lost_records\":{",
          a->cov.files, a->cov.unreadable, a->cov.damaged, a->cov.no_footer, a->cov.duplicates,
          a->cov.other_job, a->job->job, a->job->njobs);
  for (unsigned k = 1; k <= NCS_JL_UNKNOWN; k++)
    fprintf(o, "%s\"%s\":%" PRIu64, k > 1 ? "," : "", ncs_jl_names[k], a->cov.lost[k]);
  fprintf(o, "},\"loss_windows\":{");
  for (unsigned k = 1; k <= NCS_JL_UNKNOWN; k++)
    fprintf(o, "%s\"%s\":%" PRIu64, k > 1 ? "," : "", ncs_jl_names[k], a->cov.windows[k]);
  fprintf(o,
          "},\"operation_calls\":%" PRIu64 ",\"operation_calls_lost\":%" PRIu64
          ",\"write_errors\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"gap_bytes\":%" PRIu64
          ",\"groups\":%" PRIu64 ",\"groups_unsampled\":%" PRIu64 ",\"damaged_operations\":%" PRIu64
          ",\"untracked_communicators\":%" PRIu64 ",\"operations_without_communicator\":%" PRIu64
          ",\"evicted_events\":%" PRIu64 ",\"evicted_operations\":%" PRIu64 ",\"max_comms\":%u"
          ",\"track_max\":%u,\"timing\":{",
          a->cov.op_calls, a->cov.op_lost, a->cov.write_errors, a->cov.gaps, a->cov.gap_bytes,
          a->cov.groups, a->cov.groups_unsampled, a->cov.damaged_ops, a->cov.comms_untracked,
          a->cov.no_comm_ops, a->cov.evicted, a->cov.evicted_ops, a->cov.max_comms, a->cov.track_max);
  for (unsigned k = 0; k < NCS_SRC_N; k++)
    fprintf(o, "%s\"%s\":%" PRIu64, k ? "," : "", ncs_src_names[k], a->cov.timing[k]);
  fprintf(o, "}},\n\"warnings\":[");
  for (uint32_t k = 0; k < f->nwarn; k++) {
    fprintf(o, "%s{\"key\":\"%s\",\"text\":", k ? "," : "", f->warn[k].key);
    ncs_json_str(o, f->warn[k].text);
    fputc('}', o);
  }
  fprintf(o, "],\"no_finding\":");
  ncs_json_str(o, f->n ? "" : f->none);
}

/* ABI v7 (docs/report.md, "GPU phases and user tags"): {"comm_ranks":..,"ops":..,...} */
static void print_v7_json(FILE *o, const ncs_v7_t *v) {
  fprintf(o, "{\"processes\":%u,\"comm_ranks\":%u,\"operations\":%" PRIu64 ",\"incomplete\":%" PRIu64
             ",\"gpu_phases\":{\"operations\":%" PRIu64 ",\"without_phases\":%" PRIu64 ",\"ranks\":[",
          v->procs, v->v7_comm_ranks, v->ops, v->incomplete, v->all.ops, v->all.ops_without);
  for (uint32_t k = 0; k < v->nranks; k++) {
    const ncs_v7_rank_t *r = &v->ranks[k];
    fprintf(o, "%s\n{\"comm\":%u,\"rank\":%d,\"operations\":%" PRIu64 ",\"without_phases\":%" PRIu64,
            k ? "," : "", r->comm, r->rank, r->sum.ops, r->sum.ops_without);
    for (int p = 0; p < NCS_GPU_PHASES; p++)
      fprintf(o, ",\"%s_ns\":%" PRIu64, ncs_gpu_phase_names[p], r->sum.ops ? r->sum.ns[p] / r->sum.ops : 0);
    fputc('}', o);
  }
  fprintf(o, "]},\n\"user_tags\":{\"untagged\":%" PRIu64 ",\"unknown\":%" PRIu64 ",\"tags\":[",
          v->tags.untagged, v->tags.unknown);
  int64_t t0 = INT64_MAX; /* times from the first tagged operation's start */
  for (size_t k = 0; k < v->tags.n; k++)
    if (v->tags.v[k].first_start < t0) t0 = v->tags.v[k].first_start;
  for (size_t k = 0; k < v->tags.n; k++) {
    const ncs_tag_t *t = &v->tags.v[k];
    fprintf(o, "%s\n{\"tag\":%" PRIu64 ",\"operations\":%" PRIu64 ",\"start_ns\":%" PRId64
               ",\"span_ns\":%" PRId64 ",\"busy_ns\":%" PRId64 "}",
            k ? "," : "", t->tag, t->ops, t->first_start - t0, t->last_end - t->first_start, t->busy);
  }
  fprintf(o, "]},\n\"symmetric\":{\"collectives\":%" PRIu64 ",\"symmetric\":%" PRIu64 ",\"variants\":[",
          v->colls, v->sym_colls);
  for (uint32_t k = 0; k < v->nvariants; k++) {
    fprintf(o, "%s{\"func\":", k ? "," : "");
    ncs_json_str(o, v->variants[k].func);
    fprintf(o, ",\"variant\":");
    ncs_json_str(o, v->variants[k].variant);
    fprintf(o, ",\"operations\":%" PRIu64 "}", v->variants[k].ops);
  }
  fprintf(o, "]}}");
}

/* ABI v7 in text: said only when NCCL called some communicator through v7 */
static void put_wrapped(FILE *o, const char *first, const char *rest, const char *text);
static void print_v7_text(FILE *o, const ncs_v7_t *v) {
  if (!v->v7_comm_ranks) return;
  fprintf(o, "\nNCCL 2.31 (profiler ABI v7): %u communicator ranks in %u of the processes\n",
          v->v7_comm_ranks, v->procs);
  if (v->all.ops) {
    put_wrapped(o, "  ", "    ", "GPU time by kernel phase (mean per operation and channel; "
                                 "initial sync = waiting for peers, a GPU-side skew):");
    fprintf(o, "  %-5s %5s %10s %12s %12s %12s %9s\n", "comm", "rank", "ops", "initial sync",
            "compute", "final sync", "initial%");
    for (uint32_t k = 0; k < v->nranks; k++) {
      const ncs_v7_rank_t *r = &v->ranks[k];
      if (!r->sum.ops) continue;
      char t[NCS_GPU_PHASES][24];
      uint64_t tot = 0;
      for (int p = 0; p < NCS_GPU_PHASES; p++)
        ncs_fmt_ns(t[p], sizeof t[p], (double)r->sum.ns[p] / (double)r->sum.ops), tot += r->sum.ns[p];
      fprintf(o, "  %-5u %5d %10" PRIu64 " %12s %12s %12s %8.0f%%\n", r->comm, r->rank, r->sum.ops,
              t[0], t[1], t[2], ncs_pct(r->sum.ns[0], tot));
    }
  }
  if (v->all.ops_without) {
    char line[256];
    snprintf(line, sizeof line, "GPU phases: cannot tell for %" PRIu64 " operations with kernel "
             "channels but no KernelPhase (not recorded: NCCLSCOPE_EVENTS without kernelphase?)",
             v->all.ops_without);
    put_wrapped(o, "  ", "    ", line);
  }
  if (v->tags.n) {
    fprintf(o, "  User tags (steps): %zu tags, %" PRIu64 " untagged operations\n  %12s %10s %14s %14s\n",
            v->tags.n, v->tags.untagged, "tag", "ops", "span", "busy");
    for (size_t k = 0; k < v->tags.n; k++) {
      const ncs_tag_t *t = &v->tags.v[k];
      char sp[24], b[24];
      ncs_fmt_ns(sp, sizeof sp, (double)(t->last_end - t->first_start));
      ncs_fmt_ns(b, sizeof b, (double)t->busy);
      fprintf(o, "  %12" PRIu64 " %10" PRIu64 " %14s %14s\n", t->tag, t->ops, sp, b);
    }
  } else {
    fprintf(o, "  User tags: none (%" PRIu64 " operations untagged)\n", v->tags.untagged);
  }
  if (v->sym_colls) {
    char line[2048];
    size_t n = (size_t)snprintf(line, sizeof line, "Symmetric kernels: %" PRIu64 " of %" PRIu64
                                " collectives:", v->sym_colls, v->colls);
    for (uint32_t k = 0; k < v->nvariants && n < sizeof line; k++)
      n += (size_t)snprintf(line + n, sizeof line - n, "%s %s %" PRIu64, k ? "," : "",
                            v->variants[k].variant, v->variants[k].ops);
    put_wrapped(o, "  ", "    ", line);
  }
}

/* a bucket's breakdown (docs/report.md, "Breakdown") */
static void json_bucket_bd(FILE *o, const ncs_an_bucket_t *b) {
  if (b->bd_label < 0) {
    fprintf(o, ",\"breakdown\":null");
    return;
  }
  fprintf(o, ",\"breakdown\":{\"label\":\"%s\",\"reason\":", ncs_bn_names[b->bd_label]);
  ncs_json_str(o, ncs_bw_text[b->bd_label == NCS_BN_CANNOT ? b->bd_reason : 0]);
  fprintf(o, ",\"wait_rank\":%d,\"instances\":%" PRIu64 ",\"labels\":{", b->bd_wait_rank, b->bd_n);
  for (int l = 0; l < NCS_BN_N; l++)
    fprintf(o, "%s\"%s\":%" PRIu64, l ? "," : "", ncs_bn_names[l], b->bd_labels[l]);
  fprintf(o, "},\"launch_ns\":%" PRId64 ",\"span_ns\":%" PRId64, b->bd_launch, b->bd_span);
  for (int p = 0; p < NCS_PH_N; p++) fprintf(o, ",\"%s_ns\":%" PRId64, ncs_ph_names[p], b->bd_ph[p]);
  fprintf(o, ",\"network_bytes\":%" PRIu64 "}", b->bd_bytes);
}

/* links and NetPlugin QPs over the job (docs/report.md, "Breakdown") */
static void json_breakdown(FILE *o, const ncs_analysis_t *a) {
  fprintf(o, ",\n\"breakdown\":{\"instances\":%" PRIu64 ",\"labels\":{", a->bd_instances);
  for (int l = 0; l < NCS_BN_N; l++)
    fprintf(o, "%s\"%s\":%" PRIu64, l ? "," : "", ncs_bn_names[l], a->bd_labels[l]);
  fprintf(o, "},\"links\":[");
  for (uint32_t k = 0; k < a->nlinks; k++) {
    const ncs_an_link_t *L = &a->links[k];
    fprintf(o,
            "%s\n{\"comm\":%u,\"rank\":%d,\"peer\":%d,\"channel\":%u,\"dir\":\"%s\",\"ops\":%" PRIu64
            ",\"steps\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"active_ns\":%" PRId64 ",\"gbs\":%.4f",
            k ? "," : "", L->comm, L->rank, L->peer, L->channel, L->is_send ? "send" : "recv", L->ops,
            L->steps, L->bytes, L->active, L->active > 0 ? (double)L->bytes / (double)L->active : 0);
    for (int p = 0; p < NCS_PH_N; p++) fprintf(o, ",\"%s_ns\":%" PRId64, ncs_ph_names[p], L->ph[p]);
    fputc('}', o);
  }
  fprintf(o, "],\"net\":[");
  for (uint32_t k = 0; k < a->nnetqs; k++) {
    const ncs_an_netq_t *q = &a->netqs[k];
    fprintf(o,
            "%s\n{\"comm\":%u,\"rank\":%d,\"kind\":\"%s\",\"device\":%d,\"qp\":%" PRId64
            ",\"events\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"ns\":%" PRId64 ",\"gbs\":%.4f}",
            k ? "," : "", q->comm, q->rank, q->kind == 1 ? "ib" : q->kind == 2 ? "socket" : "unknown",
            q->device, q->qp, q->events, q->bytes, q->ns, q->ns > 0 ? (double)q->bytes / (double)q->ns : 0);
  }
  fprintf(o, "]}");
}

/* a number or null (NaN: cannot be told) */
static void json_num(FILE *o, double v) {
  if (isnan(v) || isinf(v))
    fputs("null", o);
  else
    fprintf(o, "%.17g", v);
}

static void json_range_agg(FILE *o, const ncs_range_agg_t *g, int rank) {
  fprintf(o, "{\"name\":");
  ncs_json_str(o, g->name);
  if (rank) fprintf(o, ",\"rank\":%d", g->rank);
  fprintf(o, ",\"ranks\":%u,\"ranges\":%" PRIu64 ",\"measured\":%" PRIu64 ",\"no_end\":%" PRIu64
             ",\"partial\":%" PRIu64 ",\"wall_ns\":%" PRIu64 ",\"wall_mean_ns\":%" PRIu64
             ",\"wall_max_ns\":%" PRIu64 ",\"colls\":%" PRIu64 ",\"p2ps\":%" PRIu64
             ",\"ops_without_gpu\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"comm_ns\":%" PRIu64
             ",\"comm_partial\":%" PRIu64 ",\"busbw_gbps\":",
          g->ranks, g->ranges, g->measured, g->no_end, g->partial, g->wall_ns,
          g->measured ? g->wall_ns / g->measured : 0, g->wall_max_ns, g->colls, g->p2ps, g->ops_without_gpu,
          g->bytes, g->comm_ns, g->comm_partial);
  json_num(o, g->comm_ns ? g->bus_gbps : NAN);
  int known = g->measured && g->exposed_known == g->measured;
  fprintf(o, ",\"compute_ns\":");
  json_num(o, known ? (double)g->compute_ns : NAN);
  fprintf(o, ",\"exposed_ns\":");
  json_num(o, known ? (double)g->exposed_ns : NAN);
  fprintf(o, ",\"metrics\":{");
  for (uint32_t m = 0; m < g->nmetrics; m++) {
    fprintf(o, "%s", m ? "," : "");
    ncs_json_str(o, g->metric[m]);
    fputc(':', o);
    json_num(o, g->value[m]);
  }
  fprintf(o, "},\"with_values\":%" PRIu64 ",\"dram_gbps\":", g->with_values);
  json_num(o, g->dram_gbps);
  fputc('}', o);
}

static void print_ranges_json(FILE *o, const ncs_ranges_t *r) {
  fprintf(o, "{\"files\":%u,\"ranges\":%" PRIu64 ",\"marks\":%" PRIu64 ",\"end_lost\":%" PRIu64
             ",\"open\":%" PRIu64 ",\"partial\":%" PRIu64 ",\"records_lost\":%" PRIu64
             ",\"begin_lost\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"no_slot\":%" PRIu64
             ",\"untracked\":%" PRIu64 ",\"write_lost\":%" PRIu64 ",\"files_without_kernels\":%u,"
             "\n\"by_name\":[",
          r->files, r->ranges, r->marks, r->end_lost, r->open, r->partial, r->lost, r->begin_lost, r->dropped,
          r->no_slot, r->untracked, r->write_lost, r->files_no_kernels);
  for (size_t k = 0; k < r->nnames; k++) fputs(k ? ",\n" : "", o), json_range_agg(o, &r->by_name[k], 0);
  fprintf(o, "],\n\"by_rank\":[");
  for (size_t k = 0; k < r->nrank; k++) fputs(k ? ",\n" : "", o), json_range_agg(o, &r->by_rank[k], 1);
  fprintf(o, "]}");
}

/* user ranges in text: the names by time (top N), what was lost, the metrics */
static void print_ranges_text(FILE *o, const ncs_ranges_t *r, uint32_t top, int wide) {
  if (!r->ranges && !r->marks && !r->lost && !r->begin_lost && !r->end_lost && !r->open) return;
  char line[1024];
  fputc('\n', o);
  snprintf(line, sizeof line, "User ranges: %" PRIu64 " ranges, %" PRIu64 " marks in %u file%s; top %u names by "
           "wall time (sums over ranks)", r->ranges, r->marks, r->files, r->files == 1 ? "" : "s", top);
  put_wrapped(o, "", "  ", line);
  if (r->lost || r->begin_lost || r->end_lost) {
    snprintf(line, sizeof line, "lost: %" PRIu64 " range records dropped or not written, %" PRIu64 " ranges whose "
             "end was lost (no numbers), %" PRIu64 " pops whose push was lost (not shown)",
             r->lost, r->end_lost, r->begin_lost);
    put_wrapped(o, "  ! ", "    ", line);
  }
  if (r->open) {
    snprintf(line, sizeof line, "%" PRIu64 " ranges never ended in the trace (no numbers)", r->open);
    put_wrapped(o, "  ! ", "    ", line);
  }
  if (r->partial) {
    snprintf(line, sizeof line, "%" PRIu64 " ranges began before the trace's window (lower bounds, not summed)",
             r->partial);
    put_wrapped(o, "  ! ", "    ", line);
  }
  /* 80 columns: the ranks and the mean with --wide */
  if (wide)
    fprintf(o, "  %-14s %5s %6s %9s %9s %6s %9s %9s %6s %9s\n", "name", "ranks", "count", "wall", "mean",
            "ops", "bytes", "comm", "GB/s", "exposed");
  else
    fprintf(o, "  %-14s %6s %9s %6s %9s %10s %6s %9s\n", "name", "count", "wall", "ops", "bytes", "comm",
            "GB/s", "exposed");
  int unk = 0, bound = 0;
  for (size_t k = 0; k < r->nnames && k < top; k++) {
    const ncs_range_agg_t *g = &r->by_name[k];
    char w[24], m[24], b[24], c[24] = "-", e[24] = "unknown", bw[24] = "-", nm[15];
    ncs_fmt_ns(w, sizeof w, (double)g->wall_ns);
    ncs_fmt_ns(m, sizeof m, g->measured ? (double)g->wall_ns / (double)g->measured : 0);
    ncs_fmt_size(b, sizeof b, g->bytes);
    if (g->comm_ns || !g->ops_without_gpu) {
      char t[20];
      ncs_fmt_ns(t, sizeof t, (double)g->comm_ns);
      snprintf(c, sizeof c, "%s%s", g->comm_partial ? ">=" : "", t);
    }
    if (g->comm_ns) snprintf(bw, sizeof bw, "%.2f", g->bus_gbps);
    if (g->measured && g->exposed_known == g->measured)
      ncs_fmt_ns(e, sizeof e, (double)g->exposed_ns);
    else
      unk = 1;
    bound |= g->comm_partial != 0;
    snprintf(nm, sizeof nm, "%s", *g->name ? g->name : "(no name)");
    if (!g->measured) snprintf(w, sizeof w, "-"), snprintf(m, sizeof m, "-");
    if (wide)
      fprintf(o, "  %-14s %5u %6" PRIu64 " %9s %9s %6" PRIu64 " %9s %9s %6s %9s\n", nm, g->ranks, g->ranges, w,
              m, g->colls + g->p2ps, b, c, bw, e);
    else
      fprintf(o, "  %-14s %6" PRIu64 " %9s %6" PRIu64 " %9s %10s %6s %9s\n", nm, g->ranges, w,
              g->colls + g->p2ps, b, c, bw, e);
  }
  if (r->nnames > top) fprintf(o, "  (%zu more names: --top, or --json)\n", r->nnames - top);
  snprintf(line, sizeof line, "wall, ops, bytes, comm: summed over the ranges with known ends; comm = union of "
           "their NCCL kernels' GPU intervals (KernelCh)%s", bound ? "; >= some operations had no GPU time" : "");
  put_wrapped(o, "  ", "  ", line);
  if (unk)
    put_wrapped(o, "  ", "  ", "exposed unknown: no CUPTI kernel records for compute (NCCLSCOPE_CUPTI=on gives them)");
  for (size_t k = 0; k < r->nnames && k < top; k++) {
    const ncs_range_agg_t *g = &r->by_name[k];
    if (!g->nmetrics) continue;
    size_t n = (size_t)snprintf(line, sizeof line, "metrics %s (%" PRIu64 " ranges):", g->name, g->with_values);
    for (uint32_t q = 0; q < g->nmetrics && n < sizeof line; q++) {
      if (isnan(g->value[q]))
        n += (size_t)snprintf(line + n, sizeof line - n, " %s=cannot combine", g->metric[q]);
      else
        n += (size_t)snprintf(line + n, sizeof line - n, " %s=%.6g", g->metric[q], g->value[q]);
    }
    if (!isnan(g->dram_gbps) && n < sizeof line) snprintf(line + n, sizeof line - n, " dram=%.2f GB/s", g->dram_gbps);
    put_wrapped(o, "  ", "    ", line);
  }
}

static void print_json(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_v7_t *v,
                       const ncs_ranges_t *rg) {
  fprintf(o, "{\"schema\":\"ncclscope-report/1\",\"path\":");
  ncs_json_str(o, a->path);
  if (ncs_job_filter_active(&a->job->filter)) {
    char ft[512];
    ncs_job_filter_text(&a->job->filter, ft, sizeof ft);
    fprintf(o, ",\"filter\":{\"text\":");
    ncs_json_str(o, ft);
    fprintf(o, ",\"instances_left_out\":%" PRIu64 ",\"p2p_left_out\":%" PRIu64,
            a->job->run.filtered_inst, a->job->run.filtered_p2p);
    const ncs_job_filter_t *jf = &a->job->filter;
    if (jf->rsel || jf->tsel) /* what the --range and --tag selection could not tell */
      fprintf(o, ",\"selection\":{\"ranges\":%" PRIu64 ",\"partial\":%" PRIu64 ",\"end_unknown\":%" PRIu64
                 ",\"late\":%" PRIu64 ",\"range_records_lost\":%" PRIu64 ",\"files_lost\":%u,\"files_no_nvtx\":%u"
                 ",\"flight_numbered\":%s,\"ops_no_ranges\":%" PRIu64 ",\"ops_before_ranges\":%" PRIu64
                 ",\"ops_no_tag\":%" PRIu64 "}",
              a->job->sel.ranges, a->job->sel.partial, a->job->sel.end_unknown, a->job->sel.late,
              a->job->sel.records_lost, a->job->sel.files_lost, a->job->sel.files_no_nvtx,
              a->job->sel.flight_numbered ? "true" : "false", a->job->sel.ops_blind, a->job->sel.ops_early,
              a->job->sel.ops_no_tag);
    fputc('}', o);
  }
  fprintf(o, ",\"error_bound_ns\":%" PRId64 ",\"wall_ns\":%" PRId64 ",\"damaged_files\":%" PRIu64
             ",\n\"processes\":[",
          a->job->error, a->job->t_last - a->job->t_first, a->damaged_files);
  for (uint32_t i = 0, n = 0; i < a->job->nprocs; i++) {
    const ncs_job_proc_t *p = &a->job->procs[i];
    if (p->excluded) continue; /* not of this job: coverage and warnings say so */
    fprintf(o, "%s\n{\"file\":", n++ ? "," : "");
    ncs_json_str(o, p->path);
    fprintf(o, ",\"host\":");
    ncs_json_str(o, p->host);
    fprintf(o,
            ",\"pid\":%" PRIu64 ",\"clock_offset_ns\":%" PRId64 ",\"clock_spread_ns\":%" PRId64
            ",\"clock_pairs\":%u,\"gpu_clock\":{\"domain\":\"%s\",\"offset_ns\":%" PRId64
            ",\"gap_p50_ns\":%" PRId64 ",\"gap_p99_ns\":%" PRId64 ",\"gap_min_ns\":%" PRId64
            ",\"gap_max_ns\":%" PRId64 ",\"samples\":%" PRIu64 ",\"error_ns\":%" PRId64
            ",\"error_known_ns\":%" PRId64 ",\"offset_vs_realtime_ns\":%" PRId64
            ",\"drift_ppb\":%.1f,\"windows\":%u,\"stale_launch_bounds\":%" PRIu64 "}",
            p->pid, p->clk_off, p->clk_spread, p->clk_pairs,
            p->gpu_domain == NCS_GPU_REALTIME ? "realtime" : p->gpu_domain == NCS_GPU_OWN ? "own" : "none",
            p->gpu_off, p->gap_p50, p->gap_p99, p->gap_min, p->gap_max, p->gap_n, p->gpu_err,
            p->gpu_err_known, p->ngwin ? p->gpu_off - p->clk_off : 0, p->gpu_drift_ppb, p->ngwin,
            p->gpu_stale_bounds);
    fprintf(o, ",\"gpu_clock_windows\":[");
    for (uint32_t w = 0; w < p->ngwin && w < 64; w++) /* the first 64 (docs/report.md, "Clocks") */
      fprintf(o, "%s{\"from_ns\":%" PRId64 ",\"len_ns\":%" PRId64 ",\"offset_vs_realtime_ns\":%" PRId64
                 ",\"error_ns\":%" PRId64 ",\"samples\":%" PRIu64 ",\"launches\":%" PRIu64 ",\"step\":%s}",
              w ? "," : "", ncs_job_time(a->job, i, (uint64_t)p->gwin[w].from) - a->job->t_first,
              p->gwin[w].len, p->gwin[w].off - p->clk_off, p->gwin[w].err, p->gwin[w].n,
              p->gwin[w].launches, p->gwin[w].step ? "true" : "false");
    fprintf(o, "]");
    const ncs_job_gchk_t *g = &p->gchk;
    fprintf(o,
            ",\"gpu_check\":{\"ops\":%" PRIu64 ",\"ok\":%" PRIu64 ",\"repaired\":%" PRIu64
            ",\"unknown\":%" PRIu64 ",\"channels\":%" PRIu64 ",\"channels_bad\":%" PRIu64
            ",\"channels_before_previous\":%" PRIu64 ",\"channels_before_launch\":%" PRIu64
            ",\"channels_future\":%" PRIu64 ",\"channels_after_next\":%" PRIu64 ",\"channels_disagree\":%" PRIu64 ",\"channels_settling\":%" PRIu64
            ",\"claims_rejected\":%" PRIu64 ",\"inferred\":%" PRIu64 ",\"impossible\":%" PRIu64 ",\"disjoint\":%" PRIu64 "}}",
            g->ops, g->ok, g->repaired, g->unknown, g->channels, g->ch_bad, g->ch_before_prev,
            g->ch_before_launch, g->ch_future, g->ch_after_next, g->ch_disagree, g->ch_settling, g->claims_rejected, g->inferred,
            g->impossible, g->disjoint);
  }
  fprintf(o, "],\n\"hosts\":[");
  for (uint32_t h = 0; h < a->job->nhosts; h++) {
    fprintf(o, "%s{\"host\":", h ? "," : "");
    ncs_json_str(o, a->job->hosts[h].host);
    fprintf(o, ",\"offset_ns\":%" PRId64 ",\"error_ns\":%" PRId64 ",\"samples\":%" PRIu64 "}",
            a->job->hosts[h].offset, a->job->hosts[h].error, a->job->hosts[h].samples);
  }
  fprintf(o, "],\n\"communicators\":[");
  for (uint32_t c = 0; c < a->job->ncomms; c++)
    fprintf(o, "%s{\"index\":%u,\"comm_id\":\"" NCS_COMM_ID_FMT "\",\"nranks\":%d,\"nnodes\":%d,\"ranks_seen\":%d}",
            c ? "," : "", c, a->job->comms[c].comm_id, a->job->comms[c].nranks, a->job->comms[c].nnodes,
            a->job->comms[c].ranks_seen);
  fprintf(o,
          "],\n\"collectives\":{\"instances\":%" PRIu64 ",\"incomplete\":%" PRIu64
          ",\"evicted\":%" PRIu64 ",\"rank_ops\":%" PRIu64 ",\"duplicate_seq\":%" PRIu64
          ",\"unsampled\":%" PRIu64 ",\"mismatched\":%" PRIu64 ",\"mismatches\":[",
          a->instances, a->incomplete, a->job->run.evicted, a->coll_ops, a->unmatched_seq, a->unsampled,
          a->mismatched);
  for (uint32_t k = 0; k < a->nmism; k++) {
    const ncs_an_mismatch_t *m = &a->mism[k];
    fprintf(o, "%s{\"comm\":%u,\"func\":", k ? "," : "", m->comm);
    ncs_json_str(o, m->func);
    fprintf(o, ",\"seq\":%" PRIu64 ",\"rank_a\":%d,\"rank_b\":%d,\"odd_ranks\":%d,\"what\":",
            m->seq, m->rank_a, m->rank_b, m->nodd);
    ncs_json_str(o, m->what);
    fputc('}', o);
  }
  fprintf(o, "],\"gpu_suspect\":%" PRIu64 ",\"gpu_suspect_examples\":[", a->gpu_suspect);
  for (uint32_t k = 0; k < a->ngsus; k++) {
    fprintf(o, "%s{\"comm\":%u,\"func\":", k ? "," : "", a->gsus[k].comm);
    ncs_json_str(o, a->gsus[k].func);
    fprintf(o, ",\"seq\":%" PRIu64 ",\"rank\":%d,\"gap_ns\":%" PRId64 ",\"launch_ns\":%" PRId64 "}",
            a->gsus[k].seq, a->gsus[k].rank, a->gsus[k].gap, a->gsus[k].launch);
  }
  fprintf(o,
          "]},\n\"p2p\":{\"sends\":%" PRIu64 ",\"recvs\":%" PRIu64 ",\"pairs\":%" PRIu64
          ",\"unmatched_sends\":%" PRIu64 ",\"unmatched_recvs\":%" PRIu64
          ",\"bytes_mismatch\":%" PRIu64 ",\"evicted\":%" PRIu64 "},\n\"buckets\":[",
          a->sends, a->recvs, a->p2p_pairs, a->p2p_unmatched_send, a->p2p_unmatched_recv,
          a->p2p_bytes_mismatch, a->job->run.p2p_evicted);
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    const ncs_an_bucket_t *b = &a->buckets[k];
    fprintf(o, "%s\n{\"comm\":%u,\"func\":", k ? "," : "", b->comm);
    ncs_json_str(o, b->func);
    fprintf(o,
            ",\"p2p\":%s,\"bytes_lo\":%llu,\"bytes_hi\":%llu,\"count\":%" PRIu64
            ",\"bytes\":%" PRIu64 ",\"timing\":{\"kernel_gpu\":%" PRIu64 ",\"proxy_host\":%" PRIu64
            ",\"enqueue_host\":%" PRIu64 "},\"lat_p50_ns\":%.0f,\"lat_p95_ns\":%.0f,"
            "\"lat_p99_ns\":%.0f,\"algbw_p50_gbs\":%.4f,\"busbw_p50_gbs\":%.4f,"
            "\"busbw_p95_gbs\":%.4f,\"busbw_p99_gbs\":%.4f,\"skew_p50_ns\":%.0f,\"skew_max_ns\":%.0f,"
            "\"tput_busbw_p50_gbs\":%.4f,\"tput_samples\":%" PRIu64 ",\"quantiles\":\"%s\","
            "\"gpu_suspect\":%" PRIu64 ",\"no_gpu_time\":%" PRIu64,
            b->p2p ? "true" : "false", b->log2 < 0 ? 0ull : 1ull << b->log2,
            b->log2 < 0 ? 1ull : 2ull << b->log2, b->count, b->bytes, b->src[0], b->src[1],
            b->src[2], b->lat_p50, b->lat_p95, b->lat_p99, b->algbw_p50, b->busbw_p50,
            b->busbw_p95, b->busbw_p99, b->skew_p50, b->skew_max, b->tput_busbw_p50, b->tput_n,
            b->sketch ? "sketch" : "exact", b->suspect, b->no_gpu);
    json_bucket_bd(o, b);
    fputc('}', o);
  }
  fprintf(o, "],\n\"ranks\":[");
  for (uint32_t k = 0; k < a->nranks; k++) {
    const ncs_an_rank_t *r = &a->ranks[k];
    fprintf(o,
            "%s\n{\"comm\":%u,\"rank\":%d,\"pid\":%" PRIu64 ",\"instances\":%" PRIu64
            ",\"last_arrivals\":%" PRIu64 ",\"last_trials\":%" PRIu64 ",\"slow_trials\":%" PRIu64
            ",\"wait_caused_ns\":%" PRId64
            ",\"wait_suffered_ns\":%" PRId64 ",\"slowest\":%" PRIu64 ",\"slowest_late_explained\":%" PRIu64
            ",\"excess_ns\":%" PRId64 ",\"kernel_wait_ns\":%" PRId64 ",\"transfer_ns\":%" PRId64 ",\"launch_delay_mean_ns\":%" PRId64
            ",\"gpu_sources\":{\"none\":%" PRIu64 ",\"cupti\":%" PRIu64 ",\"kernelch\":%" PRIu64 "}}",
            k ? "," : "", r->comm, r->rank, a->job->procs[r->proc].pid, r->instances, r->last,
            r->last_trials, r->slow_trials, r->wait_caused, r->wait_suffered, r->slowest, r->late_explained,
            r->excess, r->kwait, r->transfer,
            r->launch_n ? r->launch_sum / (int64_t)r->launch_n : 0, r->gsrc[NCS_GS_NONE],
            r->gsrc[NCS_GS_CUPTI], r->gsrc[NCS_GS_KERNELCH]);
  }
  fprintf(o, "]");
  json_breakdown(o, a);
  fprintf(o, ",\n");
  json_gpu(o, a);
  fprintf(o, ",\n");
  json_coverage(o, a, f);
  fprintf(o, ",\n\"stragglers\":[");
  uint32_t ns = 0;
  for (uint32_t k = 0; k < f->n; k++) {
    if (f->items[k].kind != NCS_FIND_STRAGGLER) continue;
    const ncs_an_rank_t *r = f->items[k].rank;
    const ncs_find_test_t *t = &f->items[k].test;
    fprintf(o,
            "%s\n{\"comm\":%u,\"rank\":%d,\"last_fraction\":%.4f,\"trials\":%" PRIu64
            ",\"chance\":%.6f,\"p_value\":%.3e,\"p_value_rest\":%.3e,\"tests\":%u,"
            "\"min_share\":%.4f,\"wait_caused_ns\":%" PRId64 ",\"error_ns\":%" PRId64 ",\"evidence\":[",
            ns++ ? "," : "", r->comm, r->rank,
            r->last_trials ? (double)r->last / (double)r->last_trials : 0, r->last_trials, t->chance,
            t->p, t->p_rest, t->tests, t->min_share, r->wait_caused, a->job->error);
    for (uint32_t e = 0; e < r->nev; e++) {
      fprintf(o, "%s{\"func\":", e ? "," : "");
      ncs_json_str(o, r->ev[e].func);
      fprintf(o, ",\"seq\":%" PRIu64 ",\"late_ns\":%" PRId64 "}", r->ev[e].seq, r->ev[e].late);
    }
    fprintf(o, "]}");
  }
  fprintf(o, "],\n\"slow_ranks\":[");
  ns = 0;
  for (uint32_t k = 0; k < f->n; k++) {
    if (f->items[k].kind != NCS_FIND_SLOW_RANK) continue;
    const ncs_an_rank_t *r = f->items[k].rank;
    const ncs_find_test_t *t = &f->items[k].test;
    fprintf(o,
            "%s\n{\"comm\":%u,\"rank\":%d,\"slowest\":%" PRIu64 ",\"slowest_fraction\":%.4f,"
            "\"trials\":%" PRIu64 ",\"chance\":%.6f,\"p_value\":%.3e,\"p_value_rest\":%.3e,"
            "\"tests\":%u,\"min_share\":%.4f,\"excess_ns\":%" PRId64 "}",
            ns++ ? "," : "", r->comm, r->rank, r->slowest,
            r->slow_trials ? (double)r->slowest / (double)r->slow_trials : 0, r->slow_trials,
            t->chance, t->p, t->p_rest, t->tests, t->min_share, r->excess);
  }
  fprintf(o,
          "],\n\"analysis\":{\"passes\":%u,\"peak_open_instances\":%" PRIu64 ",\"peak_held_ops\":%" PRIu64
          ",\"horizon_ns\":%lld,\"settle_ns\":%lld,\"exact_max\":%d,\"sketch_error\":%g},\n\"v7\":",
          a->job->run.passes, a->job->run.peak_open, a->job->run.peak_held, (long long)NCS_JOB_HORIZON_NS,
          (long long)NCS_JOB_SETTLE_NS, NCS_AN_EXACT_MAX, NCS_AN_SKETCH_ERR);
  print_v7_json(o, v);
  fprintf(o, ",\n\"ranges\":");
  print_ranges_json(o, rg);
  fprintf(o, "}\n");
}

/* ------------------------------------------------------------------ the terminal report */

/* how the text report is laid out (docs/report.md, "The terminal report") */
typedef struct {
  int wide;  /* --wide: every column, no wrapping */
  int color; /* ANSI colour: a terminal, no --no-color, no NO_COLOR */
  int width; /* prose is wrapped to this many columns */
} txt_t;
static txt_t T = {0, 0, 100};

static const char *on(const char *code) { return T.color ? code : ""; }
#define BOLD on("\033[1m")
#define YELLOW on("\033[33m")
#define RED on("\033[1;31m")
#define RESET on("\033[0m")

/* text from `first` on, wrapped at word boundaries to T.width; continuation lines start with
 * `rest` (spaces). --wide: one line. */
static void put_wrapped(FILE *o, const char *first, const char *rest, const char *text) {
  int col = fprintf(o, "%s", first);
  int indent = (int)strlen(rest);
  const char *p = text;
  int start = col, space = 0;
  while (*p) {
    const char *sp = strchr(p, ' ');
    int n = sp ? (int)(sp - p) : (int)strlen(p);
    /* a number and its unit stay on one line: "50 ns", "2 MiB" */
    static const char *const units[] = {"ns", "us", "ms", "s", "B", "KiB", "MiB", "GiB", "GB/s", NULL};
    for (int u = 0; sp && units[u]; u++) {
      size_t ul = strlen(units[u]);
      if (!strncmp(sp + 1, units[u], ul) && strchr(" ,;:)", sp[1 + ul] ? sp[1 + ul] : ' ')) {
        const char *e = sp + 1 + ul;
        n = (int)(e - p);
        break;
      }
    }
    if (!T.wide && col > indent && col > start && col + space + n > T.width) {
      fprintf(o, "\n%s", rest);
      col = start = indent, space = 0;
    }
    if (space) fputc(' ', o), col++;
    col += fprintf(o, "%.*s", n, p);
    p += n;
    space = 0;
    while (*p == ' ') p++, space = 1;
  }
  fputc('\n', o);
}

/* what the analysis rests on, then the warnings (the same list as --json and --html) */
static void print_coverage(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f) {
  uint64_t ops = a->cov.timing[0] + a->cov.timing[1] + a->cov.timing[2];
  char line[1024], first[48];
  snprintf(line, sizeof line, "%u of %u files read%s; %" PRIu64 " operations, completion from GPU kernels %.0f%%, "
             "proxy ops %.0f%%, none (enqueue only) %.0f%%; %.1f%% of the operation calls lost",
          a->cov.files - a->cov.unreadable, a->cov.files, a->cov.damaged ? " (some damaged)" : "", ops,
          ncs_pct(a->cov.timing[0], ops), ncs_pct(a->cov.timing[1], ops), ncs_pct(a->cov.timing[2], ops),
          ncs_pct(a->cov.op_lost, a->cov.op_calls));
  snprintf(first, sizeof first, "%sCoverage:%s ", BOLD, RESET);
  put_wrapped(o, first, "  ", line);
  snprintf(first, sizeof first, "  %s!%s ", YELLOW, RESET);
  for (uint32_t k = 0; k < f->nwarn; k++) put_wrapped(o, first, "    ", f->warn[k].text);
  fputc('\n', o);
}

/* where the time goes (docs/report.md, "Breakdown"): per bucket, then the slowest links and the
 * NetPlugin QPs/sockets with the most bytes */
static void print_breakdown(FILE *o, const ncs_analysis_t *a, uint32_t top) {
  fputc('\n', o);
  put_wrapped(o, "", "  ", "Where the time goes (proxy steps; % of the proxy time, launch: % of launch + proxy)");
  fprintf(o, "  %-4s %-13s %-7s %5s %6s %5s %5s %5s %5s  %s\n", "comm", "func", "size>=", "proxy",
          "launch", "gpu", "peer", "net", "flush", "bottleneck");
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    const ncs_an_bucket_t *b = &a->buckets[k];
    if (b->p2p || !b->count) continue;
    char sz[24], lab[320];
    ncs_fmt_bytes(sz, sizeof sz, b->log2);
    ncs_bd_label_text(b, lab, sizeof lab);
    char pre[160];
    if (!b->bd_n)
      snprintf(pre, sizeof pre, "  %-4u %-13.13s %-7s %5" PRIu64 " %6s %5s %5s %5s %5s  ", b->comm, b->func,
               sz, b->bd_n, "-", "-", "-", "-", "-");
    else
      snprintf(pre, sizeof pre, "  %-4u %-13.13s %-7s %5" PRIu64 " %5.0f%% %4.0f%% %4.0f%% %4.0f%% %4.0f%%  ",
               b->comm, b->func, sz, b->bd_n, 100 * ncs_bd_launch_share(b), 100 * ncs_bd_share(b, NCS_PH_GPU),
               100 * ncs_bd_share(b, NCS_PH_PEER), 100 * ncs_bd_share(b, NCS_PH_NET),
               100 * ncs_bd_share(b, NCS_PH_FLUSH));
    put_wrapped(o, pre, "        ", lab); /* the label wraps under the columns */
  }
  if (!a->nlinks) return;
  /* the links of least bandwidth first: where a slow link shows */
  const ncs_an_link_t **by = ncs_xcalloc(a->nlinks, sizeof *by);
  uint32_t n = 0;
  for (uint32_t k = 0; k < a->nlinks; k++)
    if (a->links[k].active > 0 && a->links[k].bytes) by[n++] = &a->links[k];
  for (uint32_t i = 1; i < n; i++) /* insertion sort by GB/s, ascending */
    for (uint32_t k = i; k > 0; k--) {
      const ncs_an_link_t *x = by[k], *y = by[k - 1];
      if ((double)x->bytes / (double)x->active >= (double)y->bytes / (double)y->active) break;
      by[k] = y, by[k - 1] = x;
    }
  fprintf(o, "\n  Links by network bandwidth, slowest first (%u of %u; --json lists all)\n",
          n < top ? n : top, a->nlinks);
  fprintf(o, "  %-5s %5s %5s %4s %-4s %10s %9s %6s %6s %6s\n", "comm", "rank", "peer", "ch", "dir",
          "bytes", "GB/s", "gpu", "peer", "net");
  for (uint32_t k = 0; k < n && k < top; k++) {
    const ncs_an_link_t *L = by[k];
    int64_t s = 0;
    for (int p = 0; p < NCS_PH_N; p++) s += L->ph[p];
    fprintf(o, "  %-5u %5d %5d %4u %-4s %10" PRIu64 " %9.3f %5.0f%% %5.0f%% %5.0f%%\n", L->comm, L->rank,
            L->peer, L->channel, L->is_send ? "send" : "recv", L->bytes,
            (double)L->bytes / (double)L->active, ncs_pct((uint64_t)L->ph[NCS_PH_GPU], (uint64_t)s),
            ncs_pct((uint64_t)L->ph[NCS_PH_PEER], (uint64_t)s), ncs_pct((uint64_t)L->ph[NCS_PH_NET], (uint64_t)s));
  }
  free(by);
  if (a->nnetqs)
    fprintf(o, "  NetPlugin: %u QPs/sockets with events (--json \"breakdown.net\", SQLite net_qps)\n",
            a->nnetqs);
}

static int cmp_bucket_text(const void *x, const void *y) {
  const ncs_an_bucket_t *a = *(const ncs_an_bucket_t *const *)x, *b = *(const ncs_an_bucket_t *const *)y;
  if (a->p2p != b->p2p) return a->p2p - b->p2p; /* collectives first */
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (!a->p2p) {
    int c = strcmp(a->func, b->func);
    if (c) return c;
  }
  if (a->log2 != b->log2) return a->log2 < b->log2 ? -1 : 1;
  return strcmp(b->func, a->func); /* Send before Recv */
}

/* the timing sources as the 80-column table names them */
static const char *short_timing(const char *src) {
  return !strcmp(src, "kernel_gpu") ? "gpu kernels" : !strcmp(src, "proxy_host") ? "proxy" : "enqueue";
}

/* one bucket's columns after "func": sorted by size, bandwidth in GB/s */
static void bucket_cols(char *out, size_t len, const ncs_an_bucket_t *b, int timing) {
  char sz[24], l1[24], l2[24], l3[24], sk[24], sm[24], tp[24] = "-";
  ncs_fmt_bytes(sz, sizeof sz, b->log2);
  ncs_fmt_ns(l1, sizeof l1, b->lat_p50), ncs_fmt_ns(l2, sizeof l2, b->lat_p95);
  ncs_fmt_ns(l3, sizeof l3, b->lat_p99), ncs_fmt_ns(sk, sizeof sk, b->skew_p50);
  ncs_fmt_ns(sm, sizeof sm, b->skew_max);
  if (b->tput_n) snprintf(tp, sizeof tp, "%.2f", b->tput_busbw_p50);
  const char *src = ncs_bucket_timing(b);
  if (!b->count) /* every instance of it lacks a GPU time (its KernelCh cannot be right) */
    snprintf(l1, sizeof l1, "-"), snprintf(l2, sizeof l2, "-"), snprintf(l3, sizeof l3, "-");
  char ng[48] = "";
  if (b->no_gpu) snprintf(ng, sizeof ng, " +%" PRIu64 " no GPU time", b->no_gpu);
  if (T.wide)
    snprintf(out, len, "%-9s %7" PRIu64 " %10s %10s %10s %10.2f %10.2f %10.2f %10.2f %10s %10s %10s %s%s", sz,
             b->count, l1, l2, l3, b->algbw_p50, b->busbw_p50, b->busbw_p95, b->busbw_p99, tp,
             b->p2p ? "-" : sk, b->p2p ? "-" : sm, b->count ? src : "-", ng);
  else
    snprintf(out, len, "%-7s %6" PRIu64 " %9s %9s %9.2f %9s %9s%s%s%s", sz, b->count, l1, l2,
             b->busbw_p50, tp, b->p2p ? "-" : sk, timing ? " " : "",
             timing ? (b->count ? short_timing(src) : "-") : "", ng);
}

/* The size table. Default: 80 columns (a heading per communicator, the timing column only when
 * the rows' sources differ); --wide: every column. Rows sorted by communicator, function, size;
 * collectives before sends and receives. */
static void print_buckets(FILE *o, const ncs_analysis_t *a) {
  const ncs_an_bucket_t **v = malloc((a->nbuckets + 1) * sizeof *v);
  if (!v) return;
  uint32_t n = 0;
  int any_tput = 0, merged = 0, timing = 0;
  const char *src0 = NULL;
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    const ncs_an_bucket_t *b = &a->buckets[k];
    if (!b->count && !b->no_gpu) continue; /* every instance of this size was unsampled (said above) */
    v[n++] = b, any_tput |= b->tput_n > 0;
    if (!b->count) continue; /* no timing of its own */
    if (!src0) src0 = ncs_bucket_timing(b);
    timing |= strcmp(src0, ncs_bucket_timing(b)) != 0;
  }
  qsort(v, n, sizeof *v, cmp_bucket_text);
  fprintf(o, "\n%sCollectives by communicator, function and size%s (latency: the slowest rank's)\n",
          BOLD, RESET);
  if (T.wide) {
    fprintf(o, "  %-4s %-14s %-9s %7s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %s\n", "comm",
            "func", "size>=", "count", "lat p50", "lat p95", "lat p99", "algbw p50", "busbw p50",
            "busbw p95", "busbw p99", "tput busbw", "skew p50", "skew max", "timing");
    fprintf(o, "  %-4s %-14s %-9s %7s %10s %10s %10s %10s %10s %10s %10s %10s\n", "", "", "", "", "",
            "", "", "GB/s", "GB/s", "GB/s", "GB/s", "GB/s");
  } else {
    fprintf(o, "  %-13s %-7s %6s %9s %9s %9s %9s %9s%s\n", "func", "size>=", "count", "lat p50",
            "lat p95", "busbw p50", "tput p50", "skew p50", timing ? " timing" : "");
    fprintf(o, "  %-13s %-7s %6s %9s %9s %9s %9s\n", "", "", "", "", "", "GB/s", "GB/s");
  }
  char c1[256], c2[256];
  for (uint32_t k = 0; k < n; k++) {
    const ncs_an_bucket_t *b = v[k];
    if (!T.wide && (k == 0 || v[k - 1]->comm != b->comm || v[k - 1]->p2p != b->p2p))
      fprintf(o, " %scomm %u%s%s\n", BOLD, b->comm, b->p2p ? ", sends and receives" : "", RESET);
    bucket_cols(c1, sizeof c1, b, timing);
    /* a Send row and the Recv row after it that show the same numbers: one row */
    if (b->p2p && k + 1 < n && v[k + 1]->p2p && v[k + 1]->comm == b->comm &&
        v[k + 1]->log2 == b->log2 && strcmp(v[k + 1]->func, b->func)) {
      bucket_cols(c2, sizeof c2, v[k + 1], timing);
      if (!strcmp(c1, c2)) {
        if (T.wide)
          fprintf(o, "  %-4u %-14s %s\n", b->comm, "Send/Recv", c1);
        else
          fprintf(o, "  %-13s %s\n", "Send/Recv", c1);
        merged = 1, k++;
        continue;
      }
    }
    if (T.wide)
      fprintf(o, "  %-4u %-14.14s %s\n", b->comm, b->func, c1);
    else
      fprintf(o, "  %-13.13s %s\n", b->func, c1);
  }
  free(v);
  if (merged)
    put_wrapped(o, "  Send/Recv: ", "             ",
                "one row where the sends and the receives of a size show the same numbers.");
  if (any_tput)
    put_wrapped(o, "  tput: ", "        ",
                "busbw over the interval between the kernel starts of consecutive instances on "
                "each rank (what a benchmark loop measures); busbw is over one kernel's transfer "
                "time. When the kernels of consecutive operations overlap or queue back to back "
                "(several streams, nccl-sim), that interval is shorter than a kernel and tput is "
                "far above busbw; below it, launch gaps dominate (docs/report.md).");
  char note[256];
  snprintf(note, sizeof note, "GB/s = 1e9 bytes/s.%s%s%s", timing || T.wide ? "" : " Durations of every row from ",
           timing || T.wide ? "" : short_timing(src0 ? src0 : "kernel_gpu"),
           timing || T.wide ? "" : " (timing, docs/report.md).");
  if (!T.wide) snprintf(note + strlen(note), sizeof note - strlen(note), " --wide: more columns.");
  put_wrapped(o, "  ", "  ", note);
}

static void print_text(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, uint32_t top,
                       const ncs_v7_t *v, const ncs_ranges_t *rg) {
  const ncs_an_rank_t *const *byw = f->by_wait;
  char t1[32], t2[32], err[32], line[2048];
  ncs_fmt_ns(err, sizeof err, (double)a->job->error);
  fprintf(o, "%sncclscope report:%s %s\n", BOLD, RESET, a->path);
  snprintf(line, sizeof line, "%u processes on %u host%s, %u communicators, %" PRIu64 " collective instances (%" PRIu64
             " rank operations), %" PRIu64 " sends, %" PRIu64 " receives; clock error bound +-%s",
          a->cov.files, a->job->nhosts, a->job->nhosts == 1 ? "" : "s", a->job->ncomms, a->instances, a->coll_ops,
          a->sends, a->recvs, err);
  put_wrapped(o, "", "", line);
  if (ncs_job_filter_active(&a->job->filter)) {
    char ft[512], first[32];
    ncs_job_filter_text(&a->job->filter, ft, sizeof ft);
    snprintf(line, sizeof line, "%s: %" PRIu64 " collective instances and %" PRIu64
             " sends/receives left out; every number below is of the rest", ft,
             a->job->run.filtered_inst, a->job->run.filtered_p2p);
    snprintf(first, sizeof first, "%sFilter:%s ", YELLOW, RESET);
    put_wrapped(o, first, "  ", line);
  }
  fputc('\n', o);
  print_coverage(o, a, f);
  print_gpu(o, a, T.wide);
  fprintf(o, "%sFindings%s\n", BOLD, RESET);
  for (uint32_t k = 0; k < f->n; k++) {
    char fl[1024], first[32];
    ncs_finding_text(a, &f->items[k], fl, sizeof fl);
    snprintf(first, sizeof first, "  %s-%s ", RED, RESET);
    put_wrapped(o, first, "    ", fl);
  }
  if (!f->n) put_wrapped(o, "  - ", "    ", f->none);
  print_buckets(o, a);
  print_breakdown(o, a, top);
  fprintf(o, "\n%sRanks by waiting caused (top %u)%s\n", BOLD, top, RESET);
  fprintf(o, "  %-4s %4s %7s %9s %5s %11s %10s %8s %10s\n", "comm", "rank", "pid", "instances",
          "last%", "wait caused", "waited", "slowest%", "launch avg");
  for (uint32_t k = 0; k < top && k < a->nranks; k++) {
    const ncs_an_rank_t *r = byw[k];
    char w1[24], w2[24], l[24];
    ncs_fmt_ns(w1, sizeof w1, (double)r->wait_caused), ncs_fmt_ns(w2, sizeof w2, (double)r->wait_suffered);
    ncs_fmt_ns(l, sizeof l, r->launch_n ? (double)r->launch_sum / (double)r->launch_n : 0);
    fprintf(o, "  %-4u %4d %7" PRIu64 " %9" PRIu64 " %4.0f%% %11s %10s %7.0f%% %10s\n", r->comm,
            r->rank, a->job->procs[r->proc].pid, r->instances, ncs_pct(r->last, r->instances), w1, w2,
            ncs_pct(r->slowest, r->instances), r->launch_n ? l : "-");
  }
  char first[32];
  snprintf(first, sizeof first, "\n%sClocks:%s ", BOLD, RESET);
  if (a->job->nhosts <= 1) {
    snprintf(line, sizeof line, "one host; all ranks share CLOCK_MONOTONIC, bound = CLOCK pair spread %s", err);
    put_wrapped(o, first, "  ", line);
  } else {
    fputs(first, o);
    fprintf(o, "%u hosts, offsets from collective end times relative to %s:\n", a->job->nhosts,
            a->job->hosts[0].host);
    for (uint32_t h = 1; h < a->job->nhosts; h++) {
      ncs_fmt_ns(t1, sizeof t1, (double)a->job->hosts[h].offset), ncs_fmt_ns(t2, sizeof t2, (double)a->job->hosts[h].error);
      fprintf(o, "  %s: %s +-%s (%" PRIu64 " instances)\n", a->job->hosts[h].host, t1, t2, a->job->hosts[h].samples);
    }
  }
  int64_t g50 = 0;
  uint64_t gn = 0;
  for (uint32_t i = 0; i < a->job->nprocs; i++) {
    if (a->job->procs[i].gap_n) gn += a->job->procs[i].gap_n;
    if (llabs(a->job->procs[i].gap_p50) > llabs(g50)) g50 = a->job->procs[i].gap_p50;
  }
  if (gn) {
    ncs_fmt_ns(t1, sizeof t1, (double)-g50);
    snprintf(line, sizeof line, "the host saw a KernelCh start after it happened, by (median of the "
             "worst process, %" PRIu64 " samples) %s: NCCL's proxy thread polls", gn, t1);
    put_wrapped(o, "  ", "    ", line);
  }
  /* each GPU clock's map to host time, with its bound (docs/report.md, "Clocks") */
  for (uint32_t i = 0, shown = 0; i < a->job->nprocs; i++) {
    const ncs_job_proc_t *p = &a->job->procs[i];
    if (p->excluded || !p->ngwin) continue;
    if (shown++ == 8) {
      fprintf(o, "  ... GPU clocks of more processes: --json files[].gpu_clock\n");
      break;
    }
    char d[32], e[32], b[96];
    ncs_fmt_ns(d, sizeof d, (double)(p->gpu_off - p->clk_off));
    if (p->gpu_err >= 0)
      ncs_fmt_ns(e, sizeof e, (double)p->gpu_err), snprintf(b, sizeof b, "within +%s", e);
    else if (p->gpu_err_known >= 0)
      ncs_fmt_ns(e, sizeof e, (double)p->gpu_err_known), snprintf(b, sizeof b, "within +%s where a launch bounds it, unbounded elsewhere", e);
    else
      snprintf(b, sizeof b, "bound unknown (no kernel launch recorded)");
    snprintf(line, sizeof line, "GPU clock of pid %" PRIu64 ": pTimer = CLOCK_REALTIME %s%s, %s "
             "(%u window%s, drift %.0f ns/s)", p->pid, p->gpu_off >= p->clk_off ? "+" : "", d, b,
             p->ngwin, p->ngwin == 1 ? "" : "s", p->gpu_drift_ppb);
    put_wrapped(o, "  ", "    ", line);
  }
  print_v7_text(o, v);
  print_ranges_text(o, rg, top, T.wide);
}

/* the --html page to `path` ("-": stdout), written as every output is (src/util/outfile.h):
 * a partial page never takes the name. 0, or -1 after saying why. */
static int write_html(const char *path, int force, char *in, const ncs_analysis_t *a,
                      const ncs_findings_t *f, const ncs_ranges_t *rg, int say) {
  ncs_out_opts_t oo = {.force = force, .inputs = &in, .ninputs = 1};
  ncs_out_t out;
  char err[PATH_MAX + 256];
  if (ncs_out_open(&out, path, &oo, err, sizeof err) != 0) {
    ncs_error("report: --html: %s", err);
    return -1;
  }
  FILE *o = ncs_out_file(&out);
  if (!o || ncs_report_html(o, a, f, rg) != 0) {
    snprintf(err, sizeof err, "cannot write %s: %s", path, strerror(o ? errno : ENOMEM));
    ncs_out_abort(&out);
    ncs_error("report: --html: %s", err);
    return -1;
  }
  if (ncs_out_commit(&out, err, sizeof err) != 0) {
    ncs_error("report: --html: %s", err);
    return -1;
  }
  if (say && strcmp(path, "-")) fprintf(stderr, "%s report: wrote %s\n", ncs_prog, path);
  return 0;
}

/* The text report to stdout; on a terminal with colour (unless --no-color or NO_COLOR is set)
 * and through a pager ($PAGER, else less -FRX: it exits at once when the report fits the
 * screen; unless --no-pager, or PAGER is empty or cat), wrapped to the terminal's width (80 to
 * 120 columns; COLUMNS, else 100, when not a terminal). */
static void text_out(const ncs_analysis_t *a, const ncs_findings_t *f, uint32_t top, int wide,
                     int color, int pager, const ncs_v7_t *v, const ncs_ranges_t *rg) {
  int tty = isatty(STDOUT_FILENO);
  const char *nc = getenv("NO_COLOR");
  T.wide = wide;
  T.color = tty && color && !(nc && *nc);
  T.width = 100;
  struct winsize ws;
  const char *cols = getenv("COLUMNS");
  if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
    T.width = ws.ws_col;
  else if (cols && atoi(cols) > 0)
    T.width = atoi(cols);
  T.width = T.width < 80 ? 80 : T.width > 120 ? 120 : T.width;
  FILE *o = stdout, *p = NULL;
  const char *pg = getenv("PAGER");
  if (tty && pager && !(pg && (!*pg || !strcmp(pg, "cat")))) {
    if (!pg) setenv("LESS", getenv("LESS") ? getenv("LESS") : "FRX", 0);
    fflush(stdout);
    signal(SIGPIPE, SIG_IGN); /* quitting the pager early is not an error */
    p = popen(pg ? pg : "less", "w");
    if (p) o = p;
  }
  print_text(o, a, f, top, v, rg);
  if (p) pclose(p);
}

int ncs_report_brief(const char *dir, uint32_t job, const char *html, int force, FILE *o,
                     uint32_t max_findings) {
  char err[4096];
  int why = 0;
  ncs_analyze_opts_t ao = {.job = job, .why = &why};
  ncs_analysis_t *a = ncs_analyze_path_opts(dir, &ao, err, sizeof err);
  if (!a) {
    ncs_error("report: %s", err);
    return ncs_job_exit(why);
  }
  if (ncs_no_input("report", a->job)) {
    ncs_analysis_free(a);
    return NCS_EXIT_NO_INPUT;
  }
  ncs_findings_t f;
  ncs_findings_build(&f, a, 5);
  int rc = ncs_job_input(a->job) == NCS_JOB_IN_DAMAGED ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
  ncs_ranges_t rg;
  ncs_ranges_build(a->job, &rg);
  if (html && write_html(html, force, (char *)dir, a, &f, &rg, 0) != 0) rc = NCS_EXIT_OUTPUT;
  ncs_ranges_free(&rg);
  char e[32];
  ncs_fmt_ns(e, sizeof e, (double)a->job->error);
  fprintf(o, "recorded  %u processes on %u host%s, %u communicators, %" PRIu64
             " collective instances, %" PRIu64 " sends, %" PRIu64 " receives\n",
          a->cov.files, a->job->nhosts, a->job->nhosts == 1 ? "" : "s", a->job->ncomms,
          a->instances, a->sends, a->recvs);
  uint64_t ops = a->cov.timing[0] + a->cov.timing[1] + a->cov.timing[2];
  fprintf(o, "coverage  %u of %u files read%s; completion from GPU kernels for %.0f%% of %" PRIu64
             " operations; %.1f%% of operation calls lost; clock error +-%s\n",
          a->cov.files - a->cov.unreadable, a->cov.files, a->cov.damaged ? " (some damaged)" : "",
          ncs_pct(a->cov.timing[0], ops), ops, ncs_pct(a->cov.op_lost, a->cov.op_calls), e);
  for (uint32_t k = 0; k < f.nwarn && k < 2; k++) fprintf(o, "          ! %.150s\n", f.warn[k].text);
  if (f.nwarn > 2) fprintf(o, "          ! and %u more warnings (ncclscope report)\n", f.nwarn - 2);
  for (uint32_t k = 0; k < f.n && k < max_findings; k++) {
    char line[1024];
    ncs_finding_text(a, &f.items[k], line, sizeof line);
    fprintf(o, "%s - %.200s\n", k ? "         " : "findings ", line);
  }
  if (f.n > max_findings)
    fprintf(o, "          and %u more (ncclscope report)\n", f.n - max_findings);
  if (!f.n) fprintf(o, "findings  - %s\n", f.none);
  ncs_findings_free(&f);
  ncs_analysis_free(a);
  return rc;
}

int ncs_cmd_report(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                       {"top", required_argument, 0, 't'},
                                       {"html", required_argument, 0, 'H'},
                                       {"force", no_argument, 0, 'F'},
                                       {"run", required_argument, 0, 'J'},
                                       {"timing", no_argument, 0, 'T'},
                                       {"wide", no_argument, 0, 'W'},
                                       {"no-color", no_argument, 0, 'C'},
                                       {"no-pager", no_argument, 0, 'P'},
                                       NCS_FILTER_OPTIONS,
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c, json = 0, timing = 0, force = 0, why = 0, wide = 0, color = 1, pager = 1;
  static ncs_cli_filter_t cf;
  memset(&cf, 0, sizeof cf);
  uint32_t job = 0;
  const char *html = NULL;
  uint64_t top = 5;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":jt:h", opts, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 'T': timing = 1; break;
    case 'W': wide = 1; break;
    case 'C': color = 0; break;
    case 'P': pager = 0; break;
    case 'F': force = 1; break;
    case 'J':
      if (ncs_parse_run("report", optarg, &job) != 0) return NCS_EXIT_USAGE;
      break;
    case 't':
      if (ncs_parse_count(optarg, 1, 100000, &top) != 0)
        return ncs_usage_error("report", "--top needs a number from 1 to 100000, not '%s'", optarg);
      break;
    case 'H':
      if (!*optarg) return ncs_usage_error("report", "--html needs a file name");
      html = optarg;
      break;
    case 'h': fputs(report_help, stdout); return NCS_EXIT_OK;
    default: {
      int frc;
      if (ncs_parse_filter("report", c, optarg, &cf, &frc)) {
        if (frc) return frc;
        break;
      }
      return ncs_bad_option("report", c, argv);
    }
    }
  }
  int html_stdout = html && !strcmp(html, "-");
  if (html_stdout && json) return ncs_usage_error("report", "--json and --html - both write to stdout");
  if (optind >= argc) return ncs_usage_error("report", "which traces? give a trace directory");
  if (optind + 1 < argc) return ncs_usage_error("report", "one trace directory, please");
  char err[4096];
  ncs_analyze_opts_t ao = {.job = job, .why = &why, .filter = &cf.f};
  ncs_analysis_t *a = ncs_analyze_path_opts(argv[optind], &ao, err, sizeof err);
  if (!a) {
    ncs_error("report: %s", err);
    return ncs_job_exit(why);
  }
  if (ncs_no_input("report", a->job)) {
    ncs_analysis_free(a);
    return NCS_EXIT_NO_INPUT;
  }
  int frc = ncs_check_filter_comm("report", &cf.f, a->job);
  if (frc) {
    ncs_analysis_free(a);
    return frc;
  }
  if (timing) {
    fprintf(stderr, "ncclscope report: %u passes:", a->job->run.passes);
    for (uint32_t k = 0; k < a->job->run.passes; k++) fprintf(stderr, "%s %.3f s", k ? " +" : "", a->job->run.pass_s[k]);
    fprintf(stderr, "\n");
  }
  ncs_findings_t f;
  ncs_findings_build(&f, a, (uint32_t)top);
  int rc = ncs_job_input(a->job) == NCS_JOB_IN_DAMAGED ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
  ncs_v7_t v; /* one more pass: GPU phases, user tags, symmetric kernels (src/analyze/phases.h) */
  if (!html_stdout && ncs_v7_scan(a, &v, err, sizeof err) != 0) {
    ncs_error("report: %s", err);
    ncs_findings_free(&f);
    ncs_analysis_free(a);
    return NCS_EXIT_ERROR;
  }
  ncs_ranges_t rg;
  ncs_ranges_build(a->job, &rg);
  /* the page first: when it cannot be written, say so and print nothing else */
  if (html && write_html(html, force, argv[optind], a, &f, &rg, 1) != 0)
    rc = NCS_EXIT_OUTPUT;
  else if (json)
    print_json(stdout, a, &f, &v, &rg);
  else if (!html_stdout)
    text_out(a, &f, (uint32_t)top, wide, color, pager, &v, &rg);
  ncs_ranges_free(&rg);
  if (!html_stdout) ncs_v7_free(&v);
  ncs_findings_free(&f);
  ncs_analysis_free(a);
  return rc;
}
