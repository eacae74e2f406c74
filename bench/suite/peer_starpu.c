/* StarPU peer: the suite's DAG through starpu_task_insert, dependencies
 * derived by StarPU from the data access modes (R / W / RW) on one data
 * handle per tile (StarPU's sequential-consistency mode, its default).
 * Scheduler and worker count come from the environment bench/run sets
 * (STARPU_SCHED = eager | dmda, STARPU_NCPU = 1 | 2) and are echoed into the
 * RESULT line. Handle registration is set-up, outside the timed region; the
 * timed region is submission to starpu_task_wait_for_all. */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>

#include "suite.h"

/* Read-only after set-up; a codelet's kernel has no other way in but cl_arg. */
static suite_opts g_opts;
static uint64_t g_spin_ns;

static void synthetic_kernel(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    struct starpu_task *task = starpu_task_get_current();
    suite_tile *w = (suite_tile *)STARPU_VECTOR_GET_PTR(buffers[task->nbuffers - 1]);
    if (g_spin_ns)
        suite_spin(g_spin_ns);
    w->v[0] += 1.0f;
}

static struct starpu_codelet synthetic_cl = {
    .cpu_funcs = {synthetic_kernel},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "suite_task",
};

#ifdef SUITE_BLAS
#include "chol_tile.h"

static double *tile_ptr(void *buffer)
{
    return (double *)STARPU_MATRIX_GET_PTR(buffer);
}
static int tile_ld(void *buffer)
{
    return (int)STARPU_MATRIX_GET_LD(buffer);
}
static void potrf_kernel(void *b[], void *arg)
{
    (void)arg;
    if (chol_potrf(tile_ptr(b[0]), (int)g_opts.tile, tile_ld(b[0])))
        fprintf(stderr, "peer_starpu: potrf failed\n");
}
static void trsm_kernel(void *b[], void *arg)
{
    (void)arg;
    chol_trsm(tile_ptr(b[0]), tile_ptr(b[1]), (int)g_opts.tile, tile_ld(b[1]));
}
static void syrk_kernel(void *b[], void *arg)
{
    (void)arg;
    chol_syrk(tile_ptr(b[0]), tile_ptr(b[1]), (int)g_opts.tile, tile_ld(b[1]));
}
static void gemm_kernel(void *b[], void *arg)
{
    (void)arg;
    chol_gemm(tile_ptr(b[0]), tile_ptr(b[1]), tile_ptr(b[2]), (int)g_opts.tile, tile_ld(b[2]));
}

/* History-based models, so that dmda has durations to schedule with (kept
 * in STARPU_HOME between runs, as a user's would be). */
static struct starpu_perfmodel models[4] = {
    {.type = STARPU_HISTORY_BASED, .symbol = "suite_potrf"},
    {.type = STARPU_HISTORY_BASED, .symbol = "suite_trsm"},
    {.type = STARPU_HISTORY_BASED, .symbol = "suite_syrk"},
    {.type = STARPU_HISTORY_BASED, .symbol = "suite_gemm"},
};
static struct starpu_codelet chol_cl[4] = {
    {.cpu_funcs = {potrf_kernel}, .nbuffers = 1, .modes = {STARPU_RW}, .model = &models[0]},
    {.cpu_funcs = {trsm_kernel},
     .nbuffers = 2,
     .modes = {STARPU_R, STARPU_RW},
     .model = &models[1]},
    {.cpu_funcs = {syrk_kernel},
     .nbuffers = 2,
     .modes = {STARPU_R, STARPU_RW},
     .model = &models[2]},
    {.cpu_funcs = {gemm_kernel},
     .nbuffers = 3,
     .modes = {STARPU_R, STARPU_R, STARPU_RW},
     .model = &models[3]},
};
#endif

static int starpu_mode(int m)
{
    return m == ACC_R ? STARPU_R : m == ACC_W ? STARPU_W : STARPU_RW;
}

/* Submit the DAG and wait; returns the makespan in ns, 0 on failure. */
static uint64_t run_graph(const suite_opts *o, starpu_data_handle_t *h)
{
    uint64_t t0 = suite_now_ns();
    dag_iter it;
    dag_task t;
    dag_begin(&it, o->kind, o->tiles);
    while (dag_next(&it, &t)) {
        int rc;
        starpu_data_handle_t h0 = h[t.tile[0]];
        if (o->real) {
#ifdef SUITE_BLAS
            struct starpu_codelet *cl = &chol_cl[t.op - OP_POTRF];
            if (t.n_acc == 1)
                rc = starpu_task_insert(cl, STARPU_RW, h0, 0);
            else if (t.n_acc == 2)
                rc = starpu_task_insert(cl, STARPU_R, h0, STARPU_RW, h[t.tile[1]], 0);
            else
                rc = starpu_task_insert(cl, STARPU_R, h0, STARPU_R, h[t.tile[1]], STARPU_RW,
                                        h[t.tile[2]], 0);
#else
            rc = -1;
#endif
        } else if (t.n_acc == 1) {
            rc = starpu_task_insert(&synthetic_cl, starpu_mode(t.mode[0]), h0, 0);
        } else if (t.n_acc == 2) {
            rc = starpu_task_insert(&synthetic_cl, starpu_mode(t.mode[0]), h0,
                                    starpu_mode(t.mode[1]), h[t.tile[1]], 0);
        } else {
            rc = starpu_task_insert(&synthetic_cl, starpu_mode(t.mode[0]), h0,
                                    starpu_mode(t.mode[1]), h[t.tile[1]], starpu_mode(t.mode[2]),
                                    h[t.tile[2]], 0);
        }
        if (rc) {
            fprintf(stderr, "peer_starpu: task_insert: %d\n", rc);
            return 0;
        }
    }
    starpu_task_wait_for_all();
    return suite_now_ns() - t0;
}

int main(int argc, char **argv)
{
    if (suite_parse(argc, argv, &g_opts, NULL, NULL))
        return 2;
    const suite_opts *o = &g_opts;
    if (o->real)
        suite_blas_threads(1); /* one BLAS thread per task: StarPU's workers are the parallelism */
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "peer_starpu: starpu_init failed\n");
        return 1;
    }
    const char *sched = getenv("STARPU_SCHED");
    char config[64];
    snprintf(config, sizeof config, "%s-ncpu%u", sched ? sched : "default",
             starpu_cpu_worker_get_count());

    const uint64_t ntiles = dag_tile_count(o->kind, o->tiles);
    starpu_data_handle_t *h = calloc(ntiles, sizeof *h);
    suite_tile *tiles = o->real ? NULL : suite_tiles_alloc(o);
    double *a = o->real ? suite_matrix_alloc(o) : NULL, *a0 = NULL;
    if (!h || (!tiles && !a)) {
        starpu_shutdown();
        return 1;
    }
    uint64_t t_reg = suite_now_ns();
    if (o->real) {
        suite_matrix_fill(o, a);
        a0 = o->check ? suite_matrix_copy(o, a) : NULL;
        for (uint32_t i = 0; i < o->tiles; i++)
            for (uint32_t j = 0; j <= i; j++)
                starpu_matrix_data_register(&h[i * o->tiles + j], STARPU_MAIN_RAM,
                                            (uintptr_t)suite_chol_tile(o, a, i, j), o->n, o->tile,
                                            o->tile, sizeof(double));
    } else {
        for (uint64_t t = 0; t < ntiles; t++)
            starpu_vector_data_register(&h[t], STARPU_MAIN_RAM, (uintptr_t)&tiles[t], 16,
                                        sizeof(float));
    }
    t_reg = suite_now_ns() - t_reg;

    uint64_t ns;
    if (!o->real) {
        g_spin_ns = 0;
        run_graph(o, h); /* warm-up: workers, task pools */
        g_spin_ns = o->spin_ns;
    }
    ns = run_graph(o, h);
    for (uint64_t t = 0; t < ntiles; t++)
        if (h[t])
            starpu_data_unregister(h[t]);
    starpu_shutdown();

    char extra[256];
    int bad = ns == 0;
    double res = 0;
    if (!bad && o->real)
        bad = o->check && suite_matrix_check(o, a0, a, &res);
    else if (!bad)
        bad = suite_tiles_check(o, tiles, 2) != 0;
    if (bad) {
        fprintf(stderr, "peer_starpu: %s is wrong\n", o->workload);
        return 1;
    }
    if (o->real)
        snprintf(extra, sizeof extra, "register_ns=%llu residual=%.3g gflops=%.2f",
                 (unsigned long long)t_reg, res, (double)o->n * o->n * o->n / 3.0 / (double)ns);
    else
        snprintf(extra, sizeof extra, "register_ns=%llu", (unsigned long long)t_reg);
    suite_result(o, "starpu", config, dag_task_count(o->kind, o->tiles), ns, extra);
    free(h);
    free(tiles);
    free(a);
    free(a0);
    return 0;
}
