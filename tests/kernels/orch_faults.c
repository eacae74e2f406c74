/* An orchestration that fails on purpose, one way per mode, for the
 * host_build_graph error tests (tests/runtime/test_hbg_errors.c).
 * Args: tensor 0 = x (u64 [8], INOUT), scalar 0 = mode. Mode 0 is the good
 * run: one AIV task writes 0x5eed into x[0]. Kernels (callable_kernels.so):
 * func_id 0 = callable_fill as AIV, 1 = callable_fill as AIC. */
#include "simpler/orchestration.h"

enum { FILL_AIV = 0, FILL_AIC = 1 };

enum {
    MODE_GOOD = 0,
    MODE_FATAL = 1,
    MODE_BAD_DIRECTION = 2,
    MODE_NULL_TENSOR = 3,
    MODE_TOO_MANY_ARGS = 4,
    MODE_UNKNOWN_FUNC = 5,
    MODE_AIV_IN_AIC_TASK = 6,
    MODE_FUTURE_DEP = 7,
    MODE_SCOPE_LEFT_OPEN = 8,
    MODE_SCOPE_EXTRA_END = 9,
    MODE_ZERO_BLOCKS = 10,
    MODE_OUTSIDE_BUFFERS = 11,
    MODE_HUGE_OUTPUT = 12,
    MODE_FATAL_UNKNOWN_CODE = 13, /* sp_orch_fatal(o, -1000, ...) */
    MODE_FATAL_POSITIVE_CODE = 14,
    MODE_FATAL_NAMED_CODE = 15, /* sp_orch_fatal(o, SP_EDEVMEM, ...) */
    MODE_SUBMIT_FOREVER = 16,   /* submits until a submit fails */
};

SP_ORCH_CONFIG(orch_faults_config)
{
    cfg->tensor_count = 1;
    cfg->scalar_count = 1;
}

SP_ORCHESTRATION(orch_faults)
{
    sp_tensor x = args->tensors[0];
    sp_task t = sp_task_aiv(FILL_AIV);
    sp_task_inout(&t, &x);
    sp_task_scalar(&t, 0x5eed);
    switch (args->scalars[0]) {
    case MODE_GOOD:
        break;
    case MODE_FATAL:
        sp_orch_fatal(o, 0, "the input is %s (code %d)", "unusable", 42);
        return;
    case MODE_BAD_DIRECTION:
        t.dirs[0] = 9;
        break;
    case MODE_NULL_TENSOR:
        sp_task_arg(&t, NULL, SP_IN);
        break;
    case MODE_TOO_MANY_ARGS:
        for (int i = 0; i < SP_MAX_TASK_TENSORS; i++)
            sp_task_in(&t, &x);
        break;
    case MODE_UNKNOWN_FUNC:
        t.func_id[SP_LANE_AIV0] = 77;
        break;
    case MODE_AIV_IN_AIC_TASK: {
        sp_task c = sp_task_aic(FILL_AIV);
        sp_task_inout(&c, &x);
        sp_task_scalar(&c, 0x5eed);
        t = c;
        break;
    }
    case MODE_FUTURE_DEP:
        sp_task_dep(&t, 5);
        break;
    case MODE_SCOPE_LEFT_OPEN:
        sp_scope_begin(o, SP_SCOPE_AUTO);
        break;
    case MODE_SCOPE_EXTRA_END:
        sp_scope_end(o);
        return;
    case MODE_ZERO_BLOCKS:
        sp_task_blocks(&t, 0);
        break;
    case MODE_OUTSIDE_BUFFERS: {
        static sp_tensor stray;
        const int64_t n = 8;
        sp_tensor_init(&stray, 0x40, SP_DTYPE_U64, 1, &n);
        sp_task_in(&t, &stray);
        break;
    }
    case MODE_HUGE_OUTPUT: {
        const int64_t n = 1 << 20;
        static sp_tensor big; /* outlives the switch: submitted below */
        big = sp_tensor_spec(SP_DTYPE_F32, 1, &n);
        sp_task_out(&t, &big);
        break;
    }
    case MODE_FATAL_UNKNOWN_CODE:
        sp_orch_fatal(o, -1000, "a code no status has");
        return;
    case MODE_FATAL_POSITIVE_CODE:
        sp_orch_fatal(o, 7, "a positive code");
        return;
    case MODE_FATAL_NAMED_CODE:
        sp_orch_fatal(o, SP_EDEVMEM, "a named status");
        return;
    case MODE_SUBMIT_FOREVER:
        /* A program that never stops by itself: only a failing submit ends it. */
        while (sp_submit(o, &t) >= 0)
            ;
        return;
    default:
        sp_orch_fatal(o, SP_EINVAL, "unknown mode %llu", (unsigned long long)args->scalars[0]);
        return;
    }
    sp_submit(o, &t);
}
