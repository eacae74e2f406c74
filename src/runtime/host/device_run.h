/* The device-side half of a run as both runtimes drive it: launch a device
 * function, then poll or wait for it, remembering its result and how long
 * it ran. */
#ifndef SP_RUNTIME_DEVICE_RUN_H
#define SP_RUNTIME_DEVICE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "platform/device.h"

/* How long a launch waits for the device while another context's launch
 * runs on it, before it is refused (SP_EBUSY). */
#define SP_DEVICE_RUN_BUSY_WAIT_NS (600ull * 1000000000ull)

typedef struct sp_device_run {
    sp_device *dev;
    sp_launch_record rec; /* this launch's outcome, whatever launches next */
    uint64_t launch_ns;
    uint64_t device_ns;
    int launched;
    int done;
    int result;
} sp_device_run;

/* Launch `fn` on `threads` AICPU threads, first waiting (up to
 * SP_DEVICE_RUN_BUSY_WAIT_NS) for a launch of another context on the same
 * device to end. 0, or a status (nothing started). */
int sp_device_run_launch(sp_device_run *d, sp_device_main fn, void *dev_ctx, uint32_t threads,
                         char *err, size_t err_len);
/* SP_RUN_COMPLETE, SP_RUN_NOT_READY, or the device side's failure status. */
int sp_device_run_poll(sp_device_run *d);
/* Completion status, or SP_ETIMEOUT at the deadline (still running). */
int sp_device_run_wait(sp_device_run *d, uint64_t deadline_ns);

#endif
