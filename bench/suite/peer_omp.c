/* OpenMP tasks peer: the suite's DAG as `omp task` with `depend` clauses,
 * one producer in `single`, completion by `taskwait`. Built twice from this
 * source: gcc + libgomp and clang + libomp (SUITE_OMP_NAME says which).
 * Every dependence names the tile's own address, so no two tiles alias and
 * the tasks are really deferred. Settings (OMP_NUM_THREADS,
 * KMP_ENABLE_TASK_THROTTLING, ...) come from the environment bench/run sets;
 * they are echoed into the RESULT line. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "suite.h"

#ifndef SUITE_OMP_NAME
#define SUITE_OMP_NAME "omp"
#endif

/* One DAG through the task runtime; returns its makespan in ns. The depend
 * lists are compile-time, so each access pattern (1, 2 or 3 tiles, the last
 * written) has its own task construct. */
static uint64_t run_graph(const suite_opts *o, suite_tile *tiles, double *a, uint64_t spin_ns,
                          int *failed)
{
    uint64_t t0 = suite_now_ns();
#pragma omp parallel
#pragma omp single
    {
        dag_iter it;
        dag_task t;
        dag_begin(&it, o->kind, o->tiles);
        while (dag_next(&it, &t)) {
            /* The addresses the dependences name: a tile's first element. */
            void *d[3] = {NULL, NULL, NULL};
            for (int i = 0; i < t.n_acc; i++)
                d[i] = o->real ? (void *)suite_chol_tile(o, a, t.ti[i], t.tj[i])
                               : (void *)&tiles[t.tile[i]];
            const uint32_t w = t.tile[t.n_acc - 1];
            char *w0 = d[t.n_acc - 1], *r0 = d[0], *r1 = d[1];
            (void)w0, (void)r0, (void)r1; /* gcc counts depend() as no use */
            if (t.n_acc == 1) {
#pragma omp task firstprivate(t, w) depend(inout : w0[0])
                {
                    if (o->real)
                        *failed |= suite_chol_task(o, a, &t);
                    else
                        suite_task_body(tiles, w, spin_ns);
                }
            } else if (t.n_acc == 2) {
#pragma omp task firstprivate(t, w) depend(in : r0[0]) depend(inout : w0[0])
                {
                    if (o->real)
                        *failed |= suite_chol_task(o, a, &t);
                    else
                        suite_task_body(tiles, w, spin_ns);
                }
            } else {
#pragma omp task firstprivate(t, w) depend(in : r0[0], r1[0]) depend(inout : w0[0])
                {
                    if (o->real)
                        *failed |= suite_chol_task(o, a, &t);
                    else
                        suite_task_body(tiles, w, spin_ns);
                }
            }
        }
#pragma omp taskwait
    }
    return suite_now_ns() - t0;
}

int main(int argc, char **argv)
{
    suite_opts o;
    if (suite_parse(argc, argv, &o, NULL, NULL))
        return 2;
    const uint64_t tasks = dag_task_count(o.kind, o.tiles);
    const char *throttle = getenv("KMP_ENABLE_TASK_THROTTLING");
    char extra[256];
    int failed = 0;
    uint64_t ns;
    if (o.real) {
        suite_blas_threads(1); /* one BLAS thread per task: OpenMP is the parallelism */
        double *a = suite_matrix_alloc(&o), *a0;
        if (!a)
            return 1;
        suite_matrix_fill(&o, a);
        a0 = o.check ? suite_matrix_copy(&o, a) : NULL;
        ns = run_graph(&o, NULL, a, 0, &failed);
        double res = 0;
        if (failed || (o.check && suite_matrix_check(&o, a0, a, &res))) {
            fprintf(stderr, "peer_omp: cholesky_real is wrong\n");
            return 1;
        }
        snprintf(extra, sizeof extra, "threads=%d throttling=%s residual=%.3g gflops=%.2f",
                 omp_get_max_threads(), throttle ? throttle : "default", res,
                 (double)o.n * o.n * o.n / 3.0 / (double)ns);
        free(a0);
        free(a);
    } else {
        suite_tile *tiles = suite_tiles_alloc(&o);
        if (!tiles)
            return 1;
        run_graph(&o, tiles, NULL, 0, &failed); /* warm-up: threads, pools */
        ns = run_graph(&o, tiles, NULL, o.spin_ns, &failed);
        if (suite_tiles_check(&o, tiles, 2))
            return 1;
        snprintf(extra, sizeof extra, "threads=%d throttling=%s", omp_get_max_threads(),
                 throttle ? throttle : "default");
        free(tiles);
    }
    suite_result(&o, "openmp", SUITE_OMP_NAME, tasks, ns, extra);
    return 0;
}
