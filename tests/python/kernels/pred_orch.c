/* A callable for tests/python/test_replay.py (build_callable): one task
 * per row of `rows`, each predicated on its flag (flags[i] != 0): a task
 * whose flag is 0 is retired without running and its row keeps its
 * contents; one whose flag is set adds 1 to its row's element 0. The rows
 * are INOUT, as a skipped task's outputs must be.
 * Signature: flags:in:i32[n],rows:inout:f32[n,16] */
#include "pred_kernels.h"
#include "simpler/orchestration.h"

SP_ORCHESTRATION(orchestration)
{
    sp_tensor flags = args->tensors[SP_ARG_flags], rows = args->tensors[SP_ARG_rows];
    for (int64_t i = 0; i < rows.shape[0]; i++) {
        sp_tensor row;
        if (sp_tensor_slice(&rows, 0, i, 1, &row) != SP_OK) {
            sp_orch_fatal(o, SP_ESHAPE, "pred: cannot slice row %lld", (long long)i);
            return;
        }
        sp_task t = sp_task_aiv(SP_FUNC_pred_mark);
        sp_task_inout(&t, &row);
        sp_task_predicate(&t, &flags, i, SP_PRED_NE, 0);
        if (sp_submit(o, &t) < 0)
            return; /* the runtime recorded why */
    }
}
