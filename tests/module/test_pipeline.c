/* The run pipeline at the module ABI: two pipeline slots with their own
 * retained buffers and arena banks, reused run after run (checked through
 * simpler_probe_storage); duplicate run or dispatch ids refused; launch
 * acceptance written only for a launch that really started (the sim's
 * fault injection fails a launch before start, and half-way); a half-started
 * launch leaves the device unusable until the context is re-created. Both
 * runtime modules. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "platform/sim/sim_testing.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/settings.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "worker/module_loader.h"

#include "orch_tmr_callable.h"

#define Y_LEN 64

typedef struct rig {
    wk_module_api m;
    void *ctx;
    void *run[2];
    uint64_t y[2][Y_LEN];
    sp_args args[2];
} rig;

static rig R;

static void rig_open_with(const char *module, const sp_settings *settings)
{
    char err[1024] = "";
    cr_assert_eq(wk_module_open(module, &R.m, err, sizeof err), SP_OK, "%s", err);
    R.m.simpler_bind_logging(4, NULL, NULL); /* failures below are expected */
    cr_assert_eq(R.m.simpler_create_device_context(&R.ctx), SP_OK);
    cr_assert_eq(R.m.simpler_init(R.ctx, 0, NULL, settings), SP_OK, "%s",
                 R.m.simpler_last_error(R.ctx));
    void *blob;
    size_t size;
    cr_assert_eq(orch_tmr_blob(&blob, &size, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(R.m.simpler_register_callable(R.ctx, 0, blob, size), SP_OK);
    free(blob);
    size_t bytes, align;
    R.m.simpler_run_storage_size(&bytes, &align);
    for (int s = 0; s < 2; s++) {
        R.run[s] = aligned_alloc(align, (bytes + align - 1) / align * align);
        memset(R.run[s], 0, bytes);
        int64_t len = Y_LEN;
        memset(&R.args[s], 0, sizeof R.args[s]);
        sp_tensor_init(&R.args[s].tensors[0], (uint64_t)(uintptr_t)R.y[s], SP_DTYPE_U64, 1, &len);
        R.args[s].dirs[0] = SP_INOUT;
        R.args[s].tensor_count = 1;
        R.args[s].scalars[0] = 0; /* MODE_INDEPENDENT */
        R.args[s].scalars[1] = Y_LEN;
        R.args[s].scalar_count = 2;
    }
}

static void rig_open(const char *module)
{
    rig_open_with(module, NULL);
}

static void rig_close(void)
{
    if (R.ctx)
        R.m.simpler_destroy_device_context(R.ctx);
    wk_module_close(&R.m);
    free(R.run[0]);
    free(R.run[1]);
    memset(&R, 0, sizeof R);
}

static sp_run_descriptor desc(uint32_t slot, uint64_t id, _Atomic uint64_t *acc)
{
    return (sp_run_descriptor){.pipeline_slot = slot,
                               .arena_bank = slot,
                               .run_id = id,
                               .generation = 1,
                               .dispatch_id = id,
                               .run_epoch = id,
                               .accepted_state = acc,
                               .accepted_value = id * 10};
}

static void assert_marked(int s)
{
    for (uint64_t i = 0; i < Y_LEN; i++)
        cr_assert_eq(R.y[s][i], i + 1, "slot %d: y[%llu] = %llu", s, (unsigned long long)i,
                     (unsigned long long)R.y[s][i]);
}

/* Prepare both slots, then run them one after the other. */
static void run_pair(uint64_t id)
{
    for (int s = 0; s < 2; s++) {
        memset(R.y[s], 0, sizeof R.y[s]);
        sp_run_descriptor d = desc((uint32_t)s, id + (uint64_t)s, NULL);
        cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[s], 0, &R.args[s], NULL, &d), SP_OK, "%s",
                     R.m.simpler_last_error(R.ctx));
    }
    for (int s = 0; s < 2; s++) {
        cr_assert_eq(R.m.simpler_launch_run(R.ctx, R.run[s]), SP_OK, "%s",
                     R.m.simpler_last_error(R.ctx));
        cr_assert_eq(R.m.simpler_wait_run(R.ctx, R.run[s], 0), SP_OK, "%s",
                     R.m.simpler_last_error(R.ctx));
        cr_assert_eq(R.m.simpler_finalize_run(R.ctx, R.run[s]), SP_OK);
        assert_marked(s);
    }
}

static const char *const modules[] = {SP_MODULE_DIR "/libsimpler_hbg_sim.so",
                                      SP_MODULE_DIR "/libsimpler_tmr_sim.so"};

ParameterizedTestParameters(pipeline, slots_and_banks_are_reused_not_reallocated)
{
    /* Static: Criterion reads the parameters after this function returns. */
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, pipeline, slots_and_banks_are_reused_not_reallocated, .fini = rig_close,
                  .timeout = 120)
{
    rig_open(modules[*mod]);
    cr_assert_eq(R.m.simpler_get_pipeline_contract()->pipeline_depth, 2);
    run_pair(1);
    sp_storage_probe first[2];
    for (uint32_t s = 0; s < 2; s++) {
        cr_assert_eq(R.m.simpler_probe_storage(R.ctx, s, s, &first[s]), SP_OK);
        cr_assert_neq(first[s].retained, 0, "slot %u staged nothing", s);
        cr_assert_neq(first[s].heap, 0, "bank %u has no heap", s);
    }
    cr_assert_neq(first[0].retained, first[1].retained, "two slots share a retained buffer");
    cr_assert_neq(first[0].heap, first[1].heap, "two banks share a heap");
    cr_assert_neq(first[0].shm + first[0].image, first[1].shm + first[1].image);
    for (uint64_t i = 1; i < 50; i++)
        run_pair(100 * i);
    for (uint32_t s = 0; s < 2; s++) {
        sp_storage_probe now;
        cr_assert_eq(R.m.simpler_probe_storage(R.ctx, s, s, &now), SP_OK);
        cr_assert_eq(memcmp(&now, &first[s], sizeof now), 0,
                     "slot/bank %u storage moved over 100 runs: reallocated, not reused", s);
    }
    sp_storage_probe p;
    cr_assert_eq(R.m.simpler_probe_storage(R.ctx, 2, 0, &p), SP_ESLOT);
}

Test(pipeline, duplicate_ids_in_flight_are_refused, .fini = rig_close)
{
    rig_open(modules[0]);
    sp_run_descriptor a = desc(0, 7, NULL), b = desc(1, 7, NULL);
    cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[0], 0, &R.args[0], NULL, &a), SP_OK);
    cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[1], 0, &R.args[1], NULL, &b), SP_EDUPLICATE);
    b.run_id = 8; /* same dispatch id still */
    cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[1], 0, &R.args[1], NULL, &b), SP_EDUPLICATE);
    b.dispatch_id = 8;
    cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[1], 0, &R.args[1], NULL, &b), SP_OK);
    cr_assert_eq(R.m.simpler_finalize_run(R.ctx, R.run[0]), SP_OK);
    cr_assert_eq(R.m.simpler_finalize_run(R.ctx, R.run[1]), SP_OK);
}

/* Launch faults are injected on the device itself (a test-only interface):
 * the test opens the device id its module context uses (one device table per process,
 * so the same chip) and sets the fault there; it stays until set back. */
static void inject_launch_fault(int device_id, int mode)
{
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(device_id, NULL, &dev), SP_OK);
    cr_assert_eq(sp_sim_set_launch_fault(dev, mode), SP_OK);
    sp_device_close(dev);
}

Test(pipeline, a_launch_refused_before_start_is_never_accepted, .fini = rig_close)
{
    rig_open(modules[0]);
    _Atomic uint64_t acc = 0;
    sp_run_descriptor d = desc(0, 5, &acc);
    cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[0], 0, &R.args[0], NULL, &d), SP_OK);
    inject_launch_fault(0, SP_SIM_LAUNCH_FAULT_BEFORE);
    cr_assert_eq(R.m.simpler_launch_run(R.ctx, R.run[0]), SP_ELAUNCH);
    cr_assert_eq(atomic_load(&acc), 0, "acceptance written for a launch that never started");
    inject_launch_fault(0, SP_SIM_LAUNCH_FAULT_NONE);
    /* Still prepared: the same run launches now, and is accepted once. */
    cr_assert_eq(R.m.simpler_launch_run(R.ctx, R.run[0]), SP_OK);
    cr_assert_eq(atomic_load(&acc), 50);
    cr_assert_eq(R.m.simpler_wait_run(R.ctx, R.run[0], 0), SP_OK);
    cr_assert_eq(R.m.simpler_finalize_run(R.ctx, R.run[0]), SP_OK);
    assert_marked(0);
}

Test(pipeline, a_half_started_launch_leaves_the_device_unusable_until_recreated, .fini = rig_close)
{
    rig_open(modules[1]);
    _Atomic uint64_t acc = 0;
    sp_run_descriptor d = desc(0, 9, &acc);
    cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[0], 0, &R.args[0], NULL, &d), SP_OK);
    inject_launch_fault(0, SP_SIM_LAUNCH_FAULT_HALFWAY);
    cr_assert_eq(R.m.simpler_launch_run(R.ctx, R.run[0]), SP_ELAUNCH_PARTIAL);
    inject_launch_fault(0, SP_SIM_LAUNCH_FAULT_NONE);
    cr_assert_eq(atomic_load(&acc), 0, "a half-started launch is not accepted");
    cr_assert_eq(R.m.simpler_finalize_run(R.ctx, R.run[0]), SP_OK, "%s",
                 R.m.simpler_last_error(R.ctx));
    for (int i = 0; i < 3; i++) {
        sp_run_descriptor e = desc(0, 20 + (uint64_t)i, NULL);
        cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[0], 0, &R.args[0], NULL, &e),
                     SP_EUNUSABLE);
    }
    /* Tear the context down and create it again: runs work. */
    cr_assert_eq(R.m.simpler_destroy_device_context(R.ctx), SP_OK);
    R.ctx = NULL;
    cr_assert_eq(R.m.simpler_create_device_context(&R.ctx), SP_OK);
    cr_assert_eq(R.m.simpler_init(R.ctx, 0, NULL, NULL), SP_OK);
    char err[256];
    void *blob;
    size_t size;
    cr_assert_eq(orch_tmr_blob(&blob, &size, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(R.m.simpler_register_callable(R.ctx, 0, blob, size), SP_OK);
    free(blob);
    run_pair(40);
}

ParameterizedTestParameters(pipeline, the_contract_is_fixed_and_settings_lower_the_depth)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

/* The contract is the same whatever the environment says (it was re-read
 * from SIMPLER_PIPELINE_DEPTH at every call); a context attached with
 * settings.pipeline_depth 1 holds one run at a time, through the raw ABI
 * as through the worker, and one without takes two. */
ParameterizedTest(int *mod, pipeline, the_contract_is_fixed_and_settings_lower_the_depth,
                  .fini = rig_close, .timeout = 60)
{
    setenv("SIMPLER_PIPELINE_DEPTH", "1", 1);
    sp_settings one = {.pipeline_depth = 1};
    rig_open_with(modules[*mod], &one);
    const sp_pipeline_contract *c = R.m.simpler_get_pipeline_contract();
    cr_assert_eq(c->pipeline_depth, 2, "the contract followed the environment");
    unsetenv("SIMPLER_PIPELINE_DEPTH");
    cr_assert_eq(R.m.simpler_get_pipeline_contract(), c, "the contract is not one fixed value");
    sp_run_descriptor a = desc(0, 1, NULL), b = desc(1, 2, NULL);
    cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[0], 0, &R.args[0], NULL, &a), SP_OK, "%s",
                 R.m.simpler_last_error(R.ctx));
    cr_assert_eq(R.m.simpler_prepare_run(R.ctx, R.run[1], 0, &R.args[1], NULL, &b), SP_ESLOT,
                 "a second run was prepared on a context of depth 1");
    cr_assert(strstr(R.m.simpler_last_error(R.ctx), "pipeline depth 1"), "%s",
              R.m.simpler_last_error(R.ctx));
    cr_assert_eq(R.m.simpler_launch_run(R.ctx, R.run[0]), SP_OK);
    cr_assert_eq(R.m.simpler_wait_run(R.ctx, R.run[0], 0), SP_OK);
    cr_assert_eq(R.m.simpler_finalize_run(R.ctx, R.run[0]), SP_OK);
    assert_marked(0);
    /* The same module, the context created again without settings: depth 2. */
    cr_assert_eq(R.m.simpler_destroy_device_context(R.ctx), SP_OK);
    R.ctx = NULL;
    cr_assert_eq(R.m.simpler_create_device_context(&R.ctx), SP_OK);
    cr_assert_eq(R.m.simpler_init(R.ctx, 0, NULL, NULL), SP_OK);
    char err[256];
    void *blob;
    size_t size;
    cr_assert_eq(orch_tmr_blob(&blob, &size, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(R.m.simpler_register_callable(R.ctx, 0, blob, size), SP_OK);
    free(blob);
    run_pair(60);
}

ParameterizedTestParameters(pipeline, out_of_range_settings_are_refused_at_init)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

/* A setting the runtime cannot honour is refused by name when the context
 * is attached, not found out at a run. */
ParameterizedTest(int *mod, pipeline, out_of_range_settings_are_refused_at_init, .fini = rig_close,
                  .timeout = 60)
{
    char err[1024] = "";
    cr_assert_eq(wk_module_open(modules[*mod], &R.m, err, sizeof err), SP_OK, "%s", err);
    R.m.simpler_bind_logging(4, NULL, NULL);
    cr_assert_eq(R.m.simpler_create_device_context(&R.ctx), SP_OK);
    static const struct {
        sp_settings s;
        const char *field;
    } bad[] = {
        {{.pipeline_depth = 3}, "pipeline_depth"},
        {{.kernel_timeout_ms = 604800001}, "kernel_timeout_ms"},
        {{.kernel_timeout_ms = SP_SETTING_ZERO}, "kernel_timeout_ms"},
        {{.orch_timeout_ms = (1ull << 32) + 1}, "orch_timeout_ms"},
        {{.check = 2}, "check"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(R.m.simpler_init(R.ctx, 0, NULL, &bad[i].s), SP_EINVAL, "%s", bad[i].field);
        cr_assert(strstr(R.m.simpler_last_error(R.ctx), bad[i].field), "%s",
                  R.m.simpler_last_error(R.ctx));
    }
    /* A prewarm whose scheduler count + the orchestrator's thread wraps. */
    sp_call_config wraps = {.sched_threads = UINT32_MAX};
    cr_assert_eq(R.m.simpler_init(R.ctx, 0, &wraps, NULL), SP_EGEOMETRY);
    sp_settings good = {.pipeline_depth = 2, .kernel_timeout_ms = 604800000, .check = 1};
    cr_assert_eq(R.m.simpler_init(R.ctx, 0, NULL, &good), SP_OK, "%s",
                 R.m.simpler_last_error(R.ctx));
}
