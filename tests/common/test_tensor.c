/* Tensor descriptors: dtype sizes, init, extents, contiguity and views. */
#include <criterion/criterion.h>

#include "simpler/status.h"
#include "simpler/tensor.h"

Test(dtype, sizes_and_names)
{
    cr_assert_eq(sp_dtype_size(SP_DTYPE_F32), 4);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_F16), 2);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_BF16), 2);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_F64), 8);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_I8), 1);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_U16), 2);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_I32), 4);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_U64), 8);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_BOOL), 1);
    cr_assert_str_eq(sp_dtype_name(SP_DTYPE_BF16), "bf16");
}

Test(dtype, unknown_is_zero_not_crash)
{
    cr_assert_eq(sp_dtype_size(SP_DTYPE_INVALID), 0);
    cr_assert_eq(sp_dtype_size(SP_DTYPE_COUNT), 0);
    cr_assert_eq(sp_dtype_size(-5), 0);
    cr_assert_eq(sp_dtype_size(1000), 0);
    cr_assert_str_eq(sp_dtype_name(999), "invalid");
    sp_tensor t;
    int64_t shape[1] = {4};
    cr_assert_eq(sp_tensor_init(&t, 0x1000, 77, 1, shape), SP_EDTYPE);
}

Test(tensor, init_contiguous_row_major)
{
    sp_tensor t;
    int64_t shape[3] = {2, 3, 4};
    cr_assert_eq(sp_tensor_init(&t, 0x1000, SP_DTYPE_F32, 3, shape), SP_OK);
    cr_assert_eq(t.strides[0], 12);
    cr_assert_eq(t.strides[1], 4);
    cr_assert_eq(t.strides[2], 1);
    cr_assert_eq(t.buf_bytes, 96);
    cr_assert_eq(sp_tensor_numel(&t), 24);
    cr_assert_eq(t.owner_task, SP_NO_TASK);
    cr_assert(sp_tensor_is_contiguous(&t));
    cr_assert(sp_tensor_is_valid(&t));
    uint64_t lo, hi;
    cr_assert_eq(sp_tensor_byte_extent(&t, &lo, &hi), SP_OK);
    cr_assert_eq(lo, 0);
    cr_assert_eq(hi, 96);
}

Test(tensor, init_rejects_bad_shapes)
{
    sp_tensor t;
    int64_t zero[2] = {3, 0};
    int64_t huge[2] = {INT64_MAX / 2, 4};
    cr_assert_eq(sp_tensor_init(&t, 0, SP_DTYPE_F32, 2, zero), SP_ESHAPE);
    cr_assert_eq(sp_tensor_init(&t, 0, SP_DTYPE_F32, 2, huge), SP_ESHAPE);
    cr_assert_eq(sp_tensor_init(&t, 0, SP_DTYPE_F32, 0, zero), SP_ESHAPE);
    cr_assert_eq(sp_tensor_init(&t, 0, SP_DTYPE_F32, 6, zero), SP_ESHAPE);
    cr_assert_eq(sp_tensor_init(NULL, 0, SP_DTYPE_F32, 2, zero), SP_EINVAL);
}

Test(tensor, slice_moves_offset_and_keeps_strides)
{
    sp_tensor t, s;
    int64_t shape[2] = {8, 16};
    sp_tensor_init(&t, 0x1000, SP_DTYPE_F32, 2, shape);
    cr_assert_eq(sp_tensor_slice(&t, 0, 2, 3, &s), SP_OK);
    cr_assert_eq(s.offset, 32);
    cr_assert_eq(s.shape[0], 3);
    cr_assert(sp_tensor_is_contiguous(&s));
    uint64_t lo, hi;
    cr_assert_eq(sp_tensor_byte_extent(&s, &lo, &hi), SP_OK);
    cr_assert_eq(lo, 128);
    cr_assert_eq(hi, 5 * 16 * 4);
    /* Column slice: not contiguous, extent spans the rows it touches. */
    cr_assert_eq(sp_tensor_slice(&t, 1, 4, 2, &s), SP_OK);
    cr_assert_not(sp_tensor_is_contiguous(&s));
    cr_assert_eq(sp_tensor_byte_extent(&s, &lo, &hi), SP_OK);
    cr_assert_eq(lo, 16);
    cr_assert_eq(hi, (7 * 16 + 6) * 4);
    cr_assert_eq(sp_tensor_slice(&t, 0, 7, 2, &s), SP_ESHAPE);
    cr_assert_eq(sp_tensor_slice(&t, 2, 0, 1, &s), SP_ESHAPE);
    cr_assert_eq(sp_tensor_slice(&t, 0, -1, 1, &s), SP_ESHAPE);
}

Test(tensor, reshape_and_transpose)
{
    sp_tensor t, r, tr;
    int64_t shape[2] = {4, 6};
    int64_t flat[1] = {24};
    int64_t wrong[2] = {5, 5};
    sp_tensor_init(&t, 0x1000, SP_DTYPE_I32, 2, shape);
    cr_assert_eq(sp_tensor_reshape(&t, 1, flat, &r), SP_OK);
    cr_assert_eq(r.ndim, 1);
    cr_assert_eq(r.shape[0], 24);
    cr_assert_eq(sp_tensor_reshape(&t, 2, wrong, &r), SP_ESHAPE);
    cr_assert_eq(sp_tensor_transpose(&t, 0, 1, &tr), SP_OK);
    cr_assert_eq(tr.shape[0], 6);
    cr_assert_eq(tr.strides[0], 1);
    cr_assert_eq(tr.strides[1], 6);
    cr_assert_not(sp_tensor_is_contiguous(&tr));
    /* A transposed view is not contiguous, so it cannot be reshaped. */
    cr_assert_eq(sp_tensor_reshape(&tr, 1, flat, &r), SP_ESHAPE);
    cr_assert_eq(sp_tensor_transpose(&t, 0, 2, &tr), SP_ESHAPE);
}

Test(tensor, validity_against_buffer)
{
    sp_tensor t;
    int64_t shape[1] = {10};
    sp_tensor_init(&t, 0x1000, SP_DTYPE_F64, 1, shape);
    cr_assert(sp_tensor_is_valid(&t));
    t.offset = 1;
    cr_assert_not(sp_tensor_is_valid(&t));
    t.offset = 0;
    t.strides[0] = 2;
    cr_assert_not(sp_tensor_is_valid(&t));
    t.strides[0] = -1;
    t.offset = 9;
    cr_assert(sp_tensor_is_valid(&t));
    t.offset = 8;
    cr_assert_not(sp_tensor_is_valid(&t));
}
