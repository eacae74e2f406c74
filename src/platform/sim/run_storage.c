/* Per-run storage the device keeps between runs: SP_DEVICE_STORAGE_SLOTS
 * retained temp buffers (storage slots) and as many static arenas (heap,
 * shared memory, runtime image; banks). Each run in flight leases a slot
 * and a bank of its own (sp_device_storage_lease), whichever context it
 * belongs to, so two runs never share a buffer — not even runs of two
 * contexts on one device. Storage is reused while a request fits and
 * reallocated only to grow; a failed grow leaves the previous storage as it
 * was. The buffers belong to the device (SIM_OWNER_STORAGE): callers cannot
 * free them, teardown does. */
#include <inttypes.h>

#include "common/log.h"
#include "platform/sim/sim_memory.h"
#include "simpler/status.h"

/* A block about to be replaced must not be host-mapped: freeing it would be
 * refused after the new storage was already handed out. */
static int check_unmapped_locked(struct sim_memory *mem, uint64_t dev, const char *what,
                                 uint32_t index)
{
    uint64_t off;
    if (!dev || !sim_memory_off(mem, dev, &off))
        return SP_OK;
    range_block *b = range_alloc_block_at(&mem->ra, off);
    if (b && b->maps) {
        SP_ERROR("device %d: growing %s %" PRIu32 " refused: its buffer 0x%" PRIx64
                 " is still host-mapped",
                 mem->device_id, what, index, dev);
        return SP_EMAPPED;
    }
    return SP_OK;
}

int sp_device_retained_temp(sp_device *dev, uint32_t slot, uint64_t bytes, uint64_t *dev_out)
{
    if (!dev || !dev->mem || !dev_out || bytes == 0) {
        SP_ERROR("retained temp buffer: %s", !dev_out     ? "NULL output pointer"
                                             : bytes == 0 ? "zero bytes requested"
                                                          : "no device");
        return SP_EINVAL;
    }
    struct sim_memory *mem = dev->mem;
    if (slot >= SP_DEVICE_STORAGE_SLOTS) {
        SP_ERROR("device %d: retained temp buffer: storage slot %" PRIu32
                 " out of range (the device has %d)",
                 mem->device_id, slot, SP_DEVICE_STORAGE_SLOTS);
        return SP_ESLOT;
    }
    pthread_mutex_lock(&mem->lock);
    sim_retained *r = &mem->retained[slot];
    int rc = SP_OK;
    if (r->dev && bytes <= r->bytes) {
        *dev_out = r->dev;
    } else if ((rc = check_unmapped_locked(mem, r->dev, "retained temp buffer of slot", slot)) ==
               SP_OK) {
        /* Allocate before freeing so that a failure keeps the old buffer. */
        uint64_t fresh;
        rc = sim_memory_alloc_locked(mem, bytes, SIM_OWNER_STORAGE, &fresh);
        if (rc == SP_OK) {
            if (r->dev)
                sim_memory_free_locked(mem, r->dev, SIM_OWNER_STORAGE, "retained temp release");
            *r = (sim_retained){.dev = fresh, .bytes = bytes};
            *dev_out = fresh;
        } else {
            SP_ERROR("device %d: a run's staging buffer: growing to %" PRIu64
                     " bytes failed; it keeps its %" PRIu64 "-byte buffer",
                     mem->device_id, bytes, r->bytes);
            SP_DEBUG("device %d: the staging buffer is storage slot %" PRIu32, mem->device_id,
                     slot);
        }
    }
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

/* The three parts of a bank, addressed uniformly. */
typedef struct arena_part {
    uint64_t *addr;
    uint64_t *held;
    uint64_t want;
    const char *name;
} arena_part;

int sp_device_arena_commit(sp_device *dev, uint32_t bank, const sp_arena_request *req,
                           sp_arena *out)
{
    if (!dev || !dev->mem || !req || !out) {
        SP_ERROR("arena commit: %s", !dev || !dev->mem ? "no device" : "NULL request or output");
        return SP_EINVAL;
    }
    struct sim_memory *mem = dev->mem;
    if (bank >= SP_DEVICE_STORAGE_SLOTS) {
        SP_ERROR("device %d: arena commit: arena bank %" PRIu32 " out of range (the device has %d)",
                 mem->device_id, bank, SP_DEVICE_STORAGE_SLOTS);
        return SP_ESLOT;
    }
    pthread_mutex_lock(&mem->lock);
    sp_arena *a = &mem->banks[bank];
    arena_part parts[3] = {
        {&a->heap, &a->size.heap_bytes, req->heap_bytes, "heap"},
        {&a->shm, &a->size.shm_bytes, req->shm_bytes, "shared memory"},
        {&a->image, &a->size.image_bytes, req->image_bytes, "image"},
    };
    uint64_t fresh[3] = {0, 0, 0};
    int rc = SP_OK;
    for (int i = 0; i < 3 && rc == SP_OK; i++)
        if (parts[i].want > *parts[i].held)
            rc = check_unmapped_locked(mem, *parts[i].addr, "arena bank", bank);
    /* Allocate every part that must grow before touching the bank, so a
     * failure frees only what this call allocated. */
    for (int i = 0; i < 3 && rc == SP_OK; i++)
        if (parts[i].want > *parts[i].held)
            rc = sim_memory_alloc_locked(mem, parts[i].want, SIM_OWNER_STORAGE, &fresh[i]);
    if (rc) {
        for (int i = 0; i < 3; i++)
            if (fresh[i])
                sim_memory_free_locked(mem, fresh[i], SIM_OWNER_STORAGE, "arena rollback");
        SP_ERROR("device %d: a run's arena: commit of heap %" PRIu64 ", shm %" PRIu64
                 ", image %" PRIu64 " bytes failed (%s); the bank keeps its previous arena",
                 mem->device_id, req->heap_bytes, req->shm_bytes, req->image_bytes,
                 sp_status_name(rc));
        SP_DEBUG("device %d: the arena is bank %" PRIu32, mem->device_id, bank);
    } else {
        for (int i = 0; i < 3; i++) {
            if (!fresh[i])
                continue;
            if (*parts[i].addr)
                sim_memory_free_locked(mem, *parts[i].addr, SIM_OWNER_STORAGE, "arena release");
            *parts[i].addr = fresh[i];
            *parts[i].held = parts[i].want;
        }
        *out = *a;
    }
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

int sp_device_storage_lease(sp_device *dev, int kind, uint32_t prefer, uint32_t *out)
{
    if (!dev || !dev->mem || !out || (kind != SP_STORAGE_SLOT && kind != SP_STORAGE_BANK))
        return SP_EINVAL;
    struct sim_memory *mem = dev->mem;
    _Static_assert(SP_DEVICE_STORAGE_SLOTS <= 32, "a lease mask is 32 bits");
    int rc = SP_EBUSY;
    pthread_mutex_lock(&mem->lock);
    uint32_t *mask = &mem->leased[kind];
    uint32_t pick =
        prefer < SP_DEVICE_STORAGE_SLOTS && !(*mask & (1u << prefer)) ? prefer : UINT32_MAX;
    /* Else the free one holding the least storage: a context new to the
     * device should not take over another's big buffers. */
    for (uint32_t i = 0; pick == UINT32_MAX && i < SP_DEVICE_STORAGE_SLOTS; i++)
        if (!(*mask & (1u << i)) &&
            (kind == SP_STORAGE_SLOT
                 ? !mem->retained[i].dev
                 : !mem->banks[i].heap && !mem->banks[i].shm && !mem->banks[i].image))
            pick = i;
    for (uint32_t i = 0; pick == UINT32_MAX && i < SP_DEVICE_STORAGE_SLOTS; i++)
        if (!(*mask & (1u << i)))
            pick = i;
    if (pick != UINT32_MAX) {
        *mask |= 1u << pick;
        *out = pick;
        rc = SP_OK;
    }
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

void sp_device_storage_unlease(sp_device *dev, int kind, uint32_t index)
{
    if (!dev || !dev->mem || (kind != SP_STORAGE_SLOT && kind != SP_STORAGE_BANK) ||
        index >= SP_DEVICE_STORAGE_SLOTS)
        return;
    pthread_mutex_lock(&dev->mem->lock);
    dev->mem->leased[kind] &= ~(1u << index);
    pthread_mutex_unlock(&dev->mem->lock);
}

void sim_run_storage_release_all(struct sim_memory *mem)
{
    mem->leased[0] = mem->leased[1] = 0;
    for (int s = 0; s < SP_DEVICE_STORAGE_SLOTS; s++) {
        if (mem->retained[s].dev)
            sim_memory_free_locked(mem, mem->retained[s].dev, SIM_OWNER_STORAGE,
                                   "retained temp release");
        mem->retained[s] = (sim_retained){0};
        uint64_t parts[3] = {mem->banks[s].heap, mem->banks[s].shm, mem->banks[s].image};
        for (int i = 0; i < 3; i++)
            if (parts[i])
                sim_memory_free_locked(mem, parts[i], SIM_OWNER_STORAGE, "arena release");
        mem->banks[s] = (sp_arena){0};
    }
}

int sp_device_probe_storage(sp_device *dev, uint32_t slot, uint32_t bank, uint64_t *retained,
                            uint64_t *retained_bytes, sp_arena *arena)
{
    if (!dev || !dev->mem || !retained || !retained_bytes || !arena)
        return SP_EINVAL;
    if (slot >= SP_DEVICE_STORAGE_SLOTS || bank >= SP_DEVICE_STORAGE_SLOTS)
        return SP_ESLOT;
    struct sim_memory *mem = dev->mem;
    pthread_mutex_lock(&mem->lock);
    *retained = mem->retained[slot].dev;
    *retained_bytes = mem->retained[slot].bytes;
    *arena = mem->banks[bank];
    pthread_mutex_unlock(&mem->lock);
    return SP_OK;
}
