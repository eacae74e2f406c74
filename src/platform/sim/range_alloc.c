/* First-fit range allocator over sorted arrays of free ranges and live
 * blocks (see range_alloc.h). First fit by address keeps allocations packed
 * at the low end, which leaves the largest possible free range at the top. */
#include "platform/sim/range_alloc.h"

#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"

/* Make room for `need` elements of `elem` bytes; 0 or SP_ENOMEM. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return SP_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* First index whose offset is > off (upper bound), for each array type. */
static size_t span_upper(const range_span *a, size_t n, uint64_t off)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t block_upper(const range_block *a, size_t n, uint64_t off)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First index whose value is >= v (lower bound). */
static size_t u64_lower(const uint64_t *a, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int range_alloc_init(range_alloc *ra, uint64_t size)
{
    memset(ra, 0, sizeof *ra);
    ra->size = size;
    if (grow((void **)&ra->free, &ra->free_cap, 1, sizeof *ra->free))
        return SP_ENOMEM;
    ra->free[0] = (range_span){.off = 0, .size = size};
    ra->free_n = size ? 1 : 0;
    return 0;
}

void range_alloc_fini(range_alloc *ra)
{
    free(ra->free);
    free(ra->live);
    free(ra->freed);
    memset(ra, 0, sizeof *ra);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

int range_alloc_take(range_alloc *ra, uint64_t bytes, uint32_t owner, uint64_t *off_out)
{
    if (bytes == 0 || bytes > ra->size)
        return SP_EDEVMEM;
    uint64_t size = align_up(bytes, RANGE_ALLOC_ALIGN);
    uint64_t align = size >= RANGE_ALLOC_LARGE ? RANGE_ALLOC_LARGE_ALIGN : RANGE_ALLOC_ALIGN;

    size_t i;
    uint64_t start = 0;
    for (i = 0; i < ra->free_n; i++) {
        range_span s = ra->free[i];
        start = align_up(s.off, align);
        if (start - s.off <= s.size && s.size - (start - s.off) >= size)
            break;
    }
    if (i == ra->free_n)
        return SP_EDEVMEM;

    /* Reserve array room first so that a host allocation failure leaves the
     * allocator exactly as it was. */
    if (grow((void **)&ra->free, &ra->free_cap, ra->free_n + 1, sizeof *ra->free) ||
        grow((void **)&ra->live, &ra->live_cap, ra->live_n + 1, sizeof *ra->live))
        return SP_ENOMEM;

    range_span s = ra->free[i];
    uint64_t head = start - s.off;
    uint64_t tail = s.off + s.size - (start + size);
    if (head && tail) {
        ra->free[i].size = head;
        memmove(&ra->free[i + 2], &ra->free[i + 1], (ra->free_n - i - 1) * sizeof *ra->free);
        ra->free[i + 1] = (range_span){.off = start + size, .size = tail};
        ra->free_n++;
    } else if (head) {
        ra->free[i].size = head;
    } else if (tail) {
        ra->free[i] = (range_span){.off = start + size, .size = tail};
    } else {
        memmove(&ra->free[i], &ra->free[i + 1], (ra->free_n - i - 1) * sizeof *ra->free);
        ra->free_n--;
    }

    size_t j = block_upper(ra->live, ra->live_n, start);
    memmove(&ra->live[j + 1], &ra->live[j], (ra->live_n - j) * sizeof *ra->live);
    ra->live[j] = (range_block){.off = start, .size = size, .bytes = bytes, .owner = owner};
    ra->live_n++;

    /* The new block reuses these addresses: freeing them again is now a
     * plain bad pointer (or a legal free of the new block), not a double free. */
    size_t lo = u64_lower(ra->freed, ra->freed_n, start);
    size_t hi = u64_lower(ra->freed, ra->freed_n, start + size);
    if (hi > lo) {
        memmove(&ra->freed[lo], &ra->freed[hi], (ra->freed_n - hi) * sizeof *ra->freed);
        ra->freed_n -= hi - lo;
    }

    ra->committed += size;
    *off_out = start;
    return 0;
}

int range_alloc_release(range_alloc *ra, uint64_t off)
{
    size_t j = block_upper(ra->live, ra->live_n, off);
    if (j == 0 || ra->live[j - 1].off != off) {
        size_t t = u64_lower(ra->freed, ra->freed_n, off);
        return t < ra->freed_n && ra->freed[t] == off ? SP_EDOUBLEFREE : SP_EBADPTR;
    }
    j--;
    if (grow((void **)&ra->free, &ra->free_cap, ra->free_n + 1, sizeof *ra->free) ||
        grow((void **)&ra->freed, &ra->freed_cap, ra->freed_n + 1, sizeof *ra->freed))
        return SP_ENOMEM;

    range_block b = ra->live[j];
    memmove(&ra->live[j], &ra->live[j + 1], (ra->live_n - j - 1) * sizeof *ra->live);
    ra->live_n--;

    /* Insert [b.off, b.off+b.size) into the free list, merging with the
     * free range that ends where it starts and the one that starts where
     * it ends, so that adjacent free ranges never stay split. */
    size_t i = span_upper(ra->free, ra->free_n, b.off);
    int merge_prev = i > 0 && ra->free[i - 1].off + ra->free[i - 1].size == b.off;
    int merge_next = i < ra->free_n && b.off + b.size == ra->free[i].off;
    if (merge_prev && merge_next) {
        ra->free[i - 1].size += b.size + ra->free[i].size;
        memmove(&ra->free[i], &ra->free[i + 1], (ra->free_n - i - 1) * sizeof *ra->free);
        ra->free_n--;
    } else if (merge_prev) {
        ra->free[i - 1].size += b.size;
    } else if (merge_next) {
        ra->free[i].off = b.off;
        ra->free[i].size += b.size;
    } else {
        memmove(&ra->free[i + 1], &ra->free[i], (ra->free_n - i) * sizeof *ra->free);
        ra->free[i] = (range_span){.off = b.off, .size = b.size};
        ra->free_n++;
    }

    size_t t = u64_lower(ra->freed, ra->freed_n, b.off);
    memmove(&ra->freed[t + 1], &ra->freed[t], (ra->freed_n - t) * sizeof *ra->freed);
    ra->freed[t] = b.off;
    ra->freed_n++;

    ra->committed -= b.size;
    return 0;
}

range_block *range_alloc_block_before(range_alloc *ra, uint64_t off)
{
    size_t j = block_upper(ra->live, ra->live_n, off);
    return j ? &ra->live[j - 1] : NULL;
}

range_block *range_alloc_block_at(range_alloc *ra, uint64_t off)
{
    range_block *b = range_alloc_block_before(ra, off);
    return b && b->off == off ? b : NULL;
}

range_block *range_alloc_block_containing(range_alloc *ra, uint64_t off, uint64_t len)
{
    range_block *b = range_alloc_block_before(ra, off);
    if (!b)
        return NULL;
    uint64_t rel = off - b->off;
    /* Written so that no sum can overflow: off and len come from callers. */
    if (rel > b->bytes || len > b->bytes - rel)
        return NULL;
    return b;
}

uint64_t range_alloc_largest_free(const range_alloc *ra)
{
    uint64_t best = 0;
    for (size_t i = 0; i < ra->free_n; i++)
        if (ra->free[i].size > best)
            best = ra->free[i].size;
    return best;
}
