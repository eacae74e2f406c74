/* tp_ffn chip callable: one chip's shard of y = relu(x W1) W2.
 * h = x @ w1 (AIC, fresh), relu in place (AIV), y = h @ w2 (AIC, into the
 * caller's y: on L3 a view of the chip's communication window, so the
 * allreduce that follows sums the partial results in place).
 *
 * Args: tensors x [T,H] IN, w1 [H,Fp] IN, w2 [Fp,H] IN, y [T,H] OUT. */
#include "mc_tp_ffn_kernels.h"
#include "simpler/orchestration.h"

enum { A_X, A_W1, A_W2, A_Y, A_N };

SP_ORCH_CONFIG(mc_tp_ffn_config)
{
    cfg->tensor_count = A_N;
    cfg->scalar_count = 0;
}

SP_ORCHESTRATION(mc_tp_ffn_orch)
{
    sp_tensor t[A_N];
    memcpy(t, args->tensors, sizeof t);
    const int ok = t[A_X].ndim == 2 && t[A_W1].ndim == 2 && t[A_W2].ndim == 2 && t[A_Y].ndim == 2 &&
                   t[A_W1].shape[0] == t[A_X].shape[1] && t[A_W2].shape[0] == t[A_W1].shape[1] &&
                   t[A_Y].shape[0] == t[A_X].shape[0] && t[A_Y].shape[1] == t[A_W2].shape[1];
    if (!ok) {
        sp_orch_fatal(o, SP_ESHAPE, "mc_tp_ffn: want x [T,H], w1 [H,Fp], w2 [Fp,H], y [T,H]");
        return;
    }
    const int64_t h_shape[2] = {t[A_X].shape[0], t[A_W1].shape[1]};
    sp_tensor h = sp_tensor_spec(SP_DTYPE_F32, 2, h_shape);

    sp_task k = sp_task_aic(SP_FUNC_tp_matmul);
    sp_task_in(&k, &t[A_X]);
    sp_task_in(&k, &t[A_W1]);
    sp_task_out(&k, &h);
    if (sp_submit(o, &k) < 0)
        return;
    k = sp_task_aiv(SP_FUNC_tp_relu);
    sp_task_inout(&k, &h);
    if (sp_submit(o, &k) < 0)
        return;
    k = sp_task_aic(SP_FUNC_tp_matmul);
    sp_task_in(&k, &h);
    sp_task_in(&k, &t[A_W2]);
    sp_task_arg(&k, &t[A_Y], SP_OUT_EXISTING);
    sp_submit(o, &k);
}
