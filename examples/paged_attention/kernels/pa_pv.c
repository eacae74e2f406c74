/* paged_attention kernel 2 (AIC): O = P @ V_blk over the first n (scalar 0)
 * rows of the value block only: rows past n were never written and may hold
 * anything, even NaN, which 0 * NaN would spread. P [H,bs], V_blk [1,bs,D]
 * (a slice of the value cache), O [H,D] fresh. */
#include "ex_kernel.h"

SP_KERNEL(pa_pv)
{
    (void)ctx;
    ex_mat p, v, o;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &p) || !ex_mat_of(sp_arg_tensor(args, 1), &v) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &o) || p.cols != v.rows || o.rows != p.rows ||
        o.cols != v.cols)
        return;
    const int64_t n = (int64_t)args[3];
    for (int64_t h = 0; h < o.rows; h++)
        for (int64_t d = 0; d < o.cols; d++) {
            float acc = 0.0f;
            for (int64_t j = 0; j < n && j < p.cols; j++)
                acc += EX_AT(p, h, j) * EX_AT(v, j, d);
            EX_AT(o, h, d) = acc;
        }
}
