/* ep_moe chip callable 1 of 3: route this chip's tokens and fill the
 * dispatch buffer (one AIV task, kernels/ep_route.c).
 *
 * Args: tensors x [T,H] IN, wr [H,E] IN, send [E*C,H] OUT (a view of the
 * chip's window), slot_tok i32 [E*C] OUT, slot_gate f32 [E*C] OUT;
 * scalars top_k, C (capacity per expert). */
#include "mc_ep_dispatch_kernels.h"
#include "simpler/orchestration.h"

SP_ORCH_CONFIG(mc_ep_dispatch_config)
{
    cfg->tensor_count = 5;
    cfg->scalar_count = 2;
}

SP_ORCHESTRATION(mc_ep_dispatch_orch)
{
    sp_tensor t[5];
    memcpy(t, args->tensors, sizeof t);
    sp_task k = sp_task_aiv(SP_FUNC_ep_route);
    sp_task_in(&k, &t[0]);
    sp_task_in(&k, &t[1]);
    for (int i = 2; i < 5; i++)
        sp_task_arg(&k, &t[i], SP_OUT_EXISTING);
    sp_task_scalar_arg(&k, args, 0);
    sp_task_scalar_arg(&k, args, 1);
    sp_submit(o, &k);
}
