/* Kernels that abort (abort(), a failed assert()) or raise SIGTERM on
 * their own thread fail their run with SP_EKERNEL_FAULT naming the signal,
 * on both runtimes; the process survives and the next run on the same
 * device passes. */
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

enum { F_ABORT = 1, F_ASSERT = 2, F_TERM = 3 };

static sp_worker *w;
static uint64_t y[4];

static void open_on(int runtime)
{
    const char *module =
        runtime ? SP_MODULE_DIR "/libsimpler_tmr_sim.so" : SP_MODULE_DIR "/libsimpler_hbg_sim.so";
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    const char *mark = SP_TEST_KERNEL_DIR "/fault_kernels.so";
    const char *k = SP_TEST_KERNEL_DIR "/fault_abort_kernels.so";
    sp_callable_kernel_spec ks[4] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = mark, .entry = "fault_mark"},
        {.func_id = F_ABORT, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_abort"},
        {.func_id = F_ASSERT, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_assert"},
        {.func_id = F_TERM, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_term"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/fault_orch.so",
                             .orch_entry = "fault_orch",
                             .kernels = ks,
                             .kernel_count = 4};
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
}

static int run_mode(uint64_t mode)
{
    memset(y, 0, sizeof y);
    sp_args args;
    memset(&args, 0, sizeof args);
    int64_t n = 4;
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &n);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalars[0] = mode;
    args.scalar_count = 1;
    return sp_worker_run(w, 0, &args, NULL, NULL);
}

static void assert_message(const char *want)
{
    const char *msg = sp_worker_last_error(w);
    cr_assert(strstr(msg, want) != NULL, "message lacks '%s': %s", want, msg);
}

typedef struct abort_case {
    int runtime;
    uint64_t mode;
} abort_case;

ParameterizedTestParameters(kernel_abort, is_a_named_kernel_fault)
{
    static abort_case cases[] = {{0, F_ABORT}, {0, F_ASSERT}, {0, F_TERM},
                                 {1, F_ABORT}, {1, F_ASSERT}, {1, F_TERM}};
    return cr_make_param_array(abort_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(abort_case *c, kernel_abort, is_a_named_kernel_fault, .timeout = 60)
{
    static const char *const names[] = {"", "SIGABRT", "SIGABRT", "SIGTERM"};
    static const char *const entries[] = {"", "fault_abort", "fault_assert", "fault_term"};
    open_on(c->runtime);
    /* Twice: the second abort in the same core thread must be caught too
     * (the handler unblocks the signal before it jumps back). */
    for (int i = 0; i < 2; i++) {
        int rc = run_mode(c->mode);
        cr_assert_eq(rc, SP_EKERNEL_FAULT, "got %s: %s", sp_status_name(rc),
                     sp_worker_last_error(w));
        assert_message(names[c->mode]);
        assert_message(entries[c->mode]);
        assert_message("task 1");
        cr_assert_eq(y[0], 0, "a failed run copies no output back");
    }
    int rc = run_mode(0);
    cr_assert_eq(rc, SP_OK, "follow-up run: %s", sp_worker_last_error(w));
    cr_assert_eq(y[0], 11);
    cr_assert_eq(y[1], 22);
    sp_worker_close(w);
}
