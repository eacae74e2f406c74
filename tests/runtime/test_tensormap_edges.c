/* The TensorMap's edge set stays minimal and linear in the graph: programs
 * that sweep the same buffers again and again (ping-pong and in-place
 * stencils read through multi-row halo views, 2-D halo stencils, wavefront
 * sweeps, repeated tiled Cholesky) give as many edges per task at 64
 * iterations as at 8, never more than the task's accesses bound, and keep
 * as many live entries after 64 iterations as after 8 (superseded reads are
 * pruned). Straight on rt_tensormap_access, as both runtimes call it; that
 * the reduced edges order the same accesses is test_tensormap's randomized
 * comparison with the full rules. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device/tensormap.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define BUF_A 0x7f0000100000ull
#define BUF_B 0x7f0000200000ull

enum prog { STENCIL_ROWS, STENCIL_INPLACE, STENCIL_2D, WAVEFRONT, CHOLESKY, PROGS };
static const char *const prog_name[PROGS] = {"ping-pong row stencil", "in-place row stencil",
                                             "ping-pong 2-D stencil", "wavefront sweeps",
                                             "repeated Cholesky"};

typedef struct edge_stats {
    uint64_t tasks, edges;
    uint64_t last_tasks, last_edges; /* of the last iteration alone */
    uint32_t max_edges;              /* most edges of one task */
    uint32_t live;                   /* live accesses in the map at the end */
    uint32_t high_water;             /* most live accesses at once */
} edge_stats;

typedef struct prog_run {
    rt_tensormap map;
    void *mem;
    rt_dep_list deps;
    int64_t task;
    edge_stats st;
} prog_run;

static sp_tensor matrix(uint64_t addr, int64_t rows, int64_t cols)
{
    const int64_t shape[2] = {rows, cols};
    sp_tensor t;
    cr_assert_eq(sp_tensor_init(&t, addr, SP_DTYPE_F32, 2, shape), SP_OK);
    return t;
}

/* Rows [r, r+h) x columns [c, c+w) of m, clipped to m. */
static sp_tensor box(const sp_tensor *m, int64_t r, int64_t h, int64_t c, int64_t w)
{
    if (r < 0)
        h += r, r = 0;
    if (c < 0)
        w += c, c = 0;
    if (r + h > m->shape[0])
        h = m->shape[0] - r;
    if (c + w > m->shape[1])
        w = m->shape[1] - c;
    sp_tensor rows, t;
    cr_assert_eq(sp_tensor_slice(m, 0, r, h, &rows), SP_OK);
    cr_assert_eq(sp_tensor_slice(&rows, 1, c, w, &t), SP_OK);
    return t;
}

/* A new iteration: its tasks' figures start afresh. */
static void iteration_begin(prog_run *p)
{
    p->st.last_tasks = p->st.last_edges = 0;
}

static void task_begin(prog_run *p)
{
    p->deps.count = 0;
}

static void task_access(prog_run *p, const sp_tensor *t, int dir)
{
    sp_tensor v = *t;
    v.owner_task = SP_NO_TASK;
    int rc;
    /* host_build_graph's answer to a full map: a bigger one. */
    while ((rc = rt_tensormap_access(&p->map, p->task, &v, dir, false, &p->deps)) ==
           SP_EGRAPH_LIMIT) {
        cr_assert_lt(p->deps.count, SP_MAX_PRODUCERS, "task %lld: dependency list full",
                     (long long)p->task);
        uint32_t n = p->map.capacity * 2;
        size_t bytes = rt_tensormap_bytes(n);
        void *mem = malloc(bytes);
        rt_tensormap bigger;
        cr_assert_eq(rt_tensormap_init(&bigger, mem, bytes, n), SP_OK);
        cr_assert_eq(rt_tensormap_move(&bigger, &p->map), SP_OK);
        free(p->mem);
        p->mem = mem;
        p->map = bigger;
    }
    cr_assert_eq(rc, SP_OK, "task %lld: %s", (long long)p->task, sp_status_name(rc));
}

static void task_end(prog_run *p)
{
    p->st.tasks++;
    p->st.edges += p->deps.count;
    p->st.last_tasks++;
    p->st.last_edges += p->deps.count;
    if (p->deps.count > p->st.max_edges)
        p->st.max_edges = p->deps.count;
    p->task++;
}

/* Tiles per side of every program; stencils' tiles are TH x TW elements. */
#define NT 8
#define TH 4
#define TW 4

static void stencil(prog_run *p, int prog, uint32_t iters)
{
    const int64_t cols = prog == STENCIL_2D ? NT * TW : 16;
    sp_tensor a = matrix(BUF_A, NT * TH, cols), b = matrix(BUF_B, NT * TH, cols);
    const uint32_t per_side = prog == STENCIL_2D ? NT : 1;
    for (uint32_t k = 0; k < iters; k++) {
        iteration_begin(p);
        const sp_tensor *src = k % 2 ? &b : &a;
        const sp_tensor *dst = prog == STENCIL_INPLACE ? &a : k % 2 ? &a : &b;
        for (int64_t i = 0; i < NT; i++)
            for (int64_t j = 0; j < per_side; j++) {
                task_begin(p);
                if (prog == STENCIL_2D) {
                    sp_tensor halo = box(src, i * TH - 1, TH + 2, j * TW - 1, TW + 2);
                    sp_tensor own = box(dst, i * TH, TH, j * TW, TW);
                    task_access(p, &halo, SP_IN);
                    task_access(p, &own, SP_OUT_EXISTING);
                } else {
                    /* Whole rows: the halo is one row above and below. */
                    sp_tensor halo =
                        box(prog == STENCIL_INPLACE ? &a : src, i * TH - 1, TH + 2, 0, cols);
                    sp_tensor own = box(dst, i * TH, TH, 0, cols);
                    task_access(p, &halo, SP_IN);
                    task_access(p, &own, prog == STENCIL_INPLACE ? SP_INOUT : SP_OUT_EXISTING);
                }
                task_end(p);
            }
    }
}

/* Tile (i, j) of an NT x NT grid of TH x TW tiles over buffer A. */
static sp_tensor grid_tile(int64_t i, int64_t j)
{
    sp_tensor m = matrix(BUF_A, NT * TH, NT * TW);
    return box(&m, i * TH, TH, j * TW, TW);
}

static void wavefront(prog_run *p, uint32_t iters)
{
    for (uint32_t k = 0; k < iters; k++) {
        iteration_begin(p);
        for (int64_t i = 0; i < NT; i++)
            for (int64_t j = 0; j < NT; j++) {
                task_begin(p);
                if (i > 0) {
                    sp_tensor up = grid_tile(i - 1, j);
                    task_access(p, &up, SP_IN);
                }
                if (j > 0) {
                    sp_tensor left = grid_tile(i, j - 1);
                    task_access(p, &left, SP_IN);
                }
                sp_tensor own = grid_tile(i, j);
                task_access(p, &own, SP_INOUT);
                task_end(p);
            }
    }
}

static void cholesky_task(prog_run *p, int n_in, const int64_t (*in)[2], int64_t wi, int64_t wj)
{
    task_begin(p);
    for (int r = 0; r < n_in; r++) {
        sp_tensor t = grid_tile(in[r][0], in[r][1]);
        task_access(p, &t, SP_IN);
    }
    sp_tensor w = grid_tile(wi, wj);
    task_access(p, &w, SP_INOUT);
    task_end(p);
}

/* bench/suite/dag.h's right-looking Cholesky, factorizing the same tiles
 * again each iteration. */
static void cholesky(prog_run *p, uint32_t iters)
{
    for (uint32_t it = 0; it < iters; it++) {
        iteration_begin(p);
        for (int64_t k = 0; k < NT; k++) {
            cholesky_task(p, 0, NULL, k, k);
            for (int64_t i = k + 1; i < NT; i++)
                cholesky_task(p, 1, (const int64_t[][2]){{k, k}}, i, k);
            for (int64_t i = k + 1; i < NT; i++) {
                cholesky_task(p, 1, (const int64_t[][2]){{i, k}}, i, i);
                for (int64_t j = k + 1; j < i; j++)
                    cholesky_task(p, 2, (const int64_t[][2]){{i, k}, {j, k}}, i, j);
            }
        }
    }
}

static edge_stats run_prog(int prog, uint32_t iters)
{
    static prog_run p;
    memset(&p, 0, sizeof p);
    const uint32_t entries = 64;
    size_t bytes = rt_tensormap_bytes(entries);
    p.mem = malloc(bytes);
    cr_assert_eq(rt_tensormap_init(&p.map, p.mem, bytes, entries), SP_OK);
    switch (prog) {
    case WAVEFRONT:
        wavefront(&p, iters);
        break;
    case CHOLESKY:
        cholesky(&p, iters);
        break;
    default:
        stencil(&p, prog, iters);
        break;
    }
    p.st.live = p.map.used;
    p.st.high_water = p.map.high_water;
    free(p.mem);
    cr_log_info("%s, %u iterations: %llu tasks, %.2f edges per task (%.2f in the last "
                "iteration, at most %u), %u live accesses at the end, %u at most",
                prog_name[prog], iters, (unsigned long long)p.st.tasks,
                (double)p.st.edges / (double)p.st.tasks,
                (double)p.st.last_edges / (double)p.st.last_tasks, p.st.max_edges, p.st.live,
                p.st.high_water);
    return p.st;
}

/* The same bound at 8 and at 64 iterations: at most `bound` edges for any
 * task, the same edges in the last iteration (the first has fewer: nothing
 * to wait for), and no more live accesses. */
static void edges_do_not_grow(int prog, uint32_t bound)
{
    edge_stats few = run_prog(prog, 8), many = run_prog(prog, 64);
    cr_assert_leq(few.max_edges, bound, "%s: a task with %u edges at 8 iterations (bound %u)",
                  prog_name[prog], few.max_edges, bound);
    cr_assert_leq(many.max_edges, bound, "%s: a task with %u edges at 64 iterations (bound %u)",
                  prog_name[prog], many.max_edges, bound);
    cr_assert_eq(many.last_edges, few.last_edges,
                 "%s: %llu edges in the 64th iteration, %llu in the 8th", prog_name[prog],
                 (unsigned long long)many.last_edges, (unsigned long long)few.last_edges);
    cr_assert_leq(many.live, few.live, "%s: %u live accesses after 64 iterations, %u after 8",
                  prog_name[prog], many.live, few.live);
    cr_assert_leq(many.high_water, few.high_water,
                  "%s: %u live accesses at most in 64 iterations, %u in 8", prog_name[prog],
                  many.high_water, few.high_water);
}

/* The halo read's RAW edges from the writers of 3 row tiles; the write's
 * WAR edges from the readers of its tile since its last write are the same
 * 3 tasks (the old code: every halo read ever, and the WAW edge). */
Test(tensormap_edges, ping_pong_row_stencil)
{
    edges_do_not_grow(STENCIL_ROWS, 3);
}

/* In place: the halo's 3 writers (one of this sweep, two of the last); the
 * readers of the written tile since are the task itself and its left
 * neighbour, already a producer. */
Test(tensormap_edges, in_place_row_stencil)
{
    edges_do_not_grow(STENCIL_INPLACE, 3);
}

/* A 2-D halo overlaps 9 tiles' writers; the readers of the written tile
 * since its last write are the same 9 tasks. */
Test(tensormap_edges, ping_pong_2d_stencil)
{
    edges_do_not_grow(STENCIL_2D, 9);
}

/* Up and left (this sweep), and the readers of the own tile since the last
 * sweep wrote it (right and below); the WAW edge to that write is implied. */
Test(tensormap_edges, wavefront_sweeps)
{
    edges_do_not_grow(WAVEFRONT, 4);
}

/* At most the readers of the written tile since its last write, one per
 * tile of its row and column of the last factorization: NT (the WAW edge
 * the old code added beside them is implied). */
Test(tensormap_edges, repeated_cholesky)
{
    edges_do_not_grow(CHOLESKY, NT);
}
