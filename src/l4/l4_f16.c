/* F16 datatype and reductions for MPI (l4_f16.h). */
#include "l4/l4_f16.h"

#include <string.h>

float l4_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400u)) {
                man <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t l4_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) /* inf, nan (kept quiet) */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal or zero */
        if (e < -10)
            return sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
        half++; /* may carry into the exponent: still correct, up to inf */
    return (uint16_t)(sign | half);
}

static void f16_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = l4_f32_to_f16(l4_f16_to_f32(a[i]) + l4_f16_to_f32(b[i]));
}

static void f16_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) {
        float x = l4_f16_to_f32(a[i]), y = l4_f16_to_f32(b[i]);
        if (x > y)
            b[i] = a[i];
    }
}

int l4_f16_create(l4_f16_ops *f)
{
    f->type = MPI_DATATYPE_NULL;
    f->sum = f->max = MPI_OP_NULL;
    int rc = MPI_Type_contiguous(2, MPI_BYTE, &f->type);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&f->type);
    if (rc == MPI_SUCCESS)
        rc = MPI_Op_create(f16_sum, 1, &f->sum);
    if (rc == MPI_SUCCESS)
        rc = MPI_Op_create(f16_max, 1, &f->max);
    if (rc != MPI_SUCCESS)
        l4_f16_free(f);
    return rc;
}

void l4_f16_free(l4_f16_ops *f)
{
    if (f->sum != MPI_OP_NULL)
        MPI_Op_free(&f->sum);
    if (f->max != MPI_OP_NULL)
        MPI_Op_free(&f->max);
    if (f->type != MPI_DATATYPE_NULL)
        MPI_Type_free(&f->type);
}
