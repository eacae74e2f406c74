/* Orchestrations for the ring tests: scalar 0 picks a mode, scalar 1 is a
 * size. Tensor 0 is a u64 run argument `y` the tasks mark. */
#include "simpler/orchestration.h"

enum { K_MARK = 0, K_SLOW = 1 };

#define SLOW_STEP_US 5000 /* the longest one MODE_CONTROL_WAIT kernel is busy */

enum {
    MODE_INDEPENDENT = 0,    /* n tasks, task i marks y[i] with i + 1 */
    MODE_SCOPE_OVERFLOW = 1, /* one scope holding n tasks */
    MODE_TASK_TOO_BIG = 2,   /* one task whose output is n bytes */
    MODE_SCOPE_HEAP = 3,     /* one scope of tasks with 1 KiB outputs each */
    MODE_CONTROL_WAIT = 4,   /* read what a chain of kernels busy for n us writes */
    MODE_RETIRED = 5,        /* use an output after n later tasks */
};

SP_ORCH_CONFIG(orch_tmr_config)
{
    cfg->tensor_count = 1;
    cfg->scalar_count = 2;
}

/* A task that marks element i of y (a one-element view) with v. */
static int64_t mark(sp_orch *o, const sp_tensor *y, int64_t i, uint64_t v)
{
    sp_tensor e;
    if (sp_tensor_slice(y, 0, i, 1, &e) != SP_OK)
        return SP_ESHAPE;
    sp_task t = sp_task_aiv(K_MARK);
    sp_task_arg(&t, &e, SP_OUT_EXISTING);
    sp_task_scalar(&t, v);
    return sp_submit(o, &t);
}

/* A task with a fresh output of `bytes` bytes (u64 elements). */
static int64_t make(sp_orch *o, sp_tensor *out, int64_t bytes)
{
    int64_t n = bytes / 8 > 0 ? bytes / 8 : 1;
    *out = sp_tensor_spec(SP_DTYPE_U64, 1, &n);
    sp_task t = sp_task_aiv(K_MARK);
    sp_task_out(&t, out);
    sp_task_scalar(&t, 7);
    return sp_submit(o, &t);
}

SP_ORCHESTRATION(orch_tmr)
{
    sp_tensor y = args->tensors[0];
    int64_t n = (int64_t)args->scalars[1];
    int64_t len = y.shape[0];
    sp_tensor out;
    switch (args->scalars[0]) {
    case MODE_INDEPENDENT:
        for (int64_t i = 0; i < n; i++)
            if (mark(o, &y, i % len, (uint64_t)i + 1) < 0)
                return;
        break;
    case MODE_SCOPE_OVERFLOW:
        sp_scope_begin(o, SP_SCOPE_AUTO);
        for (int64_t i = 0; i < n; i++)
            if (make(o, &out, 8) < 0)
                return;
        sp_scope_end(o);
        break;
    case MODE_TASK_TOO_BIG:
        make(o, &out, n);
        break;
    case MODE_SCOPE_HEAP:
        sp_scope_begin(o, SP_SCOPE_AUTO);
        for (int64_t i = 0; i < n; i++)
            if (make(o, &out, 1024) < 0)
                return;
        sp_scope_end(o);
        break;
    case MODE_CONTROL_WAIT: {
        /* The run's timeout_us bounds both a control wait and each kernel:
         * one kernel busy past it would race the wait's backstop, so the
         * n us are a chain of kernels each well under it (at most 60 tasks
         * for the tests' 300 ms, inside a 64-slot window). */
        sp_tensor e;
        sp_tensor_slice(&y, 0, 0, 1, &e);
        for (int64_t done = 0, step; done < n; done += step) {
            step = n - done < SLOW_STEP_US ? n - done : SLOW_STEP_US;
            sp_task t = sp_task_aiv(K_SLOW);
            sp_task_inout(&t, &e);
            sp_task_scalar(&t, 42);
            sp_task_scalar(&t, (uint64_t)step);
            if (sp_submit(o, &t) < 0)
                return;
        }
        uint64_t v = 0;
        sp_tensor_read(o, &y, 0, &v);
        break;
    }
    case MODE_RETIRED: {
        sp_tensor first;
        if (make(o, &first, 8) < 0)
            return;
        for (int64_t i = 0; i < n; i++)
            if (make(o, &out, 8) < 0)
                return;
        sp_task t = sp_task_aiv(K_MARK);
        sp_task_inout(&t, &first);
        sp_task_scalar(&t, 1);
        sp_submit(o, &t);
        break;
    }
    default:
        sp_orch_fatal(o, SP_EINVAL, "orch_tmr: unknown mode %llu",
                      (unsigned long long)args->scalars[0]);
    }
}
