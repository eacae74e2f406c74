/* Helpers for the chip tests: load a built test kernel by its bytes, as a
 * callable would carry it, and device-memory shorthands that fail the test. */
#ifndef SP_TESTS_PLATFORM_CHIP_TEST_SUPPORT_H
#define SP_TESTS_PLATFORM_CHIP_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/wait.h"
#include "platform/device.h"
#include "simpler/status.h"

/* The whole file `SP_TEST_KERNEL_DIR/name` in a malloc'd buffer. */
static inline void *read_test_kernel(const char *name, size_t *size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", SP_TEST_KERNEL_DIR, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open test kernel %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    cr_assert_gt(n, 0, "empty test kernel %s", path);
    void *bytes = malloc((size_t)n);
    cr_assert_not_null(bytes);
    cr_assert_eq(fread(bytes, 1, (size_t)n, f), (size_t)n, "short read of %s", path);
    fclose(f);
    *size = (size_t)n;
    return bytes;
}

/* Load `entry` from test kernel `file` by bytes; fails the test otherwise. */
static inline sp_kernel_binary *load_test_kernel(sp_device *dev, const char *file,
                                                 const char *entry)
{
    size_t size;
    void *bytes = read_test_kernel(file, &size);
    sp_kernel_binary *kb = NULL;
    int rc = sp_kernel_binary_load(dev, bytes, size, entry, &kb);
    free(bytes);
    cr_assert_eq(rc, SP_OK, "loading %s from %s: %s", entry, file, sp_status_name(rc));
    return kb;
}

static inline uint64_t dev_alloc_zeroed(sp_device *dev, uint64_t bytes)
{
    uint64_t addr = 0;
    int rc = sp_device_malloc(dev, bytes, &addr);
    cr_assert_eq(rc, SP_OK, "device malloc of %llu bytes: %s", (unsigned long long)bytes,
                 sp_status_name(rc));
    rc = sp_device_memset(dev, addr, 0, bytes);
    cr_assert_eq(rc, SP_OK, "device memset: %s", sp_status_name(rc));
    return addr;
}

static inline uint64_t dev_upload(sp_device *dev, const void *src, uint64_t bytes)
{
    uint64_t addr = 0;
    int rc = sp_device_malloc(dev, bytes, &addr);
    cr_assert_eq(rc, SP_OK, "device malloc: %s", sp_status_name(rc));
    rc = sp_device_copy_to(dev, addr, src, bytes);
    cr_assert_eq(rc, SP_OK, "copy to device: %s", sp_status_name(rc));
    return addr;
}

static inline void dev_download(sp_device *dev, void *dst, uint64_t addr, uint64_t bytes)
{
    int rc = sp_device_copy_from(dev, dst, addr, bytes);
    cr_assert_eq(rc, SP_OK, "copy from device: %s", sp_status_name(rc));
}

/* A deadline `ms` milliseconds from now, on the sp_now_ns clock. */
#define DEADLINE_MS(ms) (sp_now_ns() + (uint64_t)(ms)*1000000ull)

/* Launch `fn` on `threads` AICPU threads with the device context at `ctx`
 * and wait up to `ms` for it; asserts that the launch returned 0. */
static inline void launch_and_wait(sp_device *dev, sp_launch_fn fn, uint64_t ctx, uint32_t threads,
                                   uint64_t ms)
{
    cr_assert_eq(sp_device_launch(dev, fn, (void *)(uintptr_t)ctx, threads), SP_OK);
    int rc = sp_device_wait(dev, DEADLINE_MS(ms));
    cr_assert_eq(rc, 0, "launch result %d (%s)", rc, sp_status_name(rc));
}

#endif
