/* Pure functions on dtypes and tensor descriptors: sizes, extents,
 * contiguity and views. Header-only so that orchestrations and kernels use
 * them without linking anything of the runtime. None touches device memory;
 * views validate against the buffer and return SP_ESHAPE when they leave it. */
#ifndef SIMPLER_TENSOR_H
#define SIMPLER_TENSOR_H

#include <stdbool.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/types.h"

/* Bytes per element of a dtype; 0 for an unknown dtype. */
static inline size_t sp_dtype_size(int dtype)
{
    switch (dtype) {
    case SP_DTYPE_F64:
    case SP_DTYPE_I64:
    case SP_DTYPE_U64:
        return 8;
    case SP_DTYPE_F32:
    case SP_DTYPE_I32:
    case SP_DTYPE_U32:
        return 4;
    case SP_DTYPE_F16:
    case SP_DTYPE_BF16:
    case SP_DTYPE_I16:
    case SP_DTYPE_U16:
        return 2;
    case SP_DTYPE_I8:
    case SP_DTYPE_U8:
    case SP_DTYPE_BOOL:
        return 1;
    default:
        return 0;
    }
}

/* Short name of a dtype ("f32"); "invalid" for an unknown dtype. */
static inline const char *sp_dtype_name(int dtype)
{
    switch (dtype) {
    case SP_DTYPE_F32:
        return "f32";
    case SP_DTYPE_F16:
        return "f16";
    case SP_DTYPE_BF16:
        return "bf16";
    case SP_DTYPE_F64:
        return "f64";
    case SP_DTYPE_I8:
        return "i8";
    case SP_DTYPE_U8:
        return "u8";
    case SP_DTYPE_I16:
        return "i16";
    case SP_DTYPE_U16:
        return "u16";
    case SP_DTYPE_I32:
        return "i32";
    case SP_DTYPE_U32:
        return "u32";
    case SP_DTYPE_I64:
        return "i64";
    case SP_DTYPE_U64:
        return "u64";
    case SP_DTYPE_BOOL:
        return "bool";
    default:
        return "invalid";
    }
}

/* Bytes per element of the view; 0 for an unknown dtype. */
static inline size_t sp_tensor_elem_size(const sp_tensor *t)
{
    return sp_dtype_size(t->dtype);
}

/* Fill `t` as a contiguous row-major view of a whole buffer at `addr`.
 * Returns 0, or SP_EINVAL / SP_EDTYPE / SP_ESHAPE on bad input. */
static inline int sp_tensor_init(sp_tensor *t, uint64_t addr, int dtype, int ndim,
                                 const int64_t *shape)
{
    if (!t || (ndim > 0 && !shape))
        return SP_EINVAL;
    if (!sp_dtype_size(dtype))
        return SP_EDTYPE;
    if (ndim < 1 || ndim > SP_MAX_DIMS)
        return SP_ESHAPE;
    memset(t, 0, sizeof *t);
    t->addr = addr;
    t->dtype = (uint8_t)dtype;
    t->ndim = (uint8_t)ndim;
    t->owner_task = SP_NO_TASK;
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] < 1 || stride > INT64_MAX / shape[d])
            return SP_ESHAPE;
        t->shape[d] = shape[d];
        t->strides[d] = stride;
        stride *= shape[d];
    }
    if ((uint64_t)stride > UINT64_MAX / sp_dtype_size(dtype))
        return SP_ESHAPE;
    t->buf_bytes = (uint64_t)stride * sp_dtype_size(dtype);
    return SP_OK;
}

/* Number of elements of the view; 0 for a malformed view. */
static inline int64_t sp_tensor_numel(const sp_tensor *t)
{
    if (t->ndim < 1 || t->ndim > SP_MAX_DIMS)
        return 0;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        /* An overflow-checked multiply: no division per dimension. */
        if (t->shape[d] < 1 || __builtin_mul_overflow(n, t->shape[d], &n))
            return 0;
    return n;
}

/* Byte range [*lo, *hi) of the buffer that the view touches.
 * Returns 0, or SP_ESHAPE for an empty or malformed view. */
static inline int sp_tensor_byte_extent(const sp_tensor *t, uint64_t *lo, uint64_t *hi)
{
    size_t es = sp_tensor_elem_size(t);
    /* The common view first, in one walk: a shape whose element count fits,
     * strides >= 0 and every sum inside 64 bits give the answer of the exact
     * checks below at a fraction of their cost; anything else meets them. */
    if (es && t->ndim >= 1 && t->ndim <= SP_MAX_DIMS && t->offset >= 0) {
        int64_t n = 1;
        uint64_t last = (uint64_t)t->offset, span, end;
        int d = 0;
        for (; d < t->ndim; d++) {
            int64_t sh = t->shape[d], st = t->strides[d];
            if (sh < 1 || st < 0 || __builtin_mul_overflow(n, sh, &n) ||
                __builtin_mul_overflow((uint64_t)st, (uint64_t)(sh - 1), &span) ||
                __builtin_add_overflow(last, span, &last))
                break;
        }
        if (d == t->ndim && !__builtin_add_overflow(last, 1, &end) &&
            !__builtin_mul_overflow(end, es, &end)) {
            *lo = (uint64_t)t->offset * es;
            *hi = end;
            return SP_OK;
        }
    }
    if (!es || sp_tensor_numel(t) == 0 || t->offset < 0)
        return SP_ESHAPE;
    /* Lowest and highest element reached: negative strides walk backwards. */
    __int128 min_el = t->offset, max_el = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        __int128 span = (__int128)t->strides[d] * (t->shape[d] - 1);
        if (span < 0)
            min_el += span;
        else
            max_el += span;
    }
    /* Divide, not multiply: max_el may be near 2^126, and the product wrap. */
    if (min_el < 0 || max_el + 1 > (__int128)(UINT64_MAX / es))
        return SP_ESHAPE;
    *lo = (uint64_t)(min_el * (__int128)es);
    *hi = (uint64_t)((max_el + 1) * (__int128)es);
    return SP_OK;
}

/* True if the view is row-major contiguous; false if malformed. */
static inline bool sp_tensor_is_contiguous(const sp_tensor *t)
{
    if (sp_tensor_numel(t) == 0)
        return false;
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expect)
            return false;
        expect *= t->shape[d];
    }
    return true;
}

/* True if the view lies inside its buffer with a known dtype. */
static inline bool sp_tensor_is_valid(const sp_tensor *t)
{
    uint64_t lo, hi;
    if (!t || sp_tensor_byte_extent(t, &lo, &hi) != SP_OK)
        return false;
    return hi <= t->buf_bytes;
}

/* View restricted to [start, start+len) along `dim`, into `out`.
 * Returns 0, or SP_ESHAPE if the range is outside the dimension. */
static inline int sp_tensor_slice(const sp_tensor *in, int dim, int64_t start, int64_t len,
                                  sp_tensor *out)
{
    if (!in || !out)
        return SP_EINVAL;
    if (in->ndim > SP_MAX_DIMS || dim < 0 || dim >= in->ndim || start < 0 || len < 1 ||
        in->shape[dim] < len || start > in->shape[dim] - len)
        return SP_ESHAPE;
    /* 128-bit: start * stride need not fit an int64_t for a huge buffer. */
    __int128 offset = (__int128)in->offset + (__int128)start * in->strides[dim];
    if (offset < 0 || offset > INT64_MAX)
        return SP_ESHAPE;
    /* A slice of a valid view reaches a subset of its elements, so it is
     * valid too: written in place, with no intermediate copy. */
    if (sp_tensor_is_valid(in)) {
        if (out != in)
            *out = *in;
        out->offset = (int64_t)offset;
        out->shape[dim] = len;
        return SP_OK;
    }
    sp_tensor v = *in;
    v.offset = (int64_t)offset;
    v.shape[dim] = len;
    if (!sp_tensor_is_valid(&v))
        return SP_ESHAPE;
    *out = v;
    return SP_OK;
}

/* Contiguous view with a new shape of the same element count.
 * Returns 0, or SP_ESHAPE if counts differ or `in` is not contiguous. */
static inline int sp_tensor_reshape(const sp_tensor *in, int ndim, const int64_t *shape,
                                    sp_tensor *out)
{
    if (!in || !out || !shape)
        return SP_EINVAL;
    if (ndim < 1 || ndim > SP_MAX_DIMS || !sp_tensor_is_contiguous(in))
        return SP_ESHAPE;
    sp_tensor v = *in;
    int64_t n = 1, stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] < 1 || n > INT64_MAX / shape[d])
            return SP_ESHAPE;
        n *= shape[d];
    }
    if (n != sp_tensor_numel(in))
        return SP_ESHAPE;
    memset(v.shape, 0, sizeof v.shape);
    memset(v.strides, 0, sizeof v.strides);
    v.ndim = (uint8_t)ndim;
    for (int d = ndim - 1; d >= 0; d--) {
        v.shape[d] = shape[d];
        v.strides[d] = stride;
        stride *= shape[d];
    }
    *out = v;
    return SP_OK;
}

/* View with dimensions d0 and d1 swapped, into `out`.
 * Returns 0, or SP_ESHAPE for a dimension out of range. */
static inline int sp_tensor_transpose(const sp_tensor *in, int d0, int d1, sp_tensor *out)
{
    if (!in || !out)
        return SP_EINVAL;
    /* ndim is checked too: a malformed one would index past shape[]. */
    if (in->ndim > SP_MAX_DIMS || d0 < 0 || d1 < 0 || d0 >= in->ndim || d1 >= in->ndim)
        return SP_ESHAPE;
    sp_tensor v = *in;
    v.shape[d0] = in->shape[d1];
    v.shape[d1] = in->shape[d0];
    v.strides[d0] = in->strides[d1];
    v.strides[d1] = in->strides[d0];
    *out = v;
    return SP_OK;
}

/* Byte offset from the buffer start of element `index` (row-major over the
 * view's shape). Returns 0, or SP_ESHAPE for an index outside the view. */
static inline int sp_tensor_element_offset(const sp_tensor *t, int64_t index, uint64_t *off)
{
    int64_t n = sp_tensor_numel(t);
    if (n == 0 || index < 0 || index >= n || !sp_tensor_is_valid(t))
        return SP_ESHAPE;
    /* 128-bit: in a valid view of a byte-sized dtype, an element index may
     * pass INT64_MAX (it is below 2^64, so the cast below is exact). */
    __int128 el = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        el += (__int128)(index % t->shape[d]) * t->strides[d];
        index /= t->shape[d];
    }
    *off = (uint64_t)el * sp_tensor_elem_size(t);
    return SP_OK;
}

#endif
