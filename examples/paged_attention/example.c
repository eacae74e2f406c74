/* paged_attention: the harness side. Query, keys and values are uniform in
 * [-1, 1); the block table maps each batch's logical blocks to a seeded
 * permutation of all B * MB physical blocks, so batches interleave in the
 * cache and a wrong lookup shows. One KV head serves all H query heads. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "example.h"
#include "paged_attention/golden.h"

#define PA_MAX_BATCH 256

static const ex_param_def params[] = {
    {"batch", "1", "sequences in the batch (B)"},
    {"heads", "16", "query heads (H); one KV head is shared by all"},
    {"head_dim", "16", "head dimension (D)"},
    {"block_size", "16", "tokens per KV cache block"},
    {"context_lens", "33", "tokens per sequence: B comma-separated values, or one for all"},
    {"scale", "0", "attention scale; 0 means 1/sqrt(head_dim)"},
    {"seed", "42", "input random seed"},
};

static const ex_case cases[] = {
    {"small", "", 0},
    {"varlen", "batch=4 context_lens=1,17,64,100", 0},
    {"large",
     "batch=8 heads=16 head_dim=64 block_size=32 "
     "context_lens=1024,1000,900,777,512,333,128,1",
     0},
};

static int setup(ex_instance *inst, char *err, size_t err_len)
{
    int64_t B, H, D, bs, seed, lens[PA_MAX_BATCH];
    double scale;
    int nlens;
    if (ex_param_int(inst, "batch", &B, err, err_len) ||
        ex_param_int(inst, "heads", &H, err, err_len) ||
        ex_param_int(inst, "head_dim", &D, err, err_len) ||
        ex_param_int(inst, "block_size", &bs, err, err_len) ||
        ex_param_int(inst, "seed", &seed, err, err_len) ||
        ex_param_double(inst, "scale", &scale, err, err_len) ||
        ex_param_int_list(inst, "context_lens", lens, PA_MAX_BATCH, &nlens, err, err_len))
        return -1;
    if (B < 1 || B > PA_MAX_BATCH || H < 1 || H > 256 || D < 1 || D > 1024 || bs < 1 || bs > 1024) {
        snprintf(err, err_len,
                 "want batch 1..%d, heads 1..256, head_dim 1..1024, block_size 1..1024",
                 PA_MAX_BATCH);
        return -1;
    }
    if (nlens != B && nlens != 1) {
        snprintf(err, err_len, "context_lens has %d values; want batch (%lld) or 1", nlens,
                 (long long)B);
        return -1;
    }
    int64_t max_ctx = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t c = lens[nlens == 1 ? 0 : b];
        if (c < 1 || c > (1 << 20)) {
            snprintf(err, err_len, "context_lens[%lld]=%lld, want 1..2^20", (long long)b,
                     (long long)c);
            return -1;
        }
        lens[b] = c;
        max_ctx = c > max_ctx ? c : max_ctx;
    }
    if (scale == 0.0)
        scale = 1.0 / sqrt((double)D);
    const int64_t MB = (max_ctx + bs - 1) / bs, NB = B * MB;

    int64_t q_shape[3] = {B, H, D}, c_shape[3] = {NB, bs, D}, t_shape[2] = {B, MB},
            l_shape[1] = {B};
    float *q = ex_add_tensor(inst, "query", SP_DTYPE_F32, 3, q_shape, SP_IN);
    float *kc = ex_add_tensor(inst, "key_cache", SP_DTYPE_F32, 3, c_shape, SP_IN);
    float *vc = ex_add_tensor(inst, "value_cache", SP_DTYPE_F32, 3, c_shape, SP_IN);
    int32_t *table = ex_add_tensor(inst, "block_table", SP_DTYPE_I32, 2, t_shape, SP_IN);
    int32_t *ctx = ex_add_tensor(inst, "context_lens", SP_DTYPE_I32, 1, l_shape, SP_IN);
    float *out = ex_add_tensor(inst, "out", SP_DTYPE_F32, 3, q_shape, SP_OUT);
    float *gold = ex_alloc(inst, (size_t)(B * H * D) * sizeof(float));
    if (!q || !kc || !vc || !table || !ctx || !out || !gold || NB > INT32_MAX) {
        snprintf(err, err_len, "out of host memory (SP_ENOMEM) or too many blocks (%lld)",
                 (long long)NB);
        return -1;
    }
    uint64_t rng = (uint64_t)seed;
    for (int64_t i = 0; i < B * H * D; i++)
        q[i] = ex_rand_f32(&rng, -1.0f, 1.0f);
    for (int64_t i = 0; i < NB * bs * D; i++) {
        kc[i] = ex_rand_f32(&rng, -1.0f, 1.0f);
        vc[i] = ex_rand_f32(&rng, -1.0f, 1.0f);
    }
    /* Fisher-Yates over the physical blocks: a deterministic permutation. */
    for (int64_t i = 0; i < NB; i++)
        table[i] = (int32_t)i;
    for (int64_t i = NB - 1; i > 0; i--) {
        int64_t j = (int64_t)(ex_rand_u64(&rng) % (uint64_t)(i + 1));
        int32_t tmp = table[i];
        table[i] = table[j];
        table[j] = tmp;
    }
    /* Per batch of n blocks: 4n + 1 tasks; edges QK->softmax, softmax->PV,
     * softmax->update, PV->update per block, update->update between blocks
     * and last update->normalize: 5n. */
    int64_t tasks = 0, edges = 0;
    for (int64_t b = 0; b < B; b++) {
        ctx[b] = (int32_t)lens[b];
        tasks += 4 * ((lens[b] + bs - 1) / bs) + 1;
        edges += 5 * ((lens[b] + bs - 1) / bs);
    }
    float scale_f = (float)scale;
    uint32_t bits;
    memcpy(&bits, &scale_f, sizeof bits);
    ex_add_scalar(inst, bits);

    pa_dims dims = {B, H, D, bs, MB};
    if (paged_attention_golden(&dims, q, kc, vc, table, ctx, (double)scale_f, gold) != 0) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory for the golden");
        return -1;
    }
    inst->golden[5] = gold;
    inst->expect_tasks = tasks;
    inst->expect_edges = edges;
    return 0;
}

static int check(const ex_instance *inst, double *max_err, char *err, size_t err_len)
{
    *max_err = ex_max_err_f32(inst, 5, 0);
    if (*max_err <= 1e-4)
        return 0;
    snprintf(err, err_len, "out differs from the attention golden by up to %g > 1e-4", *max_err);
    return 1;
}

const ex_example ex_paged_attention = {
    .name = "paged_attention",
    .description = "decode attention over a paged KV cache: QK, softmax, PV, online update",
    .params = params,
    .param_count = sizeof params / sizeof params[0],
    .cases = cases,
    .case_count = sizeof cases / sizeof cases[0],
    .setup = setup,
    .check = check,
};
