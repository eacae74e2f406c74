/* Graph-size benchmark for host_build_graph: what one task costs the host
 * (graph build, image upload, image bytes) and the chip (launch to
 * completion), for 10^5-task graphs and for paged_attention `large`, each
 * run through the worker on libsimpler_<hbg|tmr>_sim.so exactly as a user would.
 *
 *   bench_graphs [--quick] [--n N] [--rounds R] [--budget-s S]
 *                [--only independent|chain|pa]
 *
 *   independent: N empty AIV tasks, task i OUT_EXISTING on row i (64 bytes)
 *                of one [N, 16] f32 tensor: no edges.
 *   chain:       N empty AIV tasks, all INOUT on one 64-byte row: N-1 edges.
 *   pa:          examples/paged_attention, case large (checked against its
 *                golden once, after the timed rounds).
 *
 * Figures come from the run's sp_run_stats; min and median over the rounds.
 * A graph workload starts no new round after --budget-s seconds (default 10),
 * so a pathologically slow build costs one round, not five.
 * The module and callables are found beside this executable (/proc/self/exe):
 * <bindir>/../lib, <bindir>/../bench/hbg_graphs.spc, <bindir>/../examples. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/paths.h"
#include "example.h"
#include "platform/device.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#define MAX_ROUNDS 100
enum { CALLABLE_GRAPHS = 0, CALLABLE_PA = 1 };
enum { MODE_INDEPENDENT = 0, MODE_CHAIN = 1 }; /* scalar 1 of hbg_graphs */

typedef struct round_figures {
    sp_run_stats st;
    uint64_t wall_ns; /* sp_worker_run as the caller sees it: staging to copy-back */
} round_figures;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Min and median of one field over the rounds. */
static void min_median(const round_figures *r, int n, size_t field_offset, uint64_t *min,
                       uint64_t *median)
{
    uint64_t v[MAX_ROUNDS];
    for (int i = 0; i < n; i++)
        memcpy(&v[i], (const char *)&r[i] + field_offset, sizeof v[i]);
    qsort(v, (size_t)n, sizeof v[0], cmp_u64);
    *min = v[0];
    *median = v[n / 2];
}

#define FIELD(f) offsetof(round_figures, f)

static void report(const char *name, const round_figures *r, int n)
{
    const sp_run_stats *s = &r[0].st;
    const double tasks = s->tasks ? (double)s->tasks : 1;
    static const struct {
        const char *what;
        size_t off;
    } rows[] = {
        {"host build", FIELD(st.build_ns)},
        {"upload", FIELD(st.upload_ns)},
        {"device", FIELD(st.device_ns)},
        {"run wall", FIELD(wall_ns)},
    };
    printf("\n%s: tasks=%llu edges=%llu image=%llu B (%.1f B/task), %d rounds\n", name,
           (unsigned long long)s->tasks, (unsigned long long)s->edges,
           (unsigned long long)s->image_bytes, (double)s->image_bytes / tasks, n);
    printf("  %-11s %14s %14s %14s %14s\n", "", "ns/task min", "ns/task med", "total ms min",
           "total ms med");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint64_t lo, med;
        min_median(r, n, rows[i].off, &lo, &med);
        printf("  %-11s %14.1f %14.1f %14.3f %14.3f\n", rows[i].what, lo / tasks, med / tasks,
               lo / 1e6, med / 1e6);
    }
    fflush(stdout);
}

/* One run through the worker; figures into *out. */
static int run_once(sp_worker *w, uint32_t id, const sp_args *args, round_figures *out)
{
    uint64_t t0 = now_ns();
    int rc = sp_worker_run(w, id, args, NULL, &out->st);
    out->wall_ns = now_ns() - t0;
    if (rc != SP_OK)
        fprintf(stderr, "bench_graphs: run failed: %s: %s\n", sp_status_name(rc),
                sp_worker_last_error(w));
    return rc;
}

static int bench_graph(sp_worker *w, int mode, uint64_t n, int rounds, uint64_t budget_ns,
                       sp_args *args)
{
    /* independent: one row per task, written only (no copy in); chain: one row, INOUT. */
    const int64_t shape[2] = {mode == MODE_CHAIN ? 1 : (int64_t)n, 16};
    float *rows = calloc((size_t)shape[0] * 16, sizeof *rows);
    if (!rows)
        return SP_ENOMEM;
    memset(args, 0, sizeof *args);
    args->tensor_count = 1;
    args->dirs[0] = mode == MODE_CHAIN ? SP_INOUT : SP_OUT;
    sp_tensor_init(&args->tensors[0], (uint64_t)(uintptr_t)rows, SP_DTYPE_F32, 2, shape);
    args->scalar_count = 2;
    args->scalars[0] = n;
    args->scalars[1] = (uint64_t)mode;

    round_figures r[MAX_ROUNDS] = {0};
    int rc = SP_OK, done = 0;
    const uint64_t t0 = now_ns();
    while (rc == SP_OK && done < rounds) {
        rc = run_once(w, CALLABLE_GRAPHS, args, &r[done++]);
        if (now_ns() - t0 > budget_ns)
            break; /* a slow build gets fewer rounds, not a slower bench */
    }
    rounds = done;
    uint64_t want_edges = mode == MODE_CHAIN ? n - 1 : 0;
    if (rc == SP_OK && (r[0].st.tasks != n || r[0].st.edges != want_edges)) {
        fprintf(stderr, "bench_graphs: expected %llu tasks and %llu edges, got %llu and %llu\n",
                (unsigned long long)n, (unsigned long long)want_edges,
                (unsigned long long)r[0].st.tasks, (unsigned long long)r[0].st.edges);
        rc = SP_EINVAL;
    }
    if (rc == SP_OK)
        report(mode == MODE_CHAIN ? "chain" : "independent", r, rounds);
    free(rows);
    return rc;
}

static int bench_paged_attention(sp_worker *w, int rounds)
{
    const ex_example *ex = ex_find("paged_attention");
    if (!ex) {
        fprintf(stderr, "bench_graphs: no paged_attention example\n");
        return SP_EINVAL;
    }
    round_figures r[MAX_ROUNDS] = {0};
    char err[EX_ERR_LEN] = "";
    int rc = SP_OK, bad = 0;
    double max_err = 0;
    ex_instance *inst = malloc(sizeof *inst);
    if (!inst)
        return SP_ENOMEM;
    for (int i = 0; rc == SP_OK && !bad && i < rounds; i++) {
        /* Fresh inputs each round, outside the timed call, as `simpler run` does. */
        if (ex_instance_init(inst, ex, "large", NULL, err, sizeof err) ||
            ex->setup(inst, err, sizeof err)) {
            fprintf(stderr, "bench_graphs: paged_attention large: %s\n", err);
            free(inst);
            return SP_EINVAL;
        }
        rc = run_once(w, CALLABLE_PA, &inst->args, &r[i]);
        if (rc == SP_OK && i == rounds - 1 && ex->check(inst, &max_err, err, sizeof err)) {
            fprintf(stderr, "bench_graphs: paged_attention large is wrong: %s\n", err);
            bad = 1;
        }
        ex_instance_free(inst);
    }
    free(inst);
    if (rc != SP_OK || bad)
        return rc != SP_OK ? rc : SP_EINVAL;
    report("paged_attention large", r, rounds);
    printf("  (checked against the golden: max_err=%g)\n", max_err);
    return SP_OK;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--quick] [--n N] [--rounds 1..%d] [--budget-s S]\n"
            "          [--only independent|chain|pa] [--runtime hbg|tmr]\n"
            "  defaults: N=100000, 5 rounds (pa: 10); --quick: N=1000, 3 rounds;\n"
            "  a graph workload starts no new round once S seconds (10) have passed\n",
            argv0, MAX_ROUNDS);
    return 2;
}

int main(int argc, char **argv)
{
    uint64_t n = 100000;
    int rounds = 0; /* 0: the default per workload */
    int quick = 0;
    double budget_s = 10;
    const char *only = NULL;
    const char *runtime = "hbg";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
            n = 1000;
        } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
            char *end;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100000000ull)
                return usage(argv[0]);
            n = v;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
            if (rounds < 1 || rounds > MAX_ROUNDS)
                return usage(argv[0]);
        } else if (strcmp(argv[i], "--budget-s") == 0 && i + 1 < argc) {
            budget_s = atof(argv[++i]);
            if (!(budget_s > 0 && budget_s < 1e6))
                return usage(argv[0]);
        } else if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc) {
            runtime = argv[++i];
            if (strcmp(runtime, "hbg") && strcmp(runtime, "tmr"))
                return usage(argv[0]);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
            if (strcmp(only, "independent") && strcmp(only, "chain") && strcmp(only, "pa"))
                return usage(argv[0]);
        } else {
            return usage(argv[0]);
        }
    }
    const int graph_rounds = rounds ? rounds : quick ? 3 : 5;
    const int pa_rounds = rounds ? rounds : quick ? 3 : 10;
    const uint64_t budget_ns = (uint64_t)(budget_s * 1e9);

    char module[PATH_MAX], graphs[PATH_MAX], pa[PATH_MAX], rel[64];
    snprintf(rel, sizeof rel, "../lib/libsimpler_%s_sim.so", runtime);
    if (sp__path_beside_exe(module, sizeof module, rel) ||
        sp__path_beside_exe(graphs, sizeof graphs, "../bench/hbg_graphs.spc") ||
        sp__path_beside_exe(pa, sizeof pa, "../examples/paged_attention.spc")) {
        fprintf(stderr, "bench_graphs: path too long\n");
        return 1;
    }
    sp_worker_options wo = {0}; /* default geometry */
    sp_worker *w = NULL;
    char err[640] = "";
    int rc = sp_worker_open(module, &wo, &w, err, sizeof err);
    if (rc != SP_OK) {
        fprintf(stderr, "bench_graphs: %s: %s\n", module, err);
        return 1;
    }
    if ((rc = sp_worker_register_callable_file(w, CALLABLE_GRAPHS, graphs)) != SP_OK ||
        (rc = sp_worker_register_callable_file(w, CALLABLE_PA, pa)) != SP_OK) {
        fprintf(stderr, "bench_graphs: register: %s\n", sp_worker_last_error(w));
        sp_worker_close(w);
        return 1;
    }
    const sp_geometry g = sp_geometry_default(1);
    printf("bench_graphs: %s on sim, default geometry %u cluster(s) "
           "(%u AIC + %u AIV cores), %u scheduler thread(s); N=%llu\n",
           strcmp(runtime, "hbg") == 0 ? "host_build_graph" : "tensormap_and_ringbuffer",
           g.clusters, g.clusters, 2 * g.clusters, g.aicpu_threads - 1, (unsigned long long)n);
    if (strcmp(runtime, "tmr") == 0)
        printf("  (tmr: host build = staging + ring state; the orchestration runs on the "
               "chip, inside device time)\n");

    sp_args *args = malloc(sizeof *args);
    if (!args)
        rc = SP_ENOMEM;
    if (rc == SP_OK && (!only || strcmp(only, "independent") == 0))
        rc = bench_graph(w, MODE_INDEPENDENT, n, graph_rounds, budget_ns, args);
    if (rc == SP_OK && (!only || strcmp(only, "chain") == 0))
        rc = bench_graph(w, MODE_CHAIN, n, graph_rounds, budget_ns, args);
    if (rc == SP_OK && (!only || strcmp(only, "pa") == 0))
        rc = bench_paged_attention(w, pa_rounds);
    free(args);
    sp_worker_close(w);
    return rc == SP_OK ? 0 : 1;
}
