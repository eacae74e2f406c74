/* Test-only interface of the sim backend: fault injection for the tests of
 * launch acceptance and of a device left unusable. Nothing in a release
 * code path reads it but the one relaxed load at each launch; tests that
 * drive a device through a worker open the same device id (one device
 * table per process) and set the fault on it. */
#ifndef SP_PLATFORM_SIM_TESTING_H
#define SP_PLATFORM_SIM_TESTING_H

#include "platform/device.h"

typedef enum sp_sim_launch_fault {
    SP_SIM_LAUNCH_FAULT_NONE = 0,
    SP_SIM_LAUNCH_FAULT_BEFORE = 1,  /* refuse before anything starts: SP_ELAUNCH */
    SP_SIM_LAUNCH_FAULT_HALFWAY = 2, /* start half of the threads on nothing: SP_ELAUNCH_PARTIAL */
    SP_SIM_LAUNCH_FAULT_STUCK = 3,   /* start a device side that never finishes */
} sp_sim_launch_fault;

/* Every later launch on `dev` fails as `mode` says, until set back to
 * NONE. 0, or SP_EINVAL (no device, or an unknown mode). */
int sp_sim_set_launch_fault(sp_device *dev, int mode);

#endif
