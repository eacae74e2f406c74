/* The platform interface: one device runner per (process, device id).
 * Every backend (src/platform/<backend>/) implements these functions; the
 * backend-neutral host API table (src/platform/host_api.c) forwards to
 * them. A runtime sees only sp_host_api (host side) and chip.h (device
 * side); the module layer, the tests and tools open devices here. */
#ifndef SP_PLATFORM_DEVICE_H
#define SP_PLATFORM_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/device_info.h"
#include "simpler/host_api.h"
#include "simpler/kernel.h"
#include "simpler/settings.h"

typedef struct sp_device sp_device;

/* The geometry (simpler/device_info.h) is data: clusters, the lanes of a
 * cluster and their core kinds, AICPU threads. The sim builds clusters of
 * 1 AIC + 2 AIV (lanes 3); which AICPU threads schedule and which
 * orchestrate is the runtime's business, not the platform's. */

typedef struct sp_device_options {
    sp_geometry geometry; /* zero fields: the default geometry */
    /* memory_bytes and the backend's block (settings.sim for the sim);
     * the rest of the settings are the runtime's. */
    sp_settings settings;
} sp_device_options;

#define SP_A2A3_CLUSTERS 24
#define SP_DEFAULT_DEVICE_MEMORY (1ull << 30)

/* Geometry that fits this machine when `devices` devices are open at once
 * (the one about to open included; 0 counts as 1): the CPUs are divided
 * among them and each share gets clusters and AICPU threads from its CPUs
 * (the sim: a cluster per two CPUs, at most 24; 3 AICPU threads from 8
 * CPUs, else 2). sp_device_open uses it for fields its options leave 0. */
sp_geometry sp_geometry_default(uint32_t devices);
/* The a2a3 chip: 24 clusters of AIC + 2 AIV, 4 AICPU threads. */
sp_geometry sp_geometry_a2a3(void);
/* 0 if usable, SP_EGEOMETRY otherwise. */
int sp_geometry_validate(const sp_geometry *g);

/* Attach to device `device_id` (>= 0). Options (may be NULL) apply when
 * this call creates the device; later attaches share it (refcounted). */
int sp_device_open(int device_id, const sp_device_options *opt, sp_device **out);
/* Drop one reference; the last tears the device down. */
void sp_device_close(sp_device *dev);

const sp_geometry *sp_device_geometry(const sp_device *dev);
/* Everything above in one value (simpler/device_info.h). 0 or SP_EINVAL. */
int sp_device_describe(const sp_device *dev, sp_device_info *out);
int sp_device_id(const sp_device *dev);
const char *sp_device_platform_name(const sp_device *dev); /* "sim" */
uint64_t sp_device_memory_bytes(const sp_device *dev);
uint64_t sp_device_committed_bytes(const sp_device *dev); /* bytes in live allocations */
uint32_t sp_device_core_count(const sp_device *dev);
/* Degraded: how many core threads were abandoned (a kernel that did not
 * answer the timeout's interrupt keeps its thread; the core got a new one). */
uint32_t sp_device_abandoned_cores(const sp_device *dev);

/* Device memory. Failures return a negative status and log one line. */
int sp_device_malloc(sp_device *dev, uint64_t bytes, uint64_t *dev_out);
int sp_device_free(sp_device *dev, uint64_t dev_ptr);
int sp_device_memset(sp_device *dev, uint64_t dev_ptr, int value, uint64_t bytes);
int sp_device_copy_to(sp_device *dev, uint64_t dev_dst, const void *src, uint64_t bytes);
int sp_device_copy_from(sp_device *dev, void *dst, uint64_t dev_src, uint64_t bytes);

/* Host-map (DESIGN.md §4.3). */
void *sp_device_host_map(sp_device *dev, uint64_t dev_ptr, uint64_t bytes);
int sp_device_host_unmap(sp_device *dev, uint64_t dev_ptr);

/* Per-run storage: the device owns SP_DEVICE_STORAGE_SLOTS retained temp
 * buffers (storage slots) and as many arenas (banks), more than one
 * context's pipeline depth, so several contexts on one device each get
 * their own. A run leases one slot and one bank from prepare to finalize
 * (sp_device_storage_lease): two runs in flight on one device, whatever
 * their contexts, never share one. */
#define SP_DEVICE_STORAGE_SLOTS 8
enum { SP_STORAGE_SLOT = 0, SP_STORAGE_BANK = 1 };
/* Lease a free storage slot or bank (`kind`), `prefer` if it is free (the
 * one the caller had last: its storage is already the right size; pass
 * UINT32_MAX for none). 0, or SP_EBUSY when every one is leased. */
int sp_device_storage_lease(sp_device *dev, int kind, uint32_t prefer, uint32_t *out);
void sp_device_storage_unlease(sp_device *dev, int kind, uint32_t index);

/* Per-run storage, indexed by storage slot / bank (< SP_DEVICE_STORAGE_SLOTS). */
int sp_device_retained_temp(sp_device *dev, uint32_t slot, uint64_t bytes, uint64_t *dev_out);
int sp_device_arena_commit(sp_device *dev, uint32_t bank, const sp_arena_request *req,
                           sp_arena *out);

/* What slot `slot`'s retained buffer and bank `bank`'s arena hold now (0
 * addresses where nothing is allocated): for tests and probes of reuse.
 * Returns 0 or SP_ESLOT. */
int sp_device_probe_storage(sp_device *dev, uint32_t slot, uint32_t bank, uint64_t *retained,
                            uint64_t *retained_bytes, sp_arena *arena);

/* The immutable host API table (src/platform/host_api.c, one for every
 * backend: its entries forward to the functions of this header); its
 * runner_ctx is the sp_device. */
const sp_host_api_functions *sp_device_host_api_functions(void);
/* A per-run value binding that table to `dev`, `slot` and `bank`; both
 * SP_HOST_API_NO_RUN for a value used outside a run (its retained-temp and
 * arena entries then refuse with SP_ESLOT). Returns 0, SP_EINVAL, or
 * SP_ESLOT for a slot or bank out of range. */
int sp_device_bind_host_api(sp_device *dev, uint32_t slot, uint32_t bank, sp_host_api *out);

/* Kernels: loaded from shared-object bytes without temp files. The
 * backend defines struct sp_kernel_image (simpler/host_api.h). */
typedef sp_kernel_image sp_kernel_binary;
int sp_kernel_binary_load(sp_device *dev, const void *bytes, size_t size, const char *entry,
                          sp_kernel_binary **out);
sp_kernel_fn sp_kernel_binary_entry(const sp_kernel_binary *kb);
void sp_kernel_binary_unload(sp_kernel_binary *kb);

/* Device-side launch: run `fn` on `threads` AICPU threads over `dev_ctx`
 * (a pointer into device memory or a device-side structure). One launch at a
 * time per device; SP_EBUSY otherwise. The function's return values are
 * combined: the first non-zero one is the launch's result. SP_ELAUNCH: it
 * failed with nothing started; SP_ELAUNCH_PARTIAL: part of it started (the
 * started part finishes; poll/wait report it). */
typedef sp_launch_fn sp_device_main; /* the launched function (simpler/host_api.h) */
int sp_device_launch(sp_device *dev, sp_launch_fn fn, void *dev_ctx, uint32_t threads);
/* 0 done (result in *result), SP_EBUSY still running, SP_ESTATE nothing launched. */
int sp_device_poll(sp_device *dev, int *result);
/* Wait (spin, yield, park) for the launch; deadline 0 = none. Returns its result
 * or SP_ETIMEOUT (the launch keeps running). */
int sp_device_wait(sp_device *dev, uint64_t deadline_ns);

/* The same for a launch whose outcome goes to the launcher's own record
 * (sp_launch_record, simpler/host_api.h): what the host API's launch
 * entries use. poll: 0 done (result in *result), SP_EBUSY still running;
 * wait: the result or SP_ETIMEOUT. */
int sp_device_launch_recorded(sp_device *dev, sp_launch_fn fn, void *dev_ctx, uint32_t threads,
                              sp_launch_record *rec);
int sp_device_poll_recorded(sp_device *dev, sp_launch_record *rec, int *result);
int sp_device_wait_recorded(sp_device *dev, sp_launch_record *rec, uint64_t deadline_ns);
/* Wait until no launch runs on the device (another context's may); 0, or
 * SP_EBUSY at the deadline (sp_now_ns time; 0 = none). */
int sp_device_wait_idle(sp_device *dev, uint64_t deadline_ns);

#endif
