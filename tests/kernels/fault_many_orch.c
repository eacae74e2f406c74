/* Orchestration for the signal tests: scalar 0 tasks marking y[0] = 11
 * (a write-after-write chain), then one marking y[1] = 22, so a run spends
 * most of its time orchestrating. Built without sanitizers (fault_*). */
#include "simpler/orchestration.h"

SP_ORCHESTRATION(fault_many_orch)
{
    sp_tensor y = args->tensors[0];
    sp_tensor e0, e1;
    sp_tensor_slice(&y, 0, 0, 1, &e0);
    sp_tensor_slice(&y, 0, 1, 1, &e1);
    for (uint64_t i = 0; i < args->scalars[0]; i++) {
        sp_task t = sp_task_aiv(0);
        sp_task_arg(&t, &e0, SP_OUT_EXISTING);
        sp_task_scalar(&t, 11);
        if (sp_submit(o, &t) < 0)
            return;
    }
    sp_task t = sp_task_aiv(0);
    sp_task_arg(&t, &e1, SP_OUT_EXISTING);
    sp_task_scalar(&t, 22);
    sp_submit(o, &t);
}
