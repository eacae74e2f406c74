/* The sim's default geometry divides the machine's CPUs among the devices
 * open at once: a device opened while others are open is sized from its
 * share (sp_geometry_default(n), the new device counted in), so two chips
 * in one process do not each spin on the whole machine. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "memory_test_support.h"

TestSuite(default_geometry, .init = capture_log);

/* The rule, written out: a cluster per two CPUs of the share (1..24),
 * 3 AICPU threads from 8 CPUs, else 2. */
static void expect_rule(uint32_t devices)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN) / (long)devices;
    if (cpus < 1)
        cpus = 1;
    uint32_t clusters = cpus / 2 > 0 ? (uint32_t)(cpus / 2) : 1;
    if (clusters > SP_A2A3_CLUSTERS)
        clusters = SP_A2A3_CLUSTERS;
    sp_geometry g = sp_geometry_default(devices);
    cr_expect_eq(g.clusters, clusters, "%u devices: %u clusters, want %u", devices, g.clusters,
                 clusters);
    cr_expect_eq(g.aicpu_threads, cpus >= 8 ? 3u : 2u, "%u devices: %u AICPU threads", devices,
                 g.aicpu_threads);
    cr_expect_eq(g.lanes, 3);
    cr_expect_eq(sp_geometry_validate(&g), SP_OK);
}

Test(default_geometry, the_cpus_are_divided_among_the_devices)
{
    for (uint32_t n = 1; n <= 64; n *= 2)
        expect_rule(n);
    cr_expect_eq(sp_geometry_default(0).clusters, sp_geometry_default(1).clusters,
                 "0 counts as one device");
    cr_expect_leq(sp_geometry_default(2).clusters, sp_geometry_default(1).clusters);
}

Test(default_geometry, a_device_opened_beside_others_gets_its_share)
{
    sp_device_options opt = {.settings = {.memory_bytes = TEST_MEMORY_BYTES}};
    sp_device *d[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(sp_device_open(20 + i, &opt, &d[i]), SP_OK);
        sp_geometry want = sp_geometry_default((uint32_t)i + 1);
        const sp_geometry *g = sp_device_geometry(d[i]);
        cr_expect_eq(g->clusters, want.clusters, "device %d (%d open): %u clusters, want %u",
                     20 + i, i + 1, g->clusters, want.clusters);
        cr_expect_eq(g->aicpu_threads, want.aicpu_threads);
    }
    /* Reopening an open id changes nothing: it is the same chip. */
    sp_device *again = NULL;
    cr_assert_eq(sp_device_open(20, &opt, &again), SP_OK);
    cr_expect_eq(sp_device_geometry(again)->clusters, sp_geometry_default(1).clusters);
    sp_device_close(again);
    for (int i = 0; i < 3; i++)
        sp_device_close(d[i]);
}
