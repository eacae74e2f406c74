/* simpler's measuring program for the suite: opens a worker on
 * libsimpler_<hbg|tmr>_sim.so, registers the suite's callables, runs the
 * DAG once with empty kernels (warm-up) and once timed, checks the tile
 * counters (or the Cholesky residual), and prints the RESULT line.
 *
 *   bench_suite_simpler --runtime hbg|tmr [--clusters C] [--sched S] [--replay] [--resident]
 *                       <suite options>
 *
 * --replay: both runs ask for SP_CALL_REPLAY_AUTO, so the warm-up records
 * the graph and the timed run replays it (no orchestration, no dependency
 * derivation: build_ns is the host's patch); the timed run must report
 * SP_RUN_REPLAYED or the program fails. Not for cholesky_real (one run).
 *
 * --resident (cholesky_real only): the matrix lives in device memory, as a
 * model's weights or a KV cache would: uploaded with sp_worker_copy_to_device
 * before the timed run and read back after it, both untimed, as the peers
 * fill and check their host matrix untimed; the run names it with
 * SP_TENSOR_DEVICE, so nothing is staged. Without it the run stages the
 * host matrix (copy in, copy back: build_ns holds the copy in).
 *
 * ns = build + upload + device from sp_run_stats (hbg: host build of the
 * graph, image upload, device; tmr: staging and ring set-up, nothing,
 * device with the orchestration running on the chip); wall_ns is the whole
 * sp_worker_run call, which also stages the tiles in and copies them back. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/paths.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"
#include "suite.h"

enum { CALLABLE_DAG = 0, CALLABLE_CHOL = 1 };

typedef struct host_opts {
    const char *runtime;
    uint32_t clusters, sched;
    int replay, resident;
} host_opts;

static int parse_host(int argc, char **argv, int *i, void *ctx)
{
    host_opts *h = ctx;
    if (strcmp(argv[*i], "--replay") == 0)
        return h->replay = 1;
    if (strcmp(argv[*i], "--resident") == 0)
        return h->resident = 1;
    if (*i + 1 >= argc)
        return 0;
    if (strcmp(argv[*i], "--runtime") == 0)
        h->runtime = argv[++*i];
    else if (strcmp(argv[*i], "--clusters") == 0)
        h->clusters = (uint32_t)atoi(argv[++*i]);
    else if (strcmp(argv[*i], "--sched") == 0)
        h->sched = (uint32_t)atoi(argv[++*i]);
    else
        return 0;
    return 1;
}

static int run(sp_worker *w, uint32_t id, const sp_args *args, const sp_call_config *cfg,
               sp_run_stats *st, uint64_t *wall)
{
    uint64_t t0 = suite_now_ns();
    int rc = sp_worker_run(w, id, args, cfg, st);
    *wall = suite_now_ns() - t0;
    if (rc != SP_OK)
        fprintf(stderr, "bench_suite_simpler: run failed: %s: %s\n", sp_status_name(rc),
                sp_worker_last_error(w));
    return rc;
}

/* --resident: the matrix into a device buffer of its own, and the run's
 * tensor pointed at it. */
static int upload_matrix(sp_worker *w, const double *a, uint64_t bytes, sp_tensor *t)
{
    uint64_t dev = 0;
    int rc = sp_worker_device_alloc(w, bytes, &dev);
    if (rc == SP_OK && (rc = sp_worker_copy_to_device(w, dev, a, bytes)) == SP_OK) {
        t->addr = dev;
        t->flags |= SP_TENSOR_DEVICE;
    }
    if (rc != SP_OK)
        fprintf(stderr, "bench_suite_simpler: --resident: %s: %s\n", sp_status_name(rc),
                sp_worker_last_error(w));
    return rc;
}

/* The factor back into the host matrix, and the buffer freed. */
static int download_matrix(sp_worker *w, double *a, uint64_t bytes, const sp_tensor *t)
{
    int rc = sp_worker_copy_from_device(w, a, t->addr, bytes);
    if (rc == SP_OK)
        rc = sp_worker_device_free(w, t->addr);
    if (rc != SP_OK)
        fprintf(stderr, "bench_suite_simpler: --resident: %s: %s\n", sp_status_name(rc),
                sp_worker_last_error(w));
    return rc;
}

int main(int argc, char **argv)
{
    suite_opts o;
    host_opts h = {.runtime = "hbg", .clusters = 1, .sched = 1};
    if (suite_parse(argc, argv, &o, parse_host, &h))
        return 2;
    if (h.replay && o.real) {
        fprintf(stderr, "bench_suite_simpler: --replay needs two runs; cholesky_real runs once\n");
        return 2;
    }
    if (h.resident && !o.real) {
        fprintf(stderr, "bench_suite_simpler: --resident is for cholesky_real\n");
        return 2;
    }
    if (strcmp(h.runtime, "hbg") && strcmp(h.runtime, "tmr")) {
        fprintf(stderr, "bench_suite_simpler: --runtime hbg|tmr\n");
        return 2;
    }
    char module[PATH_MAX], callable[PATH_MAX], rel[64];
    snprintf(rel, sizeof rel, "../lib/libsimpler_%s_sim.so", h.runtime);
    if (sp__path_beside_exe(module, sizeof module, rel) ||
        sp__path_beside_exe(callable, sizeof callable,
                            o.real ? "../bench/suite/suite_chol.spc"
                                   : "../bench/suite/suite_dag.spc"))
        return 1;

    /* The geometry is explicit so the table can say which one was measured. */
    sp_worker_options wo = {.prewarm = {.clusters = h.clusters, .sched_threads = h.sched}};
    sp_worker *w = NULL;
    char err[640] = "";
    if (sp_worker_open(module, &wo, &w, err, sizeof err) != SP_OK) {
        fprintf(stderr, "bench_suite_simpler: %s: %s\n", module, err);
        return 1;
    }
    const uint32_t id = o.real ? CALLABLE_CHOL : CALLABLE_DAG;
    if (sp_worker_register_callable_file(w, id, callable) != SP_OK) {
        fprintf(stderr, "bench_suite_simpler: %s: %s\n", callable, sp_worker_last_error(w));
        sp_worker_close(w);
        return 1;
    }

    const uint64_t bytes = (uint64_t)o.n * o.n * sizeof(double);
    sp_args *args = calloc(1, sizeof *args);
    suite_tile *tiles = o.real ? NULL : suite_tiles_alloc(&o);
    double *a = o.real ? suite_matrix_alloc(&o) : NULL, *a0 = NULL;
    if (!args || (!tiles && !a)) {
        sp_worker_close(w);
        return 1;
    }
    args->tensor_count = 1;
    args->dirs[0] = SP_INOUT; /* counters / the matrix go in and come back */
    if (o.real) {
        suite_blas_threads(1); /* the kernels share this process's OpenBLAS: one thread each */
        suite_matrix_fill(&o, a);
        a0 = o.check ? suite_matrix_copy(&o, a) : NULL;
        const int64_t shape[2] = {o.n, o.n};
        sp_tensor_init(&args->tensors[0], (uint64_t)(uintptr_t)a, SP_DTYPE_F64, 2, shape);
        if (h.resident && upload_matrix(w, a, bytes, &args->tensors[0]) != SP_OK) {
            sp_worker_close(w);
            return 1;
        }
    } else {
        const int64_t shape[2] = {(int64_t)dag_tile_count(o.kind, o.tiles), 16};
        sp_tensor_init(&args->tensors[0], (uint64_t)(uintptr_t)tiles, SP_DTYPE_F32, 2, shape);
    }
    args->scalar_count = 5;
    args->scalars[0] = (uint64_t)o.kind;
    args->scalars[1] = o.tiles;
    args->scalars[3] = (uint64_t)o.real;
    args->scalars[4] = o.tile;

    sp_run_stats st = {0};
    uint64_t wall = 0;
    int rc = SP_OK;
    /* The checking mode (SIMPLER_CHECK, make test's sanitizer phases) is
     * never recorded on hbg: a replay configuration keeps it off. */
    const sp_call_config cfg = {.flags = h.replay ? SP_CALL_REPLAY_AUTO | SP_CALL_NO_CHECK : 0};
    if (!o.real)
        rc = run(w, id, args, &cfg, &st, &wall); /* warm-up with empty kernels */
    args->scalars[2] = o.spin_ns;
    if (rc == SP_OK)
        rc = run(w, id, args, &cfg, &st, &wall);
    if (rc == SP_OK && h.resident)
        rc = download_matrix(w, a, bytes, &args->tensors[0]);
    if (rc == SP_OK && h.replay && st.replay != SP_RUN_REPLAYED) {
        fprintf(stderr, "bench_suite_simpler: --replay: the timed run did not replay (%u)\n",
                st.replay);
        rc = SP_EREPLAY_MISS;
    }
    sp_worker_close(w);
    free(args);

    const uint64_t tasks = dag_task_count(o.kind, o.tiles);
    double res = 0;
    int bad = rc != SP_OK;
    if (!bad && st.tasks != tasks) {
        fprintf(stderr, "bench_suite_simpler: %llu tasks ran, want %llu\n",
                (unsigned long long)st.tasks, (unsigned long long)tasks);
        bad = 1;
    }
    if (!bad)
        bad = o.real ? o.check && suite_matrix_check(&o, a0, a, &res) != 0
                     : suite_tiles_check(&o, tiles, 2) != 0;
    if (bad) {
        fprintf(stderr, "bench_suite_simpler: %s on %s is wrong\n", o.workload, h.runtime);
        return 1;
    }
    const uint64_t ns = st.build_ns + st.upload_ns + st.device_ns;
    char config[64], extra[512];
    snprintf(config, sizeof config, "%s%s", h.runtime,
             h.replay     ? "-replay"
             : h.resident ? "-resident"
                          : "");
    int len = snprintf(extra, sizeof extra,
                       "clusters=%u sched=%u build_ns=%llu upload_ns=%llu device_ns=%llu "
                       "wall_ns=%llu edges=%llu orch_ns=%llu patch_bytes=%llu chained=%llu",
                       h.clusters, h.sched, (unsigned long long)st.build_ns,
                       (unsigned long long)st.upload_ns, (unsigned long long)st.device_ns,
                       (unsigned long long)wall, (unsigned long long)st.edges,
                       (unsigned long long)st.orch_ns, (unsigned long long)st.patch_bytes,
                       (unsigned long long)st.chained);
    if (o.real)
        snprintf(extra + len, sizeof extra - (size_t)len, " residual=%.3g gflops=%.2f", res,
                 (double)o.n * o.n * o.n / 3.0 / (double)ns);
    suite_result(&o, "simpler", config, tasks, ns, extra);
    free(tiles);
    free(a);
    free(a0);
    return 0;
}
