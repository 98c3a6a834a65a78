/* test_model.c - the job model's contract (src/model/model.h, docs/model.md) on crafted traces:
 * instances and their first/last arrival, the user's count from CollApi parents (also across a
 * FIFO that grew after old entries expired: the report crashed on jobs longer than 10 s),
 * send/receive pairs, durations and their source, reload cycles kept apart (also when their
 * records interleave), commId 0 kept per
 * file, unknown datatypes, clocks and job time, member lookups, unreadable files, the operations
 * a filter left out (kept for exporters with retain); the filter's --range and --tag (select.c):
 * range records after the operations they hold, nesting, start/end ranges, numbering, ends lost or
 * never come, records read too late, files without ranges, tags known and unknown, and a long job
 * whose ranges are forgotten as it goes; each operation's previous one (prev_id), and the report's
 * waiting counted in call order when instances are handed out of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "model/model.h"
#include "tracegen.h"

#include "check.h"

#define MS 1000000ull
#define REAL 1700000000000000000ull
enum { S_AR = 1, S_F32, S_SEND, S_RECV, S_I8, S_ODD, S_STEP, S_X, S_SE, S_LOST, S_OPEN, S_LATE, NSTR };
static const char *const strs[NSTR] = {NULL, "AllReduce", "ncclFloat32", "Send", "Recv", "ncclInt8",
                                       "ncclFloat128", "step", "x", "se", "lost", "open", "late"};

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

/* a segment with one communicator (index 0), NCCL on ABI abi */
static void segment_abi(w_t *w, uint64_t pid, uint64_t comm_id, int rank, int nranks, uint64_t t0,
                        uint32_t abi) {
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
                       .nnodes = 1, .rank = rank, .abi_version = abi, .init_ns = t0, .device = 3,
                       .bus_id = "0000:01:00.0"};
  ncs_enc_comm(&w->g.pay, &c);
  tg_chunk(&w->g, NCS_CHUNK_COMM);
  w->last = t0;
}
static void segment(w_t *w, uint64_t pid, uint64_t comm_id, int rank, int nranks, uint64_t t0) {
  segment_abi(w, pid, comm_id, rank, nranks, t0, 6);
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

/* ------------------------------------------------------------------ --range and --tag */
/* a communicator index more (comm_id, one rank), NCCL on ABI abi */
static void comm2(w_t *w, uint64_t index, uint64_t comm_id, uint32_t abi, uint64_t t0) {
  flush(w);
  ncs_comm_info_t c = {.index = index, .comm_id = comm_id, .name = "", .nranks = 1, .nnodes = 1,
                       .rank = 0, .abi_version = abi, .init_ns = t0, .device = 0, .bus_id = ""};
  ncs_enc_comm(&w->g.pay, &c);
  tg_chunk(&w->g, NCS_CHUNK_COMM);
}

static void rstate(w_t *w) {
  flush(w);
  ncs_range_state_t st = {.nvtx = NCS_NVTX_UNSET};
  ncs_range_enc_state(&w->g.pay, &st);
  tg_chunk(&w->g, NCS_CHUNK_RANGE_STATE);
}

typedef struct {
  uint8_t kind;
  uint64_t id;
  uint32_t thread;
  uint64_t ts, name;
  uint32_t flags, depth;
} rr_t;

/* one RANGES chunk (after the events written so far) */
static void ranges(w_t *w, const rr_t *r, size_t n) {
  flush(w);
  ncs_range_chunk_t c;
  ncs_range_enc_begin(&w->g.pay, &c, r[0].ts);
  for (size_t i = 0; i < n; i++) {
    ncs_range_rec_t g = {.kind = r[i].kind, .flags = r[i].flags, .thread = r[i].thread, .ts = r[i].ts,
                         .id = r[i].id, .depth = r[i].depth, .name_id = r[i].name};
    ncs_range_enc_rec(&w->g.pay, &c, &g);
  }
  ncs_range_enc_end(&w->g.pay, &c);
  tg_chunk(&w->g, NCS_CHUNK_RANGES);
}

/* a collective of one rank on comm index ctx, called at ts on thread, userTag tag: its CollApi, Coll,
 * STOP and COMPLETE (seq: its seqNumber; ids from id) */
static void op_on(w_t *w, uint64_t id, uint64_t ts, uint32_t thread, uint64_t ctx, uint64_t seq, uint64_t tag) {
  ncs_event_t a = {.kind = NCS_REC_START, .type = NCS_T_COLL_API, .id = id, .ts = ts, .thread = thread};
  a.nfields = NCS_NF(CollApi);
  a.f[NCS_F(CollApi, func)] = S_AR, a.f[NCS_F(CollApi, count)] = 8, a.f[NCS_F(CollApi, datatype)] = S_F32;
  a.f[NCS_F(CollApi, userTag)] = tag;
  put(w, &a);
  ncs_event_t e = {.kind = NCS_REC_START, .type = NCS_T_COLL, .id = id + 1, .ts = ts + 100, .thread = thread,
                   .ctx_kind = NCS_CTX_LOCAL, .ctx = ctx, .parent_kind = NCS_REF_LOCAL, .parent = id};
  e.nfields = NCS_NF(Coll);
  e.f[NCS_F(Coll, seqNumber)] = seq, e.f[NCS_F(Coll, func)] = S_AR, e.f[NCS_F(Coll, count)] = 8;
  e.f[NCS_F(Coll, datatype)] = S_F32, e.f[NCS_F(Coll, nChannels)] = 1, e.f[NCS_F(Coll, userTag)] = tag;
  put(w, &e);
  stop_done(w, NCS_T_COLL, id + 1, ts + 200, 0);
}

/* the seqNumbers of the instances a filter keeps, as a bit mask (seq < 64), and the job */
static uint64_t kept(const char *dir, const ncs_job_filter_t *f, ncs_job_t **out) {
  char err[512];
  ncs_job_t *j = ncs_job_open(dir, &(ncs_job_opts_t){.retain = 1, .filter = f}, err, sizeof err);
  if (!j) {
    fprintf(stderr, "%s: %s\n", dir, err);
    fails++;
    *out = NULL;
    return 0;
  }
  ncs_job_stream(j, NULL, NULL);
  uint64_t m = 0;
  for (size_t i = 0; i < ncs_job_inst_count(j); i++) m |= 1ull << (ncs_job_inst(j, i)->seq & 63);
  *out = j;
  return m;
}
#define B(n) (1ull << (n))
#define RSEL(nm, a, b) (&(ncs_job_filter_t){.rsel = &(ncs_job_rsel_t){nm, a, b}, .nrsel = 1})

/* One file, one rank. Thread 0 runs steps 1 and 2 (their records in a chunk after the operations'),
 * with ops seq 0 in step 1, 1 between the steps, 2 in step 2; ranges "x" nest (an outer one
 * around an inner one that ends first, and one more inner one later: seq 3 and 4 are in the outer
 * one only, found by walking back past the inner ones); a start/end range "se" of
 * thread 9 holds seq 2 of thread 0; "lost" loses its END and "open" never ends: they hold all
 * that follows; "late" is read after seq 9, inside it, was decided. Tags: seq 0 has 5, seq 2 has
 * 6, seq 8 runs on comm index 1, which NCCL called through ABI v6 (its tag unknown). */
static void select_ranges(const char *dir) {
  w_t w = {0};
  tg_init(&w.g);
  tg_header(&w.g);
  segment_abi(&w, 9, 0x9999, 0, 1, 1000 * MS, 7);
  comm2(&w, 1, 0x8888, 6, 1000 * MS);
  rstate(&w);
  op_on(&w, 10, 1015 * MS, 0, 0, 0, 5);
  op_on(&w, 20, 1025 * MS, 0, 0, 1, 0);
  op_on(&w, 30, 1035 * MS, 0, 0, 2, 6);
  op_on(&w, 40, 1045 * MS, 0, 0, 3, 0);
  op_on(&w, 50, 1080 * MS, 0, 0, 4, 0);
  const rr_t r1[] = {
      {NCS_RR_BEGIN, 1, 0, 1005 * MS, S_X, 0, 1},  {NCS_RR_BEGIN, 2, 0, 1010 * MS, S_STEP, 0, 2},
      {NCS_RR_BEGIN, 3, 0, 1012 * MS, S_X, 0, 3},  {NCS_RR_END, 3, 0, 1016 * MS, 0, 0, 0},
      {NCS_RR_END, 2, 0, 1020 * MS, 0, 0, 0},      {NCS_RR_BEGIN, 4, 0, 1030 * MS, S_STEP, 0, 2},
      {NCS_RR_BEGIN, 5, 9, 1032 * MS, S_SE, NCS_RF_STARTEND, 0},
      {NCS_RR_END, 5, 4, 1038 * MS, 0, NCS_RF_STARTEND, 0},
      {NCS_RR_END, 4, 0, 1040 * MS, 0, 0, 0},      {NCS_RR_BEGIN, 6, 0, 1070 * MS, S_X, 0, 2},
      {NCS_RR_END, 6, 0, 1072 * MS, 0, 0, 0},      {NCS_RR_END, 1, 0, 1100 * MS, 0, 0, 0},
      {NCS_RR_BEGIN, 7, 0, 1150 * MS, S_LOST, 0, 1}, {NCS_RR_END, 7, 0, 1160 * MS, 0, NCS_RF_END_LOST, 0},
      {NCS_RR_BEGIN, 8, 0, 1250 * MS, S_OPEN, 0, 2},
  };
  ranges(&w, r1, sizeof r1 / sizeof *r1);
  op_on(&w, 60, 1120 * MS, 0, 0, 5, 0);  /* after "x" ended: outside every range but none */
  op_on(&w, 70, 1200 * MS, 0, 0, 6, 0);  /* after "lost" began: inside it */
  op_on(&w, 80, 1300 * MS, 0, 1, 7, 0);  /* comm index 1 (ABI v6): tag unknown */
  op_on(&w, 90, 1305 * MS, 0, 0, 9, 0);  /* inside "late", read too late */
  op_on(&w, 100, 2400 * MS, 0, 0, 10, 0);
  op_on(&w, 110, 2500 * MS, 0, 0, 11, 0);
  /* more than a second after seq 10 and 11 settled: a rank's operations leave in call order
   * (kch.c's chains), so seq 9 is decided once seq 10 is; the range records come after that */
  ncs_event_t gs = {.kind = NCS_REC_START, .type = NCS_T_GROUP, .id = 120, .ts = 3700 * MS};
  put(&w, &gs);
  const rr_t r2[] = {{NCS_RR_BEGIN, 9, 0, 1301 * MS, S_LATE, 0, 3}, {NCS_RR_END, 9, 0, 1310 * MS, 0, 0, 0}};
  ranges(&w, r2, 2);
  ncs_event_t ge = {.kind = NCS_REC_STOP, .type = NCS_T_GROUP, .id = 120, .ts = 3701 * MS};
  put(&w, &ge);
  finish(&w, dir, "sel", 3800 * MS);

  ncs_job_t *j;
  uint64_t all = B(0) | B(1) | B(2) | B(3) | B(4) | B(5) | B(6) | B(7) | B(9) | B(10) | B(11);
  CHECK(kept(dir, NULL, &j) == all);
  ncs_job_free(j);
  CHECK(kept(dir, RSEL("step", 0, 0), &j) == (B(0) | B(2)));
  CHECK(j && j->sel.ranges == 2 && !j->sel.late && !j->sel.end_unknown && !j->sel.partial && !j->sel.ops_blind);
  CHECK(j && j->run.filtered_inst == 9);
  ncs_job_free(j);
  CHECK(kept(dir, RSEL("step", 2, 2), &j) == B(2));
  ncs_job_free(j);
  CHECK(kept(dir, RSEL("step", 1, 2), &j) == (B(0) | B(2)));
  ncs_job_free(j);
  CHECK(kept(dir, RSEL("x", 0, 0), &j) == (B(0) | B(1) | B(2) | B(3) | B(4))); /* nested, walked back */
  CHECK(j && j->sel.ranges == 3);
  ncs_job_free(j);
  CHECK(kept(dir, RSEL("x", 2, 2), &j) == B(0));
  ncs_job_free(j); /* the inner one */
  CHECK(kept(dir, RSEL("se", 0, 0), &j) == B(2));
  ncs_job_free(j); /* another thread's start/end */
  CHECK(kept(dir, RSEL("lost", 0, 0), &j) == (B(6) | B(7) | B(9) | B(10) | B(11)));
  CHECK(j && j->sel.end_unknown == 1);
  char text[1024];
  if (j) ncs_job_filter_text(&j->filter, text, sizeof text);
  CHECK(j && strstr(text, "1 of them never ended"));
  ncs_job_free(j);
  CHECK(kept(dir, RSEL("open", 0, 0), &j) == (B(7) | B(9) | B(10) | B(11)) && j && j->sel.end_unknown == 1);
  ncs_job_free(j);
  CHECK(kept(dir, RSEL("late", 0, 0), &j) == 0 && j && j->sel.late == 2); /* its BEGIN and END records */
  if (j) ncs_job_filter_text(&j->filter, text, sizeof text);
  CHECK(j && strstr(text, "cannot tell"));
  ncs_job_free(j);
  /* several: any of them */
  ncs_job_rsel_t two[2] = {{"step", 1, 1}, {"se", 0, 0}};
  CHECK(kept(dir, &(ncs_job_filter_t){.rsel = two, .nrsel = 2}, &j) == (B(0) | B(2)));
  ncs_job_free(j);
  /* tags: known on comm index 0 (ABI v7), unknown on index 1 */
  ncs_job_tsel_t t5 = {5, 5}, t0 = {0, 0}, t56 = {5, 6};
  CHECK(kept(dir, &(ncs_job_filter_t){.tsel = &t5, .ntsel = 1}, &j) == B(0) && j && j->sel.ops_no_tag == 1);
  ncs_job_free(j);
  CHECK(kept(dir, &(ncs_job_filter_t){.tsel = &t0, .ntsel = 1}, &j) == (all & ~(B(0) | B(2) | B(7))));
  ncs_job_free(j);
  /* a range and a tag: one operation must meet both */
  CHECK(kept(dir, &(ncs_job_filter_t){.rsel = &two[0], .nrsel = 1, .tsel = &t56, .ntsel = 1}, &j) == B(0));
  ncs_job_free(j);
  CHECK(kept(dir, &(ncs_job_filter_t){.rsel = &(ncs_job_rsel_t){"step", 2, 2}, .nrsel = 1, .tsel = &t5, .ntsel = 1}, &j) == 0);
  ncs_job_free(j);
  /* what the job cannot answer: open fails, saying why */
  char err[512];
  int why = 0;
  j = ncs_job_open(dir, &(ncs_job_opts_t){.filter = RSEL("nope", 0, 0), .why = &why}, err, sizeof err);
  CHECK(!j && why == NCS_JOB_ERR_FILTER && strstr(err, "its ranges: x, step, se, lost, open, late"));
  j = ncs_job_open(dir, &(ncs_job_opts_t){.filter = RSEL("step", 3, 3), .why = &why}, err, sizeof err);
  CHECK(!j && why == NCS_JOB_ERR_FILTER && strstr(err, "at most 2"));
}

/* two ranks of one communicator: rank 0's file has ranges, rank 1's has no RANGE_STATE (an older
 * plugin). An instance with rank 0's operation in "step" is kept; rank 1's operations cannot be
 * told, and are counted */
static void select_blind(const char *dir) {
  for (int r = 0; r < 2; r++) {
    w_t w = {0};
    tg_init(&w.g);
    tg_header(&w.g);
    segment_abi(&w, 20 + (uint64_t)r, 0x2222, r, 2, 1000 * MS, 7);
    if (!r) rstate(&w);
    for (uint64_t s = 0; s < 4; s++) op_on(&w, 10 + 10 * s, (1010 + 10 * s) * MS, 0, 0, s, 0);
    if (!r) {
      const rr_t rr[] = {{NCS_RR_BEGIN, 1, 0, 1018 * MS, S_STEP, 0, 1}, {NCS_RR_END, 1, 0, 1022 * MS, 0, 0, 0}};
      ranges(&w, rr, 2);
    }
    finish(&w, dir, r ? "b" : "a", 1200 * MS);
  }
  ncs_job_t *j;
  CHECK(kept(dir, RSEL("step", 0, 0), &j) == B(1) && j && j->sel.ops_blind == 4);
  char text[1024];
  if (j) ncs_job_filter_text(&j->filter, text, sizeof text);
  CHECK(j && strstr(text, "4 operations of files that could not"));
  ncs_job_free(j);
}

/* a long job (200 s): 2000 steps of 40 ms, one operation inside each and one between each two,
 * the range records of five steps after their operations (as the writer flushes, every 200 ms);
 * the ranges of the past are forgotten as the job goes, and every number is still right */
static void select_long(const char *dir) {
  w_t w = {0};
  tg_init(&w.g);
  tg_header(&w.g);
  segment_abi(&w, 30, 0x3030, 0, 1, 1000 * MS, 7);
  rstate(&w);
  enum { N = 2000 };
  for (uint64_t k = 0; k < N; k += 5) {
    rr_t rr[10];
    for (uint64_t i = 0; i < 5; i++) {
      uint64_t t = (1100 + 100 * (k + i)) * MS;
      rr[2 * i] = (rr_t){NCS_RR_BEGIN, 1 + k + i, 0, t, S_STEP, 0, 1};
      rr[2 * i + 1] = (rr_t){NCS_RR_END, 1 + k + i, 0, t + 40 * MS, 0, 0, 0};
      op_on(&w, 10 * (2 * (k + i) + 1), t + 20 * MS, 0, 0, 2 * (k + i), 0);
      op_on(&w, 10 * (2 * (k + i) + 2), t + 60 * MS, 0, 0, 2 * (k + i) + 1, 0);
    }
    ranges(&w, rr, 10);
  }
  finish(&w, dir, "long", (1200 + 100 * N) * MS);
  ncs_job_t *j;
  (void)kept(dir, RSEL("step", 0, 0), &j);
  int good = j && ncs_job_inst_count(j) == N && j->run.filtered_inst == N && j->sel.ranges == N && !j->sel.late;
  for (size_t i = 0; good && i < ncs_job_inst_count(j); i++) good = ncs_job_inst(j, i)->seq % 2 == 0;
  CHECK(good);
  ncs_job_free(j);
  (void)kept(dir, RSEL("step", 1500, 1500), &j);
  CHECK(j && ncs_job_inst_count(j) == 1 && ncs_job_inst(j, 0)->seq == 2 * 1499);
  ncs_job_free(j);
}

/* Waiting in call order (docs/report.md, "Per rank and instance"): rank 0 calls AllReduce #0..#2
 * at 0, 1 and 2 ms, rank 1 at 5, 6 and 7 ms; rank 1's #0 completes last (its COMPLETE is written
 * after 2 s of file time); before the chains of kch.c the model handed out #1 and #2 before #0,
 * now a rank's operations leave in call order. Each op names the rank's
 * previous one (prev_id), and the report's waiting is the union of rank 0's intervals, 7 ms
 * (taken in the order handed out it was 6: #0's part was lost to #1's), all of it caused by rank 1. */
static void waits_in_order(const char *dir) {
  for (int r = 0; r < 2; r++) {
    w_t w = {0};
    tg_init(&w.g);
    tg_header(&w.g);
    uint64_t t0 = 1000 * MS + (uint64_t)r * 5 * MS;
    segment(&w, 300 + (uint64_t)r, 0x5157, r, 2, 1000 * MS);
    for (uint64_t s = 0; s < 3; s++) coll(&w, 20 + s, t0 + s * MS, s, 0, S_F32);
    for (uint64_t s = r ? 1 : 0; s < 3; s++) stop_done(&w, NCS_T_COLL, 20 + s, t0 + 10 * MS + s, t0);
    ncs_event_t late = {.kind = NCS_REC_START, .type = NCS_T_GROUP, .id = 90, .ts = 3000 * MS};
    put(&w, &late);
    if (r) stop_done(&w, NCS_T_COLL, 20, 3000 * MS, t0);
    ncs_event_t end = {.kind = NCS_REC_STOP, .type = NCS_T_GROUP, .id = 90, .ts = 6000 * MS};
    put(&w, &end);
    finish(&w, dir, r ? "b" : "a", 6000 * MS);
  }
  ncs_job_t *j = open_job(dir);
  CHECK(ncs_job_inst_count(j) == 3);
  const ncs_inst_t *i0 = ncs_job_inst(j, 0); /* retained by seq; id: the order handed out */
  /* a rank's operations leave the model in call order (kch.c's chains: rank 1's #1 and #2 wait
   * for its #0), so the instances come in order; the waiting below must be the same either way */
  CHECK(i0 && i0->seq == 0 && i0->id == 0);
  for (size_t i = 0; i < ncs_job_op_count(j); i++) {
    const ncs_op_t *o = ncs_job_op(j, i);
    CHECK(o->prev_id == (o->seq ? 20 + o->seq - 1 : 0));
  }
  ncs_job_free(j);
  char err[256];
  ncs_analysis_t *a = ncs_analyze_path(dir, err, sizeof err);
  CHECK(a != NULL);
  for (uint32_t k = 0; a && k < a->nranks; k++) {
    const ncs_an_rank_t *r = &a->ranks[k];
    CHECK(r->wait_suffered == (r->rank == 0 ? (int64_t)(7 * MS) : 0));
    CHECK(r->wait_caused == (r->rank == 1 ? (int64_t)(7 * MS) : 0));
  }
  if (a) ncs_analysis_free(a);
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
  mkdirs(d, argv[1], "select"), select_ranges(d);
  mkdirs(d, argv[1], "blind"), select_blind(d);
  mkdirs(d, argv[1], "long"), select_long(d);
  mkdirs(d, argv[1], "waits"), waits_in_order(d);
  if (fails) return 1;
  printf("test_model: ok\n");
  return 0;
}
