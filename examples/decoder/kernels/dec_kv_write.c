/* decoder kernel 2 (AIV): append the step's token to the layer's KV cache.
 * For each sequence b the new token is the last of its context: position
 * p = context_lens[b] - 1, stored in block block_table[b, p / bs], row
 * p % bs. Its key and value are columns [Hd, Hd+D) and [Hd+D, Hd+2D) of
 * the QKV projection. Tensors: qkv [B,Hd+2D] IN, block_table i32 [B,MB] IN,
 * context_lens i32 [B] IN, key cache and value cache [1,NB,bs,D] INOUT.
 * A sequence whose lookup is out of range is left alone (the check sees
 * the missing token). */
#include "decoder/dec_cache.h"

SP_KERNEL(dec_kv_write)
{
    (void)ctx;
    ex_mat qkv;
    dec_cache kc, vc;
    const sp_tensor *table = sp_arg_tensor(args, 1), *lens = sp_arg_tensor(args, 2);
    if (!ex_mat_of(sp_arg_tensor(args, 0), &qkv) || !dec_cache_of(sp_arg_tensor(args, 3), &kc) ||
        !dec_cache_of(sp_arg_tensor(args, 4), &vc) || kc.d != vc.d || kc.bs != vc.bs ||
        kc.nb != vc.nb || qkv.cols < 2 * kc.d)
        return;
    const int64_t D = kc.d, Hd = qkv.cols - 2 * D;
    for (int64_t b = 0; b < qkv.rows; b++) {
        if (lens->ndim != 1 || b >= lens->shape[0] || lens->dtype != SP_DTYPE_I32)
            return;
        const int64_t pos = dec_i32_at(lens, b) - 1;
        int64_t n;
        const int64_t phys = dec_block(table, lens, &kc, b, pos / kc.bs, &n);
        if (pos < 0 || phys < 0)
            continue;
        for (int64_t d = 0; d < D; d++) {
            DEC_CACHE_AT(kc, phys, pos % kc.bs, d) = EX_AT(qkv, b, Hd + d);
            DEC_CACHE_AT(vc, phys, pos % vc.bs, d) = EX_AT(qkv, b, Hd + D + d);
        }
    }
}
