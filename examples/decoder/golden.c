/* decoder golden: plain loops in double over whole rows: RMS norm, the
 * projections as dot products, attention with a full softmax over the
 * gathered context (the new token's key and value stored first, as f32,
 * since the cache holds f32), the MLP with SiLU, the residuals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/golden.h"

/* y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, rows of n. */
static void rmsnorm(const double *x, const float *w, int64_t rows, int64_t n, double eps, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int64_t c = 0; c < n; c++)
            ss += x[r * n + c] * x[r * n + c];
        const double inv = 1.0 / sqrt(ss / (double)n + eps);
        for (int64_t c = 0; c < n; c++)
            y[r * n + c] = x[r * n + c] * inv * (double)w[c];
    }
}

/* y [rows,n] = x [rows,k] @ w [k,n] (w f32, row-major). */
static void project(const double *x, const float *w, int64_t rows, int64_t k, int64_t n, double *y)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < n; c++) {
            double acc = 0.0;
            for (int64_t i = 0; i < k; i++)
                acc += x[r * k + i] * (double)w[i * n + c];
            y[r * n + c] = acc;
        }
}

/* Cache row of token t of sequence b in a layer's [NB,bs,D] cache. */
static int64_t token_row(const dec_dims *d, const int32_t *table, int64_t b, int64_t t)
{
    return ((int64_t)table[b * d->max_blocks + t / d->block_size] * d->block_size +
            t % d->block_size) *
           d->head_dim;
}

int decoder_golden(const dec_dims *d, const dec_inputs *in, float *key_cache, float *value_cache,
                   float *out)
{
    const int64_t B = d->batch, NH = d->heads, D = d->head_dim, Hd = NH * D, F = d->ffn;
    const int64_t Q = Hd + 2 * D, ctx_max = d->max_blocks * d->block_size;
    const int64_t cache_layer = d->cache_blocks * d->block_size * D;
    double *h = malloc((size_t)(B * Hd) * sizeof *h), *n = malloc((size_t)(B * Hd) * sizeof *n);
    double *qkv = malloc((size_t)(B * Q) * sizeof *qkv),
           *att = malloc((size_t)(B * Hd) * sizeof *att);
    double *tmp = malloc((size_t)(B * Hd) * sizeof *tmp),
           *up = malloc((size_t)(B * F) * sizeof *up);
    double *w = malloc((size_t)ctx_max * sizeof *w);
    int rc = (!h || !n || !qkv || !att || !tmp || !up || !w) ? -1 : 0;
    for (int64_t i = 0; rc == 0 && i < B * Hd; i++)
        h[i] = (double)in->x[i];
    for (int64_t l = 0; rc == 0 && l < d->layers; l++) {
        float *kc = key_cache + l * cache_layer, *vc = value_cache + l * cache_layer;
        rmsnorm(h, in->ln1 + l * Hd, B, Hd, in->eps, n);
        project(n, in->wqkv + l * Hd * Q, B, Hd, Q, qkv);
        for (int64_t b = 0; b < B; b++) {
            const int64_t ctx = in->lens[b], row = token_row(d, in->table, b, ctx - 1);
            for (int64_t i = 0; i < D; i++) {
                kc[row + i] = (float)qkv[b * Q + Hd + i];
                vc[row + i] = (float)qkv[b * Q + Hd + D + i];
            }
            for (int64_t hd = 0; hd < NH; hd++) {
                const double *q = qkv + b * Q + hd * D;
                double mx = -INFINITY, sum = 0.0;
                for (int64_t t = 0; t < ctx; t++) {
                    const float *k = kc + token_row(d, in->table, b, t);
                    double s = 0.0;
                    for (int64_t i = 0; i < D; i++)
                        s += q[i] * (double)k[i];
                    w[t] = s * in->scale;
                    mx = fmax(mx, w[t]);
                }
                for (int64_t t = 0; t < ctx; t++)
                    sum += w[t] = exp(w[t] - mx);
                double *o = att + b * Hd + hd * D;
                for (int64_t i = 0; i < D; i++)
                    o[i] = 0.0;
                for (int64_t t = 0; t < ctx; t++) {
                    const float *v = vc + token_row(d, in->table, b, t);
                    for (int64_t i = 0; i < D; i++)
                        o[i] += w[t] / sum * (double)v[i];
                }
            }
        }
        project(att, in->wo + l * Hd * Hd, B, Hd, Hd, tmp);
        for (int64_t i = 0; i < B * Hd; i++)
            h[i] += tmp[i];
        rmsnorm(h, in->ln2 + l * Hd, B, Hd, in->eps, n);
        project(n, in->wup + l * Hd * F, B, Hd, F, up);
        for (int64_t i = 0; i < B * F; i++)
            up[i] = up[i] / (1.0 + exp(-up[i]));
        project(up, in->wdown + l * F * Hd, B, F, Hd, tmp);
        for (int64_t i = 0; i < B * Hd; i++)
            h[i] += tmp[i];
    }
    for (int64_t i = 0; rc == 0 && i < B * Hd; i++)
        out[i] = (float)h[i];
    free(h);
    free(n);
    free(qkv);
    free(att);
    free(tmp);
    free(up);
    free(w);
    return rc;
}
