/* The TensorMap's dependency rules (runtime/device/tensormap.h), one rule
 * per test, straight on rt_tensormap_access: creator, RAW, WAW, WAR, NO_DEP,
 * manual scopes, merged duplicates, exact tile overlap, conservative overlap
 * for other layouts, covering writes, lazy retirement and both limits. Then
 * the tile-grid mode (rules, switch to treap mode, retirement, move, range
 * queries, full map) and a randomized comparison of both modes against a
 * brute-force reference of the same rules. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device/tensormap.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

/* Fake device buffers: 64-byte aligned, far apart. */
#define BUF_A 0x7f0000100000ull
#define BUF_B 0x7f0000200000ull

static rt_tensormap map;
static void *map_mem;
static rt_dep_list deps;

static void map_open(uint32_t entries)
{
    size_t bytes = rt_tensormap_bytes(entries);
    map_mem = malloc(bytes);
    cr_assert_not_null(map_mem);
    cr_assert_eq(rt_tensormap_init(&map, map_mem, bytes, entries), SP_OK);
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
static const rt_dep_list *access_dir(int64_t task, const sp_tensor *t, int dir, bool manual)
{
    deps.count = 0;
    int rc = rt_tensormap_access(&map, task, t, dir, manual, &deps);
    cr_assert_eq(rc, SP_OK, "task %lld access: %s", (long long)task, sp_status_name(rc));
    return &deps;
}

static const rt_dep_list *acc(int64_t task, const sp_tensor *t, int dir)
{
    return access_dir(task, t, dir, false);
}

static void expect_none(const rt_dep_list *d)
{
    cr_assert_eq(d->count, 0, "expected no edge, got %u (first from %lld)", d->count,
                 d->count ? (long long)d->producer[0] : -1LL);
}

/* Exactly one edge, from `producer`, of `kind`. */
static void expect_one(const rt_dep_list *d, int64_t producer, rt_edge_kind kind)
{
    cr_assert_eq(d->count, 1, "expected one edge from %lld, got %u", (long long)producer, d->count);
    cr_assert_eq(d->producer[0], producer);
    cr_assert_eq(d->kind[0], kind, "edge kind %u, expected %u", d->kind[0], kind);
}

static int find_producer(const rt_dep_list *d, int64_t producer)
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
    const rt_dep_list *d = acc(3, &t, SP_OUT_EXISTING);
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
    const rt_dep_list *d = acc(3, &t, SP_OUT_EXISTING);
    cr_assert_geq(find_producer(d, 2), 0, "the manual access was not recorded");
}

/* Issue 12, 4c: a MANUAL-scope write derived no edge, so it must not hide
 * the older writer from a later AUTO reader; it supersedes only what it was
 * explicitly ordered after. In grid mode (whole vector) and treap mode (a
 * slice turned the buffer into treaps first). */
Test(tensormap, a_manual_write_hides_no_older_writer)
{
    for (int treap = 0; treap < 2; treap++) {
        teardown();
        map_open(256);
        sp_tensor t = vec(BUF_A, 256, SP_NO_TASK), part;
        cr_assert_eq(sp_tensor_slice(&t, 0, 1, 8, &part), SP_OK);
        expect_none(acc(0, &t, SP_OUT_EXISTING));
        if (treap)
            expect_one(acc(1, &part, SP_IN), 0, SP_EDGE_RAW);
        expect_none(access_dir(2, &t, SP_INOUT, true)); /* the manual dummy */
        const rt_dep_list *d = acc(3, &t, SP_IN);
        cr_assert_eq(d->count, 2, "mode %d: reader has %u edges, wants the writer and the dummy",
                     treap, d->count);
        cr_assert_geq(find_producer(d, 0), 0, "mode %d: the AUTO writer's edge is lost", treap);
        cr_assert_geq(find_producer(d, 2), 0, "mode %d: the manual writer's edge is lost", treap);
        /* The AUTO writer waits for all: for reader 3, which waited for
         * both writers (their WAW edges are implied), and in treap mode
         * for reader 1, which no newer AUTO write has waited for. */
        d = acc(4, &t, SP_OUT_EXISTING);
        cr_assert_eq(d->count, treap ? 2u : 1u, "mode %d: the AUTO writer has %u edges", treap,
                     d->count);
        cr_assert_geq(find_producer(d, 3), 0, "mode %d: no edge from the last reader", treap);
        if (treap)
            cr_assert_geq(find_producer(d, 1), 0, "no edge from the first reader");
        /* Ordered by hand after task 4: the manual write supersedes it. */
        deps.count = 0;
        cr_assert_eq(rt_dep_list_add(&deps, 4, 5, SP_EDGE_EXPLICIT), SP_OK);
        cr_assert_eq(rt_tensormap_access(&map, 5, &t, SP_OUT_EXISTING, true, &deps), SP_OK);
        cr_assert_eq(deps.count, 1, "manual: only the explicit edge");
        expect_one(acc(6, &t, SP_IN), 5, SP_EDGE_RAW);
    }
}

Test(tensormap, duplicate_edges_are_merged)
{
    sp_tensor a = vec(BUF_A, 256, SP_NO_TASK), b = vec(BUF_B, 256, SP_NO_TASK);
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    expect_none(acc(0, &b, SP_OUT_EXISTING));
    /* Task 1 reads both outputs of task 0: one edge, not two. */
    deps.count = 0;
    cr_assert_eq(rt_tensormap_access(&map, 1, &a, SP_IN, false, &deps), SP_OK);
    cr_assert_eq(rt_tensormap_access(&map, 1, &b, SP_IN, false, &deps), SP_OK);
    expect_one(&deps, 0, SP_EDGE_RAW);
    /* And at the list level: a repeat or a self edge adds nothing. */
    rt_dep_list l = {.count = 0};
    cr_assert_eq(rt_dep_list_add(&l, 4, 9, SP_EDGE_EXPLICIT), SP_OK);
    cr_assert_eq(rt_dep_list_add(&l, 4, 9, SP_EDGE_RAW), SP_OK);
    cr_assert_eq(rt_dep_list_add(&l, 9, 9, SP_EDGE_RAW), SP_OK);
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
    const rt_dep_list *d = acc(3, &middle, SP_IN);               /* overlaps both */
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
    const rt_dep_list *d = acc(2, &flat, SP_IN);
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
        const rt_dep_list *d = acc(k, &t, SP_INOUT);
        if (k == 0)
            expect_none(d);
        else
            expect_one(d, k - 1, SP_EDGE_WAW); /* the predecessor only, not all-pairs */
        cr_assert_eq(map.used, 1, "the covered entry of task %lld was not superseded",
                     (long long)k - 1);
    }
    /* A contiguous buffer rewritten again and again: the same. */
    for (int64_t k = 8; k < 16; k++) {
        const rt_dep_list *d = acc(k, &whole, SP_OUT_EXISTING);
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
    rt_tensormap_retire_below(&map, 2);
    cr_assert(!rt_tensormap_touched(&map, BUF_A, 0, 1024, false));
    /* A write now would have waited for both: they retired, so nothing. */
    expect_none(acc(2, &t, SP_OUT_EXISTING));
    cr_assert_eq(map.used, 1, "retired entries met on the way were not released");
    /* Retirement never moves backwards. */
    rt_tensormap_retire_below(&map, 1);
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
    cr_assert_eq(rt_tensormap_access(&map, 2, &c, SP_IN, false, &deps), SP_EGRAPH_LIMIT);
    cr_assert_eq(deps.count, 0, "nothing derived when the map is full");
    cr_assert_eq(map.used, 2, "nothing recorded when the map is full");
}

Test(tensormap, dep_list_limit_is_a_graph_limit)
{
    rt_dep_list l = {.count = 0};
    for (int64_t p = 0; p < SP_MAX_PRODUCERS; p++)
        cr_assert_eq(rt_dep_list_add(&l, p, 100000, SP_EDGE_EXPLICIT), SP_OK);
    cr_assert_eq(rt_dep_list_add(&l, SP_MAX_PRODUCERS, 100000, SP_EDGE_EXPLICIT), SP_EGRAPH_LIMIT);
    cr_assert_eq(l.count, SP_MAX_PRODUCERS);

    /* Through the map: a write after more readers than one task may wait for. */
    teardown();
    map_open(SP_MAX_PRODUCERS + 8);
    sp_tensor t = vec(BUF_A, 256, SP_NO_TASK);
    for (int64_t r = 0; r <= SP_MAX_PRODUCERS; r++)
        expect_none(acc(r, &t, SP_IN));
    deps.count = 0;
    cr_assert_eq(rt_tensormap_access(&map, SP_MAX_PRODUCERS + 1, &t, SP_OUT_EXISTING, false, &deps),
                 SP_EGRAPH_LIMIT);
}

/* ---- the tile grid ----------------------------------------------------- */

/* True if buffer `addr` is in grid mode: some live tile record names it. */
static bool in_grid_mode(const rt_tensormap *m, uint64_t addr)
{
    for (uint32_t i = 0; i < m->tile_fresh; i++)
        if (m->tiles[i].base_rec >= 0 && m->bases[m->tiles[i].base_rec].base == addr)
            return true;
    return false;
}

/* Exactly the producers `want[0..n)`, each with kind `kinds[i]`. */
static void expect_edges(const rt_dep_list *d, uint32_t n, const int64_t *want,
                         const rt_edge_kind *kinds)
{
    cr_assert_eq(d->count, n, "expected %u edges, got %u", n, d->count);
    for (uint32_t k = 0; k < n; k++) {
        int i = find_producer(d, want[k]);
        cr_assert_geq(i, 0, "no edge from %lld", (long long)want[k]);
        cr_assert_eq(d->kind[i], kinds[k], "edge from %lld: kind %u, expected %u",
                     (long long)want[k], d->kind[i], kinds[k]);
    }
}

/* Tile (i, j) of the 16x16 grid of a 64x64 matrix. */
static sp_tensor grid_tile(uint64_t addr, int64_t i, int64_t j)
{
    sp_tensor m = matrix(addr);
    return tile(&m, i * 16, 16, j * 16, 16);
}

/* The same as a whole-buffer replacement of the global map by a bigger one
 * holding everything live, as host_build_graph grows it. */
static void map_grow(uint32_t entries)
{
    size_t bytes = rt_tensormap_bytes(entries);
    void *mem = malloc(bytes);
    cr_assert_not_null(mem);
    rt_tensormap bigger;
    cr_assert_eq(rt_tensormap_init(&bigger, mem, bytes, entries), SP_OK);
    cr_assert_eq(rt_tensormap_move(&bigger, &map), SP_OK);
    free(map_mem);
    map_mem = mem;
    map = bigger;
}

Test(tensormap, grid_tiles_follow_every_rule)
{
    sp_tensor a = grid_tile(BUF_A, 0, 0), b = grid_tile(BUF_A, 0, 1);
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    expect_none(acc(1, &b, SP_OUT_EXISTING));
    expect_one(acc(2, &a, SP_IN), 0, SP_EDGE_RAW); /* not from 1: another tile */
    deps.count = 0;
    cr_assert_eq(rt_tensormap_access(&map, 3, &a, SP_IN, false, &deps), SP_OK);
    cr_assert_eq(rt_tensormap_access(&map, 3, &b, SP_IN, false, &deps), SP_OK);
    expect_edges(&deps, 2, (int64_t[]){0, 1}, (rt_edge_kind[]){SP_EDGE_RAW, SP_EDGE_RAW});
    /* A write waits for every reader since the writer, and through them
     * for the writer (whose own edge is implied, so left out). */
    expect_edges(acc(4, &a, SP_OUT_EXISTING), 2, (int64_t[]){2, 3},
                 (rt_edge_kind[]){SP_EDGE_WAR, SP_EDGE_WAR});
    /* Which cleared them: the next writer waits for that write only. */
    expect_one(acc(5, &a, SP_INOUT), 4, SP_EDGE_WAW);
    expect_one(acc(6, &b, SP_OUT_EXISTING), 3, SP_EDGE_WAR);
    cr_assert(in_grid_mode(&map, BUF_A), "tiles of one grid left grid mode");
    cr_assert_eq(map.used, 2, "one writer per tile is all that stays");
}

Test(tensormap, grid_write_after_many_readers_waits_for_all)
{
    sp_tensor a = grid_tile(BUF_A, 2, 3);
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    for (int64_t r = 1; r <= 200; r++)
        expect_one(acc(r, &a, SP_IN), 0, SP_EDGE_RAW);
    cr_assert_eq(map.used, 201);
    /* Every reader; the writer through them (its WAW edge is implied). */
    const rt_dep_list *d = acc(201, &a, SP_OUT_EXISTING);
    cr_assert_eq(d->count, 200);
    for (int64_t r = 1; r <= 200; r++) {
        int i = find_producer(d, r);
        cr_assert_geq(i, 0, "no edge from %lld", (long long)r);
        cr_assert_eq(d->kind[i], SP_EDGE_WAR);
    }
    cr_assert_eq(map.used, 1);
}

Test(tensormap, grid_keeps_a_tasks_own_accesses_and_creator_rule)
{
    /* A task reading and writing one tile keeps its read: a later writer
     * waits for it once, a later reader for its write. */
    sp_tensor a = grid_tile(BUF_A, 1, 1);
    a.owner_task = 0;
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    deps.count = 0;
    cr_assert_eq(rt_tensormap_access(&map, 1, &a, SP_IN, false, &deps), SP_OK);
    cr_assert_eq(rt_tensormap_access(&map, 1, &a, SP_OUT_EXISTING, false, &deps), SP_OK);
    expect_one(&deps, 0, SP_EDGE_RAW); /* the creator edge is implied by it */
    cr_assert_eq(map.used, 2, "the task's own read was superseded by its write");
    expect_one(acc(2, &a, SP_IN), 1, SP_EDGE_RAW); /* 1 depended on creator 0 */
    /* Both readers (1's WAW edge, implied by 2's read, is left out; its
     * read gives the edge). */
    expect_edges(acc(3, &a, SP_OUT_EXISTING), 2, (int64_t[]){1, 2},
                 (rt_edge_kind[]){SP_EDGE_WAR, SP_EDGE_WAR});
    /* Manual: recorded, no edge, and superseding nothing it was not
     * ordered after (issue 12, 4c): the reader waits for both writers,
     * and 3's wait for creator 0 implies the creator edge. */
    expect_none(access_dir(4, &a, SP_OUT_EXISTING, true));
    cr_assert_eq(map.used, 2);
    expect_edges(acc(5, &a, SP_IN), 2, (int64_t[]){4, 3},
                 (rt_edge_kind[]){SP_EDGE_RAW, SP_EDGE_RAW});
}

Test(tensormap, switch_to_treap_mode_keeps_every_dependency)
{
    /* 16 tiles written, four of them read, then the whole matrix read. */
    for (int64_t k = 0; k < 16; k++) {
        sp_tensor t = grid_tile(BUF_A, k / 4, k % 4);
        expect_none(acc(k, &t, SP_OUT_EXISTING));
    }
    for (int64_t k = 16; k < 20; k++) {
        sp_tensor t = grid_tile(BUF_A, k - 16, k - 16);
        expect_one(acc(k, &t, SP_IN), (k - 16) * 5, SP_EDGE_RAW);
    }
    cr_assert(in_grid_mode(&map, BUF_A));
    sp_tensor m = matrix(BUF_A);
    const rt_dep_list *d = acc(20, &m, SP_IN);
    cr_assert_eq(d->count, 16, "a whole-matrix read waits for all 16 tile writers");
    for (int64_t k = 0; k < 16; k++)
        cr_assert_geq(find_producer(d, k), 0, "no edge from tile writer %lld", (long long)k);
    cr_assert(!in_grid_mode(&map, BUF_A), "the whole matrix is no tile of the grid");
    cr_assert_eq(map.used, 21);
    /* A whole write then waits for everything and supersedes everything. */
    d = acc(21, &m, SP_OUT_EXISTING);
    cr_assert_eq(d->count, 21);
    cr_assert_eq(map.used, 1);

    /* A misaligned tile after aligned ones: exact overlap still holds. */
    for (int64_t k = 0; k < 4; k++) {
        sp_tensor t = grid_tile(BUF_B, k / 2, k % 2);
        expect_none(acc(30 + k, &t, SP_OUT_EXISTING));
    }
    sp_tensor far = grid_tile(BUF_B, 3, 3);
    expect_none(acc(34, &far, SP_IN));
    sp_tensor mb = matrix(BUF_B);
    sp_tensor mid = tile(&mb, 8, 16, 8, 16);
    d = acc(35, &mid, SP_IN);
    expect_edges(d, 4, (int64_t[]){30, 31, 32, 33},
                 (rt_edge_kind[]){SP_EDGE_RAW, SP_EDGE_RAW, SP_EDGE_RAW, SP_EDGE_RAW});
    cr_assert(!in_grid_mode(&map, BUF_B));
    /* And the converted reader is still a reader: WAR to a later write. */
    expect_one(acc(36, &far, SP_OUT_EXISTING), 34, SP_EDGE_WAR);
}

Test(tensormap, a_view_running_past_its_row_is_no_tile)
{
    /* 16 x 12 matrix, 4 x 8 tiles: columns 8..15 of a row do not exist, so
     * a 4 x 8 view at column 8 is aligned but wraps into the next rows. */
    const int64_t shape[2] = {16, 12};
    sp_tensor m, wrap;
    cr_assert_eq(sp_tensor_init(&m, BUF_A, SP_DTYPE_F32, 2, shape), SP_OK);
    sp_tensor a = tile(&m, 0, 4, 0, 8), b = tile(&m, 4, 4, 0, 8);
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    expect_none(acc(1, &b, SP_OUT_EXISTING));
    wrap = a;
    wrap.offset = 4 * 12 + 8; /* rows 4..7, "columns 8..15": rows 5..8 columns 0..3 too */
    expect_one(acc(2, &wrap, SP_IN), 1, SP_EDGE_RAW);
    cr_assert(!in_grid_mode(&map, BUF_A));
}

Test(tensormap, grid_retirement_and_sweep)
{
    for (int64_t k = 0; k < 4; k++) {
        sp_tensor t = grid_tile(BUF_A, 0, k);
        expect_none(acc(k, &t, SP_OUT_EXISTING));
    }
    for (int64_t k = 4; k < 8; k++) {
        sp_tensor t = grid_tile(BUF_A, 0, k - 4);
        expect_one(acc(k, &t, SP_IN), k - 4, SP_EDGE_RAW);
    }
    cr_assert_eq(map.used, 8);
    rt_tensormap_retire_below(&map, 6);
    /* Lazily: a read meets the retired writer of tile 0 and frees it. */
    sp_tensor t0 = grid_tile(BUF_A, 0, 0), t3 = grid_tile(BUF_A, 0, 3);
    expect_none(acc(8, &t0, SP_IN));
    cr_assert_eq(map.used, 8, "the retired writer went, the reader came");
    /* Eagerly: sweep frees the other three writers and readers 4 and 5. */
    cr_assert_eq(rt_tensormap_sweep(&map), 5);
    cr_assert_eq(map.used, 3, "readers 6, 7 and 8 stay");
    expect_one(acc(9, &t3, SP_OUT_EXISTING), 7, SP_EDGE_WAR);
    rt_tensormap_retire_below(&map, 100);
    cr_assert(!rt_tensormap_touched(&map, BUF_A, 0, 64 * 64 * 4, false));
    rt_tensormap_sweep(&map);
    cr_assert_eq(map.used, 0);
    cr_assert(!in_grid_mode(&map, BUF_A), "a swept-out buffer keeps no tile");
    expect_none(acc(100, &t3, SP_IN));
}

Test(tensormap, retired_buffer_starts_a_new_grid)
{
    /* A ring heap hands the same address out again with another shape. */
    sp_tensor m = matrix(BUF_A);
    sp_tensor odd = tile(&m, 8, 16, 8, 16), t = grid_tile(BUF_A, 1, 1);
    expect_none(acc(0, &t, SP_OUT_EXISTING));
    expect_one(acc(1, &odd, SP_IN), 0, SP_EDGE_RAW);
    cr_assert(!in_grid_mode(&map, BUF_A));
    rt_tensormap_retire_below(&map, 2);
    sp_tensor big = tile(&m, 32, 32, 0, 32);
    expect_none(acc(2, &big, SP_OUT_EXISTING));
    cr_assert(in_grid_mode(&map, BUF_A), "all retired: the buffer starts afresh");
    cr_assert_eq(map.used, 1);
    expect_one(acc(3, &big, SP_IN), 2, SP_EDGE_RAW);
}

Test(tensormap, move_carries_grid_mode)
{
    teardown();
    map_open(8);
    sp_tensor a = grid_tile(BUF_A, 0, 0), b = grid_tile(BUF_A, 3, 2);
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    expect_none(acc(1, &b, SP_OUT_EXISTING));
    expect_one(acc(2, &a, SP_IN), 0, SP_EDGE_RAW);
    expect_one(acc(3, &a, SP_IN), 0, SP_EDGE_RAW);
    expect_one(acc(4, &b, SP_IN), 1, SP_EDGE_RAW);
    rt_tensormap_retire_below(&map, 1); /* task 0 retired: not carried over */
    map_grow(64);
    cr_assert_eq(map.used, 4);
    cr_assert(in_grid_mode(&map, BUF_A));
    expect_edges(acc(5, &a, SP_OUT_EXISTING), 2, (int64_t[]){2, 3},
                 (rt_edge_kind[]){SP_EDGE_WAR, SP_EDGE_WAR});
    expect_one(acc(6, &b, SP_OUT_EXISTING), 4, SP_EDGE_WAR); /* and through 4 after 1 */
    cr_assert_eq(map.used, 2);
}

Test(tensormap, overlapping_in_grid_mode)
{
    sp_tensor a = grid_tile(BUF_A, 0, 0), c = grid_tile(BUF_A, 1, 0);
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    expect_none(acc(1, &c, SP_OUT_EXISTING));
    expect_one(acc(2, &a, SP_IN), 0, SP_EDGE_RAW);
    int64_t ids[4];
    /* Element (0, 0): tile (0, 0), written by 0 and read by 2. */
    cr_assert_eq(rt_tensormap_overlapping(&map, BUF_A, 0, 4, true, ids, 4), 1);
    cr_assert_eq(ids[0], 0);
    cr_assert_eq(rt_tensormap_overlapping(&map, BUF_A, 0, 4, false, ids, 4), 2);
    cr_assert((ids[0] == 0 && ids[1] == 2) || (ids[0] == 2 && ids[1] == 0));
    /* More than fit: the count, and only `max` ids. */
    ids[1] = -7;
    cr_assert_eq(rt_tensormap_overlapping(&map, BUF_A, 0, 4, false, ids, 1), 2);
    cr_assert_eq(ids[1], -7);
    /* Element (20, 5): tile (1, 0) only. */
    uint64_t e = (20 * 64 + 5) * 4;
    cr_assert_eq(rt_tensormap_overlapping(&map, BUF_A, e, e + 4, false, ids, 4), 1);
    cr_assert_eq(ids[0], 1);
    /* Byte ranges as in treap mode: element (3, 40) lies between the rows
     * of tile (0, 0), so it counts (conservative, like every byte range). */
    e = (3 * 64 + 40) * 4;
    cr_assert(rt_tensormap_touched(&map, BUF_A, e, e + 4, true));
    /* Past every tile's bytes: nothing. */
    e = (40 * 64) * 4;
    cr_assert(!rt_tensormap_touched(&map, BUF_A, e, 64 * 64 * 4, false));
    cr_assert(in_grid_mode(&map, BUF_A), "a query does not change the mode");
}

Test(tensormap, full_grid_map_fails_cleanly_and_retries)
{
    teardown();
    map_open(4);
    sp_tensor a = grid_tile(BUF_A, 0, 0), b = grid_tile(BUF_A, 0, 1);
    expect_none(acc(0, &a, SP_OUT_EXISTING));
    expect_none(acc(1, &b, SP_OUT_EXISTING));
    expect_one(acc(2, &a, SP_IN), 0, SP_EDGE_RAW);
    expect_one(acc(3, &a, SP_IN), 0, SP_EDGE_RAW);
    /* Full: a write (which would shrink the map) and a switch to treap
     * mode both fail before changing anything. */
    sp_tensor m = matrix(BUF_A);
    deps.count = 0;
    cr_assert_eq(rt_tensormap_access(&map, 4, &a, SP_OUT_EXISTING, false, &deps), SP_EGRAPH_LIMIT);
    cr_assert_eq(rt_tensormap_access(&map, 4, &m, SP_IN, false, &deps), SP_EGRAPH_LIMIT);
    cr_assert_eq(deps.count, 0);
    cr_assert_eq(map.used, 4);
    cr_assert(in_grid_mode(&map, BUF_A));
    /* Grown (host_build_graph), the retry derives what it would have. */
    map_grow(8);
    expect_edges(acc(4, &a, SP_OUT_EXISTING), 2, (int64_t[]){2, 3},
                 (rt_edge_kind[]){SP_EDGE_WAR, SP_EDGE_WAR});
    /* Full again; swept (tensormap_and_ringbuffer), the retry works too. */
    for (int64_t r = 5; r < 11; r++)
        expect_one(acc(r, &b, SP_IN), 1, SP_EDGE_RAW);
    cr_assert_eq(map.used, 8);
    deps.count = 0;
    cr_assert_eq(rt_tensormap_access(&map, 11, &b, SP_OUT_EXISTING, false, &deps), SP_EGRAPH_LIMIT);
    rt_tensormap_retire_below(&map, 7);
    cr_assert_eq(rt_tensormap_sweep(&map), 4, "writers 1 and 4, readers 5 and 6");
    expect_edges(acc(11, &b, SP_OUT_EXISTING), 4, (int64_t[]){7, 8, 9, 10},
                 (rt_edge_kind[]){SP_EDGE_WAR, SP_EDGE_WAR, SP_EDGE_WAR, SP_EDGE_WAR});
}

/* ---- randomized comparison with a brute-force reference ----------------
 * The reference keeps every access in a list and applies the plain rules of
 * tensormap.h to all of them, in order: writes first, then (for a write)
 * reads, then the creator edge; a covering write supersedes what it covers.
 * Its own box arithmetic; rt_views_overlap is the one primitive it shares.
 * The map leaves implied edges out and prunes more, so what must agree is
 * the order the edges impose: the tasks each task is ordered after (its
 * edges' transitive closure), and every edge the map gives is the
 * reference's or implied by the reference's. */

typedef struct ref_rec {
    uint64_t addr, lo, hi;
    rt_access_layout l;
    int64_t task, owner;
    bool write, live;
} ref_rec;

#define REF_MAX 2048
static ref_rec ref[REF_MAX];
static uint32_t ref_n;
static int64_t ref_retired;

/* Per task, the tasks it is ordered after: by the map's edges, by the
 * reference's. */
#define REACH_TASKS 512
#define REACH_WORDS (REACH_TASKS / 64)
static uint64_t reach_got[REACH_TASKS][REACH_WORDS], reach_want[REACH_TASKS][REACH_WORDS];

static bool reaches(uint64_t (*reach)[REACH_WORDS], int64_t from, int64_t to)
{
    return (reach[to][from / 64] >> (from % 64)) & 1;
}

/* Task `task`'s closure: its producers and everything they are after. */
static void reach_close(uint64_t (*reach)[REACH_WORDS], int64_t task, const rt_dep_list *d)
{
    cr_assert_lt(task, REACH_TASKS);
    memset(reach[task], 0, sizeof reach[task]);
    for (uint32_t i = 0; i < d->count; i++) {
        int64_t p = d->producer[i];
        cr_assert(p >= 0 && p < task, "task %lld: producer %lld", (long long)task, (long long)p);
        for (int w = 0; w < REACH_WORDS; w++)
            reach[task][w] |= reach[p][w];
        reach[task][p / 64] |= 1ull << (p % 64);
    }
}

static void ref_edge(rt_dep_list *d, int64_t producer, int64_t task, rt_edge_kind kind)
{
    if (producer == task || producer < 0)
        return;
    for (uint32_t i = 0; i < d->count; i++)
        if (d->producer[i] == producer)
            return;
    cr_assert_lt(d->count, SP_MAX_PRODUCERS);
    d->producer[d->count] = producer;
    d->kind[d->count++] = (uint8_t)kind;
}

/* Per-dimension box of a view in a dense parent whose strides nest. */
static bool ref_box(const rt_access_layout *l, int64_t *start)
{
    int64_t rem = l->offset;
    for (int d = 0; d < l->ndim; d++) {
        if (l->strides[d] <= 0 || (d > 0 && l->strides[d - 1] % l->strides[d] != 0))
            return false;
        start[d] = rem / l->strides[d];
        if (d > 0 && start[d] + l->shape[d] > l->strides[d - 1] / l->strides[d])
            return false;
        rem -= start[d] * l->strides[d];
    }
    return rem == 0;
}

static bool ref_same_grid(const rt_access_layout *a, const rt_access_layout *b)
{
    if (a->ndim != b->ndim || a->elem_size != b->elem_size)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->strides[d] != b->strides[d])
            return false;
    return true;
}

/* Does a write of (lo, hi, w) cover every element of r? */
static bool ref_covers(uint64_t lo, uint64_t hi, const rt_access_layout *w, const ref_rec *r)
{
    if (r->lo < lo || r->hi > hi)
        return false;
    int64_t expect = 1;
    bool contiguous = true;
    for (int d = w->ndim - 1; d >= 0; d--) {
        contiguous &= w->shape[d] == 1 || w->strides[d] == expect;
        expect *= w->shape[d];
    }
    if (contiguous)
        return true;
    int64_t sw[SP_MAX_DIMS], sr[SP_MAX_DIMS];
    if (!ref_same_grid(w, &r->l) || !ref_box(w, sw) || !ref_box(&r->l, sr))
        return false;
    for (int d = 0; d < w->ndim; d++)
        if (sr[d] < sw[d] || sr[d] + r->l.shape[d] > sw[d] + w->shape[d])
            return false;
    return true;
}

static void ref_access(int64_t task, const sp_tensor *t, int dir, bool manual, rt_dep_list *d)
{
    int64_t owner = manual ? SP_NO_TASK : t->owner_task;
    if (dir == SP_NO_DEP) {
        ref_edge(d, owner, task, SP_EDGE_CREATOR);
        return;
    }
    ref_rec a = {.addr = t->addr, .task = task, .owner = owner, .live = true};
    cr_assert_eq(sp_tensor_byte_extent(t, &a.lo, &a.hi), SP_OK);
    a.l.offset = t->offset;
    a.l.ndim = t->ndim;
    a.l.elem_size = (uint8_t)sp_tensor_elem_size(t);
    for (int k = 0; k < t->ndim; k++) {
        a.l.shape[k] = t->shape[k];
        a.l.strides[k] = t->strides[k];
    }
    a.write = dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING;
    bool implied = owner == SP_NO_TASK || owner == task;
    for (int pass = 1; pass >= (a.write ? 0 : 1); pass--)
        for (uint32_t i = 0; i < ref_n; i++) {
            ref_rec *r = &ref[i];
            if (!r->live || r->write != (pass == 1) || r->addr != a.addr || r->task < ref_retired ||
                r->task == task || !rt_views_overlap(a.lo, a.hi, &a.l, r->lo, r->hi, &r->l))
                continue;
            if (!manual) {
                ref_edge(d, r->task, task,
                         r->write ? (a.write ? SP_EDGE_WAW : SP_EDGE_RAW) : SP_EDGE_WAR);
                implied |= r->task == owner || r->owner == owner;
            }
            /* A manual write supersedes only what it was ordered after
             * by hand: the explicit dependencies already in d. */
            bool ordered = !manual;
            for (uint32_t k = 0; k < d->count && !ordered; k++)
                ordered = d->producer[k] == r->task;
            if (a.write && ordered && ref_covers(a.lo, a.hi, &a.l, r))
                r->live = false;
        }
    if (!implied)
        ref_edge(d, owner, task, SP_EDGE_CREATOR);
    cr_assert_lt(ref_n, REF_MAX);
    ref[ref_n++] = a;
}

static uint32_t ref_live_count(void)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ref_n; i++)
        n += ref[i].live && ref[i].task >= ref_retired;
    return n;
}

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)((rng_state >> 11) % n);
}

typedef struct rand_buf {
    uint64_t addr;
    int64_t rows, cols, th, tw; /* the matrix, and the tile its grid uses */
    int64_t owner;
} rand_buf;

static void pick_grid(rand_buf *b)
{
    /* Powers of two and not: grid mode shifts for the first, divides for
     * the others. */
    static const int64_t th[] = {1, 2, 4, 8, 3}, tw[] = {2, 4, 8, 3, 6};
    b->th = th[rnd(5)];
    b->tw = rnd(4) ? tw[rnd(5)] : b->cols; /* whole rows: 1-D like slices */
}

/* A tile of b's grid grown by one element on every side, clipped to the
 * matrix: a stencil's halo, several rows and columns of tiles. */
static sp_tensor halo_view(const rand_buf *b, const sp_tensor *m)
{
    int64_t r = b->th * rnd((uint32_t)(b->rows / b->th)) - 1, h = b->th + 2;
    int64_t c = b->tw * rnd((uint32_t)(b->cols / b->tw)) - 1, w = b->tw + 2;
    if (r < 0)
        r = 0, h--;
    if (c < 0)
        c = 0, w--;
    if (r + h > b->rows)
        h = b->rows - r;
    if (c + w > b->cols)
        w = b->cols - c;
    return tile(m, r, h, c, w);
}

/* A view of buffer b: with probability `halo` per mille a halo (above),
 * else a tile of its grid, or with probability `odd` per mille something
 * else (any box, the whole matrix, a transposed tile, a flat run of
 * elements, a view with another element size). */
static sp_tensor rand_view(rand_buf *b, uint32_t odd, uint32_t halo)
{
    const int64_t shape[2] = {b->rows, b->cols};
    sp_tensor m, v;
    cr_assert_eq(sp_tensor_init(&m, b->addr, SP_DTYPE_F32, 2, shape), SP_OK);
    if (rnd(1000) < halo) {
        v = halo_view(b, &m);
    } else if (rnd(1000) >= odd) {
        v = tile(&m, b->th * rnd((uint32_t)(b->rows / b->th)), b->th,
                 b->tw * rnd((uint32_t)(b->cols / b->tw)), b->tw);
    } else {
        switch (rnd(6)) {
        case 0: {
            int64_t h = 1 + rnd((uint32_t)b->rows), w = 1 + rnd((uint32_t)b->cols);
            v = tile(&m, rnd((uint32_t)(b->rows - h + 1)), h, rnd((uint32_t)(b->cols - w + 1)), w);
            break;
        }
        case 1:
            v = m;
            break;
        case 2: {
            sp_tensor t = tile(&m, 0, b->th, b->tw * rnd((uint32_t)(b->cols / b->tw)), b->tw);
            cr_assert_eq(sp_tensor_transpose(&t, 0, 1, &v), SP_OK);
            break;
        }
        case 3: {
            int64_t n = 1 + rnd((uint32_t)(b->rows * b->cols));
            cr_assert_eq(sp_tensor_init(&v, b->addr, SP_DTYPE_F32, 1, &n), SP_OK);
            v.offset = rnd((uint32_t)(b->rows * b->cols - n + 1));
            break;
        }
        case 4: /* aligned, but wrapping past the end of its rows */
            v = tile(&m, b->th * rnd((uint32_t)(b->rows / b->th)), b->th,
                     b->tw * (b->cols / b->tw - 1), b->tw);
            v.offset += b->tw;
            break;
        default: {
            const int64_t half[2] = {b->rows, b->cols * 2};
            sp_tensor h;
            cr_assert_eq(sp_tensor_init(&h, b->addr, SP_DTYPE_F16, 2, half), SP_OK);
            v = tile(&h, b->th * rnd((uint32_t)(b->rows / b->th)), b->th, 0, 4);
            break;
        }
        }
    }
    v.owner_task = b->owner;
    return v;
}

/* The map's edges order task after the same tasks as the reference's, and
 * each of them is one of the reference's (its kind may differ: the first
 * edge from a producer can be the one left out) or a creator edge the
 * reference found implied. */
static void compare_deps(const rt_dep_list *got, const rt_dep_list *want, uint32_t seed,
                         int64_t task)
{
    reach_close(reach_got, task, got);
    reach_close(reach_want, task, want);
    for (uint32_t i = 0; i < got->count; i++)
        cr_assert(find_producer(want, got->producer[i]) >= 0 || got->kind[i] == SP_EDGE_CREATOR,
                  "seed %u task %lld: edge from %lld (kind %u) is not the reference's", seed,
                  (long long)task, (long long)got->producer[i], got->kind[i]);
    if (memcmp(reach_got[task], reach_want[task], sizeof reach_got[task]) == 0)
        return;
    for (int64_t p = 0; p < task; p++)
        cr_assert_eq(reaches(reach_got, p, task), reaches(reach_want, p, task),
                     "seed %u task %lld: ordered after %lld by the map %d, by the reference %d",
                     seed, (long long)task, (long long)p, reaches(reach_got, p, task),
                     reaches(reach_want, p, task));
}

/* True if one of the elements of r's view has a byte in [lo, hi). */
static bool ref_touches(const ref_rec *r, uint64_t lo, uint64_t hi)
{
    int64_t idx[SP_MAX_DIMS] = {0};
    const int nd = r->l.ndim;
    for (;;) {
        int64_t e = r->l.offset;
        for (int d = 0; d < nd; d++)
            e += idx[d] * r->l.strides[d];
        uint64_t at = (uint64_t)e * r->l.elem_size;
        if (at < hi && lo < at + r->l.elem_size)
            return true;
        int d = nd - 1;
        while (d >= 0 && ++idx[d] == r->l.shape[d])
            idx[d--] = 0;
        if (d < 0)
            return false;
    }
}

/* Both agree on which live accesses overlap a random byte range: the map
 * reports the reference's (the byte ranges of the views overlap it), less
 * those it pruned; of those, each that has an element in the range is
 * ordered before one the map reports (waiting for those waits for it
 * too). One pruned where only its byte range, not an element, meets the
 * range need not be (the writes that covered it may not reach there). */
static void compare_overlapping(const rand_buf *b, uint32_t seed)
{
    uint64_t bytes = (uint64_t)(b->rows * b->cols * 4);
    uint64_t lo = rnd((uint32_t)bytes), hi = lo + 1 + rnd(64);
    bool writes_only = rnd(2);
    static int64_t got[REF_MAX], want[REF_MAX];
    uint32_t n = rt_tensormap_overlapping(&map, b->addr, lo, hi, writes_only, got, REF_MAX), m = 0;
    for (uint32_t i = 0; i < ref_n; i++) {
        const ref_rec *r = &ref[i];
        if (r->live && r->task >= ref_retired && r->addr == b->addr && (r->write || !writes_only) &&
            r->lo < hi && lo < r->hi)
            want[m++] = r->task;
    }
    cr_assert_leq(n, m, "seed %u: %u overlapping accesses, the reference %u", seed, n, m);
    for (uint32_t i = 0; i < n; i++) {
        bool known = false;
        for (uint32_t j = 0; j < m && !known; j++)
            known = want[j] == got[i];
        cr_assert(known, "seed %u: task %lld overlaps, not in the reference", seed,
                  (long long)got[i]);
    }
    for (uint32_t j = 0; j < m; j++) {
        const ref_rec *r = NULL;
        for (uint32_t i = 0; i < ref_n && !r; i++)
            if (ref[i].live && ref[i].task == want[j] && ref[i].addr == b->addr &&
                (ref[i].write || !writes_only) && ref[i].lo < hi && lo < ref[i].hi &&
                ref_touches(&ref[i], lo, hi))
                r = &ref[i];
        bool covered = r == NULL; /* no element of that task's in range */
        for (uint32_t i = 0; i < n && !covered; i++)
            covered = got[i] == want[j] || reaches(reach_got, want[j], got[i]);
        cr_assert(covered, "seed %u: task %lld overlaps and no reported task follows it", seed,
                  (long long)want[j]);
    }
}

/* One random program: tasks of 1..3 accesses over three buffers, with
 * retirement, sweeps, moves and a small map that fills up. */
static void differential_run(uint32_t seed, uint32_t odd, uint32_t halo, uint32_t tasks)
{
    rng_state = 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed * 0x2545f4914f6cdd1dull);
    teardown();
    map_open(16 + rnd(48));
    ref_n = 0;
    ref_retired = 0;
    rand_buf bufs[3];
    static const int64_t sizes[] = {8, 12, 16};
    for (int i = 0; i < 3; i++) {
        bufs[i] = (rand_buf){.addr = BUF_A + (uint64_t)i * 0x10000,
                             .rows = sizes[rnd(3)],
                             .cols = sizes[rnd(3)],
                             .owner = SP_NO_TASK};
        pick_grid(&bufs[i]);
    }
    rt_dep_list want;
    for (int64_t task = 0; task < (int64_t)tasks; task++) {
        bool manual = rnd(10) == 0;
        uint32_t nacc = 1 + rnd(3);
        deps.count = 0;
        want.count = 0;
        /* Explicit dependencies, as the runtimes add them before the
         * accesses: a manual write may supersede exactly these. */
        for (uint32_t e = task && rnd(3) == 0 ? 1 + rnd(3) : 0; e > 0; e--) {
            int64_t p = task - 1 - (int64_t)rnd(task < 8 ? (uint32_t)task : 8u);
            cr_assert_eq(rt_dep_list_add(&deps, p, task, SP_EDGE_EXPLICIT), SP_OK);
            ref_edge(&want, p, task, SP_EDGE_EXPLICIT);
        }
        for (uint32_t a = 0; a < nacc; a++) {
            rand_buf *b = &bufs[rnd(3)];
            sp_tensor v = rand_view(b, odd, halo);
            if (rnd(8) == 0) /* now and then another creator, or itself */
                v.owner_task = rnd(2) ? task : (int64_t)rnd((uint32_t)task + 1) - 1;
            static const int dirs[] = {SP_IN,    SP_IN,    SP_IN,           SP_IN,
                                       SP_OUT,   SP_INOUT, SP_OUT_EXISTING, SP_OUT_EXISTING,
                                       SP_INOUT, SP_NO_DEP};
            int dir = dirs[rnd(10)];
            int rc;
            while ((rc = rt_tensormap_access(&map, task, &v, dir, manual, &deps)) ==
                   SP_EGRAPH_LIMIT) {
                /* Full: nothing derived or recorded. Sweep if it frees
                 * anything (tmr), else grow (hbg); then try again. */
                cr_assert_eq(map.used, map.capacity, "seed %u: limit below capacity", seed);
                if (rt_tensormap_sweep(&map) == 0)
                    map_grow(map.capacity * 2);
                cr_assert_leq(map.used, ref_live_count(), "seed %u: live accesses", seed);
            }
            cr_assert_eq(rc, SP_OK, "seed %u task %lld: %s", seed, (long long)task,
                         sp_status_name(rc));
            ref_access(task, &v, dir, manual, &want);
        }
        compare_deps(&deps, &want, seed, task);
        if (rnd(4) == 0)
            bufs[rnd(3)].owner = rnd(2) ? task : SP_NO_TASK;
        if (rnd(16) == 0) {
            ref_retired = task + 1 - rnd(24);
            if (ref_retired < map.retired_below)
                ref_retired = map.retired_below;
            rt_tensormap_retire_below(&map, ref_retired);
            if (rnd(4) == 0) /* a new shape for a buffer, as a ring heap reuses it */
                pick_grid(&bufs[rnd(3)]);
        }
        if (rnd(64) == 0) {
            rt_tensormap_sweep(&map);
            cr_assert_leq(map.used, ref_live_count(), "seed %u: live accesses after sweep", seed);
        }
        if (rnd(128) == 0) {
            map_grow(map.used + 16 + rnd(64));
            cr_assert_leq(map.used, ref_live_count(), "seed %u: live accesses after move", seed);
        }
        if (rnd(8) == 0)
            compare_overlapping(&bufs[rnd(3)], seed);
    }
}

Test(tensormap, randomized_against_the_reference)
{
    /* Per mille of odd views: grid mode only, a switch now and then, often. */
    static const uint32_t odd[] = {0, 0, 5, 20, 100, 400};
    for (uint32_t seed = 0; seed < 120; seed++)
        differential_run(seed, odd[seed % 6], 0, 400);
}

/* Stencil-like programs: halo views (several tiles, treap mode) mixed with
 * tiles, in every proportion, so that writes supersede reads only together
 * and implied WAW and WAR edges are left out all the time. */
Test(tensormap, randomized_halos_against_the_reference)
{
    static const uint32_t halo[] = {100, 300, 500, 800};
    for (uint32_t seed = 0; seed < 120; seed++)
        differential_run(1000 + seed, seed % 3 ? 0 : 20, halo[seed % 4], 400);
}
