/* The TensorMap: which earlier tasks touched which bytes of which buffer,
 * and the dependency rules that turn a new access into edges. One
 * implementation for both runtimes: host_build_graph runs it on the host over
 * the whole graph, tensormap_and_ringbuffer on the chip's orchestrator thread
 * over a bounded window (entries of retired tasks are forgotten lazily).
 *
 * Rules, per tensor argument of task T:
 *   creator  the tensor's owner task (any direction, NO_DEP included)
 *   RAW      a read after an overlapping write
 *   WAW      a write after an overlapping write
 *   WAR      a write after overlapping reads since the last write
 * Overlap is exact for views of one dense layout (tiles of one matrix) and
 * byte-range conservative otherwise.
 *
 * The edges are kept minimal without changing what is ordered after what
 * (the transitive closure is that of the rules above):
 *   - an edge from an access X is left out when another access Y of the
 *     same lookup, newer than X, conflicting with X (one of them a write)
 *     and overlapping it, was recorded by an AUTO access: Y took an edge
 *     from X then (X was live, so it was in the map), and the task takes
 *     one from Y (or from something newer that Y reaches). In a ping-pong
 *     stencil this drops the WAW edge to a tile's last writer, implied by
 *     the RAW edges of the halo readers since; and a WAR edge to a read an
 *     AUTO write has since overlapped.
 *   - a write supersedes (drops) an older access once it and the AUTO
 *     writes since that access together cover every element of it, not
 *     only when it covers it alone: a halo read is forgotten once the
 *     tiles it read have all been written again, so later writes never
 *     look at it (or derive an edge to it) again.
 * In grid mode the first is a scan of the tile's readers before a write
 * (a tile's write covers it alone: the second never arises); in treap mode
 * the first weighs the lookup's accesses against each other, the second
 * walks the writes over an entry the write did not cover alone, once the
 * writes since it have overlapped as many bytes as it has (for a tiling,
 * once: at its last tile). Both give up (keeping the plain rules' edges
 * and entries) past a few accesses.
 * Buffers are found by a hash on their base; each is then in one of two
 * modes.
 *
 * Grid mode, while every access to the buffer is a tile of one grid (same
 * shape, strides and element size, box aligned to the shape): two such
 * views share an element iff they are the same tile, so a hash on the
 * buffer plus the tile's row-major index (neighbouring tiles, neighbouring
 * buckets) finds the only record that matters, holding the tile's writer and
 * its readers since. An access costs O(1) plus the edges it derives, and the
 * readers a write clears are exactly its WAR edges; tiled programs (every
 * synthetic DAG, Cholesky) never walk anything else.
 *
 * Treap mode, from the first access that is not a tile of the buffer's grid
 * on: every access is an entry of one of two interval treaps, reads and
 * writes (O(log n + overlaps) per access, however views mix; a read looks at
 * writes only). A buffer switches once, carrying its live tile records over
 * as entries, and comes back to grid mode only when all its accesses have
 * retired (a ring heap reusing the address for another shape).
 *
 * Capacity counts accesses: every live access is one unit, a tile node or a
 * treap entry, and the bookkeeping around them (buffers, tiles, a grid's
 * layout) never outnumbers them, so `capacity - used` accesses always fit.
 * The map lives in one caller-provided block of memory, linked by index, so
 * it can sit in host memory or in device memory. */
#ifndef SP_RUNTIME_TENSORMAP_H
#define SP_RUNTIME_TENSORMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/types.h"

typedef enum rt_edge_kind {
    SP_EDGE_CREATOR = 0,
    SP_EDGE_RAW = 1,
    SP_EDGE_WAW = 2,
    SP_EDGE_WAR = 3,
    SP_EDGE_EXPLICIT = 4,
    SP_EDGE_KINDS = 5,
} rt_edge_kind;

/* Producers of one task, merged (one edge per producer, first kind kept). */
#define SP_MAX_PRODUCERS 512
typedef struct rt_dep_list {
    uint32_t count;
    int64_t producer[SP_MAX_PRODUCERS];
    uint8_t kind[SP_MAX_PRODUCERS];
} rt_dep_list;

/* Add an edge producer -> task unless already present or a self edge.
 * Returns 0, or SP_EGRAPH_LIMIT past SP_MAX_PRODUCERS. */
int rt_dep_list_add(rt_dep_list *deps, int64_t producer, int64_t task, rt_edge_kind kind);

/* The view layout an entry remembers, for exact overlap of tiles. */
typedef struct rt_access_layout {
    int64_t offset;
    int64_t shape[SP_MAX_DIMS];
    int64_t strides[SP_MAX_DIMS];
    uint8_t ndim;
    uint8_t elem_size;
    /* Known to be one run of memory (row-major, dense), so its byte range
     * is exact; 0 when not, or not worked out (a hint only). */
    uint8_t dense;
} rt_access_layout;

#define SP_TMAP_NO_SHIFT 0xff

/* One recorded access of a treap-mode buffer: a node of its buffer's
 * interval treap (ordered by lo, heap-ordered by prio, each node knowing the
 * largest hi below it). A grid-mode buffer borrows one entry, in no treap,
 * to keep its grid's layout. */
typedef struct rt_tmap_entry {
    uint64_t lo, hi; /* bytes [lo, hi) relative to the buffer */
    union {
        struct {             /* an access */
            uint64_t max_hi; /* largest hi in this subtree */
            int64_t task;
            int64_t owner; /* creator this access depended on, SP_NO_TASK if none */
            int32_t left, right;
        };
        struct { /* a grid's layout */
            /* Tiles one step along each dimension skips: a tile's
             * row-major index (mod 2^32) keys it. */
            uint32_t tile_mul[SP_MAX_DIMS];
            /* log2 of each stride and tile side that is a power of two,
             * else SP_TMAP_NO_SHIFT: locating a tile shifts, not divides. */
            uint8_t stride_shift[SP_MAX_DIMS], shape_shift[SP_MAX_DIMS];
        };
    };
    uint32_t prio;
    int32_t base_rec; /* its buffer's record; -1 while the entry is free */
    uint8_t is_write;
    uint8_t is_grid; /* the grid layout of a grid-mode buffer, not an access */
    uint8_t derived; /* recorded by an AUTO access: it took its edges */
    uint8_t pad;
    /* Bytes of it AUTO writes since have overlapped, summed (saturating):
     * whether they may cover it together is worth asking only once this
     * reaches its size. */
    uint32_t overlapped;
    rt_access_layout layout;
} rt_tmap_entry;

/* One access of a grid-mode tile: a link of its writer or reader chain. */
typedef struct rt_tmap_node {
    int64_t task;
    int64_t owner;   /* as in rt_tmap_entry */
    int32_t next;    /* older node of the chain (or the free list), -1 at the end */
    uint8_t derived; /* as in rt_tmap_entry */
    uint8_t pad[3];
} rt_tmap_node;

/* One tile of a grid-mode buffer with live accesses. Writers are one task's
 * (an AUTO write supersedes every other task's access to the tile), or
 * several once MANUAL-scope writes, which supersede only what they were
 * explicitly ordered after, joined them; readers are the reads since. Both
 * chains newest first. */
typedef struct rt_tmap_tile {
    int64_t offset;             /* the tile's first element: its key beside base_rec */
    uint32_t key;               /* its hash before the mask: the buffer's mix + tile index */
    int32_t next;               /* next tile in the hash chain (or the free list) */
    int32_t base_rec;           /* its buffer's record; -1 while the tile is free */
    int32_t sib_prev, sib_next; /* the buffer's other tiles */
    int32_t writers, readers;
} rt_tmap_tile;

/* One buffer with live accesses. Treap mode: the roots of its two treaps,
 * reads and writes apart, so a read (which only waits for writes) never
 * walks the buffer's other readers. Grid mode: its grid and its tiles. */
typedef struct rt_tmap_base {
    uint64_t base;
    int64_t newest;  /* no live access is newer: all retired once below */
    int32_t root[2]; /* [0] reads, [1] writes */
    int32_t next;    /* next record in the hash chain (or the free list) */
    uint32_t count;  /* live accesses; 0 while the record is free */
    int32_t grid;    /* the entry holding the grid's layout; -1 in treap mode */
    int32_t tiles;   /* grid mode: first of its tiles */
} rt_tmap_base;

/* Every pool holds `capacity` records: taken from its free list, else from
 * the untouched tail (`*_fresh` records have ever been used). */
typedef struct rt_tensormap {
    int32_t *buckets; /* base-record chain heads, -1 empty */
    uint32_t bucket_mask;
    rt_tmap_base *bases;
    int32_t base_free;
    uint32_t base_fresh;
    rt_tmap_entry *entries;
    int32_t *scratch;  /* overlapping entries of one lookup */
    int32_t free_head; /* free entries, chained through `left` */
    uint32_t entry_fresh;
    int32_t *tile_buckets; /* tile chain heads by (base, offset), -1 empty */
    uint32_t tile_mask;
    rt_tmap_tile *tiles;
    int32_t tile_free;
    uint32_t tile_fresh;
    rt_tmap_node *nodes;
    int32_t node_free;
    uint32_t node_fresh;
    uint32_t capacity;
    uint32_t used; /* live accesses: treap entries and tile nodes */
    uint32_t high_water;
    uint32_t prio_seq;
    int64_t retired_below; /* accesses of tasks below this id are dead */
    int32_t last_base;     /* the base record last accessed: a hint, checked */
} rt_tensormap;

/* Bytes a map with room for `entries` live accesses needs. */
size_t rt_tensormap_bytes(uint32_t entries);
/* Lay a map out in `mem` (`bytes` from rt_tensormap_bytes); 0 or SP_EINVAL. */
int rt_tensormap_init(rt_tensormap *map, void *mem, size_t bytes, uint32_t entries);
/* Copy every live access of `from` into the empty map `to` (a bigger one).
 * Returns 0, or SP_EGRAPH_LIMIT if they do not fit. */
int rt_tensormap_move(rt_tensormap *to, const rt_tensormap *from);
/* Tasks below `task_id` have retired: their accesses are dropped lazily. */
void rt_tensormap_retire_below(rt_tensormap *map, int64_t task_id);

/* Derive the edges of task `task`'s access `dir` to tensor `t` into `deps`
 * and record the access. With `manual` (a MANUAL scope) the access is
 * recorded but no edge is derived, and a write supersedes only the records
 * of tasks already in `deps` (its explicit dependencies): a record that
 * derived no edge never hides one it was not ordered after. The creator edge is left out when an
 * edge from an access that itself depended on the same creator already
 * implies it. Returns 0, or SP_EGRAPH_LIMIT when the map is full (nothing
 * derived or recorded: grow or sweep it and retry) or `deps` is (the
 * access is not recorded; the map stays consistent). */
int rt_tensormap_access(rt_tensormap *map, int64_t task, const sp_tensor *t, int dir, bool manual,
                        rt_dep_list *deps);

/* Tasks whose live accesses to buffer `base` overlap bytes [lo, hi): writes
 * only, or all accesses. Up to `max` ids go to `out`; returns how many there
 * are (possibly more than max). */
uint32_t rt_tensormap_overlapping(const rt_tensormap *map, uint64_t base, uint64_t lo, uint64_t hi,
                                  bool writes_only, int64_t *out, uint32_t max);
/* True if any live access overlaps (rt_tensormap_overlapping > 0). */
bool rt_tensormap_touched(const rt_tensormap *map, uint64_t base, uint64_t lo, uint64_t hi,
                          bool writes_only);
/* Release every access of a retired task now (not lazily); returns how many. */
uint32_t rt_tensormap_sweep(rt_tensormap *map);

/* True if two views of the same buffer may share an element. */
bool rt_views_overlap(uint64_t a_lo, uint64_t a_hi, const rt_access_layout *a, uint64_t b_lo,
                      uint64_t b_hi, const rt_access_layout *b);

#endif
