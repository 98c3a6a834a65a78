/* timeline.c - the timeline exporter's driver (`ncclscope export`, docs/timeline.md; the parts
 * are listed in timeline.h).
 *
 * The job model (src/model) reads the job once, retaining every operation: it decides the
 * files, communicators, clocks (job time), collective instances and send/receive pairs. Then the
 * job tracks are written, and the emit pass streams each file: every event becomes a slice or an
 * instant on its process's tracks, Coll/P2p with the model's times and links.
 *
 * The emit pass runs on several threads, one file at a time each. A .pftrace is a concatenation
 * of packets and every file is its own packet sequence with its own uuid range, so each file's
 * part is written to an anonymous temporary file next to the output and appended to the output in
 * file order: the output is the same for any number of threads. The output itself is written as
 * every output of ncclscope is (src/util/outfile.h): under its final name only once complete.
 * Memory in the emit pass is bounded by what is open at once per worker (events, lanes, pending
 * counter changes), plus the model's retained operations. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/timeline.h"
#include "util/fmt.h"
#include "util/outfile.h"

const char *const tl_cat_names[TC_COUNT] = {
    "api", "group", "coll", "p2p", "ce", "kernel", "proxyop", "proxystep", "proxyctrl", "net",
    "phase", "state", "job", "loss", "kernelphase", "cupti", "replay", "range", "other", "filter"};

void tl_out_flush(tl_sink_t *s) {
  size_t off = 0;
  while (off < s->out.n && !s->err) {
    ssize_t w = write(s->fd, s->out.p + off, s->out.n - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      s->err = errno;
      break;
    }
    off += (size_t)w;
  }
  s->bytes_out += off;
  s->out.n = 0;
}

int tl_sink_close(tl_sink_t *s) {
  tl_out_flush(s);
  if (s->out.oom && !s->err) s->err = ENOMEM;
  if (s->err) {
    errno = s->err;
    return -1;
  }
  return 0;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ================================================================ progress */

static void progress_print(ex_t *x, int final) {
  uint64_t t = now_ns();
  if (!x->o.progress) return;
  if (final) {
    if (!atomic_load(&x->printed)) return;
  } else {
    uint64_t last = atomic_load(&x->last_print_ns);
    if (t - x->t0_ns < ncs_progress_after_ns() || t - last < 500000000ull) return;
    if (!atomic_compare_exchange_strong(&x->last_print_ns, &last, t)) return; /* another did */
  }
  atomic_store(&x->printed, 1);
  uint64_t done = final ? x->bytes_total : atomic_load(&x->bytes_done);
  double pct = x->bytes_total ? 100.0 * (double)done / (double)x->bytes_total : 100.0;
  char detail[64];
  snprintf(detail, sizeof detail, "%s, %.1f s", atomic_load(&x->writing) ? "writing" : "reading",
           (double)(t - x->t0_ns) * 1e-9);
  ncs_progress(x->o.prog, pct, detail, final);
}

void tl_progress(wk_t *w, ncs_reader_t *r) {
  uint64_t off = r ? ncs_reader_offset(r) : 0;
  if (off > w->reported) {
    atomic_fetch_add(&w->x->bytes_done, off - w->reported);
    w->reported = off;
  }
  progress_print(w->x, 0);
}

void tl_file_done(wk_t *w, const file_t *f) {
  if (f->size > w->reported) atomic_fetch_add(&w->x->bytes_done, f->size - w->reported);
  w->reported = 0;
}

void tl_set_oom(wk_t *w) {
  w->oom = 1;
  atomic_store(&w->x->oom, 1);
}

/* ================================================================ workers */

static void wk_free(wk_t *w) {
  tl_reset_file_state(w);
  free(w->rows), free(w->groups), free(w->open), free(w->free_open), free(w->heap), free(w->flows);
  ncs_pool_free(&w->pool);
  if (w->sink) w->sink->destroy(w->sink);
  w->sink = NULL;
}

static tl_sink_t *new_sink(ex_t *x, int fd, int whole) {
  return x->o.format == NCS_EXPORT_CHROME
             ? tl_chrome_sink(fd, x->origin, whole, x->job_pid, x->o.json_hold)
             : tl_pftrace_sink(fd);
}

static void fail(ex_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(ex_t *x, const char *fmt, ...) {
  pthread_mutex_lock(&x->mu);
  if (!atomic_load(&x->failed)) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->fail_msg, sizeof x->fail_msg, fmt, ap);
    va_end(ap);
    atomic_store(&x->failed, 1);
  }
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

static void *emit_worker(void *arg) {
  wk_t *w = arg;
  ex_t *x = w->x;
  for (;;) {
    pthread_mutex_lock(&x->mu);
    /* stay at most a few files ahead of the one being appended: bounded temporary space */
    while (x->next_file < x->nfiles && x->next_file > x->appended + x->nworkers &&
           !atomic_load(&x->failed) && !atomic_load(&x->oom))
      pthread_cond_wait(&x->cv, &x->mu);
    uint32_t fi = x->next_file++;
    pthread_mutex_unlock(&x->mu);
    if (fi >= x->nfiles || atomic_load(&x->failed) || atomic_load(&x->oom)) break;
    file_t *f = &x->files[fi];
    int fd = ncs_out_scratch(x->tmp_dir);
    if (fd < 0) {
      fail(x, "cannot create a temporary file in %s: %s", x->tmp_dir, strerror(errno));
      break;
    }
    w->sink = new_sink(x, fd, 0);
    if (!w->sink) {
      close(fd);
      tl_set_oom(w);
      break;
    }
    tl_emit_file(w, fi);
    int bad = w->sink->finish(w->sink) != 0;
    int e = errno;
    w->st.bytes_out += w->sink->bytes_out;
    w->st.json_rows += w->sink->rows;
    w->sink->destroy(w->sink);
    w->sink = NULL;
    if (bad) {
      close(fd);
      fail(x, "cannot write a temporary file in %s: %s", x->tmp_dir, strerror(e));
      break;
    }
    pthread_mutex_lock(&x->mu);
    f->frag_fd = fd;
    f->frag_done = 1;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
  }
  pthread_mutex_lock(&x->mu);
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

/* append a finished fragment to the output */
static int append_fragment(int out, int in) {
  off_t off = 0;
  for (;;) {
    ssize_t n = copy_file_range(in, &off, out, NULL, 1u << 30, 0);
    if (n > 0) continue;
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP &&
        errno != EBADF)
      return -1;
    break; /* not possible here (a pipe, another file system): copy by hand */
  }
  static char buf[1 << 20];
  for (;;) {
    ssize_t n = pread(in, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) return 0;
    off += n;
    for (ssize_t done = 0; done < n;) {
      ssize_t m = write(out, buf + done, (size_t)(n - done));
      if (m < 0 && errno == EINTR) continue;
      if (m < 0) return -1;
      done += m;
    }
  }
}

/* ================================================================ driver */

static void ex_free(ex_t *x) {
  for (uint32_t i = 0; x->files && i < x->nfiles; i++) {
    file_t *f = &x->files[i];
    free(f->comms);
    hm_free(&f->comm_map), hm_free(&f->ops);
    if (f->frag_fd > 0) close(f->frag_fd);
  }
  free(x->files), free(x->procs), free(x->linked);
  if (x->job) ncs_xf_free(&x->xf);
  ncs_job_free(x->job);
  ncs_pool_free(&x->pool);
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->cv);
}

static void add_stats(ncs_export_stats_t *a, const ncs_export_stats_t *b) {
  a->records += b->records, a->bytes_out += b->bytes_out, a->processes += b->processes;
  a->tracks += b->tracks, a->slices += b->slices, a->instants += b->instants;
  a->counter_samples += b->counter_samples, a->coll_flows += b->coll_flows;
  a->p2p_flows += b->p2p_flows, a->job_slices += b->job_slices, a->json_rows += b->json_rows;
  a->unmatched_stops += b->unmatched_stops, a->unfinished += b->unfinished;
  a->filter.events_left += b->filter.events_left, a->filter.cannot_tell += b->filter.cannot_tell;
}

/* every trace file of the paths (rc 2 and err when there is none) */
static int list_paths(char *const *paths, size_t npaths, char ***all, size_t *nall, char *err,
                      size_t errlen) {
  size_t cap = 0;
  *all = NULL, *nall = 0;
  for (size_t i = 0; i < npaths; i++) {
    char **list;
    size_t n;
    if (ncs_list_traces(paths[i], &list, &n, err, errlen) != 0) return 2;
    for (size_t k = 0; k < n; k++) {
      NCS_XGROW(*all, cap, *nall + 1);
      (*all)[(*nall)++] = list[k];
    }
    free(list);
  }
  if (*nall) return 0;
  snprintf(err, errlen, "no *%s files in %s%s", NCS_TRACE_SUFFIX, npaths ? paths[0] : "",
           npaths > 1 ? " and the other paths" : "");
  return 2;
}

/* the job model of the files, retaining every operation that passes the filter (and listing
 * those it left out: xfilter.h) */
static int read_job(ex_t *x, char **all, size_t nall, char *err, size_t errlen) {
  int why = 0;
  x->job = ncs_job_open_files(
      all, nall, &(ncs_job_opts_t){.retain = 1, .job = x->o.job, .why = &why, .filter = x->o.filter},
      err, errlen);
  if (!x->job) return why == NCS_JOB_ERR_SEVERAL || why == NCS_JOB_ERR_NO_JOB || why == NCS_JOB_ERR_FILTER ? 3 : 2;
  if (x->o.job_check && x->o.job_check(x->job, x->o.check_arg) != 0) return 4;
  ncs_job_stream(x->job, NULL, NULL);
  if (ncs_xf_init(&x->xf, x->job) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}

/* what the model says about the GPU clocks; the time origin: the earliest event or kernel */
static void clocks(ex_t *x, ncs_export_stats_t *st) {
  const ncs_job_t *j = x->job;
  int64_t origin = j->t_first;
  for (uint32_t i = 0; i < j->nprocs; i++) {
    const ncs_job_proc_t *p = &j->procs[i];
    if (p->gpu_domain == NCS_GPU_NONE) continue;
    st->gpu_mapped++;
    if (p->gpu_err >= 0) st->gpu_bounded++;
    if (p->gpu_err > st->max_gpu_offset_err_ns) st->max_gpu_offset_err_ns = p->gpu_err;
    st->clock_conflicts += p->gpu_conflict;
  }
  for (size_t k = 0; k < ncs_job_op_count(j); k++) {
    const ncs_op_t *op = ncs_job_op(j, k);
    if (op->kstart && op->kstart < origin) origin = op->kstart;
  }
  x->origin = origin > 0 ? (uint64_t)origin : 0;
  if (st->clock_conflicts)
    fprintf(stderr,
            "%s: warning: in %d of %d files the host and GPU clocks disagree (with any offset the "
            "kernel starts allow, a kernel would start before its launch): the host or GPU "
            "timestamps of those files are not consistent\n",
            x->o.prog, st->clock_conflicts, st->gpu_mapped);
}

static unsigned workers_for(const ex_t *x) {
  long n = x->o.jobs > 0 ? x->o.jobs : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > MAX_WORKERS) n = MAX_WORKERS;
  if ((uint32_t)n > x->nfiles) n = (long)x->nfiles;
  return (unsigned)n;
}

int ncs_export(char *const *paths, size_t npaths, const ncs_export_opts_t *o,
               ncs_export_stats_t *st, char *err, size_t errlen) {
  ex_t *x = calloc(1, sizeof *x);
  wk_t *ws = calloc(MAX_WORKERS, sizeof *ws);
  if (!x || !ws) {
    free(x), free(ws);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  memset(st, 0, sizeof *st);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->cv, NULL);
  x->o = *o;
  if (!x->o.types) x->o.types = (1u << NCS_T_COUNT) - 1;
  if (!x->o.prog) x->o.prog = "ncclscope export";
  x->next_uuid = 0x100;
  x->t0_ns = now_ns();
  tl_arg_names(x);
  (void)ncs_crc32c(0, "", 0); /* build the CRC table before the threads share it */
  int rc = 0, fd = -1, opened = 0;
  tl_sink_t *ms = NULL;
  wk_t *w0 = &ws[0];
  ncs_out_t of;
  char **all = NULL;
  size_t nall = 0;
  for (unsigned i = 0; i < MAX_WORKERS; i++) ws[i].x = x;
  rc = list_paths(paths, npaths, &all, &nall, err, errlen);
  if (rc) goto out;
  /* the output before the reading: a refused one (it exists, it is an input) costs nothing */
  ncs_out_opts_t oo = {.force = o->force, .inputs = paths, .ninputs = npaths};
  if (ncs_out_open(&of, o->out, &oo, err, errlen) != 0) {
    rc = -2;
    goto out;
  }
  opened = 1;
  fd = of.fd;
  x->tmp_dir = of.dir;
  rc = read_job(x, all, nall, err, errlen);
  if (rc) goto out;
  if (tl_files(x) != 0 || tl_make_procs(x) != 0) goto oom;
  st->bytes_in = x->bytes_total;
  st->files = x->nfiles - x->job->duplicates - x->job->other_job;
  if (x->job->other_job)
    fprintf(stderr, "%s: warning: the traces hold %u runs (recordings that never held ranks of one communicator together): "
            "this is run %u; %u files of the others are left out\n", x->o.prog, x->job->njobs,
            x->job->job, x->job->other_job);
  x->nworkers = workers_for(x);
  if (x->o.progress && now_ns() - x->t0_ns > ncs_progress_after_ns())
    fprintf(stderr, "%s: read the job (%u files) in %.1f s\n", x->o.prog, x->nfiles,
            (double)(now_ns() - x->t0_ns) * 1e-9);
  clocks(x, st);
  /* the job tracks into the output */
  ms = x->main_sink = new_sink(x, fd, 1);
  if (!ms) goto oom;
  atomic_store(&x->writing, 1);
  /* the job time's wall-clock offset, for the .pftrace's ClockSnapshot (docs/timeline.md,
   * "Time"): on one host job time is CLOCK_MONOTONIC and a file's CLOCK pairs give realtime;
   * across hosts it is host 0's realtime already */
  uint64_t at = x->job->t_first > 0 ? (uint64_t)x->job->t_first : x->origin; /* an instant of the job */
  for (uint32_t i = 0; i < x->job->nprocs && !ms->has_clock && at; i++) {
    const ncs_job_proc_t *p = &x->job->procs[i];
    if (p->excluded || !p->clk_pairs) continue;
    ms->has_clock = 1, ms->one_host = x->job->nhosts <= 1;
    ms->clock_at = at;
    ms->realtime_off = ms->one_host ? p->clk_off : 0;
  }
  ms->seq_begin(ms, 1);
  w0->next_uuid = 1ull << 25; /* processes: from 0x100; files: (index + 1) << 26 */
  w0->next_track = x->next_track;
  if (x->o.types & (1u << NCS_T_COLL)) tl_emit_job(w0);
  if (x->job->nlosses) tl_emit_losses(w0);
  if (x->job->nkernels || x->job->nreplays) tl_emit_gpu(w0);
  if (ms->part_done) ms->part_done(ms);
  ncs_pool_free(&w0->pool);
  if (w0->oom) goto oom;
  uint64_t job_uuid = w0->next_uuid; /* the filter's marker continues the job's tracks */
  uint32_t job_track = w0->next_track;
  /* pass 2 */
  x->direct = x->nworkers == 1;
  if (x->direct) {
    w0->sink = ms;
    for (uint32_t fi = 0; fi < x->nfiles && !w0->oom && !ms->err; fi++) tl_emit_file(w0, fi);
    w0->sink = NULL;
  } else {
    tl_out_flush(ms);
    x->next_file = 0;
    unsigned started = 0;
    for (unsigned i = 0; i < x->nworkers; i++)
      if (pthread_create(&ws[i].thread, NULL, emit_worker, &ws[i]) == 0) started++;
      else ws[i].thread = 0;
    if (!started) { /* no thread: do it here */
      x->nworkers = 1;
      emit_worker(w0);
    }
    for (uint32_t fi = 0; fi < x->nfiles; fi++) {
      file_t *f = &x->files[fi];
      pthread_mutex_lock(&x->mu);
      while (!f->frag_done && !atomic_load(&x->failed) && !atomic_load(&x->oom)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 500000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        pthread_mutex_unlock(&x->mu);
        progress_print(x, 0);
        pthread_mutex_lock(&x->mu);
      }
      int ready = f->frag_done;
      pthread_mutex_unlock(&x->mu);
      if (!ready) break;
      if (append_fragment(fd, f->frag_fd) != 0) {
        fail(x, "cannot write %s: %s", o->out, strerror(errno));
        break;
      }
      close(f->frag_fd);
      f->frag_fd = -1;
      pthread_mutex_lock(&x->mu);
      x->appended = fi + 1;
      pthread_cond_broadcast(&x->cv);
      pthread_mutex_unlock(&x->mu);
    }
    fail(x, "%s", "stopped"); /* wakes the workers if something went wrong; harmless if not */
    for (unsigned i = 0; i < x->nworkers; i++)
      if (ws[i].thread) pthread_join(ws[i].thread, NULL);
    int done = 1;
    for (uint32_t fi = 0; fi < x->nfiles; fi++) done &= x->files[fi].frag_done;
    if (done) {
      atomic_store(&x->failed, 0);
    } else if (!atomic_load(&x->oom) && strcmp(x->fail_msg, "stopped")) {
      snprintf(err, errlen, "%s", x->fail_msg); /* writing the output or a fragment failed */
      rc = -2;
      goto out;
    }
  }
  if (atomic_load(&x->oom)) goto oom;
  for (unsigned i = 0; i < MAX_WORKERS; i++) add_stats(st, &ws[i].st), memset(&ws[i].st, 0, sizeof ws[i].st);
  if (x->xf.active) { /* what the file covers, on a track of its own, at the end */
    ncs_xf_stats_t fs;
    ncs_xf_stats(&x->xf, &fs);
    fs.events_left = st->filter.events_left, fs.cannot_tell = st->filter.cannot_tell;
    st->filter = fs;
    w0->next_uuid = job_uuid, w0->next_track = job_track;
    tl_emit_filter(w0, &fs);
    if (w0->oom) goto oom;
    add_stats(st, &w0->st);
    st->filter = fs;
  }
  if (ms->finish(ms) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", o->out, strerror(errno));
    rc = -2;
    goto out;
  }
  st->bytes_out += ms->bytes_out; /* with workers, the fragments were counted by them */
  st->json_rows += ms->rows;
  /* each file's damage, emptiness, missing footer and what limits left out: the caller says
   * them (cli/export.c, once for every format) */
  for (uint32_t i = 0; i < x->nfiles; i++) {
    const ncs_job_proc_t *p = &x->job->procs[i];
    if (p->excluded) continue;
    if (!p->readable || p->damage == NCS_DAMAGE_CORRUPT) st->damaged++, rc = rc ? rc : 1;
    if (p->damage == NCS_DAMAGE_TRUNCATED) st->truncated++;
  }
  if (!rc && ncs_job_input(x->job) == NCS_JOB_IN_DAMAGED) rc = 1; /* a file without a segment */
  progress_print(x, 1);
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
  rc = -1;
out:
  for (unsigned i = 0; i < MAX_WORKERS; i++) {
    if (ws[i].sink == ms) ws[i].sink = NULL;
    wk_free(&ws[i]);
  }
  if (ms) ms->destroy(ms);
  if (opened && (rc == 0 || rc == 1) && ncs_out_commit(&of, err, errlen) != 0) rc = -2;
  if (opened && rc != 0 && rc != 1) ncs_out_abort(&of); /* nothing under its name */
  ncs_free_paths(all, nall);
  st->seconds = (double)(now_ns() - x->t0_ns) * 1e-9;
  ex_free(x);
  free(x);
  free(ws);
  return rc;
}
