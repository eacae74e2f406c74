/* Replay across runs on tensormap_and_ringbuffer: what a replayed run saves
 * against a fresh one — the orchestrator's time (stats.orch_ns: launch to
 * the end of the orchestration or of the replay driver) and the run's wall
 * (sp_worker_run as the caller sees it) — for N-task independent and chain
 * graphs, through the worker on libsimpler_tmr_sim.so.
 *
 *   bench_replay_tmr [--n N] [--rounds R] [--window W]
 *
 * --window (default 16384, >= N) keeps the orchestrator from waiting for
 * room, so orch_ns is the submit path's own cost, not the schedulers'.
 *
 *   independent: N tasks, task i y[i] = x[i] * 1 + s (no edges).
 *   chain:       N tasks, all y[0] += x[i] (N - 1 edges).
 *
 * The callable is the tmr replay tests' (tests/kernels/replay_tmr_*.c,
 * built into <bindir>/../test_kernels). Min and median over the rounds. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "simpler/callable.h"
#include "simpler/module.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#define MAX_ROUNDS 200
enum { MODE_INDEPENDENT = 3, MODE_CHAIN = 4 }; /* replay_tmr_orch.c */

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

typedef struct figures {
    uint64_t orch[MAX_ROUNDS], wall[MAX_ROUNDS], device[MAX_ROUNDS];
} figures;

static void line(const char *what, uint64_t *v, int n, uint64_t tasks)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_u64);
    printf("    %-10s min %10.3f ms  median %10.3f ms  (%7.1f ns/task median)\n", what, v[0] / 1e6,
           v[n / 2] / 1e6, (double)v[n / 2] / (double)tasks);
}

static int bench(sp_worker *w, int mode, uint64_t n, int rounds, uint32_t window, const char *name)
{
    uint64_t *x = calloc(n, 8), *y = calloc(n, 8);
    figures *f[2] = {calloc(1, sizeof(figures)), calloc(1, sizeof(figures))};
    sp_args *a = calloc(1, sizeof *a);
    int64_t len = (int64_t)n, four = 4;
    uint64_t ctl[4] = {0};
    sp_tensor_init(&a->tensors[0], (uint64_t)(uintptr_t)x, SP_DTYPE_U64, 1, &len);
    sp_tensor_init(&a->tensors[1], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &len);
    sp_tensor_init(&a->tensors[2], (uint64_t)(uintptr_t)ctl, SP_DTYPE_U64, 1, &four);
    a->dirs[0] = SP_IN;
    a->dirs[1] = SP_INOUT;
    a->dirs[2] = SP_IN;
    a->tensor_count = 3;
    a->scalars[0] = (uint64_t)mode;
    a->scalars[1] = n;
    a->scalar_count = 3;
    sp_run_stats st;
    uint64_t tasks = 0, stream = 0, rec_orch = 0, rec_wall = 0;
    /* policy 0: fresh (off); 1: replay (auto, recorded by a first run). */
    for (int p = 0; p < 2; p++) {
        sp_call_config cfg = {.task_window = window, .flags = p ? SP_CALL_REPLAY_AUTO : 0};
        for (int r = -1; r < rounds; r++) {
            a->scalars[2] = (uint64_t)r;
            uint64_t t0 = now_ns();
            int rc = sp_worker_run(w, 0, a, &cfg, &st);
            uint64_t t1 = now_ns();
            if (rc) {
                fprintf(stderr, "%s: %s\n", name, sp_worker_last_error(w));
                return rc;
            }
            if (r < 0) {
                if (p && st.replay != SP_RUN_RECORDED)
                    fprintf(stderr, "%s: the first replay run did not record\n", name);
                if (p) {
                    rec_orch = st.orch_ns;
                    rec_wall = t1 - t0;
                }
                continue; /* warm-up / the recording */
            }
            if (p && st.replay != SP_RUN_REPLAYED) {
                fprintf(stderr, "%s: round %d did not replay\n", name, r);
                return SP_EINVAL;
            }
            stream += st.patch_bytes;
            tasks = st.tasks;
            f[p]->orch[r] = st.orch_ns;
            f[p]->wall[r] = t1 - t0;
            f[p]->device[r] = st.device_ns;
        }
    }
    printf("%s: %llu tasks, %d rounds each\n", name, (unsigned long long)tasks, rounds);
    for (int p = 0; p < 2; p++) {
        printf("  %s\n", p ? "replayed" : "fresh");
        line("orch_ns", f[p]->orch, rounds, tasks);
        line("device", f[p]->device, rounds, tasks);
        line("run wall", f[p]->wall, rounds, tasks);
    }
    printf("  the recording run: orch_ns %.3f ms, run wall %.3f ms\n", rec_orch / 1e6,
           rec_wall / 1e6);
    printf("  ratio replayed / fresh (medians): orch %.3f, run wall %.3f; stream bytes uploaded "
           "over the replays: %llu\n",
           (double)f[1]->orch[rounds / 2] / (double)f[0]->orch[rounds / 2],
           (double)f[1]->wall[rounds / 2] / (double)f[0]->wall[rounds / 2],
           (unsigned long long)stream);
    free(x), free(y), free(f[0]), free(f[1]), free(a);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t n = 10000;
    int rounds = 20;
    uint32_t window = 16384;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc)
            window = (uint32_t)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_replay_tmr [--n N] [--rounds R] [--window W]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || n < 1)
        return 2;
    char exe[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64], orch[PATH_MAX + 64],
        kern[PATH_MAX + 64];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return 1;
    exe[len] = '\0';
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    snprintf(path, sizeof path, "%s/../lib/libsimpler_tmr_sim.so", dir);
    snprintf(orch, sizeof orch, "%s/../test_kernels/replay_tmr_orch.so", dir);
    snprintf(kern, sizeof kern, "%s/../test_kernels/replay_tmr_kernels.so", dir);
    char err[1024] = "";
    sp_worker *w;
    if (sp_worker_open(path, NULL, &w, err, sizeof err) != SP_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    sp_callable_kernel_spec ks[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = kern, .entry = "rt_affine"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = kern, .entry = "rt_acc"},
    };
    sp_callable_spec spec = {.orch_path = orch,
                             .orch_entry = "replay_tmr",
                             .orch_config = "replay_tmr_config",
                             .kernels = ks,
                             .kernel_count = 2};
    void *blob;
    size_t size;
    if (sp_callable_build(&spec, &blob, &size, err, sizeof err) != SP_OK ||
        sp_worker_register_callable(w, 0, blob, size) != SP_OK) {
        fprintf(stderr, "callable: %s %s\n", err, sp_worker_last_error(w));
        return 1;
    }
    free(blob);
    double load[3] = {0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = -1;
        fclose(la);
    }
    printf("bench_replay_tmr: n %llu, window %u, load average %.2f %.2f %.2f\n",
           (unsigned long long)n, window, load[0], load[1], load[2]);
    int rc = bench(w, MODE_INDEPENDENT, n, rounds, window, "independent");
    if (!rc)
        rc = bench(w, MODE_CHAIN, n, rounds, window, "chain");
    sp_worker_close(w);
    return rc ? 1 : 0;
}
