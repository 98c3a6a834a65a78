/* test_model.c - the job model's contract (src/model/model.h, docs/model.md) on crafted traces:
 * instances and their first/last arrival, the user's count from CollApi parents (also across a
 * FIFO that grew after old entries expired: the report crashed on jobs longer than 10 s),
 * send/receive pairs, durations and their source, reload cycles kept apart (also when their
 * records interleave), commId 0 kept per
 * file, unknown datatypes, clocks and job time, member lookups, unreadable files, and the
 * operations a filter left out (kept for exporters with retain). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model.h"
#include "tracegen.h"

static int fails;
#define CHECK(c)                                                                                  \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                       \
      fails++;                                                                                    \
    }                                                                                             \
  } while (0)

#define MS 1000000ull
#define REAL 1700000000000000000ull
enum { S_AR = 1, S_F32, S_SEND, S_RECV, S_I8, S_ODD, NSTR };
static const char *const strs[NSTR] = {NULL, "AllReduce", "ncclFloat32", "Send", "Recv", "ncclInt8",
                                       "ncclFloat128"};

typedef struct {
  tg_t g;
  int open;
  uint64_t last;
} w_t;

static void flush(w_t *w) {
  if (!w->open) return;
  ncs_enc_events_end(&w->g.pay, &w->g.ev);
  tg_chunk(&w->g, NCS_CHUNK_EVENTS);
  w->open = 0;
}

static void put(w_t *w, ncs_event_t *e) {
  if (!w->open) ncs_enc_events_begin(&w->g.pay, &w->g.ev, e->ts ? e->ts : w->last), w->open = 1;
  ncs_enc_event(&w->g.pay, &w->g.ev, e);
  if (e->ts) w->last = e->ts;
}

/* a segment with one communicator (index 0) */
static void segment(w_t *w, uint64_t pid, uint64_t comm_id, int rank, int nranks, uint64_t t0) {
  flush(w);
  ncs_segment_info_t s = {.format_version = 1, .plugin_version = "t", .host = "h", .pid = pid,
                          .mask = 0x7FFF, .start_mono_ns = t0, .start_realtime_ns = t0 + REAL,
                          .cmdline = "t"};
  ncs_enc_segment(&w->g.pay, &s);
  tg_chunk(&w->g, NCS_CHUNK_SEGMENT);
  for (uint64_t i = 1; i < NSTR; i++) ncs_enc_string(&w->g.pay, i, strs[i]);
  tg_chunk(&w->g, NCS_CHUNK_STRINGS);
  ncs_enc_clock(&w->g.pay, t0, t0 + REAL);
  tg_chunk(&w->g, NCS_CHUNK_CLOCK);
  ncs_comm_info_t c = {.index = 0, .comm_id = comm_id, .name = "", .nranks = nranks,
                       .nnodes = 1, .rank = rank, .abi_version = 6, .init_ns = t0, .device = 3,
                       .bus_id = "0000:01:00.0"};
  ncs_enc_comm(&w->g.pay, &c);
  tg_chunk(&w->g, NCS_CHUNK_COMM);
  w->last = t0;
}

static void api(w_t *w, uint64_t id, uint64_t ts, uint64_t count) {
  ncs_event_t e = {.kind = NCS_REC_START, .type = NCS_T_COLL_API, .id = id, .ts = ts};
  e.nfields = NCS_NF(CollApi);
  e.f[NCS_F(CollApi, func)] = S_AR, e.f[NCS_F(CollApi, count)] = count;
  e.f[NCS_F(CollApi, datatype)] = S_F32;
  put(w, &e);
}

static void coll(w_t *w, uint64_t id, uint64_t ts, uint64_t seq, uint64_t parent, uint64_t dtype) {
  ncs_event_t e = {.kind = NCS_REC_START, .type = NCS_T_COLL, .id = id, .ts = ts,
                   .ctx_kind = NCS_CTX_LOCAL, .ctx = 0};
  e.parent_kind = parent ? NCS_REF_LOCAL : NCS_REF_NONE, e.parent = parent;
  e.nfields = NCS_NF(Coll);
  e.f[NCS_F(Coll, seqNumber)] = seq, e.f[NCS_F(Coll, func)] = S_AR, e.f[NCS_F(Coll, count)] = 7;
  e.f[NCS_F(Coll, datatype)] = dtype, e.f[NCS_F(Coll, nChannels)] = 1;
  put(w, &e);
}

static void p2p(w_t *w, uint64_t id, uint64_t ts, uint64_t func, int peer) {
  ncs_event_t e = {.kind = NCS_REC_START, .type = NCS_T_P2P, .id = id, .ts = ts,
                   .ctx_kind = NCS_CTX_LOCAL, .ctx = 0};
  e.nfields = NCS_NF(P2p);
  e.f[NCS_F(P2p, func)] = func, e.f[NCS_F(P2p, datatype)] = S_I8, e.f[NCS_F(P2p, count)] = 4096;
  e.f[NCS_F(P2p, peer)] = (uint64_t)(int64_t)peer;
  put(w, &e);
}

static void stop_done(w_t *w, uint8_t type, uint64_t id, uint64_t ts, uint64_t gpu) {
  ncs_event_t e = {.kind = NCS_REC_STOP, .type = type, .id = id, .ts = ts};
  put(w, &e);
  ncs_event_t c = {.kind = NCS_REC_COMPLETE, .type = type, .id = id, .cflags = NCS_CF_KERNEL,
                   .end_ns = ts + 2 * MS, .first_child_ns = ts + MS, .gpu_start = gpu,
                   .gpu_stop = gpu + 300000};
  put(w, &c);
}

static void finish(w_t *w, const char *dir, const char *name, uint64_t end) {
  flush(w);
  ncs_counters_t c = {.nkeys = 1, .keys = {NCS_CK_END_NS}, .values = {end}};
  ncs_enc_counters(&w->g.pay, &c);
  tg_chunk(&w->g, NCS_CHUNK_FOOTER);
  char path[600];
  snprintf(path, sizeof path, "%s/%s.nstrace", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(w->g.file.p, 1, w->g.file.len, f) != w->g.file.len || fclose(f) != 0) {
    perror(path);
    exit(2);
  }
  tg_free(&w->g);
}

static ncs_job_t *open_job(const char *dir) {
  char err[256];
  ncs_job_t *j = ncs_job_open(dir, &(ncs_job_opts_t){.retain = 1}, err, sizeof err);
  if (!j) {
    fprintf(stderr, "%s: %s\n", dir, err);
    exit(1);
  }
  ncs_job_stream(j, NULL, NULL);
  return j;
}

/* two ranks, three AllReduce (rank 1 arrives last in #1), a send and its receive */
static void basic(const char *dir) {
  for (int r = 0; r < 2; r++) {
    w_t w = {0};
    tg_init(&w.g);
    tg_header(&w.g);
    segment(&w, 100 + (uint64_t)r, 0xABCD, r, 2, 1000 * MS);
    for (uint64_t s = 0; s < 3; s++) {
      uint64_t t = 1010 * MS + s * 10 * MS + (s == 1 && r == 1 ? 3 * MS : (uint64_t)r * 1000);
      api(&w, 10 + s, t, 1000 + s);
      coll(&w, 20 + s, t + 100, s, 10 + s, S_F32);
      stop_done(&w, NCS_T_COLL, 20 + s, t + 200, t + 5 * MS);
    }
    p2p(&w, 40, 1050 * MS, r ? S_RECV : S_SEND, 1 - r);
    stop_done(&w, NCS_T_P2P, 40, 1050 * MS + 10, 0);
    finish(&w, dir, r ? "b" : "a", 1100 * MS);
  }
  ncs_job_t *j = open_job(dir);
  CHECK(j->nprocs == 2 && j->ncomms == 1 && j->comms[0].ranks_seen == 2 && j->nhosts == 1);
  CHECK(j->procs[0].clk_off == (int64_t)REAL && j->procs[0].job_off == 0 && j->error == 0);
  CHECK(ncs_job_inst_count(j) == 3 && ncs_job_op_count(j) == 8);
  const ncs_inst_t *in = ncs_job_inst(j, 1);
  CHECK(in && in->seq == 1 && in->nops == 2 && in->last_rank == 1 && in->first_rank == 0);
  CHECK(in && in->last_arrival - in->first_arrival == (int64_t)(3 * MS));
  const ncs_op_t *o = ncs_job_op(j, in ? in->first_op : 0);
  CHECK(o && o->count == 1001 && !strcmp(o->dtype, "ncclFloat32") && o->bytes == 4004);
  CHECK(o && o->timing == NCS_SRC_KERNEL_GPU && o->duration == 300000 && o->inst == 1);
  CHECK(o && o->arrival == (int64_t)(1020 * MS) && o->start == o->arrival + 100);
  const ncs_op_t *s = ncs_job_op(j, 6), *rv = ncs_job_op(j, 7);
  CHECK(s && rv && s->is_send && !rv->is_send && s->pair == 7 && rv->pair == 6 && s->bytes == 4096);
  CHECK(s && s->timing == NCS_SRC_PROXY_HOST && s->duration == (int64_t)MS); /* no GPU times */
  const ncs_job_member_t *m = ncs_job_member(j, 1, 0, 0);
  CHECK(m && m->rank == 1 && m->device == 3 && !strcmp(m->bus_id, "0000:01:00.0"));
  CHECK(!ncs_job_member(j, 1, 0, 1) && !ncs_job_member(j, 1, 1, 0));
  CHECK(j->t_first == (int64_t)(1010 * MS) && j->t_last == (int64_t)(1100 * MS));
  CHECK(o && o->api && o->api_id == 11); /* its CollApi's event id */
  CHECK(s && !s->api && !s->api_id);
  ncs_job_free(j);
}

/* the same job through a window filter (5 ms to 25 ms after the first event): AllReduce #1 and
 * #2 pass; #0 and the send/receive are left out, and with retain the job lists them (file,
 * segment, event ids of the Coll/P2p and of its CollApi) for exporters; kept + left = all */
static void left_out(const char *dir) {
  char err[256];
  ncs_job_filter_t f = {.window = 1, .from_ns = 5 * (int64_t)MS, .to_ns = 25 * (int64_t)MS};
  ncs_job_t *j = ncs_job_open(dir, &(ncs_job_opts_t){.retain = 1, .filter = &f}, err, sizeof err);
  if (!j) {
    fprintf(stderr, "%s: %s\n", dir, err);
    exit(1);
  }
  ncs_job_stream(j, NULL, NULL);
  CHECK(ncs_job_inst_count(j) == 2 && ncs_job_op_count(j) == 4);
  CHECK(j->run.filtered_inst == 1 && j->run.filtered_p2p == 2);
  CHECK(ncs_job_left_count(j) == 4 && !ncs_job_left(j, 4));
  int coll = 0, sr = 0;
  for (size_t i = 0; i < ncs_job_left_count(j); i++) {
    const ncs_job_left_t *l = ncs_job_left(j, i);
    if (l->id == 20) {
      coll++;
      CHECK(l->api_id == 10 && l->seg == 0 && l->rank == (int32_t)l->proc);
    } else if (l->id == 40) {
      sr++;
      CHECK(l->api_id == 0 && l->comm == 0);
    } else {
      CHECK(!"an operation that passes the filter is listed as left out");
    }
  }
  CHECK(coll == 2 && sr == 2);
  for (size_t i = 0; i < ncs_job_op_count(j); i++) {
    const ncs_op_t *o = ncs_job_op(j, i);
    CHECK(o->id != 20 && o->id != 40 && o->api_id == o->id - 10);
  }
  ncs_job_free(j);
  /* without retain nothing is kept for exporters */
  j = ncs_job_open(dir, &(ncs_job_opts_t){.filter = &f}, err, sizeof err);
  CHECK(j != NULL);
  if (j) {
    ncs_job_stream(j, NULL, NULL);
    CHECK(j->run.filtered_inst == 1 && ncs_job_left_count(j) == 0);
    ncs_job_free(j);
  }
}

/* one rank, 30 s: ten CollApi at 0 s, then at 12 s seventy more in a row (the FIFO drops the old
 * ones and grows while its head is not at 0), each followed later by its Coll */
static void api_fifo(const char *dir) {
  w_t w = {0};
  tg_init(&w.g);
  tg_header(&w.g);
  segment(&w, 7, 0x77, 0, 1, 1000 * MS);
  for (uint64_t i = 0; i < 10; i++) api(&w, 1 + i, 1001 * MS + i, 500 + i);
  for (uint64_t i = 0; i < 70; i++) api(&w, 100 + i, 13000 * MS + i, 2000 + i);
  for (uint64_t i = 0; i < 70; i++) {
    coll(&w, 300 + i, 13001 * MS + i * 1000, i, 100 + i, S_F32);
    stop_done(&w, NCS_T_COLL, 300 + i, 13001 * MS + i * 1000 + 10, 0);
  }
  finish(&w, dir, "one", 31000 * MS);
  ncs_job_t *j = open_job(dir);
  size_t n = ncs_job_op_count(j), good = 0;
  for (size_t i = 0; i < n; i++) {
    const ncs_op_t *o = ncs_job_op(j, i);
    good += o->count == 2000 + o->seq && o->arrival == (int64_t)(13000 * MS + o->seq);
  }
  CHECK(n == 70 && good == 70);
  ncs_job_free(j);
}

/* the same (comm, func, seq) in two segments (a reload): two instances; commId 0 in two files:
 * two communicators; a datatype the table does not know: 0 bytes */
static void apart(const char *dir) {
  for (int r = 0; r < 2; r++) {
    w_t w = {0};
    tg_init(&w.g);
    tg_header(&w.g);
    for (int seg = 0; seg < 2; seg++) {
      segment(&w, 50 + (uint64_t)r, 0x5555, r, 2, (1000 + 100 * (uint64_t)seg) * MS);
      coll(&w, 1, (1001 + 100 * (uint64_t)seg) * MS, 0, 0, S_ODD);
      stop_done(&w, NCS_T_COLL, 1, (1001 + 100 * (uint64_t)seg) * MS + 10, 0);
    }
    finish(&w, dir, r ? "y" : "x", 1300 * MS);
  }
  for (int r = 0; r < 2; r++) { /* commId 0 */
    w_t w = {0};
    tg_init(&w.g);
    tg_header(&w.g);
    segment(&w, 60 + (uint64_t)r, 0, 0, 1, 1000 * MS);
    coll(&w, 1, 1001 * MS, 0, 0, S_F32);
    stop_done(&w, NCS_T_COLL, 1, 1001 * MS + 10, 0);
    finish(&w, dir, r ? "z1" : "z0", 1300 * MS);
  }
  char bad[600];
  snprintf(bad, sizeof bad, "%s/zz-bad.nstrace", dir);
  FILE *f = fopen(bad, "wb");
  if (f) fputs("not a trace", f), fclose(f);
  ncs_job_t *j = open_job(dir);
  CHECK(j->nprocs == 5 && j->unreadable == 1 && !j->procs[4].readable && j->procs[4].damage_msg[0]);
  CHECK(j->ncomms == 3 && ncs_job_inst_count(j) == 4);
  int two = 0;
  for (size_t i = 0; i < ncs_job_inst_count(j); i++) {
    const ncs_inst_t *in = ncs_job_inst(j, i);
    if (j->comms[in->comm].comm_id == 0x5555) {
      two++;
      CHECK(in->nops == 2 && ncs_job_op(j, in->first_op)->bytes == 0);
    }
  }
  CHECK(two == 2);
  ncs_job_free(j);
}

/* a reload cycle whose records interleave with the last one's: rank 0 runs AllReduce #0 of its
 * second cycle before rank 1 ran #0 of its first; each rank's n-th #0 belongs to the n-th
 * instance, so both instances are complete */
static void interleave(const char *dir) {
  static const uint64_t t[2][2] = {{1001, 1101}, {1200, 1300}}; /* ms: rank, cycle */
  for (int r = 0; r < 2; r++) {
    w_t w = {0};
    tg_init(&w.g);
    tg_header(&w.g);
    for (int seg = 0; seg < 2; seg++) {
      segment(&w, 70 + (uint64_t)r, 0x7777, r, 2, (t[r][seg] - 1) * MS);
      coll(&w, 1, t[r][seg] * MS, 0, 0, S_F32);
      stop_done(&w, NCS_T_COLL, 1, t[r][seg] * MS + 10, 0);
    }
    finish(&w, dir, r ? "r1" : "r0", 1400 * MS);
  }
  ncs_job_t *j = open_job(dir);
  CHECK(ncs_job_inst_count(j) == 2);
  for (size_t i = 0; i < ncs_job_inst_count(j); i++) {
    const ncs_inst_t *in = ncs_job_inst(j, i);
    CHECK(in->nops == 2 && in->distinct == 2 && !in->evicted);
    CHECK(ncs_job_op(j, in->first_op)->seg == ncs_job_op(j, in->first_op + 1)->seg);
  }
  CHECK(ncs_job_inst(j, 0) && ncs_job_inst(j, 1) && ncs_job_inst(j, 0)->again + ncs_job_inst(j, 1)->again == 1);
  ncs_job_free(j);
}

static void mkdirs(char *dir, const char *base, const char *name) {
  snprintf(dir, 512, "%s/%s", base, name);
  if (mkdir(dir, 0755) != 0) {
    perror(dir);
    exit(2);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_model EMPTY_DIR\n");
    return 2;
  }
  char d[512];
  mkdirs(d, argv[1], "basic"), basic(d), left_out(d);
  mkdirs(d, argv[1], "fifo"), api_fifo(d);
  mkdirs(d, argv[1], "apart"), apart(d);
  mkdirs(d, argv[1], "interleave"), interleave(d);
  if (fails) return 1;
  printf("test_model: ok\n");
  return 0;
}
