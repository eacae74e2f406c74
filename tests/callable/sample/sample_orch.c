/* Sample orchestration for the simpler_add_callable test: z = x + y on one
 * AIV core. Only packed and validated here, never run. */
#include "simpler/orchestration.h"

SP_ORCHESTRATION(sample_orch)
{
    sp_tensor x = args->tensors[0], y = args->tensors[1], z = args->tensors[2];
    sp_task t = sp_task_aiv(0);
    sp_task_in(&t, &x);
    sp_task_in(&t, &y);
    sp_task_out(&t, &z);
    if (sp_submit(o, &t) < 0)
        sp_orch_fatal(o, SP_EORCH_FATAL, "sample_orch: submit failed");
}

SP_ORCH_CONFIG(sample_config)
{
    cfg->abi_version = SP_ORCH_ABI_VERSION;
    cfg->tensor_count = 3;
    cfg->scalar_count = 0;
}
