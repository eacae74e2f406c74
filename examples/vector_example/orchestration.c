/* vector_example orchestration: f = (c+1)*(c+2) + c with c = a + b.
 * Five tasks whose six edges all come from data (creator / read-after-write):
 * c->d, c->e, d->g, e->g, g->f, c->f. Intermediates are runtime-allocated;
 * f is the caller's buffer, written in place by the last task.
 *
 * Args: tensors a (IN), b (IN), f (OUT), all f32 of one shape;
 * scalar 0 = SPMD blocks per task (>= 1). */
#include "simpler/orchestration.h"
#include "vector_example_kernels.h"

/* func_ids: examples/CMakeLists.txt names each kernel once and
 * simpler_add_callable generates vector_example_kernels.h with SP_FUNC_<kernel>. */
enum {
    VEC_ADD = SP_FUNC_vec_add,
    VEC_ADD_SCALAR = SP_FUNC_vec_add_scalar,
    VEC_MUL = SP_FUNC_vec_mul
};

SP_ORCH_CONFIG(vector_example_config)
{
    cfg->tensor_count = 3;
    cfg->scalar_count = 1;
}

/* Submit a binary op x (op) y -> out; out is fresh unless `dir` says otherwise. */
static int64_t binary(sp_orch *o, int func, sp_tensor *x, sp_tensor *y, sp_tensor *out, sp_dir dir,
                      uint32_t blocks)
{
    sp_task t = sp_task_aiv(func);
    sp_task_in(&t, x);
    sp_task_in(&t, y);
    sp_task_arg(&t, out, dir);
    sp_task_blocks(&t, blocks);
    return sp_submit(o, &t);
}

static int64_t add_scalar(sp_orch *o, sp_tensor *x, float s, sp_tensor *out, uint32_t blocks)
{
    sp_task t = sp_task_aiv(VEC_ADD_SCALAR);
    sp_task_in(&t, x);
    sp_task_out(&t, out);
    sp_task_scalar_f32(&t, s);
    sp_task_blocks(&t, blocks);
    return sp_submit(o, &t);
}

SP_ORCHESTRATION(vector_example_orch)
{
    /* Copies: submit may fill descriptors, and args is const. */
    sp_tensor a = args->tensors[0], b = args->tensors[1], f = args->tensors[2];
    uint64_t blocks = args->scalars[0];
    if (blocks < 1 || blocks > 1024) {
        sp_orch_fatal(o, SP_EINVAL, "vector_example: blocks=%llu, want 1..1024",
                      (unsigned long long)blocks);
        return;
    }
    sp_tensor c = sp_tensor_spec(SP_DTYPE_F32, a.ndim, a.shape);
    sp_tensor d = c, e = c, g = c;

    if (binary(o, VEC_ADD, &a, &b, &c, SP_OUT, (uint32_t)blocks) < 0 ||
        add_scalar(o, &c, 1.0f, &d, (uint32_t)blocks) < 0 ||
        add_scalar(o, &c, 2.0f, &e, (uint32_t)blocks) < 0 ||
        binary(o, VEC_MUL, &d, &e, &g, SP_OUT, (uint32_t)blocks) < 0)
        return; /* the runtime recorded why */
    binary(o, VEC_ADD, &g, &c, &f, SP_OUT_EXISTING, (uint32_t)blocks);
}
