/* The host API table (DESIGN.md §4.2), one for every backend: each entry
 * takes the sp_device as runner_ctx and forwards to the platform interface
 * (platform/device.h) the backend implements, so a second backend supplies
 * those functions and never copies this file. Also the per-run value that
 * binds the table to a storage slot and an arena bank. */
#include <inttypes.h>

#include "common/log.h"
#include "platform/device.h"
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

/* A value bound outside a run has no storage of its own to reach. */
static int refuse_no_run(void *ctx, const char *what)
{
    SP_ERROR("device %d: %s asked through a host API bound outside a run (no storage slot "
             "or arena bank)",
             sp_device_id(ctx), what);
    return SP_ESLOT;
}

static int api_retained_temp(void *ctx, uint32_t slot, uint64_t bytes, uint64_t *dev_out)
{
    if (slot == SP_HOST_API_NO_RUN)
        return refuse_no_run(ctx, "retained temp buffer");
    return sp_device_retained_temp(ctx, slot, bytes, dev_out);
}

static int api_arena_commit(void *ctx, uint32_t bank, const sp_arena_request *req, sp_arena *out)
{
    if (bank == SP_HOST_API_NO_RUN)
        return refuse_no_run(ctx, "arena commit");
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

static int api_describe(void *ctx, sp_device_info *out)
{
    return sp_device_describe(ctx, out);
}

static int api_kernel_load(void *ctx, const void *bytes, uint64_t size, const char *entry,
                           sp_kernel_image **out, sp_kernel_fn *entry_out)
{
    if (!out || !entry_out) {
        SP_ERROR("device %d: kernel load: NULL %s", sp_device_id(ctx),
                 !out ? "image pointer" : "entry pointer");
        return SP_EINVAL;
    }
    *out = NULL;
    *entry_out = NULL;
    if ((uint64_t)(size_t)size != size) {
        SP_ERROR("device %d: kernel load: %" PRIu64 " bytes do not fit this host",
                 sp_device_id(ctx), size);
        return SP_EINVAL;
    }
    sp_kernel_binary *kb = NULL;
    int rc = sp_kernel_binary_load(ctx, bytes, (size_t)size, entry, &kb);
    if (rc)
        return rc;
    *out = kb;
    *entry_out = sp_kernel_binary_entry(kb);
    return SP_OK;
}

static void api_kernel_unload(void *ctx, sp_kernel_image *k)
{
    (void)ctx;
    sp_kernel_binary_unload(k);
}

static int api_launch(void *ctx, sp_launch_fn fn, void *dev_ctx, uint32_t threads,
                      sp_launch_record *rec)
{
    if (!rec) {
        SP_ERROR("device %d: launch without a launch record", sp_device_id(ctx));
        return SP_EINVAL;
    }
    return sp_device_launch_recorded(ctx, fn, dev_ctx, threads, rec);
}

static int api_launch_poll(void *ctx, sp_launch_record *rec, int *result)
{
    return sp_device_poll_recorded(ctx, rec, result);
}

static int api_launch_wait(void *ctx, sp_launch_record *rec, uint64_t deadline_ns)
{
    return sp_device_wait_recorded(ctx, rec, deadline_ns);
}

static int api_wait_idle(void *ctx, uint64_t deadline_ns)
{
    return sp_device_wait_idle(ctx, deadline_ns);
}

static const sp_host_api_functions host_api_functions = {
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
    .describe = api_describe,
    .kernel_load = api_kernel_load,
    .kernel_unload = api_kernel_unload,
    .launch = api_launch,
    .launch_poll = api_launch_poll,
    .launch_wait = api_launch_wait,
    .wait_idle = api_wait_idle,
};

const sp_host_api_functions *sp_device_host_api_functions(void)
{
    return &host_api_functions;
}

static bool index_ok(uint32_t i)
{
    return i < SP_DEVICE_STORAGE_SLOTS || i == SP_HOST_API_NO_RUN;
}

int sp_device_bind_host_api(sp_device *dev, uint32_t slot, uint32_t bank, sp_host_api *out)
{
    if (!dev || !out)
        return SP_EINVAL;
    if (!index_ok(slot) || !index_ok(bank)) {
        SP_ERROR("device %d: host API binding: storage slot %" PRIu32 " / arena bank %" PRIu32
                 " out of range (the device has %d)",
                 sp_device_id(dev), slot, bank, SP_DEVICE_STORAGE_SLOTS);
        return SP_ESLOT;
    }
    *out = (sp_host_api){.runner_ctx = dev,
                         .pipeline_slot = slot,
                         .arena_bank = bank,
                         .functions = &host_api_functions};
    return SP_OK;
}
