/* Device-resident run arguments (SP_TENSOR_DEVICE, sp_worker_device_alloc):
 * on both runtimes a device tensor is read and written in place across 100
 * runs (checked by copying back), mixed with staged arguments; a replay on
 * device tensors equals a fresh staged run bit for bit (and is a replay);
 * the checking mode runs on them (no red zones expected); every refusal
 * (an address in no buffer, a view past its buffer, overlapping device
 * arguments, freeing or copying a buffer a run not yet waited for uses, a
 * double free, a freed buffer used) is named and followed by a good run;
 * the module ABI itself refuses a device argument outside the buffers its
 * context allocated (a caller that bypasses the worker).
 *
 * The orchestration: tests/kernels/replay_tmr_orch.c (MODE_CHAIN: y[0] +=
 * x[i % len] for n tasks; MODE_PIPE: heap intermediates and a data scalar). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"
#include "worker/module_loader.h"

enum { MODE_PIPE = 0, MODE_CONTROL = 1, MODE_CHAIN = 4 };

#define L 4
#define BLOCKS 16
#define LEN ((BLOCKS + 1) * L)
#define BYTES (LEN * sizeof(uint64_t))

static sp_worker *w;

static void open_rt(const char *rt)
{
    char err[1024] = "";
    sp_worker_options o = {.module_dir = SP_MODULE_DIR};
    cr_assert_eq(sp_worker_open_runtime(rt, NULL, &o, &w, err, sizeof err), SP_OK, "%s", err);
    const char *k = SP_TEST_KERNEL_DIR "/replay_tmr_kernels.so";
    sp_callable_kernel_spec ks[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "rt_affine"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = k, .entry = "rt_acc"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/replay_tmr_orch.so",
                             .orch_entry = "replay_tmr",
                             .orch_config = "replay_tmr_config",
                             .kernels = ks,
                             .kernel_count = 2};
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
}

static void teardown(void)
{
    sp_worker_close(w);
    w = NULL;
}

TestSuite(device_tensors, .fini = teardown, .timeout = 60);

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

/* A 1-D u64 [LEN] tensor at `addr`; SP_TENSOR_DEVICE when `device`. */
static void tensor(sp_args *a, int i, uint64_t addr, int dir, bool device)
{
    int64_t len = LEN;
    sp_tensor_init(&a->tensors[i], addr, SP_DTYPE_U64, 1, &len);
    if (device)
        a->tensors[i].flags |= SP_TENSOR_DEVICE;
    a->dirs[i] = (uint8_t)dir;
}

static void args3(sp_args *a, uint64_t x, bool xdev, uint64_t y, bool ydev, uint64_t *ctl, int mode,
                  uint64_t n, uint64_t data)
{
    memset(a, 0, sizeof *a);
    tensor(a, 0, x, SP_IN, xdev);
    tensor(a, 1, y, SP_INOUT, ydev);
    int64_t four = 4;
    sp_tensor_init(&a->tensors[2], (uint64_t)(uintptr_t)ctl, SP_DTYPE_U64, 1, &four);
    a->dirs[2] = SP_IN;
    a->tensor_count = 3;
    a->scalars[0] = (uint64_t)mode;
    a->scalars[1] = n;
    a->scalars[2] = data;
    a->scalar_count = 3;
}

static sp_call_config cfg_of(uint64_t flags)
{
    /* The checking mode's red zones need room in the heap. A run that does
     * not ask for it keeps it off, whatever SIMPLER_CHECK says (make test's
     * sanitizer phases set it): hbg never keeps a checking-mode graph. */
    if (!(flags & SP_CALL_CHECK))
        flags |= SP_CALL_NO_CHECK;
    return (sp_call_config){
        .task_window = 8, .heap_bytes = (flags & SP_CALL_CHECK) ? 1u << 20 : 4096, .flags = flags};
}

static void run_ok(const sp_args *a, uint64_t flags, sp_run_stats *st)
{
    sp_call_config c = cfg_of(flags);
    cr_assert_eq(sp_worker_run(w, 0, a, &c, st), SP_OK, "%s", sp_worker_last_error(w));
}

/* 100 runs accumulate into a device y in place; x is staged and changes
 * every run; then the roles swap (x on the device, y staged). */
static void inplace(const char *rt)
{
    open_rt(rt);
    uint64_t s = 7, x[LEN], y0[LEN], y[LEN], ctl[4] = {0}, dy, dx;
    for (int i = 0; i < LEN; i++)
        y0[i] = rnd(&s);
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dy), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(sp_worker_copy_to_device(w, dy, y0, BYTES), SP_OK);
    uint64_t expect = y0[0];
    sp_args a;
    for (int r = 0; r < 100; r++) {
        for (int i = 0; i < LEN; i++)
            x[i] = rnd(&s) % 1000;
        for (int i = 0; i < 5; i++)
            expect += x[i];
        args3(&a, (uint64_t)(uintptr_t)x, false, dy, true, ctl, MODE_CHAIN, 5, 0);
        run_ok(&a, r % 2 ? SP_CALL_REPLAY_AUTO : 0, NULL);
    }
    cr_assert_eq(sp_worker_copy_from_device(w, y, dy, BYTES), SP_OK);
    cr_assert_eq(y[0], expect, "y[0] = %llu, expected %llu", (unsigned long long)y[0],
                 (unsigned long long)expect);
    cr_assert_eq(memcmp(&y[1], &y0[1], BYTES - sizeof y[0]), 0, "the rest of y changed");
    /* x on the device, y staged: y (host) gets x's sum, x stays. */
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dx), SP_OK);
    cr_assert_eq(sp_worker_copy_to_device(w, dx, x, BYTES), SP_OK);
    memcpy(y, y0, BYTES);
    args3(&a, dx, true, (uint64_t)(uintptr_t)y, false, ctl, MODE_CHAIN, LEN, 0);
    run_ok(&a, 0, NULL);
    uint64_t sum = y0[0];
    for (int i = 0; i < LEN; i++)
        sum += x[i];
    cr_assert_eq(y[0], sum);
    cr_assert_eq(sp_worker_device_free(w, dx), SP_OK);
    cr_assert_eq(sp_worker_device_free(w, dy), SP_OK);
}

Test(device_tensors, inplace_hbg)
{
    inplace("hbg");
}

Test(device_tensors, inplace_tmr)
{
    inplace("tmr");
}

/* What MODE_PIPE leaves in y (replay_tmr_orch.c's pipe, sequentially). */
static void pipe_reference(const uint64_t *x, const uint64_t *y_in, uint64_t n, uint64_t data,
                           uint64_t *y)
{
    memcpy(y, y_in, BYTES);
    uint64_t acc[L] = {0};
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b = i % BLOCKS;
        for (int j = 0; j < L; j++) {
            uint64_t h = x[b * L + j] * 3 + data;
            y[b * L + j] = h + i;
            if (i % 10 == 0)
                acc[j] += h;
        }
    }
    memcpy(&y[BLOCKS * L], acc, sizeof acc);
}

/* Rounds of MODE_PIPE with REPLAY_AUTO on device x and y (new data each
 * round, a view of a bigger buffer for y): the first records, the rest
 * replay; each equals a fresh staged run and the reference bit for bit. */
static void replay(const char *rt)
{
    open_rt(rt);
    uint64_t s = 11, x[LEN], y_in[LEN], y[LEN], fresh[LEN], ref[LEN], ctl[4] = {0}, dx, dbig;
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dx), SP_OK);
    cr_assert_eq(sp_worker_device_alloc(w, 3 * BYTES, &dbig), SP_OK);
    const uint64_t dy = dbig + BYTES; /* y: the middle third */
    sp_args a;
    for (int r = 0; r < 6; r++) {
        for (int i = 0; i < LEN; i++) {
            x[i] = rnd(&s) % 1000;
            y_in[i] = rnd(&s);
        }
        uint64_t data = 100 + (uint64_t)r;
        cr_assert_eq(sp_worker_copy_to_device(w, dx, x, BYTES), SP_OK);
        cr_assert_eq(sp_worker_copy_to_device(w, dy, y_in, BYTES), SP_OK);
        args3(&a, dx, true, dy, true, ctl, MODE_PIPE, 50, data);
        sp_run_stats st;
        run_ok(&a, SP_CALL_REPLAY_AUTO, &st);
        cr_assert_eq(st.replay, r == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED, "round %d: replay %u",
                     r, st.replay);
        cr_assert_eq(sp_worker_copy_from_device(w, y, dy, BYTES), SP_OK);
        memcpy(fresh, y_in, BYTES);
        args3(&a, (uint64_t)(uintptr_t)x, false, (uint64_t)(uintptr_t)fresh, false, ctl, MODE_PIPE,
              50, data);
        run_ok(&a, 0, NULL);
        pipe_reference(x, y_in, 50, data, ref);
        cr_assert_eq(memcmp(fresh, ref, BYTES), 0, "round %d: the fresh run is wrong", r);
        cr_assert_eq(memcmp(y, ref, BYTES), 0, "round %d: the device replay differs", r);
    }
    /* A new buffer for y: its address differs, the replay relocates. */
    uint64_t dy2;
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dy2), SP_OK);
    cr_assert_eq(sp_worker_copy_to_device(w, dy2, y_in, BYTES), SP_OK);
    args3(&a, dx, true, dy2, true, ctl, MODE_PIPE, 50, 7);
    sp_run_stats st;
    run_ok(&a, SP_CALL_REPLAY_AUTO, &st);
    cr_assert_eq(st.replay, SP_RUN_REPLAYED);
    cr_assert_eq(sp_worker_copy_from_device(w, y, dy2, BYTES), SP_OK);
    pipe_reference(x, y_in, 50, 7, ref);
    cr_assert_eq(memcmp(y, ref, BYTES), 0, "the relocated replay differs");
    cr_assert_eq(sp_worker_device_free(w, dy2), SP_OK);
    cr_assert_eq(sp_worker_device_free(w, dx), SP_OK);
    cr_assert_eq(sp_worker_device_free(w, dbig), SP_OK);
}

Test(device_tensors, replay_hbg)
{
    replay("hbg");
}

Test(device_tensors, replay_tmr)
{
    replay("tmr");
}

/* A control value the orchestration reads from a device tensor cannot be
 * checked on the host before a replay: such a graph is not kept, and each
 * run follows the value on the device (against a fresh staged run). */
static void control_read(const char *rt)
{
    open_rt(rt);
    uint64_t s = 5, x[LEN], y_in[LEN], y[LEN], fresh[LEN], ctl[4] = {0}, dctl, dy;
    cr_assert_eq(sp_worker_device_alloc(w, sizeof ctl, &dctl), SP_OK);
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dy), SP_OK);
    for (int r = 0; r < 4; r++) {
        for (int i = 0; i < LEN; i++) {
            x[i] = rnd(&s) % 1000;
            y_in[i] = rnd(&s);
        }
        ctl[0] = (uint64_t)(r % 2 ? 3 : 9);
        cr_assert_eq(sp_worker_copy_to_device(w, dctl, ctl, sizeof ctl), SP_OK);
        cr_assert_eq(sp_worker_copy_to_device(w, dy, y_in, BYTES), SP_OK);
        sp_args a;
        args3(&a, (uint64_t)(uintptr_t)x, false, dy, true, NULL, MODE_CONTROL, 1, 0);
        int64_t four = 4;
        sp_tensor_init(&a.tensors[2], dctl, SP_DTYPE_U64, 1, &four);
        a.tensors[2].flags |= SP_TENSOR_DEVICE;
        sp_run_stats st;
        run_ok(&a, SP_CALL_REPLAY_AUTO, &st);
        cr_assert_eq(st.replay, SP_RUN_FRESH, "round %d: replay %u", r, st.replay);
        cr_assert_eq(sp_worker_copy_from_device(w, y, dy, BYTES), SP_OK);
        memcpy(fresh, y_in, BYTES);
        args3(&a, (uint64_t)(uintptr_t)x, false, (uint64_t)(uintptr_t)fresh, false, ctl,
              MODE_CONTROL, 1, 0);
        run_ok(&a, 0, NULL);
        cr_assert_eq(memcmp(y, fresh, BYTES), 0, "round %d: differs from a fresh run", r);
        cr_assert_neq(memcmp(y, y_in, BYTES), 0, "round %d: nothing was written", r);
    }
    sp_graph_cache_info info;
    cr_assert_eq(sp_worker_graph_cache_info(w, &info), SP_OK);
    cr_assert_eq(info.count, 0, "a graph that read a device tensor was kept");
}

Test(device_tensors, control_read_hbg)
{
    control_read("hbg");
}

Test(device_tensors, control_read_tmr)
{
    control_read("tmr");
}

/* The checking mode on device tensors: no red zones are expected. */
static void checked(const char *rt)
{
    open_rt(rt);
    uint64_t x[LEN], y_in[LEN], y[LEN], ref[LEN], ctl[4] = {0}, dy, s = 3;
    for (int i = 0; i < LEN; i++) {
        x[i] = rnd(&s) % 1000;
        y_in[i] = rnd(&s);
    }
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dy), SP_OK);
    cr_assert_eq(sp_worker_copy_to_device(w, dy, y_in, BYTES), SP_OK);
    sp_args a;
    args3(&a, (uint64_t)(uintptr_t)x, false, dy, true, ctl, MODE_PIPE, 30, 5);
    run_ok(&a, SP_CALL_CHECK, NULL);
    cr_assert_eq(sp_worker_copy_from_device(w, y, dy, BYTES), SP_OK);
    pipe_reference(x, y_in, 30, 5, ref);
    cr_assert_eq(memcmp(y, ref, BYTES), 0);
}

Test(device_tensors, check_mode_hbg)
{
    checked("hbg");
}

Test(device_tensors, check_mode_tmr)
{
    checked("tmr");
}

/* A good run after each refusal: y[0] += sum of x[0..5). */
static void good_run(uint64_t dy)
{
    uint64_t x[LEN] = {1, 2, 3, 4, 5}, ctl[4] = {0}, before, after;
    cr_assert_eq(sp_worker_copy_from_device(w, &before, dy, sizeof before), SP_OK, "%s",
                 sp_worker_last_error(w));
    sp_args a;
    args3(&a, (uint64_t)(uintptr_t)x, false, dy, true, ctl, MODE_CHAIN, 5, 0);
    run_ok(&a, 0, NULL);
    cr_assert_eq(sp_worker_copy_from_device(w, &after, dy, sizeof after), SP_OK);
    cr_assert_eq(after, before + 15);
}

static void refused(const sp_args *a, int status, const char *needle)
{
    sp_call_config c = cfg_of(0);
    int rc = sp_worker_run(w, 0, a, &c, NULL);
    cr_assert_eq(rc, status, "%s, expected %s: %s", sp_status_name(rc), sp_status_name(status),
                 sp_worker_last_error(w));
    cr_assert(strstr(sp_worker_last_error(w), needle), "message: %s", sp_worker_last_error(w));
}

static void refusals(const char *rt)
{
    open_rt(rt);
    uint64_t x[LEN] = {0}, ctl[4] = {0}, zero[LEN] = {0}, dy, dz;
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dy), SP_OK);
    cr_assert_eq(sp_worker_copy_to_device(w, dy, zero, BYTES), SP_OK);
    sp_args a;
    /* An address in no buffer of this worker (a host address). */
    args3(&a, (uint64_t)(uintptr_t)x, false, (uint64_t)(uintptr_t)zero, true, ctl, MODE_CHAIN, 5,
          0);
    refused(&a, SP_EBADPTR, "run argument 1 (SP_TENSOR_DEVICE)");
    good_run(dy);
    /* A view past its buffer's end. */
    args3(&a, (uint64_t)(uintptr_t)x, false, dy + 8, true, ctl, MODE_CHAIN, 5, 0);
    refused(&a, SP_EBOUNDS, "run argument 1 (SP_TENSOR_DEVICE)");
    good_run(dy);
    /* Two device arguments that overlap without being the same range. */
    cr_assert_eq(sp_worker_device_alloc(w, 2 * BYTES, &dz), SP_OK);
    args3(&a, dz, true, dz + 8, true, ctl, MODE_CHAIN, 5, 0);
    refused(&a, SP_EINVAL, "run arguments 0 and 1");
    good_run(dy);
    /* Freeing, or copying into, a buffer a submitted run uses. */
    args3(&a, (uint64_t)(uintptr_t)x, false, dy, true, ctl, MODE_CHAIN, 5, 0);
    sp_call_config c = cfg_of(0);
    sp_run_handle h;
    cr_assert_eq(sp_worker_submit(w, 0, &a, &c, &h), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(sp_worker_device_free(w, dy), SP_EBUSY);
    cr_assert(strstr(sp_worker_last_error(w), "not yet waited for"));
    cr_assert_eq(sp_worker_copy_to_device(w, dy, zero, 8), SP_EBUSY);
    cr_assert_eq(sp_worker_wait(w, &h, NULL), SP_OK, "%s", sp_worker_last_error(w));
    good_run(dy);
    /* Copies outside a buffer. */
    cr_assert_eq(sp_worker_copy_to_device(w, dy + 8, zero, BYTES), SP_EBOUNDS);
    cr_assert_eq(sp_worker_copy_from_device(w, zero, 16, 8), SP_EBADPTR);
    /* Free, double free, a freed buffer used. */
    cr_assert_eq(sp_worker_device_free(w, dz + 8), SP_EBADPTR);
    cr_assert_eq(sp_worker_device_free(w, dz), SP_OK);
    cr_assert_eq(sp_worker_device_free(w, dz), SP_EDOUBLEFREE);
    cr_assert(strstr(sp_worker_last_error(w), "freed already"));
    args3(&a, (uint64_t)(uintptr_t)x, false, dz, true, ctl, MODE_CHAIN, 5, 0);
    refused(&a, SP_EBADPTR, "freed already");
    good_run(dy);
    cr_assert_eq(sp_worker_device_alloc(w, 0, &dz), SP_EINVAL);
    cr_assert_eq(sp_worker_device_free(w, dy), SP_OK);
}

Test(device_tensors, refusals_hbg)
{
    refusals("hbg");
}

Test(device_tensors, refusals_tmr)
{
    refusals("tmr");
}

/* The module's own check, for a caller of the module ABI: a device
 * argument must lie in a buffer of this context's simpler_device_malloc. */
static void module_check(const char *path)
{
    wk_module_api m;
    char err[1024] = "";
    cr_assert_eq(wk_module_open(path, &m, err, sizeof err), SP_OK, "%s", err);
    void *ctx;
    size_t run_bytes, align;
    cr_assert_eq(m.simpler_run_storage_size(&run_bytes, &align), SP_OK);
    cr_assert_eq(m.simpler_create_device_context(&ctx), SP_OK);
    cr_assert_eq(m.simpler_init(ctx, 0, NULL, NULL), SP_OK, "%s", m.simpler_last_error(ctx));
    const char *k = SP_TEST_KERNEL_DIR "/replay_tmr_kernels.so";
    sp_callable_kernel_spec ks[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "rt_affine"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = k, .entry = "rt_acc"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/replay_tmr_orch.so",
                             .orch_entry = "replay_tmr",
                             .orch_config = "replay_tmr_config",
                             .kernels = ks,
                             .kernel_count = 2};
    void *blob;
    size_t size;
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(m.simpler_register_callable(ctx, 0, blob, size), SP_OK, "%s",
                 m.simpler_last_error(ctx));
    free(blob);
    void *run = aligned_alloc(64, (run_bytes + 63) / 64 * 64);
    cr_assert_not_null(run);
    memset(run, 0, run_bytes);
    sp_run_descriptor d = {.pipeline_slot = 0, .arena_bank = 0, .run_id = 1, .dispatch_id = 1};
    uint64_t x[LEN] = {0}, ctl[4] = {0}, dy;
    sp_args a;
    sp_call_config c = cfg_of(0);
    /* A host address posing as a device one. */
    args3(&a, (uint64_t)(uintptr_t)x, false, (uint64_t)(uintptr_t)x, true, ctl, MODE_CHAIN, 5, 0);
    cr_assert_eq(m.simpler_prepare_run(ctx, run, 0, &a, &c, &d), SP_EBADPTR);
    cr_assert(strstr(m.simpler_last_error(ctx), "run argument 1 (SP_TENSOR_DEVICE)"), "%s",
              m.simpler_last_error(ctx));
    /* A view past the end of a buffer of this context. */
    cr_assert_eq(m.simpler_device_malloc(ctx, BYTES, &dy), SP_OK);
    args3(&a, (uint64_t)(uintptr_t)x, false, dy + 8, true, ctl, MODE_CHAIN, 5, 0);
    cr_assert_eq(m.simpler_prepare_run(ctx, run, 0, &a, &c, &d), SP_EBOUNDS);
    /* Inside it: prepared, launched, in place. */
    uint64_t y0[LEN] = {0}, y[LEN];
    x[0] = 2;
    cr_assert_eq(m.simpler_copy_to_device(ctx, dy, y0, BYTES), SP_OK);
    args3(&a, (uint64_t)(uintptr_t)x, false, dy, true, ctl, MODE_CHAIN, 1, 0);
    cr_assert_eq(m.simpler_prepare_run(ctx, run, 0, &a, &c, &d), SP_OK, "%s",
                 m.simpler_last_error(ctx));
    cr_assert_eq(m.simpler_launch_run(ctx, run), SP_OK, "%s", m.simpler_last_error(ctx));
    cr_assert_eq(m.simpler_wait_run(ctx, run, 0), SP_OK, "%s", m.simpler_last_error(ctx));
    cr_assert_eq(m.simpler_finalize_run(ctx, run), SP_OK, "%s", m.simpler_last_error(ctx));
    cr_assert_eq(m.simpler_copy_from_device(ctx, y, dy, BYTES), SP_OK);
    cr_assert_eq(y[0], 2);
    /* Freed: refused again. */
    cr_assert_eq(m.simpler_device_free(ctx, dy), SP_OK);
    memset(run, 0, run_bytes);
    cr_assert_eq(m.simpler_prepare_run(ctx, run, 0, &a, &c, &d), SP_EBADPTR);
    free(run);
    cr_assert_eq(m.simpler_destroy_device_context(ctx), SP_OK);
    wk_module_close(&m);
}

Test(device_tensors, module_check_hbg)
{
    module_check(SP_MODULE_DIR "/libsimpler_hbg_sim.so");
}

Test(device_tensors, module_check_tmr)
{
    module_check(SP_MODULE_DIR "/libsimpler_tmr_sim.so");
}

/* sp_worker_device_map: the host sees the device's bytes (no copy), both
 * ways; refused by name outside a buffer and on a worker with host-map
 * off; a mapped buffer cannot be freed until unmapped. */
static void device_map(const char *rt)
{
    open_rt(rt);
    uint64_t dy = 0;
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dy), SP_OK, "%s", sp_worker_last_error(w));
    void *h = NULL;
    cr_assert_eq(sp_worker_device_map(w, dy + 8, BYTES - 8, &h), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_not_null(h);
    uint64_t *p = h;
    for (uint64_t i = 0; i < LEN - 1; i++)
        p[i] = 1000 + i;
    uint64_t back[LEN];
    cr_assert_eq(sp_worker_copy_from_device(w, back, dy, BYTES), SP_OK);
    for (uint64_t i = 1; i < LEN; i++)
        cr_assert_eq(back[i], 1000 + i - 1, "element %llu", (unsigned long long)i);
    back[1] = 77;
    cr_assert_eq(sp_worker_copy_to_device(w, dy, back, BYTES), SP_OK);
    cr_assert_eq(p[0], 77);

    cr_assert_eq(sp_worker_device_map(w, dy, BYTES + 8, &h), SP_EBOUNDS);
    cr_assert_null(h);
    cr_assert_eq(sp_worker_device_map(w, 0x10, 8, &h), SP_EBADPTR);
    cr_assert_eq(sp_worker_device_map(w, dy, 8, NULL), SP_EINVAL);
    cr_assert_eq(sp_worker_device_free(w, dy), SP_EMAPPED);
    cr_assert_eq(sp_worker_device_unmap(w, dy + 8), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(sp_worker_device_free(w, dy), SP_OK, "%s", sp_worker_last_error(w));
    sp_worker_close(w);

    char err[1024] = "";
    sp_worker_options o = {.module_dir = SP_MODULE_DIR};
    o.settings.sim.no_host_map = 1;
    cr_assert_eq(sp_worker_open_runtime(rt, NULL, &o, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp_worker_device_alloc(w, BYTES, &dy), SP_OK);
    cr_assert_eq(sp_worker_device_map(w, dy, BYTES, &h), SP_ENOTSUP);
    cr_assert(strstr(sp_worker_last_error(w), "no_host_map"), "%s", sp_worker_last_error(w));
    cr_assert_eq(sp_worker_device_free(w, dy), SP_OK);
}

Test(device_tensors, device_map_hbg)
{
    device_map("hbg");
}

Test(device_tensors, device_map_tmr)
{
    device_map("tmr");
}
