/* An orchestration whose every output element depends on its own run's
 * input, for the shared-device tests: tensor 0 = in (u64 [R][W], IN),
 * tensor 1 = out (u64 [R][W], OUT_EXISTING); one AIV task per row r (func_id
 * 0 = row_add) writes out[r][j] = in[r][j] + r + 1. A run that read another
 * run's staging, or whose outputs went to another run's buffers, fails the
 * comparison. */
#include "simpler/orchestration.h"
#include "simpler/tensor.h"

SP_ORCH_CONFIG(orch_rows_config)
{
    cfg->tensor_count = 2;
    cfg->scalar_count = 0;
}

SP_ORCHESTRATION(orch_rows)
{
    sp_tensor in = args->tensors[0], out = args->tensors[1];
    for (int64_t r = 0; r < in.shape[0]; r++) {
        sp_tensor a, b;
        if (sp_tensor_slice(&in, 0, r, 1, &a) || sp_tensor_slice(&out, 0, r, 1, &b)) {
            sp_orch_fatal(o, SP_ESHAPE, "row %lld", (long long)r);
            return;
        }
        sp_task t = sp_task_aiv(0);
        sp_task_in(&t, &a);
        sp_task_arg(&t, &b, SP_OUT_EXISTING);
        sp_task_scalar(&t, (uint64_t)r + 1);
        if (sp_submit(o, &t) < 0)
            return;
    }
}
