/* The TensorMap's edge-set programs, one generator for every place that
 * runs them: tests/scene/test_edges_both_runtimes.c (its orchestration
 * tests/kernels/orch_edges.c submits from it and its host reference runs
 * it), tests/runtime/test_tensormap_edges.c and bench/tensormap_edges.c
 * (straight on the TensorMap). Every task is up to two input boxes and one
 * output box of two R x C matrices A and B (an edges_geom), and one kernel
 * of tests/kernels/edges_kernels.c. Header-only and allocation-free. */
#ifndef SP_TEST_EDGES_PROGRAMS_H
#define SP_TEST_EDGES_PROGRAMS_H

#include <stdbool.h>
#include <stdint.h>

/* The scene test's matrices (edges_geom_of). */
#define EDGES_R 32
#define EDGES_C 32

enum edges_prog {
    EDGES_STENCIL_ROWS = 0, /* ping-pong A <-> B (or in place); halo of 1 row around row tiles */
    EDGES_STENCIL_2D = 1,   /* ping-pong A <-> B; halo of 1 around 2-D tiles */
    EDGES_WAVEFRONT = 2,    /* sweeps over the tiles of A: up, left, INOUT own */
    EDGES_CHOLESKY = 3,     /* right-looking tiled Cholesky's accesses over the tiles of A */
    EDGES_PROGS = 4,
};

/* SET1 writes out (OUT_EXISTING); ACCn reads n inputs and read-writes out. */
enum edges_func { EDGES_SET1 = 0, EDGES_ACC0 = 1, EDGES_ACC1 = 2, EDGES_ACC2 = 3 };

/* What a program runs over: two R x C matrices cut into th x tw tiles (the
 * row stencil's tiles are th whole rows); in_place: the row stencil reads
 * and read-writes A instead of ping-ponging. */
typedef struct edges_geom {
    int64_t R, C, th, tw;
    bool in_place;
} edges_geom;

/* The scene test's shapes: EDGES_R x EDGES_C, row tiles of 4 rows, 2-D
 * tiles of 8 x 8. */
static inline edges_geom edges_geom_of(int prog)
{
    return prog == EDGES_STENCIL_ROWS ? (edges_geom){EDGES_R, EDGES_C, 4, EDGES_C, false}
                                      : (edges_geom){EDGES_R, EDGES_C, 8, 8, false};
}

/* Rows [r, r+h) x columns [c, c+w) of matrix `buf` (0 A, 1 B). */
typedef struct edges_box {
    int buf;
    int64_t r, h, c, w;
} edges_box;

typedef struct edges_task {
    int func; /* edges_func */
    int n_in;
    edges_box in[2], out;
    uint32_t iter; /* the iteration it belongs to, from 0 */
} edges_task;

/* A box clipped to the matrix. */
static inline edges_box edges_clip(const edges_geom *g, int buf, int64_t r, int64_t h, int64_t c,
                                   int64_t w)
{
    if (r < 0)
        h += r, r = 0;
    if (c < 0)
        w += c, c = 0;
    if (r + h > g->R)
        h = g->R - r;
    if (c + w > g->C)
        w = g->C - c;
    return (edges_box){.buf = buf, .r = r, .h = h, .c = c, .w = w};
}

static inline edges_box edges_tile(const edges_geom *g, int buf, int64_t i, int64_t j)
{
    return edges_clip(g, buf, i * g->th, g->th, j * g->tw, g->tw);
}

/* Every task of program `prog` over `iters` iterations on `g`, in
 * submission order, to emit(ctx, task); stops at the first nonzero return. */
static inline int edges_program(int prog, uint32_t iters, const edges_geom *g,
                                int (*emit)(void *, const edges_task *), void *ctx)
{
    const int64_t T = g->R / g->th, TC = g->C / g->tw;
    int rc = 0;
    for (uint32_t k = 0; k < iters && rc == 0; k++) {
        int src = g->in_place ? 0 : (int)(k % 2), dst = g->in_place ? 0 : 1 - src;
        if (prog == EDGES_STENCIL_ROWS) {
            for (int64_t i = 0; i < T && rc == 0; i++) {
                edges_task t = {
                    .func = g->in_place ? EDGES_ACC1 : EDGES_SET1, .n_in = 1, .iter = k};
                t.in[0] = edges_clip(g, src, i * g->th - 1, g->th + 2, 0, g->C);
                t.out = edges_clip(g, dst, i * g->th, g->th, 0, g->C);
                rc = emit(ctx, &t);
            }
        } else if (prog == EDGES_STENCIL_2D) {
            for (int64_t i = 0; i < T; i++)
                for (int64_t j = 0; j < TC && rc == 0; j++) {
                    edges_task t = {.func = EDGES_SET1, .n_in = 1, .iter = k};
                    t.in[0] =
                        edges_clip(g, src, i * g->th - 1, g->th + 2, j * g->tw - 1, g->tw + 2);
                    t.out = edges_tile(g, dst, i, j);
                    rc = emit(ctx, &t);
                }
        } else if (prog == EDGES_WAVEFRONT) {
            for (int64_t i = 0; i < T; i++)
                for (int64_t j = 0; j < TC && rc == 0; j++) {
                    edges_task t = {.out = edges_tile(g, 0, i, j), .iter = k};
                    if (i > 0)
                        t.in[t.n_in++] = edges_tile(g, 0, i - 1, j);
                    if (j > 0)
                        t.in[t.n_in++] = edges_tile(g, 0, i, j - 1);
                    t.func = EDGES_ACC0 + t.n_in;
                    rc = emit(ctx, &t);
                }
        } else {
            for (int64_t p = 0; p < T && rc == 0; p++) {
                edges_task t = {.func = EDGES_ACC0, .out = edges_tile(g, 0, p, p), .iter = k};
                rc = emit(ctx, &t); /* potrf */
                for (int64_t i = p + 1; i < T && rc == 0; i++) {
                    edges_task s = {.func = EDGES_ACC1, .n_in = 1, .iter = k};
                    s.in[0] = edges_tile(g, 0, p, p);
                    s.out = edges_tile(g, 0, i, p);
                    rc = emit(ctx, &s); /* trsm */
                }
                for (int64_t i = p + 1; i < T && rc == 0; i++) {
                    edges_task s = {.func = EDGES_ACC1, .n_in = 1, .iter = k};
                    s.in[0] = edges_tile(g, 0, i, p);
                    s.out = edges_tile(g, 0, i, i);
                    rc = emit(ctx, &s); /* syrk */
                    for (int64_t j = p + 1; j < i && rc == 0; j++) {
                        edges_task m = {.func = EDGES_ACC2, .n_in = 2, .iter = k};
                        m.in[0] = edges_tile(g, 0, i, p);
                        m.in[1] = edges_tile(g, 0, j, p);
                        m.out = edges_tile(g, 0, i, j);
                        rc = emit(ctx, &m); /* gemm */
                    }
                }
            }
        }
    }
    return rc;
}

#endif
