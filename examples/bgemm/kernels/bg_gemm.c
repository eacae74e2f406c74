/* bgemm kernel 0 (AIC): P = A_tile @ B_tile. The tiles are strided slices
 * of the batched A [G,M,K] and B [G,K,N] (leading dimension 1); P is a
 * fresh contiguous tile. */
#include "ex_kernel.h"

SP_KERNEL(bg_gemm)
{
    (void)ctx;
    ex_mat a, b, p;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &a) || !ex_mat_of(sp_arg_tensor(args, 1), &b) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &p) || a.cols != b.rows || p.rows != a.rows ||
        p.cols != b.cols)
        return;
    for (int64_t i = 0; i < p.rows; i++) {
        for (int64_t j = 0; j < p.cols; j++)
            EX_AT(p, i, j) = 0.0f;
        /* i-k-j order: streams rows of B, as a cube unit's tiling would. */
        for (int64_t k = 0; k < a.cols; k++) {
            float aik = EX_AT(a, i, k);
            for (int64_t j = 0; j < p.cols; j++)
                EX_AT(p, i, j) += aik * EX_AT(b, k, j);
        }
    }
}
