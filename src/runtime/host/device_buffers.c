/* The module context's table of simpler_device_malloc buffers (see
 * device_buffers.h): a sorted array, a binary search per device argument. */
#include "runtime/host/device_buffers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"

int rt_device_buffers_init(rt_device_buffers *d)
{
    memset(d, 0, sizeof *d);
    return pthread_mutex_init(&d->lock, NULL) ? SP_ESYS : SP_OK;
}

void rt_device_buffers_destroy(rt_device_buffers *d)
{
    free(d->b);
    d->b = NULL;
    d->count = d->cap = 0;
    pthread_mutex_destroy(&d->lock);
}

/* Index of the last buffer with dev <= addr, or count. Locked. */
static uint32_t at_or_below(const rt_device_buffers *d, uint64_t addr)
{
    uint32_t lo = 0, hi = d->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->b[mid].dev <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : d->count;
}

int rt_device_buffers_add(rt_device_buffers *d, uint64_t dev, uint64_t bytes)
{
    pthread_mutex_lock(&d->lock);
    int rc = SP_OK;
    if (d->count == d->cap) {
        uint32_t cap = d->cap ? 2 * d->cap : 16;
        rt_device_buffer *g = realloc(d->b, cap * sizeof *g);
        if (g) {
            d->b = g;
            d->cap = cap;
        } else {
            rc = SP_ENOMEM;
        }
    }
    if (rc == SP_OK) {
        uint32_t i = at_or_below(d, dev);
        i = i == d->count ? 0 : i + 1;
        memmove(&d->b[i + 1], &d->b[i], (d->count - i) * sizeof d->b[0]);
        d->b[i] = (rt_device_buffer){.dev = dev, .bytes = bytes};
        d->count++;
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

void rt_device_buffers_remove(rt_device_buffers *d, uint64_t dev)
{
    pthread_mutex_lock(&d->lock);
    uint32_t i = at_or_below(d, dev);
    if (i != d->count && d->b[i].dev == dev) {
        memmove(&d->b[i], &d->b[i + 1], (d->count - i - 1) * sizeof d->b[0]);
        d->count--;
    }
    pthread_mutex_unlock(&d->lock);
}

void rt_device_buffers_clear(rt_device_buffers *d)
{
    pthread_mutex_lock(&d->lock);
    d->count = 0;
    pthread_mutex_unlock(&d->lock);
}

int rt_device_buffers_check_args(rt_device_buffers *d, const sp_args *args, char *err,
                                 size_t err_len)
{
    if (!args || args->tensor_count > SP_MAX_RUN_TENSORS)
        return SP_OK; /* staging names what is wrong with these */
    int rc = SP_OK;
    bool locked = false;
    for (uint32_t t = 0; t < args->tensor_count && rc == SP_OK; t++) {
        const sp_tensor *x = &args->tensors[t];
        if (!(x->flags & SP_TENSOR_DEVICE))
            continue;
        if (d && !locked) {
            pthread_mutex_lock(&d->lock);
            locked = true;
        }
        uint32_t i = d && x->addr ? at_or_below(d, x->addr) : 0;
        if (!d || !x->addr || i == d->count || x->addr - d->b[i].dev >= d->b[i].bytes) {
            snprintf(err, err_len,
                     "run argument %u (SP_TENSOR_DEVICE): device address 0x%llx is not inside a "
                     "live buffer of this context (simpler_device_malloc)",
                     t, (unsigned long long)x->addr);
            rc = SP_EBADPTR;
        } else if (x->buf_bytes > d->b[i].bytes - (x->addr - d->b[i].dev)) {
            snprintf(err, err_len,
                     "run argument %u (SP_TENSOR_DEVICE): %llu bytes at 0x%llx run past the end "
                     "of device buffer 0x%llx (%llu bytes)",
                     t, (unsigned long long)x->buf_bytes, (unsigned long long)x->addr,
                     (unsigned long long)d->b[i].dev, (unsigned long long)d->b[i].bytes);
            rc = SP_EBOUNDS;
        }
    }
    if (locked)
        pthread_mutex_unlock(&d->lock);
    return rc;
}
