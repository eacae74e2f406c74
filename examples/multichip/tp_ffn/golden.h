/* tp_ffn golden: the whole FFN in plain C. */
#ifndef SP_EXAMPLES_MC_TP_FFN_GOLDEN_H
#define SP_EXAMPLES_MC_TP_FFN_GOLDEN_H

#include <stdint.h>

/* y [T,H] = relu(x [T,H] @ w1 [H,F]) @ w2 [F,H]; 0, or -1 out of memory. */
int tp_ffn_golden(const float *x, const float *w1, const float *w2, int64_t T, int64_t H, int64_t F,
                  float *y);

#endif
