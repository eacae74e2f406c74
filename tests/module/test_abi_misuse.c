/* Misuse of the module ABI and of the public worker API, on both runtime
 * modules: every SP_MODULE_SYMBOLS function called with a NULL context, a
 * NULL run or output, out-of-range ids, slots and banks, bad device
 * pointers, and in the wrong order (finalize without prepare, launch twice,
 * wait before launch, destroy a context with a run prepared or launched,
 * unregister a callable in use, another context's run); and the worker API
 * with a NULL worker, NULL or stale handles and bad ids. Each call must
 * return a named negative status (never "SP_E?", never a crash), and the
 * context or worker must still run correctly afterwards. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"
#include "simpler/status.h"
#include "simpler/worker.h"
#include "worker/module_loader.h"

static const char *const modules[2] = {SP_MODULE_DIR "/libsimpler_hbg_sim.so",
                                       SP_MODULE_DIR "/libsimpler_tmr_sim.so"};
#define VECTOR_SPC SP_BUILD_DIR "/examples/vector_example.spc"

static wk_module_api m;
static void *ctx;
static size_t run_bytes;
static ex_instance inst;

/* A named failure: negative, and a status sp_status_name knows. */
#define assert_named(call, want)                                                                   \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        cr_assert(rc_ < 0 && strcmp(sp_status_name(rc_), "SP_E?") != 0,                            \
                  "%s returned %d (%s), not a named status", #call, rc_, sp_status_name(rc_));     \
        cr_assert_eq(rc_, (want), "%s returned %s, want %s", #call, sp_status_name(rc_),           \
                     sp_status_name(want));                                                        \
    } while (0)

#define assert_ok(call)                                                                            \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        cr_assert_eq(rc_, SP_OK, "%s returned %s: %s", #call, sp_status_name(rc_),                 \
                     m.simpler_last_error(ctx));                                                   \
    } while (0)

static void quiet(int level, const char *line, void *user)
{
    (void)level, (void)line, (void)user; /* errors are expected here by the dozen */
}

static void *read_blob(const char *path, size_t *size)
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

static void example_args(void)
{
    char err[EX_ERR_LEN] = "";
    const ex_example *ex = ex_find("vector_example");
    cr_assert_not_null(ex);
    const char *small[] = {"n=1024", NULL};
    memset(&inst, 0, sizeof inst);
    cr_assert_eq(ex_instance_init(&inst, ex, "default", small, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ex->setup(&inst, err, sizeof err), 0, "%s", err);
}

static void check_outputs(void)
{
    double max_err;
    char why[EX_ERR_LEN] = "";
    cr_assert_eq(inst.example->check(&inst, &max_err, why, sizeof why), 0, "%s", why);
}

/* Module `mod` loaded, a context on device 0, vector_example as callable 1. */
static void open_module(int mod)
{
    char err[512] = "";
    cr_assert_eq(wk_module_open(modules[mod], &m, err, sizeof err), SP_OK, "%s", err);
    m.simpler_bind_logging(4 /* off */, quiet, NULL);
    size_t align;
    cr_assert_eq(m.simpler_run_storage_size(&run_bytes, &align), SP_OK);
    run_bytes = (run_bytes + 63) / 64 * 64;
    assert_ok(m.simpler_create_device_context(&ctx));
    assert_ok(m.simpler_init(ctx, 0, NULL, NULL));
    size_t size;
    void *blob = read_blob(VECTOR_SPC, &size);
    assert_ok(m.simpler_register_callable(ctx, 1, blob, size));
    free(blob);
    example_args();
}

static void close_module(void)
{
    if (ctx)
        assert_ok(m.simpler_destroy_device_context(ctx));
    ctx = NULL;
    wk_module_close(&m);
    ex_instance_free(&inst);
}

static void *new_run(void)
{
    void *r = aligned_alloc(64, run_bytes);
    cr_assert_not_null(r);
    memset(r, 0, run_bytes);
    return r;
}

static sp_run_descriptor desc(uint32_t slot, uint64_t id)
{
    return (sp_run_descriptor){
        .pipeline_slot = slot, .arena_bank = slot, .run_id = id, .dispatch_id = id};
}

ParameterizedTestParameters(abi_misuse, null_context)
{
    static int mods[] = {0, 1};
    return cr_make_param_array(int, mods, 2);
}

/* Every function that takes a context, given NULL. */
ParameterizedTest(int *mod, abi_misuse, null_context, .timeout = 60)
{
    open_module(*mod);
    void *run = new_run();
    sp_run_descriptor d = desc(0, 1);
    uint64_t dev = 0, buf[4] = {0};
    sp_run_stats st;
    sp_storage_probe probe;
    sp_run_trace tr;
    memset(&tr, 0, sizeof tr);
    size_t size;
    void *blob = read_blob(VECTOR_SPC, &size);
    assert_named(m.simpler_create_device_context(NULL), SP_EINVAL);
    assert_named(m.simpler_destroy_device_context(NULL), SP_EINVAL);
    assert_named(m.simpler_init(NULL, 0, NULL, NULL), SP_EINVAL);
    assert_named(m.simpler_finalize_device(NULL), SP_EINVAL);
    cr_assert_not_null(m.simpler_last_error(NULL));
    assert_named(m.simpler_device_malloc(NULL, 64, &dev), SP_EINVAL);
    assert_named(m.simpler_device_free(NULL, dev), SP_EINVAL);
    assert_named(m.simpler_copy_to_device(NULL, dev, buf, 8), SP_EINVAL);
    assert_named(m.simpler_copy_from_device(NULL, buf, dev, 8), SP_EINVAL);
    assert_named(m.simpler_run_storage_size(NULL, &size), SP_EINVAL);
    assert_named(m.simpler_run_storage_size(&size, NULL), SP_EINVAL);
    assert_named(m.simpler_register_callable(NULL, 2, blob, size), SP_EINVAL);
    assert_named(m.simpler_unregister_callable(NULL, 1), SP_EINVAL);
    assert_named(m.simpler_prepare_run(NULL, run, 1, &inst.args, NULL, &d), SP_EINVAL);
    assert_named(m.simpler_launch_run(NULL, run), SP_EINVAL);
    assert_named(m.simpler_poll_run(NULL, run), SP_EINVAL);
    assert_named(m.simpler_wait_run(NULL, run, 0), SP_EINVAL);
    assert_named(m.simpler_finalize_run(NULL, run), SP_EINVAL);
    assert_named(m.simpler_run(NULL, run, 1, &inst.args, NULL, &d), SP_EINVAL);
    assert_named(m.simpler_run_stats(NULL, run, &st), SP_EINVAL);
    assert_named(m.simpler_probe_storage(NULL, 0, 0, &probe), SP_EINVAL);
    assert_named(m.simpler_run_trace(NULL, run, &tr), SP_EINVAL);
    /* The same calls on a prepared run: a NULL context still touches nothing. */
    assert_ok(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &d));
    assert_named(m.simpler_launch_run(NULL, run), SP_EINVAL);
    assert_named(m.simpler_finalize_run(NULL, run), SP_EINVAL);
    assert_ok(m.simpler_launch_run(ctx, run));
    assert_ok(m.simpler_wait_run(ctx, run, 0));
    assert_ok(m.simpler_finalize_run(ctx, run));
    check_outputs();
    free(blob);
    free(run);
    close_module();
}

ParameterizedTestParameters(abi_misuse, context_without_a_device)
{
    static int mods[] = {0, 1};
    return cr_make_param_array(int, mods, 2);
}

/* A context that was created but never initialised has no device: every
 * call that needs one says so (SP_ESTATE); a bad device id fails init. */
ParameterizedTest(int *mod, abi_misuse, context_without_a_device, .timeout = 60)
{
    open_module(*mod);
    void *bare;
    assert_ok(m.simpler_create_device_context(&bare));
    void *run = new_run();
    sp_run_descriptor d = desc(0, 1);
    uint64_t dev = 0, buf[4] = {0};
    sp_storage_probe probe;
    size_t size;
    void *blob = read_blob(VECTOR_SPC, &size);
    assert_named(m.simpler_device_malloc(bare, 64, &dev), SP_ESTATE);
    assert_named(m.simpler_device_free(bare, 0x1000), SP_ESTATE);
    assert_named(m.simpler_copy_to_device(bare, 0x1000, buf, 8), SP_ESTATE);
    assert_named(m.simpler_copy_from_device(bare, buf, 0x1000, 8), SP_ESTATE);
    assert_named(m.simpler_register_callable(bare, 2, blob, size), SP_ESTATE);
    assert_named(m.simpler_unregister_callable(bare, 1), SP_ESTATE);
    assert_named(m.simpler_prepare_run(bare, run, 1, &inst.args, NULL, &d), SP_ESTATE);
    assert_named(m.simpler_run(bare, run, 1, &inst.args, NULL, &d), SP_ESTATE);
    assert_named(m.simpler_launch_run(bare, run), SP_ESTATE);
    assert_named(m.simpler_probe_storage(bare, 0, 0, &probe), SP_ESTATE);
    cr_assert(strstr(m.simpler_last_error(bare), "simpler_init") != NULL, "%s",
              m.simpler_last_error(bare));
    assert_named(m.simpler_init(bare, -1, NULL, NULL), SP_EINVAL);
    assert_named(m.simpler_init(bare, 64, NULL, NULL), SP_EINVAL);
    assert_named(m.simpler_init(bare, INT32_MAX, NULL, NULL), SP_EINVAL);
    sp_call_config geo = {.clusters = 100000};
    assert_named(m.simpler_init(bare, 5, &geo, NULL), SP_EGEOMETRY);
    assert_ok(m.simpler_destroy_device_context(bare));
    /* Attached twice: refused, the attached device is untouched. */
    assert_named(m.simpler_init(ctx, 0, NULL, NULL), SP_ESTATE);
    assert_ok(m.simpler_run(ctx, run, 1, &inst.args, NULL, &d));
    assert_ok(m.simpler_finalize_run(ctx, run));
    check_outputs();
    free(blob);
    free(run);
    close_module();
}

ParameterizedTestParameters(abi_misuse, null_and_out_of_range_arguments)
{
    static int mods[] = {0, 1};
    return cr_make_param_array(int, mods, 2);
}

ParameterizedTest(int *mod, abi_misuse, null_and_out_of_range_arguments, .timeout = 60)
{
    open_module(*mod);
    void *run = new_run();
    uint64_t dev = 0, buf[4] = {1, 2, 3, 4};
    sp_run_stats st;
    sp_storage_probe probe;
    size_t size;
    void *blob = read_blob(VECTOR_SPC, &size);

    /* Device memory: NULL outputs, zero and impossible sizes, bad pointers. */
    assert_named(m.simpler_device_malloc(ctx, 64, NULL), SP_EINVAL);
    assert_named(m.simpler_device_malloc(ctx, 0, &dev), SP_EINVAL);
    assert_named(m.simpler_device_malloc(ctx, UINT64_MAX, &dev), SP_EDEVMEM);
    assert_named(m.simpler_device_malloc(ctx, 1ull << 40, &dev), SP_EDEVMEM);
    assert_ok(m.simpler_device_malloc(ctx, 32, &dev));
    assert_named(m.simpler_copy_to_device(ctx, dev, NULL, 8), SP_EINVAL);
    assert_named(m.simpler_copy_from_device(ctx, NULL, dev, 8), SP_EINVAL);
    assert_named(m.simpler_copy_to_device(ctx, 0, buf, 8), SP_EBOUNDS);
    assert_named(m.simpler_copy_to_device(ctx, dev, buf, 33), SP_EBOUNDS);
    assert_named(m.simpler_copy_to_device(ctx, dev + 8, buf, UINT64_MAX - 4), SP_EBOUNDS);
    assert_named(m.simpler_copy_from_device(ctx, buf, dev - 8, 8), SP_EBOUNDS);
    assert_named(m.simpler_copy_from_device(ctx, buf, UINT64_MAX - 3, 8), SP_EBOUNDS);
    assert_ok(m.simpler_copy_to_device(ctx, dev, buf, 32));
    assert_named(m.simpler_device_free(ctx, 0), SP_EBADPTR);
    assert_named(m.simpler_device_free(ctx, dev + 8), SP_EBADPTR);
    assert_named(m.simpler_device_free(ctx, UINT64_MAX), SP_EBADPTR);
    assert_ok(m.simpler_device_free(ctx, dev));
    assert_named(m.simpler_device_free(ctx, dev), SP_EDOUBLEFREE);

    /* Callables: NULL or empty blobs, garbage, ids out of range or taken. */
    unsigned char junk[256];
    memset(junk, 0xa5, sizeof junk);
    assert_named(m.simpler_register_callable(ctx, 2, NULL, size), SP_EINVAL);
    assert_named(m.simpler_register_callable(ctx, 2, blob, 0), SP_EINVAL);
    assert_named(m.simpler_register_callable(ctx, 2, junk, sizeof junk), SP_EBLOB);
    assert_named(m.simpler_register_callable(ctx, 2, blob, size / 2), SP_EBLOB);
    assert_named(m.simpler_register_callable(ctx, 256, blob, size), SP_ECALLABLE);
    assert_named(m.simpler_register_callable(ctx, UINT32_MAX, blob, size), SP_ECALLABLE);
    assert_named(m.simpler_register_callable(ctx, 1, blob, size), SP_ECALLABLE);
    assert_named(m.simpler_unregister_callable(ctx, 2), SP_ECALLABLE);
    assert_named(m.simpler_unregister_callable(ctx, 256), SP_ECALLABLE);
    assert_named(m.simpler_unregister_callable(ctx, UINT32_MAX), SP_ECALLABLE);

    /* Prepare: NULL run, arguments, descriptor; misaligned or dirty
     * storage; unknown callables; slots and banks past the depth. */
    sp_run_descriptor d = desc(0, 1);
    assert_named(m.simpler_prepare_run(ctx, NULL, 1, &inst.args, NULL, &d), SP_EINVAL);
    assert_named(m.simpler_prepare_run(ctx, run, 1, NULL, NULL, &d), SP_EINVAL);
    assert_named(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, NULL), SP_EINVAL);
    assert_named(m.simpler_prepare_run(ctx, (char *)run + 8, 1, &inst.args, NULL, &d), SP_EINVAL);
    memset(run, 0x5a, run_bytes);
    assert_named(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &d), SP_ESTATE);
    assert_named(m.simpler_launch_run(ctx, run), SP_ESTATE);
    assert_named(m.simpler_finalize_run(ctx, run), SP_ESTATE);
    memset(run, 0, run_bytes);
    assert_named(m.simpler_prepare_run(ctx, run, 2, &inst.args, NULL, &d), SP_ECALLABLE);
    assert_named(m.simpler_prepare_run(ctx, run, 256, &inst.args, NULL, &d), SP_ECALLABLE);
    assert_named(m.simpler_prepare_run(ctx, run, UINT32_MAX, &inst.args, NULL, &d), SP_ECALLABLE);
    uint32_t bad_slots[] = {2, 8, UINT32_MAX};
    for (int i = 0; i < 3; i++) {
        sp_run_descriptor bs = desc(bad_slots[i], 1), bb = desc(0, 1);
        bb.arena_bank = bad_slots[i];
        assert_named(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &bs), SP_ESLOT);
        assert_named(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &bb), SP_ESLOT);
        assert_named(m.simpler_probe_storage(ctx, bad_slots[i], 0, &probe), SP_ESLOT);
        assert_named(m.simpler_probe_storage(ctx, 0, bad_slots[i], &probe), SP_ESLOT);
    }
    assert_named(m.simpler_probe_storage(ctx, 0, 0, NULL), SP_EINVAL);

    /* Arguments the staging refuses: too many, bad direction, NULL data. */
    sp_args bad = inst.args;
    bad.tensor_count = SP_MAX_RUN_TENSORS + 1;
    assert_named(m.simpler_prepare_run(ctx, run, 1, &bad, NULL, &d), SP_EINVAL);
    bad = inst.args;
    bad.scalar_count = UINT32_MAX;
    assert_named(m.simpler_prepare_run(ctx, run, 1, &bad, NULL, &d), SP_EINVAL);
    bad = inst.args;
    bad.dirs[0] = 99;
    assert_named(m.simpler_prepare_run(ctx, run, 1, &bad, NULL, &d), SP_EINVAL);
    bad = inst.args;
    bad.tensors[0].addr = 0;
    assert_named(m.simpler_prepare_run(ctx, run, 1, &bad, NULL, &d), SP_EINVAL);
    bad = inst.args;
    bad.tensors[0].dtype = 200;
    assert_named(m.simpler_prepare_run(ctx, run, 1, &bad, NULL, &d), SP_EDTYPE);

    /* Outputs of a run: NULL destinations. */
    assert_ok(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &d));
    assert_ok(m.simpler_launch_run(ctx, run));
    assert_ok(m.simpler_wait_run(ctx, run, 0));
    assert_named(m.simpler_run_stats(ctx, run, NULL), SP_EINVAL);
    assert_named(m.simpler_run_trace(ctx, run, NULL), SP_EINVAL);
    assert_named(m.simpler_launch_run(ctx, NULL), SP_EINVAL);
    assert_named(m.simpler_poll_run(ctx, NULL), SP_EINVAL);
    assert_named(m.simpler_wait_run(ctx, NULL, 0), SP_EINVAL);
    assert_named(m.simpler_finalize_run(ctx, NULL), SP_EINVAL);
    assert_named(m.simpler_run_stats(ctx, NULL, &st), SP_EINVAL);
    assert_named(m.simpler_run_trace(ctx, NULL, NULL), SP_EINVAL);
    assert_ok(m.simpler_run_stats(ctx, run, &st));
    assert_ok(m.simpler_finalize_run(ctx, run));
    check_outputs();
    free(blob);
    free(run);
    close_module();
}

ParameterizedTestParameters(abi_misuse, wrong_order)
{
    static int mods[] = {0, 1};
    return cr_make_param_array(int, mods, 2);
}

/* Every out-of-order call on the run state machine, then a run that passes. */
ParameterizedTest(int *mod, abi_misuse, wrong_order, .timeout = 60)
{
    open_module(*mod);
    void *run = new_run(), *other = new_run();
    sp_run_descriptor d = desc(0, 1);
    sp_run_stats st;
    sp_run_trace tr;
    memset(&tr, 0, sizeof tr);
    size_t size;
    void *blob = read_blob(VECTOR_SPC, &size);

    /* Nothing prepared. */
    assert_named(m.simpler_finalize_run(ctx, run), SP_ESTATE);
    assert_named(m.simpler_launch_run(ctx, run), SP_ESTATE);
    assert_named(m.simpler_wait_run(ctx, run, 0), SP_ESTATE);
    assert_named(m.simpler_poll_run(ctx, run), SP_ESTATE);
    assert_named(m.simpler_run_stats(ctx, run, &st), SP_ESTATE);
    assert_named(m.simpler_run_trace(ctx, run, &tr), SP_ESTATE);

    /* Prepared, not launched. */
    assert_ok(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &d));
    assert_named(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &d), SP_ESTATE);
    assert_named(m.simpler_wait_run(ctx, run, 0), SP_ESTATE);
    assert_named(m.simpler_poll_run(ctx, run), SP_ESTATE);
    assert_named(m.simpler_run_stats(ctx, run, &st), SP_ESTATE);
    assert_named(m.simpler_run_trace(ctx, run, &tr), SP_ESTATE);
    assert_named(m.simpler_unregister_callable(ctx, 1), SP_EBUSY);
    assert_named(m.simpler_register_callable(ctx, 2, blob, size), SP_EBUSY);
    assert_named(m.simpler_destroy_device_context(ctx), SP_EBUSY);
    assert_named(m.simpler_finalize_device(ctx), SP_EBUSY);
    /* The same slot again, or the same run id in the other slot. */
    assert_named(m.simpler_prepare_run(ctx, other, 1, &inst.args, NULL, &d), SP_EBUSY);
    sp_run_descriptor dup = desc(1, 1);
    assert_named(m.simpler_prepare_run(ctx, other, 1, &inst.args, NULL, &dup), SP_EDUPLICATE);

    /* Launched. */
    assert_ok(m.simpler_launch_run(ctx, run));
    assert_named(m.simpler_launch_run(ctx, run), SP_ESTATE);
    assert_named(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &d), SP_ESTATE);
    assert_named(m.simpler_unregister_callable(ctx, 1), SP_EBUSY);
    assert_named(m.simpler_destroy_device_context(ctx), SP_EBUSY);
    assert_named(m.simpler_finalize_device(ctx), SP_EBUSY);
    int frc = m.simpler_finalize_run(ctx, run);
    /* Finalize of a launched run is refused unless it already completed
     * (wait folded in by an earlier poll): EBUSY either way here. */
    cr_assert_eq(frc, SP_EBUSY, "finalize of a launched run: %s", sp_status_name(frc));

    /* Done: launch again, then finalize twice. */
    assert_ok(m.simpler_wait_run(ctx, run, 0));
    assert_named(m.simpler_launch_run(ctx, run), SP_ESTATE);
    assert_ok(m.simpler_wait_run(ctx, run, 0)); /* the kept result, again */
    assert_ok(m.simpler_poll_run(ctx, run));
    assert_ok(m.simpler_finalize_run(ctx, run));
    assert_named(m.simpler_finalize_run(ctx, run), SP_ESTATE);
    assert_named(m.simpler_wait_run(ctx, run, 0), SP_ESTATE);
    check_outputs();

    /* Another context's run: refused without touching either context. */
    void *ctx2;
    assert_ok(m.simpler_create_device_context(&ctx2));
    assert_ok(m.simpler_init(ctx2, 0, NULL, NULL));
    assert_ok(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &d));
    assert_named(m.simpler_launch_run(ctx2, run), SP_EINVAL);
    assert_named(m.simpler_finalize_run(ctx2, run), SP_EINVAL);
    assert_ok(m.simpler_destroy_device_context(ctx2));
    assert_ok(m.simpler_launch_run(ctx, run));
    assert_ok(m.simpler_wait_run(ctx, run, 0));
    assert_ok(m.simpler_finalize_run(ctx, run));
    check_outputs();

    /* Everything released: unregister and register again, then run. */
    assert_ok(m.simpler_unregister_callable(ctx, 1));
    assert_named(m.simpler_prepare_run(ctx, run, 1, &inst.args, NULL, &d), SP_ECALLABLE);
    assert_ok(m.simpler_register_callable(ctx, 1, blob, size));
    assert_ok(m.simpler_run(ctx, run, 1, &inst.args, NULL, &d));
    assert_ok(m.simpler_finalize_run(ctx, run));
    check_outputs();
    free(blob);
    free(run);
    free(other);
    close_module();
}

/* ---- the public worker API ---------------------------------------------- */

ParameterizedTestParameters(worker_misuse, null_and_bad_ids)
{
    static int mods[] = {0, 1};
    return cr_make_param_array(int, mods, 2);
}

ParameterizedTest(int *mod, worker_misuse, null_and_bad_ids, .timeout = 60)
{
    example_args();
    char err[512] = "";
    sp_worker *w = NULL;
    /* Opening: no path, no output, a bad device. */
    assert_named(sp_worker_open(NULL, NULL, &w, err, sizeof err), SP_EINVAL);
    assert_named(sp_worker_open(modules[*mod], NULL, NULL, err, sizeof err), SP_EINVAL);
    assert_named(sp_worker_open(modules[*mod], NULL, NULL, NULL, 100), SP_EINVAL);
    assert_named(sp_worker_open("/nonexistent/module.so", NULL, &w, NULL, 0), SP_EMODULE);
    sp_worker_options bad_dev = {.device_id = -1};
    assert_named(sp_worker_open(modules[*mod], &bad_dev, &w, err, sizeof err), SP_EINVAL);
    cr_assert_null(w);
    bad_dev.device_id = 1000;
    assert_named(sp_worker_open(modules[*mod], &bad_dev, &w, err, sizeof err), SP_EINVAL);

    /* Everything on a NULL worker. */
    sp_run_handle h;
    memset(&h, 0, sizeof h);
    sp_worker_close(NULL);
    assert_named(sp_worker_register_callable(NULL, 0, "x", 1), SP_EINVAL);
    assert_named(sp_worker_register_callable_file(NULL, 0, VECTOR_SPC), SP_EINVAL);
    assert_named(sp_worker_unregister_callable(NULL, 0), SP_EINVAL);
    assert_named(sp_worker_run(NULL, 0, &inst.args, NULL, NULL), SP_EINVAL);
    assert_named(sp_worker_submit(NULL, 0, &inst.args, NULL, &h), SP_EINVAL);
    assert_named(sp_worker_poll(NULL, &h), SP_EINVAL);
    assert_named(sp_worker_wait(NULL, &h, NULL), SP_EINVAL);
    cr_assert_eq(sp_worker_lane_depth(NULL), 0);
    cr_assert_null(sp_worker_last_trace(NULL));
    cr_assert_null(sp_worker_contract(NULL));
    cr_assert_not_null(sp_worker_last_error(NULL));

    cr_assert_eq(sp_worker_open(modules[*mod], NULL, &w, err, sizeof err), SP_OK, "%s", err);
    /* Callables: NULL, empty, unreadable, out of range, unknown. */
    assert_named(sp_worker_register_callable(w, 0, NULL, 0), SP_EINVAL);
    assert_named(sp_worker_register_callable(w, 0, "garbage", 7), SP_EBLOB);
    assert_named(sp_worker_register_callable_file(w, 0, NULL), SP_EINVAL);
    assert_named(sp_worker_register_callable_file(w, 0, "/nonexistent.spc"), SP_ESYS);
    assert_named(sp_worker_register_callable_file(w, 0, "/dev/null"), SP_ESYS);
    assert_named(sp_worker_register_callable_file(w, 0, "/"), SP_ESYS);
    assert_named(sp_worker_register_callable_file(w, 4096, VECTOR_SPC), SP_ECALLABLE);
    assert_named(sp_worker_unregister_callable(w, 0), SP_ECALLABLE);
    assert_named(sp_worker_unregister_callable(w, UINT32_MAX), SP_ECALLABLE);
    cr_assert_eq(sp_worker_register_callable_file(w, 0, VECTOR_SPC), SP_OK, "%s",
                 sp_worker_last_error(w));
    assert_named(sp_worker_register_callable_file(w, 0, VECTOR_SPC), SP_ECALLABLE);

    /* Runs: unknown callable, NULL arguments or handle output. */
    assert_named(sp_worker_run(w, 1, &inst.args, NULL, NULL), SP_ECALLABLE);
    assert_named(sp_worker_run(w, UINT32_MAX, &inst.args, NULL, NULL), SP_ECALLABLE);
    /* vector_example declares its arguments: no arguments at all is a run
     * that does not match them (a callable without a signature: SP_EINVAL). */
    assert_named(sp_worker_run(w, 0, NULL, NULL, NULL), SP_EARG_SIGNATURE);
    assert_named(sp_worker_submit(w, 0, &inst.args, NULL, NULL), SP_EINVAL);
    cr_assert(strlen(sp_worker_last_error(w)) > 0);

    /* Handles: NULL, zeroed, forged, waited twice. */
    assert_named(sp_worker_poll(w, NULL), SP_ESTALE);
    assert_named(sp_worker_wait(w, NULL, NULL), SP_ESTALE);
    assert_named(sp_worker_wait(w, &h, NULL), SP_ESTALE);
    sp_run_handle forged = {.run_id = 1, .epoch = 1, .generation = 1, .slot = 7};
    assert_named(sp_worker_poll(w, &forged), SP_ESTALE);
    assert_named(sp_worker_wait(w, &forged, NULL), SP_ESTALE);
    cr_assert_eq(sp_worker_submit(w, 0, &inst.args, NULL, &h), SP_OK, "%s",
                 sp_worker_last_error(w));
    forged = h;
    forged.generation++;
    assert_named(sp_worker_wait(w, &forged, NULL), SP_ESTALE);
    cr_assert_eq(sp_worker_wait(w, &h, NULL), SP_OK, "%s", sp_worker_last_error(w));
    assert_named(sp_worker_wait(w, &h, NULL), SP_ESTALE);
    assert_named(sp_worker_poll(w, &h), SP_ESTALE);
    check_outputs();

    /* In use: more runs than the lane holds, unregister while submitted. */
    uint32_t depth = sp_worker_lane_depth(w);
    sp_run_handle hs[2];
    for (uint32_t i = 0; i < depth; i++)
        cr_assert_eq(sp_worker_submit(w, 0, &inst.args, NULL, &hs[i]), SP_OK, "%s",
                     sp_worker_last_error(w));
    assert_named(sp_worker_submit(w, 0, &inst.args, NULL, &h), SP_EBUSY);
    assert_named(sp_worker_unregister_callable(w, 0), SP_EBUSY);
    for (uint32_t i = 0; i < depth; i++)
        cr_assert_eq(sp_worker_wait(w, &hs[i], NULL), SP_OK, "%s", sp_worker_last_error(w));
    check_outputs();
    cr_assert_eq(sp_worker_unregister_callable(w, 0), SP_OK, "%s", sp_worker_last_error(w));
    assert_named(sp_worker_run(w, 0, &inst.args, NULL, NULL), SP_ECALLABLE);

    /* Closing with runs submitted and never waited for: they run first. */
    cr_assert_eq(sp_worker_register_callable_file(w, 0, VECTOR_SPC), SP_OK, "%s",
                 sp_worker_last_error(w));
    for (uint32_t i = 0; i < depth; i++)
        cr_assert_eq(sp_worker_submit(w, 0, &inst.args, NULL, &hs[i]), SP_OK, "%s",
                     sp_worker_last_error(w));
    sp_worker_close(w);
    check_outputs();
    ex_instance_free(&inst);
}
