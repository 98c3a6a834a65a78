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
#include <string.h>

#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/phases.h"
#include "analyze/ranges.h"
#include "cli/cli.h"
#include "export/html_report.h"
#include "util/outfile.h"

static const char report_help[] =
    "usage: ncclscope report [--json] [--top N] [--html FILE] [--run N] [--timing] DIR|FILE\n"
    "\n"
    "Cross-rank analysis of a recorded job: collectives matched across ranks by (commId, func,\n"
    "seqNumber), arrival skew and who arrived last, durations and bus bandwidth per size bucket,\n"
    "clock error bounds, mismatched collectives and unpaired sends/receives.\n"
    "\n"
    "  --json        machine-readable output (schema: docs/report.md)\n"
    "  --top N       stragglers and slow ranks listed (default 5)\n"
    "  --timing      print the seconds of each reading pass to stderr\n"
    "  --html FILE   also write one self-contained page with charts (busbw vs size, per-rank\n"
    "                skew heatmap, latency distributions) to FILE; '-' writes only the page to\n"
    "                stdout. The text (or --json) report is still printed.\n"
    "  --force       replace an existing --html FILE (it is refused otherwise)\n"
    "  --run N|last  the N-th job (by start time) when DIR holds the traces of several runs;\n"
    "                without it such a DIR is refused, with the list of its runs\n"
    "  -h, --help    this help\n"
    "\n"
    "exit status: 0 ok, 2 usage error (or several runs and no --run), 3 no traces found, 4 a\n"
    "trace file is damaged (its readable chunks are analysed), 5 the output cannot be written\n"
    "(docs/cli.md)\n";


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
          ",\"groups\":%" PRIu64 ",\"groups_unsampled\":%" PRIu64 ",\"timing\":{",
          a->cov.op_starts, a->cov.op_lost, a->cov.write_errors, a->cov.gaps, a->cov.gap_bytes,
          a->cov.groups, a->cov.groups_unsampled);
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
static void print_v7_text(FILE *o, const ncs_v7_t *v) {
  if (!v->v7_comm_ranks) return;
  fprintf(o, "\nNCCL 2.31 (profiler ABI v7): %u communicator ranks in %u of the processes\n",
          v->v7_comm_ranks, v->procs);
  if (v->all.ops) {
    fprintf(o, "  GPU time by kernel phase (mean per operation and channel; initial sync = waiting for "
               "peers, a GPU-side skew):\n  %-5s %5s %10s %12s %12s %12s %9s\n",
            "comm", "rank", "ops", "initial sync", "compute", "final sync", "initial%");
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
  if (v->all.ops_without)
    fprintf(o, "  GPU phases: cannot tell for %" PRIu64 " operations with kernel channels but no "
               "KernelPhase (not recorded: NCCLSCOPE_EVENTS without kernelphase?)\n",
            v->all.ops_without);
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
    fprintf(o, "  Symmetric kernels: %" PRIu64 " of %" PRIu64 " collectives:", v->sym_colls, v->colls);
    for (uint32_t k = 0; k < v->nvariants; k++)
      fprintf(o, "%s %s %" PRIu64, k ? "," : "", v->variants[k].variant, v->variants[k].ops);
    fputc('\n', o);
  }
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
static void print_ranges_text(FILE *o, const ncs_ranges_t *r, uint32_t top) {
  if (!r->files && !r->ranges) return;
  fprintf(o, "\nUser ranges: %" PRIu64 " ranges, %" PRIu64 " marks in %u file%s; top %u names by wall time "
             "(sums over ranks)\n", r->ranges, r->marks, r->files, r->files == 1 ? "" : "s", top);
  if (r->lost || r->begin_lost || r->end_lost)
    fprintf(o, "  ! lost: %" PRIu64 " range records dropped or not written, %" PRIu64 " ranges whose end was "
               "lost (no numbers), %" PRIu64 " pops whose push was lost (not shown)\n",
            r->lost, r->end_lost, r->begin_lost);
  if (r->open) fprintf(o, "  ! %" PRIu64 " ranges never ended in the trace (no numbers)\n", r->open);
  if (r->partial) fprintf(o, "  ! %" PRIu64 " ranges began before the trace's window (lower bounds, not summed)\n", r->partial);
  fprintf(o, "  %-14s %5s %6s %9s %9s %6s %9s %9s %6s %9s\n", "name", "ranks", "count", "wall", "mean",
          "ops", "bytes", "comm", "GB/s", "exposed");
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
    fprintf(o, "  %-14s %5u %6" PRIu64 " %9s %9s %6" PRIu64 " %9s %9s %6s %9s\n", nm, g->ranks, g->ranges, w, m,
            g->colls + g->p2ps, b, c, bw, e);
  }
  if (r->nnames > top) fprintf(o, "  (%zu more names: --top, or --json)\n", r->nnames - top);
  fprintf(o, "  wall, ops, bytes, comm: summed over the ranges with known ends; comm = union of their NCCL "
             "kernels'\n  GPU intervals (KernelCh)%s\n",
          bound ? "; >= some operations had no GPU time" : "");
  if (unk) fprintf(o, "  exposed unknown: no CUPTI kernel records for compute (NCCLSCOPE_CUPTI=on gives them)\n");
  for (size_t k = 0; k < r->nnames && k < top; k++) {
    const ncs_range_agg_t *g = &r->by_name[k];
    if (!g->nmetrics) continue;
    fprintf(o, "  metrics %s (%" PRIu64 " ranges):", g->name, g->with_values);
    for (uint32_t q = 0; q < g->nmetrics; q++) {
      if (isnan(g->value[q]))
        fprintf(o, " %s=cannot combine", g->metric[q]);
      else
        fprintf(o, " %s=%.6g", g->metric[q], g->value[q]);
    }
    if (!isnan(g->dram_gbps)) fprintf(o, " dram=%.2f GB/s", g->dram_gbps);
    fputc('\n', o);
  }
}

static void print_json(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_v7_t *v,
                       const ncs_ranges_t *rg) {
  fprintf(o, "{\"schema\":\"ncclscope-report/1\",\"path\":");
  ncs_json_str(o, a->path);
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
            ",\"gap_max_ns\":%" PRId64 ",\"samples\":%" PRIu64 ",\"error_ns\":%" PRId64 "}}",
            p->pid, p->clk_off, p->clk_spread, p->clk_pairs,
            p->gpu_domain == NCS_GPU_REALTIME ? "realtime" : p->gpu_domain == NCS_GPU_OWN ? "own" : "none",
            p->gpu_off, p->gap_p50, p->gap_p99, p->gap_min, p->gap_max, p->gap_n, p->gpu_err);
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
    fprintf(o, "%s{\"index\":%u,\"comm_id\":\"0x%016" PRIx64 "\",\"nranks\":%d,\"nnodes\":%d,\"ranks_seen\":%d}",
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
            "\"gpu_suspect\":%" PRIu64 "}",
            b->p2p ? "true" : "false", b->log2 < 0 ? 0ull : 1ull << b->log2,
            b->log2 < 0 ? 1ull : 2ull << b->log2, b->count, b->bytes, b->src[0], b->src[1],
            b->src[2], b->lat_p50, b->lat_p95, b->lat_p99, b->algbw_p50, b->busbw_p50,
            b->busbw_p95, b->busbw_p99, b->skew_p50, b->skew_max, b->tput_busbw_p50, b->tput_n,
            b->sketch ? "sketch" : "exact", b->suspect);
  }
  fprintf(o, "],\n\"ranks\":[");
  for (uint32_t k = 0; k < a->nranks; k++) {
    const ncs_an_rank_t *r = &a->ranks[k];
    fprintf(o,
            "%s\n{\"comm\":%u,\"rank\":%d,\"pid\":%" PRIu64 ",\"instances\":%" PRIu64
            ",\"last_arrivals\":%" PRIu64 ",\"last_trials\":%" PRIu64 ",\"slow_trials\":%" PRIu64
            ",\"wait_caused_ns\":%" PRId64
            ",\"wait_suffered_ns\":%" PRId64 ",\"slowest\":%" PRIu64 ",\"excess_ns\":%" PRId64
            ",\"kernel_wait_ns\":%" PRId64 ",\"transfer_ns\":%" PRId64 ",\"launch_delay_mean_ns\":%" PRId64 "}",
            k ? "," : "", r->comm, r->rank, a->job->procs[r->proc].pid, r->instances, r->last,
            r->last_trials, r->slow_trials, r->wait_caused, r->wait_suffered, r->slowest, r->excess, r->kwait, r->transfer,
            r->launch_n ? r->launch_sum / (int64_t)r->launch_n : 0);
  }
  fprintf(o, "],\n");
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

/* what the analysis rests on, then the warnings (the same list as --json and --html) */
static void print_coverage(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f) {
  uint64_t ops = a->cov.timing[0] + a->cov.timing[1] + a->cov.timing[2];
  fprintf(o, "Coverage: %u of %u files read%s; %" PRIu64 " operations, completion from GPU kernels %.0f%%, "
             "proxy ops %.0f%%, none (enqueue only) %.0f%%; %.1f%% of the operation calls lost\n",
          a->cov.files - a->cov.unreadable, a->cov.files, a->cov.damaged ? " (some damaged)" : "", ops,
          ncs_pct(a->cov.timing[0], ops), ncs_pct(a->cov.timing[1], ops), ncs_pct(a->cov.timing[2], ops),
          ncs_pct(a->cov.op_lost, a->cov.op_starts));
  for (uint32_t k = 0; k < f->nwarn; k++) fprintf(o, "  ! %s\n", f->warn[k].text);
  fputc('\n', o);
}

static void print_text(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f, uint32_t top,
                       const ncs_v7_t *v, const ncs_ranges_t *rg) {
  const ncs_an_rank_t *const *byw = f->by_wait;
  char t1[32], t2[32], err[32];
  ncs_fmt_ns(err, sizeof err, (double)a->job->error);
  fprintf(o, "ncclscope report: %s\n", a->path);
  fprintf(o, "%u processes on %u host%s, %u communicators, %" PRIu64 " collective instances (%" PRIu64
             " rank operations), %" PRIu64 " sends, %" PRIu64 " receives; clock error bound +-%s\n\n",
          a->cov.files, a->job->nhosts, a->job->nhosts == 1 ? "" : "s", a->job->ncomms, a->instances, a->coll_ops,
          a->sends, a->recvs, err);
  print_coverage(o, a, f);
  fprintf(o, "Findings\n");
  for (uint32_t k = 0; k < f->n; k++) {
    char line[1024];
    ncs_finding_text(a, &f->items[k], line, sizeof line);
    fprintf(o, "  - %s\n", line);
  }
  if (!f->n) fprintf(o, "  - %s\n", f->none);

  fprintf(o, "\nCollectives per communicator x function x size (latency = slowest rank's duration)\n");
  fprintf(o, "  %-5s %-14s %-10s %7s %10s %10s %10s %9s %9s %10s %10s %s\n", "comm", "func", "size>=",
          "count", "lat p50", "lat p95", "lat p99", "busbw p50", "busbw p95", "tput busbw", "skew p50", "timing");
  for (uint32_t k = 0; k < a->nbuckets; k++) {
    const ncs_an_bucket_t *b = &a->buckets[k];
    if (!b->count) continue; /* every instance of this size was unsampled (said above) */
    char sz[24], l1[24], l2[24], l3[24], sk[24];
    ncs_fmt_bytes(sz, sizeof sz, b->log2);
    ncs_fmt_ns(l1, sizeof l1, b->lat_p50), ncs_fmt_ns(l2, sizeof l2, b->lat_p95);
    ncs_fmt_ns(l3, sizeof l3, b->lat_p99), ncs_fmt_ns(sk, sizeof sk, b->skew_p50);
    const char *src = ncs_bucket_timing(b);
    char tp[24] = "-";
    if (b->tput_n) snprintf(tp, sizeof tp, "%.2f", b->tput_busbw_p50);
    fprintf(o, "  %-5u %-14s %-10s %7" PRIu64 " %10s %10s %10s %9.2f %9.2f %10s %10s %s\n", b->comm,
            b->func, sz, b->count, l1, l2, l3, b->busbw_p50, b->busbw_p95, tp, b->p2p ? "-" : sk, src);
  }
  fprintf(o, "\nRanks by waiting caused (top %u)\n", top);
  fprintf(o, "  %-5s %5s %8s %9s %7s %12s %12s %12s %12s\n", "comm", "rank", "pid", "instances",
          "last%", "wait caused", "waited", "slowest%", "launch mean");
  for (uint32_t k = 0; k < top && k < a->nranks; k++) {
    const ncs_an_rank_t *r = byw[k];
    char w1[24], w2[24], l[24];
    ncs_fmt_ns(w1, sizeof w1, (double)r->wait_caused), ncs_fmt_ns(w2, sizeof w2, (double)r->wait_suffered);
    ncs_fmt_ns(l, sizeof l, r->launch_n ? (double)r->launch_sum / (double)r->launch_n : 0);
    fprintf(o, "  %-5u %5d %8" PRIu64 " %9" PRIu64 " %6.0f%% %12s %12s %11.0f%% %12s\n", r->comm,
            r->rank, a->job->procs[r->proc].pid, r->instances, ncs_pct(r->last, r->instances), w1, w2,
            ncs_pct(r->slowest, r->instances), r->launch_n ? l : "-");
  }
  fprintf(o, "\nClocks: ");
  if (a->job->nhosts <= 1) {
    fprintf(o, "one host; all ranks share CLOCK_MONOTONIC, bound = CLOCK pair spread %s\n", err);
  } else {
    fprintf(o, "%u hosts, offsets from collective end times relative to %s:\n", a->job->nhosts,
            a->job->hosts[0].host);
    for (uint32_t h = 1; h < a->job->nhosts; h++) {
      ncs_fmt_ns(t1, sizeof t1, (double)a->job->hosts[h].offset), ncs_fmt_ns(t2, sizeof t2, (double)a->job->hosts[h].error);
      fprintf(o, "  %s: %s +-%s (%" PRIu64 " instances)\n", a->job->hosts[h].host, t1, t2, a->job->hosts[h].samples);
    }
  }
  int64_t g50 = 0, g99 = 0;
  uint64_t gn = 0;
  for (uint32_t i = 0; i < a->job->nprocs; i++) {
    if (a->job->procs[i].gap_n) gn += a->job->procs[i].gap_n;
    if (llabs(a->job->procs[i].gap_p50) > llabs(g50)) g50 = a->job->procs[i].gap_p50;
    if (llabs(a->job->procs[i].gap_p99) > llabs(g99)) g99 = a->job->procs[i].gap_p99;
  }
  if (gn) {
    ncs_fmt_ns(t1, sizeof t1, (double)g50), ncs_fmt_ns(t2, sizeof t2, (double)g99);
    fprintf(o, "  GPU pTimer vs host time at KernelCh start (%" PRIu64 " samples): worst process p50 %s, p99 %s\n",
            gn, t1, t2);
  }
  print_v7_text(o, v);
  print_ranges_text(o, rg, top);
}

/* the --html page to `path` ("-": stdout), written as every output is (src/util/outfile.h):
 * a partial page never takes the name. 0, or -1 after saying why. */
static int write_html(const char *path, int force, char *in, const ncs_analysis_t *a,
                      const ncs_findings_t *f) {
  ncs_out_opts_t oo = {.force = force, .inputs = &in, .ninputs = 1};
  ncs_out_t out;
  char err[PATH_MAX + 256];
  if (ncs_out_open(&out, path, &oo, err, sizeof err) != 0) {
    ncs_error("report: --html: %s", err);
    return -1;
  }
  FILE *o = ncs_out_file(&out);
  if (!o || ncs_report_html(o, a, f) != 0) {
    snprintf(err, sizeof err, "cannot write %s: %s", path, strerror(o ? errno : ENOMEM));
    ncs_out_abort(&out);
    ncs_error("report: --html: %s", err);
    return -1;
  }
  if (ncs_out_commit(&out, err, sizeof err) != 0) {
    ncs_error("report: --html: %s", err);
    return -1;
  }
  if (strcmp(path, "-")) fprintf(stderr, "%s report: wrote %s\n", ncs_prog, path);
  return 0;
}

int ncs_cmd_report(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                       {"top", required_argument, 0, 't'},
                                       {"html", required_argument, 0, 'H'},
                                       {"force", no_argument, 0, 'F'},
                                       {"run", required_argument, 0, 'J'},
                                       {"timing", no_argument, 0, 'T'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c, json = 0, timing = 0, force = 0, why = 0;
  uint32_t job = 0;
  const char *html = NULL;
  uint64_t top = 5;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":jt:h", opts, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 'T': timing = 1; break;
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
    default: return ncs_bad_option("report", c, argv);
    }
  }
  int html_stdout = html && !strcmp(html, "-");
  if (html_stdout && json) return ncs_usage_error("report", "--json and --html - both write to stdout");
  if (optind >= argc) return ncs_usage_error("report", "which traces? give a trace directory");
  if (optind + 1 < argc) return ncs_usage_error("report", "one trace directory, please");
  char err[4096];
  ncs_analyze_opts_t ao = {.job = job, .why = &why};
  ncs_analysis_t *a = ncs_analyze_path_opts(argv[optind], &ao, err, sizeof err);
  if (!a) {
    ncs_error("report: %s", err);
    return ncs_job_exit(why);
  }
  if (timing) {
    fprintf(stderr, "ncclscope report: %u passes:", a->job->run.passes);
    for (uint32_t k = 0; k < a->job->run.passes; k++) fprintf(stderr, "%s %.3f s", k ? " +" : "", a->job->run.pass_s[k]);
    fprintf(stderr, "\n");
  }
  ncs_findings_t f;
  ncs_findings_build(&f, a, (uint32_t)top);
  int rc = a->damaged_files ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
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
  if (html && write_html(html, force, argv[optind], a, &f) != 0)
    rc = NCS_EXIT_OUTPUT;
  else if (json)
    print_json(stdout, a, &f, &v, &rg);
  else if (!html_stdout)
    print_text(stdout, a, &f, (uint32_t)top, &v, &rg);
  ncs_ranges_free(&rg);
  if (!html_stdout) ncs_v7_free(&v);
  ncs_findings_free(&f);
  ncs_analysis_free(a);
  return rc;
}
