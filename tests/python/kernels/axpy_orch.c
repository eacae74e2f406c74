/* A callable for tests/python (build_callable): y = alpha * x + y over f32
 * vectors, as two tasks (t = alpha * x; y = y + t) so the graph has one
 * data edge. Kernels and arguments are named by axpy_kernels.h, which
 * build_callable generates; axpy_common.h is an #include'd header the
 * cache tests edit. Signature: x:in:f32[n],y:inout:f32[n],alpha:scalar:f32 */
#include "axpy_common.h"
#include "axpy_kernels.h"
#include "simpler/orchestration.h"

SP_ORCHESTRATION(orchestration)
{
    sp_tensor x = args->tensors[SP_ARG_x], y = args->tensors[SP_ARG_y];
    sp_tensor t = sp_tensor_spec(SP_DTYPE_F32, x.ndim, x.shape);
    sp_task scale = sp_task_aiv(SP_FUNC_axpy_scale);
    sp_task_in(&scale, &x);
    sp_task_out(&scale, &t);
    sp_task_scalar(&scale, args->scalars[SP_SCALAR_alpha]);
    if (sp_submit(o, &scale) < 0)
        return;
    sp_task add = sp_task_aiv(SP_FUNC_axpy_add);
    sp_task_in(&add, &t);
    sp_task_inout(&add, &y);
    sp_task_scalar(&add, AXPY_BIAS_BITS);
    sp_submit(o, &add);
}
