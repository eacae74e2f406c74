/* sp_worker_wait_for: a wait with a deadline gives up with SP_ETIMEOUT and
 * leaves the run in flight (its handle still valid); a later wait gets the
 * run's own status. Both runtimes, on a kernel that hangs until the run's
 * kernel timeout stops it. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

/* The hang is stopped by the guard's interrupt, which TSan holds back from
 * a kernel spinning in uninstrumented code (see tests/scene/test_faults.c). */
#ifdef SP_TEST_UNDER_TSAN
#define HANG_TEST_DISABLED true
#else
#define HANG_TEST_DISABLED false
#endif

enum { F_HANG = 4 };

static uint64_t y[4];
static sp_args args;

static sp_worker *open_on(int runtime)
{
    const char *module =
        runtime ? SP_MODULE_DIR "/libsimpler_tmr_sim.so" : SP_MODULE_DIR "/libsimpler_hbg_sim.so";
    char err[1024] = "";
    sp_worker *w = NULL;
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    const char *k = SP_TEST_KERNEL_DIR "/fault_kernels.so";
    sp_callable_kernel_spec ks[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_mark"},
        {.func_id = F_HANG, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_hang"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/fault_orch.so",
                             .orch_entry = "fault_orch",
                             .kernels = ks,
                             .kernel_count = 2};
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
    return w;
}

static void set_args(uint64_t mode)
{
    memset(y, 0, sizeof y);
    memset(&args, 0, sizeof args);
    int64_t n = 4;
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &n);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalars[0] = mode;
    args.scalar_count = 1;
}

ParameterizedTestParameters(wait_for, gives_up_and_leaves_the_run_in_flight)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

ParameterizedTest(int *rt, wait_for, gives_up_and_leaves_the_run_in_flight, .timeout = 120,
                  .disabled = HANG_TEST_DISABLED)
{
    sp_worker *w = open_on(*rt);
    set_args(F_HANG);
    /* The kernel cannot end before its 3 s timeout stops it. */
    sp_call_config cfg = {.timeout_us = 3000000};
    sp_run_handle h;
    cr_assert_eq(sp_worker_submit(w, 0, &args, &cfg, &h), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(sp_worker_wait_for(w, &h, NULL, 0), SP_ETIMEOUT);
    cr_assert_eq(sp_worker_wait_for(w, &h, NULL, 10), SP_ETIMEOUT);
    cr_assert(strstr(sp_worker_last_error(w), "still in flight") != NULL, "%s",
              sp_worker_last_error(w));
    cr_assert_eq(sp_worker_poll(w, &h), SP_RUN_NOT_READY, "the handle is still valid");
    int rc = sp_worker_wait_for(w, &h, NULL, 600000);
    cr_assert_eq(rc, SP_EKERNEL_TIMEOUT, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    cr_assert_eq(sp_worker_wait_for(w, &h, NULL, 10), SP_ESTALE, "waited for: stale");
    set_args(0);
    cr_assert_eq(sp_worker_submit(w, 0, &args, NULL, &h), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(sp_worker_wait_for(w, &h, NULL, 600000), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(y[0], 11);
    cr_assert_eq(y[1], 22);
    sp_worker_close(w);
}
