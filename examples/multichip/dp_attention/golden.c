/* dp_attention golden: one sequence's attention with double accumulators,
 * straight over the sequence's K/V rows (the chips' page tables play no
 * part here). */
#include "dp_attention/golden.h"

#include <math.h>
#include <stdlib.h>

void dp_attention_golden(const float *q, const float *k, const float *v, int64_t len, int64_t NH,
                         int64_t D, float scale, float *out)
{
    double *w = malloc((size_t)len * sizeof *w);
    if (!w) {
        for (int64_t i = 0; i < NH * D; i++)
            out[i] = NAN; /* the check fails by name */
        return;
    }
    for (int64_t h = 0; h < NH; h++) {
        double best = -INFINITY, z = 0.0;
        for (int64_t p = 0; p < len; p++) {
            double s = 0.0;
            for (int64_t d = 0; d < D; d++)
                s += (double)q[h * D + d] * k[(p * NH + h) * D + d];
            w[p] = s * scale;
            best = w[p] > best ? w[p] : best;
        }
        for (int64_t p = 0; p < len; p++)
            z += w[p] = exp(w[p] - best);
        for (int64_t d = 0; d < D; d++) {
            double acc = 0.0;
            for (int64_t p = 0; p < len; p++)
                acc += w[p] * v[(p * NH + h) * D + d];
            out[h * D + d] = (float)(acc / z);
        }
    }
    free(w);
}
