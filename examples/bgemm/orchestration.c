/* bgemm orchestration: batched tiled GEMM, C[g] = A[g] @ B[g] for each of
 * `groups` independent problems, computed per output tile as
 *     C_tile = sum over k of A_tile(k) @ B_tile(k)
 * with alternating tasks: gemm (AIC) makes the partial product P_k in a
 * runtime-allocated tile, add (AIV) accumulates it into the C tile slice.
 * The gemms of one tile are independent; the adds chain through C_tile.
 * Per output tile: 2*grid_k tasks and 2*grid_k - 1 edges.
 *
 * Args: tensors cfg i64[3] = {tile, grid_k, groups} (IN, a control tensor
 * read with sp_tensor_read_int), A [G,M,K] (IN), B [G,K,N] (IN),
 * C [G,M,N] (OUT), with K = grid_k * tile and M, N multiples of tile. */
#include "simpler/orchestration.h"
#include "bgemm_kernels.h"

/* func_ids: examples/CMakeLists.txt names each kernel once and
 * simpler_add_callable generates bgemm_kernels.h with SP_FUNC_<kernel>. */
enum { BG_GEMM = SP_FUNC_bg_gemm, BG_ADD = SP_FUNC_bg_add };

SP_ORCH_CONFIG(bgemm_config)
{
    cfg->tensor_count = 4;
    cfg->scalar_count = 0;
}

/* The tile [r0, r0+tile) x [c0, c0+tile) of batch g of a [G,R,C] tensor. */
static int tile_view(const sp_tensor *x, int64_t g, int64_t r0, int64_t c0, int64_t tile,
                     sp_tensor *out)
{
    sp_tensor v;
    int rc = sp_tensor_slice(x, 0, g, 1, &v);
    if (rc == SP_OK)
        rc = sp_tensor_slice(&v, 1, r0, tile, &v);
    if (rc == SP_OK)
        rc = sp_tensor_slice(&v, 2, c0, tile, out);
    return rc;
}

SP_ORCHESTRATION(bgemm_orch)
{
    const sp_tensor *cfg = &args->tensors[0];
    sp_tensor A = args->tensors[1], B = args->tensors[2], C = args->tensors[3];
    int64_t tile = sp_tensor_read_int(o, cfg, 0);
    int64_t grid_k = sp_tensor_read_int(o, cfg, 1);
    int64_t groups = sp_tensor_read_int(o, cfg, 2);
    if (sp_orch_error(o))
        return;
    if (A.ndim != 3 || B.ndim != 3 || C.ndim != 3 || tile < 1 || grid_k < 1 || groups < 1 ||
        A.shape[0] != groups || B.shape[0] != groups || C.shape[0] != groups ||
        A.shape[2] != grid_k * tile || B.shape[1] != grid_k * tile || A.shape[1] != C.shape[1] ||
        B.shape[2] != C.shape[2] || C.shape[1] % tile || C.shape[2] % tile) {
        sp_orch_fatal(o, SP_ESHAPE,
                      "bgemm: cfg {tile=%lld, grid_k=%lld, groups=%lld} does not fit "
                      "A [G,M,K], B [G,K,N], C [G,M,N]",
                      (long long)tile, (long long)grid_k, (long long)groups);
        return;
    }
    const int64_t grid_m = C.shape[1] / tile, grid_n = C.shape[2] / tile;
    const int64_t pshape[2] = {tile, tile};

    for (int64_t g = 0; g < groups; g++)
        for (int64_t mi = 0; mi < grid_m; mi++)
            for (int64_t ni = 0; ni < grid_n; ni++) {
                sp_tensor c_tile;
                if (tile_view(&C, g, mi * tile, ni * tile, tile, &c_tile) != SP_OK) {
                    sp_orch_fatal(o, SP_ESHAPE, "bgemm: C tile (%lld,%lld,%lld) out of range",
                                  (long long)g, (long long)mi, (long long)ni);
                    return;
                }
                for (int64_t k = 0; k < grid_k; k++) {
                    sp_tensor a_tile, b_tile, p = sp_tensor_spec(SP_DTYPE_F32, 2, pshape);
                    if (tile_view(&A, g, mi * tile, k * tile, tile, &a_tile) != SP_OK ||
                        tile_view(&B, g, k * tile, ni * tile, tile, &b_tile) != SP_OK) {
                        sp_orch_fatal(o, SP_ESHAPE, "bgemm: A/B tile k=%lld out of range",
                                      (long long)k);
                        return;
                    }
                    sp_task t = sp_task_aic(BG_GEMM);
                    sp_task_in(&t, &a_tile);
                    sp_task_in(&t, &b_tile);
                    sp_task_out(&t, &p);
                    if (sp_submit(o, &t) < 0)
                        return;

                    t = sp_task_aiv(BG_ADD);
                    sp_task_in(&t, &p);
                    /* The first partial overwrites C's unstaged contents. */
                    sp_task_arg(&t, &c_tile, k == 0 ? SP_OUT_EXISTING : SP_INOUT);
                    sp_task_scalar(&t, k == 0);
                    if (sp_submit(o, &t) < 0)
                        return;
                }
            }
}
