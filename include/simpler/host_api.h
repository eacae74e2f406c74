/* The platform's host API, as runtimes see it: an immutable table of
 * function pointers (sp_host_api_functions), and a small value bound to one
 * run (sp_host_api) that carries the runner, the run's pipeline slot and
 * arena bank. It is a runtime's only way to the platform: memory, copies,
 * host-map, run storage, the device description, kernel loading and the
 * launch of the device side. Nothing recovers the runner, slot or bank from
 * a global or a thread-local: the value is passed down explicitly. */
#ifndef SIMPLER_HOST_API_H
#define SIMPLER_HOST_API_H

#include <stdatomic.h>
#include <stdint.h>

#include "simpler/device_info.h"
#include "simpler/export.h"
#include "simpler/kernel.h"

/* Most runs a device can have prepared at once: slots and banks per device. */
#define SP_PIPELINE_MAX_DEPTH 2

/* Sizes asked of one arena bank's static arena (heap, shared memory, image). */
typedef struct sp_arena_request {
    uint64_t heap_bytes;
    uint64_t shm_bytes;
    uint64_t image_bytes;
} sp_arena_request;

/* Device addresses of one bank's committed arena (0 for a zero-sized part). */
typedef struct sp_arena {
    uint64_t heap;
    uint64_t shm;
    uint64_t image;
    sp_arena_request size;
} sp_arena;

/* What a launched function drives: the device-side view of the chip (the
 * platform's chip interface). */
typedef struct sp_chip sp_chip;

/* The device side of a run: runs on `thread_count` AICPU threads at once,
 * each with its own thread_index, over `dev_ctx` (a pointer into device
 * memory or a device-side structure). A non-zero return fails the launch. */
typedef int (*sp_launch_fn)(sp_chip *chip, void *dev_ctx, uint32_t thread_index,
                            uint32_t thread_count);

/* Where one launch's outcome goes, owned by the launcher, so that the next
 * launch (another context's on the same device) cannot overwrite a result
 * before its owner read it. It must stay put until the launch is done. */
typedef struct sp_launch_record {
    _Atomic uint32_t done; /* 1 once the launch finished: release-stored */
    int result;            /* the first non-zero return of the launched function */
} sp_launch_record;

/* A kernel the platform loaded from shared-object bytes (opaque). */
typedef struct sp_kernel_image sp_kernel_image;

/* The slot and bank of a value bound outside a run (e.g. at registration):
 * its per-run storage entries refuse it with SP_ESLOT. */
#define SP_HOST_API_NO_RUN UINT32_MAX

typedef struct sp_host_api_functions {
    /* Device memory: addresses are device addresses, never host pointers. */
    int (*device_malloc)(void *runner_ctx, uint64_t bytes, uint64_t *dev_out);
    int (*device_free)(void *runner_ctx, uint64_t dev_ptr);
    int (*device_memset)(void *runner_ctx, uint64_t dev_ptr, int value, uint64_t bytes);
    int (*copy_to_device)(void *runner_ctx, uint64_t dev_dst, const void *host_src, uint64_t bytes);
    int (*copy_from_device)(void *runner_ctx, void *host_dst, uint64_t dev_src, uint64_t bytes);
    /* Host-map: a host address for [dev_ptr, dev_ptr+bytes) inside one live
     * allocation, or NULL (no host-map on this backend, or a bad range).
     * Pair every success with unregister before the buffer is freed. */
    void *(*register_device_memory_to_host)(void *runner_ctx, uint64_t dev_ptr, uint64_t bytes);
    int (*unregister_device_memory_from_host)(void *runner_ctx, uint64_t dev_ptr);
    /* Per-slot temp buffer of at least `bytes`, kept and reused across runs. */
    int (*retained_temp_buffer)(void *runner_ctx, uint32_t pipeline_slot, uint64_t bytes,
                                uint64_t *dev_out);
    /* Per-bank static arena: idempotent while the request fits what the bank
     * holds; a failed commit rolls back all three parts. */
    int (*arena_commit)(void *runner_ctx, uint32_t arena_bank, const sp_arena_request *req,
                        sp_arena *out);
    /* Copy a callable blob into device memory; the copy lives until freed. */
    int (*callable_upload)(void *runner_ctx, const void *blob, uint64_t bytes, uint64_t *dev_out);
    /* The device (simpler/device_info.h): geometry, memory, core queue. */
    int (*describe)(void *runner_ctx, sp_device_info *out);
    /* Load a kernel from shared-object bytes (no temp file where the OS
     * allows) and find `entry` in it: *out to unload, *entry_out to run.
     * SP_EKERNEL_LOAD / SP_EKERNEL_ENTRY / SP_EINVAL. */
    int (*kernel_load)(void *runner_ctx, const void *bytes, uint64_t size, const char *entry,
                       sp_kernel_image **out, sp_kernel_fn *entry_out);
    void (*kernel_unload)(void *runner_ctx, sp_kernel_image *k); /* NULL: nothing */
    /* Run `fn` on `threads` AICPU threads; the outcome goes to `rec`. One
     * launch at a time per device: SP_EBUSY while another runs. SP_ELAUNCH:
     * nothing started; SP_ELAUNCH_PARTIAL: part of it started (and ends by
     * itself; `rec` gets no outcome). */
    int (*launch)(void *runner_ctx, sp_launch_fn fn, void *dev_ctx, uint32_t threads,
                  sp_launch_record *rec);
    /* 0 once `rec`'s launch is done (its result in *result), SP_EBUSY before. */
    int (*launch_poll)(void *runner_ctx, sp_launch_record *rec, int *result);
    /* Wait (spin, yield, park) for `rec`'s launch: its result, or SP_ETIMEOUT
     * at the deadline (an sp_now_ns time, 0 = none; the launch keeps running). */
    int (*launch_wait)(void *runner_ctx, sp_launch_record *rec, uint64_t deadline_ns);
    /* Wait until no launch runs on the device (another context's may):
     * 0, or SP_EBUSY at the deadline (0 = none). */
    int (*wait_idle)(void *runner_ctx, uint64_t deadline_ns);
} sp_host_api_functions;

/* One run's binding of the table to a runner, a slot and a bank (both
 * SP_HOST_API_NO_RUN for a value bound outside a run). */
typedef struct sp_host_api {
    void *runner_ctx;
    uint32_t pipeline_slot;
    uint32_t arena_bank;
    const sp_host_api_functions *functions;
} sp_host_api;

static inline int sp_host_malloc(const sp_host_api *api, uint64_t bytes, uint64_t *dev_out)
{
    return api->functions->device_malloc(api->runner_ctx, bytes, dev_out);
}
static inline int sp_host_free(const sp_host_api *api, uint64_t dev_ptr)
{
    return api->functions->device_free(api->runner_ctx, dev_ptr);
}
static inline int sp_host_memset(const sp_host_api *api, uint64_t dev_ptr, int value,
                                 uint64_t bytes)
{
    return api->functions->device_memset(api->runner_ctx, dev_ptr, value, bytes);
}
static inline int sp_host_copy_to_device(const sp_host_api *api, uint64_t dev_dst, const void *src,
                                         uint64_t bytes)
{
    return api->functions->copy_to_device(api->runner_ctx, dev_dst, src, bytes);
}
static inline int sp_host_copy_from_device(const sp_host_api *api, void *dst, uint64_t dev_src,
                                           uint64_t bytes)
{
    return api->functions->copy_from_device(api->runner_ctx, dst, dev_src, bytes);
}
static inline void *sp_host_map(const sp_host_api *api, uint64_t dev_ptr, uint64_t bytes)
{
    return api->functions->register_device_memory_to_host(api->runner_ctx, dev_ptr, bytes);
}
static inline int sp_host_unmap(const sp_host_api *api, uint64_t dev_ptr)
{
    return api->functions->unregister_device_memory_from_host(api->runner_ctx, dev_ptr);
}
static inline int sp_host_retained_temp(const sp_host_api *api, uint64_t bytes, uint64_t *dev_out)
{
    return api->functions->retained_temp_buffer(api->runner_ctx, api->pipeline_slot, bytes,
                                                dev_out);
}
static inline int sp_host_arena_commit(const sp_host_api *api, const sp_arena_request *req,
                                       sp_arena *out)
{
    return api->functions->arena_commit(api->runner_ctx, api->arena_bank, req, out);
}
static inline int sp_host_callable_upload(const sp_host_api *api, const void *blob, uint64_t bytes,
                                          uint64_t *dev_out)
{
    return api->functions->callable_upload(api->runner_ctx, blob, bytes, dev_out);
}
static inline int sp_host_describe(const sp_host_api *api, sp_device_info *out)
{
    return api->functions->describe(api->runner_ctx, out);
}
static inline int sp_host_kernel_load(const sp_host_api *api, const void *bytes, uint64_t size,
                                      const char *entry, sp_kernel_image **out,
                                      sp_kernel_fn *entry_out)
{
    return api->functions->kernel_load(api->runner_ctx, bytes, size, entry, out, entry_out);
}
static inline void sp_host_kernel_unload(const sp_host_api *api, sp_kernel_image *k)
{
    api->functions->kernel_unload(api->runner_ctx, k);
}
static inline int sp_host_launch(const sp_host_api *api, sp_launch_fn fn, void *dev_ctx,
                                 uint32_t threads, sp_launch_record *rec)
{
    return api->functions->launch(api->runner_ctx, fn, dev_ctx, threads, rec);
}
static inline int sp_host_launch_poll(const sp_host_api *api, sp_launch_record *rec, int *result)
{
    return api->functions->launch_poll(api->runner_ctx, rec, result);
}
static inline int sp_host_launch_wait(const sp_host_api *api, sp_launch_record *rec,
                                      uint64_t deadline_ns)
{
    return api->functions->launch_wait(api->runner_ctx, rec, deadline_ns);
}
static inline int sp_host_wait_idle(const sp_host_api *api, uint64_t deadline_ns)
{
    return api->functions->wait_idle(api->runner_ctx, deadline_ns);
}

#endif
