/* cupti.c - CUPTI in the plugin: finding and loading libcupti, the subscription, and CUPTI's
 * callbacks (docs/gpu-truth.md).
 *
 * Policy: CUPTI is used only when NCCLSCOPE_CUPTI=on. CUDA 13.0 lets one CUPTI subscriber trace a
 * process, so taking it silently would leave PyTorch's profiler or Nsight Systems with nothing. If
 * another subscriber holds it, the plugin steps aside and says so (NCCL's log and the trace's
 * GPU_STATE); if it takes it, it says that too, by name, so the other tool's error names us.
 *
 * The callbacks run on the application's threads inside CUDA calls (kernel and graph launches,
 * graph construction) and must stay cheap: a thread-local check, and for NCCL's own launches a raw
 * record in the thread's buffer block, the same path an event takes. Activity buffers come from a
 * fixed pool; completed ones go onto a lock-free list that the writer thread takes and decodes
 * (gpu_writer.c). Nothing here allocates after setup, blocks, or writes a file.
 *
 * Lifetime: CUPTI keeps pointers to our callbacks and has no call that forgets the buffer
 * callbacks, so once CUPTI was loaded the plugin pins itself in memory (RTLD_NODELETE): NCCL's
 * dlclose then leaves it loaded, and a later load of the same path gets this copy back, whose
 * writer starts a new segment as after any restart. At exit, a handler registered after CUPTI was
 * set up (so it runs before libcupti's own destructors) stops collection and flushes CUPTI; the
 * plugin makes no CUPTI call after that.
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gpu/gpu.h"

#define BUF_BYTES (1u << 20) /* one activity buffer: about 4800 kernel records */
#define NODE_SET 16384       /* captured NCCL graph nodes remembered for their clones (power of 2) */
#define FLUSH_FAILS 3        /* consecutive failed flushes that end CUPTI tracing */

__attribute__((tls_model("initial-exec"))) _Thread_local ncs_gpu_tls_t ncs_gpu_t;
_Atomic int ncs_gpu_on;

static struct {
  ncs_cupti_api_t api;
  void *lib;
  char lib_path[512];
  ncs_cupti_subscriber_t sub;
  int subscribed, enabled_activity, pinned, atexit_done;
  pthread_mutex_t api_mu; /* the writer's CUPTI calls vs the exit handler */
  int gone;               /* exit handler ran: no CUPTI call any more */
  int flush_fails;
  ncs_gpu_status_t st;    /* under ncs_g.lock (setup, release) or api_mu (fail) */
  /* activity buffers: nbufs of BUF_BYTES in one mapping */
  uint8_t *pool;
  uint32_t nbufs;
  _Atomic uint64_t free_head; /* (tag << 32) | (index + 1): request callbacks pop, the writer pushes */
  uint32_t *free_next;
  _Atomic uint32_t done_head; /* index + 1: completed buffers, pushed by CUPTI's threads */
  uint32_t *done_next;
  size_t *done_valid;
  /* captured NCCL graph nodes: insert-only set of CUPTI node ids (0 = empty) */
  _Atomic uint64_t nodes[NODE_SET];
  /* counters of the callbacks */
  _Atomic uint64_t no_buffer, cupti_dropped, host_drops, launches, node_set_full;
} G = {.api_mu = PTHREAD_MUTEX_INITIALIZER};

static void add(_Atomic uint64_t *c, uint64_t n) { atomic_fetch_add_explicit(c, n, memory_order_relaxed); }

static const char *result_str(ncs_cupti_result_t r) {
  const char *s = NULL;
  if (G.api.GetResultString && G.api.GetResultString(r, &s) == NCS_CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI error";
}

/* ------------------------------------------------------------------ activity buffers */

static int pool_pop(void) {
  uint64_t h = atomic_load_explicit(&G.free_head, memory_order_acquire);
  for (;;) {
    uint32_t i1 = (uint32_t)h;
    if (!i1) return -1;
    uint64_t n = ((h >> 32) + 1) << 32 | G.free_next[i1 - 1];
    if (atomic_compare_exchange_weak_explicit(&G.free_head, &h, n, memory_order_acq_rel,
                                              memory_order_acquire))
      return (int)i1 - 1;
  }
}

static void pool_push(uint32_t i) {
  uint64_t h = atomic_load_explicit(&G.free_head, memory_order_relaxed);
  do {
    G.free_next[i] = (uint32_t)h;
  } while (!atomic_compare_exchange_weak_explicit(&G.free_head, &h, ((h >> 32) + 1) << 32 | (i + 1),
                                                  memory_order_release, memory_order_relaxed));
}

/* CUPTI asks for a buffer on whichever thread needs one. An empty pool hands none: CUPTI then
 * drops records and counts them (cupti_dropped), and so do we (no_buffer). */
static void buf_request(uint8_t **buffer, size_t *size, size_t *max_records) {
  *max_records = 0;
  int i = pool_pop();
  if (i < 0) {
    add(&G.no_buffer, 1);
    *buffer = NULL;
    *size = 0;
    return;
  }
  *buffer = G.pool + (size_t)i * BUF_BYTES;
  *size = BUF_BYTES;
}

/* CUPTI hands a buffer back (its worker thread, or the thread that flushed). */
static void buf_complete(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)size;
  size_t dropped = 0;
  if (G.api.ActivityGetNumDroppedRecords &&
      G.api.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == NCS_CUPTI_SUCCESS && dropped)
    add(&G.cupti_dropped, dropped);
  if (!buf || buf < G.pool || buf >= G.pool + (size_t)G.nbufs * BUF_BYTES) return; /* not ours */
  size_t off = (size_t)(buf - G.pool);
  if (off % BUF_BYTES) return;
  uint32_t i = (uint32_t)(off / BUF_BYTES);
  G.done_valid[i] = valid <= BUF_BYTES ? valid : BUF_BYTES;
  uint32_t h = atomic_load_explicit(&G.done_head, memory_order_relaxed);
  do {
    G.done_next[i] = h;
  } while (!atomic_compare_exchange_weak_explicit(&G.done_head, &h, i + 1, memory_order_release,
                                                  memory_order_relaxed));
}

int ncs_gpu_take(int *idx, int max) {
  uint32_t h = atomic_exchange_explicit(&G.done_head, 0, memory_order_acquire);
  int n = 0;
  for (; h && n < max; h = G.done_next[h - 1]) idx[n++] = (int)h - 1;
  for (; h; h = G.done_next[h - 1]) pool_push(h - 1); /* more than max: cannot happen (max >= nbufs) */
  for (int a = 0, b = n - 1; a < b; a++, b--) { /* the list is newest first */
    int t = idx[a];
    idx[a] = idx[b], idx[b] = t;
  }
  return n;
}

const uint8_t *ncs_gpu_buffer(int i, size_t *valid) {
  *valid = G.done_valid[i];
  return G.pool + (size_t)i * BUF_BYTES;
}

void ncs_gpu_give_back(int i) { pool_push((uint32_t)i); }

ncs_cupti_result_t ncs_gpu_next_record(const uint8_t *buf, size_t valid, void **rec) {
  return G.api.ActivityGetNextRecord((uint8_t *)buf, valid, rec);
}

/* ------------------------------------------------------------------ raw records */

static inline uint64_t stamp(void) { return ncs_g.use_tsc ? ncs_tsc() : ncs_mono_ns(); }

/* One raw record of nw words (w[2..] from `v`) in the calling thread's block. */
static void raw_put(unsigned sub, uint32_t nw, const uint64_t *v) {
  if (!atomic_load_explicit(&ncs_g.ready, memory_order_relaxed)) return;
  ncs_slot_t *s = ncs_slot();
  uint64_t *w = s ? ncs_reserve(&ncs_t, nw) : NULL;
  if (!w) {
    add(&G.host_drops, 1);
    return;
  }
  w[1] = stamp();
  for (uint32_t i = 2; i < nw; i++) w[i] = v[i - 2];
  ncs_publish(&ncs_t, nw, NCS_REC_HDR(NCS_RAW_GPU, sub, nw, 0, 0));
}

/* ------------------------------------------------------------------ the event path */

void ncs_gpu_launch_begin(void **eh, void *ctx, void *parent, void *stream) {
  if (!atomic_load_explicit(&ncs_gpu_on, memory_order_relaxed)) return;
  uint64_t h = (uint64_t)(uintptr_t)*eh;
  if (!h) return;
  ncs_gpu_tls_t *L = &ncs_gpu_t;
  L->launch = h & NCS_ID_MASK;
  L->ctx = (uint64_t)(uintptr_t)ctx, L->parent = (uint64_t)(uintptr_t)parent;
  L->stream = (uint64_t)(uintptr_t)stream;
  L->corr = 0, L->n = 0;
  *eh = (void *)(uintptr_t)((h & ~(0xFFull << 56)) | (NCS_EH_TAG_LAUNCH << 56));
}

/* ------------------------------------------------------------------ callbacks */

static int node_set_has(uint64_t id) {
  uint32_t i = (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & (NODE_SET - 1);
  for (uint32_t n = 0; n < NODE_SET; n++, i = (i + 1) & (NODE_SET - 1)) {
    uint64_t v = atomic_load_explicit(&G.nodes[i], memory_order_acquire);
    if (v == id) return 1;
    if (!v) return 0;
  }
  return 0;
}

/* Insert-only, at most 3/4 full (probes stay short); a full set is counted: clones of the nodes
 * not remembered are then matched by node index (NCS_GKF_BY_INDEX). */
static _Atomic uint32_t node_count;
static void node_set_add(uint64_t id) {
  if (!id) return;
  if (atomic_fetch_add_explicit(&node_count, 1, memory_order_relaxed) >= NODE_SET * 3 / 4) {
    add(&G.node_set_full, 1);
    return;
  }
  uint32_t i = (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & (NODE_SET - 1);
  for (uint32_t n = 0; n < NODE_SET; n++, i = (i + 1) & (NODE_SET - 1)) {
    uint64_t v = 0;
    if (atomic_compare_exchange_strong_explicit(&G.nodes[i], &v, id, memory_order_release,
                                                memory_order_relaxed) || v == id)
      return;
  }
}

/* A kernel launch: NCCL's when a KernelLaunch is open on this thread. Recorded at the call's
 * entry, where CUPTI hands out its correlation id; under stream capture the graph node it makes
 * is reported (GRAPHNODE_CREATED) before the call returns. */
static void on_kernel_launch(const ncs_cupti_cbdata_t *cb) {
  ncs_gpu_tls_t *L = &ncs_gpu_t;
  if (cb->callbackSite != NCS_CUPTI_API_ENTER) return;
  if (!L->launch) { /* the application's kernel: tied to the range open on this thread, if any */
    ncs_range_launch(cb->correlationId, 0);
    return;
  }
  L->corr = cb->correlationId;
  uint64_t v[6] = {cb->correlationId, L->launch, L->ctx, L->parent, L->stream,
                   L->n++ ? NCS_GLF_REPEAT : 0};
  add(&G.launches, 1);
  raw_put(NCS_RG_LAUNCH, 8, v);
}

static void on_graph_launch(const ncs_cupti_cbdata_t *cb) {
  if (cb->callbackSite != NCS_CUPTI_API_ENTER || !cb->functionParams) return;
  const ncs_cu_graph_launch_params_t *p = cb->functionParams;
  uint32_t exec = 0;
  if (!G.api.GetGraphExecId || G.api.GetGraphExecId(p->hGraphExec, &exec) != NCS_CUPTI_SUCCESS) return;
  uint64_t v[3] = {cb->correlationId, exec, (uint64_t)(uintptr_t)p->hStream};
  raw_put(NCS_RG_GLAUNCH, 5, v);
  ncs_range_launch(cb->correlationId, 1);
}

static void on_graph(uint32_t cbid, const ncs_cupti_graphdata_t *gd) {
  uint64_t node = 0, orig = 0;
  uint32_t gid = 0, exec = 0;
  switch (cbid) {
  case NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: {
    ncs_gpu_tls_t *L = &ncs_gpu_t; /* only NCCL's kernel, made inside its KernelLaunch */
    if (!L->launch || gd->nodeType != NCS_CU_GRAPH_NODE_TYPE_KERNEL) return;
    if (G.api.GetGraphNodeId(gd->node, &node) != NCS_CUPTI_SUCCESS) return;
    if (G.api.GetGraphId(gd->graph, &gid) != NCS_CUPTI_SUCCESS) gid = (uint32_t)(node >> 32);
    node_set_add(node);
    uint64_t v[4] = {L->launch, L->corr, node, gid};
    raw_put(NCS_RG_GNODE, 6, v);
    return;
  }
  case NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: /* every node of every instantiation: filter */
    if (G.api.GetGraphNodeId(gd->originalNode, &orig) != NCS_CUPTI_SUCCESS || !node_set_has(orig))
      return;
    if (G.api.GetGraphNodeId(gd->node, &node) != NCS_CUPTI_SUCCESS) return;
    raw_put(NCS_RG_GCLONE, 4, (uint64_t[2]){node, orig});
    return;
  case NCS_CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
    if (!G.api.GetGraphExecId || G.api.GetGraphExecId(gd->graphExec, &exec) != NCS_CUPTI_SUCCESS)
      return;
    if (G.api.GetGraphId(gd->graph, &gid) != NCS_CUPTI_SUCCESS) gid = 0;
    raw_put(NCS_RG_GEXEC, 4, (uint64_t[2]){exec, gid});
    return;
  default: return;
  }
}

static void cupti_cb(void *ud, int domain, uint32_t cbid, const void *data) {
  (void)ud;
  if (!data || !atomic_load_explicit(&ncs_gpu_on, memory_order_relaxed)) return;
  if (domain == NCS_CUPTI_CB_DOMAIN_DRIVER_API) {
    if (cbid == NCS_CUPTI_DRIVER_CBID_cuGraphLaunch || cbid == NCS_CUPTI_DRIVER_CBID_cuGraphLaunch_ptsz)
      on_graph_launch(data);
    else
      on_kernel_launch(data);
  } else if (domain == NCS_CUPTI_CB_DOMAIN_RESOURCE) {
    const ncs_cupti_resdata_t *rd = data;
    if (rd->resourceDescriptor) on_graph(cbid, rd->resourceDescriptor);
  }
}

/* ------------------------------------------------------------------ finding libcupti */

static const char *const cupti_names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

typedef struct {
  char found[512]; /* a loaded libcupti */
  char dirs[8][512]; /* directories of loaded CUDA runtime / NCCL libraries */
  int ndirs;
} scan_t;

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  scan_t *sc = arg;
  const char *p = info->dlpi_name;
  if (!p || !*p) return 0;
  const char *base = strrchr(p, '/');
  base = base ? base + 1 : p;
  if (!strncmp(base, "libcupti.so", 11) && !sc->found[0]) snprintf(sc->found, sizeof sc->found, "%s", p);
  if ((!strncmp(base, "libcudart.so", 12) || !strncmp(base, "libnccl.so", 10)) && base > p && sc->ndirs < 8)
    snprintf(sc->dirs[sc->ndirs++], sizeof sc->dirs[0], "%.*s", (int)(base - p - 1), p);
  return 0;
}

static int try_open(const char *path, int flags) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);
  if (!h) return -1;
  G.lib = h;
  char real[PATH_MAX];
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
    snprintf(G.lib_path, sizeof G.lib_path, "%.511s", realpath(lm->l_name, real) ? real : lm->l_name);
  else
    snprintf(G.lib_path, sizeof G.lib_path, "%.511s", path);
  return 0;
}

/* Candidates next to a directory of a loaded CUDA library: the same directory (a CUDA toolkit's
 * lib64, or a CUDA 13 wheel's nvidia/cu13/lib), and the wheels of a pip install (nvidia/<pkg>/lib
 * for CUDA 12: nvidia/cuda_cupti/lib beside nvidia/cuda_runtime/lib and nvidia/nccl/lib). */
static int try_near(const char *dir) {
  char p[1100];
  for (size_t i = 0; i < 2; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, cupti_names[i]);
    if (try_open(p, 0) == 0) return 0;
  }
  const char *nv = strstr(dir, "/nvidia/");
  if (!nv) return -1;
  static const char *const wheels[] = {"cu13/lib/libcupti.so.13", "cuda_cupti/lib/libcupti.so.13",
                                       "cuda_cupti/lib/libcupti.so.12", "cu12/lib/libcupti.so.12"};
  for (size_t i = 0; i < sizeof wheels / sizeof wheels[0]; i++) {
    snprintf(p, sizeof p, "%.*s/nvidia/%s", (int)(nv - dir), dir, wheels[i]);
    if (try_open(p, 0) == 0) return 0;
  }
  return -1;
}

/* Where libcupti is looked for, in order (docs/gpu-truth.md "Finding libcupti"):
 *  1. one already loaded in this process (PyTorch's, say): a second copy must not be loaded;
 *  2. NCCLSCOPE_CUPTI_LIB;
 *  3. next to the CUDA runtime or NCCL libraries this process loaded (toolkit or pip wheels);
 *  4. $CUDA_HOME, $CUDA_PATH and /usr/local/cuda: lib64, extras/CUPTI/lib64, targets/<arch>/lib;
 *  5. the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache). */
static int find_cupti(char *tried, size_t tlen) {
  scan_t sc;
  memset(&sc, 0, sizeof sc);
  dl_iterate_phdr(scan_one, &sc);
  for (size_t i = 0; i < sizeof cupti_names / sizeof cupti_names[0]; i++)
    if (try_open(cupti_names[i], RTLD_NOLOAD) == 0) return 0;
  if (sc.found[0] && try_open(sc.found, RTLD_NOLOAD) == 0) return 0;
  const char *env = ncs_g.cfg.cupti_lib;
  if (env[0]) {
    if (try_open(env, 0) == 0) return 0;
    snprintf(tried, tlen, "NCCLSCOPE_CUPTI_LIB=%s: %s", env, dlerror());
    return -1; /* asked for that one: nothing else */
  }
  for (int i = 0; i < sc.ndirs; i++)
    if (try_near(sc.dirs[i]) == 0) return 0;
  const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
#if defined(__aarch64__)
  static const char *const subs[] = {"lib64", "extras/CUPTI/lib64", "targets/sbsa-linux/lib"};
#else
  static const char *const subs[] = {"lib64", "extras/CUPTI/lib64", "targets/x86_64-linux/lib"};
#endif
  for (size_t r = 0; r < 3; r++) {
    if (!roots[r] || !roots[r][0]) continue;
    for (size_t s = 0; s < 3; s++) {
      char d[1024];
      snprintf(d, sizeof d, "%s/%s", roots[r], subs[s]);
      if (try_near(d) == 0) return 0;
    }
  }
  for (size_t i = 0; i < sizeof cupti_names / sizeof cupti_names[0]; i++)
    if (try_open(cupti_names[i], 0) == 0) return 0;
  snprintf(tried, tlen, "no libcupti: none loaded, none next to the CUDA runtime or NCCL, none under "
                        "CUDA_HOME, CUDA_PATH or /usr/local/cuda, none on the loader's path "
                        "(set NCCLSCOPE_CUPTI_LIB)");
  return -1;
}

#define SYM(field, name) (*(void **)&G.api.field = dlsym(G.lib, name))
static const char *bind_api(void) {
  static const struct {
    size_t off;
    const char *name;
    int optional;
  } syms[] = {
#define E(f, opt) {offsetof(ncs_cupti_api_t, f), "cupti" #f, opt}
      E(GetVersion, 0), E(GetResultString, 0), E(Subscribe, 0), E(Subscribe_v2, 1),
      E(Unsubscribe, 0), E(EnableCallback, 0), E(ActivityRegisterCallbacks, 0),
      E(ActivityEnable, 0), E(ActivityDisable, 0), E(ActivityGetNextRecord, 0),
      E(ActivityGetNumDroppedRecords, 1), E(ActivityFlushAll, 0), E(GetTimestamp, 0),
      E(GetGraphNodeId, 0), E(GetGraphId, 0), E(GetGraphExecId, 1),
#undef E
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(G.lib, syms[i].name);
    memcpy((char *)&G.api + syms[i].off, &p, sizeof p);
    if (!p && !syms[i].optional) return syms[i].name;
  }
  return NULL;
}

/* ------------------------------------------------------------------ setup */

static void set_state(uint32_t state, const char *reason) {
  G.st.state = state;
  G.st.since_ns = ncs_mono_ns();
  snprintf(G.st.reason, sizeof G.st.reason, "%.319s", reason ? reason : "");
}

static int pool_setup(void) {
  if (G.pool) return 0;
  uint32_t n = (uint32_t)(ncs_g.cfg.cupti_buffer_bytes / BUF_BYTES);
  if (n < 2) n = 2;
  void *p = mmap(NULL, (size_t)n * BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return -1;
  G.free_next = calloc(n, sizeof *G.free_next);
  G.done_next = calloc(n, sizeof *G.done_next);
  G.done_valid = calloc(n, sizeof *G.done_valid);
  if (!G.free_next || !G.done_next || !G.done_valid) {
    munmap(p, (size_t)n * BUF_BYTES);
    free(G.free_next), free(G.done_next), free(G.done_valid);
    G.free_next = G.done_next = NULL, G.done_valid = NULL;
    return -1;
  }
  G.pool = p, G.nbufs = n;
  for (uint32_t i = n; i-- > 0;) pool_push(i);
  return 0;
}

/* CUPTI holds pointers into this library from now on: keep it loaded (see the top). */
static void pin_self(void) {
  Dl_info di;
  if (G.pinned || !dladdr((void *)pin_self, &di) || !di.dli_fname) return;
  if (dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) G.pinned = 1;
}

static const uint32_t launch_cbids[] = {
    NCS_CUPTI_DRIVER_CBID_cuLaunchKernel, NCS_CUPTI_DRIVER_CBID_cuLaunchKernel_ptsz,
    NCS_CUPTI_DRIVER_CBID_cuLaunchKernelEx, NCS_CUPTI_DRIVER_CBID_cuLaunchKernelEx_ptsz,
    NCS_CUPTI_DRIVER_CBID_cuGraphLaunch, NCS_CUPTI_DRIVER_CBID_cuGraphLaunch_ptsz};
static const uint32_t graph_cbids[] = {NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                       NCS_CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
                                       NCS_CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED};

static void unsubscribe(void) {
  if (G.enabled_activity) G.api.ActivityDisable(NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  G.enabled_activity = 0;
  if (G.subscribed) G.api.Unsubscribe(G.sub);
  G.subscribed = 0;
}

static void at_exit(void);

/* Subscribe and enable; on any error undo it and say why. */
static void subscribe(void) {
  char holder[NCS_CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
  ncs_cupti_result_t r;
  if (G.api.Subscribe_v2) {
    ncs_cupti_subscriber_params_t p = {sizeof p, "ncclscope", holder, sizeof holder};
    r = G.api.Subscribe_v2(&G.sub, cupti_cb, NULL, &p);
  } else {
    r = G.api.Subscribe(&G.sub, cupti_cb, NULL);
  }
  holder[sizeof holder - 1] = 0;
  char why[300];
  if (r == NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    snprintf(G.st.holder, sizeof G.st.holder, "%s", holder[0] ? holder : "unknown");
    snprintf(why, sizeof why, "another CUPTI client holds CUPTI ('%s': PyTorch's profiler, Nsight "
                              "Systems or Compute, a debugger); CUDA allows one", G.st.holder);
    set_state(NCS_GPU_BUSY, why);
    return;
  }
  if (r != NCS_CUPTI_SUCCESS) {
    snprintf(why, sizeof why, "cuptiSubscribe failed: %s (%d)", result_str(r), r);
    set_state(NCS_GPU_FAILED, why);
    return;
  }
  G.subscribed = 1;
  const char *step = "cuptiActivityRegisterCallbacks";
  r = G.api.ActivityRegisterCallbacks(buf_request, buf_complete);
  for (size_t i = 0; r == NCS_CUPTI_SUCCESS && i < sizeof launch_cbids / sizeof launch_cbids[0]; i++)
    step = "cuptiEnableCallback (launches)",
    r = G.api.EnableCallback(1, G.sub, NCS_CUPTI_CB_DOMAIN_DRIVER_API, launch_cbids[i]);
  for (size_t i = 0; r == NCS_CUPTI_SUCCESS && i < sizeof graph_cbids / sizeof graph_cbids[0]; i++)
    step = "cuptiEnableCallback (graphs)",
    r = G.api.EnableCallback(1, G.sub, NCS_CUPTI_CB_DOMAIN_RESOURCE, graph_cbids[i]);
  if (r == NCS_CUPTI_SUCCESS) {
    step = "cuptiActivityEnable(CONCURRENT_KERNEL)";
    r = G.api.ActivityEnable(NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    G.enabled_activity = r == NCS_CUPTI_SUCCESS;
  }
  if (r != NCS_CUPTI_SUCCESS) {
    snprintf(why, sizeof why, "%s failed: %s (%d)", step, result_str(r), r);
    unsubscribe();
    set_state(NCS_GPU_FAILED, why);
    return;
  }
  if (!G.atexit_done && atexit(at_exit) == 0) G.atexit_done = 1;
  G.gone = 0, G.flush_fails = 0;
  set_state(NCS_GPU_ACTIVE, "");
}

static void load(void) {
  char tried[700];
  if (find_cupti(tried, sizeof tried) != 0) {
    set_state(NCS_GPU_UNAVAILABLE, tried);
    return;
  }
  snprintf(G.st.library, sizeof G.st.library, "%s", G.lib_path);
  const char *missing = bind_api();
  if (missing) {
    char why[600];
    snprintf(why, sizeof why, "%s has no %s", G.lib_path, missing);
    G.lib = NULL; /* never dlclosed: it may be another tool's copy */
    set_state(NCS_GPU_UNAVAILABLE, why);
    return;
  }
  if (G.api.GetVersion(&G.st.version) != NCS_CUPTI_SUCCESS) G.st.version = 0;
}

void ncs_gpu_setup(void) {
  G.st.summary = ncs_g.cfg.cupti_summary;
  if (!ncs_g.cfg.cupti) {
    set_state(NCS_GPU_OFF, "not asked for (NCCLSCOPE_CUPTI=on turns it on)");
    return;
  }
  if (G.subscribed) return; /* a later communicator of the same segment */
  if (!G.lib) load();
  if (!G.lib) goto out;
  if (pool_setup() != 0) {
    set_state(NCS_GPU_FAILED, "cannot map CUPTI's activity buffers (NCCLSCOPE_CUPTI_BUFFER_SIZE)");
    goto out;
  }
  pin_self();
  subscribe();
out:
  if (G.st.state == NCS_GPU_ACTIVE) {
    atomic_store(&ncs_gpu_on, 1);
    ncs_log(NCS_LOG_WARN, "CUPTI: tracing every kernel through %s (CUPTI %u). While ncclscope holds "
            "CUPTI, PyTorch's profiler and Nsight Systems cannot trace CUDA in this process; "
            "NCCLSCOPE_CUPTI=off leaves CUPTI to them", G.lib_path, G.st.version);
  } else {
    ncs_log(NCS_LOG_WARN, "CUPTI: not used (%s): %s; GPU times come from NCCL's KernelCh events as "
            "without NCCLSCOPE_CUPTI", ncs_gpu_state_name(G.st.state), G.st.reason);
  }
}

/* The segment is complete (its final GPU_STATE says what CUPTI did in it): CUPTI is free for
 * other clients until a communicator starts the next segment. */
void ncs_gpu_release(void) {
  pthread_mutex_lock(&G.api_mu);
  atomic_store(&ncs_gpu_on, 0);
  if (!G.gone) unsubscribe();
  pthread_mutex_unlock(&G.api_mu);
}

/* Process exit: runs before libcupti's destructors (registered after it loaded). */
static void at_exit(void) {
  pthread_mutex_lock(&G.api_mu);
  if (G.subscribed && !G.gone) {
    if (G.enabled_activity) G.api.ActivityDisable(NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    G.enabled_activity = 0;
    G.api.ActivityFlushAll(NCS_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); /* buffers onto our list */
  }
  G.gone = 1;
  pthread_mutex_unlock(&G.api_mu);
}

void ncs_gpu_after_fork(void) {
  /* CUPTI does not follow a fork; the child's buffers and subscription are not its own */
  atomic_store(&ncs_gpu_on, 0);
  pthread_mutex_init(&G.api_mu, NULL);
  G.subscribed = G.enabled_activity = 0;
  G.gone = 1;
  if (G.st.state == NCS_GPU_ACTIVE) set_state(NCS_GPU_FAILED, "forked child: CUPTI is not used");
  ncs_gpu_t.launch = 0;
}

void *ncs_gpu_lib(void) { return G.lib; }
const char *ncs_gpu_result_str(int r) { return result_str(r); }

/* ------------------------------------------------------------------ the writer's calls */

void ncs_gpu_status(ncs_gpu_status_t *s) {
  pthread_mutex_lock(&G.api_mu);
  *s = G.st;
  pthread_mutex_unlock(&G.api_mu);
}

void ncs_gpu_cb_counts(ncs_gpu_cb_counts_t *c) {
  c->no_buffer = atomic_load(&G.no_buffer), c->cupti_dropped = atomic_load(&G.cupti_dropped);
  c->host_drops = atomic_load(&G.host_drops), c->launches = atomic_load(&G.launches);
  c->node_set_full = atomic_load(&G.node_set_full);
}

static int usable(void) { return G.subscribed && !G.gone; }

int ncs_gpu_clock(uint64_t *mono, uint64_t *cupti, uint64_t *width) {
  pthread_mutex_lock(&G.api_mu);
  int rc = -1;
  uint64_t best = UINT64_MAX;
  for (int k = 0; usable() && k < 4; k++) { /* the tightest of a few reads */
    uint64_t c = 0, m1 = ncs_mono_ns();
    if (G.api.GetTimestamp(&c) != NCS_CUPTI_SUCCESS) break;
    uint64_t m2 = ncs_mono_ns();
    if (m2 - m1 < best) best = *width = m2 - m1, *mono = m1 + (m2 - m1) / 2, *cupti = c, rc = 0;
  }
  pthread_mutex_unlock(&G.api_mu);
  return rc;
}

int ncs_gpu_flush(int forced) {
  pthread_mutex_lock(&G.api_mu);
  int rc = -1;
  if (usable()) {
    ncs_cupti_result_t r = G.api.ActivityFlushAll(forced ? NCS_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    rc = r == NCS_CUPTI_SUCCESS ? 0 : -1;
    size_t dropped = 0; /* records dropped where no buffer came back to say so */
    if (G.api.ActivityGetNumDroppedRecords &&
        G.api.ActivityGetNumDroppedRecords(NULL, 0, &dropped) == NCS_CUPTI_SUCCESS && dropped)
      add(&G.cupti_dropped, dropped);
    G.flush_fails = rc ? G.flush_fails + 1 : 0;
  }
  pthread_mutex_unlock(&G.api_mu);
  if (rc && G.flush_fails >= FLUSH_FAILS) ncs_gpu_fail("cuptiActivityFlushAll failed 3 times in a row");
  return rc;
}

void ncs_gpu_stop_collecting(void) {
  pthread_mutex_lock(&G.api_mu);
  if (usable() && G.enabled_activity) G.api.ActivityDisable(NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  G.enabled_activity = 0;
  pthread_mutex_unlock(&G.api_mu);
}

/* An error while running: stop collecting, keep what came, and say so. The subscription is
 * released with the segment; KernelCh is not turned back on (NCCL's work counters would then
 * disagree under CUDA graphs: docs/config.md, "Sampling"). */
void ncs_gpu_fail(const char *why) {
  pthread_mutex_lock(&G.api_mu);
  if (G.st.state == NCS_GPU_ACTIVE) {
    atomic_store(&ncs_gpu_on, 0);
    if (usable() && G.enabled_activity) G.api.ActivityDisable(NCS_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    G.enabled_activity = 0;
    set_state(NCS_GPU_FAILED, why);
    ncs_log(NCS_LOG_WARN, "CUPTI: stopped tracing kernels: %s; operations after this have no CUPTI "
                          "times", why);
  }
  pthread_mutex_unlock(&G.api_mu);
}
