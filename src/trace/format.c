/* format.c - schemas, CRC-32C, varints and event-list parsing shared by writer and reader. */
#include "trace/format.h"

#include <stdlib.h>
#include <string.h>

#define F(n, k) {n, NCS_FK_##k}
const ncs_schema_t ncs_schema[NCS_T_COUNT] = {
    [NCS_T_GROUP] = {"Group", "group", 0, {{0}}},
    [NCS_T_COLL] = {"Coll", "coll", 18,
                    {F("seqNumber", U64), F("func", STR), F("sendBuff", PTR), F("recvBuff", PTR),
                     F("count", U64), F("root", I64), F("datatype", STR), F("nChannels", U64),
                     F("nWarps", U64), F("algo", STR), F("proto", STR), F("parentGroup", REF),
                     F("commHash", U64), F("name", STR), F("trafficBytes", U64), F("op", I64),
                     F("isCollnet", BOOL), F("isNvls", BOOL)}},
    [NCS_T_P2P] = {"P2p", "p2p", 9,
                   {F("func", STR), F("buff", PTR), F("datatype", STR), F("count", U64),
                    F("peer", I64), F("nChannels", U64), F("parentGroup", REF), F("commHash", U64),
                    F("name", STR)}},
    [NCS_T_PROXY_OP] = {"ProxyOp", "proxyop", 6,
                        {F("pid", I64), F("channelId", U64), F("peer", I64), F("nSteps", I64),
                         F("chunkSize", I64), F("isSend", I64)}},
    [NCS_T_PROXY_STEP] = {"ProxyStep", "proxystep", 1, {F("step", I64)}},
    [NCS_T_PROXY_CTRL] = {"ProxyCtrl", "proxyctrl", 0, {{0}}},
    [NCS_T_KERNEL_CH] = {"KernelCh", "kernel", 2, {F("channelId", U64), F("pTimer", U64)}},
    [NCS_T_NET_PLUGIN] = {"NetPlugin", "net", 10,
                          {F("id", I64), F("data", PTR), F("decoded", BOOL), F("fd", I64),
                           F("op", I64), F("length", U64), F("device", I64), F("wr_id", U64),
                           F("opcode", I64), F("qpNum", I64)}},
    [NCS_T_GROUP_API] = {"GroupApi", "groupapi", 2, {F("graphCaptured", BOOL), F("groupDepth", I64)}},
    [NCS_T_COLL_API] = {"CollApi", "collapi", 6,
                        {F("func", STR), F("count", U64), F("datatype", STR), F("root", I64),
                         F("stream", PTR), F("graphCaptured", BOOL)}},
    [NCS_T_P2P_API] = {"P2pApi", "p2papi", 5,
                       {F("func", STR), F("count", U64), F("datatype", STR), F("stream", PTR),
                        F("graphCaptured", BOOL)}},
    [NCS_T_KERNEL_LAUNCH] = {"KernelLaunch", "launch", 1, {F("stream", PTR)}},
    [NCS_T_CE_COLL] = {"CeColl", "cecoll", 13,
                       {F("seqNumber", U64), F("func", STR), F("sendBuff", PTR), F("recvBuff", PTR),
                        F("count", U64), F("root", I64), F("datatype", STR),
                        F("syncStrategy", STR), F("intraBatchSync", BOOL), F("batchSize", U64),
                        F("numBatches", U64), F("ceSeqNum", U64), F("stream", PTR)}},
    [NCS_T_CE_SYNC] = {"CeSync", "cesync", 2, {F("isComplete", BOOL), F("nRanks", I64)}},
    [NCS_T_CE_BATCH] = {"CeBatch", "cebatch", 3,
                        {F("numOps", I64), F("totalBytes", U64), F("useIntraSync", BOOL)}},
};
#undef F

const char *const ncs_state_names[31] = {
    "ProxyOpSendPosted", "ProxyOpSendRemFifoWait", "ProxyOpSendTransmitted", "ProxyOpSendDone",
    "ProxyOpRecvPosted", "ProxyOpRecvReceived", "ProxyOpRecvTransmitted", "ProxyOpRecvDone",
    "ProxyStepSendGPUWait", "ProxyStepSendWait", "ProxyStepRecvWait", "ProxyStepRecvFlushWait",
    "ProxyStepRecvGPUWait", "ProxyCtrlIdle", "ProxyCtrlActive", "ProxyCtrlSleep",
    "ProxyCtrlWakeup", "ProxyCtrlAppend", "ProxyCtrlAppendEnd", "ProxyOpInProgress",
    "ProxyStepSendPeerWait", "NetPluginUpdate", "KernelChStop", "GroupStartApiStop",
    "GroupEndApiStart", "CeCollStart", "CeCollComplete", "CeSyncStart", "CeSyncComplete",
    "CeBatchStart", "CeBatchComplete"};

const char *ncs_type_name(unsigned t) { return t < NCS_T_COUNT ? ncs_schema[t].name : "?"; }

const char *ncs_state_name(unsigned s) {
  return s < sizeof ncs_state_names / sizeof ncs_state_names[0] ? ncs_state_names[s] : "?";
}

/* Table-driven CRC-32C; the table is built once (idempotent, so a race only rebuilds it). */
static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[i] = c;
  }
  __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t ncs_crc32c(uint32_t crc, const void *buf, size_t len) {
  if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) crc_init();
  const uint8_t *p = buf;
  crc = ~crc;
  while (len--) crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
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

size_t ncs_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
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
      {"all", 0x7FFF},
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
  if (*e || v > 0x7FFF) return -1;
  *m = (uint32_t)v;
  return 0;
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
