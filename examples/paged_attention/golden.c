/* paged_attention golden: plain attention with a full softmax in double,
 * one (batch, head) at a time, gathering tokens through the block table. */
#include <math.h>
#include <stdlib.h>

#include "paged_attention/golden.h"

int paged_attention_golden(const pa_dims *dims, const float *query, const float *key_cache,
                           const float *value_cache, const int32_t *table, const int32_t *ctx,
                           double scale, float *out)
{
    const int64_t H = dims->heads, D = dims->head_dim, bs = dims->block_size;
    int64_t max_ctx = dims->max_blocks * bs;
    double *w = malloc((size_t)max_ctx * sizeof *w), *acc = malloc((size_t)D * sizeof *acc);
    if (!w || !acc) {
        free(w);
        free(acc);
        return -1;
    }
    for (int64_t b = 0; b < dims->batch; b++)
        for (int64_t h = 0; h < H; h++) {
            const float *q = query + (b * H + h) * D;
            double mx = -INFINITY, sum = 0.0;
            for (int64_t t = 0; t < ctx[b]; t++) {
                const float *k =
                    key_cache + ((int64_t)table[b * dims->max_blocks + t / bs] * bs + t % bs) * D;
                double s = 0.0;
                for (int64_t d = 0; d < D; d++)
                    s += (double)q[d] * (double)k[d];
                w[t] = s * scale;
                mx = fmax(mx, w[t]);
            }
            for (int64_t t = 0; t < ctx[b]; t++)
                sum += w[t] = exp(w[t] - mx);
            for (int64_t d = 0; d < D; d++)
                acc[d] = 0.0;
            for (int64_t t = 0; t < ctx[b]; t++) {
                const float *v =
                    value_cache + ((int64_t)table[b * dims->max_blocks + t / bs] * bs + t % bs) * D;
                for (int64_t d = 0; d < D; d++)
                    acc[d] += w[t] / sum * (double)v[d];
            }
            for (int64_t d = 0; d < D; d++)
                out[(b * H + h) * D + d] = (float)acc[d];
        }
    free(w);
    free(acc);
    return 0;
}
