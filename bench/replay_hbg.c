/* Replay across runs on host_build_graph (issue 16): what a replayed run
 * costs the host (key, lookup, staging, arena, patch and its upload)
 * against a fresh run (orchestration, derivation, image write and upload),
 * per task, for independent and chain graphs of N empty AIV tasks (the
 * bench_graphs callable, bench/graphs/), through the worker as a user runs
 * them.
 *
 *   bench_replay_hbg [--quick] [--n N[,N...]] [--rounds R]
 *
 * Per configuration: one recording run (SP_CALL_REPLAY_AUTO), then R
 * rounds of a fresh run (replay off) and a replay, interleaved so that both
 * see the same machine load; the fresh runs go through a second worker on
 * the same device (its own arena banks), so they do not overwrite the
 * image the replays' bank holds. Min and median of build_ns + upload_ns
 * (the host's prepare) per task, the patch bytes, device time and the run's
 * wall time; and replays on a cold bank (a fresh run overwrote its image
 * just before: the whole image and every relocation go up). Then the device's side of a replay:
 * traced runs give the time from launch to the first kernel's start, fresh against replayed (the
 * replay's device reset of task counters and queue slots lies in it). The module and callable are
 * found beside this executable: <bindir>/../lib, <bindir>/../bench/hbg_graphs.spc. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/paths.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/trace.h"
#include "simpler/worker.h"

#define MAX_ROUNDS 200
enum { MODE_INDEPENDENT = 0, MODE_CHAIN = 1 }; /* scalar 1 of hbg_graphs */

typedef struct figures {
    uint64_t host, build, upload, device, wall, patch;
} figures;

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

static void min_med(const figures *f, int n, size_t off, uint64_t *lo, uint64_t *med)
{
    uint64_t v[MAX_ROUNDS];
    for (int i = 0; i < n; i++)
        memcpy(&v[i], (const char *)&f[i] + off, sizeof v[i]);
    qsort(v, (size_t)n, sizeof v[0], cmp_u64);
    *lo = v[0];
    *med = v[n / 2];
}

static int run(sp_worker *w, const sp_args *args, uint64_t flags, uint32_t want, figures *f)
{
    sp_call_config cfg = {.flags = flags};
    sp_run_stats st;
    uint64_t t0 = now_ns();
    int rc = sp_worker_run(w, 0, args, &cfg, &st);
    f->wall = now_ns() - t0;
    if (rc != SP_OK) {
        fprintf(stderr, "bench_replay_hbg: run failed: %s: %s\n", sp_status_name(rc),
                sp_worker_last_error(w));
        return rc;
    }
    if (st.replay != want) {
        fprintf(stderr, "bench_replay_hbg: run was %u, expected %u\n", st.replay, want);
        return SP_EINVAL;
    }
    f->build = st.build_ns;
    f->upload = st.upload_ns;
    f->host = st.build_ns + st.upload_ns;
    f->device = st.device_ns;
    f->patch = st.patch_bytes;
    return SP_OK;
}

/* Launch to the first kernel start of a traced run (min over `tries`). */
static int first_start_ns(sp_worker *w, const sp_args *args, uint64_t flags, int tries,
                          uint64_t *out)
{
    *out = UINT64_MAX;
    for (int t = 0; t < tries; t++) {
        sp_call_config cfg = {.flags = flags, .trace_level = 1};
        int rc = sp_worker_run(w, 0, args, &cfg, NULL);
        if (rc != SP_OK) {
            fprintf(stderr, "bench_replay_hbg: traced run: %s: %s\n", sp_status_name(rc),
                    sp_worker_last_error(w));
            return rc;
        }
        const sp_run_trace *tr = sp_worker_last_trace(w);
        uint64_t first = UINT64_MAX;
        for (uint64_t i = 0; tr && i < tr->record_count; i++)
            if (tr->records[i].kind == SP_TRACE_SLICE && tr->records[i].start_ns < first)
                first = tr->records[i].start_ns;
        if (tr && first != UINT64_MAX && first - tr->launch_ns < *out)
            *out = first - tr->launch_ns;
    }
    return SP_OK;
}

static void row(const char *what, const figures *f, int n, uint64_t tasks)
{
    static const struct {
        const char *name;
        size_t off;
    } cols[] = {
        {"host", offsetof(figures, host)},     {"build", offsetof(figures, build)},
        {"upload", offsetof(figures, upload)}, {"device", offsetof(figures, device)},
        {"wall", offsetof(figures, wall)},
    };
    printf("  %-8s", what);
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
        uint64_t lo, med;
        min_med(f, n, cols[c].off, &lo, &med);
        printf(" %8.2f/%-8.2f", (double)lo / (double)tasks, (double)med / (double)tasks);
    }
    uint64_t lo, med;
    min_med(f, n, offsetof(figures, patch), &lo, &med);
    printf(" %10llu\n", (unsigned long long)med);
}

static int bench(sp_worker *w, sp_worker *wf, int mode, uint64_t n, int rounds)
{
    const int64_t shape[2] = {mode == MODE_CHAIN ? 1 : (int64_t)n, 16};
    float *rows = calloc((size_t)shape[0] * 16, sizeof *rows);
    sp_args *args = calloc(1, sizeof *args);
    if (!rows || !args) {
        free(rows);
        free(args);
        return SP_ENOMEM;
    }
    args->tensor_count = 1;
    args->dirs[0] = mode == MODE_CHAIN ? SP_INOUT : SP_OUT;
    sp_tensor_init(&args->tensors[0], (uint64_t)(uintptr_t)rows, SP_DTYPE_F32, 2, shape);
    args->scalar_count = 2;
    args->scalars[0] = n;
    args->scalars[1] = (uint64_t)mode;
    static figures fresh[MAX_ROUNDS], rep[MAX_ROUNDS], cold[MAX_ROUNDS], scratch;
    figures recorded;
    int rc = SP_OK;
    rc = run(w, args, SP_CALL_REPLAY_AUTO, SP_RUN_RECORDED, &recorded);
    for (int i = 0; rc == SP_OK && i < rounds; i++) {
        rc = run(wf, args, 0, SP_RUN_FRESH, &fresh[i]);
        if (rc == SP_OK)
            rc = run(w, args, SP_CALL_REPLAY_AUTO, SP_RUN_REPLAYED, &rep[i]);
    }
    /* A cold bank: a fresh run of the replaying worker overwrote its image
     * first, so the replay uploads the whole image and every relocation. */
    for (int i = 0; rc == SP_OK && i < rounds; i++) {
        rc = run(w, args, 0, SP_RUN_FRESH, &scratch);
        if (rc == SP_OK)
            rc = run(w, args, SP_CALL_REPLAY_AUTO, SP_RUN_REPLAYED, &cold[i]);
    }
    if (rc == SP_OK) {
        printf("\n%s N=%llu, %d rounds: ns/task min/median; patch bytes median\n",
               mode == MODE_CHAIN ? "chain" : "independent", (unsigned long long)n, rounds);
        printf("  %-8s %-17s %-17s %-17s %-17s %-17s %10s\n", "", " host", " build", " upload",
               " device", " wall", "patch B");
        row("fresh", fresh, rounds, n);
        row("record", &recorded, 1, n);
        row("replay", rep, rounds, n);
        row("cold", cold, rounds, n);
        uint64_t flo, fmed, rlo, rmed;
        min_med(fresh, rounds, offsetof(figures, host), &flo, &fmed);
        min_med(rep, rounds, offsetof(figures, host), &rlo, &rmed);
        printf("  host prepare, replay vs fresh (medians): %.1fx less\n",
               rmed ? (double)fmed / (double)rmed : 0.0);
        uint64_t f0, r0;
        rc = first_start_ns(wf, args, 0, 5, &f0);
        if (rc == SP_OK)
            rc = first_start_ns(w, args, SP_CALL_REPLAY_AUTO, 5, &r0);
        if (rc == SP_OK)
            printf("  launch to first kernel start (traced, min of 5): fresh %.1f us, replay "
                   "%.1f us\n",
                   (double)f0 / 1e3, (double)r0 / 1e3);
    }
    sp_worker_forget(w, 0, NULL, NULL);
    free(rows);
    free(args);
    return rc;
}

int main(int argc, char **argv)
{
    uint64_t sizes[8] = {10000, 100000};
    int nsizes = 2, rounds = 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            sizes[0] = 1000;
            nsizes = 1;
            rounds = 3;
        } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
            nsizes = 0;
            for (char *s = argv[++i], *end; *s && nsizes < 8; s = *end ? end + 1 : end) {
                sizes[nsizes++] = strtoull(s, &end, 10);
                if (end == s || sizes[nsizes - 1] < 1)
                    return 2;
            }
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
            if (rounds < 1 || rounds > MAX_ROUNDS)
                return 2;
        } else {
            fprintf(stderr, "usage: %s [--quick] [--n N[,N...]] [--rounds 1..%d]\n", argv[0],
                    MAX_ROUNDS);
            return 2;
        }
    }
    char module[PATH_MAX], graphs[PATH_MAX];
    if (sp__path_beside_exe(module, sizeof module, "../lib/libsimpler_hbg_sim.so") ||
        sp__path_beside_exe(graphs, sizeof graphs, "../bench/hbg_graphs.spc")) {
        fprintf(stderr, "bench_replay_hbg: path too long\n");
        return 1;
    }
    sp_worker *w = NULL, *wf = NULL;
    char err[640] = "";
    int rc = sp_worker_open(module, NULL, &w, err, sizeof err);
    if (rc == SP_OK)
        rc = sp_worker_open(module, NULL, &wf, err, sizeof err);
    if (rc != SP_OK) {
        fprintf(stderr, "bench_replay_hbg: %s: %s\n", module, err);
        sp_worker_close(w);
        return 1;
    }
    if ((rc = sp_worker_register_callable_file(w, 0, graphs)) != SP_OK ||
        (rc = sp_worker_register_callable_file(wf, 0, graphs)) != SP_OK) {
        fprintf(stderr, "bench_replay_hbg: register: %s / %s\n", sp_worker_last_error(w),
                sp_worker_last_error(wf));
        sp_worker_close(w);
        sp_worker_close(wf);
        return 1;
    }
    printf("bench_replay_hbg: host_build_graph on sim; host = build_ns + upload_ns of "
           "sp_run_stats (replay: key, lookup, staging, arena, patch, upload)\n");
    for (int s = 0; rc == SP_OK && s < nsizes; s++)
        for (int mode = MODE_INDEPENDENT; rc == SP_OK && mode <= MODE_CHAIN; mode++)
            rc = bench(w, wf, mode, sizes[s], rounds);
    sp_worker_close(w);
    sp_worker_close(wf);
    return rc == SP_OK ? 0 : 1;
}
