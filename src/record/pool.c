/* pool.c - the buffer pool and per-thread slots.
 *
 * All buffer memory is one anonymous mapping made at setup and cut into 64 KiB blocks. A thread
 * claims a slot on its first event and then fills blocks one after the other; when a block is
 * full it takes another from a lock-free free stack (or, while that is empty, the next block
 * never used) and links it behind the full one. The
 * writer thread follows the chain, and gives drained blocks back. The only shared writes on
 * the event path happen once per block (about every thousand events), so two producers share
 * no lock and almost no cache lines.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/ncs.h"

__attribute__((tls_model("initial-exec"))) _Thread_local ncs_tls_t ncs_t;

#define ID_BLOCK 4096

static ncs_block_t *block_at(uint32_t i) {
  return (ncs_block_t *)(ncs_g.pool + (size_t)i * NCS_BLOCK_BYTES);
}

void ncs_block_push(ncs_block_t *b) {
  uint64_t head = atomic_load_explicit(&ncs_g.free_head, memory_order_relaxed);
  for (;;) {
    __atomic_store_n(&b->next_free, (uint32_t)head, __ATOMIC_RELAXED); /* old top + 1, 0 = none */
    uint64_t nh = ((head >> 32) + 1) << 32 | (b->index + 1);
    if (atomic_compare_exchange_weak_explicit(&ncs_g.free_head, &head, nh, memory_order_release,
                                              memory_order_relaxed))
      break;
  }
  atomic_fetch_sub_explicit(&ncs_g.blocks_in_use, 1, memory_order_relaxed);
}

/* a block in use: the count and its peak */
static void block_taken(void) {
  uint32_t used = atomic_fetch_add_explicit(&ncs_g.blocks_in_use, 1, memory_order_relaxed) + 1;
  uint32_t peak = atomic_load_explicit(&ncs_g.blocks_peak, memory_order_relaxed);
  while (used > peak && !atomic_compare_exchange_weak_explicit(&ncs_g.blocks_peak, &peak, used,
                                                               memory_order_relaxed,
                                                               memory_order_relaxed)) {
  }
}

/* A block never handed out before: its header is written now, by the thread that takes it (the
 * pool's pages stay untouched until a block is needed: no page fault per block at setup). */
static ncs_block_t *block_fresh(void) {
  uint32_t i = atomic_load_explicit(&ncs_g.blocks_fresh, memory_order_relaxed);
  do {
    if (i >= ncs_g.nblocks) return NULL;
  } while (!atomic_compare_exchange_weak_explicit(&ncs_g.blocks_fresh, &i, i + 1, memory_order_relaxed,
                                                  memory_order_relaxed));
  ncs_block_t *b = block_at(i);
  b->index = i;
  b->cap = (NCS_BLOCK_BYTES - sizeof(ncs_block_t)) / sizeof(uint64_t);
  block_taken();
  atomic_store_explicit(&b->next, NULL, memory_order_relaxed);
  return b;
}

ncs_block_t *ncs_block_pop(void) {
  uint64_t head = atomic_load_explicit(&ncs_g.free_head, memory_order_acquire);
  for (;;) {
    uint32_t top = (uint32_t)head;
    if (!top) return block_fresh();
    ncs_block_t *b = block_at(top - 1);
    /* b->next_free may be stale if another thread popped b meanwhile; the tag in the upper
     * half makes that CAS fail, so a stale read is never used. */
    uint32_t nxt = __atomic_load_n(&b->next_free, __ATOMIC_RELAXED);
    uint64_t nh = ((head >> 32) + 1) << 32 | nxt;
    if (atomic_compare_exchange_weak_explicit(&ncs_g.free_head, &head, nh, memory_order_acquire,
                                              memory_order_acquire)) {
      block_taken();
      atomic_store_explicit(&b->next, NULL, memory_order_relaxed);
      return b;
    }
  }
}

/* Every block free: the free stack empty, and blocks 0, 1, ... handed out fresh in that order
 * (block_fresh) once it is; drained blocks go back on the stack, and are taken again first. */
static void pool_init_blocks(void) {
  atomic_store(&ncs_g.free_head, 0);
  atomic_store(&ncs_g.blocks_in_use, 0);
  atomic_store(&ncs_g.blocks_peak, 0);
  atomic_store(&ncs_g.blocks_fresh, 0);
}

static void slot_release_tls(void *p) {
  ncs_slot_t *s = p;
  /* The thread is exiting: the writer drains what is left and frees the slot. */
  if (s) atomic_store_explicit(&s->state, NCS_SLOT_EXITED, memory_order_release);
}

int ncs_pool_setup(void) {
  size_t nb = ncs_g.cfg.pool_bytes / NCS_BLOCK_BYTES;
  if (nb < 16) nb = 16;
  ncs_g.nblocks = (uint32_t)nb;
  ncs_g.pool_len = nb * NCS_BLOCK_BYTES;
  /* MAP_NORESERVE: pages become resident only when a block is first used */
  void *p = mmap(NULL, ncs_g.pool_len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return -1;
  ncs_g.pool = p;
  pool_init_blocks();

  ncs_g.nslots = ncs_g.cfg.max_threads;
  size_t slen = sizeof(ncs_slot_t) * ncs_g.nslots;
  p = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    munmap(ncs_g.pool, ncs_g.pool_len);
    ncs_g.pool = NULL;
    return -1;
  }
  ncs_g.slots = p;
  if (pthread_key_create(&ncs_g.tls_key, slot_release_tls) == 0) ncs_g.tls_key_ok = 1;
  return 0;
}

int ncs_prefault(void *p, size_t len) {
#ifdef MADV_POPULATE_WRITE
  uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = ((uintptr_t)p + pg - 1) & ~(pg - 1),
            e = ((uintptr_t)p + len) & ~(pg - 1);
  if (e <= a) return 0;
  return madvise((void *)a, e - a, MADV_POPULATE_WRITE) == 0 ? 0 : -1;
#else
  (void)p, (void)len;
  return -1;
#endif
}

/* The pool is MAP_NORESERVE: a page becomes resident when a thread first writes it, and the page
 * fault lands in NCCL's own thread in the middle of an operation (16 per block; on a virtual
 * machine several microseconds each). The writer takes them first, off NCCL's threads. */
size_t ncs_pool_prefault(void) {
  uint32_t nb = ncs_g.nblocks < NCS_PREFAULT_BLOCKS ? ncs_g.nblocks : NCS_PREFAULT_BLOCKS;
  if (!ncs_g.pool || !nb) return 0;
  return ncs_prefault(ncs_g.pool, (size_t)nb * NCS_BLOCK_BYTES) == 0 ? (size_t)nb * NCS_BLOCK_BYTES : 0;
}

void ncs_pool_teardown(void) {
  /* Called from the library destructor once no communicator is alive (NCCL is about to
   * dlclose us). Threads never call in again, so the memory can go. */
  if (ncs_g.tls_key_ok) pthread_key_delete(ncs_g.tls_key);
  ncs_g.tls_key_ok = 0;
  if (ncs_g.slots) munmap(ncs_g.slots, sizeof(ncs_slot_t) * ncs_g.nslots);
  if (ncs_g.pool) munmap(ncs_g.pool, ncs_g.pool_len);
  ncs_g.slots = NULL;
  ncs_g.pool = NULL;
  memset(&ncs_t, 0, sizeof ncs_t);
}

void ncs_pool_reset_after_fork(void) {
  /* Only the forking thread exists in the child: every other slot is orphaned. */
  for (uint32_t i = 0; i < ncs_g.nslots; i++) {
    memset(&ncs_g.slots[i], 0, sizeof ncs_g.slots[i]);
  }
  pool_init_blocks();
  memset(&ncs_t, 0, sizeof ncs_t);
  if (ncs_g.tls_key_ok) pthread_setspecific(ncs_g.tls_key, NULL);
}

void ncs_refill_ids(ncs_tls_t *T) {
  T->next_id = atomic_fetch_add_explicit(&ncs_g.id_counter, ID_BLOCK, memory_order_relaxed);
  T->id_end = T->next_id + ID_BLOCK;
}

ncs_slot_t *ncs_slot_claim(void) {
  if (!atomic_load_explicit(&ncs_g.ready, memory_order_relaxed)) return NULL;
  for (uint32_t i = 0; i < ncs_g.nslots; i++) {
    ncs_slot_t *s = &ncs_g.slots[i];
    int expect = NCS_SLOT_FREE;
    if (atomic_load_explicit(&s->state, memory_order_relaxed) != NCS_SLOT_FREE) continue;
    /* claim with a temporary state so the writer does not look at it half-built */
    if (!atomic_compare_exchange_strong(&s->state, &expect, -1)) continue;
    /* No block yet: the first record takes one (or counts a drop if the pool is empty), so a
     * thread that arrives while the pool is exhausted still has a slot to count on. */
    s->rd = NULL;
    s->rdpos = 0;
    atomic_store_explicit(&s->first, NULL, memory_order_relaxed);
    s->tid = (pid_t)syscall(SYS_gettid);
    s->thread_index = atomic_fetch_add(&ncs_g.next_thread_index, 1);
    s->announced = 0;
    memset(&ncs_t, 0, sizeof ncs_t);
    ncs_refill_ids(&ncs_t);
    /* the rare-path counters are never reset: the writer subtracts a per-segment base */
    atomic_store_explicit(&s->state, NCS_SLOT_ACTIVE, memory_order_release);
    ncs_t.slot = s;
    if (ncs_g.tls_key_ok) pthread_setspecific(ncs_g.tls_key, s);
    return s;
  }
  return NULL;
}

/* The thread's block is full (or it has none): take the next one. Its first word is zeroed
 * before the writer can reach it (through `first` or the full block's `next`, both published
 * with release), so the writer never mistakes what an earlier use left there for a record. */
uint64_t *ncs_slot_advance(ncs_tls_t *T, uint32_t nwords) {
  if (!T->slot) return NULL;
  ncs_block_t *nb = ncs_block_pop();
  if (!nb) return NULL; /* pool exhausted: the caller counts a drop */
  if (nwords + 1 > nb->cap) {
    ncs_block_push(nb);
    return NULL;
  }
  __atomic_store_n(&nb->words[0], 0, __ATOMIC_RELAXED);
  ncs_block_t *old = T->blk;
  T->blk = nb;
  T->w = nb->words;
  T->end = nb->words + nb->cap - 1; /* the last word is for a terminator only */
  if (!old) /* the thread's first block */
    atomic_store_explicit(&T->slot->first, nb, memory_order_release);
  else /* publishing next tells the writer that old is final */
    atomic_store_explicit(&old->next, nb, memory_order_release);
  return T->w;
}
