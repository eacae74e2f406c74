/* tp_ffn kernel 1 (AIV): h = max(h, 0) in place. h [M,N] INOUT. */
#include "ex_kernel.h"

SP_KERNEL(tp_relu)
{
    (void)ctx;
    ex_mat h;
    if (!ex_mat_of(sp_arg_tensor(args, 0), &h))
        return;
    for (int64_t i = 0; i < h.rows; i++)
        for (int64_t j = 0; j < h.cols; j++)
            if (EX_AT(h, i, j) < 0.0f)
                EX_AT(h, i, j) = 0.0f;
}
