/* decoder kernel 4 (AIV): block-local softmax numerators. Per head row of
 * S [NH,bs]: m = max, P = exp(S - m), l = sum of P; -inf entries (keys past
 * the context) give 0, and a row with no key (a block past the context)
 * gives m = -inf, P = 0, l = 0, which the online update folds in as
 * nothing. Outputs P [NH,bs], m [NH], l [NH] are fresh. */
#include <math.h>

#include "ex_kernel.h"

SP_KERNEL(dec_softmax)
{
    (void)ctx;
    ex_mat s, p, m, l;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &s) || !ex_mat_of(sp_arg_tensor(args, 1), &p) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &m) || !ex_mat_of(sp_arg_tensor(args, 3), &l) ||
        p.rows != s.rows || p.cols != s.cols || m.cols != s.rows || l.cols != s.rows)
        return;
    for (int64_t h = 0; h < s.rows; h++) {
        float mx = -INFINITY, sum = 0.0f;
        int nan = 0;
        for (int64_t t = 0; t < s.cols; t++) {
            nan |= isnan(EX_AT(s, h, t));
            mx = fmaxf(mx, EX_AT(s, h, t));
        }
        if (nan)
            mx = NAN;
        for (int64_t t = 0; t < s.cols; t++) {
            const float v = EX_AT(s, h, t);
            const float e = v == -INFINITY ? 0.0f : expf(v - mx);
            EX_AT(p, h, t) = e;
            sum += e;
        }
        EX_AT(m, 0, h) = mx;
        EX_AT(l, 0, h) = sum;
    }
}
