/* Kernels for tests/scene/test_edges_both_runtimes.c: u64 2-D views (any
 * strides), one job each. A kernel with n inputs sums every element of
 * them, plus one, into s; a "set" kernel then writes out[e] := s + e, an
 * "acc" kernel out[e] := out[e] * 3 + s + e (e the element's row-major
 * index in the view). Order-sensitive, so a missing edge shows in the
 * bytes; the test's host reference runs the same arithmetic. */
#include "simpler/kernel.h"
#include "simpler/tensor.h"

static uint64_t *at(const sp_tensor *t, int64_t r, int64_t c)
{
    return (uint64_t *)sp_tensor_data(t) + r * t->strides[0] + c * t->strides[1];
}

static void apply(const uint64_t *args, int n_in, int acc)
{
    uint64_t s = 1;
    for (int k = 0; k < n_in; k++) {
        const sp_tensor *t = sp_arg_tensor(args, k);
        for (int64_t r = 0; r < t->shape[0]; r++)
            for (int64_t c = 0; c < t->shape[1]; c++)
                s += *at(t, r, c);
    }
    const sp_tensor *o = sp_arg_tensor(args, n_in);
    for (int64_t r = 0; r < o->shape[0]; r++)
        for (int64_t c = 0; c < o->shape[1]; c++) {
            uint64_t *d = at(o, r, c), e = (uint64_t)(r * o->shape[1] + c);
            *d = (acc ? *d * 3 : 0) + s + e;
        }
}

SP_KERNEL(edges_set1)
{
    (void)ctx;
    apply(args, 1, 0);
}

SP_KERNEL(edges_acc0)
{
    (void)ctx;
    apply(args, 0, 1);
}

SP_KERNEL(edges_acc1)
{
    (void)ctx;
    apply(args, 1, 1);
}

SP_KERNEL(edges_acc2)
{
    (void)ctx;
    apply(args, 2, 1);
}
