/* The random graphs of the chained-dispatch tests (tests/scene/
 * test_chained.c), shared by the orchestration that submits them
 * (tests/kernels/chain_orch.c) and the test's sequential reference: task i
 * of graph (mode, seed) is a pure function of them, so both sides walk the
 * same program. Header-only, no simpler includes: the orchestration and the
 * test each add their own.
 *
 * y holds `cells` cells of CHAIN_CELL u64 elements. A kernel task updates
 * its output cell from up to two other cells:
 *   out[e] = out[e] * 31 + sum_k in_k[e] * (7 + k) + id + e
 * for the elements its block and lane own (e % parts == its part), so any
 * split of a task over SPMD blocks and MIX lanes gives the same cell. */
#ifndef SP_TESTS_CHAIN_GRAPH_H
#define SP_TESTS_CHAIN_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#define CHAIN_CELL 12      /* elements per cell: a multiple of every parts (<= 6) */
#define CHAIN_MAX_CELLS 16 /* cells a graph may use */

enum {
    CHAIN_MODE_RANDOM = 0,   /* AIC, AIV, SPMD, MIX, dummy and predicated tasks over few cells */
    CHAIN_MODE_CHAIN = 1,    /* AIV tasks, each updating cell 0: one chain */
    CHAIN_MODE_PINGPONG = 2, /* AIC and AIV in turn on cell 0: a chain across core kinds */
};

typedef enum { CHAIN_AIC, CHAIN_AIV, CHAIN_MIX, CHAIN_DUMMY } chain_kind;

typedef struct chain_task {
    chain_kind kind;
    uint32_t blocks; /* SPMD blocks (1: none) */
    uint32_t out;    /* output cell (kernel tasks) */
    uint32_t nin;    /* input cells, 0..2 (a dummy reads them) */
    uint32_t in[2];
    bool pred; /* runs only if (int64) element 0 of cell pred_cell < 0 */
    uint32_t pred_cell;
} chain_task;

static inline uint64_t chain_next(uint64_t *s)
{
    /* xorshift64*: plenty for picking shapes. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* Cells a graph uses: few, so most tasks find their producer just ahead. */
static inline uint32_t chain_cells(uint32_t mode, uint64_t seed)
{
    return mode == CHAIN_MODE_RANDOM ? 2 + (uint32_t)(seed % 5) : 1;
}

/* The generator's state: start with chain_begin, then chain_task_at for
 * tasks 0, 1, 2, ... in order. */
typedef struct chain_gen {
    uint32_t mode, cells, last_out;
    uint64_t s;
} chain_gen;

static inline void chain_begin(chain_gen *g, uint32_t mode, uint64_t seed)
{
    g->mode = mode;
    g->cells = chain_cells(mode, seed);
    g->last_out = 0;
    g->s = seed * 0x9e3779b97f4a7c15ull + 1;
}

static inline chain_task chain_task_at(chain_gen *g, uint64_t i)
{
    chain_task t = {.kind = CHAIN_AIV, .blocks = 1};
    if (g->mode == CHAIN_MODE_CHAIN)
        return t;
    if (g->mode == CHAIN_MODE_PINGPONG) {
        t.kind = i % 2 ? CHAIN_AIC : CHAIN_AIV;
        return t;
    }
    uint64_t r = chain_next(&g->s) % 100;
    t.kind = r < 45 ? CHAIN_AIV : r < 80 ? CHAIN_AIC : r < 92 ? CHAIN_MIX : CHAIN_DUMMY;
    if (t.kind != CHAIN_DUMMY && chain_next(&g->s) % 8 == 0)
        t.blocks = 2;
    /* Half the time the last task's output again: chains. */
    t.out = chain_next(&g->s) % 2 ? g->last_out : (uint32_t)(chain_next(&g->s) % g->cells);
    uint32_t nin = (uint32_t)(chain_next(&g->s) % 3);
    for (uint32_t k = 0; k < nin; k++) {
        uint32_t c = (uint32_t)(chain_next(&g->s) % g->cells);
        if (c != t.out && (k == 0 || c != t.in[0]))
            t.in[t.nin++] = c;
    }
    if (t.kind != CHAIN_DUMMY && chain_next(&g->s) % 10 == 0) {
        t.pred = true;
        t.pred_cell = (uint32_t)(chain_next(&g->s) % g->cells);
    }
    if (t.kind != CHAIN_DUMMY)
        g->last_out = t.out;
    return t;
}

/* One element of a kernel task's update: the reference and the kernel
 * both call it. */
static inline uint64_t chain_update(uint64_t out, const uint64_t *in, uint32_t nin, uint64_t id,
                                    uint32_t e)
{
    uint64_t v = out * 31 + id + e;
    for (uint32_t k = 0; k < nin; k++)
        v += in[k] * (7 + k);
    return v;
}

#endif
