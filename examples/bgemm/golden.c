/* bgemm golden: a plain untiled triple loop per batch, accumulated in double. */
#include "bgemm/golden.h"

void bgemm_golden(const float *A, const float *B, float *C, int64_t groups, int64_t m, int64_t k,
                  int64_t n)
{
    for (int64_t g = 0; g < groups; g++) {
        const float *a = A + g * m * k, *b = B + g * k * n;
        float *c = C + g * m * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0.0;
                for (int64_t x = 0; x < k; x++)
                    s += (double)a[i * k + x] * (double)b[x * n + j];
                c[i * n + j] = (float)s;
            }
    }
}
