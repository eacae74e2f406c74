/* decoder kernel 6 (AIV; paged_attention's pa_update): the flash-attention online update. Folds
 * one block's (m_j, l_j, O_j) into the batch's running state and writes the
 * new state to fresh outputs (the old state is only read), so each state
 * lives just from one update to the next:
 *     M' = max(M, m_j), a = exp(M - M'), b = exp(m_j - M'),
 *     L' = a L + b l_j, Acc' = a Acc + b O_j.
 * Scalar 0 = 1 for the first block: there is no old state (its tensors are
 * ignored) and the new state just takes (m_j, l_j, O_j). Tensors: m_j [H],
 * l_j [H], O_j [H,D], M [H], L [H], Acc [H,D] (old), M' [H], L' [H],
 * Acc' [H,D] (new). A block past the context (m_j = -inf, l_j = 0,
 * O_j = 0) leaves the state as it was: b = 0. */
#include <math.h>

#include "ex_kernel.h"

SP_KERNEL(dec_update)
{
    (void)ctx;
    ex_mat mj, lj, oj, M, L, acc, M2, L2, acc2;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &mj) || !ex_mat_of(sp_arg_tensor(args, 1), &lj) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &oj) || !ex_mat_of(sp_arg_tensor(args, 3), &M) ||
        !ex_mat_of(sp_arg_tensor(args, 4), &L) || !ex_mat_of(sp_arg_tensor(args, 5), &acc) ||
        !ex_mat_of(sp_arg_tensor(args, 6), &M2) || !ex_mat_of(sp_arg_tensor(args, 7), &L2) ||
        !ex_mat_of(sp_arg_tensor(args, 8), &acc2) || acc2.rows != oj.rows || acc2.cols != oj.cols ||
        mj.cols != oj.rows || lj.cols != oj.rows || M2.cols != oj.rows || L2.cols != oj.rows)
        return;
    const int first = args[9] != 0;
    if (!first &&
        (M.cols != oj.rows || L.cols != oj.rows || acc.rows != oj.rows || acc.cols != oj.cols))
        return;
    for (int64_t h = 0; h < acc2.rows; h++) {
        float m_new = EX_AT(mj, 0, h), a = 0.0f, b = 1.0f;
        if (!first) {
            float m_old = EX_AT(M, 0, h);
            m_new = fmaxf(m_old, m_new);
            a = expf(m_old - m_new);
            b = expf(EX_AT(mj, 0, h) - m_new);
        }
        EX_AT(M2, 0, h) = m_new;
        EX_AT(L2, 0, h) = (first ? 0.0f : a * EX_AT(L, 0, h)) + b * EX_AT(lj, 0, h);
        for (int64_t d = 0; d < acc2.cols; d++)
            EX_AT(acc2, h, d) = (first ? 0.0f : a * EX_AT(acc, h, d)) + b * EX_AT(oj, h, d);
    }
}
