/* simpler_l3_example: run one multi-chip example (tp_ffn, ep_moe,
 * dp_attention) on N chips and check it against its golden.
 *
 *   simpler_l3_example <example> [--chips N] [--runtime hbg|tmr] [--rounds K] [--mpi]
 *
 * Level 3 by default: N chips in this process. With --mpi (built when Open
 * MPI is found), level 4: every rank of the mpirun job opens N / ranks
 * chips and runs the same orchestration; each rank checks its own chips.
 * Prints one result line (per rank under --mpi) and exits 0 when every
 * output matches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc.h"
#include "simpler/status.h"
#ifdef MC_HAVE_MPI
#include "simpler/mpi.h"
#endif

#define MC_MAX_ROUNDS 1000

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s <tp_ffn|ep_moe|dp_attention> [--chips N] [--runtime hbg|tmr] "
            "[--rounds K] [--mpi]\n",
            argv0);
    return 2;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct mc_cli {
    const mc_example *ex;
    int chips, rounds, mpi;
    const char *runtime;
} mc_cli;

static int parse(int argc, char **argv, mc_cli *cli)
{
    cli->chips = 2;
    cli->rounds = 3;
    cli->runtime = "hbg";
    if (argc < 2 || !(cli->ex = mc_find(argv[1])))
        return -1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--chips") == 0 && v) {
            cli->chips = atoi(v), i++;
        } else if (strcmp(a, "--rounds") == 0 && v) {
            cli->rounds = atoi(v), i++;
        } else if (strcmp(a, "--runtime") == 0 && v) {
            cli->runtime = v, i++;
        } else if (strcmp(a, "--mpi") == 0) {
            cli->mpi = 1;
        } else {
            return -1;
        }
    }
    if (cli->chips < 1 || cli->chips > SP_L3_MAX_CHIPS || cli->rounds < 1 ||
        cli->rounds > MC_MAX_ROUNDS)
        return -1;
    return 0;
}

/* Setup, the rounds, the reference, the check and the report on an open
 * sp_l3; the result line into `line`. */
static int run_example(sp_l3 *l3, const mc_cli *cli, char *line, size_t line_len)
{
    const mc_example *ex = cli->ex;
    char err[1024] = "";
    void *state = NULL;
    int rc = mc_register_callables(l3, err, sizeof err);
    if (rc == SP_OK)
        rc = ex->setup(l3, &state, err, sizeof err);
    if (rc != SP_OK) {
        snprintf(line, line_len, "FAIL setup (%s): %s", sp_status_name(rc), err);
        return rc;
    }
    uint64_t wall[MC_MAX_ROUNDS];
    sp_l3_stats st = {0};
    for (int i = 0; rc == SP_OK && i < cli->rounds; i++) {
        rc = sp_l3_run_orch(l3, ex->orch, state, &st);
        wall[i] = st.wall_ns;
        if (rc != SP_OK)
            snprintf(line, line_len, "FAIL round %d (%s): %s", i, sp_status_name(rc),
                     sp_l3_last_error(l3));
    }
    if (rc == SP_OK && ex->reference && (rc = sp_l3_run_orch(l3, ex->reference, state, NULL)))
        snprintf(line, line_len, "FAIL reference run (%s): %s", sp_status_name(rc),
                 sp_l3_last_error(l3));
    double max_err = 0.0;
    if (rc == SP_OK && (rc = ex->check(l3, state, &max_err, err, sizeof err)))
        snprintf(line, line_len, "FAIL check (%s): %s", sp_status_name(rc), err);
    char report[512] = "";
    if (rc == SP_OK && ex->report && (rc = ex->report(l3, state, report, sizeof report)))
        snprintf(line, line_len, "FAIL report (%s): %s", sp_status_name(rc), report);
    if (rc == SP_OK) {
        qsort(wall, (size_t)cli->rounds, sizeof wall[0], cmp_u64);
        snprintf(line, line_len,
                 "ok, max rel err %.2g; run %.0f us median of %d (%u chip tasks, %u "
                 "collectives, %llu bytes moved)%s%s",
                 max_err, (double)wall[cli->rounds / 2] / 1e3, cli->rounds, st.chip_tasks,
                 st.collectives, (unsigned long long)st.bytes_moved, report[0] ? "; " : "", report);
    }
    ex->teardown(l3, state);
    return rc;
}

int main(int argc, char **argv)
{
    mc_cli cli = {0};
    if (parse(argc, argv, &cli))
        return usage(argv[0]);
    sp_l3_options opt = {0};
    opt.chips = (uint32_t)cli.chips;
    opt.runtime = cli.runtime;
    opt.worker.module_dir = MC_MODULE_DIR;
    char where[64] = "L3";
#ifdef MC_HAVE_MPI
    sp_mpi *mpi = NULL;
#endif
    char err[1024] = "";
    if (cli.mpi) {
#ifdef MC_HAVE_MPI
        if (sp_mpi_open(&argc, &argv, &mpi, err, sizeof err) != SP_OK) {
            fprintf(stderr, "%s: %s: sp_mpi_open: %s\n", argv[0], cli.ex->name, err);
            return 1;
        }
        const int ranks = sp_mpi_size(mpi);
        if (cli.chips % ranks) {
            fprintf(stderr, "%s: %s: %d chips do not split over %d ranks\n", argv[0], cli.ex->name,
                    cli.chips, ranks);
            sp_mpi_close(mpi);
            return 1;
        }
        opt.chips = (uint32_t)(cli.chips / ranks);
        opt.transport = sp_mpi_transport(mpi);
        snprintf(where, sizeof where, "L4 rank %d of %d", sp_mpi_rank(mpi), ranks);
#else
        fprintf(stderr, "%s: built without MPI: no --mpi\n", argv[0]);
        return 2;
#endif
    }
    sp_l3 *l3 = NULL;
    char line[2048];
    int rc = sp_l3_open(&opt, &l3, err, sizeof err);
    if (rc != SP_OK)
        snprintf(line, sizeof line, "FAIL open (%s): %s", sp_status_name(rc), err);
    else
        rc = run_example(l3, &cli, line, sizeof line);
    printf("%s: %d chips (%s), %s: %s\n", cli.ex->name, cli.chips, cli.runtime, where, line);
    fflush(stdout);
    sp_l3_close(l3);
#ifdef MC_HAVE_MPI
    sp_mpi_close(mpi);
#endif
    return rc == SP_OK ? 0 : 1;
}
