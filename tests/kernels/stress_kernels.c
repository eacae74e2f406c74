/* Kernels for the scheduling stress tests (tests/scene/test_tmr_stress.c)
 * and the orchestration-thread tests: u64 tensors, one job each. */
#include "simpler/kernel.h"
#include "simpler/tensor.h"
#include "spin.h"

/* args: [0] tensor: element (block * 3 + lane) mod numel := task id + 1.
 * Every block and MIX lane writes its own element. */
SP_KERNEL(stress_mark)
{
    const sp_tensor *t = sp_arg_tensor(args, 0);
    uint64_t *d = sp_tensor_data(t);
    int64_t n = sp_tensor_numel(t);
    d[(int64_t)(ctx->block_idx * 3 + ctx->sub_block) % n] = ctx->task_id + 1;
}

/* args: [0] tensor (read, untouched), [1] microseconds to stay busy. */
SP_KERNEL(stress_wait)
{
    (void)ctx;
    spin_ns(args[1] * 1000);
}

/* args: [0], [1] tensors, [2] value: every element of both := value. */
SP_KERNEL(stress_fill2)
{
    (void)ctx;
    for (int k = 0; k < 2; k++) {
        const sp_tensor *t = sp_arg_tensor(args, k);
        uint64_t *d = sp_tensor_data(t);
        for (int64_t i = 0; i < sp_tensor_numel(t); i++)
            d[i] = args[2];
    }
}

/* args: [0] tensor, [1] value: every element := value. */
SP_KERNEL(stress_fill)
{
    (void)ctx;
    const sp_tensor *t = sp_arg_tensor(args, 0);
    uint64_t *d = sp_tensor_data(t);
    for (int64_t i = 0; i < sp_tensor_numel(t); i++)
        d[i] = args[1];
}

/* args: [0] tensor, [1] value: every element += value. */
SP_KERNEL(stress_add)
{
    (void)ctx;
    const sp_tensor *t = sp_arg_tensor(args, 0);
    uint64_t *d = sp_tensor_data(t);
    for (int64_t i = 0; i < sp_tensor_numel(t); i++)
        d[i] += args[1];
}

/* args: [0] source, [1] destination: element i of [1] := element i of [0]. */
SP_KERNEL(stress_copy)
{
    (void)ctx;
    const sp_tensor *s = sp_arg_tensor(args, 0);
    const sp_tensor *t = sp_arg_tensor(args, 1);
    const uint64_t *from = sp_tensor_data(s);
    uint64_t *to = sp_tensor_data(t);
    int64_t n = sp_tensor_numel(s) < sp_tensor_numel(t) ? sp_tensor_numel(s) : sp_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        to[i] = from[i];
}
