/* control_rw golden, computed on the host without the kernels. */
#ifndef SP_EXAMPLES_CONTROL_RW_GOLDEN_H
#define SP_EXAMPLES_CONTROL_RW_GOLDEN_H

#include <stdint.h>

/* y = x*k + off + nrep and info = {#(x*k+off > 0), nrep}, where nrep is
 * 1 + count % 3 when `readback`, else `nrep_fixed`. Returns nrep. */
int64_t control_rw_golden(const float *x, int64_t n, int64_t k, int64_t off, int64_t nrep_fixed,
                          int readback, float *y, int64_t *info);

#endif
