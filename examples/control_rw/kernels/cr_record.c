/* control_rw kernel 3 (AIV): info = {cnt[0], nrep} with nrep scalar 0: what
 * the count kernel found and how many increments the orchestration chose. */
#include "ex_kernel.h"

SP_KERNEL(cr_record)
{
    (void)ctx;
    const sp_tensor *cnt = sp_arg_tensor(args, 0), *info = sp_arg_tensor(args, 1);
    if (cnt->dtype != SP_DTYPE_I64 || info->dtype != SP_DTYPE_I64 || sp_tensor_numel(info) < 2)
        return;
    int64_t *ip = sp_tensor_data(info);
    ip[ex_elem_offset(info, 0)] = *(const int64_t *)sp_tensor_data(cnt);
    ip[ex_elem_offset(info, 1)] = (int64_t)args[2];
}
