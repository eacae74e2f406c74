/* moe golden: per token, the top_k experts by double logits, the softmax
 * gates, and each chosen expert's MLP on that token's row alone. */
#include <math.h>
#include <stdlib.h>

#include "moe/golden.h"

void moe_golden_logits(const moe_dims *d, const float *x, const float *w_router, const float *bias,
                       int64_t t, double *logits)
{
    for (int64_t e = 0; e < d->experts; e++) {
        double s = (double)bias[e];
        for (int64_t i = 0; i < d->hidden; i++)
            s += (double)x[t * d->hidden + i] * (double)w_router[i * d->experts + e];
        logits[e] = s;
    }
}

int moe_golden(const moe_dims *d, const float *x, const float *w_router, const float *bias,
               const float *w1, const float *w2, int32_t *counts, float *out)
{
    const int64_t Hd = d->hidden, F = d->ffn, E = d->experts;
    const int64_t k = d->top_k < E ? d->top_k : E;
    double *logits = malloc((size_t)E * sizeof *logits), *h = malloc((size_t)F * sizeof *h);
    double *y = malloc((size_t)Hd * sizeof *y);
    char *used = malloc((size_t)E);
    if (!logits || !h || !y || !used) {
        free(logits);
        free(h);
        free(y);
        free(used);
        return -1;
    }
    for (int64_t e = 0; e < E; e++)
        counts[e] = 0;
    for (int64_t t = 0; t < d->tokens; t++) {
        const float *xt = x + t * Hd;
        moe_golden_logits(d, x, w_router, bias, t, logits);
        for (int64_t i = 0; i < Hd; i++)
            y[i] = (double)xt[i];
        for (int64_t e = 0; e < E; e++)
            used[e] = 0;
        /* The chosen experts, best first; the gates need the best logit. */
        double top = -INFINITY, norm = 0.0;
        int64_t chosen[64];
        for (int64_t r = 0; r < k; r++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++)
                if (!used[e] && (best < 0 || logits[e] > logits[best]))
                    best = e;
            used[best] = 1;
            chosen[r] = best;
            top = r == 0 ? logits[best] : top;
            norm += exp(logits[best] - top);
        }
        for (int64_t r = 0; r < k; r++) {
            const int64_t e = chosen[r];
            const double gate = exp(logits[e] - top) / norm;
            counts[e]++;
            for (int64_t j = 0; j < F; j++) {
                double s = 0.0;
                for (int64_t i = 0; i < Hd; i++)
                    s += (double)xt[i] * (double)w1[(e * Hd + i) * F + j];
                h[j] = s / (1.0 + exp(-s));
            }
            for (int64_t i = 0; i < Hd; i++) {
                double s = 0.0;
                for (int64_t j = 0; j < F; j++)
                    s += h[j] * (double)w2[(e * F + j) * Hd + i];
                y[i] += gate * s;
            }
        }
        for (int64_t i = 0; i < Hd; i++)
            out[t * Hd + i] = (float)y[i];
    }
    free(logits);
    free(h);
    free(y);
    free(used);
    return 0;
}
