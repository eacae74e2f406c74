/* Shared by the device memory tests (test_allocator, test_copies,
 * test_host_map, test_host_api): open a small device and capture log lines,
 * so a test can assert that a refusal was logged and what the line names.
 * Criterion runs every test in its own process, so the statics are per test. */
#ifndef SP_TESTS_PLATFORM_MEMORY_TEST_SUPPORT_H
#define SP_TESTS_PLATFORM_MEMORY_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "platform/device.h"
#include "simpler/status.h"

#define TEST_MEMORY_BYTES (64ull << 20)

static int captured_errors;
static int captured_warnings;
static char captured_last[1024];
static char captured_all[8192];

static inline void capture_sink(int level, const char *line, void *user)
{
    (void)user;
    if (level == SP_LOG_ERROR)
        captured_errors++;
    if (level == SP_LOG_WARN)
        captured_warnings++;
    snprintf(captured_last, sizeof captured_last, "%s", line);
    size_t n = strlen(captured_all);
    snprintf(captured_all + n, sizeof captured_all - n, "%s\n", line);
}

static inline void capture_log(void)
{
    sp__log_set_level(SP_LOG_WARN);
    sp__log_set_sink(capture_sink, NULL);
}

static inline void capture_reset(void)
{
    captured_errors = 0;
    captured_warnings = 0;
    captured_last[0] = '\0';
    captured_all[0] = '\0';
}

/* Open device `id` with TEST_MEMORY_BYTES of memory (and no host map if asked). */
/* A device with the device view protected outside launches or open
 * (sp_sim_settings.protect). */
static inline sp_device *open_device_protected(int id, bool no_host_map, bool protect)
{
    sp_device_options opt = {.settings = {.memory_bytes = TEST_MEMORY_BYTES,
                                          .sim = {.no_host_map = no_host_map, .protect = protect}}};
    sp_device *dev = NULL;
    int rc = sp_device_open(id, &opt, &dev);
    cr_assert_eq(rc, SP_OK, "sp_device_open(%d): %s", id, sp_status_name(rc));
    cr_assert_not_null(dev);
    return dev;
}

static inline sp_device *open_device(int id, bool no_host_map)
{
    return open_device_protected(id, no_host_map, false);
}

static inline uint64_t must_malloc(sp_device *dev, uint64_t bytes)
{
    uint64_t p = 0;
    int rc = sp_device_malloc(dev, bytes, &p);
    cr_assert_eq(rc, SP_OK, "malloc(%" PRIu64 "): %s", bytes, sp_status_name(rc));
    cr_assert_neq(p, 0);
    return p;
}

/* "0x..." of a device address as the log lines print it. */
static inline const char *hex(uint64_t v)
{
    static char buf[4][32];
    static int next;
    char *b = buf[next++ & 3];
    snprintf(b, sizeof buf[0], "0x%" PRIx64, v);
    return b;
}

#endif
