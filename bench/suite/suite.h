/* What every measuring program of the suite shares: the command line, the
 * task bodies, the correctness checks and the one RESULT line that
 * bench/run parses. One program run = one process = one sample.
 *
 *   <program> --workload independent|chain|wavefront|cholesky|cholesky_real
 *             --n N [--spin-ns NS] [--tile TS] [--check full|probe|none]
 *
 * n is the task count (independent, chain), the lattice side (wavefront),
 * tiles per side (cholesky) or the matrix order (cholesky_real, tile TS).
 * The synthetic graphs run twice per process, first with empty kernels as a
 * warm-up, then timed with --spin-ns; cholesky_real runs once. */
#ifndef SUITE_H
#define SUITE_H

#include <stdint.h>

#include "dag.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct suite_opts {
    int kind;       /* dag_kind */
    int real;       /* cholesky_real: BLAS tile kernels on an f64 matrix */
    uint32_t n;     /* see above */
    uint32_t tiles; /* DAG size parameter: n, or n / tile for cholesky_real */
    uint32_t tile;  /* cholesky_real tile order */
    uint64_t spin_ns;
    int check; /* 0 none, 1 probe, 2 full (cholesky_real) */
    const char *workload;
} suite_opts;

/* One synthetic tile: a 64-byte line whose first float counts its writers. */
typedef struct suite_tile {
    float v[16];
} __attribute__((aligned(64))) suite_tile;

uint64_t suite_now_ns(void);
/* Busy-wait ns nanoseconds (a Task Bench-style compute kernel). */
void suite_spin(uint64_t ns);

/* Parse the common options; unknown ones are left to the caller when
 * `extra` is given (it returns 1 if it consumed argv[*i], advancing *i).
 * Returns 0, or prints usage and returns -1. */
int suite_parse(int argc, char **argv, suite_opts *o,
                int (*extra)(int argc, char **argv, int *i, void *ctx), void *ctx);

/* Zeroed synthetic tiles for the graph (NULL on allocation failure). */
suite_tile *suite_tiles_alloc(const suite_opts *o);
/* The synthetic task body: spin, then count the write on the written tile. */
static inline void suite_task_body(suite_tile *tiles, uint32_t written_tile, uint64_t spin_ns)
{
    if (spin_ns)
        suite_spin(spin_ns);
    tiles[written_tile].v[0] += 1.0f;
}
/* Every tile's counter equals its writers times `rounds`; 0 or -1 (printed). */
int suite_tiles_check(const suite_opts *o, const suite_tile *tiles, int rounds);

/* cholesky_real: the matrix (n x n, diagonally dominant SPD), its copy for
 * the check, and the check itself (residual ||A - L L^T|| / ||A|| into
 * *residual, full Frobenius or a 4-vector probe). 0 or -1. */
double *suite_matrix_alloc(const suite_opts *o);
double *suite_matrix_copy(const suite_opts *o, const double *a);
void suite_matrix_fill(const suite_opts *o, double *a);
int suite_matrix_check(const suite_opts *o, const double *a0, const double *l, double *residual);
/* Run one Cholesky task on the tiles of a (row-major, leading dimension n). */
int suite_chol_task(const suite_opts *o, double *a, const dag_task *t);
static inline double *suite_chol_tile(const suite_opts *o, double *a, uint32_t ti, uint32_t tj)
{
    return a + ((uint64_t)ti * o->n + tj) * o->tile;
}
/* Sets OpenBLAS's thread count (1 inside task kernels). */
void suite_blas_threads(int n);

/* Print the RESULT line: system, config, tasks, timed ns, then "k=v ..." extras. */
void suite_result(const suite_opts *o, const char *system, const char *config, uint64_t tasks,
                  uint64_t ns, const char *extra);

#ifdef __cplusplus
}
#endif

#endif
