/* flight.c - reading flight-recorder files: header checks and linearization (see flight.h).
 * The input is untrusted: every offset and length is checked against the file size. */
#include "trace/flight.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/format.h"

int ncs_flight_is(const void *data, size_t len) {
  return len >= 8 && memcmp(data, NCS_FLIGHT_MAGIC, 8) == 0;
}

const char *ncs_flight_reason_name(uint32_t r) {
  static const char *const n[] = {"none", "signal", "watchdog", "request", "exit"};
  return r < sizeof n / sizeof n[0] ? n[r] : "unknown";
}

const char *ncs_flight_state_name(uint32_t s) {
  static const char *const n[] = {"?", "running", "exited", "dump"};
  return s < sizeof n / sizeof n[0] ? n[s] : "?";
}

typedef struct {
  uint64_t seq;
  uint32_t index;
} slot_ref_t;

static int by_seq(const void *a, const void *b) {
  const slot_ref_t *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One header window into an ncs_loss_t: 1, 0 when it holds nothing, -1 when it cannot be true
 * (damage). */
static int loss_window(const ncs_flight_loss_t *w, ncs_loss_t *l) {
  if (w->reason < 1 || w->reason > NCS_LOSS_MAX || w->from_mono > w->to_mono) return -1;
  memset(l, 0, sizeof *l);
  l->reason = w->reason, l->from_ns = w->from_mono, l->to_ns = w->to_mono;
  for (unsigned t = 0; t < NCS_T_COUNT; t++) {
    if (w->by_type[t] > UINT64_MAX - l->records) return -1;
    l->records += w->by_type[t];
    l->by_type[t] = w->by_type[t];
  }
  return l->records > 0;
}

static int by_loss_seq(const void *a, const void *b) {
  const ncs_flight_loss_t *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Builds between the loss windows and KernelPhase (trace format 1.2: NCS_FLF_LOSS without
 * NCS_FLF_LOSS_T16) kept 15 types per window: the same fields, 152 bytes each, from the same
 * offset (loss_earlier). One such window into the current layout; type 15 (KernelPhase) did not
 * exist there. */
#define LOSS15_TYPES 15
#define LOSS15_LEN (24 + 8 * LOSS15_TYPES + 8)
static void loss15(const uint8_t *p, ncs_flight_loss_t *w) {
  memset(w, 0, sizeof *w);
  memcpy(&w->seq, p, 8);
  memcpy(&w->reason, p + 8, 4);
  memcpy(&w->open, p + 12, 4);
  memcpy(&w->from_mono, p + 16, 8);
  memcpy(&w->to_mono, p + 24, 8);
  memcpy(w->by_type, p + 32, 8 * LOSS15_TYPES);
}
_Static_assert(LOSS15_LEN == 152 && NCS_LOSS_MAX == 3, "format 1.2's loss windows");
_Static_assert(offsetof(ncs_flight_hdr_t, loss_earlier) + (NCS_LOSS_MAX + NCS_FLIGHT_LOSS_WINDOWS) * LOSS15_LEN <=
                   NCS_FLIGHT_HDR_LEN,
               "format 1.2's loss windows lie in the header page");

/* The header's loss windows: the folded earlier ones first, then the kept ones by seq. `page` is
 * the header page (NCS_FLIGHT_HDR_LEN bytes), h its decoded copy. */
static void loss_windows(const uint8_t *page, const ncs_flight_hdr_t *h, ncs_flight_info_t *info) {
  if (!(h->features & (NCS_FLF_LOSS | NCS_FLF_LOSS_T16))) return;
  info->has_loss = 1;
  info->loss_torn = h->loss_gen & 1;
  ncs_flight_loss_t early[NCS_LOSS_MAX], w[NCS_FLIGHT_LOSS_WINDOWS];
  if (h->features & NCS_FLF_LOSS_T16) {
    memcpy(early, h->loss_earlier, sizeof early);
    memcpy(w, h->loss, sizeof w);
  } else {
    const uint8_t *p = page + offsetof(ncs_flight_hdr_t, loss_earlier);
    for (unsigned i = 0; i < NCS_LOSS_MAX; i++, p += LOSS15_LEN) loss15(p, &early[i]);
    for (unsigned i = 0; i < NCS_FLIGHT_LOSS_WINDOWS; i++, p += LOSS15_LEN) loss15(p, &w[i]);
  }
  qsort(w, NCS_FLIGHT_LOSS_WINDOWS, sizeof w[0], by_loss_seq);
  for (unsigned i = 0; i < NCS_LOSS_MAX + NCS_FLIGHT_LOSS_WINDOWS; i++) {
    const ncs_flight_loss_t *x = i < NCS_LOSS_MAX ? &early[i] : &w[i - NCS_LOSS_MAX];
    if (!x->seq) continue;
    int ok = loss_window(x, &info->loss[info->nloss]);
    if (ok > 0) info->nloss++;
    if (ok < 0) info->loss_bad++;
  }
}

static void cpy(char *dst, const char *src, size_t n) {
  memcpy(dst, src, n);
  dst[n - 1] = 0;
}

int ncs_flight_linearize(const uint8_t *data, size_t len, uint8_t **out, size_t *outlen,
                         ncs_flight_info_t *info, uint32_t *bad_slots, char *err, size_t errlen) {
  *out = NULL, *outlen = 0, *bad_slots = 0;
  memset(info, 0, sizeof *info);
  ncs_flight_hdr_t h;
  if (len < NCS_FLIGHT_HDR_LEN || !ncs_flight_is(data, len)) {
    snprintf(err, errlen, "not a flight file (short or bad magic)");
    return -1;
  }
  memcpy(&h, data, sizeof h);
  if (h.version != NCS_FLIGHT_VERSION || h.hdr_len != NCS_FLIGHT_HDR_LEN) {
    snprintf(err, errlen, "flight file version %u (header %u) not supported", h.version, h.hdr_len);
    return -1;
  }
  if (h.meta_off < NCS_FLIGHT_HDR_LEN || h.meta_cap > len || h.meta_off > len - h.meta_cap ||
      h.meta_len > h.meta_cap || h.meta_len < NCS_FILE_HEADER_LEN) {
    snprintf(err, errlen, "flight file: meta region out of bounds");
    return -1;
  }
  if (h.slot_bytes <= NCS_FLIGHT_SLOT_HDR || h.nslots == 0 || h.nslots > (1u << 20) ||
      h.ring_off < h.meta_off + h.meta_cap || h.ring_off > len ||
      (uint64_t)h.slot_bytes * h.nslots > len - h.ring_off) {
    snprintf(err, errlen, "flight file: ring out of bounds (file cut short?)");
    return -1;
  }
  info->state = h.state, info->dump_reason = h.dump_reason, info->dump_index = h.dump_index;
  info->open_ops = h.open_ops, info->pid = h.pid;
  info->heartbeat_mono = h.heartbeat_mono, info->heartbeat_real = h.heartbeat_real;
  info->last_event_mono = h.last_event_mono;
  info->dump_mono = h.dump_mono, info->dump_real = h.dump_real, info->trigger_real = h.trigger_real;
  info->stalled_since_mono = h.stalled_since_mono, info->watchdog_ns = h.watchdog_ns;
  info->keyframe_trunc = h.keyframe_trunc, info->slots_recycled = h.slots_recycled;
  info->nslots = h.nslots, info->slot_bytes = h.slot_bytes;
  cpy(info->trigger, h.trigger, sizeof info->trigger);
  cpy(info->host, h.host, sizeof info->host);
  loss_windows(data, &h, info);

  slot_ref_t *refs = malloc(sizeof *refs * h.nslots);
  if (!refs) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  uint32_t n = 0;
  size_t total = h.meta_len;
  uint32_t cap = h.slot_bytes - NCS_FLIGHT_SLOT_HDR;
  for (uint32_t i = 0; i < h.nslots; i++) {
    ncs_flight_slot_t s;
    memcpy(&s, data + h.ring_off + (uint64_t)i * h.slot_bytes, sizeof s);
    if (!s.seq) continue;
    if (s.used > cap || s.kf_len > s.used) {
      (*bad_slots)++;
      continue;
    }
    refs[n].seq = s.seq, refs[n].index = i;
    n++;
    total += s.used;
  }
  qsort(refs, n, sizeof *refs, by_seq);
  uint8_t *buf = malloc(total ? total : 1);
  if (!buf) {
    free(refs);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  size_t pos = 0;
  memcpy(buf, data + h.meta_off, h.meta_len);
  pos = h.meta_len;
  int first = 1;
  for (uint32_t k = 0; k < n; k++) {
    const uint8_t *base = data + h.ring_off + (uint64_t)refs[k].index * h.slot_bytes;
    ncs_flight_slot_t s;
    memcpy(&s, base, sizeof s);
    /* The slot's bytes go to the reader as they are: it checks every chunk, skips a damaged
     * one and resynchronizes on the next valid chunk, which may be the next slot's first. */
    const uint8_t *p = base + NCS_FLIGHT_SLOT_HDR;
    size_t from = first ? 0 : s.kf_len;
    memcpy(buf + pos, p + from, s.used - from);
    pos += s.used - from;
    if (first) info->window_mono = s.first_mono;
    first = 0;
    info->slots_used++;
  }
  free(refs);
  *out = buf, *outlen = pos;
  return 0;
}
