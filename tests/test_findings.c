/* test_findings.c - the report's findings (src/analyze/findings.c, docs/report.md "Findings") on
 * crafted traces whose every time is known, so each number is checked exactly:
 *   - a one-off stall (rank 3 arrives 300 ms late once, in a job of 2.3 s) is a headline finding,
 *     host-side (no GPU times), with who, before which instance, when, how long and its cost;
 *   - a significant but tiny straggler (rank 1 last by 20 us in 199 of 200 instances) is minor,
 *     with its size;
 *   - an instance a rank never recorded is named with the missing rank;
 *   - a healthy job (the last rank rotates, no stall) has no finding at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "model/model.h"
#include "tracegen.h"

#include "check.h"

#define US 1000ull
#define MS 1000000ull
#define REAL 1700000000000000000ull
enum { S_AR = 1, S_F32, NSTR };
static const char *const strs[NSTR] = {NULL, "AllReduce", "ncclFloat32"};

typedef struct {
  tg_t g;
  int open;
} w_t;

static void flush(w_t *w) {
  if (!w->open) return;
  ncs_enc_events_end(&w->g.pay, &w->g.ev);
  tg_chunk(&w->g, NCS_CHUNK_EVENTS);
  w->open = 0;
}

static void put(w_t *w, ncs_event_t *e, uint64_t ts) {
  if (!w->open) ncs_enc_events_begin(&w->g.pay, &w->g.ev, ts), w->open = 1;
  ncs_enc_event(&w->g.pay, &w->g.ev, e);
}

static void segment(w_t *w, uint64_t pid, int rank, int nranks, uint64_t t0) {
  ncs_segment_info_t s = {.format_version = 1, .plugin_version = "t", .host = "h", .pid = pid,
                          .mask = 0x7FFF, .start_mono_ns = t0, .start_realtime_ns = t0 + REAL,
                          .cmdline = "t"};
  ncs_enc_segment(&w->g.pay, &s);
  tg_chunk(&w->g, NCS_CHUNK_SEGMENT);
  for (uint64_t i = 1; i < NSTR; i++) ncs_enc_string(&w->g.pay, i, strs[i]);
  tg_chunk(&w->g, NCS_CHUNK_STRINGS);
  ncs_enc_clock(&w->g.pay, t0, t0 + REAL);
  tg_chunk(&w->g, NCS_CHUNK_CLOCK);
  ncs_comm_info_t c = {.index = 0, .comm_id = 0xF1D, .name = "", .nranks = nranks, .nnodes = 1,
                       .rank = rank, .abi_version = 6, .init_ns = t0, .device = (uint32_t)rank,
                       .bus_id = "0000:01:00.0"};
  ncs_enc_comm(&w->g.pay, &c);
  tg_chunk(&w->g, NCS_CHUNK_COMM);
}

/* one AllReduce of seq: called at `at`, enqueued 5 us later, its proxy work from `done` - 1 ms to
 * `done` (no GPU times: waits are host-side) */
static void coll(w_t *w, uint64_t id, uint64_t seq, uint64_t at, uint64_t done) {
  ncs_event_t e = {.kind = NCS_REC_START, .type = NCS_T_COLL, .id = id, .ts = at, .ctx_kind = NCS_CTX_LOCAL};
  e.nfields = NCS_NF(Coll);
  e.f[NCS_F(Coll, seqNumber)] = seq, e.f[NCS_F(Coll, func)] = S_AR, e.f[NCS_F(Coll, count)] = 1024;
  e.f[NCS_F(Coll, datatype)] = S_F32, e.f[NCS_F(Coll, nChannels)] = 1;
  put(w, &e, at);
  ncs_event_t s = {.kind = NCS_REC_STOP, .type = NCS_T_COLL, .id = id, .ts = at + 5 * US};
  put(w, &s, at);
  ncs_event_t c = {.kind = NCS_REC_COMPLETE, .type = NCS_T_COLL, .id = id, .cflags = NCS_CF_PROXY,
                   .end_ns = done, .first_child_ns = done - MS};
  put(w, &c, at);
}

#define NINST 200
#define T0 (1000 * MS)
#define STALL_AT 100
#define STALL (300 * MS)

/* arrival of rank r at instance i. sick: rank 1 is 20 us late everywhere, rank 3 300 ms late at
 * STALL_AT (the job then goes on 300 ms later). Healthy: rank i % 4 is 20 us late. */
static uint64_t base(int sick, uint64_t i) { return T0 + i * 10 * MS + (sick && i > STALL_AT ? STALL : 0); }
static uint64_t arrival(int sick, int r, uint64_t i) {
  uint64_t b = base(sick, i);
  if (!sick) return b + ((uint64_t)r == i % 4 ? 20 * US : (uint64_t)r * US);
  if (i == STALL_AT && r == 3) return b + STALL;
  return b + (r == 1 ? 20 * US : (uint64_t)r * US);
}

/* the job into dir: NINST complete instances, and with sick one more (seq NINST) rank 2 never
 * recorded */
static void job(const char *dir, int sick) {
  for (int r = 0; r < 4; r++) {
    w_t w = {0};
    tg_init(&w.g);
    tg_header(&w.g);
    segment(&w, 400 + (uint64_t)r, r, 4, T0 - MS);
    uint64_t n = sick && r != 2 ? NINST + 1 : NINST;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t last = 0;
      for (int k = 0; k < 4; k++)
        if (arrival(sick, k, i) > last) last = arrival(sick, k, i);
      coll(&w, 10 + i, i, arrival(sick, r, i), last + 2 * MS);
    }
    flush(&w);
    ncs_counters_t c = {.nkeys = 1, .keys = {NCS_CK_END_NS}, .values = {base(sick, n) + 5 * MS}};
    ncs_enc_counters(&w.g.pay, &c);
    tg_chunk(&w.g, NCS_CHUNK_FOOTER);
    char path[600];
    snprintf(path, sizeof path, "%s/r%d.nstrace", dir, r);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(w.g.file.p, 1, w.g.file.len, f) != w.g.file.len || fclose(f) != 0) {
      perror(path);
      exit(2);
    }
    tg_free(&w.g);
  }
}

static ncs_analysis_t *analyze(const char *dir) {
  char err[256];
  ncs_analysis_t *a = ncs_analyze_path(dir, err, sizeof err);
  if (!a) {
    fprintf(stderr, "%s: %s\n", dir, err);
    exit(1);
  }
  return a;
}

static const ncs_finding_t *find(const ncs_findings_t *f, ncs_find_kind_t kind) {
  for (uint32_t k = 0; k < f->n; k++)
    if (f->items[k].kind == kind) return &f->items[k];
  return NULL;
}

static void sick(const char *dir) {
  job(dir, 1);
  ncs_analysis_t *a = analyze(dir);
  ncs_findings_t f;
  ncs_findings_build(&f, a, 5);
  char text[2048];
  double wall = (double)(a->job->t_last - a->job->t_first);
  CHECK(wall > 2.3e9 && wall < 2.4e9);
  /* the stall: rank 3 before seq STALL_AT; the others waited 300 ms less their own lateness */
  CHECK(a->nstalls == 1 && !a->stalls_capped);
  const ncs_an_stall_t *s = a->nstalls ? &a->stalls[0] : NULL;
  if (s) {
    CHECK(s->rank == 3 && s->seq == STALL_AT && !s->gpu && s->others == 3 && !s->by_share);
    CHECK(s->caused == (int64_t)(3 * STALL - 20 * US - 2 * US)); /* ranks 1 and 2 came 20 and 2 us late */
    CHECK(s->wait == s->caused / 3 && s->longest == (int64_t)STALL);
    CHECK(s->from == (int64_t)base(1, STALL_AT)); /* rank 0 came first */
    CHECK(s->from_real == (int64_t)(base(1, STALL_AT) + REAL));
    /* its bucket's usual: in every other instance the others waited 20, 18 and 17 us for rank 1 */
    CHECK(s->bucket_n == NINST && s->med == (double)(55 * US / 3) && s->sigma == 0.0);
  }
  const ncs_finding_t *st = find(&f, NCS_FIND_STALL);
  CHECK(st && st->headline && st->side == NCS_SIDE_HOST && st->stall == s);
  if (st) {
    CHECK(st->size_ns == s->wait && st->share > 0.12 && st->share < 0.14);
    ncs_finding_text(a, st, text, sizeof text);
    CHECK(strstr(text, "stall: rank 3 (pid 403) held up AllReduce seq 100 (4.0 KiB)") != NULL);
    CHECK(strstr(text, "the other 3 ranks waited for it 299.99 ms each (longest 300.00 ms; 899.98 ms in "
                       "total, host-side), 13.0% of the job's 2.31 s") != NULL);
    CHECK(strstr(text, "from 1.00 s into the job, 2023-11-14 22:13:22.000 UTC") != NULL);
  }
  CHECK(!find(&f, NCS_FIND_STALLS)); /* one stall: no repeated-stalls finding */
  /* rank 1: last in 199 of 200, significant; it cost the others 199 x 55 us: minor */
  const ncs_finding_t *sg = find(&f, NCS_FIND_STRAGGLER);
  CHECK(sg && sg->rank->rank == 1 && sg->test.significant && !sg->headline && sg->side == NCS_SIDE_HOST);
  if (sg) {
    CHECK(sg->rank->last == 199 && sg->rank->last_trials == 200);
    CHECK(sg->rank->caused_host_n == 199 && sg->rank->caused_gpu_n == 0);
    CHECK(sg->size_ns == (int64_t)(199 * 55 * US / 3) && sg->share < 0.002);
    ncs_finding_text(a, sg, text, sizeof text);
    CHECK(strstr(text, "host-side: arrival to the last arrival") != NULL);
  }
  /* the instance rank 2 never recorded, named */
  const ncs_finding_t *in = find(&f, NCS_FIND_INCOMPLETE);
  CHECK(in && in->headline && a->incomplete == 1);
  CHECK(a->first_incomplete.set && a->first_incomplete.seq == NINST && a->first_incomplete.nmissing == 1 &&
        a->first_incomplete.missing[0] == 2);
  if (in) {
    ncs_finding_text(a, in, text, sizeof text);
    CHECK(strstr(text, "the first: AllReduce seq 200 on c0 0x0000000000000f1d, which rank 2 of 4 never recorded") != NULL);
    CHECK(strstr(text, "ncclscope diagnose") != NULL);
  }
  /* headlines first: the stall and the missing rank; then the minor straggler */
  CHECK(f.n == 3 && f.nheadline == 2 && f.items[2].kind == NCS_FIND_STRAGGLER);
  ncs_findings_free(&f);
  ncs_analysis_free(a);
}

static void healthy(const char *dir) {
  job(dir, 0);
  ncs_analysis_t *a = analyze(dir);
  ncs_findings_t f;
  ncs_findings_build(&f, a, 5);
  CHECK(a->nstalls == 0 && f.n == 0 && f.nheadline == 0);
  CHECK(!strcmp(f.none, "nothing stands out"));
  for (uint32_t k = 0; k < a->nranks; k++) CHECK(a->ranks[k].last == NINST / 4);
  ncs_findings_free(&f);
  ncs_analysis_free(a);
}

static void mkdirs(char *dir, const char *base_dir, const char *name) {
  snprintf(dir, 512, "%s/%s", base_dir, name);
  if (mkdir(dir, 0755) != 0) {
    perror(dir);
    exit(2);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_findings EMPTY_DIR\n");
    return 2;
  }
  char d[512];
  mkdirs(d, argv[1], "sick"), sick(d);
  mkdirs(d, argv[1], "healthy"), healthy(d);
  if (fails) return 1;
  printf("test_findings: ok\n");
  return 0;
}
