/* The device side of tensormap_and_ringbuffer: the launched function (one
 * orchestrator thread + the scheduler threads) and the pieces the
 * orchestrator and the schedulers share. */
#ifndef SP_RUNTIME_TMR_DEVICE_H
#define SP_RUNTIME_TMR_DEVICE_H

#include "platform/chip.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_layout.h"

/* sp_device_main: thread `sched_threads` orchestrates, the others schedule. */
int tmr_device_main(sp_chip *chip, void *dev_ctx, uint32_t thread_index, uint32_t thread_count);

/* Orchestrator thread: lay out the rings, run the orchestration, finish. */
int tmr_orchestrate(tmr_ctl *c, sp_chip *chip);
/* Queue task `id` (all producers done) for dispatch; wakes schedulers. */
void tmr_make_ready(tmr_ctl *c, sp_chip *chip, int64_t id);
/* Record the run's first error (later ones are dropped). */
void tmr_fail(tmr_ctl *c, int status, const char *msg);

#endif
