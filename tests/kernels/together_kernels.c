/* Kernels of the features-together tests (tests/scene/
 * test_features_together.c, which computes the same sequentially). All
 * views are 1-D and contiguous. */
#include <signal.h>

#include "simpler/kernel.h"
#include "simpler/tensor.h"

#define TG_CRASH 0xc0ffeeull /* a data scalar that crashes together_fold */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xbf58476d1ce4e5b9ull;
}

/* [0] src (i32, IN), [1] dst (i32, OUT or OUT_EXISTING), [2] add: dst =
 * src + add, the router whose output the predicates read. */
SP_KERNEL(together_route)
{
    (void)ctx;
    const sp_tensor *src = sp_arg_tensor(args, 0), *dst = sp_arg_tensor(args, 1);
    const int32_t *s = sp_tensor_data(src);
    int32_t *d = sp_tensor_data(dst);
    for (int64_t i = 0; i < dst->shape[0]; i++)
        d[i] = s[i] + (int32_t)args[2];
}

/* [0] out (u64, INOUT), [1] a (u64, IN), [2] salt, [3] s1, [4] s2:
 * out[e] = mix(mix(mix(mix(salt, s1), s2), out[e]), a[e % len(a)]). */
SP_KERNEL(together_mix)
{
    (void)ctx;
    const sp_tensor *out = sp_arg_tensor(args, 0), *a = sp_arg_tensor(args, 1);
    uint64_t *o = sp_tensor_data(out);
    const uint64_t *pa = sp_tensor_data(a);
    for (int64_t e = 0; e < out->shape[0]; e++)
        o[e] = mix(mix(mix(mix(args[2], args[3]), args[4]), o[e]), pa[e % a->shape[0]]);
}

/* [0] out (u64 [S], OUT_EXISTING), [1] a (u64 [J * S], IN), [2] s1, [3]
 * s2: out[e] = the mix of mix(s1, s2) with a[j * S + e] for every j. s1
 * == TG_CRASH raises SIGBUS (a kernel crash the data decides). */
SP_KERNEL(together_fold)
{
    (void)ctx;
    if (args[2] == TG_CRASH)
        raise(SIGBUS);
    const sp_tensor *out = sp_arg_tensor(args, 0), *a = sp_arg_tensor(args, 1);
    uint64_t *o = sp_tensor_data(out);
    const uint64_t *pa = sp_tensor_data(a);
    int64_t s = out->shape[0], j = a->shape[0] / s;
    for (int64_t e = 0; e < s; e++) {
        uint64_t h = mix(args[2], args[3]);
        for (int64_t k = 0; k < j; k++)
            h = mix(h, pa[k * s + e]);
        o[e] = h;
    }
}

/* [0] out (u64, OUT_EXISTING), [1] value: out[0] = value. */
SP_KERNEL(together_store)
{
    (void)ctx;
    *(uint64_t *)sp_tensor_data(sp_arg_tensor(args, 0)) = args[1];
}
