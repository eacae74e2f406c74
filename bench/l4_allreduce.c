/* Allreduce at level 4 against raw MPI, in one run (issue 17's benchmark):
 * under mpirun -np 2 / -np 4 (one sim chip per rank), for F32 buffers of
 * 4 KiB ... 64 MiB, the median time of
 *   raw:  MPI_Allreduce(MPI_IN_PLACE, SUM) on a host buffer;
 *   run:  sp_l3_run_orch of an orchestration with one sp_l3_allreduce over
 *         a domain of every rank's chip (the whole L3 run: submit, the
 *         collective through libsimpler_mpi's progress thread, the
 *         end-of-run agreement);
 *   coll: the same with k allreduces on the buffer in one run (k = 8 up to
 *         1 MiB, 2 above), per allreduce (the run's fixed cost spread out);
 * each repetition starts after an MPI_Barrier and counts the slowest rank.
 * The ratios are coll / raw and run / raw.
 *
 *   mpirun -np 4 --oversubscribe --mca btl self,vader \
 *       --mca btl_vader_single_copy_mechanism none build/bin/bench_l4_allreduce [--quick |
 * --max-mib N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simpler/l3.h"
#include "simpler/mpi.h"
#include "simpler/status.h"

#define MAX_BYTES (64ull << 20)
#define PER_RUN 8

typedef struct bench {
    sp_l3_domain *d;
    uint64_t count;
    int per_run;
} bench;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int orch(sp_l3_run *r, void *user)
{
    bench *b = user;
    for (int i = 0; i < b->per_run; i++)
        sp_l3_allreduce(r, b->d, 0, b->count, SP_DTYPE_F32, SP_L3_SUM);
    return sp_l3_run_error(r);
}

/* The slowest rank's time of one repetition. */
static double slowest(double t)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    /* --max-mib N: stop at N MiB (default 64). */
    uint64_t max_mib =
        argc > 2 && strcmp(argv[1], "--max-mib") == 0 ? strtoull(argv[2], 0, 10) : 64;
    /* MULTIPLE: this program calls MPI (the raw side, the barriers) while
     * libsimpler_mpi's progress thread makes its own calls. */
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "bench_l4_allreduce: MPI gives thread level %d, needs MULTIPLE\n",
                provided);
        MPI_Finalize();
        return 1;
    }
    sp_mpi *m = NULL;
    char err[1024] = "";
    if (sp_mpi_open(&argc, &argv, &m, err, sizeof err)) {
        fprintf(stderr, "sp_mpi_open: %s\n", err);
        MPI_Finalize();
        return 1;
    }
    int rank = sp_mpi_rank(m), size = sp_mpi_size(m);
    sp_l3_options o = {.chips = 1, .transport = sp_mpi_transport(m)};
    sp_l3 *l3 = NULL;
    int rc = sp_l3_open(&o, &l3, err, sizeof err);
    int chips[SP_L3_MAX_CHIPS];
    for (int c = 0; c < size; c++)
        chips[c] = c;
    uint64_t max_bytes = quick ? (1ull << 20) : max_mib << 20;
    if (max_bytes < 4096 || max_bytes > MAX_BYTES)
        max_bytes = MAX_BYTES;
    bench b = {0};
    if (!rc)
        rc = sp_l3_domain_create(l3, chips, (uint32_t)size, max_bytes, &b.d);
    float *host = calloc(max_bytes / 4, sizeof(float));
    sp_l3_tensor win;
    if (!rc)
        rc =
            sp_l3_domain_view(b.d, (uint32_t)rank, 0, SP_DTYPE_F32, (int64_t)(max_bytes / 4), &win);
    if (!rc) /* zeros: repeated sums stay finite */
        rc = sp_l3_write(l3, &win, host, max_bytes);
    if (rc || !host) {
        fprintf(stderr, "rank %d: set-up: %s %s\n", rank, err, l3 ? sp_l3_last_error(l3) : "");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        printf("bench_l4_allreduce: %d ranks, one sim chip each, F32 SUM, median of N, "
               "slowest rank per repetition\n",
               size);
        printf("%10s %4s %2s %12s %12s %12s %9s %9s\n", "bytes", "N", "k", "raw_us", "run_us",
               "coll_us", "coll/raw", "run/raw");
    }
    double samples[3][64];
    for (uint64_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
        int n = quick ? 3 : bytes <= (1u << 20) ? 31 : bytes <= (4u << 20) ? 11 : 3;
        int per_run = bytes <= (1u << 20) ? PER_RUN : 2;
        uint64_t count = bytes / 4;
        b.count = count;
        for (int rep = -1; rep < n; rep++) { /* rep -1: warm-up */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now_s();
            MPI_Allreduce(MPI_IN_PLACE, host, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double raw = slowest(now_s() - t0);

            b.per_run = 1;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = now_s();
            rc = sp_l3_run_orch(l3, orch, &b, NULL);
            double run = slowest(now_s() - t0);

            b.per_run = per_run;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = now_s();
            if (!rc)
                rc = sp_l3_run_orch(l3, orch, &b, NULL);
            double coll = slowest(now_s() - t0) / per_run;
            if (rc) {
                fprintf(stderr, "rank %d: run: %s: %s\n", rank, sp_status_name(rc),
                        sp_l3_last_error(l3));
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            if (rep >= 0) {
                samples[0][rep] = raw;
                samples[1][rep] = run;
                samples[2][rep] = coll;
            }
        }
        double raw = median(samples[0], n), run = median(samples[1], n),
               coll = median(samples[2], n);
        if (rank == 0)
            printf("%10llu %4d %2d %12.1f %12.1f %12.1f %9.2f %9.2f\n", (unsigned long long)bytes,
                   n, per_run, raw * 1e6, run * 1e6, coll * 1e6, coll / raw, run / raw);
    }
    /* A check that the L4 sums were sums: the window is still zeros + a 1 per rank. */
    float one = 1.0f;
    sp_l3_tensor first;
    sp_l3_domain_view(b.d, (uint32_t)rank, 0, SP_DTYPE_F32, 1, &first);
    sp_l3_write(l3, &first, &one, sizeof one);
    b.count = 1;
    b.per_run = 1;
    rc = sp_l3_run_orch(l3, orch, &b, NULL);
    float got = 0;
    sp_l3_read(l3, &first, &got, sizeof got);
    int bad = rc || got != (float)size;
    if (bad)
        fprintf(stderr, "rank %d: the check allreduce gave %g (%s)\n", rank, (double)got,
                sp_status_name(rc));
    sp_l3_domain_destroy(b.d);
    sp_l3_close(l3);
    sp_mpi_close(m);
    free(host);
    MPI_Finalize();
    return bad;
}
