/* A host program's scheduler threads (issue 14): a device's AICPU threads
 * are fixed when it is first opened, from the worker's prewarm (or the
 * default geometry, which divides the machine's CPUs among open devices).
 * So a run asking for more schedulers than the device has is refused with
 * SP_EINVAL and a message saying the documented way, and a worker opened
 * with prewarm.sched_threads = N runs with N schedulers; on both runtimes. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "example.h"
#include "simpler/status.h"
#include "simpler/worker.h"

static sp_worker *open_on(const char *rt, int device_id, uint32_t sched_threads)
{
    sp_worker_options o = {.device_id = device_id,
                           .module_dir = SP_MODULE_DIR,
                           .prewarm = {.sched_threads = sched_threads}};
    sp_worker *w = NULL;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open_runtime(rt, NULL, &o, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(
        sp_worker_register_callable_file(w, 0, SP_BUILD_DIR "/examples/vector_example.spc"), SP_OK,
        "%s", sp_worker_last_error(w));
    return w;
}

static void setup_vector(ex_instance *inst)
{
    const ex_example *ex = ex_find("vector_example");
    cr_assert_not_null(ex);
    const char *small[] = {"n=4096", NULL};
    char err[EX_ERR_LEN] = "";
    cr_assert_eq(ex_instance_init(inst, ex, "default", small, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ex->setup(inst, err, sizeof err), 0, "%s", err);
}

static uint32_t schedulers_of(sp_worker *w)
{
    sp_device_info info;
    cr_assert_eq(sp_worker_device_info(w, &info), SP_OK);
    /* One AICPU thread is the orchestrator's (tmr): both runtimes leave it. */
    return info.geometry.aicpu_threads > 1 ? info.geometry.aicpu_threads - 1 : 1;
}

ParameterizedTestParameters(host_geometry, more_schedulers_need_prewarm)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *which, host_geometry, more_schedulers_need_prewarm, .timeout = 120)
{
    const char *const runtimes[] = {"hbg", "tmr"};
    const char *const *rt = &runtimes[*which];
    ex_instance inst;
    setup_vector(&inst);
    /* The default geometry: one more scheduler than it has is refused, by
     * a message that says how to get it. */
    sp_worker *w = open_on(*rt, 7, 0);
    uint32_t want = schedulers_of(w) + 1;
    sp_call_config cfg = {.sched_threads = want};
    int rc = sp_worker_run(w, 0, &inst.args, &cfg, NULL);
    const char *msg = sp_worker_last_error(w);
    cr_assert_eq(rc, SP_EINVAL, "%s: %s", sp_status_name(rc), msg);
    char hint[64];
    snprintf(hint, sizeof hint, "prewarm.sched_threads = %u", want);
    cr_assert(strstr(msg, hint) != NULL, "the message lacks '%s': %s", hint, msg);
    sp_worker_close(w);
    /* Opened with prewarm.sched_threads = want, a fresh device has them. */
    w = open_on(*rt, 8, want);
    cr_assert_eq(schedulers_of(w), want);
    sp_run_stats st;
    rc = sp_worker_run(w, 0, &inst.args, &cfg, &st);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
    double max_err = 0;
    char err[EX_ERR_LEN] = "";
    cr_assert_eq(inst.example->check(&inst, &max_err, err, sizeof err), 0, "%s", err);
    sp_worker_close(w);
    ex_instance_free(&inst);
}
