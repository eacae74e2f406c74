/* What the decoder's attention kernels share: a layer's paged KV cache
 * view [1,NB,bs,D] (a slice of the [L,NB,bs,D] cache) and the lookup of a
 * sequence's j-th block through the block table and context lengths.
 * Device-side: only the kernel ABI (through ex_kernel.h).
 *
 * The kernels read the block table and the context lengths themselves, so
 * the graph a layer submits depends on the geometry alone (B, the table's
 * width MB) and one recorded layer serves every layer and decode step.
 * A lookup that is out of range (a context length outside 1..MB*bs, a
 * physical block outside 0..NB-1) makes the kernel write NaN, which the
 * example's check names. */
#ifndef SP_EXAMPLES_DECODER_DEC_CACHE_H
#define SP_EXAMPLES_DECODER_DEC_CACHE_H

#include "ex_kernel.h"

typedef struct dec_cache {
    float *p;
    int64_t nb, bs, d;
    int64_t s_blk, s_row, s_d;
} dec_cache;

/* Element (blk, row, col) of the cache. */
#define DEC_CACHE_AT(c, blk, row, col)                                                             \
    ((c).p[(int64_t)(blk) * (c).s_blk + (int64_t)(row) * (c).s_row + (int64_t)(col) * (c).s_d])

static inline bool dec_cache_of(const sp_tensor *t, dec_cache *c)
{
    if (t->dtype != SP_DTYPE_F32 || t->ndim != 4 || t->shape[0] != 1)
        return false;
    c->p = (float *)sp_tensor_data(t);
    c->nb = t->shape[1];
    c->bs = t->shape[2];
    c->d = t->shape[3];
    c->s_blk = t->strides[1];
    c->s_row = t->strides[2];
    c->s_d = t->strides[3];
    return true;
}

/* Element i (row-major over the view) of an i32 tensor. */
static inline int64_t dec_i32_at(const sp_tensor *t, int64_t i)
{
    return ((const int32_t *)sp_tensor_data(t))[ex_elem_offset(t, i)];
}

/* Sequence b's j-th block: its physical block (or -1 when the table or
 * the context length is out of range) and in *n how many of its rows
 * hold tokens (0 for a block past the context). table i32 [B,MB],
 * lens i32 [B]. */
static inline int64_t dec_block(const sp_tensor *table, const sp_tensor *lens, const dec_cache *c,
                                int64_t b, int64_t j, int64_t *n)
{
    *n = 0;
    if (table->dtype != SP_DTYPE_I32 || lens->dtype != SP_DTYPE_I32 || table->ndim != 2 ||
        lens->ndim != 1 || b < 0 || b >= lens->shape[0] || b >= table->shape[0] || j < 0 ||
        j >= table->shape[1])
        return -1;
    const int64_t mb = table->shape[1], ctx = dec_i32_at(lens, b);
    if (ctx < 1 || ctx > mb * c->bs)
        return -1;
    const int64_t phys = dec_i32_at(table, b * mb + j);
    if (phys < 0 || phys >= c->nb)
        return -1;
    const int64_t left = ctx - j * c->bs;
    *n = left < 0 ? 0 : left > c->bs ? c->bs : left;
    return phys;
}

#endif
