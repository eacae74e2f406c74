/* The sim device memory allocator's own policy: first fit, coalescing of
 * free ranges, and the teardown report of leaked allocations (what every
 * backend must do is in conformance_memory.c). */
#include <pthread.h>

#include "memory_test_support.h"

TestSuite(allocator, .init = capture_log);

/* Fill the arena with 1 MiB blocks, free every other one: half the memory is
 * free but no 2 MiB range is. Freeing the rest must merge everything back
 * into one range, whatever the order of the frees. */
static void fragment_then_coalesce(int id, int order)
{
    enum { N = TEST_MEMORY_BYTES >> 20 };
    sp_device *dev = open_device(id, false);
    uint64_t p[N];
    for (int i = 0; i < N; i++)
        p[i] = must_malloc(dev, 1 << 20);
    uint64_t q;
    cr_assert_eq(sp_device_malloc(dev, 1, &q), SP_EDEVMEM, "the arena should be full");
    for (int i = 0; i < N; i += 2)
        cr_assert_eq(sp_device_free(dev, p[i]), SP_OK);
    cr_assert_eq(sp_device_committed_bytes(dev), TEST_MEMORY_BYTES / 2);
    cr_assert_eq(sp_device_malloc(dev, 2 << 20, &q), SP_EDEVMEM,
                 "no two free 1 MiB blocks are adjacent");
    /* Free the odd blocks in the order asked: ascending, descending, or
     * from both ends towards the middle. */
    for (int k = 0; k < N / 2; k++) {
        int j = order == 0 ? k : order == 1 ? N / 2 - 1 - k : (k % 2 ? N / 2 - 1 - k / 2 : k / 2);
        cr_assert_eq(sp_device_free(dev, p[2 * j + 1]), SP_OK);
    }
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    uint64_t all = must_malloc(dev, TEST_MEMORY_BYTES);
    cr_assert_eq(sp_device_free(dev, all), SP_OK);
    sp_device_close(dev);
}

Test(allocator, free_ranges_coalesce_ascending)
{
    fragment_then_coalesce(5, 0);
}

Test(allocator, free_ranges_coalesce_descending)
{
    fragment_then_coalesce(6, 1);
}

Test(allocator, free_ranges_coalesce_from_both_ends)
{
    fragment_then_coalesce(7, 2);
}

Test(allocator, freed_space_is_reused)
{
    sp_device *dev = open_device(8, false);
    uint64_t a = must_malloc(dev, 256);
    uint64_t b = must_malloc(dev, 256);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    uint64_t c = must_malloc(dev, 128); /* first fit: lands in a's old range */
    cr_assert_eq(c, a);
    cr_assert_eq(sp_device_free(dev, b), SP_OK);
    cr_assert_eq(sp_device_free(dev, c), SP_OK);
    sp_device_close(dev);
}

Test(allocator, teardown_reports_leaked_allocations)
{
    sp_device *dev = open_device(13, false);
    uint64_t a = must_malloc(dev, 1000);
    capture_reset();
    sp_device_close(dev);
    cr_assert_geq(captured_warnings, 1);
    cr_assert(strstr(captured_all, "still live at teardown"), "%s", captured_all);
    cr_assert(strstr(captured_all, hex(a)), "the leak is named: %s", captured_all);
}

Test(allocator, clean_teardown_is_silent)
{
    sp_device *dev = open_device(14, false);
    uint64_t a = must_malloc(dev, 1000);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    capture_reset();
    sp_device_close(dev);
    cr_assert_eq(captured_warnings + captured_errors, 0, "%s", captured_all);
}
