/* The per-task kernel timeout and the orchestration's watchdog a run gets
 * (rt_run_defaults): the config's own value, else the context's settings
 * (sp_settings.kernel_timeout_ms / orch_timeout_ms, given at simpler_init),
 * else 30 s / 300 s. A huge config value is clamped, so start + timeout
 * cannot overflow; a setting out of range is refused when the context is
 * attached (tests/module/test_pipeline.c). The environment is no longer
 * read here: the worker fills the settings from it once
 * (sp_settings_from_env). And through the raw module ABI, with no worker in
 * between, a context's settings stop a kernel that never returns and an
 * orchestration that never returns. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/host/fault_report.h"
#include "runtime/runtime.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/settings.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "worker/module_loader.h"

static const uint64_t ms = 1000000ull;

static rt_prepare defaults(uint64_t config_timeout_us, const sp_settings *s)
{
    rt_prepare p;
    memset(&p, 0, sizeof p);
    p.config.timeout_us = config_timeout_us;
    rt_run_defaults(&p, s);
    return p;
}

Test(kernel_timeout, the_config_then_the_settings_then_the_default)
{
    sp_settings none = {0}, twenty = {.kernel_timeout_ms = 20},
                week = {.kernel_timeout_ms = SP_MAX_KERNEL_TIMEOUT_MS};
    cr_assert_eq(defaults(0, &twenty).kernel_timeout_ns, 20 * ms);
    cr_assert_eq(defaults(0, &week).kernel_timeout_ns, SP_MAX_KERNEL_TIMEOUT_NS);
    cr_assert_eq(defaults(1500, &twenty).kernel_timeout_ns, 1500000ull,
                 "the config wins over the settings");
    cr_assert_eq(defaults(0, &none).kernel_timeout_ns, SP_DEFAULT_KERNEL_TIMEOUT_NS);
    /* The environment is the worker's to read, not the runtime's. */
    cr_assert_eq(setenv("SIMPLER_KERNEL_TIMEOUT_MS", "20", 1), 0);
    cr_assert_eq(defaults(0, &none).kernel_timeout_ns, SP_DEFAULT_KERNEL_TIMEOUT_NS,
                 "the runtime read SIMPLER_KERNEL_TIMEOUT_MS itself");
    unsetenv("SIMPLER_KERNEL_TIMEOUT_MS");
}

Test(kernel_timeout, a_huge_config_value_is_clamped_not_wrapped)
{
    sp_settings none = {0};
    cr_assert_eq(defaults(UINT64_MAX, &none).kernel_timeout_ns, SP_MAX_KERNEL_TIMEOUT_NS);
    cr_assert_eq(defaults(UINT64_MAX / 1000 + 1, &none).kernel_timeout_ns,
                 SP_MAX_KERNEL_TIMEOUT_NS);
    /* A start time of a century from now plus the timeout still fits. */
    uint64_t century = 100ull * 365 * 24 * 3600 * 1000000000ull;
    cr_assert_gt(century + defaults(UINT64_MAX, &none).kernel_timeout_ns, century);
}

Test(kernel_timeout, the_orchestration_watchdog_and_the_check_come_from_the_settings_too)
{
    sp_settings s = {.orch_timeout_ms = 100, .check = 1};
    rt_prepare p;
    memset(&p, 0, sizeof p);
    rt_run_defaults(&p, &s);
    cr_assert_eq(p.orch_timeout_ns, 100 * ms);
    cr_assert(p.check, "settings.check did not turn the checking mode on");
    p.config.orch_timeout_us = 7;
    p.config.flags = SP_CALL_NO_CHECK;
    rt_run_defaults(&p, &s);
    cr_assert_eq(p.orch_timeout_ns, 7000ull, "the config wins over the settings");
    cr_assert(!p.check, "SP_CALL_NO_CHECK wins over settings.check");
    sp_settings none = {0};
    memset(&p, 0, sizeof p);
    rt_run_defaults(&p, &none);
    cr_assert_eq(p.orch_timeout_ns, SP_DEFAULT_ORCH_TIMEOUT_NS);
    cr_assert(!p.check);
}

/* ---- through the raw module ABI ---------------------------------------- */

/* A hung kernel is stopped by a signal TSan holds back (tests/scene/test_faults.c). */
#ifdef SP_TEST_UNDER_TSAN
#define HANG_TEST_DISABLED true
#else
#define HANG_TEST_DISABLED false
#endif

enum { F_MARK = 0, F_HANG = 4, LOOP_ORCHESTRATION = 10 };

static const char *const modules[] = {SP_MODULE_DIR "/libsimpler_hbg_sim.so",
                                      SP_MODULE_DIR "/libsimpler_tmr_sim.so"};

/* Attach a context of `module` with `settings`, register the fault
 * callable, run it once in `mode` with a zero config, and return the wait's
 * status; the run is finalized. The wait's own bound (20 s, below the
 * default 30 s timeout) turns a setting that did not reach the run into
 * SP_ETIMEOUT rather than a pass. */
static int run_raw(const char *module, const sp_settings *settings, uint64_t mode, char *msg,
                   size_t msg_len)
{
    wk_module_api m;
    char err[1024] = "";
    cr_assert_eq(wk_module_open(module, &m, err, sizeof err), SP_OK, "%s", err);
    m.simpler_bind_logging(4, NULL, NULL); /* the failure is expected */
    void *ctx;
    cr_assert_eq(m.simpler_create_device_context(&ctx), SP_OK);
    cr_assert_eq(m.simpler_init(ctx, 0, NULL, settings), SP_OK, "%s", m.simpler_last_error(ctx));
    const char *k = SP_TEST_KERNEL_DIR "/fault_kernels.so";
    sp_callable_kernel_spec ks[2] = {
        {.func_id = F_MARK, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_mark"},
        {.func_id = F_HANG, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_hang"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/fault_orch.so",
                             .orch_entry = "fault_orch",
                             .kernels = ks,
                             .kernel_count = 2};
    void *blob;
    size_t size;
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(m.simpler_register_callable(ctx, 0, blob, size), SP_OK, "%s",
                 m.simpler_last_error(ctx));
    free(blob);
    size_t bytes, align;
    cr_assert_eq(m.simpler_run_storage_size(&bytes, &align), SP_OK);
    void *run = aligned_alloc(align, (bytes + align - 1) / align * align);
    memset(run, 0, bytes);
    static uint64_t y[4];
    memset(y, 0, sizeof y);
    sp_args args;
    memset(&args, 0, sizeof args);
    int64_t n = 4;
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &n);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalars[0] = mode;
    args.scalar_count = 1;
    sp_run_descriptor d = {.run_id = 1, .generation = 1};
    int rc = m.simpler_prepare_run(ctx, run, 0, &args, NULL, &d);
    if (rc == SP_OK && (rc = m.simpler_launch_run(ctx, run)) == SP_OK)
        rc = m.simpler_wait_run(ctx, run, 20000 * ms);
    snprintf(msg, msg_len, "%s", m.simpler_last_error(ctx));
    if (rc != SP_ETIMEOUT) { /* SP_ETIMEOUT: still running; the test fails anyway */
        m.simpler_finalize_run(ctx, run);
        m.simpler_destroy_device_context(ctx);
        free(run);
        wk_module_close(&m);
    }
    return rc;
}

ParameterizedTestParameters(kernel_timeout, the_context_settings_stop_a_hung_kernel)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, kernel_timeout, the_context_settings_stop_a_hung_kernel, .timeout = 120,
                  .disabled = HANG_TEST_DISABLED)
{
    sp_settings s = {.kernel_timeout_ms = 50};
    char msg[1024];
    int rc = run_raw(modules[*mod], &s, F_HANG, msg, sizeof msg);
    cr_assert_eq(rc, SP_EKERNEL_TIMEOUT, "got %s: %s", sp_status_name(rc), msg);
    cr_assert(strstr(msg, "was stopped"), "%s", msg);
}

ParameterizedTestParameters(kernel_timeout, the_context_settings_stop_a_looping_orchestration)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, kernel_timeout, the_context_settings_stop_a_looping_orchestration,
                  .timeout = 120, .disabled = HANG_TEST_DISABLED)
{
    sp_settings s = {.orch_timeout_ms = 100};
    char msg[1024];
    int rc = run_raw(modules[*mod], &s, LOOP_ORCHESTRATION, msg, sizeof msg);
    cr_assert_eq(rc, SP_EORCH_CRASH, "got %s: %s", sp_status_name(rc), msg);
    cr_assert(strstr(msg, "timed out"), "%s", msg);
}
