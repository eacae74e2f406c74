/* bench/python_overhead.py orchestration: BENCH_TASKS independent tasks of
 * one tiny AIV kernel (set with -DBENCH_TASKS=N when the bench builds the
 * callable: one source, two callables, 1 and 1000 tasks). Task i writes
 * (OUT_EXISTING) its own 64-byte row i of the run's `rows` tensor, so the
 * graph has no edges and a task's cost is the runtime's.
 *
 * Args: tensor 0 = rows, f32 [BENCH_TASKS, 16] (the signature the bench
 * builds with says so, so Python takes the direction from it). */
#include "overhead_kernels.h"
#include "simpler/orchestration.h"

#ifndef BENCH_TASKS
#error "build with -DBENCH_TASKS=<tasks per run>"
#endif

SP_ORCH_CONFIG(overhead_config)
{
    cfg->tensor_count = 1;
    cfg->scalar_count = 0;
}

SP_ORCHESTRATION(overhead_orch)
{
    const sp_tensor rows = args->tensors[0];
    if (rows.ndim != 2 || rows.shape[0] < BENCH_TASKS) {
        sp_orch_fatal(o, SP_ESHAPE, "overhead: rows has %lld rows, want %d",
                      (long long)rows.shape[0], BENCH_TASKS);
        return;
    }
    for (int64_t i = 0; i < BENCH_TASKS; i++) {
        sp_tensor row;
        if (sp_tensor_slice(&rows, 0, i, 1, &row) != SP_OK) {
            sp_orch_fatal(o, SP_ESHAPE, "overhead: cannot slice row %lld", (long long)i);
            return;
        }
        sp_task t = sp_task_aiv(SP_FUNC_overhead_touch);
        sp_task_arg(&t, &row, SP_OUT_EXISTING);
        if (sp_submit(o, &t) < 0)
            return; /* the runtime recorded why */
    }
}
