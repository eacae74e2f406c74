/* tp_ffn kernel 0 (AIC): C = A @ B over f32 matrix views. A [M,K] IN,
 * B [K,N] IN, C [M,N] written (fresh or in place). A shape mismatch leaves
 * C unwritten; the golden check names it. */
#include "ex_kernel.h"

SP_KERNEL(tp_matmul)
{
    (void)ctx;
    ex_mat a, b, c;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &a) || !ex_mat_of(sp_arg_tensor(args, 1), &b) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &c) || a.cols != b.rows || c.rows != a.rows ||
        c.cols != b.cols)
        return;
    for (int64_t i = 0; i < c.rows; i++)
        for (int64_t j = 0; j < c.cols; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < a.cols; k++)
                acc += EX_AT(a, i, k) * EX_AT(b, k, j);
            EX_AT(c, i, j) = acc;
        }
}
