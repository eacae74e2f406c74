/* Sample kernels for the simpler_add_callable test: one source, two entries. */
#include "simpler/kernel.h"

/* args: [0] x, [1] y, [2] z, all f32 of one element. */
SP_KERNEL(sample_add)
{
    (void)ctx;
    const float *x = sp_tensor_data(sp_arg_tensor(args, 0));
    const float *y = sp_tensor_data(sp_arg_tensor(args, 1));
    float *z = sp_tensor_data(sp_arg_tensor(args, 2));
    z[0] = x[0] + y[0];
}

/* args: [0] x (inout), [1] f32 scale bits. */
SP_KERNEL(sample_scale)
{
    (void)ctx;
    float *x = sp_tensor_data(sp_arg_tensor(args, 0));
    union {
        uint32_t bits;
        float f;
    } s = {.bits = (uint32_t)args[1]};
    x[0] *= s.f;
}
