/* Conformance: host-map of device memory (DESIGN.md §4.3) — a host map
 * is an address onto the same bytes, refused for bad ranges, paired with
 * unregister, blocks a free, and is NULL on a device without host-map. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "memory_test_support.h"

TestSuite(host_map, .init = capture_log);

Test(host_map, writes_are_coherent_both_ways)
{
    sp_device *dev = open_device(2, false);
    enum { N = 3 * 4096 + 100 };
    uint64_t a = must_malloc(dev, N);
    cr_assert_eq(sp_device_memset(dev, a, 0x11, N), SP_OK);
    unsigned char *h = sp_device_host_map(dev, a, N);
    cr_assert_not_null(h);
    cr_assert_eq(h[0], 0x11);
    cr_assert_eq(h[N - 1], 0x11);

    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 7);
    unsigned char back[N];
    cr_assert_eq(sp_device_copy_from(dev, back, a, N), SP_OK);
    cr_assert_arr_eq(back, h, N, "host-map writes are seen by copies from the device");

    unsigned char src[100];
    for (int i = 0; i < 100; i++)
        src[i] = (unsigned char)(200 - i);
    cr_assert_eq(sp_device_copy_to(dev, a + 5000, src, 100), SP_OK);
    cr_assert_arr_eq(h + 5000, src, 100, "copies to the device are seen through the map");
    cr_assert_eq(sp_device_host_unmap(dev, a), SP_OK);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

Test(host_map, interior_range_maps_to_its_own_first_byte)
{
    sp_device *dev = open_device(3, false);
    uint64_t a = must_malloc(dev, 10000);
    unsigned char src[10000];
    for (int i = 0; i < 10000; i++)
        src[i] = (unsigned char)(i ^ (i >> 8));
    cr_assert_eq(sp_device_copy_to(dev, a, src, sizeof src), SP_OK);
    unsigned char *h = sp_device_host_map(dev, a + 4100, 1000); /* not page aligned */
    cr_assert_not_null(h);
    cr_assert_arr_eq(h, src + 4100, 1000);
    h[10] = 0xEE;
    unsigned char one;
    cr_assert_eq(sp_device_copy_from(dev, &one, a + 4110, 1), SP_OK);
    cr_assert_eq(one, 0xEE);
    cr_assert_eq(sp_device_host_unmap(dev, a + 4100), SP_OK);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

Test(host_map, bad_ranges_return_null)
{
    sp_device *dev = open_device(4, false);
    uint64_t a = must_malloc(dev, 64);
    uint64_t b = must_malloc(dev, 64);
    cr_assert_eq(b, a + 64, "precondition: a and b are back to back");
    uint64_t gone = must_malloc(dev, 4096);
    cr_assert_eq(sp_device_free(dev, gone), SP_OK);
    capture_reset();
    cr_assert_null(sp_device_host_map(dev, gone, 4096), "freed buffer");
    cr_assert_null(sp_device_host_map(dev, a + 32, 64), "straddles a and b");
    cr_assert_null(sp_device_host_map(dev, a, 65), "runs past a");
    cr_assert_null(sp_device_host_map(dev, a, 0), "zero bytes");
    int host_local = 0;
    cr_assert_null(sp_device_host_map(dev, (uint64_t)(uintptr_t)&host_local, 4), "host address");
    cr_assert_eq(captured_errors, 5, "each refusal is logged: %s", captured_all);
    /* None of them left a registration behind. */
    cr_assert_eq(sp_device_host_unmap(dev, gone), SP_EBADPTR);
    cr_assert_eq(sp_device_host_unmap(dev, a + 32), SP_EBADPTR);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    cr_assert_eq(sp_device_free(dev, b), SP_OK);
    sp_device_close(dev);
}

Test(host_map, unknown_unregister_is_logged_and_changes_nothing)
{
    sp_device *dev = open_device(5, false);
    uint64_t a = must_malloc(dev, 4096);
    unsigned char *h = sp_device_host_map(dev, a, 4096);
    cr_assert_not_null(h);
    capture_reset();
    cr_assert_eq(sp_device_host_unmap(dev, a + 64), SP_EBADPTR);
    cr_assert_eq(sp_device_host_unmap(dev, 12345), SP_EBADPTR);
    cr_assert_eq(captured_errors, 2);
    cr_assert(strstr(captured_all, hex(a + 64)), "%s", captured_all);
    /* The real map is still registered and usable. */
    h[0] = 42;
    unsigned char one;
    cr_assert_eq(sp_device_copy_from(dev, &one, a, 1), SP_OK);
    cr_assert_eq(one, 42);
    cr_assert_eq(sp_device_free(dev, a), SP_EMAPPED, "still mapped");
    cr_assert_eq(sp_device_host_unmap(dev, a), SP_OK);
    cr_assert_eq(sp_device_host_unmap(dev, a), SP_EBADPTR, "already unregistered");
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

Test(host_map, free_while_mapped_is_refused)
{
    sp_device *dev = open_device(6, false);
    uint64_t a = must_malloc(dev, 4096);
    unsigned char *h = sp_device_host_map(dev, a + 128, 64);
    cr_assert_not_null(h);
    capture_reset();
    cr_assert_eq(sp_device_free(dev, a), SP_EMAPPED);
    cr_assert_eq(captured_errors, 1);
    cr_assert(strstr(captured_last, hex(a)), "%s", captured_last);
    cr_assert_eq(sp_device_committed_bytes(dev), 4096, "the buffer is still live");
    h[0] = 7; /* and still mapped */
    cr_assert_eq(sp_device_host_unmap(dev, a + 128), SP_OK);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

Test(host_map, registering_twice_counts_references)
{
    sp_device *dev = open_device(7, false);
    uint64_t a = must_malloc(dev, 4096);
    unsigned char *h1 = sp_device_host_map(dev, a, 100);
    unsigned char *h2 = sp_device_host_map(dev, a, 4096);
    cr_assert_not_null(h1);
    cr_assert_eq(h1, h2, "one mapping per dev_ptr");
    cr_assert_eq(sp_device_host_unmap(dev, a), SP_OK);
    h2[4095] = 9; /* one reference left: still mapped */
    cr_assert_eq(sp_device_free(dev, a), SP_EMAPPED);
    cr_assert_eq(sp_device_host_unmap(dev, a), SP_OK);
    cr_assert_eq(sp_device_host_unmap(dev, a), SP_EBADPTR);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

Test(host_map, no_host_map_device_returns_null)
{
    sp_device *dev = open_device(8, true);
    uint64_t a = must_malloc(dev, 4096);
    capture_reset();
    cr_assert_null(sp_device_host_map(dev, a, 4096));
    cr_assert_eq(captured_errors, 0, "not an error: callers fall back to copies");
    unsigned char v = 5, back = 0;
    cr_assert_eq(sp_device_copy_to(dev, a, &v, 1), SP_OK);
    cr_assert_eq(sp_device_copy_from(dev, &back, a, 1), SP_OK);
    cr_assert_eq(back, 5);
    cr_assert_eq(sp_device_free(dev, a), SP_OK, "nothing was registered");
    sp_device_close(dev);
}

Test(host_map, teardown_reports_live_maps)
{
    sp_device *dev = open_device(9, false);
    uint64_t a = must_malloc(dev, 4096);
    cr_assert_not_null(sp_device_host_map(dev, a, 4096));
    capture_reset();
    sp_device_close(dev);
    cr_assert(strstr(captured_all, "host map(s) still registered"), "%s", captured_all);
    cr_assert(strstr(captured_all, hex(a)), "%s", captured_all);
}
