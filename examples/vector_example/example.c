/* vector_example: the harness side (parameters, inputs, golden, check).
 * a = 2 and b = 3 everywhere, so f = (5+1)*(5+2) + 5 = 47 everywhere. */
#include <math.h>
#include <stdio.h>

#include "example.h"
#include "vector_example/golden.h"

static const ex_param_def params[] = {
    {"n", "16384", "elements per vector"},
    {"blocks", "1", "SPMD blocks per task (the work is split between them)"},
};

static const ex_case cases[] = {
    {"default", "", 0},
    {"spmd", "blocks=4", 0},
};

static int setup(ex_instance *inst, char *err, size_t err_len)
{
    int64_t n, blocks;
    if (ex_param_int(inst, "n", &n, err, err_len) ||
        ex_param_int(inst, "blocks", &blocks, err, err_len))
        return -1;
    if (n < 1 || n > (1 << 28) || blocks < 1 || blocks > 1024) {
        snprintf(err, err_len, "n=%lld must be 1..2^28 and blocks=%lld 1..1024", (long long)n,
                 (long long)blocks);
        return -1;
    }
    float *a = ex_add_tensor(inst, "a", SP_DTYPE_F32, 1, &n, SP_IN);
    float *b = ex_add_tensor(inst, "b", SP_DTYPE_F32, 1, &n, SP_IN);
    float *f = ex_add_tensor(inst, "f", SP_DTYPE_F32, 1, &n, SP_OUT);
    float *gold = ex_alloc(inst, (size_t)n * sizeof(float));
    if (!a || !b || !f || !gold) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory for n=%lld", (long long)n);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        a[i] = 2.0f;
        b[i] = 3.0f;
    }
    ex_add_scalar(inst, (uint64_t)blocks);
    vector_example_golden(a, b, gold, n);
    inst->golden[2] = gold;
    inst->expect_tasks = 5;
    inst->expect_edges = 6;
    return 0;
}

static int check(const ex_instance *inst, double *max_err, char *err, size_t err_len)
{
    *max_err = ex_max_err_f32(inst, 2, 0);
    if (*max_err <= 1e-6)
        return 0;
    snprintf(err, err_len, "f differs from the golden (47) by up to %g", *max_err);
    return 1;
}

const ex_example ex_vector_example = {
    .name = "vector_example",
    .description = "f = (c+1)*(c+2) + c, c = a + b: 5 AIV tasks, 6 edges, f = 47",
    .params = params,
    .param_count = sizeof params / sizeof params[0],
    .cases = cases,
    .case_count = sizeof cases / sizeof cases[0],
    .setup = setup,
    .check = check,
};
