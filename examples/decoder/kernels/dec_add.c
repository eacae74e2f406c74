/* decoder kernel 8 (AIV): the residual add C = A + B, all [B,Hd] (or
 * [1,B,Hd] slices). C is fresh or an existing buffer (the layer's output). */
#include "ex_kernel.h"

SP_KERNEL(dec_add)
{
    (void)ctx;
    ex_mat a, b, c;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &a) || !ex_mat_of(sp_arg_tensor(args, 1), &b) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &c) || a.rows != b.rows || a.cols != b.cols ||
        c.rows != a.rows || c.cols != a.cols)
        return;
    for (int64_t i = 0; i < c.rows; i++)
        for (int64_t j = 0; j < c.cols; j++)
            EX_AT(c, i, j) = EX_AT(a, i, j) + EX_AT(b, i, j);
}
