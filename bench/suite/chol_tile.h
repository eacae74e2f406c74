/* The four tile kernels of a real tiled Cholesky (lower, row-major f64),
 * one OpenBLAS/LAPACKE call each, shared by every system of the suite:
 * the peers call them on tiles of the host matrix, simpler's kernels on the
 * tensor views they receive (leading dimension = the view's row stride). */
#ifndef SUITE_CHOL_TILE_H
#define SUITE_CHOL_TILE_H

#include <cblas.h>
#include <lapacke.h>

/* Akk = L Lᵀ, L into the lower triangle; LAPACKE's info (0 = fine). */
static inline int chol_potrf(double *akk, int ts, int ld)
{
    return LAPACKE_dpotrf_work(LAPACK_ROW_MAJOR, 'L', ts, akk, ld);
}

/* Aik = Aik Lkk⁻ᵀ */
static inline void chol_trsm(const double *lkk, double *aik, int ts, int ld)
{
    cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, ts, ts, 1.0, lkk,
                ld, aik, ld);
}

/* Aii -= Lik Likᵀ (lower triangle) */
static inline void chol_syrk(const double *lik, double *aii, int ts, int ld)
{
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, ts, ts, -1.0, lik, ld, 1.0, aii, ld);
}

/* Aij -= Lik Ljkᵀ */
static inline void chol_gemm(const double *lik, const double *ljk, double *aij, int ts, int ld)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ts, ts, ts, -1.0, lik, ld, ljk, ld, 1.0,
                aij, ld);
}

#endif
