/* hmap.h - a small open-addressing hash map from uint64_t to uint64_t (linear probing, deletion
 * by backward shift, so no tombstones): the one hash map of the read side (ncs_util). Keys are
 * any 64-bit value (hash composite keys with hm_mix); a value is often an index into an array. */
#ifndef NCS_UTIL_HMAP_H
#define NCS_UTIL_HMAP_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
  uint64_t *keys, *vals;
  uint8_t *used;
  size_t cap, n; /* cap is a power of two, or 0 */
} hmap_t;

static inline uint64_t hm_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/* FNV-1a over n bytes, continuing from h (start with NCS_HM_FNV0): strings and byte keys */
#define NCS_HM_FNV0 0xcbf29ce484222325ull
static inline uint64_t hm_bytes(const void *p, size_t n, uint64_t h) {
  const unsigned char *s = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}
/* two keys into one */
static inline uint64_t hm_mix2(uint64_t a, uint64_t b) {
  return hm_mix(a ^ hm_mix(b + 0x9e3779b97f4a7c15ull));
}

static inline void hm_free(hmap_t *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  m->keys = m->vals = NULL;
  m->used = NULL;
  m->cap = m->n = 0;
}

static inline void hm_clear(hmap_t *m) {
  for (size_t i = 0; i < m->cap; i++) m->used[i] = 0;
  m->n = 0;
}

/* slot of key, or the empty slot where it would go */
static inline size_t hm_slot(const hmap_t *m, uint64_t key) {
  size_t mask = m->cap - 1, i = (size_t)hm_mix(key) & mask;
  while (m->used[i] && m->keys[i] != key) i = (i + 1) & mask;
  return i;
}

static inline int hm_get(const hmap_t *m, uint64_t key, uint64_t *val) {
  if (!m->cap) return 0;
  size_t i = hm_slot(m, key);
  if (!m->used[i]) return 0;
  if (val) *val = m->vals[i];
  return 1;
}

static inline int hm_rehash(hmap_t *m, size_t cap) {
  hmap_t t = {calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(uint64_t)), calloc(cap, 1), cap, 0};
  if (!t.keys || !t.vals || !t.used) {
    hm_free(&t);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->used[i]) {
      size_t j = hm_slot(&t, m->keys[i]);
      t.used[j] = 1, t.keys[j] = m->keys[i], t.vals[j] = m->vals[i];
      t.n++;
    }
  hm_free(m);
  *m = t;
  return 0;
}

/* insert or replace; returns 0, or -1 when out of memory */
static inline int hm_put(hmap_t *m, uint64_t key, uint64_t val) {
  if ((m->n + 1) * 2 > m->cap && hm_rehash(m, m->cap ? m->cap * 2 : 64) != 0) return -1;
  size_t i = hm_slot(m, key);
  if (!m->used[i]) m->used[i] = 1, m->keys[i] = key, m->n++;
  m->vals[i] = val;
  return 0;
}

/* pointer to the value of key, inserting `init` when absent; NULL when out of memory */
static inline uint64_t *hm_ref(hmap_t *m, uint64_t key, uint64_t init, int *created) {
  if ((m->n + 1) * 2 > m->cap && hm_rehash(m, m->cap ? m->cap * 2 : 64) != 0) return NULL;
  size_t i = hm_slot(m, key);
  *created = !m->used[i];
  if (!m->used[i]) m->used[i] = 1, m->keys[i] = key, m->vals[i] = init, m->n++;
  return &m->vals[i];
}

static inline int hm_del(hmap_t *m, uint64_t key) {
  if (!m->cap) return 0;
  size_t mask = m->cap - 1, i = hm_slot(m, key);
  if (!m->used[i]) return 0;
  m->used[i] = 0;
  m->n--;
  /* backward shift: move later entries of the cluster into the hole when their home allows */
  for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
    size_t home = (size_t)hm_mix(m->keys[j]) & mask;
    /* can the entry at j move to i? only if its home is not in (i, j] (cyclically) */
    int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    m->keys[i] = m->keys[j], m->vals[i] = m->vals[j], m->used[i] = 1;
    m->used[j] = 0;
    i = j;
  }
  return 1;
}

#endif
