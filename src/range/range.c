/* range.c - user ranges on the application's threads: ncclscope's range API and the NVTX tool
 * interface (docs/ranges.md).
 *
 * A range call writes one raw record into the calling thread's buffer block, exactly as an NCCL
 * event does (core/ncs.h): the same per-thread blocks, the same publish-by-header-word, no lock,
 * no allocation. Names are copied into the record, because NVTX does not keep the caller's
 * string alive after the call (PyTorch passes a temporary); registered strings and domain names
 * are copied once, into fixed tables, when they are made (under a mutex: rare calls). The writer
 * thread pairs pops with pushes (range_writer.c).
 *
 * The calling thread's depth (push/pop ranges open) lives in an 8-byte thread-local and is kept
 * whether or not a record found room: each PUSH and POP record carries its level, so the writer
 * pairs them right even when records between them were dropped.
 *
 * NVTX v3 is header-only: every library that uses it (PyTorch, NCCL, the program itself) carries
 * its own copy, and each copy's first call loads the library NVTX_INJECTION64_PATH names and
 * calls its InitializeInjectionNvtx2. The plugin answers every copy the same way. NCCL's own NVTX
 * ranges (domain "NCCL") duplicate what its profiler API reports, so that domain is ignored.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NCCLSCOPE_NO_LOOKUP /* the declarations of what this file exports, not the look-up */
#include "../../include/ncclscope.h"
#include "gpu/gpu.h"
#include "range/nvtx_decl.h"
#include "range/range.h"

#define EXPORT __attribute__((visibility("default")))
#define NDOM 256    /* NVTX domains (the last one is shared by any beyond) */
#define NSTR 16384  /* registered strings */
#define DOM_TAG 0x4E435344ull /* "NCSD": the upper half of a domain handle */
#define STR_TAG 0x4E435353ull /* "NCSS": the upper half of a registered string handle */

__attribute__((tls_model("initial-exec"))) _Thread_local ncs_range_tls_t ncs_range_t;
_Atomic int ncs_range_used;

enum { R_UNSET = 0, R_ON = 1, R_OFF = 2 };

static struct {
  _Atomic int state;
  pthread_mutex_t mu; /* domain and string registration */
  char dom[NDOM][64];
  uint8_t dom_ignored[NDOM];
  _Atomic uint32_t ndom; /* domain 0 is NVTX's default domain */
  _Atomic(char *) str[NSTR];
  _Atomic uint32_t nstr;
  uint32_t nvtx;
  char nvtx_path[512];
  _Atomic uint64_t nvtx_inits, no_slot;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .ndom = 1};

/* ------------------------------------------------------------------ set-up */

/* Where NVTX_INJECTION64_PATH points: at this library (the same file), elsewhere, or nowhere. */
static void nvtx_state(void) {
  const char *p = getenv("NVTX_INJECTION64_PATH");
  snprintf(R.nvtx_path, sizeof R.nvtx_path, "%s", p ? p : "");
  if (!p || !*p) {
    R.nvtx = NCS_NVTX_UNSET;
    return;
  }
  Dl_info di;
  struct stat a, b;
  int ours = dladdr((void *)nvtx_state, &di) && di.dli_fname && stat(di.dli_fname, &a) == 0 &&
             stat(p, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  R.nvtx = ours ? NCS_NVTX_OURS : NCS_NVTX_OTHER;
}

/* Called from the plugin's set-up, under its lock, once the configuration is loaded. */
void ncs_range_setup(void) {
  nvtx_state();
  atomic_store(&R.state, ncs_g.cfg.ranges ? R_ON : R_OFF);
}

/* A range call before NCCL's first init sets the plugin up (configuration and buffer pool): the
 * records wait in the thread's block until the first communicator starts the writer. */
static __attribute__((noinline, cold)) int setup_slow(void) {
  atomic_store(&ncs_range_used, 1);
  if (ncs_setup() != 0) {
    atomic_store(&R.state, R_OFF); /* disabled, or no memory: ranges too */
    return 0;
  }
  return atomic_load(&R.state) == R_ON;
}

static inline int on(void) {
  int s = atomic_load_explicit(&R.state, memory_order_relaxed);
  if (NCS_LIKELY(s == R_ON)) return 1;
  return s == R_UNSET ? setup_slow() : 0;
}

static inline uint64_t now(void) { return NCS_LIKELY(ncs_g.use_tsc) ? ncs_tsc() : ncs_mono_ns(); }

/* ------------------------------------------------------------------ labels */

/* What a range is called, as the caller gave it. */
typedef struct {
  uint32_t dom, category, ptype, flags;
  uint64_t payload;
  int kind;          /* NCS_RM_* */
  const char *ascii; /* NCS_RM_INLINE: ascii, or wide converted into buf */
  size_t len;
  uint32_t reg;      /* NCS_RM_REGISTERED: string index */
  char buf[NCS_RANGE_NAME_MAX];
} label_t;

/* UTF-8 of a wide string, at most NCS_RANGE_NAME_MAX bytes; *cut when it did not fit */
static size_t utf8(char *out, const wchar_t *w, int *cut) {
  size_t n = 0;
  for (; *w; w++) {
    uint32_t c = (uint32_t)*w;
    uint8_t b[4];
    size_t k;
    if (c < 0x80) b[0] = (uint8_t)c, k = 1;
    else if (c < 0x800) b[0] = (uint8_t)(0xC0 | c >> 6), b[1] = (uint8_t)(0x80 | (c & 0x3F)), k = 2;
    else if (c < 0x10000)
      b[0] = (uint8_t)(0xE0 | c >> 12), b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3F)),
      b[2] = (uint8_t)(0x80 | (c & 0x3F)), k = 3;
    else if (c < 0x110000)
      b[0] = (uint8_t)(0xF0 | c >> 18), b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3F)),
      b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3F)), b[3] = (uint8_t)(0x80 | (c & 0x3F)), k = 4;
    else b[0] = '?', k = 1; /* not a code point */
    if (n + k > NCS_RANGE_NAME_MAX) {
      *cut = 1;
      break;
    }
    memcpy(out + n, b, k);
    n += k;
  }
  return n;
}

static void label_ascii(label_t *l, const char *s) {
  if (!s) {
    l->kind = NCS_RM_NONE, l->flags |= NCS_RF_NO_NAME;
    return;
  }
  size_t n = strnlen(s, NCS_RANGE_NAME_MAX + 1);
  if (n > NCS_RANGE_NAME_MAX) n = NCS_RANGE_NAME_MAX, l->flags |= NCS_RF_TRUNCATED;
  l->kind = NCS_RM_INLINE, l->ascii = s, l->len = n;
}

static void label_wide(label_t *l, const wchar_t *w) {
  if (!w) {
    l->kind = NCS_RM_NONE, l->flags |= NCS_RF_NO_NAME;
    return;
  }
  int cut = 0;
  l->len = utf8(l->buf, w, &cut);
  l->kind = NCS_RM_INLINE, l->ascii = l->buf;
  if (cut) l->flags |= NCS_RF_TRUNCATED;
}

static uint32_t str_index(const void *h) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  uint32_t i = (uint32_t)v;
  return (v >> 32) == STR_TAG && i >= 1 && i <= atomic_load_explicit(&R.nstr, memory_order_acquire)
             ? i : 0;
}

/* An event attribute structure: only the fields inside the size its caller gave are read. */
static void label_attr(label_t *l, const ncs_nvtx_attr_t *a) {
  size_t have = a ? a->size : 0;
  if (have >= offsetof(ncs_nvtx_attr_t, colorType)) l->category = a->category;
  if (have >= offsetof(ncs_nvtx_attr_t, messageType) && a->payloadType >= NCS_NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 &&
      a->payloadType <= NCS_NVTX_PAYLOAD_TYPE_FLOAT) {
    l->ptype = (uint32_t)a->payloadType;
    l->payload = a->payloadType >= NCS_NVTX_PAYLOAD_TYPE_UNSIGNED_INT32 ? a->payload.uiValue : a->payload.ullValue;
  }
  int mt = have >= sizeof *a ? a->messageType : NCS_NVTX_MESSAGE_UNKNOWN;
  if (mt == NCS_NVTX_MESSAGE_TYPE_ASCII)
    label_ascii(l, a->message.ascii);
  else if (mt == NCS_NVTX_MESSAGE_TYPE_UNICODE)
    label_wide(l, a->message.unicode);
  else if (mt == NCS_NVTX_MESSAGE_TYPE_REGISTERED && (l->reg = str_index(a->message.registered)))
    l->kind = NCS_RM_REGISTERED;
  else
    l->kind = NCS_RM_NONE, l->flags |= NCS_RF_NO_NAME;
}

/* The name's bytes, wherever they are (for CUPTI's range profiler); "" when none */
static const char *label_name(const label_t *l, size_t *n) {
  if (l->kind == NCS_RM_INLINE) return *n = l->len, l->ascii;
  const char *s = l->kind == NCS_RM_REGISTERED ? ncs_range_registered(l->reg - 1) : NULL;
  *n = s ? strlen(s) : 0;
  return s ? s : "";
}

/* ------------------------------------------------------------------ records */

static __attribute__((noinline, cold)) void no_slot(void) {
  atomic_fetch_add_explicit(&R.no_slot, 1, memory_order_relaxed);
}

/* One PUSH, START or MARK record. */
static void put_labelled(unsigned sub, const label_t *l, uint64_t id, uint32_t level, uint64_t mid) {
  ncs_slot_t *s = ncs_slot();
  if (NCS_UNLIKELY(!s)) return no_slot();
  ncs_tls_t *T = &ncs_t;
  size_t n = l->kind == NCS_RM_INLINE ? l->len : 0;
  uint32_t nw = NCS_RANGE_FIXED_WORDS + (uint32_t)((n + 7) / 8);
  uint64_t *w = ncs_reserve(T, nw);
  if (NCS_UNLIKELY(!w)) return ncs_count(&s->range_drops);
  w[1] = now();
  w[2] = id;
  w[3] = l->dom | (uint64_t)l->kind << 16 | (uint64_t)l->ptype << 24 | (uint64_t)l->category << 32;
  w[4] = l->payload;
  w[5] = l->kind == NCS_RM_REGISTERED ? l->reg - 1 : n;
  w[6] = mid;
  if (n) memcpy(&w[NCS_RANGE_FIXED_WORDS], l->ascii, n);
  ncs_publish(T, nw, NCS_REC_HDR(NCS_RAW_RANGE, sub, nw, l->flags, level));
}

/* A POP, END or KLAUNCH record: three words (four for KLAUNCH). */
static void put_short(unsigned sub, uint32_t aux, uint64_t a, uint64_t b) {
  ncs_slot_t *s = ncs_slot();
  if (NCS_UNLIKELY(!s)) return no_slot();
  ncs_tls_t *T = &ncs_t;
  uint32_t nw = sub == NCS_RG_KLAUNCH ? 4 : 3;
  uint64_t *w = ncs_reserve(T, nw);
  if (NCS_UNLIKELY(!w)) return ncs_count(&s->range_drops);
  w[1] = now();
  w[2] = a;
  if (nw == 4) w[3] = b;
  ncs_publish(T, nw, NCS_REC_HDR(NCS_RAW_RANGE, sub, nw, 0, aux));
}

static uint64_t new_id(void) {
  if (NCS_LIKELY(ncs_t.slot)) return ncs_new_id(&ncs_t);
  if (ncs_slot()) return ncs_new_id(&ncs_t);
  return atomic_fetch_add_explicit(&ncs_g.id_counter, 1, memory_order_relaxed);
}

static inline int ignored(uint32_t dom) {
  if (NCS_LIKELY(!R.dom_ignored[dom])) return 0;
  ncs_slot_t *s = ncs_slot();
  if (s) ncs_count(&s->range_ignored);
  return 1;
}

/* Returns the 0-based level of the new range, as NVTX's push does. */
static int push(label_t *l) {
  ncs_range_tls_t *L = &ncs_range_t;
  uint32_t level = ++L->depth;
  uint64_t id = new_id(), mid = 0;
  if (NCS_UNLIKELY(level == atomic_load_explicit(&ncs_hwm_level, memory_order_relaxed))) {
    size_t n;
    const char *nm = label_name(l, &n);
    mid = ncs_hwm_push(id, nm, n);
  }
  put_labelled(NCS_RG_PUSH, l, id, level, mid);
  return (int)level - 1;
}

/* Returns the 0-based level of the range ended, or -1 when none was open. */
static int pop(uint32_t dom) {
  ncs_range_tls_t *L = &ncs_range_t;
  if (NCS_UNLIKELY(!L->depth)) { /* the writer counts it (level 0) */
    put_short(NCS_RG_POP, 0, dom, 0);
    return -1;
  }
  uint32_t level = L->depth--;
  if (NCS_UNLIKELY(L->mx_open) && level == atomic_load_explicit(&ncs_hwm_level, memory_order_relaxed))
    ncs_hwm_pop();
  put_short(NCS_RG_POP, level, dom, 0);
  return (int)level - 1;
}

static uint64_t start(label_t *l) {
  uint64_t id = new_id();
  put_labelled(NCS_RG_START, l, id, ncs_range_t.depth, 0);
  return id;
}

static void end(uint64_t id) { put_short(NCS_RG_END, 0, id, 0); }

static void mark(const label_t *l) { put_labelled(NCS_RG_MARK, l, 0, ncs_range_t.depth, 0); }

/* A kernel or graph launch on this thread, reported by CUPTI's launch callback: inside a range,
 * the writer ties it to the innermost one. */
void ncs_range_launch(uint32_t corr, int graph) {
  if (!ncs_range_t.depth || atomic_load_explicit(&R.state, memory_order_relaxed) != R_ON) return;
  put_short(NCS_RG_KLAUNCH, 0, corr, graph ? NCS_RF_GRAPH : 0);
}

/* ------------------------------------------------------------------ ncclscope's range API
 * (include/ncclscope.h): ranges of NVTX's default domain, flagged as the API's. */

EXPORT int ncclscopeRangePush(const char *name) {
  if (!on()) return -1;
  label_t l = {.flags = NCS_RF_API};
  label_ascii(&l, name);
  return push(&l);
}

EXPORT int ncclscopeRangePop(void) { return on() ? pop(0) : -1; }

EXPORT void ncclscopeMark(const char *name) {
  if (!on()) return;
  label_t l = {.flags = NCS_RF_API};
  label_ascii(&l, name);
  mark(&l);
}

/* ------------------------------------------------------------------ NVTX: domains and strings */

static uint32_t dom_index(const void *h) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  uint32_t i = (uint32_t)v;
  return (v >> 32) == DOM_TAG && i < atomic_load_explicit(&R.ndom, memory_order_acquire) ? i : 0;
}

static void *dom_handle(uint32_t i) { return (void *)(uintptr_t)(DOM_TAG << 32 | i); }

/* The same name gives the same domain. NCCL's own ranges are ignored: its profiler API reports
 * the same calls with more detail. */
static ncs_nvtx_domain_t domain_create(const char *name) {
  if (!name) name = "";
  pthread_mutex_lock(&R.mu);
  uint32_t n = atomic_load(&R.ndom), i;
  for (i = 1; i < n && strncmp(R.dom[i], name, sizeof R.dom[i] - 1); i++) {
  }
  if (i == n && n < NDOM) {
    snprintf(R.dom[i], sizeof R.dom[i], "%s", n == NDOM - 1 ? "(more domains)" : name);
    R.dom_ignored[i] = !strcmp(name, "NCCL") && n < NDOM - 1;
    atomic_store_explicit(&R.ndom, n + 1, memory_order_release);
  } else if (i == n) {
    i = NDOM - 1;
  }
  pthread_mutex_unlock(&R.mu);
  return dom_handle(i);
}

static ncs_nvtx_string_t string_register(const char *s, size_t n) {
  char *copy = malloc(n + 1);
  if (!copy) return NULL;
  memcpy(copy, s, n);
  copy[n] = 0;
  pthread_mutex_lock(&R.mu);
  uint32_t i = atomic_load(&R.nstr);
  if (i < NSTR) {
    atomic_store_explicit(&R.str[i], copy, memory_order_release);
    atomic_store_explicit(&R.nstr, i + 1, memory_order_release);
  }
  pthread_mutex_unlock(&R.mu);
  if (i >= NSTR) { /* table full: pushes with it get no name (flag noname) */
    free(copy);
    return NULL;
  }
  return (void *)(uintptr_t)(STR_TAG << 32 | (i + 1));
}

void ncs_range_free(void) {
  pthread_mutex_lock(&R.mu);
  uint32_t n = atomic_exchange(&R.nstr, 0);
  for (uint32_t i = 0; i < n; i++) free(atomic_exchange(&R.str[i], NULL));
  pthread_mutex_unlock(&R.mu);
  ncs_range_writer_free();
  ncs_hwm_free();
}

const char *ncs_range_domain(uint32_t i) {
  return i && i < atomic_load_explicit(&R.ndom, memory_order_acquire) ? R.dom[i] : NULL;
}

const char *ncs_range_registered(uint32_t i) {
  return i < atomic_load_explicit(&R.nstr, memory_order_acquire)
             ? atomic_load_explicit(&R.str[i], memory_order_acquire) : NULL;
}

void ncs_range_status(ncs_range_status_t *s) {
  s->nvtx = R.nvtx;
  snprintf(s->nvtx_path, sizeof s->nvtx_path, "%s", R.nvtx_path);
  s->nvtx_inits = atomic_load(&R.nvtx_inits);
  s->no_slot = atomic_load(&R.no_slot);
}

/* ------------------------------------------------------------------ NVTX: the slots */

static void nv_mark_ex(const ncs_nvtx_attr_t *a) {
  if (!on()) return;
  label_t l = {0};
  label_attr(&l, a);
  mark(&l);
}
static void nv_mark_a(const char *s) {
  if (!on()) return;
  label_t l = {0};
  label_ascii(&l, s);
  mark(&l);
}
static void nv_mark_w(const wchar_t *s) {
  if (!on()) return;
  label_t l = {0};
  label_wide(&l, s);
  mark(&l);
}
static ncs_nvtx_range_id_t nv_start_ex(const ncs_nvtx_attr_t *a) {
  if (!on()) return 0;
  label_t l = {.flags = NCS_RF_STARTEND};
  label_attr(&l, a);
  return start(&l);
}
static ncs_nvtx_range_id_t nv_start_a(const char *s) {
  if (!on()) return 0;
  label_t l = {.flags = NCS_RF_STARTEND};
  label_ascii(&l, s);
  return start(&l);
}
static ncs_nvtx_range_id_t nv_start_w(const wchar_t *s) {
  if (!on()) return 0;
  label_t l = {.flags = NCS_RF_STARTEND};
  label_wide(&l, s);
  return start(&l);
}
static void nv_end(ncs_nvtx_range_id_t id) {
  if (on()) end(id);
}
static int nv_push_ex(const ncs_nvtx_attr_t *a) {
  if (!on()) return -1;
  label_t l = {0};
  label_attr(&l, a);
  return push(&l);
}
static int nv_push_a(const char *s) {
  if (!on()) return -1;
  label_t l = {0};
  label_ascii(&l, s);
  return push(&l);
}
static int nv_push_w(const wchar_t *s) {
  if (!on()) return -1;
  label_t l = {0};
  label_wide(&l, s);
  return push(&l);
}
static int nv_pop(void) { return on() ? pop(0) : -1; }

static void nv_dmark(ncs_nvtx_domain_t d, const ncs_nvtx_attr_t *a) {
  uint32_t i = dom_index(d);
  if (!on() || ignored(i)) return;
  label_t l = {.dom = i};
  label_attr(&l, a);
  mark(&l);
}
static ncs_nvtx_range_id_t nv_dstart(ncs_nvtx_domain_t d, const ncs_nvtx_attr_t *a) {
  uint32_t i = dom_index(d);
  if (!on() || ignored(i)) return 0;
  label_t l = {.dom = i, .flags = NCS_RF_STARTEND};
  label_attr(&l, a);
  return start(&l);
}
static void nv_dend(ncs_nvtx_domain_t d, ncs_nvtx_range_id_t id) {
  uint32_t i = dom_index(d);
  if (on() && !ignored(i)) end(id);
}
static int nv_dpush(ncs_nvtx_domain_t d, const ncs_nvtx_attr_t *a) {
  uint32_t i = dom_index(d);
  if (!on() || ignored(i)) return 0;
  label_t l = {.dom = i};
  label_attr(&l, a);
  return push(&l);
}
static int nv_dpop(ncs_nvtx_domain_t d) {
  uint32_t i = dom_index(d);
  if (!on() || ignored(i)) return 0;
  return pop(i);
}
static ncs_nvtx_string_t nv_reg_a(ncs_nvtx_domain_t d, const char *s) {
  (void)d;
  if (!on() || !s) return NULL;
  return string_register(s, strnlen(s, NCS_RANGE_NAME_MAX));
}
static ncs_nvtx_string_t nv_reg_w(ncs_nvtx_domain_t d, const wchar_t *s) {
  (void)d;
  if (!on() || !s) return NULL;
  char b[NCS_RANGE_NAME_MAX];
  int cut = 0;
  size_t n = utf8(b, s, &cut);
  return string_register(b, n);
}
static ncs_nvtx_domain_t nv_domain_a(const char *s) {
  return on() ? domain_create(s) : NULL;
}
static ncs_nvtx_domain_t nv_domain_w(const wchar_t *s) {
  if (!on()) return NULL;
  char b[64];
  int cut = 0;
  size_t n = s ? utf8(b, s, &cut) : 0;
  b[n < sizeof b ? n : sizeof b - 1] = 0;
  return domain_create(b);
}
static void nv_domain_destroy(ncs_nvtx_domain_t d) { (void)d; } /* handles stay valid */

typedef struct {
  unsigned id;
  ncs_nvtx_fn_t fn;
} slot_t;

#define S(id, f) {id, (ncs_nvtx_fn_t)(void (*)(void))(f)}
static const slot_t core_slots[] = {
    S(NCS_NVTX_CBID_CORE_MarkEx, nv_mark_ex),         S(NCS_NVTX_CBID_CORE_MarkA, nv_mark_a),
    S(NCS_NVTX_CBID_CORE_MarkW, nv_mark_w),           S(NCS_NVTX_CBID_CORE_RangeStartEx, nv_start_ex),
    S(NCS_NVTX_CBID_CORE_RangeStartA, nv_start_a),    S(NCS_NVTX_CBID_CORE_RangeStartW, nv_start_w),
    S(NCS_NVTX_CBID_CORE_RangeEnd, nv_end),           S(NCS_NVTX_CBID_CORE_RangePushEx, nv_push_ex),
    S(NCS_NVTX_CBID_CORE_RangePushA, nv_push_a),      S(NCS_NVTX_CBID_CORE_RangePushW, nv_push_w),
    S(NCS_NVTX_CBID_CORE_RangePop, nv_pop)};
static const slot_t core2_slots[] = {
    S(NCS_NVTX_CBID_CORE2_DomainMarkEx, nv_dmark),
    S(NCS_NVTX_CBID_CORE2_DomainRangeStartEx, nv_dstart),
    S(NCS_NVTX_CBID_CORE2_DomainRangeEnd, nv_dend),
    S(NCS_NVTX_CBID_CORE2_DomainRangePushEx, nv_dpush),
    S(NCS_NVTX_CBID_CORE2_DomainRangePop, nv_dpop),
    S(NCS_NVTX_CBID_CORE2_DomainRegisterStringA, nv_reg_a),
    S(NCS_NVTX_CBID_CORE2_DomainRegisterStringW, nv_reg_w),
    S(NCS_NVTX_CBID_CORE2_DomainCreateA, nv_domain_a),
    S(NCS_NVTX_CBID_CORE2_DomainCreateW, nv_domain_w),
    S(NCS_NVTX_CBID_CORE2_DomainDestroy, nv_domain_destroy)};
#undef S

static int fill(const ncs_nvtx_callbacks_t *cb, int module, const slot_t *s, size_t n) {
  ncs_nvtx_table_t t = NULL;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(module, &t, &size) || !t) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i].id < size && t[s[i].id]) *t[s[i].id] = s[i].fn;
  return 1;
}

/* NVTX's entry point into a tool: called once by each NVTX copy in the process, at its first
 * call. Returning 0 leaves that copy's calls no-ops (NCCLSCOPE_RANGES=off, NCCLSCOPE_DISABLE). */
EXPORT int InitializeInjectionNvtx2(ncs_nvtx_get_export_table_fn get) {
  /* the plugin's rule (ncs_parse_bool; an unknown spelling keeps the default, on for ranges and
   * off for disable): the plugin's init logs the warning */
  const char *off = getenv("NCCLSCOPE_RANGES"), *dis = getenv("NCCLSCOPE_DISABLE");
  if ((off && ncs_parse_bool(off) == 0) || (dis && ncs_parse_bool(dis) == 1)) return 0;
  const ncs_nvtx_callbacks_t *cb = get ? get(NCS_NVTX_ETID_CALLBACKS) : NULL;
  if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable) return 0;
  atomic_store(&ncs_range_used, 1); /* NVTX holds our functions from now on */
  if (!fill(cb, NCS_NVTX_CB_MODULE_CORE, core_slots, sizeof core_slots / sizeof core_slots[0]))
    return 0;
  fill(cb, NCS_NVTX_CB_MODULE_CORE2, core2_slots, sizeof core2_slots / sizeof core2_slots[0]);
  atomic_fetch_add(&R.nvtx_inits, 1);
  return 1;
}
