/* Quickstart kernels: element-wise over one tile. Each kernel reads its
 * tensors through their descriptors (device addresses) and may be run as
 * several SPMD blocks, each taking a share of the elements. */
#include "simpler/kernel.h"

/* Elements [begin, end) of n that block `ctx->block_idx` handles. */
static void block_range(int64_t n, const sp_kernel_ctx *ctx, int64_t *begin, int64_t *end)
{
    int64_t per = (n + ctx->block_num - 1) / ctx->block_num;
    *begin = per * ctx->block_idx;
    *end = *begin + per < n ? *begin + per : n;
}

/* out = x * s  (args: x IN, out OUT, s scalar f32 bits) */
SP_KERNEL(qs_scale)
{
    const sp_tensor *x = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    uint32_t bits = (uint32_t)args[2];
    float s;
    __builtin_memcpy(&s, &bits, sizeof s);
    const float *xp = sp_tensor_data(x);
    float *op = sp_tensor_data(out);
    int64_t b, e;
    block_range(x->shape[0], ctx, &b, &e);
    for (int64_t i = b; i < e; i++)
        op[i] = xp[i] * s;
}

/* z = a + b  (args: a IN, b IN, z OUT_EXISTING) */
SP_KERNEL(qs_add)
{
    const sp_tensor *a = sp_arg_tensor(args, 0), *bt = sp_arg_tensor(args, 1);
    const sp_tensor *z = sp_arg_tensor(args, 2);
    const float *ap = sp_tensor_data(a), *bp = sp_tensor_data(bt);
    float *zp = sp_tensor_data(z);
    int64_t b, e;
    block_range(a->shape[0], ctx, &b, &e);
    for (int64_t i = b; i < e; i++)
        zp[i] = ap[i] + bp[i];
}
