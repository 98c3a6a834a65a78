/* job.c - opening a job: the files, their segments and communicators (pass 1), and the lookups
 * every consumer uses (model.h, docs/model.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/internal.h"
#include "util/mem.h"

const char *const ncs_src_names[NCS_SRC_N] = {"kernel_gpu", "proxy_host", "enqueue_host"};
const char *const ncs_gpu_domain_names[3] = {"none", "realtime", "own"};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ communicators and members */
/* (commId, nranks) names a communicator across files; commId 0 (ABI v1-v3 do not pass it) only
 * within one file, so that unrelated communicators of several processes are not merged */
static int comm_is(const ncs_job_t *j, uint64_t k, const ncs_comm_info_t *c, uint32_t proc) {
  const ncs_job_comm_t *x = &j->comms[k];
  if (x->comm_id != c->comm_id || x->nranks != c->nranks) return 0;
  if (c->comm_id) return 1;
  const ncs_job_member_t *m = NULL;
  for (uint32_t i = 0; i < j->nmembers && !m; i++)
    if (j->members[i].comm == k) m = &j->members[i];
  return m && m->proc == proc;
}

static uint64_t comm_hash(uint64_t comm_id, int32_t nranks) {
  return hm_mix2(comm_id, (uint64_t)(uint32_t)nranks);
}

uint32_t job_comm(ncs_job_t *j, const ncs_comm_info_t *c, uint32_t proc) {
  jpriv_t *P = jp(j);
  uint64_t h = comm_hash(c->comm_id, c->nranks), v;
  for (;; h++) {
    if (!hm_get(&P->comm_map, h, &v)) break;
    if (comm_is(j, v, c, proc)) return (uint32_t)v;
  }
  NCS_XGROW(j->comms, P->cap_comms, j->ncomms + 1);
  ncs_job_comm_t *n = &j->comms[j->ncomms];
  n->comm_id = c->comm_id, n->nranks = c->nranks, n->nnodes = c->nnodes;
  n->name = ncs_pool_str(&j->strs, c->name ? c->name : "");
  if (hm_put(&P->comm_map, h, j->ncomms) != 0) ncs_oom();
  return j->ncomms++;
}

int64_t ncs_job_comm_index(const ncs_job_t *j, uint64_t comm_id, int32_t nranks, uint32_t proc) {
  ncs_comm_info_t c = {.comm_id = comm_id, .nranks = nranks};
  uint64_t h = comm_hash(comm_id, nranks), v;
  for (;; h++) {
    if (!hm_get(&jp(j)->comm_map, h, &v)) return -1;
    if (comm_is(j, v, &c, proc)) return (int64_t)v;
  }
}

static uint64_t member_key(uint32_t proc, uint32_t seg, uint64_t idx) {
  return hm_mix2(((uint64_t)proc << 32) | seg, idx);
}

const ncs_job_member_t *ncs_job_member(const ncs_job_t *j, uint32_t proc, uint32_t seg,
                                       uint64_t idx) {
  uint64_t v;
  if (!hm_get(&jp(j)->member_map, member_key(proc, seg, idx), &v)) return NULL;
  const ncs_job_member_t *m = &j->members[v];
  return m->proc == proc && m->seg == seg && m->index == idx ? m : NULL;
}

static void add_member(ncs_job_t *j, uint32_t proc, uint32_t seg, const ncs_comm_info_t *c) {
  jpriv_t *P = jp(j);
  if (c->index >= NCS_JOB_COMM_INDEX_MAX || ncs_job_member(j, proc, seg, c->index)) return;
  uint32_t comm = job_comm(j, c, proc);
  NCS_XGROW(j->members, P->cap_members, j->nmembers + 1);
  ncs_job_member_t *m = &j->members[j->nmembers];
  *m = (ncs_job_member_t){proc, seg, c->index, comm, c->rank, c->abi_version, c->device,
                          ncs_pool_str(&j->strs, c->bus_id ? c->bus_id : ""), c->init_ns, 0};
  if (hm_put(&P->member_map, member_key(proc, seg, c->index), j->nmembers++) != 0) ncs_oom();
  int created;
  if (!hm_ref(&P->rank_seen, hm_mix2(comm, (uint64_t)(uint32_t)c->rank), 1, &created)) ncs_oom();
  if (created) j->comms[comm].ranks_seen++;
}

/* ------------------------------------------------------------------ pass 1: one file alone */
static ncs_job_seg_t *new_seg(ncs_job_t *j, ncs_job_proc_t *p, const ncs_segment_info_t *si) {
  p->segs = ncs_xrealloc(p->segs, (p->nsegs + 1) * sizeof *p->segs);
  ncs_job_seg_t *s = &p->segs[p->nsegs];
  *s = (ncs_job_seg_t){.index = p->nsegs++, .start_mono = si->start_mono_ns,
                       .start_real = si->start_realtime_ns, .last_ns = si->start_mono_ns,
                       .mode = si->mode, .mask = si->mask, .epoch = si->epoch,
                       .plugin_version = ncs_pool_str(&j->strs, si->plugin_version),
                       .cmdline = ncs_pool_str(&j->strs, si->cmdline), .pool_bytes = si->pool_bytes};
  if (p->nsegs == 1) p->host = ncs_pool_str(&j->strs, si->host), p->pid = si->pid;
  return s;
}

/* the latest time an item shows the segment alive; events also the earliest (t_first) */
static void seg_times(ncs_job_seg_t *s, const ncs_item_t *it, uint64_t *first) {
  uint64_t t = 0;
  if (it->what == NCS_ITEM_CLOCK) t = it->clock_mono_ns;
  if (it->what == NCS_ITEM_EVENT && it->ev.kind <= NCS_REC_STATE) {
    t = it->ev.ts;
    if (t && t < *first) *first = t;
  }
  if (it->what == NCS_ITEM_EVENT && it->ev.kind == NCS_REC_COMPLETE) t = it->ev.end_ns;
  if (it->what == NCS_ITEM_COUNTERS || it->what == NCS_ITEM_FOOTER)
    for (uint32_t k = 0; k < it->counters->nkeys; k++)
      if (it->counters->keys[k] == NCS_CK_END_NS) t = it->counters->values[k];
  if (t > s->last_ns) s->last_ns = t;
}

static void scan_file(ncs_job_t *j, uint32_t pi, uint64_t *first) {
  ncs_job_proc_t *p = &j->procs[pi];
  ncs_reader_t *r = ncs_reader_open(p->path, p->damage_msg, sizeof p->damage_msg);
  if (!r) {
    j->unreadable++;
    return;
  }
  p->readable = 1;
  p->empty = ncs_reader_empty(r);
  void *clk, *cov, *gpu;
  clock_scan_begin(&clk), cov_scan_begin(&cov), gpu_scan_begin(&gpu);
  ncs_job_seg_t *s = NULL;
  ncs_item_t it;
  int rc;
  while ((rc = ncs_reader_next(r, &it)) == 1) {
    if (it.what == NCS_ITEM_SEGMENT) s = new_seg(j, p, ncs_reader_segment(r));
    if (!s) continue;
    seg_times(s, &it, first);
    clock_scan_item(clk, &it, s->index);
    cov_scan_item(cov, j, pi, &it, s->index, s->start_mono);
    if (gpu_scan_item(gpu, r, &it) != 0) ncs_oom();
    if (jp(j)->sel) sel_scan_item(j, pi, &it, ncs_reader_flight(r) != NULL);
    if (it.what == NCS_ITEM_COMM) {
      add_member(j, pi, s->index, &it.comm);
      if (it.comm.abi_version > p->abi_max) p->abi_max = it.comm.abi_version;
    }
    if (it.what == NCS_ITEM_FOOTER) s->clean = 1;
    if (it.what == NCS_ITEM_COMM_END) {
      uint64_t v;
      if (hm_get(&jp(j)->member_map, member_key(pi, s->index, it.comm.index), &v))
        j->members[v].fin_ns = it.ts;
    }
  }
  if (rc < 0) {
    p->damage = ncs_reader_damage(r);
    snprintf(p->damage_msg, sizeof p->damage_msg, "%s", ncs_reader_error(r));
    j->damaged++;
  }
  if (jp(j)->sel) sel_scan_end(j, pi, ncs_reader_flight(r));
  ncs_reader_close(r);
  clock_scan_end(clk, j, pi);
  cov_scan_end(cov, j, pi);
  gpu_scan_end(gpu, j, pi); /* after the coverage: it asks for the file's losses */
}

int ncs_job_input(const ncs_job_t *j) {
  uint32_t read = 0, bad = 0;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_proc_t *p = &j->procs[i];
    if (p->excluded) continue;
    if (p->readable && p->nsegs) read++;
    if (!p->readable || (!p->nsegs && !p->empty) || p->damage == NCS_DAMAGE_CORRUPT) bad++;
  }
  return !read ? NCS_JOB_IN_NONE : bad ? NCS_JOB_IN_DAMAGED : NCS_JOB_IN_OK;
}

/* ------------------------------------------------------------------ open, free */
/* the job's first and last event in job time (once the clocks are known) */
static void job_span(ncs_job_t *j) {
  j->t_first = INT64_MAX, j->t_last = INT64_MIN;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_proc_t *p = &j->procs[i];
    if (!p->first_ns) continue;
    int64_t f = ncs_job_time(j, i, p->first_ns);
    if (f < j->t_first) j->t_first = f;
    for (uint32_t s = 0; s < p->nsegs; s++)
      if (ncs_job_time(j, i, p->segs[s].last_ns) > j->t_last)
        j->t_last = ncs_job_time(j, i, p->segs[s].last_ns);
  }
  if (j->t_first == INT64_MAX) j->t_first = j->t_last = 0;
}

/* pass 1 over the files; those the plan excludes (NULL: none) are only named */
static ncs_job_t *scan_files(char *const *paths, size_t n, const ncs_job_opts_t *opts,
                             const job_plan_t *pl, const ncs_job_t *before) {
  ncs_job_t *j = ncs_xcalloc(1, sizeof *j);
  jpriv_t *P = ncs_xcalloc(1, sizeof *P);
  j->priv = P;
  P->retain = opts && opts->retain;
  const char *gt = getenv("NCCLSCOPE_GPU_TIMES");
  P->kernelch_only = gt && !strcmp(gt, "kernelch");
  j->procs = ncs_xcalloc(n, sizeof *j->procs);
  j->nprocs = (uint32_t)n;
  j->gpu = ncs_xcalloc(n, sizeof *j->gpu);
  P->gop_map = ncs_xcalloc(n, sizeof *P->gop_map);
  P->gwin = ncs_xcalloc(n, sizeof *P->gwin);
  for (uint32_t i = 0; i < j->nprocs; i++) j->gpu[i].reason = j->gpu[i].holder = j->gpu[i].library = j->gpu[i].lost = "";
  const ncs_job_filter_t *f = opts ? opts->filter : NULL;
  if (f && ((f->rsel && f->nrsel) || (f->tsel && f->ntsel))) sel_setup(j, f); /* --range, --tag */
  for (uint32_t i = 0; i < j->nprocs; i++) {
    ncs_job_proc_t *p = &j->procs[i];
    p->path = ncs_pool_str(&j->strs, paths[i]);
    p->host = "?", p->gpu_err = p->gpu_err_known = -1;
    if (pl) p->job_no = pl->job_no[i];
    if (pl && pl->excl[i]) {
      p->excluded = pl->excl[i], p->same_as = pl->same_as[i];
      p->host = ncs_pool_str(&j->strs, before->procs[i].host), p->pid = before->procs[i].pid;
      *(p->excluded == NCS_JX_DUPLICATE ? &j->duplicates : &j->other_job) += 1;
      continue;
    }
    uint64_t first = UINT64_MAX;
    scan_file(j, i, &first);
    p->first_ns = first == UINT64_MAX ? 0 : first;
  }
  return j;
}

ncs_job_t *ncs_job_open_files(char *const *paths, size_t n, const ncs_job_opts_t *opts, char *err,
                              size_t errlen) {
  if (!n) {
    snprintf(err, errlen, "no trace files");
    if (opts && opts->why) *opts->why = NCS_JOB_ERR_NO_INPUT;
    return NULL;
  }
  double t0 = now_s();
  ncs_job_t *j = scan_files(paths, n, opts, NULL, NULL);
  job_plan_t pl;
  if (job_plan(j, opts ? opts->job : 0, &pl, opts ? opts->why : NULL, err, errlen) != 0) {
    job_plan_free(&pl);
    ncs_job_free(j);
    return NULL;
  }
  if (pl.nexcluded) { /* read again without them: nothing of theirs reaches the job */
    ncs_job_t *k = scan_files(paths, n, opts, &pl, j);
    ncs_job_free(j);
    j = k;
  }
  j->parts = pl.parts, j->njobs = pl.njobs, j->job = pl.job;
  pl.parts = NULL;
  job_plan_free(&pl);
  if (sel_check(j, err, errlen) != 0) { /* a --range or --tag the job cannot answer */
    if (opts && opts->why) *opts->why = NCS_JOB_ERR_FILTER;
    ncs_job_free(j);
    return NULL;
  }
  jpriv_t *P = jp(j);
  clock_hosts(j);
  j->run.pass_s[j->run.passes++] = now_s() - t0;
  if (j->nhosts > 1) { /* host offsets from the instances' completion ends */
    t0 = now_s();
    P->hostpass = 1;
    merge_pass(j);
    clock_host_offsets(j);
    P->hostpass = 0;
    j->run.evicted = j->run.p2p_evicted = j->run.peak_open = j->run.peak_held = 0;
    j->run.pass_s[j->run.passes++] = now_s() - t0;
  }
  clock_job_offsets(j);
  gpu_job_times(j);
  job_span(j);
  if (opts && opts->filter) { /* the lists are the caller's: copies */
    j->filter = *opts->filter;
    j->filter.notes = NULL;
    if (ncs_job_filter_comm(&j->filter, j->comms, j->ncomms, err, errlen) != 0) {
      if (opts->why) *opts->why = NCS_JOB_ERR_FILTER;
      ncs_job_free(j);
      return NULL;
    }
    if (j->filter.ranks) {
      int32_t *r = ncs_xcalloc(j->filter.nranks + 1, sizeof *r);
      memcpy(r, opts->filter->ranks, j->filter.nranks * sizeof *r);
      j->filter.ranks = r;
    }
    j->filter.rsel = NULL, j->filter.nrsel = 0, j->filter.tsel = NULL, j->filter.ntsel = 0;
    sel_lists(j); /* --range and --tag: select.c keeps them */
  }
  return j;
}

ncs_job_t *ncs_job_open(const char *path, const ncs_job_opts_t *opts, char *err, size_t errlen) {
  char **paths = NULL;
  size_t n = 0;
  if (ncs_list_traces(path, &paths, &n, err, errlen) != 0) {
    if (opts && opts->why) *opts->why = NCS_JOB_ERR_NO_INPUT;
    return NULL;
  }
  if (!n) {
    snprintf(err, errlen, "no trace files (*.nstrace, *.nsflight) in '%s'", path);
    if (opts && opts->why) *opts->why = NCS_JOB_ERR_NO_INPUT;
    ncs_free_paths(paths, n);
    return NULL;
  }
  ncs_job_t *j = ncs_job_open_files(paths, n, opts, err, errlen);
  if (j) snprintf(j->path, sizeof j->path, "%s", path);
  ncs_free_paths(paths, n);
  return j;
}

void ncs_job_stream(ncs_job_t *j, const ncs_job_sink_t *sink, void *arg) {
  jpriv_t *P = jp(j);
  double t0 = now_s();
  P->sink = sink, P->arg = arg;
  merge_pass(j);
  if (P->retain) retain_layout(j);
  P->sink = NULL, P->arg = NULL;
  j->run.pass_s[j->run.passes++] = now_s() - t0;
}

void ncs_job_free(ncs_job_t *j) {
  if (!j) return;
  jpriv_t *P = jp(j);
  match_free(j);
  retain_free(j);
  gpu_free(j);
  ranges_free(j);
  sel_free(j);
  hm_free(&P->comm_map), hm_free(&P->member_map), hm_free(&P->rank_seen);
  for (uint32_t i = 0; i < j->nprocs; i++) free(j->procs[i].segs), free(P->gwin ? P->gwin[i] : NULL);
  free(P->gwin);
  free(j->procs), free(j->hosts), free(j->comms), free(j->members), free(j->losses);
  free(j->parts);
  free((void *)j->filter.ranks);
  ncs_pool_free(&j->strs);
  free(P);
  free(j);
}
