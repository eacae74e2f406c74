/* matmul_diamond kernel 2 (AIV): out = exp(x + y) element by element. */
#include <math.h>

#include "ex_kernel.h"

SP_KERNEL(md_add_exp)
{
    const sp_tensor *x = sp_arg_tensor(args, 0), *y = sp_arg_tensor(args, 1);
    const sp_tensor *out = sp_arg_tensor(args, 2);
    const float *xp = sp_tensor_data(x), *yp = sp_tensor_data(y);
    float *op = sp_tensor_data(out);
    int64_t lo, hi;
    ex_block_range(ctx, sp_tensor_numel(out), &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        op[ex_elem_offset(out, i)] = expf(xp[ex_elem_offset(x, i)] + yp[ex_elem_offset(y, i)]);
}
