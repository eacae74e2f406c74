/* paged_attention kernel 0 (AIC): S = scale * q @ K_blk^T for one batch and
 * one KV block. q [1,H,D] and K_blk [1,bs,D] are slices of the query and
 * key cache; S [H,bs] is fresh. Only the first n (scalar 1) keys of the
 * block are valid; the rest of S is set to 0 and ignored downstream.
 * Scalar 0 is the f32 scale. */
#include "ex_kernel.h"

SP_KERNEL(pa_qk)
{
    (void)ctx;
    ex_mat q, k, s;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &q) || !ex_mat_of(sp_arg_tensor(args, 1), &k) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &s) || q.cols != k.cols || s.rows != q.rows ||
        s.cols != k.rows)
        return;
    const float scale = ex_arg_f32(args, 3);
    const int64_t n = (int64_t)args[4];
    for (int64_t h = 0; h < s.rows; h++)
        for (int64_t j = 0; j < s.cols; j++) {
            float acc = 0.0f;
            if (j < n)
                for (int64_t d = 0; d < q.cols; d++)
                    acc += EX_AT(q, h, d) * EX_AT(k, j, d);
            EX_AT(s, h, j) = acc * scale;
        }
}
