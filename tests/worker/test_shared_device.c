/* Several contexts of one runtime module on one device id (issue 12, item
 * 2). The device owns the run storage (SP_DEVICE_STORAGE_SLOTS retained
 * buffers and arena banks) and every run in flight leases its own, so two
 * workers on device 0 never read each other's inputs or write each other's
 * outputs, and a launch's result is kept for its own run however soon
 * another context launches. Checked on both runtimes:
 *
 * - two workers driven from one thread, each with two runs in flight;
 * - two workers, one per thread, submitting and waiting independently;
 * - the raw module ABI: two contexts prepared and launched back to back
 *   from one thread before either is waited for;
 * - more runs in flight than the device has storage: the next prepare is
 *   SP_EBUSY naming the limit, and passes once one is finalized.
 *
 * Every run's output is compared with what its own input gives
 * (tests/kernels/orch_rows.c: out[r][j] = in[r][j] + r + 1); inputs differ
 * per worker and per run, outputs start poisoned. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/device.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"
#include "worker/module_loader.h"

#define ROWS 16
#define COLS 256
#define POISON 0xdeaddeaddeaddeadull

static const char *const modules[] = {SP_MODULE_DIR "/libsimpler_hbg_sim.so",
                                      SP_MODULE_DIR "/libsimpler_tmr_sim.so"};

/* One run's host tensors and arguments. */
typedef struct job {
    uint64_t in[ROWS][COLS];
    uint64_t out[ROWS][COLS];
    sp_args args;
} job;

static void callable_blob(void **blob, size_t *size)
{
    sp_callable_kernel_spec k = {.func_id = 0,
                                 .core_type = SP_CORE_AIV,
                                 .path = SP_TEST_KERNEL_DIR "/row_add.so",
                                 .entry = "row_add"};
    sp_callable_spec spec = {
        .orch_path = SP_TEST_KERNEL_DIR "/orch_rows.so",
        .orch_entry = "orch_rows",
        .orch_config = "orch_rows_config",
        .kernels = &k,
        .kernel_count = 1,
    };
    char err[256] = "";
    cr_assert_eq(sp_callable_build(&spec, blob, size, err, sizeof err), SP_OK, "%s", err);
}

/* Fill the input from (who, run); poison the output. */
static void job_init(job *j, uint64_t who, uint64_t run)
{
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            j->in[r][c] = (who << 48) ^ (run << 20) ^ ((uint64_t)r << 10) ^ (uint64_t)c;
            j->out[r][c] = POISON;
        }
    memset(&j->args, 0, sizeof j->args);
    const int64_t shape[2] = {ROWS, COLS};
    sp_tensor_init(&j->args.tensors[0], (uint64_t)(uintptr_t)j->in, SP_DTYPE_U64, 2, shape);
    sp_tensor_init(&j->args.tensors[1], (uint64_t)(uintptr_t)j->out, SP_DTYPE_U64, 2, shape);
    j->args.dirs[0] = SP_IN;
    j->args.dirs[1] = SP_OUT;
    j->args.tensor_count = 2;
}

/* Elements of the output that are not what this job's own input gives. */
static int job_mismatches(const job *j)
{
    int bad = 0;
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            bad += j->out[r][c] != j->in[r][c] + (uint64_t)r + 1;
    return bad;
}

static sp_worker *open_worker(const char *module)
{
    sp_worker *w;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    void *blob;
    size_t size;
    callable_blob(&blob, &size);
    int rc = sp_worker_register_callable(w, 0, blob, size);
    free(blob);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    return w;
}

ParameterizedTestParameters(shared_device, two_workers_from_one_thread)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, shared_device, two_workers_from_one_thread, .timeout = 240)
{
    sp_worker *w[2] = {open_worker(modules[*mod]), open_worker(modules[*mod])};
    cr_assert_eq(sp_worker_lane_depth(w[0]), 2);
    static job jobs[2][2];
    for (uint64_t it = 0; it < 150; it++) {
        sp_run_handle h[2][2];
        /* Every worker submits both its runs before anyone waits. */
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 2; i++) {
                job_init(&jobs[i][k], (uint64_t)i + 1, it * 2 + (uint64_t)k);
                cr_assert_eq(sp_worker_submit(w[i], 0, &jobs[i][k].args, NULL, &h[i][k]), SP_OK,
                             "iteration %llu: worker %d submit %d: %s", (unsigned long long)it, i,
                             k, sp_worker_last_error(w[i]));
            }
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 2; i++) {
                int rc = sp_worker_wait(w[i], &h[i][k], NULL);
                cr_assert_eq(rc, SP_OK, "iteration %llu: worker %d run %d: %s: %s",
                             (unsigned long long)it, i, k, sp_status_name(rc),
                             sp_worker_last_error(w[i]));
                int bad = job_mismatches(&jobs[i][k]);
                cr_assert_eq(bad, 0,
                             "%s, iteration %llu: worker %d run %d has %d wrong elements "
                             "(another run's inputs or outputs)",
                             modules[*mod], (unsigned long long)it, i, k, bad);
            }
    }
    sp_worker_close(w[0]);
    sp_worker_close(w[1]);
}

typedef struct thread_arg {
    sp_worker *w;
    uint64_t who;
    int failures;
    char first[512];
    job jobs[2];
} thread_arg;

static void *worker_thread(void *p)
{
    thread_arg *a = p;
    for (uint64_t it = 0; it < 150 && !a->failures; it++) {
        sp_run_handle h[2];
        int rc = SP_OK;
        for (int k = 0; k < 2 && rc == SP_OK; k++) {
            job_init(&a->jobs[k], a->who, it * 2 + (uint64_t)k);
            rc = sp_worker_submit(a->w, 0, &a->jobs[k].args, NULL, &h[k]);
        }
        for (int k = 0; k < 2 && rc == SP_OK; k++)
            if ((rc = sp_worker_wait(a->w, &h[k], NULL)) == SP_OK && job_mismatches(&a->jobs[k]))
                rc = SP_EINVAL;
        if (rc == SP_EINVAL)
            snprintf(a->first, sizeof a->first, "iteration %llu: wrong output",
                     (unsigned long long)it);
        else if (rc)
            snprintf(a->first, sizeof a->first, "iteration %llu: %s: %s", (unsigned long long)it,
                     sp_status_name(rc), sp_worker_last_error(a->w));
        a->failures += rc != SP_OK;
    }
    return NULL;
}

ParameterizedTestParameters(shared_device, two_workers_from_two_threads)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, shared_device, two_workers_from_two_threads, .timeout = 240)
{
    static thread_arg a[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].w = open_worker(modules[*mod]);
        a[i].who = (uint64_t)i + 1;
    }
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, worker_thread, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(a[i].failures, 0, "%s: worker %d: %s", modules[*mod], i, a[i].first);
        sp_worker_close(a[i].w);
    }
}

/* ---- the raw module ABI ------------------------------------------------ */

typedef struct raw_ctx {
    void *ctx;
    void *run[2];
} raw_ctx;

static wk_module_api m;
static size_t run_size, run_align;

static void raw_open(const char *module, raw_ctx *r, int n)
{
    char err[512] = "";
    cr_assert_eq(wk_module_open(module, &m, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(m.simpler_bind_logging(4 /* off: refusals are expected */, NULL, NULL), SP_OK);
    cr_assert_eq(m.simpler_run_storage_size(&run_size, &run_align), SP_OK);
    void *blob;
    size_t size;
    callable_blob(&blob, &size);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(m.simpler_create_device_context(&r[i].ctx), SP_OK);
        cr_assert_eq(m.simpler_init(r[i].ctx, 0, NULL, NULL), SP_OK, "%s",
                     m.simpler_last_error(r[i].ctx));
        cr_assert_eq(m.simpler_register_callable(r[i].ctx, 1, blob, size), SP_OK, "%s",
                     m.simpler_last_error(r[i].ctx));
        for (int s = 0; s < 2; s++) {
            size_t bytes = (run_size + run_align - 1) / run_align * run_align;
            r[i].run[s] = aligned_alloc(run_align, bytes);
            cr_assert_not_null(r[i].run[s]);
            memset(r[i].run[s], 0, bytes);
        }
    }
    free(blob);
}

static void raw_close(raw_ctx *r, int n)
{
    for (int i = 0; i < n; i++) {
        cr_assert_eq(m.simpler_destroy_device_context(r[i].ctx), SP_OK);
        free(r[i].run[0]);
        free(r[i].run[1]);
    }
    wk_module_close(&m);
}

static int raw_prepare(raw_ctx *r, int slot, job *j, uint64_t id)
{
    sp_run_descriptor d = {
        .pipeline_slot = (uint32_t)slot, .arena_bank = (uint32_t)slot, .run_id = id};
    return m.simpler_prepare_run(r->ctx, r->run[slot], 1, &j->args, NULL, &d);
}

ParameterizedTestParameters(shared_device, two_contexts_launched_back_to_back)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, shared_device, two_contexts_launched_back_to_back, .timeout = 240)
{
    static raw_ctx r[2];
    static job jobs[2];
    raw_open(modules[*mod], r, 2);
    for (uint64_t it = 0; it < 100; it++) {
        for (int i = 0; i < 2; i++) {
            job_init(&jobs[i], (uint64_t)i + 1, it);
            cr_assert_eq(raw_prepare(&r[i], 0, &jobs[i], it + 1), SP_OK, "%s",
                         m.simpler_last_error(r[i].ctx));
        }
        /* The second launch waits for the first to leave the chip; the
         * first's result is its own, though the second ran since. */
        for (int i = 0; i < 2; i++)
            cr_assert_eq(m.simpler_launch_run(r[i].ctx, r[i].run[0]), SP_OK, "%s",
                         m.simpler_last_error(r[i].ctx));
        for (int i = 0; i < 2; i++) {
            int rc = m.simpler_wait_run(r[i].ctx, r[i].run[0], 0);
            cr_assert_eq(rc, SP_OK, "context %d: %s", i, m.simpler_last_error(r[i].ctx));
            cr_assert_eq(m.simpler_finalize_run(r[i].ctx, r[i].run[0]), SP_OK);
            int bad = job_mismatches(&jobs[i]);
            cr_assert_eq(bad, 0, "iteration %llu: context %d has %d wrong elements",
                         (unsigned long long)it, i, bad);
        }
    }
    raw_close(r, 2);
}

Test(shared_device, more_runs_in_flight_than_the_device_has_storage, .timeout = 240)
{
    enum { CONTEXTS = SP_DEVICE_STORAGE_SLOTS / 2 + 1 };
    static raw_ctx r[CONTEXTS];
    static job jobs[CONTEXTS][2];
    raw_open(modules[0], r, CONTEXTS);
    int prepared = 0;
    for (int i = 0; i < CONTEXTS; i++)
        for (int s = 0; s < 2; s++) {
            job_init(&jobs[i][s], (uint64_t)i + 1, (uint64_t)s);
            int rc = raw_prepare(&r[i], s, &jobs[i][s], (uint64_t)s + 1);
            if (prepared < SP_DEVICE_STORAGE_SLOTS) {
                cr_assert_eq(rc, SP_OK, "context %d slot %d: %s", i, s,
                             m.simpler_last_error(r[i].ctx));
                prepared++;
                continue;
            }
            const char *msg = m.simpler_last_error(r[i].ctx);
            cr_assert_eq(rc, SP_EBUSY, "run %d of %d: %s", i * 2 + s + 1, SP_DEVICE_STORAGE_SLOTS,
                         sp_status_name(rc));
            cr_assert_not_null(strstr(msg, "run-storage slots or banks are held by runs"), "%s",
                               msg);
        }
    /* One finalized run frees its storage for the context that was refused. */
    cr_assert_eq(m.simpler_finalize_run(r[0].ctx, r[0].run[0]), SP_OK);
    cr_assert_eq(raw_prepare(&r[CONTEXTS - 1], 0, &jobs[CONTEXTS - 1][0], 3), SP_OK, "%s",
                 m.simpler_last_error(r[CONTEXTS - 1].ctx));
    /* Every prepared run then runs to its own correct result. */
    for (int i = 0; i < CONTEXTS; i++)
        for (int s = 0; s < 2; s++) {
            if ((i == 0 && s == 0) || (i == CONTEXTS - 1 && s == 1))
                continue;
            cr_assert_eq(m.simpler_launch_run(r[i].ctx, r[i].run[s]), SP_OK, "%s",
                         m.simpler_last_error(r[i].ctx));
            cr_assert_eq(m.simpler_wait_run(r[i].ctx, r[i].run[s], 0), SP_OK, "%s",
                         m.simpler_last_error(r[i].ctx));
            cr_assert_eq(m.simpler_finalize_run(r[i].ctx, r[i].run[s]), SP_OK);
            cr_assert_eq(job_mismatches(&jobs[i][s]), 0, "context %d slot %d", i, s);
        }
    raw_close(r, CONTEXTS);
}
