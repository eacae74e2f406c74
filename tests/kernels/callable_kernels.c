/* Two trivial kernels in one shared object, packed by the callable tests
 * (they only need real binaries with known entry names). */
#include "simpler/kernel.h"

/* args: [0] tensor, [1] scalar: fills the tensor's first element. */
SP_KERNEL(callable_fill)
{
    (void)ctx;
    *(uint64_t *)sp_tensor_data(sp_arg_tensor(args, 0)) = args[1];
}

/* args: [0] in tensor, [1] out tensor: copies the first element. */
SP_KERNEL(callable_copy)
{
    (void)ctx;
    *(uint64_t *)sp_tensor_data(sp_arg_tensor(args, 1)) =
        *(const uint64_t *)sp_tensor_data(sp_arg_tensor(args, 0));
}
