/* matmul_diamond kernel 0 (AIV): out = sqrt(log(x)) element by element. */
#include <math.h>

#include "ex_kernel.h"

SP_KERNEL(md_sqrt_log)
{
    const sp_tensor *x = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    const float *xp = sp_tensor_data(x);
    float *op = sp_tensor_data(out);
    int64_t lo, hi;
    ex_block_range(ctx, sp_tensor_numel(out), &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        op[ex_elem_offset(out, i)] = sqrtf(logf(xp[ex_elem_offset(x, i)]));
}
