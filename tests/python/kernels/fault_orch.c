/* A callable for tests/python/test_errors.py: one task of kernel
 * `fault_poke` that writes out = x + 1, or, when scalar `crash` is
 * non-zero, dereferences a bad pointer (a kernel crash the runtime reports
 * as SP_EKERNEL_FAULT naming the task and the kernel).
 * Signature: x:in:i64[n],out:out_existing:i64[n],crash:scalar */
#include "fault_kernels.h"
#include "simpler/orchestration.h"

SP_ORCHESTRATION(orchestration)
{
    sp_tensor x = args->tensors[SP_ARG_x], out = args->tensors[SP_ARG_out];
    sp_task t = sp_task_aiv(SP_FUNC_fault_poke);
    sp_task_in(&t, &x);
    sp_task_arg(&t, &out, SP_OUT_EXISTING);
    sp_task_scalar(&t, args->scalars[SP_SCALAR_crash]);
    sp_submit(o, &t);
}
