/* control_rw kernel 2 (AIV): y += 1 in place. The orchestration submits it
 * a data-dependent number of times, so a wrong branch shows in y. */
#include "ex_kernel.h"

SP_KERNEL(cr_inc)
{
    const sp_tensor *y = sp_arg_tensor(args, 0);
    float *yp = sp_tensor_data(y);
    int64_t lo, hi;
    ex_block_range(ctx, sp_tensor_numel(y), &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        yp[ex_elem_offset(y, i)] += 1.0f;
}
