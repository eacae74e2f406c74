/* simpler's real Cholesky tile kernels: OpenBLAS/LAPACKE on the tensor views
 * the core receives. A tile is a ts x ts view of the matrix in device
 * memory; its row stride is the leading dimension. */
#include "simpler/kernel.h"

#include "chol_tile.h"

static double *tile(const uint64_t *args, int i, int *ts, int *ld)
{
    const sp_tensor *t = sp_arg_tensor(args, i);
    *ts = (int)t->shape[0];
    *ld = (int)t->strides[0];
    return sp_tensor_data(t);
}

SP_KERNEL(suite_potrf)
{
    (void)ctx;
    int ts, ld;
    double *a = tile(args, 0, &ts, &ld);
    chol_potrf(a, ts, ld); /* a failure shows in the residual check */
}
SP_KERNEL(suite_trsm)
{
    (void)ctx;
    int ts, ld;
    const double *l = tile(args, 0, &ts, &ld);
    chol_trsm(l, tile(args, 1, &ts, &ld), ts, ld);
}
SP_KERNEL(suite_syrk)
{
    (void)ctx;
    int ts, ld;
    const double *l = tile(args, 0, &ts, &ld);
    chol_syrk(l, tile(args, 1, &ts, &ld), ts, ld);
}
SP_KERNEL(suite_gemm)
{
    (void)ctx;
    int ts, ld;
    const double *li = tile(args, 0, &ts, &ld), *lj = tile(args, 1, &ts, &ld);
    chol_gemm(li, lj, tile(args, 2, &ts, &ld), ts, ld);
}
