/* Kernels that report what the chip did, for the chip and loader tests.
 * Every pointer argument is a device address. */
#include <sched.h>
#include <stdint.h>

#include "chip_probe.h"
#include "simpler/kernel.h"
#include "spin.h"

/* args: [0] uint32 counts[] indexed by task id, [1] the expected core type,
 * [2] uint32 error counter. Counts each dispatch once per run of the kernel. */
SP_KERNEL(chip_count)
{
    uint32_t *counts = (uint32_t *)(uintptr_t)args[0];
    uint32_t *errors = (uint32_t *)(uintptr_t)args[2];
    __atomic_fetch_add(&counts[ctx->task_id], 1, __ATOMIC_RELAXED);
    if (ctx->core_type != args[1] || ctx->block_num != 1 || ctx->block_idx != 0)
        __atomic_fetch_add(errors, 1, __ATOMIC_RELAXED);
}

/* args: [0] chip_ctx_record records[], indexed by task id. */
SP_KERNEL(chip_report_ctx)
{
    chip_ctx_record *r = (chip_ctx_record *)(uintptr_t)args[0] + ctx->task_id;
    r->task_id = ctx->task_id;
    r->block_idx = ctx->block_idx;
    r->block_num = ctx->block_num;
    r->sub_block = ctx->sub_block;
    r->core_type = ctx->core_type;
    r->core_id = ctx->core_id;
    r->cluster_id = ctx->cluster_id;
    r->seen += 1;
}

/* args: [0] uint32 gate, [1] uint32 out. Waits for the gate to open, then
 * stores the gate's value into out: a kernel that stays running on demand. */
SP_KERNEL(chip_gate)
{
    (void)ctx;
    uint32_t *gate = (uint32_t *)(uintptr_t)args[0];
    uint32_t *out = (uint32_t *)(uintptr_t)args[1];
    uint32_t v;
    while ((v = __atomic_load_n(gate, __ATOMIC_ACQUIRE)) == 0)
        sched_yield();
    *out = v;
}

/* args: [0] uint32 log[], [1] uint32 cursor. Appends its task id to the log:
 * the order in which a core ran what was queued on it. */
SP_KERNEL(chip_order)
{
    uint32_t *log = (uint32_t *)(uintptr_t)args[0];
    uint32_t *cursor = (uint32_t *)(uintptr_t)args[1];
    log[__atomic_fetch_add(cursor, 1, __ATOMIC_RELAXED)] = (uint32_t)ctx->task_id;
}

/* args: [0] int32 cpus[], indexed by task id, [1] spin ns. Spins for the
 * given wall time, then records the host CPU it ran on: where the chip's
 * core threads were placed (test_sim_spread). */
SP_KERNEL(chip_spin_cpu)
{
    int32_t *cpus = (int32_t *)(uintptr_t)args[0];
    spin_ns(args[1]);
    cpus[ctx->task_id] = sched_getcpu();
}
