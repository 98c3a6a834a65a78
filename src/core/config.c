/* config.c - NCCLSCOPE_* environment variables (docs/config.md lists them all).
 * Bad values never stop NCCL: they are reported through NCCL's logger and the default is used. */
#include <ctype.h>
#include <signal.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ncs.h"
#include "trace/range.h"

static void add_error(ncs_config_t *c, const char *var, const char *val, const char *why) {
  size_t n = strlen(c->errors);
  snprintf(c->errors + n, sizeof c->errors - n, "%s%s=\"%.40s\": %s", n ? "; " : "", var, val, why);
}

/* "64M", "1g", "4096" -> bytes; -1 when malformed (a sign, spaces or anything after the
 * suffix included) */
static long long parse_size(const char *s) {
  char *e;
  if (!isdigit((unsigned char)*s)) return -1;
  unsigned long long v = strtoull(s, &e, 10);
  if (e == s) return -1;
  unsigned long long mul = 1;
  switch (tolower((unsigned char)*e)) {
  case 'k': mul = 1ull << 10; e++; break;
  case 'm': mul = 1ull << 20; e++; break;
  case 'g': mul = 1ull << 30; e++; break;
  default: break;
  }
  if (*e == 'i' || *e == 'I') e++;
  if (*e == 'b' || *e == 'B') e++;
  if (*e) return -1;
  if (v > (1ull << 40) / mul) return -1;
  return (long long)(v * mul);
}

static uint64_t env_size(ncs_config_t *c, const char *var, uint64_t def, uint64_t lo, uint64_t hi) {
  const char *s = getenv(var);
  if (!s || !*s) return def;
  long long v = parse_size(s);
  if (v < 0) {
    add_error(c, var, s, "not a size; using the default");
    return def;
  }
  if ((uint64_t)v < lo || (uint64_t)v > hi) {
    add_error(c, var, s, "out of range; using the default");
    return def;
  }
  return (uint64_t)v;
}

/* An on/off setting (ncs_parse_bool's spellings); def when unset, empty or anything else (with
 * an error that names the spellings). */
static int env_bool(ncs_config_t *c, const char *var, int def) {
  const char *s = getenv(var);
  if (!s || !*s) return def;
  int v = ncs_parse_bool(s);
  if (v < 0) {
    add_error(c, var, s, def ? "expected on or off (1/0, true/false, yes/no); using the default, on"
                             : "expected on or off (1/0, true/false, yes/no); using the default, off");
    return def;
  }
  return v;
}

/* An event list variable (NCCLSCOPE_EVENTS' syntax): its mask, or def (with an error) when it
 * names something unknown, or def when unset. A list that selects nothing ("-1", "none") is an
 * error too where it would silently record nothing (need_some), with the default used. */
static uint32_t env_events(ncs_config_t *c, const char *var, uint32_t def, const char *bad_msg,
                           int need_some) {
  const char *s = getenv(var), *bad;
  size_t badlen;
  uint32_t m;
  if (!s || !*s) return def;
  if (ncs_parse_event_list(s, &m, &bad, &badlen) != 0) {
    add_error(c, var, s, bad_msg);
    return def;
  }
  if (!m && need_some) {
    add_error(c, var, s, "selects no event type (a list starts empty: '-X' alone removes from "
              "nothing); using the default");
    return def;
  }
  return m;
}

/* GPU truth (docs/gpu-truth.md): CUPTI only when asked for, because CUDA 13.0 lets one CUPTI
 * client trace a process and the other (PyTorch's profiler, Nsight Systems) then gets nothing.
 * Asking for it also records KernelLaunch, whose events the kernels are joined to. */
static void cupti_config(ncs_config_t *c) {
  const char *v = getenv("NCCLSCOPE_CUPTI");
  c->cupti = env_bool(c, "NCCLSCOPE_CUPTI", 0);
  int off = v && ncs_parse_bool(v) == 0;
  if (c->range_metrics[0] && off) { /* said twice: the explicit off wins */
    add_error(c, "NCCLSCOPE_RANGE_METRICS", c->range_metrics, "metrics need CUPTI, and NCCLSCOPE_CUPTI=off; no range metrics");
    c->range_metrics[0] = 0;
  }
  if (c->range_metrics[0]) c->cupti = 1; /* metrics ask for CUPTI */
  const char *lib = getenv("NCCLSCOPE_CUPTI_LIB");
  snprintf(c->cupti_lib, sizeof c->cupti_lib, "%s", lib ? lib : "");
  c->cupti_buffer_bytes = env_size(c, "NCCLSCOPE_CUPTI_BUFFER_SIZE", 16ull << 20, 2ull << 20, 1ull << 30);
  const char *k = getenv("NCCLSCOPE_CUPTI_KERNELS");
  if (k && *k) {
    if (!strcmp(k, "nccl"))
      c->cupti_summary = 1;
    else if (strcmp(k, "all"))
      add_error(c, "NCCLSCOPE_CUPTI_KERNELS", k, "expected all or nccl; recording all");
  }
  if (c->cupti) c->events |= NCS_EV_KERNEL_LAUNCH;
}

/* The first of two variables that is set (OTel's per-signal variable, then its general one). */
static const char *env2(const char *a, const char *b, const char **which) {
  const char *v = getenv(a);
  *which = a;
  if (v && *v) return v;
  *which = b;
  v = getenv(b);
  return v && *v ? v : NULL;
}

/* Live metrics (docs/metrics.md): which outputs, where, and OTel's exporter variables. */
static void metrics_config(ncs_config_t *c) {
  const char *m = getenv("NCCLSCOPE_METRICS");
  if (m && *m && ncs_parse_bool(m) != 0 && strcasecmp(m, "none")) {
    char list[256], *save = NULL;
    snprintf(list, sizeof list, "%s", m);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (!strcmp(t, "http")) c->metrics |= NCS_MX_HTTP;
      else if (!strcmp(t, "textfile")) c->metrics |= NCS_MX_TEXTFILE;
      else if (!strcmp(t, "otlp")) c->metrics |= NCS_MX_OTLP;
      else if (!strcmp(t, "all")) c->metrics |= NCS_MX_HTTP | NCS_MX_TEXTFILE | NCS_MX_OTLP;
      else add_error(c, "NCCLSCOPE_METRICS", m, "expected http, textfile, otlp, all or none; ignoring the unknown name");
    }
  }
  const char *a = getenv("NCCLSCOPE_METRICS_ADDR");
  snprintf(c->mx_addr, sizeof c->mx_addr, "%s", a && *a ? a : "127.0.0.1");
  c->mx_port = (uint32_t)env_size(c, "NCCLSCOPE_METRICS_PORT", 9479, 0, 65535);
  const char *off = getenv("NCCLSCOPE_METRICS_PORT_OFFSET");
  c->mx_port_offset = -1;
  if (off && *off && strcmp(off, "auto"))
    c->mx_port_offset = (int32_t)env_size(c, "NCCLSCOPE_METRICS_PORT_OFFSET", 0, 0, 65535);
  c->mx_interval_ms = (uint32_t)env_size(c, "NCCLSCOPE_METRICS_INTERVAL_MS", 15000, 100, 3600000);
  const char *d = getenv("NCCLSCOPE_METRICS_DIR");
  if (d && *d)
    snprintf(c->mx_dir, sizeof c->mx_dir, "%s", d);
  else if (snprintf(c->mx_dir, sizeof c->mx_dir, "%s/metrics", c->dir) >= (int)sizeof c->mx_dir)
    add_error(c, "NCCLSCOPE_DIR", c->dir, "too long for the metrics directory under it");
  c->mx_max_comms = (uint32_t)env_size(c, "NCCLSCOPE_METRICS_MAX_COMMS", 64, 1, 4096);
  c->mx_max_series = (uint32_t)env_size(c, "NCCLSCOPE_METRICS_MAX_SERIES", 2048, 16, 65536);
  c->mx_max_conns = (uint32_t)env_size(c, "NCCLSCOPE_METRICS_MAX_CONNECTIONS", 16, 1, 1024);
  /* OTLP: the standard OpenTelemetry exporter variables, metrics-specific ones first */
  const char *which, *e = env2("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT", &which);
  if (!e)
    snprintf(c->otlp_endpoint, sizeof c->otlp_endpoint, "http://localhost:4318/v1/metrics");
  else if (!strcmp(which, "OTEL_EXPORTER_OTLP_ENDPOINT")) /* a base URL: the signal's path follows */
    snprintf(c->otlp_endpoint, sizeof c->otlp_endpoint, "%s%sv1/metrics", e,
             e[strlen(e) - 1] == '/' ? "" : "/");
  else
    snprintf(c->otlp_endpoint, sizeof c->otlp_endpoint, "%s", e);
  const char *h = env2("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS", &which);
  snprintf(c->otlp_headers, sizeof c->otlp_headers, "%s", h ? h : "");
  const char *t = env2("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", &which);
  /* 2 s rather than OTel's 10 s: the last push of a segment holds up NCCL's finalize */
  c->otlp_timeout_ms = t ? (uint32_t)env_size(c, which, 2000, 1, 600000) : 2000;
}

/* User ranges and their hardware metrics (docs/ranges.md). Metrics need CUPTI, so asking for
 * them asks for CUPTI: with the same policy (off unless asked for), the same subscription. */
static void range_config(ncs_config_t *c) {
  c->ranges = env_bool(c, "NCCLSCOPE_RANGES", 1);
  const char *m = getenv("NCCLSCOPE_RANGE_METRICS");
  if (m && *m && ncs_parse_bool(m) != 0 && strcmp(m, "none")) {
    if (strlen(m) >= sizeof c->range_metrics)
      add_error(c, "NCCLSCOPE_RANGE_METRICS", m, "longer than 1023 bytes; no metrics");
    else if (!c->ranges)
      add_error(c, "NCCLSCOPE_RANGE_METRICS", m, "metrics are per range, and NCCLSCOPE_RANGES=off; no metrics");
    else
      snprintf(c->range_metrics, sizeof c->range_metrics, "%s", m);
  }
  const char *r = getenv("NCCLSCOPE_RANGE_REPLAY");
  if (r && *r) {
    if (!strcmp(r, "user"))
      c->range_replay = NCS_REPLAY_USER;
    else if (strcmp(r, "none"))
      add_error(c, "NCCLSCOPE_RANGE_REPLAY", r, "expected none or user; no replay");
  }
  c->range_metrics_level = (uint32_t)env_size(c, "NCCLSCOPE_RANGE_METRICS_LEVEL", 1, 1, 64);
  c->range_metrics_ranges = (uint32_t)env_size(c, "NCCLSCOPE_RANGE_METRICS_RANGES", 512, 1, 65536);
}

void ncs_config_load(ncs_config_t *c) {
  memset(c, 0, sizeof *c);
  const char *dir = getenv("NCCLSCOPE_DIR");
  snprintf(c->dir, sizeof c->dir, "%s", dir && *dir ? dir : "ncclscope-trace");

  const char *bad;
  size_t badlen;
  uint32_t def;
  if (ncs_parse_event_list(NCS_DEFAULT_EVENTS, &def, &bad, &badlen) != 0) def = NCS_EV_ALL;
  c->events = env_events(c, "NCCLSCOPE_EVENTS", def, "unknown event name; using the default", 1);
  /* a KernelPhase's parent is its KernelCh: NCCL 2.31 turns KernelCh on for it anyway, and
     phases without their KernelCh could not be placed */
  if (c->events & NCS_EV_KERNEL_PHASE) c->events |= NCS_EV_KERNEL_CH;

  c->pool_bytes = env_size(c, "NCCLSCOPE_BUFFER_SIZE", 32ull << 20, 1ull << 20, 16ull << 30);
  c->max_threads = (uint32_t)env_size(c, "NCCLSCOPE_MAX_THREADS", 256, 4, 65536);
  c->max_comms = (uint32_t)env_size(c, "NCCLSCOPE_MAX_COMMS", 4096, 1, 1u << 20);
  c->expire_ms = (uint32_t)env_size(c, "NCCLSCOPE_EXPIRE_MS", 30000, 1, 86400000);
  c->flush_ms = (uint32_t)env_size(c, "NCCLSCOPE_FLUSH_MS", 200, 1, 60000);
  uint64_t tm = env_size(c, "NCCLSCOPE_TRACK_MAX", 1u << 16, 64, 1u << 24);
  uint32_t p2 = 64;
  while (p2 < tm) p2 <<= 1;
  c->track_max = p2;

  const char *clk = getenv("NCCLSCOPE_CLOCK");
  c->use_tsc = ncs_tsc_usable();
  if (clk && *clk) {
    if (!strcmp(clk, "monotonic"))
      c->use_tsc = 0;
    else if (!strcmp(clk, "sim")) /* nccl-sim --clock model: its model's time (clock.c) */
      c->use_tsc = 0, c->sim_clock = 1;
    else if (!strcmp(clk, "tsc")) {
      if (!c->use_tsc) add_error(c, "NCCLSCOPE_CLOCK", clk, "no invariant TSC here; using monotonic");
    } else if (strcmp(clk, "auto"))
      add_error(c, "NCCLSCOPE_CLOCK", clk, "expected auto, tsc, monotonic or sim");
  }

  const char *mode = getenv("NCCLSCOPE_MODE");
  if (mode && *mode && strcmp(mode, "trace")) {
    if (!strcmp(mode, "flight"))
      c->flight = 1;
    else
      add_error(c, "NCCLSCOPE_MODE", mode, "expected trace or flight; recording a full trace");
  }
  const char *cap = getenv("NCCLSCOPE_CAPTURE");
  c->capture = env_bool(c, "NCCLSCOPE_CAPTURE", 0);
  if (c->capture && c->flight) {
    add_error(c, "NCCLSCOPE_CAPTURE", cap, "capture needs a full trace; flight mode is off");
    c->flight = 0;
  }
  c->mode = c->capture ? NCS_MODE_CAPTURE : c->flight ? NCS_MODE_FLIGHT : NCS_MODE_TRACE;
  c->flight_bytes = env_size(c, "NCCLSCOPE_FLIGHT_SIZE", 16ull << 20, 1ull << 20, 4ull << 30);
  c->flight_ops = (uint32_t)env_size(c, "NCCLSCOPE_FLIGHT_OPS", 64, 0, 65536);
  c->watchdog_s = (uint32_t)env_size(c, "NCCLSCOPE_WATCHDOG_S", 60, 0, 86400);
  if (c->flight) { /* smaller defaults: the flight recorder is meant to stay on (docs/flight.md) */
    const char *b = getenv("NCCLSCOPE_BUFFER_SIZE"), *f = getenv("NCCLSCOPE_FLUSH_MS");
    if (!b || !*b) c->pool_bytes = 8ull << 20;
    if (!f || !*f) c->flush_ms = 20;
  }
  /* Every operation is recorded by default, GPU times included (docs/config.md, "Sampling").
   * NCCLSCOPE_SAMPLE=N asks for KernelCh GPU times on one group in N only; the other groups still
   * record every other event unless NCCLSCOPE_UNSAMPLED_EVENTS lists fewer. Capture records every
   * call. NCCLSCOPE_KERNEL_SAMPLE is NCCLSCOPE_SAMPLE's earlier name, read when it is not set. */
  const char *smp = getenv("NCCLSCOPE_SAMPLE");
  c->kernel_sample = (uint32_t)env_size(c, smp && *smp ? "NCCLSCOPE_SAMPLE" : "NCCLSCOPE_KERNEL_SAMPLE",
                                        1, 1, 1u << 20);
  if (c->capture) c->kernel_sample = 1;
  c->unsampled_events = env_events(c, "NCCLSCOPE_UNSAMPLED_EVENTS",
                                   NCS_EV_ALL & ~(uint32_t)(NCS_EV_KERNEL_CH | NCS_EV_KERNEL_PHASE),
                                   "unknown event name; recording every event but kernel and kernelphase", 0);
  c->dump_signal = SIGUSR1;
  const char *sig = getenv("NCCLSCOPE_DUMP_SIGNAL");
  if (sig && *sig) {
    const char *nm = !strncasecmp(sig, "SIG", 3) ? sig + 3 : sig;
    char *e;
    long v = strtol(nm, &e, 10);
    if (!strcasecmp(nm, "none") || !strcmp(nm, "0"))
      c->dump_signal = 0;
    else if (!strcasecmp(nm, "USR1"))
      c->dump_signal = SIGUSR1;
    else if (!strcasecmp(nm, "USR2"))
      c->dump_signal = SIGUSR2;
    else if (*nm && !*e && v >= SIGRTMIN && v <= SIGRTMAX)
      c->dump_signal = (int)v;
    else
      add_error(c, "NCCLSCOPE_DUMP_SIGNAL", sig, "expected USR1, USR2, a real-time signal number or none; using USR1");
  }
  range_config(c);
  cupti_config(c);
  metrics_config(c);
  const char *chain = getenv("NCCLSCOPE_CHAIN");
  if (chain && *chain) {
    if (strlen(chain) >= sizeof c->chain)
      add_error(c, "NCCLSCOPE_CHAIN", chain, "path too long; no plugin is chained");
    else
      snprintf(c->chain, sizeof c->chain, "%s", chain);
  }
  uint64_t cs = env_size(c, "NCCLSCOPE_CHAIN_SLOTS", 1u << 18, 1024, 1u << 26);
  uint32_t cp = 1024;
  while (cp < cs) cp <<= 1;
  c->chain_slots = cp;
  c->disabled = env_bool(c, "NCCLSCOPE_DISABLE", 0);
}
