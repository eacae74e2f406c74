/* Kernels for the graph-task tests (tests/scene/test_graph_tasks.c). All
 * tensors are 1-D u64 views. */
#include "simpler/kernel.h"

static uint64_t *elem(const sp_tensor *t, int64_t e)
{
    return (uint64_t *)(uintptr_t)t->addr + t->offset + e * t->strides[0];
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xbf58476d1ce4e5b9ull;
}

/* args: [0] out, [1] in1, [2] in2 (tensors), [3] salt, [4] graph scalar,
 * [5] 1: out is read too (INOUT). out[e] = mix of all of them, so any
 * reordering against a dependency changes the bytes. */
SP_KERNEL(graph_mix)
{
    (void)ctx;
    const sp_tensor *out = sp_arg_tensor(args, 0), *a = sp_arg_tensor(args, 1),
                    *b = sp_arg_tensor(args, 2);
    for (int64_t e = 0; e < out->shape[0]; e++) {
        uint64_t h = mix(args[3], args[4]);
        if (args[5])
            h = mix(h, *elem(out, e));
        h = mix(h, *elem(a, e % a->shape[0]));
        h = mix(h, *elem(b, e % b->shape[0]));
        *elem(out, e) = h;
    }
}

/* args: [0] out, [1] value: out[0] = value. */
SP_KERNEL(graph_store)
{
    (void)ctx;
    *elem(sp_arg_tensor(args, 0), 0) = args[1];
}
