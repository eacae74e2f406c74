/* moe kernel 0 (AIV): out = x, the residual the experts add into.
 * x [T,Hd] IN, out [T,Hd] (the run's output, written in place). */
#include "ex_kernel.h"

SP_KERNEL(moe_init)
{
    (void)ctx;
    ex_mat x, out;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &x) || !ex_mat_of(sp_arg_tensor(args, 1), &out) ||
        out.rows != x.rows || out.cols != x.cols)
        return;
    for (int64_t i = 0; i < x.rows; i++)
        for (int64_t j = 0; j < x.cols; j++)
            EX_AT(out, i, j) = EX_AT(x, i, j);
}
