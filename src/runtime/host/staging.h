/* Staging a run's arguments: every tensor argument gets its own range of the
 * pipeline slot's retained temp buffer (copied in unless it is a pure
 * output), except a device-resident one (SP_TENSOR_DEVICE), used in place
 * with no copies and no red zones; and, where the backend can,
 * a host-map so host-side code reads control values without a copy. After
 * the run, outputs are copied back and everything is released. Shared by
 * both runtimes; host-side only, through the run's sp_host_api. */
#ifndef SP_RUNTIME_STAGING_H
#define SP_RUNTIME_STAGING_H

#include <stdbool.h>
#include <stdint.h>

#include "simpler/host_api.h"
#include "simpler/types.h"

typedef struct rt_staged_tensor {
    uint64_t dev;   /* device buffer, 0 if not staged */
    uint64_t bytes; /* buffer size */
    void *host_map; /* host-map of the buffer, NULL: use copies */
    void *host;     /* the caller's data */
    uint8_t dir;
    bool device; /* SP_TENSOR_DEVICE: dev is the caller's device address, not staged */
} rt_staged_tensor;

typedef struct rt_staging {
    uint32_t count;
    rt_staged_tensor t[SP_MAX_RUN_TENSORS];
    sp_args device_args; /* the run's arguments as device tensors */
} rt_staging;

/* Validate `args` and stage them. `map_for_host` asks for host-maps (hbg's
 * host orchestration reads control tensors through them); `redzones` (the
 * checking mode) places each buffer between red zones (redzone.h) and fills
 * them. On failure everything staged so far is released. Returns 0 or a
 * status; `err` says which argument and why. */
int rt_staging_stage(rt_staging *st, const sp_host_api *api, const sp_args *args, bool map_for_host,
                     bool redzones, char *err, size_t err_len);
/* Drop host-maps (before launch, once host code no longer needs them). */
void rt_staging_unmap(rt_staging *st, const sp_host_api *api);
/* Copy OUT / INOUT / OUT_EXISTING tensors back to the caller's memory. */
int rt_staging_copy_back(rt_staging *st, const sp_host_api *api, char *err, size_t err_len);
/* Drop the host-maps; the slot's retained buffer stays for the next run. */
void rt_staging_release(rt_staging *st, const sp_host_api *api);

#endif
