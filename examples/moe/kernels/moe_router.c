/* moe kernel 1 (AIV): the router. Per token t: logits = x[t] @ w_router +
 * bias, its top_k (scalar 0) experts by logit (ties: the lower index), and
 * their gates, the softmax over the chosen logits. Expert e's token list
 * is lists[e, 0 .. counts[e]) in token order, with gates[e, i] the weight
 * of token lists[e, i]. Tensors: x [T,Hd] IN, w_router [Hd,E] IN,
 * bias [E] IN, counts i32 [E] (the run's output, written in place),
 * lists i32 [E,T], gates [E,T] (allocated buffers, written in place; entries past a count unset).
 */
#include <math.h>

#include "ex_kernel.h"

#define MOE_MAX_EXPERTS 64

SP_KERNEL(moe_router)
{
    (void)ctx;
    ex_mat x, w, bias, gates;
    const sp_tensor *ct = sp_arg_tensor(args, 3), *lt = sp_arg_tensor(args, 4);
    if (!ex_mat_of(sp_arg_tensor(args, 0), &x) || !ex_mat_of(sp_arg_tensor(args, 1), &w) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &bias) || !ex_mat_of(sp_arg_tensor(args, 5), &gates) ||
        w.rows != x.cols || bias.cols != w.cols || w.cols > MOE_MAX_EXPERTS ||
        ct->dtype != SP_DTYPE_I32 || ct->ndim != 1 || ct->shape[0] != w.cols ||
        lt->dtype != SP_DTYPE_I32 || lt->ndim != 2 || lt->shape[0] != w.cols ||
        lt->shape[1] != x.rows || gates.rows != w.cols || gates.cols != x.rows)
        return;
    const int64_t E = w.cols, k = (int64_t)args[6] < E ? (int64_t)args[6] : E;
    int32_t *counts = (int32_t *)sp_tensor_data(ct), *lists = (int32_t *)sp_tensor_data(lt);
    for (int64_t e = 0; e < E; e++)
        counts[e * ct->strides[0]] = 0;
    for (int64_t t = 0; t < x.rows; t++) {
        float logit[MOE_MAX_EXPERTS], g[MOE_MAX_EXPERTS];
        int chosen[MOE_MAX_EXPERTS] = {0}, pick[MOE_MAX_EXPERTS];
        for (int64_t e = 0; e < E; e++) {
            float acc = EX_AT(bias, 0, e);
            for (int64_t i = 0; i < x.cols; i++)
                acc += EX_AT(x, t, i) * EX_AT(w, i, e);
            logit[e] = acc;
        }
        for (int64_t r = 0; r < k; r++) {
            int best = -1;
            for (int e = 0; e < E; e++)
                if (!chosen[e] && (best < 0 || logit[e] > logit[best]))
                    best = e;
            chosen[best] = 1;
            pick[r] = best;
        }
        float sum = 0.0f;
        for (int64_t r = 0; r < k; r++)
            sum += g[r] = expf(logit[pick[r]] - logit[pick[0]]);
        for (int64_t r = 0; r < k; r++) {
            const int e = pick[r];
            const int64_t n = counts[e * ct->strides[0]]++;
            lists[e * lt->strides[0] + n * lt->strides[1]] = (int32_t)t;
            EX_AT(gates, e, n) = g[r] / sum;
        }
    }
}
