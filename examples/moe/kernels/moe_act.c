/* moe kernel 4 (AIV): SiLU in place over expert e's (scalar 0) first
 * counts[e] rows (all T with scalar 1, padded). counts i32 [E] IN,
 * he [1,T,F] INOUT. */
#include <math.h>

#include "moe/moe_view.h"

SP_KERNEL(moe_act)
{
    (void)ctx;
    ex_mat he;
    if (!ex_mat_of(sp_arg_tensor(args, 1), &he))
        return;
    const int64_t n = moe_rows(sp_arg_tensor(args, 0), args[2], he.rows, args[3]);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < he.cols; j++) {
            const float v = EX_AT(he, i, j);
            EX_AT(he, i, j) = v / (1.0f + expf(-v));
        }
}
