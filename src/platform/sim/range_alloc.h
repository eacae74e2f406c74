/* A pure range allocator over the offsets [0, size) of one arena: no memory
 * of its own, no locking, no logging. The sim device memory (memory.c) wraps
 * it with the memfd, a mutex and log lines that name the device.
 *
 * Free ranges and live blocks are two arrays sorted by offset: a lookup is a
 * binary search, a free finds and merges its free neighbours by binary
 * search, and first fit scans the free ranges from the bottom. Inserting or
 * removing an element moves the tail of its array; allocations that grow
 * upwards and frees in any order near the top (the usual pattern: buffers of
 * a run, then run storage) move little, and even 20k live blocks freed from
 * the bottom cost about 10 us each. None of this is on a per-task path; if
 * it ever is, the arrays become trees behind the same functions.
 * Recently freed block starts are kept as "tombstones" until a new block
 * covers them, which is how a double free is told apart from a pointer that
 * was never allocated. */
#ifndef SP_PLATFORM_SIM_RANGE_ALLOC_H
#define SP_PLATFORM_SIM_RANGE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Every block starts on this boundary and its size is a multiple of it. */
#define RANGE_ALLOC_ALIGN 64u
/* Blocks of at least RANGE_ALLOC_LARGE bytes start on a page boundary. */
#define RANGE_ALLOC_LARGE (64u * 1024u)
#define RANGE_ALLOC_LARGE_ALIGN 4096u

typedef struct range_span {
    uint64_t off;
    uint64_t size;
} range_span;

/* One live allocation. `size` is what it reserves (rounded up), `bytes` what
 * was asked for: accesses are checked against `bytes`. */
typedef struct range_block {
    uint64_t off;
    uint64_t size;
    uint64_t bytes;
    uint32_t maps;  /* live host maps into this block (the owner keeps it) */
    uint32_t owner; /* who may free it (the owner's tag; range_alloc ignores it) */
} range_block;

typedef struct range_alloc {
    uint64_t size;
    uint64_t committed; /* sum of live blocks' `size` */
    range_span *free;
    size_t free_n, free_cap;
    range_block *live;
    size_t live_n, live_cap;
    uint64_t *freed; /* tombstones: starts of freed blocks, sorted */
    size_t freed_n, freed_cap;
} range_alloc;

/* Manage [0, size). Returns 0 or SP_ENOMEM. */
int range_alloc_init(range_alloc *ra, uint64_t size);
void range_alloc_fini(range_alloc *ra);

/* Reserve a block of at least `bytes` (> 0). Returns 0 and the block's
 * offset, SP_EDEVMEM when no free range fits, or SP_ENOMEM (host memory);
 * on failure nothing changed. */
int range_alloc_take(range_alloc *ra, uint64_t bytes, uint32_t owner, uint64_t *off_out);

/* Release the block starting at `off`. Returns 0, SP_EDOUBLEFREE when `off`
 * is the start of a block already freed and not reused since, SP_EBADPTR
 * when it is not a block start at all, or SP_ENOMEM; on failure nothing
 * changed. The caller checks `maps`/`owner` before calling. */
int range_alloc_release(range_alloc *ra, uint64_t off);

/* The live block starting exactly at `off`, or NULL. */
range_block *range_alloc_block_at(range_alloc *ra, uint64_t off);
/* The live block whose requested bytes contain [off, off+len), or NULL.
 * Pointers into the allocator are valid until the next take or release. */
range_block *range_alloc_block_containing(range_alloc *ra, uint64_t off, uint64_t len);
/* The live block with the greatest start <= off (a range that fails the
 * check above is reported against it), or NULL. */
range_block *range_alloc_block_before(range_alloc *ra, uint64_t off);

/* Size of the largest free range (for failure messages). */
uint64_t range_alloc_largest_free(const range_alloc *ra);

#endif
