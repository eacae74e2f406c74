/* decoder golden: one decode step computed on the host in double, layer by
 * layer, without the kernels or their blocking. */
#ifndef SP_EXAMPLES_DECODER_GOLDEN_H
#define SP_EXAMPLES_DECODER_GOLDEN_H

#include <stdint.h>

typedef struct dec_dims {
    int64_t layers, batch, heads, head_dim, ffn, block_size, max_blocks, cache_blocks;
} dec_dims;

/* The step's inputs (the run's tensors, as the harness made them). */
typedef struct dec_inputs {
    const float *x, *ln1, *wqkv, *wo, *ln2, *wup, *wdown;
    const int32_t *table, *lens;
    double scale, eps;
} dec_inputs;

/* out [B,Hd] = the hidden state after all layers; key_cache / value_cache
 * [L,NB,bs,D] hold the caches on entry and get the step's new token per
 * layer and sequence. Returns -1 if out of host memory. */
int decoder_golden(const dec_dims *dims, const dec_inputs *in, float *key_cache, float *value_cache,
                   float *out);

#endif
