/* decoder kernel 0 (AIV): RMS norm of each row,
 *     y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w[:].
 * x [B,Hd] (or a [1,B,Hd] slice of the hidden states), w [1,Hd] (the
 * layer's slice of a norm-weight tensor), y [B,Hd] fresh; scalar 0 = eps
 * (f32 bits). */
#include <math.h>

#include "ex_kernel.h"

SP_KERNEL(dec_rmsnorm)
{
    (void)ctx;
    ex_mat x, w, y;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &x) || !ex_mat_of(sp_arg_tensor(args, 1), &w) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &y) || w.cols != x.cols || y.rows != x.rows ||
        y.cols != x.cols || x.cols < 1)
        return;
    const float eps = ex_arg_f32(args, 3);
    for (int64_t r = 0; r < x.rows; r++) {
        float ss = 0.0f;
        for (int64_t c = 0; c < x.cols; c++)
            ss += EX_AT(x, r, c) * EX_AT(x, r, c);
        const float inv = 1.0f / sqrtf(ss / (float)x.cols + eps);
        for (int64_t c = 0; c < x.cols; c++)
            EX_AT(y, r, c) = EX_AT(x, r, c) * inv * EX_AT(w, 0, c);
    }
}
