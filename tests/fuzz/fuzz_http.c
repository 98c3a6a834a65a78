/* fuzz_http.c - the metrics endpoint's request path (src/metrics/http.c behind libmicrohttpd)
 * against arbitrary bytes from a client.
 *
 * The server runs as in the plugin, on a loopback port; each input is sent on a fresh
 * connection, half-closed, and whatever comes back is read to the end. Besides the sanitizers'
 * findings, it stops on any answer the endpoint must never give: a 200 whose body is not the
 * published text, or anything that is not an HTTP/1.x response. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "metrics/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char TEXT[] = "# TYPE fuzz_metric gauge\nfuzz_metric 1\n";
static uint32_t port;

static void setup(void) {
  char err[256];
  if (ncs_mx_http_load(err, sizeof err) != 0) {
    fprintf(stderr, "fuzz_http: %s\n", err);
    abort();
  }
  int fd = ncs_mx_http_listen("127.0.0.1", 0);
  if (fd < 0) abort();
  port = ncs_mx_http_port(fd);
  /* A request cut off by the client's half-close keeps its connection (CLOSE-WAIT) until the
   * endpoint's 10 s idle limit; at a few dozen inputs a second the plugin's default of 16
   * connections would be taken within a second and connect() would wait for a slot. The bound
   * itself is tested by metrics_hostile; here it only has to stay out of the way. */
  if (ncs_mx_http_start(fd, 512, err, sizeof err) != 0) abort();
  ncs_mx_http_publish(TEXT, sizeof TEXT - 1);
}

/* every response in buf[0, n): the status line must be HTTP/1.x; a 200 carries TEXT */
static void check(const char *buf, size_t n) {
  const char *p = buf, *end = buf + n;
  while (p < end) {
    if (end - p < 12 || memcmp(p, "HTTP/1.", 7)) {
      fprintf(stderr, "fuzz_http: not an HTTP response: %.40s\n", p);
      abort();
    }
    int ok = !memcmp(p + 9, "200", 3);
    const char *body = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
    if (!body) return; /* cut off by the connection's end */
    body += 4;
    const char *next = memmem(body, (size_t)(end - body), "HTTP/1.", 7);
    if (ok && ((size_t)(end - body) < sizeof TEXT - 1 || memcmp(body, TEXT, sizeof TEXT - 1))) {
      /* HEAD has no body: the next response (or the end) follows at once */
      if (body != end && body != next) {
        fprintf(stderr, "fuzz_http: a 200 without the published text\n");
        abort();
      }
    }
    p = next ? next : end;
  }
}

/* libFuzzer's -timeout timer (SIGALRM) can interrupt connect(); the connection then completes
 * on its own, and its outcome is read from SO_ERROR once the socket is writable */
static int connect_loopback(int s, const struct sockaddr_in *a) {
  if (connect(s, (const struct sockaddr *)a, sizeof *a) == 0) return 0;
  if (errno != EINTR) return -1;
  struct pollfd pf = {s, POLLOUT, 0};
  int r;
  while ((r = poll(&pf, 1, 3000)) < 0 && errno == EINTR) continue;
  if (r <= 0) return -1;
  int e = 0;
  socklen_t l = sizeof e;
  if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &l) != 0) return -1;
  errno = e;
  return e ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) setup(), ready = 1;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || connect_loopback(s, &a) != 0) {
    perror("fuzz_http: connect");
    abort();
  }
  static char buf[1 << 20];
  size_t n = 0, off = 0;
  /* send while reading, so a large answer cannot block the sender */
  for (int shut = 0;;) {
    struct pollfd pf = {s, POLLIN | (off < size ? POLLOUT : 0), 0};
    /* once everything is sent, 50 ms of silence means the server waits for more: done */
    if (poll(&pf, 1, shut ? 50 : 3000) <= 0) break;
    if (pf.revents & POLLOUT) {
      ssize_t k = send(s, data + off, size - off, MSG_NOSIGNAL);
      if (k > 0) off += (size_t)k;
      else off = size; /* the server closed: it has answered what it will */
    }
    if (off >= size && !shut) shutdown(s, SHUT_WR), shut = 1;
    if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t k = recv(s, buf + n, sizeof buf - 1 - n, 0);
      if (k <= 0) break;
      n += (size_t)k;
      if (n >= sizeof buf - 1) break;
    }
  }
  close(s);
  check(buf, n);
  return 0;
}
