/* The suite's shared host code: options, spin, synthetic tiles and their
 * counter check, the Cholesky matrix and its residual check, the RESULT
 * line. Built into every measuring program (C and C++ peers, simpler's host
 * program). Without SUITE_BLAS the cholesky_real parts refuse to run. */
#include "suite.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SUITE_BLAS
#include "chol_tile.h"
#endif

uint64_t suite_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void suite_spin(uint64_t ns)
{
    /* clock_gettime is a vDSO call (~20 ns): fine grain enough for 1 µs tasks. */
    const uint64_t end = suite_now_ns() + ns;
    while (suite_now_ns() < end) {
    }
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --workload independent|chain|wavefront|cholesky|cholesky_real --n N\n"
            "          [--spin-ns NS] [--tile TS] [--check full|probe|none] [program options]\n",
            argv0);
    return -1;
}

int suite_parse(int argc, char **argv, suite_opts *o,
                int (*extra)(int argc, char **argv, int *i, void *ctx), void *ctx)
{
    memset(o, 0, sizeof *o);
    o->kind = -1;
    o->tile = 256;
    o->check = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--workload") == 0 && v) {
            o->workload = v;
            o->real = strcmp(v, "cholesky_real") == 0;
            o->kind = o->real ? DAG_CHOLESKY : dag_kind_parse(v);
            i++;
        } else if (strcmp(a, "--n") == 0 && v) {
            o->n = (uint32_t)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--spin-ns") == 0 && v) {
            o->spin_ns = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--tile") == 0 && v) {
            o->tile = (uint32_t)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--check") == 0 && v) {
            o->check = strcmp(v, "full") == 0 ? 2 : strcmp(v, "probe") == 0 ? 1 : 0;
            i++;
        } else if (!(extra && extra(argc, argv, &i, ctx))) {
            return usage(argv[0]);
        }
    }
    if (o->kind < 0 || o->n == 0 || (o->real && (o->tile == 0 || o->n % o->tile)))
        return usage(argv[0]);
#ifndef SUITE_BLAS
    if (o->real) {
        fprintf(stderr, "%s: built without OpenBLAS/LAPACKE: no cholesky_real\n", argv[0]);
        return -1;
    }
#endif
    o->tiles = o->real ? o->n / o->tile : o->n;
    return 0;
}

suite_tile *suite_tiles_alloc(const suite_opts *o)
{
    uint64_t n = dag_tile_count(o->kind, o->tiles);
    suite_tile *t = aligned_alloc(64, n * sizeof *t);
    if (t)
        memset(t, 0, n * sizeof *t);
    return t;
}

int suite_tiles_check(const suite_opts *o, const suite_tile *tiles, int rounds)
{
    uint64_t n = dag_tile_count(o->kind, o->tiles);
    for (uint64_t t = 0; t < n; t++) {
        double want = (double)dag_writes_of_tile(o->kind, o->tiles, t) * rounds;
        if (tiles[t].v[0] != (float)want) {
            fprintf(stderr, "check: tile %llu was written %.0f times, want %.0f\n",
                    (unsigned long long)t, tiles[t].v[0], want);
            return -1;
        }
    }
    return 0;
}

/* A symmetric pseudo-random value in [-0.5, 0.5) for (i, j), i >= j. */
static double entry(uint64_t i, uint64_t j)
{
    uint64_t x = (i * 0x9E3779B97F4A7C15ull) ^ (j + 0x632BE59BD9B4E019ull);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (double)(x >> 11) / 9007199254740992.0 - 0.5;
}

double *suite_matrix_alloc(const suite_opts *o)
{
    return aligned_alloc(64, (size_t)o->n * o->n * sizeof(double));
}

void suite_matrix_fill(const suite_opts *o, double *a)
{
    /* Diagonally dominant and symmetric: SPD, with a well-conditioned factor. */
    const uint64_t n = o->n;
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < n; j++)
            a[i * n + j] = i == j ? (double)n : i > j ? entry(i, j) : entry(j, i);
}

double *suite_matrix_copy(const suite_opts *o, const double *a)
{
    double *c = suite_matrix_alloc(o);
    if (c)
        memcpy(c, a, (size_t)o->n * o->n * sizeof(double));
    return c;
}

#ifdef SUITE_BLAS
void suite_blas_threads(int n)
{
    openblas_set_num_threads(n);
}

int suite_chol_task(const suite_opts *o, double *a, const dag_task *t)
{
    const int ts = (int)o->tile, ld = (int)o->n;
    double *w = suite_chol_tile(o, a, t->ti[t->n_acc - 1], t->tj[t->n_acc - 1]);
    switch (t->op) {
    case OP_POTRF:
        return chol_potrf(w, ts, ld) ? -1 : 0;
    case OP_TRSM:
        chol_trsm(suite_chol_tile(o, a, t->ti[0], t->tj[0]), w, ts, ld);
        return 0;
    case OP_SYRK:
        chol_syrk(suite_chol_tile(o, a, t->ti[0], t->tj[0]), w, ts, ld);
        return 0;
    case OP_GEMM:
        chol_gemm(suite_chol_tile(o, a, t->ti[0], t->tj[0]),
                  suite_chol_tile(o, a, t->ti[1], t->tj[1]), w, ts, ld);
        return 0;
    default:
        return -1;
    }
}

int suite_matrix_check(const suite_opts *o, const double *a0, const double *l, double *residual)
{
    const int n = (int)o->n;
    const size_t nn = (size_t)n * n;
    double norm_a = 0;
    for (size_t i = 0; i < nn; i++)
        norm_a += a0[i] * a0[i];
    norm_a = sqrt(norm_a);
    /* L = the lower triangle of the factorised matrix; its upper part is stale input. */
    double *lo = calloc(nn, sizeof *lo);
    if (!lo)
        return -1;
    for (int i = 0; i < n; i++)
        memcpy(lo + (size_t)i * n, l + (size_t)i * n, (size_t)(i + 1) * sizeof *lo);
    suite_blas_threads(2); /* the check is not timed: use the machine */
    double err = 0;
    if (o->check == 2) {
        /* R = A0 - L Lᵀ on the lower triangle (symmetric: the upper one mirrors it). */
        double *r = malloc(nn * sizeof *r);
        if (!r) {
            free(lo);
            return -1;
        }
        memcpy(r, a0, nn * sizeof *r);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, n, n, -1.0, lo, n, 1.0, r, n);
        for (int i = 0; i < n; i++)
            for (int j = 0; j <= i; j++) {
                double v = r[(size_t)i * n + j];
                err += (i == j ? 1 : 2) * v * v;
            }
        free(r);
        err = sqrt(err) / norm_a;
    } else {
        /* ||(A0 - L Lᵀ) x|| / (||A0||_F ||x||) for four pseudo-random x. */
        double *x = malloc(3 * (size_t)n * sizeof *x), *y = x + n, *z = x + 2 * n;
        if (!x) {
            free(lo);
            return -1;
        }
        for (int v = 0; v < 4; v++) {
            double nx = 0, nr = 0;
            for (int i = 0; i < n; i++) {
                x[i] = entry((uint64_t)v + 7, (uint64_t)i);
                nx += x[i] * x[i];
            }
            memcpy(y, x, (size_t)n * sizeof *y);
            cblas_dtrmv(CblasRowMajor, CblasLower, CblasTrans, CblasNonUnit, n, lo, n, y, 1);
            cblas_dtrmv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, lo, n, y, 1);
            cblas_dsymv(CblasRowMajor, CblasLower, n, 1.0, a0, n, x, 1, 0.0, z, 1);
            for (int i = 0; i < n; i++)
                nr += (z[i] - y[i]) * (z[i] - y[i]);
            double e = sqrt(nr) / (norm_a * sqrt(nx));
            err = e > err ? e : err;
        }
        free(x);
    }
    free(lo);
    *residual = err;
    if (!(err < 1e-10)) {
        fprintf(stderr, "check: residual %.3g >= 1e-10\n", err);
        return -1;
    }
    return 0;
}
#else
void suite_blas_threads(int n)
{
    (void)n;
}
int suite_chol_task(const suite_opts *o, double *a, const dag_task *t)
{
    (void)o, (void)a, (void)t;
    return -1;
}
int suite_matrix_check(const suite_opts *o, const double *a0, const double *l, double *residual)
{
    (void)o, (void)a0, (void)l, (void)residual;
    return -1;
}
#endif

void suite_result(const suite_opts *o, const char *system, const char *config, uint64_t tasks,
                  uint64_t ns, const char *extra)
{
    printf("RESULT system=%s config=%s workload=%s n=%u spin_ns=%llu tasks=%llu ns=%llu%s%s\n",
           system, config, o->workload, o->n, (unsigned long long)o->spin_ns,
           (unsigned long long)tasks, (unsigned long long)ns, extra && *extra ? " " : "",
           extra ? extra : "");
    fflush(stdout);
}
