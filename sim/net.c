/* net.c - the network side: net-plugin helper threads and the PXN pipe between processes.
 *
 * NetPlugin events (R§4) come from the thread that runs the net plugin: with the socket
 * transport that is a helper thread, not the proxy thread. The helper reads the ProxyStep
 * handle through the pHandle NCCL gave the net plugin and starts the NetPlugin event with it as
 * parent; the descriptor lives on the helper's stack and is only valid during the call. Some
 * transfers send an Update before the stop, some only start and stop.
 *
 * PXN (R§3.7): a send can be progressed by another local rank's proxy, in another process. The
 * proxy op is copied byte for byte, so that process's proxy thread calls startEvent with our
 * context pointer, our Coll handle as parent and our pid. Here a pipe carries the op.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

/* ------------------------------------------------------------------ helper threads */
#define MAX_NET_THREADS 16

static struct {
  pthread_mutex_t life; /* held across start and join, so a new user never meets dying threads */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  sim_netreq_t *head, *tail;
  int users, stop, nthreads;
  pthread_t th[MAX_NET_THREADS];
} g_net = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static _Atomic uint64_t g_wr_id;

typedef union {
  ncs_net_sock_v1_t sock;
  ncs_net_ib_v1_t ib;
} net_descr_t;

static void fill_descr(net_descr_t *nd, const sim_netreq_t *r, size_t len) {
  memset(nd, 0xA5, sizeof *nd); /* fields the transport does not set hold whatever was there */
  if (r->net_kind == SIM_NET_IB) {
    nd->ib.type = 1; /* ncclProfileQp */
    nd->ib.qp.device = 0;
    nd->ib.qp.wr_id = atomic_fetch_add(&g_wr_id, 1);
    nd->ib.qp.qpNum = 0x100 + r->fd;
    if (r->is_send) { /* a receive sets only device, wr_id and qpNum (R§4) */
      nd->ib.qp.opcode = 2;
      nd->ib.qp.length = len;
    }
  } else {
    nd->sock.type = 1; /* ncclProfileSocket */
    nd->sock.sock.fd = r->fd;
    nd->sock.sock.op = r->is_send ? 0 : 1;
    nd->sock.sock.length = len;
  }
}

/* One transfer: 1..3 net-plugin events, each with its own handle. They start here; they stop in
 * serve_stop, at once, or with --slow-link once the transfer's due time came. */
static void serve_start(sim_netreq_t *r, uint64_t *rng) {
  int nev = 1 + (int)(sim_rand(rng) % (r->net_kind == SIM_NET_IB ? 3 : 2));
  r->nev = 0;
  for (int e = 0; e < nev; e++) {
    if (!(r->mask & NCS_EV_NET_PLUGIN)) break; /* NCCL does not start it (R§4) */
    net_descr_t *nd = (net_descr_t *)(void *)r->nd[e];
    fill_descr(nd, r, r->len / (size_t)nev);
    ncs_descr_v7_t d;
    memset(&d, 0, sizeof d);
    d.type = NCS_EV_NET_PLUGIN;
    d.parentObj = *r->step_h; /* p->stepEventHandle */
    d.rank = r->rank;
    d.netPlugin.id =
        (int64_t)((r->net_kind == SIM_NET_IB ? NCS_NET_TYPE_IB : NCS_NET_TYPE_SOCK) | 1);
    d.netPlugin.data = nd;
    r->neh[e] = NULL;
    sim_ev_start(r->ctx, &r->neh[e], &d);
    /* IB posts no updates; sockets: none, one or two before the stop */
    int updates = r->net_kind == SIM_NET_IB ? 0 : (int)(sim_rand(rng) % 3);
    for (int u = 0; u < updates; u++) {
      if (r->net_kind != SIM_NET_IB) nd->sock.sock.length += 1;
      ncs_args_v7_t a = {.netPlugin.data = nd};
      sim_ev_state_unchecked(SIM_T_NET_PLUGIN, r->neh[e], NCS_ST_NET_PLUGIN_UPDATE, &a);
    }
    r->nev++;
  }
}

static void serve_stop(sim_netreq_t *r) {
  for (int e = 0; e < r->nev; e++)
    sim_ev_stop_unchecked(SIM_T_NET_PLUGIN, r->neh[e]); /* no NULL check in NCCL's callback */
  r->vt_done = sim_vt_now(); /* model time: the step goes on from here */
  atomic_store_explicit(&r->done, 1, memory_order_release);
}

/* Model time: the transfer's events at the times submit_net (proxy.c) gave it, from its own
 * random choices; nothing waits in real time, a slow link included. */
static void serve_model(sim_netreq_t *r) {
  uint64_t clk = r->vt, rng = r->vrng | 1;
  sim_vt_bind(&clk);
  serve_start(r, &rng);
  sim_vt_wait(r->vt_end);
  serve_stop(r);
  sim_vt_bind(NULL);
}

/* --slow-link: the slow rank's transfers go one after the other, each U us long (a link of
 * little bandwidth), while the helpers serve everyone else's; under g_net.mu */
static uint64_t g_link_busy[SIM_MAX_RANKS];
static sim_netreq_t *g_delayed; /* by due time */

static void delay_req(sim_netreq_t *r) {
  uint64_t now = sim_now_ns(), *busy = &g_link_busy[r->grank];
  r->due = (*busy > now ? *busy : now) + (uint64_t)sim_opt.slow_link_us * 1000u;
  *busy = r->due;
  sim_netreq_t **p = &g_delayed;
  while (*p && (*p)->due <= r->due) p = &(*p)->next;
  r->next = *p, *p = r;
}

static void *net_main(void *arg) {
  uint64_t rng = sim_mix(sim_opt.seed, (uint64_t)(uintptr_t)arg + 77) | 1;
  pthread_mutex_lock(&g_net.mu);
  for (;;) {
    if (g_delayed && g_delayed->due <= sim_now_ns()) {
      sim_netreq_t *r = g_delayed;
      g_delayed = r->next;
      pthread_mutex_unlock(&g_net.mu);
      serve_stop(r);
      pthread_mutex_lock(&g_net.mu);
      continue;
    }
    if (g_net.head) {
      sim_netreq_t *r = g_net.head;
      g_net.head = r->next;
      if (!g_net.head) g_net.tail = NULL;
      pthread_mutex_unlock(&g_net.mu);
      if (sim_opt.model) {
        serve_model(r);
        pthread_mutex_lock(&g_net.mu);
        continue;
      }
      serve_start(r, &rng);
      int slow = sim_opt.slow_link_us && r->grank == sim_opt.slow_link_rank && r->grank >= 0 &&
                 r->grank < SIM_MAX_RANKS;
      if (!slow) serve_stop(r);
      pthread_mutex_lock(&g_net.mu);
      if (slow) delay_req(r);
      continue;
    }
    if (g_net.stop && !g_delayed) break;
    if (g_delayed) { /* poll for the next due transfer */
      uint64_t wait = (g_delayed->due - sim_now_ns()) / 1000u;
      pthread_mutex_unlock(&g_net.mu);
      sim_sleep_us(wait < 1 ? 1 : wait > 200 ? 200 : (unsigned)wait);
      pthread_mutex_lock(&g_net.mu);
      continue;
    }
    pthread_cond_wait(&g_net.cv, &g_net.mu);
  }
  pthread_mutex_unlock(&g_net.mu);
  return NULL;
}

void sim_net_acquire(void) {
  pthread_mutex_lock(&g_net.life);
  if (g_net.users++ == 0) {
    g_net.stop = 0;
    int n = sim_opt.net_threads < 1
                ? 1
                : (sim_opt.net_threads > MAX_NET_THREADS ? MAX_NET_THREADS : sim_opt.net_threads);
    g_net.nthreads = 0;
    for (int i = 0; i < n; i++)
      if (pthread_create(&g_net.th[i], NULL, net_main, (void *)(uintptr_t)i) == 0) g_net.nthreads++;
    if (!g_net.nthreads) sim_fail("cannot start a net helper thread");
  }
  pthread_mutex_unlock(&g_net.life);
}

void sim_net_release(void) {
  pthread_mutex_lock(&g_net.life);
  if (--g_net.users == 0) {
    pthread_mutex_lock(&g_net.mu);
    g_net.stop = 1;
    pthread_cond_broadcast(&g_net.cv);
    pthread_mutex_unlock(&g_net.mu);
    for (int i = 0; i < g_net.nthreads; i++) pthread_join(g_net.th[i], NULL);
    g_net.nthreads = 0;
  }
  pthread_mutex_unlock(&g_net.life);
}

void sim_net_submit(sim_netreq_t *r) {
  r->next = NULL;
  pthread_mutex_lock(&g_net.mu);
  if (g_net.tail)
    g_net.tail->next = r;
  else
    g_net.head = r;
  g_net.tail = r;
  pthread_cond_signal(&g_net.cv);
  pthread_mutex_unlock(&g_net.mu);
}

/* ------------------------------------------------------------------ PXN */
#define MAX_PROCS 16

typedef struct {
  uint64_t ctx, parent, bytes;
  int32_t pid, rank, channel, peer, nsteps, chunk, mask, net_kind;
} pxn_msg_t; /* 56 bytes: one write() of it is atomic on a pipe */

static int g_pipes[MAX_PROCS][2];
static int g_nprocs, g_pxn, g_in = -1, g_out = -1;
static pthread_t g_listener;
static int g_listening;
static sim_comm_t *(*g_host)(int channel);

int sim_pxn_setup(int nprocs) {
  if (nprocs < 2 || nprocs > MAX_PROCS) return -1;
  for (int i = 0; i < nprocs; i++)
    if (pipe(g_pipes[i]) != 0) return -1;
  g_nprocs = nprocs;
  g_pxn = 1;
  return 0;
}

/* Process p reads its own inbox and writes to the inbox of process p+1. */
void sim_pxn_child_fds(int proc) {
  if (!g_pxn) return;
  for (int i = 0; i < g_nprocs; i++) {
    if (i == proc)
      g_in = g_pipes[i][0];
    else
      close(g_pipes[i][0]);
    if (i == (proc + 1) % g_nprocs)
      g_out = g_pipes[i][1];
    else
      close(g_pipes[i][1]);
  }
}

int sim_pxn_active(void) { return g_pxn && g_out >= 0; }

void sim_pxn_forward(const sim_pop_t *o) {
  pxn_msg_t m = {(uint64_t)(uintptr_t)o->ctx, (uint64_t)(uintptr_t)o->parent, o->bytes, o->pid,
                 o->rank, o->channel, o->peer, o->nsteps, o->chunk, o->mask, o->net_kind};
  ssize_t w;
  do w = write(g_out, &m, sizeof m);
  while (w < 0 && errno == EINTR);
  if (w != (ssize_t)sizeof m) sim_fail("PXN pipe write failed: %s", strerror(errno));
}

static int read_msg(pxn_msg_t *m) {
  size_t got = 0;
  while (got < sizeof *m) {
    ssize_t r = read(g_in, (char *)m + got, sizeof *m - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

/* The remote proxy's side: an op that carries another process's pointers and pid. */
static void *listener_main(void *arg) {
  (void)arg;
  pxn_msg_t m;
  while (read_msg(&m)) {
    sim_comm_t *host = g_host(m.channel);
    sim_pop_t *o = sim_xcalloc(1, sizeof *o);
    o->kind = POP_SEND;
    o->ctx = (void *)(uintptr_t)m.ctx;
    o->parent = (void *)(uintptr_t)m.parent;
    o->pid = m.pid;
    o->rank = m.rank, o->channel = m.channel, o->peer = m.peer;
    o->nsteps = m.nsteps, o->chunk = m.chunk, o->mask = m.mask, o->net_kind = m.net_kind;
    o->bytes = m.bytes;
    o->comm = host; /* the host comm waits for it before it is destroyed */
    atomic_fetch_add(&host->inflight, 1);
    sim_proxy_post(host->proxy, o);
  }
  return NULL;
}

void sim_pxn_start_listener(sim_comm_t *(*host)(int channel)) {
  if (!g_pxn || g_in < 0) return;
  g_host = host;
  if (pthread_create(&g_listener, NULL, listener_main, NULL) == 0)
    g_listening = 1;
  else
    sim_fail("cannot start the PXN listener");
}

void sim_pxn_finish(void) {
  if (!g_pxn) return;
  if (g_out >= 0) close(g_out);
  g_out = -1;
  if (g_listening) pthread_join(g_listener, NULL); /* EOF: the other process sent everything */
  g_listening = 0;
  if (g_in >= 0) close(g_in);
  g_in = -1;
}
