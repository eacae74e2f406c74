/* moe orchestration: a mixture-of-experts layer with predicated experts.
 *
 * The router (one AIV task) picks each token's top_k experts and writes
 * per-expert token counts (the run's `counts`, i32 [E]) and token lists.
 * Then each expert e gets five tasks: gather its tokens, the up matmul
 * (AIC), SiLU, the down matmul (AIC) and a scatter-add of the gated
 * results into `out` (which an init task set to x, the residual). The
 * orchestration cannot know which experts get tokens (on
 * host_build_graph it runs before the router does), so each expert task
 * carries a predicate, counts[e] != 0: an expert with no token is
 * retired without running. Everything such a task writes is an existing
 * buffer (per-expert slices of runtime-allocated buffers, or `out`,
 * INOUT), so a skip leaves it as it was; and every expert kernel works on
 * the first counts[e] rows only, so the result is the same whether an
 * empty expert's tasks are skipped or run.
 *
 * Args: tensors x [T,Hd] IN, w_router [Hd,E] IN, router_bias [E] IN,
 * w1 [E,Hd,F] IN, w2 [E,F,Hd] IN, counts i32 [E] OUT, out [T,Hd] OUT;
 * scalars 0 = top_k (data: only the router reads it), 1 = predicated
 * (1: expert tasks predicated on counts[e] != 0; 0: submitted as plain
 * tasks, for comparison; graph-shaping), 2 = padded (data: 1 = the MLP
 * kernels compute all T rows of every expert that runs, static shapes).
 * Tasks: 2 + 5 E. */
#include "simpler/orchestration.h"
#include "moe_kernels.h"

enum {
    MOE_INIT = SP_FUNC_moe_init,
    MOE_ROUTER = SP_FUNC_moe_router,
    MOE_GATHER = SP_FUNC_moe_gather,
    MOE_UP = SP_FUNC_moe_up,
    MOE_ACT = SP_FUNC_moe_act,
    MOE_DOWN = SP_FUNC_moe_down,
    MOE_SCATTER = SP_FUNC_moe_scatter,
};

enum { A_X, A_WR, A_BIAS, A_W1, A_W2, A_COUNTS, A_OUT, A_N };
enum { S_TOP_K, S_PREDICATED, S_PADDED, S_N };

SP_ORCH_CONFIG(moe_config)
{
    cfg->tensor_count = A_N;
    cfg->scalar_count = S_N;
    cfg->replay = SP_ORCH_REPLAY_DECLARED;
    cfg->shaping_scalars[0] = 1ull << S_PREDICATED;
    cfg->shaping_scalars[1] = 0;
}

/* Expert e's task, with scalars e and padded: predicated on counts[e] != 0
 * when `pred`. */
static int submit_expert_task(sp_orch *o, const sp_args *args, sp_task *t, sp_tensor *counts,
                              int64_t e, int pred)
{
    sp_task_scalar(t, (uint64_t)e);
    sp_task_scalar_arg(t, args, S_PADDED);
    if (pred)
        sp_task_predicate(t, counts, e, SP_PRED_NE, 0);
    return sp_submit(o, t) < 0 ? -1 : 0;
}

static int check_shapes(sp_orch *o, const sp_args *args)
{
    const sp_tensor *t = args->tensors;
    const int64_t T = t[A_X].shape[0], Hd = t[A_X].shape[1], E = t[A_WR].shape[1];
    const int64_t F = t[A_W1].shape[2];
    int ok = t[A_X].ndim == 2 && t[A_WR].ndim == 2 && t[A_BIAS].ndim == 1 && t[A_W1].ndim == 3 &&
             t[A_W2].ndim == 3 && t[A_COUNTS].ndim == 1 && t[A_OUT].ndim == 2;
    ok = ok && t[A_WR].shape[0] == Hd && t[A_BIAS].shape[0] == E && E <= 64 &&
         t[A_W1].shape[0] == E && t[A_W1].shape[1] == Hd && t[A_W2].shape[0] == E &&
         t[A_W2].shape[1] == F && t[A_W2].shape[2] == Hd && t[A_COUNTS].shape[0] == E &&
         t[A_COUNTS].dtype == SP_DTYPE_I32 && t[A_OUT].shape[0] == T && t[A_OUT].shape[1] == Hd;
    if (!ok)
        sp_orch_fatal(o, SP_ESHAPE,
                      "moe: want x/out [T,Hd], w_router [Hd,E] (E <= 64), router_bias [E], "
                      "w1 [E,Hd,F], w2 [E,F,Hd], counts i32 [E]");
    return ok ? 0 : -1;
}

SP_ORCHESTRATION(moe_orch)
{
    if (check_shapes(o, args))
        return;
    sp_tensor t[A_N];
    memcpy(t, args->tensors, sizeof t);
    const int64_t T = t[A_X].shape[0], Hd = t[A_X].shape[1], E = t[A_WR].shape[1];
    const int64_t F = t[A_W1].shape[2];
    const int pred = args->scalars[S_PREDICATED] != 0;

    sp_task k = sp_task_aiv(MOE_INIT);
    sp_task_in(&k, &t[A_X]);
    sp_task_arg(&k, &t[A_OUT], SP_OUT_EXISTING);
    if (sp_submit(o, &k) < 0)
        return;

    /* The router's token lists and gates, and per-expert rows: these live
     * for the whole run (allocated, not fresh outputs). What an expert's
     * predicated tasks write must exist before them anyway, and the lists
     * are read by tasks up to 5 E tasks after the router, longer than a
     * small tmr task window keeps a fresh output. */
    const int64_t et_shape[2] = {E, T}, xe_shape[3] = {E, T, Hd}, he_shape[3] = {E, T, F};
    sp_tensor lists = sp_tensor_spec(SP_DTYPE_I32, 2, et_shape);
    sp_tensor gates = sp_tensor_spec(SP_DTYPE_F32, 2, et_shape);
    sp_tensor xe = sp_tensor_spec(SP_DTYPE_F32, 3, xe_shape);
    sp_tensor he = sp_tensor_spec(SP_DTYPE_F32, 3, he_shape), ye = xe;
    if (sp_alloc_tensor(o, &lists) != SP_OK || sp_alloc_tensor(o, &gates) != SP_OK ||
        sp_alloc_tensor(o, &xe) != SP_OK || sp_alloc_tensor(o, &he) != SP_OK ||
        sp_alloc_tensor(o, &ye) != SP_OK)
        return;

    k = sp_task_aiv(MOE_ROUTER);
    sp_task_in(&k, &t[A_X]);
    sp_task_in(&k, &t[A_WR]);
    sp_task_in(&k, &t[A_BIAS]);
    sp_task_arg(&k, &t[A_COUNTS], SP_OUT_EXISTING);
    sp_task_arg(&k, &lists, SP_OUT_EXISTING);
    sp_task_arg(&k, &gates, SP_OUT_EXISTING);
    sp_task_scalar_arg(&k, args, S_TOP_K);
    if (sp_submit(o, &k) < 0)
        return;

    for (int64_t e = 0; e < E; e++) {
        sp_tensor lists_e, gates_e, xe_e, he_e, ye_e, w1_e, w2_e;
        sp_tensor_slice(&lists, 0, e, 1, &lists_e);
        sp_tensor_slice(&gates, 0, e, 1, &gates_e);
        sp_tensor_slice(&xe, 0, e, 1, &xe_e);
        sp_tensor_slice(&he, 0, e, 1, &he_e);
        sp_tensor_slice(&ye, 0, e, 1, &ye_e);
        sp_tensor_slice(&t[A_W1], 0, e, 1, &w1_e);
        sp_tensor_slice(&t[A_W2], 0, e, 1, &w2_e);

        k = sp_task_aiv(MOE_GATHER);
        sp_task_in(&k, &t[A_X]);
        sp_task_in(&k, &lists_e);
        sp_task_in(&k, &t[A_COUNTS]);
        sp_task_arg(&k, &xe_e, SP_OUT_EXISTING);
        if (submit_expert_task(o, args, &k, &t[A_COUNTS], e, pred))
            return;

        k = sp_task_aic(MOE_UP);
        sp_task_in(&k, &xe_e);
        sp_task_in(&k, &w1_e);
        sp_task_in(&k, &t[A_COUNTS]);
        sp_task_arg(&k, &he_e, SP_OUT_EXISTING);
        if (submit_expert_task(o, args, &k, &t[A_COUNTS], e, pred))
            return;

        k = sp_task_aiv(MOE_ACT);
        sp_task_in(&k, &t[A_COUNTS]);
        sp_task_inout(&k, &he_e);
        if (submit_expert_task(o, args, &k, &t[A_COUNTS], e, pred))
            return;

        k = sp_task_aic(MOE_DOWN);
        sp_task_in(&k, &he_e);
        sp_task_in(&k, &w2_e);
        sp_task_in(&k, &t[A_COUNTS]);
        sp_task_arg(&k, &ye_e, SP_OUT_EXISTING);
        if (submit_expert_task(o, args, &k, &t[A_COUNTS], e, pred))
            return;

        k = sp_task_aiv(MOE_SCATTER);
        sp_task_in(&k, &ye_e);
        sp_task_in(&k, &lists_e);
        sp_task_in(&k, &gates_e);
        sp_task_in(&k, &t[A_COUNTS]);
        sp_task_inout(&k, &t[A_OUT]);
        if (submit_expert_task(o, args, &k, &t[A_COUNTS], e, pred))
            return;
    }
}
