/* paged_attention golden, computed on the host in double without the kernels. */
#ifndef SP_EXAMPLES_PAGED_ATTENTION_GOLDEN_H
#define SP_EXAMPLES_PAGED_ATTENTION_GOLDEN_H

#include <stdint.h>

typedef struct pa_dims {
    int64_t batch, heads, head_dim, block_size, max_blocks;
} pa_dims;

/* out[b,h,:] = softmax_t(scale * q[b,h] . k_t) @ v_t over t < ctx[b], where
 * token t lives in physical block table[b, t / bs], row t % bs. Returns -1
 * if out of host memory. */
int paged_attention_golden(const pa_dims *dims, const float *query, const float *key_cache,
                           const float *value_cache, const int32_t *table, const int32_t *ctx,
                           double scale, float *out);

#endif
