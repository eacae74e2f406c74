/* vector_example kernel 0 (AIV): out = x + y, element by element over
 * same-shaped views; SPMD blocks split the elements. */
#include "ex_kernel.h"

SP_KERNEL(vec_add)
{
    const sp_tensor *x = sp_arg_tensor(args, 0), *y = sp_arg_tensor(args, 1);
    const sp_tensor *out = sp_arg_tensor(args, 2);
    const float *xp = sp_tensor_data(x), *yp = sp_tensor_data(y);
    float *op = sp_tensor_data(out);
    int64_t lo, hi;
    ex_block_range(ctx, sp_tensor_numel(out), &lo, &hi);
    if (sp_tensor_is_contiguous(x) && sp_tensor_is_contiguous(y) && sp_tensor_is_contiguous(out)) {
        for (int64_t i = lo; i < hi; i++)
            op[i] = xp[i] + yp[i];
        return;
    }
    for (int64_t i = lo; i < hi; i++)
        op[ex_elem_offset(out, i)] = xp[ex_elem_offset(x, i)] + yp[ex_elem_offset(y, i)];
}
