/* Graph tasks against one-by-one submission: what building a task costs
 * when a 16-task layer is submitted 64 times as an sp_submit_graph instance
 * (recorded at the first layer, instantiated at the other 63) or by calling
 * the layer's body directly, on both runtimes: hbg's stats.build_ns (the
 * host build of the whole graph) and tmr's stats.orch_ns (the orchestrator
 * thread, launch to return), per task, median over the rounds, the two
 * forms alternating round by round. tmr runs with a window larger than
 * the graph, so its orchestrator never waits for room.
 *
 *   bench_graph_tasks [--rounds R] [--layers L]
 *
 * The orchestration and kernels are the graph-task tests'
 * (tests/kernels/graph_orch.c, graph_kernels.c), packed into
 * <bindir>/../bench/graph_tasks.spc; the modules are <bindir>/../lib's. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/paths.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#define GRAPH_BUF 512
#define MAX_ROUNDS 200
enum { PROG_LAYERS = 1 }; /* scalar 0 of graph_orch */
enum { MODE_GRAPH = 0, MODE_DIRECT = 1 };

static uint64_t buf[4][GRAPH_BUF], report[8];

static int run_layers(sp_worker *w, int mode, uint64_t layers, sp_run_stats *st)
{
    sp_args args;
    memset(&args, 0, sizeof args);
    int64_t len = GRAPH_BUF, rlen = 8;
    for (int b = 0; b < 4; b++) {
        sp_tensor_init(&args.tensors[b], (uint64_t)(uintptr_t)buf[b], SP_DTYPE_U64, 1, &len);
        args.dirs[b] = SP_INOUT;
    }
    sp_tensor_init(&args.tensors[4], (uint64_t)(uintptr_t)report, SP_DTYPE_U64, 1, &rlen);
    args.dirs[4] = SP_OUT_EXISTING;
    args.tensor_count = 5;
    args.scalars[0] = PROG_LAYERS;
    args.scalars[1] = (uint64_t)mode;
    args.scalars[2] = layers;
    args.scalar_count = 4;
    /* A window above the task count: tmr's orchestrator never waits for
     * room, so orch_ns is submission, not kernels (hbg ignores it). */
    sp_call_config cfg = {.task_window = 2048};
    return sp_worker_run(w, 0, &args, &cfg, st);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median(uint64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    return n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static int bench_runtime(const char *runtime, const char *spc, int rounds, uint64_t layers)
{
    char module[PATH_MAX], rel[64], err[640] = "";
    snprintf(rel, sizeof rel, "../lib/libsimpler_%s_sim.so", runtime);
    if (sp__path_beside_exe(module, sizeof module, rel))
        return 1;
    sp_worker *w = NULL;
    if (sp_worker_open(module, NULL, &w, err, sizeof err) != SP_OK) {
        fprintf(stderr, "bench_graph_tasks: %s: %s\n", module, err);
        return 1;
    }
    if (sp_worker_register_callable_file(w, 0, spc) != SP_OK) {
        fprintf(stderr, "bench_graph_tasks: %s: %s\n", spc, sp_worker_last_error(w));
        sp_worker_close(w);
        return 1;
    }
    bool hbg = strcmp(runtime, "hbg") == 0;
    uint64_t ns[2][MAX_ROUNDS], tasks = 0, calls[2] = {0, 0};
    /* One warm-up round each: the stores and heaps reach their size. */
    for (int r = -1; r < rounds; r++)
        for (int mode = 0; mode < 2; mode++) {
            sp_run_stats st;
            int rc = run_layers(w, mode, layers, &st);
            if (rc != SP_OK) {
                fprintf(stderr, "bench_graph_tasks: %s: %s\n", runtime, sp_worker_last_error(w));
                sp_worker_close(w);
                return 1;
            }
            if (r < 0)
                continue;
            ns[mode][r] = hbg ? st.build_ns : st.orch_ns;
            tasks = st.tasks;
            calls[mode] = report[0];
        }
    double g = median(ns[MODE_GRAPH], rounds) / (double)tasks;
    double d = median(ns[MODE_DIRECT], rounds) / (double)tasks;
    printf("%s  %s per task, %llu tasks (%llu layers x 16 + 1), median of %d rounds:\n", runtime,
           hbg ? "build_ns" : "orch_ns", (unsigned long long)tasks, (unsigned long long)layers,
           rounds);
    printf("  graph tasks  %8.1f ns   (layer body ran %llu time(s))\n", g,
           (unsigned long long)calls[MODE_GRAPH]);
    printf("  one by one   %8.1f ns   (layer body ran %llu time(s))\n", d,
           (unsigned long long)calls[MODE_DIRECT]);
    printf("  ratio        %8.2f\n", g / d);
    sp_worker_close(w);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = 31;
    uint64_t layers = 64;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc)
            layers = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--rounds R] [--layers L]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || layers < 1) {
        fprintf(stderr, "bench_graph_tasks: --rounds in [1, %d], --layers >= 1\n", MAX_ROUNDS);
        return 2;
    }
    char spc[PATH_MAX];
    if (sp__path_beside_exe(spc, sizeof spc, "../bench/graph_tasks.spc"))
        return 1;
    return bench_runtime("hbg", spc, rounds, layers) || bench_runtime("tmr", spc, rounds, layers);
}
