/* Kernels of the predicated-task tests (tests/scene/test_predicates.c). */
#include "simpler/kernel.h"
#include "spin.h"

/* [0] src (i32, IN), [1] flags (i32, OUT_EXISTING): flags = src, the
 * router whose output the predicates read. */
SP_KERNEL(pred_route)
{
    const sp_tensor *src = sp_arg_tensor(args, 0), *dst = sp_arg_tensor(args, 1);
    const int32_t *s = sp_tensor_data(src);
    int32_t *d = sp_tensor_data(dst);
    if (ctx->block_idx != 0)
        return;
    for (int64_t i = 0; i < src->shape[0]; i++)
        d[i] = s[i];
}

/* [0] out (i64, one element, OUT_EXISTING), [1] value: block 0 stores it. */
SP_KERNEL(pred_mark)
{
    if (ctx->block_idx == 0)
        *(int64_t *)sp_tensor_data(sp_arg_tensor(args, 0)) = (int64_t)args[1];
}

/* [0] in (i64, IN), [1] out (i64, OUT_EXISTING): out = 2 * in + 1. */
SP_KERNEL(pred_double)
{
    (void)ctx;
    int64_t v = *(const int64_t *)sp_tensor_data(sp_arg_tensor(args, 0));
    *(int64_t *)sp_tensor_data(sp_arg_tensor(args, 1)) = 2 * v + 1;
}

/* [0] a, [1] b (i64, IN), [2] out (i64, OUT_EXISTING): out = a + b. */
SP_KERNEL(pred_sum)
{
    (void)ctx;
    int64_t a = *(const int64_t *)sp_tensor_data(sp_arg_tensor(args, 0));
    int64_t b = *(const int64_t *)sp_tensor_data(sp_arg_tensor(args, 1));
    *(int64_t *)sp_tensor_data(sp_arg_tensor(args, 2)) = a + b;
}

/* [0] out (i64, OUT_EXISTING), [1] nanoseconds: busy for that long, then
 * stores 1 (the fixed-length task of the device-time measurement). */
SP_KERNEL(pred_spin)
{
    (void)ctx;
    spin_ns(args[1]);
    *(int64_t *)sp_tensor_data(sp_arg_tensor(args, 0)) = 1;
}
