/* control_rw kernel 1 (AIV): cnt[0] = number of elements of y above 0.
 * Its output is what the orchestration reads back to branch on. */
#include "ex_kernel.h"

SP_KERNEL(cr_count)
{
    (void)ctx;
    const sp_tensor *y = sp_arg_tensor(args, 0), *cnt = sp_arg_tensor(args, 1);
    if (cnt->dtype != SP_DTYPE_I64)
        return;
    const float *yp = sp_tensor_data(y);
    int64_t n = sp_tensor_numel(y), c = 0;
    for (int64_t i = 0; i < n; i++)
        c += yp[ex_elem_offset(y, i)] > 0.0f;
    *(int64_t *)sp_tensor_data(cnt) = c;
}
