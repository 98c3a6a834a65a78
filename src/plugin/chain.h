/* chain.h - NCCLSCOPE_CHAIN: a second profiler plugin behind ncclscope (docs/chain.md).
 *
 * plugin.c hands every call to the chain while ncs_g.chain_on is set (the fast paths are off then,
 * so the check sits on the cold paths only); the chain calls ncclscope's own halves (*_rec) and
 * the chained plugin's entry points, each with its own context, handles, parents and mask.
 */
#ifndef NCS_CHAIN_H
#define NCS_CHAIN_H

#include "core/ncs.h"

/* ncclscope's own START of one ABI version, on a descriptor of that version */
typedef ncs_result_t (*ncs_start_rec_fn)(void *ctx, void **eh, void *descr);

/* plugin.c: ncclscope without the chain */
NCS_HIDDEN ncs_result_t ncs_init_rec(void **context, uint64_t comm_id, int *mask, const char *name,
                                     int nnodes, int nranks, int rank, ncs_logger_t logfn, int abi);
NCS_HIDDEN ncs_result_t ncs_finalize_rec(void *context);
NCS_HIDDEN __attribute__((cold)) void ncs_end_rec(void *eh, int kind, int state, uint64_t a0, uint64_t a1);

/* plugin.c: what every build of the plugin exports, whatever its file is called: a chained
 * library that has it is ncclscope (itself, or a copy), which the chain refuses (it would forward
 * to itself without end) */
#define NCS_IDENTITY_SYMBOL "ncclscopePluginIdentity"
extern const char ncclscopePluginIdentity[];

/* chain.c */
/* At an init, under ncs_g.lock: loads the chained plugin once per load (NCCL's ABI version `abi`).
 * Returns 1 when the chain is on. */
NCS_HIDDEN int ncs_chain_load_locked(int abi);
NCS_HIDDEN ncs_result_t ncs_chain_init(void **context, uint64_t comm_id, int *mask, const char *name,
                                       int nnodes, int nranks, int rank, ncs_logger_t logfn, int abi);
NCS_HIDDEN ncs_result_t ncs_chain_finalize(void *context);
NCS_HIDDEN ncs_result_t ncs_chain_start(void *ctx, void **eh, void *descr, ncs_start_rec_fn rec);
/* kind: NCS_REC_STOP or NCS_REC_STATE; a0, a1: ncclscope's reading of `args` */
NCS_HIDDEN void ncs_chain_end(void *eh, int kind, int state, uint64_t a0, uint64_t a1, void *args);
/* At ncclscope's unload after the last finalize: dlclose the chained plugin, as NCCL would. */
NCS_HIDDEN void ncs_chain_unload(void);

#endif
