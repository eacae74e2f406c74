/* host_build_graph failures before launch, and the image's hygiene.
 *
 * Every way an orchestration can go wrong (tests/kernels/orch_faults.c, one
 * mode each) fails prepare with its named status and message: nothing is
 * launched (the acceptance word stays untouched, the run storage stays
 * zeroed), and the next good run on the same context passes.
 *
 * The poison test builds one graph twice through the orchestration ops,
 * each in a store whose image staging is pre-filled with a different byte:
 * the images are identical (every byte written), and every pointer-sized
 * word of the tensors and args sections lies in a device buffer of the run
 * (no host address reaches the device). A store reused across builds of
 * other graphs gives the same image as a fresh one, and a task whose
 * kernels resolved before (the run's lane memo), or whose views are like
 * one seen before (its view memo), is still checked whole. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "platform/device.h"
#include "runtime/host_build_graph/host/hbg_build.h"
#include "runtime/host_build_graph/host/hbg_image_write.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "worker/module_loader.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define CALLABLE_ID 1
#define GOOD_VALUE 0x5eedull

/* Modes of orch_faults.c. */
enum {
    MODE_GOOD = 0,
    MODE_FATAL = 1,
    MODE_BAD_DIRECTION = 2,
    MODE_NULL_TENSOR = 3,
    MODE_TOO_MANY_ARGS = 4,
    MODE_UNKNOWN_FUNC = 5,
    MODE_AIV_IN_AIC_TASK = 6,
    MODE_FUTURE_DEP = 7,
    MODE_SCOPE_LEFT_OPEN = 8,
    MODE_SCOPE_EXTRA_END = 9,
    MODE_ZERO_BLOCKS = 10,
    MODE_OUTSIDE_BUFFERS = 11,
    MODE_HUGE_OUTPUT = 12,
};

static wk_module_api m;
static void *ctx;
static void *run;
static size_t run_size;
static uint64_t x[8];
static sp_args args;
static uint64_t next_run_id;

static void build_callable(void **blob, size_t *size)
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
        .kernels = k,
        .kernel_count = 2,
    };
    char err[256] = "";
    int rc = sp_callable_build(&spec, blob, size, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "callable build: %s", err);
}

static void setup(void)
{
    char err[512] = "";
    cr_assert_eq(wk_module_open(HBG_MODULE, &m, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(m.simpler_bind_logging(4 /* off: failures are expected */, NULL, NULL), SP_OK);
    cr_assert_eq(m.simpler_create_device_context(&ctx), SP_OK);
    sp_call_config prewarm = {.clusters = 1, .sched_threads = 1};
    cr_assert_eq(m.simpler_init(ctx, 0, &prewarm, NULL), SP_OK, "%s", m.simpler_last_error(ctx));
    void *blob;
    size_t size;
    build_callable(&blob, &size);
    int rc = m.simpler_register_callable(ctx, CALLABLE_ID, blob, size);
    cr_assert_eq(rc, SP_OK, "%s", m.simpler_last_error(ctx));
    free(blob);
    size_t align;
    cr_assert_eq(m.simpler_run_storage_size(&run_size, &align), SP_OK);
    size_t bytes = (run_size + align - 1) / align * align;
    run = aligned_alloc(align, bytes);
    cr_assert_not_null(run);
    memset(run, 0, bytes);

    memset(&args, 0, sizeof args);
    const int64_t n = 8;
    cr_assert_eq(sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)x, SP_DTYPE_U64, 1, &n),
                 SP_OK);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalar_count = 1;
}

static void teardown(void)
{
    if (ctx)
        cr_assert_eq(m.simpler_destroy_device_context(ctx), SP_OK, "a run is still prepared");
    wk_module_close(&m);
    free(run);
}

TestSuite(hbg_errors, .init = setup, .fini = teardown);

static void assert_storage_zeroed(void)
{
    const unsigned char *p = run;
    for (size_t i = 0; i < run_size; i++)
        cr_assert_eq(p[i], 0, "run storage byte %zu left set by a failed prepare", i);
}

/* Prepare mode `mode` with `config`; on success launch, wait and finalize. */
static int run_mode(uint64_t mode, const sp_call_config *config, const sp_args *a)
{
    _Atomic uint64_t accepted = 0;
    sp_run_descriptor d = {
        .run_id = ++next_run_id, .accepted_state = &accepted, .accepted_value = 1};
    memset(x, 0, sizeof x);
    args.scalars[0] = mode;
    int rc = m.simpler_prepare_run(ctx, run, CALLABLE_ID, a, config, &d);
    if (rc) {
        cr_assert_eq(atomic_load(&accepted), 0, "a failed prepare launched the run");
        assert_storage_zeroed();
        return rc;
    }
    rc = m.simpler_launch_run(ctx, run);
    cr_assert_eq(rc, SP_OK, "launch: %s", m.simpler_last_error(ctx));
    cr_assert_eq(atomic_load(&accepted), 1);
    rc = m.simpler_wait_run(ctx, run, 30ull * 1000000000ull);
    int fin = m.simpler_finalize_run(ctx, run);
    cr_assert_eq(fin, SP_OK, "finalize: %s", m.simpler_last_error(ctx));
    return rc;
}

static void expect_good_run(void)
{
    int rc = run_mode(MODE_GOOD, NULL, &args);
    cr_assert_eq(rc, SP_OK, "good run: %s: %s", sp_status_name(rc), m.simpler_last_error(ctx));
    cr_assert_eq(x[0], GOOD_VALUE, "the good run's kernel did not write x[0]");
}

/* Mode `mode` fails prepare with `status` and a message containing `what`;
 * then a good run on the same context passes. */
static void expect_fault(uint64_t mode, const sp_call_config *config, int status, const char *what)
{
    int rc = run_mode(mode, config, &args);
    const char *msg = m.simpler_last_error(ctx);
    cr_assert_eq(rc, status, "mode %llu: got %s, expected %s (%s)", (unsigned long long)mode,
                 sp_status_name(rc), sp_status_name(status), msg);
    cr_assert_not_null(strstr(msg, sp_status_name(status)), "'%s' does not name the status", msg);
    cr_assert_not_null(strstr(msg, what), "'%s' does not say '%s'", msg, what);
    cr_assert_eq(x[0], 0, "a failed run wrote its output");
    expect_good_run();
}

Test(hbg_errors, good_run_passes)
{
    expect_good_run();
    expect_good_run();
}

Test(hbg_errors, explicit_fatal)
{
    expect_fault(MODE_FATAL, NULL, SP_EORCH_FATAL, "the input is unusable (code 42)");
}

Test(hbg_errors, bad_direction)
{
    expect_fault(MODE_BAD_DIRECTION, NULL, SP_ETASK_ARGS, "direction 9");
}

Test(hbg_errors, null_tensor)
{
    expect_fault(MODE_NULL_TENSOR, NULL, SP_ETASK_ARGS, "NULL");
}

Test(hbg_errors, too_many_arguments)
{
    expect_fault(MODE_TOO_MANY_ARGS, NULL, SP_ETASK_ARGS, "more than 32 tensors");
}

Test(hbg_errors, unknown_func_id)
{
    expect_fault(MODE_UNKNOWN_FUNC, NULL, SP_EFUNC_ID, "func_id 77");
}

Test(hbg_errors, aiv_kernel_in_an_aic_task)
{
    expect_fault(MODE_AIV_IN_AIC_TASK, NULL, SP_ETASK_ARGS, "callable_fill");
}

Test(hbg_errors, dependency_on_a_future_task)
{
    expect_fault(MODE_FUTURE_DEP, NULL, SP_EDEP, "dependency 5");
}

Test(hbg_errors, scope_left_open)
{
    expect_fault(MODE_SCOPE_LEFT_OPEN, NULL, SP_ESCOPE, "scope");
}

Test(hbg_errors, scope_end_without_begin)
{
    expect_fault(MODE_SCOPE_EXTRA_END, NULL, SP_ESCOPE, "scope_end");
}

Test(hbg_errors, zero_blocks)
{
    expect_fault(MODE_ZERO_BLOCKS, NULL, SP_ETASK_ARGS, "block_num 0");
}

Test(hbg_errors, tensor_outside_every_buffer)
{
    expect_fault(MODE_OUTSIDE_BUFFERS, NULL, SP_EBOUNDS, "0x40");
}

Test(hbg_errors, output_larger_than_the_heap)
{
    sp_call_config cfg = {.heap_bytes = 64 << 10};
    expect_fault(MODE_HUGE_OUTPUT, &cfg, SP_EDEVMEM, "heap");
}

Test(hbg_errors, heap_larger_than_the_device)
{
    /* The heap itself cannot be committed: named, before the graph exists. */
    sp_call_config cfg = {.heap_bytes = 1ull << 44};
    expect_fault(MODE_GOOD, &cfg, SP_EDEVMEM, "heap");
}

Test(hbg_errors, fewer_arguments_than_the_config)
{
    sp_args fewer = args;
    fewer.scalar_count = 0;
    int rc = run_mode(MODE_GOOD, NULL, &fewer);
    cr_assert_eq(rc, SP_EARGCOUNT, "got %s (%s)", sp_status_name(rc), m.simpler_last_error(ctx));
    cr_assert_not_null(strstr(m.simpler_last_error(ctx), "expects 1 tensors and 1 scalars"), "%s",
                       m.simpler_last_error(ctx));
    expect_good_run();
}

/* ---- the poison test ---------------------------------------------------- */

typedef struct region {
    uint64_t lo, hi;
} region;

static sp_device *pdev;
static sp_host_api papi;
static rt_loaded_callable plc;
static rt_loaded_kernel pkernels[3];
static uint64_t xdev, kernel_table;
static sp_arena parena;
#define HEAP_BYTES (1ull << 20)
#define XN 1024

/* One graph of every kind of task and argument, built through the ops,
 * its arrays and image staging in `store`. */
static void build_graph(hbg_graph *g, const hbg_buffer *xbuf, rt_host_scratch *store)
{
    cr_assert_eq(hbg_graph_init(g, &papi, &plc, parena.heap, HEAP_BYTES, xbuf, 1, store), SP_OK);
    sp_orch *o = &g->orch;
    const int64_t xn = XN, n = 256;
    sp_tensor xt;
    cr_assert_eq(sp_tensor_init(&xt, xdev, SP_DTYPE_F32, 1, &xn), SP_OK);
    sp_tensor a = sp_tensor_spec(SP_DTYPE_F32, 1, &n), b = a, xs;
    cr_assert_eq(sp_tensor_slice(&xt, 0, 128, 256, &xs), SP_OK);

    sp_task t = sp_task_aiv(0);
    sp_task_in(&t, &xt);
    sp_task_out(&t, &a);
    sp_task_scalar(&t, 3);
    int64_t t0 = sp_submit(o, &t);
    t = sp_task_aic(1);
    sp_task_in(&t, &a);
    sp_task_out(&t, &b);
    sp_task_blocks(&t, 3);
    int64_t t1 = sp_submit(o, &t);
    t = sp_task_mix(1, 0, 2);
    sp_task_in(&t, &a);
    sp_task_in(&t, &b);
    sp_task_inout(&t, &xs);
    sp_task_scalar(&t, 1);
    sp_task_scalar_f32(&t, 0.5f);
    int64_t t2 = sp_submit(o, &t);
    const int64_t deps[2] = {t0, t2};
    int64_t t3 = sp_submit_dummy(o, deps, 2);
    t = sp_task_aiv(2);
    sp_task_arg(&t, &a, SP_NO_DEP);
    sp_task_arg(&t, &xt, SP_OUT_EXISTING);
    int64_t t4 = sp_submit(o, &t);
    cr_assert_eq(sp_scope_begin(o, SP_SCOPE_MANUAL), SP_OK);
    t = sp_task_aiv(0);
    sp_task_in(&t, &b);
    sp_task_dep(&t, t1);
    int64_t t5 = sp_submit(o, &t);
    cr_assert_eq(sp_scope_end(o), SP_OK);
    cr_assert(t0 == 0 && t1 == 1 && t2 == 2 && t3 == 3 && t4 == 4 && t5 == 5, "submit failed: %s",
              g->message);
    cr_assert_eq(hbg_graph_finish(g), SP_OK, "%s", g->message);
}

static bool in_regions(uint64_t w, const region *r, int n)
{
    for (int i = 0; i < n; i++)
        if (w >= r[i].lo && w < r[i].hi)
            return true;
    return false;
}

/* A device, an argument buffer, a heap and a callable by hand: func_id 0
 * and 2 AIV, 1 AIC; no binaries needed. */
static void hand_rig_open(hbg_buffer *xbuf)
{
    sp_device_options opt;
    memset(&opt, 0, sizeof opt);
    opt.geometry.clusters = 1;
    opt.geometry.aicpu_threads = 2;
    cr_assert_eq(sp_device_open(7, &opt, &pdev), SP_OK);
    cr_assert_eq(sp_device_bind_host_api(pdev, 0, 0, &papi), SP_OK);
    cr_assert_eq(sp_host_malloc(&papi, XN * sizeof(float), &xdev), SP_OK);
    cr_assert_eq(sp_host_malloc(&papi, 64, &kernel_table), SP_OK);
    sp_arena_request req = {.heap_bytes = HEAP_BYTES};
    cr_assert_eq(sp_host_arena_commit(&papi, &req, &parena), SP_OK);
    memset(&plc, 0, sizeof plc);
    for (int k = 0; k < 3; k++) {
        pkernels[k] = (rt_loaded_kernel){.func_id = k,
                                         .core_type = k == 1 ? SP_CORE_AIC : SP_CORE_AIV,
                                         .entry = "k",
                                         .signature = ""};
        plc.by_func_id[k] = (int16_t)(k + 1);
    }
    plc.kernels = pkernels;
    plc.kernel_count = 3;
    plc.kernel_table = kernel_table;
    *xbuf = (hbg_buffer){.dev = xdev, .bytes = XN * sizeof(float)};
}

static void hand_rig_close(void)
{
    sp_host_free(&papi, xdev);
    sp_host_free(&papi, kernel_table);
    sp_device_close(pdev);
}

static void store_free(rt_host_scratch *store)
{
    for (int b = 0; b < HBG_STORE_BUFFERS; b++)
        free(store[b].ptr);
}

Test(hbg_errors, poisoned_staging_leaves_no_trace_in_the_image)
{
    hbg_buffer xbuf;
    hand_rig_open(&xbuf);
    sp_arena_request req = {.heap_bytes = HEAP_BYTES};

    /* Two stores whose image staging starts out poisoned with different
     * bytes: the build writes the descriptors into it, the image write the
     * rest, so two builds of one graph must agree on every byte. */
    enum { POISONED = 1 << 16 };
    rt_host_scratch store1[HBG_STORE_BUFFERS] = {{0}}, store2[HBG_STORE_BUFFERS] = {{0}};
    store1[HBG_STORE_IMAGE] = (rt_host_scratch){.ptr = malloc(POISONED), .cap = POISONED};
    store2[HBG_STORE_IMAGE] = (rt_host_scratch){.ptr = malloc(POISONED), .cap = POISONED};
    cr_assert(store1[HBG_STORE_IMAGE].ptr && store2[HBG_STORE_IMAGE].ptr);
    memset(store1[HBG_STORE_IMAGE].ptr, 0xA5, POISONED);
    memset(store2[HBG_STORE_IMAGE].ptr, 0x5A, POISONED);
    hbg_graph g1, g2;
    hbg_layout l1, l2;
    build_graph(&g1, &xbuf, store1);
    build_graph(&g2, &xbuf, store2);
    cr_assert_eq(hbg_layout_compute(&g1, &l1), SP_OK);
    cr_assert_eq(hbg_layout_compute(&g2, &l2), SP_OK);
    cr_assert_eq(memcmp(&l1, &l2, sizeof l1), 0, "two builds of one graph differ in layout");
    cr_assert(l1.total <= POISONED, "the image outgrew the poisoned staging");
    req.image_bytes = l1.total;
    cr_assert_eq(sp_host_arena_commit(&papi, &req, &parena), SP_OK);

    cr_assert_eq(hbg_image_write(&g1, &l1, parena.image, kernel_table, 3, 0), SP_OK);
    cr_assert_eq(hbg_image_write(&g2, &l2, parena.image, kernel_table, 3, 0), SP_OK);
    const uint8_t *s1 = hbg_image_of(&g1), *s2 = hbg_image_of(&g2);
    for (uint64_t i = 0; i < l1.total; i++)
        cr_assert_eq(s1[i], s2[i], "image byte %llu of %llu was never written (0x%02x vs 0x%02x)",
                     (unsigned long long)i, (unsigned long long)l1.total, s1[i], s2[i]);

    const hbg_image *h = (const hbg_image *)s1;
    cr_assert_eq(h->magic, HBG_IMAGE_MAGIC);
    cr_assert_eq(h->task_count, 6);
    cr_assert_eq(h->edge_count, hbg_graph_edge_count(&g1));
    cr_assert_eq(h->total_bytes, l1.total);
    cr_assert_eq(h->kernel_table, kernel_table);

    /* Where device addresses may point: the run's buffers, the heap, the
     * image itself (tensor descriptors) and the kernel table. */
    const region dev[] = {
        {xdev, xdev + XN * sizeof(float)},
        {parena.heap, parena.heap + HEAP_BYTES},
        {parena.image, parena.image + l1.total},
        {kernel_table, kernel_table + 64},
    };
    /* Tensors and args sections, alignment gaps included: every word that
     * looks like a user-space address (>= 4 GiB, below the kernel half)
     * must be one of those device addresses. */
    uint64_t pointers = 0;
    const uint64_t scan[2][2] = {{l1.tensors_off, l1.tasks_off}, {l1.args_off, l1.slots_off[0]}};
    for (int r = 0; r < 2; r++)
        for (uint64_t off = scan[r][0]; off < scan[r][1]; off += 8) {
            /* A descriptor's version/dtype/ndim/flags word is no address. */
            if (r == 0 &&
                (off - l1.tensors_off) % sizeof(sp_tensor) == offsetof(sp_tensor, version))
                continue;
            uint64_t w;
            memcpy(&w, s1 + off, sizeof w);
            if (w < (1ull << 32) || w >= (1ull << 47))
                continue;
            cr_assert(in_regions(w, dev, 4),
                      "image word at offset %llu (%s section) is 0x%llx: not a device address of "
                      "this run",
                      (unsigned long long)off, r == 0 ? "tensors" : "args", (unsigned long long)w);
            pointers++;
        }
    /* The scan saw what it had to: one descriptor address per tensor
     * argument, one buffer address per descriptor. */
    cr_assert_eq(pointers, 2ull * g1.tensor_count, "%llu pointer words for %u tensor arguments",
                 (unsigned long long)pointers, g1.tensor_count);
    const uint64_t *argw = (const uint64_t *)(s1 + l1.args_off);
    const hbg_task *tasks = (const hbg_task *)(s1 + l1.tasks_off);
    for (uint32_t i = 0; i < h->task_count; i++) {
        const hbg_build_task *bt = &g1.tasks[i];
        cr_assert_eq(tasks[i].args_begin, bt->args_begin);
        for (int k = 0; k < bt->tensor_count; k++) {
            uint64_t desc = argw[bt->args_begin + k];
            uint64_t first = parena.image + l1.tensors_off;
            cr_assert(desc >= first && (desc - first) % sizeof(sp_tensor) == 0 &&
                          (desc - first) / sizeof(sp_tensor) < g1.tensor_count,
                      "task %u argument %d is not a descriptor inside the image", i, k);
        }
    }

    hbg_graph_free(&g1);
    hbg_graph_free(&g2);
    store_free(store1);
    store_free(store2);
    hand_rig_close();
}

/* `n` AIV tasks each read-writing its own element of x: n descriptors and
 * n TensorMap entries, no edges. */
static void build_wide(hbg_graph *g, const hbg_buffer *xbuf, rt_host_scratch *store, int n)
{
    cr_assert_eq(hbg_graph_init(g, &papi, &plc, parena.heap, HEAP_BYTES, xbuf, 1, store), SP_OK);
    const int64_t xn = XN;
    sp_tensor xt, e;
    cr_assert_eq(sp_tensor_init(&xt, xdev, SP_DTYPE_F32, 1, &xn), SP_OK);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(sp_tensor_slice(&xt, 0, i, 1, &e), SP_OK);
        sp_task t = sp_task_aiv(0);
        sp_task_inout(&t, &e);
        cr_assert_eq(sp_submit(&g->orch, &t), i, "%s", g->message);
    }
    cr_assert_eq(hbg_graph_finish(g), SP_OK, "%s", g->message);
}

/* The image of `g` for one fixed device address, copied out of its store. */
static uint8_t *image_copy(hbg_graph *g, hbg_layout *l)
{
    cr_assert_eq(hbg_layout_compute(g, l), SP_OK);
    cr_assert_eq(hbg_image_write(g, l, 0x7e5700000000ull, kernel_table, 3, 0), SP_OK);
    uint8_t *copy = malloc(l->total);
    cr_assert_not_null(copy);
    memcpy(copy, hbg_image_of(g), l->total);
    return copy;
}

Test(hbg_errors, a_reused_store_builds_the_same_image_as_a_fresh_one)
{
    /* A slot's store outlives its builds: after a wider graph (more tasks,
     * descriptors and TensorMap entries) and the graph itself, the graph's
     * image is byte for byte the one a fresh store gives. */
    hbg_buffer xbuf;
    hand_rig_open(&xbuf);
    rt_host_scratch fresh[HBG_STORE_BUFFERS] = {{0}}, reused[HBG_STORE_BUFFERS] = {{0}};
    hbg_graph g;
    hbg_layout lf, lr;
    build_graph(&g, &xbuf, fresh);
    uint8_t *want = image_copy(&g, &lf);
    hbg_graph_free(&g);

    build_wide(&g, &xbuf, reused, XN);
    free(image_copy(&g, &lr));
    hbg_graph_free(&g);
    build_graph(&g, &xbuf, reused);
    hbg_graph_free(&g);
    build_wide(&g, &xbuf, reused, XN / 4);
    hbg_graph_free(&g);
    build_graph(&g, &xbuf, reused);
    uint8_t *got = image_copy(&g, &lr);
    cr_assert_eq(memcmp(&lf, &lr, sizeof lf), 0, "the reused store's layout differs");
    for (uint64_t i = 0; i < lf.total; i++)
        cr_assert_eq(got[i], want[i], "image byte %llu of %llu differs after reuse",
                     (unsigned long long)i, (unsigned long long)lf.total);
    hbg_graph_free(&g);
    free(want);
    free(got);
    store_free(fresh);
    store_free(reused);
    hand_rig_close();
}

Test(hbg_errors, a_task_that_resolved_before_is_still_checked_whole)
{
    /* The second task names the kernel the first resolved (its lanes come
     * from the run's memo), yet breaks its signature: named, not accepted. */
    hbg_buffer xbuf;
    hand_rig_open(&xbuf);
    pkernels[0].signature = "xs";
    hbg_graph g;
    cr_assert_eq(hbg_graph_init(&g, &papi, &plc, parena.heap, HEAP_BYTES, &xbuf, 1, NULL), SP_OK);
    const int64_t xn = XN;
    sp_tensor xt;
    cr_assert_eq(sp_tensor_init(&xt, xdev, SP_DTYPE_F32, 1, &xn), SP_OK);
    sp_task t = sp_task_aiv(0);
    sp_task_inout(&t, &xt);
    sp_task_scalar(&t, 1);
    cr_assert_eq(sp_submit(&g.orch, &t), 0, "%s", g.message);
    cr_assert_eq(sp_submit(&g.orch, &t), 1, "%s", g.message);
    t = sp_task_aiv(0);
    sp_task_in(&t, &xt);
    sp_task_scalar(&t, 1);
    cr_assert_eq(sp_submit(&g.orch, &t), SP_ETASK_ARGS);
    cr_assert_not_null(strstr(g.message, "task 2: kernel 'k' argument 0 is 'x'"), "%s", g.message);
    hbg_graph_free(&g);

    cr_assert_eq(hbg_graph_init(&g, &papi, &plc, parena.heap, HEAP_BYTES, &xbuf, 1, NULL), SP_OK);
    t = sp_task_aiv(0);
    sp_task_inout(&t, &xt);
    sp_task_scalar(&t, 1);
    cr_assert_eq(sp_submit(&g.orch, &t), 0, "%s", g.message);
    t = sp_task_aiv(0);
    sp_task_inout(&t, &xt);
    cr_assert_eq(sp_submit(&g.orch, &t), SP_ETASK_ARGS);
    cr_assert_not_null(strstr(g.message, "takes 2 arguments"), "%s", g.message);
    hbg_graph_free(&g);
    pkernels[0].signature = "";
    hand_rig_close();
}

Test(hbg_errors, a_view_like_an_earlier_one_is_still_checked)
{
    /* Element views of x share one class (buffer, dtype, shape, strides),
     * which the run remembers: one whose offset runs past the buffer is
     * still refused by name, and so is one whose buffer has moved. */
    hbg_buffer xbuf;
    hand_rig_open(&xbuf);
    hbg_graph g;
    const int64_t xn = XN;
    sp_tensor xt, e;
    cr_assert_eq(sp_tensor_init(&xt, xdev, SP_DTYPE_F32, 1, &xn), SP_OK);
    const int64_t bad_offset[2] = {XN, -1};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(hbg_graph_init(&g, &papi, &plc, parena.heap, HEAP_BYTES, &xbuf, 1, NULL),
                     SP_OK);
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(sp_tensor_slice(&xt, 0, XN - 1 - i, 1, &e), SP_OK);
            sp_task t = sp_task_aiv(0);
            sp_task_in(&t, &e);
            cr_assert_eq(sp_submit(&g.orch, &t), i, "%s", g.message);
        }
        e.offset = bad_offset[k];
        sp_task t = sp_task_aiv(0);
        sp_task_in(&t, &e);
        cr_assert_eq(sp_submit(&g.orch, &t), SP_ESHAPE, "offset %lld passed",
                     (long long)bad_offset[k]);
        cr_assert_not_null(strstr(g.message, "leaves its"), "%s", g.message);
        hbg_graph_free(&g);
    }
    cr_assert_eq(hbg_graph_init(&g, &papi, &plc, parena.heap, HEAP_BYTES, &xbuf, 1, NULL), SP_OK);
    cr_assert_eq(sp_tensor_slice(&xt, 0, 0, 1, &e), SP_OK);
    sp_task t = sp_task_aiv(0);
    sp_task_in(&t, &e);
    cr_assert_eq(sp_submit(&g.orch, &t), 0, "%s", g.message);
    e.addr += XN * sizeof(float);
    cr_assert_eq(sp_submit(&g.orch, &t), SP_EBOUNDS, "a view of a moved buffer passed");
    cr_assert_not_null(strstr(g.message, "in no device buffer"), "%s", g.message);
    hbg_graph_free(&g);
    hand_rig_close();
}
