/* Kernels of the hbg replay tests (replay_hbg_orch.c). replay_add: args
 * [0] in, [1] out (u64 rows of one shape), [2] s: out = in + s; s ==
 * REPLAY_CRASH faults (a kernel crash in a replayed run). replay_mac: [0] a,
 * [1] b, [2] out, [3] s: out = a * b + s. */
#include "simpler/kernel.h"
#include "simpler/tensor.h"

#define REPLAY_CRASH 0xc0ffeeull

SP_KERNEL(replay_add)
{
    (void)ctx;
    if (args[2] == REPLAY_CRASH) {
        volatile uintptr_t bad = 16; /* volatile: the compiler cannot see it is invalid */
        *(volatile int *)bad = 1;
    }
    const sp_tensor *in = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    const uint64_t *src = sp_tensor_data(in);
    uint64_t *dst = sp_tensor_data(out);
    int64_t n = sp_tensor_numel(in);
    for (int64_t j = 0; j < n; j++)
        dst[j] = src[j] + args[2];
}

SP_KERNEL(replay_mac)
{
    (void)ctx;
    const sp_tensor *a = sp_arg_tensor(args, 0), *b = sp_arg_tensor(args, 1);
    const sp_tensor *out = sp_arg_tensor(args, 2);
    const uint64_t *pa = sp_tensor_data(a), *pb = sp_tensor_data(b);
    uint64_t *dst = sp_tensor_data(out);
    int64_t n = sp_tensor_numel(a);
    for (int64_t j = 0; j < n; j++)
        dst[j] = pa[j] * pb[j] + args[3];
}
