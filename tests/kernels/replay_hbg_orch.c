/* The orchestration of the hbg replay tests (tests/worker/test_replay_hbg.c).
 * Tensors: 0 x (u64 [R][W], IN), 1 y (u64 [R][W], IN), 2 out (u64 [R][W],
 * OUT_EXISTING), 3 ctl (u64 [4], IN: a control tensor the orchestration
 * reads). Scalars: 0 stages (shapes the graph), 1 bias (data: reaches the
 * tasks only through sp_task_scalar_arg, patched on replay).
 *
 * Per row r: h = x[r] + bias (a heap intermediate); `stages` times
 * h = h * y[r] + (s + 1) (heap intermediates, a chain); out[r] = h + r +
 * ctl[0]. ctl[1] == REPLAY_FATAL makes the orchestration fail the run;
 * ctl[2] != 0 also writes ctl[3] (a control write: such graphs are never
 * kept). Kernels: func_id 0 replay_add (out = in + s), 1 replay_mac (out
 * = a * b + s), both in replay_hbg_kernels.c. */
#include "simpler/orchestration.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define REPLAY_FATAL 0xdeadull

SP_ORCH_CONFIG(replay_hbg_config)
{
    cfg->tensor_count = 4;
    cfg->scalar_count = 2;
    cfg->replay = SP_ORCH_REPLAY_DECLARED;
    cfg->shaping_scalars[0] = 1; /* scalar 0 (stages) shapes; scalar 1 (bias) is data */
}

static int out_like(const sp_tensor *row, sp_tensor *h)
{
    return sp_tensor_init(h, 0, row->dtype, row->ndim, row->shape);
}

SP_ORCHESTRATION(replay_hbg_orch)
{
    sp_tensor x = args->tensors[0], y = args->tensors[1], out = args->tensors[2];
    const sp_tensor *ctl = &args->tensors[3];
    uint64_t extra = 0, fatal = 0, write = 0;
    if (sp_tensor_read(o, ctl, 0, &extra) || sp_tensor_read(o, ctl, 1, &fatal) ||
        sp_tensor_read(o, ctl, 2, &write))
        return;
    if (fatal == REPLAY_FATAL) {
        sp_orch_fatal(o, SP_EORCH_FATAL, "ctl[1] asks the run to fail");
        return;
    }
    if (write) {
        uint64_t v = 1;
        if (sp_tensor_write(o, ctl, 3, &v))
            return;
    }
    const uint64_t stages = args->scalars[0];
    for (int64_t r = 0; r < x.shape[0]; r++) {
        sp_tensor xr, yr, outr;
        if (sp_tensor_slice(&x, 0, r, 1, &xr) || sp_tensor_slice(&y, 0, r, 1, &yr) ||
            sp_tensor_slice(&out, 0, r, 1, &outr)) {
            sp_orch_fatal(o, SP_ESHAPE, "row %lld", (long long)r);
            return;
        }
        sp_tensor h;
        out_like(&xr, &h);
        sp_task t = sp_task_aiv(0);
        sp_task_in(&t, &xr);
        sp_task_out(&t, &h);
        sp_task_scalar_arg(&t, args, 1);
        if (sp_submit(o, &t) < 0)
            return;
        for (uint64_t s = 0; s < stages; s++) {
            sp_tensor next;
            out_like(&xr, &next);
            sp_task m = sp_task_aiv(1);
            sp_task_in(&m, &h);
            sp_task_in(&m, &yr);
            sp_task_out(&m, &next);
            sp_task_scalar(&m, s + 1);
            if (sp_submit(o, &m) < 0)
                return;
            h = next;
        }
        sp_task f = sp_task_aiv(0);
        sp_task_in(&f, &h);
        sp_task_arg(&f, &outr, SP_OUT_EXISTING);
        sp_task_scalar(&f, (uint64_t)r + extra);
        if (sp_submit(o, &f) < 0)
            return;
    }
}

/* The same orchestration under a config that says its graph is never kept. */
SP_ORCH_CONFIG(replay_hbg_never_config)
{
    replay_hbg_config(cfg);
    cfg->replay = SP_ORCH_REPLAY_NEVER;
}
