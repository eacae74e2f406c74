/* matmul_diamond orchestration: a diamond of four tasks,
 *     b = sqrt(log A)  (AIV)
 *     c = b @ W1, d = b @ W2  (AIC, independent of each other)
 *     F = exp(c + d)  (AIV)
 * so 4 tasks and 4 edges (b->c, b->d, c->F, d->F), all derived from data.
 *
 * Args: tensors A [n,n] (IN), W1 [n,n] (IN), W2 [n,n] (IN), F [n,n] (OUT). */
#include "simpler/orchestration.h"
#include "matmul_diamond_kernels.h"

/* func_ids: examples/CMakeLists.txt names each kernel once and
 * simpler_add_callable generates matmul_diamond_kernels.h with SP_FUNC_<kernel>. */
enum {
    MD_SQRT_LOG = SP_FUNC_md_sqrt_log,
    MD_MATMUL = SP_FUNC_md_matmul,
    MD_ADD_EXP = SP_FUNC_md_add_exp
};

SP_ORCH_CONFIG(matmul_diamond_config)
{
    cfg->tensor_count = 4;
    cfg->scalar_count = 0;
}

static int64_t matmul(sp_orch *o, sp_tensor *x, sp_tensor *w, sp_tensor *out)
{
    sp_task t = sp_task_aic(MD_MATMUL);
    sp_task_in(&t, x);
    sp_task_in(&t, w);
    sp_task_out(&t, out);
    return sp_submit(o, &t);
}

SP_ORCHESTRATION(matmul_diamond_orch)
{
    sp_tensor A = args->tensors[0], W1 = args->tensors[1], W2 = args->tensors[2];
    sp_tensor F = args->tensors[3];
    if (A.ndim != 2 || A.shape[0] != A.shape[1] || W1.ndim != 2 || W1.shape[0] != A.shape[1]) {
        sp_orch_fatal(o, SP_ESHAPE, "matmul_diamond: A must be square and W1 match it");
        return;
    }
    sp_tensor b = sp_tensor_spec(SP_DTYPE_F32, 2, A.shape);
    int64_t cshape[2] = {A.shape[0], W1.shape[1]};
    sp_tensor c = sp_tensor_spec(SP_DTYPE_F32, 2, cshape), d = c;

    sp_task t = sp_task_aiv(MD_SQRT_LOG);
    sp_task_in(&t, &A);
    sp_task_out(&t, &b);
    if (sp_submit(o, &t) < 0 || matmul(o, &b, &W1, &c) < 0 || matmul(o, &b, &W2, &d) < 0)
        return;

    t = sp_task_aiv(MD_ADD_EXP);
    sp_task_in(&t, &c);
    sp_task_in(&t, &d);
    sp_task_arg(&t, &F, SP_OUT_EXISTING);
    sp_submit(o, &t);
}
