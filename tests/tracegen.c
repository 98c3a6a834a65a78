/* tracegen.c - see tracegen.h */
#include "tracegen.h"

#include <stdlib.h>
#include <string.h>

const char *const tg_strings[TG_NSTRINGS + 1] = {NULL,     "AllReduce", "ncclFloat32", "Ring",
                                                 "Simple", "my comm",   "SendRecv"};

void tg_init(tg_t *g) {
  memset(g, 0, sizeof *g);
  if (ncs_buf_init(&g->file, 1 << 20) != 0 || ncs_buf_init(&g->pay, 1 << 20) != 0) abort();
}

void tg_free(tg_t *g) {
  free(g->log);
  ncs_buf_free(&g->file);
  ncs_buf_free(&g->pay);
}

void tg_header(tg_t *g) {
  uint8_t h[NCS_FILE_HEADER_LEN];
  ncs_file_header(h);
  ncs_buf_bytes(&g->file, h, sizeof h);
}

void tg_chunk(tg_t *g, uint16_t type) {
  uint8_t h[NCS_CHUNK_HEADER_LEN];
  if (g->pay.overflow) abort();
  ncs_chunk_header(h, type, g->pay.p, (uint32_t)g->pay.len);
  ncs_buf_bytes(&g->file, h, sizeof h);
  ncs_buf_bytes(&g->file, g->pay.p, g->pay.len);
  if (g->file.overflow) abort();
  ncs_buf_reset(&g->pay);
}

void tg_segment_info(ncs_segment_info_t *s, uint32_t epoch, uint64_t pid) {
  memset(s, 0, sizeof *s);
  s->format_version = NCS_FORMAT_VERSION;
  s->plugin_version = "0.1.0";
  s->host = "node1";
  s->pid = pid;
  s->epoch = epoch;
  s->mode = 0;
  s->mask = 0x7FFF;
  s->start_realtime_ns = 1700000000000000000ull + epoch;
  s->start_mono_ns = 1000000000ull * (epoch + 1);
  s->cmdline = "./train --steps 10";
  s->pool_bytes = 64u << 20;
}

void tg_comm_info(ncs_comm_info_t *c, uint32_t index, int rank) {
  memset(c, 0, sizeof *c);
  c->index = index;
  c->comm_id = 0xABCDEF0123456789ull + index;
  c->name = index ? "" : "my comm";
  c->nranks = 8;
  c->nnodes = 2;
  c->rank = rank;
  c->abi_version = 6;
  c->init_ns = 1000000500ull;
  c->mask = 0x7FFF;
}

/* Field i of a START gets a value that depends on its kind, so a decoder mixing kinds up shows. */
static void sample_fields(ncs_event_t *e) {
  const ncs_schema_t *s = &ncs_schema[e->type];
  e->nfields = s->nfields;
  for (unsigned i = 0; i < s->nfields; i++) {
    switch (s->fields[i].kind) {
    case NCS_FK_U64: e->f[i] = 1000 + i + e->id * 100; break;
    case NCS_FK_I64: e->f[i] = (uint64_t)(-(int64_t)(i + 1)); break;
    case NCS_FK_STR: e->f[i] = (i + e->type) % (TG_NSTRINGS + 1); break; /* 0 = NULL too */
    case NCS_FK_PTR: e->f[i] = 0x7f0000001000ull + i; break;
    case NCS_FK_BOOL: e->f[i] = (i + e->id) & 1; break;
    case NCS_FK_REF:
      e->fref_kind[i] = (uint8_t)((i + e->id) % 4);
      e->f[i] = 77 + i;
      break;
    }
    if (s->fields[i].kind == NCS_FK_STR) e->fstr[i] = tg_strings[e->f[i]];
  }
}

void tg_event(ncs_event_t *e, uint8_t kind, uint8_t type, uint64_t id, uint64_t ts) {
  memset(e, 0, sizeof *e);
  e->kind = kind;
  e->type = type;
  e->id = id;
  switch (kind) {
  case NCS_REC_START:
    e->thread = type % 3;
    e->ts = ts;
    e->ctx_kind = (uint8_t)(id % 4);
    /* a local context names comm 0, the one tg_segment defines */
    e->ctx = e->ctx_kind == NCS_CTX_FOREIGN ? (4242ull << 16) | 1
             : e->ctx_kind == NCS_CTX_LOCAL ? 0
                                            : id % 4;
    e->parent_kind = (uint8_t)((id + 1) % 4);
    e->parent = id > 1 ? id - 1 : 0;
    e->rank = (int32_t)(type % 8) - 1;
    e->flags = (uint32_t)(id % 8);
    sample_fields(e);
    break;
  case NCS_REC_STOP:
    e->thread = type % 3;
    e->ts = ts;
    break;
  case NCS_REC_STATE:
    e->thread = type % 3;
    e->ts = ts;
    e->state = (uint32_t)(type + id) % 31;
    e->arg0 = 4096 + id;
    e->arg1 = id * 3;
    break;
  case NCS_REC_COMPLETE:
    e->cflags = (uint32_t)(id % 32);
    e->end_ns = ts + 500;
    e->first_child_ns = ts + 10;
    e->gpu_start = 5000000000ull + id;
    e->gpu_stop = 5000000900ull + id;
    e->n_kernel_ch = 8;
    e->n_proxy_op = 2;
    e->n_open = (uint32_t)(id % 2);
    break;
  case NCS_REC_EXPIRED:
    e->reason = 1 + (uint32_t)(id % 3);
    e->start_ns = ts - 100;
    break;
  case NCS_REC_BADCALL:
    e->thread = type % 3;
    e->ts = ts;
    e->flags = id % 2 ? NCS_BC_STOP : NCS_BC_STATE;
    e->state = (uint32_t)(type + id) % 31;
    e->arg0 = 7 + id;
    e->arg1 = id;
    break;
  }
}

void tg_put_event(tg_t *g, const ncs_event_t *e) {
  if (g->nlog == g->caplog) {
    g->caplog = g->caplog ? 2 * g->caplog : 256;
    g->log = realloc(g->log, g->caplog * sizeof *g->log);
    if (!g->log) abort();
  }
  g->log[g->nlog++] = *e;
  ncs_enc_event(&g->pay, &g->ev, e);
}

/* The SEGMENT's field lists are its last bytes: every value is below 128 (one byte each). */
static size_t lists_len(void) {
  size_t n = 1;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) n += 1 + ncs_schema[t].nfields;
  return n;
}

unsigned tg_nfields_v11(unsigned type) { /* the fields format 1.3 appended, left out */
  switch (type) {
  case NCS_T_COLL: return ncs_schema[type].nfields - 3; /* kernelVariant, isSymColl, userTag */
  case NCS_T_P2P:
  case NCS_T_COLL_API:
  case NCS_T_P2P_API:
  case NCS_T_CE_COLL: return ncs_schema[type].nfields - 1; /* userTag */
  case NCS_T_KERNEL_PHASE: return 0;
  default: return ncs_schema[type].nfields;
  }
}

static void segment_rest(tg_t *g, const ncs_segment_info_t *s);

void tg_segment_raw(tg_t *g, uint32_t epoch, uint64_t pid, const ncs_buf_t *lists) {
  ncs_segment_info_t s;
  tg_segment_info(&s, epoch, pid);
  ncs_enc_segment(&g->pay, &s);
  g->pay.len -= lists_len();
  if (lists) ncs_buf_bytes(&g->pay, lists->p, lists->len);
  tg_chunk(g, NCS_CHUNK_SEGMENT);
  segment_rest(g, &s);
}

void tg_segment_lists(tg_t *g, uint32_t epoch, uint64_t pid, int extra) {
  ncs_buf_t b;
  if (ncs_buf_init(&b, 4096) != 0) abort();
  if (extra > 0) {
    ncs_buf_varint(&b, NCS_T_COUNT);
    for (unsigned t = 0; t < NCS_T_COUNT; t++) {
      ncs_buf_varint(&b, ncs_schema[t].nfields + (unsigned)extra);
      for (unsigned i = 0; i < ncs_schema[t].nfields; i++) ncs_buf_varint(&b, ncs_schema[t].fields[i].kind);
      for (int i = 0; i < extra; i++) ncs_buf_varint(&b, i & 1 ? NCS_FK_REF : NCS_FK_U64);
    }
  }
  tg_segment_raw(g, epoch, pid, extra > 0 ? &b : NULL);
  ncs_buf_free(&b);
}

void tg_put_event_lists(tg_t *g, ncs_event_t *e, int extra) {
  if (e->kind != NCS_REC_START) {
    tg_put_event(g, e);
    return;
  }
  unsigned nf = ncs_schema[e->type].nfields, keep = extra < 0 ? tg_nfields_v11(e->type) : nf;
  size_t cut = 0; /* the bytes of the fields left out, zeroed first: one byte each, two for a ref */
  for (unsigned i = keep; i < nf; i++) {
    e->f[i] = 0, e->fstr[i] = NULL, e->fref_kind[i] = 0;
    cut += ncs_schema[e->type].fields[i].kind == NCS_FK_REF ? 2 : 1;
  }
  tg_put_event(g, e);
  g->pay.len -= cut;
  for (int i = 0; i < extra; i++) {
    ncs_buf_varint(&g->pay, i & 1 ? NCS_REF_LOCAL : 300);
    if (i & 1) ncs_buf_varint(&g->pay, 5);
  }
  g->log[g->nlog - 1].nfields = (uint8_t)keep;
}

void tg_segment(tg_t *g, uint32_t epoch, uint64_t pid) {
  ncs_segment_info_t s;
  tg_segment_info(&s, epoch, pid);
  ncs_enc_segment(&g->pay, &s);
  tg_chunk(g, NCS_CHUNK_SEGMENT);
  segment_rest(g, &s);
}

/* CLOCK, STRINGS, COMM and THREAD chunks after a SEGMENT */
static void segment_rest(tg_t *g, const ncs_segment_info_t *s) {
  ncs_enc_clock(&g->pay, s->start_mono_ns, s->start_realtime_ns);
  tg_chunk(g, NCS_CHUNK_CLOCK);
  for (uint64_t id = 1; id <= TG_NSTRINGS; id++) ncs_enc_string(&g->pay, id, tg_strings[id]);
  tg_chunk(g, NCS_CHUNK_STRINGS);
  ncs_comm_info_t c;
  tg_comm_info(&c, 0, 3);
  ncs_enc_comm(&g->pay, &c);
  tg_chunk(g, NCS_CHUNK_COMM);
  for (uint32_t t = 0; t < 3; t++) {
    ncs_enc_thread(&g->pay, t, 5000 + t, t ? "nccl-proxy" : "python");
    tg_chunk(g, NCS_CHUNK_THREAD);
  }
}

uint32_t tg_all_events(tg_t *g, uint64_t base_ns, uint64_t first_id) {
  ncs_event_t e;
  uint64_t ts = base_ns, id = first_id;
  ncs_enc_events_begin(&g->pay, &g->ev, base_ns);
  for (uint8_t t = 0; t < NCS_T_COUNT; t++, id++) {
    static const uint8_t kinds[] = {NCS_REC_START, NCS_REC_STATE, NCS_REC_STOP};
    for (unsigned k = 0; k < 3; k++) {
      tg_event(&e, kinds[k], t, id, ts += 1000);
      tg_put_event(g, &e);
    }
    if (t == NCS_T_COLL || t == NCS_T_P2P) {
      tg_event(&e, NCS_REC_COMPLETE, t, id, ts);
      tg_put_event(g, &e);
      tg_event(&e, NCS_REC_EXPIRED, t, id, ts);
      tg_put_event(g, &e);
    }
  }
  uint32_t n = g->ev.count;
  ncs_enc_events_end(&g->pay, &g->ev);
  tg_chunk(g, NCS_CHUNK_EVENTS);
  return n;
}

void tg_counters(tg_t *g, uint16_t type, uint32_t nrecs) {
  ncs_counters_t c;
  memset(&c, 0, sizeof c);
  for (uint32_t t = 0; t < NCS_T_COUNT; t++) {
    c.keys[c.nkeys] = NCS_CK_STARTS | t, c.values[c.nkeys++] = 1 + t;
    c.keys[c.nkeys] = NCS_CK_STOPS | t, c.values[c.nkeys++] = 1;
    c.keys[c.nkeys] = NCS_CK_STATES | t, c.values[c.nkeys++] = 1;
  }
  c.keys[c.nkeys] = NCS_CK_DROPS | NCS_T_COLL, c.values[c.nkeys++] = 5;
  c.keys[c.nkeys] = NCS_CK_NO_THREAD_SLOT, c.values[c.nkeys++] = 2;
  c.keys[c.nkeys] = NCS_CK_BAD_HANDLE, c.values[c.nkeys++] = 3;
  c.keys[c.nkeys] = NCS_CK_COMPLETIONS, c.values[c.nkeys++] = 2;
  c.keys[c.nkeys] = NCS_CK_THREADS, c.values[c.nkeys++] = 3;
  c.keys[c.nkeys] = NCS_CK_END_NS, c.values[c.nkeys++] = 9000000000ull;
  c.keys[c.nkeys] = 0x7777, c.values[c.nkeys++] = nrecs; /* unknown key: must be ignored */
  ncs_enc_counters(&g->pay, &c);
  tg_chunk(g, type);
}

void tg_sample(tg_t *g, int nseg, int crash, uint64_t pid) {
  tg_header(g);
  for (int s = 0; s < nseg; s++) {
    tg_segment(g, (uint32_t)s, pid);
    uint64_t base = 1000000000ull * (uint64_t)(s + 1) + 1000;
    uint32_t n = tg_all_events(g, base, 1);
    tg_counters(g, NCS_CHUNK_COUNTERS, n);
    n += tg_all_events(g, base + 100000, 100);
    ncs_enc_comm_end(&g->pay, 0, base + 200000);
    tg_chunk(g, NCS_CHUNK_COMM_END);
    if (!(crash && s == nseg - 1)) tg_counters(g, NCS_CHUNK_FOOTER, n);
  }
}

/* ---- GPU chunks */

void tg_gpu_state(ncs_gpu_state_t *s) {
  memset(s, 0, sizeof *s);
  s->state = NCS_GPU_ACTIVE, s->flags = NCS_GSF_FINAL, s->since_ns = 1000000050;
  s->reason = "", s->library = "/opt/cuda/lib64/libcupti.so.13", s->api_version = 130001;
  s->holder = "", s->clock_mono_ns = 1000000060, s->clock_cupti_ns = 1700000000000000060ull;
  s->clock_width_ns = 40;
  for (unsigned k = NCS_GK_RECORDS; k <= NCS_GK_MAX; k++) s->keys[s->ncounters] = k, s->values[s->ncounters++] = 10 * k;
}

void tg_gpu_rec(ncs_gpu_rec_t *g, uint8_t kind, uint32_t i) {
  memset(g, 0, sizeof *g);
  g->kind = kind;
  g->flags = kind == NCS_GR_KERNEL ? NCS_GKF_GRAPH : kind == NCS_GR_PENDING ? NCS_GLF_GRAPH : 0;
  g->ts = 1000000100ull + 7 * i, g->thread = i % 3;
  g->corr = 50 + i, g->launch = 1000 + i, g->comm = 1 + i % 2, g->group = 900 + i;
  g->stream = kind == NCS_GR_KERNEL || kind == NCS_GR_SUMMARY ? 16 + i : 0x5a000100ull + i;
  g->start = 1700000000000001000ull + 1000ull * i, g->end = g->start + 500 + i;
  g->device = i % 8, g->name_id = kind == NCS_GR_KERNEL ? 1 : 0;
  g->graph = 3 + i, g->node = (uint64_t)(3 + i) << 32 | i, g->orig = (uint64_t)(1 + i) << 32 | i;
  g->replay = kind == NCS_GR_KERNEL ? 1 + i : 0;
  g->count = kind == NCS_GR_SUMMARY ? 40 + i : 0, g->busy_ns = kind == NCS_GR_SUMMARY ? 9000 + i : 0;
}

void tg_gpu(tg_t *g) {
  ncs_gpu_state_t s;
  tg_gpu_state(&s);
  ncs_gpu_enc_state(&g->pay, &s);
  tg_chunk(g, NCS_CHUNK_GPU_STATE);
  ncs_gpu_chunk_t c;
  ncs_gpu_enc_begin(&g->pay, &c, 1000000100, 1700000000000000900ull);
  for (uint32_t i = 0; i < 2; i++)
    for (uint8_t k = NCS_GR_KERNEL; k <= NCS_GR_MAX; k++) {
      ncs_gpu_rec_t r;
      tg_gpu_rec(&r, k, i);
      ncs_gpu_enc_rec(&g->pay, &c, &r);
    }
  ncs_gpu_enc_end(&g->pay, &c);
  tg_chunk(g, NCS_CHUNK_GPU);
}

/* RANGE_STATE and a RANGES chunk with one record of every kind (format 1.4): names and domains
 * from the segment's STRINGS, one name never defined */
void tg_ranges(tg_t *g) {
  ncs_range_state_t s;
  memset(&s, 0, sizeof s);
  static const char *const metrics[] = {"gpu__time_duration.sum", "dram__bytes_read.sum"};
  static const uint32_t keys[] = {NCS_RK_BEGUN, NCS_RK_ENDED, NCS_RK_MARKS, NCS_RK_FORWARDED, 999};
  s.flags = NCS_RSF_FINAL, s.nvtx = NCS_NVTX_OURS, s.nvtx_path = "libnccl-profiler-ncclscope.so";
  s.mx_state = NCS_HWM_ACTIVE, s.since_ns = 1000000050, s.reason = "", s.chip = "GH100";
  s.passes = 1, s.level = 1, s.mx_thread = 1, s.buffer_ranges = 512, s.nmetrics = 2;
  for (uint32_t i = 0; i < 2; i++) s.metric[i] = metrics[i], s.metric_type[i] = NCS_MT_COUNTER;
  s.ncounters = 5;
  for (uint32_t i = 0; i < 5; i++) s.keys[i] = keys[i], s.values[i] = i + 1;
  ncs_range_enc_state(&g->pay, &s);
  tg_chunk(g, NCS_CHUNK_RANGE_STATE);
  ncs_range_chunk_t c;
  ncs_range_enc_begin(&g->pay, &c, 1000000100);
  for (uint8_t k = NCS_RR_BEGIN; k <= NCS_RR_MAX; k++) {
    ncs_range_rec_t r;
    memset(&r, 0, sizeof r);
    r.kind = k, r.thread = 0, r.ts = 1000000100 + 10u * k, r.id = 7, r.depth = 1;
    r.name_id = k == NCS_RR_MARK ? TG_NSTRINGS + 5 : 1, r.domain_id = k == NCS_RR_MARK ? 2 : 0;
    r.payload_type = NCS_PAYLOAD_U64, r.payload = 42, r.category = 3;
    r.mid = 1, r.corr = 99, r.nvalues = 2, r.values[0] = 1.5e6, r.values[1] = 4096;
    if (k == NCS_RR_METRICS) r.flags = NCS_RF_REPLAY;
    ncs_range_enc_rec(&g->pay, &c, &r);
  }
  ncs_range_enc_end(&g->pay, &c);
  tg_chunk(g, NCS_CHUNK_RANGES);
}

