/* fuzz_job.c - libFuzzer target for the whole read path: reader -> job model -> report (text,
 * JSON, HTML) -> every export (Perfetto, Chrome, SQLite) -> diagnose, and dump --stats, run as
 * the ncclscope verbs run them (src/cli).
 *
 * An input is a job of up to NCS_FUZZ_FILES trace files, separated by NCS_FUZZ_SEP; each becomes
 * a file of a fresh directory (.nsflight when it starts like a flight file, else .nstrace).
 * Every verb must end with a status of the exit-code table (docs/cli.md) and without a sanitizer
 * report; its standard output and error go to /dev/null (NCS_FUZZ_VERBOSE=1 keeps them, to see
 * what an artifact does). replay_main.c runs this over the corpus in every build.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "trace/flight.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCS_FUZZ_SEP "\n--ncs-fuzz-next-file--\n"
#define NCS_FUZZ_FILES 4

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) __builtin_trap();                                                                    \
  } while (0)

static char dir[512]; /* the job's directory; outputs go beside it */

static void out_path(char *p, size_t n, const char *name) { snprintf(p, n, "%s.%s", dir, name); }

/* the input's files, and the outputs beside the directory */
static void clean(void) {
  static const char *const old[] = {"f0.nstrace", "f1.nstrace", "f2.nstrace", "f3.nstrace",
                                    "f0.nsflight", "f1.nsflight", "f2.nsflight", "f3.nsflight"};
  static const char *const outs[] = {"html", "pftrace", "json", "sqlite"};
  char p[600];
  for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, old[i]);
    unlink(p);
  }
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    out_path(p, sizeof p, outs[i]);
    unlink(p);
  }
}
static void remove_all(void) {
  clean();
  rmdir(dir);
}

static void setup(void) {
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/ncs-fuzz-job-XXXXXX", t && *t ? t : "/tmp");
  CHECK(mkdtemp(dir) != NULL);
  atexit(remove_all);
}

/* the directory holds this input's files only */
static void write_files(const uint8_t *data, size_t size) {
  char p[600];
  clean();
  size_t seplen = strlen(NCS_FUZZ_SEP);
  for (int k = 0; k < NCS_FUZZ_FILES; k++) {
    const uint8_t *end = k + 1 < NCS_FUZZ_FILES ? memmem(data, size, NCS_FUZZ_SEP, seplen) : NULL;
    size_t len = end ? (size_t)(end - data) : size;
    snprintf(p, sizeof p, "%s/f%d.%s", dir, k, ncs_flight_is(data, len) ? "nsflight" : "nstrace");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    CHECK(len == 0 || write(fd, data, len) == (ssize_t)len);
    close(fd);
    if (!end) break;
    data = end + seplen, size -= len + seplen;
  }
}

/* a verb as main() runs it; its status must be one of the table's */
static int verb(int (*fn)(int, char **), char **argv) {
  int argc = 0;
  while (argv[argc]) argc++;
  fflush(stdout);
  int rc = fn(argc, argv);
  fflush(stdout);
  CHECK(rc >= NCS_EXIT_OK && rc <= NCS_EXIT_ERROR);
  return rc;
}

static void run_verbs(void) {
  char html[600], pf[600], js[600], db[600], ox[600], anchor[640];
  out_path(html, sizeof html, "html"), out_path(pf, sizeof pf, "pftrace");
  out_path(js, sizeof js, "json"), out_path(db, sizeof db, "sqlite");
  out_path(ox, sizeof ox, "otf2"); /* a directory; --force replaces the previous input's */
  snprintf(anchor, sizeof anchor, "%s/traces.otf2", ox);
  char *report_json[] = {"report", "--json", dir, NULL};
  int rc = verb(ncs_cmd_report, report_json);
  /* several runs: the rest on the first (the refusal itself was just run) */
  char *run[] = {"--run", "1"};
  char *report_text[] = {"report", run[0], run[1], dir, NULL};
  char *report_html[] = {"report", "--force", "--html", html, run[0], run[1], dir, NULL};
  char *perfetto[] = {"export", "-q", "--jobs", "1", "--force", "-o", pf, run[0], run[1], dir, NULL};
  char *chrome[] = {"export", "-q", "--jobs", "1", "--force", "-f", "chrome", "-o", js, run[0], run[1],
                    dir, NULL};
  char *sqlite[] = {"export", "-q", "--force", "-f", "sqlite", "-o", db, run[0], run[1], dir, NULL};
  char *otf2[] = {"export", "-q", "--force", "-f", "otf2", "-o", ox, run[0], run[1], dir, NULL};
  char *diag[] = {"diagnose", run[0], run[1], dir, NULL};
  char *diag_json[] = {"diagnose", "--json", run[0], run[1], dir, NULL};
  char *stats[] = {"dump", "--stats", dir, NULL};
  verb(ncs_cmd_report, report_text);
  if (verb(ncs_cmd_report, report_html) == NCS_EXIT_OK) CHECK(access(html, R_OK) == 0);
  verb(ncs_cmd_export, perfetto);
  verb(ncs_cmd_export, chrome);
  verb(ncs_cmd_export, sqlite);
  int o = verb(ncs_cmd_export, otf2); /* an archive when it says so (built without OTF2: usage) */
  if (o == NCS_EXIT_OK || o == NCS_EXIT_DAMAGED) CHECK(access(anchor, R_OK) == 0);
  int d = verb(ncs_cmd_diagnose, diag);
  CHECK(verb(ncs_cmd_diagnose, diag_json) == d); /* the same verdicts, the same status */
  verb(ncs_cmd_dump, stats);
  (void)rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) setup();
  write_files(data, size);
  int quiet = !getenv("NCS_FUZZ_VERBOSE"), out = -1, err = -1, null = -1;
  if (quiet) {
    fflush(stdout), fflush(stderr);
    out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    dup2(null, 1), dup2(null, 2);
  }
  run_verbs();
  if (quiet) {
    fflush(stdout), fflush(stderr);
    dup2(out, 1), dup2(err, 2);
    close(out), close(err), close(null);
  }
  return 0;
}
