/* dummy_chain: the harness side. Compared exactly: the log must read
 * 0, 1, ..., stamps-1 and the counter must equal stamps. */
#include <stdio.h>

#include "dummy_chain/golden.h"
#include "example.h"

static const ex_param_def params[] = {
    {"stamps", "8", "real (stamp) tasks in the chain"},
    {"gap", "4", "dummy tasks before, between and after the stamps"},
};

static const ex_case cases[] = {
    {"default", "", 0},
    {"long", "stamps=64 gap=16", 0},
};

static int setup(ex_instance *inst, char *err, size_t err_len)
{
    int64_t stamps, gap;
    if (ex_param_int(inst, "stamps", &stamps, err, err_len) ||
        ex_param_int(inst, "gap", &gap, err, err_len))
        return -1;
    if (stamps < 1 || stamps > 100000 || gap < 1 || gap > 4096) {
        snprintf(err, err_len, "want stamps 1..100000 and gap 1..4096");
        return -1;
    }
    int64_t one = 1;
    int64_t *counter = ex_add_tensor(inst, "counter", SP_DTYPE_I64, 1, &one, SP_INOUT);
    int64_t *log = ex_add_tensor(inst, "log", SP_DTYPE_I64, 1, &stamps, SP_OUT);
    int64_t *g_counter = ex_alloc(inst, sizeof(int64_t));
    int64_t *g_log = ex_alloc(inst, (size_t)stamps * sizeof(int64_t));
    if (!counter || !log || !g_counter || !g_log) {
        snprintf(err, err_len, "SP_ENOMEM: out of host memory");
        return -1;
    }
    *counter = 0;
    ex_add_scalar(inst, (uint64_t)gap);
    dummy_chain_golden(stamps, g_counter, g_log);
    inst->golden[0] = g_counter;
    inst->golden[1] = g_log;
    inst->expect_tasks = stamps + (stamps + 1) * gap;
    inst->expect_edges = inst->expect_tasks - 1;
    return 0;
}

static int check(const ex_instance *inst, double *max_err, char *err, size_t err_len)
{
    int64_t bad_counter = ex_mismatches(inst, 0), bad_log = ex_mismatches(inst, 1);
    *max_err = (double)(bad_counter + bad_log);
    if (!bad_counter && !bad_log)
        return 0;
    snprintf(
        err, err_len,
        "stamps ran out of chain order: %lld log entries and %lld counter differ (counter=%lld)",
        (long long)bad_log, (long long)bad_counter,
        (long long)*(const int64_t *)(uintptr_t)inst->args.tensors[0].addr);
    return 1;
}

const ex_example ex_dummy_chain = {
    .name = "dummy_chain",
    .description = "stamp tasks ordered only by chains of dummy tasks (manual scope)",
    .params = params,
    .param_count = sizeof params / sizeof params[0],
    .cases = cases,
    .case_count = sizeof cases / sizeof cases[0],
    .setup = setup,
    .check = check,
};
