/* The sim's device views: a host map is neither the device address nor
 * the platform's private view; with sp_sim_settings.protect the device
 * addresses themselves are only accessible while a launch has the device
 * view open (PROT_NONE otherwise), so host code that dereferences one
 * faults; without it (the default) the view stays open and a launch
 * changes no page table. What every backend's host-map does is in
 * conformance_host_map.c. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "memory_test_support.h"
#include "platform/sim/sim_memory.h"

TestSuite(host_map, .init = capture_log);

Test(host_map, address_differs_from_device_and_platform_views)
{
    sp_device *dev = open_device(1, false);
    uint64_t a = must_malloc(dev, 8192);
    unsigned char *h = sp_device_host_map(dev, a, 8192);
    cr_assert_not_null(h);
    cr_assert_neq((uint64_t)(uintptr_t)h, a, "a host map is not the device address");
    uint64_t off = a - (uint64_t)(uintptr_t)dev->mem->dev_view;
    cr_assert_neq(h, dev->mem->plat_view + off, "nor the platform's private view");
    cr_assert_eq(sp_device_host_unmap(dev, a), SP_OK);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    cr_assert_eq(captured_errors, 0, "%s", captured_all);
    sp_device_close(dev);
}

/* Whether the host can read `addr`, without a signal: write(2) reports
 * EFAULT for an inaccessible source buffer. */
static bool host_can_read(const void *addr)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    ssize_t n = write(fds[1], addr, 1);
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    if (n == 1)
        return true;
    cr_assert_eq(err, EFAULT, "write: %s", strerror(err));
    return false;
}

Test(host_map, device_view_is_open_only_while_device_access_is_on)
{
    sp_device *dev = open_device_protected(10, false, true);
    uint64_t a = must_malloc(dev, 4096);
    volatile unsigned char *d = (volatile unsigned char *)(uintptr_t)a;
    cr_assert_not(host_can_read((const void *)d), "closed outside a launch");

    sim_memory_set_device_access(dev->mem, true);
    cr_assert(host_can_read((const void *)d));
    d[3] = 0x5A;                                  /* what a kernel on a core thread does */
    sim_memory_set_device_access(dev->mem, true); /* nested open */
    sim_memory_set_device_access(dev->mem, false);
    cr_assert(host_can_read((const void *)d), "still open: one open left");
    sim_memory_set_device_access(dev->mem, false);
    cr_assert_not(host_can_read((const void *)d), "closed again");

    unsigned char one = 0;
    cr_assert_eq(sp_device_copy_from(dev, &one, a + 3, 1), SP_OK);
    cr_assert_eq(one, 0x5A, "device-view writes are the same bytes");

    capture_reset();
    sim_memory_set_device_access(dev->mem, false); /* unmatched close */
    cr_assert_eq(captured_warnings, 1);
    cr_assert_not(host_can_read((const void *)d));
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

Test(host_map, device_address_is_not_a_host_address)
{
    sp_device *dev = open_device(11, false);
    uint64_t a = must_malloc(dev, 4096);
    int on_stack = 0;
    void *on_heap = malloc(16);
    cr_assert_neq(a, (uint64_t)(uintptr_t)on_heap);
    cr_assert_neq(a, (uint64_t)(uintptr_t)&on_stack);
    free(on_heap);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

/* A host that dereferences a device address instead of a host map crashes
 * outright. SIGSEGV goes back to its default action first so that a
 * sanitizer's report-and-exit handler does not turn the crash into an exit. */
Test(host_map, unprotected_the_device_view_stays_open_across_launch_phases)
{
    sp_device *dev = open_device(13, false);
    uint64_t a = must_malloc(dev, 4096);
    volatile unsigned char *d = (volatile unsigned char *)(uintptr_t)a;
    cr_assert(host_can_read((const void *)d), "open before any launch");
    sim_memory_set_device_access(dev->mem, true);
    d[5] = 0x3C;
    sim_memory_set_device_access(dev->mem, false);
    cr_assert(host_can_read((const void *)d), "still open after a launch closed it");
    unsigned char one = 0;
    cr_assert_eq(sp_device_copy_from(dev, &one, a + 5, 1), SP_OK);
    cr_assert_eq(one, 0x3C);
    capture_reset();
    sim_memory_set_device_access(dev->mem, false); /* nothing is counted: no warning */
    cr_assert_eq(captured_warnings, 0);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

Test(host_map, host_dereference_of_device_address_faults, .signal = SIGSEGV)
{
    sp_device *dev = open_device_protected(12, false, true);
    uint64_t a = must_malloc(dev, 4096);
    signal(SIGSEGV, SIG_DFL);
    volatile unsigned char *d = (volatile unsigned char *)(uintptr_t)a;
    unsigned char v = d[0];
    cr_log_error("read %u through a closed device view without faulting", v);
    sp_device_close(dev);
}
