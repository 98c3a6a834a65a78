/* faultinj.c - libncs-faultinj.so, a test-only LD_PRELOAD library that makes file writes fail
 * the way a full or failing disk does, with no root and no tmpfs. Built under tests/, never
 * installed.
 *
 *   LD_PRELOAD=build/tests/libncs-faultinj.so NCS_FAULT_DIR=out NCS_FAULT_AFTER_BYTES=100000 CMD
 *
 * Only calls on files under NCS_FAULT_DIR are touched (the path behind the descriptor, from
 * /proc/self/fd, after resolving NCS_FAULT_DIR with realpath); everything else passes through.
 * Without NCS_FAULT_DIR the library does nothing.
 *
 *   NCS_FAULT_DIR=DIR          the files that may fail: those under DIR (required)
 *   NCS_FAULT_CALLS=LIST       which calls fail, comma-separated, from: write (write and
 *                              writev), pwrite (pwrite, pwrite64, pwritev), fallocate (fallocate,
 *                              posix_fallocate and their 64 variants), ftruncate, fsync (fsync,
 *                              fdatasync), close, stdio (fflush and fclose of a stream on such a
 *                              file). Default: write,pwrite,fallocate
 *   NCS_FAULT_ERRNO=NAME       ENOSPC (default), EIO, EDQUOT, EFBIG or a number
 *   NCS_FAULT_AFTER_BYTES=N    the data calls (write, pwrite, fallocate) succeed until N bytes in
 *                              all went to files under DIR; the call that crosses N writes what
 *                              fits and returns that short count (a disk filling up mid-write),
 *                              and the calls after it fail. fallocate of more than is left fails
 *                              whole. Without it, a matching call fails from the first on
 *                              (after NCS_FAULT_SKIP).
 *   NCS_FAULT_SKIP=N           the first N matching calls succeed (for calls that carry no data:
 *                              the 3rd close, the 10th fsync)
 *   NCS_FAULT_COUNT=N          once failing, fail N calls, then work again for good (a transient
 *                              error). Default: no limit
 *   NCS_FAULT_UNTIL=PATH       once failing, fail until PATH exists, then work again for good
 *                              (a disk someone cleans up)
 *   NCS_FAULT_LOG=PATH         append one line per injected failure: "<call> <path> <errno name>"
 *                              (PATH should not be under DIR)
 *   NCS_FAULT_STALL=1          with NCS_FAULT_UNTIL: a call that would fail blocks instead (a
 *                              disk that hangs), whole, until PATH exists; it then goes through
 *                              and every call works for good. Logged as "<call> <path> stall".
 *                              Calls of the thread that made the first call on a file under DIR
 *                              never stall (the one that opened the file and wrote its start:
 *                              the plugin's init), so what hangs is another thread, the plugin's
 *                              writer, and its producers fill the buffers.
 *
 * posix_fallocate returns its error number, as glibc's does; the others return -1 with errno.
 * close and fclose release the descriptor even when they report a failure, as Linux does; a
 * failed fflush wrote nothing. stdio streams write through glibc-internal calls that no
 * interposer sees, so their bytes do not count towards NCS_FAULT_AFTER_BYTES: fail them with
 * `stdio` (and SKIP, COUNT, UNTIL), or write to /dev/full.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { C_WRITE = 1, C_PWRITE = 2, C_FALLOC = 4, C_FTRUNC = 8, C_FSYNC = 16, C_CLOSE = 32, C_STDIO = 64 };

static struct {
  pthread_mutex_t lock;
  int ready, on;
  unsigned calls;
  int err;
  int have_limit;
  uint64_t limit, used;
  uint64_t skip, count, failed;
  int failing, over; /* failing: the fault has begun; over: it cleared for good */
  int stall;         /* NCS_FAULT_STALL: block until S.until exists instead of failing */
  long first_tid;    /* the thread of the first call under DIR: it never stalls */
  char dir[PATH_MAX], until[PATH_MAX], log[PATH_MAX];
  size_t dirlen;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* the real functions */
#define REAL(ret, name, ...)                                                                       \
  static ret (*real_##name)(__VA_ARGS__);                                                          \
  static ret (*get_##name(void))(__VA_ARGS__) {                                                    \
    if (!real_##name) *(void **)&real_##name = dlsym(RTLD_NEXT, #name);                          \
    return real_##name;                                                                            \
  }
REAL(ssize_t, write, int, const void *, size_t)
REAL(ssize_t, writev, int, const struct iovec *, int)
REAL(ssize_t, pwrite, int, const void *, size_t, off_t)
REAL(ssize_t, pwrite64, int, const void *, size_t, off_t)
REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t)
REAL(int, fallocate, int, int, off_t, off_t)
REAL(int, fallocate64, int, int, off_t, off_t)
REAL(int, posix_fallocate, int, off_t, off_t)
REAL(int, posix_fallocate64, int, off_t, off_t)
REAL(int, ftruncate, int, off_t)
REAL(int, ftruncate64, int, off_t)
REAL(int, fsync, int)
REAL(int, fdatasync, int)
REAL(int, close, int)
REAL(int, fflush, FILE *)
REAL(int, fclose, FILE *)

/* a child forked while another thread held the lock would wait forever */
static void child_reset(void) { pthread_mutex_init(&S.lock, NULL); }
__attribute__((constructor)) static void faultinj_init(void) { pthread_atfork(NULL, NULL, child_reset); }

static uint64_t env_u64(const char *name, uint64_t def, int *given) {
  const char *s = getenv(name);
  if (given) *given = s && *s;
  return s && *s ? strtoull(s, NULL, 0) : def;
}

static int parse_errno(const char *s) {
  static const struct {
    const char *name;
    int v;
  } names[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EDQUOT", EDQUOT}, {"EFBIG", EFBIG}};
  if (!s || !*s) return ENOSPC;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(s, names[i].name)) return names[i].v;
  int v = atoi(s);
  return v > 0 ? v : ENOSPC;
}

static unsigned parse_calls(const char *s) {
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {{"write", C_WRITE},   {"pwrite", C_PWRITE}, {"fallocate", C_FALLOC},
               {"ftruncate", C_FTRUNC}, {"fsync", C_FSYNC},  {"close", C_CLOSE},
               {"stdio", C_STDIO}};
  if (!s || !*s) return C_WRITE | C_PWRITE | C_FALLOC;
  unsigned m = 0;
  while (*s) {
    size_t n = strcspn(s, ",");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (strlen(names[i].name) == n && !strncmp(s, names[i].name, n)) m |= names[i].bit;
    s += n + (s[n] == ',');
  }
  return m;
}

static void setup_locked(void) {
  if (S.ready) return;
  S.ready = 1;
  const char *dir = getenv("NCS_FAULT_DIR");
  if (!dir || !*dir) return;
  snprintf(S.dir, sizeof S.dir, "%s", dir);
  S.calls = parse_calls(getenv("NCS_FAULT_CALLS"));
  S.err = parse_errno(getenv("NCS_FAULT_ERRNO"));
  S.limit = env_u64("NCS_FAULT_AFTER_BYTES", 0, &S.have_limit);
  S.skip = env_u64("NCS_FAULT_SKIP", 0, NULL);
  S.count = env_u64("NCS_FAULT_COUNT", UINT64_MAX, NULL);
  const char *u = getenv("NCS_FAULT_UNTIL"), *l = getenv("NCS_FAULT_LOG");
  snprintf(S.until, sizeof S.until, "%s", u ? u : "");
  snprintf(S.log, sizeof S.log, "%s", l ? l : "");
  S.stall = env_u64("NCS_FAULT_STALL", 0, NULL) && S.until[0];
  S.on = 1;
}

/* Is fd a file under the directory? The directory is resolved on every call until it exists
 * (the program under test usually creates it). */
static int under_dir(int fd, char *path, size_t len) {
  char link[64], real[PATH_MAX];
  if (!S.dirlen) {
    if (!realpath(S.dir, real)) return 0;
    snprintf(S.dir, sizeof S.dir, "%s", real);
    S.dirlen = strlen(S.dir);
  }
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, len - 1);
  if (n <= 0) return 0;
  path[n] = 0;
  return strncmp(path, S.dir, S.dirlen) == 0 && path[S.dirlen] == '/';
}

static void log_fault(const char *call, const char *path, int e) {
  if (!S.log[0]) return;
  int fd = open(S.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[PATH_MAX + 64];
  int n = snprintf(line, sizeof line, "%s %s %s\n", call, path,
                   e == ENOSPC ? "ENOSPC" : e == EIO ? "EIO" : e == EDQUOT ? "EDQUOT"
                   : e == EFBIG ? "EFBIG" : e == 0 ? "stall" : "errno");
  if (n > 0) get_write()(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  get_close()(fd);
}

/* Decide a call on fd of class `cls` that carries `want` bytes (0: not a data call). Returns how
 * many bytes may go through: want (all), less (a short write at the limit), or -1: fail with
 * S.err. `whole`: the call cannot be cut short (fallocate). */
static int64_t decide(unsigned cls, int fd, const char *call, uint64_t want, int whole) {
  pthread_mutex_lock(&S.lock);
  setup_locked();
  char path[PATH_MAX];
  int64_t r = (int64_t)want;
  int stall = 0;
  if (!S.on || S.over || !(S.calls & cls) || !under_dir(fd, path, sizeof path)) goto out;
  if (S.stall) {
    long tid = (long)syscall(SYS_gettid);
    if (!S.first_tid) S.first_tid = tid;
    if (tid == S.first_tid) goto out;
  }
  if (S.failing && S.until[0] && access(S.until, F_OK) == 0) {
    S.over = 1;
    goto out;
  }
  int data = cls & (C_WRITE | C_PWRITE | C_FALLOC);
  if (!S.failing) {
    if (S.skip) {
      S.skip--;
      if (data && S.have_limit) S.used += want;
      goto out;
    }
    if (S.have_limit && data && S.used + want <= S.limit) {
      S.used += want;
      goto out;
    }
    if (S.have_limit && !data) goto out; /* a byte limit fails only the data calls */
    S.failing = 1;
    if (S.have_limit && data && !whole && S.used < S.limit && !S.stall) { /* fill the disk: a short write */
      r = (int64_t)(S.limit - S.used);
      S.used = S.limit;
      goto out;
    }
  }
  if (S.stall) { /* the whole call waits, outside the lock */
    stall = 1;
    log_fault(call, path, 0);
    goto out;
  }
  if (S.failed >= S.count) {
    S.over = 1;
    goto out;
  }
  S.failed++;
  r = -1;
  log_fault(call, path, S.err);
out:
  pthread_mutex_unlock(&S.lock);
  if (stall) {
    struct timespec ts = {0, 2000000L};
    while (access(S.until, F_OK) != 0) nanosleep(&ts, NULL);
    pthread_mutex_lock(&S.lock);
    S.over = 1;
    pthread_mutex_unlock(&S.lock);
  }
  return r;
}

static size_t iov_len(const struct iovec *iov, int n) {
  size_t t = 0;
  for (int i = 0; i < n; i++) t += iov[i].iov_len;
  return t;
}

/* a writev cut to k bytes */
static ssize_t writev_upto(int fd, const struct iovec *iov, int n, size_t k, off_t off, int pos) {
  struct iovec cut[64];
  int m = 0;
  for (int i = 0; i < n && k && m < 64; i++) {
    cut[m] = iov[i];
    if (cut[m].iov_len > k) cut[m].iov_len = k;
    k -= cut[m].iov_len;
    m++;
  }
  return pos ? get_pwritev()(fd, cut, m, off) : get_writev()(fd, cut, m);
}

ssize_t write(int fd, const void *buf, size_t n) {
  int64_t k = decide(C_WRITE, fd, "write", n, 0);
  if (k < 0) return errno = S.err, -1;
  return get_write()(fd, buf, (size_t)k);
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  size_t want = iov_len(iov, n);
  int64_t k = decide(C_WRITE, fd, "writev", want, 0);
  if (k < 0) return errno = S.err, -1;
  if ((size_t)k == want) return get_writev()(fd, iov, n);
  return writev_upto(fd, iov, n, (size_t)k, 0, 0);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  int64_t k = decide(C_PWRITE, fd, "pwrite", n, 0);
  if (k < 0) return errno = S.err, -1;
  return get_pwrite()(fd, buf, (size_t)k, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
  int64_t k = decide(C_PWRITE, fd, "pwrite", n, 0);
  if (k < 0) return errno = S.err, -1;
  return get_pwrite64()(fd, buf, (size_t)k, off);
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  size_t want = iov_len(iov, n);
  int64_t k = decide(C_PWRITE, fd, "pwritev", want, 0);
  if (k < 0) return errno = S.err, -1;
  if ((size_t)k == want) return get_pwritev()(fd, iov, n, off);
  return writev_upto(fd, iov, n, (size_t)k, off, 1);
}

int fallocate(int fd, int mode, off_t off, off_t len) {
  if (decide(C_FALLOC, fd, "fallocate", (uint64_t)len, 1) < 0) return errno = S.err, -1;
  return get_fallocate()(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off_t off, off_t len) {
  if (decide(C_FALLOC, fd, "fallocate", (uint64_t)len, 1) < 0) return errno = S.err, -1;
  return get_fallocate64()(fd, mode, off, len);
}

int posix_fallocate(int fd, off_t off, off_t len) {
  if (decide(C_FALLOC, fd, "posix_fallocate", (uint64_t)len, 1) < 0) return S.err;
  return get_posix_fallocate()(fd, off, len);
}

int posix_fallocate64(int fd, off_t off, off_t len) {
  if (decide(C_FALLOC, fd, "posix_fallocate", (uint64_t)len, 1) < 0) return S.err;
  return get_posix_fallocate64()(fd, off, len);
}

int ftruncate(int fd, off_t len) {
  if (decide(C_FTRUNC, fd, "ftruncate", 0, 1) < 0) return errno = S.err, -1;
  return get_ftruncate()(fd, len);
}

int ftruncate64(int fd, off_t len) {
  if (decide(C_FTRUNC, fd, "ftruncate", 0, 1) < 0) return errno = S.err, -1;
  return get_ftruncate64()(fd, len);
}

int fsync(int fd) {
  if (decide(C_FSYNC, fd, "fsync", 0, 1) < 0) return errno = S.err, -1;
  return get_fsync()(fd);
}

int fdatasync(int fd) {
  if (decide(C_FSYNC, fd, "fdatasync", 0, 1) < 0) return errno = S.err, -1;
  return get_fdatasync()(fd);
}

int close(int fd) {
  if (decide(C_CLOSE, fd, "close", 0, 1) < 0) {
    get_close()(fd); /* Linux releases the descriptor whatever close reports */
    return errno = S.err, -1;
  }
  return get_close()(fd);
}

/* fflush(NULL) flushes every stream: it is passed through */
int fflush(FILE *f) {
  if (f && decide(C_STDIO, fileno(f), "fflush", 0, 1) < 0) return errno = S.err, EOF;
  return get_fflush()(f);
}

int fclose(FILE *f) {
  if (decide(C_STDIO, fileno(f), "fclose", 0, 1) < 0) {
    get_fclose()(f);
    return errno = S.err, EOF;
  }
  return get_fclose()(f);
}
