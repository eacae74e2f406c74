/* One kernel for the shared-device tests (tests/worker/test_shared_device.c):
 * args [0] in (a row view, contiguous), [1] out (same shape), [2] scalar:
 * out[j] = in[j] + scalar for every element of the row. */
#include "simpler/kernel.h"
#include "simpler/tensor.h"

SP_KERNEL(row_add)
{
    (void)ctx;
    const sp_tensor *in = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    const uint64_t *src = sp_tensor_data(in);
    uint64_t *dst = sp_tensor_data(out);
    int64_t n = sp_tensor_numel(in);
    for (int64_t j = 0; j < n; j++)
        dst[j] = src[j] + args[2];
}
