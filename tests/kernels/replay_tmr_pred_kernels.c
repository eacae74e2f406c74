/* Kernels of the tmr predicate-replay tests beyond pred_kernels.c
 * (tests/worker/test_replay_tmr_pred.c). */
#include "simpler/kernel.h"

/* [0] out (i64, OUT), [1] value: block 0 stores it in every element (a
 * large fresh output that sweeps the heap ring over whatever it passes). */
SP_KERNEL(pred_scribble)
{
    const sp_tensor *t = sp_arg_tensor(args, 0);
    int64_t *d = sp_tensor_data(t);
    if (ctx->block_idx != 0)
        return;
    for (int64_t i = 0; i < t->shape[0]; i++)
        d[i] = (int64_t)args[1];
}
