/* decoder kernel 7 (AIV): row b of the attention output, once per sequence
 * after its last block: out_b[h*D + d] = Acc[h,d] / L[h]. L [NH],
 * Acc [NH,D], out_b [1,NH*D] (row b of the layer's attention buffer,
 * written in place). */
#include "ex_kernel.h"

SP_KERNEL(dec_normalize)
{
    (void)ctx;
    ex_mat L, acc, out;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &L) || !ex_mat_of(sp_arg_tensor(args, 1), &acc) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &out) || out.rows != 1 ||
        out.cols != acc.rows * acc.cols || L.cols != acc.rows)
        return;
    for (int64_t h = 0; h < acc.rows; h++) {
        const float inv = 1.0f / EX_AT(L, 0, h);
        for (int64_t d = 0; d < acc.cols; d++)
            EX_AT(out, 0, h * acc.cols + d) = EX_AT(acc, h, d) * inv;
    }
}
