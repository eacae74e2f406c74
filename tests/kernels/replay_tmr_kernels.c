/* Kernels for the tmr replay tests (tests/worker/test_replay_tmr.c): exact
 * integer arithmetic on contiguous u64 views, so a replayed run can be
 * compared with a fresh one bit for bit. */
#include <signal.h>

#include "simpler/kernel.h"
#include "simpler/tensor.h"

#define REPLAY_TMR_CRASH 0xdeadull /* an input element with this value crashes rt_affine */

/* args: [0] in, [1] out (same length), [2] mul, [3] add: out = in * mul + add.
 * An input element equal to REPLAY_TMR_CRASH raises SIGBUS (a kernel crash
 * the data, not the graph, decides). */
SP_KERNEL(rt_affine)
{
    (void)ctx;
    const sp_tensor *in = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    const uint64_t *x = sp_tensor_data(in);
    uint64_t *y = sp_tensor_data(out);
    int64_t n = sp_tensor_numel(out);
    for (int64_t j = 0; j < n; j++) {
        if (x[j] == REPLAY_TMR_CRASH)
            raise(SIGBUS);
        y[j] = x[j] * args[2] + args[3];
    }
}

/* args: [0] acc (INOUT), [1] in: acc += in, element by element. */
SP_KERNEL(rt_acc)
{
    (void)ctx;
    uint64_t *a = sp_tensor_data(sp_arg_tensor(args, 0));
    const uint64_t *x = sp_tensor_data(sp_arg_tensor(args, 1));
    int64_t n = sp_tensor_numel(sp_arg_tensor(args, 0));
    for (int64_t j = 0; j < n; j++)
        a[j] += x[j];
}
