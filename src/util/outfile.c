/* outfile.c - every output of ncclscope fails closed (outfile.h has the rules). */
#include "util/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------------- signal cleanup */

/* Named temporary files and directories that exist right now. A signal that would kill the
 * process removes them first; the handler only calls unlink, openat, getdents64, unlinkat, close,
 * signal and raise (async-signal-safe system calls). A slot is 0 free, 2 claimed by a thread that
 * is filling it in, 1 a file to remove, 3 a directory to remove with what it holds. */
#define NSLOTS 8
#define TREE_DEPTH 4 /* how deep a temporary directory is emptied (an OTF2 archive: 2) */
static char g_tmp[NSLOTS][PATH_MAX];
static _Atomic int g_used[NSLOTS];
static const int g_fatal[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT};

/* remove NAME (in the directory dirfd) and, when it is a directory, what it holds; only system
 * calls, no allocation: usable in the signal handler. Entries are listed again until a pass
 * removes nothing, so removing while listing loses none. 0 when NAME is gone. */
static int rm_tree_at(int dirfd, const char *name, int depth) {
  if (unlinkat(dirfd, name, 0) == 0) return 0;
  if (depth <= 0) return -1;
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  for (int removed = 1; removed;) {
    removed = 0;
    if (lseek(fd, 0, SEEK_SET) != 0) break;
    _Alignas(8) char buf[2048];
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
      for (long off = 0; off < n;) {
        /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
        unsigned short reclen;
        memcpy(&reclen, buf + off + 16, sizeof reclen);
        const char *nm = buf + off + 19;
        off += reclen;
        if (!reclen) break;
        if (!strcmp(nm, ".") || !strcmp(nm, "..")) continue;
        if (rm_tree_at(fd, nm, depth - 1) == 0) removed = 1;
      }
    }
  }
  close(fd);
  return unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void on_fatal(int sig) {
  int e = errno;
  for (int i = 0; i < NSLOTS; i++) {
    int u = atomic_load(&g_used[i]);
    if (u == 1) unlink(g_tmp[i]);
    if (u == 3) (void)rm_tree_at(AT_FDCWD, g_tmp[i], TREE_DEPTH);
  }
  errno = e;
  signal(sig, SIG_DFL);
  raise(sig); /* delivered when the handler returns: the process ends as it would have */
}

static struct sigaction g_xfsz_start; /* SIGXFSZ as the process was started with it */
static int g_xfsz_saved;

void ncs_out_init_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = SIG_IGN;
  if (sigaction(SIGXFSZ, NULL, &g_xfsz_start) != 0) return;
  g_xfsz_saved = 1;
  if (g_xfsz_start.sa_handler == SIG_DFL) sigaction(SIGXFSZ, &sa, NULL);
}

void ncs_out_child_signals(void) {
  if (g_xfsz_saved) sigaction(SIGXFSZ, &g_xfsz_start, NULL);
}

/* Once: the handler for the fatal signals that still have their default action (an ignored
 * one, under nohup for example, stays ignored), and a file size limit becomes a write error
 * (EFBIG) instead of SIGXFSZ killing the process. */
static void install_handlers(void) {
  static _Atomic int done;
  if (atomic_exchange(&done, 1)) return;
  struct sigaction sa, cur;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof g_fatal / sizeof g_fatal[0]; i++) {
    sa.sa_handler = on_fatal;
    if (sigaction(g_fatal[i], NULL, &cur) == 0 && cur.sa_handler == SIG_DFL)
      sigaction(g_fatal[i], &sa, NULL);
  }
  sa.sa_handler = SIG_IGN;
  if (sigaction(SIGXFSZ, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL)
    sigaction(SIGXFSZ, &sa, NULL);
}

static void block_fatal(sigset_t *old) {
  sigset_t s;
  sigemptyset(&s);
  for (size_t i = 0; i < sizeof g_fatal / sizeof g_fatal[0]; i++) sigaddset(&s, g_fatal[i]);
  pthread_sigmask(SIG_BLOCK, &s, old);
}

/* mkostemp(templ) with the name registered for cleanup before a signal can see the file.
 * Returns the fd (slot in *slot) or -1 with errno set. */
static int make_named(char *templ, int *slot) {
  install_handlers();
  sigset_t old;
  block_fatal(&old);
  int fd = -1, s = -1;
  for (int i = 0; i < NSLOTS && s < 0; i++) { /* threads may claim slots at once */
    int z = 0;
    if (atomic_compare_exchange_strong(&g_used[i], &z, 2)) s = i;
  }
  if (s < 0) {
    errno = EMFILE;
  } else if ((fd = mkostemp(templ, O_CLOEXEC)) >= 0) {
    snprintf(g_tmp[s], sizeof g_tmp[s], "%s", templ);
    atomic_store(&g_used[s], 1);
  } else {
    int e = errno;
    atomic_store(&g_used[s], 0);
    errno = e;
  }
  int e = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = e;
  *slot = fd >= 0 ? s : -1;
  return fd;
}

static void forget_named(int *slot) {
  if (*slot >= 0) atomic_store(&g_used[*slot], 0);
  *slot = -1;
}

char *ncs_out_mkdtemp(char *templ, int *slot) {
  install_handlers();
  sigset_t old;
  block_fatal(&old);
  char *r = NULL;
  int s = -1;
  for (int i = 0; i < NSLOTS && s < 0; i++) {
    int z = 0;
    if (atomic_compare_exchange_strong(&g_used[i], &z, 2)) s = i;
  }
  if (s < 0) {
    errno = EMFILE;
  } else if ((r = mkdtemp(templ)) != NULL) {
    snprintf(g_tmp[s], sizeof g_tmp[s], "%s", templ);
    atomic_store(&g_used[s], 3);
  } else {
    int e = errno;
    atomic_store(&g_used[s], 0);
    errno = e;
  }
  int e = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = e;
  *slot = r ? s : -1;
  return r;
}

int ncs_out_track_dir(const char *path) {
  install_handlers();
  sigset_t old;
  block_fatal(&old);
  int s = -1;
  for (int i = 0; i < NSLOTS && s < 0; i++) {
    int z = 0;
    if (atomic_compare_exchange_strong(&g_used[i], &z, 2)) s = i;
  }
  if (s >= 0) {
    snprintf(g_tmp[s], sizeof g_tmp[s], "%s", path);
    atomic_store(&g_used[s], 3);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return s;
}

void ncs_out_forget(int *slot) { forget_named(slot); }

/* ---------------------------------------------------------------- paths */

/* Linking an O_TMPFILE file goes through /proc/self/fd (linkat with AT_EMPTY_PATH needs a
 * capability). Without /proc, named temporary files are used. */
static int proc_ok(void) {
  static _Atomic int ok = -1; /* scratch files are made by several threads */
  if (atomic_load(&ok) < 0) atomic_store(&ok, access("/proc/self/fd", X_OK) == 0);
  return atomic_load(&ok);
}

static int anon_tmp(const char *dir) {
  if (!proc_ok()) return errno = EOPNOTSUPP, -1;
  return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
}

/* O_TMPFILE is not there (old kernel, a file system without it): use a named file instead */
static int no_tmpfile(int e) { return e == EOPNOTSUPP || e == EISDIR || e == EINVAL || e == ENOENT; }

int ncs_out_scratch(const char *dir) {
  int fd = anon_tmp(dir);
  if (fd >= 0 || !no_tmpfile(errno)) return fd;
  char templ[PATH_MAX];
  if ((size_t)snprintf(templ, sizeof templ, "%s/.ncclscope-scratch-XXXXXX", dir) >= sizeof templ)
    return errno = ENAMETOOLONG, -1;
  int slot;
  fd = make_named(templ, &slot);
  if (fd >= 0) unlink(templ); /* no name from here on */
  forget_named(&slot);
  return fd;
}

/* "DIR/NAME" -> "DIR" and "NAME"; "NAME" -> "." and "NAME" */
static int split(const char *path, char *dir, size_t dlen, const char **base) {
  const char *slash = strrchr(path, '/');
  *base = slash ? slash + 1 : path;
  if (!**base) return -1;
  int n = slash ? (slash == path ? 1 : (int)(slash - path)) : 0;
  if (snprintf(dir, dlen, "%.*s", n ? n : 1, n ? path : ".") >= (int)dlen) return -1;
  return 0;
}

static const char *base_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* 1 when p is dir or lies below it (both resolved) */
static int inside(const char *dir, const char *p) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return 1;
  return strncmp(p, dir, n) == 0 && (p[n] == '/' || p[n] == 0);
}

/* 1 when the file (dev, ino) is one of the regular files of directory `dir` or of its dumps/
 * (what a verb reads there): an output named through a hard link to one of them */
static int dir_holds(const char *dir, const struct stat *rst, int depth) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  for (struct dirent *e; !found && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[PATH_MAX];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || lstat(p, &st) != 0) continue;
    if (S_ISREG(st.st_mode)) found = st.st_dev == rst->st_dev && st.st_ino == rst->st_ino;
    else if (S_ISDIR(st.st_mode) && depth > 0 && !strcmp(e->d_name, "dumps")) found = dir_holds(p, rst, depth - 1);
  }
  closedir(d);
  return found;
}

/* The output may not be an input (by any name: a link), nor lie inside an input directory. */
static int check_inputs(const char *path, const char *real, const struct stat *rst,
                        const ncs_out_opts_t *opt, char *err, size_t errlen) {
  for (size_t i = 0; i < opt->ninputs; i++) {
    struct stat st;
    char *in = realpath(opt->inputs[i], NULL);
    if (!in || stat(in, &st) != 0) { /* the verb itself says what is wrong with it */
      free(in);
      continue;
    }
    int under = S_ISDIR(st.st_mode) && inside(in, real);
    int linked = S_ISDIR(st.st_mode) && !under && rst && S_ISREG(rst->st_mode) && dir_holds(in, rst, 1);
    int same = S_ISDIR(st.st_mode) ? under || linked
                                   : !strcmp(in, real) || (rst && st.st_dev == rst->st_dev &&
                                                           st.st_ino == rst->st_ino);
    if (same)
      snprintf(err, errlen, linked ? "%s is a file of the input directory %s (a hard link to it): refused "
                                     "(an output never replaces an input)"
                            : S_ISDIR(st.st_mode)
                                ? "%s is inside the input directory %s: refused (an output never "
                                  "goes where the inputs are read)"
                                : "%s is an input (%s): refused (an output never replaces an input)",
               path, opt->inputs[i]);
    free(in);
    if (same) return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- open */

static void reset(ncs_out_t *o, const char *path) {
  memset(o, 0, sizeof *o);
  o->path = path;
  o->fd = o->stream_fd = -1;
  o->slot = -1;
}

static const char *kind_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

static void tmp_dir(char *out, size_t len) {
  const char *t = getenv("TMPDIR");
  snprintf(out, len, "%s", t && *t ? t : "/tmp");
}

/* A stream target: written directly; a writer that needs a file by name gets a temporary one
 * in $TMPDIR, copied into the stream at commit. */
static int open_stream(ncs_out_t *o, int fd, const ncs_out_opts_t *opt, char *err,
                       size_t errlen) {
  o->stream = 1;
  tmp_dir(o->dir, sizeof o->dir);
  if (!opt->by_name) {
    o->fd = fd;
    return 0;
  }
  o->stream_fd = fd;
  if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s/.ncclscope-out.tmp-XXXXXX", o->dir) >=
      sizeof o->tmp) {
    snprintf(err, errlen, "cannot write %s: $TMPDIR is too long", o->path);
    return -1;
  }
  o->fd = make_named(o->tmp, &o->slot);
  if (o->fd < 0) {
    snprintf(err, errlen, "cannot write %s: cannot create a temporary file in %s: %s", o->path,
             o->dir, strerror(errno));
    o->tmp[0] = 0;
    return -1;
  }
  return 0;
}

/* A regular file, new or replaced: a temporary file in its directory. */
static int open_regular(ncs_out_t *o, const struct stat *old, const ncs_out_opts_t *opt,
                        char *err, size_t errlen) {
  const char *base;
  if (split(o->target, o->dir, sizeof o->dir, &base) != 0) {
    snprintf(err, errlen, "cannot write %s: not a file name", o->path);
    return -1;
  }
  if (!opt->by_name) o->fd = anon_tmp(o->dir);
  if (opt->by_name || (o->fd < 0 && no_tmpfile(errno))) {
    if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp-XXXXXX", o->dir, base) >=
        sizeof o->tmp) {
      snprintf(err, errlen, "cannot write %s: path too long", o->path);
      o->tmp[0] = 0;
      return -1;
    }
    o->fd = make_named(o->tmp, &o->slot);
    if (o->fd < 0) o->tmp[0] = 0;
  }
  if (o->fd < 0) {
    snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
    return -1;
  }
  /* as the file it replaces, or like any new file: O_TMPFILE applied the umask to 0666 already,
   * mkostemp made it 0600. (Reading the umask sets it for a moment: outputs are opened before
   * any thread of the verb starts.) The permissions are a courtesy: a failure is not an error. */
  mode_t um = 0;
  if (!old && o->tmp[0]) umask(um = umask(0));
  if ((old || o->tmp[0]) && fchmod(o->fd, old ? old->st_mode & 0777 : 0666 & ~um) != 0) {
  }
  return 0;
}

int ncs_out_open(ncs_out_t *o, const char *path, const ncs_out_opts_t *opt, char *err,
                 size_t errlen) {
  static const ncs_out_opts_t none;
  if (!opt) opt = &none;
  reset(o, path);
  if (!path || !*path) {
    snprintf(err, errlen, "no output file name");
    return -1;
  }
  install_handlers();
  if (!strcmp(path, "-")) return open_stream(o, STDOUT_FILENO, opt, err, errlen);
  struct stat st, lst;
  int exists = stat(path, &st) == 0;
  if (!exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
    snprintf(err, errlen, "%s is a symbolic link to nothing: refused (name the file itself)", path);
    return -1;
  }
  if (!exists && errno != ENOENT) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return -1;
  }
  if (exists && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
    snprintf(err, errlen, "%s is %s: refused", path, kind_name(st.st_mode));
    return -1;
  }
  /* the file that takes the output, with every symbolic link resolved */
  char *real = NULL;
  if (exists) {
    real = realpath(path, NULL);
  } else {
    char dir[PATH_MAX];
    const char *base;
    if (split(path, dir, sizeof dir, &base) != 0) {
      snprintf(err, errlen, "cannot write %s: not a file name", path);
      return -1;
    }
    char *rd = realpath(dir, NULL);
    if (rd && (!strcmp(base, ".") || !strcmp(base, ".."))) errno = EISDIR, free(rd), rd = NULL;
    if (rd && asprintf(&real, "%s/%s", strcmp(rd, "/") ? rd : "", base) < 0) real = NULL;
    free(rd);
  }
  if (!real || strlen(real) >= sizeof o->target) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(real ? ENAMETOOLONG : errno));
    free(real);
    return -1;
  }
  snprintf(o->target, sizeof o->target, "%s", real);
  free(real);
  if (check_inputs(path, o->target, exists ? &st : NULL, opt, err, errlen) != 0) return -1;
  if (exists && !S_ISREG(st.st_mode)) { /* a FIFO or a character device */
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
      return -1;
    }
    if (open_stream(o, fd, opt, err, errlen) != 0) {
      close(fd);
      o->stream_fd = -1;
      return -1;
    }
    return 0;
  }
  if (exists && !opt->force) {
    snprintf(err, errlen, "%s exists (use --force to replace it)", path);
    return -1;
  }
  o->replace = exists;
  return open_regular(o, exists ? &st : NULL, opt, err, errlen);
}

FILE *ncs_out_file(ncs_out_t *o) {
  if (o->fp) return o->fp;
  if (o->fd == STDOUT_FILENO && o->stream && o->stream_fd < 0) return o->fp = stdout;
  int d = dup(o->fd); /* the stream closes its own fd; o->fd stays open for the link */
  if (d < 0) return NULL;
  o->fp = fdopen(d, "w");
  if (!o->fp) close(d);
  return o->fp;
}

/* ---------------------------------------------------------------- commit */

static int copy_all(int from, int to) {
  static char buf[1 << 16];
  off_t off = 0;
  for (;;) {
    ssize_t n = pread(from, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return (int)n;
    off += n;
    for (ssize_t done = 0; done < n;) {
      ssize_t m = write(to, buf + done, (size_t)(n - done));
      if (m < 0 && errno == EINTR) continue;
      if (m < 0) return -1;
      done += m;
    }
  }
}

/* An anonymous file becomes a name: the target itself (refused if it appeared meanwhile), or
 * with force a temporary name that is then renamed over the target. */
static int place_anon(ncs_out_t *o) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
  if (!o->replace) return linkat(AT_FDCWD, proc, AT_FDCWD, o->target, AT_SYMLINK_FOLLOW);
  const char *base = base_of(o->target);
  for (unsigned k = 0;; k++) {
    char templ[PATH_MAX];
    if ((size_t)snprintf(templ, sizeof templ, "%s/.%s.tmp-XXXXXX", o->dir, base) >= sizeof templ)
      return errno = ENAMETOOLONG, -1;
    /* reserve a fresh name, then link the file under it: the name is registered throughout */
    int fd = make_named(templ, &o->slot);
    if (fd < 0) return -1;
    close(fd);
    unlink(templ);
    snprintf(o->tmp, sizeof o->tmp, "%s", templ);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0) break;
    int e = errno;
    forget_named(&o->slot);
    o->tmp[0] = 0;
    if (e != EEXIST || k > 8) return errno = e, -1;
  }
  return rename(o->tmp, o->target);
}

static int place_named(ncs_out_t *o) {
  if (o->replace) return rename(o->tmp, o->target);
  if (renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->target, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (link(o->tmp, o->target) != 0) return -1; /* a file system without RENAME_NOREPLACE */
  unlink(o->tmp);
  return 0;
}

/* The target must still be what it was at open: absent, or (with force) a regular file.
 * 0, EEXIST (it appeared), or NOT_REGULAR. */
#define NOT_REGULAR (-1)
static int target_changed(const ncs_out_t *o) {
  struct stat st;
  if (lstat(o->target, &st) != 0) return 0;
  if (!o->replace) return EEXIST;
  return S_ISREG(st.st_mode) ? 0 : NOT_REGULAR;
}

static int flush_fp(ncs_out_t *o) {
  if (!o->fp) return 0;
  errno = 0;
  int e = fflush(o->fp) != 0 || ferror(o->fp) ? (errno ? errno : EIO) : 0;
  if (o->fp != stdout && fclose(o->fp) != 0 && !e) e = errno;
  o->fp = NULL;
  return e;
}

/* a by_name writer's temporary file goes into the stream */
static int finish_stream(ncs_out_t *o) {
  if (o->stream_fd < 0) return 0;
  int e = copy_all(o->fd, o->stream_fd) != 0 ? errno : 0;
  if (o->stream_fd != STDOUT_FILENO && close(o->stream_fd) != 0 && !e) e = errno;
  o->stream_fd = -1;
  return e;
}

int ncs_out_commit(ncs_out_t *o, char *err, size_t errlen) {
  int e = flush_fp(o);
  if (!e && o->stream) e = finish_stream(o);
  if (!e && !o->stream) {
    /* a write error that the file system reports late (NFS, quotas, thin disks) shows here,
     * while the output has no name yet */
    if (fdatasync(o->fd) != 0 && errno != EINVAL && errno != EROFS) e = errno;
    if (!e) e = target_changed(o);
    if (!e && (o->tmp[0] ? place_named(o) : place_anon(o)) != 0) e = errno;
    if (!e) forget_named(&o->slot), o->tmp[0] = 0; /* it is the output now */
  }
  if (o->fd > STDOUT_FILENO && close(o->fd) != 0 && !e) e = errno;
  o->fd = -1;
  if (!e) {
    ncs_out_abort(o); /* a stream's temporary file, if any */
    return 0;
  }
  if (e == EEXIST && !o->replace)
    snprintf(err, errlen, "%s exists (it was created while ncclscope wrote; use --force to "
             "replace it)", o->path);
  else if (e == NOT_REGULAR)
    snprintf(err, errlen, "%s is no longer a regular file: refused", o->path);
  else
    snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(e));
  ncs_out_abort(o);
  return -1;
}

void ncs_out_abort(ncs_out_t *o) {
  if (o->fp && o->fp != stdout) fclose(o->fp);
  o->fp = NULL;
  if (o->stream_fd > STDOUT_FILENO) close(o->stream_fd);
  o->stream_fd = -1;
  if (o->fd > STDOUT_FILENO) close(o->fd);
  o->fd = -1;
  if (o->tmp[0]) unlink(o->tmp);
  o->tmp[0] = 0;
  forget_named(&o->slot);
}

int ncs_out_close_stdout(char *err, size_t errlen) {
  errno = 0;
  int e = fflush(stdout) != 0 || ferror(stdout) ? (errno ? errno : EIO) : 0;
  /* EBADF: standard output was closed (>&-) and nothing was written to it: nothing was lost */
  if (fclose(stdout) != 0 && !e && errno != EBADF) e = errno;
  if (!e) return 0;
  snprintf(err, errlen, "cannot write standard output: %s", strerror(e));
  return -1;
}
