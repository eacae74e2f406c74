/* ep_moe golden: the whole expert-parallel MoE layer in plain C. */
#ifndef SP_EXAMPLES_MC_EP_MOE_GOLDEN_H
#define SP_EXAMPLES_MC_EP_MOE_GOLDEN_H

#include <stdint.h>

typedef struct ep_moe_dims {
    int64_t chips, T, H, F, E, top_k, cap; /* T tokens per chip; E experts in all */
} ep_moe_dims;

/* out [chips,T,H] from x [chips,T,H], wr [H,E], w1 [E,H,F], w2 [E,F,H]:
 * each chip's tokens routed top_k with capacity `cap` per expert and source
 * chip (tokens in order, a token's choices best first), expert FFN
 * relu(x W1) W2, gated sum. 0, or -1 for dims it cannot take. */
int ep_moe_golden(const ep_moe_dims *d, const float *x, const float *wr, const float *w1,
                  const float *w2, float *out);

#endif
