/* The kernel ABI: what a core calls. A kernel is a C function in its own
 * shared object, `void ENTRY(const uint64_t *args, const sp_kernel_ctx *ctx)`.
 * A tensor argument is the device address of its sp_tensor descriptor; a
 * scalar argument is its u64 value. Kernels run on the chip and may
 * dereference device addresses directly. */
#ifndef SIMPLER_KERNEL_H
#define SIMPLER_KERNEL_H

#include <stdint.h>

#include "simpler/tensor.h"

typedef enum sp_core_type {
    SP_CORE_AIC = 0, /* cube core: one per cluster */
    SP_CORE_AIV = 1, /* vector core: two per cluster */
} sp_core_type;

/* What a kernel knows about where and as what it runs. */
typedef struct sp_kernel_ctx {
    uint32_t block_idx; /* this block of an SPMD task, 0..block_num-1 */
    uint32_t block_num; /* blocks of the task (1 unless SPMD) */
    uint32_t sub_block; /* lane within a MIX task: 0 AIC, 1 AIV0, 2 AIV1 */
    uint32_t core_type; /* sp_core_type */
    uint32_t core_id;   /* global core index on the chip */
    uint32_t cluster_id;
    uint64_t task_id;
} sp_kernel_ctx;

typedef void (*sp_kernel_fn)(const uint64_t *args, const sp_kernel_ctx *ctx);

/* Define a kernel with the ABI's signature, exported from its shared object. */
#define SP_KERNEL(name)                                                                            \
    __attribute__((visibility("default"))) void name(const uint64_t *args, const sp_kernel_ctx *ctx)

/* The tensor descriptor behind argument `i`. */
static inline const sp_tensor *sp_arg_tensor(const uint64_t *args, int i)
{
    return (const sp_tensor *)(uintptr_t)args[i];
}

/* Address of the first element of a tensor view (device memory). */
static inline void *sp_tensor_data(const sp_tensor *t)
{
    return (char *)(uintptr_t)t->addr + (size_t)t->offset * sp_dtype_size(t->dtype);
}

#endif
