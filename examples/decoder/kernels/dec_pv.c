/* decoder kernel 5 (AIC): O = P @ V_blk for sequence b (scalar 0) and its
 * j-th KV block (scalar 1), over the block's valid rows only: rows past
 * the context were never written and may hold anything. Tensors:
 * P [NH,bs] IN, value cache [1,NB,bs,D] IN, block_table i32 [B,MB] IN,
 * context_lens i32 [B] IN, O [NH,D] fresh. A bad lookup gives NaN. */
#include <math.h>

#include "decoder/dec_cache.h"

SP_KERNEL(dec_pv)
{
    (void)ctx;
    ex_mat p, o;
    dec_cache vc;
    const sp_tensor *table = sp_arg_tensor(args, 2), *lens = sp_arg_tensor(args, 3);
    if (!ex_mat_of(sp_arg_tensor(args, 0), &p) || !dec_cache_of(sp_arg_tensor(args, 1), &vc) ||
        !ex_mat_of(sp_arg_tensor(args, 4), &o) || p.cols != vc.bs || o.rows != p.rows ||
        o.cols != vc.d)
        return;
    const int64_t b = (int64_t)args[5], j = (int64_t)args[6];
    int64_t n;
    const int64_t phys = dec_block(table, lens, &vc, b, j, &n);
    for (int64_t h = 0; h < o.rows; h++)
        for (int64_t d = 0; d < o.cols; d++) {
            float acc = phys < 0 ? NAN : 0.0f;
            for (int64_t t = 0; t < n; t++)
                acc += EX_AT(p, h, t) * DEC_CACHE_AT(vc, phys, t, d);
            EX_AT(o, h, d) = acc;
        }
}
