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

/* binary16 -> binary32, exact for every input (subnormals, inf, NaN with
 * its payload). */
static inline float l3_half_to_float(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13; /* exponent and mantissa into place */
    uint32_t exp = o & (0x7c00u << 13);
    o += (uint32_t)(127 - 15) << 23; /* rebias the exponent */
    if (exp == (0x7c00u << 13)) {
        o += (uint32_t)(128 - 16) << 23; /* inf / NaN: the top exponent */
    } else if (exp == 0) {
        /* zero or subnormal: renormalise by letting the FPU subtract 2^-14 */
        o += 1u << 23;
        o = f32_bits(f32_from_bits(o) - f32_from_bits(113u << 23));
    }
    return f32_from_bits(o | (uint32_t)(h & 0x8000u) << 16);
}

/* binary32 -> binary16, round to nearest even; overflow gives inf, NaN a
 * quiet NaN (sign kept), tiny values subnormals or zero. */
static inline uint16_t l3_float_to_half(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = u & 0x80000000u;
    uint32_t o;
    u ^= sign;
    if (u >= (uint32_t)(127 + 16) << 23) {
        /* >= 65536 (also what rounds to it), inf, NaN */
        o = u > (255u << 23) ? 0x7e00u : 0x7c00u;
    } else if (u < 113u << 23) {
        /* below 2^-14: subnormal half. Adding 0.5 makes the FPU round the
         * significand at the half's subnormal position, to nearest even. */
        const uint32_t magic = (uint32_t)((127 - 15) + (23 - 10) + 1) << 23;
        o = f32_bits(f32_from_bits(u) + f32_from_bits(magic)) - magic;
    } else {
        uint32_t mant_odd = (u >> 13) & 1u;
        u += ((uint32_t)(15 - 127) << 23) + 0xfffu; /* rebias, round half up... */
        u += mant_odd;                              /* ... or to even on a tie */
        o = u >> 13;
    }
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

static void reduce_f32_sum(float *restrict d, const float *restrict s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        d[i] += s[i];
}

static void reduce_f32_max(float *restrict d, const float *restrict s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        float a = d[i], b = s[i];
        d[i] = (b > a || b != b) ? b : a;
    }
}

static void reduce_i32_sum(uint32_t *restrict d, const uint32_t *restrict s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        d[i] += s[i]; /* unsigned: wraps without undefined behaviour */
}

static void reduce_i32_max(int32_t *restrict d, const int32_t *restrict s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        d[i] = s[i] > d[i] ? s[i] : d[i];
}

static void reduce_f16_sum(uint16_t *restrict d, const uint16_t *restrict s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        d[i] = l3_float_to_half(l3_half_to_float(d[i]) + l3_half_to_float(s[i]));
}

static void reduce_f16_max(uint16_t *restrict d, const uint16_t *restrict s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        float a = l3_half_to_float(d[i]), b = l3_half_to_float(s[i]);
        d[i] = (b > a || b != b) ? s[i] : d[i]; /* one of the inputs: no rounding */
    }
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
