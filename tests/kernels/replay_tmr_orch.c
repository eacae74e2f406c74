/* Orchestrations for the tmr replay tests (tests/worker/test_replay_tmr.c).
 * Tensors: [0] x (IN, u64), [1] y (INOUT, u64), [2] ctl (IN, u64 control
 * values). Scalars: [0] mode and [1] n shape the graph; [2] is data, which
 * reaches tasks only through sp_task_scalar_arg (patched on replay). */
#include "simpler/orchestration.h"

enum { K_AFFINE = 0, K_ACC = 1 };

#define RT_L 4 /* elements per block */

enum {
    MODE_PIPE = 0,          /* heap intermediates, scopes, a static accumulator, a data scalar */
    MODE_CONTROL = 1,       /* ctl[0] (read by the orchestration) tasks */
    MODE_READ_PRODUCED = 2, /* reads a value a task wrote: never kept */
    MODE_INDEPENDENT = 3,   /* n tasks, y[i] = x[i] + s2 */
    MODE_CHAIN = 4,         /* n tasks, y[0] += x[i] */
    MODE_WRITE = 5,         /* a control write (y[0] = s2), then y block 1 = x block 1 * 2 + 1 */
};

SP_ORCH_CONFIG(replay_tmr_config)
{
    cfg->tensor_count = 3;
    cfg->scalar_count = 3;
    cfg->replay = SP_ORCH_REPLAY_DECLARED;
    cfg->shaping_scalars[0] = 0x3; /* mode, n */
    cfg->shaping_scalars[1] = 0;
}

/* The same orchestration, declared never to be kept. */
SP_ORCH_CONFIG(replay_tmr_never_config)
{
    cfg->tensor_count = 3;
    cfg->scalar_count = 3;
    cfg->replay = SP_ORCH_REPLAY_NEVER;
}

static int block(const sp_tensor *t, int64_t b, int64_t len, sp_tensor *out)
{
    return sp_tensor_slice(t, 0, b * len, len, out);
}

/* out = in * mul + add, add a literal or (data >= 0) run scalar `data`. */
static int64_t affine(sp_orch *o, const sp_args *args, sp_tensor *in, sp_tensor *out, int out_dir,
                      uint64_t mul, uint64_t add, int data)
{
    sp_task t = sp_task_aiv(K_AFFINE);
    sp_task_arg(&t, in, SP_IN);
    if (out_dir == SP_OUT)
        sp_task_out(&t, out);
    else
        sp_task_arg(&t, out, (sp_dir)out_dir);
    sp_task_scalar(&t, mul);
    if (data >= 0)
        sp_task_scalar_arg(&t, args, (uint32_t)data);
    else
        sp_task_scalar(&t, add);
    return sp_submit(o, &t);
}

static int64_t acc(sp_orch *o, sp_tensor *a, sp_tensor *x)
{
    sp_task t = sp_task_aiv(K_ACC);
    sp_task_arg(&t, a, SP_INOUT);
    sp_task_arg(&t, x, SP_IN);
    return sp_submit(o, &t);
}

/* y block b (of y's first len - RT_L elements) = (x block b * 3 + s2) + i
 * per iteration i; a scope per two iterations (at most 5 tasks: it fits an
 * 8-slot window); the static accumulator sums the intermediates of every
 * tenth iteration into y's last block. */
static void pipe(sp_orch *o, const sp_args *args, int64_t n)
{
    sp_tensor x = args->tensors[0], y = args->tensors[1];
    int64_t blocks = y.shape[0] / RT_L - 1;
    int64_t l = RT_L;
    sp_tensor a = sp_tensor_spec(SP_DTYPE_U64, 1, &l), xb, yb, h;
    if (sp_alloc_tensor(o, &a) != SP_OK || block(&x, 0, RT_L, &xb) != SP_OK)
        return;
    if (affine(o, args, &xb, &a, SP_OUT_EXISTING, 0, 0, -1) < 0) /* a = 0 */
        return;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = i % blocks;
        if (i % 2 == 0)
            sp_scope_begin(o, SP_SCOPE_AUTO);
        h = sp_tensor_spec(SP_DTYPE_U64, 1, &l);
        if (block(&x, b, RT_L, &xb) != SP_OK || block(&y, b, RT_L, &yb) != SP_OK ||
            affine(o, args, &xb, &h, SP_OUT, 3, 0, 2) < 0 ||
            affine(o, args, &h, &yb, SP_OUT_EXISTING, 1, (uint64_t)i, -1) < 0)
            return;
        if (i % 10 == 0 && acc(o, &a, &h) < 0)
            return;
        if (i % 2 == 1 || i == n - 1)
            sp_scope_end(o);
    }
    if (block(&y, blocks, RT_L, &yb) == SP_OK)
        affine(o, args, &a, &yb, SP_OUT_EXISTING, 1, 0, -1);
}

SP_ORCHESTRATION(replay_tmr)
{
    sp_tensor x = args->tensors[0], y = args->tensors[1], ctl = args->tensors[2];
    int64_t n = (int64_t)args->scalars[1];
    sp_tensor xb, yb, h;
    int64_t l = RT_L;
    switch (args->scalars[0]) {
    case MODE_PIPE:
        pipe(o, args, n);
        break;
    case MODE_CONTROL: {
        int64_t k = sp_tensor_read_int(o, &ctl, 0);
        for (int64_t b = 0; b < k; b++)
            if (block(&x, b, RT_L, &xb) != SP_OK || block(&y, b, RT_L, &yb) != SP_OK ||
                affine(o, args, &xb, &yb, SP_OUT_EXISTING, 2, (uint64_t)b, -1) < 0)
                return;
        break;
    }
    case MODE_READ_PRODUCED: {
        h = sp_tensor_spec(SP_DTYPE_U64, 1, &l);
        if (block(&x, 0, RT_L, &xb) != SP_OK || affine(o, args, &xb, &h, SP_OUT, 1, 0, 2) < 0)
            return;
        int64_t v = sp_tensor_read_int(o, &h, 0);
        for (int64_t b = 0; b < v % 3 + 1; b++)
            if (block(&x, b, RT_L, &xb) != SP_OK || block(&y, b, RT_L, &yb) != SP_OK ||
                affine(o, args, &xb, &yb, SP_OUT_EXISTING, 1, (uint64_t)v, -1) < 0)
                return;
        break;
    }
    case MODE_INDEPENDENT:
        for (int64_t i = 0; i < n; i++)
            if (block(&x, i, 1, &xb) != SP_OK || block(&y, i, 1, &yb) != SP_OK ||
                affine(o, args, &xb, &yb, SP_OUT_EXISTING, 1, 0, 2) < 0)
                return;
        break;
    case MODE_CHAIN:
        if (block(&y, 0, 1, &yb) != SP_OK)
            return;
        for (int64_t i = 0; i < n; i++)
            if (block(&x, i % x.shape[0], 1, &xb) != SP_OK || acc(o, &yb, &xb) < 0)
                return;
        break;
    case MODE_WRITE: {
        uint64_t v = args->scalars[2];
        if (sp_tensor_write(o, &y, 0, &v) != SP_OK || block(&x, 1, RT_L, &xb) != SP_OK ||
            block(&y, 1, RT_L, &yb) != SP_OK)
            return;
        affine(o, args, &xb, &yb, SP_OUT_EXISTING, 2, 1, -1);
        break;
    }
    default:
        sp_orch_fatal(o, SP_EINVAL, "unknown mode");
    }
}
