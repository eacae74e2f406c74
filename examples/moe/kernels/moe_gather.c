/* moe kernel 2 (AIV): expert e's (scalar 0) tokens gathered into its rows,
 * xe[i] = x[lists_e[i]] for i < counts[e]. x [T,Hd] IN, lists_e i32 [1,T]
 * IN (row e of the router's lists), counts i32 [E] IN, xe [1,T,Hd]
 * (expert e's slice of a buffer, written in place; rows past the count
 * untouched, or zeros with scalar 1, padded, for the MLP kernels that then
 * compute every row). A token id out of range gives a NaN row. */
#include <math.h>

#include "moe/moe_view.h"

SP_KERNEL(moe_gather)
{
    (void)ctx;
    ex_mat x, xe;
    const sp_tensor *lists = sp_arg_tensor(args, 1);
    if (!ex_mat_of(sp_arg_tensor(args, 0), &x) || !ex_mat_of(sp_arg_tensor(args, 3), &xe) ||
        xe.cols != x.cols || xe.rows != x.rows || lists->dtype != SP_DTYPE_I32 ||
        sp_tensor_numel(lists) != x.rows)
        return;
    const int64_t n = moe_count(sp_arg_tensor(args, 2), args[4], xe.rows);
    for (int64_t i = 0; i < n; i++) {
        const int64_t t = moe_i32_at(lists, i);
        for (int64_t j = 0; j < x.cols; j++)
            EX_AT(xe, i, j) = t >= 0 && t < x.rows ? EX_AT(x, t, j) : NAN;
    }
    for (int64_t i = n; args[5] && i < xe.rows; i++)
        for (int64_t j = 0; j < x.cols; j++)
            EX_AT(xe, i, j) = 0.0f;
}
