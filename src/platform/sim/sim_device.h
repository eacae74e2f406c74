/* The sim backend's device runner: what one simulated chip owns. Each part
 * lives in its own file and is reached through the pointer here:
 *   device.c        attach/teardown, geometry, the per-process device table
 *   memory.c        the memfd arena, allocator, copies, host-map, run storage
 *   chip.c          core and scheduler threads, handshake, launch
 *   kernel_loader.c kernel shared objects from bytes
 * The host API table over these is backend-neutral: src/platform/host_api.c. */
#ifndef SP_PLATFORM_SIM_DEVICE_H
#define SP_PLATFORM_SIM_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>

#include "platform/device.h"

struct sim_memory;
struct sim_chip;

struct sp_device {
    int id;
    int refcount; /* guarded by the device table's lock */
    sp_geometry geometry;
    sp_device_options options;
    struct sim_memory *mem;
    struct sim_chip *chip;
    _Atomic int launch_fault; /* sp_sim_launch_fault (sim_testing.h): tests only */
};

/* memory.c */
/* `protect`: the device view is PROT_NONE outside launches
 * (sp_sim_settings.protect); else it is always open. */
int sim_memory_create(sp_device *dev, uint64_t bytes, bool no_host_map, bool protect,
                      struct sim_memory **out);
/* Reports (logs) allocations and host maps still live, then releases all. */
void sim_memory_destroy(struct sim_memory *mem);
/* Open (true) or close (false) the device view to loads and stores: it is
 * open only while device-side code runs, so host code that dereferences a
 * device address instead of its host-map faults in tests. */
void sim_memory_set_device_access(struct sim_memory *mem, bool open);

/* chip.c */
int sim_chip_create(sp_device *dev, struct sim_chip **out);
void sim_chip_destroy(struct sim_chip *chip);

#endif
