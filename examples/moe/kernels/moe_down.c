/* moe kernel 5 (AIC): expert e's (scalar 0) down projection over its first
 * counts[e] rows (all T with scalar 1, padded), ye = he @ w2_e. he [1,T,F] IN, w2_e [1,F,Hd] IN,
 * counts i32 [E] IN, ye [1,T,Hd] (written in place). */
#include "moe/moe_view.h"

SP_KERNEL(moe_down)
{
    (void)ctx;
    ex_mat he, w, ye;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &he) || !ex_mat_of(sp_arg_tensor(args, 1), &w) ||
        !ex_mat_of(sp_arg_tensor(args, 3), &ye) || w.rows != he.cols || ye.cols != w.cols ||
        ye.rows != he.rows)
        return;
    const int64_t n = moe_rows(sp_arg_tensor(args, 2), args[4], ye.rows, args[5]);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < ye.cols; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < he.cols; k++)
                acc += EX_AT(he, i, k) * EX_AT(w, k, j);
            EX_AT(ye, i, j) = acc;
        }
}
