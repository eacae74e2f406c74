/* decoder kernel 9 (AIV): the MLP activation y = x * sigmoid(x) (SiLU),
 * x [B,F] in, y [B,F] fresh. */
#include <math.h>

#include "ex_kernel.h"

SP_KERNEL(dec_silu)
{
    (void)ctx;
    ex_mat x, y;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &x) || !ex_mat_of(sp_arg_tensor(args, 1), &y) ||
        y.rows != x.rows || y.cols != x.cols)
        return;
    for (int64_t i = 0; i < x.rows; i++)
        for (int64_t j = 0; j < x.cols; j++) {
            const float v = EX_AT(x, i, j);
            EX_AT(y, i, j) = v / (1.0f + expf(-v));
        }
}
