/* Device memory exhausted, on both runtimes, on a small sim device
 * (SIMPLER_SIM_MEMORY_MB): at staging (run arguments larger than the
 * device), at arena commit (a heap, tmr's ring state, hbg's image), at an
 * output allocation (one output larger than the heap; outputs that add up
 * past it), and while the other pipeline slot holds its arena. Each fails
 * with a named status and a message naming the limit; the next, smaller
 * run on the same worker passes. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#include "orch_tmr_callable.h"

/* These cases size heaps to the byte: red zones (the checking mode, which
 * `make test-asan` / `test-tsan` turn on with SIMPLER_CHECK=1) would move
 * every limit, so they run with it off. */
#define EXACT SP_CALL_NO_CHECK

/* orch_tmr's modes (tests/kernels/orch_tmr.c) used here. */
enum { MODE_INDEPENDENT = 0, MODE_TASK_TOO_BIG = 2, MODE_SCOPE_HEAP = 3 };

#define DEVICE_MB 32
#define DEVICE_BYTES "33554432" /* DEVICE_MB << 20, as messages print it */
#define SMALL_HEAP (1ull << 20)
#define Y_LEN 1024

static sp_worker *w;
static uint64_t y[Y_LEN];

static void open_on(int runtime)
{
    /* Read when the device is created, i.e. by sp_worker_open below; each
     * Criterion test is its own process, so this device is this test's. */
    setenv("SIMPLER_SIM_MEMORY_MB", "32", 1);
    const char *module =
        runtime ? SP_MODULE_DIR "/libsimpler_tmr_sim.so" : SP_MODULE_DIR "/libsimpler_hbg_sim.so";
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(orch_tmr_register(w, 0, err, sizeof err), SP_OK, "%s", err);
}

/* Arguments of one run: `yv` (len u64 elements, INOUT), mode, size. */
static sp_args make_args(uint64_t *yv, int64_t len, int mode, uint64_t n)
{
    sp_args a;
    memset(&a, 0, sizeof a);
    sp_tensor_init(&a.tensors[0], (uint64_t)(uintptr_t)yv, SP_DTYPE_U64, 1, &len);
    a.dirs[0] = SP_INOUT;
    a.tensor_count = 1;
    a.scalars[0] = (uint64_t)mode;
    a.scalars[1] = n;
    a.scalar_count = 2;
    return a;
}

static int run_mode(int mode, uint64_t n, uint64_t heap, uint32_t window)
{
    memset(y, 0, sizeof y);
    sp_args a = make_args(y, Y_LEN, mode, n);
    sp_call_config cfg = {.heap_bytes = heap, .task_window = window, .flags = EXACT};
    return sp_worker_run(w, 0, &a, &cfg, NULL);
}

static void assert_status(int rc, int want)
{
    cr_assert_eq(rc, want, "got %s, want %s: %s", sp_status_name(rc), sp_status_name(want),
                 sp_worker_last_error(w));
}

static void assert_message(const char *want)
{
    const char *msg = sp_worker_last_error(w);
    cr_assert(strstr(msg, want) != NULL, "message lacks '%s': %s", want, msg);
}

/* The device is usable: a small run on the same worker passes, twice. */
static void assert_next_run_passes(void)
{
    for (int round = 0; round < 2; round++) {
        assert_status(run_mode(MODE_INDEPENDENT, 64, SMALL_HEAP, 0), SP_OK);
        for (int i = 0; i < 64; i++)
            cr_assert_eq(y[i], (uint64_t)i + 1, "y[%d] = %llu after the follow-up run", i,
                         (unsigned long long)y[i]);
    }
}

ParameterizedTestParameters(exhaustion, staging)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

/* A run argument larger than the whole device: the slot's retained temp
 * buffer cannot grow; it keeps its old buffer. */
ParameterizedTest(int *rt, exhaustion, staging, .timeout = 60)
{
    open_on(*rt);
    assert_next_run_passes(); /* the slot's buffer exists before the failed grow */
    int64_t len = (48ll << 20) / 8;
    uint64_t *big = calloc((size_t)len, sizeof *big); /* untouched pages: cheap */
    cr_assert_not_null(big);
    sp_args a = make_args(big, len, MODE_INDEPENDENT, 1);
    sp_call_config cfg = {.heap_bytes = SMALL_HEAP, .flags = EXACT};
    assert_status(sp_worker_run(w, 0, &a, &cfg, NULL), SP_EDEVMEM);
    assert_message("staging");
    assert_message("50331648 bytes"); /* what was asked */
    assert_message(DEVICE_BYTES);     /* the device's size */
    free(big);
    assert_next_run_passes();
    sp_worker_close(w);
}

ParameterizedTestParameters(exhaustion, arena_heap)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

/* A heap larger than the device: the bank's arena commit fails and rolls
 * back, keeping the previous arena. */
ParameterizedTest(int *rt, exhaustion, arena_heap, .timeout = 60)
{
    open_on(*rt);
    assert_status(run_mode(MODE_INDEPENDENT, 4, 64ull << 20, 0), SP_EDEVMEM);
    assert_message("arena commit");
    assert_message("heap 67108864");
    assert_message(DEVICE_BYTES);
    assert_next_run_passes();
    sp_worker_close(w);
}

/* tmr's ring state (slots, queues, TensorMap) for a 2^20-slot window does
 * not fit the device. */
Test(exhaustion, tmr_ring_state, .timeout = 60)
{
    open_on(1);
    assert_status(run_mode(MODE_INDEPENDENT, 4, SMALL_HEAP, 1u << 20), SP_EDEVMEM);
    assert_message("ring state");
    assert_message("1048576-slot window");
    assert_message(DEVICE_BYTES);
    assert_next_run_passes();
    sp_worker_close(w);
}

/* hbg's image: a graph whose image is larger than the device memory left
 * after the heap. The orchestration runs; the image part of the commit fails. */
Test(exhaustion, hbg_image, .timeout = 120)
{
    open_on(0);
    sp_run_stats st;
    memset(y, 0, sizeof y);
    sp_args a = make_args(y, Y_LEN, MODE_INDEPENDENT, 1024);
    sp_call_config cfg = {.heap_bytes = SMALL_HEAP, .flags = EXACT};
    assert_status(sp_worker_run(w, 0, &a, &cfg, &st), SP_OK);
    cr_assert_gt(st.image_bytes, 0);
    /* Enough tasks for an image of ~40 MiB on a 32 MiB device. */
    uint64_t tasks = (40ull << 20) / (st.image_bytes / 1024);
    assert_status(run_mode(MODE_INDEPENDENT, tasks, SMALL_HEAP, 0), SP_EDEVMEM);
    assert_message("image of");
    assert_message("does not fit");
    assert_message(DEVICE_BYTES);
    assert_next_run_passes();
    sp_worker_close(w);
}

ParameterizedTestParameters(exhaustion, one_output_larger_than_the_heap)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

/* One task's output is larger than the heap: hbg's bump allocator refuses
 * it (SP_EDEVMEM), tmr refuses it before any wait (SP_EHEAP_TOO_SMALL). */
ParameterizedTest(int *rt, exhaustion, one_output_larger_than_the_heap, .timeout = 60)
{
    open_on(*rt);
    int rc = run_mode(MODE_TASK_TOO_BIG, 2ull << 20, SMALL_HEAP, 0);
    if (*rt == 0) {
        assert_status(rc, SP_EDEVMEM);
        assert_message("task 0: output 0 (2097152 bytes) does not fit the 1048576-byte heap");
    } else {
        assert_status(rc, SP_EHEAP_TOO_SMALL);
        assert_message("task 0: outputs need 2097152 bytes, the heap ring has 1048576");
    }
    assert_next_run_passes();
    sp_worker_close(w);
}

ParameterizedTestParameters(exhaustion, outputs_that_add_up_past_the_heap)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

/* 2048 outputs of 1 KiB kept alive by one scope on a 1 MiB heap: hbg runs
 * out at the first output that does not fit; tmr cannot retire anything the
 * scope holds (SP_EHEAP_DEADLOCK), names the ring's size, and drains. */
ParameterizedTest(int *rt, exhaustion, outputs_that_add_up_past_the_heap, .timeout = 60)
{
    open_on(*rt);
    int rc = run_mode(MODE_SCOPE_HEAP, 2048, SMALL_HEAP, 2048);
    if (*rt == 0) {
        assert_status(rc, SP_EDEVMEM);
        assert_message("(1024 bytes) does not fit the 1048576-byte heap");
    } else {
        assert_status(rc, SP_EHEAP_DEADLOCK);
        assert_message("the 1048576-byte ring");
    }
    assert_next_run_passes();
    sp_worker_close(w);
}

ParameterizedTestParameters(exhaustion, while_the_other_slot_holds_its_arena)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

/* Two runs in flight: the first holds bank 0's 8 MiB heap (and, on tmr,
 * ~10 MiB of ring state), so the second's 24 MiB heap in bank 1 does not
 * fit. The second submit fails by name; the first run still completes
 * correctly, and so do later runs in both slots. */
ParameterizedTest(int *rt, exhaustion, while_the_other_slot_holds_its_arena, .timeout = 60)
{
    open_on(*rt);
    cr_assert_eq(sp_worker_lane_depth(w), 2);
    static uint64_t y0[Y_LEN], y1[Y_LEN];
    sp_args a0 = make_args(y0, Y_LEN, MODE_INDEPENDENT, 32);
    sp_args a1 = make_args(y1, Y_LEN, MODE_INDEPENDENT, 32);
    sp_call_config c0 = {.heap_bytes = 8ull << 20, .flags = EXACT},
                   c1 = {.heap_bytes = 24ull << 20, .flags = EXACT};
    sp_run_handle h0, h1;
    assert_status(sp_worker_submit(w, 0, &a0, &c0, &h0), SP_OK);
    assert_status(sp_worker_submit(w, 0, &a1, &c1, &h1), SP_EDEVMEM);
    assert_message("arena commit");
    assert_message("heap 25165824");
    assert_message(DEVICE_BYTES);
    assert_status(sp_worker_wait(w, &h0, NULL), SP_OK);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(y0[i], (uint64_t)i + 1);
    /* Both slots again, each within what is left. */
    c1.heap_bytes = 2ull << 20;
    assert_status(sp_worker_submit(w, 0, &a0, &c0, &h0), SP_OK);
    assert_status(sp_worker_submit(w, 0, &a1, &c1, &h1), SP_OK);
    assert_status(sp_worker_wait(w, &h0, NULL), SP_OK);
    assert_status(sp_worker_wait(w, &h1, NULL), SP_OK);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(y1[i], (uint64_t)i + 1);
    assert_next_run_passes();
    sp_worker_close(w);
}
