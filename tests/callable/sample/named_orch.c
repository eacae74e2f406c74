/* Sample orchestration for kernels named once (issue 14): it names its
 * kernel and arguments through the header simpler_add_callable generated
 * (named_callable_kernels.h), so no func_id or index is written by hand.
 * Only packed and validated here, never run. */
#include "named_callable_kernels.h"
#include "simpler/orchestration.h"

/* The header was written before this file compiled, with the func_ids in
 * KERNEL order and the argument indices in SIGNATURE order. */
_Static_assert(SP_FUNC_sample_add == 0 && SP_FUNC_scale == 1, "func_ids in KERNEL order");
_Static_assert(SP_ARG_x == 0 && SP_ARG_y == 1 && SP_ARG_z == 2 && SP_SCALAR_factor == 0,
               "argument indices in SIGNATURE order");

SP_ORCHESTRATION(named_orch)
{
    sp_tensor x = args->tensors[SP_ARG_x], y = args->tensors[SP_ARG_y];
    sp_tensor z = args->tensors[SP_ARG_z];
    sp_task t = sp_task_aiv(SP_FUNC_sample_add);
    sp_task_in(&t, &x);
    sp_task_in(&t, &y);
    sp_task_out(&t, &z);
    if (sp_submit(o, &t) < 0)
        sp_orch_fatal(o, SP_EORCH_FATAL, "named_orch: submit failed");
    (void)args->scalars[SP_SCALAR_factor];
}
