/* The orchestration of the predicated-task tests (tests/scene/
 * test_predicates.c, which mirrors its task order and predicates).
 * Scalars: [0] mode, [1] n, [2] seed (the spin's ns in the BENCH modes).
 * Tensors: [0] flags i32[n], [1] src i32[n], [2] out, [3] out2, [4] out3
 * i64[n] (the test pre-fills the outputs with patterns). */
#include "simpler/orchestration.h"

enum { K_ROUTE = 0, K_MARK = 1, K_DOUBLE = 2, K_SUM = 3, K_SPIN = 4 };

enum {
    MODE_ROUTED = 0,       /* a router writes flags; predicated tasks on them, chains behind */
    MODE_STAGED = 1,       /* the same graph, predicates on the staged src (no producer) */
    MODE_BAD_OUT = 2,      /* refusals, one each: a predicated task with an SP_OUT */
    MODE_BAD_DTYPE = 3,    /* a predicate on an f32 tensor */
    MODE_BAD_INDEX = 4,    /* element n of an n-element tensor */
    MODE_BAD_OP = 5,       /* op 9 */
    MODE_BAD_NULL = 6,     /* a NULL tensor */
    MODE_BENCH_PRED = 7,   /* n spin tasks, each predicated on src[i] == 1 */
    MODE_BENCH_FULL = 8,   /* the same n spin tasks, none predicated */
    MODE_ROUTED_FRESH = 9, /* MODE_ROUTED with the router's flags a fresh (runtime-owned) output */
    MODE_STAGED_VIEW = 10, /* MODE_STAGED through a strided view of src (see below) */
};

SP_ORCH_CONFIG(pred_orch_config)
{
    cfg->tensor_count = 5;
    cfg->scalar_count = 3;
}

/* Task i's predicate constant (the test computes the same). */
static int64_t pred_value(int64_t i, uint64_t seed)
{
    return (int64_t)(((uint64_t)i * 2654435761u + seed) % 7) - 3;
}

static int64_t submit_graph(sp_orch *o, const sp_args *args, bool routed, bool fresh)
{
    sp_tensor flags = args->tensors[0], src = args->tensors[1];
    sp_tensor out = args->tensors[2], out2 = args->tensors[3], out3 = args->tensors[4];
    int64_t n = (int64_t)args->scalars[1];
    uint64_t seed = args->scalars[2];
    sp_tensor *pred = routed ? &flags : &src;
    /* MODE_STAGED_VIEW: the predicates' tensor is the [2, h] view of src
     * at offset 1 with strides {1, 2} (h = (n - 1) / 2), so element i of
     * it is src[1 + i / h + 2 * (i % h)]; the graph has 2h steps. */
    sp_tensor view = src;
    if (args->scalars[0] == MODE_STAGED_VIEW) {
        int64_t h = (n - 1) / 2;
        view.ndim = 2;
        view.offset = 1;
        view.shape[0] = 2;
        view.shape[1] = h;
        view.strides[0] = 1;
        view.strides[1] = 2;
        pred = &view;
        n = 2 * h;
    }
    if (routed) {
        sp_task t = sp_task_aiv(K_ROUTE);
        sp_task_in(&t, &src);
        if (fresh) {
            flags = sp_tensor_spec(SP_DTYPE_I32, 1, &n);
            sp_task_out(&t, &flags);
        } else {
            sp_task_arg(&t, &flags, SP_OUT_EXISTING);
        }
        if (sp_submit(o, &t) < 0)
            return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        sp_tensor oi, o2i, o3i;
        sp_tensor_slice(&out, 0, i, 1, &oi);
        sp_tensor_slice(&out2, 0, i, 1, &o2i);
        sp_tensor_slice(&out3, 0, i, 1, &o3i);
        /* P: on element i, op by i, the constant from the seed; SPMD sometimes. */
        sp_task p = sp_task_aiv(K_MARK);
        p.block_num = 1 + (uint32_t)(i % 3);
        sp_task_arg(&p, &oi, SP_OUT_EXISTING);
        sp_task_scalar(&p, (uint64_t)(1000 + i));
        sp_task_predicate(&p, pred, i, (sp_pred_op)(1 + i % 6), pred_value(i, seed));
        if (sp_submit(o, &p) < 0)
            return -1;
        /* Q (AIC) behind P, predicated on another element. */
        sp_task q = sp_task_aic(K_DOUBLE);
        sp_task_in(&q, &oi);
        sp_task_arg(&q, &o2i, SP_OUT_EXISTING);
        sp_task_predicate(&q, pred, (3 * i + 1) % n, SP_PRED_GE, 0);
        int64_t qid = sp_submit(o, &q);
        if (qid < 0)
            return -1;
        /* Sometimes a predicated dummy behind Q, which R then waits for. */
        int64_t did = -1;
        if (i % 7 == 3) {
            sp_task d = sp_task_make(SP_SHAPE_DUMMY);
            sp_task_dep(&d, qid);
            sp_task_predicate(&d, pred, i, SP_PRED_LT, 0);
            if ((did = sp_submit(o, &d)) < 0)
                return -1;
        }
        /* R: always runs, reads what P and Q left. */
        sp_task r = sp_task_aiv(K_SUM);
        sp_task_in(&r, &oi);
        sp_task_in(&r, &o2i);
        sp_task_arg(&r, &o3i, SP_OUT_EXISTING);
        if (did >= 0)
            sp_task_dep(&r, did);
        if (sp_submit(o, &r) < 0)
            return -1;
    }
    return 0;
}

/* One task with a bad predicate (the run fails SP_EPREDICATE). */
static void submit_bad(sp_orch *o, const sp_args *args, int mode)
{
    sp_tensor src = args->tensors[1], out = args->tensors[2];
    int64_t n = (int64_t)args->scalars[1];
    sp_tensor oi, fresh, f32;
    sp_tensor_slice(&out, 0, 0, 1, &oi);
    int64_t one = 1;
    sp_task t = sp_task_aiv(K_MARK);
    sp_task_scalar(&t, 1);
    switch (mode) {
    case MODE_BAD_OUT:
        fresh = sp_tensor_spec(SP_DTYPE_I64, 1, &one);
        sp_task_out(&t, &fresh);
        sp_task_predicate(&t, &src, 0, SP_PRED_EQ, 0);
        break;
    case MODE_BAD_DTYPE:
        f32 = sp_tensor_spec(SP_DTYPE_F32, 1, &one);
        if (sp_alloc_tensor(o, &f32) != SP_OK)
            return;
        sp_task_arg(&t, &oi, SP_OUT_EXISTING);
        sp_task_predicate(&t, &f32, 0, SP_PRED_EQ, 0);
        break;
    case MODE_BAD_INDEX:
        sp_task_arg(&t, &oi, SP_OUT_EXISTING);
        sp_task_predicate(&t, &src, n, SP_PRED_EQ, 0);
        break;
    case MODE_BAD_OP:
        sp_task_arg(&t, &oi, SP_OUT_EXISTING);
        sp_task_predicate(&t, &src, 0, (sp_pred_op)9, 0);
        break;
    default:
        sp_task_arg(&t, &oi, SP_OUT_EXISTING);
        sp_task_predicate(&t, NULL, 0, SP_PRED_EQ, 0);
        break;
    }
    sp_submit(o, &t);
}

/* n fixed-length spin tasks, independent; BENCH_PRED predicates each on
 * src[i] == 1 (the test sets half of them). */
static void submit_bench(sp_orch *o, const sp_args *args, bool predicated)
{
    sp_tensor src = args->tensors[1], out = args->tensors[2];
    int64_t n = (int64_t)args->scalars[1];
    for (int64_t i = 0; i < n; i++) {
        sp_tensor oi;
        sp_tensor_slice(&out, 0, i, 1, &oi);
        sp_task t = sp_task_aiv(K_SPIN);
        sp_task_arg(&t, &oi, SP_OUT_EXISTING);
        sp_task_scalar(&t, args->scalars[2]);
        if (predicated)
            sp_task_predicate(&t, &src, i, SP_PRED_EQ, 1);
        if (sp_submit(o, &t) < 0)
            return;
    }
}

SP_ORCHESTRATION(pred_orch)
{
    int mode = (int)args->scalars[0];
    switch (mode) {
    case MODE_ROUTED:
    case MODE_STAGED:
    case MODE_ROUTED_FRESH:
    case MODE_STAGED_VIEW:
        submit_graph(o, args, mode == MODE_ROUTED || mode == MODE_ROUTED_FRESH,
                     mode == MODE_ROUTED_FRESH);
        break;
    case MODE_BENCH_PRED:
    case MODE_BENCH_FULL:
        submit_bench(o, args, mode == MODE_BENCH_PRED);
        break;
    default:
        submit_bad(o, args, mode);
        break;
    }
}
