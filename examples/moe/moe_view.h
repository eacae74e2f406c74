/* What the moe kernels share: one expert's rows of the per-expert buffers
 * and its token count. Device-side: only the kernel ABI (through
 * ex_kernel.h).
 *
 * Every expert kernel takes the router's counts [E] (i32) and its expert
 * index (a scalar) and works on the first counts[e] rows only, so an
 * expert with no token does nothing even where its tasks run (a runtime
 * without predicates, or the "predicated=0" variant): the result is the
 * same whether its tasks are skipped or run. With `padded` (scalar 1 of
 * the expert kernels) the MLP kernels compute all T rows instead, the cost
 * an empty expert has when its tasks run with static shapes. */
#ifndef SP_EXAMPLES_MOE_MOE_VIEW_H
#define SP_EXAMPLES_MOE_MOE_VIEW_H

#include "ex_kernel.h"

/* Element i (row-major over the view) of an i32 tensor. */
static inline int64_t moe_i32_at(const sp_tensor *t, int64_t i)
{
    return ((const int32_t *)sp_tensor_data(t))[ex_elem_offset(t, i)];
}

/* Expert e's token count, clamped to 0..cap (-1 if counts is not an i32
 * vector holding e). */
static inline int64_t moe_count(const sp_tensor *counts, uint64_t e, int64_t cap)
{
    if (counts->dtype != SP_DTYPE_I32 || counts->ndim != 1 || (int64_t)e >= counts->shape[0])
        return -1;
    int64_t n = moe_i32_at(counts, (int64_t)e);
    return n < 0 ? 0 : n > cap ? cap : n;
}

/* The rows expert e's MLP kernels compute: its count, or all `cap` rows
 * when `padded` (static shapes, as a kernel built for a fixed capacity
 * would: the rows past the count are zeros the gather wrote, and the
 * scatter never reads them). -1 for bad counts. */
static inline int64_t moe_rows(const sp_tensor *counts, uint64_t e, int64_t cap, uint64_t padded)
{
    const int64_t n = moe_count(counts, e, cap);
    return n < 0 ? -1 : padded ? cap : n;
}

#endif
