/* bench_l3_overhead (issue 17): what the L3 layer adds to a chip run.
 *
 * Chip tasks run bench/graphs' callable with one empty kernel task, so a
 * chip task's cost is the runtime's and the L3 layer's. Against the same
 * work through the single-chip worker API (sp_worker_submit / wait on a
 * device-resident tensor, the way an L3 chip task reaches its chip) on
 * the L3's own chip 0 (sp_l3_chip_worker: same device, same geometry), in
 * the same process, the rounds interleaved, medians:
 *   run:    one L3 run of one chip task vs one submit + wait;
 *   spread: N independent chip tasks spread over C chips in one L3 run vs
 *           N submits on one worker, up to its lane depth in flight;
 *   chain:  N chip tasks on chip 0, each INOUT on one tensor (so in
 *           order) in one L3 run vs N submit + wait in turn.
 * Added per run = L3 run - worker run; added per chip task = (L3 - worker)
 * / N. With C > 1 the spread chip tasks may overlap on other chips, so its
 * difference can be negative; on 2 CPUs it mostly cannot.
 *
 *   bench_l3_overhead [--rounds R] [--tasks N] [--chips C] [--runtime hbg|tmr] [--quick]
 *
 * The module and callable are found beside this executable:
 * <bindir>/../lib, <bindir>/../bench/hbg_graphs.spc. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "common/paths.h"
#include "simpler/l3.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#define MAX_ROUNDS 201
#define ROW 16 /* f32 per row: 64 bytes, one row per task */
enum { CALLABLE = 1 };
enum { MODE_INDEPENDENT = 0, MODE_CHAIN = 1 }; /* scalar 1 of hbg_graphs */

/* ---- the L3 side ----------------------------------------------------------------- */
typedef struct l3_bench {
    int chips, tasks;
    sp_l3_tensor rows[SP_L3_MAX_CHIPS]; /* [tasks, ROW] f32 on each chip */
} l3_bench;

static int64_t submit_row(sp_l3_run *r, const l3_bench *b, int chip, int64_t row, int mode)
{
    sp_l3_arg a;
    memset(&a, 0, sizeof a);
    if (sp_l3_tensor_slice(&b->rows[chip], 0, row, 1, &a.tensor) != SP_OK)
        return sp_l3_run_fail(r, SP_ESHAPE, "bench_l3_overhead: row slice");
    a.dir = mode == MODE_CHAIN ? SP_INOUT : SP_OUT_EXISTING;
    const uint64_t sc[2] = {1, (uint64_t)mode};
    return sp_l3_submit(r, chip, CALLABLE, &a, 1, sc, 2, NULL);
}

static int orch_one(sp_l3_run *r, void *user)
{
    submit_row(r, user, 0, 0, MODE_INDEPENDENT);
    return sp_l3_run_error(r);
}

static int orch_spread(sp_l3_run *r, void *user)
{
    const l3_bench *b = user;
    for (int i = 0; i < b->tasks; i++) /* task i: chip i % C, row i / C: no two overlap */
        submit_row(r, b, i % b->chips, i / b->chips, MODE_INDEPENDENT);
    return sp_l3_run_error(r);
}

static int orch_chain(sp_l3_run *r, void *user)
{
    const l3_bench *b = user;
    for (int i = 0; i < b->tasks; i++)
        submit_row(r, b, 0, 0, MODE_CHAIN);
    return sp_l3_run_error(r);
}

/* ---- the single-worker side ------------------------------------------------------ */
typedef struct worker_bench {
    sp_worker *w;
    sp_args *args;
    uint64_t dev;
    int tasks;
} worker_bench;

static void worker_args(worker_bench *b, int mode)
{
    const int64_t shape[2] = {1, ROW};
    sp_args *a = b->args;
    a->tensor_count = 1;
    a->scalar_count = 2;
    sp_tensor_init(&a->tensors[0], b->dev, SP_DTYPE_F32, 2, shape);
    a->tensors[0].flags = SP_TENSOR_DEVICE;
    a->dirs[0] = mode == MODE_CHAIN ? SP_INOUT : SP_OUT_EXISTING;
    a->scalars[0] = 1;
    a->scalars[1] = (uint64_t)mode;
}

static int worker_one(worker_bench *b)
{
    sp_run_handle h;
    int rc = sp_worker_submit(b->w, CALLABLE, b->args, NULL, &h);
    return rc != SP_OK ? rc : sp_worker_wait(b->w, &h, NULL);
}

/* n runs, up to the lane depth in flight (independent: they write one row
 * each time, the same row, but the worker does not order runs by data). */
static int worker_pipelined(worker_bench *b, int n)
{
    sp_run_handle h[8];
    const uint32_t depth = sp_worker_lane_depth(b->w) < 8 ? sp_worker_lane_depth(b->w) : 8;
    int rc = SP_OK, head = 0, tail = 0;
    for (int i = 0; rc == SP_OK && i < n; i++) {
        if (tail - head == (int)depth)
            rc = sp_worker_wait(b->w, &h[head++ % 8], NULL);
        if (rc == SP_OK)
            rc = sp_worker_submit(b->w, CALLABLE, b->args, NULL, &h[tail++ % 8]);
    }
    while (head < tail) {
        int w = sp_worker_wait(b->w, &h[head++ % 8], NULL);
        rc = rc != SP_OK ? rc : w;
    }
    return rc;
}

static int worker_serial(worker_bench *b, int n)
{
    int rc = SP_OK;
    for (int i = 0; rc == SP_OK && i < n; i++)
        rc = worker_one(b);
    return rc;
}

/* ---- the measurements ------------------------------------------------------------- */
static int time_l3(sp_l3 *l3, sp_l3_orch_fn fn, l3_bench *b, uint64_t *ns)
{
    const uint64_t t0 = now_ns();
    int rc = sp_l3_run_orch(l3, fn, b, NULL);
    *ns = now_ns() - t0;
    if (rc != SP_OK)
        fprintf(stderr, "bench_l3_overhead: L3 run: %s\n", sp_l3_last_error(l3));
    return rc;
}

static int bench_chips(const char *runtime, const char *module_dir, const char *callable,
                       worker_bench *wb, int chips, int tasks, int rounds)
{
    sp_l3_options opt = {0};
    opt.chips = (uint32_t)chips;
    opt.runtime = runtime;
    opt.worker.module_dir = module_dir;
    sp_l3 *l3 = NULL;
    char err[640] = "";
    int rc = sp_l3_open(&opt, &l3, err, sizeof err);
    if (rc != SP_OK) {
        fprintf(stderr, "bench_l3_overhead: sp_l3_open(%d chips): %s\n", chips, err);
        return rc;
    }
    l3_bench b = {.chips = chips, .tasks = tasks};
    const int64_t shape[2] = {tasks, ROW};
    if ((rc = sp_l3_register_callable_file(l3, CALLABLE, callable)) != SP_OK) {
        fprintf(stderr, "bench_l3_overhead: register: %s\n", sp_l3_last_error(l3));
        goto out;
    }
    for (int c = 0; rc == SP_OK && c < chips; c++)
        rc = sp_l3_tensor_alloc(l3, c, SP_DTYPE_F32, 2, shape, &b.rows[c]);
    if (rc != SP_OK) {
        fprintf(stderr, "bench_l3_overhead: tensors: %s\n", sp_l3_last_error(l3));
        goto out;
    }
    /* The peer: the same chip's own worker (sp_l3_chip_worker), driven
     * directly: same device, same geometry, same process. */
    worker_bench same = {.w = sp_l3_chip_worker(l3, 0), .args = wb->args, .tasks = tasks};
    if ((rc = sp_worker_device_alloc(same.w, ROW * sizeof(float), &same.dev)) != SP_OK) {
        fprintf(stderr, "bench_l3_overhead: worker buffer: %s\n", sp_worker_last_error(same.w));
        goto out;
    }
    wb = &same;
    static uint64_t v[6][MAX_ROUNDS];
    for (int i = 0; rc == SP_OK && i < rounds; i++) {
        uint64_t t0;
        /* Interleaved: each round measures every case once, L3 then worker. */
        rc = time_l3(l3, orch_one, &b, &v[0][i]);
        worker_args(wb, MODE_INDEPENDENT);
        t0 = now_ns();
        if (rc == SP_OK)
            rc = worker_one(wb);
        v[1][i] = now_ns() - t0;
        if (rc == SP_OK)
            rc = time_l3(l3, orch_spread, &b, &v[2][i]);
        t0 = now_ns();
        if (rc == SP_OK)
            rc = worker_pipelined(wb, tasks);
        v[3][i] = now_ns() - t0;
        if (rc == SP_OK && chips == 1)
            rc = time_l3(l3, orch_chain, &b, &v[4][i]);
        worker_args(wb, MODE_CHAIN);
        t0 = now_ns();
        if (rc == SP_OK && chips == 1)
            rc = worker_serial(wb, tasks);
        v[5][i] = now_ns() - t0;
    }
    if (rc != SP_OK) {
        fprintf(stderr, "bench_l3_overhead: %d chips: %s / %s\n", chips, sp_l3_last_error(l3),
                sp_worker_last_error(wb->w));
        goto out;
    }
    const double one_l3 = median_us(v[0], rounds), one_w = median_us(v[1], rounds);
    const double sp_l3 = median_us(v[2], rounds), sp_w = median_us(v[3], rounds);
    printf("%5d  %-7s %10.1f %10.1f %+10.2f\n", chips, "run", one_l3, one_w, one_l3 - one_w);
    printf("%5d  %-7s %10.2f %10.2f %+10.3f   (%d tasks: %.0f vs %.0f us)\n", chips, "spread",
           sp_l3 / tasks, sp_w / tasks, (sp_l3 - sp_w) / tasks, tasks, sp_l3, sp_w);
    if (chips == 1) {
        const double ch_l3 = median_us(v[4], rounds), ch_w = median_us(v[5], rounds);
        printf("%5d  %-7s %10.2f %10.2f %+10.3f   (%d tasks: %.0f vs %.0f us)\n", chips, "chain",
               ch_l3 / tasks, ch_w / tasks, (ch_l3 - ch_w) / tasks, tasks, ch_l3, ch_w);
    }
    fflush(stdout);
    sp_worker_device_free(same.w, same.dev);
out:
    sp_l3_close(l3);
    return rc;
}

int main(int argc, char **argv)
{
    int rounds = 0, tasks = 1000, max_chips = 4, quick = 0;
    const char *runtime = "hbg";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--rounds") == 0 && v)
            rounds = atoi(v), i++;
        else if (strcmp(argv[i], "--tasks") == 0 && v)
            tasks = atoi(v), i++;
        else if (strcmp(argv[i], "--chips") == 0 && v)
            max_chips = atoi(v), i++;
        else if (strcmp(argv[i], "--runtime") == 0 && v)
            runtime = v, i++;
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--rounds R] [--tasks N] [--chips C] [--runtime hbg|tmr] "
                    "[--quick]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!rounds)
        rounds = quick ? 3 : 21;
    if (quick && tasks > 100)
        tasks = 100;
    if (rounds < 1 || rounds > MAX_ROUNDS || tasks < 1 || max_chips < 1 || max_chips > 16)
        return 2;

    char lib[PATH_MAX], callable[PATH_MAX];
    if (sp__path_beside_exe(lib, sizeof lib, "../lib") ||
        sp__path_beside_exe(callable, sizeof callable, "../bench/hbg_graphs.spc")) {
        fprintf(stderr, "bench_l3_overhead: path too long\n");
        return 1;
    }
    worker_bench wb = {.tasks = tasks};
    int rc = SP_OK;
    wb.args = calloc(1, sizeof *wb.args);
    if (!wb.args)
        return 1;
    printf("bench_l3_overhead: %s on sim, chip tasks of one empty kernel, medians of %d "
           "interleaved rounds; us per run / per chip task\n",
           runtime, rounds);
    printf("%5s  %-7s %10s %10s %10s\n", "chips", "case", "L3", "worker", "L3 adds");
    for (int c = 1; rc == SP_OK && c <= max_chips; c++)
        rc = bench_chips(runtime, lib, callable, &wb, c, tasks, rounds);
    free(wb.args);
    return rc == SP_OK ? 0 : 1;
}
