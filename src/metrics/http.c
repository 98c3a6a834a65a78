/* http.c - the Prometheus endpoint: libmicrohttpd, loaded at run time (docs/metrics.md,
 * "Security").
 *
 * The server runs libmicrohttpd's own polling thread. It answers GET and HEAD of /metrics with
 * the text the metrics thread rendered last, and nothing else: 404 for other paths, 405 for
 * other methods. The text lives in a reference-counted blob; the only lock is the one that
 * swaps the current blob, taken by the metrics thread and the server for a few instructions.
 *
 * Bounds: at most NCCLSCOPE_METRICS_MAX_CONNECTIONS connections; a request line and headers of
 * at most 16 KiB (libmicrohttpd answers larger ones with an error itself); 10 s without
 * progress closes a connection, and a response not sent within 10 s is cut off, so a client
 * that reads slowly cannot hold a blob for long; at most 3 blobs exist (while slow clients hold
 * two, new snapshots wait: counted).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#ifdef NCS_HAVE_MHD
#include <microhttpd.h>
#endif
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics/metrics.h"

#define MHD_LIB "libmicrohttpd.so.12"
#define MAX_BLOBS 3
#define DEADLINE_NS 10000000000ull
#define IDLE_S 10
#define REQ_MEMORY (16u * 1024u)

#ifdef NCS_HAVE_MHD
typedef struct MHD_Daemon *(*mhd_start_fn)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                           MHD_AccessHandlerCallback, void *, ...);
typedef void (*mhd_stop_fn)(struct MHD_Daemon *);
typedef struct MHD_Response *(*mhd_cb_resp_fn)(uint64_t, size_t, MHD_ContentReaderCallback, void *,
                                               MHD_ContentReaderFreeCallback);
typedef struct MHD_Response *(*mhd_buf_resp_fn)(size_t, void *, enum MHD_ResponseMemoryMode);
typedef enum MHD_Result (*mhd_header_fn)(struct MHD_Response *, const char *, const char *);
typedef enum MHD_Result (*mhd_queue_fn)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
typedef void (*mhd_destroy_fn)(struct MHD_Response *);

#endif

typedef struct {
  uint32_t refs; /* under H.mu */
  size_t len;
  char text[];
} blob_t;

typedef struct {
  blob_t *b;
  uint64_t t0;
} resp_t;

#ifdef NCS_HAVE_MHD
/* the library's functions (kept across segments and forks) */
static struct {
  void *lib;
  mhd_start_fn start;
  mhd_stop_fn stop;
  mhd_cb_resp_fn cb_resp;
  mhd_buf_resp_fn buf_resp;
  mhd_header_fn header;
  mhd_queue_fn queue;
  mhd_destroy_fn destroy;
} M;
#endif

static struct {
  struct MHD_Daemon *d;
  int fd;
  blob_t *cur;
  uint32_t blobs;
  _Atomic uint64_t req[5], conns, skipped;
} H = {.fd = -1};
static pthread_mutex_t H_mu = PTHREAD_MUTEX_INITIALIZER;

#ifdef NCS_HAVE_MHD
int ncs_mx_http_load(char *err, size_t errlen) {
  if (M.lib) return 0;
  void *l = dlopen(MHD_LIB, RTLD_NOW | RTLD_LOCAL);
  if (!l) {
    snprintf(err, errlen, "%s", dlerror());
    return -1;
  }
  /* the library stays loaded for good: its code may be on a stack until the daemon stopped */
#define SYM(f, n)                                                                                  \
  if (!(*(void **)&M.f = dlsym(l, n))) {                                                          \
    snprintf(err, errlen, "%s has no %s", MHD_LIB, n);                                           \
    dlclose(l);                                                                                    \
    return -1;                                                                                     \
  }
  SYM(start, "MHD_start_daemon");
  SYM(stop, "MHD_stop_daemon");
  SYM(cb_resp, "MHD_create_response_from_callback");
  SYM(buf_resp, "MHD_create_response_from_buffer");
  SYM(header, "MHD_add_response_header");
  SYM(queue, "MHD_queue_response");
  SYM(destroy, "MHD_destroy_response");
#undef SYM
  M.lib = l;
  return 0;
}
#else
/* built without libmicrohttpd's headers (CMake said so): the other outputs still work */
int ncs_mx_http_load(char *err, size_t errlen) {
  snprintf(err, errlen, "this build of ncclscope has no HTTP endpoint: libmicrohttpd's headers "
                        "were missing when it was built (libmicrohttpd-dev)");
  return -1;
}
#endif

int ncs_mx_http_listen(const char *addr, uint32_t port) {
  struct sockaddr_storage ss;
  socklen_t len;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  char a[64];
  size_t n = strlen(addr);
  if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') /* [::1] as well as ::1 */
    snprintf(a, sizeof a, "%.*s", (int)(n - 2), addr + 1);
  else
    snprintf(a, sizeof a, "%s", addr);
  if (inet_pton(AF_INET, a, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET, v4->sin_port = htons((uint16_t)port), len = sizeof *v4;
  } else if (inet_pton(AF_INET6, a, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6, v6->sin6_port = htons((uint16_t)port), len = sizeof *v6;
  } else {
    errno = EINVAL;
    return -1;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1; /* a restarted job can take its port back from connections in TIME_WAIT */
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

uint32_t ncs_mx_http_port(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

static void unref(blob_t *b) {
  pthread_mutex_lock(&H_mu);
  int last = --b->refs == 0;
  if (last) H.blobs--;
  pthread_mutex_unlock(&H_mu);
  if (last) free(b);
}

void ncs_mx_http_publish(const char *text, size_t len) {
  pthread_mutex_lock(&H_mu);
  int full = H.blobs >= MAX_BLOBS;
  pthread_mutex_unlock(&H_mu);
  if (full) { /* slow clients hold the older ones: keep serving the current one */
    atomic_fetch_add_explicit(&H.skipped, 1, memory_order_relaxed);
    return;
  }
  blob_t *b = malloc(sizeof *b + len);
  if (!b) return;
  b->refs = 1, b->len = len;
  memcpy(b->text, text, len);
  pthread_mutex_lock(&H_mu);
  blob_t *old = H.cur;
  H.cur = b;
  H.blobs++;
  pthread_mutex_unlock(&H_mu);
  if (old) unref(old);
}

#ifdef NCS_HAVE_MHD
/* libmicrohttpd asks for the next part of a body when the socket can take it */
static ssize_t body(void *cls, uint64_t pos, char *buf, size_t max) {
  resp_t *r = cls;
  if (ncs_mono_ns() - r->t0 > DEADLINE_NS) {
    atomic_fetch_add_explicit(&H.req[4], 1, memory_order_relaxed);
    return MHD_CONTENT_READER_END_WITH_ERROR;
  }
  if (pos >= r->b->len) return MHD_CONTENT_READER_END_OF_STREAM;
  size_t n = r->b->len - (size_t)pos < max ? r->b->len - (size_t)pos : max;
  memcpy(buf, r->b->text + pos, n);
  return (ssize_t)n;
}

static void body_done(void *cls) {
  resp_t *r = cls;
  unref(r->b);
  free(r);
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code, int idx, const char *msg,
                              const char *allow) {
  struct MHD_Response *r = M.buf_resp(strlen(msg), (void *)msg, MHD_RESPMEM_PERSISTENT);
  if (!r) return MHD_NO;
  M.header(r, "Content-Type", "text/plain; charset=utf-8");
  if (allow) M.header(r, "Allow", allow);
  enum MHD_Result q = M.queue(c, code, r);
  M.destroy(r);
  atomic_fetch_add_explicit(&H.req[idx], 1, memory_order_relaxed);
  return q;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls) {
  (void)cls, (void)version, (void)upload, (void)upload_size, (void)req_cls;
  if (strcmp(method, "GET") && strcmp(method, "HEAD"))
    return answer(c, 405, 2, "only GET and HEAD\n", "GET, HEAD");
  if (strcmp(url, "/metrics")) return answer(c, 404, 1, "ncclscope serves /metrics only\n", NULL);
  pthread_mutex_lock(&H_mu);
  blob_t *b = H.cur;
  if (b) b->refs++;
  pthread_mutex_unlock(&H_mu);
  if (!b) return answer(c, 503, 3, "no snapshot yet\n", NULL);
  resp_t *rs = malloc(sizeof *rs);
  if (!rs) {
    unref(b);
    return MHD_NO;
  }
  rs->b = b, rs->t0 = ncs_mono_ns();
  struct MHD_Response *r = M.cb_resp(b->len, 32 * 1024, body, rs, body_done);
  if (!r) {
    body_done(rs);
    return MHD_NO;
  }
  M.header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  enum MHD_Result q = M.queue(c, 200, r);
  M.destroy(r); /* freed (and body_done called) when the connection is done with it */
  atomic_fetch_add_explicit(&H.req[0], 1, memory_order_relaxed);
  return q;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **sock_ctx,
                          enum MHD_ConnectionNotificationCode what) {
  (void)cls, (void)c, (void)sock_ctx;
  if (what == MHD_CONNECTION_NOTIFY_STARTED) atomic_fetch_add_explicit(&H.conns, 1, memory_order_relaxed);
}

int ncs_mx_http_start(int fd, uint32_t max_conns, char *err, size_t errlen) {
  H.d = M.start(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL, on_request, NULL,
                MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)max_conns,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_S,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)REQ_MEMORY,
                MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_STRICT_FOR_CLIENT,
                (int)1, MHD_OPTION_END);
  if (!H.d) {
    snprintf(err, errlen, "libmicrohttpd could not start a server");
    close(fd);
    return -1;
  }
  H.fd = fd;
  return 0;
}
#else
int ncs_mx_http_start(int fd, uint32_t max_conns, char *err, size_t errlen) {
  (void)max_conns;
  snprintf(err, errlen, "this build of ncclscope has no HTTP endpoint");
  close(fd);
  return -1;
}
#endif

void ncs_mx_http_stop(void) {
#ifdef NCS_HAVE_MHD
  if (H.d) M.stop(H.d); /* joins its thread, closes the connections and the socket */
#endif
  H.d = NULL, H.fd = -1;
  pthread_mutex_lock(&H_mu);
  blob_t *b = H.cur;
  H.cur = NULL;
  pthread_mutex_unlock(&H_mu);
  if (b) unref(b);
}

void ncs_mx_http_stats(ncs_mx_serve_stats_t *st) {
  for (int i = 0; i < 5; i++) st->http_requests[i] = atomic_load_explicit(&H.req[i], memory_order_relaxed);
  st->http_connections = atomic_load_explicit(&H.conns, memory_order_relaxed);
  st->http_skipped = atomic_load_explicit(&H.skipped, memory_order_relaxed);
}

/* A fork child has no server thread: it lets go of the listening socket (or the port would stay
 * bound, with nobody accepting, for as long as the child lives) and forgets the rest. */
void ncs_mx_http_after_fork(void) {
  if (H.fd >= 0) close(H.fd);
  memset(&H, 0, sizeof H);
  H.fd = -1;
  pthread_mutex_init(&H_mu, NULL);
}
