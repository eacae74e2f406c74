/* tp_ffn golden: y = relu(x W1) W2 in plain C on the host, unsplit, with
 * double accumulators (independent of simpler and of the split). */
#include "tp_ffn/golden.h"

#include <stdlib.h>

int tp_ffn_golden(const float *x, const float *w1, const float *w2, int64_t T, int64_t H, int64_t F,
                  float *y)
{
    double *h = malloc((size_t)F * sizeof *h);
    if (!h)
        return -1;
    for (int64_t t = 0; t < T; t++) {
        for (int64_t f = 0; f < F; f++) {
            double acc = 0.0;
            for (int64_t k = 0; k < H; k++)
                acc += (double)x[t * H + k] * w1[k * F + f];
            h[f] = acc > 0.0 ? acc : 0.0;
        }
        for (int64_t j = 0; j < H; j++) {
            double acc = 0.0;
            for (int64_t f = 0; f < F; f++)
                acc += h[f] * w2[f * H + j];
            y[t * H + j] = (float)acc;
        }
    }
    free(h);
    return 0;
}
