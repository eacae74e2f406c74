/* Conformance: device memory (platform/device.h) — alignment and no
 * overlap, invalid sizes and outputs, committed bytes, exhaustion as a
 * logged status, bad pointers and double frees told apart, many and
 * concurrent allocations. */
#include <pthread.h>

#include "memory_test_support.h"

TestSuite(allocator, .init = capture_log);

Test(allocator, alignment_and_no_overlap)
{
    sp_device *dev = open_device(1, false);
    static const uint64_t sizes[] = {1, 63, 64, 65, 1000, 4095, 65536, 100000, 3, 1 << 20};
    enum { N = sizeof sizes / sizeof sizes[0] };
    uint64_t p[N];
    for (int i = 0; i < N; i++) {
        p[i] = must_malloc(dev, sizes[i]);
        cr_assert_eq(p[i] % 64, 0, "malloc(%" PRIu64 ") = %s is not 64-byte aligned", sizes[i],
                     hex(p[i]));
        if (sizes[i] >= 65536)
            cr_assert_eq(p[i] % 4096, 0, "large malloc(%" PRIu64 ") = %s not page aligned",
                         sizes[i], hex(p[i]));
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (i != j)
                cr_assert(p[i] + sizes[i] <= p[j] || p[j] + sizes[j] <= p[i],
                          "allocations %d and %d overlap", i, j);
    for (int i = 0; i < N; i++)
        cr_assert_eq(sp_device_free(dev, p[i]), SP_OK);
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    cr_assert_eq(captured_errors, 0, "%s", captured_all);
    sp_device_close(dev);
}

Test(allocator, zero_bytes_and_null_output_are_invalid)
{
    sp_device *dev = open_device(2, false);
    uint64_t p = 0;
    cr_assert_eq(sp_device_malloc(dev, 0, &p), SP_EINVAL);
    cr_assert_eq(sp_device_malloc(dev, 64, NULL), SP_EINVAL);
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    sp_device_close(dev);
}

Test(allocator, committed_bytes_follow_live_allocations)
{
    sp_device *dev = open_device(3, false);
    cr_assert_eq(sp_device_memory_bytes(dev), TEST_MEMORY_BYTES);
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    uint64_t a = must_malloc(dev, 4096);
    cr_assert_eq(sp_device_committed_bytes(dev), 4096);
    uint64_t b = must_malloc(dev, 100); /* rounds up to the 64-byte granule */
    cr_assert_eq(sp_device_committed_bytes(dev), 4096 + 128);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    cr_assert_eq(sp_device_committed_bytes(dev), 128);
    cr_assert_eq(sp_device_free(dev, b), SP_OK);
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    sp_device_close(dev);
}

Test(allocator, exhaustion_is_a_logged_status)
{
    sp_device *dev = open_device(4, false);
    uint64_t p = 0;
    capture_reset();
    cr_assert_eq(sp_device_malloc(dev, TEST_MEMORY_BYTES + 1, &p), SP_EDEVMEM);
    cr_assert_eq(captured_errors, 1);
    cr_assert(strstr(captured_last, "out of device memory"), "%s", captured_last);
    cr_assert_eq(sp_device_malloc(dev, UINT64_MAX, &p), SP_EDEVMEM);

    uint64_t all = must_malloc(dev, TEST_MEMORY_BYTES); /* the whole arena fits */
    cr_assert_eq(sp_device_committed_bytes(dev), TEST_MEMORY_BYTES);
    capture_reset();
    cr_assert_eq(sp_device_malloc(dev, 1, &p), SP_EDEVMEM);
    cr_assert_eq(captured_errors, 1);
    cr_assert_eq(sp_device_committed_bytes(dev), TEST_MEMORY_BYTES, "a failure changes nothing");
    cr_assert_eq(sp_device_free(dev, all), SP_OK);
    must_malloc(dev, 1); /* usable again: the failure left no damage */
    sp_device_close(dev);
}

Test(allocator, bad_pointer_is_refused_and_logged)
{
    sp_device *dev = open_device(9, false);
    uint64_t a = must_malloc(dev, 4096);
    capture_reset();
    cr_assert_eq(sp_device_free(dev, a + 64), SP_EBADPTR, "interior pointer");
    cr_assert_eq(captured_errors, 1);
    cr_assert(strstr(captured_last, hex(a + 64)), "the line names the address: %s", captured_last);
    int host_local = 0;
    cr_assert_eq(sp_device_free(dev, (uint64_t)(uintptr_t)&host_local), SP_EBADPTR, "host pointer");
    cr_assert_eq(sp_device_free(dev, 0), SP_EBADPTR);
    cr_assert_eq(sp_device_free(dev, a + TEST_MEMORY_BYTES * 4), SP_EBADPTR, "past the arena");
    cr_assert_eq(captured_errors, 4);
    cr_assert_eq(sp_device_committed_bytes(dev), 4096, "refused frees change nothing");
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    sp_device_close(dev);
}

Test(allocator, double_free_is_told_apart_from_a_bad_pointer)
{
    sp_device *dev = open_device(10, false);
    uint64_t a = must_malloc(dev, 256);
    uint64_t b = must_malloc(dev, 256);
    uint64_t keep = must_malloc(dev, 256);
    cr_assert_eq(sp_device_free(dev, a), SP_OK);
    capture_reset();
    cr_assert_eq(sp_device_free(dev, a), SP_EDOUBLEFREE);
    cr_assert_eq(captured_errors, 1);
    cr_assert(strstr(captured_last, "double free"), "%s", captured_last);
    cr_assert_eq(sp_device_free(dev, a + 64), SP_EBADPTR, "never a block start");

    /* Still a double free after the freed ranges merged. */
    cr_assert_eq(sp_device_free(dev, b), SP_OK);
    cr_assert_eq(sp_device_free(dev, a), SP_EDOUBLEFREE);
    cr_assert_eq(sp_device_free(dev, b), SP_EDOUBLEFREE);

    /* Once the address is handed out again, freeing it is legal (once). */
    uint64_t c = must_malloc(dev, 512);
    cr_assert_eq(c, a);
    cr_assert_eq(sp_device_free(dev, b), SP_EBADPTR, "b now lies inside c");
    cr_assert_eq(sp_device_free(dev, c), SP_OK);
    cr_assert_eq(sp_device_free(dev, c), SP_EDOUBLEFREE);
    cr_assert_eq(sp_device_committed_bytes(dev), 256);
    cr_assert_eq(sp_device_free(dev, keep), SP_OK);
    sp_device_close(dev);
}

Test(allocator, many_allocations)
{
    enum { N = 8000 };
    sp_device *dev = open_device(11, false);
    static uint64_t p[N];
    for (int i = 0; i < N; i++)
        p[i] = must_malloc(dev, 64 + (uint64_t)(i % 7) * 64);
    for (int i = 0; i < N; i += 3)
        cr_assert_eq(sp_device_free(dev, p[i]), SP_OK);
    for (int i = 0; i < N; i += 3)
        p[i] = must_malloc(dev, 64);
    for (int i = N - 1; i >= 0; i--)
        cr_assert_eq(sp_device_free(dev, p[i]), SP_OK);
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    must_malloc(dev, TEST_MEMORY_BYTES);
    sp_device_close(dev);
}

typedef struct churn_arg {
    sp_device *dev;
    int failures;
} churn_arg;

static void *churn(void *arg)
{
    churn_arg *c = arg;
    uint64_t held[16] = {0};
    for (int i = 0; i < 4000; i++) {
        int k = i % 16;
        if (held[k] && sp_device_free(c->dev, held[k]) != SP_OK)
            c->failures++;
        held[k] = 0;
        if (sp_device_malloc(c->dev, 64 + (uint64_t)(i % 5) * 1000, &held[k]) != SP_OK)
            c->failures++;
    }
    for (int k = 0; k < 16; k++)
        if (held[k] && sp_device_free(c->dev, held[k]) != SP_OK)
            c->failures++;
    return NULL;
}

Test(allocator, concurrent_malloc_and_free)
{
    enum { T = 4 };
    sp_device *dev = open_device(12, false);
    pthread_t th[T];
    churn_arg args[T];
    for (int t = 0; t < T; t++) {
        args[t] = (churn_arg){.dev = dev};
        cr_assert_eq(pthread_create(&th[t], NULL, churn, &args[t]), 0);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        cr_assert_eq(args[t].failures, 0);
    }
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    cr_assert_eq(captured_errors, 0, "%s", captured_all);
    sp_device_close(dev);
}
