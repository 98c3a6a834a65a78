/* otlp.c - OTLP/HTTP JSON pushes through libcurl, loaded at run time (metrics thread only).
 *
 * One easy handle is kept across pushes so that the connection to the collector is reused. The
 * library stays loaded once loaded: unloading libcurl (and the TLS library under it) from inside
 * a process that may use them itself is not safe, and a reloaded plugin finds it again.
 */
#ifdef NCS_HAVE_CURL
#include <curl/curl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "metrics/metrics.h"

#define CURL_LIB "libcurl.so.4"

typedef CURLcode (*curl_global_init_fn)(long);
typedef CURL *(*curl_easy_init_fn)(void);
typedef CURLcode (*curl_easy_setopt_fn)(CURL *, CURLoption, ...);
typedef CURLcode (*curl_easy_perform_fn)(CURL *);
typedef CURLcode (*curl_easy_getinfo_fn)(CURL *, CURLINFO, ...);
typedef void (*curl_easy_cleanup_fn)(CURL *);
typedef const char *(*curl_easy_strerror_fn)(CURLcode);
typedef struct curl_slist *(*curl_slist_append_fn)(struct curl_slist *, const char *);
typedef void (*curl_slist_free_all_fn)(struct curl_slist *);

static struct {
  void *lib;
  curl_global_init_fn global_init;
  curl_easy_init_fn init;
  curl_easy_setopt_fn setopt;
  curl_easy_perform_fn perform;
  curl_easy_getinfo_fn getinfo;
  curl_easy_cleanup_fn cleanup;
  curl_easy_strerror_fn strerror_;
  curl_slist_append_fn slist_append;
  curl_slist_free_all_fn slist_free;
} C;

static struct {
  CURL *h;
  struct curl_slist *hdrs;
  char url[512];
} O;

static int load(char *err, size_t errlen) {
  if (C.lib) return 0;
  void *l = dlopen(CURL_LIB, RTLD_NOW | RTLD_LOCAL);
  if (!l) {
    snprintf(err, errlen, "%s", dlerror());
    return -1;
  }
#define SYM(f, n)                                                                                  \
  if (!(*(void **)&C.f = dlsym(l, n))) {                                                          \
    snprintf(err, errlen, "%s has no %s", CURL_LIB, n);                                          \
    dlclose(l);                                                                                    \
    return -1;                                                                                     \
  }
  SYM(global_init, "curl_global_init");
  SYM(init, "curl_easy_init");
  SYM(setopt, "curl_easy_setopt");
  SYM(perform, "curl_easy_perform");
  SYM(getinfo, "curl_easy_getinfo");
  SYM(cleanup, "curl_easy_cleanup");
  SYM(strerror_, "curl_easy_strerror");
  SYM(slist_append, "curl_slist_append");
  SYM(slist_free, "curl_slist_free_all");
#undef SYM
  if (C.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    snprintf(err, errlen, "curl_global_init failed");
    dlclose(l);
    return -1;
  }
  C.lib = l;
  return 0;
}

/* OTEL_EXPORTER_OTLP_HEADERS: key=value,... with %XX escapes; a header that would carry a line
 * break is left out (it could smuggle another header or a request) */
static int add_headers(const char *list, char *err, size_t errlen) {
  O.hdrs = C.slist_append(NULL, "Content-Type: application/json");
  if (!O.hdrs) return -1;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    const char *eq = memchr(p, '=', len);
    if (eq && eq > p) {
      char h[1100];
      size_t o = 0;
      int bad = 0;
      for (const char *q = p; q < p + len && o + 3 < sizeof h; q++) {
        unsigned x;
        char c = *q;
        if (q == eq) {
          h[o++] = ':', h[o++] = ' ';
          continue;
        }
        if (c == '%' && q + 2 < p + len && sscanf(q + 1, "%2x", &x) == 1) c = (char)x, q += 2;
        if (c == '\r' || c == '\n' || c == 0) bad = 1;
        if (c != ' ' || q > eq) h[o++] = c; /* keys lose their spaces */
      }
      h[o] = 0;
      struct curl_slist *n = bad ? O.hdrs : C.slist_append(O.hdrs, h);
      if (!n) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      O.hdrs = n;
    }
    p += len + (p[len] == ',');
  }
  return 0;
}

/* libcurl asks about once a second while a transfer waits: a push the segment's end overtook
 * gives up, so that the last push (with the last values) starts at once */
static int progress(void *cancel, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  (void)dt, (void)dn, (void)ut, (void)un;
  return cancel && atomic_load((_Atomic int *)cancel);
}

static size_t discard(char *p, size_t sz, size_t n, void *u) {
  (void)p, (void)u;
  return sz * n; /* the collector's answer is not needed beyond its status */
}

int ncs_mx_otlp_init(const char *endpoint, const char *headers, char *err, size_t errlen) {
  if (strncmp(endpoint, "http://", 7) && strncmp(endpoint, "https://", 8)) {
    snprintf(err, errlen, "endpoint %s is not an http:// or https:// URL", endpoint);
    return -1;
  }
  if (load(err, errlen) != 0) return -1;
  snprintf(O.url, sizeof O.url, "%s", endpoint);
  O.h = C.init();
  if (!O.h || add_headers(headers, err, errlen) != 0) {
    if (!err[0]) snprintf(err, errlen, "curl_easy_init failed");
    ncs_mx_otlp_fini();
    return -1;
  }
  C.setopt(O.h, CURLOPT_URL, O.url);
  C.setopt(O.h, CURLOPT_HTTPHEADER, O.hdrs);
  C.setopt(O.h, CURLOPT_NOSIGNAL, 1L); /* never SIGALRM in the application's process */
  C.setopt(O.h, CURLOPT_FOLLOWLOCATION, 0L);
  C.setopt(O.h, CURLOPT_PROTOCOLS_STR, "http,https");
  C.setopt(O.h, CURLOPT_WRITEFUNCTION, discard);
  return 0;
}

int ncs_mx_otlp_push(const char *body, size_t len, uint32_t timeout_ms, _Atomic int *cancel,
                     char *err, size_t errlen) {
  if (!O.h) {
    snprintf(err, errlen, "no OTLP exporter");
    return -1;
  }
  C.setopt(O.h, CURLOPT_POSTFIELDS, body);
  C.setopt(O.h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  C.setopt(O.h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  C.setopt(O.h, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
  C.setopt(O.h, CURLOPT_NOPROGRESS, cancel ? 0L : 1L);
  C.setopt(O.h, CURLOPT_XFERINFOFUNCTION, progress);
  C.setopt(O.h, CURLOPT_XFERINFODATA, (void *)cancel);
  CURLcode rc = C.perform(O.h);
  if (rc == CURLE_ABORTED_BY_CALLBACK) return -2;
  if (rc != CURLE_OK) {
    snprintf(err, errlen, "%s", C.strerror_(rc));
    return -1;
  }
  long code = 0;
  C.getinfo(O.h, CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code > 299) {
    snprintf(err, errlen, "the collector answered HTTP %ld", code);
    return -1;
  }
  return 0;
}

void ncs_mx_otlp_fini(void) {
  if (O.h) C.cleanup(O.h);
  if (O.hdrs) C.slist_free(O.hdrs);
  memset(&O, 0, sizeof O);
}

/* A fork child shares the parent's connection: closing it there (TLS would say goodbye on the
 * parent's socket) is not the child's to do. Forget it. */
void ncs_mx_otlp_after_fork(void) { memset(&O, 0, sizeof O); }
#else
/* built without libcurl's headers (CMake said so): no OTLP pushes, the other outputs work */
#include <stdio.h>

#include "metrics/metrics.h"

int ncs_mx_otlp_init(const char *endpoint, const char *headers, char *err, size_t errlen) {
  (void)endpoint, (void)headers;
  snprintf(err, errlen, "this build of ncclscope has no OTLP pushes: libcurl's headers were "
                        "missing when it was built (libcurl4-openssl-dev)");
  return -1;
}
int ncs_mx_otlp_push(const char *body, size_t len, uint32_t timeout_ms, _Atomic int *cancel,
                     char *err, size_t errlen) {
  (void)body, (void)len, (void)timeout_ms, (void)cancel;
  snprintf(err, errlen, "no OTLP in this build");
  return -1;
}
void ncs_mx_otlp_fini(void) {}
void ncs_mx_otlp_after_fork(void) {}
#endif
