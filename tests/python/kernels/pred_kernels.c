/* test_replay.py's predicated kernel: adds 1 to element 0 of its row. */
#include "simpler/kernel.h"

SP_KERNEL(pred_mark)
{
    (void)ctx;
    float *row = sp_tensor_data(sp_arg_tensor(args, 0));
    row[0] += 1.0f;
}
