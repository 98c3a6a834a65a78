/* select.c - the filter's --range and --tag (model.h ncs_job_filter_t; docs/model.md, "Filters").
 *
 * Pass 1 (job.c, only when the filter names ranges) learns the job's range names and how many
 * ranges of a selected name a thread began, so that ncs_job_open refuses a --range that no range
 * can match, and a --tag on a recording without tags (sel_check). The streaming pass decides, for
 * every operation as it leaves its file (merge.c release), whether it was called inside a
 * selected range and whether its userTag is listed (ncs_op_t.sel); match.c's pass_instance and
 * pass_p2p then keep an instance or a pair with such an operation.
 *
 * "Inside" is trace/rangestat.h's rule: a push/pop range holds the operations called on its own
 * thread from its begin to its end, a start/end range those called on any thread of its file. A
 * range is numbered per thread (the thread that began it), 1-based, in begin order, and counted
 * once: a BEGIN restated at a segment's or a flight slot's start repeats a range (by its id, which
 * is unique in a process). In a trace file a thread's BEGINs come in time order, so the streaming
 * pass numbers them as they come. A flight file's slots restate out of order (a slot's keyframe
 * restates the ranges open when it began, and before them the ones its own records will begin and
 * end), so pass 1 numbers a flight file's ranges of a selected name by sorting their begins (the
 * window is bounded).
 *
 * What a flight file can tell: its oldest slot restates the ranges open when the slot began and
 * holds the range records the writer had not written yet, so from r0 (the earlier of the slot's
 * start and its first range record that is not restated) every range is in the file. Before r0
 * only the ranges open at the slot's start are: an operation called then (one still open when the
 * slot began, restated with it) that none of them holds may have been inside a range that is not
 * in the file: it is not selected, and counted (sel.ops_blind) as "cannot tell". A range that
 * began before r0 is partial: what it held before is not all in the recording. In a trace file a
 * range is partial when it is restated without its begin (its segment start was lost). A range
 * whose END was lost, or that never ended, holds what follows its begin up to the end of the
 * recording.
 *
 * Why at the release and not when the operation's record is read: the writer flushes RANGES and
 * EVENTS chunks each on its own clock, so the BEGIN of the range around an operation may follow
 * the operation's record in the file, and its END precede it. An operation leaves its file
 * NCS_JOB_SETTLE_NS of file time after its completion, by when the range records of its time
 * are written (the writer flushes every NCCLSCOPE_FLUSH_MS, 200 ms by default). The selected
 * ranges of a thread are intervals: the open ones, and the ended ones (sorted by begin, with the
 * running maximum of their ends, so that a lookup is a binary search and a short walk back) kept
 * until no operation still to leave the file can have been called in them. A range record read
 * after an operation it may hold was decided is counted (sel.late) and said: that decision may be
 * wrong. Memory: the selected ranges of the last NCS_JOB_HORIZON_NS of each file, and those that
 * are open.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model/internal.h"
#include "util/mem.h"
#include "util/num.h"

#define SE_THREAD UINT32_MAX /* the pseudo-thread of a file's start/end ranges */
#define MAX_NAMES_LISTED 400 /* bytes of range names an error lists */

typedef struct { /* an ended selected range: [begin, end], monotonic ns of its file */
  uint64_t begin, end;
  uint64_t pmax; /* the latest end among e[0..i] */
} iv_t;

typedef struct { /* a selected range not ended yet */
  uint64_t id, begin;
} open_t;

typedef struct { /* the selected ranges of one thread of one file, or of a file's start/end ones */
  uint32_t proc;
  iv_t *e;
  size_t n, cap, keep;
  open_t *o;
  size_t no, capo;
  uint64_t ub;      /* earliest begin of a range that holds to the end (its END lost); UINT64_MAX */
  uint64_t decided; /* the latest call time of an operation decided on it */
} tl_t;

typedef struct {
  int state, off;   /* a RANGE_STATE was read; the last one said NCCLSCOPE_RANGES=off */
  uint32_t nvtx;    /* NCS_NVTX_* of the last one */
  int ranges;       /* pass 1: a range was read */
} sfile_t;

typedef struct { /* pass 1: what a flight file can tell */
  uint64_t r0;      /* from when every range is in it (monotonic); 0: a trace file */
  uint64_t first;   /* its first range record that is not restated; UINT64_MAX none */
} sflight_t;

typedef struct { /* pass 1: a range name of the job */
  const char *name; /* pooled */
  uint64_t max_thread; /* a selected name: the most ranges of it one thread began */
} sname_t;

typedef struct { /* pass 1: a range of a selected name in a flight file */
  const char *name;
  uint32_t thread;
  uint64_t begin, id;
} fbeg_t;

typedef struct {
  ncs_job_rsel_t *rsel; /* the filter's, names pooled (j->filter points here) */
  uint32_t nrsel;
  ncs_job_tsel_t *tsel;
  uint32_t ntsel;
  /* numbering, both passes: ranges of a selected name already counted, their number per thread */
  hmap_t seen;      /* (proc, id) -> job time of its end, UINT64_MAX while open */
  hmap_t count;     /* (proc, thread, name) -> ranges of the name the thread began (trace files) */
  hmap_t fnum;      /* flight files: (proc, id) -> its number, from pass 1 */
  fbeg_t *fb;       /* pass 1, the flight file being read: its ranges of a selected name */
  size_t nfb, capfb;
  size_t seen_keep;
  int64_t latest;   /* the latest range time read (job time): what `seen` forgets is older */
  sfile_t *f;       /* per file */
  sflight_t *fl;    /* per file, from pass 1 */
  /* pass 1 */
  hmap_t name_ix;   /* pooled name -> index into names + 1 */
  sname_t *names;
  size_t nnames, capnames;
  /* streaming */
  hmap_t tls;       /* (proc, thread) -> index into tl + 1 */
  tl_t *tl;
  size_t ntl, captl;
  hmap_t open_at;   /* (proc, id) -> index into tl + 1: a selected range not ended yet */
  int nvtx_sel;     /* a selected range came from NVTX */
} sel_t;

static sel_t *sl(const ncs_job_t *j) { return jp(j)->sel; }

static void put(hmap_t *m, uint64_t k, uint64_t v) {
  if (hm_put(m, k, v) != 0) ncs_oom();
}

/* ------------------------------------------------------------------ set-up */
void sel_setup(ncs_job_t *j, const ncs_job_filter_t *f) {
  jpriv_t *P = jp(j);
  sel_t *S = ncs_xcalloc(1, sizeof *S);
  P->sel = S;
  S->f = ncs_xcalloc(j->nprocs ? j->nprocs : 1, sizeof *S->f);
  S->fl = ncs_xcalloc(j->nprocs ? j->nprocs : 1, sizeof *S->fl);
  for (uint32_t p = 0; p < j->nprocs; p++) S->fl[p].first = UINT64_MAX;
  S->nrsel = f->rsel ? f->nrsel : 0, S->ntsel = f->tsel ? f->ntsel : 0;
  S->rsel = ncs_xcalloc(S->nrsel + 1, sizeof *S->rsel);
  S->tsel = ncs_xcalloc(S->ntsel + 1, sizeof *S->tsel);
  for (uint32_t k = 0; k < S->nrsel; k++)
    S->rsel[k] = f->rsel[k], S->rsel[k].name = ncs_pool_str(&j->strs, f->rsel[k].name);
  if (S->ntsel) memcpy(S->tsel, f->tsel, S->ntsel * sizeof *S->tsel);
}

/* the filter's lists, owned here (ncs_job_open_files points j->filter at them) */
void sel_lists(ncs_job_t *j) {
  sel_t *S = sl(j);
  if (!S) return;
  j->filter.rsel = S->nrsel ? S->rsel : NULL, j->filter.nrsel = S->nrsel;
  j->filter.tsel = S->ntsel ? S->tsel : NULL, j->filter.ntsel = S->ntsel;
}

/* the pooled name of a --range that `name` is, NULL when none */
static const char *sel_name(const sel_t *S, const char *name) {
  if (!name || !*name) return NULL;
  for (uint32_t k = 0; k < S->nrsel; k++)
    if (!strcmp(S->rsel[k].name, name)) return S->rsel[k].name;
  return NULL;
}

/* ------------------------------------------------------------------ numbering */
/* forget the ended ranges of `seen` that ended before `before` (a restated BEGIN repeats a range
 * that is open, or ended a moment ago) */
static void seen_prune(sel_t *S, int64_t before) {
  hmap_t keep = {0};
  for (size_t i = 0; i < S->seen.cap; i++)
    if (S->seen.used[i] && (S->seen.vals[i] == UINT64_MAX || (int64_t)S->seen.vals[i] >= before))
      put(&keep, S->seen.keys[i], S->seen.vals[i]);
  hm_free(&S->seen);
  S->seen = keep;
  S->seen_keep = S->seen.n;
}

/* the first record of a range: 1, or 0 when it repeats one (restated; an id twice: counted once) */
static int first_seen(sel_t *S, uint32_t proc, uint64_t id) {
  uint64_t k = hm_mix2(proc, id);
  if (hm_get(&S->seen, k, NULL)) return 0;
  if (S->seen.n > 2 * S->seen_keep + 1024) seen_prune(S, S->latest - 2 * NCS_JOB_HORIZON_NS);
  put(&S->seen, k, UINT64_MAX);
  return 1;
}

/* A BEGIN of a selected name seen first: its number on its thread (0: unknown) */
static uint64_t number(sel_t *S, uint32_t proc, const ncs_range_rec_t *g, const char *nm, int flight) {
  uint64_t v;
  if (flight) return hm_get(&S->fnum, hm_mix2(proc, g->id), &v) ? v : 0;
  int created;
  uint64_t *c = hm_ref(&S->count, hm_mix2(hm_mix2(proc, g->thread), (uint64_t)(uintptr_t)nm), 0, &created);
  if (!c) ncs_oom();
  return ++*c;
}

static int cmp_fbeg(const void *x, const void *y) {
  const fbeg_t *a = x, *b = y;
  if (a->name != b->name) return (uintptr_t)a->name < (uintptr_t)b->name ? -1 : 1;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static void number_end(sel_t *S, uint32_t proc, uint64_t id, int64_t end) {
  uint64_t k = hm_mix2(proc, id), v;
  if (hm_get(&S->seen, k, &v) && v == UINT64_MAX) put(&S->seen, k, (uint64_t)end);
}

static void latest(sel_t *S, int64_t t) {
  if (t > S->latest) S->latest = t;
}

/* ------------------------------------------------------------------ pass 1 */
static sname_t *sname(const sel_t *S, const char *pooled) {
  uint64_t ix;
  return hm_get(&S->name_ix, (uint64_t)(uintptr_t)pooled, &ix) ? &S->names[ix - 1] : NULL;
}

void sel_scan_item(ncs_job_t *j, uint32_t proc, const ncs_item_t *it, int flight) {
  sel_t *S = sl(j);
  if (!S || !S->nrsel) return;
  sfile_t *F = &S->f[proc];
  if (it->what == NCS_ITEM_RANGE_STATE) {
    F->state = 1, F->off = (it->range_state.flags & NCS_RSF_RANGES_OFF) != 0;
    return;
  }
  if (it->what != NCS_ITEM_RANGE) return;
  const ncs_range_rec_t *g = &it->range;
  int original = g->kind == NCS_RR_END || g->kind == NCS_RR_MARK ||
                 (g->kind == NCS_RR_BEGIN && !(g->flags & NCS_RF_RESTATED));
  if (flight && original && g->ts < S->fl[proc].first) S->fl[proc].first = g->ts;
  if (g->kind == NCS_RR_END) {
    number_end(S, proc, g->id, ncs_job_time(j, proc, g->ts));
    return;
  }
  if (g->kind != NCS_RR_BEGIN) return;
  F->ranges = 1;
  latest(S, ncs_job_time(j, proc, g->ts));
  if (!g->name || !*g->name) return; /* no name: no --range names it */
  const char *pn = ncs_pool_str(&j->strs, g->name);
  int created;
  uint64_t *ix = hm_ref(&S->name_ix, (uint64_t)(uintptr_t)pn, 0, &created);
  if (!ix) ncs_oom();
  if (created) {
    NCS_XGROW(S->names, S->capnames, S->nnames + 1);
    S->names[S->nnames] = (sname_t){.name = pn};
    *ix = ++S->nnames;
  }
  const char *nm = sel_name(S, g->name);
  if (!nm || !first_seen(S, proc, g->id)) return;
  if (flight) { /* numbered at the end of the file, in begin order */
    NCS_XGROW(S->fb, S->capfb, S->nfb + 1);
    S->fb[S->nfb++] = (fbeg_t){nm, g->thread, g->ts, g->id};
    return;
  }
  uint64_t n = number(S, proc, g, nm, 0);
  sname_t *x = sname(S, nm);
  if (x && n > x->max_thread) x->max_thread = n;
}

/* the end of a file in pass 1: a flight file's ranges of a selected name are numbered, and what
 * it can tell is known */
void sel_scan_end(ncs_job_t *j, uint32_t proc, const ncs_flight_info_t *fl) {
  sel_t *S = sl(j);
  if (!S) return;
  if (fl) {
    uint64_t r0 = fl->window_mono ? fl->window_mono : UINT64_MAX;
    if (S->fl[proc].first < r0) r0 = S->fl[proc].first;
    S->fl[proc].r0 = r0 == UINT64_MAX ? 1 : r0; /* no slot start, no range: nothing before it */
  }
  ncs_sort(S->fb, S->nfb, sizeof *S->fb, cmp_fbeg);
  uint64_t n = 0;
  for (size_t i = 0; i < S->nfb; i++) {
    const fbeg_t *b = &S->fb[i];
    n = i && b->name == b[-1].name && b->thread == b[-1].thread ? n + 1 : 1;
    put(&S->fnum, hm_mix2(proc, b->id), n);
    sname_t *x = sname(S, b->name);
    if (x && n > x->max_thread) x->max_thread = n;
  }
  free(S->fb);
  S->fb = NULL, S->nfb = S->capfb = 0;
  hm_free(&S->seen);
  S->seen_keep = 0, S->latest = 0;
}

static size_t add_str(char *out, size_t len, size_t n, const char *fmt, const char *a) {
  int w = snprintf(out + (n < len ? n : len), n < len ? len - n : 0, fmt, a);
  return n + (w > 0 ? (size_t)w : 0);
}

/* after pass 1: can the job answer the filter? 0, or -1 with why in err */
int sel_check(const ncs_job_t *j, char *err, size_t len) {
  const sel_t *S = sl(j);
  if (!S) return 0;
  if (S->nrsel && !S->nnames) {
    uint32_t state = 0, off = 0, ranges = 0;
    for (uint32_t p = 0; p < j->nprocs; p++)
      if (!j->procs[p].excluded) state += S->f[p].state, off += S->f[p].state && S->f[p].off, ranges += S->f[p].ranges;
    snprintf(err, len, "--range: this recording has no user ranges (%s)",
             !state ? "its plugin wrote none: user ranges came with trace format 1.4"
             : off == state ? "they were off: NCCLSCOPE_RANGES=off"
             : ranges ? "none of its ranges has a name"
                      : "none were recorded: the program marked none through NVTX or ncclscope's range API; "
                        "NVTX ranges need NVTX_INJECTION64_PATH naming the plugin, which 'ncclscope record' sets");
    return -1;
  }
  for (uint32_t k = 0; k < S->nrsel; k++) {
    const ncs_job_rsel_t *r = &S->rsel[k];
    uint64_t ix;
    if (!hm_get(&S->name_ix, (uint64_t)(uintptr_t)r->name, &ix)) {
      size_t n = (size_t)snprintf(err, len, "--range %s: no user range of that name in the job (its ranges: ", r->name);
      size_t start = n;
      for (size_t i = 0; i < S->nnames; i++) {
        if (n - start > MAX_NAMES_LISTED) {
          n = add_str(err, len, n, "%s", ", ...");
          break;
        }
        n = add_str(err, len, n, i ? ", %s" : "%s", S->names[i].name);
      }
      add_str(err, len, n, "%s", ")");
      return -1;
    }
    const sname_t *x = &S->names[ix - 1];
    if (r->from > x->max_thread) {
      snprintf(err, len, "--range %s:%llu: no thread began %llu ranges named %s (at most %llu)", r->name,
               (unsigned long long)r->from, (unsigned long long)r->from, r->name,
               (unsigned long long)x->max_thread);
      return -1;
    }
  }
  if (S->ntsel) {
    int v7 = 0;
    for (uint32_t p = 0; p < j->nprocs; p++)
      if (!j->procs[p].excluded && j->procs[p].readable && j->procs[p].abi_max >= 7) v7 = 1;
    if (!v7) {
      snprintf(err, len, "--tag: this recording has no user tags (NCCL's ABI v7, NCCL 2.31 or later, "
                         "records them)");
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------------ streaming: intervals */
static tl_t *tl_get(sel_t *S, uint32_t proc, uint32_t thread) {
  uint64_t k = hm_mix2(proc, thread), v;
  if (hm_get(&S->tls, k, &v)) return &S->tl[v - 1];
  NCS_XGROW(S->tl, S->captl, S->ntl + 1);
  S->tl[S->ntl] = (tl_t){.proc = proc, .ub = UINT64_MAX};
  put(&S->tls, k, ++S->ntl);
  return &S->tl[S->ntl - 1];
}

static const tl_t *tl_find(const sel_t *S, uint32_t proc, uint32_t thread) {
  uint64_t v;
  return hm_get(&S->tls, hm_mix2(proc, thread), &v) ? &S->tl[v - 1] : NULL;
}

static void pmax_from(tl_t *t, size_t i) {
  for (; i < t->n; i++) {
    uint64_t p = i ? t->e[i - 1].pmax : 0;
    t->e[i].pmax = t->e[i].end > p ? t->e[i].end : p;
  }
}

/* drop the ended ranges no operation still to leave the file can have been called in */
static void compact(ncs_job_t *j, tl_t *t) {
  uint64_t before = merge_oldest(j, t->proc);
  size_t w = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->e[i].end >= before) t->e[w++] = t->e[i];
  t->n = w;
  pmax_from(t, 0);
  t->keep = t->n;
}

static void iv_add(ncs_job_t *j, tl_t *t, uint64_t begin, uint64_t end) {
  if (t->n >= 2 * t->keep + 64) compact(j, t);
  NCS_XGROW(t->e, t->cap, t->n + 1);
  size_t at = t->n;
  while (at && t->e[at - 1].begin > begin) at--; /* an outer range ends after its inner ones */
  memmove(t->e + at + 1, t->e + at, (t->n - at) * sizeof *t->e);
  t->e[at] = (iv_t){.begin = begin, .end = end};
  t->n++;
  uint64_t p = at ? t->e[at - 1].pmax : 0;
  t->e[at].pmax = end > p ? end : p;
  for (size_t i = at + 1; i < t->n && t->e[i].pmax < end; i++) t->e[i].pmax = end;
}

/* was an operation called at t (monotonic) inside one of t's ranges? */
static int tl_has(const tl_t *t, uint64_t ts) {
  if (!t) return 0;
  if (t->ub <= ts) return 1;
  for (size_t i = 0; i < t->no; i++)
    if (t->o[i].begin <= ts) return 1;
  size_t lo = 0, hi = t->n; /* the first range beginning after ts */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->e[mid].begin <= ts)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = lo; i-- > 0 && t->e[i].pmax >= ts;)
    if (t->e[i].end >= ts) return 1;
  return 0;
}

/* ------------------------------------------------------------------ streaming: records */
void sel_stream_begin(ncs_job_t *j) {
  sel_t *S = sl(j);
  if (!S) return;
  hm_free(&S->seen), hm_free(&S->count);
  S->seen_keep = 0, S->latest = 0;
  memset(S->f, 0, (j->nprocs ? j->nprocs : 1) * sizeof *S->f);
  memset(&j->sel, 0, sizeof j->sel);
}

static void on_begin(ncs_job_t *j, sel_t *S, uint32_t proc, const ncs_range_rec_t *g, int flight) {
  const char *nm = sel_name(S, g->name);
  if (!nm || !first_seen(S, proc, g->id)) return;
  int selected = 0, numbered = 0;
  uint64_t n = number(S, proc, g, nm, flight);
  /* what it held is not all in the recording: it began before a flight file's r0, or a trace file
   * restates it without its begin (its segment start was lost) */
  int partial = flight ? g->ts < S->fl[proc].r0 : (g->flags & NCS_RF_RESTATED) != 0;
  for (uint32_t k = 0; k < S->nrsel; k++)
    if (S->rsel[k].name == nm && (!S->rsel[k].from || (n >= S->rsel[k].from && n <= S->rsel[k].to)))
      selected = 1, numbered |= S->rsel[k].from != 0;
  if (!selected) return;
  j->sel.ranges++;
  if (partial) j->sel.partial++;
  if (flight && numbered) j->sel.flight_numbered = 1;
  if (!(g->flags & NCS_RF_API)) S->nvtx_sel = 1;
  tl_t *t = tl_get(S, proc, (g->flags & NCS_RF_STARTEND) ? SE_THREAD : g->thread);
  if (g->ts <= t->decided) j->sel.late++;
  NCS_XGROW(t->o, t->capo, t->no + 1);
  t->o[t->no++] = (open_t){g->id, g->ts};
  put(&S->open_at, hm_mix2(proc, g->id), (uint64_t)(t - S->tl) + 1);
}

static void on_end(ncs_job_t *j, sel_t *S, uint32_t proc, const ncs_range_rec_t *g) {
  uint64_t k = hm_mix2(proc, g->id), v;
  number_end(S, proc, g->id, ncs_job_time(j, proc, g->ts));
  if (!hm_get(&S->open_at, k, &v)) return; /* not selected, or ended already (a restated END) */
  hm_del(&S->open_at, k);
  tl_t *t = &S->tl[v - 1];
  size_t i = t->no;
  while (i-- > 0 && t->o[i].id != g->id) {}
  if (i == SIZE_MAX) return;
  uint64_t begin = t->o[i].begin;
  t->o[i] = t->o[--t->no];
  if (g->flags & NCS_RF_END_LOST) { /* its time is when the loss was noticed: not an end */
    if (begin < t->ub) t->ub = begin;
    j->sel.end_unknown++;
    return;
  }
  if (g->ts < t->decided) j->sel.late++;
  iv_add(j, t, begin, g->ts < begin ? begin : g->ts);
}

void sel_item(ncs_job_t *j, uint32_t proc, const ncs_item_t *it, int flight) {
  sel_t *S = sl(j);
  if (!S || !S->nrsel) return;
  if (it->what == NCS_ITEM_RANGE_STATE) {
    sfile_t *F = &S->f[proc];
    F->state = 1, F->off = (it->range_state.flags & NCS_RSF_RANGES_OFF) != 0, F->nvtx = it->range_state.nvtx;
    return;
  }
  if (it->what != NCS_ITEM_RANGE) return;
  if (it->range.kind == NCS_RR_BEGIN) {
    latest(S, ncs_job_time(j, proc, it->range.ts));
    on_begin(j, S, proc, &it->range, flight);
  } else if (it->range.kind == NCS_RR_END) {
    on_end(j, S, proc, &it->range);
  }
}

static int tag_in(const sel_t *S, uint64_t tag) {
  for (uint32_t k = 0; k < S->ntsel; k++)
    if (tag >= S->tsel[k].lo && tag <= S->tsel[k].hi) return 1;
  return 0;
}

/* an operation leaving its file: what the --range and --tag lists say of it (ncs_op_t.sel) */
void sel_op(ncs_job_t *j, ncs_op_t *o) {
  sel_t *S = sl(j);
  if (!S) return;
  o->sel = 0;
  if (S->ntsel) {
    if (!o->tag_known)
      j->sel.ops_no_tag++;
    else if (tag_in(S, o->tag))
      o->sel |= NCS_OSEL_TAG;
  }
  if (!S->nrsel) return;
  const sfile_t *F = &S->f[o->proc];
  if (!F->state || F->off) { /* this file could not have recorded a range */
    j->sel.ops_blind++;
    return;
  }
  uint64_t ts = (uint64_t)(o->arrival - j->procs[o->proc].job_off); /* its call, monotonic */
  tl_get(S, o->proc, SE_THREAD);
  tl_t *t = tl_get(S, o->proc, o->thread), *se = (tl_t *)tl_find(S, o->proc, SE_THREAD); /* after the
                                                                  * last tl_get: it may move tl */
  if (ts > t->decided) t->decided = ts;
  if (ts > se->decided) se->decided = ts;
  if (tl_has(t, ts) || tl_has(se, ts))
    o->sel |= NCS_OSEL_RANGE;
  else if (ts < S->fl[o->proc].r0) /* a flight file: a range around it may not be in the file */
    j->sel.ops_early++;
}

/* ------------------------------------------------------------------ the end: what to say */
#define NOTE(...) (n += (size_t)snprintf(buf + (n < sizeof buf ? n : sizeof buf), \
                                         n < sizeof buf ? sizeof buf - n : 0, __VA_ARGS__))

void sel_finish(ncs_job_t *j) {
  sel_t *S = sl(j);
  if (!S) return;
  char buf[1536];
  size_t n = 0;
  const char *sep = "";
  if (S->nrsel) {
    for (size_t i = 0; i < S->ntl; i++) j->sel.end_unknown += S->tl[i].no; /* never ended */
    for (uint32_t p = 0; p < j->nprocs; p++) {
      const ncs_job_rproc_t *rp = j->rprocs ? &j->rprocs[p] : NULL;
      if (!rp || !rp->seen) continue;
      uint64_t lost = rp->lost + rp->counters[NCS_RK_BEGIN_LOST];
      if (lost) j->sel.files_lost++, j->sel.records_lost += lost;
      if (S->nvtx_sel && S->f[p].state && !S->f[p].off && S->f[p].nvtx != NCS_NVTX_OURS) j->sel.files_no_nvtx++;
    }
    NOTE("%" PRIu64 " range%s selected", j->sel.ranges, j->sel.ranges == 1 ? "" : "s");
    sep = "; ";
    if (j->sel.partial)
      NOTE("; %" PRIu64 " of them began before their file's recording (a flight window): partial, what they "
           "held before it is not in the recording", j->sel.partial);
    if (j->sel.end_unknown)
      NOTE("; %" PRIu64 " of them never ended in the recording or lost their end: they hold what followed "
           "their begin up to the end of the recording", j->sel.end_unknown);
    if (j->sel.flight_numbered) NOTE("; in a flight recording ranges are numbered from its window's first");
    if (j->sel.records_lost)
      NOTE("; %u file%s lost %" PRIu64 " range records (RANGE_STATE): ranges may be missing and NAME:N "
           "numbers shifted", j->sel.files_lost, j->sel.files_lost == 1 ? "" : "s", j->sel.records_lost);
    if (j->sel.late)
      NOTE("; %" PRIu64 " range records were read after operations they may hold were decided: cannot "
           "tell for those", j->sel.late);
    if (j->sel.ops_early)
      NOTE("; %" PRIu64 " operations called before a flight recording's ranges begin, and inside none of "
           "its ranges, left out: cannot tell", j->sel.ops_early);
    if (j->sel.ops_blind)
      NOTE("; %" PRIu64 " operations of files that could not record user ranges (an older plugin, or "
           "NCCLSCOPE_RANGES=off) left out: cannot tell", j->sel.ops_blind);
    if (j->sel.files_no_nvtx)
      NOTE("; %u file%s did not record NVTX ranges (NVTX_INJECTION64_PATH unset or naming another tool): "
           "NVTX ranges there are unknown", j->sel.files_no_nvtx, j->sel.files_no_nvtx == 1 ? "" : "s");
  }
  if (S->ntsel && j->sel.ops_no_tag)
    NOTE("%s%" PRIu64 " operations without a known userTag (recorded through an ABI before v7) left out: "
         "cannot tell", sep, j->sel.ops_no_tag);
  if (n >= sizeof buf) strcpy(buf + sizeof buf - 4, "...");
  j->filter.notes = n ? ncs_pool_str(&j->strs, buf) : NULL;
}
#undef NOTE

void sel_free(ncs_job_t *j) {
  jpriv_t *P = jp(j);
  sel_t *S = P->sel;
  if (!S) return;
  for (size_t i = 0; i < S->ntl; i++) free(S->tl[i].e), free(S->tl[i].o);
  free(S->tl), free(S->f), free(S->fl), free(S->names), free(S->rsel), free(S->tsel);
  hm_free(&S->seen), hm_free(&S->count), hm_free(&S->name_ix), hm_free(&S->tls), hm_free(&S->open_at);
  hm_free(&S->fnum);
  free(S->fb);
  free(S);
  P->sel = NULL;
}
