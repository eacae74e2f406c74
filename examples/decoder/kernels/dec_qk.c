/* decoder kernel 3 (AIC): S = scale * q_b @ K_blk^T for sequence b
 * (scalar 0) and its j-th KV block (scalar 1); scalar 2 = scale (f32
 * bits). q_b is row b of the QKV projection, columns [0, NH*D), head h at
 * [h*D, (h+1)*D); one KV head serves all NH query heads. Tensors:
 * qkv [B,Hd+2D] IN, key cache [1,NB,bs,D] IN, block_table i32 [B,MB] IN,
 * context_lens i32 [B] IN, S [NH,bs] fresh. Columns past the block's valid
 * rows are -inf (they weigh nothing in the softmax); a bad lookup gives NaN. */
#include <math.h>

#include "decoder/dec_cache.h"

SP_KERNEL(dec_qk)
{
    (void)ctx;
    ex_mat qkv, s;
    dec_cache kc;
    const sp_tensor *table = sp_arg_tensor(args, 2), *lens = sp_arg_tensor(args, 3);
    if (!ex_mat_of(sp_arg_tensor(args, 0), &qkv) || !dec_cache_of(sp_arg_tensor(args, 1), &kc) ||
        !ex_mat_of(sp_arg_tensor(args, 4), &s) || s.cols != kc.bs || s.rows * kc.d > qkv.cols)
        return;
    const int64_t b = (int64_t)args[5], j = (int64_t)args[6], D = kc.d;
    const float scale = ex_arg_f32(args, 7);
    int64_t n;
    const int64_t phys = b < qkv.rows ? dec_block(table, lens, &kc, b, j, &n) : -1;
    for (int64_t h = 0; h < s.rows; h++)
        for (int64_t t = 0; t < s.cols; t++) {
            if (phys < 0) {
                EX_AT(s, h, t) = NAN;
                continue;
            }
            if (t >= n) {
                EX_AT(s, h, t) = -INFINITY;
                continue;
            }
            float acc = 0.0f;
            for (int64_t d = 0; d < D; d++)
                acc += EX_AT(qkv, b, h * D + d) * DEC_CACHE_AT(kc, phys, t, d);
            EX_AT(s, h, t) = acc * scale;
        }
}
