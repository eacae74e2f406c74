/* bgemm kernel 1 (AIV): C_tile += P (scalar 0 = 1: C_tile = P, the first
 * partial product, because the caller's C is never staged in and holds
 * garbage). C_tile is a strided slice of C [G,M,N]. */
#include "ex_kernel.h"

SP_KERNEL(bg_add)
{
    (void)ctx;
    ex_mat p, c;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &p) || !ex_mat_of(sp_arg_tensor(args, 1), &c) ||
        p.rows != c.rows || p.cols != c.cols)
        return;
    const int first = args[2] != 0;
    for (int64_t i = 0; i < c.rows; i++)
        for (int64_t j = 0; j < c.cols; j++)
            EX_AT(c, i, j) = first ? EX_AT(p, i, j) : EX_AT(c, i, j) + EX_AT(p, i, j);
}
