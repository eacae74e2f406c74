/* Quickstart orchestration: z = 2*x + y, tile by tile. For every tile it
 * submits a scale task (a fresh runtime-allocated output) and an add task
 * that writes into the caller's z; the runtime derives scale -> add.
 * quickstart_callable_kernels.h is generated from the callable's one
 * description (CMakeLists.txt / Makefile): SP_FUNC_<kernel> is each
 * kernel's func_id, SP_ARG_<name> / SP_SCALAR_<name> each argument's index. */
#include "simpler/orchestration.h"
#include "quickstart_callable_kernels.h"

SP_ORCH_CONFIG(quickstart_config)
{
    cfg->tensor_count = 3; /* x, y, z */
    cfg->scalar_count = 1; /* tile size */
}

SP_ORCHESTRATION(quickstart_orch)
{
    sp_tensor x = args->tensors[SP_ARG_x], y = args->tensors[SP_ARG_y];
    sp_tensor z = args->tensors[SP_ARG_z];
    int64_t n = x.shape[0], tile = (int64_t)args->scalars[SP_SCALAR_tile];
    if (tile < 1 || n % tile) {
        sp_orch_fatal(o, SP_EINVAL, "tile %lld does not divide n %lld", (long long)tile,
                      (long long)n);
        return;
    }
    for (int64_t t0 = 0; t0 < n; t0 += tile) {
        sp_tensor xt, yt, zt, scaled = sp_tensor_spec(SP_DTYPE_F32, 1, &tile);
        sp_tensor_slice(&x, 0, t0, tile, &xt);
        sp_tensor_slice(&y, 0, t0, tile, &yt);
        sp_tensor_slice(&z, 0, t0, tile, &zt);

        sp_task t = sp_task_aiv(SP_FUNC_qs_scale);
        sp_task_in(&t, &xt);
        sp_task_out(&t, &scaled); /* filled in by the submit */
        sp_task_scalar_f32(&t, 2.0f);
        sp_task_blocks(&t, 2); /* SPMD: two blocks share the tile */
        if (sp_submit(o, &t) < 0)
            return;

        t = sp_task_aiv(SP_FUNC_qs_add);
        sp_task_in(&t, &scaled);
        sp_task_in(&t, &yt);
        sp_task_arg(&t, &zt, SP_OUT_EXISTING);
        if (sp_submit(o, &t) < 0)
            return;
    }
}
