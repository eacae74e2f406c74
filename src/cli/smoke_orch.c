/* The orchestration `simpler smoke` runs: `aic` tasks of the smoke kernel
 * on AIC cores and `aiv` on AIV cores, each in its own manual scope, so
 * no dependency orders them (they all write the marks tensor, each its
 * own core's slot) and no scope outgrows a task window.
 * Args: tensor marks u32 [cores] (INOUT); scalars aic, aiv. */
#include "simpler/kernel.h"
#include "simpler/orchestration.h"

enum { SMOKE_ON_AIC = 0, SMOKE_ON_AIV = 1 }; /* func_ids (src/cli/smoke.c) */

SP_ORCH_CONFIG(smoke_config)
{
    cfg->tensor_count = 1;
    cfg->scalar_count = 2;
}

SP_ORCHESTRATION(smoke_orch)
{
    sp_tensor marks = args->tensors[0];
    const uint64_t n[2] = {args->scalars[0], args->scalars[1]};
    if (n[0] + n[1] > (1u << 16)) {
        sp_orch_fatal(o, SP_EINVAL, "smoke: %llu tasks, want at most 65536",
                      (unsigned long long)(n[0] + n[1]));
        return;
    }
    for (int kind = 0; kind < 2; kind++)
        for (uint64_t i = 0; i < n[kind]; i++) {
            if (sp_scope_begin(o, SP_SCOPE_MANUAL) != SP_OK)
                return;
            sp_task t = kind == 0 ? sp_task_aic(SMOKE_ON_AIC) : sp_task_aiv(SMOKE_ON_AIV);
            sp_task_inout(&t, &marks);
            sp_task_scalar(&t, kind == 0 ? SP_CORE_AIC : SP_CORE_AIV);
            int64_t id = sp_submit(o, &t);
            sp_scope_end(o);
            if (id < 0)
                return;
        }
}
