/* vector_example golden: the formula evaluated directly, per element. */
#include <stdint.h>

#include "vector_example/golden.h"

void vector_example_golden(const float *a, const float *b, float *f, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float c = a[i] + b[i];
        f[i] = (c + 1.0f) * (c + 2.0f) + c;
    }
}
