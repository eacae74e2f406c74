/* The sim's knobs are sp_device_options.settings, read when the device is
 * created and nowhere else (no environment): two devices opened with
 * different settings each keep their own, the environment changes
 * nothing, and a value the sim cannot use is refused or warned about by
 * name. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "memory_test_support.h"

TestSuite(sim_settings, .init = capture_log);

static sp_device *open_with(int id, sp_settings s)
{
    sp_device_options opt = {.geometry = {.clusters = 1}, .settings = s};
    sp_device *dev = NULL;
    int rc = sp_device_open(id, &opt, &dev);
    cr_assert_eq(rc, SP_OK, "open device %d: %s", id, sp_status_name(rc));
    return dev;
}

static sp_device_info info_of(const sp_device *dev)
{
    sp_device_info info;
    cr_assert_eq(sp_device_describe(dev, &info), SP_OK);
    return info;
}

Test(sim_settings, two_devices_keep_their_own_settings)
{
    /* What the environment said once; the platform no longer looks. */
    setenv("SIMPLER_SIM_MEMORY_MB", "8", 1);
    setenv("SIMPLER_SIM_CORE_QUEUE", "1", 1);
    setenv("SIMPLER_SIM_NO_HOST_MAP", "1", 1);
    sp_device *a =
        open_with(0, (sp_settings){.memory_bytes = 16ull << 20, .sim = {.core_queue = 2}});
    sp_device *b = open_with(
        1, (sp_settings){.memory_bytes = 32ull << 20, .sim = {.core_queue = 6, .no_host_map = 1}});
    sp_device_info ia = info_of(a), ib = info_of(b);
    cr_expect_eq(ia.memory_bytes, 16ull << 20);
    cr_expect_eq(ib.memory_bytes, 32ull << 20);
    cr_expect_eq(ia.core_queue, 2);
    cr_expect_eq(ib.core_queue, 6);
    cr_expect_eq(ia.host_map, 1, "the environment does not turn host-map off");
    cr_expect_eq(ib.host_map, 0);
    uint64_t p = must_malloc(a, 4096);
    cr_expect_not_null(sp_device_host_map(a, p, 4096));
    cr_expect_eq(sp_device_host_unmap(a, p), SP_OK);
    cr_expect_eq(sp_device_free(a, p), SP_OK);

    /* Left 0: the defaults, whatever the environment says. */
    sp_device *c = open_with(2, (sp_settings){0});
    sp_device_info ic = info_of(c);
    cr_expect_eq(ic.memory_bytes, SP_DEFAULT_DEVICE_MEMORY);
    cr_expect_eq(ic.core_queue, 64);
    cr_expect_eq(ic.host_map, 1);
    sp_device_close(c);
    sp_device_close(b);
    sp_device_close(a);
}

Test(sim_settings, unusable_values_are_named)
{
    capture_reset();
    sp_device *dev = NULL;
    sp_device_options big = {.settings = {.memory_bytes = (1ull << 40) + 1}};
    cr_expect_eq(sp_device_open(3, &big, &dev), SP_EINVAL);
    cr_expect_null(dev);
    cr_expect(strstr(captured_last, "memory_bytes"), "%s", captured_last);

    capture_reset();
    dev = open_with(4, (sp_settings){.memory_bytes = TEST_MEMORY_BYTES,
                                     .sim = {.core_queue = 65, .spin_ns = 2000000000ull}});
    cr_expect_eq(info_of(dev).core_queue, 64, "out of range: the default");
    cr_expect_eq(captured_warnings, 2, "%s", captured_all);
    cr_expect(strstr(captured_all, "core_queue") && strstr(captured_all, "spin_ns"), "%s",
              captured_all);
    sp_device_close(dev);
}
