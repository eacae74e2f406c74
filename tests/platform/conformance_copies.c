/* Conformance: copies between host and device memory and device memset: round trips,
 * and every range that is not inside one live allocation refused with
 * SP_EBOUNDS and a log line that names the addresses. Large copies into
 * never-written device memory take another path (the memfd is written, not
 * the mapping): the tests near the end pin that it writes exactly the range. */
#include <stdlib.h>

#include "memory_test_support.h"

TestSuite(copies, .init = capture_log);

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + seed);
}

Test(copies, round_trip)
{
    sp_device *dev = open_device(1, false);
    enum { N = 100000 };
    unsigned char *src = malloc(N), *dst = malloc(N);
    fill(src, N, 7);
    memset(dst, 0, N);
    uint64_t a = must_malloc(dev, N);
    cr_assert_eq(sp_device_copy_to(dev, a, src, N), SP_OK);
    cr_assert_eq(sp_device_copy_from(dev, dst, a, N), SP_OK);
    cr_assert_arr_eq(dst, src, N);
    free(src);
    free(dst);
    cr_assert_eq(captured_errors, 0, "%s", captured_all);
    sp_device_close(dev);
}

Test(copies, sub_ranges_of_an_allocation)
{
    sp_device *dev = open_device(2, false);
    unsigned char zero[1000] = {0}, part[100], back[1000];
    fill(part, sizeof part, 3);
    uint64_t a = must_malloc(dev, sizeof zero);
    cr_assert_eq(sp_device_copy_to(dev, a, zero, sizeof zero), SP_OK);
    cr_assert_eq(sp_device_copy_to(dev, a + 500, part, sizeof part), SP_OK);
    cr_assert_eq(sp_device_copy_to(dev, a + 900, part, sizeof part), SP_OK, "ends at the end");
    cr_assert_eq(sp_device_copy_from(dev, back, a, sizeof back), SP_OK);
    cr_assert_arr_eq(back + 500, part, sizeof part);
    cr_assert_arr_eq(back + 900, part, sizeof part);
    cr_assert_arr_eq(back, zero, 500);
    cr_assert_arr_eq(back + 600, zero, 300);
    unsigned char one;
    cr_assert_eq(sp_device_copy_from(dev, &one, a + 501, 1), SP_OK);
    cr_assert_eq(one, part[1]);
    sp_device_close(dev);
}

Test(copies, out_of_bounds_is_refused_and_logged)
{
    sp_device *dev = open_device(3, false);
    unsigned char buf[512];
    fill(buf, sizeof buf, 1);
    uint64_t a = must_malloc(dev, 256);
    capture_reset();
    cr_assert_eq(sp_device_copy_to(dev, a, buf, 257), SP_EBOUNDS, "one byte too many");
    cr_assert_eq(captured_errors, 1);
    cr_assert(strstr(captured_last, hex(a)), "the line names the address: %s", captured_last);
    cr_assert_eq(sp_device_copy_from(dev, buf, a + 200, 100), SP_EBOUNDS, "runs off the end");
    cr_assert_eq(sp_device_copy_to(dev, a - 64, buf, 64), SP_EBOUNDS, "before the start");
    cr_assert_eq(sp_device_copy_to(dev, a + 4096 * 1024, buf, 1), SP_EBOUNDS, "free memory");
    int host_local = 0;
    cr_assert_eq(sp_device_copy_to(dev, (uint64_t)(uintptr_t)&host_local, buf, 4), SP_EBOUNDS,
                 "a host address is not device memory");
    cr_assert_eq(sp_device_copy_from(dev, buf, a, UINT64_MAX), SP_EBOUNDS, "size overflow");
    cr_assert_eq(sp_device_copy_from(dev, buf, UINT64_MAX - 8, 16), SP_EBOUNDS, "wraps");
    cr_assert_eq(captured_errors, 7, "%s", captured_all);
    sp_device_close(dev);
}

Test(copies, bounds_are_the_requested_size_not_the_rounded_one)
{
    sp_device *dev = open_device(4, false);
    unsigned char buf[128] = {0};
    uint64_t a = must_malloc(dev, 100); /* reserves 128 */
    cr_assert_eq(sp_device_copy_to(dev, a, buf, 100), SP_OK);
    cr_assert_eq(sp_device_copy_to(dev, a, buf, 101), SP_EBOUNDS);
    cr_assert_eq(sp_device_memset(dev, a + 100, 0, 1), SP_EBOUNDS);
    sp_device_close(dev);
}

Test(copies, straddling_two_allocations_is_refused)
{
    sp_device *dev = open_device(5, false);
    uint64_t a = must_malloc(dev, 64);
    uint64_t b = must_malloc(dev, 64);
    cr_assert_eq(b, a + 64, "precondition: first fit packs a and b back to back");
    unsigned char buf[64], back[64];
    fill(buf, sizeof buf, 9);
    cr_assert_eq(sp_device_copy_to(dev, b, buf, 64), SP_OK);
    capture_reset();
    cr_assert_eq(sp_device_copy_to(dev, a + 32, buf, 64), SP_EBOUNDS);
    cr_assert(strstr(captured_last, hex(a + 32)), "%s", captured_last);
    cr_assert_eq(sp_device_copy_from(dev, back, a + 32, 64), SP_EBOUNDS);
    cr_assert_eq(sp_device_memset(dev, a, 0, 128), SP_EBOUNDS);
    cr_assert_eq(sp_device_copy_from(dev, back, b, 64), SP_OK);
    cr_assert_arr_eq(back, buf, 64, "b is untouched by the refused operations");
    sp_device_close(dev);
}

Test(copies, freed_buffer_is_out_of_bounds)
{
    sp_device *dev = open_device(6, false);
    unsigned char buf[64] = {0};
    uint64_t a = must_malloc(dev, 64);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    cr_assert_eq(sp_device_copy_to(dev, a, buf, 64), SP_EBOUNDS);
    cr_assert_eq(sp_device_copy_from(dev, buf, a, 64), SP_EBOUNDS);
    cr_assert_eq(sp_device_memset(dev, a, 1, 64), SP_EBOUNDS);
    sp_device_close(dev);
}

Test(copies, null_host_pointer_is_invalid)
{
    sp_device *dev = open_device(7, false);
    uint64_t a = must_malloc(dev, 64);
    capture_reset();
    cr_assert_eq(sp_device_copy_to(dev, a, NULL, 64), SP_EINVAL);
    cr_assert_eq(sp_device_copy_from(dev, NULL, a, 64), SP_EINVAL);
    cr_assert_eq(captured_errors, 2);
    sp_device_close(dev);
}

Test(copies, memset_whole_and_part)
{
    sp_device *dev = open_device(8, false);
    enum { N = 5000 };
    unsigned char back[N], want[N];
    uint64_t a = must_malloc(dev, N);
    cr_assert_eq(sp_device_memset(dev, a, 0xAB, N), SP_OK);
    cr_assert_eq(sp_device_memset(dev, a + 1000, 0x1234, 10), SP_OK, "value taken as a byte");
    memset(want, 0xAB, N);
    memset(want + 1000, 0x34, 10);
    cr_assert_eq(sp_device_copy_from(dev, back, a, N), SP_OK);
    cr_assert_arr_eq(back, want, N);
    cr_assert_eq(sp_device_memset(dev, a + N - 10, 0, 11), SP_EBOUNDS);
    cr_assert_eq(sp_device_copy_from(dev, back, a, N), SP_OK);
    cr_assert_arr_eq(back, want, N, "a refused memset writes nothing");
    sp_device_close(dev);
}

/* Large enough for the file path of a copy in (memory.c, 256 KiB), not a
 * page multiple, and started off a page boundary below. */
enum { BIG = (3 << 20) + 1234, PAGE_OFF = 100 };

static void check_range(sp_device *dev, uint64_t a, const unsigned char *want, size_t n,
                        const char *what)
{
    unsigned char *back = malloc(n);
    cr_assert_eq(sp_device_copy_from(dev, back, a, n), SP_OK, "%s", what);
    cr_assert_arr_eq(back, want, n, "%s", what);
    free(back);
}

Test(copies, large_copy_into_fresh_memory_writes_exactly_its_range)
{
    sp_device *dev = open_device(9, false);
    size_t total = BIG + 2 * 4096;
    unsigned char *src = malloc(BIG), *want = calloc(1, total);
    fill(src, BIG, 5);
    uint64_t a = must_malloc(dev, total);
    cr_assert_eq(sp_device_copy_to(dev, a + PAGE_OFF, src, BIG), SP_OK);
    memcpy(want + PAGE_OFF, src, BIG);
    check_range(dev, a, want, total, "the copy, and zeros around it in its first and last page");
    void *h = sp_device_host_map(dev, a, total);
    cr_assert_not_null(h);
    cr_assert_arr_eq(h, want, total, "a host map sees the same bytes");
    cr_assert_eq(sp_device_host_unmap(dev, a), SP_OK);
    fill(src, BIG, 6);
    cr_assert_eq(sp_device_copy_to(dev, a + PAGE_OFF, src, BIG), SP_OK, "again, over data");
    memcpy(want + PAGE_OFF, src, BIG);
    check_range(dev, a, want, total, "the second copy replaced the first");
    cr_assert_eq(captured_errors, 0, "%s", captured_all);
    free(src);
    free(want);
    sp_device_close(dev);
}

Test(copies, large_copy_over_partly_written_memory_keeps_neighbours)
{
    sp_device *dev = open_device(10, false);
    size_t total = BIG + 3 * 4096;
    unsigned char *src = malloc(BIG), *want = calloc(1, total);
    unsigned char mark[16];
    uint64_t a = must_malloc(dev, total);
    /* Written bytes in the page the copy starts in, in a page in its middle
     * and in the page it ends in: the copy must overwrite the middle one
     * and leave the ones outside its range alone. */
    size_t start = 4096 + PAGE_OFF, mid = start + BIG / 2, end = start + BIG;
    fill(mark, sizeof mark, 1);
    cr_assert_eq(sp_device_copy_to(dev, a + start - sizeof mark, mark, sizeof mark), SP_OK);
    cr_assert_eq(sp_device_copy_to(dev, a + mid, mark, sizeof mark), SP_OK);
    cr_assert_eq(sp_device_copy_to(dev, a + end, mark, sizeof mark), SP_OK);
    memcpy(want + start - sizeof mark, mark, sizeof mark);
    memcpy(want + end, mark, sizeof mark);
    fill(src, BIG, 2);
    cr_assert_eq(sp_device_copy_to(dev, a + start, src, BIG), SP_OK);
    memcpy(want + start, src, BIG);
    check_range(dev, a, want, total, "the copy over a hole, then data, then a hole");
    /* Starting in a hole that ends in the middle of the range. */
    uint64_t b = must_malloc(dev, total);
    cr_assert_eq(sp_device_copy_to(dev, b + total / 2, mark, sizeof mark), SP_OK);
    cr_assert_eq(sp_device_copy_to(dev, b, src, BIG), SP_OK);
    memset(want, 0, total);
    memcpy(want, src, BIG); /* the mark at total / 2 lies inside the copy */
    check_range(dev, b, want, total, "a leading hole written through the file, the rest copied");
    cr_assert_eq(captured_errors, 0, "%s", captured_all);
    free(src);
    free(want);
    sp_device_close(dev);
}
