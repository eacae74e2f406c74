/* Conformance: the host API as a runtime's only way to the platform: the device
 * description, kernel loading and the launch of the device side through
 * the table, a value bound outside a run (SP_HOST_API_NO_RUN) refused its
 * run storage, and the chip's geometry as data (sp_chip_geometry,
 * sp_chip_cluster_core) seen by a function launched through the table. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../kernels/chip_probe.h"
#include "chip_test_support.h"
#include "memory_test_support.h"
#include "platform/chip.h"

TestSuite(host_api_device, .init = capture_log);

static sp_host_api bind_run(sp_device *dev, uint32_t slot, uint32_t bank)
{
    sp_host_api api;
    int rc = sp_device_bind_host_api(dev, slot, bank, &api);
    cr_assert_eq(rc, SP_OK, "bind(%u, %u): %s", slot, bank, sp_status_name(rc));
    return api;
}

Test(host_api_device, table_has_the_device_entries)
{
    const sp_host_api_functions *f = sp_device_host_api_functions();
    cr_assert(f->describe && f->kernel_load && f->kernel_unload && f->launch && f->launch_poll &&
              f->launch_wait && f->wait_idle);
}

Test(host_api_device, value_bound_outside_a_run_has_no_run_storage)
{
    sp_device *dev = open_device(3, false);
    sp_host_api api = bind_run(dev, SP_HOST_API_NO_RUN, SP_HOST_API_NO_RUN);
    cr_assert_eq(api.pipeline_slot, SP_HOST_API_NO_RUN);
    cr_assert_eq(api.arena_bank, SP_HOST_API_NO_RUN);
    uint64_t t = 0;
    sp_arena a;
    sp_arena_request req = {.heap_bytes = 64};
    capture_reset();
    cr_assert_eq(sp_host_retained_temp(&api, 64, &t), SP_ESLOT);
    cr_assert_eq(sp_host_arena_commit(&api, &req, &a), SP_ESLOT);
    cr_assert_eq(captured_errors, 2);
    cr_assert(strstr(captured_all, "outside a run"), "log: %s", captured_all);
    cr_assert_eq(sp_device_committed_bytes(dev), 0, "nothing was allocated");
    /* Device memory needs no run. */
    uint64_t p = 0;
    cr_assert_eq(sp_host_malloc(&api, 256, &p), SP_OK);
    cr_assert_eq(sp_host_free(&api, p), SP_OK);
    /* Only the marker passes: other out-of-range indices stay refused. */
    sp_host_api out;
    cr_assert_eq(sp_device_bind_host_api(dev, SP_HOST_API_NO_RUN - 1, 0, &out), SP_ESLOT);
    sp_device_close(dev);
}

Test(host_api_device, describe_through_the_table)
{
    sp_device_options opt = {.geometry = {.clusters = 2, .aicpu_threads = 3},
                             .settings = {.memory_bytes = TEST_MEMORY_BYTES}};
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(4, &opt, &dev), SP_OK);
    sp_host_api api = bind_run(dev, 0, 0);
    sp_device_info info;
    cr_assert_eq(sp_host_describe(&api, &info), SP_OK);
    cr_expect_str_eq(info.platform, SP_PLATFORM_NAME, "the backend this suite was built for");
    cr_expect_eq(info.device_id, 4);
    cr_expect_eq(info.geometry.clusters, 2);
    cr_expect_eq(info.geometry.aicpu_threads, 3);
    cr_expect_eq(info.core_count, info.geometry.clusters * info.geometry.lanes);
    cr_expect_eq(info.memory_bytes, TEST_MEMORY_BYTES);
    cr_expect_eq(sp_host_describe(&api, NULL), SP_EINVAL);
    sp_device_close(dev);
}

/* What the launched function below works over (host memory: a device-side
 * structure as far as the launch is concerned). */
typedef struct every_lane_ctx {
    sp_kernel_fn fn;
    uint64_t args; /* device address of [records] */
    uint64_t deadline_ns;
    _Atomic uint32_t bad_numbering; /* cluster_core out of range or repeated */
} every_lane_ctx;

/* One payload on every lane of every cluster, found through the geometry. */
static int every_lane_main(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)index;
    (void)count;
    every_lane_ctx *c = dev_ctx;
    const sp_geometry *g = sp_chip_geometry(chip);
    if (g->clusters * g->lanes != sp_chip_core_count(chip))
        atomic_fetch_add(&c->bad_numbering, 1);
    for (uint32_t cl = 0; cl < g->clusters; cl++)
        for (uint32_t lane = 0; lane < g->lanes; lane++) {
            uint32_t core = sp_chip_cluster_core(chip, cl, lane);
            if (core >= sp_chip_core_count(chip) || !sp_chip_core_idle(chip, core)) {
                atomic_fetch_add(&c->bad_numbering, 1);
                continue;
            }
            sp_chip_payload p = {.fn = c->fn,
                                 .args = (const uint64_t *)(uintptr_t)c->args,
                                 .task_id = core,
                                 .block_num = 1,
                                 .sub_block = lane};
            sp_chip_dispatch(chip, core, &p);
        }
    for (;;) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        bool idle = true;
        for (uint32_t core = 0; core < sp_chip_core_count(chip); core++)
            idle = idle && sp_chip_core_idle(chip, core);
        if (idle)
            return 0;
        if (sp_chip_event_wait(chip, snap, c->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
    }
}

Test(host_api_device, kernel_and_launch_through_the_table, .timeout = 120)
{
    sp_device_options opt = {.geometry = {.clusters = 2, .aicpu_threads = 2},
                             .settings = {.memory_bytes = TEST_MEMORY_BYTES}};
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(5, &opt, &dev), SP_OK);
    sp_host_api api = bind_run(dev, 0, 0);

    size_t size;
    void *bytes = read_test_kernel("chip_probe.so", &size);
    sp_kernel_image *k = NULL;
    sp_kernel_fn fn = NULL;
    cr_assert_eq(sp_host_kernel_load(&api, bytes, size, "chip_report_ctx", &k, &fn), SP_OK);
    cr_assert_not_null(k);
    cr_assert_not_null(fn);
    sp_kernel_image *k2 = (sp_kernel_image *)&k2;
    sp_kernel_fn fn2 = (sp_kernel_fn)(uintptr_t)1;
    cr_expect_eq(sp_host_kernel_load(&api, bytes, size, "no_such_entry", &k2, &fn2),
                 SP_EKERNEL_ENTRY);
    cr_expect_null(k2, "a failed load leaves no image");
    cr_expect_null(fn2);
    free(bytes);

    const sp_geometry *g = sp_device_geometry(dev);
    uint32_t cores = g->clusters * g->lanes;
    uint64_t records = dev_alloc_zeroed(dev, cores * sizeof(chip_ctx_record));
    uint64_t args = dev_upload(dev, &records, sizeof records);
    every_lane_ctx c = {.fn = fn, .args = args, .deadline_ns = DEADLINE_MS(60000)};
    sp_launch_record rec;
    cr_assert_eq(sp_host_launch(&api, every_lane_main, &c, 1, &rec), SP_OK);
    int rc = sp_host_launch_wait(&api, &rec, DEADLINE_MS(90000));
    cr_assert_eq(rc, 0, "launch result %s", sp_status_name(rc));
    int result = -1;
    cr_assert_eq(sp_host_launch_poll(&api, &rec, &result), SP_OK);
    cr_expect_eq(result, 0);
    cr_expect_eq(sp_host_wait_idle(&api, DEADLINE_MS(30000)), SP_OK);
    cr_expect_eq(atomic_load(&c.bad_numbering), 0);

    chip_ctx_record *r = calloc(cores, sizeof *r);
    cr_assert_not_null(r);
    dev_download(dev, r, records, cores * sizeof *r);
    for (uint32_t cl = 0; cl < g->clusters; cl++)
        for (uint32_t lane = 0; lane < g->lanes; lane++) {
            /* The numbering of simpler/device_info.h, written out. */
            uint32_t core = lane == 0 ? cl : g->clusters + (g->lanes - 1) * cl + lane - 1;
            cr_expect_eq(r[core].seen, 1, "core %u ran %llu times", core,
                         (unsigned long long)r[core].seen);
            cr_expect_eq(r[core].cluster_id, cl, "core %u: cluster %u, want %u", core,
                         r[core].cluster_id, cl);
            cr_expect_eq(r[core].core_type, g->lane_type[lane], "core %u: type %u", core,
                         r[core].core_type);
            cr_expect_eq(r[core].sub_block, lane);
        }
    free(r);
    /* A launch needs its record: the table has nowhere else to put it. */
    cr_expect_eq(sp_host_launch(&api, every_lane_main, &c, 1, NULL), SP_EINVAL);
    sp_host_kernel_unload(&api, k);
    sp_host_kernel_unload(&api, NULL);
    sp_device_free(dev, args);
    sp_device_free(dev, records);
    sp_device_close(dev);
}
