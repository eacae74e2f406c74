/* dp_attention chip callable: decode attention for this chip's part of
 * the batch, one AIV task per sequence (kernels/dpa_attn.c); the tasks
 * share the caches read-only, so they are independent.
 *
 * Args: tensors query [b,NH,D] IN, key_cache [NB,BS,NH,D] IN, value_cache
 * [NB,BS,NH,D] IN, block_table i32 [b,MB] IN, context_lens i32 [b] IN,
 * out [b,NH,D] OUT; scalar scale (f32). */
#include "mc_dp_attention_kernels.h"
#include "simpler/orchestration.h"

enum { A_Q, A_K, A_V, A_BT, A_LEN, A_OUT, A_N };

SP_ORCH_CONFIG(mc_dp_attention_config)
{
    cfg->tensor_count = A_N;
    cfg->scalar_count = 1;
}

SP_ORCHESTRATION(mc_dp_attention_orch)
{
    sp_tensor t[A_N];
    memcpy(t, args->tensors, sizeof t);
    const int64_t b = t[A_Q].shape[0];
    if (t[A_Q].ndim != 3 || t[A_BT].ndim != 2 || t[A_LEN].ndim != 1 || t[A_OUT].ndim != 3 ||
        t[A_BT].shape[0] != b || t[A_LEN].shape[0] != b || t[A_OUT].shape[0] != b) {
        sp_orch_fatal(o, SP_ESHAPE,
                      "mc_dp_attention: want query/out [b,NH,D], block_table "
                      "[b,MB], context_lens [b]");
        return;
    }
    for (int64_t i = 0; i < b; i++) {
        sp_tensor q, bt, len, out;
        if (sp_tensor_slice(&t[A_Q], 0, i, 1, &q) || sp_tensor_slice(&t[A_BT], 0, i, 1, &bt) ||
            sp_tensor_slice(&t[A_LEN], 0, i, 1, &len) ||
            sp_tensor_slice(&t[A_OUT], 0, i, 1, &out)) {
            sp_orch_fatal(o, SP_ESHAPE, "mc_dp_attention: cannot slice sequence %lld",
                          (long long)i);
            return;
        }
        sp_task k = sp_task_aiv(SP_FUNC_dpa_attn);
        sp_task_in(&k, &q);
        sp_task_in(&k, &t[A_K]);
        sp_task_in(&k, &t[A_V]);
        sp_task_in(&k, &bt);
        sp_task_in(&k, &len);
        sp_task_arg(&k, &out, SP_OUT_EXISTING);
        sp_task_scalar_arg(&k, args, 0);
        if (sp_submit(o, &k) < 0)
            return;
    }
}
