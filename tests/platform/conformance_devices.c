/* Conformance: two devices in one process are two chips. Each has its own
 * memory (an address of device 0 is refused by device 1, and the refusal
 * names device 1 and the address), its own accounting, and launches on
 * both run at once from two host threads, each over its own cores.
 * Written against platform/device.h, chip.h and the host API only. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/chip_probe.h"
#include "chip_test_support.h"
#include "memory_test_support.h"
#include "platform/chip.h"

TestSuite(devices, .init = capture_log);

static sp_device *open_small(int id, uint32_t clusters)
{
    sp_device_options opt = {.geometry = {.clusters = clusters, .aicpu_threads = 2},
                             .settings = {.memory_bytes = TEST_MEMORY_BYTES}};
    sp_device *dev = NULL;
    int rc = sp_device_open(id, &opt, &dev);
    cr_assert_eq(rc, SP_OK, "open device %d: %s", id, sp_status_name(rc));
    return dev;
}

Test(devices, each_device_has_its_own_memory)
{
    sp_device *d0 = open_small(0, 1);
    sp_device *d1 = open_small(1, 1);
    cr_assert_neq(d0, d1);
    cr_assert_eq(sp_device_id(d0), 0);
    cr_assert_eq(sp_device_id(d1), 1);

    uint64_t a = must_malloc(d0, 4096);
    cr_expect_eq(sp_device_committed_bytes(d0), 4096);
    cr_expect_eq(sp_device_committed_bytes(d1), 0, "device 1's accounting is its own");
    unsigned char buf[64] = {1, 2, 3};
    cr_assert_eq(sp_device_copy_to(d0, a, buf, sizeof buf), SP_OK);

    capture_reset();
    cr_expect_eq(sp_device_copy_to(d1, a, buf, sizeof buf), SP_EBOUNDS,
                 "device 0's address written through device 1");
    cr_expect(strstr(captured_last, "device 1") && strstr(captured_last, hex(a)),
              "the refusal names the device and the address: %s", captured_last);
    cr_expect_eq(sp_device_copy_from(d1, buf, a, sizeof buf), SP_EBOUNDS);
    cr_expect_eq(sp_device_memset(d1, a, 0, sizeof buf), SP_EBOUNDS);
    cr_expect_null(sp_device_host_map(d1, a, sizeof buf));
    capture_reset();
    cr_expect_eq(sp_device_free(d1, a), SP_EBADPTR, "device 0's buffer freed through device 1");
    cr_expect(strstr(captured_last, "device 1") && strstr(captured_last, hex(a)), "%s",
              captured_last);

    /* Device 0 still has the buffer, intact. */
    unsigned char back[64];
    cr_assert_eq(sp_device_copy_from(d0, back, a, sizeof back), SP_OK);
    cr_expect_eq(memcmp(back, buf, sizeof back), 0);
    cr_expect_eq(sp_device_committed_bytes(d0), 4096);
    cr_expect_eq(sp_device_free(d0, a), SP_OK);

    /* Two opens of one id share the chip (refcounted). */
    sp_device *again = NULL;
    cr_assert_eq(sp_device_open(1, NULL, &again), SP_OK);
    cr_expect_eq(again, d1);
    sp_device_info info;
    cr_assert_eq(sp_device_describe(d0, &info), SP_OK);
    cr_expect_eq(info.open_devices, 2);
    sp_device_close(again);
    sp_device_close(d1);
    sp_device_close(d0);
}

/* What one host thread does on its device: ROUNDS launches through the
 * host API, each dispatching one payload per core and waiting for them. */
#define ROUNDS 50

typedef struct every_core_ctx {
    sp_kernel_fn fn;
    uint64_t args;
    uint64_t deadline_ns;
} every_core_ctx;

static int every_core_main(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)index;
    (void)count;
    every_core_ctx *c = dev_ctx;
    uint32_t n = sp_chip_core_count(chip);
    for (uint32_t core = 0; core < n; core++) {
        sp_chip_payload p = {.fn = c->fn,
                             .args = (const uint64_t *)(uintptr_t)c->args,
                             .task_id = core,
                             .block_num = 1};
        sp_chip_dispatch(chip, core, &p);
    }
    for (;;) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        bool idle = true;
        for (uint32_t core = 0; core < n; core++)
            idle = idle && sp_chip_core_idle(chip, core);
        if (idle)
            return 0;
        if (sp_chip_event_wait(chip, snap, c->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
    }
}

typedef struct driver {
    sp_device *dev;
    sp_kernel_fn fn;
    uint64_t records; /* chip_ctx_record per core */
    uint64_t args;
    pthread_barrier_t *start;
    int failed_rc; /* first failure, 0 if none */
    int failed_round;
} driver;

static void *drive(void *arg)
{
    driver *d = arg;
    sp_host_api api;
    if ((d->failed_rc = sp_device_bind_host_api(d->dev, 0, 0, &api)) != SP_OK)
        return NULL;
    every_core_ctx c = {.fn = d->fn, .args = d->args, .deadline_ns = DEADLINE_MS(240000)};
    pthread_barrier_wait(d->start);
    for (int r = 0; r < ROUNDS; r++) {
        sp_launch_record rec;
        int rc = sp_host_launch(&api, every_core_main, &c, 1, &rec);
        if (rc == SP_OK)
            rc = sp_host_launch_wait(&api, &rec, DEADLINE_MS(240000));
        if (rc != SP_OK) {
            d->failed_rc = rc;
            d->failed_round = r;
            return NULL;
        }
    }
    return NULL;
}

Test(devices, launches_on_two_devices_run_at_once_from_two_threads, .timeout = 280)
{
    driver d[2] = {{.dev = open_small(0, 1)}, {.dev = open_small(1, 2)}};
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    size_t size;
    void *bytes = read_test_kernel("chip_probe.so", &size);
    sp_kernel_image *k[2];
    for (int i = 0; i < 2; i++) {
        sp_host_api api;
        cr_assert_eq(
            sp_device_bind_host_api(d[i].dev, SP_HOST_API_NO_RUN, SP_HOST_API_NO_RUN, &api), SP_OK);
        cr_assert_eq(sp_host_kernel_load(&api, bytes, size, "chip_report_ctx", &k[i], &d[i].fn),
                     SP_OK);
        uint32_t cores = sp_device_core_count(d[i].dev);
        d[i].records = dev_alloc_zeroed(d[i].dev, cores * sizeof(chip_ctx_record));
        d[i].args = dev_upload(d[i].dev, &d[i].records, sizeof d[i].records);
        d[i].start = &start;
    }
    free(bytes);

    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, drive, &d[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);

    for (int i = 0; i < 2; i++) {
        cr_expect_eq(d[i].failed_rc, 0, "device %d: round %d: %s", i, d[i].failed_round,
                     sp_status_name(d[i].failed_rc));
        uint32_t cores = sp_device_core_count(d[i].dev);
        chip_ctx_record *r = calloc(cores, sizeof *r);
        cr_assert_not_null(r);
        dev_download(d[i].dev, r, d[i].records, cores * sizeof *r);
        for (uint32_t c = 0; c < cores; c++) {
            cr_expect_eq(r[c].seen, ROUNDS, "device %d core %u ran %llu of %d payloads", i, c,
                         (unsigned long long)r[c].seen, ROUNDS);
            cr_expect_eq(r[c].core_id, c);
        }
        free(r);
        sp_host_api api;
        cr_assert_eq(sp_device_bind_host_api(d[i].dev, 0, 0, &api), SP_OK);
        sp_host_kernel_unload(&api, k[i]);
    }
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2; i++) {
        sp_device_free(d[i].dev, d[i].args);
        sp_device_free(d[i].dev, d[i].records);
        sp_device_close(d[i].dev);
    }
}
