/* otf2_read.c - reads an archive of `ncclscope export --format otf2` back with the OTF2 reader
 * API (libotf2) and checks it against the job model of the same traces (docs/otf2.md):
 *   - every location's Enter and Leave balance;
 *   - one collective end per collective of the model with an OTF2 operation, one MpiRecv per
 *     paired receive and one MpiSend per paired send;
 *   - the sum of collective end times is the sum of the model's end times of those operations
 *     (GPU kernel stop when the model has kernel times, else completion, else enqueue);
 *   - every event lies in [global offset, global offset + trace length], and both bounds are hit.
 * usage: otf2_read ARCHIVE/traces.otf2 TRACE_DIR [comm=0xID] [ranks=R,R] [from=NS] [to=NS];
 * the filter (export --comm/--rank/--from/--to) is the model's, so an archive exported with it
 * is checked against the operations that passed. Prints "otf2_read: ok" and the counts. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

#include "analyze/analyze.h"
#include "export/otf2_int.h"

typedef struct {
  uint64_t enters, leaves, cbegin, cend, sends, recvs, metrics, events;
  uint64_t min_t, max_t, end_sum, offset, length, nlocs;
} counts_t;

static void seen(counts_t *c, OTF2_TimeStamp t) {
  c->events++;
  if (t < c->min_t) c->min_t = t;
  if (t > c->max_t) c->max_t = t;
}
static OTF2_CallbackCode on_enter(OTF2_LocationRef l, OTF2_TimeStamp t, void *u,
                                  OTF2_AttributeList *a, OTF2_RegionRef r) {
  (void)l, (void)a, (void)r;
  ((counts_t *)u)->enters++, seen(u, t);
  return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode on_leave(OTF2_LocationRef l, OTF2_TimeStamp t, void *u,
                                  OTF2_AttributeList *a, OTF2_RegionRef r) {
  (void)l, (void)a, (void)r;
  ((counts_t *)u)->leaves++, seen(u, t);
  return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode on_cbegin(OTF2_LocationRef l, OTF2_TimeStamp t, void *u,
                                   OTF2_AttributeList *a) {
  (void)l, (void)a;
  ((counts_t *)u)->cbegin++, seen(u, t);
  return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode on_cend(OTF2_LocationRef l, OTF2_TimeStamp t, void *u,
                                 OTF2_AttributeList *a, OTF2_CollectiveOp op, OTF2_CommRef c,
                                 uint32_t root, uint64_t s, uint64_t r) {
  (void)l, (void)a, (void)op, (void)c, (void)root, (void)s, (void)r;
  counts_t *k = u;
  k->cend++, k->end_sum += t, seen(u, t);
  return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode on_send(OTF2_LocationRef l, OTF2_TimeStamp t, void *u,
                                 OTF2_AttributeList *a, uint32_t peer, OTF2_CommRef c,
                                 uint32_t tag, uint64_t n) {
  (void)l, (void)a, (void)peer, (void)c, (void)tag, (void)n;
  ((counts_t *)u)->sends++, seen(u, t);
  return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode on_recv(OTF2_LocationRef l, OTF2_TimeStamp t, void *u,
                                 OTF2_AttributeList *a, uint32_t peer, OTF2_CommRef c,
                                 uint32_t tag, uint64_t n) {
  (void)l, (void)a, (void)peer, (void)c, (void)tag, (void)n;
  ((counts_t *)u)->recvs++, seen(u, t);
  return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode on_metric(OTF2_LocationRef l, OTF2_TimeStamp t, void *u,
                                   OTF2_AttributeList *a, OTF2_MetricRef m, uint8_t n,
                                   const OTF2_Type *ty, const OTF2_MetricValue *v) {
  (void)l, (void)a, (void)m, (void)n, (void)ty, (void)v;
  ((counts_t *)u)->metrics++, seen(u, t);
  return OTF2_CALLBACK_SUCCESS;
}
static OTF2_CallbackCode on_clock(void *u, uint64_t res, uint64_t off, uint64_t len,
                                  uint64_t real) {
  (void)real;
  counts_t *c = u;
  if (res != 1000000000ull) fprintf(stderr, "otf2_read: timer resolution %" PRIu64 "\n", res);
  c->offset = off, c->length = len;
  return OTF2_CALLBACK_SUCCESS;
}
struct locs {
  OTF2_Reader *r;
  uint64_t n, l[1 << 16];
};
static OTF2_CallbackCode on_location(void *u, OTF2_LocationRef l, OTF2_StringRef n,
                                     OTF2_LocationType t, uint64_t ne, OTF2_LocationGroupRef g) {
  (void)n, (void)t, (void)ne, (void)g;
  struct locs *ls = u;
  OTF2_Reader_SelectLocation(ls->r, l);
  if (ls->n < sizeof ls->l / sizeof *ls->l) ls->l[ls->n++] = l;
  return OTF2_CALLBACK_SUCCESS;
}

static int read_archive(const char *anchor, counts_t *c) {
  OTF2_Reader *r = OTF2_Reader_Open(anchor);
  if (!r) return -1;
  OTF2_Reader_SetSerialCollectiveCallbacks(r);
  uint64_t nloc = 0;
  OTF2_Reader_GetNumberOfLocations(r, &nloc);
  c->nlocs = nloc;
  OTF2_GlobalDefReader *gd = OTF2_Reader_GetGlobalDefReader(r);
  OTF2_GlobalDefReaderCallbacks *gcb = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(gcb, on_clock);
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(gcb, on_location);
  static struct locs ctx;
  ctx.r = r, ctx.n = 0;
  OTF2_Reader_RegisterGlobalDefCallbacks(r, gd, gcb, &ctx);
  OTF2_GlobalDefReaderCallbacks_Delete(gcb);
  uint64_t n = 0;
  OTF2_Reader_ReadAllGlobalDefinitions(r, gd, &n);
  /* clock: read again into c (the location callback needed the reader as user data) */
  OTF2_Reader_CloseGlobalDefReader(r, gd);
  OTF2_Reader_OpenEvtFiles(r);
  OTF2_Reader_OpenDefFiles(r);
  for (uint64_t i = 0; i < ctx.n; i++) {
    OTF2_DefReader *dr = OTF2_Reader_GetDefReader(r, ctx.l[i]);
    if (dr) {
      uint64_t m = 0;
      OTF2_Reader_ReadAllLocalDefinitions(r, dr, &m);
      OTF2_Reader_CloseDefReader(r, dr);
    }
    OTF2_Reader_GetEvtReader(r, ctx.l[i]);
  }
  OTF2_GlobalEvtReader *ge = OTF2_Reader_GetGlobalEvtReader(r);
  OTF2_GlobalEvtReaderCallbacks *ecb = OTF2_GlobalEvtReaderCallbacks_New();
  OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(ecb, on_enter);
  OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(ecb, on_leave);
  OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(ecb, on_cbegin);
  OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(ecb, on_cend);
  OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(ecb, on_send);
  OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(ecb, on_recv);
  OTF2_GlobalEvtReaderCallbacks_SetMetricCallback(ecb, on_metric);
  OTF2_Reader_RegisterGlobalEvtCallbacks(r, ge, ecb, c);
  OTF2_GlobalEvtReaderCallbacks_Delete(ecb);
  OTF2_ErrorCode rc = OTF2_Reader_ReadAllGlobalEvents(r, ge, &n);
  OTF2_Reader_CloseGlobalEvtReader(r, ge);
  OTF2_Reader_CloseEvtFiles(r);
  OTF2_Reader_CloseDefFiles(r);
  OTF2_Reader_Close(r);
  /* the clock properties */
  r = OTF2_Reader_Open(anchor);
  if (!r) return -1;
  gd = OTF2_Reader_GetGlobalDefReader(r);
  gcb = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(gcb, on_clock);
  OTF2_Reader_RegisterGlobalDefCallbacks(r, gd, gcb, c);
  OTF2_GlobalDefReaderCallbacks_Delete(gcb);
  OTF2_Reader_ReadAllGlobalDefinitions(r, gd, &n);
  OTF2_Reader_Close(r);
  return rc == OTF2_SUCCESS ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 3)
    return fprintf(stderr, "usage: otf2_read ANCHOR TRACE_DIR [comm=0xID] [ranks=R,R] [from=NS] "
                           "[to=NS]\n"), 2;
  static int32_t ranks[256];
  ncs_job_filter_t f = {0};
  for (int i = 3; i < argc; i++) {
    if (!strncmp(argv[i], "comm=", 5)) {
      f.comm_set = 1, f.comm_id = strtoull(argv[i] + 5, NULL, 16);
    } else if (!strncmp(argv[i], "ranks=", 6)) {
      for (char *p = argv[i] + 6, *e; *p && f.nranks < 256; p = *e == ',' ? e + 1 : e) {
        long v = strtol(p, &e, 10);
        if (e == p) return fprintf(stderr, "otf2_read: bad %s\n", argv[i]), 2;
        ranks[f.nranks++] = (int32_t)v;
      }
      f.ranks = ranks;
    } else if (!strncmp(argv[i], "from=", 5) || !strncmp(argv[i], "to=", 3)) {
      if (!f.window) f.window = 1, f.to_ns = INT64_MAX;
      if (argv[i][0] == 'f') f.from_ns = strtoll(argv[i] + 5, NULL, 10);
      else f.to_ns = strtoll(argv[i] + 3, NULL, 10);
    } else {
      return fprintf(stderr, "otf2_read: unknown argument %s\n", argv[i]), 2;
    }
  }
  counts_t c = {.min_t = UINT64_MAX};
  if (read_archive(argv[1], &c) != 0) return fprintf(stderr, "otf2_read: cannot read %s\n", argv[1]), 1;
  char err[512];
  ncs_analyze_opts_t ao = {.retain = 1, .filter = ncs_job_filter_active(&f) ? &f : NULL};
  ncs_analysis_t *a = ncs_analyze_path_opts(argv[2], &ao, err, sizeof err);
  if (!a) return fprintf(stderr, "otf2_read: %s\n", err), 1;
  uint64_t colls = 0, sends = 0, recvs = 0, sum = 0;
  for (size_t k = 0; k < ncs_job_op_count(a->job); k++) {
    const ncs_op_t *op = ncs_job_op(a->job, k);
    int gpu = op->timing == NCS_SRC_KERNEL_GPU && op->kstart > 0 && op->kstop >= op->kstart;
    int64_t b = gpu ? op->kstart : op->start > 0 ? op->start : op->arrival;
    int64_t e = gpu ? op->kstop : op->end > 0 ? op->end : op->stop;
    if (b <= 0) continue;
    if (!op->p2p && ox_coll_op(op->func) >= 0) colls++, sum += (uint64_t)(e < b ? b : e);
    if (op->p2p && op->pair != SIZE_MAX) op->is_send ? sends++ : recvs++;
  }
  ncs_analysis_free(a);
  printf("otf2_read: %" PRIu64 " locations, %" PRIu64 " events: %" PRIu64 " enter, %" PRIu64
         " leave, %" PRIu64 " collective begin, %" PRIu64 " collective end, %" PRIu64
         " send, %" PRIu64 " recv, %" PRIu64 " metric; model: %" PRIu64 " collectives, %" PRIu64
         " paired sends, %" PRIu64 " paired recvs\n",
         c.nlocs, c.events, c.enters, c.leaves, c.cbegin, c.cend, c.sends, c.recvs, c.metrics,
         colls, sends, recvs);
  int bad = 0;
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) fprintf(stderr, "otf2_read: " __VA_ARGS__), fputc('\n', stderr), bad = 1;         \
  } while (0)
  CHECK(c.enters == c.leaves, "enter %" PRIu64 " != leave %" PRIu64, c.enters, c.leaves);
  CHECK(c.cbegin == c.cend, "collective begin != end");
  CHECK(c.cend == colls, "collective ends %" PRIu64 ", model %" PRIu64, c.cend, colls);
  CHECK(c.sends == sends && c.recvs == recvs, "send/recv do not match the model's pairs");
  CHECK(c.end_sum == sum, "collective end times differ from the model's (sum %" PRIu64
        " vs %" PRIu64 ")", c.end_sum, sum);
  if (c.events) {
    CHECK(c.min_t == c.offset, "first event %" PRIu64 " != global offset %" PRIu64, c.min_t,
          c.offset);
    CHECK(c.max_t == c.offset + c.length, "last event %" PRIu64 " != offset + length %" PRIu64,
          c.max_t, c.offset + c.length);
  }
  if (!bad) puts("otf2_read: ok");
  return bad;
}
