/* timeline.h - what the files of the timeline exporter share (`ncclscope export`, Perfetto and
 * Chrome; docs/timeline.md). export.h is its interface.
 *
 *   tl_files.c  the job model's files, members and operations as the timeline places them: one
 *               process per rank, its communicators, each operation's end;
 *   tl_emit.c   the emit pass of one file: rows, lanes, groups, slices, states, flows;
 *   tl_job.c    the job tracks (one slice per collective instance) and the counters;
 *   timeline.c  the driver: the model, the workers, the fragments, the output.
 */
#ifndef NCS_EXPORT_TIMELINE_H
#define NCS_EXPORT_TIMELINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "export/export.h"
#include "export/sink.h"
#include "export/xfilter.h"
#include "model/model.h"
#include "trace/reader.h"
#include "util/hmap.h"
#include "util/mem.h"
#include "util/pool.h"

#define NONE32 0xFFFFFFFFu
#define COUNTER_WINDOW_NS 1000000000ull /* counter changes are reordered within 1 s */
#define MAX_ARGS 64
#define MAX_WORKERS 16
#define ST_KERNEL_CH_STOP NCS_STATE_KERNEL_CH_STOP
#define ST_KERNEL_PHASE_STOP 31
#define GROW(arr, cap, need) NCS_GROW(arr, cap, need)

static inline uint64_t nz(uint64_t v) { return v ? v : 1; }
static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* a communicator member of one file (the job model's), as the timeline places it */
typedef struct {
  uint64_t comm_id;   /* 0: unknown (ABI v1-v3): no linking across ranks */
  const char *name;   /* the job's pool */
  int32_t rank, nranks;
  uint32_t seg, index, proc;
  uint32_t order;     /* order of first appearance in the file: groups */
  int32_t device;     /* CUDA device at init, -1 unknown */
  const char *bus_id; /* "" unknown */
  char id_str[24];    /* comm_id as NCS_COMM_ID_FMT writes it: the slices' commId argument */
} comm_t;

typedef struct {
  uint32_t file;
  int32_t rank;   /* world rank, -1 none */
  int32_t device; /* its GPU, -1 unknown */
  const char *bus_id;
  int32_t pid, order;
  const char *name;
  tl_track_t trk;
  /* the emit pass of its file only */
  uint8_t declared; /* its track was handed to the sink (with a filter: when something is on it) */
  tl_track_t ctr[2];
  uint8_t ctr_declared[2];
  double ctr_val[2];
} proc_t;

typedef struct {
  const char *path; /* the job's pool; the file is the job model's procs[index] */
  uint64_t size;
  comm_t *comms;
  uint32_t ncomms;
  size_t comm_cap;
  hmap_t comm_map; /* (seg << 32 | index) -> index in comms */
  uint32_t p0, p1; /* its procs */
  /* its model operations by (seg, id), taken by the emit pass; its part of the output in a
   * temporary file */
  hmap_t ops;
  int frag_fd, frag_done;
} file_t;

enum { RK_API = 0, RK_GROUP, RK_OTHER, RK_COLL, RK_CE, RK_PCTRL, RK_GPU, RK_PROXY, RK_STEPS,
       RK_NET, RK_NETX };

typedef struct {
  tl_track_t t;
  uint8_t depth;
  uint64_t last_end;
} lane_t;

typedef struct {
  uint32_t proc, group; /* group NONE32: directly under the process */
  uint8_t kind;
  int32_t ch;
  const char *name, *path, *desc;
  const char *pack; /* per-channel rows: "group / kind" without the channel (JSON rows) */
  int32_t order;
  uint32_t pack_sort;
  lane_t *lanes;
  uint32_t nlanes, free_hint;
  size_t lane_cap;
} row_t;

typedef struct {
  tl_track_t t;
  int declared;
} group_t;

/* an event of no operation that began before the filter's window: written only once it is seen
 * to reach into the window (a state or its stop there), with what it held back */
typedef struct {
  tl_arg_t args[MAX_ARGS];
  uint32_t nargs;
  const char *name;
  uint8_t cat;
  struct {
    uint64_t ts, arg0, arg1;
    uint32_t state;
  } *st; /* its states so far */
  uint32_t nst;
  size_t st_cap;
} defer_t;

typedef struct {
  uint64_t id;
  uint32_t row, lane;
  uint64_t start, last, phase_start, gpu_end;
  uint32_t group, proc;
  int32_t ch;
  uint8_t type, phase_open, is_send, in_use;
  defer_t *d; /* not written yet (the filter's window); lane is NONE32 */
} open_t;

typedef struct {
  uint64_t ts;
  double delta;
  uint32_t proc;
  uint8_t kind;
} cdelta_t;

typedef struct ex ex_t;

typedef struct { /* one worker: everything the emit pass of one file needs */
  ex_t *x;
  pthread_t thread;
  tl_sink_t *sink;
  ncs_pool_t pool; /* strings of the emit pass (the sink interns them by pointer) */
  ncs_export_stats_t st;
  file_t *f;
  uint32_t fi, seg;
  uint64_t next_uuid;
  uint32_t next_track;
  row_t *rows;
  uint32_t nrows;
  size_t row_cap;
  hmap_t row_map;
  group_t *groups;
  uint32_t ngroups;
  size_t group_cap;
  hmap_t group_map;
  open_t *open;
  uint32_t nopen, *free_open, nfree;
  size_t open_cap, free_cap;
  hmap_t open_map;   /* id -> open index */
  hmap_t parent_map; /* Coll/P2p id -> func (KernelCh names) */
  hmap_t tid_map;    /* thread index -> tid, per segment */
  hmap_t name_map;   /* (kind, value) -> pooled name */
  cdelta_t *heap;
  uint32_t nheap;
  size_t heap_cap;
  uint64_t max_coll_start;
  tl_arg_t args[MAX_ARGS];
  uint32_t nargs;
  tl_flow_t *flows;
  size_t flow_cap;
  uint64_t reported; /* bytes of the current file counted in x->bytes_done */
  ncs_xf_file_t xs;  /* the filter on the current file's records */
  int oom;
} wk_t;

struct ex {
  ncs_export_opts_t o;
  ncs_job_t *job;  /* the job model (retained): files, clocks, operations, instances, pairs */
  ncs_xf_t xf;     /* the filter (opts.filter) on the records (xfilter.h) */
  tl_arg_t fmeta[16]; /* the filter's marker, for the sinks' file metadata */
  file_t *files;   /* parallel to job->procs */
  uint32_t nfiles;
  uint8_t *linked; /* per model operation: its file's START gets its flows (tl_files) */
  proc_t *procs;
  uint32_t nprocs;
  size_t proc_cap;
  ncs_pool_t pool; /* process names (single-threaded phase) */
  uint64_t next_uuid;
  uint32_t next_track;
  int32_t job_pid;
  uint64_t origin;
  const char *argname[NCS_T_COUNT][NCS_MAX_FIELDS];
  char argbuf[NCS_T_COUNT][NCS_MAX_FIELDS][48];
  /* threads */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t nworkers, next_file, appended;
  int direct; /* one worker: write straight into the output */
  tl_sink_t *main_sink;
  atomic_int oom, failed;
  char fail_msg[256];
  const char *tmp_dir;
  /* progress */
  uint64_t bytes_total;
  atomic_uint_fast64_t bytes_done;
  atomic_uint_fast64_t last_print_ns;
  atomic_int printed, writing;
  uint64_t t0_ns;
};

/* output time of a file's monotonic ns: the job time of the model */
static inline uint64_t to_out(const ex_t *x, uint32_t fi, uint64_t mono) {
  return (uint64_t)ncs_job_time(x->job, fi, mono);
}

/* tl_files.c */
int tl_files(ex_t *x);
int tl_make_procs(ex_t *x);
comm_t *tl_file_comm(const file_t *f, uint32_t seg, uint64_t index);
/* the model operation of a Coll/P2p START of file f, taken (a second START with the same id gets
 * none); NULL when the model has none */
const ncs_op_t *tl_op(const ex_t *x, file_t *f, uint32_t seg, uint64_t id, size_t *idx);
uint64_t tl_op_end(const ex_t *x, const ncs_op_t *op); /* output time */
/* tl_emit.c */
void tl_arg_names(ex_t *x);
void tl_new_track(wk_t *w, tl_track_t *t, uint8_t kind, uint64_t parent, int32_t pid);
/* hand a track to a sink (counted); a process's is handed once, before its first child's */
void tl_declare(wk_t *w, tl_sink_t *s, const tl_track_t *t);
void tl_proc_use(wk_t *w, uint32_t proc);
void tl_set_oom(wk_t *w);
tl_flow_t *tl_flows(wk_t *w, uint32_t n);
void tl_arg_u64(wk_t *w, const char *n, uint64_t v);
void tl_arg_i64(wk_t *w, const char *n, int64_t v);
void tl_arg_ptr(wk_t *w, const char *n, uint64_t v);
void tl_arg_str(wk_t *w, const char *n, const char *v);
void tl_emit_file(wk_t *w, uint32_t fi);
void tl_emit_ranges(wk_t *w, uint32_t fi);
void tl_reset_file_state(wk_t *w);
/* tl_job.c */
uint64_t tl_hub_flow(size_t inst, size_t op);
void tl_emit_job(wk_t *w);
void tl_emit_losses(wk_t *w);
void tl_emit_gpu(wk_t *w); /* CUPTI's kernels and graph replays (docs/timeline.md, "GPU") */
/* what a filtered export covers: a marker track of its own (a sequence after the files') and
 * the main sink's file metadata (docs/timeline.md, "Filters") */
void tl_emit_filter(wk_t *w, const ncs_xf_stats_t *fs);
void tl_heap_push(wk_t *w, uint64_t ts, uint32_t proc, uint8_t kind, double d);
void tl_counters_flush(wk_t *w, uint64_t upto);
/* timeline.c */
void tl_progress(wk_t *w, ncs_reader_t *r);
void tl_file_done(wk_t *w, const file_t *f);

#endif
