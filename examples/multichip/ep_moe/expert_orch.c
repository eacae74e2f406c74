/* ep_moe chip callable 2 of 3: this chip's experts over the rows every
 * chip sent them, one AIC task per local expert (kernels/ep_ffn.c).
 *
 * Args: tensors recv [P,Ep,C,H] IN (the received alltoall blocks: source
 * chip, local expert, slot), w1 [Ep,H,F] IN, w2 [Ep,F,H] IN, y [P,Ep,C,H]
 * OUT (the same layout, the reverse alltoall's input). */
#include "mc_ep_expert_kernels.h"
#include "simpler/orchestration.h"

SP_ORCH_CONFIG(mc_ep_expert_config)
{
    cfg->tensor_count = 4;
    cfg->scalar_count = 0;
}

SP_ORCHESTRATION(mc_ep_expert_orch)
{
    const sp_tensor *t = args->tensors;
    if (t[0].ndim != 4 || t[3].ndim != 4 || t[1].ndim != 3 || t[2].ndim != 3 ||
        t[1].shape[0] != t[0].shape[1] || t[2].shape[0] != t[0].shape[1]) {
        sp_orch_fatal(o, SP_ESHAPE,
                      "mc_ep_expert: want recv/y [P,Ep,C,H], w1 [Ep,H,F], "
                      "w2 [Ep,F,H]");
        return;
    }
    for (int64_t e = 0; e < t[0].shape[1]; e++) {
        sp_tensor x_e, w1_e, w2_e, y_e;
        if (sp_tensor_slice(&t[0], 1, e, 1, &x_e) || sp_tensor_slice(&t[1], 0, e, 1, &w1_e) ||
            sp_tensor_slice(&t[2], 0, e, 1, &w2_e) || sp_tensor_slice(&t[3], 1, e, 1, &y_e)) {
            sp_orch_fatal(o, SP_ESHAPE, "mc_ep_expert: cannot slice expert %lld", (long long)e);
            return;
        }
        sp_task k = sp_task_aic(SP_FUNC_ep_ffn);
        sp_task_in(&k, &x_e);
        sp_task_in(&k, &w1_e);
        sp_task_in(&k, &w2_e);
        sp_task_arg(&k, &y_e, SP_OUT_EXISTING);
        if (sp_submit(o, &k) < 0)
            return;
    }
}
