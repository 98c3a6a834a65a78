/* metrics.h - live metrics: Prometheus over HTTP, node_exporter textfiles, OTLP/HTTP JSON pushes
 * (docs/metrics.md lists every metric and label).
 *
 * Three parts, three kinds of thread, none of them NCCL's:
 * - agg.c runs on the writer thread (record/writer.c calls its hooks where it already sees
 *   starts, settled operations and losses): it aggregates into bounded tables and, once a
 *   second, copies them into a snapshot;
 * - serve.c runs the metrics thread: it takes the latest snapshot, renders it (expo.c), hands
 *   the text to the HTTP server (http.c), rewrites the textfile and pushes OTLP (otlp.c);
 * - http.c's server runs libmicrohttpd's own thread and only ever reads rendered text.
 * The writer and the metrics thread meet in a triple buffer under a mutex held for a pointer
 * swap; the server and the metrics thread meet in a reference-counted text blob, likewise.
 * Nothing here can make the writer or NCCL's threads wait for a client or a collector.
 */
#ifndef NCS_METRICS_H
#define NCS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core/ncs.h"
#include "trace/reader.h"

/* where an operation's execution time comes from: report's timing sources (docs/report.md) */
enum { NCS_MX_KERNEL_GPU = 0, NCS_MX_PROXY_HOST = 1, NCS_MX_ENQUEUE_HOST = 2, NCS_MX_TIMINGS = 3 };

#define NCS_MX_BOUNDS 20      /* execution-time histogram: finite bucket bounds */
#define NCS_MX_NAMES 64       /* distinct function, algorithm and protocol names */
#define NCS_MX_NAME_LEN 32
#define NCS_MX_COMM_NAME 64   /* a communicator name is cut to this in labels */
#define NCS_MX_LOCAL_MAX 64   /* ranks of one communicator in a process that arrivals compare */
#define NCS_MX_OTHER 0        /* communicator slot 0 and name 0: "other" (over the caps) */
#define NCS_MX_LG_OTHER 127   /* the size bucket of the overflow series */
extern const uint64_t ncs_mx_bounds_ns[NCS_MX_BOUNDS];

typedef struct {
  uint64_t count;   /* operations settled */
  uint64_t bytes;   /* their bytes (nccl-tests' algbw size) */
  uint64_t timed;   /* ... of which had an execution time (kernel_gpu, proxy_host) */
  uint64_t time_ns; /* the sum of those times */
  double bus_bytes; /* the sum of bytes x bus factor of the timed ones */
  uint64_t hist[NCS_MX_BOUNDS + 1]; /* timed operations per bucket (not cumulative); last: +Inf */
  /* Inspector's gauges: kernel_gpu operations of the window being filled (w_) and of the last
   * closed window (g_): mean execution time and geometric mean bus bandwidth */
  uint64_t w_n, w_ns, w_nbw;
  double w_logbw;
  uint64_t g_n, g_nbw;
  double g_us, g_bw;
} ncs_mx_val_t;

typedef struct {
  uint16_t comm;          /* communicator slot (NCS_MX_OTHER: over the cap) */
  uint8_t func, algo, proto; /* name indexes (0: other/unknown) */
  uint8_t timing, p2p;
  int8_t lg;              /* bytes in [2^lg, 2^(lg+1)); -1: 0 bytes; NCS_MX_LG_OTHER */
  ncs_mx_val_t v;
} ncs_mx_series_t;

/* A communicator as one rank of this process sees it: a label set of its own. */
typedef struct {
  uint64_t comm_id;
  int32_t rank, nranks, nnodes, device;
  char name[NCS_MX_COMM_NAME];
  uint16_t local_n;  /* ranks of this communicator (comm_id) in this process */
  uint8_t local;     /* this rank's index among them; 255: beyond NCS_MX_LOCAL_MAX */
  /* arrivals compared across the local ranks (docs/metrics.md, "Late arrivals") */
  uint64_t instances, late, wait_ns, caused_ns;
  int64_t wait_mark; /* the end of the union of this rank's waiting intervals so far */
  /* its arrivals are numbered in call order; their instances count in that order (agg.c) */
  uint32_t arrivals, counted;
} ncs_mx_comm_t;

/* What the writer knows about the process, copied at each publication. */
typedef struct {
  uint64_t mono_ns, real_ns;           /* when the snapshot was taken */
  uint64_t start_real_ns;              /* when this segment (the counters' start) began */
  uint64_t window_ns;                  /* length of the gauges' last closed window, 0: none yet */
  uint64_t starts[NCS_T_COUNT], stops[NCS_T_COUNT], states[NCS_T_COUNT], expired[NCS_T_COUNT];
  uint64_t lost[NCS_LOSS_MAX][NCS_T_COUNT]; /* records lost, by reason - 1 and type */
  uint64_t bad_handles, stale_handles, null_handles;
  uint64_t groups, groups_unsampled, revisions;
  uint64_t pool_bytes, pool_used, pool_peak, tracked, trace_bytes, write_errors;
  uint64_t open_ops, oldest_open_ns;   /* Coll/P2p started and not complete; mono ns */
  uint64_t last_event_ns;              /* mono ns of the latest record seen, 0 none */
  uint64_t dumps[5];                   /* flight dumps written, by reason (NCS_DR_*) */
  uint32_t watchdog_s, events;
  int mode;
  /* the aggregation's own bounds */
  uint64_t over_comm, over_series, over_name; /* operations counted under "other" */
  uint64_t incomplete;                 /* arrival instances given up without every local rank */
} ncs_mx_proc_t;

typedef struct {
  ncs_mx_proc_t p;
  uint32_t nseries, ncomms, nnames;
  ncs_mx_series_t *series;
  ncs_mx_comm_t *comms;
  char names[NCS_MX_NAMES][NCS_MX_NAME_LEN];
  int final; /* the last snapshot of the segment */
} ncs_mx_snap_t;

/* ---- agg.c: the writer's side. Every function but ncs_mx_take runs on the writer thread. */
extern NCS_HIDDEN int ncs_mx_active; /* metrics on for this segment */
/* the process is exiting with communicators alive (the plugin's destructor): TLS libraries may
 * already be torn down, so no last https push */
extern NCS_HIDDEN _Atomic int ncs_mx_exiting;
NCS_HIDDEN void ncs_mx_begin(void);  /* segment start, before the writer thread runs */
NCS_HIDDEN void ncs_mx_end(void);    /* after the writer thread was joined */
NCS_HIDDEN void ncs_mx_after_fork(void);
/* a CollApi/P2pApi START: its time is the arrival of the Coll/P2p under it */
NCS_HIDDEN void ncs_mx_api(const ncs_event_t *e);
/* a Coll/P2p START (raw: its fields as recorded, strings as pointers): its series + 1 (0: not
 * counted), its bytes and bytes x bus factor for ncs_mx_settle */
NCS_HIDDEN uint32_t ncs_mx_op(const ncs_event_t *e, const uint64_t *raw, uint64_t *bytes,
                              double *bus_bytes);
/* the operation is settled (its last completion is known, or it never completed) */
NCS_HIDDEN void ncs_mx_settle(uint32_t series, uint64_t bytes, double bus_bytes, int timing,
                              uint64_t ns);
NCS_HIDDEN void ncs_mx_lost(unsigned reason, const uint64_t *by_type);
NCS_HIDDEN int ncs_mx_due(uint64_t now);
/* publish a snapshot (p: what only the writer knows); final: the segment's last */
NCS_HIDDEN void ncs_mx_publish(const ncs_mx_proc_t *p, int final);
/* metrics thread: wait up to wait_ms for a snapshot newer than the last one taken; NULL when
 * none came. The snapshot stays valid until the next call. */
NCS_HIDDEN const ncs_mx_snap_t *ncs_mx_take(int wait_ms);

/* ---- expo.c: rendering a snapshot (metrics thread) */
typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} ncs_mx_buf_t;
NCS_HIDDEN void ncs_mx_buf_reset(ncs_mx_buf_t *b);
NCS_HIDDEN void ncs_mx_buf_free(ncs_mx_buf_t *b);
NCS_HIDDEN void ncs_mx_buf_add(ncs_mx_buf_t *b, const char *s, size_t n);
NCS_HIDDEN void ncs_mx_buf_printf(ncs_mx_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* the process's own labels and resource attributes, set once per segment */
typedef struct {
  char node[128], pid[24], job[64];
  char service[128];    /* OTLP service.name */
  char resource[1024];  /* OTEL_RESOURCE_ATTRIBUTES as given */
} ncs_mx_ident_t;

/* what the serving side counts itself, rendered with the snapshot */
typedef struct {
  uint64_t http_requests[5]; /* by answer: 200, 404, 405, 503 (no snapshot yet), aborted */
  uint64_t http_connections, http_skipped;
  uint64_t otlp_ok, otlp_failed, textfile_ok, textfile_failed;
} ncs_mx_serve_stats_t;

NCS_HIDDEN void ncs_mx_render_prom(ncs_mx_buf_t *out, const ncs_mx_snap_t *s,
                                   const ncs_mx_ident_t *id, const ncs_mx_serve_stats_t *st);
NCS_HIDDEN void ncs_mx_render_otlp(ncs_mx_buf_t *out, const ncs_mx_snap_t *s,
                                   const ncs_mx_ident_t *id, const ncs_mx_serve_stats_t *st);
/* natural log and exp without libm (the plugin links only libc) */
NCS_HIDDEN double ncs_mx_ln(double x);
NCS_HIDDEN double ncs_mx_exp(double x);

/* ---- serve.c: the metrics thread */
NCS_HIDDEN int ncs_mx_serve_start(void);
NCS_HIDDEN void ncs_mx_serve_stop(void);
NCS_HIDDEN void ncs_mx_serve_after_fork(void);

/* ---- http.c: the Prometheus endpoint (libmicrohttpd, loaded at run time) */
NCS_HIDDEN int ncs_mx_http_load(char *err, size_t errlen); /* 0, or -1: not there */
/* a listening socket on a numeric address and port (0: any free one); -1 with errno */
NCS_HIDDEN int ncs_mx_http_listen(const char *addr, uint32_t port);
NCS_HIDDEN uint32_t ncs_mx_http_port(int fd); /* the port it is bound to */
/* serve on the socket (the server owns it from now on); 0, or -1 with err */
NCS_HIDDEN int ncs_mx_http_start(int listen_fd, uint32_t max_conns, char *err, size_t errlen);
/* the text every request gets from now on (copied) */
NCS_HIDDEN void ncs_mx_http_publish(const char *text, size_t len);
NCS_HIDDEN void ncs_mx_http_stop(void);
NCS_HIDDEN void ncs_mx_http_after_fork(void);
NCS_HIDDEN void ncs_mx_http_stats(ncs_mx_serve_stats_t *st);

/* ---- otlp.c: pushes (libcurl, loaded at run time) */
NCS_HIDDEN int ncs_mx_otlp_init(const char *endpoint, const char *headers, char *err,
                                size_t errlen);
/* POST body; 0 when the collector answered 2xx, else -1 with err; -2 when it gave up because
 * *cancel (when not NULL) was set. */
NCS_HIDDEN int ncs_mx_otlp_push(const char *body, size_t len, uint32_t timeout_ms,
                                _Atomic int *cancel, char *err, size_t errlen);
NCS_HIDDEN void ncs_mx_otlp_fini(void);
NCS_HIDDEN void ncs_mx_otlp_after_fork(void);

#endif
