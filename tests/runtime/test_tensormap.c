/* The TensorMap's dependency rules (runtime/shared/tensormap.h), one rule
 * per test, straight on sp_tensormap_access: creator, RAW, WAW, WAR, NO_DEP,
 * manual scopes, merged duplicates, exact tile overlap, conservative overlap
 * for other layouts, covering writes, lazy retirement and both limits. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runtime/shared/tensormap.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

/* Fake device buffers: 64-byte aligned, far apart. */
#define BUF_A 0x7f0000100000ull
#define BUF_B 0x7f0000200000ull

static sp_tensormap map;
static void *map_mem;
static sp_dep_list deps;

static void map_open(uint32_t entries)
{
    size_t bytes = sp_tensormap_bytes(entries);
    map_mem = malloc(bytes);
    cr_assert_not_null(map_mem);
    cr_assert_eq(sp_tensormap_init(&map, map_mem, bytes, entries), SP_OK);
}

static void setup(void)
{
    map_open(256);
}

static void teardown(void)
{
    free(map_mem);
    map_mem = NULL;
}

TestSuite(tensormap, .init = setup, .fini = teardown);

/* A contiguous f32 tensor of `n` elements over a whole buffer. */
static sp_tensor vec(uint64_t addr, int64_t n, int64_t owner)
{
    sp_tensor t;
    cr_assert_eq(sp_tensor_init(&t, addr, SP_DTYPE_F32, 1, &n), SP_OK);
    t.owner_task = owner;
    return t;
}

/* A 64x64 f32 matrix over a whole buffer. */
static sp_tensor matrix(uint64_t addr)
{
    const int64_t shape[2] = {64, 64};
    sp_tensor t;
    cr_assert_eq(sp_tensor_init(&t, addr, SP_DTYPE_F32, 2, shape), SP_OK);
    return t;
}

/* Rows [r, r+h) x columns [c, c+w) of `m`. */
static sp_tensor tile(const sp_tensor *m, int64_t r, int64_t h, int64_t c, int64_t w)
{
    sp_tensor rows, t;
    cr_assert_eq(sp_tensor_slice(m, 0, r, h, &rows), SP_OK);
    cr_assert_eq(sp_tensor_slice(&rows, 1, c, w, &t), SP_OK);
    return t;
}

/* Task `task` accesses `t` with `dir`; returns its producers (fresh list). */
static const sp_dep_list *access_dir(int64_t task, const sp_tensor *t, int dir, bool manual)
{
    deps.count = 0;
    int rc = sp_tensormap_access(&map, task, t, dir, manual, &deps);
    cr_assert_eq(rc, SP_OK, "task %lld access: %s", (long long)task, sp_status_name(rc));
    return &deps;
}

static const sp_dep_list *acc(int64_t task, const sp_tensor *t, int dir)
{
    return access_dir(task, t, dir, false);
}

static void expect_none(const sp_dep_list *d)
{
    cr_assert_eq(d->count, 0, "expected no edge, got %u (first from %lld)", d->count,
                 d->count ? (long long)d->producer[0] : -1LL);
}

/* Exactly one edge, from `producer`, of `kind`. */
static void expect_one(const sp_dep_list *d, int64_t producer, sp_edge_kind kind)
{
    cr_assert_eq(d->count, 1, "expected one edge from %lld, got %u", (long long)producer, d->count);
    cr_assert_eq(d->producer[0], producer);
    cr_assert_eq(d->kind[0], kind, "edge kind %u, expected %u", d->kind[0], kind);
}

static int find_producer(const sp_dep_list *d, int64_t producer)
{
    for (uint32_t i = 0; i < d->count; i++)
        if (d->producer[i] == producer)
            return (int)i;
    return -1;
}

Test(tensormap, creator_edge_from_owner_task)
{
    sp_tensor t = vec(BUF_A, 256, 3);
    expect_one(acc(5, &t, SP_IN), 3, SP_EDGE_CREATOR);
    /* Any direction gets it: a later writer of a fresh buffer too. */
    sp_tensor u = vec(BUF_B, 256, 4);
    expect_one(acc(6, &u, SP_INOUT), 4, SP_EDGE_CREATOR);
    /* A tensor the task itself created gives no self edge. */
    sp_tensor own = vec(BUF_B + 0x10000, 16, 7);
    expect_none(acc(7, &own, SP_OUT));
}

Test(tensormap, read_after_write)
{
    sp_tensor t = vec(BUF_A, 256, SP_NO_TASK);
    expect_none(acc(0, &t, SP_OUT_EXISTING));
    expect_one(acc(1, &t, SP_IN), 0, SP_EDGE_RAW);
    /* A read of a disjoint range of the buffer does not wait. */
    sp_tensor other = vec(BUF_B, 256, SP_NO_TASK);
    expect_none(acc(2, &other, SP_IN));
}

Test(tensormap, write_after_write)
{
    sp_tensor t = vec(BUF_A, 256, SP_NO_TASK);
    expect_none(acc(0, &t, SP_OUT_EXISTING));
    expect_one(acc(1, &t, SP_OUT_EXISTING), 0, SP_EDGE_WAW);
    expect_one(acc(2, &t, SP_INOUT), 1, SP_EDGE_WAW);
}

Test(tensormap, write_after_read_waits_for_every_reader)
{
    sp_tensor t = vec(BUF_A, 256, SP_NO_TASK);
    expect_none(acc(0, &t, SP_IN));
    expect_none(acc(1, &t, SP_IN));
    expect_none(acc(2, &t, SP_IN));
    const sp_dep_list *d = acc(3, &t, SP_OUT_EXISTING);
    cr_assert_eq(d->count, 3, "a write after 3 reads waits for all of them, got %u", d->count);
    for (int64_t r = 0; r < 3; r++) {
        int i = find_producer(d, r);
        cr_assert_geq(i, 0, "no WAR edge from reader %lld", (long long)r);
        cr_assert_eq(d->kind[i], SP_EDGE_WAR);
    }
    /* The write ended the read epoch: the next writer waits for it only. */
    expect_one(acc(4, &t, SP_OUT_EXISTING), 3, SP_EDGE_WAW);
}

Test(tensormap, no_dep_gets_only_the_creator_edge)
{
    sp_tensor t = vec(BUF_A, 256, 2);
    expect_one(acc(3, &t, SP_INOUT), 2, SP_EDGE_CREATOR);
    cr_assert_eq(map.used, 1);
    /* Task 3 wrote t: a NO_DEP access still waits for the creator only. */
    expect_one(acc(4, &t, SP_NO_DEP), 2, SP_EDGE_CREATOR);
    cr_assert_eq(map.used, 1, "a NO_DEP access is not recorded");
    /* So a later read waits for the writer 3 (which implies the creator),
     * never for the NO_DEP task 4. */
    expect_one(acc(5, &t, SP_IN), 3, SP_EDGE_RAW);
    /* Without an owner a NO_DEP access derives nothing at all. */
    sp_tensor free_t = vec(BUF_B, 64, SP_NO_TASK);
    expect_none(acc(6, &free_t, SP_OUT_EXISTING));
    expect_none(acc(7, &free_t, SP_NO_DEP));
}

Test(tensormap, manual_scope_records_but_derives_no_edge)
{
    sp_tensor t = vec(BUF_A, 256, 0);
    expect_none(access_dir(0, &t, SP_OUT, false));
    /* Manual: neither the RAW edge from 0 nor the creator edge to 0. */
    expect_none(access_dir(1, &t, SP_IN, true));
    expect_none(access_dir(2, &t, SP_INOUT, true));
    /* Recorded all the same: a later auto writer waits for the manual writer. */
    const sp_dep_list *d = acc(3, &t, SP_OUT_EXISTING);
    cr_assert_geq(find_producer(d, 2), 0, "the manual access was not recorded");
}

Test(tensormap, duplicate_edges_are_merged)
{
    sp_tensor a = vec(BUF_A, 256, SP_NO_TASK), b = vec(BUF_B, 256, SP_NO_TASK);
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    expect_none(acc(0, &b, SP_OUT_EXISTING));
    /* Task 1 reads both outputs of task 0: one edge, not two. */
    deps.count = 0;
    cr_assert_eq(sp_tensormap_access(&map, 1, &a, SP_IN, false, &deps), SP_OK);
    cr_assert_eq(sp_tensormap_access(&map, 1, &b, SP_IN, false, &deps), SP_OK);
    expect_one(&deps, 0, SP_EDGE_RAW);
    /* And at the list level: a repeat or a self edge adds nothing. */
    sp_dep_list l = {.count = 0};
    cr_assert_eq(sp_dep_list_add(&l, 4, 9, SP_EDGE_EXPLICIT), SP_OK);
    cr_assert_eq(sp_dep_list_add(&l, 4, 9, SP_EDGE_RAW), SP_OK);
    cr_assert_eq(sp_dep_list_add(&l, 9, 9, SP_EDGE_RAW), SP_OK);
    expect_one(&l, 4, SP_EDGE_EXPLICIT); /* first kind kept */
}

Test(tensormap, tiles_of_one_matrix_overlap_exactly)
{
    sp_tensor m = matrix(BUF_A);
    sp_tensor left = tile(&m, 0, 32, 0, 32), right = tile(&m, 0, 32, 32, 32);
    sp_tensor middle = tile(&m, 16, 32, 16, 32);
    uint64_t llo, lhi, rlo, rhi;
    cr_assert_eq(sp_tensor_byte_extent(&left, &llo, &lhi), SP_OK);
    cr_assert_eq(sp_tensor_byte_extent(&right, &rlo, &rhi), SP_OK);
    cr_assert(llo < rhi && rlo < lhi, "the tiles' byte ranges interleave (rows share lines)");

    expect_none(acc(0, &left, SP_OUT_EXISTING));
    expect_none(acc(1, &right, SP_IN)); /* disjoint tile: no edge despite the byte ranges */
    expect_one(acc(2, &right, SP_OUT_EXISTING), 1, SP_EDGE_WAR); /* not WAW from 0 */
    const sp_dep_list *d = acc(3, &middle, SP_IN);               /* overlaps both */
    cr_assert_eq(d->count, 2);
    cr_assert_geq(find_producer(d, 0), 0);
    cr_assert_geq(find_producer(d, 2), 0);
}

Test(tensormap, different_layouts_overlap_conservatively)
{
    sp_tensor m = matrix(BUF_A);
    sp_tensor right = tile(&m, 0, 32, 32, 32), left = tile(&m, 0, 32, 0, 32), left_t;
    cr_assert_eq(sp_tensor_transpose(&left, 0, 1, &left_t), SP_OK);
    expect_none(acc(0, &right, SP_OUT_EXISTING));
    /* The transposed left tile shares no element with the right tile, but
     * its layout differs: only bytes are compared, and they overlap. */
    expect_one(acc(1, &left_t, SP_IN), 0, SP_EDGE_RAW);
    /* Same for a flat view (another rank) over the same bytes. */
    sp_tensor flat = vec(BUF_A, 64, SP_NO_TASK); /* row 0, columns 0..63 */
    const sp_dep_list *d = acc(2, &flat, SP_IN);
    cr_assert_geq(find_producer(d, 0), 0);
    /* Bytes apart stay apart whatever the layout. */
    sp_tensor far = tile(&m, 40, 8, 0, 64), far_t;
    cr_assert_eq(sp_tensor_transpose(&far, 0, 1, &far_t), SP_OK);
    expect_none(acc(3, &far_t, SP_IN));
}

Test(tensormap, covering_writes_form_a_chain)
{
    sp_tensor m = matrix(BUF_A);
    sp_tensor t = tile(&m, 8, 16, 8, 16); /* strided: covered by box containment */
    sp_tensor whole = vec(BUF_B, 1024, SP_NO_TASK);
    for (int64_t k = 0; k < 8; k++) {
        const sp_dep_list *d = acc(k, &t, SP_INOUT);
        if (k == 0)
            expect_none(d);
        else
            expect_one(d, k - 1, SP_EDGE_WAW); /* the predecessor only, not all-pairs */
        cr_assert_eq(map.used, 1, "the covered entry of task %lld was not superseded",
                     (long long)k - 1);
    }
    /* A contiguous buffer rewritten again and again: the same. */
    for (int64_t k = 8; k < 16; k++) {
        const sp_dep_list *d = acc(k, &whole, SP_OUT_EXISTING);
        if (k > 8)
            expect_one(d, k - 1, SP_EDGE_WAW);
    }
    cr_assert_eq(map.used, 2);
    /* A smaller write does not cover a bigger one: both stay. */
    sp_tensor part = tile(&m, 8, 4, 8, 4);
    expect_one(acc(16, &part, SP_OUT_EXISTING), 7, SP_EDGE_WAW);
    cr_assert_eq(map.used, 3);
}

Test(tensormap, retired_tasks_give_no_edges_and_free_their_entries)
{
    sp_tensor t = vec(BUF_A, 256, SP_NO_TASK);
    expect_none(acc(0, &t, SP_OUT_EXISTING));
    expect_one(acc(1, &t, SP_IN), 0, SP_EDGE_RAW);
    cr_assert_eq(map.used, 2);
    sp_tensormap_retire_below(&map, 2);
    cr_assert(!sp_tensormap_touched(&map, BUF_A, 0, 1024, false));
    /* A write now would have waited for both: they retired, so nothing. */
    expect_none(acc(2, &t, SP_OUT_EXISTING));
    cr_assert_eq(map.used, 1, "retired entries met on the way were not released");
    /* Retirement never moves backwards. */
    sp_tensormap_retire_below(&map, 1);
    expect_one(acc(3, &t, SP_IN), 2, SP_EDGE_RAW);
}

Test(tensormap, full_map_is_a_graph_limit)
{
    teardown();
    map_open(2);
    sp_tensor a = vec(BUF_A, 64, SP_NO_TASK), b = vec(BUF_B, 64, SP_NO_TASK);
    sp_tensor c = vec(BUF_B + 0x10000, 64, 0);
    expect_none(acc(0, &a, SP_IN));
    expect_none(acc(1, &b, SP_IN));
    deps.count = 0;
    cr_assert_eq(sp_tensormap_access(&map, 2, &c, SP_IN, false, &deps), SP_EGRAPH_LIMIT);
    cr_assert_eq(deps.count, 0, "nothing derived when the map is full");
    cr_assert_eq(map.used, 2, "nothing recorded when the map is full");
}

Test(tensormap, dep_list_limit_is_a_graph_limit)
{
    sp_dep_list l = {.count = 0};
    for (int64_t p = 0; p < SP_MAX_PRODUCERS; p++)
        cr_assert_eq(sp_dep_list_add(&l, p, 100000, SP_EDGE_EXPLICIT), SP_OK);
    cr_assert_eq(sp_dep_list_add(&l, SP_MAX_PRODUCERS, 100000, SP_EDGE_EXPLICIT), SP_EGRAPH_LIMIT);
    cr_assert_eq(l.count, SP_MAX_PRODUCERS);

    /* Through the map: a write after more readers than one task may wait for. */
    teardown();
    map_open(SP_MAX_PRODUCERS + 8);
    sp_tensor t = vec(BUF_A, 256, SP_NO_TASK);
    for (int64_t r = 0; r <= SP_MAX_PRODUCERS; r++)
        expect_none(acc(r, &t, SP_IN));
    deps.count = 0;
    cr_assert_eq(sp_tensormap_access(&map, SP_MAX_PRODUCERS + 1, &t, SP_OUT_EXISTING, false, &deps),
                 SP_EGRAPH_LIMIT);
}
