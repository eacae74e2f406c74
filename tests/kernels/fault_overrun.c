/* Kernels for the checking-mode and dependency tests (issue 12, items 4,
 * 4b, 4c): one that writes a value over its view and, on purpose, some
 * elements past its end or before its start; one that copies a view. Both
 * can sleep first, to be the slow side of a race a missing edge would lose.
 * Built without sanitizers (tests/CMakeLists.txt, fault_ prefix): the stray
 * writes must land in device memory, not in a sanitizer report. */
#include <time.h>

#include "simpler/kernel.h"
#include "simpler/tensor.h"

static void nap_ms(uint64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (ms && nanosleep(&ts, &ts) != 0)
        ;
}

/* args: [0] f32 view (contiguous rows), [1] value, [2] extra elements
 * (int64: > 0 past the end, < 0 before the start), [3] sleep ms. */
SP_KERNEL(ov_fill)
{
    (void)ctx;
    const sp_tensor *t = sp_arg_tensor(args, 0);
    float *p = sp_tensor_data(t), v = (float)args[1];
    int64_t n = sp_tensor_numel(t), extra = (int64_t)args[2];
    nap_ms(args[3]);
    for (int64_t i = 0; i < n; i++)
        p[i] = v;
    for (int64_t i = 0; i < extra; i++)
        ((volatile float *)p)[n + i] = v;
    for (int64_t i = 1; i <= -extra; i++)
        ((volatile float *)p)[-i] = v;
}

/* args: [0] f32 view in, [1] f32 view out of as many elements (both
 * contiguous rows of 16), [2] sleep ms before reading. */
SP_KERNEL(ov_copy)
{
    (void)ctx;
    const sp_tensor *in = sp_arg_tensor(args, 0), *out = sp_arg_tensor(args, 1);
    nap_ms(args[2]);
    int64_t rows = in->ndim == 2 ? in->shape[0] : 1, cols = in->shape[in->ndim - 1];
    const float *s = sp_tensor_data(in);
    float *d = sp_tensor_data(out);
    int64_t ss = in->ndim == 2 ? in->strides[0] : cols;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            d[r * cols + c] = s[r * ss + c];
}
