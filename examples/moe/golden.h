/* moe golden: the layer computed on the host in double, token by token,
 * without the kernels, the token lists or the per-expert buffers. */
#ifndef SP_EXAMPLES_MOE_GOLDEN_H
#define SP_EXAMPLES_MOE_GOLDEN_H

#include <stdint.h>

typedef struct moe_dims {
    int64_t tokens, hidden, ffn, experts, top_k;
} moe_dims;

/* The router's logits of token t in double: logits[e], e < experts. */
void moe_golden_logits(const moe_dims *d, const float *x, const float *w_router, const float *bias,
                       int64_t t, double *logits);

/* out [T,Hd] = x + sum over each token's top_k experts e (by logit, ties
 * to the lower index) of gate_e * (silu(x W1_e) W2_e), the gates the
 * softmax over the chosen logits; counts[e] = tokens routed to e.
 * Returns -1 if out of host memory. */
int moe_golden(const moe_dims *d, const float *x, const float *w_router, const float *bias,
               const float *w1, const float *w2, int32_t *counts, float *out);

#endif
