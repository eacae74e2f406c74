/* decoder orchestration: one decode step of an L-layer transformer for a
 * batch of B sequences, one graph task per layer.
 *
 * Per layer (examples/README.md has the table): RMS norm, the QKV
 * projection (AIC), the new token's key and value appended to the layer's
 * paged KV cache, paged attention over the cache (per sequence and block:
 * QK, softmax, PV, an online update; per sequence a normalize), the output
 * projection, the residual add, RMS norm, the MLP (up, SiLU, down) and the
 * residual add into the layer's output. One KV head serves all NH query
 * heads (MQA), as in paged_attention.
 *
 * The layer body reads no tensor: the attention kernels look up the block
 * table and the context lengths themselves and treat a block past a
 * sequence's context as empty, so the body's graph depends on the
 * geometry alone (B, the table's width MB, the sizes) and is recorded once
 * (key 1) for all L layers; its boundary is the layer's weight slices, the
 * hidden state in and out, the layer's cache slices, the block table, the
 * context lengths and the QKV and attention buffers. The two scalars are data (the
 * config declares only scalar 2 graph-shaping), so a replay serves every
 * decode step of the same geometry: new tokens, new context lengths, new
 * weights.
 *
 * Args: tensors x [B,Hd] IN, ln1 [L,Hd] IN, wqkv [L,Hd,Hd+2D] IN,
 * wo [L,Hd,Hd] IN, ln2 [L,Hd] IN, wup [L,Hd,F] IN, wdown [L,F,Hd] IN,
 * key_cache, value_cache [L,NB,bs,D] INOUT, block_table i32 [B,MB] IN,
 * context_lens i32 [B] IN (including the new token), out [B,Hd] OUT;
 * scalars 0 = attention scale (f32 bits), 1 = RMS norm eps (f32 bits),
 * 2 = 1: one graph task per layer, 0: the same tasks submitted one by one.
 * Tasks: L * (10 + B * (4 * MB + 1)). */
#include "simpler/orchestration.h"
#include "decoder_kernels.h"

enum {
    DEC_RMSNORM = SP_FUNC_dec_rmsnorm,
    DEC_MATMUL = SP_FUNC_dec_matmul,
    DEC_KV_WRITE = SP_FUNC_dec_kv_write,
    DEC_QK = SP_FUNC_dec_qk,
    DEC_SOFTMAX = SP_FUNC_dec_softmax,
    DEC_PV = SP_FUNC_dec_pv,
    DEC_UPDATE = SP_FUNC_dec_update,
    DEC_NORMALIZE = SP_FUNC_dec_normalize,
    DEC_ADD = SP_FUNC_dec_add,
    DEC_SILU = SP_FUNC_dec_silu,
};

/* Run arguments. */
enum { A_X, A_LN1, A_WQKV, A_WO, A_LN2, A_WUP, A_WDOWN, A_KC, A_VC, A_TABLE, A_LENS, A_OUT, A_N };
enum { S_SCALE, S_EPS, S_GRAPH, S_N };

/* A layer's boundary (graph-task tensors and scalars). */
enum {
    G_X_IN,
    G_LN1,
    G_WQKV,
    G_WO,
    G_LN2,
    G_WUP,
    G_WDOWN,
    G_KC,
    G_VC,
    G_TABLE,
    G_LENS,
    G_QKV,
    G_ATTN,
    G_X_OUT,
    G_N
};
enum { GS_SCALE, GS_EPS, GS_DIRECT, GS_N };

SP_ORCH_CONFIG(decoder_config)
{
    cfg->tensor_count = A_N;
    cfg->scalar_count = S_N;
    /* scale and eps are data; only the graph-task switch shapes the graph. */
    cfg->replay = SP_ORCH_REPLAY_DECLARED;
    cfg->shaping_scalars[0] = 1ull << S_GRAPH;
    cfg->shaping_scalars[1] = 0;
}

/* Scalar i of the layer's arguments: marked as the graph task's inside one,
 * and as the run scalar it passes on when the body is called directly. */
static void layer_scalar(sp_task *t, const sp_graph_args *a, uint32_t i)
{
    if (!a->scalars[GS_DIRECT]) {
        sp_task_graph_scalar(t, a, i);
        return;
    }
    sp_task_scalar(t, a->scalars[i]);
    if (t->scalar_count && !t->overflow)
        t->scalar_src[t->scalar_count - 1] = a->scalar_src[i];
}

static sp_tensor spec2(int64_t r, int64_t c)
{
    const int64_t shape[2] = {r, c};
    return sp_tensor_spec(SP_DTYPE_F32, 2, shape);
}

static sp_tensor spec1(int64_t n)
{
    const int64_t shape[1] = {n};
    return sp_tensor_spec(SP_DTYPE_F32, 1, shape);
}

/* The running softmax state of one sequence: created by its first update. */
typedef struct dec_state {
    sp_tensor M, L, acc;
} dec_state;

/* QK, softmax, PV and update for sequence b's j-th cache block. */
static int attend_block(sp_orch *o, const sp_graph_args *a, sp_tensor *bt, sp_tensor *qkv,
                        int64_t b, int64_t j, dec_state *st)
{
    const int64_t D = bt[G_KC].shape[3], bs = bt[G_KC].shape[2], NH = bt[G_X_IN].shape[2] / D;
    sp_tensor S = spec2(NH, bs), P = S, m = spec1(NH), l = m, O = spec2(NH, D);

    sp_task t = sp_task_aic(DEC_QK);
    sp_task_in(&t, qkv);
    sp_task_in(&t, &bt[G_KC]);
    sp_task_in(&t, &bt[G_TABLE]);
    sp_task_in(&t, &bt[G_LENS]);
    sp_task_out(&t, &S);
    sp_task_scalar(&t, (uint64_t)b);
    sp_task_scalar(&t, (uint64_t)j);
    layer_scalar(&t, a, GS_SCALE);
    if (sp_submit(o, &t) < 0)
        return -1;

    t = sp_task_aiv(DEC_SOFTMAX);
    sp_task_in(&t, &S);
    sp_task_out(&t, &P);
    sp_task_out(&t, &m);
    sp_task_out(&t, &l);
    if (sp_submit(o, &t) < 0)
        return -1;

    t = sp_task_aic(DEC_PV);
    sp_task_in(&t, &P);
    sp_task_in(&t, &bt[G_VC]);
    sp_task_in(&t, &bt[G_TABLE]);
    sp_task_in(&t, &bt[G_LENS]);
    sp_task_out(&t, &O);
    sp_task_scalar(&t, (uint64_t)b);
    sp_task_scalar(&t, (uint64_t)j);
    if (sp_submit(o, &t) < 0)
        return -1;

    dec_state prev = j == 0 ? (dec_state){m, l, O} : *st;
    dec_state next = {spec1(NH), spec1(NH), spec2(NH, D)};
    t = sp_task_aiv(DEC_UPDATE);
    sp_task_in(&t, &m);
    sp_task_in(&t, &l);
    sp_task_in(&t, &O);
    sp_task_in(&t, &prev.M);
    sp_task_in(&t, &prev.L);
    sp_task_in(&t, &prev.acc);
    sp_task_out(&t, &next.M);
    sp_task_out(&t, &next.L);
    sp_task_out(&t, &next.acc);
    sp_task_scalar(&t, (uint64_t)(j == 0));
    if (sp_submit(o, &t) < 0)
        return -1;
    *st = next;
    return 0;
}

/* C = A @ W (W a layer's [1,K,N] weight slice) into c: a spec (SP_OUT)
 * or an existing buffer (SP_OUT_EXISTING). */
static int matmul(sp_orch *o, sp_tensor *x, sp_tensor *w, sp_tensor *c, sp_dir cdir)
{
    sp_task t = sp_task_aic(DEC_MATMUL);
    sp_task_in(&t, x);
    sp_task_in(&t, w);
    sp_task_arg(&t, c, cdir);
    return sp_submit(o, &t) < 0 ? -1 : 0;
}

static int rmsnorm(sp_orch *o, const sp_graph_args *a, sp_tensor *x, sp_tensor *w, sp_tensor *y)
{
    sp_task t = sp_task_aiv(DEC_RMSNORM);
    sp_task_in(&t, x);
    sp_task_in(&t, w);
    sp_task_out(&t, y);
    layer_scalar(&t, a, GS_EPS);
    return sp_submit(o, &t) < 0 ? -1 : 0;
}

static int add(sp_orch *o, sp_tensor *x, sp_tensor *y, sp_tensor *z, sp_dir zdir)
{
    sp_task t = sp_task_aiv(DEC_ADD);
    sp_task_in(&t, x);
    sp_task_in(&t, y);
    sp_task_arg(&t, z, zdir);
    return sp_submit(o, &t) < 0 ? -1 : 0;
}

/* One layer over its boundary `a` (G_*): the body of the graph task. */
static void layer_body(sp_orch *o, const sp_graph_args *a)
{
    sp_tensor bt[G_N];
    memcpy(bt, a->tensors, sizeof bt);
    const int64_t B = bt[G_TABLE].shape[0], MB = bt[G_TABLE].shape[1];
    const int64_t Hd = bt[G_X_IN].shape[2], F = bt[G_WUP].shape[2];

    sp_tensor h1 = spec2(B, Hd), *qkv = &bt[G_QKV];
    if (rmsnorm(o, a, &bt[G_X_IN], &bt[G_LN1], &h1) ||
        matmul(o, &h1, &bt[G_WQKV], qkv, SP_OUT_EXISTING))
        return;
    sp_task t = sp_task_aiv(DEC_KV_WRITE);
    sp_task_in(&t, qkv);
    sp_task_in(&t, &bt[G_TABLE]);
    sp_task_in(&t, &bt[G_LENS]);
    sp_task_inout(&t, &bt[G_KC]);
    sp_task_inout(&t, &bt[G_VC]);
    if (sp_submit(o, &t) < 0)
        return;

    for (int64_t b = 0; b < B; b++) {
        dec_state st;
        memset(&st, 0, sizeof st);
        for (int64_t j = 0; j < MB; j++)
            if (attend_block(o, a, bt, qkv, b, j, &st) != 0)
                return;
        sp_tensor attn_b;
        sp_tensor_slice(&bt[G_ATTN], 0, b, 1, &attn_b);
        t = sp_task_aiv(DEC_NORMALIZE);
        sp_task_in(&t, &st.L);
        sp_task_in(&t, &st.acc);
        sp_task_arg(&t, &attn_b, SP_OUT_EXISTING);
        if (sp_submit(o, &t) < 0)
            return;
    }

    sp_tensor proj = spec2(B, Hd), h2 = spec2(B, Hd), h3 = spec2(B, Hd);
    sp_tensor up = spec2(B, F), act = spec2(B, F), down = spec2(B, Hd);
    if (matmul(o, &bt[G_ATTN], &bt[G_WO], &proj, SP_OUT) ||
        add(o, &bt[G_X_IN], &proj, &h2, SP_OUT) || rmsnorm(o, a, &h2, &bt[G_LN2], &h3) ||
        matmul(o, &h3, &bt[G_WUP], &up, SP_OUT))
        return;
    t = sp_task_aiv(DEC_SILU);
    sp_task_in(&t, &up);
    sp_task_out(&t, &act);
    if (sp_submit(o, &t) < 0 || matmul(o, &act, &bt[G_WDOWN], &down, SP_OUT))
        return;
    add(o, &h2, &down, &bt[G_X_OUT], SP_OUT_EXISTING);
}

/* Checks the run's shapes; 0, or fails the run naming them. */
static int check_shapes(sp_orch *o, const sp_args *args)
{
    const sp_tensor *t = args->tensors;
    const int64_t L = t[A_LN1].shape[0], B = t[A_X].shape[0], Hd = t[A_X].shape[1];
    const int64_t D = t[A_KC].shape[3], F = t[A_WUP].shape[2];
    int ok = t[A_X].ndim == 2 && t[A_LN1].ndim == 2 && t[A_WQKV].ndim == 3 && t[A_WO].ndim == 3 &&
             t[A_LN2].ndim == 2 && t[A_WUP].ndim == 3 && t[A_WDOWN].ndim == 3 &&
             t[A_KC].ndim == 4 && t[A_VC].ndim == 4 && t[A_TABLE].ndim == 2 &&
             t[A_LENS].ndim == 1 && t[A_OUT].ndim == 2;
    ok = ok && L >= 1 && D >= 1 && Hd % D == 0 && t[A_LN1].shape[1] == Hd &&
         t[A_LN2].shape[0] == L && t[A_LN2].shape[1] == Hd;
    ok = ok && t[A_WQKV].shape[0] == L && t[A_WQKV].shape[1] == Hd &&
         t[A_WQKV].shape[2] == Hd + 2 * D && t[A_WO].shape[0] == L && t[A_WO].shape[1] == Hd &&
         t[A_WO].shape[2] == Hd;
    ok = ok && t[A_WUP].shape[0] == L && t[A_WUP].shape[1] == Hd && t[A_WDOWN].shape[0] == L &&
         t[A_WDOWN].shape[1] == F && t[A_WDOWN].shape[2] == Hd;
    for (int d = 0; ok && d < 4; d++)
        ok = t[A_VC].shape[d] == t[A_KC].shape[d];
    ok = ok && t[A_KC].shape[0] == L && t[A_TABLE].shape[0] == B && t[A_LENS].shape[0] == B &&
         t[A_OUT].shape[0] == B && t[A_OUT].shape[1] == Hd;
    ok = ok && t[A_TABLE].dtype == SP_DTYPE_I32 && t[A_LENS].dtype == SP_DTYPE_I32;
    if (!ok)
        sp_orch_fatal(o, SP_ESHAPE,
                      "decoder: want x/out [B,Hd], ln1/ln2 [L,Hd], wqkv [L,Hd,Hd+2D], "
                      "wo [L,Hd,Hd], wup [L,Hd,F], wdown [L,F,Hd], caches [L,NB,bs,D] with D "
                      "dividing Hd, block_table i32 [B,MB], context_lens i32 [B]");
    return ok ? 0 : -1;
}

/* View of `x` [B,Hd] as [1,B,Hd]: the shape every layer's hidden state has,
 * so layer 0 and the last layer share the record of the others. */
static int as_layer_view(sp_orch *o, const sp_tensor *x, sp_tensor *v)
{
    const int64_t shape[3] = {1, x->shape[0], x->shape[1]};
    if (sp_tensor_reshape(x, 3, shape, v) == SP_OK)
        return 0;
    sp_orch_fatal(o, SP_ESHAPE, "decoder: x and out must be contiguous [B,Hd]");
    return -1;
}

SP_ORCHESTRATION(decoder_orch)
{
    if (check_shapes(o, args))
        return;
    const sp_tensor *t = args->tensors;
    const int64_t L = t[A_LN1].shape[0], B = t[A_X].shape[0], Hd = t[A_X].shape[1];
    const int use_graph = args->scalars[S_GRAPH] != 0;

    sp_tensor x0, xL;
    if (as_layer_view(o, &t[A_X], &x0) || as_layer_view(o, &t[A_OUT], &xL))
        return;
    /* The hidden states between layers (two buffers in turn: x -> h0 -> h1
     * -> h0 ... -> out, so every layer's boundary has the same geometry,
     * buffer sizes and aliasing, and one record serves all L), and the QKV
     * projection and the attention output, which each layer overwrites.
     * These live for the whole run: each is read by tasks far apart in the
     * layer (a sequence's attention reads the QKV rows B * (4 MB + 1) tasks
     * after they are made), longer than a small tmr window keeps a fresh
     * output. */
    const int64_t h_shape[3] = {1, B, Hd};
    const int64_t D = t[A_KC].shape[3];
    sp_tensor hidden[2] = {sp_tensor_spec(SP_DTYPE_F32, 3, h_shape),
                           sp_tensor_spec(SP_DTYPE_F32, 3, h_shape)};
    sp_tensor attn = spec2(B, Hd), qkv = spec2(B, Hd + 2 * D);
    for (int64_t i = 0; i < 2 && i < L - 1; i++)
        if (sp_alloc_tensor(o, &hidden[i]) != SP_OK)
            return;
    if (sp_alloc_tensor(o, &attn) != SP_OK || sp_alloc_tensor(o, &qkv) != SP_OK)
        return;

    for (int64_t layer = 0; layer < L; layer++) {
        sp_graph_args a;
        sp_graph_args_init(&a);
        sp_tensor v;
        sp_graph_arg(&a, layer == 0 ? &x0 : &hidden[(layer - 1) % 2]);
        static const int per_layer[] = {A_LN1, A_WQKV, A_WO, A_LN2, A_WUP, A_WDOWN, A_KC, A_VC};
        for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0]; i++) {
            sp_tensor_slice(&t[per_layer[i]], 0, layer, 1, &v);
            sp_graph_arg(&a, &v);
        }
        sp_graph_arg(&a, &t[A_TABLE]);
        sp_graph_arg(&a, &t[A_LENS]);
        sp_graph_arg(&a, &qkv);
        sp_graph_arg(&a, &attn);
        sp_graph_arg(&a, layer == L - 1 ? &xL : &hidden[layer % 2]);
        sp_graph_scalar_arg(&a, args, S_SCALE);
        sp_graph_scalar_arg(&a, args, S_EPS);
        sp_graph_scalar(&a, use_graph ? 0 : 1);
        if (use_graph) {
            if (sp_submit_graph(o, layer_body, &a, 1) < 0)
                return;
        } else {
            layer_body(o, &a);
        }
        if (sp_orch_error(o))
            return;
    }
}
