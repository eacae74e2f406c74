/* Settings are data, read once (issue 13): sp_settings_from_env is the one
 * reader of the SIMPLER_* variables and fills only what the caller left 0;
 * sp_worker_open reads it once, sets the log level from it, caps its lane
 * by pipeline_depth and hands the settings to the module, which makes the
 * checking mode and the timeouts each run's defaults; two workers given
 * different settings each keep their own. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/settings.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

static const char *const all_vars[] = {
    "SIMPLER_LOG",
    "SIMPLER_CHECK",
    "SIMPLER_KERNEL_TIMEOUT_MS",
    "SIMPLER_ORCH_TIMEOUT_MS",
    "SIMPLER_PIPELINE_DEPTH",
    "SIMPLER_SIM_MEMORY_MB",
    "SIMPLER_SIM_NO_HOST_MAP",
    "SIMPLER_SIM_CPUS",
    "SIMPLER_SIM_CORE_QUEUE",
    "SIMPLER_SIM_SPIN_NS",
    "SIMPLER_SIM_YIELD_NS",
    "SIMPLER_SIM_PROTECT",
    "SIMPLER_GRAPH_CACHE",
    "SIMPLER_GRAPH_CACHE_MB",
};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++)
        unsetenv(all_vars[i]);
}

/* Warnings the reader logs, captured. */
static int warnings;
static char last_warning[1024];

static void capture(int level, const char *line, void *user)
{
    (void)user;
    if (level == SP_LOG_WARN) {
        warnings++;
        snprintf(last_warning, sizeof last_warning, "%s", line);
    }
}

static sp_settings read_env(void)
{
    sp_settings s = {0};
    sp_settings_from_env(&s);
    return s;
}

Test(settings, every_variable_fills_its_field, .init = clear_env)
{
    setenv("SIMPLER_LOG", "debug", 1);
    setenv("SIMPLER_CHECK", "1", 1);
    setenv("SIMPLER_KERNEL_TIMEOUT_MS", "604800000", 1);
    setenv("SIMPLER_ORCH_TIMEOUT_MS", "250", 1);
    setenv("SIMPLER_PIPELINE_DEPTH", "1", 1);
    setenv("SIMPLER_SIM_MEMORY_MB", "32", 1);
    setenv("SIMPLER_SIM_NO_HOST_MAP", "1", 1);
    setenv("SIMPLER_SIM_CPUS", "0,2-3", 1);
    setenv("SIMPLER_SIM_CORE_QUEUE", "8", 1);
    setenv("SIMPLER_SIM_SPIN_NS", "1500", 1);
    setenv("SIMPLER_SIM_YIELD_NS", "1000000000", 1);
    setenv("SIMPLER_SIM_PROTECT", "1", 1);
    setenv("SIMPLER_GRAPH_CACHE", "3", 1);
    setenv("SIMPLER_GRAPH_CACHE_MB", "5", 1);
    sp_settings s = read_env();
    cr_assert_eq(s.log_level, 1 + SP_LOG_DEBUG);
    cr_assert_eq(s.check, 1);
    cr_assert_eq(s.kernel_timeout_ms, 604800000ull);
    cr_assert_eq(s.orch_timeout_ms, 250);
    cr_assert_eq(s.pipeline_depth, 1);
    cr_assert_eq(s.memory_bytes, 32ull << 20);
    cr_assert_eq(s.sim.no_host_map, 1);
    cr_assert_eq(s.sim.cpus, 0xdull);
    cr_assert_eq(s.sim.core_queue, 8);
    cr_assert_eq(s.sim.spin_ns, 1500);
    cr_assert_eq(s.sim.yield_ns, 1000000000ull);
    cr_assert_eq(s.sim.protect, 1);
    cr_assert_eq(s.graph_cache_count, 3);
    cr_assert_eq(s.graph_cache_bytes, 5ull << 20);
}

Test(settings, nothing_set_leaves_every_field_zero, .init = clear_env)
{
    sp_settings s = read_env(), zero = {0};
    cr_assert_eq(memcmp(&s, &zero, sizeof s), 0);
}

Test(settings, a_zero_that_means_never_becomes_sp_setting_zero, .init = clear_env)
{
    setenv("SIMPLER_SIM_SPIN_NS", "0", 1);
    setenv("SIMPLER_SIM_YIELD_NS", "0", 1);
    setenv("SIMPLER_CHECK", "0", 1);
    sp_settings s = read_env();
    cr_assert_eq(s.sim.spin_ns, SP_SETTING_ZERO);
    cr_assert_eq(s.sim.yield_ns, SP_SETTING_ZERO);
    cr_assert_eq(s.check, 0, "SIMPLER_CHECK=0 is the default: off");
}

Test(settings, the_callers_values_win_over_the_environment, .init = clear_env)
{
    setenv("SIMPLER_SIM_MEMORY_MB", "32", 1);
    setenv("SIMPLER_KERNEL_TIMEOUT_MS", "20", 1);
    setenv("SIMPLER_SIM_CORE_QUEUE", "2", 1);
    sp_settings s = {.memory_bytes = 64ull << 20, .sim.core_queue = 1};
    sp_settings_from_env(&s);
    cr_assert_eq(s.memory_bytes, 64ull << 20);
    cr_assert_eq(s.sim.core_queue, 1);
    cr_assert_eq(s.kernel_timeout_ms, 20, "a field the caller left 0 is still filled");
}

/* Malformed or out of range: a warning naming the variable, the field left 0. */
Test(settings, a_malformed_value_is_ignored_with_a_warning_naming_it, .init = clear_env)
{
    static const struct {
        const char *name, *value;
    } bad[] = {
        {"SIMPLER_LOG", "chatty"},
        {"SIMPLER_CHECK", "yes"},
        {"SIMPLER_KERNEL_TIMEOUT_MS", "-1"},
        {"SIMPLER_KERNEL_TIMEOUT_MS", "0"},
        {"SIMPLER_KERNEL_TIMEOUT_MS", "604800001"},
        {"SIMPLER_KERNEL_TIMEOUT_MS", "18446744073709551616"},
        {"SIMPLER_ORCH_TIMEOUT_MS", "10ms"},
        {"SIMPLER_PIPELINE_DEPTH", "3"},
        {"SIMPLER_SIM_MEMORY_MB", "0"},
        {"SIMPLER_SIM_MEMORY_MB", "1048577"},
        {"SIMPLER_SIM_NO_HOST_MAP", "2"},
        {"SIMPLER_SIM_CPUS", "64"},
        {"SIMPLER_SIM_CPUS", "3-1"},
        {"SIMPLER_SIM_CPUS", "a"},
        {"SIMPLER_SIM_CORE_QUEUE", "65"},
        {"SIMPLER_SIM_SPIN_NS", " 5"},
        {"SIMPLER_SIM_YIELD_NS", "1000000001"},
    };
    sp__log_set_sink(capture, NULL);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear_env();
        setenv(bad[i].name, bad[i].value, 1);
        warnings = 0;
        sp_settings s = read_env(), zero = {0};
        cr_assert_eq(memcmp(&s, &zero, sizeof s), 0, "%s='%s' filled a field", bad[i].name,
                     bad[i].value);
        cr_assert_eq(warnings, 1, "%s='%s': %d warnings", bad[i].name, bad[i].value, warnings);
        cr_assert(strstr(last_warning, bad[i].name) != NULL, "warning lacks the name: %s",
                  last_warning);
    }
    /* SIMPLER_LOG=off silences the reader's own warnings too. */
    clear_env();
    setenv("SIMPLER_LOG", "off", 1);
    setenv("SIMPLER_CHECK", "yes", 1);
    warnings = 0;
    sp_settings s = read_env();
    cr_assert_eq(s.log_level, 1 + SP_LOG_OFF);
    cr_assert_eq(warnings, 0);
    sp__log_set_sink(NULL, NULL);
}

/* The log threshold comes from the settings the worker reads at open
 * (formerly tests/common/test_status_log.c: log.c no longer reads it). */
Test(settings, the_log_level_comes_from_the_environment_at_open, .init = clear_env)
{
    setenv("SIMPLER_LOG", "debug", 1);
    cr_assert_eq(sp__log_level(), SP_LOG_WARN, "nothing reads the environment before open");
    sp_worker *w = NULL;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(HBG_MODULE, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp__log_level(), SP_LOG_DEBUG);
    sp_worker_close(w);
}

Test(settings, an_unknown_environment_level_defaults_to_warn, .init = clear_env)
{
    setenv("SIMPLER_LOG", "chatty", 1);
    sp_worker *w = NULL;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(HBG_MODULE, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp__log_level(), SP_LOG_WARN);
    sp_worker_close(w);
}

Test(settings, a_field_set_outside_its_range_is_refused_by_name, .init = clear_env)
{
    static const struct {
        sp_settings s;
        const char *field;
    } bad[] = {
        {{.log_level = 6}, "log_level"},
        {{.check = 2}, "check"},
        {{.kernel_timeout_ms = UINT64_MAX}, "kernel_timeout_ms"},
        {{.orch_timeout_ms = (1ull << 32) + 1}, "orch_timeout_ms"},
        {{.pipeline_depth = 3}, "pipeline_depth"},
        {{.sim.core_queue = 65}, "sim.core_queue"},
        {{.sim.spin_ns = 2000000000ull}, "sim.spin_ns"},
        {{.graph_cache_count = (1u << 16) + 1}, "graph_cache_count"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sp_worker_options o = {.settings = bad[i].s};
        sp_worker *w = NULL;
        char err[1024] = "";
        cr_assert_eq(sp_worker_open(HBG_MODULE, &o, &w, err, sizeof err), SP_EINVAL, "%s",
                     bad[i].field);
        cr_assert_null(w);
        cr_assert(strstr(err, bad[i].field) != NULL, "'%s' not named: %s", bad[i].field, err);
    }
    /* SP_SETTING_ZERO is in range where 0 is meaningful. */
    sp_worker_options o = {
        .settings.sim = {.spin_ns = SP_SETTING_ZERO, .yield_ns = SP_SETTING_ZERO}};
    sp_worker *w = NULL;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(HBG_MODULE, &o, &w, err, sizeof err), SP_OK, "%s", err);
    sp_worker_close(w);
}

Test(settings, pipeline_depth_caps_the_lane, .init = clear_env)
{
    char err[1024] = "";
    sp_worker *serial = NULL, *pipelined = NULL;
    sp_worker_options one = {.device_id = 1, .settings.pipeline_depth = 1};
    sp_worker_options two = {.device_id = 2};
    cr_assert_eq(sp_worker_open(TMR_MODULE, &one, &serial, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp_worker_open(TMR_MODULE, &two, &pipelined, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp_worker_lane_depth(serial), 1);
    cr_assert_eq(sp_worker_lane_depth(pipelined), 2, "the other worker keeps its own depth");
    sp_worker_close(serial);
    sp_worker_close(pipelined);

    /* From the environment, read at open: a worker opened before keeps 2. */
    cr_assert_eq(sp_worker_open(TMR_MODULE, &two, &pipelined, err, sizeof err), SP_OK, "%s", err);
    setenv("SIMPLER_PIPELINE_DEPTH", "1", 1);
    cr_assert_eq(sp_worker_open(TMR_MODULE, &one, &serial, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp_worker_lane_depth(serial), 1);
    cr_assert_eq(sp_worker_lane_depth(pipelined), 2);
    sp_worker_close(serial);
    sp_worker_close(pipelined);
}

/* ---- the checking mode, a default of every run of the worker ------------ */

static float x[256], y[64], out[64];

static void register_overrun(sp_worker *w)
{
    char err[1024] = "";
    const char *k = SP_TEST_KERNEL_DIR "/fault_overrun.so";
    sp_callable_kernel_spec ks[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "ov_fill"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = k, .entry = "ov_copy"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/overrun_orch.so",
                             .orch_entry = "overrun_orch",
                             .kernels = ks,
                             .kernel_count = 2};
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
}

/* tests/scene/test_overrun.c's mode 1: a kernel writes past an output. */
static int run_past_output(sp_worker *w, uint64_t flags)
{
    for (int i = 0; i < 256; i++)
        x[i] = (float)i;
    for (int i = 0; i < 64; i++)
        y[i] = out[i] = -1.0f;
    sp_args args;
    memset(&args, 0, sizeof args);
    const int64_t xs[2] = {16, 16}, ys = 64, os[2] = {4, 16};
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)x, SP_DTYPE_F32, 2, xs);
    sp_tensor_init(&args.tensors[1], (uint64_t)(uintptr_t)y, SP_DTYPE_F32, 1, &ys);
    sp_tensor_init(&args.tensors[2], (uint64_t)(uintptr_t)out, SP_DTYPE_F32, 2, os);
    args.dirs[0] = SP_INOUT;
    args.dirs[1] = SP_INOUT;
    args.dirs[2] = SP_OUT_EXISTING;
    args.tensor_count = 3;
    args.scalars[0] = 1; /* M_PAST_OUTPUT */
    args.scalar_count = 1;
    sp_call_config cfg = {.flags = flags, .heap_bytes = 1 << 20};
    return sp_worker_run(w, 0, &args, &cfg, NULL);
}

Test(settings, each_worker_keeps_its_own_checking_mode, .init = clear_env, .timeout = 120)
{
    char err[1024] = "";
    sp_worker *checked = NULL, *plain = NULL;
    sp_worker_options on = {.device_id = 1, .settings.check = 1};
    sp_worker_options off = {.device_id = 2};
    cr_assert_eq(sp_worker_open(HBG_MODULE, &on, &checked, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp_worker_open(TMR_MODULE, &off, &plain, err, sizeof err), SP_OK, "%s", err);
    register_overrun(checked);
    register_overrun(plain);
    int rc = run_past_output(checked, 0);
    cr_assert_eq(rc, SP_EKERNEL_OVERRUN, "settings.check: %s: %s", sp_status_name(rc),
                 sp_worker_last_error(checked));
    rc = run_past_output(plain, 0);
    cr_assert_eq(rc, SP_OK, "the other worker has no red zones: %s: %s", sp_status_name(rc),
                 sp_worker_last_error(plain));
    rc = run_past_output(checked, SP_CALL_NO_CHECK);
    cr_assert_eq(rc, SP_OK, "SP_CALL_NO_CHECK wins over settings.check: %s: %s", sp_status_name(rc),
                 sp_worker_last_error(checked));
    sp_worker_close(checked);
    sp_worker_close(plain);
}

/* Two devices opened with different settings each keep their own. */
Test(settings, each_device_keeps_the_memory_size_it_was_opened_with, .init = clear_env)
{
    setenv("SIMPLER_SIM_MEMORY_MB", "48", 1);
    char err[1024] = "";
    sp_worker *small = NULL, *from_env = NULL;
    sp_worker_options a = {.device_id = 4, .settings.memory_bytes = 16ull << 20};
    sp_worker_options b = {.device_id = 5};
    cr_assert_eq(sp_worker_open(HBG_MODULE, &a, &small, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp_worker_open(TMR_MODULE, &b, &from_env, err, sizeof err), SP_OK, "%s", err);
    sp_device_info da, db;
    cr_assert_eq(sp_worker_device_info(small, &da), SP_OK, "%s", sp_worker_last_error(small));
    cr_assert_eq(sp_worker_device_info(from_env, &db), SP_OK, "%s", sp_worker_last_error(from_env));
    cr_assert_eq(da.device_id, 4);
    cr_assert_eq(db.device_id, 5);
    cr_assert_eq(da.memory_bytes, 16ull << 20, "the caller's value wins over the environment");
    cr_assert_eq(db.memory_bytes, 48ull << 20, "the environment fills what was left 0");
    sp_worker_close(small);
    sp_worker_close(from_env);
}
