/* tl_emit.c - the emit pass of one trace file (timeline.h, docs/timeline.md): every START
 * becomes a BEGIN on the first free lane of its row, every STOP the END, states become nested
 * phases or instants. A Coll/P2p the job model knows is written whole at its START, with its
 * end, duration, GPU time and links (its instance on the job track, its send/receive partner)
 * from the model. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/timeline.h"
#include "util/fmt.h"

static const char *fstr(ncs_pool_t *p, const ncs_event_t *e, int i) {
  return i >= 0 && i < e->nfields ? ncs_pool_str(p, e->fstr[i]) : NULL;
}
static const char *fraw(const ncs_event_t *e, int i) {
  return i >= 0 && i < e->nfields ? e->fstr[i] : NULL;
}
static uint64_t fval(const ncs_event_t *e, int i) { return i >= 0 && i < e->nfields ? e->f[i] : 0; }

/* ================================================================ arguments */

static void arg(wk_t *w, const char *n, uint8_t kind) {
  w->args[w->nargs].name = n;
  w->args[w->nargs].kind = kind;
}
void tl_arg_u64(wk_t *w, const char *n, uint64_t v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_U64), w->args[w->nargs++].v.u = v;
}
void tl_arg_i64(wk_t *w, const char *n, int64_t v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_I64), w->args[w->nargs++].v.i = v;
}
void tl_arg_ptr(wk_t *w, const char *n, uint64_t v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_PTR), w->args[w->nargs++].v.u = v;
}
void tl_arg_str(wk_t *w, const char *n, const char *v) {
  if (v && w->nargs < MAX_ARGS) arg(w, n, TA_STR), w->args[w->nargs++].v.s = v;
}
static void a_dbl(wk_t *w, const char *n, double v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_DBL), w->args[w->nargs++].v.d = v;
}
static void a_bool(wk_t *w, const char *n, uint64_t v) {
  if (w->nargs < MAX_ARGS) arg(w, n, TA_BOOL), w->args[w->nargs++].v.u = v;
}

static const char *ref_str(wk_t *w, uint8_t kind, uint64_t v) {
  static const char *const k[] = {"none", "local", "foreign", "stale"};
  return ncs_pool_fmt(&w->pool, "%s:0x%" PRIx64, kind < 4 ? k[kind] : "?", v);
}

/* every field of the START, by its schema name, after the record's header */
static void start_args(wk_t *w, const ncs_event_t *e) {
  w->nargs = 0;
  tl_arg_u64(w, "id", e->id);
  if (e->parent_kind == NCS_REF_LOCAL)
    tl_arg_u64(w, "parent", e->parent);
  else if (e->parent_kind != NCS_REF_NONE)
    tl_arg_str(w, "parent", ref_str(w, e->parent_kind, e->parent));
  uint64_t tid;
  if (hm_get(&w->tid_map, e->thread, &tid))
    tl_arg_u64(w, "tid", tid);
  else
    tl_arg_u64(w, "thread", e->thread);
  tl_arg_i64(w, "rank", e->rank);
  if (e->flags) tl_arg_u64(w, "flags", e->flags);
  if (e->ctx_kind == NCS_CTX_FOREIGN)
    tl_arg_str(w, "ctx",
          ncs_pool_fmt(&w->pool, "foreign:%" PRIu64 ".%" PRIu64, e->ctx >> 16, e->ctx & 0xFFFF));
  else if (e->ctx_kind == NCS_CTX_INVALID)
    tl_arg_ptr(w, "ctx_invalid", e->ctx);
  const ncs_schema_t *s = &ncs_schema[e->type];
  for (unsigned i = 0; i < e->nfields && i < s->nfields; i++) {
    const char *n = w->x->argname[e->type][i];
    switch (s->fields[i].kind) {
    case NCS_FK_I64: tl_arg_i64(w, n, (int64_t)e->f[i]); break;
    case NCS_FK_STR: tl_arg_str(w, n, e->fstr[i] ? ncs_pool_str(&w->pool, e->fstr[i]) : NULL); break;
    case NCS_FK_PTR: tl_arg_ptr(w, n, e->f[i]); break;
    case NCS_FK_BOOL: a_bool(w, n, e->f[i]); break;
    case NCS_FK_REF:
      if (e->fref_kind[i] == NCS_REF_LOCAL)
        tl_arg_u64(w, n, e->f[i]);
      else if (e->fref_kind[i] != NCS_REF_NONE)
        tl_arg_str(w, n, ref_str(w, e->fref_kind[i], e->f[i]));
      break;
    default: tl_arg_u64(w, n, e->f[i]); break;
    }
  }
}

/* argument names: the schema's, prefixed with the type where they clash with the header's */
void tl_arg_names(ex_t *x) {
  static const char *const clash[] = {"id", "parent", "tid", "thread", "rank", "flags", "ctx"};
  for (unsigned t = 0; t < NCS_T_COUNT; t++)
    for (unsigned i = 0; i < ncs_schema[t].nfields; i++) {
      const char *n = ncs_schema[t].fields[i].name;
      int c = 0;
      for (size_t k = 0; k < sizeof clash / sizeof clash[0]; k++) c |= !strcmp(n, clash[k]);
      if (c) {
        snprintf(x->argbuf[t][i], sizeof x->argbuf[t][i], "%s.%s", ncs_schema[t].cli, n);
        x->argname[t][i] = x->argbuf[t][i];
      } else {
        x->argname[t][i] = n;
      }
    }
}

tl_flow_t *tl_flows(wk_t *w, uint32_t n) {
  if (GROW(w->flows, w->flow_cap, n ? n : 1) != 0) {
    tl_set_oom(w);
    return NULL;
  }
  return w->flows;
}

void tl_new_track(wk_t *w, tl_track_t *t, uint8_t kind, uint64_t parent, int32_t pid) {
  memset(t, 0, sizeof *t);
  t->uuid = w->next_uuid++;
  t->idx = w->next_track++;
  t->kind = kind;
  t->parent = parent;
  t->pid = pid;
}

void tl_declare(wk_t *w, tl_sink_t *s, const tl_track_t *t) {
  s->track(s, t);
  w->st.tracks++;
}

void tl_proc_use(wk_t *w, uint32_t proc) {
  proc_t *p = &w->x->procs[proc];
  if (p->declared) return;
  p->declared = 1;
  tl_declare(w, w->sink, &p->trk);
  w->st.processes++;
}

/* a pooled name for (kind, value), formatted once per worker */
static const char *cached_name(wk_t *w, uint64_t kind, int64_t v, const char *fmt) {
  uint64_t key = hm_mix2(kind, (uint64_t)v), p;
  if (hm_get(&w->name_map, key, &p)) return (const char *)(uintptr_t)p;
  char buf[64];
  snprintf(buf, sizeof buf, fmt, v);
  const char *s = ncs_pool_str(&w->pool, buf);
  if (hm_put(&w->name_map, key, (uint64_t)(uintptr_t)s) != 0) tl_set_oom(w);
  return s;
}

/* ================================================================ rows, lanes, groups */

static const char *const row_names[] = {"API",   "groups", "other", "collectives",
                                        "copy engine", "proxy progress", "GPU", "proxy",
                                        "steps", "net",    "net"};
static const char *const row_desc[] = {
    "NCCL API calls on the application's threads: ncclGroupStart..End (GroupApi), collective "
    "and send/recv calls (CollApi, P2pApi) and kernel launches (KernelLaunch).",
    "NCCL's internal Group event around the Coll/P2p operations of one ncclGroupEnd.",
    "Events of types this exporter does not place elsewhere.",
    "Coll and P2p operations (and CeColl) from enqueue (START) to completion: the last KernelCh "
    "or ProxyOp of the operation, derived by the plugin (COMPLETE). Linked to the job track.",
    "Copy-engine work: CeSync and CeBatch.",
    "The proxy thread's progress loop (ProxyCtrl): append, active, idle, sleep and wakeup.",
    "Per-channel GPU work (KernelCh) on the host time line: GPU globaltimer ns mapped with a "
    "per-process offset (docs/timeline.md); its phases (KernelPhase, NCCL 2.31: initial sync, "
    "compute, final sync) on a second lane.",
    "Network operations of the proxy (ProxyOp) on this channel, with their states.",
    "Network steps (ProxyStep) of this channel, with their wait states.",
    "Network plugin calls (NetPlugin) under this channel's steps.",
    "Network plugin calls (NetPlugin) whose step was not found."};

static uint32_t group_for(wk_t *w, uint32_t proc, const ncs_event_t *e, const comm_t *c) {
  uint64_t key;
  if (c)
    key = hm_mix2(proc, c->comm_id ? c->comm_id : hm_mix2(c->seg, c->index));
  else if (e->ctx_kind == NCS_CTX_FOREIGN)
    key = hm_mix2(proc, hm_mix2(0xF0, e->ctx));
  else
    key = hm_mix2(proc, 0xF1);
  int created;
  uint64_t *gi = hm_ref(&w->group_map, key, w->ngroups, &created);
  if (!gi) {
    tl_set_oom(w);
    return NONE32;
  }
  if (!created) return (uint32_t)*gi;
  if (GROW(w->groups, w->group_cap, w->ngroups + 1) != 0) {
    tl_set_oom(w);
    return NONE32;
  }
  const char *name;
  int32_t order;
  if (c) {
    char cn[160];
    ncs_fmt_comm(cn, sizeof cn, c->jcomm, c->comm_id, c->name);
    name = ncs_pool_str(&w->pool, cn);
    order = 10 + (int32_t)c->order;
  } else if (e->ctx_kind == NCS_CTX_FOREIGN) {
    name = ncs_pool_fmt(&w->pool, "PXN for pid %" PRIu64 " comm %" PRIu64, e->ctx >> 16, e->ctx & 0xFFFF);
    order = 1000;
  } else {
    name = "no communicator";
    order = 1001;
  }
  group_t *g = &w->groups[w->ngroups++];
  memset(g, 0, sizeof *g);
  proc_t *p = &w->x->procs[proc];
  tl_new_track(w, &g->t, TK_GROUP, p->trk.uuid, p->pid);
  g->t.name = g->t.path = name;
  g->t.order = order;
  g->t.explicit_order = 1;
  g->t.sort = (uint32_t)order * 1000000u;
  g->t.desc = "One NCCL communicator of this rank: its operations, GPU channels, proxy and net.";
  return (uint32_t)*gi;
}

static uint32_t row_for(wk_t *w, uint32_t proc, uint32_t group, uint8_t kind, int32_t ch) {
  uint64_t key = hm_mix2(hm_mix2(proc, group), hm_mix2(kind, (uint64_t)(uint32_t)ch));
  int created;
  uint64_t *ri = hm_ref(&w->row_map, key, w->nrows, &created);
  if (!ri) {
    tl_set_oom(w);
    return NONE32;
  }
  if (!created) return (uint32_t)*ri;
  if (GROW(w->rows, w->row_cap, w->nrows + 1) != 0) {
    tl_set_oom(w);
    return NONE32;
  }
  row_t *r = &w->rows[w->nrows++];
  memset(r, 0, sizeof *r);
  r->proc = proc, r->group = group, r->kind = kind, r->ch = ch;
  if (kind >= RK_GPU && kind <= RK_NET)
    r->name = ch >= 0 ? ncs_pool_fmt(&w->pool, "%s ch %d", row_names[kind], ch)
                      : ncs_pool_fmt(&w->pool, "%s ch ?", row_names[kind]);
  else
    r->name = row_names[kind];
  r->desc = row_desc[kind];
  r->order = kind >= RK_GPU && kind <= RK_NET ? 100 + (ch >= 0 ? ch : 999) * 8 + (kind - RK_GPU)
             : kind == RK_NETX               ? 99
                                             : kind;
  r->path = group != NONE32 ? ncs_pool_fmt(&w->pool, "%s / %s", w->groups[group].t.name, r->name)
                            : r->name;
  if (kind >= RK_GPU && kind <= RK_NET) { /* the JSON packs the channels of a kind together */
    const group_t *g = group != NONE32 ? &w->groups[group] : NULL;
    r->pack = g ? ncs_pool_fmt(&w->pool, "%s / %s", g->t.name, row_names[kind]) : row_names[kind];
    r->pack_sort = (g ? g->t.sort : 0) + (uint32_t)(100 + kind - RK_GPU) * 64;
  }
  return (uint32_t)*ri;
}

/* the first lane of the row that is free at ts (nothing open, its last slice ended by ts) */
static uint32_t lane_pick(wk_t *w, uint32_t ri, uint64_t ts) {
  row_t *r = &w->rows[ri];
  for (uint32_t i = r->free_hint; i < r->nlanes; i++)
    if (!r->lanes[i].depth && r->lanes[i].last_end <= ts) {
      if (i == r->free_hint) r->free_hint++;
      return i;
    }
  if (GROW(r->lanes, r->lane_cap, r->nlanes + 1) != 0) {
    tl_set_oom(w);
    return NONE32;
  }
  lane_t *l = &r->lanes[r->nlanes];
  proc_t *p = &w->x->procs[r->proc];
  uint64_t parent = p->trk.uuid;
  uint32_t sort = 0;
  tl_proc_use(w, r->proc);
  if (r->group != NONE32) {
    group_t *g = &w->groups[r->group];
    if (!g->declared) {
      tl_declare(w, w->sink, &g->t);
      g->declared = 1;
    }
    parent = g->t.uuid;
    sort = g->t.sort;
  }
  tl_new_track(w, &l->t, TK_LANE, parent, p->pid);
  l->depth = 0;
  l->last_end = 0;
  l->t.name = r->name;
  l->t.path = r->path;
  l->t.merge_key = r->name;
  l->t.desc = r->desc;
  l->t.order = r->order;
  l->t.lane = (uint16_t)(r->nlanes < 0xFFFF ? r->nlanes : 0xFFFF);
  l->t.sort = sort + (uint32_t)r->order * 64 + (r->nlanes < 63 ? r->nlanes : 63);
  l->t.pack = r->pack;
  l->t.ch = r->ch;
  l->t.pack_sort = r->pack ? r->pack_sort : sort + (uint32_t)r->order * 64;
  tl_declare(w, w->sink, &l->t);
  if (r->free_hint == r->nlanes) r->free_hint++;
  return r->nlanes++;
}

/* a lane became free: the next pick may start looking there */
static void lane_freed(row_t *r, uint32_t lane) {
  if (lane < r->free_hint) r->free_hint = lane;
}

static void emit_begin(wk_t *w, const tl_track_t *t, uint64_t ts, const char *name, uint8_t cat,
                       const tl_flow_t *fl, uint32_t nfl, uint64_t corr, const tl_track_t *within) {
  tl_slice_t sl = {t, ts, name, cat, w->args, w->nargs, fl, nfl, corr, within};
  w->sink->begin(w->sink, &sl);
  w->st.slices++;
}

static void emit_instant(wk_t *w, const tl_track_t *t, uint64_t ts, const char *name,
                         uint8_t cat) {
  tl_slice_t sl = {t, ts, name, cat, w->args, w->nargs, NULL, 0, 0};
  w->sink->instant(w->sink, &sl);
  w->st.instants++;
}

/* ================================================================ pass 2: emit */

static open_t *open_new(wk_t *w, uint64_t id) {
  uint32_t i;
  if (w->nfree) {
    i = w->free_open[--w->nfree];
  } else {
    if (GROW(w->open, w->open_cap, w->nopen + 1) != 0) {
      tl_set_oom(w);
      return NULL;
    }
    i = w->nopen++;
  }
  if (hm_put(&w->open_map, id, i) != 0) {
    tl_set_oom(w);
    return NULL;
  }
  open_t *o = &w->open[i];
  memset(o, 0, sizeof *o);
  o->id = id;
  o->in_use = 1;
  return o;
}

static open_t *open_get(wk_t *w, uint64_t id) {
  uint64_t i;
  return hm_get(&w->open_map, id, &i) ? &w->open[i] : NULL;
}

static void open_del(wk_t *w, open_t *o) {
  hm_del(&w->open_map, o->id);
  o->in_use = 0;
  if (o->d) free(o->d->st), free(o->d);
  o->d = NULL;
  if (GROW(w->free_open, w->free_cap, w->nfree + 1) != 0) {
    tl_set_oom(w);
    return;
  }
  w->free_open[w->nfree++] = (uint32_t)(o - w->open);
}

/* close o at ts (clamped so that the slice and its phase last at least 1 ns and stay nested) */
static void close_open(wk_t *w, open_t *o, uint64_t ts, int unfinished) {
  row_t *r = &w->rows[o->row];
  lane_t *l = &r->lanes[o->lane];
  uint64_t t = max64(ts, o->last);
  if (o->phase_open) {
    t = max64(t, o->phase_start + 1);
    w->sink->end(w->sink, &l->t, t, NULL, 0);
  }
  t = max64(t, o->start + 1);
  w->sink->end(w->sink, &l->t, t, NULL, 0);
  l->depth = 0;
  l->last_end = t;
  lane_freed(r, o->lane);
  if (unfinished) w->st.unfinished++;
  open_del(w, o);
}

static void materialize(wk_t *w, open_t *o);

/* an event held back for the filter's window (defer_t) ends at ts: written when it reaches into
 * the window, else left out */
static int deferred_end(wk_t *w, open_t *o, uint64_t ts) {
  if ((int64_t)max64(ts, o->last) >= w->x->xf.from) {
    materialize(w, o);
    return o->lane != NONE32;
  }
  ncs_xf_drop(&w->xs, o->id);
  open_del(w, o);
  return 0;
}

static void close_all(wk_t *w, uint64_t ts) {
  for (uint32_t i = 0; i < w->nopen; i++) {
    open_t *o = &w->open[i];
    if (o->in_use && (!o->d || deferred_end(w, o, ts))) close_open(w, o, ts, 1);
  }
}

static const char *state_phase_name(unsigned s) {
  const char *n = ncs_state_name(s);
  static const char *const pre[] = {"ProxyStep", "ProxyOp", "ProxyCtrl"};
  for (size_t i = 0; i < 3; i++)
    if (!strncmp(n, pre[i], strlen(pre[i]))) return n + strlen(pre[i]);
  return n;
}

/* the links of a Coll (to its instance on the job track) or a P2p (send to receive): from the
 * job model's instances and pairs */
static uint64_t links(wk_t *w, const ncs_op_t *op, size_t oi, tl_flow_t *bf, uint32_t *nb,
                      tl_flow_t *ef, uint32_t *ne) {
  ex_t *x = w->x;
  if (!x->linked[oi]) return 0;
  if (!op->p2p) {
    const ncs_inst_t *in = ncs_job_inst(x->job, op->inst);
    tl_arg_u64(w, "wait_ns", (uint64_t)(in->last_arrival - op->arrival));
    tl_arg_i64(w, "straggler_rank", in->last_rank);
    tl_arg_u64(w, "skew_ns", (uint64_t)(in->last_arrival - in->first_arrival));
    bf[*nb].id = tl_hub_flow(op->inst, oi), bf[(*nb)++].out = 0;
    return nz(hm_mix2(0xC0, op->inst));
  }
  if (op->pair == SIZE_MAX || !x->linked[op->pair]) return 0;
  size_t send = op->is_send ? oi : op->pair;
  uint64_t id = nz(hm_mix2(0xF10Aull, send));
  tl_arg_i64(w, "p2p_seq", (int64_t)op->order);
  if (op->is_send) {
    bf[*nb].id = id, bf[(*nb)++].out = 1;
    w->st.p2p_flows++;
  } else {
    ef[*ne].id = id, ef[(*ne)++].out = 0;
  }
  return nz(hm_mix2(0xF10B, send));
}

/* the model's facts about the operation: its completion, duration, GPU time and bandwidth */
static double op_args(wk_t *w, const ncs_op_t *op, uint64_t start, uint64_t end, const comm_t *c) {
  static const char *const how[] = {"none", "kernel", "proxy", "kernel+proxy"};
  if (op->bytes) tl_arg_u64(w, "bytes", op->bytes);
  if (op->stop) tl_arg_u64(w, "enqueue_ns", (uint64_t)(op->stop - op->start));
  tl_arg_str(w, "completion", !op->complete                     ? "unknown"
                         : op->cflags & NCS_CF_NO_CHILDREN ? "no children"
                                                           : how[op->cflags & 3]);
  if (op->cflags & NCS_CF_FORCED) a_bool(w, "completion_forced", 1);
  if (op->cflags & NCS_CF_REVISED) a_bool(w, "completion_revised", 1);
  tl_arg_u64(w, "span_ns", end - start);
  tl_arg_i64(w, "duration_ns", op->duration);
  tl_arg_str(w, "timing", ncs_src_names[op->timing]);
  if (op->kstart) tl_arg_u64(w, "gpu_start_ns", (uint64_t)op->kstart), tl_arg_u64(w, "gpu_ns", (uint64_t)(op->kstop - op->kstart));
  if (!op->bytes || op->duration <= 0) return 0;
  /* bandwidths as nccl-tests computes them, over this rank's duration */
  double n = c && c->nranks > 0 ? (double)c->nranks : 1, alg = (double)op->bytes / (double)op->duration;
  double factor = op->p2p || n <= 1 ? 1 : !strcmp(op->func, "AllReduce") ? 2 * (n - 1) / n
              : !strcmp(op->func, "AllGather") || !strcmp(op->func, "ReduceScatter") ? (n - 1) / n
                                                                                      : 1;
  a_dbl(w, "algbw_GBps", alg);
  a_dbl(w, "busbw_GBps", alg * factor);
  return alg * factor;
}

static void counters_add(wk_t *w, uint32_t proc, const ncs_op_t *op, uint64_t start, uint64_t end,
                         double bus) {
  if (op->bytes) {
    tl_heap_push(w, start, proc, 0, (double)op->bytes);
    tl_heap_push(w, end, proc, 0, -(double)op->bytes);
  }
  uint64_t bs = op->kstart ? (uint64_t)op->kstart : start, be = op->kstart ? (uint64_t)op->kstop : end;
  if (bus > 0 && be > bs) {
    tl_heap_push(w, bs, proc, 1, bus);
    tl_heap_push(w, be, proc, 1, -bus);
  }
  if (start > w->max_coll_start) w->max_coll_start = start;
  if (w->max_coll_start > COUNTER_WINDOW_NS) tl_counters_flush(w, w->max_coll_start - COUNTER_WINDOW_NS);
}

/* a Coll or P2p the job model knows: one slice, written whole at its START */
static void coll_p2p(wk_t *w, const ncs_event_t *e, uint32_t proc, const comm_t *c, uint32_t group,
                     const ncs_op_t *op, size_t oi) {
  uint64_t start = (uint64_t)op->start, end = tl_op_end(w->x, op);
  int coll = e->type == NCS_T_COLL;
  if (hm_put(&w->parent_map, e->id, (uint64_t)(uintptr_t)op->func) != 0) tl_set_oom(w);
  start_args(w, e);
  if (c && c->comm_id) tl_arg_str(w, "commId", c->id_str);
  if (c) tl_arg_i64(w, "comm_rank", c->rank), tl_arg_i64(w, "nranks", c->nranks);
  double bus = op_args(w, op, start, end, c);
  tl_flow_t bf[1], ef[1];
  uint32_t nb = 0, ne = 0;
  uint64_t corr = links(w, op, oi, bf, &nb, ef, &ne);
  uint32_t row = row_for(w, proc, group, RK_COLL, -1);
  if (row == NONE32) return;
  uint32_t ln = lane_pick(w, row, start);
  if (ln == NONE32) return;
  lane_t *l = &w->rows[row].lanes[ln];
  const char *name = *op->func ? op->func : ncs_type_name(e->type);
  if (!coll)
    name = !strcmp(op->func, "Send")   ? cached_name(w, 1, op->peer, "Send to %" PRId64)
           : !strcmp(op->func, "Recv") ? cached_name(w, 2, op->peer, "Recv from %" PRId64)
                                       : name;
  emit_begin(w, &l->t, start, name, coll ? TC_COLL : TC_P2P, bf, nb, corr, NULL);
  w->sink->end(w->sink, &l->t, end, ef, ne);
  l->last_end = end;
  lane_freed(&w->rows[row], ln);
  counters_add(w, proc, op, start, end, bus);
}

static void ev_start(wk_t *w, file_t *f, const ncs_event_t *e) {
  const comm_t *c = e->ctx_kind == NCS_CTX_LOCAL ? tl_file_comm(f, w->seg, e->ctx) : NULL;
  uint32_t proc = c ? c->proc : f->p0;
  uint32_t types = w->x->o.types;
  int want = (types >> e->type) & 1;
  /* the filter: of an operation that passed, left out, or of none (the window decides below) */
  int cls = ncs_xf_start(&w->xs, e, want);
  if (!want || cls == XF_DROP) return;
  size_t oi;
  const ncs_op_t *op = e->type == NCS_T_COLL || e->type == NCS_T_P2P ? tl_op(w->x, f, w->seg, e->id, &oi) : NULL;
  if (op) {
    coll_p2p(w, e, proc, c, group_for(w, proc, e, c), op, oi);
    return;
  }
  uint64_t ts = to_out(w->x, w->fi, e->ts);
  uint8_t kind, cat;
  int32_t ch = -1;
  uint32_t group = NONE32;
  const char *name = ncs_type_name(e->type);
  open_t *parent = e->parent_kind == NCS_REF_LOCAL ? open_get(w, e->parent) : NULL;
  int is_send = 0;
  switch (e->type) {
  case NCS_T_COLL:
  case NCS_T_P2P: /* one the job model does not know (no communicator): START to STOP */
    kind = RK_COLL, cat = e->type == NCS_T_COLL ? TC_COLL : TC_P2P;
    group = group_for(w, proc, e, c);
    break;
  case NCS_T_GROUP_API: kind = RK_API, cat = TC_API, name = "ncclGroup"; break;
  case NCS_T_COLL_API:
  case NCS_T_P2P_API: {
    kind = RK_API, cat = TC_API;
    const char *fn = fstr(&w->pool, e, e->type == NCS_T_COLL_API ? NCS_F(CollApi, func) : NCS_F(P2pApi, func));
    if (fn) {
      uint64_t key = hm_mix2(3, (uint64_t)(uintptr_t)fn), p;
      if (hm_get(&w->name_map, key, &p)) {
        name = (const char *)(uintptr_t)p;
      } else {
        name = ncs_pool_fmt(&w->pool, "nccl%s", fn);
        if (hm_put(&w->name_map, key, (uint64_t)(uintptr_t)name) != 0) tl_set_oom(w);
      }
    } else {
      name = ncs_type_name(e->type);
    }
    break;
  }
  case NCS_T_KERNEL_LAUNCH: kind = RK_API, cat = TC_API, name = "kernel launch"; break;
  case NCS_T_GROUP: kind = RK_GROUP, cat = TC_GROUP, name = "group"; break;
  case NCS_T_CE_COLL: {
    kind = RK_COLL, cat = TC_CE;
    const char *fn = fraw(e, NCS_F(CeColl, func));
    name = fn ? ncs_pool_fmt(&w->pool, "%s (CE)", fn) : name;
    group = group_for(w, proc, e, c);
    break;
  }
  case NCS_T_CE_SYNC:
  case NCS_T_CE_BATCH:
    kind = RK_CE, cat = TC_CE, name = e->type == NCS_T_CE_SYNC ? "CE sync" : "CE batch";
    group = group_for(w, proc, e, c);
    break;
  case NCS_T_PROXY_CTRL:
    kind = RK_PCTRL, cat = TC_PROXYCTRL, name = "proxy ctrl";
    group = group_for(w, proc, e, c);
    break;
  case NCS_T_KERNEL_CH: {
    kind = RK_GPU, cat = TC_KERNEL;
    uint64_t chv = fval(e, NCS_F(KernelCh, channelId)), pt = fval(e, NCS_F(KernelCh, pTimer)), fn;
    ch = chv < 1024 ? (int32_t)chv : -1;
    if (e->parent_kind == NCS_REF_LOCAL && hm_get(&w->parent_map, e->parent, &fn) &&
        *(const char *)(uintptr_t)fn)
      name = (const char *)(uintptr_t)fn;
    else
      name = "kernel";
    if (ncs_job_gpu_time(w->x->job, w->fi, pt)) ts = (uint64_t)ncs_job_gpu_time(w->x->job, w->fi, pt);
    group = group_for(w, proc, e, c);
    break;
  }
  case NCS_T_KERNEL_PHASE: { /* on its KernelCh's row, GPU time (a lane of its own) */
    kind = RK_GPU, cat = TC_KPHASE;
    uint64_t chv = fval(e, NCS_F(KernelPhase, channelId)), pt = fval(e, NCS_F(KernelPhase, pTimer));
    ch = chv < 1024 ? (int32_t)chv : -1;
    const char *pn = fstr(&w->pool, e, NCS_F(KernelPhase, phaseName));
    name = pn ? pn : "kernel phase";
    if (ncs_job_gpu_time(w->x->job, w->fi, pt)) ts = (uint64_t)ncs_job_gpu_time(w->x->job, w->fi, pt);
    if (parent && parent->type == NCS_T_KERNEL_CH)
      group = parent->group, proc = parent->proc;
    else
      group = group_for(w, proc, e, c);
    break;
  }
  case NCS_T_PROXY_OP: {
    kind = RK_PROXY, cat = TC_PROXYOP;
    uint64_t chv = fval(e, NCS_F(ProxyOp, channelId));
    ch = chv < 1024 ? (int32_t)chv : -1;
    is_send = fval(e, NCS_F(ProxyOp, isSend)) != 0;
    int64_t peer = (int64_t)fval(e, NCS_F(ProxyOp, peer));
    name = is_send ? cached_name(w, 4, peer, "send to %" PRId64)
                   : cached_name(w, 5, peer, "recv from %" PRId64);
    group = group_for(w, proc, e, c);
    break;
  }
  case NCS_T_PROXY_STEP:
    kind = RK_STEPS, cat = TC_PROXYSTEP;
    if (parent && parent->type == NCS_T_PROXY_OP) {
      ch = parent->ch, is_send = parent->is_send, group = parent->group, proc = parent->proc;
      name = is_send ? "send step" : "recv step";
    } else {
      name = "step";
      group = group_for(w, proc, e, c);
    }
    break;
  case NCS_T_NET_PLUGIN: {
    cat = TC_NET;
    uint64_t nid = fval(e, NCS_F(NetPlugin, id));
    name = (nid & 0x20000) ? "net socket" : (nid & 0x10000) ? "net ib" : "net";
    if (parent && parent->type == NCS_T_PROXY_STEP)
      kind = RK_NET, ch = parent->ch, group = parent->group, proc = parent->proc;
    else
      kind = RK_NETX, group = group_for(w, proc, e, c);
    break;
  }
  default: kind = RK_OTHER, cat = TC_OTHER; break;
  }
  if (w->oom) return;
  /* a KernelPhase's KernelCh, open: its slice holds the phase (the JSON nests it there) */
  uint32_t hrow = NONE32, hlane = 0;
  if (e->type == NCS_T_KERNEL_PHASE && parent && parent->type == NCS_T_KERNEL_CH && parent->lane != NONE32)
    hrow = parent->row, hlane = parent->lane;
  /* of no operation: kept when it overlaps the window; one that begins before it is held back
   * until it is seen to reach into it */
  int defer = cls == XF_OWN && (int64_t)ts < w->x->xf.from;
  if (cls == XF_OWN && (int64_t)ts > w->x->xf.to) {
    ncs_xf_drop(&w->xs, e->id);
    return;
  }
  uint32_t row = row_for(w, proc, group, kind, ch);
  if (row == NONE32) return;
  uint32_t ln = defer ? NONE32 : lane_pick(w, row, ts);
  if (ln == NONE32 && !defer) return;
  open_t *o = open_new(w, e->id);
  if (!o) return;
  o->row = row, o->lane = ln, o->start = o->last = ts, o->type = e->type;
  o->group = group, o->proc = proc, o->ch = ch, o->is_send = (uint8_t)is_send;
  start_args(w, e);
  if (e->type == NCS_T_KERNEL_CH && ncs_job_gpu_time(w->x->job, w->fi, fval(e, NCS_F(KernelCh, pTimer))))
    tl_arg_u64(w, "host_seen_ns", to_out(w->x, w->fi, e->ts));
  if (defer) {
    if (!(o->d = calloc(1, sizeof *o->d))) {
      tl_set_oom(w);
      return;
    }
    memcpy(o->d->args, w->args, w->nargs * sizeof *w->args);
    o->d->nargs = w->nargs, o->d->name = name, o->d->cat = cat;
    return;
  }
  lane_t *l = &w->rows[row].lanes[ln];
  l->depth = 1;
  const tl_track_t *host = hrow != NONE32 ? &w->rows[hrow].lanes[hlane].t : NULL;
  emit_begin(w, &l->t, ts, name, cat, NULL, 0, 0, host);
}

/* a state of an open event at output time t: a phase nested in a proxy event's slice, an instant
 * on the others */
static void state_out(wk_t *w, open_t *o, uint32_t state, uint64_t arg0, uint64_t arg1, uint64_t t) {
  lane_t *l = &w->rows[o->row].lanes[o->lane];
  uint64_t ts = max64(t, o->last);
  w->nargs = 0;
  if (arg0) tl_arg_u64(w, o->type == NCS_T_NET_PLUGIN ? "data" : "arg0", arg0);
  if (arg1) tl_arg_u64(w, "arg1", arg1);
  if (o->type == NCS_T_PROXY_OP || o->type == NCS_T_PROXY_STEP || o->type == NCS_T_PROXY_CTRL) {
    if (o->phase_open) {
      ts = max64(ts, o->phase_start + 1);
      w->sink->end(w->sink, &l->t, ts, NULL, 0);
    }
    emit_begin(w, &l->t, ts, state_phase_name(state), TC_PHASE, NULL, 0, 0, NULL);
    o->phase_open = 1, o->phase_start = ts, o->last = ts;
    l->depth = 2;
  } else {
    emit_instant(w, &l->t, ts, ncs_state_name(state), TC_STATE);
    o->last = ts;
  }
}

/* a held-back event reaches into the window: its slice, then the states it held back */
static void materialize(wk_t *w, open_t *o) {
  defer_t *d = o->d;
  uint32_t ln = lane_pick(w, o->row, o->start);
  if (ln == NONE32) return;
  lane_t *l = &w->rows[o->row].lanes[ln];
  l->depth = 1;
  o->lane = ln, o->d = NULL;
  memcpy(w->args, d->args, d->nargs * sizeof *w->args);
  w->nargs = d->nargs;
  emit_begin(w, &l->t, o->start, d->name, d->cat, NULL, 0, 0, NULL);
  for (uint32_t i = 0; i < d->nst; i++)
    state_out(w, o, d->st[i].state, d->st[i].arg0, d->st[i].arg1, d->st[i].ts);
  free(d->st), free(d);
}

static void ev_state(wk_t *w, const ncs_event_t *e) {
  open_t *o = open_get(w, e->id);
  if (!o) {
    w->st.unmatched_stops++;
    return;
  }
  if ((e->type == NCS_T_KERNEL_CH && e->state == ST_KERNEL_CH_STOP) ||
      (e->type == NCS_T_KERNEL_PHASE && e->state == ST_KERNEL_PHASE_STOP)) { /* the GPU end */
    o->gpu_end = (uint64_t)ncs_job_gpu_time(w->x->job, w->fi, e->arg0);
    return;
  }
  uint64_t ts = to_out(w->x, w->fi, e->ts);
  if (o->d && (int64_t)max64(ts, o->last) < w->x->xf.from) { /* still before the window */
    defer_t *d = o->d;
    if (GROW(d->st, d->st_cap, d->nst + 1) != 0) {
      tl_set_oom(w);
      return;
    }
    d->st[d->nst].ts = ts, d->st[d->nst].state = e->state;
    d->st[d->nst].arg0 = e->arg0, d->st[d->nst++].arg1 = e->arg1;
    return;
  }
  if (o->d) materialize(w, o);
  if (o->lane != NONE32) state_out(w, o, e->state, e->arg0, e->arg1, ts);
}

static void ev_stop(wk_t *w, const ncs_event_t *e) {
  open_t *o = open_get(w, e->id);
  if (!o) {
    w->st.unmatched_stops++;
    return;
  }
  uint64_t ts = to_out(w->x, w->fi, e->ts);
  if ((o->type == NCS_T_KERNEL_CH || o->type == NCS_T_KERNEL_PHASE) && o->gpu_end) ts = o->gpu_end;
  if (o->d && !deferred_end(w, o, ts)) return;
  close_open(w, o, ts, 0);
}

void tl_reset_file_state(wk_t *w) {
  for (uint32_t i = 0; i < w->nrows; i++) free(w->rows[i].lanes);
  for (uint32_t i = 0; i < w->nopen; i++) /* what an early stop (out of memory) left open */
    if (w->open[i].d) free(w->open[i].d->st), free(w->open[i].d), w->open[i].d = NULL;
  w->nrows = 0, w->ngroups = 0, w->nopen = 0, w->nfree = 0, w->nheap = 0;
  hm_free(&w->row_map), hm_free(&w->group_map), hm_free(&w->open_map);
  hm_free(&w->parent_map), hm_free(&w->tid_map), hm_free(&w->name_map);
  w->max_coll_start = 0, w->seg = 0;
}

/* the uuids of file fi: its own range, so that files can be written in any order */
static uint64_t file_uuid_base(uint32_t fi) { return (uint64_t)(fi + 1) << 26; }

/* the end of the segment being read: what is still open closes there */
static void seg_end(wk_t *w) {
  const ncs_job_proc_t *p = &w->x->job->procs[w->fi];
  if (w->seg < p->nsegs) close_all(w, to_out(w->x, w->fi, p->segs[w->seg].last_ns));
}

static void ev_record(wk_t *w, file_t *f, const ncs_event_t *e) {
  uint32_t types = w->x->o.types;
  switch (e->kind) {
  case NCS_REC_START: ev_start(w, f, e); break;
  case NCS_REC_STOP: /* a Coll/P2p the model knows was written whole: not open */
    if (ncs_xf_skip(&w->xs, e)) {
      /* left out by the filter */
    } else if ((types & (1u << e->type)) && open_get(w, e->id)) {
      ev_stop(w, e);
    } else if ((types & (1u << e->type)) && e->type != NCS_T_COLL && e->type != NCS_T_P2P) {
      w->st.unmatched_stops++;
    }
    ncs_xf_stopped(&w->xs, e);
    break;
  case NCS_REC_STATE:
    if ((types & (1u << e->type)) && e->type != NCS_T_COLL && e->type != NCS_T_P2P &&
        !ncs_xf_skip(&w->xs, e))
      ev_state(w, e);
    break;
  default: break;
  }
}

void tl_emit_file(wk_t *w, uint32_t fi) {
  ex_t *x = w->x;
  file_t *f = &x->files[fi];
  w->f = f, w->fi = fi;
  tl_reset_file_state(w);
  w->next_uuid = file_uuid_base(fi);
  w->next_track = 0;
  w->sink->seq_begin(w->sink, fi + 2);
  /* without a filter every process is written; with one, only those with something left */
  if (!x->xf.active)
    for (uint32_t p = f->p0; p < f->p1; p++) tl_proc_use(w, p);
  ncs_xf_file(&w->xs, &x->xf, fi);
  tl_emit_ranges(w, fi);
  char err[256];
  ncs_reader_t *r = x->job->procs[fi].readable ? ncs_reader_open(f->path, err, sizeof err) : NULL;
  if (!r) {
    if (w->sink->part_done) w->sink->part_done(w->sink);
    w->st.filter.events_left += w->xs.left;
    ncs_xf_file_free(&w->xs);
    tl_file_done(w, f);
    return;
  }
  ncs_item_t it;
  uint64_t n = 0;
  int nseg = 0;
  while (!w->oom && !w->sink->err && ncs_reader_next(r, &it) > 0) {
    if ((++n & 8191) == 0) {
      tl_progress(w, r);
      if (atomic_load(&x->failed) || atomic_load(&x->oom)) break;
    }
    if (it.what == NCS_ITEM_SEGMENT) {
      if (nseg) seg_end(w);
      w->seg = (uint32_t)nseg++;
      ncs_xf_segment(&w->xs, w->seg);
      hm_clear(&w->tid_map);
      hm_clear(&w->parent_map);
    } else if (it.what == NCS_ITEM_THREAD) {
      if (hm_put(&w->tid_map, it.thread_index, it.thread_tid) != 0) tl_set_oom(w);
    } else if (it.what == NCS_ITEM_EVENT) {
      w->st.records++;
      if (nseg) ev_record(w, f, &it.ev);
    }
  }
  if (nseg) seg_end(w);
  tl_counters_flush(w, UINT64_MAX);
  if (w->sink->part_done) w->sink->part_done(w->sink);
  if (w->xs.oom) tl_set_oom(w);
  w->st.filter.events_left += w->xs.left, w->st.filter.cannot_tell += w->xs.cannot_tell;
  ncs_xf_file_free(&w->xs);
  tl_file_done(w, f);
  ncs_reader_close(r);
  hm_free(&f->ops); /* not needed any more */
}
