/* findings.c - the report's findings and number formats (findings.h). */
#include "analyze/findings.h"
#include "trace/gpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"
#include "util/num.h"
#include "util/fmt.h"

const char *ncs_bucket_timing(const ncs_an_bucket_t *b) {
  return b->src[0] >= b->src[1] && b->src[0] >= b->src[2] ? ncs_src_names[0]
         : b->src[1] >= b->src[2]                         ? ncs_src_names[1]
                                                          : ncs_src_names[2];
}

static int cmp_wait(const void *x, const void *y) {
  const ncs_an_rank_t *a = *(const ncs_an_rank_t *const *)x, *b = *(const ncs_an_rank_t *const *)y;
  if (a->wait_caused != b->wait_caused) return a->wait_caused > b->wait_caused ? -1 : 1;
  return a->last > b->last ? -1 : a->last < b->last;
}
static int cmp_slow(const void *x, const void *y) {
  const ncs_an_rank_t *a = *(const ncs_an_rank_t *const *)x, *b = *(const ncs_an_rank_t *const *)y;
  if (a->excess != b->excess) return a->excess > b->excess ? -1 : 1;
  return a->slowest > b->slowest ? -1 : a->slowest < b->slowest;
}

const char *const ncs_side_names[4] = {"", "host-side", "GPU-side", "mixed"};
const char *const ncs_find_kind_names[NCS_FIND_NKINDS] = {"straggler", "slow_rank", "mismatch", "incomplete",
                                                          "p2p", "damaged", "stall", "repeated_stalls"};

static double wall_ns(const ncs_analysis_t *a) { return (double)(a->job->t_last - a->job->t_first); }

/* a finding that is no effect (mismatches, missing ranks, p2p, damage): always a headline */
static ncs_finding_t *add(ncs_findings_t *f, ncs_find_kind_t kind, const ncs_an_rank_t *r,
                          ncs_find_test_t t) {
  ncs_finding_t *x = &f->items[f->n++];
  *x = (ncs_finding_t){.kind = kind, .rank = r, .test = t, .headline = 1};
  return x;
}

/* an effect: its size per other rank; a headline when material */
static void sized(ncs_finding_t *x, const ncs_analysis_t *a, int64_t size_ns, int side) {
  double wall = wall_ns(a);
  x->size_ns = size_ns, x->side = side;
  x->share = wall > 0 ? (double)size_ns / wall : 0;
  x->headline = x->share >= NCS_FIND_MATERIAL;
}

static int side_of(uint64_t gpu_n, uint64_t host_n) {
  return gpu_n && host_n ? NCS_SIDE_MIXED : gpu_n ? NCS_SIDE_GPU : host_n ? NCS_SIDE_HOST : NCS_SIDE_NONE;
}

/* A straggler's waiting where it happens, per other rank: one side only, never the two summed
 * (a host interval of an instance without GPU times overlaps in time the GPU waits of earlier
 * instances: summed they could exceed the job). GPU-side when at least half of the instances it
 * caused waiting in have trusted GPU times, else host-side; the instances of the other side are
 * left out, and the size is then a lower bound (*side NCS_SIDE_MIXED says so). */
static int gpu_side(const ncs_an_rank_t *r) { return r->caused_gpu_n && r->caused_gpu_n >= r->caused_host_n; }
static int64_t caused_per_other(const ncs_analysis_t *a, const ncs_an_rank_t *r, int *side) {
  int32_t m = a->job->comms[r->comm].nranks;
  int g = gpu_side(r);
  *side = r->caused_gpu_n && r->caused_host_n ? NCS_SIDE_MIXED : g ? NCS_SIDE_GPU : NCS_SIDE_HOST;
  return m > 1 ? (g ? r->wait_caused_gpu : r->wait_caused_host) / (m - 1) : 0;
}

ncs_find_test_t ncs_find_test(const ncs_analysis_t *a, const ncs_an_rank_t *r, int slow,
                              uint32_t tests) {
  int32_t m = a->job->comms[r->comm].nranks;
  uint64_t n = slow ? r->slow_trials : r->last_trials, k = slow ? r->slowest : r->last;
  const uint32_t *qk = slow ? r->q_slow : r->q_last, *qn = slow ? r->q_slow_trials : r->q_last_trials;
  ncs_find_test_t t = {.chance = m > 0 ? 1.0 / m : 1, .tests = tests ? tests : 1};
  t.min_share = 2 * t.chance < (1 + t.chance) / 2 ? 2 * t.chance : (1 + t.chance) / 2;
  t.p = ncs_binom_sf(k, n, t.chance);
  int w = 0; /* the quarter with the most of the count */
  for (int q = 1; q < 4; q++)
    if (qk[q] > qk[w]) w = q;
  t.p_rest = ncs_binom_sf(k - qk[w], n - qn[w], t.chance);
  double level = NCS_FIND_ALPHA / t.tests;
  t.significant = n && k <= n && t.p <= level && t.p_rest <= level &&
                  (double)k >= t.min_share * (double)n;
  return t;
}

/* ranks with at least one trial: the number of tests the correction divides by */
static uint32_t tested(const ncs_analysis_t *a, int slow) {
  uint32_t n = 0;
  for (uint32_t k = 0; k < a->nranks; k++) n += (slow ? a->ranks[k].slow_trials : a->ranks[k].last_trials) > 0;
  return n;
}

static void warn(ncs_findings_t *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn(ncs_findings_t *f, const char *key, const char *fmt, ...) {
  if (f->nwarn >= NCS_WARN_MAX) return;
  ncs_warning_t *w = &f->warn[f->nwarn++];
  w->key = key;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->text, sizeof w->text, fmt, ap);
  va_end(ap);
}

/* what the files lost */
static void warn_files(ncs_findings_t *f, const ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  const ncs_job_proc_t *dup = NULL;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_proc_t *p = &j->procs[i];
    if (p->excluded == NCS_JX_DUPLICATE && !dup) dup = p;
    if (!p->readable && !p->excluded)
      warn(f, "unreadable", "%s could not be read (%s): its ranks are not in this report", p->path,
           p->damage_msg);
  }
  if (dup)
    warn(f, "duplicate",
         "%u file%s repeat%s another recording (the same host, pid and start) and %s read once; "
         "first: %s is %s", j->duplicates, j->duplicates == 1 ? "" : "s",
         j->duplicates == 1 ? "s" : "", j->duplicates == 1 ? "is" : "are", dup->path,
         j->procs[dup->same_as].path);
  if (j->other_job)
    warn(f, "other_jobs",
         "the traces hold %u runs (recordings that never held ranks of one communicator together): this is run "
         "%u; %u file%s of the others left out (choose with --run N)", j->njobs, j->job, j->other_job,
         j->other_job == 1 ? "" : "s");
  if (a->cov.damaged)
    warn(f, "damaged",
         "%u trace file%s end%s early (damaged or cut short): what followed the damage is lost",
         a->cov.damaged, a->cov.damaged == 1 ? "" : "s", a->cov.damaged == 1 ? "s" : "");
  if (a->cov.damaged_ops)
    warn(f, "damaged_records",
         "%" PRIu64 " records of operation calls name strings or communicators lost with damage "
         "(chunks lost, or out of the writer's order): they are left out of this report", a->cov.damaged_ops);
  if (a->cov.comms_untracked || a->cov.no_comm_ops) {
    char lim[48] = "";
    if (a->cov.max_comms) snprintf(lim, sizeof lim, "=%u", a->cov.max_comms);
    warn(f, "untracked_comms",
         "%" PRIu64 " communicator%s not tracked (NCCLSCOPE_MAX_COMMS%s): %" PRIu64 " operation%s "
         "recorded without a communicator are left out of this report",
         a->cov.comms_untracked, a->cov.comms_untracked == 1 ? " was" : "s were", lim,
         a->cov.no_comm_ops, a->cov.no_comm_ops == 1 ? "" : "s");
  }
  if (a->cov.evicted) {
    char lim[48] = "";
    if (a->cov.track_max) snprintf(lim, sizeof lim, "=%u", a->cov.track_max);
    warn(f, "evicted",
         "the plugin's table of open events was full (NCCLSCOPE_TRACK_MAX%s): %" PRIu64 " events got "
         "no completion, %" PRIu64 " of them operations (their durations are enqueue times)", lim,
         a->cov.evicted, a->cov.evicted_ops);
  }
  if (a->cov.no_footer)
    warn(f, "no_footer",
         "%u segment%s ha%s no footer (a process killed, crashed or still running): what happened "
         "after %s last chunk is unknown",
         a->cov.no_footer, a->cov.no_footer == 1 ? "" : "s", a->cov.no_footer == 1 ? "s" : "ve",
         a->cov.no_footer == 1 ? "its" : "their");
  if (a->cov.write_errors)
    warn(f, "write_errors", "%" PRIu64 " chunks could not be written (disk full or I/O errors): their records are lost",
         a->cov.write_errors);
  if (a->cov.gaps)
    warn(f, "gaps", "%" PRIu64 " damaged ranges (%" PRIu64 " bytes) were skipped: their records are lost",
         a->cov.gaps, a->cov.gap_bytes);
}

/* what was not recorded: dropped records, sampled groups, operations without a completion */
static void warn_records(ncs_findings_t *f, const ncs_analysis_t *a) {
  uint64_t lost = a->cov.lost[NCS_JL_DROPS] + a->cov.lost[NCS_JL_NO_SLOT];
  if (lost)
    warn(f, "lost",
         "the plugin lost %" PRIu64 " records (buffer full or no thread slot); of the %" PRIu64
         " records of operation calls that happened (recorded and lost), %" PRIu64 " (%.1f%%) were "
         "lost: numbers and findings cover only what was recorded",
         lost, a->cov.op_calls, a->cov.op_lost, ncs_pct(a->cov.op_lost, a->cov.op_calls));
  if (a->cov.groups_unsampled)
    warn(f, "sampled",
         "%" PRIu64 " of %" PRIu64 " groups were recorded without GPU times (NCCLSCOPE_SAMPLE)",
         a->cov.groups_unsampled, a->cov.groups);
  uint64_t ops = a->cov.timing[0] + a->cov.timing[1] + a->cov.timing[2];
  uint64_t none = a->cov.timing[NCS_SRC_ENQUEUE_HOST] - a->cov.gk_enqueue; /* gpu_check says the rest */
  if (none)
    warn(f, "no_completion",
         "%" PRIu64 " of %" PRIu64 " operations have no completion in the trace (no KernelCh or "
         "ProxyOp recorded for them): their durations are enqueue times, lower bounds",
         none, ops);
  if (a->unsampled)
    warn(f, "unsampled",
         "%" PRIu64 " instances have no GPU times (unsampled, NCCLSCOPE_UNSAMPLED_EVENTS): counted "
         "for arrivals and skew, left out of latency and bandwidth",
         a->unsampled);
}

/* CUPTI (docs/report.md, "GPU truth"): asked for but not used, or used and incomplete */
static void warn_cupti(ncs_findings_t *f, const ncs_analysis_t *a) {
  const ncs_job_t *j = a->job;
  uint32_t unused = 0, first = UINT32_MAX, lost = 0, lfirst = UINT32_MAX;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_gpu_t *g = &j->gpu[i];
    if (j->procs[i].excluded || !g->have_state) continue;
    int asked = (g->states_seen & ~(1u << NCS_GPU_OFF)) != 0; /* a state other than off */
    if (asked && !g->kernels && g->state != NCS_GPU_ACTIVE) {
      if (!unused++) first = i;
    }
    if (g->kernels && *g->lost) {
      if (!lost++) lfirst = i;
    }
  }
  if (unused) {
    const ncs_job_gpu_t *g = &j->gpu[first];
    warn(f, "cupti_unused",
         "CUPTI was asked for but not used in %u file%s (first: %s, %s%s%s): their GPU times are "
         "KernelCh's or none, and they have no overlap numbers",
         unused, unused == 1 ? "" : "s", j->procs[first].path, g->state == NCS_GPU_BUSY ? "busy, held by " : ncs_gpu_state_name(g->state),
         g->state == NCS_GPU_BUSY ? g->holder : ": ", g->state == NCS_GPU_BUSY ? "" : g->reason);
  }
  if (lost)
    warn(f, "cupti_lost",
         "CUPTI's kernel records are incomplete in %u file%s (first: %s: %s): their GPUs have no "
         "overlap numbers, and their launches without kernels are no evidence of a hang",
         lost, lost == 1 ? "" : "s", j->procs[lfirst].path, j->gpu[lfirst].lost);
}

/* KernelCh times that cannot be right (model kch.c; docs/report.md, "GPU times that cannot be
 * right"): what was left out, repaired, unknown, and the completions that rested on them */
static void warn_gpu_check(ncs_findings_t *f, const ncs_analysis_t *a) {
  ncs_job_gchk_t t = {0};
  uint32_t worst = UINT32_MAX;
  uint64_t wbad = 0;
  for (uint32_t i = 0; i < a->job->nprocs; i++) {
    const ncs_job_gchk_t *g = &a->job->procs[i].gchk;
    uint64_t bad = g->ch_bad + g->ch_before_prev + g->ch_before_launch + g->ch_future + g->ch_after_next +
                   g->ch_disagree + g->ch_settling;
    t.ch_future += g->ch_future, t.ch_after_next += g->ch_after_next, t.ch_disagree += g->ch_disagree;
    t.ch_settling += g->ch_settling;
    t.ops += g->ops, t.repaired += g->repaired, t.unknown += g->unknown, t.channels += g->channels;
    t.ch_bad += g->ch_bad, t.ch_before_prev += g->ch_before_prev, t.ch_before_launch += g->ch_before_launch;
    t.claims_rejected += g->claims_rejected, t.inferred += g->inferred, t.impossible += g->impossible;
    t.disjoint += g->disjoint;
    if (bad > wbad || (worst == UINT32_MAX && g->unknown)) wbad = bad, worst = i;
  }
  uint64_t bad = t.ch_bad + t.ch_before_prev + t.ch_before_launch + t.ch_future + t.ch_after_next + t.ch_disagree +
                 t.ch_settling;
  if (!bad && !t.unknown && !t.impossible && !t.disjoint) return;
  warn(f, "gpu_check",
       "NCCL's KernelCh timestamps cannot be right on %" PRIu64 " of %" PRIu64 " channel records "
       "(%" PRIu64 " start before the previous kernel of their communicator ended, %" PRIu64
       " before their own launch: earlier work's times; %" PRIu64 " end after the next kernel "
       "began: later work's; %" PRIu64 " disagree with the other channels of their operation; %"
       PRIu64 " after the host read them; %" PRIu64 " end before they start or have no start; %" PRIu64
       " read while the GPU clock settled after the first kernel): %" PRIu64
       " of %" PRIu64 " operations repaired from the channels that agree, %" PRIu64
       " with no GPU time (left out of latency and bandwidth: %" PRIu64 " instances and sends/"
       "receives); %" PRIu64 " completions claimed on them rejected, %" PRIu64 " inferred from a "
       "later operation of the same rank and communicator, %" PRIu64 " rejected as impossible "
       "(before every member entered); %" PRIu64 " more without GPU times because their ranks' "
       "kernels shared no moment. Most: %s",
       bad, t.channels, t.ch_before_prev, t.ch_before_launch, t.ch_after_next, t.ch_disagree, t.ch_future, t.ch_bad,
       t.ch_settling,
       t.repaired, t.ops, t.unknown,
       a->no_gpu, t.claims_rejected, t.inferred, t.impossible, t.disjoint,
       worst != UINT32_MAX ? a->job->procs[worst].path : "-");
}

static void warn_gpu(ncs_findings_t *f, const ncs_analysis_t *a) {
  warn_gpu_check(f, a);
  if (!a->gpu_suspect) return;
  char g[32], l[32];
  ncs_fmt_ns(g, sizeof g, (double)a->gsus[0].gap);
  ncs_fmt_ns(l, sizeof l, (double)a->gsus[0].launch);
  warn(f, "gpu_suspect",
       "%" PRIu64 " instances have GPU times that cannot be right: a rank's kernel ended before "
       "another rank's began (NCCL gave a KernelCh another operation's timestamps, or a GPU clock "
       "is mapped wrong); their latency, bandwidth and waits are doubtful. First: c%u %s #%" PRIu64
       ", rank %d's kernel starts %s after its call, %s after another rank's kernel ended",
       a->gpu_suspect, a->gsus[0].comm, a->gsus[0].func, a->gsus[0].seq, a->gsus[0].rank, l, g);
}

/* the k-th send pairs with the k-th receive: a lost P2p record (or one of unknown type) shifts
 * every later pair of its ranks */
static int p2p_reliable(const ncs_analysis_t *a) {
  return !a->cov.p2p_lost && !a->cov.lost[NCS_JL_NO_SLOT] && !a->cov.gaps;
}

/* the sentence when no finding stands out: true for what was recorded, and only that */
static void none_text(ncs_findings_t *f, const ncs_analysis_t *a) {
  double lost = ncs_pct(a->cov.op_lost, a->cov.op_calls);
  if (lost > 50)
    snprintf(f->none, sizeof f->none,
             "cannot tell: %.0f%% of the operation calls were not recorded (lost records), too few "
             "to say whether any rank stands out", lost);
  else if (a->cov.op_lost || a->cov.unreadable || a->cov.no_comm_ops || a->cov.damaged_ops || a->cov.evicted ||
           a->cov.damaged || a->cov.no_footer || a->cov.gaps)
    snprintf(f->none, sizeof f->none,
             "nothing stands out in what was recorded (%.1f%% of the operation calls lost%s%s%s%s)", lost,
             a->cov.unreadable ? ", files unreadable" : "",
             a->cov.damaged || a->cov.gaps ? ", files damaged" : a->cov.no_footer ? ", segments without footer" : "",
             a->cov.no_comm_ops || a->cov.damaged_ops ? ", operations left out" : "",
             a->cov.evicted ? ", completions not derived" : "");
  else
    snprintf(f->none, sizeof f->none, "nothing stands out");
  if (f->n > f->nheadline) {
    size_t l = strlen(f->none);
    snprintf(f->none + l, sizeof f->none - l, "; %u minor finding%s (each under %.0f%% of the job's time) below",
             f->n - f->nheadline, f->n - f->nheadline == 1 ? "" : "s", 100 * NCS_FIND_MATERIAL);
  }
}

/* stalls (analyze.h, ncs_an_stall_t): the `top` largest one by one, then each rank that stalled
 * twice or more, as one finding of its own */
static void stall_findings(ncs_findings_t *f, const ncs_analysis_t *a, uint32_t top) {
  ncs_find_test_t none = {0};
  for (uint32_t s = 0, shown = 0; s < a->nstalls && shown < top; s++) {
    const ncs_an_stall_t *x = &a->stalls[s];
    if (x->knock_on >= 0) continue;
    shown++;
    const ncs_an_rank_t *r = NULL;
    for (uint32_t k = 0; k < a->nranks && !r; k++)
      if (a->ranks[k].comm == x->comm && a->ranks[k].rank == x->rank) r = &a->ranks[k];
    ncs_finding_t *y = add(f, NCS_FIND_STALL, r, none);
    y->stall = x;
    sized(y, a, x->wait, x->gpu ? NCS_SIDE_GPU : NCS_SIDE_HOST);
  }
  for (uint32_t k = 0; k < a->nranks; k++) {
    const ncs_an_rank_t *r = f->by_wait[k];
    if (r->stalls < 2) continue;
    uint64_t g = 0, h = 0;
    for (uint32_t s = 0; s < a->nstalls; s++)
      if (a->stalls[s].comm == r->comm && a->stalls[s].rank == r->rank && a->stalls[s].knock_on < 0)
        g += a->stalls[s].gpu, h += !a->stalls[s].gpu;
    int32_t m = a->job->comms[r->comm].nranks;
    sized(add(f, NCS_FIND_STALLS, r, none), a, m > 1 ? r->stall_caused / (m - 1) : 0, side_of(g, h));
  }
}

void ncs_findings_build(ncs_findings_t *f, const ncs_analysis_t *a, uint32_t top) {
  f->by_wait = calloc(a->nranks + 1, sizeof *f->by_wait);
  f->by_slow = calloc(a->nranks + 1, sizeof *f->by_slow);
  /* at most top stragglers + top slow ranks + repeated stalls (each <= nranks), top stalls, and
   * 4 job-wide findings */
  f->items = calloc(3 * (size_t)a->nranks + top + 4, sizeof *f->items);
  f->n = f->nheadline = 0, f->nwarn = 0;
  if (!f->by_wait || !f->by_slow || !f->items) ncs_oom();
  warn_files(f, a), warn_records(f, a), warn_gpu(f, a), warn_cupti(f, a);
  for (uint32_t k = 0; k < a->nranks; k++) f->by_wait[k] = f->by_slow[k] = &a->ranks[k];
  if (a->nranks > 1) {
    qsort(f->by_wait, a->nranks, sizeof *f->by_wait, cmp_wait);
    qsort(f->by_slow, a->nranks, sizeof *f->by_slow, cmp_slow);
  }
  /* stragglers and slow ranks: the significant ones, most waiting (excess) first */
  uint32_t lt = tested(a, 0), st = tested(a, 1), ns = 0, nl = 0;
  for (uint32_t k = 0; k < a->nranks && ns < top; k++) {
    const ncs_an_rank_t *r = f->by_wait[k];
    ncs_find_test_t t = ncs_find_test(a, r, 0, lt);
    if (!t.significant || r->wait_caused <= 0) continue;
    int side;
    int64_t size = caused_per_other(a, r, &side);
    sized(add(f, NCS_FIND_STRAGGLER, r, t), a, size, side);
    ns++;
  }
  for (uint32_t k = 0; k < a->nranks && nl < top; k++) {
    const ncs_an_rank_t *r = f->by_slow[k];
    ncs_find_test_t t = ncs_find_test(a, r, 1, st);
    if (!t.significant || r->excess <= 0) continue;
    uint64_t g = r->gsrc[NCS_GS_CUPTI] + r->gsrc[NCS_GS_KERNELCH];
    sized(add(f, NCS_FIND_SLOW_RANK, r, t), a, r->excess, side_of(g, r->gsrc[NCS_GS_NONE]));
    nl++;
  }
  stall_findings(f, a, top);
  ncs_find_test_t none = {0};
  if (a->mismatched) add(f, NCS_FIND_MISMATCH, NULL, none);
  if (a->incomplete) add(f, NCS_FIND_INCOMPLETE, NULL, none);
  int p2p_bad = a->p2p_unmatched_send || a->p2p_unmatched_recv || a->p2p_bytes_mismatch;
  if (p2p_bad && !p2p_reliable(a))
    warn(f, "p2p_unpaired",
         "sends and receives cannot be paired reliably (records were lost: %" PRIu64 " P2p, and "
         "%" PRIu64 " of unknown types): cannot tell whether the %" PRIu64 " unpaired and %" PRIu64
         " size-mismatched ones are real",
         a->cov.p2p_lost, a->cov.lost[NCS_JL_NO_SLOT] + a->cov.gaps,
         a->p2p_unmatched_send + a->p2p_unmatched_recv, a->p2p_bytes_mismatch);
  else if (p2p_bad)
    add(f, NCS_FIND_P2P, NULL, none);
  if (a->damaged_files) add(f, NCS_FIND_DAMAGED, NULL, none);
  /* the headlines first, each group in its order */
  ncs_finding_t *tmp = calloc(f->n + 1, sizeof *tmp);
  if (!tmp) ncs_oom();
  uint32_t o = 0;
  for (int pass = 1; pass >= 0; pass--)
    for (uint32_t k = 0; k < f->n; k++)
      if (f->items[k].headline == pass) tmp[o++] = f->items[k];
  for (uint32_t k = 0; k < f->n; k++) f->nheadline += f->items[k].headline != 0;
  memcpy(f->items, tmp, f->n * sizeof *tmp);
  free(tmp);
  none_text(f, a);
}

void ncs_findings_free(ncs_findings_t *f) {
  free(f->by_wait), free(f->by_slow), free(f->items);
  f->by_wait = f->by_slow = NULL, f->items = NULL, f->n = 0;
}

/* ", 2026-11-28 12:00:01.234 UTC": job time t as wall-clock time (the first readable file's clocks) */
static void real_text(const ncs_analysis_t *a, int64_t t, char *o, size_t n) {
  *o = 0;
  const ncs_job_proc_t *p = NULL;
  for (uint32_t i = 0; i < a->job->nprocs && !p; i++)
    if (a->job->procs[i].readable && !a->job->procs[i].excluded) p = &a->job->procs[i];
  if (!p || !t) return;
  char u[48];
  ncs_fmt_utc(u, sizeof u, t - p->job_off + p->clk_off);
  if (strcmp(u, "?")) snprintf(o, n, ", %s", u);
}

/* "rank" or "3 ranks": the others of a finding */
static const char *others(char *o, size_t n, int32_t k) {
  if (k == 1)
    snprintf(o, n, "rank");
  else
    snprintf(o, n, "%d ranks", k);
  return o;
}

/* after a total over the k ranks that waited: ", PER each" with several, "" with one (its wait is
 * the total) */
static const char *per_rank(char *o, size_t n, int32_t k, const char *per) {
  if (k > 1)
    snprintf(o, n, ", %s each", per);
  else if (n)
    o[0] = 0;
  return o;
}

/* how the waiting was measured, in words */
static void side_text(char *o, size_t n, int side, int gpu, uint64_t gpu_n, uint64_t host_n) {
  if (side == NCS_SIDE_GPU)
    snprintf(o, n, "GPU-side: kernel start to the last peer's kernel start");
  else if (side == NCS_SIDE_HOST)
    snprintf(o, n, "host-side: arrival to the last arrival, no trusted GPU times");
  else if (gpu)
    snprintf(o, n, "mixed: GPU-side in %" PRIu64 " instances; %" PRIu64 " without trusted GPU times left out, "
             "so at least this", gpu_n, host_n);
  else
    snprintf(o, n, "mixed: host-side in %" PRIu64 " instances without trusted GPU times; %" PRIu64
             " GPU-side left out, so at least this", host_n, gpu_n);
}

/* one stall: who, before what, when, how long, what it cost */
static void stall_text(const ncs_analysis_t *a, const ncs_finding_t *f, char *o, size_t n) {
  const ncs_an_stall_t *x = f->stall;
  char each[32], longest[32], total[32], wall[32], at[32], real[64], size[32], med[32], sig[32], why[160], ot[24];
  ncs_fmt_ns(each, sizeof each, (double)x->wait), ncs_fmt_ns(longest, sizeof longest, (double)x->longest);
  ncs_fmt_ns(total, sizeof total, (double)x->caused), ncs_fmt_ns(wall, sizeof wall, wall_ns(a));
  ncs_fmt_ns(at, sizeof at, (double)(x->from - a->job->t_first));
  ncs_fmt_size(size, sizeof size, x->bytes);
  ncs_fmt_ns(med, sizeof med, x->med), ncs_fmt_ns(sig, sizeof sig, x->sigma);
  *real = 0;
  if (x->from_real > 0) {
    char u[48];
    ncs_fmt_utc(u, sizeof u, x->from_real);
    snprintf(real, sizeof real, ", %s", u);
  }
  char knock[128] = "";
  if (x->knock_ons)
    snprintf(knock, sizeof knock, "; %u more instance%s waited meanwhile, its knock-on (not counted as stalls)",
             x->knock_ons, x->knock_ons == 1 ? "" : "s");
  if (x->by_share)
    snprintf(why, sizeof why, "at least %.0f%% of the job's time; its bucket's median wait %s over %" PRIu64
             " instances", 100 * NCS_STALL_SHARE, med, x->bucket_n);
  else
    snprintf(why, sizeof why, "its bucket's usual wait: median %s, robust sigma %s over %" PRIu64 " instances",
             med, sig, x->bucket_n);
  /* one rank waited: its wait alone (its mean, longest and total are that one figure) */
  char waits[192];
  if (x->others == 1)
    snprintf(waits, sizeof waits, "%s (%s)", each, ncs_side_names[x->gpu ? NCS_SIDE_GPU : NCS_SIDE_HOST]);
  else
    snprintf(waits, sizeof waits, "%s each (longest %s; %s in total, %s)", each, longest, total,
             ncs_side_names[x->gpu ? NCS_SIDE_GPU : NCS_SIDE_HOST]);
  snprintf(o, n,
           "stall: rank %d (pid %" PRIu64 ") held up %s seq %" PRIu64 " (%s) on c%u " NCS_COMM_ID_FMT
           ": the other %s waited for it %s, %.1f%% of the job's %s,"
           " from %s into the job%s (%s)%s",
           x->rank, a->job->procs[x->proc].pid, x->func, x->seq, size, x->comm, a->job->comms[x->comm].comm_id,
           others(ot, sizeof ot, x->others), waits, 100 * f->share, wall, at, real, why, knock);
}

void ncs_finding_text(const ncs_analysis_t *a, const ncs_finding_t *f, char *o, size_t n) {
  char t1[32], t2[32], err[32];
  const ncs_an_rank_t *r = f->rank;
  ncs_fmt_ns(err, sizeof err, (double)a->job->error);
  switch (f->kind) {
  case NCS_FIND_STRAGGLER: {
    /* the waiting it caused, where it happened: summed over the other ranks, then per rank
     * against the wall time (the finding's size) */
    int32_t m = a->job->comms[r->comm].nranks;
    double wall = wall_ns(a);
    char t3[32], t4[32], how[160], ot[24], pr[48];
    ncs_fmt_ns(t1, sizeof t1, (double)(gpu_side(r) ? r->wait_caused_gpu : r->wait_caused_host));
    ncs_fmt_ns(t2, sizeof t2, r->nev ? (double)r->ev[0].late : 0);
    ncs_fmt_ns(t3, sizeof t3, (double)f->size_ns), ncs_fmt_ns(t4, sizeof t4, wall);
    side_text(how, sizeof how, f->side, gpu_side(r), r->caused_gpu_n, r->caused_host_n);
    snprintf(o, n,
             "rank %d (pid %" PRIu64 ") arrived last in %.0f%% of %" PRIu64
             " collectives on c%u " NCS_COMM_ID_FMT " (chance %.0f%%; binomial p = %.1e, %.1e without"
             " its busiest quarter, over %u ranks tested); the other %s waited for it %s in"
             " total (+-%s; %s)%s, %.1f%%"
             " of the job's %s; worst arrival: %s seq %" PRIu64 " by %s",
             r->rank, a->job->procs[r->proc].pid, ncs_pct(r->last, r->last_trials), r->last_trials,
             r->comm, a->job->comms[r->comm].comm_id, 100 * f->test.chance, f->test.p, f->test.p_rest,
             f->test.tests, others(ot, sizeof ot, m - 1), t1, err, how, per_rank(pr, sizeof pr, m - 1, t3),
             100 * f->share, t4, r->nev ? r->ev[0].func : "-", r->nev ? r->ev[0].seq : 0, t2);
    break;
  }
  case NCS_FIND_SLOW_RANK: {
    char t4[32];
    ncs_fmt_ns(t1, sizeof t1, (double)r->excess);
    ncs_fmt_ns(t4, sizeof t4, wall_ns(a));
    snprintf(o, n,
             "rank %d (pid %" PRIu64 ") took longest in %.0f%% of %" PRIu64
             " collectives on c%u " NCS_COMM_ID_FMT " (chance %.0f%%; binomial p = %.1e, %.1e without"
             " its busiest quarter, over %u ranks tested), %s transfer time over the median rank"
             " in total (%s), %.1f%% of the job's %s",
             r->rank, a->job->procs[r->proc].pid, ncs_pct(r->slowest, r->slow_trials), r->slow_trials,
             r->comm, a->job->comms[r->comm].comm_id, 100 * f->test.chance, f->test.p, f->test.p_rest,
             f->test.tests, t1,
             f->side == NCS_SIDE_GPU    ? "GPU times"
             : f->side == NCS_SIDE_HOST ? "host times"
                                        : "GPU times where known, else host times",
             100 * f->share, t4);
    break;
  }
  case NCS_FIND_STALL:
    stall_text(a, f, o, n);
    break;
  case NCS_FIND_STALLS: {
    const ncs_an_stall_t *big = NULL;
    for (uint32_t s = 0; s < a->nstalls && !big; s++)
      if (a->stalls[s].comm == r->comm && a->stalls[s].rank == r->rank && a->stalls[s].knock_on < 0)
        big = &a->stalls[s];
    char t3[32], t4[32], t5[32], ot[24];
    int32_t m = a->job->comms[r->comm].nranks;
    ncs_fmt_ns(t1, sizeof t1, (double)r->stall_caused);
    ncs_fmt_ns(t3, sizeof t3, (double)f->size_ns), ncs_fmt_ns(t4, sizeof t4, wall_ns(a));
    ncs_fmt_ns(t5, sizeof t5, big ? (double)big->wait : 0);
    /* t1: the waits of every other rank summed; t3: per waiting rank (the same with one) */
    char pr[48];
    snprintf(o, n,
             "rank %d (pid %" PRIu64 ") stalled %s%u times on c%u " NCS_COMM_ID_FMT
             ": the other %s waited for it %s in total in those stalls (%s)%s, %.1f%% of"
             " the job's %s; largest: %s seq %" PRIu64 ", %s%s",
             r->rank, a->job->procs[r->proc].pid, a->stalls_capped ? "at least " : "", r->stalls, r->comm,
             a->job->comms[r->comm].comm_id, others(ot, sizeof ot, m - 1), t1, ncs_side_names[f->side],
             per_rank(pr, sizeof pr, m - 1, t3), 100 * f->share, t4, big ? big->func : "-", big ? big->seq : 0,
             t5, m - 1 > 1 ? " each" : "");
    break;
  }
  case NCS_FIND_MISMATCH: {
    const ncs_an_mismatch_t *m = &a->mism[0];
    char more[48] = ""; /* rank_a differs from what most ranks passed (rank_b's) */
    if (m->nodd > 1) snprintf(more, sizeof more, " (%d ranks differ from most)", m->nodd);
    snprintf(o, n,
             "%" PRIu64 " collective instances differ across ranks, e.g. %s seq %" PRIu64
             " on c%u " NCS_COMM_ID_FMT ": rank %d differs from rank %d%s: %s",
             a->mismatched, m->func, m->seq, m->comm, a->job->comms[m->comm].comm_id, m->rank_a, m->rank_b, more,
             m->what);
    break;
  }
  case NCS_FIND_INCOMPLETE: {
    const ncs_an_incomplete_t *x = &a->first_incomplete;
    char miss[96] = "", at[32], real[64];
    size_t l = 0;
    int shown = x->nmissing < 8 ? x->nmissing : 8;
    for (int k = 0; k < shown && l < sizeof miss; k++)
      l += (size_t)snprintf(miss + l, sizeof miss - l, "%s%d", k ? "," : "", x->missing[k]);
    if (x->nmissing > shown && l < sizeof miss) snprintf(miss + l, sizeof miss - l, ",...");
    ncs_fmt_ns(at, sizeof at, (double)(x->at - a->job->t_first));
    real_text(a, x->at, real, sizeof real);
    snprintf(o, n,
             "%" PRIu64 " collective instances were not recorded by every rank of their communicator;"
             " the first: %s seq %" PRIu64 " on c%u " NCS_COMM_ID_FMT ", which rank%s %s of %d never"
             " recorded (first call %s into the job%s); a rank that never made the call, or died or hung"
             " before it: ncclscope diagnose %s says which and why",
             a->incomplete, x->func ? x->func : "-", x->seq, x->comm,
             x->set ? a->job->comms[x->comm].comm_id : 0, x->nmissing == 1 ? "" : "s", miss, x->nranks, at,
             real, a->path);
    break;
  }
  case NCS_FIND_P2P:
    snprintf(o, n,
             "point-to-point: %" PRIu64 " sends and %" PRIu64 " receives without a partner, %" PRIu64
             " pairs with different sizes",
             a->p2p_unmatched_send, a->p2p_unmatched_recv, a->p2p_bytes_mismatch);
    break;
  case NCS_FIND_DAMAGED:
    snprintf(o, n, "%" PRIu64 " trace files are damaged (their readable chunks were analysed)", a->damaged_files);
    break;
  }
}

/* ------------------------------------------------------------------ breakdown (docs/report.md) */
double ncs_bd_share(const ncs_an_bucket_t *b, int p) {
  int64_t sum = 0;
  for (int k = 0; k < NCS_PH_N; k++) sum += b->bd_ph[k];
  return sum > 0 ? (double)b->bd_ph[p] / (double)sum : 0;
}

double ncs_bd_launch_share(const ncs_an_bucket_t *b) {
  int64_t t = b->bd_launch + b->bd_span;
  return t > 0 ? (double)b->bd_launch / (double)t : 0;
}

void ncs_bd_label_text(const ncs_an_bucket_t *b, char *out, size_t len) {
  static const int ph_of[NCS_BN_N] = {-1, -1, NCS_PH_GPU, NCS_PH_PEER, NCS_PH_NET, NCS_PH_FLUSH, -1};
  if (b->bd_label < 0) {
    snprintf(out, len, "-");
  } else if (b->bd_label == NCS_BN_CANNOT) {
    snprintf(out, len, "cannot tell: %s", ncs_bw_text[b->bd_reason]);
  } else if (b->bd_label == NCS_BN_LAUNCH) {
    snprintf(out, len, "launch %.0f%%", 100 * ncs_bd_launch_share(b));
  } else if (b->bd_label == NCS_BN_MIXED) {
    snprintf(out, len, "mixed");
  } else if (b->bd_label == NCS_BN_PEER) {
    if (b->bd_wait_rank >= 0)
      snprintf(out, len, "peer_wait %.0f%% (for rank %d)", 100 * ncs_bd_share(b, NCS_PH_PEER),
               b->bd_wait_rank);
    else
      snprintf(out, len, "peer_wait %.0f%% (no one rank)", 100 * ncs_bd_share(b, NCS_PH_PEER));
  } else if (b->bd_wait_rank >= 0) { /* the others waited for this rank's own time */
    snprintf(out, len, "%s of rank %d", ncs_bn_names[b->bd_label], b->bd_wait_rank);
  } else if (ncs_bd_share(b, ph_of[b->bd_label]) < NCS_BD_DOMINANT) {
    snprintf(out, len, "%s of one rank (others waited)", ncs_bn_names[b->bd_label]);
  } else {
    snprintf(out, len, "%s %.0f%%", ncs_bn_names[b->bd_label],
             100 * ncs_bd_share(b, ph_of[b->bd_label]));
  }
}
