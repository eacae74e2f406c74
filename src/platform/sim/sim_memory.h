/* Private to the sim device memory files (memory.c, host_map.c,
 * run_storage.c): the layout of struct sim_memory and the locked helpers
 * they share. Nothing outside src/platform/sim/ includes this. */
#ifndef SP_PLATFORM_SIM_MEMORY_H
#define SP_PLATFORM_SIM_MEMORY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/sim/range_alloc.h"
#include "platform/sim/sim_device.h"

/* range_block.owner: who may free a block. */
enum {
    SIM_OWNER_USER = 0,    /* sp_device_malloc / callable_upload: the caller frees */
    SIM_OWNER_STORAGE = 1, /* retained temp buffers and arena parts: the device frees */
};

/* One live host map: a MAP_SHARED mapping of the memfd pages that hold
 * [dev_ptr, end of its allocation). */
typedef struct sim_host_map {
    uint64_t dev_ptr;
    uint64_t block_off; /* start of the allocation it lies in */
    void *map_base;     /* what mmap returned (page aligned) */
    size_t map_len;
    void *host; /* map_base + in-page offset: what the caller got */
    uint32_t refs;
} sim_host_map;

typedef struct sim_retained {
    uint64_t dev; /* 0: none yet */
    uint64_t bytes;
} sim_retained;

struct sim_memory {
    int device_id;
    bool no_host_map;
    bool protect;             /* the device view is PROT_NONE outside launches */
    int fd;                   /* the memfd that backs the arena */
    uint64_t bytes;           /* arena size (page multiple) */
    size_t page;              /* host page size */
    unsigned char *dev_view;  /* device addresses = dev_view + offset */
    unsigned char *plat_view; /* private view for copies and memset */

    /* Guards the allocator, the host-map registry and the run storage.
     * None of it is on a per-task path. */
    pthread_mutex_t lock;
    range_alloc ra;
    sim_host_map *maps; /* few at a time: a linear scan is enough */
    size_t map_n, map_cap;
    sim_retained retained[SP_DEVICE_STORAGE_SLOTS];
    sp_arena banks[SP_DEVICE_STORAGE_SLOTS];
    uint32_t leased[2]; /* bit i: slot / bank i is leased to a run in flight */

    /* Open count of the device view (sim_memory_set_device_access; only
     * with `protect`: otherwise the view is always open). */
    pthread_mutex_t access_lock;
    uint32_t access_opens;
};

/* Device address <-> arena offset. sim_memory_off returns false for an
 * address outside the arena. */
static inline uint64_t sim_memory_addr(const struct sim_memory *mem, uint64_t off)
{
    return (uint64_t)(uintptr_t)mem->dev_view + off;
}
static inline bool sim_memory_off(const struct sim_memory *mem, uint64_t addr, uint64_t *off)
{
    uint64_t base = (uint64_t)(uintptr_t)mem->dev_view;
    if (addr < base || addr - base >= mem->bytes)
        return false;
    *off = addr - base;
    return true;
}

/* With mem->lock held. Allocate for `owner`, logging a failure. */
int sim_memory_alloc_locked(struct sim_memory *mem, uint64_t bytes, uint32_t owner,
                            uint64_t *dev_out);
/* With mem->lock held. Free a block `owner` owns; every refusal is logged
 * with `what` naming the caller's operation. */
int sim_memory_free_locked(struct sim_memory *mem, uint64_t dev_ptr, uint32_t owner,
                           const char *what);
/* With mem->lock held. The live block holding [addr, addr+bytes), or NULL
 * after logging an SP_EBOUNDS line that names `what` and the addresses. */
range_block *sim_memory_range_locked(struct sim_memory *mem, uint64_t addr, uint64_t bytes,
                                     const char *what);

/* host_map.c: unmap every live host map, warning about each (teardown). */
void sim_host_map_release_all(struct sim_memory *mem);
/* run_storage.c: free retained buffers and arena banks (teardown). */
void sim_run_storage_release_all(struct sim_memory *mem);

#endif
