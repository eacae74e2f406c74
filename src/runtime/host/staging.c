/* Run-argument staging: validate, place every tensor in the slot's retained
 * temp buffer (one device buffer per pipeline slot, kept and reused across
 * runs, so staging allocates nothing once warm), copy in, host-map; and the
 * way back. Host-side, through the run's sp_host_api only. */
#include "runtime/host/staging.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "runtime/host/redzone.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

static int check_arg(const sp_args *args, uint32_t i, char *err, size_t err_len)
{
    const sp_tensor *t = &args->tensors[i];
    uint8_t dir = args->dirs[i];
    if (dir < SP_IN || dir > SP_NO_DEP) {
        snprintf(err, err_len,
                 "run argument %u: direction %u is not IN/OUT/INOUT/OUT_EXISTING/"
                 "NO_DEP",
                 i, dir);
        return SP_EINVAL;
    }
    if (!sp_dtype_size(t->dtype)) {
        snprintf(err, err_len, "run argument %u: unknown dtype %u", i, t->dtype);
        return SP_EDTYPE;
    }
    if (!t->addr) {
        snprintf(err, err_len, "run argument %u: NULL %s", i,
                 (t->flags & SP_TENSOR_DEVICE) ? "device address (SP_TENSOR_DEVICE)" : "host data");
        return SP_EINVAL;
    }
    if (t->buf_bytes == 0 || !sp_tensor_is_valid(t)) {
        snprintf(err, err_len, "run argument %u: view does not fit its %llu-byte buffer", i,
                 (unsigned long long)t->buf_bytes);
        return SP_ESHAPE;
    }
    return SP_OK;
}

int rt_staging_stage(rt_staging *st, const sp_host_api *api, const sp_args *args, bool map_for_host,
                     bool redzones, char *err, size_t err_len)
{
    memset(st, 0, offsetof(rt_staging, device_args));
    if (!args) {
        snprintf(err, err_len, "run arguments are NULL");
        return SP_EINVAL;
    }
    if (args->tensor_count > SP_MAX_RUN_TENSORS || args->scalar_count > SP_MAX_RUN_SCALARS) {
        snprintf(err, err_len, "run has %u tensors and %u scalars; limits are %d and %d",
                 args->tensor_count, args->scalar_count, SP_MAX_RUN_TENSORS, SP_MAX_RUN_SCALARS);
        return SP_EINVAL;
    }
    sp_args *dev = &st->device_args;
    dev->tensor_count = args->tensor_count;
    dev->scalar_count = args->scalar_count;
    memcpy(dev->scalars, args->scalars, args->scalar_count * sizeof args->scalars[0]);
    /* With red zones: one before the first buffer, one after each. */
    const uint64_t rz = redzones ? SP_REDZONE_BYTES : 0;
    uint64_t total = rz;
    for (uint32_t i = 0; i < args->tensor_count; i++) {
        int rc = check_arg(args, i, err, err_len);
        if (rc)
            return rc;
        /* Untrusted sizes: neither the rounding nor the sum may wrap, or
         * tensors would be placed past the end of the buffer. */
        if (args->tensors[i].flags & SP_TENSOR_DEVICE)
            continue; /* on the device already: no room in the staging */
        uint64_t bytes = args->tensors[i].buf_bytes;
        if (bytes > UINT64_MAX - 63 - rz ||
            __builtin_add_overflow(total, ((bytes + 63) & ~63ull) + rz, &total)) {
            snprintf(err, err_len,
                     "run argument %u: its %llu-byte buffer takes the run's staging past 2^64 "
                     "bytes",
                     i, (unsigned long long)bytes);
            return SP_EDEVMEM;
        }
    }
    uint64_t base = 0;
    if (total > rz) {
        int rc = sp_host_retained_temp(api, total, &base);
        if (rc) {
            snprintf(err, err_len, "staging %u tensors (%llu bytes) in device memory: %s",
                     args->tensor_count, (unsigned long long)total, sp_status_name(rc));
            SP_DEBUG("staging: the retained buffer of storage slot %u could not grow to %llu "
                     "bytes",
                     api->pipeline_slot, (unsigned long long)total);
            return rc;
        }
    }
    uint64_t off = rz;
    for (uint32_t i = 0; i < args->tensor_count; i++) {
        const sp_tensor *h = &args->tensors[i];
        rt_staged_tensor *s = &st->t[i];
        s->host = (void *)(uintptr_t)h->addr;
        s->bytes = h->buf_bytes;
        s->dir = args->dirs[i];
        s->device = (h->flags & SP_TENSOR_DEVICE) != 0;
        st->count = i + 1;
        if (s->device) {
            /* Used in place: no copies, no red zones; host-mapped as a
             * staged buffer would be (the sim maps any range of a buffer). */
            s->dev = h->addr;
            if (map_for_host)
                s->host_map = sp_host_map(api, s->dev, s->bytes);
            dev->dirs[i] = s->dir;
            dev->tensors[i] = *h;
            dev->tensors[i].owner_task = SP_NO_TASK;
            continue;
        }
        s->dev = base + off;
        off += ((s->bytes + 63) & ~63ull) + rz;
        if (redzones) {
            uint64_t end = s->dev + s->bytes;
            int rc = sp_host_memset(api, s->dev - rz, SP_REDZONE_FILL, rz);
            if (rc == SP_OK)
                rc = sp_host_memset(api, end, SP_REDZONE_FILL,
                                    rt_redzone_after_end(s->dev, s->bytes) - end);
            if (rc) {
                snprintf(err, err_len, "run argument %u: red zones: %s", i, sp_status_name(rc));
                rt_staging_release(st, api);
                return rc;
            }
        }
        if (s->dir != SP_OUT) {
            int rc = sp_host_copy_to_device(api, s->dev, s->host, s->bytes);
            if (rc) {
                snprintf(err, err_len, "run argument %u: copy in: %s", i, sp_status_name(rc));
                rt_staging_release(st, api);
                return rc;
            }
        }
        if (map_for_host)
            s->host_map = sp_host_map(api, s->dev, s->bytes); /* NULL: copies instead */
        dev->dirs[i] = s->dir;
        dev->tensors[i] = *h;
        dev->tensors[i].addr = s->dev;
        dev->tensors[i].owner_task = SP_NO_TASK;
    }
    return SP_OK;
}

void rt_staging_unmap(rt_staging *st, const sp_host_api *api)
{
    for (uint32_t i = 0; i < st->count; i++) {
        if (st->t[i].host_map) {
            sp_host_unmap(api, st->t[i].dev);
            st->t[i].host_map = NULL;
        }
    }
}

int rt_staging_copy_back(rt_staging *st, const sp_host_api *api, char *err, size_t err_len)
{
    for (uint32_t i = 0; i < st->count; i++) {
        rt_staged_tensor *s = &st->t[i];
        if (s->device || (s->dir != SP_OUT && s->dir != SP_INOUT && s->dir != SP_OUT_EXISTING))
            continue;
        int rc = sp_host_copy_from_device(api, s->host, s->dev, s->bytes);
        if (rc) {
            snprintf(err, err_len, "run argument %u: copy back: %s", i, sp_status_name(rc));
            return rc;
        }
    }
    return SP_OK;
}

void rt_staging_release(rt_staging *st, const sp_host_api *api)
{
    /* The retained buffer stays with its slot for the next run. */
    rt_staging_unmap(st, api);
    st->count = 0;
}
