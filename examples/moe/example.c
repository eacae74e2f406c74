/* moe: the harness side. Tokens and router weights are uniform in
 * [-1, 1), expert weights in [-1, 1) / sqrt(their input width). The
 * router bias is uniform in [-0.5, 0.5) except for the last `empty`
 * experts, whose bias of -100 keeps every token away: `half_empty` makes
 * half the experts get no token, so half the expert tasks are skipped.
 * A token whose k-th and (k+1)-th logits lie within 1e-3 of each other is
 * drawn again, so float rounding in the router cannot pick another expert
 * than the double golden does. The check covers out and counts. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "example.h"
#include "moe/golden.h"

#define MOE_MAX_EXPERTS 64
#define MOE_MARGIN 1e-3
#define MOE_TOL 1e-4

static const ex_param_def params[] = {
    {"tokens", "16", "tokens in the batch (T)"},
    {"hidden", "32", "hidden size (Hd)"},
    {"ffn", "64", "expert MLP width (F)"},
    {"experts", "4", "experts (E), at most 64"},
    {"top_k", "2", "experts per token"},
    {"empty", "0", "experts (the last ones) the router bias keeps empty"},
    {"predicated", "1", "1: expert tasks predicated on counts[e] != 0; 0: plain tasks"},
    {"padded", "0", "1: expert MLP kernels compute all T rows (static shapes)"},
    {"seed", "42", "input random seed"},
};

static const ex_case cases[] = {
    {"small", "", 0},
    {"half_empty", "tokens=32 experts=8 empty=4", 0},
    {"large", "tokens=128 hidden=128 ffn=256 experts=16", 0},
};

static void fill(float *p, int64_t n, uint64_t *rng, float lo, float hi, float mul)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = ex_rand_f32(rng, lo, hi) * mul;
}

/* The gap between the k-th and (k+1)-th largest logits (INFINITY if k >= E). */
static double topk_margin(const double *logits, int64_t E, int64_t k)
{
    if (k >= E || k < 1)
        return INFINITY;
    double sorted[MOE_MAX_EXPERTS];
    for (int64_t e = 0; e < E; e++) {
        int64_t i = e;
        while (i > 0 && sorted[i - 1] < logits[e]) {
            sorted[i] = sorted[i - 1];
            i--;
        }
        sorted[i] = logits[e];
    }
    return sorted[k - 1] - sorted[k];
}

static int setup(ex_instance *inst, char *err, size_t err_len)
{
    int64_t T, Hd, F, E, k, empty, pred, padded, seed;
    if (ex_param_int(inst, "tokens", &T, err, err_len) ||
        ex_param_int(inst, "hidden", &Hd, err, err_len) ||
        ex_param_int(inst, "ffn", &F, err, err_len) ||
        ex_param_int(inst, "experts", &E, err, err_len) ||
        ex_param_int(inst, "top_k", &k, err, err_len) ||
        ex_param_int(inst, "empty", &empty, err, err_len) ||
        ex_param_int(inst, "predicated", &pred, err, err_len) ||
        ex_param_int(inst, "padded", &padded, err, err_len) ||
        ex_param_int(inst, "seed", &seed, err, err_len))
        return -1;
    if (T < 1 || T > 65536 || Hd < 1 || Hd > 4096 || F < 1 || F > 8192 || E < 1 ||
        E > MOE_MAX_EXPERTS || k < 1 || empty < 0 || k > E - empty) {
        snprintf(err, err_len,
                 "want tokens 1..65536, hidden 1..4096, ffn 1..8192, experts 1..%d, "
                 "top_k 1..experts-empty, empty >= 0",
                 MOE_MAX_EXPERTS);
        return -1;
    }
    const int64_t x_shape[2] = {T, Hd}, wr_shape[2] = {Hd, E}, e_shape[1] = {E};
    const int64_t w1_shape[3] = {E, Hd, F}, w2_shape[3] = {E, F, Hd};
    float *x = ex_add_tensor(inst, "x", SP_DTYPE_F32, 2, x_shape, SP_IN);
    float *wr = ex_add_tensor(inst, "w_router", SP_DTYPE_F32, 2, wr_shape, SP_IN);
    float *bias = ex_add_tensor(inst, "router_bias", SP_DTYPE_F32, 1, e_shape, SP_IN);
    float *w1 = ex_add_tensor(inst, "w1", SP_DTYPE_F32, 3, w1_shape, SP_IN);
    float *w2 = ex_add_tensor(inst, "w2", SP_DTYPE_F32, 3, w2_shape, SP_IN);
    int32_t *counts = ex_add_tensor(inst, "counts", SP_DTYPE_I32, 1, e_shape, SP_OUT);
    float *out = ex_add_tensor(inst, "out", SP_DTYPE_F32, 2, x_shape, SP_OUT);
    float *gold = ex_alloc(inst, (size_t)(T * Hd) * sizeof(float));
    int32_t *gold_counts = ex_alloc(inst, (size_t)E * sizeof(int32_t));
    if (!x || !wr || !bias || !w1 || !w2 || !counts || !out || !gold || !gold_counts) {
        snprintf(err, err_len, "out of host memory (SP_ENOMEM)");
        return -1;
    }
    uint64_t rng = (uint64_t)seed;
    fill(wr, Hd * E, &rng, -1.0f, 1.0f, 1.0f);
    fill(bias, E, &rng, -0.5f, 0.5f, 1.0f);
    for (int64_t e = E - empty; e < E; e++)
        bias[e] = -100.0f;
    fill(w1, E * Hd * F, &rng, -1.0f, 1.0f, 1.0f / sqrtf((float)Hd));
    fill(w2, E * F * Hd, &rng, -1.0f, 1.0f, 1.0f / sqrtf((float)F));
    const moe_dims dims = {T, Hd, F, E, k};
    double logits[MOE_MAX_EXPERTS];
    for (int64_t t = 0; t < T; t++) {
        int tries = 0;
        do {
            fill(x + t * Hd, Hd, &rng, -1.0f, 1.0f, 1.0f);
            moe_golden_logits(&dims, x, wr, bias, t, logits);
        } while (topk_margin(logits, E, k) < MOE_MARGIN && ++tries < 1000);
    }
    ex_add_scalar(inst, (uint64_t)k);
    ex_add_scalar(inst, pred ? 1 : 0);
    ex_add_scalar(inst, padded ? 1 : 0);
    if (moe_golden(&dims, x, wr, bias, w1, w2, gold_counts, gold) != 0) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory for the golden");
        return -1;
    }
    inst->golden[ex_arg_index(inst, "counts")] = gold_counts;
    inst->golden[ex_arg_index(inst, "out")] = gold;
    inst->expect_tasks = 2 + 5 * E;
    inst->expect_edges = -1;
    return 0;
}

static int check(const ex_instance *inst, double *max_err, char *err, size_t err_len)
{
    const int64_t bad = ex_mismatches(inst, ex_arg_index(inst, "counts"));
    if (bad) {
        *max_err = INFINITY;
        snprintf(err, err_len, "counts differ from the router golden in %lld expert(s)",
                 (long long)bad);
        return 1;
    }
    *max_err = ex_max_err_f32(inst, ex_arg_index(inst, "out"), 0);
    if (*max_err <= MOE_TOL)
        return 0;
    snprintf(err, err_len, "out differs from the moe golden by up to %g > %g", *max_err, MOE_TOL);
    return 1;
}

const ex_example ex_moe = {
    .name = "moe",
    .description = "a mixture-of-experts layer: a router, then per expert gather, MLP and "
                   "scatter-add, predicated on the expert's token count",
    .params = params,
    .param_count = sizeof params / sizeof params[0],
    .cases = cases,
    .case_count = sizeof cases / sizeof cases[0],
    .setup = setup,
    .check = check,
};
