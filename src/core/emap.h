/* emap.h - the writer thread's small hash maps: fixed capacity (a power of 2, allocated once),
 * entries of any size keyed by their first 8 bytes (0 = empty), open addressing with
 * backward-shift deletion (no tombstones). Used by GPU truth and user ranges (in core, below both
 * of them and the writer). */
#ifndef NCS_CORE_EMAP_H
#define NCS_CORE_EMAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/ncs.h"

typedef struct {
  uint8_t *e;
  size_t sz;
  uint32_t cap, n;
} map_t;

static inline void *m_at(const map_t *m, uint32_t i) { return m->e + (size_t)i * m->sz; }
static inline uint64_t m_key(const map_t *m, uint32_t i) {
  uint64_t k;
  memcpy(&k, m_at(m, i), sizeof k);
  return k;
}
static inline uint32_t m_home(const map_t *m, uint64_t k) {
  return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
}

static inline void *m_find(const map_t *m, uint64_t k) {
  if (!k || !m->e) return NULL;
  for (uint32_t i = m_home(m, k), n = 0; n < m->cap; n++, i = (i + 1) & (m->cap - 1)) {
    uint64_t x = m_key(m, i);
    if (x == k) return m_at(m, i);
    if (!x) return NULL;
  }
  return NULL;
}

/* The entry of k, new (zeroed) or existing; NULL when the map is full (3/4 used). */
static inline void *m_put(map_t *m, uint64_t k) {
  if (!k || !m->e) return NULL;
  void *e = m_find(m, k);
  if (e) return e;
  if (m->n + 1 > m->cap / 4 * 3) return NULL;
  uint32_t i = m_home(m, k);
  while (m_key(m, i)) i = (i + 1) & (m->cap - 1);
  e = m_at(m, i);
  memset(e, 0, m->sz);
  memcpy(e, &k, sizeof k);
  m->n++;
  return e;
}

/* Delete an entry; entries after it may move (pointers into the map are then stale). */
static inline void m_del(map_t *m, void *e) {
  uint32_t i = (uint32_t)(((uint8_t *)e - m->e) / m->sz);
  memset(m_at(m, i), 0, sizeof(uint64_t));
  m->n--;
  for (uint32_t j = (i + 1) & (m->cap - 1); m_key(m, j); j = (j + 1) & (m->cap - 1)) {
    if (!ncs_probe_moves(i, j, m_home(m, m_key(m, j)))) continue;
    memcpy(m_at(m, i), m_at(m, j), m->sz);
    memset(m_at(m, j), 0, sizeof(uint64_t));
    i = j;
  }
}

static inline void m_clear(map_t *m) {
  if (m->e) memset(m->e, 0, (size_t)m->cap * m->sz);
  m->n = 0;
}

static inline int m_init(map_t *m, size_t sz, uint32_t cap) {
  if (m->e) return 0;
  m->e = calloc(cap, sz);
  m->sz = sz, m->cap = cap, m->n = 0;
  return m->e ? 0 : -1;
}

static inline void m_free(map_t *m) {
  free(m->e);
  memset(m, 0, sizeof *m);
}

#endif
