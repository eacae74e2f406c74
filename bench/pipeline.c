/* bench_pipeline: what the async lane buys. The same paged_attention run,
 * sized so its host build takes about as long as its device time, is run
 * R times synchronously (submit, wait, submit, wait: build and execution
 * alternate) and R times through the lane (the next run is submitted —
 * built and uploaded — while the current one executes), in one process, in
 * alternating blocks; it reports runs per second and the ratio.
 *
 *   bench_pipeline [--runs R] [--runtime hbg|tmr] [--clusters N] [--param K=V]...
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/paths.h"
#include "common/wait.h"
#include "example.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define MAX_OVERRIDES 16
#define BLOCKS 4

/* Two instances, so a run can be prepared while the other executes. */
typedef struct bench {
    sp_worker *w;
    ex_instance inst[2];
    int check_failures;
    sp_run_stats last;
    uint64_t sync_runs, build_ns, upload_ns, device_ns; /* over the measured sync runs */
} bench;

static int check(bench *b, int k)
{
    double max_err;
    char err[EX_ERR_LEN];
    const ex_example *ex = b->inst[k].example;
    if (ex->check(&b->inst[k], &max_err, err, sizeof err)) {
        fprintf(stderr, "bench_pipeline: wrong result: %s\n", err);
        b->check_failures++;
        return -1;
    }
    return 0;
}

static int run_sync(bench *b, int runs)
{
    for (int i = 0; i < runs; i++) {
        int rc = sp_worker_run(b->w, 0, &b->inst[i & 1].args, NULL, &b->last);
        if (rc) {
            fprintf(stderr, "bench_pipeline: %s\n", sp_worker_last_error(b->w));
            return rc;
        }
        b->sync_runs++;
        b->build_ns += b->last.build_ns;
        b->upload_ns += b->last.upload_ns;
        b->device_ns += b->last.device_ns;
    }
    return check(b, 0);
}

static int run_async(bench *b, int runs)
{
    sp_run_handle h[2];
    int rc = sp_worker_submit(b->w, 0, &b->inst[0].args, NULL, &h[0]);
    for (int i = 1; rc == SP_OK && i <= runs; i++) {
        /* Keep two in flight: submit the next, then wait for the older. */
        if (i < runs)
            rc = sp_worker_submit(b->w, 0, &b->inst[i & 1].args, NULL, &h[i & 1]);
        int wrc = sp_worker_wait(b->w, &h[(i - 1) & 1], &b->last);
        if (rc == SP_OK)
            rc = wrc;
    }
    if (rc) {
        fprintf(stderr, "bench_pipeline: %s\n", sp_worker_last_error(b->w));
        return rc;
    }
    return check(b, 0) || check(b, 1);
}

int main(int argc, char **argv)
{
    int runs = 200;
    long clusters = 0;
    const char *runtime = "hbg";
    const char *overrides[MAX_OVERRIDES + 1] = {0};
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc)
            runtime = argv[++i];
        else if (strcmp(argv[i], "--clusters") == 0 && i + 1 < argc)
            clusters = atol(argv[++i]);
        else if (strcmp(argv[i], "--param") == 0 && i + 1 < argc && n_over < MAX_OVERRIDES)
            overrides[n_over++] = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--runs R] [--runtime hbg|tmr] [--clusters N] "
                    "[--param KEY=VALUE]...\n",
                    argv[0]);
            return 2;
        }
    }
    if (runs < BLOCKS * 2 || (strcmp(runtime, "hbg") && strcmp(runtime, "tmr"))) {
        fprintf(stderr, "bench_pipeline: --runs >= %d, --runtime hbg|tmr\n", BLOCKS * 2);
        return 2;
    }
    char module[PATH_MAX], spc[PATH_MAX], rel[64];
    snprintf(rel, sizeof rel, "../lib/libsimpler_%s_sim.so", runtime);
    sp__path_beside_exe(module, sizeof module, rel);
    sp__path_beside_exe(spc, sizeof spc, "../examples/paged_attention.spc");

    bench b;
    memset(&b, 0, sizeof b);
    sp_worker_options wo = {0};
    wo.prewarm.clusters = (uint32_t)clusters;
    wo.prewarm.sched_threads = 1;
    char err[640];
    int rc = sp_worker_open(module, &wo, &b.w, err, sizeof err);
    if (rc || (rc = sp_worker_register_callable_file(b.w, 0, spc))) {
        fprintf(stderr, "bench_pipeline: %s\n", rc ? err : sp_worker_last_error(b.w));
        return 1;
    }
    const ex_example *ex = ex_find("paged_attention");
    for (int k = 0; k < 2; k++) {
        if (ex_instance_init(&b.inst[k], ex, "large", overrides, err, sizeof err) ||
            ex->setup(&b.inst[k], err, sizeof err)) {
            fprintf(stderr, "bench_pipeline: %s\n", err);
            return 2;
        }
    }
    /* Warm up both slots (arena banks, retained buffers, page faults). */
    if (run_async(&b, 4) || run_sync(&b, 2))
        return 1;
    printf("bench_pipeline: paged_attention large on %s, %d runs per mode in %d blocks, lane "
           "depth %u\n",
           runtime, runs, BLOCKS, sp_worker_lane_depth(b.w));
    b.sync_runs = b.build_ns = b.upload_ns = b.device_ns = 0;
    uint64_t sync_ns = 0, async_ns = 0;
    for (int blk = 0; blk < BLOCKS && rc == SP_OK; blk++) {
        uint64_t t0 = sp_now_ns();
        rc = run_sync(&b, runs / BLOCKS);
        uint64_t t1 = sp_now_ns();
        if (rc == SP_OK)
            rc = run_async(&b, runs / BLOCKS);
        uint64_t t2 = sp_now_ns();
        sync_ns += t1 - t0;
        async_ns += t2 - t1;
    }
    if (rc)
        return 1;
    int done = runs / BLOCKS * BLOCKS;
    printf("  a synchronous run, mean: host build %.0f us + upload %.0f us, device %.0f us\n",
           b.build_ns / 1e3 / b.sync_runs, b.upload_ns / 1e3 / b.sync_runs,
           b.device_ns / 1e3 / b.sync_runs);
    double sync_rps = done / (sync_ns / 1e9), async_rps = done / (async_ns / 1e9);
    printf("  synchronous : %8.1f runs/s (%.0f us per run)\n", sync_rps, sync_ns / 1e3 / done);
    printf("  async lane  : %8.1f runs/s (%.0f us per run)\n", async_rps, async_ns / 1e3 / done);
    printf("  ratio async/sync: %.2fx; results checked: %s\n", async_rps / sync_rps,
           b.check_failures ? "WRONG" : "ok");
    for (int k = 0; k < 2; k++)
        ex_instance_free(&b.inst[k]);
    sp_worker_close(b.w);
    return b.check_failures ? 1 : 0;
}
