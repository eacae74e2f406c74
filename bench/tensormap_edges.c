/* The TensorMap's edge set and cost as programs run longer: ping-pong
 * stencils read through halo views (whole-row tiles, and 2-D tiles),
 * wavefront sweeps and repeated tiled Cholesky over the same buffers,
 * straight on rt_tensormap_access as host_build_graph calls it (the
 * programs: tests/support/edges_programs.h, at the sizes below; the map
 * grown when full). For each, at two iteration counts: edges per task
 * (over the run, and in its last iteration), live accesses at the end, and
 * ns per task (median of the rounds; the map's work only, no runtime).
 *
 *   bench_tensormap_edges [--rounds R] [--iters A,B] [--only row|2d|wavefront|cholesky]
 *   (defaults: 5 rounds; 8,64 iterations; every program)
 *
 * Edges per task in the last iteration and live accesses should not move
 * between A and B: that is what "linear in the graph" means here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "edges_programs.h"
#include "runtime/device/tensormap.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define BUF_A 0x7f0000100000ull
#define BUF_B 0x7f0010000000ull

enum { PROGS = EDGES_PROGS };
static const char *const prog_key[PROGS] = {"row", "2d", "wavefront", "cholesky"};
static const char *const prog_name[PROGS] = {"row stencil 64 tiles", "2-D stencil 16x16 tiles",
                                             "wavefront 32x32 tiles", "Cholesky 16x16 tiles"};

typedef struct run {
    rt_tensormap map;
    void *mem;
    rt_dep_list deps;
    int64_t task;
    uint64_t edges, last_tasks, last_edges;
} run;

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_tensormap_edges: %s: %s\n", what, sp_status_name(rc));
    exit(1);
}

static void access_view(run *r, sp_tensor v, int dir)
{
    v.owner_task = SP_NO_TASK;
    int rc;
    while ((rc = rt_tensormap_access(&r->map, r->task, &v, dir, false, &r->deps)) ==
           SP_EGRAPH_LIMIT) {
        uint32_t n = r->map.capacity * 2;
        size_t bytes = rt_tensormap_bytes(n);
        void *mem = malloc(bytes);
        rt_tensormap bigger;
        if (!mem || rt_tensormap_init(&bigger, mem, bytes, n) ||
            rt_tensormap_move(&bigger, &r->map))
            die("growing the map", SP_ENOMEM);
        free(r->mem);
        r->mem = mem;
        r->map = bigger;
    }
    if (rc)
        die("access", rc);
}

/* Box b of the program's matrix A or B (clipped by the generator) as an
 * f32 view. */
static sp_tensor view(const edges_geom *g, const edges_box *b)
{
    const int64_t shape[2] = {g->R, g->C};
    sp_tensor m, rows, v;
    if (sp_tensor_init(&m, b->buf ? BUF_B : BUF_A, SP_DTYPE_F32, 2, shape) ||
        sp_tensor_slice(&m, 0, b->r, b->h, &rows) || sp_tensor_slice(&rows, 1, b->c, b->w, &v))
        die("a view", SP_ESHAPE);
    return v;
}

typedef struct emitter {
    run *r;
    const edges_geom *g;
    uint32_t iter;
} emitter;

/* One task of the shared generator: its inputs IN, its output
 * OUT_EXISTING (SET1) or INOUT; the last iteration's figures start afresh. */
static int emit(void *ctx, const edges_task *t)
{
    emitter *e = ctx;
    run *r = e->r;
    if (t->iter != e->iter) {
        e->iter = t->iter;
        r->last_tasks = r->last_edges = 0;
    }
    for (int k = 0; k < t->n_in; k++)
        access_view(r, view(e->g, &t->in[k]), SP_IN);
    access_view(r, view(e->g, &t->out), t->func == EDGES_SET1 ? SP_OUT_EXISTING : SP_INOUT);
    r->edges += r->deps.count;
    r->last_tasks++;
    r->last_edges += r->deps.count;
    r->task++;
    r->deps.count = 0;
    return 0;
}

/* The programs' shapes here: row stencil of 64 tiles of 4 rows, 2-D
 * stencil of 16 x 16 tiles, wavefront 32 x 32 and Cholesky 16 x 16 tiles,
 * tiles of 4 x 4. */
static const edges_geom prog_geom[PROGS] = {
    {256, 64, 4, 64, false}, {64, 64, 4, 4, false}, {128, 128, 4, 4, false}, {64, 64, 4, 4, false}};

static void program(run *r, int prog, uint32_t iters)
{
    emitter e = {.r = r, .g = &prog_geom[prog]};
    edges_program(prog, iters, e.g, emit, &e);
}

int main(int argc, char **argv)
{
    uint32_t rounds = 5, iters[2] = {8, 64};
    int only = -1;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc) {
            rounds = (uint32_t)atoi(argv[++a]);
        } else if (strcmp(argv[a], "--iters") == 0 && a + 1 < argc &&
                   sscanf(argv[a + 1], "%u,%u", &iters[0], &iters[1]) == 2) {
            a++;
        } else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc) {
            a++;
            for (int p = 0; p < PROGS; p++)
                if (strcmp(argv[a], prog_key[p]) == 0)
                    only = p;
            if (only < 0) {
                fprintf(stderr, "--only: row, 2d, wavefront or cholesky\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: %s [--rounds R] [--iters A,B] [--only PROGRAM]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > 100)
        rounds = 5;
    printf("%-26s %6s %8s %10s %10s %6s %10s\n", "program", "iters", "tasks", "edges/task",
           "last iter", "live", "ns/task");
    for (int prog = 0; prog < PROGS; prog++)
        for (int n = 0; n < 2 && (only < 0 || only == prog); n++) {
            uint64_t ns[100];
            static run r;
            for (uint32_t k = 0; k < rounds; k++) {
                memset(&r, 0, sizeof r);
                size_t bytes = rt_tensormap_bytes(256);
                r.mem = malloc(bytes);
                if (!r.mem || rt_tensormap_init(&r.map, r.mem, bytes, 256))
                    die("map", SP_ENOMEM);
                uint64_t t0 = now_ns();
                program(&r, prog, iters[n]);
                ns[k] = now_ns() - t0;
                if (k + 1 < rounds)
                    free(r.mem);
            }
            printf("%-26s %6u %8lld %10.2f %10.2f %6u %10.0f\n", prog_name[prog], iters[n],
                   (long long)r.task, (double)r.edges / (double)r.task,
                   (double)r.last_edges / (double)r.last_tasks, r.map.used,
                   median_us(ns, (int)rounds) * 1e3 / (double)r.task);
            free(r.mem);
        }
    return 0;
}
