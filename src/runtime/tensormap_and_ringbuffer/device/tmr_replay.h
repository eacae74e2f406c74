/* The replay driver of tensormap_and_ringbuffer (DESIGN §12): instead of
 * calling the orchestration, the orchestrator thread streams a recorded
 * submit stream (tmr_record.h) through the ring — each task's tensors
 * resolved against this run (staged addresses, fresh heap-ring carves,
 * producers' outputs), its data scalars patched, its recorded producers
 * published through tmr_publish: no TensorMap, no validation. */
#ifndef SP_RUNTIME_TMR_REPLAY_H
#define SP_RUNTIME_TMR_REPLAY_H

#include "runtime/tensormap_and_ringbuffer/device/tmr_layout.h"

/* Stream `h` into the ring; stops at the run's first error (which names
 * it, as a submit's would). */
void tmr_replay_run(tmr_orch *o, const tmr_rec_header *h);

#endif
