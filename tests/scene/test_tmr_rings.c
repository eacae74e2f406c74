/* tensormap_and_ringbuffer's bounded rings, end to end through the worker:
 * scheduling overlaps the orchestration; each way a program can never make
 * progress fails with its own named status within a bounded time; and after
 * every failure the next run on the same device passes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#include "orch_tmr_callable.h"

#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

enum {
    MODE_INDEPENDENT = 0,
    MODE_SCOPE_OVERFLOW = 1,
    MODE_TASK_TOO_BIG = 2,
    MODE_SCOPE_HEAP = 3,
    MODE_CONTROL_WAIT = 4,
    MODE_RETIRED = 5,
};

#define Y_LEN 16384

static sp_worker *w;
static uint64_t y[Y_LEN];
static sp_args args;

static void setup(void)
{
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(TMR_MODULE, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(orch_tmr_register(w, 0, err, sizeof err), SP_OK, "%s", err);
}

static void teardown(void)
{
    sp_worker_close(w);
}

TestSuite(tmr_rings, .init = setup, .fini = teardown, .timeout = 120);

/* Run mode `mode` with size `n` on a `window`-slot ring and a `heap`-byte heap. */
static int run_mode(int mode, uint64_t n, uint32_t window, uint64_t heap, uint64_t backstop_us,
                    sp_run_stats *st)
{
    memset(y, 0, sizeof y);
    memset(&args, 0, sizeof args);
    int64_t len = Y_LEN;
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &len);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalars[0] = (uint64_t)mode;
    args.scalars[1] = n;
    args.scalar_count = 2;
    sp_call_config cfg = {.task_window = window, .heap_bytes = heap, .timeout_us = backstop_us};
    sp_run_stats local;
    return sp_worker_run(w, 0, &args, &cfg, st ? st : &local);
}

/* The device is usable after a failure: an ordinary run passes, and every
 * element it should mark is marked. */
static void assert_next_run_passes(void)
{
    sp_run_stats st;
    int rc = run_mode(MODE_INDEPENDENT, 200, 64, 1 << 20, 0, &st);
    cr_assert_eq(rc, SP_OK, "follow-up run: %s", sp_worker_last_error(w));
    cr_assert_eq(st.tasks, 200);
    for (uint64_t i = 0; i < 200; i++)
        cr_assert_eq(y[i], i + 1, "y[%llu] = %llu", (unsigned long long)i,
                     (unsigned long long)y[i]);
}

Test(tmr_rings, scheduling_overlaps_the_orchestration)
{
    sp_run_stats st;
    int rc = run_mode(MODE_INDEPENDENT, 10000, 1024, 1 << 20, 0, &st);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(st.tasks, 10000);
    cr_assert_eq(st.edges, 0);
    for (uint64_t i = 0; i < 10000; i++)
        cr_assert_eq(y[i], i + 1);
    cr_assert_gt(st.first_complete_ns, 0);
    cr_assert_lt(st.first_complete_ns, st.orch_ns,
                 "first task completed %llu ns after launch, orchestration returned at %llu ns",
                 (unsigned long long)st.first_complete_ns, (unsigned long long)st.orch_ns);
}

Test(tmr_rings, a_long_program_streams_through_a_small_window)
{
    sp_run_stats st;
    int rc = run_mode(MODE_INDEPENDENT, 5000, 4, 4096, 0, &st);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    for (uint64_t i = 0; i < 5000; i++)
        cr_assert_eq(y[i], i + 1);
}

/* A full window makes the orchestrator sleep through a batch of completions
 * (an eighth of the window) rather than wake at each: the program still
 * streams through many windows, every task runs once, and a wait whose
 * batch is larger than what is left in flight still ends. */
Test(tmr_rings, a_full_window_waits_for_a_batch_and_streams_on)
{
    static const uint32_t windows[] = {16, 64, 1024};
    for (size_t k = 0; k < sizeof windows / sizeof windows[0]; k++) {
        sp_run_stats st;
        int rc = run_mode(MODE_INDEPENDENT, Y_LEN, windows[k], 1 << 20, 0, &st);
        cr_assert_eq(rc, SP_OK, "window %u: %s", windows[k], sp_worker_last_error(w));
        cr_assert_eq(st.tasks, Y_LEN);
        for (uint64_t i = 0; i < Y_LEN; i++)
            cr_assert_eq(y[i], i + 1, "window %u: y[%llu] = %llu", windows[k],
                         (unsigned long long)i, (unsigned long long)y[i]);
    }
}

Test(tmr_rings, a_full_heap_waits_for_a_batch_and_streams_on)
{
    /* 64-byte outputs in a 4 KiB heap: 64 fit, the 1024-slot window's
     * batch is 128, so each wait asks for more than is in flight. The
     * program ends by using its first output, long retired: that status
     * shows every heap wait before it ended. */
    int rc = run_mode(MODE_RETIRED, 5000, 1024, 4096, 0, NULL);
    cr_assert_eq(rc, SP_ETENSOR_RETIRED, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_next_run_passes();
}

Test(tmr_rings, a_scope_larger_than_the_window_is_named)
{
    int rc = run_mode(MODE_SCOPE_OVERFLOW, 100, 64, 1 << 20, 0, NULL);
    cr_assert_eq(rc, SP_ESCOPE_DEADLOCK, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    cr_assert(strstr(sp_worker_last_error(w), "64-slot window") != NULL, "%s",
              sp_worker_last_error(w));
    assert_next_run_passes();
}

Test(tmr_rings, a_scope_that_fits_the_window_runs)
{
    int rc = run_mode(MODE_SCOPE_OVERFLOW, 60, 64, 1 << 20, 0, NULL);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
}

Test(tmr_rings, a_task_larger_than_the_heap_is_named)
{
    int rc = run_mode(MODE_TASK_TOO_BIG, 1 << 20, 64, 64 * 1024, 0, NULL);
    cr_assert_eq(rc, SP_EHEAP_TOO_SMALL, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_next_run_passes();
}

Test(tmr_rings, a_heap_too_small_for_a_scope_is_named)
{
    /* 32 outputs of 1 KiB held by one scope, 16 KiB of heap. */
    int rc = run_mode(MODE_SCOPE_HEAP, 32, 64, 16 * 1024, 0, NULL);
    cr_assert_eq(rc, SP_EHEAP_DEADLOCK, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_next_run_passes();
}

Test(tmr_rings, a_control_wait_past_the_backstop_is_named)
{
    /* The producers are busy for 300 ms, each kernel 5 ms; the backstop is 20 ms. */
    int rc = run_mode(MODE_CONTROL_WAIT, 300000, 64, 1 << 20, 20000, NULL);
    cr_assert_eq(rc, SP_ECONTROL_WAIT, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_next_run_passes();
}

Test(tmr_rings, a_control_read_waits_for_its_producer)
{
    int rc = run_mode(MODE_CONTROL_WAIT, 20000, 64, 1 << 20, 0, NULL);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(y[0], 42);
}

Test(tmr_rings, using_an_output_after_its_creator_retired_is_named)
{
    int rc = run_mode(MODE_RETIRED, 100, 16, 1 << 20, 0, NULL);
    cr_assert_eq(rc, SP_ETENSOR_RETIRED, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_next_run_passes();
}

Test(tmr_rings, bad_ring_config_is_refused)
{
    cr_assert_eq(run_mode(MODE_INDEPENDENT, 10, 100, 1 << 20, 0, NULL), SP_EINVAL);
    cr_assert_eq(run_mode(MODE_INDEPENDENT, 10, 2, 1 << 20, 0, NULL), SP_EINVAL);
    cr_assert_eq(run_mode(MODE_INDEPENDENT, 10, 64, 100, 0, NULL), SP_EINVAL);
    assert_next_run_passes();
}
