/* fault_poke: out = x + 1, or a store through a bad pointer when the
 * scalar argument is non-zero (test_errors.py's kernel crash). */
#include "simpler/kernel.h"

SP_KERNEL(fault_poke)
{
    (void)ctx;
    const sp_tensor *x = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    if (args[2]) {
        volatile int64_t *bad = (volatile int64_t *)(uintptr_t)16;
        *bad = 1;
        return;
    }
    const int64_t *xp = sp_tensor_data(x);
    int64_t *op = sp_tensor_data(out);
    for (int64_t i = 0; i < sp_tensor_numel(out); i++)
        op[i] = xp[i] + 1;
}
