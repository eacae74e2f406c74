/* matmul_diamond: the harness side. A = e^4 and W1 = W2 = 1/256, so with
 * n = 128: b = 2, c = d = 2 * 128 / 256 = 1 and F = e^2 everywhere. */
#include <math.h>
#include <stdio.h>

#include "example.h"
#include "matmul_diamond/golden.h"

static const ex_param_def params[] = {
    {"n", "128", "matrix size (n x n)"},
};

static const ex_case cases[] = {
    {"default", "", 0},
};

static int setup(ex_instance *inst, char *err, size_t err_len)
{
    int64_t n;
    if (ex_param_int(inst, "n", &n, err, err_len))
        return -1;
    if (n < 1 || n > 4096) {
        snprintf(err, err_len, "n=%lld must be 1..4096", (long long)n);
        return -1;
    }
    int64_t shape[2] = {n, n};
    float *A = ex_add_tensor(inst, "A", SP_DTYPE_F32, 2, shape, SP_IN);
    float *W1 = ex_add_tensor(inst, "W1", SP_DTYPE_F32, 2, shape, SP_IN);
    float *W2 = ex_add_tensor(inst, "W2", SP_DTYPE_F32, 2, shape, SP_IN);
    float *F = ex_add_tensor(inst, "F", SP_DTYPE_F32, 2, shape, SP_OUT);
    float *gold = ex_alloc(inst, (size_t)(n * n) * sizeof(float));
    if (!A || !W1 || !W2 || !F || !gold) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory for n=%lld", (long long)n);
        return -1;
    }
    for (int64_t i = 0; i < n * n; i++) {
        A[i] = (float)exp(4.0);
        W1[i] = W2[i] = 1.0f / 256.0f;
    }
    if (matmul_diamond_golden(A, W1, W2, gold, n) != 0) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory for the golden");
        return -1;
    }
    inst->golden[3] = gold;
    inst->expect_tasks = 4;
    inst->expect_edges = 4;
    return 0;
}

static int check(const ex_instance *inst, double *max_err, char *err, size_t err_len)
{
    *max_err = ex_max_err_f32(inst, 3, 0);
    if (*max_err <= 1e-4)
        return 0;
    snprintf(err, err_len, "F differs from the golden (e^2 for n=128) by up to %g > 1e-4",
             *max_err);
    return 1;
}

const ex_example ex_matmul_diamond = {
    .name = "matmul_diamond",
    .description = "F = exp(b@W1 + b@W2), b = sqrt(log A): an AIV/AIC diamond, F = e^2",
    .params = params,
    .param_count = sizeof params / sizeof params[0],
    .cases = cases,
    .case_count = sizeof cases / sizeof cases[0],
    .setup = setup,
    .check = check,
};
