/* control_rw kernel 0 (AIV): y = x * coef[0] + coef[1], with coef f32 [2]
 * a tensor the orchestration wrote element by element (sp_tensor_write). */
#include "ex_kernel.h"

SP_KERNEL(cr_affine)
{
    const sp_tensor *x = sp_arg_tensor(args, 0), *coef = sp_arg_tensor(args, 1);
    const sp_tensor *y = sp_arg_tensor(args, 2);
    if (coef->dtype != SP_DTYPE_F32 || sp_tensor_numel(coef) < 2)
        return;
    const float *cp = sp_tensor_data(coef);
    const float k = cp[ex_elem_offset(coef, 0)], off = cp[ex_elem_offset(coef, 1)];
    const float *xp = sp_tensor_data(x);
    float *yp = sp_tensor_data(y);
    int64_t lo, hi;
    ex_block_range(ctx, sp_tensor_numel(y), &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        yp[ex_elem_offset(y, i)] = xp[ex_elem_offset(x, i)] * k + off;
}
