/* format.c - schemas, CRC-32C, varints and event-list parsing shared by writer and reader. */
#include "trace/format.h"
#include <pthread.h>
#include <stdint.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SCHEMA_FIELD_(T, n, k) {#n, NCS_FK_##k},
#define SCHEMA_TYPE_(E, T, c) [NCS_T_##E] = {#T, #c, NCS_NF(T), {NCS_FIELDS_##T(SCHEMA_FIELD_){0}}},
const ncs_schema_t ncs_schema[NCS_T_COUNT] = {NCS_EVENT_TYPES(SCHEMA_TYPE_)};
#undef SCHEMA_TYPE_
#undef SCHEMA_FIELD_
/* every list leaves room for the {0} that ends it above */
#define SCHEMA_FITS_(E, T, c) _Static_assert(NCS_NF(T) < NCS_MAX_FIELDS, #T " has too many fields");
NCS_EVENT_TYPES(SCHEMA_FITS_)
#undef SCHEMA_FITS_

const char *const ncs_state_names[NCS_STATE_COUNT] = {
    "ProxyOpSendPosted", "ProxyOpSendRemFifoWait", "ProxyOpSendTransmitted", "ProxyOpSendDone",
    "ProxyOpRecvPosted", "ProxyOpRecvReceived", "ProxyOpRecvTransmitted", "ProxyOpRecvDone",
    "ProxyStepSendGPUWait", "ProxyStepSendWait", "ProxyStepRecvWait", "ProxyStepRecvFlushWait",
    "ProxyStepRecvGPUWait", "ProxyCtrlIdle", "ProxyCtrlActive", "ProxyCtrlSleep",
    "ProxyCtrlWakeup", "ProxyCtrlAppend", "ProxyCtrlAppendEnd", "ProxyOpInProgress",
    "ProxyStepSendPeerWait", "NetPluginUpdate", "KernelChStop", "GroupStartApiStop",
    "GroupEndApiStart", "CeCollStart", "CeCollComplete", "CeSyncStart", "CeSyncComplete",
    "CeBatchStart", "CeBatchComplete", "KernelPhaseStop"};

const char *ncs_type_name(unsigned t) { return t < NCS_T_COUNT ? ncs_schema[t].name : "?"; }

const char *ncs_chunk_name(unsigned t) {
  static const char *const n[] = {"chunk",    "SEGMENT", "CLOCK",  "STRINGS",  "COMM", "COMM_END",
                                  "THREAD",   "EVENTS",  "COUNTERS", "FOOTER", "LOSS", "GPU_STATE",
                                  "GPU",      "RANGE_STATE", "RANGES"};
  return t <= NCS_CHUNK_MAX_TYPE ? n[t] : "chunk";
}

const char *ncs_loss_reason_name(unsigned r) {
  static const char *const n[] = {"?", "pool-full", "no-slot", "write-error"};
  return r <= NCS_LOSS_MAX ? n[r] : "?";
}

/* nccl-tests' conventions (docs/report.md, "Per rank and instance"): the report and the live
 * metrics count bytes and bus bandwidth alike through these */
uint32_t ncs_type_size(const char *dt) {
  static const struct {
    const char *name;
    uint32_t size;
  } t[] = {{"Unknown", 1}, /* ncclUint8: NCCL has no string for it (research notes 2.9) */
           {"ncclInt8", 1}, {"ncclChar", 1}, {"ncclUint8", 1}, {"ncclFloat8e4m3", 1},
           {"ncclFloat8e5m2", 1}, {"ncclFloat16", 2}, {"ncclHalf", 2}, {"ncclBfloat16", 2},
           {"ncclInt32", 4}, {"ncclInt", 4}, {"ncclUint32", 4}, {"ncclFloat32", 4},
           {"ncclFloat", 4}, {"ncclInt64", 8}, {"ncclUint64", 8}, {"ncclFloat64", 8},
           {"ncclDouble", 8}};
  if (!dt) return 0;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(dt, t[i].name)) return t[i].size;
  return 0; /* a name not in the table: its bytes are not known, and are not guessed */
}

uint64_t ncs_op_bytes(const char *func, const char *dt, uint64_t count, int nranks, int p2p) {
  uint64_t b = count * ncs_type_size(dt);
  if (!p2p && (ncs_is_func(func, "AllGather") || ncs_is_func(func, "ReduceScatter")))
    b *= (uint64_t)(nranks > 0 ? nranks : 1);
  return b;
}

double ncs_bus_factor(const char *func, int nranks) {
  if (nranks <= 1) return 1.0;
  if (ncs_is_func(func, "AllReduce")) return 2.0 * (nranks - 1) / nranks;
  if (ncs_is_func(func, "AllGather") || ncs_is_func(func, "ReduceScatter")) return (double)(nranks - 1) / nranks;
  return 1.0;
}

const char *ncs_state_name(unsigned s) {
  return s < sizeof ncs_state_names / sizeof ncs_state_names[0] ? ncs_state_names[s] : "?";
}

/* CRC-32C. On x86-64 with SSE4.2 (checked once at run time) the CPU's crc32 instruction, 8 bytes
 * at a time; elsewhere slicing-by-8 tables (8 KiB, built once). Both give the same value
 * (tests/test_format.c checks them against each other and against the standard's vectors). */
static uint32_t crc_tab[8][256];
static int crc_hw_ok;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_tab[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xFF];
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  crc_hw_ok = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t len) {
  while (len && ((uintptr_t)p & 7)) crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8), len--;
  while (len >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    lo = __builtin_bswap32(lo), hi = __builtin_bswap32(hi);
#endif
    lo ^= crc;
    crc = crc_tab[7][lo & 0xFF] ^ crc_tab[6][(lo >> 8) & 0xFF] ^ crc_tab[5][(lo >> 16) & 0xFF] ^
          crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xFF] ^ crc_tab[2][(hi >> 8) & 0xFF] ^
          crc_tab[1][(hi >> 16) & 0xFF] ^ crc_tab[0][hi >> 24];
    p += 8, len -= 8;
  }
  while (len--) crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len) {
  while (len && ((uintptr_t)p & 7)) crc = __builtin_ia32_crc32qi(crc, *p++), len--;
  uint64_t c = crc;
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8, len -= 8;
  }
  crc = (uint32_t)c;
  while (len--) crc = __builtin_ia32_crc32qi(crc, *p++);
  return crc;
}
#endif

uint32_t ncs_crc32c(uint32_t crc, const void *buf, size_t len) {
  pthread_once(&crc_once, crc_init);
#if defined(__x86_64__) && defined(__GNUC__)
  if (crc_hw_ok) return ~crc_hw(~crc, buf, len);
#endif
  return ~crc_soft(~crc, buf, len);
}

uint32_t ncs_crc32c_soft(uint32_t crc, const void *buf, size_t len) {
  pthread_once(&crc_once, crc_init);
  return ~crc_soft(~crc, buf, len);
}

int ncs_crc32c_hw(void) {
  pthread_once(&crc_once, crc_init);
  return crc_hw_ok;
}

size_t ncs_put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

size_t ncs_get_varint_slow(const uint8_t *p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (end - p >= 8) { /* up to 8 bytes at once: find the last byte, then gather the 7-bit groups */
    uint64_t x;
    memcpy(&x, p, sizeof x);
    uint64_t m = ~x & 0x8080808080808080ull; /* the bytes without a continuation bit */
    if (m) {
      size_t len = ((size_t)__builtin_ctzll(m) >> 3) + 1;
      if (len < 8) x &= (1ull << (8 * len)) - 1;
      x &= 0x7F7F7F7F7F7F7F7Full;
      x = (x & 0x007F007F007F007Full) | (x & 0x7F007F007F007F00ull) >> 1;
      x = (x & 0x00003FFF00003FFFull) | (x & 0x3FFF00003FFF0000ull) >> 2;
      x = (x & 0x000000000FFFFFFFull) | (x & 0x0FFFFFFF00000000ull) >> 4;
      *v = x;
      return len;
    }
  }
#endif
  if (end - p >= 10) { /* all ten bytes a varint may have are there: no bound checks */
    for (size_t i = 0; i < 10; i++) {
      uint8_t b = p[i];
      r |= (uint64_t)(b & 0x7F) << (7 * i);
      if (!(b & 0x80)) {
        if (i == 9 && b > 1) return 0; /* would overflow 64 bits */
        *v = r;
        return i + 1;
      }
    }
    return 0;
  }
  for (size_t i = 0; i < 10; i++) {
    if (p + i >= end) return 0;
    uint8_t b = p[i];
    if (i == 9 && b > 1) return 0; /* would overflow 64 bits */
    r |= (uint64_t)(b & 0x7F) << (7 * i);
    if (!(b & 0x80)) {
      *v = r;
      return i + 1;
    }
  }
  return 0;
}

static int name_mask(const char *tok, size_t len, uint32_t *m) {
  static const struct {
    const char *name;
    uint32_t mask;
  } alias[] = {
      {"api", (1u << NCS_T_GROUP_API) | (1u << NCS_T_COLL_API) | (1u << NCS_T_P2P_API) |
                  (1u << NCS_T_KERNEL_LAUNCH)},
      {"proxy", (1u << NCS_T_PROXY_OP) | (1u << NCS_T_PROXY_STEP)},
      {"ce", (1u << NCS_T_CE_COLL) | (1u << NCS_T_CE_SYNC) | (1u << NCS_T_CE_BATCH)},
      {"all", NCS_T_ALL},
      {"none", 0},
  };
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
    if (strlen(alias[i].name) == len && strncmp(tok, alias[i].name, len) == 0) {
      *m = alias[i].mask;
      return 0;
    }
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    if (strlen(ncs_schema[t].cli) == len && strncmp(tok, ncs_schema[t].cli, len) == 0) {
      *m = 1u << t;
      return 0;
    }
  if (len == 7 && strncmp(tok, "default", 7) == 0) {
    const char *b;
    size_t bl;
    return ncs_parse_event_list(NCS_DEFAULT_EVENTS, m, &b, &bl);
  }
  /* a number: decimal or 0x hex */
  char buf[32];
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, tok, len);
  buf[len] = 0;
  char *e;
  unsigned long v = strtoul(buf, &e, 0);
  if (*e || v > NCS_T_ALL) return -1;
  *m = (uint32_t)v;
  return 0;
}

int ncs_parse_bool(const char *s) {
  static const char *const yes[] = {"1", "on", "true", "yes", "enable", "enabled"};
  static const char *const no[] = {"0", "off", "false", "no", "disable", "disabled"};
  if (!s) return -1;
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (!strcasecmp(s, yes[i])) return 1;
    if (!strcasecmp(s, no[i])) return 0;
  }
  return -1;
}

int ncs_parse_event_list(const char *s, uint32_t *mask, const char **bad, size_t *badlen) {
  uint32_t m = 0;
  const char *p = s;
  int any = 0;
  while (*p) {
    while (*p == ',' || *p == ' ' || *p == '|' || *p == '+') p++;
    if (!*p) break;
    const char *q = p;
    while (*q && *q != ',' && *q != ' ' && *q != '|' && *q != '+') q++;
    int neg = (*p == '-' || *p == '^');
    const char *tok = p + neg;
    uint32_t tm;
    if (name_mask(tok, (size_t)(q - tok), &tm) != 0) {
      *bad = p;
      *badlen = (size_t)(q - p);
      return -1;
    }
    if (neg)
      m &= ~tm;
    else
      m |= tm;
    any = 1;
    p = q;
  }
  if (!any) {
    *bad = s;
    *badlen = strlen(s);
    return -1;
  }
  *mask = m;
  return 0;
}
