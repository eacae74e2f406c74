/* control_rw orchestration: control values flowing both ways between the
 * orchestration and kernels.
 *   1. read the int64 control tensor `params` = {k, offset, nrep, readback};
 *   2. allocate coef f32 [2] and write {k, offset} into it (sp_tensor_write);
 *   3. affine: y = x * coef[0] + coef[1]  (consumes what was written);
 *   4. count: cnt = #(y > 0);
 *   5. nrep = readback ? 1 + cnt % 3 (sp_tensor_read of a kernel's output:
 *      needs a runtime that runs the orchestration alongside the device)
 *                      : params.nrep;
 *   6. nrep increment tasks (y += 1), then record: info = {cnt, nrep}.
 * Tasks: 3 + nrep, so a wrong branch changes the task count and y.
 *
 * Args: tensors params i64 [4] (IN), x f32 [n] (IN), y f32 [n] (OUT),
 * info i64 [2] (OUT). */
#include "simpler/orchestration.h"
#include "control_rw_kernels.h"

/* func_ids: examples/CMakeLists.txt names each kernel once and
 * simpler_add_callable generates control_rw_kernels.h with SP_FUNC_<kernel>. */
enum {
    CR_AFFINE = SP_FUNC_cr_affine,
    CR_COUNT = SP_FUNC_cr_count,
    CR_INC = SP_FUNC_cr_inc,
    CR_RECORD = SP_FUNC_cr_record
};

SP_ORCH_CONFIG(control_rw_config)
{
    cfg->tensor_count = 4;
    cfg->scalar_count = 0;
}

SP_ORCHESTRATION(control_rw_orch)
{
    const sp_tensor *params = &args->tensors[0];
    sp_tensor x = args->tensors[1], y = args->tensors[2], info = args->tensors[3];
    const int64_t k = sp_tensor_read_int(o, params, 0), off = sp_tensor_read_int(o, params, 1);
    const int64_t nrep_fixed = sp_tensor_read_int(o, params, 2);
    const int64_t readback = sp_tensor_read_int(o, params, 3);
    if (sp_orch_error(o))
        return;

    const int64_t two = 2, one = 1;
    sp_tensor coef = sp_tensor_spec(SP_DTYPE_F32, 1, &two);
    if (sp_alloc_tensor(o, &coef) != SP_OK)
        return;
    const float cv[2] = {(float)k, (float)off};
    if (sp_tensor_write(o, &coef, 0, &cv[0]) != SP_OK ||
        sp_tensor_write(o, &coef, 1, &cv[1]) != SP_OK)
        return;

    sp_task t = sp_task_aiv(CR_AFFINE);
    sp_task_in(&t, &x);
    sp_task_in(&t, &coef);
    sp_task_arg(&t, &y, SP_OUT_EXISTING);
    if (sp_submit(o, &t) < 0)
        return;

    sp_tensor cnt = sp_tensor_spec(SP_DTYPE_I64, 1, &one);
    t = sp_task_aiv(CR_COUNT);
    sp_task_in(&t, &y);
    sp_task_out(&t, &cnt);
    if (sp_submit(o, &t) < 0)
        return;

    int64_t nrep = nrep_fixed;
    if (readback) {
        const int64_t c = sp_tensor_read_int(o, &cnt, 0);
        if (sp_orch_error(o))
            return;
        nrep = 1 + c % 3;
    }
    if (nrep < 0 || nrep > 1000) {
        sp_orch_fatal(o, SP_EINVAL, "control_rw: nrep=%lld, want 0..1000", (long long)nrep);
        return;
    }
    for (int64_t i = 0; i < nrep; i++) {
        t = sp_task_aiv(CR_INC);
        sp_task_inout(&t, &y);
        if (sp_submit(o, &t) < 0)
            return;
    }

    t = sp_task_aiv(CR_RECORD);
    sp_task_in(&t, &cnt);
    sp_task_arg(&t, &info, SP_OUT_EXISTING);
    sp_task_scalar(&t, (uint64_t)nrep);
    sp_submit(o, &t);
}
