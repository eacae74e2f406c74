/* bench/python_overhead.py kernel: marks its row (element 0 = 1.0), so the
 * bench can check that every task ran and wrote into the caller's array,
 * and does nothing else: a task's cost is the runtime's. */
#include "simpler/kernel.h"

SP_KERNEL(overhead_touch)
{
    (void)ctx;
    float *row = sp_tensor_data(sp_arg_tensor(args, 0));
    row[0] = 1.0f;
}
