/* A callable registered on a device: its validated blob (copied), the
 * orchestration loaded on the host (hbg) or ready to run on the chip (tmr),
 * every kernel loaded onto the device, and the device-memory kernel table
 * that schedulers index. Shared by both runtimes; it reaches the device
 * through the host API only (kernel_load / unload, malloc, copy, free). */
#ifndef SP_RUNTIME_LOADED_CALLABLE_H
#define SP_RUNTIME_LOADED_CALLABLE_H

#include <stdint.h>

#include "common/shared_object.h"
#include "simpler/callable.h"
#include "simpler/host_api.h"
#include "simpler/orchestration.h"

#define SP_FUNC_ID_DIRECT 1024 /* func_ids below this resolve by table */

typedef struct rt_loaded_kernel {
    int32_t func_id;
    uint32_t core_type;
    const char *entry;      /* points into the blob copy */
    const char *signature;  /* "" = unchecked */
    sp_kernel_image *image; /* the platform's loaded kernel */
    sp_kernel_fn fn;
} rt_loaded_kernel;

typedef struct rt_loaded_callable {
    uint32_t id;
    void *blob; /* our copy; the view points into it */
    sp_callable_view view;
    sp__shared_object *orch;
    sp_orch_entry_fn orch_entry;
    sp_orch_config_fn orch_config; /* NULL if none */
    sp_orch_config config;         /* what the config function reported */
    uint32_t kernel_count;
    rt_loaded_kernel *kernels;
    int16_t by_func_id[SP_FUNC_ID_DIRECT]; /* kernel index + 1, 0 = none */
    uint64_t kernel_table;                 /* device address of sp_kernel_fn[kernel_count] */
} rt_loaded_callable;

/* Validate `blob`, load its orchestration and kernels, upload the kernel
 * table, all through `api` (a value bound outside a run will do:
 * SP_HOST_API_NO_RUN). Returns 0 or a status, with the reason in `err`. */
int rt_loaded_callable_load(const sp_host_api *api, uint32_t id, const void *blob, size_t size,
                            rt_loaded_callable **out, char *err, size_t err_len);
/* Free the kernel table, unload the kernels and the orchestration, through
 * the `api` it was loaded with. */
void rt_loaded_callable_unload(const sp_host_api *api, rt_loaded_callable *lc);
/* Kernel index of `func_id`, or -1 if the callable has none. */
int rt_loaded_callable_kernel(const rt_loaded_callable *lc, int32_t func_id);

#endif
