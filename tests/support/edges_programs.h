/* The programs of tests/scene/test_edges_both_runtimes.c, as one generator
 * that the orchestration (tests/kernels/orch_edges.c) submits from and the
 * test's host reference runs: every task is up to two input boxes and one
 * output box of two R x C u64 matrices A and B, and one kernel of
 * tests/kernels/edges_kernels.c. Header-only and allocation-free. */
#ifndef SP_TEST_EDGES_PROGRAMS_H
#define SP_TEST_EDGES_PROGRAMS_H

#include <stdint.h>

#define EDGES_R 32
#define EDGES_C 32

enum edges_prog {
    EDGES_STENCIL_ROWS = 0, /* ping-pong A <-> B; halo of 1 row around 8 row tiles */
    EDGES_STENCIL_2D = 1,   /* ping-pong A <-> B; halo of 1 around 4 x 4 tiles of 8 x 8 */
    EDGES_WAVEFRONT = 2,    /* sweeps over 4 x 4 tiles of A: up, left, INOUT own */
    EDGES_CHOLESKY = 3,     /* right-looking tiled Cholesky's accesses, 4 x 4 tiles of A */
    EDGES_PROGS = 4,
};

enum edges_func { EDGES_SET1 = 0, EDGES_ACC0 = 1, EDGES_ACC1 = 2, EDGES_ACC2 = 3 };

/* Rows [r, r+h) x columns [c, c+w) of matrix `buf` (0 A, 1 B). */
typedef struct edges_box {
    int buf;
    int64_t r, h, c, w;
} edges_box;

typedef struct edges_task {
    int func; /* edges_func: SET1 writes out (OUT_EXISTING), ACC* read-write it */
    int n_in;
    edges_box in[2], out;
} edges_task;

/* A box clipped to the matrix. */
static inline edges_box edges_clip(int buf, int64_t r, int64_t h, int64_t c, int64_t w)
{
    if (r < 0)
        h += r, r = 0;
    if (c < 0)
        w += c, c = 0;
    if (r + h > EDGES_R)
        h = EDGES_R - r;
    if (c + w > EDGES_C)
        w = EDGES_C - c;
    return (edges_box){.buf = buf, .r = r, .h = h, .c = c, .w = w};
}

static inline edges_box edges_tile(int buf, int64_t i, int64_t j)
{
    return edges_clip(buf, i * 8, 8, j * 8, 8);
}

/* Every task of program `prog` over `iters` iterations, in submission
 * order, to emit(ctx, task); stops at the first nonzero return. */
static inline int edges_program(int prog, uint32_t iters, int (*emit)(void *, const edges_task *),
                                void *ctx)
{
    int rc = 0;
    for (uint32_t k = 0; k < iters && rc == 0; k++) {
        int src = (int)(k % 2), dst = 1 - src;
        if (prog == EDGES_STENCIL_ROWS) {
            for (int64_t i = 0; i < 8 && rc == 0; i++) {
                edges_task t = {.func = EDGES_SET1, .n_in = 1};
                t.in[0] = edges_clip(src, i * 4 - 1, 6, 0, EDGES_C);
                t.out = edges_clip(dst, i * 4, 4, 0, EDGES_C);
                rc = emit(ctx, &t);
            }
        } else if (prog == EDGES_STENCIL_2D) {
            for (int64_t i = 0; i < 4; i++)
                for (int64_t j = 0; j < 4 && rc == 0; j++) {
                    edges_task t = {.func = EDGES_SET1, .n_in = 1};
                    t.in[0] = edges_clip(src, i * 8 - 1, 10, j * 8 - 1, 10);
                    t.out = edges_tile(dst, i, j);
                    rc = emit(ctx, &t);
                }
        } else if (prog == EDGES_WAVEFRONT) {
            for (int64_t i = 0; i < 4; i++)
                for (int64_t j = 0; j < 4 && rc == 0; j++) {
                    edges_task t = {.out = edges_tile(0, i, j)};
                    if (i > 0)
                        t.in[t.n_in++] = edges_tile(0, i - 1, j);
                    if (j > 0)
                        t.in[t.n_in++] = edges_tile(0, i, j - 1);
                    t.func = EDGES_ACC0 + t.n_in;
                    rc = emit(ctx, &t);
                }
        } else {
            for (int64_t p = 0; p < 4 && rc == 0; p++) {
                edges_task t = {.func = EDGES_ACC0, .out = edges_tile(0, p, p)};
                rc = emit(ctx, &t); /* potrf */
                for (int64_t i = p + 1; i < 4 && rc == 0; i++) {
                    edges_task s = {.func = EDGES_ACC1, .n_in = 1, .out = edges_tile(0, i, p)};
                    s.in[0] = edges_tile(0, p, p);
                    rc = emit(ctx, &s); /* trsm */
                }
                for (int64_t i = p + 1; i < 4 && rc == 0; i++) {
                    edges_task s = {.func = EDGES_ACC1, .n_in = 1, .out = edges_tile(0, i, i)};
                    s.in[0] = edges_tile(0, i, p);
                    rc = emit(ctx, &s); /* syrk */
                    for (int64_t j = p + 1; j < i && rc == 0; j++) {
                        edges_task g = {.func = EDGES_ACC2, .n_in = 2, .out = edges_tile(0, i, j)};
                        g.in[0] = edges_tile(0, i, p);
                        g.in[1] = edges_tile(0, j, p);
                        rc = emit(ctx, &g); /* gemm */
                    }
                }
            }
        }
    }
    return rc;
}

#endif
