/* bench_l3_tp_ffn (issue 17): the tp_ffn example (examples/multichip) on
 * 1, 2 and 4 chips: the wall of a run (P chip tasks + the allreduce), the
 * chip tasks alone and the allreduce alone (each its own run, medians,
 * interleaved), the communication share = allreduce run / full run, and
 * the overhead ratio = full run on P chips / on 1 chip. The allreduce
 * run carries an L3 run's fixed cost too; full - chips only is the
 * allreduce's marginal cost inside a run (noisy: a difference of
 * medians). On a 2-CPU machine the chips' compute does not run in
 * parallel, so the ratio says what splitting costs, not what it gains.
 *
 *   bench_l3_tp_ffn [--rounds R] [--runtime hbg|tmr] [--quick] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "mc.h"
#include "simpler/status.h"

#define MAX_ROUNDS 201

static int bench_chips(const char *runtime, int chips, int rounds, double *one_chip_us)
{
    sp_l3_options opt = {0};
    opt.chips = (uint32_t)chips;
    opt.runtime = runtime;
    opt.worker.module_dir = MC_MODULE_DIR;
    sp_l3 *l3 = NULL;
    void *state = NULL;
    char err[1024] = "";
    int rc = sp_l3_open(&opt, &l3, err, sizeof err);
    if (rc == SP_OK)
        rc = mc_register_callables(l3, err, sizeof err);
    if (rc == SP_OK)
        rc = mc_tp_ffn.setup(l3, &state, err, sizeof err);
    if (rc != SP_OK) {
        fprintf(stderr, "bench_l3_tp_ffn: %d chips: %s\n", chips, err);
        sp_l3_close(l3);
        return rc;
    }
    static uint64_t v[4][MAX_ROUNDS];
    const sp_l3_orch_fn fns[4] = {tp_ffn_l3, tp_ffn_compute_l3, tp_ffn_allreduce_l3,
                                  tp_ffn_single_l3};
    for (int i = 0; rc == SP_OK && i < rounds; i++)
        for (int f = 0; rc == SP_OK && f < 4; f++) {
            sp_l3_stats st;
            rc = sp_l3_run_orch(l3, fns[f], state, &st);
            v[f][i] = st.wall_ns;
        }
    /* The compute-only and allreduce-only runs left the windows summed more
     * than once: one full run, then the check. */
    double max_err = 0.0;
    if (rc == SP_OK)
        rc = sp_l3_run_orch(l3, tp_ffn_l3, state, NULL);
    if (rc == SP_OK && (rc = mc_tp_ffn.check(l3, state, &max_err, err, sizeof err)) != SP_OK)
        fprintf(stderr, "bench_l3_tp_ffn: %d chips: %s\n", chips, err);
    else if (rc != SP_OK)
        fprintf(stderr, "bench_l3_tp_ffn: %d chips: %s\n", chips, sp_l3_last_error(l3));
    if (rc == SP_OK) {
        const double full = median_us(v[0], rounds), comp = median_us(v[1], rounds);
        const double ar = median_us(v[2], rounds), single = median_us(v[3], rounds);
        if (chips == 1)
            *one_chip_us = full;
        printf("%5d %10.1f %10.1f %10.1f %9.1f%% %10.1f %12.1f %9.2f\n", chips, full, comp, ar,
               100.0 * ar / full, full - comp, single,
               *one_chip_us > 0 ? full / *one_chip_us : 0.0);
        fflush(stdout);
    }
    mc_tp_ffn.teardown(l3, state);
    sp_l3_close(l3);
    return rc;
}

int main(int argc, char **argv)
{
    int rounds = 0, quick = 0;
    const char *runtime = "hbg";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--rounds") == 0 && v)
            rounds = atoi(v), i++;
        else if (strcmp(argv[i], "--runtime") == 0 && v)
            runtime = v, i++;
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else {
            fprintf(stderr, "usage: %s [--rounds R] [--runtime hbg|tmr] [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (!rounds)
        rounds = quick ? 3 : 31;
    if (rounds < 1 || rounds > MAX_ROUNDS)
        return 2;
    printf("bench_l3_tp_ffn: y = relu(x W1) W2, x [16,64], F = 240 split over P chips, "
           "%s on sim, medians of %d interleaved runs (us)\n",
           runtime, rounds);
    printf("%5s %10s %10s %10s %10s %10s %12s %9s\n", "chips", "full run", "chips only",
           "allreduce", "comm", "full-chips", "1-chip ref", "vs 1 chip");
    double one = 0.0;
    int rc = SP_OK;
    for (int chips = 1; rc == SP_OK && chips <= 4; chips *= 2)
        rc = bench_chips(runtime, chips, rounds, &one);
    return rc == SP_OK ? 0 : 1;
}
