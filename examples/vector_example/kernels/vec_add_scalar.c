/* vector_example kernel 1 (AIV): out = x + s with s an f32 scalar
 * argument; SPMD blocks split the elements. */
#include "ex_kernel.h"

SP_KERNEL(vec_add_scalar)
{
    const sp_tensor *x = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    const float s = ex_arg_f32(args, 2);
    const float *xp = sp_tensor_data(x);
    float *op = sp_tensor_data(out);
    int64_t lo, hi;
    ex_block_range(ctx, sp_tensor_numel(out), &lo, &hi);
    if (sp_tensor_is_contiguous(x) && sp_tensor_is_contiguous(out)) {
        for (int64_t i = lo; i < hi; i++)
            op[i] = xp[i] + s;
        return;
    }
    for (int64_t i = lo; i < hi; i++)
        op[ex_elem_offset(out, i)] = xp[ex_elem_offset(x, i)] + s;
}
