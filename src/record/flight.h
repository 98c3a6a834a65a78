/* flight.h (record) - the plugin side of the flight recorder (flight.c). Writer thread only,
 * except ncs_fl_signal_install/remove (setup and unload, under the global lock). */
#ifndef NCS_RECORD_FLIGHT_H
#define NCS_RECORD_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "trace/reader.h"

/* -1 with err saying what failed, on which file, and why */
NCS_HIDDEN int ncs_fl_open(const char *dir, const char *host, uint64_t ring_bytes, uint32_t nops,
                           uint32_t max_comms, char *path, size_t pathlen, char *err,
                           size_t errlen);
NCS_HIDDEN void ncs_fl_close(int clean);
/* operations the writer's final flush closed without a completion: the live file's open count */
NCS_HIDDEN void ncs_fl_open_at_end(uint32_t n);
/* a loss window into the header (docs/flight.md): called every cycle while it grows, and once
 * closed; kill -9 loses none of what was passed */
NCS_HIDDEN void ncs_fl_loss(const ncs_loss_t *l, int closed);
NCS_HIDDEN int ncs_fl_active(void);
/* store one chunk (header + payload) in the meta region or the ring; -1 when it does not fit */
NCS_HIDDEN int ncs_fl_chunk(uint16_t type, const uint8_t *hdr, const void *payload, size_t len);
/* every record the writer emits, to keep open events and the last operations */
NCS_HIDDEN void ncs_fl_note(const ncs_event_t *e);
/* Whether a chunk of n bytes (header included) fits the current ring slot; and a new slot begun
 * now, its keyframe restating what was noted so far. The writer begins the slot itself before it
 * notes an event whose chunk would not fit, so a keyframe never restates an event that the
 * slot's own data holds too. */
NCS_HIDDEN int ncs_fl_fits(size_t n);
NCS_HIDDEN void ncs_fl_next_slot(void);
/* whether a chunk of this type goes to the ring's slots (not the meta region) */
NCS_HIDDEN int ncs_fl_in_ring(uint16_t type);
/* once per writer cycle: a dump reason (NCS_DR_*) when one is due, else 0 */
NCS_HIDDEN int ncs_fl_poll(char *trigger, size_t tlen, uint64_t *trigger_real);
NCS_HIDDEN int ncs_fl_dump(int reason, const char *trigger, uint64_t trigger_real);
NCS_HIDDEN uint64_t ncs_fl_unkept(void);
NCS_HIDDEN void ncs_fl_signal_install(int sig);
NCS_HIDDEN void ncs_fl_signal_remove(void);

#endif
