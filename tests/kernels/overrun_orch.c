/* Orchestration for tests/scene/test_overrun.c; scalar 0 picks the case.
 * Run arguments: [0] x, f32 16 x 16 (INOUT); [1] y, f32 64 (INOUT), the
 * buffer staged right after x; [2] out, f32 4 x 16 (OUT_EXISTING). */
#include "simpler/orchestration.h"

enum { K_FILL = 0, K_COPY = 1 };
enum {
    M_GOOD = 0,
    M_PAST_OUTPUT = 1,
    M_PAST_ARGUMENT = 2,
    M_UNDERRUN = 3,
    M_VIEW_RAW = 5,
    M_VIEW_WAR = 6,
    M_MANUAL_WRITE = 7,
    M_VIEW_MISALIGNED = 8,
};
#define SLOW_MS 100

static int64_t fill(sp_orch *o, sp_tensor *t, sp_dir dir, uint64_t v, int64_t extra, uint64_t ms,
                    int64_t dep)
{
    sp_task k = sp_task_aiv(K_FILL);
    sp_task_arg(&k, t, dir);
    sp_task_scalar(&k, v);
    sp_task_scalar(&k, (uint64_t)extra);
    sp_task_scalar(&k, ms);
    if (dep >= 0)
        sp_task_dep(&k, dep);
    return sp_submit(o, &k);
}

static int64_t copy(sp_orch *o, sp_tensor *in, sp_tensor *out, uint64_t ms, int64_t dep)
{
    sp_task k = sp_task_aiv(K_COPY);
    sp_task_in(&k, in);
    sp_task_arg(&k, out, SP_OUT_EXISTING);
    sp_task_scalar(&k, ms);
    if (dep >= 0)
        sp_task_dep(&k, dep);
    return sp_submit(o, &k);
}

/* Rows 4..7 of x as a tensor of its own that starts 256 bytes into x's
 * buffer (addr inside the buffer, not an offset). */
static sp_tensor inner_rows(const sp_tensor *x, uint64_t into)
{
    const int64_t shape[2] = {4, 16};
    sp_tensor v = sp_tensor_spec(SP_DTYPE_F32, 2, shape);
    v.addr = x->addr + into;
    v.buf_bytes = x->buf_bytes - into;
    v.owner_task = SP_NO_TASK;
    return v;
}

SP_ORCHESTRATION(overrun_orch)
{
    sp_tensor x = args->tensors[0], y = args->tensors[1], out = args->tensors[2];
    const int64_t n64 = 64;
    switch (args->scalars[0]) {
    case M_GOOD: {
        sp_tensor a = sp_tensor_spec(SP_DTYPE_F32, 1, &n64);
        int64_t t = fill(o, &a, SP_OUT, 4, 0, 0, -1);
        copy(o, &a, &y, 0, t);
        fill(o, &x, SP_INOUT, 5, 0, 0, -1);
        break;
    }
    case M_PAST_OUTPUT: {
        /* a, then b right after it; task 2 writes 64 floats past a (into b
         * without red zones) after b was filled; task 3 copies b into y
         * once task 2 is done. */
        sp_tensor a = sp_tensor_spec(SP_DTYPE_F32, 1, &n64);
        sp_tensor b = sp_tensor_spec(SP_DTYPE_F32, 1, &n64);
        fill(o, &a, SP_OUT, 1, 0, 0, -1);
        int64_t fb = fill(o, &b, SP_OUT, 2, 0, 0, -1);
        /* after b's own fill, or the two race for b's first floats */
        int64_t t = fill(o, &a, SP_INOUT, 3, 64, 0, fb);
        copy(o, &b, &y, 0, t);
        break;
    }
    case M_PAST_ARGUMENT:
        fill(o, &x, SP_INOUT, 5, 64, 0, -1); /* 64 floats past x: into y */
        break;
    case M_UNDERRUN:
        fill(o, &y, SP_INOUT, 7, -16, 0, -1); /* 16 floats before y: x's tail */
        break;
    case M_VIEW_RAW: {
        sp_tensor v = inner_rows(&x, 256);
        fill(o, &x, SP_INOUT, 9, 0, SLOW_MS, -1); /* rows 0..15, slowly */
        copy(o, &v, &out, 0, -1);                 /* rows 4..7 through the view */
        break;
    }
    case M_VIEW_WAR: {
        sp_tensor v = inner_rows(&x, 256);
        copy(o, &v, &out, SLOW_MS, -1);     /* rows 4..7, slowly */
        fill(o, &x, SP_INOUT, 9, 0, 0, -1); /* rows 0..15 after it */
        break;
    }
    case M_MANUAL_WRITE: {
        sp_tensor rows;
        sp_tensor_slice(&x, 0, 4, 4, &rows);
        fill(o, &x, SP_INOUT, 9, 0, SLOW_MS, -1); /* AUTO, slow */
        sp_scope_begin(o, SP_SCOPE_MANUAL);
        sp_task d = sp_task_make(SP_SHAPE_DUMMY);
        sp_task_inout(&d, &x); /* no explicit dependency */
        sp_submit(o, &d);
        sp_scope_end(o);
        copy(o, &rows, &out, 0, -1); /* AUTO reader: must wait for the writer */
        break;
    }
    case M_VIEW_MISALIGNED: {
        sp_tensor v = inner_rows(&x, 258);
        copy(o, &v, &out, 0, -1);
        break;
    }
    }
}
