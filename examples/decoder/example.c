/* decoder: the harness side. Hidden states are uniform in [-1, 1), norm
 * weights in [0.8, 1.2), each projection's weights in [-1, 1) / sqrt(its
 * input width). Each sequence's cache holds context_lens[b] - 1 earlier
 * tokens (uniform in [-1, 1)); the step appends token context_lens[b] - 1.
 * Every other cache row holds 1e30, so a kernel that reads a row outside a
 * context shows. The block table is a seeded permutation of all B * MB
 * physical blocks. The check covers the output and both caches. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decoder/golden.h"
#include "example.h"

#define DEC_MAX_BATCH 64
#define DEC_UNUSED 1e30f

static const ex_param_def params[] = {
    {"layers", "2", "transformer layers (L)"},
    {"batch", "2", "sequences decoded together (B)"},
    {"heads", "4", "query heads (NH); one KV head is shared by all"},
    {"head_dim", "16", "head dimension (D); hidden size = heads * head_dim"},
    {"ffn", "128", "MLP width (F)"},
    {"block_size", "4", "tokens per KV cache block"},
    {"context_lens", "5,9", "tokens per sequence after the step: B values, or one for all"},
    {"eps", "1e-5", "RMS norm epsilon"},
    {"graph", "1", "1: one graph task per layer; 0: the layer's tasks one by one"},
    {"seed", "42", "input random seed"},
};

static const ex_case cases[] = {
    {"small", "", 0},
    {"large",
     "layers=8 batch=4 heads=8 head_dim=32 ffn=512 block_size=32 "
     "context_lens=512,300,77,1",
     0},
};

/* Uniform [lo, hi) * mul over n floats. */
static void fill(float *p, int64_t n, uint64_t *rng, float lo, float hi, float mul)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = ex_rand_f32(rng, lo, hi) * mul;
}

static int setup(ex_instance *inst, char *err, size_t err_len)
{
    int64_t L, B, NH, D, F, bs, graph, seed, lens[DEC_MAX_BATCH];
    double eps;
    int nlens;
    if (ex_param_int(inst, "layers", &L, err, err_len) ||
        ex_param_int(inst, "batch", &B, err, err_len) ||
        ex_param_int(inst, "heads", &NH, err, err_len) ||
        ex_param_int(inst, "head_dim", &D, err, err_len) ||
        ex_param_int(inst, "ffn", &F, err, err_len) ||
        ex_param_int(inst, "block_size", &bs, err, err_len) ||
        ex_param_int(inst, "graph", &graph, err, err_len) ||
        ex_param_int(inst, "seed", &seed, err, err_len) ||
        ex_param_double(inst, "eps", &eps, err, err_len) ||
        ex_param_int_list(inst, "context_lens", lens, DEC_MAX_BATCH, &nlens, err, err_len))
        return -1;
    if (L < 1 || L > 64 || B < 1 || B > DEC_MAX_BATCH || NH < 1 || NH > 64 || D < 1 || D > 256 ||
        F < 1 || F > 8192 || bs < 1 || bs > 1024 || eps <= 0) {
        snprintf(err, err_len,
                 "want layers 1..64, batch 1..%d, heads 1..64, head_dim 1..256, ffn 1..8192, "
                 "block_size 1..1024, eps > 0",
                 DEC_MAX_BATCH);
        return -1;
    }
    if (nlens != B && nlens != 1) {
        snprintf(err, err_len, "context_lens has %d values; want batch (%lld) or 1", nlens,
                 (long long)B);
        return -1;
    }
    int64_t max_ctx = 0;
    for (int64_t b = 0; b < B; b++) {
        lens[b] = lens[nlens == 1 ? 0 : b];
        if (lens[b] < 1 || lens[b] > 65536) {
            snprintf(err, err_len, "context_lens[%lld]=%lld, want 1..65536", (long long)b,
                     (long long)lens[b]);
            return -1;
        }
        max_ctx = lens[b] > max_ctx ? lens[b] : max_ctx;
    }
    const int64_t Hd = NH * D, MB = (max_ctx + bs - 1) / bs, NB = B * MB;
    const int64_t x_shape[2] = {B, Hd}, ln_shape[2] = {L, Hd}, qkv_shape[3] = {L, Hd, Hd + 2 * D};
    const int64_t wo_shape[3] = {L, Hd, Hd}, up_shape[3] = {L, Hd, F}, down_shape[3] = {L, F, Hd};
    const int64_t c_shape[4] = {L, NB, bs, D}, t_shape[2] = {B, MB}, l_shape[1] = {B};
    float *x = ex_add_tensor(inst, "x", SP_DTYPE_F32, 2, x_shape, SP_IN);
    float *ln1 = ex_add_tensor(inst, "ln1", SP_DTYPE_F32, 2, ln_shape, SP_IN);
    float *wqkv = ex_add_tensor(inst, "wqkv", SP_DTYPE_F32, 3, qkv_shape, SP_IN);
    float *wo = ex_add_tensor(inst, "wo", SP_DTYPE_F32, 3, wo_shape, SP_IN);
    float *ln2 = ex_add_tensor(inst, "ln2", SP_DTYPE_F32, 2, ln_shape, SP_IN);
    float *wup = ex_add_tensor(inst, "wup", SP_DTYPE_F32, 3, up_shape, SP_IN);
    float *wdown = ex_add_tensor(inst, "wdown", SP_DTYPE_F32, 3, down_shape, SP_IN);
    float *kc = ex_add_tensor(inst, "key_cache", SP_DTYPE_F32, 4, c_shape, SP_INOUT);
    float *vc = ex_add_tensor(inst, "value_cache", SP_DTYPE_F32, 4, c_shape, SP_INOUT);
    int32_t *table = ex_add_tensor(inst, "block_table", SP_DTYPE_I32, 2, t_shape, SP_IN);
    int32_t *ctx = ex_add_tensor(inst, "context_lens", SP_DTYPE_I32, 1, l_shape, SP_IN);
    float *out = ex_add_tensor(inst, "out", SP_DTYPE_F32, 2, x_shape, SP_OUT);
    const size_t cache_bytes = (size_t)(L * NB * bs * D) * sizeof(float);
    float *gold = ex_alloc(inst, (size_t)(B * Hd) * sizeof(float));
    float *kc_gold = ex_alloc(inst, cache_bytes), *vc_gold = ex_alloc(inst, cache_bytes);
    if (!x || !ln1 || !wqkv || !wo || !ln2 || !wup || !wdown || !kc || !vc || !table || !ctx ||
        !out || !gold || !kc_gold || !vc_gold || NB > INT32_MAX) {
        snprintf(err, err_len, "out of host memory (SP_ENOMEM) or too many blocks (%lld)",
                 (long long)NB);
        return -1;
    }
    uint64_t rng = (uint64_t)seed;
    fill(x, B * Hd, &rng, -1.0f, 1.0f, 1.0f);
    fill(ln1, L * Hd, &rng, 0.8f, 1.2f, 1.0f);
    fill(ln2, L * Hd, &rng, 0.8f, 1.2f, 1.0f);
    fill(wqkv, L * Hd * (Hd + 2 * D), &rng, -1.0f, 1.0f, 1.0f / sqrtf((float)Hd));
    fill(wo, L * Hd * Hd, &rng, -1.0f, 1.0f, 1.0f / sqrtf((float)Hd));
    fill(wup, L * Hd * F, &rng, -1.0f, 1.0f, 1.0f / sqrtf((float)Hd));
    fill(wdown, L * F * Hd, &rng, -1.0f, 1.0f, 1.0f / sqrtf((float)F));
    for (int64_t i = 0; i < NB; i++)
        table[i] = (int32_t)i;
    for (int64_t i = NB - 1; i > 0; i--) {
        int64_t j = (int64_t)(ex_rand_u64(&rng) % (uint64_t)(i + 1));
        int32_t tmp = table[i];
        table[i] = table[j];
        table[j] = tmp;
    }
    for (int64_t i = 0; i < L * NB * bs * D; i++)
        kc[i] = vc[i] = DEC_UNUSED;
    for (int64_t l = 0; l < L; l++)
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t + 1 < lens[b]; t++) {
                const int64_t row = ((l * NB + table[b * MB + t / bs]) * bs + t % bs) * D;
                fill(kc + row, D, &rng, -1.0f, 1.0f, 1.0f);
                fill(vc + row, D, &rng, -1.0f, 1.0f, 1.0f);
            }
    for (int64_t b = 0; b < B; b++)
        ctx[b] = (int32_t)lens[b];
    const float scale = 1.0f / sqrtf((float)D), eps_f = (float)eps;
    uint32_t bits;
    memcpy(&bits, &scale, sizeof bits);
    ex_add_scalar(inst, bits);
    memcpy(&bits, &eps_f, sizeof bits);
    ex_add_scalar(inst, bits);
    ex_add_scalar(inst, graph ? 1 : 0);

    memcpy(kc_gold, kc, cache_bytes);
    memcpy(vc_gold, vc, cache_bytes);
    const dec_dims dims = {L, B, NH, D, F, bs, MB, NB};
    const dec_inputs in = {x,     ln1, wqkv,          wo,           ln2, wup, wdown,
                           table, ctx, (double)scale, (double)eps_f};
    if (decoder_golden(&dims, &in, kc_gold, vc_gold, gold) != 0) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory for the golden");
        return -1;
    }
    inst->golden[ex_arg_index(inst, "key_cache")] = kc_gold;
    inst->golden[ex_arg_index(inst, "value_cache")] = vc_gold;
    inst->golden[ex_arg_index(inst, "out")] = gold;
    inst->expect_tasks = L * (10 + B * (4 * MB + 1));
    inst->expect_edges = -1;
    return 0;
}

#define DEC_TOL 1e-4

static int check(const ex_instance *inst, double *max_err, char *err, size_t err_len)
{
    static const char *const names[] = {"out", "key_cache", "value_cache"};
    *max_err = 0;
    for (int i = 0; i < 3; i++) {
        const double e = ex_max_err_f32(inst, ex_arg_index(inst, names[i]), 0);
        if (!(e <= DEC_TOL)) {
            *max_err = e;
            snprintf(err, err_len, "%s differs from the decoder golden by up to %g > %g", names[i],
                     e, DEC_TOL);
            return 1;
        }
        *max_err = e > *max_err ? e : *max_err;
    }
    return 0;
}

const ex_example ex_decoder = {
    .name = "decoder",
    .description = "an L-layer transformer decode step over a paged KV cache, a graph task per "
                   "layer",
    .params = params,
    .param_count = sizeof params / sizeof params[0],
    .cases = cases,
    .case_count = sizeof cases / sizeof cases[0],
    .setup = setup,
    .check = check,
};
