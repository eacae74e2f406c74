/* The platform's host API, as runtimes see it: an immutable table of
 * function pointers per backend (sp_host_api_functions), and a small value
 * bound to one run (sp_host_api) that carries the runner, the run's pipeline
 * slot and arena bank. Nothing recovers the runner, slot or bank from a
 * global or a thread-local: the value is passed down explicitly. */
#ifndef SIMPLER_HOST_API_H
#define SIMPLER_HOST_API_H

#include <stdint.h>

#include "simpler/export.h"

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
    /* Optional profiling hooks (NULL when the backend has none). */
    void (*profile_phase_begin)(void *runner_ctx, uint32_t pipeline_slot, const char *phase);
    void (*profile_phase_end)(void *runner_ctx, uint32_t pipeline_slot, const char *phase);
} sp_host_api_functions;

/* One run's binding of the table to a runner, a slot and a bank. */
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
static inline void sp_host_phase_begin(const sp_host_api *api, const char *phase)
{
    if (api->functions->profile_phase_begin)
        api->functions->profile_phase_begin(api->runner_ctx, api->pipeline_slot, phase);
}
static inline void sp_host_phase_end(const sp_host_api *api, const char *phase)
{
    if (api->functions->profile_phase_end)
        api->functions->profile_phase_end(api->runner_ctx, api->pipeline_slot, phase);
}

#endif
