/* Elementwise reduction of one buffer into another (dst op= src) for the
 * collectives: F32, F16 (IEEE binary16, computed in float and rounded to
 * nearest even back) and I32 (wrapping), SUM and MAX. Plain loops the
 * compiler vectorises at -O2; no intrinsics.
 *
 * F16 through float is exact enough: float's 24-bit significand is at
 * least 2 * 11 + 2 bits, so rounding the float sum to half gives the
 * correctly rounded half sum (no double-rounding error).
 *
 * MAX propagates NaN (a NaN in either operand gives NaN), like a max that
 * does not hide bad data; +0 and -0 compare equal and keep dst. */
#include <stdint.h>
#include <string.h>

#include "l3/l3_coll.h"
#include "simpler/types.h"

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* c ? a : b without a branch (c is 0 or 1), so the element loops below
 * stay free of control flow and vectorise. */
static inline uint32_t select_u32(uint32_t c, uint32_t a, uint32_t b)
{
    uint32_t m = 0u - c;
    return (a & m) | (b & ~m);
}

/* binary16 -> binary32, exact for every input (subnormals, inf, NaN with
 * its payload). Every case is computed and the right one selected. */
static inline float l3_half_to_float(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13; /* exponent and mantissa into place */
    uint32_t exp = o & (0x7c00u << 13);
    o += (uint32_t)(127 - 15) << 23; /* rebias the exponent */
    /* inf / NaN: the top exponent */
    uint32_t top = o + ((uint32_t)(128 - 16) << 23);
    /* zero or subnormal: renormalise by letting the FPU subtract 2^-14 */
    uint32_t sub = f32_bits(f32_from_bits(o + (1u << 23)) - f32_from_bits(113u << 23));
    o = select_u32(exp == (0x7c00u << 13), top, o);
    o = select_u32(exp == 0, sub, o);
    return f32_from_bits(o | (uint32_t)(h & 0x8000u) << 16);
}

/* binary32 -> binary16, round to nearest even; overflow gives inf, NaN a
 * quiet NaN (sign kept), tiny values subnormals or zero. */
static inline uint16_t l3_float_to_half(float f)
{
    const uint32_t magic = (uint32_t)((127 - 15) + (23 - 10) + 1) << 23; /* 0.5f */
    uint32_t u = f32_bits(f);
    uint32_t sign = u & 0x80000000u;
    u ^= sign;
    /* >= 65520 (what rounds past the largest half), inf, NaN */
    uint32_t top = select_u32(u > (255u << 23), 0x7e00u, 0x7c00u);
    /* below 2^-14: subnormal half. Adding 0.5 makes the FPU round the
     * significand at the half's subnormal position, to nearest even. */
    uint32_t sub = f32_bits(f32_from_bits(u) + f32_from_bits(magic)) - magic;
    /* normal: rebias, add just under half an ulp, plus one on an odd
     * significand (ties to even), and truncate */
    uint32_t norm = (u + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((u >> 13) & 1u)) >> 13;
    uint32_t o = select_u32(u < (113u << 23), sub, norm);
    o = select_u32(u >= (uint32_t)(127 + 16) << 23, top, o);
    return (uint16_t)(o | sign >> 16);
}

uint16_t l3_f16_from_float(float f)
{
    return l3_float_to_half(f);
}

float l3_f16_to_float(uint16_t h)
{
    return l3_half_to_float(h);
}

/* Each loop runs in blocks of a fixed 16 elements and a scalar tail: GCC's
 * -O2 vectoriser (the very-cheap cost model) takes only loops whose trip
 * count needs no epilogue, which the fixed inner loop has. */
#define L3_RED_BLOCK 16
#define L3_REDUCE_LOOP(n, ...)                                                                     \
    do {                                                                                           \
        uint64_t i_ = 0;                                                                           \
        for (; i_ + L3_RED_BLOCK <= (n); i_ += L3_RED_BLOCK)                                       \
            for (uint64_t j_ = 0; j_ < L3_RED_BLOCK; j_++) {                                       \
                uint64_t i = i_ + j_;                                                              \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        for (uint64_t i = i_; i < (n); i++) {                                                      \
            __VA_ARGS__;                                                                           \
        }                                                                                          \
    } while (0)

static void reduce_f32_sum(float *restrict d, const float *restrict s, uint64_t n)
{
    L3_REDUCE_LOOP(n, d[i] += s[i]);
}

static void reduce_f32_max(float *restrict d, const float *restrict s, uint64_t n)
{
    L3_REDUCE_LOOP(n, {
        float a = d[i], b = s[i];
        d[i] = (b > a || b != b) ? b : a;
    });
}

static void reduce_i32_sum(uint32_t *restrict d, const uint32_t *restrict s, uint64_t n)
{
    /* unsigned: wraps without undefined behaviour */
    L3_REDUCE_LOOP(n, d[i] += s[i]);
}

static void reduce_i32_max(int32_t *restrict d, const int32_t *restrict s, uint64_t n)
{
    L3_REDUCE_LOOP(n, d[i] = s[i] > d[i] ? s[i] : d[i]);
}

static void reduce_f16_sum(uint16_t *restrict d, const uint16_t *restrict s, uint64_t n)
{
    L3_REDUCE_LOOP(n, d[i] = l3_float_to_half(l3_half_to_float(d[i]) + l3_half_to_float(s[i])));
}

static void reduce_f16_max(uint16_t *restrict d, const uint16_t *restrict s, uint64_t n)
{
    /* the result is one of the inputs: no rounding */
    L3_REDUCE_LOOP(n, {
        float a = l3_half_to_float(d[i]), b = l3_half_to_float(s[i]);
        d[i] = (uint16_t)select_u32((b > a) | (b != b), s[i], d[i]);
    });
}

/* dst and src may be the same buffer (x op x) but must not overlap
 * otherwise: the loops are declared restrict to vectorise. */
void l3_reduce(void *dst, const void *src, uint64_t count, int dtype, int op)
{
    if (count == 0 || dst == src) {
        if (count == 0 || op == SP_L3_MAX)
            return; /* max(x, x) == x */
        /* x + x through a copy-free path: the loops below are fine with
         * exact aliasing in practice, but restrict forbids it; do it
         * element by element instead. */
        switch (dtype) {
        case SP_DTYPE_F32:
            for (uint64_t i = 0; i < count; i++)
                ((float *)dst)[i] *= 2.0f;
            return;
        case SP_DTYPE_I32:
            for (uint64_t i = 0; i < count; i++)
                ((uint32_t *)dst)[i] <<= 1;
            return;
        case SP_DTYPE_F16:
            for (uint64_t i = 0; i < count; i++) {
                float a = l3_half_to_float(((uint16_t *)dst)[i]);
                ((uint16_t *)dst)[i] = l3_float_to_half(a + a);
            }
            return;
        default:
            return;
        }
    }
    switch (dtype) {
    case SP_DTYPE_F32:
        if (op == SP_L3_MAX)
            reduce_f32_max(dst, src, count);
        else
            reduce_f32_sum(dst, src, count);
        return;
    case SP_DTYPE_I32:
        if (op == SP_L3_MAX)
            reduce_i32_max(dst, src, count);
        else
            reduce_i32_sum(dst, src, count);
        return;
    case SP_DTYPE_F16:
        if (op == SP_L3_MAX)
            reduce_f16_max(dst, src, count);
        else
            reduce_f16_sum(dst, src, count);
        return;
    default:
        return; /* l3_coll_check refuses other dtypes before anything runs */
    }
}
