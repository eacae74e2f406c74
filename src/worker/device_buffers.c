/* Device buffers a worker owns across runs (sp_worker_device_alloc): kept
 * sorted by address so a run's SP_TENSOR_DEVICE arguments are checked by a
 * binary search each, once per run at submit. Each buffer counts the
 * prepared or running runs that name it: it cannot be freed, written or
 * read by the host while one does (SP_EBUSY). The module's device calls
 * do the allocation and the copies; everything here runs under
 * submit_lock (per alloc, free, copy, and once per run, never per task). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"
#include "worker/worker_internal.h"

static int dev_fail(sp_worker *w, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int dev_fail(sp_worker *w, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->last_error, sizeof w->last_error, fmt, ap);
    va_end(ap);
    return status;
}

/* Index of the last buffer whose base is <= addr, or count (none). Locked. */
static uint32_t find_at_or_below(const sp_worker *w, uint64_t addr)
{
    uint32_t lo = 0, hi = w->devbuf_count; /* answer in [lo, hi) after the loop: lo - 1 */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (w->devbufs[mid].dev <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : w->devbuf_count;
}

/* The live buffer holding [addr, addr + bytes): 0 and its index, or
 * SP_EBADPTR (addr in none) / SP_EBOUNDS (the range runs past its end),
 * with `what` named in last_error. Locked. */
static int find_range(sp_worker *w, uint64_t addr, uint64_t bytes, uint32_t *idx, const char *what)
{
    uint32_t i = addr ? find_at_or_below(w, addr) : w->devbuf_count;
    if (i == w->devbuf_count || addr - w->devbufs[i].dev >= w->devbufs[i].bytes)
        return dev_fail(w, SP_EBADPTR,
                        "%s: device address 0x%llx is not inside a live device buffer of this "
                        "worker (sp_worker_device_alloc; freed already?)",
                        what, (unsigned long long)addr);
    const wk_devbuf *b = &w->devbufs[i];
    if (bytes > b->bytes - (addr - b->dev))
        return dev_fail(w, SP_EBOUNDS,
                        "%s: %llu bytes at 0x%llx run past the end of device buffer 0x%llx "
                        "(%llu bytes)",
                        what, (unsigned long long)bytes, (unsigned long long)addr,
                        (unsigned long long)b->dev, (unsigned long long)b->bytes);
    *idx = i;
    return SP_OK;
}

SP_EXPORT int sp_worker_device_alloc(sp_worker *w, uint64_t bytes, uint64_t *dev)
{
    if (!w)
        return SP_EINVAL;
    if (!dev)
        return dev_fail(w, SP_EINVAL, "device_alloc: NULL output pointer");
    *dev = 0;
    if (!bytes)
        return dev_fail(w, SP_EINVAL, "device_alloc: 0 bytes");
    pthread_mutex_lock(&w->submit_lock);
    int rc = SP_OK;
    if (w->devbuf_count == w->devbuf_cap) {
        uint32_t cap = w->devbuf_cap ? 2 * w->devbuf_cap : 16;
        wk_devbuf *grown = realloc(w->devbufs, cap * sizeof *grown);
        if (!grown)
            rc = dev_fail(w, SP_ENOMEM, "device_alloc: no host memory to track %u buffers", cap);
        else {
            w->devbufs = grown;
            w->devbuf_cap = cap;
        }
    }
    uint64_t d = 0;
    if (rc == SP_OK && (rc = w->m.simpler_device_malloc(w->ctx, bytes, &d)) != SP_OK)
        dev_fail(w, rc, "device_alloc of %llu bytes: %s", (unsigned long long)bytes,
                 w->m.simpler_last_error(w->ctx));
    if (rc == SP_OK) {
        uint32_t at = find_at_or_below(w, d);
        at = at == w->devbuf_count ? 0 : at + 1;
        memmove(&w->devbufs[at + 1], &w->devbufs[at],
                (w->devbuf_count - at) * sizeof w->devbufs[0]);
        w->devbufs[at] = (wk_devbuf){.dev = d, .bytes = bytes, .busy = 0};
        w->devbuf_count++;
        *dev = d;
    }
    pthread_mutex_unlock(&w->submit_lock);
    return rc;
}

SP_EXPORT int sp_worker_device_free(sp_worker *w, uint64_t dev)
{
    if (!w)
        return SP_EINVAL;
    pthread_mutex_lock(&w->submit_lock);
    int rc = SP_OK;
    uint32_t i = dev ? find_at_or_below(w, dev) : w->devbuf_count;
    if (i == w->devbuf_count || w->devbufs[i].dev != dev) {
        if (i != w->devbuf_count && dev - w->devbufs[i].dev < w->devbufs[i].bytes)
            rc = dev_fail(w, SP_EBADPTR,
                          "device_free: 0x%llx is inside device buffer 0x%llx, not its base",
                          (unsigned long long)dev, (unsigned long long)w->devbufs[i].dev);
        else
            rc = dev_fail(w, SP_EDOUBLEFREE,
                          "device_free: 0x%llx is not a live device buffer of this worker "
                          "(freed already, or never allocated here)",
                          (unsigned long long)dev);
    } else if (w->devbufs[i].busy) {
        rc = dev_fail(w, SP_EBUSY,
                      "device_free: device buffer 0x%llx is an argument of %u run(s) not yet "
                      "waited for: wait for them first",
                      (unsigned long long)dev, w->devbufs[i].busy);
    } else if ((rc = w->m.simpler_device_free(w->ctx, dev)) != SP_OK) {
        dev_fail(w, rc, "device_free of 0x%llx: %s", (unsigned long long)dev,
                 w->m.simpler_last_error(w->ctx));
    } else {
        memmove(&w->devbufs[i], &w->devbufs[i + 1],
                (w->devbuf_count - i - 1) * sizeof w->devbufs[0]);
        w->devbuf_count--;
    }
    pthread_mutex_unlock(&w->submit_lock);
    return rc;
}

/* A host copy into or out of a buffer no run in flight names. */
static int copy_check(sp_worker *w, uint64_t dev, uint64_t bytes, const void *host,
                      const char *what)
{
    if (!host)
        return dev_fail(w, SP_EINVAL, "%s: NULL host pointer", what);
    uint32_t i;
    int rc = find_range(w, dev, bytes, &i, what);
    if (rc == SP_OK && w->devbufs[i].busy)
        rc = dev_fail(w, SP_EBUSY,
                      "%s: device buffer 0x%llx is an argument of %u run(s) not yet waited for: "
                      "wait for them first",
                      what, (unsigned long long)w->devbufs[i].dev, w->devbufs[i].busy);
    return rc;
}

SP_EXPORT int sp_worker_copy_to_device(sp_worker *w, uint64_t dev, const void *host, uint64_t bytes)
{
    if (!w)
        return SP_EINVAL;
    pthread_mutex_lock(&w->submit_lock);
    int rc = copy_check(w, dev, bytes, host, "copy_to_device");
    if (rc == SP_OK && bytes && (rc = w->m.simpler_copy_to_device(w->ctx, dev, host, bytes)))
        dev_fail(w, rc, "copy_to_device: %s", w->m.simpler_last_error(w->ctx));
    pthread_mutex_unlock(&w->submit_lock);
    return rc;
}

SP_EXPORT int sp_worker_copy_from_device(sp_worker *w, void *host, uint64_t dev, uint64_t bytes)
{
    if (!w)
        return SP_EINVAL;
    pthread_mutex_lock(&w->submit_lock);
    int rc = copy_check(w, dev, bytes, host, "copy_from_device");
    if (rc == SP_OK && bytes && (rc = w->m.simpler_copy_from_device(w->ctx, host, dev, bytes)))
        dev_fail(w, rc, "copy_from_device: %s", w->m.simpler_last_error(w->ctx));
    pthread_mutex_unlock(&w->submit_lock);
    return rc;
}

SP_EXPORT int sp_worker_device_map(sp_worker *w, uint64_t dev, uint64_t bytes, void **host)
{
    if (!w)
        return SP_EINVAL;
    if (!host)
        return dev_fail(w, SP_EINVAL, "device_map: NULL output pointer");
    *host = NULL;
    pthread_mutex_lock(&w->submit_lock);
    uint32_t i;
    int rc = find_range(w, dev, bytes ? bytes : 1, &i, "device_map");
    if (rc == SP_OK && (rc = w->m.simpler_device_host_map(w->ctx, dev, bytes, host)))
        dev_fail(w, rc, "device_map: %s", w->m.simpler_last_error(w->ctx));
    pthread_mutex_unlock(&w->submit_lock);
    return rc;
}

SP_EXPORT int sp_worker_device_unmap(sp_worker *w, uint64_t dev)
{
    if (!w)
        return SP_EINVAL;
    pthread_mutex_lock(&w->submit_lock);
    int rc = w->m.simpler_device_host_unmap(w->ctx, dev);
    if (rc)
        dev_fail(w, rc, "device_unmap: %s", w->m.simpler_last_error(w->ctx));
    pthread_mutex_unlock(&w->submit_lock);
    return rc;
}

int wk_devbufs_hold(sp_worker *w, wk_lease *l, const sp_args *args)
{
    l->dev_held_count = 0;
    if (!args || args->tensor_count > SP_MAX_RUN_TENSORS)
        return SP_OK; /* the module names what is wrong with these */
    int rc = SP_OK;
    bool locked = false;
    for (uint32_t t = 0; t < args->tensor_count && rc == SP_OK; t++) {
        const sp_tensor *x = &args->tensors[t];
        if (!(x->flags & SP_TENSOR_DEVICE))
            continue;
        if (!locked) {
            pthread_mutex_lock(&w->submit_lock);
            locked = true;
        }
        char what[48];
        snprintf(what, sizeof what, "run argument %u (SP_TENSOR_DEVICE)", t);
        /* The runtime derives dependencies per argument buffer: two
         * device arguments are the same range or disjoint. */
        for (uint32_t u = 0; u < t && rc == SP_OK; u++) {
            const sp_tensor *y = &args->tensors[u];
            if (!(y->flags & SP_TENSOR_DEVICE) ||
                (y->addr == x->addr && y->buf_bytes == x->buf_bytes) ||
                x->addr >= y->addr + y->buf_bytes || y->addr >= x->addr + x->buf_bytes)
                continue;
            rc = dev_fail(w, SP_EINVAL,
                          "run arguments %u and %u (SP_TENSOR_DEVICE): their ranges overlap and "
                          "are not the same range; pass one buffer and views of it in tasks",
                          u, t);
        }
        uint32_t i;
        if (rc == SP_OK && (rc = find_range(w, x->addr, x->buf_bytes, &i, what)) == SP_OK) {
            w->devbufs[i].busy++;
            l->dev_held[l->dev_held_count++] = w->devbufs[i].dev;
        }
    }
    if (locked)
        pthread_mutex_unlock(&w->submit_lock);
    if (rc)
        wk_devbufs_release(w, l);
    return rc;
}

void wk_devbufs_release(sp_worker *w, wk_lease *l)
{
    if (!l->dev_held_count)
        return;
    pthread_mutex_lock(&w->submit_lock);
    for (uint32_t k = 0; k < l->dev_held_count; k++) {
        uint32_t i = find_at_or_below(w, l->dev_held[k]);
        if (i != w->devbuf_count && w->devbufs[i].dev == l->dev_held[k] && w->devbufs[i].busy)
            w->devbufs[i].busy--;
    }
    l->dev_held_count = 0;
    pthread_mutex_unlock(&w->submit_lock);
}

void wk_devbufs_free_all(sp_worker *w)
{
    for (uint32_t i = 0; i < w->devbuf_count; i++)
        (void)w->m.simpler_device_free(w->ctx, w->devbufs[i].dev);
    free(w->devbufs);
    w->devbufs = NULL;
    w->devbuf_count = w->devbuf_cap = 0;
}
