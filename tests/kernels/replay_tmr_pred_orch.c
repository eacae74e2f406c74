/* The orchestration of the tmr predicate-replay tests (tests/worker/
 * test_replay_tmr_pred.c, which mirrors its task order and predicates;
 * kernels: pred_kernels.c). Tensors: [0] flags i32[2n] (IN), [1] src
 * i32[2n] (IN), [2] out, [3] out2, [4] out3 i64[n] (INOUT, pre-filled with
 * patterns). Scalars: [0] mode, [1] n (both shape the graph).
 *
 * Each step i has two predicate elements, e_p and e_q, in a tensor that
 * depends on the mode:
 *   MODE_STAGED: the staged flags itself (e_p = flags[2i], e_q through
 *                the slice flags[2i, 2i + 2) at element 1);
 *   MODE_ROUTED: a fresh (runtime-owned) i32[2] a router task of the step
 *                copies from src[2i, 2i + 2) (elements 0 and 1);
 *   MODE_STATIC: an sp_alloc_tensor i32[2n] one router task at the start
 *                copies src into (SP_OUT_EXISTING; elements 2i, 2i + 1).
 * Then P (mark out[i] = 1000 + i, predicated on e_p with op 1 + i % 6
 * against pred_value(i), SPMD 1 + i % 3 blocks), Q on AIC (out2[i] =
 * 2 * out[i] + 1, predicated on e_q >= 0), every 7th step a dummy D behind
 * Q (predicated on e_p < 0), and R (out3[i] = out[i] + out2[i], always).
 *
 * MODE_GRAPH: each step a graph task (step_body: P, Q, R, no dummy; P's op
 * 1 + i % 6 is the key, its constant graph_value(op)); step 0's predicates
 * on the staged flags[0, 2), then an sp_alloc_tensor i32[2n] a router
 * fills from src (after the first graph task carved its record region),
 * the later steps' predicates on it, elements 2i and 2i + 1. After each
 * graph task a scribble task writes a fresh 8 KiB output (nobody reads
 * it): the heap ring sweeps the whole heap below the allocations. */
#include "simpler/orchestration.h"

enum { K_ROUTE = 0, K_MARK = 1, K_DOUBLE = 2, K_SUM = 3, K_SCRIBBLE = 4 };

#define SCRIBBLE_ELEMS 1024 /* 8 KiB of heap ring per step */
enum { MODE_STAGED = 0, MODE_ROUTED = 1, MODE_STATIC = 2, MODE_GRAPH = 3 };

SP_ORCH_CONFIG(replay_tmr_pred_config)
{
    cfg->tensor_count = 5;
    cfg->scalar_count = 2;
}

/* Step i's constant for P (the test computes the same). */
static int64_t pred_value(int64_t i)
{
    return (int64_t)(((uint64_t)i * 2654435761u) % 7) - 3;
}

/* MODE_GRAPH's constant for P's op. */
static int64_t graph_value(uint64_t op)
{
    return (int64_t)(op % 7) - 3;
}

/* One step as a graph task: tensors [0] the predicates' i32[2], [1] out[i],
 * [2] out2[i], [3] out3[i]; scalars [0] 1000 + i, [1] P's op (the key). */
static void step_body(sp_orch *o, const sp_graph_args *a)
{
    sp_tensor pt = a->tensors[0], oi = a->tensors[1], o2i = a->tensors[2], o3i = a->tensors[3];
    uint64_t op = a->scalars[1];
    sp_task p = sp_task_aiv(K_MARK);
    sp_task_arg(&p, &oi, SP_OUT_EXISTING);
    sp_task_graph_scalar(&p, a, 0);
    sp_task_predicate(&p, &pt, 0, (sp_pred_op)op, graph_value(op));
    if (sp_submit(o, &p) < 0)
        return;
    sp_task q = sp_task_aic(K_DOUBLE);
    sp_task_in(&q, &oi);
    sp_task_arg(&q, &o2i, SP_OUT_EXISTING);
    sp_task_predicate(&q, &pt, 1, SP_PRED_GE, 0);
    if (sp_submit(o, &q) < 0)
        return;
    sp_task r = sp_task_aiv(K_SUM);
    sp_task_in(&r, &oi);
    sp_task_in(&r, &o2i);
    sp_task_arg(&r, &o3i, SP_OUT_EXISTING);
    sp_submit(o, &r);
}

static void submit_graphs(sp_orch *o, const sp_args *args)
{
    int64_t n = (int64_t)args->scalars[1], n2 = 2 * n;
    sp_tensor flags = args->tensors[0], src = args->tensors[1];
    sp_tensor stat = sp_tensor_spec(SP_DTYPE_I32, 1, &n2);
    for (int64_t i = 0; i < n; i++) {
        if (i == 1) {
            if (sp_alloc_tensor(o, &stat) != SP_OK)
                return;
            sp_task t = sp_task_aiv(K_ROUTE);
            sp_task_in(&t, &src);
            sp_task_arg(&t, &stat, SP_OUT_EXISTING);
            if (sp_submit(o, &t) < 0)
                return;
        }
        sp_tensor pt, oi, o2i, o3i;
        sp_tensor_slice(i == 0 ? &flags : &stat, 0, 2 * i, 2, &pt);
        sp_tensor_slice(&args->tensors[2], 0, i, 1, &oi);
        sp_tensor_slice(&args->tensors[3], 0, i, 1, &o2i);
        sp_tensor_slice(&args->tensors[4], 0, i, 1, &o3i);
        sp_graph_args ga;
        sp_graph_args_init(&ga);
        sp_graph_arg(&ga, &pt);
        sp_graph_arg(&ga, &oi);
        sp_graph_arg(&ga, &o2i);
        sp_graph_arg(&ga, &o3i);
        uint64_t op = 1 + (uint64_t)i % 6;
        sp_graph_scalar(&ga, 1000 + (uint64_t)i);
        sp_graph_scalar(&ga, op);
        if (sp_submit_graph(o, step_body, &ga, op) < 0)
            return;
        int64_t elems = SCRIBBLE_ELEMS;
        sp_tensor big = sp_tensor_spec(SP_DTYPE_I64, 1, &elems);
        sp_task t = sp_task_aiv(K_SCRIBBLE);
        sp_task_out(&t, &big);
        sp_task_scalar(&t, 0x7f7f7f7f7f7f7f7full);
        if (sp_submit(o, &t) < 0)
            return;
    }
}

SP_ORCHESTRATION(replay_tmr_pred)
{
    int mode = (int)args->scalars[0];
    int64_t n = (int64_t)args->scalars[1], two = 2, n2 = 2 * n;
    sp_tensor flags = args->tensors[0], src = args->tensors[1];
    sp_tensor out = args->tensors[2], out2 = args->tensors[3], out3 = args->tensors[4];
    sp_tensor stat = sp_tensor_spec(SP_DTYPE_I32, 1, &n2);
    if (mode == MODE_GRAPH) {
        submit_graphs(o, args);
        return;
    }
    if (mode == MODE_STATIC) {
        if (sp_alloc_tensor(o, &stat) != SP_OK)
            return;
        sp_task t = sp_task_aiv(K_ROUTE);
        sp_task_in(&t, &src);
        sp_task_arg(&t, &stat, SP_OUT_EXISTING);
        if (sp_submit(o, &t) < 0)
            return;
    } else if (mode != MODE_STAGED && mode != MODE_ROUTED) {
        sp_orch_fatal(o, SP_EINVAL, "replay_tmr_pred: unknown mode %d", mode);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        sp_tensor *pt = &flags, *qt = &flags, fresh, fslice, sslice;
        int64_t ep = 2 * i, eq = 2 * i + 1;
        if (mode == MODE_STAGED) {
            sp_tensor_slice(&flags, 0, 2 * i, 2, &fslice);
            qt = &fslice;
            eq = 1;
        } else if (mode == MODE_ROUTED) {
            sp_tensor_slice(&src, 0, 2 * i, 2, &sslice);
            fresh = sp_tensor_spec(SP_DTYPE_I32, 1, &two);
            sp_task t = sp_task_aiv(K_ROUTE);
            sp_task_in(&t, &sslice);
            sp_task_out(&t, &fresh);
            if (sp_submit(o, &t) < 0)
                return;
            pt = qt = &fresh;
            ep = 0;
            eq = 1;
        } else {
            pt = qt = &stat;
        }
        sp_tensor oi, o2i, o3i;
        sp_tensor_slice(&out, 0, i, 1, &oi);
        sp_tensor_slice(&out2, 0, i, 1, &o2i);
        sp_tensor_slice(&out3, 0, i, 1, &o3i);
        sp_task p = sp_task_aiv(K_MARK);
        p.block_num = 1 + (uint32_t)(i % 3);
        sp_task_arg(&p, &oi, SP_OUT_EXISTING);
        sp_task_scalar(&p, (uint64_t)(1000 + i));
        sp_task_predicate(&p, pt, ep, (sp_pred_op)(1 + i % 6), pred_value(i));
        if (sp_submit(o, &p) < 0)
            return;
        sp_task q = sp_task_aic(K_DOUBLE);
        sp_task_in(&q, &oi);
        sp_task_arg(&q, &o2i, SP_OUT_EXISTING);
        sp_task_predicate(&q, qt, eq, SP_PRED_GE, 0);
        int64_t qid = sp_submit(o, &q);
        if (qid < 0)
            return;
        int64_t did = -1;
        if (i % 7 == 3) {
            sp_task d = sp_task_make(SP_SHAPE_DUMMY);
            sp_task_dep(&d, qid);
            sp_task_predicate(&d, pt, ep, SP_PRED_LT, 0);
            if ((did = sp_submit(o, &d)) < 0)
                return;
        }
        sp_task r = sp_task_aiv(K_SUM);
        sp_task_in(&r, &oi);
        sp_task_in(&r, &o2i);
        sp_task_arg(&r, &o3i, SP_OUT_EXISTING);
        if (did >= 0)
            sp_task_dep(&r, did);
        if (sp_submit(o, &r) < 0)
            return;
    }
}
