/* The kernel timeout counts CPU time, not only wall-clock time (issue 12,
 * item 16): on a loaded machine (8 processes on 2 CPUs) a healthy kernel
 * spends most of its wall time waiting for a CPU and was stopped as hung.
 * A kernel past its timeout in wall time is stopped only once its core's
 * thread has also had the timeout in CPU time since (or at 16 timeouts of
 * wall time, for a kernel that never uses the CPU).
 *
 * A kernel that sleeps 300 ms — off the CPU, as a starved kernel is — under
 * a 50 ms timeout completes and its result is right (it was stopped at
 * 50 ms before); under a 10 ms timeout it is past the 160 ms wall cap and
 * is stopped. Both runtimes. The spinning kernel of tests/scene/test_faults.c
 * (which uses its CPU) is still stopped. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

static const char *const modules[] = {SP_MODULE_DIR "/libsimpler_hbg_sim.so",
                                      SP_MODULE_DIR "/libsimpler_tmr_sim.so"};

static int run_sleeper(const char *module, uint64_t timeout_us, char *msg, size_t len)
{
    sp_worker *w;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    sp_callable_kernel_spec k = {.func_id = 0,
                                 .core_type = SP_CORE_AIV,
                                 .path = SP_TEST_KERNEL_DIR "/slow_kernels.so",
                                 .entry = "sleep_300ms_fill"};
    sp_callable_spec spec = {
        .orch_path = SP_TEST_KERNEL_DIR "/orch_faults.so", /* mode 0: one AIV task of func 0 */
        .orch_entry = "orch_faults",
        .orch_config = "orch_faults_config",
        .kernels = &k,
        .kernel_count = 1,
    };
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
    static uint64_t x[8];
    memset(x, 0, sizeof x);
    sp_args args;
    memset(&args, 0, sizeof args);
    const int64_t n = 8;
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)x, SP_DTYPE_U64, 1, &n);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalar_count = 1;
    sp_call_config cfg = {.timeout_us = timeout_us};
    int rc = sp_worker_run(w, 0, &args, &cfg, NULL);
    snprintf(msg, len, "%s", sp_worker_last_error(w));
    if (rc == SP_OK)
        cr_assert_eq(x[0], 0x5eedull, "the kernel's result is missing");
    sp_worker_close(w);
    return rc;
}

ParameterizedTestParameters(kernel_cpu_time, a_kernel_off_the_cpu_is_not_stopped_as_hung)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, kernel_cpu_time, a_kernel_off_the_cpu_is_not_stopped_as_hung,
                  .timeout = 120)
{
    char msg[1024];
    int rc = run_sleeper(modules[*mod], 50000, msg, sizeof msg);
    cr_assert_eq(rc, SP_OK, "%s: %s: %s", modules[*mod], sp_status_name(rc), msg);
}

ParameterizedTestParameters(kernel_cpu_time, past_the_wall_cap_it_is_stopped)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, kernel_cpu_time, past_the_wall_cap_it_is_stopped, .timeout = 120)
{
    char msg[1024];
    int rc = run_sleeper(modules[*mod], 10000, msg, sizeof msg);
    cr_assert_eq(rc, SP_EKERNEL_TIMEOUT, "%s: %s: %s", modules[*mod], sp_status_name(rc), msg);
    cr_assert_not_null(strstr(msg, "sleep_300ms_fill"), "%s", msg);
}
