/* Issue 12, items 4, 4b and 4c, on both runtimes.
 *
 * The checking mode (SP_CALL_CHECK, or SIMPLER_CHECK=1): a kernel that
 * writes past a runtime-allocated output, past a run argument, or before
 * a run argument fails the run with SP_EKERNEL_OVERRUN naming the task,
 * the kernel and the argument; nothing is copied back and the next run on
 * the worker passes. With the mode off (SP_CALL_NO_CHECK) there are no red
 * zones: the same kernels silently damage the neighbour, as documented.
 *
 * Views that start inside a staged buffer meet the buffer's own accesses
 * (RAW and WAR); a MANUAL-scope write does not hide an older AUTO writer
 * from a later reader. Both races have a slow side (a kernel that sleeps):
 * without the edge the fast side wins and the result is wrong; the asserts
 * are on results, never on time. */
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

enum {
    M_GOOD = 0,
    M_PAST_OUTPUT = 1,
    M_PAST_ARGUMENT = 2,
    M_UNDERRUN = 3,
    M_VIEW_RAW = 5,
    M_VIEW_WAR = 6,
    M_MANUAL_WRITE = 7,
    M_VIEW_MISALIGNED = 8,
};

static sp_worker *w;
static float x[256], y[64], out[64];
static sp_args args;

static void open_on(int runtime)
{
    const char *module =
        runtime ? SP_MODULE_DIR "/libsimpler_tmr_sim.so" : SP_MODULE_DIR "/libsimpler_hbg_sim.so";
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
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

static int run_mode(uint64_t mode, uint64_t flags)
{
    for (int i = 0; i < 256; i++)
        x[i] = (float)i;
    for (int i = 0; i < 64; i++)
        y[i] = out[i] = -1.0f;
    memset(&args, 0, sizeof args);
    const int64_t xs[2] = {16, 16}, ys = 64, os[2] = {4, 16};
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)x, SP_DTYPE_F32, 2, xs);
    sp_tensor_init(&args.tensors[1], (uint64_t)(uintptr_t)y, SP_DTYPE_F32, 1, &ys);
    sp_tensor_init(&args.tensors[2], (uint64_t)(uintptr_t)out, SP_DTYPE_F32, 2, os);
    args.dirs[0] = SP_INOUT;
    args.dirs[1] = SP_INOUT;
    args.dirs[2] = SP_OUT_EXISTING;
    args.tensor_count = 3;
    args.scalars[0] = mode;
    args.scalar_count = 1;
    sp_call_config cfg = {.flags = flags, .heap_bytes = 1 << 20};
    return sp_worker_run(w, 0, &args, &cfg, NULL);
}

static void assert_message(const char *want)
{
    const char *msg = sp_worker_last_error(w);
    cr_assert(strstr(msg, want) != NULL, "message lacks '%s': %s", want, msg);
}

static void assert_good_run(uint64_t flags)
{
    int rc = run_mode(M_GOOD, flags);
    cr_assert_eq(rc, SP_OK, "good run: %s", sp_worker_last_error(w));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(y[i], 4.0f, "y[%d] = %g", i, y[i]);
    for (int i = 0; i < 256; i++)
        cr_assert_eq(x[i], 5.0f, "x[%d] = %g", i, x[i]);
}

static int runtimes[] = {0, 1};

ParameterizedTestParameters(overrun, writes_outside_a_buffer_are_named)
{
    return cr_make_param_array(int, runtimes, 2);
}

ParameterizedTest(int *rt, overrun, writes_outside_a_buffer_are_named, .timeout = 60)
{
    open_on(*rt);
    assert_good_run(SP_CALL_CHECK); /* a correct program passes unchanged */

    int rc = run_mode(M_PAST_OUTPUT, SP_CALL_CHECK);
    cr_assert_eq(rc, SP_EKERNEL_OVERRUN, "past an output: %s: %s", sp_status_name(rc),
                 sp_worker_last_error(w));
    assert_message("task 2");
    assert_message("'ov_fill' (func_id 0)");
    assert_message("past the end of tensor argument 0");
    cr_assert_eq(y[0], -1.0f, "a failed run copies nothing back");
    assert_good_run(SP_CALL_CHECK);

    rc = run_mode(M_PAST_ARGUMENT, SP_CALL_CHECK);
    cr_assert_eq(rc, SP_EKERNEL_OVERRUN, "past a run argument: %s: %s", sp_status_name(rc),
                 sp_worker_last_error(w));
    assert_message("task 0");
    assert_message("'ov_fill'");
    assert_message("past the end of tensor argument 0 (a 1024-byte buffer");
    cr_assert_eq(y[0], -1.0f, "the neighbour's damage is not copied back");
    cr_assert_eq(x[0], 0.0f, "nor the overrun buffer itself");
    assert_good_run(SP_CALL_CHECK);

    rc = run_mode(M_UNDERRUN, SP_CALL_CHECK);
    cr_assert_eq(rc, SP_EKERNEL_OVERRUN, "underrun: %s: %s", sp_status_name(rc),
                 sp_worker_last_error(w));
    assert_message("task 0");
    assert_message("64 bytes before the start of tensor argument 0");
    cr_assert_eq(x[255], 255.0f);
    assert_good_run(SP_CALL_CHECK);
    sp_worker_close(w);
}

ParameterizedTestParameters(overrun, with_the_check_off_nothing_is_detected)
{
    return cr_make_param_array(int, runtimes, 2);
}

/* Documented: without the checking mode the buffers are packed, nothing is
 * verified, and the neighbour takes the damage. NO_CHECK wins over
 * SIMPLER_CHECK=1, which `make test` sets. */
ParameterizedTest(int *rt, overrun, with_the_check_off_nothing_is_detected, .timeout = 60)
{
    open_on(*rt);
    assert_good_run(SP_CALL_NO_CHECK);
    cr_assert_eq(run_mode(M_PAST_OUTPUT, SP_CALL_NO_CHECK), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(y[0], 3.0f, "the overrun reached the next output");
    cr_assert_eq(run_mode(M_PAST_ARGUMENT, SP_CALL_NO_CHECK), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(y[0], 5.0f, "the overrun reached the next argument and was copied back");
    cr_assert_eq(run_mode(M_UNDERRUN, SP_CALL_NO_CHECK), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(x[255], 7.0f, "the underrun reached the previous argument");
    sp_worker_close(w);
}

ParameterizedTestParameters(overrun, a_view_inside_a_buffer_meets_its_writers)
{
    return cr_make_param_array(int, runtimes, 2);
}

ParameterizedTest(int *rt, overrun, a_view_inside_a_buffer_meets_its_writers, .timeout = 60)
{
    open_on(*rt);
    /* RAW: a slow writer of rows 0..15, a reader of rows 4..7 through a
     * tensor whose addr is 256 bytes into x. */
    int rc = run_mode(M_VIEW_RAW, 0);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(out[i], 9.0f, "RAW: out[%d] = %g, the reader ran before the writer", i,
                     out[i]);
    /* WAR: a slow reader of rows 4..7 through the view, then a writer of
     * rows 0..15 through x's base. */
    rc = run_mode(M_VIEW_WAR, 0);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(out[i], (float)(64 + i), "WAR: out[%d] = %g, the writer ran first", i, out[i]);
    for (int i = 0; i < 256; i++)
        cr_assert_eq(x[i], 9.0f);
    /* A view that starts between two elements is refused by name. */
    rc = run_mode(M_VIEW_MISALIGNED, 0);
    cr_assert_eq(rc, SP_ETASK_ARGS, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_message("task 0: tensor argument 0 starts 258 bytes into run argument 0");
    sp_worker_close(w);
}

ParameterizedTestParameters(overrun, a_manual_write_hides_no_older_writer)
{
    return cr_make_param_array(int, runtimes, 2);
}

ParameterizedTest(int *rt, overrun, a_manual_write_hides_no_older_writer, .timeout = 60)
{
    open_on(*rt);
    int rc = run_mode(M_MANUAL_WRITE, 0);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(out[i], 9.0f, "out[%d] = %g: the reader ran before the AUTO writer", i,
                     out[i]);
    sp_worker_close(w);
}
