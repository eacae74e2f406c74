/* matmul_diamond golden, computed on the host in double without the kernels. */
#ifndef SP_EXAMPLES_MATMUL_DIAMOND_GOLDEN_H
#define SP_EXAMPLES_MATMUL_DIAMOND_GOLDEN_H

#include <stdint.h>

/* F = exp(sqrt(log A) @ W1 + sqrt(log A) @ W2), all n x n row-major. */
int matmul_diamond_golden(const float *A, const float *W1, const float *W2, float *F, int64_t n);

#endif
