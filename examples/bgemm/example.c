/* bgemm: the harness side. Inputs are uniform in [0, 1) so every C element
 * is a positive sum and the relative tolerance (1e-3) is meaningful.
 * Default: 4 groups of 128x256 @ 256x128 in 32-tiles, grid_k 8:
 * 4 * 4 * 4 * 8 * 2 = 1024 tasks. */
#include <stdio.h>

#include "bgemm/golden.h"
#include "example.h"

static const ex_param_def params[] = {
    {"tile", "32", "tile edge (elements)"},
    {"grid_m", "4", "tiles along M"},
    {"grid_n", "4", "tiles along N"},
    {"grid_k", "8", "tiles along K (partial products per output tile)"},
    {"groups", "4", "independent GEMMs in the batch"},
    {"seed", "1", "input random seed"},
};

static const ex_case cases[] = {
    {"default", "", 0},
    {"small", "tile=16 grid_m=2 grid_n=3 grid_k=3 groups=2", 0},
};

static int setup(ex_instance *inst, char *err, size_t err_len)
{
    int64_t tile, gm, gn, gk, groups, seed;
    if (ex_param_int(inst, "tile", &tile, err, err_len) ||
        ex_param_int(inst, "grid_m", &gm, err, err_len) ||
        ex_param_int(inst, "grid_n", &gn, err, err_len) ||
        ex_param_int(inst, "grid_k", &gk, err, err_len) ||
        ex_param_int(inst, "groups", &groups, err, err_len) ||
        ex_param_int(inst, "seed", &seed, err, err_len))
        return -1;
    if (tile < 1 || tile > 256 || gm < 1 || gn < 1 || gk < 1 || groups < 1 ||
        gm * gn * gk * groups > (1 << 20)) {
        snprintf(err, err_len,
                 "tile must be 1..256, grids and groups >= 1, and groups*grid_m*grid_n*grid_k "
                 "at most 2^20");
        return -1;
    }
    const int64_t m = gm * tile, n = gn * tile, k = gk * tile;
    int64_t cfg_shape[1] = {3}, a_shape[3] = {groups, m, k}, b_shape[3] = {groups, k, n},
            c_shape[3] = {groups, m, n};
    int64_t *cfg = ex_add_tensor(inst, "cfg", SP_DTYPE_I64, 1, cfg_shape, SP_IN);
    float *A = ex_add_tensor(inst, "A", SP_DTYPE_F32, 3, a_shape, SP_IN);
    float *B = ex_add_tensor(inst, "B", SP_DTYPE_F32, 3, b_shape, SP_IN);
    float *C = ex_add_tensor(inst, "C", SP_DTYPE_F32, 3, c_shape, SP_OUT);
    float *gold = ex_alloc(inst, (size_t)(groups * m * n) * sizeof(float));
    if (!cfg || !A || !B || !C || !gold) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory");
        return -1;
    }
    cfg[0] = tile;
    cfg[1] = gk;
    cfg[2] = groups;
    uint64_t rng = (uint64_t)seed;
    for (int64_t i = 0; i < groups * m * k; i++)
        A[i] = ex_rand_f32(&rng, 0.0f, 1.0f);
    for (int64_t i = 0; i < groups * k * n; i++)
        B[i] = ex_rand_f32(&rng, 0.0f, 1.0f);
    bgemm_golden(A, B, gold, groups, m, k, n);
    inst->golden[3] = gold;
    inst->expect_tasks = groups * gm * gn * gk * 2;
    inst->expect_edges = groups * gm * gn * (2 * gk - 1);
    return 0;
}

static int check(const ex_instance *inst, double *max_err, char *err, size_t err_len)
{
    *max_err = ex_max_err_f32(inst, 3, 1);
    if (*max_err <= 1e-3)
        return 0;
    snprintf(err, err_len, "C differs from the golden by up to %g relative > 1e-3", *max_err);
    return 1;
}

const ex_example ex_bgemm = {
    .name = "bgemm",
    .description = "batched tiled GEMM: alternating AIC gemm and AIV accumulate, ~1000 tasks",
    .params = params,
    .param_count = sizeof params / sizeof params[0],
    .cases = cases,
    .case_count = sizeof cases / sizeof cases[0],
    .setup = setup,
    .check = check,
};
