/* trace_check.c - ncs-trace-check: is a directory of traces from a real run sound? (docs/gpu.md)
 *
 *   ncs-trace-check DIR|FILE... [--expect TYPES] [--want TYPES]
 *                   [--allow-missing-completion TYPES] [--no-seq-match] [--abi N]
 *
 * Reads every trace file and prints one line per check, PASS, FAIL or WARN, then
 * "verdict: PASS" or "verdict: FAIL":
 *   files       trace files were found and none is damaged (truncated or corrupt)
 *   footers     every segment ends with a footer
 *   drops       no record was dropped (footer keys 0x4tt, buffer full, and 0x06, no thread slot)
 *   expected    every type of --expect (event names as in NCCLSCOPE_EVENTS) has START records
 *   wanted      the same for --want, but only a WARN when missing
 *   completion  every Coll and P2p has a COMPLETE record that is not "nochildren", except the
 *               types of --allow-missing-completion
 *   seqmatch    per communicator (commId), every rank that recorded Coll events recorded the same
 *               set of (func, seqNumber); skipped with --no-seq-match
 *   ranks       (WARN only) communicators with fewer ranks recorded than they have
 *   abi         with --abi N: every communicator's COMM record says NCCL called profiler ABI vN
 *               (the proof that a given NCCL picked that version)
 * and an "events" line with the START records per type. Exit status: 0 PASS, 1 FAIL, 2 usage.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/reader.h"

#define NT NCS_T_COUNT

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "ncs-trace-check: out of memory\n");
    exit(2);
  }
  return q;
}

/* ------------------------------------------------------------------ Coll/P2p ids of a segment */
enum { ID_STARTED = 1, ID_DONE = 2, ID_FORCED = 4, ID_NOCHILD = 8, ID_P2P = 16 };
typedef struct {
  uint64_t id;
  uint8_t flags;
} idslot_t;
static idslot_t *g_ids;
static size_t g_ids_cap, g_ids_n;

static idslot_t *id_get(uint64_t id) {
  if (!id) id = UINT64_MAX; /* 0 marks a free slot */
  if (2 * (g_ids_n + 1) > g_ids_cap) {
    size_t old = g_ids_cap;
    idslot_t *o = g_ids;
    g_ids_cap = old ? 2 * old : 1024;
    g_ids = xrealloc(NULL, g_ids_cap * sizeof *g_ids);
    memset(g_ids, 0, g_ids_cap * sizeof *g_ids);
    g_ids_n = 0;
    for (size_t i = 0; i < old; i++)
      if (o[i].id) *id_get(o[i].id) = o[i];
    free(o);
  }
  size_t i = (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (g_ids_cap - 1);
  while (g_ids[i].id && g_ids[i].id != id) i = (i + 1) & (g_ids_cap - 1);
  if (!g_ids[i].id) {
    g_ids[i].id = id;
    g_ids_n++;
  }
  return &g_ids[i];
}

/* ------------------------------------------------------------------ totals */
static struct {
  size_t files, segments, damaged, footers;
  uint64_t starts[NT];
  uint64_t drops_pool, drops_slot;
  int drops_unknown;
  /* completion per parent type: [0] Coll, [1] P2p */
  uint64_t parents[2], done[2], forced[2], nochild[2];
  uint64_t unattributed; /* Coll events without a local communicator */
  uint64_t abi_n[8], abi_other; /* COMM records per ABI version 1..7; others */
} T;

static void segment_end(void) {
  for (size_t i = 0; i < g_ids_cap; i++) {
    idslot_t *s = &g_ids[i];
    if (!s->id || !(s->flags & ID_STARTED)) continue;
    int k = (s->flags & ID_P2P) ? 1 : 0;
    T.parents[k]++;
    if (s->flags & ID_DONE) {
      T.done[k]++;
      if (s->flags & ID_FORCED) T.forced[k]++;
    } else if (s->flags & ID_NOCHILD) {
      T.nochild[k]++;
    }
  }
  if (g_ids) memset(g_ids, 0, g_ids_cap * sizeof *g_ids);
  g_ids_n = 0;
}

/* ------------------------------------------------------------------ seqNumbers per communicator */
typedef struct {
  uint64_t comm_id;
  int32_t rank, nranks;
  uint32_t func;
  uint64_t seq;
} seqrec_t;
static seqrec_t *g_seq;
static size_t g_seq_n, g_seq_cap;

#define MAX_FUNCS 64
static char g_funcs[MAX_FUNCS][32];
static uint32_t g_nfuncs;

static uint32_t func_index(const char *s) {
  if (!s) s = "(null)";
  for (uint32_t i = 0; i < g_nfuncs; i++)
    if (!strcmp(g_funcs[i], s)) return i;
  if (g_nfuncs == MAX_FUNCS) return MAX_FUNCS - 1;
  snprintf(g_funcs[g_nfuncs], sizeof g_funcs[0], "%s", s);
  return g_nfuncs++;
}

/* communicators of the current segment, by index */
typedef struct {
  int valid;
  uint64_t comm_id;
  int32_t rank, nranks;
} comm_t;
static comm_t *g_comms;
static size_t g_comms_cap;

static void comm_add(const ncs_comm_info_t *c) {
  if (c->index >= g_comms_cap) {
    size_t cap = g_comms_cap ? g_comms_cap : 16;
    while (cap <= c->index) cap *= 2;
    g_comms = xrealloc(g_comms, cap * sizeof *g_comms);
    memset(g_comms + g_comms_cap, 0, (cap - g_comms_cap) * sizeof *g_comms);
    g_comms_cap = cap;
  }
  g_comms[c->index] = (comm_t){1, c->comm_id, c->rank, c->nranks};
  if (c->abi_version >= 1 && c->abi_version <= 7)
    T.abi_n[c->abi_version]++;
  else
    T.abi_other++;
}

static void seq_add(const ncs_event_t *e) {
  if (e->ctx_kind != NCS_CTX_LOCAL || e->ctx >= g_comms_cap || !g_comms[e->ctx].valid) {
    T.unattributed++;
    return;
  }
  const comm_t *c = &g_comms[e->ctx];
  if (g_seq_n == g_seq_cap) {
    g_seq_cap = g_seq_cap ? 2 * g_seq_cap : 4096;
    g_seq = xrealloc(g_seq, g_seq_cap * sizeof *g_seq);
  }
  g_seq[g_seq_n++] = (seqrec_t){c->comm_id, c->rank, c->nranks, func_index(e->fstr[NCS_F(Coll, func)]),
                                e->f[NCS_F(Coll, seqNumber)]};
}

static int seq_cmp(const void *a, const void *b) {
  const seqrec_t *x = a, *y = b;
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return 0;
}

/* by (func, seqNumber) only */
static int fs_cmp(const seqrec_t *x, const seqrec_t *y) {
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return 0;
}

/* ------------------------------------------------------------------ reading */
static void read_counters(const ncs_counters_t *c) {
  uint64_t pool = 0, slot = 0;
  for (uint32_t i = 0; i < c->nkeys; i++) {
    uint32_t k = c->keys[i];
    if ((k & ~0xFFu) == NCS_CK_DROPS && (k & 0xFF) < NT)
      pool += c->values[i];
    else if (k == NCS_CK_NO_THREAD_SLOT)
      slot += c->values[i];
  }
  T.drops_pool += pool;
  T.drops_slot += slot;
}

/* a segment of `path` ended (a new one starts, or the file ends) */
static void end_segment(const char *path, int footer, const ncs_counters_t *last) {
  segment_end();
  if (footer) return;
  printf("       %s: segment %zu has no footer\n", path, T.segments - 1);
  if (last)
    read_counters(last);
  else
    T.drops_unknown = 1;
}

static void read_file(const char *path) {
  char err[512];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  T.files++;
  if (!r) {
    printf("       %s: cannot read: %s\n", path, err);
    T.damaged++;
    return;
  }
  ncs_item_t it;
  int rc, in_seg = 0, seg_footer = 0;
  ncs_counters_t last; /* the last COUNTERS snapshot of a segment without footer */
  int have_last = 0;
  while ((rc = ncs_reader_next(r, &it)) == 1) {
    switch (it.what) {
    case NCS_ITEM_SEGMENT:
      if (in_seg) end_segment(path, seg_footer, have_last ? &last : NULL);
      in_seg = 1, seg_footer = 0, have_last = 0;
      T.segments++;
      if (g_comms) memset(g_comms, 0, g_comms_cap * sizeof *g_comms);
      break;
    case NCS_ITEM_COMM: comm_add(&it.comm); break;
    case NCS_ITEM_COUNTERS:
      last = *it.counters;
      have_last = 1;
      break;
    case NCS_ITEM_FOOTER:
      seg_footer = 1;
      T.footers++;
      read_counters(it.counters);
      break;
    case NCS_ITEM_EVENT: {
      const ncs_event_t *e = &it.ev;
      int parent = e->type == NCS_T_COLL || e->type == NCS_T_P2P;
      if (e->kind == NCS_REC_START) {
        if (e->type < NT) T.starts[e->type]++;
        if (parent) id_get(e->id)->flags |= ID_STARTED | (e->type == NCS_T_P2P ? ID_P2P : 0);
        if (e->type == NCS_T_COLL) seq_add(e);
      } else if (e->kind == NCS_REC_COMPLETE && parent) {
        idslot_t *s = id_get(e->id);
        if (e->cflags & NCS_CF_NO_CHILDREN) {
          s->flags |= ID_NOCHILD;
        } else {
          s->flags |= ID_DONE;
          if (e->cflags & NCS_CF_FORCED) s->flags |= ID_FORCED;
        }
      }
      break;
    }
    default: break;
    }
  }
  if (in_seg) end_segment(path, seg_footer, have_last ? &last : NULL);
  if (rc < 0) {
    T.damaged++;
    printf("       %s: %s at offset %" PRIu64 ": %s\n", path,
           ncs_reader_damage(r) == NCS_DAMAGE_TRUNCATED ? "truncated" : "corrupt",
           ncs_reader_error_offset(r), ncs_reader_error(r));
  }
  ncs_reader_close(r);
}

/* ------------------------------------------------------------------ checks */
static int g_fail, g_warn;

static void result(const char *status, const char *check, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void result(const char *status, const char *check, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%-5s %-11s ", status, check);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
  if (!strcmp(status, "FAIL")) g_fail++;
  if (!strcmp(status, "WARN")) g_warn++;
}

static void names_of(uint32_t mask, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (unsigned t = 0; t < NT && o < len; t++)
    if (mask & (1u << t))
      o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", ncs_schema[t].cli);
}

static void check_types(const char *check, uint32_t mask, int fatal) {
  if (!mask) return;
  uint32_t missing = 0;
  for (unsigned t = 0; t < NT; t++)
    if ((mask & (1u << t)) && !T.starts[t]) missing |= 1u << t;
  char want[256], miss[256];
  names_of(mask, want, sizeof want);
  names_of(missing, miss, sizeof miss);
  if (!missing)
    result("PASS", check, "all seen: %s", want);
  else
    result(fatal ? "FAIL" : "WARN", check, "not seen: %s (of %s)", miss, want);
}

static void check_completion(uint32_t allow) {
  static const char *const nm[2] = {"Coll", "P2p"};
  static const unsigned ty[2] = {NCS_T_COLL, NCS_T_P2P};
  char buf[512];
  size_t o = 0;
  int bad = 0;
  for (int k = 0; k < 2; k++) {
    uint64_t missing = T.parents[k] - T.done[k];
    int allowed = (allow >> ty[k]) & 1;
    if (missing && !allowed) bad = 1;
    o += (size_t)snprintf(buf + o, sizeof buf - o,
                          "%s%s %" PRIu64 " of %" PRIu64 " completed (forced %" PRIu64
                          ", no children %" PRIu64 ", none %" PRIu64 ")%s",
                          k ? "; " : "", nm[k], T.done[k], T.parents[k], T.forced[k], T.nochild[k],
                          missing - T.nochild[k], missing && allowed ? " missing allowed" : "");
  }
  result(bad ? "FAIL" : "PASS", "completion", "%s", buf);
}

static void check_seq(void) {
  if (g_seq_n) qsort(g_seq, g_seq_n, sizeof *g_seq, seq_cmp);
  size_t ncomms = 0, bad = 0, colls = 0, short_comms = 0;
  for (size_t i = 0; i < g_seq_n;) {
    uint64_t cid = g_seq[i].comm_id;
    size_t j = i;
    while (j < g_seq_n && g_seq[j].comm_id == cid) j++;
    ncomms++;
    /* [i, j) one commId, sorted by rank, func, seq; the first rank is the reference */
    size_t ref = i, ref_end = i;
    while (ref_end < j && g_seq[ref_end].rank == g_seq[ref].rank) ref_end++;
    int nranks = 0, ranks_recorded = 0;
    for (size_t a = i; a < j;) {
      size_t b = a;
      while (b < j && g_seq[b].rank == g_seq[a].rank) b++;
      ranks_recorded++;
      if (g_seq[a].nranks > nranks) nranks = g_seq[a].nranks;
      /* compare the unique (func, seq) lists of [ref, ref_end) and [a, b) */
      size_t x = ref, y = a;
      int differ = 0;
      const seqrec_t *first = NULL;
      while (x < ref_end || y < b) {
        int c = x == ref_end ? 1 : y == b ? -1 : fs_cmp(&g_seq[x], &g_seq[y]);
        if (c) {
          differ = 1;
          first = c < 0 ? &g_seq[x] : &g_seq[y];
          break;
        }
        const seqrec_t eq = g_seq[x];
        while (x < ref_end && !fs_cmp(&g_seq[x], &eq)) x++;
        while (y < b && !fs_cmp(&g_seq[y], &eq)) y++;
      }
      if (a == ref) {
        for (size_t k = a; k < b; k++)
          if (k == a || fs_cmp(&g_seq[k], &g_seq[k - 1])) colls++;
      }
      if (differ) {
        bad++;
        printf("       commId 0x%016" PRIx64
               ": rank %d and rank %d differ; first: %s seqNumber %" PRIu64 " only on rank %d\n",
               cid, g_seq[ref].rank, g_seq[a].rank, g_funcs[first->func], first->seq, first->rank);
      }
      a = b;
    }
    if (ranks_recorded < nranks) {
      printf("       commId 0x%016" PRIx64 ": %d of %d ranks recorded Coll events\n", cid,
             ranks_recorded, nranks);
      short_comms++;
    }
    i = j;
  }
  if (short_comms)
    result("WARN", "ranks",
           "%zu of %zu communicators have Coll events from fewer ranks than they have", short_comms,
           ncomms);
  if (bad)
    result("FAIL", "seqmatch",
           "%zu rank pairs disagree on (func, seqNumber) over %zu communicators", bad, ncomms);
  else
    result("PASS", "seqmatch",
           "%zu communicators, %zu collectives per reference rank, the same on every rank%s",
           ncomms, colls, T.unattributed ? " (some Coll events had no local communicator)" : "");
}

static int parse_types(const char *opt, const char *v, uint32_t *mask) {
  const char *bad;
  size_t badlen;
  if (!v || ncs_parse_event_list(v, mask, &bad, &badlen) != 0) {
    if (!v)
      fprintf(stderr, "ncs-trace-check: %s needs a value\n", opt);
    else
      fprintf(stderr, "ncs-trace-check: %s: unknown event type '%.*s'\n", opt, (int)badlen, bad);
    return -1;
  }
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: ncs-trace-check DIR|FILE... [--expect TYPES] [--want TYPES]\n"
             "                       [--allow-missing-completion TYPES] [--no-seq-match] [--abi N]\n");
}

static void check_abi(int abi) {
  uint64_t all = T.abi_other, other = T.abi_other;
  char seen[128] = "";
  size_t o = 0;
  for (int v = 1; v <= 7; v++) {
    all += T.abi_n[v];
    if (v != abi) other += T.abi_n[v];
    if (T.abi_n[v] && o < sizeof seen)
      o += (size_t)snprintf(seen + o, sizeof seen - o, "%sv%d %" PRIu64, o ? ", " : "", v, T.abi_n[v]);
  }
  result(all && !other ? "PASS" : "FAIL", "abi", "%" PRIu64 " communicator records, want all of ABI v%d: %s%s",
         all, abi, o ? seen : "none", T.abi_other ? " and others" : "");
}

int main(int argc, char **argv) {
  uint32_t expect = 0, want = 0, allow = 0;
  int seqmatch = 1, abi = 0;
  const char *paths[256];
  int npaths = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--expect")) {
      if (parse_types(a, v, &expect)) return 2;
      i++;
    } else if (!strcmp(a, "--want")) {
      if (parse_types(a, v, &want)) return 2;
      i++;
    } else if (!strcmp(a, "--allow-missing-completion")) {
      if (parse_types(a, v, &allow)) return 2;
      i++;
    } else if (!strcmp(a, "--no-seq-match")) {
      seqmatch = 0;
    } else if (!strcmp(a, "--abi")) {
      abi = v ? atoi(v) : 0;
      if (abi < 1 || abi > 7) {
        fprintf(stderr, "ncs-trace-check: --abi needs a version from 1 to 7\n");
        return 2;
      }
      i++;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "ncs-trace-check: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (npaths < 256) {
      paths[npaths++] = a;
    }
  }
  if (!npaths) {
    usage(stderr);
    return 2;
  }

  for (int p = 0; p < npaths; p++) {
    char **files = NULL, err[512];
    size_t n = 0;
    if (ncs_list_traces(paths[p], &files, &n, err, sizeof err) != 0) {
      printf("       %s: %s\n", paths[p], err);
      T.damaged++;
      continue;
    }
    for (size_t i = 0; i < n; i++) read_file(files[i]);
    ncs_free_paths(files, n);
  }

  if (!T.files)
    result("FAIL", "files", "no trace files found");
  else if (T.damaged)
    result("FAIL", "files", "%zu of %zu files damaged or unreadable", T.damaged, T.files);
  else
    result("PASS", "files", "%zu trace files, %zu segments, none damaged", T.files, T.segments);
  if (T.files) {
    result(T.footers == T.segments && T.segments ? "PASS" : "FAIL", "footers",
           "%zu of %zu segments ended with a footer", T.footers, T.segments);
    if (T.drops_unknown)
      result("FAIL", "drops", "unknown: a segment without footer left no counter snapshot");
    else
      result(T.drops_pool + T.drops_slot ? "FAIL" : "PASS", "drops",
             "%" PRIu64 " records dropped (buffer full %" PRIu64 ", no thread slot %" PRIu64 ")",
             T.drops_pool + T.drops_slot, T.drops_pool, T.drops_slot);
    check_types("expected", expect, 1);
    check_types("wanted", want, 0);
    check_completion(allow);
    if (seqmatch) check_seq();
    if (abi) check_abi(abi);
  }
  char ev[1024];
  size_t o = 0;
  ev[0] = 0;
  for (unsigned t = 0; t < NT; t++)
    if (T.starts[t] && o < sizeof ev)
      o += (size_t)snprintf(ev + o, sizeof ev - o, "%s%s=%" PRIu64, o ? " " : "", ncs_schema[t].cli,
                            T.starts[t]);
  result("INFO", "events", "%s", o ? ev : "none");
  printf("verdict: %s (%d warnings)\n", g_fail ? "FAIL" : "PASS", g_warn);
  free(g_ids);
  free(g_seq);
  free(g_comms);
  return g_fail ? 1 : 0;
}
