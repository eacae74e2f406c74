/* The axpy test callable's kernels (one source, two kernels):
 *   axpy_scale  out = x * alpha           (scalar 2: f32 bits)
 *   axpy_add    y = y + t + bias          (scalar 2: f32 bits) */
#include <string.h>

#include "axpy_common.h"
#include "simpler/kernel.h"

static float f32_of(uint64_t bits)
{
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

SP_KERNEL(axpy_scale)
{
    (void)ctx;
    const sp_tensor *x = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    const float *xp = sp_tensor_data(x);
    float *op = sp_tensor_data(out);
    float alpha = f32_of(args[2]);
    for (int64_t i = 0; i < sp_tensor_numel(out); i++)
        op[i] = xp[i] * alpha;
}

SP_KERNEL(axpy_add)
{
    (void)ctx;
    const sp_tensor *t = sp_arg_tensor(args, 0), *y = sp_arg_tensor(args, 1);
    const float *tp = sp_tensor_data(t);
    float *yp = sp_tensor_data(y);
    float bias = f32_of(args[2]);
    for (int64_t i = 0; i < sp_tensor_numel(y); i++)
        yp[i] = yp[i] + tp[i] + bias;
}
