/* bgemm golden, computed on the host in double without the kernels. */
#ifndef SP_EXAMPLES_BGEMM_GOLDEN_H
#define SP_EXAMPLES_BGEMM_GOLDEN_H

#include <stdint.h>

/* C[g] = A[g] @ B[g] for g < groups; A [G,M,K], B [G,K,N], C [G,M,N] row-major. */
void bgemm_golden(const float *A, const float *B, float *C, int64_t groups, int64_t m, int64_t k,
                  int64_t n);

#endif
