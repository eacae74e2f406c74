/* TensorMap: hash on buffer base, chained entries, range overlap, and the
 * creator / RAW / WAW / WAR rules. No allocation: the map lives in a block
 * the caller provides (host memory for hbg, device memory for tmr). */
#include "runtime/shared/tensormap.h"

#include <string.h>

#include "simpler/status.h"
#include "simpler/tensor.h"

int sp_dep_list_add(sp_dep_list *deps, int64_t producer, int64_t task, sp_edge_kind kind)
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

size_t sp_tensormap_bytes(uint32_t entries)
{
    return (size_t)bucket_count(entries) * sizeof(int32_t) +
           (size_t)entries * (sizeof(sp_tmap_entry) + sizeof(sp_tmap_base) + sizeof(int32_t)) + 64;
}

int sp_tensormap_init(sp_tensormap *map, void *mem, size_t bytes, uint32_t entries)
{
    if (!map || !mem || entries == 0 || entries > (1u << 30) || bytes < sp_tensormap_bytes(entries))
        return SP_EINVAL;
    uint32_t nb = bucket_count(entries);
    uintptr_t p = ((uintptr_t)mem + 7) & ~(uintptr_t)7;
    memset(map, 0, sizeof *map);
    map->entries = (sp_tmap_entry *)p;
    p += (size_t)entries * sizeof(sp_tmap_entry);
    map->bases = (sp_tmap_base *)p;
    p += (size_t)entries * sizeof(sp_tmap_base);
    map->scratch = (int32_t *)p;
    p += (size_t)entries * sizeof(int32_t);
    map->buckets = (int32_t *)p;
    map->bucket_mask = nb - 1;
    map->capacity = entries;
    for (uint32_t i = 0; i < nb; i++)
        map->buckets[i] = -1;
    for (uint32_t i = 0; i < entries; i++) {
        map->entries[i].left = i + 1 < entries ? (int32_t)(i + 1) : -1;
        map->entries[i].base_rec = -1;
        map->bases[i].next = i + 1 < entries ? (int32_t)(i + 1) : -1;
    }
    map->free_head = 0;
    map->base_free = 0;
    return SP_OK;
}

static uint32_t hash_base(const sp_tensormap *map, uint64_t base)
{
    /* Buffers are at least 64-byte aligned: drop the low bits, then mix. */
    uint64_t h = (base >> 6) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & map->bucket_mask;
}

static int32_t base_find(const sp_tensormap *map, uint64_t base)
{
    for (int32_t b = map->buckets[hash_base(map, base)]; b >= 0; b = map->bases[b].next)
        if (map->bases[b].base == base)
            return b;
    return -1;
}

static int32_t base_add(sp_tensormap *map, uint64_t base)
{
    int32_t b = map->base_free;
    if (b < 0)
        return -1;
    map->base_free = map->bases[b].next;
    uint32_t h = hash_base(map, base);
    map->bases[b] = (sp_tmap_base){.base = base, .root = {-1, -1}, .next = map->buckets[h]};
    map->buckets[h] = b;
    return b;
}

static void base_drop(sp_tensormap *map, int32_t b)
{
    int32_t *link = &map->buckets[hash_base(map, map->bases[b].base)];
    while (*link != b)
        link = &map->bases[*link].next;
    *link = map->bases[b].next;
    map->bases[b].next = map->base_free;
    map->base_free = b;
}

/* ---- the interval treap --------------------------------------------------- */

#define E(i) (map->entries[i])

static void fix(sp_tensormap *map, int32_t i)
{
    uint64_t m = E(i).hi;
    if (E(i).left >= 0 && E(E(i).left).max_hi > m)
        m = E(E(i).left).max_hi;
    if (E(i).right >= 0 && E(E(i).right).max_hi > m)
        m = E(E(i).right).max_hi;
    E(i).max_hi = m;
}

/* Order by lo, then by index: every key is distinct. */
static bool key_less(const sp_tensormap *map, int32_t a, int32_t b)
{
    return E(a).lo < E(b).lo || (E(a).lo == E(b).lo && a < b);
}

static int32_t rotate_right(sp_tensormap *map, int32_t r)
{
    int32_t l = E(r).left;
    E(r).left = E(l).right;
    E(l).right = r;
    fix(map, r);
    fix(map, l);
    return l;
}

static int32_t rotate_left(sp_tensormap *map, int32_t r)
{
    int32_t x = E(r).right;
    E(r).right = E(x).left;
    E(x).left = r;
    fix(map, r);
    fix(map, x);
    return x;
}

static int32_t treap_insert(sp_tensormap *map, int32_t root, int32_t n)
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
static int32_t treap_merge(sp_tensormap *map, int32_t a, int32_t b)
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

static int32_t treap_erase(sp_tensormap *map, int32_t root, int32_t n)
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
static void treap_collect(sp_tensormap *map, int32_t i, uint64_t lo, uint64_t hi, uint32_t *n)
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

static void entry_remove(sp_tensormap *map, int32_t i)
{
    int32_t b = map->entries[i].base_rec;
    int32_t *root = &map->bases[b].root[map->entries[i].is_write];
    *root = treap_erase(map, *root, i);
    if (--map->bases[b].count == 0)
        base_drop(map, b);
    map->entries[i].base_rec = -1;
    map->entries[i].left = map->free_head;
    map->free_head = i;
    map->used--;
}

/* Record an access; returns its entry, or -1 if the map is full. */
static int32_t entry_add(sp_tensormap *map, uint64_t base, uint64_t lo, uint64_t hi, int64_t task,
                         int64_t owner, bool is_write, const sp_access_layout *layout)
{
    if (map->free_head < 0)
        return -1;
    int32_t b = base_find(map, base);
    if (b < 0 && (b = base_add(map, base)) < 0)
        return -1;
    int32_t n = map->free_head;
    sp_tmap_entry *e = &map->entries[n];
    map->free_head = e->left;
    /* A fixed mixing of a counter: deterministic runs, balanced trees. */
    uint32_t prio = (map->prio_seq++ + 1) * 0x9e3779b1u;
    prio ^= prio >> 15;
    *e = (sp_tmap_entry){.lo = lo,
                         .hi = hi,
                         .max_hi = hi,
                         .task = task,
                         .owner = owner,
                         .left = -1,
                         .right = -1,
                         .prio = prio * 0x85ebca6bu,
                         .base_rec = b,
                         .is_write = is_write,
                         .layout = *layout};
    int32_t *root = &map->bases[b].root[is_write];
    *root = treap_insert(map, *root, n);
    map->bases[b].count++;
    if (++map->used > map->high_water)
        map->high_water = map->used;
    return n;
}

void sp_tensormap_retire_below(sp_tensormap *map, int64_t task_id)
{
    if (task_id > map->retired_below)
        map->retired_below = task_id;
}

int sp_tensormap_move(sp_tensormap *to, const sp_tensormap *from)
{
    for (uint32_t i = 0; i < from->capacity; i++) {
        const sp_tmap_entry *e = &from->entries[i];
        if (e->base_rec < 0 || e->task < from->retired_below)
            continue;
        if (entry_add(to, from->bases[e->base_rec].base, e->lo, e->hi, e->task, e->owner,
                      e->is_write, &e->layout) < 0)
            return SP_EGRAPH_LIMIT;
    }
    to->retired_below = from->retired_below;
    return SP_OK;
}

/* Box coordinates of a view inside a dense parent whose strides divide each
 * other: per dimension [start, start + shape). False if not such a layout. */
static bool layout_box(const sp_access_layout *l, int64_t *start)
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

bool sp_views_overlap(uint64_t a_lo, uint64_t a_hi, const sp_access_layout *a, uint64_t b_lo,
                      uint64_t b_hi, const sp_access_layout *b)
{
    if (a_hi <= b_lo || b_hi <= a_lo)
        return false;
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

static void layout_of(const sp_tensor *t, sp_access_layout *l)
{
    memset(l, 0, sizeof *l);
    l->offset = t->offset;
    l->ndim = t->ndim;
    l->elem_size = (uint8_t)sp_tensor_elem_size(t);
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++) {
        l->shape[d] = t->shape[d];
        l->strides[d] = t->strides[d];
    }
}

/* True if a write of view (lo, hi, outer) covers every element of entry
 * `inner`: byte-for-byte for a contiguous write, box containment for views
 * of one dense layout (a tile rewritten by a tile). */
static bool write_covers(uint64_t lo, uint64_t hi, const sp_access_layout *outer,
                         const sp_tmap_entry *inner)
{
    if (inner->lo < lo || inner->hi > hi)
        return false;
    int64_t expect = 1;
    bool contiguous = true;
    for (int d = outer->ndim - 1; d >= 0; d--) {
        if (outer->shape[d] != 1 && outer->strides[d] != expect)
            contiguous = false;
        expect *= outer->shape[d];
    }
    if (contiguous)
        return true;
    const sp_access_layout *in = &inner->layout;
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

int sp_tensormap_access(sp_tensormap *map, int64_t task, const sp_tensor *t, int dir, bool manual,
                        sp_dep_list *deps)
{
    int rc;
    int64_t owner = manual ? SP_NO_TASK : t->owner_task;
    if (dir == SP_NO_DEP)
        return owner == SP_NO_TASK ? SP_OK : sp_dep_list_add(deps, owner, task, SP_EDGE_CREATOR);
    uint64_t lo, hi;
    if (sp_tensor_byte_extent(t, &lo, &hi) != SP_OK)
        return SP_ESHAPE;
    if (map->free_head < 0 || (map->base_free < 0 && base_find(map, t->addr) < 0))
        return SP_EGRAPH_LIMIT;

    bool writes = dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING;
    bool creator_implied = owner == SP_NO_TASK || owner == task;
    sp_access_layout layout;
    layout_of(t, &layout);
    int32_t b = base_find(map, t->addr);
    uint32_t found = 0;
    if (b >= 0) {
        /* Writes always matter; earlier reads only to a write (WAR). */
        treap_collect(map, map->bases[b].root[1], lo, hi, &found);
        if (writes)
            treap_collect(map, map->bases[b].root[0], lo, hi, &found);
    }
    for (uint32_t k = 0; k < found; k++) {
        int32_t i = map->scratch[k];
        sp_tmap_entry *e = &map->entries[i];
        if (e->task < map->retired_below) { /* lazily forget retired tasks */
            entry_remove(map, i);
            continue;
        }
        if (e->task == task || !sp_views_overlap(lo, hi, &layout, e->lo, e->hi, &e->layout))
            continue;
        if (!manual && (e->is_write || writes)) {
            sp_edge_kind kind = e->is_write ? (writes ? SP_EDGE_WAW : SP_EDGE_RAW) : SP_EDGE_WAR;
            if ((rc = sp_dep_list_add(deps, e->task, task, kind)) != SP_OK)
                return rc;
            /* That access waited for the same creator (or is it): the
             * creator edge would only repeat what this edge implies. */
            if (e->task == owner || e->owner == owner)
                creator_implied = true;
        }
        /* A covering write supersedes the entry: later accesses that touch
         * it touch this write too, and this task already depends on it. */
        if (writes && write_covers(lo, hi, &layout, e))
            entry_remove(map, i);
    }
    if (!creator_implied && (rc = sp_dep_list_add(deps, owner, task, SP_EDGE_CREATOR)) != SP_OK)
        return rc;
    if (entry_add(map, t->addr, lo, hi, task, owner, writes, &layout) < 0)
        return SP_EGRAPH_LIMIT;
    return SP_OK;
}

uint32_t sp_tensormap_overlapping(const sp_tensormap *map, uint64_t base, uint64_t lo, uint64_t hi,
                                  bool writes_only, int64_t *out, uint32_t max)
{
    int32_t b = base_find(map, base);
    if (b < 0)
        return 0;
    uint32_t found = 0, n = 0;
    /* The scratch array is the map's own: a lookup leaves the entries alone. */
    treap_collect((sp_tensormap *)map, map->bases[b].root[1], lo, hi, &found);
    if (!writes_only)
        treap_collect((sp_tensormap *)map, map->bases[b].root[0], lo, hi, &found);
    for (uint32_t k = 0; k < found; k++) {
        const sp_tmap_entry *e = &map->entries[map->scratch[k]];
        if (e->task < map->retired_below || (writes_only && !e->is_write))
            continue;
        if (n < max)
            out[n] = e->task;
        n++;
    }
    return n;
}

bool sp_tensormap_touched(const sp_tensormap *map, uint64_t base, uint64_t lo, uint64_t hi,
                          bool writes_only)
{
    return sp_tensormap_overlapping(map, base, lo, hi, writes_only, NULL, 0) > 0;
}

uint32_t sp_tensormap_sweep(sp_tensormap *map)
{
    uint32_t freed = 0;
    for (uint32_t i = 0; i < map->capacity; i++)
        if (map->entries[i].base_rec >= 0 && map->entries[i].task < map->retired_below) {
            entry_remove(map, (int32_t)i);
            freed++;
        }
    return freed;
}
