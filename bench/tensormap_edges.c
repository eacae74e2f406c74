/* The TensorMap's edge set and cost as programs run longer: ping-pong
 * stencils read through halo views (whole-row tiles, and 2-D tiles),
 * wavefront sweeps and repeated tiled Cholesky over the same buffers,
 * straight on rt_tensormap_access as host_build_graph calls it (the map
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
#include "runtime/device/tensormap.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define BUF_A 0x7f0000100000ull
#define BUF_B 0x7f0010000000ull

enum { ROWS, STENCIL_2D, WAVEFRONT, CHOLESKY, PROGS };
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

/* Rows [r0, r0+h) x columns [c0, c0+w) of an R x C f32 matrix, clipped. */
static sp_tensor box(uint64_t addr, int64_t R, int64_t C, int64_t r0, int64_t h, int64_t c0,
                     int64_t w)
{
    const int64_t shape[2] = {R, C};
    if (r0 < 0)
        h += r0, r0 = 0;
    if (c0 < 0)
        w += c0, c0 = 0;
    if (r0 + h > R)
        h = R - r0;
    if (c0 + w > C)
        w = C - c0;
    sp_tensor m, rows, v;
    if (sp_tensor_init(&m, addr, SP_DTYPE_F32, 2, shape) || sp_tensor_slice(&m, 0, r0, h, &rows) ||
        sp_tensor_slice(&rows, 1, c0, w, &v))
        die("a view", SP_ESHAPE);
    return v;
}

static void task_end(run *r)
{
    r->edges += r->deps.count;
    r->last_tasks++;
    r->last_edges += r->deps.count;
    r->task++;
    r->deps.count = 0;
}

/* Tile (i, j) of a T x T grid of 4 x 4 tiles. */
static sp_tensor tile(int64_t T, int64_t i, int64_t j)
{
    return box(BUF_A, T * 4, T * 4, i * 4, 4, j * 4, 4);
}

static void program(run *r, int prog, uint32_t iters)
{
    for (uint32_t k = 0; k < iters; k++) {
        r->last_tasks = r->last_edges = 0;
        uint64_t src = k % 2 ? BUF_B : BUF_A, dst = k % 2 ? BUF_A : BUF_B;
        if (prog == ROWS) {
            for (int64_t i = 0; i < 64; i++) {
                access_view(r, box(src, 256, 64, i * 4 - 1, 6, 0, 64), SP_IN);
                access_view(r, box(dst, 256, 64, i * 4, 4, 0, 64), SP_OUT_EXISTING);
                task_end(r);
            }
        } else if (prog == STENCIL_2D) {
            for (int64_t i = 0; i < 16; i++)
                for (int64_t j = 0; j < 16; j++) {
                    access_view(r, box(src, 64, 64, i * 4 - 1, 6, j * 4 - 1, 6), SP_IN);
                    access_view(r, box(dst, 64, 64, i * 4, 4, j * 4, 4), SP_OUT_EXISTING);
                    task_end(r);
                }
        } else if (prog == WAVEFRONT) {
            for (int64_t i = 0; i < 32; i++)
                for (int64_t j = 0; j < 32; j++) {
                    if (i > 0)
                        access_view(r, tile(32, i - 1, j), SP_IN);
                    if (j > 0)
                        access_view(r, tile(32, i, j - 1), SP_IN);
                    access_view(r, tile(32, i, j), SP_INOUT);
                    task_end(r);
                }
        } else {
            const int64_t T = 16;
            for (int64_t p = 0; p < T; p++) {
                access_view(r, tile(T, p, p), SP_INOUT);
                task_end(r);
                for (int64_t i = p + 1; i < T; i++) {
                    access_view(r, tile(T, p, p), SP_IN);
                    access_view(r, tile(T, i, p), SP_INOUT);
                    task_end(r);
                }
                for (int64_t i = p + 1; i < T; i++) {
                    access_view(r, tile(T, i, p), SP_IN);
                    access_view(r, tile(T, i, i), SP_INOUT);
                    task_end(r);
                    for (int64_t j = p + 1; j < i; j++) {
                        access_view(r, tile(T, i, p), SP_IN);
                        access_view(r, tile(T, j, p), SP_IN);
                        access_view(r, tile(T, i, j), SP_INOUT);
                        task_end(r);
                    }
                }
            }
        }
    }
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
