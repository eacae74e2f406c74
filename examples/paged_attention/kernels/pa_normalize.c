/* paged_attention kernel 4 (AIV): out_b = Acc / L per head, once per batch
 * after its last block. L [H], Acc [H,D], out_b [1,H,D] (a slice of the
 * caller's output). */
#include "ex_kernel.h"

SP_KERNEL(pa_normalize)
{
    (void)ctx;
    ex_mat L, acc, out;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &L) || !ex_mat_of(sp_arg_tensor(args, 1), &acc) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &out) || out.rows != acc.rows || out.cols != acc.cols ||
        L.cols != acc.rows)
        return;
    for (int64_t h = 0; h < out.rows; h++) {
        const float inv = 1.0f / EX_AT(L, 0, h);
        for (int64_t d = 0; d < out.cols; d++)
            EX_AT(out, h, d) = EX_AT(acc, h, d) * inv;
    }
}
