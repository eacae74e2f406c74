/* control_rw: the harness side. x holds integers in [-50, 50] as f32, so
 * y and the count are exact and compared exactly. */
#include <stdio.h>

#include "control_rw/golden.h"
#include "example.h"

static const ex_param_def params[] = {
    {"n", "1024", "elements of x and y"},
    {"k", "3", "multiplier the orchestration writes into coef[0]"},
    {"offset", "-7", "offset the orchestration writes into coef[1]"},
    {"nrep", "2", "increments when not reading back"},
    {"readback", "0", "1: choose the increments from the count kernel's output"},
    {"seed", "7", "input random seed"},
};

static const ex_case cases[] = {
    {"default", "", 0},
    /* Reads a kernel's output mid-orchestration: tmr only. */
    {"readback", "readback=1", 1},
};

static int setup(ex_instance *inst, char *err, size_t err_len)
{
    int64_t n, k, off, nrep, readback, seed;
    if (ex_param_int(inst, "n", &n, err, err_len) || ex_param_int(inst, "k", &k, err, err_len) ||
        ex_param_int(inst, "offset", &off, err, err_len) ||
        ex_param_int(inst, "nrep", &nrep, err, err_len) ||
        ex_param_int(inst, "readback", &readback, err, err_len) ||
        ex_param_int(inst, "seed", &seed, err, err_len))
        return -1;
    if (n < 1 || n > (1 << 24) || k < -1000 || k > 1000 || off < -100000 || off > 100000 ||
        nrep < 0 || nrep > 1000 || (readback != 0 && readback != 1)) {
        snprintf(err, err_len,
                 "want n 1..2^24, |k| <= 1000, |offset| <= 1e5, nrep 0..1000, readback 0|1");
        return -1;
    }
    int64_t four = 4, two = 2;
    int64_t *ctl = ex_add_tensor(inst, "params", SP_DTYPE_I64, 1, &four, SP_IN);
    float *x = ex_add_tensor(inst, "x", SP_DTYPE_F32, 1, &n, SP_IN);
    float *y = ex_add_tensor(inst, "y", SP_DTYPE_F32, 1, &n, SP_OUT);
    int64_t *info = ex_add_tensor(inst, "info", SP_DTYPE_I64, 1, &two, SP_OUT);
    float *g_y = ex_alloc(inst, (size_t)n * sizeof(float));
    int64_t *g_info = ex_alloc(inst, 2 * sizeof(int64_t));
    if (!ctl || !x || !y || !info || !g_y || !g_info) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory");
        return -1;
    }
    ctl[0] = k;
    ctl[1] = off;
    ctl[2] = nrep;
    ctl[3] = readback;
    uint64_t rng = (uint64_t)seed;
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)((int64_t)(ex_rand_u64(&rng) % 101) - 50);
    int64_t used = control_rw_golden(x, n, k, off, nrep, (int)readback, g_y, g_info);
    inst->golden[2] = g_y;
    inst->golden[3] = g_info;
    inst->expect_tasks = 3 + used;
    return 0;
}

static int check(const ex_instance *inst, double *max_err, char *err, size_t err_len)
{
    int64_t bad_y = ex_mismatches(inst, 2), bad_info = ex_mismatches(inst, 3);
    *max_err = (double)(bad_y + bad_info);
    if (!bad_y && !bad_info)
        return 0;
    const int64_t *info = (const int64_t *)(uintptr_t)inst->args.tensors[3].addr;
    const int64_t *gold = inst->golden[3];
    snprintf(err, err_len,
             "%lld elements of y differ; info = {count %lld, nrep %lld}, golden {%lld, %lld}",
             (long long)bad_y, (long long)info[0], (long long)info[1], (long long)gold[0],
             (long long)gold[1]);
    return 1;
}

const ex_example ex_control_rw = {
    .name = "control_rw",
    .description = "orchestration writes a control tensor, kernels consume it, a count "
                   "chooses how many tasks follow",
    .params = params,
    .param_count = sizeof params / sizeof params[0],
    .cases = cases,
    .case_count = sizeof cases / sizeof cases[0],
    .setup = setup,
    .check = check,
};
