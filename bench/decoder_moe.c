/* bench_decoder_moe: the issue-16 example figures, through the worker.
 *
 * decoder (case large unless --param overrides it): run wall per decode
 * step in three modes, R runs each, in one process:
 *   one-by-one   graph=0, no replay: the orchestration submits every task
 *   graph tasks  graph=1, no replay: one graph task per layer
 *   replayed     graph=1, SP_CALL_REPLAY_AUTO after one recording run
 * with the mean host build, upload, orchestration and device time of a
 * run, and the host share of the step, (wall - device) / wall. The last
 * run's sp_run_stats.replay says whether the runtime really replayed
 * (0 fresh, 1 recorded, 2 replayed).
 * moe (case half_empty with tokens=256 experts=32 empty=16 unless
 * overridden): device time with the expert tasks predicated on
 * counts[e] != 0 against the same graph with no predicates (the empty
 * experts' tasks run), with the skipped-task count; once with count-sized
 * kernels (an empty expert's run costs its dispatch) and once padded
 * (static shapes: it costs a full expert's work).
 * Every mode's result is checked against the example's golden; the modes
 * alternate in blocks after one warm-up run each.
 *
 *   bench_decoder_moe [--runs R] [--runtime hbg|tmr] [--clusters N]
 *                     [--decoder-param K=V]... [--moe-param K=V]...
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/paths.h"
#include "common/wait.h"
#include "example.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define MAX_OVERRIDES 16
/* Modes alternate in this many blocks, so drift (a shared machine) spreads
 * over all of them rather than favouring one. */
#define BLOCKS 4

/* What a mode's runs measured: sums, plus each run's wall and device time
 * (room for `cap` runs, allocated before timing) for the medians. */
typedef struct mode_stats {
    uint64_t runs, wall_ns, build_ns, upload_ns, orch_ns, device_ns, skipped;
    uint64_t *walls, *devices;
    uint64_t cap;
    sp_run_stats last;
} mode_stats;

static int mode_init(mode_stats *m, int cap)
{
    memset(m, 0, sizeof *m);
    m->walls = calloc((size_t)cap, sizeof *m->walls);
    m->devices = calloc((size_t)cap, sizeof *m->devices);
    m->cap = (uint64_t)cap;
    return m->walls && m->devices ? 0 : -1;
}

static void mode_free(mode_stats *m)
{
    free(m->walls);
    free(m->devices);
    m->walls = m->devices = NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n) in microseconds (sorts v). */
static double median_us(uint64_t *v, uint64_t n)
{
    if (!n)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    return (n & 1 ? (double)v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + (double)v[n / 2])) / 1e3;
}

/* R runs of `inst` as callable `id` with `flags`, added to *m; 0 or a
 * status. */
static int run_mode(sp_worker *w, uint32_t id, ex_instance *inst, uint64_t flags, int runs,
                    mode_stats *m)
{
    sp_call_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flags = flags;
    for (int i = 0; i < runs; i++) {
        uint64_t t0 = sp_now_ns();
        int rc = sp_worker_run(w, id, &inst->args, &cfg, &m->last);
        uint64_t t1 = sp_now_ns();
        if (rc) {
            fprintf(stderr, "bench_decoder_moe: %s: %s\n", sp_status_name(rc),
                    sp_worker_last_error(w));
            return rc;
        }
        if (m->runs < m->cap) {
            m->walls[m->runs] = t1 - t0;
            m->devices[m->runs] = m->last.device_ns;
        }
        m->runs++;
        m->wall_ns += t1 - t0;
        m->build_ns += m->last.build_ns;
        m->upload_ns += m->last.upload_ns;
        m->orch_ns += m->last.orch_ns;
        m->device_ns += m->last.device_ns;
        m->skipped += m->last.skipped;
    }
    double max_err;
    char err[EX_ERR_LEN];
    if (inst->example->check(inst, &max_err, err, sizeof err)) {
        fprintf(stderr, "bench_decoder_moe: wrong result: %s\n", err);
        return SP_EINVAL;
    }
    return SP_OK;
}

/* Means of a mode's runs, and the medians of wall and device time. */
static void print_mode(const char *name, mode_stats *m)
{
    const double n = (double)m->runs, wall = m->wall_ns / n, dev = m->device_ns / n;
    const uint64_t kept = m->runs < m->cap ? m->runs : m->cap;
    const double mwall = median_us(m->walls, kept), mdev = median_us(m->devices, kept);
    printf("  %-12s mean: wall %8.1f us/step  build %7.1f  upload %6.1f  orch %7.1f  device "
           "%8.1f  host share %5.1f%%\n",
           name, wall / 1e3, m->build_ns / n / 1e3, m->upload_ns / n / 1e3, m->orch_ns / n / 1e3,
           dev / 1e3, wall > 0 ? 100.0 * (wall - dev) / wall : 0.0);
    printf("  %-12s median: wall %8.1f us/step  device %8.1f  host share %5.1f%%  last run's "
           "replay=%u skipped=%u\n",
           "", mwall, mdev, mwall > 0 ? 100.0 * (mwall - mdev) / mwall : 0.0, m->last.replay,
           m->last.skipped);
}

/* An instance of `example`/`case_name` with `base` then `extra` overrides. */
static int make_instance(ex_instance *inst, const char *example, const char *case_name,
                         const char *const *base, int n_base, const char *const *extra, int n_extra)
{
    const char *ov[2 * MAX_OVERRIDES + 1] = {0};
    int n = 0;
    for (int i = 0; i < n_base; i++)
        ov[n++] = base[i];
    for (int i = 0; i < n_extra; i++)
        ov[n++] = extra[i];
    char err[EX_ERR_LEN];
    const ex_example *ex = ex_find(example);
    if (!ex || ex_instance_init(inst, ex, case_name, ov, err, sizeof err) ||
        ex->setup(inst, err, sizeof err)) {
        fprintf(stderr, "bench_decoder_moe: %s: %s\n", example, ex ? err : "not in the registry");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 50;
    long clusters = 0;
    const char *runtime = "hbg";
    const char *dec_ov[MAX_OVERRIDES], *moe_ov[MAX_OVERRIDES];
    int n_dec = 0, n_moe = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc)
            runtime = argv[++i];
        else if (strcmp(argv[i], "--clusters") == 0 && i + 1 < argc)
            clusters = atol(argv[++i]);
        else if (strcmp(argv[i], "--decoder-param") == 0 && i + 1 < argc && n_dec < MAX_OVERRIDES)
            dec_ov[n_dec++] = argv[++i];
        else if (strcmp(argv[i], "--moe-param") == 0 && i + 1 < argc && n_moe < MAX_OVERRIDES)
            moe_ov[n_moe++] = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--runs R] [--runtime hbg|tmr] [--clusters N] "
                    "[--decoder-param KEY=VALUE]... [--moe-param KEY=VALUE]...\n",
                    argv[0]);
            return 2;
        }
    }
    if (runs < BLOCKS || (strcmp(runtime, "hbg") && strcmp(runtime, "tmr"))) {
        fprintf(stderr, "bench_decoder_moe: --runs >= %d, --runtime hbg|tmr\n", BLOCKS);
        return 2;
    }
    char module[PATH_MAX], dec_spc[PATH_MAX], moe_spc[PATH_MAX], rel[64];
    snprintf(rel, sizeof rel, "../lib/libsimpler_%s_sim.so", runtime);
    sp__path_beside_exe(module, sizeof module, rel);
    sp__path_beside_exe(dec_spc, sizeof dec_spc, "../examples/decoder.spc");
    sp__path_beside_exe(moe_spc, sizeof moe_spc, "../examples/moe.spc");

    sp_worker *w = NULL;
    sp_worker_options wo = {0};
    wo.prewarm.clusters = (uint32_t)clusters;
    wo.prewarm.sched_threads = 1;
    char err[640];
    int rc = sp_worker_open(module, &wo, &w, err, sizeof err);
    if (rc || (rc = sp_worker_register_callable_file(w, 1, dec_spc)) ||
        (rc = sp_worker_register_callable_file(w, 2, moe_spc))) {
        fprintf(stderr, "bench_decoder_moe: %s\n", w ? sp_worker_last_error(w) : err);
        return 1;
    }

    /* decoder: the three modes, each with its own warm-up run. */
    static const char *const one_by_one[] = {"graph=0"}, *const graph[] = {"graph=1"};
    ex_instance dec[2];
    if (make_instance(&dec[0], "decoder", "large", one_by_one, 1, dec_ov, n_dec) ||
        make_instance(&dec[1], "decoder", "large", graph, 1, dec_ov, n_dec))
        return 2;
    mode_stats m[3], warm, p[4];
    for (int k = 0; k < 4; k++)
        if ((k < 3 && mode_init(&m[k], runs)) || mode_init(&p[k], runs))
            return 1;
    if (mode_init(&warm, 8))
        return 1;
    printf("bench_decoder_moe: decoder large on %s, %d runs per mode in %d blocks, %lld tasks "
           "per step\n",
           runtime, runs / BLOCKS * BLOCKS, BLOCKS, (long long)dec[0].expect_tasks);
    /* Warm-up: each mode once (the replayed mode's records the graph). */
    if (run_mode(w, 1, &dec[0], 0, 1, &warm) || run_mode(w, 1, &dec[1], 0, 1, &warm) ||
        run_mode(w, 1, &dec[1], SP_CALL_REPLAY_AUTO, 1, &warm))
        return 1;
    for (int blk = 0; blk < BLOCKS; blk++)
        if (run_mode(w, 1, &dec[0], 0, runs / BLOCKS, &m[0]) ||
            run_mode(w, 1, &dec[1], 0, runs / BLOCKS, &m[1]) ||
            run_mode(w, 1, &dec[1], SP_CALL_REPLAY_AUTO, runs / BLOCKS, &m[2]))
            return 1;
    print_mode("one-by-one", &m[0]);
    print_mode("graph tasks", &m[1]);
    print_mode("replayed", &m[2]);
    printf("  ratio one-by-one / replayed wall (means): %.2fx\n",
           (double)m[0].wall_ns / (double)(m[2].wall_ns ? m[2].wall_ns : 1));

    /* moe: predicated vs the same graph with every expert's tasks run,
     * with count-sized kernels and with padded (static-shape) ones. */
    static const char *const moe_modes[4][5] = {
        {"tokens=256", "experts=32", "empty=16", "predicated=1", "padded=0"},
        {"tokens=256", "experts=32", "empty=16", "predicated=0", "padded=0"},
        {"tokens=256", "experts=32", "empty=16", "predicated=1", "padded=1"},
        {"tokens=256", "experts=32", "empty=16", "predicated=0", "padded=1"},
    };
    static const char *const moe_names[4] = {"predicated", "full tasks", "pred/padded",
                                             "full/padded"};
    ex_instance moe[4];
    for (int k = 0; k < 4; k++)
        if (make_instance(&moe[k], "moe", "half_empty", moe_modes[k], 5, moe_ov, n_moe) ||
            run_mode(w, 2, &moe[k], 0, 1, &warm))
            return 2;
    for (int blk = 0; blk < BLOCKS; blk++)
        for (int k = 0; k < 4; k++)
            if (run_mode(w, 2, &moe[k], 0, runs / BLOCKS, &p[k]))
                return 1;
    printf("bench_decoder_moe: moe half_empty (T=256, E=32, 16 empty) on %s, %d runs per mode, "
           "%lld tasks\n",
           runtime, runs / BLOCKS * BLOCKS, (long long)moe[0].expect_tasks);
    for (int k = 0; k < 4; k++)
        print_mode(moe_names[k], &p[k]);
    printf("  ratio full / predicated device time (means): %.2fx count-sized kernels, %.2fx "
           "padded; results checked: ok\n",
           (double)p[1].device_ns / (double)(p[0].device_ns ? p[0].device_ns : 1),
           (double)p[3].device_ns / (double)(p[2].device_ns ? p[2].device_ns : 1));

    for (int k = 0; k < 2; k++)
        ex_instance_free(&dec[k]);
    for (int k = 0; k < 4; k++) {
        ex_instance_free(&moe[k]);
        mode_free(&p[k]);
    }
    for (int k = 0; k < 3; k++)
        mode_free(&m[k]);
    mode_free(&warm);
    sp_worker_close(w);
    return 0;
}
