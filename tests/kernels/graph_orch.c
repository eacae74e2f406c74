/* The graph-task test orchestration (tests/scene/test_graph_tasks.c).
 * Tensors: 0..3 u64 [GRAPH_BUF] buffers (INOUT), 4 the report u64 [8]
 * (OUT_EXISTING: report[0] = how many times a graph body ran). Scalars:
 * [0] program, [1] mode (0: sp_submit_graph, 1: the bodies called
 * directly, the one-by-one reference), [2] seed or size, [3] variant.
 * Kernels: func_id 0 graph_mix, 1 graph_store (tests/kernels/graph_kernels.c).
 *
 * The body-call counter is static: a test-only way to see whether a body
 * ran (a graph body must not keep state; this one only counts, and the
 * count reaches the test through the report task). One run at a time. */
#include "simpler/orchestration.h"
#include "simpler/tensor.h"

#define GRAPH_BUF 512
#define GRAPH_SLICE 32

enum { PROG_RANDOM = 0, PROG_LAYERS = 1, PROG_LONG = 2, PROG_ERRORS = 3, PROG_MISC = 4 };
enum { MODE_GRAPH = 0, MODE_DIRECT = 1 };

static uint64_t body_calls;

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t below(rng *r, uint64_t n)
{
    return next(r) % n;
}

static sp_tensor slice(const sp_tensor *t, int64_t at, int64_t len)
{
    sp_tensor v;
    if (sp_tensor_slice(t, 0, at, len, &v) != SP_OK)
        v = *t;
    return v;
}

static sp_tensor spec(int64_t len)
{
    return sp_tensor_spec(SP_DTYPE_U64, 1, &len);
}

/* A graph_mix task: out (dir) from in1, in2. */
static sp_task mix_task(sp_tensor *out, sp_dir dir, sp_tensor *in1, sp_tensor *in2, uint64_t salt)
{
    sp_task t = sp_task_aiv(0);
    sp_task_arg(&t, out, dir);
    sp_task_in(&t, in1);
    sp_task_in(&t, in2);
    sp_task_scalar(&t, salt);
    return t;
}

static void finish_scalars(sp_task *t, const sp_graph_args *a, sp_dir dir)
{
    if (a && a->scalar_count)
        sp_task_graph_scalar(t, a, 0);
    else
        sp_task_scalar(t, 0);
    sp_task_scalar(t, dir == SP_INOUT);
}

/* ---- random bodies ------------------------------------------------------- */

#define MAX_INNER 16

/* A source view: a piece of a boundary tensor or of an inner tensor. */
static sp_tensor pick_source(rng *r, const sp_graph_args *a, sp_tensor *inner, int ninner)
{
    int64_t len = below(r, 2) ? 8 : 16;
    if (ninner && below(r, 2)) {
        sp_tensor *x = &inner[below(r, (uint64_t)ninner)];
        if (x->shape[0] <= len)
            return *x;
        return slice(x, (int64_t)below(r, (uint64_t)(x->shape[0] - len + 1)), len);
    }
    const sp_tensor *b = &a->tensors[below(r, a->tensor_count)];
    return slice(b, (int64_t)below(r, (uint64_t)(b->shape[0] - len + 1)), len);
}

/* The body for key k: its shape depends on k alone. */
static void random_body(sp_orch *o, const sp_graph_args *a, uint64_t k)
{
    body_calls++;
    rng r = {k * 7919 + 17};
    sp_tensor inner[MAX_INNER];
    int64_t ids[MAX_INNER];
    int ninner = 0, nids = 0;
    int ntasks = 2 + (int)below(&r, 7);
    bool scoped = k % 3 == 1 && ntasks >= 3;
    if (k % 4 == 3) {
        /* An inner allocation, written whole before anything reads it. */
        inner[ninner] = spec(16);
        if (sp_alloc_tensor(o, &inner[ninner]) != SP_OK)
            return;
        sp_tensor s1 = slice(&a->tensors[0], 0, 8), s2 = slice(&a->tensors[1], 8, 8);
        sp_task t = mix_task(&inner[ninner], SP_OUT_EXISTING, &s1, &s2, k);
        finish_scalars(&t, a, SP_OUT_EXISTING);
        ninner++;
        if ((ids[nids++] = sp_submit(o, &t)) < 0)
            return;
    }
    for (int i = 0; i < ntasks; i++) {
        if (scoped && i == 1)
            sp_scope_begin(o, SP_SCOPE_AUTO);
        sp_tensor s1 = pick_source(&r, a, inner, ninner), s2 = pick_source(&r, a, inner, ninner);
        sp_tensor dst, *out = &dst;
        sp_dir dir;
        uint64_t c = below(&r, 4);
        int64_t len = below(&r, 2) ? 8 : 16;
        if ((c == 0 || (c == 3 && !ninner)) && ninner < MAX_INNER) {
            inner[ninner] = spec(len);
            out = &inner[ninner++];
            dir = SP_OUT;
        } else if (c == 3 && ninner) {
            sp_tensor *x = &inner[below(&r, (uint64_t)ninner)];
            dst = x->shape[0] > 8 ? slice(x, (int64_t)below(&r, 2) * 8, 8) : *x;
            dir = SP_INOUT;
        } else {
            const sp_tensor *b = &a->tensors[below(&r, a->tensor_count)];
            dst = slice(b, (int64_t)below(&r, (uint64_t)(b->shape[0] - len + 1)), len);
            dir = c == 1 ? SP_INOUT : SP_OUT_EXISTING;
        }
        sp_task t = mix_task(out, dir, &s1, &s2, next(&r));
        finish_scalars(&t, a, dir);
        if (nids && below(&r, 5) == 0)
            sp_task_dep(&t, ids[below(&r, (uint64_t)nids)]);
        int64_t id = sp_submit(o, &t);
        if (id < 0)
            return;
        if (nids < MAX_INNER)
            ids[nids++] = id;
        if (scoped && i == ntasks - 2)
            sp_scope_end(o);
    }
}

#define BODY(k)                                                                                    \
    static void random_body_##k(sp_orch *o, const sp_graph_args *a)                                \
    {                                                                                              \
        random_body(o, a, k);                                                                      \
    }
BODY(0)
BODY(1)
BODY(2)
BODY(3)
static const sp_graph_fn random_bodies[4] = {random_body_0, random_body_1, random_body_2,
                                             random_body_3};

static int64_t call_graph(sp_orch *o, int mode, sp_graph_fn fn, sp_graph_args *a, uint64_t key)
{
    if (mode == MODE_DIRECT) {
        fn(o, a);
        return sp_orch_error(o);
    }
    return sp_submit_graph(o, fn, a, key);
}

static void random_program(sp_orch *o, const sp_args *args, int mode, uint64_t seed)
{
    rng r = {seed};
    sp_tensor buf[4], fresh[4];
    int nfresh = 0;
    for (int i = 0; i < 4; i++)
        buf[i] = args->tensors[i];
    int steps = 10 + (int)below(&r, 16);
    for (int s = 0; s < steps && !sp_orch_error(o); s++) {
        uint64_t what = below(&r, 4);
        if (what == 0) {
            /* An outer task on the shared buffers, or a fresh outer tensor. */
            sp_tensor in1 = slice(&buf[below(&r, 4)], (int64_t)below(&r, GRAPH_BUF - 16), 16);
            sp_tensor in2 = slice(&buf[below(&r, 4)], (int64_t)below(&r, GRAPH_BUF - 16), 16);
            sp_tensor dst;
            sp_dir dir = SP_INOUT;
            if (nfresh < 4 && below(&r, 2)) {
                fresh[nfresh] = spec(GRAPH_SLICE);
                sp_task t = mix_task(&fresh[nfresh], SP_OUT, &in1, &in2, next(&r));
                finish_scalars(&t, NULL, SP_OUT);
                if (sp_submit(o, &t) < 0)
                    return;
                nfresh++;
                continue;
            }
            dst = slice(&buf[below(&r, 4)], (int64_t)below(&r, GRAPH_BUF - 16), 16);
            sp_task t = mix_task(&dst, dir, &in1, &in2, next(&r));
            finish_scalars(&t, NULL, dir);
            if (sp_submit(o, &t) < 0)
                return;
            continue;
        }
        /* A graph task: three boundary slices (of shared buffers that move,
         * or of fresh outer tensors) and one scalar. */
        uint64_t key = below(&r, 4);
        sp_graph_args a;
        sp_graph_args_init(&a);
        /* Each key mostly keeps its buffers (key 2 puts two boundaries on
         * one buffer), so most calls are instances; now and then a fresh
         * outer tensor or another buffer makes a new geometry. */
        static const int on_buf[4][3] = {{0, 1, 2}, {1, 2, 3}, {2, 3, 2}, {3, 0, 1}};
        for (int b = 0; b < 3; b++) {
            sp_tensor v;
            uint64_t odd = below(&r, 40);
            if (nfresh && odd == 0)
                v = fresh[below(&r, (uint64_t)nfresh)];
            else
                v = slice(&buf[odd == 1 ? below(&r, 4) : (uint64_t)on_buf[key][b]],
                          (int64_t)below(&r, GRAPH_BUF - GRAPH_SLICE), GRAPH_SLICE);
            sp_graph_arg(&a, &v);
        }
        sp_graph_scalar(&a, next(&r));
        if (call_graph(o, mode, random_bodies[key], &a, key) < 0)
            return;
    }
}

/* ---- a layer loop ------------------------------------------------------- */

/* One layer: 16 tasks over x_in, w -> x_out. */
static void layer_body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    sp_tensor x_in = a->tensors[0], w = a->tensors[1], x_out = a->tensors[2];
    sp_tensor h[15];
    for (int i = 0; i < 15; i++) {
        h[i] = spec(GRAPH_SLICE);
        sp_tensor *src = i ? &h[i - 1] : &x_in;
        sp_tensor *side = i >= 2 ? &h[i - 2] : &w;
        sp_task t = mix_task(&h[i], SP_OUT, src, side, (uint64_t)i);
        finish_scalars(&t, a, SP_OUT);
        if (sp_submit(o, &t) < 0)
            return;
    }
    sp_task t = mix_task(&x_out, SP_OUT_EXISTING, &h[14], &x_in, 99);
    finish_scalars(&t, a, SP_OUT_EXISTING);
    sp_submit(o, &t);
}

static void layer_program(sp_orch *o, const sp_args *args, int mode, uint64_t layers)
{
    sp_tensor x = args->tensors[0], w = args->tensors[1];
    const int64_t places = GRAPH_BUF / GRAPH_SLICE;
    for (uint64_t l = 0; l < layers && !sp_orch_error(o); l++) {
        sp_graph_args a;
        sp_graph_args_init(&a);
        sp_tensor in = slice(&x, (int64_t)(l % (uint64_t)places) * GRAPH_SLICE, GRAPH_SLICE);
        sp_tensor out = slice(&x, (int64_t)((l + 1) % (uint64_t)places) * GRAPH_SLICE, GRAPH_SLICE);
        sp_tensor wl = slice(&w, (int64_t)(l % (uint64_t)places) * GRAPH_SLICE, GRAPH_SLICE);
        sp_graph_arg(&a, &in);
        sp_graph_arg(&a, &wl);
        sp_graph_arg(&a, &out);
        sp_graph_scalar(&a, l);
        if (call_graph(o, mode, layer_body, &a, 100) < 0)
            return;
    }
}

/* ---- a long chain (more tasks than a small ring window) ------------------- */

static uint64_t long_tasks;

static void long_body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    sp_tensor in = a->tensors[0], out = a->tensors[1], prev = in, x;
    for (uint64_t i = 0; i + 1 < long_tasks; i++) {
        x = spec(GRAPH_SLICE);
        sp_task t = mix_task(&x, SP_OUT, &prev, &in, i);
        finish_scalars(&t, a, SP_OUT);
        if (sp_submit(o, &t) < 0)
            return;
        prev = x;
    }
    sp_task t = mix_task(&out, SP_OUT_EXISTING, &prev, &in, 7);
    finish_scalars(&t, a, SP_OUT_EXISTING);
    sp_submit(o, &t);
}

static void long_program(sp_orch *o, const sp_args *args, int mode, uint64_t n)
{
    long_tasks = n;
    for (int64_t k = 0; k < 2 && !sp_orch_error(o); k++) {
        sp_graph_args a;
        sp_graph_args_init(&a);
        sp_tensor in = slice(&args->tensors[0], k * 64, GRAPH_SLICE);
        sp_tensor out = slice(&args->tensors[1], k * 64, GRAPH_SLICE);
        sp_graph_arg(&a, &in);
        sp_graph_arg(&a, &out);
        sp_graph_scalar(&a, (uint64_t)k + 5);
        if (call_graph(o, mode, long_body, &a, 200) < 0)
            return;
    }
}

/* ---- bodies that are recorded differently ------------------------------- */

/* Reads a control element: its key runs one by one every time. */
static void reading_body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    sp_tensor x = a->tensors[0], y = a->tensors[1];
    uint64_t v = (uint64_t)sp_tensor_read_int(o, &a->tensors[2], 0);
    sp_task t = mix_task(&y, SP_INOUT, &x, &x, v);
    finish_scalars(&t, a, SP_INOUT);
    sp_submit(o, &t);
}

/* A MANUAL scope inside: only explicit edges, inner ones recorded. */
static void manual_body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    sp_tensor x = a->tensors[0], y = a->tensors[1], h = spec(GRAPH_SLICE);
    if (sp_scope_begin(o, SP_SCOPE_MANUAL) != SP_OK)
        return;
    sp_task t1 = mix_task(&h, SP_OUT, &x, &x, 1);
    finish_scalars(&t1, a, SP_OUT);
    int64_t id = sp_submit(o, &t1);
    if (id < 0)
        return;
    sp_task t2 = mix_task(&y, SP_INOUT, &h, &x, 2);
    finish_scalars(&t2, a, SP_INOUT);
    sp_task_dep(&t2, id);
    sp_submit(o, &t2);
    sp_scope_end(o);
}

static void inner_body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    sp_tensor x = a->tensors[0], h = spec(8);
    sp_tensor lo = slice(&x, 0, 8), hi = slice(&x, 8, 8);
    sp_task t1 = mix_task(&h, SP_OUT, &lo, &hi, 3);
    finish_scalars(&t1, a, SP_OUT);
    if (sp_submit(o, &t1) < 0)
        return;
    sp_task t2 = mix_task(&hi, SP_INOUT, &h, &lo, 4);
    finish_scalars(&t2, a, SP_INOUT);
    sp_submit(o, &t2);
}

/* A graph task inside a graph task: the outer one runs one by one, the
 * inner one is recorded (on the outer key's second call) and instantiated. */
static void nesting_body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    for (int64_t k = 0; k < 2; k++) {
        sp_graph_args in;
        sp_graph_args_init(&in);
        sp_tensor v = slice(&a->tensors[k], 0, 16);
        sp_graph_arg(&in, &v);
        sp_graph_scalar(&in, a->scalars[0] + (uint64_t)k);
        if (sp_submit_graph(o, inner_body, &in, 301) < 0)
            return;
    }
}

/* Eight calls of the variant's body over moving slices. */
static void misc_program(sp_orch *o, const sp_args *args, int mode, uint64_t variant)
{
    static const sp_graph_fn bodies[3] = {reading_body, manual_body, nesting_body};
    if (variant < 1 || variant > 3) {
        sp_orch_fatal(o, SP_EINVAL, "misc variant %llu", (unsigned long long)variant);
        return;
    }
    for (int64_t c = 0; c < 8 && !sp_orch_error(o); c++) {
        sp_graph_args a;
        sp_graph_args_init(&a);
        sp_tensor x = slice(&args->tensors[0], c * 40, GRAPH_SLICE);
        sp_tensor y = slice(&args->tensors[1], c * GRAPH_SLICE, GRAPH_SLICE);
        sp_tensor z = slice(&args->tensors[3], GRAPH_BUF - GRAPH_SLICE, GRAPH_SLICE);
        sp_graph_arg(&a, &x);
        sp_graph_arg(&a, &y);
        sp_graph_arg(&a, &z);
        sp_graph_scalar(&a, (uint64_t)c);
        if (call_graph(o, mode, bodies[variant - 1], &a, 300 + variant) < 0)
            return;
    }
}

/* ---- errors ------------------------------------------------------------- */

static void fatal_body(sp_orch *o, const sp_graph_args *a)
{
    (void)a;
    body_calls++;
    sp_orch_fatal(o, SP_EINVAL, "the body gives up");
}

static void bad_scalar_body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    sp_tensor v = a->tensors[0];
    sp_task t = mix_task(&v, SP_INOUT, &v, &v, 1);
    sp_task_scalar(&t, 0);
    t.scalar_src[1] = (uint16_t)SP_SCALAR_GRAPH(3);
    sp_task_scalar(&t, 1);
    sp_submit(o, &t);
}

/* A kernel the callable does not have: the runtime refuses the submit. */
static void bad_kernel_body(sp_orch *o, const sp_graph_args *a)
{
    body_calls++;
    sp_tensor v = a->tensors[0];
    sp_task t = mix_task(&v, SP_INOUT, &v, &v, 1);
    finish_scalars(&t, a, SP_INOUT);
    t.func_id[SP_LANE_AIV0] = 99;
    sp_submit(o, &t);
}

static void error_program(sp_orch *o, const sp_args *args, uint64_t variant)
{
    sp_graph_args a;
    sp_graph_args_init(&a);
    sp_tensor v = slice(&args->tensors[0], 0, GRAPH_SLICE);
    sp_graph_arg(&a, &v);
    sp_graph_scalar(&a, 1);
    switch (variant) {
    case 1:
        sp_submit_graph(o, NULL, &a, 1);
        break;
    case 2:
        for (int i = 0; i < SP_MAX_GRAPH_TENSORS; i++)
            sp_graph_arg(&a, &v);
        sp_submit_graph(o, layer_body, &a, 2);
        break;
    case 3:
        a.tensors[0].shape[0] = GRAPH_BUF * 2;
        sp_submit_graph(o, layer_body, &a, 3);
        break;
    case 4:
        sp_graph_scalar_arg(&a, args, 100);
        sp_submit_graph(o, layer_body, &a, 4);
        break;
    case 5:
        sp_submit_graph(o, fatal_body, &a, 5);
        break;
    case 6:
        sp_submit_graph(o, bad_scalar_body, &a, 6);
        break;
    case 8:
        sp_submit_graph(o, bad_kernel_body, &a, 8);
        break;
    case 7: {
        /* Recorded outside a scope, instantiated inside one that holds
         * more tasks than a small window: the instance's submit names the
         * deadlock. */
        long_tasks = 40;
        sp_graph_args b;
        sp_graph_args_init(&b);
        sp_tensor in = slice(&args->tensors[0], 0, GRAPH_SLICE);
        sp_tensor out = slice(&args->tensors[1], 0, GRAPH_SLICE);
        sp_graph_arg(&b, &in);
        sp_graph_arg(&b, &out);
        sp_graph_scalar(&b, 1);
        if (sp_submit_graph(o, long_body, &b, 7) < 0)
            return;
        sp_scope_begin(o, SP_SCOPE_AUTO);
        sp_submit_graph(o, long_body, &b, 7);
        break;
    }
    }
}

SP_ORCH_CONFIG(graph_orch_config)
{
    cfg->tensor_count = 5;
    cfg->scalar_count = 4;
}

SP_ORCHESTRATION(graph_orch)
{
    body_calls = 0;
    int mode = (int)args->scalars[1];
    switch (args->scalars[0]) {
    case PROG_RANDOM:
        random_program(o, args, mode, args->scalars[2]);
        break;
    case PROG_LAYERS:
        layer_program(o, args, mode, args->scalars[2]);
        break;
    case PROG_LONG:
        long_program(o, args, mode, args->scalars[2]);
        break;
    case PROG_ERRORS:
        error_program(o, args, args->scalars[3]);
        return;
    case PROG_MISC:
        misc_program(o, args, mode, args->scalars[3]);
        break;
    }
    if (sp_orch_error(o))
        return;
    sp_tensor report = args->tensors[4];
    sp_task t = sp_task_aiv(1);
    sp_task_arg(&t, &report, SP_OUT_EXISTING);
    sp_task_scalar(&t, body_calls);
    sp_submit(o, &t);
}
