/* matmul_diamond golden: the formula in double, one output element at a
 * time; (b@W1 + b@W2) is computed as b@(W1+W2) per element, in double. */
#include <math.h>
#include <stdlib.h>

#include "matmul_diamond/golden.h"

int matmul_diamond_golden(const float *A, const float *W1, const float *W2, float *F, int64_t n)
{
    double *b = malloc((size_t)(n * n) * sizeof *b);
    if (!b)
        return -1;
    for (int64_t i = 0; i < n * n; i++)
        b[i] = sqrt(log((double)A[i]));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t k = 0; k < n; k++)
                s += b[i * n + k] * ((double)W1[k * n + j] + (double)W2[k * n + j]);
            F[i * n + j] = (float)exp(s);
        }
    free(b);
    return 0;
}
