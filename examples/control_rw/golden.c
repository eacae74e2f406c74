/* control_rw golden: the whole program in one pass. Inputs are small
 * integers in f32, so every value is exact and the comparison is too. */
#include "control_rw/golden.h"

int64_t control_rw_golden(const float *x, int64_t n, int64_t k, int64_t off, int64_t nrep_fixed,
                          int readback, float *y, int64_t *info)
{
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++)
        count += (double)x[i] * (double)k + (double)off > 0.0;
    const int64_t nrep = readback ? 1 + count % 3 : nrep_fixed;
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)((double)x[i] * (double)k + (double)off + (double)nrep);
    info[0] = count;
    info[1] = nrep;
    return nrep;
}
