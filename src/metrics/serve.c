/* serve.c - the metrics thread: the outputs of the live metrics (docs/metrics.md).
 *
 * Started with the writer (agg.c's ncs_mx_begin), it does everything slow off the writer and
 * NCCL's threads: loading libmicrohttpd and libcurl, choosing a port, and then for every
 * snapshot the writer publishes, rendering it, handing the text to the HTTP server, rewriting
 * the textfile and pushing OTLP. An output whose library is missing is logged once and left
 * out; the others go on.
 *
 * Many processes per node: the port is NCCLSCOPE_METRICS_PORT plus the process's local rank
 * (the first of LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_RANK,
 * MPI_LOCALRANKID, PALS_LOCAL_RANKID, FLUX_TASK_LOCAL_ID that is set, else the CUDA device of its
 * first communicator). Every process says where it listens in
 * <NCCLSCOPE_METRICS_DIR>/ncclscope-<host>-<pid>.targets.json, a Prometheus file_sd file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "metrics/metrics.h"

#define SEARCH_PORTS 64 /* ports tried above the base when no local rank is known */
#define LOG_FAILS 8     /* output failures logged one by one; the rest only counted */

static struct {
  pthread_t th;
  int running;
  _Atomic int stop;
  ncs_mx_ident_t id;
  uint32_t outputs; /* what works: NCS_MX_* */
  char host[128], targets[1400], textfile[1400];
  uint32_t port; /* of the endpoint; its targets file is written with the first text served */
  ncs_mx_buf_t prom, json;
  uint64_t last_tf_ns, last_otlp_ns;
  ncs_mx_serve_stats_t st;
  int tf_failing, otlp_failing, logged;
} X;

static void mkdir_p(const char *dir) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    mkdir(tmp, 0755);
    *p = '/';
  }
  mkdir(tmp, 0755);
}

/* write a whole file under a temporary name, then rename it: a reader (node_exporter,
 * Prometheus' file_sd) never sees half of one */
static int write_file(const char *path, const char *text, size_t len) {
  char tmp[1500];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t k = write(fd, text + off, len - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    off += (size_t)k;
  }
  int e = off == len ? 0 : (errno ? errno : EIO);
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, path) != 0) e = errno;
  if (e) {
    unlink(tmp);
    errno = e;
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ the port */

/* the process's local rank, and where it came from; -1 when nothing says */
static int local_rank(const char **src) {
  static const char *const vars[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                     "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                     "PALS_LOCAL_RANKID", "FLUX_TASK_LOCAL_ID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    char *e;
    long r = v && *v ? strtol(v, &e, 10) : -1;
    if (v && *v && !*e && r >= 0 && r < 65536) {
      *src = vars[i];
      return (int)r;
    }
  }
  /* the CUDA device NCCL made current for the first communicator: init fills it in while the
   * writer (and this thread) start, so wait a little for it */
  for (int k = 0; k < 100 && !atomic_load(&X.stop); k++) {
    if (atomic_load(&ncs_g.ncomms) > 0 && atomic_load(&ncs_g.comms[0].state) != NCS_COMM_FREE) {
      if (ncs_g.comms[0].device < 0) break;
      *src = "the CUDA device";
      return ncs_g.comms[0].device;
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

static int try_port(const char *addr, uint32_t port, int *err) {
  int fd = ncs_mx_http_listen(addr, port);
  *err = fd < 0 ? errno : 0;
  return fd;
}

/* A listening socket: base + local rank (or the configured offset); without a local rank the
 * first free port from the base up; when the port is taken, any free port (the targets file
 * says which). */
static int choose_port(char *how, size_t hlen) {
  const ncs_config_t *c = &ncs_g.cfg;
  const char *src = "NCCLSCOPE_METRICS_PORT_OFFSET";
  int off = c->mx_port_offset >= 0 ? c->mx_port_offset : c->mx_port ? local_rank(&src) : 0;
  int e = 0, fd = -1;
  if (!c->mx_port) {
    snprintf(how, hlen, "any free port (NCCLSCOPE_METRICS_PORT=0)");
    return try_port(c->mx_addr, 0, &e);
  }
  if (off >= 0) {
    uint32_t want = c->mx_port + (uint32_t)off;
    if (want <= 65535 && (fd = try_port(c->mx_addr, want, &e)) >= 0) {
      snprintf(how, hlen, "base %u + %d from %s", c->mx_port, off, src);
      return fd;
    }
    if (e == EINVAL || e == EADDRNOTAVAIL) return -1;
    snprintf(how, hlen, "port %u (base %u + %d from %s) is %s; any free port instead", want,
             c->mx_port, off, src, want > 65535 ? "out of range" : strerror(e));
    return try_port(c->mx_addr, 0, &e);
  }
  for (uint32_t p = c->mx_port; p < c->mx_port + SEARCH_PORTS && p <= 65535; p++) {
    if ((fd = try_port(c->mx_addr, p, &e)) >= 0) {
      snprintf(how, hlen, "no local rank known: the first free port from %u", c->mx_port);
      return fd;
    }
    if (e == EINVAL || e == EADDRNOTAVAIL) return -1;
  }
  snprintf(how, hlen, "no local rank known and ports %u-%u taken; any free port instead",
           c->mx_port, c->mx_port + SEARCH_PORTS - 1);
  return try_port(c->mx_addr, 0, &e);
}

/* the targets file: where Prometheus finds this process (its file_sd format) */
static void write_targets(uint32_t port) {
  const char *a = ncs_g.cfg.mx_addr;
  int any = !strcmp(a, "0.0.0.0") || !strcmp(a, "::") || !strcmp(a, "[::]");
  int v6 = strchr(a, ':') && a[0] != '[';
  char t[600];
  int n = snprintf(t, sizeof t, "[{\"targets\":[\"%s%s%s:%u\"],\"labels\":{}}]\n", v6 && !any ? "[" : "",
                   any ? X.host : a, v6 && !any ? "]" : "", port);
  snprintf(X.targets, sizeof X.targets, "%s/ncclscope-%s-%s.targets.json", ncs_g.cfg.mx_dir, X.host, X.id.pid);
  if (write_file(X.targets, t, (size_t)n) != 0) {
    ncs_log(NCS_LOG_WARN, "metrics: cannot write %s: %s; the endpoint is still served", X.targets,
            strerror(errno));
    X.targets[0] = 0;
  }
}

static void http_setup(char *desc, size_t dlen) {
  char err[512] = "", how[256] = "";
  if (ncs_mx_http_load(err, sizeof err) != 0) {
    ncs_log(NCS_LOG_WARN, "metrics: no HTTP endpoint: cannot load libmicrohttpd (%s); install "
                          "libmicrohttpd12; the other outputs go on", err);
    return;
  }
  int fd = choose_port(how, sizeof how);
  if (fd < 0) {
    ncs_log(NCS_LOG_WARN, "metrics: no HTTP endpoint: cannot listen on %s (NCCLSCOPE_METRICS_ADDR): %s",
            ncs_g.cfg.mx_addr, strerror(errno));
    return;
  }
  uint32_t port = ncs_mx_http_port(fd);
  if (ncs_mx_http_start(fd, ncs_g.cfg.mx_max_conns, err, sizeof err) != 0) {
    ncs_log(NCS_LOG_WARN, "metrics: no HTTP endpoint: %s", err);
    return;
  }
  X.outputs |= NCS_MX_HTTP;
  X.port = port; /* the targets file follows the first snapshot: found means ready */
  size_t n = strlen(desc);
  snprintf(desc + n, dlen - n, " http://%s:%u/metrics (%s)", ncs_g.cfg.mx_addr, port, how);
}

static void otlp_setup(char *desc, size_t dlen) {
  char err[512] = "";
  if (ncs_mx_otlp_init(ncs_g.cfg.otlp_endpoint, ncs_g.cfg.otlp_headers, err, sizeof err) != 0) {
    ncs_log(NCS_LOG_WARN, "metrics: no OTLP pushes: %s (libcurl4 provides libcurl.so.4); the "
                          "other outputs go on", err);
    return;
  }
  X.outputs |= NCS_MX_OTLP;
  size_t n = strlen(desc);
  snprintf(desc + n, dlen - n, " OTLP to %s", ncs_g.cfg.otlp_endpoint);
}

static void ident(void) {
  gethostname(X.host, sizeof X.host - 1);
  X.host[strcspn(X.host, "/")] = 0;
  if (!X.host[0]) snprintf(X.host, sizeof X.host, "unknown");
  snprintf(X.id.node, sizeof X.id.node, "%s", X.host);
  snprintf(X.id.pid, sizeof X.id.pid, "%d", (int)ncs_g.pid);
  const char *j = getenv("SLURM_JOB_ID"), *sv = getenv("OTEL_SERVICE_NAME"),
             *ra = getenv("OTEL_RESOURCE_ATTRIBUTES");
  snprintf(X.id.job, sizeof X.id.job, "%s", j && *j ? j : "unknown"); /* Inspector's default */
  snprintf(X.id.service, sizeof X.id.service, "%s", sv && *sv ? sv : "ncclscope");
  snprintf(X.id.resource, sizeof X.id.resource, "%s", ra ? ra : "");
}

/* ------------------------------------------------------------------ each snapshot */

/* a failure is logged the first LOG_FAILS times it starts, and when it ends */
static void outcome(const char *what, int ok, int *failing, const char *err) {
  if (!ok && !*failing && X.logged++ < LOG_FAILS)
    ncs_log(NCS_LOG_WARN, "metrics: %s failed: %s; tried again every NCCLSCOPE_METRICS_INTERVAL_MS "
                          "(counted in ncclscope_metrics_*_total{result=\"failed\"})", what, err);
  else if (ok && *failing && X.logged < LOG_FAILS)
    ncs_log(NCS_LOG_WARN, "metrics: %s works again", what);
  *failing = !ok;
}

static void serve_one(const ncs_mx_snap_t *s) {
  uint64_t iv = (uint64_t)ncs_g.cfg.mx_interval_ms * 1000000ull, now = s->p.mono_ns;
  ncs_mx_http_stats(&X.st);
  int tf = (X.outputs & NCS_MX_TEXTFILE) && !s->final && (!X.last_tf_ns || now - X.last_tf_ns >= iv);
  int otlp = (X.outputs & NCS_MX_OTLP) && (s->final || !X.last_otlp_ns || now - X.last_otlp_ns >= iv);
  /* at exit, OpenSSL's atexit cleanup has run before the plugin's destructor: no https then */
  if (s->final && atomic_load(&ncs_mx_exiting) && !strncmp(ncs_g.cfg.otlp_endpoint, "https:", 6)) otlp = 0;
  if ((X.outputs & NCS_MX_HTTP) || tf) {
    ncs_mx_render_prom(&X.prom, s, &X.id, &X.st);
    if (!X.prom.oom && (X.outputs & NCS_MX_HTTP)) {
      ncs_mx_http_publish(X.prom.p, X.prom.len);
      if (X.port) write_targets(X.port), X.port = 0;
    }
  }
  if (tf && !X.prom.oom) {
    X.last_tf_ns = now;
    int ok = write_file(X.textfile, X.prom.p, X.prom.len) == 0;
    ok ? X.st.textfile_ok++ : X.st.textfile_failed++;
    outcome("writing the textfile", ok, &X.tf_failing, strerror(errno));
  }
  if (otlp) {
    X.last_otlp_ns = now;
    ncs_mx_render_otlp(&X.json, s, &X.id, &X.st);
    char err[256] = "out of memory";
    /* a periodic push gives up when the segment ends (the last push, with its full timeout,
     * carries the same cumulative values and more: nothing to count or log) */
    int r = X.json.oom ? -1 : ncs_mx_otlp_push(X.json.p, X.json.len, ncs_g.cfg.otlp_timeout_ms,
                                               s->final ? NULL : &X.stop, err, sizeof err);
    if (r == -2) return;
    int ok = r == 0;
    ok ? X.st.otlp_ok++ : X.st.otlp_failed++;
    outcome("the OTLP push", ok, &X.otlp_failing, err);
  }
}

static void *serve_main(void *arg) {
  (void)arg;
  char desc[2048] = "";
  const ncs_config_t *c = &ncs_g.cfg;
  ident();
  mkdir_p(c->mx_dir);
  if (c->metrics & NCS_MX_HTTP) http_setup(desc, sizeof desc);
  if (c->metrics & NCS_MX_OTLP) otlp_setup(desc, sizeof desc);
  if (c->metrics & NCS_MX_TEXTFILE) {
    X.outputs |= NCS_MX_TEXTFILE;
    snprintf(X.textfile, sizeof X.textfile, "%s/ncclscope-%s-%s.prom", c->mx_dir, X.host, X.id.pid);
    size_t n = strlen(desc);
    snprintf(desc + n, sizeof desc - n, " textfile %.1400s", X.textfile);
  }
  if (X.outputs)
    ncs_log(NCS_LOG_INFO, "metrics:%s; every %u ms", desc, c->mx_interval_ms);
  else
    ncs_log(NCS_LOG_WARN, "metrics: no output works (NCCLSCOPE_METRICS); recording goes on");
  for (;;) {
    const ncs_mx_snap_t *s = ncs_mx_take(200);
    if (s && X.outputs) serve_one(s);
    if (s && s->final) break;
    if (!s && atomic_load(&X.stop)) break;
  }
  /* the endpoint and the files go with the segment: nothing would update them any more */
  ncs_mx_http_stop();
  if (X.targets[0]) unlink(X.targets);
  if (X.outputs & NCS_MX_TEXTFILE) unlink(X.textfile);
  ncs_mx_otlp_fini();
  return NULL;
}

int ncs_mx_serve_start(void) {
  ncs_mx_buf_free(&X.prom);
  ncs_mx_buf_free(&X.json);
  memset(&X, 0, sizeof X);
  if (pthread_create(&X.th, NULL, serve_main, NULL) != 0) {
    ncs_log(NCS_LOG_WARN, "metrics: cannot start the metrics thread; no live metrics");
    return -1;
  }
  X.running = 1;
  return 0;
}

void ncs_mx_serve_stop(void) {
  if (!X.running) return;
  atomic_store(&X.stop, 1);
  pthread_join(X.th, NULL);
  X.running = 0;
  ncs_mx_buf_free(&X.prom);
  ncs_mx_buf_free(&X.json);
}

/* a fork child: the thread, the server and the connection are the parent's */
void ncs_mx_serve_after_fork(void) {
  ncs_mx_http_after_fork();
  ncs_mx_otlp_after_fork();
  X.running = 0;
  ncs_mx_buf_free(&X.prom);
  ncs_mx_buf_free(&X.json);
}
