/* ep_moe chip callable 3 of 3: the combine of this chip's tokens from the
 * returned expert outputs (one AIV task, kernels/ep_combine.c).
 *
 * Args: tensors ret [E*C,H] IN (the reverse alltoall's output), slot_tok
 * i32 [E*C] IN, slot_gate f32 [E*C] IN, out [T,H] OUT. */
#include "mc_ep_combine_kernels.h"
#include "simpler/orchestration.h"

SP_ORCH_CONFIG(mc_ep_combine_config)
{
    cfg->tensor_count = 4;
    cfg->scalar_count = 0;
}

SP_ORCHESTRATION(mc_ep_combine_orch)
{
    sp_tensor t[4];
    memcpy(t, args->tensors, sizeof t);
    sp_task k = sp_task_aiv(SP_FUNC_ep_combine);
    sp_task_in(&k, &t[0]);
    sp_task_in(&k, &t[1]);
    sp_task_in(&k, &t[2]);
    sp_task_arg(&k, &t[3], SP_OUT_EXISTING);
    sp_submit(o, &k);
}
