/* dg_files.c - which recordings `ncclscope diagnose` reads (dg_int.h, docs/diagnose.md):
 * dumps in DIR/dumps are grouped into incidents; one incident is diagnosed, with the live file
 * of every process that has no dump in it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/dg_int.h"
#include "util/fmt.h"
#include "util/mem.h"

/* ------------------------------------------------------------------ choosing files */

typedef struct {
  char *path;
  ncs_flight_hdr_t h;
} dump_t;

static int read_flight_hdr(const char *path, ncs_flight_hdr_t *h) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  uint8_t page[sizeof *h];
  ssize_t k = read(fd, page, sizeof page);
  close(fd);
  if (k != (ssize_t)sizeof page || !ncs_flight_is(page, sizeof page)) return -1;
  memcpy(h, page, sizeof *h);
  h->dump_real = dg_sane_time(h->dump_real), h->trigger_real = dg_sane_time(h->trigger_real);
  h->dump_mono = dg_sane_time(h->dump_mono);
  h->host[sizeof h->host - 1] = 0;
  h->trigger[sizeof h->trigger - 1] = 0;
  return h->version == NCS_FLIGHT_VERSION ? 0 : -1;
}

/* host and pid of a recording: a flight file's header, or a trace's first SEGMENT */
static int peek_id(const char *path, char *host, size_t hl, uint64_t *pid) {
  ncs_flight_hdr_t h;
  if (read_flight_hdr(path, &h) == 0) {
    dg_cpy(host, hl, h.host);
    *pid = h.pid;
    return 0;
  }
  char err[256];
  ncs_reader_t *r = ncs_reader_open(path, err, sizeof err);
  if (!r) return -1;
  ncs_item_t it;
  int rc = -1;
  while (ncs_reader_next(r, &it) == 1)
    if (it.what == NCS_ITEM_SEGMENT) {
      const ncs_segment_info_t *s = ncs_reader_segment(r);
      dg_cpy(host, hl, s->host);
      *pid = s->pid;
      rc = 0;
      break;
    }
  ncs_reader_close(r);
  return rc;
}

static int by_dump_real(const void *a, const void *b) {
  const dump_t *x = a, *y = b;
  if (x->h.dump_real != y->h.dump_real) return x->h.dump_real < y->h.dump_real ? -1 : 1;
  return strcmp(x->path, y->path);
}

static void add_proc(dg_t *D, const char *path, int source) {
  D->pub.procs = ncs_xrealloc(D->pub.procs, (D->pub.nprocs + 1) * sizeof *D->pub.procs);
  ncs_dg_proc_t *p = &D->pub.procs[D->pub.nprocs++];
  memset(p, 0, sizeof *p);
  snprintf(p->file, sizeof p->file, "%s", path); /* paths as given: they are opened */
  snprintf(p->name, sizeof p->name, "%s", dg_base_name(path));
  p->source = source;
}

/* Pick the recordings to diagnose: the chosen incident's dumps plus the live files of the
 * processes without a dump in it; or every file of the directory when there are no dumps. */
int dg_choose_files(dg_t *D, const char *path, const ncs_dg_opts_t *o, char *err, size_t errlen) {
  char **paths = NULL, **dpaths = NULL;
  size_t n = 0, nd = 0;
  if (ncs_list_traces(path, &paths, &n, err, errlen) != 0) return -1;
  struct stat st;
  char ddir[1100];
  snprintf(ddir, sizeof ddir, "%s/dumps", path);
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && stat(ddir, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (ncs_list_traces(ddir, &dpaths, &nd, err, errlen) != 0) {
      ncs_free_paths(paths, n);
      return -1;
    }
  }
  dump_t *dumps = ncs_xcalloc(nd, sizeof *dumps);
  size_t ndumps = 0;
  for (size_t i = 0; i < nd; i++) {
    if (read_flight_hdr(dpaths[i], &dumps[ndumps].h) != 0) {
      dg_note(D, "%s: not a readable flight dump; ignored", dg_base_name(dpaths[i]));
      continue;
    }
    dumps[ndumps++].path = dpaths[i];
  }
  int rc = 0;
  if (!n && !ndumps) {
    snprintf(err, errlen, "no recordings (*.nstrace, *.nsflight) in '%s'", path);
    rc = -1;
    goto out;
  }
  D->pub.ndumps = (uint32_t)ndumps;
  if (ndumps) qsort(dumps, ndumps, sizeof *dumps, by_dump_real);
  /* incidents: a gap of more than NCS_DG_INCIDENT_GAP_NS between consecutive dumps */
  uint32_t ninc = 0;
  size_t *inc_first = ncs_xcalloc(ndumps + 1, sizeof *inc_first);
  for (size_t i = 0; i < ndumps; i++)
    if (!i || (int64_t)(dumps[i].h.dump_real - dumps[i - 1].h.dump_real) > NCS_DG_INCIDENT_GAP_NS)
      inc_first[ninc++] = i;
  inc_first[ninc] = ndumps;
  D->pub.nincidents = ninc;
  if (o->incident > 0 && (uint32_t)o->incident > ninc) {
    if (ninc)
      snprintf(err, errlen, "no incident %d: %s/dumps holds %u incident%s", o->incident, path, ninc,
               ninc == 1 ? "" : "s");
    else
      snprintf(err, errlen, "no incident %d: there are no dumps in %s/dumps", o->incident, path);
    free(inc_first);
    rc = -1;
    goto out;
  }
  if (ninc) {
    uint32_t k = o->incident > 0 ? (uint32_t)o->incident - 1 : o->incident < 0 ? ninc - 1 : 0;
    D->pub.incident = k + 1;
    size_t a = inc_first[k], b = inc_first[k + 1];
    D->pub.incident_first_real = (int64_t)dumps[a].h.dump_real;
    D->pub.incident_last_real = (int64_t)dumps[b - 1].h.dump_real;
    /* the incident's last dump request: every process alive then answered it. (Under a long
     * hang several watchdogs fire one after the other, and an early request may have been a
     * stall that resolved; the last one shows what stayed stuck.) */
    int64_t last_req = 0;
    for (size_t i = a; i < b; i++) {
      int64_t t = (int64_t)(dumps[i].h.trigger_real ? dumps[i].h.trigger_real : dumps[i].h.dump_real);
      if (t >= last_req) {
        last_req = t;
        dg_cpy(D->pub.trigger, sizeof D->pub.trigger, dumps[i].h.trigger);
      }
    }
    D->pub.request_real = last_req;
    /* each process's latest dump in the incident, unless it predates the last request (the
     * process missed it: its live file says more) */
    uint32_t nstale = 0, nchosen = 0;
    size_t *stale = ncs_xcalloc(b - a, sizeof *stale), *chosen = ncs_xcalloc(b - a, sizeof *chosen);
    for (size_t i = a; i < b; i++) {
      int later = 0;
      for (size_t j2 = a; j2 < b; j2++)
        if (j2 != i && dumps[j2].h.pid == dumps[i].h.pid && !strcmp(dumps[j2].h.host, dumps[i].h.host) &&
            (dumps[j2].h.dump_real > dumps[i].h.dump_real ||
             (dumps[j2].h.dump_real == dumps[i].h.dump_real && j2 > i)))
          later = 1;
      if (later) continue;
      if ((int64_t)dumps[i].h.dump_real + 1000000000ll < last_req) {
        stale[nstale++] = i;
        continue;
      }
      add_proc(D, dumps[i].path, NCS_DG_SRC_DUMP);
      chosen[nchosen++] = i;
    }
    /* live files of the processes without a (current) dump in this incident */
    for (size_t i = 0; i < n; i++) {
      char host[128];
      uint64_t pid;
      if (peek_id(paths[i], host, sizeof host, &pid) != 0) { /* the model says why, later */
        add_proc(D, paths[i], strstr(paths[i], NCS_FLIGHT_SUFFIX) ? NCS_DG_SRC_LIVE : NCS_DG_SRC_TRACE);
        continue;
      }
      int have = 0, old = -1;
      for (uint32_t q = 0; q < nchosen && !have; q++)
        have = dumps[chosen[q]].h.pid == pid && !strcmp(dumps[chosen[q]].h.host, host);
      if (have) continue;
      for (uint32_t q = 0; q < nstale; q++)
        if (dumps[stale[q]].h.pid == pid && !strcmp(dumps[stale[q]].h.host, host)) {
          old = (int)q;
          stale[q] = SIZE_MAX; /* replaced by the live file */
        }
      add_proc(D, paths[i], strstr(paths[i], NCS_FLIGHT_SUFFIX) ? NCS_DG_SRC_LIVE : NCS_DG_SRC_TRACE);
      if (old >= 0)
        dg_note(D, "%s-%" PRIu64 " did not answer the incident's last dump request: its live file %s is used",
             host, pid, dg_base_name(paths[i]));
      else
        dg_note(D, "%s-%" PRIu64 " has no dump in incident %u: its live file %s is used", host, pid,
             D->pub.incident, dg_base_name(paths[i]));
    }
    for (uint32_t q = 0; q < nstale; q++) /* no live file: the older dump is all there is */
      if (stale[q] != SIZE_MAX) {
        add_proc(D, dumps[stale[q]].path, NCS_DG_SRC_DUMP);
        dg_note(D, "%s: this process did not answer the incident's last dump request, and has no live file",
             dg_base_name(dumps[stale[q]].path));
      }
    free(stale);
    free(chosen);
  } else {
    if (o->incident < 0) dg_note(D, "no dumps in %s/dumps: --latest has nothing to choose", path);
    for (size_t i = 0; i < n; i++)
      add_proc(D, paths[i], strstr(paths[i], NCS_FLIGHT_SUFFIX) ? NCS_DG_SRC_LIVE : NCS_DG_SRC_TRACE);
  }
  free(inc_first);
out:
  free(dumps);
  ncs_free_paths(paths, n);
  ncs_free_paths(dpaths, nd);
  return rc;
}

