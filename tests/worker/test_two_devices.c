/* Several devices in one process (issue 13). One process has one device
 * table: a device id is one chip to every module, and two ids are two
 * chips. Checked through the worker, on both runtimes:
 *
 * - two devices run graphs concurrently, one thread each, for every pair
 *   of runtimes (hbg + hbg, tmr + tmr, hbg + tmr, tmr + hbg): every run's
 *   output is what its own input gives;
 * - the memory of one device is not the other's: an address allocated on
 *   device 0 is refused by device 1 (copies and free name it);
 * - faults stay on their device: a kernel that crashes on device 1 fails
 *   that run with a message naming device 1, while the runs on device 0,
 *   going on at the same time, all pass;
 * - an hbg worker and a tmr worker on the same device id share that
 *   device's memory accounting: what one registers shows in the other's
 *   sp_worker_device_info.
 *
 * Threads report into structs the main thread asserts on after joining
 * (no Criterion assert off the main thread); a barrier starts them
 * together; no sleeps. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"
#include "worker/module_loader.h"

#define ROWS 8
#define COLS 128
#define ROUNDS 40
#define POISON 0xdeaddeaddeaddeadull
#define F_SEGV 1 /* tests/kernels/fault_orch.c's modes */

static const char *const runtimes[] = {"hbg", "tmr"};
static const char *const module_files[] = {SP_MODULE_DIR "/libsimpler_hbg_sim.so",
                                           SP_MODULE_DIR "/libsimpler_tmr_sim.so"};

static sp_worker *open_on(int runtime, int device_id)
{
    sp_worker_options o = {.device_id = device_id, .module_dir = SP_MODULE_DIR};
    sp_worker *w = NULL;
    char err[1024] = "";
    int rc = sp_worker_open_runtime(runtimes[runtime], NULL, &o, &w, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "%s on device %d: %s", runtimes[runtime], device_id, err);
    return w;
}

/* tests/kernels/orch_rows.c: out[r][j] = in[r][j] + r + 1, one task a row. */
static void register_rows(sp_worker *w)
{
    sp_callable_kernel_spec k = {.func_id = 0,
                                 .core_type = SP_CORE_AIV,
                                 .path = SP_TEST_KERNEL_DIR "/row_add.so",
                                 .entry = "row_add"};
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/orch_rows.so",
                             .orch_entry = "orch_rows",
                             .orch_config = "orch_rows_config",
                             .kernels = &k,
                             .kernel_count = 1};
    char err[1024] = "";
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
}

/* tests/kernels/fault_orch.c with fault_kernels.c: mode 0 marks y, F_SEGV crashes. */
static void register_faults(sp_worker *w)
{
    const char *k = SP_TEST_KERNEL_DIR "/fault_kernels.so";
    sp_callable_kernel_spec ks[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_mark"},
        {.func_id = F_SEGV, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_segv"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/fault_orch.so",
                             .orch_entry = "fault_orch",
                             .kernels = ks,
                             .kernel_count = 2};
    char err[1024] = "";
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
}

/* What one thread did, for the main thread to assert on. */
typedef struct lane_report {
    sp_worker *w;
    pthread_barrier_t *start;
    int device_id;
    int faulting; /* run the crashing kernel instead of the rows */
    int runs, passed, wrong_outputs;
    int first_rc;
    char first_error[640];
    int crashes_named; /* faulting: crashes whose message named the device */
    int followups_ok;  /* faulting: a good run after each crash passed */
    uint64_t in[ROWS][COLS], out[ROWS][COLS];
} lane_report;

static void note_failure(lane_report *r, int rc)
{
    if (r->first_rc)
        return;
    r->first_rc = rc;
    snprintf(r->first_error, sizeof r->first_error, "%s", sp_worker_last_error(r->w));
}

/* ROUNDS runs of orch_rows, each input distinct per device and round. */
static void rows_lane(lane_report *r)
{
    uint64_t(*in)[COLS] = r->in, (*out)[COLS] = r->out;
    for (uint64_t run = 0; run < ROUNDS; run++) {
        for (int i = 0; i < ROWS; i++)
            for (int j = 0; j < COLS; j++) {
                in[i][j] = ((uint64_t)r->device_id << 48) ^ (run << 20) ^ ((uint64_t)i << 10) ^
                           (uint64_t)j;
                out[i][j] = POISON;
            }
        sp_args a;
        memset(&a, 0, sizeof a);
        const int64_t shape[2] = {ROWS, COLS};
        sp_tensor_init(&a.tensors[0], (uint64_t)(uintptr_t)in, SP_DTYPE_U64, 2, shape);
        sp_tensor_init(&a.tensors[1], (uint64_t)(uintptr_t)out, SP_DTYPE_U64, 2, shape);
        a.dirs[0] = SP_IN;
        a.dirs[1] = SP_OUT;
        a.tensor_count = 2;
        r->runs++;
        int rc = sp_worker_run(r->w, 0, &a, NULL, NULL);
        if (rc) {
            note_failure(r, rc);
            continue;
        }
        int bad = 0;
        for (int i = 0; i < ROWS; i++)
            for (int j = 0; j < COLS; j++)
                bad += out[i][j] != in[i][j] + (uint64_t)i + 1;
        r->passed += bad == 0;
        r->wrong_outputs += bad;
    }
}

static int fault_run(sp_worker *w, uint64_t mode, uint64_t y[4])
{
    memset(y, 0, 4 * sizeof y[0]);
    sp_args a;
    memset(&a, 0, sizeof a);
    const int64_t n = 4;
    sp_tensor_init(&a.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &n);
    a.dirs[0] = SP_INOUT;
    a.tensor_count = 1;
    a.scalars[0] = mode;
    a.scalar_count = 1;
    return sp_worker_run(w, 0, &a, NULL, NULL);
}

/* A few crashes, each followed by a run that must pass. */
static void fault_lane(lane_report *r)
{
    char want[32];
    snprintf(want, sizeof want, "device %d", r->device_id);
    uint64_t y[4];
    for (int k = 0; k < 3; k++) {
        r->runs++;
        int rc = fault_run(r->w, F_SEGV, y);
        if (rc != SP_EKERNEL_FAULT)
            note_failure(r, rc ? rc : SP_EINVAL);
        else if (strstr(sp_worker_last_error(r->w), want))
            r->crashes_named++;
        else
            note_failure(r, rc);
        r->runs++;
        rc = fault_run(r->w, 0, y);
        if (rc == SP_OK && y[0] == 11 && y[1] == 22)
            r->followups_ok++;
        else
            note_failure(r, rc ? rc : SP_EINVAL);
    }
}

static void *lane_main(void *arg)
{
    lane_report *r = arg;
    pthread_barrier_wait(r->start);
    if (r->faulting)
        fault_lane(r);
    else
        rows_lane(r);
    return NULL;
}

/* Run both lanes at once, one thread each, and join them. */
static void run_lanes(lane_report r[2])
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        r[i].start = &start;
        cr_assert_eq(pthread_create(&t[i], NULL, lane_main, &r[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
}

typedef struct pair {
    int rt[2]; /* runtime on device 0, on device 1 */
} pair;

ParameterizedTestParameters(two_devices, run_graphs_concurrently)
{
    static pair pairs[] = {{{0, 0}}, {{1, 1}}, {{0, 1}}, {{1, 0}}};
    return cr_make_param_array(pair, pairs, 4);
}

ParameterizedTest(pair *p, two_devices, run_graphs_concurrently, .timeout = 240)
{
    static lane_report r[2];
    memset(r, 0, sizeof r);
    for (int d = 0; d < 2; d++) {
        r[d].w = open_on(p->rt[d], d);
        r[d].device_id = d;
        register_rows(r[d].w);
        sp_device_info info;
        cr_assert_eq(sp_worker_device_info(r[d].w, &info), SP_OK, "%s",
                     sp_worker_last_error(r[d].w));
        cr_assert_eq(info.device_id, d);
        cr_assert_geq(info.open_devices, (uint32_t)d + 1, "device %d: %u devices open", d,
                      info.open_devices);
    }
    run_lanes(r);
    for (int d = 0; d < 2; d++) {
        cr_assert_eq(r[d].first_rc, SP_OK, "device %d (%s): %s: %s", d, runtimes[p->rt[d]],
                     sp_status_name(r[d].first_rc), r[d].first_error);
        cr_assert_eq(r[d].passed, ROUNDS, "device %d: %d of %d runs right, %d wrong elements", d,
                     r[d].passed, r[d].runs, r[d].wrong_outputs);
    }
    sp_worker_close(r[0].w);
    sp_worker_close(r[1].w);
}

ParameterizedTestParameters(two_devices, a_crash_on_device_1_leaves_device_0_running)
{
    static pair pairs[] = {{{0, 1}}, {{1, 0}}};
    return cr_make_param_array(pair, pairs, 2);
}

ParameterizedTest(pair *p, two_devices, a_crash_on_device_1_leaves_device_0_running, .timeout = 240)
{
    static lane_report r[2];
    memset(r, 0, sizeof r);
    for (int d = 0; d < 2; d++) {
        r[d].w = open_on(p->rt[d], d);
        r[d].device_id = d;
    }
    register_rows(r[0].w);
    register_faults(r[1].w);
    r[1].faulting = 1;
    run_lanes(r);
    cr_assert_eq(r[1].crashes_named, 3, "crashes named with 'device 1': %d of 3; first: %s: %s",
                 r[1].crashes_named, sp_status_name(r[1].first_rc), r[1].first_error);
    cr_assert_eq(r[1].followups_ok, 3, "device 1's runs after a crash: %s: %s",
                 sp_status_name(r[1].first_rc), r[1].first_error);
    cr_assert_eq(r[0].first_rc, SP_OK, "device 0 (%s) while device 1 crashed: %s: %s",
                 runtimes[p->rt[0]], sp_status_name(r[0].first_rc), r[0].first_error);
    cr_assert_eq(r[0].passed, ROUNDS, "device 0: %d of %d runs right", r[0].passed, r[0].runs);
    sp_worker_close(r[0].w);
    sp_worker_close(r[1].w);
}

Test(two_devices, an_address_of_device_0_is_refused_by_device_1, .timeout = 60)
{
    /* The module ABI directly: the worker hands out no device address. */
    wk_module_api m[2];
    void *ctx[2];
    char err[1024] = "";
    for (int d = 0; d < 2; d++) {
        cr_assert_eq(wk_module_open(module_files[d], &m[d], err, sizeof err), SP_OK, "%s", err);
        cr_assert_eq(m[d].simpler_create_device_context(&ctx[d]), SP_OK);
        cr_assert_eq(m[d].simpler_init(ctx[d], d, NULL, NULL), SP_OK, "%s",
                     m[d].simpler_last_error(ctx[d]));
    }
    uint64_t addr = 0, back[8];
    const uint64_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    cr_assert_eq(m[0].simpler_device_malloc(ctx[0], sizeof data, &addr), SP_OK);
    cr_assert_eq(m[0].simpler_copy_to_device(ctx[0], addr, data, sizeof data), SP_OK);
    int rc = m[1].simpler_copy_from_device(ctx[1], back, addr, sizeof back);
    cr_assert_neq(rc, SP_OK, "device 1 read device 0's address 0x%llx", (unsigned long long)addr);
    cr_assert(strstr(m[1].simpler_last_error(ctx[1]), "copy_from_device") != NULL, "%s",
              m[1].simpler_last_error(ctx[1]));
    rc = m[1].simpler_copy_to_device(ctx[1], addr, data, sizeof data);
    cr_assert_neq(rc, SP_OK, "device 1 wrote device 0's address");
    rc = m[1].simpler_device_free(ctx[1], addr);
    cr_assert_neq(rc, SP_OK, "device 1 freed device 0's address");
    cr_assert(strstr(m[1].simpler_last_error(ctx[1]), "device_free") != NULL, "%s",
              m[1].simpler_last_error(ctx[1]));
    /* Device 0 still has it, whole. */
    cr_assert_eq(m[0].simpler_copy_from_device(ctx[0], back, addr, sizeof back), SP_OK);
    cr_assert_eq(memcmp(back, data, sizeof data), 0);
    cr_assert_eq(m[0].simpler_device_free(ctx[0], addr), SP_OK);
    for (int d = 0; d < 2; d++) {
        m[d].simpler_destroy_device_context(ctx[d]);
        wk_module_close(&m[d]);
    }
}

static uint64_t committed(sp_worker *w)
{
    sp_device_info d;
    cr_assert_eq(sp_worker_device_info(w, &d), SP_OK, "%s", sp_worker_last_error(w));
    return d.committed_bytes;
}

Test(two_devices, hbg_and_tmr_on_one_device_id_share_its_memory_accounting, .timeout = 60)
{
    sp_worker *hbg = open_on(0, 2), *tmr = open_on(1, 2);
    sp_device_info a, b;
    cr_assert_eq(sp_worker_device_info(hbg, &a), SP_OK);
    cr_assert_eq(sp_worker_device_info(tmr, &b), SP_OK);
    cr_assert_eq(a.device_id, 2);
    cr_assert_eq(b.device_id, 2);
    cr_assert_eq(a.memory_bytes, b.memory_bytes);
    uint64_t before = committed(hbg);
    cr_assert_eq(committed(tmr), before, "one device, one account");
    /* Registering uploads the callable's kernel table to device memory. */
    register_rows(tmr);
    uint64_t with_tmr = committed(tmr);
    cr_assert_gt(with_tmr, before, "registration committed nothing on the device");
    cr_assert_eq(committed(hbg), with_tmr,
                 "the hbg worker does not see the tmr worker's %llu bytes",
                 (unsigned long long)(with_tmr - before));
    register_rows(hbg);
    uint64_t both = committed(hbg);
    cr_assert_gt(both, with_tmr);
    cr_assert_eq(committed(tmr), both);
    cr_assert_eq(sp_worker_unregister_callable(tmr, 0), SP_OK, "%s", sp_worker_last_error(tmr));
    cr_assert_eq(committed(hbg), both - (with_tmr - before), "the tmr worker's bytes went back");
    sp_worker_close(tmr);
    sp_worker_close(hbg);
}
