/* ep_moe kernel 0 (AIV): the router and the dispatch buffer of one chip.
 * Each token's logits x[t] @ wr, its top_k experts (largest first, ties to
 * the lower index), gates = softmax over those logits; then, token by token
 * and choice by choice, the token's row goes to the next free slot of its
 * expert (capacity C slots per expert; a token past it is dropped for that
 * expert). Slot s = e * C + i of `send` is row s; slots left empty are
 * zero with token -1, so `send` [E*C, H] is the alltoall's input as is:
 * its block j is the C rows of each of chip j's experts.
 *
 * x [T,H] IN, wr [H,E] IN, send [E*C,H], slot_tok i32 [E*C], slot_gate f32
 * [E*C] (all three written in place); scalars top_k (1..8), C. */
#include <math.h>

#include "ex_kernel.h"

#define EP_MAX_E 64
#define EP_MAX_K 8

SP_KERNEL(ep_route)
{
    (void)ctx;
    ex_mat x, wr, send;
    const sp_tensor *tok_t = sp_arg_tensor(args, 3), *gate_t = sp_arg_tensor(args, 4);
    const int64_t top_k = (int64_t)args[5], cap = (int64_t)args[6];
    if (!ex_mat_of(sp_arg_tensor(args, 0), &x) || !ex_mat_of(sp_arg_tensor(args, 1), &wr) ||
        !ex_mat_of(sp_arg_tensor(args, 2), &send))
        return;
    const int64_t T = x.rows, H = x.cols, E = wr.cols;
    if (wr.rows != H || E > EP_MAX_E || top_k < 1 || top_k > EP_MAX_K || top_k > E || cap < 1 ||
        send.rows != E * cap || send.cols != H || tok_t->ndim != 1 || tok_t->shape[0] != E * cap ||
        gate_t->ndim != 1 || gate_t->shape[0] != E * cap)
        return;
    int32_t *tok = (int32_t *)sp_tensor_data(tok_t);
    float *gate = (float *)sp_tensor_data(gate_t);
    const int64_t ts = tok_t->strides[0], gs = gate_t->strides[0];
    for (int64_t s = 0; s < E * cap; s++) {
        tok[s * ts] = -1;
        gate[s * gs] = 0.0f;
        for (int64_t j = 0; j < H; j++)
            EX_AT(send, s, j) = 0.0f;
    }
    int64_t count[EP_MAX_E] = {0};
    for (int64_t t = 0; t < T; t++) {
        float logit[EP_MAX_E];
        for (int64_t e = 0; e < E; e++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < H; k++)
                acc += EX_AT(x, t, k) * EX_AT(wr, k, e);
            logit[e] = acc;
        }
        int64_t pick[EP_MAX_K];
        uint64_t taken = 0;
        for (int64_t i = 0; i < top_k; i++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++)
                if (!(taken >> e & 1) && (best < 0 || logit[e] > logit[best]))
                    best = e;
            pick[i] = best;
            taken |= 1ull << best;
        }
        float g[EP_MAX_K], sum = 0.0f;
        for (int64_t i = 0; i < top_k; i++)
            sum += g[i] = expf(logit[pick[i]] - logit[pick[0]]);
        for (int64_t i = 0; i < top_k; i++) {
            const int64_t e = pick[i];
            if (count[e] >= cap)
                continue;
            const int64_t s = e * cap + count[e]++;
            tok[s * ts] = (int32_t)t;
            gate[s * gs] = g[i] / sum;
            for (int64_t j = 0; j < H; j++)
                EX_AT(send, s, j) = EX_AT(x, t, j);
        }
    }
}
