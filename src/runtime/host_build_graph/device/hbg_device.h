/* The device side of host_build_graph: scheduler threads that dispatch an
 * uploaded hbg image's tasks to the cores until every task is complete. */
#ifndef SP_RUNTIME_HBG_DEVICE_H
#define SP_RUNTIME_HBG_DEVICE_H

#include <stdint.h>

#include "platform/chip.h"

/* sp_device_main over an hbg image (dev_ctx is the image's device address). */
int hbg_device_main(sp_chip *chip, void *dev_ctx, uint32_t thread_index, uint32_t thread_count);

#endif
