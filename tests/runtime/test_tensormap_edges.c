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

#include "edges_programs.h"
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

/* Tiles per side of every program (the row stencils' tiles are TH whole
 * rows of 16 columns), and each program as tests/support/edges_programs.h
 * generates it: the in-place row stencil is its row stencil on A alone. */
#define NT 8
#define TH 4
#define TW 4
static const int prog_of[PROGS] = {EDGES_STENCIL_ROWS, EDGES_STENCIL_ROWS, EDGES_STENCIL_2D,
                                   EDGES_WAVEFRONT, EDGES_CHOLESKY};
static const edges_geom prog_geom[PROGS] = {{NT * TH, 16, TH, 16, false},
                                            {NT * TH, 16, TH, 16, true},
                                            {NT * TH, NT *TW, TH, TW, false},
                                            {NT * TH, NT *TW, TH, TW, false},
                                            {NT * TH, NT *TW, TH, TW, false}};

typedef struct emitter {
    prog_run *p;
    const edges_geom *g;
    uint32_t iter;
} emitter;

/* Box b of A or B as an f32 view. */
static sp_tensor view(const edges_geom *g, const edges_box *b)
{
    const int64_t shape[2] = {g->R, g->C};
    sp_tensor m, rows, v;
    cr_assert_eq(sp_tensor_init(&m, b->buf ? BUF_B : BUF_A, SP_DTYPE_F32, 2, shape), SP_OK);
    cr_assert_eq(sp_tensor_slice(&m, 0, b->r, b->h, &rows), SP_OK);
    cr_assert_eq(sp_tensor_slice(&rows, 1, b->c, b->w, &v), SP_OK);
    return v;
}

/* One generated task: its inputs IN, its output OUT_EXISTING (SET1) or
 * INOUT. */
static int emit(void *ctx, const edges_task *t)
{
    emitter *e = ctx;
    if (t->iter != e->iter) {
        e->iter = t->iter;
        iteration_begin(e->p);
    }
    task_begin(e->p);
    for (int k = 0; k < t->n_in; k++) {
        sp_tensor in = view(e->g, &t->in[k]);
        task_access(e->p, &in, SP_IN);
    }
    sp_tensor out = view(e->g, &t->out);
    task_access(e->p, &out, t->func == EDGES_SET1 ? SP_OUT_EXISTING : SP_INOUT);
    task_end(e->p);
    return 0;
}

static edge_stats run_prog(int prog, uint32_t iters)
{
    static prog_run p;
    memset(&p, 0, sizeof p);
    const uint32_t entries = 64;
    size_t bytes = rt_tensormap_bytes(entries);
    p.mem = malloc(bytes);
    cr_assert_eq(rt_tensormap_init(&p.map, p.mem, bytes, entries), SP_OK);
    emitter e = {.p = &p, .g = &prog_geom[prog]};
    edges_program(prog_of[prog], iters, e.g, emit, &e);
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
