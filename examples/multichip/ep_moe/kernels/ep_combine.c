/* ep_moe kernel 2 (AIV): the combine. The reverse alltoall brought back,
 * slot for slot, the expert outputs of the rows this chip dispatched, so
 * out[t] = sum over the slots s holding token t of gate[s] * ret[s]
 * (a token dropped by every expert gets zeros).
 *
 * ret [E*C,H] IN, slot_tok i32 [E*C] IN, slot_gate f32 [E*C] IN,
 * out [T,H] (in place). */
#include "ex_kernel.h"

SP_KERNEL(ep_combine)
{
    (void)ctx;
    ex_mat ret, out;
    const sp_tensor *tok_t = sp_arg_tensor(args, 1), *gate_t = sp_arg_tensor(args, 2);
    if (!ex_mat_of(sp_arg_tensor(args, 0), &ret) || !ex_mat_of(sp_arg_tensor(args, 3), &out) ||
        ret.cols != out.cols || tok_t->ndim != 1 || tok_t->shape[0] != ret.rows ||
        gate_t->ndim != 1 || gate_t->shape[0] != ret.rows)
        return;
    const int32_t *tok = (const int32_t *)sp_tensor_data(tok_t);
    const float *gate = (const float *)sp_tensor_data(gate_t);
    for (int64_t t = 0; t < out.rows; t++)
        for (int64_t j = 0; j < out.cols; j++)
            EX_AT(out, t, j) = 0.0f;
    for (int64_t s = 0; s < ret.rows; s++) {
        const int64_t t = tok[s * tok_t->strides[0]];
        if (t < 0 || t >= out.rows)
            continue;
        const float g = gate[s * gate_t->strides[0]];
        for (int64_t j = 0; j < out.cols; j++)
            EX_AT(out, t, j) += g * EX_AT(ret, s, j);
    }
}
