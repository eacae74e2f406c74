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

/* Two buckets per entry keeps chains short without measuring the load. */
static uint32_t bucket_count(uint32_t entries)
{
    return round_pow2(entries < 8 ? 16 : entries * 2);
}

size_t sp_tensormap_bytes(uint32_t entries)
{
    return (size_t)bucket_count(entries) * sizeof(int32_t) +
           (size_t)entries * sizeof(sp_tmap_entry) + 64;
}

int sp_tensormap_init(sp_tensormap *map, void *mem, size_t bytes, uint32_t entries)
{
    if (!map || !mem || entries == 0 || entries > (1u << 30) || bytes < sp_tensormap_bytes(entries))
        return SP_EINVAL;
    uint32_t nb = bucket_count(entries);
    uintptr_t p = ((uintptr_t)mem + 7) & ~(uintptr_t)7;
    memset(map, 0, sizeof *map);
    map->entries = (sp_tmap_entry *)p;
    map->buckets = (int32_t *)(p + (size_t)entries * sizeof(sp_tmap_entry));
    map->bucket_mask = nb - 1;
    map->capacity = entries;
    for (uint32_t i = 0; i < nb; i++)
        map->buckets[i] = -1;
    /* Free list in index order, so the first entries used are the first laid out. */
    for (uint32_t i = 0; i < entries; i++)
        map->entries[i].next = i + 1 < entries ? (int32_t)(i + 1) : -1;
    map->free_head = 0;
    return SP_OK;
}

static uint32_t hash_base(const sp_tensormap *map, uint64_t base)
{
    /* Buffers are at least 64-byte aligned: drop the low bits, then mix. */
    uint64_t h = (base >> 6) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & map->bucket_mask;
}

static int32_t entry_take(sp_tensormap *map)
{
    int32_t i = map->free_head;
    if (i < 0)
        return -1;
    map->free_head = map->entries[i].next;
    map->used++;
    if (map->used > map->high_water)
        map->high_water = map->used;
    return i;
}

static void entry_release(sp_tensormap *map, int32_t i)
{
    map->entries[i].next = map->free_head;
    map->free_head = i;
    map->used--;
}

static void entry_insert(sp_tensormap *map, int32_t i)
{
    uint32_t b = hash_base(map, map->entries[i].base);
    map->entries[i].next = map->buckets[b];
    map->buckets[b] = i;
}

void sp_tensormap_retire_below(sp_tensormap *map, int64_t task_id)
{
    if (task_id > map->retired_below)
        map->retired_below = task_id;
}

int sp_tensormap_move(sp_tensormap *to, const sp_tensormap *from)
{
    for (uint32_t b = 0; b <= from->bucket_mask; b++) {
        for (int32_t i = from->buckets[b]; i >= 0; i = from->entries[i].next) {
            if (from->entries[i].task < from->retired_below)
                continue;
            int32_t j = entry_take(to);
            if (j < 0)
                return SP_EGRAPH_LIMIT;
            int32_t keep_next = to->entries[j].next;
            to->entries[j] = from->entries[i];
            to->entries[j].next = keep_next;
            entry_insert(to, j);
        }
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
    if (map->free_head < 0)
        return SP_EGRAPH_LIMIT;

    bool writes = dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING;
    bool creator_implied = owner == SP_NO_TASK || owner == task;
    sp_access_layout layout;
    layout_of(t, &layout);
    uint32_t b = hash_base(map, t->addr);
    int32_t *link = &map->buckets[b];
    while (*link >= 0) {
        int32_t i = *link;
        sp_tmap_entry *e = &map->entries[i];
        if (e->task < map->retired_below) { /* lazily forget retired tasks */
            *link = e->next;
            entry_release(map, i);
            continue;
        }
        if (e->base != t->addr || e->task == task ||
            !sp_views_overlap(lo, hi, &layout, e->lo, e->hi, &e->layout)) {
            link = &e->next;
            continue;
        }
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
        if (writes && write_covers(lo, hi, &layout, e)) {
            *link = e->next;
            entry_release(map, i);
            continue;
        }
        link = &e->next;
    }
    if (!creator_implied && (rc = sp_dep_list_add(deps, owner, task, SP_EDGE_CREATOR)) != SP_OK)
        return rc;
    int32_t n = entry_take(map);
    sp_tmap_entry *e = &map->entries[n];
    e->base = t->addr;
    e->lo = lo;
    e->hi = hi;
    e->task = task;
    e->owner = owner;
    e->is_write = writes;
    e->layout = layout;
    entry_insert(map, n);
    return SP_OK;
}

uint32_t sp_tensormap_overlapping(const sp_tensormap *map, uint64_t base, uint64_t lo, uint64_t hi,
                                  bool writes_only, int64_t *out, uint32_t max)
{
    uint32_t n = 0;
    uint32_t b = hash_base(map, base);
    for (int32_t i = map->buckets[b]; i >= 0; i = map->entries[i].next) {
        const sp_tmap_entry *e = &map->entries[i];
        if (e->task < map->retired_below || e->base != base)
            continue;
        if ((writes_only && !e->is_write) || e->hi <= lo || hi <= e->lo)
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
    for (uint32_t b = 0; b <= map->bucket_mask; b++) {
        int32_t *link = &map->buckets[b];
        while (*link >= 0) {
            int32_t i = *link;
            if (map->entries[i].task < map->retired_below) {
                *link = map->entries[i].next;
                entry_release(map, i);
                freed++;
            } else {
                link = &map->entries[i].next;
            }
        }
    }
    return freed;
}
