/* F16 for MPI: the 2-byte datatype and the SUM / MAX user operations the
 * transport's iallreduce uses for SP_DTYPE_F16 (MPI has no half type),
 * reducing through float as the chips' own f16 arithmetic does. */
#ifndef SP_L4_F16_H
#define SP_L4_F16_H

#include <mpi.h>
#include <stdint.h>

typedef struct l4_f16_ops {
    MPI_Datatype type; /* 2 contiguous bytes */
    MPI_Op sum, max;
} l4_f16_ops;

/* Create (on the thread that makes MPI calls) / free them. MPI status. */
int l4_f16_create(l4_f16_ops *f);
void l4_f16_free(l4_f16_ops *f);

/* IEEE binary16 <-> binary32, round to nearest even. */
float l4_f16_to_f32(uint16_t h);
uint16_t l4_f32_to_f16(float f);

#endif
