/* The sim device's memory: one arena backed by a memfd, mapped twice.
 *   device view   the device addresses. Kernels on core threads dereference
 *                 them during a launch; at any other time the view is
 *                 PROT_NONE, so host code that uses a device address instead
 *                 of a host map or a copy faults at once.
 *   platform view a private read-write mapping that copies and memset use
 *                 (a large copy into never-written pages writes the memfd
 *                 instead: see copy_in_large).
 * Host maps (host_map.c) are further mappings of the same pages. This file
 * owns the arena, the allocator glue, copies and memset. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "platform/sim/sim_memory.h"
#include "simpler/status.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17; older kernels take it as a hint */
#endif

/* Device views live at 32 TiB + id * 1 TiB: far above the executable, the
 * heap and the usual mmap area (0x55.., 0x7f..), so a device address never
 * looks like, or aliases, a host staging address. Above ASan's shadow too. */
#define SIM_DEVICE_VIEW_BASE (32ull << 40)
#define SIM_DEVICE_VIEW_STRIDE (1ull << 40)

#if defined(__SANITIZE_THREAD__)
#define SIM_FIXED_DEVICE_VIEW 0 /* TSan owns fixed address ranges; let the kernel choose */
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SIM_FIXED_DEVICE_VIEW 0
#endif
#endif
#ifndef SIM_FIXED_DEVICE_VIEW
#define SIM_FIXED_DEVICE_VIEW 1
#endif

static void *map_device_view(int fd, int device_id, uint64_t bytes, int prot)
{
    if (SIM_FIXED_DEVICE_VIEW && bytes <= SIM_DEVICE_VIEW_STRIDE) {
        void *hint = (void *)(uintptr_t)(SIM_DEVICE_VIEW_BASE +
                                         (uint64_t)device_id * SIM_DEVICE_VIEW_STRIDE);
        void *p = mmap(hint, bytes, prot, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
        if (p != MAP_FAILED)
            return p;
        SP_DEBUG("device %d: device view not placed at %p (%s); letting the kernel choose",
                 device_id, hint, strerror(errno));
    }
    return mmap(NULL, bytes, prot, MAP_SHARED, fd, 0);
}

int sim_memory_create(sp_device *dev, uint64_t bytes, bool no_host_map, bool protect,
                      struct sim_memory **out)
{
    int id = dev ? dev->id : -1;
    *out = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    if (bytes == 0 || bytes > (UINT64_MAX >> 2)) {
        SP_ERROR("device %d: device memory size %" PRIu64 " bytes is out of range", id, bytes);
        return SP_EINVAL;
    }
    bytes = (bytes + (uint64_t)page - 1) & ~((uint64_t)page - 1);

    struct sim_memory *mem = calloc(1, sizeof *mem);
    if (!mem)
        return SP_ENOMEM;
    mem->device_id = id;
    mem->no_host_map = no_host_map;
    mem->protect = protect;
    mem->bytes = bytes;
    mem->page = (size_t)page;
    mem->fd = -1;
    mem->dev_view = MAP_FAILED;
    mem->plat_view = MAP_FAILED;
    pthread_mutex_init(&mem->lock, NULL);
    pthread_mutex_init(&mem->access_lock, NULL);

    int rc = SP_ESYS;
    const char *step;
    char name[32];
    snprintf(name, sizeof name, "simpler-dev%d", id);
    step = "memfd_create";
    mem->fd = memfd_create(name, MFD_CLOEXEC);
    if (mem->fd < 0)
        goto fail;
    step = "ftruncate";
    if (ftruncate(mem->fd, (off_t)bytes) != 0)
        goto fail;
    step = "mmap (device view)";
    /* Protected, the view opens for launches only; else it stays open. */
    mem->dev_view =
        map_device_view(mem->fd, id, bytes, protect ? PROT_NONE : PROT_READ | PROT_WRITE);
    if (mem->dev_view == MAP_FAILED)
        goto fail;
    step = "mmap (platform view)";
    mem->plat_view = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mem->fd, 0);
    if (mem->plat_view == MAP_FAILED)
        goto fail;
    rc = range_alloc_init(&mem->ra, bytes);
    if (rc) {
        step = "range_alloc_init";
        errno = ENOMEM;
        goto fail;
    }
    SP_DEBUG("device %d: %" PRIu64 " bytes of device memory at device address %p", id, bytes,
             (void *)mem->dev_view);
    *out = mem;
    return SP_OK;

fail:
    SP_ERROR("device %d: creating %" PRIu64 " bytes of device memory failed in %s: %s", id, bytes,
             step, strerror(errno));
    if (mem->plat_view != MAP_FAILED)
        munmap(mem->plat_view, bytes);
    if (mem->dev_view != MAP_FAILED)
        munmap(mem->dev_view, bytes);
    if (mem->fd >= 0)
        close(mem->fd);
    pthread_mutex_destroy(&mem->access_lock);
    pthread_mutex_destroy(&mem->lock);
    free(mem);
    return rc;
}

void sim_memory_destroy(struct sim_memory *mem)
{
    if (!mem)
        return;
    pthread_mutex_lock(&mem->lock);
    sim_host_map_release_all(mem);
    sim_run_storage_release_all(mem);
    /* What is left was allocated by a caller and never freed. */
    if (mem->ra.live_n) {
        SP_WARN("device %d: %zu device allocation(s), %" PRIu64
                " bytes, still live at teardown; released",
                mem->device_id, mem->ra.live_n, mem->ra.committed);
        for (size_t i = 0; i < mem->ra.live_n && i < 8; i++)
            SP_WARN("device %d:   leaked 0x%" PRIx64 " (%" PRIu64 " bytes)", mem->device_id,
                    sim_memory_addr(mem, mem->ra.live[i].off), mem->ra.live[i].bytes);
    }
    range_alloc_fini(&mem->ra);
    pthread_mutex_unlock(&mem->lock);
    munmap(mem->plat_view, mem->bytes);
    munmap(mem->dev_view, mem->bytes);
    close(mem->fd);
    pthread_mutex_destroy(&mem->access_lock);
    pthread_mutex_destroy(&mem->lock);
    free(mem);
}

void sim_memory_set_device_access(struct sim_memory *mem, bool open)
{
    if (!mem || !mem->protect)
        return; /* an open view: no page-table work per launch */
    /* Counted, so nested or overlapping opens (several launch phases) keep
     * the view open until the last close; an unmatched close is ignored. */
    pthread_mutex_lock(&mem->access_lock);
    int prot = -1;
    if (open) {
        if (mem->access_opens++ == 0)
            prot = PROT_READ | PROT_WRITE;
    } else if (mem->access_opens == 0) {
        SP_WARN("device %d: device view closed more often than opened; ignored", mem->device_id);
    } else if (--mem->access_opens == 0) {
        prot = PROT_NONE;
    }
    if (prot != -1 && mprotect(mem->dev_view, mem->bytes, prot) != 0)
        SP_ERROR("device %d: mprotect of the device view failed: %s", mem->device_id,
                 strerror(errno));
    pthread_mutex_unlock(&mem->access_lock);
}

uint64_t sp_device_memory_bytes(const sp_device *dev)
{
    return dev && dev->mem ? dev->mem->bytes : 0;
}

uint64_t sp_device_committed_bytes(const sp_device *dev)
{
    if (!dev || !dev->mem)
        return 0;
    pthread_mutex_lock(&dev->mem->lock);
    uint64_t c = dev->mem->ra.committed;
    pthread_mutex_unlock(&dev->mem->lock);
    return c;
}

int sim_memory_alloc_locked(struct sim_memory *mem, uint64_t bytes, uint32_t owner,
                            uint64_t *dev_out)
{
    uint64_t off;
    int rc = range_alloc_take(&mem->ra, bytes, owner, &off);
    if (rc == SP_EDEVMEM) {
        SP_ERROR("device %d: out of device memory: %" PRIu64 " bytes requested, %" PRIu64
                 " of %" PRIu64 " committed, largest free range %" PRIu64 " bytes",
                 mem->device_id, bytes, mem->ra.committed, mem->bytes,
                 range_alloc_largest_free(&mem->ra));
        return rc;
    }
    if (rc) {
        SP_ERROR("device %d: host memory exhausted tracking a %" PRIu64 "-byte allocation",
                 mem->device_id, bytes);
        return rc;
    }
    *dev_out = sim_memory_addr(mem, off);
    return SP_OK;
}

int sim_memory_free_locked(struct sim_memory *mem, uint64_t dev_ptr, uint32_t owner,
                           const char *what)
{
    uint64_t off;
    if (!sim_memory_off(mem, dev_ptr, &off)) {
        SP_ERROR("device %d: %s of 0x%" PRIx64 ": not a device address (arena 0x%" PRIx64
                 "..0x%" PRIx64 ")",
                 mem->device_id, what, dev_ptr, sim_memory_addr(mem, 0),
                 sim_memory_addr(mem, mem->bytes));
        return SP_EBADPTR;
    }
    range_block *b = range_alloc_block_at(&mem->ra, off);
    if (b && b->owner != owner) {
        SP_ERROR("device %d: %s of 0x%" PRIx64 ": the buffer belongs to the device's run "
                 "storage, not to the caller",
                 mem->device_id, what, dev_ptr);
        return SP_EBADPTR;
    }
    if (b && b->maps) {
        SP_ERROR("device %d: %s of 0x%" PRIx64 " refused: %" PRIu32
                 " host map(s) still registered in it",
                 mem->device_id, what, dev_ptr, b->maps);
        return SP_EMAPPED;
    }
    int rc = range_alloc_release(&mem->ra, off);
    if (rc == SP_EDOUBLEFREE)
        SP_ERROR("device %d: %s of 0x%" PRIx64 ": double free (already freed)", mem->device_id,
                 what, dev_ptr);
    else if (rc == SP_EBADPTR)
        SP_ERROR("device %d: %s of 0x%" PRIx64 ": not the start of a live allocation",
                 mem->device_id, what, dev_ptr);
    else if (rc)
        SP_ERROR("device %d: %s of 0x%" PRIx64 ": host memory exhausted", mem->device_id, what,
                 dev_ptr);
    return rc;
}

range_block *sim_memory_range_locked(struct sim_memory *mem, uint64_t addr, uint64_t bytes,
                                     const char *what)
{
    uint64_t off;
    range_block *b = NULL;
    if (sim_memory_off(mem, addr, &off)) {
        b = range_alloc_block_containing(&mem->ra, off, bytes);
        if (b)
            return b;
        b = range_alloc_block_before(&mem->ra, off);
    }
    if (b)
        SP_ERROR("device %d: %s [0x%" PRIx64 ", +%" PRIu64 ") is not inside one live "
                 "allocation (nearest below: [0x%" PRIx64 ", +%" PRIu64 "))",
                 mem->device_id, what, addr, bytes, sim_memory_addr(mem, b->off), b->bytes);
    else
        SP_ERROR("device %d: %s [0x%" PRIx64 ", +%" PRIu64 ") is not inside any live "
                 "allocation",
                 mem->device_id, what, addr, bytes);
    return NULL;
}

int sp_device_malloc(sp_device *dev, uint64_t bytes, uint64_t *dev_out)
{
    if (!dev || !dev->mem || !dev_out || bytes == 0) {
        SP_ERROR("device malloc: %s", !dev_out     ? "NULL output pointer"
                                      : bytes == 0 ? "zero-byte allocation"
                                                   : "no device");
        return SP_EINVAL;
    }
    struct sim_memory *mem = dev->mem;
    pthread_mutex_lock(&mem->lock);
    int rc = sim_memory_alloc_locked(mem, bytes, SIM_OWNER_USER, dev_out);
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

int sp_device_free(sp_device *dev, uint64_t dev_ptr)
{
    if (!dev || !dev->mem)
        return SP_EINVAL;
    struct sim_memory *mem = dev->mem;
    pthread_mutex_lock(&mem->lock);
    int rc = sim_memory_free_locked(mem, dev_ptr, SIM_OWNER_USER, "free");
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

/* Platform-view address of [addr, addr+bytes) after checking that it lies in
 * one live allocation, or NULL (logged). The lock is dropped before the
 * caller touches the bytes: the arena stays mapped for the device's life, so
 * a racing free cannot fault a copy, and large copies must not serialize. */
static unsigned char *checked_platform_ptr(struct sim_memory *mem, uint64_t addr, uint64_t bytes,
                                           const char *what)
{
    pthread_mutex_lock(&mem->lock);
    range_block *b = sim_memory_range_locked(mem, addr, bytes, what);
    pthread_mutex_unlock(&mem->lock);
    return b ? mem->plat_view + (addr - (uint64_t)(uintptr_t)mem->dev_view) : NULL;
}

int sp_device_memset(sp_device *dev, uint64_t dev_ptr, int value, uint64_t bytes)
{
    if (!dev || !dev->mem)
        return SP_EINVAL;
    unsigned char *p = checked_platform_ptr(dev->mem, dev_ptr, bytes, "memset");
    if (!p)
        return SP_EBOUNDS;
    memset(p, (unsigned char)value, bytes);
    return SP_OK;
}

/* Large host->device copies. A page the arena has never held costs a write
 * fault through the platform view, and the kernel zeroes it before memcpy
 * overwrites it; pwrite() into the memfd allocates the page and fills it from
 * the source in one step, with no fault and no zeroing (128 MiB on the 2-CPU
 * test VM: ~40 % less CPU, mapping included). Pages already present are copied
 * through the mapping, which is cheaper than pwrite once they are mapped.
 * (ftruncate at creation checked the file-size limit, so a pwrite inside the
 * arena cannot raise SIGXFSZ.) */
#define SIM_COPY_FILE_MIN (256u << 10)

/* pwrite() all of [src, src+bytes) to arena offset `off`; 0 or errno. */
static int write_file(int fd, uint64_t off, const unsigned char *src, uint64_t bytes)
{
    while (bytes) {
        size_t chunk = bytes > (1u << 30) ? (1u << 30) : (size_t)bytes;
        ssize_t n = pwrite(fd, src, chunk, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        src += n;
        off += (uint64_t)n;
        bytes -= (uint64_t)n;
    }
    return 0;
}

static int copy_in_large(struct sim_memory *mem, unsigned char *dst, const unsigned char *src,
                         uint64_t bytes)
{
    uint64_t off = (uint64_t)(dst - mem->plat_view);
    /* The hole (never-written pages) that starts the range, if any. SEEK_DATA
     * answers without walking the range; data further in is copied through
     * the mapping, so a range reused from freed storage is never worse off. */
    off_t data = lseek(mem->fd, (off_t)off, SEEK_DATA);
    uint64_t hole = 0;
    if (data >= 0)
        hole = (uint64_t)data > off ? (uint64_t)data - off : 0;
    else if (errno == ENXIO) /* no data at or after off */
        hole = bytes;
    if (hole > bytes)
        hole = bytes;
    if (hole) {
        int err = write_file(mem->fd, off, src, hole);
        if (err) {
            SP_ERROR("device %d: copy of %" PRIu64 " bytes to device offset 0x%" PRIx64
                     " failed: %s",
                     mem->device_id, hole, off, strerror(err));
            return err == ENOMEM || err == ENOSPC ? SP_ENOMEM : SP_ESYS;
        }
        /* Map the new pages into the platform view: a read fault maps a
         * batch of present pages read-only (fault-around), so the copy back
         * and the next run's copy in find them mapped instead of taking a
         * write fault per page. A load per page costs less than
         * MADV_POPULATE_READ, which takes a reference on every page. */
        uint64_t first = off & ~((uint64_t)mem->page - 1);
        for (uint64_t o = first; o < off + hole; o += mem->page)
            (void)*(volatile const unsigned char *)(mem->plat_view + o);
    }
    memcpy(dst + hole, src + hole, bytes - hole);
    return SP_OK;
}

int sp_device_copy_to(sp_device *dev, uint64_t dev_dst, const void *src, uint64_t bytes)
{
    if (!dev || !dev->mem || !src) {
        SP_ERROR("copy to device 0x%" PRIx64 ": %s", dev_dst,
                 !src ? "NULL host source" : "no device");
        return SP_EINVAL;
    }
    unsigned char *p = checked_platform_ptr(dev->mem, dev_dst, bytes, "copy to device");
    if (!p)
        return SP_EBOUNDS;
    if (bytes >= SIM_COPY_FILE_MIN)
        return copy_in_large(dev->mem, p, src, bytes);
    memcpy(p, src, bytes);
    return SP_OK;
}

int sp_device_copy_from(sp_device *dev, void *dst, uint64_t dev_src, uint64_t bytes)
{
    if (!dev || !dev->mem || !dst) {
        SP_ERROR("copy from device 0x%" PRIx64 ": %s", dev_src,
                 !dst ? "NULL host destination" : "no device");
        return SP_EINVAL;
    }
    unsigned char *p = checked_platform_ptr(dev->mem, dev_src, bytes, "copy from device");
    if (!p)
        return SP_EBOUNDS;
    memcpy(dst, p, bytes);
    return SP_OK;
}
