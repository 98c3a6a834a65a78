/* test_flight_signal.c PLUGIN DIR - the flight recorder's dump signal lives with the
 * application's own handler: the application's SIGUSR1 handler still runs on every signal, a dump
 * is written per signal, and after the last communicator is finalized and the plugin unloaded,
 * the application's handler is installed again (not ours, which would point into unmapped code).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/ncs_abi.h"
#include "trace/reader.h"

static volatile sig_atomic_t app_calls;
static void app_handler(int sig) {
  (void)sig;
  app_calls++;
}

static int fails;
#define CHECK(c, ...)                                                                             \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                 \
      printf(__VA_ARGS__);                                                                        \
      printf("\n");                                                                               \
      fails++;                                                                                    \
    }                                                                                             \
  } while (0)

static int count_dumps(const char *dir) {
  char p[1200];
  snprintf(p, sizeof p, "%s/dumps", dir);
  DIR *d = opendir(p);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, NCS_FLIGHT_SUFFIX) && !strstr(e->d_name, ".tmp")) n++;
  closedir(d);
  return n;
}

static void wait_dumps(const char *dir, int n) {
  for (int i = 0; i < 200 && count_dumps(dir) < n; i++) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_flight_signal PLUGIN DIR\n");
    return 2;
  }
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", argv[2]);
  if (system(cmd) != 0) return 2;
  setenv("NCCLSCOPE_MODE", "flight", 1);
  setenv("NCCLSCOPE_DIR", argv[2], 1);
  unsetenv("NCCLSCOPE_DUMP_SIGNAL");

  struct sigaction sa, cur;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = app_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);

  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK(lib, "dlopen: %s", dlerror());
  if (!lib) return 1;
  ncs_profiler_v6_t *p = dlsym(lib, "ncclProfiler_v6");
  CHECK(p, "no ncclProfiler_v6");
  if (!p) return 1;
  int mask = 0;
  void *ctx = NULL;
  p->init(&ctx, 0x1234, &mask, "sigtest", 1, 1, 0, NULL);
  CHECK(ctx, "init gave no context");
  /* one collective, so the dump has something in it */
  ncs_descr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = NCS_EV_COLL;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 4;
  void *h = NULL;
  p->startEvent(ctx, &h, &d);
  p->stopEvent(h);

  sigaction(SIGUSR1, NULL, &cur);
  CHECK(cur.sa_handler != app_handler, "the plugin did not install its dump handler");
  raise(SIGUSR1);
  wait_dumps(argv[2], 1);
  raise(SIGUSR1);
  wait_dumps(argv[2], 2);
  CHECK(app_calls == 2, "the application's handler ran %d times for 2 signals", (int)app_calls);
  CHECK(count_dumps(argv[2]) == 2, "%d dumps for 2 signals", count_dumps(argv[2]));

  p->finalize(ctx);
  dlclose(lib);
  sigaction(SIGUSR1, NULL, &cur);
  CHECK(cur.sa_handler == app_handler, "the application's handler was not restored at unload");
  raise(SIGUSR1);
  CHECK(app_calls == 3, "after unload the application's handler ran %d times", (int)app_calls);

  /* the live file says the process ended cleanly, and reads */
  char path[1200], err[300];
  snprintf(path, sizeof path, "%s", argv[2]);
  char **files;
  size_t nf;
  CHECK(ncs_list_traces(path, &files, &nf, err, sizeof err) == 0 && nf == 1, "listing: %s", err);
  if (nf == 1) {
    ncs_reader_t *r = ncs_reader_open(files[0], err, sizeof err);
    CHECK(r, "open %s: %s", files[0], err);
    if (r) {
      const ncs_flight_info_t *fi = ncs_reader_flight(r);
      CHECK(fi && fi->state == NCS_FS_EXITED, "state %u", fi ? fi->state : 0);
      CHECK(fi && fi->dump_index == 2 && fi->dump_reason == NCS_DR_SIGNAL, "dumps %u reason %u",
            fi ? fi->dump_index : 0, fi ? fi->dump_reason : 0);
      ncs_item_t it;
      int colls = 0;
      while (ncs_reader_next(r, &it) > 0)
        if (it.what == NCS_ITEM_EVENT && it.ev.kind == NCS_REC_START && it.ev.type == NCS_T_COLL)
          colls++;
      CHECK(colls == 1, "%d Coll in the file", colls);
      CHECK(ncs_reader_damage(r) == NCS_DAMAGE_NONE, "damage: %s", ncs_reader_error(r));
      ncs_reader_close(r);
    }
  }
  if (nf) ncs_free_paths(files, nf);
  printf("%s\n", fails ? "test_flight_signal: FAILED" : "test_flight_signal: ok");
  return fails != 0;
}
