/* Host-map of device memory (DESIGN.md §4.3) on the sim backend: a host map
 * is one more MAP_SHARED mapping of the memfd pages under a device range, at
 * an address of its own, so writes through it and through the device are
 * the same bytes, and code that wrongly keeps using dev_ptr still faults.
 *
 * Registry: one entry per registered dev_ptr. Registering a dev_ptr that is
 * already mapped returns the same host address and counts a reference; each
 * register needs its own unregister and the last one unmaps. The mapping
 * covers dev_ptr up to the end of its allocation, so any later register of
 * that dev_ptr (which must lie in the same allocation) fits in it. An
 * allocation with a live map cannot be freed (SP_EMAPPED). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"
#include "platform/sim/sim_memory.h"
#include "simpler/status.h"

static sim_host_map *map_find(struct sim_memory *mem, uint64_t dev_ptr)
{
    for (size_t i = 0; i < mem->map_n; i++)
        if (mem->maps[i].dev_ptr == dev_ptr)
            return &mem->maps[i];
    return NULL;
}

static void *map_new_locked(struct sim_memory *mem, uint64_t dev_ptr, range_block *b)
{
    if (mem->map_n == mem->map_cap) {
        size_t ncap = mem->map_cap ? mem->map_cap * 2 : 8;
        sim_host_map *p = realloc(mem->maps, ncap * sizeof *p);
        if (!p) {
            SP_ERROR("device %d: host map of 0x%" PRIx64 ": host memory exhausted", mem->device_id,
                     dev_ptr);
            return NULL;
        }
        mem->maps = p;
        mem->map_cap = ncap;
    }
    uint64_t off = dev_ptr - (uint64_t)(uintptr_t)mem->dev_view;
    uint64_t page = mem->page;
    uint64_t first = off & ~(page - 1);
    uint64_t end = (b->off + b->bytes + page - 1) & ~(page - 1);
    size_t len = (size_t)(end - first);
    void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mem->fd, (off_t)first);
    if (base == MAP_FAILED) {
        SP_ERROR("device %d: host map of 0x%" PRIx64 ": mmap of %zu bytes failed: %s",
                 mem->device_id, dev_ptr, len, strerror(errno));
        return NULL;
    }
    void *host = (unsigned char *)base + (off - first);
    mem->maps[mem->map_n++] = (sim_host_map){.dev_ptr = dev_ptr,
                                             .block_off = b->off,
                                             .map_base = base,
                                             .map_len = len,
                                             .host = host,
                                             .refs = 1};
    b->maps++;
    return host;
}

void *sp_device_host_map(sp_device *dev, uint64_t dev_ptr, uint64_t bytes)
{
    if (!dev || !dev->mem)
        return NULL;
    struct sim_memory *mem = dev->mem;
    if (mem->no_host_map) {
        /* Not an error: callers fall back to copies, as on a backend without it. */
        SP_DEBUG("device %d: host map of 0x%" PRIx64 ": this device has no host map",
                 mem->device_id, dev_ptr);
        return NULL;
    }
    if (bytes == 0) {
        SP_ERROR("device %d: host map of 0x%" PRIx64 ": zero bytes", mem->device_id, dev_ptr);
        return NULL;
    }
    pthread_mutex_lock(&mem->lock);
    void *host = NULL;
    range_block *b = sim_memory_range_locked(mem, dev_ptr, bytes, "host map");
    if (b) {
        sim_host_map *m = map_find(mem, dev_ptr);
        if (m) {
            m->refs++;
            host = m->host;
        } else {
            host = map_new_locked(mem, dev_ptr, b);
        }
    }
    pthread_mutex_unlock(&mem->lock);
    return host;
}

static void map_drop_locked(struct sim_memory *mem, sim_host_map *m)
{
    range_block *b = range_alloc_block_at(&mem->ra, m->block_off);
    if (b && b->maps) /* always true: a mapped block cannot be freed */
        b->maps--;
    munmap(m->map_base, m->map_len);
    *m = mem->maps[--mem->map_n];
}

int sp_device_host_unmap(sp_device *dev, uint64_t dev_ptr)
{
    if (!dev || !dev->mem)
        return SP_EINVAL;
    struct sim_memory *mem = dev->mem;
    pthread_mutex_lock(&mem->lock);
    int rc = SP_OK;
    sim_host_map *m = map_find(mem, dev_ptr);
    if (!m) {
        SP_ERROR("device %d: host unmap of 0x%" PRIx64 ": no host map is registered there",
                 mem->device_id, dev_ptr);
        rc = SP_EBADPTR;
    } else if (--m->refs == 0) {
        map_drop_locked(mem, m);
    }
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

void sim_host_map_release_all(struct sim_memory *mem)
{
    if (mem->map_n)
        SP_WARN("device %d: %zu host map(s) still registered at teardown; unmapped", mem->device_id,
                mem->map_n);
    while (mem->map_n) {
        sim_host_map *m = &mem->maps[mem->map_n - 1];
        SP_WARN("device %d:   host map of 0x%" PRIx64 " at %p (%" PRIu32 " reference(s))",
                mem->device_id, m->dev_ptr, m->host, m->refs);
        map_drop_locked(mem, m);
    }
    free(mem->maps);
    mem->maps = NULL;
    mem->map_cap = 0;
}
