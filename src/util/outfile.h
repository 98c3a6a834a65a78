/* outfile.h - how every output of ncclscope is written: it fails closed (docs/cli.md, "Output
 * files").
 *
 * A regular file is written under a temporary name in its own directory and takes its final
 * name only once every byte was written, flushed and synced, so a killed or failed writer never
 * leaves a partial file under the final name. The temporary file is anonymous (O_TMPFILE) where
 * the file system allows it, so that even SIGKILL leaves nothing behind; else it is a hidden
 * ".NAME.tmp-XXXXXX" beside the output, removed on failure and on SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT and SIGABRT. A temporary directory (ncs_out_mkdtemp) is removed the same way.
 *
 * The rules, the same for every verb:
 *   - an existing regular file is replaced only with force (it keeps its permission bits);
 *   - a symbolic link is followed: the file it names is replaced and the link stays; a link that
 *     names nothing is refused;
 *   - "-" is standard output; a FIFO or a character device (/dev/null, a terminal) is written
 *     directly, in order, without a temporary file and without force;
 *   - a directory, a block device, a socket or anything else is refused;
 *   - an output that is one of the inputs, or lies inside an input directory, is refused.
 */
#ifndef NCS_UTIL_OUTFILE_H
#define NCS_UTIL_OUTFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct {
  int force;           /* replace an existing regular file */
  int by_name;         /* the writer opens the file by its name (SQLite): a named temporary
                          file, which a stream target gets copied into at commit */
  char *const *inputs; /* what the verb reads (files or directories): never written */
  size_t ninputs;
} ncs_out_opts_t;

typedef struct {
  char target[PATH_MAX]; /* the file that takes the output (a regular one), symlinks resolved */
  char dir[PATH_MAX];    /* where temporary files go: the target's directory, or $TMPDIR */
  char tmp[PATH_MAX];    /* the temporary file's name, "" when it is anonymous */
  const char *path;      /* as given, for messages */
  int fd;                /* what the writer writes to */
  int stream_fd;         /* by_name with a stream target: the stream, copied into at commit */
  int stream;            /* written directly: standard output, a FIFO, a character device */
  int replace;           /* the target exists and is replaced (force) */
  int slot;              /* the signal-cleanup slot of tmp, -1 none */
  FILE *fp;              /* ncs_out_file's stream, or NULL */
} ncs_out_t;

/* Check PATH against the rules above and open the output. 0, or -1 with a message in err that
 * names PATH (nothing was created). */
int ncs_out_open(ncs_out_t *o, const char *path, const ncs_out_opts_t *opt, char *err,
                 size_t errlen);
/* A stdio stream over the output (standard output itself for "-"); NULL when out of memory. */
FILE *ncs_out_file(ncs_out_t *o);
/* Give the output its final name: flush, check, sync, link or rename into place. 0, or -1 with
 * a message in err; either way the output is closed, and on failure nothing is left. */
int ncs_out_commit(ncs_out_t *o, char *err, size_t errlen);
/* Drop the output: the temporary file is removed, the target stays as it was. Idempotent. */
void ncs_out_abort(ncs_out_t *o);

/* An output that is a directory (the OTF2 archive) is built in a temporary directory beside it:
 * mkdtemp(templ), registered so that the signals above remove it, and what it holds, before the
 * process dies. Returns templ, or NULL with errno set (EMFILE: no cleanup slot left); *slot is
 * the registration (-1 none). ncs_out_forget ends it (once the directory was renamed into place
 * or removed). ncs_out_track_dir registers an existing directory the same way (the old output
 * while it is replaced) and returns its slot, -1 when none is left. */
char *ncs_out_mkdtemp(char *templ, int *slot);
int ncs_out_track_dir(const char *path);
void ncs_out_forget(int *slot);

/* An anonymous scratch file in dir, read-write, removed when closed; -1 with errno set. */
int ncs_out_scratch(const char *dir);
/* Flush and close standard output at exit. 0, or -1 with a message in err. */
int ncs_out_close_stdout(char *err, size_t errlen);
/* At start: a file size limit (ulimit -f) makes every write a write error (EFBIG, exit status 5),
 * standard output's included, instead of SIGXFSZ ending the process (unless it was ignored or
 * handled already). ncs_out_child_signals gives a child about to exec the disposition the
 * process was started with (record's command). */
void ncs_out_init_signals(void);
void ncs_out_child_signals(void);

#endif
