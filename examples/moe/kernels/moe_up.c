/* moe kernel 3 (AIC): expert e's (scalar 0) up projection over its first
 * counts[e] rows (all T with scalar 1, padded), he = xe @ w1_e. xe [1,T,Hd] IN, w1_e [1,Hd,F] IN,
 * counts i32 [E] IN, he [1,T,F] (written in place). */
#include "moe/moe_view.h"

SP_KERNEL(moe_up)
{
    (void)ctx;
    ex_mat xe, w, he;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &xe) || !ex_mat_of(sp_arg_tensor(args, 1), &w) ||
        !ex_mat_of(sp_arg_tensor(args, 3), &he) || w.rows != xe.cols || he.cols != w.cols ||
        he.rows != xe.rows)
        return;
    const int64_t n = moe_rows(sp_arg_tensor(args, 2), args[4], he.rows, args[5]);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < he.cols; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < xe.cols; k++)
                acc += EX_AT(xe, i, k) * EX_AT(w, k, j);
            EX_AT(he, i, j) = acc;
        }
}
