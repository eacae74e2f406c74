/* paged_attention kernel 3 (AIV): the flash-attention online update. Folds
 * one block's (m_j, l_j, O_j) into the running (M, L, Acc) of its batch:
 *     M' = max(M, m_j), a = exp(M - M'), b = exp(m_j - M'),
 *     L' = a L + b l_j, Acc' = a Acc + b O_j.
 * Scalar 0 = 1 for the first block: the state is fresh and just takes
 * (m_j, l_j, O_j). Tensors: m_j [H], l_j [H], O_j [H,D], M [H], L [H],
 * Acc [H,D]. */
#include <math.h>

#include "ex_kernel.h"

SP_KERNEL(pa_update)
{
    (void)ctx;
    ex_mat mj, lj, oj, M, L, acc;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &mj) || !ex_mat_of(sp_arg_tensor(args, 1), &lj) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &oj) || !ex_mat_of(sp_arg_tensor(args, 3), &M) ||
        !ex_mat_of(sp_arg_tensor(args, 4), &L) || !ex_mat_of(sp_arg_tensor(args, 5), &acc) ||
        acc.rows != oj.rows || acc.cols != oj.cols || mj.cols != oj.rows || lj.cols != oj.rows ||
        M.cols != oj.rows || L.cols != oj.rows)
        return;
    const int first = args[6] != 0;
    for (int64_t h = 0; h < acc.rows; h++) {
        float m_new = EX_AT(mj, 0, h), a = 0.0f, b = 1.0f;
        if (!first) {
            float m_old = EX_AT(M, 0, h);
            m_new = fmaxf(m_old, m_new);
            a = expf(m_old - m_new);
            b = expf(EX_AT(mj, 0, h) - m_new);
        }
        EX_AT(M, 0, h) = m_new;
        EX_AT(L, 0, h) = (first ? 0.0f : a * EX_AT(L, 0, h)) + b * EX_AT(lj, 0, h);
        for (int64_t d = 0; d < acc.cols; d++)
            EX_AT(acc, h, d) = (first ? 0.0f : a * EX_AT(acc, h, d)) + b * EX_AT(oj, h, d);
    }
}
