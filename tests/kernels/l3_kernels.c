/* The L3 tests' callable (tests/l3): one orchestration that runs a single
 * AIV task over every run tensor, and the kernels it picks from.
 *
 * l3_one: scalar 0 is the func_id; tensors are passed on with their run
 * directions, scalars 1.. as the task's scalars. Kernels (u64 elements,
 * 1-D views):
 *   0 l3_axpy  [0] src IN, [1] dst INOUT, s a: dst[i] = dst[i] * a + src[i]
 *   1 l3_fill  [0] dst OUT, s v: dst[i] = v + i
 *   2 l3_meet  [0] out OUT, s flag address (u32 in host memory), my bit,
 *              the other's bit, deadline in ms: sets its bit, waits for the
 *              other's; out[0] = 1 if it came before the deadline, else 0
 *   3 l3_noop  nothing */
#include <stdatomic.h>
#include <time.h>

#include "simpler/kernel.h"
#include "simpler/orchestration.h"

SP_ORCH_CONFIG(l3_one_config)
{
    cfg->tensor_count = 0;
    cfg->scalar_count = 1;
}

SP_ORCHESTRATION(l3_one)
{
    sp_tensor t[SP_MAX_TASK_TENSORS];
    sp_task k = sp_task_aiv((int32_t)args->scalars[0]);
    for (uint32_t i = 0; i < args->tensor_count && i < SP_MAX_TASK_TENSORS; i++) {
        t[i] = args->tensors[i];
        int d = args->dirs[i] == SP_OUT ? SP_OUT_EXISTING : args->dirs[i];
        sp_task_arg(&k, &t[i], (sp_dir)d);
    }
    for (uint32_t i = 1; i < args->scalar_count; i++)
        sp_task_scalar(&k, args->scalars[i]);
    sp_submit(o, &k);
}

static uint64_t *elem(const sp_tensor *t, int64_t i)
{
    return (uint64_t *)(uintptr_t)t->addr + t->offset + i * t->strides[0];
}

SP_KERNEL(l3_axpy)
{
    (void)ctx;
    const sp_tensor *src = sp_arg_tensor(args, 0), *dst = sp_arg_tensor(args, 1);
    int64_t n = sp_tensor_numel(dst);
    for (int64_t i = 0; i < n; i++)
        *elem(dst, i) = *elem(dst, i) * args[2] + *elem(src, i);
}

SP_KERNEL(l3_fill)
{
    (void)ctx;
    const sp_tensor *dst = sp_arg_tensor(args, 0);
    int64_t n = sp_tensor_numel(dst);
    for (int64_t i = 0; i < n; i++)
        *elem(dst, i) = args[1] + (uint64_t)i;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

SP_KERNEL(l3_meet)
{
    (void)ctx;
    _Atomic uint32_t *flag = (_Atomic uint32_t *)(uintptr_t)args[1];
    uint32_t mine = (uint32_t)args[2], other = (uint32_t)args[3];
    uint64_t deadline = now_ms() + args[4];
    atomic_fetch_or_explicit(flag, mine, memory_order_acq_rel);
    uint64_t met = 0;
    while (now_ms() < deadline) {
        if (atomic_load_explicit(flag, memory_order_acquire) & other) {
            met = 1;
            break;
        }
    }
    *elem(sp_arg_tensor(args, 0), 0) = met;
}

SP_KERNEL(l3_noop)
{
    (void)args, (void)ctx;
}
