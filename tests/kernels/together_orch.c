/* The orchestration of the features-together tests (tests/scene/
 * test_features_together.c, which mirrors its task order): graph tasks
 * whose bodies hold predicated tasks, with routers outside them, run
 * fresh, recorded and replayed.
 *
 * Tensors: 0 x u64 [L * S] (IN), 1 sel i32 [L * K] (IN, staged), 2 flags
 * i32 [K] (INOUT), 3 y u64 [K * S] (INOUT), 4 z u64 [L * S]
 * (OUT_EXISTING), 5 report u64 [8] (OUT_EXISTING: report[0] = how many
 * times the body ran). Scalars: [0] mode (TG_GRAPH: one graph task per
 * layer; TG_DIRECT: the body called directly, its scalars passed with
 * their sources; TG_DIRECT_RAW: called directly, its scalars through
 * sp_task_graph_scalar as in a graph task), [1] L layers, [2] data (a data
 * scalar: reaches the tasks only as a run scalar passed on), [3] kind
 * (TG_FLAGS_ARG: each layer's router copies sel's row into the flags
 * argument; TG_FLAGS_HEAP: into a runtime-owned flags tensor, the first
 * router's fresh output; TG_NO_PRED: no routers, no predicates;
 * TG_FLAGS_INNER: the router is the body's first task, its flags a fresh
 * inner tensor of the body, and a second inner router R2 after the P_k
 * rewrites them as sel[l] + 1, which Q_k of even k read; TG_FLAGS_ALLOC:
 * as TG_FLAGS_HEAP in a run-long sp_alloc_tensor buffer).
 *
 * Per layer l: router R_l (flags = sel[l]); then the body over (flags,
 * sel[l], x[l], y, z[l]): P_k (k < K): y_k = mix(y_k, x[l], k, data, l)
 * predicated on flags[k] OP(k) VAL(k); Q_k: y_k = mix(y_k, y_(k+1)%K,
 * 100 + k, data, l) predicated on the staged sel[l][(3k + 1) % K] >= 0;
 * C: z[l] = fold(y, data, l). Then one report task.
 *
 * The body-call counter is static: a test-only way to see whether a body
 * ran (as in graph_orch.c). One run's orchestration at a time. */
#include "simpler/orchestration.h"
#include "simpler/tensor.h"

#define TG_K 8
#define TG_S 16
enum { TG_GRAPH = 0, TG_DIRECT = 1, TG_DIRECT_RAW = 2 };
enum {
    TG_FLAGS_ARG = 0,
    TG_FLAGS_HEAP = 1,
    TG_NO_PRED = 2,
    TG_FLAGS_INNER = 3,
    TG_FLAGS_ALLOC = 4
};
enum { K_ROUTE = 0, K_MIX = 1, K_FOLD = 2, K_STORE = 3 };

static uint64_t body_calls;

SP_ORCH_CONFIG(together_config)
{
    cfg->tensor_count = 6;
    cfg->scalar_count = 4;
    cfg->replay = SP_ORCH_REPLAY_DECLARED;
    cfg->shaping_scalars[0] = 0xb; /* mode, L and kind shape the graph; scalar 2 is data */
}

/* P_k's predicate (the test computes the same). */
static sp_pred_op pred_op(int64_t k)
{
    return (sp_pred_op)(1 + k % 6);
}

static int64_t pred_value(int64_t k)
{
    return (k * 5) % 7 - 3;
}

static sp_tensor slice(const sp_tensor *t, int64_t at, int64_t len)
{
    sp_tensor v;
    if (sp_tensor_slice(t, 0, at, len, &v) != SP_OK)
        v = *t;
    return v;
}

/* Graph scalar i of the body: in a graph task through
 * sp_task_graph_scalar; called directly (TG_DIRECT), with its source. */
static void body_scalar(sp_task *t, const sp_graph_args *a, uint32_t i)
{
    if (a->scalars[3] != TG_DIRECT) {
        sp_task_graph_scalar(t, a, i);
        return;
    }
    sp_task_scalar(t, a->scalars[i]);
    if (!t->overflow)
        t->scalar_src[t->scalar_count - 1] = a->scalar_src[i];
}

static void body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    sp_tensor flags = a->tensors[0], selrow = a->tensors[1], xl = a->tensors[2], y = a->tensors[3],
              zl = a->tensors[4];
    const bool pred = a->scalars[2] != TG_NO_PRED;
    if (a->scalars[2] == TG_FLAGS_INNER) {
        int64_t k = TG_K;
        flags = sp_tensor_spec(SP_DTYPE_I32, 1, &k);
        sp_task r = sp_task_aiv(K_ROUTE);
        sp_task_in(&r, &selrow);
        sp_task_out(&r, &flags);
        sp_task_scalar(&r, 0);
        if (sp_submit(o, &r) < 0)
            return;
    }
    sp_tensor yk[TG_K];
    for (int64_t k = 0; k < TG_K; k++)
        yk[k] = slice(&y, k * TG_S, TG_S);
    for (int64_t k = 0; k < TG_K; k++) {
        sp_task p = sp_task_aiv(K_MIX);
        sp_task_arg(&p, &yk[k], SP_INOUT);
        sp_task_in(&p, &xl);
        sp_task_scalar(&p, (uint64_t)k);
        body_scalar(&p, a, 0);
        body_scalar(&p, a, 1);
        if (pred)
            sp_task_predicate(&p, &flags, k, pred_op(k), pred_value(k));
        if (sp_submit(o, &p) < 0)
            return;
    }
    if (a->scalars[2] == TG_FLAGS_INNER) {
        /* After the P_k read them (their edges to it are recorded ones). */
        sp_task r = sp_task_aiv(K_ROUTE);
        sp_task_in(&r, &selrow);
        sp_task_arg(&r, &flags, SP_OUT_EXISTING);
        sp_task_scalar(&r, 1);
        if (sp_submit(o, &r) < 0)
            return;
    }
    for (int64_t k = 0; k < TG_K; k++) {
        sp_task q = sp_task_aiv(K_MIX);
        sp_task_arg(&q, &yk[k], SP_INOUT);
        sp_task_in(&q, &yk[(k + 1) % TG_K]);
        sp_task_scalar(&q, 100 + (uint64_t)k);
        body_scalar(&q, a, 0);
        body_scalar(&q, a, 1);
        sp_tensor *qp = a->scalars[2] == TG_FLAGS_INNER && k % 2 == 0 ? &flags : &selrow;
        if (pred)
            sp_task_predicate(&q, qp, (3 * k + 1) % TG_K, SP_PRED_GE, 0);
        if (sp_submit(o, &q) < 0)
            return;
    }
    sp_task c = sp_task_aiv(K_FOLD);
    sp_task_arg(&c, &zl, SP_OUT_EXISTING);
    sp_task_in(&c, &y);
    body_scalar(&c, a, 0);
    body_scalar(&c, a, 1);
    sp_submit(o, &c);
}

SP_ORCHESTRATION(together_orch)
{
    body_calls = 0;
    const uint64_t mode = args->scalars[0], layers = args->scalars[1], kind = args->scalars[3];
    const sp_tensor x = args->tensors[0], sel = args->tensors[1], y = args->tensors[3],
                    z = args->tensors[4];
    sp_tensor flags = args->tensors[2];
    if (kind == TG_FLAGS_HEAP || kind == TG_FLAGS_ALLOC) {
        int64_t k = TG_K;
        flags = sp_tensor_spec(SP_DTYPE_I32, 1, &k);
        if (kind == TG_FLAGS_ALLOC && sp_alloc_tensor(o, &flags) != SP_OK)
            return;
    }
    for (uint64_t l = 0; l < layers && !sp_orch_error(o); l++) {
        sp_tensor selrow = slice(&sel, (int64_t)l * TG_K, TG_K);
        if (kind == TG_FLAGS_ARG || kind == TG_FLAGS_HEAP || kind == TG_FLAGS_ALLOC) {
            sp_task r = sp_task_aiv(K_ROUTE);
            sp_task_in(&r, &selrow);
            if (kind == TG_FLAGS_HEAP && l == 0)
                sp_task_out(&r, &flags);
            else
                sp_task_arg(&r, &flags, SP_OUT_EXISTING);
            sp_task_scalar(&r, 0);
            if (sp_submit(o, &r) < 0)
                return;
        }
        sp_graph_args a;
        sp_graph_args_init(&a);
        sp_tensor xl = slice(&x, (int64_t)l * TG_S, TG_S), zl = slice(&z, (int64_t)l * TG_S, TG_S);
        sp_graph_arg(&a, &flags);
        sp_graph_arg(&a, &selrow);
        sp_graph_arg(&a, &xl);
        sp_graph_arg(&a, &y);
        sp_graph_arg(&a, &zl);
        sp_graph_scalar_arg(&a, args, 2);
        sp_graph_scalar(&a, l);
        sp_graph_scalar(&a, kind);
        sp_graph_scalar(&a, mode);
        if (mode == TG_GRAPH) {
            if (sp_submit_graph(o, body, &a, 10 + kind) < 0)
                return;
        } else {
            body(o, &a);
        }
    }
    if (sp_orch_error(o))
        return;
    sp_tensor report = args->tensors[5];
    sp_task t = sp_task_aiv(K_STORE);
    sp_task_arg(&t, &report, SP_OUT_EXISTING);
    sp_task_scalar(&t, body_calls);
    sp_submit(o, &t);
}
