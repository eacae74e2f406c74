/* ep_moe golden: route, run the experts and combine on the host, without
 * any buffer layout of the chips (no dispatch slots, no alltoall): for
 * each token, the experts that accept it under their capacity, each
 * output computed directly and summed with its gate. The routing logits
 * are summed in float in the kernel's order so that a near tie picks the
 * same expert; the FFN uses double accumulators. */
#include "ep_moe/golden.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define G_MAX_E 64
#define G_MAX_K 8

static void expert_ffn(const ep_moe_dims *d, const float *xr, const float *w1, const float *w2,
                       int64_t e, double *h, double *y)
{
    const int64_t H = d->H, F = d->F;
    for (int64_t f = 0; f < F; f++) {
        double acc = 0.0;
        for (int64_t k = 0; k < H; k++)
            acc += (double)xr[k] * w1[(e * H + k) * F + f];
        h[f] = acc > 0.0 ? acc : 0.0;
    }
    for (int64_t j = 0; j < H; j++) {
        double acc = 0.0;
        for (int64_t f = 0; f < F; f++)
            acc += h[f] * w2[(e * F + f) * H + j];
        y[j] = acc;
    }
}

int ep_moe_golden(const ep_moe_dims *d, const float *x, const float *wr, const float *w1,
                  const float *w2, float *out)
{
    const int64_t T = d->T, H = d->H, E = d->E, K = d->top_k;
    if (E > G_MAX_E || K < 1 || K > G_MAX_K || K > E)
        return -1;
    double *h = malloc((size_t)d->F * sizeof *h), *y = malloc((size_t)H * sizeof *y);
    double *acc = malloc((size_t)H * sizeof *acc);
    if (!h || !y || !acc) {
        free(h), free(y), free(acc);
        return -1;
    }
    for (int64_t c = 0; c < d->chips; c++) {
        int64_t used[G_MAX_E] = {0}; /* capacity is per source chip */
        for (int64_t t = 0; t < T; t++) {
            const float *xr = x + (c * T + t) * H;
            float logit[G_MAX_E];
            for (int64_t e = 0; e < E; e++) {
                float s = 0.0f;
                for (int64_t k = 0; k < H; k++)
                    s += xr[k] * wr[k * E + e];
                logit[e] = s;
            }
            int64_t pick[G_MAX_K];
            int chosen[G_MAX_E] = {0};
            for (int64_t i = 0; i < K; i++) {
                int64_t best = -1;
                for (int64_t e = 0; e < E; e++)
                    if (!chosen[e] && (best < 0 || logit[e] > logit[best]))
                        best = e;
                pick[i] = best;
                chosen[best] = 1;
            }
            double z = 0.0;
            for (int64_t i = 0; i < K; i++)
                z += exp((double)logit[pick[i]] - logit[pick[0]]);
            memset(acc, 0, (size_t)H * sizeof *acc);
            for (int64_t i = 0; i < K; i++) {
                const int64_t e = pick[i];
                if (used[e]++ >= d->cap)
                    continue; /* dropped: this expert is full for chip c */
                const double gate = exp((double)logit[e] - logit[pick[0]]) / z;
                expert_ffn(d, xr, w1, w2, e, h, y);
                for (int64_t j = 0; j < H; j++)
                    acc[j] += gate * y[j];
            }
            for (int64_t j = 0; j < H; j++)
                out[(c * T + t) * H + j] = (float)acc[j];
        }
    }
    free(h), free(y), free(acc);
    return 0;
}
