/* The sim backend's host API (DESIGN.md §4.2): one immutable table whose
 * entries take the sp_device as runner_ctx and forward to the sp_device_*
 * functions, and the per-run value that binds it to a slot and a bank. */
#include <inttypes.h>

#include "common/log.h"
#include "platform/sim/sim_device.h"
#include "simpler/status.h"

static int api_device_malloc(void *ctx, uint64_t bytes, uint64_t *dev_out)
{
    return sp_device_malloc(ctx, bytes, dev_out);
}

static int api_device_free(void *ctx, uint64_t dev_ptr)
{
    return sp_device_free(ctx, dev_ptr);
}

static int api_device_memset(void *ctx, uint64_t dev_ptr, int value, uint64_t bytes)
{
    return sp_device_memset(ctx, dev_ptr, value, bytes);
}

static int api_copy_to_device(void *ctx, uint64_t dev_dst, const void *src, uint64_t bytes)
{
    return sp_device_copy_to(ctx, dev_dst, src, bytes);
}

static int api_copy_from_device(void *ctx, void *dst, uint64_t dev_src, uint64_t bytes)
{
    return sp_device_copy_from(ctx, dst, dev_src, bytes);
}

static void *api_register_to_host(void *ctx, uint64_t dev_ptr, uint64_t bytes)
{
    return sp_device_host_map(ctx, dev_ptr, bytes);
}

static int api_unregister_from_host(void *ctx, uint64_t dev_ptr)
{
    return sp_device_host_unmap(ctx, dev_ptr);
}

static int api_retained_temp(void *ctx, uint32_t slot, uint64_t bytes, uint64_t *dev_out)
{
    return sp_device_retained_temp(ctx, slot, bytes, dev_out);
}

static int api_arena_commit(void *ctx, uint32_t bank, const sp_arena_request *req, sp_arena *out)
{
    return sp_device_arena_commit(ctx, bank, req, out);
}

static int api_callable_upload(void *ctx, const void *blob, uint64_t bytes, uint64_t *dev_out)
{
    if (!blob || !dev_out) {
        SP_ERROR("callable upload: NULL %s", !blob ? "blob" : "output pointer");
        return SP_EINVAL;
    }
    uint64_t dev;
    int rc = sp_device_malloc(ctx, bytes, &dev);
    if (rc)
        return rc;
    rc = sp_device_copy_to(ctx, dev, blob, bytes);
    if (rc) {
        sp_device_free(ctx, dev);
        return rc;
    }
    *dev_out = dev;
    return SP_OK;
}

static const sp_host_api_functions sim_host_api_functions = {
    .device_malloc = api_device_malloc,
    .device_free = api_device_free,
    .device_memset = api_device_memset,
    .copy_to_device = api_copy_to_device,
    .copy_from_device = api_copy_from_device,
    .register_device_memory_to_host = api_register_to_host,
    .unregister_device_memory_from_host = api_unregister_from_host,
    .retained_temp_buffer = api_retained_temp,
    .arena_commit = api_arena_commit,
    .callable_upload = api_callable_upload,
    .profile_phase_begin = NULL, /* the sim backend has no profiler */
    .profile_phase_end = NULL,
};

const sp_host_api_functions *sp_device_host_api_functions(void)
{
    return &sim_host_api_functions;
}

int sp_device_bind_host_api(sp_device *dev, uint32_t slot, uint32_t bank, sp_host_api *out)
{
    if (!dev || !out)
        return SP_EINVAL;
    if (slot >= SP_DEVICE_STORAGE_SLOTS || bank >= SP_DEVICE_STORAGE_SLOTS) {
        SP_ERROR("device %d: host API binding: storage slot %" PRIu32 " / arena bank %" PRIu32
                 " out of range (the device has %d)",
                 dev->id, slot, bank, SP_DEVICE_STORAGE_SLOTS);
        return SP_ESLOT;
    }
    *out = (sp_host_api){.runner_ctx = dev,
                         .pipeline_slot = slot,
                         .arena_bank = bank,
                         .functions = &sim_host_api_functions};
    return SP_OK;
}
