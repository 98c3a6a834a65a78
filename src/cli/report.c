/* report.c - `ncclscope report DIR [--json] [--csv] [--top N] [--html FILE]`: cross-rank analysis
 * of a recorded job. The terminal and CSV forms are in report_text.c.
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
#include <time.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/phases.h"
#include "analyze/ranges.h"
#include "cli/cli.h"
#include "cli/report_text.h"
#include "trace/gpu.h"
#include "export/html_report.h"
#include "util/hmap.h"
#include "util/mem.h"
#include "util/num.h"
#include "util/outfile.h"
#include "util/fmt.h"
#include "util/text.h"

static const char report_help[] =
    "usage: ncclscope report [OPTIONS] DIR\n"
    "\n"
    "Cross-rank analysis of a recorded job (docs/report.md): collective instances\n"
    "(an instance: one collective across the ranks of a communicator, matched by\n"
    "commId, func and seqNumber), who arrived last and what it cost the others,\n"
    "latency and bus bandwidth per size, where the time goes, clock error bounds,\n"
    "mismatched collectives and unpaired sends/receives.\n"
    "\n"
    "output:\n"
    "  -j, --json            machine-readable output (schema: docs/report.md)\n"
    "      --csv             the tables as CSV instead of the text, every one after a\n"
    "                        \"# NAME\" line (every row, unless --top is given)\n"
    "      --table NAME      with --csv: only this table: communicators, sizes,\n"
    "                        breakdown, links, ranks, overlap, replays, phases, tags,\n"
    "                        ranges\n"
    "      --sort KEY        order every table with a column KEY (a --csv header:\n"
    "                        wait_caused_ns, busbw_p50_gbs, lat_p95_ns, ...) by it,\n"
    "                        largest first (names, ranks and sizes: smallest first)\n"
    "  -t, --top N           rows of every table but sizes and breakdown, and\n"
    "                        findings per kind (default 5); then \"N more rows\"\n"
    "      --wide            every column, lines as long as they need (the default\n"
    "                        fits the terminal: 80 to 120 columns)\n"
    "      --html FILE       also write one offline page with charts to FILE; '-'\n"
    "                        writes only the page, to stdout\n"
    "      --force           replace an existing --html FILE (refused otherwise)\n"
    "      --no-color        no colour on a terminal (also: NO_COLOR set)\n"
    "      --no-pager        no pager on a terminal (default: $PAGER, else less -FRX)\n"
    "      --timing          the seconds of each reading pass, on stderr\n"
    "      --run N|last      the N-th run (by start time) when DIR holds several;\n"
    "                        without it such a DIR is refused, with the list of runs\n"
    "  -h, --help            this help\n"
    "\n" NCS_FILTER_HELP
    "\n"
    "examples:\n"
    "  ncclscope report run1\n"
    "  ncclscope report --comm c1 --from 10s run1     one communicator, after 10 s\n"
    "  ncclscope report --sort wait_caused_ns --top 20 run1\n"
    "  ncclscope report --csv --table sizes run1 > sizes.csv\n"
    "  ncclscope report --html run1.html run1\n"
    "\n"
    "exit status: 0 ok, 2 usage error (or several runs and no --run, or a filter the\n"
    "job cannot answer), 3 no traces found, 4 a trace file is damaged (what could be\n"
    "read is analysed), 5 the output cannot be written (docs/cli.md)\n";

/* CUPTI: sources, files, overlap per GPU, replays (docs/report.md, "GPU truth") */
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

/* "coverage" and "warnings" (docs/report.md, "Coverage") */
/* a finding's size (docs/report.md, "Findings"): "headline", "size_ns", "size_share", "wait_side" */
static void json_size(FILE *o, const ncs_finding_t *x) {
  fprintf(o, "\"headline\":%s,\"size_ns\":%" PRId64 ",\"size_share\":%.6f,\"wait_side\":\"%s\"",
          x->headline ? "true" : "false", x->size_ns, x->share,
          x->side == NCS_SIDE_GPU ? "gpu" : x->side == NCS_SIDE_HOST ? "host" : x->side == NCS_SIDE_MIXED ? "mixed" : "");
}

/* "stalls", "stalls_capped", "incomplete_first", "material_share", "findings" */
static void json_stalls(FILE *o, const ncs_analysis_t *a, const ncs_findings_t *f) {
  fprintf(o, "\"stalls\":[");
  for (uint32_t s = 0; s < a->nstalls; s++) {
    const ncs_an_stall_t *x = &a->stalls[s];
    double wall = (double)(a->job->t_last - a->job->t_first);
    fprintf(o,
            "%s\n{\"comm\":%u,\"rank\":%d,\"pid\":%" PRIu64 ",\"func\":", s ? "," : "", x->comm, x->rank,
            a->job->procs[x->proc].pid);
    ncs_json_str(o, x->func);
    fprintf(o,
            ",\"seq\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"wait_side\":\"%s\",\"others\":%d,\"from_ns\":%" PRId64
            ",\"from_realtime_ns\":%" PRId64 ",\"wait_ns\":%" PRId64 ",\"longest_ns\":%" PRId64
            ",\"caused_ns\":%" PRId64 ",\"bucket_median_ns\":%.0f,\"bucket_sigma_ns\":%.0f,\"bucket_n\":%" PRIu64
            ",\"rule\":\"%s\",\"size_share\":%.6f,\"headline\":%s,\"knock_on_of\":%d,\"knock_ons\":%u}",
            x->seq, x->bytes, x->gpu ? "gpu" : "host", x->others, x->from - a->job->t_first, x->from_real,
            x->wait, x->longest, x->caused, x->med, x->sigma, x->bucket_n, x->by_share ? "share" : "outlier",
            wall > 0 ? (double)x->wait / wall : 0,
            wall > 0 && (double)x->wait >= NCS_FIND_MATERIAL * wall && x->knock_on < 0 ? "true" : "false",
            x->knock_on, x->knock_ons);
  }
  fprintf(o, "],\"stalls_capped\":%s,\"material_share\":%g,\"wait_sides\":{\"gpu\":%" PRIu64 ",\"host\":%" PRIu64
             "},\n\"incomplete_first\":",
          a->stalls_capped ? "true" : "false", NCS_FIND_MATERIAL, a->wait_gpu_n, a->wait_host_n);
  const ncs_an_incomplete_t *x = &a->first_incomplete;
  if (!x->set) {
    fprintf(o, "null");
  } else {
    fprintf(o, "{\"comm\":%u,\"func\":", x->comm);
    ncs_json_str(o, x->func);
    fprintf(o, ",\"seq\":%" PRIu64 ",\"at_ns\":%" PRId64 ",\"nranks\":%d,\"missing_count\":%d,\"missing\":[",
            x->seq, x->at - a->job->t_first, x->nranks, x->nmissing);
    for (int k = 0; k < x->nmissing && k < 8; k++) fprintf(o, "%s%d", k ? "," : "", x->missing[k]);
    fprintf(o, "]}");
  }
  fprintf(o, ",\n\"findings\":[");
  for (uint32_t k = 0; k < f->n; k++) {
    const ncs_finding_t *y = &f->items[k];
    char line[2048];
    ncs_finding_text(a, y, line, sizeof line);
    fprintf(o, "%s\n{\"kind\":\"%s\",\"comm\":%d,\"rank\":%d,", k ? "," : "", ncs_find_kind_names[y->kind],
            y->rank ? (int)y->rank->comm : y->stall ? (int)y->stall->comm : -1,
            y->rank ? y->rank->rank : y->stall ? y->stall->rank : -1);
    json_size(o, y);
    fprintf(o, ",\"text\":");
    ncs_json_str(o, line);
    fputc('}', o);
  }
  fputc(']', o);
}

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
  ncs_json_str(o, f->nheadline ? "" : f->none);
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
  fprintf(o, "},\"queue_ns\":%" PRId64 ",\"queue_unknown\":%" PRIu64 ",\"launch_ns\":%" PRId64
             ",\"span_ns\":%" PRId64, b->bd_queue, b->bd_q_unknown, b->bd_launch, b->bd_span);
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
  for (uint32_t c = 0; c < a->job->ncomms; c++) {
    fprintf(o, "%s{\"index\":%u,\"label\":\"c%u\",\"comm_id\":\"" NCS_COMM_ID_FMT "\",\"name\":", c ? "," : "",
            c, c, a->job->comms[c].comm_id);
    ncs_json_str(o, a->job->comms[c].name);
    fprintf(o, ",\"nranks\":%d,\"nnodes\":%d,\"ranks_seen\":%d}", a->job->comms[c].nranks,
            a->job->comms[c].nnodes, a->job->comms[c].ranks_seen);
  }
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
            ",\"enqueue_host\":%" PRIu64 "}",
            b->p2p ? "true" : "false", b->log2 < 0 ? 0ull : 1ull << b->log2,
            b->log2 < 0 ? 1ull : 2ull << b->log2, b->count, b->bytes, b->src[0], b->src[1],
            b->src[2]);
    /* figures of the samples: null (not 0) when there is none (count: instances with GPU times;
     * tput_n: instances with a back-to-back successor) */
    const int has = b->count > 0, has_t = b->tput_n > 0;
    const struct { const char *k; double v; const char *f; int has; } st[] = {
        {"lat_p50_ns", b->lat_p50, "%.0f", has},         {"lat_p95_ns", b->lat_p95, "%.0f", has},
        {"lat_p99_ns", b->lat_p99, "%.0f", has},         {"algbw_p50_gbs", b->algbw_p50, "%.4f", has},
        {"busbw_p50_gbs", b->busbw_p50, "%.4f", has},    {"busbw_p95_gbs", b->busbw_p95, "%.4f", has},
        {"busbw_p99_gbs", b->busbw_p99, "%.4f", has},    {"skew_p50_ns", b->skew_p50, "%.0f", has},
        {"skew_max_ns", b->skew_max, "%.0f", has},       {"tput_busbw_p50_gbs", b->tput_busbw_p50, "%.4f", has_t}};
    for (size_t q = 0; q < sizeof st / sizeof *st; q++) {
      fprintf(o, ",\"%s\":", st[q].k);
      if (st[q].has)
        fprintf(o, st[q].f, st[q].v);
      else
        fputs("null", o);
    }
    fprintf(o, ",\"tput_samples\":%" PRIu64 ",\"quantiles\":\"%s\",\"gpu_suspect\":%" PRIu64
               ",\"no_gpu_time\":%" PRIu64 ",\"unsampled\":%" PRIu64 ",\"lat_p50_ci_ns\":",
            b->tput_n, b->sketch ? "sketch" : "exact", b->suspect, b->no_gpu, b->unsampled);
    if (b->lat_ci) /* a 95% interval of lat_p50_ns; null under 6 samples */
      fprintf(o, "[%.0f,%.0f]", b->lat_p50_lo, b->lat_p50_hi);
    else
      fputs("null", o);
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
            ",\"excess_ns\":%" PRId64 ",\"kernel_wait_ns\":%" PRId64 ",\"transfer_ns\":%" PRId64 ",\"queue_delay_mean_ns\":%" PRId64 ",\"launch_delay_mean_ns\":%" PRId64
            ",\"gpu_sources\":{\"none\":%" PRIu64 ",\"cupti\":%" PRIu64 ",\"kernelch\":%" PRIu64 "}"
            ",\"caused_gpu_ns\":%" PRId64 ",\"caused_gpu_instances\":%" PRIu64 ",\"caused_host_ns\":%" PRId64
            ",\"caused_host_instances\":%" PRIu64 ",\"wait_suffered_gpu_ns\":%" PRId64 ",\"stalls\":%u"
            ",\"stall_caused_ns\":%" PRId64 "}",
            k ? "," : "", r->comm, r->rank, a->job->procs[r->proc].pid, r->instances, r->last,
            r->last_trials, r->slow_trials, r->wait_caused, r->wait_suffered, r->slowest, r->late_explained,
            r->excess, r->kwait, r->transfer,
            r->launch_n ? r->queue_sum / (int64_t)r->launch_n : 0,
            r->launch_n ? r->launch_sum / (int64_t)r->launch_n : 0, r->gsrc[NCS_GS_NONE],
            r->gsrc[NCS_GS_CUPTI], r->gsrc[NCS_GS_KERNELCH], r->wait_caused_gpu, r->caused_gpu_n,
            r->wait_caused_host, r->caused_host_n, r->wait_suffered_gpu, r->stalls, r->stall_caused);
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
            "\"min_share\":%.4f,\"wait_caused_ns\":%" PRId64 ",\"error_ns\":%" PRId64 ",",
            ns++ ? "," : "", r->comm, r->rank,
            r->last_trials ? (double)r->last / (double)r->last_trials : 0, r->last_trials, t->chance,
            t->p, t->p_rest, t->tests, t->min_share, r->wait_caused, a->job->error);
    json_size(o, &f->items[k]);
    fprintf(o, ",\"evidence\":[");
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
            "\"tests\":%u,\"min_share\":%.4f,\"excess_ns\":%" PRId64 ",",
            ns++ ? "," : "", r->comm, r->rank, r->slowest,
            r->slow_trials ? (double)r->slowest / (double)r->slow_trials : 0, r->slow_trials,
            t->chance, t->p, t->p_rest, t->tests, t->min_share, r->excess);
    json_size(o, &f->items[k]);
    fputc('}', o);
  }
  fprintf(o, "],\n");
  json_stalls(o, a, f);
  fprintf(o,
          ",\n\"analysis\":{\"passes\":%u,\"peak_open_instances\":%" PRIu64 ",\"peak_held_ops\":%" PRIu64
          ",\"horizon_ns\":%lld,\"settle_ns\":%lld,\"exact_max\":%d,\"sketch_error\":%g},\n\"v7\":",
          a->job->run.passes, a->job->run.peak_open, a->job->run.peak_held, (long long)NCS_JOB_HORIZON_NS,
          (long long)NCS_JOB_SETTLE_NS, NCS_AN_EXACT_MAX, NCS_AN_SKETCH_ERR);
  print_v7_json(o, v);
  fprintf(o, ",\n\"ranges\":");
  print_ranges_json(o, rg);
  fprintf(o, "}\n");
}

/* the --html page to `path` ("-": stdout), written as every output is (src/util/outfile.h):
 * a partial page never takes the name. 0, or -1 after saying why. */
static int write_html(const char *path, int force, char *in, const ncs_analysis_t *a,
                      const ncs_findings_t *f, const ncs_ranges_t *rg, int say) {
  ncs_out_opts_t oo = {.force = force, .inputs = &in, .ninputs = 1};
  ncs_out_t out;
  char err[PATH_MAX + 256];
  if (ncs_out_open(&out, path, &oo, err, sizeof err) != 0) {
    ncs_error("--html: %s", err);
    return -1;
  }
  FILE *o = ncs_out_file(&out);
  if (!o || ncs_report_html(o, a, f, rg) != 0) {
    snprintf(err, sizeof err, "cannot write %s: %s", path, strerror(o ? errno : ENOMEM));
    ncs_out_abort(&out);
    ncs_error("--html: %s", err);
    return -1;
  }
  if (ncs_out_commit(&out, err, sizeof err) != 0) {
    ncs_error("--html: %s", err);
    return -1;
  }
  if (say && strcmp(path, "-")) ncs_note("wrote %s", path);
  return 0;
}

/* A warning on the demo's screen: its first clause (up to the first " (", ": " or "; " past 30
 * characters; at most 150 characters, cut at a word), and where the whole text is, so that one
 * long warning (gpu_check's runs to 12 lines) does not push the findings off the screen. */
static void brief_warning(const char *text, char *out, size_t len) {
  size_t n = strlen(text), cut = n;
  for (const char *const *sep = (const char *const[]){" (", ": ", "; ", NULL}; *sep; sep++) {
    const char *p = strstr(text + (n > 30 ? 30 : n), *sep);
    if (p && (size_t)(p - text) < cut) cut = (size_t)(p - text);
  }
  int more = cut < n;
  if (cut > 150) {
    cut = 150;
    while (cut > 30 && text[cut] != ' ') cut--;
    more = 1;
  }
  snprintf(out, len, "%.*s%s", (int)cut, text, more ? " ... (ncclscope report: the whole warning)" : "");
}

/* gpu_check's warning on the demo's screen: what it left without a GPU time, and why in short
 * (its first clause counts bad channel records, which may be none when completions were taken
 * back as impossible, as in a hang) */
static void brief_gpu_check(const ncs_analysis_t *a, char *out, size_t len) {
  uint64_t ops = 0, unknown = 0, impossible = 0, bad = 0, channels = 0;
  for (uint32_t i = 0; i < a->job->nprocs; i++) {
    const ncs_job_gchk_t *g = &a->job->procs[i].gchk;
    ops += g->ops, unknown += g->unknown, impossible += g->impossible, channels += g->channels;
    bad += g->ch_bad + g->ch_before_prev + g->ch_before_launch + g->ch_future + g->ch_after_next +
           g->ch_disagree + g->ch_settling;
  }
  size_t n = (size_t)snprintf(out, len, "%" PRIu64 " of %" PRIu64 " rank operations have no GPU time", unknown, ops);
  if (bad && n < len)
    n += (size_t)snprintf(out + n, len - n, ": NCCL's KernelCh timestamps cannot be right on %" PRIu64 " of %"
                          PRIu64 " channel records", bad, channels);
  if (impossible && n < len)
    n += (size_t)snprintf(out + n, len - n, "%s%" PRIu64 " completions rejected as impossible (before every "
                          "member entered)", bad ? "; " : ": ", impossible);
  if (n < len) snprintf(out + n, len - n, " ... (ncclscope report: the whole warning)");
}

/* The demo's screen (demo.c): what was recorded, the coverage, the first warnings and findings,
 * each on lines that fit `width` (0: one line each) after a 10-column label. */
int ncs_report_brief(const char *dir, uint32_t job, const char *html, int force, FILE *o,
                     uint32_t max_findings, int width, int flags) {
  char err[4096];
  int why = 0;
  ncs_analyze_opts_t ao = {.job = job, .why = &why, .retain = (flags & NCS_BRIEF_WORST) != 0};
  ncs_analysis_t *a = ncs_analyze_path_opts(dir, &ao, err, sizeof err);
  if (!a) {
    ncs_error("%s", err);
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
  char e[32], line[1200];
  ncs_fmt_ns(e, sizeof e, (double)a->job->error);
  snprintf(line, sizeof line, "%u processes on %u host%s, %u communicators, %" PRIu64
           " collective instances, %" PRIu64 " sends, %" PRIu64 " receives",
           a->cov.files, a->job->nhosts, a->job->nhosts == 1 ? "" : "s", a->job->ncomms, a->instances,
           a->sends, a->recvs);
  ncs_wrap(o, "recorded  ", "          ", line, width);
  uint64_t ops = a->cov.timing[0] + a->cov.timing[1] + a->cov.timing[2];
  snprintf(line, sizeof line, "%u of %u files read%s; completion from GPU kernels for %.0f%% of %" PRIu64
           " rank operations; %.1f%% of operation calls lost; clock error +-%s",
           a->cov.files - a->cov.unreadable, a->cov.files, a->cov.damaged ? " (some damaged)" : "",
           ncs_pct(a->cov.timing[0], ops), ops, ncs_pct(a->cov.op_lost, a->cov.op_calls), e);
  ncs_wrap(o, "coverage  ", "          ", line, width);
  for (uint32_t k = 0; k < f.nwarn && k < 2; k++) {
    if (!strcmp(f.warn[k].key, "gpu_check"))
      brief_gpu_check(a, line, sizeof line);
    else
      brief_warning(f.warn[k].text, line, sizeof line);
    ncs_wrap(o, "          ! ", "            ", line, width);
  }
  if (f.nwarn > 2) fprintf(o, "          ! and %u more warnings (ncclscope report)\n", f.nwarn - 2);
  for (uint32_t k = 0; k < f.nheadline && k < max_findings; k++) {
    ncs_finding_text(a, &f.items[k], line, sizeof line);
    ncs_wrap(o, k ? "          - " : "findings  - ", "            ", line, width);
  }
  if (f.nheadline > max_findings)
    fprintf(o, "          and %u more (ncclscope report)\n", f.nheadline - max_findings);
  else if (f.nheadline && f.n > f.nheadline)
    fprintf(o, "          and %u minor (ncclscope report)\n", f.n - f.nheadline);
  if (!f.nheadline) ncs_wrap(o, "findings  - ", "            ", f.none, width);
  if (flags & NCS_BRIEF_WORST) {
    /* the collective the ranks waited longest in, and for whom; once every rank of its
     * communicator had called something there (before, the skew is the processes' start-up) */
    int64_t *started = ncs_xcalloc(a->job->ncomms + 1, sizeof *started);
    hmap_t first = {0}; /* (comm, rank) -> its first arrival */
    for (size_t k = 0; k < ncs_job_op_count(a->job); k++) {
      const ncs_op_t *op = ncs_job_op(a->job, k);
      if (op->comm >= a->job->ncomms) continue;
      int created;
      uint64_t *v = hm_ref(&first, hm_mix2(op->comm, (uint64_t)(uint32_t)op->rank), (uint64_t)op->arrival, &created);
      if (!v) ncs_oom();
      if (op->arrival < (int64_t)*v) *v = (uint64_t)op->arrival;
    }
    for (size_t k = 0; k < ncs_job_op_count(a->job); k++) { /* the latest first arrival, per comm */
      const ncs_op_t *op = ncs_job_op(a->job, k);
      uint64_t v;
      if (op->comm < a->job->ncomms && hm_get(&first, hm_mix2(op->comm, (uint64_t)(uint32_t)op->rank), &v) &&
          (int64_t)v > started[op->comm])
        started[op->comm] = (int64_t)v;
    }
    hm_free(&first);
    const ncs_inst_t *w = NULL;
    for (size_t i = 0; i < ncs_job_inst_count(a->job); i++) {
      const ncs_inst_t *in = ncs_job_inst(a->job, i);
      if (in->nops < 2 || in->comm >= a->job->ncomms || in->first_arrival <= started[in->comm]) continue;
      if (!w || in->last_arrival - in->first_arrival > w->last_arrival - w->first_arrival) w = in;
    }
    /* the ranks that did not wait run ahead (enqueueing returns at once), so the skew grows for a
     * few collectives after a stall began: name the first one of the communicator within 10% of
     * the largest, where the stall began */
    const ncs_inst_t *top = w;
    for (size_t i = 0; top && i < ncs_job_inst_count(a->job); i++) {
      const ncs_inst_t *in = ncs_job_inst(a->job, i);
      if (in->nops < 2 || in->comm != top->comm || in->first_arrival <= started[in->comm]) continue;
      if (in->first_arrival < w->first_arrival && in->last_rank == top->last_rank &&
          (in->last_arrival - in->first_arrival) * 10 >= (top->last_arrival - top->first_arrival) * 9)
        w = in;
    }
    free(started);
    if (w) {
      char sk[32], at[32];
      ncs_fmt_ns(sk, sizeof sk, (double)(w->last_arrival - w->first_arrival));
      ncs_fmt_ns(at, sizeof at, (double)(w->first_arrival - a->job->t_first));
      snprintf(line, sizeof line, "%s #%" PRIu64 " on c%u, %s into the job: the first rank waited %s for rank "
               "%d, the last to arrive (the largest arrival skew once every rank had started, where it began)", w->func, w->seq,
               w->comm, at, sk, w->last_rank);
      ncs_wrap(o, "worst     ", "          ", line, width);
    }
  }
  if (flags & NCS_BRIEF_LINKS) { /* the slowest network link, against the median link */
    double *bw = ncs_xcalloc(a->nlinks + 1, sizeof *bw);
    const ncs_an_link_t *lo = NULL;
    uint32_t n = 0;
    for (uint32_t k = 0; k < a->nlinks; k++) {
      const ncs_an_link_t *L = &a->links[k];
      if (L->active <= 0 || !L->bytes) continue;
      bw[n++] = (double)L->bytes / (double)L->active;
      if (!lo || bw[n - 1] < (double)lo->bytes / (double)lo->active) lo = L;
    }
    if (lo) {
      ncs_sort(bw, n, sizeof *bw, ncs_cmp_dbl);
      snprintf(line, sizeof line, "the slowest: c%u rank %d %s rank %d, channel %u: %.3f GB/s; the median link "
               "%.3f GB/s (ncclscope report: Links by network bandwidth)", lo->comm, lo->rank,
               lo->is_send ? "to" : "from", lo->peer, lo->channel, (double)lo->bytes / (double)lo->active,
               bw[n / 2]);
      ncs_wrap(o, "links     ", "          ", line, width);
    }
    free(bw);
  }
  ncs_findings_free(&f);
  ncs_analysis_free(a);
  return rc;
}

/* The text report to stdout: built in memory, then on a terminal through a pager ($PAGER, else
 * less -FRX: it exits at once when the report fits the screen; not with --no-pager, or PAGER
 * empty or cat), coloured unless --no-color or NO_COLOR (docs/report.md, "The terminal report") */
static void text_out(const ncs_analysis_t *a, const ncs_findings_t *f, const ncs_v7_t *v,
                     const ncs_ranges_t *rg, ncs_rview_t *rv, int color, int pager) {
  int tty = isatty(STDOUT_FILENO);
  const char *nc = getenv("NO_COLOR");
  rv->color = tty && color && !(nc && *nc);
  rv->width = ncs_term_width(STDOUT_FILENO);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return;
  ncs_report_text(m, a, f, v, rg, rv);
  fclose(m);
  FILE *o = stdout, *p = NULL;
  const char *pg = getenv("PAGER");
  if (tty && pager && !(pg && (!*pg || !strcmp(pg, "cat")))) {
    if (!pg) setenv("LESS", getenv("LESS") ? getenv("LESS") : "FRX", 0);
    fflush(stdout);
    signal(SIGPIPE, SIG_IGN); /* quitting the pager early is not an error */
    p = popen(pg ? pg : "less", "w");
    if (p) o = p;
  }
  ncs_fit(o, buf, len, rv->wide ? 0 : rv->width, 4); /* what the tables and wrapping left wide */
  free(buf);
  if (p) pclose(p);
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
                                       {"csv", no_argument, 0, 'V'},
                                       {"table", required_argument, 0, 'B'},
                                       {"sort", required_argument, 0, 'S'},
                                       NCS_FILTER_OPTIONS,
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c, json = 0, timing = 0, force = 0, why = 0, color = 1, pager = 1, csv = 0;
  static ncs_cli_filter_t cf;
  memset(&cf, 0, sizeof cf);
  ncs_rview_t rv = {.top = NCS_FIND_TOP};
  uint32_t job = 0;
  const char *html = NULL;
  uint64_t top = NCS_FIND_TOP;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":jt:h", opts, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 'T': timing = 1; break;
    case 'W': rv.wide = 1; break;
    case 'C': color = 0; break;
    case 'P': pager = 0; break;
    case 'F': force = 1; break;
    case 'V': csv = 1; break;
    case 'B':
      if (!ncs_report_table_known(optarg))
        return ncs_usage_error("report", "--table: no table '%s' (communicators, sizes, breakdown, links, "
                                         "ranks, overlap, replays, phases, tags, ranges)", optarg);
      rv.table = optarg;
      break;
    case 'S': {
      char keys[2048];
      if (!ncs_report_sort_known(optarg, keys, sizeof keys))
        return ncs_usage_error("report", "--sort: no column '%s' in any table; the columns: %s", optarg, keys);
      rv.sort = optarg;
      break;
    }
    case 'J':
      if (ncs_parse_run("report", optarg, &job) != 0) return NCS_EXIT_USAGE;
      break;
    case 't':
      if (ncs_parse_count(optarg, 1, 100000, &top) != 0)
        return ncs_usage_error("report", "--top needs a number from 1 to 100000, not '%s'", optarg);
      rv.top = (uint32_t)top, rv.top_given = 1;
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
  if (html_stdout && (json || csv)) return ncs_usage_error("report", "--html - and --%s both write to stdout", json ? "json" : "csv");
  if (json && csv) return ncs_usage_error("report", "--json or --csv, not both");
  if (rv.table && !csv) return ncs_usage_error("report", "--table chooses a table of --csv: give --csv too");
  if (optind >= argc) return ncs_usage_error("report", "which traces? give a trace directory");
  if (optind + 1 < argc) return ncs_usage_error("report", "one trace directory, please");
  char err[4096];
  ncs_analyze_opts_t ao = {.job = job, .why = &why, .filter = &cf.f};
  ncs_analysis_t *a = ncs_analyze_path_opts(argv[optind], &ao, err, sizeof err);
  if (!a) {
    if (why == NCS_JOB_ERR_FILTER) return ncs_usage_error("report", "%s", err);
    ncs_error("%s", err);
    return ncs_job_exit(why);
  }
  if (ncs_no_input("report", a->job)) {
    ncs_analysis_free(a);
    return NCS_EXIT_NO_INPUT;
  }
  ncs_findings_t f;
  ncs_findings_build(&f, a, (uint32_t)top);
  int rc = ncs_job_input(a->job) == NCS_JOB_IN_DAMAGED ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
  ncs_v7_t v; /* one more pass: GPU phases, user tags, symmetric kernels (src/analyze/phases.h) */
  struct timespec v7_t0, v7_t1;
  clock_gettime(CLOCK_MONOTONIC, &v7_t0);
  if (!html_stdout && ncs_v7_scan(a, &v, err, sizeof err) != 0) {
    ncs_error("%s", err);
    ncs_findings_free(&f);
    ncs_analysis_free(a);
    return NCS_EXIT_ERROR;
  }
  if (timing) { /* every pass over the files: the job model's, then the v7 scan's */
    fprintf(stderr, "ncclscope report: %u passes:", a->job->run.passes + !html_stdout);
    for (uint32_t k = 0; k < a->job->run.passes; k++) fprintf(stderr, "%s %.3f s", k ? " +" : "", a->job->run.pass_s[k]);
    clock_gettime(CLOCK_MONOTONIC, &v7_t1);
    if (!html_stdout)
      fprintf(stderr, " + %.3f s (GPU phases, user tags)",
              (double)(v7_t1.tv_sec - v7_t0.tv_sec) + (double)(v7_t1.tv_nsec - v7_t0.tv_nsec) * 1e-9);
    fprintf(stderr, "\n");
  }
  ncs_ranges_t rg;
  ncs_ranges_build(a->job, &rg);
  /* the page first: when it cannot be written, say so and print nothing else */
  if (html && write_html(html, force, argv[optind], a, &f, &rg, 1) != 0)
    rc = NCS_EXIT_OUTPUT;
  else if (json)
    print_json(stdout, a, &f, &v, &rg);
  else if (csv)
    ncs_report_csv(stdout, a, &f, &v, &rg, &rv);
  else if (!html_stdout)
    text_out(a, &f, &v, &rg, &rv, color, pager);
  ncs_ranges_free(&rg);
  if (!html_stdout) ncs_v7_free(&v);
  ncs_findings_free(&f);
  ncs_analysis_free(a);
  return rc;
}
