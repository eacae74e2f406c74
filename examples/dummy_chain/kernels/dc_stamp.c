/* dummy_chain kernel 0 (AIV): log[pos] = counter; counter += 1, where pos
 * is scalar 0. Run in the chain's order, log ends as 0, 1, 2, ...; any
 * reordering or overlap leaves another permutation (or a repeat) behind.
 * Tensors: counter i64 [1], log i64 [stamps]. */
#include "ex_kernel.h"

SP_KERNEL(dc_stamp)
{
    (void)ctx;
    const sp_tensor *counter = sp_arg_tensor(args, 0), *log = sp_arg_tensor(args, 1);
    const int64_t pos = (int64_t)args[2];
    if (counter->dtype != SP_DTYPE_I64 || log->dtype != SP_DTYPE_I64 || pos < 0 ||
        pos >= sp_tensor_numel(log))
        return;
    int64_t *c = sp_tensor_data(counter);
    int64_t *l = sp_tensor_data(log);
    l[ex_elem_offset(log, pos)] = *c;
    *c += 1;
}
