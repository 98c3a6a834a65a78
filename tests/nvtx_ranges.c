/* nvtx_ranges.c - a program that marks its work with NVTX (NVIDIA's own header-only NVTX v3, as
 * PyTorch, Megatron and NCCL use it) and with ncclscope's range API (include/ncclscope.h, looked
 * up without linking), then reads the trace back and checks that every range is there as it was
 * made (tests/ranges.cmake; docs/ranges.md).
 *
 *   ncs-nvtx-ranges PLUGIN DIR MODE
 *
 * MODE nvtx: NVTX_INJECTION64_PATH names the plugin (as `ncclscope record` sets it), so NVTX
 * loads it at the first NVTX call; no-nvtx: it is not set, only the API's ranges may be there;
 * off: NCCLSCOPE_RANGES=off (the plugin declines NVTX's call), nothing may be. The program plays NCCL too: it calls the plugin's
 * ncclProfiler_v6 init after its first ranges (ranges before the first communicator are kept)
 * and finalize at the end, with one range still open. Prints "nvtx ranges: ok ..." or what is
 * wrong, exit 1.
 *
 * Under `ncclscope record` (tests/ranges.cmake), the environment is record's: MODE record takes
 * NCCLSCOPE_DIR and NVTX_INJECTION64_PATH as record set them and expects what MODE nvtx does;
 * record-other: the user's NVTX_INJECTION64_PATH named another library (here one that does not
 * exist), which record kept, so only the API's ranges may be there (DIR is then unused).
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "../include/ncclscope.h"
#include "abi/ncs_abi.h"
#include "trace/reader.h"

static int fails;
#define EXPECT(c, ...)                                                                             \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fails++;                                                                                     \
      fprintf(stderr, "nvtx ranges: %s:%d: ", __FILE__, __LINE__);                                 \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

static int nvtx; /* NVTX ranges are expected in the trace */

static void *end_elsewhere(void *arg) {
  nvtxRangeEnd(*(nvtxRangeId_t *)arg);
  return NULL;
}

static nvtxEventAttributes_t attr(int type) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = type;
  return a;
}

/* What the program marks; the return values NVTX passes on are the plugin's (levels). */
static void emit(const ncs_profiler_v6_t *p, void **ctx, int *mask) {
  int lv = nvtxRangePushA("before init");
  EXPECT(!nvtx || lv == 0, "first push: level %d", lv);
  lv = ncclscope_range_push("api before init");
  EXPECT(lv == (nvtx ? 1 : 0) || lv == -1, "API push before init: level %d", lv);
  p->init(ctx, 0x1234, mask, "nvtx-test", 1, 1, 0, NULL); /* NCCL's first communicator */
  ncclscope_range_pop();
  nvtxRangePop();
  nvtxMarkA("mark-a");
  nvtxRangePushA("outer");
  lv = nvtxRangePushW(L"wide-\u00fc\u4e2d");
  EXPECT(!nvtx || lv == 1, "wide push: level %d", lv);
  nvtxRangePop();
  nvtxEventAttributes_t a = attr(NVTX_MESSAGE_TYPE_ASCII);
  a.category = 7, a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64, a.payload.ullValue = 42;
  a.message.ascii = "ex";
  nvtxRangePushEx(&a);
  nvtxRangePop();
  nvtxDomainHandle_t d = nvtxDomainCreateA("app");
  nvtxEventAttributes_t r = attr(NVTX_MESSAGE_TYPE_REGISTERED);
  r.message.registered = nvtxDomainRegisterStringA(d, "registered");
  nvtxDomainRangePushEx(d, &r);
  nvtxDomainMarkEx(d, &r);
  nvtxDomainRangePop(d);
  nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL"); /* NCCL's own: ignored */
  a.message.ascii = "ncclAllReduce";
  nvtxDomainRangePushEx(nccl, &a);
  nvtxDomainRangePop(nccl);
  char big[400];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  nvtxRangePushA(big);
  nvtxRangePop();
  nvtxRangeId_t id = nvtxRangeStartA("cross-thread");
  pthread_t t;
  pthread_create(&t, NULL, end_elsewhere, &id);
  pthread_join(t, NULL);
  lv = ncclscope_range_push("api");
  EXPECT(lv == (nvtx ? 1 : getenv("NCCLSCOPE_RANGES") ? -1 : 0), "API push: level %d", lv);
  ncclscope_mark("api-mark");
  ncclscope_range_pop();
  nvtxRangePop(); /* outer */
  lv = nvtxRangePop(); /* nothing open */
  EXPECT(!nvtx || lv < 0, "a pop with nothing open returned %d", lv);
  nvtxRangePushA("left open");
  p->finalize(*ctx); /* the last communicator: the trace is complete */
}

/* ------------------------------------------------------------------ reading it back */

typedef struct {
  ncs_range_rec_t b;
  char name[300], domain[64];
  int ended, end_thread;
} got_t;

static got_t got[64];
static int ngot, nmarks, api_marks;
static char mark_domain[64];
static ncs_range_state_t st;
static uint64_t seg_start, counters[NCS_RK_MAX + 1];

static got_t *by_name(const char *n) {
  for (int i = 0; i < ngot; i++)
    if (!strcmp(got[i].name, n)) return &got[i];
  return NULL;
}

static void on_range(const ncs_range_rec_t *g) {
  if (g->kind == NCS_RR_BEGIN && ngot < 64) {
    got_t *x = &got[ngot++];
    x->b = *g;
    snprintf(x->name, sizeof x->name, "%s", g->name ? g->name : "");
    snprintf(x->domain, sizeof x->domain, "%s", g->domain ? g->domain : "");
  } else if (g->kind == NCS_RR_END) {
    for (int i = 0; i < ngot; i++)
      if (got[i].b.id == g->id) got[i].ended = 1, got[i].end_thread = (int)g->thread;
  } else if (g->kind == NCS_RR_MARK) {
    nmarks++;
    api_marks += (g->flags & NCS_RF_API) != 0;
    if (g->domain) snprintf(mark_domain, sizeof mark_domain, "%s", g->domain);
  }
}

static void read_back(const char *dir) {
  char **paths, err[256];
  size_t n;
  if (ncs_list_traces(dir, &paths, &n, err, sizeof err) != 0 || n != 1) {
    EXPECT(0, "one trace file in %s, found %zu (%s)", dir, n, err);
    return;
  }
  ncs_reader_t *r = ncs_reader_open(paths[0], err, sizeof err);
  ncs_free_paths(paths, n);
  if (!r) {
    EXPECT(0, "%s", err);
    return;
  }
  ncs_item_t it;
  while (ncs_reader_next(r, &it) > 0) {
    if (it.what == NCS_ITEM_SEGMENT) seg_start = ncs_reader_segment(r)->start_mono_ns;
    if (it.what == NCS_ITEM_RANGE) on_range(&it.range);
    if (it.what == NCS_ITEM_RANGE_STATE && (it.range_state.flags & NCS_RSF_FINAL)) {
      st = it.range_state;
      for (uint32_t i = 0; i < st.ncounters; i++)
        if (st.keys[i] <= NCS_RK_MAX) counters[st.keys[i]] = st.values[i];
    }
  }
  EXPECT(!ncs_reader_damage(r), "damaged: %s", ncs_reader_error(r));
  ncs_reader_close(r);
}

static void check_nvtx(void) {
  got_t *b = by_name("before init"), *o = by_name("outer"), *w = by_name("wide-\xc3\xbc\xe4\xb8\xad");
  got_t *e = by_name("ex"), *reg = by_name("registered"), *x = by_name("cross-thread");
  got_t *api = by_name("api"), *left = by_name("left open");
  EXPECT(b && b->b.ts < seg_start && b->ended, "a range pushed before NCCL's init is kept");
  EXPECT(o && o->b.depth == 1 && o->ended, "outer");
  EXPECT(w && w->b.parent == o->b.id && w->b.depth == 2, "a wide (UTF-16/32) name, converted to UTF-8");
  EXPECT(e && e->b.category == 7 && e->b.payload_type == NCS_PAYLOAD_U64 && e->b.payload == 42,
         "category and payload of nvtxRangePushEx");
  EXPECT(reg && !strcmp(reg->domain, "app") && reg->ended, "a registered string in a domain");
  EXPECT(!strcmp(mark_domain, "app"), "a domain's mark");
  EXPECT(!by_name("ncclAllReduce") && counters[NCS_RK_IGNORED] == 2, "NCCL's own ranges ignored (%" PRIu64 ")",
         counters[NCS_RK_IGNORED]);
  int trunc = 0;
  for (int i = 0; i < ngot; i++)
    if (strlen(got[i].name) == NCS_RANGE_NAME_MAX && (got[i].b.flags & NCS_RF_TRUNCATED)) trunc = 1;
  EXPECT(trunc && counters[NCS_RK_UNMATCHED_POPS] == 1, "a long name cut and flagged; the extra pop counted");
  EXPECT(x && (x->b.flags & NCS_RF_STARTEND) && x->ended && x->end_thread != (int)x->b.thread,
         "a start/end range ended on another thread");
  EXPECT(api && (api->b.flags & NCS_RF_API) && api->b.parent == o->b.id, "an API range inside an NVTX one");
  EXPECT(left && !left->ended && counters[NCS_RK_OPEN] == 1, "a range open at the end is counted open");
  EXPECT(nmarks == 3 && api_marks == 1, "marks: %d (%d of the API)", nmarks, api_marks);
  EXPECT(st.nvtx == NCS_NVTX_OURS && counters[NCS_RK_NVTX_INITS] >= 1, "NVTX attached (%s)", ncs_nvtx_state_name(st.nvtx));
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: ncs-nvtx-ranges PLUGIN DIR nvtx|no-nvtx|off|record|record-other\n");
    return 2;
  }
  const char *mode = argv[3], *dir = argv[2];
  int rec = !strcmp(mode, "record"), rec_other = !strcmp(mode, "record-other");
  nvtx = !strcmp(mode, "nvtx") || rec;
  if (rec || rec_other) { /* record's environment, as it set it */
    const char *d = getenv("NCCLSCOPE_DIR"), *n = getenv("NVTX_INJECTION64_PATH");
    if (!d || !*d || !n || !*n || !getenv("NCCL_PROFILER_PLUGIN")) {
      fprintf(stderr, "nvtx ranges: FAILED: not under ncclscope record (NCCLSCOPE_DIR %s, "
                      "NVTX_INJECTION64_PATH %s)\n", d ? d : "unset", n ? n : "unset");
      return 1;
    }
    dir = d;
  } else {
    setenv("NCCLSCOPE_DIR", dir, 1);
    setenv("NCCL_PROFILER_PLUGIN", argv[1], 1); /* the range API looks the plugin up from it */
    if (strcmp(mode, "no-nvtx")) /* off: NVTX loads the plugin, which declines */
      setenv("NVTX_INJECTION64_PATH", argv[1], 1);
    else
      unsetenv("NVTX_INJECTION64_PATH");
    if (!strcmp(mode, "off")) setenv("NCCLSCOPE_RANGES", "off", 1);
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  const ncs_profiler_v6_t *p = h ? dlsym(h, "ncclProfiler_v6") : NULL;
  if (!p) {
    fprintf(stderr, "nvtx ranges: cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  void *ctx = NULL;
  int mask = 0;
  emit(p, &ctx, &mask);
  read_back(dir);
  if (nvtx) {
    check_nvtx();
  } else if (!strcmp(mode, "no-nvtx") || rec_other) { /* NVTX is a no-op: only the API's */
    EXPECT(ngot == 2 && by_name("api before init") && by_name("api") && nmarks == 1,
           "only the API's ranges: %d ranges, %d marks", ngot, nmarks);
    EXPECT(st.nvtx == (rec_other ? NCS_NVTX_OTHER : NCS_NVTX_UNSET) &&
               counters[NCS_RK_NVTX_INITS] == 0,
           "NVTX not attached (%s)", ncs_nvtx_state_name(st.nvtx));
  } else {
    EXPECT(ngot == 0 && nmarks == 0 && (st.flags & NCS_RSF_RANGES_OFF), "ranges off: %d ranges", ngot);
  }
  if (fails) {
    fprintf(stderr, "nvtx ranges: FAILED (%d)\n", fails);
    return 1;
  }
  printf("nvtx ranges: ok mode=%s ranges=%d marks=%d nvtx=%s\n", mode, ngot, nmarks, ncs_nvtx_state_name(st.nvtx));
  return 0;
}
