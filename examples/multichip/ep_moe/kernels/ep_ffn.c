/* ep_moe kernel 1 (AIC): one expert's FFN, y = relu(x W1) W2, over every
 * row it was sent: the rows are [P, 1, C, H] (source chip, this expert,
 * slot, feature), a strided slice of the received alltoall blocks. Empty
 * (zero) slots give zero rows, which no combine reads.
 *
 * x [P,1,C,H] IN, w1 [1,H,F] IN, w2 [1,F,H] IN, y [P,1,C,H] (in place). */
#include "ex_kernel.h"

#define EP_MAX_F 1024

static int rows_view(const sp_tensor *t, int64_t h)
{
    return t->dtype == SP_DTYPE_F32 && t->ndim == 4 && t->shape[1] == 1 && t->shape[3] == h;
}

SP_KERNEL(ep_ffn)
{
    (void)ctx;
    const sp_tensor *xt = sp_arg_tensor(args, 0), *yt = sp_arg_tensor(args, 3);
    ex_mat w1, w2;
    if (!ex_mat_of(sp_arg_tensor(args, 1), &w1) || !ex_mat_of(sp_arg_tensor(args, 2), &w2))
        return;
    const int64_t H = w1.rows, F = w1.cols;
    if (F > EP_MAX_F || w2.rows != F || w2.cols != H || !rows_view(xt, H) || !rows_view(yt, H) ||
        xt->shape[0] != yt->shape[0] || xt->shape[2] != yt->shape[2])
        return;
    const float *xp = (const float *)sp_tensor_data(xt);
    float *yp = (float *)sp_tensor_data(yt);
    float h[EP_MAX_F];
    for (int64_t p = 0; p < xt->shape[0]; p++)
        for (int64_t c = 0; c < xt->shape[2]; c++) {
            const float *xr = xp + p * xt->strides[0] + c * xt->strides[2];
            float *yr = yp + p * yt->strides[0] + c * yt->strides[2];
            for (int64_t f = 0; f < F; f++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < H; k++)
                    acc += xr[k * xt->strides[3]] * EX_AT(w1, k, f);
                h[f] = acc > 0.0f ? acc : 0.0f;
            }
            for (int64_t j = 0; j < H; j++) {
                float acc = 0.0f;
                for (int64_t f = 0; f < F; f++)
                    acc += h[f] * EX_AT(w2, f, j);
                yr[j * yt->strides[3]] = acc;
            }
        }
}
