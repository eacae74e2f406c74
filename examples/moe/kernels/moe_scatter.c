/* moe kernel 6 (AIV): expert e's (scalar 0) results added into the
 * output, out[lists_e[i]] += gates_e[i] * ye[i] for i < counts[e].
 * ye [1,T,Hd] IN, lists_e i32 [1,T] IN, gates_e [1,T] IN, counts i32 [E]
 * IN, out [T,Hd] INOUT. A token id out of range is skipped (the check
 * sees the missing contribution). */
#include "moe/moe_view.h"

SP_KERNEL(moe_scatter)
{
    (void)ctx;
    ex_mat ye, gates, out;
    const sp_tensor *lists = sp_arg_tensor(args, 1);
    if (!ex_mat_of(sp_arg_tensor(args, 0), &ye) || !ex_mat_of(sp_arg_tensor(args, 2), &gates) ||
        !ex_mat_of(sp_arg_tensor(args, 4), &out) || out.cols != ye.cols || gates.cols != ye.rows ||
        lists->dtype != SP_DTYPE_I32 || sp_tensor_numel(lists) != ye.rows)
        return;
    const int64_t n = moe_count(sp_arg_tensor(args, 3), args[5], ye.rows);
    for (int64_t i = 0; i < n; i++) {
        const int64_t t = moe_i32_at(lists, i);
        if (t < 0 || t >= out.rows)
            continue;
        const float g = EX_AT(gates, 0, i);
        for (int64_t j = 0; j < out.cols; j++)
            EX_AT(out, t, j) += g * EX_AT(ye, i, j);
    }
}
