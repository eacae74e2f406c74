/* Issue 14: a callable that declares an argument signature has every run
 * checked by the worker before anything is staged (sp_worker_run and
 * sp_worker_submit, both runtimes): a mismatching run is SP_EARG_SIGNATURE
 * naming the argument, its tensors are not touched, and the worker runs
 * the next good run. orch_faults (tests/kernels/orch_faults.c) in its good
 * mode writes GOOD_VALUE to x[0]. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#define GOOD_VALUE 0x5eedull
#define SIGNATURE "x:inout:u64[n], mode:scalar:u64"

static const char *const modules[] = {SP_MODULE_DIR "/libsimpler_hbg_sim.so",
                                      SP_MODULE_DIR "/libsimpler_tmr_sim.so"};

static sp_worker *w;
static uint64_t x[8];
static sp_args args;

static void register_faults(uint32_t id, const char *signature)
{
    const char *kernels = SP_TEST_KERNEL_DIR "/callable_kernels.so";
    sp_callable_kernel_spec k[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = kernels, .entry = "callable_fill"},
        {.func_id = 1, .core_type = SP_CORE_AIC, .path = kernels, .entry = "callable_fill"},
    };
    sp_callable_spec spec = {
        .orch_path = SP_TEST_KERNEL_DIR "/orch_faults.so",
        .orch_entry = "orch_faults",
        .orch_config = "orch_faults_config",
        .orch_args = signature,
        .kernels = k,
        .kernel_count = 2,
    };
    void *blob;
    size_t size;
    char err[512];
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, err, sizeof err), SP_OK, "%s", err);
    int rc = sp_worker_register_callable(w, id, blob, size);
    free(blob);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
}

static void good_args(void)
{
    memset(&args, 0, sizeof args);
    memset(x, 0, sizeof x);
    const int64_t n = 8;
    cr_assert_eq(sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)x, SP_DTYPE_U64, 1, &n),
                 SP_OK);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalar_count = 1;
    args.scalars[0] = 0; /* the good mode */
}

static void expect_good_run(uint32_t id)
{
    good_args();
    int rc = sp_worker_run(w, id, &args, NULL, NULL);
    cr_assert_eq(rc, SP_OK, "good run: %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    cr_assert_eq(x[0], GOOD_VALUE, "the good run's kernel did not write x[0]");
}

/* Run the (edited) args; expect the refusal naming `needle` and x untouched. */
static void expect_refused(uint32_t id, const char *needle)
{
    int rc = sp_worker_run(w, id, &args, NULL, NULL);
    const char *msg = sp_worker_last_error(w);
    cr_assert_eq(rc, SP_EARG_SIGNATURE, "expected SP_EARG_SIGNATURE (%s), got %s: %s", needle,
                 sp_status_name(rc), msg);
    cr_assert_not_null(strstr(msg, needle), "\"%s\" lacks \"%s\"", msg, needle);
    cr_assert_eq(x[0], 0, "a refused run staged and ran nothing");
    sp_run_handle h;
    rc = sp_worker_submit(w, id, &args, NULL, &h);
    cr_assert_eq(rc, SP_EARG_SIGNATURE, "submit: %s", sp_status_name(rc));
    cr_assert_eq(h.generation, 0, "no run was queued");
}

ParameterizedTestParameters(run_args, mismatching_runs_are_refused_by_name)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, run_args, mismatching_runs_are_refused_by_name, .timeout = 120)
{
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(modules[*mod], NULL, &w, err, sizeof err), SP_OK, "%s", err);
    register_faults(3, SIGNATURE);
    expect_good_run(3);

    good_args();
    args.dirs[0] = SP_IN;
    expect_refused(3, "callable 3: argument 'x' (tensor 0): direction in, the callable declares "
                      "inout");
    good_args();
    args.tensors[0].dtype = SP_DTYPE_I64;
    expect_refused(3, "argument 'x' (tensor 0): dtype i64, the callable declares u64");
    good_args();
    args.scalar_count = 2;
    expect_refused(3, "the run gives 2 scalars, the callable declares 1 (mode)");
    good_args();
    args.tensor_count = 0;
    expect_refused(3, "the run gives 0 tensors, the callable declares 1 (x)");
    cr_assert_eq(sp_worker_run(w, 3, NULL, NULL, NULL), SP_EARG_SIGNATURE, "NULL args: none given");
    expect_good_run(3);

    /* Unregistered and registered again without a signature: unchecked. */
    cr_assert_eq(sp_worker_unregister_callable(w, 3), SP_OK, "%s", sp_worker_last_error(w));
    register_faults(3, NULL);
    good_args();
    args.dirs[0] = SP_OUT_EXISTING; /* wrong for the signature, fine for the runtime */
    int rc = sp_worker_run(w, 3, &args, NULL, NULL);
    cr_assert_neq(rc, SP_EARG_SIGNATURE, "no signature, no check: %s", sp_worker_last_error(w));
    expect_good_run(3);
    sp_worker_close(w);
    w = NULL;
}
