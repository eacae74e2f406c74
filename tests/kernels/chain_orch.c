/* The orchestration of the chained-dispatch tests (tests/scene/
 * test_chained.c): submits graph (mode, seed) of tests/support/
 * chain_graph.h, [1] tasks, over tensor 0, a u64 run argument `y` (INOUT)
 * of CHAIN_MAX_CELLS cells. Scalars: [0] mode, [1] tasks, [2] seed.
 * Kernels (tests/support/chain_callable.h): func_id nin for the AIV step
 * with nin inputs, 3 + nin for the AIC one. */
#include "simpler/orchestration.h"

#include "../support/chain_graph.h"

SP_ORCH_CONFIG(chain_orch_config)
{
    cfg->tensor_count = 1;
    cfg->scalar_count = 3;
}

SP_ORCHESTRATION(chain_orch)
{
    const sp_tensor *y = &args->tensors[0];
    uint32_t mode = (uint32_t)args->scalars[0];
    uint64_t n = args->scalars[1];
    chain_gen g;
    chain_begin(&g, mode, args->scalars[2]);
    sp_tensor cell[CHAIN_MAX_CELLS];
    for (uint32_t c = 0; c < g.cells; c++)
        if (sp_tensor_slice(y, 0, (int64_t)c * CHAIN_CELL, CHAIN_CELL, &cell[c]) != SP_OK) {
            sp_orch_fatal(o, SP_ESHAPE, "chain_orch: y too small");
            return;
        }
    for (uint64_t i = 0; i < n; i++) {
        chain_task d = chain_task_at(&g, i);
        sp_task t;
        int32_t aiv = (int32_t)d.nin, aic = 3 + (int32_t)d.nin;
        switch (d.kind) {
        case CHAIN_AIC:
            t = sp_task_aic(aic);
            break;
        case CHAIN_AIV:
            t = sp_task_aiv(aiv);
            break;
        case CHAIN_MIX:
            t = sp_task_mix(aic, aiv, aiv);
            break;
        default:
            t = sp_task_make(SP_SHAPE_DUMMY);
            break;
        }
        if (d.kind != CHAIN_DUMMY) {
            sp_task_blocks(&t, d.blocks);
            sp_task_arg(&t, &cell[d.out], SP_INOUT);
        }
        for (uint32_t k = 0; k < d.nin; k++)
            sp_task_in(&t, &cell[d.in[k]]);
        if (d.kind != CHAIN_DUMMY) {
            sp_task_scalar(&t, i);
            sp_task_scalar(&t, d.kind == CHAIN_MIX);
        }
        if (d.pred)
            sp_task_predicate(&t, &cell[d.pred_cell], 0, SP_PRED_LT, 0);
        if (sp_submit(o, &t) < 0)
            return;
    }
}
