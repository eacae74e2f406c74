/* vector_example golden, computed on the host without the kernels. */
#ifndef SP_EXAMPLES_VECTOR_EXAMPLE_GOLDEN_H
#define SP_EXAMPLES_VECTOR_EXAMPLE_GOLDEN_H

#include <stdint.h>

void vector_example_golden(const float *a, const float *b, float *f, int64_t n);

#endif
