/* diagnose.h - hang and desync verdicts over the recordings of all ranks of a job (the engine of
 * `ncclscope diagnose`, docs/diagnose.md).
 *
 * Input: a directory with one recording per process (full traces *.nstrace or live flight files
 * *.nsflight) and possibly flight dumps in DIR/dumps. Dumps are grouped into incidents (dumps of
 * one incident are taken within seconds of each other); one incident is diagnosed, with the live
 * file of every process that has no dump in it.
 *
 * Per file the engine keeps, per (communicator, rank), the last NCS_DG_RING_OPS Coll/P2p
 * operations (what was entered, enqueued, completed) and the events still open (ProxyOp,
 * ProxyStep with its last state, KernelCh, API calls), linked to their operation. From those it
 * builds per communicator a table of the last seqNumber entered and completed by every rank,
 * finds the operation the others wait in, says for each rank that did not enter it what it does
 * instead (dead, inside NCCL elsewhere, outside NCCL), and when every rank entered it, which rank
 * stopped progressing first (from proxy step states or kernel starts). Collectives with the same
 * (commId, func, seqNumber) whose count, datatype or root differ are named by majority.
 *
 * The files, communicators, ranks and clocks are the job model's (src/model/model.h). All times
 * kept are CLOCK_MONOTONIC ns of their process, mapped to CLOCK_REALTIME with the model's clock
 * offset of the file when processes are compared. A file that cannot be read is diagnosed as
 * "cannot tell", and the others are diagnosed without it.
 */
#ifndef NCS_DIAGNOSE_H
#define NCS_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

#define NCS_DG_RING_OPS 1024       /* operations kept per (communicator, rank) */
#define NCS_DG_STUCK_NS 500000000ll /* an open operation without progress for this long is stuck */
#define NCS_DG_DEAD_NS 3000000000ll /* a live file's heartbeat this much older than the others' */
#define NCS_DG_INCIDENT_GAP_NS 30000000000ll /* dumps further apart start a new incident */
#define NCS_DG_EVIDENCE 16         /* evidence lines per verdict */
#define NCS_DG_EVIDENCE_CUPTI 4    /* of them kept for CUPTI's (docs/diagnose.md, "CUPTI") */
#define NCS_DG_LINE 240
#define NCS_DG_MAX_FUNCS 12        /* distinct functions per communicator in the table */

/* where a process's recording came from */
enum { NCS_DG_SRC_TRACE = 0, NCS_DG_SRC_LIVE = 1, NCS_DG_SRC_DUMP = 2 };

/* verdict kinds, in the order they are listed (most likely cause first) */
enum {
  NCS_DG_V_DEAD = 0,          /* a process died (kill -9, crash) holding ranks others wait for */
  NCS_DG_V_MISMATCH = 1,      /* a collective's count, datatype or root differs between ranks */
  NCS_DG_V_NOT_ENTERED = 2,   /* a rank never entered the operation the others wait in */
  NCS_DG_V_STUCK_INSIDE = 3,  /* every rank entered it; this rank stopped progressing first */
  NCS_DG_V_NOTHING_STUCK = 4, /* nothing is stuck */
  NCS_DG_V_CANNOT_TELL = 5,   /* the recordings cannot show it: a file that could not be read,
                               * records lost where the answer would be, completions unknowable */
};

/* what a rank is doing with respect to the operation its communicator waits in */
enum {
  NCS_DG_R_NONE = 0,      /* no stuck operation in the communicator */
  NCS_DG_R_WAITING = 1,   /* entered it, not completed */
  NCS_DG_R_COMPLETED = 2, /* entered and completed it */
  NCS_DG_R_NOT_ENTERED = 3,
  NCS_DG_R_MISSING = 4,   /* no recording holds this rank */
};

/* where a rank that did not enter is */
enum {
  NCS_DG_W_UNKNOWN = 0,
  NCS_DG_W_DEAD = 1,         /* its process died */
  NCS_DG_W_OTHER_OP = 2,     /* inside NCCL: another operation of the same communicator is open */
  NCS_DG_W_OTHER_COMM = 3,   /* inside NCCL: an operation of another communicator is open */
  NCS_DG_W_IN_API = 4,       /* inside an NCCL API call (GroupApi/CollApi/P2pApi open) */
  NCS_DG_W_OUTSIDE = 5,      /* nothing open: stuck in the application */
  NCS_DG_W_EXITED = 6,       /* the process finalized its communicators and exited cleanly */
};

typedef struct {
  char file[512];     /* path as given */
  char name[160];     /* file name without the directory */
  int source;         /* NCS_DG_SRC_* */
  char host[128];
  uint64_t pid;
  uint32_t flight_state;  /* NCS_FS_* for flight files, 0 for traces */
  uint32_t dump_reason, dump_index;
  char trigger[128];
  int footer;             /* trace: the last segment ended cleanly (--to: by the cut) */
  int after_cut;          /* --to: the recording goes on after the cut (alive then) */
  int unreadable;         /* it could not be read at all (damage_msg says why): its ranks are unknown */
  int excluded;           /* NCS_JX_* of the job model: a copy of same_as, or another job's; not read */
  char same_as[160];      /* the file read in its place (NCS_JX_DUPLICATE) */
  int damage;             /* NCS_DAMAGE_* */
  char damage_msg[256];
  int dead;               /* died: see dead_why */
  char dead_why[NCS_DG_LINE];
  int64_t clk_off;        /* realtime - monotonic */
  int64_t snap_real;      /* what the recording reaches: dump time, heartbeat, or last sign of life */
  int64_t last_event_real; /* newest event (not ProxyCtrl), 0 none */
  int64_t heartbeat_real;  /* flight files */
  uint32_t ranks;          /* (communicator, rank) pairs it holds */
  uint32_t open_ops, open_children, open_api;
  uint64_t events_unkept;  /* open events not kept (tables full) */
  uint64_t damaged_ops;    /* Coll/P2p records that name strings or communicators lost with
                              damage: not judged */
} ncs_dg_proc_t;

typedef struct {
  const char *func;
  int p2p;                 /* entered/completed are counts, not seqNumbers */
  int64_t entered, completed; /* last seqNumber (Coll) or count in the window (P2p); -1 none */
} ncs_dg_fseq_t;

typedef struct {
  int present;             /* a recording holds this rank */
  int proc;                /* index into procs */
  int state;               /* NCS_DG_R_* for the communicator's stuck operation */
  int where;               /* NCS_DG_W_* when NOT_ENTERED */
  ncs_dg_fseq_t f[NCS_DG_MAX_FUNCS];
  uint32_t nf;
  uint32_t open;           /* operations entered and not completed */
  uint32_t stuck;          /* of which stuck */
  char open_desc[96];      /* "AllReduce #7 (1.52 s)" or "" */
  int64_t stuck_since_real; /* last progress of the stuck operation, 0 none */
} ncs_dg_rank_t;

typedef struct {
  uint64_t comm_id;
  char name[64];
  int32_t nranks;
  int32_t ranks_present;
  ncs_dg_rank_t *ranks;    /* nranks entries */
  int has_stuck;           /* an operation is stuck */
  char stuck_func[32];
  int stuck_p2p;
  int64_t stuck_seq;       /* Coll: seqNumber; P2p: -1 */
  int stuck_rank, stuck_peer; /* P2p: the rank whose operation it is, and its peer */
  uint64_t ops_completed_all; /* Coll: sum over funcs of (min over ranks of last completed + 1) */
  uint32_t in_flight;      /* open operations still progressing */
  int judged;              /* 0: left out by --comm (nothing of it is analysed or shown) */
  int32_t ranks_left_out;  /* its ranks outside --rank (rows not shown; their state still counts) */
} ncs_dg_comm_t;

typedef struct {
  int kind;                /* NCS_DG_V_* */
  int comm;                /* index into comms, -1 none */
  int rank;                /* the rank named, -1 none */
  int nranks;              /* further ranks named (odd ranks of a mismatch, ...) */
  int ranks[16];
  int proc;                /* the named rank's process, -1 none */
  char func[32];
  int64_t seq;             /* -1 for P2p or none */
  int where;               /* NCS_DG_W_* for NOT_ENTERED / DEAD */
  int waiting;             /* CANNOT TELL: ranks of the communicator wait (a problem, whose cause
                            * the recordings cannot show); 0: nothing found in what they show */
  /* STUCK_INSIDE details (-1 unknown) */
  int channel, peer, step, is_send;
  char state[32];          /* ProxyStep state name, "KernelCh", "" */
  int64_t since_ns;        /* how long before the reference time the rank last progressed */
  int64_t lead_ns;         /* how much earlier than the next rank */
  /* MISMATCH */
  char what[64];           /* "count", "datatype", "root", "count,datatype" */
  /* --rank: the ranks this verdict names (its cause, the odd ranks) that are outside the list */
  int outside[16];
  int noutside;
  char summary[NCS_DG_LINE];
  char evidence[NCS_DG_EVIDENCE][NCS_DG_LINE];
  int nev;
} ncs_dg_verdict_t;

typedef struct {
  char path[512];
  /* incidents */
  uint32_t ndumps, nincidents, incident; /* incident: 1-based, 0 = no dumps used */
  int64_t incident_first_real, incident_last_real; /* its first and last dump */
  int64_t request_real;    /* its last dump request (the newest trigger time of its dumps) */
  char trigger[128];       /* that request's trigger line ("watchdog host-pid time", ...) */
  int64_t ref_real;        /* reference time: the incident's last request, else the newest snapshot */
  const char *ref_name;    /* "the dump request" or "the end of the recording" */
  ncs_dg_proc_t *procs;
  uint32_t nprocs;
  ncs_dg_comm_t *comms;
  uint32_t ncomms;
  ncs_dg_verdict_t *verdicts;
  uint32_t nverdicts;
  int problem;             /* a hang, a desync or a death was found (a CANNOT TELL with waiting
                            * ranks too: something is stuck, the culprit unknown) */
  int cannot_tell;         /* a CANNOT TELL verdict: no all-clear, whatever else was found */
  uint32_t mismatches;     /* mismatched (commId, func, seqNumber) found in total */
  char notes[8][NCS_DG_LINE]; /* remarks: live files used, damaged files, ... */
  uint32_t nnotes;
  uint64_t impossible; /* completions taken back: claimed before every member entered (dg_read.c) */
  /* the filters (docs/diagnose.md, "Filters"); all zero without */
  ncs_job_filter_t filter;   /* as given; ranks point into filter_ranks */
  int32_t *filter_ranks;
  char filter_text[NCS_DG_LINE]; /* ncs_job_filter_text */
  uint32_t comms_not_judged; /* --comm: the communicators left out */
  int cut;                   /* --to: the job as it was at cut_real */
  int64_t cut_real;          /* that time (wall clock) */
  int cut_past_end;          /* --to reaches past every recording: nothing was cut */
  uint32_t later_done;       /* --to: operations open and without progress for longer than
                              * NCS_DG_STUCK_NS at the cut, that the recording shows completing
                              * later: in progress at the cut, not stuck */
  char later_example[NCS_DG_LINE]; /* the longest such wait, in words */
  int64_t later_idle_max;
  uint64_t from_unchecked;   /* --from: collectives entered before it, not checked for mismatches */
  /* --range, --tag: the window is the span of the operations they select (filter.from_ns, to_ns) */
  uint64_t sel_ops;          /* operations selected (every rank's of a selected instance) */
  uint64_t sel_open;         /* of which never completed, plus instances lacking a rank and sends
                              * or receives lacking their partner */
  int sel_open_why;          /* why the window has no end (judged at the end of the recordings):
                              * 1 selected operations are open, 2 a selected range never ended,
                              * 3 a flight recording (no earlier state to rebuild); 0 it has one */
} ncs_dg_t;

/* --range, --tag: the window ends this long after the latest completion among the selected
 * operations, so that the records of their end (a kernel's, a proxy step's) are in it */
#define NCS_DG_SEL_MARGIN_NS 1000000

typedef struct {
  int incident; /* 0: the first; -1: the latest; N: the N-th (1-based) */
  uint32_t job; /* which job when the recordings hold several (ncs_job_opts_t.job; 0: one) */
  int *why;     /* optional out: NCS_JOB_ERR_* when the job model could not be opened */
  /* --comm, --rank, --from, --to, --range, --tag (docs/diagnose.md, "Filters"); NULL: the whole
   * job. Not the job model's filter: diagnose judges a communicator from every rank, and a time as
   * a cut; --range and --tag choose the time (the span of the operations they select). */
  const ncs_job_filter_t *filter;
  int *usage;   /* optional out: 1 when the failure is the filter's (a usage error) */
} ncs_dg_opts_t;

/* Diagnose the job in `path` (a directory, or one file). Returns 0 with *out set (free with
 * ncs_dg_free); -1 with err filled when there is nothing to read (no recordings,
 * no such incident), or the filter does not fit the recordings (*opts->usage set): that is a
 * usage or input error. */
int ncs_diagnose(const char *path, const ncs_dg_opts_t *opts, ncs_dg_t **out, char *err, size_t errlen);
void ncs_dg_free(ncs_dg_t *d);

const char *ncs_dg_kind_name(int kind);   /* "dead", "mismatch", ... (the JSON names) */
const char *ncs_dg_where_name(int where); /* "dead", "other_op", "outside", ... */
const char *ncs_dg_state_name(int state); /* "waiting", "completed", "not_entered", ... */
const char *ncs_dg_source_name(int src);  /* "trace", "live", "dump" */

#endif
