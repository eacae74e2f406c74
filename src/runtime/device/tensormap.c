/* TensorMap: hash on buffer base, then per buffer a tile grid (one record
 * per tile) or two interval treaps, and the creator / RAW / WAW / WAR rules
 * over either. No allocation: the map lives in a block the caller provides
 * (host memory for hbg, device memory for tmr), its pools linked by index. */
#include "runtime/device/tensormap.h"

#include <assert.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/tensor.h"

int rt_dep_list_add(rt_dep_list *deps, int64_t producer, int64_t task, rt_edge_kind kind)
{
    if (producer == task || producer < 0)
        return SP_OK;
    for (uint32_t i = 0; i < deps->count; i++)
        if (deps->producer[i] == producer)
            return SP_OK;
    if (deps->count >= SP_MAX_PRODUCERS)
        return SP_EGRAPH_LIMIT;
    deps->producer[deps->count] = producer;
    deps->kind[deps->count++] = (uint8_t)kind;
    return SP_OK;
}

static uint32_t round_pow2(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* Buffers are few next to accesses: one bucket per four entries. */
static uint32_t bucket_count(uint32_t entries)
{
    return round_pow2(entries < 64 ? 16 : entries / 4);
}

/* Tiles can be as many as accesses (independent tasks): one bucket each. */
static uint32_t tile_bucket_count(uint32_t entries)
{
    return round_pow2(entries < 16 ? 16 : entries);
}

size_t rt_tensormap_bytes(uint32_t entries)
{
    return (size_t)(bucket_count(entries) + tile_bucket_count(entries)) * sizeof(int32_t) +
           (size_t)entries * (sizeof(rt_tmap_entry) + sizeof(rt_tmap_base) + sizeof(rt_tmap_tile) +
                              sizeof(rt_tmap_node) + sizeof(int32_t)) +
           64;
}

int rt_tensormap_init(rt_tensormap *map, void *mem, size_t bytes, uint32_t entries)
{
    if (!map || !mem || entries == 0 || entries > (1u << 30) || bytes < rt_tensormap_bytes(entries))
        return SP_EINVAL;
    uint32_t nb = bucket_count(entries), nt = tile_bucket_count(entries);
    uintptr_t p = ((uintptr_t)mem + 7) & ~(uintptr_t)7;
    memset(map, 0, sizeof *map);
    /* 8-byte records first, then the int32 arrays. Pools are handed out
     * from their tails, so nothing but the buckets is touched here. */
    map->entries = (rt_tmap_entry *)p;
    p += (size_t)entries * sizeof(rt_tmap_entry);
    map->bases = (rt_tmap_base *)p;
    p += (size_t)entries * sizeof(rt_tmap_base);
    map->tiles = (rt_tmap_tile *)p;
    p += (size_t)entries * sizeof(rt_tmap_tile);
    map->nodes = (rt_tmap_node *)p;
    p += (size_t)entries * sizeof(rt_tmap_node);
    map->scratch = (int32_t *)p;
    p += (size_t)entries * sizeof(int32_t);
    map->tile_buckets = (int32_t *)p;
    p += (size_t)nt * sizeof(int32_t);
    map->buckets = (int32_t *)p;
    map->bucket_mask = nb - 1;
    map->tile_mask = nt - 1;
    map->capacity = entries;
    memset(map->buckets, 0xff, (size_t)nb * sizeof(int32_t)); /* all -1 */
    memset(map->tile_buckets, 0xff, (size_t)nt * sizeof(int32_t));
    map->free_head = map->base_free = map->tile_free = map->node_free = -1;
    map->last_base = -1;
    return SP_OK;
}

/* ---- pools -----------------------------------------------------------------
 * Each pool has `capacity` records, taken from its free list or else from
 * its untouched tail. None runs dry while used < capacity: treap entries,
 * nodes and buffers are each at most one per live access, a tile exists only
 * while it holds a node, and a grid's layout entry only while its buffer
 * does (so entries in use <= treap entries + nodes = used). */

static int32_t entry_take(rt_tensormap *map)
{
    int32_t i = map->free_head;
    if (i >= 0)
        map->free_head = map->entries[i].left;
    else
        i = (int32_t)map->entry_fresh++;
    assert((uint32_t)i < map->capacity);
    return i;
}

static void entry_give(rt_tensormap *map, int32_t i)
{
    map->entries[i].base_rec = -1;
    map->entries[i].left = map->free_head;
    map->free_head = i;
}

static uint32_t hash_base(const rt_tensormap *map, uint64_t base)
{
    /* Buffers are at least 64-byte aligned: drop the low bits, then mix. */
    uint64_t h = (base >> 6) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & map->bucket_mask;
}

static int32_t base_find(const rt_tensormap *map, uint64_t base)
{
    for (int32_t b = map->buckets[hash_base(map, base)]; b >= 0; b = map->bases[b].next)
        if (map->bases[b].base == base)
            return b;
    return -1;
}

/* A new buffer record: treap mode with grid -1, else grid mode. */
static int32_t base_add(rt_tensormap *map, uint64_t base, int32_t grid)
{
    int32_t b = map->base_free;
    if (b >= 0)
        map->base_free = map->bases[b].next;
    else
        b = (int32_t)map->base_fresh++;
    assert((uint32_t)b < map->capacity);
    uint32_t h = hash_base(map, base);
    map->bases[b] = (rt_tmap_base){.base = base,
                                   .newest = INT64_MIN,
                                   .root = {-1, -1},
                                   .next = map->buckets[h],
                                   .grid = grid,
                                   .tiles = -1};
    map->buckets[h] = b;
    return b;
}

static void base_drop(rt_tensormap *map, int32_t b)
{
    int32_t *link = &map->buckets[hash_base(map, map->bases[b].base)];
    while (*link != b)
        link = &map->bases[*link].next;
    *link = map->bases[b].next;
    if (map->bases[b].grid >= 0)
        entry_give(map, map->bases[b].grid);
    map->bases[b].count = 0; /* marks it free */
    map->bases[b].next = map->base_free;
    map->base_free = b;
}

/* One more live access of buffer b. */
static void count_access(rt_tensormap *map, int32_t b, int64_t task)
{
    map->bases[b].count++;
    if (task > map->bases[b].newest)
        map->bases[b].newest = task;
    if (++map->used > map->high_water)
        map->high_water = map->used;
}

/* ---- the interval treap --------------------------------------------------- */

#define E(i) (map->entries[i])

static void fix(rt_tensormap *map, int32_t i)
{
    uint64_t m = E(i).hi;
    if (E(i).left >= 0 && E(E(i).left).max_hi > m)
        m = E(E(i).left).max_hi;
    if (E(i).right >= 0 && E(E(i).right).max_hi > m)
        m = E(E(i).right).max_hi;
    E(i).max_hi = m;
}

/* Order by lo, then by index: every key is distinct. */
static bool key_less(const rt_tensormap *map, int32_t a, int32_t b)
{
    return E(a).lo < E(b).lo || (E(a).lo == E(b).lo && a < b);
}

static int32_t rotate_right(rt_tensormap *map, int32_t r)
{
    int32_t l = E(r).left;
    E(r).left = E(l).right;
    E(l).right = r;
    fix(map, r);
    fix(map, l);
    return l;
}

static int32_t rotate_left(rt_tensormap *map, int32_t r)
{
    int32_t x = E(r).right;
    E(r).right = E(x).left;
    E(x).left = r;
    fix(map, r);
    fix(map, x);
    return x;
}

static int32_t treap_insert(rt_tensormap *map, int32_t root, int32_t n)
{
    if (root < 0)
        return n;
    if (key_less(map, n, root)) {
        E(root).left = treap_insert(map, E(root).left, n);
        if (E(E(root).left).prio > E(root).prio)
            return rotate_right(map, root);
    } else {
        E(root).right = treap_insert(map, E(root).right, n);
        if (E(E(root).right).prio > E(root).prio)
            return rotate_left(map, root);
    }
    fix(map, root);
    return root;
}

/* Join two treaps whose keys are all ordered a < b. */
static int32_t treap_merge(rt_tensormap *map, int32_t a, int32_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    if (E(a).prio > E(b).prio) {
        E(a).right = treap_merge(map, E(a).right, b);
        fix(map, a);
        return a;
    }
    E(b).left = treap_merge(map, a, E(b).left);
    fix(map, b);
    return b;
}

static int32_t treap_erase(rt_tensormap *map, int32_t root, int32_t n)
{
    if (root == n)
        return treap_merge(map, E(n).left, E(n).right);
    if (key_less(map, n, root))
        E(root).left = treap_erase(map, E(root).left, n);
    else
        E(root).right = treap_erase(map, E(root).right, n);
    fix(map, root);
    return root;
}

/* Entries of subtree i whose [lo, hi) overlaps [lo, hi), into scratch. */
static void treap_collect(rt_tensormap *map, int32_t i, uint64_t lo, uint64_t hi, uint32_t *n)
{
    while (i >= 0 && E(i).max_hi > lo) {
        treap_collect(map, E(i).left, lo, hi, n);
        if (E(i).lo >= hi)
            return; /* everything to the right starts at or after hi */
        if (E(i).hi > lo)
            map->scratch[(*n)++] = i;
        i = E(i).right;
    }
}

#undef E

static void entry_remove(rt_tensormap *map, int32_t i)
{
    int32_t b = map->entries[i].base_rec;
    int32_t *root = &map->bases[b].root[map->entries[i].is_write];
    *root = treap_erase(map, *root, i);
    entry_give(map, i);
    map->used--;
    if (--map->bases[b].count == 0)
        base_drop(map, b);
}

/* Record an access of treap-mode buffer b; the caller made room. */
static void entry_add(rt_tensormap *map, int32_t b, uint64_t lo, uint64_t hi, int64_t task,
                      int64_t owner, bool is_write, bool derived, const rt_access_layout *layout)
{
    int32_t n = entry_take(map);
    /* A fixed mixing of a counter: deterministic runs, balanced trees. */
    uint32_t prio = (map->prio_seq++ + 1) * 0x9e3779b1u;
    prio ^= prio >> 15;
    map->entries[n] = (rt_tmap_entry){.lo = lo,
                                      .hi = hi,
                                      .max_hi = hi,
                                      .task = task,
                                      .owner = owner,
                                      .left = -1,
                                      .right = -1,
                                      .prio = prio * 0x85ebca6bu,
                                      .base_rec = b,
                                      .is_write = is_write,
                                      .derived = derived,
                                      .layout = *layout};
    int32_t *root = &map->bases[b].root[is_write];
    *root = treap_insert(map, *root, n);
    count_access(map, b, task);
}

/* Free a whole treap (every entry retired). */
static void treap_free(rt_tensormap *map, int32_t i)
{
    while (i >= 0) {
        treap_free(map, map->entries[i].left);
        int32_t right = map->entries[i].right;
        entry_give(map, i);
        map->used--;
        i = right;
    }
}

/* ---- the tile grid -------------------------------------------------------- */

/* A tile's key: its buffer's mix plus its row-major index in the grid, so
 * that neighbouring tiles take neighbouring buckets (a sweep over a matrix
 * walks the table in order instead of missing the cache at every tile) and
 * the tiles of one buffer never collide until the index wraps the table. */
static uint32_t tile_key(uint64_t base, uint32_t index)
{
    return (uint32_t)(((base >> 6) * 0x9e3779b97f4a7c15ull) >> 32) + index;
}

static int32_t tile_find(const rt_tensormap *map, int32_t b, int64_t offset, uint32_t key)
{
    for (int32_t i = map->tile_buckets[key & map->tile_mask]; i >= 0; i = map->tiles[i].next)
        if (map->tiles[i].offset == offset && map->tiles[i].base_rec == b)
            return i;
    return -1;
}

static int32_t tile_add(rt_tensormap *map, int32_t b, int64_t offset, uint32_t key)
{
    int32_t i = map->tile_free;
    if (i >= 0)
        map->tile_free = map->tiles[i].next;
    else
        i = (int32_t)map->tile_fresh++;
    assert((uint32_t)i < map->capacity);
    uint32_t h = key & map->tile_mask;
    int32_t sib = map->bases[b].tiles;
    map->tiles[i] = (rt_tmap_tile){.offset = offset,
                                   .key = key,
                                   .next = map->tile_buckets[h],
                                   .base_rec = b,
                                   .sib_prev = -1,
                                   .sib_next = sib,
                                   .writers = -1,
                                   .readers = -1};
    map->tile_buckets[h] = i;
    if (sib >= 0)
        map->tiles[sib].sib_prev = i;
    map->bases[b].tiles = i;
    return i;
}

static void tile_drop(rt_tensormap *map, int32_t i)
{
    rt_tmap_tile *t = &map->tiles[i];
    int32_t *link = &map->tile_buckets[t->key & map->tile_mask];
    while (*link != i)
        link = &map->tiles[*link].next;
    *link = t->next;
    if (t->sib_prev >= 0)
        map->tiles[t->sib_prev].sib_next = t->sib_next;
    else
        map->bases[t->base_rec].tiles = t->sib_next;
    if (t->sib_next >= 0)
        map->tiles[t->sib_next].sib_prev = t->sib_prev;
    t->base_rec = -1;
    t->next = map->tile_free;
    map->tile_free = i;
}

static inline __attribute__((always_inline)) void
node_push(rt_tensormap *map, int32_t b, int32_t *chain, int64_t task, int64_t owner, bool derived)
{
    int32_t n = map->node_free;
    if (n >= 0)
        map->node_free = map->nodes[n].next;
    else
        n = (int32_t)map->node_fresh++;
    assert((uint32_t)n < map->capacity);
    map->nodes[n] =
        (rt_tmap_node){.task = task, .owner = owner, .next = *chain, .derived = derived};
    *chain = n;
    count_access(map, b, task);
}

/* Unlink node *link from its chain of buffer b and free it. */
static void node_pop(rt_tensormap *map, int32_t b, int32_t *link)
{
    int32_t n = *link;
    *link = map->nodes[n].next;
    map->nodes[n].next = map->node_free;
    map->node_free = n;
    map->used--;
    map->bases[b].count--;
}

/* Free the nodes of a chain whose task is below `below`, and unless `keep`
 * is SP_NO_TASK every node not of task `keep`; returns how many. */
static inline __attribute__((always_inline)) uint32_t
chain_drop(rt_tensormap *map, int32_t b, int32_t *chain, int64_t below, int64_t keep)
{
    uint32_t freed = 0;
    while (*chain >= 0) {
        int64_t task = map->nodes[*chain].task;
        if (task < below || (keep != SP_NO_TASK && task != keep)) {
            node_pop(map, b, chain);
            freed++;
        } else {
            chain = &map->nodes[*chain].next;
        }
    }
    return freed;
}

/* True if `task` is already a producer in `deps`: in a MANUAL scope, the
 * explicit dependencies the task was given (nothing else is derived there). */
static bool deps_has(const rt_dep_list *deps, int64_t task)
{
    for (uint32_t i = 0; i < deps->count; i++)
        if (deps->producer[i] == task)
            return true;
    return false;
}

/* A MANUAL-scope write supersedes only what it is ordered after: nodes of
 * its explicit dependencies (and retired ones). Every other access stays, so
 * a later AUTO access still takes its edge to it. */
static void chain_drop_ordered(rt_tensormap *map, int32_t b, int32_t *chain, int64_t task,
                               const rt_dep_list *deps)
{
    while (*chain >= 0) {
        int64_t t = map->nodes[*chain].task;
        if (t < map->retired_below || (t != task && deps_has(deps, t)))
            node_pop(map, b, chain);
        else
            chain = &map->nodes[*chain].next;
    }
}

/* Drop tile i once it holds nothing, and its buffer once that holds nothing. */
static void tile_tidy(rt_tensormap *map, int32_t i)
{
    int32_t b = map->tiles[i].base_rec;
    if (map->tiles[i].writers < 0 && map->tiles[i].readers < 0)
        tile_drop(map, i);
    if (map->bases[b].count == 0)
        base_drop(map, b);
}

/* The edges a chain of a tile gives task's access, retired nodes freed on
 * the way (the caller tidies the tile if that empties it). Nodes of tasks
 * below `implied_below` give none: a newer access of the tile that took an
 * edge from them gives this task its edge (see grid_access). */
static inline __attribute__((always_inline)) int
chain_edges(rt_tensormap *map, int32_t b, int32_t *chain, int64_t task, int64_t owner,
            rt_edge_kind kind, int64_t implied_below, rt_dep_list *deps, bool *creator_implied)
{
    while (*chain >= 0) {
        const rt_tmap_node *n = &map->nodes[*chain];
        if (n->task < map->retired_below) { /* lazily forget retired tasks */
            node_pop(map, b, chain);
            continue;
        }
        if (n->task != task) {
            int rc = n->task < implied_below ? SP_OK : rt_dep_list_add(deps, n->task, task, kind);
            if (rc != SP_OK)
                return rc;
            /* As in treap mode: that access waited for the same creator. */
            if (n->task == owner || n->owner == owner)
                *creator_implied = true;
        }
        chain = &map->nodes[*chain].next;
    }
    return SP_OK;
}

/* The byte range of tile `offset` of a grid whose layout entry is g. */
static void tile_bytes(const rt_tmap_entry *g, int64_t offset, uint64_t *lo, uint64_t *hi)
{
    *lo = (uint64_t)offset * g->layout.elem_size;
    *hi = *lo + (g->hi - g->lo);
}

/* A whole buffer's accesses retired: forget it at once, in either mode. */
static void base_purge(rt_tensormap *map, int32_t b)
{
    rt_tmap_base *r = &map->bases[b];
    while (r->tiles >= 0) {
        int32_t i = r->tiles;
        chain_drop(map, b, &map->tiles[i].writers, INT64_MAX, SP_NO_TASK);
        chain_drop(map, b, &map->tiles[i].readers, INT64_MAX, SP_NO_TASK);
        tile_drop(map, i);
    }
    treap_free(map, r->root[0]);
    treap_free(map, r->root[1]);
    base_drop(map, b);
}

/* Switch buffer b to treap mode: every live node becomes an entry with its
 * tile's layout. Returns b, or -1 if nothing live was left (b dropped). */
static int32_t grid_to_treap(rt_tensormap *map, int32_t b)
{
    rt_tmap_base *r = &map->bases[b];
    const rt_tmap_entry grid = map->entries[r->grid];
    entry_give(map, r->grid); /* first: its slot may serve a tile's entry */
    r->grid = -1;
    rt_access_layout layout = grid.layout;
    while (r->tiles >= 0) {
        int32_t i = r->tiles;
        uint64_t lo, hi;
        tile_bytes(&grid, map->tiles[i].offset, &lo, &hi);
        layout.offset = map->tiles[i].offset;
        for (int w = 1; w >= 0; w--) {
            int32_t *chain = w ? &map->tiles[i].writers : &map->tiles[i].readers;
            while (*chain >= 0) {
                rt_tmap_node n = map->nodes[*chain];
                node_pop(map, b, chain);
                if (n.task >= map->retired_below)
                    entry_add(map, b, lo, hi, n.task, n.owner, w, n.derived, &layout);
            }
        }
        tile_drop(map, i);
    }
    if (r->count == 0) {
        base_drop(map, b);
        return -1;
    }
    return b;
}

/* A task's access to tile `offset` (hash `key`) of grid-mode buffer b, or
 * (b -1) the first access to a buffer, whose `grid` entry the caller laid
 * out. Edges first, so
 * that a full dep list leaves the tile as it was but for retired nodes; then
 * the record, which cannot fail: the caller made room. */
static inline __attribute__((always_inline)) int
grid_access(rt_tensormap *map, int32_t b, uint64_t base, int64_t offset, uint32_t key,
            const rt_tmap_entry *grid, int64_t task, int64_t owner, bool writes, bool manual,
            rt_dep_list *deps)
{
    bool creator_implied = owner == SP_NO_TASK || owner == task;
    int32_t i = b >= 0 ? tile_find(map, b, offset, key) : -1;
    int rc = SP_OK;
    if (i >= 0 && !manual) {
        rt_tmap_tile *t = &map->tiles[i];
        /* A write after reads: every writer older than an AUTO reader gave
         * that reader its RAW edge, and the write takes a WAR edge from the
         * reader, so the WAW edge would only repeat what those two imply.
         * (Readers only ever follow writers they took an edge from, unless
         * a MANUAL write left them: derived and newer is the test.) */
        int64_t implied_below = INT64_MIN;
        if (writes)
            for (int32_t n = t->readers; n >= 0; n = map->nodes[n].next)
                if (map->nodes[n].derived && map->nodes[n].task > implied_below &&
                    map->nodes[n].task >= map->retired_below)
                    implied_below = map->nodes[n].task;
        rc = chain_edges(map, b, &t->writers, task, owner, writes ? SP_EDGE_WAW : SP_EDGE_RAW,
                         implied_below, deps, &creator_implied);
        if (rc == SP_OK && writes)
            rc = chain_edges(map, b, &t->readers, task, owner, SP_EDGE_WAR, INT64_MIN, deps,
                             &creator_implied);
    }
    if (rc == SP_OK && !creator_implied)
        rc = rt_dep_list_add(deps, owner, task, SP_EDGE_CREATOR);
    if (rc != SP_OK) {
        if (i >= 0)
            tile_tidy(map, i);
        return rc;
    }
    if (b < 0) {
        int32_t g = entry_take(map);
        map->entries[g] = *grid;
        b = base_add(map, base, g);
        map->entries[g].base_rec = b;
    }
    if (i < 0)
        i = tile_add(map, b, offset, key);
    rt_tmap_tile *t = &map->tiles[i];
    if (writes && !manual) {
        /* The write supersedes every other task's access to the tile: it
         * took an edge to each of them. */
        chain_drop(map, b, &t->writers, INT64_MIN, task);
        chain_drop(map, b, &t->readers, INT64_MIN, task);
    } else if (writes) {
        /* A MANUAL write derived no edge: it supersedes only the accesses
         * it was ordered after by hand, or an AUTO reader after it would
         * lose its edge to an older writer (the tile's writers are then
         * several tasks'). */
        chain_drop_ordered(map, b, &t->writers, task, deps);
        chain_drop_ordered(map, b, &t->readers, task, deps);
    }
    node_push(map, b, writes ? &t->writers : &t->readers, task, owner, !manual);
    return SP_OK;
}

/* Box coordinates of a view inside a dense parent whose strides divide each
 * other: per dimension [start, start + shape). False if not such a layout. */
static bool layout_box(const rt_access_layout *l, int64_t *start)
{
    int64_t rem = l->offset;
    for (int d = 0; d < l->ndim; d++) {
        int64_t s = l->strides[d];
        if (s <= 0)
            return false;
        if (d > 0) {
            int64_t outer = l->strides[d - 1];
            if (outer % s != 0)
                return false;
            int64_t extent = outer / s; /* elements of the parent along d */
            if ((rem / s) >= extent || (rem / s) + l->shape[d] > extent)
                return false;
        }
        start[d] = rem / s;
        rem -= start[d] * s;
    }
    return rem == 0;
}

/* True if view l's elements are one run of memory (row-major, dense). */
static bool layout_contiguous(const rt_access_layout *l)
{
    int64_t expect = 1;
    for (int d = l->ndim - 1; d >= 0; d--) {
        if (l->shape[d] != 1 && l->strides[d] != expect)
            return false;
        expect *= l->shape[d];
    }
    return true;
}

bool rt_views_overlap(uint64_t a_lo, uint64_t a_hi, const rt_access_layout *a, uint64_t b_lo,
                      uint64_t b_hi, const rt_access_layout *b)
{
    if (a_hi <= b_lo || b_hi <= a_lo)
        return false;
    /* Views that are one run of memory each share the bytes they overlap
     * in: the byte answer is exact (and spares the box arithmetic below,
     * which whole-row tiles and halos would otherwise pay at every test). */
    if (a->dense && b->dense)
        return true;
    /* Exact test only for the same dense layout: same rank, strides and
     * element size. Anything else keeps the conservative byte answer. */
    if (a->ndim != b->ndim || a->elem_size != b->elem_size || a->ndim == 0)
        return true;
    for (int d = 0; d < a->ndim; d++)
        if (a->strides[d] != b->strides[d])
            return true;
    int64_t sa[SP_MAX_DIMS], sb[SP_MAX_DIMS];
    if (!layout_box(a, sa) || !layout_box(b, sb))
        return true;
    for (int d = 0; d < a->ndim; d++)
        if (sa[d] + a->shape[d] <= sb[d] || sb[d] + b->shape[d] <= sa[d])
            return false;
    return true;
}

static void layout_of(const sp_tensor *t, rt_access_layout *l)
{
    memset(l, 0, sizeof *l);
    l->offset = t->offset;
    l->ndim = t->ndim;
    l->elem_size = (uint8_t)sp_tensor_elem_size(t);
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++) {
        l->shape[d] = t->shape[d];
        l->strides[d] = t->strides[d];
    }
    l->dense = l->ndim <= SP_MAX_DIMS && layout_contiguous(l);
}

/* True if a write of view (lo, hi, outer) covers every element of entry
 * `inner`: byte-for-byte for a contiguous write, box containment for views
 * of one dense layout (a tile rewritten by a tile). */
static bool write_covers(uint64_t lo, uint64_t hi, const rt_access_layout *outer,
                         const rt_tmap_entry *inner)
{
    if (inner->lo < lo || inner->hi > hi)
        return false;
    if (layout_contiguous(outer))
        return true;
    const rt_access_layout *in = &inner->layout;
    if (in->ndim != outer->ndim || in->elem_size != outer->elem_size)
        return false;
    for (int d = 0; d < outer->ndim; d++)
        if (in->strides[d] != outer->strides[d])
            return false;
    int64_t so[SP_MAX_DIMS], si[SP_MAX_DIMS];
    if (!layout_box(outer, so) || !layout_box(in, si))
        return false;
    for (int d = 0; d < outer->ndim; d++)
        if (si[d] < so[d] || si[d] + in->shape[d] > so[d] + outer->shape[d])
            return false;
    return true;
}

/* True if view `l` can start a grid: a box in a dense layout whose start is
 * a multiple of its shape. Two views of one such layout and shape are the
 * same tile or share nothing. */
static uint8_t shift_of(int64_t v)
{
    return v > 0 && (v & (v - 1)) == 0 ? (uint8_t)__builtin_ctzll((uint64_t)v) : SP_TMAP_NO_SHIFT;
}

/* The grid entry's tile_mul and shifts for layout l (which starts_grid
 * accepted); returns the index of l's own tile. */
static uint32_t grid_numbering(const rt_access_layout *l, const int64_t *start, rt_tmap_entry *g)
{
    uint32_t m = 1, index = 0;
    memset(g->tile_mul, 0, sizeof g->tile_mul);
    memset(g->stride_shift, SP_TMAP_NO_SHIFT, sizeof g->stride_shift);
    memset(g->shape_shift, SP_TMAP_NO_SHIFT, sizeof g->shape_shift);
    for (int d = l->ndim - 1; d >= 0; d--) {
        g->tile_mul[d] = m;
        g->stride_shift[d] = shift_of(l->strides[d]);
        g->shape_shift[d] = shift_of(l->shape[d]);
        index += (uint32_t)(start[d] / l->shape[d]) * m;
        /* Tiles per row of dimension d: the parent's extent there (outer
         * stride / stride) over the tile's. Only a hash (tile_key):
         * wrapping mod 2^32 is harmless. */
        if (d > 0) {
            int64_t extent = l->strides[d - 1] / l->strides[d];
            m *= (uint32_t)(extent / l->shape[d] + (extent % l->shape[d] != 0));
        }
    }
    return index;
}

static bool starts_grid(const rt_access_layout *l, int64_t start[SP_MAX_DIMS])
{
    if (l->ndim < 1 || l->ndim > SP_MAX_DIMS || !layout_box(l, start))
        return false;
    for (int d = 0; d < l->ndim; d++)
        if (l->shape[d] < 1 || start[d] % l->shape[d] != 0)
            return false;
    return true;
}

/* True if view t is a tile of the grid whose layout entry is g (a layout
 * that passed starts_grid): layout_box and the alignment test, knowing that
 * the strides nest, and sp_tensor_byte_extent's checks, knowing the shape.
 * The hot path of grid mode, hence no layout copy and no 128-bit extent. */
static bool on_grid(const sp_tensor *t, const rt_tmap_entry *g, uint32_t *index)
{
    const rt_access_layout *grid = &g->layout;
    uint64_t es = grid->elem_size, end;
    /* The tile's bytes end inside 2^64 (tile bytes are a multiple of es). */
    if (t->ndim != grid->ndim || sp_tensor_elem_size(t) != es || t->offset < 0 ||
        __builtin_mul_overflow((uint64_t)t->offset, es, &end) ||
        __builtin_add_overflow(end, g->hi - g->lo, &end))
        return false;
    int64_t rem = t->offset;
    uint32_t at_tile = 0;
    for (int d = 0; d < grid->ndim; d++) {
        int64_t s = grid->strides[d], n = grid->shape[d];
        if (t->shape[d] != n || t->strides[d] != s)
            return false;
        /* Powers of two are common: shift instead of divide (rem >= 0). */
        uint8_t ss = g->stride_shift[d], ns = g->shape_shift[d];
        int64_t start = ss != SP_TMAP_NO_SHIFT ? rem >> ss : rem / s, at = start * s;
        int64_t tile = ns != SP_TMAP_NO_SHIFT ? start >> ns : start / n;
        rem -= at;
        at_tile += (uint32_t)tile * g->tile_mul[d];
        /* Aligned, and inside the parent's row: (start + n) * s at most the
         * outer stride, which at (<= the remainder below it) and n * s
         * (the grid's own tile fits) keep from overflowing. */
        if (start != tile * n || (d > 0 && n * s > grid->strides[d - 1] - at))
            return false;
    }
    *index = at_tile;
    return rem == 0;
}

/* ---- keeping the edge set small (tensormap.h) ------------------------------
 * Both checks look only at a few accesses: above these counts an access
 * keeps every edge and entry the plain rules give (never wrong, only more). */
#define TMAP_REDUCE_MAX 16 /* overlapping accesses a lookup weighs against each other */
#define TMAP_COVER_MAX 16  /* newer writes a coverage test unites */
#define TMAP_COVER_CELLS 1024

/* True if the edge from the access in scratch[k] is implied: another one
 * of scratch[0..m), newer, conflicting with it and overlapping it, was
 * recorded by an AUTO access (so it took that edge itself), and this task
 * takes an edge from it too, or from one newer still (the newest is never
 * dropped, so the chain ends at an edge that is emitted). */
static bool edge_implied(const rt_tensormap *map, uint32_t k, uint32_t m)
{
    const rt_tmap_entry *e = &map->entries[map->scratch[k]];
    for (uint32_t j = 0; j < m; j++) {
        const rt_tmap_entry *f = &map->entries[map->scratch[j]];
        if (f->derived && f->task > e->task && (e->is_write || f->is_write) &&
            rt_views_overlap(e->lo, e->hi, &e->layout, f->lo, f->hi, &f->layout))
            return true;
    }
    return false;
}

/* The live AUTO writes of subtree i newer than entry `of` that overlap it,
 * into out; false once more than TMAP_COVER_MAX. */
static bool newer_writes(const rt_tensormap *map, int32_t i, const rt_tmap_entry *of,
                         const rt_tmap_entry **out, uint32_t *n)
{
    while (i >= 0 && map->entries[i].max_hi > of->lo) {
        const rt_tmap_entry *e = &map->entries[i];
        if (!newer_writes(map, e->left, of, out, n))
            return false;
        if (e->lo >= of->hi)
            return true;
        if (e->hi > of->lo && e->derived && e->task > of->task && e->task >= map->retired_below &&
            rt_views_overlap(of->lo, of->hi, &of->layout, e->lo, e->hi, &e->layout)) {
            if (*n == TMAP_COVER_MAX)
                return false;
            out[(*n)++] = e;
        }
        i = e->right;
    }
    return true;
}

/* True if the contiguous ones of the views w[0..n) cover bytes [lo, hi). */
static bool bytes_covered(uint64_t lo, uint64_t hi, const rt_tmap_entry *const *w, uint32_t n)
{
    uint64_t at = lo;
    for (bool moved = true; moved && at < hi;) {
        moved = false; /* n is small: extend the covered prefix until it stops */
        for (uint32_t j = 0; j < n; j++)
            if (w[j]->lo <= at && w[j]->hi > at && w[j]->layout.dense) {
                at = w[j]->hi;
                moved = true;
            }
    }
    return at >= hi;
}

/* True if the views w[0..n) of e's dense layout cover every element of e's
 * box: cut e's box at every edge of theirs, and test one element of each
 * cell (a box holds a whole cell or none of it). */
static bool box_covered(const rt_tmap_entry *e, const rt_tmap_entry *const *w, uint32_t n)
{
    const rt_access_layout *l = &e->layout;
    const int nd = l->ndim;
    int64_t lo[TMAP_COVER_MAX][SP_MAX_DIMS], hi[TMAP_COVER_MAX][SP_MAX_DIMS], es[SP_MAX_DIMS];
    int64_t cut[SP_MAX_DIMS][2 * TMAP_COVER_MAX + 2];
    uint32_t ncut[SP_MAX_DIMS], nbox = 0;
    if (nd < 1 || nd > SP_MAX_DIMS || !layout_box(l, es))
        return false;
    for (uint32_t j = 0; j < n; j++) {
        const rt_access_layout *v = &w[j]->layout;
        bool same = v->ndim == nd && v->elem_size == l->elem_size;
        for (int d = 0; same && d < nd; d++)
            same = v->strides[d] == l->strides[d];
        if (!same || !layout_box(v, lo[nbox]))
            continue;
        for (int d = 0; d < nd; d++)
            hi[nbox][d] = lo[nbox][d] + v->shape[d];
        nbox++;
    }
    uint64_t cells = 1;
    for (int d = 0; d < nd; d++) {
        int64_t a = es[d], z = es[d] + l->shape[d];
        uint32_t c = 0;
        cut[d][c++] = a;
        for (uint32_t j = 0; j < nbox; j++)
            for (int side = 0; side < 2; side++) {
                int64_t x = side ? hi[j][d] : lo[j][d];
                if (x > a && x < z)
                    cut[d][c++] = x;
            }
        cut[d][c++] = z;
        for (uint32_t p = 1; p < c; p++) /* insertion sort: a few cuts */
            for (uint32_t q = p; q > 0 && cut[d][q - 1] > cut[d][q]; q--) {
                int64_t t = cut[d][q];
                cut[d][q] = cut[d][q - 1];
                cut[d][q - 1] = t;
            }
        uint32_t u = 1; /* each cut once: no empty cells */
        for (uint32_t p = 1; p < c; p++)
            if (cut[d][p] != cut[d][u - 1])
                cut[d][u++] = cut[d][p];
        if (u < 2)
            return true; /* no elements: nothing left to cover */
        c = u;
        ncut[d] = c;
        cells *= c - 1;
        if (cells > TMAP_COVER_CELLS)
            return false;
    }
    uint32_t at[SP_MAX_DIMS] = {0}; /* the cell: an index into each dimension's cuts */
    for (;;) {
        bool held = false;
        for (uint32_t j = 0; !held && j < nbox; j++) {
            held = true;
            for (int d = 0; held && d < nd; d++)
                held = lo[j][d] <= cut[d][at[d]] && cut[d][at[d]] < hi[j][d];
        }
        if (!held)
            return false;
        int d = nd - 1;
        while (d >= 0 && ++at[d] == ncut[d] - 1)
            at[d--] = 0;
        if (d < 0)
            return true;
    }
}

/* The bytes of entry e's elements (its byte range for a dense view). */
static uint64_t entry_bytes(const rt_tmap_entry *e)
{
    if (e->layout.dense)
        return e->hi - e->lo;
    uint64_t n = e->layout.elem_size;
    for (int d = 0; d < e->layout.ndim && d < SP_MAX_DIMS; d++)
        n *= (uint64_t)e->layout.shape[d];
    return n;
}

/* Bytes of entry e's elements that a write of (lo, hi, w) overlaps: exact
 * for two dense views and for boxes of one dense layout (`wbox` the
 * write's box, NULL if it has none); else all of e's, which only means
 * the coverage test is asked at once. */
static uint64_t overlap_bytes(uint64_t lo, uint64_t hi, const rt_access_layout *w,
                              const int64_t *wbox, const rt_tmap_entry *e)
{
    if (w->dense && e->layout.dense)
        return (hi < e->hi ? hi : e->hi) - (lo > e->lo ? lo : e->lo);
    const rt_access_layout *l = &e->layout;
    bool same = wbox && l->ndim == w->ndim && l->elem_size == w->elem_size;
    for (int d = 0; same && d < l->ndim; d++)
        same = l->strides[d] == w->strides[d];
    int64_t ebox[SP_MAX_DIMS];
    if (!same || !layout_box(l, ebox))
        return entry_bytes(e);
    uint64_t n = l->elem_size;
    for (int d = 0; d < l->ndim; d++) {
        int64_t a = ebox[d] > wbox[d] ? ebox[d] : wbox[d];
        int64_t z = ebox[d] + l->shape[d] < wbox[d] + w->shape[d] ? ebox[d] + l->shape[d]
                                                                  : wbox[d] + w->shape[d];
        n *= z > a ? (uint64_t)(z - a) : 0;
    }
    return n;
}

/* True if the write (lo, hi, layout) and the AUTO writes since entry e
 * cover every element of e. Each of those writes took an edge from e (it
 * overlaps e, and e was live then), so e is superseded: any later access
 * to one of its elements meets one of them, or a newer write that itself
 * follows them. Only tried when the write alone does not cover e. */
static bool writes_since_cover(const rt_tensormap *map, int32_t b, const rt_tmap_entry *e,
                               uint64_t lo, uint64_t hi, const rt_access_layout *layout)
{
    const rt_tmap_entry *w[TMAP_COVER_MAX];
    uint32_t n = 0;
    rt_tmap_entry self = {.lo = lo, .hi = hi, .layout = *layout};
    w[n++] = &self;
    if (!newer_writes(map, map->bases[b].root[1], e, w, &n))
        return false;
    return bytes_covered(e->lo, e->hi, w, n) || box_covered(e, w, n);
}

/* Treap mode: the edges of an access to buffer b (-1: not in the map). */
static int treap_access(rt_tensormap *map, int32_t b, uint64_t base, const rt_access_layout *layout,
                        uint64_t lo, uint64_t hi, int64_t task, int64_t owner, bool writes,
                        bool manual, rt_dep_list *deps)
{
    int rc;
    bool creator_implied = owner == SP_NO_TASK || owner == task;
    uint32_t found = 0, m = 0;
    if (b >= 0) {
        /* Writes always matter; earlier reads only to a write (WAR). */
        treap_collect(map, map->bases[b].root[1], lo, hi, &found);
        if (writes)
            treap_collect(map, map->bases[b].root[0], lo, hi, &found);
    }
    /* Retired entries go (lazily forgotten); scratch[0..m) keeps the other
     * tasks' accesses this one overlaps: the ones it is ordered after. */
    for (uint32_t k = 0; k < found; k++) {
        int32_t i = map->scratch[k];
        const rt_tmap_entry *e = &map->entries[i];
        if (e->task < map->retired_below)
            entry_remove(map, i);
        else if (e->task != task && rt_views_overlap(lo, hi, layout, e->lo, e->hi, &e->layout))
            map->scratch[m++] = i;
    }
    /* Edges first (a read found only writes: each conflicts), then what
     * this access supersedes stays in scratch, the rest becomes -1, and goes
     * only once no edge can fail any more. */
    bool reduce = m <= TMAP_REDUCE_MAX;
    int64_t box[SP_MAX_DIMS];
    int have_box = 0; /* this access's box: 1 worked out, -1 none, 0 not yet */
    for (uint32_t k = 0; k < m && !manual; k++) {
        const rt_tmap_entry *e = &map->entries[map->scratch[k]];
        rt_edge_kind kind = e->is_write ? (writes ? SP_EDGE_WAW : SP_EDGE_RAW) : SP_EDGE_WAR;
        if (!(reduce && edge_implied(map, k, m)) &&
            (rc = rt_dep_list_add(deps, e->task, task, kind)) != SP_OK)
            return rc;
        /* That access waited for the same creator (or is it): the creator
         * edge would only repeat what this edge (or the one implying it)
         * implies. */
        if (e->task == owner || e->owner == owner)
            creator_implied = true;
    }
    for (uint32_t k = 0; k < m; k++) {
        int32_t i = map->scratch[k];
        rt_tmap_entry *e = &map->entries[i];
        /* A covering write supersedes the entry: later accesses that touch
         * it touch this write too, and this task already depends on it (in
         * a MANUAL scope only if the task was ordered after it by hand). An
         * AUTO write also together with the AUTO writes since the entry,
         * asked once they have overlapped as many bytes as it has (a tiling
         * of it: once, when its last tile is written). */
        bool gone =
            writes && (!manual || deps_has(deps, e->task)) && write_covers(lo, hi, layout, e);
        if (!gone && writes && !manual) {
            if (!have_box)
                have_box = layout_box(layout, box) ? 1 : -1;
            uint64_t sum =
                e->overlapped + overlap_bytes(lo, hi, layout, have_box > 0 ? box : NULL, e);
            e->overlapped = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
            gone = (sum >= entry_bytes(e) || e->overlapped == UINT32_MAX) &&
                   writes_since_cover(map, b, e, lo, hi, layout);
        }
        if (!gone)
            map->scratch[k] = -1;
    }
    if (!creator_implied && (rc = rt_dep_list_add(deps, owner, task, SP_EDGE_CREATOR)) != SP_OK)
        return rc;
    for (uint32_t k = 0; k < m; k++)
        if (map->scratch[k] >= 0)
            entry_remove(map, map->scratch[k]);
    /* Removing the last of its entries dropped the buffer: add it again. */
    if (b < 0 || map->bases[b].count == 0)
        b = base_add(map, base, -1);
    entry_add(map, b, lo, hi, task, owner, writes, !manual, layout);
    return SP_OK;
}

/* Everything but a tile of a live grid: a first access, a buffer whose
 * accesses all retired, a view off its buffer's grid, a treap-mode buffer.
 * Kept out of line so the grid path stays small. */
static __attribute__((noinline)) int access_slow(rt_tensormap *map, int32_t b, int64_t task,
                                                 const sp_tensor *t, int64_t owner, bool writes,
                                                 bool manual, rt_dep_list *deps)
{
    uint64_t lo, hi;
    if (sp_tensor_byte_extent(t, &lo, &hi) != SP_OK)
        return SP_ESHAPE;
    /* Room for one more access is all an access needs (pools comment). */
    if (map->used >= map->capacity)
        return SP_EGRAPH_LIMIT;
    if (b >= 0 && map->bases[b].newest < map->retired_below) {
        /* All retired (a ring heap handing the address out again, maybe
         * with another shape): start afresh, in grid mode if it fits. */
        base_purge(map, b);
        b = -1;
    }
    if (b >= 0 && map->bases[b].grid >= 0)
        b = grid_to_treap(map, b); /* not a tile of its grid (tested before) */
    rt_access_layout layout;
    layout_of(t, &layout);
    int64_t start[SP_MAX_DIMS];
    if (b < 0 && starts_grid(&layout, start)) {
        rt_tmap_entry grid = {.lo = lo, .hi = hi, .is_grid = 1, .layout = layout};
        uint32_t index = grid_numbering(&layout, start, &grid);
        return grid_access(map, b, t->addr, t->offset, tile_key(t->addr, index), &grid, task, owner,
                           writes, manual, deps);
    }
    return treap_access(map, b, t->addr, &layout, lo, hi, task, owner, writes, manual, deps);
}

int rt_tensormap_access(rt_tensormap *map, int64_t task, const sp_tensor *t, int dir, bool manual,
                        rt_dep_list *deps)
{
    int64_t owner = manual ? SP_NO_TASK : t->owner_task;
    if (dir == SP_NO_DEP)
        return owner == SP_NO_TASK ? SP_OK : rt_dep_list_add(deps, owner, task, SP_EDGE_CREATOR);
    bool writes = dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING;
    /* Consecutive accesses often share a buffer: try the last one first (a
     * free record has count 0, a reused one another base). */
    int32_t b = map->last_base;
    if (b < 0 || map->bases[b].base != t->addr || map->bases[b].count == 0)
        map->last_base = b = base_find(map, t->addr);
    if (b >= 0 && map->bases[b].grid >= 0 && map->bases[b].newest >= map->retired_below) {
        const rt_tmap_entry *g = &map->entries[map->bases[b].grid];
        uint32_t index;
        if (on_grid(t, g, &index)) {
            if (map->used >= map->capacity)
                return SP_EGRAPH_LIMIT;
            return grid_access(map, b, t->addr, t->offset, tile_key(t->addr, index), NULL, task,
                               owner, writes, manual, deps);
        }
    }
    return access_slow(map, b, task, t, owner, writes, manual, deps);
}

void rt_tensormap_retire_below(rt_tensormap *map, int64_t task_id)
{
    if (task_id > map->retired_below)
        map->retired_below = task_id;
}

/* Copy one chain of a tile of `from` into `to`, oldest last as it was. */
static void chain_copy(rt_tensormap *to, int32_t b, int32_t *chain, const rt_tensormap *from,
                       int32_t n)
{
    for (; n >= 0; n = from->nodes[n].next) {
        if (from->nodes[n].task < from->retired_below)
            continue;
        node_push(to, b, chain, from->nodes[n].task, from->nodes[n].owner, from->nodes[n].derived);
        chain = &to->nodes[*chain].next;
    }
}

static uint32_t chain_live(const rt_tensormap *map, int32_t n)
{
    uint32_t live = 0;
    for (; n >= 0; n = map->nodes[n].next)
        live += map->nodes[n].task >= map->retired_below;
    return live;
}

/* Move into a map whose pools reach every index `from` ever used: copy the
 * pools as they are (links are indices) and hash buffers and tiles into the
 * new tables, which differ in size. What host_build_graph's doubling does. */
static void move_by_index(rt_tensormap *to, const rt_tensormap *from)
{
    memcpy(to->entries, from->entries, from->entry_fresh * sizeof *from->entries);
    memcpy(to->bases, from->bases, from->base_fresh * sizeof *from->bases);
    memcpy(to->tiles, from->tiles, from->tile_fresh * sizeof *from->tiles);
    memcpy(to->nodes, from->nodes, from->node_fresh * sizeof *from->nodes);
    to->entry_fresh = from->entry_fresh;
    to->base_fresh = from->base_fresh;
    to->tile_fresh = from->tile_fresh;
    to->node_fresh = from->node_fresh;
    to->free_head = from->free_head;
    to->base_free = from->base_free;
    to->tile_free = from->tile_free;
    to->node_free = from->node_free;
    to->used = from->used;
    to->high_water = from->high_water;
    to->prio_seq = from->prio_seq;
    to->retired_below = from->retired_below;
    for (uint32_t b = 0; b < to->base_fresh; b++) {
        if (to->bases[b].count == 0) /* free */
            continue;
        uint32_t h = hash_base(to, to->bases[b].base);
        to->bases[b].next = to->buckets[h];
        to->buckets[h] = (int32_t)b;
    }
    for (uint32_t i = 0; i < to->tile_fresh; i++) {
        rt_tmap_tile *t = &to->tiles[i];
        if (t->base_rec < 0)
            continue;
        uint32_t h = t->key & to->tile_mask;
        t->next = to->tile_buckets[h];
        to->tile_buckets[h] = (int32_t)i;
    }
    if (to->retired_below > 0) /* carry only live accesses, as below */
        rt_tensormap_sweep(to);
}

int rt_tensormap_move(rt_tensormap *to, const rt_tensormap *from)
{
    uint32_t reach = from->entry_fresh;
    if (from->base_fresh > reach)
        reach = from->base_fresh;
    if (from->tile_fresh > reach)
        reach = from->tile_fresh;
    if (from->node_fresh > reach)
        reach = from->node_fresh;
    if (to->capacity >= reach && to->used == 0) {
        move_by_index(to, from);
        return SP_OK;
    }
    /* Smaller: access by access, live ones only. */
    for (uint32_t i = 0; i < from->tile_fresh; i++) {
        const rt_tmap_tile *t = &from->tiles[i];
        if (t->base_rec < 0)
            continue;
        uint32_t live = chain_live(from, t->writers) + chain_live(from, t->readers);
        if (live == 0)
            continue;
        if (to->capacity - to->used < live)
            return SP_EGRAPH_LIMIT;
        uint64_t base = from->bases[t->base_rec].base;
        int32_t b = base_find(to, base);
        if (b < 0) {
            int32_t g = entry_take(to);
            to->entries[g] = from->entries[from->bases[t->base_rec].grid];
            b = base_add(to, base, g);
            to->entries[g].base_rec = b;
        }
        int32_t k = tile_add(to, b, t->offset, t->key);
        chain_copy(to, b, &to->tiles[k].writers, from, t->writers);
        chain_copy(to, b, &to->tiles[k].readers, from, t->readers);
    }
    for (uint32_t i = 0; i < from->entry_fresh; i++) {
        const rt_tmap_entry *e = &from->entries[i];
        if (e->base_rec < 0 || e->is_grid || e->task < from->retired_below)
            continue;
        if (to->used >= to->capacity)
            return SP_EGRAPH_LIMIT;
        uint64_t base = from->bases[e->base_rec].base;
        int32_t b = base_find(to, base);
        if (b < 0)
            b = base_add(to, base, -1);
        entry_add(to, b, e->lo, e->hi, e->task, e->owner, e->is_write, e->derived, &e->layout);
    }
    to->retired_below = from->retired_below;
    return SP_OK;
}

/* Live accesses of one chain, into out (up to max); returns n plus them. */
static uint32_t chain_report(const rt_tensormap *map, int32_t n, int64_t *out, uint32_t max,
                             uint32_t count)
{
    for (; n >= 0; n = map->nodes[n].next) {
        if (map->nodes[n].task < map->retired_below)
            continue;
        if (count < max)
            out[count] = map->nodes[n].task;
        count++;
    }
    return count;
}

uint32_t rt_tensormap_overlapping(const rt_tensormap *map, uint64_t base, uint64_t lo, uint64_t hi,
                                  bool writes_only, int64_t *out, uint32_t max)
{
    int32_t b = base_find(map, base);
    if (b < 0)
        return 0;
    uint32_t n = 0;
    if (map->bases[b].grid >= 0) {
        /* Rare (control tensors): a walk over the buffer's tiles, writes
         * first as in treap mode, byte ranges as in treap mode. */
        const rt_tmap_entry *grid = &map->entries[map->bases[b].grid];
        for (int pass = 1; pass >= (writes_only ? 1 : 0); pass--)
            for (int32_t i = map->bases[b].tiles; i >= 0; i = map->tiles[i].sib_next) {
                uint64_t tlo, thi;
                tile_bytes(grid, map->tiles[i].offset, &tlo, &thi);
                if (tlo < hi && lo < thi)
                    n = chain_report(map, pass ? map->tiles[i].writers : map->tiles[i].readers, out,
                                     max, n);
            }
        return n;
    }
    uint32_t found = 0;
    /* The scratch array is the map's own: a lookup leaves the entries alone. */
    treap_collect((rt_tensormap *)map, map->bases[b].root[1], lo, hi, &found);
    if (!writes_only)
        treap_collect((rt_tensormap *)map, map->bases[b].root[0], lo, hi, &found);
    for (uint32_t k = 0; k < found; k++) {
        const rt_tmap_entry *e = &map->entries[map->scratch[k]];
        if (e->task < map->retired_below || (writes_only && !e->is_write))
            continue;
        if (n < max)
            out[n] = e->task;
        n++;
    }
    return n;
}

bool rt_tensormap_touched(const rt_tensormap *map, uint64_t base, uint64_t lo, uint64_t hi,
                          bool writes_only)
{
    return rt_tensormap_overlapping(map, base, lo, hi, writes_only, NULL, 0) > 0;
}

uint32_t rt_tensormap_sweep(rt_tensormap *map)
{
    uint32_t freed = 0;
    for (uint32_t i = 0; i < map->entry_fresh; i++) {
        const rt_tmap_entry *e = &map->entries[i];
        if (e->base_rec >= 0 && !e->is_grid && e->task < map->retired_below) {
            entry_remove(map, (int32_t)i);
            freed++;
        }
    }
    for (uint32_t i = 0; i < map->tile_fresh; i++) {
        rt_tmap_tile *t = &map->tiles[i];
        if (t->base_rec < 0)
            continue;
        freed += chain_drop(map, t->base_rec, &t->writers, map->retired_below, SP_NO_TASK);
        freed += chain_drop(map, t->base_rec, &t->readers, map->retired_below, SP_NO_TASK);
        tile_tidy(map, (int32_t)i);
    }
    return freed;
}
