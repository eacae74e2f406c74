/* Walking sp_tensor views inside the examples' kernels: a strided 2-D f32
 * matrix and the element offset of a row-major index. Device-side: it
 * includes only the kernel ABI, never a host header.
 *
 * Kernels cannot report errors, so a view they cannot walk (leading
 * dimensions other than 1 for a matrix) makes them return without writing;
 * the example's golden check then names the failure. */
#ifndef SP_EXAMPLES_EX_KERNEL_H
#define SP_EXAMPLES_EX_KERNEL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simpler/kernel.h"

/* An f32 matrix view: element (i, j) is p[i * rs + j * cs]. */
typedef struct ex_mat {
    float *p;
    int64_t rows, cols, rs, cs;
} ex_mat;

#define EX_AT(m, i, j) ((m).p[(int64_t)(i) * (m).rs + (int64_t)(j) * (m).cs])

/* The last two dimensions of `t` as a matrix (a 1-D view is one row).
 * Leading dimensions must be 1: a tile sliced out of a batched tensor keeps
 * them, and a strided slice cannot be reshaped away. Returns false if not. */
static inline bool ex_mat_of(const sp_tensor *t, ex_mat *m)
{
    if (t->dtype != SP_DTYPE_F32 || t->ndim < 1 || t->ndim > SP_MAX_DIMS)
        return false;
    for (int d = 0; d + 2 < t->ndim; d++)
        if (t->shape[d] != 1)
            return false;
    int last = t->ndim - 1;
    m->p = (float *)sp_tensor_data(t);
    m->cols = t->shape[last];
    m->cs = t->strides[last];
    m->rows = t->ndim >= 2 ? t->shape[last - 1] : 1;
    m->rs = t->ndim >= 2 ? t->strides[last - 1] : 0;
    return true;
}

/* Element offset (from sp_tensor_data) of row-major index `i` over the view. */
static inline int64_t ex_elem_offset(const sp_tensor *t, int64_t i)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->strides[d];
        i /= t->shape[d];
    }
    return off;
}

/* The part [*lo, *hi) of n elements that SPMD block ctx->block_idx owns. */
static inline void ex_block_range(const sp_kernel_ctx *ctx, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t blocks = ctx->block_num ? ctx->block_num : 1;
    int64_t per = (n + blocks - 1) / blocks;
    *lo = per * ctx->block_idx;
    *hi = *lo + per;
    if (*lo > n)
        *lo = n;
    if (*hi > n)
        *hi = n;
}

/* An f32 scalar argument (its bits in the low half of the u64). */
static inline float ex_arg_f32(const uint64_t *args, int i)
{
    uint32_t bits = (uint32_t)args[i];
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

#endif
