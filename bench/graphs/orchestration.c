/* bench_graphs orchestration: N tasks of one empty AIV kernel, shaped by a
 * scalar so that one callable serves every size the bench asks for.
 *
 *   mode 0 (independent): task i writes (OUT_EXISTING) row i of the
 *       [N, 16] f32 tensor: 64 disjoint bytes each, so no edges.
 *   mode 1 (chain): every task is INOUT on row 0: N - 1 edges.
 *
 * Args: tensor 0 = rows f32 [N, 16] (chain: [>= 1, 16]); scalar 0 = N,
 * scalar 1 = mode. */
#include "simpler/orchestration.h"

/* func_ids, matching bench/CMakeLists.txt. */
enum { GB_EMPTY = 0 };
enum { GB_INDEPENDENT = 0, GB_CHAIN = 1 };

SP_ORCH_CONFIG(graphs_config)
{
    cfg->tensor_count = 1;
    cfg->scalar_count = 2;
}

SP_ORCHESTRATION(graphs_orch)
{
    const sp_tensor rows = args->tensors[0];
    const uint64_t n = args->scalars[0], mode = args->scalars[1];
    const uint64_t need = mode == GB_CHAIN ? 1 : n; /* rows the tasks touch */
    if (mode > GB_CHAIN || rows.ndim != 2 || (uint64_t)rows.shape[0] < need) {
        sp_orch_fatal(o, SP_EINVAL, "graphs: mode=%llu n=%llu rows=%lld, want mode 0|1, %llu rows",
                      (unsigned long long)mode, (unsigned long long)n, (long long)rows.shape[0],
                      (unsigned long long)need);
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        sp_tensor row;
        if (sp_tensor_slice(&rows, 0, mode == GB_CHAIN ? 0 : (int64_t)i, 1, &row) != SP_OK) {
            sp_orch_fatal(o, SP_ESHAPE, "graphs: cannot slice row %llu", (unsigned long long)i);
            return;
        }
        sp_task t = sp_task_aiv(GB_EMPTY);
        sp_task_arg(&t, &row, mode == GB_CHAIN ? SP_INOUT : SP_OUT_EXISTING);
        if (sp_submit(o, &t) < 0)
            return; /* the runtime recorded why */
    }
}
