/* Conformance: the host API (DESIGN.md §4.2): the static table, per-run binding to a
 * pipeline slot and an arena bank, and the per-run storage behind it —
 * retained temp buffers and arena banks that two bound runs never share,
 * reuse while a request fits, and roll back on a failed grow. */
#include "memory_test_support.h"

TestSuite(host_api, .init = capture_log);

static sp_host_api bind(sp_device *dev, uint32_t slot, uint32_t bank)
{
    sp_host_api api;
    int rc = sp_device_bind_host_api(dev, slot, bank, &api);
    cr_assert_eq(rc, SP_OK, "bind(%u, %u): %s", slot, bank, sp_status_name(rc));
    return api;
}

static bool disjoint(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
    return a + an <= b || b + bn <= a;
}

static void put_pattern(const sp_host_api *api, uint64_t dev, uint64_t n, unsigned seed)
{
    unsigned char buf[4096];
    cr_assert_leq(n, sizeof buf);
    for (uint64_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 13 + seed);
    cr_assert_eq(sp_host_copy_to_device(api, dev, buf, n), SP_OK);
}

static void check_pattern(const sp_host_api *api, uint64_t dev, uint64_t n, unsigned seed)
{
    unsigned char buf[4096];
    cr_assert_leq(n, sizeof buf);
    cr_assert_eq(sp_host_copy_from_device(api, buf, dev, n), SP_OK);
    for (uint64_t i = 0; i < n; i++)
        cr_assert_eq(buf[i], (unsigned char)(i * 13 + seed), "byte %" PRIu64 " of %s", i, hex(dev));
}

Test(host_api, table_is_static_and_complete)
{
    const sp_host_api_functions *f = sp_device_host_api_functions();
    cr_assert_not_null(f);
    cr_assert_eq(f, sp_device_host_api_functions(), "one table per backend");
    cr_assert(f->device_malloc && f->device_free && f->device_memset && f->copy_to_device &&
              f->copy_from_device && f->register_device_memory_to_host &&
              f->unregister_device_memory_from_host && f->retained_temp_buffer && f->arena_commit &&
              f->callable_upload);
}

Test(host_api, bind_fills_the_value_and_checks_range)
{
    sp_device *dev = open_device(1, false);
    sp_host_api api = bind(dev, 1, 0);
    cr_assert_eq(api.runner_ctx, dev);
    cr_assert_eq(api.pipeline_slot, 1);
    cr_assert_eq(api.arena_bank, 0);
    cr_assert_eq(api.functions, sp_device_host_api_functions());
    sp_host_api out;
    cr_assert_eq(sp_device_bind_host_api(dev, SP_DEVICE_STORAGE_SLOTS, 0, &out), SP_ESLOT);
    cr_assert_eq(sp_device_bind_host_api(dev, 0, SP_DEVICE_STORAGE_SLOTS, &out), SP_ESLOT);
    cr_assert_eq(sp_device_bind_host_api(dev, 0, 0, NULL), SP_EINVAL);
    sp_device_close(dev);
}

Test(host_api, device_memory_through_the_table)
{
    sp_device *dev = open_device(2, false);
    sp_host_api api = bind(dev, 0, 0);
    uint64_t a;
    cr_assert_eq(sp_host_malloc(&api, 256, &a), SP_OK);
    cr_assert_eq(sp_host_memset(&api, a, 0, 256), SP_OK);
    put_pattern(&api, a, 256, 4);
    check_pattern(&api, a, 256, 4);
    unsigned char *h = sp_host_map(&api, a, 256);
    cr_assert_not_null(h);
    cr_assert_eq(h[1], (unsigned char)(13 + 4));
    cr_assert_eq(sp_host_free(&api, a), SP_EMAPPED);
    cr_assert_eq(sp_host_unmap(&api, a), SP_OK);
    cr_assert_eq(sp_host_free(&api, a), SP_OK);
    cr_assert_eq(sp_host_free(&api, a), SP_EDOUBLEFREE);
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    sp_device_close(dev);
}

Test(host_api, callable_upload_copies_the_blob)
{
    sp_device *dev = open_device(3, false);
    sp_host_api api = bind(dev, 0, 0);
    static const char blob[] = "a callable blob, versioned and self-contained";
    uint64_t d;
    cr_assert_eq(sp_host_callable_upload(&api, blob, sizeof blob, &d), SP_OK);
    char back[sizeof blob];
    cr_assert_eq(sp_host_copy_from_device(&api, back, d, sizeof back), SP_OK);
    cr_assert_str_eq(back, blob);
    cr_assert_eq(sp_host_callable_upload(&api, NULL, 8, &d), SP_EINVAL);
    cr_assert_eq(sp_host_callable_upload(&api, blob, 0, &d), SP_EINVAL);
    cr_assert_eq(sp_host_free(&api, d), SP_OK, "the caller owns the copy");
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    sp_device_close(dev);
}

Test(host_api, two_bound_runs_never_share_storage)
{
    sp_device *dev = open_device(4, false);
    sp_host_api r0 = bind(dev, 0, 0), r1 = bind(dev, 1, 1);

    uint64_t t0, t1;
    cr_assert_eq(sp_host_retained_temp(&r0, 4096, &t0), SP_OK);
    cr_assert_eq(sp_host_retained_temp(&r1, 4096, &t1), SP_OK);
    cr_assert(disjoint(t0, 4096, t1, 4096), "slots 0 and 1 have their own buffers");

    sp_arena_request req = {.heap_bytes = 1 << 20, .shm_bytes = 4096, .image_bytes = 3000};
    sp_arena a0, a1;
    cr_assert_eq(sp_host_arena_commit(&r0, &req, &a0), SP_OK);
    cr_assert_eq(sp_host_arena_commit(&r1, &req, &a1), SP_OK);
    uint64_t parts[] = {t0, t1, a0.heap, a0.shm, a0.image, a1.heap, a1.shm, a1.image};
    uint64_t sizes[] = {4096, 4096, 1 << 20, 4096, 3000, 1 << 20, 4096, 3000};
    for (int i = 0; i < 8; i++) {
        cr_assert_neq(parts[i], 0);
        for (int j = i + 1; j < 8; j++)
            cr_assert(disjoint(parts[i], sizes[i], parts[j], sizes[j]), "parts %d and %d overlap",
                      i, j);
    }

    put_pattern(&r0, t0, 4096, 1);
    put_pattern(&r0, a0.shm, 4096, 2);
    put_pattern(&r0, a0.image, 3000, 3);
    put_pattern(&r1, t1, 4096, 101);
    put_pattern(&r1, a1.shm, 4096, 102);
    put_pattern(&r1, a1.image, 3000, 103);
    /* Run 1 asks again (reusing its storage) and writes; run 0's bytes stay. */
    uint64_t t1b;
    sp_arena a1b;
    cr_assert_eq(sp_host_retained_temp(&r1, 2048, &t1b), SP_OK);
    cr_assert_eq(sp_host_arena_commit(&r1, &req, &a1b), SP_OK);
    put_pattern(&r1, t1b, 2048, 55);
    put_pattern(&r1, a1b.shm, 4096, 56);
    check_pattern(&r0, t0, 4096, 1);
    check_pattern(&r0, a0.shm, 4096, 2);
    check_pattern(&r0, a0.image, 3000, 3);
    check_pattern(&r1, a1.image, 3000, 103);
    cr_assert_eq(captured_errors, 0, "%s", captured_all);
    sp_device_close(dev);
}

Test(host_api, retained_temp_is_reused_while_it_fits)
{
    sp_device *dev = open_device(5, false);
    sp_host_api r = bind(dev, 1, 0);
    uint64_t t1, t2, t3, t4;
    cr_assert_eq(sp_host_retained_temp(&r, 10000, &t1), SP_OK);
    uint64_t committed = sp_device_committed_bytes(dev);
    cr_assert_eq(sp_host_retained_temp(&r, 10000, &t2), SP_OK);
    cr_assert_eq(sp_host_retained_temp(&r, 100, &t3), SP_OK);
    cr_assert_eq(t2, t1, "same request: same buffer");
    cr_assert_eq(t3, t1, "smaller request: same buffer");
    cr_assert_eq(sp_device_committed_bytes(dev), committed, "nothing new allocated");

    cr_assert_eq(sp_host_retained_temp(&r, 1 << 20, &t4), SP_OK);
    unsigned char z[1] = {0};
    cr_assert_eq(sp_host_copy_to_device(&r, t4 + (1 << 20) - 1, z, 1), SP_OK, "big enough");
    cr_assert_eq(sp_device_committed_bytes(dev), 1 << 20, "the old buffer was released");
    uint64_t t5;
    cr_assert_eq(sp_host_retained_temp(&r, 5000, &t5), SP_OK);
    cr_assert_eq(t5, t4, "kept at its high-water mark");
    cr_assert_eq(sp_host_free(&r, t4), SP_EBADPTR, "the device owns run storage");
    cr_assert_eq(sp_host_retained_temp(&r, 0, &t5), SP_EINVAL);
    sp_device_close(dev);
}

Test(host_api, retained_temp_failed_grow_keeps_the_old_buffer)
{
    sp_device *dev = open_device(6, false);
    sp_host_api r = bind(dev, 0, 0);
    uint64_t t, t2;
    cr_assert_eq(sp_host_retained_temp(&r, 4096, &t), SP_OK);
    put_pattern(&r, t, 4096, 77);
    cr_assert_eq(sp_host_retained_temp(&r, TEST_MEMORY_BYTES * 2, &t2), SP_EDEVMEM);
    cr_assert_eq(sp_device_committed_bytes(dev), 4096);
    cr_assert_eq(sp_host_retained_temp(&r, 4096, &t2), SP_OK);
    cr_assert_eq(t2, t);
    check_pattern(&r, t, 4096, 77);
    sp_device_close(dev);
}

Test(host_api, arena_commit_is_idempotent_while_it_fits)
{
    sp_device *dev = open_device(7, false);
    sp_host_api r = bind(dev, 0, 1);
    sp_arena_request req = {.heap_bytes = 65536, .shm_bytes = 1024, .image_bytes = 8192};
    sp_arena a, b, c;
    cr_assert_eq(sp_host_arena_commit(&r, &req, &a), SP_OK);
    cr_assert_eq(a.size.heap_bytes, 65536);
    cr_assert_eq(a.size.shm_bytes, 1024);
    cr_assert_eq(a.size.image_bytes, 8192);
    uint64_t committed = sp_device_committed_bytes(dev);
    cr_assert_eq(sp_host_arena_commit(&r, &req, &b), SP_OK);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "same request: same arena");
    sp_arena_request smaller = {.heap_bytes = 100, .shm_bytes = 0, .image_bytes = 8192};
    cr_assert_eq(sp_host_arena_commit(&r, &smaller, &c), SP_OK);
    cr_assert_eq(memcmp(&a, &c, sizeof a), 0, "a request that fits keeps the arena");
    cr_assert_eq(sp_device_committed_bytes(dev), committed);

    /* Growing one part moves only that part. */
    put_pattern(&r, a.image, 4096, 9);
    sp_arena_request bigger_heap = {.heap_bytes = 1 << 20, .shm_bytes = 1024, .image_bytes = 8192};
    sp_arena d;
    cr_assert_eq(sp_host_arena_commit(&r, &bigger_heap, &d), SP_OK);
    cr_assert_eq(d.size.heap_bytes, 1 << 20);
    cr_assert_eq(d.shm, a.shm);
    cr_assert_eq(d.image, a.image);
    check_pattern(&r, d.image, 4096, 9);
    cr_assert_eq(sp_device_committed_bytes(dev), (1 << 20) + 1024 + 8192,
                 "the old heap was released");
    sp_device_close(dev);
}

Test(host_api, arena_zero_sized_part_has_address_zero)
{
    sp_device *dev = open_device(8, false);
    sp_host_api r = bind(dev, 1, 1);
    sp_arena_request req = {.heap_bytes = 4096, .shm_bytes = 0, .image_bytes = 0};
    sp_arena a;
    cr_assert_eq(sp_host_arena_commit(&r, &req, &a), SP_OK);
    cr_assert_neq(a.heap, 0);
    cr_assert_eq(a.shm, 0);
    cr_assert_eq(a.image, 0);
    cr_assert_eq(a.size.shm_bytes, 0);
    sp_device_close(dev);
}

Test(host_api, failed_arena_commit_rolls_back)
{
    sp_device *dev = open_device(9, false);
    sp_host_api r = bind(dev, 0, 0);
    sp_arena_request req = {.heap_bytes = 4096, .shm_bytes = 4096, .image_bytes = 4096};
    sp_arena a, b;
    cr_assert_eq(sp_host_arena_commit(&r, &req, &a), SP_OK);
    put_pattern(&r, a.heap, 4096, 1);
    put_pattern(&r, a.shm, 4096, 2);
    put_pattern(&r, a.image, 4096, 3);
    uint64_t committed = sp_device_committed_bytes(dev);

    /* Heap and shm can grow, the image cannot: nothing may change. */
    sp_arena_request too_big = {
        .heap_bytes = 8 << 20, .shm_bytes = 1 << 20, .image_bytes = TEST_MEMORY_BYTES};
    memset(&b, 0xCC, sizeof b);
    capture_reset();
    cr_assert_eq(sp_host_arena_commit(&r, &too_big, &b), SP_EDEVMEM);
    cr_assert_geq(captured_errors, 1);
    cr_assert(strstr(captured_all, "keeps its previous arena"), "%s", captured_all);
    cr_assert_eq(sp_device_committed_bytes(dev), committed, "nothing leaked");

    cr_assert_eq(sp_host_arena_commit(&r, &req, &b), SP_OK);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "the previous arena is intact");
    check_pattern(&r, a.heap, 4096, 1);
    check_pattern(&r, a.shm, 4096, 2);
    check_pattern(&r, a.image, 4096, 3);
    cr_assert_eq(sp_device_committed_bytes(dev), committed);
    sp_device_close(dev);
}

Test(host_api, growing_mapped_storage_is_refused)
{
    sp_device *dev = open_device(10, false);
    sp_host_api r = bind(dev, 0, 0);
    uint64_t t, t2;
    cr_assert_eq(sp_host_retained_temp(&r, 4096, &t), SP_OK);
    cr_assert_not_null(sp_host_map(&r, t, 4096));
    cr_assert_eq(sp_host_retained_temp(&r, 8192, &t2), SP_EMAPPED);
    cr_assert_eq(sp_host_retained_temp(&r, 4096, &t2), SP_OK, "fitting requests still work");
    cr_assert_eq(t2, t);
    cr_assert_eq(sp_host_unmap(&r, t), SP_OK);
    cr_assert_eq(sp_host_retained_temp(&r, 8192, &t2), SP_OK);
    sp_device_close(dev);
}

Test(host_api, out_of_range_slot_or_bank)
{
    sp_device *dev = open_device(11, false);
    const sp_host_api_functions *f = sp_device_host_api_functions();
    uint64_t t;
    sp_arena a;
    sp_arena_request req = {.heap_bytes = 64};
    capture_reset();
    cr_assert_eq(f->retained_temp_buffer(dev, SP_DEVICE_STORAGE_SLOTS, 64, &t), SP_ESLOT);
    cr_assert_eq(f->arena_commit(dev, SP_DEVICE_STORAGE_SLOTS, &req, &a), SP_ESLOT);
    cr_assert_eq(sp_device_retained_temp(dev, UINT32_MAX, 64, &t), SP_ESLOT);
    cr_assert_eq(sp_device_arena_commit(dev, UINT32_MAX, &req, &a), SP_ESLOT);
    cr_assert_eq(captured_errors, 4);
    cr_assert_eq(sp_device_committed_bytes(dev), 0);
    sp_device_close(dev);
}

Test(host_api, run_storage_is_released_quietly_at_teardown)
{
    sp_device *dev = open_device(12, false);
    sp_host_api r0 = bind(dev, 0, 0), r1 = bind(dev, 1, 1);
    uint64_t t;
    sp_arena a;
    sp_arena_request req = {.heap_bytes = 4096, .shm_bytes = 4096, .image_bytes = 4096};
    cr_assert_eq(sp_host_retained_temp(&r0, 4096, &t), SP_OK);
    cr_assert_eq(sp_host_retained_temp(&r1, 4096, &t), SP_OK);
    cr_assert_eq(sp_host_arena_commit(&r0, &req, &a), SP_OK);
    cr_assert_eq(sp_host_arena_commit(&r1, &req, &a), SP_OK);
    capture_reset();
    sp_device_close(dev);
    cr_assert_eq(captured_warnings + captured_errors, 0, "device-owned storage is no leak: %s",
                 captured_all);
}
