/* decoder kernel 1 (AIC): C = A @ W. A [B,K] (activations), W [1,K,N] (the
 * layer's slice of a weight tensor), C [B,N] fresh. Used for the QKV
 * projection, the output projection and the MLP's up and down matmuls. */
#include "ex_kernel.h"

SP_KERNEL(dec_matmul)
{
    (void)ctx;
    ex_mat a, w, c;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &a) || !ex_mat_of(sp_arg_tensor(args, 1), &w) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &c) || a.cols != w.rows || c.rows != a.rows ||
        c.cols != w.cols)
        return;
    for (int64_t i = 0; i < c.rows; i++)
        for (int64_t j = 0; j < c.cols; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < a.cols; k++)
                acc += EX_AT(a, i, k) * EX_AT(w, k, j);
            EX_AT(c, i, j) = acc;
        }
}
