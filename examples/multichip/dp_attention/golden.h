/* dp_attention golden: decode attention in plain C over logical K/V. */
#ifndef SP_EXAMPLES_MC_DP_ATTENTION_GOLDEN_H
#define SP_EXAMPLES_MC_DP_ATTENTION_GOLDEN_H

#include <stdint.h>

/* out [NH,D] = softmax(scale * q K^T) V for one sequence: q [NH,D], k and
 * v [len,NH,D] (contiguous, no pages). */
void dp_attention_golden(const float *q, const float *k, const float *v, int64_t len, int64_t NH,
                         int64_t D, float scale, float *out);

#endif
