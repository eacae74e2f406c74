/* dummy_chain orchestration: in a MANUAL scope (explicit dependencies only),
 * a chain
 *     gap dummies, stamp 0, gap dummies, stamp 1, ..., stamp S-1, gap dummies
 * where each task depends on the one before it. The stamps share the
 * counter and log tensors, yet in a manual scope no dependency is derived
 * from them: only the dummies order the stamps, and the log (0, 1, 2, ...)
 * proves that they did. Tasks: S + (S+1)*gap, edges: tasks - 1.
 *
 * Args: tensors counter i64 [1] (INOUT, 0 on entry), log i64 [S] (OUT);
 * scalar 0 = gap (dummies between stamps). */
#include "simpler/orchestration.h"
#include "dummy_chain_kernels.h"

/* func_ids: examples/CMakeLists.txt names each kernel once and
 * simpler_add_callable generates dummy_chain_kernels.h with SP_FUNC_<kernel>. */
enum { DC_STAMP = SP_FUNC_dc_stamp };

SP_ORCH_CONFIG(dummy_chain_config)
{
    cfg->tensor_count = 2;
    cfg->scalar_count = 1;
}

/* `gap` dummies, each after the previous task; returns the last id. */
static int64_t dummies(sp_orch *o, int64_t prev, uint64_t gap)
{
    for (uint64_t i = 0; i < gap && prev >= 0; i++)
        prev = sp_submit_dummy(o, &prev, 1);
    return prev;
}

SP_ORCHESTRATION(dummy_chain_orch)
{
    sp_tensor counter = args->tensors[0], log = args->tensors[1];
    const uint64_t gap = args->scalars[0];
    const int64_t stamps = sp_tensor_numel(&log);
    if (gap < 1 || gap > 4096) {
        sp_orch_fatal(o, SP_EINVAL, "dummy_chain: gap=%llu, want 1..4096", (unsigned long long)gap);
        return;
    }
    /* Manual scopes: only the explicit chain orders these tasks. One scope
     * per stamp, so no scope holds more tasks than a bounded task window. */
    if (sp_scope_begin(o, SP_SCOPE_MANUAL) != SP_OK)
        return;
    /* The chain starts with dummies that wait on nothing. */
    int64_t prev = sp_submit_dummy(o, NULL, 0);
    prev = dummies(o, prev, gap - 1);
    sp_scope_end(o);
    for (int64_t s = 0; s < stamps && prev >= 0; s++) {
        if (sp_scope_begin(o, SP_SCOPE_MANUAL) != SP_OK)
            return;
        sp_task t = sp_task_aiv(DC_STAMP);
        sp_task_inout(&t, &counter);
        /* INOUT, not OUT_EXISTING: a stamp writes one element and keeps the rest. */
        sp_task_inout(&t, &log);
        sp_task_scalar(&t, (uint64_t)s);
        sp_task_dep(&t, prev);
        prev = sp_submit(o, &t);
        prev = dummies(o, prev, gap);
        sp_scope_end(o);
    }
}
