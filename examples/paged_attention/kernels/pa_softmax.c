/* paged_attention kernel 1 (AIV): block-local softmax numerators. For each
 * head row of S [H,bs] over its first n (scalar 0) columns:
 * m = max, P = exp(S - m) (0 past n), l = sum of P. Outputs P [H,bs],
 * m [H], l [H] are fresh. */
#include <math.h>

#include "ex_kernel.h"

SP_KERNEL(pa_softmax)
{
    (void)ctx;
    ex_mat s, p, m, l;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &s) || !ex_mat_of(sp_arg_tensor(args, 1), &p) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &m) || !ex_mat_of(sp_arg_tensor(args, 3), &l) ||
        p.rows != s.rows || p.cols != s.cols || m.cols != s.rows || l.cols != s.rows)
        return;
    const int64_t n = (int64_t)args[4];
    for (int64_t h = 0; h < s.rows; h++) {
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < n && j < s.cols; j++)
            mx = fmaxf(mx, EX_AT(s, h, j));
        for (int64_t j = 0; j < s.cols; j++) {
            float e = j < n ? expf(EX_AT(s, h, j) - mx) : 0.0f;
            EX_AT(p, h, j) = e;
            sum += e;
        }
        EX_AT(m, 0, h) = mx;
        EX_AT(l, 0, h) = sum;
    }
}
