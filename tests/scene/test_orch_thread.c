/* sp_orch is single-threaded (issue 12, item 11): an orchestration that
 * calls it from a second thread fails its run with SP_EORCH_THREAD, on both
 * runtimes, instead of building a garbled graph (hbg) or hanging (tmr); the
 * next run on the same worker passes. */
#include <criterion/criterion.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#include "orch_stress_callable.h"

#define Y_LEN 4096

static uint64_t y[Y_LEN];

static int run(sp_worker *w, uint64_t mode, uint64_t n, uint64_t arg)
{
    int64_t len = Y_LEN;
    sp_args args;
    memset(&args, 0, sizeof args);
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &len);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalars[0] = mode;
    args.scalars[1] = n;
    args.scalars[2] = arg;
    args.scalar_count = 3;
    sp_call_config cfg = {0};
    sp_run_stats st;
    return sp_worker_run(w, 0, &args, &cfg, &st);
}

static void second_thread_is_refused(const char *module)
{
    char err[1024] = "";
    sp_worker *w = NULL;
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(orch_stress_register(w, 0, err, sizeof err), SP_OK, "%s", err);
    for (int k = 0; k < 20; k++) {
        int rc = run(w, STRESS_THREADS, 50, 0);
        cr_assert_eq(rc, SP_EORCH_THREAD, "run %d: got %s: %s", k, sp_status_name(rc),
                     sp_worker_last_error(w));
        cr_assert(strstr(sp_worker_last_error(w), "single-threaded") != NULL, "%s",
                  sp_worker_last_error(w));
    }
    /* The worker is usable afterwards: 8 SPMD tasks of 32 blocks all run. */
    memset(y, 0, sizeof y);
    int rc = run(w, STRESS_SPMD, 8, 32);
    cr_assert_eq(rc, SP_OK, "follow-up run: %s", sp_worker_last_error(w));
    for (int i = 0; i < 8 * 32; i++)
        cr_assert_eq(y[i], (uint64_t)(i / 32 + 1), "y[%d] = %llu", i, (unsigned long long)y[i]);
    sp_worker_close(w);
}

TestSuite(orch_thread, .timeout = 120);

Test(orch_thread, hbg_refuses_a_second_thread)
{
    second_thread_is_refused(SP_MODULE_DIR "/libsimpler_hbg_sim.so");
}

Test(orch_thread, tmr_refuses_a_second_thread)
{
    second_thread_is_refused(SP_MODULE_DIR "/libsimpler_tmr_sim.so");
}
