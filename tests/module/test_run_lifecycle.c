/* The run lifecycle of the module ABI (DESIGN.md §5), driven directly on the
 * hbg module with vector_example: prepare / launch / poll or wait /
 * finalize; finalize of a never-launched run; every illegal order refused
 * with SP_ESTATE and nothing leaked; held slots and banks (SP_EBUSY), slots
 * past the depth (SP_ESLOT); no (un)registering while a run is prepared;
 * launch acceptance; unknown callables; run identity in errors. Leaks are
 * caught by the device's own teardown report, read through a log sink. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example.h"
#include "simpler/status.h"
#include "worker/module_loader.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define CALLABLE_ID 3
#define RUN_ID 4242

static wk_module_api m;
static void *ctx;
static size_t run_size, run_align;
static ex_instance inst;
static const ex_example *ex;
static int leak_lines; /* device teardown lines reporting leftovers */

static void log_sink(int level, const char *line, void *user)
{
    (void)level;
    (void)user;
    if (strstr(line, "still live") || strstr(line, "still registered") || strstr(line, "leaked"))
        leak_lines++;
}

static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    cr_assert_gt(n, 0);
    void *p = malloc((size_t)n);
    cr_assert_not_null(p);
    cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return p;
}

static int register_example(uint32_t id)
{
    size_t size;
    void *blob = read_file(SP_BUILD_DIR "/examples/vector_example.spc", &size);
    int rc = m.simpler_register_callable(ctx, id, blob, size);
    free(blob);
    return rc;
}

static void setup(void)
{
    char err[512] = "";
    int rc = wk_module_open(HBG_MODULE, &m, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "%s", err);
    cr_assert_eq(m.simpler_bind_logging(2 /* warnings and errors */, log_sink, NULL), SP_OK);
    cr_assert_eq(m.simpler_run_storage_size(&run_size, &run_align), SP_OK);
    cr_assert_geq(run_size, sizeof(uint64_t));
    cr_assert_eq(m.simpler_create_device_context(&ctx), SP_OK);
    cr_assert_eq(m.simpler_init(ctx, 0, NULL, NULL), SP_OK, "%s", m.simpler_last_error(ctx));
    rc = register_example(CALLABLE_ID);
    cr_assert_eq(rc, SP_OK, "%s", m.simpler_last_error(ctx));
    ex = ex_find("vector_example");
    cr_assert_not_null(ex);
    const char *small[] = {"n=4096", NULL};
    cr_assert_eq(ex_instance_init(&inst, ex, "default", small, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ex->setup(&inst, err, sizeof err), 0, "%s", err);
}

static void teardown(void)
{
    ex_instance_free(&inst);
}

/* Tear the device down and prove nothing of any run was left on it. */
static void close_and_check_leaks(void)
{
    int rc = m.simpler_destroy_device_context(ctx);
    cr_assert_eq(rc, SP_OK, "destroy: %s (a run still prepared?)", sp_status_name(rc));
    ctx = NULL;
    cr_assert_eq(leak_lines, 0, "the device reported %d leftover line(s) at teardown", leak_lines);
    wk_module_close(&m);
}

TestSuite(lifecycle, .init = setup, .fini = teardown);

/* Run storage as the ABI asks: the module's size and alignment, zeroed. */
static void *storage_new(void)
{
    size_t bytes = (run_size + run_align - 1) / run_align * run_align;
    void *p = aligned_alloc(run_align, bytes);
    cr_assert_not_null(p);
    memset(p, 0, bytes);
    return p;
}

static void assert_zeroed(const void *run, const char *when)
{
    const unsigned char *p = run;
    for (size_t i = 0; i < run_size; i++)
        cr_assert_eq(p[i], 0, "run storage byte %zu is not zero %s", i, when);
}

static sp_run_descriptor desc_for(uint64_t run_id)
{
    sp_run_descriptor d;
    memset(&d, 0, sizeof d);
    d.run_id = run_id;
    d.generation = 1;
    d.run_epoch = 9;
    return d;
}

static int prepare(void *run, const sp_run_descriptor *d)
{
    return m.simpler_prepare_run(ctx, run, CALLABLE_ID, &inst.args, NULL, d);
}

static void expect_prepared(void *run, const sp_run_descriptor *d)
{
    int rc = prepare(run, d);
    cr_assert_eq(rc, SP_OK, "prepare: %s", m.simpler_last_error(ctx));
    cr_assert_eq(*(const uint64_t *)run, SP_RUN_STORAGE_MAGIC, "storage starts with the magic");
}

static void expect_status(int rc, int status, const char *what)
{
    cr_assert_eq(rc, status, "%s: got %s, expected %s (%s)", what, sp_status_name(rc),
                 sp_status_name(status), m.simpler_last_error(ctx));
}

/* The error text names run `id`. */
static void expect_identity(uint64_t id)
{
    char want[64];
    snprintf(want, sizeof want, "run %llu", (unsigned long long)id);
    cr_assert_not_null(strstr(m.simpler_last_error(ctx), want), "'%s' does not name %s",
                       m.simpler_last_error(ctx), want);
}

static void clear_outputs(void)
{
    int f = ex_arg_index(&inst, "f");
    cr_assert_geq(f, 0);
    memset((void *)(uintptr_t)inst.args.tensors[f].addr, 0, inst.args.tensors[f].buf_bytes);
}

/* Finalize a completed run and check what it computed. */
static void finalize_and_check(void *run)
{
    sp_run_stats st;
    cr_assert_eq(m.simpler_run_stats(ctx, run, &st), SP_OK, "%s", m.simpler_last_error(ctx));
    cr_assert_eq(st.tasks, 5);
    cr_assert_eq(st.edges, 6);
    int rc = m.simpler_finalize_run(ctx, run);
    cr_assert_eq(rc, SP_OK, "finalize: %s", m.simpler_last_error(ctx));
    assert_zeroed(run, "after finalize");
    double max_err;
    char err[EX_ERR_LEN] = "";
    cr_assert_eq(ex->check(&inst, &max_err, err, sizeof err), 0, "%s", err);
}

static void launch_wait_finalize(void *run)
{
    clear_outputs();
    expect_status(m.simpler_launch_run(ctx, run), SP_OK, "launch");
    expect_status(m.simpler_wait_run(ctx, run, 30ull * 1000000000ull), SP_OK, "wait");
    finalize_and_check(run);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

Test(lifecycle, prepare_launch_poll_finalize)
{
    void *run = storage_new();
    sp_run_descriptor d = desc_for(1);
    clear_outputs();
    expect_prepared(run, &d);
    expect_status(m.simpler_launch_run(ctx, run), SP_OK, "launch");
    uint64_t deadline = now_ns() + 30ull * 1000000000ull;
    int rc;
    while ((rc = m.simpler_poll_run(ctx, run)) == SP_RUN_NOT_READY)
        cr_assert_lt(now_ns(), deadline, "run did not complete within 30 s");
    expect_status(rc, SP_RUN_COMPLETE, "poll");
    expect_status(m.simpler_poll_run(ctx, run), SP_RUN_COMPLETE, "poll again once done");
    finalize_and_check(run);
    free(run);
    close_and_check_leaks();
}

Test(lifecycle, prepare_launch_wait_finalize)
{
    void *run = storage_new();
    sp_run_descriptor d = desc_for(1);
    expect_prepared(run, &d);
    launch_wait_finalize(run);
    /* The same storage serves the next run. */
    expect_prepared(run, &d);
    launch_wait_finalize(run);
    free(run);
    close_and_check_leaks();
}

Test(lifecycle, finalize_of_a_never_launched_run)
{
    void *run = storage_new();
    sp_run_descriptor d = desc_for(1);
    expect_prepared(run, &d);
    expect_status(m.simpler_finalize_run(ctx, run), SP_OK, "finalize of a prepared run");
    assert_zeroed(run, "after finalize of a prepared run");
    /* The slot and bank were released: the same slot takes a new run. */
    expect_prepared(run, &d);
    launch_wait_finalize(run);
    free(run);
    close_and_check_leaks();
}

Test(lifecycle, illegal_orders_are_refused)
{
    void *run = storage_new();
    sp_run_descriptor d = desc_for(RUN_ID);
    /* Nothing prepared yet. */
    expect_status(m.simpler_launch_run(ctx, run), SP_ESTATE, "launch of empty storage");
    expect_status(m.simpler_poll_run(ctx, run), SP_ESTATE, "poll of empty storage");
    expect_status(m.simpler_wait_run(ctx, run, 0), SP_ESTATE, "wait of empty storage");
    expect_status(m.simpler_finalize_run(ctx, run), SP_ESTATE, "finalize of empty storage");
    assert_zeroed(run, "after refused calls on empty storage");

    expect_prepared(run, &d);
    /* Prepared, not launched. */
    expect_status(m.simpler_poll_run(ctx, run), SP_ESTATE, "poll before launch");
    expect_identity(RUN_ID);
    expect_status(m.simpler_wait_run(ctx, run, 0), SP_ESTATE, "wait before launch");
    expect_identity(RUN_ID);
    sp_run_stats st;
    expect_status(m.simpler_run_stats(ctx, run, &st), SP_ESTATE, "stats before completion");
    /* A second prepare into storage that holds a run. */
    sp_run_descriptor d2 = desc_for(RUN_ID + 1);
    expect_status(prepare(run, &d2), SP_ESTATE, "prepare into occupied storage");

    /* The held run is untouched by all of that. */
    clear_outputs();
    expect_status(m.simpler_launch_run(ctx, run), SP_OK, "launch");
    expect_status(m.simpler_launch_run(ctx, run), SP_ESTATE, "second launch");
    expect_identity(RUN_ID);
    expect_status(m.simpler_wait_run(ctx, run, 30ull * 1000000000ull), SP_OK, "wait");
    expect_status(m.simpler_launch_run(ctx, run), SP_ESTATE, "launch of a completed run");
    finalize_and_check(run);
    expect_status(m.simpler_finalize_run(ctx, run), SP_ESTATE, "second finalize");
    free(run);
    close_and_check_leaks();
}

Test(lifecycle, held_slot_and_bank_and_out_of_range)
{
    void *a = storage_new(), *b = storage_new();
    sp_run_descriptor d = desc_for(1);
    expect_prepared(a, &d);
    sp_run_descriptor d2 = desc_for(2);
    expect_status(prepare(b, &d2), SP_EBUSY, "prepare on a held slot and bank");
    expect_identity(2);
    assert_zeroed(b, "after a refused prepare");

    uint32_t depth = m.simpler_get_pipeline_contract()->pipeline_depth;
    d2.pipeline_slot = depth;
    expect_status(prepare(b, &d2), SP_ESLOT, "slot == depth");
    d2.pipeline_slot = 0;
    d2.arena_bank = depth;
    expect_status(prepare(b, &d2), SP_ESLOT, "bank == depth");
    d2.arena_bank = 0;
    if (depth == 1) {
        d2.pipeline_slot = 1;
        d2.arena_bank = 1;
        expect_status(prepare(b, &d2), SP_ESLOT, "slot 1 at depth 1");
    } else {
        /* A free slot with the held bank is refused too. */
        d2.pipeline_slot = 1;
        expect_status(prepare(b, &d2), SP_EBUSY, "free slot, held bank");
        d2.pipeline_slot = 0;
        d2.arena_bank = 1;
        expect_status(prepare(b, &d2), SP_EBUSY, "held slot, free bank");
    }
    assert_zeroed(b, "after refused prepares");

    launch_wait_finalize(a);
    d2 = desc_for(2);
    expect_prepared(b, &d2); /* released by the finalize */
    launch_wait_finalize(b);
    free(a);
    free(b);
    close_and_check_leaks();
}

Test(lifecycle, no_callable_changes_while_prepared)
{
    void *run = storage_new();
    sp_run_descriptor d = desc_for(1);
    expect_prepared(run, &d);
    expect_status(register_example(CALLABLE_ID + 1), SP_EBUSY, "register while prepared");
    expect_status(m.simpler_unregister_callable(ctx, CALLABLE_ID), SP_EBUSY,
                  "unregister while prepared");
    expect_status(m.simpler_finalize_run(ctx, run), SP_OK, "finalize");
    expect_status(register_example(CALLABLE_ID + 1), SP_OK, "register after finalize");
    expect_status(m.simpler_unregister_callable(ctx, CALLABLE_ID + 1), SP_OK, "unregister");
    /* The callable the prepared run used is still there and runs. */
    expect_prepared(run, &d);
    launch_wait_finalize(run);
    free(run);
    close_and_check_leaks();
}

Test(lifecycle, launch_acceptance)
{
    void *run = storage_new();
    _Atomic uint64_t word = 7;
    sp_run_descriptor d = desc_for(1);
    d.accepted_state = &word;
    d.accepted_value = 0xacce97edull;
    /* Prepared, then finalized without a launch: never accepted. */
    expect_prepared(run, &d);
    cr_assert_eq(atomic_load(&word), 7, "prepare alone accepted the run");
    expect_status(m.simpler_finalize_run(ctx, run), SP_OK, "finalize");
    cr_assert_eq(atomic_load(&word), 7, "a never-launched run was accepted");
    /* Launched: accepted, with exactly the value given. */
    expect_prepared(run, &d);
    cr_assert_eq(atomic_load(&word), 7);
    clear_outputs();
    expect_status(m.simpler_launch_run(ctx, run), SP_OK, "launch");
    cr_assert_eq(atomic_load(&word), 0xacce97edull, "launch did not store accepted_value");
    /* A refused second launch does not store again. */
    atomic_store(&word, 1);
    expect_status(m.simpler_launch_run(ctx, run), SP_ESTATE, "second launch");
    cr_assert_eq(atomic_load(&word), 1);
    expect_status(m.simpler_wait_run(ctx, run, 30ull * 1000000000ull), SP_OK, "wait");
    finalize_and_check(run);
    free(run);
    close_and_check_leaks();
}

Test(lifecycle, unknown_callable)
{
    void *run = storage_new();
    sp_run_descriptor d = desc_for(RUN_ID);
    int rc = m.simpler_prepare_run(ctx, run, CALLABLE_ID + 7, &inst.args, NULL, &d);
    expect_status(rc, SP_ECALLABLE, "prepare of an unregistered callable");
    expect_identity(RUN_ID);
    rc = m.simpler_prepare_run(ctx, run, 100000, &inst.args, NULL, &d);
    expect_status(rc, SP_ECALLABLE, "prepare of a callable id out of range");
    assert_zeroed(run, "after refused prepares");
    expect_status(m.simpler_unregister_callable(ctx, CALLABLE_ID + 7), SP_ECALLABLE,
                  "unregister of an unknown callable");
    expect_status(register_example(CALLABLE_ID), SP_ECALLABLE, "register of a taken id");
    /* The context still runs. */
    expect_prepared(run, &d);
    launch_wait_finalize(run);
    free(run);
    close_and_check_leaks();
}

Test(lifecycle, errors_carry_the_run_identity)
{
    void *run = storage_new();
    sp_run_descriptor d = desc_for(RUN_ID);
    /* A failure inside the runtime's prepare: fewer arguments than the
     * orchestration's config asks for. */
    sp_args fewer = inst.args;
    fewer.scalar_count = 0;
    int rc = m.simpler_prepare_run(ctx, run, CALLABLE_ID, &fewer, NULL, &d);
    expect_status(rc, SP_EARGCOUNT, "prepare with too few arguments");
    expect_identity(RUN_ID);
    cr_assert_not_null(strstr(m.simpler_last_error(ctx), "SP_EARGCOUNT"));
    assert_zeroed(run, "after a failed prepare");
    /* The failed prepare released its slot. */
    expect_prepared(run, &d);
    launch_wait_finalize(run);
    free(run);
    close_and_check_leaks();
}
