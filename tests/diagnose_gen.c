/* diagnose_gen.c - craft the recordings of a 4-rank job that hangs, for `ncclscope diagnose`
 * tests that do not depend on nccl-sim (tests/diagnose_check.sh, case gen-*).
 *
 *   ncs-diagnose-gen OUTDIR CASE MODE
 *
 * CASE: healthy | skip | stall | mismatch | kill | gone (rank 2's process wrote its communicator and
 * no operation, no footer, its file ending 1.01 s before the others', while the others completed
 * #0..#4, which need it: its records are missing) | kernel (stall with KernelCh only: every kernel
 * started, the stalled rank's 3 ms after the others', which tells nothing) | nokernel (KernelCh
 * only, and the stalled rank's kernel of the hung op never started) | p2p (rank 1
 * never posts the Recv that rank 0's Send waits in) | cupti (stall, recorded with CUPTI: every
 * operation has its GroupApi, CollApi and KernelLaunch, and CUPTI's LAUNCH and KERNEL records; in
 * the hung #5 rank 0's kernel completed, the kernels of ranks 2 and 3 were launched before the
 * last CUPTI flush and never completed, rank 1 launched after it). MODE: trace (one .nstrace per process, with
 * the flush records the writer emits at exit) or flight (live .nsflight files and, for a hang,
 * a watchdog incident of dumps in OUTDIR/dumps; a killed process has only its live file, still
 * "running", with an old heartbeat) or jobkill (traces without footers that all stop together: the
 * hung job was killed as a whole).
 *
 * Every rank runs AllReduce #0..#4 over a ring (KernelCh on channel 0, a send ProxyOp to the next
 * rank and a receive ProxyOp from the previous one, two ProxySteps each); the fault hits #5.
 * Times: op i starts at T0 + i ms; the hang starts at T0 + 5 ms; traces end 3 s later; dumps are
 * taken 1.2 s after it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace/flight.h"
#include "tracegen.h"

#define NR 4
#define FOP 5 /* the op the fault hits */
#define T0 100000000000ull
#define REAL 1700000000000000000ull
#define MS 1000000ull
#define COMM_ID 0x1111222233334444ull
#define HANG_END (T0 + FOP * MS + 3000 * MS)
#define DUMP_AT (T0 + FOP * MS + 1200 * MS)

enum { S_ALLREDUCE = 1, S_FLOAT, S_RING, S_SIMPLE, S_SEND, S_RECV, S_INT8, S_KNAME, NSTR };
static const char *const strs[NSTR] = {NULL, "AllReduce", "ncclFloat32", "RING", "SIMPLE", "Send", "Recv", "ncclInt8",
                                       "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
#define CUPTI_OFF 7000000000ull /* CUPTI time - monotonic (cupti case) */
static uint64_t coll_parent; /* cupti case: the CollApi of the next Coll */

static const char *kase, *mode;
static int fault_rank = -1;

typedef struct {
  tg_t meta, body;
  int rank;
  uint64_t ts_last;
  int open_chunk;
} gen_t;

static void ev_begin(gen_t *g, uint64_t base) {
  if (!g->open_chunk) {
    ncs_enc_events_begin(&g->body.pay, &g->body.ev, base);
    g->open_chunk = 1;
  }
}

static void ev_flush(gen_t *g) {
  if (!g->open_chunk) return;
  ncs_enc_events_end(&g->body.pay, &g->body.ev);
  tg_chunk(&g->body, NCS_CHUNK_EVENTS);
  g->open_chunk = 0;
}

static void put(gen_t *g, const ncs_event_t *e) {
  ev_begin(g, e->ts ? e->ts : g->ts_last);
  ncs_enc_event(&g->body.pay, &g->body.ev, e);
  if (e->ts) g->ts_last = e->ts;
}

static void coll_start(gen_t *g, uint64_t id, uint64_t ts, uint64_t seq, uint64_t count, uint64_t dtype) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = NCS_T_COLL, e.id = id, e.ts = ts, e.thread = 0;
  e.ctx_kind = NCS_CTX_LOCAL, e.ctx = 0, e.rank = g->rank;
  if (coll_parent) e.parent_kind = NCS_REF_LOCAL, e.parent = coll_parent;
  e.nfields = ncs_schema[NCS_T_COLL].nfields;
  e.f[NCS_F(Coll, seqNumber)] = seq, e.f[NCS_F(Coll, func)] = S_ALLREDUCE, e.f[NCS_F(Coll, count)] = count;
  e.f[NCS_F(Coll, root)] = 0, e.f[NCS_F(Coll, datatype)] = dtype, e.f[NCS_F(Coll, nChannels)] = 1;
  e.f[NCS_F(Coll, algo)] = S_RING, e.f[NCS_F(Coll, proto)] = S_SIMPLE;
  put(g, &e);
}

static void p2p_start(gen_t *g, uint64_t id, uint64_t ts, uint64_t func, int peer) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = NCS_T_P2P, e.id = id, e.ts = ts, e.thread = 0;
  e.ctx_kind = NCS_CTX_LOCAL, e.ctx = 0, e.rank = g->rank;
  e.nfields = ncs_schema[NCS_T_P2P].nfields;
  e.f[NCS_F(P2p, func)] = func, e.f[NCS_F(P2p, datatype)] = S_INT8, e.f[NCS_F(P2p, count)] = 4096;
  e.f[NCS_F(P2p, peer)] = (uint64_t)(int64_t)peer, e.f[NCS_F(P2p, nChannels)] = 1;
  put(g, &e);
}

static void kernel_start(gen_t *g, uint64_t id, uint64_t ts, uint64_t parent) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = NCS_T_KERNEL_CH, e.id = id, e.ts = ts, e.thread = 1;
  e.ctx_kind = NCS_CTX_LOCAL, e.parent_kind = NCS_REF_LOCAL, e.parent = parent;
  e.nfields = ncs_schema[NCS_T_KERNEL_CH].nfields;
  e.f[NCS_F(KernelCh, channelId)] = 0, e.f[NCS_F(KernelCh, pTimer)] = ts + 500000;
  put(g, &e);
}

/* cupti case: GroupApi, CollApi and KernelLaunch of op id (ids id+50..52), and CUPTI's records:
 * the LAUNCH, and the KERNEL when `done` */
static void api_events(gen_t *g, uint64_t id, uint64_t ts) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = NCS_T_GROUP_API, e.id = id + 50, e.ts = ts - 2000, e.thread = 0;
  e.ctx_kind = NCS_CTX_LOCAL, e.nfields = ncs_schema[NCS_T_GROUP_API].nfields;
  put(g, &e);
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = NCS_T_COLL_API, e.id = id + 51, e.ts = ts - 1000, e.thread = 0;
  e.ctx_kind = NCS_CTX_LOCAL, e.parent_kind = NCS_REF_LOCAL, e.parent = id + 50;
  e.nfields = ncs_schema[NCS_T_COLL_API].nfields;
  e.f[NCS_F(CollApi, func)] = S_ALLREDUCE, e.f[NCS_F(CollApi, count)] = 262144;
  e.f[NCS_F(CollApi, datatype)] = S_FLOAT;
  put(g, &e);
  coll_parent = id + 51;
}

static void launch_events(gen_t *g, uint64_t id, uint64_t ts, int done) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = NCS_T_KERNEL_LAUNCH, e.id = id + 52, e.ts = ts, e.thread = 0;
  e.ctx_kind = NCS_CTX_LOCAL, e.parent_kind = NCS_REF_LOCAL, e.parent = id + 50;
  e.nfields = ncs_schema[NCS_T_KERNEL_LAUNCH].nfields;
  put(g, &e);
  ev_flush(g);
  ncs_gpu_chunk_t c;
  ncs_gpu_enc_begin(&g->body.pay, &c, ts, ts + CUPTI_OFF);
  ncs_gpu_rec_t r;
  memset(&r, 0, sizeof r);
  r.kind = NCS_GR_LAUNCH, r.ts = ts + 100, r.corr = id, r.launch = id + 52, r.comm = 1, r.group = id + 50;
  r.stream = 0x5a000000ull + (uint64_t)g->rank;
  ncs_gpu_enc_rec(&g->body.pay, &c, &r);
  if (done) {
    memset(&r, 0, sizeof r);
    r.kind = NCS_GR_KERNEL, r.flags = NCS_GKF_EAGER, r.corr = id, r.launch = id + 52;
    r.start = ts + 5000 + CUPTI_OFF, r.end = ts + 250000 + CUPTI_OFF, r.device = (uint32_t)g->rank;
    r.stream = 7, r.name_id = S_KNAME;
    ncs_gpu_enc_rec(&g->body.pay, &c, &r);
  }
  ncs_gpu_enc_end(&g->body.pay, &c);
  tg_chunk(&g->body, NCS_CHUNK_GPU);
}

static void gpu_state(gen_t *g, uint64_t mono, uint64_t flush_ns, int final) {
  ev_flush(g);
  ncs_gpu_state_t s;
  memset(&s, 0, sizeof s);
  s.state = NCS_GPU_ACTIVE, s.flags = final ? NCS_GSF_FINAL : 0, s.since_ns = T0 - 9 * MS;
  s.reason = "", s.library = "libcupti.so.13", s.holder = "", s.api_version = 130001;
  s.clock_mono_ns = mono, s.clock_cupti_ns = mono + CUPTI_OFF, s.clock_width_ns = 40;
  s.keys[s.ncounters] = NCS_GK_FLUSH_NS, s.values[s.ncounters++] = flush_ns;
  ncs_gpu_enc_state(&g->body.pay, &s);
  tg_chunk(&g->body, NCS_CHUNK_GPU_STATE);
}

static void pop_start(gen_t *g, uint64_t id, uint64_t ts, uint64_t parent, int peer, int send) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = NCS_T_PROXY_OP, e.id = id, e.ts = ts, e.thread = 1;
  e.ctx_kind = NCS_CTX_LOCAL, e.parent_kind = NCS_REF_LOCAL, e.parent = parent, e.rank = g->rank;
  e.nfields = ncs_schema[NCS_T_PROXY_OP].nfields;
  e.f[NCS_F(ProxyOp, pid)] = 1000 + (uint64_t)g->rank, e.f[NCS_F(ProxyOp, channelId)] = 0;
  e.f[NCS_F(ProxyOp, peer)] = (uint64_t)(int64_t)peer, e.f[NCS_F(ProxyOp, nSteps)] = 2;
  e.f[NCS_F(ProxyOp, chunkSize)] = 65536, e.f[NCS_F(ProxyOp, isSend)] = (uint64_t)send;
  put(g, &e);
}

static void step_start(gen_t *g, uint64_t id, uint64_t ts, uint64_t parent, int step) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_START, e.type = NCS_T_PROXY_STEP, e.id = id, e.ts = ts, e.thread = 1;
  e.ctx_kind = NCS_CTX_LOCAL, e.parent_kind = NCS_REF_LOCAL, e.parent = parent, e.rank = g->rank;
  e.nfields = NCS_NF(ProxyStep);
  e.f[NCS_F(ProxyStep, step)] = (uint64_t)step;
  put(g, &e);
}

static void state(gen_t *g, uint8_t type, uint64_t id, uint64_t ts, uint32_t st) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_STATE, e.type = type, e.id = id, e.ts = ts, e.thread = 1, e.state = st;
  put(g, &e);
}

static void stop(gen_t *g, uint8_t type, uint64_t id, uint64_t ts) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_STOP, e.type = type, e.id = id, e.ts = ts, e.thread = type == NCS_T_COLL ? 0 : 1;
  put(g, &e);
}

static void complete(gen_t *g, uint8_t type, uint64_t id, uint64_t end, uint32_t flags) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_COMPLETE, e.type = type, e.id = id, e.cflags = flags, e.end_ns = end;
  e.first_child_ns = end - 1000, e.n_kernel_ch = 1, e.n_proxy_op = 2;
  put(g, &e);
}

static void expired(gen_t *g, uint8_t type, uint64_t id, uint64_t start_ns) {
  ncs_event_t e;
  memset(&e, 0, sizeof e);
  e.kind = NCS_REC_EXPIRED, e.type = type, e.id = id, e.reason = NCS_XR_FLUSH, e.start_ns = start_ns;
  put(g, &e);
}

static void clock_pair(gen_t *g, uint64_t mono) {
  ev_flush(g);
  ncs_enc_clock(&g->body.pay, mono, mono + REAL + 12345);
  tg_chunk(&g->body, NCS_CHUNK_CLOCK);
}

static uint64_t steps_dropped; /* "lost": the ProxyStep records the stalled rank's plugin dropped */

static void counters(gen_t *g, uint16_t type, uint64_t end) {
  ev_flush(g);
  ncs_counters_t c;
  memset(&c, 0, sizeof c);
  c.keys[c.nkeys] = NCS_CK_END_NS, c.values[c.nkeys++] = end;
  if (g->rank == fault_rank && steps_dropped)
    c.keys[c.nkeys] = NCS_CK_DROPS | NCS_T_PROXY_STEP, c.values[c.nkeys++] = steps_dropped;
  ncs_enc_counters(&g->body.pay, &c);
  tg_chunk(&g->body, type);
}

static void meta(gen_t *g, uint64_t pid) {
  tg_header(&g->meta);
  ncs_segment_info_t s;
  memset(&s, 0, sizeof s);
  s.format_version = 1, s.plugin_version = "0.1.0", s.host = "node1", s.pid = pid;
  s.mode = !strcmp(mode, "flight") ? NCS_MODE_FLIGHT : NCS_MODE_TRACE, s.mask = 0x7FFF;
  s.start_mono_ns = T0 - 10 * MS, s.start_realtime_ns = T0 - 10 * MS + REAL + 12345;
  s.cmdline = "gen";
  ncs_enc_segment(&g->meta.pay, &s);
  tg_chunk(&g->meta, NCS_CHUNK_SEGMENT);
  for (uint64_t i = 1; i < NSTR; i++) ncs_enc_string(&g->meta.pay, i, strs[i]);
  tg_chunk(&g->meta, NCS_CHUNK_STRINGS);
  ncs_comm_info_t c;
  memset(&c, 0, sizeof c);
  c.index = 0, c.comm_id = COMM_ID, c.name = "gen-comm", c.nranks = NR, c.nnodes = NR;
  c.rank = g->rank, c.abi_version = 6, c.init_ns = T0 - 5 * MS, c.mask = 0x7FFF, c.device = -1, c.bus_id = "";
  ncs_enc_comm(&g->meta.pay, &c);
  tg_chunk(&g->meta, NCS_CHUNK_COMM);
}

/* One rank's events. final: the process reached its end (flush records, footer); else the
 * recording stops at DUMP_AT (a dump). */
static void gen_rank(gen_t *g, int final) {
  int r = g->rank, next = (r + 1) % NR, prev = (r + NR - 1) % NR;
  int hang = strcmp(kase, "healthy") != 0 && strcmp(kase, "orphan") != 0;
  int kernel_only = !strcmp(kase, "kernel") || !strcmp(kase, "nokernel"), cupti = !strcmp(kase, "cupti");
  /* nokernel: the stalled rank entered the hung op, but its kernel never started */
  int no_kernel = !strcmp(kase, "nokernel") && r == fault_rank;
  int nops = hang ? FOP + 1 : 8;
  clock_pair(g, T0 - 5 * MS);
  if (cupti) gpu_state(g, T0 - 5 * MS, 0, 0);
  if (!strcmp(kase, "p2p")) {
    /* ranks 0 and 1: a healthy AllReduce #0, then rank 0 sends to 1, which never receives */
    nops = 1;
  }
  if (!strcmp(kase, "gone") && r == fault_rank) {
    /* killed before its writer wrote any operation: its communicator, then a clock pair 1.01 s
     * before the others' end, no footer, while the others completed #0..#4 with it */
    clock_pair(g, HANG_END - 1010 * MS);
    return;
  }
  for (int i = 0; i < nops; i++) {
    uint64_t t = T0 + (uint64_t)i * MS + (uint64_t)r * 10000, id = 100 * (uint64_t)i + 1;
    int is_fault = hang && i == FOP;
    if (is_fault && (r == fault_rank) && (!strcmp(kase, "skip") || !strcmp(kase, "kill"))) break;
    uint64_t count = is_fault && r == fault_rank && !strcmp(kase, "mismatch") ? 1024 : 262144;
    if (cupti) api_events(g, id, t);
    coll_start(g, id, t, (uint64_t)i, count, S_FLOAT);
    coll_parent = 0;
    if (cupti) launch_events(g, id, t + 10000, !is_fault || r == 0);
    /* kernel case: the stalled rank's kernel starts 3 ms late, the others' wait for it */
    if (!(is_fault && no_kernel))
      kernel_start(g, id + 1, t + (kernel_only && is_fault && r == fault_rank ? 3 * MS : 20000), id);
    if (!kernel_only) {
      pop_start(g, id + 2, t + 30000, id, next, 1);
      pop_start(g, id + 3, t + 31000, id, prev, 0);
      state(g, NCS_T_PROXY_OP, id + 2, t + 32000, 19);
      state(g, NCS_T_PROXY_OP, id + 3, t + 33000, 19);
    }
    stop(g, NCS_T_COLL, id, t + 40000);
    if (!strcmp(kase, "orphan") && r == 2 && i == 3) continue; /* its completion records lost */
    if (!is_fault) {
      if (!kernel_only)
        for (int s = 0; s < 2; s++) {
          uint64_t ts = t + 50000 + (uint64_t)s * 100000;
          step_start(g, id + 4 + (uint64_t)s, ts, id + 2, s);
          state(g, NCS_T_PROXY_STEP, id + 4 + (uint64_t)s, ts + 1000, 8);
          state(g, NCS_T_PROXY_STEP, id + 4 + (uint64_t)s, ts + 2000, 9);
          stop(g, NCS_T_PROXY_STEP, id + 4 + (uint64_t)s, ts + 30000);
          step_start(g, id + 6 + (uint64_t)s, ts + 500, id + 3, s);
          state(g, NCS_T_PROXY_STEP, id + 6 + (uint64_t)s, ts + 1500, 10);
          state(g, NCS_T_PROXY_STEP, id + 6 + (uint64_t)s, ts + 20000, 11);
          state(g, NCS_T_PROXY_STEP, id + 6 + (uint64_t)s, ts + 25000, 12);
          stop(g, NCS_T_PROXY_STEP, id + 6 + (uint64_t)s, ts + 40000);
        }
      if (!kernel_only) {
        stop(g, NCS_T_PROXY_OP, id + 2, t + 300000);
        stop(g, NCS_T_PROXY_OP, id + 3, t + 310000);
      }
      state(g, NCS_T_KERNEL_CH, id + 1, t + 320000, 22);
      stop(g, NCS_T_KERNEL_CH, id + 1, t + 320000);
      complete(g, NCS_T_COLL, id, t + 320000, kernel_only ? NCS_CF_KERNEL : NCS_CF_KERNEL | NCS_CF_PROXY);
      continue;
    }
    if (kernel_only) {
      /* NVLink-like: only kernels; the stalled rank's kernel started last */
      continue;
    }
    /* the hung op: step 0 of each side. The stalled rank's send freezes in SendWait early;
     * everyone else waits in RecvWait for its previous rank, later. */
    int stalled = (!strcmp(kase, "stall") || !strcmp(kase, "lost") || cupti) && r == fault_rank;
    uint64_t base = t + 50000, late = stalled ? 0 : 2 * MS + (uint64_t)r * 100000;
    step_start(g, id + 4, base, id + 2, 0);
    state(g, NCS_T_PROXY_STEP, id + 4, base + 1000, 8);
    if (stalled) state(g, NCS_T_PROXY_STEP, id + 4, base + 2000, 9);
    step_start(g, id + 6, base + 500, id + 3, 0);
    state(g, NCS_T_PROXY_STEP, id + 6, base + 1500 + late, 10);
  }
  if (!strcmp(kase, "p2p") && r <= 1) {
    uint64_t t = T0 + FOP * MS, id = 1001;
    if (r == 0) {
      p2p_start(g, id, t, S_SEND, 1);
      pop_start(g, id + 2, t + 30000, id, 1, 1);
      step_start(g, id + 4, t + 50000, id + 2, 0);
      state(g, NCS_T_PROXY_STEP, id + 4, t + 51000, 20); /* SendPeerWait: no clear-to-send */
      stop(g, NCS_T_P2P, id, t + 40000);
    }
  }
  if (!strcmp(kase, "kill") && r == fault_rank) {
    /* dies: the last chunks are the ones written so far, then a torn one */
    clock_pair(g, T0 + FOP * MS - 1 * MS);
    return;
  }
  if (!final) {
    ev_flush(g);
    clock_pair(g, DUMP_AT - 300 * MS);
    /* a dump restates CUPTI's state too: the last successful flush, 1 s after the hung op's
     * launches, but before rank 1's (as in the trace) */
    if (cupti) gpu_state(g, DUMP_AT - 300 * MS, r == 1 ? T0 + FOP * MS : T0 + FOP * MS + 1000 * MS, 0);
    counters(g, NCS_CHUNK_COUNTERS, DUMP_AT - 100 * MS);
    return;
  }
  uint64_t end = hang ? HANG_END : T0 + 10 * MS;
  clock_pair(g, end - 1000);
  /* the last successful flush: after every launch, but before rank 1's in the hung op */
  if (cupti) gpu_state(g, end - 1000, r == 1 ? T0 + FOP * MS : end - 2000, 1);
  if (hang) {
    /* what the writer emits at the end of the segment for what is still open */
    uint64_t id = 100 * FOP + 1, t = T0 + FOP * MS + (uint64_t)r * 10000;
    int entered = !(r == fault_rank && (!strcmp(kase, "skip") || !strcmp(kase, "kill")));
    if (!strcmp(kase, "p2p")) entered = 0;
    if (entered) {
      if (!no_kernel) expired(g, NCS_T_KERNEL_CH, id + 1, t + 20000);
      if (!kernel_only) {
        expired(g, NCS_T_PROXY_OP, id + 2, t + 30000);
        expired(g, NCS_T_PROXY_OP, id + 3, t + 31000);
      }
      complete(g, NCS_T_COLL, id, t + 31000, NCS_CF_KERNEL | NCS_CF_FORCED);
    }
    if (!strcmp(kase, "p2p") && r == 0) {
      expired(g, NCS_T_PROXY_OP, 1003, t + 30000);
      complete(g, NCS_T_P2P, 1001, t + 30000, NCS_CF_PROXY | NCS_CF_FORCED);
    }
  }
  ev_flush(g);
  ncs_enc_comm_end(&g->body.pay, 0, end - 500);
  tg_chunk(&g->body, NCS_CHUNK_COMM_END);
  counters(g, NCS_CHUNK_FOOTER, end);
}

static void write_file(const char *path, const void *a, size_t an, const void *b, size_t bn) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(a, 1, an, f) != an || (bn && fwrite(b, 1, bn, f) != bn) || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
}

static void write_flight(const char *path, gen_t *g, uint32_t state_, uint64_t pid, uint64_t hb_mono,
                         uint32_t reason, uint64_t dump_mono, uint64_t trig_real, const char *trigger) {
  size_t meta_cap = 1 << 20, slot = g->body.file.len + NCS_FLIGHT_SLOT_HDR + 4096;
  size_t len = NCS_FLIGHT_HDR_LEN + meta_cap + slot;
  uint8_t *img = calloc(1, len);
  ncs_flight_hdr_t h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, NCS_FLIGHT_MAGIC, 8);
  h.version = NCS_FLIGHT_VERSION, h.hdr_len = NCS_FLIGHT_HDR_LEN, h.file_len = len;
  h.meta_off = NCS_FLIGHT_HDR_LEN, h.meta_cap = meta_cap, h.meta_len = g->meta.file.len;
  h.ring_off = NCS_FLIGHT_HDR_LEN + meta_cap, h.slot_bytes = (uint32_t)slot, h.nslots = 1, h.next_seq = 2;
  h.state = state_, h.pid = pid;
  h.heartbeat_mono = hb_mono, h.heartbeat_real = hb_mono + REAL + 12345;
  h.last_event_mono = g->ts_last;
  h.dump_reason = reason;
  if (dump_mono) {
    h.dump_mono = dump_mono, h.dump_real = dump_mono + REAL + 12345, h.dump_index = 1;
    h.trigger_real = trig_real;
  }
  h.watchdog_ns = 1000000000ull;
  snprintf(h.trigger, sizeof h.trigger, "%s", trigger ? trigger : "");
  snprintf(h.host, sizeof h.host, "node1");
  memcpy(img, &h, sizeof h);
  memcpy(img + h.meta_off, g->meta.file.p, g->meta.file.len);
  ncs_flight_slot_t s;
  memset(&s, 0, sizeof s);
  s.seq = 1, s.used = (uint32_t)g->body.file.len, s.kf_len = 0, s.first_mono = T0, s.last_mono = g->ts_last;
  memcpy(img + h.ring_off, &s, sizeof s);
  memcpy(img + h.ring_off + NCS_FLIGHT_SLOT_HDR, g->body.file.p, g->body.file.len);
  write_file(path, img, len, NULL, 0);
  free(img);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: ncs-diagnose-gen OUTDIR CASE MODE\n");
    return 2;
  }
  const char *out = argv[1];
  kase = argv[2], mode = argv[3];
  if (!strcmp(kase, "skip") || !strcmp(kase, "kill") || !strcmp(kase, "gone")) fault_rank = 2;
  else if (!strcmp(kase, "stall") || !strcmp(kase, "kernel") || !strcmp(kase, "nokernel") || !strcmp(kase, "cupti"))
    fault_rank = 1;
  else if (!strcmp(kase, "lost")) fault_rank = 1, steps_dropped = 7; /* stall, and its drops */
  else if (!strcmp(kase, "mismatch")) fault_rank = 3;
  else if (strcmp(kase, "healthy") && strcmp(kase, "p2p") && strcmp(kase, "orphan")) {
    fprintf(stderr, "unknown case %s\n", kase);
    return 2;
  }
  int flight = !strcmp(mode, "flight"), jobkill = !strcmp(mode, "jobkill");
  if (!flight && !jobkill && strcmp(mode, "trace")) {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  mkdir(out, 0755);
  char dd[1024];
  snprintf(dd, sizeof dd, "%s/dumps", out);
  int hang = strcmp(kase, "healthy") != 0 && strcmp(kase, "orphan") != 0;
  if (flight && hang) mkdir(dd, 0755);
  for (int r = 0; r < NR; r++) {
    uint64_t pid = 1000 + (uint64_t)r;
    for (int final = 1; final >= 0; final--) {
      if (jobkill && final) continue; /* the recordings end like dumps: no flush, no footer */
      if (!final && !jobkill && (!flight || !hang)) continue;
      int dead = !strcmp(kase, "kill") && r == fault_rank;
      if (!final && dead && !jobkill) continue; /* a dead process does not dump */
      gen_t g;
      memset(&g, 0, sizeof g);
      g.rank = r;
      tg_init(&g.meta);
      tg_init(&g.body);
      meta(&g, pid);
      gen_rank(&g, final);
      ev_flush(&g);
      char path[1200];
      if (!flight || jobkill) {
        snprintf(path, sizeof path, "%s/node1-%d.nstrace", out, (int)pid);
        static const uint8_t torn[] = {0x43, 0x48, 0x4E, 0x4B, 7, 0, 0, 0, 200, 0, 0, 0, 1, 2, 3, 4, 9, 9};
        if (dead) { /* a torn last chunk: the process died while writing */
          ncs_buf_bytes(&g.body.file, torn, sizeof torn);
        }
        write_file(path, g.meta.file.p, g.meta.file.len, g.body.file.p, g.body.file.len);
      } else if (final) {
        snprintf(path, sizeof path, "%s/node1-%d.nsflight", out, (int)pid);
        uint64_t hb = dead ? T0 + FOP * MS - 50 * MS : hang ? HANG_END + 200 * MS : T0 + 10 * MS;
        int dumped = hang && !dead;
        write_flight(path, &g, dead ? NCS_FS_RUNNING : NCS_FS_EXITED, pid, hb, dumped ? NCS_DR_WATCHDOG : 0,
                     dumped ? DUMP_AT + 2 * MS : 0, dumped ? DUMP_AT - 50 * MS + REAL : 0,
                     dumped ? "watchdog node1-1000" : "");
      } else {
        snprintf(path, sizeof path, "%s/node1-%d-1.nsflight", dd, (int)pid);
        uint64_t at = DUMP_AT + (uint64_t)r * MS;
        char trig[128];
        snprintf(trig, sizeof trig, "watchdog node1-1000 %llu", (unsigned long long)(DUMP_AT - 50 * MS + REAL));
        write_flight(path, &g, NCS_FS_DUMP, pid, at, r == 0 ? NCS_DR_WATCHDOG : NCS_DR_REQUEST, at,
                     DUMP_AT - 50 * MS + REAL + 12345, trig);
      }
      tg_free(&g.meta);
      tg_free(&g.body);
    }
  }
  return 0;
}
